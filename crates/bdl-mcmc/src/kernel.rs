//! The Metropolis-within-blocked-Gibbs kernel.
//!
//! One sweep visits the blocks b = 1, …, B in a fixed order. For block b it proposes
//! θ'_b = θ_b + √v_b · ε, ε ~ N(0, I), keeps every other block, and accepts with probability
//!
//! ```text
//! α = min(1, exp(ℓ̂(θ') + log p(θ') − ℓ̂(θ) − log p(θ)))
//! ```
//!
//! where ℓ̂ is the log-likelihood of one and the same data batch for both states (the plain sum,
//! not rescaled) and p(θ) = N(θ; 0, s² I) the prior (s² = 10 by default). The prior ratio only
//! involves the block: log p(θ') − log p(θ) = (‖θ_b‖² − ‖θ'_b‖²) / (2s²). On rejection the block
//! is **restored** before the next block is visited, so each block update is a Metropolis step
//! that leaves the target invariant, and so is the sweep.
//!
//! The published sampler (Papamarkou 2023) does not restore: a rejected proposal stays in its
//! proposal vector, later blocks of the sweep are scored with it, and their acceptance ratio is
//! taken against the log-target of the last accepted state. That kernel does not preserve the
//! target (on a two-block Gaussian with correlation 0.9 its draws have correlation ≈ 0.86).
//! [`OnReject::KeepRejectedPublishedBug`] reproduces it for comparisons only.

use candle_core::WithDType;
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

use bdl_inference::InvalidParam;

use crate::{Block, Error, Real, Result};

/// A target that the kernel updates block by block: it holds a *working* parameter vector and
/// the log-likelihood ℓ̂ of its current data batch there, and scores a changed block cheaply.
///
/// The kernel calls [`reset`](Self::reset) at the start of every sweep, then for each block
/// [`propose`](Self::propose) followed by exactly one of [`accept`](Self::accept) (keep the
/// proposed values) or [`reject`](Self::reject) (restore the block).
pub trait BlockTarget {
    /// The dtype of the parameters.
    type Scalar: Real;

    /// Sets the working parameters to `theta` and returns ℓ̂(θ).
    fn reset(&mut self, theta: &[Self::Scalar]) -> f64;

    /// Sets the parameters of block `block` (an index into the kernel's blocks) to `values` and
    /// returns ℓ̂ of the changed working vector.
    fn propose(&mut self, block: usize, values: &[Self::Scalar]) -> f64;

    /// Keeps the proposed values.
    fn accept(&mut self);

    /// Restores the block to its values before the proposal.
    fn reject(&mut self);
}

/// What a rejected proposal leaves behind.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnReject {
    /// The block is restored (the correct Metropolis-within-Gibbs kernel).
    #[default]
    Restore,
    /// The published sampler's bug, for comparisons only: the rejected values stay in the
    /// working vector for the rest of the sweep, and later blocks are accepted or rejected
    /// against the log-target of the last accepted state. With exact (full-data) sweeps the
    /// published code also carries that log-target over to the next sweep instead of
    /// recomputing it; so does this mode. Not a valid MCMC kernel.
    KeepRejectedPublishedBug,
}

/// Per-block acceptance counts.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Acceptance {
    /// Accepted proposals per block.
    pub accepted: Vec<u64>,
    /// Proposals per block.
    pub proposed: Vec<u64>,
}

impl Acceptance {
    /// Zero counts for `n_blocks` blocks.
    pub fn new(n_blocks: usize) -> Self {
        Self {
            accepted: vec![0; n_blocks],
            proposed: vec![0; n_blocks],
        }
    }

    /// The number of blocks counted.
    pub fn n_blocks(&self) -> usize {
        self.proposed.len()
    }

    /// The acceptance rate of every block (NaN for a block that has had no proposal).
    pub fn rates(&self) -> Vec<f64> {
        self.accepted
            .iter()
            .zip(&self.proposed)
            .map(|(&a, &p)| a as f64 / p as f64)
            .collect()
    }

    /// The acceptance rate of every layer: accepted over proposed, summed over the layer's
    /// `blocks` (NaN for a layer without proposals).
    pub fn layer_rates(&self, blocks: &[Block]) -> Vec<f64> {
        let n_layers = blocks.iter().map(|b| b.layer + 1).max().unwrap_or(0);
        let mut sums = vec![(0u64, 0u64); n_layers];
        for (b, block) in blocks.iter().enumerate() {
            sums[block.layer].0 += self.accepted[b];
            sums[block.layer].1 += self.proposed[b];
        }
        sums.iter().map(|&(a, p)| a as f64 / p as f64).collect()
    }

