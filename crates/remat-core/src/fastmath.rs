//! Branch-free float32 `erf` and `exp` for elementwise kernels (exact GELU forward and
//! backward).
//!
//! A leaf module (it uses nothing else in the crate), so that both the dtype layer
//! (`Element::erf`, `Element::kernel_exp`) and the CPU kernels can use it without `dtype`
//! depending on `cpu`.
//!
//! `libm::erff` and `f32::exp` are calls into scalar code with branches, so a loop using them
//! runs one element at a time. The functions here are straight-line `f32` arithmetic (Horner
//! polynomials, compares that become selects, integer bit tricks), so LLVM vectorises any
//! loop over a slice that inlines them. The polynomials use fused multiply-adds (`mul_add`,
//! exactly rounded everywhere: one instruction in the kernels' AVX2+FMA and AVX-512 copies, a
//! correctly rounded library call in baseline code, which is why the kernels copy strided
//! inputs out and run these only in the wide copies); every other multiply and add is plain
//! (Rust never fuses them itself), so results are bit-identical on every target and vector
//! width.
//!
//! `erf(x)`, over `a = |x|`:
//! - `a < 0.9`: `x + x S(x^2)`, with `S(u) ~ erf(x)/x - 1` (degree 5 in `u`). Adding the
//!   correction to `x` last keeps the result within about one ulp, down to subnormal `x`.
//! - `a >= 0.9`: `sign(x) (1 - e^Q(t - 1))` with `t = min(a, 4)` and `Q ~ ln erfc` (degree
//!   7). Beyond 4, `erfc < 2^-25`, so the result rounds to exactly `±1`.
//!
//! Both branches are computed and one is selected. The coefficients are weighted minimax fits
//! (relative error for `S`, error in `erfc` for `Q`, relative error for the exponential's
//! polynomial), refitted after rounding each coefficient to `f32`. Measured over every finite
//! `f32` (the positive ones exhaustively; the function is exactly odd): max error 1.09 ulp
//! of the exact value, 6.5e-8 absolute (see the tests).

/// `S(u)`, `erf(x) ~ x + x S(x^2)` for `|x| < SMALL`; `S(0) = 2/sqrt(pi) - 1`.
const S: [f32; 6] = [
    0.128_379_15,
    -0.376_125_07,
    0.112_819_78,
    -0.026_773_395,
    0.005_004_384_6,
    -6.054_085_7e-4,
];

/// `Q(s)`, `erfc(a) ~ e^Q(a - 1)` for `SMALL <= a <= 4`.
const Q: [f32; 8] = [
    -1.849_605_6,
    -2.638_967_8,
    -0.843_099_3,
    -0.041_562_96,
    0.009_907_323,
    -0.001_684_852_2,
    2.414_197_8e-5,
    4.905_144_3e-5,
];

/// `E(r)`, `e^r ~ 1 + r (1 + r E(r))` for `|r| <= ln(2) / 2`.
const E: [f32; 5] = [
    0.499_999_94,
    0.166_665_21,
    0.041_668_292,
    0.008_368_719,
    0.001_381_872_9,
];

/// Where `erf` switches from the odd polynomial to `1 - e^Q`.
const SMALL: f32 = 0.9;
/// `erf(a)` rounds to 1 in `f32` from about 3.92 on; `Q` is fitted up to here.
const CLAMP: f32 = 4.0;

/// `ln 2` split so that `k * LN2_HI` is exact for `|k| < 256` (16 significant bits).
const LN2_HI: f32 = 0.693_145_75;
const LN2_LO: f32 = 1.428_606_8e-6;
/// `1.5 * 2^23`: adding it rounds an `f32` of magnitude below `2^22` to an integer, which
/// then sits in the low mantissa bits.
const ROUND_MAGIC: f32 = 12_582_912.0;

/// `c[0] + t (c[1] + t (c[2] + ...))`.
#[inline(always)]
fn horner<const N: usize>(c: &[f32; N], t: f32) -> f32 {
    let mut r = c[N - 1];
    for &ci in c[..N - 1].iter().rev() {
        r = r.mul_add(t, ci);
    }
    r
}

