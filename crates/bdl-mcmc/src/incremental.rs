//! Incremental evaluation of an MLP's batch log-likelihood under block changes.
//!
//! The target keeps, for the current parameters and data batch, every layer's pre-activation
//! z_l and activation h_l = φ_l(z_l), stored *feature-major* (row o of a layer is node o over the
//! B examples, contiguous), and the batch log-likelihood. A block of layer l changes only the
//! nodes it touches, and for each of them only
//!
//! ```text
//! z_l[o, :] += Σ_{j ∈ block} Δw_oj · a_l[j, :] + Δb_o        (B · |block| multiply-adds)
//! ```
//!
//! with a_l the layer's input (the data for the first layer); layers below l are untouched. The
//! next layer changes by a rank-one term per touched node, z_{l+1} += W_{l+1}\[:, o\] ⊗ Δh_l\[o\]
//! (B · d_{l+1} multiply-adds each), and the layers above that are re-evaluated. For a
//! first-layer node of MLP(784, 10, 10, 10, 10) at batch B that is B · 785 (a whole node) or
//! B · 79 (a sub-block) plus B · 210 for the rest, instead of B · 8180 for a full forward pass.
//!
//! A proposal is computed into a second set of layer buffers (only the touched rows of layer l
//! when the block touches at most half its nodes); accepting copies those rows back and swaps the
//! buffers of the layers above, rejecting restores the block's parameters. The log-likelihood is summed in
//! f64 whatever the dtype T. The kernel calls [`BlockTarget::reset`] (a full forward pass) at
//! every sweep, so rounding drift of the incremental updates never outlives a sweep.

use bdl_likelihoods::Likelihood;
use bdl_models::{Activation, Mlp, Model};

use crate::real::activate;
use crate::{Block, BlockTarget, Real};

/// z and h = φ(z) of one layer, feature-major `[width][batch]`.
#[derive(Clone, Debug)]
struct Buffers<T> {
    z: Vec<T>,
    h: Vec<T>,
}

impl<T> Buffers<T> {
    fn empty() -> Self {
        Self {
            z: Vec::new(),
            h: Vec::new(),
        }
    }
}

/// One node touched by a block: the positions in the block of its weights (with their input
/// index j) and of its bias.
#[derive(Clone, Debug)]
struct NodeChange {
    node: usize,
    weights: Vec<(usize, usize)>,
    bias: Option<usize>,
}

/// How a block maps onto its layer.
#[derive(Clone, Debug)]
struct Plan {
    layer: usize,
    indices: Vec<usize>,
    nodes: Vec<NodeChange>,
    /// Whether the block touches few enough nodes (at most half of a layer that is not the
    /// output layer) that only their rows are recomputed and the next layer is updated by
    /// rank-one terms, instead of copying the layer and re-evaluating the next one.
    partial: bool,
}

/// A proposal awaiting accept or reject.
#[derive(Clone, Debug)]
struct Pending<T> {
    block: usize,
    old: Vec<T>,
    log_lik: f64,
}

/// An MLP's batch log-likelihood with cached activations (see the module documentation).
#[derive(Clone, Debug)]
pub(crate) struct IncrementalMlp<T> {
    likelihood: Likelihood,
    widths: Vec<usize>,
    activations: Vec<Activation>,
    /// Flat offsets of each layer's weight and (if it has one) bias.
    offsets: Vec<(usize, Option<usize>)>,
    plans: Vec<Plan>,
    params: Vec<T>,
    /// The batch inputs, feature-major `[d₀][batch]`.
    x: Vec<T>,
    /// The batch targets, one row of `target_width` numbers per example.
    y: Vec<f64>,
    target_width: usize,
    batch: usize,
    current: Vec<Buffers<T>>,
    proposed: Vec<Buffers<T>>,
    log_lik: f64,
    pending: Option<Pending<T>>,
    /// Scratch: one example's outputs, one node's activation change.
    row: Vec<f64>,
    diff: Vec<T>,
}

