//! The CNN against direct loops over PyTorch's definitions, candle's autograd, single-example
//! backward passes, explicit sums and central finite differences; LeNet-5; bad input.

mod common;

use bdl_models::{Activation, Cnn, CnnSpec, ConvSpec, Error, Model};
use bdl_tensor::Seed;
use candle_core::{DType, Device, Tensor};
use common::{
    activation, assert_close, assert_dropout_is_seeded_and_backpropagated,
    assert_jacobian_matches_central_differences, assert_jacobian_routes_agree,
    assert_per_example_products, randn, values,
};
use proptest::prelude::*;

/// Random small CNNs: 1–2 input channels of 6×6 to 10×10 (not always square), one or two 3×3
/// convolutions to 2–3 channels (padding 0 or 1, pooled or not), an optional hidden dense layer,
/// 1–4 outputs. Specs whose kernel or pooling does not fit the maps are skipped.
fn small_cnn() -> impl Strategy<Value = Cnn> {
    let conv =
        (2usize..=3, 0usize..=1, any::<bool>()).prop_map(|(channels, padding, pool)| ConvSpec {
            channels,
            kernel: 3,
            padding,
            pool,
        });
    (
        (1usize..=2, 6usize..=10, 6usize..=10),
        proptest::collection::vec(conv, 1..=2),
        proptest::collection::vec(2usize..6, 0..=1),
        1usize..=4,
        activation(),
    )
        .prop_filter_map(
            "kernel or pooling larger than its maps",
            |(input, convs, mut dense, k, act)| {
                dense.push(k);
                Cnn::new(CnnSpec {
                    input: [input.0, input.1, input.2],
                    convs,
                    dense,
                    activation: act,
                    dropout: 0.0,
                })
                .ok()
            },
        )
}

/// A random batch of `n` inputs `[n, C, H, W]`.
fn images(model: &Cnn, n: usize, seed: Seed) -> Tensor {
    let [c, h, w] = model.spec().input;
    randn(seed, &[n, c, h, w], DType::F64)
}

/// f(x) of one example by direct loops over PyTorch's definitions: `Conv2d` (a cross-correlation
/// with zero padding), the activation, `AvgPool2d(2)` (an odd edge dropped), `Flatten` in
/// (c, y, x) order, `Linear`; weights read from the flat θ through the layout's segments.
fn direct_forward(model: &Cnn, theta: &[f64], x: &[f64]) -> Vec<f64> {
    let spec = model.spec();
    let segments = model.layout().segments();
    let param = |s: usize| &theta[segments[s].range()];
    let act = |z: f64| match spec.activation {
        Activation::Identity => z,
        Activation::Relu => z.max(0.0),
        Activation::Tanh => z.tanh(),
        Activation::Sigmoid => 1.0 / (1.0 + (-z).exp()),
    };
    let [mut channels, mut height, mut width] = spec.input;
    let mut u = x.to_vec();
    for (l, conv) in spec.convs.iter().enumerate() {
        let (w, b) = (param(2 * l), param(2 * l + 1));
        let (k, p) = (conv.kernel, conv.padding);
        let (out_h, out_w) = (height + 2 * p - k + 1, width + 2 * p - k + 1);
        let mut v = vec![0.0; conv.channels * out_h * out_w];
        for o in 0..conv.channels {
            for y in 0..out_h {
                for x in 0..out_w {
                    let mut z = b[o];
                    for c in 0..channels {
                        for ky in 0..k {
                            for kx in 0..k {
                                // Wraps to a huge index (outside the map) in the top/left padding.
                                let (iy, ix) = ((y + ky).wrapping_sub(p), (x + kx).wrapping_sub(p));
                                if iy < height && ix < width {
                                    z += w[((o * channels + c) * k + ky) * k + kx]
                                        * u[(c * height + iy) * width + ix];
                                }
                            }
                        }
                    }
                    v[(o * out_h + y) * out_w + x] = act(z);
                }
            }
        }
        (channels, height, width, u) = (conv.channels, out_h, out_w, v);
        if conv.pool {
            let (ph, pw) = (height / 2, width / 2);
            u = (0..channels * ph * pw)
                .map(|i| {
                    let (c, y, x) = (i / (ph * pw), i / pw % ph, i % pw);
                    let window = [(0, 0), (0, 1), (1, 0), (1, 1)];
                    window
                        .iter()
                        .map(|(dy, dx)| u[(c * height + 2 * y + dy) * width + 2 * x + dx])
                        .sum::<f64>()
                        / 4.0
                })
                .collect();
            (height, width) = (ph, pw);
        }
    }
    for (i, &out) in spec.dense.iter().enumerate() {
        let l = spec.convs.len() + i;
        let (w, b) = (param(2 * l), param(2 * l + 1));
        let hidden = i + 1 < spec.dense.len();
        u = (0..out)
            .map(|o| {
                let z = b[o]
                    + w[o * u.len()..(o + 1) * u.len()]
                        .iter()
                        .zip(&u)
                        .map(|(w, a)| w * a)
                        .sum::<f64>();
                if hidden { act(z) } else { z }
            })
            .collect();
    }
    u
}

