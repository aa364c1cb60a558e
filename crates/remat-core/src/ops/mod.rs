//! Ops, one file per family; each op's forward sits next to its backward (VJP). Every public
//! function validates its inputs and returns a typed error naming the op and the shapes.

pub mod advanced_index;
pub mod all_any;
pub mod argmax;
pub mod attention;
pub mod axes;
pub mod batch_norm;
pub mod binary_cross_entropy;
pub mod causal_softmax;
pub mod checkpoint_name;
pub mod closeness;
pub mod compare;
pub mod composites;
pub mod conv;
mod conv_cpu;
pub mod conv_transpose;
pub mod convert;
pub mod creation;
pub mod cumsum;
pub mod dropout;
pub mod einsum;
pub mod elementwise;
pub mod flash_attention;
pub mod flip;
pub mod gather;
pub mod group_norms;
pub mod inplace;
pub mod int_div;
mod int_matmul;
pub mod interpolate;
pub mod join;
pub mod linalg;
pub mod linear;
pub mod logical;
pub mod logsumexp;
pub mod loss;
pub mod loss_options;
pub mod masked;
pub mod matmul;
pub mod moments;
pub mod norm;
pub mod pad;
pub mod pool;
pub mod prod;
pub mod ranges;
pub mod rearrange;
pub mod recurrent;
pub mod reduce;
pub mod reduce_ext;
pub mod repeat;
pub mod sampling;
pub mod select;
pub mod setitem;
pub mod shape;
pub mod slicing;
pub mod softmax;
pub mod sort;
pub mod vector_norm;
pub mod view;
pub mod window;

pub use advanced_index::{index_advanced, Index};
pub use all_any::{all, any};
pub use argmax::{argmax, argmin, max_dim, min_dim};
pub use attention::{
    scaled_dot_product_attention, scaled_dot_product_attention_math,
    scaled_dot_product_attention_with,
};
pub use axes::{
    broadcast_to, expand_as, expand_sizes, flatten, matrix_transpose, movedim, squeeze, unflatten,
    unsqueeze,
};
pub use batch_norm::batch_norm;
pub use binary_cross_entropy::binary_cross_entropy;
pub use checkpoint_name::checkpoint_name;
pub use closeness::{allclose, equal, isclose};
pub use compare::{eq, ge, gt, isfinite, isinf, isnan, le, lt, ne};
pub use composites::{
    addcdiv, addcmul, count_nonzero, masked_select, nan_to_num, std_mean, take_along_dim, var_mean,
};
pub use conv::{conv, conv_nd, ConvPadding, CPU_CHUNK_BYTES};
pub use conv_transpose::{conv_transpose, ConvTransposeArgs};
pub use convert::{to_device, to_dtype};
pub use creation::{full, full_int, ones, rand, randn, zeros};
pub use cumsum::cumsum;
pub use dropout::dropout;
pub use einsum::einsum;
pub use elementwise::unary_fns::*;
pub use elementwise::{
    add, add_scalar, atan2, clamp, clamp_by, clamp_max, clamp_min, div, gelu, leaky_relu, lerp,
    lerp_tensor, maximum, minimum, mul, pow, pow_number, pow_scalar, round, round_decimals, scale,
    softplus, sub, Bound,
};
pub use flash_attention::SdpaOptions;
pub use flip::flip;
pub use gather::{
    embedding, embedding_padded, embedding_renorm_, gather, index_add, index_select, nonzero,
    one_hot, scatter_add,
};
pub use group_norms::{group_norm, rms_norm};
pub use inplace::{
    add_, add_inplace, axpy_inplace, bernoulli_, bernoulli_tensor_, clamp_, clamp_by_, copy_, div_,
    exponential_, fill_, leaky_relu_, masked_fill_, mul_, normal_, relu_, sub_, uniform_,
    update_with_, zero_, Operand,
};
pub use int_div::{div_rounded, floor_divide, remainder, trunc_divide};
pub use interpolate::{interpolate, InterpolateMode};
pub use join::{cat, concat, stack};
pub use linalg::{addmm, baddbmm, bmm, mm, outer};
pub use linear::linear;
pub use logical::{
    bitwise_and, bitwise_not, bitwise_or, bitwise_xor, logical_and, logical_not, logical_or,
    logical_xor,
};
pub use logsumexp::logsumexp;
pub use loss::{cross_entropy, mse_loss};
pub use loss_options::{
    binary_cross_entropy_with_logits, cross_entropy_with, l1_loss, mse_loss_with, nll_loss,
    Reduction,
};
pub use masked::{masked_fill, masked_fill_scalar};
pub use matmul::matmul;
pub use moments::{std, var};
pub use norm::layer_norm;
pub use pad::{pad, PadMode};
pub use pool::{adaptive_avg_pool, avg_pool, max_pool};
pub use prod::prod;
pub use ranges::{arange, eye, linspace, randint, tril, triu};
pub use rearrange::{
    diag, diagonal, meshgrid, repeat_interleave, repeat_interleave_counts, roll, tile, trace,
    unbind,
};
pub use recurrent::{gru_layer, lstm_layer, rnn_layer};
pub use reduce::{sum, sum_to};
pub use reduce_ext::{amax, amin, max, mean, min};
pub use repeat::repeat;
pub use sampling::{bernoulli, multinomial, normal, randperm};
pub use select::where_;
pub(crate) mod half_compute;
pub use setitem::{destination, setitem, Destination};
pub use shape::{clone, expand, reshape, view_as_shape};
pub use slicing::{chunk, narrow, split, split_sections};
pub use softmax::{log_softmax, softmax};
pub use sort::{argsort, sort, topk};
pub use vector_norm::norm;
pub use view::{index, index_layout, permute, reverse_axes, t, transpose, IndexItem};
pub use window::{fold, unfold, Window};

