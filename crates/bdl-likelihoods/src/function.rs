//! Gaussian beliefs over network outputs: f_n ~ N(m_n, Σ_n) per point.

use candle_core::{Device, Tensor};

use crate::{Error, Result, check};

/// The covariance of a Gaussian over the network outputs f_n ∈ ℝᴷ of N points.
///
/// Points are independent of each other (only the per-point K × K blocks are kept). This is what
/// a linearised Laplace, VI or SWAG posterior gives for f(x*) = J(x*) θ: Σ_n = J_n Σ_θ J_nᵀ.
#[derive(Clone, Debug)]
pub enum FunctionVariance {
    /// Per-output variances Σ_n,kk, shape `[N, K]`, each `>= 0`; outputs are independent.
    Diagonal(Tensor),
    /// Full per-point covariances Σ_n, shape `[N, K, K]`, positive semi-definite. The
    /// symmetric part (Σ + Σᵀ)/2 is used, so rounding asymmetry in J Σ Jᵀ is harmless. A
    /// negative diagonal is always an error; full positive semi-definiteness is checked where
    /// Σ_n is factored (the Monte Carlo link), as the other links read only its diagonal and
    /// row sums.
    Full(Tensor),
}

/// A validated Gaussian over outputs, held in f64 on the host, point by point.
pub(crate) struct FunctionGaussian {
    n: usize,
    k: usize,
    mean: Vec<f64>,
    cov: Cov,
    device: Device,
}

/// Row-major storage of the covariances.
enum Cov {
    /// `[N, K]` variances.
    Diagonal(Vec<f64>),
    /// `[N, K, K]` symmetrised covariances.
    Full(Vec<f64>),
}

/// A square root S of one point's covariance, S Sᵀ = Σ_n.
pub(crate) enum Factor {
    /// S = diag(√v).
    Diagonal(Vec<f64>),
    /// S dense, row-major K × K (a row-permuted Cholesky factor).
    Dense(Vec<f64>),
}

impl Factor {
    /// `out = m + S z`.
    pub(crate) fn transform(&self, m: &[f64], z: &[f64], out: &mut [f64]) {
        let k = m.len();
        for c in 0..k {
            out[c] = m[c]
                + match self {
                    Factor::Diagonal(s) => s[c] * z[c],
                    Factor::Dense(s) => s[c * k..(c + 1) * k]
                        .iter()
                        .zip(z)
                        .map(|(a, b)| a * b)
                        .sum(),
                };
        }
    }
}

impl FunctionGaussian {
    /// Validates `mean_f` (`[N, K]`, with `K = classes` where given) and `var_f`, and copies them
    /// to f64.
    pub(crate) fn new(
        mean_f: &Tensor,
        var_f: &FunctionVariance,
        classes: Option<usize>,
    ) -> Result<Self> {
        let (n, k) = check::outputs(mean_f, "mean_f", classes)?;
        let mean = check::values(mean_f, "mean_f")?;
        let cov = match var_f {
            FunctionVariance::Diagonal(v) => {
                check::float_dtype(v, "var_f")?;
                if v.dims() != [n, k] {
                    return Err(check::shape_error(v, "var_f", format!("[{n}, {k}]")));
                }
                let values = check::values(v, "var_f")?;
                check::variances(&values, "var_f", false)?;
                Cov::Diagonal(values)
            }
            FunctionVariance::Full(v) => {
                check::float_dtype(v, "var_f")?;
                if v.dims() != [n, k, k] {
                    return Err(check::shape_error(v, "var_f", format!("[{n}, {k}, {k}]")));
                }
                let mut values = check::values(v, "var_f")?;
                for block in values.chunks_mut(k * k) {
                    for r in 0..k {
                        for c in 0..r {
                            let s = 0.5 * (block[r * k + c] + block[c * k + r]);
                            block[r * k + c] = s;
                            block[c * k + r] = s;
                        }
                    }
                }
                let diagonal: Vec<f64> = (0..n * k).map(|i| values[i * k + i % k]).collect();
                check::variances(&diagonal, "var_f (diagonal)", false)?;
                Cov::Full(values)
            }
        };
        Ok(Self {
            n,
            k,
            mean,
            cov,
            device: mean_f.device().clone(),
        })
    }

    /// Number of points N.
    pub(crate) fn n(&self) -> usize {
        self.n
    }

    /// Number of outputs K.
    pub(crate) fn k(&self) -> usize {
        self.k
    }

    /// The device the inputs came from (outputs go back there).
    pub(crate) fn device(&self) -> &Device {
        &self.device
    }

    /// All means, row-major `[N, K]`.
    pub(crate) fn means(&self) -> &[f64] {
        &self.mean
    }

    /// The mean m_i.
    pub(crate) fn mean(&self, i: usize) -> &[f64] {
        &self.mean[i * self.k..(i + 1) * self.k]
    }

    /// The marginal variance Σ_i,cc.
    pub(crate) fn variance(&self, i: usize, c: usize) -> f64 {
        let k = self.k;
        match &self.cov {
            Cov::Diagonal(v) => v[i * k + c],
            Cov::Full(v) => v[i * k * k + c * k + c],
        }
    }