impl<T: Real> IncrementalMlp<T> {
    /// The target of `mlp` under `likelihood` for the kernel's `blocks`, with no data yet.
    pub(crate) fn new(mlp: &Mlp, likelihood: Likelihood, blocks: &[Block]) -> Self {
        let layout = mlp.layout();
        let segments = layout.segments();
        let widths = mlp.spec().widths.clone();
        let offsets: Vec<(usize, Option<usize>)> = layout
            .layers()
            .iter()
            .map(|l| {
                (
                    segments[l.weight].offset,
                    l.bias.map(|b| segments[b].offset),
                )
            })
            .collect();
        let plans = blocks
            .iter()
            .map(|block| {
                let (w_off, b_off) = offsets[block.layer];
                let fan_in = widths[block.layer];
                let n_nodes = widths[block.layer + 1];
                let mut nodes: Vec<NodeChange> = Vec::new();
                for (pos, &i) in block.indices.iter().enumerate() {
                    let (node, input) = match b_off {
                        Some(b) if (b..b + n_nodes).contains(&i) => (i - b, None),
                        _ => ((i - w_off) / fan_in, Some((i - w_off) % fan_in)),
                    };
                    assert!(
                        i >= w_off && node < n_nodes,
                        "block index {i} is not in layer {}",
                        block.layer
                    );
                    let change = match nodes.iter_mut().find(|c| c.node == node) {
                        Some(c) => c,
                        None => {
                            nodes.push(NodeChange {
                                node,
                                weights: Vec::new(),
                                bias: None,
                            });
                            nodes.last_mut().expect("just pushed")
                        }
                    };
                    match input {
                        Some(j) => change.weights.push((j, pos)),
                        None => change.bias = Some(pos),
                    }
                }
                Plan {
                    layer: block.layer,
                    indices: block.indices.clone(),
                    partial: block.layer + 1 < mlp.n_layers() && 2 * nodes.len() <= n_nodes,
                    nodes,
                }
            })
            .collect();
        let n_layers = offsets.len();
        Self {
            likelihood,
            target_width: match likelihood {
                Likelihood::Gaussian { .. } => widths[n_layers],
                _ => 1,
            },
            activations: mlp.spec().activations.clone(),
            widths,
            offsets,
            plans,
            params: Vec::new(),
            x: Vec::new(),
            y: Vec::new(),
            batch: 0,
            current: (0..n_layers).map(|_| Buffers::empty()).collect(),
            proposed: (0..n_layers).map(|_| Buffers::empty()).collect(),
            log_lik: 0.0,
            pending: None,
            row: Vec::new(),
            diff: Vec::new(),
        }
    }

    /// The number of target numbers per example (K for the Gaussian, 1 for a label).
    pub(crate) fn target_width(&self) -> usize {
        self.target_width
    }

    /// Loads the examples `indices` of the row-major inputs `x` (`[N][d₀]`) and target rows `y`
    /// as the data batch. The next [`reset`](BlockTarget::reset) evaluates on it.
    pub(crate) fn set_batch(&mut self, x: &[T], y: &[f64], indices: &[usize]) {
        let (d, w, b) = (self.widths[0], self.target_width, indices.len());
        self.batch = b;
        self.x.resize(d * b, T::from_f64(0.0));
        for (n, &i) in indices.iter().enumerate() {
            for (j, &v) in x[i * d..(i + 1) * d].iter().enumerate() {
                self.x[j * b + n] = v;
            }
        }
        self.y.clear();
        for &i in indices {
            self.y.extend_from_slice(&y[i * w..(i + 1) * w]);
        }
        for (l, width) in self.widths[1..].iter().enumerate() {
            for buffers in [&mut self.current[l], &mut self.proposed[l]] {
                buffers.z.resize(width * b, T::from_f64(0.0));
                buffers.h.resize(width * b, T::from_f64(0.0));
            }
        }
        self.pending = None;
    }

    /// Σ_n log p(y_n | f_n) for the outputs `out` (feature-major `[K][batch]`).
    fn score(
        likelihood: &Likelihood,
        out: &[T],
        y: &[f64],
        width: usize,
        row: &mut Vec<f64>,
    ) -> f64 {
        let batch = y.len() / width;
        let k = out.len() / batch;
        row.resize(k, 0.0);
        (0..batch)
            .map(|n| {
                for (c, r) in row.iter_mut().enumerate() {
                    *r = out[c * batch + n].to_f64();
                }
                likelihood.log_lik_row(row, &y[n * width..(n + 1) * width])
            })
            .sum()
    }
}

/// The weight matrix `[out][in]` and bias (if any) of layer `l` in `params`.
fn layer_params<'a, T>(
    offsets: &[(usize, Option<usize>)],
    widths: &[usize],
    params: &'a [T],
    l: usize,
) -> (&'a [T], Option<&'a [T]>) {
    let (w, b) = offsets[l];
    let (d_in, d_out) = (widths[l], widths[l + 1]);
    (
        &params[w..w + d_in * d_out],
        b.map(|b| &params[b..b + d_out]),
    )
}

