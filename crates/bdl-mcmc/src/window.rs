//! A window of a chain as a posterior: Bayesian marginalisation over its draws,
//! p(y | x, D) ≈ (1/S) Σ_s p(y | x, θ_s).

use std::path::Path;

use bdl_inference::checkpoint::{self, Header};
use bdl_inference::{
    FunctionMoments, Posterior, PredictOptions, Prediction, Predictor, Valid, Validate,
};
use bdl_likelihoods::Likelihood;
use bdl_models::{Model, Network};
use bdl_tensor::Seed;
use candle_core::{Device, Tensor};
use rand::Rng;

use crate::Result;

/// S draws of a chain (`[S, D]`, with the iteration each was taken at) and the network and
/// likelihood they were sampled for.
///
/// The predictive is the posterior predictive (1/S) Σ_s p(y | x, θ_s) over **all** S draws
/// (`options.samples` and `options.seed` are not used): for Bernoulli and Categorical the
/// categorical of the averaged class probabilities (accuracy is its argmax), for the Gaussian
/// the equally weighted mixture of N(f(x; θ_s), σ²). The draws are evaluated in parallel in
/// fixed groups ([`bdl_inference::mixture`]), so the result is the same on any number of
/// threads.
#[derive(Clone, Debug)]
pub struct ChainWindow {
    predictor: Predictor,
    draws: Tensor,
    iterations: Vec<u64>,
    seed: Option<Seed>,
    /// The sampler that drew them, the posterior's method name.
    sampler: String,
}

/// The sampler of a window built by [`ChainWindow::new`].
const GIBBS: &str = "blocked Gibbs";

/// What the sidecar records besides the draws: the iterations and the sampler (a bare list of
/// iterations in files written before windows named their sampler, all blocked Gibbs).
#[derive(serde::Serialize, serde::Deserialize)]
#[serde(untagged)]
enum Saved {
    Named {
        iterations: Vec<u64>,
        sampler: String,
    },
    Iterations(Vec<u64>),
}

impl ChainWindow {
    /// The draws `draws` (`[S, D]`, S ≥ 1, one iteration each) of `network` under `likelihood`.
    pub fn new(
        network: Network,
        likelihood: Likelihood,
        draws: Tensor,
        iterations: Vec<u64>,
    ) -> Result<Self> {
        let d = network.layout().len();
        bdl_tensor::check_shape(
            &draws,
            &[iterations.len(), d],
            "the draws of a chain window",
        )?;
        bdl_inference::at_least_one("draws", iterations.len())?;
        Ok(Self {
            predictor: Predictor::new(network, likelihood)?,
            draws,
            iterations,
            seed: None,
            sampler: GIBBS.to_owned(),
        })
    }

    /// The same window, drawn by `sampler` (its method name: "SGLD", "SGHMC", …).
    pub fn by(mut self, sampler: impl Into<String>) -> Self {
        self.sampler = sampler.into();
        self
    }

    /// The same window, recording the seed of the chains it comes from (saved in its sidecar).
    pub fn with_seed(mut self, seed: Seed) -> Self {
        self.seed = Some(seed);
        self
    }

    /// The draws, `[S, D]`, in the chain's dtype.
    pub fn draws(&self) -> &Tensor {
        &self.draws
    }

    /// The iteration (from 0) of each draw.
    pub fn iterations(&self) -> &[u64] {
        &self.iterations
    }
}

const KIND: &str = "chain-window";

impl Posterior for ChainWindow {
    fn method(&self) -> &str {
        &self.sampler
    }

    fn predictor(&self) -> &Predictor {
        &self.predictor
    }

    fn predict(&self, x: &Tensor, options: &Valid<PredictOptions>) -> Prediction {
        self.predictor
            .weight_mixture(x, options.batch_size, self.iterations.len(), |s| {
                Ok(self.draws.get(s)?)
            })
    }

    /// The moments over every draw of the window (exact, not a resample).
    fn f_moments(
        &self,
        x: &Tensor,
        options: &PredictOptions,
    ) -> bdl_inference::Result<FunctionMoments> {
        let options = options.clone().check()?;
        let f = bdl_inference::outputs_at(self.network(), &self.draws, x, options.batch_size)?;
        FunctionMoments::of_draws(&f)
    }

    /// `n` draws picked uniformly with replacement from the stream of `seed`.
    fn sample(&self, n: usize, seed: Seed) -> bdl_inference::Result<Option<Tensor>> {
        let mut rng = seed.rng();
        let picks: Vec<u32> = (0..n)
            .map(|_| rng.random_range(0..self.iterations.len() as u32))
            .collect();
        let index = Tensor::from_vec(picks, n, &Device::Cpu)?;
        Ok(Some(self.draws.index_select(&index, 0)?))
    }

