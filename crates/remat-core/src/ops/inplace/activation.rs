//! In-place activations, PyTorch's `relu_` and `leaky_relu_` (`inplace=True` in
//! `torch.nn.functional` and the modules).
//!
//! A plain write (no graph, or grad mode off) computes the row and stores it over the tensor.
//! In a graph, an activation whose backward reads its *result* (ReLU; leaky ReLU with a slope
//! `>= 0`) is recorded the way PyTorch records it: the result is written over the tensor and
//! the recorded node saves that very storage (at its new version), so the step keeps one
//! buffer, not the overwritten input and a copy of the result. A later write into the tensor
//! then fails at backward through the version counter, as in PyTorch. Everywhere else (inside
//! checkpointing, under a memory limit, into a view, a negative slope) the write goes through
//! `recorded::write_whole`, which computes out of place from a clone where the backward needs
//! the old values.

use super::recorded;
use super::rules::{self, Write};
use super::{write, Src, Update};
use crate::checkpoint::context::{self, SaveMode};
use crate::error::Result;
use crate::grad_mode::no_grad;
use crate::ops::elementwise::{unary, unary_forward, Saves, Unary, UnaryOp};
use crate::tensor::Tensor;

/// `max(dst, 0)` written over `dst` (`Tensor.relu_`, `F.relu(inplace=True)`).
pub fn relu_(dst: &Tensor) -> Result<()> {
    unary_in_place("relu_", dst, Unary::Relu, 0.0)
}

/// `dst` where positive, else `negative_slope * dst`, written over `dst` (`F.leaky_relu_`,
/// `F.leaky_relu(inplace=True)`).
pub fn leaky_relu_(dst: &Tensor, negative_slope: f64) -> Result<()> {
    // With a negative slope the result's sign no longer tells the input's, so the backward
    // needs the overwritten values (PyTorch refuses this at backward; here it works from a
    // clone).
    let f = if negative_slope >= 0.0 {
        Unary::LeakyReluOut
    } else {
        Unary::LeakyRelu
    };
    unary_in_place("leaky_relu_", dst, f, negative_slope)
}

/// The unary row `f` (parameter `p`) written over `dst`.
fn unary_in_place(op: &str, dst: &Tensor, f: Unary, p: f64) -> Result<()> {
    if !dst.dtype().is_float() {
        // Integer rows may change the dtype (`update_with_` refuses a result that does not fit).
        return super::update_with_(op, dst, &[], |t| unary(f, t, p));
    }
    let in_graph = rules::check_writable(op, dst, &[])? == Write::Recorded;
    if in_graph && !records_over_storage(dst, f) {
        return recorded::write_whole(op, dst, f.saves() == Saves::Input, |old| unary(f, old, p));
    }
    match f {
        // Computed over the tensor itself, with no buffer of the result to copy back.
        Unary::Relu => write(op, dst, &[(Src::Scalar(0.0), Update::Relu)])?,
        Unary::LeakyRelu | Unary::LeakyReluOut => {
            write(op, dst, &[(Src::Scalar(p), Update::LeakyRelu)])?
        }
        _ => {
            let y = computed(f, dst, p)?;
            write(op, dst, &[(Src::Tensor(&y), Update::Set)])?;
        }
    }
    if in_graph {
        let written = Tensor::from_data(dst.data().clone());
        let new =
            crate::autograd::node::record(UnaryOp::new(f, p), &[dst], written, f.saves().list());
        recorded::rebase_onto(dst, &new);
    }
    Ok(())
}

/// The row's values of `dst`, unrecorded.
fn computed(f: Unary, dst: &Tensor, p: f64) -> Result<Tensor> {
    let _g = no_grad();
    unary_forward(f, &dst.detach(), p)
}

/// Whether the write may be recorded over `dst`'s own storage: the backward does not read
/// the input, and the graph is a plain one. A checkpoint's segments, scopes and recomputes
/// keep or replay what ops save by their own rules, a memory limit may evict and rebuild a
/// storage from its op, and a view's write must reach its root: those take the general path.
fn records_over_storage(dst: &Tensor, f: Unary) -> bool {
    f.saves() != Saves::Input
        && matches!(context::current(), SaveMode::Normal)
        && !crate::dtr::active(dst.device())
        && recorded::view_root(dst).is_none()
}
