//! The CPU kernels of a convolution: per sample and per tile of output lines (the positions
//! sharing every coordinate but the last), im2col of the tile into a workspace and one GEMM
//! per group, written straight into the tile's columns of the output (the bias fills each
//! output row right before its product), with the batch's samples split between the threads.
//!
//! The backward (first order; a `create_graph` backward composes differentiable ops instead,
//! in `conv.rs`) runs the same way per tile: `Wᵀ · gy` into the workspace, folded (col2im)
//! straight into the input gradient; `im2col(x) · gyᵀ` accumulated into the thread's
//! (transposed) weight gradient, so the threads' partial sums are the only reduction;
//! the bias gradient summed on the way.
//!
//! The workspace is bounded whatever the image: a tile holds as many output lines as keep
//! its im2col matrix within [`TILE_BYTES`] (and within a quarter of the output on small
//! images; at least one line), so a thread's workspace is
//! one tile's matrix (the backward's two, im2col and input-gradient columns, take turns in
//! it), plus the per-thread
//! partial weight gradients, all counted by the byte counters. (Whole-sample im2col held
//! `c · k² · H · W` elements: 288 MiB for a 128-channel 3×3 convolution of a 256 × 256 image.)
//!
//! Against composing `unfold`, batched `matmul`, `concat` and a broadcast `add` (still used on
//! CUDA), this skips per chunk a fresh im2col tensor, the output's and the input gradient's
//! join copies, the bias's extra pass over the output and the `(samples, kg, O)` stack of
//! per-sample weight gradients.

use super::window::Plane;
use crate::cpu::conv_direct::Direct;
use crate::cpu::matmul::{product, product_ld, Start, Strided};
use crate::cpu::Workspace;
use crate::dtype::Element;

/// A convolution's sizes: `x (n, c, *input)`, `w (o, c / groups, *kernel)`, output
/// `(n, o, *out)`, with the window geometry of one channel plane.
#[derive(Clone, Copy)]
pub(crate) struct ConvShape {
    pub n: usize,
    pub c: usize,
    pub o: usize,
    pub groups: usize,
    pub plane: Plane,
}

/// The most bytes one tile's im2col matrix (every group) takes: small enough for a thread's
/// share of the cache hierarchy (on Zen 4, 1.2 MB tiles of a 128-channel 3×3 convolution of
/// a 256 × 256 image ran faster than 3.5 MB ones, and no slower than 0.5-1 MB ones), large
/// enough that each tile's GEMM is hundreds of output positions wide.
pub(crate) const TILE_BYTES: usize = 2 << 20;

/// The least a tile's matrix may be held to (see [`ConvShape::tile_budget`]): below this a
/// tile's GEMM is too narrow to run at speed.
const MIN_TILE_BYTES: usize = 128 << 10;

/// The fewest output positions a tile's matrix is held to when [`TILE_BYTES`] allows it: on
/// deep layers with small images (a DCGAN discriminator's 256-channel 4×4 convolution of an
/// 8 × 8 image: 4,096 rows, 16 positions per sample) a quarter of the output is a handful of
/// columns, and GEMMs that narrow ran at a fifth of PyTorch's speed.
const MIN_TILE_COLUMNS: usize = 128;

/// The bytes of one im2col column (`c · prod(kernel)` elements) from which a convolution
/// counts as deep: its GEMMs, not its workspace, are what a step pays for, and the tiles are
/// held to [`MIN_TILE_COLUMNS`] (spanning several samples where a sample has fewer
/// positions). Shallower convolutions (a 3×3 kernel over up to 56 float32 channels) keep
/// tiles of at most a quarter of the output, for the memory budgets of small models.
const DEEP_COLUMN_BYTES: usize = 2 << 10;

/// A tile of output positions: the columns `cols` of the output lines `lines` of every sample
/// of `samples` (several samples only with whole planes). Its matrices hold the samples'
/// blocks of positions side by side.
#[derive(Clone)]
struct Tile {
    samples: std::ops::Range<usize>,
    lines: std::ops::Range<usize>,
    cols: std::ops::Range<usize>,
}

