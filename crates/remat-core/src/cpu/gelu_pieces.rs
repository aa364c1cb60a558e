//! Exact GELU in `f32` from piecewise polynomials, looked up in vector registers.
//!
//! `GELU(x) = x Phi(x)` and its derivative `GELU'(x) = Phi(x) + x phi(x)`. Both are odd-symmetric
//! around a half: with `a = |x|`, `h(a) = Phi(-a)` and `u(a) = GELU'(-a) = h(a) - a phi(a)`,
//! `Phi(x)` is `h` for `x < 0` and `1 - h` otherwise, and `GELU'(x)` likewise `u` or `1 - u`.
//! `h` and `u` are degree-6 polynomials on each of the twelve half-unit intervals of `[0, 6)`,
//! in the local coordinate `s = 2a - i - 1/2` in `[-1/2, 1/2]` (exact in `f32`), fitted to
//! the exact functions at Chebyshev nodes and rounded to `f32` (max error 3e-8 absolute,
//! half an ulp of `1/2`; `Phi` and `GELU'` within 6.1e-8 and 7.3e-8 after the `1 - v`, about
//! an ulp of values near 1). Beyond 6 both are zero (`Phi(-6) = 1e-9`).
//!
//! The erf-based formula ([`crate::fastmath::erf`], still the `erf` op's) computes both of
//! erf's branches, an exponential among them: about 45 vector operations per 16 elements.
//! Here a lookup is one `vpermps` per coefficient (the 16-entry table of each coefficient
//! sits in a register; two lookups and a blend in AVX2's 8-lane registers), then six fused
//! multiply-adds: about 20 operations. The scalar fallback indexes the same tables and uses
//! the same fused multiply-adds in the same order, so every path gives the same bits.

/// Half-unit intervals over `[0, LIMIT)`.
const PIECES: i32 = 12;
/// Where `h` and `u` become zero.
const LIMIT: f32 = 6.0;

