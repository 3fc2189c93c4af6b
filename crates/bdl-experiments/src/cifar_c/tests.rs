use bdl_data::cifar::{Corruption, Severity};

use super::source::Source;
use super::*;
use crate::claim::Decision;

/// A row of `method` on `seed` with test log-likelihood `ll` and error `err` at severities 0–5.
fn row(method: Method, seed: usize, ll: f64, err: f64) -> Row {
    Row {
        method,
        seed,
        lambda: None,
        scores: (0..=5)
            .map(|s| AtSeverity {
                severity: s,
                log_lik: ll - 0.1 * f64::from(s),
                error: err + 0.05 * f64::from(s),
                ece: 0.0,
                brier: 0.0,
            })
            .collect(),
        fit_s: 0.0,
        eval_s: 0.0,
    }
}

/// Every method at `base` (LL) and error 0.1 over three seeds, the Wasserstein subnetwork at
/// `subnet` with a small spread and error `subnet_error`.
fn rows(subnet: f64, subnet_error: f64) -> Vec<Row> {
    let mut rows = Vec::new();
    for seed in 0..3 {
        let jitter = 0.01 * seed as f64;
        rows.push(row(
            Method::SubnetWasserstein,
            seed,
            subnet + jitter,
            subnet_error + 0.001 * seed as f64,
        ));
        for m in Method::ALL
            .iter()
            .filter(|&&m| m != Method::SubnetWasserstein)
        {
            rows.push(row(*m, seed, -1.0, 0.1));
        }
    }
    rows
}

fn verdicts(rows: &[Row]) -> Vec<Decision> {
    claims::claims(rows).iter().map(|c| c.verdict).collect()
}

#[test]
fn claims_follow_the_scores() {
    use Decision::{Fails, Holds, Undecided};
    assert_eq!(verdicts(&rows(-0.8, 0.1)), [Holds, Holds]);
    // Below the baselines, and two points worse than the MAP.
    assert_eq!(verdicts(&rows(-1.2, 0.12)), [Fails, Fails]);
    // One baseline above the subnetwork at the worst severity alone breaks the first claim.
    let mut r = rows(-0.8, 0.1);
    for row in r.iter_mut().filter(|r| r.method == Method::Ensemble) {
        row.scores[5].log_lik = 0.0;
    }
    assert_eq!(verdicts(&r), [Fails, Holds]);
    // KFAC is not one of the paper's baselines: above the subnetwork, it changes nothing.
    let mut r = rows(-0.8, 0.1);
    for row in r.iter_mut().filter(|r| r.method == Method::KfacLaplace) {
        row.scores.iter_mut().for_each(|s| s.log_lik = 0.0);
    }
    assert_eq!(verdicts(&r), [Holds, Holds]);
    // Errors 0.5 to 1.5 points above the MAP's: the interval straddles the tolerance.
    let mut r = rows(-0.8, 0.1);
    for (i, row) in (r.iter_mut())
        .filter(|r| r.method == Method::SubnetWasserstein)
        .enumerate()
    {
        row.scores
            .iter_mut()
            .for_each(|s| s.error += 0.005 + 0.005 * i as f64);
    }
    assert_eq!(verdicts(&r), [Holds, Undecided]);
}

#[test]
fn unit_keys_are_distinct_and_every_method_is_in_one_group() {
    let mut keys: Vec<String> = (0..3)
        .flat_map(|seed| (0..GROUPS.len()).map(move |group| Unit { seed, group }.key()))
        .collect();
    assert_eq!(keys[0], "seed-0-map");
    let n = keys.len();
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), n);
    for m in Method::ALL {
        assert_eq!(GROUPS.iter().filter(|g| g.contains(&m)).count(), 1, "{m:?}");
    }
}

#[test]
fn synthetic_corruptions_add_noise_that_grows_with_the_severity() {
    let source = Source::Synthetic {
        train: 20,
        test: 20,
    };
    let pixels = |set: Dataset| -> Vec<f32> { set.x().flatten_all().unwrap().to_vec1().unwrap() };
    let clean = pixels(source.test().unwrap());
    let train = pixels(source.train().unwrap());
    assert_ne!(clean, train, "the test images are their own draws");
    let gap = |c, s| -> f64 {
        let set = source.corrupted(c, Severity::new(s).unwrap()).unwrap();
        assert_eq!(
            set.y().to_vec1::<u32>().unwrap(),
            (0..20).map(|i| i % 10).collect::<Vec<_>>()
        );
        let x = pixels(set);
        let ss: f64 = x
            .iter()
            .zip(&clean)
            .map(|(a, b)| f64::from(a - b).powi(2))
            .sum();
        (ss / x.len() as f64).sqrt()
    };
    let (g1, g5) = (gap(Corruption::Fog, 1), gap(Corruption::Fog, 5));
    assert!(0.0 < g1 && 2.0 * g1 < g5, "{g1} {g5}");
    assert_ne!(
        gap(Corruption::Fog, 3),
        gap(Corruption::Frost, 3),
        "each corruption its own stream"
    );
    assert_eq!(gap(Corruption::Fog, 3), gap(Corruption::Fog, 3), "seeded");
}

#[test]
fn the_standardiser_is_per_channel() {
    let source = Source::Synthetic {
        train: 30,
        test: 10,
    };
    let x = source.train().unwrap().x().clone();
    let z: Vec<f32> = per_channel(&x)
        .unwrap()
        .transform(&x)
        .unwrap()
        .flatten_all()
        .unwrap()
        .to_vec1()
        .unwrap();
    for c in 0..3 {
        let channel: Vec<f64> = (0..30)
            .flat_map(|i| z[i * 3072 + c * 1024..i * 3072 + (c + 1) * 1024].to_vec())
            .map(f64::from)
            .collect();
        let mean = channel.iter().sum::<f64>() / channel.len() as f64;
        let var = channel.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / channel.len() as f64;
        assert!(
            mean.abs() < 1e-4 && (var - 1.0).abs() < 1e-3,
            "channel {c}: {mean} {var}"
        );
    }
}
