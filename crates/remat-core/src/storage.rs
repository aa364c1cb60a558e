//! Tensor storage: a flat buffer of one dtype on one device, shared between views through an
//! `Arc`. This is the one place that matches on the device. Every storage is counted by the
//! byte counters in `memory` when it comes alive and when it is dropped.

use crate::device::Device;
use crate::dtype::{DType, Scalar};
use std::any::Any;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// Who owns the memory behind a CPU buffer.
enum Owner {
    /// A `Vec` the engine allocated (capacity in elements).
    Vec { capacity: usize },
    /// Memory owned elsewhere (a NumPy array); the box keeps the owner alive.
    External(#[allow(dead_code)] Box<dyn Any + Send + Sync>),
}

/// A typed, contiguous host buffer.
pub struct CpuBuffer {
    ptr: NonNull<u8>,
    len: usize,
    dtype: DType,
    owner: Owner,
}

// SAFETY: the buffer is plain numeric memory; the engine only writes to it through the
// documented in-place paths (gradient accumulation, optimizer steps), never while a kernel
// reads the same storage.
unsafe impl Send for CpuBuffer {}
unsafe impl Sync for CpuBuffer {}

impl CpuBuffer {
    fn from_vec<T: Scalar>(v: Vec<T>) -> Self {
        let mut v = std::mem::ManuallyDrop::new(v);
        let len = v.len();
        let capacity = v.capacity();
        // SAFETY: a Vec's pointer is never null.
        let ptr = unsafe { NonNull::new_unchecked(v.as_mut_ptr() as *mut u8) };
        CpuBuffer {
            ptr,
            len,
            dtype: T::DTYPE,
            owner: Owner::Vec { capacity },
        }
    }

    fn free(&mut self) {
        if let Owner::Vec { capacity } = self.owner {
            /// Rebuild and drop the `Vec<T>` that `from_vec` took apart.
            ///
            /// # Safety
            /// `ptr`, `len` and `capacity` must come from a `Vec<T>`.
            unsafe fn drop_vec<T>(ptr: *mut u8, len: usize, capacity: usize) {
                // SAFETY: the caller's promise.
                drop(unsafe { Vec::from_raw_parts(ptr as *mut T, len, capacity) })
            }
            let (p, n) = (self.ptr.as_ptr(), self.len);
            // SAFETY: reconstructs exactly the Vec that `from_vec` took apart (its element
            // type is the one `dtype` names).
            unsafe {
                match self.dtype {
                    DType::F32 => drop_vec::<f32>(p, n, capacity),
                    DType::F64 => drop_vec::<f64>(p, n, capacity),
                    DType::I64 => drop_vec::<i64>(p, n, capacity),
                    DType::I32 => drop_vec::<i32>(p, n, capacity),
                    DType::Bool => drop_vec::<u8>(p, n, capacity),
                    DType::BF16 => drop_vec::<half::bf16>(p, n, capacity),
                    DType::F16 => drop_vec::<half::f16>(p, n, capacity),
                }
            }
        }
    }
}

/// The device-specific buffer.
pub enum Buffer {
    /// Host memory.
    Cpu(CpuBuffer),
    /// GPU memory.
    #[cfg(feature = "cuda")]
    Cuda(crate::cuda::storage::CudaBuffer),
}

static NEXT_STORAGE_ID: AtomicU64 = AtomicU64::new(1);

/// A flat buffer of `len` elements of one dtype on one device.
pub struct Storage {
    buffer: Buffer,
    id: u64,
    /// PyTorch's version counter: bumped by every in-place write. Every view of the buffer
    /// shares it (they share the `Storage`), so a saved tensor can tell at backward whether
    /// anything wrote into its memory since it was saved.
    version: AtomicU64,
    /// How many saved-for-backward references (`autograd::saved::Saved`) hold this buffer:
    /// while any does, a graph needs its values, and NumPy views of it are read-only (a write
    /// through one would bypass the version counter).
    saved: AtomicUsize,
    /// How many in-place writes into this buffer were recorded in a graph (the tensor
    /// written rebased onto the write's node): a tensor sharing the buffer whose graph
    /// predates the last one is stale (`TensorImpl::graph_at`).
    graph_writes: AtomicU64,
}

/// The id the next storage will get: storages with an id at or above it were created later.
pub fn next_storage_id() -> u64 {
    NEXT_STORAGE_ID.load(Ordering::Relaxed)
}

impl Storage {
    /// Wrap an engine-allocated vector as CPU storage.
    pub fn from_vec<T: Scalar>(v: Vec<T>) -> Storage {
        // Charged before the vector is taken apart: under a memory limit the charge may be
        // refused by unwinding, which must drop the vector.
        crate::memory::on_alloc(Device::Cpu, v.len() * T::DTYPE.size());
        let buffer = CpuBuffer::from_vec(v);
        Storage {
            buffer: Buffer::Cpu(buffer),
            id: NEXT_STORAGE_ID.fetch_add(1, Ordering::Relaxed),
            version: AtomicU64::new(0),
            saved: AtomicUsize::new(0),
            graph_writes: AtomicU64::new(0),
        }
    }

