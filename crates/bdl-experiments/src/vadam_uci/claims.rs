//! The claims: Table 1's comparisons (Vadam against BBVI, MC dropout against both, by paired
//! tests over splits) and Fig. 4's convergence, with the statistics they are decided by.

use bdl_eval::metrics::MeanSe;
use bdl_eval::stats::PairedTTest;

use super::{CONVERGENCE_SET, Row, Which};
use crate::claim::{self, Cite, Claim, Decision, Measured, Paper, Verdict};

pub(super) fn pick<'a>(rows: &'a [Row], set: &str, which: Which) -> Vec<&'a Row> {
    rows.iter()
        .filter(|r| r.dataset == set && r.method == which.name())
        .collect()
}

pub(super) fn stat(rows: &[&Row], field: impl Fn(&Row) -> f64) -> MeanSe {
    MeanSe::of(&rows.iter().map(|r| field(r)).collect::<Vec<_>>())
}

/// The data sets of the rows, in their order of first appearance.
pub(super) fn datasets(rows: &[Row]) -> Vec<&str> {
    let mut sets: Vec<&str> = Vec::new();
    for r in rows {
        if !sets.contains(&r.dataset.as_str()) {
            sets.push(&r.dataset);
        }
    }
    sets
}

/// `field` of `a` and of `b` on the splits both have, paired by split.
pub(super) fn pairs(a: &[&Row], b: &[&Row], field: impl Fn(&Row) -> f64) -> (Vec<f64>, Vec<f64>) {
    a.iter()
        .filter_map(|a| {
            b.iter()
                .find(|b| b.split == a.split)
                .map(|b| (field(a), field(b)))
        })
        .unzip()
}

/// The paired t-test over splits of `field` of `a` against `b`; `None` with fewer than two
/// pairs.
pub(super) fn paired(a: &[&Row], b: &[&Row], field: impl Fn(&Row) -> f64) -> Option<PairedTTest> {
    let (xs, ys) = pairs(a, b, field);
    PairedTTest::of(&xs, &ys)
}

/// "`a`'s `field` above `b`'s", paired by split (undecided within one standard error).
pub(super) fn above(a: &[&Row], b: &[&Row], field: impl Fn(&Row) -> f64) -> Decision {
    let (xs, ys) = pairs(a, b, field);
    if xs.is_empty() {
        return Decision::Fails;
    }
    claim::decide_positive(Measured::paired(&xs, &ys))
}

/// What the claims of one data set are decided on: the paired tests of Vadam against BBVI,
/// whether MC dropout is better than both, and the three methods' mean test RMSE and LL.
pub(super) struct SetComparison<'a> {
    pub(super) set: &'a str,
    /// Vadam − BBVI over splits, test RMSE.
    pub(super) rmse: Option<PairedTTest>,
    /// Vadam − BBVI over splits, per-point test LL.
    pub(super) ll: Option<PairedTTest>,
    /// Vadam − BBVI over splits, the joint test LL of the Vadam code (its Table 1's).
    pub(super) ll_joint: Option<PairedTTest>,
    /// MC dropout below both in test RMSE and above both in per-point test LL, each paired by
    /// split.
    pub(super) dropout: Decision,
    /// Mean test RMSE of MC dropout, Vadam, BBVI.
    pub(super) mean_rmse: [f64; 3],
    /// Mean per-point test LL of MC dropout, Vadam, BBVI.
    pub(super) mean_ll: [f64; 3],
}

pub(super) fn compare(rows: &[Row]) -> Vec<SetComparison<'_>> {
    datasets(rows)
        .into_iter()
        .map(|set| {
            let (vadam, bbvi, drop) = (
                pick(rows, set, Which::Vadam),
                pick(rows, set, Which::Bbvi),
                pick(rows, set, Which::Dropout),
            );
            let means = |f: fn(&Row) -> f64| [&drop, &vadam, &bbvi].map(|r| stat(r, f).mean);
            let rmse = |r: &Row| r.test_rmse;
            let ll = |r: &Row| r.test_log_lik;
            let dropout = claim::all(&[
                above(&vadam, &drop, rmse),
                above(&bbvi, &drop, rmse),
                above(&drop, &vadam, ll),
                above(&drop, &bbvi, ll),
            ]);
            SetComparison {
                set,
                rmse: paired(&vadam, &bbvi, rmse),
                ll: paired(&vadam, &bbvi, ll),
                ll_joint: paired(&vadam, &bbvi, |r| r.test_log_lik_joint),
                dropout,
                mean_rmse: means(rmse),
                mean_ll: means(ll),
            }
        })
        .collect()
}

/// Vadam ≈ BBVI on a data set as the Vadam authors' Table 1 decides it: a paired two-sided
/// t-test at p = 0.01 rejects equality neither of the test RMSEs nor of the joint test LLs (no
/// test, so no verdict of comparability, with one split).
pub(super) fn comparable(c: &SetComparison<'_>) -> bool {
    passes(c.rmse) && passes(c.ll_joint)
}

/// The same with the per-point test LL (the standard definition) in place of the joint one.
pub(super) fn comparable_per_point(c: &SetComparison<'_>) -> bool {
    passes(c.rmse) && passes(c.ll)
}

pub(super) fn passes(t: Option<PairedTTest>) -> bool {
    t.is_some_and(|t| !t.rejects_equality_at_1_percent())
}

