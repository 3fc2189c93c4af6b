//! The claims: subnetwork Laplace against every baseline but VOGN, and the Wasserstein
//! subnetwork against the random one, by the test log-likelihood averaged over angles.

use super::report::{averaged, log_lik, of, over_angles};
use super::{Key, Method, RESNET_METHODS, Row};
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
pub(super) fn ll_by_seed(rows: &[Row], method: impl Into<Key>) -> Vec<(Option<usize>, f64)> {
    of(rows, method)
        .map(|r| (r.seed, over_angles(r, log_lik)))
        .collect()
}

/// `a − b` of the test log-likelihood averaged over every angle, paired by seed (the seeds
/// both have; one pair has no standard error).
pub(super) fn paired_ll(rows: &[Row], a: impl Into<Key>, b: impl Into<Key>) -> Measured {
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
    let resnet = |resnet| Key::Resnet { resnet };
    if of(rows, resnet(Method::SubnetWasserstein)).next().is_some() {
        claims.push(resnet_claim(rows));
    }
    claims
}

/// The paper's first claim on the ResNet rows, the paper's own architecture (criterion fixed
/// 2026-12-07, before any run): the Wasserstein subnetwork's test log-likelihood averaged over
/// angles above each other ResNet row's (MAP, diagonal Laplace, SWAG, the random subnetwork),
/// paired by seed, by more than one standard error.
fn resnet_claim(rows: &[Row]) -> Claim {
    let resnet = |resnet| Key::Resnet { resnet };
    let w = resnet(Method::SubnetWasserstein);
    let others: Vec<Key> = (RESNET_METHODS.into_iter())
        .filter(|&m| m != Method::SubnetWasserstein)
        .map(resnet)
        .collect();
    let each: Vec<Decision> = (others.iter())
        .map(|m| claim::decide_positive(paired_ll(rows, &w, m)))
        .collect();
    let margins: Vec<String> = (others.iter())
        .map(|m| format!("− {} {:.3}", m.name(), paired_ll(rows, &w, m)))
        .collect();
    Claim::new(
        SUBNET_BEST,
        "with the paper's ResNet, subnetwork Laplace has a higher log-likelihood than the other \
         ResNet rows",
        format!(
            "Wasserstein subnetwork test LL averaged over angles {:.3}; paired differences {}",
            averaged(rows, &w, log_lik).mean,
            margins.join(", ")
        ),
        Verdict::new(
            claim::all(&each),
            "the ResNet's Wasserstein subnetwork above its MAP, diagonal Laplace, SWAG and \
             random subnetwork, paired by seed, each by more than one standard error (undecided \
             where one is within it and none is contrary)",
        ),
    )
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
