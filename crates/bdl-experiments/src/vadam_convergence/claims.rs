//! The claims: VOGN and Vadam reach a lower test log-loss than BBVI early in training, under
//! each protocol, over restarts.

use super::settings::{Protocol, Settings};
use super::{Row, runs_of};
use crate::claim::{self, Cite, Claim, Measured, Paper, Verdict};

/// The paper's statement the convergence claims test.
pub(super) const FASTER: Cite = Cite {
    paper: Paper::Khan2018,
    place: "convergence experiment",
    quote: "",
};

/// The test log-losses after epoch `e` (from 0) of `method` at KL weight 1 in `protocol`, one
/// per restart.
pub(super) fn losses_at(rows: &[Row], protocol: &Protocol, method: &str, e: usize) -> Measured {
    let values: Vec<f64> = runs_of(rows, protocol, method, 1.0)
        .map(|r| r.test_log_loss.get(e).copied().unwrap_or(f64::NAN))
        .collect();
    Measured::of(&values)
}

/// The paper's convergence claim, once per protocol: at the comparison epoch (a tenth of the
/// run), VOGN's and Vadam's mean test log-loss over restarts are each below BBVI's by more than
/// a standard error of the difference.
pub(super) fn claims(rows: &[Row], settings: &Settings) -> Vec<Claim> {
    let e = settings.compare_at - 1;
    settings
        .protocols
        .iter()
        .map(|protocol| {
            let loss = |name: &str| losses_at(rows, protocol, name, e);
            let (vogn, vadam, bbvi) = (loss("VOGN"), loss("Vadam"), loss("BBVI"));
            let decision = claim::all(&[
                claim::less(vogn, bbvi).decision,
                claim::less(vadam, bbvi).decision,
            ]);
            Claim::new(
                FASTER,
                format!(
                    "VOGN and Vadam converge faster than BBVI ({} protocol)",
                    protocol.name
                ),
                format!(
                    "test log-loss after {} of {} epochs: VOGN {vogn:.4}, Vadam {vadam:.4}, \
                     BBVI {bbvi:.4}",
                    settings.compare_at, settings.epochs
                ),
                Verdict::new(
                    decision,
                    format!(
                        "after a tenth of the epochs ({}), VOGN's and Vadam's mean test \
                         log-loss over restarts each below BBVI's by more than one standard \
                         error of the difference (undecided within one)",
                        settings.compare_at
                    ),
                ),
            )
        })
        .collect()
}
