//! Claims as data: the paper's statement and the sentence it comes from, our value, the
//! criterion, and its verdict, decided by small tested functions instead of inside Markdown
//! formatting.
//!
//! A verdict has three values ([`Decision`]): the claim **holds**, **fails**, or is
//! **undecided**, when the difference that decides it lies within one standard error of zero
//! or the run has fewer replicates (seeds, splits, restarts) than the criterion needs to have a
//! standard error at all. Quantities carry their standard error as [`Measured`]; the deciding
//! functions ([`positive`], [`greater`], [`less`], [`close`], [`at_least`], [`all`]) never turn
//! a difference smaller than its own noise into a yes or a no.
//!
//! ```
//! use bdl_experiments::claim::{self, Decision, Measured};
//!
//! // Two methods' test log-likelihoods over five splits, paired by split.
//! let ours = [-0.95, -0.97, -0.96, -0.94, -0.98];
//! let theirs = [-0.96, -0.96, -0.97, -0.95, -0.97];
//! let d = Measured::paired(&ours, &theirs);
//! assert_eq!(claim::positive(d).decision, Decision::Undecided); // 0.002 ± 0.004
//! let clearly = [-0.90, -0.91, -0.92, -0.89, -0.93];
//! assert_eq!(claim::greater_paired(&clearly, &theirs).decision, Decision::Holds);
//! ```

use std::fmt;

use serde::{Deserialize, Serialize};

/// The papers the workspace reproduces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Paper {
    /// Khan et al., "Fast and Scalable Bayesian Deep Learning by Weight-Perturbation in Adam",
    /// ICML 2018.
    Khan2018,
    /// Papamarkou, "Approximate blocked Gibbs sampling for Bayesian neural networks",
    /// Statistics and Computing 33, 2023.
    Papamarkou2023,
    /// Daxberger et al., "Bayesian Deep Learning via Subnetwork Inference", ICML 2021.
    Daxberger2021,
}

impl Paper {
    /// The paper's short citation.
    pub fn citation(self) -> &'static str {
        match self {
            Self::Khan2018 => "Khan et al. (2018)",
            Self::Papamarkou2023 => "Papamarkou (2023)",
            Self::Daxberger2021 => "Daxberger et al. (2021)",
        }
    }
}

/// Where a paper makes a claim, for the experiments' constants: the paper, the place (section,
/// figure or table) and the sentence, quoted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cite {
    /// The paper.
    pub paper: Paper,
    /// Section, figure or table.
    pub place: &'static str,
    /// The paper's sentence that the claim tests, verbatim (elisions marked "…"); empty where
    /// the sentence is not quoted (only the papers' abstracts and introductions were available
    /// to us: a claim made in a results section or a figure carries its place alone).
    pub quote: &'static str,
}

/// Where a claim comes from, as `results.json` records it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    /// The paper's short citation.
    pub paper: String,
    /// Section, figure or table.
    pub place: String,
    /// The paper's sentence, verbatim.
    pub quote: String,
}

impl From<Cite> for Source {
    fn from(c: Cite) -> Self {
        Self {
            paper: c.paper.citation().to_owned(),
            place: c.place.to_owned(),
            quote: c.quote.to_owned(),
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.paper.is_empty() {
            return f.write_str("—");
        }
        if self.quote.is_empty() {
            return write!(f, "{}, {} (not quoted)", self.paper, self.place);
        }
        write!(f, "{}, {}: “{}”", self.paper, self.place, self.quote)
    }
}

/// One claim of a paper, checked against our run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Claim {
    /// The paper's statement, in our words.
    pub statement: String,
    /// Where the paper makes it (absent from results written before sources were recorded).
    #[serde(default)]
    pub source: Source,
    /// What we measured, in words and numbers.
    pub ours: String,
    /// How the verdict is decided (fixed before the run).
    pub criterion: String,
    /// The verdict (results written before undecided verdicts existed record `holds`, a
    /// boolean, which reads as holds or fails).
    #[serde(alias = "holds")]
    pub verdict: Decision,
}

impl Claim {
    /// The claim `statement`, made by the paper at `source`, decided by `verdict`, with our
    /// numbers in `ours`.
    pub fn new(
        source: Cite,
        statement: impl Into<String>,
        ours: impl Into<String>,
        verdict: Verdict,
    ) -> Self {
        Self {
            statement: statement.into(),
            source: source.into(),
            ours: ours.into(),
            criterion: verdict.criterion,
            verdict: verdict.decision,
        }
    }
}

