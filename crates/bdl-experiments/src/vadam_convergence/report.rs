//! The report: the table of curves at chosen epochs and the figure of test log-loss and
//! accuracy against epochs and seconds.

use bdl_eval::metrics::MeanSe;
use bdl_eval::plot::{Figure, Panel};
use bdl_eval::table::Table;

use super::settings::Settings;
use super::{Row, accuracy, at_epoch, log_loss, method_names, seconds};

pub(super) fn body(rows: &[Row], settings: &Settings, n_train: usize, n_test: usize) -> String {
    let (early, last) = (settings.compare_at - 1, settings.epochs - 1);
    let mut text = format!(
        "{n_train} training and {n_test} test examples; MLP {:?} (ReLU, one logit), λ = {}, \
         {} epochs, {} restarts (mean ± standard error).\n",
        settings.widths, settings.prior_precision, settings.epochs, settings.restarts,
    );
    for protocol in &settings.protocols {
        let mut t = Table::new([
            "method".to_owned(),
            format!("test log-loss, epoch {}", settings.compare_at),
            format!("test log-loss, epoch {}", settings.epochs),
            format!("accuracy, epoch {}", settings.epochs),
            format!("training time of {} epochs (s)", settings.epochs),
        ]);
        for name in method_names(protocol) {
            let at = |e, curve| at_epoch(rows, protocol, name, 1.0, e, curve);
            t.row([
                name.to_owned(),
                format!("{:.4}", at(early, log_loss)),
                format!("{:.4}", at(last, log_loss)),
                format!("{:.3}", at(last, accuracy)),
                format!("{:.2}", at(last, seconds)),
            ]);
        }
        text += &format!(
            "\n## The {} protocol\n\nInitial precision {}, minibatches of {}, {} weight \
             sample(s) per step; the test predictive averages {} weight samples.\n\n{}",
            protocol.name,
            protocol.init_precision,
            protocol.batch_size,
            protocol.mc_samples,
            protocol.test_samples,
            t.to_markdown(),
        );
    }
    let common = &settings.protocols[0];
    let mut tau = Table::new(["τ", "test log-loss", "accuracy"]);
    for &k in &settings.kl_weights {
        tau.row([
            format!("{k}"),
            format!("{:.4}", at_epoch(rows, common, "Vadam", k, last, log_loss)),
            format!("{:.3}", at_epoch(rows, common, "Vadam", k, last, accuracy)),
        ]);
    }
    text += &format!(
        "\n## Vadam between inference (τ = 1) and optimisation (τ = 0), after {} epochs \
         ({} protocol)\n\n{}",
        settings.epochs,
        common.name,
        tau.to_markdown()
    );
    text
}
pub(super) const COLORS: [&str; 4] = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd"];

/// A row of three panels per protocol (test log-loss and accuracy against epochs, test
/// log-loss against training time), then Vadam against τ.
pub(super) fn figure(rows: &[Row], settings: &Settings) -> Figure {
    let epochs: Vec<f64> = (1..=settings.epochs).map(|e| e as f64).collect();
    let mut figure = Figure::new(3);
    for protocol in &settings.protocols {
        // Short titles: a panel is a third of the figure's width.
        let title = |what: &str| format!("{what}, {} protocol", protocol.name);
        let mut by_epoch = Panel::new(title("log-loss by epoch"));
        by_epoch.labels("epoch", "test log-loss");
        let mut acc = Panel::new(title("accuracy by epoch"));
        acc.labels("epoch", "accuracy");
        let mut by_time = Panel::new(title("log-loss by time"));
        by_time.labels("seconds (one thread)", "test log-loss");
        for (name, color) in method_names(protocol).into_iter().zip(COLORS) {
            let curve = |c: fn(&Row) -> &[f64]| -> (Vec<f64>, Vec<f64>, Vec<f64>) {
                let stats: Vec<MeanSe> = (0..settings.epochs)
                    .map(|e| at_epoch(rows, protocol, name, 1.0, e, c))
                    .collect();
                (
                    stats.iter().map(|s| s.mean).collect(),
                    stats.iter().map(|s| s.mean - s.se).collect(),
                    stats.iter().map(|s| s.mean + s.se).collect(),
                )
            };
            let (loss, lo, hi) = curve(log_loss);
            by_epoch
                .band(&epochs, &lo, &hi, color)
                .line(&epochs, &loss, color)
                .legend(name, color);
            let (a, lo, hi) = curve(accuracy);
            acc.band(&epochs, &lo, &hi, color)
                .line(&epochs, &a, color)
                .legend(name, color);
            let (time, _, _) = curve(seconds);
            by_time.line(&time, &loss, color).legend(name, color);
        }
        figure = figure.panel(by_epoch).panel(acc).panel(by_time);
    }
    let (taus, common) = (&settings.kl_weights, &settings.protocols[0]);
    let last = settings.epochs - 1;
    let tau_curve = |c: fn(&Row) -> &[f64]| -> Vec<f64> {
        taus.iter()
            .map(|&k| at_epoch(rows, common, "Vadam", k, last, c).mean)
            .collect()
    };
    let mut tau_loss = Panel::new("Vadam: test log-loss against τ");
    tau_loss
        .labels("τ (0 optimisation, 1 inference)", "test log-loss")
        .line(taus, &tau_curve(log_loss), COLORS[1])
        .points(taus, &tau_curve(log_loss), COLORS[1]);
    let mut tau_acc = Panel::new("Vadam: test accuracy against τ");
    tau_acc
        .labels("τ (0 optimisation, 1 inference)", "accuracy")
        .line(taus, &tau_curve(accuracy), COLORS[1])
        .points(taus, &tau_curve(accuracy), COLORS[1]);
    figure.panel(tau_loss).panel(tau_acc)
}
