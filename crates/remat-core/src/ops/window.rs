//! Sliding windows over the trailing 1–3 spatial axes of an `(N, C, *spatial)` tensor: their
//! geometry, and the two linear ops every convolution and pooling here is built from —
//! `unfold` (im2col: the elements of each window as one column) and its adjoint `fold`
//! (col2im: columns added back into the image). Each is the other's backward, so gradients
//! of every order come from these two kernels, and neither saves anything for backward.

use super::from_vec;
use super::softmax::{c_order, for_blocks};
use crate::autograd::node::{apply, BackwardCtx, Op};
use crate::dtype::{Element, Scalar};
use crate::error::{Error, Result};
use crate::layout::{fmt_shape, Dims};
use crate::tensor::Tensor;

/// The geometry of a sliding window over `kernel.len()` spatial axes (1 to 3), PyTorch's
/// `kernel_size`, `stride`, `padding` (zeros on both sides), `dilation` and `ceil_mode`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    /// Window extent per spatial axis.
    pub kernel: Dims,
    /// Step between windows per axis.
    pub stride: Dims,
    /// Implicit zero padding on both sides, per axis.
    pub padding: Dims,
    /// Spacing between the window's elements, per axis.
    pub dilation: Dims,
    /// Count a last partial window that starts inside the (left-padded) input (pooling).
    pub ceil_mode: bool,
}

impl Window {
    /// A window with the given kernel, stride, padding and dilation (floor mode).
    pub fn new(kernel: &[usize], stride: &[usize], padding: &[usize], dilation: &[usize]) -> Self {
        Window {
            kernel: kernel.into(),
            stride: stride.into(),
            padding: padding.into(),
            dilation: dilation.into(),
            ceil_mode: false,
        }
    }

    /// Number of spatial axes.
    pub fn rank(&self) -> usize {
        self.kernel.len()
    }

    /// Elements per window (the product of the kernel sizes).
    pub fn volume(&self) -> usize {
        self.kernel.iter().product()
    }

    /// Error unless every field has one entry per spatial axis (1 to 3) and kernel, stride
    /// and dilation are positive.
    pub fn check(&self, op: &str) -> Result<()> {
        let s = self.rank();
        if !(1..=3).contains(&s) {
            return Err(Error::value(
                op,
                format!("expected 1 to 3 spatial axes, got a kernel of {s}"),
            ));
        }
        for (name, v) in [
            ("stride", &self.stride),
            ("padding", &self.padding),
            ("dilation", &self.dilation),
        ] {
            if v.len() != s {
                return Err(Error::value(
                    op,
                    format!(
                        "{name} must have {s} entries like kernel_size {}, got {}",
                        fmt_shape(&self.kernel),
                        fmt_shape(v)
                    ),
                ));
            }
        }
        for (name, v) in [
            ("kernel_size", &self.kernel),
            ("stride", &self.stride),
            ("dilation", &self.dilation),
        ] {
            if v.contains(&0) {
                return Err(Error::value(
                    op,
                    format!("{name} must be positive, got {}", fmt_shape(v)),
                ));
            }
        }
        Ok(())
    }

    /// Output extent of each spatial axis for an input of spatial extent `input`; an error
    /// naming the op and the shapes when the padded input is smaller than the window.
    pub fn output_size(&self, op: &str, input: &[usize]) -> Result<Dims> {
        self.check(op)?;
        let mut out = Dims::new();
        for a in 0..self.rank() {
            let eff = self.dilation[a] * (self.kernel[a] - 1) + 1;
            let padded = input[a] + 2 * self.padding[a];
            if padded < eff {
                return Err(Error::shape(
                    op,
                    format!(
                        "the padded input of spatial size {} is smaller than the kernel size {} \
                         (dilation {}, padding {})",
                        fmt_shape(input),
                        fmt_shape(&self.kernel),
                        fmt_shape(&self.dilation),
                        fmt_shape(&self.padding)
                    ),
                ));
            }
            let span = padded - eff;
            let s = self.stride[a];
            let mut n = if self.ceil_mode {
                span.div_ceil(s) + 1
            } else {
                span / s + 1
            };
            // PyTorch: the last window must start inside the input or its left padding.
            if self.ceil_mode && (n - 1) * s >= input[a] + self.padding[a] {
                n -= 1;
            }
            out.push(n);
        }
        Ok(out)
    }
}

