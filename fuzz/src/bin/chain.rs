//! Chain folders: the input is the manifest `chain.json` of a real three-chunk chain, which is
//! then read (draws, acceptance, trace) and resumed.
use bdl_inference::Validate;
use bdl_likelihoods::Likelihood;
use bdl_mcmc::{BatchMode, Blocking, Chain, ChainConfig, GibbsConfig, Keep, ProposalVariance};
use bdl_models::{Activation, Mlp, MlpSpec};

fn main() {
    let (train, _) =
        bdl_data::toy::noisy_xor(&bdl_data::root::fixtures(), bdl_data::toy::NoisyXor::Small)
            .expect("the shipped XOR set");
    let mlp = Mlp::new(MlpSpec::new(&[2, 2, 1], Activation::Sigmoid)).expect("an MLP");
    let gibbs = GibbsConfig::new(
        Blocking::Node,
        ProposalVariance::Common(0.04),
        BatchMode::Minibatch(50),
    );
    let config = ChainConfig {
        iterations: 30,
        chunk_len: 10,
        ..ChainConfig::new(gibbs)
    }
    .check()
    .expect("a valid configuration");
    let dir = bdl_fuzz::root().join("chains");
    // The sampler's state holds candle tensors, which are not `UnwindSafe`; a panic ends the
    // process under the fuzzer anyway.
    let run = std::panic::AssertUnwindSafe(|| {
        bdl_mcmc::run_chain(
            &mlp,
            Likelihood::Bernoulli,
            &train,
            &config,
            &dir,
            0,
            &|_| {},
        )
    });
    let cdir = (*run)().expect("the seed chain").dir;
    let manifest = cdir.join("chain.json");
    let original = std::fs::read(&manifest).expect("the manifest");
    afl::fuzz!(|data: &[u8]| {
        std::fs::write(&manifest, data).expect("a scratch file");
        if let Ok(chain) = Chain::open(&cdir) {
            let _ = chain.draws(&Keep::default());
            let _ = chain.acceptance(0);
            let _ = chain.log_target_trace();
        }
        let _ = (*run)();
        std::fs::write(&manifest, &original).expect("a scratch file");
    });
}
