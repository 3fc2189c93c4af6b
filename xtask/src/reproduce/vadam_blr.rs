//! `vadam-blr`: Bayesian logistic regression on Breast-Cancer (Khan et al. 2018, §6.1).
//!
//! Protocol (ALGORITHMS.md §A, experiment 1): the presplit Breast-Cancer set (341 training, 342
//! test examples, 10 features, no intercept), prior precision λ = 1. The baseline MF-Exact is the
//! optimal mean-field Gaussian (exact ELBO by Gauss–Hermite quadrature, maximised to a gradient
//! below 1e-8). Vadam runs at minibatch sizes M ∈ {1, 8, 16, 32, 64} and VOGN at M = 1, each for
//! the same number of steps with α_t = α/(1 + t^0.55), over several restarts. Reported: the exact
//! ELBO on the training set, the test log-loss of the exact predictive E_q[σ(xᵀw)], and the
//! symmetric KL divergence to MF-Exact. The paper's claim: as M shrinks Vadam approaches VOGN-1,
//! which approaches MF-Exact.

use anyhow::{Context as _, Result};
use bdl_data::blr::{self, BlrSet};
use bdl_eval::metrics::MeanSe;
use bdl_eval::plot::{Figure, Panel};
use bdl_eval::table::Table;
use bdl_likelihoods::Likelihood;
use bdl_models::{Activation, Mlp, MlpSpec};
use bdl_tensor::Seed;
use bdl_variational::exact::{GaussHermite, LogisticData};
use bdl_variational::{DiagGaussian, Method, VariationalConfig, fit};
use candle_core::{DType, Tensor};
use serde::Serialize;

use super::{Context, Profile};

const LAMBDA: f64 = 1.0;
const BATCH_SIZES: [usize; 5] = [1, 8, 16, 32, 64];

/// One method and minibatch size on one restart.
#[derive(Debug, Serialize)]
struct Row {
    method: String,
    batch_size: usize,
    restart: usize,
    /// The exact ELBO of q on the training set.
    elbo: f64,
    /// −(1/N) Σ log p(y | x) on the test set, p = E_q[σ(xᵀw)].
    test_log_loss: f64,
    /// ½[KL(q ‖ q*) + KL(q* ‖ q)] to MF-Exact q*.
    symmetric_kl: f64,
}

fn rows_of(t: &Tensor) -> Result<Vec<Vec<f64>>> {
    Ok(t.to_dtype(DType::F64)?.to_vec2()?)
}

/// Runs the experiment.
pub(crate) fn run(ctx: &Context) -> Result<()> {
    let (restarts, steps) = match ctx.profile {
        Profile::Quick => (5, 10_000),
        Profile::Paper => (20, 50_000),
    };
    let (train, test) =
        blr::load(&ctx.data, BlrSet::BreastCancer).context("loading Breast-Cancer")?;
    let gh = GaussHermite::new(32);
    let train_data = LogisticData::new(rows_of(train.x())?, &train.labels()?)?;
    let test_x = rows_of(test.x())?;
    let test_labels = test.labels()?;
    let exact = train_data.mf_exact(LAMBDA, &gh, 1e-8)?;

    let model =
        Mlp::new(MlpSpec::new(&[train.num_features(), 1], Activation::Identity).without_bias())?;
    let x = train.x().to_dtype(DType::F64)?;
    let y = train.y().clone();
    let n = train.len();
    let score = |method: &str, m: usize, restart: usize, q: &DiagGaussian| {
        let p = LogisticData::predict(q, &test_x, &gh);
        let loss = -p
            .iter()
            .zip(&test_labels)
            .map(|(p, &l)| if l == 1 { p.ln() } else { (1.0 - p).ln() })
            .sum::<f64>()
            / p.len() as f64;
        Row {
            method: method.into(),
            batch_size: m,
            restart,
            elbo: train_data.elbo(q, LAMBDA, &gh),
            test_log_loss: loss,
            symmetric_kl: q.symmetric_kl(&exact),
        }
    };
    let mut rows = vec![score("MF-Exact", n, 0, &exact)];
    let runs: Vec<(&str, Method, usize)> = std::iter::once((
        "VOGN",
        Method::Vogn {
            learning_rate: 0.1,
            beta: 0.01,
        },
        1,
    ))
    .chain(
        BATCH_SIZES
            .iter()
            .map(|&m| ("Vadam", Method::vadam(0.1), m)),
    )
    .collect();
    for restart in 0..restarts {
        for (name, method, m) in &runs {
            let mut config =
                VariationalConfig::new(method.clone(), LAMBDA, (steps * m).div_ceil(n), *m);
            config.lr_decay = Some(0.55);
            config.seed = Seed(restart as u64);
            let mu0 = Tensor::zeros(model_dim(&model), DType::F64, x.device())?;
            let q = fit(&model, &mu0, Likelihood::Bernoulli, &x, &y, &config)?.posterior;
            rows.push(score(name, *m, restart, &q));
        }
        eprintln!("  restart {} of {restarts} done", restart + 1);
    }
    super::write_results(ctx, "vadam-blr", &rows)?;
    super::write(&ctx.dir.join("table.md"), table(&rows).as_bytes())?;
    super::write(
        &ctx.dir.join("vadam-blr.svg"),
        figure(&rows).to_svg().as_bytes(),
    )?;
    Ok(())
}

