//! The claims: the paper's statements on batch size, chain length, proposal variances,
//! blocking, and the traces of Figs. 5 and 6, each with its deciding statistic.

use bdl_mcmc::Blocking;

use super::{COLLAPSED, NON_VANISHING, Row, Traces, batches, first_stop, last_stop, main_rows};
use crate::claim::{self, Cite, Claim, Decision, Measured, Paper, Verdict};
use crate::gibbs_xor::{self, list};

/// The paper's statements the claims test.
pub(super) const BATCH: Cite = Cite {
    paper: Paper::Papamarkou2023,
    place: "MNIST experiment",
    quote: "",
};
pub(super) const BATCH_ACCEPTANCE: Cite = Cite {
    paper: Paper::Papamarkou2023,
    place: "MNIST experiment, Tables 5 and 6",
    quote: "",
};
pub(super) const LONGER: Cite = Cite {
    paper: Paper::Papamarkou2023,
    place: "Abstract",
    quote: "Increasing the length of a non-convergent chain increases the predictive accuracy in \
            classification tasks",
};
/// The falling variances' claim and the node against layer blocks claim quote the sentences
/// `gibbs-xor`'s depth and blocking claims test.
pub(super) const DEPTH_VARIANCES: Cite = gibbs_xor::DEPTH;
pub(super) const NODE_BLOCKS: Cite = gibbs_xor::BLOCKING;

pub(super) const DEPTH_SCALE: Cite = Cite {
    paper: Paper::Papamarkou2023,
    place: "MNIST experiment, Fig. 5",
    quote: "",
};
pub(super) const BATCH_VARIABILITY: Cite = Cite {
    paper: Paper::Papamarkou2023,
    place: "MNIST experiment, Fig. 6",
    quote: "",
};

/// A chain's test accuracy as a proportion of the `n_test` test images.
pub(super) fn accuracy_of(accuracy: f64, n_test: usize) -> Measured {
    Measured::proportion(accuracy, n_test)
}

/// The paper's claims, decided on the rows of one collection with `n_test` test images.
///
/// Accuracies carry the binomial standard error over the test images; two chains' accuracies
/// are compared as independent estimates (for two windows of one chain, which share the test
/// set, that standard error is the conservative one).
pub(super) fn claims(rows: &[&Row], n_test: usize) -> Vec<Claim> {
    let main = main_rows(rows);
    let mut claims = batch_claims(&main, n_test);
    claims.extend(longer_claim(&main, n_test));
    claims.extend(variances_claim(&main));
    claims.extend(batch_acceptance_claim(&main));
    claims.extend(common_claim(rows));
    claims.extend(node_blocks_claim(rows, &main));
    claims
}

/// The batch-size claims: accuracy rises until acceptance collapses, and falls again at the largest live batch size.
pub(super) fn batch_claims(main: &[&Row], n_test: usize) -> Vec<Claim> {
    let mut claims = Vec::new();
    let alive: Vec<&Row> = main
        .iter()
        .copied()
        .filter(|r| r.layer_acceptance.iter().all(|&a| a >= COLLAPSED))
        .collect();
    let best = alive
        .iter()
        .skip(1)
        .copied()
        .max_by(|a, b| a.test_accuracy.total_cmp(&b.test_accuracy));
    let verdict = match (alive.first(), best) {
        (Some(smallest), Some(best)) => {
            claim::greater(
                accuracy_of(best.test_accuracy, n_test),
                accuracy_of(smallest.test_accuracy, n_test),
            )
            .decision
        }
        _ => Decision::Fails,
    };
    claims.push(Claim::new(
        BATCH,
        "accuracy rises with batch size until acceptance collapses (paper: best at 3000 of \
         60,000, lower at 4200)",
        format!(
            "accuracy at batch {}: {}; batch sizes without a collapsed layer (< {COLLAPSED}): {}{}",
            batches(main),
            list(&main.iter().map(|r| r.test_accuracy).collect::<Vec<_>>(), 3),
            batches(&alive),
            best.map_or_else(String::new, |b| format!(
                "; best above the smallest: batch {}",
                b.batch_size
            ))
        ),
        Verdict::new(
            verdict,
            format!(
                "among the batch sizes without a collapsed layer (every layer's acceptance ≥ \
                 {COLLAPSED}), the best accuracy at a larger batch size exceeds the smallest \
                 batch size's by more than one binomial standard error of the difference \
                 (undecided within one; fails with fewer than two such batch sizes)"
            ),
        ),
    ));

    if let [.., before, largest] = &alive[..] {
        claims.push(Claim::new(
            BATCH,
            "accuracy falls again at the largest batch size (paper: lower at 4200 than at 3000)",
            format!(
                "accuracy {:.3} at batch {} vs {:.3} at batch {}",
                largest.test_accuracy, largest.batch_size, before.test_accuracy, before.batch_size
            ),
            claim::less(
                accuracy_of(largest.test_accuracy, n_test),
                accuracy_of(before.test_accuracy, n_test),
            )
            .described(
                "the largest live batch size's accuracy below the next smaller one's by more \
                 than one binomial standard error of the difference (undecided within one)",
            ),
        ));
    }
    claims
}

