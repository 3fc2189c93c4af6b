//! The training and method settings that the image benchmarks share (`shift-mnist`,
//! `cifar-c`): each seed's MAP, MC dropout, the deep ensemble, SWAG, VOGN, the Laplace family's
//! prior grid and the sampled predictives, with the configurations and method specs they make.
//!
//! Each experiment's `Settings` holds one [`Fits`] flattened into it, so its `results.json`
//! and saved units record the same fields as before there was one.

use bdl_baselines::{EnsembleConfig, SwagConfig};
use bdl_inference::{MapConfig, PredictOptions};
use bdl_laplace::LaplaceConfig;
use bdl_laplace::selection::Candidates;
use bdl_methods::{
    Hessian, LaplaceSpec, MethodSpec, PriorBy, SubsetRule, VariancesFrom, VariationalSpec,
};
use bdl_tensor::Seed;
use bdl_variational::VariationalConfig;
use serde::Serialize;

/// The shared settings of a profile.
#[derive(Clone, Debug, Serialize)]
pub(crate) struct Fits {
    /// MAP training (also of MC dropout and of every ensemble member): Adam.
    pub(crate) epochs: usize,
    pub(crate) batch_size: usize,
    pub(crate) learning_rate: f64,
    /// λ of N(0, λ⁻¹ I), the weight decay of every MAP and the prior of the variational methods
    /// and SWAG.
    pub(crate) prior_precision: f64,
    /// MC dropout's probability.
    pub(crate) dropout: f64,
    pub(crate) members: usize,
    /// Weights of both subnetworks.
    pub(crate) subnet_size: usize,
    /// The Laplace family's candidate prior precisions.
    pub(crate) lambdas: Vec<f64>,
    pub(crate) swag_snapshots: usize,
    pub(crate) swag_rank: usize,
    pub(crate) swag_learning_rate: f64,
    pub(crate) vi_epochs: usize,
    pub(crate) vogn_learning_rate: f64,
    /// Monte Carlo samples of a sampled predictive.
    pub(crate) samples: usize,
    /// Equal-width confidence bins of the ECE and the reliability diagrams.
    pub(crate) ece_bins: usize,
}

impl Fits {
    /// The MAP configuration of every fit with seed `seed`.
    pub(crate) fn map_config(&self, seed: Seed) -> MapConfig {
        MapConfig {
            learning_rate: self.learning_rate,
            prior_precision: self.prior_precision,
            epochs: self.epochs,
            batch_size: self.batch_size,
            seed,
            ..MapConfig::default()
        }
    }

    /// SWAG from a seed's MAP (low rank plus diagonal), seeded from the seed's root `root`; its
    /// diagonal variances also choose the Wasserstein subnetworks.
    pub(crate) fn swag_config(&self, root: Seed) -> SwagConfig {
        SwagConfig {
            learning_rate: self.swag_learning_rate,
            prior_precision: self.prior_precision,
            batch_size: self.batch_size,
            snapshots: self.swag_snapshots,
            rank: self.swag_rank,
            seed: root.fork("swag"),
            ..SwagConfig::default()
        }
    }

    /// MC dropout: the MAP of a network with dropout, seeded from `root`.
    pub(crate) fn mc_dropout(&self, root: Seed) -> MethodSpec {
        MethodSpec::McDropout(self.map_config(root.fork("map")))
    }

    /// A deep ensemble of `members` MAPs, seeded from `root`.
    pub(crate) fn ensemble(&self, root: Seed) -> MethodSpec {
        MethodSpec::Ensemble(EnsembleConfig {
            members: self.members,
            map: self.map_config(root.fork("ensemble")),
            parallel: false,
        })
    }

    /// SWAG as a method, seeded from `root`.
    pub(crate) fn swag(&self, root: Seed) -> MethodSpec {
        MethodSpec::Swag(self.swag_config(root).into())
    }

    /// The Wasserstein subnetwork of `size` weights, ranked by diagonal-SWAG variances (the
    /// paper's choice for deep networks), seeded from `root`.
    pub(crate) fn wasserstein(&self, size: usize, root: Seed) -> SubsetRule {
        SubsetRule::Wasserstein {
            size,
            candidates: Candidates::WeightsOnly,
            variances: VariancesFrom::Swag(self.swag_config(root)),
        }
    }

    /// A random subnetwork of `size` weights, drawn from `root`'s stream.
    pub(crate) fn random(&self, size: usize, root: Seed) -> SubsetRule {
        SubsetRule::Random {
            size,
            candidates: Candidates::WeightsOnly,
            seed: root.fork("random"),
        }
    }

    /// A Laplace posterior of `hessian` over `subnetwork`, its GGN `ggn_batch` rows at a time,
    /// λ from `prior_grid` chosen by `prior_by`.
    pub(crate) fn laplace(
        hessian: Hessian,
        subnetwork: SubsetRule,
        ggn_batch: usize,
        prior_grid: Vec<f64>,
        prior_by: PriorBy,
    ) -> MethodSpec {
        MethodSpec::Laplace(LaplaceSpec {
            hessian,
            subnetwork,
            config: LaplaceConfig {
                batch_size: ggn_batch,
                ..LaplaceConfig::default()
            },
            prior_grid: Some(prior_grid),
            prior_by,
            layerwise_prior: false,
        })
    }

    /// The variational `rule` started at the MAP mean with σ ≈ 1/√N (initial precision N + λ
    /// for `n_fit` training examples), `vi_epochs` epochs, its noise from `seed`.
    pub(crate) fn variational(
        &self,
        rule: bdl_variational::Method,
        n_fit: usize,
        seed: Seed,
    ) -> MethodSpec {
        let lambda = self.prior_precision;
        MethodSpec::Variational(VariationalSpec {
            config: VariationalConfig {
                init_precision: Some(n_fit as f64 + lambda),
                seed,
                ..VariationalConfig::new(rule, lambda, self.vi_epochs, self.batch_size)
            },
            subnetwork: SubsetRule::All,
        })
    }

    /// VOGN's rule: the learning rate, and 1 − γ₂ with Vadam's γ₂ as the weight of each new
    /// curvature estimate.
    pub(crate) fn vogn(&self) -> bdl_variational::Method {
        bdl_variational::Method::Vogn {
            learning_rate: self.vogn_learning_rate,
            beta: 0.001,
        }
    }

    /// The settings in words, for a report: "Adam 10 epochs, batch 128, λ = 10; subnetworks of
    /// 500 weights; VOGN 3 epochs from the MAP; …", `variational` naming the variational
    /// methods.
    pub(crate) fn describe(&self, variational: &str) -> String {
        format!(
            "Adam {} epochs, batch {}, λ = {}; subnetworks of {} weights; {variational} {} \
             epochs from the MAP; SWAG {} snapshots of rank {}; an ensemble of {}; {} samples \
             per sampled predictive",
            self.epochs,
            self.batch_size,
            self.prior_precision,
            self.subnet_size,
            self.vi_epochs,
            self.swag_snapshots,
            self.swag_rank,
            self.members,
            self.samples,
        )
    }

    /// The predictive options of every evaluation of seed `seed`'s posteriors: `samples`
    /// samples from a stream of the seed, 200 rows at a time.
    pub(crate) fn options(&self, seed: usize) -> PredictOptions {
        PredictOptions {
            samples: self.samples,
            seed: Seed(7).index(seed as u64),
            batch_size: 200,
            ..PredictOptions::default()
        }
    }
}
