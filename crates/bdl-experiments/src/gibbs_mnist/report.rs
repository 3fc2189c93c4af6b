//! The report: the per-collection section, the data table and the figure of the chains.

use anyhow::Result;
use bdl_data::Dataset;
use bdl_data::mnist::Collection;
use bdl_eval::plot::{Figure, Panel};
use bdl_eval::table::Table;

use super::claims::{claims, log_target_variability, trace_claims, weight_spread};
use super::settings::Settings;
use super::{Row, Traces, main_order, main_rows};
use crate::gibbs_xor::list;
use crate::{Context, Outcome};

/// The outcome of the sampled chains: a section, claims and a figure per collection.
pub(super) fn report(
    ctx: &Context,
    data: &[(Collection, Dataset, Dataset)],
    settings: &Settings,
    rows: &[Row],
    traces: &[Traces],
) -> Result<Outcome> {
    for row in rows {
        ctx.log(format!(
            "{}, batch {}, {}: {} iterations in {:.1} s",
            row.data.folder(),
            row.batch_size,
            row.blocking.abbreviation(),
            row.iterations,
            row.wall_s
        ));
    }
    let (train_sizes, test_sizes): (Vec<usize>, Vec<usize>) =
        data.iter().map(|(_, tr, te)| (tr.len(), te.len())).unzip();
    let mut body = String::new();
    let mut claims_all = Vec::new();
    let mut figures = Vec::new();
    for (d, (collection, _, _)) in data.iter().enumerate() {
        let mine: Vec<usize> = (0..rows.len())
            .filter(|&i| rows[i].data == *collection)
            .collect();
        let of = |i: &usize| &rows[*i];
        let these: Vec<&Row> = mine.iter().map(of).collect();
        let name = title_of(*collection);
        body.push_str(&format!(
            "## {name}\n\n{}\n",
            table(&these, settings, train_sizes[d], test_sizes[d])
        ));
        let its: Vec<&Traces> = mine.iter().map(|&i| &traces[i]).collect();
        let main: Vec<(&Row, &Traces)> = main_order(&these)
            .into_iter()
            .map(|i| (these[i], its[i]))
            .collect();
        let mut these_claims = claims(&these, test_sizes[d]);
        these_claims.extend(trace_claims(&main, train_sizes[d]));
        claims_all.extend(these_claims.into_iter().map(|mut c| {
            c.statement = format!("{name}: {}", c.statement);
            c
        }));
        figures.push((
            format!("gibbs-{}.svg", collection.folder()),
            figure(&these, &its).to_svg(),
        ));
    }
    let mut outcome = Outcome::new(
        "gibbs-mnist: blocked Gibbs for MLP(784, 10, 10, 10, 10) on MNIST and Fashion-MNIST",
        settings,
        &rows,
    )?
    .body(body)
    .claims(claims_all);
    for (name, svg) in figures {
        outcome = outcome.figure(name, svg);
    }
    Ok(outcome)
}

/// The collection's name in titles.
pub(super) fn title_of(collection: Collection) -> &'static str {
    match collection {
        Collection::Mnist => "MNIST",
        Collection::FashionMnist => "Fashion-MNIST",
    }
}
/// The data tables and what they show (the claims are the report's).
pub(super) fn table(rows: &[&Row], settings: &Settings, n_train: usize, n_test: usize) -> String {
    let mut t = Table::new([
        "batch size",
        "blocks",
        "proposal variances",
        "acceptance per layer",
        "lowest block acceptance",
        "median ESS per layer",
        "test accuracy",
        "wall time (s)",
        "ms / iteration",
    ]);
    for r in rows {
        t.row([
            r.batch_size.to_string(),
            r.blocking.abbreviation().to_owned(),
            r.proposal_variances
                .iter()
                .map(|v| format!("{v:.2e}"))
                .collect::<Vec<_>>()
                .join(", "),
            list(&r.layer_acceptance, 3),
            format!("{:.3}", r.min_block_acceptance),
            r.ess
                .iter()
                .map(|l| {
                    l.median
                        .map_or_else(|| "–".to_owned(), |m| format!("{m:.0}"))
                })
                .collect::<Vec<_>>()
                .join(", "),
            format!("{:.3}", r.test_accuracy),
            format!("{:.1}", r.wall_s),
            format!("{:.2}", r.ms_per_iteration),
        ]);
    }
    let main: Vec<&Row> = rows
        .iter()
        .copied()
        .filter(|r| r.blocking == settings.blocking)
        .collect();
    let mut header = vec!["batch size".to_owned()];
    header.extend(settings.last_k.iter().map(|k| format!("last {k}")));
    header.extend(settings.stops.iter().map(|t| format!("stopped at {t}")));
    let mut lengths = Table::new(header);
    for r in &main {
        let mut cells = vec![r.batch_size.to_string()];
        cells.extend(r.accuracy_last.iter().map(|a| format!("{:.3}", a.accuracy)));
        cells.extend(
            r.accuracy_stopped_at
                .iter()
                .map(|a| format!("{:.3}", a.accuracy)),
        );
        lengths.row(cells);
    }
    format!(
        "{n_train} training and {n_test} test images, pixels standardised globally; sigmoid \
         hidden units, softmax output, prior N(0, 10 I), θ₀ from the prior (the same at every \
         batch size), f32; class-stratified minibatches, blocks `{}` (and one chain of layer \
         blocks, LBG, for comparison); one chain of {} iterations per batch size; acceptance \
         from iteration {} on; the Bayesian marginal over the draws of the last {} iterations, \
         one draw recorded every {}.\n\n{}\n\
         ## Chain length: test accuracy from the last K iterations, and of the chain stopped at \
         t (the draws of its last {} iterations)\n\n{}",
        serde_json::to_string(&settings.blocking).unwrap_or_default(),
        settings.iterations,
        settings.burn_in,
        settings.window,
        settings.record_every,
        t.to_markdown(),
        settings.window,
        lengths.to_markdown(),
    )
}

