//! The standard normal: its distribution function Φ ([`standard_normal_cdf`]) and draws in
//! bulk at f32 precision ([`standard_normals`]).
//!
//! The draws are by the transform of Box & Muller (1958): for independent u, v uniform on
//! (0, 1), r = √(−2 ln u) and θ = 2πv give two independent N(0, 1) draws r cos θ and r sin θ.
//! Each takes one 32-bit word of a ChaCha8 stream, sixteen blocks at a time
//! ([`Groups`]): in a group, the sixteen lanes of word 2i give u and those of word 2i + 1 give v,
//! so one pass of vector instructions makes sixteen pairs. u = (k + ½) / 2²³ for the word's top
//! 23 bits k; θ's quadrant is v's word's top two bits and its angle within the quadrant
//! (k + ½) / 2²³ · π/2 for the next 23 bits, where sin and cos of the angle less π/4 are their
//! Taylor series to x¹¹ and x¹⁰ (error under 2 · 10⁻⁹ on [−π/4, π/4]). The arithmetic is in
//! f32, so the draws have f32 precision; |z| ≤ √(2 · 24 ln 2) = 5.77, and the mass beyond it
//! (10⁻⁸) is never drawn. [`normal`](crate::normal) draws f64 values from 64 bits each through
//! `rand_distr`; this sampler is for the hot loops that need millions of draws (a variational
//! method's weight perturbations, one per parameter and step): about 1.2 ns a draw here, 5×
//! faster than rand_distr's (`cargo xtask bench --only variational`).

use rand_chacha::ChaCha8Rng;

use crate::Real;
use crate::keystream::Groups;

/// Draws a group of sixteen ChaCha blocks makes.
const GROUP: usize = 256;

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

/// Fills `out` with N(0, 1) draws from `rng` (the module's transform, at f32 precision), from
/// the first whole block of the stream not yet handed out; the stream is left after the last
/// group of sixteen blocks used, whose draws beyond `out` are dropped.
///
/// ```
/// use bdl_tensor::{Seed, standard_normals};
/// let (mut a, mut b) = ([0.0; 300], [0.0; 300]);
/// standard_normals(&mut Seed(3).rng(), &mut a);
/// standard_normals(&mut Seed(3).rng(), &mut b);
/// assert_eq!(a, b);
/// assert!(a.iter().all(|z| z.abs() < 6.0));
/// ```
pub fn standard_normals(rng: &mut ChaCha8Rng, out: &mut [f64]) {
    let mut groups = Groups::after(rng);
    crate::vectorized(
        #[inline(always)]
        || {
            for out in out.chunks_mut(GROUP) {
                let words = groups.next_group();
                let mut z = [0.0f32; GROUP];
                for (words, z) in words.chunks_exact(32).zip(z.chunks_exact_mut(32)) {
                    let (u, v) = words.split_at(16);
                    let (cos, sin) = z.split_at_mut(16);
                    for lane in 0..16 {
                        let r = (-2.0 * Real::ln(unit(u[lane]))).sqrt();
                        let (c, s) = cos_sin_turn(v[lane]);
                        (cos[lane], sin[lane]) = (r * c, r * s);
                    }
                }
                for (out, z) in out.iter_mut().zip(&z) {
                    *out = f64::from(*z);
                }
            }
        },
    );
    groups.skip(rng);
}

/// (k + ½) / 2²³ ∈ (0, 1) for the top 23 bits k of `word` (exact in f32).
#[inline(always)]
fn unit(word: u32) -> f32 {
    const SCALE: f32 = 1.0 / (1u32 << 23) as f32;
    (word >> 9) as f32 * SCALE + 0.5 * SCALE
}

/// cos θ and sin θ for the angle θ = 2π w / 2³² (up to ½ in the 23 bits after the quadrant's
/// two): the quadrant q from the top two bits, the angle φ ∈ (0, π/2) within it from the next
/// 23, cos and sin of x = φ − π/4 by their series, then turned by π/4 and by q quarter turns.
#[inline(always)]
fn cos_sin_turn(word: u32) -> (f32, f32) {
    use std::f32::consts::{FRAC_1_SQRT_2, FRAC_PI_2};
    let x = (unit(word << 2) - 0.5) * FRAC_PI_2;
    let x2 = x * x;
    let sin = x * horner(
        x2,
        [
            1.0,
            -1.0 / 6.0,
            1.0 / 120.0,
            -1.0 / 5040.0,
            1.0 / 362_880.0,
            -1.0 / 39_916_800.0,
        ],
    );
    let cos = horner(
        x2,
        [
            1.0,
            -0.5,
            1.0 / 24.0,
            -1.0 / 720.0,
            1.0 / 40_320.0,
            -1.0 / 3_628_800.0,
        ],
    );
    // cos and sin of x + π/4.
    let (c, s) = ((cos - sin) * FRAC_1_SQRT_2, (cos + sin) * FRAC_1_SQRT_2);
    let quadrant = word >> 30;
    let (c, s) = if quadrant & 1 == 0 { (c, s) } else { (-s, c) };
    if quadrant & 2 == 0 { (c, s) } else { (-c, -s) }
}

