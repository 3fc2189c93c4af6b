//! `gibbs-augment`: the main blocked-Gibbs chain with the training images augmented, against
//! the same chain without (Papamarkou 2023, Table 4: augmentation hurts accuracy).
//!
//! Protocol: the main chain of `gibbs-mnist` on MNIST and on Fashion-MNIST (batch 3000, the
//! paper's variances, 10 sub-blocks per first-layer node, 110,000 iterations in the paper
//! profile; the quick profile's shorter chain otherwise), and the same chain (same
//! configuration and seed, so the same θ₀ and the same minibatch order) on the training images
//! augmented as in the paper: a rotation drawn from ±30°, a 9 × 9 Gaussian blur with σ drawn from
//! [1, 1.5] applied with probability 0.9, colour inversion with probability 0.5, each image
//! transformed on its own stream; then standardised with the augmented images' mean and standard
//! deviation. Both are tested on the original test images. Each of the four chains is a unit
//! (its row), so the paper profile can be run in pieces (`--shard`, `--merge`, `--out runs`).
//!
//! One difference from the paper's loader: there every epoch draws new transforms; here each
//! training image is transformed once (a fixed augmented training set), so that the chain's
//! target stays one posterior.

use anyhow::Result;
use bdl_data::mnist::Collection;
use bdl_data::transforms::{Param, Transform};
use bdl_eval::table::Table;
use bdl_mcmc::Keep;
use serde::{Deserialize, Serialize};

use crate::claim::{self, Cite, Claim, Measured, Paper};
use crate::concurrency::side_by_side;
use crate::gibbs_mnist::{MainChain, main_chain, test_images};
use crate::gibbs_xor::{list, summarise};
use crate::units::Units;
use crate::{Context, Entry, Outcome, Profile};

/// The experiment.
pub(crate) const EXPERIMENT: Entry = Entry {
    name: "gibbs-augment",
    reproduces: "Papamarkou (2023), Table 4: blocked Gibbs on MNIST and Fashion-MNIST with the \
     training images augmented (rotation, blur, inversion) against without",
    run,
    shards: true,
};

/// The paper's augmentation.
fn augmentation() -> Vec<Transform> {
    vec![
        Transform::Rotate {
            degrees: Param::Uniform {
                low: -30.0,
                high: 30.0,
            },
        },
        Transform::GaussianBlur {
            kernel_size: 9,
            sigma: Param::Uniform {
                low: 1.0,
                high: 1.5,
            },
        }
        .with_probability(0.9),
        Transform::Invert.with_probability(0.5),
    ]
}

/// The paper's statement the claims test.
const HURTS: Cite = Cite {
    paper: Paper::Papamarkou2023,
    place: "Table 4",
    quote: "",
};

/// The settings in `results.json` (the chains' are `gibbs-mnist`'s).
#[derive(Debug, Serialize)]
struct Settings {
    augmentation: Vec<Transform>,
}

/// One chain's results (a unit of the run).
#[derive(Debug, Serialize, Deserialize)]
struct Row {
    data: Collection,
    augmented: bool,
    batch_size: usize,
    iterations: u64,
    prediction_window: u64,
    layer_acceptance: Vec<f64>,
    test_accuracy: f64,
    /// The wall time of sampling what was missing (0 for a chain `gibbs-mnist` had finished),
    /// and the iteration the chain was resumed at.
    wall_s: f64,
    resumed_at: u64,
}

fn row(main: &MainChain, collection: Collection, augmented: bool) -> Result<Row> {
    let keep = Keep {
        last: Some(main.window),
        ..Keep::default()
    };
    let summary = summarise(&main.chain, main.burn_in, &keep, &main.test)?;
    Ok(Row {
        data: collection,
        augmented,
        batch_size: main.batch,
        iterations: main.iterations,
        prediction_window: main.window,
        layer_acceptance: summary.layer_acceptance,
        test_accuracy: summary.accuracy,
        wall_s: main.wall_s,
        resumed_at: main.resumed_at,
    })
}