pub(super) const COLORS: [&str; 5] = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"];

pub(super) fn figure(rows: &[&Row], traces: &[&Traces]) -> Figure {
    let main = main_rows(rows);
    let batches: Vec<f64> = main.iter().map(|r| r.batch_size as f64).collect();
    let accuracies: Vec<f64> = main.iter().map(|r| r.test_accuracy).collect();
    let mut by_batch = Panel::new("test accuracy vs batch size");
    by_batch
        .labels("batch size", "accuracy")
        .line(&batches, &accuracies, COLORS[0])
        .points(&batches, &accuracies, COLORS[0]);
    let mut stopped = Panel::new("accuracy of the chain stopped at t");
    stopped.labels("t (iterations)", "accuracy");
    let mut acceptance = Panel::new("acceptance per layer");
    acceptance
        .labels("layer", "acceptance rate")
        .y_range(0.0, 1.0);
    for (r, color) in rows.iter().zip(COLORS.iter().cycle()) {
        let (xs, ys): (Vec<f64>, Vec<f64>) = r
            .accuracy_stopped_at
            .iter()
            .map(|a| (a.iterations as f64, a.accuracy))
            .unzip();
        let label = format!("{}, batch {}", r.blocking.abbreviation(), r.batch_size);
        stopped
            .line(&xs, &ys, color)
            .points(&xs, &ys, color)
            .legend(label.clone(), color);
        let layers: Vec<f64> = (1..=r.layer_acceptance.len()).map(|l| l as f64).collect();
        acceptance
            .line(&layers, &r.layer_acceptance, color)
            .points(&layers, &r.layer_acceptance, color)
            .legend(label, color);
    }
    // Fig. 5 and Fig. 6: each layer's weight spread per chain, the log-target's variability
    // against batch size; and the median ESS per layer.
    let mut spread = Panel::new("spread of a weight along the chain, per layer");
    spread.labels("layer", "log₁₀ s.d. of w_l[0, 0] after burn-in");
    let mut ess = Panel::new("median ESS per layer");
    ess.labels("layer", "median ESS of the layer's weights");
    for ((r, t), color) in rows.iter().zip(traces).zip(COLORS.iter().cycle()) {
        let log_spread: Vec<f64> = weight_spread(t).iter().map(|s| s.log10()).collect();
        let layers: Vec<f64> = (1..=log_spread.len()).map(|l| l as f64).collect();
        let label = format!("{}, batch {}", r.blocking.abbreviation(), r.batch_size);
        spread
            .line(&layers, &log_spread, color)
            .points(&layers, &log_spread, color)
            .legend(label.clone(), color);
        let (ls, medians): (Vec<f64>, Vec<f64>) = r
            .ess
            .iter()
            .filter_map(|e| e.median.map(|m| ((e.layer + 1) as f64, m)))
            .unzip();
        ess.line(&ls, &medians, color)
            .points(&ls, &medians, color)
            .legend(label, color);
    }
    let order = main_order(rows);
    let variability: Vec<f64> = order
        .iter()
        .map(|&i| log_target_variability(traces[i], rows[i].burn_in).mean)
        .collect();
    let mut by_variability = Panel::new("log-target variability vs batch size");
    by_variability
        .labels("batch size", "s.d. of successive differences / √2")
        .line(&batches, &variability, COLORS[0])
        .points(&batches, &variability, COLORS[0]);
    let mut figure = Figure::new(3)
        .panel(by_batch)
        .panel(stopped)
        .panel(acceptance)
        .panel(spread)
        .panel(by_variability)
        .panel(ess);
    // Per chain: its log-target, one weight per layer, and each layer's node acceptance rates.
    for ((r, traces), color) in rows.iter().zip(traces).zip(COLORS.iter().cycle()) {
        let (its, values) = &traces.log_target;
        let what = format!("{}, batch {}", r.blocking.abbreviation(), r.batch_size);
        let mut panel = Panel::new(format!("log-target, {what}"));
        panel.labels("iteration", "ℓ̂(θ) + log p(θ)").line(
            &thinned(&as_f64(its)),
            &thinned(values),
            color,
        );
        let mut weights = Panel::new(format!("one weight per layer, {what}"));
        weights.labels("iteration (after burn-in)", "w_l[0, 0]");
        for (l, (w, c)) in traces.weights.iter().zip(COLORS.iter().cycle()).enumerate() {
            weights
                .line(&thinned(&as_f64(&traces.iterations)), &thinned(w), c)
                .legend(format!("layer {}", l + 1), c);
        }
        let mut nodes = Panel::new(format!("acceptance per node, {what}"));
        nodes
            .labels("layer", "node acceptance rate")
            .y_range(0.0, 1.0);
        for (l, rates) in r.node_acceptance.iter().enumerate() {
            nodes.boxes((l + 1) as f64, rates, color);
        }
        figure = figure.panel(panel).panel(weights).panel(nodes);
    }
    figure
}

/// At most about 2000 evenly spaced entries of `values`.
pub(super) fn thinned(values: &[f64]) -> Vec<f64> {
    let step = values.len().div_ceil(2000).max(1);
    values.iter().step_by(step).copied().collect()
}

/// Iteration numbers as plot coordinates.
pub(super) fn as_f64(iterations: &[u64]) -> Vec<f64> {
    iterations.iter().map(|&t| t as f64).collect()
}
