//! DDPG (Lillicrap et al. 2016) on the pendulum, with the actor learned either by Adam or by a
//! variational method whose weight samples are the exploration (Khan et al. 2018, §6.4).
//!
//! Actor μ_θ(s) = 2 tanh f(s; θ), critic Q_w(s, u/2) (the torque scaled to [−1, 1]), both MLPs of
//! ReLU units. Per environment step, once the replay buffer holds a minibatch:
//!
//! - critic: Adam on ½ (1/M) Σ (Q_w(s, a) − y)², y = r + γ Q_w'(s', μ_θ'(s')) (the episode's
//!   time limit is not a terminal state, so every target bootstraps);
//! - actor: the minibatch mean of ℓ(θ) = −Q_w(s, μ_θ(s)), its gradient (1/M) Σ J_θᵀ (−∂Q/∂u
//!   (1 − tanh² f)) from the critic's input gradient; Adam on θ, or the variational method's
//!   step with the gradient taken at θ = μ + σ∘ε;
//! - targets: θ' ← (1 − τ)θ' + τμ, w' ← (1 − τ)w' + τw.
//!
//! Exploration ([`Exploration`]): none (the mean actor acts), Gaussian noise on each action,
//! or the actor's weights drawn from q once per episode (parameter-space noise).

use bdl_inference::{Optimizer, OptimizerState, Validate};
use bdl_models::{Activation, Mlp, MlpSpec, Model};
use bdl_tensor::{ChaCha8Rng, Seed};
use bdl_variational::{Online, VariationalConfig};
use candle_core::{DType, Device, Tensor};
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

use super::pendulum::{MAX_TORQUE, OBSERVATION};

/// How the behaviour policy explores, and so how the actor learns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub(crate) enum Exploration {
    /// Adam on the actor; the mean actor acts (the paper's "SGD-Plain").
    None,
    /// Adam on the actor; every action gets Gaussian noise of standard deviation `sigma` times
    /// the largest torque (the paper's "SGD-Explore").
    Action {
        /// The noise's standard deviation as a fraction of the largest torque.
        sigma: f64,
    },
    /// A variational method on the actor (Vadam, VadaGrad); each episode is acted by one
    /// weight sample of q.
    Parameter {
        /// The method, prior precision and initial precision (its epochs, batch size and
        /// samples are unused: one gradient per environment step).
        config: VariationalConfig,
        /// N, the number of examples the actor's loss is read as a mean over (sets σ² =
        /// 1/(N s + λ) for Vadam; VadaGrad's σ does not depend on it).
        examples: usize,
    },
}

impl Exploration {
    /// The name in tables and figures.
    pub(crate) fn name(&self) -> String {
        match self {
            Self::None => "no noise (Adam)".into(),
            Self::Action { sigma } => format!("action noise σ = {sigma} (Adam)"),
            Self::Parameter { config, .. } => format!("{} weight noise", config.method.name()),
        }
    }
}

/// DDPG's hyper-parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub(crate) struct DdpgConfig {
    /// Units in each of the two hidden layers of actor and critic.
    pub(crate) hidden: usize,
    /// The discount γ.
    pub(crate) discount: f64,
    /// The target networks' rate τ.
    pub(crate) target_rate: f64,
    /// Transitions per minibatch M.
    pub(crate) batch_size: usize,
    /// The replay buffer's capacity (oldest transitions are overwritten).
    pub(crate) capacity: usize,
    /// Adam's step size for the actor (when Adam learns it).
    pub(crate) actor_lr: f64,
    /// Adam's step size for the critic.
    pub(crate) critic_lr: f64,
}

/// The replay buffer: transitions (s, u/2, r, s') in a ring.
struct Replay {
    obs: Vec<[f64; OBSERVATION]>,
    action: Vec<f64>,
    reward: Vec<f64>,
    next: Vec<[f64; OBSERVATION]>,
    capacity: usize,
    slot: usize,
}

/// A minibatch as tensors: the critic's inputs [s, a], rewards, next observations.
struct Batch {
    obs: Tensor,
    obs_action: Tensor,
    reward: Tensor,
    next: Tensor,
}

impl Replay {
    fn new(capacity: usize) -> Self {
        Self {
            obs: Vec::new(),
            action: Vec::new(),
            reward: Vec::new(),
            next: Vec::new(),
            capacity,
            slot: 0,
        }
    }

    fn len(&self) -> usize {
        self.obs.len()
    }

    fn push(&mut self, obs: [f64; OBSERVATION], action: f64, reward: f64, next: [f64; 3]) {
        if self.len() < self.capacity {
            self.obs.push(obs);
            self.action.push(action);
            self.reward.push(reward);
            self.next.push(next);
        } else {
            let i = self.slot;
            (self.obs[i], self.action[i], self.reward[i], self.next[i]) =
                (obs, action, reward, next);
        }
        self.slot = (self.slot + 1) % self.capacity;
    }

