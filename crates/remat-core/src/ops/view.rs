//! View ops that never copy: `transpose`, `permute`, `reverse_axes` (NumPy's `.T`) and basic
//! indexing (`index`: ints, positive-step slices, new axes, one ellipsis). Each result shares
//! its input's storage; only the layout (shape, strides, offset) changes.
//!
//! Backward: a permutation's gradient is the gradient permuted back (again a view); an
//! index's gradient is a zero tensor of the input's shape with the gradient scattered into
//! the indexed region (on CUDA: a zero fill and the `strided_add` scatter-add kernel).

use super::{from_vec, view};
use crate::autograd::node::{apply, BackwardCtx, Op};
use crate::cpu;
use crate::dtype::{Element, Scalar};
use crate::error::{Error, Result};
use crate::layout::{fmt_shape, normalize_axis, numel, Dims, Layout};
use crate::tensor::Tensor;
use smallvec::SmallVec;

// ---------------------------------------------------------------------------------------------
// transpose / permute / reverse_axes
// ---------------------------------------------------------------------------------------------

/// Reorders axes: output axis `i` is input axis `perm[i]`.
struct PermuteOp {
    perm: Dims,
    name: &'static str,
}

/// Error (instead of an out-of-range panic) when a replayed input's rank differs from the
/// rank the op was built for.
fn check_rank(op: &str, x: &Tensor, ndim: usize) -> Result<()> {
    if x.ndim() != ndim {
        return Err(Error::shape(
            op,
            format!(
                "expected a tensor of {ndim} dimensions, got shape {}",
                fmt_shape(x.shape())
            ),
        ));
    }
    Ok(())
}

impl Op for PermuteOp {
    fn any_dtype(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        self.name
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        check_rank(self.name, x, self.perm.len())?;
        Ok(view(x, x.layout().permute(&self.perm)))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.cpu(inputs)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        // The inverse permutation puts every axis back where it came from.
        let mut inv: Dims = SmallVec::from_elem(0, self.perm.len());
        for (i, &p) in self.perm.iter().enumerate() {
            inv[p] = i;
        }
        let back = PermuteOp {
            perm: inv,
            name: self.name,
        };
        Ok(vec![Some(apply(back, &[ctx.grad], &[])?)])
    }
}

/// `x` with axes `a` and `b` swapped (a view; negative axes count from the end).
pub fn transpose(x: &Tensor, a: isize, b: isize) -> Result<Tensor> {
    let nd = x.ndim();
    let (a, b) = (
        normalize_axis("transpose", a, nd)?,
        normalize_axis("transpose", b, nd)?,
    );
    let mut perm: Dims = (0..nd).collect();
    perm.swap(a, b);
    apply(
        PermuteOp {
            perm,
            name: "transpose",
        },
        &[x],
        &[],
    )
}

/// `x` with its axes reordered: output axis `i` is input axis `axes[i]` (a view; `axes` must
/// be a permutation of the axes, negative values allowed).
pub fn permute(x: &Tensor, axes: &[isize]) -> Result<Tensor> {
    let nd = x.ndim();
    let not_perm = || {
        Error::shape(
            "permute",
            format!(
                "axes {axes:?} are not a permutation of the {nd} axes of a tensor of shape {}",
                fmt_shape(x.shape())
            ),
        )
    };
    if axes.len() != nd {
        return Err(not_perm());
    }
    let mut perm: Dims = SmallVec::new();
    for &a in axes {
        let a = normalize_axis("permute", a, nd).map_err(|_| not_perm())?;
        if perm.contains(&a) {
            return Err(not_perm());
        }
        perm.push(a);
    }
    apply(
        PermuteOp {
            perm,
            name: "permute",
        },
        &[x],
        &[],
    )
}

/// `x` with all axes reversed, like NumPy's `.T` (a view).
pub fn reverse_axes(x: &Tensor) -> Result<Tensor> {
    let perm: Dims = (0..x.ndim()).rev().collect();
    apply(PermuteOp { perm, name: "T" }, &[x], &[])
}

