//! The errors a user meets, through the facade: every method's fit refuses bad data with a
//! typed error naming the argument, predictives refuse bad inputs, and a damaged posterior file
//! is refused naming the file.

use bdl::prelude::*;
use candle_core::{DType, Device, Tensor};

/// The error and its causes, one string.
fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}

/// One cheap spec of every method that fits a regression MLP.
fn specs() -> Vec<MethodSpec> {
    serde_json::from_str(
        r#"[
        {"method": "map", "config": {"epochs": 2}},
        {"method": "laplace", "config": {}},
        {"method": "laplace", "config": {"hessian": "diagonal"}},
        {"method": "variational", "config": {"method": {"kind": "vadam", "learning_rate": 0.01,
            "beta1": 0.9, "beta2": 0.999}, "prior_precision": 1, "init_precision": null,
            "epochs": 1, "batch_size": 2, "mc_samples": 1, "lr_decay": null, "seed": 0}},
        {"method": "swag", "config": {"snapshots": 2, "rank": 2}},
        {"method": "ensemble", "config": {"members": 2, "map": {"epochs": 1}}},
        {"method": "gibbs", "config": {"blocking": {"kind": "node"}, "proposal": {"common": 0.01},
            "prior_variance": 1, "batch": "exact", "sweeps": 3}},
        {"method": "sgmcmc", "config": {"dynamics": {"kind": "sgld"}, "step_size": 1e-4,
            "prior_precision": 1, "epochs": 1, "batch_size": 2}},
        {"method": "hmc", "config": {"step_size": 0.01, "leapfrog_steps": 2, "iterations": 3,
            "burn_in": 1, "prior_precision": 1}},
        {"method": "nuts", "config": {"step_size": 0.01, "iterations": 3, "burn_in": 1,
            "prior_precision": 1}}
    ]"#,
    )
    .unwrap()
}

fn net() -> Network {
    Network::from(Mlp::new(MlpSpec::new(&[2, 4, 1], Activation::Tanh)).unwrap())
}

#[test]
fn every_fit_refuses_bad_data_naming_the_argument() {
    let dev = &Device::Cpu;
    let net = net();
    let theta = net.init(Seed(0), DType::F32, dev).unwrap();
    let x = Tensor::new(&[[0.0f32, 1.0], [1.0, 2.0], [1.0, 1.0]], dev).unwrap();
    let y = Tensor::new(&[[0.0f32], [1.0], [2.0]], dev).unwrap();
    let nan_x = Tensor::new(&[[0.0f32, 1.0], [f32::NAN, 2.0], [1.0, 1.0]], dev).unwrap();
    let inf_y = Tensor::new(&[[0.0f32], [f32::INFINITY], [2.0]], dev).unwrap();
    let wide = Tensor::zeros((3, 3), DType::F32, dev).unwrap();
    let empty_x = Tensor::zeros((0, 2), DType::F32, dev).unwrap();
    let empty_y = Tensor::zeros((0, 1), DType::F32, dev).unwrap();
    let two_y = y.narrow(0, 0, 2).unwrap();
    let lik = Likelihood::Gaussian { sigma: 1.0 };
    let cases: [(&str, &Tensor, &Tensor, &str); 5] = [
        ("a NaN feature", &nan_x, &y, "x: non-finite value NaN"),
        ("an infinite target", &x, &inf_y, "y: non-finite value inf"),
        ("rows that differ", &x, &two_y, "x has 3 rows but y has 2"),
        ("no examples", &empty_x, &empty_y, "at least one example"),
        ("the wrong width", &wide, &y, "MLP input x"),
    ];
    for spec in specs() {
        for (what, x, y, expected) in cases {
            let err = fit(&spec, &Problem::new(&net, &theta, lik, x, y))
                .err()
                .unwrap_or_else(|| panic!("{} accepted {what}", spec.name()));
            let text = chain(&err);
            assert!(
                text.starts_with(&format!("{} failed", spec.name())),
                "{text}"
            );
            assert!(text.contains(expected), "{}, {what}: {text}", spec.name());
        }
    }
    // Labels outside the classes.
    let labels = Tensor::new(&[0u32, 1, 5], dev).unwrap();
    let classes = Network::from(Mlp::new(MlpSpec::new(&[2, 4, 3], Activation::Tanh)).unwrap());
    let theta = classes.init(Seed(0), DType::F32, dev).unwrap();
    let lik = Likelihood::Categorical { classes: 3 };
    let map: MethodSpec = serde_json::from_str(r#"{"method": "map", "config": {}}"#).unwrap();
    let err = fit(&map, &Problem::new(&classes, &theta, lik, &x, &labels))
        .err()
        .unwrap();
    assert!(chain(&err).contains("label 5"), "{}", chain(&err));
}

#[test]
fn predictives_refuse_bad_inputs_and_damaged_files_are_named() {
    let dev = &Device::Cpu;
    let net = net();
    let theta = net.init(Seed(0), DType::F32, dev).unwrap();
    let x = Tensor::new(&[[0.0f32, 1.0], [1.0, 2.0], [1.0, 1.0]], dev).unwrap();
    let y = Tensor::new(&[[0.0f32], [1.0], [2.0]], dev).unwrap();
    let lik = Likelihood::Gaussian { sigma: 1.0 };
    let laplace: MethodSpec =
        serde_json::from_str(r#"{"method": "laplace", "config": {}}"#).unwrap();
    let post = fit(&laplace, &Problem::new(&net, &theta, lik, &x, &y))
        .unwrap()
        .posterior;
    let options = PredictOptions::default();
    let nan = Tensor::new(&[[f32::NAN, 1.0]], dev).unwrap();
    let wide = Tensor::zeros((1, 5), DType::F32, dev).unwrap();
    for (what, bad) in [("a NaN input", nan), ("the wrong width", wide)] {
        let err = post.predictive(&bad, &options).err().unwrap();
        assert!(
            chain(&err).contains("MLP input x"),
            "{what}: {}",
            chain(&err)
        );
    }
    let bad_options = PredictOptions {
        samples: 0,
        ..options
    };
    assert!(chain(&post.predictive(&x, &bad_options).err().unwrap()).contains("samples"));

    // A tensor byte altered after the save, and a truncated file: each refused, naming it.
    let dir = std::env::temp_dir().join(format!("bdl-facade-errors-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("laplace.safetensors");
    post.save(&path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let mut altered = bytes.clone();
    let last = altered.len() - 1;
    altered[last] ^= 0x10;
    std::fs::write(&path, &altered).unwrap();
    let err = bdl::methods::load(&path).err().expect("an altered file");
    let text = chain(&err);
    assert!(
        text.contains("laplace.safetensors") && text.contains("altered"),
        "{text}"
    );
    std::fs::write(&path, &bytes[..bytes.len() - 7]).unwrap();
    let err = bdl::methods::load(&path).err().expect("a truncated file");
    assert!(
        chain(&err).contains("laplace.safetensors"),
        "{}",
        chain(&err)
    );
    // Rows of another width than the posterior's network.
    std::fs::write(&path, &bytes).unwrap();
    let back = bdl::methods::load(&path).unwrap();
    let three = Tensor::zeros((2, 3), DType::F32, dev).unwrap();
    let err = back.predictive(&three, &options).err().unwrap();
    assert!(chain(&err).contains("MLP input x"), "{}", chain(&err));
    std::fs::remove_dir_all(&dir).ok();
}
