//! The backward engine: collects the graph reachable from the roots, then runs nodes in
//! dependency order (newest first among the ready ones, so checkpoint segments recompute one
//! at a time), summing gradients per node and releasing each node's saved slots right after
//! its backward unless `retain_graph`.
//!
//! With `create_graph` the backward itself is recorded: backward rules are written with
//! differentiable tensor ops, the engine runs them with grad mode on, hands each rule its
//! saved tensors attached to the graph edges they came from, and sums gradients out of place,
//! so the gradients it returns can be differentiated again.

use crate::autograd::node::{BackwardCtx, Node, NodeKind, Save};
use crate::checkpoint::touched;
use crate::error::{Error, Result};
use crate::grad_mode::{enable_grad, no_grad, GradModeGuard};
use crate::layout::fmt_shape;
use crate::ops;
use crate::tensor::{Tensor, TensorState};
use std::collections::{BinaryHeap, HashMap, HashSet};
use std::sync::Arc;

type Key = *const Node;

thread_local! {
    /// Set while a [`DiscardLeafGrads`] lives on this thread.
    static DISCARD_LEAF_GRADS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// While alive, a `backward` on this thread computes every gradient as usual, the leaves'
/// included, and drops each leaf's gradient where it would be added to `.grad`: no `.grad`
/// changes and no leaf hook runs. The checkpoint planner measures a layer's backward so, its
/// parameters' gradients made exactly as in training and nothing of the model touched.
pub(crate) struct DiscardLeafGrads(bool);

impl DiscardLeafGrads {
    /// Start discarding on this thread.
    pub(crate) fn enter() -> DiscardLeafGrads {
        DiscardLeafGrads(DISCARD_LEAF_GRADS.with(|d| d.replace(true)))
    }
}

impl Drop for DiscardLeafGrads {
    fn drop(&mut self) {
        DISCARD_LEAF_GRADS.with(|d| d.set(self.0));
    }
}

fn discarding_leaf_grads() -> bool {
    DISCARD_LEAF_GRADS.with(|d| d.get())
}

fn key(n: &Arc<Node>) -> Key {
    Arc::as_ptr(n)
}

/// Options of a backward pass or a `grad` call (PyTorch's keywords).
#[derive(Clone, Copy, Debug, Default)]
pub struct GradOptions {
    /// Keep the saved tensors for another backward (`None`: the value of `create_graph`, as
    /// in PyTorch).
    pub retain_graph: Option<bool>,
    /// Record the backward itself so its gradients can be differentiated again.
    pub create_graph: bool,
    /// `grad` only: an input the outputs do not depend on gets `None` instead of an error.
    pub allow_unused: bool,
}

impl GradOptions {
    fn retain(&self) -> bool {
        self.retain_graph.unwrap_or(self.create_graph)
    }
}

/// Compute gradients of `roots` (each with its output gradient, None = ones for a scalar)
/// and accumulate them into the `.grad` of the leaves.
pub fn backward(roots: &[(Tensor, Option<Tensor>)], retain_graph: bool) -> Result<()> {
    let opts = GradOptions {
        retain_graph: Some(retain_graph),
        ..Default::default()
    };
    backward_with(roots, None, opts)
}

/// [`backward`] with PyTorch's options: `create_graph`, and `inputs` (accumulate only into
/// the `.grad` of these tensors, leaves or not).
pub fn backward_with(
    roots: &[(Tensor, Option<Tensor>)],
    inputs: Option<&[Tensor]>,
    opts: GradOptions,
) -> Result<()> {
    let Some(inputs) = inputs else {
        return run(roots, None, opts).map(|_| ());
    };
    if inputs.is_empty() {
        return Err(Error::graph("backward", "inputs= must not be empty"));
    }
    let targets = edges("backward", inputs)?;
    let captured = run(roots, Some(&targets), opts)?;
    for (t, n) in inputs.iter().zip(&targets) {
        if let Some(g) = captured.get(&key(n)) {
            accumulate(t, g.clone(), opts.create_graph)?;
        }
    }
    Ok(())
}

/// Gradients of `outputs` with respect to `inputs`, without touching any `.grad`.
pub fn grad(
    outputs: &[Tensor],
    inputs: &[Tensor],
    grad_outputs: Option<&[Option<Tensor>]>,
    retain_graph: bool,
) -> Result<Vec<Option<Tensor>>> {
    let opts = GradOptions {
        retain_graph: Some(retain_graph),
        allow_unused: true,
        ..Default::default()
    };
    grad_with(outputs, inputs, grad_outputs, opts)
}

/// [`grad`] with PyTorch's options (`create_graph`, `allow_unused`; `retain_graph` defaults
/// to `create_graph`). Without `allow_unused`, an input the outputs do not depend on is an
/// error.
pub fn grad_with(
    outputs: &[Tensor],
    inputs: &[Tensor],
    grad_outputs: Option<&[Option<Tensor>]>,
    opts: GradOptions,
) -> Result<Vec<Option<Tensor>>> {
    if let Some(g) = grad_outputs {
        if g.len() != outputs.len() {
            return Err(Error::value(
                "grad",
                format!(
                    "grad_outputs has {} entries but there are {} outputs",
                    g.len(),
                    outputs.len()
                ),
            ));
        }
    }
    let roots: Vec<(Tensor, Option<Tensor>)> = outputs
        .iter()
        .enumerate()
        .map(|(i, o)| {
            (
                o.clone(),
                grad_outputs.and_then(|g| g.get(i).cloned().flatten()),
            )
        })
        .collect();
    refresh_graphs(inputs.iter())?;
    let targets = edges("grad", inputs)?;
    let captured = run(&roots, Some(&targets), opts)?;
    let mut out = Vec::with_capacity(targets.len());
    for n in &targets {
        let g = captured.get(&key(n)).cloned();
        if g.is_none() && !opts.allow_unused {
            return Err(Error::graph(
                "grad",
                "one of the differentiated tensors appears to not have been used in the graph; \
                 set allow_unused=True if this is the desired behavior",
            ));
        }
        out.push(g);
    }
    Ok(out)
}

/// The graph edge of each tensor whose gradient is asked for.
fn edges(op: &str, inputs: &[Tensor]) -> Result<Vec<Arc<Node>>> {
    inputs
        .iter()
        .map(|t| {
            t.grad_edge().ok_or_else(|| {
                Error::graph(
                    op,
                    "one of the inputs does not require grad, so no gradient can be computed \
                     for it",
                )
            })
        })
        .collect()
}

fn root_grad(t: &Tensor, g: Option<Tensor>, create_graph: bool) -> Result<Tensor> {
    match g {
        Some(g) => {
            if g.shape() != t.shape() {
                return Err(Error::shape(
                    "backward",
                    format!(
                        "gradient has shape {} but the output has shape {}",
                        fmt_shape(g.shape()),
                        fmt_shape(t.shape())
                    ),
                ));
            }
            Ok(if g.dtype() != t.dtype() {
                ops::cast(&g, t.dtype())?
            } else if create_graph {
                // A gradient that is itself a function of something stays attached.
                g
            } else {
                g.detach()
            })
        }
        None => {
            if t.numel() != 1 {
                return Err(Error::graph(
                    "backward",
                    format!(
                        "grad can be implicitly created only for scalar outputs, but the output \
                         has shape {}; pass a gradient of that shape",
                        fmt_shape(t.shape())
                    ),
                ));
            }
            ops::full(t.shape(), 1.0, t.dtype(), t.device())
        }
    }
}

/// A node ready to run, ordered by priority: gradient accumulation first (it frees a gradient
/// buffer and its accumulator may be older than the graph, when a previous step's graph still
/// shares it), then the newest node (reverse creation order keeps recomputes one at a time).
#[derive(PartialEq, Eq, PartialOrd, Ord)]
struct Ready(u64, usize);

fn ready(n: &Node, i: usize) -> Ready {
    match n.kind {
        NodeKind::Accumulate(_) => Ready(u64::MAX, i),
        NodeKind::Op(_) => Ready(n.seq, i),
    }
}

/// The saved tensors of `node` for its backward. With `create_graph` each is attached to the
/// edge it was saved from (an input's node, or `node` itself for its output), so a backward
/// rule built from differentiable ops records a graph that reaches the original one.
fn saved_tensors(
    node: &Arc<Node>,
    slots: &[crate::checkpoint::slot::Slot],
    attach: bool,
) -> Result<Vec<Tensor>> {
    slots
        .iter()
        .enumerate()
        .map(|(k, slot)| {
            let t = slot.materialize(node.name())?;
            if !attach {
                return Ok(t);
            }
            let edge = match node.saves.get(k) {
                Some(Save::Input(i)) => node.next.get(*i).cloned().flatten(),
                Some(Save::Output) => Some(node.clone()),
                None => None,
            };
            Ok(match edge {
                Some(e) => {
                    Tensor::with_grad_fn(t.data().clone(), Some(e), true, TensorState::default())
                }
                None => t,
            })
        })
        .collect()
}

/// Bring the graphs of views written through another view up to date before they are
/// differentiated (`ops::inplace::recorded::refresh`; with grad mode on, since that rebuilds
/// a graph).
fn refresh_graphs<'a>(ts: impl Iterator<Item = &'a Tensor>) -> Result<()> {
    let _g = enable_grad();
    ts.into_iter()
        .try_for_each(crate::ops::inplace::recorded::refresh)
}

