//! The report: the per-angle tables, the evidence section and the figures (test LL, error, ECE
//! and Brier against the angle; reliability).

use bdl_eval::metrics::MeanSe;
use bdl_eval::plot::{Figure, Panel};
use bdl_eval::table::Table;

use super::claims::subnet_claims;
use super::settings::{ResnetRows, Settings};
use super::{AtAngle, Key, Method, Prepared, RESNET_METHODS, Row};
use crate::Profile;
use crate::report::mean_with_band;

/// A prior precision in three significant digits ("3.16e4").
pub(super) fn short(lambda: f64) -> String {
    format!("{lambda:.2e}")
}

/// One score of a method at one angle.
pub(super) type Metric = fn(&AtAngle) -> f64;

/// The rows of `method`.
pub(super) fn of(rows: &[Row], method: impl Into<Key>) -> impl Iterator<Item = &Row> {
    let method = method.into();
    rows.iter().filter(move |r| r.method == method)
}

/// Mean ± standard error over seeds of `metric` at angle index `a` of `method`.
pub(super) fn at(rows: &[Row], method: impl Into<Key>, a: usize, metric: Metric) -> MeanSe {
    let values: Vec<f64> = of(rows, method).map(|r| metric(&r.scores[a])).collect();
    MeanSe::of(&values)
}

/// One row's `metric` averaged over every angle.
pub(super) fn over_angles(row: &Row, metric: Metric) -> f64 {
    row.scores.iter().map(metric).sum::<f64>() / row.scores.len() as f64
}

/// Mean ± standard error over seeds of `metric` averaged over every angle.
pub(super) fn averaged(rows: &[Row], method: impl Into<Key>, metric: Metric) -> MeanSe {
    let values: Vec<f64> = of(rows, method).map(|r| over_angles(r, metric)).collect();
    MeanSe::of(&values)
}

pub(super) fn log_lik(s: &AtAngle) -> f64 {
    s.log_lik
}

pub(super) fn error(s: &AtAngle) -> f64 {
    s.error
}

pub(super) fn ece(s: &AtAngle) -> f64 {
    s.ece
}

pub(super) fn brier(s: &AtAngle) -> f64 {
    s.brier
}

/// The methods present in the rows, in table order: the experiment's own, the ResNet rows,
/// then the listed ones in the order of their first row.
pub(super) fn present(rows: &[Row]) -> Vec<Key> {
    let own = Method::ALL.into_iter().map(Key::Own);
    let resnet = (RESNET_METHODS.into_iter()).map(|resnet| Key::Resnet { resnet });
    let mut keys: Vec<Key> = own
        .chain(resnet)
        .filter(|k| rows.iter().any(|r| r.method == *k))
        .collect();
    for row in rows {
        if matches!(row.method, Key::Listed { .. }) && !keys.contains(&row.method) {
            keys.push(row.method.clone());
        }
    }
    keys
}

pub(super) fn body(rows: &[Row], settings: &Settings, data: &Prepared) -> String {
    let mean = |m: &Key, f: fn(&Row) -> f64| -> MeanSe {
        MeanSe::of(&of(rows, m).map(f).collect::<Vec<_>>())
    };
    let mut summary = Table::new([
        "method",
        "model",
        "runs",
        "test LL at 0°",
        "test LL, mean over angles",
        "error at 0°",
        "error, mean over angles",
        "ECE, mean",
        "Brier, mean",
        "OOD AUROC (Fashion-MNIST)",
        "λ chosen",
        "fit (s)",
        "evaluate (s)",
    ]);
    for m in &present(rows) {
        let lambdas: Vec<String> = of(rows, m).filter_map(|r| r.lambda.map(short)).collect();
        summary.row([
            m.name().to_owned(),
            m.model().to_owned(),
            of(rows, m).count().to_string(),
            format!("{:.3}", at(rows, m, 0, log_lik)),
            format!("{:.3}", averaged(rows, m, log_lik)),
            format!("{:.3}", at(rows, m, 0, error)),
            format!("{:.3}", averaged(rows, m, error)),
            format!("{:.3}", averaged(rows, m, ece)),
            format!("{:.3}", averaged(rows, m, brier)),
            format!("{:.3}", mean(m, |r| r.ood_auroc)),
            if lambdas.is_empty() {
                "–".into()
            } else {
                lambdas.join(", ")
            },
            format!("{:.1}", mean(m, |r| r.fit_s).mean),
            format!("{:.1}", mean(m, |r| r.eval_s).mean),
        ]);
    }
    let mut by_angle = Table::new(
        std::iter::once("method".to_owned()).chain(settings.angles.iter().map(|a| format!("{a}°"))),
    );
    for m in &present(rows) {
        by_angle.row(std::iter::once(m.name().to_owned()).chain(
            (0..settings.angles.len()).map(|a| format!("{:.3}", at(rows, m, a, log_lik).mean)),
        ));
    }
    format!(
        "{} training images ({} more held out for the Laplace family's λ), {} test images at \
         each of {} angles, {} Fashion-MNIST test images as OOD inputs; {} seeds (mean ± \
         standard error; the Gibbs chain is one). LeNet-5: {}. Blocked Gibbs: `gibbs-mnist`'s \
         main MNIST chain.\n\n{}\n\
         ## Test log-likelihood against the rotation angle (mean over seeds)\n\n{}",
        data.fit.len(),
        data.val.len(),
        data.inputs.labels.dims()[0],
        settings.angles.len(),
        data.inputs.fashion.dims()[0],
        settings.seeds,
        settings.fits.describe("VOGN, Vadam and IVON"),
        summary.to_markdown(),
        by_angle.to_markdown(),
    ) + &evidence_section(rows)
}