    /// The acceptance rate of every node, layer by layer (`[layer][node]`, nodes ascending):
    /// accepted over proposed, summed over the node's sub-blocks; a block without a node (a
    /// layer block) counts as one node of its layer.
    ///
    /// ```
    /// use bdl_mcmc::{Acceptance, Block};
    /// let block = |layer, node| Block { layer, node: Some(node), indices: vec![] };
    /// let blocks = [block(0, 0), block(0, 0), block(0, 1), block(1, 0)];
    /// let acceptance = Acceptance { accepted: vec![1, 3, 2, 0], proposed: vec![4, 4, 4, 4] };
    /// assert_eq!(acceptance.node_rates(&blocks), vec![vec![0.5, 0.5], vec![0.0]]);
    /// ```
    pub fn node_rates(&self, blocks: &[Block]) -> Vec<Vec<f64>> {
        let mut sums: std::collections::BTreeMap<(usize, Option<usize>), (u64, u64)> =
            Default::default();
        for (b, block) in blocks.iter().enumerate() {
            let entry = sums.entry((block.layer, block.node)).or_default();
            entry.0 += self.accepted[b];
            entry.1 += self.proposed[b];
        }
        let n_layers = blocks.iter().map(|b| b.layer + 1).max().unwrap_or(0);
        let mut rates = vec![Vec::new(); n_layers];
        for ((layer, _), (a, p)) in sums {
            rates[layer].push(a as f64 / p as f64);
        }
        rates
    }

    /// Adds the counts of `other` (same blocks).
    #[track_caller]
    pub fn add(&mut self, other: &Acceptance) {
        assert_eq!(
            self.proposed.len(),
            other.proposed.len(),
            "different blocks"
        );
        for (a, b) in self.accepted.iter_mut().zip(&other.accepted) {
            *a += b;
        }
        for (a, b) in self.proposed.iter_mut().zip(&other.proposed) {
            *a += b;
        }
    }
}

/// The chain's state between sweeps: the current parameters θ and the log-target
/// ℓ̂(θ) + log p(θ) the kernel compares proposals against.
#[derive(Clone, Debug, PartialEq)]
pub struct State<S> {
    pub(crate) theta: Vec<S>,
    pub(crate) log_target: Option<f64>,
}

impl<S: Real> State<S> {
    /// The state θ; the first sweep computes its log-target.
    pub fn new(theta: Vec<S>) -> Self {
        Self {
            theta,
            log_target: None,
        }
    }

    /// θ.
    pub fn theta(&self) -> &[S] {
        &self.theta
    }

    /// ℓ̂(θ) + log p(θ) on the last sweep's data (`None` before the first sweep).
    pub fn log_target(&self) -> Option<f64> {
        self.log_target
    }
}

/// The Metropolis-within-blocked-Gibbs kernel: the blocks, their proposal standard deviations,
/// the prior variance and the rejection rule.
///
/// A two-parameter Gaussian target, one block per parameter, scored by a closure:
///
/// ```
/// use bdl_mcmc::{Acceptance, Block, DensityTarget, Kernel, OnReject, State};
/// use bdl_tensor::Seed;
/// let blocks = vec![
///     Block { layer: 0, node: None, indices: vec![0] },
///     Block { layer: 1, node: None, indices: vec![1] },
/// ];
/// let kernel = Kernel::new(blocks.clone(), vec![1.0, 1.0], 10.0, OnReject::Restore).unwrap();
/// // log-likelihood −½ θᵀAθ; with the N(0, 10 I) prior the target is N(0, (A + I/10)⁻¹).
/// let mut target = DensityTarget::new(blocks, |t: &[f64]| -0.5 * (t[0] * t[0] + t[1] * t[1]));
/// let mut state = State::new(vec![0.0f64, 0.0]);
/// let (mut rng, mut acceptance) = (Seed(0).rng(), Acceptance::new(2));
/// for iteration in 0..1000 {
///     kernel.sweep(&mut target, &mut state, &mut rng, &mut acceptance, iteration, false).unwrap();
/// }
/// assert!(acceptance.rates().iter().all(|&r| r > 0.3 && r < 0.9));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    blocks: Vec<Block>,
    sds: Vec<f64>,
    prior_variance: f64,
    on_reject: OnReject,
}

