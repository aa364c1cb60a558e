//! When a tensor may be written in place, and how an operand must fit it (PyTorch's rules):
//!
//! - with grad mode on, a leaf that requires grad may not be written (its graph edge would
//!   hand out gradients for values it no longer holds); under `no_grad` it may
//!   (initialisation, optimizer updates);
//! - with grad mode on, a tensor that is part of a graph may not be written, nor may a tensor
//!   be written from an operand that requires grad: the write would have to be recorded in
//!   the graph, and the engine does not record in-place ops. Refusing is the correct
//!   alternative: a gradient computed without the write would be wrong;
//! - a destination whose elements overlap (an `expand`ed view) is refused: one write would
//!   land on several elements;
//! - an operand must broadcast to the destination's shape (the destination never grows).
//!
//! Everything else (a tensor some graph saved, written under `no_grad` or through a view that
//! needs no grad) is allowed and caught later by the version counter, as in PyTorch.

use crate::error::{Error, Result};
use crate::grad_mode::is_grad_enabled;
use crate::layout::{broadcast_shapes, fmt_shape};
use crate::tensor::Tensor;

/// Error unless `dst` may be written in place by `op` with `operands` (see the module doc).
pub(crate) fn check_writable(op: &str, dst: &Tensor, operands: &[&Tensor]) -> Result<()> {
    if is_grad_enabled() {
        if dst.requires_grad() {
            return Err(match dst.grad_fn() {
                None => Error::graph(
                    op,
                    "a leaf Variable that requires grad is being used in an in-place \
                     operation; write it under `with remat.no_grad():` (initialisation, \
                     optimizer updates) or use the out-of-place op",
                ),
                Some(node) => Error::graph(
                    op,
                    format!(
                        "in-place operations on a tensor that is part of a graph (made by {}) \
                         are not supported: use the out-of-place op (`x = x + y` instead of \
                         `x += y`), or write it under `with remat.no_grad():` if no gradient \
                         should flow through the write",
                        node.name()
                    ),
                ),
            });
        }
        if operands.iter().any(|t| t.requires_grad()) {
            return Err(Error::graph(
                op,
                "an operand requires grad, so the in-place result would have to be recorded \
                 in the graph, which in-place operations are not: use the out-of-place op, or \
                 write under `with remat.no_grad():` if no gradient should flow through it",
            ));
        }
    }
    check_no_overlap(op, dst)
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
