//! The floating-point types the workspace's slice kernels compute in, the branch-free elementwise
//! functions they apply to whole rows, and [`vectorized`], which compiles a kernel for the widest
//! vector instructions the processor has.
//!
//! [`Real::exp`] and [`Real::ln`] are written without branches or table lookups (the special
//! cases are selects), so a loop over a slice compiles to SIMD instructions; the standard
//! library's `exp` and `ln` are calls into libm, one element at a time.
//!
//! - eˣ: x = n ln 2 + r with n = round(x / ln 2) and |r| ≤ ln 2 / 2 (ln 2 split in two parts,
//!   Cody and Waite, so that r is exact); eʳ by its Taylor polynomial (degree 7 in f32, 13 in
//!   f64, whose truncation errors 5·10⁻⁹ and 4·10⁻¹⁸ are below half an ulp); 2ⁿ written into
//!   the exponent bits. n is read from the low mantissa bits of x·log₂e + 1.5·2ᵖ (p the mantissa
//!   width), which is rounded to an integer by the addition itself.
//! - ln x: x = m·2ᵉ with m ∈ [√½, √2); ln m = 2 atanh u = 2(u + u³/3 + u⁵/5 + …) with
//!   u = (m − 1)/(m + 1), |u| ≤ 0.172 (6 terms in f32, 11 in f64); ln x = e ln 2 + ln m.
//!
//! Both are within 2 ulp of the correctly rounded value over their whole range (tested against
//! the standard library on dense grids). Results that underflow the normal range are flushed
//! to 0 (eˣ for x below −87.3 in f32, −708.3 in f64).

use candle_core::WithDType;

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// f32 or f64: a dtype in which networks are evaluated on slices (the Gibbs sampler's
/// evaluator, the MLP's passes).
pub trait Real: WithDType + sealed::Sealed {
    /// eˣ, within 2 ulp, branch-free (see the module documentation); 0 below the normal range,
    /// +∞ above the largest finite value, NaN for NaN.
    fn exp(self) -> Self;
    /// ln x, within 2 ulp, branch-free; −∞ at 0, NaN below 0 and for NaN, +∞ at +∞.
    fn ln(self) -> Self;
    /// tanh x (the standard library's).
    fn tanh(self) -> Self;
    /// self · a + b with one rounding (the standard library's; a single instruction where the
    /// processor has FMA, and the same result everywhere).
    fn mul_add(self, a: Self, b: Self) -> Self;
}

/// p(x) = c₀ + x (c₁ + x (c₂ + …)), unrolled at compile time, each step one fused
/// multiply-add.
macro_rules! horner {
    ($x:expr; $c:expr) => { $c };
    ($x:expr; $c:expr, $($rest:expr),+) => { $x.mul_add(horner!($x; $($rest),+), $c) };
}

