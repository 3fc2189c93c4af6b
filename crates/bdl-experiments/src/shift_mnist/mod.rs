//! `shift-mnist`: the subnetwork paper's rotated-MNIST benchmark (Daxberger et al. 2021, §5.3)
//! with every method of the workspace side by side, a blocked-Gibbs chain included (no published
//! comparison has one).
//!
//! Protocol: LeNet-5 trained on MNIST, the last `validation_images` training images held out
//! for the Laplace family's prior precision; evaluated on the test images rotated by 0°, 15°, …,
//! 180° (bilinear, zero fill, before standardisation) and on the Fashion-MNIST test images as
//! out-of-distribution inputs. Every image is standardised with the training images' global mean
//! and standard deviation. Methods, each on LeNet-5 and over `seeds` seeds:
//!
//! - MAP (Adam, weight decay λ), and MC dropout (p = 0.1 on the dense hidden units, its own MAP);
//! - the linearized Laplace family at the MAP with the probit link: diagonal, last layer (weights
//!   and biases), subnetworks of `subnet_size` weights chosen by the Wasserstein rule with
//!   diagonal-SWAG variances (the paper's choice for deep networks) and at random; the prior
//!   precision of each chosen on the validation images by log-likelihood (the subnetworks' from
//!   one eigendecomposition of their GGN); and both subnetworks again at one prior fixed before
//!   their run and shared by the two, the paper's λ_S = λ·S/D with λ the MAPs' weight decay
//!   ([`SCALED_PRIOR`]: the paper's claims compare the two subsets, which λ chosen on each
//!   one's own scores confounds), units with their own settings; and the two at that prior at
//!   the size curve's other sizes ([`SizeCurve`], the paper's Fig. 5), scored at every 30°;
//! - VOGN, Vadam and IVON started at the MAP mean with σ ≈ 1/√N (initial precision N + λ; IVON
//!   its own h₀ = 1), `vi_epochs` epochs;
//! - SWAG from the MAP (low rank plus diagonal), and a deep ensemble of 5 independent MAPs;
//! - blocked Gibbs on the MLP 784-10-10-10-10 of `gibbs-mnist` (LeNet-5 is not an MLP): that
//!   experiment's main chain on MNIST, its Bayesian marginal over the draws of its prediction
//!   window; one chain, so no band.
//! - the ResNet rows ([`ResnetRows`], smoke and paper profiles): the paper's own architecture,
//!   ResNet-18 on 1 × 28 × 28 images in the paper profile, its MAP trained as LeNet-5's, with
//!   its diagonal Laplace, SWAG and both subnetworks at the paper's 42,438 weights, λ chosen on
//!   the validation images. `--device cuda:N` puts these rows' networks and data on the GPU
//!   (everything else stays on the CPU); the paper profile has them only there, since on the
//!   CPU a ResNet-18 over 58,000 images takes days.
//!
//! Sampling-based predictives average 16 samples (the paper's setting); the chain averages every
//! draw of its window. Metrics at every angle: test log-likelihood, error, ECE (15 bins), Brier;
//! OOD AUROC of the predictive entropy (Fashion-MNIST against MNIST at 0°); reliability diagrams
//! at 0° and 60°.

mod claims;
mod report;
mod resnet;
mod settings;
mod size_curve;

use std::time::Instant;

use anyhow::{Context as _, Result};
use bdl_data::mnist::{self, Collection, Part};
use bdl_data::transforms::{self, Param, Transform};
use bdl_data::{Dataset, Standardizer};
use bdl_eval::metrics::{self, ReliabilityBin};
use bdl_eval::plot::PALETTE;
use bdl_inference::{MapEstimate, Posterior, Validate, train_map};
use bdl_laplace::selection::Candidates;
use bdl_likelihoods::Likelihood;
use bdl_mcmc::Keep;
use bdl_methods::{Hessian, LaplaceSpec, MethodSpec, PriorBy, Problem, SharedFits, SubsetRule};
use bdl_models::{Cnn, CnnSpec, Model as _, Network};
use bdl_tensor::Seed;
use candle_core::{DType, Device, Tensor};
use serde::{Deserialize, Serialize};

use self::claims::claims;
use self::report::{body, figure, present, reliability_figure, resnet_note};
use self::resnet::{RESNET_GROUPS, RESNET_METHODS, RESNET_PALETTE, Resnet};
use self::settings::{
    ResnetRows, SCALED_PRIOR, ScaledPriorSettings, Settings, SizeCurve, SizeCurveSettings,
};
use crate::concurrency::side_by_side;
use crate::fits::Fits;
use crate::gibbs_mnist::main_chain;
use crate::listed::Listed;
use crate::units::{SeedMaps, Units};
use crate::{Context, Entry, Outcome, Profile};

/// The experiment.
pub(crate) const EXPERIMENT: Entry = Entry {
    name: "shift-mnist",
    reproduces: "Daxberger et al. (2021) §5.3: rotated MNIST and Fashion-MNIST as OOD, every \
     method side by side (subnetwork, diagonal and last-layer Laplace, VOGN, Vadam, IVON, SWAG, \
     MC dropout, a deep ensemble, blocked Gibbs)",
    run,
    shards: true,
    lists_methods: true,
    profiles: &Profile::ALL,
    any_device: true,
};

const LIKELIHOOD: Likelihood = Likelihood::Categorical { classes: 10 };
/// Equal-width confidence bins of the ECE and the reliability diagrams (ALGORITHMS.md §D).
const ECE_BINS: usize = 15;
/// Rows per minibatch of the Laplace family's GGN.
const GGN_BATCH: usize = 256;

