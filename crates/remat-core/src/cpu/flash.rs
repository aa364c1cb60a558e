//! Tiled (FlashAttention-2-style) attention on the CPU: `softmax(q kᵀ · scale + mask) v`
//! without the `L × S` weights ever held as a whole.
//!
//! The forward walks the keys in blocks for each block of query rows, keeping a running row
//! maximum and normaliser (online softmax, Milakov & Gimelshein 2018; Dao et al. 2022), and
//! writes the output rows and each row's log-sum-exp. The backward recomputes each block's
//! weights from `q`, `k` and the log-sum-exp (`P = exp(S - lse)`), with `D = rowsum(dO ∘ O)`
//! for the softmax's backward (`dS = P ∘ (dP - D)`), so between forward and backward only
//! `q`, `k`, `v`, the output and the log-sum-exps are kept.
//!
//! Every product of a tile is one single-threaded call of the `gemm` crate on the operands'
//! strides; the work is split over (batch, query block) in the forward and over batches in
//! the backward (each thread owns its batch's gradients; with fewer batches than threads,
//! over key blocks with private query gradients summed at the end). Masks (causal, bool or
//! additive, broadcast through strides) and dropout (its mask drawn from the counter-based
//! generator at the weight's flat index, so forward, backward and any tiling agree) are
//! applied to each tile of scores.

use crate::dtype::Element;
use crate::rng::{self, RngState};

/// Query rows per forward block.
const FWD_ROWS: usize = 128;
/// Keys per forward block.
const FWD_KEYS: usize = 512;
/// Query rows and keys per backward tile.
const BWD_ROWS: usize = 64;
const BWD_KEYS: usize = 64;

/// A stack of matrices by address: the offset of each batch's matrix and the row and column
/// strides, in elements.
#[derive(Clone)]
pub struct Matrices {
    /// Address of the storage's first element (raw pointers are not `Send`).
    pub base: usize,
    /// Offset of each batch's matrix.
    pub offsets: Vec<usize>,
    /// Stride between rows.
    pub rs: isize,
    /// Stride between columns.
    pub cs: isize,
}

impl Matrices {
    fn at<T>(&self, batch: usize, row: usize) -> *const T {
        (self.base as *const T)
            .wrapping_add(self.offsets[batch])
            .wrapping_offset(row as isize * self.rs)
    }
}

/// The mask of the scores, broadcast to every batch's `(L, S)` through its strides.
#[derive(Clone)]
pub enum Mask {
    /// No mask.
    None,
    /// Top-left causal: key `j` takes part in query `i` iff `j <= i`.
    Causal,
    /// Bool (one byte per element): true takes part.
    Bool(Matrices),
    /// Float, of the scores' dtype: added to the scores.
    Add(Matrices),
}

/// What every call shares: the sizes, the scale, the mask and the dropout.
#[derive(Clone)]
pub struct Problem {
    /// Batches (every leading axis, heads included, flattened).
    pub n: usize,
    /// Queries, keys, the query/key width and the value width.
    pub l: usize,
    /// Keys.
    pub s: usize,
    /// Query and key width.
    pub e: usize,
    /// Value width.
    pub ev: usize,
    /// The factor of the scores.
    pub scale: f64,
    /// The mask.
    pub mask: Mask,
    /// Dropout of the weights: the generator key and the probability.
    pub dropout: Option<(RngState, f64)>,
    /// Batches interleaved in one packed output row (the head axis): see [`Problem::out_row`].
    pub heads: usize,
}

impl Problem {
    /// Elements of one packed output row: `heads` outputs of `ev`, then `heads` log-sum-exps.
    pub fn out_width(&self) -> usize {
        self.heads * (self.ev + 1)
    }

    /// Where the output row `i` of batch `b` starts in the packed output. The packed output
    /// is `(n / heads, l, heads · ev + heads)`: the heads' rows for one query side by side,
    /// as PyTorch lays its attention output out, so that `(b, h, l, ev) → (b, l, h · ev)`
    /// is a view, not a copy.
    pub fn out_row(&self, b: usize, i: usize) -> usize {
        let h = self.heads.max(1);
        ((b / h) * self.l + i) * self.out_width() + (b % h) * self.ev
    }

