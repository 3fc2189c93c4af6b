//! `laplace-toy`: the 1-D regression of Daxberger et al. (2021), its toy experiment — does a subnetwork
//! Laplace keep the "in-between" uncertainty of the full-covariance Laplace?
//!
//! Protocol (ALGORITHMS.md §C, experiment 1): the two-cluster AGW set, standardised; an MLP
//! 1-50-50-1 ReLU trained to the MAP with λ = 3 and the noise σ fitted by maximum likelihood;
//! then a GGN Laplace over the 2,600 weights (biases stay at the MAP): MAP, diagonal,
//! full-covariance, last layer, and subnetworks of 50% / 3% / 1% of the weights with
//! λ_S = λ·S/D (D = 2,600) chosen by six rules: Wasserstein with the exact marginal variances
//! (the diagonal of the full-covariance posterior, the paper's rule here), Wasserstein with
//! diagonal-Laplace variances, Wasserstein among the weights with a positive GGN diagonal and
//! among those with a GGN diagonal of at least λ/100 (the isolating rules: they cannot pick a
//! weight without data signal, the second not one with a negligible signal either), our
//! sensitivity score, and at random. The score of each method is its epistemic standard deviation in the gap between the
//! clusters and at the data, and how far its predictive standard deviation is from the
//! full-covariance Laplace's. Every method is fitted on the MAPs of several seeds (5 in the
//! paper profile) and the claims are decided over them, paired by seed. Listed methods
//! (`crate::listed`; by default HMC over the weights, the biases fixed, at the same λ) are
//! fitted from every MAP and scored the same way, without claims.
//!
//! The MAP starts from a live initialisation ([`Mlp::init_live`]) and is trained by full-batch
//! Adam at α = 3·10⁻⁴: the default initialisation and α = 3·10⁻³ leave a quarter to a half of
//! the weights without any data signal (dead units), which every variance-based rule then picks
//! first. A table of MAP variants (initialisation × step size) shows the dead units of each.

mod claims;
mod report;
mod settings;

use anyhow::{Context as _, Result};
use bdl_data::Standardizer;
use bdl_eval::plot::{Figure, Panel};
use bdl_inference::{MapConfig, MapEstimate, Posterior, PredictOptions, Validate, train_map};
use bdl_laplace::selection::{self, Candidates, Selection};
use bdl_laplace::{LaplaceConfig, PriorPrecision, SubnetLaplace, SubsetScaling};
use bdl_likelihoods::Likelihood;
use bdl_mcmc::{BatchMode, Blocking, GibbsConfig, Pilot, ProposalVariance};
use bdl_methods::{
    GibbsSpec, Hessian, LaplaceSpec, MethodSpec, Problem, SubsetRule, VariationalSpec,
};
use bdl_models::{Activation, Mlp, MlpSpec, Model, Network};
use bdl_tensor::Seed;
use bdl_variational::{Method, VariationalConfig};
use candle_core::{DType, Device, Tensor};
use serde::Serialize;

use self::claims::claims;
use self::report::{map_table, seed_table, table};
use self::settings::Settings;
use crate::concurrency::side_by_side;
use crate::listed::Listed;
use crate::{Context, Entry, Outcome};

const LAMBDA: f64 = 3.0;

/// The experiment.
pub(crate) const EXPERIMENT: Entry = Entry {
    name: "laplace-toy",
    reproduces: "Daxberger et al. (2021), toy experiment: subnetwork Laplace on the 1-D two-cluster regression",
    run,
    shards: false,
    lists_methods: true,
    profiles: &crate::Profile::ALL,
    any_device: false,
};

/// One method's row of `results.json`.
#[derive(Debug, Serialize)]
struct Row {
    method: String,
    /// Parameters with a posterior (0 for the MAP).
    s: usize,
    /// The prior precision used for those parameters (`None` for a listed method, whose spec
    /// holds it).
    prior_precision: Option<f64>,
    /// Mean epistemic standard deviation sd(f) over grid points between the clusters.
    gap_sd: f64,
    /// Mean epistemic standard deviation at the training inputs.
    data_sd: f64,
    /// RMS over the grid of (sd − sd_full) / sd_full for the predictive sd (noise included).
    distance_to_full: f64,
    /// For chosen subnetworks: selected weights without data signal (an exact marginal variance
    /// within a relative 1e-9 of 1/λ).
    uninformative_selected: Option<usize>,
    /// For score-based subnetworks: candidates tied at the selection boundary.
    tied_at_boundary: Option<usize>,
}

