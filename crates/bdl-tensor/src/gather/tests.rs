use candle_core::{DType, Device, Tensor, Var};
use proptest::prelude::*;
use rand::Rng;

use super::*;
use crate::{Seed, normal};

/// A random R × C table into `source_len` columns, entries empty with probability `empty`.
fn random_index(
    seed: Seed,
    rows: usize,
    cols: usize,
    source_len: usize,
    empty: f64,
) -> GatherIndex {
    let mut rng = seed.rng();
    GatherIndex::from_fn(rows, cols, source_len, |_, _| {
        (!rng.random_bool(empty)).then(|| rng.random_range(0..source_len))
    })
    .unwrap()
}

/// The table entry (r, c) as an option.
fn entry(index: &GatherIndex, r: usize, c: usize) -> Option<usize> {
    let m = index.table[r * index.cols + c];
    (m != EMPTY).then_some(m as usize)
}

fn randn(seed: Seed, shape: (usize, usize), dtype: DType) -> Tensor {
    normal(&mut seed.rng(), shape, 0.0, 1.0, dtype, &Device::Cpu).unwrap()
}

fn values(t: &Tensor) -> Vec<f64> {
    crate::to_f64_vec(t).unwrap()
}

/// G x by the definition, one element at a time.
fn naive_gather(x: &Tensor, index: &GatherIndex) -> Vec<f64> {
    let n = x.dims()[0];
    let x: Vec<Vec<f64>> = x.to_dtype(DType::F64).unwrap().to_vec2().unwrap();
    let mut out = Vec::new();
    for e in 0..n {
        for r in 0..index.rows() {
            for c in 0..index.cols() {
                out.push(entry(index, r, c).map_or(0.0, |m| x[e][m]));
            }
        }
    }
    out
}

/// Gᵀ g by the definition, one element at a time.
fn naive_scatter_add(g: &Tensor, index: &GatherIndex) -> Vec<f64> {
    let n = g.dims()[0] / index.rows();
    let g: Vec<Vec<f64>> = g.to_dtype(DType::F64).unwrap().to_vec2().unwrap();
    let mut out = vec![0.0; n * index.source_len()];
    for e in 0..n {
        for r in 0..index.rows() {
            for c in 0..index.cols() {
                if let Some(m) = entry(index, r, c) {
                    out[e * index.source_len() + m] += g[e * index.rows() + r][c];
                }
            }
        }
    }
    out
}

fn dot(a: &Tensor, b: &Tensor) -> f64 {
    values(&(a * b).unwrap()).iter().sum()
}