fn run(
    roots: &[(Tensor, Option<Tensor>)],
    targets: Option<&[Arc<Node>]>,
    opts: GradOptions,
) -> Result<HashMap<Key, Tensor>> {
    let retain_graph = opts.retain();
    let create_graph = opts.create_graph;
    let _span = crate::checkpoint::profiler::backward_span();
    // The outermost backward pass ending lifts a step's memory cap (`cap_until_backward`).
    let _scope = crate::dtr::BackwardScope::enter();
    let _autocast = crate::autocast::suspend_for_backward();
    refresh_graphs(roots.iter().map(|(t, _)| t))?;
    let _mode: GradModeGuard = if create_graph {
        enable_grad()
    } else {
        no_grad()
    };
    // Seed gradients.
    let mut buffers: HashMap<Key, Tensor> = HashMap::new();
    let mut root_nodes = Vec::new();
    for (t, g) in roots {
        if !t.requires_grad() {
            return Err(Error::graph(
                "backward",
                "element 0 of tensors does not require grad and does not have a grad_fn",
            ));
        }
        let g = root_grad(t, g.clone(), create_graph)?;
        let n = t
            .grad_edge()
            .ok_or_else(|| Error::graph("backward", "no graph"))?;
        add_into(&mut buffers, key(&n), g, create_graph)?;
        root_nodes.push(n);
    }
    // Collect reachable nodes.
    let mut nodes: Vec<Arc<Node>> = Vec::new();
    let mut index: HashMap<Key, usize> = HashMap::new();
    let mut stack: Vec<Arc<Node>> = root_nodes.clone();
    while let Some(n) = stack.pop() {
        if index.contains_key(&key(&n)) {
            continue;
        }
        index.insert(key(&n), nodes.len());
        for c in n.next.iter().flatten() {
            if !index.contains_key(&key(c)) {
                stack.push(c.clone());
            }
        }
        nodes.push(n);
    }
    // Which nodes matter: all for backward(); for grad(), those that lead to a target.
    let target_keys: HashSet<Key> = targets
        .map(|t| t.iter().map(key).collect())
        .unwrap_or_default();
    let needed: Vec<bool> = match targets {
        None => vec![true; nodes.len()],
        Some(_) => {
            let mut needed = vec![false; nodes.len()];
            // Nodes were discovered parents-first; iterate until stable (graphs are DAGs).
            let mut changed = true;
            while changed {
                changed = false;
                for (i, n) in nodes.iter().enumerate() {
                    if needed[i] {
                        continue;
                    }
                    let hit = target_keys.contains(&key(n))
                        || n.next.iter().flatten().any(|c| needed[index[&key(c)]]);
                    if hit {
                        needed[i] = true;
                        changed = true;
                    }
                }
            }
            needed
        }
    };
    let mut deps = vec![0usize; nodes.len()];
    for (i, n) in nodes.iter().enumerate() {
        if !needed[i] {
            continue;
        }
        for c in n.next.iter().flatten() {
            let j = index[&key(c)];
            if needed[j] {
                deps[j] += 1;
            }
        }
    }
    let mut heap = BinaryHeap::new();
    for (i, n) in nodes.iter().enumerate() {
        if needed[i] && deps[i] == 0 {
            heap.push(ready(n, i));
        }
    }
    let mut captured: HashMap<Key, Tensor> = HashMap::new();
    let touched_mark = touched::mark();
    let result = (|| -> Result<()> {
        while let Some(Ready(_, i)) = heap.pop() {
            let node = nodes[i].clone();
            let k = key(&node);
            let discard = matches!(node.kind, NodeKind::Accumulate(_)) && discarding_leaf_grads();
            let g = match buffers.remove(&k) {
                Some(g) if discard => Some(g),
                Some(g) => Some(super::hooks::run_hooks(&node, g)?),
                None => None,
            };
            let is_target = target_keys.contains(&k);
            if is_target {
                if let Some(g) = &g {
                    captured.insert(k, g.clone());
                }
            }
            // A target of `grad` whose own backward leads to no other target is not run, and
            // its saved tensors stay: a later backward over that part of the graph still works.
            let stop_here =
                is_target && targets.is_some() && !node_has_needed_child(&node, &index, &needed);
            let input_grads: Vec<Option<Tensor>> = match (&node.kind, g) {
                (NodeKind::Accumulate(leaf), Some(g)) => {
                    if targets.is_none() && !discard {
                        let leaf = Tensor(leaf.clone());
                        accumulate(&leaf, g, create_graph)?;
                        super::hooks::run_post_accumulate_hooks(&leaf)?;
                    }
                    Vec::new()
                }
                (NodeKind::Accumulate(_), None) => Vec::new(),
                (NodeKind::Op(_), _) if stop_here => Vec::new(),
                (NodeKind::Op(_), None) => {
                    // No gradient reached it: its saved tensors are not needed any more.
                    if !retain_graph {
                        if let Some(s) = node.saved.lock().take() {
                            s.iter().for_each(|slot| slot.release());
                        }
                    }
                    Vec::new()
                }
                (NodeKind::Op(op), Some(g)) => {
                    let slots = {
                        let mut saved = node.saved.lock();
                        match saved.as_ref() {
                            None => {
                                return Err(Error::graph(
                                    "backward",
                                    format!(
                                        "trying to backward through the graph a second time \
                                         (the saved tensors of {} were freed after the first \
                                         backward); specify retain_graph=True on the first \
                                         backward",
                                        op.name()
                                    ),
                                ))
                            }
                            Some(_) if retain_graph => None,
                            Some(_) => saved.take(),
                        }
                    };
                    let saved: Vec<Tensor> = match &slots {
                        Some(s) => saved_tensors(&node, s, create_graph)?,
                        None => {
                            let guard = node.saved.lock();
                            let s = guard
                                .as_ref()
                                .ok_or_else(|| Error::graph("backward", "graph freed"))?;
                            saved_tensors(&node, s, create_graph)?
                        }
                    };
                    let ctx = BackwardCtx {
                        grad: &g,
                        saved: &saved,
                        inputs: &node.inputs,
                    };
                    // A second gradient for a one-input op's input may go straight into the
                    // buffer the first one started (see `Op::add_grad_into`).
                    let buffer = match node.next.as_slice() {
                        [Some(c)] if !create_graph && !g.dtype().is_half() => {
                            buffers.get(&key(c)).filter(|b| {
                                exclusive(b)
                                    && b.dtype() == g.dtype()
                                    && b.shape() == node.inputs[0].shape.as_slice()
                            })
                        }
                        _ => None,
                    };
                    let added = match buffer {
                        Some(b) => crate::cpu::catch_oom(op.name(), || op.add_grad_into(&g, b))?,
                        None => false,
                    };
                    let grads = if added {
                        vec![None]
                    } else {
                        crate::cpu::catch_oom(op.name(), || {
                            crate::ops::half_compute::backward(op.as_ref(), &ctx)
                        })?
                    };
                    drop(saved);
                    let grads = check_grads(op.name(), &node, grads)?;
                    if let Some(s) = slots {
                        for slot in s.iter() {
                            slot.release();
                        }
                    }
                    grads
                }
            };
            for (j, c) in node.next.iter().enumerate() {
                let Some(c) = c else { continue };
                let ci = index[&key(c)];
                if !needed[ci] {
                    continue;
                }
                if let Some(Some(g)) = input_grads.get(j) {
                    add_into(&mut buffers, key(c), g.clone(), create_graph)?;
                }
                deps[ci] -= 1;
                if deps[ci] == 0 {
                    heap.push(ready(c, ci));
                }
            }
        }
        Ok(())
    })();
    touched::backward_ended(touched_mark);
    result.map(|_| captured)
}

