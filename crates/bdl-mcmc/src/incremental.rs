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
//! The batch is processed in tiles of [`TILE`] examples: all the work of a proposal on one tile
//! (the block's rows, the layers above, the log-likelihood of the tile's examples) touches a few
//! kilobytes, which stay in the L1 cache, and every inner loop runs along a contiguous row of
//! the tile with the branch-free [`Real::exp`] and [`Real::ln`], so it compiles to SIMD
//! instructions. Per example the log-likelihood is computed in T; the sum over the batch is
//! accumulated in f64, in a fixed order (so the same on every machine).
//!
//! A proposal is computed into a second set of layer buffers (only the touched rows of layer l
//! when the block touches at most half its nodes); accepting copies those rows back and swaps the
//! buffers of the layers above, rejecting restores the block's parameters. The kernel calls
//! [`BlockTarget::reset`] (a full forward pass) at every sweep, so rounding drift of the
//! incremental updates never outlives a sweep. Nothing is allocated inside a sweep.

use std::ops::Range;

use bdl_likelihoods::Likelihood;
use bdl_models::{Activation, Mlp, Model};

use crate::{Block, BlockTarget, Real};
use bdl_tensor::vectorized;

/// Evaluates `$body` with `$rows` bound to each group of eight consecutive rows of 0..`$n`,
/// then to the remaining rows in groups of four, two and one (as `[usize; Q]`), and `$v` to the
/// number of LANES-wide column vectors [`combine`] holds per row for that group: Q · V partial
/// sums fit in the registers (eight of them for f32 under AVX2).
macro_rules! by_rows {
    ($n:expr, |$rows:ident, $v:ident| $body:expr) => {{
        let n: usize = $n;
        let mut first = 0;
        while first + 8 <= n {
            const $v: usize = 1;
            let $rows: [usize; 8] = std::array::from_fn(|q| first + q);
            $body;
            first += 8;
        }
        if first + 4 <= n {
            const $v: usize = 1;
            let $rows: [usize; 4] = std::array::from_fn(|q| first + q);
            $body;
            first += 4;
        }
        if first + 2 <= n {
            const $v: usize = 2;
            let $rows: [usize; 2] = std::array::from_fn(|q| first + q);
            $body;
            first += 2;
        }
        if first < n {
            const $v: usize = 4;
            let $rows = [first];
            $body;
        }
    }};
}

/// The number of examples processed together (a multiple of [`LANES`]).
pub(crate) const TILE: usize = 256;

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

/// The network's shape and likelihood.
#[derive(Clone, Debug)]
struct Net {
    likelihood: Likelihood,
    widths: Vec<usize>,
    activations: Vec<Activation>,
    /// Flat offsets of each layer's weight and (if it has one) bias.
    offsets: Vec<(usize, Option<usize>)>,
}

impl Net {
    fn n_layers(&self) -> usize {
        self.offsets.len()
    }

    /// The weight matrix `[out][in]` and bias (if any) of layer `l` in `params`.
    fn layer<'a, T>(&self, params: &'a [T], l: usize) -> (&'a [T], Option<&'a [T]>) {
        let (w, b) = self.offsets[l];
        let (d_in, d_out) = (self.widths[l], self.widths[l + 1]);
        (
            &params[w..w + d_in * d_out],
            b.map(|b| &params[b..b + d_out]),
        )
    }
}

/// The data batch, feature-major.
#[derive(Clone, Debug)]
struct Batch<T> {
    /// The length of a row: the examples and the padding after them.
    len: usize,
    /// The number of examples.
    examples: usize,
    /// Inputs `[d₀][len]`.
    x: Vec<T>,
    /// Target numbers `[target width][len]` (the Gaussian's targets, the Bernoulli's 0 / 1).
    targets: Vec<T>,
    /// Class indices (the categorical likelihood).
    labels: Vec<usize>,
}

/// The columns `cols` of row `row` of a feature-major buffer with rows of `len`.
#[inline(always)]
fn at(row: usize, len: usize, cols: &Range<usize>) -> Range<usize> {
    row * len + cols.start..row * len + cols.end
}

/// A proposal awaiting accept or reject (the block's old values are in `IncrementalMlp::old`).
#[derive(Clone, Copy, Debug)]
struct Pending {
    block: usize,
    log_lik: f64,
}