/// `h(a) = Phi(-a)` on each half-unit interval of `[0, 6)`: coefficient `j` (row) of
/// interval `i` (column) in the local coordinate `s`; the last four columns repeat interval
/// 11 to fill a 16-lane table.
const H: [[f32; 16]; 7] = [
    [
        4.0129367e-1_f32,
        2.2662735e-1_f32,
        1.0564978e-1_f32,
        4.0059157e-2_f32,
        1.2224473e-2_f32,
        2.9797633e-3_f32,
        5.7702506e-4_f32,
        8.8417284e-5_f32,
        1.0688525e-5_f32,
        1.017083e-6_f32,
        7.604955e-8_f32,
        4.462165e-9_f32,
        4.462165e-9_f32,
        4.462165e-9_f32,
        4.462165e-9_f32,
        4.462165e-9_f32,
    ],
    [
        -1.9333404e-1_f32,
        -1.5056872e-1_f32,
        -9.132455e-2_f32,
        -4.313866e-2_f32,
        -1.5869822e-2_f32,
        -4.5467787e-3_f32,
        -1.0145238e-3_f32,
        -1.7629824e-4_f32,
        -2.3859546e-5_f32,
        -2.514819e-6_f32,
        -2.0643559e-7_f32,
        -1.3197747e-8_f32,
        -1.3197747e-8_f32,
        -1.3197747e-8_f32,
        -1.3197747e-8_f32,
        -1.3197747e-8_f32,
    ],
    [
        1.2083375e-2_f32,
        2.823163e-2_f32,
        2.853892e-2_f32,
        1.8873166e-2_f32,
        8.926777e-3_f32,
        3.1259113e-3_f32,
        8.243004e-4_f32,
        1.6527923e-4_f32,
        2.535059e-5_f32,
        2.9862977e-6_f32,
        2.709374e-7_f32,
        1.8970534e-8_f32,
        1.8970534e-8_f32,
        1.8970534e-8_f32,
        1.8970534e-8_f32,
        1.8970534e-8_f32,
    ],
    [
        7.5517143e-3_f32,
        2.7448863e-3_f32,
        -2.1400738e-3_f32,
        -3.7071484e-3_f32,
        -2.6864097e-3_f32,
        -1.2433375e-3_f32,
        -4.0423076e-4_f32,
        -9.594098e-5_f32,
        -1.69552e-5_f32,
        -2.257259e-6_f32,
        -2.2807941e-7_f32,
        -1.758051e-8_f32,
        -1.758051e-8_f32,
        -1.758051e-8_f32,
        -1.758051e-8_f32,
        -1.758051e-8_f32,
    ],
    [
        -7.394063e-4_f32,
        -1.4335489e-3_f32,
        -8.5470075e-4_f32,
        2.451967e-5_f32,
        3.835625e-4_f32,
        2.971393e-4_f32,
        1.2987832e-4_f32,
        3.809174e-5_f32,
        7.953778e-6_f32,
        1.2165049e-6_f32,
        1.3851124e-7_f32,
        1.1861262e-8_f32,
        1.1861262e-8_f32,
        1.1861262e-8_f32,
        1.1861262e-8_f32,
        1.1861262e-8_f32,
    ],
    [
        -2.6152923e-4_f32,
        3.4376255e-6_f32,
        1.843323e-4_f32,
        1.3408097e-4_f32,
        1.5324536e-5_f32,
        -3.4470668e-5_f32,
        -2.699938e-5_f32,
        -1.0788707e-5_f32,
        -2.803041e-6_f32,
        -5.100546e-7_f32,
        -6.7277504e-8_f32,
        -6.558083e-9_f32,
        -6.558083e-9_f32,
        -6.558083e-9_f32,
        -6.558083e-9_f32,
        -6.558083e-9_f32,
    ],
    [
        2.9706813e-5_f32,
        4.693113e-5_f32,
        9.125587e-6_f32,
        -2.0114669e-5_f32,
        -1.54284e-5_f32,
        -1.9587594e-6_f32,
        2.9455866e-6_f32,
        2.0694774e-6_f32,
        7.1509385e-7_f32,
        1.5827929e-7_f32,
        2.4298533e-8_f32,
        2.6841764e-9_f32,
        2.6841764e-9_f32,
        2.6841764e-9_f32,
        2.6841764e-9_f32,
        2.6841764e-9_f32,
    ],
];

