//! Image transforms for distribution shift and augmentation: rotation, Gaussian blur, colour
//! inversion and Gaussian noise, deterministic for a given seed.
//!
//! The transforms act on images with values in `[0, 1]` (apply them before standardising).
//! Random parameters of image `i` of a batch come from the stream `seed.index(i)`, so an image
//! is transformed the same way whatever else is in the batch.
//!
//! - **Rotation** by θ degrees counter-clockwise about the image centre
//!   `(c_x, c_y) = ((W − 1)/2, (H − 1)/2)`: output pixel `(x, y)` (column, row) takes the
//!   bilinear interpolation of the input at
//!   `x_s = c_x + cos θ (x − c_x) − sin θ (y − c_y)`,
//!   `y_s = c_y + sin θ (x − c_x) + cos θ (y − c_y)`, with zeros outside the image.
//! - **Gaussian blur** with an odd kernel size `k` and width σ: the separable kernel
//!   `w_t ∝ exp(−t² / (2σ²))` for `t = −(k−1)/2 … (k−1)/2`, normalised to sum 1, applied along
//!   rows then columns with mirror ("reflect") padding, as torchvision's `GaussianBlur`.
//! - **Inversion**: `v ↦ 1 − v`.
//! - **Gaussian noise**: `v ↦ v + s·ε` with ε ~ N(0, 1) per pixel (not clipped).
//!
//! ```
//! use bdl_data::transforms::{Param, Transform};
//! // The augmentation of the minibatch-Gibbs paper: rotation in ±30°, a 9×9 blur with
//! // σ ∈ [1, 1.5] with probability 0.9, inversion with probability 0.5.
//! let augment = [
//!     Transform::Rotate { degrees: Param::Uniform { low: -30.0, high: 30.0 } },
//!     Transform::GaussianBlur { kernel_size: 9, sigma: Param::Uniform { low: 1.0, high: 1.5 } }
//!         .with_probability(0.9),
//!     Transform::Invert.with_probability(0.5),
//! ];
//! let test = bdl_data::mnist::load(
//!     &bdl_data::root::fixtures(),
//!     bdl_data::mnist::Collection::Mnist,
//!     bdl_data::mnist::Part::Test,
//! ).unwrap();
//! let first = test.select(&[0, 1, 2]).unwrap();
//! let a = first.transformed(&augment, bdl_tensor::Seed(4)).unwrap();
//! let b = first.transformed(&augment, bdl_tensor::Seed(4)).unwrap();
//! assert_eq!(a.x().to_vec2::<f32>().unwrap(), b.x().to_vec2::<f32>().unwrap());
//! ```

use bdl_tensor::Seed;
use candle_core::{DType, Tensor};
use rand::Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

use crate::{Dataset, Error, ImageShape, Result};

/// A transform parameter: fixed, or drawn per image.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum Param {
    /// The same value for every image.
    Fixed(f64),
    /// A value drawn uniformly from `[low, high]` for each image.
    Uniform {
        /// Lower end.
        low: f64,
        /// Upper end.
        high: f64,
    },
}

impl Param {
    fn draw(self, rng: &mut impl Rng) -> f64 {
        match self {
            Param::Fixed(v) => v,
            Param::Uniform { low, high } => low + (high - low) * rng.random::<f64>(),
        }
    }

    fn check(self, what: &str, positive: bool) -> Result<()> {
        let (low, high) = match self {
            Param::Fixed(v) => (v, v),
            Param::Uniform { low, high } => (low, high),
        };
        if low.is_finite() && high.is_finite() && low <= high && (!positive || low > 0.0) {
            Ok(())
        } else {
            Err(Error::InvalidArgument(format!(
                "{what}: need finite {}low <= high, got {self:?}",
                if positive { "0 < " } else { "" }
            )))
        }
    }
}

/// One image transform.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Transform {
    /// Rotation counter-clockwise by an angle in degrees (bilinear, zero fill).
    Rotate {
        /// The angle in degrees.
        degrees: Param,
    },
    /// Gaussian blur with an odd kernel size and a positive σ (in pixels).
    GaussianBlur {
        /// Kernel size in pixels (odd).
        kernel_size: usize,
        /// Standard deviation of the kernel.
        sigma: Param,
    },
    /// Colour inversion `v ↦ 1 − v`.
    Invert,
    /// Additive Gaussian noise of standard deviation `std`.
    GaussianNoise {
        /// Noise standard deviation (≥ 0).
        std: f64,
    },
    /// `transform` applied to each image with probability `p`.
    RandomApply {
        /// Probability of applying.
        p: f64,
        /// The transform.
        transform: Box<Transform>,
    },
}

