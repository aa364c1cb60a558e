//! Kernel launches that produce tensors: elementwise maps and zips over strided/broadcast
//! views, fills, casts, contiguous copies, row sums, and host/device transfers. Every output
//! is a fresh contiguous device tensor on the inputs' device.
//!
//! Pieces: `arith` (logic, float classes, integer-aware division, prefix sums), `common` (buffers, launch plans, grids, kernel names, the `launch!` macro),
//! `elementwise` (maps, zips, fills, casts, copies, in-place updates), `index` (index
//! selection and scatter-adds, comparisons: every dtype), `reduce` (row sums and
//! maxima), `matmul` (batched GEMM), `nn` (softmax, layer norm, dropout, cross-entropy),
//! `optim` (fused optimizer steps), `transfer` (host/device copies, synchronisation),
//! `window` (im2col / col2im / pooling arg-max). Every
//! public item is re-exported here, so callers use `cuda::launch::NAME`.

mod arith;
mod common;
mod elementwise;
mod index;
mod matmul;
mod nn;
mod optim;
mod reduce;
mod transfer;
mod window;

pub use arith::{classify, cumsum, divmod, int_zip, logic, logic_not};
pub use common::{buffer, plan, tensor};
pub use elementwise::{
    axpy_inplace, binary, cast, copy, copy_into, empty, fill_inplace, flip, full, unary, where_,
};
pub use index::{compare, gather, index_add, index_select, scatter_add};
pub use matmul::{matmul_nd, matmul_nd_scaled};
pub use nn::{
    cross_entropy, cross_entropy_backward, dropout, layer_norm, layer_norm_backward, softmax,
    softmax_backward,
};
pub use optim::{adam_step, sgd_step};
pub use reduce::{max_rows, sum_rows};
pub use transfer::{synchronize_all, to_host_vec, transfer};
pub use window::{col2im, im2col, pool_argmax, WindowGeometry};
