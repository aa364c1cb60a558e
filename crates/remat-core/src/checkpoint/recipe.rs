//! Recipes: how to recompute one checkpointed tensor from the op that produced it and that
//! op's inputs (themselves slots, so chains inside a scope replay in order).

use crate::autograd::node::Op;
use crate::autograd::saved;
use crate::checkpoint::live::LiveToken;
use crate::checkpoint::profiler::{self, RecordHandle};
use crate::checkpoint::slot::{self, Slot};
use crate::checkpoint::touched;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::grad_mode::no_grad;
use crate::layout::{fmt_shape, Layout};
use crate::storage::Storage;
use crate::tensor::Tensor;
use crate::tensor_data::TensorData;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::Instant;

/// How to rebuild one tensor that was not kept.
pub(crate) struct Recipe {
    op: Arc<dyn Op>,
    inputs: Vec<Slot>,
    /// The forward's storage: if something else still keeps it alive, backward reuses it
    /// instead of recomputing.
    original: Weak<Storage>,
    /// The original storage's version when the recipe was made: the value it replays.
    version: u64,
    layout: Layout,
    dtype: DType,
    /// The recomputed value, shared while more than one reader still needs it.
    cache: Mutex<Option<TensorData>>,
    readers: AtomicUsize,
    record: Option<RecordHandle>,
    _live: LiveToken,
}

impl Recipe {
    pub(crate) fn new(
        op: Arc<dyn Op>,
        inputs: Vec<Slot>,
        out: &TensorData,
        kind: &'static str,
    ) -> Arc<Recipe> {
        let record = profiler::new_record(op.name().to_string(), kind);
        if let Some(r) = &record {
            r.track_storage(&out.storage);
        }
        Arc::new(Recipe {
            op,
            inputs,
            original: Arc::downgrade(&out.storage),
            version: out.storage.version(),
            layout: out.layout.clone(),
            dtype: out.storage.dtype(),
            cache: Mutex::new(None),
            readers: AtomicUsize::new(0),
            record,
            _live: LiveToken::new(),
        })
    }

    /// One more reader of the recomputed value; `keeps` when the reader is a node or a
    /// segment (a plain run would have kept the value), not another recipe.
    pub(crate) fn add_reader(&self, keeps: bool) {
        self.readers.fetch_add(1, Ordering::Relaxed);
        if keeps {
            if let Some(r) = &self.record {
                r.mark_kept();
            }
        }
    }

    pub(crate) fn release_reader(&self) {
        let before = self.readers.fetch_sub(1, Ordering::Relaxed);
        if before <= 1 {
            self.readers.store(0, Ordering::Relaxed);
            self.clear_cache();
        }
    }

    pub(crate) fn clear_cache(&self) {
        if self.cache.lock().take().is_some() {
            crate::checkpoint::live::cache_dropped();
        }
    }

    /// The inputs, taken out (for dropping chains iteratively).
    pub(crate) fn take_inputs(&mut self) -> Vec<Slot> {
        std::mem::take(&mut self.inputs)
    }

    /// The version of the value a reader sees now: the original storage's, or, once it is
    /// gone, the one the recipe replays.
    pub(crate) fn current_version(&self) -> u64 {
        self.original
            .upgrade()
            .map_or(self.version, |s| s.version())
    }

    /// Whether the value is still the one the recipe replays (nothing wrote into it since
    /// the recipe was made): only then may a new reader keep the recipe instead of the data.
    pub(crate) fn is_current(&self) -> bool {
        self.current_version() == self.version
    }

