//! The subnetwork size curve (Daxberger et al. 2021, Fig. 5: performance against the size of
//! the subnetwork): the Wasserstein and the random subnetwork, both at the scaled prior
//! λ_S = λ·S/D ([`SCALED_PRIOR`](super::settings::SCALED_PRIOR)), at each size of
//! [`SizeCurve`] and at the run's `subnet_size` (the scaled-prior rows, their scores at the
//! curve's angles), by the test log-likelihood averaged over the curve's angles.
//!
//! The claims' criteria were fixed before the paper run (2026-12-07): (1) at every size the
//! Wasserstein subnetwork's test LL above the random one's, paired by seed, by more than one
//! standard error; (2) the largest Wasserstein subnetwork's test LL above the smallest one's,
//! paired by seed, by more than one standard error. Undecided within one standard error.

use anyhow::{Result, ensure};
use bdl_data::Standardizer;
use bdl_eval::metrics::MeanSe;
use bdl_eval::plot::{Figure, Panel};
use bdl_eval::table::Table;
use serde::Serialize;

use super::claims::ll_by_seed;
use super::report::{Metric, averaged, error, log_lik, of, short};
use super::settings::{Settings, SizeCurve};
use super::{Images, Inputs, Method, Row};
use crate::claim::{self, Cite, Claim, Decision, Measured, Paper, Verdict};
use crate::report::mean_with_band;

/// The paper's statement the claims test.
const SIZE_CURVE: Cite = Cite {
    paper: Paper::Daxberger2021,
    place: "rotated MNIST, Fig. 5 (performance against subnetwork size)",
    quote: "",
};

/// The curve's two subnetworks.
const WASSERSTEIN: Method = Method::SubnetWassersteinScaledPrior;
const RANDOM: Method = Method::SubnetRandomScaledPrior;

/// The test images at the curve's angles (and the OOD images), standardised by `scale`.
pub(super) fn inputs(
    images: &Images,
    scale: &Standardizer,
    curve: &SizeCurve,
    settings: &Settings,
) -> Result<Inputs> {
    ensure!(
        curve.angles.iter().all(|a| settings.angles.contains(a)),
        "the size curve's angles {:?} are not all among the run's {:?}",
        curve.angles,
        settings.angles
    );
    Inputs::new(images, scale, &curve.angles)
}

/// The rows of one size of the curve, marked with their size.
pub(super) fn at_size(rows: Vec<Row>, size: usize) -> Vec<Row> {
    (rows.into_iter())
        .map(|r| Row {
            subnet_size: Some(size),
            ..r
        })
        .collect()
}

/// Every point of the curve: the scaled-prior rows of the main `rows` (subnetworks of the
/// run's `subnet_size`) with their scores at the curve's angles alone, and the curve's own
/// `curve` rows.
pub(super) fn points(
    rows: &[Row],
    curve: Vec<Row>,
    settings: &Settings,
    size_curve: &SizeCurve,
) -> Vec<Row> {
    let main = (of(rows, WASSERSTEIN).chain(of(rows, RANDOM))).map(|r| Row {
        scores: (r.scores.iter())
            .filter(|s| size_curve.angles.contains(&s.angle))
            .cloned()
            .collect(),
        subnet_size: Some(settings.fits.subnet_size),
        ..r.clone()
    });
    main.chain(curve).collect()
}