    /// Wrap memory owned by someone else (a NumPy array) without copying.
    ///
    /// # Safety
    /// `ptr` must point to `len` valid, aligned elements of `dtype` that stay valid for as long
    /// as `owner` is alive.
    pub unsafe fn from_external(
        ptr: *mut u8,
        len: usize,
        dtype: DType,
        owner: Box<dyn Any + Send + Sync>,
    ) -> Storage {
        let ptr = NonNull::new(ptr).unwrap_or(NonNull::dangling());
        crate::memory::on_alloc(Device::Cpu, len * dtype.size());
        Storage {
            buffer: Buffer::Cpu(CpuBuffer {
                ptr,
                len,
                dtype,
                owner: Owner::External(owner),
            }),
            id: NEXT_STORAGE_ID.fetch_add(1, Ordering::Relaxed),
            version: AtomicU64::new(0),
            saved: AtomicUsize::new(0),
            graph_writes: AtomicU64::new(0),
        }
    }

    /// Wrap a device buffer (counted on its device).
    #[cfg(feature = "cuda")]
    pub fn from_cuda(buffer: crate::cuda::storage::CudaBuffer) -> Storage {
        crate::memory::on_alloc(buffer.device(), buffer.len() * buffer.dtype().size());
        Storage {
            buffer: Buffer::Cuda(buffer),
            id: NEXT_STORAGE_ID.fetch_add(1, Ordering::Relaxed),
            version: AtomicU64::new(0),
            saved: AtomicUsize::new(0),
            graph_writes: AtomicU64::new(0),
        }
    }

    /// The device buffer, if this is a CUDA storage.
    #[cfg(feature = "cuda")]
    pub fn cuda(&self) -> Option<&crate::cuda::storage::CudaBuffer> {
        match &self.buffer {
            Buffer::Cuda(b) => Some(b),
            _ => None,
        }
    }