/// What a criterion decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", try_from = "DecisionWire")]
pub enum Decision {
    /// The criterion is met beyond the noise of the run.
    Holds,
    /// The criterion is missed beyond the noise of the run (or the run produced no number).
    Fails,
    /// The deciding difference is within one standard error of zero, or the run has too few
    /// replicates to tell.
    Undecided,
}

/// A decision as `results.json` has spelled it: a name, or the boolean of older files.
#[derive(Deserialize)]
#[serde(untagged)]
enum DecisionWire {
    Held(bool),
    Name(String),
}

impl TryFrom<DecisionWire> for Decision {
    type Error = String;

    fn try_from(w: DecisionWire) -> Result<Self, String> {
        match w {
            DecisionWire::Held(true) => Ok(Self::Holds),
            DecisionWire::Held(false) => Ok(Self::Fails),
            DecisionWire::Name(name) => match name.as_str() {
                "holds" => Ok(Self::Holds),
                "fails" => Ok(Self::Fails),
                "undecided" => Ok(Self::Undecided),
                other => Err(format!(
                    "unknown verdict {other:?} (holds, fails or undecided)"
                )),
            },
        }
    }
}

impl Decision {
    /// Every decision, in the order the index counts them.
    pub const ALL: [Decision; 3] = [Self::Holds, Self::Fails, Self::Undecided];

    /// A yes-or-no test without sampling error.
    pub fn of(holds: bool) -> Self {
        if holds { Self::Holds } else { Self::Fails }
    }

    /// The word for it.
    pub fn name(self) -> &'static str {
        match self {
            Self::Holds => "holds",
            Self::Fails => "fails",
            Self::Undecided => "undecided",
        }
    }
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A decision and the criterion that made it.
#[derive(Clone, Debug, PartialEq)]
pub struct Verdict {
    /// What the criterion decided.
    pub decision: Decision,
    /// The criterion in words.
    pub criterion: String,
}

impl Verdict {
    /// A verdict from an explicit decision.
    pub fn new(decision: Decision, criterion: impl Into<String>) -> Self {
        Self {
            decision,
            criterion: criterion.into(),
        }
    }

    /// A yes-or-no verdict, for criteria on quantities without sampling error (a count, a
    /// property of one computed object).
    pub fn exact(holds: bool, criterion: impl Into<String>) -> Self {
        Self::new(Decision::of(holds), criterion)
    }

    /// The same decision under a criterion worded by the caller.
    pub fn described(self, criterion: impl Into<String>) -> Self {
        Self::new(self.decision, criterion)
    }
}

/// A measured quantity: a mean over replicates (seeds, splits, restarts, test points) and its
/// standard error, `None` when there are too few replicates to have one.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    /// The mean.
    pub mean: f64,
    /// The standard error of the mean.
    pub se: Option<f64>,
}

impl Measured {
    /// The mean and standard error of `values`, s/√n (no standard error below two values).
    pub fn of(values: &[f64]) -> Self {
        let n = values.len();
        let mean = values.iter().sum::<f64>() / n as f64;
        let se = (n > 1).then(|| {
            let ss = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>();
            (ss / (n - 1) as f64 / n as f64).sqrt()
        });
        Self { mean, se }
    }

    /// A number without sampling error.
    pub fn exact(value: f64) -> Self {
        Self {
            mean: value,
            se: Some(0.0),
        }
    }

    /// A mean with a standard error computed elsewhere.
    pub fn with_se(mean: f64, se: f64) -> Self {
        Self { mean, se: Some(se) }
    }

    /// A proportion `p` of `trials` independent trials (an accuracy on a test set, an
    /// acceptance rate), with the binomial standard error √(p(1 − p)/trials).
    pub fn proportion(p: f64, trials: usize) -> Self {
        let se = (trials > 0).then(|| (p * (1.0 - p) / trials as f64).sqrt());
        Self { mean: p, se }
    }

