//! Shared helpers for the models' integration tests.
#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;

use bdl_models::{Activation, Cache, Model};
use bdl_tensor::Seed;
use candle_core::{DType, Device, Tensor, Var};
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

/// Σ_n J_nᵀ r_n by candle's autograd: the gradient of Σ_n r_n·f(x_n; θ).
pub fn autograd(model: &impl Model, theta: &Tensor, x: &Tensor, r: &Tensor) -> Tensor {
    let var = Var::from_tensor(theta).unwrap();
    let f = model.forward(var.as_tensor(), x).unwrap();
    let loss = (f * r).unwrap().sum_all().unwrap();
    loss.backward()
        .unwrap()
        .get(var.as_tensor())
        .unwrap()
        .clone()
}

/// The per-example products from the (a, δ) factors against candle's autograd (f64): per-example
/// gradients sum to the batch gradient and equal single-example backward passes, `backward` is the
/// batch gradient, and Σ g∘g is the explicit sum over the rows.
///
/// Tolerance: both sides compute the same sums in different orders, so they agree to a few hundred
/// ulps of the largest term; 1e-10 relative with 1e-12 absolute leaves a wide margin over that
/// while catching any wrong or missing term.
pub fn assert_per_example_products(model: &impl Model, theta: &Tensor, x: &Tensor, r: &Tensor) {
    const RTOL: f64 = 1e-10;
    const ATOL: f64 = 1e-12;
    let n = x.dims()[0];
    let cache = model.forward_cached(theta, x).unwrap();
    let per_example = model.per_example_grads(theta, &cache, r).unwrap();
    assert_eq!(per_example.dims(), &[n, model.layout().len()]);
    let expected = autograd(model, theta, x, r);
    assert_close(&per_example.sum(0).unwrap(), &expected, RTOL, ATOL);
    assert_close(
        &model.backward(theta, &cache, r).unwrap(),
        &expected,
        RTOL,
        ATOL,
    );
    for i in 0..n {
        let xi = x.narrow(0, i, 1).unwrap();
        let single = autograd(model, theta, &xi, &r.narrow(0, i, 1).unwrap());
        assert_close(&per_example.get(i).unwrap(), &single, RTOL, ATOL);
    }
    let explicit = per_example.sqr().unwrap().sum(0).unwrap();
    assert_close(
        &model.sum_sq_grads(theta, &cache, r).unwrap(),
        &explicit,
        RTOL,
        ATOL,
    );
}

/// The Jacobian of 12 random columns (random order, repeats allowed) against central differences.
///
/// Tolerance: central differences in f64 with h = 1e-6 have truncation error O(h²) ≈ 1e-12 and
/// rounding error O(ε/h) ≈ 1e-10 relative to |f|, so 1e-6 (relative to 1 + |J|) is far above the
/// error of a correct Jacobian and far below that of a wrong entry. A column whose step crosses
/// a kink (a ReLU's sign or a max pool's argmax changes between θ − h and θ + h: see
/// [`smooth_between`]) has no central difference to compare with and is skipped; at most a
/// quarter of the columns may be.
pub fn assert_jacobian_matches_central_differences(
    model: &impl Model,
    theta: &Tensor,
    x: &Tensor,
    seed: Seed,
) {
    let d = model.layout().len();
    let mut rng = seed.fork("subset").rng();
    let subset: Vec<usize> = (0..12)
        .map(|_| rand::Rng::random_range(&mut rng, 0..d))
        .collect();
    let checked = assert_columns_match_central_differences(model, theta, x, &subset);
    assert!(
        checked * 4 >= 3 * subset.len(),
        "only {checked} smooth columns"
    );
}

/// The Jacobian columns `subset` against central differences (h = 1e-6, tolerance as in
/// [`assert_jacobian_matches_central_differences`]), skipping those whose step crosses a kink;
/// returns how many were compared.
pub fn assert_columns_match_central_differences(
    model: &impl Model,
    theta: &Tensor,
    x: &Tensor,
    subset: &[usize],
) -> usize {
    let d = model.layout().len();
    let (n, k) = (x.dims()[0], model.n_outputs());
    let cache = model.forward_cached(theta, x).unwrap();
    let jac = model.jacobian(theta, &cache, subset).unwrap();
    assert_eq!(jac.dims(), &[n * k, subset.len()]);
    let h = 1e-6;
    let theta_v = values(theta);
    let mut checked = 0;
    for (c, &p) in subset.iter().enumerate() {
        let shifted = |delta: f64| {
            let mut t = theta_v.clone();
            t[p] += delta;
            let t = Tensor::from_vec(t, d, &Device::Cpu).unwrap();
            model.forward_cached(&t, x).unwrap()
        };
        let (plus, minus) = (shifted(h), shifted(-h));
        if !smooth_between(&plus, &minus) {
            continue;
        }
        let (plus, minus) = (values(&plus.output), values(&minus.output));
        let column = values(&jac.narrow(1, c, 1).unwrap());
        for row in 0..n * k {
            let fd = (plus[row] - minus[row]) / (2.0 * h);
            assert!(
                (column[row] - fd).abs() <= 1e-6 * (1.0 + fd.abs()),
                "column {c} (param {p}), row {row}: {} vs {fd}",
                column[row]
            );
        }
        checked += 1;
    }
    checked
}

