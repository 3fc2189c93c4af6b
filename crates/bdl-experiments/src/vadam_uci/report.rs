//! The report: the results table with the paper's numbers beside ours, the paired comparisons,
//! the protocol paragraph and the convergence table and figure.

use std::fmt::Write as _;

use bdl_eval::plot::{Figure, Panel};
use bdl_eval::stats::{PairedTTest, median, t_critical_99};
use bdl_eval::table::Table;

use super::claims::{SetComparison, compare, curves, pick, reach, stat, target};
use super::settings::{Selection, Settings};
use super::{
    BETAS, CONVERGENCE_SET, DROPOUT, HIDDEN, INIT_PRECISION, LEARNING_RATE, METHODS, REFERENCE,
    Row, Which, fallback_summary,
};
use crate::Profile;
use crate::listed::Listed;

/// Significant digits for a data set's RMSE (Naval's is ~0.002).
pub(super) fn rmse_digits(set: &str) -> usize {
    match set {
        "naval" => 4,
        "kin8nm" | "wine" => 3,
        _ => 2,
    }
}

/// The median of `field` over `rows`, formatted ("—" for none).
pub(super) fn median_of(rows: &[&Row], field: impl Fn(&Row) -> f64) -> String {
    median(&rows.iter().map(|r| field(r)).collect::<Vec<_>>())
        .map_or("—".into(), |m| format!("{m:.3}"))
}

/// A paired difference as "mean ± se" and its t statistic ("—" without a test).
pub(super) fn show_paired(t: Option<PairedTTest>, digits: usize) -> (String, String) {
    t.map_or(("—".into(), "—".into()), |t| {
        (
            format!("{:.digits$} ± {:.digits$}", t.mean_difference, t.se),
            format!("{:.2}", t.t),
        )
    })
}

/// The Markdown body: the setting, the results by data set and method, and the numbers the
/// claims are decided on.
pub(super) fn body(
    rows: &[Row],
    settings: &Settings,
    profile: Profile,
    listed: &[Listed],
) -> String {
    let comparisons = compare(rows);
    let t = results_table(rows, &comparisons, listed);
    let (same, dropout) = comparison_tables(&comparisons);
    let mut out = protocol(rows, settings, profile, &t);
    let _ = write!(
        out,
        "## Vadam against BBVI\n\nPaired differences Vadam − BBVI over splits (mean ± standard \
         error) with their t statistics; the claim counts a data set as comparable when neither \
         |t| exceeds the two-sided 1% critical value, on the RMSE and on the joint LL (the test \
         of the Vadam authors' Table 1 script); the per-point LL's test is shown beside it.\n\n{}\n\
         ## MC dropout against Vadam and BBVI\n\nMean test RMSE and LL over splits; the verdict \
         pairs MC dropout with each by split (better by more than one standard error in both \
         metrics against both methods, undecided within one).\n\n{}\n",
        same.to_markdown(),
        dropout.to_markdown()
    );
    out.push_str(&convergence_table(rows));
    out
}

