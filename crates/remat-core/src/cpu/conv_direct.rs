//! A direct float32 convolution for AVX-512: stride 1, no dilation, one group, one or two
//! spatial axes. It computes the forward, and the input gradient as the forward of the
//! output gradient with the kernel flipped and its channel axes swapped (stride 1 makes the
//! adjoint a convolution too), with no im2col matrix and no fold.
//!
//! **The grid.** Each tile of output lines copies its input lines once, zero-padded to
//! `wp = w + 2·pw` columns. On a grid that wide (the last `kw - 1` columns of each output line
//! wasted), output position `q` and kernel element `(ci, i, j)` read the copy at
//! `q + ci·plane + i·wp + j`: for every kernel element the positions' inputs are one
//! contiguous run. So the convolution is a product `Wᵀ · B` whose right operand `B` is the
//! copy read at one offset per row, and its micro-kernel loads four vectors of 16 positions
//! per kernel element and multiplies them by 6 broadcast weights (24 accumulators): 24 FMAs
//! per 10 loads, from a working set (the tile's input lines around 64 positions) that stays in
//! L1. On a 3×3, 32-channel convolution of 32 × 32 images it ran at 157 GFLOP/s on one Xeon
//! core, where im2col and the GEMM together came to 85.
//!
//! The weight gradient is a reduction over positions, which the GEMM does well, and stays
//! with im2col (see `ops/conv_cpu.rs`).
//!
//! Tiles are a sample's output lines, cut so that a tile's copy and output grid take at most
//! `TILE_BYTES`; the tiles are split between the threads in contiguous runs. Every
//! workspace is counted by the byte counters.

use crate::cpu::{transpose_into, Workspace};

/// The most bytes one tile's input copy and output grid take together: the micro-kernel's
/// working set is a few lines around 64 positions whatever the tile, and larger tiles copy
/// fewer input lines twice (a tile of `t` output lines copies `t + kh - 1`: with 1 MiB tiles a
/// 128-channel 3×3 convolution of a 256 × 256 image copied each line twice).
const TILE_BYTES: usize = 4 << 20;

/// Output positions per micro-kernel tile (four AVX-512 vectors).
const STEP: usize = 64;

/// Output channels per micro-kernel tile.
const OB: usize = 6;

/// A stride-1 convolution's sizes on a 2-D plane (a 1-D one has one row): input
/// `(n, c, input)`, weight `(o, c, kernel)`, zero padding on both sides.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Direct {
    pub n: usize,
    pub c: usize,
    pub o: usize,
    pub input: [usize; 2],
    pub kernel: [usize; 2],
    pub padding: [usize; 2],
}

impl Direct {
    /// Output lines and positions per line.
    fn out(&self) -> [usize; 2] {
        let f = |a: usize| (self.input[a] + 2 * self.padding[a] + 1).saturating_sub(self.kernel[a]);
        [f(0), f(1)]
    }
    /// Columns of the padded copy, and grid positions per output line.
    fn wp(&self) -> usize {
        self.input[1] + 2 * self.padding[1]
    }
    /// Output lines per tile: as many as [`TILE_BYTES`] holds (at least one), fewer where that
    /// leaves a thread without work.
    fn lines_per_tile(&self) -> usize {
        let [oh, _] = self.out();
        let per_line = (self.c + self.o) * self.wp() * 4;
        let fixed = self.c * (self.kernel[0] - 1) * self.wp() * 4;
        let mut lines = (TILE_BYTES.saturating_sub(fixed) / per_line.max(1)).clamp(1, oh.max(1));
        let threads = crate::parallel::num_threads();
        while lines > 1 && self.n * oh.div_ceil(lines) < threads {
            lines = lines.div_ceil(2);
        }
        lines
    }
    /// Grid positions of a tile of `lines` output lines, rounded up to whole micro-kernel
    /// tiles.
    fn positions(&self, lines: usize) -> usize {
        (lines * self.wp()).next_multiple_of(STEP)
    }
    /// Elements of a tile's input copy, with the slack its last micro-kernel tile reads past
    /// the copy's lines.
    fn copy_len(&self, lines: usize) -> usize {
        self.c * (lines + self.kernel[0] - 1) * self.wp() + STEP + self.kernel[1]
    }

