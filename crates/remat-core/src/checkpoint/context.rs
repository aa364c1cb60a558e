//! The thread-local checkpoint context: which kind of slot a saved tensor gets, depending on
//! whether we are inside a checkpoint scope, a segment's forward, or a segment's recompute.
//!
//! Every entry of a thread's stack is removed by its own guard, by identity (not simply the
//! top), so guards may end out of order. A scope's guard may even end on another thread: it
//! then only marks its entry closed, and the owning thread skips and drops closed entries the
//! next time it looks at its stack.

use crate::autograd::node::Save;
use crate::checkpoint::policy::{KeptLookup, KeptOutputs};
use crate::checkpoint::segment::Segment;
use crate::checkpoint::slot::Slot;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use crate::tensor_data::TensorData;
use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// What a segment's recompute collects: the saved tensors in order, and (with early stop) how
/// many the backward needs, so the recompute can stop once it has them all.
pub(crate) struct Capture {
    saved: RefCell<Vec<TensorData>>,
    stop_at: Option<usize>,
    /// The outputs the forward kept (with a selective policy) and the op that need not run
    /// (with early stop), by op number; and the number of the next op.
    kept: Option<Arc<KeptOutputs>>,
    next_op: Cell<usize>,
    /// The segment's name, for errors.
    name: String,
}

impl Capture {
    /// A capture that runs the function to its end (`stop_at` None) or stops as soon as
    /// `stop_at` tensors are saved.
    pub(crate) fn new(stop_at: Option<usize>) -> Rc<Capture> {
        Capture::with_kept(stop_at, None, String::new())
    }

    /// A capture that also substitutes the outputs a policy kept in the forward.
    pub(crate) fn with_kept(
        stop_at: Option<usize>,
        kept: Option<Arc<KeptOutputs>>,
        name: String,
    ) -> Rc<Capture> {
        Rc::new(Capture {
            saved: RefCell::new(Vec::new()),
            stop_at,
            kept,
            next_op: Cell::new(0),
            name,
        })
    }

    /// Number the next op; what the forward left for it.
    fn next_kept(&self) -> Result<KeptLookup> {
        let Some(kept) = &self.kept else {
            return Ok(KeptLookup::Run);
        };
        let i = self.next_op.get();
        self.next_op.set(i + 1);
        kept.lookup(
            i,
            &format!("an output kept by checkpoint segment {:?}", self.name),
        )
    }

    /// Whether `n` more saved tensors complete an early-stopping capture.
    fn completed_by(&self, n: usize) -> bool {
        self.stop_at
            .is_some_and(|s| n > 0 && self.saved.borrow().len() + n >= s)
    }

    pub(crate) fn push(&self, d: TensorData) {
        self.saved.borrow_mut().push(d);
    }

    /// Whether early stop is on and every needed tensor has been captured.
    pub(crate) fn is_full(&self) -> bool {
        self.stop_at.is_some_and(|n| self.saved.borrow().len() >= n)
    }

    pub(crate) fn take(&self) -> Vec<TensorData> {
        std::mem::take(&mut *self.saved.borrow_mut())
    }
}

/// The innermost checkpoint context.
#[derive(Clone)]
pub(crate) enum SaveMode {
    /// No checkpointing: slots keep the data.
    Normal,
    /// Inside `checkpoint_scope()`: every tensor created gets a recompute recipe.
    Scope,
    /// Inside a segment's forward: saved tensors become slots of the segment.
    Segment(Arc<Segment>),
    /// Inside a segment's recompute: saved tensors are collected in order. The graph is
    /// built as in a plain run (slots keep the data), so the function may call `grad` itself.
    Capture(Rc<Capture>),
}

struct Entry {
    id: u64,
    mode: SaveMode,
    /// Set when a scope guard ended on another thread.
    closed: Option<Arc<AtomicBool>>,
}

impl Entry {
    fn is_closed(&self) -> bool {
        self.closed
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Acquire))
    }
}

static NEXT_THREAD_TAG: AtomicU64 = AtomicU64::new(1);

thread_local! {
    static STACK: RefCell<Vec<Entry>> = const { RefCell::new(Vec::new()) };
    static DEPTH: Cell<usize> = const { Cell::new(0) };
    static NEXT_ID: Cell<u64> = const { Cell::new(1) };
    /// How many op forwards are running on this thread (ops a composite op's forward runs
    /// are not numbered for selective policies: the recompute may skip that forward).
    static OP_DEPTH: Cell<usize> = const { Cell::new(0) };
    static THREAD_TAG: u64 = NEXT_THREAD_TAG.fetch_add(1, Ordering::Relaxed);
    /// How many recipe replays / memory-limit rebuilds are running an op's forward again on
    /// this thread (see [`Replay`]).
    static REPLAY_DEPTH: Cell<usize> = const { Cell::new(0) };
}

