//! MC dropout (Gal & Ghahramani 2016): the predictive averaged over seeded dropout masks.

use std::path::Path;

use bdl_inference::{
    MapEstimate, Posterior, PredictOptions, Prediction, Predictor, Valid, Validate,
};
use bdl_tensor::Seed;
use candle_core::Tensor;

/// The MC dropout posterior of a network trained with dropout: the predictive
/// (1/S) Σ_s p(y* | f(x*; θ̂, m_s)) of S forward passes with dropout on, pass s drawing its
/// masks m_s from the stream `options.seed.index(s)`, averaged as a mixture (a Gaussian mixture
/// N(f_s, σ²) for regression, averaged class probabilities for classification).
///
/// Train with dropout first: give the model a dropout probability (`MlpSpec::with_dropout`)
/// and [`train_map`](bdl_inference::train_map) draws masks during training. A network without
/// dropout gives S copies of the plug-in predictive.
///
/// ```
/// use bdl_baselines::McDropout;
/// use bdl_inference::{MapConfig, Posterior, PredictOptions, Validate, train_map};
/// use bdl_likelihoods::Likelihood;
/// use bdl_models::{Activation, Mlp, MlpSpec, Network};
/// use bdl_tensor::Seed;
/// use candle_core::{DType, Device, Tensor};
/// # fn main() -> Result<(), bdl_inference::Error> {
/// let net = Network::from(Mlp::new(MlpSpec::new(&[2, 32, 3], Activation::Relu).with_dropout(0.1))?);
/// let x = Tensor::new(&[[0.0f32, 1.0], [1.0, 0.0], [1.0, 1.0], [0.0, 0.0]], &Device::Cpu)?;
/// let y = Tensor::new(&[0u32, 1, 2, 0], &Device::Cpu)?;
/// let lik = Likelihood::Categorical { classes: 3 };
/// let theta0 = net.init(Seed(0), DType::F32, &Device::Cpu)?;
/// let config = MapConfig { epochs: 20, ..MapConfig::default() }.check()?;
/// let dropout = McDropout::new(train_map(&net, &theta0, lik, &x, &y, &config)?.estimate);
/// let pred = dropout.predictive(&x, &PredictOptions { samples: 16, seed: Seed(1), ..PredictOptions::default() })?;
/// assert_eq!(pred.probs()?.dims(), &[4, 3]);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct McDropout {
    map: MapEstimate,
}

impl McDropout {
    /// MC dropout around the parameters of `map` (trained with the network's dropout).
    pub fn new(map: MapEstimate) -> Self {
        Self { map }
    }

    /// The trained parameters with their network and likelihood.
    pub fn estimate(&self) -> &MapEstimate {
        &self.map
    }
}

impl McDropout {
    /// f at the rows of `x` under dropout mask `s`, drawn from `options.seed.index(s)`.
    fn outputs(
        &self,
        x: &Tensor,
        options: &Valid<PredictOptions>,
        s: usize,
    ) -> bdl_inference::Result<Tensor> {
        let mut masks = options.seed.index(s as u64).rng();
        bdl_inference::forward_batched(
            self.network(),
            self.map.theta(),
            x,
            options.batch_size,
            Some(&mut masks),
        )
    }
}

impl Posterior for McDropout {
    fn method(&self) -> &str {
        "MC dropout"
    }

    fn predictor(&self) -> &Predictor {
        self.map.predictor()
    }

    fn predict(&self, x: &Tensor, options: &Valid<PredictOptions>) -> Prediction {
        bdl_inference::mixture(options.samples, |s| {
            Ok(self
                .likelihood()
                .point_predictive(&self.outputs(x, options, s)?)?)
        })
    }

    /// MC dropout samples masks, not weights: `None`.
    fn sample(&self, _n: usize, _seed: Seed) -> bdl_inference::Result<Option<Tensor>> {
        Ok(None)
    }

    /// f at `options.samples` dropout masks, mask s from `options.seed.index(s)` (the masks of
    /// the predictive).
    fn f_samples(
        &self,
        x: &Tensor,
        options: &PredictOptions,
    ) -> bdl_inference::Result<Option<Tensor>> {
        let options = options.clone().check()?;
        let draws = (0..options.samples)
            .map(|s| {
                Ok(self
                    .outputs(x, &options, s)?
                    .to_dtype(candle_core::DType::F64)?)
            })
            .collect::<bdl_inference::Result<Vec<_>>>()?;
        Ok(Some(Tensor::stack(&draws, 0)?))
    }

    /// Saves the trained parameters; the network's spec carries the dropout probability.
    fn save(&self, path: &Path) -> bdl_inference::Result<()> {
        self.map.save(path)
    }

