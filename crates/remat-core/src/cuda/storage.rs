//! Device buffers: the CUDA variant of a storage, copies between host and device, and the
//! caching allocator. Memory is allocated on the device's stream (stream-ordered), so freeing
//! a buffer that a queued kernel still reads is safe.
//!
//! Caching: a dropped buffer's block goes to a pool keyed by (device, rounded size) instead
//! of back to the driver, and the next allocation of that rounded size reuses it. Kernels run
//! on the device's one compute stream, so work queued on a reused block is ordered after
//! everything that used it before (the copy stream of `offload` orders itself against the
//! compute stream with events before a block it used can return here). The byte counters (`memory::on_alloc`/`on_free`, done by `Storage`) count
//! live tensor bytes only, never the cache. A driver out-of-memory first returns the cached
//! blocks of that device and retries once; [`empty_cache`] returns all of them.

use super::context::{guarded, DeviceContext};
use crate::device::Device;
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use cudarc::driver::{CudaSlice, DevicePtr, DriverError};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::mem::ManuallyDrop;
use std::sync::Arc;

/// Where a buffer's bytes come from.
enum Memory {
    /// A block of [`round_size`] bytes (at least one, so empty tensors still have a valid
    /// allocation) from the caching allocator; handed back to the cache on drop.
    Pooled(ManuallyDrop<CudaSlice<u8>>),
    /// Memory another library owns (a DLPack import): the owner (which calls the producer's
    /// deleter) is dropped with the buffer; the bytes never enter the cache.
    External {
        ptr: u64,
        _owner: Box<dyn std::any::Any + Send + Sync>,
    },
}

/// A typed, contiguous buffer in GPU memory.
pub struct CudaBuffer {
    memory: Memory,
    len: usize,
    dtype: DType,
    ctx: Arc<DeviceContext>,
}

/// Free blocks by (device ordinal, rounded size in bytes).
type BlockPool = HashMap<(usize, usize), Vec<CudaSlice<u8>>>;

/// The cached free blocks (None until the first buffer is dropped).
static CACHE: Mutex<Option<BlockPool>> = Mutex::new(None);

/// The block size an allocation of `bytes` gets: a multiple of 512 bytes below 1 MiB, of
/// 2 MiB from there (so blocks of nearby sizes are shared without wasting much).
pub fn round_size(bytes: usize) -> usize {
    const SMALL: usize = 512;
    const LARGE: usize = 2 << 20;
    let b = bytes.max(1);
    if b < (1 << 20) {
        b.div_ceil(SMALL) * SMALL
    } else {
        b.div_ceil(LARGE).saturating_mul(LARGE)
    }
}

/// A cached block of exactly `size` bytes on device `ordinal`, if any.
fn take_cached(ordinal: usize, size: usize) -> Option<CudaSlice<u8>> {
    CACHE
        .lock()
        .as_mut()
        .and_then(|m| m.get_mut(&(ordinal, size)))
        .and_then(|v| v.pop())
}

/// Release the cached blocks of device `ordinal` (all devices with None) to the driver;
/// returns how many bytes were released.
pub fn release_cached(ordinal: Option<usize>) -> usize {
    let blocks: Vec<CudaSlice<u8>> = {
        let mut guard = CACHE.lock();
        let Some(m) = guard.as_mut() else {
            return 0;
        };
        let keys: Vec<(usize, usize)> = m
            .keys()
            .filter(|(o, _)| ordinal.is_none_or(|w| *o == w))
            .copied()
            .collect();
        keys.into_iter()
            .filter_map(|k| m.remove(&k))
            .flatten()
            .collect()
    };
    let bytes = blocks.iter().map(|b| b.len()).sum();
    // Dropping outside the lock: each drop queues a stream-ordered free. A panic inside the
    // driver wrapper must not unwind into the engine.
    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        for b in blocks {
            // cudarc's drop calls cuMemFreeAsync on the legacy stream without binding a
            // context: make the block's own context current (this thread may have none, or
            // another device's), else the free fails and its error surfaces in a later call.
            // SAFETY: the context is alive (the block holds it).
            let _ = unsafe { cudarc::driver::result::ctx::set_current(b.context().cu_ctx()) };
            drop(b);
        }
    }));
    bytes
}

