//! Derivatives and curvature of the likelihoods against finite differences and closed forms.

use bdl_likelihoods::Likelihood;
use bdl_tensor::Seed;
use candle_core::{DType, Device, Tensor};
use proptest::prelude::*;

use crate::common::{close, perturb, randn, random_problem, softmax, tensor, values};

/// Step of the central differences in f64. Truncation error is h²/6 · |∂³ log p| ≤ 2e-11 (the
/// Gaussian log-likelihood is quadratic, so exact; logistic and softmax third derivatives are
/// below 1); rounding error is ε |log p| / h ≈ 1e-16 · 600 / 1e-5 ≈ 6e-9 at worst (σ = 0.3,
/// residuals up to ~10). Tolerance `FD_TOL` · (1 + |value|) with 1e-7 leaves a margin of > 10.
const H: f64 = 1e-5;
const FD_TOL: f64 = 1e-7;

proptest! {
    /// grad_f = −∂ log p / ∂f, by central differences of log_lik, for all three likelihoods.
    #[test]
    fn grad_f_matches_finite_differences(seed in any::<u64>(), kind in 0usize..3, k in 1usize..6, n in 1usize..5) {
        let (lik, f, y) = random_problem(seed, kind, k, n);
        let k = f.dim(1).unwrap();
        let grad = values(&lik.grad_f(&f, &y).unwrap());
        prop_assert_eq!(grad.len(), n * k);
        for row in 0..n {
            for col in 0..k {
                let up = values(&lik.log_lik(&perturb(&f, row, col, H), &y).unwrap())[row];
                let down = values(&lik.log_lik(&perturb(&f, row, col, -H), &y).unwrap())[row];
                let fd = -(up - down) / (2.0 * H);
                prop_assert!(close(grad[row * k + col], fd, FD_TOL), "{lik:?} [{row},{col}]: {} vs {fd}", grad[row * k + col]);
            }
        }
    }

    /// hess_f = ∂ grad_f / ∂f, by central differences of grad_f (same step and tolerance).
    #[test]
    fn hess_f_matches_finite_differences_of_grad_f(seed in any::<u64>(), kind in 0usize..3, k in 1usize..6, n in 1usize..5) {
        let (lik, f, y) = random_problem(seed, kind, k, n);
        let k = f.dim(1).unwrap();
        let hess = values(&lik.hess_f(&f).unwrap());
        prop_assert_eq!(hess.len(), n * k * k);
        for row in 0..n {
            for col in 0..k {
                let up = values(&lik.grad_f(&perturb(&f, row, col, H), &y).unwrap());
                let down = values(&lik.grad_f(&perturb(&f, row, col, -H), &y).unwrap());
                for out in 0..k {
                    let fd = (up[row * k + out] - down[row * k + out]) / (2.0 * H);
                    let h = hess[row * k * k + out * k + col];
                    prop_assert!(close(h, fd, FD_TOL), "{lik:?} [{row},{out},{col}]: {h} vs {fd}");
                }
            }
        }
    }

    /// L Lᵀ = Λ for every likelihood. Entries are products of numbers ≤ σ⁻² ≈ 11 summed over
    /// K ≤ 5 terms, so f64 rounding is ~1e-14; tolerance 1e-12 · (1 + |Λ|).
    #[test]
    fn hess_factor_reproduces_hess_f(seed in any::<u64>(), kind in 0usize..3, k in 1usize..6, n in 1usize..5) {
        let (lik, f, _) = random_problem(seed, kind, k, n);
        let k = f.dim(1).unwrap();
        let lam = values(&lik.hess_f(&f).unwrap());
        let l = values(&lik.hess_factor(&f).unwrap());
        for row in 0..n {
            let b = row * k * k;
            for i in 0..k {
                for j in 0..k {
                    let llt: f64 = (0..k).map(|p| l[b + i * k + p] * l[b + j * k + p]).sum();
                    prop_assert!(close(llt, lam[b + i * k + j], 1e-12));
                }
            }
        }
    }

    /// The softmax factor L = diag(√p) − p √pᵀ reproduces diag(p) − p pᵀ, with p computed
    /// independently of the crate, for up to 12 classes and logits of scale 5 (probabilities
    /// down to ~1e-20). Tolerance as above: 1e-12 absolute on entries ≤ 1/4.
    #[test]
    fn softmax_factor_reproduces_diag_p_minus_ppt(seed in any::<u64>(), k in 2usize..13, n in 1usize..4) {
        let mut rng = Seed(seed).rng();
        let f = randn(&mut rng, &[n, k], 5.0);
        let l = values(&Likelihood::Categorical { classes: k }.hess_factor(&f).unwrap());
        let fv = values(&f);
        for row in 0..n {
            let p = softmax(&fv[row * k..(row + 1) * k]);
            let b = row * k * k;
            for i in 0..k {
                for j in 0..k {
                    let expected = if i == j { p[i] } else { 0.0 } - p[i] * p[j];
                    let llt: f64 = (0..k).map(|q| l[b + i * k + q] * l[b + j * k + q]).sum();
                    prop_assert!((llt - expected).abs() <= 1e-12, "[{i},{j}] {llt} vs {expected}");
                }
            }
        }
    }

    /// Λ is exactly symmetric and positive semi-definite: vᵀΛv ≥ −1e-14 |v|² (rounding of K ≤ 5
    /// products of entries ≤ 11) for 20 random directions and, for the softmax, its null vector 1.
    #[test]
    fn hess_f_is_symmetric_psd(seed in any::<u64>(), kind in 0usize..3, k in 1usize..6, n in 1usize..5) {
        let (lik, f, _) = random_problem(seed, kind, k, n);
        let k = f.dim(1).unwrap();
        let lam = values(&lik.hess_f(&f).unwrap());
        let mut rng = Seed(seed).fork("directions").rng();
        let mut directions = values(&randn(&mut rng, &[20, k], 1.0));
        directions.extend(std::iter::repeat_n(1.0, k));
        for row in 0..n {
            let b = row * k * k;
            for i in 0..k {
                for j in 0..k {
                    prop_assert_eq!(lam[b + i * k + j], lam[b + j * k + i]);
                }
            }
            for v in directions.chunks(k) {
                let quad: f64 = (0..k * k).map(|ij| v[ij / k] * lam[b + ij] * v[ij % k]).sum();
                let norm: f64 = v.iter().map(|x| x * x).sum();
                prop_assert!(quad >= -1e-14 * norm, "vᵀΛv = {quad}");
            }
        }
    }

    /// The f32 path gives the f64 results to f32 precision (relative 1e-5: a few ulps of 1.2e-7
    /// amplified by log-sum-exp and the sums over K ≤ 5), and keeps the dtype.
    #[test]
    fn f32_matches_f64(seed in any::<u64>(), kind in 0usize..3, k in 1usize..6, n in 1usize..5) {
        let (lik, f, y) = random_problem(seed, kind, k, n);
        let f32_ = f.to_dtype(DType::F32).unwrap();
        let y32 = if y.dtype() == DType::F64 { y.to_dtype(DType::F32).unwrap() } else { y.clone() };
        let pairs = [
            (lik.log_lik(&f32_, &y32).unwrap(), lik.log_lik(&f, &y).unwrap()),
            (lik.grad_f(&f32_, &y32).unwrap(), lik.grad_f(&f, &y).unwrap()),
            (lik.hess_f(&f32_).unwrap(), lik.hess_f(&f).unwrap()),
            (lik.hess_factor(&f32_).unwrap(), lik.hess_factor(&f).unwrap()),
        ];
        for (single, double) in pairs {
            prop_assert_eq!(single.dtype(), DType::F32);
            prop_assert_eq!(double.dtype(), DType::F64);
            for (a, b) in values(&single).iter().zip(values(&double)) {
                prop_assert!(close(*a, b, 1e-5), "{a} vs {b}");
            }
        }
    }

    /// ∂ log p/∂ log σ by central differences in log σ (tolerance as for grad_f), and the ML σ
    /// zeroes the summed gradient (to 1e-9 · N K: rounding of N K terms of size ~1) and equals
    /// the root mean squared residual.
    #[test]
    fn gaussian_sigma_gradient_and_mle(seed in any::<u64>(), k in 1usize..6, n in 1usize..5) {
        let (lik, f, y) = random_problem(seed, 0, k, n);
        let Likelihood::Gaussian { sigma } = lik else { unreachable!() };
        let grad = values(&lik.grad_log_sigma(&f, &y).unwrap());
        let at = |log_sigma: f64| values(&Likelihood::Gaussian { sigma: log_sigma.exp() }.log_lik(&f, &y).unwrap());
        let (up, down) = (at(sigma.ln() + H), at(sigma.ln() - H));
        for row in 0..n {
            prop_assert!(close(grad[row], (up[row] - down[row]) / (2.0 * H), FD_TOL));
        }
        let mle = Likelihood::gaussian_mle(&f, &y).unwrap();
        let Likelihood::Gaussian { sigma: s } = mle else { unreachable!() };
        let r2: f64 = values(&f).iter().zip(values(&y)).map(|(a, b)| (a - b) * (a - b)).sum();
        prop_assert!(close(s, (r2 / (n * k) as f64).sqrt(), 1e-12));
        let total: f64 = values(&mle.grad_log_sigma(&f, &y).unwrap()).iter().sum();
        prop_assert!(total.abs() <= 1e-9 * (n * k) as f64, "{total}");
    }

    /// The per-example scalar form equals the tensor form for every likelihood: the same
    /// formulas in f64, summed in a possibly different order over K ≤ 5 terms of size ≤ ~50, so
    /// they agree to 1e-13 · (1 + |log p|).
    #[test]
    fn log_lik_row_matches_log_lik(seed in any::<u64>(), kind in 0usize..3, k in 1usize..6, n in 1usize..5) {
        let (lik, f, y) = random_problem(seed, kind, k, n);
        let k = f.dim(1).unwrap();
        let rows = lik.target_rows(&y, n, k).unwrap();
        let width = rows.len() / n;
        let (ll, f) = (values(&lik.log_lik(&f, &y).unwrap()), values(&f));
        for row in 0..n {
            let one = lik.log_lik_row(&f[row * k..(row + 1) * k], &rows[row * width..(row + 1) * width]);
            prop_assert!(close(one, ll[row], 1e-13), "{lik:?} row {row}: {one} vs {}", ll[row]);
        }
    }
}

