//! The shared tensor layer of bdl.
//!
//! This is the only crate that knows candle's internals and the faer interop. It holds
//!
//! - [`ParamLayout`]: ordered named segments over one flat parameter vector, in PyTorch
//!   `state_dict` order, with views by layer, node and finer sub-block, and a weights-only mask;
//! - [`Seed`] and the tensor fills [`normal`], [`uniform`], [`bernoulli`]: every random number in
//!   bdl comes from a seeded ChaCha8 stream;
//! - [`with_mat_ref`], [`to_mat`], [`from_mat`]: candle ⇄ faer, zero-copy where possible;
//! - [`save_safetensors`], [`load_safetensors`], [`read_sidecar`]: checkpoints with a JSON sidecar;
//! - [`GatherIndex`], [`gather_columns`], [`scatter_add_columns`]: columns gathered through a
//!   fixed table (im2col, with empty entries for zero padding) and the adjoint scatter-add
//!   (col2im), as differentiable candle ops;
//! - [`check_finite`], [`check_shape`]: typed errors for bad input;
//! - [`Real`] (f32 or f64 with branch-free `exp` and `ln`), [`vectorized`] (a kernel compiled for
//!   the widest vector instructions the processor has) and [`elements`] (a CPU tensor's elements as a slice, without a copy): what the workspace's
//!   slice kernels (the MLP's passes, the Gibbs evaluator) are written with;
//! - [`recycled`] and [`recycle`]: large buffers reused within a thread, call after call;
//! - [`Threads`]: a scoped pool that bounds the threads of every parallel computation;
//! - [`host_kernels`] and [`with_candle_ops`]: which of an op's two routes runs (its host
//!   kernel on the CPU, candle's operations elsewhere), and the switch that checks the second on
//!   the CPU.
//!
//! Sibling crates: `bdl-data` (datasets), `bdl-likelihoods` (likelihoods and predictives),
//! `bdl-models` (MLP and CNN with per-example products), and the inference crates built on them.

mod custom;
mod error;
mod finite;
mod gather;
mod gaussian;
mod interop;
mod io;
mod keystream;
mod layout;
mod pool;
mod real;
mod rng;
mod route;
mod rows;
mod threads;

pub use candle_core::{DType, Device, Tensor};
pub use custom::run_on_reals;
pub use error::{Error, Result};
pub use finite::{all_finite, check_finite, check_shape};
pub use gather::{GatherIndex, gather_columns, scatter_add_columns};
pub use gaussian::{standard_normal_cdf, standard_normals};
pub use interop::{Elements, elements, from_mat, to_f64_vec, to_mat, with_mat_ref};
pub use io::{load_safetensors, read_sidecar, save_safetensors, sidecar_path, write_atomically};
pub use layout::{Layer, ParamLayout, Segment, SubBlocks};
pub use pool::{recycle, recycled};
pub use rand_chacha::ChaCha8Rng;
pub use real::{Real, vector_bytes, vectorized};
pub use rng::{Seed, bernoulli, bernoulli_values, normal, uniform};
pub use route::{device, host_kernels, with_candle_ops};
pub use rows::select_rows;
pub use threads::{Threads, current_threads};