/// A window's geometry on one `(spatial)` plane, with the spatial axes left-padded to three
/// (a size-1 axis with a size-1 kernel), so one kernel serves 1-D, 2-D and 3-D.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Plane {
    pub input: [usize; 3],
    pub out: [usize; 3],
    pub kernel: [usize; 3],
    pub stride: [usize; 3],
    pub padding: [usize; 3],
    pub dilation: [usize; 3],
}

impl Plane {
    /// Whether the kernel covers the whole unpadded input in one position: each im2col
    /// column is then a sample's channel plane as it lies in memory (a discriminator's last
    /// 4×4 convolution of a 4×4 image, a convolution used as a dense layer).
    pub(crate) fn is_dense(&self) -> bool {
        self.out_len() == 1
            && self.kernel == self.input
            && self.padding == [0; 3]
            && self.dilation == [1; 3]
    }
    pub(crate) fn new(win: &Window, input: &[usize], out: &[usize]) -> Plane {
        let lift = |v: &[usize], fill: usize| {
            let mut a = [fill; 3];
            a[3 - v.len()..].copy_from_slice(v);
            a
        };
        Plane {
            input: lift(input, 1),
            out: lift(out, 1),
            kernel: lift(&win.kernel, 1),
            stride: lift(&win.stride, 1),
            padding: lift(&win.padding, 0),
            dilation: lift(&win.dilation, 1),
        }
    }

    pub(crate) fn input_len(&self) -> usize {
        self.input.iter().product()
    }

    pub(crate) fn out_len(&self) -> usize {
        self.out.iter().product()
    }

    pub(crate) fn volume(&self) -> usize {
        self.kernel.iter().product()
    }

    /// The geometry as the CUDA kernels take it.
    pub(crate) fn geometry(&self) -> crate::cuda::launch::WindowGeometry {
        [
            self.input,
            self.out,
            self.kernel,
            self.stride,
            self.padding,
            self.dilation,
        ]
    }

    /// Input coordinate on axis `a` of output position `o` and kernel offset `k`, or None in
    /// the padding.
    #[inline]
    pub(crate) fn coord(&self, a: usize, o: usize, k: usize) -> Option<usize> {
        (o * self.stride[a] + k * self.dilation[a])
            .checked_sub(self.padding[a])
            .filter(|&i| i < self.input[a])
    }

    /// The output positions `[lo, hi)` along the last axis whose input coordinate for kernel
    /// offset `k` lies inside the input (the rest read padding).
    #[inline]
    fn inner_range(&self, k: usize) -> (usize, usize) {
        let (s, p, n, off) = (
            self.stride[2],
            self.padding[2],
            self.input[2],
            k * self.dilation[2],
        );
        let lo = p.saturating_sub(off).div_ceil(s).min(self.out[2]);
        let hi = (n + p).saturating_sub(off).div_ceil(s).min(self.out[2]);
        (lo, hi.max(lo))
    }

    /// Output lines (the positions sharing every coordinate but the last): the plane has
    /// `out[0] · out[1]` of them, `out[2]` positions each.
    pub(crate) fn lines(&self) -> usize {
        self.out[0] * self.out[1]
    }