/// `e^z = p 2^k` for a clamped `z`: `z = k ln 2 + r` with `k = round(z / ln 2)` and
/// `|r| <= ln(2) / 2`, `p = e^r` by the polynomial; `k` read from the integer left in the
/// low bits of `z / ln 2 + ROUND_MAGIC`. (For NaN, `k` is meaningless and `p` is NaN.)
#[inline(always)]
fn exp_reduced(z: f32) -> (f32, i32) {
    let shifted = z * std::f32::consts::LOG2_E + ROUND_MAGIC;
    let k = shifted - ROUND_MAGIC;
    let r = z - k * LN2_HI - k * LN2_LO;
    let p = r.mul_add(r.mul_add(horner(&E, r), 1.0), 1.0);
    let k = (shifted.to_bits() as i32).wrapping_sub(ROUND_MAGIC.to_bits() as i32);
    (p, k)
}

/// `2^k` for `k` in `[-127, 128]` as its bit pattern (`-127` gives 0, `128` gives `inf`).
#[inline(always)]
fn pow2(k: i32) -> f32 {
    f32::from_bits((k.wrapping_add(127) as u32) << 23)
}

/// `e^z` for `z <= 88`, within 1.1 ulp, branch-free. Results below `2^-126` (from
/// `z < -87.3`) may flush to zero; `-inf` gives 0 and NaN gives NaN. Arguments above 88
/// saturate at `e^88` (no caller passes one: GELU's exponents are `<= 0`).
#[inline(always)]
pub fn exp(z: f32) -> f32 {
    // Clamp with compares that keep NaN (`NaN < c` is false). At -88, k = -127, whose
    // scale is the bit pattern 0: the result is exactly 0.
    let z = if z < -88.0 { -88.0 } else { z };
    let z = if z > 88.0 { 88.0 } else { z };
    let (p, k) = exp_reduced(z);
    p * pow2(k)
}

/// `e^z` over the whole `f32` range, branch-free: as [`exp`] (within 1.1 ulp of the
/// polynomial), but overflowing to `inf` above about 88.72 and producing subnormal results
/// down to `2^-149` (the scale `2^k` is applied as two normal halves, so only the final
/// multiply rounds into the subnormal range). `-inf` gives 0, `inf` gives `inf`, NaN NaN.
#[inline(always)]
pub fn exp_full(z: f32) -> f32 {
    // Beyond these the result is 0 or inf anyway; the clamp keeps k within [-150, 129].
    let z = if z < -104.0 { -104.0 } else { z };
    let z = if z > 89.0 { 89.0 } else { z };
    let (p, k) = exp_reduced(z);
    // 2^k = 2^k1 2^k2 with both halves normal (k1, k2 in [-75, 65]).
    let k1 = k >> 1;
    p * pow2(k1) * pow2(k.wrapping_sub(k1))
}

/// `tanh(x) - x = x^3 T(x^2)` near 0: the Taylor series (degree 17 in `x`).
const T: [f32; 8] = [
    -0.333_333_34,
    0.133_333_33,
    -0.053_968_254,
    0.021_869_488,
    -0.008_863_236,
    0.003_592_128,
    -0.001_455_834_4,
    5.900_274e-4,
];

/// `tanh(x)`, branch-free: `x + x^3 T(x^2)` below `|x| = 0.55`, else `±(1 - 2 / (e^2|x| + 1))`
/// (exactly `±1` from `|x| = 9.1`, where `tanh` rounds to 1). `tanh(±0) = ±0`, NaN gives NaN.
#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    let a = f32::from_bits(x.to_bits() & 0x7fff_ffff);
    let x2 = x * x;
    // (x^3 T rounds to +0 for x = -0: keep the zero's sign.)
    let small = if x == 0.0 {
        x
    } else {
        x + x * x2 * horner(&T, x2)
    };
    let e = exp_full(2.0 * if a > 10.0 { 10.0 } else { a });
    let big = 1.0 - 2.0 / (e + 1.0);
    let big = f32::from_bits(big.to_bits() | (x.to_bits() & 0x8000_0000));
    if a < 0.55 {
        small
    } else if a >= 0.55 {
        big
    } else {
        x // NaN
    }
}

/// The error function, within 1.09 ulp of the exact value (6.5e-8 absolute), branch-free.
/// `erf(±0) = ±0`, `erf(±inf) = ±1`, NaN gives NaN.
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    let a = x.abs();
    let small = x + x * horner(&S, x * x);
    // `a > CLAMP` is false for NaN, so NaN flows through to the result.
    let t = if a > CLAMP { CLAMP } else { a };
    let large = (1.0 - exp(horner(&Q, t - 1.0))).copysign(x);
    if a < SMALL {
        small
    } else {
        large
    }
}

#[cfg(test)]
mod tests {
    // Tests panic on failure by design.
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// The gap between `f32`s in the binade of `|y|` (subnormal spacing below the normal
    /// range): an error of 1 is one step of the `f32` grid around the exact value.
    fn ulp(y: f64) -> f64 {
        let e = ((y.abs().to_bits() >> 52) as i32 - 1023).max(-126);
        2f64.powi(e - 23)
    }

