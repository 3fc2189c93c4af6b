//! Claims as data: the paper's statement, our value, the criterion, and whether it held,
//! decided by small tested functions instead of inside Markdown formatting.

use serde::{Deserialize, Serialize};

/// One claim of a paper, checked against our run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    /// The paper's statement.
    pub statement: String,
    /// What we measured, in words and numbers.
    pub ours: String,
    /// How the verdict is decided (fixed before the run).
    pub criterion: String,
    /// Whether the claim held on our run.
    pub holds: bool,
}

impl Claim {
    /// The claim `statement`, decided by `verdict`, with our numbers in `ours`.
    pub fn new(statement: impl Into<String>, ours: impl Into<String>, verdict: Verdict) -> Self {
        Self {
            statement: statement.into(),
            ours: ours.into(),
            criterion: verdict.criterion,
            holds: verdict.holds,
        }
    }
}

/// A decision and the criterion that made it.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// Whether the criterion was met.
    pub holds: bool,
    /// The criterion in words.
    pub criterion: String,
}

impl Verdict {
    /// A verdict from an explicit test.
    pub fn new(holds: bool, criterion: impl Into<String>) -> Self {
        Self {
            holds,
            criterion: criterion.into(),
        }
    }
}

/// `a < b`.
pub fn less(a: f64, b: f64) -> Verdict {
    Verdict::new(a < b, "strictly smaller")
}

/// `a > b`.
pub fn greater(a: f64, b: f64) -> Verdict {
    Verdict::new(a > b, "strictly larger")
}

/// `a` and `b` agree within `k` standard errors of their difference, `se` (a paired or
/// pooled standard error computed by the caller).
pub fn within_se(a: f64, b: f64, se: f64, k: f64) -> Verdict {
    Verdict::new(
        (a - b).abs() <= k * se,
        format!("|difference| ≤ {k} standard errors"),
    )
}

/// At least `needed` of `count` cases passed.
pub fn at_least(passed: usize, needed: usize, of: usize) -> Verdict {
    Verdict::new(passed >= needed, format!("at least {needed} of {of}"))
}

/// Every consecutive step of `values` falls (`falling`) or rises (`!falling`) by more than
/// `slack`'s negative: no step goes the wrong way by more than `slack`, and the last value is on
/// the right side of the first.
pub fn monotone_trend(values: &[f64], falling: bool, slack: f64) -> Verdict {
    let sign = if falling { -1.0 } else { 1.0 };
    let steps_ok = values.windows(2).all(|w| sign * (w[1] - w[0]) >= -slack);
    let ends_ok = match (values.first(), values.last()) {
        (Some(a), Some(b)) if values.len() >= 2 => sign * (b - a) > 0.0,
        _ => false,
    };
    let direction = if falling { "falls" } else { "rises" };
    Verdict::new(
        steps_ok && ends_ok,
        format!(
            "the sequence {direction} from first to last and no step goes the other way by more \
             than {slack}"
        ),
    )
}

/// The claims as a Markdown table: statement, ours, criterion, holds.
pub fn table(claims: &[Claim]) -> String {
    let mut t = bdl_eval::table::Table::new(["paper's claim", "ours", "criterion", "holds"]);
    for c in claims {
        t.row([
            c.statement.clone(),
            c.ours.clone(),
            c.criterion.clone(),
            yes_no(c.holds).to_owned(),
        ]);
    }
    t.to_markdown()
}

/// "yes" or "no".
pub fn yes_no(b: bool) -> &'static str {
    if b { "yes" } else { "no" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparisons_decide_both_ways() {
        assert!(less(1.0, 2.0).holds && !less(2.0, 1.0).holds && !less(1.0, 1.0).holds);
        assert!(greater(2.0, 1.0).holds && !greater(1.0, 1.0).holds);
        assert!(!less(f64::NAN, 1.0).holds, "NaN never satisfies a claim");
        assert!(within_se(1.0, 1.5, 0.3, 2.0).holds && !within_se(1.0, 1.7, 0.3, 2.0).holds);
        assert!(at_least(4, 4, 12).holds && !at_least(3, 4, 12).holds);
    }

    #[test]
    fn trends_allow_slack_but_not_reversal() {
        assert!(monotone_trend(&[3.0, 2.0, 2.05, 1.0], true, 0.1).holds);
        assert!(!monotone_trend(&[3.0, 2.0, 2.5, 1.0], true, 0.1).holds);
        assert!(!monotone_trend(&[1.0, 1.0], true, 0.1).holds, "no net fall");
        assert!(!monotone_trend(&[1.0], true, 0.1).holds);
        assert!(monotone_trend(&[1.0, 2.0, 3.0], false, 0.0).holds);
    }

    #[test]
    fn the_table_shows_every_field() {
        let c = Claim::new("A beats B", "0.9 vs 0.8", greater(0.9, 0.8));
        let md = table(&[c]);
        assert!(
            md.contains("| A beats B | 0.9 vs 0.8 | strictly larger | yes |"),
            "{md}"
        );
    }
}