/// A trained MAP and what its units do on the training inputs.
#[derive(Debug, Serialize)]
struct MapRow {
    /// Initialisation: "live" ([`Mlp::init_live`]) or "default" (PyTorch's uniform).
    init: &'static str,
    learning_rate: f64,
    /// Hidden units inactive at every training input, per hidden layer, before training.
    dead_at_init: Vec<usize>,
    /// The same at the MAP.
    dead_at_map: Vec<usize>,
    /// Weights with a zero GGN diagonal at the MAP (no data signal).
    signal_free_weights: usize,
    /// The final training loss (per example).
    loss: f64,
    /// The fitted noise σ.
    sigma: f64,
    /// Whether the methods use this MAP.
    used: bool,
}

/// The `results.json` rows: the methods on each MAP seed, then the MAP variants.
#[derive(Debug, Serialize)]
struct Rows {
    seeds: Vec<SeedRows>,
    maps: Vec<MapRow>,
}

/// The methods fitted on the MAP from one seed (seed 0's include VOGN and Gibbs).
#[derive(Debug, Serialize)]
struct SeedRows {
    seed: u64,
    methods: Vec<Row>,
}

/// An evaluated method: its epistemic variance over the grid and at the data.
struct Evaluated {
    name: String,
    s: usize,
    prior: Option<f64>,
    grid_var: Vec<f64>,
    data_var: Vec<f64>,
    selection: Option<Selection>,
}

impl Evaluated {
    /// The MAP's row: no posterior, so no function variance anywhere.
    fn map(scoring: &Scoring<'_>) -> Self {
        Self {
            name: "MAP".into(),
            s: 0,
            prior: Some(LAMBDA),
            grid_var: vec![0.0; scoring.grid.len()],
            data_var: vec![0.0; scoring.n_data],
            selection: None,
        }
    }
}

/// Trains one MAP variant from `seed`.
fn train(
    model: &Network,
    settings: &Settings,
    (from, live, learning_rate): (u64, bool, f64),
    x: &Tensor,
    y: &Tensor,
) -> Result<(MapEstimate, MapRow)> {
    let seed = Seed(from);
    let mlp = model.as_mlp().expect("an MLP");
    let theta0 = match live {
        true => mlp.init_live(seed, x)?,
        false => model.init(seed, DType::F64, &Device::Cpu)?,
    };
    let config = MapConfig {
        learning_rate,
        prior_precision: LAMBDA,
        epochs: settings.epochs,
        batch_size: x.dims()[0],
        learn_sigma: true,
        seed,
        ..MapConfig::default()
    }
    .check()?;
    let fit = train_map(
        model,
        &theta0,
        Likelihood::Gaussian { sigma: 1.0 },
        x,
        y,
        &config,
    )?;
    let dead = |theta: &Tensor| -> Result<Vec<usize>> {
        let units = model.forward_cached(theta, x)?.dead_units()?;
        Ok(units.iter().map(Vec::len).collect())
    };
    let h = bdl_laplace::ggn_diagonal(
        model,
        fit.estimate.theta(),
        &fit.estimate.likelihood(),
        x,
        x.dims()[0],
    )?;
    let mask = model.layout().weights_mask();
    let Likelihood::Gaussian { sigma } = fit.estimate.likelihood() else {
        unreachable!("trained a Gaussian")
    };
    let row = MapRow {
        init: if live { "live" } else { "default" },
        learning_rate,
        dead_at_init: dead(&theta0)?,
        dead_at_map: dead(fit.estimate.theta())?,
        signal_free_weights: h
            .iter()
            .zip(&mask)
            .filter(|(h, m)| **m && **h == 0.0)
            .count(),
        loss: fit.losses.last().copied().unwrap_or(f64::NAN),
        sigma,
        used: live && learning_rate == settings.learning_rate,
    };
    Ok((fit.estimate, row))
}

/// What every method of one MAP is scored on: the grid, which grid points lie in the gap
/// between the clusters, and the training inputs.
struct Scoring<'a> {
    grid: &'a [f64],
    grid_t: &'a Tensor,
    in_gap: Vec<bool>,
    x: &'a Tensor,
    /// The training targets, for the fits' problem.
    y: &'a Tensor,
    n_data: usize,
}