    /// `m` transitions drawn uniformly with replacement.
    fn sample(&self, m: usize, rng: &mut ChaCha8Rng) -> candle_core::Result<Batch> {
        let picks: Vec<usize> = (0..m).map(|_| rng.random_range(0..self.len())).collect();
        let rows =
            |of: &[[f64; OBSERVATION]]| picks.iter().flat_map(|&i| of[i]).collect::<Vec<_>>();
        let obs_action: Vec<f64> = picks
            .iter()
            .flat_map(|&i| self.obs[i].into_iter().chain([self.action[i]]))
            .collect();
        let reward: Vec<f64> = picks.iter().map(|&i| self.reward[i]).collect();
        let cpu = &Device::Cpu;
        Ok(Batch {
            obs: Tensor::from_vec(rows(&self.obs), (m, OBSERVATION), cpu)?,
            obs_action: Tensor::from_vec(obs_action, (m, OBSERVATION + 1), cpu)?,
            reward: Tensor::from_vec(reward, (m, 1), cpu)?,
            next: Tensor::from_vec(rows(&self.next), (m, OBSERVATION), cpu)?,
        })
    }
}

/// How the actor's parameters are learned.
enum ActorLearner {
    Adam {
        theta: Vec<f64>,
        adam: OptimizerState,
    },
    Variational(Box<Online>),
}

/// A DDPG agent: actor, critic, their targets and optimisers, the replay buffer.
pub(crate) struct Agent {
    config: DdpgConfig,
    exploration: Exploration,
    actor: Mlp,
    critic: Mlp,
    learner: ActorLearner,
    critic_w: Vec<f64>,
    critic_adam: OptimizerState,
    actor_target: Vec<f64>,
    critic_target: Vec<f64>,
    replay: Replay,
    /// Minibatch draws and action noise.
    rng: ChaCha8Rng,
    /// The actor's weights for the current episode (the mean, or a draw of q).
    behaviour: Tensor,
}

fn flat(v: &[f64]) -> candle_core::Result<Tensor> {
    Tensor::from_slice(v, v.len(), &Device::Cpu)
}

fn soft_update(target: &mut [f64], source: &[f64], rate: f64) {
    for (t, s) in target.iter_mut().zip(source) {
        *t += rate * (s - *t);
    }
}

impl Agent {
    /// A fresh agent: networks initialised from `seed`, an empty buffer.
    pub(crate) fn new(
        config: DdpgConfig,
        exploration: Exploration,
        seed: Seed,
    ) -> anyhow::Result<Self> {
        let h = config.hidden;
        let actor = Mlp::new(MlpSpec::new(&[OBSERVATION, h, h, 1], Activation::Relu))?;
        let critic = Mlp::new(MlpSpec::new(&[OBSERVATION + 1, h, h, 1], Activation::Relu))?;
        let init = |net: &Mlp, name| -> anyhow::Result<Vec<f64>> {
            Ok(bdl_tensor::to_f64_vec(&net.init(
                seed.fork(name),
                DType::F64,
                &Device::Cpu,
            )?)?)
        };
        let (theta, critic_w) = (init(&actor, "actor")?, init(&critic, "critic")?);
        let adam = || Optimizer::adam(0.9, 0.999);
        let learner = match &exploration {
            Exploration::None | Exploration::Action { .. } => ActorLearner::Adam {
                adam: OptimizerState::new(adam(), theta.len()),
                theta: theta.clone(),
            },
            Exploration::Parameter { config, examples } => {
                let config = VariationalConfig {
                    seed: seed.fork("actor-perturbation"),
                    ..config.clone()
                }
                .check()?;
                ActorLearner::Variational(Box::new(Online::new(theta.clone(), *examples, &config)?))
            }
        };
        Ok(Self {
            behaviour: flat(&theta)?,
            actor_target: theta,
            critic_adam: OptimizerState::new(adam(), critic_w.len()),
            critic_target: critic_w.clone(),
            critic_w,
            replay: Replay::new(config.capacity),
            rng: seed.fork("ddpg").rng(),
            config,
            exploration,
            actor,
            critic,
            learner,
        })
    }

    /// The actor's mean weights.
    pub(crate) fn mean_actor(&self) -> &[f64] {
        match &self.learner {
            ActorLearner::Adam { theta, .. } => theta,
            ActorLearner::Variational(q) => q.mean(),
        }
    }

    /// The torques 2 tanh f(s; θ) of the actor with weights `theta` at observations `obs`
    /// (`[n, 3]`).
    pub(crate) fn act(&self, theta: &Tensor, obs: &Tensor) -> anyhow::Result<Vec<f64>> {
        let f = self.actor.forward(theta, obs)?;
        Ok(bdl_tensor::to_f64_vec(&f)?
            .into_iter()
            .map(|f| MAX_TORQUE * f.tanh())
            .collect())
    }

    /// Starts an episode: the behaviour actor is the mean, or one draw of q.
    pub(crate) fn begin_episode(&mut self) -> anyhow::Result<()> {
        self.behaviour = match &mut self.learner {
            ActorLearner::Adam { theta, .. } => flat(theta)?,
            ActorLearner::Variational(q) => flat(&q.draw().theta)?,
        };
        Ok(())
    }

