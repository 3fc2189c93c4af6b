//! MAP training: Adam or SGD with momentum, weight decay equal to the prior precision, early
//! stopping on a held-out fraction, σ by maximum likelihood. The start of every Laplace
//! approximation, SWAG run and ensemble member.

use std::ops::ControlFlow;

use bdl_likelihoods::Likelihood;
use bdl_models::Network;
use bdl_tensor::Seed;
use candle_core::Tensor;
use serde::{Deserialize, Serialize};

use crate::train::{Trainer, check_descent, finite, mean_nll};
use crate::valid::{Valid, Validate, at_least_one, require};
use crate::{InvalidParam, MapEstimate, MinibatchLoop, Optimizer, Result, paired_rows, rows};

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
    /// The seed of the held-out split (`seed.fork("map-validation")`), the minibatch orders
    /// and the dropout masks of training (`seed.fork("map")`).
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

impl Validate for MapConfig {
    /// A valid optimiser, learning rate finite and > 0, prior precision finite and ≥ 0, at
    /// least one epoch and one example per batch, validation fraction in [0, 1).
    fn validate(&self) -> Result<(), InvalidParam> {
        check_descent(
            &self.optimizer,
            self.learning_rate,
            self.prior_precision,
            self.batch_size,
        )?;
        at_least_one("epochs", self.epochs)?;
        require(
            (0.0..1.0).contains(&self.validation_fraction),
            "validation_fraction",
            self.validation_fraction,
            "in [0, 1)",
        )
    }
}

/// A seeded train / held-out partition of the rows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Holdout {
    /// The rows trained on, sorted.
    pub train: Vec<usize>,
    /// The held-out rows, sorted.
    pub held_out: Vec<usize>,
}

impl Holdout {
    /// The held-out split `config` asks for over `n` rows, if any (from
    /// `config.seed.fork("map-validation")`); both parts must be non-empty.
    pub fn of(n: usize, config: &MapConfig) -> Result<Option<Self>> {
        if config.validation_fraction == 0.0 {
            return Ok(None);
        }
        let (train, held_out) = bdl_data::holdout_indices(
            n,
            config.validation_fraction,
            config.seed.fork("map-validation"),
        )?;
        require(
            !train.is_empty() && !held_out.is_empty(),
            "validation_fraction",
            config.validation_fraction,
            &format!(
                "such that both the {n} examples' training part ({}) and held-out part ({}) are \
                 non-empty",
                train.len(),
                held_out.len()
            ),
        )?;
        Ok(Some(Self { train, held_out }))
    }
}

/// What the held-out set saw.
#[derive(Clone, Debug, PartialEq)]
pub struct Validation {
    /// The split.
    pub holdout: Holdout,
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
    /// θ̂ with its network and likelihood (σ re-estimated when asked): a point-mass posterior.
    pub estimate: MapEstimate,
    /// The mean per-example loss L(θ)/N on the training examples after each epoch run (fewer
    /// than `epochs` when training stopped early).
    pub losses: Vec<f64>,
    /// The validation history, when a fraction was held out.
    pub validation: Option<Validation>,
}

/// Trains `network` from `theta0` to the MAP of the data (x, y) under `likelihood` and the prior
/// N(0, λ⁻¹ I), i.e. minimises
///
/// L(θ) = −Σ_n log p(y_n | f(x_n; θ)) + ½ λ ‖θ‖²,
///
/// by [`Trainer`] (minibatch gradients rescaled per example, so step sizes do not depend on N;
/// fresh dropout masks per step when the network has dropout; losses and validation without).
///
/// With `validation_fraction` > 0, a seeded fraction of the rows is held out ([`Holdout`]), the
/// held-out negative log-likelihood is recorded after every epoch, training stops after
/// `patience` epochs without improvement, and the parameters (and σ) of the best epoch are
/// returned.
///
/// ```
/// use bdl_inference::{MapConfig, Optimizer, Posterior, PredictOptions, Validate, train_map};
/// use bdl_likelihoods::Likelihood;
/// use bdl_models::{Activation, Mlp, MlpSpec, Network};
/// use bdl_tensor::Seed;
/// use candle_core::{DType, Device, Tensor};
/// # fn main() -> Result<(), bdl_inference::Error> {
/// let net = Network::from(Mlp::new(MlpSpec::new(&[1, 16, 1], Activation::Tanh))?);
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
/// }
/// .check()?;
/// let theta0 = net.init(Seed(1), DType::F32, &Device::Cpu)?;
/// let fit = train_map(&net, &theta0, Likelihood::Gaussian { sigma: 1.0 }, &x, &y, &config)?;
/// assert_eq!(fit.validation.as_ref().map(|v| v.holdout.held_out.len()), Some(10));
/// let pred = fit.estimate.predictive(&x, &PredictOptions::default())?; // N(f(x; θ̂), σ²)
/// assert_eq!(pred.mean()?.dims(), &[40, 1]);
/// # Ok(()) }
/// ```
pub fn train_map(
    network: &Network,
    theta0: &Tensor,
    likelihood: Likelihood,
    x: &Tensor,
    y: &Tensor,
    config: &Valid<MapConfig>,
) -> Result<MapFit> {
    let holdout = Holdout::of(paired_rows(x, y)?, config)?;
    train_map_on(
        network,
        theta0,
        likelihood,
        x,
        y,
        config,
        holdout.as_ref(),
        config.seed,
    )
}