/// An MLP's batch log-likelihood with cached activations (see the module documentation).
#[derive(Clone, Debug)]
pub(crate) struct IncrementalMlp<T> {
    net: Net,
    target_width: usize,
    plans: Vec<Plan>,
    params: Vec<T>,
    batch: Batch<T>,
    current: Vec<Buffers<T>>,
    proposed: Vec<Buffers<T>>,
    log_lik: f64,
    pending: Option<Pending>,
    /// The pending block's changes θ' − θ and old values θ.
    delta: Vec<T>,
    old: Vec<T>,
    /// One tile of h'_l − h_l for each node a partial block touches.
    diffs: Vec<T>,
    /// The weights of the rows being combined (see [`combine`]).
    gathered: Vec<T>,
    /// 2 · TILE numbers for one tile's log-likelihood.
    scratch: Vec<T>,
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
            .map(|block| plan(block, &offsets, &widths, mlp.n_layers()))
            .collect();
        let n_layers = offsets.len();
        Self {
            target_width: match likelihood {
                Likelihood::Gaussian { .. } => widths[n_layers],
                _ => 1,
            },
            net: Net {
                likelihood,
                activations: mlp.spec().activations.clone(),
                widths,
                offsets,
            },
            plans,
            params: Vec::new(),
            batch: Batch {
                len: 0,
                examples: 0,
                x: Vec::new(),
                targets: Vec::new(),
                labels: Vec::new(),
            },
            current: (0..n_layers).map(|_| Buffers::empty()).collect(),
            proposed: (0..n_layers).map(|_| Buffers::empty()).collect(),
            log_lik: 0.0,
            pending: None,
            delta: Vec::new(),
            old: Vec::new(),
            diffs: Vec::new(),
            gathered: Vec::new(),
            scratch: vec![T::from_f64(0.0); 2 * TILE],
        }
    }

    /// The number of target numbers per example (K for the Gaussian, 1 for a label).
    pub(crate) fn target_width(&self) -> usize {
        self.target_width
    }

    /// Loads the examples `indices` of the row-major inputs `x` (`[N][d₀]`) and target rows `y`
    /// as the data batch. The next [`reset`](BlockTarget::reset) evaluates on it.
    pub(crate) fn set_batch(&mut self, x: &[T], y: &[f64], indices: &[usize]) {
        vectorized(
            #[inline(always)]
            || self.load(x, y, indices),
        );
    }

    /// [`set_batch`](Self::set_batch), in the caller's instruction set.
    #[inline(always)]
    fn load(&mut self, x: &[T], y: &[f64], indices: &[usize]) {
        let (d, w, n) = (self.net.widths[0], self.target_width, indices.len());
        // Rows padded with zero examples to a whole number of 8 · LANES; the padding is evaluated
        // like the rest and left out of the log-likelihood.
        let b = n.next_multiple_of(8 * LANES);
        let zero = T::from_f64(0.0);
        let batch = &mut self.batch;
        (batch.len, batch.examples) = (b, n);
        batch.x.resize(d * b, zero);
        // Transposed in blocks of 16 examples × 16 inputs: 16 rows are read in step, each in
        // runs of 16 numbers, and every write fills 16 consecutive numbers.
        const S: usize = 16;
        for (c, chunk) in indices.chunks(S).enumerate() {
            let first = S * c;
            let mut j = 0;
            if let Ok(chunk) = <&[usize; S]>::try_from(chunk) {
                let rows = chunk.map(|i| &x[i * d..(i + 1) * d]);
                while j + S <= d {
                    let block: [[T; S]; S] =
                        std::array::from_fn(|r| rows[r][j..j + S].try_into().expect("S numbers"));
                    for (jj, start) in (j..j + S).map(|j| j * b + first).enumerate() {
                        let column: &mut [T; S] = (&mut batch.x[start..start + S])
                            .try_into()
                            .expect("S numbers");
                        *column = std::array::from_fn(|r| block[r][jj]);
                    }
                    j += S;
                }
            }
            for j in j..d {
                let column = &mut batch.x[j * b + first..j * b + first + chunk.len()];
                for (v, &i) in column.iter_mut().zip(chunk) {
                    *v = x[i * d + j];
                }
            }
        }
        batch.targets.resize(w * b, zero);
        for (n, &i) in indices.iter().enumerate() {
            for c in 0..w {
                batch.targets[c * b + n] = T::from_f64(y[i * w + c]);
            }
        }
        for rows in [&mut batch.x, &mut batch.targets] {
            rows.chunks_exact_mut(b).for_each(|row| row[n..].fill(zero));
        }
        batch.labels.clear();
        if let Likelihood::Categorical { .. } = self.net.likelihood {
            batch.labels.extend(indices.iter().map(|&i| y[i] as usize));
            batch.labels.resize(b, 0);
        }
        for (l, width) in self.net.widths[1..].iter().enumerate() {
            for buffers in [&mut self.current[l], &mut self.proposed[l]] {
                buffers.z.resize(width * b, zero);
                buffers.h.resize(width * b, zero);
            }
        }
        self.pending = None;
    }

    /// [`BlockTarget::reset`], in the caller's instruction set.
    #[inline(always)]
    fn forward(&mut self, theta: &[T]) -> f64 {
        self.params.clear();
        self.params.extend_from_slice(theta);
        self.pending = None;
        let mut log_lik = 0.0;
        for cols in self.tiles() {
            let len = self.batch.len;
            for l in 0..self.net.n_layers() {
                let (below, rest) = self.current.split_at_mut(l);
                let input = below.last().map_or(&self.batch.x[..], |prev| &prev.h[..]);
                dense_tile(
                    &self.net,
                    &self.params,
                    l,
                    input,
                    &mut rest[0],
                    &mut self.gathered,
                    len,
                    &cols,
                );
            }
            let out = &self.current.last().expect("an MLP has a layer").h;
            log_lik += log_lik_tile(&self.net, out, &self.batch, &cols, &mut self.scratch);
        }
        self.log_lik = log_lik;
        log_lik
    }

    /// [`BlockTarget::propose`], in the caller's instruction set.
    #[inline(always)]
    fn propose_all(&mut self, block: usize, values: &[T]) -> f64 {
        self.delta.clear();
        self.old.clear();
        for (&i, &v) in self.plans[block].indices.iter().zip(values) {
            self.delta.push(v - self.params[i]);
            self.old.push(std::mem::replace(&mut self.params[i], v));
        }
        // A plain loop: an iterator's `sum` would be compiled outside the vectorized context.
        let mut log_lik = 0.0;
        for cols in self.tiles() {
            log_lik += self.propose_tile(block, &cols);
        }
        self.pending = Some(Pending { block, log_lik });
        log_lik
    }

    /// The tiles of the batch.
    fn tiles(&self) -> impl Iterator<Item = Range<usize>> + use<T> {
        let len = self.batch.len;
        (0..len).step_by(TILE).map(move |s| s..(s + TILE).min(len))
    }

    /// The proposal of the pending block (its parameters already in `params`, its changes in
    /// `delta`) on the columns `cols`: its layer's rows, the layers above, and the tile's
    /// log-likelihood.
    #[inline(always)]
    fn propose_tile(&mut self, block: usize, cols: &Range<usize>) -> f64 {
        let Self {
            net,
            plans,
            params,
            batch,
            current,
            proposed,
            delta,
            diffs,
            gathered,
            scratch,
            ..
        } = self;
        let plan = &plans[block];
        let (l, len) = (plan.layer, batch.len);
        let at = |row: usize| at(row, len, cols);
        // The block's layer: each touched row is its current one plus Σ_j Δw_oj a_j, then Δb_o
        // (every other row copied unless the plan is partial).
        let input = if l == 0 { &batch.x } else { &current[l - 1].h };
        let (cur, new) = (&current[l], &mut proposed[l]);
        if !plan.partial {
            for o in 0..net.widths[l + 1] {
                new.z[at(o)].copy_from_slice(&cur.z[at(o)]);
                new.h[at(o)].copy_from_slice(&cur.h[at(o)]);
            }
        }
        for change in &plan.nodes {
            let (o, zero) = (change.node, T::from_f64(0.0));
            let bias = change.bias.map_or(zero, |pos| delta[pos]);
            // One row: sixty-four examples' partial sums (eight registers under AVX2; AVX-512
            // has the registers to spare for the input numbers besides).
            combine::<T, 1, 8>(
                new,
                [o],
                net.activations[l],
                |_, c| lanes(&cur.z[at(o)], c).map(|z| z + bias),
                (
                    change.weights.len(),
                    |k| &input[at(change.weights[k].0)],
                    |_, k| delta[change.weights[k].1],
                ),
                gathered,
                len,
                cols,
            );
        }
        // The layer above sees only the touched nodes' activations change: for a partial plan
        // it is updated by rank-one terms ([`rank_one_above`]) instead of re-evaluated.
        let mut first_full = l + 1;
        if plan.partial {
            rank_one_above(
                net, params, plan, current, proposed, diffs, gathered, len, cols,
            );
            first_full = l + 2;
        }
        for k in first_full..net.n_layers() {
            let (below, rest) = proposed.split_at_mut(k);
            dense_tile(
                net,
                params,
                k,
                &below[k - 1].h,
                &mut rest[0],
                gathered,
                len,
                cols,
            );
        }
        let out = &proposed.last().expect("an MLP has a layer").h;
        log_lik_tile(net, out, batch, cols, scratch)
    }
}