/// A nonzero number naming the calling thread (0 while its locals are being destroyed).
pub(crate) fn thread_tag() -> u64 {
    THREAD_TAG.try_with(|t| *t).unwrap_or(0)
}

/// Drop closed entries at the top of this thread's stack (below an open entry they are only
/// skipped until that entry ends).
fn purge(stack: &mut Vec<Entry>) {
    while stack.last().is_some_and(Entry::is_closed) {
        stack.pop();
    }
    DEPTH.with(|d| d.set(stack.len()));
}

/// The innermost context (cheap when no checkpointing is active).
pub(crate) fn current() -> SaveMode {
    if DEPTH.with(|d| d.get()) == 0 {
        return SaveMode::Normal;
    }
    STACK.with(|s| {
        let mut s = s.borrow_mut();
        purge(&mut s);
        s.iter()
            .rev()
            .find(|e| !e.is_closed())
            .map(|e| e.mode.clone())
            .unwrap_or(SaveMode::Normal)
    })
}

/// Whether this thread is running code again whose original forward already ran: a
/// segment's recompute or the budget planner's measuring run (a `Capture` anywhere on the
/// stack: a nested segment runs as a segment of its own inside its outer segment's replay),
/// or a recipe replay / rebuild under a memory limit re-running an op's forward ([`Replay`]).
/// Side effects of a forward that must happen once per step (BatchNorm's running statistics)
/// are skipped then.
pub(crate) fn is_recomputing() -> bool {
    if REPLAY_DEPTH.with(|d| d.get()) > 0 {
        return true;
    }
    if DEPTH.with(|d| d.get()) == 0 {
        return false;
    }
    STACK.with(|s| {
        s.borrow()
            .iter()
            .any(|e| !e.is_closed() && matches!(e.mode, SaveMode::Capture(_)))
    })
}

/// Marks an op's forward run again (a recipe's replay, a rebuild under a memory limit) on
/// this thread until dropped: code it calls back (a Python function's forward) sees
/// [`is_recomputing`].
pub(crate) struct Replay;

impl Replay {
    pub(crate) fn enter() -> Replay {
        REPLAY_DEPTH.with(|d| d.set(d.get() + 1));
        Replay
    }
}

impl Drop for Replay {
    fn drop(&mut self) {
        let _ = REPLAY_DEPTH.try_with(|d| d.set(d.get().saturating_sub(1)));
    }
}

fn push(mode: SaveMode, closed: Option<Arc<AtomicBool>>) -> u64 {
    let id = NEXT_ID.with(|n| {
        let id = n.get();
        n.set(id + 1);
        id
    });
    STACK.with(|s| {
        let mut s = s.borrow_mut();
        purge(&mut s);
        s.push(Entry { id, mode, closed });
        DEPTH.with(|d| d.set(s.len()));
    });
    id
}

fn remove(id: u64) {
    // `try_with`: a guard may end while the thread's locals are being destroyed.
    let _ = STACK.try_with(|s| {
        let mut s = s.borrow_mut();
        if let Some(k) = s.iter().rposition(|e| e.id == id) {
            s.remove(k);
        }
        purge(&mut s);
    });
}

/// Removes the context it pushed when dropped (on the thread that pushed it).
pub(crate) struct ContextGuard(u64);

impl Drop for ContextGuard {
    fn drop(&mut self) {
        remove(self.0);
    }
}

/// Enter a context until the guard drops.
pub(crate) fn enter(mode: SaveMode) -> ContextGuard {
    ContextGuard(push(mode, None))
}

/// A checkpoint scope entered on one thread that may be ended from any thread.
pub(crate) struct ScopeEntry {
    id: u64,
    owner: u64,
    closed: Arc<AtomicBool>,
}

impl ScopeEntry {
    /// Enter a scope on this thread.
    pub(crate) fn enter() -> ScopeEntry {
        let closed = Arc::new(AtomicBool::new(false));
        let id = push(SaveMode::Scope, Some(closed.clone()));
        ScopeEntry {
            id,
            owner: thread_tag(),
            closed,
        }
    }
}

impl Drop for ScopeEntry {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::Release);
        if thread_tag() == self.owner {
            remove(self.id);
        }
    }
}