/// Closed forms at hand-checkable points.
#[test]
fn closed_forms() {
    let dev = Device::Cpu;
    let f = Tensor::new(&[[0.0f64], [3.0]], &dev).unwrap();
    let y = Tensor::new(&[1.0f64, 0.0], &dev).unwrap();
    let ll = values(&Likelihood::Bernoulli.log_lik(&f, &y).unwrap());
    assert!((ll[0] - 0.5f64.ln()).abs() < 1e-15);
    assert!((ll[1] - (1.0 / (1.0 + 3.0f64.exp())).ln()).abs() < 1e-15);
    let g = Likelihood::Gaussian { sigma: 2.0 };
    let ll = values(&g.log_lik(&f, &y).unwrap());
    let expected = -0.5 * 9.0 / 4.0 - 0.5 * (2.0 * std::f64::consts::PI * 4.0).ln();
    assert!((ll[1] - expected).abs() < 1e-14);
    assert_eq!(values(&g.grad_f(&f, &y).unwrap()), [-0.25, 0.75]);
    assert_eq!(values(&g.hess_factor(&f).unwrap()), [0.5, 0.5]);
}

/// Extreme logits stay finite and accurate: log-sum-exp, softplus and σ(f)σ(−f) without
/// cancellation, in f32 and f64.
#[test]
fn extreme_logits_are_stable() {
    let dev = Device::Cpu;
    for dtype in [DType::F32, DType::F64] {
        let f = Tensor::new(&[[100.0f64], [-100.0]], &dev)
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
        let y = Tensor::new(&[0u32, 0], &dev).unwrap();
        let ll = values(&Likelihood::Bernoulli.log_lik(&f, &y).unwrap());
        assert!(close(ll[0], -100.0, 1e-6) && ll[1].abs() < 1e-30, "{ll:?}");
        // σ(±50)σ(∓50) ≈ e^{−50} ≈ 2e-22, a normal f32: relative accuracy 1e-5.
        let f50 = Tensor::new(&[[50.0f64], [-50.0]], &dev)
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
        let lam = values(&Likelihood::Bernoulli.hess_f(&f50).unwrap());
        let exact = (-50.0f64).exp() / (1.0 + (-50.0f64).exp()).powi(2);
        assert!(
            lam.iter().all(|&v| ((v - exact) / exact).abs() < 1e-5),
            "{lam:?}"
        );

        let f = Tensor::new(&[[1000.0f64, 0.0, -1000.0]], &dev)
            .unwrap()
            .to_dtype(dtype)
            .unwrap();
        let lik = Likelihood::Categorical { classes: 3 };
        let ll = values(
            &lik.log_lik(&f, &Tensor::new(&[2u32], &dev).unwrap())
                .unwrap(),
        );
        assert!(close(ll[0], -2000.0, 1e-6), "{ll:?}");
        assert!(
            values(&lik.hess_factor(&f).unwrap())
                .iter()
                .all(|v| v.is_finite())
        );
    }
}

