//! Subnetwork selection: which s parameters get a full-covariance posterior.
//!
//! The Wasserstein rule of Daxberger et al. (2021) minimises W₂² between the full-network
//! Laplace posterior and the subnetwork posterior padded with point masses; under a diagonal
//! approximation of the full posterior that is Σ_d σ_d²(1 − m_d), minimised by keeping the s
//! parameters of largest marginal variance σ_d². Weights with no data signal (h_dd = 0, e.g. dead
//! ReLUs) all have the prior's variance 1/λ and tie at the top while carrying no predictive
//! variance, so [`Selection`] reports ties and such parameters, and [`sensitivity_scores`] offers
//! the alternative score σ_d² Σ_n J_nd², each weight's share of the diagonal-approximation
//! linearized predictive variance.

use bdl_inference::{InvalidParam, Posterior as _, require};
use bdl_models::Model as _;
use bdl_tensor::{ParamLayout, Seed};
use rand::seq::index::sample;

use crate::{Result, SubnetLaplace};

/// Which parameters may be selected (`"all"` or `"weights-only"` in JSON).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Candidates {
    /// Every parameter.
    All,
    /// Weights only, no biases (the paper's choice).
    #[default]
    WeightsOnly,
}

impl Candidates {
    fn mask(self, layout: &ParamLayout) -> Vec<bool> {
        match self {
            Self::All => vec![true; layout.len()],
            Self::WeightsOnly => layout.weights_mask(),
        }
    }
}

/// A chosen subnetwork with a report on how clear-cut the choice was.
#[derive(Clone, Debug, PartialEq)]
pub struct Selection {
    /// The flat parameter indices, ascending.
    pub indices: Vec<usize>,
    /// Candidates whose score equals the s-th largest score: when more than the selected ones,
    /// the boundary was decided by the tie-break (smaller index first), not by the score.
    pub tied_at_boundary: usize,
    /// Selected parameters whose score equals the given `uninformative` score (for variances,
    /// the prior variance 1/λ: parameters without any data signal).
    pub uninformative_selected: usize,
}

/// The `s` candidates of largest `score` (ties broken by the smaller index), with a report.
/// `uninformative` names a score that marks parameters without data signal (the prior variance
/// when the scores are marginal variances).
pub fn largest(
    scores: &[f64],
    layout: &ParamLayout,
    candidates: Candidates,
    s: usize,
    uninformative: Option<f64>,
) -> Result<Selection> {
    require(
        scores.len() == layout.len(),
        "scores",
        format!("{} values", scores.len()),
        &format!("one per parameter of the model ({})", layout.len()),
    )?;
    if let Some(bad) = scores.iter().position(|v| v.is_nan()) {
        return Err(InvalidParam::new("scores", format!("NaN at {bad}"), "not NaN").into());
    }
    let mut pool: Vec<usize> = candidates
        .mask(layout)
        .iter()
        .enumerate()
        .filter_map(|(i, &m)| m.then_some(i))
        .collect();
    check_size(s, pool.len())?;
    pool.sort_by(|&a, &b| scores[b].total_cmp(&scores[a]).then(a.cmp(&b)));
    let mut indices = pool[..s].to_vec();
    let tied_at_boundary = match s {
        0 => 0,
        _ => pool
            .iter()
            .filter(|&&i| scores[i] == scores[pool[s - 1]])
            .count(),
    };
    let uninformative_selected =
        uninformative.map_or(0, |u| indices.iter().filter(|&&i| scores[i] == u).count());
    indices.sort_unstable();
    Ok(Selection {
        indices,
        tied_at_boundary,
        uninformative_selected,
    })
}

fn check_size(s: usize, available: usize) -> Result<()> {
    Ok(require(
        s <= available,
        "s",
        s,
        &format!("at most the {available} candidates"),
    )?)
}

/// The Wasserstein rule: the `s` candidates of largest marginal variance, flagging those at the
/// prior variance `prior_variance` (1/λ) as uninformative.
pub fn wasserstein(
    variances: &[f64],
    layout: &ParamLayout,
    candidates: Candidates,
    s: usize,
    prior_variance: f64,
) -> Result<Selection> {
    largest(variances, layout, candidates, s, Some(prior_variance))
}