    /// The value without recomputing, for a reader (`who`) that saw it at version `seen`:
    /// the forward's storage while it is alive (an error when it was written in place since
    /// the reader saved it), else the cached recompute; None when it must be recomputed. A
    /// recompute gives the value at the recipe's own version, so a reader that saw another
    /// one gets an error instead of a different value.
    fn available(&self, seen: u64, who: &str) -> Result<Option<TensorData>> {
        if let Some(storage) = self.original.upgrade() {
            let data = TensorData {
                storage,
                layout: self.layout.clone(),
            };
            saved::check(&data, seen, who)?;
            if let Some(r) = &self.record {
                r.freeze();
            }
            return Ok(Some(data));
        }
        if seen != self.version {
            return Err(saved::modified(
                who,
                self.dtype,
                &self.layout.shape,
                self.version,
                seen,
            ));
        }
        Ok(self.cache.lock().clone())
    }

    /// The tensor's value for a reader (`who`) that saw it at version `seen`: still alive,
    /// cached, or recomputed. Chains of recipes (a scope of any length) are replayed with an
    /// explicit work stack, oldest first, never by recursion. A value or input written in
    /// place since it was saved is an error, never a different value.
    pub(crate) fn materialize(self: &Arc<Self>, seen: u64, who: &str) -> Result<TensorData> {
        if let Some(d) = self.available(seen, who)? {
            return Ok(d);
        }
        // Each frame: a recipe to recompute and the values of its first inputs.
        let mut stack: Vec<(Arc<Recipe>, Vec<Tensor>)> = vec![(self.clone(), Vec::new())];
        loop {
            let Some((recipe, done)) = stack.last_mut() else {
                unreachable!("the loop returns when the last frame is computed")
            };
            if let Some(slot) = recipe.inputs.get(done.len()) {
                let who = recipe.op.name();
                let value = match slot {
                    Slot::Recompute(r, seen) => match r.available(*seen, who)? {
                        Some(d) => Tensor::from_data(d),
                        None => {
                            let r = r.clone();
                            stack.push((r, Vec::new()));
                            continue;
                        }
                    },
                    other => other.materialize(who)?,
                };
                done.push(value);
                continue;
            }
            let Some((recipe, inputs)) = stack.pop() else {
                unreachable!("a frame was just inspected")
            };
            let data = recipe.recompute(&inputs)?;
            drop(inputs);
            match stack.last_mut() {
                Some((_, done)) => done.push(Tensor::from_data(data)),
                None => return Ok(data),
            }
        }
    }

    /// Run the op again on its (materialised) inputs, check the result against the forward
    /// and cache it while more than one reader needs it.
    fn recompute(self: &Arc<Self>, inputs: &[Tensor]) -> Result<TensorData> {
        if let Some(r) = &self.record {
            r.freeze();
        }
        let refs: Vec<&Tensor> = inputs.iter().collect();
        let start = Instant::now();
        let out = {
            let _g = no_grad();
            let _r = super::context::Replay::enter();
            self.op.forward(&refs).map_err(|e| {
                Error::checkpoint(
                    "checkpoint",
                    format!("recomputing {} failed: {e}", self.op.name()),
                )
            })?
        };
        if out.shape() != self.layout.shape.as_slice() || out.dtype() != self.dtype {
            return Err(Error::checkpoint(
                "checkpoint",
                format!(
                    "recomputed {} has shape {} {} but the forward produced {} {}",
                    self.op.name(),
                    fmt_shape(out.shape()),
                    out.dtype(),
                    fmt_shape(&self.layout.shape),
                    self.dtype
                ),
            ));
        }
        profiler::on_recompute(self.record.as_deref(), start.elapsed());
        let data = out.data().clone();
        if self.readers.load(Ordering::Relaxed) > 1 {
            let mut c = self.cache.lock();
            if c.is_none() {
                crate::checkpoint::live::cache_filled();
            }
            *c = Some(data.clone());
            touched::recipe(self);
        }
        Ok(data)
    }
}

impl Drop for Recipe {
    fn drop(&mut self) {
        self.clear_cache();
        // Scope chains can be long: unlink the recipes they point to iteratively.
        slot::drop_iteratively(std::mem::take(&mut self.inputs));
    }
}