/// How `block` maps onto its layer of an MLP with these `offsets` and `widths`.
fn plan(
    block: &Block,
    offsets: &[(usize, Option<usize>)],
    widths: &[usize],
    n_layers: usize,
) -> Plan {
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
        let change = match nodes.iter_mut().position(|c| c.node == node) {
            Some(k) => &mut nodes[k],
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
        partial: block.layer + 1 < n_layers && 2 * nodes.len() <= n_nodes,
        nodes,
    }
}

/// The layer above a partial plan's layer l on the columns `cols`, where only the plan's
/// nodes changed: `z_{l+1} += Σ_o W_{l+1}[:, o] (h'_l[o] − h_l[o])` (d_{l+1} per node and
/// example) instead of re-evaluating it (d_l · d_{l+1}); `diffs` holds h'_l − h_l.
#[inline(always)]
fn rank_one_above<T: Real>(
    net: &Net,
    params: &[T],
    plan: &Plan,
    current: &[Buffers<T>],
    proposed: &mut [Buffers<T>],
    diffs: &mut Vec<T>,
    gathered: &mut Vec<T>,
    len: usize,
    cols: &Range<usize>,
) {
    let l = plan.layer;
    let at = |row: usize| at(row, len, cols);
    let (w, _) = net.layer(params, l + 1);
    let (d_in, d_out) = (net.widths[l + 1], net.widths[l + 2]);
    let (below, rest) = proposed.split_at_mut(l + 1);
    let (changed, next) = (&below[l], &mut rest[0]);
    let width = cols.len();
    diffs.resize(plan.nodes.len() * width, T::from_f64(0.0));
    for (change, diff) in plan.nodes.iter().zip(diffs.chunks_exact_mut(width)) {
        let o = change.node;
        for ((d, &new), &old) in diff
            .iter_mut()
            .zip(&changed.h[at(o)])
            .zip(&current[l].h[at(o)])
        {
            *d = new - old;
        }
    }
    let diffs: &[T] = diffs;
    let cur = &current[l + 1];
    by_rows!(d_out, |rows, V| {
        combine::<T, _, V>(
            next,
            rows,
            net.activations[l + 1],
            |q, c| lanes(&cur.z[at(rows[q])], c),
            (
                plan.nodes.len(),
                |k| &diffs[k * width..(k + 1) * width],
                |q, k| w[rows[q] * d_in + plan.nodes[k].node],
            ),
            gathered,
            len,
            cols,
        )
    });
}

