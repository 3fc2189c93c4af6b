//! The report: a data set's section with the table of every method and minibatch size, and the
//! figure.

use bdl_eval::plot::{Figure, Panel};
use bdl_eval::table::Table;

use super::claims::{stat, vadam_sizes};
use super::settings::Settings;
use super::{Fitted, Row};

/// One data set's section: the setting and the table of every method and minibatch size.
pub(super) fn body(f: &Fitted, settings: &Settings) -> String {
    let rows = &f.rows;
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
    format!(
        "## {}\n\n{} training and {} test examples, {} features, λ = {}; {} restarts of {} steps \
         each, α_t = α/(1 + t^{}); mean ± standard error over restarts; MF-Exact maximises the \
         exact ELBO (Gauss–Hermite, {} points).\n\n{}",
        f.set.name(),
        f.n_train,
        f.n_test,
        f.features,
        f.set.lambda(),
        settings.restarts,
        settings.steps,
        settings.lr_decay,
        settings.quadrature_points,
        t.to_markdown()
    )
}

pub(super) const COLORS: [&str; 7] = [
    "#000000", "#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];

/// Box plots over restarts of the symmetric KL, the test log-loss and the ELBO by run; on the
/// toy set, the Gaussians over the exact posterior's contours.
pub(super) fn figure(f: &Fitted) -> Figure {
    let rows = &f.rows;
    let sizes = vadam_sizes(rows);
    // x = 0 for VOGN-1, then log2 M + 1 for Vadam at M.
    let runs: Vec<(&str, usize, f64)> = std::iter::once(("VOGN", 1, 0.0))
        .chain(sizes.iter().map(|&m| ("Vadam", m, (m as f64).log2() + 1.0)))
        .collect();
    let boxes = |title: &str, y: &str, field: fn(&Row) -> f64| {
        let mut panel = Panel::new(format!("{title}, {}", f.set.name()));
        panel.labels("0: VOGN-1; log2 M + 1: Vadam-M", y);
        for &(method, m, x) in &runs {
            let values: Vec<f64> = rows
                .iter()
                .filter(|r| r.method == method && r.batch_size == m)
                .map(field)
                .collect();
            panel.boxes(
                x,
                &values,
                if method == "VOGN" {
                    "#d62728"
                } else {
                    "#1f77b4"
                },
            );
        }
        panel
    };
    let mut figure = Figure::new(2)
        .panel(boxes("symmetric KL to MF-Exact", "sym. KL", |r| {
            r.symmetric_kl
        }))
        .panel(boxes("test log-loss", "log-loss", |r| r.test_log_loss))
        .panel(boxes("training ELBO", "ELBO", |r| r.elbo));
    if let Some(toy) = &f.toy {
        let (xs, ys, values) = &toy.grid;
        let peak = values
            .iter()
            .flatten()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        let mut panel = Panel::new("the posterior of the toy set: exact and mean-field");
        panel.labels("w₁", "w₂").y_range(ys[0], ys[ys.len() - 1]);
        // Where a Gaussian's density is e^{-k²/2} of its peak: k = 1, 2, 3.
        for k in [1.0, 2.0, 3.0] {
            panel.contour(xs, ys, values, peak - 0.5 * k * k, "#999999");
        }
        panel.legend("exact posterior (1, 2, 3 sd)", "#999999");
        for ((name, q), color) in toy.gaussians.iter().zip(COLORS.iter().cycle()) {
            for k in [1.0, 2.0] {
                let (ex, ey): (Vec<f64>, Vec<f64>) = (0..=64)
                    .map(|i| {
                        let t = std::f64::consts::TAU * i as f64 / 64.0;
                        (
                            q.mean[0] + k * q.var[0].sqrt() * t.cos(),
                            q.mean[1] + k * q.var[1].sqrt() * t.sin(),
                        )
                    })
                    .unzip();
                panel.line(&ex, &ey, color);
            }
            panel.legend(name.clone(), color);
        }
        figure = figure.panel(panel);
    }
    figure
}