/// [`train_map`] on a given held-out split, with minibatch and dropout streams forked off
/// `stream` (`config.seed` for [`train_map`]; an ensemble member's own seed).
pub fn train_map_on(
    network: &Network,
    theta0: &Tensor,
    likelihood: Likelihood,
    x: &Tensor,
    y: &Tensor,
    config: &Valid<MapConfig>,
    holdout: Option<&Holdout>,
    stream: Seed,
) -> Result<MapFit> {
    paired_rows(x, y)?;
    let (x_train, y_train, held_out) = match holdout {
        None => (x.clone(), y.clone(), None),
        Some(h) => (
            rows(x, &h.train)?,
            rows(y, &h.train)?,
            Some((rows(x, &h.held_out)?, rows(y, &h.held_out)?)),
        ),
    };
    let seed = stream;
    let stream = stream.fork("map");
    let data = MinibatchLoop::new(&x_train, &y_train, config.batch_size, stream)?;
    let mut trainer = Trainer::new(
        network,
        theta0,
        data,
        likelihood,
        config.prior_precision,
        config.optimizer,
        stream,
    )?;
    let mut losses = Vec::with_capacity(config.epochs);
    let mut nlls = Vec::new();
    // (epoch, validation NLL, θ, likelihood) of the best epoch so far.
    let mut best: Option<(usize, f64, Tensor, Likelihood)> = None;
    for epoch in 0..config.epochs {
        trainer.epoch(config.learning_rate, |_| Ok(ControlFlow::Continue(())))?;
        losses.push(trainer.loss(config.learn_sigma)?);
        let Some((xv, yv)) = &held_out else { continue };
        let theta = trainer.theta()?;
        let nll = mean_nll(network, &theta, trainer.likelihood(), xv, yv)?;
        nlls.push(finite(nll, "validation", epoch)?);
        match &best {
            Some((best_epoch, best_nll, ..)) if nll >= *best_nll => {
                if config.patience.is_some_and(|p| epoch - best_epoch >= p) {
                    break;
                }
            }
            _ => best = Some((epoch, nll, theta, trainer.likelihood())),
        }
    }
    let (theta, likelihood, validation) = match (holdout, best) {
        (Some(holdout), Some((best_epoch, _, theta, likelihood))) => (
            theta,
            likelihood,
            Some(Validation {
                holdout: holdout.clone(),
                nlls,
                best_epoch,
            }),
        ),
        _ => (trainer.theta()?, trainer.likelihood(), None),
    };
    Ok(MapFit {
        estimate: MapEstimate::new(network.clone(), theta, likelihood)?
            .with_seed(seed)
            .with_training((**config).clone()),
        losses,
        validation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Error, Posterior};
    use bdl_models::{Activation, Mlp, MlpSpec};
    use candle_core::{DType, Device};

    fn mlp(widths: &[usize], activation: Activation) -> Network {
        Mlp::new(MlpSpec::new(widths, activation)).unwrap().into()
    }

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
        let model = mlp(&[1, 1], Activation::Identity);
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
            }
            .check()
            .unwrap();
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
            let got: Vec<f64> = fit.estimate.theta().to_vec1().unwrap();
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
    fn overfitting_setup() -> (Network, Tensor, Tensor, Tensor) {
        use rand::Rng;
        let mut rng = Seed(7).rng();
        let xs: Vec<f32> = (0..40).map(|i| i as f32 / 19.5 - 1.0).collect();
        let ys: Vec<f32> = xs
            .iter()
            .map(|x| (3.0 * x).sin() + rng.random::<f32>() - 0.5)
            .collect();
        let model = mlp(&[1, 50, 50, 1], Activation::Tanh);
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
        let fit = train_map(
            &model,
            &theta0,
            lik,
            &x,
            &y,
            &config.clone().check().unwrap(),
        )
        .unwrap();
        let v = fit.validation.as_ref().unwrap();
        assert_eq!((v.holdout.train.len(), v.holdout.held_out.len()), (30, 10));
        assert!(
            v.holdout
                .held_out
                .iter()
                .all(|i| !v.holdout.train.contains(i))
        );
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
            rows(&x, &v.holdout.held_out).unwrap(),
            rows(&y, &v.holdout.held_out).unwrap(),
        );
        let nll = mean_nll(
            &model,
            fit.estimate.theta(),
            fit.estimate.likelihood(),
            &xv,
            &yv,
        )
        .unwrap();
        assert!((nll - min).abs() <= 1e-9 * min.abs(), "{nll} vs {min}");

        // Without patience all epochs run, and the best parameters are still returned.
        let all = MapConfig {
            epochs: ran + 20,
            patience: None,
            ..config.clone()
        };
        let full = train_map(&model, &theta0, lik, &x, &y, &all.check().unwrap()).unwrap();
        let vf = full.validation.as_ref().unwrap();
        assert_eq!(full.losses.len(), ran + 20);
        assert_eq!(vf.best_epoch, v.best_epoch);
        assert_eq!(
            full.estimate.theta().to_vec1::<f32>().unwrap(),
            fit.estimate.theta().to_vec1::<f32>().unwrap()
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
    }

    /// A linear model y = w x + b from θ = 0 on the line's 50 points, and its training by
    /// `train_map` under a configuration.
    fn linear_problem() -> (Network, Tensor, Tensor, Tensor) {
        let model = mlp(&[1, 1], Activation::Identity);
        let theta0 = Tensor::zeros(2, DType::F64, &Device::Cpu).unwrap();
        let (xs, ys) = line();
        (model, theta0, column(&xs), column(&ys))
    }

    const UNIT_NOISE: Likelihood = Likelihood::Gaussian { sigma: 1.0 };

    #[test]
    fn invalid_settings_name_the_parameter() {
        let (model, theta0, x, y) = linear_problem();
        let train =
            |c: &MapConfig| train_map(&model, &theta0, UNIT_NOISE, &x, &y, &c.clone().check()?);
        let ok = MapConfig::default();
        for (bad, param) in [
            (
                MapConfig {
                    learning_rate: 0.0,
                    ..ok.clone()
                },
                "learning_rate",
            ),
            (
                MapConfig {
                    batch_size: 0,
                    ..ok.clone()
                },
                "batch_size",
            ),
            (
                MapConfig {
                    validation_fraction: 1.0,
                    ..ok.clone()
                },
                "validation_fraction",
            ),
            (
                MapConfig {
                    validation_fraction: 0.001, // rounds to no held-out row of 50
                    ..ok.clone()
                },
                "validation_fraction",
            ),
            (
                MapConfig {
                    prior_precision: f64::NAN,
                    ..ok.clone()
                },
                "prior_precision",
            ),
            (
                MapConfig {
                    optimizer: Optimizer::Sgd { momentum: 1.0 },
                    ..ok.clone()
                },
                "optimizer.momentum",
            ),
        ] {
            match train(&bad) {
                Err(Error::InvalidParam(e)) => assert_eq!(e.param, param),
                other => panic!("{param}: {other:?}"),
            }
        }
    }

    #[test]
    fn bad_data_and_divergence_are_typed_errors() {
        let (model, theta0, x, y) = linear_problem();
        let lik = UNIT_NOISE;
        let train = |x: &Tensor, y: &Tensor, c: &MapConfig| {
            train_map(&model, &theta0, lik, x, y, &c.clone().check()?)
        };
        let ok = MapConfig::default();
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
        assert!(
            train_map(
                &model,
                &wrong_theta,
                lik,
                &x,
                &y,
                &ok.clone().check().unwrap()
            )
            .is_err()
        );
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
        // A step far larger still overflows the parameters inside the first epoch: the error
        // names the epoch and the step instead of surfacing later as a non-finite output.
        let wilder = MapConfig {
            learning_rate: 1e300,
            batch_size: 10,
            epochs: 1,
            optimizer: Optimizer::Sgd { momentum: 0.0 },
            ..MapConfig::default()
        };
        let err = train(&x, &y, &wilder).unwrap_err();
        assert!(
            matches!(err, Error::NonFiniteStep { epoch: 0, .. }),
            "{err}"
        );
    }
}
