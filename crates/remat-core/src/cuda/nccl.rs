//! NCCL communicators over the CUDA backend's device buffers, for the `nccl` backend of
//! `remat.distributed`.
//!
//! `libnccl` is loaded at run time through cudarc, as cuBLAS is: [`available`] probes for it
//! first (cudarc's loader panics on a missing library), in the loader path and in the
//! `nvidia/nccl/lib` folder of the `nvidia-nccl-cu13` pip package. Each communicator runs its
//! collectives on a stream of its own: an event orders that stream after the compute stream
//! (the inputs' producers), and the compute stream waits for an event recorded after the
//! collective, so later kernels read the result. A collective writes in place and records
//! the write in its tensor's version counter, as every in-place op does.
//!
//! Without the `cuda` feature the same API exists and reports why NCCL cannot be used.

use crate::error::{Error, Result};

/// How a reduction combines the ranks' values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReduceOp {
    /// The sum.
    Sum,
    /// The product.
    Prod,
    /// The largest value.
    Max,
    /// The smallest value.
    Min,
    /// The mean over the ranks.
    Avg,
}

impl ReduceOp {
    /// From PyTorch's lower-case name (`"sum"`, `"product"`, `"max"`, `"min"`, `"avg"`).
    pub fn parse(op: &str, name: &str) -> Result<ReduceOp> {
        Ok(match name {
            "sum" => ReduceOp::Sum,
            "product" | "prod" => ReduceOp::Prod,
            "max" => ReduceOp::Max,
            "min" => ReduceOp::Min,
            "avg" => ReduceOp::Avg,
            _ => return Err(Error::value(op, format!("unknown reduction {name:?}"))),
        })
    }
}

/// Whether NCCL can be used: a GPU, and `libnccl` found and loaded (the reason otherwise).
pub fn available() -> std::result::Result<(), String> {
    imp::available()
}

/// A new NCCL unique id (made by one rank and sent to the others to form a communicator).
pub fn unique_id(op: &str) -> Result<[u8; 128]> {
    imp::unique_id(op)
}

pub use imp::NcclComm;

#[cfg(feature = "cuda")]
mod imp {
    use super::ReduceOp;
    use crate::cuda::context::{self, DeviceContext};
    use crate::cuda::probe;
    use crate::device::Device;
    use crate::dtype::DType;
    use crate::error::{Error, Result};
    use crate::tensor::Tensor;
    use cudarc::driver::{CudaEvent, CudaStream};
    use cudarc::nccl::{result, sys};
    use parking_lot::Mutex;
    use std::sync::Arc;

    pub(super) fn available() -> std::result::Result<(), String> {
        probe::devices().as_ref().map_err(|e| e.clone())?;
        probe::nccl().as_ref().map(|_| ()).map_err(|e| e.clone())
    }

    fn need(op: &str) -> Result<()> {
        available().map_err(|e| {
            Error::device(
                op,
                format!("NCCL cannot be used: {e} (pip install nvidia-nccl-cu13)"),
            )
        })
    }

    fn nccl_error(op: &str, what: &str, e: result::NcclError) -> Error {
        Error::device(op, format!("NCCL {what} failed: {:?}", e.0))
    }

    pub(super) fn unique_id(op: &str) -> Result<[u8; 128]> {
        need(op)?;
        let id = result::get_uniqueid().map_err(|e| nccl_error(op, "ncclGetUniqueId", e))?;
        let mut out = [0u8; 128];
        for (o, c) in out.iter_mut().zip(id.internal.iter()) {
            *o = *c as u8;
        }
        Ok(out)
    }

    /// One rank's NCCL communicator on one GPU, with its stream.
    pub struct NcclComm {
        comm: Mutex<sys::ncclComm_t>,
        ctx: Arc<DeviceContext>,
        stream: Arc<CudaStream>,
        /// The event recorded after the last collective (None before the first).
        last: Mutex<Option<CudaEvent>>,
        rank: usize,
        size: usize,
    }

