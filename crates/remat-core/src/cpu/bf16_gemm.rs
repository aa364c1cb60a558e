//! bfloat16 matrix products on the CPU's bf16 units (AVX512-BF16: AMD Zen 4, Intel Cooper
//! Lake and later), accumulating in float32 as PyTorch's (oneDNN's) do.
//!
//! `vdpbf16ps` multiplies 32 bf16 pairs and adds each pair's two products into one of 16
//! float32 lanes, so the operands are packed by pairs along `k`: A as 32-bit words
//! `(A[i][2p], A[i][2p+1])` per row tile of `MR` rows, B as the words `(B[2p][j],
//! B[2p+1][j])` of `NR`-column panels. The micro-kernel keeps an `MR × NR` float32 tile in
//! 24 of the 32 vector registers (12 rows: 6 rows gave 336 GFLOP/s at 1024², 12 give 412, 2
//! threads on Zen 4); row tiles run in parallel on the rayon pool, each in a fixed order, so
//! a product is the same whatever the thread count. Packing reads the operands through
//! their strides (transposed views cost no copy); the packed copies are counted scratch.
//! Where the CPU has AMX tiles [`batched`] runs `cpu::amx_gemm` instead; without
//! AVX512-BF16 it returns None and the caller widens to float32.

use super::matmul::MatOperand;
use super::Workspace;
use half::bf16;
use rayon::prelude::*;

/// Rows per micro-tile.
const MR: usize = 12;
/// Columns per micro-tile (two 16-lane registers).
const NR: usize = 32;

/// Whether this CPU runs a bf16 kernel (AMX tiles or AVX512-BF16).
pub fn available() -> bool {
    super::amx_gemm::available() || dot_available()
}

/// Whether this CPU has AVX512-BF16's `vdpbf16ps`.
fn dot_available() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        use std::sync::OnceLock;
        static HAS: OnceLock<bool> = OnceLock::new();
        *HAS.get_or_init(|| {
            std::arch::is_x86_feature_detected!("avx512f")
                && std::arch::is_x86_feature_detected!("avx512bf16")
        })
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// `out[b] = a[b] (m × k) · b[b] (k × n)` in float32, contiguous `(batch, m, n)`, for bf16
/// operands; None when the CPU has no bf16 units.
pub fn batched(
    a: &MatOperand<'_>,
    b: &MatOperand<'_>,
    m: usize,
    k: usize,
    n: usize,
) -> Option<Vec<f32>> {
    if super::amx_gemm::available() {
        return super::amx_gemm::batched(a, b, m, k, n);
    }
    dot_batched(a, b, m, k, n)
}

/// [`batched`] on `vdpbf16ps`; None without AVX512-BF16.
fn dot_batched(
    a: &MatOperand<'_>,
    b: &MatOperand<'_>,
    m: usize,
    k: usize,
    n: usize,
) -> Option<Vec<f32>> {
    if !dot_available() {
        return None;
    }
    let batches = a.batch_offsets.len();
    let mut out = super::alloc::<f32>(batches * m * n);
    if m == 0 || n == 0 {
        return Some(out);
    }
    let (av, bv) = (super::slice::<bf16>(a.data), super::slice::<bf16>(b.data));
    let kp = k.div_ceil(2);
    let (tiles, panels) = (m.div_ceil(MR), n.div_ceil(NR));
    let mut ap = Workspace::<i32>::new(tiles * kp * MR);
    let mut bp = Workspace::<i32>::new(panels * kp * NR);
    for (batch, dst) in out.chunks_mut(m * n).enumerate() {
        let (oa, ob) = (
            a.batch_offsets[batch] as isize,
            b.batch_offsets[batch] as isize,
        );
        let at = |i: usize, kk: usize| av[(oa + i as isize * a.rs + kk as isize * a.cs) as usize];
        let bt = |kk: usize, j: usize| bv[(ob + kk as isize * b.rs + j as isize * b.cs) as usize];
        // A: for each row tile, for each k pair, the MR rows' words.
        ap.par_chunks_mut(kp * MR)
            .enumerate()
            .for_each(|(t, tile)| {
                for (p, words) in tile.chunks_mut(MR).enumerate() {
                    for (r, w) in words.iter_mut().enumerate() {
                        let i = t * MR + r;
                        *w = if i < m { pair(|kk| at(i, kk), p, k) } else { 0 };
                    }
                }
            });
        // B: for each panel, for each k pair, the NR columns' words.
        bp.par_chunks_mut(kp * NR)
            .enumerate()
            .for_each(|(q, panel)| {
                for (p, words) in panel.chunks_mut(NR).enumerate() {
                    for (c, w) in words.iter_mut().enumerate() {
                        let j = q * NR + c;
                        *w = if j < n { pair(|kk| bt(kk, j), p, k) } else { 0 };
                    }
                }
            });
        let (ap, bp) = (&ap[..], &bp[..]);
        dst.par_chunks_mut(MR * n)
            .enumerate()
            .for_each(|(t, rows)| {
                let a_tile = &ap[t * kp * MR..(t + 1) * kp * MR];
                let mut c = [0f32; MR * NR];
                for q in 0..panels {
                    // SAFETY: `available()` checked the CPU features; the slices hold kp words
                    // per row or column of the tile.
                    unsafe { tile(a_tile, &bp[q * kp * NR..(q + 1) * kp * NR], kp, &mut c) };
                    let cols = NR.min(n - q * NR);
                    for (r, row) in rows.chunks_mut(n).enumerate() {
                        row[q * NR..q * NR + cols].copy_from_slice(&c[r * NR..r * NR + cols]);
                    }
                }
            });
    }
    Some(out)
}

