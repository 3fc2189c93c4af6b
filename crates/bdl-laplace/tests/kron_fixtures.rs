//! Cross-implementation test of the KFAC Laplace against laplace-torch's `KronLaplace`: every
//! pair in `fixtures/kron/` (written by `make_kron_fixtures.py` there: two MLPs and a small CNN,
//! whose convolution KFAC factors over examples and positions) is one case, checked over
//! every parameter and over the last layer: the Kronecker factors, the log marginal likelihood
//! at every prior precision of the grid, the linearized predictive's mean and covariance and,
//! for classification, the probit probabilities, at the tolerances the sidecar states.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use bdl_inference::{Link, MapEstimate, Posterior, PredictOptions, Validate};
use bdl_laplace::{KronConfig, KronLaplace, KronScope, LinearizedPosterior};
use bdl_likelihoods::Likelihood;
use bdl_models::{DenseLayer, Mlp, MlpSpec, Model, Network};
use candle_core::{Device, Tensor};
use serde_json::Value;

struct Case {
    path: PathBuf,
    meta: Value,
    tensors: HashMap<String, Tensor>,
}

impl Case {
    fn load(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            meta: bdl_tensor::read_sidecar(path).unwrap(),
            tensors: bdl_tensor::load_safetensors(path, &Device::Cpu).unwrap(),
        }
    }

    fn regression(&self) -> bool {
        self.meta["likelihood"]["type"] == "regression"
    }

    /// |ours − fixture| ≤ atol + rtol·|fixture| elementwise, with the sidecar's tolerances.
    #[track_caller]
    fn check(&self, name: &str, ours: &[f64]) {
        let tol = &self.meta["tolerances"][name];
        let (rtol, atol) = (tol["rtol"].as_f64().unwrap(), tol["atol"].as_f64().unwrap());
        let expected = bdl_tensor::to_f64_vec(&self.tensors[name]).unwrap();
        assert_eq!(
            ours.len(),
            expected.len(),
            "{}: {name}",
            self.path.display()
        );
        for (i, (a, b)) in ours.iter().zip(&expected).enumerate() {
            assert!(
                (a - b).abs() <= atol + rtol * b.abs(),
                "{}: {name}[{i}] = {a}, laplace-torch {b}",
                self.path.display()
            );
        }
    }
}

fn values(m: faer::MatRef<'_, f64>) -> Vec<f64> {
    (0..m.nrows())
        .flat_map(|i| (0..m.ncols()).map(move |j| m[(i, j)]))
        .collect()
}

/// The factors against laplace-torch's, `unscale` = σ² putting back the 1/σ² its GGN leaves
/// out.
fn check_factors(case: &Case, post: &KronLaplace, key: &str, unscale: f64) {
    // The factors. A Kronecker product does not fix its factors' scales (c·G ⊗ A/c is the
    // same block; laplace-torch splits a constant between them), so a weight block's factors
    // are compared normalised (each over its Frobenius norm) with the product of the norms
    // beside them. laplace-torch's GGN also leaves out the 1/σ² that our Λ includes.
    let frobenius = |v: &[f64]| v.iter().map(|x| x * x).sum::<f64>().sqrt();
    for (b, block) in post.blocks().iter().enumerate() {
        let ours: Vec<Vec<f64>> = block.factors.iter().map(|f| values(f.as_ref())).collect();
        let theirs: Vec<Vec<f64>> = (0..ours.len())
            .map(|f| bdl_tensor::to_f64_vec(&case.tensors[&format!("{key}.kfac.{b}.{f}")]).unwrap())
            .collect();
        if ours.len() == 1 {
            let scaled: Vec<f64> = ours[0].iter().map(|v| v * unscale).collect();
            case.check(&format!("{key}.kfac.{b}.0"), &scaled);
            continue;
        }
        let norms = |m: &[Vec<f64>]| m.iter().map(|f| frobenius(f)).collect::<Vec<f64>>();
        let (n_ours, n_theirs) = (norms(&ours), norms(&theirs));
        let product = n_ours.iter().product::<f64>() * unscale;
        let expected = n_theirs.iter().product::<f64>();
        assert!(
            (product - expected).abs() <= 1e-9 * expected,
            "{}: {key} block {b}: ‖G‖‖A‖ = {product}, laplace-torch {expected}",
            case.path.display()
        );
        for f in 0..2 {
            for (i, (a, t)) in ours[f].iter().zip(&theirs[f]).enumerate() {
                let (a, t) = (a / n_ours[f], t / n_theirs[f]);
                assert!(
                    (a - t).abs() <= 1e-9,
                    "{}: {key} block {b} factor {f}[{i}] normalised: {a}, laplace-torch {t}",
                    case.path.display()
                );
            }
        }
    }
}

