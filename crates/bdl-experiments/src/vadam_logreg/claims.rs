//! The claims of Fig. 2: Vadam closer to MF-Exact as the minibatch shrinks, and VOGN-1 closely
//! matching Vadam at the smallest minibatch, over restarts.

use bdl_eval::metrics::MeanSe;

use super::{Row, Set};
use crate::claim::{self, Cite, Claim, Decision, Measured, Paper, Verdict};

pub(super) fn stat(rows: &[Row], method: &str, m: usize, field: impl Fn(&Row) -> f64) -> MeanSe {
    let v: Vec<f64> = rows
        .iter()
        .filter(|r| r.method == method && r.batch_size == m)
        .map(field)
        .collect();
    MeanSe::of(&v)
}

/// Vadam's minibatch sizes in the rows, smallest first.
pub(super) fn vadam_sizes(rows: &[Row]) -> Vec<usize> {
    let mut sizes: Vec<usize> = rows
        .iter()
        .filter(|r| r.method == "Vadam")
        .map(|r| r.batch_size)
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

/// The symmetric KLs to MF-Exact of `method` at minibatch size `m`, by restart (paired by
/// restart in the claims: a restart starts every run from the same seed).
pub(super) fn kls(rows: &[Row], method: &str, m: usize) -> Vec<(usize, f64)> {
    let mut v: Vec<(usize, f64)> = rows
        .iter()
        .filter(|r| r.method == method && r.batch_size == m)
        .map(|r| (r.restart, r.symmetric_kl))
        .collect();
    v.sort_by_key(|&(restart, _)| restart);
    v
}

/// The mean of the second fields.
pub(super) fn mean_of(v: &[(usize, f64)]) -> f64 {
    v.iter().map(|p| p.1).sum::<f64>() / v.len() as f64
}

/// How close VOGN-1 and Vadam at the smallest M must be to "closely match": within this
/// fraction of the distance Vadam covers between the smallest and the largest M.
pub(super) const MATCH: f64 = 0.25;

/// The paper's statements the claims test.
pub(super) const SMALLER_M: Cite = Cite {
    paper: Paper::Khan2018,
    place: "Fig. 2",
    quote: "",
};
pub(super) const VOGN_MATCH: Cite = Cite {
    paper: Paper::Khan2018,
    place: "Fig. 2",
    quote: "",
};

/// The paper's claims on one data set, decided on the symmetric KL to MF-Exact paired by
/// restart: as a trend over every M (the KL rises from each M to the next), the smallest M
/// against the largest, and VOGN-1 closely matching Vadam at the smallest M.
pub(super) fn claims(set: Set, rows: &[Row]) -> Vec<Claim> {
    let name = set.name();
    let sizes = vadam_sizes(rows);
    let vadam: Vec<Vec<(usize, f64)>> = sizes.iter().map(|&m| kls(rows, "Vadam", m)).collect();
    let (smallest, largest) = (
        sizes.first().copied().unwrap_or(0),
        sizes.last().copied().unwrap_or(0),
    );
    let none = Vec::new();
    let (small, large) = (
        vadam.first().unwrap_or(&none),
        vadam.last().unwrap_or(&none),
    );
    let steps: Vec<Decision> = vadam
        .windows(2)
        .map(|w| claim::decide_positive(Measured::paired_by(&w[1], &w[0])))
        .collect();
    let trend = if steps.is_empty() {
        Decision::Fails
    } else {
        claim::all(&steps)
    };
    let vogn = kls(rows, "VOGN", 1);
    let span = (mean_of(large) - mean_of(small)).abs();
    let tolerance = MATCH * span;
    let listed = format!(
        "sym. KL at M = {}: {}",
        sizes
            .iter()
            .map(|m| m.to_string())
            .collect::<Vec<_>>()
            .join(", "),
        vadam
            .iter()
            .map(|v| format!("{:.4}", mean_of(v)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let matched = if span.is_finite() {
        claim::close(Measured::paired_by(&vogn, small), tolerance)
    } else {
        Verdict::new(Decision::Fails, "")
    };
    vec![
        Claim::new(
            SMALLER_M,
            format!("{name}: Vadam gets closer to MF-Exact as the minibatch shrinks (trend)"),
            listed.clone(),
            Verdict::new(
                trend,
                "the symmetric KL to MF-Exact rises from every minibatch size to the next larger \
                 one, each step's paired difference over restarts by more than one standard \
                 error (undecided where a step is within one and none is contrary)",
            ),
        ),
        Claim::new(
            SMALLER_M,
            format!(
                "{name}: Vadam at the smallest minibatch is closer to MF-Exact than at the largest"
            ),
            listed,
            claim::positive(Measured::paired_by(large, small)).described(format!(
                "symmetric KL to MF-Exact at the smallest M ({smallest}) below that at the \
                 largest ({largest}), paired over restarts, by more than one standard error \
                 (undecided within one)"
            )),
        ),
        Claim::new(
            VOGN_MATCH,
            format!("{name}: VOGN with M = 1 closely matches Vadam at the smallest minibatch"),
            format!(
                "sym. KL {:.4} vs Vadam-{smallest} {:.4}: paired difference {:.4}",
                mean_of(&vogn),
                mean_of(small),
                Measured::paired_by(&vogn, small)
            ),
            Verdict::new(
                matched.decision,
                format!(
                    "the paired difference of the symmetric KLs, ± one standard error, within \
                     {MATCH} of the distance Vadam's mean KL covers from M = {smallest} to \
                     M = {largest} (here {tolerance:.4}); fails when wholly outside, undecided \
                     when it straddles"
                ),
            ),
        ),
    ]
}
