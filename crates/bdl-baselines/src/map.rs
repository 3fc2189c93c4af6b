//! MAP training: Adam or SGD with momentum, weight decay equal to the prior precision, early
//! stopping on a held-out fraction, σ by maximum likelihood.

use std::ops::ControlFlow;

use bdl_likelihoods::{Likelihood, Predictive};
use bdl_models::Model;
use bdl_tensor::Seed;
use candle_core::Tensor;
use serde::{Deserialize, Serialize};

use crate::optim::Optimizer;
use crate::train::{Trainer, finite, mean_nll, paired_rows, rows};
use crate::{Error, Result};

/// How to train to the MAP.
///
/// Serialisable, with every field defaulted, so that `{"learning_rate": 0.01, "epochs": 500}`
/// is a complete configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct MapConfig {
    /// The update rule (Adam by default).
    pub optimizer: Optimizer,
    /// The step size α.
    pub learning_rate: f64,
    /// The prior precision λ (the weight decay of the summed loss).
    pub prior_precision: f64,
    /// The most passes over the training data.
    pub epochs: usize,
    /// Examples per minibatch (the whole set when larger than it).
    pub batch_size: usize,
    /// Re-estimate a Gaussian likelihood's σ by maximum likelihood (the RMS residual on the
    /// training examples) after every epoch.
    pub learn_sigma: bool,
    /// The fraction of the examples held out for validation, in [0, 1); 0 for none. With a
    /// held-out set, the fit returns the parameters of the epoch with the lowest validation
    /// negative log-likelihood.
    pub validation_fraction: f64,
    /// Early stopping: end training after this many epochs in a row without a lower validation
    /// negative log-likelihood. `None` runs all `epochs` (and still returns the best). Ignored
    /// without a held-out set.
    pub patience: Option<usize>,
    /// The seed of the held-out split (`seed.fork("map-validation")`), the minibatch shuffles
    /// and the dropout masks of training.
    pub seed: Seed,
}

impl Default for MapConfig {
    fn default() -> Self {
        Self {
            optimizer: Optimizer::default(),
            learning_rate: 1e-3,
            prior_precision: 1.0,
            epochs: 100,
            batch_size: 128,
            learn_sigma: false,
            validation_fraction: 0.0,
            patience: Some(10),
            seed: Seed(0),
        }
    }
}

impl MapConfig {
    /// Checks the configuration: learning rate finite and > 0, prior precision finite and ≥ 0,
    /// at least one epoch, batch size ≥ 1, validation fraction in [0, 1), a valid optimiser.
    pub fn check(&self) -> Result<()> {
        self.optimizer.check()?;
        let ok = crate::optim::step_settings_ok(
            self.learning_rate,
            self.prior_precision,
            self.batch_size,
        ) && self.epochs > 0
            && (0.0..1.0).contains(&self.validation_fraction);
        if ok {
            Ok(())
        } else {
            Err(Error::InvalidConfig(format!(
                "MAP: need finite learning_rate > 0, finite prior_precision >= 0, epochs >= 1, \
                 batch_size >= 1 and validation_fraction in [0, 1), got {self:?}"
            )))
        }
    }
}

/// What the held-out set saw.
#[derive(Clone, Debug, PartialEq)]
pub struct Validation {
    /// The rows of x trained on, sorted.
    pub train: Vec<usize>,
    /// The held-out rows of x, sorted.
    pub held_out: Vec<usize>,
    /// The mean held-out negative log-likelihood −(1/|V|) Σ_{n∈V} log p(y_n | f(x_n; θ)) after
    /// each epoch run.
    pub nlls: Vec<f64>,
    /// The epoch (from 0) whose parameters the fit returns: the first with the lowest
    /// validation negative log-likelihood.
    pub best_epoch: usize,
}

/// The result of MAP training.
#[derive(Clone, Debug)]
pub struct MapFit {
    /// θ̂, the trained parameters (with a held-out set, those of the best validation epoch).
    pub theta: Tensor,
    /// The likelihood, with σ re-estimated when asked (the σ of the returned epoch).
    pub likelihood: Likelihood,
    /// The mean per-example loss L(θ)/N on the training examples after each epoch run (fewer
    /// than `epochs` when training stopped early).
    pub losses: Vec<f64>,
    /// The validation history, when a fraction was held out.
    pub validation: Option<Validation>,
}