/// `Real` for one float type; `$bits` its bit type, `$mant` its mantissa width, `$bias` its
/// exponent bias, `[$lo, $hi]` the arguments whose eˣ is a normal number, then ln 2 split into a
/// head with few bits (so that n · head is exact) and the rounded rest, the Taylor coefficients
/// 1/k! and the odd-power coefficients 1/(2k + 1).
macro_rules! real {
    (
        $t:ty, $bits:ty, $mant:expr, $bias:expr, [$lo:expr, $hi:expr],
        ln2 = ($ln2_hi:expr, $ln2_lo:expr),
        taylor = [$($taylor:expr),+],
        atanh = [$($atanh:expr),+]
    ) => {
        impl Real for $t {
            #[inline(always)]
            fn exp(self) -> Self {
                /// 1.5 · 2^mant: adding it rounds to an integer held in the low mantissa bits.
                const ROUND: $t = 1.5 * (1u64 << $mant) as $t;
                let x = self;
                // NaN fails both comparisons and stays NaN.
                let clamped = if x < $lo { $lo } else if x > $hi { $hi } else { x };
                let t = clamped * std::f64::consts::LOG2_E as $t + ROUND;
                let n = t - ROUND;
                let r = (clamped - n * $ln2_hi) - n * $ln2_lo;
                let p: $t = horner!(r; $($taylor),+);
                // The bits of t are those of ROUND plus n; n + bias in the exponent field is 2ⁿ.
                let scale = <$t>::from_bits(
                    t.to_bits().wrapping_sub(ROUND.to_bits() - $bias) << $mant,
                );
                let y = p * scale;
                if x < $lo { 0.0 } else if x > $hi { <$t>::INFINITY } else { y }
            }

            #[inline(always)]
            fn ln(self) -> Self {
                const MANTISSA: $bits = (1 << $mant) - 1;
                /// 2^mant as a float, for reading an integer out of the low mantissa bits.
                const INT: $t = (1u64 << $mant) as $t;
                let x = self;
                // Subnormals are scaled into the normal range first.
                let tiny = x < <$t>::MIN_POSITIVE;
                let scaled = if tiny { x * INT } else { x };
                let bits = scaled.to_bits();
                // The biased exponent as a float, from the bits of 2^mant + exponent.
                let biased = <$t>::from_bits((bits >> $mant) | INT.to_bits()) - INT;
                let m = <$t>::from_bits((bits & MANTISSA) | (1.0 as $t).to_bits());
                let high = m > std::f64::consts::SQRT_2 as $t;
                let m = if high { 0.5 * m } else { m };
                let e = biased - $bias as $t + if high { 1.0 } else { 0.0 }
                    - if tiny { $mant as $t } else { 0.0 };
                let u = (m - 1.0) / (m + 1.0);
                let u2 = u * u;
                let ln_m = 2.0 * u * horner!(u2; $($atanh),+);
                let y = e * $ln2_hi + (e * $ln2_lo + ln_m);
                if x == <$t>::INFINITY {
                    x
                } else if x > 0.0 {
                    y
                } else if x == 0.0 {
                    <$t>::NEG_INFINITY
                } else {
                    <$t>::NAN
                }
            }

            fn tanh(self) -> Self {
                <$t>::tanh(self)
            }

            #[inline(always)]
            fn mul_add(self, a: Self, b: Self) -> Self {
                <$t>::mul_add(self, a, b)
            }
        }
    };
}

real!(
    f32,
    u32,
    23,
    127,
    [-87.33, 88.37],
    ln2 = (f32::from_bits(0x3f31_8000), f32::from_bits(0xb95e_8083)),
    taylor = [
        1.0,
        1.0,
        1.0 / 2.0,
        1.0 / 6.0,
        1.0 / 24.0,
        1.0 / 120.0,
        1.0 / 720.0,
        1.0 / 5040.0
    ],
    atanh = [1.0, 1.0 / 3.0, 1.0 / 5.0, 1.0 / 7.0, 1.0 / 9.0, 1.0 / 11.0]
);

real!(
    f64,
    u64,
    52,
    1023,
    [-708.39, 709.0],
    ln2 = (
        f64::from_bits(0x3fe6_2e42_fee0_0000),
        f64::from_bits(0x3dea_39ef_3579_3c76)
    ),
    taylor = [
        1.0,
        1.0,
        1.0 / 2.0,
        1.0 / 6.0,
        1.0 / 24.0,
        1.0 / 120.0,
        1.0 / 720.0,
        1.0 / 5040.0,
        1.0 / 40320.0,
        1.0 / 362880.0,
        1.0 / 3628800.0,
        1.0 / 39916800.0,
        1.0 / 479001600.0,
        1.0 / 6227020800.0
    ],
    atanh = [
        1.0,
        1.0 / 3.0,
        1.0 / 5.0,
        1.0 / 7.0,
        1.0 / 9.0,
        1.0 / 11.0,
        1.0 / 13.0,
        1.0 / 15.0,
        1.0 / 17.0,
        1.0 / 19.0,
        1.0 / 21.0
    ]
);

