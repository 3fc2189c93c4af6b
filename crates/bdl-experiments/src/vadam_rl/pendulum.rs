//! The classic pendulum swing-up (Gym's `Pendulum-v1` dynamics), written out here so that the
//! experiment needs no simulator.
//!
//! State: the angle θ from upright and the angular velocity θ̇. Observation (cos θ, sin θ, θ̇).
//! Action: a torque u clipped to [−2, 2]. One step of dt = 0.05 (semi-implicit Euler, g = 10,
//! m = l = 1):
//!
//! θ̇' = clip(θ̇ + (3g/(2l) sin θ + 3u/(ml²)) dt, −8, 8),  θ' = θ + θ̇' dt,
//!
//! with reward −(norm(θ)² + 0.1 θ̇² + 0.001 u²), norm(θ) the angle wrapped to [−π, π). An episode
//! is 200 steps from θ ~ U(−π, π), θ̇ ~ U(−1, 1); the best return is near −150 (a swing-up
//! from hanging costs a few hundred), a policy that never swings up earns about −1,200 or less.

use std::f64::consts::PI;

use rand::Rng;

/// The largest torque |u|.
pub(crate) const MAX_TORQUE: f64 = 2.0;
/// The largest angular speed |θ̇|.
const MAX_SPEED: f64 = 8.0;
const DT: f64 = 0.05;
const GRAVITY: f64 = 10.0;
/// Steps per episode.
pub(crate) const EPISODE: usize = 200;
/// The length of an observation.
pub(crate) const OBSERVATION: usize = 3;

/// The pendulum's state.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Pendulum {
    /// θ, 0 upright.
    theta: f64,
    /// θ̇.
    theta_dot: f64,
}

/// θ wrapped to [−π, π).
fn wrapped(theta: f64) -> f64 {
    (theta + PI).rem_euclid(2.0 * PI) - PI
}

impl Pendulum {
    /// A start state θ ~ U(−π, π), θ̇ ~ U(−1, 1).
    pub(crate) fn reset(rng: &mut impl Rng) -> Self {
        Self {
            theta: rng.random_range(-PI..PI),
            theta_dot: rng.random_range(-1.0..1.0),
        }
    }

    /// (cos θ, sin θ, θ̇).
    pub(crate) fn observation(&self) -> [f64; OBSERVATION] {
        [self.theta.cos(), self.theta.sin(), self.theta_dot]
    }

    /// Applies torque `u` (clipped to ±2) for one step; returns the step's reward, computed at
    /// the state before the step.
    pub(crate) fn step(&mut self, u: f64) -> f64 {
        let u = u.clamp(-MAX_TORQUE, MAX_TORQUE);
        let reward = -(wrapped(self.theta).powi(2) + 0.1 * self.theta_dot.powi(2) + 0.001 * u * u);
        let accel = 1.5 * GRAVITY * self.theta.sin() + 3.0 * u;
        self.theta_dot = (self.theta_dot + accel * DT).clamp(-MAX_SPEED, MAX_SPEED);
        self.theta += self.theta_dot * DT;
        reward
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upright_at_rest_is_an_equilibrium_of_reward_zero() {
        let mut p = Pendulum {
            theta: 0.0,
            theta_dot: 0.0,
        };
        for _ in 0..10 {
            assert_eq!(p.step(0.0), 0.0);
        }
        assert_eq!(p.observation(), [1.0, 0.0, 0.0]);
    }

    /// One step worked by hand: θ = π/2 (horizontal), θ̇ = 1, u = 5 (clipped to 2):
    /// reward −((π/2)² + 0.1 + 0.004); θ̇' = 1 + (15 + 6)·0.05 = 2.05; θ' = π/2 + 0.1025.
    #[test]
    fn one_step_follows_the_dynamics() {
        let mut p = Pendulum {
            theta: PI / 2.0,
            theta_dot: 1.0,
        };
        let r = p.step(5.0);
        assert!((r + (PI * PI / 4.0 + 0.1 + 0.004)).abs() < 1e-12, "{r}");
        assert!((p.theta_dot - 2.05).abs() < 1e-12);
        assert!((p.theta - (PI / 2.0 + 0.1025)).abs() < 1e-12);
    }

    #[test]
    fn speed_is_clipped_and_angles_wrap() {
        let mut p = Pendulum {
            theta: 1.0,
            theta_dot: 7.9,
        };
        p.step(2.0);
        assert_eq!(p.theta_dot, MAX_SPEED);
        assert!((wrapped(3.0 * PI / 2.0) + PI / 2.0).abs() < 1e-12);
        assert!((wrapped(-PI) + PI).abs() < 1e-12);
        // Hanging at rest: the largest angle cost π², every step.
        let mut down = Pendulum {
            theta: PI,
            theta_dot: 0.0,
        };
        assert!((down.step(0.0) + PI * PI).abs() < 1e-9);
    }
}