/// Every method of the benchmark, in table order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Method {
    Map,
    McDropout,
    DiagLaplace,
    LastLayerLaplace,
    SubnetWasserstein,
    SubnetRandom,
    /// The two subnetworks again, both at the paper's λ_S = λ·S/D (see [`SCALED_PRIOR`]).
    SubnetWassersteinScaledPrior,
    SubnetRandomScaledPrior,
    Vogn,
    Vadam,
    Ivon,
    Swag,
    Ensemble,
    Gibbs,
}

impl Method {
    const ALL: [Method; 14] = [
        Method::Map,
        Method::McDropout,
        Method::DiagLaplace,
        Method::LastLayerLaplace,
        Method::SubnetWasserstein,
        Method::SubnetRandom,
        Method::SubnetWassersteinScaledPrior,
        Method::SubnetRandomScaledPrior,
        Method::Vogn,
        Method::Vadam,
        Method::Ivon,
        Method::Swag,
        Method::Ensemble,
        Method::Gibbs,
    ];

    /// The paper's baselines, which its claim compares the subnetwork against (VOGN aside).
    const PAPER_BASELINES: [Method; 6] = [
        Method::Map,
        Method::McDropout,
        Method::DiagLaplace,
        Method::Swag,
        Method::Ensemble,
        Method::SubnetRandom,
    ];

    fn name(self) -> &'static str {
        match self {
            Self::Map => "MAP",
            Self::McDropout => "MC dropout",
            Self::DiagLaplace => "diagonal Laplace",
            Self::LastLayerLaplace => "last-layer Laplace",
            Self::SubnetWasserstein => "subnetwork Laplace (Wasserstein)",
            Self::SubnetRandom => "subnetwork Laplace (random)",
            Self::SubnetWassersteinScaledPrior => "subnetwork Laplace (Wasserstein, λS/D)",
            Self::SubnetRandomScaledPrior => "subnetwork Laplace (random, λS/D)",
            Self::Vogn => "VOGN",
            Self::Vadam => "Vadam",
            Self::Ivon => "IVON",
            Self::Swag => "SWAG",
            Self::Ensemble => "deep ensemble",
            Self::Gibbs => "blocked Gibbs",
        }
    }

    fn model(self) -> &'static str {
        match self {
            Self::Gibbs => "MLP 784-10-10-10-10",
            _ => "LeNet-5",
        }
    }

    fn color(self) -> &'static str {
        let i = Self::ALL.iter().position(|&m| m == self).expect("listed");
        PALETTE[i]
    }
}

/// Colours of the listed methods' lines, after the [`PALETTE`] the experiment's own take.
const LISTED_PALETTE: [&str; 5] = ["#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173"];

/// A row's method: one of the experiment's own, or a listed one (`crate::listed`) by label.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
enum Key {
    Own(Method),
    Listed {
        listed: String,
    },
    /// One of the ResNet rows ([`ResnetRows`]).
    Resnet {
        resnet: Method,
    },
}

impl Key {
    fn name(&self) -> &str {
        match self {
            Self::Own(m) => m.name(),
            Self::Listed { listed } => listed,
            Self::Resnet { resnet } => match resnet {
                Method::Map => "ResNet MAP",
                Method::DiagLaplace => "ResNet diagonal Laplace",
                Method::SubnetWasserstein => "ResNet subnetwork Laplace (Wasserstein)",
                Method::SubnetRandom => "ResNet subnetwork Laplace (random)",
                Method::Swag => "ResNet SWAG",
                _ => "ResNet (a method of no ResNet row)",
            },
        }
    }

    fn model(&self) -> &'static str {
        match self {
            Self::Own(m) => m.model(),
            Self::Listed { .. } => "LeNet-5",
            Self::Resnet { .. } => "ResNet",
        }
    }

    /// The line colour: the own methods' by their place in [`Method::ALL`], a listed one's
    /// by its place among the listed rows present.
    fn color(&self, rows: &[Row]) -> &'static str {
        match self {
            Self::Own(m) => m.color(),
            Self::Listed { .. } => {
                let listed = present(rows)
                    .into_iter()
                    .filter(|k| matches!(k, Self::Listed { .. }));
                let i = listed.take_while(|k| k != self).count();
                LISTED_PALETTE[i % LISTED_PALETTE.len()]
            }
            Self::Resnet { resnet } => {
                let i = RESNET_METHODS.iter().position(|m| m == resnet);
                RESNET_PALETTE[i.unwrap_or(0)]
            }
        }
    }
}

impl From<Method> for Key {
    fn from(m: Method) -> Self {
        Self::Own(m)
    }
}

impl From<&Key> for Key {
    fn from(k: &Key) -> Self {
        k.clone()
    }
}

impl PartialEq<Method> for Key {
    fn eq(&self, m: &Method) -> bool {
        *self == Self::Own(*m)
    }
}

/// The fits of one seed that share their expensive parts, one unit each: a unit's first
/// method names it. The two that train their own networks come right after the MAP, so that a
/// second worker has work while the first trains the MAP the others start from.
const GROUPS: [&[Method]; 8] = [
    &[Method::Map],
    &[Method::McDropout],
    &[Method::Ensemble],
    &[Method::DiagLaplace, Method::LastLayerLaplace],
    // Both subnetworks are the size the SWAG variances choose from.
    &[
        Method::Swag,
        Method::SubnetWasserstein,
        Method::SubnetRandom,
    ],
    &[Method::Vogn],
    &[Method::Vadam],
    &[Method::Ivon],
];

/// A method's scores at one angle.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct AtAngle {
    angle: f64,
    log_lik: f64,
    error: f64,
    ece: f64,
    brier: f64,
}

/// A reliability diagram at one angle.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Reliability {
    angle: f64,
    bins: Vec<ReliabilityBin>,
}