/// `u(a) = GELU'(-a) = h(a) - a phi(a)`, laid out as [`H`].
const U: [[f32; 16]; 7] = [
    [
        3.0462664e-1_f32,
        7.7427854e-4_f32,
        -1.2266158e-1_f32,
        -1.1092615e-1_f32,
        -5.9189744e-2_f32,
        -2.2027534e-2_f32,
        -6.0173813e-3_f32,
        -1.2338165e-3_f32,
        -1.9211568e-4_f32,
        -2.2873075e-5_f32,
        -2.0913972e-6_f32,
        -1.472942e-7_f32,
        -1.472942e-7_f32,
        -1.472942e-7_f32,
        -1.472942e-7_f32,
        -1.472942e-7_f32,
    ],
    [
        -3.7458465e-1_f32,
        -2.1644258e-1_f32,
        -3.9954565e-2_f32,
        4.583484e-2_f32,
        4.8601378e-2_f32,
        2.5291476e-2_f32,
        8.6868545e-3_f32,
        2.1265894e-3_f32,
        3.8324037e-4_f32,
        5.1710023e-5_f32,
        5.2768432e-6_f32,
        4.0993442e-7_f32,
        4.0993442e-7_f32,
        4.0993442e-7_f32,
        4.0993442e-7_f32,
        4.0993442e-7_f32,
    ],
    [
        4.7578268e-2_f32,
        9.704621e-2_f32,
        6.9563635e-2_f32,
        1.769361e-2_f32,
        -9.484706e-3_f32,
        -1.113607e-2_f32,
        -5.409474e-3_f32,
        -1.6631207e-3_f32,
        -3.5649136e-4_f32,
        -5.54327e-5_f32,
        -6.383866e-6_f32,
        -5.513174e-7_f32,
        -5.513174e-7_f32,
        -5.513174e-7_f32,
        -5.513174e-7_f32,
        -5.513174e-7_f32,
    ],
    [
        2.8726518e-2_f32,
        2.3790349e-3_f32,
        -1.7106004e-2_f32,
        -1.4485301e-2_f32,
        -3.8420279e-3_f32,
        1.563537e-3_f32,
        1.7599706e-3_f32,
        7.590399e-4_f32,
        2.0261957e-4_f32,
        3.719809e-5_f32,
        4.9045216e-6_f32,
        4.7513305e-7_f32,
        4.7513305e-7_f32,
        4.7513305e-7_f32,
        4.7513305e-7_f32,
        4.7513305e-7_f32,
    ],
    [
        -4.358484e-3_f32,
        -7.1330457e-3_f32,
        -1.935059e-3_f32,
        2.4800696e-3_f32,
        2.2427076e-3_f32,
        5.208843e-4_f32,
        -2.2975457e-4_f32,
        -2.1030108e-4_f32,
        -7.6886674e-5_f32,
        -1.7348842e-5_f32,
        -2.6771559e-6_f32,
        -2.9509792e-7_f32,
        -2.9509792e-7_f32,
        -2.9509792e-7_f32,
        -2.9509792e-7_f32,
        -2.9509792e-7_f32,
    ],
    [
        -1.4739516e-3_f32,
        4.398736e-4_f32,
        1.2376872e-3_f32,
        3.8201088e-4_f32,
        -3.225647e-4_f32,
        -2.707517e-4_f32,
        -4.7347596e-5_f32,
        2.8187696e-5_f32,
        1.9603774e-5_f32,
        5.9618333e-6_f32,
        1.1296738e-6_f32,
        1.4651155e-7_f32,
        1.4651155e-7_f32,
        1.4651155e-7_f32,
        1.4651155e-7_f32,
        1.4651155e-7_f32,
    ],
    [
        2.3236065e-4_f32,
        2.9998468e-4_f32,
        -4.5852288e-5_f32,
        -1.7617713e-4_f32,
        -4.4296838e-5_f32,
        4.026932e-5_f32,
        2.5951325e-5_f32,
        2.2727384e-6_f32,
        -2.9101504e-6_f32,
        -1.4399695e-6_f32,
        -3.494525e-7_f32,
        -5.380448e-8_f32,
        -5.380448e-8_f32,
        -5.380448e-8_f32,
        -5.380448e-8_f32,
        -5.380448e-8_f32,
    ],
];

/// Interval `i` and local coordinate `s` of `a = |x|` clamped to `LIMIT`. NaN stays NaN (as
/// the vector `min(LIMIT, a)` does), and so does `s`: the result is NaN.
#[inline(always)]
fn locate(a: f32) -> (usize, f32) {
    let a = if LIMIT < a { LIMIT } else { a };
    let t = a * 2.0;
    let i = (t as i32).min(PIECES - 1);
    (i as usize, (t - i as f32) - 0.5)
}

/// The polynomial of table `c` on interval `i` at `s` (Horner, fused multiply-adds).
#[inline(always)]
fn piece(c: &[[f32; 16]; 7], i: usize, s: f32) -> f32 {
    let mut r = c[6][i];
    for j in (0..6).rev() {
        r = r.mul_add(s, c[j][i]);
    }
    r
}

/// `x < 0 ? v : 1 - v` with `v` zero beyond `LIMIT`: `Phi(x)` from `h`, `GELU'(x)` from `u`.
#[inline(always)]
fn unfold(c: &[[f32; 16]; 7], x: f32) -> f32 {
    let a = x.abs();
    let (i, s) = locate(a);
    let v = if a > LIMIT { 0.0 } else { piece(c, i, s) };
    if x < 0.0 {
        v
    } else {
        1.0 - v
    }
}

/// `GELU(x) = x Phi(x)`. `GELU(±0) = ±0`, `GELU(inf) = inf`, NaN gives NaN.
#[inline]
pub fn gelu(x: f32) -> f32 {
    x * unfold(&H, x)
}