impl MapFit {
    /// The plug-in predictive p(y* | f(x*; θ̂)): N(f, σ²) for regression, σ(f) or softmax(f) for
    /// classification (no dropout).
    pub fn predictive(&self, model: &impl Model, x: &Tensor) -> Result<Predictive> {
        let f = model.forward(&self.theta, x)?;
        Ok(self.likelihood.point_predictive(&f)?)
    }
}

/// Trains `model` from `theta0` to the MAP of the data (x, y) under `likelihood` and the prior
/// N(0, λ⁻¹ I), i.e. minimises
///
/// L(θ) = −Σ_n log p(y_n | f(x_n; θ)) + ½ λ ‖θ‖².
///
/// Each step uses the minibatch gradient rescaled to the whole training set,
/// (N/B) Σ_{n∈B} J_nᵀ ∂ℓ_n/∂f + λθ, divided by N so that step sizes do not depend on N. When the
/// model has dropout, training draws fresh masks from a seeded stream; losses, validation and
/// [`MapFit::predictive`] run without dropout.
///
/// With `validation_fraction` > 0, a seeded fraction of the rows is held out
/// ([`bdl_data::holdout_indices`]), the held-out negative log-likelihood is recorded after every
/// epoch, training stops after `patience` epochs without improvement, and the parameters (and σ)
/// of the best epoch are returned.
///
/// ```
/// use bdl_baselines::{MapConfig, Optimizer, train_map};
/// use bdl_likelihoods::Likelihood;
/// use bdl_models::{Activation, Mlp, MlpSpec};
/// use bdl_tensor::Seed;
/// use candle_core::{DType, Device, Tensor};
/// # fn main() -> Result<(), bdl_baselines::Error> {
/// let mlp = Mlp::new(MlpSpec::new(&[1, 16, 1], Activation::Tanh))?;
/// let x = Tensor::arange(0u32, 40, &Device::Cpu)?.to_dtype(DType::F32)?.affine(0.05, -1.0)?.unsqueeze(1)?;
/// let y = x.sin()?;
/// let config = MapConfig {
///     optimizer: Optimizer::Sgd { momentum: 0.9 },
///     learning_rate: 0.05,
///     epochs: 50,
///     batch_size: 8,
///     validation_fraction: 0.25, // 10 rows held out, early stopping on them
///     learn_sigma: true,
///     ..MapConfig::default()
/// };
/// let theta0 = mlp.init(Seed(1), DType::F32, &Device::Cpu)?;
/// let fit = train_map(&mlp, &theta0, Likelihood::Gaussian { sigma: 1.0 }, &x, &y, &config)?;
/// assert_eq!(fit.validation.as_ref().map(|v| v.held_out.len()), Some(10));
/// let pred = fit.predictive(&mlp, &x)?; // N(f(x; θ̂), σ²)
/// assert_eq!(pred.mean()?.dims(), &[40, 1]);
/// # Ok(()) }
/// ```
pub fn train_map(
    model: &impl Model,
    theta0: &Tensor,
    likelihood: Likelihood,
    x: &Tensor,
    y: &Tensor,
    config: &MapConfig,
) -> Result<MapFit> {
    config.check()?;
    let split = holdout(paired_rows(x, y)?, config)?;
    fit_map(model, theta0, likelihood, x, y, config, split, config.seed)
}

/// A train / held-out partition of the rows.
#[derive(Clone, Debug)]
pub(crate) struct Split {
    train: Vec<usize>,
    held_out: Vec<usize>,
}

/// The seeded held-out split that `config` asks for over `n` rows, if any; both parts must be
/// non-empty.
pub(crate) fn holdout(n: usize, config: &MapConfig) -> Result<Option<Split>> {
    if config.validation_fraction == 0.0 {
        return Ok(None);
    }
    let (train, held_out) = bdl_data::holdout_indices(
        n,
        config.validation_fraction,
        config.seed.fork("map-validation"),
    )?;
    if train.is_empty() || held_out.is_empty() {
        return Err(Error::InvalidConfig(format!(
            "validation_fraction {} of {n} examples leaves {} to train on and {} held out; both \
             must be >= 1",
            config.validation_fraction,
            train.len(),
            held_out.len()
        )));
    }
    Ok(Some(Split { train, held_out }))
}

