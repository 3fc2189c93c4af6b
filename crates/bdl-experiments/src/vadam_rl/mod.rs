//! `vadam-rl`: exploration by weight perturbation in deep reinforcement learning (Khan et al.
//! 2018, §6.4).
//!
//! The paper trains DDPG on MuJoCo's Half-Cheetah with the actor learned by Vadam or VadaGrad,
//! whose weight samples explore, against the same agent learned by plain gradient steps with
//! no exploration noise ("SGD-Plain") and with noise on the actions ("SGD-Explore"). MuJoCo is
//! not available offline; the environment here is the classic pendulum swing-up with its
//! standard dynamics ([`pendulum`]), a continuous-control task small enough for several seeds
//! on a laptop. The agent is [`ddpg`]'s, the same for every exploration rule but the actor's
//! learner:
//!
//! - no noise: Adam on the actor, the mean actor acts;
//! - action noise: Adam on the actor, Gaussian noise (σ = 0.1 of the largest torque) on every
//!   action;
//! - Vadam, VadaGrad: the variational method on the actor (its gradient at θ = μ + σ∘ε), each
//!   episode acted by one weight sample of q.
//!
//! Each run records the return of every training episode (the behaviour policy's) and, every
//! few episodes, the mean actor's average return from fixed start states (the same for every
//! method and seed). Seeds are independent units (resumable, shardable).

mod claims;
mod ddpg;
mod pendulum;
mod report;
mod settings;

use std::time::Instant;

use anyhow::{Context as _, Result};
use bdl_eval::metrics::MeanSe;
use bdl_tensor::Seed;
use candle_core::{Device, Tensor};
use serde::{Deserialize, Serialize};

use self::claims::claims;
use self::ddpg::{Agent, Exploration};
use self::pendulum::{EPISODE, OBSERVATION, Pendulum};
use self::report::{body, figure};
use self::settings::Settings;
use crate::concurrency::side_by_side;
use crate::units::Units;
use crate::{Context, Entry, Outcome};

/// The experiment.
pub(crate) const EXPERIMENT: Entry = Entry {
    name: "vadam-rl",
    reproduces: "Khan et al. (2018) §6.4: DDPG exploring by Vadam's and VadaGrad's weight \
     perturbation against action noise and no noise (pendulum swing-up for Half-Cheetah)",
    run,
    shards: true,
    lists_methods: false,
    profiles: &crate::Profile::ALL,
    any_device: false,
};

/// λ of the actor's prior N(0, λ⁻¹ I): a standard deviation of 0.1, the scale of the initial
/// weights (fan-in 64), and the largest σ Vadam can reach.
const PRIOR_PRECISION: f64 = 100.0;
/// The initial precision 1/σ₁² of the actor's weights: σ₁ = 0.05.
const INIT_PRECISION: f64 = 400.0;
/// N of Vadam's σ² = 1/(N s + λ). A pilot run (20 episodes, before any comparison) put the
/// actor's squared minibatch gradients at about 4·10⁻⁴ per weight; N = 10⁶ then keeps σ near
/// σ₁ where the gradients are of that size (N = 10³ let σ grow to the prior's within 20
/// episodes).
const VADAM_EXAMPLES: usize = 1_000_000;
/// VadaGrad's α: its step α ĝ/√s is about Adam's 10⁻³ at the pilot's |ĝ| ≈ 0.02 and s₁ = 400
/// (its s then barely grows, so σ stays near σ₁ and the step near α ĝ/20).
const VADAGRAD_LR: f64 = 1.0;

/// One run: an exploration rule and a seed.
#[derive(Debug, Serialize, Deserialize)]
struct Run {
    method: String,
    seed: usize,
    /// The return of every training episode (the behaviour policy's).
    train_returns: Vec<f64>,
    /// The mean actor's average return from the fixed start states, after 0, e, 2e, …
    /// episodes (e = `eval_every`).
    eval_returns: Vec<f64>,
    /// The mean σ of the actor's weights after each episode (0 for Adam).
    mean_sigma: Vec<f64>,
    /// Wall time of the run in seconds (one thread).
    seconds: f64,
}

