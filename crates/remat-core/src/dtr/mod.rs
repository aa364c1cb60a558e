//! Dynamic tensor rematerialisation (Kirisame et al., ICLR 2021): train under a hard memory
//! limit without changing the model.
//!
//! While a limit is set on a device ([`set_memory_limit`]), every storage a recorded op
//! makes there gets a cell that knows its op and inputs. Saved tensors and tensor
//! handles hold the cell, so when an allocation would go over the limit the memory counters
//! ask the pool to evict storages that only cells hold (never leaves, parameters,
//! gradients, tensors the user holds, or the inputs of the running op), cheapest
//! `cost / (bytes × staleness)` first (staleness saturating after a few ticks). An evicted
//! storage is rebuilt by replaying its op the next time a backward (or a rebuild) reads it,
//! so gradients are the plain run's. Views share their base's cell: they are evicted and
//! rebuilt together. When even evicting everything possible does not make room, the op fails
//! with `Error::MemoryLimit` naming the smallest working set. The rebuilds of a step are
//! bounded against its forward (see `budget`): past the bound, eviction stops, so a limit too
//! tight for the graph fails (or, under a step's soft cap, overshoots) instead of thrashing.

mod budget;
mod cell;
mod pool;
mod step_cap;

pub use budget::{rebuild_bound, set_rebuild_bound, step_work, StepWork, DEFAULT_BOUND};
pub(crate) use cell::{CellRef, Input, Pinned};
pub use pool::EvictionStats;
pub(crate) use step_cap::BackwardScope;
pub use step_cap::{cap_until_backward, step_cap_active};

use crate::autograd::node::Op;
use crate::device::Device;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use crate::tensor_data::TensorData;
use std::sync::Arc;
use std::time::Duration;

/// Cap the bytes of live tensor storage on `device` at `limit` (None removes the cap). The
/// cap covers everything `memory_allocated(device)` counts, parameters included. While it
/// is set, ops evict and rebuild recomputable tensors to stay under it.
/// A step cap in force on the device (`cap_until_backward`) is cancelled: the limit set here
/// stays after the backward pass.
pub fn set_memory_limit(device: Device, limit: Option<usize>) {
    step_cap::cancel(device);
    install_evictor();
    budget::new_step(device);
    crate::memory::set_limit(device, limit);
}

/// Make the memory counters call the pool when an allocation would go over a limit.
fn install_evictor() {
    crate::memory::set_evictor(pool::evict);
}

/// The cap set on `device` with [`set_memory_limit`], if any (a step's cap from
/// [`cap_until_backward`] is not one: it is gone after the backward pass).
pub fn get_memory_limit(device: Device) -> Option<usize> {
    if step_cap_active(device) {
        return None;
    }
    crate::memory::memory_limit(device)
}

/// Restores the previous limit of its device when dropped (see [`memory_limit`]).
#[must_use = "the limit is lifted again when the guard is dropped"]
pub struct LimitGuard {
    device: Device,
    previous: Option<usize>,
}

impl Drop for LimitGuard {
    fn drop(&mut self) {
        set_memory_limit(self.device, self.previous);
    }
}

/// Set the limit of `device` until the returned guard is dropped (then the previous one is
/// back): Python's `with remat.memory_limit(...)`.
pub fn memory_limit(device: Device, limit: Option<usize>) -> LimitGuard {
    let previous = get_memory_limit(device);
    set_memory_limit(device, limit);
    LimitGuard { device, previous }
}

/// Live and peak bytes, the limit and the eviction counters of one device.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MemoryStats {
    /// Bytes of live tensor storage (`memory_allocated`).
    pub allocated: usize,
    /// The peak since start or the last reset (`max_memory_allocated`).
    pub peak: usize,
    /// The limit, if one is set.
    pub limit: Option<usize>,
    /// Evictions, rebuilds and their time since start or the last [`reset_eviction_stats`].
    pub eviction: EvictionStats,
    /// The current step's forward and rebuild work, and the stops of the rebuild bound.
    pub step: StepWork,
    /// The most bytes a soft cap was gone over by (since start or the last
    /// [`reset_eviction_stats`]).
    pub overshoot: usize,
}

