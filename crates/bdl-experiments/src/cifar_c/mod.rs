//! `cifar-c`: the subnetwork paper's corrupted CIFAR-10 benchmark (Daxberger et al. 2021,
//! §5.3, Fig. 4): a ResNet-18 trained on CIFAR-10, every method scored on the clean test images
//! and on CIFAR-10-C's corruptions at severities 1 to 5.
//!
//! Protocol: ResNet-18 (CIFAR stem, batch normalisations at fixed statistics μ = 0, v = 1, see
//! `bdl_models::ResNet`) trained on the CIFAR-10 training images, the last `validation_images`
//! held out for the Laplace family's prior precision; every image standardised per channel by
//! the training images' means and standard deviations. Methods, each over `seeds` seeds:
//!
//! - MAP (Adam, weight decay λ) and MC dropout (p = 0.1 on the pooled features, its own MAP);
//! - the linearized Laplace family at the MAP with the probit link, λ of each chosen on the
//!   validation images from one grid: diagonal, KFAC (every layer) and the full-covariance
//!   subnetworks of `subnet_size` weights (the paper's 42,438) chosen by the Wasserstein rule
//!   with diagonal-SWAG variances and at random;
//! - SWAG from the MAP (low rank plus diagonal), VOGN from the MAP (σ ≈ 1/√N), and a deep
//!   ensemble of 5 independent MAPs.
//!
//! Sampled predictives average 16 samples (the paper's). Metrics at each severity, each the mean
//! over the corruptions (severity 0: the clean test images): test log-likelihood, error, ECE (15
//! bins) and Brier score. The paper averages over "16 different corruption types" without
//! naming them; we take the fifteen of the release's benchmark set (`Corruption::BENCHMARK`),
//! the ones the benchmark code of Ovadia et al. (2019), whose protocol the paper follows,
//! averages over.
//!
//! Profiles: **smoke** runs every method end to end on seeded synthetic images of CIFAR-10's
//! layout with a two-stage ResNet (numbers meaningless; `cargo test` runs it); **paper** reads
//! the archives of `cargo xtask fetch cifar10` and `cargo xtask fetch cifar10-c` and wants a
//! GPU for its ResNet-18 fits (`--device cuda:N`: networks, parameters and images go to
//! `ctx.device`; the host-side parts, faer's factorisations, copy to the CPU explicitly). On
//! this project's CPU machine the subnetwork's GGN alone would take about a day per seed
//! (docs/REPRODUCTION.md). There is no quick profile: no slice of CIFAR-10 is shipped in
//! `fixtures/` (the 170 MB archive cannot be in the repository, and no redistributable slice
//! is in the shared data).

mod claims;
mod report;
mod settings;
mod source;

use std::time::Instant;

use anyhow::{Context as _, Result};
use bdl_data::cifar::Severity;
use bdl_data::{Dataset, Standardizer};
use bdl_eval::metrics;
use bdl_eval::plot::PALETTE;
use bdl_inference::{MapEstimate, Posterior, PredictOptions, Validate, train_map};
use bdl_likelihoods::Likelihood;
use bdl_methods::{Hessian, MethodSpec, PriorBy, Problem, SharedFits, SubsetRule};
use bdl_models::{Network, ResNet};
use bdl_tensor::Seed;
use candle_core::{DType, Device, Tensor};
use serde::{Deserialize, Serialize};

use self::settings::Settings;
use self::source::Source;
use crate::concurrency::side_by_side;
use crate::fits::Fits;
use crate::units::{SeedMaps, Units};
use crate::{Context, Entry, Outcome, Profile, Sharding};

/// The experiment.
pub(crate) const EXPERIMENT: Entry = Entry {
    name: "cifar-c",
    reproduces: "Daxberger et al. (2021) §5.3, Fig. 4: corrupted CIFAR-10 with ResNet-18, test \
     LL, error, ECE and Brier against severity for MAP, MC dropout, diagonal, KFAC and subnetwork \
     Laplace, SWAG, VOGN and a deep ensemble",
    run,
    shards: true,
    lists_methods: false,
    profiles: &[Profile::Smoke, Profile::Paper],
    any_device: true,
};

const LIKELIHOOD: Likelihood = Likelihood::Categorical { classes: 10 };

/// Every method of the benchmark, in table order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
enum Method {
    Map,
    McDropout,
    DiagLaplace,
    KfacLaplace,
    SubnetWasserstein,
    SubnetRandom,
    Swag,
    Vogn,
    Ensemble,
}

impl Method {
    const ALL: [Method; 9] = [
        Method::Map,
        Method::McDropout,
        Method::DiagLaplace,
        Method::KfacLaplace,
        Method::SubnetWasserstein,
        Method::SubnetRandom,
        Method::Swag,
        Method::Vogn,
        Method::Ensemble,
    ];