/// The 32-bit word of the bf16 pair `(x(2p), x(2p + 1))` (0 past `k`).
#[inline(always)]
fn pair(x: impl Fn(usize) -> bf16, p: usize, k: usize) -> i32 {
    let lo = x(2 * p).to_bits() as u32;
    let hi = if 2 * p + 1 < k {
        x(2 * p + 1).to_bits() as u32
    } else {
        0
    };
    (lo | (hi << 16)) as i32
}

/// One `MR × NR` tile: `c = Σ_p a[p] ⊗ b[p]` over the packed pairs.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bf16")]
unsafe fn tile(a: &[i32], b: &[i32], kp: usize, c: &mut [f32; MR * NR]) {
    use std::arch::x86_64::*;
    let mut acc = [[_mm512_setzero_ps(); 2]; MR];
    let (pa, pb) = (a.as_ptr(), b.as_ptr());
    for p in 0..kp {
        // SAFETY: p < kp, and the slices hold kp * MR and kp * NR words.
        let (b0, b1) = unsafe {
            (
                _mm512_loadu_si512(pb.add(p * NR).cast()),
                _mm512_loadu_si512(pb.add(p * NR + 16).cast()),
            )
        };
        // SAFETY: __m512i and __m512bh are both 512 plain bits.
        let (b0, b1): (__m512bh, __m512bh) = unsafe {
            (
                std::mem::transmute::<__m512i, __m512bh>(b0),
                std::mem::transmute::<__m512i, __m512bh>(b1),
            )
        };
        for (r, row) in acc.iter_mut().enumerate() {
            // SAFETY: as above.
            let w = unsafe { *pa.add(p * MR + r) };
            // SAFETY: as above (512 plain bits).
            let av: __m512bh =
                unsafe { std::mem::transmute::<__m512i, __m512bh>(_mm512_set1_epi32(w)) };
            row[0] = _mm512_dpbf16_ps(row[0], av, b0);
            row[1] = _mm512_dpbf16_ps(row[1], av, b1);
        }
    }
    for (r, row) in acc.iter().enumerate() {
        // SAFETY: c holds MR * NR floats.
        unsafe {
            _mm512_storeu_ps(c.as_mut_ptr().add(r * NR), row[0]);
            _mm512_storeu_ps(c.as_mut_ptr().add(r * NR + 16), row[1]);
        }
    }
}

#[cfg(not(target_arch = "x86_64"))]
unsafe fn tile(_: &[i32], _: &[i32], _: usize, _: &mut [f32; MR * NR]) {
    unreachable!("available() is false off x86_64")
}

#[cfg(test)]
mod tests {
    use crate::dtype::DType;
    use crate::ops;
    use crate::tensor::Tensor;