    // SAFETY: an NCCL communicator may be used from any thread as long as calls on it are
    // not concurrent; every call takes the `comm` lock.
    unsafe impl Send for NcclComm {}
    // SAFETY: as above.
    unsafe impl Sync for NcclComm {}

    fn nccl_dtype(d: DType) -> sys::ncclDataType_t {
        use sys::ncclDataType_t as N;
        match d {
            DType::F32 => N::ncclFloat32,
            DType::F64 => N::ncclFloat64,
            DType::F16 => N::ncclFloat16,
            DType::BF16 => N::ncclBfloat16,
            DType::I32 => N::ncclInt32,
            DType::I64 => N::ncclInt64,
            DType::Bool => N::ncclUint8,
        }
    }

    fn nccl_op(op: ReduceOp, dtype: DType) -> sys::ncclRedOp_t {
        use sys::ncclRedOp_t as R;
        let boolean = matches!(dtype, DType::Bool);
        match op {
            ReduceOp::Sum if boolean => R::ncclMax, // logical or, as PyTorch's
            ReduceOp::Sum => R::ncclSum,
            ReduceOp::Prod if boolean => R::ncclMin,
            ReduceOp::Prod => R::ncclProd,
            ReduceOp::Max => R::ncclMax,
            ReduceOp::Min => R::ncclMin,
            ReduceOp::Avg => R::ncclAvg,
        }
    }

    impl NcclComm {
        /// Join the communicator of `size` ranks named by `id`, as `rank`, on `device`.
        /// Blocks until every rank joined (NCCL's `ncclCommInitRank`).
        pub fn new(id: &[u8; 128], rank: usize, size: usize, device: Device) -> Result<Self> {
            let op = "init_process_group";
            need(op)?;
            if rank >= size {
                return Err(Error::value(op, format!("rank {rank} is not below {size}")));
            }
            let ctx = context::get(op, device)?;
            ctx.ctx
                .bind_to_thread()
                .map_err(|e| Error::device(op, format!("cannot bind {device}: {e}")))?;
            let stream = ctx
                .ctx
                .new_stream()
                .map_err(|e| Error::device(op, format!("cannot create NCCL's stream: {e}")))?;
            let mut uid = sys::ncclUniqueId { internal: [0; 128] };
            for (u, b) in uid.internal.iter_mut().zip(id.iter()) {
                *u = *b as _;
            }
            let mut comm: sys::ncclComm_t = std::ptr::null_mut();
            // SAFETY: `comm` is a valid out-pointer; the id came from ncclGetUniqueId on
            // some rank; the device is bound to this thread.
            unsafe { result::comm_init_rank(&mut comm, size as i32, uid, rank as i32) }
                .map_err(|e| nccl_error(op, "ncclCommInitRank", e))?;
            Ok(NcclComm {
                comm: Mutex::new(comm),
                ctx,
                stream,
                last: Mutex::new(None),
                rank,
                size,
            })
        }

        /// This communicator's rank.
        pub fn rank(&self) -> usize {
            self.rank
        }

        /// How many ranks it joins.
        pub fn size(&self) -> usize {
            self.size
        }

        /// The device it runs on.
        pub fn device(&self) -> Device {
            self.ctx.device()
        }

        fn check(&self, op: &str, t: &Tensor, what: &str) -> Result<(u64, usize, DType)> {
            if t.device() != self.device() {
                return Err(Error::device(
                    op,
                    format!(
                        "{what} is on {}, but this NCCL communicator is on {}",
                        t.device(),
                        self.device()
                    ),
                ));
            }
            if !t.is_contiguous() {
                return Err(Error::value(
                    op,
                    format!("{what} must be contiguous for NCCL (call .contiguous())"),
                ));
            }
            let buf = t
                .storage()
                .cuda()
                .ok_or_else(|| Error::device(op, format!("{what} is not a CUDA tensor")))?;
            Ok((buf.ptr_at(t.layout().offset), t.numel(), t.dtype()))
        }