impl Kernel {
    /// A kernel over disjoint `blocks` with proposal variances v_b (`variances`, one per block,
    /// each finite and > 0) and the prior N(0, `prior_variance` · I).
    pub fn new(
        blocks: Vec<Block>,
        variances: Vec<f64>,
        prior_variance: f64,
        on_reject: OnReject,
    ) -> Result<Self> {
        if variances.len() != blocks.len() {
            return Err(InvalidParam::new(
                "proposal",
                format!("{} variances", variances.len()),
                format!("one per block ({})", blocks.len()),
            )
            .into());
        }
        if let Some((b, v)) = variances
            .iter()
            .enumerate()
            .find(|(_, v)| !(v.is_finite() && **v > 0.0))
        {
            return Err(InvalidParam::new(
                "proposal",
                format!("{v} (block {b})"),
                "finite and > 0",
            )
            .into());
        }
        bdl_inference::positive("prior_variance", prior_variance)?;
        let mut all: Vec<usize> = blocks.iter().flat_map(|b| b.indices.clone()).collect();
        all.sort_unstable();
        if let Some(w) = all.windows(2).find(|w| w[0] == w[1]) {
            return Err(InvalidParam::new(
                "blocks",
                format!("parameter {} in two blocks", w[0]),
                "disjoint blocks",
            )
            .into());
        }
        if blocks.iter().any(|b| b.indices.is_empty()) {
            return Err(InvalidParam::new("blocks", "an empty block", "non-empty blocks").into());
        }
        Ok(Self {
            blocks,
            sds: variances.iter().map(|v| v.sqrt()).collect(),
            prior_variance,
            on_reject,
        })
    }

    /// The blocks, in sweep order.
    pub fn blocks(&self) -> &[Block] {
        &self.blocks
    }

    /// Each block's acceptance rate as the target's curvature predicts it
    /// ([`random_walk_acceptance`](crate::random_walk_acceptance)): `curvature` is the diagonal
    /// of the log-likelihood's negative Hessian (a GGN diagonal, say) over the data one ratio
    /// sees, per parameter; the prior adds 1/s² to each.
    ///
    /// # Panics
    /// If a block holds an index beyond `curvature` (a programming error).
    pub fn predicted_acceptance(&self, curvature: &[f64]) -> Vec<f64> {
        let prior = self.prior_variance.recip();
        self.blocks
            .iter()
            .zip(&self.sds)
            .map(|(block, sd)| {
                let trace: f64 = block.indices.iter().map(|&i| curvature[i] + prior).sum();
                crate::random_walk_acceptance(sd * sd, trace)
            })
            .collect()
    }

    /// The same kernel with other proposal variances (one per block).
    pub(crate) fn with_variances(&self, variances: Vec<f64>) -> Result<Self> {
        Self::new(
            self.blocks.clone(),
            variances,
            self.prior_variance,
            self.on_reject,
        )
    }

    /// The rejection rule.
    pub fn on_reject(&self) -> OnReject {
        self.on_reject
    }

    /// log p(θ) = −‖θ‖² / (2s²), up to the constant (which cancels in every ratio).
    fn log_prior<S: Real>(&self, theta: &[S]) -> f64 {
        -theta.iter().map(|t| t.to_f64().powi(2)).sum::<f64>() / (2.0 * self.prior_variance)
    }

    /// One sweep over all blocks on the target's current data; updates `state` and adds to
    /// `acceptance`. `new_data` says that the target's data batch changed since the last sweep;
    /// the log-target of the state is then always recomputed (with [`OnReject::Restore`] it is
    /// recomputed at every sweep, which also discards any drift of incremental updates).
    /// `iteration` only labels errors.
    ///
    /// Random numbers, in order: for each block, its ε (one N(0, 1) per parameter, in index
    /// order), then one U\[0, 1) for the acceptance test.
    ///
    /// Errors with [`Error::NonFinite`] when the target scores the state or a proposal as NaN or
    /// +∞ (−∞ is a valid score: such a proposal is rejected).
    pub fn sweep<B: BlockTarget>(
        &self,
        target: &mut B,
        state: &mut State<B::Scalar>,
        rng: &mut impl Rng,
        acceptance: &mut Acceptance,
        iteration: u64,
        new_data: bool,
    ) -> Result<()> {
        let non_finite = |what: String, value: f64| Error::NonFinite {
            iteration,
            what,
            value,
        };
        let ll = target.reset(&state.theta);
        if ll.is_nan() || ll == f64::INFINITY {
            return Err(non_finite("the current state".into(), ll));
        }
        // Log-prior of the working vector (θ, except for rejected blocks kept by the published
        // rule) and the log-target proposals are compared against.
        let mut log_prior = self.log_prior(&state.theta);
        let mut current = match state.log_target {
            Some(t) if !new_data && self.on_reject == OnReject::KeepRejectedPublishedBug => t,
            _ => ll + log_prior,
        };
        let two_s2 = 2.0 * self.prior_variance;
        let mut proposal: Vec<B::Scalar> = Vec::new();
        for (b, block) in self.blocks.iter().enumerate() {
            proposal.clear();
            let mut prior_change = 0.0;
            for &i in &block.indices {
                let old = state.theta[i].to_f64();
                let eps: f64 = StandardNormal.sample(rng);
                let new = B::Scalar::from_f64(old + self.sds[b] * eps);
                prior_change += (old * old - new.to_f64().powi(2)) / two_s2;
                proposal.push(new);
            }
            let ll_new = target.propose(b, &proposal);
            if ll_new.is_nan() || ll_new == f64::INFINITY {
                return Err(non_finite(
                    format!("the proposal for block {b} (layer {})", block.layer),
                    ll_new,
                ));
            }
            let log_prior_new = log_prior + prior_change;
            let log_target_new = ll_new + log_prior_new;
            let u: f64 = rng.random();
            acceptance.proposed[b] += 1;
            if u.ln() < log_target_new - current {
                target.accept();
                for (&i, &v) in block.indices.iter().zip(&proposal) {
                    state.theta[i] = v;
                }
                current = log_target_new;
                log_prior = log_prior_new;
                acceptance.accepted[b] += 1;
            } else {
                match self.on_reject {
                    OnReject::Restore => target.reject(),
                    OnReject::KeepRejectedPublishedBug => {
                        target.accept();
                        log_prior = log_prior_new;
                    }
                }
            }
        }
        state.log_target = Some(current);
        Ok(())
    }
}

