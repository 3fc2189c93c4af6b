//! The error type of the method layer: one kind for divergence whatever method diverged, one for
//! a method asked to do what it cannot, and the method crates' other errors under the method's
//! name. The method's crate's error is the `source` (print the chain, as `anyhow`'s `{:#}`
//! does, to read both).

/// What can go wrong when fitting a [`MethodSpec`](crate::MethodSpec).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Training diverged (a non-finite loss, mean or curvature, or a step to non-finite
    /// parameters): what a hyper-parameter search counts as a lost candidate, whichever method
    /// it was.
    #[error("{method} diverged")]
    Diverged {
        /// The method, as [`MethodSpec::name`](crate::MethodSpec::name) gives it.
        method: &'static str,
        /// What diverged, from the method's crate.
        #[source]
        source: Box<bdl_inference::Error>,
    },

    /// The specification asks a method for something it does not do (a diagonal Laplace over a
    /// subnetwork, Gibbs on a network that is not an MLP, a subset given twice).
    #[error("{method} cannot {what}")]
    Unsupported {
        /// The method.
        method: &'static str,
        /// What it was asked to do.
        what: String,
    },

    /// Any other error of the method's crate (bad input, a non-positive-definite matrix, an I/O
    /// error), under the method's name.
    #[error("{method} failed")]
    Failed {
        /// The method.
        method: &'static str,
        /// The error of the method's crate.
        #[source]
        source: Box<bdl_inference::Error>,
    },
}

impl Error {
    /// Whether the fit failed by diverging.
    ///
    /// ```
    /// use bdl_methods::Error;
    /// let e = Error::Unsupported { method: "SWAG", what: "fit a subnetwork".into() };
    /// assert!(!e.is_divergence());
    /// assert_eq!(e.to_string(), "SWAG cannot fit a subnetwork");
    /// ```
    pub fn is_divergence(&self) -> bool {
        matches!(self, Self::Diverged { .. })
    }
}

/// Whether `cause`, an error of this layer or of any method crate (as found walking an error's
/// source chain, `anyhow`'s `chain()` say), is a divergence: for code that calls the method
/// crates directly and still wants the one question answered in one place.
///
/// ```
/// let e = bdl_inference::Error::NonFiniteStep { epoch: 2, step: 0 };
/// assert!(bdl_methods::diverged(&e));
/// let bad = bdl_inference::InvalidParam::new("epochs", 0, ">= 1");
/// assert!(!bdl_methods::diverged(&bad));
/// ```
pub fn diverged(cause: &(dyn std::error::Error + 'static)) -> bool {
    if let Some(e) = cause.downcast_ref::<Error>() {
        return e.is_divergence();
    }
    if let Some(e) = cause.downcast_ref::<bdl_inference::Error>() {
        return e.is_divergence();
    }
    if let Some(e) = cause.downcast_ref::<bdl_variational::Error>() {
        return match e {
            bdl_variational::Error::Diverged { .. } => true,
            bdl_variational::Error::Inference(e) => e.is_divergence(),
            _ => false,
        };
    }
    let inner = cause
        .downcast_ref::<bdl_baselines::Error>()
        .and_then(|e| match e {
            bdl_baselines::Error::Inference(e) => Some(e),
            _ => None,
        })
        .or_else(|| match cause.downcast_ref::<bdl_laplace::Error>() {
            Some(bdl_laplace::Error::Inference(e)) => Some(e),
            _ => None,
        })
        .or_else(|| match cause.downcast_ref::<bdl_mcmc::Error>() {
            Some(bdl_mcmc::Error::Inference(e)) => Some(e),
            _ => None,
        });
    inner.is_some_and(bdl_inference::Error::is_divergence)
}

/// The result type of the method layer.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// A method crate's result, lifted into the method layer's under the method's name, with its
/// divergences told apart from its other errors.
pub(crate) trait Lift<T> {
    fn lift(self, method: &'static str) -> Result<T>;
}

/// An error of the shared inference layer: divergence or not.
fn inference(method: &'static str, source: bdl_inference::Error) -> Error {
    let divergence = source.is_divergence();
    let source = Box::new(source);
    if divergence {
        Error::Diverged { method, source }
    } else {
        Error::Failed { method, source }
    }
}

impl<T> Lift<T> for std::result::Result<T, bdl_inference::Error> {
    fn lift(self, method: &'static str) -> Result<T> {
        self.map_err(|e| inference(method, e))
    }
}

impl<T> Lift<T> for std::result::Result<T, bdl_variational::Error> {
    fn lift(self, method: &'static str) -> Result<T> {
        self.map_err(|e| match e {
            bdl_variational::Error::Inference(e) => inference(method, e),
            e @ bdl_variational::Error::Diverged { .. } => Error::Diverged {
                method,
                source: Box::new(e.into()),
            },
            e => Error::Failed {
                method,
                source: Box::new(e.into()),
            },
        })
    }
}

/// The crates whose own errors never mean divergence: their `Inference` variant is classified,
/// the rest are failures.
macro_rules! lift_without_divergence {
    ($($krate:ident),+) => {$(
        impl<T> Lift<T> for std::result::Result<T, $krate::Error> {
            fn lift(self, method: &'static str) -> Result<T> {
                self.map_err(|e| match e {
                    $krate::Error::Inference(e) => inference(method, e),
                    e => Error::Failed { method, source: Box::new(e.into()) },
                })
            }
        }
    )+};
}

lift_without_divergence!(bdl_laplace, bdl_baselines, bdl_mcmc);

/// Errors of the layers below, which are failures (bad input, shapes, configuration).
macro_rules! lift_failure {
    ($($error:ty),+) => {$(
        impl<T> Lift<T> for std::result::Result<T, $error> {
            fn lift(self, method: &'static str) -> Result<T> {
                self.map_err(|e| Error::Failed { method, source: Box::new(e.into()) })
            }
        }
    )+};
}

lift_failure!(
    candle_core::Error,
    bdl_tensor::Error,
    bdl_models::Error,
    bdl_data::Error,
    bdl_inference::InvalidParam
);
