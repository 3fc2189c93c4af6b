//! Summary statistics over repeated runs (splits, seeds, chains): medians and the paired t-test.

/// The median of `values` (the upper of the two middle values for an even count); `None` when
/// empty or when a value is NaN.
///
/// ```
/// assert_eq!(bdl_eval::stats::median(&[3.0, 1.0, 2.0]), Some(2.0));
/// assert_eq!(bdl_eval::stats::median(&[4.0, 1.0, 3.0, 2.0]), Some(3.0));
/// assert_eq!(bdl_eval::stats::median(&[]), None);
/// ```
pub fn median(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|v| v.is_nan()) {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

/// The two-sided 1% critical value of Student's t with `df` ≥ 1 degrees of freedom (exact to
/// the table's three decimals up to 30; the normal's 2.576 beyond, which errs towards "no
/// difference" by under 7%).
pub fn t_critical_99(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169, 3.106, 3.055, 3.012,
        2.977, 2.947, 2.921, 2.898, 2.878, 2.861, 2.845, 2.831, 2.819, 2.807, 2.797, 2.787, 2.779,
        2.771, 2.763, 2.756, 2.750,
    ];
    TABLE.get(df.max(1) - 1).copied().unwrap_or(2.576)
}

/// The paired t-test of `a` against `b` (equal lengths ≥ 2, paired by position).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairedTTest {
    /// The mean paired difference a − b.
    pub mean_difference: f64,
    /// Its standard error.
    pub se: f64,
    /// t = mean / se (±∞ for a constant non-zero difference, 0 for none).
    pub t: f64,
    /// The degrees of freedom, n − 1.
    pub df: usize,
}

impl PairedTTest {
    /// The test of the pairs (a_i, b_i); `None` for fewer than two pairs or unequal lengths.
    ///
    /// ```
    /// use bdl_eval::stats::PairedTTest;
    /// let t = PairedTTest::of(&[1.0, 2.0, 3.0], &[0.5, 1.5, 2.6]).unwrap();
    /// assert!((t.mean_difference - 0.4667).abs() < 1e-4 && t.df == 2);
    /// assert!(t.rejects_equality_at_1_percent()); // a constant shift, tiny spread
    /// ```
    pub fn of(a: &[f64], b: &[f64]) -> Option<Self> {
        if a.len() != b.len() || a.len() < 2 {
            return None;
        }
        let d: Vec<f64> = a.iter().zip(b).map(|(a, b)| a - b).collect();
        let n = d.len() as f64;
        let mean = d.iter().sum::<f64>() / n;
        let se = (d.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0) / n).sqrt();
        let t = if se > 0.0 {
            mean / se
        } else if mean == 0.0 {
            0.0
        } else {
            mean.signum() * f64::INFINITY
        };
        Some(Self {
            mean_difference: mean,
            se,
            t,
            df: d.len() - 1,
        })
    }

    /// Whether equality of the means is rejected at the two-sided 1% level.
    pub fn rejects_equality_at_1_percent(&self) -> bool {
        self.t.abs() > t_critical_99(self.df)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paired_test_against_hand_computation() {
        // Differences 1, 2, 3, 6: mean 3, sample sd √(14/3), se √(14/12), t = 3/√(14/12).
        let t = PairedTTest::of(&[2.0, 4.0, 6.0, 10.0], &[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert!((t.mean_difference - 3.0).abs() < 1e-15);
        assert!((t.se - (14.0f64 / 12.0).sqrt()).abs() < 1e-15);
        assert_eq!(t.df, 3);
        // t ≈ 2.777 < 5.841 (df = 3): equality is not rejected.
        assert!(!t.rejects_equality_at_1_percent());
        assert!(PairedTTest::of(&[1.0], &[2.0]).is_none());
        assert!(PairedTTest::of(&[1.0, 2.0], &[2.0]).is_none());
        let same = PairedTTest::of(&[1.0, 2.0], &[1.0, 2.0]).unwrap();
        assert_eq!((same.t, same.rejects_equality_at_1_percent()), (0.0, false));
    }

    #[test]
    fn critical_values_follow_the_table() {
        assert_eq!(t_critical_99(1), 63.657);
        assert_eq!(t_critical_99(19), 2.861);
        assert_eq!(t_critical_99(100), 2.576);
        assert_eq!(t_critical_99(0), 63.657);
    }
}
