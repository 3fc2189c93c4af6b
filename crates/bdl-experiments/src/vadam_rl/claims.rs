//! The claim: exploring by Vadam's and VadaGrad's weight perturbation learns faster than no
//! noise, over seeds.

use std::collections::BTreeMap;

use super::settings::Settings;
use super::{Run, early, runs_of};
use crate::claim::{self, Cite, Claim, Measured, Paper, Verdict};

/// The paper's statement the claim tests.
pub(super) const EXPLORATION: Cite = Cite {
    paper: Paper::Khan2018,
    place: "Abstract",
    quote: "the weight-perturbation in our algorithm could be useful for exploration in \
            reinforcement learning",
};

/// The early returns (the mean actor's, over the first half of training) of exploration
/// `name`, by seed.
pub(super) fn early_by_seed(runs: &[Run], name: &str) -> BTreeMap<usize, f64> {
    runs_of(runs, name)
        .into_iter()
        .map(|r| (r.seed, early(r)))
        .collect()
}

/// The paper's claim: weight perturbation from Vadam and from VadaGrad learns faster than no
/// exploration, decided on the mean actor's return over the first half of training, paired by
/// seed (the seed fixes the start states and the critic's initialisation).
pub(super) fn claims(runs: &[Run], settings: &Settings) -> Vec<Claim> {
    let plain = early_by_seed(runs, &settings.explorations[0].name());
    let mut parts = Vec::new();
    let mut ours = Vec::new();
    for e in &settings.explorations[2..] {
        let noisy = early_by_seed(runs, &e.name());
        let (a, b): (Vec<f64>, Vec<f64>) = noisy
            .iter()
            .filter_map(|(seed, v)| plain.get(seed).map(|p| (*v, *p)))
            .unzip();
        let d = Measured::paired(&a, &b);
        parts.push(claim::decide_positive(d));
        ours.push(format!("{} − no noise {d:.1}", e.name()));
    }
    let plain_mean = Measured::of(&plain.values().copied().collect::<Vec<_>>());
    vec![Claim::new(
        EXPLORATION,
        "exploring by Vadam's and VadaGrad's weight perturbation learns faster than no noise",
        format!(
            "mean-actor return over the first half of training, paired by seed: {} (no noise \
             {plain_mean:.1}, {} seeds)",
            ours.join(", "),
            plain.len()
        ),
        Verdict::new(
            claim::all(&parts),
            "for each weight-noise rule, the mean over seeds of its paired difference to no \
             noise in the mean-actor return averaged over the first half of training positive \
             by more than one standard error (undecided within one)",
        ),
    )]
}
