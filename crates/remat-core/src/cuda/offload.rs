//! Offloaded segment inputs (`offload=True`): a device tensor copied into pinned (page-locked)
//! host memory on the device's copy stream, so the copy overlaps the compute stream's work,
//! and copied back ahead of need during backward (prefetch).
//!
//! Ordering between the two streams of a device, all with explicit events:
//! - out: the copy stream waits for the compute stream (the tensor's producers), copies
//!   device → pinned and records `copied`. The device tensor is held until [`HostCopy::settle`]
//!   (the end of the segment's forward), which makes the compute stream wait for `copied`
//!   before dropping it: its block can then only be reused after the copy has read it.
//! - back: a block is allocated (ordered on the compute stream), the copy stream waits for the
//!   compute stream (earlier users of a reused block), copies pinned → device and records
//!   `ready`; the reader makes the compute stream wait for `ready`.
//! - pinned blocks are touched only by their device's copy stream, so reusing one (a pool by
//!   device and size) is ordered by that stream; they go back to the driver only after
//!   leaving the pool and a synchronisation of every device ([`release_pinned`], called by
//!   `empty_cache`).
//!
//! Prefetch: host copies are numbered in creation order. When backward reads one, the newest
//! older copy not read yet is copied back at once, so its transfer overlaps this segment's
//! recompute and backward (backward visits segments newest first). Host bytes are counted on
//! the CPU counters (like any host tensor); a prefetched device copy is counted on its device
//! from the moment its block is taken.

use super::context::{guarded, DeviceContext};
use super::launch;
use super::storage::{driver_error, round_size, CudaBuffer};
use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::tensor::Tensor;
use crate::tensor_data::TensorData;
use cudarc::driver::{result as cu, CudaEvent};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

/// A page-locked host block of `size` bytes (from `cuMemHostAlloc`).
struct PinnedBlock {
    ptr: *mut u8,
    size: usize,
}

// SAFETY: the block is plain host memory owned by whoever holds the struct; the driver only
// touches it through copies the owner queued.
unsafe impl Send for PinnedBlock {}

/// Free pinned blocks by (device ordinal, size).
type PinnedPool = HashMap<(usize, usize), Vec<PinnedBlock>>;

/// The pool (None until the first block is given back).
static PINNED: Mutex<Option<PinnedPool>> = Mutex::new(None);

/// A pinned block of at least `bytes` bytes for device `ctx`: a cached one, else a new one
/// (after returning the cache to the driver once if the first attempt fails).
fn take_pinned(op: &str, ctx: &DeviceContext, bytes: usize) -> Result<PinnedBlock> {
    let size = round_size(bytes);
    let key = (ctx.ordinal, size);
    if let Some(b) = PINNED
        .lock()
        .as_mut()
        .and_then(|m| m.get_mut(&key))
        .and_then(|v| v.pop())
    {
        return Ok(b);
    }
    let alloc = || {
        guarded(op, || {
            ctx.ctx
                .bind_to_thread()
                .map_err(|e| Error::device(op, e.to_string()))?;
            // SAFETY: a fresh allocation; only copies queued by the owner ever write it.
            unsafe { cu::malloc_host(size, cudarc::driver::sys::CU_MEMHOSTALLOC_PORTABLE) }
                .map(|p| PinnedBlock {
                    ptr: p as *mut u8,
                    size,
                })
                .map_err(|e| Error::OutOfMemory {
                    op: op.to_string(),
                    bytes,
                    device: format!("pinned host memory ({e})"),
                })
        })
    };
    match alloc() {
        Ok(b) => Ok(b),
        Err(_) => {
            release_pinned();
            alloc()
        }
    }
}

/// Give a pinned block back to the pool of device `ordinal`.
fn give_pinned(ordinal: usize, b: PinnedBlock) {
    PINNED
        .lock()
        .get_or_insert_with(HashMap::new)
        .entry((ordinal, b.size))
        .or_default()
        .push(b);
}

/// Return every pooled pinned block to the driver, after waiting for all queued work (a
/// block is pooled as soon as its last copy is queued, and that copy may still be running).
/// Returns the bytes released.
pub fn release_pinned() -> usize {
    let blocks: Vec<PinnedBlock> = PINNED
        .lock()
        .take()
        .map(|m| m.into_values().flatten().collect())
        .unwrap_or_default();
    if blocks.is_empty() {
        return 0;
    }
    let bytes = blocks.iter().map(|b| b.size).sum();
    if launch::synchronize_all().is_err() {
        // A failed device cannot promise its copies are done: keep (leak) the blocks.
        std::mem::forget(blocks);
        return 0;
    }
    // cuMemFreeHost needs a current context (blocks are portable: any device's will do).
    if let Some(c) = super::context::created().first() {
        let _ = c.ctx.bind_to_thread();
    }
    for b in blocks {
        // SAFETY: allocated by cuMemHostAlloc; taken out of the pool, and every copy queued
        // before that has finished (synchronised above).
        let _ = std::panic::catch_unwind(|| unsafe { cu::free_host(b.ptr as _) });
    }
    bytes
}

