//! CPU kernels of the recurrent layers (`ops::recurrent`): one layer of an LSTM, a GRU or an
//! Elman RNN (tanh or ReLU) over a whole sequence, forward and backward through time.
//!
//! The input projection `x W_ihᵀ + b_ih` of every step is one GEMM done by the caller; here
//! each step costs one GEMM `h W_hhᵀ + b_hh` (the engine's GEMM, `product`) and one fused
//! pass over the gates. The forward writes the layer's *packed* result, `S` slabs of
//! `(steps, batch, hidden)`, slab 0 being the hidden states (the layer's output) and the others
//! what the backward needs:
//!
//! - LSTM (`S = 6`): `h, c, i, f, g, o` (the gates after their activations);
//! - GRU (`S = 5`): `h, r, z, n, hn` with `hn = h_prev W_hnᵀ + b_hn` (what `r` multiplies);
//! - RNN (`S = 1`): `h` only (the activation's derivative is a function of `h`).
//!
//! The backward takes a gradient of the whole packed tensor (every slab, so that gradients
//! of the saved gates, which a second-order backward produces, are honoured too) and runs
//! the reverse recurrence: per step one fused pass and one GEMM `d_gates W_hh`; the weight's
//! gradient is one GEMM over all steps at the end.
//!
//! The sequences of a batch are independent: the threads split the batch rows and each runs
//! the whole recurrence (forward or backward) on its rows, with no synchronisation between
//! steps. Each element's arithmetic is the same whatever the split (the sums run over the
//! hidden units, never over the batch), so results do not depend on the thread count.

use super::matmul::{product, Start, Strided};
use super::{transpose_into, Workspace};
use crate::dtype::Element;

/// The kind of recurrent cell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cell {
    /// Long short-term memory (gates `i, f, g, o`, as PyTorch orders them).
    Lstm,
    /// Gated recurrent unit (gates `r, z, n`, `n = tanh(x_n + r (h W_hnᵀ + b_hn))`).
    Gru,
    /// Elman RNN `h = tanh(x + h W_hhᵀ + b_hh)`.
    RnnTanh,
    /// Elman RNN `h = relu(x + h W_hhᵀ + b_hh)`.
    RnnRelu,
}

impl Cell {
    /// Gates per hidden unit (rows of `W_hh` per hidden unit).
    pub fn gates(self) -> usize {
        match self {
            Cell::Lstm => 4,
            Cell::Gru => 3,
            Cell::RnnTanh | Cell::RnnRelu => 1,
        }
    }

    /// Slabs of `(steps, batch, hidden)` in the packed result.
    pub fn slabs(self) -> usize {
        match self {
            Cell::Lstm => 6,
            Cell::Gru => 5,
            Cell::RnnTanh | Cell::RnnRelu => 1,
        }
    }
}

/// The sizes of one layer call.
#[derive(Clone, Copy, Debug)]
pub struct Sizes {
    /// Time steps (`T`).
    pub steps: usize,
    /// Sequences in the batch (`B`).
    pub batch: usize,
    /// Hidden units (`H`).
    pub hidden: usize,
    /// Run from the last step to the first (the reverse direction of a bidirectional layer).
    pub reverse: bool,
}

impl Sizes {
    /// The time index of the `s`-th step processed.
    #[inline]
    pub fn time(&self, s: usize) -> usize {
        if self.reverse {
            self.steps - 1 - s
        } else {
            s
        }
    }

    /// Elements of one `(batch, hidden)` block.
    #[inline]
    fn block(&self) -> usize {
        self.batch * self.hidden
    }

    /// Elements of one slab `(steps, batch, hidden)`.
    #[inline]
    fn slab(&self) -> usize {
        self.steps * self.block()
    }
}

#[inline(always)]
fn sigmoid<T: Element>(x: T) -> T {
    T::one() / (T::one() + (-x).fast_exp())
}

