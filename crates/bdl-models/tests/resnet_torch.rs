//! ResNet-18 against PyTorch: a torchvision `resnet18` `state_dict` (with the CIFAR stem, and
//! as torchvision builds it, with the ImageNet stem), written as
//! safetensors under torchvision's names with every running statistic and counter, loads and
//! reproduces the logits and parameter gradients PyTorch recorded in
//! `fixtures/resnet/resnet18_cifar.json` (see its README: the tensors are counter-based
//! pseudo-random numbers regenerated here from their names, so the fixture holds only PyTorch's
//! outputs).

mod common;

use std::collections::HashMap;

use bdl_models::{Model, ResNet, ResNetSpec};
use candle_core::{DType, Device, Tensor};
use common::fixtures;
use serde_json::Value;

/// FNV-1a, 64 bits, of a tensor's name: the seed of its numbers.
fn fnv1a(name: &str) -> u64 {
    name.bytes().fold(0xCBF2_9CE4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01B3)
    })
}

/// n numbers in [−1, 1): element i is SplitMix64's finaliser of fnv1a(name) + (i + 1)·φ, as the
/// fixture script computes them.
fn uniform(name: &str, n: usize) -> Vec<f64> {
    let seed = fnv1a(name);
    (1..=n as u64)
        .map(|i| {
            let mut z = seed.wrapping_add(i.wrapping_mul(0x9E37_79B9_7F4A_7C15));
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            (z >> 11) as f64 * 2f64.powi(-53) * 2.0 - 1.0
        })
        .collect()
}

/// The fixture's value of the state_dict entry `name` of `shape` (the script's `tensor_for`).
fn entry(name: &str, shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    let v = uniform(name, n);
    let scaled: Vec<f64> = if name.ends_with("running_mean") {
        v.iter().map(|x| 0.1 * x).collect()
    } else if name.ends_with("running_var") {
        v.iter().map(|x| 1.0 + 0.25 * (x + 1.0)).collect()
    } else if name == "fc.weight" {
        let s = (shape[1] as f64).sqrt();
        v.iter().map(|x| x / s).collect()
    } else if name.ends_with(".bias") {
        v.iter().map(|x| 0.1 * x).collect()
    } else if shape.len() == 1 {
        v.iter().map(|x| 1.0 + 0.2 * x).collect()
    } else {
        let s = (3.0 / shape[1..].iter().product::<usize>() as f64).sqrt();
        v.iter().map(|x| x * s).collect()
    };
    Tensor::from_vec(scaled, shape, &Device::Cpu).unwrap()
}

/// The torchvision state_dict, as `safetensors.torch.save_file` writes it: float64 parameters
/// and running statistics, an int64 scalar `num_batches_tracked` per normalisation.
fn state_dict(net: &ResNet) -> HashMap<String, Tensor> {
    let mut named: HashMap<String, Tensor> = net
        .layout()
        .segments()
        .iter()
        .map(|s| (s.name.clone(), entry(&s.name, &s.shape)))
        .collect();
    let norms: Vec<String> = net
        .layout()
        .segments()
        .iter()
        .filter(|s| s.shape.len() == 1 && s.name.ends_with(".weight"))
        .map(|s| s.name.trim_end_matches(".weight").to_owned())
        .collect();
    for norm in norms {
        let c = net
            .layout()
            .segment(&format!("{norm}.weight"))
            .unwrap()
            .shape[0];
        for buffer in ["running_mean", "running_var"] {
            let name = format!("{norm}.{buffer}");
            let t = entry(&name, &[c]);
            named.insert(name, t);
        }
        let tracked = Tensor::new(0i64, &Device::Cpu).unwrap();
        named.insert(format!("{norm}.num_batches_tracked"), tracked);
    }
    named
}

fn matrix(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .flat_map(|row| row.as_array().unwrap().iter().map(|x| x.as_f64().unwrap()))
        .collect()
}