/// The slot for saving tensor `t` in context `mode` (a node's or a segment's saved tensor);
/// `who` names the saver in a segment's errors.
pub(crate) fn slot_for(t: &Tensor, mode: &SaveMode, who: &'static str) -> Slot {
    match mode {
        SaveMode::Segment(seg) => Slot::Segment(seg.clone(), seg.save(t.data(), who)),
        // A recompute keeps what it computed: its graph lives only until it returns.
        SaveMode::Capture(_) => Slot::stored(t.data()),
        // A recipe that no longer replays the value (written in place since) is not used.
        _ => match t.recipe() {
            Some(r) if r.is_current() => Slot::recompute(r),
            _ => match t.dtr_cell() {
                Some(c) => Slot::Evictable(c, t.layout().clone(), t.storage().version()),
                None => Slot::stored(t.data()),
            },
        },
    }
}

/// The slot for an input of a recipe: the input's own recipe (chains replay in order) or
/// its data. Unlike [`slot_for`], this does not count as keeping the value for a backward.
pub(crate) fn recipe_input(t: &Tensor) -> Slot {
    match t.recipe() {
        Some(r) if r.is_current() => Slot::recipe_input(r),
        _ => Slot::stored(t.data()),
    }
}

/// The slot for saving raw data (an op's own output) in context `mode`.
pub(crate) fn slot_for_data(d: &TensorData, mode: &SaveMode, who: &'static str) -> Slot {
    match mode {
        SaveMode::Segment(seg) => Slot::Segment(seg.clone(), seg.save(d, who)),
        _ => Slot::stored(d),
    }
}

/// `Err(Error::EarlyStop)` when this thread is recomputing a segment with early stop and
/// every tensor its backward needs has been captured: the rest of the function is skipped.
pub(crate) fn check_early_stop(mode: &SaveMode) -> Result<()> {
    match mode {
        SaveMode::Capture(c) if c.is_full() => Err(Error::EarlyStop),
        _ => Ok(()),
    }
}

/// Marks an op's forward as running on this thread until dropped.
pub(crate) struct OpForward;

impl OpForward {
    pub(crate) fn enter() -> OpForward {
        OP_DEPTH.with(|d| d.set(d.get() + 1));
        OpForward
    }
}

impl Drop for OpForward {
    fn drop(&mut self) {
        let _ = OP_DEPTH.try_with(|d| d.set(d.get().saturating_sub(1)));
    }
}

/// Whether this op runs inside another op's forward (its outputs are temporaries: not
/// numbered for selective policies, and no evictable cell under a memory limit).
pub(crate) fn nested_op() -> bool {
    OP_DEPTH.with(|d| d.get() > 0)
}

/// Before an op runs: in a segment's recompute, what its forward left for this op (top-level
/// ops are numbered in order in both runs): a kept output replaces running it.
pub(crate) fn kept_output(mode: &SaveMode) -> Result<KeptLookup> {
    match mode {
        SaveMode::Capture(c) if !nested_op() => c.next_kept(),
        _ => Ok(KeptLookup::Run),
    }
}

/// For the op that saved last in the forward: when its saves are inputs only and complete the
/// recompute's capture, collect them and return true (the op's output is never used, so the
/// recompute ends without running it).
pub(crate) fn capture_last_saves(mode: &SaveMode, inputs: &[&Tensor], saves: &[Save]) -> bool {
    let SaveMode::Capture(c) = mode else {
        return false;
    };
    if saves.iter().any(|s| matches!(s, Save::Output)) || !c.completed_by(saves.len()) {
        return false;
    }
    for s in saves {
        if let Save::Input(i) = s {
            c.push(inputs[*i].data().clone());
        }
    }
    true
}

/// After an op ran in the forward of a segment: number it; the policy (if any) sees its name
/// (or `checkpoint_name` tag) and output, and may keep the output. Returns the op's number.
pub(crate) fn offer_output(
    mode: &SaveMode,
    op: &str,
    tag: Option<&str>,
    inputs: &[&Tensor],
    out: &Tensor,
) -> Result<Option<usize>> {
    match mode {
        SaveMode::Segment(seg) if !nested_op() => seg.offer(op, tag, inputs, out).map(Some),
        _ => Ok(None),
    }
}

/// After op number `i` of a segment's forward saved `saves` for its backward.
pub(crate) fn op_saved(mode: &SaveMode, i: Option<usize>, saves: &[Save]) {
    if let (SaveMode::Segment(seg), Some(i)) = (mode, i) {
        if !saves.is_empty() {
            seg.op_saved(i, saves.iter().any(|s| matches!(s, Save::Output)));
        }
    }
}