impl Tile {
    /// The tile's first output position within a sample.
    fn first(&self, width: usize) -> usize {
        self.lines.start * width + self.cols.start
    }
    /// Positions per sample (contiguous in the output).
    fn per_sample(&self) -> usize {
        self.lines.len() * self.cols.len()
    }
    /// Columns of the tile's matrices: every sample's positions.
    fn columns(&self) -> usize {
        self.samples.len() * self.per_sample()
    }
    /// Whether the tile spans several samples (its output and output gradient go through a
    /// staging block: their positions are not one stride apart).
    fn batched(&self) -> bool {
        self.samples.len() > 1
    }
}

/// How the output positions are cut into tiles: samples per tile (more than one only with
/// whole planes), lines per tile and columns per tile.
#[derive(Clone, Copy)]
struct Tiling {
    samples: usize,
    lines: usize,
    cols: usize,
}

impl ConvShape {
    /// The tiling of the output positions for elements of `size` bytes: whole planes of
    /// several samples for a deep convolution whose planes are narrower than
    /// [`MIN_TILE_COLUMNS`], when two or more fit the budget (and `batch` allows it); else lines
    /// per tile, and columns per tile (the whole line unless one line's im2col matrix alone
    /// exceeds the budget; then single lines cut into column blocks, a multiple of 16 wide).
    fn tiling(&self, size: usize, batch: bool) -> Tiling {
        let budget = self.tile_budget(size);
        let per_col = self.c * self.plane.volume() * size;
        let width = self.plane.out[2];
        let line = per_col * width;
        let plane = line * self.plane.lines();
        let deep = per_col >= DEEP_COLUMN_BYTES;
        let narrow = self.plane.out_len() < MIN_TILE_COLUMNS;
        if batch && deep && narrow && self.n > 1 && plane > 0 && 2 * plane <= budget {
            let samples = (budget / plane).min(self.n);
            return Tiling {
                samples,
                lines: self.plane.lines(),
                cols: width,
            };
        }
        if line <= budget {
            let lines = (budget / line.max(1)).clamp(1, self.plane.lines().max(1));
            return Tiling {
                samples: 1,
                lines,
                cols: width,
            };
        }
        let cols = (budget / per_col.max(1)) / 16 * 16;
        Tiling {
            samples: 1,
            lines: 1,
            cols: cols.clamp(16.min(width), width.max(1)),
        }
    }
    /// The bytes one tile's matrix may take: [`TILE_BYTES`], or a quarter of the output where
    /// that is less (but at least [`MIN_TILE_BYTES`], and for a deep convolution at least
    /// [`MIN_TILE_COLUMNS`] positions' worth within [`TILE_BYTES`] and the input's bytes), so
    /// that on small images the workspace of every thread together stays well under the
    /// activations a memory budget is about. (Without the input's bound, a U-Net's 64-channel
    /// 3×3 convolution of an 8 × 8 plane took 10× its output's bytes in workspace, and the
    /// U-Net no longer trained under half its plain peak.)
    fn tile_budget(&self, size: usize) -> usize {
        let out = self.n * self.o * self.plane.out_len() * size;
        let input = self.n * self.c * self.plane.input_len() * size;
        let per_col = self.c * self.plane.volume() * size;
        let floor = if per_col >= DEEP_COLUMN_BYTES {
            (MIN_TILE_COLUMNS * per_col).min(input)
        } else {
            0
        };
        (out / 4).max(floor).clamp(MIN_TILE_BYTES, TILE_BYTES)
    }
    /// Elements of one tile's im2col matrix (every group).
    fn tile_len(&self, t: Tiling) -> usize {
        self.c * self.plane.volume() * t.samples * t.lines * t.cols
    }
    /// The tiles of the output lines `lines` of the samples `samples`: groups of whole
    /// planes, or per sample `(lines, columns)` ranges whose positions are contiguous in the
    /// output (whole lines, or part of one line).
    fn tiles(
        &self,
        samples: std::ops::Range<usize>,
        lines: std::ops::Range<usize>,
        t: Tiling,
    ) -> impl Iterator<Item = Tile> {
        let width = self.plane.out[2];
        let (start, end) = (lines.start, lines.end);
        let groups = (t.samples > 1).then(|| {
            let (s0, s1) = (samples.start, samples.end);
            let lines = lines.clone();
            (s0..s1).step_by(t.samples).map(move |a| Tile {
                samples: a..(a + t.samples).min(s1),
                lines: lines.clone(),
                cols: 0..width,
            })
        });
        let singles = (t.samples <= 1).then(move || {
            samples.flat_map(move |s| {
                (start..end).step_by(t.lines.max(1)).flat_map(move |a| {
                    let lines = a..(a + t.lines).min(end);
                    (0..width).step_by(t.cols.max(1)).map(move |c| Tile {
                        samples: s..s + 1,
                        lines: lines.clone(),
                        cols: c..(c + t.cols).min(width),
                    })
                })
            })
        });
        groups
            .into_iter()
            .flatten()
            .chain(singles.into_iter().flatten())
    }
    /// Rows of one group's im2col matrix: `c / groups · prod(kernel)`.
    fn kg(&self) -> usize {
        self.c / self.groups * self.plane.volume()
    }
    /// Output channels per group.
    fn og(&self) -> usize {
        self.o / self.groups
    }
    /// Output positions per channel.
    fn l(&self) -> usize {
        self.plane.out_len()
    }
}

