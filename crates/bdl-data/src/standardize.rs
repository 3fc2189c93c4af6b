//! Standardisation with training statistics, and its inverse for predictions.
//!
//! A [`Standardizer`] fitted on training data maps a value `v` of column `j` to
//!
//! ```text
//! z = (v − μ_j) / σ_j,   μ_j = (1/N) Σ_i v_ij,   σ_j = sqrt((1/N) Σ_i (v_ij − μ_j)²)
//! ```
//!
//! (the population standard deviation, as NumPy's `std` in the reference code), with σ_j
//! replaced by 1 when it is below 1e-10 so that a constant column stays finite. Predictions made
//! in standardised units go back with
//!
//! ```text
//! mean:      v = μ + σ · z
//! variance:  Var[v] = σ² · Var[z]
//! log-density: log p(v) = log p(z) − log σ      (per standardised coordinate)
//! ```
//!
//! Statistics are accumulated in f64.

use candle_core::{DType, Tensor};
use serde::{Deserialize, Serialize};

use crate::{Dataset, Error, Result, Task};

/// Below this, a standard deviation is treated as zero and replaced by 1.
pub const MIN_STD: f64 = 1e-10;

/// A regression train / test pair standardised with the training statistics (inputs and
/// targets per column), then cast to f64 (the data sets store f32, and the transform runs in
/// their dtype), with the target standardiser for going back to the original units.
///
/// ```
/// use bdl_data::StandardizedSplit;
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let (train, test) = bdl_data::toy::agw_1d(&bdl_data::root::fixtures())?.holdout(0.2, bdl_tensor::Seed(0))?;
/// let split = StandardizedSplit::new(&train, &test)?;
/// let mean: f64 = split.y_train.mean_all()?.to_scalar()?;
/// assert!(mean.abs() < 1e-6); // mean 0, up to the f32 rounding of the stored data
/// assert_eq!(split.y_scale.std().len(), 1);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct StandardizedSplit {
    /// Standardised training inputs.
    pub x_train: Tensor,
    /// Standardised training targets.
    pub y_train: Tensor,
    /// Test inputs, standardised with the training statistics.
    pub x_test: Tensor,
    /// Test targets, standardised with the training statistics.
    pub y_test: Tensor,
    /// The targets' standardiser (σ_y converts RMSE and log-densities back).
    pub y_scale: Standardizer,
}

impl StandardizedSplit {
    /// Fits the standardisers on `train` and applies them to both sets.
    pub fn new(train: &Dataset, test: &Dataset) -> Result<Self> {
        let (sx, sy) = (Standardizer::fit(train.x())?, Standardizer::fit(train.y())?);
        let f64_of = |s: &Standardizer, t: &Tensor| -> Result<Tensor> {
            Ok(s.transform(t)?.to_dtype(DType::F64)?)
        };
        Ok(Self {
            x_train: f64_of(&sx, train.x())?,
            y_train: f64_of(&sy, train.y())?,
            x_test: f64_of(&sx, test.x())?,
            y_test: f64_of(&sy, test.y())?,
            y_scale: sy,
        })
    }

    /// The same split with its four tensors in `dtype` (the standardiser unchanged). Casting to
    /// f32 loses nothing: the transform ran in the stored f32.
    ///
    /// ```
    /// use bdl_data::StandardizedSplit;
    /// use candle_core::DType;
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let (train, test) = bdl_data::toy::agw_1d(&bdl_data::root::fixtures())?.holdout(0.2, bdl_tensor::Seed(0))?;
    /// let split = StandardizedSplit::new(&train, &test)?;
    /// let single = split.to_dtype(DType::F32)?;
    /// assert_eq!(single.x_test.dtype(), DType::F32);
    /// assert_eq!(single.y_train.to_dtype(DType::F64)?.to_vec2::<f64>()?, split.y_train.to_vec2::<f64>()?);
    /// # Ok(()) }
    /// ```
    pub fn to_dtype(&self, dtype: DType) -> Result<Self> {
        Ok(Self {
            x_train: self.x_train.to_dtype(dtype)?,
            y_train: self.y_train.to_dtype(dtype)?,
            x_test: self.x_test.to_dtype(dtype)?,
            y_test: self.y_test.to_dtype(dtype)?,
            y_scale: self.y_scale.clone(),
        })
    }
}

/// Per-column (or global) location and scale fitted on training data.
///
/// ```
/// use bdl_data::Standardizer;
/// use candle_core::{Device, Tensor};
/// let train = Tensor::new(&[[1.0f32, 10.0], [3.0, 10.0]], &Device::Cpu).unwrap();
/// let s = Standardizer::fit(&train).unwrap();
/// assert_eq!(s.mean(), [2.0, 10.0]);
/// assert_eq!(s.std(), [1.0, 1.0]); // the constant column keeps scale 1
/// let z = s.transform(&train).unwrap();
/// assert_eq!(z.to_vec2::<f32>().unwrap(), [[-1.0, 0.0], [1.0, 0.0]]);
/// let back = s.inverse_transform(&z).unwrap();
/// assert_eq!(back.to_vec2::<f32>().unwrap(), train.to_vec2::<f32>().unwrap());
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Standardizer {
    mean: Vec<f64>,
    std: Vec<f64>,
}