/// Bytes held in the cache (all devices), for tests and diagnostics.
pub fn cached_bytes() -> usize {
    CACHE
        .lock()
        .as_ref()
        .map_or(0, |m| m.values().flatten().map(|b| b.len()).sum())
}

/// Return every cached block on every device to the driver and wait for the frees.
pub fn empty_cache() -> Result<()> {
    release_cached(None);
    super::launch::synchronize_all()
}

impl Drop for CudaBuffer {
    fn drop(&mut self) {
        let Memory::Pooled(slice) = &mut self.memory else {
            return; // External: the owner field is dropped after this, calling the deleter
        };
        // SAFETY: the slice is taken exactly once, here; `self` is not used afterwards.
        let slice = unsafe { ManuallyDrop::take(slice) };
        let key = (self.ctx.ordinal, slice.len());
        CACHE
            .lock()
            .get_or_insert_with(HashMap::new)
            .entry(key)
            .or_default()
            .push(slice);
    }
}

/// A driver error as the engine's error: OOM as `OutOfMemory`, the rest as `DeviceError`.
pub(crate) fn driver_error(op: &str, device: Device, bytes: usize, e: DriverError) -> Error {
    if e.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY {
        Error::OutOfMemory {
            op: op.to_string(),
            bytes,
            device: device.to_string(),
        }
    } else {
        Error::device(op, format!("{device}: {e}"))
    }
}

impl CudaBuffer {
    /// An uninitialised buffer of `len` elements of `dtype` (every kernel that allocates one
    /// writes all of it).
    /// Half dtypes are refused here, the one place every device buffer comes from: the CUDA
    /// kernels are generated for float32, float64 and the integer types only.
    pub fn alloc(op: &str, ctx: &Arc<DeviceContext>, len: usize, dtype: DType) -> Result<Self> {
        if dtype.is_half() {
            return Err(Error::dtype(
                op,
                format!("{dtype} tensors on cuda are not supported yet; keep them on the cpu"),
            ));
        }
        let bytes = len
            .checked_mul(dtype.size())
            .ok_or_else(|| Error::shape(op, "tensor too large"))?;
        let device = ctx.device();
        let size = round_size(bytes);
        let slice = match take_cached(ctx.ordinal, size) {
            Some(s) => s,
            None => {
                let fresh = || {
                    guarded(op, || {
                        // SAFETY: callers fully overwrite the buffer before anything reads it.
                        unsafe { ctx.stream.alloc::<u8>(size) }
                            .map_err(|e| driver_error(op, device, bytes, e))
                    })
                };
                match fresh() {
                    Err(Error::OutOfMemory { .. }) => {
                        // Give the cached blocks of this device back, wait until the frees
                        // have happened, and try once more.
                        release_cached(Some(ctx.ordinal));
                        ctx.synchronize(op)?;
                        fresh()?
                    }
                    r => r?,
                }
            }
        };
        Ok(CudaBuffer {
            memory: Memory::Pooled(ManuallyDrop::new(slice)),
            len,
            dtype,
            ctx: ctx.clone(),
        })
    }

    /// A buffer over device memory another library owns (a DLPack import): `len` elements of
    /// `dtype` at `ptr` on `ctx`'s device. `owner` is dropped with the buffer (it releases the
    /// memory to its producer); the bytes are never cached or freed here.
    ///
    /// # Safety
    /// `ptr` must address `len` elements of `dtype` on this device, valid until `owner` is
    /// dropped.
    pub unsafe fn external(
        ctx: &Arc<DeviceContext>,
        ptr: u64,
        len: usize,
        dtype: DType,
        owner: Box<dyn std::any::Any + Send + Sync>,
    ) -> Self {
        CudaBuffer {
            memory: Memory::External { ptr, _owner: owner },
            len,
            dtype,
            ctx: ctx.clone(),
        }
    }

