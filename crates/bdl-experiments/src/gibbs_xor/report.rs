//! The report: the data table and the figure of the chains.

use bdl_eval::plot::{Figure, Panel};
use bdl_eval::table::Table;

use super::settings::Settings;
use super::{
    CURVATURE_DRAWS, DEEP, FILTERS, MINIBATCH_VARIANCE, Row, SHALLOW, WIDE, find, list, name,
};

/// The data table and what it shows (the claims are the report's).
pub(super) fn table(rows: &[Row], settings: &Settings, n_train: usize, n_test: usize) -> String {
    let mut t = Table::new([
        "network",
        "scenario",
        "chains kept",
        "acceptance per layer (mean over chains)",
        "predicted from the curvature",
        "lowest block acceptance (range over chains)",
        "test accuracy (mean ± se over chains)",
        "wall time, all chains (s)",
    ]);
    for r in rows {
        let range = if r.min_block_acceptance.is_empty() {
            "–".to_owned()
        } else {
            let lo = r.min_block_acceptance.iter().copied().fold(1.0, f64::min);
            let hi = r.min_block_acceptance.iter().copied().fold(0.0, f64::max);
            format!("{lo:.3} – {hi:.3}")
        };
        let time = r
            .timing
            .as_ref()
            .map_or_else(|| "–".to_owned(), |t| format!("{:.1}", t.wall_s));
        t.row([
            r.network.clone(),
            r.scenario.clone(),
            format!("{} of {}", r.chains_kept.len(), r.chains_run),
            r.mean_layer_acceptance
                .as_ref()
                .map_or_else(|| "–".to_owned(), |a| list(a, 3)),
            r.mean_predicted_layer_acceptance
                .as_ref()
                .map_or_else(|| "–".to_owned(), |a| list(a, 2)),
            range,
            match (r.mean_test_accuracy, r.se_test_accuracy) {
                (Some(m), Some(se)) => format!("{m:.3} ± {se:.3}"),
                _ => "–".to_owned(),
            },
            time,
        ]);
    }
    format!(
        "{n_train} training and {n_test} test points; sigmoid MLPs with a Bernoulli (logit) \
         output, prior N(0, 10 I), θ₀ from the prior, f32. {} iterations per chain (one sweep \
         over all blocks each); acceptance from iteration {} on; test accuracy of each chain's \
         Bayesian marginal over its last {} iterations (every {}th draw). Scenarios (3) and (4) \
         are the chains of (2) whose every block accepts at least {} / {}. Wall times: all \
         chains of a run in parallel on this machine's cores. The wide network's exact runs: \
         one chain of {} iterations each. Predicted from the curvature: \
         2Φ(−½√(v · tr H_b)) per block, H_b the prior's 1/s² plus the GGN diagonal of the \
         log-likelihood over the data one ratio sees (B/N of the training set's), averaged over \
         each layer's blocks and {CURVATURE_DRAWS} kept draws per chain: the rate of a random walk \
         on a locally Gaussian target.\n\n{}",
        settings.iterations,
        settings.burn_in,
        settings.predict_last,
        settings.thin,
        FILTERS[0].1,
        FILTERS[1].1,
        settings.wide_exact_iterations,
        t.to_markdown(),
    )
}

pub(super) const COLORS: [&str; 4] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"];

pub(super) fn figure(rows: &[Row]) -> Figure {
    let layers = |r: &Row| -> (Vec<f64>, Vec<f64>) {
        let a = r.mean_layer_acceptance.clone().unwrap_or_default();
        ((1..=a.len()).map(|l| l as f64).collect(), a)
    };
    // Acceptance by layer at the common variance.
    let mut depth = Panel::new(format!("minibatch NBG, v = {MINIBATCH_VARIANCE}"));
    depth.labels("layer", "acceptance rate").y_range(0.0, 1.0);
    for (network, color) in [SHALLOW, DEEP].into_iter().zip(COLORS) {
        let (xs, ys) = layers(find(rows, network, "(1)"));
        depth
            .line(&xs, &ys, color)
            .points(&xs, &ys, color)
            .legend(name(network), color);
    }
    // Layer against node blocks.
    let mut blocking = Panel::new(format!(
        "NBG (lines) vs LBG (points), v = {MINIBATCH_VARIANCE}"
    ));
    blocking
        .labels("layer", "acceptance rate")
        .y_range(0.0, 1.0);
    for (network, color) in [SHALLOW, DEEP, WIDE].into_iter().zip(COLORS) {
        let (xs, ys) = layers(find(
            rows,
            network,
            if network == WIDE {
                "minibatch NBG"
            } else {
                "(1)"
            },
        ));
        blocking.line(&xs, &ys, color).legend(name(network), color);
        let (xs, ys) = layers(find(rows, network, "minibatch LBG"));
        blocking.points(&xs, &ys, color);
    }
    // Test accuracy of every chain by scenario.
    let mut accuracy = Panel::new("test accuracy per chain");
    accuracy.labels("scenario (1)–(4)", "accuracy");
    for (k, (network, color)) in [SHALLOW, DEEP].into_iter().zip(COLORS).enumerate() {
        let net = name(network);
        for (s, scenario) in ["(1)", "(2)", "(3)", "(4)"].iter().enumerate() {
            let r = find(rows, network, scenario);
            let x = s as f64 + 1.0 + if k == 0 { -0.1 } else { 0.1 };
            let xs = vec![x; r.test_accuracy.len()];
            accuracy.points(&xs, &r.test_accuracy, color);
        }
        accuracy.legend(net, color);
    }
    Figure::new(3).panel(depth).panel(blocking).panel(accuracy)
}

/// A scenario's label as a folder name: from its first letter on, letters, digits and `.` kept,
/// every run of anything else one `-` ("(2) exact NBG, v = 0.04" → "exact-NBG-v-0.04").
pub(super) fn folder_name(scenario: &str) -> String {
    let mut name = String::new();
    for c in scenario
        .trim_start_matches(|c: char| !c.is_alphabetic())
        .chars()
    {
        if c.is_ascii_alphanumeric() || c == '.' {
            name.push(c);
        } else if !name.ends_with('-') {
            name.push('-');
        }
    }
    name.trim_end_matches('-').to_owned()
}
