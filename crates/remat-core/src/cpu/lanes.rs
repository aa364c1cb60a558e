//! Row sums of `f32` in 64 fixed lanes, held in vector registers.
//!
//! The row kernels (layer_norm's statistics and backward sums) add a row in 64 partial sums,
//! lane `i` taking elements `i, i + 64, ...`, folded with [`super::fold_halves`], then the
//! leftover tail in order: a fixed order, so the result does not depend on the vector width
//! or the threads. Written as plain loops over `[T; 16]` accumulators, LLVM's SLP vectoriser
//! kept 16 such sums in 2-wide registers (and scalar inserts), a third of the loop's time.
//! Here the 64 lanes are four AVX-512 registers or eight AVX2 registers (four independent
//! chains of adds: one register's chain would wait on the add's latency), with the same per-lane
//! arithmetic (IEEE adds and multiplies, no fused multiply-add), so every path gives the same
//! bits as the scalar one, which stays the fallback.

/// The number of partial sums: four registers' worth, so the adds of one row do not wait on
/// each other (a single register's chain of adds is bound by the add's latency).
pub const LANES: usize = 64;
/// Lanes per [`Lanes`] value.
const UNIT: usize = 16;
/// [`Lanes`] values per row sum.
const UNITS: usize = LANES / UNIT;

/// 16 `f32` lanes in registers: the operations the row sums need.
///
/// # Safety
/// Every method needs the CPU feature of its implementation (checked by the caller through
/// [`super::simd_level`]); `load` reads 16 floats at `p`.
#[cfg(target_arch = "x86_64")]
trait Lanes: Copy {
    unsafe fn splat(v: f32) -> Self;
    unsafe fn load(p: *const f32) -> Self;
    unsafe fn add(self, o: Self) -> Self;
    unsafe fn sub(self, o: Self) -> Self;
    unsafe fn mul(self, o: Self) -> Self;
    unsafe fn lanes(self) -> [f32; UNIT];
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{Lanes, UNIT};
    use std::arch::x86_64::*;

    /// One AVX-512 register.
    #[derive(Clone, Copy)]
    pub struct Zmm(__m512);

    impl Lanes for Zmm {
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn splat(v: f32) -> Self {
            Zmm(_mm512_set1_ps(v))
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn load(p: *const f32) -> Self {
            // SAFETY: the caller passes 16 readable floats.
            Zmm(unsafe { _mm512_loadu_ps(p) })
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn add(self, o: Self) -> Self {
            Zmm(_mm512_add_ps(self.0, o.0))
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn sub(self, o: Self) -> Self {
            Zmm(_mm512_sub_ps(self.0, o.0))
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn mul(self, o: Self) -> Self {
            Zmm(_mm512_mul_ps(self.0, o.0))
        }
        #[inline]
        #[target_feature(enable = "avx512f")]
        unsafe fn lanes(self) -> [f32; UNIT] {
            let mut a = [0.0; UNIT];
            // SAFETY: `a` holds 16 floats.
            unsafe { _mm512_storeu_ps(a.as_mut_ptr(), self.0) };
            a
        }
    }

    /// Two AVX2 registers: lanes 0–7 and 8–15.
    #[derive(Clone, Copy)]
    pub struct Ymm2(__m256, __m256);

    impl Lanes for Ymm2 {
        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn splat(v: f32) -> Self {
            Ymm2(_mm256_set1_ps(v), _mm256_set1_ps(v))
        }
        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn load(p: *const f32) -> Self {
            // SAFETY: the caller passes 16 readable floats.
            unsafe { Ymm2(_mm256_loadu_ps(p), _mm256_loadu_ps(p.add(8))) }
        }
        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn add(self, o: Self) -> Self {
            Ymm2(_mm256_add_ps(self.0, o.0), _mm256_add_ps(self.1, o.1))
        }
        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn sub(self, o: Self) -> Self {
            Ymm2(_mm256_sub_ps(self.0, o.0), _mm256_sub_ps(self.1, o.1))
        }
        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn mul(self, o: Self) -> Self {
            Ymm2(_mm256_mul_ps(self.0, o.0), _mm256_mul_ps(self.1, o.1))
        }
        #[inline]
        #[target_feature(enable = "avx2")]
        unsafe fn lanes(self) -> [f32; UNIT] {
            let mut a = [0.0; UNIT];
            // SAFETY: `a` holds 16 floats.
            unsafe {
                _mm256_storeu_ps(a.as_mut_ptr(), self.0);
                _mm256_storeu_ps(a.as_mut_ptr().add(8), self.1);
            }
            a
        }
    }
}

/// The row's elements as `f32`, when `T` is `f32`.
#[inline(always)]
pub fn as_f32<T: 'static>(s: &[T]) -> Option<&[f32]> {
    if std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>() {
        // SAFETY: T is f32 (same type, so same layout and length).
        Some(unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<f32>(), s.len()) })
    } else {
        None
    }
}

/// What each row sum adds per element: the sums are `Σ a` and (for two sums) `Σ b`.
#[derive(Clone, Copy)]
pub enum RowTerms<'a> {
    /// `a = x`.
    Plain,
    /// `a = (x - mean)²`.
    SquaredDeviation { mean: f32 },
    /// `gy = g w` (or `g` without `w`), `a = gy`, `b = gy ((x - mean) rstd)`: layer_norm's
    /// backward means.
    NormGrad {
        g: &'a [f32],
        w: Option<&'a [f32]>,
        mean: f32,
        rstd: f32,
    },
}