/// The convolution as [`Direct`]'s kernel takes it, where it applies (stride 1, no
/// dilation, one group, one or two spatial axes) and pays.
fn direct(sh: &ConvShape) -> Option<Direct> {
    let p = &sh.plane;
    let plain = sh.groups == 1 && p.dilation == [1; 3] && p.stride == [1; 3] && !p.is_dense();
    if !plain || p.input[0] != 1 || p.kernel[0] != 1 || p.padding[0] != 0 {
        return None;
    }
    let d = Direct {
        n: sh.n,
        c: sh.c,
        o: sh.o,
        input: [p.input[1], p.input[2]],
        kernel: [p.kernel[1], p.kernel[2]],
        padding: [p.padding[1], p.padding[2]],
    };
    d.worth_it().then_some(d)
}

/// `s` as float32, if `T` is float32 (the direct kernel's one dtype).
fn as_f32<T: 'static>(s: &[T]) -> Option<&[f32]> {
    (std::any::TypeId::of::<T>() == std::any::TypeId::of::<f32>())
        // SAFETY: T is f32.
        .then(|| unsafe { std::slice::from_raw_parts(s.as_ptr().cast::<f32>(), s.len()) })
}

/// `v` as a `Vec<T>`, for a `T` that [`as_f32`] found to be float32.
fn from_f32<T: 'static>(v: Vec<f32>) -> Vec<T> {
    assert_eq!(std::any::TypeId::of::<T>(), std::any::TypeId::of::<f32>());
    let mut v = std::mem::ManuallyDrop::new(v);
    // SAFETY: T is f32, so the allocation, length and capacity are those of a Vec<T>.
    unsafe { Vec::from_raw_parts(v.as_mut_ptr().cast::<T>(), v.len(), v.capacity()) }
}

/// How the work is split between the threads.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Split {
    /// `parts` ranges of consecutive samples, one per thread, each GEMM single-threaded.
    Samples(usize),
    /// For each sample in turn, its output lines in `parts` chunks per phase, one per thread,
    /// each GEMM single-threaded (a batch too small to split, on a 1-D or 2-D plane with
    /// enough lines). The backward folds the input gradient of each chunk; chunks two apart
    /// never touch the same input rows, so it runs the even chunks, then the odd ones.
    Lines(usize),
    /// One part, the samples in turn, whose GEMMs use every thread.
    Whole(usize),
}

impl Split {
    /// Workers with their own workspace and partial sums.
    fn parts(self) -> usize {
        match self {
            Split::Samples(p) | Split::Lines(p) => p,
            Split::Whole(_) => 1,
        }
    }
    /// Threads each GEMM runs on.
    fn gemm_threads(self) -> usize {
        match self {
            Split::Whole(t) => t,
            _ => 1,
        }
    }
}

