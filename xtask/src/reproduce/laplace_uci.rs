//! `laplace-uci`: a large model with a subnetwork Laplace against small models with a
//! full-network Laplace (Daxberger et al. 2021, §5.2), on wine, kin8nm and protein with the
//! standard and the "gap" splits.
//!
//! Per split: inputs and targets standardised with training statistics; 15% of the training set
//! held out for early stopping and for the choice of the prior precision; MLPs with two hidden
//! ReLU layers of increasing width trained to the MAP (σ by maximum likelihood); a full-network GGN Laplace on each; on the widest model, subnetworks
//! whose size matches each smaller model's parameter count, chosen by the Wasserstein rule with
//! diagonal-Laplace variances (the paper's) or diagonal-SWAG variances, by the sensitivity score,
//! and at random. The prior precision of every
//! posterior is chosen on the held-out part by validation log-likelihood, all candidates
//! evaluated from one eigendecomposition of its GGN. Reported: test log-likelihood (per point, in
//! the original units) and RMSE.

use anyhow::Result;
use bdl_baselines::{MapConfig, SwagConfig, train_map, train_swag};
use bdl_data::uci::{Benchmark, SplitKind, UciData};
use bdl_data::{Dataset, Standardizer};
use bdl_eval::metrics::{self, MeanSe};
use bdl_eval::plot::{Figure, Panel};
use bdl_eval::table::Table;
use bdl_laplace::LinearizedPosterior;
use bdl_laplace::selection::{self, Candidates};
use bdl_laplace::{DiagLaplace, Evidence, LaplaceConfig, PriorPrecision};
use bdl_likelihoods::{ClassLink, Likelihood};
use bdl_models::{Activation, Mlp, MlpSpec, Model};
use bdl_tensor::Seed;
use candle_core::{DType, Tensor};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;

use super::{Context, Profile};

/// Candidate prior precisions for the validation search: 10^-2 … 10^3.
const LAMBDAS: [f64; 11] = [
    0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0,
];

/// The subnetwork rules compared on the widest model: Wasserstein with diagonal-Laplace variances
/// (the paper's), Wasserstein with diagonal-SWAG variances, the sensitivity score, random.
const RULES: [&str; 4] = ["Wasserstein", "Wasserstein (SWAG)", "sensitivity", "random"];

/// One posterior on one split.
#[derive(Clone, Debug, Serialize)]
struct Row {
    dataset: String,
    split_kind: String,
    split: usize,
    /// Hidden width of the model.
    width: usize,
    /// Parameters of the model.
    d: usize,
    /// `full`, or the subnetwork rule.
    method: String,
    /// Parameters with a posterior.
    s: usize,
    /// The prior precision chosen on the validation part.
    lambda: f64,
    test_log_lik: f64,
    rmse: f64,
}

struct Settings {
    benchmarks: Vec<Benchmark>,
    splits: usize,
    widths: Vec<usize>,
    /// The most epochs of MAP training, and the patience of its early stopping.
    epochs: usize,
    patience: usize,
}

/// Standardised train / validation / test parts of one split, and the target scale.
struct Split {
    train: (Tensor, Tensor),
    test: (Tensor, Tensor),
    y_scale: Standardizer,
}

/// The training rows the MAP was fitted on and the 15% it held out (for early stopping, then for
/// the choice of λ).
struct Parts {
    fit: (Tensor, Tensor),
    val: (Tensor, Tensor),
}

fn select(t: &Tensor, rows: &[usize]) -> Result<Tensor> {
    let idx: Vec<u32> = rows.iter().map(|&r| r as u32).collect();
    Ok(t.index_select(&Tensor::from_vec(idx, rows.len(), t.device())?, 0)?)
}

fn prepare(train: &Dataset, test: &Dataset) -> Result<Split> {
    let (sx, sy) = (Standardizer::fit(train.x())?, Standardizer::fit(train.y())?);
    let part = |d: &Dataset| -> Result<(Tensor, Tensor)> {
        Ok((
            sx.transform(d.x())?.to_dtype(DType::F64)?,
            sy.transform(d.y())?.to_dtype(DType::F64)?,
        ))
    };
    Ok(Split {
        train: part(train)?,
        test: part(test)?,
        y_scale: sy,
    })
}

