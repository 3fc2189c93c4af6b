//! The sampler's incremental, tiled and vectorised evaluator makes the same accept / reject
//! decisions as the same kernel scoring every proposal with a full forward pass.

use bdl_data::{Dataset, Provenance, Task};
use bdl_inference::Validate;
use bdl_likelihoods::Likelihood;
use bdl_mcmc::{
    Acceptance, BatchMode, Blocking, DensityTarget, GibbsConfig, ProposalVariance, Sampler, State,
};
use bdl_models::{Activation, Mlp, MlpSpec, Model};
use bdl_tensor::{Seed, SubBlocks};
use candle_core::{DType, Device, Tensor};
use rand::Rng;

/// `n` examples of `features` N(0, 1) inputs with labels in 0..classes, from a seed.
fn data(n: usize, features: usize, classes: usize) -> Dataset {
    let mut rng = Seed(7).fork("evaluator data").rng();
    let x =
        bdl_tensor::normal(&mut rng, (n, features), 0.0, 1.0, DType::F32, &Device::Cpu).unwrap();
    let labels: Vec<u32> = (0..n)
        .map(|_| rng.random_range(0..classes as u32))
        .collect();
    let y = Tensor::new(labels, &Device::Cpu).unwrap();
    let task = Task::Classification {
        classes: (0..classes).map(|c| c.to_string()).collect(),
    };
    let names = (0..features).map(|j| format!("x{j}")).collect();
    Dataset::new(x, y, task, names, Provenance::default()).unwrap()
}

/// MLP(20, 10, 10, 3), sigmoid, softmax likelihood, f64, on 600 examples (two full tiles of 256
/// and a partial one, padded): 25 sweeps of the sampler against the kernel with a full candle
/// forward pass per proposal, from the same state and stream. First-layer nodes cut into
/// sub-blocks of 3 parameters, the other layers in node blocks; the variances give acceptance
/// rates well inside (0, 1), so both decisions occur often.
///
/// Identical decisions give bit-identical states (the proposals are computed from the state),
/// so the test asks for exact equality. The two evaluators sum the same products in different
/// orders, so their log-targets differ by ~1e-13; a decision flips only if a uniform lands that
/// close to the acceptance probability, which has probability ~1e-13 per decision.
#[test]
fn same_decisions_as_full_forward_passes_f64() {
    let train = data(600, 20, 3);
    let model = Mlp::new(MlpSpec::new(&[20, 10, 10, 3], Activation::Sigmoid)).unwrap();
    let likelihood = Likelihood::Categorical { classes: 3 };
    let theta = model.init(Seed(0), DType::F64, &Device::Cpu).unwrap();
    let config = GibbsConfig::new(
        Blocking::FinerNode {
            split: vec![Some(SubBlocks::Size(3)), None, None],
        },
        ProposalVariance::PerLayer(vec![0.3, 0.1, 0.01]),
        BatchMode::Exact,
    )
    .check()
    .unwrap();
    let kernel = config.kernel(model.layout()).unwrap();
    let n_blocks = kernel.blocks().len();
    let mut sampler = Sampler::new(&model, likelihood, &train, &config, &theta, Seed(1)).unwrap();
    let x = train.x().to_dtype(DType::F64).unwrap();
    let mut full = DensityTarget::new(kernel.blocks().to_vec(), |params: &[f64]| {
        let params = Tensor::new(params, &Device::Cpu).unwrap();
        let f = model.forward(&params, &x).unwrap();
        let ll = likelihood.log_lik(&f, train.y()).unwrap();
        ll.sum_all().unwrap().to_scalar::<f64>().unwrap()
    });
    let mut state = State::new(theta.to_vec1::<f64>().unwrap());
    let mut acceptance = Acceptance::new(n_blocks);
    let (mut rng_sampler, mut rng_full) = (Seed(2).rng(), Seed(2).rng());
    for t in 0..25 {
        sampler.iterate(t, &mut rng_sampler).unwrap();
        kernel
            .sweep(
                &mut full,
                &mut state,
                &mut rng_full,
                &mut acceptance,
                t,
                t == 0,
            )
            .unwrap();
        assert_eq!(
            sampler.acceptance(),
            &acceptance,
            "decisions differ by sweep {t}"
        );
    }
    let rates = acceptance.layer_rates(kernel.blocks());
    assert!(
        rates.iter().all(|&r| r > 0.1 && r < 0.9),
        "acceptance per layer {rates:?}: both decisions should be common"
    );
    let theta_sampler: Vec<f64> = sampler.params().unwrap().to_vec1().unwrap();
    assert_eq!(theta_sampler, state.theta());
}
