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
//! deviation; and the same chain with each of the three transformations alone (the paper's
//! Table 4 reports them one by one). All are tested on the original test images. Each of the
//! ten chains is a unit (its row), so the paper profile can be run in pieces (`--shard`,
//! `--merge`, `--out runs`); the six single-transformation chains have their own settings, so
//! the four saved before them stay valid.
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
    lists_methods: false,
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

/// The paper's three transformations, each alone (Table 4 has a column for each), with the
/// probability it has in the combined augmentation.
fn transformations() -> Vec<(&'static str, Vec<Transform>)> {
    let all = augmentation();
    ["rotation", "blur", "inversion"]
        .into_iter()
        .zip(all)
        .map(|(name, t)| (name, vec![t]))
        .collect()
}

/// The settings of the single-transformation chains' units (their own, so that the four chains
/// saved before them stay valid).
#[derive(Debug, Serialize)]
struct SingleSettings {
    transformations: Vec<(&'static str, Vec<Transform>)>,
}

/// One chain of the run: the plain or the combined-augmentation chain of a collection, or a
/// collection's chain with one transformation (an index into [`transformations`]).
#[derive(Clone, Copy, Debug)]
enum Chain {
    Combined {
        data: Collection,
        augmented: bool,
    },
    Single {
        data: Collection,
        transformation: usize,
    },
}

/// The rows in `results.json`: the plain and combined chains, then each transformation alone.
#[derive(Serialize)]
struct Rows<'a> {
    combined: &'a [Row],
    single: Vec<(&'static str, &'a Row)>,
}

fn run(ctx: &Context) -> Result<Outcome> {
    let settings = Settings {
        augmentation: augmentation(),
    };
    let single = SingleSettings {
        transformations: transformations(),
    };
    // The smoke and quick profiles sample the augmented chains afresh (their wall times are
    // measured); the paper profile resumes them.
    let chains = ctx.dir.join("chains");
    if ctx.profile != Profile::Paper && chains.exists() {
        std::fs::remove_dir_all(&chains)?;
    }
    // Each chain's row is a unit (the paper profile saves it as soon as the chain is sampled
    // and summarised; a shard takes its share of each list), side by side, one chain per core.
    let collections = [Collection::Mnist, Collection::FashionMnist];
    let combined: Vec<Chain> = collections
        .into_iter()
        .flat_map(|data| [false, true].map(|augmented| Chain::Combined { data, augmented }))
        .collect();
    let singles: Vec<Chain> = collections
        .into_iter()
        .flat_map(|data| {
            (0..single.transformations.len()).map(move |transformation| Chain::Single {
                data,
                transformation,
            })
        })
        .collect();
    let name = |chain: &Chain| match *chain {
        Chain::Combined { augmented, .. } => {
            if augmented {
                "augmented"
            } else {
                "plain"
            }
        }
        Chain::Single { transformation, .. } => single.transformations[transformation].0,
    };
    let key = |chain: &Chain| {
        let (Chain::Combined { data, .. } | Chain::Single { data, .. }) = *chain;
        format!("{}-{}", data.folder(), name(chain))
    };
    let units = Units::new(ctx, &settings)?;
    let single_units = Units::new(ctx, &single)?;
    let total = combined.len() + singles.len();
    let mut mine = units.share(combined);
    let n_combined = mine.len();
    mine.extend(single_units.share(singles));
    let rows = side_by_side(&mine, |chain| -> Result<Row> {
        let (units, transforms, data, augmented) = match *chain {
            Chain::Combined { data, augmented } => (
                &units,
                augmented.then_some(&settings.augmentation[..]),
                data,
                augmented,
            ),
            Chain::Single {
                data,
                transformation,
            } => (
                &single_units,
                Some(&single.transformations[transformation].1[..]),
                data,
                true,
            ),
        };
        units.get_or_run(&key(chain), || {
            let augment = transforms.map(|t| (name(chain), t));
            row(&main_chain(ctx, data, augment)?, data, augmented)
        })
    })?;
    if let Some(shard) = units.shard_outcome(mine.iter().map(key).collect(), total) {
        return Ok(shard);
    }
    let (plain_and_all, alone) = rows.split_at(n_combined);
    let body = table(&rows, &mine, &name);
    let claims = claims(ctx, plain_and_all, alone, &mine[n_combined..], &name)?;
    let rows = Rows {
        combined: plain_and_all,
        single: alone
            .iter()
            .zip(&mine[n_combined..])
            .map(|(r, chain)| (name(chain), r))
            .collect(),
    };
    Ok(Outcome::new(
        "gibbs-augment: blocked Gibbs with and without training-set augmentation",
        &settings,
        &rows,
    )?
    .body(body)
    .claims(claims))
}

