//! Evictable cells: one per storage an op made while a memory limit was set. A cell knows how
//! to make its storage again (the op and its inputs, themselves cells or pinned data), so the
//! storage may be freed at any time and rebuilt, recursively, when it is next read.
//!
//! Who keeps a cell's storage alive: the "external" holders, i.e. the tensor handles of the
//! storage and the saved-tensor slots that read it (each holds a [`CellRef`]). Cells that
//! use it as an input hold only the metadata (`Arc<Cell>`): once the last external holder is
//! gone the storage is released at once, as a plain run would free it, and only rebuilt if a
//! later rematerialisation needs it as an input.
//!
//! Inputs that cannot be recomputed (leaves, unrecorded tensors) are held weakly, so a plain
//! run's memory is unchanged while nothing is evicted (except for inputs much smaller than
//! the output, held from the start: see [`SMALL_INPUT_RATIO`]). A cell is *secured* before its storage
//! leaves while it may still be rebuilt (it is evicted, or released while an evicted cell
//! needs it): every such input it (and each of its ancestors that is not resident) reads is
//! then held strongly, and resident ancestors are marked as needed, so that they secure
//! themselves when they leave in turn. Securing and every departure happen under one lock.

use super::pool;
use crate::autograd::node::Op;
use crate::autograd::saved;
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::grad_mode::no_grad;
use crate::layout::{fmt_shape, Layout};
use crate::storage::Storage;
use crate::tensor::Tensor;
use crate::tensor_data::TensorData;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Instant;

/// One input of a cell's op.
pub(crate) enum Input {
    /// Data that cannot be recomputed (a leaf, a parameter, an unrecorded tensor), the view
    /// the op read and its version then: held weakly until the cell is secured.
    Pinned(Pinned),
    /// Another cell, the view of it the op read, and its version then.
    Cell(Arc<Cell>, Layout, u64),
}

/// An input that cannot be recomputed.
pub(crate) struct Pinned {
    weak: Weak<Storage>,
    layout: Layout,
    version: u64,
    /// Set when the cell is secured: the input must outlive every rebuild.
    kept: Mutex<Option<Arc<Storage>>>,
}

/// A pinned input at most this fraction of the output's bytes is held from the start: small
/// constants (a causal mask, a scalar) often die right after the forward, and without them
/// nothing computed from them could ever be evicted; holding them costs at most 1/16 of what
/// the cells hold.
const SMALL_INPUT_RATIO: usize = 16;

impl Pinned {
    /// Input `d` (at `version`) of an op whose output has `out_bytes`.
    pub(crate) fn new(d: &TensorData, version: u64, out_bytes: usize) -> Pinned {
        let small = d.storage.nbytes().saturating_mul(SMALL_INPUT_RATIO) <= out_bytes;
        Pinned {
            weak: Arc::downgrade(&d.storage),
            layout: d.layout.clone(),
            version,
            kept: Mutex::new(small.then(|| d.storage.clone())),
        }
    }

    fn storage(&self) -> Option<Arc<Storage>> {
        self.kept.lock().clone().or_else(|| self.weak.upgrade())
    }

    /// Unchanged since the op read it (or gone, which securing checks).
    fn unmodified(&self) -> bool {
        self.storage().is_none_or(|s| s.version() == self.version)
    }
}

/// Serialises securing with every departure of a storage from its cell (see the header).
static SECURE: Mutex<()> = Mutex::new(());

/// The storage a cell has now: `strong` while resident; `weak` still finds it when something
/// outside the cell kept it alive after the cell let go (then nothing is recomputed).
struct Resident {
    strong: Option<Arc<Storage>>,
    weak: Weak<Storage>,
}