    fn save(&self, path: &Path) -> bdl_inference::Result<()> {
        let header = Header {
            kind: KIND,
            predictor: &self.predictor,
            seed: self.seed,
            config: &Saved::Named {
                iterations: self.iterations.clone(),
                sampler: self.sampler.clone(),
            },
        };
        checkpoint::save(path, &header, vec![("draws", self.draws.clone())])
    }

    fn load(path: &Path) -> bdl_inference::Result<Self> {
        let mut saved = checkpoint::load::<Saved>(path, KIND)?;
        let (iterations, sampler) =
            match std::mem::replace(&mut saved.config, Saved::Iterations(vec![])) {
                Saved::Named {
                    iterations,
                    sampler,
                } => (iterations, sampler),
                Saved::Iterations(iterations) => (iterations, GIBBS.to_owned()),
            };
        let shape = [iterations.len(), saved.n_params()];
        let draws = saved.tensor("draws", &shape)?;
        let network = saved.predictor.network().clone();
        let likelihood = saved.predictor.likelihood();
        let window = Self::new(network, likelihood, draws, iterations)?;
        Ok(Self {
            seed: saved.seed,
            sampler,
            ..window
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bdl_models::{Activation, Mlp, MlpSpec};
    use candle_core::DType;

    /// The window's predictive is the mixture of its draws' point predictives, all S of them
    /// whatever `options.samples` says, bit for bit (the same components in the same order).
    #[test]
    fn predictive_is_the_mixture_of_all_draws() {
        let dev = Device::Cpu;
        let x = bdl_tensor::normal(&mut Seed(1).rng(), (7, 3), 0.0, 1.0, DType::F64, &dev).unwrap();
        let lik = Likelihood::Categorical { classes: 4 };
        let net = Network::from(Mlp::new(MlpSpec::new(&[3, 5, 4], Activation::Tanh)).unwrap());
        let d = net.layout().len();
        let draws =
            bdl_tensor::normal(&mut Seed(2).rng(), (37, d), 0.0, 1.0, DType::F64, &dev).unwrap();
        let window = ChainWindow::new(net.clone(), lik, draws.clone(), (0..37).collect()).unwrap();
        let options = PredictOptions {
            samples: 3,
            ..PredictOptions::default()
        };
        let ours = window.predictive(&x, &options).unwrap().probs().unwrap();
        let reference = bdl_inference::mixture(37, |s| {
            Ok(lik.point_predictive(&net.forward(&draws.get(s)?, &x)?)?)
        })
        .unwrap()
        .probs()
        .unwrap();
        assert_eq!(
            bdl_tensor::to_f64_vec(&ours).unwrap(),
            bdl_tensor::to_f64_vec(&reference).unwrap()
        );
        let none = Tensor::zeros((0, d), DType::F64, &dev).unwrap();
        assert!(ChainWindow::new(net, lik, none, vec![]).is_err());
    }

    /// A window keeps its sampler's name through save and load; a sidecar written before
    /// windows named their sampler (a bare list of iterations) loads as blocked Gibbs.
    #[test]
    fn the_sampler_name_survives_save_and_load() {
        let dev = Device::Cpu;
        let net = Network::from(Mlp::new(MlpSpec::new(&[1, 2, 1], Activation::Tanh)).unwrap());
        let d = net.layout().len();
        let draws =
            bdl_tensor::normal(&mut Seed(2).rng(), (3, d), 0.0, 1.0, DType::F64, &dev).unwrap();
        let lik = Likelihood::Gaussian { sigma: 1.0 };
        let window = ChainWindow::new(net, lik, draws, vec![4, 5, 6])
            .unwrap()
            .by("SGLD");
        let path =
            std::env::temp_dir().join(format!("bdl-window-{}.safetensors", std::process::id()));
        window.save(&path).unwrap();
        let back = ChainWindow::load(&path).unwrap();
        assert_eq!(
            (back.method(), back.iterations()),
            ("SGLD", &[4u64, 5, 6][..])
        );
        std::fs::remove_file(&path).ok();
        std::fs::remove_file(path.with_extension("json")).ok();
        let old: Saved = serde_json::from_str("[4, 5, 6]").unwrap();
        assert!(matches!(old, Saved::Iterations(i) if i == [4, 5, 6]));
    }
}
