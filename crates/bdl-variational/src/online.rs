//! A variational method step by step on any objective: [`Online`].
//!
//! [`fit`](crate::fit) drives a method over a data set with a likelihood. Some objectives are
//! not a likelihood over a fixed data set: a DDPG actor's −Q(s, μ_θ(s)) over a replay buffer
//! that grows, say. [`Online`] keeps the method's state and its perturbation stream and lets
//! the caller evaluate the gradient: draw θ = μ + σ∘ε ([`Online::draw`]), compute the
//! minibatch-mean gradient ĝ of the objective at θ (and, for VON and VOGN, the mean
//! per-example curvature), hand it back ([`Online::observe`]), and update after one or more
//! draws ([`Online::step`]). `fit` is this loop with the network's gradients.

use bdl_inference::{InvalidParam, Valid};
use bdl_tensor::ChaCha8Rng;

use crate::method::{Curvature, State, Stats};
use crate::{DiagGaussian, Error, Result, VariationalConfig};

/// A method's state, its perturbation stream and the draws observed since the last step.
///
/// The objective is read as the mean over N examples of a per-example loss ℓ_n (a negative
/// log-likelihood in [`fit`](crate::fit)), with the prior N(0, λ⁻¹ I) of the configuration:
/// λ̃ = λ/N in the updates and σ² = 1/(N(s + λ̃)) for the natural-gradient methods.
///
/// ```
/// use bdl_inference::Validate;
/// use bdl_variational::{Method, Online, VariationalConfig};
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // ℓ(θ) = ½(θ − 3)², a mean over N = 100 examples: the mean goes to 3.
/// let config = VariationalConfig::new(Method::vadam(0.1), 1.0, 1, 1).check()?;
/// let mut q = Online::new(vec![0.0], 100, &config)?;
/// for _ in 0..500 {
///     let draw = q.draw();
///     let grad = [draw.theta[0] - 3.0];
///     q.observe(&draw, &grad, None)?;
///     q.step()?;
/// }
/// assert!((q.mean()[0] - 3.0).abs() < 0.2);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct Online {
    state: State,
    curvature: Curvature,
    noise: ChaCha8Rng,
    lr_decay: Option<f64>,
    /// Sums over the observed draws of ĝ, ĝ∘ĝ, ĝ∘ε and ĥ.
    observed: Stats,
    draws: usize,
    steps: usize,
}

/// One weight sample θ = μ + σ∘ε of q, to evaluate the gradient at.
#[derive(Clone, Debug)]
pub struct Draw {
    /// θ = μ + σ∘ε.
    pub theta: Vec<f64>,
    /// ε ~ N(0, I).
    eps: Vec<f64>,
}

impl Drop for Draw {
    fn drop(&mut self) {
        bdl_tensor::recycle(std::mem::take(&mut self.theta));
        bdl_tensor::recycle(std::mem::take(&mut self.eps));
    }
}

/// sum += x elementwise, or sum = x when `first` (an empty `sum`, a mean the method does not use,
/// stays empty), in the widest vector instructions.
#[inline(always)]
fn add_or_set(sum: &mut [f64], first: bool, x: impl Iterator<Item = f64>) {
    bdl_tensor::vectorized(
        #[inline(always)]
        || {
            if first {
                sum.iter_mut().zip(x).for_each(|(sum, x)| *sum = x);
            } else {
                sum.iter_mut().zip(x).for_each(|(sum, x)| *sum += x);
            }
        },
    );
}

impl Online {
    /// The method of `config` over the parameters `mu0` for an objective that is a mean over
    /// `n` examples, with the configuration's prior and initial precisions, KL weight, subset,
    /// step-size decay (per [`step`](Self::step)) and seed (of the perturbations); its epochs,
    /// batch size and samples per step are the caller's to follow.
    ///
    /// Errors when a subset index is not below the number of parameters.
    pub fn new(mu0: Vec<f64>, n: usize, config: &Valid<VariationalConfig>) -> Result<Self> {
        let d = mu0.len();
        let lambda = config.prior_precision;
        let mut state = State::new(
            config.method.clone(),
            mu0,
            n,
            lambda,
            config.init_precision.unwrap_or(lambda),
            config.kl_weight,
        );
        if let Some(subset) = &config.subset {
            if let Some(&i) = subset.iter().find(|&&i| i >= d) {
                return Err(InvalidParam::new(
                    "subset",
                    format!("index {i}"),
                    format!("parameter indices below {d}"),
                )
                .into());
            }
            state.infer_only(subset);
        }
        let curvature = config.method.curvature();
        Ok(Self {
            state,
            curvature,
            noise: config.seed.fork("perturbation").rng(),
            lr_decay: config.lr_decay,
            observed: Stats::zeros(d, &config.method),
            draws: 0,
            steps: 0,
        })
    }