/// One fitted method on one seed.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Row {
    method: Key,
    model: String,
    /// `None` for the one Gibbs chain.
    seed: Option<usize>,
    /// The prior precision chosen on the validation images (the Laplace family).
    lambda: Option<f64>,
    scores: Vec<AtAngle>,
    /// AUROC of the predictive entropy, Fashion-MNIST (positive) against MNIST at 0°.
    ood_auroc: f64,
    reliability: Vec<Reliability>,
    /// Seconds to fit (the Gibbs chain: sampling what was missing; the Laplace family: from
    /// the MAP, a Wasserstein subnetwork without the SWAG run its unit's SWAG row shares), and
    /// to evaluate every predictive.
    fit_s: f64,
    eval_s: f64,
    /// The Laplace family: the same posterior with λ by the marginal likelihood instead.
    evidence: Option<Alternative>,
    /// The subnetwork's weights on the size curve's rows (`size_curve`); `None` elsewhere,
    /// where a subnetwork has the run's `subnet_size`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    subnet_size: Option<usize>,
}

/// A Laplace posterior with its λ chosen by the Laplace marginal likelihood: λ and its scores.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Alternative {
    lambda: f64,
    scores: Vec<AtAngle>,
}

/// The raw images: training (fit and validation parts), test and OOD, before standardisation.
struct Images {
    fit: Dataset,
    val: Dataset,
    test: Dataset,
    fashion: Dataset,
}

impl Images {
    fn load(ctx: &Context, settings: &Settings) -> Result<Self> {
        let first = |data: Dataset, n: Option<usize>| -> Result<Dataset> {
            Ok(match n {
                Some(n) if n < data.len() => data.select(&(0..n).collect::<Vec<_>>())?,
                _ => data,
            })
        };
        let load = |collection, part, n| -> Result<Dataset> {
            let data = mnist::load(&ctx.data, collection, part)
                .with_context(|| format!("{} {part:?}", collection.folder()))?;
            first(data, n)
        };
        let train = load(Collection::Mnist, Part::Train, settings.train_images)?;
        let n_fit = train
            .len()
            .checked_sub(settings.validation_images)
            .filter(|&n| n > 0)
            .with_context(|| {
                format!(
                    "{} training images cannot spare {} for validation",
                    train.len(),
                    settings.validation_images
                )
            })?;
        Ok(Self {
            fit: train.select(&(0..n_fit).collect::<Vec<_>>())?,
            val: train.select(&(n_fit..train.len()).collect::<Vec<_>>())?,
            test: load(Collection::Mnist, Part::Test, settings.test_images)?,
            fashion: load(Collection::FashionMnist, Part::Test, settings.test_images)?,
        })
    }
}

/// What a method is evaluated on, standardised by one standardiser: the test images at every
/// angle with their labels, and the OOD images.
struct Inputs {
    angles: Vec<f64>,
    rotated: Vec<Tensor>,
    labels: Tensor,
    fashion: Tensor,
}

impl Inputs {
    fn new(images: &Images, scale: &Standardizer, angles: &[f64]) -> Result<Self> {
        let shape = images
            .test
            .image_shape()
            .context("MNIST has an image shape")?;
        let rotated = angles
            .iter()
            .map(|&a| {
                let turn = Transform::Rotate {
                    degrees: Param::Fixed(a),
                };
                let x = transforms::apply(images.test.x(), shape, &[turn], Seed(0))?;
                Ok(scale.transform(&x)?)
            })
            .collect::<Result<_>>()?;
        Ok(Self {
            angles: angles.to_vec(),
            rotated,
            labels: images.test.y().clone(),
            fashion: scale.transform(images.fashion.x())?,
        })
    }

    /// The same inputs on `device`.
    fn to_device(&self, device: &Device) -> Result<Self> {
        Ok(Self {
            angles: self.angles.clone(),
            rotated: (self.rotated.iter())
                .map(|x| x.to_device(device))
                .collect::<candle_core::Result<_>>()?,
            labels: self.labels.to_device(device)?,
            fashion: self.fashion.to_device(device)?,
        })
    }
}

impl Prepared {
    /// The same parts and inputs on `device`.
    fn to_device(&self, device: &Device) -> Result<Self> {
        Ok(Self {
            fit: self.fit.to_device(device)?,
            val: self.val.to_device(device)?,
            inputs: self.inputs.to_device(device)?,
        })
    }
}

/// One network's side: the standardised training parts and evaluation inputs, on its device
/// (LeNet-5's on the CPU, the ResNet rows' on the run's device).
struct Prepared {
    fit: Dataset,
    val: Dataset,
    inputs: Inputs,
}

/// One unit of the run: a group of fits on one seed, the Gibbs chain, the two subnetworks
/// of one seed at the scaled prior ([`SCALED_PRIOR`]), or the two at one size of the size curve
/// ([`SizeCurve`]).
#[derive(Clone, Copy, Debug)]
enum Unit {
    Gibbs,
    Fits {
        seed: usize,
        group: usize,
    },
    ScaledPrior {
        seed: usize,
    },
    SizeCurve {
        seed: usize,
        size: usize,
    },
    /// Listed method `index` (`crate::listed`) on one seed.
    Listed {
        seed: usize,
        index: usize,
    },
    /// Group `group` of the ResNet rows ([`RESNET_GROUPS`]) on one seed.
    Resnet {
        seed: usize,
        group: usize,
    },
}

impl Unit {
    fn key(self, listed: &[Listed]) -> String {
        match self {
            Self::Gibbs => "gibbs".to_owned(),
            Self::Listed { seed, index } => format!("seed-{seed}-listed-{}", listed[index].slug),
            Self::ScaledPrior { seed } => format!("seed-{seed}-subnet-scaled-prior"),
            Self::SizeCurve { seed, size } => format!("seed-{seed}-subnet-size-{size}"),
            Self::Fits { seed, group } => {
                let first = serde_json::to_value(GROUPS[group][0]).expect("a name");
                format!("seed-{seed}-{}", first.as_str().expect("a string"))
            }
            Self::Resnet { seed, group } => {
                let first = serde_json::to_value(RESNET_GROUPS[group][0]).expect("a name");
                format!("seed-{seed}-resnet-{}", first.as_str().expect("a string"))
            }
        }
    }
}