fn model_dim(model: &Mlp) -> usize {
    bdl_models::Model::layout(model).len()
}

fn stat(rows: &[Row], method: &str, m: usize, field: impl Fn(&Row) -> f64) -> MeanSe {
    let v: Vec<f64> = rows
        .iter()
        .filter(|r| r.method == method && r.batch_size == m)
        .map(field)
        .collect();
    MeanSe::of(&v)
}

fn table(rows: &[Row]) -> String {
    let mut t = Table::new([
        "method",
        "M",
        "train ELBO",
        "test log-loss",
        "sym. KL to MF-Exact",
    ]);
    let mut keys: Vec<(String, usize)> = Vec::new();
    for r in rows {
        if !keys
            .iter()
            .any(|(m, b)| *m == r.method && *b == r.batch_size)
        {
            keys.push((r.method.clone(), r.batch_size));
        }
    }
    for (method, m) in &keys {
        t.row([
            method.clone(),
            if method == "MF-Exact" {
                "full".into()
            } else {
                m.to_string()
            },
            format!("{:.3}", stat(rows, method, *m, |r| r.elbo)),
            format!("{:.4}", stat(rows, method, *m, |r| r.test_log_loss)),
            format!("{:.4}", stat(rows, method, *m, |r| r.symmetric_kl)),
        ]);
    }
    let kl = |method: &str, m: usize| stat(rows, method, m, |r| r.symmetric_kl).mean;
    let mut claims = Table::new(["paper's claim", "ours", "holds"]);
    let vadam: Vec<f64> = BATCH_SIZES.iter().map(|&m| kl("Vadam", m)).collect();
    claims.row([
        "Vadam gets closer to MF-Exact as the minibatch shrinks".to_owned(),
        format!(
            "sym. KL at M = {}: {}",
            BATCH_SIZES.map(|m| m.to_string()).join(", "),
            vadam
                .iter()
                .map(|v| format!("{v:.4}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        yes(vadam[0] < vadam[BATCH_SIZES.len() - 1]).into(),
    ]);
    claims.row([
        "VOGN with M = 1 is closer to MF-Exact than Vadam".to_owned(),
        format!("sym. KL {:.4} vs Vadam-1 {:.4}", kl("VOGN", 1), vadam[0]),
        yes(kl("VOGN", 1) < vadam[0]).into(),
    ]);
    format!(
        "# vadam-blr: Bayesian logistic regression on Breast-Cancer\n\n\
         341 training and 342 test examples, 10 features, λ = {LAMBDA}; mean ± standard error over restarts; \
         MF-Exact maximises the exact ELBO (Gauss–Hermite, 32 points).\n\n{}\n## The paper's claims\n\n{}",
        t.to_markdown(),
        claims.to_markdown()
    )
}

fn figure(rows: &[Row]) -> Figure {
    let xs: Vec<f64> = BATCH_SIZES.iter().map(|&m| (m as f64).log2()).collect();
    let ys: Vec<f64> = BATCH_SIZES
        .iter()
        .map(|&m| stat(rows, "Vadam", m, |r| r.symmetric_kl).mean)
        .collect();
    let vogn = stat(rows, "VOGN", 1, |r| r.symmetric_kl).mean;
    let mut panel = Panel::new("distance to MF-Exact");
    panel
        .labels("log2 minibatch size M", "symmetric KL")
        .y_range(0.0, 1.1 * ys.iter().copied().fold(vogn, f64::max))
        .line(&xs, &ys, "#1f77b4")
        .points(&xs, &ys, "#1f77b4")
        .legend("Vadam", "#1f77b4")
        .points(&[0.0], &[vogn], "#d62728")
        .legend("VOGN, M = 1", "#d62728");
    Figure::new(1).panel(panel)
}

fn yes(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}