/// Runs the experiment.
fn run(ctx: &Context) -> Result<Outcome> {
    let settings = Settings::of(ctx.profile);
    let device = Device::Cpu;
    let raw = bdl_data::toy::agw_1d(&ctx.data).context("loading the AGW toy set")?;
    let (sx, sy) = (Standardizer::fit(raw.x())?, Standardizer::fit(raw.y())?);
    let x = sx.transform(raw.x())?.to_dtype(DType::F64)?;
    let y = sy.transform(raw.y())?.to_dtype(DType::F64)?;
    let xs = bdl_tensor::to_f64_vec(&x)?;

    let model = Network::from(Mlp::new(MlpSpec::new(&settings.widths, Activation::Relu))?);
    let (maps, map_rows) = train_maps(ctx, &model, &settings, (&x, &y))?;
    let Likelihood::Gaussian { sigma } = maps[0].likelihood() else {
        unreachable!("trained a Gaussian")
    };
    ctx.log(format!(
        "MAP seed 0: dead units {:?} → {:?}, {} weights without signal, σ = {sigma:.4}",
        map_rows[0].dead_at_init, map_rows[0].dead_at_map, map_rows[0].signal_free_weights
    ));

    let (grid, (gap_lo, gap_hi)) = grid_and_gap(&xs, settings.grid);
    let n_grid = grid.len();
    let grid_t = Tensor::from_vec(grid.clone(), (n_grid, 1), &device)?;
    let scoring = Scoring {
        grid: &grid,
        grid_t: &grid_t,
        in_gap: grid.iter().map(|&g| g > gap_lo && g < gap_hi).collect(),
        x: &x,
        y: &y,
        n_data: xs.len(),
    };

    let listed = crate::listed::methods(ctx, default_listed(ctx.profile)?)?;
    let mut seeds = Vec::new();
    let mut shown = Vec::new();
    for (k, map) in maps.iter().enumerate() {
        let seed = Seed(k as u64);
        let mut methods = laplace_methods(ctx, &model, map, &settings, &scoring, seed)?;
        methods.extend(listed_rows(&listed, &model, map, &settings, &scoring, k)?);
        if k == 0 {
            let others =
                same_subnetworks(ctx, &model, map, &settings, &methods, (&x, &y), &grid_t)?;
            methods.extend(others);
        }
        let Likelihood::Gaussian { sigma } = map.likelihood() else {
            unreachable!("trained a Gaussian")
        };
        let rows = score(&methods, &scoring, sigma * sigma);
        if k == 0 {
            shown = methods;
        }
        seeds.push(SeedRows {
            seed: k as u64,
            methods: rows,
        });
    }

    let f_grid = bdl_tensor::to_f64_vec(&model.forward(maps[0].theta(), &grid_t)?)?;
    let ys = bdl_tensor::to_f64_vec(&y)?;
    let figure = panels(&shown, sigma * sigma, (&grid, &f_grid), (&xs, &ys));
    let body = format!(
        "{}\n\n{}\n\n{}",
        table(&seeds[0].methods, sigma),
        seed_table(&seeds),
        map_table(&map_rows)
    );
    let claims = claims(&seeds);
    let body = body + &crate::listed::section("laplace-toy", "each seed's MAP", &listed);
    Ok(Outcome::new(
        "laplace-toy: subnetwork Laplace on the 1-D two-cluster set",
        &crate::listed::with_listed(&settings, &listed),
        &Rows {
            seeds,
            maps: map_rows,
        },
    )?
    .body(body)
    .claims(claims)
    .figure("laplace-toy.svg", figure.to_svg()))
}