    /// The paper's baselines in its Fig. 4, which the claim compares the Wasserstein
    /// subnetwork against (KFAC is ours).
    const PAPER_BASELINES: [Method; 7] = [
        Method::Map,
        Method::McDropout,
        Method::DiagLaplace,
        Method::SubnetRandom,
        Method::Swag,
        Method::Vogn,
        Method::Ensemble,
    ];

    fn name(self) -> &'static str {
        match self {
            Self::Map => "MAP",
            Self::McDropout => "MC dropout",
            Self::DiagLaplace => "diagonal Laplace",
            Self::KfacLaplace => "KFAC Laplace",
            Self::SubnetWasserstein => "subnetwork Laplace (Wasserstein)",
            Self::SubnetRandom => "subnetwork Laplace (random)",
            Self::Swag => "SWAG",
            Self::Vogn => "VOGN",
            Self::Ensemble => "deep ensemble",
        }
    }

    fn color(self) -> &'static str {
        PALETTE[Self::ALL.iter().position(|&m| m == self).expect("listed")]
    }
}

/// The fits of one seed that share their expensive parts, one unit each (a unit's first method
/// names it). The two that train their own networks come right after the MAP, so that a second
/// worker has work while the first trains the MAP the others start from.
const GROUPS: [&[Method]; 6] = [
    &[Method::Map],
    &[Method::McDropout],
    &[Method::Ensemble],
    &[Method::DiagLaplace, Method::KfacLaplace],
    // Both subnetworks are the size the SWAG variances choose from.
    &[
        Method::Swag,
        Method::SubnetWasserstein,
        Method::SubnetRandom,
    ],
    &[Method::Vogn],
];

/// A method's scores at one severity, each the mean over the corruptions (severity 0: the clean
/// test images).
#[derive(Clone, Debug, Serialize, Deserialize)]
struct AtSeverity {
    severity: u8,
    log_lik: f64,
    error: f64,
    ece: f64,
    brier: f64,
}

/// One fitted method on one seed.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Row {
    method: Method,
    seed: usize,
    /// The prior precision chosen on the validation images (the Laplace family).
    lambda: Option<f64>,
    /// Severities 0 to 5.
    scores: Vec<AtSeverity>,
    /// Seconds to fit (the Laplace family and SWAG: from the MAP; the Wasserstein subnetwork
    /// without the SWAG run it shares with the SWAG row) and to evaluate.
    fit_s: f64,
    eval_s: f64,
}

/// Images `x` and labels `y` on the run's device.
struct Part {
    x: Tensor,
    y: Tensor,
}

impl Part {
    /// `set`'s images standardised by `scale` and its labels, on `device`.
    fn of(set: &Dataset, scale: &Standardizer, device: &Device) -> Result<Self> {
        Ok(Self {
            x: scale.transform(set.x())?.to_device(device)?,
            y: set.y().to_device(device)?,
        })
    }

    fn len(&self) -> usize {
        self.y.dims()[0]
    }
}

/// The training parts, standardised, and what the evaluation reads.
struct Data {
    fit: Part,
    val: Part,
    source: Source,
    scale: Standardizer,
    /// Where the networks, parameters and images go (`ctx.device`).
    device: Device,
}

impl Data {
    fn load(ctx: &Context, settings: &Settings) -> Result<Self> {
        let source = Source::new(settings, ctx.data.clone());
        let (n_fit, n_val) = settings.split();
        let train = source.train()?;
        if n_fit == 0 || train.len() < n_fit + n_val {
            anyhow::bail!(
                "{} training images cannot give {n_fit} to fit and {n_val} more for validation",
                train.len()
            );
        }
        let fit = train.select(&(0..n_fit).collect::<Vec<_>>())?;
        let val = train.select(&(n_fit..n_fit + n_val).collect::<Vec<_>>())?;
        let scale = per_channel(fit.x())?;
        let device = ctx.device.clone();
        Ok(Self {
            fit: Part::of(&fit, &scale, &device)?,
            val: Part::of(&val, &scale, &device)?,
            source,
            scale,
            device,
        })
    }
}

/// The first `n` rows of `data` (all when `None`).
fn first(data: Dataset, n: Option<usize>) -> Result<Dataset> {
    Ok(match n {
        Some(n) if n < data.len() => data.select(&(0..n).collect::<Vec<_>>())?,
        _ => data,
    })
}