/// Longer chains: every batch size more accurate stopped at the last point than at the first.
pub(super) fn longer_claim(main: &[&Row], n_test: usize) -> Vec<Claim> {
    let mut claims = Vec::new();
    let (first, last) = main.first().map_or((0, 0), |r| {
        (
            r.accuracy_stopped_at.first().map_or(0, |a| a.iterations),
            r.accuracy_stopped_at.last().map_or(0, |a| a.iterations),
        )
    });
    let by_batch: Vec<Decision> = main
        .iter()
        .map(|r| {
            claim::greater(
                accuracy_of(last_stop(r), n_test),
                accuracy_of(first_stop(r), n_test),
            )
            .decision
        })
        .collect();
    claims.push(Claim::new(
        LONGER,
        "longer (non-convergent) chains give higher accuracy",
        format!(
            "stopped at {first} vs {last}: {}",
            main.iter()
                .map(|r| format!(
                    "batch {}: {:.3} vs {:.3}",
                    r.batch_size,
                    first_stop(r),
                    last_stop(r)
                ))
                .collect::<Vec<_>>()
                .join("; ")
        ),
        Verdict::new(
            claim::all(&by_batch),
            "at every batch size, the chain stopped at the last point is more accurate than \
             stopped at the first by more than one binomial standard error of the difference \
             (undecided where one is within it and none is contrary)",
        ),
    ));

    claims
}

/// The falling variances keep every layer's acceptance from vanishing.
pub(super) fn variances_claim(main: &[&Row]) -> Vec<Claim> {
    let mut claims = Vec::new();
    let lowest = main
        .iter()
        .flat_map(|r| r.layer_acceptance.iter().copied())
        .fold(1.0, f64::min);
    claims.push(Claim::new(
        DEPTH_VARIANCES,
        "proposal variances falling with depth keep every layer's acceptance from vanishing",
        format!("lowest layer acceptance over all batch sizes {lowest:.3}"),
        Verdict::exact(
            lowest >= NON_VANISHING,
            format!(
                "every layer's acceptance at every batch size ≥ {NON_VANISHING} (rates over \
                 10⁵ iterations: no sampling error at this resolution)"
            ),
        ),
    ));
    claims
}

/// Acceptance against batch size, layer by layer (Tables 5 and 6).
pub(super) fn batch_acceptance_claim(main: &[&Row]) -> Vec<Claim> {
    let mut claims = Vec::new();
    if let (Some(smallest), Some(largest)) = (main.first(), main.last())
        && main.len() >= 2
    {
        let falls: Vec<bool> = smallest
            .layer_acceptance
            .iter()
            .zip(&largest.layer_acceptance)
            .map(|(small, large)| large < small)
            .collect();
        claims.push(Claim::new(
            BATCH_ACCEPTANCE,
            "acceptance falls with batch size in every layer (at the paper's variances for each \
             batch size)",
            format!(
                "acceptance per layer at batch {}: {}; at batch {}: {}",
                smallest.batch_size,
                list(&smallest.layer_acceptance, 3),
                largest.batch_size,
                list(&largest.layer_acceptance, 3)
            ),
            Verdict::exact(
                falls.iter().all(|&f| f),
                "every layer's acceptance at the largest batch size below its acceptance at the \
                 smallest (rates over 10⁵ iterations: no sampling error at this resolution)",
            ),
        ));
    }
    claims
}

/// The control chain at a common variance: its output layer's acceptance vanishes.
pub(super) fn common_claim(rows: &[&Row]) -> Vec<Claim> {
    let mut claims = Vec::new();
    if let Some(common) = rows.iter().find(|r| r.common_variance) {
        let output = common.layer_acceptance.last().copied().unwrap_or(f64::NAN);
        claims.push(Claim::new(
            DEPTH_VARIANCES,
            format!(
                "(control) at a common variance the output layer's acceptance vanishes (batch {}, \
                 every layer at {:.0e})",
                common.batch_size,
                common
                    .proposal_variances
                    .first()
                    .copied()
                    .unwrap_or(f64::NAN)
            ),
            format!("acceptance per layer {}", list(&common.layer_acceptance, 4)),
            Verdict::exact(
                output < NON_VANISHING,
                format!(
                    "the output layer's acceptance below {NON_VANISHING} (the falling variances' \
                     claim needs it: otherwise a common variance would do)"
                ),
            ),
        ));
    }
    claims
}