/// A storage made by a recorded op under a memory limit, and how to make it again.
pub(crate) struct Cell {
    op: Arc<dyn Op>,
    inputs: Vec<Input>,
    value: Mutex<Resident>,
    /// The layout the op's output had (a rematerialisation must give the same one).
    layout: Layout,
    dtype: DType,
    pub(crate) device: Device,
    pub(crate) nbytes: usize,
    /// How long the op took (nanoseconds): the cost of rebuilding this storage.
    pub(crate) compute_ns: u64,
    /// The logical time of the last read (staleness = now - this).
    last_use: AtomicU64,
    /// The storage's version when the op made it: a storage written in place since cannot be
    /// evicted (replaying the op would not give its value).
    version: u64,
    /// External holders (tensor handles, saved slots): see the module header.
    external: AtomicUsize,
    /// Evicted cells that may need this one rebuilt (it secures itself before it leaves).
    needed: AtomicUsize,
    /// Whether everything needed to rebuild this cell is held (see the header).
    secured: AtomicBool,
    /// Whether the pool's resident list has an entry for this cell (changed under its lock).
    in_pool: AtomicBool,
}

impl Cell {
    /// A cell for `out`, made by `op` from `inputs` in `compute_ns`, registered for
    /// eviction; returns its first external holder (the output tensor's).
    pub(crate) fn create(
        op: Arc<dyn Op>,
        inputs: Vec<Input>,
        out: &TensorData,
        compute_ns: u64,
    ) -> CellRef {
        let cell = Arc::new(Cell {
            op,
            inputs,
            value: Mutex::new(Resident {
                strong: Some(out.storage.clone()),
                weak: Arc::downgrade(&out.storage),
            }),
            layout: out.layout.clone(),
            dtype: out.storage.dtype(),
            device: out.storage.device(),
            nbytes: out.storage.nbytes(),
            compute_ns,
            last_use: AtomicU64::new(pool::tick()),
            version: out.storage.version(),
            external: AtomicUsize::new(0),
            needed: AtomicUsize::new(0),
            secured: AtomicBool::new(false),
            in_pool: AtomicBool::new(false),
        });
        pool::cell_made();
        pool::register(&cell);
        CellRef::new(cell)
    }

    /// The storage if it is resident (or still alive elsewhere), marking it used.
    fn resident(self: &Arc<Cell>) -> Option<Arc<Storage>> {
        let mut v = self.value.lock();
        let s = match &v.strong {
            Some(s) => s.clone(),
            None => {
                let s = v.weak.upgrade()?;
                if self.external.load(Ordering::Acquire) > 0 {
                    v.strong = Some(s.clone());
                    pool::register(self);
                }
                s
            }
        };
        self.last_use.store(pool::tick(), Ordering::Relaxed);
        Some(s)
    }

    /// Whether the storage is held by this cell alone, unmodified, and every pinned input
    /// is still as the op read it: then evicting frees `nbytes` and it can be rebuilt. Called
    /// by the pool with `v` locked.
    fn evictable(&self, strong: &Arc<Storage>) -> bool {
        Arc::strong_count(strong) == 1
            && strong.version() == self.version
            && self.inputs.iter().all(|i| match i {
                Input::Pinned(p) => p.unmodified(),
                Input::Cell(..) => true,
            })
    }

    /// Take the storage out if it can be evicted and rebuilt later (the pool drops it).
    /// Never waits on the cell: one being read or rebuilt right now is skipped.
    pub(crate) fn try_evict(self: &Arc<Cell>) -> Option<Arc<Storage>> {
        let _secure = SECURE.lock();
        let mut v = self.value.try_lock()?;
        let s = v.strong.as_ref()?;
        if !self.evictable(s) || !secure(self) {
            return None;
        }
        v.strong.take()
    }

    /// Whether the storage is held here (not evicted or released).
    fn holds(&self) -> bool {
        self.value.lock().strong.is_some()
    }

    /// Whether the storage is resident and could be evicted now (for scoring).
    pub(crate) fn is_candidate(&self) -> bool {
        self.value
            .try_lock()
            .is_some_and(|v| v.strong.as_ref().is_some_and(|s| self.evictable(s)))
    }

    /// Mark the cell as listed in the pool; false if it already was. Pool lock held.
    pub(crate) fn enter_pool(&self) -> bool {
        !self.in_pool.swap(true, Ordering::Relaxed)
    }

    /// Mark the cell as no longer listed in the pool. Pool lock held.
    pub(crate) fn leave_pool(&self) {
        self.in_pool.store(false, Ordering::Relaxed);
    }

