//! `t[idx] = v` (Python's `__setitem__`), in two separate steps: [`destination`] resolves
//! the index to the elements it names, and the write puts the value there with the rules of
//! every in-place op (no leaf that requires grad under grad mode; the version counter
//! records it). With grad mode on, assigning into a graph tensor or assigning a value that
//! requires grad is recorded in the graph (`inplace::recorded`): gradients flow to the value
//! at the named elements and to the old tensor everywhere else.
//!
//! A basic index (ints, slices, `None`, `...`) names a view, written like any in-place op. An
//! advanced one (integer tensors, bool masks) names a list of elements: the storage offset of
//! every element of `t` is indexed exactly as `t[idx]` indexes values (the same NumPy
//! placement rules, bounds and mask checks), and the value, broadcast to that result's shape,
//! is written at those offsets (where an element is named twice, the last write wins).

use super::advanced_index::{index_advanced, Index};
use super::inplace::{self, rules, Operand};
use super::view::{index_layout, IndexItem};
use crate::device::Device;
use crate::error::{Error, Result};
use crate::grad_mode::no_grad;
use crate::layout::Dims;
use crate::tensor::Tensor;

/// The elements an index of `t` names.
pub enum Destination {
    /// A view of `t`'s storage (basic indexing); the value broadcasts to its shape.
    View(Tensor),
    /// Storage offsets of the elements, in the order and with the shape `t[idx]` would
    /// return them (advanced indexing); the value broadcasts to `shape`.
    Elements {
        /// Offset of each element in `t`'s storage.
        offsets: Vec<usize>,
        /// The shape of `t[idx]`.
        shape: Dims,
    },
}

impl From<IndexItem> for Index {
    fn from(i: IndexItem) -> Self {
        Index::Basic(i)
    }
}

/// Resolve `items` against `t` without recording anything.
pub fn destination(t: &Tensor, items: &[Index]) -> Result<Destination> {
    let basic: Option<Vec<IndexItem>> = items
        .iter()
        .map(|i| match i {
            Index::Basic(b) => Some(*b),
            Index::Tensor(_) => None,
        })
        .collect();
    if let Some(basic) = basic {
        let layout = index_layout(t.layout(), &basic)?;
        return Ok(Destination::View(super::view(t, layout)));
    }
    // Every element's storage offset, indexed the way `t[items]` indexes values.
    let mut offsets = crate::cpu::catch_oom("setitem", || {
        Ok(crate::cpu::with_capacity::<i64>(t.numel()))
    })?;
    t.layout().for_each_index(|o| offsets.push(o as i64));
    let addresses = Tensor::from_vec(offsets, t.shape())?;
    let picked = {
        let _g = no_grad();
        index_advanced(&addresses, items)?
    };
    drop(addresses);
    Ok(Destination::Elements {
        offsets: picked
            .try_to_vec::<i64>()?
            .into_iter()
            .map(|o| o as usize)
            .collect(),
        shape: picked.shape().into(),
    })
}

/// `t[items] = value` in place: a number, or a tensor broadcast to the indexed shape (cast to
/// `t`'s dtype, moved from another device).
pub fn setitem(t: &Tensor, items: &[Index], value: Operand<'_>) -> Result<()> {
    const OP: &str = "setitem";
    let operands: Vec<&Tensor> = match value {
        Operand::Tensor(v) => vec![v],
        Operand::Scalar(_) => Vec::new(),
    };
    let how = rules::check_writable(OP, t, &operands)?;
    let dest = destination(t, items)?;
    if how == rules::Write::Recorded {
        let (offsets, shape) = match dest {
            Destination::View(v) => {
                let mut offsets = Vec::with_capacity(v.numel());
                v.layout().for_each_index(|o| offsets.push(o));
                (offsets, Dims::from(v.shape()))
            }
            Destination::Elements { offsets, shape } => (offsets, shape),
        };
        let value = match value {
            Operand::Scalar(v) => crate::ops::full(&[], v, t.dtype(), t.device())?,
            Operand::Tensor(v) => {
                rules::check_broadcast(OP, &shape, v.shape())?;
                v.clone()
            }
        };
        return inplace::recorded::write_elements(OP, t, &offsets, &shape, &value);
    }
    let done = match dest {
        Destination::View(dst) => inplace::assign(OP, &dst, value),
        Destination::Elements { offsets, shape } => {
            if t.device() != Device::Cpu {
                return Err(Error::device(
                    OP,
                    format!(
                        "assignment through integer-tensor or bool-mask indices is not \
                         implemented on {} yet",
                        t.device()
                    ),
                ));
            }
            inplace::scatter(OP, t, &offsets, &shape, value)
        }
    };
    // The write changed `t` (through a view or at offsets): a recipe on `t` would replay
    // the old value.
    t.0.state.lock().recipe = None;
    done
}

impl Tensor {
    /// `self[items] = value` in place (see [`setitem`]).
    pub fn setitem<'a>(&self, items: &[Index], value: impl Into<Operand<'a>>) -> Result<()> {
        setitem(self, items, value.into())
    }
}