impl Transform {
    /// This transform, applied to each image with probability `p`.
    pub fn with_probability(self, p: f64) -> Transform {
        Transform::RandomApply {
            p,
            transform: Box::new(self),
        }
    }

    fn check(&self) -> Result<()> {
        match self {
            Transform::Rotate { degrees } => degrees.check("rotation angle", false),
            Transform::GaussianBlur { kernel_size, sigma } => {
                if kernel_size % 2 == 0 {
                    return Err(Error::InvalidArgument(format!(
                        "blur kernel size must be odd, got {kernel_size}"
                    )));
                }
                sigma.check("blur sigma", true)
            }
            Transform::Invert => Ok(()),
            Transform::GaussianNoise { std } if *std >= 0.0 && std.is_finite() => Ok(()),
            Transform::GaussianNoise { std } => Err(Error::InvalidArgument(format!(
                "noise std must be finite and >= 0, got {std}"
            ))),
            Transform::RandomApply { p, transform } if (0.0..=1.0).contains(p) => transform.check(),
            Transform::RandomApply { p, .. } => Err(Error::InvalidArgument(format!(
                "probability must lie in [0, 1], got {p}"
            ))),
        }
    }

    /// Applies the transform to one image (all channels) in place.
    fn apply(&self, image: &mut [f32], shape: ImageShape, rng: &mut impl Rng) {
        let planes = image.chunks_exact_mut(shape.height * shape.width);
        match self {
            Transform::Rotate { degrees } => {
                let degrees = degrees.draw(rng);
                for plane in planes {
                    let rotated = rotate(plane, shape.height, shape.width, degrees);
                    plane.copy_from_slice(&rotated);
                }
            }
            Transform::GaussianBlur { kernel_size, sigma } => {
                let kernel = gaussian_kernel(*kernel_size, sigma.draw(rng));
                for plane in planes {
                    blur_in_place(plane, shape.height, shape.width, &kernel);
                }
            }
            Transform::Invert => image.iter_mut().for_each(|v| *v = 1.0 - *v),
            Transform::GaussianNoise { std } => {
                for v in image.iter_mut() {
                    let e: f64 = StandardNormal.sample(rng);
                    *v += (std * e) as f32;
                }
            }
            Transform::RandomApply { p, transform } => {
                if rng.random::<f64>() < *p {
                    transform.apply(image, shape, rng);
                }
            }
        }
    }
}

/// Applies `transforms` in order to every row of `images` (f32 `[N, C·H·W]`), image `i` drawing
/// its random parameters from `seed.index(i)`.
pub fn apply(
    images: &Tensor,
    shape: ImageShape,
    transforms: &[Transform],
    seed: Seed,
) -> Result<Tensor> {
    transforms.iter().try_for_each(Transform::check)?;
    let d = shape.len();
    if images.dtype() != DType::F32 || images.dims().get(1) != Some(&d) || images.rank() != 2 {
        return Err(Error::InvalidArgument(format!(
            "images must be f32 [N, {d}] for shape {shape:?}, got {:?} {:?}",
            images.dtype(),
            images.dims()
        )));
    }
    let mut values = images.flatten_all()?.to_vec1::<f32>()?;
    for (i, image) in values.chunks_exact_mut(d.max(1)).enumerate() {
        let mut rng = seed.index(i as u64).rng();
        for t in transforms {
            t.apply(image, shape, &mut rng);
        }
    }
    Ok(Tensor::from_vec(values, images.dims(), images.device())?)
}

impl Dataset {
    /// The data set with `transforms` applied to its images (see [`apply`]); errors when the
    /// examples are not images.
    pub fn transformed(&self, transforms: &[Transform], seed: Seed) -> Result<Dataset> {
        let shape = self.image_shape().ok_or_else(|| {
            Error::InvalidArgument(format!(
                "{}: image transforms need an image shape",
                self.provenance().description
            ))
        })?;
        self.with_x(apply(self.x(), shape, transforms, seed)?)
    }
}