/// The sample standard deviation of `values` (denominator n − 1; NaN below two values).
pub(super) fn std_dev(values: &[f64]) -> f64 {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
}

/// The spread of each layer's traced weight along a chain after the burn-in: its standard
/// deviation over the kept draws, per layer.
pub(super) fn weight_spread(traces: &Traces) -> Vec<f64> {
    traces.weights.iter().map(|w| std_dev(w)).collect()
}

/// The variability of a chain's log-target from one recorded iteration to the next after
/// `burn_in`: s(Δ)/√2, the standard deviation of successive differences over √2, which is the
/// standard deviation of the fluctuation about a slowly moving level (a trend that moves little
/// between records leaves it unchanged). Its standard error is the normal-theory s/√(2(n − 1))
/// for n differences, approximate (successive differences are correlated).
pub(super) fn log_target_variability(traces: &Traces, burn_in: u64) -> Measured {
    successive_variability(after_burn_in(traces, burn_in).map(|(_, v)| v))
}

/// The same variability of the per-example log-target (ℓ̂ + log p)/b at the recorded
/// iterations whose minibatch is full (b examples of the `n_train`): the statistic whose scale
/// does not depend on the batch size. Iteration t uses batch t mod M of its epoch, M = ⌈n/b⌉,
/// and only the last batch of an epoch, of n mod b examples, is shorter; its records are left
/// out (their smaller sums would make jumps in the trace), so a difference may span two
/// record intervals.
pub(super) fn per_example_variability(
    traces: &Traces,
    burn_in: u64,
    batch: usize,
    n_train: usize,
) -> Measured {
    let m = n_train.div_ceil(batch) as u64;
    let full = |t: u64| n_train.is_multiple_of(batch) || t % m != m - 1;
    successive_variability(
        after_burn_in(traces, burn_in)
            .filter(|&(t, _)| full(t))
            .map(|(_, v)| v / batch as f64),
    )
}

/// The recorded (iteration, log-target) pairs from `burn_in` on.
pub(super) fn after_burn_in(
    traces: &Traces,
    burn_in: u64,
) -> impl Iterator<Item = (u64, f64)> + '_ {
    let (iterations, values) = &traces.log_target;
    iterations
        .iter()
        .zip(values)
        .filter(move |&(&t, _)| t >= burn_in)
        .map(|(&t, &v)| (t, v))
}

/// s(Δ)/√2 of a sequence, with the standard error of [`log_target_variability`].
pub(super) fn successive_variability(values: impl Iterator<Item = f64>) -> Measured {
    let kept: Vec<f64> = values.collect();
    let steps: Vec<f64> = kept.windows(2).map(|w| w[1] - w[0]).collect();
    let v = std_dev(&steps) / std::f64::consts::SQRT_2;
    Measured::with_se(v, v / (2.0 * (steps.len() as f64 - 1.0)).sqrt())
}