    /// Whether this kernel runs here and pays: AVX-512 is there, the output is not empty,
    /// and the grid wastes at most a fifth of its positions (narrow lines with wide kernels,
    /// such as 8 × 8 planes under a 3×3 kernel, keep im2col).
    pub(crate) fn worth_it(&self) -> bool {
        let [oh, ow] = self.out();
        let lines = self.lines_per_tile();
        let useful = lines.min(oh) * ow;
        crate::cpu::simd_level() == crate::cpu::SimdLevel::Avx512
            && self.n * self.c * self.o * oh * ow > 0
            && 5 * self.positions(lines.min(oh)) <= 6 * useful
    }

    /// Whether the input gradient is a convolution of this kind: the flipped kernel's padding
    /// `k - 1 - p` is not negative.
    pub(crate) fn has_adjoint(&self) -> bool {
        (0..2).all(|a| self.padding[a] < self.kernel[a])
    }

    /// `(n, o, oh · ow)`: the convolution of contiguous `x` and `w` (`(o, c, kh, kw)`), plus
    /// `bias` per output channel.
    pub(crate) fn forward(&self, x: &[f32], w: &[f32], bias: Option<&[f32]>) -> Vec<f32> {
        let r = self.c * self.kernel[0] * self.kernel[1];
        // (r, o): each kernel element's weights for every output channel side by side.
        let mut wt = Workspace::<f32>::new(r * self.o);
        transpose_into(w, self.o, r, &mut wt);
        self.run(x, &wt, bias)
    }

    /// The input gradient `(n, c, h · w)` from the output gradient `gy (n, o, oh · ow)` and
    /// the weight `w (o, c, kh, kw)`, for a convolution with [`Direct::has_adjoint`].
    pub(crate) fn input_grad(&self, gy: &[f32], w: &[f32]) -> Vec<f32> {
        let ([kh, kw], [ph, pw]) = (self.kernel, self.padding);
        let adjoint = Direct {
            n: self.n,
            c: self.o,
            o: self.c,
            input: self.out(),
            kernel: self.kernel,
            padding: [kh - 1 - ph, kw - 1 - pw],
        };
        // Row (oo, i, j) of the adjoint's (r, c) weight holds w[oo, ci, kh-1-i, kw-1-j] for
        // every ci.
        let mut wt = Workspace::<f32>::new(w.len());
        let (c, ksz) = (self.c, kh * kw);
        for oo in 0..self.o {
            for ci in 0..c {
                for k in 0..ksz {
                    wt[(oo * ksz + (ksz - 1 - k)) * c + ci] = w[(oo * c + ci) * ksz + k];
                }
            }
        }
        adjoint.run(gy, &wt, None)
    }

