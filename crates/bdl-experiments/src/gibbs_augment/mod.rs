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

mod claims;
mod report;
mod settings;

use anyhow::Result;
use bdl_data::mnist::Collection;
use bdl_mcmc::Keep;
use serde::{Deserialize, Serialize};

use self::claims::claims;
use self::report::table;
use self::settings::{Settings, SingleSettings, augmentation, transformations};
use crate::concurrency::side_by_side;
use crate::gibbs_mnist::{MainChain, main_chain};
use crate::gibbs_xor::summarise;
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
    profiles: &Profile::ALL,
    any_device: false,
};

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
