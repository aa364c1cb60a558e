//! The CPU kernels of a convolution: per sample, im2col of the sample into a workspace and
//! one single-threaded GEMM per group, written straight into the output (the bias fills each
//! output row right before its product), with the batch's samples split between the threads.
//!
//! The backward (first order; a `create_graph` backward composes differentiable ops instead,
//! in `conv.rs`) runs the same way per sample: `Wᵀ · gy` into the workspace, folded (col2im)
//! straight into the input gradient; `im2col(x) · gyᵀ` accumulated into the thread's
//! (transposed) weight gradient, so the threads' partial sums are the only reduction;
//! the bias gradient summed on the way. Nothing is built whole-batch: a thread's workspace
//! is one sample's im2col matrix (two for a backward that needs both gradients), and the
//! per-thread partial weight gradients, all counted by the byte counters.
//!
//! Against composing `unfold`, batched `matmul`, `concat` and a broadcast `add` (still used on
//! CUDA), this skips per chunk a fresh im2col tensor, the output's and the input gradient's
//! join copies, the bias's extra pass over the output and the `(samples, kg, O)` stack of
//! per-sample weight gradients.

use super::window::Plane;
use crate::cpu::matmul::{product, Start, Strided};
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

impl ConvShape {
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
    /// Elements of one sample's im2col matrix (every group).
    fn cols_len(&self) -> usize {
        self.groups * self.kg() * self.l()
    }
}

/// How the batch is split: `parts` ranges of consecutive samples, one per thread, each GEMM
/// single-threaded; or one part (the samples in turn) whose GEMMs use every thread, when the
/// samples do not split evenly enough (a batch of 1 or 3 on two threads).
fn split(n: usize) -> (usize, usize) {
    let threads = crate::parallel::num_threads();
    if n >= threads && (n.is_multiple_of(threads) || n >= 4 * threads) {
        (threads, 1)
    } else {
        (1, threads)
    }
}

/// The samples `[start, end)` of part `i` of `parts`.
fn samples_of(n: usize, parts: usize, i: usize) -> std::ops::Range<usize> {
    i * n / parts..(i + 1) * n / parts
}

/// A mutable block of `len` elements at `offset` of the buffer at address `base`.
///
/// # Safety
/// The block must lie inside the buffer, and no other live reference may overlap it.
unsafe fn block<'a, T>(base: usize, offset: usize, len: usize) -> &'a mut [T] {
    unsafe { std::slice::from_raw_parts_mut((base as *mut T).add(offset), len) }
}

/// im2col of sample `s` of `x` into `cols` (`c · volume × l`).
fn unfold_sample<T: Element>(sh: &ConvShape, x: &[T], s: usize, cols: &mut [T]) {
    let (in_len, rows) = (sh.plane.input_len(), sh.plane.volume() * sh.l());
    for ci in 0..sh.c {
        let plane = &x[(s * sh.c + ci) * in_len..][..in_len];
        sh.plane
            .unfold_into(plane, &mut cols[ci * rows..(ci + 1) * rows]);
    }
}

/// `(n, o, l)`: the convolution of contiguous `x` and `w`, plus `bias` per output channel.
pub(crate) fn forward<T: Element>(sh: &ConvShape, x: &[T], w: &[T], bias: Option<&[T]>) -> Vec<T> {
    let (kg, og, l) = (sh.kg(), sh.og(), sh.l());
    let mut out = crate::cpu::alloc::<T>(sh.n * sh.o * l);
    if out.is_empty() {
        return out;
    }
    let (parts, gemm_threads) = split(sh.n);
    let mut cols = Workspace::<T>::new(parts * sh.cols_len());
    let (pcols, pout) = (cols.as_mut_ptr() as usize, out.as_mut_ptr() as usize);
    let run = |i: usize| {
        // SAFETY: part i owns its workspace block and its samples' output rows.
        let cols = unsafe { block::<T>(pcols, i * sh.cols_len(), sh.cols_len()) };
        for s in samples_of(sh.n, parts, i) {
            unfold_sample(sh, x, s, cols);
            for g in 0..sh.groups {
                let start = match bias {
                    Some(b) => Start::Columns(&b[g * og..(g + 1) * og]),
                    None => Start::Empty,
                };
                let a: Strided<T> = (w[g * og * kg..].as_ptr(), kg as isize, 1);
                let b: Strided<T> = (cols[g * kg * l..].as_ptr(), l as isize, 1);
                let dst = (pout as *mut T).wrapping_add((s * sh.o + g * og) * l);
                // SAFETY: a is og x kg of w, b is kg x l of the workspace; dst is this
                // sample's og x l block of the group's output channels.
                unsafe { product(dst, (og, l, kg), a, b, start, T::one(), gemm_threads) };
            }
        }
    };
    crate::parallel::run_parts(parts, run);
    out
}

/// The first-order gradients of a convolution from contiguous `x`, `w` and output gradient
/// `gy (n, o, l)`: `(gx, gw, gb)`, each computed only when asked for.
pub(crate) type Grads<T> = (Option<Vec<T>>, Option<Vec<T>>, Option<Vec<T>>);