/// The MAPs the methods use (one per seed, from seed 0), trained side by side with seed 0's
/// other variants, and the MAP table's rows (seed 0's MAP, then its variants).
fn train_maps(
    ctx: &Context,
    model: &Network,
    settings: &Settings,
    (x, y): (&Tensor, &Tensor),
) -> Result<(Vec<MapEstimate>, Vec<MapRow>)> {
    let used = (true, settings.learning_rate);
    let mut jobs: Vec<(u64, bool, f64)> = (0..settings.map_seeds)
        .map(|k| (k, used.0, used.1))
        .collect();
    jobs.extend(
        settings
            .map_variants
            .iter()
            .map(|&(live, lr)| (0, live, lr)),
    );
    ctx.log(format!(
        "MAP: {} fits of {} full-batch Adam steps ({} seeds, {} variants of seed 0), side by side",
        jobs.len(),
        settings.epochs,
        settings.map_seeds,
        settings.map_variants.len()
    ));
    let fits = side_by_side(&jobs, |&job| train(model, settings, job, x, y))?;
    let n_seeds = settings.map_seeds as usize;
    let maps: Vec<MapEstimate> = fits[..n_seeds].iter().map(|(m, _)| m.clone()).collect();
    let mut map_rows: Vec<MapRow> = fits.into_iter().map(|(_, row)| row).collect();
    map_rows.drain(1..n_seeds);
    Ok((maps, map_rows))
}

/// The listed methods on the MAP of seed `k`, each fitted by `bdl_methods::fit` and scored as
/// the own rows are.
fn listed_rows(
    listed: &[Listed],
    model: &Network,
    map: &MapEstimate,
    settings: &Settings,
    scoring: &Scoring<'_>,
    k: usize,
) -> Result<Vec<Evaluated>> {
    let problem = Problem::new(model, map.theta(), map.likelihood(), scoring.x, scoring.y);
    listed
        .iter()
        .map(|l| {
            let fitted = bdl_methods::fit(&l.spec, &problem)
                .with_context(|| format!("listed method {} on seed {k}", l.label))?;
            let s = (fitted.diagnostics.subnetwork).map_or(model.layout().len(), |s| s.len());
            let post = fitted.posterior.as_ref();
            let (grid, x) = (scoring.grid_t, scoring.x);
            variance_of(l.label.clone(), (s, None), post, settings, grid, x)
        })
        .collect()
}

/// The default listed methods (`crate::listed`; `methods.json` in the run's folder replaces
/// them): HMC over the weights from each MAP, the biases fixed as in the Laplace rows, at the
/// same prior λ and the MAP's σ ([`crate::listed::hmc_reference`]): a sampler's in-between
/// uncertainty beside the full Laplace's.
fn default_listed(profile: crate::Profile) -> Result<Vec<MethodSpec>> {
    let mut specs = crate::listed::hmc_reference(profile, LAMBDA)?;
    for spec in &mut specs {
        if let MethodSpec::Hmc(hmc) = spec {
            hmc.subnetwork = SubsetRule::Weights;
        }
    }
    Ok(specs)
}

/// `n` evaluation points from half the data's range below its least input to half above its
/// largest, and the gap: the widest empty interval between consecutive training inputs.
fn grid_and_gap(xs: &[f64], n: usize) -> (Vec<f64>, (f64, f64)) {
    let mut sorted = xs.to_vec();
    sorted.sort_by(f64::total_cmp);
    let gap = sorted
        .windows(2)
        .map(|w| (w[0], w[1]))
        .max_by(|a, b| (a.1 - a.0).total_cmp(&(b.1 - b.0)))
        .expect("at least two points");
    let (lo, hi) = (sorted[0], sorted[sorted.len() - 1]);
    let pad = 0.5 * (hi - lo);
    let grid = (0..n)
        .map(|i| lo - pad + (hi - lo + 2.0 * pad) * i as f64 / (n - 1) as f64)
        .collect();
    (grid, gap)
}

/// One panel per method of seed 0: the data and the predictive mean f(x; θ̂) ± 2 sd (noise
/// `noise` = σ² included) on the grid, in standardised units.
fn panels(
    shown: &[Evaluated],
    noise: f64,
    (grid, f_grid): (&[f64], &[f64]),
    (xs, ys): (&[f64], &[f64]),
) -> Figure {
    shown.iter().fold(Figure::new(5), |fig, m| {
        let sd: Vec<f64> = m.grid_var.iter().map(|v| (v + noise).sqrt()).collect();
        let lo: Vec<f64> = f_grid.iter().zip(&sd).map(|(f, s)| f - 2.0 * s).collect();
        let hi: Vec<f64> = f_grid.iter().zip(&sd).map(|(f, s)| f + 2.0 * s).collect();
        let mut panel = Panel::new(format!("{} (s = {})", m.name, m.s));
        panel
            .labels("x", "y")
            .y_range(-4.0, 4.0)
            .band(grid, &lo, &hi, "#1f77b4")
            .points(xs, ys, "#444444")
            .line(grid, f_grid, "#1f77b4");
        fig.panel(panel)
    })
}

