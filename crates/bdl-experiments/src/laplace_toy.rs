//! `laplace-toy`: the 1-D regression of Daxberger et al. (2021), Fig. 1 — does a subnetwork
//! Laplace keep the "in-between" uncertainty of the full-covariance Laplace?
//!
//! Protocol (ALGORITHMS.md §C, experiment 1): the two-cluster AGW set, standardised; an MLP
//! 1-50-50-1 ReLU trained to the MAP with λ = 3 and the noise σ fitted by maximum likelihood;
//! then MAP, diagonal Laplace, full-covariance Laplace, last-layer Laplace, and Wasserstein and
//! random subnetworks of 50% / 3% / 1% of the 2,600 weights (biases are not candidates), with
//! λ_S = λ·S/D for the subnetworks. The score of each method is its epistemic standard deviation
//! in the gap between the clusters and at the data, and how far its predictive standard deviation
//! is from the full-covariance Laplace's.

use anyhow::{Context as _, Result};
use bdl_data::Standardizer;
use bdl_eval::plot::{Figure, Panel};
use bdl_eval::table::Table;
use bdl_inference::{MapConfig, Posterior, Validate, train_map};
use bdl_laplace::LinearizedPosterior;
use bdl_laplace::selection::{self, Candidates, Selection};
use bdl_laplace::{DiagLaplace, LaplaceConfig, PriorPrecision, SubnetLaplace};
use bdl_likelihoods::Likelihood;
use bdl_models::{Activation, Mlp, MlpSpec, Model, Network};
use bdl_tensor::Seed;
use candle_core::{DType, Device, Tensor};
use serde::Serialize;

use crate::claim::{self, Claim, Verdict};
use crate::{Context, Entry, Outcome, Profile};

const LAMBDA: f64 = 3.0;

/// The experiment.
pub(crate) const EXPERIMENT: Entry = Entry {
    name: "laplace-toy",
    reproduces: "Daxberger et al. (2021) Fig. 1: subnetwork Laplace on the 1-D two-cluster regression",
    run,
};

