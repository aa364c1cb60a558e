//! Helpers shared by the launch files: the buffer behind a tensor, tensors over new buffers,
//! kernel layout plans, launch grids, kernel names per dtype, launch error mapping, the
//! `launch!` macro, and small operand helpers (contiguous copies, optional pointers).

use super::elementwise::copy;
use crate::cuda::context::DeviceContext;
use crate::cuda::kernels::{KLayout, BLOCK, MAX_DIMS};
use crate::cuda::storage::{driver_error, CudaBuffer};
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::{numel, Dims, Layout};
use crate::storage::Storage;
use crate::tensor::Tensor;
use crate::tensor_data::TensorData;
use cudarc::driver::LaunchConfig;
use smallvec::SmallVec;
use std::sync::Arc;

/// The buffer behind a CUDA tensor.
pub fn buffer<'a>(op: &str, t: &'a Tensor) -> Result<&'a CudaBuffer> {
    t.storage().cuda().ok_or_else(|| {
        Error::device(
            op,
            format!("expected a tensor on a CUDA device, got {}", t.device()),
        )
    })
}

/// A new contiguous tensor over a device buffer.
pub fn tensor(buf: CudaBuffer, shape: &[usize]) -> Tensor {
    Tensor::from_data(TensorData {
        storage: Arc::new(Storage::from_cuda(buf)),
        layout: Layout::contiguous(shape),
    })
}

/// Kernel descriptions of `layouts` (each already broadcast to `shape`), with axes of extent
/// 1 dropped and axes that are contiguous in every operand merged, so most kernels index one
/// or two axes. Error when more than [`MAX_DIMS`] axes remain.
pub fn plan(op: &str, shape: &[usize], layouts: &[&Layout]) -> Result<Vec<KLayout>> {
    let mut cshape: Dims = SmallVec::new();
    let mut cstrides: Vec<Dims> = vec![SmallVec::new(); layouts.len()];
    for (i, &d) in shape.iter().enumerate() {
        if d == 1 {
            continue;
        }
        let merge = !cshape.is_empty()
            && layouts
                .iter()
                .enumerate()
                .all(|(k, l)| cstrides[k].last().copied().unwrap_or(0) == l.strides[i] * d);
        if merge {
            let last = cshape.len() - 1;
            cshape[last] *= d;
            for (k, l) in layouts.iter().enumerate() {
                cstrides[k][last] = l.strides[i];
            }
        } else {
            cshape.push(d);
            for (k, l) in layouts.iter().enumerate() {
                cstrides[k].push(l.strides[i]);
            }
        }
    }
    if cshape.len() > MAX_DIMS {
        return Err(Error::device(
            op,
            format!(
                "views with more than {MAX_DIMS} non-mergeable axes are not supported on cuda \
                 yet (got {}); make the tensor contiguous first",
                cshape.len()
            ),
        ));
    }
    Ok((0..layouts.len())
        .map(|k| {
            let mut kl = KLayout {
                ndim: cshape.len() as i32,
                small: (numel(shape) <= u32::MAX as usize) as i32,
                ..Default::default()
            };
            for (j, &d) in cshape.iter().enumerate() {
                kl.shape[j] = d as i64;
                kl.strides[j] = cstrides[k][j] as i64;
            }
            if cshape.is_empty() {
                // A single element: one axis of extent 1.
                kl.ndim = 1;
                kl.shape[0] = 1;
            }
            kl
        })
        .collect())
}