fn run(ctx: &Context) -> Result<Outcome> {
    let settings = Settings::of(ctx.profile);
    let images = Images::load(ctx, &settings)?;
    let scale = Standardizer::fit_global(images.fit.x())?;
    let lenet = Prepared {
        fit: images.fit.with_x(scale.transform(images.fit.x())?)?,
        val: images.val.with_x(scale.transform(images.val.x())?)?,
        inputs: Inputs::new(&images, &scale, &settings.angles)?,
    };
    let curve = SizeCurve::of(ctx.profile);
    let curve_inputs = size_curve::inputs(&images, &scale, &curve, &settings)?;
    let [all, scaled, curve_units] = lenet_units(&settings, &curve);
    let listed = crate::listed::methods(ctx, default_listed(&settings, lenet.fit.len())?)?;
    let units = Units::new(ctx, &settings)?;
    let scaled_settings = || ScaledPriorSettings {
        settings: &settings,
        subnet_prior: SCALED_PRIOR,
    };
    let scaled_units = Units::new(ctx, &scaled_settings())?;
    let size_units = Units::new(
        ctx,
        &SizeCurveSettings {
            scaled: scaled_settings(),
            curve_angles: &curve.angles,
        },
    )?;
    let listed_units: Vec<Units> = listed
        .iter()
        .map(|l| Units::new(ctx, &l.settings(&settings)))
        .collect::<Result<_>>()?;
    let resnet = Resnet::new(ctx, &settings, &lenet)?;
    // Each kind of unit with the units that save it; a shard takes its share of each list.
    let mut lists: Vec<(&Units, Vec<Unit>)> = vec![
        (&units, all),
        (&scaled_units, scaled),
        (&size_units, curve_units),
    ];
    lists.extend(listed_units.iter().enumerate().map(|(index, u)| {
        let seeds = (0..settings.seeds).map(move |seed| Unit::Listed { seed, index });
        (u, seeds.collect())
    }));
    lists.extend(resnet.iter().map(|r| (&r.units, r.all(settings.seeds))));
    let total = lists.iter().map(|(_, list)| list.len()).sum();
    let mine: Vec<Unit> = (lists.into_iter())
        .flat_map(|(u, list)| u.share(list))
        .collect();
    let maps = SeedMaps::new("map", settings.seeds, &units, &Device::Cpu);
    let resnet_maps = resnet.as_ref().map(|r| r.maps(settings.seeds));
    let bar = ctx.bar(mine.len() as u64, "fits");
    let per_unit = side_by_side(&mine, |&unit| -> Result<Vec<Row>> {
        let key = unit.key(&listed);
        let rows = match unit {
            Unit::Gibbs => {
                units.get_or_run(&key, || gibbs(ctx, &images, &settings).map(|row| vec![row]))
            }
            Unit::Fits { seed, group } => units.get_or_run(&key, || {
                let (subnet, group) = (settings.fits.subnet_size, GROUPS[group]);
                fit_group(&lenet, &settings, &maps, seed, group, subnet, &lenet.inputs)
            }),
            Unit::ScaledPrior { seed } => scaled_units.get_or_run(&key, || {
                let subnet = settings.fits.subnet_size;
                scaled_prior(&lenet, &settings, &maps, seed, subnet, &lenet.inputs)
            }),
            Unit::SizeCurve { seed, size } => size_units.get_or_run(&key, || {
                let rows = scaled_prior(&lenet, &settings, &maps, seed, size, &curve_inputs)?;
                Ok(size_curve::at_size(rows, size))
            }),
            Unit::Listed { seed, index } => listed_units[index].get_or_run(&key, || {
                fit_listed(&lenet, &settings, &maps, seed, &listed[index]).map(|row| vec![row])
            }),
            Unit::Resnet { seed, group } => {
                let (r, maps) = resnet
                    .as_ref()
                    .zip(resnet_maps.as_ref())
                    .context("ResNet rows")?;
                r.units
                    .get_or_run(&key, || r.fit(&settings, maps, seed, group))
            }
        }?;
        bar.inc(1);
        Ok(rows)
    })?;
    bar.finish_and_clear();
    if let Some(shard) = units.shard_outcome(mine.iter().map(|u| u.key(&listed)).collect(), total) {
        return Ok(shard);
    }
    let rows: Vec<Row> = per_unit.into_iter().flatten().collect();
    outcome(
        rows,
        &settings,
        &listed,
        &curve,
        resnet.as_ref().map(|r| &r.rows),
        ctx.profile,
        &lenet,
    )
}

/// The LeNet-5 rows' units: the chain and every seed's groups of fits (the chain first: in a
/// fresh quick run it samples the longest), the scaled-prior pairs, and the size curve's
/// (the largest first: a worker left with the last unit then waits the least).
fn lenet_units(settings: &Settings, curve: &SizeCurve) -> [Vec<Unit>; 3] {
    let seeds = settings.seeds;
    let fits =
        (0..seeds).flat_map(|seed| (0..GROUPS.len()).map(move |group| Unit::Fits { seed, group }));
    let scaled = (0..seeds).map(|seed| Unit::ScaledPrior { seed });
    let sizes = curve.sizes.iter().rev();
    let curve = sizes.flat_map(|&size| (0..seeds).map(move |seed| Unit::SizeCurve { seed, size }));
    [
        std::iter::once(Unit::Gibbs).chain(fits).collect(),
        scaled.collect(),
        curve.collect(),
    ]
}