/// Runs the experiment.
pub(crate) fn run(ctx: &Context) -> Result<()> {
    let settings = match ctx.profile {
        Profile::Quick => Settings {
            benchmarks: vec![Benchmark::Wine, Benchmark::Kin8nm, Benchmark::Protein],
            splits: 2,
            widths: vec![10, 20, 50],
            epochs: 150,
            patience: 20,
        },
        Profile::Paper => Settings {
            benchmarks: vec![Benchmark::Wine, Benchmark::Kin8nm, Benchmark::Protein],
            splits: usize::MAX,
            widths: vec![10, 20, 50, 100],
            epochs: 1000,
            patience: 50,
        },
    };
    let mut jobs = Vec::new();
    for &b in &settings.benchmarks {
        let data = UciData::open(&ctx.data, b)?;
        for kind in [SplitKind::Standard, SplitKind::Gap] {
            for k in 0..data.num_splits(kind)?.min(settings.splits) {
                jobs.push((b, kind, k));
            }
        }
    }
    let bar = ProgressBar::new(jobs.len() as u64).with_style(
        ProgressStyle::with_template(
            "  {bar:30} {pos}/{len} splits  {msg}  [{elapsed_precise}, eta {eta}]",
        )
        .expect("a valid template"),
    );
    let mut rows = Vec::new();
    for (b, kind, k) in jobs {
        bar.set_message(format!("{b} {kind} {k}"));
        let (train, test) = UciData::open(&ctx.data, b)?.load(kind, k)?;
        let split = prepare(&train, &test)?;
        rows.extend(run_split(
            &split,
            &settings,
            &format!("{b}"),
            &format!("{kind}"),
            k,
        )?);
        bar.inc(1);
    }
    bar.finish_and_clear();
    super::write_results(ctx, "laplace-uci", &rows)?;
    super::write(
        &ctx.dir.join("table.md"),
        table(&rows, &settings).as_bytes(),
    )?;
    super::write(
        &ctx.dir.join("laplace-uci.svg"),
        figure(&rows).to_svg().as_bytes(),
    )?;
    Ok(())
}

fn run_split(
    split: &Split,
    settings: &Settings,
    dataset: &str,
    kind: &str,
    k: usize,
) -> Result<Vec<Row>> {
    let (x, y) = &split.train;
    let d_in = x.dims()[1];
    let seed = Seed(k as u64).fork(dataset);
    let mut rows = Vec::new();
    let mut sizes = Vec::new();
    let row =
        |width: usize, d: usize, method: &str, s: usize, lambda: f64, ll: f64, rmse: f64| Row {
            dataset: dataset.into(),
            split_kind: kind.into(),
            split: k,
            width,
            d,
            method: method.into(),
            s,
            lambda,
            test_log_lik: ll,
            rmse,
        };
    for (i, &width) in settings.widths.iter().enumerate() {
        let model = Mlp::new(MlpSpec::new(&[d_in, width, width, 1], Activation::Relu))?;
        let d = model.layout().len();
        let theta0 = model.init(seed.index(width as u64), DType::F64, x.device())?;
        // The same seed for every width: the same 15% held out, for early stopping and for λ.
        let config = MapConfig {
            learning_rate: 1e-3,
            prior_precision: 1.0,
            epochs: settings.epochs,
            batch_size: 128,
            learn_sigma: true,
            validation_fraction: 0.15,
            patience: Some(settings.patience),
            seed: seed.fork("map"),
            ..MapConfig::default()
        };
        let fit = train_map(
            &model,
            &theta0,
            Likelihood::Gaussian { sigma: 1.0 },
            x,
            y,
            &config,
        )?;
        let lik = fit.likelihood;
        let held = fit.validation.as_ref().expect("a fraction was held out");
        let parts = Parts {
            fit: (select(x, &held.train)?, select(y, &held.train)?),
            val: (select(x, &held.held_out)?, select(y, &held.held_out)?),
        };
        let (lambda, ll, rmse) =
            evaluate(&model, &fit.theta, &lik, &parts, split, (0..d).collect())?;
        rows.push(row(width, d, "full", d, lambda, ll, rmse));
        if i + 1 < settings.widths.len() {
            sizes.push(d);
            continue;
        }
        // The widest model: subnetworks the size of each smaller model.
        let base = LaplaceConfig {
            prior: PriorPrecision::Scalar(lambda),
            scale_prior_to_subset: false,
            batch_size: 256,
        };
        let diag = DiagLaplace::fit(&model, &fit.theta, &lik, &parts.fit.0, &base)?;
        let Likelihood::Gaussian { sigma } = lik else {
            unreachable!("a Gaussian fit")
        };
        let jac_sq: Vec<f64> = diag
            .ggn_diagonal()
            .iter()
            .map(|h| h * sigma * sigma)
            .collect();
        let sensitivity = selection::sensitivity_scores(diag.variances(), &jac_sq);
        let swag_config = SwagConfig {
            learning_rate: 1e-2,
            snapshots: 20,
            rank: 0,
            seed: seed.fork("swag"),
            ..SwagConfig::default()
        };
        let swag = train_swag(
            &model,
            &fit.theta,
            lik,
            &parts.fit.0,
            &parts.fit.1,
            &swag_config,
        )?
        .swag
        .variances();
        for &s in &sizes {
            let rules = [
                (
                    "Wasserstein",
                    selection::wasserstein(
                        diag.variances(),
                        model.layout(),
                        Candidates::WeightsOnly,
                        s,
                        lambda.recip(),
                    )?,
                ),
                (
                    "Wasserstein (SWAG)",
                    selection::largest(&swag, model.layout(), Candidates::WeightsOnly, s, None)?,
                ),
                (
                    "sensitivity",
                    selection::largest(
                        &sensitivity,
                        model.layout(),
                        Candidates::WeightsOnly,
                        s,
                        Some(0.0),
                    )?,
                ),
                (
                    "random",
                    selection::random(
                        model.layout(),
                        Candidates::WeightsOnly,
                        s,
                        seed.fork("random").index(s as u64),
                    )?,
                ),
            ];
            for (rule, chosen) in rules {
                let (lambda, ll, rmse) =
                    evaluate(&model, &fit.theta, &lik, &parts, split, chosen.indices)?;
                rows.push(row(width, d, rule, s, lambda, ll, rmse));
            }
        }
    }
    Ok(rows)
}