/// See [`Grads`]; `need` says which of input, weight and bias want a gradient.
pub(crate) fn backward<T: Element>(
    sh: &ConvShape,
    x: &[T],
    w: &[T],
    gy: &[T],
    need: [bool; 3],
) -> Grads<T> {
    let (kg, og, l) = (sh.kg(), sh.og(), sh.l());
    let in_len = sh.plane.input_len();
    let (parts, gemm_threads) = split(sh.n);
    let mut gx = need[0].then(|| crate::cpu::alloc::<T>(sh.n * sh.c * in_len));
    // Per part: the weight gradient (transposed per group: `(groups, kg, og)`) and the bias
    // gradient.
    let (wlen, blen) = (sh.o * kg, sh.o);
    let mut partial = Workspace::<T>::new(parts * (wlen + blen));
    partial.fill(T::zero());
    if sh.n * l > 0 {
        // Per part: the im2col matrix of x (weight gradient) and of the input gradient.
        let scratch = sh.cols_len() * (need[0] as usize + need[1] as usize);
        let mut work = Workspace::<T>::new(parts * scratch);
        let pwork = work.as_mut_ptr() as usize;
        let pgx = gx.as_mut().map_or(0, |g| g.as_mut_ptr() as usize);
        let ppartial = partial.as_mut_ptr() as usize;
        let run = |i: usize| {
            // SAFETY: part i owns its workspace and partial-sum blocks, and the input
            // gradient of its samples.
            let work = unsafe { block::<T>(pwork, i * scratch, scratch) };
            let (gw, gb) =
                unsafe { block::<T>(ppartial, i * (wlen + blen), wlen + blen) }.split_at_mut(wlen);
            let (cols, gcols) = work.split_at_mut(if need[1] { sh.cols_len() } else { 0 });
            for s in samples_of(sh.n, parts, i) {
                let gy_s = &gy[s * sh.o * l..(s + 1) * sh.o * l];
                if need[2] {
                    for (b, row) in gb.iter_mut().zip(gy_s.chunks_exact(l)) {
                        *b += crate::cpu::sum::pairwise_sum(row);
                    }
                }
                if need[1] {
                    unfold_sample(sh, x, s, cols);
                    for g in 0..sh.groups {
                        // gw_gᵀ (kg x og) += cols_g (kg x l) · gy_g (og x l)ᵀ: the long l
                        // axis is the inner one of both operands as stored (the other
                        // orientation, og x kg, measured 2.2x slower in the GEMM).
                        let a: Strided<T> = (cols[g * kg * l..].as_ptr(), l as isize, 1);
                        let b: Strided<T> = (gy_s[g * og * l..].as_ptr(), 1, l as isize);
                        let dst = gw[g * kg * og..].as_mut_ptr();
                        // SAFETY: a is kg x l of the workspace, b the transpose of og x l of
                        // gy; dst the group's kg x og block of this part's sum.
                        unsafe {
                            product(
                                dst,
                                (kg, og, l),
                                a,
                                b,
                                Start::Scaled(T::one()),
                                T::one(),
                                gemm_threads,
                            )
                        };
                    }
                }
                if need[0] {
                    for g in 0..sh.groups {
                        // gcols_g (kg x l) = w_g (og x kg)ᵀ · gy_g (og x l)
                        let a: Strided<T> = (w[g * og * kg..].as_ptr(), 1, kg as isize);
                        let b: Strided<T> = (gy_s[g * og * l..].as_ptr(), l as isize, 1);
                        let dst = gcols[g * kg * l..].as_mut_ptr();
                        // SAFETY: a is the transpose of og x kg of w, b og x l of gy; dst
                        // the group's kg x l block of the workspace.
                        unsafe {
                            product(dst, (kg, l, og), a, b, Start::Empty, T::one(), gemm_threads)
                        };
                    }
                    // SAFETY: sample s's input gradient belongs to this part alone.
                    let gx_s = unsafe { block::<T>(pgx, s * sh.c * in_len, sh.c * in_len) };
                    gx_s.fill(T::zero());
                    let rows = sh.plane.volume() * l;
                    for (ci, img) in gx_s.chunks_exact_mut(in_len).enumerate() {
                        sh.plane.fold_into(&gcols[ci * rows..(ci + 1) * rows], img);
                    }
                }
            }
        };
        crate::parallel::run_parts(parts, run);
    } else if let Some(g) = gx.as_mut() {
        g.fill(T::zero());
    }
    // The parts' partial sums, added into the first.
    let (first, rest) = partial.split_at_mut(wlen + blen);
    for more in rest.chunks_exact(wlen + blen) {
        first.iter_mut().zip(more).for_each(|(a, &b)| *a += b);
    }
    // (groups, kg, og) → the weight's (o, kg): element (g·og + r, k) is (g, k, r).
    let gw = need[1].then(|| {
        crate::cpu::collect_exact((0..wlen).map(|i| {
            let (oc, k) = (i / kg, i % kg);
            let (g, r) = (oc / og, oc % og);
            first[(g * kg + k) * og + r]
        }))
    });
    let gb = need[2].then(|| crate::cpu::collect_exact(first[wlen..].iter().copied()));
    (gx, gw, gb)
}