    fn load(path: &Path) -> bdl_inference::Result<Self> {
        MapEstimate::load(path).map(Self::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bdl_inference::Validate;
    use bdl_inference::{MapConfig, MapFit, train_map};
    use bdl_likelihoods::Likelihood;
    use bdl_models::{Activation, Mlp, MlpSpec, Model, Network};
    use candle_core::{DType, Device};

    /// 30 points of sin 2x on [−1.5, 1.5], an MLP 1-32-32-1 (tanh) with dropout `p`, trained
    /// for 100 epochs of minibatches of 10, σ = 0.1.
    fn trained(p: f64) -> (Network, Tensor, MapFit) {
        let mlp = Network::from(
            Mlp::new(MlpSpec::new(&[1, 32, 32, 1], Activation::Tanh).with_dropout(p)).unwrap(),
        );
        let x = Tensor::arange(0u32, 30, &Device::Cpu)
            .unwrap()
            .to_dtype(DType::F32)
            .unwrap()
            .affine(0.1, -1.5)
            .unwrap()
            .unsqueeze(1)
            .unwrap();
        let y = (x.clone() * 2.0).unwrap().sin().unwrap();
        let theta0 = mlp.init(Seed(4), DType::F32, &Device::Cpu).unwrap();
        let config = MapConfig {
            learning_rate: 1e-2,
            epochs: 100,
            batch_size: 10,
            ..MapConfig::default()
        }
        .check()
        .unwrap();
        let fit = train_map(
            &mlp,
            &theta0,
            Likelihood::Gaussian { sigma: 0.1 },
            &x,
            &y,
            &config,
        )
        .unwrap();
        (mlp, x, fit)
    }

    fn values(t: &Tensor) -> Vec<f64> {
        bdl_tensor::to_f64_vec(t).unwrap()
    }

    #[test]
    fn without_dropout_it_is_the_map_predictive() {
        // S identical components: the mixture's mean and variance are the MAP's up to the
        // rounding of averaging 8 equal f64 numbers (≪ 1e-12).
        let (_, x, fit) = trained(0.0);
        let options = PredictOptions {
            samples: 8,
            seed: Seed(9),
            ..PredictOptions::default()
        };
        let mc = McDropout::new(fit.estimate.clone())
            .predictive(&x, &options)
            .unwrap();
        let map = fit.estimate.predictive(&x, &options).unwrap();
        for (a, b) in [
            (mc.mean().unwrap(), map.mean().unwrap()),
            (mc.variance().unwrap(), map.variance().unwrap()),
        ] {
            let (a, b) = (values(&a), values(&b));
            assert!(a.iter().zip(&b).all(|(a, b)| (a - b).abs() <= 1e-12));
        }
        let y = (x.clone() * 2.0).unwrap().sin().unwrap();
        let (la, lb) = (
            values(&mc.log_lik(&y).unwrap()),
            values(&map.log_lik(&y).unwrap()),
        );
        assert!(la.iter().zip(&lb).all(|(a, b)| (a - b).abs() <= 1e-9));
    }

    #[test]
    fn with_dropout_masks_are_seeded_and_the_mean_averages_the_passes() {
        let (mlp, x, fit) = trained(0.2);
        // Training drew masks: the fit differs from training the same init without dropout.
        let (_, _, plain) = trained(0.0);
        assert_ne!(values(fit.estimate.theta()), values(plain.estimate.theta()));

        let options = |seed| PredictOptions {
            samples: 12,
            seed: Seed(seed),
            ..PredictOptions::default()
        };
        let dropout = McDropout::new(fit.estimate.clone());
        let predict = |seed| dropout.predictive(&x, &options(seed)).unwrap();
        let (a, b, c) = (predict(1), predict(1), predict(2));
        assert_eq!(values(&a.mean().unwrap()), values(&b.mean().unwrap()));
        assert_eq!(
            values(&a.variance().unwrap()),
            values(&b.variance().unwrap())
        );
        assert_ne!(values(&a.mean().unwrap()), values(&c.mean().unwrap()));

        // The mixture mean is the average of the 12 passes, pass s with masks from seed.index(s)
        // (the same f32 outputs averaged in f64 either way: agreement to 1e-12).
        let mut average = vec![0.0; 30];
        for s in 0..12 {
            let mut rng = options(1).seed.index(s).rng();
            let f = mlp
                .forward_cached_with(fit.estimate.theta(), &x, Some(&mut rng))
                .unwrap()
                .output;
            for (a, f) in average.iter_mut().zip(values(&f)) {
                *a += f / 12.0;
            }
        }
        let mean = values(&a.mean().unwrap());
        assert!(
            mean.iter()
                .zip(&average)
                .all(|(m, a)| (m - a).abs() <= 1e-12)
        );
        // Dropout spreads the passes: the predictive variance exceeds σ² somewhere.
        assert!(values(&a.variance().unwrap()).iter().any(|v| *v > 0.011));
        let none = PredictOptions {
            samples: 0,
            ..options(1)
        };
        assert!(matches!(
            dropout.predictive(&x, &none),
            Err(bdl_inference::Error::InvalidParam(_))
        ));
    }
}
