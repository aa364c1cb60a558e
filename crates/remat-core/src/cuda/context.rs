//! Per-device state, created lazily on first use and kept for the process: the cudarc
//! context, the compute stream every kernel, copy and GEMM of that device runs on (so work is
//! ordered without events), the copy stream offloading uses (ordered against the compute
//! stream with explicit events, see `offload`), the kernels loaded on it, and its cuBLAS
//! handle. cudarc's own per-buffer event tracking is switched off: the engine orders its two
//! streams itself, and the tracking would record an event at every kernel argument.

use super::{compile, kernels};
use crate::device::Device;
use crate::error::{Error, Result};
use cudarc::cublas::CudaBlas;
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream};
use cudarc::nvrtc::Ptx;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

/// Everything the backend keeps for one GPU.
pub struct DeviceContext {
    /// The device's ordinal.
    pub ordinal: usize,
    /// The driver context (primary context of the device).
    pub ctx: Arc<CudaContext>,
    /// The compute capability as XY (90 for `sm_90`), if the driver reported it.
    pub arch: Option<u32>,
    /// The compute stream: all kernels, GEMMs and synchronous copies of this device.
    pub stream: Arc<CudaStream>,
    /// The copy stream (offload and prefetch), created on first use.
    copy: OnceLock<std::result::Result<Arc<CudaStream>, String>>,
    functions: Mutex<HashMap<&'static str, CudaFunction>>,
    blas: OnceLock<std::result::Result<Arc<CudaBlas>, String>>,
}

/// Contexts by ordinal (None: not created yet).
static CONTEXTS: Mutex<Vec<Option<Arc<DeviceContext>>>> = Mutex::new(Vec::new());

/// Run a cudarc call, turning a panic inside it (a missing symbol in an old driver) into a
/// device error instead of unwinding through the engine.
pub(crate) fn guarded<T>(op: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown failure".to_string());
            Err(Error::device(op, format!("CUDA call failed: {msg}")))
        }
    }
}

/// The context of `device` (a CUDA device), created on first use.
pub fn get(op: &str, device: Device) -> Result<Arc<DeviceContext>> {
    let Device::Cuda(ordinal) = device else {
        return Err(Error::device(op, "expected a CUDA device, got cpu"));
    };
    super::ensure_available(op, device)?;
    let mut all = CONTEXTS.lock();
    if all.len() <= ordinal {
        all.resize(ordinal + 1, None);
    }
    if let Some(c) = &all[ordinal] {
        return Ok(c.clone());
    }
    let c = guarded(op, || {
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| Error::device(op, format!("cannot create a context on {device}: {e}")))?;
        // SAFETY: switched off before any buffer exists; the engine orders its compute and
        // copy streams with explicit events (see `offload`).
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        let arch = ctx
            .compute_capability()
            .ok()
            .map(|(major, minor)| (major * 10 + minor) as u32);
        Ok(Arc::new(DeviceContext {
            ordinal,
            arch,
            ctx,
            stream,
            copy: OnceLock::new(),
            functions: Mutex::new(HashMap::new()),
            blas: OnceLock::new(),
        }))
    })?;
    all[ordinal] = Some(c.clone());
    Ok(c)
}

/// Contexts created so far (for `synchronize`).
pub fn created() -> Vec<Arc<DeviceContext>> {
    CONTEXTS.lock().iter().flatten().cloned().collect()
}

impl DeviceContext {
    /// The device.
    pub fn device(&self) -> Device {
        Device::Cuda(self.ordinal)
    }

    /// The kernel `name`, compiling (once per process) and loading (once per device) its
    /// module on first use: machine code for this GPU's architecture first, PTX if that
    /// cannot be compiled or loaded (see `compile`).
    pub fn function(&self, op: &str, name: &'static str) -> Result<CudaFunction> {
        let mut fs = self.functions.lock();
        if let Some(f) = fs.get(name) {
            return Ok(f.clone());
        }
        let module = kernels::module_of(name)
            .ok_or_else(|| Error::device(op, format!("no CUDA kernel named {name}")))?;
        let load = |image: Ptx| -> Result<Arc<CudaModule>> {
            guarded(op, || {
                self.ctx.load_module(image).map_err(|e| {
                    Error::device(
                        op,
                        format!("cannot load kernel module {}: {e}", module.name),
                    )
                })
            })
        };
        let native = match self.arch {
            Some(a) => compile::cubin_of(module, a)
                .map_err(|e| Error::device(op, e))
                .and_then(|bin| load(Ptx::from_binary(bin))),
            None => Err(Error::device(op, "compute capability unknown")),
        };
        let m = match native {
            Ok(m) => m,
            Err(native_err) => {
                let ptx = compile::ptx_of(module).map_err(|e| Error::device(op, e))?;
                load(ptx).map_err(|e| {
                    Error::device(
                        op,
                        format!("{e} (machine code for this GPU failed too: {native_err})"),
                    )
                })?
            }
        };
        guarded(op, || {
            for &f in module.functions {
                let func = m
                    .load_function(f)
                    .map_err(|e| Error::device(op, format!("cannot load kernel {f}: {e}")))?;
                fs.insert(f, func);
            }
            Ok(())
        })?;
        fs.get(name)
            .cloned()
            .ok_or_else(|| Error::device(op, format!("kernel {name} missing from its module")))
    }

    /// The cuBLAS handle of this device (bound to its stream), created on first use.
    pub fn blas(&self, op: &str) -> Result<Arc<CudaBlas>> {
        let r = self.blas.get_or_init(|| {
            super::probe::cublas().as_ref().map_err(|e| e.clone())?;
            let stream = self.stream.clone();
            std::panic::catch_unwind(move || CudaBlas::new(stream))
                .map_err(|_| "cuBLAS could not be called (incompatible library?)".to_string())?
                .map(Arc::new)
                .map_err(|e| format!("cannot create a cuBLAS handle: {e:?}"))
        });
        r.clone().map_err(|e| Error::device(op, e))
    }

    /// The copy stream of this device, created on first use: a non-blocking stream, so it
    /// never waits for the compute stream implicitly (every dependency is an event).
    pub fn copy_stream(&self, op: &str) -> Result<Arc<CudaStream>> {
        let r = self.copy.get_or_init(|| {
            let ctx = self.ctx.clone();
            std::panic::catch_unwind(move || ctx.new_stream())
                .map_err(|_| "cannot create a copy stream (driver call failed)".to_string())?
                .map_err(|e| format!("cannot create a copy stream: {e}"))
        });
        r.clone().map_err(|e| Error::device(op, e))
    }

    /// Wait for all work queued on this device (both streams).
    pub fn synchronize(&self, op: &str) -> Result<()> {
        guarded(op, || {
            self.stream
                .synchronize()
                .map_err(|e| Error::device(op, format!("{}: {e}", self.device())))?;
            if let Some(Ok(copy)) = self.copy.get() {
                copy.synchronize()
                    .map_err(|e| Error::device(op, format!("{}: {e}", self.device())))?;
            }
            Ok(())
        })
    }
}