/// The curve's sizes present in `points`, ascending.
fn sizes(points: &[Row]) -> Vec<usize> {
    let mut sizes: Vec<usize> = points.iter().filter_map(|r| r.subnet_size).collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

/// The points of size `size`.
fn at(points: &[Row], size: usize) -> Vec<Row> {
    (points.iter())
        .filter(|r| r.subnet_size == Some(size))
        .cloned()
        .collect()
}

/// The two claims of the curve ([module docs](self)); none with fewer than two sizes.
pub(super) fn claims(points: &[Row]) -> Vec<Claim> {
    let sizes = sizes(points);
    let (Some(&small), Some(&large)) = (sizes.first(), sizes.last()) else {
        return Vec::new();
    };
    if small == large {
        return Vec::new();
    }
    let gaps: Vec<(usize, Measured)> = (sizes.iter())
        .map(|&k| {
            let rows = at(points, k);
            let gap =
                Measured::paired_by(&ll_by_seed(&rows, WASSERSTEIN), &ll_by_seed(&rows, RANDOM));
            (k, gap)
        })
        .collect();
    let each: Vec<Decision> = gaps
        .iter()
        .map(|&(_, g)| claim::decide_positive(g))
        .collect();
    let gaps_text: Vec<String> = gaps.iter().map(|(k, g)| format!("{k}: {g:.3}")).collect();
    let rise = Measured::paired_by(
        &ll_by_seed(&at(points, large), WASSERSTEIN),
        &ll_by_seed(&at(points, small), WASSERSTEIN),
    );
    vec![
        Claim::new(
            SIZE_CURVE,
            "the Wasserstein subnetwork beats the random one at every subnetwork size (both at \
             λ_S = λS/D)",
            format!(
                "Wasserstein − random, test LL averaged over the curve's angles, by size: {}",
                gaps_text.join(", ")
            ),
            Verdict::new(
                claim::all(&each),
                "at every size, the mean paired difference Wasserstein − random positive by \
                 more than one standard error (undecided where one is within it and none is \
                 contrary)",
            ),
        ),
        Claim::new(
            SIZE_CURVE,
            "a larger Wasserstein subnetwork has a higher test log-likelihood (both at λ_S = \
             λS/D)",
            format!("test LL at {large} − at {small} weights, paired by seed: {rise:.3}"),
            claim::positive(rise).described(
                "the largest size's test LL above the smallest's, paired by seed, by more than \
                 one standard error (undecided within one or with one seed)",
            ),
        ),
    ]
}

/// The curve's table: each subnetwork's test LL and error at each size (mean ± standard error
/// over seeds), and λ_S.
pub(super) fn section(points: &[Row], curve: &SizeCurve) -> String {
    let sizes = sizes(points);
    if sizes.len() < 2 {
        return String::new();
    }
    let mut t = Table::new([
        "weights",
        "λ_S",
        "test LL, Wasserstein",
        "test LL, random",
        "error, Wasserstein",
        "error, random",
        "fit + evaluate (s), Wasserstein",
    ]);
    for &k in &sizes {
        let rows = at(points, k);
        let lambda = of(&rows, WASSERSTEIN).find_map(|r| r.lambda);
        let seconds = MeanSe::of(
            &of(&rows, WASSERSTEIN)
                .map(|r| r.fit_s + r.eval_s)
                .collect::<Vec<_>>(),
        );
        t.row([
            k.to_string(),
            lambda.map_or("–".into(), short),
            format!("{:.3}", averaged(&rows, WASSERSTEIN, log_lik)),
            format!("{:.3}", averaged(&rows, RANDOM, log_lik)),
            format!("{:.3}", averaged(&rows, WASSERSTEIN, error)),
            format!("{:.3}", averaged(&rows, RANDOM, error)),
            format!("{:.0}", seconds.mean),
        ]);
    }
    let angles: Vec<String> = curve.angles.iter().map(|a| format!("{a}°")).collect();
    format!(
        "\n## Subnetwork size curve (both subnetworks at λ_S = λS/D)\n\n\
         Scores averaged over the angles {} (mean ± standard error over seeds); the run's own \
         size is the scaled-prior rows above. `size-curve.svg` plots them.\n\n{}",
        angles.join(", "),
        t.to_markdown()
    )
}

/// Test log-likelihood and error against log₁₀ of the subnetwork size, a line per subnetwork
/// with a band of ± one standard error over seeds.
pub(super) fn figure(points: &[Row]) -> Figure {
    let sizes = sizes(points);
    let xs: Vec<f64> = sizes.iter().map(|&k| (k as f64).log10()).collect();
    let mut figure = Figure::new(2);
    let panels: [(&str, Metric); 2] = [("test log-likelihood", log_lik), ("test error", error)];
    for (i, (title, metric)) in panels.into_iter().enumerate() {
        let mut panel = Panel::new(title);
        panel.labels("log₁₀ subnetwork weights", title);
        for m in [WASSERSTEIN, RANDOM] {
            let stats: Vec<MeanSe> = (sizes.iter())
                .map(|&k| averaged(&at(points, k), m, metric))
                .collect();
            mean_with_band(&mut panel, &xs, &stats, m.color());
            if i == 0 {
                panel.legend(m.name(), m.color());
            }
        }
        figure = figure.panel(panel);
    }
    figure
}

/// What `results.json` records of the run's settings: the experiment's and the size curve's.
#[derive(Serialize)]
pub(super) struct WithCurve<'a, S> {
    #[serde(flatten)]
    settings: &'a S,
    size_curve: &'a SizeCurve,
}