/// `dst (m x n, row-major) = start + a (m x k) b (k x n)` on up to `threads` threads (one
/// when the product is small); empty products handled here (the GEMM library wants no zero
/// extents).
///
/// # Safety
/// `a` and `b` must address `m x k` and `k x n` valid elements through their strides.
unsafe fn gemm<T: Element>(
    dst: &mut [T],
    (m, n, k): (usize, usize, usize),
    a: Strided<T>,
    b: Strided<T>,
    start: Start<'_, T>,
    threads: usize,
) {
    debug_assert_eq!(dst.len(), m * n);
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        match start {
            Start::Empty => dst.fill(T::zero()),
            Start::Rows(r) => dst.chunks_mut(n).for_each(|row| row.copy_from_slice(r)),
            Start::Scaled(s) => dst.iter_mut().for_each(|v| *v *= s),
            Start::Columns(c) => {
                for (row, &v) in dst.chunks_mut(n).zip(c) {
                    row.fill(v);
                }
            }
        }
        return;
    }
    let threads = if 2 * m * n * k >= 1 << 18 { threads } else { 1 };
    // SAFETY: forwarded from the caller; dst is an owned m x n row-major block.
    unsafe { product(dst.as_mut_ptr(), (m, n, k), a, b, start, T::one(), threads) }
}

/// The batch rows of each part, `[start, end)`: the sequences of a batch are independent,
/// so each part (one per thread) runs the whole recurrence on its rows, with no
/// synchronisation between steps. One part when the layer is small.
fn row_parts(batch: usize, work: usize) -> Vec<(usize, usize)> {
    let parts = if work < 1 << 21 {
        1
    } else {
        crate::parallel::num_threads().min(batch).max(1)
    };
    (0..parts)
        .map(|i| (i * batch / parts, (i + 1) * batch / parts))
        .filter(|(a, b)| b > a)
        .collect()
}

/// Rows `[r0, r0 + rows)` of the `(batch, width)` block of time `t` in `(T, batch, width)`
/// data.
#[inline]
fn rows_of<T>(
    data: &[T],
    (width, batch): (usize, usize),
    t: usize,
    (r0, rows): (usize, usize),
) -> &[T] {
    &data[(t * batch + r0) * width..(t * batch + r0 + rows) * width]
}

/// [`rows_of`] for writing, in a buffer given by address (each part writes its own rows).
///
/// # Safety
/// The rows must lie in the live buffer at `base`, and nothing else may touch them while
/// the slice lives.
unsafe fn rows_mut<'a, T>(
    base: usize,
    (width, batch): (usize, usize),
    t: usize,
    (r0, rows): (usize, usize),
) -> &'a mut [T] {
    // SAFETY: as the caller vouches.
    unsafe {
        std::slice::from_raw_parts_mut((base as *mut T).add((t * batch + r0) * width), rows * width)
    }
}

// ------------------------------------------------------------------------------ forward

/// One LSTM step over all rows: `x` and `hh` are `(batch, 4H)`, `c` and `h` the running state
/// (updated in place), `out` the step's six blocks `h, c, i, f, g, o`.
#[inline(always)]
fn lstm_step<T: Element>(
    x: &[T],
    hh: &[T],
    c: &mut [T],
    h: &mut [T],
    out: &mut [&mut [T]],
    n: usize,
) {
    let [oh, oc, oi, of, og, oo] = out else {
        unreachable!("an LSTM step writes six blocks")
    };
    for r in 0..h.len() / n.max(1) {
        let (x, hh) = (
            &x[r * 4 * n..(r + 1) * 4 * n],
            &hh[r * 4 * n..(r + 1) * 4 * n],
        );
        let rs = r * n..(r + 1) * n;
        let (c, h) = (&mut c[rs.clone()], &mut h[rs.clone()]);
        let (oh, oc) = (&mut oh[rs.clone()], &mut oc[rs.clone()]);
        let (oi, of) = (&mut oi[rs.clone()], &mut of[rs.clone()]);
        let (og, oo) = (&mut og[rs.clone()], &mut oo[rs]);
        let (xi, xf, xg, xo) = (&x[..n], &x[n..2 * n], &x[2 * n..3 * n], &x[3 * n..4 * n]);
        let (hi, hf, hg, ho) = (
            &hh[..n],
            &hh[n..2 * n],
            &hh[2 * n..3 * n],
            &hh[3 * n..4 * n],
        );
        for j in 0..n {
            let i = sigmoid(xi[j] + hi[j]);
            let f = sigmoid(xf[j] + hf[j]);
            let g = (xg[j] + hg[j]).fast_tanh();
            let o = sigmoid(xo[j] + ho[j]);
            let cn = f * c[j] + i * g;
            let hn = o * cn.fast_tanh();
            c[j] = cn;
            h[j] = hn;
            oc[j] = cn;
            oh[j] = hn;
            oi[j] = i;
            of[j] = f;
            og[j] = g;
            oo[j] = o;
        }
    }
}