        /// Run `f(comm, stream)` on NCCL's stream after the compute stream's queued work,
        /// and make the compute stream wait for it.
        fn enqueue(
            &self,
            op: &str,
            what: &str,
            f: impl FnOnce(
                sys::ncclComm_t,
                sys::cudaStream_t,
            ) -> std::result::Result<result::NcclStatus, result::NcclError>,
        ) -> Result<()> {
            let ev = |e: cudarc::driver::DriverError| Error::device(op, format!("CUDA event: {e}"));
            let comm = self.comm.lock();
            let produced = self.ctx.stream.record_event(None).map_err(ev)?;
            self.stream.wait(&produced).map_err(ev)?;
            f(*comm, self.stream.cu_stream() as _).map_err(|e| nccl_error(op, what, e))?;
            let done = self.stream.record_event(None).map_err(ev)?;
            self.ctx.stream.wait(&done).map_err(ev)?;
            *self.last.lock() = Some(done);
            Ok(())
        }

        /// All-reduce `t` in place.
        pub fn all_reduce(&self, t: &Tensor, reduce: ReduceOp) -> Result<()> {
            let op = "all_reduce";
            let (ptr, n, dtype) = self.check(op, t, "the tensor")?;
            let (dt, red) = (nccl_dtype(dtype), nccl_op(reduce, dtype));
            self.enqueue(op, "ncclAllReduce", |comm, stream| {
                // SAFETY: `ptr` addresses `n` elements of `dtype` on this device, alive
                // (the caller holds `t`) until the stream passes the collective: the buffer
                // is freed stream-ordered on the compute stream, which waits for it.
                unsafe { result::all_reduce(ptr as _, ptr as _, n, dt, red, comm, stream) }
            })?;
            t.storage().bump_version();
            Ok(())
        }

        /// Broadcast `t` from `root` into `t` on every rank.
        pub fn broadcast(&self, t: &Tensor, root: usize) -> Result<()> {
            let op = "broadcast";
            let (ptr, n, dtype) = self.check(op, t, "the tensor")?;
            let dt = nccl_dtype(dtype);
            self.enqueue(op, "ncclBroadcast", |comm, stream| {
                // SAFETY: as in `all_reduce`.
                unsafe { result::broadcast(ptr as _, ptr as _, n, dt, root as i32, comm, stream) }
            })?;
            t.storage().bump_version();
            Ok(())
        }

        /// Every rank's `input`, in rank order, into `output` (size × input's elements).
        pub fn all_gather(&self, output: &Tensor, input: &Tensor) -> Result<()> {
            let op = "all_gather_into_tensor";
            let (out, on, od) = self.check(op, output, "output_tensor")?;
            let (inp, n, dtype) = self.check(op, input, "input_tensor")?;
            if od != dtype || on != n * self.size {
                return Err(Error::value(
                    op,
                    format!(
                        "output_tensor must hold {} x {n} {dtype:?} elements, has {on} {od:?}",
                        self.size
                    ),
                ));
            }
            let dt = nccl_dtype(dtype);
            self.enqueue(op, "ncclAllGather", |comm, stream| {
                // SAFETY: as in `all_reduce`, for both buffers.
                unsafe { result::all_gather(inp as _, out as _, n, dt, comm, stream) }
            })?;
            output.storage().bump_version();
            Ok(())
        }