/// z = W a + b and h = φ(z) for a whole layer, feature-major: for each input row j, every node's
/// row gets w_oj · a_j (so each input row is read once).
fn dense<T: Real>(
    (w, bias): (&[T], Option<&[T]>),
    d_out: usize,
    input: &[T],
    act: Activation,
    out: &mut Buffers<T>,
) {
    let batch = out.z.len() / d_out;
    let d_in = w.len() / d_out;
    for (o, z) in out.z.chunks_exact_mut(batch).enumerate() {
        z.fill(bias.map_or(T::from_f64(0.0), |b| b[o]));
    }
    for j in 0..d_in {
        let a = &input[j * batch..(j + 1) * batch];
        for o in 0..d_out {
            axpy(w[o * d_in + j], a, &mut out.z[o * batch..(o + 1) * batch]);
        }
    }
    activate(act, &out.z, &mut out.h);
}

/// y += α x.
fn axpy<T: Real>(alpha: T, x: &[T], y: &mut [T]) {
    for (y, &x) in y.iter_mut().zip(x) {
        *y += alpha * x;
    }
}

impl<T: Real> BlockTarget for IncrementalMlp<T> {
    type Scalar = T;

    fn reset(&mut self, theta: &[T]) -> f64 {
        self.params.clear();
        self.params.extend_from_slice(theta);
        self.pending = None;
        for l in 0..self.offsets.len() {
            let wb = layer_params(&self.offsets, &self.widths, &self.params, l);
            let (below, rest) = self.current.split_at_mut(l);
            let input = below.last().map_or(&self.x[..], |prev| &prev.h[..]);
            let d_out = self.widths[l + 1];
            dense(wb, d_out, input, self.activations[l], &mut rest[0]);
        }
        let out = &self.current.last().expect("an MLP has a layer").h;
        self.log_lik = Self::score(
            &self.likelihood,
            out,
            &self.y,
            self.target_width,
            &mut self.row,
        );
        self.log_lik
    }

    fn propose(&mut self, block: usize, values: &[T]) -> f64 {
        let plan = &self.plans[block];
        let (l, batch) = (plan.layer, self.batch);
        // The block's layer: copy, then add the change of every touched node.
        let input = if l == 0 {
            &self.x[..]
        } else {
            &self.current[l - 1].h[..]
        };
        // A partial plan writes only the touched rows of the layer.
        let target = &mut self.proposed[l];
        if !plan.partial {
            target.z.copy_from_slice(&self.current[l].z);
            target.h.copy_from_slice(&self.current[l].h);
        }
        for change in &plan.nodes {
            let rows = change.node * batch..(change.node + 1) * batch;
            let z = &mut target.z[rows.clone()];
            if plan.partial {
                z.copy_from_slice(&self.current[l].z[rows.clone()]);
            }
            for &(j, pos) in &change.weights {
                let delta = values[pos] - self.params[plan.indices[pos]];
                axpy(delta, &input[j * batch..(j + 1) * batch], z);
            }
            if let Some(pos) = change.bias {
                let delta = values[pos] - self.params[plan.indices[pos]];
                z.iter_mut().for_each(|z| *z += delta);
            }
            activate(self.activations[l], z, &mut target.h[rows]);
        }
        let old = plan
            .indices
            .iter()
            .zip(values)
            .map(|(&i, &v)| std::mem::replace(&mut self.params[i], v))
            .collect();
        // The layer above sees only the touched nodes' activations change: for a partial plan,
        // z_{l+1} += Σ_o W_{l+1}[:, o] (h'_l[o] − h_l[o]) (B · d_{l+1} per node) instead of
        // re-evaluating it (B · d_l · d_{l+1}).
        let n_layers = self.offsets.len();
        let mut first_full = l + 1;
        if plan.partial {
            let (w, _) = layer_params(&self.offsets, &self.widths, &self.params, l + 1);
            let d_in = self.widths[l + 1];
            let (below, rest) = self.proposed.split_at_mut(l + 1);
            let (changed, next) = (&below[l], &mut rest[0]);
            next.z.copy_from_slice(&self.current[l + 1].z);
            self.diff.resize(batch, T::from_f64(0.0));
            for change in &plan.nodes {
                let rows = change.node * batch..(change.node + 1) * batch;
                for ((d, &new), &old) in self
                    .diff
                    .iter_mut()
                    .zip(&changed.h[rows.clone()])
                    .zip(&self.current[l].h[rows])
                {
                    *d = new - old;
                }
                for (p, z) in next.z.chunks_exact_mut(batch).enumerate() {
                    axpy(w[p * d_in + change.node], &self.diff, z);
                }
            }
            activate(self.activations[l + 1], &next.z, &mut next.h);
            first_full = l + 2;
        }
        // The layers above that, from the proposed activations.
        for k in first_full..n_layers {
            let wb = layer_params(&self.offsets, &self.widths, &self.params, k);
            let (below, rest) = self.proposed.split_at_mut(k);
            let d_out = self.widths[k + 1];
            dense(
                wb,
                d_out,
                &below[k - 1].h,
                self.activations[k],
                &mut rest[0],
            );
        }
        let out = &self.proposed.last().expect("an MLP has a layer").h;
        let log_lik = Self::score(
            &self.likelihood,
            out,
            &self.y,
            self.target_width,
            &mut self.row,
        );
        self.pending = Some(Pending {
            block,
            old,
            log_lik,
        });
        log_lik
    }