/// Seed 0's other posteriors over the Laplace's subnetworks (the exact Wasserstein rule's and
/// a random one, at the settings' fraction), from the same MAP: VOGN and blocked Gibbs through
/// the method layer, the rest of the network fixed at the MAP, each at the prior λ·S/D.
fn same_subnetworks(
    ctx: &Context,
    model: &Network,
    map: &MapEstimate,
    settings: &Settings,
    methods: &[Evaluated],
    (x, y): (&Tensor, &Tensor),
    grid_t: &Tensor,
) -> Result<Vec<Evaluated>> {
    let mut others = Vec::new();
    let (label, fraction) = settings.subset_fraction;
    let n_weights = model.layout().weights_mask().iter().filter(|&&w| w).count();
    let s = (n_weights as f64 * fraction).round() as usize;
    let scaled = LAMBDA * s as f64 / n_weights as f64;
    for rule in ["Wasserstein exact", "random"] {
        let name = format!("{rule} {label}");
        let subset = methods
            .iter()
            .find(|m| m.name == name)
            .and_then(|m| m.selection.as_ref())
            .map(|c| c.indices.clone())
            .context("the subnetwork of the other posteriors")?;
        ctx.log(format!("VOGN and Gibbs over {name}"));
        let problem = Problem::new(model, map.theta(), map.likelihood(), x, y);
        let specs = [
            ("VOGN", subset_vogn(&subset, scaled, settings, x.dims()[0])),
            ("Gibbs", subset_gibbs(&subset, scaled, settings)),
        ];
        for (posterior, spec) in specs {
            let fitted = bdl_methods::fit(&spec, &problem)?;
            others.push(variance_of(
                format!("{posterior} over {name}"),
                (s, Some(scaled)),
                fitted.posterior.as_ref(),
                settings,
                grid_t,
                x,
            )?);
        }
    }
    Ok(others)
}

/// The Laplace methods on one MAP: MAP, diagonal, full, last layer, and at each size the
/// subnetworks of every rule (random ones drawn from `seed`), each fitted by
/// `bdl_methods::fit` over the indices its rule chose. The rules choose from one
/// full-covariance Laplace over the weights: its exact marginal variances and GGN diagonal.
fn laplace_methods(
    ctx: &Context,
    model: &Network,
    map: &MapEstimate,
    settings: &Settings,
    scoring: &Scoring<'_>,
    seed: Seed,
) -> Result<Vec<Evaluated>> {
    const ROWS: usize = 200;
    let config = |subset_scaling| LaplaceConfig {
        prior: PriorPrecision::Scalar(LAMBDA),
        subset_scaling,
        batch_size: ROWS,
    };
    let x = scoring.x;
    let layout = model.layout();
    let weights: Vec<usize> = (0..layout.len())
        .filter(|&i| layout.weights_mask()[i])
        .collect();
    let n_weights = weights.len();
    let Likelihood::Gaussian { sigma } = map.likelihood() else {
        unreachable!("trained a Gaussian")
    };

    ctx.log(format!("seed {}: GGN over the {n_weights} weights", seed.0));
    let full = SubnetLaplace::fit(
        map,
        x,
        weights.clone(),
        &config(SubsetScaling::None).check()?,
    )?;
    let exact = selection::exact_variances(&full);
    let full_ggn = full.ggn();
    let mut h_all = vec![0.0; layout.len()];
    for (k, &i) in weights.iter().enumerate() {
        h_all[i] = full_ggn[(k, k)];
    }
    let problem = Problem::new(model, map.theta(), map.likelihood(), x, scoring.y);
    // The Laplace over `indices` with the GGN or its diagonal, at λ or at λ·S/D over the weights.
    let laplace = |name: String, hessian, indices: Vec<usize>, scaled: bool| -> Result<Evaluated> {
        let s = indices.len();
        let (scaling, prior) = match scaled {
            true => (
                SubsetScaling::Weights,
                LAMBDA * (s as f64 / n_weights as f64),
            ),
            false => (SubsetScaling::None, LAMBDA),
        };
        let spec = MethodSpec::Laplace(LaplaceSpec {
            hessian,
            subnetwork: SubsetRule::Indices { indices },
            config: config(scaling),
            ..LaplaceSpec::default()
        });
        let fitted = bdl_methods::fit(&spec, &problem)?;
        let post = fitted.posterior.as_ref();
        variance_of(name, (s, Some(prior)), post, settings, scoring.grid_t, x)
    };
    let subnet = |name: String, chosen: Selection, scaled: bool| -> Result<Evaluated> {
        let evaluated = laplace(name, Hessian::Full, chosen.indices.clone(), scaled)?;
        Ok(Evaluated {
            selection: Some(chosen),
            ..evaluated
        })
    };

    let mut methods: Vec<Evaluated> = vec![Evaluated::map(scoring)];
    methods.push(laplace(
        "diagonal".into(),
        Hessian::Diagonal,
        weights.clone(),
        false,
    )?);
    methods.push(laplace("full".into(), Hessian::Full, weights, false)?);
    // Each rule's report counts the chosen weights without data signal: an exact marginal
    // variance within a relative 1e-9 of the prior's 1/λ (a GGN row below about 3·10⁻⁹, against
    // the σ⁻² ≈ 100 scale of the data terms; the Cholesky solve leaves a zero row's variance a
    // few ulps off 1/λ, so equality would miss them).
    let signal_free = |mut chosen: Selection| {
        chosen.uninformative_selected = chosen
            .indices
            .iter()
            .filter(|&&i| exact[i] >= (1.0 - 1e-9) / LAMBDA)
            .count();
        chosen
    };
    let last = selection::last_layer(layout, Candidates::WeightsOnly);
    methods.push(subnet("last layer".into(), signal_free(last), false)?);

    methods.extend(rules_at_sizes(
        settings,
        layout,
        (&exact, &h_all, sigma),
        &subnet,
        &signal_free,
        seed,
    )?);
    Ok(methods)
}