/// The run's outcome from every unit's rows: the main rows' tables, claims and figures, and the
/// size curve's from its rows (those with a `subnet_size`) and the main scaled-prior rows.
fn outcome(
    all_rows: Vec<Row>,
    settings: &Settings,
    listed: &[Listed],
    curve: &SizeCurve,
    resnet: Option<&ResnetRows>,
    profile: Profile,
    lenet: &Prepared,
) -> Result<Outcome> {
    let (curve_rows, rows): (Vec<Row>, Vec<Row>) =
        (all_rows.iter().cloned()).partition(|r| r.subnet_size.is_some());
    let points = size_curve::points(&rows, curve_rows, settings, curve);
    let mut recorded = serde_json::to_value(size_curve::with_curve(
        &crate::listed::with_listed(settings, listed),
        curve,
    ))?;
    if let Some(resnet) = resnet {
        recorded["resnet_rows"] = serde_json::to_value(resnet)?;
    }
    Ok(Outcome::new(
        "shift-mnist: rotated MNIST and Fashion-MNIST as OOD, every method side by side",
        &recorded,
        &all_rows,
    )?
    .body(
        body(&rows, settings, lenet)
            + &resnet_note(resnet, profile)
            + &size_curve::section(&points, curve)
            + &crate::listed::section("shift-mnist", "each seed's MAP", listed),
    )
    .claims([claims(&rows), size_curve::claims(&points)].concat())
    .figure("size-curve.svg", size_curve::figure(&points).to_svg())
    .figure("shift-mnist.svg", figure(&rows, settings).to_svg())
    .figure(
        "reliability.svg",
        reliability_figure(&rows, settings).to_svg(),
    ))
}

/// The default listed methods (`crate::listed`; `methods.json` in the run's folder replaces
/// them): the last-layer KFAC Laplace with λ chosen on the validation images from the Laplace
/// family's grid, and cyclical SGHMC from the MAP (Zhang et al. 2020: two cosine cycles, the
/// first half of each without noise; friction 0.1, ε = 10⁻⁶ on the summed loss, SGD with
/// momentum 0.9 at a step of about 0.06 on the mean loss), about 40 draws kept over the
/// sampling stages, for `vi_epochs` epochs like the variational methods.
fn default_listed(settings: &Settings, n_fit: usize) -> Result<Vec<MethodSpec>> {
    let steps = settings.fits.vi_epochs * n_fit.div_ceil(settings.fits.batch_size);
    let keep_every = (steps / 80).max(1);
    // Two cycles where there are steps for them (not in the smoke profile's two).
    let cycles = if steps >= 20 { 2 } else { 1 };
    Ok(serde_json::from_value(serde_json::json!([
        {"method": "laplace", "config": {"hessian": "kron",
            "subnetwork": {"rule": "last-layer", "candidates": "all"},
            "prior_grid": settings.fits.lambdas, "prior_by": "validation", "batch_size": GGN_BATCH}},
        {"method": "sgmcmc", "config": {"dynamics": {"kind": "sghmc", "friction": 0.1},
            "schedule": {"kind": "cyclical", "cycles": cycles, "exploration": 0.5},
            "step_size": 1e-6, "prior_precision": settings.fits.prior_precision,
            "epochs": settings.fits.vi_epochs, "batch_size": settings.fits.batch_size,
            "keep_every": keep_every, "seed": 2020}}
    ]))?)
}

/// Listed method `listed` on seed `seed`: `bdl_methods::fit` from the seed's MAP, with the
/// validation images for the methods that choose a setting on them.
fn fit_listed(
    data: &Prepared,
    settings: &Settings,
    maps: &SeedMaps<'_>,
    seed: usize,
    listed: &Listed,
) -> Result<Row> {
    let map = maps.get(seed, || train_lenet(data, settings, seed_root(seed)))?;
    let key = Key::Listed {
        listed: listed.label.clone(),
    };
    fit_row(
        key,
        &listed.spec,
        &from_map(&map, data),
        seed,
        &data.inputs,
        settings,
    )
}

/// The blocked-Gibbs row: `gibbs-mnist`'s main chain on MNIST (sampled or completed if needed),
/// evaluated on the same images standardised by the chain's own standardiser.
fn gibbs(ctx: &Context, images: &Images, settings: &Settings) -> Result<Row> {
    let start = Instant::now();
    let main = main_chain(ctx, Collection::Mnist, None)?;
    let fit_s = start.elapsed().as_secs_f64();
    let window = main.chain.window(&Keep {
        last: Some(main.window),
        ..Keep::default()
    })?;
    let inputs = Inputs::new(images, &main.scale, &settings.angles)?;
    score(Method::Gibbs, &window, None, None, fit_s, &inputs, settings)
}

/// LeNet-5 for ten classes with dropout probability `p` on the dense hidden units, and its
/// initialisation θ₀ seeded from `root`.
fn lenet5(p: f64, root: Seed) -> Result<(Network, Tensor)> {
    let net = Network::from(Cnn::new(CnnSpec::lenet5(10).with_dropout(p))?);
    let theta0 = net.init(root.fork("init"), DType::F32, &Device::Cpu)?;
    Ok((net, theta0))
}

/// A seed's MAP of LeNet-5 on the fit part, from the seeded initialisation: the θ every
/// method but MC dropout and the ensemble starts from.
fn train_lenet(data: &Prepared, settings: &Settings, root: Seed) -> Result<MapEstimate> {
    let (net, theta0) = lenet5(0.0, root)?;
    train_from(&net, &theta0, data, settings, root)
}

/// The MAP of `net` from θ₀ on the fit part, with the MAP configuration of the seed `root`
/// roots.
fn train_from(
    net: &Network,
    theta0: &Tensor,
    data: &Prepared,
    settings: &Settings,
    root: Seed,
) -> Result<MapEstimate> {
    let config = settings.fits.map_config(root.fork("map")).check()?;
    let (x, y) = (data.fit.x(), data.fit.y());
    Ok(train_map(net, theta0, LIKELIHOOD, x, y, &config)?.estimate)
}