    /// Where the log-sum-exp of row `i` of batch `b` is in the packed output.
    pub fn lse_at(&self, b: usize, i: usize) -> usize {
        let h = self.heads.max(1);
        ((b / h) * self.l + i) * self.out_width() + h * self.ev + b % h
    }
}

/// `dst (m x n, row stride ld) = beta * dst + alpha * a (m x k) * b (k x n)`, single-threaded.
///
/// # Safety
/// The operands must address valid elements through their strides; `dst` must be writable.
#[allow(clippy::too_many_arguments)]
#[inline]
unsafe fn tile_gemm<T: Element>(
    m: usize,
    n: usize,
    k: usize,
    dst: *mut T,
    ld: usize,
    accumulate: bool,
    a: (*const T, isize, isize),
    b: (*const T, isize, isize),
    alpha: T,
) {
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        if !accumulate {
            for r in 0..m {
                // SAFETY: row r of dst holds n writable elements.
                unsafe { std::slice::from_raw_parts_mut(dst.add(r * ld), n).fill(T::zero()) };
            }
        }
        return;
    }
    // SAFETY: forwarded from the caller.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst,
            1,
            ld as isize,
            accumulate,
            a.0,
            a.2,
            a.1,
            b.0,
            b.2,
            b.1,
            T::one(),
            alpha,
            false,
            false,
            false,
            gemm::Parallelism::None,
        )
    }
}

impl Problem {
    /// The tile of masked, scaled scores `q kᵀ · scale` of batch `b`, query rows `i0..` and
    /// keys `j0..` (`rows x cols`), into `dst` with row stride `ld`.
    fn scores_tile<T: Element>(
        &self,
        q: &Matrices,
        k: &Matrices,
        (b, i0, j0): (usize, usize, usize),
        (rows, cols): (usize, usize),
        dst: &mut [T],
        ld: usize,
    ) {
        assert!(rows == 0 || dst.len() >= (rows - 1) * ld + cols);
        // SAFETY: rows i0.. of q and keys j0.. of k lie in the operands the op validated; dst
        // holds the tile (checked above).
        unsafe {
            tile_gemm(
                rows,
                cols,
                self.e,
                dst.as_mut_ptr(),
                ld,
                false,
                (q.at(b, i0), q.rs, q.cs),
                (k.at(b, j0), k.cs, k.rs),
                T::from_f64(self.scale),
            )
        };
        self.mask_tile(b, i0, j0, rows, cols, dst, ld);
    }

    /// Mask and dropout of one tile of scaled scores `s[r][c]` (rows `i0..`, keys `j0..`, row
    /// stride `ld`): masked scores become `-inf`; a float mask is added.
    #[allow(clippy::too_many_arguments)]
    fn mask_tile<T: Element>(
        &self,
        b: usize,
        i0: usize,
        j0: usize,
        rows: usize,
        cols: usize,
        s: &mut [T],
        ld: usize,
    ) {
        match &self.mask {
            Mask::None => {}
            Mask::Causal => {
                for r in 0..rows {
                    let seen = (i0 + r + 1).saturating_sub(j0).min(cols);
                    s[r * ld + seen..r * ld + cols].fill(T::neg_infinity());
                }
            }
            Mask::Bool(m) => {
                for r in 0..rows {
                    let row = m.at::<u8>(b, i0 + r);
                    for c in 0..cols {
                        // SAFETY: the mask was broadcast to (L, S) for every batch.
                        let keep = unsafe { *row.wrapping_offset((j0 + c) as isize * m.cs) };
                        if keep == 0 {
                            s[r * ld + c] = T::neg_infinity();
                        }
                    }
                }
            }
            Mask::Add(m) => {
                for r in 0..rows {
                    let row = m.at::<T>(b, i0 + r);
                    for c in 0..cols {
                        // SAFETY: as above.
                        s[r * ld + c] += unsafe { *row.wrapping_offset((j0 + c) as isize * m.cs) };
                    }
                }
            }
        }
    }