#[derive(Default)]
struct State {
    /// The device tensor being copied out and the event its copy completes at; held until
    /// the compute stream is ordered after that event.
    outgoing: Option<(TensorData, CudaEvent)>,
    /// A device copy made ahead of its read, and the event its copy completes at.
    prefetched: Option<(Tensor, CudaEvent)>,
    /// Whether backward has read this copy (prefetch skips it from then on).
    read: bool,
}

/// A device tensor kept in pinned host memory until backward reads it.
pub struct HostCopy {
    ctx: Arc<DeviceContext>,
    shape: Vec<usize>,
    dtype: DType,
    bytes: usize,
    host: Mutex<Option<PinnedBlock>>,
    state: Mutex<State>,
    seq: u64,
}

/// Host copies in creation order, for prefetching.
static QUEUE: Mutex<Vec<(u64, Weak<HostCopy>)>> = Mutex::new(Vec::new());
static NEXT_SEQ: AtomicU64 = AtomicU64::new(0);

fn event_error(op: &str, device: Device) -> impl Fn(cudarc::driver::DriverError) -> Error + '_ {
    move |e| driver_error(op, device, 0, e)
}

/// Start copying device tensor `t` to pinned host memory on its device's copy stream.
pub fn offload(op: &str, t: &Tensor) -> Result<Arc<HostCopy>> {
    let ctx = launch::buffer(op, t)?.context().clone();
    let device = ctx.device();
    let src = if t.is_contiguous() {
        t.clone()
    } else {
        launch::copy(op, t)?
    };
    let dtype = src.dtype();
    let bytes = src.numel() * dtype.size();
    let host = take_pinned(op, &ctx, bytes)?;
    let copy = ctx.copy_stream(op)?;
    let from = launch::buffer(op, &src)?.ptr_at(src.layout().offset);
    let copied = guarded(op, || {
        let produced = ctx
            .stream
            .record_event(None)
            .map_err(event_error(op, device))?;
        copy.wait(&produced).map_err(event_error(op, device))?;
        if bytes > 0 {
            // SAFETY: the block holds at least `bytes` bytes and outlives the copy (it is
            // reused only through this copy stream); the source range lies in `src`, which
            // is held until the compute stream has waited for `copied`.
            let dst = unsafe { std::slice::from_raw_parts_mut(host.ptr, bytes) };
            unsafe { cu::memcpy_dtoh_async(dst, from, copy.cu_stream()) }
                .map_err(|e| driver_error(op, device, bytes, e))?;
        }
        copy.record_event(None).map_err(event_error(op, device))
    });
    let copied = match copied {
        Ok(e) => e,
        Err(e) => {
            give_pinned(ctx.ordinal, host);
            return Err(e);
        }
    };
    crate::memory::on_alloc(Device::Cpu, bytes);
    let h = Arc::new(HostCopy {
        ctx,
        shape: src.shape().to_vec(),
        dtype,
        bytes,
        host: Mutex::new(Some(host)),
        state: Mutex::new(State {
            outgoing: Some((src.data().clone(), copied)),
            ..State::default()
        }),
        seq: NEXT_SEQ.fetch_add(1, Ordering::Relaxed),
    });
    let mut q = QUEUE.lock();
    q.retain(|(_, w)| w.strong_count() > 0);
    q.push((h.seq, Arc::downgrade(&h)));
    Ok(h)
}

/// Of `entries` (sequence number, unread), the newest unread one older than `seq`.
fn newest_unread_before(entries: impl Iterator<Item = (u64, bool)>, seq: u64) -> Option<u64> {
    entries
        .filter(|&(s, unread)| s < seq && unread)
        .map(|(s, _)| s)
        .max()
}

/// Prefetch the newest unread host copy older than `seq` (one ahead of backward).
fn prefetch_before(op: &str, seq: u64) {
    let alive: Vec<Arc<HostCopy>> = QUEUE
        .lock()
        .iter()
        .filter_map(|(_, w)| w.upgrade())
        .collect();
    let pick = newest_unread_before(alive.iter().map(|h| (h.seq, !h.state.lock().read)), seq);
    if let Some(h) = alive.into_iter().find(|h| Some(h.seq) == pick) {
        // A failed prefetch (e.g. no device memory to spare) is not an error: the read will
        // copy synchronously and report what goes wrong then.
        let _ = h.prefetch(op);
    }
}

impl HostCopy {
    /// The device the tensor came from.
    pub fn device(&self) -> Device {
        self.ctx.device()
    }

