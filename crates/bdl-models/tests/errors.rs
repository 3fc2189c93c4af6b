//! Bad input gets a typed error naming what is wrong, never a panic.

mod common;

use bdl_models::{Activation, Error, Mlp, MlpSpec, Model};
use bdl_tensor::{Error as TensorError, Seed};
use candle_core::{DType, Device, Tensor};

fn model() -> Mlp {
    Mlp::new(MlpSpec::new(&[3, 4, 2], Activation::Relu)).unwrap()
}

#[test]
fn nan_input_is_named() {
    let m = model();
    let theta = m.init(Seed(0), DType::F32, &Device::Cpu).unwrap();
    let x = Tensor::new(&[[0.0f32, 1.0, 2.0], [3.0, f32::NAN, 5.0]], &Device::Cpu).unwrap();
    let err = m.forward(&theta, &x).unwrap_err();
    assert!(
        matches!(err, Error::Tensor(TensorError::NonFinite { index: 4, .. })),
        "{err}"
    );
    assert!(err.to_string().contains("input"), "{err}");
}

#[test]
fn input_of_the_wrong_width_is_named() {
    let m = model();
    let theta = m.init(Seed(0), DType::F32, &Device::Cpu).unwrap();
    let x = Tensor::zeros((2, 5), DType::F32, &Device::Cpu).unwrap();
    let err = m.forward(&theta, &x).unwrap_err();
    assert!(
        matches!(err, Error::Tensor(TensorError::ShapeMismatch { .. })),
        "{err}"
    );
    let wrong_theta = Tensor::zeros(7, DType::F32, &Device::Cpu).unwrap();
    let x = Tensor::zeros((2, 3), DType::F32, &Device::Cpu).unwrap();
    assert!(m.forward(&wrong_theta, &x).is_err());
}

#[test]
fn output_gradient_of_the_wrong_shape_is_named() {
    let m = model();
    let theta = m.init(Seed(0), DType::F32, &Device::Cpu).unwrap();
    let x = Tensor::zeros((2, 3), DType::F32, &Device::Cpu).unwrap();
    let cache = m.forward_cached(&theta, &x).unwrap();
    let r = Tensor::zeros((2, 3), DType::F32, &Device::Cpu).unwrap();
    for err in [
        m.backward(&theta, &cache, &r).unwrap_err(),
        m.sum_sq_grads(&theta, &cache, &r).unwrap_err(),
    ] {
        assert!(
            matches!(&err, Error::Tensor(TensorError::ShapeMismatch { expected, actual, .. })
                if expected == &[2, 2] && actual == &[2, 3]),
            "{err}"
        );
        assert!(err.to_string().contains("output gradient"), "{err}");
    }
    let err = m.jacobian(&theta, &cache, &[0, 26]).unwrap_err();
    assert!(
        matches!(err, Error::ParamIndex { index: 26, len: 26 }),
        "{err}"
    );
}

#[test]
fn checkpoint_with_mismatched_shapes_is_named() {
    let dir = std::env::temp_dir().join(format!("bdl-models-errors-{}", std::process::id()));
    let path = dir.join("wrong.safetensors");
    let tensors = vec![
        (
            "0.weight".to_owned(),
            Tensor::zeros((4, 5), DType::F32, &Device::Cpu).unwrap(),
        ),
        (
            "0.bias".to_owned(),
            Tensor::zeros(4, DType::F32, &Device::Cpu).unwrap(),
        ),
        (
            "2.weight".to_owned(),
            Tensor::zeros((2, 4), DType::F32, &Device::Cpu).unwrap(),
        ),
        (
            "2.bias".to_owned(),
            Tensor::zeros(2, DType::F32, &Device::Cpu).unwrap(),
        ),
    ];
    bdl_tensor::save_safetensors(&path, &tensors, None::<&()>).unwrap();
    let err = model().load_params(&path, &Device::Cpu).unwrap_err();
    assert!(
        matches!(&err, Error::Tensor(TensorError::ShapeMismatch { expected, actual, .. })
            if expected == &[4, 3] && actual == &[4, 5]),
        "{err}"
    );
    assert!(
        err.to_string().contains("0.weight") && err.to_string().contains("wrong.safetensors"),
        "{err}"
    );
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn save_then_load_round_trips() {
    let dir = std::env::temp_dir().join(format!("bdl-models-roundtrip-{}", std::process::id()));
    let path = dir.join("mlp.safetensors");
    let m = Mlp::new(MlpSpec::new(&[3, 4, 2], Activation::Tanh).with_dropout(0.1)).unwrap();
    let theta = m.init(Seed(4), DType::F64, &Device::Cpu).unwrap();
    m.save(&path, &theta).unwrap();
    let (back, theta_back) = Mlp::load(&path, &Device::Cpu).unwrap();
    assert_eq!(back.spec(), m.spec());
    assert_eq!(common::values(&theta_back), common::values(&theta));
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn invalid_specs_are_refused() {
    assert!(Mlp::new(MlpSpec::new(&[3], Activation::Relu)).is_err());
    assert!(Mlp::new(MlpSpec::new(&[3, 0, 1], Activation::Relu)).is_err());
    assert!(Mlp::new(MlpSpec::new(&[3, 1], Activation::Relu).with_dropout(1.0)).is_err());
}

/// A live initialisation cannot exist when a hidden unit's pre-activation is zero whatever its
/// weights (no bias, all inputs zero): a typed error after the bounded redraws, not a loop.
#[test]
fn a_unit_that_cannot_come_alive_is_an_error() {
    let mlp = Mlp::new(MlpSpec::new(&[2, 3, 1], Activation::Relu).without_bias()).unwrap();
    let x = Tensor::zeros((4, 2), DType::F64, &Device::Cpu).unwrap();
    match mlp.init_live(Seed(0), &x) {
        Err(Error::DeadUnit {
            layer: 0,
            examples: 4,
            draws,
            ..
        }) => assert_eq!(draws, Mlp::LIVE_INIT_DRAWS),
        other => panic!("expected a dead unit, got {other:?}"),
    }
    // With inputs that vary, every unit comes alive, and the draw is reproducible.
    let x = Tensor::from_vec(
        vec![1.0f64, -1.0, 0.5, 2.0, -2.0, 0.0, 0.0, 1.0],
        (4, 2),
        &Device::Cpu,
    )
    .unwrap();
    let a = mlp.init_live(Seed(3), &x).unwrap();
    let dead = mlp.forward_cached(&a, &x).unwrap().dead_units().unwrap();
    assert!(dead.iter().all(Vec::is_empty), "{dead:?}");
    let b = mlp.init_live(Seed(3), &x).unwrap();
    assert_eq!(a.to_vec1::<f64>().unwrap(), b.to_vec1::<f64>().unwrap());
}