/// Runs `f` compiled for the widest vector instructions the processor has: AVX-512 (F and VL,
/// whose 32 registers also serve eight-lane code, with AVX2 and FMA), else AVX2 with FMA, else
/// as built (SSE2 on x86-64).
///
/// `f` and everything it calls must be `#[inline(always)]` to be compiled for those instructions
/// too, the closure included (`vectorized(#[inline(always)] || …)`): a closure left out of line
/// is compiled for the baseline, where [`Real::mul_add`] is a call into libm.
/// The results are the same on every path when the kernel keeps two rules: fused steps are
/// explicit ([`Real::mul_add`], one rounding whether the processor has an FMA instruction or not;
/// Rust never fuses a multiply and an add on its own), and every sum is taken in a fixed order
/// (the lanes run over independent outputs), so sixteen lanes compute exactly what eight or one
/// would.
///
/// ```
/// use bdl_tensor::{Real, vectorized};
/// // y ← a x + y over a row, one rounding per element on every path.
/// fn axpy<T: Real>(a: T, x: &[T], y: &mut [T]) {
///     vectorized(#[inline(always)] || y.iter_mut().zip(x).for_each(|(y, &x)| *y = a.mul_add(x, *y)));
/// }
/// let mut y = vec![1.0f64; 5];
/// axpy(2.0, &[0.5, 1.0, 1.5, 2.0, 2.5], &mut y);
/// assert_eq!(y, [2.0, 3.0, 4.0, 5.0, 6.0]);
/// ```
#[inline(always)]
pub fn vectorized<R>(f: impl FnOnce() -> R) -> R {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx512f,avx512vl,avx2,fma")]
        fn avx512<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
        #[target_feature(enable = "avx2,fma")]
        fn avx2<R>(f: impl FnOnce() -> R) -> R {
            f()
        }
        // The workspace's one `unsafe`: calling a function compiled for an instruction set
        // extension is sound once the processor is known to have it.
        // SAFETY: each function is called only when the processor has every extension it is
        // compiled for (`Extensions::detect`: AVX-512 F and VL are taken only together with AVX2
        // and FMA).
        #[allow(unsafe_code)]
        unsafe {
            match Extensions::detect() {
                Extensions::Avx512 => avx512(f),
                Extensions::Avx2 => avx2(f),
                Extensions::Baseline => f(),
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    f()
}

/// The vector extensions [`vectorized`] compiles for on this processor.
#[derive(Clone, Copy)]
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
enum Extensions {
    /// AVX-512 F and VL with AVX2 and FMA: 32 registers of 64 bytes.
    Avx512,
    /// AVX2 with FMA: 16 registers of 32 bytes.
    Avx2,
    /// As built: SSE2 on x86-64, 16 registers of 16 bytes.
    Baseline,
}

impl Extensions {
    #[inline(always)]
    fn detect() -> Self {
        #[cfg(target_arch = "x86_64")]
        {
            let avx2_fma =
                std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma");
            let avx512 = std::is_x86_feature_detected!("avx512f")
                && std::is_x86_feature_detected!("avx512vl");
            match (avx2_fma, avx512) {
                (true, true) => Self::Avx512,
                (true, false) => Self::Avx2,
                (false, _) => Self::Baseline,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        Self::Baseline
    }
}

/// The width in bytes of one vector register of the code [`vectorized`] runs on this processor:
/// 64 with AVX-512, 32 with AVX2, 16 otherwise. Kernels that hold sums in registers size their
/// tiles by it: a tile wider than the registers can hold spills its sums to memory.
///
/// ```
/// let f64_lanes = bdl_tensor::vector_bytes() / size_of::<f64>();
/// assert!([2, 4, 8].contains(&f64_lanes));
/// ```
pub fn vector_bytes() -> usize {
    match Extensions::detect() {
        Extensions::Avx512 => 64,
        Extensions::Avx2 => 32,
        Extensions::Baseline => 16,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The distance in ulp between `a` and the reference `b` (both finite or equal).
    fn ulps_f64(a: f64, b: f64) -> f64 {
        if a == b {
            return 0.0;
        }
        (a - b).abs() / (b.abs() * f64::EPSILON).max(f64::MIN_POSITIVE)
    }

    fn ulps_f32(a: f32, b: f32) -> f64 {
        if a == b {
            return 0.0;
        }
        f64::from((a - b).abs()) / (f64::from(b.abs()) * f64::from(f32::EPSILON)).max(1e-300)
    }

    /// `n` points from `lo` to `hi`, evenly spaced.
    fn grid(lo: f64, hi: f64, n: usize) -> impl Iterator<Item = f64> {
        (0..=n).map(move |i| lo + (hi - lo) * i as f64 / n as f64)
    }

    /// Against the standard library over the whole normal range, 2 ulp (the Taylor truncation
    /// is below half an ulp; the rest is the rounding of about ten operations, observed ≤ 1.5).
    #[test]
    fn exp_within_two_ulp() {
        let worst64 = grid(-708.0, 709.0, 400_000)
            .chain(grid(-1.0, 1.0, 100_000))
            .map(|x| ulps_f64(Real::exp(x), x.exp()))
            .fold(0.0, f64::max);
        assert!(worst64 <= 2.0, "f64 exp: {worst64} ulp");
        let worst32 = grid(-87.0, 88.3, 400_000)
            .chain(grid(-1.0, 1.0, 100_000))
            .map(|x| x as f32)
            .map(|x| ulps_f32(Real::exp(x), x.exp()))
            .fold(0.0, f64::max);
        assert!(worst32 <= 2.0, "f32 exp: {worst32} ulp");
    }

    #[test]
    fn exp_special_values() {
        for x in [f64::NEG_INFINITY, -1000.0, -709.0] {
            assert_eq!(Real::exp(x), 0.0);
        }
        assert_eq!(Real::exp(f64::INFINITY), f64::INFINITY);
        assert_eq!(Real::exp(710.0), f64::INFINITY);
        assert!(Real::exp(f64::NAN).is_nan());
        assert_eq!(Real::exp(0.0f64), 1.0);
        assert_eq!(Real::exp(f32::NEG_INFINITY), 0.0);
        assert_eq!(Real::exp(100.0f32), f32::INFINITY);
        assert!(Real::exp(f32::NAN).is_nan());
        assert_eq!(Real::exp(0.0f32), 1.0);
    }

    /// Against the standard library on decades from the subnormals to the largest floats, and
    /// densely on [0.5, 10] (the log-sum-exp range), 2 ulp.
    #[test]
    fn ln_within_two_ulp() {
        let decades64 = grid(-320.0, 308.0, 200_000).map(|e| 10f64.powf(e));
        let worst64 = decades64
            .chain(grid(0.5, 10.0, 200_000))
            .map(|x| ulps_f64(Real::ln(x), x.ln()))
            .fold(0.0, f64::max);
        assert!(worst64 <= 2.0, "f64 ln: {worst64} ulp");
        let decades32 = grid(-44.0, 38.0, 200_000).map(|e| 10f64.powf(e) as f32);
        let worst32 = decades32
            .chain(grid(0.5, 10.0, 200_000).map(|x| x as f32))
            .filter(|x| *x > 0.0 && x.is_finite())
            .map(|x| ulps_f32(Real::ln(x), x.ln()))
            .fold(0.0, f64::max);
        assert!(worst32 <= 2.0, "f32 ln: {worst32} ulp");
    }

    #[test]
    fn ln_special_values() {
        assert_eq!(Real::ln(0.0f64), f64::NEG_INFINITY);
        assert_eq!(Real::ln(f64::INFINITY), f64::INFINITY);
        assert!(Real::ln(-1.0f64).is_nan());
        assert!(Real::ln(f64::NAN).is_nan());
        assert_eq!(Real::ln(1.0f64), 0.0);
        assert_eq!(Real::ln(0.0f32), f32::NEG_INFINITY);
        assert!(Real::ln(-0.5f32).is_nan());
        assert_eq!(Real::ln(1.0f32), 0.0);
    }
}
