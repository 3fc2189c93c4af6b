//! The error type of the variational crate.

/// What can go wrong when fitting a variational posterior.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An error of the shared inference layer (configuration, data, model, likelihood).
    #[error(transparent)]
    Inference(#[from] bdl_inference::Error),

    /// An iterative optimisation stopped before reaching its tolerance.
    #[error("{what} did not fall below {tolerance} in {steps} steps")]
    NotConverged {
        /// What was being driven to the tolerance.
        what: &'static str,
        /// The tolerance.
        tolerance: f64,
        /// The steps taken.
        steps: usize,
    },

    /// The variational mean or a curvature estimate stopped being finite.
    #[error("{method} diverged at step {step}: a non-finite {what} (lower the learning rate)")]
    Diverged {
        /// The method's name.
        method: &'static str,
        /// The update step (from 1).
        step: usize,
        /// What became non-finite.
        what: &'static str,
    },

    /// VON or VOGN was given a gradient without the curvature its update needs.
    #[error("{method} needs the minibatch-mean curvature with every gradient")]
    NoCurvature {
        /// The method's name.
        method: &'static str,
    },

    /// An online step was asked for before any gradient was observed.
    #[error("an update needs at least one observed gradient since the last one")]
    NothingObserved,
}

bdl_inference::method_error!(Error, "bdl-variational");

/// The result type of the variational crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;
