//! Finding the CUDA libraries before any `cudarc` call. cudarc's dynamic loader panics when a
//! library is missing, so every entry point of the backend asks this module first: it looks
//! for each library (the loader's own search, then `LD_LIBRARY_PATH`, the CUDA toolkit
//! directories and the `nvidia/*/lib` folders of Python's pip packages), loads it by full path
//! and keeps it loaded. The dynamic loader then resolves cudarc's later `dlopen("libX.so.N")`
//! to the copy already in the process (it matches the loaded library's SONAME), so libraries
//! that only exist inside a pip package work too. Results are cached for the process.

use libloading::Library;
use parking_lot::Mutex;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The major CUDA version cudarc's bindings were built for (feature `cuda-13000`).
const CUDA_MAJOR: &str = "13";

/// Directories registered by the embedding application (the Python package registers its
/// `site-packages` folders) before the first probe.
static EXTRA_DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Libraries loaded by full path; never unloaded (cudarc holds their symbols for the process).
static LOADED: Mutex<Vec<Library>> = Mutex::new(Vec::new());

/// Add directories to search for CUDA libraries (for example Python `site-packages`
/// folders, whose `nvidia/*/lib` subfolders are searched too). Only probes that have not run
/// yet see them.
pub fn add_library_dirs<P: AsRef<Path>>(dirs: &[P]) {
    let mut extra = EXTRA_DIRS.lock();
    for d in dirs {
        let d = d.as_ref().to_path_buf();
        if !extra.contains(&d) {
            extra.push(d);
        }
    }
}

/// The file names a library may have, most preferred first (the version cudarc was built for,
/// then older majors whose API is compatible for what the engine calls, then unversioned).
fn file_names(lib: &str) -> Vec<String> {
    if lib == "nccl" {
        // NCCL is versioned apart from the toolkit (libnccl.so.2 for every 2.x).
        return vec!["libnccl.so.2".into(), "libnccl.so".into()];
    }
    if lib == "cuda" {
        // The driver is versioned by its own ABI (always .so.1), not by the toolkit.
        return vec!["libcuda.so.1".into(), "libcuda.so".into()];
    }
    vec![
        format!("lib{lib}.so.{CUDA_MAJOR}"),
        format!("lib{lib}.so.12"),
        format!("lib{lib}.so"),
    ]
}

/// `nvidia/*/lib` (and `nvidia/*/lib64`) below a `site-packages` folder, where the CUDA pip
/// wheels put their libraries.
fn pip_lib_dirs(site: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let Ok(entries) = std::fs::read_dir(site.join("nvidia")) else {
        return out;
    };
    let mut subs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    subs.sort();
    for s in subs {
        for lib in ["lib", "lib64"] {
            let d = s.join(lib);
            if d.is_dir() {
                out.push(d);
            }
        }
    }
    out
}

/// `lib/python3*/site-packages` below an interpreter prefix (a virtualenv or conda env).
fn site_packages_of_prefix(prefix: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for lib in ["lib", "lib64"] {
        let Ok(entries) = std::fs::read_dir(prefix.join(lib)) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            if name.to_string_lossy().starts_with("python") {
                let sp = e.path().join("site-packages");
                if sp.is_dir() {
                    out.push(sp);
                }
            }
        }
    }
    out
}

/// The `site-packages` folders of the `python3` on `PATH`, asked once. Only used when no
/// embedding application registered its folders (a pure Rust program or test).
fn python_site_packages() -> &'static [PathBuf] {
    static DIRS: OnceLock<Vec<PathBuf>> = OnceLock::new();
    DIRS.get_or_init(|| {
        let script = "import site, sys\n\
                      d = list(site.getsitepackages()) + [site.getusersitepackages()] + sys.path\n\
                      print('\\n'.join(x for x in d if x))";
        let out = std::process::Command::new("python3")
            .args(["-c", script])
            .stderr(std::process::Stdio::null())
            .output();
        match out {
            Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout)
                .lines()
                .map(PathBuf::from)
                .filter(|p| p.is_dir())
                .collect(),
            _ => Vec::new(),
        }
    })
}

/// Every directory searched for a CUDA library, in order, without duplicates.
pub fn search_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = Vec::new();
    let env_list = |name: &str| -> Vec<PathBuf> {
        std::env::var_os(name)
            .map(|v| std::env::split_paths(&v).collect())
            .unwrap_or_default()
    };
    // An explicit override first, then what the application registered.
    dirs.extend(env_list("REMAT_CUDA_LIB_DIRS"));
    let extra = EXTRA_DIRS.lock().clone();
    for d in &extra {
        dirs.push(d.clone());
        dirs.extend(pip_lib_dirs(d));
    }
    dirs.extend(env_list("LD_LIBRARY_PATH"));
    for var in ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"] {
        if let Some(root) = std::env::var_os(var) {
            let root = PathBuf::from(root);
            dirs.push(root.join("lib64"));
            dirs.push(root.join("lib"));
        }
    }
    for d in [
        "/usr/local/cuda/lib64",
        "/usr/local/cuda/targets/x86_64-linux/lib",
        "/usr/lib/x86_64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu",
        "/usr/lib64",
        "/usr/lib",
        "/usr/lib/wsl/lib",
    ] {
        dirs.push(PathBuf::from(d));
    }
    // Python environments: the active virtualenv / conda env, then the interpreter's own.
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(prefix) = std::env::var_os(var) {
            for sp in site_packages_of_prefix(Path::new(&prefix)) {
                dirs.extend(pip_lib_dirs(&sp));
            }
        }
    }
    if extra.is_empty() {
        for sp in python_site_packages() {
            dirs.extend(pip_lib_dirs(sp));
        }
    }
    let mut seen = std::collections::HashSet::new();
    dirs.retain(|d| d.is_dir() && seen.insert(d.clone()));
    dirs
}

