//! The settings of each profile: the benchmarks, widths, subnetwork sizes and the λ grid.

use bdl_data::uci::Benchmark;
use serde::Serialize;

use super::LAMBDAS;
use crate::Profile;

#[derive(Debug, Serialize)]
pub(super) struct Settings {
    pub(super) benchmarks: Vec<Benchmark>,
    /// The most splits of each kind per data set.
    pub(super) splits: usize,
    pub(super) widths: Vec<usize>,
    /// The most epochs of MAP training, and the patience of its early stopping.
    pub(super) epochs: usize,
    pub(super) patience: usize,
    /// The fraction of each training split held out for early stopping and λ.
    pub(super) validation_fraction: f64,
    /// The candidate prior precisions of the validation search.
    pub(super) lambdas: Vec<f64>,
}

impl Settings {
    pub(super) fn of(profile: Profile) -> Self {
        let all = vec![Benchmark::Wine, Benchmark::Kin8nm, Benchmark::Protein];
        let (benchmarks, splits, widths, epochs, patience) = match profile {
            Profile::Smoke => (vec![Benchmark::Wine], 2, vec![5, 10], 3, 2),
            Profile::Quick => (all, 2, vec![10, 20, 50], 150, 20),
            Profile::Paper => (all, usize::MAX, vec![10, 20, 50, 100], 1000, 50),
        };
        Self {
            benchmarks,
            splits,
            widths,
            epochs,
            patience,
            validation_fraction: 0.15,
            lambdas: LAMBDAS.to_vec(),
        }
    }
}