    fn accept(&mut self) {
        let pending = self.pending.take().expect("accept without a proposal");
        let plan = &self.plans[pending.block];
        let (l, batch) = (plan.layer, self.batch);
        let swap_from = if plan.partial {
            let (current, proposed) = (&mut self.current[l], &self.proposed[l]);
            for change in &plan.nodes {
                let rows = change.node * batch..(change.node + 1) * batch;
                current.z[rows.clone()].copy_from_slice(&proposed.z[rows.clone()]);
                current.h[rows.clone()].copy_from_slice(&proposed.h[rows]);
            }
            l + 1
        } else {
            l
        };
        for k in swap_from..self.offsets.len() {
            std::mem::swap(&mut self.current[k], &mut self.proposed[k]);
        }
        self.log_lik = pending.log_lik;
    }

    fn reject(&mut self) {
        let pending = self.pending.take().expect("reject without a proposal");
        for (&i, v) in self.plans[pending.block].indices.iter().zip(pending.old) {
            self.params[i] = v;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Blocking;
    use bdl_models::MlpSpec;
    use bdl_tensor::{Seed, SubBlocks};
    use candle_core::{DType, Device, Tensor};
    use proptest::prelude::*;
    use rand::Rng;

    /// ℓ̂ by candle: the model's full forward pass and the likelihood's tensor form.
    fn full_log_lik<T: Real>(
        mlp: &Mlp,
        lik: &Likelihood,
        theta: &[T],
        x: &Tensor,
        y: &Tensor,
    ) -> f64 {
        let theta = Tensor::new(theta, &Device::Cpu).unwrap();
        let f = mlp.forward(&theta, &x.to_dtype(T::DTYPE).unwrap()).unwrap();
        bdl_tensor::to_f64_vec(&lik.log_lik(&f, y).unwrap())
            .unwrap()
            .iter()
            .sum()
    }

    /// A random problem: MLP with the given widths and mixed activations (without biases for a
    /// quarter of the seeds), a likelihood of the right output width, N(0, 1) inputs, matching
    /// targets.
    fn problem(seed: u64, widths: &[usize], kind: usize) -> (Mlp, Likelihood, Tensor, Tensor) {
        let mut widths = widths.to_vec();
        let k = widths.last_mut().unwrap();
        let lik = match kind {
            0 => Likelihood::Gaussian { sigma: 0.7 },
            1 => {
                *k = 1;
                Likelihood::Bernoulli
            }
            _ => {
                *k = (*k).max(2);
                Likelihood::Categorical { classes: *k }
            }
        };
        let k = *k;
        let acts = [Activation::Sigmoid, Activation::Tanh, Activation::Relu];
        let mut spec = MlpSpec::new(&widths, Activation::Sigmoid);
        if seed.is_multiple_of(4) {
            spec = spec.without_bias();
        }
        for (l, a) in spec.activations.iter_mut().enumerate().rev().skip(1) {
            *a = acts[(l + seed as usize) % 3];
        }
        let mlp = Mlp::new(spec).unwrap();
        let mut rng = Seed(seed).fork("data").rng();
        let n = 13;
        let x = bdl_tensor::normal(&mut rng, (n, widths[0]), 0.0, 1.0, DType::F64, &Device::Cpu)
            .unwrap();
        let y = match lik {
            Likelihood::Gaussian { .. } => {
                bdl_tensor::normal(&mut rng, (n, k), 0.0, 1.0, DType::F64, &Device::Cpu).unwrap()
            }
            _ => {
                let labels: Vec<u32> = (0..n)
                    .map(|_| rng.random_range(0..k.max(2)) as u32)
                    .collect();
                Tensor::new(labels, &Device::Cpu).unwrap()
            }
        };
        (mlp, lik, x, y)
    }

    /// Runs random proposals (accepted or rejected at random) through the incremental target
    /// and checks its log-likelihood against a full forward pass after every step. Returns the
    /// largest relative difference.
    fn max_relative_error<T: Real>(seed: u64, widths: &[usize], kind: usize) -> f64 {
        let (mlp, lik, x, y) = problem(seed, widths, kind);
        let fine = Blocking::FinerNode {
            split: (0..mlp.n_layers())
                .map(|l| (l == 0).then_some(SubBlocks::Size(2)))
                .collect(),
        };
        let mut blocks = Blocking::Layer.blocks(mlp.layout()).unwrap();
        blocks.extend(Blocking::Node.blocks(mlp.layout()).unwrap());
        blocks.extend(fine.blocks(mlp.layout()).unwrap());
        let mut target = IncrementalMlp::<T>::new(&mlp, lik, &blocks);
        let n = x.dims()[0];
        let x_rows: Vec<T> = x
            .to_dtype(T::DTYPE)
            .unwrap()
            .flatten_all()
            .unwrap()
            .to_vec1()
            .unwrap();
        let y_rows = lik.target_rows(&y, n, mlp.n_outputs()).unwrap();
        let mut rng = Seed(seed).fork("steps").rng();
        // A batch of 9 of the 13 examples, out of order.
        let batch: Vec<usize> = vec![12, 0, 5, 3, 7, 1, 11, 8, 2];
        target.set_batch(&x_rows, &y_rows, &batch);
        let idx = Tensor::new(
            batch.iter().map(|&i| i as u32).collect::<Vec<_>>(),
            &Device::Cpu,
        )
        .unwrap();
        let (xb, yb) = (
            x.index_select(&idx, 0).unwrap(),
            y.index_select(&idx, 0).unwrap(),
        );
        let init = mlp.init(Seed(seed), T::DTYPE, &Device::Cpu).unwrap();
        let mut theta: Vec<T> = init.to_vec1().unwrap();
        let mut worst: f64 = 0.0;
        let mut check = |ll: f64, theta: &[T]| {
            let full = full_log_lik(&mlp, &lik, theta, &xb, &yb);
            worst = worst.max((ll - full).abs() / (1.0 + full.abs()));
        };
        check(target.reset(&theta), &theta);
        for _ in 0..60 {
            let b = rng.random_range(0..blocks.len());
            let values: Vec<T> = blocks[b]
                .indices
                .iter()
                .map(|&i| T::from_f64(theta[i].to_f64() + rng.random_range(-1.0..1.0)))
                .collect();
            let mut proposed = theta.clone();
            for (&i, &v) in blocks[b].indices.iter().zip(&values) {
                proposed[i] = v;
            }
            let ll = target.propose(b, &values);
            check(ll, &proposed);
            if rng.random_bool(0.5) {
                target.accept();
                theta = proposed;
            } else {
                target.reject();
            }
            check(target.log_lik, &theta);
        }
        worst
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// After any sequence of accepted and rejected layer, node and sub-block proposals, the
        /// incremental log-likelihood equals candle's full forward pass and tensor likelihood.
        /// In f64 both sum the same products in different orders over a handful of layers of
        /// width ≤ 6 and 9 examples: relative agreement to 1e-12 (observed ~1e-15).
        #[test]
        fn incremental_equals_full_forward_f64(
            seed in any::<u64>(),
            widths in proptest::collection::vec(1usize..6, 2..5),
            kind in 0usize..3,
        ) {
            let err = max_relative_error::<f64>(seed, &widths, kind);
            prop_assert!(err < 1e-12, "relative error {err}");
        }

        /// The same in f32 (the network in f32, the likelihood in f64): f32 rounding of
        /// pre-activations of size ~10 is ~1e-6, so relative agreement to 1e-4.
        #[test]
        fn incremental_equals_full_forward_f32(
            seed in any::<u64>(),
            widths in proptest::collection::vec(1usize..6, 2..5),
            kind in 0usize..3,
        ) {
            let err = max_relative_error::<f32>(seed, &widths, kind);
            prop_assert!(err < 1e-4, "relative error {err}");
        }
    }
}