/// The standardiser of CIFAR-10's usual preprocessing: each channel's pixels by that channel's
/// mean and standard deviation over the images `x` (`[N, 3·1024]`, channel-first).
fn per_channel(x: &Tensor) -> Result<Standardizer> {
    let n = x.dims()[0];
    let by_channel = x.to_dtype(DType::F64)?.reshape((n, 3, 1024))?;
    let mean = by_channel.mean_keepdim(2)?.mean_keepdim(0)?;
    let var = by_channel
        .broadcast_sub(&mean)?
        .sqr()?
        .mean_keepdim(2)?
        .mean_keepdim(0)?;
    let per_pixel = |t: Tensor| -> Result<Vec<f64>> {
        let c: Vec<f64> = t.flatten_all()?.to_vec1()?;
        Ok(c.iter().flat_map(|&v| [v; 1024]).collect())
    };
    let std = per_pixel(var.sqrt()?)?;
    Ok(Standardizer::from_stats(per_pixel(mean)?, std)?)
}

/// One unit of the run: a group of fits on one seed.
#[derive(Clone, Copy, Debug)]
struct Unit {
    seed: usize,
    group: usize,
}

impl Unit {
    fn key(self) -> String {
        let first = serde_json::to_value(GROUPS[self.group][0]).expect("a name");
        format!("seed-{}-{}", self.seed, first.as_str().expect("a string"))
    }
}

fn run(ctx: &Context) -> Result<Outcome> {
    let settings = Settings::of(ctx.profile)?;
    // A merge computes nothing, so it needs no images (nor the archives on its machine).
    let data = match ctx.sharding {
        Sharding::Merge => None,
        Sharding::All | Sharding::Shard { .. } => Some(Data::load(ctx, &settings)?),
    };
    let all: Vec<Unit> = (0..settings.seeds)
        .flat_map(|seed| (0..GROUPS.len()).map(move |group| Unit { seed, group }))
        .collect();
    let units = Units::new(ctx, &settings)?;
    let total = all.len();
    let mine = units.share(all);
    let maps = SeedMaps::new("map", settings.seeds, &units, &ctx.device);
    let bar = ctx.bar(mine.len() as u64, "fits");
    let per_unit = side_by_side(&mine, |&unit| -> Result<Vec<Row>> {
        let rows = units.get_or_run(&unit.key(), || {
            let data = data.as_ref().context("a merge computes no unit")?;
            fit_group(data, &settings, &maps, unit.seed, GROUPS[unit.group])
        })?;
        bar.inc(1);
        Ok(rows)
    })?;
    bar.finish_and_clear();
    if let Some(shard) = units.shard_outcome(mine.iter().map(|u| u.key()).collect(), total) {
        return Ok(shard);
    }
    let rows: Vec<Row> = per_unit.into_iter().flatten().collect();
    Ok(Outcome::new(
        "cifar-c: corrupted CIFAR-10, every method against the corruption severity",
        &settings,
        &rows,
    )?
    .body(report::body(&rows, &settings))
    .claims(claims::claims(&rows))
    .figure("cifar-c.svg", report::figure(&rows).to_svg()))
}

/// The root of every stream of seed `seed`'s fits.
fn seed_root(seed: usize) -> Seed {
    Seed(2021).fork("cifar-c").index(seed as u64)
}

/// The run's ResNet with dropout probability `p` on its pooled features, and its
/// initialisation θ₀ seeded from `root`, on `device`.
fn resnet(settings: &Settings, p: f64, root: Seed, device: &Device) -> Result<(Network, Tensor)> {
    let net = Network::from(ResNet::new(settings.network.clone().with_dropout(p))?);
    let theta0 = net.init(root.fork("init"), DType::F32, device)?;
    Ok((net, theta0))
}

/// A seed's MAP on the fit part: the θ every method but MC dropout and the ensemble starts from.
fn train_resnet(data: &Data, settings: &Settings, root: Seed) -> Result<MapEstimate> {
    let (net, theta0) = resnet(settings, 0.0, root, &data.device)?;
    let config = settings.fits.map_config(root.fork("map")).check()?;
    let (x, y) = (&data.fit.x, &data.fit.y);
    Ok(train_map(&net, &theta0, LIKELIHOOD, x, y, &config)?.estimate)
}

/// The specification of `method` on the seed whose streams `root` roots, with `n_fit`
/// training images; `None` for the MAP (every problem's θ).
fn spec(method: Method, settings: &Settings, n_fit: usize, root: Seed) -> Option<MethodSpec> {
    let (fits, s) = (&settings.fits, settings.fits.subnet_size);
    let laplace = |hessian, subnetwork| {
        let grid = fits.lambdas.clone();
        Fits::laplace(
            hessian,
            subnetwork,
            settings.ggn_batch,
            grid,
            PriorBy::Validation,
        )
    };
    Some(match method {
        Method::Map => return None,
        Method::McDropout => fits.mc_dropout(root),
        Method::Ensemble => fits.ensemble(root),
        Method::DiagLaplace => laplace(Hessian::Diagonal, SubsetRule::All),
        Method::KfacLaplace => laplace(Hessian::Kron, SubsetRule::All),
        Method::SubnetWasserstein => laplace(Hessian::Full, fits.wasserstein(s, root)),
        Method::SubnetRandom => laplace(Hessian::Full, fits.random(s, root)),
        Method::Swag => fits.swag(root),
        Method::Vogn => fits.variational(fits.vogn(), n_fit, root.fork(method.name())),
    })
}