/// Labels are accepted as u8, u32, i64 and integral f32/f64, as `[N]` or `[N, 1]`, with the
/// same result.
#[test]
fn label_dtypes_agree() {
    let lik = Likelihood::Categorical { classes: 4 };
    let f = randn(&mut Seed(5).rng(), &[3, 4], 1.0);
    let labels = [3.0, 0.0, 2.0];
    let reference = values(&lik.log_lik(&f, &tensor(labels.to_vec(), &[3])).unwrap());
    for dtype in [DType::U8, DType::U32, DType::I64, DType::F32, DType::F64] {
        for shape in [&[3][..], &[3, 1][..]] {
            let y = tensor(labels.to_vec(), shape).to_dtype(dtype).unwrap();
            assert_eq!(
                values(&lik.log_lik(&f, &y).unwrap()),
                reference,
                "{dtype:?} {shape:?}"
            );
        }
    }
}

/// Likelihoods serialise with an internal tag and round-trip.
#[test]
fn serde_round_trip() {
    let cases = [
        (
            Likelihood::Gaussian { sigma: 0.5 },
            r#"{"kind":"gaussian","sigma":0.5}"#,
        ),
        (Likelihood::Bernoulli, r#"{"kind":"bernoulli"}"#),
        (
            Likelihood::Categorical { classes: 10 },
            r#"{"kind":"categorical","classes":10}"#,
        ),
    ];
    for (lik, json) in cases {
        assert_eq!(serde_json::to_string(&lik).unwrap(), json);
        assert_eq!(serde_json::from_str::<Likelihood>(json).unwrap(), lik);
    }
}