/// PyTorch's `t()`: a 2-D tensor transposed, a 0-D or 1-D one unchanged (a view either way);
/// more than 2 dimensions is a shape error (use `transpose` or `mT`).
pub fn t(x: &Tensor) -> Result<Tensor> {
    if x.ndim() > 2 {
        return Err(Error::shape(
            "t",
            format!(
                "t() expects a tensor with <= 2 dimensions, but self is {}D (shape {})",
                x.ndim(),
                fmt_shape(x.shape())
            ),
        ));
    }
    reverse_axes(x)
}

// ---------------------------------------------------------------------------------------------
// index
// ---------------------------------------------------------------------------------------------

/// One entry of a basic (NumPy) index: `x[1, 2:5, None, ...]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexItem {
    /// A single position (negative counts from the end); removes the axis.
    Int(isize),
    /// `start:stop:step` with Python's clamping; `step` must be positive.
    Slice {
        /// First position (None: the beginning).
        start: Option<isize>,
        /// One past the last position (None: the end).
        stop: Option<isize>,
        /// Distance between taken positions (> 0).
        step: isize,
    },
    /// `None`: a new axis of extent 1.
    NewAxis,
    /// `...`: as many full slices as needed to index every axis.
    Ellipsis,
}

/// One axis of an index's result.
#[derive(Clone, Copy, Debug)]
enum OutAxis {
    /// Positions `start, start + step, ...` (`len` of them) of input axis `axis`.
    Range {
        axis: usize,
        start: usize,
        step: usize,
        len: usize,
    },
    /// A new axis of extent 1.
    New,
}

/// An index resolved against an input shape: fixed positions of the removed axes and the
/// description of every output axis. Independent of strides, so it replays on any layout.
#[derive(Clone, Debug)]
struct IndexPlan {
    in_ndim: usize,
    fixed: SmallVec<[(usize, usize); 6]>,
    out: SmallVec<[OutAxis; 6]>,
}

impl IndexPlan {
    /// The view of `l` that this index selects.
    fn apply(&self, l: &Layout) -> Layout {
        let mut offset = l.offset;
        for &(axis, i) in &self.fixed {
            offset += i * l.strides[axis];
        }
        let mut shape: Dims = SmallVec::new();
        let mut strides: Dims = SmallVec::new();
        for a in &self.out {
            match *a {
                OutAxis::Range {
                    axis,
                    start,
                    step,
                    len,
                } => {
                    offset += start * l.strides[axis];
                    shape.push(len);
                    strides.push(step * l.strides[axis]);
                }
                OutAxis::New => {
                    shape.push(1);
                    strides.push(0);
                }
            }
        }
        // An empty result may start past the end of the storage (`x[5:]` of 3 rows); no
        // element is ever read, but kernels slice from the offset, so keep it in range.
        if numel(&shape) == 0 {
            offset = l.offset;
        }
        Layout {
            shape,
            strides,
            offset,
        }
    }
}

