//! DLPack: zero-copy exchange of tensors with other libraries (NumPy, PyTorch, CuPy, JAX), on
//! the CPU and on CUDA. The C structs of the DLPack ABI (`dlpack.h`, version 1.x and the
//! legacy unversioned `DLManagedTensor`) are declared here; the bindings only wrap the
//! pointers in Python capsules.
//!
//! - [`export`]: a managed tensor over this tensor's storage. Its `manager_ctx` holds an `Arc`
//!   of the storage (and the shape/stride arrays), so the memory lives until the consumer
//!   calls the deleter. A CUDA tensor's device stream is synchronised first, so any consumer
//!   stream sees finished data (DLPack's `stream` argument asks for at least that).
//! - [`import`]: a tensor viewing a producer's managed tensor. The storage owns a guard that
//!   calls the producer's deleter when the last view is dropped (on whatever thread drops
//!   it, as DLPack allows). Read-only producers (the versioned read-only flag) are copied,
//!   since remat tensors are writable.

use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::{Dims, Layout};
use crate::storage::Storage;
use crate::tensor::Tensor;
use crate::tensor_data::TensorData;
use std::ffi::c_void;
use std::sync::Arc;

/// `DLDeviceType::kDLCPU`.
pub const DEVICE_CPU: i32 = 1;
/// `DLDeviceType::kDLCUDA`.
pub const DEVICE_CUDA: i32 = 2;
/// `DLPACK_FLAG_BITMASK_READ_ONLY` of a versioned managed tensor.
pub const FLAG_READ_ONLY: u64 = 1;
/// The DLPack version this module writes (and the newest it reads).
pub const VERSION: DLPackVersion = DLPackVersion { major: 1, minor: 1 };

/// `DLDevice`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLDevice {
    /// `DLDeviceType` (1 CPU, 2 CUDA, ...).
    pub device_type: i32,
    /// The device ordinal.
    pub device_id: i32,
}

/// `DLDataType`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLDataType {
    /// `DLDataTypeCode` (0 int, 1 uint, 2 float, 6 bool, ...).
    pub code: u8,
    /// Bits per lane.
    pub bits: u8,
    /// Lanes (1 for every remat dtype).
    pub lanes: u16,
}

/// `DLTensor`: the view itself.
#[repr(C)]
pub struct DLTensor {
    /// The base pointer (host or device address).
    pub data: *mut c_void,
    /// Where the memory lives.
    pub device: DLDevice,
    /// Number of axes.
    pub ndim: i32,
    /// Element type.
    pub dtype: DLDataType,
    /// `ndim` extents.
    pub shape: *mut i64,
    /// `ndim` strides in elements, or null for C-contiguous.
    pub strides: *mut i64,
    /// Bytes from `data` to the first element.
    pub byte_offset: u64,
}

/// The legacy (unversioned) `DLManagedTensor`, capsule name `"dltensor"`.
#[repr(C)]
pub struct DLManagedTensor {
    /// The view.
    pub dl_tensor: DLTensor,
    /// The producer's context.
    pub manager_ctx: *mut c_void,
    /// Frees the tensor; called once by the consumer.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

/// `DLPackVersion`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DLPackVersion {
    /// Major version (1).
    pub major: u32,
    /// Minor version.
    pub minor: u32,
}

/// `DLManagedTensorVersioned` (DLPack 1.x), capsule name `"dltensor_versioned"`.
#[repr(C)]
pub struct DLManagedTensorVersioned {
    /// The ABI version of this struct.
    pub version: DLPackVersion,
    /// The producer's context.
    pub manager_ctx: *mut c_void,
    /// Frees the tensor; called once by the consumer.
    pub deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    /// Bit flags (`FLAG_READ_ONLY`, ...).
    pub flags: u64,
    /// The view.
    pub dl_tensor: DLTensor,
}

/// A managed tensor of either ABI, as a raw pointer (whoever holds it owns it until the
/// deleter is called).
#[derive(Debug, Clone, Copy)]
pub enum Managed {
    /// A legacy `DLManagedTensor`.
    Legacy(*mut DLManagedTensor),
    /// A `DLManagedTensorVersioned`.
    Versioned(*mut DLManagedTensorVersioned),
}

