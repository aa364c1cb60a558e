//! Graph nodes and the `Op` trait. A node holds edges to the nodes of its inputs and
//! saved-tensor slots for what its backward needs — never its inputs' tensors — so a
//! checkpoint can replace a slot with a recompute and the memory really goes away.

use crate::checkpoint::context::{self, SaveMode};
use crate::checkpoint::policy::KeptLookup;
use crate::checkpoint::recipe::Recipe;
use crate::checkpoint::slot::Slot;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::grad_mode::is_grad_enabled;
use crate::layout::{Dims, Layout};
use crate::storage::Storage;
use crate::tensor::{Tensor, TensorImpl, TensorState};
use crate::tensor_data::TensorData;
use parking_lot::Mutex;
use smallvec::SmallVec;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

/// A differentiable operation: its forward (also used to replay it for a recompute) and its
/// vector-Jacobian product.
pub trait Op: Send + Sync + 'static {
    /// The op's public name (error messages, profiler).
    fn name(&self) -> &'static str;
    /// The forward on CPU tensors, without recording anything.
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor>;
    /// The forward when an input lives on a GPU (the default: not available there, a
    /// `DeviceError`, so a CPU kernel never sees device memory).
    fn cuda(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        let dev = inputs
            .iter()
            .map(|t| t.device())
            .find(|d| *d != Device::Cpu)
            .unwrap_or(Device::Cpu);
        Err(Error::device(
            self.name(),
            format!(
                "{} is not implemented on cuda yet (input on {dev})",
                self.name()
            ),
        ))
    }
    /// Gradients for each input (None where `ctx.needs_grad(i)` is false or the input gets
    /// no gradient), written with differentiable ops: with `create_graph` the engine runs it
    /// with grad mode on and the result is differentiated again. Each gradient has its
    /// input's shape.
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>>;
    /// Add the gradient of the op's only input into `acc` in place, when that is cheaper than
    /// making it and letting the engine add it (an index's backward adds into the indexed
    /// region only, instead of a zero-filled tensor of the input's shape). `acc` is the
    /// engine's gradient buffer for the input: exclusive, contiguous, of the input's shape and
    /// dtype. Called only when no graph is being built; returns false when not handled (the
    /// default), and the engine calls [`Op::backward`] as usual.
    fn add_grad_into(&self, _grad: &Tensor, _acc: &Tensor) -> Result<bool> {
        Ok(false)
    }
    /// Whether the op takes integer and bool inputs (ops that move, select or compare
    /// elements). The default is float inputs only: [`apply`] refuses others with a
    /// `DTypeError` naming the op, so a float kernel never sees an integer buffer.
    fn any_dtype(&self) -> bool {
        false
    }
    /// The tag of a `checkpoint_name` op (what selective checkpoint policies match names
    /// against); None for every other op.
    fn tag(&self) -> Option<&str> {
        None
    }
    /// Whether the op's kernels take bfloat16 and float16 storage themselves (views, copies,
    /// casts, element moves). The default is no: [`Op::forward`] runs the op on float32
    /// copies of half inputs and rounds its result (`ops::half_compute`).
    fn half_native(&self) -> bool {
        false
    }
    /// Compute the output from the inputs, without recording anything: the one place that
    /// widens half inputs for kernels that lack them. Replaying a checkpointed tensor calls
    /// exactly this, so recomputed values are bit-identical.
    fn forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        if self.half_native() {
            self.device_forward(inputs)
        } else {
            crate::ops::half_compute::forward(self, inputs)
        }
    }
    /// The forward on the inputs as they are: the one place that chooses a device (CUDA when
    /// any input lives on a GPU).
    fn device_forward(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        if inputs.iter().any(|t| t.device() != Device::Cpu) {
            self.cuda(inputs)
        } else {
            self.cpu(inputs)
        }
    }
}

/// What an op keeps for its backward.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Save {
    /// The i-th input.
    Input(usize),
    /// The op's output.
    Output,
}

/// Shape, dtype and grad flag of one input, recorded for every node (cheap, no data).
#[derive(Clone, Debug)]
pub struct InputMeta {
    /// The input's shape.
    pub shape: Dims,
    /// The input's dtype.
    pub dtype: DType,
    /// Whether a gradient must flow to this input.
    pub requires_grad: bool,
}

