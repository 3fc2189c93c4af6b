//! Validated configuration, in the style of linfa's parameter guards.
//!
//! A configuration is a plain serde struct with `Default`. Checking it ([`Validate::check`])
//! returns a [`Valid`] wrapper, which only `check` can build; entry points take `&Valid<C>` and
//! never re-check. Errors are structured [`InvalidParam`]s that name the parameter, its value and
//! the requirement. A `Valid<C>` deserialises by validating, so a configuration read from a file
//! is checked on the way in.

use std::ops::Deref;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::InvalidParam;

/// A configuration that can check itself.
///
/// ```
/// use bdl_inference::{InvalidParam, Validate, require};
/// #[derive(Clone, Debug)]
/// struct Steps { count: usize }
/// impl Validate for Steps {
///     fn validate(&self) -> Result<(), InvalidParam> {
///         require(self.count >= 1, "count", self.count, ">= 1")
///     }
/// }
/// let valid = Steps { count: 3 }.check().unwrap();
/// assert_eq!(valid.count, 3); // read through Deref
/// let err = Steps { count: 0 }.check().unwrap_err();
/// assert_eq!((err.param.as_str(), err.value.as_str()), ("count", "0"));
/// ```
pub trait Validate: Sized {
    /// Checks every field; the first violation is the error.
    fn validate(&self) -> Result<(), InvalidParam>;

    /// The validated configuration.
    fn check(self) -> Result<Valid<Self>, InvalidParam> {
        self.validate()?;
        Ok(Valid(self))
    }
}

/// A configuration that passed [`Validate::check`]; read its fields through `Deref`.
#[derive(Clone, Debug, PartialEq)]
pub struct Valid<C>(C);

impl<C> Valid<C> {
    /// The configuration itself.
    pub fn into_inner(self) -> C {
        self.0
    }
}

impl<C> Deref for Valid<C> {
    type Target = C;
    fn deref(&self) -> &C {
        &self.0
    }
}

impl<C: Serialize> Serialize for Valid<C> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de, C: Validate + Deserialize<'de>> Deserialize<'de> for Valid<C> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        C::deserialize(deserializer)?
            .check()
            .map_err(serde::de::Error::custom)
    }
}

/// `Ok` if `ok`, else the [`InvalidParam`] of `param` = `value` with `requirement`.
pub fn require(
    ok: bool,
    param: &str,
    value: impl std::fmt::Display,
    requirement: &str,
) -> Result<(), InvalidParam> {
    if ok {
        Ok(())
    } else {
        Err(InvalidParam::new(param, value, requirement))
    }
}

/// `value` is finite and > 0.
pub fn positive(param: &str, value: f64) -> Result<(), InvalidParam> {
    require(
        value > 0.0 && value.is_finite(),
        param,
        value,
        "finite and > 0",
    )
}

/// `value` is finite and ≥ 0.
pub fn non_negative(param: &str, value: f64) -> Result<(), InvalidParam> {
    require(
        value >= 0.0 && value.is_finite(),
        param,
        value,
        "finite and >= 0",
    )
}

/// `value` lies in [0, 1) (a decay rate, a momentum, a probability below one).
pub fn unit_interval(param: &str, value: f64) -> Result<(), InvalidParam> {
    require((0.0..1.0).contains(&value), param, value, "in [0, 1)")
}

/// `value` ≥ 1 (a count).
pub fn at_least_one(param: &str, value: usize) -> Result<(), InvalidParam> {
    require(value >= 1, param, value, ">= 1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    struct Rate {
        rate: f64,
    }

    impl Validate for Rate {
        fn validate(&self) -> Result<(), InvalidParam> {
            unit_interval("rate", self.rate)
        }
    }

    #[test]
    fn deserialising_a_valid_config_checks_it() {
        let ok: Valid<Rate> = serde_json::from_str(r#"{"rate": 0.5}"#).unwrap();
        assert_eq!(ok.rate, 0.5);
        assert_eq!(serde_json::to_string(&ok).unwrap(), r#"{"rate":0.5}"#);
        let err = serde_json::from_str::<Valid<Rate>>(r#"{"rate": 1.5}"#).unwrap_err();
        assert!(err.to_string().contains("`rate` = 1.5"), "{err}");
    }

    #[test]
    fn helpers_name_the_requirement() {
        assert!(positive("a", 1.0).is_ok());
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert_eq!(
                positive("a", bad).unwrap_err().requirement,
                "finite and > 0"
            );
        }
        assert!(non_negative("a", 0.0).is_ok() && non_negative("a", -0.1).is_err());
        assert!(unit_interval("a", 0.0).is_ok() && unit_interval("a", 1.0).is_err());
        assert!(at_least_one("a", 1).is_ok() && at_least_one("a", 0).is_err());
        let nested = positive("learning_rate", 0.0).unwrap_err().within("map");
        assert_eq!(nested.param, "map.learning_rate");
    }
}
