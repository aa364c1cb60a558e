//! Device buffers: the CUDA variant of a storage, and copies between host and device.
//! Memory is allocated on the device's stream (stream-ordered), so freeing a buffer that a
//! queued kernel still reads is safe.

use super::context::{guarded, DeviceContext};
use crate::device::Device;
use crate::dtype::{DType, Element};
use crate::error::{Error, Result};
use cudarc::driver::{CudaSlice, DevicePtr, DriverError};
use std::sync::Arc;

/// A typed, contiguous buffer in GPU memory.
pub struct CudaBuffer {
    /// The bytes (at least one, so empty tensors still have a valid allocation).
    slice: CudaSlice<u8>,
    len: usize,
    dtype: DType,
    ctx: Arc<DeviceContext>,
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
    pub fn alloc(op: &str, ctx: &Arc<DeviceContext>, len: usize, dtype: DType) -> Result<Self> {
        let bytes = len
            .checked_mul(dtype.size())
            .ok_or_else(|| Error::shape(op, "tensor too large"))?;
        let device = ctx.device();
        let slice = guarded(op, || {
            // SAFETY: callers fully overwrite the buffer before anything reads it.
            unsafe { ctx.stream.alloc::<u8>(bytes.max(1)) }
                .map_err(|e| driver_error(op, device, bytes, e))
        })?;
        Ok(CudaBuffer {
            slice,
            len,
            dtype,
            ctx: ctx.clone(),
        })
    }

    /// A device copy of a host slice.
    pub fn from_host<T: Element>(op: &str, ctx: &Arc<DeviceContext>, host: &[T]) -> Result<Self> {
        let buf = Self::alloc(op, ctx, host.len(), T::DTYPE)?;
        if !host.is_empty() {
            let bytes = std::mem::size_of_val(host);
            // SAFETY: a T slice viewed as its bytes (T is a plain float).
            let raw = unsafe { std::slice::from_raw_parts(host.as_ptr() as *const u8, bytes) };
            let device = ctx.device();
            guarded(op, || {
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

    /// The elements `[offset, offset + n)` copied to a host vector (waits for queued work).
    pub fn to_host<T: Element>(&self, op: &str, offset: usize, n: usize) -> Result<Vec<T>> {
        if T::DTYPE != self.dtype || offset + n > self.len {
            return Err(Error::dtype(op, "device copy of the wrong dtype or range"));
        }
        let mut out = crate::cpu::alloc::<T>(n);
        if n == 0 {
            return Ok(out);
        }
        let bytes = n * std::mem::size_of::<T>();
        let device = self.device();
        // SAFETY: `out` has room for n elements; viewed as bytes for the copy.
        let raw = unsafe { std::slice::from_raw_parts_mut(out.as_mut_ptr() as *mut u8, bytes) };
        guarded(op, || {
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
        // One stream per device: no cross-stream events to record, the guard is a no-op.
        let (p, _sync) = self.slice.device_ptr(&self.ctx.stream);
        p
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
