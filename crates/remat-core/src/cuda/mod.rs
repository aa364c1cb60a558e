//! The CUDA backend (cargo feature `cuda`, on by default). Nothing is linked at build time:
//! the driver, NVRTC and cuBLAS are loaded at run time through `cudarc`, after `probe` has
//! checked that each library exists (cudarc would panic otherwise). Without a driver or a
//! GPU — or in a build without the feature — every request for a GPU reports a `DeviceError`
//! with the reason instead of failing in any other way.
//!
//! Pieces: `probe` (library search), `context` (per-device context, stream, kernels, cuBLAS
//! handle), `kernels` (CUDA C sources; `typed_kernels` for those of every dtype, `arith_kernels`
//! for logic, classification, integer-aware division and prefix sums), `compile` (NVRTC: machine code for the GPU, PTX as
//! fallback, cached), `storage` (device buffers),
//! `launch` (kernel launches that make tensors), `blas` (GEMM), `offload` (pinned host copies
//! of checkpoint inputs, copy stream, prefetch).

use crate::device::Device;
use crate::error::{Error, Result};

#[cfg(feature = "cuda")]
pub mod arith_kernels;
#[cfg(feature = "cuda")]
pub mod blas;
#[cfg(feature = "cuda")]
pub mod compile;
#[cfg(feature = "cuda")]
pub mod context;
#[cfg(feature = "cuda")]
pub mod kernels;
#[cfg(feature = "cuda")]
pub mod launch;
pub mod nccl;
#[cfg(feature = "cuda")]
pub mod offload;
#[cfg(feature = "cuda")]
pub mod probe;
#[cfg(feature = "cuda")]
pub mod storage;
#[cfg(feature = "cuda")]
pub mod typed_kernels;

/// Without the `cuda` feature no CUDA tensor can exist; these stand-ins keep the ops'
/// CUDA branches compiling and report the missing backend if ever reached.
#[cfg(not(feature = "cuda"))]
pub mod launch {
    use crate::device::Device;
    use crate::dtype::{DType, Element};
    use crate::error::{Error, Result};
    use crate::tensor::Tensor;

    fn none<T>(op: &str) -> Result<T> {
        Err(Error::device(
            op,
            "this build of remat has no CUDA backend (cargo feature `cuda`)",
        ))
    }
    /// See the CUDA build.
    pub fn unary(op: &str, _: i32, _: &Tensor, _: f64) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn binary(op: &str, _: i32, _: &Tensor, _: &Tensor, _: &[usize], _: f64) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn flip(op: &str, _: &Tensor, _: &[usize]) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn softmax(op: &str, _: &Tensor, _: usize, _: bool) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn softmax_backward(op: &str, _: &Tensor, _: &Tensor, _: usize, _: bool) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn layer_norm(
        op: &str,
        _: &Tensor,
        _: Option<&Tensor>,
        _: Option<&Tensor>,
        _: f64,
    ) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    #[allow(clippy::type_complexity)]
    pub fn layer_norm_backward(
        op: &str,
        _: &Tensor,
        _: &Tensor,
        _: Option<&Tensor>,
        _: f64,
        _: bool,
        _: bool,
    ) -> Result<(Option<Tensor>, Option<Tensor>)> {
        none(op)
    }
    /// See the CUDA build.
    pub fn max_rows(op: &str, _: &Tensor, _: usize, _: usize, _: &[usize]) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn dropout(op: &str, _: &Tensor, _: crate::rng::RngState, _: f64) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn index_select(op: &str, _: &Tensor, _: usize, _: &[usize]) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn index_add(op: &str, _: &Tensor, _: usize, _: usize, _: &[usize]) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn gather(op: &str, _: &Tensor, _: usize, _: &[usize], _: &[usize]) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn scatter_add(op: &str, _: &Tensor, _: usize, _: &Tensor, _: &[usize]) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn compare(op: &str, _: i32, _: &Tensor, _: &Tensor, _: &[usize]) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn copy(op: &str, _: &Tensor) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn full(op: &str, _: Device, _: &[usize], _: DType, _: f64) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn cast(op: &str, _: &Tensor, _: DType) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn sum_rows(op: &str, _: &Tensor, _: usize, _: usize, _: &[usize]) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn to_host_vec<T: Element>(op: &str, _: &Tensor) -> Result<Vec<T>> {
        none(op)
    }
    /// The lifted geometry of one sliding-window plane (see the CUDA build).
    pub type WindowGeometry = [[usize; 3]; 6];
    /// See the CUDA build.
    pub fn im2col(
        op: &str,
        _: &Tensor,
        _: &WindowGeometry,
        _: usize,
        _: &[usize],
    ) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn col2im(
        op: &str,
        _: &Tensor,
        _: &WindowGeometry,
        _: usize,
        _: &[usize],
    ) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn pool_argmax(op: &str, _: &Tensor, _: &WindowGeometry, _: usize) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn logic(op: &str, _: i32, _: &Tensor, _: &Tensor, _: &[usize]) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn logic_not(op: &str, _: &Tensor) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn classify(op: &str, _: i32, _: &Tensor) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn divmod(op: &str, _: i32, _: &Tensor, _: &Tensor, _: &[usize]) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn int_zip(op: &str, _: i32, _: &Tensor, _: &Tensor, _: &[usize]) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn cumsum(op: &str, _: &Tensor, _: usize) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn transfer(op: &str, _: &Tensor, _: Device) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn axpy_inplace(op: &str, _: &Tensor, _: &Tensor, _: f64) -> Result<()> {
        none(op)
    }
    /// See the CUDA build.
    pub fn empty(op: &str, _: Device, _: &[usize], _: DType) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn where_(op: &str, _: &Tensor, _: &Tensor, _: &Tensor, _: &[usize]) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn copy_into(op: &str, _: &Tensor, _: &Tensor, _: bool) -> Result<()> {
        none(op)
    }
    /// See the CUDA build.
    pub fn fill_inplace(op: &str, _: &Tensor, _: f64) -> Result<()> {
        none(op)
    }
    /// See the CUDA build.
    pub fn cross_entropy(op: &str, _: &Tensor, _: &[i64], _: usize, _: usize) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn cross_entropy_backward(
        op: &str,
        _: &Tensor,
        _: &[i64],
        _: &Tensor,
        _: usize,
        _: usize,
    ) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    #[allow(clippy::too_many_arguments)]
    pub fn sgd_step(
        op: &str,
        _: &Tensor,
        _: &Tensor,
        _: Option<&Tensor>,
        _: bool,
        _: f64,
        _: f64,
        _: f64,
        _: f64,
        _: bool,
    ) -> Result<()> {
        none(op)
    }
    /// See the CUDA build.
    #[allow(clippy::too_many_arguments)]
    pub fn adam_step(
        op: &str,
        _: &Tensor,
        _: &Tensor,
        _: &Tensor,
        _: &Tensor,
        _: Option<&Tensor>,
        _: bool,
        _: f64,
        _: f64,
        _: f64,
        _: f64,
        _: f64,
        _: f64,
        _: f64,
    ) -> Result<()> {
        none(op)
    }
    /// See the CUDA build.
    pub fn matmul_nd(
        op: &str,
        _: &Tensor,
        _: &Tensor,
        _: &[usize],
        _: Option<&Tensor>,
    ) -> Result<Tensor> {
        none(op)
    }
    /// See the CUDA build.
    pub fn matmul_nd_scaled(
        op: &str,
        _: &Tensor,
        _: &Tensor,
        _: &[usize],
        _: Option<(&Tensor, f64)>,
        _: f64,
    ) -> Result<Tensor> {
        none(op)
    }
}

