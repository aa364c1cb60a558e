//! Saved-tensor slots: how a node keeps what its backward needs. Checkpointing is nothing but
//! a choice of slot.

use crate::checkpoint::recipe::Recipe;
use crate::checkpoint::segment::Segment;
use crate::device::Device;
use crate::error::Result;
use crate::tensor::{Tensor, TensorData};
use std::sync::Arc;

/// One saved tensor.
pub(crate) enum Slot {
    /// The data itself, kept alive until the node's backward has run.
    Stored(TensorData),
    /// Not kept: recomputed from the op that produced it (tensor-level checkpoint, scope).
    Recompute(Arc<Recipe>),
    /// Not kept: the `usize`-th tensor saved inside a checkpoint segment, refilled by one
    /// re-run of the segment.
    Segment(Arc<Segment>, usize),
    /// Kept in host memory instead of on its device (`offload=True` segment inputs); copied
    /// back to the device when read.
    Offloaded { host: TensorData, device: Device },
}

impl Slot {
    /// A recompute slot: registers one more reader of the recipe's result.
    pub(crate) fn recompute(recipe: Arc<Recipe>) -> Slot {
        recipe.add_reader();
        Slot::Recompute(recipe)
    }

    /// The saved tensor, recomputing it if needed.
    pub(crate) fn materialize(&self) -> Result<Tensor> {
        Ok(Tensor::from_data(match self {
            Slot::Stored(d) => d.clone(),
            Slot::Recompute(r) => r.materialize()?,
            Slot::Segment(s, i) => s.get(*i)?,
            Slot::Offloaded { host, device } => {
                let _g = crate::grad_mode::no_grad();
                return crate::ops::to_device(&Tensor::from_data(host.clone()), *device);
            }
        }))
    }

    /// A host copy of device tensor `t` (a CPU tensor is kept as it is: offloading it would
    /// change nothing).
    pub(crate) fn offloaded(t: &Tensor) -> Result<Slot> {
        if t.device() == Device::Cpu {
            return Ok(Slot::Stored(t.data().clone()));
        }
        let _g = crate::grad_mode::no_grad();
        let host = crate::ops::to_device(&t.detach(), Device::Cpu)?;
        Ok(Slot::Offloaded {
            host: host.data().clone(),
            device: t.device(),
        })
    }

    /// Tell the producer this reader is done, so a recomputed value can be freed as soon as
    /// its last reader has read it.
    pub(crate) fn release(&self) {
        match self {
            Slot::Stored(_) => {}
            Slot::Recompute(r) => r.release_reader(),
            Slot::Segment(s, i) => s.release(*i),
            Slot::Offloaded { .. } => {}
        }
    }
}