    /// Whether the dropout keeps weight `(b, i, j)`, and the factor kept weights take.
    #[inline]
    fn dropout_keeps(&self, key: RngState, p: f64, b: usize, i: usize, j: usize) -> bool {
        let flat = ((b * self.l + i) * self.s + j) as u64;
        rng::uniform(key, flat) >= p
    }

    /// The last key a block of query rows `i0..i1` sees (exclusive), for the causal mask.
    fn keys_seen(&self, i1: usize) -> usize {
        match self.mask {
            Mask::Causal => i1.min(self.s),
            _ => self.s,
        }
    }
}

/// The forward: the packed output (see [`Problem::out_row`]), each row's output and its
/// log-sum-exp (`-inf` for a row whose keys are all masked: its output is zero).
pub fn forward<T: Element>(pb: &Problem, q: &Matrices, k: &Matrices, v: &Matrices, out: &mut [T]) {
    let (l, ev) = (pb.l, pb.ev);
    let width = ev + 1;
    debug_assert_eq!(out.len(), pb.n * l * width);
    if l == 0 || pb.n == 0 {
        return;
    }
    let blocks = l.div_ceil(FWD_ROWS);
    let pout = out.as_mut_ptr() as usize;
    crate::parallel::run_parts(pb.n * blocks, |task| {
        let (b, blk) = (task / blocks, task % blocks);
        let i0 = blk * FWD_ROWS;
        let rows = FWD_ROWS.min(l - i0);
        let mut dst = vec![T::zero(); rows * width];
        forward_block(pb, q, k, v, b, i0, rows, &mut dst);
        for (r, row) in dst.chunks_exact(width).enumerate() {
            // SAFETY: row i0 + r of batch b (its ev outputs and its log-sum-exp) is this
            // task's alone, inside `out`.
            unsafe {
                let base = pout as *mut T;
                std::ptr::copy_nonoverlapping(row.as_ptr(), base.add(pb.out_row(b, i0 + r)), ev);
                *base.add(pb.lse_at(b, i0 + r)) = row[ev];
            }
        }
    });
}

#[allow(clippy::too_many_arguments)]
fn forward_block<T: Element>(
    pb: &Problem,
    q: &Matrices,
    k: &Matrices,
    v: &Matrices,
    b: usize,
    i0: usize,
    rows: usize,
    dst: &mut [T],
) {
    let ev = pb.ev;
    let width = ev + 1;
    let mut scores = vec![T::zero(); rows * FWD_KEYS];
    let mut acc = vec![T::zero(); rows * ev];
    let mut max = vec![T::neg_infinity(); rows];
    let mut sum = vec![T::zero(); rows];
    let last = pb.keys_seen(i0 + rows);
    let mut j0 = 0;
    while j0 < last {
        let cols = FWD_KEYS.min(last - j0);
        pb.scores_tile(q, k, (b, i0, j0), (rows, cols), &mut scores, FWD_KEYS);
        for r in 0..rows {
            let row = &mut scores[r * FWD_KEYS..r * FWD_KEYS + cols];
            // What was accumulated under the old maximum is rescaled to the new one.
            let corr = online_update(row, &mut max[r], &mut sum[r]);
            for a in &mut acc[r * ev..(r + 1) * ev] {
                *a *= corr;
            }
            if let Some((key, p)) = pb.dropout {
                let keep = T::from_f64(1.0 / (1.0 - p));
                for (c, w) in row.iter_mut().enumerate() {
                    *w = if p < 1.0 && pb.dropout_keeps(key, p, b, i0 + r, j0 + c) {
                        *w * keep
                    } else {
                        T::zero()
                    };
                }
            }
        }
        // SAFETY: the weights tile (rows x cols, stride FWD_KEYS), values j0.. and acc.
        unsafe {
            tile_gemm(
                rows,
                ev,
                cols,
                acc.as_mut_ptr(),
                ev,
                true,
                (scores.as_ptr(), FWD_KEYS as isize, 1),
                (v.at(b, j0), v.rs, v.cs),
                T::one(),
            )
        };
        j0 += cols;
    }
    for r in 0..rows {
        let out = &mut dst[r * width..(r + 1) * width];
        if sum[r] > T::zero() {
            let inv = T::one() / sum[r];
            for (o, &a) in out[..ev].iter_mut().zip(&acc[r * ev..(r + 1) * ev]) {
                *o = a * inv;
            }
            out[ev] = max[r] + sum[r].ln();
        } else {
            out[..ev].fill(T::zero());
            out[ev] = T::neg_infinity();
        }
    }
}

