//! Recipes: how to recompute one checkpointed tensor from the op that produced it and that
//! op's inputs (themselves slots, so chains inside a scope replay in order).

use crate::autograd::node::Op;
use crate::checkpoint::live::LiveToken;
use crate::checkpoint::profiler::{self, Record};
use crate::checkpoint::slot::Slot;
use crate::checkpoint::touched;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::grad_mode::no_grad;
use crate::layout::{fmt_shape, Layout};
use crate::storage::Storage;
use crate::tensor::{Tensor, TensorData};
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
    layout: Layout,
    dtype: DType,
    /// The recomputed value, shared while more than one reader still needs it.
    cache: Mutex<Option<TensorData>>,
    readers: AtomicUsize,
    record: Option<Arc<Record>>,
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
            layout: out.layout.clone(),
            dtype: out.storage.dtype(),
            cache: Mutex::new(None),
            readers: AtomicUsize::new(0),
            record,
            _live: LiveToken::new(),
        })
    }

    pub(crate) fn add_reader(&self) {
        self.readers.fetch_add(1, Ordering::Relaxed);
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

    /// The tensor's value: cached, still alive, or recomputed.
    pub(crate) fn materialize(self: &Arc<Self>) -> Result<TensorData> {
        if let Some(c) = self.cache.lock().clone() {
            return Ok(c);
        }
        if let Some(storage) = self.original.upgrade() {
            if let Some(r) = &self.record {
                r.freeze();
            }
            return Ok(TensorData {
                storage,
                layout: self.layout.clone(),
            });
        }
        if let Some(r) = &self.record {
            r.freeze();
        }
        let inputs: Vec<Tensor> = self
            .inputs
            .iter()
            .map(|s| s.materialize())
            .collect::<Result<_>>()?;
        let refs: Vec<&Tensor> = inputs.iter().collect();
        let start = Instant::now();
        let out = {
            let _g = no_grad();
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
        let mut stack: Vec<Arc<Recipe>> = Vec::new();
        let take = |slots: &mut Vec<Slot>, stack: &mut Vec<Arc<Recipe>>| {
            for s in slots.drain(..) {
                if let Slot::Recompute(r) = s {
                    stack.push(r);
                }
            }
        };
        take(&mut self.inputs, &mut stack);
        while let Some(r) = stack.pop() {
            if let Ok(mut r) = Arc::try_unwrap(r) {
                take(&mut r.inputs, &mut stack);
            }
        }
    }
}