/// Resolve `items` against `shape` with NumPy's rules.
fn plan_index(shape: &[usize], items: &[IndexItem]) -> Result<IndexPlan> {
    const OP: &str = "index";
    let nd = shape.len();
    let ellipses = items
        .iter()
        .filter(|i| matches!(i, IndexItem::Ellipsis))
        .count();
    if ellipses > 1 {
        return Err(Error::shape(
            OP,
            "an index can only have a single ellipsis ('...')",
        ));
    }
    let consuming = items
        .iter()
        .filter(|i| matches!(i, IndexItem::Int(_) | IndexItem::Slice { .. }))
        .count();
    if consuming > nd {
        return Err(Error::shape(
            OP,
            format!(
                "too many indices for a tensor of shape {}: it is {nd}-dimensional, but \
                 {consuming} were indexed",
                fmt_shape(shape)
            ),
        ));
    }
    let mut plan = IndexPlan {
        in_ndim: nd,
        fixed: SmallVec::new(),
        out: SmallVec::new(),
    };
    let full = |axis: usize| OutAxis::Range {
        axis,
        start: 0,
        step: 1,
        len: shape[axis],
    };
    let mut axis = 0usize;
    for item in items {
        match *item {
            IndexItem::Int(i) => {
                let d = shape[axis];
                let j = if i < 0 { i + d as isize } else { i };
                if j < 0 || j >= d as isize {
                    return Err(Error::shape(
                        OP,
                        format!("index {i} is out of bounds for axis {axis} with size {d}"),
                    ));
                }
                plan.fixed.push((axis, j as usize));
                axis += 1;
            }
            IndexItem::Slice { start, stop, step } => {
                if step <= 0 {
                    return Err(Error::value(
                        OP,
                        format!(
                            "slice step {step} is unsupported: negative and zero steps are not \
                             supported (axis {axis} of shape {})",
                            fmt_shape(shape)
                        ),
                    ));
                }
                let d = shape[axis] as isize;
                // Python's slice clamping for a positive step.
                let clamp = |v: Option<isize>, default: isize| match v {
                    None => default,
                    Some(v) if v < 0 => (v + d).max(0),
                    Some(v) => v.min(d),
                };
                let (b, e) = (clamp(start, 0), clamp(stop, d));
                // `e - b` is at most the extent, and dividing first keeps a huge step (Python
                // allows any) from overflowing.
                let len = if e > b { (e - b - 1) / step + 1 } else { 0 };
                plan.out.push(OutAxis::Range {
                    axis,
                    start: b as usize,
                    // With at most one element the step is never used: 1 keeps the view's
                    // stride arithmetic in range.
                    step: if len <= 1 { 1 } else { step as usize },
                    len: len as usize,
                });
                axis += 1;
            }
            IndexItem::NewAxis => plan.out.push(OutAxis::New),
            IndexItem::Ellipsis => {
                let skip = nd - consuming;
                for _ in 0..skip {
                    plan.out.push(full(axis));
                    axis += 1;
                }
            }
        }
    }
    // Axes not mentioned are taken whole (an implicit trailing ellipsis).
    while axis < nd {
        plan.out.push(full(axis));
        axis += 1;
    }
    Ok(plan)
}

struct IndexOp {
    plan: IndexPlan,
}

/// Call `f(dst_row, src_row)` for each run of `layout`'s positions along its last axis (one
/// element each when that axis is strided), pairing them in C order with `src`.
fn for_each_run<T: Element>(
    dst: &mut [T],
    layout: &Layout,
    src: &[T],
    mut f: impl FnMut(&mut [T], &[T]),
) {
    let nd = layout.ndim();
    if nd > 0 && layout.strides[nd - 1] == 1 {
        let n = layout.shape[nd - 1];
        let outer = Layout {
            shape: layout.shape[..nd - 1].into(),
            strides: layout.strides[..nd - 1].into(),
            offset: layout.offset,
        };
        let mut k = 0usize;
        outer.for_each_index(|i| {
            f(&mut dst[i..i + n], &src[k..k + n]);
            k += n;
        });
    } else {
        let mut k = 0usize;
        layout.for_each_index(|i| {
            f(&mut dst[i..=i], &src[k..=k]);
            k += 1;
        });
    }
}

/// Write `src` (C order) into the positions of `dst` that `layout` visits. Basic indexing
/// never visits a position twice, so plain assignment is exact.
fn scatter<T: Element>(dst: &mut [T], layout: &Layout, src: &[T]) {
    for_each_run(dst, layout, src, |d, s| d.copy_from_slice(s));
}