/// Lanes of the vectorised row reductions (16 float32 lanes of an AVX-512 register).
const LANES: usize = 16;

/// `row[c] = exp(row[c] - m)`, returning the sum of the results (added in lanes, so the loop
/// vectorises; the order of the additions is fixed, so the result is deterministic).
#[inline(always)]
fn exp_sum<T: Element>(row: &mut [T], m: T) -> T {
    let mut acc = [T::zero(); LANES];
    let mut chunks = row.chunks_exact_mut(LANES);
    for c in chunks.by_ref() {
        for i in 0..LANES {
            c[i] = (c[i] - m).kernel_exp();
            acc[i] += c[i];
        }
    }
    let mut total = T::zero();
    for x in chunks.into_remainder() {
        *x = (*x - m).kernel_exp();
        total += *x;
    }
    acc.iter().fold(total, |a, &b| a + b)
}

/// One row of a tile in the online softmax: `row` (scores) becomes `exp(row - m_new)`, the
/// running maximum and sum move to `m_new`; returns the factor `exp(m_old - m_new)` that
/// rescales what was accumulated before (1 while the row has seen no key).
#[inline(always)]
fn online_update_body<T: Element>(row: &mut [T], max: &mut T, sum: &mut T) -> T {
    let tile = crate::cpu::row_max::row_max(row);
    let m = if tile > *max { tile } else { *max };
    if m == T::neg_infinity() {
        // Every key so far is masked: nothing to add.
        row.fill(T::zero());
        return T::one();
    }
    let corr = (*max - m).kernel_exp();
    let add = exp_sum(row, m);
    *sum = *sum * corr + add;
    *max = m;
    corr
}

crate::cpu::avx2_twin! {
    /// [`online_update_body`] in AVX2 or AVX-512 where the CPU has it.
    fn online_update<T: Element>(row: &mut [T], max: &mut T, sum: &mut T) -> T =
        online_update_body;
}

/// The gradients of the attention, for every batch: `dq (n, l, e)`, `dk (n, s, e)`,
/// `dv (n, s, ev)`, each contiguous and written whole (a key no query sees gets zeros).
pub struct Grads<'a, T> {
    /// The queries' gradient, for every batch: `(n, l, e)`.
    pub dq: &'a mut [T],
    /// The keys' gradient: `(n, s, e)`.
    pub dk: &'a mut [T],
    /// The values' gradient: `(n, s, ev)`.
    pub dv: &'a mut [T],
}