fn node_has_needed_child(node: &Node, index: &HashMap<Key, usize>, needed: &[bool]) -> bool {
    node.next
        .iter()
        .flatten()
        .any(|c| needed[index[&(Arc::as_ptr(c))]])
}

fn check_grads(name: &str, node: &Node, grads: Vec<Option<Tensor>>) -> Result<Vec<Option<Tensor>>> {
    let mut out = Vec::with_capacity(grads.len());
    for (i, g) in grads.into_iter().enumerate() {
        let meta = &node.inputs[i];
        out.push(match g {
            Some(g) if meta.requires_grad => {
                if g.shape() != meta.shape.as_slice() {
                    return Err(Error::graph(
                        "backward",
                        format!(
                            "internal error: {name} produced a gradient of shape {} for an input \
                             of shape {}",
                            fmt_shape(g.shape()),
                            fmt_shape(&meta.shape)
                        ),
                    ));
                }
                Some(if g.dtype() != meta.dtype {
                    ops::cast(&g, meta.dtype)?
                } else {
                    g
                })
            }
            _ => None,
        });
    }
    Ok(out)
}

/// Whether `t` owns its storage alone and covers it contiguously, so it can be updated in
/// place.
fn exclusive(t: &Tensor) -> bool {
    Arc::strong_count(t.storage()) == 1
        && t.is_contiguous()
        && t.layout().offset == 0
        && t.numel() == t.storage().len()
}