/// What a backward sees: the output's gradient, the saved tensors in the order the op asked
/// for them, and its inputs' metadata.
pub struct BackwardCtx<'a> {
    /// Gradient of the loss with respect to the op's output.
    pub grad: &'a Tensor,
    /// The saved tensors, in the order of the op's `Save` list.
    pub saved: &'a [Tensor],
    /// Metadata of each input.
    pub inputs: &'a [InputMeta],
}

impl BackwardCtx<'_> {
    /// Whether input `i` needs a gradient.
    pub fn needs_grad(&self, i: usize) -> bool {
        self.inputs.get(i).is_some_and(|m| m.requires_grad)
    }
}

/// How a node turns its output gradient into input gradients.
pub(crate) enum NodeKind {
    /// A recorded op.
    Op(Arc<dyn Op>),
    /// The end of the graph at a leaf: adds the gradient into the leaf's `.grad`.
    Accumulate(Arc<TensorImpl>),
}

/// One recorded op application in the graph.
pub struct Node {
    pub(crate) kind: NodeKind,
    /// For each input, the node its gradient flows to (None: it needs no gradient).
    pub(crate) next: SmallVec<[Option<Arc<Node>>; 2]>,
    pub(crate) inputs: SmallVec<[InputMeta; 2]>,
    /// Saved-tensor slots; None once released after a backward without `retain_graph`.
    pub(crate) saved: Mutex<Option<SmallVec<[Slot; 2]>>>,
    /// What each slot holds (an input or the output), so that a backward that builds its
    /// own graph (`create_graph`) can attach each saved tensor to the graph edge it came
    /// from.
    pub(crate) saves: SmallVec<[Save; 2]>,
    /// Creation order: the engine runs ready nodes newest first.
    pub(crate) seq: u64,
    /// Gradient hooks of the tensor this node made (`Tensor::register_hook`).
    pub(crate) hooks: Mutex<super::hooks::HookList>,
}

/// How a non-leaf tensor was made, kept on the tensor handle (not on the node) so that
/// `checkpoint(x)` can build a recipe. Inputs are held weakly: a plain run keeps nothing
/// alive through it, and inputs that are already gone cannot be worth reviving (keeping them
/// would cost at least as much as the tensor a checkpoint would free).
pub(crate) struct Creation {
    pub(crate) op: Arc<dyn Op>,
    /// Each input's storage, layout, and storage version when the op read it.
    pub(crate) inputs: SmallVec<[(Weak<Storage>, Layout, u64); 2]>,
    /// Recipes of inputs that were themselves checkpointed (chains recompute in order).
    pub(crate) recipes: SmallVec<[Option<Arc<Recipe>>; 2]>,
    /// The output storage's version when the op made it: once the output or an input was
    /// written in place, replaying the op would not give the tensor's value.
    pub(crate) version: u64,
}

impl Creation {
    /// Whether replaying the op still gives the tensor over `out`: nothing wrote into the
    /// output or into an input that is still alive since the op ran.
    pub(crate) fn replayable(&self, out: &Storage) -> bool {
        out.version() == self.version
            && self
                .inputs
                .iter()
                .all(|(s, _, v)| s.upgrade().is_none_or(|s| s.version() == *v))
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        // Dropping a long chain recursively would overflow the stack: unlink it iteratively.
        let mut stack: Vec<Arc<Node>> = self.next.drain(..).flatten().collect();
        while let Some(n) = stack.pop() {
            if let Ok(mut node) = Arc::try_unwrap(n) {
                stack.extend(node.next.drain(..).flatten());
            }
        }
    }
}

static NEXT_SEQ: AtomicU64 = AtomicU64::new(1);

impl Node {
    /// The op's name ("AccumulateGrad" for leaves).
    pub fn name(&self) -> &'static str {
        match &self.kind {
            NodeKind::Op(op) => op.name(),
            NodeKind::Accumulate(_) => "AccumulateGrad",
        }
    }

    pub(crate) fn accumulator(leaf: &Tensor) -> Arc<Node> {
        let mut st = leaf.0.state.lock();
        if let Some(n) = st.accumulator.upgrade() {
            return n;
        }
        let node = Arc::new(Node {
            kind: NodeKind::Accumulate(leaf.0.clone()),
            next: SmallVec::new(),
            inputs: SmallVec::new(),
            saved: Mutex::new(Some(SmallVec::new())),
            saves: SmallVec::new(),
            seq: NEXT_SEQ.fetch_add(1, Ordering::Relaxed),
            hooks: Mutex::default(),
        });
        st.accumulator = Arc::downgrade(&node);
        node
    }
}

