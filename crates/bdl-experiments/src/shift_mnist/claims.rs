//! The claims: subnetwork Laplace against every baseline but VOGN, and the Wasserstein
//! subnetwork against the random one, by the test log-likelihood averaged over angles.

use super::report::{averaged, log_lik, of, over_angles};
use super::{Method, Row};
use crate::claim::{self, Cite, Claim, Decision, Measured, Paper, Verdict};

/// The paper's statements the claims test: its abstract's summary of the benchmarks for the
/// comparison with the baselines, the rotated-MNIST figure alone for the random subnetwork.
pub(super) const SUBNET_BEST: Cite = Cite {
    paper: Paper::Daxberger2021,
    place: "Abstract; rotated MNIST",
    quote: "Empirically, our approach compares favorably to ensembles and less expressive \
            posterior approximations over full networks.",
};
pub(super) const BEATS_RANDOM: Cite = Cite {
    paper: Paper::Daxberger2021,
    place: "rotated MNIST",
    quote: "",
};

/// Each seed's test log-likelihood of `method` averaged over every angle of its rows.
pub(super) fn ll_by_seed(rows: &[Row], method: Method) -> Vec<(Option<usize>, f64)> {
    of(rows, method)
        .map(|r| (r.seed, over_angles(r, log_lik)))
        .collect()
}

/// `a − b` of the test log-likelihood averaged over every angle, paired by seed (the seeds
/// both have; one pair has no standard error).
pub(super) fn paired_ll(rows: &[Row], a: Method, b: Method) -> Measured {
    Measured::paired_by(&ll_by_seed(rows, a), &ll_by_seed(rows, b))
}

/// The paper's two claims, on the test log-likelihood averaged over every angle, each a
/// difference paired by seed, for the subnetworks with λ by validation and again (where the
/// rows have them) for both at the scaled prior
/// ([`SCALED_PRIOR`](super::settings::SCALED_PRIOR)).
pub(super) fn claims(rows: &[Row]) -> Vec<Claim> {
    let mut claims = subnet_claims(rows, Method::SubnetWasserstein, Method::SubnetRandom, "");
    if of(rows, Method::SubnetWassersteinScaledPrior)
        .next()
        .is_some()
    {
        claims.extend(subnet_claims(
            rows,
            Method::SubnetWassersteinScaledPrior,
            Method::SubnetRandomScaledPrior,
            " (both subnetworks at λ_S = λS/D)",
        ));
    }
    claims
}

/// The two claims on the Wasserstein subnetwork `wasserstein` and the random one `random`:
/// (1) the Wasserstein subnetwork above each of the paper's baselines except VOGN (MAP, MC
/// dropout, diagonal Laplace, SWAG, the deep ensemble, the random subnetwork), every difference
/// by more than one standard error; (2) the random subnetwork clearly worse: Wasserstein −
/// random by more than one standard error. Undecided within one standard error or with one
/// seed. `which` follows each statement.
pub(super) fn subnet_claims(
    rows: &[Row],
    wasserstein: Method,
    random: Method,
    which: &str,
) -> Vec<Claim> {
    let ll = |m| averaged(rows, m, log_lik).mean;
    let subnet = ll(wasserstein);
    let baselines =
        Method::PAPER_BASELINES.map(|m| if m == Method::SubnetRandom { random } else { m });
    let beaten: Vec<String> = baselines
        .iter()
        .map(|&m| format!("{} {:.3}", m.name(), ll(m)))
        .collect();
    let each: Vec<Decision> = baselines
        .iter()
        .map(|&m| claim::decide_positive(paired_ll(rows, wasserstein, m)))
        .collect();
    let diff = paired_ll(rows, wasserstein, random);
    let seeds = of(rows, wasserstein).count();
    vec![
        Claim::new(
            SUBNET_BEST,
            format!(
                "subnetwork Laplace has a higher log-likelihood than every baseline except \
                 VOGN{which}"
            ),
            format!(
                "test LL averaged over angles: subnetwork {subnet:.3}; {}; (VOGN {:.3})",
                beaten.join(", "),
                ll(Method::Vogn)
            ),
            Verdict::new(
                claim::all(&each),
                "the Wasserstein subnetwork above each of the six, paired by seed, by more than \
                 one standard error (undecided where one is within it and none is contrary)",
            ),
        ),
        Claim::new(
            BEATS_RANDOM,
            format!("the random subnetwork is clearly worse{which}"),
            format!(
                "Wasserstein − random, test LL averaged over angles: {diff:.3} ({seeds} seeds)"
            ),
            claim::positive(diff).described(
                "the mean paired difference Wasserstein − random positive by more than one \
                 standard error (undecided within one or with one seed)",
            ),
        ),
    ]
}