    /// An AUROC `a` of `positives` against `negatives` scores, with the Hanley–McNeil
    /// standard error √([a(1 − a) + (n₊ − 1)(q₁ − a²) + (n₋ − 1)(q₂ − a²)] / (n₊ n₋)),
    /// q₁ = a/(2 − a), q₂ = 2a²/(1 + a); none without scores on both sides.
    ///
    /// ```
    /// use bdl_experiments::claim::Measured;
    ///
    /// let m = Measured::auroc(0.9, 1000, 9000);
    /// assert!((m.se.unwrap() - 0.0066).abs() < 1e-4);
    /// ```
    pub fn auroc(a: f64, positives: usize, negatives: usize) -> Self {
        let (p, n) = (positives as f64, negatives as f64);
        let q1 = a / (2.0 - a);
        let q2 = 2.0 * a * a / (1.0 + a);
        let se = (positives > 0 && negatives > 0).then(|| {
            ((a * (1.0 - a) + (p - 1.0) * (q1 - a * a) + (n - 1.0) * (q2 - a * a)) / (p * n)).sqrt()
        });
        Self { mean: a, se }
    }

    /// The paired differences `a[i] − b[i]` (the same seed, split or restart).
    ///
    /// # Panics
    /// If the lengths differ.
    #[track_caller]
    pub fn paired(a: &[f64], b: &[f64]) -> Self {
        assert_eq!(a.len(), b.len(), "paired values of unequal length");
        let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| x - y).collect();
        Self::of(&d)
    }

    /// The paired differences `a − b` over the replicates both have, matched by key (a seed, a
    /// split, a restart); a NaN mean without a standard error when they share none.
    ///
    /// ```
    /// use bdl_experiments::claim::Measured;
    ///
    /// let d = Measured::paired_by(&[(0, 1.0), (1, 2.0), (2, 9.0)], &[(1, 1.5), (0, 0.5)]);
    /// assert_eq!((d.mean, d.se), (0.5, Some(0.0)));
    /// ```
    pub fn paired_by<K: PartialEq>(a: &[(K, f64)], b: &[(K, f64)]) -> Self {
        let (x, y): (Vec<f64>, Vec<f64>) = a
            .iter()
            .filter_map(|(k, va)| b.iter().find(|(kb, _)| kb == k).map(|(_, vb)| (*va, *vb)))
            .unzip();
        if x.is_empty() {
            return Self {
                mean: f64::NAN,
                se: None,
            };
        }
        Self::paired(&x, &y)
    }

    /// `self − other` for independent estimates: the standard errors add in quadrature.
    pub fn minus(self, other: Self) -> Self {
        Self {
            mean: self.mean - other.mean,
            se: self.se.zip(other.se).map(|(a, b)| a.hypot(b)),
        }
    }

    /// `self − value` for an exact value.
    pub fn less_value(self, value: f64) -> Self {
        Self {
            mean: self.mean - value,
            se: self.se,
        }
    }
}

impl fmt::Display for Measured {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = f.precision().unwrap_or(3);
        match self.se {
            Some(se) if se > 0.0 => write!(f, "{:.p$} ± {se:.p$}", self.mean),
            _ => write!(f, "{:.p$}", self.mean),
        }
    }
}

/// The decision on "`d` > 0": holds when d exceeds one standard error, fails when it is below
/// minus one, undecided within one standard error (a tie included) or without a standard
/// error; a non-finite mean fails.
pub fn decide_positive(d: Measured) -> Decision {
    if !d.mean.is_finite() {
        return Decision::Fails;
    }
    match d.se {
        None => Decision::Undecided,
        Some(se) if d.mean > se => Decision::Holds,
        Some(se) if d.mean < -se => Decision::Fails,
        Some(_) => Decision::Undecided,
    }
}

/// "`d` > 0", decided by [`decide_positive`].
pub fn positive(d: Measured) -> Verdict {
    Verdict::new(
        decide_positive(d),
        "positive by more than one standard error (undecided within one)",
    )
}

/// "`a` > `b`" for independent estimates.
pub fn greater(a: Measured, b: Measured) -> Verdict {
    Verdict::new(
        decide_positive(a.minus(b)),
        "larger by more than one standard error of the difference (undecided within one)",
    )
}

/// "`a` < `b`" for independent estimates.
pub fn less(a: Measured, b: Measured) -> Verdict {
    Verdict::new(
        decide_positive(b.minus(a)),
        "smaller by more than one standard error of the difference (undecided within one)",
    )
}