impl Managed {
    /// Call the producer's deleter (if it set one).
    ///
    /// # Safety
    /// The pointer must be a live managed tensor that nobody deletes afterwards.
    pub unsafe fn delete(self) {
        // SAFETY: the caller's promise; the deleter receives the pointer it was made for.
        unsafe {
            match self {
                Managed::Legacy(p) => {
                    if let Some(d) = (*p).deleter {
                        d(p)
                    }
                }
                Managed::Versioned(p) => {
                    if let Some(d) = (*p).deleter {
                        d(p)
                    }
                }
            }
        }
    }
}

/// DLPack's code for a remat dtype.
pub fn dl_dtype(dtype: DType) -> DLDataType {
    let (code, bits) = match dtype {
        DType::F32 => (2, 32),
        DType::F64 => (2, 64),
        DType::I64 => (0, 64),
        DType::I32 => (0, 32),
        DType::Bool => (6, 8),
        DType::BF16 => (4, 16),
        DType::F16 => (2, 16),
    };
    DLDataType {
        code,
        bits,
        lanes: 1,
    }
}

/// The remat dtype of a DLPack type, or a `DTypeError` naming it.
pub fn remat_dtype(op: &str, t: DLDataType) -> Result<DType> {
    match (t.code, t.bits, t.lanes) {
        (2, 32, 1) => Ok(DType::F32),
        (2, 64, 1) => Ok(DType::F64),
        (0, 64, 1) => Ok(DType::I64),
        (0, 32, 1) => Ok(DType::I32),
        (6, 8, 1) => Ok(DType::Bool),
        (4, 16, 1) => Ok(DType::BF16),
        (2, 16, 1) => Ok(DType::F16),
        _ => {
            let name = match t.code {
                0 => "int",
                1 => "uint",
                2 => "float",
                4 => "bfloat",
                5 => "complex",
                6 => "bool",
                _ => "type code",
            };
            Err(Error::dtype(
                op,
                format!(
                    "DLPack dtype {name}{} (code {}, {} lanes) has no remat dtype (float32, \
                     float64, bfloat16, float16, int64, int32 and bool exist)",
                    t.bits, t.code, t.lanes
                ),
            ))
        }
    }
}

/// What an exported tensor keeps alive: the storage and the arrays the `DLTensor` points
/// into.
struct ExportContext {
    _storage: Arc<Storage>,
    shape: Vec<i64>,
    strides: Vec<i64>,
}

fn dl_device(op: &str, device: Device) -> Result<DLDevice> {
    Ok(match device {
        Device::Cpu => DLDevice {
            device_type: DEVICE_CPU,
            device_id: 0,
        },
        Device::Cuda(n) => DLDevice {
            device_type: DEVICE_CUDA,
            device_id: i32::try_from(n)
                .map_err(|_| Error::device(op, format!("device index {n} out of range")))?,
        },
    })
}

/// The device address of the storage's first element (a CUDA tensor's stream is
/// synchronised, so the memory holds the finished values for any consumer stream).
fn base_pointer(op: &str, t: &Tensor) -> Result<*mut c_void> {
    match t.device() {
        Device::Cpu => Ok(t.storage().as_ptr() as *mut c_void),
        Device::Cuda(_) => cuda_base_pointer(op, t),
    }
}

#[cfg(feature = "cuda")]
fn cuda_base_pointer(op: &str, t: &Tensor) -> Result<*mut c_void> {
    let buffer = t
        .storage()
        .cuda()
        .ok_or_else(|| Error::device(op, "a CUDA tensor without a device buffer"))?;
    buffer.context().synchronize(op)?;
    Ok(buffer.ptr() as usize as *mut c_void)
}

#[cfg(not(feature = "cuda"))]
fn cuda_base_pointer(op: &str, _: &Tensor) -> Result<*mut c_void> {
    Err(Error::device(op, "this build of remat has no CUDA backend"))
}