/// Mean test RMSE over the convergence set's splits after each epoch, per method.
pub(super) fn curves(rows: &[Row]) -> Vec<(Which, Vec<f64>)> {
    [Which::Vogn, Which::Vadam, Which::Bbvi]
        .into_iter()
        .filter_map(|which| {
            let here = pick(rows, CONVERGENCE_SET.name(), which);
            let epochs = here.first()?.test_rmse_by_epoch.len();
            let mean = (0..epochs)
                .map(|e| {
                    here.iter().map(|r| r.test_rmse_by_epoch[e]).sum::<f64>() / here.len() as f64
                })
                .collect();
            Some((which, mean))
        })
        .collect()
}

/// 110% of the best final RMSE of the three methods (`None` without all three curves).
pub(super) fn target(curves: &[(Which, Vec<f64>)]) -> Option<f64> {
    let finals: Vec<f64> = curves
        .iter()
        .filter_map(|(_, c)| c.last().copied())
        .collect();
    (finals.len() == 3).then(|| 1.1 * finals.iter().copied().fold(f64::INFINITY, f64::min))
}

/// The first epoch (from 1) at which `curve` is at or below `target`.
pub(super) fn reach(curve: &[f64], target: f64) -> Option<usize> {
    curve.iter().position(|&v| v <= target).map(|e| e + 1)
}

/// The data sets passing `test`, as "k of n (a, b)".
pub(super) fn count_of(
    comparisons: &[SetComparison<'_>],
    test: impl Fn(&SetComparison<'_>) -> bool,
) -> (usize, String) {
    let passing: Vec<&str> = comparisons
        .iter()
        .filter(|c| test(c))
        .map(|c| c.set)
        .collect();
    let n = comparisons.len();
    let list = if passing.is_empty() {
        String::new()
    } else {
        format!(" ({})", passing.join(", "))
    };
    (passing.len(), format!("{} of {n}{list}", passing.len()))
}

/// The paper's statements the claims test.
pub(super) const COMPARABLE: Cite = Cite {
    paper: Paper::Khan2018,
    place: "Abstract; Table 1",
    quote: "while obtaining uncertainty estimates of comparable quality",
};
pub(super) const DROPOUT_BETTER: Cite = Cite {
    paper: Paper::Khan2018,
    place: "Table 1",
    quote: "",
};
pub(super) const FASTER: Cite = Cite {
    paper: Paper::Khan2018,
    place: "Fig. 4",
    quote: "",
};

/// The paper's claims, decided on the rows: Vadam ≈ BBVI by the authors' Table 1 test and MC
/// dropout better, each on more than half the data sets (the majority is ours: the paper
/// reports the table), and VOGN and Vadam faster than BBVI on the convergence set.
pub(super) fn claims(rows: &[Row]) -> Vec<Claim> {
    let comparisons = compare(rows);
    let n = comparisons.len();
    let majority = n / 2 + 1;
    let (n_same, same) = count_of(&comparisons, comparable);
    let (_, per_point) = count_of(&comparisons, comparable_per_point);
    let decided = |d: Decision| count_of(&comparisons, move |c| c.dropout == d);
    let (_, dropout) = decided(Decision::Holds);
    let (_, open) = decided(Decision::Undecided);
    let dropout_parts: Vec<Decision> = comparisons.iter().map(|c| c.dropout).collect();
    let mut claims = vec![
        Claim::new(
            COMPARABLE,
            "Vadam performs comparably to BBVI (Table 1: test RMSE and joint test LL)",
            format!(
                "comparable on {same}; with the per-point LL in place of the joint one on \
                 {per_point}"
            ),
            Verdict::exact(
                n_same >= majority,
                format!(
                    "on at least {majority} of {n} data sets, the Vadam authors' Table 1 test: a \
                     paired two-sided t-test over splits at p = 0.01 rejects equality neither \
                     of the test RMSEs nor of the joint test LLs (the test decides each set; \
                     the majority is ours)"
                ),
            ),
        ),
        Claim::new(
            DROPOUT_BETTER,
            "MC dropout is better than Vadam and BBVI",
            format!("better on {dropout}; undecided on {open}"),
            Verdict::new(
                claim::at_least(&dropout_parts, majority),
                format!(
                    "on at least {majority} of {n} data sets, MC dropout's test RMSE below and \
                     its per-point test LL above both Vadam's and BBVI's, each paired by split \
                     by more than one standard error (a set within one is undecided; the claim \
                     is undecided while the undecided sets could make the majority)"
                ),
            ),
        ),
    ];
    let curves = curves(rows);
    if let Some(target) = target(&curves) {
        let epochs = |w: Which| {
            curves
                .iter()
                .find(|(x, _)| *x == w)
                .and_then(|(_, c)| reach(c, target))
        };
        let show = |w: Which| epochs(w).map_or("not reached".into(), |e| e.to_string());
        // Never reaching the target counts as infinitely many epochs.
        let count = |w: Which| epochs(w).unwrap_or(usize::MAX);
        let bbvi = count(Which::Bbvi);
        claims.push(Claim::new(
            FASTER,
            "VOGN and Vadam converge faster than BBVI",
            format!(
                "epochs to test RMSE ≤ {target:.2} on {}: VOGN {}, Vadam {}, BBVI {}",
                CONVERGENCE_SET.name(),
                show(Which::Vogn),
                show(Which::Vadam),
                show(Which::Bbvi)
            ),
            Verdict::exact(
                count(Which::Vogn) < bbvi && count(Which::Vadam) < bbvi,
                "VOGN and Vadam each reach 110% of the best final test RMSE of the three (mean \
                 over the splits) in fewer epochs than BBVI (never reaching it counts as \
                 infinitely many)",
            ),
        ));
    }
    claims
}