    /// The behaviour policy's torque at `obs` (with action noise when exploring by it).
    pub(crate) fn behave(&mut self, obs: [f64; OBSERVATION]) -> anyhow::Result<f64> {
        let x = Tensor::from_slice(&obs, (1, OBSERVATION), &Device::Cpu)?;
        let u = self.act(&self.behaviour, &x)?[0];
        Ok(match self.exploration {
            Exploration::Action { sigma } => {
                let noise: f64 = StandardNormal.sample(&mut self.rng);
                (u + sigma * MAX_TORQUE * noise).clamp(-MAX_TORQUE, MAX_TORQUE)
            }
            Exploration::None | Exploration::Parameter { .. } => u,
        })
    }

    /// Stores a transition and, once the buffer holds a minibatch, takes one learning step.
    pub(crate) fn observe(
        &mut self,
        obs: [f64; OBSERVATION],
        torque: f64,
        reward: f64,
        next: [f64; OBSERVATION],
    ) -> anyhow::Result<()> {
        self.replay.push(obs, torque / MAX_TORQUE, reward, next);
        if self.replay.len() >= self.config.batch_size {
            self.learn()?;
        }
        Ok(())
    }

    fn learn(&mut self) -> anyhow::Result<()> {
        let m = self.config.batch_size;
        let batch = self.replay.sample(m, &mut self.rng)?;
        // Critic: ½ mean (Q − y)², y = r + γ Q'(s', μ'(s')/2).
        let next_u = self
            .actor
            .forward(&flat(&self.actor_target)?, &batch.next)?
            .tanh()?;
        let next_q = self.critic.forward(
            &flat(&self.critic_target)?,
            &Tensor::cat(&[&batch.next, &next_u], 1)?,
        )?;
        let y = (batch.reward + (next_q * self.config.discount)?)?;
        let w = flat(&self.critic_w)?;
        let cache = self.critic.forward_cached(&w, &batch.obs_action)?;
        let residual = ((&cache.output - y)? / m as f64)?;
        let g = bdl_tensor::to_f64_vec(&self.critic.backward(&w, &cache, &residual)?)?;
        self.critic_adam
            .step(&mut self.critic_w, &g, self.config.critic_lr);
        // Actor: the mean of −Q(s, tanh f(s; θ)) at θ (the mean, or a draw of q).
        let w = flat(&self.critic_w)?;
        let draw = match &mut self.learner {
            ActorLearner::Adam { .. } => None,
            ActorLearner::Variational(q) => Some(q.draw()),
        };
        let theta = flat(draw.as_ref().map_or(self.mean_actor(), |d| &d.theta))?;
        let actor_cache = self.actor.forward_cached(&theta, &batch.obs)?;
        let u = actor_cache.output.tanh()?;
        let critic_cache = self
            .critic
            .forward_cached(&w, &Tensor::cat(&[&batch.obs, &u], 1)?)?;
        let ones = Tensor::ones((m, 1), DType::F64, &Device::Cpu)?;
        let dq_du = self
            .critic
            .input_gradient(&w, &critic_cache, &ones)?
            .narrow(1, OBSERVATION, 1)?;
        let grad_f = (dq_du * (u.sqr()? - 1.0)?)?;
        let g: Vec<f64> =
            bdl_tensor::to_f64_vec(&self.actor.backward(&theta, &actor_cache, &grad_f)?)?
                .into_iter()
                .map(|g| g / m as f64)
                .collect();
        match (&mut self.learner, draw) {
            (ActorLearner::Adam { theta, adam }, _) => adam.step(theta, &g, self.config.actor_lr),
            (ActorLearner::Variational(q), Some(draw)) => {
                q.observe(&draw, &g, None)?;
                q.step()?;
            }
            (ActorLearner::Variational(_), None) => unreachable!("a variational actor draws"),
        }
        let rate = self.config.target_rate;
        let mean = self.mean_actor().to_vec();
        soft_update(&mut self.actor_target, &mean, rate);
        soft_update(&mut self.critic_target, &self.critic_w, rate);
        Ok(())
    }

    /// The mean perturbation standard deviation of the actor's weights (0 without a q).
    pub(crate) fn mean_sigma(&self) -> f64 {
        match &self.learner {
            ActorLearner::Adam { .. } => 0.0,
            ActorLearner::Variational(q) => {
                let var = q.posterior().var;
                var.iter().map(|v| v.sqrt()).sum::<f64>() / var.len() as f64
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_replay_buffer_overwrites_its_oldest_transition() {
        let mut replay = Replay::new(3);
        for i in 0..5 {
            replay.push([i as f64; 3], 0.0, i as f64, [0.0; 3]);
        }
        assert_eq!(replay.len(), 3);
        assert_eq!(replay.reward, [3.0, 4.0, 2.0]);
        let batch = replay.sample(8, &mut Seed(1).rng()).unwrap();
        assert_eq!(batch.obs_action.dims(), [8, 4]);
        let r = bdl_tensor::to_f64_vec(&batch.reward).unwrap();
        assert!(r.iter().all(|r| [2.0, 3.0, 4.0].contains(r)), "{r:?}");
    }
}
