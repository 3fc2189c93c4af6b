//! The standard normal: its distribution function Φ ([`standard_normal_cdf`]) and draws at 32
//! random bits each ([`standard_normal_32`]).
//!
//! The draws are by the ziggurat method of Marsaglia & Tsang (2000, "The ziggurat method for
//! generating random variables"). The half density f(x) = exp(−x²/2) on x ≥ 0 is covered by
//! N = 256 horizontal strips of one area v: the base strip, [0, x₀) × [0, f(r)) with
//! x₀ = v / f(r), stands for the rectangle [0, r) × [0, f(r)) together with the tail x ≥ r;
//! strip i ≥ 1 is [0, xᵢ) × [f(xᵢ), f(xᵢ₊₁)), with x₁ = r, xᵢ₊₁ = f⁻¹(f(xᵢ) + v / xᵢ) and
//! x₂₅₆ = 0. A draw picks a strip i and a sign from 9 bits and a point x = j·xᵢ / 2²³ from the
//! other 23 bits j. When x < xᵢ₊₁ the point lies under the density whatever its height, and x
//! is the draw (about 99% of draws: one 32-bit word, a table read, a product and a
//! comparison). Otherwise, in the base strip, x comes from the tail x ≥ r (Marsaglia 1964:
//! r + e₁/r for exponentials e₁, e₂, accepted when 2e₂ ≥ (e₁/r)²), and in strip i ≥ 1 a
//! uniform height y ∈ [f(xᵢ), f(xᵢ₊₁)) accepts x when y < f(x); a rejected point starts over.
//! r and v are the paper's constants for 256 strips.
//!
//! The points are on a grid of spacing xᵢ / 2²³ (under 4.7 × 10⁻⁷ for every strip): the
//! precision of an f32 draw. [`normal`](crate::normal) draws f64 values from 64 bits each
//! through `rand_distr` (about 5 ns a draw here, against 3 ns); this sampler is for the hot
//! loops that need millions of draws at f32 precision (a variational method's weight
//! perturbations, one per parameter and step).

use std::sync::LazyLock;

use rand::RngCore;

/// Strips.
const N: usize = 256;
/// The start of the tail, x₁.
const R: f64 = 3.654_152_885_361_009;
/// The area of every strip.
const V: f64 = 4.928_673_233_99e-3;
/// 2²³: the grid of a strip.
const SCALE: f64 = 8_388_608.0;

/// The ziggurat's tables, from r and v.
struct Strips {
    /// ⌊2²³ xᵢ₊₁ / xᵢ⌋: the values of j below which strip i's point lies under the density.
    accept: [u32; N],
    /// xᵢ / 2²³: the point of j is j times this.
    width: [f64; N],
    /// f(xᵢ) for i in 0..=N (f(x₀) is not used; f(x₂₅₆) = 1).
    height: [f64; N + 1],
}

fn density(x: f64) -> f64 {
    (-0.5 * x * x).exp()
}

impl Strips {
    fn new() -> Self {
        let mut x = [0.0; N + 1];
        x[0] = V / density(R);
        x[1] = R;
        for i in 1..N - 1 {
            x[i + 1] = (-2.0 * (density(x[i]) + V / x[i]).ln()).sqrt();
        }
        let mut strips = Self {
            accept: [0; N],
            width: [0.0; N],
            height: [0.0; N + 1],
        };
        for i in 0..N {
            strips.accept[i] = (SCALE * x[i + 1] / x[i]) as u32;
            strips.width[i] = x[i] / SCALE;
            strips.height[i] = density(x[i]);
        }
        strips.height[N] = 1.0;
        strips
    }
}

static STRIPS: LazyLock<Strips> = LazyLock::new(Strips::new);

/// Φ(x), the standard normal distribution function (Abramowitz & Stegun 7.1.26 for erf:
/// absolute error below 1.5·10⁻⁷).
///
/// ```
/// let p = bdl_tensor::standard_normal_cdf(1.959_964);
/// assert!((p - 0.975).abs() < 1e-6);
/// ```
pub fn standard_normal_cdf(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.327_591_1 * z);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736
                + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-z * z).exp();
    if x >= 0.0 {
        0.5 * (1.0 + erf)
    } else {
        0.5 * (1.0 - erf)
    }
}