/// Layer k on the columns `cols`: z = W a + b and h = φ(z), feature-major, from the layer's
/// `input` rows (each entry of z summed as b_o + w_o0 a_0 + w_o1 a_1 + …).
#[inline(always)]
fn dense_tile<T: Real>(
    net: &Net,
    params: &[T],
    k: usize,
    input: &[T],
    out: &mut Buffers<T>,
    gathered: &mut Vec<T>,
    len: usize,
    cols: &Range<usize>,
) {
    let (w, bias) = net.layer(params, k);
    let (d_in, d_out) = (net.widths[k], net.widths[k + 1]);
    let zero = T::from_f64(0.0);
    by_rows!(d_out, |rows, V| {
        combine::<T, _, V>(
            out,
            rows,
            net.activations[k],
            |q, _| [bias.map_or(zero, |b| b[rows[q]]); LANES],
            (
                d_in,
                |j| &input[at(j, len, cols)],
                |q, j| w[rows[q] * d_in + j],
            ),
            gathered,
            len,
            cols,
        )
    });
}

/// The number of examples one register holds (a multiple of every SIMD width: AVX2 holds eight
/// f32 or four f64).
const LANES: usize = 8;

/// The LANES numbers of `buffer` from `start`.
#[inline(always)]
fn lanes<T: Real>(buffer: &[T], start: usize) -> [T; LANES] {
    buffer[start..start + LANES]
        .try_into()
        .expect("LANES numbers")
}

