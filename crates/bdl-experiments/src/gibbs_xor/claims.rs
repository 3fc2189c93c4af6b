//! The claims: minibatch against exact acceptance (Fig. 3a), deeper networks more accurate
//! (Fig. 7), node against layer blocks and acceptance falling with depth, each with its
//! deciding statistic.

use super::settings::Settings;
use super::{
    BATCH, COLLAPSED, DEEP, FILTERS, MINIBATCH_VARIANCE, Row, SHALLOW, WIDE, find, list, name, wall,
};
use crate::claim::{self, Cite, Claim, Decision, Measured, Paper, Verdict};

/// The paper's statements the claims test.
pub(crate) const BLOCKING: Cite = Cite {
    paper: Paper::Papamarkou2023,
    place: "§1",
    quote: "a sampling mechanism that takes into account the neural network structure and that \
            partitions the parameter space into smaller parameter blocks retains higher \
            acceptance rate",
};
pub(crate) const DEPTH: Cite = Cite {
    paper: Paper::Papamarkou2023,
    place: "Abstract",
    quote: "It is also possible to alleviate vanishing acceptance rates for increasing depth by \
            reducing the proposal variance in deeper layers.",
};
pub(super) const DEEPER: Cite = Cite {
    paper: Paper::Papamarkou2023,
    place: "noisy XOR experiment, Fig. 7",
    quote: "",
};
pub(super) const MINIBATCH: Cite = Cite {
    paper: Paper::Papamarkou2023,
    place: "noisy XOR experiment",
    quote: "",
};

/// The paper's claims, decided on the rows (`settings` give the iterations each acceptance
/// rate counts, for the standard error of a single chain's).
pub(super) fn claims(rows: &[Row], settings: &Settings) -> Vec<Claim> {
    let kept = settings.iterations.saturating_sub(settings.burn_in);
    let exact_kept = settings
        .wide_exact_iterations
        .saturating_sub(settings.burn_in);
    vec![
        blocking_claim(rows, kept),
        exact_blocking_claim(rows, exact_kept),
        depth_claim(rows, kept),
        minibatch_claim(rows),
        minibatch_acceptance_claim(rows, kept),
        deeper_claim(rows),
    ]
}

/// Minibatch against exact node blocks in acceptance (the paper's Fig. 3a): every layer's rate
/// in scenario (1) above its rate in (2), on both networks.
pub(super) fn minibatch_acceptance_claim(rows: &[Row], kept: u64) -> Claim {
    let mut parts = Vec::new();
    let mut ours = Vec::new();
    for network in [SHALLOW, DEEP] {
        let (m, e) = (find(rows, network, "(1)"), find(rows, network, "(2)"));
        let layers = m.mean_layer_acceptance.as_ref().map_or(0, Vec::len);
        let shown = |r: &Row| {
            (0..layers)
                .map(|j| format!("{:.3}", layer_rate(r, j, kept)))
                .collect::<Vec<_>>()
                .join(", ")
        };
        parts.extend(
            (0..layers)
                .map(|j| claim::greater(layer_rate(m, j, kept), layer_rate(e, j, kept)).decision),
        );
        ours.push(format!(
            "{}: (1) {} vs (2) {}",
            name(network),
            shown(m),
            shown(e)
        ));
    }
    Claim::new(
        MINIBATCH,
        "minibatch NBG accepts more than exact NBG (Fig. 3a; each at its scenario's variance)",
        ours.join("; "),
        Verdict::new(
            claim::all(&parts),
            "on both networks, every layer's mean acceptance over chains in (1) above its rate \
             in (2) by more than one standard error of the difference (undecided where one is \
             within it and none is contrary)",
        ),
    )
}