    /// Visit every (kernel offset row, output line) of the lines `lines`, restricted to the
    /// output columns `cols` of each line: `f(segment_start, input_line_base, lo, hi, k_last)`
    /// where `segment_start` is the segment's offset in a `volume`-row matrix whose rows are
    /// `ld` apart (the segments of a row side by side from its start), `lo..hi` the segment's columns (relative to `cols.start`) whose
    /// input lies inside the plane, and `input_line_base` None when the line lies in the
    /// padding.
    #[inline]
    fn for_lines(
        &self,
        lines: std::ops::Range<usize>,
        cols: std::ops::Range<usize>,
        ld: usize,
        mut f: impl FnMut(usize, Option<usize>, usize, usize, usize),
    ) {
        let cw = cols.len();
        let mut row = 0;
        for ka in 0..self.kernel[0] {
            for kb in 0..self.kernel[1] {
                for kc in 0..self.kernel[2] {
                    let (lo, hi) = self.inner_range(kc);
                    let lo = lo.clamp(cols.start, cols.end) - cols.start;
                    let hi = hi.clamp(cols.start, cols.end) - cols.start;
                    let mut o = row * ld;
                    for line in lines.clone() {
                        let (oa, ob) = (line / self.out[1], line % self.out[1]);
                        let base = match (self.coord(0, oa, ka), self.coord(1, ob, kb)) {
                            (Some(ia), Some(ib)) => Some((ia * self.input[1] + ib) * self.input[2]),
                            _ => None,
                        };
                        f(o, base, lo, hi.max(lo), kc);
                        o += cw;
                    }
                    row += 1;
                }
            }
        }
    }

    /// First input column read at output column 0 for last-axis kernel offset `k` (may be
    /// "negative": returned as an offset to subtract).
    #[inline]
    fn first_col(&self, k: usize) -> (usize, usize) {
        (k * self.dilation[2], self.padding[2])
    }

    /// im2col of one plane: `cols` (`volume × out_len`) from `x` (`input_len`).
    pub(crate) fn unfold_into<T: Scalar>(&self, x: &[T], cols: &mut [T]) {
        self.unfold_tile_into(x, 0..self.lines(), 0..self.out[2], cols)
    }

    /// im2col of a tile of one plane, the output columns `cols` of the output lines `lines`:
    /// `mat` (`volume × (lines.len() · cols.len())`) from `x` (`input_len`), what
    /// [`Plane::unfold_into`] gives for those output positions.
    pub(crate) fn unfold_tile_into<T: Scalar>(
        &self,
        x: &[T],
        lines: std::ops::Range<usize>,
        cols: std::ops::Range<usize>,
        mat: &mut [T],
    ) {
        let ld = lines.len() * cols.len();
        self.unfold_tile_ld(x, lines, cols, mat, ld)
    }

    /// [`Plane::unfold_tile_into`] into the first `lines.len() · cols.len()` columns of a
    /// matrix whose rows are `ld` elements apart (one sample's block of a tile that spans
    /// several samples).
    pub(crate) fn unfold_tile_ld<T: Scalar>(
        &self,
        x: &[T],
        lines: std::ops::Range<usize>,
        cols: std::ops::Range<usize>,
        mat: &mut [T],
        ld: usize,
    ) {
        let zero = T::default();
        let (w, c0) = (cols.len(), cols.start);
        let s = self.stride[2];
        self.for_lines(lines, cols, ld, |o, base, lo, hi, kc| {
            let line = &mut mat[o..o + w];
            let Some(base) = base else {
                line.fill(zero);
                return;
            };
            line[..lo].fill(zero);
            line[hi..].fill(zero);
            if lo < hi {
                let (off, pad) = self.first_col(kc);
                let start = base + (c0 + lo) * s + off - pad;
                if s == 1 {
                    line[lo..hi].copy_from_slice(&x[start..start + (hi - lo)]);
                } else {
                    for (j, v) in line[lo..hi].iter_mut().enumerate() {
                        *v = x[start + j * s];
                    }
                }
            }
        });
    }

    /// col2im of one plane: adds `cols` (`volume × out_len`) into `x` (`input_len`).
    pub(crate) fn fold_into<T: Element>(&self, cols: &[T], x: &mut [T]) {
        self.fold_tile_into(cols, 0..self.lines(), 0..self.out[2], x)
    }

