//! A fitted model on disk: the posterior and what is needed to feed it new rows of a CSV file.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result, bail, ensure};
use bdl::data::{Dataset, Standardizer};
use bdl::prelude::*;
use candle_core::{DType, Device, Tensor};
use serde::{Deserialize, Serialize};

/// The task of a CSV file's target column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub(crate) enum TaskKind {
    /// Real-valued targets (Gaussian likelihood, σ learned).
    Regression,
    /// Class indices 0, 1, … (categorical likelihood).
    Classification,
}

/// What `bdl fit` takes.
#[derive(Debug, clap::Args)]
pub(crate) struct FitArgs {
    /// The method: a JSON file holding one `MethodSpec`.
    #[arg(long)]
    method: PathBuf,
    /// The training rows, a CSV file with a header.
    #[arg(long)]
    data: PathBuf,
    /// The column to predict.
    #[arg(long)]
    target: String,
    /// Regression or classification.
    #[arg(long, value_enum, default_value = "regression")]
    task: TaskKind,
    /// Hidden units of the MLP (one hidden layer, ReLU).
    #[arg(long, default_value_t = 50)]
    hidden: usize,
    /// Epochs of the MAP training.
    #[arg(long, default_value_t = 200)]
    epochs: usize,
    /// Adam's step size for the MAP.
    #[arg(long, default_value_t = 0.01)]
    learning_rate: f64,
    /// The seed of every random number.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Where the posterior goes (a `.safetensors` file; its sidecar and `.model.json` beside).
    #[arg(long)]
    out: PathBuf,
}

/// `<posterior>.model.json`: how rows of a CSV file become the posterior's inputs.
#[derive(Debug, Serialize, Deserialize)]
struct ModelFile {
    target: String,
    features: Vec<String>,
    task: TaskKind,
    /// The standardisation of the features, fitted on the training rows.
    scale: Standardizer,
    /// The method's name.
    method: String,
}

fn model_path(posterior: &Path) -> PathBuf {
    posterior.with_extension("model.json")
}

fn read(path: &Path, target: &str, task: TaskKind) -> Result<Dataset> {
    Ok(match task {
        TaskKind::Regression => bdl::data::csv::read_regression(path, target)?,
        TaskKind::Classification => bdl::data::csv::read_classification(path, target)?,
    })
}

/// A spinner on standard error while `work` runs.
fn spinning<T>(message: String, work: impl FnOnce() -> Result<T>) -> Result<T> {
    let bar = indicatif::ProgressBar::new_spinner().with_message(message);
    bar.enable_steady_tick(Duration::from_millis(120));
    let out = work();
    bar.finish_and_clear();
    out
}

pub(crate) fn fit(args: &FitArgs) -> Result<()> {
    let spec: MethodSpec = serde_json::from_str(
        &std::fs::read_to_string(&args.method)
            .with_context(|| format!("reading {}", args.method.display()))?,
    )
    .with_context(|| format!("{}: not a method spec", args.method.display()))?;
    let data = read(&args.data, &args.target, args.task)?;
    ensure!(!data.is_empty(), "{}: no rows", args.data.display());
    let scale = Standardizer::fit(data.x())?;
    let x = scale.transform(data.x())?;
    let (likelihood, outputs) = match args.task {
        TaskKind::Regression => (Likelihood::Gaussian { sigma: 1.0 }, 1),
        TaskKind::Classification => {
            let classes = data.target_names().len().max(2);
            (Likelihood::Categorical { classes }, classes)
        }
    };
    let widths = [data.num_features(), args.hidden, outputs];
    let net = Network::from(Mlp::new(MlpSpec::new(&widths, Activation::Relu))?);
    let theta0 = net.init(Seed(args.seed), DType::F32, &Device::Cpu)?;
    let map_spec: MethodSpec = serde_json::from_value(serde_json::json!({
        "method": "map",
        "config": {
            "learning_rate": args.learning_rate,
            "epochs": args.epochs,
            "batch_size": 32,
            "learn_sigma": args.task == TaskKind::Regression,
            "seed": args.seed,
        }
    }))?;
    let y = data.y();
    let rows = data.len();
    let map = spinning(format!("MAP of an MLP {widths:?} on {rows} rows"), || {
        Ok(bdl::fit(
            &map_spec,
            &Problem::new(&net, &theta0, likelihood, &x, y),
        )?)
    })?;
    let fitted = if matches!(spec, MethodSpec::Map(_)) {
        map
    } else {
        let theta = map
            .posterior
            .sample(1, Seed(0))?
            .context("a MAP draws its point")?
            .squeeze(0)?;
        let problem = Problem::new(&net, &theta, map.posterior.likelihood(), &x, y);
        spinning(format!("{} from the MAP", spec.name()), || {
            Ok(bdl::fit(&spec, &problem)?)
        })?
    };
    fitted.posterior.save(&args.out)?;
    let model = ModelFile {
        target: args.target.clone(),
        features: data.feature_names().to_vec(),
        task: args.task,
        scale,
        method: spec.name().to_owned(),
    };
    std::fs::write(model_path(&args.out), serde_json::to_string_pretty(&model)?)?;
    eprintln!(
        "{} fitted in {:.2} s → {}",
        spec.name(),
        fitted.seconds,
        args.out.display()
    );
    Ok(())
}