/// The problem of every method that starts from a seed's MAP: the fit part, and the
/// validation images on which the Laplace family chooses λ.
fn from_map<'a>(map: &'a MapEstimate, data: &'a Prepared) -> Problem<'a> {
    Problem::new(
        map.network(),
        map.theta(),
        LIKELIHOOD,
        data.fit.x(),
        data.fit.y(),
    )
    .with_validation(data.val.x(), data.val.y())
}

/// The specification of one of the experiment's own methods on the seed whose streams `root`
/// roots, subnetworks of `subnet` weights, `n_fit` training images and `d` parameters; `None`
/// for the MAP (every problem's θ) and the chain (`gibbs-mnist`'s).
fn spec(
    method: Method,
    settings: &Settings,
    subnet: usize,
    n_fit: usize,
    d: usize,
    root: Seed,
) -> Option<MethodSpec> {
    let fits = &settings.fits;
    let (wasserstein, random) = (fits.wasserstein(subnet, root), fits.random(subnet, root));
    // λ from the grid by the validation images, or the scaled prior alone.
    let by_validation = fits.lambdas.clone();
    let scaled = vec![fits.prior_precision * subnet as f64 / d as f64];
    let laplace =
        |hessian, subnetwork, grid, by| Fits::laplace(hessian, subnetwork, GGN_BATCH, grid, by);
    let variational = |rule| fits.variational(rule, n_fit, root.fork(method.name()));
    use {Hessian::Diagonal, Hessian::Full, PriorBy::Evidence, PriorBy::Validation};
    Some(match method {
        Method::Map | Method::Gibbs => return None,
        Method::McDropout => fits.mc_dropout(root),
        Method::Ensemble => fits.ensemble(root),
        Method::DiagLaplace => laplace(Diagonal, SubsetRule::All, by_validation, Validation),
        Method::LastLayerLaplace => laplace(
            Full,
            SubsetRule::LastLayer {
                candidates: Candidates::All,
            },
            by_validation,
            Validation,
        ),
        Method::SubnetWasserstein => laplace(Full, wasserstein, by_validation, Validation),
        Method::SubnetRandom => laplace(Full, random, by_validation, Validation),
        Method::SubnetWassersteinScaledPrior => laplace(Full, wasserstein, scaled, Evidence),
        Method::SubnetRandomScaledPrior => laplace(Full, random, scaled, Evidence),
        Method::Vogn => variational(fits.vogn()),
        Method::Vadam => variational(bdl_variational::Method::vadam(settings.vadam_learning_rate)),
        Method::Ivon => variational(bdl_variational::Method::ivon(settings.ivon_learning_rate)),
        Method::Swag => fits.swag(root),
    })
}

/// The rows of one group of fits on one seed: each method's spec fitted by `bdl_methods::fit`
/// from the seed's MAP, or, for MC dropout (its own network and MAP) and the ensemble (its
/// members' own initialisations), from a fresh LeNet-5; subnetworks of `subnet` weights, every
/// row scored on `inputs`.
fn fit_group(
    data: &Prepared,
    settings: &Settings,
    maps: &SeedMaps<'_>,
    seed: usize,
    group: &[Method],
    subnet: usize,
    inputs: &Inputs,
) -> Result<Vec<Row>> {
    let root = seed_root(seed);
    let map = || maps.get(seed, || train_lenet(data, settings, root));
    let n_fit = data.fit.len();
    // The group's SWAG row trains the SWAG its Wasserstein subnetwork ranks by.
    let shared = SharedFits::default();
    let mut rows = Vec::new();
    for &method in group {
        let fresh = |p, root| -> Result<Row> {
            let (net, theta0) = lenet5(p, root)?;
            let d = net.layout().len();
            let spec = spec(method, settings, subnet, n_fit, d, root).context("a fitted method")?;
            let (x, y) = (data.fit.x(), data.fit.y());
            let problem = Problem::new(&net, &theta0, LIKELIHOOD, x, y);
            fit_row(method.into(), &spec, &problem, seed, inputs, settings)
        };
        rows.push(match method {
            Method::Map => {
                let start = Instant::now();
                let map = map()?;
                let fit_s = start.elapsed().as_secs_f64();
                score(method, &map, Some(seed), None, fit_s, inputs, settings)?
            }
            Method::McDropout => fresh(settings.fits.dropout, root.fork("dropout"))?,
            Method::Ensemble => fresh(0.0, root)?,
            _ => {
                let map = map()?;
                let d = map.network().layout().len();
                let spec =
                    spec(method, settings, subnet, n_fit, d, root).context("a fitted method")?;
                fit_row(
                    method.into(),
                    &spec,
                    &from_map(&map, data).with_shared(&shared),
                    seed,
                    inputs,
                    settings,
                )?
            }
        });
    }
    Ok(rows)
}

/// The two subnetworks of `subnet` weights of one seed at the scaled prior λ_S = λ·S/D
/// ([`SCALED_PRIOR`]), each its full-covariance Laplace at that λ alone (the seeds of the main
/// rows), scored on `inputs`.
fn scaled_prior(
    data: &Prepared,
    settings: &Settings,
    maps: &SeedMaps<'_>,
    seed: usize,
    subnet: usize,
    inputs: &Inputs,
) -> Result<Vec<Row>> {
    let pair = [
        Method::SubnetWassersteinScaledPrior,
        Method::SubnetRandomScaledPrior,
    ];
    fit_group(data, settings, maps, seed, &pair, subnet, inputs)
}

/// The root of every stream of seed `seed`'s fits.
fn seed_root(seed: usize) -> Seed {
    Seed(2021).fork("shift-mnist").index(seed as u64)
}

