//! Pilot tuning of the per-layer proposal variances (the paper's pre-runs).
//!
//! A pilot runs rounds of `sweeps` sweeps, each from where the last one ended. After a round,
//! every layer whose acceptance rate lies inside the band [lo, hi] is frozen at its variance;
//! every other layer moves its variance by a bisection on log v: it remembers the largest
//! variance found too small (acceptance above hi) and the smallest found too large (acceptance
//! below lo), and tries their geometric mean, or a factor of 4 beyond the one bound it has. The
//! acceptance rate of a random-walk step falls as its variance grows, so each layer's variance
//! is bracketed within a few rounds and then halved in log scale every round.
//!
//! The draws of a pilot are discarded. [`ChainConfig::pilot`](crate::ChainConfig::pilot) runs
//! one before a chain's first chunk and records its [`PilotReport`] (the variances the chain
//! then samples with) in the chain's manifest, so a resumed chain samples with the same ones.

use bdl_inference::{InvalidParam, Validate};
use serde::{Deserialize, Serialize};

use crate::sampler::Engine;
use crate::{ProposalVariance, Real, Result};

/// Settings of a pilot.
///
/// ```
/// use bdl_inference::Validate;
/// use bdl_mcmc::Pilot;
/// let pilot = Pilot::new([0.2, 0.5]).check().unwrap();
/// assert_eq!((pilot.sweeps, pilot.max_rounds), (200, 30));
/// assert!(Pilot::new([0.5, 0.2]).check().is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Pilot {
    /// The acceptance band [lo, hi] every layer is tuned into, 0 < lo < hi < 1.
    pub band: [f64; 2],
    /// Sweeps per round.
    pub sweeps: u64,
    /// At most this many rounds.
    pub max_rounds: usize,
}

impl Pilot {
    /// A pilot into `band` with rounds of 200 sweeps, at most 30 of them.
    pub fn new(band: [f64; 2]) -> Self {
        Self {
            band,
            sweeps: 200,
            max_rounds: 30,
        }
    }
}

impl Validate for Pilot {
    /// 0 < lo < hi < 1, at least one sweep and one round.
    fn validate(&self) -> Result<(), InvalidParam> {
        let [lo, hi] = self.band;
        bdl_inference::require(
            0.0 < lo && lo < hi && hi < 1.0,
            "band",
            format!("[{lo}, {hi}]"),
            "0 < lo < hi < 1",
        )?;
        bdl_inference::at_least_one("sweeps", self.sweeps as usize)?;
        bdl_inference::at_least_one("max_rounds", self.max_rounds)
    }
}

/// What a pilot found.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PilotReport {
    /// The tuned variance of every layer.
    pub variances: Vec<f64>,
    /// Every layer's acceptance rate in the round that froze it (or in the last round).
    pub rates: Vec<f64>,
    /// Rounds run.
    pub rounds: usize,
    /// Whether every layer ended inside the band (otherwise `max_rounds` ran out).
    pub converged: bool,
}

/// One layer's search.
#[derive(Clone, Copy, Debug)]
struct Search {
    variance: f64,
    /// The largest variance that accepted too often, and the smallest that accepted too rarely.
    too_small: Option<f64>,
    too_large: Option<f64>,
    frozen: bool,
    rate: f64,
}

impl Search {
    /// Takes the acceptance `rate` of the round run at `self.variance`.
    fn update(&mut self, rate: f64, [lo, hi]: [f64; 2]) {
        if self.frozen {
            return;
        }
        self.rate = rate;
        let v = self.variance;
        if rate > hi {
            self.too_small = Some(self.too_small.map_or(v, |s| s.max(v)));
        } else if rate < lo {
            self.too_large = Some(self.too_large.map_or(v, |l| l.min(v)));
        } else {
            self.frozen = true;
            return;
        }
        self.variance = match (self.too_small, self.too_large) {
            (Some(s), Some(l)) => (s * l).sqrt(),
            (Some(s), None) => 4.0 * s,
            (None, Some(l)) => l / 4.0,
            (None, None) => unreachable!("one bound was just set"),
        };
    }
}

/// The initial per-layer variances of `proposal` for `n_layers` layers.
pub(crate) fn initial(proposal: &ProposalVariance, n_layers: usize) -> Result<Vec<f64>> {
    match proposal {
        ProposalVariance::Common(v) => Ok(vec![*v; n_layers]),
        ProposalVariance::PerLayer(v) => Ok(v.clone()),
        ProposalVariance::PerBlock(_) => Err(InvalidParam::new(
            "proposal",
            "one variance per block",
            "common or per layer, for pilot tuning",
        )
        .into()),
    }
}

/// Runs `pilot` on `engine` from its current state with per-layer variances starting at
/// `variances`; leaves the engine at the tuned variances, its acceptance counts cleared.
pub(crate) fn tune<T: Real>(
    engine: &mut Engine<T>,
    variances: Vec<f64>,
    pilot: &Pilot,
    rng: &mut bdl_tensor::ChaCha8Rng,
) -> Result<PilotReport> {
    let mut searches: Vec<Search> = variances
        .into_iter()
        .map(|variance| Search {
            variance,
            too_small: None,
            too_large: None,
            frozen: false,
            rate: f64::NAN,
        })
        .collect();
    let mut t = 0;
    let mut rounds = 0;
    while rounds < pilot.max_rounds && !searches.iter().all(|s| s.frozen) {
        engine.set_layer_variances(&searches.iter().map(|s| s.variance).collect::<Vec<_>>())?;
        engine.take_acceptance();
        for _ in 0..pilot.sweeps {
            engine.iterate(t, rng)?;
            t += 1;
        }
        let rates = engine.take_acceptance().layer_rates(engine.blocks());
        for (search, &rate) in searches.iter_mut().zip(&rates) {
            search.update(rate, pilot.band);
        }
        rounds += 1;
    }
    let variances: Vec<f64> = searches.iter().map(|s| s.variance).collect();
    engine.set_layer_variances(&variances)?;
    Ok(PilotReport {
        variances,
        rates: searches.iter().map(|s| s.rate).collect(),
        rounds,
        converged: searches.iter().all(|s| s.frozen),
    })
}