/// Runs the experiment.
fn run(ctx: &Context) -> Result<Outcome> {
    let settings = Settings::of(ctx.profile);
    let units = Units::new(ctx, &settings)?;
    let all: Vec<(usize, usize)> = (0..settings.seeds)
        .flat_map(|seed| (0..settings.explorations.len()).map(move |m| (m, seed)))
        .collect();
    let total = all.len();
    let key =
        |&(m, seed): &(usize, usize)| format!("seed-{seed}-{}", slug(&settings.explorations[m]));
    let jobs = units.share(all);
    let bar = ctx.bar(jobs.len() as u64, "DDPG runs");
    let runs = side_by_side(&jobs, |job| {
        let run = units.get_or_run(&key(job), || {
            train(&settings, &settings.explorations[job.0], job.1)
                .with_context(|| format!("{} seed {}", settings.explorations[job.0].name(), job.1))
        })?;
        bar.inc(1);
        Ok(run)
    })?;
    bar.finish_and_clear();
    if let Some(shard) = units.shard_outcome(jobs.iter().map(key).collect(), total) {
        return Ok(shard);
    }
    Ok(Outcome::new(
        "vadam-rl: DDPG on the pendulum, exploring by weight perturbation, action noise or not at all",
        &settings,
        &runs,
    )?
    .body(body(&runs, &settings))
    .claims(claims(&runs, &settings))
    .figure("vadam-rl.svg", figure(&runs, &settings).to_svg()))
}

/// A file-name form of an exploration's name.
fn slug(e: &Exploration) -> String {
    match e {
        Exploration::None => "none".into(),
        Exploration::Action { .. } => "action".into(),
        Exploration::Parameter { config, .. } => config.method.name().to_lowercase(),
    }
}

/// One DDPG run of `settings.episodes` episodes with `exploration`.
fn train(settings: &Settings, exploration: &Exploration, seed: usize) -> Result<Run> {
    let start = Instant::now();
    let seed_of_run = Seed(seed as u64).fork("vadam-rl");
    // The same initial networks and start states for every exploration rule of a seed.
    let mut agent = Agent::new(settings.ddpg.clone(), exploration.clone(), seed_of_run)?;
    let mut starts = seed_of_run.fork("episodes").rng();
    let (mut train_returns, mut eval_returns, mut mean_sigma) = (vec![], vec![], vec![]);
    eval_returns.push(evaluate(&agent, settings)?);
    for episode in 0..settings.episodes {
        let mut env = Pendulum::reset(&mut starts);
        agent.begin_episode()?;
        let mut ret = 0.0;
        for _ in 0..EPISODE {
            let obs = env.observation();
            let u = agent.behave(obs)?;
            let r = env.step(u);
            agent.observe(obs, u, r, env.observation())?;
            ret += r;
        }
        train_returns.push(ret);
        mean_sigma.push(agent.mean_sigma());
        if (episode + 1) % settings.eval_every == 0 {
            eval_returns.push(evaluate(&agent, settings)?);
        }
    }
    Ok(Run {
        method: exploration.name(),
        seed,
        train_returns,
        eval_returns,
        mean_sigma,
        seconds: start.elapsed().as_secs_f64(),
    })
}

/// The mean actor's return averaged over `eval_starts` fixed start states (the same for every
/// run), all episodes stepped together.
fn evaluate(agent: &Agent, settings: &Settings) -> Result<f64> {
    let mut rng = Seed(0).fork("vadam-rl-evaluation").rng();
    let mut envs: Vec<Pendulum> = (0..settings.eval_starts)
        .map(|_| Pendulum::reset(&mut rng))
        .collect();
    let theta = Tensor::from_slice(agent.mean_actor(), agent.mean_actor().len(), &Device::Cpu)?;
    let mut total = 0.0;
    for _ in 0..EPISODE {
        let obs: Vec<f64> = envs.iter().flat_map(Pendulum::observation).collect();
        let obs = Tensor::from_vec(obs, (envs.len(), OBSERVATION), &Device::Cpu)?;
        for (env, u) in envs.iter_mut().zip(agent.act(&theta, &obs)?) {
            total += env.step(u);
        }
    }
    Ok(total / envs.len() as f64)
}