/// Chooses λ on the validation part from one eigendecomposition, then returns (λ, test
/// log-likelihood in the original units, test RMSE in the original units).
fn evaluate(
    model: &Mlp,
    theta: &Tensor,
    lik: &Likelihood,
    parts: &Parts,
    split: &Split,
    subset: Vec<usize>,
) -> Result<(f64, f64, f64)> {
    let Likelihood::Gaussian { sigma } = *lik else {
        unreachable!("regression")
    };
    let (x, y) = &parts.fit;
    let evidence = Evidence::new(model, theta, lik, x, y, subset, 256)?;
    let val = evidence.validation(model, theta, &parts.val.0, &parts.val.1)?;
    let candidates: Vec<(f64, f64)> = LAMBDAS.iter().map(|&l| (l, sigma)).collect();
    let (lambda, _, _) = evidence.grid_search(&val, &candidates)?;
    let post = evidence.posterior(lambda, sigma)?;
    let pred = post.predictive(model, theta, lik, &split.test.0, ClassLink::Probit)?;
    let scale = split.y_scale.std()[0];
    let ll = metrics::mean_log_lik(&pred, &split.test.1)? - scale.ln();
    let rmse = metrics::rmse(&pred, &split.test.1)? * scale;
    Ok((lambda, ll, rmse))
}