fn run(case: &Case, scope: KronScope, key: &str) {
    let net = match case.meta.get("network") {
        Some(spec) => Network::new(serde_json::from_value(spec.clone()).unwrap()).unwrap(),
        None => {
            let layers: Vec<DenseLayer> =
                serde_json::from_value(case.meta["model"]["layers"].clone()).unwrap();
            Network::from(Mlp::new(MlpSpec::from_layers(&layers).unwrap()).unwrap())
        }
    };
    let theta = case.tensors["theta_map"].clone();
    let sigma = case.meta["sigma_noise"].as_f64().unwrap();
    let likelihood = if case.regression() {
        Likelihood::Gaussian { sigma }
    } else {
        Likelihood::Categorical {
            classes: net.n_outputs(),
        }
    };
    let (x, y) = (&case.tensors["X_train"], &case.tensors["y_train"]);
    let map = MapEstimate::new(net.clone(), theta.clone(), likelihood).unwrap();
    let lambda = case.meta["prior_precision"].as_f64().unwrap();
    let config = KronConfig {
        scope,
        prior_precision: lambda,
        batch_size: 128,
    }
    .check()
    .unwrap();
    let post = KronLaplace::fit(&map, x, &config).unwrap();

    let unscale = if case.regression() {
        sigma * sigma
    } else {
        1.0
    };
    check_factors(case, &post, key, unscale);

    // The log marginal likelihood over the grid (one set of eigendecompositions).
    let f_train = net.forward(&theta, x).unwrap();
    let log_lik: f64 = bdl_tensor::to_f64_vec(&likelihood.log_lik(&f_train, y).unwrap())
        .unwrap()
        .iter()
        .sum();
    let grid: Vec<f64> = serde_json::from_value(case.meta["prior_grid"].clone()).unwrap();
    let ours: Vec<f64> = grid
        .iter()
        .map(|&l| {
            post.with_prior_precision(l)
                .unwrap()
                .log_marginal_likelihood(log_lik)
                .unwrap()
        })
        .collect();
    case.check(&format!("{key}.log_marglik_grid"), &ours);

    // The linearized predictive at the evaluation inputs.
    let x_eval = &case.tensors["X_eval"];
    let moments = post.linearized_moments(x_eval, 7).unwrap();
    case.check(
        &format!("{key}.f_mean"),
        &bdl_tensor::to_f64_vec(&moments.mean).unwrap(),
    );
    case.check(
        &format!("{key}.f_cov"),
        &bdl_tensor::to_f64_vec(&moments.covariance).unwrap(),
    );
    if !case.regression() {
        let options = PredictOptions {
            link: Link::Probit,
            ..PredictOptions::default()
        };
        let probs = post.predictive(x_eval, &options).unwrap().probs().unwrap();
        case.check(
            &format!("{key}.probit_probs"),
            &bdl_tensor::to_f64_vec(&probs).unwrap(),
        );
    }
}

#[test]
fn every_laplace_torch_kron_fixture_is_reproduced() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/kron");
    let mut cases = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "safetensors") {
            let case = Case::load(&path);
            run(&case, KronScope::All, "all");
            run(&case, KronScope::LastLayer, "last_layer");
            cases += 1;
        }
    }
    assert!(cases >= 3, "the shipped fixtures are missing");
}
