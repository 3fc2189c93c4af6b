//! The ResNet's per-example products against candle's autograd, single-example backward
//! passes, explicit sums and central finite differences, on small residual networks with
//! non-trivial batch statistics; its `state_dict` round trip and bad input. Its forward pass
//! against PyTorch is `resnet_torch.rs`.

mod common;

use bdl_models::{BatchStatistics, Error, Model, ResNet, ResNetSpec, Stem};
use bdl_tensor::Seed;
use candle_core::{DType, Device, Tensor};
use common::{
    assert_close, assert_columns_match_central_differences,
    assert_dropout_is_seeded_and_backpropagated, assert_jacobian_matches_central_differences,
    assert_jacobian_routes_agree, assert_per_example_products, randn, values,
};
use proptest::prelude::*;
use rand::Rng;

/// Statistics for every normalisation of `spec`'s network: means in ±0.5, variances in
/// [0.5, 2], so that normalising is not the identity.
fn random_statistics(spec: &ResNetSpec, seed: Seed) -> Vec<BatchStatistics> {
    let plain = ResNet::new(spec.clone()).unwrap();
    let mut rng = seed.fork("statistics").rng();
    plain
        .spec()
        .statistics
        .unwrap()
        .iter()
        .map(|s| BatchStatistics {
            mean: (0..s.channels())
                .map(|_| rng.random_range(-0.5..0.5))
                .collect(),
            var: (0..s.channels())
                .map(|_| rng.random_range(0.5..2.0))
                .collect(),
        })
        .collect()
}

/// The network of `spec` with [`random_statistics`] from `seed`.
fn with_random_statistics(spec: ResNetSpec, seed: Seed) -> ResNet {
    let statistics = random_statistics(&spec, seed);
    ResNet::new(ResNetSpec {
        statistics: Some(statistics),
        ..spec
    })
    .unwrap()
}

/// Random small ResNets on 1–2 channels of 5×5 to 8×8: either stem (the ImageNet one's 7 × 7
/// convolution at stride 2 and max pooling), one or two stages of widths 2–4 with one or two
/// blocks each (a shortcut convolution wherever the width changes or the stride is 2), 1–4
/// classes, random statistics.
fn small_resnet() -> impl Strategy<Value = ResNet> {
    (
        (1usize..=2, 5usize..=8, 5usize..=8),
        proptest::collection::vec((2usize..=4, 1usize..=2), 1..=2),
        1usize..=4,
        prop_oneof![Just(Stem::Cifar), Just(Stem::Imagenet)],
        any::<u64>(),
    )
        .prop_map(|((c, h, w), stages, classes, stem, seed)| {
            let spec = ResNetSpec {
                input: [c, h, w],
                widths: stages.iter().map(|s| s.0).collect(),
                blocks: stages.iter().map(|s| s.1).collect(),
                classes,
                stem,
                statistics: None,
                dropout: 0.0,
            };
            with_random_statistics(spec, Seed(seed))
        })
}

/// θ of `model` with γ ≠ 1 and β ≠ 0: the initialisation plus N(0, 0.1²) noise.
fn parameters(model: &ResNet, seed: Seed) -> Tensor {
    let init = model.init(seed, DType::F64, &Device::Cpu).unwrap();
    let noise = randn(seed.fork("noise"), &[model.layout().len()], DType::F64);
    (init + (noise * 0.1).unwrap()).unwrap()
}

fn images(model: &ResNet, n: usize, seed: Seed) -> Tensor {
    let [c, h, w] = model.spec().input;
    randn(seed, &[n, c, h, w], DType::F64)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn per_example_grads_sum_to_the_autograd_gradient(
        model in small_resnet(), n in 1usize..4, seed in any::<u64>(),
    ) {
        let seed = Seed(seed);
        let theta = parameters(&model, seed);
        let x = images(&model, n, seed.fork("x"));
        let r = randn(seed.fork("r"), &[n, model.n_outputs()], DType::F64);
        assert_per_example_products(&model, &theta, &x, &r);
    }

    #[test]
    fn jacobian_matches_central_differences(
        model in small_resnet(), n in 1usize..3, seed in any::<u64>(),
    ) {
        let seed = Seed(seed);
        let theta = parameters(&model, seed);
        let x = images(&model, n, seed.fork("x"));
        assert_jacobian_matches_central_differences(&model, &theta, &x, seed);
    }

    #[test]
    fn jacobian_routes_agree(model in small_resnet(), n in 1usize..3, seed in any::<u64>()) {
        let seed = Seed(seed);
        let theta = parameters(&model, seed);
        let x = images(&model, n, seed.fork("x"));
        assert_jacobian_routes_agree(&model, &theta, &x, seed);
    }
}