impl Tensor {
    /// The node a gradient for this tensor flows into (its grad_fn, or its accumulator if it
    /// is a leaf that requires grad).
    pub(crate) fn grad_edge(&self) -> Option<Arc<Node>> {
        if !self.requires_grad() {
            return None;
        }
        match self.grad_fn() {
            Some(n) => Some(n),
            None => Some(Node::accumulator(self)),
        }
    }

    /// A copy of this handle's data flagged as requiring grad, without a node (used while a
    /// checkpoint segment is being recomputed, where no graph is built).
    pub(crate) fn flagged(data: TensorData, requires_grad: bool) -> Tensor {
        Tensor::with_grad_fn(data, None, requires_grad, TensorState::default())
    }
}

/// Run `op` forward on `inputs` and record it in the graph when a gradient is needed.
/// During a segment's recompute with early stop, the op that saves the last tensor the
/// backward needs ends the recompute (`Error::EarlyStop` unwinds out of the function).
///
/// Under autocast, an op of one of its lists runs on its inputs cast as the list says
/// (`crate::autocast`), with autocast suspended while it runs.
pub fn apply<O: Op>(op: O, inputs: &[&Tensor], saves: &[Save]) -> Result<Tensor> {
    match crate::autocast::op_entry(op.name(), inputs)? {
        Some(cast) => apply_now(op, &cast.refs(), saves),
        None => apply_now(op, inputs, saves),
    }
}

fn apply_now<O: Op>(op: O, inputs: &[&Tensor], saves: &[Save]) -> Result<Tensor> {
    check_dtypes(&op, inputs)?;
    crate::ops::inplace::recorded::refresh_all(inputs)?;
    let mode = context::current();
    // A selective checkpoint's recompute takes what its forward kept for this op.
    // Under a memory limit, the forward's time is what evicting its output would cost.
    let timer = crate::dtr::timer(inputs, &mode);
    let out = match context::kept_output(&mode)? {
        KeptLookup::Output(d) => Tensor::from_data(d),
        KeptLookup::LastSaver
            if recorded(inputs) && context::capture_last_saves(&mode, inputs, saves) =>
        {
            return Err(Error::EarlyStop);
        }
        _ if matches!(mode, SaveMode::Normal) => {
            crate::cpu::catch_oom(op.name(), || op.forward(inputs))?
        }
        _ => {
            // Ops this forward runs itself are not numbered for selective policies.
            let _f = context::OpForward::enter();
            crate::cpu::catch_oom(op.name(), || op.forward(inputs))?
        }
    };
    let number = context::offer_output(&mode, op.name(), op.tag(), inputs, &out)?;
    // An integer or bool result (a comparison, an index) has no gradient: never recorded.
    if !recorded(inputs) || !out.dtype().is_float() {
        return Ok(mark_view(inputs, untracked(op, inputs, out)));
    }
    let took = timer.map(|t| t.elapsed());
    let t = mark_view(inputs, record_in(op, inputs, out, saves, &mode, took));
    context::op_saved(&mode, number, saves);
    context::check_early_stop(&mode)?;
    Ok(t)
}

/// Record an already computed `out` as the result of `op` on `inputs`.
pub fn record<O: Op>(op: O, inputs: &[&Tensor], out: Tensor, saves: &[Save]) -> Tensor {
    if !recorded(inputs) || !out.dtype().is_float() {
        return mark_view(inputs, untracked(op, inputs, out));
    }
    mark_view(
        inputs,
        record_in(op, inputs, out, saves, &context::current(), None),
    )
}

/// Remember, on an op's output that is a view of its first input's storage, the root of
/// that input's chain of views: an in-place write into the view is recorded on the root
/// (`ops::inplace::recorded`).
fn mark_view(inputs: &[&Tensor], out: Tensor) -> Tensor {
    if let Some(x) = inputs.first() {
        if !out.same(x) && Arc::ptr_eq(out.storage(), x.storage()) {
            let root = crate::ops::inplace::recorded::view_root(x).unwrap_or_else(|| (*x).clone());
            out.0.state.lock().view_base = Some(root);
        }
    }
    out
}