/// For Q rows `rows` of a layer on the columns `cols` (a whole number of V · LANES):
///
/// ```text
/// z[r_q, c] = start(q, c) + Σ_{k < n} weight(q, k) · input(k)[c],   h[r_q, c] = φ(z[r_q, c])
/// ```
///
/// summed in that order, each term fused into the running sum (one rounding: [`Real::mul_add`]).
/// `start(q, c)` and `input(k)` are indexed from the tile's first column; `gathered` is scratch
/// for the n × Q weights. The Q × V × LANES partial sums live in registers while the terms
/// stream past, so each input number is loaded once per Q rows and no partial sum is stored
/// before it is complete; Q · V independent sums also hide the latency of the additions.
#[inline(always)]
fn combine<'a, T: Real, const Q: usize, const V: usize>(
    out: &mut Buffers<T>,
    rows: [usize; Q],
    act: Activation,
    start: impl Fn(usize, usize) -> [T; LANES],
    (n, input, weight): (usize, impl Fn(usize) -> &'a [T], impl Fn(usize, usize) -> T),
    gathered: &mut Vec<T>,
    len: usize,
    cols: &Range<usize>,
) {
    let width = cols.len();
    debug_assert_eq!(width % (V * LANES), 0);
    gathered.resize(n * Q, T::from_f64(0.0));
    let (weights, _) = gathered.as_chunks_mut::<Q>();
    for (k, w) in weights.iter_mut().enumerate() {
        for (q, w) in w.iter_mut().enumerate() {
            *w = weight(q, k);
        }
    }
    let weights = &weights[..n];
    let bases = rows.map(|r| r * len + cols.start);
    for c in (0..width).step_by(V * LANES) {
        // Filled by plain loops: `array::from_fn` is not always inlined, and a call that writes
        // the sums through a pointer keeps them in memory for the whole loop below.
        let zero = [T::from_f64(0.0); LANES];
        let mut acc = [[zero; V]; Q];
        for (q, acc) in acc.iter_mut().enumerate() {
            for (v, acc) in acc.iter_mut().enumerate() {
                *acc = start(q, c + v * LANES);
            }
        }
        for (k, w) in weights.iter().enumerate() {
            let row = &input(k)[c..c + V * LANES];
            let mut a = [zero; V];
            for (v, a) in a.iter_mut().enumerate() {
                *a = lanes(row, v * LANES);
            }
            for (acc, &w) in acc.iter_mut().zip(w) {
                for (acc, a) in acc.iter_mut().zip(&a) {
                    for (s, &a) in acc.iter_mut().zip(a) {
                        *s = w.mul_add(a, *s);
                    }
                }
            }
        }
        // Stored by value: a slice copy would take the sums' address, and every possibly
        // panicking bounds check inside the loop would then force the partial sums to memory.
        for (acc, base) in acc.into_iter().zip(bases) {
            for (v, acc) in acc.into_iter().enumerate() {
                let at = base + c + v * LANES;
                let dst: &mut [T; LANES] = (&mut out.z[at..at + LANES])
                    .try_into()
                    .expect("LANES numbers");
                *dst = acc;
            }
        }
    }
    // φ along whole rows of the tile (a long loop vectorises better than eight numbers).
    for base in bases {
        act.apply_to_slice(&out.z[base..base + width], &mut out.h[base..base + width]);
    }
}