/// c₀ + y (c₁ + y (c₂ + …)).
#[inline(always)]
fn horner<const K: usize>(y: f32, c: [f32; K]) -> f32 {
    c.iter().rev().fold(0.0, |acc, &c| acc.mul_add(y, c))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Seed;
    use rand::RngCore;

    /// `n` draws of one stream, filled 3,051 at a time (a Vadam step's perturbation of the
    /// bench's MLP: the last group of every call is cut short).
    fn draws(seed: Seed, n: usize) -> Vec<f64> {
        let mut rng = seed.rng();
        let mut all = vec![0.0; n];
        for chunk in all.chunks_mut(3051) {
            standard_normals(&mut rng, chunk);
        }
        all
    }

    #[test]
    fn the_distribution_function_matches_known_values() {
        // Φ(0) = ½, Φ(1.959964) = 0.975, Φ(−1) = 0.158655254 (tables).
        assert!((standard_normal_cdf(0.0) - 0.5).abs() < 1e-9);
        assert!((standard_normal_cdf(1.959_964) - 0.975).abs() < 2e-7);
        assert!((standard_normal_cdf(-1.0) - 0.158_655_254).abs() < 2e-7);
        assert!(standard_normal_cdf(-40.0) >= 0.0 && standard_normal_cdf(40.0) <= 1.0);
    }

    /// 2²¹ draws binned at width 0.025 over [−4, 4] (320 bins, 8 to 16,600 expected counts)
    /// with both tails as two more bins: Pearson's χ² against Φ (322 bins, 321 degrees of
    /// freedom: mean 321, standard deviation 25.3) below 321 + 6 × 25.3. A wrong radius or a
    /// quadrant turned the wrong way moves a large share of the mass, many times this bound at
    /// this sample size; Φ's error (1.5 × 10⁻⁷) moves an expected count by under 0.7.
    #[test]
    fn draws_follow_the_standard_normal() {
        let n = 1usize << 21;
        let (bins, width, low) = (320, 0.025, -4.0);
        let mut counts = vec![0u64; bins + 2];
        let (mut sum, mut sum_sq, mut sum_4) = (0.0, 0.0, 0.0);
        for z in draws(Seed(11).fork("box-muller"), n) {
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

    /// Beyond r = 3.654: P(|z| > r) = 2(1 − Φ(r)) = 2.58 × 10⁻⁴, 4,330 of 2²⁴ draws expected
    /// (Poisson sd 66); the mean excess E[|z| − r | |z| > r] = φ(r)/(1 − Φ(r)) − r = 0.242 (sd
    /// of the mean over 4,330 draws about 0.0035) within 0.015; and nothing beyond 5.77.
    #[test]
    fn the_tail_has_its_mass_and_shape() {
        const R: f64 = 3.654;
        let n = 1usize << 24;
        let all = draws(Seed(5).fork("tail"), n);
        assert!(all.iter().all(|z| z.abs() <= 5.78));
        let excess: Vec<f64> = all
            .iter()
            .map(|z| z.abs() - R)
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

    /// The two draws of a pair share r and have angles θ and θ − π/2 apart in their cos and
    /// sin: independent only when θ is uniform over the whole turn. Over 2²⁰ pairs, the
    /// correlations of (z₁, z₂) and of (z₁², z₂²) are within 5/√n = 0.0049 of 0 (a quadrant
    /// turned the wrong way, or θ over half a turn, makes the first 0.6 or more).
    #[test]
    fn the_two_draws_of_a_pair_are_uncorrelated() {
        let all = draws(Seed(8).fork("pairs"), 1 << 21);
        let mut pairs = Vec::new();
        for group in all.chunks(3051) {
            for (i, pair) in group.chunks_exact(32).enumerate() {
                if (i + 1) * 32 <= group.len() {
                    pairs.extend((0..16).map(|l| (pair[l], pair[16 + l])));
                }
            }
        }
        let correlation = |f: &dyn Fn(f64) -> f64| {
            let n = pairs.len() as f64;
            let (a, b): (Vec<f64>, Vec<f64>) = pairs.iter().map(|&(x, y)| (f(x), f(y))).unzip();
            let (ma, mb) = (a.iter().sum::<f64>() / n, b.iter().sum::<f64>() / n);
            let cov = a
                .iter()
                .zip(&b)
                .map(|(x, y)| (x - ma) * (y - mb))
                .sum::<f64>()
                / n;
            let var = |v: &[f64], m: f64| v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n;
            cov / (var(&a, ma) * var(&b, mb)).sqrt()
        };
        let bound = 5.0 / (pairs.len() as f64).sqrt();
        assert!(correlation(&|z| z).abs() < bound);
        assert!(correlation(&|z| z * z).abs() < bound);
    }

    /// The same stream gives the same draws, another stream others; a fill starts at the
    /// stream's next whole block and leaves the stream after its last group of sixteen blocks.
    #[test]
    fn fills_are_reproducible_and_move_the_stream_by_whole_groups() {
        let (a, b, c) = (
            draws(Seed(3), 5000),
            draws(Seed(3), 5000),
            draws(Seed(4), 5000),
        );
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mut rng = Seed(3).rng();
        rng.next_u32();
        standard_normals(&mut rng, &mut [0.0; 300]);
        // One word read: the fill starts at block 1 and takes two groups, to block 33.
        assert_eq!(rng.get_word_pos(), 33 * 16);
    }
}