/// The settings of a profile.
#[derive(Debug, Serialize)]
struct Settings {
    /// MLP widths.
    widths: [usize; 4],
    /// The prior precision λ of the MAP and the full-network Laplace.
    lambda: f64,
    /// Full-batch Adam steps to the MAP.
    epochs: usize,
    /// Adam's step size.
    learning_rate: f64,
    /// Points of the evaluation grid.
    grid: usize,
    /// The subnetwork sizes, as fractions of the weights.
    fractions: [(&'static str, f64); 3],
}

impl Settings {
    fn of(profile: Profile) -> Self {
        Self {
            widths: [1, 50, 50, 1],
            lambda: LAMBDA,
            epochs: match profile {
                Profile::Smoke => 50,
                Profile::Quick => 3000,
                Profile::Paper => 10_000,
            },
            learning_rate: 3e-3,
            grid: match profile {
                Profile::Smoke => 40,
                _ => 240,
            },
            fractions: [("50%", 0.5), ("3%", 0.03), ("1%", 0.01)],
        }
    }
}

/// One method's row of `results.json`.
#[derive(Debug, Serialize)]
struct Row {
    method: String,
    /// Parameters with a posterior (0 for the MAP).
    s: usize,
    /// The prior precision used for those parameters.
    prior_precision: f64,
    /// Mean epistemic standard deviation sd(f) over grid points between the clusters.
    gap_sd: f64,
    /// Mean epistemic standard deviation at the training inputs.
    data_sd: f64,
    /// RMS over the grid of (sd − sd_full) / sd_full for the predictive sd (noise included).
    distance_to_full: f64,
    /// For score-based subnetworks: selected weights without data signal (a variance equal to
    /// the prior's for Wasserstein, a zero score for sensitivity).
    uninformative_selected: Option<usize>,
    /// For score-based subnetworks: candidates tied at the selection boundary.
    tied_at_boundary: Option<usize>,
}

/// An evaluated method: its epistemic variance over the grid and at the data.
struct Evaluated {
    name: String,
    s: usize,
    prior: f64,
    grid_var: Vec<f64>,
    data_var: Vec<f64>,
    selection: Option<Selection>,
}

/// Runs the experiment.
fn run(ctx: &Context) -> Result<Outcome> {
    let settings = Settings::of(ctx.profile);
    let device = Device::Cpu;
    let raw = bdl_data::toy::agw_1d(&ctx.data).context("loading the AGW toy set")?;
    let (sx, sy) = (Standardizer::fit(raw.x())?, Standardizer::fit(raw.y())?);
    let x = sx.transform(raw.x())?.to_dtype(DType::F64)?;
    let y = sy.transform(raw.y())?.to_dtype(DType::F64)?;
    let xs = bdl_tensor::to_f64_vec(&x)?;

    let model = Network::from(Mlp::new(MlpSpec::new(&settings.widths, Activation::Relu))?);
    let d = model.layout().len();
    let seed = Seed(0);
    let theta0 = model.init(seed, DType::F64, &device)?;
    let map_config = MapConfig {
        learning_rate: settings.learning_rate,
        prior_precision: LAMBDA,
        epochs: settings.epochs,
        batch_size: raw.len(),
        learn_sigma: true,
        seed,
        ..MapConfig::default()
    }
    .check()?;
    ctx.log(format!("MAP: {} full-batch Adam steps", settings.epochs));
    let fit = train_map(
        &model,
        &theta0,
        Likelihood::Gaussian { sigma: 1.0 },
        &x,
        &y,
        &map_config,
    )?;
    let map = &fit.estimate;
    let theta = map.theta();
    let Likelihood::Gaussian { sigma } = map.likelihood() else {
        unreachable!("trained a Gaussian")
    };
    ctx.log(format!(
        "MAP: loss {:.4}, σ = {sigma:.4}",
        fit.losses.last().copied().unwrap_or(f64::NAN)
    ));

    // The gap: the widest empty interval between consecutive training inputs.
    let mut sorted = xs.clone();
    sorted.sort_by(f64::total_cmp);
    let (gap_lo, gap_hi) = sorted
        .windows(2)
        .map(|w| (w[0], w[1]))
        .max_by(|a, b| (a.1 - a.0).total_cmp(&(b.1 - b.0)))
        .expect("at least two points");
    let (lo, hi) = (sorted[0], sorted[sorted.len() - 1]);
    let pad = 0.5 * (hi - lo);
    let n_grid = settings.grid;
    let grid: Vec<f64> = (0..n_grid)
        .map(|i| lo - pad + (hi - lo + 2.0 * pad) * i as f64 / (n_grid - 1) as f64)
        .collect();
    let grid_t = Tensor::from_vec(grid.clone(), (n_grid, 1), &device)?;

    const ROWS: usize = 200;
    let base = LaplaceConfig {
        prior: PriorPrecision::Scalar(LAMBDA),
        scale_prior_to_subset: false,
        batch_size: ROWS,
    };
    let weights: Vec<usize> = (0..d)
        .filter(|&i| model.layout().weights_mask()[i])
        .collect();
    let n_weights = weights.len();

    let mut methods: Vec<Evaluated> = Vec::new();
    let diag = DiagLaplace::fit(map, &x, &base.clone().check()?)?;
    methods.push(Evaluated {
        name: "MAP".into(),
        s: 0,
        prior: LAMBDA,
        grid_var: vec![0.0; n_grid],
        data_var: vec![0.0; xs.len()],
        selection: None,
    });
    methods.push(Evaluated {
        name: "diagonal".into(),
        s: d,
        prior: LAMBDA,
        grid_var: bdl_tensor::to_f64_vec(&diag.f_covariance(&grid_t, ROWS)?)?,
        data_var: bdl_tensor::to_f64_vec(&diag.f_covariance(&x, ROWS)?)?,
        selection: None,
    });
    let subnet = |name: String,
                  subset: Vec<usize>,
                  scale: bool,
                  selection: Option<Selection>|
     -> Result<Evaluated> {
        let config = LaplaceConfig {
            scale_prior_to_subset: scale,
            ..base.clone()
        }
        .check()?;
        let s = subset.len();
        ctx.log(format!("{name}: {s} parameters"));
        let post = SubnetLaplace::fit(map, &x, subset, &config)?;
        Ok(Evaluated {
            name,
            s,
            prior: post.prior_precision()[0],
            grid_var: bdl_tensor::to_f64_vec(&post.f_covariance(&grid_t, ROWS)?)?,
            data_var: bdl_tensor::to_f64_vec(&post.f_covariance(&x, ROWS)?)?,
            selection,
        })
    };
    methods.push(subnet("full".into(), (0..d).collect(), false, None)?);
    methods.push(subnet(
        "last layer".into(),
        selection::last_layer(model.layout(), Candidates::All).indices,
        false,
        None,
    )?);
    // The sensitivity score σ_d² Σ_n J_nd²: Σ_n J_nd² is the GGN diagonal of a unit-variance
    // Gaussian likelihood, i.e. ours times σ².
    let jac_sq: Vec<f64> = diag
        .ggn_diagonal()
        .iter()
        .map(|h| h * sigma * sigma)
        .collect();
    let sensitivity = selection::sensitivity_scores(diag.variances(), &jac_sq);
    for (label, fraction) in settings.fractions {
        let s = (n_weights as f64 * fraction).round() as usize;
        let w = selection::wasserstein(
            diag.variances(),
            model.layout(),
            Candidates::WeightsOnly,
            s,
            LAMBDA.recip(),
        )?;
        methods.push(subnet(
            format!("Wasserstein {label}"),
            w.indices.clone(),
            true,
            Some(w),
        )?);
        let v = selection::largest(
            &sensitivity,
            model.layout(),
            Candidates::WeightsOnly,
            s,
            Some(0.0),
        )?;
        methods.push(subnet(
            format!("sensitivity {label}"),
            v.indices.clone(),
            true,
            Some(v),
        )?);
        let r = selection::random(model.layout(), Candidates::WeightsOnly, s, seed.fork(label))?;
        methods.push(subnet(format!("random {label}"), r.indices, true, None)?);
    }

    // Scores.
    let noise = sigma * sigma;
    let full_sd: Vec<f64> = methods[2]
        .grid_var
        .iter()
        .map(|v| (v + noise).sqrt())
        .collect();
    let in_gap: Vec<bool> = grid.iter().map(|&g| g > gap_lo && g < gap_hi).collect();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let rows: Vec<Row> = methods
        .iter()
        .map(|m| {
            let gap: Vec<f64> = m
                .grid_var
                .iter()
                .zip(&in_gap)
                .filter(|(_, g)| **g)
                .map(|(v, _)| v.sqrt())
                .collect();
            let data: Vec<f64> = m.data_var.iter().map(|v| v.sqrt()).collect();
            let rel: Vec<f64> = m
                .grid_var
                .iter()
                .zip(&full_sd)
                .map(|(v, f)| (((v + noise).sqrt() - f) / f).powi(2))
                .collect();
            Row {
                method: m.name.clone(),
                s: m.s,
                prior_precision: m.prior,
                gap_sd: mean(&gap),
                data_sd: mean(&data),
                distance_to_full: mean(&rel).sqrt(),
                uninformative_selected: m.selection.as_ref().map(|s| s.uninformative_selected),
                tied_at_boundary: m.selection.as_ref().map(|s| s.tied_at_boundary),
            }
        })
        .collect();

    // One panel per method: data, predictive mean ± 2 sd (noise included), in standardised units.
    let f_grid = bdl_tensor::to_f64_vec(&model.forward(theta, &grid_t)?)?;
    let ys = bdl_tensor::to_f64_vec(&y)?;
    let figure = methods.iter().fold(Figure::new(5), |fig, m| {
        let sd: Vec<f64> = m.grid_var.iter().map(|v| (v + noise).sqrt()).collect();
        let lo: Vec<f64> = f_grid.iter().zip(&sd).map(|(f, s)| f - 2.0 * s).collect();
        let hi: Vec<f64> = f_grid.iter().zip(&sd).map(|(f, s)| f + 2.0 * s).collect();
        let mut panel = Panel::new(format!("{} (s = {})", m.name, m.s));
        panel
            .labels("x", "y")
            .y_range(-4.0, 4.0)
            .band(&grid, &lo, &hi, "#1f77b4")
            .points(&xs, &ys, "#444444")
            .line(&grid, &f_grid, "#1f77b4");
        fig.panel(panel)
    });
    Ok(Outcome::new(
        "laplace-toy: subnetwork Laplace on the 1-D two-cluster set",
        &settings,
        &rows,
    )?
    .body(table(&rows, sigma))
    .claims(claims(&rows))
    .figure("laplace-toy.svg", figure.to_svg()))
}

fn by<'a>(rows: &'a [Row], name: &str) -> &'a Row {
    rows.iter()
        .find(|r| r.method == name)
        .expect("every method has a row")
}