/// At every size of the settings' fractions, the subnetworks of every rule: the Wasserstein
/// rule by the exact and by the diagonal marginal variances, the two informed rules, the
/// sensitivity score and a random draw from `seed`, each through `subnet` (at the scaled prior)
/// with `signal_free`'s count. `exact` are the full Laplace's marginal variances, `h_all` the
/// GGN diagonal (0 off the weights), σ the MAP's noise.
fn rules_at_sizes(
    settings: &Settings,
    layout: &bdl_tensor::ParamLayout,
    (exact, h_all, sigma): (&[f64], &[f64], f64),
    subnet: &dyn Fn(String, Selection, bool) -> Result<Evaluated>,
    signal_free: &dyn Fn(Selection) -> Selection,
    seed: Seed,
) -> Result<Vec<Evaluated>> {
    let d = layout.len();
    let n_weights = layout.weights_mask().iter().filter(|&&w| w).count();
    let mut out = Vec::new();
    let prior: Vec<f64> = vec![LAMBDA; d];
    let diag_var = selection::diagonal_variances(h_all, &prior);
    // The sensitivity score σ_d² Σ_n J_nd²: Σ_n J_nd² is the GGN diagonal of a unit-variance
    // Gaussian likelihood, i.e. ours times σ².
    let jac_sq: Vec<f64> = h_all.iter().map(|h| h * sigma * sigma).collect();
    let sensitivity = selection::sensitivity_scores(&diag_var, &jac_sq);
    // The second isolating rule counts a GGN diagonal below λ/100 (the data adding less than a
    // hundredth of the prior's precision) as no signal.
    let h_floor: Vec<f64> = h_all
        .iter()
        .map(|&h| if h >= SIGNAL_FLOOR * LAMBDA { h } else { 0.0 })
        .collect();
    for (label, fraction) in settings.fractions {
        let s = (n_weights as f64 * fraction).round() as usize;
        let pick = |scores: &[f64]| -> Result<Selection> {
            let chosen = selection::largest(scores, layout, Candidates::WeightsOnly, s, None)?;
            Ok(signal_free(chosen))
        };
        out.push(subnet(
            format!("Wasserstein exact {label}"),
            pick(exact)?,
            true,
        )?);
        out.push(subnet(
            format!("Wasserstein diagonal {label}"),
            pick(&diag_var)?,
            true,
        )?);
        for (rule, h) in [(INFORMED, h_all), (INFORMED_FLOOR, &h_floor)] {
            let informed =
                selection::wasserstein_informed(exact, h, layout, Candidates::WeightsOnly, s)?;
            out.push(subnet(
                format!("{rule} {label}"),
                signal_free(informed),
                true,
            )?);
        }
        out.push(subnet(
            format!("sensitivity {label}"),
            pick(&sensitivity)?,
            true,
        )?);
        let r = selection::random(layout, Candidates::WeightsOnly, s, seed.fork(label))?;
        out.push(subnet(format!("random {label}"), signal_free(r), true)?);
    }
    Ok(out)
}