/// The row of `spec` fitted to `problem`, scored at every angle of `inputs` and on its OOD
/// images. One of
/// the experiment's own Laplace posteriors with λ chosen on the validation images is fitted a
/// second time with λ by
/// the Laplace marginal likelihood of the training data on the same parameters (an
/// investigation of the paper's claim), whose scores go beside the row's.
fn fit_row(
    key: Key,
    spec: &MethodSpec,
    problem: &Problem<'_>,
    seed: usize,
    inputs: &Inputs,
    settings: &Settings,
) -> Result<Row> {
    let fitted = bdl_methods::fit(spec, problem)
        .with_context(|| format!("{} on seed {seed}", key.name()))?;
    let own = matches!(key, Key::Own(_));
    let chosen = fitted.diagnostics.prior_precision;
    let post = fitted.posterior.as_ref();
    let mut row = score(
        key,
        post,
        Some(seed),
        chosen,
        fitted.seconds,
        inputs,
        settings,
    )?;
    if let MethodSpec::Laplace(laplace) = spec
        && own
        && laplace.prior_by == PriorBy::Validation
    {
        let subnetwork = match fitted.diagnostics.subnetwork {
            Some(indices) => SubsetRule::Indices { indices },
            None => laplace.subnetwork.clone(),
        };
        let by_evidence = MethodSpec::Laplace(LaplaceSpec {
            subnetwork,
            prior_by: PriorBy::Evidence,
            ..laplace.clone()
        });
        let alternative = bdl_methods::fit(&by_evidence, problem)?;
        row.evidence = Some(Alternative {
            lambda: alternative
                .diagnostics
                .prior_precision
                .context("a grid's λ")?,
            scores: evaluate(alternative.posterior.as_ref(), Some(seed), inputs, settings)?.scores,
        });
    }
    Ok(row)
}

/// What a posterior's predictives give at every angle.
struct Evaluated {
    scores: Vec<AtAngle>,
    reliability: Vec<Reliability>,
    /// The predictive entropy of every test image at 0°.
    entropy_at_0: Vec<f64>,
}

/// The scores of `post` at every angle of `inputs`, its reliability diagrams and its entropies at 0°.
fn evaluate(
    post: &dyn Posterior,
    seed: Option<usize>,
    inputs: &Inputs,
    settings: &Settings,
) -> Result<Evaluated> {
    let options = settings.fits.options(seed.unwrap_or(0));
    let labels = &inputs.labels;
    let (mut scores, mut reliability, mut inside) = (Vec::new(), Vec::new(), None);
    for (&angle, x) in inputs.angles.iter().zip(&inputs.rotated) {
        let pred = post
            .predictive(x, &options)
            .with_context(|| format!("{} at {angle}°", post.method()))?;
        scores.push(AtAngle {
            angle,
            log_lik: metrics::mean_log_lik(&pred, labels)?,
            error: 1.0 - metrics::accuracy(&pred, labels)?,
            ece: metrics::expected_calibration_error(&pred, labels, settings.fits.ece_bins)?,
            brier: metrics::brier(&pred, labels)?,
        });
        if settings.reliability_at.contains(&angle) {
            reliability.push(Reliability {
                angle,
                bins: metrics::reliability(&pred, labels, settings.fits.ece_bins)?,
            });
        }
        if angle == 0.0 {
            inside = Some(metrics::predictive_entropy(&pred)?);
        }
    }
    Ok(Evaluated {
        scores,
        reliability,
        entropy_at_0: inside.context("0° is one of the angles")?,
    })
}

/// Evaluates one fitted posterior at every angle and on the OOD images.
fn score(
    method: impl Into<Key>,
    post: &dyn Posterior,
    seed: Option<usize>,
    lambda: Option<f64>,
    fit_s: f64,
    inputs: &Inputs,
    settings: &Settings,
) -> Result<Row> {
    let method = method.into();
    let start = Instant::now();
    let evaluated = evaluate(post, seed, inputs, settings)?;
    let outside = post.predictive(&inputs.fashion, &settings.fits.options(seed.unwrap_or(0)))?;
    let outside = metrics::predictive_entropy(&outside)?;
    Ok(Row {
        model: method.model().to_owned(),
        method,
        seed,
        lambda,
        scores: evaluated.scores,
        ood_auroc: metrics::auroc(&evaluated.entropy_at_0, &outside)?,
        reliability: evaluated.reliability,
        fit_s,
        eval_s: start.elapsed().as_secs_f64(),
        evidence: None,
        subnet_size: None,
    })
}

#[cfg(test)]
mod tests {
    use bdl_methods::MethodSpec;

    use super::*;
    use crate::claim::Decision;

    /// A row of `method` on `seed` with test log-likelihoods `ll` at 0°, 15°, ….
    pub(super) fn row(method: Method, seed: usize, ll: &[f64]) -> Row {
        Row {
            method: Key::Own(method),
            model: method.model().into(),
            seed: Some(seed),
            lambda: None,
            scores: ll
                .iter()
                .enumerate()
                .map(|(i, &l)| AtAngle {
                    angle: 15.0 * i as f64,
                    log_lik: l,
                    error: 0.0,
                    ece: 0.0,
                    brier: 0.0,
                })
                .collect(),
            ood_auroc: 0.5,
            reliability: vec![],
            fit_s: 0.0,
            eval_s: 0.0,
            evidence: None,
            subnet_size: None,
        }
    }

    /// Every baseline at `base`, the Wasserstein subnetwork at `subnet`, the random one at
    /// `random`, over three seeds with a small spread.
    fn rows(subnet: f64, random: f64, base: f64) -> Vec<Row> {
        let mut rows = Vec::new();
        for seed in 0..3 {
            let jitter = 0.01 * seed as f64;
            rows.push(row(
                Method::SubnetWasserstein,
                seed,
                &[subnet + jitter, subnet - jitter],
            ));
            rows.push(row(Method::SubnetRandom, seed, &[random, random]));
            for m in Method::PAPER_BASELINES
                .iter()
                .filter(|&&m| m != Method::SubnetRandom)
            {
                rows.push(row(*m, seed, &[base, base]));
            }
            rows.push(row(Method::Vogn, seed, &[0.0, 0.0])); // VOGN above all: not compared
        }
        rows
    }

