//! The floating-point types the sampler computes in.

use bdl_models::Activation;
use candle_core::WithDType;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// f32 or f64: the dtype of the parameters, in which the network is evaluated. Log-likelihoods,
/// log-priors and acceptance ratios are always accumulated in f64.
pub trait Real: WithDType + sealed::Sealed {
    /// eˣ.
    fn exp(self) -> Self;
    /// tanh x.
    fn tanh(self) -> Self;
}

impl Real for f32 {
    fn exp(self) -> Self {
        f32::exp(self)
    }
    fn tanh(self) -> Self {
        f32::tanh(self)
    }
}

impl Real for f64 {
    fn exp(self) -> Self {
        f64::exp(self)
    }
    fn tanh(self) -> Self {
        f64::tanh(self)
    }
}

/// h = φ(z) elementwise, with the formulas of [`Activation::apply`] (σ(z) = 1 / (1 + e⁻ᶻ)).
pub(crate) fn activate<T: Real>(act: Activation, z: &[T], h: &mut [T]) {
    let (zero, one) = (T::from_f64(0.0), T::from_f64(1.0));
    let pairs = h.iter_mut().zip(z);
    match act {
        Activation::Identity => h.copy_from_slice(z),
        Activation::Relu => pairs.for_each(|(h, &z)| *h = if z > zero { z } else { zero }),
        Activation::Tanh => pairs.for_each(|(h, &z)| *h = z.tanh()),
        Activation::Sigmoid => pairs.for_each(|(h, &z)| *h = one / (one + (zero - z).exp())),
    }
}
