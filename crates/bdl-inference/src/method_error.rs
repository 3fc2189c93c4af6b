//! [`method_error!`](macro@crate::method_error): the conversions between an inference crate's error
//! type and this crate's.

/// Connects an inference crate's error enum to [`Error`](crate::Error).
///
/// The enum must have a variant `Inference(bdl_inference::Error)`. The macro implements
/// `From` into the enum for every error of the layers below (tensor, model, likelihood, data,
/// candle, [`InvalidParam`](crate::InvalidParam)), each wrapped in `Inference`, so that `?`
/// works on them; and `From<enum> for bdl_inference::Error`, which unwraps `Inference` and
/// passes the crate's own variants as [`Error::Method`](crate::Error::Method) named `$method`,
/// so that the crate's errors cross the [`Posterior`](crate::Posterior) trait.
///
/// ```
/// #[derive(Debug, thiserror::Error)]
/// enum Error {
///     #[error(transparent)]
///     Inference(#[from] bdl_inference::Error),
///     #[error("the chain stalled")]
///     Stalled,
/// }
/// bdl_inference::method_error!(Error, "my-sampler");
///
/// let e: Error = bdl_inference::InvalidParam::new("steps", 0, ">= 1").into();
/// assert!(matches!(e, Error::Inference(bdl_inference::Error::InvalidParam(_))));
/// let up: bdl_inference::Error = Error::Stalled.into();
/// assert_eq!(up.to_string(), "my-sampler: the chain stalled");
/// ```
#[macro_export]
macro_rules! method_error {
    ($error:ident, $method:literal) => {
        impl ::core::convert::From<$error> for $crate::Error {
            fn from(e: $error) -> Self {
                match e {
                    $error::Inference(e) => e,
                    other => $crate::Error::Method {
                        method: $method,
                        source: ::std::boxed::Box::new(other),
                    },
                }
            }
        }
        $crate::method_error!(@lower $error,
            $crate::__layers::bdl_tensor::Error,
            $crate::__layers::bdl_models::Error,
            $crate::__layers::bdl_likelihoods::Error,
            $crate::__layers::bdl_data::Error,
            $crate::__layers::candle_core::Error,
            $crate::InvalidParam
        );
    };
    (@lower $error:ident, $($lower:ty),+) => {
        $(
            impl ::core::convert::From<$lower> for $error {
                fn from(e: $lower) -> Self {
                    $error::Inference(e.into())
                }
            }
        )+
    };
}