/// The sums of [`RowTerms`] over `row` in the fixed lane order (the second is 0 unless
/// `NormGrad`), in registers where the CPU allows, else by the scalar loop: the same bits.
#[inline(always)]
pub fn row_sums(row: &[f32], terms: RowTerms<'_>) -> (f32, f32) {
    #[cfg(target_arch = "x86_64")]
    match super::simd_level() {
        // SAFETY: simd_level reports only what the CPU supports.
        super::SimdLevel::Avx512 => return unsafe { sums_avx512(row, terms) },
        // SAFETY: as above.
        super::SimdLevel::Avx2 => return unsafe { sums_avx2(row, terms) },
        super::SimdLevel::Baseline => {}
    }
    scalar_sums(row, terms)
}

/// # Safety
/// The CPU must support AVX-512F.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f")]
unsafe fn sums_avx512(row: &[f32], terms: RowTerms<'_>) -> (f32, f32) {
    // SAFETY: the caller checked the feature.
    unsafe { vector_sums::<x86::Zmm>(row, terms) }
}

/// # Safety
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn sums_avx2(row: &[f32], terms: RowTerms<'_>) -> (f32, f32) {
    // SAFETY: the caller checked the feature.
    unsafe { vector_sums::<x86::Ymm2>(row, terms) }
}

/// One element's terms, exactly as the vector lanes compute them.
#[inline(always)]
fn terms_at(row: &[f32], j: usize, terms: RowTerms<'_>) -> (f32, f32) {
    let x = row[j];
    match terms {
        RowTerms::Plain => (x, 0.0),
        RowTerms::SquaredDeviation { mean } => ((x - mean) * (x - mean), 0.0),
        RowTerms::NormGrad { g, w, mean, rstd } => {
            let gy = match w {
                Some(w) => g[j] * w[j],
                None => g[j],
            };
            (gy, gy * ((x - mean) * rstd))
        }
    }
}

/// The fixed-order sums by scalar code: lane `i` adds elements `i, i + 64, ...`, the lanes
/// fold in halves, then the tail adds in order.
fn scalar_sums(row: &[f32], terms: RowTerms<'_>) -> (f32, f32) {
    let full = row.len() / LANES * LANES;
    let (mut a, mut b) = ([0.0f32; LANES], [0.0f32; LANES]);
    for c in (0..full).step_by(LANES) {
        for i in 0..LANES {
            let (ta, tb) = terms_at(row, c + i, terms);
            a[i] += ta;
            b[i] += tb;
        }
    }
    tail(
        row,
        full,
        terms,
        super::fold_halves(a),
        super::fold_halves(b),
    )
}

/// `s1`, `s2` plus the terms of `row[full..]`, in order.
#[inline(always)]
fn tail(row: &[f32], full: usize, terms: RowTerms<'_>, mut s1: f32, mut s2: f32) -> (f32, f32) {
    for j in full..row.len() {
        let (ta, tb) = terms_at(row, j, terms);
        s1 += ta;
        s2 += tb;
    }
    (s1, s2)
}

