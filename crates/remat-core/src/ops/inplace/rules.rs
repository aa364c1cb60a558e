//! When a tensor may be written in place, and how an operand must fit it (PyTorch's rules):
//!
//! - with grad mode on, a leaf that requires grad may not be written, nor may a view of one
//!   (its graph edge would hand out gradients for values it no longer holds); under
//!   `no_grad` it may (initialisation, optimizer updates);
//! - with grad mode on, a write into a tensor that is part of a graph (or a view of one), or
//!   from an operand that requires grad, is recorded in the graph (`recorded`); every other
//!   write is a plain one;
//! - a destination whose elements overlap (an `expand`ed view) is refused: one write would
//!   land on several elements;
//! - an operand must broadcast to the destination's shape (the destination never grows).
//!
//! A plain write into a tensor some graph saved (under `no_grad`, or through a view that
//! needs no grad) is allowed and caught later by the version counter, as in PyTorch.

use super::recorded;
use crate::error::{Error, Result};
use crate::grad_mode::is_grad_enabled;
use crate::layout::{broadcast_shapes, fmt_shape};
use crate::tensor::Tensor;

/// How an allowed in-place write happens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Write {
    /// Into the storage only (no graph involved, or grad mode off).
    Plain,
    /// Recorded in the graph: the tensor is rebased onto the write's node.
    Recorded,
}

/// Error unless `dst` may be written in place by `op` with `operands` (see the module doc);
/// otherwise how the write happens.
pub(crate) fn check_writable(op: &str, dst: &Tensor, operands: &[&Tensor]) -> Result<Write> {
    if is_grad_enabled() {
        let leaf = |t: &Tensor| t.requires_grad() && t.is_leaf();
        if leaf(dst) {
            return Err(Error::graph(
                op,
                "a leaf Variable that requires grad is being used in an in-place operation; \
                 write it under `with remat.no_grad():` (initialisation, optimizer updates) \
                 or use the out-of-place op",
            ));
        }
        if recorded::view_root(dst).is_some_and(|r| leaf(&r)) {
            return Err(Error::graph(
                op,
                "a view of a leaf Variable that requires grad is being used in an in-place \
                 operation; write it under `with remat.no_grad():` or clone() the leaf first",
            ));
        }
    }
    check_no_overlap(op, dst)?;
    Ok(if recorded::must_record(dst, operands) {
        Write::Recorded
    } else {
        Write::Plain
    })
}

/// Error when two elements of `dst` share one memory location (a broadcast view).
pub(crate) fn check_no_overlap(op: &str, dst: &Tensor) -> Result<()> {
    let l = dst.layout();
    let overlaps = l.numel() > 1
        && l.shape
            .iter()
            .zip(&l.strides)
            .any(|(&d, &s)| d > 1 && s == 0);
    if overlaps {
        return Err(Error::value(
            op,
            format!(
                "unsupported operation: more than one element of the written-to tensor (shape \
                 {}, strides {:?}) refers to a single memory location; clone() it before \
                 writing",
                fmt_shape(&l.shape),
                l.strides.as_slice()
            ),
        ));
    }
    Ok(())
}

/// Error unless `operand_shape` broadcasts to `dst_shape` without growing it.
pub(crate) fn check_broadcast(
    op: &str,
    dst_shape: &[usize],
    operand_shape: &[usize],
) -> Result<()> {
    let b = broadcast_shapes(op, dst_shape, operand_shape)?;
    if b.as_slice() != dst_shape {
        return Err(Error::shape(
            op,
            format!(
                "output with shape {} doesn't match the broadcast shape {}: an operand of \
                 shape {} does not broadcast to the shape of the tensor written in place",
                fmt_shape(dst_shape),
                fmt_shape(&b),
                fmt_shape(operand_shape)
            ),
        ));
    }
    Ok(())
}