fn run(ctx: &Context) -> Result<Outcome> {
    let settings = Settings {
        augmentation: augmentation(),
    };
    // The smoke and quick profiles sample the augmented chains afresh (their wall times are
    // measured); the paper profile resumes them.
    let chains = ctx.dir.join("chains");
    if ctx.profile != Profile::Paper && chains.exists() {
        std::fs::remove_dir_all(&chains)?;
    }
    // Each chain's row is a unit (the paper profile saves it as soon as the chain is sampled
    // and summarised; a shard takes its share), side by side, one chain per core.
    let all: Vec<(Collection, bool)> = [Collection::Mnist, Collection::FashionMnist]
        .into_iter()
        .flat_map(|c| [(c, false), (c, true)])
        .collect();
    let key = |&(c, augmented): &(Collection, bool)| {
        format!(
            "{}-{}",
            c.folder(),
            if augmented { "augmented" } else { "plain" }
        )
    };
    let units = Units::new(ctx, &settings)?;
    let total = all.len();
    let mine = units.share(all);
    let rows = side_by_side(&mine, |unit| -> Result<Row> {
        let &(collection, augmented) = unit;
        units.get_or_run(&key(unit), || {
            let transforms = augmented.then_some(&settings.augmentation[..]);
            row(
                &main_chain(ctx, collection, transforms)?,
                collection,
                augmented,
            )
        })
    })?;
    if let Some(shard) = units.shard_outcome(mine.iter().map(key).collect(), total) {
        return Ok(shard);
    }
    for pair in rows.chunks_exact(2) {
        ctx.log(format!(
            "{}: accuracy {:.3} without augmentation, {:.3} with",
            pair[0].data.folder(),
            pair[0].test_accuracy,
            pair[1].test_accuracy
        ));
    }
    let mut t = Table::new([
        "data",
        "training images",
        "chain",
        "acceptance per layer",
        "test accuracy",
        "wall time (s)",
    ]);
    for r in &rows {
        t.row([
            r.data.folder().to_owned(),
            if r.augmented { "augmented" } else { "as given" }.to_owned(),
            format!(
                "batch {}, {} iterations, last {}",
                r.batch_size, r.iterations, r.prediction_window
            ),
            list(&r.layer_acceptance, 3),
            format!("{:.3}", r.test_accuracy),
            format!("{:.1}", r.wall_s),
        ]);
    }
    let body = format!(
        "The main chain of `gibbs-mnist` and the same chain on augmented training images \
         (rotation in ±30°, 9 × 9 Gaussian blur with σ in [1, 1.5] with probability 0.9, \
         inversion with probability 0.5; each image transformed once), both tested on the \
         original test images. A wall time of 0 means the chain was already complete.\n\n{}",
        t.to_markdown()
    );
    let mut claims = Vec::new();
    for pair in rows.chunks_exact(2) {
        let (plain, augmented) = (&pair[0], &pair[1]);
        let n_test = test_images(ctx, plain.data)?;
        let verdict = claim::less(
            Measured::proportion(augmented.test_accuracy, n_test),
            Measured::proportion(plain.test_accuracy, n_test),
        );
        claims.push(Claim::new(
            HURTS,
            format!(
                "{}: augmenting the training set hurts accuracy",
                plain.data.folder()
            ),
            format!(
                "test accuracy {:.3} without augmentation, {:.3} with ({n_test} test images)",
                plain.test_accuracy, augmented.test_accuracy
            ),
            verdict.described(
                "the augmented chain's test accuracy below the plain chain's by more than one \
                 binomial standard error of the difference (undecided within one)",
            ),
        ));
    }
    Ok(Outcome::new(
        "gibbs-augment: blocked Gibbs with and without training-set augmentation",
        &settings,
        &rows,
    )?
    .body(body)
    .claims(claims))
}