/// The rules of the isolating experiment: exact marginal variances among the weights with a
/// positive GGN diagonal ([`selection::wasserstein_informed`]), and among those whose GGN
/// diagonal is at least [`SIGNAL_FLOOR`] of λ (added after the first rule, at h_dd > 0, still
/// chose only weights without signal at 3% and 1%: their h_dd is positive but negligible).
const INFORMED: &str = "Wasserstein informed";
const INFORMED_FLOOR: &str = "Wasserstein informed (h ≥ λ/100)";
/// The least GGN diagonal, as a fraction of λ, that counts as data signal for
/// [`INFORMED_FLOOR`].
const SIGNAL_FLOOR: f64 = 0.01;

/// The scores of `methods` on one MAP with noise variance `noise`: the epistemic sd in the gap
/// and at the data, and the distance of the predictive sd from the full Laplace's.
fn score(methods: &[Evaluated], scoring: &Scoring<'_>, noise: f64) -> Vec<Row> {
    let full = methods
        .iter()
        .find(|m| m.name == "full")
        .expect("the full Laplace is a method");
    let full_sd: Vec<f64> = full.grid_var.iter().map(|v| (v + noise).sqrt()).collect();
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    methods
        .iter()
        .map(|m| {
            let gap: Vec<f64> = m
                .grid_var
                .iter()
                .zip(&scoring.in_gap)
                .filter(|(_, g)| **g)
                .map(|(v, _)| v.sqrt())
                .collect();
            let data: Vec<f64> = m.data_var.iter().map(|v| v.sqrt()).collect();
            let rel: Vec<f64> = m
                .grid_var
                .iter()
                .zip(&full_sd)
                .map(|(v, f)| (((v + noise).sqrt() - f) / f).powi(2))
                .collect();
            Row {
                method: m.name.clone(),
                s: m.s,
                prior_precision: m.prior,
                gap_sd: mean(&gap),
                data_sd: mean(&data),
                distance_to_full: mean(&rel).sqrt(),
                uninformative_selected: m.selection.as_ref().map(|s| s.uninformative_selected),
                tied_at_boundary: m.selection.as_ref().map(|s| s.tied_at_boundary),
            }
        })
        .collect()
}

/// VOGN over `subset` from the MAP (every other weight held at the MAP), full batch, with the
/// prior precision `prior` on the subset.
fn subset_vogn(subset: &[usize], prior: f64, settings: &Settings, n: usize) -> MethodSpec {
    let config = VariationalConfig {
        mc_samples: settings.vogn_samples,
        seed: Seed(0).fork("subset-vogn"),
        ..VariationalConfig::new(
            Method::Vogn {
                learning_rate: 0.05,
                beta: 0.1,
            },
            prior,
            settings.vogn_steps,
            n,
        )
    };
    MethodSpec::Variational(VariationalSpec {
        config,
        subnetwork: SubsetRule::Indices {
            indices: subset.to_vec(),
        },
    })
}