/// Central differences on every parameter of one fixed network with either stem, so that each
/// kind of column (stem, block and shortcut convolutions, every γ and β, the classifier) is
/// checked, not only a random dozen.
#[test]
fn every_column_of_the_jacobian_matches_central_differences() {
    for stem in [Stem::Cifar, Stem::Imagenet] {
        every_column_matches(stem);
    }
}

fn every_column_matches(stem: Stem) {
    let spec = ResNetSpec {
        input: [2, 6, 5],
        widths: vec![2, 3],
        blocks: vec![1, 1],
        classes: 2,
        stem,
        statistics: None,
        dropout: 0.0,
    };
    let model = with_random_statistics(spec, Seed(3));
    let theta = parameters(&model, Seed(4));
    let x = images(&model, 2, Seed(5));
    let all: Vec<usize> = (0..model.layout().len()).collect();
    let checked = assert_columns_match_central_differences(&model, &theta, &x, &all);
    // A step across a kink is skipped; on these inputs nearly every column is smooth.
    assert!(
        checked * 10 >= 9 * all.len(),
        "{checked} of {} columns smooth",
        all.len()
    );
}

#[test]
fn dropout_masks_only_the_pooled_features_and_is_backpropagated() {
    let spec = ResNetSpec {
        input: [2, 6, 5],
        widths: vec![3, 4],
        blocks: vec![1, 1],
        classes: 3,
        ..ResNetSpec::resnet18(3)
    }
    .with_dropout(0.5);
    let model = with_random_statistics(spec, Seed(6));
    let theta = parameters(&model, Seed(7));
    let x = images(&model, 5, Seed(8));
    let r = randn(Seed(9), &[5, 3], DType::F64);
    let cache = assert_dropout_is_seeded_and_backpropagated(&model, &theta, &x, &r);
    let masked: Vec<usize> = (cache.masks.iter().enumerate())
        .filter_map(|(l, m)| m.as_ref().map(|_| l))
        .collect();
    assert_eq!(
        masked,
        [cache.masks.len() - 1],
        "only the classifier's input"
    );
    // Dropped features: some but not all of the classifier's inputs are zero.
    let pooled = values(&cache.inputs[cache.masks.len() - 1]);
    let zeros = pooled.iter().filter(|&&v| v == 0.0).count();
    assert!(
        0 < zeros && zeros < pooled.len(),
        "{zeros} of {}",
        pooled.len()
    );
}

#[test]
fn resnet18_has_torchvisions_names_and_parameter_count() {
    let net = ResNet::resnet18(10).unwrap();
    // torchvision's resnet18(num_classes=10) with the CIFAR stem (conv1 3×3 to 64): 11,173,962.
    assert_eq!(net.layout().len(), 11_173_962);
    let names: Vec<&str> = net
        .layout()
        .segments()
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(
        &names[..6],
        [
            "conv1.weight",
            "bn1.weight",
            "bn1.bias",
            "layer1.0.conv1.weight",
            "layer1.0.bn1.weight",
            "layer1.0.bn1.bias"
        ]
    );
    assert_eq!(&names[names.len() - 2..], ["fc.weight", "fc.bias"]);
    let down = net
        .layout()
        .segment("layer2.0.downsample.0.weight")
        .unwrap();
    assert_eq!(down.shape, [128, 64, 1, 1]);
    assert!(
        net.layout()
            .segment("layer1.0.downsample.0.weight")
            .is_none()
    );
    assert_eq!(net.spec().statistics.unwrap().len(), 20);
}