/// Σ_{n ∈ cols} log p(y_n | f_n) for the network outputs `out` (feature-major `[K][len]`): each
/// example's term in T, their sum in f64. `scratch` holds 2 · TILE numbers.
///
/// Categorical: f_{y_n} − m_n − ln Σ_c exp(f_c − m_n) with m_n = max_c f_c; Bernoulli:
/// y f − max(f, 0) − ln(1 + e^{−|f|}); Gaussian: −‖y − f‖² / (2σ²) − K ln(2πσ²) / 2.
#[inline(always)]
fn log_lik_tile<T: Real>(
    net: &Net,
    out: &[T],
    batch: &Batch<T>,
    cols: &Range<usize>,
    scratch: &mut [T],
) -> f64 {
    let len = batch.len;
    let cols = &(cols.start..cols.end.min(batch.examples));
    let k = out.len() / len;
    let row = |c: usize| &out[at(c, len, cols)];
    let (zero, one) = (T::from_f64(0.0), T::from_f64(1.0));
    let (a, b) = scratch.split_at_mut(TILE);
    let (a, b) = (&mut a[..cols.len()], &mut b[..cols.len()]);
    match net.likelihood {
        Likelihood::Categorical { .. } => {
            // a = m, then b = Σ exp(f − m), then b = its log, then b = the log-likelihood.
            a.copy_from_slice(row(0));
            for c in 1..k {
                // The standard library's max (via candle's `VecOps`): one instruction, where a
                // select would become a masked store. A NaN is dropped here but reaches the sum.
                for (m, &f) in a.iter_mut().zip(row(c)) {
                    *m = m.max(f);
                }
            }
            b.fill(zero);
            for c in 0..k {
                for ((s, &f), &m) in b.iter_mut().zip(row(c)).zip(a.iter()) {
                    *s += (f - m).exp();
                }
            }
            b.iter_mut().for_each(|s| *s = s.ln());
            for ((s, &m), n) in b.iter_mut().zip(a.iter()).zip(cols.clone()) {
                *s = out[batch.labels[n] * len + n] - m - *s;
            }
            sum_f64(b)
        }
        Likelihood::Bernoulli => {
            let (f, y) = (row(0), &batch.targets[at(0, len, cols)]);
            for (s, &f) in b.iter_mut().zip(f) {
                let abs = if f < zero { zero - f } else { f };
                *s = (one + (zero - abs).exp()).ln();
            }
            for ((s, &f), &y) in b.iter_mut().zip(f).zip(y) {
                let relu = if f > zero { f } else { zero };
                *s = y * f - relu - *s;
            }
            sum_f64(b)
        }
        Likelihood::Gaussian { sigma } => {
            b.fill(zero);
            for c in 0..k {
                let y = &batch.targets[at(c, len, cols)];
                for ((r2, &f), &y) in b.iter_mut().zip(row(c)).zip(y) {
                    *r2 += (y - f) * (y - f);
                }
            }
            let norm = -0.5 * k as f64 * (2.0 * std::f64::consts::PI * sigma * sigma).ln();
            -0.5 * sum_f64(b) / (sigma * sigma) + norm * cols.len() as f64
        }
    }
}

/// Σ values in f64, in eight interleaved partial sums combined in a fixed order.
#[inline(always)]
fn sum_f64<T: Real>(values: &[T]) -> f64 {
    let mut lanes = [0.0f64; 8];
    let chunks = values.chunks_exact(8);
    let rest = chunks.remainder();
    for chunk in chunks {
        for (lane, v) in lanes.iter_mut().zip(chunk) {
            *lane += v.to_f64();
        }
    }
    for (lane, v) in lanes.iter_mut().zip(rest) {
        *lane += v.to_f64();
    }
    lanes.iter().sum()
}

impl<T: Real> BlockTarget for IncrementalMlp<T> {
    type Scalar = T;

    fn reset(&mut self, theta: &[T]) -> f64 {
        vectorized(
            #[inline(always)]
            || self.forward(theta),
        )
    }

    fn propose(&mut self, block: usize, values: &[T]) -> f64 {
        vectorized(
            #[inline(always)]
            || self.propose_all(block, values),
        )
    }