/// Python's `remat.memory_stats(device)`.
pub fn memory_stats(device: Device) -> MemoryStats {
    MemoryStats {
        allocated: crate::memory::memory_allocated(device),
        peak: crate::memory::max_memory_allocated(device),
        limit: get_memory_limit(device),
        eviction: pool::stats(device),
        step: budget::step_work(device),
        overshoot: crate::memory::overshoot(device),
    }
}

/// Evictions and rematerialisations on `device` since start or the last
/// [`reset_eviction_stats`].
pub fn eviction_stats(device: Device) -> EvictionStats {
    pool::stats(device)
}

/// Zero the eviction counters of `device`.
pub fn reset_eviction_stats(device: Device) {
    pool::reset_stats(device);
    budget::reset_stops(device);
    crate::memory::reset_overshoot(device);
}

/// Evictable cells alive now (zero once every graph made under a limit is gone).
pub fn live_cells() -> usize {
    pool::live_cells()
}

/// Parse a byte count: a number of bytes, or a number with a unit (`"512KB"`, `"8MB"`,
/// `"1.5GB"`, `"2GiB"`; KB/MB/GB/TB are powers of 1024, as are KiB/MiB/GiB/TiB).
pub fn parse_bytes(text: &str) -> Result<usize> {
    let s = text.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        "t" | "tb" | "tib" => 1 << 40,
        _ => u64::MAX,
    };
    let value: Option<f64> = num.replace('_', "").parse().ok();
    match value {
        Some(v) if scale != u64::MAX && v.is_finite() && v >= 0.0 => {
            let bytes = v * scale as f64;
            if bytes < usize::MAX as f64 {
                Ok(bytes as usize)
            } else {
                Err(Error::value(
                    "set_memory_limit",
                    format!("{text:?} is more bytes than this machine can address"),
                ))
            }
        }
        _ => Err(Error::value(
            "set_memory_limit",
            format!(
                "expected a byte count such as 1000000, \"512KB\", \"8MB\" or \"2GB\", got \
                 {text:?}"
            ),
        )),
    }
}

/// A clock for an op's forward when its output may get a cell (a limit is set on the
/// inputs' device and nothing is checkpointing), so the cost of evicting it is known.
pub(crate) fn timer(
    inputs: &[&Tensor],
    mode: &crate::checkpoint::context::SaveMode,
) -> Option<std::time::Instant> {
    let device = inputs.first().map_or(Device::Cpu, |t| t.device());
    (active(device) && matches!(mode, crate::checkpoint::context::SaveMode::Normal))
        .then(std::time::Instant::now)
}

/// Whether a storage made now on `device` gets a cell.
pub(crate) fn active(device: Device) -> bool {
    crate::memory::memory_limit(device).is_some()
}

/// The cell of a recorded op's output `out` (made from `inputs` in `took`), when a limit is
/// set on its device: the cell of the input whose storage it shares (a view), or a new cell
/// replaying `op`. None when no limit is set.
pub(crate) fn cell_for_output(
    op: &Arc<dyn Op>,
    inputs: &[&Tensor],
    out: &TensorData,
    took: Option<Duration>,
) -> Option<CellRef> {
    if !active(out.storage.device()) {
        return None;
    }
    if let Some(base) = inputs
        .iter()
        .find(|t| Arc::ptr_eq(t.storage(), &out.storage))
    {
        return base.dtr_cell();
    }
    let cells = inputs
        .iter()
        .map(|t| {
            let version = t.storage().version();
            match t.dtr_cell() {
                Some(c) => Input::Cell(c.cell().clone(), t.layout().clone(), version),
                None => Input::Pinned(Pinned::new(t.data(), version, out.storage.nbytes())),
            }
        })
        .collect();
    // An op recorded after the fact has no time: its bytes stand in (about 1 GB/s).
    let ns = took.map_or(out.storage.nbytes() as u64, |d| d.as_nanos() as u64);
    budget::on_forward(out.storage.device(), ns);
    Some(cell::Cell::create(op.clone(), cells, out, ns))
}