/// Epistemic sd in the gap over sd at the data.
fn gap_ratio(r: &Row) -> f64 {
    r.gap_sd / r.data_sd.max(1e-12)
}

/// The paper's claims, decided on the rows.
fn claims(rows: &[Row]) -> Vec<Claim> {
    let full = by(rows, "full");
    let mut claims = Vec::new();
    for name in ["diagonal", "last layer"] {
        let r = by(rows, name);
        claims.push(Claim::new(
            format!("{name} loses the in-between uncertainty of the full Laplace"),
            format!(
                "gap/data sd ratio {:.2} vs full {:.2}",
                gap_ratio(r),
                gap_ratio(full)
            ),
            claim::less(gap_ratio(r), gap_ratio(full)),
        ));
    }
    for size in ["50%", "3%", "1%"] {
        let [w, v, r] = ["Wasserstein", "sensitivity", "random"]
            .map(|rule| by(rows, &format!("{rule} {size}")));
        let closer = |a: &Row| {
            let d = claim::less(a.distance_to_full, r.distance_to_full);
            Verdict::new(
                d.holds,
                "distance to the full Laplace's predictive sd smaller than the random subnet's",
            )
        };
        claims.push(Claim::new(
            format!("Wasserstein {size} subnet is closer to the full Laplace than random"),
            format!(
                "distance {:.3} vs {:.3} ({} of {} selected weights without signal)",
                w.distance_to_full,
                r.distance_to_full,
                w.uninformative_selected.unwrap_or(0),
                w.s
            ),
            closer(w),
        ));
        claims.push(Claim::new(
            format!("(ours) sensitivity {size} subnet is closer to the full Laplace than random"),
            format!(
                "distance {:.3} vs {:.3}",
                v.distance_to_full, r.distance_to_full
            ),
            closer(v),
        ));
    }
    claims
}