/// Random geometry: N examples, M source columns, an R × C table, the share of empty entries.
fn geometry() -> impl Strategy<Value = (usize, usize, usize, usize, f64)> {
    (0usize..5, 1usize..12, 1usize..8, 1usize..8, 0.0..0.5f64)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Gathering copies elements, so it equals the naive loop exactly, in both dtypes; a
    /// transposed (strided) input gives the same.
    #[test]
    fn gather_matches_the_naive_loop(
        (n, m, rows, cols, empty) in geometry(), f64_: bool, seed in any::<u64>(),
    ) {
        let seed = Seed(seed);
        let dtype = if f64_ { DType::F64 } else { DType::F32 };
        let index = random_index(seed.fork("index"), rows, cols, m, empty);
        let x = randn(seed.fork("x"), (n, m), dtype);
        let gx = gather_columns(&x, &index).unwrap();
        prop_assert_eq!(gx.dims(), &[n * rows, cols]);
        prop_assert_eq!(gx.dtype(), dtype);
        prop_assert_eq!(values(&gx), naive_gather(&x, &index));
        let strided = x.t().unwrap().contiguous().unwrap().t().unwrap();
        prop_assert_eq!(values(&gather_columns(&strided, &index).unwrap()), values(&gx));
    }

    /// The scatter-add equals the naive loop (to rounding: sums in another order) and is the
    /// adjoint of the gather: ⟨G x, g⟩ = ⟨x, Gᵀ g⟩.
    #[test]
    fn scatter_add_is_the_adjoint(
        (n, m, rows, cols, empty) in geometry(), f64_: bool, seed in any::<u64>(),
    ) {
        let seed = Seed(seed);
        let dtype = if f64_ { DType::F64 } else { DType::F32 };
        // Sums of at most N·R·C < 200 products of O(1) terms: rounding ~1e-5 relative in f32,
        // ~1e-14 in f64.
        let tol = if f64_ { 1e-12 } else { 1e-4 };
        let index = random_index(seed.fork("index"), rows, cols, m, empty);
        let x = randn(seed.fork("x"), (n, m), dtype);
        let g = randn(seed.fork("g"), (n * rows, cols), dtype);
        let gtg = scatter_add_columns(&g, &index).unwrap();
        prop_assert_eq!(gtg.dims(), &[n, m]);
        for (a, b) in values(&gtg).iter().zip(naive_scatter_add(&g, &index)) {
            prop_assert!((a - b).abs() <= tol * (1.0 + b.abs()), "{} vs {}", a, b);
        }
        let (lhs, rhs) = (dot(&gather_columns(&x, &index).unwrap(), &g), dot(&x, &gtg));
        prop_assert!((lhs - rhs).abs() <= tol * (1.0 + lhs.abs()), "{} vs {}", lhs, rhs);
    }

    /// Candle's autograd runs through both ops: the gradient of ⟨G x, w⟩ is Gᵀ w, that of
    /// ⟨Gᵀ g, v⟩ is G v, exactly.
    #[test]
    fn autograd_backward_is_the_adjoint(
        (n, m, rows, cols, empty) in geometry(), f64_: bool, seed in any::<u64>(),
    ) {
        let seed = Seed(seed);
        let dtype = if f64_ { DType::F64 } else { DType::F32 };
        let index = random_index(seed.fork("index"), rows, cols, m, empty);

        let x = Var::from_tensor(&randn(seed.fork("x"), (n, m), dtype)).unwrap();
        let w = randn(seed.fork("w"), (n * rows, cols), dtype);
        let loss = (gather_columns(&x, &index).unwrap() * &w).unwrap().sum_all().unwrap();
        let grad = loss.backward().unwrap();
        let grad_x = grad.get(&x).expect("x is a Var");
        prop_assert_eq!(values(grad_x), values(&scatter_add_columns(&w, &index).unwrap()));

        let g = Var::from_tensor(&w).unwrap();
        let v = randn(seed.fork("v"), (n, m), dtype);
        let loss = (scatter_add_columns(&g, &index).unwrap() * &v).unwrap().sum_all().unwrap();
        let grad = loss.backward().unwrap();
        let grad_g = grad.get(&g).expect("g is a Var");
        prop_assert_eq!(values(grad_g), values(&gather_columns(&v, &index).unwrap()));
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The route off the CPU (candle's `index_select` and `index_add`), run here on the CPU,
    /// gives the custom op's numbers in both directions, and autograd through it gives the
    /// custom op's adjoint as the gradient.
    #[test]
    fn the_device_route_equals_the_cpu_kernel(
        (n, m, rows, cols, empty) in geometry(), f64_: bool, seed in any::<u64>(),
    ) {
        let seed = Seed(seed);
        let dtype = if f64_ { DType::F64 } else { DType::F32 };
        let index = random_index(seed.fork("index"), rows, cols, m, empty);
        let route = |direction: Direction, t: &Tensor| {
            ColumnOp { index: index.clone(), direction }.by_index_ops(t).unwrap()
        };
        let x = Var::from_tensor(&randn(seed.fork("x"), (n, m), dtype)).unwrap();
        let g = randn(seed.fork("g"), (n * rows, cols), dtype);
        let gx = route(Direction::Gather, &x);
        prop_assert_eq!(gx.dims(), &[n * rows, cols]);
        prop_assert_eq!(values(&gx), values(&gather_columns(&x, &index).unwrap()));
        let gtg = route(Direction::ScatterAdd, &g);
        prop_assert_eq!(gtg.dims(), &[n, m]);
        prop_assert_eq!(values(&gtg), values(&scatter_add_columns(&g, &index).unwrap()));

        let loss = (gx * &g).unwrap().sum_all().unwrap();
        let grad = loss.backward().unwrap();
        prop_assert_eq!(values(grad.get(&x).expect("x is a Var")), values(&gtg));
    }
}

#[test]
fn empty_entries_gather_zero_and_receive_nothing() {
    // Two rows of [x0, x0, empty]: column 0 is read twice, so it collects both entries.
    let index = GatherIndex::from_fn(2, 3, 2, |_, c| (c < 2).then_some(0)).unwrap();
    let x = Tensor::new(&[[5f64, 7.]], &Device::Cpu).unwrap();
    let gx: Vec<Vec<f64>> = gather_columns(&x, &index).unwrap().to_vec2().unwrap();
    assert_eq!(gx, [[5., 5., 0.], [5., 5., 0.]]);
    let g = Tensor::new(&[[1f64, 2., 100.], [3., 4., 100.]], &Device::Cpu).unwrap();
    let gtg: Vec<Vec<f64>> = scatter_add_columns(&g, &index).unwrap().to_vec2().unwrap();
    assert_eq!(gtg, [[10., 0.]]);
    assert_eq!(
        format!("{index:?}"),
        "GatherIndex { rows: 2, cols: 3, source_len: 2, empty: 2 }"
    );
}

#[test]
fn many_examples_agree_with_the_naive_loop() {
    // Large enough for the parallel path where more than one thread is allowed.
    let (n, m, rows, cols) = (300, 40, 30, 9);
    let index = random_index(Seed(3), rows, cols, m, 0.2);
    let x = randn(Seed(4), (n, m), DType::F64);
    assert_eq!(
        values(&gather_columns(&x, &index).unwrap()),
        naive_gather(&x, &index)
    );
    let g = randn(Seed(5), (n * rows, cols), DType::F64);
    for (a, b) in values(&scatter_add_columns(&g, &index).unwrap())
        .iter()
        .zip(naive_scatter_add(&g, &index))
    {
        assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()), "{a} vs {b}");
    }
}