/// [`scalar_sums`] with the 64 lanes in registers `V`.
///
/// # Safety
/// The CPU must support `V`'s feature.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn vector_sums<V: Lanes>(row: &[f32], terms: RowTerms<'_>) -> (f32, f32) {
    // SAFETY: the caller checked `V`'s feature; every load reads 16 floats at an offset below
    // `c < full <= len` of a slice of at least `row.len()` elements.
    unsafe { vector_sums_unchecked::<V>(row, terms) }
}

/// [`vector_sums`]' body.
///
/// # Safety
/// As [`vector_sums`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
#[allow(unsafe_op_in_unsafe_fn)]
// The register index `u` also gives each load's offset.
#[allow(clippy::needless_range_loop)]
unsafe fn vector_sums_unchecked<V: Lanes>(row: &[f32], terms: RowTerms<'_>) -> (f32, f32) {
    let full = row.len() / LANES * LANES;
    let p = row.as_ptr();
    let (mut a, mut b) = ([V::splat(0.0); UNITS], [V::splat(0.0); UNITS]);
    match terms {
        RowTerms::Plain => {
            for c in (0..full).step_by(LANES) {
                for u in 0..UNITS {
                    a[u] = a[u].add(V::load(p.add(c + u * UNIT)));
                }
            }
        }
        RowTerms::SquaredDeviation { mean } => {
            let m = V::splat(mean);
            for c in (0..full).step_by(LANES) {
                for u in 0..UNITS {
                    let d = V::load(p.add(c + u * UNIT)).sub(m);
                    a[u] = a[u].add(d.mul(d));
                }
            }
        }
        RowTerms::NormGrad { g, w, mean, rstd } => {
            let (m, r) = (V::splat(mean), V::splat(rstd));
            let g = &g[..row.len()];
            let w = w.map(|w| &w[..row.len()]);
            for c in (0..full).step_by(LANES) {
                for u in 0..UNITS {
                    let at = c + u * UNIT;
                    let gy = match w {
                        Some(w) => V::load(g.as_ptr().add(at)).mul(V::load(w.as_ptr().add(at))),
                        None => V::load(g.as_ptr().add(at)),
                    };
                    a[u] = a[u].add(gy);
                    b[u] = b[u].add(gy.mul(V::load(p.add(at)).sub(m).mul(r)));
                }
            }
        }
    }
    let (mut all_a, mut all_b) = ([0.0f32; LANES], [0.0f32; LANES]);
    for u in 0..UNITS {
        all_a[u * UNIT..(u + 1) * UNIT].copy_from_slice(&a[u].lanes());
        all_b[u * UNIT..(u + 1) * UNIT].copy_from_slice(&b[u].lanes());
    }
    let (s1, s2) = (super::fold_halves(all_a), super::fold_halves(all_b));
    tail(row, full, terms, s1, s2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(n: usize, seed: u32) -> Vec<f32> {
        (0..n)
            .map(|i| ((i as u32).wrapping_mul(2_654_435_761) ^ seed) as f32 / u32::MAX as f32 - 0.3)
            .collect()
    }

    #[test]
    fn every_path_gives_the_scalar_bits() {
        for n in [0, 1, 15, 16, 17, 63, 64, 65, 100, 200, 1024, 1029] {
            let (x, g, w) = (row(n, 1), row(n, 2), row(n, 3));
            let cases = [
                RowTerms::Plain,
                RowTerms::SquaredDeviation { mean: 0.2 },
                RowTerms::NormGrad {
                    g: &g,
                    w: Some(&w),
                    mean: 0.1,
                    rstd: 1.7,
                },
                RowTerms::NormGrad {
                    g: &g,
                    w: None,
                    mean: -0.1,
                    rstd: 0.9,
                },
            ];
            for terms in cases {
                let want = scalar_sums(&x, terms);
                let got = row_sums(&x, terms);
                assert_eq!(got.0.to_bits(), want.0.to_bits(), "n {n}");
                assert_eq!(got.1.to_bits(), want.1.to_bits(), "n {n}");
                #[cfg(target_arch = "x86_64")]
                if std::is_x86_feature_detected!("avx2") {
                    // SAFETY: checked just above.
                    let avx2 = unsafe { sums_avx2(&x, terms) };
                    assert_eq!(avx2.0.to_bits(), want.0.to_bits(), "avx2, n {n}");
                    assert_eq!(avx2.1.to_bits(), want.1.to_bits(), "avx2, n {n}");
                }
            }
        }
    }
}