    /// Order the compute stream after the outgoing copy and drop the device tensor (its
    /// memory is free from here on). Idempotent.
    pub fn settle(&self, op: &str) -> Result<()> {
        let out = self.state.lock().outgoing.take();
        if let Some((data, copied)) = out {
            let device = self.device();
            let waited = guarded(op, || {
                self.ctx
                    .stream
                    .wait(&copied)
                    .map_err(event_error(op, device))
            });
            if waited.is_err() {
                // Never free a block a copy may still read.
                let _ = guarded(op, || copied.synchronize().map_err(event_error(op, device)));
            }
            drop(data);
            waited?;
        }
        Ok(())
    }

    /// Start copying the host data back into a new device buffer on the copy stream.
    fn start_fetch(&self, op: &str) -> Result<(Tensor, CudaEvent)> {
        let device = self.device();
        let numel = crate::layout::numel(&self.shape);
        let buf = CudaBuffer::alloc(op, &self.ctx, numel, self.dtype)?;
        let copy = self.ctx.copy_stream(op)?;
        let host = self.host.lock();
        let block = host
            .as_ref()
            .ok_or_else(|| Error::device(op, "offloaded tensor has no host copy"))?;
        let to = buf.ptr();
        let ready = guarded(op, || {
            let free = self
                .ctx
                .stream
                .record_event(None)
                .map_err(event_error(op, device))?;
            copy.wait(&free).map_err(event_error(op, device))?;
            if self.bytes > 0 {
                // SAFETY: the block holds `bytes` bytes written by the outgoing copy, which
                // was queued earlier on this same stream; `buf` holds as many.
                let src = unsafe { std::slice::from_raw_parts(block.ptr, self.bytes) };
                unsafe { cu::memcpy_htod_async(to, src, copy.cu_stream()) }
                    .map_err(|e| driver_error(op, device, self.bytes, e))?;
            }
            copy.record_event(None).map_err(event_error(op, device))
        })?;
        Ok((launch::tensor(buf, &self.shape), ready))
    }

    /// Copy back to the device now (on the copy stream) unless already done or read.
    pub fn prefetch(&self, op: &str) -> Result<()> {
        // Held across the copy's start, so two threads cannot both prefetch.
        let mut st = self.state.lock();
        if st.prefetched.is_none() {
            st.prefetched = Some(self.start_fetch(op)?);
        }
        Ok(())
    }

    /// The tensor back on its device (a prefetched copy if one is ready, else copied now),
    /// with the compute stream ordered after the copy; then prefetch the next older one.
    pub fn fetch(&self, op: &str) -> Result<Tensor> {
        self.settle(op)?;
        let pre = self.state.lock().prefetched.take();
        let (t, ready) = match pre {
            Some(p) => p,
            None => self.start_fetch(op)?,
        };
        let device = self.device();
        guarded(op, || {
            self.ctx
                .stream
                .wait(&ready)
                .map_err(event_error(op, device))
        })?;
        self.state.lock().read = true;
        prefetch_before(op, self.seq);
        Ok(t)
    }
}

impl Drop for HostCopy {
    fn drop(&mut self) {
        let st = std::mem::take(self.state.get_mut());
        let stream = self.ctx.stream.clone();
        let wait_then_drop = |ev: CudaEvent, what: Box<dyn std::any::Any>| {
            let ok = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                stream.wait(&ev).is_ok() || ev.synchronize().is_ok()
            }));
            if matches!(ok, Ok(true)) {
                drop(what);
            } else {
                // The driver cannot order the free after the copy: leak the block rather
                // than risk a copy writing into reused memory.
                std::mem::forget(what);
            }
        };
        if let Some((data, copied)) = st.outgoing {
            wait_then_drop(copied, Box::new(data));
        }
        if let Some((t, ready)) = st.prefetched {
            wait_then_drop(ready, Box::new(t));
        }
        if let Some(b) = self.host.get_mut().take() {
            give_pinned(self.ctx.ordinal, b);
        }
        crate::memory::on_free(Device::Cpu, self.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Prefetch picks the newest unread copy older than the one just read, never a newer or
    /// an already read one.
    #[test]
    fn prefetch_picks_the_next_segment_backward_visits() {
        let pick = |v: &[(u64, bool)], seq| newest_unread_before(v.iter().copied(), seq);
        assert_eq!(pick(&[(1, true), (2, true), (3, true)], 3), Some(2));
        assert_eq!(pick(&[(1, true), (2, false), (3, false)], 3), Some(1));
        assert_eq!(pick(&[(4, true), (5, true)], 3), None);
        assert_eq!(pick(&[(1, false)], 3), None);
        assert_eq!(pick(&[], 0), None);
    }

    /// Without a GPU the pool is empty and releasing it is a no-op.
    #[test]
    fn pinned_pool_starts_empty() {
        if !crate::cuda::is_available() {
            assert_eq!(release_pinned(), 0);
        }
    }
}
