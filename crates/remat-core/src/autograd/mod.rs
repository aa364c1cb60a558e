//! Define-by-run autograd: nodes recorded by ops, a topological backward engine, and
//! gradient accumulation into leaves.

pub mod engine;
pub mod hooks;
pub mod node;
pub mod reachable;
pub(crate) mod saved;

pub use engine::{backward, backward_with, grad, grad_with, GradOptions};
pub use hooks::{GradHook, HookHandle, PostAccumulateHook};
pub use node::{BackwardCtx, InputMeta, Node, Op, Save};
pub use reachable::reachable_leaves;