/// One GRU step: `x` and `hh` are `(batch, 3H)` (`hh` includes `b_hh`), `h` the running
/// state, `out` the blocks `h, r, z, n, hn`.
#[inline(always)]
fn gru_step<T: Element>(x: &[T], hh: &[T], h: &mut [T], out: &mut [&mut [T]], n: usize) {
    let [oh, or, oz, on, ohn] = out else {
        unreachable!("a GRU step writes five blocks")
    };
    for r in 0..h.len() / n.max(1) {
        let (x, hh) = (
            &x[r * 3 * n..(r + 1) * 3 * n],
            &hh[r * 3 * n..(r + 1) * 3 * n],
        );
        let rs = r * n..(r + 1) * n;
        let h = &mut h[rs.clone()];
        let (oh, or, oz) = (
            &mut oh[rs.clone()],
            &mut or[rs.clone()],
            &mut oz[rs.clone()],
        );
        let (on, ohn) = (&mut on[rs.clone()], &mut ohn[rs]);
        let (xr, xz, xn) = (&x[..n], &x[n..2 * n], &x[2 * n..3 * n]);
        let (hr, hz, hn) = (&hh[..n], &hh[n..2 * n], &hh[2 * n..3 * n]);
        for j in 0..n {
            let rg = sigmoid(xr[j] + hr[j]);
            let z = sigmoid(xz[j] + hz[j]);
            let nn = (xn[j] + rg * hn[j]).fast_tanh();
            // PyTorch's form: n + z (h - n).
            let hy = nn + z * (h[j] - nn);
            h[j] = hy;
            oh[j] = hy;
            or[j] = rg;
            oz[j] = z;
            on[j] = nn;
            ohn[j] = hn[j];
        }
    }
}

/// One Elman step: `h = act(x + hh)` into the running state and the output block.
#[inline(always)]
fn rnn_step<T: Element>(x: &[T], hh: &[T], h: &mut [T], out: &mut [T], relu: bool) {
    let len = h.len();
    let (x, hh, out) = (&x[..len], &hh[..len], &mut out[..len]);
    for j in 0..len {
        let p = x[j] + hh[j];
        // ReLU keeps NaN (NaN < 0 is false).
        let v = if relu {
            if p < T::zero() {
                T::zero()
            } else {
                p
            }
        } else {
            p.fast_tanh()
        };
        h[j] = v;
        out[j] = v;
    }
}

super::avx2_twin! {
    /// [`lstm_step`] in AVX2/AVX-512 where the CPU has it.
    fn lstm_step_wide<T: Element>(
        x: &[T], hh: &[T], c: &mut [T], h: &mut [T], out: &mut [&mut [T]], n: usize
    ) = lstm_step;
}

super::avx2_twin! {
    /// [`gru_step`] in AVX2/AVX-512 where the CPU has it.
    fn gru_step_wide<T: Element>(
        x: &[T], hh: &[T], h: &mut [T], out: &mut [&mut [T]], n: usize
    ) = gru_step;
}