impl Standardizer {
    /// Fits one mean and standard deviation per column of `x` (`[N, d]`, N ≥ 1).
    pub fn fit(x: &Tensor) -> Result<Self> {
        let (n, d, values) = rows_f64(x)?;
        let mut mean = vec![0.0; d];
        for row in values.chunks_exact(d.max(1)) {
            for (m, v) in mean.iter_mut().zip(row) {
                *m += v;
            }
        }
        mean.iter_mut().for_each(|m| *m /= n as f64);
        let mut var = vec![0.0; d];
        for row in values.chunks_exact(d.max(1)) {
            for ((s, v), m) in var.iter_mut().zip(row).zip(&mean) {
                *s += (v - m) * (v - m);
            }
        }
        let std = var.iter().map(|s| guard((s / n as f64).sqrt())).collect();
        Ok(Standardizer { mean, std })
    }

    /// Fits a single mean and standard deviation over all entries of `x` (for images, where
    /// every pixel is standardised alike).
    pub fn fit_global(x: &Tensor) -> Result<Self> {
        let (_, _, values) = rows_f64(x)?;
        let count = values.len() as f64;
        let mean = values.iter().sum::<f64>() / count;
        let var = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / count;
        Ok(Standardizer {
            mean: vec![mean],
            std: vec![guard(var.sqrt())],
        })
    }

    /// Builds a standardizer from known statistics (for example the published MNIST mean 0.1307
    /// and standard deviation 0.3081); a single entry applies to every column.
    pub fn from_stats(mean: Vec<f64>, std: Vec<f64>) -> Result<Self> {
        if mean.len() != std.len()
            || mean.is_empty()
            || mean.iter().any(|m| !m.is_finite())
            || std.iter().any(|s| !(s.is_finite() && *s > 0.0))
        {
            return Err(Error::InvalidArgument(format!(
                "standardizer needs equally many finite means and positive stds, got {mean:?}, {std:?}"
            )));
        }
        Ok(Standardizer { mean, std })
    }

    /// The fitted means μ (one per column, or one for all).
    pub fn mean(&self) -> &[f64] {
        &self.mean
    }

    /// The fitted standard deviations σ (one per column, or one for all).
    pub fn std(&self) -> &[f64] {
        &self.std
    }

    /// `(v − μ) / σ`, column by column.
    pub fn transform(&self, v: &Tensor) -> Result<Tensor> {
        let (mean, std) = self.rows(v)?;
        Ok(v.broadcast_sub(&mean)?.broadcast_div(&std)?)
    }

    /// `μ + σ · z`: predictive means (or samples) back in the original units.
    pub fn inverse_transform(&self, z: &Tensor) -> Result<Tensor> {
        let (mean, std) = self.rows(z)?;
        Ok(z.broadcast_mul(&std)?.broadcast_add(&mean)?)
    }

    /// `σ² · Var[z]`: predictive variances back in the original units.
    pub fn inverse_variance(&self, var: &Tensor) -> Result<Tensor> {
        let (_, std) = self.rows(var)?;
        Ok(var.broadcast_mul(&std.sqr()?)?)
    }

    /// `Σ_j log σ_j` over the `d` columns of one example: subtract it from a log-density
    /// computed in standardised units to get the log-density in the original units.
    pub fn log_scale(&self, d: usize) -> f64 {
        match self.std[..] {
            [s] => d as f64 * s.ln(),
            ref per_column => per_column.iter().map(|s| s.ln()).sum(),
        }
    }

    /// μ and σ as `[1, d]` tensors of `v`'s dtype and device, checking the width.
    fn rows(&self, v: &Tensor) -> Result<(Tensor, Tensor)> {
        let d = match v.dims() {
            &[_, d] => d,
            dims => {
                return Err(Error::InvalidArgument(format!(
                    "standardizer applies to [N, d] tensors, got {dims:?}"
                )));
            }
        };
        if self.mean.len() != 1 && self.mean.len() != d {
            return Err(Error::InvalidArgument(format!(
                "standardizer fitted on {} columns applied to {d}",
                self.mean.len()
            )));
        }
        let row = |values: &[f64]| -> Result<Tensor> {
            let t = Tensor::from_vec(values.to_vec(), (1, values.len()), v.device())?;
            Ok(t.to_dtype(v.dtype())?)
        };
        Ok((row(&self.mean)?, row(&self.std)?))
    }
}

fn guard(std: f64) -> f64 {
    if std < MIN_STD { 1.0 } else { std }
}

fn rows_f64(x: &Tensor) -> Result<(usize, usize, Vec<f64>)> {
    match *x.dims() {
        [n, d] if n > 0 => Ok((n, d, x.to_dtype(DType::F64)?.flatten_all()?.to_vec1()?)),
        ref dims => Err(Error::InvalidArgument(format!(
            "standardizer is fitted on [N, d] tensors with N ≥ 1, got {dims:?}"
        ))),
    }
}

