//! Cross-implementation checks against models trained and differentiated by PyTorch: the
//! `fixtures/torch_mlp` state_dict and the per-example Jacobian products of the laplace-torch
//! fixtures in `fixtures/laplace` (see the README of each folder).

mod common;

use std::path::Path;

use bdl_models::{Activation, DenseLayer, Mlp, MlpSpec, Model};
use candle_core::{DType, Device, Tensor};
use common::{assert_close, fixtures, values};
use serde_json::Value;

#[test]
fn pytorch_state_dict_loads_and_reproduces_outputs() {
    let dir = fixtures().join("torch_mlp");
    let mlp = Mlp::new(MlpSpec::new(&[8, 50, 50, 1], Activation::Relu)).unwrap();
    let theta = mlp
        .load_params(&dir.join("mlp_8-50-50-1.safetensors"), &Device::Cpu)
        .unwrap();
    assert_eq!(theta.dtype(), DType::F32);
    let io = bdl_tensor::load_safetensors(&dir.join("io.safetensors"), &Device::Cpu).unwrap();
    let f = mlp.forward(&theta, &io["X"]).unwrap();
    // PyTorch computed Y in f32 on one thread; another f32 forward pass differs by summation
    // order only. The fixture's README bounds that by 1e-5 + 1e-5·|Y| (measured here: 2.9e-6 at
    // most, with max |Y| ≈ 5.9, so 1e-6 absolute is out of reach of any f32 forward pass). The
    // same weights in f64 match laplace-torch's f64 outputs to 1e-8 relative in
    // `jacobian_products_match_laplace_torch`.
    assert_close(&f, &io["Y"], 1e-5, 1e-5);
}

/// One laplace-torch fixture: the sidecar and its tensors.
struct Fixture {
    meta: Value,
    tensors: std::collections::HashMap<String, Tensor>,
}

impl Fixture {
    fn load(path: &Path) -> Self {
        Self {
            meta: bdl_tensor::read_sidecar(path).unwrap(),
            tensors: bdl_tensor::load_safetensors(path, &Device::Cpu).unwrap(),
        }
    }

    fn mlp(&self) -> Mlp {
        let layers: Vec<DenseLayer> =
            serde_json::from_value(self.meta["model"]["layers"].clone()).unwrap();
        Mlp::new(MlpSpec::from_layers(&layers).unwrap()).unwrap()
    }

    /// |ours − fixture| ≤ atol + rtol·|fixture| with the sidecar's tolerances for `name` (its
    /// `justification` explains them; the fixture's maker checked that a 1% error violates them).
    #[track_caller]
    fn check(&self, name: &str, ours: &Tensor) {
        let tol = &self.meta["tolerances"][name];
        let rtol = tol["rtol"].as_f64().unwrap();
        let expected = &self.tensors[name];
        let atol = tol["atol"].as_f64().unwrap();
        assert_close(
            &ours.reshape(expected.shape()).unwrap(),
            expected,
            rtol,
            atol,
        );
    }

    /// Λ_n for every training point, `[N, K, K]`: the identity for regression (the fixtures
    /// leave out 1/σ²), diag(π) − ππᵀ with π = softmax(f) for classification.
    fn lambda(&self, f: &Tensor) -> Tensor {
        let (n, k) = f.dims2().unwrap();
        if self.meta["likelihood"]["type"] == "regression" {
            return Tensor::eye(k, DType::F64, &Device::Cpu)
                .unwrap()
                .unsqueeze(0)
                .unwrap()
                .repeat((n, 1, 1))
                .unwrap();
        }
        let max = f.max_keepdim(1).unwrap();
        let e = f.broadcast_sub(&max).unwrap().exp().unwrap();
        let pi = e.broadcast_div(&e.sum_keepdim(1).unwrap()).unwrap();
        let outer = pi
            .unsqueeze(2)
            .unwrap()
            .matmul(&pi.unsqueeze(1).unwrap())
            .unwrap();
        let diag = Tensor::eye(k, DType::F64, &Device::Cpu)
            .unwrap()
            .unsqueeze(0)
            .unwrap()
            .broadcast_mul(&pi.unsqueeze(1).unwrap())
            .unwrap();
        (diag - outer).unwrap()
    }

    /// Σ_n J_nᵀ Λ_n J_n for the given columns.
    fn ggn(&self, model: &Mlp, theta: &Tensor, columns: &[usize]) -> Tensor {
        let x = &self.tensors["X_train"];
        let cache = model.forward_cached(theta, x).unwrap();
        let (n, k) = cache.output.dims2().unwrap();
        let j = model.jacobian(theta, &cache, columns).unwrap();
        let lambda_j = self
            .lambda(&cache.output)
            .matmul(&j.reshape((n, k, columns.len())).unwrap())
            .unwrap();
        j.t()
            .unwrap()
            .matmul(&lambda_j.reshape((n * k, columns.len())).unwrap())
            .unwrap()
    }
}

#[test]
fn jacobian_products_match_laplace_torch() {
    let dir = fixtures().join("laplace");
    let mut checked = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "safetensors") {
            continue;
        }
        let fx = Fixture::load(&path);
        let model = fx.mlp();
        let theta = &fx.tensors["theta_map"];
        assert_eq!(theta.dims(), &[model.layout().len()], "{}", path.display());

        fx.check(
            "pred_mean",
            &model.forward(theta, &fx.tensors["X_eval"]).unwrap(),
        );

        let subset: Vec<usize> = values(&fx.tensors["subnet_indices"])
            .iter()
            .map(|&i| i as usize)
            .collect();
        fx.check("subnet_ggn", &fx.ggn(&model, theta, &subset));

        // The diagonal of the full GGN: for K = 1 and Λ = I it is Σ_n g_n∘g_n with r_n = 1, from
        // the (a, δ) products without any Jacobian; in general the column sums of J∘(ΛJ).
        let all: Vec<usize> = (0..model.layout().len()).collect();
        let diag = if model.n_outputs() == 1 && fx.meta["likelihood"]["type"] == "regression" {
            let x = &fx.tensors["X_train"];
            let cache = model.forward_cached(theta, x).unwrap();
            let ones = Tensor::ones(cache.output.shape(), DType::F64, &Device::Cpu).unwrap();
            model.sum_sq_grads(theta, &cache, &ones).unwrap()
        } else {
            let g = fx.ggn(&model, theta, &all);
            let eye = Tensor::eye(all.len(), DType::F64, &Device::Cpu).unwrap();
            (g * eye).unwrap().sum(1).unwrap()
        };
        fx.check("diag_ggn_all", &diag);
        checked += 1;
    }
    assert!(
        checked >= 2,
        "expected the two public fixtures in {}",
        dir.display()
    );
}