/// The split of a convolution's work: samples per thread when the batch splits evenly
/// enough; else output lines per thread when the plane has enough of them (two chunks per
/// thread, each longer than the lines whose input rows overlap, `(k - 1) · d / s`); else
/// threaded GEMMs.
fn split(sh: &ConvShape) -> Split {
    let threads = crate::parallel::num_threads();
    let n = sh.n;
    if n >= threads && (n.is_multiple_of(threads) || n >= 4 * threads) {
        return Split::Samples(threads);
    }
    let p = &sh.plane;
    let overlap = (p.kernel[1] - 1) * p.dilation[1] / p.stride[1];
    let chunk = p.lines() / (2 * threads);
    if threads > 1 && p.out[0] == 1 && chunk > overlap && chunk >= 4 {
        return Split::Lines(threads);
    }
    Split::Whole(threads)
}

/// The samples `[start, end)` of part `i` of `parts`.
fn samples_of(n: usize, parts: usize, i: usize) -> std::ops::Range<usize> {
    i * n / parts..(i + 1) * n / parts
}

/// Chunk `i` of `chunks` of the plane's output lines.
fn lines_of(sh: &ConvShape, chunks: usize, i: usize) -> std::ops::Range<usize> {
    let n = sh.plane.lines();
    i * n / chunks..(i + 1) * n / chunks
}

/// A mutable block of `len` elements at `offset` of the buffer at address `base`.
///
/// # Safety
/// The block must lie inside the buffer, and no other live reference may overlap it.
unsafe fn block<'a, T>(base: usize, offset: usize, len: usize) -> &'a mut [T] {
    unsafe { std::slice::from_raw_parts_mut((base as *mut T).add(offset), len) }
}

/// im2col of tile `tile` of `x` into `cols` (`c · volume × tile.columns()`, each sample's
/// positions side by side in every row).
fn unfold_tile<T: Element>(sh: &ConvShape, x: &[T], tile: &Tile, cols: &mut [T]) {
    let in_len = sh.plane.input_len();
    let (per, ld) = (tile.per_sample(), tile.columns());
    if sh.plane.is_dense() {
        // One column per sample, its samples' rows of x side by side: a transpose (element
        // by element, each sample's 8,192 single-element copies took 5x PyTorch's step on
        // a DCGAN discriminator's last layer).
        let k = sh.c * in_len;
        let src = &x[tile.samples.start * k..tile.samples.end * k];
        crate::cpu::transpose_serial(src, tile.samples.len(), k, &mut cols[..k * ld]);
        return;
    }
    let rows = sh.plane.volume() * ld;
    for (j, s) in tile.samples.clone().enumerate() {
        for ci in 0..sh.c {
            let plane = &x[(s * sh.c + ci) * in_len..][..in_len];
            sh.plane.unfold_tile_ld(
                plane,
                tile.lines.clone(),
                tile.cols.clone(),
                &mut cols[ci * rows + j * per..(ci + 1) * rows],
                ld,
            );
        }
    }
}