/// Feature and (for regression) target standardizers fitted on a training set, applied alike to
/// every part of an experiment.
///
/// ```
/// # use bdl_data::{Dataset, Provenance, Standardization, Task};
/// # use candle_core::{Device, Tensor};
/// let x = Tensor::new(&[[0.0f32], [2.0], [4.0]], &Device::Cpu).unwrap();
/// let y = Tensor::new(&[[10.0f32], [20.0], [30.0]], &Device::Cpu).unwrap();
/// let task = Task::Regression { targets: vec!["y".into()] };
/// let train = Dataset::new(x, y, task, vec!["x".into()], Provenance::default()).unwrap();
/// let scaling = Standardization::fit(&train).unwrap();
/// let z = scaling.apply(&train).unwrap();
/// let top = z.y().to_vec2::<f32>().unwrap()[2][0];
/// assert!((top - 1.224_744_9).abs() < 1e-6); // (30 − 20) / sqrt(200 / 3)
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Standardization {
    /// Standardizer of the features.
    pub x: Standardizer,
    /// Standardizer of the targets (regression only).
    pub y: Option<Standardizer>,
}

impl Standardization {
    /// Per-column statistics of `train`'s features and, for regression, targets.
    pub fn fit(train: &Dataset) -> Result<Self> {
        let y = match train.task() {
            Task::Regression { .. } => Some(Standardizer::fit(train.y())?),
            Task::Classification { .. } => None,
        };
        Ok(Standardization {
            x: Standardizer::fit(train.x())?,
            y,
        })
    }

    /// `data` with standardised features and (when fitted) targets.
    pub fn apply(&self, data: &Dataset) -> Result<Dataset> {
        let scaled = data.with_x(self.x.transform(data.x())?)?;
        match &self.y {
            Some(y) => scaled.with_y(y.transform(data.y())?),
            None => Ok(scaled),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bdl_tensor::{Seed, normal};
    use candle_core::Device;
    use proptest::prelude::*;

    fn max_abs_diff(a: &Tensor, b: &Tensor) -> f64 {
        let d = (a - b).unwrap().abs().unwrap().max_all().unwrap();
        d.to_dtype(DType::F64).unwrap().to_scalar::<f64>().unwrap()
    }

    proptest! {
        #[test]
        fn round_trip_and_moments(seed in any::<u64>(), n in 2usize..40, d in 1usize..6) {
            let x = normal(&mut Seed(seed).rng(), (n, d), 3.0, 2.0, DType::F64, &Device::Cpu).unwrap();
            // The round trip is exact up to rounding in both dtypes (values are O(10)).
            for (dtype, tol) in [(DType::F32, 1e-4), (DType::F64, 1e-12)] {
                let x = x.to_dtype(dtype).unwrap();
                let s = Standardizer::fit(&x).unwrap();
                let back = s.inverse_transform(&s.transform(&x).unwrap()).unwrap();
                let err = max_abs_diff(&back, &x);
                prop_assert!(err < tol, "{:?} round trip error {}", dtype, err);
            }
            // Standardised training data has mean 0 and standard deviation 1 in every column
            // (checked in f64: with two close values f32 rounding is amplified by 1/σ).
            let s = Standardizer::fit(&x).unwrap();
            let refit = Standardizer::fit(&s.transform(&x).unwrap()).unwrap();
            for (m, sd) in refit.mean().iter().zip(refit.std()) {
                prop_assert!(m.abs() < 1e-9 && (sd - 1.0).abs() < 1e-9, "mean {} std {}", m, sd);
            }
        }
    }

    #[test]
    fn variances_scale_by_std_squared() {
        let x = Tensor::new(&[[0.0f32, 1.0], [4.0, 3.0]], &Device::Cpu).unwrap();
        let s = Standardizer::fit(&x).unwrap();
        assert_eq!(s.std(), [2.0, 1.0]);
        let var = Tensor::new(&[[1.0f32, 1.0]], &Device::Cpu).unwrap();
        let back = s.inverse_variance(&var).unwrap();
        assert_eq!(back.to_vec2::<f32>().unwrap(), [[4.0, 1.0]]);
        assert!((s.log_scale(2) - 2f64.ln()).abs() < 1e-12);
    }

    #[test]
    fn global_statistics_and_bad_inputs() {
        let x = Tensor::new(&[[0.0f32, 2.0], [2.0, 0.0]], &Device::Cpu).unwrap();
        let g = Standardizer::fit_global(&x).unwrap();
        assert_eq!((g.mean(), g.std()), (&[1.0][..], &[1.0][..]));
        assert!((g.log_scale(784)).abs() < 1e-12);
        let wide = Tensor::zeros((2, 3), DType::F32, &Device::Cpu).unwrap();
        assert!(g.transform(&wide).is_ok());
        let s = Standardizer::fit(&x).unwrap();
        assert!(s.transform(&wide).is_err());
        let empty = Tensor::zeros((0, 3), DType::F32, &Device::Cpu).unwrap();
        assert!(Standardizer::fit(&empty).is_err());
        assert!(Standardizer::from_stats(vec![0.1307], vec![0.0]).is_err());
        assert!(Standardizer::from_stats(vec![0.1307], vec![0.3081]).is_ok());
    }
}