use crate::device::Device;
use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::storage::Storage;
use crate::tensor::Tensor;
use crate::tensor_data::TensorData;
use std::sync::Arc;

/// Run `$body` with `$T` bound to the Rust float type of `$dtype` (the differentiable
/// kernels). Only reached with float dtypes: `autograd::node::apply` rejects integer and
/// bool inputs for every op that does not declare [`Op::any_dtype`](crate::autograd::node::Op::any_dtype),
/// and the functions outside `apply` that use it check the dtype first; an integer dtype
/// here is an engine bug.
#[macro_export]
macro_rules! dispatch {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::dtype::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::dtype::DType::F64 => {
                type $T = f64;
                $body
            }
            // Half inputs are widened before an op's kernels run (`ops::half_compute`); a
            // path that skips that is refused as an error (`cpu::catch_oom` turns the
            // payload into one inside an op), never undefined behaviour.
            other if other.is_half() => {
                std::panic::resume_unwind(Box::new($crate::error::Error::dtype(
                    "kernel",
                    format!("no {other} kernel here; convert the tensor with .float()"),
                )))
            }
            other => unreachable!("float kernel reached with {other}"),
        }
    };
}

/// Run `$body` with `$T` bound to the Rust storage type of `$dtype`, for every dtype (the
/// kernels that only move or compare elements: copies, casts, gathers, joins, comparisons).
#[macro_export]
macro_rules! dispatch_any {
    ($dtype:expr, $T:ident => $body:expr) => {
        match $dtype {
            $crate::dtype::DType::F32 => {
                type $T = f32;
                $body
            }
            $crate::dtype::DType::F64 => {
                type $T = f64;
                $body
            }
            $crate::dtype::DType::I64 => {
                type $T = i64;
                $body
            }
            $crate::dtype::DType::I32 => {
                type $T = i32;
                $body
            }
            $crate::dtype::DType::Bool => {
                type $T = u8;
                $body
            }
            $crate::dtype::DType::BF16 => {
                type $T = half::bf16;
                $body
            }
            $crate::dtype::DType::F16 => {
                type $T = half::f16;
                $body
            }
        }
    };
}