/// The rows of one group of fits on one seed: each method's spec fitted by `bdl_methods::fit`
/// from the seed's MAP, or, for MC dropout (its own network and MAP) and the ensemble (its
/// members' own initialisations), from a fresh ResNet.
fn fit_group(
    data: &Data,
    settings: &Settings,
    maps: &SeedMaps<'_>,
    seed: usize,
    group: &[Method],
) -> Result<Vec<Row>> {
    let root = seed_root(seed);
    let map = || maps.get(seed, || train_resnet(data, settings, root));
    let n_fit = data.fit.len();
    let (x, y) = (&data.fit.x, &data.fit.y);
    // The group's SWAG row trains the SWAG its Wasserstein subnetwork ranks by.
    let shared = SharedFits::default();
    let mut rows = Vec::new();
    for &method in group {
        let fitted = |problem: &Problem<'_>| -> Result<Row> {
            let spec = spec(method, settings, n_fit, root).context("a fitted method")?;
            let fitted = bdl_methods::fit(&spec, problem)
                .with_context(|| format!("{} on seed {seed}", method.name()))?;
            let lambda = fitted.diagnostics.prior_precision;
            let post = fitted.posterior.as_ref();
            score(method, post, seed, lambda, fitted.seconds, data, settings)
        };
        rows.push(match method {
            Method::Map => {
                let start = Instant::now();
                let map = map()?;
                let fit_s = start.elapsed().as_secs_f64();
                score(method, &map, seed, None, fit_s, data, settings)?
            }
            Method::McDropout | Method::Ensemble => {
                let (p, root) = match method {
                    Method::McDropout => (settings.fits.dropout, root.fork("dropout")),
                    _ => (0.0, root),
                };
                let (net, theta0) = resnet(settings, p, root, &data.device)?;
                fitted(&Problem::new(&net, &theta0, LIKELIHOOD, x, y))?
            }
            _ => {
                let map = map()?;
                let problem = Problem::new(map.network(), map.theta(), LIKELIHOOD, x, y)
                    .with_validation(&data.val.x, &data.val.y)
                    .with_shared(&shared);
                fitted(&problem)?
            }
        });
    }
    Ok(rows)
}

/// The four scores of `post` on the images `set` (raw pixels, standardised and moved to the
/// run's device here).
fn scores_on(
    post: &dyn Posterior,
    set: &Dataset,
    data: &Data,
    options: &PredictOptions,
    settings: &Settings,
) -> Result<[f64; 4]> {
    let Part { x, y } = Part::of(set, &data.scale, &data.device)?;
    let pred = post.predictive(&x, options)?;
    Ok([
        metrics::mean_log_lik(&pred, &y)?,
        1.0 - metrics::accuracy(&pred, &y)?,
        metrics::expected_calibration_error(&pred, &y, settings.fits.ece_bins)?,
        metrics::brier(&pred, &y)?,
    ])
}

/// Evaluates one fitted posterior on the clean test images and at every severity, each
/// severity's scores the mean over the corruptions (loaded one at a time: the paper profile's
/// 80 sets would take 10 GB at once).
fn score(
    method: Method,
    post: &dyn Posterior,
    seed: usize,
    lambda: Option<f64>,
    fit_s: f64,
    data: &Data,
    settings: &Settings,
) -> Result<Row> {
    let start = Instant::now();
    let options = settings.fits.options(seed);
    let at = |severity: u8, [log_lik, error, ece, brier]: [f64; 4]| AtSeverity {
        severity,
        log_lik,
        error,
        ece,
        brier,
    };
    let clean = first(data.source.test()?, settings.test_images)?;
    let mut scores = vec![at(0, scores_on(post, &clean, data, &options, settings)?)];
    for severity in Severity::ALL {
        let mut sum = [0.0; 4];
        for &corruption in &settings.corruptions {
            let set = first(
                data.source.corrupted(corruption, severity)?,
                settings.test_images,
            )?;
            let s = scores_on(post, &set, data, &options, settings).with_context(|| {
                format!(
                    "{} on {} at severity {}",
                    method.name(),
                    corruption.name(),
                    severity.level()
                )
            })?;
            sum.iter_mut().zip(s).for_each(|(t, v)| *t += v);
        }
        let k = settings.corruptions.len() as f64;
        scores.push(at(severity.level(), sum.map(|t| t / k)));
    }
    Ok(Row {
        method,
        seed,
        lambda,
        scores,
        fit_s,
        eval_s: start.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests;
