//! Helpers shared by the tests: random tensors, conversions, independent reference formulas and
//! quadrature.

use bdl_likelihoods::Likelihood;
use bdl_tensor::{ChaCha8Rng, Seed, normal};
use candle_core::{DType, Device, Tensor};
use rand::Rng;

/// An f64 tensor of independent N(0, std²) draws.
pub(crate) fn randn(rng: &mut ChaCha8Rng, shape: &[usize], std: f64) -> Tensor {
    normal(rng, shape, 0.0, std, DType::F64, &Device::Cpu).unwrap()
}

/// The elements of any tensor, row-major, in f64.
pub(crate) fn values(t: &Tensor) -> Vec<f64> {
    bdl_tensor::to_f64_vec(t).unwrap()
}

/// An f64 tensor from row-major values.
pub(crate) fn tensor(values: Vec<f64>, shape: &[usize]) -> Tensor {
    Tensor::from_vec(values, shape, &Device::Cpu).unwrap()
}

/// `|a − b| ≤ tol · (1 + |b|)`: absolute near zero, relative for large values.
pub(crate) fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol * (1.0 + b.abs())
}

/// softmax written out independently of the crate.
pub(crate) fn softmax(xs: &[f64]) -> Vec<f64> {
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = xs.iter().map(|x| (x - max).exp()).collect();
    let s: f64 = e.iter().sum();
    e.iter().map(|x| x / s).collect()
}

/// 1 / (1 + e^{−x}).
pub(crate) fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// A random likelihood with K outputs (Bernoulli forces K = 1, Categorical K ≥ 2), N outputs f
/// ~ N(0, 2²) in f64, and matching targets: Gaussian y ~ N(0, 2²), Bernoulli y ∈ {0, 1} as f64
/// `[N]`, Categorical labels as u32 `[N]`.
pub(crate) fn random_problem(
    seed: u64,
    kind: usize,
    k: usize,
    n: usize,
) -> (Likelihood, Tensor, Tensor) {
    let mut rng = Seed(seed).rng();
    let (lik, k) = match kind {
        0 => (
            Likelihood::Gaussian {
                sigma: rng.random_range(0.3..2.0),
            },
            k,
        ),
        1 => (Likelihood::Bernoulli, 1),
        _ => (Likelihood::Categorical { classes: k.max(2) }, k.max(2)),
    };
    let f = randn(&mut rng, &[n, k], 2.0);
    let y = match lik {
        Likelihood::Gaussian { .. } => randn(&mut rng, &[n, k], 2.0),
        Likelihood::Bernoulli => tensor(
            (0..n)
                .map(|_| f64::from(rng.random_range(0..2u8)))
                .collect(),
            &[n],
        ),
        Likelihood::Categorical { classes } => {
            let labels: Vec<u32> = (0..n)
                .map(|_| rng.random_range(0..classes as u32))
                .collect();
            Tensor::from_vec(labels, n, &Device::Cpu).unwrap()
        }
    };
    (lik, f, y)
}

/// `f` with element (row, col) moved by `delta`.
pub(crate) fn perturb(f: &Tensor, row: usize, col: usize, delta: f64) -> Tensor {
    let k = f.dim(1).unwrap();
    let mut v = values(f);
    v[row * k + col] += delta;
    tensor(v, f.dims())
}

/// Step of the trapezoid rules below, and their half-width in standard deviations.
const STEP: f64 = 0.05;
const HALF_WIDTH: f64 = 9.0;

/// E[g(z)], z ~ N(0, 1), by the trapezoid rule on [−9, 9] with step 0.05. For g analytic in a
/// strip |Im z| < a and bounded (softmax/sigmoid of a linear function of z with coefficient c
/// has a ≈ π/c), the error is ~e^{−2πa/h}, below 1e-12 here for c ≤ 10; the tails beyond 9
/// standard deviations carry < 1e-18.
pub(crate) fn gauss_expect(g: impl Fn(f64) -> f64) -> f64 {
    let steps = (2.0 * HALF_WIDTH / STEP) as i64;
    let phi = |z: f64| (-0.5 * z * z).exp() / (2.0 * std::f64::consts::PI).sqrt();
    (0..=steps)
        .map(|i| {
            let z = -HALF_WIDTH + i as f64 * STEP;
            let w = if i == 0 || i == steps { 0.5 } else { 1.0 };
            w * phi(z) * g(z)
        })
        .sum::<f64>()
        * STEP
}

/// E[g(z₁, z₂)] for independent standard normals, by the product trapezoid rule (as above).
pub(crate) fn gauss_expect2(g: impl Fn(f64, f64) -> f64) -> f64 {
    gauss_expect(|z1| gauss_expect(|z2| g(z1, z2)))
}
