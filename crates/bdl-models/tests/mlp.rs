//! The MLP's per-example products against candle's autograd, single-example backward passes,
//! explicit sums and central finite differences.

mod common;

use bdl_models::{Activation, Mlp, MlpSpec, Model};
use bdl_tensor::Seed;
use candle_core::{DType, Device, Tensor};
use common::{
    architecture, assert_close, assert_dropout_is_seeded_and_backpropagated,
    assert_jacobian_matches_central_differences, assert_jacobian_routes_agree,
    assert_per_example_products, randn, values,
};
use proptest::prelude::*;

fn mlp(widths: Vec<usize>, activations: Vec<Activation>, bias: bool) -> Mlp {
    Mlp::new(MlpSpec {
        widths,
        activations,
        dropout: 0.0,
        bias,
    })
    .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn per_example_grads_sum_to_the_autograd_gradient(
        (widths, activations) in architecture(), n in 1usize..9, seed in any::<u64>(), bias in any::<bool>(),
    ) {
        let seed = Seed(seed);
        let model = mlp(widths.clone(), activations, bias);
        let theta = model.init(seed, DType::F64, &Device::Cpu).unwrap();
        let x = randn(seed.fork("x"), &[n, widths[0]], DType::F64);
        let r = randn(seed.fork("r"), &[n, model.n_outputs()], DType::F64);
        assert_per_example_products(&model, &theta, &x, &r);
    }

    #[test]
    fn jacobian_matches_central_differences(
        (widths, activations) in architecture(), n in 1usize..5, seed in any::<u64>(), bias in any::<bool>(),
    ) {
        let seed = Seed(seed);
        let model = mlp(widths.clone(), activations, bias);
        let theta = model.init(seed, DType::F64, &Device::Cpu).unwrap();
        let x = randn(seed.fork("x"), &[n, widths[0]], DType::F64);
        assert_jacobian_matches_central_differences(&model, &theta, &x, seed);
    }

    #[test]
    fn jacobian_routes_agree(
        (widths, activations) in architecture(), n in 1usize..5, seed in any::<u64>(), bias in any::<bool>(),
    ) {
        let seed = Seed(seed);
        let model = mlp(widths.clone(), activations, bias);
        let theta = model.init(seed, DType::F64, &Device::Cpu).unwrap();
        let x = randn(seed.fork("x"), &[n, widths[0]], DType::F64);
        assert_jacobian_routes_agree(&model, &theta, &x, seed);
    }

    /// ∂(Σ_n r_n·f(x_n))/∂x against central differences in every input coordinate (step 1e-5;
    /// the error of a smooth f64 network is O(h²) ≈ 1e-10, ReLU kinks are avoided by the
    /// smooth activations of the strategy or land with probability zero).
    #[test]
    fn input_gradient_matches_central_differences(
        (widths, activations) in architecture(), n in 1usize..4, seed in any::<u64>(), bias in any::<bool>(),
    ) {
        let seed = Seed(seed);
        let model = mlp(widths.clone(), activations, bias);
        let theta = model.init(seed, DType::F64, &Device::Cpu).unwrap();
        let x = randn(seed.fork("x"), &[n, widths[0]], DType::F64);
        let r = randn(seed.fork("r"), &[n, model.n_outputs()], DType::F64);
        let cache = model.forward_cached(&theta, &x).unwrap();
        let got = values(&model.input_gradient(&theta, &cache, &r).unwrap());
        let objective = |x: &[f64]| -> f64 {
            let x = Tensor::from_slice(x, (n, widths[0]), &Device::Cpu).unwrap();
            let f = values(&model.forward(&theta, &x).unwrap());
            f.iter().zip(values(&r)).map(|(f, r)| f * r).sum()
        };
        let x0 = values(&x);
        let h = 1e-5;
        for (i, &g) in got.iter().enumerate() {
            let (mut up, mut down) = (x0.clone(), x0.clone());
            up[i] += h;
            down[i] -= h;
            let fd = (objective(&up) - objective(&down)) / (2.0 * h);
            prop_assert!((g - fd).abs() <= 1e-6 * (1.0 + fd.abs()), "coordinate {}: {} vs {}", i, g, fd);
        }
    }
}