    /// θ = μ + σ∘ε with a fresh ε from the perturbation stream (σ = 0 where a parameter is
    /// held fixed).
    pub fn draw(&mut self) -> Draw {
        let (mu, sigma) = (&self.state.mu, self.state.sigma());
        // Buffers from the thread's pool, given back when the draw is dropped: a step then
        // allocates and zeroes nothing.
        let mut eps = bdl_tensor::recycled(mu.len());
        bdl_tensor::standard_normals(&mut self.noise, &mut eps);
        let mut theta = bdl_tensor::recycled(mu.len());
        bdl_tensor::vectorized(
            #[inline(always)]
            || {
                let terms = mu.iter().zip(sigma).zip(&eps);
                for (t, ((mu, sd), e)) in theta.iter_mut().zip(terms) {
                    *t = mu + sd * e;
                }
            },
        );
        Draw { theta, eps }
    }

    /// Records the gradient at `draw`: `grad` the minibatch mean (1/M) Σ_n ∇ℓ_n(θ), and for
    /// VON and VOGN `curvature` the minibatch mean of the per-example curvature (the GGN
    /// diagonal for VON, g_n∘g_n for VOGN; ignored by the other methods).
    ///
    /// Errors when a length is not the number of parameters, or when VON or VOGN gets no
    /// curvature.
    pub fn observe(&mut self, draw: &Draw, grad: &[f64], curvature: Option<&[f64]>) -> Result<()> {
        let d = self.state.mu.len();
        let length = |what: &'static str, len: usize| {
            if len == d {
                Ok(())
            } else {
                Err(InvalidParam::new(
                    what,
                    format!("{len} values"),
                    format!("one per parameter ({d})"),
                ))
            }
        };
        length("gradient", grad.len())?;
        length("draw", draw.eps.len())?;
        // The first draw of a step sets the sums, so nothing is zeroed between steps; one
        // vectorised pass over zipped slices per mean the method uses.
        let first = self.draws == 0;
        let o = &mut self.observed;
        if self.curvature != Curvature::None {
            let h = curvature.ok_or(Error::NoCurvature {
                method: self.state.method_name(),
            })?;
            length("curvature", h.len())?;
            add_or_set(&mut o.h, first, h.iter().copied());
        }
        add_or_set(&mut o.g, first, grad.iter().copied());
        add_or_set(&mut o.g_sq, first, grad.iter().map(|g| g * g));
        add_or_set(
            &mut o.g_eps,
            first,
            grad.iter().zip(&draw.eps).map(|(g, e)| g * e),
        );
        self.draws += 1;
        Ok(())
    }

    /// One update from the mean over the draws observed since the last step (the step size
    /// scaled by the configuration's decay 1 / (1 + t^κ) at step t, from 1).
    ///
    /// Errors when no draw was observed, and when the mean or the curvature stops being finite
    /// ([`Error::Diverged`]).
    pub fn step(&mut self) -> Result<()> {
        if self.draws == 0 {
            return Err(Error::NothingObserved);
        }
        let samples = self.draws as f64;
        if self.draws > 1 {
            let o = &mut self.observed;
            for v in [&mut o.g, &mut o.g_sq, &mut o.g_eps, &mut o.h] {
                bdl_tensor::vectorized(
                    #[inline(always)]
                    || v.iter_mut().for_each(|v| *v /= samples),
                );
            }
        }
        self.steps += 1;
        let lr_scale = self
            .lr_decay
            .map_or(1.0, |k| 1.0 / (1.0 + (self.steps as f64).powf(k)));
        let result = self.state.update(&self.observed, lr_scale);
        self.draws = 0;
        result
    }

    /// The mean μ.
    pub fn mean(&self) -> &[f64] {
        &self.state.mu
    }

    /// q(θ) = N(μ, diag σ²) as it stands.
    pub fn posterior(&self) -> DiagGaussian {
        self.state.posterior()
    }

    /// The updates taken.
    pub fn steps(&self) -> usize {
        self.steps
    }
}

