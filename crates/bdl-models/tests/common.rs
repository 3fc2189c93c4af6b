//! Shared helpers for the models' integration tests.
#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;

use bdl_models::Activation;
use bdl_tensor::Seed;
use candle_core::{DType, Device, Tensor};
use proptest::prelude::*;

/// The repository's `fixtures/` folder.
pub fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

/// A standard-normal tensor from a seeded stream.
pub fn randn(seed: Seed, shape: &[usize], dtype: DType) -> Tensor {
    bdl_tensor::normal(&mut seed.rng(), shape, 0.0, 1.0, dtype, &Device::Cpu).unwrap()
}

/// Flattens any tensor to a `Vec<f64>`.
pub fn values(t: &Tensor) -> Vec<f64> {
    bdl_tensor::to_f64_vec(t).unwrap()
}

/// Asserts |a − b| ≤ atol + rtol·|b| elementwise.
#[track_caller]
pub fn assert_close(a: &Tensor, b: &Tensor, rtol: f64, atol: f64) {
    assert_eq!(a.dims(), b.dims(), "shapes differ");
    let (a, b) = (values(a), values(b));
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        assert!(
            (x - y).abs() <= atol + rtol * y.abs(),
            "element {i}: {x} vs {y} (|diff| = {:e})",
            (x - y).abs()
        );
    }
}

/// Any activation.
pub fn activation() -> impl Strategy<Value = Activation> {
    prop_oneof![
        Just(Activation::Identity),
        Just(Activation::Relu),
        Just(Activation::Tanh),
        Just(Activation::Sigmoid),
    ]
}

/// Random MLP architectures: 1 to 3 layers, inputs 1..6, hidden widths 1..8, outputs 1..10.
pub fn architecture() -> impl Strategy<Value = (Vec<usize>, Vec<Activation>)> {
    (
        1usize..6,
        proptest::collection::vec(1usize..8, 0..3),
        1usize..=10,
    )
        .prop_flat_map(|(d_in, hidden, k)| {
            let mut widths = vec![d_in];
            widths.extend(hidden);
            widths.push(k);
            let n_layers = widths.len() - 1;
            (
                Just(widths),
                proptest::collection::vec(activation(), n_layers),
            )
        })
}