    /// col2im of a tile (see [`Plane::unfold_tile_into`]): adds `mat` (`volume ×
    /// (lines.len() · cols.len())`) into `x` (`input_len`).
    pub(crate) fn fold_tile_into<T: Element>(
        &self,
        mat: &[T],
        lines: std::ops::Range<usize>,
        cols: std::ops::Range<usize>,
        x: &mut [T],
    ) {
        let ld = lines.len() * cols.len();
        self.fold_tile_ld(mat, lines, cols, x, ld)
    }

    /// [`Plane::fold_tile_into`] from the first `lines.len() · cols.len()` columns of a
    /// matrix whose rows are `ld` elements apart (see [`Plane::unfold_tile_ld`]).
    pub(crate) fn fold_tile_ld<T: Element>(
        &self,
        mat: &[T],
        lines: std::ops::Range<usize>,
        cols: std::ops::Range<usize>,
        x: &mut [T],
        ld: usize,
    ) {
        let (w, c0) = (cols.len(), cols.start);
        let s = self.stride[2];
        self.for_lines(lines, cols, ld, |o, base, lo, hi, kc| {
            let (Some(base), true) = (base, lo < hi) else {
                return;
            };
            let line = &mat[o..o + w];
            let (off, pad) = self.first_col(kc);
            let start = base + (c0 + lo) * s + off - pad;
            if s == 1 {
                // Contiguous: a slice add the compiler vectorises.
                let dst = &mut x[start..start + (hi - lo)];
                for (d, &v) in dst.iter_mut().zip(&line[lo..hi]) {
                    *d += v;
                }
            } else {
                for (j, &v) in line[lo..hi].iter().enumerate() {
                    x[start + j * s] += v;
                }
            }
        });
    }
}

/// Split `(N, C, *spatial)` (or `(C, *spatial)` when `unbatched_ok`) into (planes, spatial).
pub(crate) fn planes_of(
    op: &str,
    shape: &[usize],
    rank: usize,
    what: &str,
) -> Result<(usize, Dims)> {
    if shape.len() != rank + 2 && shape.len() != rank + 1 {
        return Err(Error::shape(
            op,
            format!(
                "expected a {}-D or {}-D {what} (batch, channels, {rank} spatial), got shape {}",
                rank + 1,
                rank + 2,
                fmt_shape(shape)
            ),
        ));
    }
    let lead = shape.len() - rank;
    Ok((
        shape[..lead].iter().product(),
        shape[lead..].iter().copied().collect(),
    ))
}

/// `unfold`: `(N, C, *spatial)` → `(N, C·volume, L)`, the elements of each window as a
/// column (zeros in the padding).
struct UnfoldOp {
    win: Window,
}

impl Op for UnfoldOp {
    fn name(&self) -> &'static str {
        "unfold"
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        let shape = x.shape();
        let (planes, spatial) = planes_of("unfold", shape, self.win.rank(), "input")?;
        let out = self.win.output_size("unfold", &spatial)?;
        let plane = Plane::new(&self.win, &spatial, &out);
        let (n, c) = (shape[0], shape[1]);
        let block = plane.volume() * plane.out_len();
        Ok(crate::dispatch!(x.dtype(), T => {
            let xs = c_order::<T>(x.data());
            let mut cols = crate::cpu::alloc::<T>(planes * block);
            let stride = plane.input_len();
            for_blocks(&mut cols, block, |p, dst| {
                plane.unfold_into(&xs[p * stride..(p + 1) * stride], dst)
            });
            from_vec(cols, &[n, c * plane.volume(), plane.out_len()])
        }))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        let shape = x.shape();
        let (planes, spatial) = planes_of("unfold", shape, self.win.rank(), "input")?;
        let out = self.win.output_size("unfold", &spatial)?;
        let plane = Plane::new(&self.win, &spatial, &out);
        let oshape = [shape[0], shape[1] * plane.volume(), plane.out_len()];
        crate::cuda::launch::im2col("unfold", x, &plane.geometry(), planes, &oshape)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let shape = &ctx.inputs[0].shape;
        let spatial = &shape[2..];
        Ok(vec![Some(fold(ctx.grad, spatial, &self.win)?)])
    }
}