/// The Wasserstein rule among the parameters the data inform: the `s` candidates of largest
/// marginal variance whose GGN diagonal h_dd is positive. A parameter with h_dd = 0 (a weight
/// into or out of a ReLU unit dead at every training input) has the prior's variance, ties at
/// the top of [`wasserstein`]'s ranking and adds nothing to the linearized predictive; here it is
/// chosen only when fewer than `s` candidates carry a signal, and then counted in
/// `uninformative_selected`. With a scalar prior the ranking is that of the smallest positive
/// h_dd, whatever λ.
///
/// ```
/// use bdl_laplace::selection::{self, Candidates};
/// use bdl_tensor::ParamLayout;
///
/// let layout = ParamLayout::new([("0.weight", vec![1, 4])]);
/// let ggn = [0.0, 2.0, 0.5, 0.0];
/// let variances = selection::diagonal_variances(&ggn, &[1.0; 4]); // 1, 1/3, 2/3, 1
/// let plain = selection::wasserstein(&variances, &layout, Candidates::All, 2, 1.0)?;
/// assert_eq!(plain.indices, [0, 3]); // both without signal
/// let informed = selection::wasserstein_informed(&variances, &ggn, &layout, Candidates::All, 2)?;
/// assert_eq!(informed.indices, [1, 2]);
/// assert_eq!(informed.uninformative_selected, 0);
/// # Ok::<(), bdl_laplace::Error>(())
/// ```
pub fn wasserstein_informed(
    variances: &[f64],
    ggn_diagonal: &[f64],
    layout: &ParamLayout,
    candidates: Candidates,
    s: usize,
) -> Result<Selection> {
    require(
        ggn_diagonal.len() == variances.len(),
        "ggn_diagonal",
        format!("{} values", ggn_diagonal.len()),
        &format!("one per variance ({})", variances.len()),
    )?;
    let scores: Vec<f64> = variances
        .iter()
        .zip(ggn_diagonal)
        .map(|(&v, &h)| if h > 0.0 { v } else { f64::NEG_INFINITY })
        .collect();
    largest(&scores, layout, candidates, s, Some(f64::NEG_INFINITY))
}

/// The exact marginal variances diag(Σ_S) of a full-covariance Laplace posterior, one score per
/// parameter of the model (0 for parameters outside S), for [`wasserstein`]: the paper's rule
/// where the full-covariance posterior over the candidates is affordable (its toy experiment),
/// beside the cheap diagonal-Laplace ([`diagonal_variances`]) and diagonal-SWAG variances.
pub fn exact_variances(posterior: &SubnetLaplace) -> Vec<f64> {
    let mut scores = vec![0.0; posterior.network().layout().len()];
    for (&i, v) in posterior
        .subset()
        .iter()
        .zip(posterior.marginal_variances())
    {
        scores[i] = v;
    }
    scores
}

/// `s` candidates drawn uniformly without replacement from a seeded stream.
pub fn random(
    layout: &ParamLayout,
    candidates: Candidates,
    s: usize,
    seed: Seed,
) -> Result<Selection> {
    let pool: Vec<usize> = candidates
        .mask(layout)
        .iter()
        .enumerate()
        .filter_map(|(i, &m)| m.then_some(i))
        .collect();
    check_size(s, pool.len())?;
    let mut indices: Vec<usize> = sample(&mut seed.fork("random-subnet").rng(), pool.len(), s)
        .into_iter()
        .map(|i| pool[i])
        .collect();
    indices.sort_unstable();
    Ok(Selection {
        indices,
        tied_at_boundary: 0,
        uninformative_selected: 0,
    })
}

/// The `s` candidates of largest magnitude |θ̂_d|.
pub fn magnitude(
    theta: &[f64],
    layout: &ParamLayout,
    candidates: Candidates,
    s: usize,
) -> Result<Selection> {
    let abs: Vec<f64> = theta.iter().map(|t| t.abs()).collect();
    largest(&abs, layout, candidates, s, None)
}

/// The parameters of the last layer (weights and bias, or weights only).
pub fn last_layer(layout: &ParamLayout, candidates: Candidates) -> Selection {
    let last = layout.layers().len() - 1;
    let mask = candidates.mask(layout);
    let indices = layout
        .layer_indices(last)
        .into_iter()
        .filter(|&i| mask[i])
        .collect();
    Selection {
        indices,
        tied_at_boundary: 0,
        uninformative_selected: 0,
    }
}

/// σ_d² Σ_n J_nd²: each parameter's contribution to the linearized predictive variance
/// Σ_n Σ_d J_nd² σ_d² under a diagonal posterior. `jacobian_sq_sums` is Σ_n Σ_k J_nkd² (the GGN
/// diagonal of a unit-variance Gaussian likelihood).
pub fn sensitivity_scores(variances: &[f64], jacobian_sq_sums: &[f64]) -> Vec<f64> {
    variances
        .iter()
        .zip(jacobian_sq_sums)
        .map(|(v, j)| v * j)
        .collect()
}

/// Marginal variances of a diagonal Laplace posterior: σ_d² = 1 / (h_dd + λ_d).
pub fn diagonal_variances(ggn_diagonal: &[f64], prior: &[f64]) -> Vec<f64> {
    ggn_diagonal
        .iter()
        .zip(prior)
        .map(|(h, l)| (h + l).recip())
        .collect()
}