/// A managed tensor viewing `t`'s memory (no copy), in the versioned ABI when `versioned`,
/// else the legacy one. The caller owns the result until it hands it to a consumer, which
/// calls its deleter once. Tensors that require grad are refused (export would let another
/// library write memory the graph still needs), as PyTorch refuses them.
pub fn export(t: &Tensor, versioned: bool) -> Result<Managed> {
    const OP: &str = "__dlpack__";
    if t.requires_grad() {
        return Err(Error::graph(
            OP,
            "can't export a tensor that requires grad; use tensor.detach()",
        ));
    }
    let device = dl_device(OP, t.device())?;
    let data = base_pointer(OP, t)?;
    let layout = t.layout();
    let mut ctx = Box::new(ExportContext {
        _storage: t.storage().clone(),
        shape: layout.shape.iter().map(|&d| d as i64).collect(),
        strides: layout.strides.iter().map(|&s| s as i64).collect(),
    });
    let dl_tensor = DLTensor {
        data,
        device,
        ndim: layout.shape.len() as i32,
        dtype: dl_dtype(t.dtype()),
        shape: ctx.shape.as_mut_ptr(),
        strides: ctx.strides.as_mut_ptr(),
        byte_offset: (layout.offset * t.dtype().size()) as u64,
    };
    let manager_ctx = Box::into_raw(ctx) as *mut c_void;
    Ok(if versioned {
        Managed::Versioned(Box::into_raw(Box::new(DLManagedTensorVersioned {
            version: VERSION,
            manager_ctx,
            deleter: Some(delete_versioned),
            flags: 0,
            dl_tensor,
        })))
    } else {
        Managed::Legacy(Box::into_raw(Box::new(DLManagedTensor {
            dl_tensor,
            manager_ctx,
            deleter: Some(delete_legacy),
        })))
    })
}

/// The deleter of a legacy managed tensor made by [`export`].
unsafe extern "C" fn delete_legacy(p: *mut DLManagedTensor) {
    if p.is_null() {
        return;
    }
    // SAFETY: `p` and its context were made by `export` with `Box::into_raw`, and DLPack's
    // contract is that the deleter runs once.
    unsafe {
        let managed = Box::from_raw(p);
        drop(Box::from_raw(managed.manager_ctx as *mut ExportContext));
    }
}

/// The deleter of a versioned managed tensor made by [`export`].
unsafe extern "C" fn delete_versioned(p: *mut DLManagedTensorVersioned) {
    if p.is_null() {
        return;
    }
    // SAFETY: as in `delete_legacy`.
    unsafe {
        let managed = Box::from_raw(p);
        drop(Box::from_raw(managed.manager_ctx as *mut ExportContext));
    }
}

/// Owns an imported managed tensor: calls the producer's deleter when dropped (when the last
/// view of the storage goes).
struct ImportGuard(Managed);

// SAFETY: DLPack's deleter may be called from any thread; the pointer is only used by it.
unsafe impl Send for ImportGuard {}
// SAFETY: the guard is never read through a shared reference.
unsafe impl Sync for ImportGuard {}

impl Drop for ImportGuard {
    fn drop(&mut self) {
        // SAFETY: the guard owns the managed tensor (the consumer's side of the contract)
        // and deletes it exactly once.
        unsafe { self.0.delete() }
    }
}