/// `settings` with the size curve's beside them.
pub(super) fn with_curve<'a, S: Serialize>(
    settings: &'a S,
    size_curve: &'a SizeCurve,
) -> WithCurve<'a, S> {
    WithCurve {
        settings,
        size_curve,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shift_mnist::tests::row;

    /// Three seeds of both subnetworks at each (size, Wasserstein LL, random LL), per-seed
    /// jitter ±0.01 on the Wasserstein rows.
    fn curve(points: &[(usize, f64, f64)]) -> Vec<Row> {
        let mut rows = Vec::new();
        for &(k, w, r) in points {
            for seed in 0..3 {
                let jitter = 0.01 * (seed as f64 - 1.0);
                rows.extend(at_size(
                    vec![
                        row(WASSERSTEIN, seed, &[w + jitter, w + jitter]),
                        row(RANDOM, seed, &[r, r]),
                    ],
                    k,
                ));
            }
        }
        rows
    }

    fn verdicts(points: &[Row]) -> Vec<Decision> {
        claims(points).iter().map(|c| c.verdict).collect()
    }

    #[test]
    fn the_curve_claims_follow_the_paired_differences() {
        use Decision::{Fails, Holds, Undecided};
        let rising = [(250, -1.0, -1.5), (500, -0.9, -1.4), (2000, -0.7, -1.2)];
        assert_eq!(verdicts(&curve(&rising)), [Holds, Holds]);
        // Random above Wasserstein at one size fails the first claim only.
        let crossed = [(250, -1.0, -0.8), (500, -0.9, -1.4), (2000, -0.7, -1.2)];
        assert_eq!(verdicts(&curve(&crossed)), [Fails, Holds]);
        // A fall from the smallest to the largest fails the second.
        let falling = [(250, -0.7, -1.5), (2000, -1.0, -1.2)];
        assert_eq!(verdicts(&curve(&falling)), [Holds, Fails]);
        // A rise within the seeds' spread is undecided: per-seed rises 0.025, −0.015, 0.005
        // (mean 0.005, standard error 0.012).
        let mut flat = curve(&[(250, -1.0, -1.5), (2000, -1.0, -1.5)]);
        for r in
            (flat.iter_mut()).filter(|r| r.method == WASSERSTEIN && r.subnet_size == Some(2000))
        {
            let rise = [0.025, -0.015, 0.005][r.seed.unwrap()];
            r.scores.iter_mut().for_each(|s| s.log_lik += rise);
        }
        assert_eq!(verdicts(&flat), [Holds, Undecided]);
        // One size alone makes no curve.
        assert!(claims(&curve(&[(250, -1.0, -1.5)])).is_empty());
    }

    #[test]
    fn the_main_rows_join_the_curve_at_the_curve_angles() {
        let settings = Settings::of(crate::Profile::Quick);
        let size_curve = SizeCurve {
            sizes: vec![125],
            angles: vec![0.0],
        };
        let main = vec![
            row(WASSERSTEIN, 0, &[-0.5, -3.0]),
            row(RANDOM, 0, &[-0.9, -3.0]),
            row(Method::Map, 0, &[-0.1, -0.1]),
        ];
        let points = points(&main, curve(&[(125, -1.0, -1.5)]), &settings, &size_curve);
        let own = at(&points, settings.fits.subnet_size);
        assert_eq!(own.len(), 2, "the MAP is not on the curve");
        assert!(
            own.iter()
                .all(|r| r.scores.len() == 1 && r.scores[0].angle == 0.0)
        );
        assert_eq!(sizes(&points), [125, settings.fits.subnet_size]);
    }
}