/// Error unless `op` takes the dtypes of `inputs` (floats only, unless it says otherwise).
fn check_dtypes<O: Op>(op: &O, inputs: &[&Tensor]) -> Result<()> {
    if op.any_dtype() {
        return Ok(());
    }
    match inputs.iter().find(|t| !t.dtype().is_float()) {
        None => Ok(()),
        Some(t) => Err(Error::dtype(
            op.name(),
            format!(
                "expected floating-point tensors, got a {} tensor of shape {}; convert it \
                 with .float()",
                t.dtype(),
                crate::layout::fmt_shape(t.shape())
            ),
        )),
    }
}

/// Whether an op on `inputs` is recorded in the graph.
fn recorded(inputs: &[&Tensor]) -> bool {
    is_grad_enabled() && inputs.iter().any(|t| t.requires_grad())
}

/// An op that is not recorded. In a checkpoint scope it still gets a recipe when one of its
/// inputs has one (say, noise made in the scope and scaled): a consumer that saves it then
/// keeps the recipe, not the data.
fn untracked<O: Op>(op: O, inputs: &[&Tensor], out: Tensor) -> Tensor {
    if inputs.is_empty()
        || !is_grad_enabled()
        || !matches!(context::current(), SaveMode::Scope)
        || !inputs.iter().any(|t| t.recipe().is_some())
    {
        return out;
    }
    crate::checkpoint::scope_recipe(Arc::new(op), inputs, out)
}

fn record_in<O: Op>(
    op: O,
    inputs: &[&Tensor],
    out: Tensor,
    saves: &[Save],
    mode: &SaveMode,
    took: Option<std::time::Duration>,
) -> Tensor {
    let out_data = out.0.data.clone();
    drop(out);
    if let SaveMode::Capture(capture) = mode {
        // A segment's recompute: collect the saved tensors in order (the graph is still
        // built, as in a plain run, so the function may differentiate it itself).
        for s in saves {
            capture.push(match s {
                Save::Input(i) => inputs[*i].0.data.clone(),
                Save::Output => out_data.clone(),
            });
        }
    }
    let op: Arc<dyn Op> = Arc::new(op);
    let recipe = if matches!(mode, SaveMode::Scope) {
        let input_slots = inputs.iter().map(|t| context::recipe_input(t)).collect();
        Some(Recipe::new(op.clone(), input_slots, &out_data, "scope"))
    } else {
        None
    };
    // Under a memory limit (plain recording only: checkpoints already choose what to keep),
    // the output's storage becomes evictable.
    let cell = match mode {
        SaveMode::Normal if !context::nested_op() => {
            crate::dtr::cell_for_output(&op, inputs, &out_data, took)
        }
        _ => None,
    };
    let name = op.name();
    let slots: SmallVec<[Slot; 2]> = saves
        .iter()
        .map(|s| match s {
            Save::Input(i) => context::slot_for(inputs[*i], mode, name),
            Save::Output => match (&recipe, &cell) {
                (Some(r), _) => Slot::recompute(r.clone()),
                (None, Some(c)) => Slot::Evictable(
                    c.clone(),
                    out_data.layout.clone(),
                    out_data.storage.version(),
                ),
                (None, None) => context::slot_for_data(&out_data, mode, name),
            },
        })
        .collect();
    let node = Arc::new(Node {
        kind: NodeKind::Op(op.clone()),
        next: inputs.iter().map(|t| t.grad_edge()).collect(),
        inputs: inputs
            .iter()
            .map(|t| InputMeta {
                shape: t.shape().into(),
                dtype: t.dtype(),
                requires_grad: t.requires_grad(),
            })
            .collect(),
        saved: Mutex::new(Some(slots)),
        saves: saves.iter().copied().collect(),
        seq: NEXT_SEQ.fetch_add(1, Ordering::Relaxed),
        hooks: Mutex::default(),
    });
    let creation = Arc::new(Creation {
        op,
        inputs: inputs
            .iter()
            .map(|t| {
                (
                    Arc::downgrade(t.storage()),
                    t.layout().clone(),
                    t.storage().version(),
                )
            })
            .collect(),
        recipes: inputs.iter().map(|t| t.recipe()).collect(),
        version: out_data.storage.version(),
    });
    Tensor::with_grad_fn(
        out_data,
        Some(node),
        true,
        TensorState {
            creation: Some(creation),
            recipe,
            dtr: cell,
            ..Default::default()
        },
    )
}