    /// Whether the storage is certainly not held here any more (evicted or released); a
    /// cell being read right now counts as held.
    pub(crate) fn is_released(&self) -> bool {
        self.value.try_lock().is_some_and(|v| v.strong.is_none())
    }

    /// Whether the storage is gone (it would have to be rebuilt to be read).
    pub(crate) fn is_evicted(&self) -> bool {
        self.value
            .try_lock()
            .is_some_and(|v| v.strong.is_none() && v.weak.strong_count() == 0)
    }

    pub(crate) fn last_use(&self) -> u64 {
        self.last_use.load(Ordering::Relaxed)
    }

    /// The cells this one is made from.
    pub(crate) fn input_cells(&self) -> impl Iterator<Item = &Arc<Cell>> {
        self.inputs.iter().filter_map(|i| match i {
            Input::Cell(c, ..) => Some(c),
            Input::Pinned(_) => None,
        })
    }

    /// The storage, rebuilt if it was evicted: the inputs first (those evicted too, oldest
    /// first, with an explicit stack: chains may be thousands of ops long), then the op.
    pub(crate) fn materialize(self: &Arc<Cell>) -> Result<Arc<Storage>> {
        if let Some(s) = self.resident() {
            return Ok(s);
        }
        // Each frame: a cell to rebuild and the values of its first inputs (held here, so
        // nothing this rebuild still needs can be evicted meanwhile).
        let mut stack: Vec<(Arc<Cell>, Vec<Tensor>)> = vec![(self.clone(), Vec::new())];
        loop {
            let Some((cell, done)) = stack.last_mut() else {
                unreachable!("the loop returns when the last frame is rebuilt")
            };
            if let Some(input) = cell.inputs.get(done.len()) {
                let who = cell.op.name();
                let value = match input {
                    Input::Pinned(p) => {
                        let Some(storage) = p.storage() else {
                            return Err(Error::checkpoint(
                                who,
                                "cannot rematerialise under the memory limit: an input that \
                                 cannot be recomputed was freed",
                            ));
                        };
                        let d = TensorData {
                            storage,
                            layout: p.layout.clone(),
                        };
                        saved::check(&d, p.version, who)?;
                        d
                    }
                    Input::Cell(c, layout, v) => match c.resident() {
                        Some(storage) => {
                            let d = TensorData {
                                storage,
                                layout: layout.clone(),
                            };
                            saved::check(&d, *v, who)?;
                            d
                        }
                        None => {
                            let c = c.clone();
                            stack.push((c, Vec::new()));
                            continue;
                        }
                    },
                };
                done.push(Tensor::from_data(value));
                continue;
            }
            let Some((cell, inputs)) = stack.pop() else {
                unreachable!("a frame was just inspected")
            };
            let storage = cell.rebuild(&inputs)?;
            drop(inputs);
            let Some((parent, done)) = stack.last_mut() else {
                return Ok(storage);
            };
            let Some(Input::Cell(_, layout, _)) = parent.inputs.get(done.len()) else {
                unreachable!("a frame is pushed only for a cell input")
            };
            done.push(Tensor::from_data(TensorData {
                storage,
                layout: layout.clone(),
            }));
        }
    }

    /// Run the op again on its inputs and keep the result as this cell's storage.
    fn rebuild(self: &Arc<Cell>, inputs: &[Tensor]) -> Result<Arc<Storage>> {
        let refs: Vec<&Tensor> = inputs.iter().collect();
        let name = self.op.name();
        let start = Instant::now();
        let out = {
            let _g = no_grad();
            let _r = crate::checkpoint::context::Replay::enter();
            crate::cpu::catch_oom(name, || self.op.forward(&refs))?
        };
        pool::on_rematerialize(self.device, start.elapsed());
        if out.layout() != &self.layout || out.dtype() != self.dtype {
            return Err(Error::checkpoint(
                name,
                format!(
                    "rematerialising {name} under the memory limit gave {} {} but the forward \
                     produced {} {}",
                    fmt_shape(out.shape()),
                    out.dtype(),
                    fmt_shape(&self.layout.shape),
                    self.dtype
                ),
            ));
        }
        let storage = out.storage().clone();
        drop(out);
        storage.set_version(self.version);
        let mut v = self.value.lock();
        // Another thread may have rebuilt it meanwhile: one copy is kept.
        if let Some(s) = v.strong.clone().or_else(|| v.weak.upgrade()) {
            return Ok(s);
        }
        if self.external.load(Ordering::Acquire) > 0 {
            v.strong = Some(storage.clone());
            pool::register(self);
        }
        v.weak = Arc::downgrade(&storage);
        self.last_use.store(pool::tick(), Ordering::Relaxed);
        Ok(storage)
    }
}