    /// A unique id (profiler: each storage counted once).
    pub fn id(&self) -> u64 {
        self.id
    }
    /// How many in-place writes this buffer has seen (PyTorch's `_version`).
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }
    /// Whether a graph still holds this buffer for a backward (a saved tensor of a node or a
    /// checkpoint segment's stored input).
    pub fn saved_for_backward(&self) -> bool {
        self.saved.load(Ordering::Acquire) > 0
    }
    /// One more saved-for-backward reference (paired with [`Storage::release_saved`]).
    pub(crate) fn retain_saved(&self) {
        self.saved.fetch_add(1, Ordering::AcqRel);
    }
    /// One saved-for-backward reference fewer.
    pub(crate) fn release_saved(&self) {
        self.saved.fetch_sub(1, Ordering::AcqRel);
    }
    /// Set the version of a storage nobody else has seen yet (a rematerialised tensor
    /// continues the version of the value it replaces, so saved-tensor checks still hold).
    pub(crate) fn set_version(&self, v: u64) {
        self.version.store(v, Ordering::Release);
    }
    /// Record one in-place write (every path that writes an existing buffer calls this, so
    /// saved tensors detect the change at backward).
    pub fn bump_version(&self) {
        self.version.fetch_add(1, Ordering::AcqRel);
    }
    /// How many in-place writes into this buffer were recorded in a graph.
    pub fn graph_writes(&self) -> u64 {
        self.graph_writes.load(Ordering::Acquire)
    }
    /// Count one recorded in-place write; returns the new count.
    pub(crate) fn bump_graph_writes(&self) -> u64 {
        self.graph_writes.fetch_add(1, Ordering::AcqRel) + 1
    }
    /// The element type.
    pub fn dtype(&self) -> DType {
        match &self.buffer {
            Buffer::Cpu(b) => b.dtype,
            #[cfg(feature = "cuda")]
            Buffer::Cuda(b) => b.dtype(),
        }
    }
    /// The device.
    pub fn device(&self) -> Device {
        match &self.buffer {
            Buffer::Cpu(_) => Device::Cpu,
            #[cfg(feature = "cuda")]
            Buffer::Cuda(b) => b.device(),
        }
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        match &self.buffer {
            Buffer::Cpu(b) => b.len,
            #[cfg(feature = "cuda")]
            Buffer::Cuda(b) => b.len(),
        }
    }
    /// Whether the storage holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Size in bytes.
    pub fn nbytes(&self) -> usize {
        self.len() * self.dtype().size()
    }
    /// Raw host pointer to the first element (NumPy views); null for device storage, which
    /// has no host address (callers copy it to the host first).
    pub fn as_ptr(&self) -> *mut u8 {
        match &self.buffer {
            Buffer::Cpu(b) => b.ptr.as_ptr(),
            #[cfg(feature = "cuda")]
            Buffer::Cuda(_) => std::ptr::null_mut(),
        }
    }

    /// The elements as a slice, if this is a CPU storage of dtype `T` (None for device
    /// storage: CPU kernels never see GPU memory).
    pub fn as_slice<T: Scalar>(&self) -> Option<&[T]> {
        match &self.buffer {
            Buffer::Cpu(b) if b.dtype == T::DTYPE => {
                // SAFETY: dtype checked; ptr/len describe a live buffer of T.
                Some(unsafe { std::slice::from_raw_parts(b.ptr.as_ptr() as *const T, b.len) })
            }
            _ => None,
        }
    }

    /// The elements as a mutable slice, for in-place updates.
    ///
    /// # Safety
    /// No other slice of this storage may be in use while the returned one is alive (the
    /// engine only calls this for gradient accumulation and optimizer steps).
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn as_mut_slice<T: Scalar>(&self) -> Option<&mut [T]> {
        match &self.buffer {
            Buffer::Cpu(b) if b.dtype == T::DTYPE => {
                // SAFETY: dtype checked; exclusivity is the caller's promise.
                Some(unsafe { std::slice::from_raw_parts_mut(b.ptr.as_ptr() as *mut T, b.len) })
            }
            _ => None,
        }
    }
}

impl Drop for Storage {
    fn drop(&mut self) {
        let (device, bytes) = (self.device(), self.nbytes());
        match &mut self.buffer {
            Buffer::Cpu(b) => b.free(),
            // The device memory is released by the buffer's own drop (stream-ordered).
            #[cfg(feature = "cuda")]
            Buffer::Cuda(_) => {}
        }
        crate::memory::on_free(device, bytes);
    }
}

impl std::fmt::Debug for Storage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Storage({} x {} on {})",
            self.len(),
            self.dtype(),
            self.device()
        )
    }
}