    #[test]
    fn claims_follow_the_log_likelihoods() {
        use Decision::{Fails, Holds, Undecided};
        let verdicts =
            |rows: &[Row]| -> Vec<Decision> { claims(rows).iter().map(|c| c.verdict).collect() };
        assert_eq!(verdicts(&rows(-0.5, -0.9, -0.7)), [Holds, Holds]);
        // One baseline above the subnetwork breaks the first claim only.
        let mut r = rows(-0.5, -0.9, -0.7);
        r.iter_mut()
            .filter(|r| r.method == Method::Ensemble)
            .for_each(|r| r.scores.iter_mut().for_each(|s| s.log_lik = -0.4));
        assert_eq!(verdicts(&r), [Fails, Holds]);
        // A random subnetwork slightly worse on average, but within the seeds' spread, leaves
        // both undecided: per-seed differences 0.06, 0.01, −0.04 (mean 0.01, SE 0.029).
        let mut r = rows(-0.5, -0.9, -0.7);
        for (seed, r) in r
            .iter_mut()
            .filter(|r| r.method == Method::SubnetRandom)
            .enumerate()
        {
            let ll = -0.56 + 0.05 * seed as f64;
            r.scores.iter_mut().for_each(|s| s.log_lik = ll);
        }
        assert_eq!(verdicts(&r), [Undecided, Undecided]);

        // The scaled-prior pair adds its own two claims, against the same baselines but its own
        // random subnetwork: here the random one (−0.6) beats the Wasserstein one (−0.65).
        let mut r = rows(-0.5, -0.9, -0.7);
        for seed in 0..3 {
            r.push(row(
                Method::SubnetWassersteinScaledPrior,
                seed,
                &[-0.65, -0.65],
            ));
            r.push(row(Method::SubnetRandomScaledPrior, seed, &[-0.6, -0.6]));
        }
        assert_eq!(verdicts(&r), [Holds, Holds, Fails, Fails]);
        // Above every baseline: −0.65 against the ensemble's −0.7 and its random's −0.8.
        for r in r
            .iter_mut()
            .filter(|r| r.method == Method::SubnetRandomScaledPrior)
        {
            r.scores.iter_mut().for_each(|s| s.log_lik = -0.8);
        }
        assert_eq!(verdicts(&r), [Holds, Holds, Holds, Holds]);

        // The ResNet rows add their own claim, on their own rows alone.
        let resnet = |m, seed, ll: f64| Row {
            method: Key::Resnet { resnet: m },
            ..row(m, seed, &[ll, ll])
        };
        let mut r = rows(-0.5, -0.9, -0.7);
        for seed in 0..3 {
            let jitter = 0.01 * seed as f64;
            r.push(resnet(Method::SubnetWasserstein, seed, -0.6 + jitter));
            for m in [
                Method::Map,
                Method::DiagLaplace,
                Method::Swag,
                Method::SubnetRandom,
            ] {
                r.push(resnet(m, seed, -0.8));
            }
        }
        assert_eq!(verdicts(&r), [Holds, Holds, Holds]);
        // The LeNet rows' ensemble at −0.4 breaks only the LeNet claim; a ResNet SWAG above
        // the ResNet subnetwork breaks only the ResNet one.
        for r in r.iter_mut().filter(|r| r.method == Method::Ensemble) {
            r.scores.iter_mut().for_each(|s| s.log_lik = -0.4);
        }
        let swag = Key::Resnet {
            resnet: Method::Swag,
        };
        for r in r.iter_mut().filter(|r| r.method == swag) {
            r.scores.iter_mut().for_each(|s| s.log_lik = -0.3);
        }
        assert_eq!(verdicts(&r), [Fails, Holds, Fails]);
    }

    #[test]
    fn unit_keys_are_distinct_file_names() {
        // A listed MAP must not take the own MAP's file.
        let map: Vec<MethodSpec> =
            serde_json::from_str(r#"[{"method": "map", "config": {}}]"#).unwrap();
        let listed = crate::listed::labelled(map);
        let mut keys: Vec<String> = std::iter::once(Unit::Gibbs.key(&listed))
            .chain((0..3).flat_map(|seed| {
                let listed = &listed;
                (0..GROUPS.len()).map(move |group| Unit::Fits { seed, group }.key(listed))
            }))
            .chain((0..3).map(|seed| Unit::ScaledPrior { seed }.key(&listed)))
            .chain((0..3).map(|seed| Unit::SizeCurve { seed, size: 250 }.key(&listed)))
            .chain((0..3).map(|seed| Unit::Listed { seed, index: 0 }.key(&listed)))
            .chain((0..3).flat_map(|seed| {
                let listed = &listed;
                (0..RESNET_GROUPS.len()).map(move |group| Unit::Resnet { seed, group }.key(listed))
            }))
            .collect();
        assert_eq!(keys[1], "seed-0-map");
        let n = keys.len();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), n);
        // Every method is in exactly one group, or is the chain or a scaled-prior subnetwork.
        let own_unit = [
            Method::Gibbs,
            Method::SubnetWassersteinScaledPrior,
            Method::SubnetRandomScaledPrior,
        ];
        for m in Method::ALL {
            let groups = GROUPS.iter().filter(|g| g.contains(&m)).count();
            assert_eq!(groups, usize::from(!own_unit.contains(&m)), "{m:?}");
        }
        for m in RESNET_METHODS {
            let groups = RESNET_GROUPS.iter().filter(|g| g.contains(&m)).count();
            assert_eq!(groups, 1, "ResNet {m:?}");
        }
        assert_eq!(RESNET_GROUPS.concat().len(), RESNET_METHODS.len());
    }
}