super::avx2_twin! {
    /// [`rnn_step`] in AVX2/AVX-512 where the CPU has it.
    fn rnn_step_wide<T: Element>(x: &[T], hh: &[T], h: &mut [T], out: &mut [T], relu: bool)
        = rnn_step;
}

/// The inputs of one layer's forward, all contiguous: `xp` the projected inputs
/// `(steps, batch, G·H)` (`x W_ihᵀ + b_ih`), `h0` and `c0` (LSTM only) `(batch, H)`, `w` the
/// recurrent weight `W_hh` `(G·H, H)` and `bias` its bias `b_hh` `(G·H)`.
pub struct Inputs<'a, T> {
    /// The projected inputs.
    pub xp: &'a [T],
    /// The initial hidden state.
    pub h0: &'a [T],
    /// The initial cell state (LSTM).
    pub c0: Option<&'a [T]>,
    /// The recurrent weight.
    pub w: &'a [T],
    /// The recurrent bias.
    pub bias: Option<&'a [T]>,
}

/// Run the layer forward, writing the packed result (`cell.slabs()` slabs of
/// `(steps, batch, hidden)`, every element written) into `packed`.
pub fn forward<T: Element>(cell: Cell, sz: Sizes, inp: &Inputs<'_, T>, packed: &mut [T]) {
    let (b, n, steps) = (sz.batch, sz.hidden, sz.steps);
    let gh = cell.gates() * n;
    let slabs = cell.slabs();
    debug_assert_eq!(packed.len(), slabs * sz.slab());
    if packed.is_empty() {
        return;
    }
    // W_hhᵀ as a contiguous (H x G·H) matrix: every step's product reads it as the GEMM
    // library's preferred (column-major) operand, without packing it again. A few steps read
    // W_hh itself (the GEMM then packs it per step, cheaper than one transpose).
    let transposed = steps >= 4;
    let mut wt = Workspace::<T>::new(if transposed { gh * n } else { 0 });
    if transposed {
        transpose_into(inp.w, gh, n, &mut wt);
    }
    let wt: &[T] = &wt;
    let start = inp.bias.map_or(Start::Empty, Start::Rows);
    let slab = sz.slab();
    let out_addr = packed.as_mut_ptr() as usize;
    let parts = row_parts(b, steps * b * gh * n);
    crate::parallel::run_parts(parts.len(), |pi| {
        let (r0, r1) = parts[pi];
        let rows = r1 - r0;
        let mut h = Workspace::<T>::new(rows * n);
        h.copy_from_slice(&inp.h0[r0 * n..r1 * n]);
        let mut c = Workspace::<T>::new(if cell == Cell::Lstm { rows * n } else { 0 });
        if let Some(c0) = inp.c0 {
            c.copy_from_slice(&c0[r0 * n..r1 * n]);
        }
        let mut hh = Workspace::<T>::new(rows * gh);
        let wt_op: Strided<T> = if transposed {
            (wt.as_ptr(), gh as isize, 1)
        } else {
            // Element (p, j) of W_hhᵀ is w[j * H + p].
            (inp.w.as_ptr(), 1, n as isize)
        };
        for s in 0..steps {
            let t = sz.time(s);
            // SAFETY: h is (rows x n) row-major, wt (n x gh) row-major.
            unsafe {
                gemm(
                    &mut hh,
                    (rows, gh, n),
                    (h.as_ptr(), n as isize, 1),
                    wt_op,
                    start,
                    1,
                )
            };
            let x = rows_of(inp.xp, (gh, b), t, (r0, rows));
            let mut out: Vec<&mut [T]> = (0..slabs)
                .map(|k| {
                    let base = out_addr + k * slab * std::mem::size_of::<T>();
                    // SAFETY: rows of this part of slab k at time t, inside `packed`, which
                    // outlives the parts; no other part writes them.
                    unsafe { rows_mut(base, (n, b), t, (r0, rows)) }
                })
                .collect();
            match cell {
                Cell::Lstm => lstm_step_wide(x, &hh, &mut c, &mut h, &mut out, n),
                Cell::Gru => gru_step_wide(x, &hh, &mut h, &mut out, n),
                Cell::RnnTanh | Cell::RnnRelu => {
                    rnn_step_wide(x, &hh, &mut h, out[0], cell == Cell::RnnRelu)
                }
            }
        }
    });
}