    /// A device copy of a host slice.
    pub fn from_host<T: Scalar>(op: &str, ctx: &Arc<DeviceContext>, host: &[T]) -> Result<Self> {
        let buf = Self::alloc(op, ctx, host.len(), T::DTYPE)?;
        if !host.is_empty() {
            let bytes = std::mem::size_of_val(host);
            // SAFETY: a T slice viewed as its bytes (T is a plain number).
            let raw = unsafe { std::slice::from_raw_parts(host.as_ptr() as *const u8, bytes) };
            let device = ctx.device();
            guarded(op, || {
                // The raw copy below needs the context current on this thread (a cached block
                // was taken without any driver call that would have bound it).
                ctx.ctx
                    .bind_to_thread()
                    .map_err(|e| driver_error(op, device, bytes, e))?;
                // SAFETY: the destination holds at least `bytes` bytes; the copy is queued on
                // the buffer's stream and `raw` outlives it (cudarc synchronises host copies
                // of pageable memory before returning).
                unsafe {
                    cudarc::driver::result::memcpy_htod_async(
                        buf.ptr(),
                        raw,
                        ctx.stream.cu_stream(),
                    )
                }
                .map_err(|e| driver_error(op, device, bytes, e))?;
                ctx.stream
                    .synchronize()
                    .map_err(|e| driver_error(op, device, bytes, e))
            })?;
        }
        Ok(buf)
    }

    /// A device copy of host 64-bit integers (class indices for the loss kernels), stored
    /// bit for bit in a buffer typed float64 (the same width). Never wrapped in a tensor:
    /// only kernels that read `long long*` see it.
    pub fn from_host_i64(op: &str, ctx: &Arc<DeviceContext>, host: &[i64]) -> Result<Self> {
        let bits: Vec<f64> = host.iter().map(|&i| f64::from_bits(i as u64)).collect();
        Self::from_host(op, ctx, &bits)
    }

    /// The elements `[offset, offset + n)` copied to a host vector (waits for queued work).
    pub fn to_host<T: Scalar>(&self, op: &str, offset: usize, n: usize) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype || offset + n > self.len {
            return Err(Error::dtype(op, "device copy of the wrong dtype or range"));
        }
        let mut out = crate::cpu::alloc::alloc::<T>(n);
        if n == 0 {
            return Ok(out);
        }
        let bytes = n * std::mem::size_of::<T>();
        let device = self.device();
        // SAFETY: `out` has room for n elements; viewed as bytes for the copy.
        let raw = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr() as *mut u8, bytes) };
        guarded(op, || {
            // The raw copy below needs the context current on this thread.
            self.ctx
                .ctx
                .bind_to_thread()
                .map_err(|e| driver_error(op, device, bytes, e))?;
            let src = self.ptr() + (offset * std::mem::size_of::<T>()) as u64;
            // SAFETY: the source range lies inside the buffer; we synchronise before `raw`
            // is read.
            unsafe {
                cudarc::driver::result::memcpy_dtoh_async(raw, src, self.ctx.stream.cu_stream())
            }
            .map_err(|e| driver_error(op, device, bytes, e))?;
            self.ctx
                .stream
                .synchronize()
                .map_err(|e| driver_error(op, device, bytes, e))
        })?;
        Ok(out)
    }

    /// The raw device address of the first element.
    pub fn ptr(&self) -> u64 {
        match &self.memory {
            Memory::Pooled(slice) => {
                // One stream per device: no cross-stream events to record, the guard is a
                // no-op.
                let (p, _sync) = slice.device_ptr(&self.ctx.stream);
                p
            }
            Memory::External { ptr, .. } => *ptr,
        }
    }
    /// The device address of element `offset`.
    pub fn ptr_at(&self, offset: usize) -> u64 {
        self.ptr() + (offset * self.dtype.size()) as u64
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether the buffer holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    /// The device.
    pub fn device(&self) -> Device {
        self.ctx.device()
    }
    /// The device's context.
    pub fn context(&self) -> &Arc<DeviceContext> {
        &self.ctx
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Block sizes cover the request, are shared by nearby sizes, and the cache starts
    /// empty (no GPU work is needed for either).
    #[test]
    fn block_sizes_round_up() {
        assert_eq!(round_size(0), 512);
        assert_eq!(round_size(1), 512);
        assert_eq!(round_size(512), 512);
        assert_eq!(round_size(513), 1024);
        assert_eq!(round_size((1 << 20) - 1), 1 << 20);
        assert_eq!(round_size(1 << 20), 2 << 20);
        assert_eq!(round_size((2 << 20) + 1), 4 << 20);
        for b in [1usize, 700, 123_456, 5 << 20] {
            assert!(round_size(b) >= b);
        }
        if !crate::cuda::is_available() {
            assert_eq!(cached_bytes(), 0);
            assert_eq!(release_cached(None), 0);
            crate::cuda::empty_cache().expect("no-op without a GPU");
        }
    }
}
