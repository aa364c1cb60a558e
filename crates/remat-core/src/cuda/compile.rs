//! Run-time compilation of the kernel modules with NVRTC, cached per process.
//!
//! Two images per module: a CUBIN for the exact GPU architecture (`sm_XY`) and PTX for
//! NVRTC's default virtual architecture. The CUBIN is tried first because PTX must be
//! JIT-compiled by the driver, and a driver older than the NVRTC that wrote the PTX rejects
//! it (`CUDA_ERROR_UNSUPPORTED_PTX_VERSION`: the pip NVRTC on a machine is often newer than
//! its driver), while machine code from a newer compiler of the same major version loads
//! (CUDA minor-version compatibility). PTX remains the fallback when NVRTC does not know the
//! GPU's architecture.

use super::kernels::{KernelModule, COMMON};
use cudarc::nvrtc::{compile_ptx_with_opts, result, sys, CompileOptions, Ptx};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ffi::{CStr, CString};

/// Compiled PTX by module name.
static PTX: Mutex<Option<HashMap<&'static str, Ptx>>> = Mutex::new(None);

/// Machine code by (module name, architecture XY of `sm_XY`).
type CubinCache = HashMap<(&'static str, u32), Vec<u8>>;

/// Compiled machine code (None until the first compile).
static CUBINS: Mutex<Option<CubinCache>> = Mutex::new(None);

/// Compile with NVRTC, turning a panic inside cudarc (a symbol missing from the library)
/// into an error.
fn with_nvrtc<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    if let Err(e) = super::probe::nvrtc() {
        return Err(e.clone());
    }
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f))
        .map_err(|_| "NVRTC could not be called (incompatible library?)".to_string())?
}

/// The image of `module` for architecture `arch` (`Some(90)`: machine code for `sm_90`;
/// None: PTX), compiled on first use. Err: why NVRTC is missing, or the compiler's log.
pub fn image(module: &KernelModule, arch: Option<u32>) -> Result<Ptx, String> {
    match arch {
        None => ptx_of(module),
        Some(a) => cubin_of(module, a).map(Ptx::from_binary),
    }
}

/// The PTX of `module` (NVRTC's default virtual architecture).
pub fn ptx_of(module: &KernelModule) -> Result<Ptx, String> {
    if let Some(p) = PTX.lock().as_ref().and_then(|m| m.get(module.name)) {
        return Ok(p.clone());
    }
    let p = with_nvrtc(|| ptx(module.name, &format!("{COMMON}\n{}", (module.source)())))?;
    PTX.lock()
        .get_or_insert_with(HashMap::new)
        .insert(module.name, p.clone());
    Ok(p)
}

/// The machine code (an ELF image) of `module` for `sm_{arch}`.
pub fn cubin_of(module: &KernelModule, arch: u32) -> Result<Vec<u8>, String> {
    let key = (module.name, arch);
    if let Some(b) = CUBINS.lock().as_ref().and_then(|m| m.get(&key)) {
        return Ok(b.clone());
    }
    let b = with_nvrtc(|| {
        cubin(
            module.name,
            &format!("{COMMON}\n{}", (module.source)()),
            arch,
        )
    })?;
    CUBINS
        .lock()
        .get_or_insert_with(HashMap::new)
        .insert(key, b.clone());
    Ok(b)
}

fn ptx(name: &str, src: &str) -> Result<Ptx, String> {
    let opts = CompileOptions {
        name: Some(format!("{name}.cu")),
        ..Default::default()
    };
    compile_ptx_with_opts(src, opts)
        .map_err(|e| format!("NVRTC failed to compile kernel module {name}: {e:?}"))
}

/// Machine code for `sm_{arch}` through NVRTC's program API (cudarc's safe wrapper only
/// returns PTX).
fn cubin(name: &str, src: &str, arch: u32) -> Result<Vec<u8>, String> {
    let fail = |what: &str, e: result::NvrtcError| {
        format!("NVRTC failed to {what} kernel module {name} for sm_{arch}: {e:?}")
    };
    let c_src = CString::new(src).map_err(|e| e.to_string())?;
    let c_name = CString::new(format!("{name}.cu")).map_err(|e| e.to_string())?;
    let prog = result::create_program(&c_src, Some(&c_name)).map_err(|e| fail("create", e))?;
    let opts = [format!("--gpu-architecture=sm_{arch}")];
    // SAFETY: `prog` is a live program (destroyed once, below); the source and name outlive it.
    let out = unsafe {
        match result::compile_program(prog, &opts) {
            Err(e) => {
                let log = result::get_program_log(prog)
                    .map(|l| CStr::from_ptr(l.as_ptr()).to_string_lossy().into_owned())
                    .unwrap_or_default();
                Err(format!("{}: {log}", fail("compile", e)))
            }
            Ok(()) => {
                let mut size = 0usize;
                sys::nvrtcGetCUBINSize(prog, &mut size)
                    .result()
                    .map_err(|e| fail("get the CUBIN of", e))
                    .and_then(|()| {
                        let mut bin = vec![0u8; size];
                        sys::nvrtcGetCUBIN(prog, bin.as_mut_ptr() as *mut _)
                            .result()
                            .map_err(|e| fail("get the CUBIN of", e))
                            .map(|()| bin)
                    })
            }
        }
    };
    // SAFETY: created above, not destroyed before.
    let _ = unsafe { result::destroy_program(prog) };
    out
}

#[cfg(test)]
mod tests {
    use super::super::kernels::MODULES;
    use super::*;

    /// Compiles every module to PTX with NVRTC where the library can be found (this needs no
    /// GPU); skips with a message otherwise.
    #[test]
    fn every_kernel_module_compiles_with_nvrtc() {
        match super::super::probe::nvrtc() {
            Err(why) => {
                eprintln!("skipping NVRTC compile test: {why}");
                return;
            }
            Ok(found) => eprintln!("compiling the kernels with NVRTC from {}", found.path),
        }
        for m in MODULES {
            let p = ptx_of(m).unwrap_or_else(|e| panic!("{e}"));
            let text = p.to_src();
            for f in m.functions {
                assert!(
                    text.contains(&format!(".entry {f}(")),
                    "{f} missing from the PTX of {}",
                    m.name
                );
            }
        }
    }

    /// The Hopper machine code the H100/H200 load without a PTX JIT: an ELF image per
    /// module (needs NVRTC, not a GPU).
    #[test]
    fn every_kernel_module_compiles_to_sm90_machine_code() {
        if super::super::probe::nvrtc().is_err() {
            eprintln!("skipping CUBIN compile test: no NVRTC");
            return;
        }
        for m in MODULES {
            let bin = cubin_of(m, 90).unwrap_or_else(|e| panic!("{e}"));
            assert!(
                bin.starts_with(b"\x7fELF"),
                "{} is not an ELF image",
                m.name
            );
        }
    }
}
