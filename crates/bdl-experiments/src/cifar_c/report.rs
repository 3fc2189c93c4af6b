//! The report: the summary and per-severity tables, and the figure (test LL, error, ECE and
//! Brier against the severity, with bands over seeds).

use bdl_eval::metrics::MeanSe;
use bdl_eval::plot::{Figure, Panel};
use bdl_eval::table::Table;

use super::settings::{Images, Settings};
use super::{AtSeverity, Method, Row};
use crate::report::mean_with_band;

/// One score at one severity.
type Metric = fn(&AtSeverity) -> f64;

pub(super) fn log_lik(s: &AtSeverity) -> f64 {
    s.log_lik
}

pub(super) fn error(s: &AtSeverity) -> f64 {
    s.error
}

fn ece(s: &AtSeverity) -> f64 {
    s.ece
}

fn brier(s: &AtSeverity) -> f64 {
    s.brier
}

/// The rows of `method`.
pub(super) fn of(rows: &[Row], method: Method) -> impl Iterator<Item = &Row> {
    rows.iter().filter(move |r| r.method == method)
}

/// The methods present in the rows, in table order.
fn present(rows: &[Row]) -> Vec<Method> {
    (Method::ALL.into_iter())
        .filter(|&m| of(rows, m).next().is_some())
        .collect()
}

/// Mean ± standard error over seeds of `metric` at severity index `s`.
fn at(rows: &[Row], method: Method, s: usize, metric: Metric) -> MeanSe {
    MeanSe::of(
        &of(rows, method)
            .map(|r| metric(&r.scores[s]))
            .collect::<Vec<_>>(),
    )
}

/// Mean ± standard error over seeds of `metric` averaged over the corrupted severities 1–5.
fn corrupted(rows: &[Row], method: Method, metric: Metric) -> MeanSe {
    let mean =
        |r: &Row| r.scores[1..].iter().map(metric).sum::<f64>() / (r.scores.len() - 1) as f64;
    MeanSe::of(&of(rows, method).map(mean).collect::<Vec<_>>())
}

pub(super) fn body(rows: &[Row], settings: &Settings) -> String {
    let (n_fit, n_val) = settings.split();
    let mut summary = Table::new([
        "method",
        "runs",
        "test LL, clean",
        "test LL, severities 1–5",
        "error, clean",
        "error, severities 1–5",
        "ECE, severities 1–5",
        "Brier, severities 1–5",
        "λ chosen",
        "fit (s)",
        "evaluate (s)",
    ]);
    let seconds = |m, f: fn(&Row) -> f64| -> f64 {
        let v: Vec<f64> = of(rows, m).map(f).collect();
        v.iter().sum::<f64>() / v.len() as f64
    };
    for m in present(rows) {
        let lambdas: Vec<String> = of(rows, m)
            .filter_map(|r| r.lambda.map(|l| format!("{l:.3}")))
            .collect();
        summary.row([
            m.name().to_owned(),
            of(rows, m).count().to_string(),
            format!("{:.3}", at(rows, m, 0, log_lik)),
            format!("{:.3}", corrupted(rows, m, log_lik)),
            format!("{:.3}", at(rows, m, 0, error)),
            format!("{:.3}", corrupted(rows, m, error)),
            format!("{:.3}", corrupted(rows, m, ece)),
            format!("{:.3}", corrupted(rows, m, brier)),
            if lambdas.is_empty() {
                "–".into()
            } else {
                lambdas.join(", ")
            },
            format!("{:.1}", seconds(m, |r| r.fit_s)),
            format!("{:.1}", seconds(m, |r| r.eval_s)),
        ]);
    }
    let severities = rows.first().map_or(0, |r| r.scores.len());
    let mut by_severity = Table::new(
        std::iter::once("method".to_owned())
            .chain((0..severities).map(|s| format!("severity {s}"))),
    );
    for m in present(rows) {
        by_severity.row(
            std::iter::once(m.name().to_owned())
                .chain((0..severities).map(|s| format!("{:.3}", at(rows, m, s, log_lik)))),
        );
    }
    let warning = match settings.images {
        Images::Synthetic => {
            "**Synthetic images** (the smoke profile): the run checks that every method works \
             end to end; its numbers mean nothing.\n\n"
        }
        Images::Fetched => "",
    };
    let net = &settings.network;
    format!(
        "{warning}{} training images ({} more held out for the Laplace family's λ); {} clean \
         test images and the same under each of {} corruptions ({}) at severities 1–5, each \
         severity's scores the mean over the corruptions; {} seeds (mean ± standard error). \
         ResNet (widths {:?}, blocks {:?}, BatchNorm at fixed statistics): {}.\n\n{}\n\
         ## Test log-likelihood against the corruption severity (mean over seeds)\n\n{}",
        n_fit,
        n_val,
        settings.test_images.map_or("all".into(), |n| n.to_string()),
        settings.corruptions.len(),
        (settings.corruptions.iter())
            .map(|c| c.name())
            .collect::<Vec<_>>()
            .join(", "),
        settings.seeds,
        net.widths,
        net.blocks,
        settings.fits.describe("VOGN"),
        summary.to_markdown(),
        by_severity.to_markdown(),
    )
}

/// Test log-likelihood, error, ECE and Brier against the severity, a line per method over a
/// band of ± one standard error over seeds (the paper's Fig. 4, right-hand panels).
pub(super) fn figure(rows: &[Row]) -> Figure {
    let panels: [(&str, Metric); 4] = [
        ("test log-likelihood", log_lik),
        ("test error", error),
        ("ECE", ece),
        ("Brier score", brier),
    ];
    let severities = rows.first().map_or(0, |r| r.scores.len());
    let xs: Vec<f64> = (0..severities).map(|s| s as f64).collect();
    let mut figure = Figure::new(2);
    for (i, (title, metric)) in panels.into_iter().enumerate() {
        let mut panel = Panel::new(title);
        panel.labels("corruption severity (0: clean)", title);
        for m in present(rows) {
            let stats: Vec<MeanSe> = (0..severities).map(|s| at(rows, m, s, metric)).collect();
            mean_with_band(&mut panel, &xs, &stats, m.color());
            if i == 0 {
                panel.legend(m.name(), m.color()); // one legend for the four panels
            }
        }
        figure = figure.panel(panel);
    }
    figure
}
