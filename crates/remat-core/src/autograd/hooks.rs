//! Tensor gradient hooks (`Tensor::register_hook`) and `retain_grad`, as in PyTorch.
//!
//! A hook sees the gradient with respect to its tensor when backward (or `grad`) has summed
//! it, and may replace it. A non-leaf tensor's hooks live on its grad_fn node (the node
//! receives exactly that tensor's gradient: every op has one output); a leaf's live on the
//! tensor itself, read by its gradient accumulator. Hooks are kept in registration order and
//! run before the gradient is used (passed on, accumulated into `.grad`, or returned by
//! `grad`). `retain_grad` is a hook that accumulates into a non-leaf's `.grad`; it holds the
//! tensor weakly, so a graph never keeps its own outputs alive.
//!
//! A leaf may also have post-accumulate hooks (`Tensor::register_post_accumulate_grad_hook`):
//! they run with the leaf itself right after backward has added a gradient into its `.grad`,
//! once per backward that reaches the leaf, and never for `grad` (which accumulates nothing).
//! Data-parallel training starts a bucket's all-reduce from them, as PyTorch's DDP does.

use super::node::{Node, NodeKind};
use crate::error::{Error, Result};
use crate::tensor::{Tensor, TensorImpl};
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

/// A gradient hook: given the gradient, returns a replacement or `None` to keep it.
pub type GradHook = Arc<dyn Fn(&Tensor) -> Result<Option<Tensor>> + Send + Sync>;

/// A post-accumulate hook: given the leaf after its `.grad` was updated.
pub type PostAccumulateHook = Arc<dyn Fn(&Tensor) -> Result<()> + Send + Sync>;

/// The hooks of one tensor, each with the id its handle removes it by, and the
/// `retain_grad` hook, which always runs last (as in PyTorch), so `.grad` holds the gradient
/// the other hooks made.
#[derive(Default, Clone)]
pub(crate) struct HookList(Vec<(u64, GradHook)>, Option<GradHook>);

impl HookList {
    /// Move the `retain_grad` hook of `from` (a tensor's old node) to `to` (its node after a
    /// recorded in-place write), as PyTorch moves `retains_grad` with the tensor.
    pub(crate) fn move_retain(from: &Mutex<HookList>, to: &Mutex<HookList>) {
        let retain = from.lock().1.take();
        if retain.is_some() {
            to.lock().1 = retain;
        }
    }

