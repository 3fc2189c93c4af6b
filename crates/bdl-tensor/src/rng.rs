//! Seeded random streams.
//!
//! Every random number in bdl comes from a [`ChaCha8Rng`] built from a [`Seed`]. A seed forks
//! into named child seeds (`seed.fork("chain").index(3)`), so that independent parts of an
//! experiment (chain 3, split 7, Monte Carlo sample 12) draw from streams that do not overlap
//! and do not depend on the order in which the parts run. Candle's own CPU random numbers
//! cannot be seeded, so tensors are filled here: numbers are drawn into a `Vec` and handed to
//! [`Tensor::from_vec`]. The numbers are always drawn in f64 and then cast, so the same seed
//! gives the same values (up to the cast) in every dtype, on every run and thread count.

use candle_core::{DType, Device, Shape, Tensor};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, StandardNormal};
use serde::{Deserialize, Serialize};

use crate::{Error, Real, Result};

/// The root of a family of reproducible random streams.
///
/// ```
/// use bdl_tensor::Seed;
/// use rand::Rng;
/// let seed = Seed(42);
/// let a: u64 = seed.fork("chain").index(3).rng().random();
/// let b: u64 = seed.fork("chain").index(3).rng().random();
/// let c: u64 = seed.fork("chain").index(4).rng().random();
/// assert_eq!(a, b);
/// assert_ne!(a, c);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Seed(pub u64);

impl Seed {
    /// The ChaCha8 stream of this seed.
    pub fn rng(self) -> ChaCha8Rng {
        ChaCha8Rng::seed_from_u64(self.0)
    }