/// A uniform draw in (0, 1] from 53 bits.
fn unit_open_below(rng: &mut impl RngCore) -> f64 {
    ((rng.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
}

/// One N(0, 1) draw, from one 32-bit word of `rng` about 99% of the time (the module's
/// ziggurat).
///
/// ```
/// use bdl_tensor::{Seed, standard_normal_32};
/// let mut rng = Seed(7).rng();
/// let z = standard_normal_32(&mut rng);
/// assert!(z.is_finite());
/// ```
#[inline]
pub fn standard_normal_32(rng: &mut impl RngCore) -> f64 {
    draw(&STRIPS, rng)
}

/// Fills `out` with N(0, 1) draws: the numbers of `out.len()` calls of [`standard_normal_32`],
/// in order, from the same words of `rng`. The tables are looked up once, and since the stream
/// and `out` are distinct borrows the compiler keeps the stream's position in a register, which
/// it cannot do for calls in a loop over a vector that might share memory with the stream (a
/// field of the same struct, say): about 2.8 ns a draw here, half of it ChaCha8's.
///
/// ```
/// use bdl_tensor::{Seed, standard_normal_32, standard_normals_32};
/// let mut block = [0.0; 100];
/// standard_normals_32(&mut Seed(3).rng(), &mut block);
/// let mut rng = Seed(3).rng();
/// assert!(block.iter().all(|&z| z == standard_normal_32(&mut rng)));
/// ```
pub fn standard_normals_32(rng: &mut impl RngCore, out: &mut [f64]) {
    let strips = &*STRIPS;
    for z in out {
        *z = draw(strips, rng);
    }
}

/// One draw of the ziggurat on `strips`.
#[inline(always)]
fn draw(strips: &Strips, rng: &mut impl RngCore) -> f64 {
    let bits = rng.next_u32();
    let (i, j) = ((bits & 0xff) as usize, bits >> 9);
    let x = f64::from(j) * strips.width[i];
    if j < strips.accept[i] {
        with_sign(x, bits)
    } else {
        beyond_the_rectangle(rng, bits)
    }
}

/// Bit 8 of `bits` as the sign of x ≥ 0, without a branch (each sign is taken half of the
/// time, which a branch predictor cannot learn).
#[inline(always)]
fn with_sign(x: f64, bits: u32) -> f64 {
    f64::from_bits(x.to_bits() ^ (u64::from(bits & 0x100) << 55))
}

/// The rest of a draw whose point `bits` did not land in the part of its strip that lies
/// under the density: the tail or the strip's wedge, then fresh points until one is accepted.
#[cold]
#[inline(never)]
fn beyond_the_rectangle(rng: &mut impl RngCore, mut bits: u32) -> f64 {
    let strips = &*STRIPS;
    loop {
        let (i, j) = ((bits & 0xff) as usize, bits >> 9);
        let x = f64::from(j) * strips.width[i];
        if j < strips.accept[i] {
            return with_sign(x, bits);
        }
        if i == 0 {
            loop {
                let e1 = -unit_open_below(rng).ln() / R;
                let e2 = -unit_open_below(rng).ln();
                if 2.0 * e2 >= e1 * e1 {
                    return with_sign(R + e1, bits);
                }
            }
        }
        let (low, high) = (strips.height[i], strips.height[i + 1]);
        if low + unit_open_below(rng) * (high - low) < density(x) {
            return with_sign(x, bits);
        }
        bits = rng.next_u32();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Seed;

    #[test]
    fn the_distribution_function_matches_known_values() {
        // Φ(0) = ½, Φ(1.959964) = 0.975, Φ(−1) = 0.158655254 (tables).
        assert!((standard_normal_cdf(0.0) - 0.5).abs() < 1e-9);
        assert!((standard_normal_cdf(1.959_964) - 0.975).abs() < 2e-7);
        assert!((standard_normal_cdf(-1.0) - 0.158_655_254).abs() < 2e-7);
        assert!(standard_normal_cdf(-40.0) >= 0.0 && standard_normal_cdf(40.0) <= 1.0);
    }

    /// r and v are given to 12–17 digits; built from them, the top strip must end at the
    /// density's peak: f(x₂₅₅) + v / x₂₅₅ = f(0) = 1 (measured residual 2 × 10⁻¹¹).
    #[test]
    fn the_strips_close_at_the_peak() {
        let strips = &*STRIPS;
        let top = strips.width[N - 1] * SCALE;
        let residual = strips.height[N - 1] + V / top - 1.0;
        assert!(residual.abs() < 1e-9, "residual {residual}");
        // The strips are nested: each narrower than the one below, each accepting most points.
        for i in 1..N {
            assert!(strips.width[i] < strips.width[i - 1]);
        }
        assert!(
            strips.accept[..N - 1]
                .iter()
                .all(|&k| f64::from(k) > 0.7 * SCALE)
        );
    }

    /// 2²¹ draws binned at width 0.025 over [−4, 4] (320 bins, 8 to 16,600 expected counts)
    /// with both tails as two more bins: Pearson's χ² against Φ (322 bins, 321 degrees of
    /// freedom: mean 321, standard deviation 25.3) below 321 + 6 × 25.3. A strip's wedge or the
    /// tail sampled wrongly moves at least 0.1% of the mass over a few bins, several times
    /// this bound at this sample size. Φ's error (1.5 × 10⁻⁷) moves an expected count by under
    /// 0.7.
    #[test]
    fn draws_follow_the_standard_normal() {
        let mut rng = Seed(11).fork("ziggurat").rng();
        let n = 1usize << 21;
        let (bins, width, low) = (320, 0.025, -4.0);
        let mut counts = vec![0u64; bins + 2];
        let (mut sum, mut sum_sq, mut sum_4) = (0.0, 0.0, 0.0);
        for _ in 0..n {
            let z = standard_normal_32(&mut rng);
            let slot = ((z - low) / width).floor();
            let slot = if slot < 0.0 {
                bins
            } else if slot >= bins as f64 {
                bins + 1
            } else {
                slot as usize
            };
            counts[slot] += 1;
            (sum, sum_sq, sum_4) = (sum + z, sum_sq + z * z, sum_4 + z.powi(4));
        }
        let mut expected: Vec<f64> = (0..bins)
            .map(|b| {
                let a = low + b as f64 * width;
                standard_normal_cdf(a + width) - standard_normal_cdf(a)
            })
            .collect();
        expected.push(standard_normal_cdf(low));
        expected.push(1.0 - standard_normal_cdf(-low));
        let chi2: f64 = (counts.iter().zip(&expected))
            .map(|(&c, &p)| (c as f64 - n as f64 * p).powi(2) / (n as f64 * p))
            .sum();
        assert!(chi2 < 321.0 + 6.0 * 25.3, "chi-square {chi2}");
        // Moments, each within 5 standard errors (sd of the mean 1/√n, of the mean square
        // √(2/n), of the fourth moment √(96/n)).
        let n = n as f64;
        assert!((sum / n).abs() < 5.0 / n.sqrt());
        assert!((sum_sq / n - 1.0).abs() < 5.0 * (2.0 / n).sqrt());
        assert!((sum_4 / n - 3.0).abs() < 5.0 * (96.0 / n).sqrt());
    }

    /// Beyond r = 3.654 only the tail sampler draws: P(|z| > r) = 2(1 − Φ(r)) = 2.58 × 10⁻⁴,
    /// 4,330 of 2²⁴ draws expected (Poisson sd 66); and the tail's mean excess
    /// E[|z| − r | |z| > r] = φ(r)/(1 − Φ(r)) − r = 0.242 (sd of the mean over 4,330 draws
    /// about 0.0035), within 0.015. Without its acceptance step the tail sampler would give
    /// 1/r = 0.274.
    #[test]
    fn the_tail_has_its_mass_and_shape() {
        let mut rng = Seed(5).fork("tail").rng();
        let n = 1usize << 24;
        let excess: Vec<f64> = (0..n)
            .map(|_| standard_normal_32(&mut rng).abs() - R)
            .filter(|e| *e > 0.0)
            .collect();
        let upper = 1.0 - standard_normal_cdf(R);
        let expected = 2.0 * upper * n as f64;
        let count = excess.len() as f64;
        assert!(
            (count - expected).abs() < 5.0 * expected.sqrt(),
            "{count} vs {expected}"
        );
        let pdf = (-0.5 * R * R).exp() / (2.0 * std::f64::consts::PI).sqrt();
        let mean_excess = pdf / upper - R;
        let observed = excess.iter().sum::<f64>() / count;
        assert!(
            (observed - mean_excess).abs() < 0.015,
            "{observed} vs {mean_excess}"
        );
    }

    /// The filled draws are the calls' draws bit for bit, over 2¹⁸ draws (about 4,000 of them
    /// outside the strips' rectangles, 68 expected in the tail, so every path runs), and the
    /// stream is left at the same word.
    #[test]
    fn filled_draws_are_the_draws_one_at_a_time() {
        let stream = Seed(13).fork("fill");
        let (mut one, mut block) = (stream.rng(), stream.rng());
        let expected: Vec<f64> = (0..1 << 18).map(|_| standard_normal_32(&mut one)).collect();
        let mut drawn = vec![f64::NAN; 1 << 18];
        standard_normals_32(&mut block, &mut drawn);
        assert!((expected.iter().zip(&drawn)).all(|(a, b)| a.to_bits() == b.to_bits()));
        assert_eq!(one.next_u32(), block.next_u32());
        assert!(expected.iter().filter(|z| z.abs() > R).count() > 30);
    }

    #[test]
    fn the_same_stream_gives_the_same_draws() {
        let draws = |seed| {
            let mut rng = Seed(seed).rng();
            (0..1000)
                .map(|_| standard_normal_32(&mut rng))
                .collect::<Vec<_>>()
        };
        assert_eq!(draws(3), draws(3));
        assert_ne!(draws(3), draws(4));
    }
}