/// One `height × width` plane rotated counter-clockwise by `degrees` about its centre
/// (bilinear interpolation, zeros outside).
///
/// ```
/// // A bright pixel right of centre moves above it under a quarter turn.
/// let mut plane = vec![0.0f32; 9];
/// plane[5] = 1.0; // row 1, column 2
/// let turned = bdl_data::transforms::rotate(&plane, 3, 3, 90.0);
/// assert!((turned[1] - 1.0).abs() < 1e-6); // row 0, column 1
/// ```
pub fn rotate(plane: &[f32], height: usize, width: usize, degrees: f64) -> Vec<f32> {
    let (sin, cos) = degrees.to_radians().sin_cos();
    let (cx, cy) = ((width as f64 - 1.0) / 2.0, (height as f64 - 1.0) / 2.0);
    let pixel = |r: isize, c: isize| -> f64 {
        if (0..height as isize).contains(&r) && (0..width as isize).contains(&c) {
            f64::from(plane[r as usize * width + c as usize])
        } else {
            0.0
        }
    };
    let mut out = vec![0.0f32; height * width];
    for r in 0..height {
        for c in 0..width {
            let (dx, dy) = (c as f64 - cx, r as f64 - cy);
            let xs = cx + cos * dx - sin * dy;
            let ys = cy + sin * dx + cos * dy;
            let (x0, y0) = (xs.floor(), ys.floor());
            let (fx, fy) = (xs - x0, ys - y0);
            let (x0, y0) = (x0 as isize, y0 as isize);
            let v = (1.0 - fy) * ((1.0 - fx) * pixel(y0, x0) + fx * pixel(y0, x0 + 1))
                + fy * ((1.0 - fx) * pixel(y0 + 1, x0) + fx * pixel(y0 + 1, x0 + 1));
            out[r * width + c] = v as f32;
        }
    }
    out
}

/// The normalised 1-D Gaussian kernel of odd `size` and width `sigma`.
///
/// ```
/// let k = bdl_data::transforms::gaussian_kernel(3, 1.0);
/// assert!((k.iter().sum::<f64>() - 1.0).abs() < 1e-12);
/// assert!((k[0] / k[1] - (-0.5f64).exp()).abs() < 1e-12);
/// ```
pub fn gaussian_kernel(size: usize, sigma: f64) -> Vec<f64> {
    let half = (size as f64 - 1.0) / 2.0;
    let w: Vec<f64> = (0..size)
        .map(|i| {
            let t = i as f64 - half;
            (-0.5 * (t / sigma).powi(2)).exp()
        })
        .collect();
    let total: f64 = w.iter().sum();
    w.into_iter().map(|v| v / total).collect()
}

/// One `height × width` plane blurred with a Gaussian kernel of odd `kernel_size` and `sigma`
/// (reflect padding).
pub fn gaussian_blur(
    plane: &[f32],
    height: usize,
    width: usize,
    kernel_size: usize,
    sigma: f64,
) -> Result<Vec<f32>> {
    Transform::GaussianBlur {
        kernel_size,
        sigma: Param::Fixed(sigma),
    }
    .check()?;
    let mut out = plane.to_vec();
    blur_in_place(
        &mut out,
        height,
        width,
        &gaussian_kernel(kernel_size, sigma),
    );
    Ok(out)
}

fn blur_in_place(plane: &mut [f32], height: usize, width: usize, kernel: &[f64]) {
    let half = (kernel.len() / 2) as isize;
    let mut tmp = vec![0.0f32; plane.len()];
    // Along rows.
    for r in 0..height {
        for c in 0..width {
            let s: f64 = kernel
                .iter()
                .enumerate()
                .map(|(t, w)| {
                    let cc = reflect(c as isize + t as isize - half, width);
                    w * f64::from(plane[r * width + cc])
                })
                .sum();
            tmp[r * width + c] = s as f32;
        }
    }
    // Along columns.
    for r in 0..height {
        for c in 0..width {
            let s: f64 = kernel
                .iter()
                .enumerate()
                .map(|(t, w)| {
                    let rr = reflect(r as isize + t as isize - half, height);
                    w * f64::from(tmp[rr * width + c])
                })
                .sum();
            plane[r * width + c] = s as f32;
        }
    }
}

/// Mirror index `i` into `0..n` without repeating the edge (`-1 ↦ 1`, `n ↦ n − 2`).
fn reflect(i: isize, n: usize) -> usize {
    if n == 1 {
        return 0;
    }
    let period = 2 * (n as isize - 1);
    let m = i.rem_euclid(period);
    (if m >= n as isize { period - m } else { m }) as usize
}

#[cfg(test)]
mod tests {
    use super::*;
    use candle_core::Device;
    use proptest::prelude::*;

    fn ramp(h: usize, w: usize) -> Vec<f32> {
        (0..h * w).map(|i| (i as f32 * 0.37).sin().abs()).collect()
    }