    /// The child seed called `name` (FNV-1a of the name, mixed with this seed by SplitMix64).
    pub fn fork(self, name: &str) -> Seed {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in name.bytes() {
            h ^= u64::from(byte);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        Seed(splitmix64(self.0 ^ splitmix64(h)))
    }

    /// The `i`-th child seed (chain `i`, split `i`, sample `i`).
    pub fn index(self, i: u64) -> Seed {
        Seed(splitmix64(
            self.0.wrapping_add(splitmix64(i ^ 0x9e37_79b9_7f4a_7c15)),
        ))
    }
}

/// The SplitMix64 finaliser: a bijective mixing of 64 bits.
fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn from_f64(values: Vec<f64>, shape: Shape, dtype: DType, device: &Device) -> Result<Tensor> {
    Ok(Tensor::from_vec(values, shape, device)?.to_dtype(dtype)?)
}

/// A tensor of independent N(`mean`, `std`²) draws.
///
/// ```
/// use bdl_tensor::{normal, Seed};
/// use candle_core::{DType, Device};
/// let mut rng = Seed(0).rng();
/// let eps = normal(&mut rng, (3, 2), 0.0, 1.0, DType::F32, &Device::Cpu).unwrap();
/// assert_eq!(eps.dims(), &[3, 2]);
/// ```
pub fn normal<S: Into<Shape>>(
    rng: &mut impl Rng,
    shape: S,
    mean: f64,
    std: f64,
    dtype: DType,
    device: &Device,
) -> Result<Tensor> {
    if !(std >= 0.0 && std.is_finite() && mean.is_finite()) {
        return Err(Error::InvalidArgument(format!(
            "normal: need a finite mean and std >= 0, got mean {mean}, std {std}"
        )));
    }
    let shape = shape.into();
    let values = (0..shape.elem_count())
        .map(|_| {
            let z: f64 = StandardNormal.sample(rng);
            mean + std * z
        })
        .collect();
    from_f64(values, shape, dtype, device)
}

/// A tensor of independent U[`low`, `high`) draws.
pub fn uniform<S: Into<Shape>>(
    rng: &mut impl Rng,
    shape: S,
    low: f64,
    high: f64,
    dtype: DType,
    device: &Device,
) -> Result<Tensor> {
    if !(low < high && low.is_finite() && high.is_finite()) {
        return Err(Error::InvalidArgument(format!(
            "uniform: need finite low < high, got [{low}, {high})"
        )));
    }
    let shape = shape.into();
    let values = (0..shape.elem_count())
        .map(|_| low + (high - low) * rng.random::<f64>())
        .collect();
    from_f64(values, shape, dtype, device)
}

/// A tensor of independent Bernoulli(`p`) draws, as 0 and 1 in `dtype`: the draws of
/// [`bernoulli_values`] with the value 1.
pub fn bernoulli<S: Into<Shape>>(
    rng: &mut impl Rng,
    shape: S,
    p: f64,
    dtype: DType,
    device: &Device,
) -> Result<Tensor> {
    let shape = shape.into();
    let values = bernoulli_values(rng, shape.elem_count(), p, 1.0)?;
    from_f64(values, shape, dtype, device)
}

/// `len` independent draws that are `value` with probability `p` and 0 otherwise: the i-th is
/// `value` when u_i < p, for u_i = ⌊w_i / 2¹¹⌋ · 2⁻⁵³ ∈ [0, 1) from the i-th 64-bit word w_i of
/// `rng` (the uniform `rng.random::<f64>()` gives; the words are read in bulk, which for a
/// ChaCha stream are the words one call at a time would read).
///
/// ```
/// use bdl_tensor::{Seed, bernoulli_values};
/// let mask = bernoulli_values(&mut Seed(1).rng(), 1000, 0.8, 1.25f32).unwrap();
/// assert!(mask.iter().all(|&m| m == 0.0 || m == 1.25));
/// let kept = mask.iter().filter(|&&m| m > 0.0).count();
/// assert!((700..900).contains(&kept));
/// ```
pub fn bernoulli_values<T: Real>(
    rng: &mut impl Rng,
    len: usize,
    p: f64,
    value: T,
) -> Result<Vec<T>> {
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::InvalidArgument(format!(
            "bernoulli: need 0 <= p <= 1, got {p}"
        )));
    }
    /// Words read at a time.
    const WORDS: usize = 256;
    const SCALE: f64 = 1.0 / (1u64 << 53) as f64;
    let (zero, mut words) = (T::from_f64(0.0), [0u64; WORDS]);
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        let words = &mut words[..WORDS.min(len - out.len())];
        rng.fill(words);
        out.extend(words.iter().map(|&w| {
            let u = (w >> 11) as f64 * SCALE;
            if u < p { value } else { zero }
        }));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::{Rng, RngCore};

    fn values(t: &Tensor) -> Vec<f64> {
        crate::to_f64_vec(t).unwrap()
    }

    proptest! {
        #[test]
        fn same_seed_same_tensor(seed in any::<u64>()) {
            let draw = || {
                let mut rng = Seed(seed).fork("test").rng();
                normal(&mut rng, (7, 5), 0.5, 2.0, DType::F64, &Device::Cpu).unwrap()
            };
            let (a, b) = (values(&draw()), values(&draw()));
            prop_assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
        }

        #[test]
        fn forks_are_distinct(seed in any::<u64>()) {
            let s = Seed(seed);
            prop_assert_ne!(s.fork("a"), s.fork("b"));
            prop_assert_ne!(s.index(0), s.index(1));
            prop_assert_ne!(s.fork("a"), s);
        }

        #[test]
        fn bernoulli_is_zero_or_one(seed in any::<u64>(), p in 0.0f64..=1.0) {
            let t = bernoulli(&mut Seed(seed).rng(), 64, p, DType::F32, &Device::Cpu).unwrap();
            prop_assert!(values(&t).iter().all(|&v| v == 0.0 || v == 1.0));
        }
    }

    /// The bulk read gives the draws one `random::<f64>()` at a time gives, and leaves the
    /// stream where they leave it: at every length around the 256-word reads, and from a stream
    /// one 32-bit word into a block (so that words straddle the ChaCha blocks).
    #[test]
    fn bulk_bernoulli_draws_are_the_one_at_a_time_draws() {
        for (len, offset) in [
            (0, 0),
            (1, 1),
            (255, 0),
            (256, 1),
            (257, 0),
            (1000, 1),
            (6400, 0),
        ] {
            let (mut bulk, mut one) = (Seed(5).rng(), Seed(5).rng());
            for rng in [&mut bulk, &mut one] {
                for _ in 0..offset {
                    rng.next_u32();
                }
            }
            let drawn = bernoulli_values(&mut bulk, len, 0.3, 2.0f32).unwrap();
            let expected: Vec<f32> = (0..len)
                .map(|_| if one.random::<f64>() < 0.3 { 2.0 } else { 0.0 })
                .collect();
            assert_eq!(drawn, expected, "{len} draws, {offset} words in");
            assert_eq!(
                bulk.next_u32(),
                one.next_u32(),
                "the stream after {len} draws"
            );
        }
    }

    #[test]
    fn thread_count_does_not_change_draws() {
        let draw = || {
            let mut rng = Seed(11).rng();
            values(&normal(&mut rng, 1000, 0.0, 1.0, DType::F32, &Device::Cpu).unwrap())
        };
        let single = draw();
        let pool = std::thread::spawn(draw).join().unwrap();
        assert_eq!(single, pool);
    }

    #[test]
    fn moments_are_plausible() {
        // 20,000 draws: the sample mean has sd 1/sqrt(20000) = 0.007 and the sample variance sd
        // about sqrt(2/20000) = 0.01, so 0.05 is more than five standard deviations.
        let v = values(
            &normal(
                &mut Seed(3).rng(),
                20_000,
                1.0,
                1.0,
                DType::F64,
                &Device::Cpu,
            )
            .unwrap(),
        );
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / v.len() as f64;
        assert!((mean - 1.0).abs() < 0.05, "mean {mean}");
        assert!((var - 1.0).abs() < 0.05, "var {var}");
        let u = values(
            &uniform(
                &mut Seed(3).rng(),
                20_000,
                -1.0,
                3.0,
                DType::F64,
                &Device::Cpu,
            )
            .unwrap(),
        );
        assert!(u.iter().all(|&x| (-1.0..3.0).contains(&x)));
    }

    #[test]
    fn bad_arguments_are_errors() {
        let mut rng = Seed(0).rng();
        assert!(normal(&mut rng, 3, 0.0, -1.0, DType::F32, &Device::Cpu).is_err());
        assert!(uniform(&mut rng, 3, 1.0, 1.0, DType::F32, &Device::Cpu).is_err());
        assert!(bernoulli(&mut rng, 3, 1.5, DType::F32, &Device::Cpu).is_err());
    }
}