/// A new contiguous tensor from kernel output.
pub(crate) fn from_vec<T: crate::dtype::Scalar>(v: Vec<T>, shape: &[usize]) -> Tensor {
    Tensor::from_data(TensorData {
        storage: Arc::new(Storage::from_vec(v)),
        layout: Layout::contiguous(shape),
    })
}

/// A view of `t`'s storage with another layout (no copy, no graph).
pub(crate) fn view(t: &Tensor, layout: Layout) -> Tensor {
    Tensor::from_data(TensorData {
        storage: t.storage().clone(),
        layout,
    })
}

/// The dtype two operands of an elementwise op compute in (PyTorch's `result_type`: a 0-d
/// operand decides only when its category is higher; see [`DType::promote_ranked`]).
pub fn result_dtype(a: &Tensor, b: &Tensor) -> DType {
    a.dtype()
        .promote_ranked(a.ndim() == 0, b.dtype(), b.ndim() == 0)
}

/// Error unless every tensor lives on the same device; returns that device.
pub fn check_same_device(op: &str, ts: &[&Tensor]) -> Result<Device> {
    let d = ts.first().map(|t| t.device()).unwrap_or(Device::Cpu);
    for t in ts {
        if t.device() != d {
            return Err(Error::device(
                op,
                format!(
                    "expected all tensors on one device, found {} and {}",
                    d,
                    t.device()
                ),
            ));
        }
    }
    Ok(d)
}

/// Error unless every tensor has the same dtype.
pub fn check_same_dtype(op: &str, ts: &[&Tensor]) -> Result<DType> {
    let d = ts.first().map(|t| t.dtype()).unwrap_or(DType::F32);
    for t in ts {
        if t.dtype() != d {
            return Err(Error::dtype(
                op,
                format!(
                    "expected all tensors of one dtype, found {} and {}",
                    d,
                    t.dtype()
                ),
            ));
        }
    }
    Ok(d)
}

/// A contiguous copy of `t` in `dtype` (no graph). Out of memory is an
/// `Error::OutOfMemory` (this is called outside `apply`: casts in the engine, `.grad`
/// copies, `remat.tensor(t)`).
pub fn contiguous_copy(t: &Tensor, dtype: DType) -> Result<Tensor> {
    let op = if dtype == t.dtype() {
        "copy"
    } else {
        "to_dtype"
    };
    crate::device::on_device(
        t.device(),
        || {
            crate::cpu::catch_oom(op, || {
                Ok(dispatch_any!(t.dtype(), S => dispatch_any!(dtype, D => {
                    from_vec(crate::cpu::gather_cast::<S, D>(t.data()), t.shape())
                })))
            })
        },
        || crate::cuda::launch::cast("contiguous", t, dtype),
    )
}

/// `f` of a host copy of `x` (detached), its result copied back to `x`'s device: for the few
/// ops without a CUDA kernel whose results are small or never recorded (index reductions,
/// `all`/`any`). Costs a copy each way and a synchronisation.
pub(crate) fn on_host(
    op: &str,
    x: &Tensor,
    f: impl FnOnce(&Tensor) -> Result<Tensor>,
) -> Result<Tensor> {
    let host = crate::cuda::launch::transfer(op, &x.detach(), Device::Cpu)?;
    let out = f(&host)?;
    crate::cuda::launch::transfer(op, &out, x.device())
}

/// `t` as `dtype` (no graph; returns `t` itself when the dtype already matches).
pub fn cast(t: &Tensor, dtype: DType) -> Result<Tensor> {
    if t.dtype() == dtype {
        return Ok(t.clone());
    }
    contiguous_copy(t, dtype)
}

/// `t` as a C-contiguous tensor (itself if it already is).
pub fn contiguous(t: &Tensor) -> Result<Tensor> {
    if t.is_contiguous() {
        return Ok(t.clone());
    }
    shape::copy_op(t)
}