/// Mean ± standard error of the test log-likelihood per dataset, split kind and method.
fn table(rows: &[Row], settings: &Settings) -> String {
    let mut groups: Vec<(String, String)> = rows
        .iter()
        .map(|r| (r.dataset.clone(), r.split_kind.clone()))
        .collect();
    groups.dedup();
    let widest = *settings.widths.last().expect("at least one width");
    let mut t = Table::new([
        "dataset",
        "splits",
        "model",
        "posterior",
        "s",
        "test LL",
        "test RMSE",
    ]);
    let mut claims = Table::new(["dataset", "paper's claim", "ours", "holds"]);
    for (dataset, kind) in &groups {
        let here: Vec<&Row> = rows
            .iter()
            .filter(|r| &r.dataset == dataset && &r.split_kind == kind)
            .collect();
        let mut methods: Vec<(usize, String, usize)> = here
            .iter()
            .map(|r| (r.width, r.method.clone(), r.s))
            .collect();
        methods.sort();
        methods.dedup();
        let stat = |w: usize, m: &str, s: usize| {
            let pick: Vec<&&Row> = here
                .iter()
                .filter(|r| r.width == w && r.method == m && r.s == s)
                .collect();
            let ll: Vec<f64> = pick.iter().map(|r| r.test_log_lik).collect();
            let rmse: Vec<f64> = pick.iter().map(|r| r.rmse).collect();
            (MeanSe::of(&ll), MeanSe::of(&rmse), ll.len())
        };
        for (w, m, s) in &methods {
            let (ll, rmse, n) = stat(*w, m, *s);
            t.row([
                dataset.clone(),
                format!("{kind} ×{n}"),
                format!("width {w}"),
                if m == "full" {
                    "full network".into()
                } else {
                    format!("{m} subnetwork")
                },
                s.to_string(),
                format!("{ll:.3}"),
                format!("{rmse:.3}"),
            ]);
        }
        for small in methods
            .iter()
            .filter(|(w, m, _)| m == "full" && *w != widest)
        {
            let (small_ll, ..) = stat(small.0, "full", small.2);
            let best = RULES
                .iter()
                .map(|rule| (rule, stat(widest, rule, small.2).0))
                .max_by(|a, b| a.1.mean.total_cmp(&b.1.mean))
                .expect("four rules");
            let (w_ll, ..) = stat(widest, "Wasserstein", small.2);
            claims.row([
                format!("{dataset} ({kind})"),
                format!("width-{widest} model with a Wasserstein subnetwork of {} beats width {} with a full Laplace", small.2, small.0),
                format!("{:.3} vs {:.3} (best rule: {} {:.3})", w_ll.mean, small_ll.mean, best.0, best.1.mean),
                if w_ll.mean > small_ll.mean { "yes" } else { "no" }.into(),
            ]);
        }
    }
    format!(
        "# laplace-uci: large model with a subnetwork Laplace vs small models with a full Laplace\n\n\
         Two hidden ReLU layers of the given width; λ chosen per posterior on a 15% validation part; test \
         log-likelihood per point in the original units (mean ± standard error over splits).\n\n{}\n\
         ## The paper's claim\n\n{}",
        t.to_markdown(),
        claims.to_markdown()
    )
}

/// One panel per dataset and split kind: test log-likelihood against log₁₀ s, full-network
/// Laplace on each width and the widest model's subnetworks by rule.
fn figure(rows: &[Row]) -> Figure {
    let mut groups: Vec<(String, String)> = rows
        .iter()
        .map(|r| (r.dataset.clone(), r.split_kind.clone()))
        .collect();
    groups.dedup();
    let widest = rows.iter().map(|r| r.width).max().unwrap_or(0);
    let styles = [
        ("full", "#000000"),
        ("Wasserstein", "#1f77b4"),
        ("Wasserstein (SWAG)", "#9467bd"),
        ("sensitivity", "#2ca02c"),
        ("random", "#d62728"),
    ];
    groups
        .into_iter()
        .fold(Figure::new(3), |fig, (dataset, kind)| {
            let mut panel = Panel::new(format!("{dataset} ({kind})"));
            panel.labels("log10 s", "test log-likelihood");
            for (method, color) in styles {
                let mut sizes: Vec<usize> = rows
                    .iter()
                    .filter(|r| r.dataset == dataset && r.split_kind == kind && r.method == method)
                    .filter(|r| method == "full" || r.width == widest)
                    .map(|r| r.s)
                    .collect();
                sizes.sort_unstable();
                sizes.dedup();
                let mean_at = |s: usize| {
                    let v: Vec<f64> = rows
                        .iter()
                        .filter(|r| {
                            r.dataset == dataset
                                && r.split_kind == kind
                                && r.method == method
                                && r.s == s
                        })
                        .map(|r| r.test_log_lik)
                        .collect();
                    MeanSe::of(&v).mean
                };
                let xs: Vec<f64> = sizes.iter().map(|&s| (s as f64).log10()).collect();
                let ys: Vec<f64> = sizes.iter().map(|&s| mean_at(s)).collect();
                let label = if method == "full" {
                    "full Laplace, each width".to_owned()
                } else {
                    format!("width {widest}, {method}")
                };
                panel
                    .line(&xs, &ys, color)
                    .points(&xs, &ys, color)
                    .legend(label, color);
            }
            fig.panel(panel)
        })
}
