//! The performance suite behind `cargo xtask bench`. Each line is a ratio measured in one run: ours
//! against a naive reference computing the same numbers.

use std::time::{Duration, Instant};

use anyhow::{Result, ensure};
use bdl_inference::{MapEstimate, Validate};
use bdl_laplace::LinearizedPosterior;
use bdl_laplace::selection::{self, Candidates};
use bdl_laplace::{LaplaceConfig, PriorPrecision, SubnetLaplace, SubsetScaling};
use bdl_likelihoods::Likelihood;
use bdl_models::{Activation, Cnn, Mlp, MlpSpec, Model, Network, ResNet};
use bdl_tensor::Seed;
use candle_core::{DType, Device, Tensor, Var};

/// Arguments of `cargo xtask bench`.
#[derive(Debug, clap::Args)]
pub struct BenchArgs {
    /// Size s of the large-subnetwork benchmark (an MNIST-sized MLP); 0 skips it.
    #[arg(long, default_value_t = 40_000)]
    subnet: usize,
    /// Size s of the ResNet-18 subnetwork benchmark, dense route (the paper's CIFAR-10
    /// subnetwork is 42,438 weights, about 21 GiB); 0, the default, skips it.
    #[arg(long, default_value_t = 0)]
    resnet_subnet: usize,
    /// Only these groups of benchmarks (default: all).
    #[arg(long, value_enum, value_delimiter = ',')]
    only: Vec<Group>,
    /// Where the ResNet-18 lines run: cpu, or cuda:N (a build with the `cuda` feature); every
    /// other line runs on the CPU.
    #[arg(long, default_value = "cpu")]
    device: String,
}

/// A group of benchmark lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Group {
    /// The models' (a, δ) products.
    Models,
    /// GGN, Laplace, evidence and predictive.
    Laplace,
    /// The large subnetwork Laplaces (the MLP's, and ResNet-18's when asked): time and memory.
    Large,
    /// Blocked-Gibbs sweeps.
    Gibbs,
    /// Variational steps against Adam's.
    Variational,
}

/// Runs the selected benchmarks and prints one line each.
pub fn run(args: &BenchArgs) -> Result<()> {
    let on = |g: Group| args.only.is_empty() || args.only.contains(&g);
    // The targets' verdicts depend on it (docs/REPRODUCTION.md, "Benchmarks").
    let bytes = bdl_tensor::vector_bytes();
    let extensions = match bytes {
        64 => "AVX-512",
        32 => "AVX2 and FMA",
        _ => "no wide-vector extensions",
    };
    println!("vector registers of {bytes} bytes ({extensions})");
    let device = bdl_tensor::device(&args.device)?;
    let resnet_on = Placed {
        device: &device,
        name: &args.device,
    };
    bdl_tensor::Threads::new(1)?.install(|| single_threaded(&on, &resnet_on))?;
    if on(Group::Laplace) {
        bdl_tensor::Threads::new(2)?.install(two_threads)?;
    }
    if on(Group::Large) {
        if args.subnet > 0 {
            bdl_tensor::Threads::new(0)?.install(|| large_subnetwork(args.subnet))?;
        }
        if args.resnet_subnet > 0 {
            let s = args.resnet_subnet;
            bdl_tensor::Threads::new(0)?.install(|| resnet_subnetwork(s, &resnet_on))?;
        }
    }
    Ok(())
}

/// The device the ResNet-18 lines run on, and its name as the command line gave it.
struct Placed<'a> {
    device: &'a Device,
    name: &'a str,
}

impl Placed<'_> {
    /// ", on cuda:0" off the CPU, for a line's label; nothing on the CPU.
    fn suffix(&self) -> String {
        if self.device.is_cpu() {
            String::new()
        } else {
            format!(", on {}", self.name)
        }
    }
}

/// The ratios, each measured on one thread (the ResNet-18 line on `resnet_on`).
fn single_threaded(on: &dyn Fn(Group) -> bool, resnet_on: &Placed<'_>) -> Result<()> {
    println!(
        "{:<92} {:>12} {:>12} {:>8}",
        "benchmark (1 thread; the two sides alternated, medians)", "ours", "naive", "speed-up"
    );
    if on(Group::Models) {
        loss_gradient(&[14, 50, 1], 128, DType::F64)?;
        loss_gradient(&[8, 50, 50, 1], 32, DType::F32)?;
        for batch in [32, 1000] {
            sum_sq_grads(batch)?;
        }
        cnn_sum_sq_grads()?;
        resnet_sum_sq_grads(resnet_on)?;
        cnn_output_variances()?;
    }
    if on(Group::Laplace) {
        ggn_laplace(None)?;
        ggn_laplace(Some(200))?;
    }
    if on(Group::Variational) {
        standard_normals()?;
        variational_epochs()?;
        vadam_own_work()?;
    }
    if on(Group::Gibbs) {
        gibbs_node_sweep()?;
        let finer = |rule| bdl_mcmc::Blocking::FinerNode {
            split: vec![Some(rule), None, None, None],
        };
        gibbs_paper_sweep(finer(bdl_tensor::SubBlocks::Count(10)))?;
        gibbs_paper_sweep(finer(bdl_tensor::SubBlocks::Size(10)))?;
        sgld_within_gibbs_sweep()?;
    }
    Ok(())
}

/// The Laplace lines that are measured on two threads (the targets are for both cores).
fn two_threads() -> Result<()> {
    println!(
        "{:<92} {:>12} {:>12} {:>8}",
        "benchmark (2 threads; the two sides alternated, medians)", "ours", "naive", "speed-up"
    );
    ggn_laplace(None)?;
    evidence_tuning()?;
    linearized_predictive()?;
    kron_against_full()
}

/// Times `ours` and `naive` side by side ([`paired`]) and prints one row: the label, both
/// median times and the median of the pairs' speed-ups.
fn compare(
    label: &str,
    ours: impl FnMut() -> Result<()>,
    naive: impl FnMut() -> Result<()>,
) -> Result<()> {
    let (ours, naive, ratio) = paired(ours, naive)?;
    print_row(label, ours, naive, &speed_up(ratio));
    Ok(())
}

/// The speed-up column for a time ratio t_ours / t_naive.
fn speed_up(ratio: f64) -> String {
    format!("{:>7.1}×", ratio.recip())
}

/// Times `method` and `reference` side by side ([`paired`]) and prints one row: the label, both
/// median times and the method's cost as a multiple of the reference's (the median over pairs),
/// with whether it is within `target` when there is one.
fn cost_ratio(
    label: &str,
    target: Option<f64>,
    method: impl FnMut() -> Result<()>,
    reference: impl FnMut() -> Result<()>,
) -> Result<()> {
    let (method, reference, ratio) = paired(method, reference)?;
    let mut column = format!("{ratio:>6.2}× cost");
    if let Some(target) = target {
        let verdict = if ratio <= target { "met" } else { "missed" };
        column += &format!(" (target ≤ {target}×: {verdict})");
    }
    print_row(label, method, reference, &column);
    Ok(())
}