/// A tensor viewing a producer's managed tensor (no copy; a read-only one is copied). Takes
/// ownership of `managed`: its deleter is called when the tensor's storage is dropped, or
/// right away on an error.
///
/// # Safety
/// `managed` must point to a live managed tensor of the ABI its variant names, whose memory
/// holds the elements its `DLTensor` describes until the deleter is called.
pub unsafe fn import(managed: Managed) -> Result<Tensor> {
    const OP: &str = "from_dlpack";
    let guard = ImportGuard(managed);
    // SAFETY: the caller's promise: a live managed tensor.
    let (t, flags) = unsafe {
        match managed {
            Managed::Legacy(p) => (&(*p).dl_tensor, 0),
            Managed::Versioned(p) => {
                let v = (*p).version;
                if v.major != VERSION.major {
                    return Err(Error::value(
                        OP,
                        format!("DLPack version {}.{} is not supported", v.major, v.minor),
                    ));
                }
                (&(*p).dl_tensor, (*p).flags)
            }
        }
    };
    let dtype = remat_dtype(OP, t.dtype)?;
    let ndim = usize::try_from(t.ndim)
        .map_err(|_| Error::shape(OP, format!("negative ndim {}", t.ndim)))?;
    // SAFETY: `shape` (and `strides` when not null) point to `ndim` values.
    let (shape, strides) = unsafe {
        let shape: &[i64] = if ndim == 0 {
            &[]
        } else {
            std::slice::from_raw_parts(t.shape, ndim)
        };
        let strides: Option<&[i64]> = if t.strides.is_null() || ndim == 0 {
            None
        } else {
            Some(std::slice::from_raw_parts(t.strides, ndim))
        };
        (shape, strides)
    };
    let mut dims = Dims::new();
    for &d in shape {
        dims.push(
            usize::try_from(d).map_err(|_| Error::shape(OP, format!("negative extent {d}")))?,
        );
    }
    let layout = match strides {
        None => Layout::contiguous(&dims),
        Some(st) => {
            let mut out = Dims::new();
            for &s in st {
                out.push(usize::try_from(s).map_err(|_| {
                    Error::shape(
                        OP,
                        format!(
                            "negative strides {st:?} (shape {shape:?}) cannot be viewed; \
                             pass a copy"
                        ),
                    )
                })?);
            }
            Layout {
                shape: dims.clone(),
                strides: out,
                offset: 0,
            }
        }
    };
    // The elements the view can reach: one past the last one.
    let numel: usize = dims.iter().product();
    let span = if numel == 0 {
        0
    } else {
        1 + dims
            .iter()
            .zip(layout.strides.iter())
            .map(|(&d, &s)| (d - 1) * s)
            .sum::<usize>()
    };
    let base = (t.data as usize).wrapping_add(t.byte_offset as usize);
    let owner: Box<dyn std::any::Any + Send + Sync> = Box::new(guard);
    let storage = match (t.device.device_type, t.device.device_id) {
        (DEVICE_CPU, _) => {
            // SAFETY: the producer promises `span` elements of `dtype` at `base` until its
            // deleter runs, which the owner box delays until the storage is dropped.
            unsafe { Storage::from_external(base as *mut u8, span, dtype, owner) }
        }
        (DEVICE_CUDA, id) => {
            let index = usize::try_from(id)
                .map_err(|_| Error::device(OP, format!("CUDA device index {id}")))?;
            cuda_storage(OP, Device::Cuda(index), base as u64, span, dtype, owner)?
        }
        (kind, id) => {
            return Err(Error::device(
                OP,
                format!(
                    "DLPack device ({kind}, {id}) is not supported: only the CPU (1) and CUDA \
                     (2) are"
                ),
            ))
        }
    };
    let tensor = Tensor::from_data(TensorData {
        storage: Arc::new(storage),
        layout,
    });
    if flags & FLAG_READ_ONLY != 0 {
        // remat tensors are writable: a read-only producer gets a private copy.
        return crate::ops::contiguous_copy(&tensor, dtype);
    }
    Ok(tensor)
}

#[cfg(feature = "cuda")]
fn cuda_storage(
    op: &str,
    device: Device,
    ptr: u64,
    len: usize,
    dtype: DType,
    owner: Box<dyn std::any::Any + Send + Sync>,
) -> Result<Storage> {
    let ctx = crate::cuda::context::get(op, device)?;
    // SAFETY: the producer promises `len` elements at `ptr` on this device until the owner
    // (its deleter) is dropped.
    let buffer =
        unsafe { crate::cuda::storage::CudaBuffer::external(&ctx, ptr, len, dtype, owner) };
    Ok(Storage::from_cuda(buffer))
}

#[cfg(not(feature = "cuda"))]
fn cuda_storage(
    op: &str,
    _: Device,
    _: u64,
    _: usize,
    _: DType,
    _: Box<dyn std::any::Any + Send + Sync>,
) -> Result<Storage> {
    Err(Error::device(op, "this build of remat has no CUDA backend"))
}

/// The handle of remat's compute stream on `device`, for a producer's `__dlpack__(stream=)`
/// (the producer makes that stream wait for its pending work on the memory).
#[cfg(feature = "cuda")]
pub fn stream_handle(device: Device) -> Result<usize> {
    let ctx = crate::cuda::context::get("from_dlpack", device)?;
    // DLPack reserves 0; the legacy default stream is 1 there.
    Ok(match ctx.stream.cu_stream() as usize {
        0 => 1,
        h => h,
    })
}

/// See the CUDA build: without it there is no stream to hand out.
#[cfg(not(feature = "cuda"))]
pub fn stream_handle(_: Device) -> Result<usize> {
    Err(Error::device(
        "from_dlpack",
        "this build of remat has no CUDA backend",
    ))
}