// Tolerances (f64): the two sides compute the same sums in different orders (im2col and matmul
// against direct loops, or against autograd's own graph), so they agree to a few hundred ulps of
// the largest term; 1e-10 relative with 1e-12 absolute leaves a wide margin over that while
// catching any wrong or missing term.
const RTOL: f64 = 1e-10;
const ATOL: f64 = 1e-12;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn forward_matches_direct_loops(model in small_cnn(), n in 1usize..4, seed in any::<u64>()) {
        let seed = Seed(seed);
        let theta = model.init(seed, DType::F64, &Device::Cpu).unwrap();
        let x = images(&model, n, seed.fork("x"));
        let f = model.forward(&theta, &x).unwrap();
        let k = model.n_outputs();
        prop_assert_eq!(f.dims(), &[n, k]);
        let (theta, x) = (values(&theta), values(&x));
        let per_example = x.len() / n;
        let expected: Vec<f64> = (0..n)
            .flat_map(|i| direct_forward(&model, &theta, &x[i * per_example..(i + 1) * per_example]))
            .collect();
        assert_close(&f, &Tensor::from_vec(expected, (n, k), &Device::Cpu).unwrap(), RTOL, ATOL);
    }

    #[test]
    fn per_example_grads_sum_to_the_autograd_gradient(
        model in small_cnn(), n in 1usize..5, seed in any::<u64>(),
    ) {
        let seed = Seed(seed);
        let theta = model.init(seed, DType::F64, &Device::Cpu).unwrap();
        let x = images(&model, n, seed.fork("x"));
        let r = randn(seed.fork("r"), &[n, model.n_outputs()], DType::F64);
        assert_per_example_products(&model, &theta, &x, &r);
    }

    #[test]
    fn jacobian_matches_central_differences(model in small_cnn(), n in 1usize..4, seed in any::<u64>()) {
        let seed = Seed(seed);
        let theta = model.init(seed, DType::F64, &Device::Cpu).unwrap();
        let x = images(&model, n, seed.fork("x"));
        assert_jacobian_matches_central_differences(&model, &theta, &x, seed);
    }

    #[test]
    fn jacobian_routes_agree(model in small_cnn(), n in 1usize..4, seed in any::<u64>()) {
        let seed = Seed(seed);
        let theta = model.init(seed, DType::F64, &Device::Cpu).unwrap();
        let x = images(&model, n, seed.fork("x"));
        assert_jacobian_routes_agree(&model, &theta, &x, seed);
    }
}