/// Where a library was found.
#[derive(Clone, Debug)]
pub struct Found {
    /// The file name or full path it was loaded from.
    pub path: String,
}

/// Load `lib` (e.g. `"nvrtc"`) from the loader's own search or the search directories and
/// keep it loaded. `deps` are loaded first from the same directory when present (cuBLAS needs
/// cuBLASLt). Err: the names and directories tried.
fn load(lib: &str, deps: &[&str]) -> Result<Found, String> {
    let names = file_names(lib);
    let mut loaded = LOADED.lock();
    for name in &names {
        // SAFETY: loading a CUDA library runs only its initialisers, which have no
        // preconditions on our side.
        if let Ok(l) = unsafe { Library::new(name) } {
            loaded.push(l);
            return Ok(Found { path: name.clone() });
        }
    }
    let dirs = search_dirs();
    for dir in &dirs {
        for name in &names {
            let path = dir.join(name);
            if !path.is_file() {
                continue;
            }
            for dep in deps {
                for dn in file_names(dep) {
                    let dp = dir.join(&dn);
                    if dp.is_file() {
                        // SAFETY: as above.
                        if let Ok(l) = unsafe { Library::new(&dp) } {
                            loaded.push(l);
                            break;
                        }
                    }
                }
            }
            // SAFETY: as above.
            match unsafe { Library::new(&path) } {
                Ok(l) => {
                    loaded.push(l);
                    return Ok(Found {
                        path: path.display().to_string(),
                    });
                }
                Err(_) => continue,
            }
        }
    }
    Err(format!(
        "{} not found (searched the loader path and {} directories)",
        names[0],
        dirs.len()
    ))
}

/// The driver library, probed once.
pub fn driver() -> &'static Result<Found, String> {
    static R: OnceLock<Result<Found, String>> = OnceLock::new();
    R.get_or_init(|| {
        load("cuda", &[]).map_err(|_| "no CUDA driver (libcuda.so.1 not found)".to_string())
    })
}

/// NVRTC (run-time compiler of the kernels), probed once.
pub fn nvrtc() -> &'static Result<Found, String> {
    static R: OnceLock<Result<Found, String>> = OnceLock::new();
    R.get_or_init(|| {
        load("nvrtc", &[]).map_err(|e| format!("no NVRTC (the CUDA run-time compiler): {e}"))
    })
}

/// cuBLAS (matrix products), probed once.
pub fn cublas() -> &'static Result<Found, String> {
    static R: OnceLock<Result<Found, String>> = OnceLock::new();
    R.get_or_init(|| load("cublas", &["cublasLt"]).map_err(|e| format!("no cuBLAS: {e}")))
}

/// NCCL (collectives across GPUs and processes), probed once.
pub fn nccl() -> &'static Result<Found, String> {
    static R: OnceLock<Result<Found, String>> = OnceLock::new();
    R.get_or_init(|| load("nccl", &[]).map_err(|e| format!("no NCCL: {e}")))
}

/// The number of CUDA devices, or why there is none usable. Probed once: the driver library,
/// `cuInit`, and the device count.
pub fn devices() -> &'static Result<usize, String> {
    static R: OnceLock<Result<usize, String>> = OnceLock::new();
    R.get_or_init(|| {
        driver().as_ref().map_err(|e| e.clone())?;
        use cudarc::driver::result;
        match result::init() {
            Ok(()) => {}
            Err(e) if e.0 == cudarc::driver::sys::CUresult::CUDA_ERROR_NO_DEVICE => {
                return Err("no CUDA device".to_string())
            }
            Err(e) => return Err(format!("the CUDA driver failed to initialise: {e}")),
        }
        let n = result::device::get_count()
            .map_err(|e| format!("the CUDA driver could not count devices: {e}"))?;
        if n <= 0 {
            return Err("no CUDA device".to_string());
        }
        Ok(n as usize)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_prefer_the_built_major() {
        assert_eq!(file_names("nvrtc")[0], "libnvrtc.so.13");
        assert_eq!(file_names("cuda")[0], "libcuda.so.1");
    }

    #[test]
    fn search_dirs_exist_and_are_unique() {
        let d = search_dirs();
        let set: std::collections::HashSet<_> = d.iter().collect();
        assert_eq!(set.len(), d.len());
        assert!(d.iter().all(|p| p.is_dir()));
    }
}