/// The backward: from the saved packed output `out` (outputs and log-sum-exps, laid out as
/// [`Problem::out_row`] says) and the gradient of the packed output `dout` (same layout; its
/// log-sum-exp places are not read), the three gradients.
pub fn backward<T: Element>(
    pb: &Problem,
    q: &Matrices,
    k: &Matrices,
    v: &Matrices,
    out: &[T],
    dout: &[T],
    grads: Grads<'_, T>,
) {
    let (n, l, s, e, ev) = (pb.n, pb.l, pb.s, pb.e, pb.ev);
    grads.dq.fill(T::zero());
    grads.dk.fill(T::zero());
    grads.dv.fill(T::zero());
    if n == 0 || l == 0 || s == 0 {
        return;
    }
    // D = rowsum(dO ∘ O), one per query row.
    let mut delta = vec![T::zero(); n * l];
    for (i, d) in delta.iter_mut().enumerate() {
        let at = pb.out_row(i / l, i % l);
        let o = &out[at..at + ev];
        let g = &dout[at..at + ev];
        *d = o.iter().zip(g).fold(T::zero(), |acc, (&a, &b)| acc + a * b);
    }
    let (pdq, pdk, pdv) = (
        grads.dq.as_mut_ptr() as usize,
        grads.dk.as_mut_ptr() as usize,
        grads.dv.as_mut_ptr() as usize,
    );
    let threads = crate::parallel::num_threads();
    let key_blocks = s.div_ceil(BWD_KEYS);
    if n >= threads || key_blocks == 1 {
        crate::parallel::run_parts(n, |b| {
            // SAFETY: batch b's blocks of the three gradients are this task's alone.
            let (dq, dk, dv) = unsafe {
                (
                    std::slice::from_raw_parts_mut((pdq as *mut T).add(b * l * e), l * e),
                    std::slice::from_raw_parts_mut((pdk as *mut T).add(b * s * e), s * e),
                    std::slice::from_raw_parts_mut((pdv as *mut T).add(b * s * ev), s * ev),
                )
            };
            let blocks = dk
                .chunks_mut(BWD_KEYS * e)
                .zip(dv.chunks_mut(BWD_KEYS * ev));
            for (jb, (dk, dv)) in blocks.enumerate() {
                backward_keys(pb, q, k, v, out, dout, &delta, b, jb * BWD_KEYS, dq, dk, dv);
            }
        });
        return;
    }
    // Few batches: key blocks in parallel, each with its own query gradient, summed after.
    let tasks = n * key_blocks;
    let partial: Vec<std::sync::Mutex<Vec<T>>> = (0..tasks)
        .map(|_| std::sync::Mutex::new(Vec::new()))
        .collect();
    crate::parallel::run_parts(tasks, |t| {
        let (b, jb) = (t / key_blocks, t % key_blocks);
        let j0 = jb * BWD_KEYS;
        let cols = BWD_KEYS.min(s - j0);
        let mut dq = vec![T::zero(); l * e];
        // SAFETY: keys j0..j0 + cols of batch b are this task's alone.
        let (dk, dv) = unsafe {
            (
                std::slice::from_raw_parts_mut((pdk as *mut T).add((b * s + j0) * e), cols * e),
                std::slice::from_raw_parts_mut((pdv as *mut T).add((b * s + j0) * ev), cols * ev),
            )
        };
        backward_keys(pb, q, k, v, out, dout, &delta, b, j0, &mut dq, dk, dv);
        if let Ok(mut slot) = partial[t].lock() {
            *slot = dq;
        }
    });
    for (t, slot) in partial.into_iter().enumerate() {
        let b = t / key_blocks;
        let part = slot.into_inner().unwrap_or_default();
        let dq = &mut grads.dq[b * l * e..(b + 1) * l * e];
        for (d, &p) in dq.iter_mut().zip(&part) {
            *d += p;
        }
    }
}