        /// Reduce `input` across the ranks and give this rank its chunk, in `output`.
        pub fn reduce_scatter(
            &self,
            output: &Tensor,
            input: &Tensor,
            reduce: ReduceOp,
        ) -> Result<()> {
            let op = "reduce_scatter_tensor";
            let (out, n, od) = self.check(op, output, "output")?;
            let (inp, inn, dtype) = self.check(op, input, "input")?;
            if od != dtype || inn != n * self.size {
                return Err(Error::value(
                    op,
                    format!(
                        "input must hold {} x {n} {od:?} elements, has {inn} {dtype:?}",
                        self.size
                    ),
                ));
            }
            let (dt, red) = (nccl_dtype(dtype), nccl_op(reduce, dtype));
            self.enqueue(op, "ncclReduceScatter", |comm, stream| {
                // SAFETY: as in `all_reduce`, for both buffers.
                unsafe { result::reduce_scatter(inp as _, out as _, n, dt, red, comm, stream) }
            })?;
            output.storage().bump_version();
            Ok(())
        }

        /// Whether the last collective finished on the GPU (true before the first). A
        /// collective that another rank never joins never finishes: the caller polls this
        /// against its timeout, then calls [`NcclComm::abort`].
        pub fn is_completed(&self) -> Result<bool> {
            match &*self.last.lock() {
                None => Ok(true),
                Some(e) => e
                    .try_is_complete()
                    .map_err(|e| Error::device("wait", format!("CUDA event: {e}"))),
            }
        }

        /// Abort the communicator (NCCL's `ncclCommAbort`): pending collectives end and the
        /// communicator is unusable. Used after a timeout.
        pub fn abort(&self) {
            let mut comm = self.comm.lock();
            if !comm.is_null() {
                // SAFETY: a communicator made by ncclCommInitRank, aborted once.
                let _ = unsafe { result::comm_abort(*comm) };
                *comm = std::ptr::null_mut();
            }
        }
    }

    impl Drop for NcclComm {
        fn drop(&mut self) {
            let comm = self.comm.get_mut();
            if !comm.is_null() {
                // SAFETY: a communicator made by ncclCommInitRank, destroyed once.
                let _ = unsafe { result::comm_destroy(*comm) };
            }
        }
    }
}

#[cfg(not(feature = "cuda"))]
mod imp {
    use crate::device::Device;
    use crate::error::{Error, Result};
    use crate::tensor::Tensor;

    const WHY: &str = "remat was built without the cuda feature";

    pub(super) fn available() -> std::result::Result<(), String> {
        Err(WHY.to_string())
    }

    pub(super) fn unique_id(op: &str) -> Result<[u8; 128]> {
        Err(Error::device(op, WHY))
    }

    /// Without CUDA no communicator can be made; this type has no values.
    pub struct NcclComm(std::convert::Infallible);

    impl NcclComm {
        /// Always an error without the `cuda` feature.
        pub fn new(_: &[u8; 128], _: usize, _: usize, _: Device) -> Result<Self> {
            Err(Error::device("init_process_group", WHY))
        }
        /// Unreachable: no communicator exists.
        pub fn rank(&self) -> usize {
            match self.0 {}
        }
        /// Unreachable.
        pub fn size(&self) -> usize {
            match self.0 {}
        }
        /// Unreachable.
        pub fn device(&self) -> Device {
            match self.0 {}
        }
        /// Unreachable.
        pub fn all_reduce(&self, _: &Tensor, _: super::ReduceOp) -> Result<()> {
            match self.0 {}
        }
        /// Unreachable.
        pub fn broadcast(&self, _: &Tensor, _: usize) -> Result<()> {
            match self.0 {}
        }
        /// Unreachable.
        pub fn all_gather(&self, _: &Tensor, _: &Tensor) -> Result<()> {
            match self.0 {}
        }
        /// Unreachable.
        pub fn reduce_scatter(&self, _: &Tensor, _: &Tensor, _: super::ReduceOp) -> Result<()> {
            match self.0 {}
        }
        /// Unreachable.
        pub fn is_completed(&self) -> Result<bool> {
            match self.0 {}
        }
        /// Unreachable.
        pub fn abort(&self) {
            match self.0 {}
        }
    }
}
