//! A downstream program that uses bdl as a user would, through the `bdl` crate alone: the UCI
//! yacht data from a CSV file (`yacht.csv`, the 308 rows of the UCI Yacht Hydrodynamics set with
//! a header), a seeded 80/20 split standardised with the training statistics, a MAP MLP, then
//! every method of a JSON list (`methods.json`) fitted from the MAP by one call each, and each
//! posterior's test log-likelihood (standardised units).
//!
//! `cargo run -p yacht-csv --release -- [data.csv target methods.json]`

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use bdl::data::StandardizedSplit;
use bdl::prelude::*;
use candle_core::{DType, Device, Tensor};

/// One method's outcome.
struct Scored {
    method: String,
    test_log_lik: f64,
    seconds: f64,
}

/// The MAP of an MLP 6-50-1 on the CSV's training part, then every method of `methods` from it.
fn run(csv: &Path, target: &str, methods: &Path, epochs: usize) -> Result<Vec<Scored>> {
    let data = bdl::data::csv::read_regression(csv, target)?;
    let (train, test) = data.holdout(0.2, Seed(0))?;
    let split = StandardizedSplit::new(&train, &test)?;
    let f32 = |t: &Tensor| t.to_dtype(DType::F32);
    let (x, y) = (f32(&split.x_train)?, f32(&split.y_train)?);
    let (x_test, y_test) = (f32(&split.x_test)?, f32(&split.y_test)?);
    let net = Network::from(Mlp::new(MlpSpec::new(
        &[x.dims()[1], 50, 1],
        Activation::Relu,
    ))?);
    let theta0 = net.init(Seed(1), DType::F32, &Device::Cpu)?;
    let map_spec: MethodSpec = serde_json::from_value(serde_json::json!({
        "method": "map",
        "config": {"learning_rate": 0.01, "epochs": epochs, "batch_size": 32, "learn_sigma": true}
    }))?;
    let lik = Likelihood::Gaussian { sigma: 1.0 };
    let map = fit(&map_spec, &Problem::new(&net, &theta0, lik, &x, &y))?;
    let theta = map
        .posterior
        .sample(1, Seed(0))?
        .context("a point mass")?
        .squeeze(0)?;
    let problem = Problem::new(&net, &theta, map.posterior.likelihood(), &x, &y);
    let specs: Vec<MethodSpec> = serde_json::from_str(
        &std::fs::read_to_string(methods).with_context(|| methods.display().to_string())?,
    )
    .with_context(|| format!("{}: not a list of method specs", methods.display()))?;
    let score = |post: &dyn Posterior| -> Result<f64> {
        let pred = post.predictive(&x_test, &PredictOptions::default())?;
        Ok(bdl::eval::metrics::mean_log_lik(&pred, &y_test)?)
    };
    let mut out = vec![Scored {
        method: "MAP".into(),
        test_log_lik: score(map.posterior.as_ref())?,
        seconds: map.seconds,
    }];
    for spec in &specs {
        let fitted = fit(spec, &problem).with_context(|| spec.name())?;
        out.push(Scored {
            method: spec.name().to_owned(),
            test_log_lik: score(fitted.posterior.as_ref())?,
            seconds: fitted.seconds,
        });
    }
    Ok(out)
}

fn main() -> Result<()> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (csv, target, methods) = match args.as_slice() {
        [csv, target, methods] => (PathBuf::from(csv), target.clone(), PathBuf::from(methods)),
        [] => (
            here.join("yacht.csv"),
            "residuary_resistance".to_owned(),
            here.join("methods.json"),
        ),
        _ => anyhow::bail!("usage: yacht-csv [data.csv target methods.json]"),
    };
    for s in run(&csv, &target, &methods, 200)? {
        println!(
            "{:<24} test log-likelihood {:>7.3}  ({:.2} s)",
            s.method, s.test_log_lik, s.seconds
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shipped data and methods, at fewer MAP epochs: every method fits and scores finitely,
    /// and bad input is an error naming the file.
    #[test]
    fn fits_every_listed_method() {
        let here = Path::new(env!("CARGO_MANIFEST_DIR"));
        let scored = run(
            &here.join("yacht.csv"),
            "residuary_resistance",
            &here.join("methods.json"),
            50,
        )
        .unwrap();
        assert_eq!(scored.len(), 6);
        assert!(scored.iter().all(|s| s.test_log_lik.is_finite()));
        let err = run(
            &here.join("yacht.csv"),
            "speed",
            &here.join("methods.json"),
            1,
        )
        .err()
        .unwrap();
        assert!(err.to_string().contains("yacht.csv"), "{err}");
    }
}