/// Blocked Gibbs over `subset` from the MAP (node blocks restricted to it, every other weight
/// fixed at the MAP), exact batches, the Gaussian likelihood of the MAP, the prior N(0, 1/prior);
/// per-layer variances by a pilot into [0.2, 0.5]; the draws of the last three quarters of
/// `settings.gibbs_sweeps`, thinned to `settings.predictive_draws`.
fn subset_gibbs(subset: &[usize], prior: f64, settings: &Settings) -> MethodSpec {
    let gibbs = GibbsConfig {
        prior_variance: 1.0 / prior,
        ..GibbsConfig::new(
            Blocking::Node,
            ProposalVariance::Common(1e-3),
            BatchMode::Exact,
        )
    };
    let burn_in = settings.gibbs_sweeps / 4;
    MethodSpec::Gibbs(GibbsSpec {
        gibbs,
        sweeps: settings.gibbs_sweeps,
        burn_in,
        keep_every: ((settings.gibbs_sweeps - burn_in) / settings.predictive_draws as u64).max(1),
        pilot: Some(Pilot {
            sweeps: 100,
            ..Pilot::new([0.2, 0.5])
        }),
        seed: Seed(0).fork("subset-gibbs"),
        subnetwork: SubsetRule::Indices {
            indices: subset.to_vec(),
        },
    })
}

/// The epistemic variance of f over the grid and at the data under `post`, from the
/// function-space view (`settings.predictive_draws` draws where it samples, every draw of a
/// chain window).
fn variance_of(
    name: String,
    (s, prior): (usize, Option<f64>),
    post: &dyn Posterior,
    settings: &Settings,
    grid: &Tensor,
    x: &Tensor,
) -> Result<Evaluated> {
    let options = PredictOptions {
        samples: settings.predictive_draws,
        seed: Seed(0).fork("subset draws"),
        ..PredictOptions::default()
    };
    let variance = |at: &Tensor| -> Result<Vec<f64>> {
        Ok(bdl_tensor::to_f64_vec(
            &post.f_moments(at, &options)?.variance()?,
        )?)
    };
    Ok(Evaluated {
        name,
        s,
        prior,
        grid_var: variance(grid)?,
        data_var: variance(x)?,
        selection: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::claim::Decision::{self, Fails, Holds, Undecided};

    fn row(method: &str, gap_sd: f64, data_sd: f64, distance_to_full: f64) -> Row {
        Row {
            method: method.into(),
            s: 10,
            prior_precision: Some(LAMBDA),
            gap_sd,
            data_sd,
            distance_to_full,
            uninformative_selected: Some(0),
            tied_at_boundary: Some(0),
        }
    }

    /// Rows in which the full Laplace keeps the gap uncertainty, the diagonal keeps it too
    /// (so that claim fails), the last layer loses it, exact Wasserstein beats random at 50%
    /// only, diagonal Wasserstein never, and sensitivity always.
    #[test]
    fn claims_follow_the_rows() {
        // Seed k shifts the full Laplace's gap sd, so the paired differences vary by seed.
        let seed = |k: u64| {
            let k_f = k as f64;
            let mut rows = vec![
                row("full", 2.0 + 0.1 * k_f, 0.5, 0.0),
                row("diagonal", 3.0, 0.5, 0.4),
                row("last layer", 0.5, 0.5, 0.5),
            ];
            for (size, w) in [("50%", 0.1), ("3%", 0.6), ("1%", 0.7)] {
                rows.push(row(&format!("Wasserstein exact {size}"), 1.0, 0.5, w));
                rows.push(row(&format!("Wasserstein diagonal {size}"), 1.0, 0.5, 0.9));
                rows.push(row(&format!("{INFORMED} {size}"), 1.0, 0.5, 0.15));
                rows.push(row(&format!("{INFORMED_FLOOR} {size}"), 1.0, 0.5, 0.4));
                rows.push(row(&format!("sensitivity {size}"), 1.0, 0.5, 0.2));
                rows.push(row(&format!("random {size}"), 1.0, 0.5, 0.3 + 0.01 * k_f));
            }
            SeedRows {
                seed: k,
                methods: rows,
            }
        };
        let verdicts = |n: u64| -> Vec<Decision> {
            claims(&(0..n).map(seed).collect::<Vec<_>>())
                .iter()
                .map(|c| c.verdict)
                .collect()
        };
        let per_size = |exact| [exact, Fails, Holds, Fails, Holds];
        let expected: Vec<Decision> = [Fails, Holds]
            .into_iter()
            .chain(per_size(Holds))
            .chain(per_size(Fails))
            .chain(per_size(Fails))
            .collect();
        assert_eq!(verdicts(3), expected);
        // One seed has no standard error: nothing is decided.
        assert!(verdicts(1).iter().all(|&v| v == Undecided));
    }
}