/// MAP training on a given split, with minibatch and dropout streams forked off `stream`
/// (`config.seed` for [`train_map`]; an ensemble member's own seed). `config` must be checked.
pub(crate) fn fit_map(
    model: &impl Model,
    theta0: &Tensor,
    likelihood: Likelihood,
    x: &Tensor,
    y: &Tensor,
    config: &MapConfig,
    split: Option<Split>,
    stream: Seed,
) -> Result<MapFit> {
    let (x_train, y_train, held_out) = match &split {
        None => (x.clone(), y.clone(), None),
        Some(s) => (
            rows(x, &s.train)?,
            rows(y, &s.train)?,
            Some((rows(x, &s.held_out)?, rows(y, &s.held_out)?)),
        ),
    };
    let mut trainer = Trainer::new(
        model,
        x_train,
        y_train,
        likelihood,
        config.prior_precision,
        config.batch_size,
        config.optimizer,
        stream.fork("map"),
    )?;
    let mut theta = theta0.clone();
    let mut losses = Vec::with_capacity(config.epochs);
    let mut nlls = Vec::new();
    // (epoch, validation NLL, θ, likelihood) of the best epoch so far.
    let mut best: Option<(usize, f64, Tensor, Likelihood)> = None;
    for epoch in 0..config.epochs {
        (theta, _) = trainer.epoch(theta, config.learning_rate, |_| {
            Ok(ControlFlow::Continue(()))
        })?;
        losses.push(trainer.loss(&theta, config.learn_sigma, epoch)?);
        let Some((xv, yv)) = &held_out else { continue };
        let nll = mean_nll(model, &theta, trainer.likelihood, xv, yv)?;
        nlls.push(finite(nll, "validation", epoch)?);
        match &best {
            Some((best_epoch, best_nll, ..)) if nll >= *best_nll => {
                if config.patience.is_some_and(|p| epoch - best_epoch >= p) {
                    break;
                }
            }
            _ => best = Some((epoch, nll, theta.clone(), trainer.likelihood)),
        }
    }
    Ok(match (split, best) {
        (Some(Split { train, held_out }), Some((best_epoch, _, theta, likelihood))) => MapFit {
            theta,
            likelihood,
            losses,
            validation: Some(Validation {
                train,
                held_out,
                nlls,
                best_epoch,
            }),
        },
        _ => MapFit {
            theta,
            likelihood: trainer.likelihood,
            losses,
            validation: None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bdl_models::{Activation, Mlp, MlpSpec};
    use candle_core::{DType, Device};

    /// y = 2x − 0.5 + 0.1 sin 7x on 50 points in [−1, 1).
    fn line() -> (Vec<f64>, Vec<f64>) {
        let xs: Vec<f64> = (0..50).map(|i| i as f64 / 25.0 - 1.0).collect();
        let ys = xs
            .iter()
            .map(|x| 2.0 * x - 0.5 + 0.1 * (7.0 * x).sin())
            .collect();
        (xs, ys)
    }

    fn column(v: &[f64]) -> Tensor {
        Tensor::from_vec(v.to_vec(), (v.len(), 1), &Device::Cpu).unwrap()
    }

    #[test]
    fn linear_regression_reaches_the_ridge_solution() {
        // A linear model y = w x + b with a Gaussian likelihood (σ = 1) and prior precision λ:
        // the MAP solves (XᵀX + λI)θ = Xᵀy with X = [x, 1]. The objective is a well-conditioned
        // quadratic (Hessian eigenvalues ≈ 0.3 and 1.1 per example), so 3000 full-batch steps
        // of either optimiser reach it within 1e-3 (Adam's last steps are ~lr·|m̂|/√v̂ ≪ 1e-3
        // near the optimum; SGD with momentum contracts by ~0.97 per step).
        let model = Mlp::new(MlpSpec::new(&[1, 1], Activation::Identity)).unwrap();
        let (xs, ys) = line();
        let (x, y) = (column(&xs), column(&ys));
        let lambda = 3.0;
        let (sxx, sx, sxy, sy) = (
            xs.iter().map(|x| x * x).sum::<f64>(),
            xs.iter().sum::<f64>(),
            xs.iter().zip(&ys).map(|(x, y)| x * y).sum::<f64>(),
            ys.iter().sum::<f64>(),
        );
        let (a, b, c, d) = (sxx + lambda, sx, sx, 50.0 + lambda);
        let det = a * d - b * c;
        let w = (d * sxy - b * sy) / det;
        let bias = (a * sy - c * sxy) / det;
        for optimizer in [Optimizer::default(), Optimizer::Sgd { momentum: 0.9 }] {
            let config = MapConfig {
                optimizer,
                learning_rate: 0.01,
                prior_precision: lambda,
                epochs: 3000,
                batch_size: 50,
                ..MapConfig::default()
            };
            let theta0 = Tensor::zeros(2, DType::F64, &Device::Cpu).unwrap();
            let fit = train_map(
                &model,
                &theta0,
                Likelihood::Gaussian { sigma: 1.0 },
                &x,
                &y,
                &config,
            )
            .unwrap();
            let got: Vec<f64> = fit.theta.to_vec1().unwrap();
            assert!(
                (got[0] - w).abs() < 1e-3 && (got[1] - bias).abs() < 1e-3,
                "{optimizer:?}: {got:?} vs {w}, {bias}"
            );
            assert!(fit.validation.is_none() && fit.losses.len() == 3000);
            assert!(
                fit.losses
                    .windows(2)
                    .last()
                    .is_some_and(|w| w[1] <= w[0] + 1e-12)
            );
        }
    }

    /// 40 noisy points of sin 3x on [−1, 1] (uniform noise on [−0.5, 0.5], seeded) and an MLP
    /// 1-50-50-1 with no prior: it overfits the noise, so the validation NLL turns up.
    fn overfitting_setup() -> (Mlp, Tensor, Tensor, Tensor) {
        use rand::Rng;
        let mut rng = Seed(7).rng();
        let xs: Vec<f32> = (0..40).map(|i| i as f32 / 19.5 - 1.0).collect();
        let ys: Vec<f32> = xs
            .iter()
            .map(|x| (3.0 * x).sin() + rng.random::<f32>() - 0.5)
            .collect();
        let model = Mlp::new(MlpSpec::new(&[1, 50, 50, 1], Activation::Tanh)).unwrap();
        let theta0 = model.init(Seed(3), DType::F32, &Device::Cpu).unwrap();
        let x = Tensor::from_vec(xs, (40, 1), &Device::Cpu).unwrap();
        let y = Tensor::from_vec(ys, (40, 1), &Device::Cpu).unwrap();
        (model, theta0, x, y)
    }

    #[test]
    fn early_stopping_returns_the_best_validation_parameters() {
        let (model, theta0, x, y) = overfitting_setup();
        let lik = Likelihood::Gaussian { sigma: 0.1 };
        let config = MapConfig {
            learning_rate: 1e-2,
            prior_precision: 0.0,
            epochs: 3000,
            batch_size: 40,
            validation_fraction: 0.25,
            patience: Some(100),
            ..MapConfig::default()
        };
        let fit = train_map(&model, &theta0, lik, &x, &y, &config).unwrap();
        let v = fit.validation.as_ref().unwrap();
        assert_eq!((v.train.len(), v.held_out.len()), (30, 10));
        assert!(v.held_out.iter().all(|i| !v.train.contains(i)));
        // It stopped `patience` epochs after the best one, well before the budget.
        let ran = fit.losses.len();
        assert_eq!(v.nlls.len(), ran);
        assert_eq!(ran, v.best_epoch + 101, "best {} ran {ran}", v.best_epoch);
        assert!(ran < config.epochs);
        // The best epoch is the argmin of the history, and overfitting made the last epoch worse.
        let min = v.nlls.iter().copied().fold(f64::INFINITY, f64::min);
        assert_eq!(v.nlls[v.best_epoch], min);
        assert!(v.nlls[ran - 1] > min);
        // The returned θ is that epoch's: its held-out NLL, recomputed, is the recorded minimum
        // (same f32 forward pass on the same rows, so equal to rounding of the f64 sum).
        let (xv, yv) = (
            rows(&x, &v.held_out).unwrap(),
            rows(&y, &v.held_out).unwrap(),
        );
        let nll = mean_nll(&model, &fit.theta, fit.likelihood, &xv, &yv).unwrap();
        assert!((nll - min).abs() <= 1e-9 * min.abs(), "{nll} vs {min}");

        // Without patience all epochs run, and the best parameters are still returned.
        let all = MapConfig {
            epochs: ran + 20,
            patience: None,
            ..config.clone()
        };
        let full = train_map(&model, &theta0, lik, &x, &y, &all).unwrap();
        let vf = full.validation.as_ref().unwrap();
        assert_eq!(full.losses.len(), ran + 20);
        assert_eq!(vf.best_epoch, v.best_epoch);
        assert_eq!(
            full.theta.to_vec1::<f32>().unwrap(),
            fit.theta.to_vec1::<f32>().unwrap()
        );
    }

    #[test]
    fn configurations_read_from_partial_json() {
        let config: MapConfig = serde_json::from_str(
            r#"{"learning_rate": 0.01, "optimizer": {"kind": "sgd", "momentum": 0.9},
                "validation_fraction": 0.15, "patience": null}"#,
        )
        .unwrap();
        let expected = MapConfig {
            learning_rate: 0.01,
            optimizer: Optimizer::Sgd { momentum: 0.9 },
            validation_fraction: 0.15,
            patience: None,
            ..MapConfig::default()
        };
        assert_eq!(config, expected);
        let swag: crate::SwagConfig =
            serde_json::from_str(r#"{"snapshot_unit": "steps", "rank": 5}"#).unwrap();
        assert_eq!(
            (swag.snapshot_unit, swag.rank, swag.snapshots),
            (crate::SnapshotUnit::Steps, 5, 20)
        );
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        let model = Mlp::new(MlpSpec::new(&[1, 1], Activation::Identity)).unwrap();
        let theta0 = Tensor::zeros(2, DType::F64, &Device::Cpu).unwrap();
        let (xs, ys) = line();
        let (x, y) = (column(&xs), column(&ys));
        let lik = Likelihood::Gaussian { sigma: 1.0 };
        let train =
            |x: &Tensor, y: &Tensor, c: &MapConfig| train_map(&model, &theta0, lik, x, y, c);
        let ok = MapConfig::default();
        for bad in [
            MapConfig {
                learning_rate: 0.0,
                ..ok.clone()
            },
            MapConfig {
                batch_size: 0,
                ..ok.clone()
            },
            MapConfig {
                validation_fraction: 1.0,
                ..ok.clone()
            },
            MapConfig {
                validation_fraction: 0.001, // rounds to no held-out row of 50
                ..ok.clone()
            },
            MapConfig {
                prior_precision: f64::NAN,
                ..ok.clone()
            },
        ] {
            assert!(matches!(train(&x, &y, &bad), Err(Error::InvalidConfig(_))));
        }
        let short = y.narrow(0, 0, 49).unwrap();
        assert!(matches!(
            train(&x, &short, &ok),
            Err(Error::RowMismatch {
                x_rows: 50,
                y_rows: 49
            })
        ));
        let none = x.narrow(0, 0, 0).unwrap();
        assert!(matches!(
            train(&none, &y.narrow(0, 0, 0).unwrap(), &ok),
            Err(Error::NoData)
        ));
        let wrong_theta = Tensor::zeros(3, DType::F64, &Device::Cpu).unwrap();
        assert!(train_map(&model, &wrong_theta, lik, &x, &y, &ok).is_err());
        // A learning rate far too large diverges, as a typed error.
        let wild = MapConfig {
            learning_rate: 1e3,
            optimizer: Optimizer::Sgd { momentum: 0.9 },
            ..ok
        };
        assert!(matches!(
            train(&x, &y, &wild),
            Err(Error::Diverged {
                stage: "training",
                ..
            })
        ));
    }
}