/// Grid for `n` elements with grid-stride loops.
pub(super) fn grid(n: usize) -> LaunchConfig {
    let blocks = n.div_ceil(BLOCK as usize).clamp(1, 1 << 20) as u32;
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// The kernel of the float-only family `base` for `dtype`.
pub(super) fn kernel_name(base: &str, dtype: DType) -> &'static str {
    match (base, dtype) {
        ("im2col", DType::F32) => "im2col_f32",
        ("im2col", DType::F64) => "im2col_f64",
        ("pool_argmax", DType::F32) => "pool_argmax_f32",
        ("pool_argmax", DType::F64) => "pool_argmax_f64",
        ("col2im", DType::F32) => "col2im_f32",
        ("col2im", DType::F64) => "col2im_f64",
        ("unary", DType::F32) => "unary_f32",
        ("unary", DType::F64) => "unary_f64",
        ("binary", DType::F32) => "binary_f32",
        ("binary", DType::F64) => "binary_f64",
        ("axpy", DType::F32) => "axpy_f32",
        ("axpy", DType::F64) => "axpy_f64",
        ("sum", DType::F32) => "sum_chunks_f32",
        ("sum", DType::F64) => "sum_chunks_f64",
        ("softmax", DType::F32) => "softmax_f32",
        ("softmax", DType::F64) => "softmax_f64",
        ("softmax_bwd", DType::F32) => "softmax_bwd_f32",
        ("softmax_bwd", DType::F64) => "softmax_bwd_f64",
        ("layer_norm", DType::F32) => "layer_norm_f32",
        ("layer_norm", DType::F64) => "layer_norm_f64",
        ("layer_norm_bwd", DType::F32) => "layer_norm_bwd_f32",
        ("layer_norm_bwd", DType::F64) => "layer_norm_bwd_f64",
        ("max_rows", DType::F32) => "max_rows_f32",
        ("max_rows", DType::F64) => "max_rows_f64",
        ("dropout", DType::F32) => "dropout_f32",
        ("dropout", DType::F64) => "dropout_f64",
        ("strided_add", DType::F32) => "strided_add_f32",
        ("strided_add", DType::F64) => "strided_add_f64",
        ("ce_fwd", DType::F32) => "ce_fwd_f32",
        ("ce_fwd", DType::F64) => "ce_fwd_f64",
        ("ce_bwd", DType::F32) => "ce_bwd_f32",
        ("ce_bwd", DType::F64) => "ce_bwd_f64",
        ("sgd", DType::F32) => "sgd_f32",
        ("sgd", DType::F64) => "sgd_f64",
        ("adam", DType::F32) => "adam_f32",
        ("adam", DType::F64) => "adam_f64",
        _ => "unknown",
    }
}

pub(super) fn launch_err(
    op: &str,
    ctx: &DeviceContext,
) -> impl Fn(cudarc::driver::DriverError) -> Error {
    let (op, device) = (op.to_string(), ctx.device());
    move |e| driver_error(&op, device, 0, e)
}

/// Queue kernel `$f` on `$ctx`'s stream with the given argument variables.
macro_rules! launch {
    ($op:expr, $ctx:expr, $f:expr, $cfg:expr, $($a:expr),+ $(,)?) => {
        $crate::cuda::context::guarded($op, || {
            let mut l = $ctx.stream.launch_builder(&$f);
            $( l.arg(&$a); )+
            // SAFETY: each caller passes exactly the kernel's parameter list; every pointer
            // is a live buffer of the sizes the kernel indexes (documented at the caller).
            unsafe { l.launch($cfg) }
                .map(|_| ())
                .map_err($crate::cuda::launch::common::launch_err($op, &$ctx))
        })
    };
}
pub(super) use launch;

/// One block of [`BLOCK`] threads per row (grid-stride over rows beyond the grid limit).
pub(super) fn row_grid(rows: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (rows.clamp(1, 1 << 20) as u32, 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// `x` itself when contiguous, else a contiguous copy.
pub(super) fn contig(op: &str, x: &Tensor) -> Result<Tensor> {
    if x.is_contiguous() {
        Ok(x.clone())
    } else {
        copy(op, x)
    }
}

/// Device address of an optional contiguous operand (0: absent).
pub(super) fn opt_ptr(op: &str, t: Option<&Tensor>) -> Result<u64> {
    match t {
        Some(t) => Ok(buffer(op, t)?.ptr_at(t.layout().offset)),
        None => Ok(0),
    }
}
