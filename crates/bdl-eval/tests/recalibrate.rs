//! Recalibration on synthetic data with a known truth: the fitted temperature and widening
//! recover the miscalibration, and conformal sets and intervals cover at the asked rate.

use bdl_eval::metrics::{mean_log_lik, predictive_entropy};
use bdl_eval::recalibrate::{
    ConformalIntervals, ConformalSets, Temperature, Widening, mutual_information,
};
use bdl_likelihoods::Predictive;
use bdl_tensor::Seed;
use candle_core::{DType, Device, Tensor};
use rand::Rng;

const CLASSES: usize = 4;

/// `n` points with logits z ~ N(0, 1.5²) per class and labels drawn from softmax(z); the
/// predictive softmax(`sharpen` · z).
fn classes(n: usize, sharpen: f64, seed: u64) -> (Predictive, Tensor) {
    let z = bdl_tensor::normal(
        &mut Seed(seed).rng(),
        (n, CLASSES),
        0.0,
        1.5,
        DType::F64,
        &Device::Cpu,
    )
    .unwrap();
    let z: Vec<Vec<f64>> = z.to_vec2().unwrap();
    let softmax = |row: &[f64], a: f64| -> Vec<f64> {
        let e: Vec<f64> = row.iter().map(|v| (a * v).exp()).collect();
        let s: f64 = e.iter().sum();
        e.iter().map(|v| v / s).collect()
    };
    let mut rng = Seed(seed + 1000).rng();
    let labels: Vec<u32> = z
        .iter()
        .map(|row| {
            let p = softmax(row, 1.0);
            let u: f64 = rng.random();
            let mut acc = 0.0;
            p.iter()
                .position(|q| {
                    acc += q;
                    u < acc
                })
                .unwrap_or(CLASSES - 1) as u32
        })
        .collect();
    let probs: Vec<f64> = z.iter().flat_map(|row| softmax(row, sharpen)).collect();
    let pred =
        Predictive::categorical(&Tensor::from_vec(probs, (n, CLASSES), &Device::Cpu).unwrap())
            .unwrap();
    (pred, Tensor::from_vec(labels, n, &Device::Cpu).unwrap())
}

/// `n` targets y ~ N(μ, 1) with μ ~ N(0, 1), and the predictive N(μ, `sd`²).
fn regression(n: usize, sd: f64, seed: u64) -> (Predictive, Tensor) {
    let dev = &Device::Cpu;
    let mu = bdl_tensor::normal(&mut Seed(seed).rng(), (n, 1), 0.0, 1.0, DType::F64, dev).unwrap();
    let e =
        bdl_tensor::normal(&mut Seed(seed + 1).rng(), (n, 1), 0.0, 1.0, DType::F64, dev).unwrap();
    let y = (&mu + e).unwrap();
    let var = Tensor::full(sd * sd, (n, 1), dev).unwrap();
    (Predictive::gaussian(&mu, &var).unwrap(), y)
}

#[test]
fn temperature_undoes_a_sharpened_softmax() {
    let (pred, labels) = classes(20_000, 3.0, 1);
    let t = Temperature::fit(&pred, &labels).unwrap();
    assert!((t.temperature / 3.0 - 1.0).abs() < 0.05, "{t:?}");
    let before = mean_log_lik(&pred, &labels).unwrap();
    let after = mean_log_lik(&t.apply(&pred).unwrap(), &labels).unwrap();
    assert!(after > before + 0.1, "{before} → {after}");
}

#[test]
fn widening_undoes_a_too_narrow_gaussian() {
    let (pred, y) = regression(20_000, 0.5, 3);
    let w = Widening::fit(&pred, &y).unwrap();
    assert!((w.factor / 2.0 - 1.0).abs() < 0.03, "{w:?}");
    assert!(Widening::fit(&classes(10, 1.0, 0).0, &y).is_err());
}

/// Calibrated on 2000 points, tested on 20,000 others: coverage within 0.025 of 0.9 (about 3.5
/// standard deviations of the calibration draw) and never far below, for a miscalibrated
/// predictive.
#[test]
fn conformal_sets_and_intervals_cover_at_the_asked_rate() {
    let alpha = 0.1;
    let (cal, cal_labels) = classes(2000, 3.0, 5);
    let (test, test_labels) = classes(20_000, 3.0, 6);
    let sets = ConformalSets::calibrate(&cal, &cal_labels, alpha).unwrap();
    let labels: Vec<u32> = test_labels.to_vec1().unwrap();
    let chosen = sets.sets(&test).unwrap();
    let covered = chosen
        .iter()
        .zip(&labels)
        .filter(|(s, y)| s.contains(&(**y as usize)))
        .count() as f64
        / labels.len() as f64;
    assert!((covered - 0.9).abs() < 0.025, "set coverage {covered}");
    let mean_size = chosen.iter().map(Vec::len).sum::<usize>() as f64 / chosen.len() as f64;
    assert!(mean_size > 1.0 && mean_size < CLASSES as f64, "{mean_size}");

    let (cal, cal_y) = regression(2000, 0.5, 7);
    let (test, test_y) = regression(20_000, 0.5, 8);
    let conformal = ConformalIntervals::calibrate(&cal, &cal_y, alpha).unwrap();
    // The truth is N(μ, 1): the 90% half-width is 1.645, 3.29 predictive sds of 0.5.
    assert!((conformal.scale / 3.29 - 1.0).abs() < 0.05, "{conformal:?}");
    let y: Vec<f64> = test_y.flatten_all().unwrap().to_vec1().unwrap();
    let intervals = conformal.intervals(&test).unwrap();
    let covered = intervals
        .iter()
        .zip(&y)
        .filter(|((lo, hi), y)| lo <= *y && *y <= hi)
        .count() as f64
        / y.len() as f64;
    assert!((covered - 0.9).abs() < 0.025, "interval coverage {covered}");
}

#[test]
fn conformal_rejects_what_it_cannot_calibrate() {
    let (pred, labels) = classes(10, 1.0, 9);
    assert!(ConformalSets::calibrate(&pred, &labels, 0.0).is_err());
    assert!(ConformalSets::calibrate(&pred, &labels.narrow(0, 0, 5).unwrap(), 0.1).is_err());
    // Ten points cannot give 99%: the threshold is infinite and every set is every class.
    let sets = ConformalSets::calibrate(&pred, &labels, 0.01).unwrap();
    assert!(sets.sets(&pred).unwrap().iter().all(|s| s.len() == CLASSES));
    assert!(ConformalIntervals::calibrate(&pred, &labels, 0.1).is_err());
}

/// The mutual information is at most the predictive entropy of the mixture, and zero for
/// components that agree.
#[test]
fn mutual_information_is_bounded_by_the_entropy() {
    let parts: Vec<Tensor> = (0..5)
        .map(|s| {
            let (p, _) = classes(50, 1.0 + s as f64, 20 + s);
            p.probs().unwrap()
        })
        .collect();
    let stacked = Tensor::stack(&parts, 0).unwrap();
    let mi = mutual_information(&stacked).unwrap();
    let mean = Predictive::categorical(&stacked.mean(0).unwrap()).unwrap();
    let h = predictive_entropy(&mean).unwrap();
    assert!(mi.iter().zip(&h).all(|(m, h)| *m >= 0.0 && *m <= h + 1e-12));
    assert!(mi.iter().any(|&m| m > 0.01));
    let same = Tensor::stack(&[parts[0].clone(), parts[0].clone()], 0).unwrap();
    assert!(
        mutual_information(&same)
            .unwrap()
            .iter()
            .all(|m| m.abs() < 1e-12)
    );
}
