//! Which leaves a backward from some outputs would reach: the graph walk data-parallel
//! training needs to mark the parameters a forward did not use (PyTorch DDP's
//! `find_unused_parameters`), since their gradient hooks will never fire.

use crate::autograd::node::{Node, NodeKind};
use crate::tensor::Tensor;
use std::collections::HashSet;
use std::sync::Arc;

/// For each of `leaves`, whether a backward from `roots` would accumulate a gradient into it.
///
/// The walk follows the recorded graph from each root's grad_fn (checkpoint segments
/// included: a segment's node points at every leaf its function read). A root that is itself
/// one of the leaves reaches it.
pub fn reachable_leaves(roots: &[Tensor], leaves: &[Tensor]) -> Vec<bool> {
    let mut reached: HashSet<*const ()> = HashSet::new();
    let mut seen: HashSet<*const Node> = HashSet::new();
    let mut stack: Vec<Arc<Node>> = Vec::new();
    for r in roots {
        if !r.requires_grad() {
            continue;
        }
        match r.grad_fn() {
            Some(n) => stack.push(n),
            None => {
                reached.insert(Arc::as_ptr(&r.0).cast());
            }
        }
    }
    while let Some(n) = stack.pop() {
        if !seen.insert(Arc::as_ptr(&n)) {
            continue;
        }
        if let NodeKind::Accumulate(leaf) = &n.kind {
            reached.insert(Arc::as_ptr(leaf).cast());
        }
        stack.extend(n.next.iter().flatten().cloned());
    }
    leaves
        .iter()
        .map(|l| reached.contains(&Arc::as_ptr(&l.0).cast()))
        .collect()
}
