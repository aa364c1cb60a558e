//! `t[idx] = v` (Python's `__setitem__`), in two separate steps so that a new kind of index
//! only adds a destination: [`destination`] resolves the index to the elements it names
//! (today a view: ints, slices, `None`, `...`), and the write puts the value there with the
//! rules of every in-place op (no leaf that requires grad and no graph tensor under grad
//! mode; the version counter records it).

use super::inplace::{self, rules, Operand};
use super::view::{index_layout, IndexItem};
use crate::error::Result;
use crate::tensor::Tensor;

/// The elements an index of `t` names.
pub enum Destination {
    /// A view of `t`'s storage (basic indexing); the value broadcasts to its shape.
    View(Tensor),
}

/// Resolve `items` against `t` without recording anything.
pub fn destination(t: &Tensor, items: &[IndexItem]) -> Result<Destination> {
    let layout = index_layout(t.layout(), items)?;
    Ok(Destination::View(super::view(t, layout)))
}

/// `t[items] = value` in place: a number, or a tensor broadcast to the indexed shape (cast to
/// `t`'s dtype, moved from another device).
pub fn setitem(t: &Tensor, items: &[IndexItem], value: Operand<'_>) -> Result<()> {
    const OP: &str = "setitem";
    let operands: Vec<&Tensor> = match value {
        Operand::Tensor(v) => vec![v],
        Operand::Scalar(_) => Vec::new(),
    };
    rules::check_writable(OP, t, &operands)?;
    match destination(t, items)? {
        Destination::View(dst) => {
            let done = inplace::assign(OP, &dst, value);
            // The write through the view changed `t` too: a recipe on `t` would replay the
            // old value.
            t.0.state.lock().recipe = None;
            done
        }
    }
}

impl Tensor {
    /// `self[items] = value` in place (see [`setitem`]).
    pub fn setitem<'a>(&self, items: &[IndexItem], value: impl Into<Operand<'a>>) -> Result<()> {
        setitem(self, items, value.into())
    }
}
