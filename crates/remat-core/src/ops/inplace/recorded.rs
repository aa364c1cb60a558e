//! In-place writes recorded in the graph: PyTorch's semantics for `y += x` on a tensor a
//! graph made (ResNet's `out += identity`), `h[:, 0] = v` with gradients, and writes whose
//! operand requires grad (`buf[i] = w`).
//!
//! The write is computed out of place with differentiable ops (`new = f(old)`), its values
//! are copied into the tensor's storage, and the tensor is *rebased*: its `grad_fn` becomes
//! `new`'s node, so later ops differentiate through the write while earlier consumers keep
//! the node they recorded. A node that saved the old values sees the storage's version change
//! and raises `GraphError` at backward, as in PyTorch; so the ops whose result's backward
//! reads the old value (`mul_`, `div_`, `clamp_`, ...) compute from a differentiable clone
//! of it, as PyTorch's in-place kernels save `self.clone()`.
//!
//! Views: a view op's output remembers the root of its chain of views (`view_base`). A write
//! into a view is recorded on the root: `root_new` is the root with the view's elements
//! replaced (a `where` over a `scatter_add`, both differentiable), the root is rebased onto
//! it, and the view onto `root_new` read back at its elements. Every recorded write counts in
//! its storage's `graph_writes`; a view whose graph predates the last one (another view of
//! the same root was written) regenerates its graph from the root before its next use by an
//! op ([`refresh`]), PyTorch's view replay. Writes under `no_grad`, or of tensors no graph
//! needs, stay plain writes (`inplace::write`).

use super::{Src, Update};
use crate::error::{Error, Result};
use crate::grad_mode::is_grad_enabled;
use crate::ops;
use crate::tensor::Tensor;
use std::sync::atomic::Ordering;

/// The root of the chain of views `t` belongs to (None when `t` is not a view).
pub(crate) fn view_root(t: &Tensor) -> Option<Tensor> {
    t.0.state.lock().view_base.clone()
}

/// Whether a write into `dst` from `operands` must be recorded in the graph: grad mode is
/// on and the tensor written (or the root it views) or an operand requires grad.
pub(crate) fn must_record(dst: &Tensor, operands: &[&Tensor]) -> bool {
    is_grad_enabled()
        && (dst.requires_grad()
            || operands.iter().any(|t| t.requires_grad())
            || view_root(dst).is_some_and(|r| r.requires_grad()))
}

/// Regenerate the graph of a view whose storage had a recorded write since its graph was
/// made (through another view of its root, or the root itself): it becomes its root's
/// current value read at its elements. A stale tensor that is not a tracked view (it shares
/// its storage through `detach`) keeps its graph, as in PyTorch. Under `no_grad` nothing
/// changes (no graph is built, and the next use with grad mode on refreshes).
pub(crate) fn refresh(t: &Tensor) -> Result<()> {
    let now = t.storage().graph_writes();
    if t.0.graph_at.load(Ordering::Acquire) == now || !is_grad_enabled() {
        return Ok(());
    }
    match view_root(t) {
        Some(root) => {
            refresh(&root)?;
            let positions = positions_in("view", &root, &storage_offsets(t))?;
            regenerate(t, &root, &positions)
        }
        None => {
            t.0.graph_at.store(now, Ordering::Release);
            Ok(())
        }
    }
}

/// Refresh every input of an op (see [`refresh`]); a no-op for fresh tensors (two atomic
/// loads each).
pub(crate) fn refresh_all(inputs: &[&Tensor]) -> Result<()> {
    inputs.iter().try_for_each(|t| refresh(t))
}