    fn run(&self, mut g: Tensor) -> Result<Tensor> {
        for (_, h) in &self.0 {
            if let Some(new) = h(&g)? {
                g = new;
            }
        }
        if let Some(retain) = &self.1 {
            retain(&g)?;
        }
        Ok(g)
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Removes one hook; returned by [`Tensor::register_hook`].
pub struct HookHandle {
    id: u64,
    place: Place,
}

enum Place {
    Node(Weak<Node>),
    Leaf(Weak<TensorImpl>),
    PostAccumulate(Weak<TensorImpl>),
}

impl HookHandle {
    /// Unregister the hook (harmless if it is already gone).
    pub fn remove(&self) {
        let remove = |list: &mut HookList| list.0.retain(|(id, _)| *id != self.id);
        match &self.place {
            Place::Node(n) => {
                if let Some(n) = n.upgrade() {
                    remove(&mut n.hooks.lock());
                }
            }
            Place::Leaf(t) => {
                if let Some(t) = t.upgrade() {
                    remove(&mut t.state.lock().hooks);
                }
            }
            Place::PostAccumulate(t) => {
                if let Some(t) = t.upgrade() {
                    t.state
                        .lock()
                        .post_accumulate_hooks
                        .retain(|(id, _)| *id != self.id);
                }
            }
        }
    }
}

/// The gradient flowing into `node` after its tensor's hooks ran: the op's own hooks, or
/// for an accumulator, the leaf's.
pub(crate) fn run_hooks(node: &Node, g: Tensor) -> Result<Tensor> {
    match &node.kind {
        NodeKind::Op(_) => {
            let hooks = snapshot(&node.hooks);
            hooks.run(g)
        }
        NodeKind::Accumulate(leaf) => {
            let hooks = leaf.state.lock().hooks.clone();
            hooks.run(g)
        }
    }
}

/// Run the post-accumulate hooks of `leaf` (after its `.grad` was updated), in registration
/// order, from a copy of the list so a hook may register or remove hooks.
pub(crate) fn run_post_accumulate_hooks(leaf: &Tensor) -> Result<()> {
    let hooks: Vec<PostAccumulateHook> = leaf
        .0
        .state
        .lock()
        .post_accumulate_hooks
        .iter()
        .map(|(_, h)| h.clone())
        .collect();
    for h in hooks {
        h(leaf)?;
    }
    Ok(())
}

/// A copy of the list, so a hook may register or remove hooks without deadlocking.
fn snapshot(list: &Mutex<HookList>) -> HookList {
    list.lock().clone()
}

impl Tensor {
    /// Register `hook` to see (and optionally replace) the gradient with respect to this
    /// tensor during every later backward or `grad`. Error if the tensor does not require
    /// grad.
    pub fn register_hook(&self, hook: GradHook) -> Result<HookHandle> {
        if !self.requires_grad() {
            return Err(Error::graph(
                "register_hook",
                "cannot register a hook on a tensor that doesn't require gradient",
            ));
        }
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let place = match self.grad_fn() {
            Some(node) => {
                node.hooks.lock().0.push((id, hook));
                Place::Node(Arc::downgrade(&node))
            }
            None => {
                self.0.state.lock().hooks.0.push((id, hook));
                Place::Leaf(Arc::downgrade(&self.0))
            }
        };
        Ok(HookHandle { id, place })
    }

    /// Register `hook` to run with this leaf after each backward has accumulated a gradient
    /// into its `.grad` (PyTorch's `register_post_accumulate_grad_hook`). Error on a tensor
    /// that does not require grad or is not a leaf.
    pub fn register_post_accumulate_grad_hook(
        &self,
        hook: PostAccumulateHook,
    ) -> Result<HookHandle> {
        if !self.requires_grad() {
            return Err(Error::graph(
                "register_post_accumulate_grad_hook",
                "cannot register a hook on a tensor that doesn't require gradient",
            ));
        }
        if !self.is_leaf() {
            return Err(Error::graph(
                "register_post_accumulate_grad_hook",
                "post accumulate grad hooks cannot be registered on non-leaf tensors",
            ));
        }
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        self.0.state.lock().post_accumulate_hooks.push((id, hook));
        Ok(HookHandle {
            id,
            place: Place::PostAccumulate(Arc::downgrade(&self.0)),
        })
    }

    /// Keep this non-leaf tensor's gradient in `.grad` after backward (accumulating across
    /// backward calls, as for leaves). A no-op on leaves; an error if no gradient is needed.
    pub fn retain_grad(&self) -> Result<()> {
        if !self.requires_grad() {
            return Err(Error::graph(
                "retain_grad",
                "can't retain_grad on Tensor that has requires_grad=False",
            ));
        }
        if self.is_leaf() {
            return Ok(());
        }
        {
            let mut st = self.0.state.lock();
            if st.retains_grad {
                return Ok(());
            }
            st.retains_grad = true;
        }
        let me = Arc::downgrade(&self.0);
        let hook: GradHook = Arc::new(move |g: &Tensor| {
            if let Some(t) = me.upgrade() {
                let mut st = t.state.lock();
                st.grad = Some(match st.grad.take() {
                    None => g.detach(),
                    Some(prev) => crate::ops::add(&prev, &g.detach())?,
                });
                st.grad_owned = false;
            }
            Ok(None)
        });
        if let Some(node) = self.grad_fn() {
            node.hooks.lock().1 = Some(hook);
        }
        Ok(())
    }

    /// Whether [`Tensor::retain_grad`] was called on this non-leaf tensor.
    pub fn retains_grad(&self) -> bool {
        self.0.state.lock().retains_grad
    }
}