fn add_into(
    buffers: &mut HashMap<Key, Tensor>,
    k: Key,
    g: Tensor,
    create_graph: bool,
) -> Result<()> {
    match buffers.remove(&k) {
        None => {
            buffers.insert(k, g);
        }
        Some(prev) => {
            // In place only when nothing can observe it: no graph is being built and the
            // buffer is ours alone.
            let sum = if !create_graph && exclusive(&prev) && prev.shape() == g.shape() {
                ops::add_inplace(&prev, &g)?;
                prev
            } else {
                ops::add(&prev, &g)?
            };
            buffers.insert(k, sum);
        }
    }
    Ok(())
}

/// Add `g` into `t.grad`. With `create_graph` the gradient keeps its graph (and a sum is
/// made out of place), as in PyTorch. The engine adds in place only into a gradient it made
/// itself; an error leaves `.grad` as it was.
fn accumulate(t: &Tensor, g: Tensor, create_graph: bool) -> Result<()> {
    let mut st = t.0.state.lock();
    let (grad, owned) = match st.grad.clone() {
        None if create_graph => {
            // Kept as given (it may be the caller's own tensor): never added into in place.
            let g = if g.dtype() == t.dtype() {
                g
            } else {
                ops::cast(&g, t.dtype())?
            };
            (g, false)
        }
        // A buffer nothing else can see (not even through another handle) becomes `.grad`.
        None if exclusive(&g) && Arc::strong_count(&g.0) == 1 && g.dtype() == t.dtype() => {
            (g.detach(), true)
        }
        None => (ops::contiguous_copy(&g, t.dtype())?, true),
        // In place into the engine's own gradient: the optimizer fast path.
        Some(prev)
            if st.grad_owned
                && !create_graph
                && !prev.requires_grad()
                && prev.is_contiguous()
                && prev.shape() == g.shape() =>
        {
            ops::add_inplace(&prev, &g)?;
            (prev, true)
        }
        // An assigned gradient (or one with a graph) is replaced by a new sum.
        Some(prev) => (ops::add(&prev, &g)?, !create_graph),
    };
    st.grad = Some(grad);
    st.grad_owned = owned;
    Ok(())
}