    /// The row sum (Σ_i 1)_c.
    pub(crate) fn row_sum(&self, i: usize, c: usize) -> f64 {
        let k = self.k;
        match &self.cov {
            Cov::Diagonal(v) => v[i * k + c],
            Cov::Full(v) => v[i * k * k + c * k..i * k * k + (c + 1) * k].iter().sum(),
        }
    }

    /// A square root of Σ_i: diag(√v) for diagonal covariances, otherwise a pivoted Cholesky
    /// factor of the positive semi-definite Σ_i (see [`psd_sqrt`]).
    pub(crate) fn factor(&self, i: usize) -> Result<Factor> {
        let k = self.k;
        match &self.cov {
            Cov::Diagonal(v) => Ok(Factor::Diagonal(
                v[i * k..(i + 1) * k].iter().map(|x| x.sqrt()).collect(),
            )),
            Cov::Full(v) => psd_sqrt(&v[i * k * k..(i + 1) * k * k], k)
                .map(Factor::Dense)
                .map_err(|(row, value)| Error::NotPositiveSemiDefinite {
                    point: i,
                    row,
                    value,
                }),
        }
    }
}

/// Relative size below which what is left of a covariance counts as zero: the factorisation
/// stops when every remaining pivot is at most `PIVOT_TOL` · max Σ_cc, and the remainder must then
/// be zero to within the same bound, or the matrix is not positive semi-definite. 1e-10 is far
/// above f64 rounding of a K × K elimination and far below any variance that matters next to
/// the largest one.
const PIVOT_TOL: f64 = 1e-10;

/// A square root S (row-major K × K) of a symmetric positive semi-definite matrix A, with
/// |A − S Sᵀ| ≤ `PIVOT_TOL` · max A_cc elementwise (plus rounding), for any rank.
///
/// Cholesky with diagonal pivoting (as LAPACK's `?pstrf`): each step eliminates the largest
/// remaining pivot; it stops when all remaining pivots are below the tolerance. The remaining
/// Schur complement is then dropped, which is safe because in a PSD matrix |S_il| ≤ √(S_ii S_ll)
/// is as small as its diagonal. S = P L is the row-permuted lower factor. On failure (a remaining
/// entry beyond the tolerance, i.e. A is not PSD) returns its row and value.
fn psd_sqrt(a: &[f64], k: usize) -> std::result::Result<Vec<f64>, (usize, f64)> {
    let scale = (0..k).map(|c| a[c * k + c]).fold(0.0, f64::max);
    let tol = PIVOT_TOL * scale;
    let mut schur = a.to_vec();
    let mut root = vec![0.0; k * k];
    let mut active: Vec<usize> = (0..k).collect();
    for j in 0..k {
        let Some((pos, p)) = active
            .iter()
            .copied()
            .enumerate()
            .max_by(|x, y| schur[x.1 * k + x.1].total_cmp(&schur[y.1 * k + y.1]))
        else {
            break;
        };
        let pivot = schur[p * k + p];
        if pivot <= tol {
            break;
        }
        active.swap_remove(pos);
        let d = pivot.sqrt();
        root[p * k + j] = d;
        for &i in &active {
            root[i * k + j] = schur[i * k + p] / d;
        }
        for &i in &active {
            for &l in &active {
                schur[i * k + l] -= root[i * k + j] * root[l * k + j];
            }
        }
    }
    for &i in &active {
        for &l in &active {
            if schur[i * k + l].abs() > tol {
                return Err((i, schur[i * k + l]));
            }
        }
    }
    Ok(root)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bdl_tensor::Seed;
    use proptest::prelude::*;
    use rand_distr::{Distribution, StandardNormal};

    proptest! {
        /// S Sᵀ reproduces a random PSD matrix B Bᵀ of any rank r ≤ K: elementwise within the
        /// documented bound `PIVOT_TOL` · max diag, plus 1e-12 · max diag for f64 rounding of
        /// K ≤ 8 eliminations (~1e-15 each).
        #[test]
        fn square_root_reproduces_psd_matrices(seed in any::<u64>(), k in 1usize..8, rank in 0usize..8) {
            let rank = rank.min(k);
            let mut rng = Seed(seed).rng();
            let b: Vec<f64> = (0..k * rank).map(|_| StandardNormal.sample(&mut rng)).collect();
            let a: Vec<f64> = (0..k * k)
                .map(|ij| (0..rank).map(|p| b[(ij / k) * rank + p] * b[(ij % k) * rank + p]).sum())
                .collect();
            let s = psd_sqrt(&a, k).unwrap();
            let scale = (0..k).map(|c| a[c * k + c]).fold(0.0, f64::max);
            for i in 0..k {
                for j in 0..k {
                    let sst: f64 = (0..k).map(|p| s[i * k + p] * s[j * k + p]).sum();
                    prop_assert!((sst - a[i * k + j]).abs() <= (PIVOT_TOL + 1e-12) * scale);
                }
            }
        }
    }

    #[test]
    fn square_root_rejects_indefinite_matrices() {
        // Positive diagonal, negative eigenvalue -1.
        assert!(psd_sqrt(&[1.0, 2.0, 2.0, 1.0], 2).is_err());
        // Zero diagonal hiding an indefinite off-diagonal block.
        assert!(psd_sqrt(&[1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0], 3).is_err());
    }
}