    fn bf16_tensor(shape: &[usize], seed: u32) -> Tensor {
        let n: usize = shape.iter().product();
        let v: Vec<f32> = (0..n as u32)
            .map(|i| ((i.wrapping_mul(2_654_435_761) ^ seed) % 2001) as f32 / 1000.0 - 1.0)
            .collect();
        ops::cast(&Tensor::from_vec(v, shape).unwrap(), DType::BF16).unwrap()
    }

    /// Both kernels (AMX tiles and `vdpbf16ps`) on the CPU's units, against float32 products
    /// of the same values, at edge sizes, through strides and over a batch.
    #[test]
    fn every_kernel_matches_float32_on_the_same_values() {
        use crate::cpu::matmul::MatOperand;
        type Kernel = fn(&MatOperand<'_>, &MatOperand<'_>, usize, usize, usize) -> Option<Vec<f32>>;
        let kernels: [(&str, Kernel); 2] = [
            ("amx", crate::cpu::amx_gemm::batched),
            ("avx512-bf16", super::dot_batched),
        ];
        for &(m, k, n, transposed) in &[
            (1, 1, 1, false),
            (7, 13, 37, true),
            (6, 2, 32, false),
            (13, 64, 33, true),
            (50, 129, 70, false),
            (64, 96, 64, true),
            (33, 600, 300, false),
            (32, 1030, 64, true),
        ] {
            // Transposed: A read down its columns, B across its columns' runs.
            let a = if transposed {
                ops::transpose(&bf16_tensor(&[2, k, m], 5), 1, 2).unwrap()
            } else {
                bf16_tensor(&[2, m, k], 5)
            };
            let b = if transposed {
                ops::transpose(&bf16_tensor(&[2, n, k], 6), 1, 2).unwrap()
            } else {
                bf16_tensor(&[2, k, n], 6)
            };
            let wide = |t: &Tensor| ops::cast(t, DType::F32).unwrap();
            let want = ops::matmul(&wide(&a), &wide(&b)).unwrap().to_vec::<f32>();
            fn operand(t: &Tensor) -> MatOperand<'_> {
                let l = t.layout();
                MatOperand {
                    data: t.data(),
                    batch_offsets: (0..2).map(|i| l.offset + i * l.strides[0]).collect(),
                    rs: l.strides[1] as isize,
                    cs: l.strides[2] as isize,
                }
            }
            for (name, kernel) in kernels {
                let Some(got) = kernel(&operand(&a), &operand(&b), m, k, n) else {
                    continue; // the CPU lacks this kernel's units
                };
                assert_eq!(got.len(), want.len());
                for (g, w) in got.iter().zip(&want) {
                    assert!(
                        (g - w).abs() <= 1e-4 * (w.abs() + k as f32).sqrt(),
                        "{name} {m}x{k}x{n}: {g} vs {w}"
                    );
                }
            }
        }
    }

    #[test]
    fn products_match_float32_on_the_same_values() {
        if !super::available() {
            return; // no bf16 units: the caller widens instead
        }
        // Edge sizes (odd k, partial tiles and panels), a transposed operand, a batch.
        for &(m, k, n) in &[
            (1, 1, 1),
            (7, 13, 37),
            (6, 2, 32),
            (13, 64, 33),
            (50, 129, 70),
        ] {
            let a = bf16_tensor(&[m, k], 1);
            let bt = bf16_tensor(&[n, k], 2);
            let b = ops::transpose(&bt, 0, 1).unwrap();
            let got = ops::cast(&ops::matmul(&a, &b).unwrap(), DType::F32).unwrap();
            let wide = |t: &Tensor| ops::cast(t, DType::F32).unwrap();
            let want = ops::matmul(&wide(&a), &wide(&b)).unwrap();
            for (g, w) in got.to_vec::<f32>().iter().zip(want.to_vec::<f32>()) {
                assert!(
                    (g - w).abs() <= 2f32.powi(-7) * (w.abs() + 1.0),
                    "{m}x{k}x{n}: {g} vs {w}"
                );
            }
        }
        let a = bf16_tensor(&[3, 5, 9], 3);
        let b = bf16_tensor(&[3, 9, 4], 4);
        assert_eq!(ops::matmul(&a, &b).unwrap().shape(), &[3, 5, 4]);
    }
}