/// `(n, o, l)`: the convolution of contiguous `x` and `w`, plus `bias` per output channel.
pub(crate) fn forward<T: Element>(sh: &ConvShape, x: &[T], w: &[T], bias: Option<&[T]>) -> Vec<T> {
    if let Some(d) = direct(sh) {
        if let (Some(xf), Some(wf)) = (as_f32(x), as_f32(w)) {
            let bf = bias.and_then(as_f32);
            return from_f32(d.forward(xf, wf, bf));
        }
    }
    let (kg, og, l) = (sh.kg(), sh.og(), sh.l());
    let mut out = crate::cpu::alloc::<T>(sh.n * sh.o * l);
    if out.is_empty() {
        return out;
    }
    let how = split(sh);
    let (parts, gemm_threads) = (how.parts(), how.gemm_threads());
    let tiling = sh.tiling(std::mem::size_of::<T>(), !matches!(how, Split::Lines(_)));
    let work = sh.tile_len(tiling);
    // A tile of several samples stages each group's product here before it is copied to
    // the samples' rows of the output.
    let stage = if tiling.samples > 1 {
        og * tiling.samples * l
    } else {
        0
    };
    let mut cols = Workspace::<T>::new(parts * (work + stage));
    let (pcols, pout) = (cols.as_mut_ptr() as usize, out.as_mut_ptr() as usize);
    let width = sh.plane.out[2];
    // The output of `samples` for the lines `lines`, with workspace `i`.
    let unit = |i: usize, samples: std::ops::Range<usize>, lines: std::ops::Range<usize>| {
        // SAFETY: workspace i belongs to one worker at a time, and so do the output columns
        // of these lines of these samples.
        let (cols, staged) =
            unsafe { block::<T>(pcols, i * (work + stage), work + stage) }.split_at_mut(work);
        for tile in sh.tiles(samples, lines, tiling) {
            let (p0, per, ld) = (tile.first(width), tile.per_sample(), tile.columns());
            unfold_tile(sh, x, &tile, cols);
            for g in 0..sh.groups {
                let start = match bias {
                    Some(b) => Start::Columns(&b[g * og..(g + 1) * og]),
                    None => Start::Empty,
                };
                let a: Strided<T> = (w[g * og * kg..].as_ptr(), kg as isize, 1);
                let b: Strided<T> = (cols[g * kg * ld..].as_ptr(), ld as isize, 1);
                let s0 = tile.samples.start;
                let (dst, dst_ld) = if tile.batched() {
                    (staged.as_mut_ptr(), ld)
                } else {
                    let at = (s0 * sh.o + g * og) * l + p0;
                    ((pout as *mut T).wrapping_add(at), l)
                };
                // SAFETY: a is og x kg of w, b is kg x ld of the workspace; dst is the
                // staging block (og x ld), or the tile's columns of this sample's og output
                // rows (row stride l).
                unsafe {
                    product_ld(
                        dst,
                        dst_ld,
                        (og, ld, kg),
                        a,
                        b,
                        start,
                        T::one(),
                        gemm_threads,
                    )
                };
                if tile.batched() {
                    for (j, s) in tile.samples.clone().enumerate() {
                        for r in 0..og {
                            let at = (s * sh.o + g * og + r) * l + p0;
                            // SAFETY: this sample's output row, written by this worker only.
                            let row = unsafe { block::<T>(pout, at, per) };
                            row.copy_from_slice(&staged[r * ld + j * per..][..per]);
                        }
                    }
                }
            }
        }
    };
    let all = 0..sh.plane.lines();
    match how {
        Split::Lines(p) => {
            for s in 0..sh.n {
                crate::parallel::run_parts(p, |i| unit(i, s..s + 1, lines_of(sh, p, i)));
            }
        }
        _ => {
            crate::parallel::run_parts(parts, |i| unit(i, samples_of(sh.n, parts, i), all.clone()))
        }
    }
    out
}

/// The first-order gradients of a convolution from contiguous `x`, `w` and output gradient
/// `gy (n, o, l)`: `(gx, gw, gb)`, each computed only when asked for.
pub(crate) type Grads<T> = (Option<Vec<T>>, Option<Vec<T>>, Option<Vec<T>>);

/// See [`Grads`]; `need` says which of input, weight and bias want a gradient. The input
/// gradient of a convolution the direct kernel takes is its adjoint convolution there; the
/// rest (and every other convolution's) comes from [`backward_im2col`].
pub(crate) fn backward<T: Element>(
    sh: &ConvShape,
    x: &[T],
    w: &[T],
    gy: &[T],
    need: [bool; 3],
) -> Grads<T> {
    if need[0] {
        if let Some(d) = direct(sh).filter(Direct::has_adjoint) {
            if let (Some(gyf), Some(wf)) = (as_f32(gy), as_f32(w)) {
                let gx = from_f32(d.input_grad(gyf, wf));
                let (_, gw, gb) = backward_im2col(sh, x, w, gy, [false, need[1], need[2]]);
                return (Some(gx), gw, gb);
            }
        }
    }
    backward_im2col(sh, x, w, gy, need)
}