/// Runs `a` and `b` alternately, each over about half a second of repetitions (at least 3), the
/// order swapped every pair: their median times and the median over pairs of t_a / t_b. Two runs
/// a few milliseconds apart see the same machine, so a ratio stays put while other work comes
/// and goes (timing one side after the other, a ratio moved by half as much again).
fn paired(
    mut a: impl FnMut() -> Result<()>,
    mut b: impl FnMut() -> Result<()>,
) -> Result<(Duration, Duration, f64)> {
    let timed = |f: &mut dyn FnMut() -> Result<()>| -> Result<Duration> {
        let start = Instant::now();
        f()?;
        Ok(start.elapsed())
    };
    timed(&mut a)?; // warm-up
    timed(&mut b)?;
    let once = timed(&mut a)?
        .max(timed(&mut b)?)
        .max(Duration::from_micros(1));
    let reps =
        (Duration::from_millis(500).as_secs_f64() / once.as_secs_f64()).clamp(3.0, 1000.0) as usize;
    let (mut ta, mut tb, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    for rep in 0..reps {
        let (x, y) = if rep % 2 == 0 {
            let x = timed(&mut a)?;
            (x, timed(&mut b)?)
        } else {
            let y = timed(&mut b)?;
            (timed(&mut a)?, y)
        };
        ratios.push(x.as_secs_f64() / y.as_secs_f64().max(1e-9));
        ta.push(x);
        tb.push(y);
    }
    ta.sort();
    tb.sort();
    ratios.sort_by(f64::total_cmp);
    Ok((ta[reps / 2], tb[reps / 2], ratios[reps / 2]))
}

/// One row: the label, two times in milliseconds and what relates them.
fn print_row(label: &str, first: Duration, second: Duration, ratio: &str) {
    println!(
        "{label:<92} {:>9.3} ms {:>9.3} ms {ratio}",
        first.as_secs_f64() * 1e3,
        second.as_secs_f64() * 1e3,
    );
}

/// A Vadam step's ε on the MLP 8-50-50-1 (3,051 N(0, 1) draws): `standard_normals` (Box–Muller,
/// sixteen ChaCha8 blocks at a time) against rand_distr's `StandardNormal` one draw at a time,
/// as `bdl_tensor::normal` draws, on the same kind of stream.
fn standard_normals() -> Result<()> {
    use rand_distr::{Distribution, StandardNormal};
    let (mut bulk, mut one) = (Seed(4).rng(), Seed(4).rng());
    let (mut ours, mut naive) = (vec![0.0; 3051], vec![0.0; 3051]);
    compare(
        "3,051 N(0, 1) draws (a Vadam step's ε, MLP 8-50-50-1): Box-Muller in bulk vs rand_distr",
        || {
            bdl_tensor::standard_normals(&mut bulk, &mut ours);
            Ok(())
        },
        || {
            for z in &mut naive {
                *z = StandardNormal.sample(&mut one);
            }
            Ok(())
        },
    )
}

/// One epoch (N = 1,000, minibatches of 32, one weight sample per step) of Vadam, VOGN and BBVI
/// against one epoch of MAP training with Adam on the same MLP 8-50-50-1 (ReLU, f32, Gaussian
/// likelihood), each line the method's cost as a multiple of Adam's against its target: 1.2×
/// (Vadam), 2× (VOGN) and 2× (BBVI).
fn variational_epochs() -> Result<()> {
    use bdl_variational::{Method, VariationalConfig};
    let (model, theta) = regression_mlp()?;
    let network = Network::from(model);
    let theta = theta.to_dtype(DType::F32)?;
    let x = standard_normal("vi inputs", 1000, 8)?.to_dtype(DType::F32)?;
    let y = standard_normal("vi targets", 1000, 1)?.to_dtype(DType::F32)?;
    let likelihood = Likelihood::Gaussian { sigma: 1.0 };
    let map = bdl_inference::MapConfig {
        epochs: 1,
        batch_size: 32,
        patience: None,
        ..bdl_inference::MapConfig::default()
    }
    .check()?;
    let adam = || -> Result<()> {
        bdl_inference::train_map(&network, &theta, likelihood, &x, &y, &map)?;
        Ok(())
    };
    for (method, target) in [
        (Method::vadam(1e-3), 1.2),
        (
            Method::Vogn {
                learning_rate: 1e-3,
                beta: 0.999,
            },
            2.0,
        ),
        (
            Method::Bbvi {
                learning_rate: 1e-3,
                beta1: 0.9,
                beta2: 0.999,
                init_std: 1e-3,
            },
            2.0,
        ),
    ] {
        let name = method.name();
        let config = VariationalConfig::new(method, 1.0, 1, 32).check()?;
        cost_ratio(
            &format!("{name} epoch vs MAP Adam epoch, MLP 8-50-50-1, N = 1000, batch 32, f32"),
            Some(target),
            || {
                bdl_variational::fit(&network, &theta, likelihood, &x, &y, &config)?;
                Ok(())
            },
            adam,
        )?;
    }
    Ok(())
}

/// Where a Vadam epoch's extra cost goes: the work of a Vadam step besides the network's
/// gradient (draw ε and θ = μ + σ∘ε, record ĝ and ĝ∘ĝ, update m, s and μ, refresh σ; the
/// public [`bdl_variational::Online`] loop) against the work of an Adam step besides it (its
/// update of the 3,051 parameters of the MLP 8-50-50-1, with the Trainer's ĝ/M + λ̃θ and its
/// finite check), at a fixed gradient. No target: the line shows how much of the epochs' gap
/// above is this work.
fn vadam_own_work() -> Result<()> {
    use bdl_inference::{Optimizer, OptimizerState};
    use bdl_variational::{Method, Online, VariationalConfig};
    let d = regression_mlp()?.0.layout().len();
    let grad = bdl_tensor::to_f64_vec(&standard_normal("vi gradient", d, 1)?)?;
    let config = VariationalConfig::new(Method::vadam(1e-3), 1.0, 1, 32).check()?;
    let mut vadam = Online::new(vec![0.0; d], 1000, &config)?;
    let mut adam = OptimizerState::new(Optimizer::default(), d);
    let (mut theta, mut step) = (vec![0.0; d], vec![0.0; d]);
    cost_ratio(
        "Vadam's own work in a step vs Adam's, besides the gradient (the MLP's 3,051 parameters)",
        None,
        || {
            let draw = vadam.draw();
            vadam.observe(&draw, &grad, None)?;
            vadam.step()?;
            Ok(())
        },
        || {
            for ((s, g), t) in step.iter_mut().zip(&grad).zip(&theta) {
                *s = g / 32.0 + 1e-3 * t;
            }
            adam.step(&mut theta, &step, 1e-3);
            ensure!(bdl_tensor::all_finite(&theta), "Adam diverged");
            Ok(())
        },
    )
}

/// One minibatch's loss gradient Σ_n ∇θ ℓ_n (Gaussian likelihood, ReLU MLP of the given widths,
/// at its seeded initialisation): the MLP's slice passes ([`Model::loss_gradient`], what every
/// training loop calls) against candle's autograd of the summed negative log-likelihood through
/// the same network, the gradient a user of candle would write; both give the same numbers.
fn loss_gradient(widths: &[usize], batch: usize, dtype: DType) -> Result<()> {
    let seed = Seed(2);
    let device = Device::Cpu;
    let model = Mlp::new(MlpSpec::new(widths, Activation::Relu))?;
    let theta = model.init(seed, dtype, &device)?;
    let draw = |name: &str, cols: usize| -> Result<Tensor> {
        let mut rng = seed.fork(name).rng();
        Ok(bdl_tensor::normal(
            &mut rng,
            (batch, cols),
            0.0,
            1.0,
            dtype,
            &device,
        )?)
    };
    let (x, y) = (draw("x", widths[0])?, draw("y", 1)?);
    let likelihood = Likelihood::Gaussian { sigma: 0.5 };
    let ours = || -> Result<Vec<f64>> {
        let output_gradient =
            |f: &Tensor| -> bdl_inference::Result<Tensor> { Ok(likelihood.grad_f(f, &y)?) };
        Ok(model
            .loss_gradient(&theta, &x, None, output_gradient, false)?
            .sum)
    };
    let var = Var::from_tensor(&theta)?;
    let naive = || -> Result<Vec<f64>> {
        let f = model.forward(var.as_tensor(), &x)?;
        let nll = likelihood.log_lik(&f, &y)?.neg()?.sum_all()?;
        let grads = nll.backward()?;
        Ok(bdl_tensor::to_f64_vec(
            grads.get(var.as_tensor()).expect("θ is a Var"),
        )?)
    };
    // The same sums in other orders: f64 agrees to 1e-10 of the largest entry, f32 to 1e-4.
    let (a, b) = (ours()?, naive()?);
    let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    let diff = a
        .iter()
        .zip(&b)
        .fold(0.0f64, |m, (a, b)| m.max((a - b).abs()));
    let tol = if dtype == DType::F64 { 1e-10 } else { 1e-4 };
    ensure!(
        diff <= tol * scale,
        "the two gradients disagree: {diff} (scale {scale})"
    );
    let shape = widths
        .iter()
        .map(|w| w.to_string())
        .collect::<Vec<_>>()
        .join("-");
    compare(
        &format!(
            "loss gradient, MLP {shape}, batch {batch}, {dtype:?}: slice passes vs candle autograd"
        ),
        || ours().map(drop),
        || naive().map(drop),
    )
}

/// Σ_n g_n∘g_n for an MLP 13-50-1 (ReLU, squared-error output gradients): from the (a, δ)
/// products of one forward and one backward pass, against a loop of N single-example forward and
/// autograd backward passes whose gradients are squared and summed.
fn sum_sq_grads(batch: usize) -> Result<()> {
    let seed = Seed(0);
    let device = Device::Cpu;
    let model = Mlp::new(MlpSpec::new(&[13, 50, 1], Activation::Relu))?;
    let theta = model.init(seed, DType::F32, &device)?;
    let x = bdl_tensor::normal(
        &mut seed.fork("x").rng(),
        (batch, 13),
        0.0,
        1.0,
        DType::F32,
        &device,
    )?;
    let y = bdl_tensor::normal(
        &mut seed.fork("y").rng(),
        (batch, 1),
        0.0,
        1.0,
        DType::F32,
        &device,
    )?;

    let ours = || -> Result<Tensor> {
        let cache = model.forward_cached(&theta, &x)?;
        let r = (&cache.output - &y)?;
        Ok(model.sum_sq_grads(&theta, &cache, &r)?)
    };
    let var = Var::from_tensor(&theta)?;
    let naive = || -> Result<Tensor> {
        let mut acc = Tensor::zeros(theta.shape(), DType::F32, &device)?;
        for n in 0..batch {
            let f = model.forward(var.as_tensor(), &x.narrow(0, n, 1)?)?;
            let loss = ((f - y.narrow(0, n, 1)?)?.sqr()? * 0.5)?.sum_all()?;
            let g = loss.backward()?;
            acc = (acc + g.get(var.as_tensor()).expect("θ is a Var").sqr()?)?;
        }
        Ok(acc)
    };

    // Both compute the same numbers (f32: products of sums over 50 terms agree to about 1e-5
    // relative to the largest entry).
    let (a, b) = (ours()?, naive()?);
    let scale = b.abs()?.max_all()?.to_scalar::<f32>()?;
    let diff = (a - &b)?.abs()?.max_all()?.to_scalar::<f32>()?;
    ensure!(
        diff <= 1e-4 * scale,
        "the two computations disagree: {diff} (scale {scale})"
    );

    compare(
        &format!("Σ g∘g, MLP 13-50-1, batch {batch:>4}: (a,δ) products vs loop"),
        || ours().map(drop),
        || naive().map(drop),
    )
}

/// Σ_n g_n∘g_n for LeNet-5 on 128 MNIST images of the shipped fixture in f32 (softmax
/// cross-entropy at the seeded initialisation), see [`sum_sq_against_loop`].
fn cnn_sum_sq_grads() -> Result<()> {
    let batch = 128;
    let data = mnist_fixture(batch)?;
    let model = Cnn::lenet5(10)?;
    let theta = model.init(Seed(0), DType::F32, &Device::Cpu)?;
    sum_sq_against_loop(
        &format!("Σ g∘g, LeNet-5, batch {batch:>4}: (a,δ) products vs loop"),
        &model,
        &theta,
        (data.x(), data.y()),
    )
}

/// Σ_n g_n∘g_n for ResNet-18 (CIFAR stem, BatchNorm at fixed statistics) on 8 images of
/// 3 × 32 × 32 in f32 (seeded N(0, 1) pixels and labels: the cost does not depend on them),
/// see [`sum_sq_against_loop`].
fn resnet_sum_sq_grads(on: &Placed<'_>) -> Result<()> {
    let (batch, device) = (8, on.device);
    let model = ResNet::resnet18(10)?;
    let theta = model.init(Seed(0), DType::F32, device)?;
    let mut rng = Seed(1).rng();
    let x = bdl_tensor::normal(&mut rng, (batch, 3, 32, 32), 0.0, 1.0, DType::F32, device)?;
    let labels: Vec<u32> = (0..batch as u32).map(|i| i % 10).collect();
    let y = Tensor::new(labels.as_slice(), device)?;
    sum_sq_against_loop(
        &format!(
            "Σ g∘g, ResNet-18 (11.2 M parameters), batch {batch:>4}: (a,δ) products vs loop{}",
            on.suffix()
        ),
        &model,
        &theta,
        (&x, &y),
    )
}

/// Σ_n g_n∘g_n of softmax cross-entropy over ten classes for the batch `(x, y)`: from the
/// (a, δ) factors of one forward and one backward pass (im2col and col2im by bdl-tensor's
/// gather and scatter-add), against a loop of single-example forward and autograd backward
/// passes whose gradients are squared and summed. Both must agree (in f32, every segment to
/// 1e-5 of its largest entry: they sum per-example gradients over up to a thousand positions
/// in different orders; measured on LeNet-5 below 5e-7) before they are timed.
fn sum_sq_against_loop(
    label: &str,
    model: &impl Model,
    theta: &Tensor,
    (x, y): (&Tensor, &Tensor),
) -> Result<()> {
    let batch = x.dims()[0];
    let likelihood = Likelihood::Categorical { classes: 10 };
    let ours = || -> Result<Tensor> {
        let cache = model.forward_cached(theta, x)?;
        let r = likelihood.grad_f(&cache.output, y)?;
        Ok(model.sum_sq_grads(theta, &cache, &r)?)
    };
    let var = Var::from_tensor(theta)?;
    let naive = || -> Result<Tensor> {
        let mut acc = Tensor::zeros(theta.shape(), DType::F32, theta.device())?;
        for n in 0..batch {
            let f = model.forward(var.as_tensor(), &x.narrow(0, n, 1)?)?;
            let loss = likelihood
                .log_lik(&f, &y.narrow(0, n, 1)?)?
                .neg()?
                .sum_all()?;
            let g = loss.backward()?;
            acc = (acc + g.get(var.as_tensor()).expect("θ is a Var").sqr()?)?;
        }
        Ok(acc)
    };
    let (a, b): (Vec<f32>, Vec<f32>) = (ours()?.to_vec1()?, naive()?.to_vec1()?);
    for segment in model.layout().segments() {
        let (a, b) = (&a[segment.range()], &b[segment.range()]);
        let scale = b.iter().fold(0f32, |m, v| m.max(v.abs()));
        let diff = a.iter().zip(b).fold(0f32, |m, (u, v)| m.max((u - v).abs()));
        ensure!(
            diff <= 1e-5 * scale,
            "`{}`: the two computations disagree by {diff} (scale {scale})",
            segment.name
        );
    }
    compare(label, || ours().map(drop), || naive().map(drop))
}

/// The linearized output variances Σ_d w_d J_kd(x_n)² of LeNet-5 in f32 on 100 MNIST images of
/// the shipped fixture, for positive weights w (the diagonal Laplace's probit predictive): from
/// the layers' factors without the Jacobian (`weighted_jacobian_sq`), against the full
/// 1,000 × 61,706 Jacobian (itself one batched product per layer) squared and weighted.
fn cnn_output_variances() -> Result<()> {
    let n = 100;
    let device = Device::Cpu;
    let x = mnist_fixture(n)?.x().clone();
    let model = Cnn::lenet5(10)?;
    let theta = model.init(Seed(0), DType::F32, &device)?;
    let d = model.layout().len();
    let w = bdl_tensor::uniform(&mut Seed(1).rng(), d, 0.5, 1.5, DType::F32, &device)?;
    let cache = model.forward_cached(&theta, &x)?;
    let ours = || -> Result<Vec<f32>> {
        Ok(model
            .weighted_jacobian_sq(&theta, &cache, &w)?
            .flatten_all()?
            .to_vec1()?)
    };
    let all: Vec<usize> = (0..d).collect();
    let naive = || -> Result<Vec<f32>> {
        let j = model.jacobian(&theta, &cache, &all)?;
        Ok(j.sqr()?
            .broadcast_mul(&w.unsqueeze(0)?)?
            .sum(1)?
            .to_vec1()?)
    };
    // Both sum the same 61,706 positive terms per row in different orders (f32): 1e-4 relative.
    let (a, b) = (ours()?, naive()?);
    ensure!(
        a.iter()
            .zip(&b)
            .all(|(a, b)| (a - b).abs() <= 1e-4 * b.abs()),
        "the output variances differ"
    );
    compare(
        &format!(
            "LeNet-5 output variances Σ w J², {n} images × 10 classes: factors vs the full Jacobian"
        ),
        || ours().map(drop),
        || naive().map(drop),
    )
}

/// The network of the Laplace benchmarks: an MLP 8-50-50-1 ReLU at its initial parameters from
/// `Seed(1)`, in f64.
fn regression_mlp() -> Result<(Mlp, Tensor)> {
    let model = Mlp::new(MlpSpec::new(&[8, 50, 50, 1], Activation::Relu))?;
    let theta = model.init(Seed(1), DType::F64, &Device::Cpu)?;
    Ok((model, theta))
}

/// `rows` × `cols` standard-normal draws (f64) from the stream `Seed(1).fork(name)`.
fn standard_normal(name: &str, rows: usize, cols: usize) -> Result<Tensor> {
    let mut rng = Seed(1).fork(name).rng();
    Ok(bdl_tensor::normal(
        &mut rng,
        (rows, cols),
        0.0,
        1.0,
        DType::F64,
        &Device::Cpu,
    )?)
}

/// GGN Laplace (GGN + Cholesky) over `s` parameters of an MLP 8-50-50-1 on 1,000 points in f64
/// (all of them when `s` is `None`): ours (`SubnetLaplace::fit`: only the s Jacobian columns,
/// from (a, δ) in minibatches; for s = 200 one rank-k update each and an s × s Cholesky, for all
/// 3,051 parameters the low-rank route, a 1,000 × 1,000 Cholesky) against the naive route of
/// building the D-wide Jacobian first, one autograd backward pass per example, then slicing the
/// s columns, forming JᵀΛJ and factoring the s × s precision; the two log determinants agree.
fn ggn_laplace(s: Option<usize>) -> Result<()> {
    let seed = Seed(1);
    let n = 1000;
    let (model, theta) = regression_mlp()?;
    let d = model.layout().len();
    let x = standard_normal("x", n, 8)?;
    let sigma = 0.1;
    let likelihood = Likelihood::Gaussian { sigma };
    let lambda = 1.0;
    let config = LaplaceConfig {
        prior: PriorPrecision::Scalar(lambda),
        subset_scaling: SubsetScaling::None,
        batch_size: 250,
    }
    .check()?;
    let map = MapEstimate::new(Network::from(model.clone()), theta.clone(), likelihood)?;
    let subset: Vec<usize> = match s {
        None => (0..d).collect(),
        Some(s) => selection::random(model.layout(), Candidates::WeightsOnly, s, seed)?.indices,
    };
    let s = subset.len();
    let ours = || -> Result<f64> {
        let post = SubnetLaplace::fit(&map, &x, subset.clone(), &config)?;
        Ok(post.log_det_precision())
    };
    let var = Var::from_tensor(&theta)?;
    let naive = || -> Result<f64> {
        let jac = autograd_jacobian(&model, &var, &x)?;
        let jac_s = faer::Mat::from_fn(n, s, |i, c| jac[(i, subset[c])]);
        let h = jac_s.transpose() * &jac_s * faer::Scale(sigma.powi(-2));
        let p = faer::Mat::from_fn(s, s, |i, j| h[(i, j)] + if i == j { lambda } else { 0.0 });
        let llt = p
            .llt(faer::Side::Lower)
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        Ok(2.0 * (0..s).map(|i| llt.L()[(i, i)].ln()).sum::<f64>())
    };
    let (a, b) = (ours()?, naive()?);
    ensure!(
        (a - b).abs() <= 1e-8 * b.abs(),
        "log det differs: {a} vs {b}"
    );
    compare(
        &format!(
            "GGN Laplace, s = {s:>4} of D = {d} (MLP 8-50-50-1), 1000 points vs D-wide Jacobian"
        ),
        || ours().map(drop),
        || naive().map(drop),
    )
}

/// The naive routes' Jacobian of a one-output MLP: one autograd backward pass per row of `x`,
/// each giving the D-wide row ∂f(x_n)/∂θ.
fn autograd_jacobian(model: &Mlp, theta: &Var, x: &Tensor) -> Result<faer::Mat<f64>> {
    let n = x.dims()[0];
    let mut jac = faer::Mat::<f64>::zeros(n, model.layout().len());
    for i in 0..n {
        let f = model
            .forward(theta.as_tensor(), &x.narrow(0, i, 1)?)?
            .sum_all()?;
        let g: Vec<f64> = f
            .backward()?
            .get(theta.as_tensor())
            .expect("θ is a Var")
            .to_vec1()?;
        jac.row_mut(i).iter_mut().zip(g).for_each(|(j, v)| *j = v);
    }
    Ok(jac)
}

/// The linearized predictive variance of the full Laplace of the MLP 8-50-50-1 (fitted on 1,000
/// points, f64) at 500 test points: ours (the s Jacobian columns of each minibatch from (a, δ),
/// whitened by the Cholesky factor) against one autograd backward pass per test point for its
/// D-wide Jacobian row, then J Σ Jᵀ with Σ = P⁻¹ formed beforehand (untimed).
fn linearized_predictive() -> Result<()> {
    let (model, theta) = regression_mlp()?;
    let d = model.layout().len();
    let (x, x_test) = (
        standard_normal("x", 1000, 8)?,
        standard_normal("x-test", 500, 8)?,
    );
    let map = MapEstimate::new(
        Network::from(model.clone()),
        theta.clone(),
        Likelihood::Gaussian { sigma: 0.1 },
    )?;
    let config = LaplaceConfig {
        prior: PriorPrecision::Scalar(1.0),
        subset_scaling: SubsetScaling::None,
        batch_size: 250,
    }
    .check()?;
    let post = SubnetLaplace::fit(&map, &x, (0..d).collect(), &config)?;
    let sigma = post.covariance();
    let ours =
        || -> Result<Vec<f64>> { Ok(bdl_tensor::to_f64_vec(&post.f_covariance(&x_test, 500)?)?) };
    let var = Var::from_tensor(&theta)?;
    let naive = || -> Result<Vec<f64>> {
        let jac = autograd_jacobian(&model, &var, &x_test)?;
        let js = &jac * &sigma;
        Ok((0..500)
            .map(|i| (0..d).map(|c| js[(i, c)] * jac[(i, c)]).sum())
            .collect())
    };
    let (a, b) = (ours()?, naive()?);
    let scale = b.iter().copied().fold(0.0, f64::max);
    ensure!(
        a.iter().zip(&b).all(|(a, b)| (a - b).abs() <= 1e-8 * scale),
        "predictive variances differ"
    );
    compare(
        &format!(
            "linearized predictive of the full Laplace (D = {d}), 500 test points vs per-point Jacobians and Σ"
        ),
        || ours().map(drop),
        || naive().map(drop),
    )
}

/// The KFAC Laplace against the full GGN Laplace of the MLP 8-50-50-1 on the same 1,000 points
/// (f64): the fit (the Kronecker factors and their eigendecompositions against the full GGN's
/// low-rank route and Cholesky) and the linearized predictive covariance at 500 test points,
/// each as a cost ratio; the two posteriors differ (KFAC drops the cross-layer blocks and
/// factors each layer's), so only their sizes are checked.
fn kron_against_full() -> Result<()> {
    use bdl_laplace::{KronConfig, KronLaplace};
    let (model, theta) = regression_mlp()?;
    let d = model.layout().len();
    let (x, x_test) = (
        standard_normal("x", 1000, 8)?,
        standard_normal("x-test", 500, 8)?,
    );
    let map = MapEstimate::new(
        Network::from(model),
        theta,
        Likelihood::Gaussian { sigma: 0.1 },
    )?;
    let full_config = LaplaceConfig {
        prior: PriorPrecision::Scalar(1.0),
        subset_scaling: SubsetScaling::None,
        batch_size: 250,
    }
    .check()?;
    let kron_config = KronConfig {
        prior_precision: 1.0,
        batch_size: 250,
        ..KronConfig::default()
    }
    .check()?;
    let kron = || Ok(KronLaplace::fit(&map, &x, &kron_config)?);
    let full = || {
        Ok(SubnetLaplace::fit(
            &map,
            &x,
            (0..d).collect(),
            &full_config,
        )?)
    };
    let (k, f) = (kron()?, full()?);
    ensure!(
        k.subset().len() == d,
        "the KFAC Laplace covers every parameter"
    );
    cost_ratio(
        &format!("KFAC Laplace fit (D = {d}, 1000 points) as a multiple of the full GGN Laplace's"),
        None,
        || kron().map(drop),
        || full().map(drop),
    )?;
    cost_ratio(
        "KFAC linearized predictive covariance, 500 test points, as a multiple of the full Laplace's",
        None,
        || Ok(k.f_covariance(&x_test, 500).map(drop)?),
        || Ok(f.f_covariance(&x_test, 500).map(drop)?),
    )
}

/// Evidence tuning of the full Laplace of the MLP 8-50-50-1 on 1,000 points (f64): the GGN's
/// spectrum, then gradient ascent on log Z(λ, σ). Ours takes the spectrum from the 1,000 × 1,000
/// Gram matrix of the Jacobian rows (rank ≤ N·K = 1,000 < s = 3,051); the naive route forms the
/// s × s GGN and decomposes it. Both are checked to agree on (λ, σ).
fn evidence_tuning() -> Result<()> {
    use bdl_laplace::Evidence;
    let n = 1000;
    let (model, theta) = regression_mlp()?;
    let d = model.layout().len();
    let (x, y) = (standard_normal("x", n, 8)?, standard_normal("y", n, 1)?);
    let likelihood = Likelihood::Gaussian { sigma: 0.5 };
    let map = MapEstimate::new(Network::from(model.clone()), theta.clone(), likelihood)?;
    let all: Vec<usize> = (0..d).collect();
    let ours = || -> Result<(f64, f64)> {
        let tuned = Evidence::new(&map, &x, &y, all.clone(), 250)?.maximize(1.0, 0.5)?;
        Ok((tuned.lambda, tuned.sigma))
    };
    // The naive route: the spectrum of the s × s GGN (unit noise), then the same ascent on the
    // closed form of log Z.
    let naive = || -> Result<(f64, f64)> {
        let unit = Likelihood::Gaussian { sigma: 1.0 };
        let g = bdl_laplace::ggn(&model, &theta, &unit, &x, &all, 250)?;
        let eig = g
            .self_adjoint_eigen(faer::Side::Lower)
            .map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let values: Vec<f64> = eig.S().column_vector().iter().map(|v| v.max(0.0)).collect();
        let f = bdl_tensor::to_f64_vec(&model.forward(&theta, &x)?)?;
        let sse: f64 = f
            .iter()
            .zip(bdl_tensor::to_f64_vec(&y)?)
            .map(|(f, y)| (f - y).powi(2))
            .sum();
        let theta_sq: f64 = bdl_tensor::to_f64_vec(&theta)?.iter().map(|t| t * t).sum();
        let (s, n_obs) = (d as f64, n as f64);
        let gradient = |lambda: f64, sigma: f64| {
            let c = sigma.powi(-2);
            let trace: f64 = values.iter().map(|g| (c * g + lambda).recip()).sum();
            let shrink: f64 = values.iter().map(|g| c * g / (c * g + lambda)).sum();
            [
                -0.5 * (trace - s / lambda + theta_sq) * lambda,
                sse / (sigma * sigma) - n_obs + shrink,
            ]
        };
        let mut p = [0.0f64, 0.5f64.ln()];
        let mut adam = bdl_inference::OptimizerState::new(
            bdl_inference::Optimizer::Adam {
                beta1: 0.9,
                beta2: 0.999,
                eps: 1e-12,
            },
            2,
        );
        for _ in 0..3000 {
            let [dl, ds] = gradient(p[0].exp(), p[1].exp());
            adam.step(&mut p, &[-dl, -ds], 0.05);
        }
        Ok((p[0].exp(), p[1].exp()))
    };
    let (a, b) = (ours()?, naive()?);
    ensure!(
        (a.0 - b.0).abs() <= 1e-6 * b.0 && (a.1 - b.1).abs() <= 1e-6 * b.1,
        "tuned (λ, σ) differ: {a:?} vs {b:?}"
    );
    compare(
        &format!(
            "evidence tuning of the full Laplace, s = {d} (MLP 8-50-50-1), 1000 points vs s × s eigendecomposition"
        ),
        || ours().map(drop),
        || naive().map(drop),
    )
}

/// One sweep of node blocks (40 blocks) of the MNIST MLP 784-10-10-10-10 (sigmoid, softmax
/// likelihood, f32) on a batch of 600 standardised images of the shipped fixture, with the
/// paper's proposal variances for that batch size: ours (cached activations; a block of layer l
/// updates its node's pre-activation and re-evaluates the layers above) against the same kernel
/// scoring every proposal with a full candle forward pass and tensor log-likelihood. Both start
/// from one state and stream, so they make the same decisions; every later sweep is timed.
fn gibbs_node_sweep() -> Result<()> {
    use bdl_mcmc::{Acceptance, BatchMode, Blocking, GibbsConfig, ProposalVariance, State};
    let batch = 600;
    let device = Device::Cpu;
    let data = mnist_fixture(batch)?;
    let scaling = bdl_data::Standardizer::fit_global(data.x())?;
    let data = data.with_x(scaling.transform(data.x())?)?;
    let model = Mlp::new(MlpSpec::new(&[784, 10, 10, 10, 10], Activation::Sigmoid))?;
    let likelihood = Likelihood::Categorical { classes: 10 };
    let theta = model.init(Seed(0), DType::F32, &device)?;
    let config = GibbsConfig::new(
        Blocking::Node,
        ProposalVariance::PerLayer(vec![0.05, 5e-4, 5e-4, 5e-5]),
        BatchMode::Exact,
    )
    .check()?;
    let rng = Seed(1).rng();

    let mut ours = bdl_mcmc::Sampler::new(&model, likelihood, &data, &config, &theta, Seed(2))?;
    let kernel = config.kernel(model.layout())?;
    let mut naive = bdl_mcmc::DensityTarget::new(kernel.blocks().to_vec(), |params: &[f32]| {
        full_log_lik(&model, likelihood, &data, params)
    });
    let mut state = State::new(theta.to_vec1::<f32>()?);
    let mut acceptance = Acceptance::new(kernel.blocks().len());

    // The same decisions from the same state and stream (f32 scores that differ by rounding
    // could flip a test whose uniform lands within ~1e-5 of α; none does here).
    ours.iterate(0, &mut rng.clone())?;
    kernel.sweep(
        &mut naive,
        &mut state,
        &mut rng.clone(),
        &mut acceptance,
        0,
        true,
    )?;
    ensure!(
        ours.acceptance() == &acceptance,
        "the two sweeps made different decisions"
    );
    let same: Vec<f32> = ours.params()?.to_vec1()?;
    ensure!(
        same == state.theta(),
        "the two sweeps ended in different states"
    );

    let (t_ours, t_naive, ratio) = paired_sweeps(
        &mut ours,
        &kernel,
        &mut naive,
        (&mut state, &mut acceptance),
        (1, rng),
    )?;
    print_row(
        &format!(
            "Gibbs node-block sweep, MLP 784-10-10-10-10, batch {batch}: incremental vs full forward per block"
        ),
        t_ours,
        t_naive,
        &speed_up(ratio),
    );
    Ok(())
}

/// A Gibbs benchmark's two sides timed alternately ([`paired`]): `ours` iterating on from
/// iteration t0, and `kernel` sweeping `state` with every proposal scored by `naive`, each from
/// its own copy of `rng`.
fn paired_sweeps<B: bdl_mcmc::BlockTarget>(
    ours: &mut bdl_mcmc::Sampler,
    kernel: &bdl_mcmc::Kernel,
    naive: &mut B,
    (state, acceptance): (&mut bdl_mcmc::State<B::Scalar>, &mut bdl_mcmc::Acceptance),
    (t0, rng): (u64, bdl_tensor::ChaCha8Rng),
) -> Result<(Duration, Duration, f64)> {
    let (mut t, mut rng_ours, mut rng_naive) = (t0, rng.clone(), rng);
    paired(
        || {
            t += 1;
            Ok(ours.iterate(t, &mut rng_ours)?)
        },
        || Ok(kernel.sweep(naive, state, &mut rng_naive, acceptance, 0, true)?),
    )
}

/// The paper's MNIST chain of the Gibbs benchmarks: MLP 784-10-10-10-10 (sigmoid, softmax, f32)
/// from θ₀ of seed 0, class-stratified minibatches of 3000 and the paper's variances for that
/// batch size under `blocking`, on the fetched MNIST training set when present, otherwise the
/// shipped fixture's images repeated to fill the batch.
struct PaperChain {
    model: Mlp,
    likelihood: Likelihood,
    train: bdl_data::Dataset,
    /// The first batch of the training images.
    first: bdl_data::Dataset,
    theta: Tensor,
    config: bdl_inference::Valid<bdl_mcmc::GibbsConfig>,
    kernel: bdl_mcmc::Kernel,
    source: &'static str,
}

/// The batch size of the Gibbs paper benchmarks.
const PAPER_BATCH: usize = 3000;

impl PaperChain {
    fn new(blocking: bdl_mcmc::Blocking) -> Result<Self> {
        use bdl_mcmc::{BatchMode, GibbsConfig, ProposalVariance};
        let (train, source) = mnist_training_images(PAPER_BATCH)?;
        let scaling = bdl_data::Standardizer::fit_global(train.x())?;
        let train = train.with_x(scaling.transform(train.x())?)?;
        let first = train.select(&(0..PAPER_BATCH).collect::<Vec<_>>())?;
        let model = Mlp::new(MlpSpec::new(&[784, 10, 10, 10, 10], Activation::Sigmoid))?;
        let theta = model.init(Seed(0), DType::F32, &Device::Cpu)?;
        let config = GibbsConfig::new(
            blocking,
            ProposalVariance::PerLayer(vec![0.01, 1e-4, 1e-4, 1e-5]),
            BatchMode::Minibatch(PAPER_BATCH),
        )
        .check()?;
        let kernel = config.kernel(model.layout())?;
        Ok(Self {
            model,
            likelihood: Likelihood::Categorical { classes: 10 },
            train,
            first,
            theta,
            config,
            kernel,
            source,
        })
    }

    /// The Metropolis-within-Gibbs sampler as the chain runs it (a new minibatch every
    /// iteration).
    fn sampler(&self) -> Result<bdl_mcmc::Sampler> {
        let (model, config) = (&self.model, &self.config);
        let sampler = bdl_mcmc::Sampler::new(
            model,
            self.likelihood,
            &self.train,
            config,
            &self.theta,
            Seed(2),
        );
        Ok(sampler?)
    }
}

/// Sweeps of the paper's MNIST chain ([`PaperChain`]) under `blocking` (the paper's 10
/// sub-blocks per first-layer node, 130 blocks, or the author's sub-blocks of 10 parameters, 810
/// blocks): ours as the chain runs it against the same kernel scoring every proposal with a full
/// candle forward pass on one batch of 3000. Printed as sweeps per second, the ratio, and the
/// projected time of the paper's 110,000 iterations.
fn gibbs_paper_sweep(blocking: bdl_mcmc::Blocking) -> Result<()> {
    use bdl_mcmc::{Acceptance, State};
    let chain = PaperChain::new(blocking)?;
    let n_blocks = chain.kernel.blocks().len();
    let mut ours = chain.sampler()?;
    let mut naive =
        bdl_mcmc::DensityTarget::new(chain.kernel.blocks().to_vec(), |params: &[f32]| {
            full_log_lik(&chain.model, chain.likelihood, &chain.first, params)
        });
    let mut state = State::new(chain.theta.to_vec1::<f32>()?);
    let mut acceptance = Acceptance::new(n_blocks);
    let (t_ours, t_naive, _) = paired_sweeps(
        &mut ours,
        &chain.kernel,
        &mut naive,
        (&mut state, &mut acceptance),
        (0, Seed(1).rng()),
    )?;
    let hours = 110_000.0 * t_ours.as_secs_f64() / 3600.0;
    print_sweeps(
        &format!(
            "Gibbs sweep, MLP 784-10-10-10-10, batch {PAPER_BATCH}, {n_blocks} blocks ({}; 110,000 its: {hours:.2} h)",
            chain.source
        ),
        t_ours,
        t_naive,
    );
    Ok(())
}

/// SGLD-within-Gibbs against the Metropolis-within-Gibbs kernel on the paper's MNIST chain
/// ([`PaperChain`], 10 sub-blocks per first-layer node, 130 blocks): one SGLD step, a Langevin
/// move of each block in turn after a gradient of the batch's log-likelihood at the state the
/// blocks before it left (`bdl_mcmc::sample_sgmcmc` with a blocking, one epoch of one batch of
/// 3000), against one sweep of the MH kernel as the chain runs it (a proposal and an incremental
/// evaluation per block). Printed as sweeps per second of each (MH first) and the MH kernel's
/// speed-up. An SGLD step is 130 gradients of the whole batch; the MH sweep evaluates each
/// proposal incrementally from the layer it changes.
fn sgld_within_gibbs_sweep() -> Result<()> {
    use bdl_mcmc::{Dynamics, Schedule, SgmcmcConfig};
    let blocking = bdl_mcmc::Blocking::FinerNode {
        split: vec![Some(bdl_tensor::SubBlocks::Count(10)), None, None, None],
    };
    let chain = PaperChain::new(blocking.clone())?;
    let n_blocks = chain.kernel.blocks().len();
    let network = Network::from(chain.model.clone());
    let sgld = SgmcmcConfig {
        dynamics: Dynamics::Sgld,
        step_size: 1e-6,
        schedule: Schedule::Constant,
        // The paper's prior N(0, 10 I).
        prior_precision: 0.1,
        temperature: 1.0,
        epochs: 1,
        batch_size: PAPER_BATCH,
        burn_in: 0,
        keep_every: 1,
        subset: None,
        blocking: Some(blocking),
        seed: Seed(3),
    }
    .check()?;
    let (x, y) = (chain.first.x(), chain.first.y());
    let mut ours = chain.sampler()?;
    let mut t = 0;
    let mut rng = Seed(1).rng();
    let (t_mh, t_sgld, _) = paired(
        || {
            t += 1;
            Ok(ours.iterate(t, &mut rng)?)
        },
        || {
            let fit =
                bdl_mcmc::sample_sgmcmc(&network, &chain.theta, chain.likelihood, x, y, &sgld)?;
            ensure!(fit.steps == 1, "one SGLD step a sweep");
            Ok(())
        },
    )?;
    print_sweeps(
        &format!(
            "MH-within-Gibbs sweep vs SGLD-within-Gibbs step, MLP 784-10-10-10-10, batch {PAPER_BATCH}, {n_blocks} blocks ({})",
            chain.source
        ),
        t_mh,
        t_sgld,
    );
    Ok(())
}

/// One line of sweeps per second: the label, each side's sweeps per second and the second's
/// time over the first's.
fn print_sweeps(label: &str, first: Duration, second: Duration) {
    println!(
        "{label:<92} {:>7.1} sw/s {:>7.2} sw/s {:>7.1}×",
        1.0 / first.as_secs_f64(),
        1.0 / second.as_secs_f64(),
        second.as_secs_f64() / first.as_secs_f64()
    );
}

/// The naive evaluator of the Gibbs benchmarks: ℓ̂(θ) on `data` by a full candle forward pass and
/// the tensor log-likelihood, summed in f64.
fn full_log_lik(
    model: &Mlp,
    likelihood: Likelihood,
    data: &bdl_data::Dataset,
    params: &[f32],
) -> f64 {
    let full = || -> Result<f64> {
        let params = Tensor::from_slice(params, params.len(), &Device::Cpu)?;
        let f = model.forward(&params, data.x())?;
        let ll = likelihood.log_lik(&f, data.y())?;
        Ok(ll.to_dtype(DType::F64)?.sum_all()?.to_scalar()?)
    };
    full().expect("the benchmark's forward pass")
}

/// The MNIST training images for a batch of `batch`: the fetched training set when it is there,
/// otherwise the shipped fixture's images repeated until there are `batch` of them; with a word
/// saying which.
fn mnist_training_images(batch: usize) -> Result<(bdl_data::Dataset, &'static str)> {
    use bdl_data::mnist::{self, Collection, Part};
    if let Ok(full) = mnist::load(&bdl_data::root::fetched(), Collection::Mnist, Part::Train) {
        return Ok((full, "fetched MNIST"));
    }
    let fixture = mnist::load(&bdl_data::root::fixtures(), Collection::Mnist, Part::Train)?;
    let repeated: Vec<usize> = (0..batch.max(fixture.len()))
        .map(|i| i % fixture.len())
        .collect();
    Ok((fixture.select(&repeated)?, "fixture images, repeated"))
}

/// The first `n` training images of the shipped MNIST fixture.
fn mnist_fixture(n: usize) -> Result<bdl_data::Dataset> {
    let data = bdl_data::mnist::load(
        &bdl_data::root::fixtures(),
        bdl_data::mnist::Collection::Mnist,
        bdl_data::mnist::Part::Train,
    )?;
    ensure!(
        data.len() >= n,
        "the MNIST fixture has {} images, not {n}",
        data.len()
    );
    Ok(data.select(&(0..n).collect::<Vec<_>>())?)
}

/// The peak resident memory of this process so far (VmHWM), in bytes, where Linux reports it.
fn peak_memory() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// A subnetwork Laplace of `s` weights on an MNIST-sized MLP 784-100-10 (D = 79,510) with a
/// softmax likelihood on 1,000 MNIST images of the shipped fixture, by `SubnetLaplace::fit` on
/// all cores: with 10,000 factor rows and s ≥ 10,000 weights the low-rank route (the rows M and
/// a 10,000 × 10,000 Cholesky; below, the GGN and an s × s Cholesky), then a 100-point
/// predictive. Prints the route, the time of each phase and the process's peak memory; there is
/// no naive reference at this size (laplace-torch's route would first build the 1,000 × 10 ×
/// 79,510 Jacobian, 6.4 GB in f64).
fn large_subnetwork(s: usize) -> Result<()> {
    let device = Device::Cpu;
    let x = mnist_fixture(1000)?.x().clone();
    let model = Mlp::new(MlpSpec::new(&[784, 100, 10], Activation::Relu))?;
    let theta = model.init(Seed(7), DType::F32, &device)?;
    let chosen = selection::random(model.layout(), Candidates::WeightsOnly, s, Seed(7))?;
    let likelihood = Likelihood::Categorical { classes: 10 };
    let map = MapEstimate::new(Network::from(model.clone()), theta.clone(), likelihood)?;
    let config = LaplaceConfig {
        batch_size: 100,
        ..LaplaceConfig::default()
    }
    .check()?;
    let start = Instant::now();
    let post = SubnetLaplace::fit(&map, &x, chosen.indices, &config)?;
    let t_fit = start.elapsed();
    let start = Instant::now();
    let cov = post.f_covariance(&x.narrow(0, 0, 100)?, 100)?;
    let t_pred = start.elapsed();
    ensure!(cov.dims() == [100, 10, 10], "unexpected predictive shape");
    println!(
        "subnetwork Laplace, MLP 784-100-10 (D = {}), s = {s}, 1000 points × 10 classes ({} route): \
         fit {:.1} s, predictive at 100 points {:.1} s; peak memory {}",
        model.layout().len(),
        if post.is_low_rank() {
            "low-rank"
        } else {
            "dense"
        },
        t_fit.as_secs_f64(),
        t_pred.as_secs_f64(),
        peak_memory().map_or("unknown".to_owned(), |b| format!(
            "{:.1} GB",
            b as f64 / 1e9
        )),
    );
    Ok(())
}

/// The memory and time of a full-covariance subnetwork Laplace of `s` weights (drawn at random:
/// the cost does not depend on which) on ResNet-18 (CIFAR stem, 11.2 M parameters) by the dense
/// route, on all cores: the GGN H_S over 64 images of 3 × 32 × 32 (seeded N(0, 1) pixels; the
/// dense route's memory does not depend on the number of images, its GGN time grows with it
/// linearly), then P_S = H_S + λ factored in place, then the predictive covariance at 8 images.
/// Prints each phase's time, the GGN time extrapolated to CIFAR-10's 50,000 training images,
/// and the process's peak memory: H_S (s² f64) and its packed lower triangle kept for saving and
/// λ tuning (s(s + 1)/2 f64) dominate it. The Jacobians go 2 images at a time: the ResNet's
/// Jacobian keeps each image's layer inputs once per class, about 0.4 GiB an image.
fn resnet_subnetwork(s: usize, on: &Placed<'_>) -> Result<()> {
    let (n, device) = (64, on.device);
    let model = ResNet::resnet18(10)?;
    let theta = model.init(Seed(0), DType::F32, device)?;
    let x = bdl_tensor::normal(
        &mut Seed(1).rng(),
        (n, 3, 32, 32),
        0.0,
        1.0,
        DType::F32,
        device,
    )?;
    let chosen = selection::random(model.layout(), Candidates::WeightsOnly, s, Seed(7))?;
    let likelihood = Likelihood::Categorical { classes: 10 };
    let map = MapEstimate::new(Network::from(model.clone()), theta.clone(), likelihood)?;
    let batch = 2;
    let config = LaplaceConfig {
        batch_size: batch,
        ..LaplaceConfig::default()
    }
    .check()?;
    let start = Instant::now();
    let h = bdl_laplace::ggn(&model, &theta, &likelihood, &x, &chosen.indices, batch)?;
    let t_ggn = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let post = SubnetLaplace::from_ggn(map, chosen.indices, h, &config)?;
    let t_factor = start.elapsed().as_secs_f64();
    let start = Instant::now();
    let cov = post.f_covariance(&x.narrow(0, 0, 8)?, batch)?;
    let t_pred = start.elapsed().as_secs_f64();
    ensure!(cov.dims() == [8, 10, 10], "unexpected predictive shape");
    println!(
        "subnetwork Laplace, ResNet-18 (D = {}), s = {s}, dense route, {n} images × 10 classes{}: \
         GGN {t_ggn:.1} s (× {:.0} for CIFAR-10's 50,000 images: {:.1} h), Cholesky \
         {t_factor:.1} s, predictive at 8 images {t_pred:.1} s; peak memory {}",
        model.layout().len(),
        on.suffix(),
        50_000.0 / n as f64,
        t_ggn * 50_000.0 / n as f64 / 3600.0,
        peak_memory().map_or("unknown".to_owned(), |b| format!(
            "{:.1} GiB",
            b as f64 / (1u64 << 30) as f64
        )),
    );
    Ok(())
}
