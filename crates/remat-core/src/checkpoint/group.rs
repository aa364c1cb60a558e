//! `CheckpointGroup`: several outputs of one function that share a single recompute, with
//! counts of checkpoints, recomputes and bytes saved.

use crate::checkpoint::inputs::SegmentInputs;
use crate::checkpoint::segment::{checkpoint_segment_with, SegmentFn, SegmentOptions};
use crate::error::Result;
use crate::tensor::Tensor;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Counters shared by the segments of a group.
#[derive(Default)]
pub(crate) struct GroupStats {
    checkpoints: AtomicUsize,
    recomputes: AtomicUsize,
    bytes_saved: AtomicUsize,
}

impl GroupStats {
    pub(crate) fn on_checkpoint(&self, bytes: usize) {
        self.checkpoints.fetch_add(1, Ordering::Relaxed);
        self.bytes_saved.fetch_add(bytes, Ordering::Relaxed);
    }
    pub(crate) fn on_recompute(&self) {
        self.recomputes.fetch_add(1, Ordering::Relaxed);
    }
}

/// A named group of checkpointed calls whose outputs share one recompute per call.
pub struct CheckpointGroup {
    name: Option<String>,
    preserve_rng_state: bool,
    offload: bool,
    stats: Arc<GroupStats>,
}

impl CheckpointGroup {
    /// A new, empty group.
    pub fn new(name: Option<String>, preserve_rng_state: bool, offload: bool) -> Self {
        CheckpointGroup {
            name,
            preserve_rng_state,
            offload,
            stats: Arc::default(),
        }
    }

    /// Run `f` on `inputs` checkpointed: all its outputs share one recompute. `inputs` is a
    /// slice, array or `Vec` of tensors, one tensor, or a tuple of tensor references:
    /// `group.checkpoint_fn((&a, &b), |t| Ok(vec![ops::mul(&t[0], &t[1])?]))`.
    pub fn checkpoint_fn<I, F>(&self, inputs: I, f: F) -> Result<Vec<Tensor>>
    where
        I: SegmentInputs,
        F: Fn(&[Tensor]) -> Result<Vec<Tensor>> + Send + Sync + 'static,
    {
        self.checkpoint_shared(Arc::new(f), &inputs.into_tensors())
    }

    /// [`CheckpointGroup::checkpoint_fn`] for a function already behind an `Arc` (the Python
    /// bindings hand one over).
    pub fn checkpoint_shared(&self, f: SegmentFn, inputs: &[Tensor]) -> Result<Vec<Tensor>> {
        let opts = SegmentOptions {
            name: self.name.clone(),
            preserve_rng_state: self.preserve_rng_state,
            offload: self.offload,
            group: Some(self.stats.clone()),
            kind: "group",
            ..SegmentOptions::default()
        };
        checkpoint_segment_with(f, inputs, &opts)
    }

    /// `checkpoint_fn` for a closure over a slice of inputs.
    pub fn checkpoint_fn_flex<F>(&self, inputs: &[Tensor], f: F) -> Result<Vec<Tensor>>
    where
        F: Fn(&[Tensor]) -> Result<Vec<Tensor>> + Send + Sync + 'static,
    {
        self.checkpoint_fn(inputs, f)
    }

    /// A checkpointed function of two outputs, returned as a pair; both share one
    /// recompute. Takes its inputs in any [`SegmentInputs`] form.
    pub fn checkpoint_fn_flex2<I, F>(&self, inputs: I, f: F) -> Result<(Tensor, Tensor)>
    where
        I: SegmentInputs,
        F: Fn(&[Tensor]) -> Result<(Tensor, Tensor)> + Send + Sync + 'static,
    {
        let out = self.checkpoint_fn(inputs, move |t| {
            let (a, b) = f(t)?;
            Ok(vec![a, b])
        })?;
        match <[Tensor; 2]>::try_from(out) {
            Ok([a, b]) => Ok((a, b)),
            Err(_) => Err(crate::Error::checkpoint(
                "checkpoint_fn_flex2",
                "expected two outputs",
            )),
        }
    }

    /// A checkpointed function of three outputs, returned as a triple; all share one
    /// recompute. Takes its inputs in any [`SegmentInputs`] form.
    pub fn checkpoint_fn_flex3<I, F>(&self, inputs: I, f: F) -> Result<(Tensor, Tensor, Tensor)>
    where
        I: SegmentInputs,
        F: Fn(&[Tensor]) -> Result<(Tensor, Tensor, Tensor)> + Send + Sync + 'static,
    {
        let out = self.checkpoint_fn(inputs, move |t| {
            let (a, b, c) = f(t)?;
            Ok(vec![a, b, c])
        })?;
        match <[Tensor; 3]>::try_from(out) {
            Ok([a, b, c]) => Ok((a, b, c)),
            Err(_) => Err(crate::Error::checkpoint(
                "checkpoint_fn_flex3",
                "expected three outputs",
            )),
        }
    }

    /// [`CheckpointGroup::checkpoint_fn_flex2`] over a slice of inputs.
    pub fn checkpoint_fn2<F>(&self, inputs: &[Tensor], f: F) -> Result<(Tensor, Tensor)>
    where
        F: Fn(&[Tensor]) -> Result<(Tensor, Tensor)> + Send + Sync + 'static,
    {
        self.checkpoint_fn_flex2(inputs, f)
    }

    /// [`CheckpointGroup::checkpoint_fn_flex3`] over a slice of inputs.
    pub fn checkpoint_fn3<F>(&self, inputs: &[Tensor], f: F) -> Result<(Tensor, Tensor, Tensor)>
    where
        F: Fn(&[Tensor]) -> Result<(Tensor, Tensor, Tensor)> + Send + Sync + 'static,
    {
        self.checkpoint_fn_flex3(inputs, f)
    }

    /// Calls checkpointed through this group.
    pub fn checkpoint_count(&self) -> usize {
        self.stats.checkpoints.load(Ordering::Relaxed)
    }
    /// Recomputes run for this group's calls.
    pub fn recompute_count(&self) -> usize {
        self.stats.recomputes.load(Ordering::Relaxed)
    }
    /// Bytes the group's calls did not keep.
    pub fn memory_saved(&self) -> usize {
        self.stats.bytes_saved.load(Ordering::Relaxed)
    }
    /// The group's name.
    pub fn name(&self) -> Option<&str> {
        self.name.as_deref()
    }
}