#[cfg(test)]
mod tests {
    use bdl_inference::Validate;
    use bdl_tensor::Seed;

    use super::*;
    use crate::Method;

    fn config(method: Method) -> Valid<VariationalConfig> {
        VariationalConfig {
            seed: Seed(5),
            ..VariationalConfig::new(method, 2.0, 1, 1)
        }
        .check()
        .unwrap()
    }

    /// ℓ(θ) = ½ aθ² − bθ per example (a quadratic), so the gradient at θ is aθ − b and the
    /// curvature a: every method's mean reaches the posterior mean b/(a + λ/N) of N examples.
    #[test]
    fn every_method_reaches_the_mean_of_a_quadratic() {
        let (a, b, n) = (2.0, 3.0, 50);
        let exact = b / (a + 2.0 / n as f64);
        for method in [
            Method::Von {
                learning_rate: 0.2,
                beta: 0.5,
            },
            Method::Vogn {
                learning_rate: 0.02,
                beta: 0.5,
            },
            Method::vadam(0.05),
            Method::ivon(0.05),
            Method::Vprop {
                learning_rate: 0.01,
                beta: 0.1,
            },
        ] {
            let mut q = Online::new(vec![0.0], n, &config(method.clone())).unwrap();
            let mut late = 0.0;
            for t in 0..3000 {
                let draw = q.draw();
                let g = a * draw.theta[0] - b;
                let h = if method.name() == "VOGN" { g * g } else { a };
                q.observe(&draw, &[g], Some(&[h])).unwrap();
                q.step().unwrap();
                if t >= 2000 {
                    late += q.mean()[0] / 1000.0;
                }
            }
            // The mean of μ over the last 1,000 steps: the steps' noise averages out (its
            // standard error is below 0.01 for these step sizes), a bias would not.
            assert!(
                (late - exact).abs() < 0.05,
                "{}: {late} vs {exact}",
                method.name()
            );
        }
    }

    /// VON on a quadratic is exact: the precision N(s + λ̃) reaches Na + λ.
    #[test]
    fn von_finds_the_exact_variance_of_a_quadratic() {
        let (a, n) = (2.0, 50);
        let method = Method::Von {
            learning_rate: 0.5,
            beta: 0.5,
        };
        let mut q = Online::new(vec![1.0], n, &config(method)).unwrap();
        for _ in 0..200 {
            let draw = q.draw();
            q.observe(&draw, &[a * draw.theta[0]], Some(&[a])).unwrap();
            q.step().unwrap();
        }
        let var = q.posterior().var[0];
        let exact = 1.0 / (n as f64 * a + 2.0);
        assert!((var - exact).abs() < 1e-12 * exact, "{var} vs {exact}");
    }

    #[test]
    fn the_same_seed_draws_the_same_weights_and_misuse_is_an_error() {
        let mut q = Online::new(vec![0.0; 3], 10, &config(Method::vadam(0.1))).unwrap();
        let mut r = q.clone();
        assert_eq!(q.draw().theta, r.draw().theta);
        assert!(matches!(q.step(), Err(Error::NothingObserved)));
        let draw = q.draw();
        assert!(
            q.observe(&draw, &[1.0], None).is_err(),
            "one gradient for three"
        );
        let mut vogn = Online::new(
            vec![0.0],
            10,
            &config(Method::Vogn {
                learning_rate: 0.1,
                beta: 0.5,
            }),
        )
        .unwrap();
        let draw = vogn.draw();
        assert!(matches!(
            vogn.observe(&draw, &[1.0], None),
            Err(Error::NoCurvature { method: "VOGN" })
        ));
        let outside = VariationalConfig {
            subset: Some(vec![4]),
            ..VariationalConfig::new(Method::vadam(0.1), 1.0, 1, 1)
        }
        .check()
        .unwrap();
        assert!(Online::new(vec![0.0; 3], 10, &outside).is_err());
    }
}