/// The contributions of the keys `j0..j0 + BWD_KEYS` of batch `b`: to their own rows of the
/// gradients, `dk (cols, e)` and `dv (cols, ev)`, and to every query row's `dq (l, e)`.
#[allow(clippy::too_many_arguments)]
fn backward_keys<T: Element>(
    pb: &Problem,
    q: &Matrices,
    k: &Matrices,
    v: &Matrices,
    out: &[T],
    dout: &[T],
    delta: &[T],
    b: usize,
    j0: usize,
    dq: &mut [T],
    dk: &mut [T],
    dv: &mut [T],
) {
    let (l, s, e, ev) = (pb.l, pb.s, pb.e, pb.ev);
    let cols = BWD_KEYS.min(s - j0);
    let scale = T::from_f64(pb.scale);
    let mut p = vec![T::zero(); BWD_ROWS * BWD_KEYS];
    let mut pd = vec![T::zero(); BWD_ROWS * BWD_KEYS];
    let mut dp = vec![T::zero(); BWD_ROWS * BWD_KEYS];
    // Causal: query rows before j0 see none of these keys.
    let first = match pb.mask {
        Mask::Causal => j0,
        _ => 0,
    };
    let mut i0 = first - first % BWD_ROWS;
    while i0 < l {
        let rows = BWD_ROWS.min(l - i0);
        // S = q kᵀ · scale, masked; P = exp(S - lse).
        pb.scores_tile(q, k, (b, i0, j0), (rows, cols), &mut p, BWD_KEYS);
        for r in 0..rows {
            let lse = out[pb.lse_at(b, i0 + r)];
            let row = &mut p[r * BWD_KEYS..r * BWD_KEYS + cols];
            exp_minus(row, lse);
        }
        // Pd: the dropped weights (what multiplied v in the forward).
        let dropped = match pb.dropout {
            Some((key, prob)) => {
                let keep = T::from_f64(if prob < 1.0 { 1.0 / (1.0 - prob) } else { 0.0 });
                for r in 0..rows {
                    for c in 0..cols {
                        let kept = prob < 1.0 && pb.dropout_keeps(key, prob, b, i0 + r, j0 + c);
                        pd[r * BWD_KEYS + c] = if kept {
                            p[r * BWD_KEYS + c] * keep
                        } else {
                            T::zero()
                        };
                    }
                }
                Some(keep)
            }
            None => None,
        };
        let weights = if dropped.is_some() { &pd } else { &p };
        let go = (
            dout.as_ptr().wrapping_add(pb.out_row(b, i0)),
            pb.out_width() as isize,
            1isize,
        );
        // dV[j0..] += Pdᵀ dO.
        // SAFETY: this block's dv rows (cols x ev), the weights tile read transposed, dO rows
        // i0...
        unsafe {
            tile_gemm(
                cols,
                ev,
                rows,
                dv.as_mut_ptr(),
                ev,
                true,
                (weights.as_ptr(), 1, BWD_KEYS as isize),
                go,
                T::one(),
            )
        };
        // dPd = dO vᵀ.
        // SAFETY: dO rows i0.., values j0.. read transposed; dp holds the tile.
        unsafe {
            tile_gemm(
                rows,
                cols,
                ev,
                dp.as_mut_ptr(),
                BWD_KEYS,
                false,
                go,
                (v.at(b, j0), v.cs, v.rs),
                T::one(),
            )
        };
        // dS = P ∘ (dP - D), with dP = dPd ∘ mask / (1 - p) under dropout.
        for r in 0..rows {
            let d = delta[b * l + i0 + r];
            for c in 0..cols {
                let idx = r * BWD_KEYS + c;
                let mut g = dp[idx];
                if let (Some(keep), Some((key, prob))) = (dropped, pb.dropout) {
                    let kept = prob < 1.0 && pb.dropout_keeps(key, prob, b, i0 + r, j0 + c);
                    g = if kept { g * keep } else { T::zero() };
                }
                dp[idx] = p[idx] * (g - d);
            }
        }
        // dQ[i0..] += dS k · scale; dK[j0..] += dSᵀ q · scale.
        // SAFETY: dq rows i0.. (rows x e), dS tile, keys j0...
        unsafe {
            tile_gemm(
                rows,
                e,
                cols,
                dq.as_mut_ptr().add(i0 * e),
                e,
                true,
                (dp.as_ptr(), BWD_KEYS as isize, 1),
                (k.at(b, j0), k.rs, k.cs),
                scale,
            );
            tile_gemm(
                cols,
                e,
                rows,
                dk.as_mut_ptr(),
                e,
                true,
                (dp.as_ptr(), 1, BWD_KEYS as isize),
                (q.at(b, i0), q.rs, q.cs),
                scale,
            );
        }
        i0 += rows;
    }
}

/// `row[c] = exp(row[c] - lse)`; zero where the row saw no key (`lse = -inf`) or the score is
/// masked.
#[inline(always)]
fn exp_minus_body<T: Element>(row: &mut [T], lse: T) {
    if lse == T::neg_infinity() {
        row.fill(T::zero());
        return;
    }
    for x in row.iter_mut() {
        *x = (*x - lse).kernel_exp();
    }
}

crate::cpu::avx2_twin! {
    /// [`exp_minus_body`] in AVX2 or AVX-512 where the CPU has it.
    fn exp_minus<T: Element>(row: &mut [T], lse: T) = exp_minus_body;
}