/// The report's table: every chain's acceptance and test accuracy, under the protocol.
fn table(rows: &[Row], chains: &[Chain], name: &dyn Fn(&Chain) -> &'static str) -> String {
    let mut t = Table::new([
        "data",
        "training images",
        "chain",
        "acceptance per layer",
        "test accuracy",
        "wall time (s)",
    ]);
    for (r, chain) in rows.iter().zip(chains) {
        let images = match chain {
            Chain::Combined {
                augmented: false, ..
            } => "as given".to_owned(),
            Chain::Combined { .. } => "augmented (all three)".to_owned(),
            Chain::Single { .. } => format!("{} alone", name(chain)),
        };
        t.row([
            r.data.folder().to_owned(),
            images,
            format!(
                "batch {}, {} iterations, last {}",
                r.batch_size, r.iterations, r.prediction_window
            ),
            list(&r.layer_acceptance, 3),
            format!("{:.3}", r.test_accuracy),
            format!("{:.1}", r.wall_s),
        ]);
    }
    format!(
        "The main chain of `gibbs-mnist`, the same chain on augmented training images \
         (rotation in ±30°, 9 × 9 Gaussian blur with σ in [1, 1.5] with probability 0.9, \
         inversion with probability 0.5; each image transformed once), and on the training \
         images with each of the three alone (Table 4's columns), all tested on the original \
         test images. A wall time of 0 means the chain was already complete.\n\n{}",
        t.to_markdown()
    )
}

/// The claims (each collection's accuracies logged first): augmenting by all three
/// transformations, and by each alone (`alone`, the
/// chains `singles`), hurts each collection's plain chain's accuracy.
fn claims(
    ctx: &Context,
    plain_and_all: &[Row],
    alone: &[Row],
    singles: &[Chain],
    name: &dyn Fn(&Chain) -> &'static str,
) -> Result<Vec<Claim>> {
    for pair in plain_and_all.chunks_exact(2) {
        ctx.log(format!(
            "{}: accuracy {:.3} without augmentation, {:.3} with",
            pair[0].data.folder(),
            pair[0].test_accuracy,
            pair[1].test_accuracy
        ));
    }
    let mut claims = Vec::new();
    for pair in plain_and_all.chunks_exact(2) {
        let (plain, augmented) = (&pair[0], &pair[1]);
        let n_test = test_images(ctx, plain.data)?;
        claims.push(hurts(
            plain,
            augmented,
            "augmenting the training set",
            n_test,
        ));
        for (r, chain) in alone.iter().zip(singles) {
            if r.data == plain.data {
                let what = format!("augmenting by {} alone", name(chain));
                claims.push(hurts(plain, r, &what, n_test));
            }
        }
    }
    Ok(claims)
}

/// The claim that `what` (the chain of `augmented`) hurts the accuracy of the `plain` chain, on
/// `n_test` test images.
fn hurts(plain: &Row, augmented: &Row, what: &str, n_test: usize) -> Claim {
    Claim::new(
        HURTS,
        format!("{}: {what} hurts accuracy", plain.data.folder()),
        format!(
            "test accuracy {:.3} without augmentation, {:.3} with ({n_test} test images)",
            plain.test_accuracy, augmented.test_accuracy
        ),
        claim::less(
            Measured::proportion(augmented.test_accuracy, n_test),
            Measured::proportion(plain.test_accuracy, n_test),
        )
        .described(
            "the augmented chain's test accuracy below the plain chain's by more than one \
             binomial standard error of the difference (undecided within one)",
        ),
    )
}
