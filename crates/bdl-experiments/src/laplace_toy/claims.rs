//! The claims: the subnetwork's in-between uncertainty and the Wasserstein rule against the
//! random one, over MAP seeds.

use super::{INFORMED, INFORMED_FLOOR, Row, SeedRows};
use crate::claim::{self, Cite, Claim, Measured, Paper};

/// The paper's statements the claims test.
pub(super) const IN_BETWEEN: Cite = Cite {
    paper: Paper::Daxberger2021,
    place: "1-D toy regression",
    quote: "",
};
pub(super) const BEATS_RANDOM: Cite = Cite {
    paper: Paper::Daxberger2021,
    place: "1-D toy regression",
    quote: "",
};

/// `value` of `method`'s row on every MAP seed that has one.
pub(super) fn over_seeds(
    seeds: &[SeedRows],
    method: &str,
    value: impl Fn(&Row) -> f64,
) -> Vec<f64> {
    seeds
        .iter()
        .filter_map(|s| s.methods.iter().find(|r| r.method == method))
        .map(value)
        .collect()
}

/// Epistemic sd in the gap over sd at the data.
pub(super) fn gap_ratio(r: &Row) -> f64 {
    r.gap_sd / r.data_sd.max(1e-12)
}

/// The paper's claims, decided over the MAP seeds: each a paired difference with its standard
/// error over the seeds (undecided within one standard error, or with one seed).
pub(super) fn claims(seeds: &[SeedRows]) -> Vec<Claim> {
    let n = seeds.len();
    let full = over_seeds(seeds, "full", gap_ratio);
    let mut claims = Vec::new();
    for name in ["diagonal", "last layer"] {
        let ratio = over_seeds(seeds, name, gap_ratio);
        claims.push(Claim::new(
            IN_BETWEEN,
            format!("{name} loses the in-between uncertainty of the full Laplace"),
            format!(
                "gap/data sd ratio {:.2} vs full {:.2} ({n} MAP seeds)",
                Measured::of(&ratio),
                Measured::of(&full)
            ),
            claim::positive(Measured::paired(&full, &ratio)).described(format!(
                "the full Laplace's gap/data sd ratio above the {name}'s, paired over the MAP \
                 seeds, by more than one standard error (undecided within one)"
            )),
        ));
    }
    let distance = |r: &Row| r.distance_to_full;
    for size in ["50%", "3%", "1%"] {
        let random = over_seeds(seeds, &format!("random {size}"), distance);
        for (rule, tag) in [
            ("Wasserstein exact", ""),
            ("Wasserstein diagonal", ""),
            (INFORMED, "(isolating) "),
            (INFORMED_FLOOR, "(isolating) "),
            ("sensitivity", "(ours) "),
        ] {
            let name = format!("{rule} {size}");
            let w = over_seeds(seeds, &name, distance);
            let signal_free = over_seeds(seeds, &name, |r| {
                r.uninformative_selected.unwrap_or(0) as f64
            });
            let s = seeds[0]
                .methods
                .iter()
                .find(|r| r.method == name)
                .map_or(0, |r| r.s);
            claims.push(Claim::new(
                BEATS_RANDOM,
                format!("{tag}{name} subnet is closer to the full Laplace than random"),
                format!(
                    "distance {:.3} vs {:.3} ({n} MAP seeds; {:.1} of {s} selected weights \
                     without signal on average)",
                    Measured::of(&w),
                    Measured::of(&random),
                    Measured::of(&signal_free).mean,
                ),
                claim::positive(Measured::paired(&random, &w)).described(
                    "distance to the full Laplace's predictive sd smaller than the random \
                     subnet's, paired over the MAP seeds, by more than one standard error \
                     (undecided within one)",
                ),
            ));
        }
    }
    claims
}