    /// Max |error| and max error in ulps of `f` against `reference` (in f64) over `xs`.
    fn max_errors(
        xs: impl Iterator<Item = f32>,
        f: impl Fn(f32) -> f32,
        reference: impl Fn(f64) -> f64,
    ) -> (f64, f64, f32) {
        let (mut abs, mut ulps, mut at) = (0f64, 0f64, 0f32);
        for x in xs {
            let want = reference(x as f64);
            let err = (f(x) as f64 - want).abs();
            abs = abs.max(err);
            let u = err / ulp(want);
            if u > ulps {
                ulps = u;
                at = x;
            }
        }
        (abs, ulps, at)
    }

    /// Every `stride`-th `f32` bit pattern from `lo` to `hi` (both finite, same sign).
    fn f32_range(lo: f32, hi: f32, stride: u32) -> impl Iterator<Item = f32> {
        let (lo, hi) = (
            lo.to_bits().min(hi.to_bits()),
            lo.to_bits().max(hi.to_bits()),
        );
        (lo..=hi).step_by(stride as usize).map(f32::from_bits)
    }

    #[test]
    fn erf_accuracy_dense_on_minus6_6() {
        // Every 101st f32 in (0, 6] and [-6, 0): ~21M points, subnormals included.
        for (lo, hi) in [(f32::from_bits(1), 6.0), (-6.0, -f32::from_bits(1))] {
            let (abs, ulps, at) = max_errors(f32_range(lo, hi, 101), erf, libm::erf);
            println!("erf on [{lo:e}, {hi:e}]: max abs {abs:e}, max {ulps} ulp at {at}");
            assert!(abs <= 2e-7, "max abs error {abs:e} (at {at})");
            assert!(ulps <= 1.5, "max error {ulps} ulp at {at}");
        }
        // And a uniform grid, which weights the region where erf is far from 0 and 1.
        let grid = (-600_000..=600_000).map(|i| i as f32 * 1e-5);
        let (abs, ulps, at) = max_errors(grid, erf, libm::erf);
        println!("erf on a 1e-5 grid over [-6, 6]: max abs {abs:e}, max {ulps} ulp at {at}");
        assert!(abs <= 2e-7, "max abs error {abs:e} (at {at})");
        assert!(ulps <= 1.5, "max error {ulps} ulp at {at}");
    }

    #[test]
    fn erf_special_values() {
        assert_eq!(erf(0.0).to_bits(), 0f32.to_bits());
        assert_eq!(erf(-0.0).to_bits(), (-0f32).to_bits());
        assert_eq!(erf(f32::INFINITY), 1.0);
        assert_eq!(erf(f32::NEG_INFINITY), -1.0);
        assert!(erf(f32::NAN).is_nan());
        assert!(erf(-f32::NAN).is_nan());
        for x in [4.0, 5.0, 10.0, 1e10, f32::MAX] {
            assert_eq!(erf(x), 1.0, "erf({x})");
            assert_eq!(erf(-x), -1.0, "erf(-{x})");
        }
        // Tiny values: erf(x) = 2x/sqrt(pi) (the x^3 term is far below an ulp).
        let two_over_sqrt_pi = std::f64::consts::FRAC_2_SQRT_PI;
        for x in [1e-30f32, 1e-20, 1e-10, 3e-8, f32::MIN_POSITIVE, -1e-12] {
            let want = (x as f64 * two_over_sqrt_pi) as f32;
            assert!((erf(x) - want).abs() <= want.abs() * 1.2e-7, "erf({x})");
        }
        // Subnormals: within one subnormal step of 2x/sqrt(pi).
        for bits in [1u32, 2, 3, 1000, 0x7f_ffff] {
            let x = f32::from_bits(bits);
            let want = x as f64 * two_over_sqrt_pi;
            assert!(
                (erf(x) as f64 - want).abs() <= 2f64.powi(-149),
                "erf({x:e})"
            );
            assert!(
                (erf(-x) as f64 + want).abs() <= 2f64.powi(-149),
                "erf(-{x:e})"
            );
        }
    }

    #[test]
    fn erf_is_odd_and_monotone() {
        let mut prev = -1.0f32;
        for x in f32_range(0.0, 6.0, 97) {
            let y = erf(x);
            assert_eq!(erf(-x), -y, "odd at {x}");
            assert!(y >= prev, "monotone at {x}");
            assert!(y <= 1.0, "bounded at {x}");
            prev = y;
        }
    }