/// What the ResNet rows are, where the run has them, and why a paper run has none.
pub(super) fn resnet_note(resnet: Option<&ResnetRows>, profile: Profile) -> String {
    let Some(r) = resnet else {
        return match profile {
            Profile::Paper => "\nNo ResNet rows: this run was on the CPU, and the paper \
                               profile's ResNet-18 rows run on a GPU only (`--device cuda:N`).\n"
                .into(),
            Profile::Smoke | Profile::Quick => String::new(),
        };
    };
    format!(
        "\nThe ResNet rows: a ResNet (widths {:?}, blocks {:?}, CIFAR stem, batch normalisations \
         at fixed statistics) on the same images, its MAP trained as LeNet-5's; its diagonal \
         Laplace, SWAG and subnetworks of {} weights from that MAP, λ chosen on the validation \
         images.\n",
        r.network.widths, r.network.blocks, r.subnet_size
    )
}

/// The rows with every Laplace posterior's scores replaced by those of the same posterior with
/// λ by the marginal likelihood (the other methods unchanged).
pub(super) fn with_evidence_lambda(rows: &[Row]) -> Vec<Row> {
    rows.iter()
        .map(|r| match &r.evidence {
            Some(alt) => Row {
                lambda: Some(alt.lambda),
                scores: alt.scores.clone(),
                evidence: None,
                ..r.clone()
            },
            None => r.clone(),
        })
        .collect()
}

/// The investigation of the claim: the Laplace family with λ by the marginal likelihood
/// instead of the validation log-likelihood, and the paper's two criteria on those rows.
pub(super) fn evidence_section(rows: &[Row]) -> String {
    let alt = with_evidence_lambda(rows);
    let laplace: Vec<Key> = present(rows)
        .into_iter()
        .filter(|m| of(rows, m).any(|r| r.evidence.is_some()))
        .collect();
    if laplace.is_empty() {
        return String::new();
    }
    let mut t = Table::new([
        "method",
        "λ by validation",
        "λ by evidence",
        "test LL at 0° (validation λ → evidence λ)",
        "test LL, mean over angles",
        "error, mean over angles",
    ]);
    let lambdas = |rows: &[Row], m| -> String {
        let l: Vec<String> = of(rows, m).filter_map(|r| r.lambda.map(short)).collect();
        l.join(", ")
    };
    for m in &laplace {
        t.row([
            m.name().to_owned(),
            lambdas(rows, m),
            lambdas(&alt, m),
            format!(
                "{:.3} → {:.3}",
                at(rows, m, 0, log_lik).mean,
                at(&alt, m, 0, log_lik).mean
            ),
            format!(
                "{:.3} → {:.3}",
                averaged(rows, m, log_lik).mean,
                averaged(&alt, m, log_lik).mean
            ),
            format!(
                "{:.3} → {:.3}",
                averaged(rows, m, error).mean,
                averaged(&alt, m, error).mean
            ),
        ]);
    }
    let verdicts: Vec<String> =
        subnet_claims(&alt, Method::SubnetWasserstein, Method::SubnetRandom, "")
            .iter()
            .map(|c| format!("- {}: {} ({})", c.statement, c.verdict.name(), c.ours))
            .collect();
    format!(
        "\n## The Laplace family with λ by the marginal likelihood (an investigation)\n\n\
         Each Laplace posterior again with λ from the same grid chosen by its Laplace marginal \
         likelihood on the training images instead of the validation log-likelihood (nothing \
         else changes).\n\n{}\nThe paper's two criteria on these rows (the other methods as \
         above):\n\n{}\n",
        t.to_markdown(),
        verdicts.join("\n")
    )
}
/// Test log-likelihood, error, ECE and Brier against the angle, a line per method with a band
/// of ± one standard error over seeds.
pub(super) fn figure(rows: &[Row], settings: &Settings) -> Figure {
    let panels: [(&str, Metric); 4] = [
        ("test log-likelihood", log_lik),
        ("test error", error),
        ("ECE", ece),
        ("Brier score", brier),
    ];
    let xs = &settings.angles;
    let mut figure = Figure::new(2);
    for (i, (title, metric)) in panels.into_iter().enumerate() {
        let mut panel = Panel::new(title);
        panel.labels("rotation (degrees)", title);
        for m in &present(rows) {
            let stats: Vec<MeanSe> = (0..xs.len()).map(|a| at(rows, m, a, metric)).collect();
            mean_with_band(&mut panel, xs, &stats, m.color(rows));
            if i == 0 {
                panel.legend(m.name(), m.color(rows)); // one legend for the four panels
            }
        }
        figure = figure.panel(panel);
    }
    figure
}

/// Reliability diagrams of every method's first run at each angle of `reliability_at`.
pub(super) fn reliability_figure(rows: &[Row], settings: &Settings) -> Figure {
    let mut figure = Figure::new(4);
    for &angle in &settings.reliability_at {
        for m in &present(rows) {
            let first = of(rows, m).next().expect("present");
            if let Some(r) = first.reliability.iter().find(|r| r.angle == angle) {
                figure = figure.panel(Panel::reliability(
                    format!("{}, {angle}°", m.name()),
                    &r.bins,
                ));
            }
        }
    }
    figure
}
