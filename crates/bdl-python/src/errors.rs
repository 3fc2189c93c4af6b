//! `bdl.BdlError`: every Rust error as one Python exception whose message is the error and
//! its causes, as the Rust side prints them.

use pyo3::PyErr;
use pyo3::exceptions::PyValueError;

pyo3::create_exception!(
    bdl,
    BdlError,
    PyValueError,
    "An error of bdl: bad input (naming the argument), a damaged file (naming it), a diverged \
     fit. The message is the Rust error followed by its causes."
);

/// The error and its causes, joined by ": " (the facade tests' form); a cause whose text the
/// message already ends with (an error that prints its source) is not repeated.
pub(crate) fn message(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !out.ends_with(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cause = c.source();
    }
    out
}

/// A bad argument the bindings themselves find.
pub(crate) fn invalid(text: String) -> PyErr {
    BdlError::new_err(text)
}

/// `?` from any Rust error to a `BdlError`.
pub(crate) trait OrRaise<T> {
    /// The value, or the error as a `BdlError`.
    fn or_raise(self) -> Result<T, PyErr>;
}

impl<T, E: std::error::Error + 'static> OrRaise<T> for Result<T, E> {
    fn or_raise(self) -> Result<T, PyErr> {
        self.map_err(|e| BdlError::new_err(message(&e)))
    }
}
