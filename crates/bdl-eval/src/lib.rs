//! Evaluation for bdl: what a [`Predictive`](bdl_likelihoods::Predictive) is worth on test data,
//! and how results are shown.
//!
//! - [`metrics`]: RMSE and test log-likelihood for regression; accuracy, NLL, Brier score and
//!   expected calibration error for classification; mean ± standard error over repeats.
//! - [`recalibrate`]: temperature scaling and widening on held-out data, split conformal sets
//!   and intervals, the mutual information (BALD) of a posterior's components.
//! - [`plot`]: small, dependency-free SVG figures (lines, ± bands, points; panels in a grid).
//! - [`stats`]: medians and the paired t-test over repeated runs.
//! - [`table`]: Markdown tables.

pub mod metrics;
pub mod plot;
pub mod recalibrate;
pub mod stats;
pub mod table;

mod error;

pub use error::{Error, Result};