/// The runs of exploration `name`.
fn runs_of<'a>(runs: &'a [Run], name: &str) -> Vec<&'a Run> {
    runs.iter().filter(|r| r.method == name).collect()
}

/// Mean ± standard error over seeds of each run's `value`.
fn over_seeds(runs: &[&Run], value: impl Fn(&Run) -> f64) -> MeanSe {
    MeanSe::of(&runs.iter().map(|r| value(r)).collect::<Vec<_>>())
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// The mean actor's evaluation returns of the first half of training (the evaluations after
/// episodes 1 … episodes/2, the one before training excluded): how early a rule learns.
fn early(run: &Run) -> f64 {
    let half = (run.eval_returns.len() - 1).div_ceil(2).max(1);
    mean(&run.eval_returns[1..=half.min(run.eval_returns.len() - 1)])
}

/// The last evaluation's return.
fn last(run: &Run) -> f64 {
    *run.eval_returns.last().expect("evaluated before training")
}

#[cfg(test)]
mod tests {
    use super::ddpg::Exploration;
    use super::*;
    use crate::Profile;
    use crate::claim::Decision;

    fn run(method: &str, seed: usize, eval: &[f64]) -> Run {
        Run {
            method: method.into(),
            seed,
            train_returns: vec![-1000.0; 4],
            eval_returns: eval.to_vec(),
            mean_sigma: vec![0.0; 4],
            seconds: 1.0,
        }
    }

    /// The first half of the evaluations after training began decides; the one before
    /// training and the later ones do not.
    #[test]
    fn the_claim_compares_the_first_half_of_training() {
        let settings = Settings::of(Profile::Smoke);
        let names: Vec<String> = settings
            .explorations
            .iter()
            .map(Exploration::name)
            .collect();
        // Evaluations at 0, 1, 2, 3, 4 episodes: the first half is those after 1 and 2. Two
        // seeds, the second 10 higher everywhere.
        let rows = |vadam_early: f64| {
            let mut runs = Vec::new();
            for (seed, up) in [(0, 0.0), (1, 10.0)] {
                let add = |v: &[f64]| v.iter().map(|x| x + up).collect::<Vec<_>>();
                runs.push(run(
                    &names[0],
                    seed,
                    &add(&[-1500.0, -1200.0, -1100.0, -200.0, -150.0]),
                ));
                runs.push(run(
                    &names[1],
                    seed,
                    &add(&[-1500.0, -1300.0, -1300.0, -900.0, -900.0]),
                ));
                let vadam = [-9000.0, vadam_early, vadam_early + 2.0 * up, -900.0, -900.0];
                runs.push(run(&names[2], seed, &vadam));
                runs.push(run(
                    &names[3],
                    seed,
                    &add(&[-1500.0, -700.0, -600.0, -900.0, -900.0]),
                ));
            }
            runs
        };
        let verdict = |v: f64| claims(&rows(v), &settings)[0].verdict;
        assert_eq!(verdict(-800.0), Decision::Holds);
        assert_eq!(verdict(-1160.0), Decision::Fails);
        // At −1150 Vadam − no noise is 0 on both seeds: a tie, undecided.
        assert_eq!(verdict(-1150.0), Decision::Undecided);
        assert_eq!(early(&rows(-800.0)[0]), -1150.0);
    }

    #[test]
    fn a_smoke_run_learns_and_records_every_episode() {
        let settings = Settings::of(Profile::Smoke);
        for e in &settings.explorations {
            let run = train(&settings, e, 0).unwrap();
            assert_eq!(run.train_returns.len(), settings.episodes);
            assert_eq!(
                run.eval_returns.len(),
                settings.episodes / settings.eval_every + 1
            );
            assert!(run.train_returns.iter().all(|r| r.is_finite() && *r <= 0.0));
            let noisy = matches!(e, Exploration::Parameter { .. });
            assert_eq!(
                run.mean_sigma.iter().all(|&s| s > 0.0),
                noisy,
                "{}",
                e.name()
            );
        }
    }
}
