//! Cross-implementation test against laplace-torch: every `*.safetensors` + JSON sidecar pair in
//! `fixtures/laplace/` is one case (adding a pair adds a case, with no code change). Each checks
//! the subnetwork indices, the GGN, the posterior precision, the predictive mean and covariance,
//! the probit probabilities and the log marginal likelihood at the tolerances the sidecar states
//! and justifies (see `fixtures/laplace/README.md`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use bdl_inference::{Link, MapEstimate, Posterior, PredictOptions, Validate};
use bdl_laplace::LinearizedPosterior;
use bdl_laplace::selection::{self, Candidates};
use bdl_laplace::{LaplaceConfig, PriorPrecision, SubnetLaplace, SubsetScaling};
use bdl_likelihoods::Likelihood;
use bdl_models::{DenseLayer, Mlp, MlpSpec, Model, Network};
use candle_core::{Device, Tensor};
use serde_json::Value;

fn values(t: &Tensor) -> Vec<f64> {
    bdl_tensor::to_f64_vec(t).unwrap()
}

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

    fn mlp(&self) -> Mlp {
        let layers: Vec<DenseLayer> =
            serde_json::from_value(self.meta["model"]["layers"].clone()).unwrap();
        Mlp::new(MlpSpec::from_layers(&layers).unwrap()).unwrap()
    }

    fn is_regression(&self) -> bool {
        self.meta["likelihood"]["type"] == "regression"
    }

    fn scalar(&self, key: &str) -> f64 {
        self.meta[key].as_f64().unwrap()
    }

    /// |ours − fixture| ≤ atol + rtol·|fixture| elementwise, with the sidecar's tolerances.
    #[track_caller]
    fn check(&self, name: &str, ours: &[f64]) {
        let tol = &self.meta["tolerances"][name];
        let (rtol, atol) = (tol["rtol"].as_f64().unwrap(), tol["atol"].as_f64().unwrap());
        let expected = values(&self.tensors[name]);
        assert_eq!(
            ours.len(),
            expected.len(),
            "{}: {name} length",
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

    fn check_scalar(&self, name: &str, ours: f64) {
        let tol = &self.meta["tolerances"][name];
        let (rtol, atol) = (tol["rtol"].as_f64().unwrap(), tol["atol"].as_f64().unwrap());
        let expected = self.scalar(name);
        assert!(
            (ours - expected).abs() <= atol + rtol * expected.abs(),
            "{}: {name} = {ours}, laplace-torch {expected}",
            self.path.display()
        );
    }
}

fn mat_values(m: faer::MatRef<'_, f64>) -> Vec<f64> {
    (0..m.nrows())
        .flat_map(|i| (0..m.ncols()).map(move |j| m[(i, j)]))
        .collect()
}

fn run(case: &Case) {
    let model = case.mlp();
    let theta = &case.tensors["theta_map"];
    let (x, y) = (&case.tensors["X_train"], &case.tensors["y_train"]);
    let k = model.n_outputs();
    let sigma = case.scalar("sigma_noise");
    let lambda = case.scalar("prior_precision");
    let likelihood = if case.is_regression() {
        Likelihood::Gaussian { sigma }
    } else {
        Likelihood::Categorical { classes: k }
    };
    // The fixtures' GGNs leave out the 1/σ² that our Λ includes for a Gaussian likelihood.
    let unscale = if case.is_regression() {
        sigma * sigma
    } else {
        1.0
    };

    // σ is the RMS training residual at the MAP (regression).
    let f_train = model.forward(theta, x).unwrap();
    if case.is_regression() {
        let mle = Likelihood::gaussian_mle(&f_train, y).unwrap();
        let Likelihood::Gaussian { sigma: ours } = mle else {
            unreachable!()
        };
        case.check_scalar("sigma_noise", ours);
    }

    let diag = bdl_laplace::ggn_diagonal(&model, theta, &likelihood, x, 128).unwrap();
    case.check(
        "diag_ggn_all",
        &diag.iter().map(|h| h * unscale).collect::<Vec<_>>(),
    );

    // The Wasserstein rule over all parameters, with variances 1/(h_dd + λ).
    let variances = selection::diagonal_variances(&diag, &vec![lambda; diag.len()]);
    let s = case.meta["selection"]["s"].as_u64().unwrap() as usize;
    let chosen = selection::wasserstein(
        &variances,
        model.layout(),
        Candidates::All,
        s,
        lambda.recip(),
    )
    .unwrap();
    let expected: Vec<usize> = values(&case.tensors["subnet_indices"])
        .iter()
        .map(|&i| i as usize)
        .collect();
    assert_eq!(
        chosen.indices,
        expected,
        "{}: subnet_indices",
        case.path.display()
    );

    let config = LaplaceConfig {
        prior: PriorPrecision::Scalar(lambda),
        subset_scaling: SubsetScaling::None,
        batch_size: 128,
    }
    .check()
    .unwrap();
    let map = MapEstimate::new(Network::from(model.clone()), theta.clone(), likelihood).unwrap();
    let laplace = SubnetLaplace::fit(&map, x, chosen.indices, &config).unwrap();
    case.check(
        "subnet_ggn",
        &mat_values(laplace.ggn().as_ref())
            .iter()
            .map(|h| h * unscale)
            .collect::<Vec<_>>(),
    );
    case.check(
        "subnet_posterior_precision",
        &mat_values(laplace.precision().as_ref()),
    );

    let x_eval = &case.tensors["X_eval"];
    case.check("pred_mean", &values(&model.forward(theta, x_eval).unwrap()));
    case.check(
        "pred_f_cov",
        &values(&laplace.f_covariance(x_eval, config.batch_size).unwrap()),
    );
    if !case.is_regression() {
        let options = PredictOptions {
            link: Link::Probit,
            batch_size: config.batch_size,
            ..PredictOptions::default()
        };
        let pred = laplace.predictive(x_eval, &options).unwrap();
        case.check("probit_probs", &values(&pred.probs().unwrap()));
    }

    let log_lik: f64 = values(&likelihood.log_lik(&f_train, y).unwrap())
        .iter()
        .sum();
    case.check_scalar("log_marglik", laplace.log_marginal_likelihood(log_lik));
}

#[test]
fn every_laplace_torch_fixture_is_reproduced() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/laplace");
    let mut cases = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "safetensors") {
            run(&Case::load(&path));
            cases += 1;
        }
    }
    assert!(
        cases >= 2,
        "expected at least the two public fixtures in {}",
        dir.display()
    );
}