/// A [`BlockTarget`] given by a log-likelihood of the whole parameter vector (a closure), scored
/// from scratch at every proposal: for tests, toy targets and models without incremental
/// evaluation.
pub struct DensityTarget<S, F> {
    blocks: Vec<Block>,
    log_lik: F,
    params: Vec<S>,
    saved: Vec<S>,
    pending: Option<usize>,
}

impl<S: Real, F: Fn(&[S]) -> f64> DensityTarget<S, F> {
    /// The target ℓ̂(θ) = `log_lik`(θ) over the kernel's `blocks`.
    pub fn new(blocks: Vec<Block>, log_lik: F) -> Self {
        Self {
            blocks,
            log_lik,
            params: Vec::new(),
            saved: Vec::new(),
            pending: None,
        }
    }
}

impl<S: Real, F: Fn(&[S]) -> f64> BlockTarget for DensityTarget<S, F> {
    type Scalar = S;

    fn reset(&mut self, theta: &[S]) -> f64 {
        self.params = theta.to_vec();
        self.pending = None;
        (self.log_lik)(&self.params)
    }

    fn propose(&mut self, block: usize, values: &[S]) -> f64 {
        let indices = &self.blocks[block].indices;
        self.saved.clear();
        for (&i, &v) in indices.iter().zip(values) {
            self.saved.push(self.params[i]);
            self.params[i] = v;
        }
        self.pending = Some(block);
        (self.log_lik)(&self.params)
    }

    fn accept(&mut self) {
        self.pending = None;
    }

    fn reject(&mut self) {
        let block = self.pending.take().expect("reject without a proposal");
        for (&i, &v) in self.blocks[block].indices.iter().zip(&self.saved) {
            self.params[i] = v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bdl_tensor::Seed;

    fn one_block() -> Vec<Block> {
        vec![Block {
            layer: 0,
            node: Some(0),
            indices: vec![0],
        }]
    }

    /// A proposal scored NaN or +∞ stops the chain with an error naming the iteration and the
    /// block; −∞ is a rejection.
    #[test]
    fn non_finite_scores() {
        let kernel = Kernel::new(one_block(), vec![1.0], 10.0, OnReject::Restore).unwrap();
        let sweep = |score: fn(&[f64]) -> f64| {
            let mut target = DensityTarget::new(one_block(), score);
            let mut state = State::new(vec![0.0f64]);
            let mut acceptance = Acceptance::new(1);
            let result = kernel.sweep(
                &mut target,
                &mut state,
                &mut Seed(0).rng(),
                &mut acceptance,
                7,
                true,
            );
            (result, state, acceptance)
        };
        let (result, ..) = sweep(|t| if t[0] == 0.0 { 0.0 } else { f64::NAN });
        let err = result.unwrap_err();
        assert!(
            matches!(err, Error::NonFinite { iteration: 7, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("block 0"), "{err}");
        let (result, ..) = sweep(|_| f64::INFINITY);
        assert!(matches!(result, Err(Error::NonFinite { .. })));
        let (result, state, acceptance) =
            sweep(|t| if t[0] == 0.0 { 0.0 } else { f64::NEG_INFINITY });
        result.unwrap();
        assert_eq!((state.theta(), acceptance.accepted[0]), (&[0.0][..], 0));
    }

    #[test]
    fn overlapping_or_empty_blocks_are_rejected() {
        let mut blocks = one_block();
        blocks.push(blocks[0].clone());
        let err = Kernel::new(blocks, vec![1.0, 1.0], 10.0, OnReject::Restore).unwrap_err();
        assert!(
            matches!(
                &err,
                Error::Inference(bdl_inference::Error::InvalidParam(p)) if p.param == "blocks"
            ),
            "{err}"
        );
        let empty = vec![Block {
            layer: 0,
            node: None,
            indices: vec![],
        }];
        assert!(Kernel::new(empty, vec![1.0], 10.0, OnReject::Restore).is_err());
    }
}
