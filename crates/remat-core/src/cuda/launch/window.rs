//! im2col / col2im / max-pooling arg-max launches for the sliding-window ops (`ops/window.rs`,
//! `ops/pool.rs`): the geometry is
//! three spatial axes (`[input, out, kernel, stride, padding, dilation]`, each `[usize; 3]`),
//! one thread per output element.

use super::common::{buffer, contig, grid, kernel_name, launch, tensor};
use crate::cuda::storage::CudaBuffer;
use crate::dtype::DType;
use crate::error::Result;
use crate::tensor::Tensor;
use cudarc::driver::PushKernelArg;

/// The lifted geometry of one plane: input, output, kernel, stride, padding, dilation.
pub type WindowGeometry = [[usize; 3]; 6];

/// Kernel `base` over the contiguous `src`: `total` elements of `out_dtype` (None: `src`'s)
/// shaped `shape`.
fn run(
    op: &str,
    base: &str,
    src: &Tensor,
    total: usize,
    geometry: &WindowGeometry,
    shape: &[usize],
    out_dtype: Option<DType>,
) -> Result<Tensor> {
    let src = contig(op, src)?;
    let sb = buffer(op, &src)?;
    let ctx = sb.context().clone();
    let out = CudaBuffer::alloc(op, &ctx, total, out_dtype.unwrap_or(src.dtype()))?;
    if total > 0 {
        let f = ctx.function(op, kernel_name(base, src.dtype()))?;
        let (n, sp, op_) = (total as i64, sb.ptr_at(src.layout().offset), out.ptr());
        let g: Vec<i64> = geometry.iter().flatten().map(|&v| v as i64).collect();
        // `im2col_*` / `col2im_*` / `pool_argmax_*`: reads the contiguous source, writes
        // `total` contiguous elements; `g` is the 18 geometry values in the kernel's parameter order.
        launch!(
            op,
            ctx,
            f,
            grid(total),
            n,
            sp,
            op_,
            g[0],
            g[1],
            g[2],
            g[3],
            g[4],
            g[5],
            g[6],
            g[7],
            g[8],
            g[9],
            g[10],
            g[11],
            g[12],
            g[13],
            g[14],
            g[15],
            g[16],
            g[17]
        )?;
    }
    Ok(tensor(out, shape))
}

/// im2col: `x` of `planes` planes → `(planes · volume · L)` elements shaped `shape`.
pub fn im2col(
    op: &str,
    x: &Tensor,
    geometry: &WindowGeometry,
    planes: usize,
    shape: &[usize],
) -> Result<Tensor> {
    let volume: usize = geometry[2].iter().product();
    let l: usize = geometry[1].iter().product();
    run(op, "im2col", x, planes * volume * l, geometry, shape, None)
}

/// col2im: columns of `planes` planes → `(planes · input)` elements shaped `shape`.
pub fn col2im(
    op: &str,
    cols: &Tensor,
    geometry: &WindowGeometry,
    planes: usize,
    shape: &[usize],
) -> Result<Tensor> {
    let input: usize = geometry[0].iter().product();
    run(op, "col2im", cols, planes * input, geometry, shape, None)
}

/// Max pooling's arg-max: for each window of each of the `planes` planes of `x`, the flat
/// in-plane index of its maximum (NaN winning; 0 for a window wholly in the padding), as an
/// int64 tensor `(planes, L)`.
pub fn pool_argmax(
    op: &str,
    x: &Tensor,
    geometry: &WindowGeometry,
    planes: usize,
) -> Result<Tensor> {
    let l: usize = geometry[1].iter().product();
    run(
        op,
        "pool_argmax",
        x,
        planes * l,
        geometry,
        &[planes, l],
        Some(DType::I64),
    )
}