#[test]
fn bad_tables_are_errors() {
    let bad = |r: Result<GatherIndex>| matches!(r, Err(Error::InvalidArgument(_)));
    assert!(bad(GatherIndex::from_fn(2, 2, 4, |r, c| Some(
        2 * r + c + 1
    ))));
    assert!(bad(GatherIndex::from_fn(0, 2, 4, |_, _| None)));
    assert!(bad(GatherIndex::from_fn(2, 0, 4, |_, _| None)));
    assert!(bad(GatherIndex::from_fn(2, 2, 0, |_, _| None)));
    assert!(bad(GatherIndex::from_fn(usize::MAX, 2, 4, |_, _| None)));
    assert!(bad(GatherIndex::from_fn(1, 1, usize::MAX, |_, _| None)));
    let err = GatherIndex::from_fn(2, 2, 4, |r, c| Some(2 * r + c + 1)).unwrap_err();
    assert!(err.to_string().contains("(1, 1) = 4"), "{err}");
}

#[test]
fn bad_inputs_are_errors() {
    let index = random_index(Seed(0), 3, 2, 4, 0.0);
    let cpu = &Device::Cpu;
    let shape = |r: Result<Tensor>| matches!(r, Err(Error::ShapeMismatch { .. }));
    // The gather needs [N, 4]; the scatter-add [N·3, 2].
    assert!(shape(gather_columns(
        &Tensor::zeros((2, 3), DType::F32, cpu).unwrap(),
        &index
    )));
    assert!(shape(gather_columns(
        &Tensor::zeros(4, DType::F32, cpu).unwrap(),
        &index
    )));
    assert!(shape(gather_columns(
        &Tensor::zeros((1, 2, 4), DType::F32, cpu).unwrap(),
        &index
    )));
    assert!(shape(scatter_add_columns(
        &Tensor::zeros((6, 3), DType::F64, cpu).unwrap(),
        &index
    )));
    assert!(matches!(
        scatter_add_columns(&Tensor::zeros((4, 2), DType::F64, cpu).unwrap(), &index),
        Err(Error::InvalidArgument(_))
    ));
    for dtype in [DType::U32, DType::F16, DType::BF16] {
        let x = Tensor::zeros((2, 4), dtype, cpu).unwrap();
        assert!(matches!(
            gather_columns(&x, &index),
            Err(Error::UnsupportedDType { .. })
        ));
        let g = Tensor::zeros((6, 2), dtype, cpu).unwrap();
        assert!(matches!(
            scatter_add_columns(&g, &index),
            Err(Error::UnsupportedDType { .. })
        ));
    }
}
