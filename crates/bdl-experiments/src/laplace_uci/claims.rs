//! The claims: the wide model with a subnetwork against the small one with a full Laplace, the
//! subnetwork against the wide MAP, and the size curve, each paired by split.

use std::collections::BTreeMap;

use bdl_eval::metrics::MeanSe;

use super::settings::Settings;
use super::{INFORMED, MAP, RULES, Row};
use crate::claim::{self, Cite, Claim, Measured, Paper, Verdict};

/// The (dataset, split kind) groups of the rows, in order.
pub(super) fn groups(rows: &[Row]) -> Vec<(String, String)> {
    let mut groups: Vec<(String, String)> = Vec::new();
    for r in rows {
        let group = (r.dataset.clone(), r.split_kind.clone());
        if !groups.contains(&group) {
            groups.push(group);
        }
    }
    groups
}

/// Mean ± standard error over splits of the test log-likelihood and RMSE of one posterior
/// (width, method, s) in one group, and the number of splits.
pub(super) fn stat(
    rows: &[Row],
    group: &(String, String),
    w: usize,
    m: &str,
    s: usize,
) -> (MeanSe, MeanSe, usize) {
    let pick: Vec<&Row> = rows
        .iter()
        .filter(|r| (&r.dataset, &r.split_kind) == (&group.0, &group.1))
        .filter(|r| r.width == w && r.method == m && r.s == s)
        .collect();
    let ll: Vec<f64> = pick.iter().map(|r| r.test_log_lik).collect();
    let rmse: Vec<f64> = pick.iter().map(|r| r.rmse).collect();
    (MeanSe::of(&ll), MeanSe::of(&rmse), ll.len())
}

/// The posteriors (width, method, s) of one group, sorted.
pub(super) fn methods(rows: &[Row], group: &(String, String)) -> Vec<(usize, String, usize)> {
    let mut methods: Vec<(usize, String, usize)> = rows
        .iter()
        .filter(|r| (&r.dataset, &r.split_kind) == (&group.0, &group.1))
        .map(|r| (r.width, r.method.clone(), r.s))
        .collect();
    methods.sort();
    methods.dedup();
    methods
}

/// The paper's statement that the width claims test.
pub(super) const LARGE_BEATS_SMALL: Cite = Cite {
    paper: Paper::Daxberger2021,
    place: "UCI regression",
    quote: "",
};

/// The test log-likelihoods of one posterior (width, method, s) in one group, by split.
pub(super) fn by_split(
    rows: &[Row],
    group: &(String, String),
    w: usize,
    m: &str,
    s: usize,
) -> BTreeMap<usize, f64> {
    rows.iter()
        .filter(|r| (&r.dataset, &r.split_kind) == (&group.0, &group.1))
        .filter(|r| r.width == w && r.method == m && r.s == s)
        .map(|r| (r.split, r.test_log_lik))
        .collect()
}

/// "a beats b" on the splits both have: the paired verdict and our numbers in words.
pub(super) fn paired_claim(
    a: &BTreeMap<usize, f64>,
    b: &BTreeMap<usize, f64>,
) -> (Verdict, String) {
    let (x, y): (Vec<f64>, Vec<f64>) = a
        .iter()
        .filter_map(|(k, va)| b.get(k).map(|vb| (*va, *vb)))
        .unzip();
    let d = Measured::paired(&x, &y);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    (
        claim::positive(d).described(
            "the test LL's mean paired difference over splits positive by more than one \
             standard error (undecided within one)",
        ),
        format!(
            "test LL {:.3} vs {:.3}, paired difference {d:.3} over {} splits",
            mean(&x),
            mean(&y),
            x.len()
        ),
    )
}

/// The paper's claim for every smaller width of every group (the widest model's Wasserstein
/// subnetwork of the smaller model's size has the higher test log-likelihood, paired by split),
/// and beside each, where the controls ran, the control (the same subnetwork against the widest
/// model's MAP: a width claim that holds while this fails comes from the width, not from the
/// inference) and the isolating claim (the same comparison with the informed Wasserstein rule).
pub(super) fn claims(rows: &[Row], settings: &Settings) -> Vec<Claim> {
    let widest = *settings.widths.last().expect("at least one width");
    let mut claims = Vec::new();
    for group in groups(rows) {
        let name = format!("{} ({})", group.0, group.1);
        let map = by_split(rows, &group, widest, MAP, 0);
        for (w, _, s) in methods(rows, &group)
            .into_iter()
            .filter(|(w, m, _)| m == "full" && *w != widest)
        {
            let small = by_split(rows, &group, w, "full", s);
            let subnet = by_split(rows, &group, widest, "Wasserstein", s);
            let best = RULES
                .iter()
                .map(|rule| (rule, stat(rows, &group, widest, rule, s).0))
                .max_by(|a, b| a.1.mean.total_cmp(&b.1.mean))
                .expect("four rules");
            let (verdict, ours) = paired_claim(&subnet, &small);
            claims.push(Claim::new(
                LARGE_BEATS_SMALL,
                format!(
                    "{name}: the width-{widest} model with a Wasserstein subnetwork of {s} beats \
                     width {w} with a full Laplace"
                ),
                format!("{ours} (best rule: {} {:.3})", best.0, best.1.mean),
                verdict,
            ));
            if !map.is_empty() {
                let (verdict, ours) = paired_claim(&subnet, &map);
                claims.push(Claim::new(
                    LARGE_BEATS_SMALL,
                    format!(
                        "{name}, control: the width-{widest} Wasserstein subnetwork of {s} beats \
                         the width-{widest} MAP"
                    ),
                    ours,
                    verdict,
                ));
            }
            let informed = by_split(rows, &group, widest, INFORMED, s);
            if !informed.is_empty() {
                let (verdict, ours) = paired_claim(&informed, &small);
                claims.push(Claim::new(
                    LARGE_BEATS_SMALL,
                    format!(
                        "{name}, isolating: the width-{widest} model with an informed \
                         Wasserstein subnetwork of {s} (weights with a GGN signal only) beats \
                         width {w} with a full Laplace"
                    ),
                    ours,
                    verdict,
                ));
            }
        }
    }
    claims.extend(size_claims(rows, widest));
    claims
}

/// The paper's statement that performance grows with the subnetwork's size.
pub(super) const SIZE: Cite = Cite {
    paper: Paper::Daxberger2021,
    place: "UCI regression, test LL against subnetwork size",
    quote: "",
};

/// Per group, on the widest model: the Wasserstein subnetwork (the paper's rule) of the largest
/// size has a higher test log-likelihood than that of the smallest, paired by split.
pub(super) fn size_claims(rows: &[Row], widest: usize) -> Vec<Claim> {
    let mut claims = Vec::new();
    for group in groups(rows) {
        let sizes: Vec<usize> = methods(rows, &group)
            .into_iter()
            .filter(|(w, m, _)| *w == widest && m == "Wasserstein")
            .map(|(_, _, s)| s)
            .collect();
        if let (Some(&smallest), Some(&largest)) = (sizes.first(), sizes.last())
            && smallest < largest
        {
            let at = |s| by_split(rows, &group, widest, "Wasserstein", s);
            let (verdict, ours) = paired_claim(&at(largest), &at(smallest));
            claims.push(Claim::new(
                SIZE,
                format!(
                    "{} ({}): on the width-{widest} model, a larger Wasserstein subnetwork \
                     ({largest}) has a higher test LL than a smaller one ({smallest})",
                    group.0, group.1
                ),
                ours,
                verdict,
            ));
        }
    }
    claims
}