/// `g GELU'(x)`.
#[inline]
pub fn gelu_grad(g: f32, x: f32) -> f32 {
    g * unfold(&U, x)
}

/// `out[i] = GELU(x[i])` on the widest vectors the CPU has.
pub fn gelu_slice(x: &[f32], out: &mut [f32]) {
    assert_eq!(x.len(), out.len());
    #[cfg(target_arch = "x86_64")]
    match super::simd_level() {
        // SAFETY: simd_level reports only what the CPU supports; lengths are equal.
        super::SimdLevel::Avx512 => return unsafe { x86::avx512(&H, x, None, out) },
        // SAFETY: as above.
        super::SimdLevel::Avx2 => return unsafe { x86::avx2(&H, x, None, out) },
        super::SimdLevel::Baseline => {}
    }
    for (o, &v) in out.iter_mut().zip(x) {
        *o = gelu(v);
    }
}

/// `out[i] = g[i] GELU'(x[i])` on the widest vectors the CPU has.
pub fn gelu_grad_slice(g: &[f32], x: &[f32], out: &mut [f32]) {
    assert!(x.len() == out.len() && g.len() == out.len());
    #[cfg(target_arch = "x86_64")]
    match super::simd_level() {
        // SAFETY: simd_level reports only what the CPU supports; lengths are equal.
        super::SimdLevel::Avx512 => return unsafe { x86::avx512(&U, x, Some(g), out) },
        // SAFETY: as above.
        super::SimdLevel::Avx2 => return unsafe { x86::avx2(&U, x, Some(g), out) },
        super::SimdLevel::Baseline => {}
    }
    for ((o, &v), &gv) in out.iter_mut().zip(x).zip(g) {
        *o = gelu_grad(gv, v);
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    //! The vector loops: `out = m unfold(c, x)` with `m` the gradient (backward) or `x`
    //! itself (forward), 16 or 8 lanes at a time, the tail in scalar code (same bits).
    use super::{unfold, LIMIT, PIECES};
    use std::arch::x86_64::*;

    /// # Safety
    /// The CPU must support AVX-512F; `x`, `out` (and `g`) have equal lengths.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn avx512(c: &[[f32; 16]; 7], x: &[f32], g: Option<&[f32]>, out: &mut [f32]) {
        let n = x.len() / 16 * 16;
        // SAFETY (whole block): every load and store addresses 16 floats below `n`.
        unsafe {
            let mut tab = [_mm512_setzero_ps(); 7];
            for (t, row) in tab.iter_mut().zip(c) {
                *t = _mm512_loadu_ps(row.as_ptr());
            }
            let (limit, two, half, one) = (
                _mm512_set1_ps(LIMIT),
                _mm512_set1_ps(2.0),
                _mm512_set1_ps(0.5),
                _mm512_set1_ps(1.0),
            );
            let last = _mm512_set1_epi32(PIECES - 1);
            for k in (0..n).step_by(16) {
                let xv = _mm512_loadu_ps(x.as_ptr().add(k));
                let a = _mm512_abs_ps(xv);
                let t = _mm512_mul_ps(_mm512_min_ps(limit, a), two);
                let i = _mm512_min_epi32(_mm512_cvttps_epi32(t), last);
                let s = _mm512_sub_ps(_mm512_sub_ps(t, _mm512_cvtepi32_ps(i)), half);
                let mut r = _mm512_permutexvar_ps(i, tab[6]);
                for j in (0..6).rev() {
                    r = _mm512_fmadd_ps(r, s, _mm512_permutexvar_ps(i, tab[j]));
                }
                let beyond = _mm512_cmp_ps_mask::<_CMP_GT_OQ>(a, limit);
                let v = _mm512_maskz_mov_ps(!beyond, r);
                let neg = _mm512_cmp_ps_mask::<_CMP_LT_OQ>(xv, _mm512_setzero_ps());
                let f = _mm512_mask_blend_ps(neg, _mm512_sub_ps(one, v), v);
                let m = match g {
                    Some(g) => _mm512_loadu_ps(g.as_ptr().add(k)),
                    None => xv,
                };
                _mm512_storeu_ps(out.as_mut_ptr().add(k), _mm512_mul_ps(m, f));
            }
        }
        tail(c, x, g, out, n);
    }

    /// # Safety
    /// The CPU must support AVX2 and FMA; `x`, `out` (and `g`) have equal lengths.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn avx2(c: &[[f32; 16]; 7], x: &[f32], g: Option<&[f32]>, out: &mut [f32]) {
        let n = x.len() / 8 * 8;
        // SAFETY (whole block): every load and store addresses 8 floats below `n`.
        unsafe {
            let mut lo = [_mm256_setzero_ps(); 7];
            let mut hi = [_mm256_setzero_ps(); 7];
            for j in 0..7 {
                lo[j] = _mm256_loadu_ps(c[j].as_ptr());
                hi[j] = _mm256_loadu_ps(c[j].as_ptr().add(8));
            }
            let (limit, two, half, one) = (
                _mm256_set1_ps(LIMIT),
                _mm256_set1_ps(2.0),
                _mm256_set1_ps(0.5),
                _mm256_set1_ps(1.0),
            );
            let abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fff_ffff));
            let (last, seven) = (_mm256_set1_epi32(PIECES - 1), _mm256_set1_epi32(7));
            for k in (0..n).step_by(8) {
                let xv = _mm256_loadu_ps(x.as_ptr().add(k));
                let a = _mm256_and_ps(xv, abs_mask);
                let t = _mm256_mul_ps(_mm256_min_ps(limit, a), two);
                let i = _mm256_min_epi32(_mm256_cvttps_epi32(t), last);
                let s = _mm256_sub_ps(_mm256_sub_ps(t, _mm256_cvtepi32_ps(i)), half);
                // Entries 8..16 live in the second register: permute both, blend by i > 7.
                let upper = _mm256_castsi256_ps(_mm256_cmpgt_epi32(i, seven));
                let look = |j: usize| {
                    _mm256_blendv_ps(
                        _mm256_permutevar8x32_ps(lo[j], i),
                        _mm256_permutevar8x32_ps(hi[j], i),
                        upper,
                    )
                };
                let mut r = look(6);
                for j in (0..6).rev() {
                    r = _mm256_fmadd_ps(r, s, look(j));
                }
                let beyond = _mm256_cmp_ps::<_CMP_GT_OQ>(a, limit);
                let v = _mm256_andnot_ps(beyond, r);
                let neg = _mm256_cmp_ps::<_CMP_LT_OQ>(xv, _mm256_setzero_ps());
                let f = _mm256_blendv_ps(_mm256_sub_ps(one, v), v, neg);
                let m = match g {
                    Some(g) => _mm256_loadu_ps(g.as_ptr().add(k)),
                    None => xv,
                };
                _mm256_storeu_ps(out.as_mut_ptr().add(k), _mm256_mul_ps(m, f));
            }
        }
        tail(c, x, g, out, n);
    }

    /// Elements `n..` in scalar code.
    #[inline(always)]
    fn tail(c: &[[f32; 16]; 7], x: &[f32], g: Option<&[f32]>, out: &mut [f32], n: usize) {
        for k in n..x.len() {
            let m = g.map_or(x[k], |g| g[k]);
            out[k] = m * unfold(c, x[k]);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Phi(x)`, `GELU(x)` and `GELU'(x)` in f64.
    fn exact(x: f64) -> (f64, f64) {
        let cdf = 0.5 * (1.0 + libm::erf(x * std::f64::consts::FRAC_1_SQRT_2));
        let pdf = (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt();
        (x * cdf, cdf + x * pdf)
    }

    /// A dense grid over [-8, 8], the interval ends, and special values.
    fn inputs() -> Vec<f32> {
        let mut x: Vec<f32> = (-400_000..=400_000).map(|i| i as f32 * 2e-5).collect();
        for k in 0..=12 {
            let e = k as f32 * 0.5;
            x.extend([e, -e, e.next_up(), e.next_down(), -e.next_up()]);
        }
        x.extend([
            1e-30,
            -1e-30,
            1e-40,
            30.0,
            -30.0,
            1e30,
            -1e30,
            f32::MAX,
            f32::MIN,
        ]);
        x
    }

    #[test]
    fn phi_and_derivative_are_within_about_an_ulp() {
        let (mut worst_f, mut worst_d) = (0f64, 0f64);
        for &x in &inputs() {
            let (f, d) = exact(x as f64);
            // Phi and GELU' directly (GELU = x Phi: the same relative error as Phi).
            let phi = unfold(&H, x) as f64;
            let want_phi = if x == 0.0 { 0.5 } else { f / x as f64 };
            worst_f = worst_f.max((phi - want_phi).abs());
            worst_d = worst_d.max((gelu_grad(1.0, x) as f64 - d).abs());
        }
        println!("Phi max abs error {worst_f:e}, GELU' {worst_d:e}");
        // About one ulp of the values near 1 (6e-8 in [0.5, 1), 1.2e-7 in [1, 2)).
        assert!(worst_f <= 6.5e-8, "Phi error {worst_f:e}");
        assert!(worst_d <= 8e-8, "GELU' error {worst_d:e}");
    }

    #[test]
    fn special_values() {
        assert_eq!(gelu(0.0).to_bits(), 0f32.to_bits());
        assert_eq!(gelu(-0.0).to_bits(), (-0f32).to_bits());
        assert_eq!(gelu(f32::INFINITY), f32::INFINITY);
        assert_eq!(gelu(100.0), 100.0);
        assert_eq!(gelu(-100.0), 0.0);
        assert!(gelu(f32::NAN).is_nan());
        assert!(gelu_grad(1.0, f32::NAN).is_nan());
        assert_eq!(gelu_grad(2.0, f32::INFINITY), 2.0);
        assert_eq!(gelu_grad(2.0, f32::NEG_INFINITY), 0.0);
        assert_eq!(gelu_grad(1.0, 0.0), 0.5);
    }

    /// The same bits (NaN as NaN) from the scalar functions and every vector path the CPU
    /// has, at lengths that leave tails.
    #[test]
    fn every_path_gives_the_scalar_bits() {
        let same = |a: &[f32], b: &[f32], what: &str| {
            for (i, (p, q)) in a.iter().zip(b).enumerate() {
                assert!(
                    p.to_bits() == q.to_bits() || (p.is_nan() && q.is_nan()),
                    "{what}: element {i}: {p} vs {q}"
                );
            }
        };
        let all = inputs();
        let g: Vec<f32> = (0..all.len()).map(|i| 1.0 - (i % 7) as f32 * 0.3).collect();
        for n in [0, 1, 7, 8, 9, 15, 16, 17, 33, all.len()] {
            let (x, g) = (&all[all.len() - n..], &g[..n]);
            let want: Vec<f32> = x.iter().map(|&v| gelu(v)).collect();
            let want_d: Vec<f32> = x.iter().zip(g).map(|(&v, &gv)| gelu_grad(gv, v)).collect();
            let mut out = vec![0f32; n];
            gelu_slice(x, &mut out);
            same(&out, &want, "dispatched forward");
            gelu_grad_slice(g, x, &mut out);
            same(&out, &want_d, "dispatched backward");
            #[cfg(target_arch = "x86_64")]
            {
                if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
                    // SAFETY: checked just above; equal lengths.
                    unsafe { x86::avx2(&H, x, None, &mut out) };
                    same(&out, &want, "avx2 forward");
                    // SAFETY: as above.
                    unsafe { x86::avx2(&U, x, Some(g), &mut out) };
                    same(&out, &want_d, "avx2 backward");
                }
                if std::is_x86_feature_detected!("avx512f") {
                    // SAFETY: checked just above; equal lengths.
                    unsafe { x86::avx512(&H, x, None, &mut out) };
                    same(&out, &want, "avx512 forward");
                    // SAFETY: as above.
                    unsafe { x86::avx512(&U, x, Some(g), &mut out) };
                    same(&out, &want_d, "avx512 backward");
                }
            }
        }
    }
}