/// "`a` > `b`" paired by replicate: the mean paired difference against its standard error.
pub fn greater_paired(a: &[f64], b: &[f64]) -> Verdict {
    Verdict::new(
        decide_positive(Measured::paired(a, b)),
        "the mean paired difference positive by more than one standard error (undecided within \
         one)",
    )
}

/// "`d` is within `tolerance` of zero" (two quantities closely match): holds when the whole
/// interval d ± se lies inside ±tolerance, fails when it lies wholly outside, undecided
/// otherwise or without a standard error.
pub fn close(d: Measured, tolerance: f64) -> Verdict {
    let decision = match d.se {
        _ if !d.mean.is_finite() => Decision::Fails,
        None => Decision::Undecided,
        Some(se) if d.mean.abs() + se <= tolerance => Decision::Holds,
        Some(se) if d.mean.abs() - se > tolerance => Decision::Fails,
        Some(_) => Decision::Undecided,
    };
    Verdict::new(
        decision,
        format!(
            "|difference| ± one standard error within {tolerance} (undecided when the interval \
             straddles it)"
        ),
    )
}

/// At least `needed` of `parts` hold: holds when enough hold, fails when too few could
/// (holding and undecided together short of `needed`), undecided otherwise.
pub fn at_least(parts: &[Decision], needed: usize) -> Decision {
    let holds = parts.iter().filter(|&&d| d == Decision::Holds).count();
    let open = parts.iter().filter(|&&d| d == Decision::Undecided).count();
    if holds >= needed {
        Decision::Holds
    } else if holds + open < needed {
        Decision::Fails
    } else {
        Decision::Undecided
    }
}

/// Every one of `parts` holds (none of them is a fail when some are undecided); an empty list
/// fails.
pub fn all(parts: &[Decision]) -> Decision {
    if parts.is_empty() {
        return Decision::Fails;
    }
    at_least(parts, parts.len())
}

/// How many claims of each decision `claims` holds, as (holds, fails, undecided).
pub fn counts(claims: &[Claim]) -> [usize; 3] {
    Decision::ALL.map(|d| claims.iter().filter(|c| c.verdict == d).count())
}

/// "5 hold, 1 fails, 1 undecided of 7 claims".
pub fn summary(claims: &[Claim]) -> String {
    let [h, f, u] = counts(claims);
    format!(
        "{h} {}, {f} {}, {u} undecided of {} claims",
        if h == 1 { "holds" } else { "hold" },
        if f == 1 { "fails" } else { "fail" },
        claims.len()
    )
}