impl Drop for Cell {
    fn drop(&mut self) {
        pool::cell_dropped();
        // Chains of cells can be arbitrarily long: unlink them iteratively.
        fn take(inputs: &mut Vec<Input>, stack: &mut Vec<Arc<Cell>>) {
            for i in inputs.drain(..) {
                if let Input::Cell(c, ..) = i {
                    stack.push(c);
                }
            }
        }
        let mut stack: Vec<Arc<Cell>> = Vec::new();
        take(&mut self.inputs, &mut stack);
        while let Some(c) = stack.pop() {
            if let Ok(mut c) = Arc::try_unwrap(c) {
                take(&mut c.inputs, &mut stack);
            }
        }
    }
}

/// An external holder of a cell (a tensor handle or a saved slot): while any exists the
/// storage stays resident unless evicted; when the last goes, the storage is released.
pub(crate) struct CellRef(Arc<Cell>);

impl CellRef {
    fn new(cell: Arc<Cell>) -> CellRef {
        cell.external.fetch_add(1, Ordering::AcqRel);
        CellRef(cell)
    }

    /// The cell.
    pub(crate) fn cell(&self) -> &Arc<Cell> {
        &self.0
    }

    /// The value of the view `layout` of this cell, rebuilt if it was evicted.
    pub(crate) fn read(&self, layout: &Layout) -> Result<TensorData> {
        Ok(TensorData {
            storage: self.0.materialize()?,
            layout: layout.clone(),
        })
    }
}

impl Clone for CellRef {
    fn clone(&self) -> CellRef {
        CellRef::new(self.0.clone())
    }
}

impl Drop for CellRef {
    fn drop(&mut self) {
        if self.0.external.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        let released = {
            let _secure = SECURE.lock();
            // An evicted cell may need this one rebuilt: it must stay rebuildable, or (when an
            // input it cannot recompute is already gone) keep its storage.
            if self.0.needed.load(Ordering::Acquire) > 0 && !secure(&self.0) {
                return;
            }
            self.0.value.lock().strong.take()
        };
        drop(released);
    }
}

/// Make sure `cell` can be rebuilt after its storage leaves: hold every pinned input of it
/// and of its ancestors that are not resident, and mark resident ancestors as needed. False
/// (and nothing changed) when such an input is already gone. Call with `SECURE` held.
fn secure(cell: &Arc<Cell>) -> bool {
    let mut keep: Vec<(&Pinned, Arc<Storage>)> = Vec::new();
    let mut mark: Vec<&Arc<Cell>> = Vec::new();
    let mut done: Vec<&Cell> = Vec::new();
    let mut visit: Vec<&Cell> = vec![cell];
    while let Some(c) = visit.pop() {
        if c.secured.load(Ordering::Acquire) || done.iter().any(|d| std::ptr::eq(*d, c)) {
            continue;
        }
        for input in &c.inputs {
            match input {
                Input::Pinned(p) => match p.storage() {
                    Some(s) => keep.push((p, s)),
                    None => return false,
                },
                Input::Cell(a, ..) if a.holds() => mark.push(a),
                Input::Cell(a, ..) => visit.push(a),
            }
        }
        done.push(c);
    }
    for (p, s) in keep {
        *p.kept.lock() = Some(s);
    }
    for a in mark {
        a.needed.fetch_add(1, Ordering::AcqRel);
    }
    for c in done {
        c.secured.store(true, Ordering::Release);
    }
    true
}