/// Record `dst = f(dst)` in the graph and write it: `f` gets the current value of `dst`
/// (linked to its root's graph when `dst` is a view; a differentiable clone when
/// `reads_old`, the result's backward needing the old values) and returns the new values,
/// of `dst`'s shape; they are cast to `dst`'s dtype.
pub(crate) fn write_whole(
    op: &str,
    dst: &Tensor,
    reads_old: bool,
    f: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<()> {
    let root = view_root(dst);
    let positions = match &root {
        None => None,
        Some(r) => {
            refresh(r)?;
            let positions = positions_in(op, r, &storage_offsets(dst))?;
            // A stale view, or one made under `no_grad` of a root that requires grad: its
            // new values must come from the root's current graph, or the root's gradient
            // would skip the region.
            let stale = dst.0.graph_at.load(Ordering::Acquire) != dst.storage().graph_writes();
            if stale || (r.requires_grad() && !dst.requires_grad()) {
                regenerate(dst, r, &positions)?;
            }
            Some(positions)
        }
    };
    let old = if reads_old {
        ops::clone(dst)?
    } else {
        dst.clone()
    };
    let new = fit(op, f(&old)?, dst.dtype(), dst.shape())?;
    drop(old);
    match (root, positions) {
        (Some(root), Some(positions)) => {
            let root_new = put(&root, &positions, &new)?;
            commit(op, &root, &root_new)?;
            regenerate(dst, &root, &positions)
        }
        _ => commit(op, dst, &new),
    }
}

/// Record `t[index] = value` in the graph and write it: `offsets` are the storage offsets of
/// the elements the index names, in the order (and `shape`) of `t[index]`; `value` is
/// broadcast to `shape`. Where an element is named twice the last write wins, as in the
/// plain write.
pub(crate) fn write_elements(
    op: &str,
    t: &Tensor,
    offsets: &[usize],
    shape: &[usize],
    value: &Tensor,
) -> Result<()> {
    let root = view_root(t).unwrap_or_else(|| t.clone());
    refresh(&root)?;
    let value = ops::to_device(value, t.device())?;
    let value = ops::expand(&value, shape)?;
    let value = fit(op, value, root.dtype(), shape)?;
    let positions = positions_in(op, &root, offsets)?;
    let (positions, value) = last_writes(root.numel(), positions, value)?;
    let root_new = put(&root, &positions, &value)?;
    commit(op, &root, &root_new)?;
    if !t.same(&root) {
        let positions = positions_in(op, &root, &storage_offsets(t))?;
        regenerate(t, &root, &positions)?;
    }
    Ok(())
}

/// `new` in `dtype` (a differentiable cast), checked to have `shape`.
fn fit(op: &str, new: Tensor, dtype: crate::dtype::DType, shape: &[usize]) -> Result<Tensor> {
    if new.shape() != shape {
        return Err(Error::shape(
            op,
            format!(
                "the result of shape {} does not fit the {} elements of shape {} written in \
                 place",
                crate::layout::fmt_shape(new.shape()),
                dtype,
                crate::layout::fmt_shape(shape)
            ),
        ));
    }
    if new.dtype() == dtype {
        Ok(new)
    } else {
        ops::to_dtype(&new, dtype)
    }
}

/// Write `new`'s values over `target` (a plain in-place write: version bumped, recipe
/// dropped), count a recorded write on its storage and rebase `target` onto `new`.
fn commit(op: &str, target: &Tensor, new: &Tensor) -> Result<()> {
    super::write(op, target, &[(Src::Tensor(new), Update::Set)])?;
    let now = target.storage().bump_graph_writes();
    rebase(target, new, now);
    Ok(())
}

/// Count a recorded write on `t`'s storage and rebase `t` onto `new`, whose values `t`
/// already holds (an in-place op that recorded its node over `t`'s storage itself).
pub(crate) fn rebase_onto(t: &Tensor, new: &Tensor) {
    let now = t.storage().bump_graph_writes();
    rebase(t, new, now);
}

/// Make `t` stand for `new` in the graph (its node, requires-grad flag and recipe; `t`'s
/// values are already `new`'s). A `retain_grad` on `t` moves to the new node, as in PyTorch.
fn rebase(t: &Tensor, new: &Tensor, graph_at: u64) {
    let node = new.grad_fn();
    let old = std::mem::replace(&mut *t.0.grad_fn.write(), node.clone());
    if let (Some(old), Some(node)) = (old, node) {
        if !std::sync::Arc::ptr_eq(&old, &node) {
            crate::autograd::hooks::HookList::move_retain(&old.hooks, &node.hooks);
        }
    }
    t.0.requires_grad
        .store(new.requires_grad(), Ordering::Relaxed);
    {
        let mut st = t.0.state.lock();
        st.creation = None;
        st.recipe = new.recipe();
    }
    t.0.graph_at.store(graph_at, Ordering::Release);
}

/// Rebase the view `v` onto its root's current value read at `positions` (`v`'s elements,
/// in C order, as linear indices into the root).
fn regenerate(v: &Tensor, root: &Tensor, positions: &[i64]) -> Result<()> {
    let idx = index_tensor(positions, root)?;
    let flat = ops::reshape(root, &[root.numel()])?;
    let again = ops::reshape(&ops::index_select(&flat, 0, &idx)?, v.shape())?;
    rebase(v, &again, root.storage().graph_writes());
    Ok(())
}

/// `root` with the elements at `positions` (distinct linear indices) replaced by `src`'s
/// (C order), differentiable in both: the root's gradient is zero there, `src`'s is the
/// gradient read there.
fn put(root: &Tensor, positions: &[i64], src: &Tensor) -> Result<Tensor> {
    let n = root.numel();
    let mut mask = vec![0u8; n];
    for &p in positions {
        mask[p as usize] = 1;
    }
    let mask = ops::to_device(&Tensor::from_vec(mask, &[n])?, root.device())?;
    let idx = index_tensor(positions, root)?;
    let src = ops::reshape(src, &[positions.len()])?;
    let zeros = ops::zeros(&[n], root.dtype(), root.device())?;
    let placed = ops::scatter_add(&zeros, 0, &idx, &src)?;
    let flat = ops::reshape(root, &[n])?;
    ops::reshape(&ops::where_(&mask, &placed, &flat)?, root.shape())
}

/// Keep the last of repeated positions (and the matching elements of `value`): the
/// assignment's "last write wins".
fn last_writes(n: usize, positions: Vec<i64>, value: Tensor) -> Result<(Vec<i64>, Tensor)> {
    let mut last = vec![usize::MAX; n];
    for (i, &p) in positions.iter().enumerate() {
        last[p as usize] = i;
    }
    let kept: Vec<i64> = positions
        .iter()
        .enumerate()
        .filter(|&(i, &p)| last[p as usize] == i)
        .map(|(i, _)| i as i64)
        .collect();
    if kept.len() == positions.len() {
        return Ok((positions, value));
    }
    let flat = ops::reshape(&value, &[value.numel()])?;
    let picked = ops::index_select(&flat, 0, &index_tensor(&kept, &value)?)?;
    let positions = kept.iter().map(|&i| positions[i as usize]).collect();
    Ok((positions, picked))
}

/// `positions` as an int64 index tensor on `like`'s device.
fn index_tensor(positions: &[i64], like: &Tensor) -> Result<Tensor> {
    let t = Tensor::from_vec(positions.to_vec(), &[positions.len()])?;
    ops::to_device(&t, like.device())
}

/// The storage offset of each element of `t`, in C order.
fn storage_offsets(t: &Tensor) -> Vec<usize> {
    let mut out = Vec::with_capacity(t.numel());
    t.layout().for_each_index(|o| out.push(o));
    out
}

/// The linear (C-order) index in `root` of the element at each storage offset.
fn positions_in(op: &str, root: &Tensor, offsets: &[usize]) -> Result<Vec<i64>> {
    let l = root.layout();
    let n = l.numel();
    let outside = || {
        Error::graph(
            op,
            format!(
                "the elements written are not all elements of the tensor of shape {} they are \
                 a view of, so the write cannot be recorded; clone() the view first",
                crate::layout::fmt_shape(&l.shape)
            ),
        )
    };
    if l.is_contiguous() {
        return offsets
            .iter()
            .map(|&o| match o.checked_sub(l.offset) {
                Some(p) if p < n => Ok(p as i64),
                _ => Err(outside()),
            })
            .collect();
    }
    let mut inverse = vec![-1i64; root.storage().len()];
    let mut k = 0i64;
    l.for_each_index(|o| {
        inverse[o] = k;
        k += 1;
    });
    offsets
        .iter()
        .map(|&o| match inverse.get(o) {
            Some(&p) if p >= 0 => Ok(p),
            _ => Err(outside()),
        })
        .collect()
}