    fn accept(&mut self) {
        let pending = self.pending.take().expect("accept without a proposal");
        let plan = &self.plans[pending.block];
        let (l, len) = (plan.layer, self.batch.len);
        let swap_from = if plan.partial {
            let (current, proposed) = (&mut self.current[l], &self.proposed[l]);
            for change in &plan.nodes {
                let rows = change.node * len..(change.node + 1) * len;
                current.z[rows.clone()].copy_from_slice(&proposed.z[rows.clone()]);
                current.h[rows.clone()].copy_from_slice(&proposed.h[rows]);
            }
            l + 1
        } else {
            l
        };
        for k in swap_from..self.net.n_layers() {
            std::mem::swap(&mut self.current[k], &mut self.proposed[k]);
        }
        self.log_lik = pending.log_lik;
    }

    fn reject(&mut self) {
        let pending = self.pending.take().expect("reject without a proposal");
        for (&i, &v) in self.plans[pending.block].indices.iter().zip(&self.old) {
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
    fn problem(
        seed: u64,
        widths: &[usize],
        kind: usize,
        n: usize,
    ) -> (Mlp, Likelihood, Tensor, Tensor) {
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

    /// Runs random proposals (accepted or rejected at random) through the incremental target,
    /// on a batch of the last n − 4 of `n` examples in reverse order, and checks its
    /// log-likelihood against a full forward pass after every step. Returns the largest
    /// relative difference.
    fn max_relative_error<T: Real>(seed: u64, widths: &[usize], kind: usize, n: usize) -> f64 {
        let (mlp, lik, x, y) = problem(seed, widths, kind, n);
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
        let batch: Vec<usize> = (4..n).rev().collect();
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
            let err = max_relative_error::<f64>(seed, &widths, kind, 13);
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
            let err = max_relative_error::<f32>(seed, &widths, kind, 13);
            prop_assert!(err < 1e-4, "relative error {err}");
        }
    }

    /// `set_batch` lays the chosen rows out feature-major whatever the shape: 37 inputs (two
    /// blocks of 16 and five left over) and 53 examples in a shuffled order with repeats
    /// (three chunks of 16 and five left over), every entry equal to its source and the
    /// padding zero.
    #[test]
    fn batches_are_transposed_exactly() {
        let (d, n_rows) = (37, 70);
        let x: Vec<f64> = (0..n_rows * d).map(|v| v as f64 + 0.5).collect();
        let y: Vec<f64> = (0..n_rows).map(|i| (i % 3) as f64).collect();
        let mlp = Mlp::new(MlpSpec::new(&[d, 4, 3], Activation::Tanh)).unwrap();
        let blocks = Blocking::Node.blocks(mlp.layout()).unwrap();
        let mut target =
            IncrementalMlp::<f64>::new(&mlp, Likelihood::Categorical { classes: 3 }, &blocks);
        let indices: Vec<usize> = (0..53).map(|k| (k * 29 + 7) % n_rows).collect();
        target.set_batch(&x, &y, &indices);
        let batch = &target.batch;
        assert_eq!((batch.examples, batch.len % (8 * LANES)), (53, 0));
        for j in 0..d {
            let row = &batch.x[j * batch.len..(j + 1) * batch.len];
            for (n, &i) in indices.iter().enumerate() {
                assert_eq!(row[n], x[i * d + j], "input {j} of example {n}");
            }
            assert!(row[53..].iter().all(|&v| v == 0.0), "padding of input {j}");
        }
        let labels: Vec<usize> = indices.iter().map(|&i| i % 3).collect();
        assert_eq!(batch.labels[..53], labels[..]);
    }

    /// The same across tiles: 2 · TILE + 37 examples (two whole tiles and a padded partial
    /// one), every likelihood, both dtypes, with the tolerances above.
    #[test]
    fn incremental_equals_full_forward_across_tiles() {
        let n = 2 * TILE + 41;
        for kind in 0..3 {
            for seed in [1, 4] {
                let err = max_relative_error::<f64>(seed, &[3, 5, 4, 3], kind, n);
                assert!(err < 1e-12, "f64, likelihood {kind}, seed {seed}: {err}");
                let err = max_relative_error::<f32>(seed, &[3, 5, 4, 3], kind, n);
                assert!(err < 1e-4, "f32, likelihood {kind}, seed {seed}: {err}");
            }
        }
    }
}
