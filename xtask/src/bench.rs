//! `cargo xtask bench`: the performance suite. Each line is a ratio measured in one run: ours
//! against a naive reference computing the same numbers.

use std::time::{Duration, Instant};

use anyhow::{Result, ensure};
use bdl_models::{Activation, Mlp, MlpSpec, Model};
use bdl_tensor::Seed;
use candle_core::{DType, Device, Tensor, Var};

/// Runs every benchmark and prints one line each.
pub fn run() -> Result<()> {
    bdl_tensor::set_num_threads(1);
    println!("benchmark (1 thread; median of repeated runs)                 ours       naive    speed-up");
    for batch in [32, 1000] {
        sum_sq_grads(batch)?;
    }
    Ok(())
}

/// The median wall time of `f` over enough repetitions to fill about half a second (at least 3).
fn median_time(mut f: impl FnMut() -> Result<()>) -> Result<Duration> {
    f()?; // warm-up
    let probe = Instant::now();
    f()?;
    let once = probe.elapsed().max(Duration::from_micros(1));
    let reps = (Duration::from_millis(500).as_secs_f64() / once.as_secs_f64()).clamp(3.0, 1000.0) as usize;
    let mut times = Vec::with_capacity(reps);
    for _ in 0..reps {
        let start = Instant::now();
        f()?;
        times.push(start.elapsed());
    }
    times.sort();
    Ok(times[reps / 2])
}

/// Σ_n g_n∘g_n for an MLP 13-50-1 (ReLU, squared-error output gradients): from the (a, δ)
/// products of one forward and one backward pass, against a loop of N single-example forward and
/// autograd backward passes whose gradients are squared and summed.
fn sum_sq_grads(batch: usize) -> Result<()> {
    let seed = Seed(0);
    let device = Device::Cpu;
    let model = Mlp::new(MlpSpec::new(&[13, 50, 1], Activation::Relu))?;
    let theta = model.init(seed, DType::F32, &device)?;
    let x = bdl_tensor::normal(&mut seed.fork("x").rng(), (batch, 13), 0.0, 1.0, DType::F32, &device)?;
    let y = bdl_tensor::normal(&mut seed.fork("y").rng(), (batch, 1), 0.0, 1.0, DType::F32, &device)?;

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
    ensure!(diff <= 1e-4 * scale, "the two computations disagree: {diff} (scale {scale})");

    let t_ours = median_time(|| ours().map(drop))?;
    let t_naive = median_time(|| naive().map(drop))?;
    println!(
        "Σ g∘g, MLP 13-50-1, batch {batch:>4}: (a,δ) products vs loop  {:>9.3} ms {:>9.3} ms {:>9.1}×",
        t_ours.as_secs_f64() * 1e3,
        t_naive.as_secs_f64() * 1e3,
        t_naive.as_secs_f64() / t_ours.as_secs_f64()
    );
    Ok(())
}