#[test]
fn torchvision_resnet18_state_dict_reproduces_pytorchs_logits_and_gradients() {
    let fixture: Value = serde_json::from_str(
        &std::fs::read_to_string(fixtures().join("resnet/resnet18_cifar.json")).unwrap(),
    )
    .unwrap();
    let dir = std::env::temp_dir().join(format!("bdl-resnet-torch-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    check(
        &fixture,
        ResNetSpec::resnet18(10),
        ("input", "output-gradient"),
        &dir,
    );
    // torchvision's own stem (7 × 7 at stride 2, max pooling) on 64 × 64 images.
    let imagenet = ResNetSpec {
        input: [3, 64, 64],
        ..ResNetSpec::resnet18_imagenet(10)
    };
    let names = ("input-imagenet", "output-gradient-imagenet");
    check(&fixture["imagenet"], imagenet, names, &dir);
    std::fs::remove_dir_all(dir).unwrap();
}

/// One case of the fixture: `spec`'s state_dict written and loaded, the batch named `x_name`
/// through it, and ∂(Σ r∘f)/∂θ for the matrix named `r_name`, against PyTorch's.
fn check(case: &Value, spec: ResNetSpec, (x_name, r_name): (&str, &str), dir: &std::path::Path) {
    let path = dir.join(format!("{x_name}.safetensors"));
    candle_core::safetensors::save(&state_dict(&ResNet::new(spec.clone()).unwrap()), &path)
        .unwrap();
    let (net, theta) = ResNet::load_state_dict(spec, &path, &Device::Cpu).unwrap();
    assert_eq!(
        net.layout().len() as u64,
        case["n_params"].as_u64().unwrap()
    );
    assert_eq!(theta.dtype(), DType::F64);

    let shape: Vec<usize> = serde_json::from_value(case["input"].clone()).unwrap();
    let numel = shape.iter().product();
    let x = Tensor::from_vec(uniform(x_name, numel), shape.as_slice(), &Device::Cpu).unwrap();
    let expected = matrix(&case["logits"]);
    let scale = expected.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    // Both sides in float64, summing in different orders through 20 layers: agreement to ~1e-13
    // of the logits' scale; 1e-10 catches any wrong layer, statistic or name.
    let cache = net.forward_cached(&theta, &x).unwrap();
    let f = bdl_tensor::to_f64_vec(&cache.output).unwrap();
    for (i, (a, b)) in f.iter().zip(&expected).enumerate() {
        assert!(
            (a - b).abs() <= 1e-10 * scale,
            "{x_name}: logit {i}: {a} vs {b}"
        );
    }
    // In float32 the forward pass carries f32 rounding through the network: within 1e-5.
    let f32_logits = net
        .forward(
            &theta.to_dtype(DType::F32).unwrap(),
            &x.to_dtype(DType::F32).unwrap(),
        )
        .unwrap();
    for (i, (a, b)) in bdl_tensor::to_f64_vec(&f32_logits)
        .unwrap()
        .iter()
        .zip(&expected)
        .enumerate()
    {
        assert!((a - b).abs() <= 1e-5, "{x_name}: f32 logit {i}: {a} vs {b}");
    }

    // ∂(Σ r∘f)/∂θ against PyTorch's autograd, on the first 64 entries of seven tensors.
    let n = shape[0];
    let r = Tensor::from_vec(uniform(r_name, n * 10), (n, 10), &Device::Cpu).unwrap();
    let grad = bdl_tensor::to_f64_vec(&net.backward(&theta, &cache, &r).unwrap()).unwrap();
    for (name, head) in case["gradient_head"].as_object().unwrap() {
        let segment = net.layout().segment(name).unwrap();
        let head: Vec<f64> = head
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_f64().unwrap())
            .collect();
        let scale = head.iter().fold(1e-300f64, |m, v| m.max(v.abs()));
        for (i, want) in head.iter().enumerate() {
            let got = grad[segment.offset + i];
            assert!(
                (got - want).abs() <= 1e-9 * scale,
                "{x_name}: ∂/∂{name}[{i}]: {got} vs {want}"
            );
        }
    }
}