    /// The convolution of `x` with the `(r, o)` weight `wt`.
    fn run(&self, x: &[f32], wt: &[f32], bias: Option<&[f32]>) -> Vec<f32> {
        let ([oh, ow], wp) = (self.out(), self.wp());
        let (o, l) = (self.o, oh * ow);
        let mut out = crate::cpu::alloc::<f32>(self.n * o * l);
        let lines = self.lines_per_tile();
        let tiles_per_sample = oh.div_ceil(lines);
        let tiles = self.n * tiles_per_sample;
        let (copy, grid) = (self.copy_len(lines), o * self.positions(lines));
        let parts = crate::parallel::num_threads().min(tiles).max(1);
        let mut work = Workspace::<f32>::new(parts * (copy + grid));
        let (pwork, pout) = (work.as_mut_ptr() as usize, out.as_mut_ptr() as usize);
        crate::parallel::run_parts(parts, |part| {
            // SAFETY: workspace `part` belongs to this part alone.
            let ws = unsafe {
                std::slice::from_raw_parts_mut(
                    (pwork as *mut f32).add(part * (copy + grid)),
                    copy + grid,
                )
            };
            let (xp, g) = ws.split_at_mut(copy);
            for t in part * tiles / parts..(part + 1) * tiles / parts {
                let (s, l0) = (t / tiles_per_sample, t % tiles_per_sample * lines);
                let l1 = (l0 + lines).min(oh);
                let offs = self.copy_lines(x, s, l0..l1, xp);
                let ld = self.positions(l1 - l0);
                // SAFETY: xp holds the copy and its slack (see `copy_len`), so every row's
                // reads at offs[r] + [0, ld) lie inside it; g holds o rows of ld.
                unsafe { product(xp, &offs, wt, o, ld, bias, g.as_mut_ptr()) };
                for oo in 0..o {
                    for (a, line) in (l0..l1).enumerate() {
                        // SAFETY: this line of sample s's channel oo, written by this part only.
                        let dst = unsafe {
                            std::slice::from_raw_parts_mut(
                                (pout as *mut f32).add((s * o + oo) * l + line * ow),
                                ow,
                            )
                        };
                        dst.copy_from_slice(&g[oo * ld + a * wp..][..ow]);
                    }
                }
            }
        });
        out
    }

    /// Copy the input lines output lines `lines` of sample `s` read into `xp`, zero-padded,
    /// and return each kernel element's offset into the copy.
    fn copy_lines(
        &self,
        x: &[f32],
        s: usize,
        lines: std::ops::Range<usize>,
        xp: &mut [f32],
    ) -> Vec<usize> {
        let ([h, w], [kh, kw], [ph, pw], wp) = (self.input, self.kernel, self.padding, self.wp());
        let rows = lines.len() + kh - 1;
        let plane = rows * wp;
        // Only what no line covers is zeroed: the padding columns, the lines in the padding,
        // and the slack past the last channel.
        for ci in 0..self.c {
            let src = &x[(s * self.c + ci) * h * w..][..h * w];
            for a in 0..rows {
                let line = &mut xp[ci * plane + a * wp..][..wp];
                match (lines.start + a).checked_sub(ph).filter(|&ih| ih < h) {
                    Some(ih) => {
                        line[..pw].fill(0.0);
                        line[pw..pw + w].copy_from_slice(&src[ih * w..][..w]);
                        line[pw + w..].fill(0.0);
                    }
                    None => line.fill(0.0),
                }
            }
        }
        xp[self.c * plane..].fill(0.0);
        let mut offs = Vec::with_capacity(self.c * kh * kw);
        for ci in 0..self.c {
            for i in 0..kh {
                for j in 0..kw {
                    offs.push(ci * plane + i * wp + j);
                }
            }
        }
        offs
    }
}