// ------------------------------------------------------------------------------ backward

/// One LSTM step backward. `g` holds the step's six gradient blocks (of `h, c, i, f, g, o`),
/// `p` the saved blocks, `cp` the previous cell state; `dh` is the hidden-state gradient from
/// the later steps (read), `dc` the cell-state gradient (read, then replaced by the previous
/// step's); `dx` the step's `(batch, 4H)` pre-activation gradients.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn lstm_back<T: Element>(
    g: &[&[T]],
    p: &[&[T]],
    cp: &[T],
    dh: &[T],
    dc: &mut [T],
    dx: &mut [T],
    n: usize,
) {
    let one = T::one();
    for r in 0..dh.len() / n.max(1) {
        let rs = r * n..(r + 1) * n;
        let (gh, gc, gi, gf, gg, go) = (
            &g[0][rs.clone()],
            &g[1][rs.clone()],
            &g[2][rs.clone()],
            &g[3][rs.clone()],
            &g[4][rs.clone()],
            &g[5][rs.clone()],
        );
        let (c, i, f, gt, o) = (
            &p[1][rs.clone()],
            &p[2][rs.clone()],
            &p[3][rs.clone()],
            &p[4][rs.clone()],
            &p[5][rs.clone()],
        );
        let (cp, dh, dc) = (&cp[rs.clone()], &dh[rs.clone()], &mut dc[rs]);
        let dx = &mut dx[r * 4 * n..(r + 1) * 4 * n];
        let (dxi, rest) = dx.split_at_mut(n);
        let (dxf, rest) = rest.split_at_mut(n);
        let (dxg, dxo) = rest.split_at_mut(n);
        for j in 0..n {
            let d = gh[j] + dh[j];
            let tc = c[j].fast_tanh();
            let d_o = d * tc + go[j];
            let dcj = dc[j] + gc[j] + d * o[j] * (one - tc * tc);
            let di = dcj * gt[j] + gi[j];
            let dg = dcj * i[j] + gg[j];
            let df = dcj * cp[j] + gf[j];
            dc[j] = dcj * f[j];
            dxi[j] = di * i[j] * (one - i[j]);
            dxf[j] = df * f[j] * (one - f[j]);
            dxg[j] = dg * (one - gt[j] * gt[j]);
            dxo[j] = d_o * o[j] * (one - o[j]);
        }
    }
}

