//! Settings between Python and serde: a dict (or a JSON string) in, a dict out, through the
//! standard library's `json` module, so that a Python dict is exactly the JSON a Rust user
//! writes.

use pyo3::prelude::*;
use pyo3::types::PyString;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::errors::{OrRaise as _, invalid};

/// `value` (a dict, list, number or a JSON string) as a `T`, the error naming `what`.
pub(crate) fn parse<T: DeserializeOwned>(value: &Bound<'_, PyAny>, what: &str) -> PyResult<T> {
    let text: String = if value.is_instance_of::<PyString>() {
        value.extract()?
    } else {
        value
            .py()
            .import("json")?
            .call_method1("dumps", (value,))?
            .extract()?
    };
    serde_json::from_str(&text).map_err(|e| invalid(format!("{what}: {e}")))
}

/// `value` as the Python object of its JSON form (dicts, lists, numbers, strings).
pub(crate) fn to_python<'py, T: Serialize>(
    py: Python<'py>,
    value: &T,
) -> PyResult<Bound<'py, PyAny>> {
    let text = serde_json::to_string(value).or_raise()?;
    py.import("json")?.call_method1("loads", (text,))
}
