//! Host allocations of the kernels: fallible (running out of memory unwinds with a typed
//! error instead of aborting), counted by the byte counters where they are scratch, and the
//! op boundary (`catch_oom`) where such an unwind becomes `Error::OutOfMemory`. Needs nothing
//! above the counters, so device storage can allocate host buffers through it too.

use super::host_alloc;
use crate::dtype::Scalar;
use crate::error::{Error, Result};

/// Unwind out of a kernel with a typed out-of-memory error (no panic hook, no abort);
/// `catch_oom` at the op boundary turns it back into `Error::OutOfMemory`.
#[cold]
pub fn out_of_memory(bytes: usize) -> ! {
    std::panic::resume_unwind(Box::new(Error::OutOfMemory {
        op: "alloc".to_string(),
        bytes,
        device: "cpu".to_string(),
    }))
}

/// An empty vector with room for `n` elements, or an out-of-memory unwind.
#[inline]
pub fn with_capacity<T>(n: usize) -> Vec<T> {
    // Freed buffers are reused rather than faulted in afresh (once per process).
    host_alloc::retain_freed_memory();
    let mut v = Vec::new();
    if v.try_reserve_exact(n).is_err() {
        out_of_memory(n.saturating_mul(std::mem::size_of::<T>()));
    }
    v
}

/// A vector of `n` elements that the caller will fully overwrite (any bit pattern is a
/// valid value of every storage type, bool's `u8` included).
#[inline]
#[allow(clippy::uninit_vec)]
pub fn alloc<T: Scalar>(n: usize) -> Vec<T> {
    let mut v = with_capacity(n);
    // SAFETY: T is a plain number: every bit pattern is valid, and callers write every element
    // before anything reads it.
    unsafe { v.set_len(n) };
    v
}

/// A kernel's scratch memory (an im2col matrix, per-thread partial sums), counted by the byte
/// counters while it lives like a tensor's storage: `max_memory_allocated` shows a kernel's
/// transients, and under a memory limit taking it may evict or be refused like any
/// allocation. Its contents start undefined.
pub struct Workspace<T: Scalar> {
    buf: Vec<T>,
}

impl<T: Scalar> Workspace<T> {
    /// `n` elements of scratch. Charged once allocated: a refused charge unwinds, which
    /// drops the vector, and a failed allocation has charged nothing.
    pub fn new(n: usize) -> Self {
        let buf = alloc(n);
        crate::memory::on_alloc(crate::device::Device::Cpu, n * T::DTYPE.size());
        Workspace { buf }
    }
}

impl<T: Scalar> std::ops::Deref for Workspace<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        &self.buf
    }
}

impl<T: Scalar> std::ops::DerefMut for Workspace<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        &mut self.buf
    }
}

impl<T: Scalar> Drop for Workspace<T> {
    fn drop(&mut self) {
        crate::memory::on_free(crate::device::Device::Cpu, self.buf.len() * T::DTYPE.size());
    }
}

/// A vector of `n` copies of `value`.
#[inline]
pub fn filled<T: Scalar>(n: usize, value: T) -> Vec<T> {
    let mut v = with_capacity(n);
    v.resize(n, value);
    v
}

/// The items of an exactly sized iterator in one fallible allocation (`collect` aborts the
/// process when its allocation fails).
#[inline]
pub fn collect_exact<T, I: ExactSizeIterator<Item = T>>(items: I) -> Vec<T> {
    let mut v = with_capacity(items.len());
    v.extend(items);
    v
}

/// Run `f`, turning an out-of-memory unwind from a kernel into `Error::OutOfMemory` named
/// after `op`. Other panics (engine bugs) continue to unwind.
pub fn catch_oom<T>(op: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    // Allocations over a memory limit may be refused in here: the unwind is caught below.
    let _refusable = crate::memory::RefusableScope::enter();
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(payload) => match payload.downcast::<Error>() {
            Ok(e) => Err(match *e {
                Error::OutOfMemory { bytes, device, .. } => Error::OutOfMemory {
                    op: op.to_string(),
                    bytes,
                    device,
                },
                Error::MemoryLimit { op: by, message } if by == "alloc" => Error::MemoryLimit {
                    op: op.to_string(),
                    message,
                },
                other => other,
            }),
            Err(payload) => std::panic::resume_unwind(payload),
        },
    }
}