/// One GRU step backward: `g` the gradient blocks of `h, r, z, n, hn`, `p` the saved blocks,
/// `hp` the previous hidden state; `dh` in: the gradient from later steps, out: the direct
/// part `dh z` of the previous state's (the GEMM adds the rest); `dx` and `dhh` the step's
/// `(batch, 3H)` gradients of the input and hidden projections.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn gru_back<T: Element>(
    g: &[&[T]],
    p: &[&[T]],
    hp: &[T],
    dh: &mut [T],
    dx: &mut [T],
    dhh: &mut [T],
    n: usize,
) {
    let one = T::one();
    for r in 0..dh.len() / n.max(1) {
        let rs = r * n..(r + 1) * n;
        let (gh, gr, gz, gn, ghn) = (
            &g[0][rs.clone()],
            &g[1][rs.clone()],
            &g[2][rs.clone()],
            &g[3][rs.clone()],
            &g[4][rs.clone()],
        );
        let (rg, z, nn, hn) = (
            &p[1][rs.clone()],
            &p[2][rs.clone()],
            &p[3][rs.clone()],
            &p[4][rs.clone()],
        );
        let (hp, dh) = (&hp[rs.clone()], &mut dh[rs]);
        let rows = r * 3 * n..(r + 1) * 3 * n;
        let dx = &mut dx[rows.clone()];
        let (dxr, rest) = dx.split_at_mut(n);
        let (dxz, dxn) = rest.split_at_mut(n);
        let dhh = &mut dhh[rows];
        let (dhr, rest) = dhh.split_at_mut(n);
        let (dhz, dhn) = rest.split_at_mut(n);
        for j in 0..n {
            let d = gh[j] + dh[j];
            let dz = d * (hp[j] - nn[j]) + gz[j];
            let dn = d * (one - z[j]) + gn[j];
            dh[j] = d * z[j];
            let dpn = dn * (one - nn[j] * nn[j]);
            let dr = dpn * hn[j] + gr[j];
            let dpr = dr * rg[j] * (one - rg[j]);
            let dpz = dz * z[j] * (one - z[j]);
            dxr[j] = dpr;
            dxz[j] = dpz;
            dxn[j] = dpn;
            dhr[j] = dpr;
            dhz[j] = dpz;
            dhn[j] = dpn * rg[j] + ghn[j];
        }
    }
}

/// One Elman step backward: `dx = (g + dh) act'(h)`.
#[inline(always)]
fn rnn_back<T: Element>(g: &[T], h: &[T], dh: &[T], dx: &mut [T], relu: bool) {
    let len = dx.len();
    let (g, h, dh) = (&g[..len], &h[..len], &dh[..len]);
    for j in 0..len {
        let d = g[j] + dh[j];
        dx[j] = if relu {
            if h[j] > T::zero() {
                d
            } else {
                T::zero()
            }
        } else {
            d * (T::one() - h[j] * h[j])
        };
    }
}

super::avx2_twin! {
    /// [`lstm_back`] in AVX2/AVX-512 where the CPU has it.
    fn lstm_back_wide<T: Element>(
        g: &[&[T]], p: &[&[T]], cp: &[T], dh: &[T], dc: &mut [T], dx: &mut [T], n: usize
    ) = lstm_back;
}

super::avx2_twin! {
    /// [`gru_back`] in AVX2/AVX-512 where the CPU has it.
    fn gru_back_wide<T: Element>(
        g: &[&[T]], p: &[&[T]], hp: &[T], dh: &mut [T], dx: &mut [T], dhh: &mut [T], n: usize
    ) = gru_back;
}

super::avx2_twin! {
    /// [`rnn_back`] in AVX2/AVX-512 where the CPU has it.
    fn rnn_back_wide<T: Element>(g: &[T], h: &[T], dh: &[T], dx: &mut [T], relu: bool)
        = rnn_back;
}

/// Where the backward writes its gradients (every element written).
pub struct Grads<'a, T> {
    /// Of the projected inputs, `(steps, batch, G·H)`.
    pub dx: &'a mut [T],
    /// Of the initial hidden state, `(batch, H)`.
    pub dh0: &'a mut [T],
    /// Of the initial cell state (LSTM; empty otherwise).
    pub dc0: &'a mut [T],
    /// Of `W_hh`, `(G·H, H)`.
    pub dw: &'a mut [T],
    /// Of `b_hh`, `(G·H)` (empty without a bias).
    pub db: &'a mut [T],
}