/// [`backward`] by im2col: per tile, the GEMMs of the weight and input gradients against the
/// tile's im2col matrix, the latter folded into the input gradient.
fn backward_im2col<T: Element>(
    sh: &ConvShape,
    x: &[T],
    w: &[T],
    gy: &[T],
    need: [bool; 3],
) -> Grads<T> {
    let (kg, og, l) = (sh.kg(), sh.og(), sh.l());
    let in_len = sh.plane.input_len();
    let how = split(sh);
    let (parts, gemm_threads) = (how.parts(), how.gemm_threads());
    let mut gx = need[0].then(|| crate::cpu::alloc::<T>(sh.n * sh.c * in_len));
    if let Some(g) = gx.as_mut() {
        g.fill(T::zero());
    }
    // Per part: the weight gradient (transposed per group: `(groups, kg, og)`) and the bias
    // gradient.
    let (wlen, blen) = (sh.o * kg, sh.o);
    let mut partial = Workspace::<T>::new(parts * (wlen + blen));
    partial.fill(T::zero());
    if sh.n * l > 0 {
        // Per part: one tile's matrix, the im2col of x for the weight gradient and then, in the
        // same place, the columns of the input gradient before they are folded; for tiles of
        // several samples, also their output gradient gathered side by side (o x columns).
        let tiling = sh.tiling(std::mem::size_of::<T>(), !matches!(how, Split::Lines(_)));
        let tile = sh.tile_len(tiling);
        let scratch = if need[0] || need[1] { tile } else { 0 };
        let stage = if tiling.samples > 1 && scratch > 0 {
            sh.o * tiling.samples * l
        } else {
            0
        };
        let width = sh.plane.out[2];
        // The weight transposed per group, `(groups, kg, og)`, for the input gradient's
        // `w_gᵀ · gy_g`: the GEMM read a transposed left operand at a third of its speed on
        // deep layers (4096 x 128 x 512: 29 against 79 GFLOP/s on one Xeon core), and the
        // copy is one pass over the weight per backward, against one product per tile.
        let wt = need[0].then(|| {
            let mut wt = Workspace::<T>::new(sh.o * kg);
            for (src, dst) in w.chunks_exact(og * kg).zip(wt.chunks_exact_mut(og * kg)) {
                crate::cpu::transpose_into(src, og, kg, dst);
            }
            wt
        });
        let mut work = Workspace::<T>::new(parts * (scratch + stage));
        let pwork = work.as_mut_ptr() as usize;
        let pgx = gx.as_mut().map_or(0, |g| g.as_mut_ptr() as usize);
        let ppartial = partial.as_mut_ptr() as usize;
        // The contributions of `samples` from the output lines `lines`, with workspace and
        // partial sums `i`.
        let unit = |i: usize, samples: std::ops::Range<usize>, lines: std::ops::Range<usize>| {
            // SAFETY: workspace and partial sums i belong to one worker at a time; so do the
            // input-gradient rows these lines fold into (see `Split::Lines`).
            let (work, staged) =
                unsafe { block::<T>(pwork, i * (scratch + stage), scratch + stage) }
                    .split_at_mut(scratch);
            let (gw, gb) =
                unsafe { block::<T>(ppartial, i * (wlen + blen), wlen + blen) }.split_at_mut(wlen);
            let (q0, q1) = (lines.start * width, lines.end * width);
            if need[2] {
                for s in samples.clone() {
                    let gy_s = &gy[s * sh.o * l..(s + 1) * sh.o * l];
                    for (b, row) in gb.iter_mut().zip(gy_s.chunks_exact(l)) {
                        *b += crate::cpu::sum::pairwise_sum(&row[q0..q1]);
                    }
                }
            }
            if scratch == 0 {
                return;
            }
            for t in sh.tiles(samples.clone(), lines.clone(), tiling) {
                let (p0, per, ld) = (t.first(width), t.per_sample(), t.columns());
                // The tile's output gradient, o x ld: the sample's rows of gy in place (row
                // stride l), or the samples' blocks gathered side by side.
                let (gyt, gy_ld): (*const T, usize) = if t.batched() {
                    for (j, s) in t.samples.clone().enumerate() {
                        for r in 0..sh.o {
                            staged[r * ld + j * per..][..per]
                                .copy_from_slice(&gy[(s * sh.o + r) * l + p0..][..per]);
                        }
                    }
                    (staged.as_ptr(), ld)
                } else {
                    (gy[t.samples.start * sh.o * l + p0..].as_ptr(), l)
                };
                if need[1] {
                    let cols = &mut *work;
                    unfold_tile(sh, x, &t, cols);
                    for g in 0..sh.groups {
                        // gw_gᵀ (kg x og) += cols_g (kg x ld) · gy_g (og x ld)ᵀ: the long
                        // positions axis is the inner one of both operands as stored (the
                        // other orientation, og x kg, measured 2.2x slower in the GEMM).
                        let a: Strided<T> = (cols[g * kg * ld..].as_ptr(), ld as isize, 1);
                        let b: Strided<T> = (gyt.wrapping_add(g * og * gy_ld), 1, gy_ld as isize);
                        let dst = gw[g * kg * og..].as_mut_ptr();
                        // SAFETY: a is kg x ld of the workspace, b the transpose of the tile's
                        // og x ld of the output gradient (row stride gy_ld); dst the group's
                        // kg x og block of this part's sum.
                        unsafe {
                            product(
                                dst,
                                (kg, og, ld),
                                a,
                                b,
                                Start::Scaled(T::one()),
                                T::one(),
                                gemm_threads,
                            )
                        };
                    }
                }
                if let Some(wt) = wt.as_ref() {
                    let gcols = &mut *work;
                    for g in 0..sh.groups {
                        // gcols_g (kg x ld) = w_g (og x kg)ᵀ · gy_g (og x ld)
                        let a: Strided<T> = (wt[g * kg * og..].as_ptr(), og as isize, 1);
                        let b: Strided<T> = (gyt.wrapping_add(g * og * gy_ld), gy_ld as isize, 1);
                        let dst = gcols[g * kg * ld..].as_mut_ptr();
                        // SAFETY: a is kg x og of the transposed weight, b the tile's og x ld of
                        // the output gradient; dst the group's kg x ld block of the workspace.
                        unsafe {
                            product(
                                dst,
                                (kg, ld, og),
                                a,
                                b,
                                Start::Empty,
                                T::one(),
                                gemm_threads,
                            )
                        };
                    }
                    let rows = sh.plane.volume() * ld;
                    if sh.plane.is_dense() {
                        // Each sample's input gradient is its column (see `unfold_tile`),
                        // and nothing else reaches it: a transpose into the zeroed rows.
                        let k = sh.c * in_len;
                        let (s0, ns) = (t.samples.start, t.samples.len());
                        // SAFETY: as below (the rows of these samples' input gradients).
                        let gx_t = unsafe { block::<T>(pgx, s0 * k, ns * k) };
                        crate::cpu::transpose_serial(&gcols[..k * ld], k, ns, gx_t);
                        continue;
                    }
                    for (j, s) in t.samples.clone().enumerate() {
                        // SAFETY: as above (the rows of sample s's input gradient these lines
                        // reach).
                        let gx_s = unsafe { block::<T>(pgx, s * sh.c * in_len, sh.c * in_len) };
                        for (ci, img) in gx_s.chunks_exact_mut(in_len).enumerate() {
                            sh.plane.fold_tile_ld(
                                &gcols[ci * rows + j * per..(ci + 1) * rows],
                                t.lines.clone(),
                                t.cols.clone(),
                                img,
                                ld,
                            );
                        }
                    }
                }
            }
        };
        let all = 0..sh.plane.lines();
        match how {
            Split::Lines(p) => {
                // Even chunks, then odd ones: chunks two apart fold into disjoint input rows.
                for s in 0..sh.n {
                    for phase in 0..2 {
                        crate::parallel::run_parts(p, |i| {
                            unit(i, s..s + 1, lines_of(sh, 2 * p, 2 * i + phase))
                        });
                    }
                }
            }
            _ => crate::parallel::run_parts(parts, |i| {
                unit(i, samples_of(sh.n, parts, i), all.clone())
            }),
        }
    }
    // The parts' partial sums, added into the first.
    let (first, rest) = partial.split_at_mut(wlen + blen);
    for more in rest.chunks_exact(wlen + blen) {
        first.iter_mut().zip(more).for_each(|(a, &b)| *a += b);
    }
    // (groups, kg, og) → the weight's (o, kg): element (g·og + r, k) is (g, k, r).
    let gw = need[1].then(|| {
        let mut gw = crate::cpu::alloc::<T>(wlen);
        for (src, dst) in first[..wlen]
            .chunks_exact(kg * og)
            .zip(gw.chunks_exact_mut(kg * og))
        {
            crate::cpu::transpose_into(src, kg, og, dst);
        }
        gw
    });
    let gb = need[2].then(|| crate::cpu::collect_exact(first[wlen..].iter().copied()));
    (gx, gw, gb)
}