/// The deep network against the shallow one in scenario (1): the mean test accuracy over
/// chains (the paper's Fig. 7; its "less volatile" half needs an accuracy trace over the chain,
/// which the run does not record).
pub(super) fn deeper_claim(rows: &[Row]) -> Claim {
    let accuracy = |network: &[usize]| Measured::of(&find(rows, network, "(1)").test_accuracy);
    let (deep, shallow) = (accuracy(DEEP), accuracy(SHALLOW));
    Claim::new(
        DEEPER,
        "the deeper MLP is more accurate (minibatch NBG)",
        format!(
            "test accuracy over chains {}: {deep:.3}; {}: {shallow:.3}",
            name(DEEP),
            name(SHALLOW)
        ),
        claim::greater(deep, shallow).described(
            "scenario (1)'s mean test accuracy over chains higher on the deep network than on \
             the shallow one by more than one standard error of the difference (undecided \
             within one)",
        ),
    )
}

/// The acceptance of layer `j` over the chains of `row` (between chains; a single chain's rate
/// has the binomial standard error over its kept iterations).
pub(super) fn layer_rate(row: &Row, j: usize, kept_iterations: u64) -> Measured {
    let rates: Vec<f64> = row.layer_acceptance.iter().map(|c| c[j]).collect();
    match rates.as_slice() {
        [one] => Measured::proportion(*one, kept_iterations as usize),
        _ => Measured::of(&rates),
    }
}

/// Node against layer blocks at the common variance: on the wide network, layer blocks collapse
/// and node blocks do not. LBG's lowest layer acceptance (that layer's rate over chains) and
/// NBG's lowest block acceptance over all chains, on the wide network, for the runs whose
/// scenarios start with `nbg` and `lbg`.
pub(super) fn wide_lows(rows: &[Row], nbg: &str, lbg: &str, kept: u64) -> (Measured, f64, String) {
    let (wide_nbg, wide_lbg) = (find(rows, WIDE, nbg), find(rows, WIDE, lbg));
    let lbg_layers = wide_lbg.mean_layer_acceptance.as_deref().unwrap_or(&[]);
    let lbg_low = lbg_layers
        .iter()
        .enumerate()
        .min_by(|a, b| a.1.total_cmp(b.1))
        .map_or(Measured::exact(f64::NAN), |(j, _)| {
            layer_rate(wide_lbg, j, kept)
        });
    let nbg_low = wide_nbg
        .min_block_acceptance
        .iter()
        .copied()
        .fold(1.0, f64::min);
    let ours = format!(
        "2-50-50-1: LBG per layer {} (lowest {lbg_low:.4}); NBG's lowest block over all chains \
         {nbg_low:.3}",
        list(lbg_layers, 4)
    );
    (lbg_low, nbg_low, ours)
}

/// The collapse criterion: LBG's lowest layer below [`COLLAPSED`] by more than its standard
/// error, and NBG's lowest block over all chains at least the weaker filter (a minimum over
/// every chain and block, decided as it is).
pub(super) fn collapse_verdict(lbg_low: Measured, nbg_low: f64, data: &str) -> Verdict {
    let non_vanishing = FILTERS[1].1;
    let collapsed = claim::decide_positive(Measured::exact(COLLAPSED).minus(lbg_low));
    Verdict::new(
        claim::all(&[collapsed, Decision::of(nbg_low >= non_vanishing)]),
        format!(
            "on {} ({data}), LBG's lowest layer acceptance is below {COLLAPSED} by more than \
             one standard error (over chains; undecided within one) and NBG's lowest block \
             acceptance over all chains is at least {non_vanishing}",
            name(WIDE)
        ),
    )
}

pub(super) fn blocking_claim(rows: &[Row], kept: u64) -> Claim {
    let (lbg_low, nbg_low, wide) = wide_lows(rows, "minibatch NBG", "minibatch LBG", kept);
    let small = |network: &[usize]| {
        let (n, l) = (
            find(rows, network, "(1)"),
            find(rows, network, "minibatch LBG"),
        );
        format!(
            "{}: NBG {} vs LBG {}",
            name(network),
            list(n.mean_layer_acceptance.as_deref().unwrap_or(&[]), 2),
            list(l.mean_layer_acceptance.as_deref().unwrap_or(&[]), 2)
        )
    };
    Claim::new(
        BLOCKING,
        format!(
            "node blocking keeps acceptance non-zero where layer blocking collapses (variance \
             {MINIBATCH_VARIANCE}, batch {BATCH})"
        ),
        format!("{wide}. Per layer, {}; {}", small(SHALLOW), small(DEEP)),
        collapse_verdict(lbg_low, nbg_low, &format!("batch {BATCH}")),
    )
}