fn table(rows: &[Row], sigma: f64) -> String {
    let mut t = Table::new([
        "method",
        "s",
        "λ",
        "sd[f] in the gap",
        "sd[f] at the data",
        "distance to full",
        "selected without signal",
        "tied at boundary",
    ]);
    let opt = |v: Option<usize>| v.map_or_else(|| "–".to_owned(), |v| v.to_string());
    for r in rows {
        t.row([
            r.method.clone(),
            r.s.to_string(),
            format!("{:.3}", r.prior_precision),
            format!("{:.3}", r.gap_sd),
            format!("{:.3}", r.data_sd),
            format!("{:.3}", r.distance_to_full),
            opt(r.uninformative_selected),
            opt(r.tied_at_boundary),
        ]);
    }
    format!(
        "MLP 1-50-50-1 ReLU, λ = {LAMBDA}, σ fitted by maximum likelihood (σ = {sigma:.4}, standardised units); \
         subnetworks use λ_S = λ·S/D and choose among weights only. sd[f] is the epistemic standard deviation of the \
         linearized predictive; distance to full is the RMS relative difference of the predictive sd (noise included) from \
         the full-covariance Laplace over the plotted grid. \"Selected without signal\" counts chosen weights whose \
         GGN diagonal is zero (variance 1/λ): the Wasserstein rule with diagonal-Laplace variances ranks them first, yet \
         they add no predictive variance; the sensitivity score σ_d² Σ_n J_nd² ranks them last.\n\n{}",
        t.to_markdown()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(method: &str, gap_sd: f64, data_sd: f64, distance_to_full: f64) -> Row {
        Row {
            method: method.into(),
            s: 10,
            prior_precision: LAMBDA,
            gap_sd,
            data_sd,
            distance_to_full,
            uninformative_selected: Some(0),
            tied_at_boundary: Some(0),
        }
    }

    /// Rows in which the full Laplace keeps the gap uncertainty, the diagonal keeps it too
    /// (so that claim fails), the last layer loses it, and Wasserstein beats random at 50% only.
    #[test]
    fn claims_follow_the_rows() {
        let mut rows = vec![
            row("full", 2.0, 0.5, 0.0),
            row("diagonal", 3.0, 0.5, 0.4),
            row("last layer", 0.5, 0.5, 0.5),
        ];
        for (size, w) in [("50%", 0.1), ("3%", 0.6), ("1%", 0.7)] {
            rows.push(row(&format!("Wasserstein {size}"), 1.0, 0.5, w));
            rows.push(row(&format!("sensitivity {size}"), 1.0, 0.5, 0.2));
            rows.push(row(&format!("random {size}"), 1.0, 0.5, 0.3));
        }
        let holds: Vec<bool> = claims(&rows).iter().map(|c| c.holds).collect();
        assert_eq!(holds, [false, true, true, true, false, true, false, true]);
    }
}