#[test]
fn lenet5_on_a_batch_of_28x28_images() {
    let model = Cnn::lenet5(10).unwrap();
    let layout = model.layout();
    // 6·25 + 6, 16·6·25 + 16, 120·400 + 120, 84·120 + 84, 10·84 + 10.
    assert_eq!(layout.len(), 156 + 2_416 + 48_120 + 10_164 + 850);
    assert_eq!(layout.len(), 61_706);
    // A pass over many images takes at most 2²² / (784 positions · 25 patch numbers) of them.
    assert_eq!(model.rows_per_pass(), 213);
    let segments: Vec<(&str, &[usize])> = layout
        .segments()
        .iter()
        .map(|s| (s.name.as_str(), s.shape.as_slice()))
        .collect();
    assert_eq!(
        segments,
        [
            ("0.weight", &[6, 1, 5, 5][..]),
            ("0.bias", &[6]),
            ("3.weight", &[16, 6, 5, 5]),
            ("3.bias", &[16]),
            ("7.weight", &[120, 400]),
            ("7.bias", &[120]),
            ("9.weight", &[84, 120]),
            ("9.bias", &[84]),
            ("11.weight", &[10, 84]),
            ("11.bias", &[10]),
        ]
    );

    let seed = Seed(4);
    let n = 8;
    let theta = model.init(seed, DType::F64, &Device::Cpu).unwrap();
    let x = randn(seed.fork("x"), &[n, 1, 28, 28], DType::F64);
    let r = randn(seed.fork("r"), &[n, 10], DType::F64);
    let cache = model.forward_cached(&theta, &x).unwrap();
    assert_eq!(cache.output.dims(), &[n, 10]);
    let input_dims: Vec<&[usize]> = cache.inputs.iter().map(Tensor::dims).collect();
    assert_eq!(
        input_dims,
        [
            &[n * 28 * 28, 25][..],
            &[n * 10 * 10, 150],
            &[n, 400],
            &[n, 120],
            &[n, 84]
        ]
    );
    // MNIST rows of 784 give the same network output.
    let rows = model
        .forward(&theta, &x.reshape((n, 784)).unwrap())
        .unwrap();
    assert_eq!(values(&rows), values(&cache.output));

    let grad = model.backward(&theta, &cache, &r).unwrap();
    let sum_sq = model.sum_sq_grads(&theta, &cache, &r).unwrap();
    assert_eq!((grad.dims(), sum_sq.dims()), (&[61_706][..], &[61_706][..]));
    assert!(values(&sum_sq).iter().all(|v| v.is_finite() && *v >= 0.0));
    // A column from each layer's weights and biases.
    let subset: Vec<usize> = layout
        .segments()
        .iter()
        .map(|s| s.offset + s.numel() / 2)
        .collect();
    assert_eq!(
        model.jacobian(&theta, &cache, &subset).unwrap().dims(),
        &[n * 10, 10]
    );

    // The same products in f32 track f64: f32 rounding (ε ≈ 6e-8) over the longest sums (a
    // first-layer weight gradient sums 8·784 patch rows) stays below 1e-3 of the largest entry
    // even in the worst case n·ε ≈ 4e-4.
    let single = |t: &Tensor| t.to_dtype(DType::F32).unwrap();
    let cache32 = model.forward_cached(&single(&theta), &single(&x)).unwrap();
    for (a, b) in [
        (
            model
                .backward(&single(&theta), &cache32, &single(&r))
                .unwrap(),
            grad,
        ),
        (
            model
                .sum_sq_grads(&single(&theta), &cache32, &single(&r))
                .unwrap(),
            sum_sq,
        ),
    ] {
        assert_eq!(a.dtype(), DType::F32);
        let scale = values(&b).iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert_close(&a, &b, 1e-3, 1e-3 * scale);
    }
}

#[test]
fn init_is_seeded_and_fan_in_scaled() {
    let model = Cnn::lenet5(10).unwrap();
    let init = |s| values(&model.init(Seed(s), DType::F32, &Device::Cpu).unwrap());
    let (a, b, c) = (init(1), init(1), init(2));
    assert_eq!(a, b);
    assert_ne!(a, c);
    // U(−1/√J, 1/√J) with J the fan-in of the segment's layer: 25, 150, 400, 120, 84.
    let segments = model.layout().segments();
    for (i, s) in segments.iter().enumerate() {
        let weight = &segments[i - i % 2];
        let bound = ((weight.numel() / weight.shape[0]) as f64).sqrt().recip();
        let largest = a[s.range()].iter().fold(0.0f64, |m, v| m.max(v.abs()));
        assert!(largest <= bound, "{}: {largest} > {bound}", s.name);
        if s.is_weight() {
            // At least 150 uniform draws: all below 0.9·bound with probability 0.9^150 ≈ 1e-7.
            assert!(largest > 0.9 * bound, "{}: {largest} ≪ {bound}", s.name);
        }
    }
}

/// A fixed small CNN with a hidden dense layer: [2, 7, 6] → conv 3 (pad 1, pooled) → conv 2
/// (kernel 2) → dense 8 → 3.
fn fixed_cnn(dropout: f64) -> Cnn {
    Cnn::new(CnnSpec {
        input: [2, 7, 6],
        convs: vec![
            ConvSpec::new(3, 3).with_padding(1).pooled(),
            ConvSpec::new(2, 2),
        ],
        dense: vec![8, 3],
        activation: Activation::Tanh,
        dropout,
    })
    .unwrap()
}

#[test]
fn dropout_masks_only_the_hidden_dense_units_and_is_backpropagated() {
    let seed = Seed(3);
    let model = fixed_cnn(0.5);
    let theta = model.init(seed, DType::F64, &Device::Cpu).unwrap();
    let x = images(&model, 5, seed.fork("x"));
    let r = randn(seed.fork("r"), &[5, 3], DType::F64);
    let cache = assert_dropout_is_seeded_and_backpropagated(&model, &theta, &x, &r);
    let masked: Vec<bool> = cache.masks.iter().map(Option::is_some).collect();
    assert_eq!(
        masked,
        [false, false, true, false],
        "only the hidden dense layer"
    );
}