/// The table of every method on every data set beside the paper's numbers, the listed methods
/// after the experiment's own.
pub(super) fn results_table(
    rows: &[Row],
    comparisons: &[SetComparison<'_>],
    listed: &[Listed],
) -> Table {
    let mut t = Table::new([
        "dataset",
        "splits",
        "method",
        "test RMSE",
        "paper RMSE",
        "test LL (per point)",
        "paper LL",
        "test LL (joint, Vadam code)",
        "τ chosen (median)",
        "λ chosen (median)",
    ]);
    for c in comparisons {
        let set = c.set;
        let digits = rmse_digits(set);
        let reference = REFERENCE.iter().find(|r| r.set.name() == set);
        for which in METHODS {
            let here = pick(rows, set, which);
            if here.is_empty() {
                continue;
            }
            let paper_rmse = match (reference, which) {
                (Some(r), Which::Dropout) => {
                    format!(
                        "{:.d$} ± {:.d$}",
                        r.dropout_rmse.0,
                        r.dropout_rmse.1,
                        d = digits
                    )
                }
                (Some(r), Which::Vadam) => format!("≈ {}", r.vadam_rmse),
                (Some(r), Which::Bbvi) => format!("≈ {}", r.bbvi_rmse),
                _ => "—".into(),
            };
            let paper_ll = match (reference, which) {
                (Some(r), Which::Dropout) => {
                    format!("{:.2} ± {:.2}", r.dropout_ll.0, r.dropout_ll.1)
                }
                _ => "—".into(),
            };
            t.row([
                set.to_owned(),
                here.len().to_string(),
                which.name().into(),
                format!("{:.digits$}", stat(&here, |r| r.test_rmse)),
                paper_rmse,
                format!("{:.2}", stat(&here, |r| r.test_log_lik)),
                paper_ll,
                format!("{:.2}", stat(&here, |r| r.test_log_lik_joint)),
                median_of(&here, |r| r.tau),
                median_of(&here, |r| r.lambda),
            ]);
        }
        for l in listed {
            let here: Vec<&Row> = rows
                .iter()
                .filter(|r| r.dataset == set && r.method == l.label)
                .collect();
            if here.is_empty() {
                continue;
            }
            t.row([
                set.to_owned(),
                here.len().to_string(),
                l.label.clone(),
                format!("{:.digits$}", stat(&here, |r| r.test_rmse)),
                "—".into(),
                format!("{:.2}", stat(&here, |r| r.test_log_lik)),
                "—".into(),
                format!("{:.2}", stat(&here, |r| r.test_log_lik_joint)),
                median_of(&here, |r| r.tau),
                median_of(&here, |r| r.lambda),
            ]);
        }
    }

    t
}

/// The paired Vadam − BBVI differences and the MC dropout means, one row per data set.
pub(super) fn comparison_tables(comparisons: &[SetComparison<'_>]) -> (Table, Table) {
    let mut same = Table::new([
        "dataset",
        "Vadam − BBVI, RMSE",
        "t (RMSE)",
        "Vadam − BBVI, joint LL",
        "t (joint LL)",
        "Vadam − BBVI, per-point LL",
        "t (per-point LL)",
        "two-sided 1% critical t",
    ]);
    let mut dropout = Table::new([
        "dataset",
        "RMSE: dropout / Vadam / BBVI",
        "LL: dropout / Vadam / BBVI",
    ]);
    for c in comparisons {
        let digits = rmse_digits(c.set);
        let (d_rmse, t_rmse) = show_paired(c.rmse, digits);
        let (d_ll, t_ll) = show_paired(c.ll, 2);
        let (d_joint, t_joint) = show_paired(c.ll_joint, 2);
        same.row([
            c.set.to_owned(),
            d_rmse,
            t_rmse,
            d_joint,
            t_joint,
            d_ll,
            t_ll,
            c.rmse
                .map_or("—".into(), |t| format!("{:.3}", t_critical_99(t.df))),
        ]);
        let [d_r, v_r, b_r] = c.mean_rmse;
        let [d_l, v_l, b_l] = c.mean_ll;
        dropout.row([
            c.set.to_owned(),
            format!("{d_r:.digits$} / {v_r:.digits$} / {b_r:.digits$}"),
            format!("{d_l:.2} / {v_l:.2} / {b_l:.2}"),
        ]);
    }

    (same, dropout)
}

/// The protocol paragraph (architecture, training, selection, data) above the results table.
pub(super) fn protocol(rows: &[Row], settings: &Settings, profile: Profile, t: &Table) -> String {
    let mut out = String::new();
    let selection = match settings.selection {
        Selection::Race {
            folds,
            screen,
            finalists,
        } => format!(
            "{folds}-fold cross-validation inside each training split, raced: every candidate \
             on the first {screen} fold(s), the {} best of them and the {} best of each τ on all \
             {folds}",
            finalists.overall, finalists.per_tau
        ),
        Selection::Holdout(f) => format!(
            "one seeded {:.0}% holdout of each training split ({}-profile deviation: the paper \
             uses 5-fold cross-validation)",
            100.0 * f,
            profile.name()
        ),
    };
    let splits = match settings.splits {
        None => "all standard splits".to_owned(),
        Some(k) => format!(
            "the first {k} standard splits ({}-profile deviation: the paper uses 20)",
            profile.name()
        ),
    };
    let data = match profile {
        Profile::Paper => "full data sets".to_owned(),
        Profile::Quick => "kin8nm, naval and power subsampled to 1,000 rows (the shipped \
                           fixtures; quick-profile deviation)"
            .to_owned(),
        Profile::Smoke => format!(
            "the shipped fixtures of {} only, {} epochs and {} test samples (smoke profile: the \
             numbers mean nothing)",
            settings
                .sets
                .iter()
                .map(|s| s.name())
                .collect::<Vec<_>>()
                .join(", "),
            settings.epochs,
            settings.test_samples
        ),
    };
    let (b1, b2) = BETAS;
    let _ = write!(
        out,
        "One hidden layer of {HIDDEN} ReLU units computing in {}; Gaussian likelihood with a \
         fixed noise precision τ; inputs and targets standardised with the statistics of the rows each model \
         is trained on; {} epochs, α = {LEARNING_RATE}, betas ({b1}, {b2}); batch 32 with 10 \
         training MC samples (boston, concrete, energy, yacht), batch 128 with 5 (the others); \
         {} test MC samples. Vadam and VOGN start at precision {INIT_PRECISION}, BBVI at \
         σ₀ = 1/√{INIT_PRECISION} (the Vadam code's `prec_init`); VOGN uses β = 1 − γ₂ = {:.2}; MC \
         dropout: p = {DROPOUT} on the hidden units, MAP by Adam with the same α, betas, batches \
         and epochs, weight decay λ. (τ, λ) chosen per split and method from log τ ∈ {:?} × \
         log λ ∈ {:?} by the mean validation log-likelihood on {selection}. Data: {splits}; \
         {data}. Mean ± standard error over splits; RMSE and log-likelihood in the original \
         units. Paper columns: MC dropout from Gal & Ghahramani (2016) (their own training: 40 \
         epochs, p tuned); Vadam and BBVI RMSEs read off the paper's figure (approximate). A \
         final fit that blew up (its training loss after the last epoch more than ten times \
         the untrained network's) or diverged gives way to the next candidate in the selection's ranking; \
         {}.\n\n{}\n",
        settings.dtype,
        settings.epochs,
        settings.test_samples,
        1.0 - b2,
        settings.log_tau,
        settings.log_lambda,
        fallback_summary(rows),
        t.to_markdown()
    );
    out
}

/// The test RMSE of the final fits on the convergence set during training, and the epochs each
/// method needs to reach 110% of the best final RMSE of the three.
pub(super) fn convergence_table(rows: &[Row]) -> String {
    let curves = curves(rows);
    let Some(target) = target(&curves) else {
        return String::new();
    };
    let epochs = curves.first().map_or(0, |(_, c)| c.len());
    let checkpoints: Vec<usize> = [1, 5, 10, 20, 40]
        .into_iter()
        .filter(|&e| e <= epochs)
        .collect();
    let mut t = Table::new([
        "method".to_owned(),
        format!(
            "RMSE after {} epochs",
            checkpoints
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>()
                .join(" / ")
        ),
        "epochs to ≤ 110% of the best final RMSE".to_owned(),
    ]);
    for (which, c) in &curves {
        t.row([
            which.name().to_owned(),
            checkpoints
                .iter()
                .filter_map(|&e| c.get(e - 1))
                .map(|v| format!("{v:.2}"))
                .collect::<Vec<_>>()
                .join(" / "),
            reach(c, target).map_or("not reached".into(), |e| e.to_string()),
        ]);
    }
    format!(
        "## Convergence on {}\n\nTest RMSE of the final fits after each epoch (mean over splits; \
         `vadam-uci-convergence.svg`); the target is 110% of the best final RMSE of the three \
         ({target:.2}).\n\n{}",
        CONVERGENCE_SET.name(),
        t.to_markdown()
    )
}

pub(super) fn convergence_figure(rows: &[Row]) -> Figure {
    let colors = [
        (Which::Vogn, "#d62728"),
        (Which::Vadam, "#1f77b4"),
        (Which::Bbvi, "#2ca02c"),
    ];
    let mut panel = Panel::new(format!(
        "{}: test RMSE during training",
        CONVERGENCE_SET.name()
    ));
    panel.labels("epoch", "test RMSE");
    let curves = curves(rows);
    if let Some(target) = target(&curves) {
        let epochs = curves.iter().map(|(_, c)| c.len()).max().unwrap_or(1);
        let grey = "#7f7f7f";
        panel
            .line(&[1.0, epochs as f64], &[target, target], grey)
            .legend("110% of the best final", grey);
    }
    for (which, c) in curves {
        let color = colors
            .iter()
            .find(|(w, _)| *w == which)
            .map_or("#000000", |(_, c)| c);
        let xs: Vec<f64> = (1..=c.len()).map(|e| e as f64).collect();
        panel.line(&xs, &c, color).legend(which.name(), color);
    }
    Figure::new(1).panel(panel)
}