/// The layer's backward through time: `grad` is the gradient of the packed result, `packed`
/// the forward's packed result, `inp` the forward's inputs (`xp` is not read and may be
/// empty).
pub fn backward<T: Element>(
    cell: Cell,
    sz: Sizes,
    grad: &[T],
    packed: &[T],
    inp: &Inputs<'_, T>,
    out: Grads<'_, T>,
) {
    let (b, n, steps) = (sz.batch, sz.hidden, sz.steps);
    let gh = cell.gates() * n;
    let slabs = cell.slabs();
    if b == 0 || n == 0 || steps == 0 {
        out.dx.fill(T::zero());
        out.dh0.fill(T::zero());
        out.dc0.fill(T::zero());
        out.dw.fill(T::zero());
        out.db.fill(T::zero());
        return;
    }
    let slab = sz.slab();
    // The GRU's hidden-projection gradients differ from the input projection's (its `n`
    // part is multiplied by `r`); for the other cells they are the same.
    let mut dhh_buf = Workspace::<T>::new(if cell == Cell::Gru { steps * b * gh } else { 0 });
    let (dx_addr, dhh_addr) = (out.dx.as_mut_ptr() as usize, dhh_buf.as_mut_ptr() as usize);
    let (dh0_addr, dc0_addr) = (out.dh0.as_mut_ptr() as usize, out.dc0.as_mut_ptr() as usize);
    let parts = row_parts(b, steps * b * gh * n);
    crate::parallel::run_parts(parts.len(), |pi| {
        let (r0, r1) = parts[pi];
        let rows = r1 - r0;
        let part = (r0, rows);
        // The gradient reaching the hidden (and cell) state from the later steps.
        let mut dh = Workspace::<T>::new(rows * n);
        dh.fill(T::zero());
        let mut dc = Workspace::<T>::new(if cell == Cell::Lstm { rows * n } else { 0 });
        dc.fill(T::zero());
        let w_op: Strided<T> = (inp.w.as_ptr(), n as isize, 1);
        for s in (0..steps).rev() {
            let t = sz.time(s);
            let prev = (s > 0).then(|| sz.time(s - 1));
            let g: Vec<&[T]> = (0..slabs)
                .map(|k| rows_of(&grad[k * slab..], (n, b), t, part))
                .collect();
            let p: Vec<&[T]> = (0..slabs)
                .map(|k| rows_of(&packed[k * slab..], (n, b), t, part))
                .collect();
            // SAFETY: this part's rows of dx (and of the GRU's buffer) at time t; no other
            // part touches them, and the buffers outlive the parts.
            let dx = unsafe { rows_mut::<T>(dx_addr, (gh, b), t, part) };
            let start = match cell {
                Cell::Lstm => {
                    let cp = match (prev, inp.c0) {
                        (Some(tp), _) => rows_of(&packed[slab..], (n, b), tp, part),
                        (None, Some(c0)) => &c0[r0 * n..r1 * n],
                        (None, None) => unreachable!("an LSTM has an initial cell state"),
                    };
                    lstm_back_wide(&g, &p, cp, &dh, &mut dc, dx, n);
                    Start::Empty
                }
                Cell::Gru => {
                    let hp = match prev {
                        Some(tp) => rows_of(packed, (n, b), tp, part),
                        None => &inp.h0[r0 * n..r1 * n],
                    };
                    // SAFETY: as above.
                    let dhh = unsafe { rows_mut::<T>(dhh_addr, (gh, b), t, part) };
                    gru_back_wide(&g, &p, hp, &mut dh, dx, dhh, n);
                    Start::Scaled(T::one())
                }
                Cell::RnnTanh | Cell::RnnRelu => {
                    rnn_back_wide(g[0], p[0], &dh, dx, cell == Cell::RnnRelu);
                    Start::Empty
                }
            };
            let dstep_addr = if cell == Cell::Gru { dhh_addr } else { dx_addr };
            // SAFETY: as above; only read from here on in this step.
            let dstep: &[T] = unsafe { rows_mut::<T>(dstep_addr, (gh, b), t, part) };
            // dh_prev (+)= d_gates W_hh.
            // SAFETY: dstep is (rows x gh) row-major, w (gh x n) row-major.
            unsafe {
                gemm(
                    &mut dh,
                    (rows, n, gh),
                    (dstep.as_ptr(), gh as isize, 1),
                    w_op,
                    start,
                    1,
                )
            };
        }
        // SAFETY: this part's rows of dh0 and dc0.
        unsafe {
            rows_mut::<T>(dh0_addr, (n, b), 0, part).copy_from_slice(&dh);
            if cell == Cell::Lstm {
                rows_mut::<T>(dc0_addr, (n, b), 0, part).copy_from_slice(&dc);
            }
        }
    });
    let d: &[T] = if cell == Cell::Gru { &dhh_buf } else { out.dx };
    // dW = Σ_t d_tᵀ h_prev(t): the steps whose previous state is a stored output in one GEMM
    // (their rows are consecutive in both), then the one that starts from h0.
    let rows = (steps - 1) * b;
    let hs = &packed[..slab];
    let (d_rest, h_rest, d_first) = if sz.reverse {
        // Times 0..T-1 read h(t + 1); time T-1 reads h0.
        (&d[..rows * gh], &hs[b * n..], &d[rows * gh..])
    } else {
        // Times 1..T read h(t - 1); time 0 reads h0.
        (&d[b * gh..], &hs[..rows * n], &d[..b * gh])
    };
    let threads = crate::parallel::num_threads();
    // SAFETY: d_restᵀ is (gh x rows) through strides (1, gh); h_rest (rows x n) row-major.
    unsafe {
        gemm(
            out.dw,
            (gh, n, rows),
            (d_rest.as_ptr(), 1, gh as isize),
            (h_rest.as_ptr(), n as isize, 1),
            Start::Empty,
            threads,
        );
        gemm(
            out.dw,
            (gh, n, b),
            (d_first.as_ptr(), 1, gh as isize),
            (inp.h0.as_ptr(), n as isize, 1),
            Start::Scaled(T::one()),
            threads,
        );
    }
    if !out.db.is_empty() {
        out.db.fill(T::zero());
        for row in d.chunks_exact(gh) {
            for (a, &v) in out.db.iter_mut().zip(row) {
                *a += v;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tiled_transpose_transposes() {
        for (rows, cols) in [(1, 1), (3, 70), (65, 33), (96, 32)] {
            let src: Vec<usize> = (0..rows * cols).collect();
            let mut dst = vec![0; rows * cols];
            transpose_into(&src, rows, cols, &mut dst);
            for r in 0..rows {
                for c in 0..cols {
                    assert_eq!(dst[c * rows + r], src[r * cols + c]);
                }
            }
        }
    }

    /// The LSTM forward of one unit in one row against the closed form.
    #[test]
    fn one_lstm_unit_matches_the_equations() {
        let sz = Sizes {
            steps: 2,
            batch: 1,
            hidden: 1,
            reverse: false,
        };
        let xp = [0.1f64, -0.2, 0.3, 0.4, -0.5, 0.6, 0.7, -0.8];
        let w = [0.5f64, -0.25, 0.75, 0.125];
        let bias = [0.01f64, 0.02, 0.03, 0.04];
        let inp = Inputs {
            xp: &xp,
            h0: &[0.3],
            c0: Some(&[-0.4]),
            w: &w,
            bias: Some(&bias),
        };
        let mut packed = vec![0.0f64; 12];
        forward(Cell::Lstm, sz, &inp, &mut packed);
        let s = |x: f64| 1.0 / (1.0 + (-x).exp());
        let (mut h, mut c) = (0.3f64, -0.4f64);
        for t in 0..2 {
            let pre: Vec<f64> = (0..4).map(|k| xp[t * 4 + k] + w[k] * h + bias[k]).collect();
            let (i, f, g, o) = (s(pre[0]), s(pre[1]), pre[2].tanh(), s(pre[3]));
            c = f * c + i * g;
            h = o * c.tanh();
            assert!((packed[t] - h).abs() < 1e-15);
            assert!((packed[2 + t] - c).abs() < 1e-15);
            assert!((packed[4 + t] - i).abs() < 1e-15);
            assert!((packed[10 + t] - o).abs() < 1e-15);
        }
    }
}