/// The claims on the main chains' traces (`main`, by batch size): a weight's spread shrinks
/// with depth (Fig. 5) and the log-target's variability falls with batch size (Fig. 6).
pub(super) fn trace_claims(main: &[(&Row, &Traces)], n_train: usize) -> Vec<Claim> {
    let mut claims = Vec::new();
    let spreads: Vec<Vec<f64>> = main.iter().map(|(_, t)| weight_spread(t)).collect();
    let layers = spreads.first().map_or(0, Vec::len);
    if layers >= 2 {
        // Per step l → l + 1: log s_l − log s_{l+1}, paired over the chains (one per batch size).
        let log_of = |l: usize| -> Vec<f64> { spreads.iter().map(|s| s[l].ln()).collect() };
        let steps: Vec<Measured> = (1..layers)
            .map(|l| Measured::paired(&log_of(l - 1), &log_of(l)))
            .collect();
        let decisions: Vec<Decision> = steps.iter().map(|&d| claim::decide_positive(d)).collect();
        let geometric_mean = |l: usize| {
            let logs = log_of(l);
            (logs.iter().sum::<f64>() / logs.len() as f64).exp()
        };
        claims.push(Claim::new(
            DEPTH_SCALE,
            "a weight's chain spreads less the deeper its layer",
            format!(
                "standard deviation of the traced weight after burn-in, per layer (geometric mean \
                 over {} chains): {}; log ratio per step {}",
                main.len(),
                list(&(0..layers).map(geometric_mean).collect::<Vec<_>>(), 4),
                steps
                    .iter()
                    .map(|d| format!("{:.2} ± {:.2}", d.mean, d.se.unwrap_or(f64::NAN)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Verdict::new(
                claim::all(&decisions),
                "for every pair of adjacent layers, log s_l − log s_{l+1} (s the standard \
                 deviation over the kept draws of the layer's first weight, paired over the \
                 chains of every batch size) positive by more than one standard error \
                 (undecided within one, or with one chain)",
            ),
        ));
    }
    if main.len() >= 2 {
        let variability: Vec<Measured> = main
            .iter()
            .map(|(r, t)| log_target_variability(t, r.burn_in))
            .collect();
        let decisions: Vec<Decision> = variability
            .windows(2)
            .map(|w| claim::less(w[1], w[0]).decision)
            .collect();
        claims.push(Claim::new(
            BATCH_VARIABILITY,
            "the log-target varies less from iteration to iteration at larger batch sizes",
            format!(
                "variability s(Δ)/√2 of the recorded log-target after burn-in at batch {}: {}",
                batches(&main.iter().map(|(r, _)| *r).collect::<Vec<_>>()),
                variability
                    .iter()
                    .map(|m| format!("{:.1} ± {:.1}", m.mean, m.se.unwrap_or(f64::NAN)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Verdict::new(
                claim::all(&decisions),
                "at every step to the next larger batch size, the variability (the standard \
                 deviation of successive differences of the recorded log-target over √2) \
                 smaller by more than one approximate standard error of the difference \
                 (undecided within one)",
            ),
        ));
        claims.push(per_example_claim(main, n_train));
    }
    claims
}

/// Fig. 6 judged per example (written on 2026-12-07, after the raw trace's verdict, which
/// stays beside it): the raw log-target is a sum over the batch, so its scale grows with the
/// batch size and the shorter last batch of an epoch makes jumps in it.
pub(super) fn per_example_claim(main: &[(&Row, &Traces)], n_train: usize) -> Claim {
    let variability: Vec<Measured> = main
        .iter()
        .map(|(r, t)| per_example_variability(t, r.burn_in, r.batch_size, n_train))
        .collect();
    let decisions: Vec<Decision> = variability
        .windows(2)
        .map(|w| claim::less(w[1], w[0]).decision)
        .collect();
    // For a fixed θ a mean over b of n examples varies like √((1 − b/n)/b): the chain's own
    // contribution is how far the measured values stand from that.
    let subsampling = |b: usize| ((1.0 - b as f64 / n_train as f64) / b as f64).sqrt();
    let b0 = main[0].0.batch_size;
    Claim::new(
        BATCH_VARIABILITY,
        "the per-example log-target varies less from iteration to iteration at larger batch \
         sizes (criterion revised after the raw trace's verdict)",
        format!(
            "variability s(Δ)/√2 of (ℓ̂ + log p)/b over the full batches after burn-in at batch \
             {}: {}; relative to batch {b0}: {} (subsampling alone: {})",
            batches(&main.iter().map(|(r, _)| *r).collect::<Vec<_>>()),
            variability
                .iter()
                .map(|m| format!("{:.4} ± {:.4}", m.mean, m.se.unwrap_or(f64::NAN)))
                .collect::<Vec<_>>()
                .join(", "),
            list(
                &variability
                    .iter()
                    .map(|m| m.mean / variability[0].mean)
                    .collect::<Vec<_>>(),
                2
            ),
            list(
                &main
                    .iter()
                    .map(|(r, _)| subsampling(r.batch_size) / subsampling(b0))
                    .collect::<Vec<_>>(),
                2
            ),
        ),
        Verdict::new(
            claim::all(&decisions),
            "at every step to the next larger batch size, the variability of the per-example \
             log-target (ℓ̂ + log p over the batch size, records on an epoch's shorter last \
             batch left out) smaller by more than one approximate standard error of the \
             difference (undecided within one)",
        ),
    )
}

/// Node against layer blocks at the layer-block chain's batch size and variances.
pub(super) fn node_blocks_claim(rows: &[&Row], main: &[&Row]) -> Vec<Claim> {
    let mut claims = Vec::new();
    if let Some(layer) = rows.iter().find(|r| r.blocking == Blocking::Layer)
        && let Some(node) = main.iter().find(|r| r.batch_size == layer.batch_size)
    {
        let lbg_low = layer.layer_acceptance.iter().copied().fold(1.0, f64::min);
        claims.push(Claim::new(
            NODE_BLOCKS,
            format!(
                "node blocking keeps acceptance non-zero where layer blocking collapses (batch \
                 {}, the same per-layer variances)",
                layer.batch_size
            ),
            format!(
                "LBG per layer {}; {} per layer {}, lowest block {:.3}",
                list(&layer.layer_acceptance, 4),
                node.blocking.abbreviation(),
                list(&node.layer_acceptance, 3),
                node.min_block_acceptance
            ),
            Verdict::exact(
                lbg_low < COLLAPSED && node.min_block_acceptance >= NON_VANISHING,
                format!(
                    "LBG's lowest layer acceptance below {COLLAPSED} and the node blocks' lowest \
                     block acceptance ≥ {NON_VANISHING}"
                ),
            ),
        ));
    }
    claims
}