    /// Every finite positive `f32` (about 2.1e9 values; ~1 min in release). Run with
    /// `cargo test --release -p remat-core erf_exhaustive -- --ignored`.
    #[test]
    #[ignore]
    fn erf_exhaustive() {
        use rayon::prelude::*;
        let worst = |a: (f64, f64, f32), b: (f64, f64, f32)| {
            let (u, at) = if a.1 >= b.1 { (a.1, a.2) } else { (b.1, b.2) };
            (a.0.max(b.0), u, at)
        };
        // 2^20 bit patterns per task, up to (not including) +inf.
        let (abs, ulps, at) = (0u32..0x7f80_0000 >> 20)
            .into_par_iter()
            .map(|hi| {
                let bits = (hi << 20)..((hi + 1) << 20);
                max_errors(bits.map(f32::from_bits), erf, libm::erf)
            })
            .reduce(|| (0.0, 0.0, 0.0), worst);
        println!("erf over all positive f32: max abs {abs:e}, max {ulps} ulp at {at:e}");
        assert!(abs <= 2e-7 && ulps <= 1.5);
    }

    #[test]
    fn exp_accuracy() {
        // Every 257th f32 in [-87.3, 0]: the range GELU's density and erf use.
        let (_, ulps, at) = max_errors(f32_range(-87.3, -0.0, 257), exp, f64::exp);
        println!("exp on [-87.3, 0]: max {ulps} ulp at {at}");
        assert!(ulps <= 1.5, "max error {ulps} ulp at {at}");
        let (_, ulps, at) = max_errors(f32_range(0.0, 88.0, 257), exp, f64::exp);
        assert!(ulps <= 1.5, "max error {ulps} ulp at {at}");
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(-0.0), 1.0);
        assert_eq!(exp(-88.0), 0.0);
        assert_eq!(exp(-1e30), 0.0);
        assert_eq!(exp(f32::NEG_INFINITY), 0.0);
        assert!(exp(f32::NAN).is_nan());
    }

    /// Largest error in ulps of `f` against the `f64` reference over `xs`.
    fn worst_ulp(
        f: impl Fn(f32) -> f32,
        exact: impl Fn(f64) -> f64,
        xs: impl Iterator<Item = f32>,
    ) -> f64 {
        let mut worst = 0.0f64;
        for x in xs {
            let want = exact(x as f64);
            let got = f(x) as f64;
            let w = want as f32;
            if !w.is_finite() || w == 0.0 || w.is_subnormal() {
                assert_eq!(got as f32, w, "x = {x}");
                continue;
            }
            worst = worst.max((got - want).abs() / ulp(want));
        }
        worst
    }

    #[test]
    fn exp_full_covers_the_whole_range() {
        let xs = f32_range(-0.0, -87.0, 997).chain(f32_range(0.0, 88.7, 997));
        let worst = worst_ulp(exp_full, f64::exp, xs);
        assert!(worst <= 1.5, "exp_full: {worst} ulp");
        assert_eq!(exp_full(89.0), f32::INFINITY);
        assert_eq!(exp_full(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp_full(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_full(-200.0), 0.0);
        assert!(exp_full(f32::NAN).is_nan());
        assert_eq!(exp_full(0.0), 1.0);
        // Subnormal results, within one subnormal step of the exact value.
        for z in [-88.0f32, -95.5, -100.0, -103.0] {
            let (got, want) = (exp_full(z) as f64, (z as f64).exp());
            assert!(
                (got - want).abs() <= 2f64.powi(-149),
                "exp_full({z}) = {got}, {want}"
            );
        }
        assert!(exp_full(88.72) < f32::INFINITY);
    }

    #[test]
    fn tanh_within_two_ulp() {
        let xs = f32_range(-0.0, -12.0, 499).chain(f32_range(0.0, 12.0, 499));
        let worst = worst_ulp(tanh, f64::tanh, xs);
        assert!(worst <= 2.0, "tanh: {worst} ulp");
        let tiny = worst_ulp(tanh, f64::tanh, f32_range(1e-30, 1e-3, 4999));
        assert!(tiny <= 1.0, "tanh near 0: {tiny} ulp");
        assert_eq!(tanh(0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(tanh(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(tanh(f32::INFINITY), 1.0);
        assert_eq!(tanh(f32::NEG_INFINITY), -1.0);
        assert_eq!(tanh(30.0), 1.0);
        assert!(tanh(f32::NAN).is_nan());
    }
}