/// The saved posterior and its model file.
fn open(posterior: &Path) -> Result<(Box<dyn Posterior>, ModelFile)> {
    let path = model_path(posterior);
    let model: ModelFile = serde_json::from_str(
        &std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?,
    )
    .with_context(|| format!("{}: not a bdl model file", path.display()))?;
    let post = bdl::methods::load(posterior)
        .with_context(|| format!("loading {}", posterior.display()))?;
    let inputs = post.network().layout().segments()[0].shape.get(1).copied();
    if inputs.is_some_and(|d| d != model.features.len()) {
        bail!(
            "{}: the posterior takes {} features but its model file lists {}",
            posterior.display(),
            inputs.unwrap_or(0),
            model.features.len()
        );
    }
    Ok((post, model))
}

/// The predictive of `post` on the rows of `data` (the model's feature columns, standardised).
fn predictive(post: &dyn Posterior, model: &ModelFile, data: &Path) -> Result<Predictive> {
    let x = bdl::data::csv::read_columns(data, &model.features)?;
    ensure!(x.dims()[0] > 0, "{}: no rows", data.display());
    let x = model.scale.transform(&x)?;
    Ok(post.predictive(&x, &PredictOptions::default())?)
}

fn rows(t: &Tensor) -> Result<Vec<Vec<f64>>> {
    Ok(t.to_dtype(DType::F64)?.to_vec2()?)
}

pub(crate) fn predict(posterior: &Path, data: &Path, out: Option<&Path>) -> Result<()> {
    let (post, model) = open(posterior)?;
    let pred = predictive(post.as_ref(), &model, data)?;
    let mut text = String::new();
    match model.task {
        TaskKind::Regression => {
            text.push_str(&format!("{0}_mean,{0}_variance\n", model.target));
            for (m, v) in rows(&pred.mean()?)?.iter().zip(rows(&pred.variance()?)?) {
                text.push_str(&format!("{},{}\n", m[0], v[0]));
            }
        }
        TaskKind::Classification => {
            let probs = rows(&pred.probs()?)?;
            let k = probs.first().map_or(0, Vec::len);
            let header: Vec<String> = (0..k).map(|c| format!("p_{c}")).collect();
            text.push_str(&(header.join(",") + "\n"));
            for p in probs {
                let cells: Vec<String> = p.iter().map(f64::to_string).collect();
                text.push_str(&(cells.join(",") + "\n"));
            }
        }
    }
    match out {
        Some(path) => {
            std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?
        }
        None => std::io::stdout().write_all(text.as_bytes())?,
    }
    Ok(())
}

pub(crate) fn evaluate(posterior: &Path, data: &Path) -> Result<()> {
    let (post, model) = open(posterior)?;
    let test = read(data, &model.target, model.task)?;
    let pred = predictive(post.as_ref(), &model, data)?;
    let metrics = bdl::eval::metrics::mean_log_lik(&pred, test.y())?;
    println!("method: {}", model.method);
    println!("rows: {}", test.len());
    println!("test log-likelihood: {metrics:.4}");
    match model.task {
        TaskKind::Regression => {
            println!("RMSE: {:.4}", bdl::eval::metrics::rmse(&pred, test.y())?);
        }
        TaskKind::Classification => {
            println!(
                "accuracy: {:.4}",
                bdl::eval::metrics::accuracy(&pred, test.y())?
            );
            println!(
                "ECE (15 bins): {:.4}",
                bdl::eval::metrics::expected_calibration_error(&pred, test.y(), 15)?
            );
        }
    }
    Ok(())
}