impl Op for IndexOp {
    fn any_dtype(&self) -> bool {
        true
    }
    fn name(&self) -> &'static str {
        "index"
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let x = inputs[0];
        check_rank("index", x, self.plan.in_ndim)?;
        Ok(view(x, self.plan.apply(x.layout())))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.cpu(inputs)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let back = IndexBackwardOp {
            plan: self.plan.clone(),
            shape: ctx.inputs[0].shape.clone(),
        };
        Ok(vec![Some(apply(back, &[ctx.grad], &[])?)])
    }
    fn add_grad_into(&self, grad: &Tensor, acc: &Tensor) -> Result<bool> {
        // The pieces of a split (q, k and v of one projection): each adds its region of the
        // input's gradient, and only the first fills the rest with zeros.
        if acc.device() != crate::Device::Cpu || !acc.dtype().is_float() || acc.dtype().is_half() {
            return Ok(false);
        }
        let target = self.plan.apply(&Layout::contiguous(acc.shape()));
        crate::dispatch!(acc.dtype(), T => {
            let src = super::softmax::c_order::<T>(grad.data());
            // SAFETY: the engine passes its own exclusive gradient buffer, which no kernel
            // reads meanwhile; the region lies within it.
            let Some(dst) = (unsafe { acc.storage().as_mut_slice::<T>() }) else {
                return Ok(false);
            };
            for_each_run(dst, &target, &src, |d, s| {
                for (o, &v) in d.iter_mut().zip(s) {
                    *o += v;
                }
            });
        });
        acc.storage().bump_version();
        Ok(true)
    }
}

/// An index's backward: zeros of the input's shape with the gradient written into the
/// indexed region (on CUDA a zero fill and the `strided_add` scatter kernel). Its own
/// backward is the index again.
struct IndexBackwardOp {
    plan: IndexPlan,
    shape: Dims,
}

impl IndexBackwardOp {
    /// The region of the (contiguous) result that the gradient fills.
    fn target(&self) -> Layout {
        self.plan.apply(&Layout::contiguous(&self.shape))
    }
}

impl Op for IndexBackwardOp {
    fn name(&self) -> &'static str {
        "index_backward"
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let g = inputs[0];
        let target = self.target();
        Ok(crate::dispatch!(g.dtype(), T => {
            let src = cpu::gather::<T>(g.data());
            let mut dst = cpu::filled(numel(&self.shape), T::from_f64(0.0));
            scatter(&mut dst, &target, &src);
            from_vec(dst, &self.shape)
        }))
    }
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        use crate::cuda::launch as cu;
        let g = inputs[0];
        let out = cu::full("index", g.device(), &self.shape, g.dtype(), 0.0)?;
        cu::copy_into("index", g, &view(&out, self.target()), true)?;
        Ok(out)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let fwd = IndexOp {
            plan: self.plan.clone(),
        };
        Ok(vec![Some(apply(fwd, &[ctx.grad], &[])?)])
    }
}

/// The layout of the view `x[items]` of a tensor laid out as `l` (what [`index`] returns),
/// resolved without recording anything: the destination of `x[items] = v`.
pub fn index_layout(l: &Layout, items: &[IndexItem]) -> Result<Layout> {
    Ok(plan_index(&l.shape, items)?.apply(l))
}

/// Basic NumPy indexing `x[items]`: ints (negative allowed) remove an axis, slices (positive
/// step, clamped like Python) keep it, `NewAxis` inserts one of extent 1, one `Ellipsis`
/// stands for all unmentioned axes. The result is a view sharing `x`'s storage.
pub fn index(x: &Tensor, items: &[IndexItem]) -> Result<Tensor> {
    let plan = plan_index(x.shape(), items)?;
    apply(IndexOp { plan }, &[x], &[])
}

impl Tensor {
    /// `x` with axes `a` and `b` swapped (a view); see [`transpose`].
    pub fn transpose(&self, a: isize, b: isize) -> Result<Tensor> {
        transpose(self, a, b)
    }
    /// `x` with its axes reordered (a view); see [`permute`].
    pub fn permute(&self, axes: &[isize]) -> Result<Tensor> {
        permute(self, axes)
    }
    /// All axes reversed, like NumPy's `.T` (a view).
    pub fn reverse_axes(&self) -> Result<Tensor> {
        reverse_axes(self)
    }
    /// PyTorch's `t()` (a view): see [`t`].
    pub fn t(&self) -> Result<Tensor> {
        t(self)
    }
    /// Basic NumPy indexing `x[items]` (a view); see [`index`].
    pub fn index(&self, items: &[IndexItem]) -> Result<Tensor> {
        index(self, items)
    }
}