/// `fold`: `(N, C·volume, L)` → `(N, C, *size)`, each column's elements added at their
/// window's positions (the adjoint of `unfold`).
struct FoldOp {
    win: Window,
    size: Dims,
}

impl FoldOp {
    /// The plane geometry and the output shape `(N, C, *size)`, or a shape error when `cols`
    /// is not `(N, C · volume, L)`.
    fn geometry(&self, cols: &Tensor) -> Result<(Plane, Dims)> {
        let out = self.win.output_size("fold", &self.size)?;
        let plane = Plane::new(&self.win, &self.size, &out);
        let shape = cols.shape();
        let (k, l) = (plane.volume(), plane.out_len());
        if shape.len() != 3 || !shape[1].is_multiple_of(k) || shape[2] != l {
            return Err(Error::shape(
                "fold",
                format!(
                    "expected input of shape (N, C × {k}, {l}) for output size {} with kernel \
                     size {}, got {}",
                    fmt_shape(&self.size),
                    fmt_shape(&self.win.kernel),
                    fmt_shape(shape)
                ),
            ));
        }
        let mut oshape: Dims = [shape[0], shape[1] / k].into_iter().collect();
        oshape.extend_from_slice(&self.size);
        Ok((plane, oshape))
    }
}

impl Op for FoldOp {
    fn name(&self) -> &'static str {
        "fold"
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let cols = inputs[0];
        let (plane, oshape) = self.geometry(cols)?;
        let (k, l) = (plane.volume(), plane.out_len());
        let (n, c) = (oshape[0], oshape[1]);
        Ok(crate::dispatch!(cols.dtype(), T => {
            let cs = c_order::<T>(cols.data());
            let stride = plane.input_len();
            let mut img = crate::cpu::filled::<T>(n * c * stride, T::from_f64(0.0));
            let block = k * l;
            for_blocks(&mut img, stride, |p, dst| {
                plane.fold_into(&cs[p * block..(p + 1) * block], dst)
            });
            from_vec(img, &oshape)
        }))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let (plane, oshape) = self.geometry(inputs[0])?;
        let planes = oshape[0] * oshape[1];
        crate::cuda::launch::col2im("fold", inputs[0], &plane.geometry(), planes, &oshape)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(unfold(ctx.grad, &self.win)?)])
    }
}

/// im2col over the trailing `win.rank()` axes of an `(N, C, *spatial)` tensor:
/// `(N, C·prod(kernel), L)` with `L` the number of windows (PyTorch's `F.unfold` for 2-D).
pub fn unfold(x: &Tensor, win: &Window) -> Result<Tensor> {
    win.check("unfold")?;
    if x.ndim() != win.rank() + 2 {
        return Err(Error::shape(
            "unfold",
            format!(
                "expected a {}-D input (N, C, {} spatial) for kernel size {}, got shape {}",
                win.rank() + 2,
                win.rank(),
                fmt_shape(&win.kernel),
                fmt_shape(x.shape())
            ),
        ));
    }
    apply(UnfoldOp { win: win.clone() }, &[x], &[])
}

/// col2im: `(N, C·prod(kernel), L)` → `(N, C, *output_size)`, overlapping window elements
/// summed (PyTorch's `F.fold` for 2-D); the adjoint of [`unfold`].
pub fn fold(cols: &Tensor, output_size: &[usize], win: &Window) -> Result<Tensor> {
    win.check("fold")?;
    if output_size.len() != win.rank() {
        return Err(Error::value(
            "fold",
            format!(
                "output_size {} must have one entry per kernel axis ({})",
                fmt_shape(output_size),
                fmt_shape(&win.kernel)
            ),
        ));
    }
    apply(
        FoldOp {
            win: win.clone(),
            size: output_size.into(),
        },
        &[cols],
        &[],
    )
}