/// The claims as a Markdown table: statement, the paper's words, ours, criterion, verdict.
pub fn table(claims: &[Claim]) -> String {
    let mut t =
        bdl_eval::table::Table::new(["paper's claim", "the paper", "ours", "criterion", "verdict"]);
    for c in claims {
        t.row([
            c.statement.clone(),
            c.source.to_string(),
            c.ours.clone(),
            c.criterion.clone(),
            c.verdict.name().to_owned(),
        ]);
    }
    t.to_markdown()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CITE: Cite = Cite {
        paper: Paper::Daxberger2021,
        place: "§5.3",
        quote: "A beats B",
    };

    #[test]
    fn a_difference_within_one_standard_error_is_undecided() {
        use Decision::*;
        assert_eq!(decide_positive(Measured::with_se(0.9, 1.0)), Undecided);
        assert_eq!(decide_positive(Measured::with_se(-0.9, 1.0)), Undecided);
        assert_eq!(decide_positive(Measured::with_se(1.0, 1.0)), Undecided);
        assert_eq!(decide_positive(Measured::with_se(1.1, 1.0)), Holds);
        assert_eq!(decide_positive(Measured::with_se(-1.1, 1.0)), Fails);
        assert_eq!(decide_positive(Measured::exact(0.0)), Undecided, "a tie");
        assert_eq!(decide_positive(Measured::exact(1e-12)), Holds);
        assert_eq!(decide_positive(Measured::of(&[3.0])), Undecided, "one seed");
        assert_eq!(decide_positive(Measured::with_se(f64::NAN, 1.0)), Fails);
    }

    #[test]
    fn comparisons_combine_the_standard_errors() {
        use Decision::*;
        // 2.0 ± 0.6 against 1.0 ± 0.8: the difference 1.0 ± 1.0 is within one se.
        let (a, b) = (Measured::with_se(2.0, 0.6), Measured::with_se(1.0, 0.8));
        assert_eq!(greater(a, b).decision, Undecided);
        let b = Measured::with_se(1.0, 0.7);
        assert_eq!(greater(a, b).decision, Holds);
        assert_eq!(less(a, b).decision, Fails);
        assert_eq!(less(b, a).decision, Holds);
        assert_eq!(
            greater(a, Measured::of(&[1.0])).decision,
            Undecided,
            "no standard error on one side"
        );
        // Paired: a constant offset is decided however noisy each side is.
        let x = [1.0, 5.0, -3.0, 8.0];
        let y: Vec<f64> = x.iter().map(|v| v - 0.5).collect();
        let y2: Vec<f64> = y
            .iter()
            .enumerate()
            .map(|(i, v)| v + 1e-3 * i as f64)
            .collect();
        assert_eq!(greater_paired(&x, &y2).decision, Holds);
        assert_eq!(
            greater(Measured::of(&x), Measured::of(&y)).decision,
            Undecided
        );
    }

    #[test]
    fn proportions_have_binomial_errors() {
        let p = Measured::proportion(0.9, 10_000);
        assert!((p.se.unwrap() - 0.003).abs() < 1e-12);
        // 0.903 against 0.901 on 10,000 test images each: undecided.
        let d = Measured::proportion(0.903, 10_000).minus(Measured::proportion(0.901, 10_000));
        assert_eq!(decide_positive(d), Decision::Undecided);
        assert_eq!(Measured::proportion(0.5, 0).se, None);
    }

    #[test]
    fn closeness_needs_the_whole_interval() {
        use Decision::*;
        assert_eq!(close(Measured::with_se(0.1, 0.1), 0.3).decision, Holds);
        assert_eq!(
            close(Measured::with_se(-0.25, 0.1), 0.3).decision,
            Undecided
        );
        assert_eq!(close(Measured::with_se(0.5, 0.1), 0.3).decision, Fails);
        assert_eq!(close(Measured::of(&[0.0]), 0.3).decision, Undecided);
    }

    #[test]
    fn counting_parts_keeps_undecided_apart() {
        use Decision::*;
        assert_eq!(at_least(&[Holds, Holds, Fails], 2), Holds);
        assert_eq!(at_least(&[Holds, Undecided, Fails], 2), Undecided);
        assert_eq!(at_least(&[Holds, Fails, Fails], 2), Fails);
        assert_eq!(all(&[Holds, Holds]), Holds);
        assert_eq!(all(&[Holds, Undecided]), Undecided);
        assert_eq!(all(&[Undecided, Fails]), Fails);
        assert_eq!(all(&[]), Fails);
    }

    #[test]
    fn verdicts_read_back_from_old_and_new_results() {
        let c = Claim::new(
            CITE,
            "A beats B",
            "0.9 vs 0.8",
            Verdict::exact(true, "larger"),
        );
        let json = serde_json::to_string(&c).unwrap();
        assert!(json.contains(r#""verdict":"holds""#), "{json}");
        assert_eq!(serde_json::from_str::<Claim>(&json).unwrap(), c);
        let old = r#"{"statement":"s","ours":"o","criterion":"c","holds":false}"#;
        let read: Claim = serde_json::from_str(old).unwrap();
        assert_eq!(read.verdict, Decision::Fails);
        assert_eq!(read.source, Source::default());
        let bad = r#"{"statement":"s","ours":"o","criterion":"c","verdict":"maybe"}"#;
        let err = serde_json::from_str::<Claim>(bad).unwrap_err().to_string();
        assert!(err.contains("unknown verdict"), "{err}");
    }

    #[test]
    fn the_table_and_summary_show_every_field() {
        let c = Claim::new(
            CITE,
            "A beats B",
            "0.9 vs 0.8",
            greater(Measured::exact(0.9), Measured::exact(0.8)),
        );
        let md = table(std::slice::from_ref(&c));
        assert!(
            md.contains(
                "| A beats B | Daxberger et al. (2021), §5.3: “A beats B” | 0.9 vs 0.8 | larger \
                 by more than one standard error of the difference (undecided within one) | holds |"
            ),
            "{md}"
        );
        let u = Claim::new(CITE, "s", "o", Verdict::new(Decision::Undecided, "c"));
        assert_eq!(
            summary(&[c.clone(), u]),
            "1 holds, 0 fail, 1 undecided of 2 claims"
        );
    }
}