/// The same at the same variance with the whole training set in every ratio, where a block's
/// curvature, and so the collapse, is largest.
pub(super) fn exact_blocking_claim(rows: &[Row], kept: u64) -> Claim {
    let (lbg_low, nbg_low, wide) = wide_lows(rows, "exact NBG, v", "exact LBG, v", kept);
    Claim::new(
        BLOCKING,
        format!(
            "node blocking keeps acceptance non-zero where layer blocking collapses (variance \
             {MINIBATCH_VARIANCE}, the whole training set per ratio)"
        ),
        wide,
        collapse_verdict(lbg_low, nbg_low, "exact"),
    )
}

/// Whether a network's layer acceptance (scenario (1)) falls with depth: the last layer below
/// the first by more than a standard error of the difference (undecided within one), and no
/// layer above the previous one by more than one; with the rates shown.
pub(super) fn falls_with_depth(rows: &[Row], network: &[usize], kept: u64) -> (Decision, String) {
    let r = find(rows, network, "(1)");
    let layers = r.mean_layer_acceptance.as_ref().map_or(0, Vec::len);
    let rates: Vec<Measured> = (0..layers).map(|j| layer_rate(r, j, kept)).collect();
    let rises = rates
        .windows(2)
        .any(|w| claim::decide_positive(w[1].minus(w[0])) == Decision::Holds);
    let fall = match (rates.first(), rates.last()) {
        (Some(&first), Some(&last)) if layers >= 2 => claim::decide_positive(first.minus(last)),
        _ => Decision::Fails,
    };
    let shown = rates
        .iter()
        .map(|m| format!("{m:.3}"))
        .collect::<Vec<_>>()
        .join(", ");
    (claim::all(&[Decision::of(!rises), fall]), shown)
}

/// Depth at the common variance, on both networks.
pub(super) fn depth_claim(rows: &[Row], kept: u64) -> Claim {
    let ((shallow_falls, shallow), (deep_falls, deep)) = (
        falls_with_depth(rows, SHALLOW, kept),
        falls_with_depth(rows, DEEP, kept),
    );
    Claim::new(
        DEPTH,
        format!(
            "acceptance falls with depth at a common variance (scenario (1), variance \
             {MINIBATCH_VARIANCE})"
        ),
        format!(
            "per layer, mean ± se over chains: {}: {shallow}; {}: {deep}",
            name(SHALLOW),
            name(DEEP),
        ),
        Verdict::new(
            claim::all(&[shallow_falls, deep_falls]),
            "on both networks, the last layer's rate below the first's by more than one standard \
             error of the difference (undecided within one), and no layer's rate above the \
             previous layer's by more than one",
        ),
    )
}

/// Minibatch against exact node blocks, on both networks.
pub(super) fn minibatch_claim(rows: &[Row]) -> Claim {
    let mut parts = Vec::new();
    let mut ours = Vec::new();
    for network in [SHALLOW, DEEP] {
        let (m, e) = (find(rows, network, "(1)"), find(rows, network, "(2)"));
        let (tm, te) = (wall(m), wall(e));
        let accuracy = |r: &Row| Measured::of(&r.test_accuracy);
        let (am, ae) = (accuracy(m), accuracy(e));
        parts.push(Decision::of(tm < te));
        parts.push(claim::greater(am, ae).decision);
        ours.push(format!(
            "{}: {tm:.1} s vs {te:.1} s, accuracy {am:.3} vs {ae:.3}",
            name(network)
        ));
    }
    Claim::new(
        MINIBATCH,
        "minibatch NBG is faster and more accurate than exact NBG (same iterations)",
        ours.join("; "),
        Verdict::new(
            claim::all(&parts),
            "on both networks, (1) has a smaller wall time than (2), and a larger mean test \
             accuracy over chains by more than one standard error of the difference (undecided \
             within one)",
        ),
    )
}