/// Why CUDA cannot be used, or the number of devices.
fn status() -> std::result::Result<usize, String> {
    #[cfg(feature = "cuda")]
    {
        probe::devices().clone()
    }
    #[cfg(not(feature = "cuda"))]
    {
        Err("this build of remat has no CUDA backend (cargo feature `cuda`)".to_string())
    }
}

/// Whether a usable CUDA device exists.
pub fn is_available() -> bool {
    status().is_ok()
}

/// Number of usable CUDA devices (0 without a driver or a GPU).
pub fn device_count() -> usize {
    status().unwrap_or(0)
}

/// Why CUDA is unavailable (None when it is available).
pub fn unavailable_reason() -> Option<String> {
    status().err()
}

/// Wait for all queued GPU work on every device used so far (nothing to wait for without a
/// GPU).
pub fn synchronize() -> Result<()> {
    #[cfg(feature = "cuda")]
    {
        if is_available() {
            return launch::synchronize_all();
        }
    }
    Ok(())
}

/// Return the blocks the caching allocator keeps for reuse on every device, and the pooled
/// pinned host blocks of offloading, to the driver (live tensors are untouched; the byte
/// counters never include either cache). A no-op without a GPU or without the `cuda`
/// feature.
pub fn empty_cache() -> Result<()> {
    #[cfg(feature = "cuda")]
    {
        if is_available() {
            storage::empty_cache()?;
            offload::release_pinned();
        }
    }
    Ok(())
}

/// Add directories to search for the CUDA libraries (NVRTC, cuBLAS) before the first probe;
/// Python passes its `site-packages` folders so the libraries of the `nvidia-*` pip wheels
/// are found. A no-op without the `cuda` feature.
pub fn add_library_dirs(dirs: &[std::path::PathBuf]) {
    #[cfg(feature = "cuda")]
    probe::add_library_dirs(dirs);
    #[cfg(not(feature = "cuda"))]
    let _ = dirs;
}

/// Error unless `device` can be used.
pub fn ensure_available(op: &str, device: Device) -> Result<()> {
    match device {
        Device::Cpu => Ok(()),
        Device::Cuda(i) => match status() {
            Ok(n) if i < n => Ok(()),
            Ok(n) => Err(Error::device(
                op,
                format!(
                    "{device} is not available: {n} CUDA device{} found",
                    if n == 1 { "" } else { "s" }
                ),
            )),
            Err(why) => Err(Error::device(
                op,
                format!("{device} is not available: {why}"),
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a driver (this is what CI machines have) everything reports the reason; with
    /// a GPU the same calls succeed.
    #[test]
    fn availability_is_consistent_and_never_panics() {
        let avail = is_available();
        assert_eq!(avail, device_count() > 0);
        assert_eq!(avail, unavailable_reason().is_none());
        synchronize().expect("synchronize never fails without work");
        let r = crate::ops::zeros(&[2, 3], crate::DType::F32, Device::Cuda(0));
        if avail {
            let t = r.expect("zeros on cuda:0");
            assert_eq!(t.device(), Device::Cuda(0));
        } else {
            let e = r.expect_err("no GPU: creation must fail");
            let why = unavailable_reason().unwrap_or_default();
            assert!(
                matches!(&e, Error::Device { message, .. } if message.contains(&why)),
                "{e}"
            );
        }
        let n = device_count();
        assert!(matches!(
            ensure_available("t", Device::Cuda(n)),
            Err(Error::Device { .. })
        ));
    }

    #[cfg(feature = "cuda")]
    #[test]
    fn missing_driver_is_reported_by_name() {
        if probe::driver().is_err() {
            assert_eq!(
                unavailable_reason().as_deref(),
                Some("no CUDA driver (libcuda.so.1 not found)")
            );
        }
    }
}