    fn max_diff(a: &[f32], b: &[f32]) -> f32 {
        a.iter()
            .zip(b)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max)
    }

    #[test]
    fn quarter_turns_permute_pixels() {
        let (h, w) = (5, 5);
        let img = ramp(h, w);
        let once = rotate(&img, h, w, 90.0);
        // Counter-clockwise: out[r][c] = in[c][w − 1 − r].
        for r in 0..h {
            for c in 0..w {
                assert!((once[r * w + c] - img[c * w + (w - 1 - r)]).abs() < 1e-5);
            }
        }
        let four = (0..4).fold(img.clone(), |acc, _| rotate(&acc, h, w, 90.0));
        assert!(max_diff(&four, &img) < 1e-5);
        assert_eq!(rotate(&img, h, w, 0.0), img);
        assert!(max_diff(&rotate(&img, h, w, 360.0), &img) < 1e-5);
    }

    #[test]
    fn rotation_preserves_a_centred_disc() {
        let (h, w) = (28, 28);
        let disc: Vec<f32> = (0..h * w)
            .map(|i| {
                let (r, c) = ((i / w) as f64 - 13.5, (i % w) as f64 - 13.5);
                if r * r + c * c < 64.0 { 1.0 } else { 0.0 }
            })
            .collect();
        let turned = rotate(&disc, h, w, 37.0);
        let (a, b): (f32, f32) = (disc.iter().sum(), turned.iter().sum());
        assert!((a - b).abs() / a < 0.02, "mass {a} vs {b}");
    }

    #[test]
    fn blur_keeps_constants_and_mass_and_spreads_points() {
        let (h, w) = (9, 9);
        let flat = vec![0.25f32; h * w];
        assert!(max_diff(&gaussian_blur(&flat, h, w, 5, 1.3).unwrap(), &flat) < 1e-6);
        let mut point = vec![0.0f32; h * w];
        point[4 * w + 4] = 1.0;
        let blurred = gaussian_blur(&point, h, w, 5, 1.0).unwrap();
        let k = gaussian_kernel(5, 1.0);
        assert!((blurred[4 * w + 4] as f64 - k[2] * k[2]).abs() < 1e-6);
        assert!((blurred.iter().sum::<f32>() - 1.0).abs() < 1e-5);
        assert!(gaussian_blur(&point, h, w, 4, 1.0).is_err());
        assert!(gaussian_blur(&point, h, w, 3, 0.0).is_err());
    }

    #[test]
    fn reflect_mirrors_without_repeating_the_edge() {
        let mapped: Vec<usize> = (-3..7).map(|i| reflect(i, 4)).collect();
        assert_eq!(mapped, [3, 2, 1, 0, 1, 2, 3, 2, 1, 0]);
        assert_eq!(reflect(-5, 1), 0);
    }

    proptest! {
        #[test]
        fn apply_is_deterministic_and_per_image(seed in any::<u64>()) {
            let shape = ImageShape::grey(6, 6);
            let rows: Vec<f32> = (0..3).flat_map(|_| ramp(6, 6)).collect();
            let x = Tensor::from_vec(rows, (3, 36), &Device::Cpu).unwrap();
            let ts = [
                Transform::Rotate { degrees: Param::Uniform { low: -30.0, high: 30.0 } },
                Transform::GaussianBlur { kernel_size: 3, sigma: Param::Uniform { low: 0.5, high: 1.5 } }
                    .with_probability(0.5),
                Transform::Invert.with_probability(0.5),
                Transform::GaussianNoise { std: 0.1 },
            ];
            let a = apply(&x, shape, &ts, Seed(seed)).unwrap().to_vec2::<f32>().unwrap();
            let b = apply(&x, shape, &ts, Seed(seed)).unwrap().to_vec2::<f32>().unwrap();
            prop_assert_eq!(&a, &b);
            // Image 1 alone, as image 0 of a batch, would draw from seed.index(0): so compare
            // against the batch of the first two rows instead, which must agree row by row.
            let first_two = x.narrow(0, 0, 2).unwrap();
            let c = apply(&first_two, shape, &ts, Seed(seed)).unwrap().to_vec2::<f32>().unwrap();
            prop_assert_eq!(&a[..2], &c[..]);
            // Inverting twice is the identity (up to rounding).
            let inv = [Transform::Invert, Transform::Invert];
            let d = apply(&x, shape, &inv, Seed(seed)).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap();
            let x = x.flatten_all().unwrap().to_vec1::<f32>().unwrap();
            prop_assert!(max_diff(&d, &x) < 1e-6);
        }
    }

    #[test]
    fn bad_parameters_and_shapes_are_errors() {
        let x = Tensor::zeros((2, 4), DType::F32, &Device::Cpu).unwrap();
        let shape = ImageShape::grey(2, 2);
        let bad = [
            Transform::GaussianNoise { std: -1.0 },
            Transform::Invert.with_probability(1.5),
            Transform::Rotate {
                degrees: Param::Uniform {
                    low: 1.0,
                    high: -1.0,
                },
            },
        ];
        for t in bad {
            assert!(apply(&x, shape, &[t], Seed(0)).is_err());
        }
        assert!(apply(&x, ImageShape::grey(3, 3), &[Transform::Invert], Seed(0)).is_err());
    }
}