#[test]
fn jacobian_of_all_columns_is_the_stack_of_per_output_gradients() {
    // Row n·K + k of the full Jacobian is the per-example gradient with r = e_k.
    let seed = Seed(5);
    let model = mlp(
        vec![3, 4, 3],
        vec![Activation::Tanh, Activation::Identity],
        true,
    );
    let theta = model.init(seed, DType::F64, &Device::Cpu).unwrap();
    let x = randn(seed.fork("x"), &[2, 3], DType::F64);
    let cache = model.forward_cached(&theta, &x).unwrap();
    let all: Vec<usize> = (0..model.layout().len()).collect();
    let jac = model.jacobian(&theta, &cache, &all).unwrap();
    for k in 0..3 {
        let mut e = vec![0.0; 6];
        e[k] = 1.0;
        e[3 + k] = 1.0;
        let r = Tensor::from_vec(e, (2, 3), &Device::Cpu).unwrap();
        let g = model.per_example_grads(&theta, &cache, &r).unwrap();
        for n in 0..2 {
            assert_close(&jac.get(n * 3 + k).unwrap(), &g.get(n).unwrap(), 0.0, 0.0);
        }
    }
}

#[test]
fn f32_products_track_f64() {
    // The same network in f32 and f64: f32 rounding (ε ≈ 6e-8) over sums of at most a few
    // hundred terms stays below 1e-4 relative to the largest entry.
    let seed = Seed(9);
    let model = mlp(
        vec![13, 50, 1],
        vec![Activation::Relu, Activation::Identity],
        true,
    );
    let theta = model.init(seed, DType::F64, &Device::Cpu).unwrap();
    let x = randn(seed.fork("x"), &[32, 13], DType::F64);
    let r = randn(seed.fork("r"), &[32, 1], DType::F64);
    let run = |dtype| {
        let (t, x, r) = (
            theta.to_dtype(dtype).unwrap(),
            x.to_dtype(dtype).unwrap(),
            r.to_dtype(dtype).unwrap(),
        );
        let cache = model.forward_cached(&t, &x).unwrap();
        model.sum_sq_grads(&t, &cache, &r).unwrap()
    };
    let (a, b) = (run(DType::F32), run(DType::F64));
    let scale = values(&b).iter().fold(0.0f64, |m, v| m.max(v.abs()));
    assert_close(&a, &b, 1e-4, 1e-4 * scale);
}

#[test]
fn dropout_masks_are_seeded_and_backpropagated() {
    let seed = Seed(3);
    let model =
        Mlp::new(MlpSpec::new(&[4, 16, 16, 2], Activation::Relu).with_dropout(0.5)).unwrap();
    let theta = model.init(seed, DType::F64, &Device::Cpu).unwrap();
    let x = randn(seed.fork("x"), &[6, 4], DType::F64);
    let r = randn(seed.fork("r"), &[6, 2], DType::F64);
    let cache = assert_dropout_is_seeded_and_backpropagated(&model, &theta, &x, &r);
    assert!(
        cache.masks[0].is_some() && cache.masks[2].is_none(),
        "no dropout on the output layer"
    );
}

#[test]
fn init_is_seeded_and_fan_in_scaled() {
    let model = Mlp::new(MlpSpec::new(&[100, 4, 1], Activation::Tanh)).unwrap();
    let a = model.init(Seed(1), DType::F32, &Device::Cpu).unwrap();
    let b = model.init(Seed(1), DType::F32, &Device::Cpu).unwrap();
    assert_eq!(values(&a), values(&b));
    let first_layer = &values(&a)[..400];
    assert!(first_layer.iter().all(|w| w.abs() <= 0.1), "|w| ≤ 1/√100");
}