/// `g (o × ld, row-major) = bias + wtᵀ · B`, `B[r][q] = xp[offs[r] + q]`, `wt (r × o)`.
///
/// # Safety
/// `xp[offs[r] + q]` must be readable for every row and `q < ld`; `g` must address `o · ld`
/// writable elements; `ld` must be a multiple of [`STEP`].
unsafe fn product(
    xp: &[f32],
    offs: &[usize],
    wt: &[f32],
    o: usize,
    ld: usize,
    bias: Option<&[f32]>,
    g: *mut f32,
) {
    debug_assert!(ld.is_multiple_of(STEP) && offs.len() * o == wt.len());
    debug_assert!(offs.iter().all(|&off| off + ld <= xp.len()));
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the caller checked AVX-512F (`Direct::worth_it`); the rest is forwarded.
    unsafe {
        avx512::product(xp.as_ptr(), offs, wt.as_ptr(), o, ld, bias, g)
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("the direct convolution runs only where AVX-512 is detected")
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{OB, STEP};
    use std::arch::x86_64::*;

    /// See [`super::product`]; position tiles outer, so a tile's input stays in L1 while every
    /// block of output channels reads it.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn product(
        xp: *const f32,
        offs: &[usize],
        wt: *const f32,
        o: usize,
        ld: usize,
        bias: Option<&[f32]>,
        g: *mut f32,
    ) {
        for q0 in (0..ld).step_by(STEP) {
            for o0 in (0..o).step_by(OB) {
                // SAFETY: forwarded; the tile's channels o0.. and positions q0..q0 + STEP.
                unsafe {
                    match o - o0 {
                        1 => tile::<1>(xp, offs, wt, o, o0, q0, bias, g, ld),
                        2 => tile::<2>(xp, offs, wt, o, o0, q0, bias, g, ld),
                        3 => tile::<3>(xp, offs, wt, o, o0, q0, bias, g, ld),
                        4 => tile::<4>(xp, offs, wt, o, o0, q0, bias, g, ld),
                        5 => tile::<5>(xp, offs, wt, o, o0, q0, bias, g, ld),
                        _ => tile::<OB>(xp, offs, wt, o, o0, q0, bias, g, ld),
                    }
                }
            }
        }
    }

    /// One micro-kernel tile: `B` output channels from `o0`, [`STEP`] positions from `q0`,
    /// summed over every kernel element in registers.
    #[inline]
    #[target_feature(enable = "avx512f")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn tile<const B: usize>(
        xp: *const f32,
        offs: &[usize],
        wt: *const f32,
        o: usize,
        o0: usize,
        q0: usize,
        bias: Option<&[f32]>,
        g: *mut f32,
        ld: usize,
    ) {
        let mut acc = [[_mm512_setzero_ps(); 4]; B];
        if let Some(b) = bias {
            for (j, row) in acc.iter_mut().enumerate() {
                *row = [_mm512_set1_ps(b[o0 + j]); 4];
            }
        }
        // SAFETY (every access below): the caller's bounds (see `super::product`).
        unsafe {
            let (xq, mut w) = (xp.add(q0), wt.add(o0));
            for &off in offs {
                let p = xq.add(off);
                let xv = [
                    _mm512_loadu_ps(p),
                    _mm512_loadu_ps(p.add(16)),
                    _mm512_loadu_ps(p.add(32)),
                    _mm512_loadu_ps(p.add(48)),
                ];
                for (j, row) in acc.iter_mut().enumerate() {
                    let wv = _mm512_set1_ps(*w.add(j));
                    for (a, &v) in row.iter_mut().zip(&xv) {
                        *a = _mm512_fmadd_ps(wv, v, *a);
                    }
                }
                w = w.add(o);
            }
            for (j, row) in acc.iter().enumerate() {
                let d = g.add((o0 + j) * ld + q0);
                for (v, &a) in row.iter().enumerate() {
                    _mm512_storeu_ps(d.add(16 * v), a);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Direct;

    /// Values in [-1, 1) from a fixed sequence.
    fn values(n: usize, seed: u64) -> Vec<f32> {
        let mut s = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (0..n)
            .map(|_| {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
            })
            .collect()
    }

    /// The convolution by its definition, in float64.
    fn reference(d: &Direct, x: &[f32], w: &[f32], bias: Option<&[f32]>) -> Vec<f64> {
        let ([h, wd], [kh, kw], [ph, pw], [oh, ow]) = (d.input, d.kernel, d.padding, d.out());
        let mut out = vec![0.0; d.n * d.o * oh * ow];
        for s in 0..d.n {
            for oo in 0..d.o {
                for a in 0..oh {
                    for b in 0..ow {
                        let mut acc = bias.map_or(0.0, |bb| bb[oo] as f64);
                        for ci in 0..d.c {
                            for i in 0..kh {
                                for j in 0..kw {
                                    let (ih, iw) = (
                                        (a + i) as isize - ph as isize,
                                        (b + j) as isize - pw as isize,
                                    );
                                    if ih < 0 || iw < 0 || ih >= h as isize || iw >= wd as isize {
                                        continue;
                                    }
                                    let xv =
                                        x[((s * d.c + ci) * h + ih as usize) * wd + iw as usize];
                                    acc +=
                                        xv as f64 * w[((oo * d.c + ci) * kh + i) * kw + j] as f64;
                                }
                            }
                        }
                        out[((s * d.o + oo) * oh + a) * ow + b] = acc;
                    }
                }
            }
        }
        out
    }

    /// The input gradient by its definition: `gx[x] = Σ gy[y] · w` over the outputs `y`
    /// that read `x`.
    fn reference_input_grad(d: &Direct, gy: &[f32], w: &[f32]) -> Vec<f64> {
        let ([h, wd], [kh, kw], [ph, pw], [oh, ow]) = (d.input, d.kernel, d.padding, d.out());
        let mut gx = vec![0.0; d.n * d.c * h * wd];
        for s in 0..d.n {
            for oo in 0..d.o {
                for a in 0..oh {
                    for b in 0..ow {
                        let g = gy[((s * d.o + oo) * oh + a) * ow + b] as f64;
                        for ci in 0..d.c {
                            for i in 0..kh {
                                for j in 0..kw {
                                    let (ih, iw) = (
                                        (a + i) as isize - ph as isize,
                                        (b + j) as isize - pw as isize,
                                    );
                                    if ih < 0 || iw < 0 || ih >= h as isize || iw >= wd as isize {
                                        continue;
                                    }
                                    let at = ((s * d.c + ci) * h + ih as usize) * wd + iw as usize;
                                    gx[at] += g * w[((oo * d.c + ci) * kh + i) * kw + j] as f64;
                                }
                            }
                        }
                    }
                }
            }
        }
        gx
    }

    fn close(got: &[f32], want: &[f64], what: &str) {
        assert_eq!(got.len(), want.len(), "{what}: length");
        let scale = want.iter().fold(1.0f64, |m, v| m.max(v.abs()));
        for (i, (&g, &e)) in got.iter().zip(want).enumerate() {
            assert!(
                (g as f64 - e).abs() <= 1e-5 * scale,
                "{what}[{i}]: {g} against {e}"
            );
        }
    }

    #[test]
    fn forward_and_input_gradient_match_the_definition() {
        if crate::cpu::simd_level() != crate::cpu::SimdLevel::Avx512 {
            eprintln!("skipped: the direct convolution needs AVX-512F");
            return;
        }
        // (n, c, o, h, w, kh, kw, ph, pw): odd channel counts (not multiples of the 6-channel
        // micro-kernel), 1-D planes, no padding and the most padding the adjoint allows,
        // rectangular kernels, and a plane cut into several tiles.
        let cases = [
            (2, 3, 7, 5, 9, 3, 3, 1, 1),
            (1, 4, 13, 1, 40, 1, 5, 0, 2),
            (3, 5, 6, 9, 7, 2, 4, 1, 3),
            (1, 2, 1, 33, 33, 3, 3, 0, 0),
            (2, 32, 32, 32, 32, 3, 3, 1, 1),
            (1, 64, 16, 120, 130, 3, 3, 2, 2),
            (2, 3, 64, 64, 64, 5, 5, 2, 2),
        ];
        for (k, &(n, c, o, h, w, kh, kw, ph, pw)) in cases.iter().enumerate() {
            let d = Direct {
                n,
                c,
                o,
                input: [h, w],
                kernel: [kh, kw],
                padding: [ph, pw],
            };
            assert!(d.has_adjoint());
            let [oh, ow] = d.out();
            let x = values(n * c * h * w, 3 * k as u64);
            let wt = values(o * c * kh * kw, 3 * k as u64 + 1);
            let bias = values(o, 3 * k as u64 + 2);
            let what = format!("{:?}", d);
            close(
                &d.forward(&x, &wt, Some(&bias)),
                &reference(&d, &x, &wt, Some(&bias)),
                &what,
            );
            close(
                &d.forward(&x, &wt, None),
                &reference(&d, &x, &wt, None),
                &what,
            );
            let gy = values(n * o * oh * ow, 3 * k as u64 + 7);
            close(
                &d.input_grad(&gy, &wt),
                &reference_input_grad(&d, &gy, &wt),
                &what,
            );
        }
    }
}