#[test]
fn save_and_load_round_trip() {
    let dir = std::env::temp_dir().join(format!("bdl-models-cnn-{}", std::process::id()));
    let path = dir.join("cnn.safetensors");
    let model = fixed_cnn(0.25);
    let theta = model.init(Seed(8), DType::F32, &Device::Cpu).unwrap();
    model.save(&path, &theta).unwrap();
    let (back, params) = Cnn::load(&path, &Device::Cpu).unwrap();
    assert_eq!(back.spec(), model.spec());
    assert_eq!(back.layout(), model.layout());
    assert_eq!(values(&params), values(&theta));

    // The checkpoint of another architecture names the mismatching tensor.
    let other = Cnn::new(CnnSpec {
        dense: vec![8, 4],
        ..model.spec().clone()
    })
    .unwrap();
    let err = other.load_params(&path, &Device::Cpu).unwrap_err();
    assert!(
        matches!(err, Error::Tensor(bdl_tensor::Error::ShapeMismatch { .. })),
        "{err}"
    );
    assert!(err.to_string().contains("8.weight"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_input_is_a_typed_error() {
    let model = fixed_cnn(0.0);
    let theta = model.init(Seed(0), DType::F32, &Device::Cpu).unwrap();
    let shape_error = |r: bdl_models::Result<Tensor>| {
        let err = r.unwrap_err();
        assert!(
            matches!(err, Error::Tensor(bdl_tensor::Error::ShapeMismatch { .. })),
            "{err}"
        );
        err.to_string()
    };
    for dims in [
        &[2, 2, 7, 7][..],
        &[2, 1, 7, 6],
        &[2, 83],
        &[84],
        &[2, 2, 42],
    ] {
        let x = Tensor::zeros(dims, DType::F32, &Device::Cpu).unwrap();
        let msg = shape_error(model.forward(&theta, &x));
        assert!(msg.contains("CNN input x"), "{msg}");
    }
    let x = Tensor::zeros((2, 2, 7, 6), DType::F32, &Device::Cpu).unwrap();
    shape_error(model.forward(&theta.narrow(0, 1, theta.dims()[0] - 1).unwrap(), &x));

    let mut v = vec![0f32; 2 * 84];
    v[90] = f32::NAN;
    let nan = Tensor::from_vec(v, (2, 2, 7, 6), &Device::Cpu).unwrap();
    let err = model.forward(&theta, &nan).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Tensor(bdl_tensor::Error::NonFinite { index: 90, .. })
        ),
        "{err}"
    );

    let cache = model.forward_cached(&theta, &x).unwrap();
    let wrong = Tensor::zeros((2, 4), DType::F32, &Device::Cpu).unwrap();
    let msg = shape_error(model.backward(&theta, &cache, &wrong));
    assert!(msg.contains("output gradient"), "{msg}");
    shape_error(model.sum_sq_grads(&theta, &cache, &wrong));
    shape_error(model.per_example_grads(&theta, &cache, &wrong));
    let d = model.layout().len();
    assert!(
        matches!(model.jacobian(&theta, &cache, &[0, d]), Err(Error::ParamIndex { index, .. }) if index == d)
    );
}

#[test]
fn invalid_specs_are_config_errors() {
    let valid = fixed_cnn(0.0).spec().clone();
    let conv = |c: ConvSpec| CnnSpec {
        convs: vec![c],
        ..valid.clone()
    };
    let specs = [
        CnnSpec {
            input: [2, 0, 6],
            ..valid.clone()
        },
        conv(ConvSpec::new(3, 7)),          // a 7×7 kernel on 7×6 maps
        conv(ConvSpec::new(3, 0)),          // empty kernel
        conv(ConvSpec::new(0, 3)),          // no channels
        conv(ConvSpec::new(3, 6).pooled()), // pooling a 2×1 map
        CnnSpec {
            convs: vec![],
            ..valid.clone()
        },
        CnnSpec {
            dense: vec![],
            ..valid.clone()
        },
        CnnSpec {
            dense: vec![8, 0],
            ..valid.clone()
        },
        valid.clone().with_dropout(1.0),
    ];
    for spec in specs {
        let err = Cnn::new(spec.clone()).unwrap_err();
        assert!(matches!(err, Error::InvalidConfig(_)), "{spec:?}: {err}");
    }
    let err = Cnn::new(conv(ConvSpec::new(3, 7))).unwrap_err();
    assert!(err.to_string().contains("convolution 0"), "{err}");
    assert_eq!(Cnn::new(conv(ConvSpec::new(3, 6))).unwrap().n_layers(), 3);
}
