//! Property tests of the public API of `bdl-likelihoods`.
//!
//! Random inputs come from `u64` seeds drawn by proptest and fed to `Seed(s).rng()` (ChaCha8),
//! so a failing case is reproducible from its seed. Every tolerance is stated and justified
//! where it is used.

mod common;
mod errors;
mod likelihoods;
mod links;
mod predictive;