#[test]
fn state_dict_round_trip_keeps_parameters_and_statistics() {
    let dir = std::env::temp_dir().join(format!("bdl-models-resnet-{}", std::process::id()));
    let path = dir.join("resnet.safetensors");
    let spec = ResNetSpec {
        input: [1, 6, 6],
        widths: vec![2, 4],
        blocks: vec![1, 1],
        classes: 3,
        stem: Stem::Cifar,
        statistics: None,
        dropout: 0.0,
    };
    let model = with_random_statistics(spec.clone(), Seed(1));
    let theta = parameters(&model, Seed(2));
    model.save(&path, &theta).unwrap();

    // The file is a state_dict: parameters, running statistics and counters by torchvision's
    // names.
    let named = bdl_tensor::load_safetensors(&path, &Device::Cpu).unwrap();
    for key in [
        "bn1.running_mean",
        "layer2.0.downsample.1.running_var",
        "layer1.0.bn2.num_batches_tracked",
        "fc.bias",
    ] {
        assert!(named.contains_key(key), "{key}");
    }
    let (back, params) = ResNet::load(&path, &Device::Cpu).unwrap();
    assert_eq!(back.spec(), model.spec());
    assert_eq!(values(&params), values(&theta));
    let x = images(&model, 2, Seed(3));
    assert_close(
        &back.forward(&params, &x).unwrap(),
        &model.forward(&theta, &x).unwrap(),
        0.0,
        0.0,
    );

    // A state_dict without one running variance names it.
    let mut missing = named.clone();
    missing.remove("layer1.0.bn2.running_var");
    let partial = dir.join("partial.safetensors");
    candle_core::safetensors::save(&missing, &partial).unwrap();
    let err = ResNet::load_state_dict(spec.clone(), &partial, &Device::Cpu).unwrap_err();
    assert!(
        matches!(err, Error::Tensor(bdl_tensor::Error::MissingTensor { .. })),
        "{err}"
    );
    assert!(
        err.to_string().contains("layer1.0.bn2.running_var"),
        "{err}"
    );

    // A negative running variance is a configuration error naming the file and the layer.
    let mut negative = named.clone();
    negative.insert(
        "bn1.running_var".to_owned(),
        Tensor::new(&[1.0f64, -1.0], &Device::Cpu).unwrap(),
    );
    candle_core::safetensors::save(&negative, &partial).unwrap();
    let err = ResNet::load_state_dict(spec.clone(), &partial, &Device::Cpu).unwrap_err();
    assert!(matches!(err, Error::InvalidConfig(_)), "{err}");
    assert!(err.to_string().contains("`bn1`"), "{err}");

    // Another architecture's file names the mismatching tensor.
    let wider = ResNetSpec {
        widths: vec![3, 4],
        ..spec
    };
    let err = ResNet::load_state_dict(wider, &path, &Device::Cpu).unwrap_err();
    assert!(err.to_string().contains("conv1.weight"), "{err}");
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn bad_specs_and_inputs_are_typed_errors() {
    let valid = ResNetSpec {
        input: [1, 6, 6],
        widths: vec![2],
        blocks: vec![1],
        classes: 2,
        stem: Stem::Cifar,
        statistics: None,
        dropout: 0.0,
    };
    for spec in [
        ResNetSpec {
            widths: vec![2, 4],
            ..valid.clone()
        },
        ResNetSpec {
            blocks: vec![0],
            ..valid.clone()
        },
        ResNetSpec {
            classes: 0,
            ..valid.clone()
        },
        ResNetSpec {
            statistics: Some(vec![BatchStatistics::identity(2)]),
            ..valid.clone()
        },
        valid.clone().with_dropout(1.0),
    ] {
        assert!(
            matches!(ResNet::new(spec.clone()), Err(Error::InvalidConfig(_))),
            "{spec:?}"
        );
    }
    let model = ResNet::new(valid).unwrap();
    let theta = model.init(Seed(0), DType::F32, &Device::Cpu).unwrap();
    let x = Tensor::zeros((2, 1, 6, 5), DType::F32, &Device::Cpu).unwrap();
    let err = model.forward(&theta, &x).unwrap_err();
    assert!(err.to_string().contains("ResNet input x"), "{err}");
    let mut v = vec![0f32; 72];
    v[40] = f32::INFINITY;
    let bad = Tensor::from_vec(v, (2, 1, 6, 6), &Device::Cpu).unwrap();
    let err = model.forward(&theta, &bad).unwrap_err();
    assert!(
        matches!(
            err,
            Error::Tensor(bdl_tensor::Error::NonFinite { index: 40, .. })
        ),
        "{err}"
    );
}