/// Whether two forward passes lie on one smooth piece of the network: every activation output
/// has the same sign (a ReLU's kink is at 0) and every max pool took the same argmax.
pub fn smooth_between(a: &Cache, b: &Cache) -> bool {
    let signs = |c: &Cache| -> Vec<bool> {
        c.post
            .iter()
            .flat_map(|t| values(t).into_iter().map(|v| v > 0.0))
            .collect()
    };
    let argmax = |c: &Cache| -> Vec<f64> { c.indices.iter().flat_map(values).collect() };
    signs(a) == signs(b) && argmax(a) == argmax(b)
}

/// The two routes to Jacobian columns agree, and the weighted squared Jacobian is what it
/// says. A whole layer in layout order goes through one batched product per layer, any other
/// order through a gather per column: the full Jacobian against the one of every column in
/// reverse order (same numbers summed in another order: 1e-12 of the entry scale). Then
/// `weighted_jacobian_sq` against Σ_d w_d J_{nk,d}² from that Jacobian, for random positive
/// w (1e-12 relative).
pub fn assert_jacobian_routes_agree(model: &impl Model, theta: &Tensor, x: &Tensor, seed: Seed) {
    let d = model.layout().len();
    let (n, k) = (x.dims()[0], model.n_outputs());
    let cache = model.forward_cached(theta, x).unwrap();
    let all: Vec<usize> = (0..d).collect();
    let reversed: Vec<usize> = (0..d).rev().collect();
    let jac = values(&model.jacobian(theta, &cache, &all).unwrap());
    let jac_rev = values(&model.jacobian(theta, &cache, &reversed).unwrap());
    let scale = jac.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    for row in 0..n * k {
        for c in 0..d {
            let (a, b) = (jac[row * d + c], jac_rev[row * d + (d - 1 - c)]);
            assert!(
                (a - b).abs() <= 1e-12 * scale,
                "row {row}, column {c}: {a} vs {b}"
            );
        }
    }
    let w: Vec<f64> = {
        let mut rng = seed.fork("w").rng();
        (0..d)
            .map(|_| rand::Rng::random_range(&mut rng, 0.5..1.5))
            .collect()
    };
    let w_t = Tensor::from_vec(w.clone(), d, &Device::Cpu).unwrap();
    let got = model.weighted_jacobian_sq(theta, &cache, &w_t).unwrap();
    assert_eq!(got.dims(), &[n, k]);
    let got = values(&got);
    for row in 0..n * k {
        let expected: f64 = (0..d).map(|c| w[c] * jac[row * d + c].powi(2)).sum();
        assert!(
            (got[row] - expected).abs() <= 1e-12 * expected.abs().max(1e-300),
            "row {row}: {} vs {expected}",
            got[row]
        );
    }
}

/// Dropout through `forward_cached_with`: the same stream gives the same masks and another stream
/// other masks, no stream means no dropout, and the backward pass through the masks equals
/// autograd through the same masked forward (tolerance as in [`assert_per_example_products`]).
/// Returns the cache of a masked pass, for the model-specific checks of where the masks are.
pub fn assert_dropout_is_seeded_and_backpropagated(
    model: &impl Model,
    theta: &Tensor,
    x: &Tensor,
    r: &Tensor,
) -> Cache {
    let run = |s: Seed| {
        model
            .forward_cached_with(theta, x, Some(&mut s.rng()))
            .unwrap()
    };
    let (a, b, c) = (run(Seed(1)), run(Seed(1)), run(Seed(2)));
    assert_eq!(values(&a.output), values(&b.output));
    assert_ne!(values(&a.output), values(&c.output));
    let plain = model.forward_cached(theta, x).unwrap();
    assert!(
        plain.masks.iter().all(Option::is_none),
        "no stream, no dropout"
    );

    let var = Var::from_tensor(theta).unwrap();
    let cache = model
        .forward_cached_with(var.as_tensor(), x, Some(&mut Seed(1).rng()))
        .unwrap();
    let loss = (&cache.output * r).unwrap().sum_all().unwrap();
    let expected = loss
        .backward()
        .unwrap()
        .get(var.as_tensor())
        .unwrap()
        .clone();
    assert_close(
        &model.backward(theta, &cache, r).unwrap(),
        &expected,
        1e-10,
        1e-12,
    );
    a
}
