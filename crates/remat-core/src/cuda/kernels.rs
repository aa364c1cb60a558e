//! CUDA C sources of the kernels, compiled at run time with NVRTC (no toolkit at build time)
//! and cached: each module is compiled once per process (PTX, shared by all devices) and
//! loaded once per device (see `context`).
//!
//! Index math: every operand is described by a [`KLayout`] (shape and strides in elements,
//! broadcast axes with stride 0, up to [`MAX_DIMS`] axes after merging) and the kernel maps
//! the linear C-order output index to the operand's storage offset. Pointers are passed with
//! the view's offset already applied.

use cudarc::driver::DeviceRepr;
use cudarc::nvrtc::{compile_ptx_with_opts, CompileOptions, Ptx};
use parking_lot::Mutex;
use std::collections::HashMap;

/// Most axes a kernel operand may have (after merging contiguous axes).
pub const MAX_DIMS: usize = 8;

/// Threads per block of every kernel (the sum kernel's tree reduction relies on it).
pub const BLOCK: u32 = 256;

/// A strided operand as the kernels see it; mirrors `struct Lay` in [`COMMON`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct KLayout {
    /// Number of axes in use.
    pub ndim: i32,
    /// Padding (keeps the C layout explicit).
    pub pad: i32,
    /// Extent of each axis.
    pub shape: [i64; MAX_DIMS],
    /// Step in elements along each axis (0: broadcast).
    pub strides: [i64; MAX_DIMS],
}

// SAFETY: plain old data with the same C layout as the kernels' `struct Lay`.
unsafe impl DeviceRepr for KLayout {}

/// Declarations shared by the modules: the layout struct and the index mapping.
const COMMON: &str = r#"
#define MAXD 8
struct Lay { int ndim; int pad; long long shape[MAXD]; long long strides[MAXD]; };

// Storage offset (elements) of the i-th element in C order of the view described by l.
__device__ __forceinline__ long long loff(const Lay& l, long long i) {
    long long o = 0;
    for (int d = l.ndim - 1; d >= 0; --d) {
        long long s = l.shape[d];
        o += (i % s) * l.strides[d];
        i /= s;
    }
    return o;
}
#define GRID_LOOP(i, n) \
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += (long long)gridDim.x * blockDim.x)
"#;

/// Elementwise kernels: strided/broadcast unary and binary ops, casts, fill.
pub const ELEMENTWISE: &str = r#"
// Unary op codes (keep in sync with `UnaryCode`).
template <typename T> __device__ __forceinline__ T unary_op(int op, T v) {
    switch (op) {
        case 0: return v;                                  // copy
        case 1: return -v;                                 // neg
        case 2: return exp(v);                             // exp
        case 3: return log(v);                             // log
        case 4: return sqrt(v);                            // sqrt
        case 5: return tanh(v);                            // tanh
        case 6: return T(1) / (T(1) + exp(-v));            // sigmoid
        case 7: return v < T(0) ? T(0) : v;                // relu (NaN stays NaN)
    }
    return v;
}

// Binary op codes (keep in sync with `BinaryCode`): arithmetic, then the fused backward
// formulas of the activations (a: output gradient, b: saved output y).
template <typename T> __device__ __forceinline__ T binary_op(int op, T a, T b) {
    switch (op) {
        case 0: return a + b;
        case 1: return a - b;
        case 2: return a * b;
        case 3: return a / b;
        case 4: return a * (T(1) - b * b);                 // tanh backward
        case 5: return a * b * (T(1) - b);                 // sigmoid backward
        case 6: return b > T(0) ? a : T(0);                // relu backward
        case 7: return a / (b + b);                        // sqrt backward
    }
    return a;
}

#define ELEMENTWISE_KERNELS(T, S) \
extern "C" __global__ void unary_##S(int op, long long n, const T* x, Lay lx, T* y) { \
    GRID_LOOP(i, n) { y[i] = unary_op<T>(op, x[loff(lx, i)]); } \
} \
extern "C" __global__ void binary_##S(int op, long long n, const T* a, Lay la, \
                                      const T* b, Lay lb, T* y) { \
    GRID_LOOP(i, n) { y[i] = binary_op<T>(op, a[loff(la, i)], b[loff(lb, i)]); } \
} \
extern "C" __global__ void fill_##S(long long n, T v, T* y) { \
    GRID_LOOP(i, n) { y[i] = v; } \
} \
extern "C" __global__ void axpy_##S(long long n, T alpha, const T* x, Lay lx, T* y) { \
    GRID_LOOP(i, n) { y[i] += alpha * x[loff(lx, i)]; } \
}

ELEMENTWISE_KERNELS(float, f32)
ELEMENTWISE_KERNELS(double, f64)

extern "C" __global__ void cast_f32_f64(long long n, const float* x, Lay lx, double* y) {
    GRID_LOOP(i, n) { y[i] = (double)x[loff(lx, i)]; }
}
extern "C" __global__ void cast_f64_f32(long long n, const double* x, Lay lx, float* y) {
    GRID_LOOP(i, n) { y[i] = (float)x[loff(lx, i)]; }
}
"#;

/// Sums of contiguous runs: `x` is `rows` runs of `inner` elements; each run is cut into
/// `nchunks` chunks of `chunk` elements and each block sums one chunk with a tree reduction
/// (pairwise, like the CPU sums). Two passes (chunks, then the partial sums) keep long runs
/// parallel.
pub const REDUCE: &str = r#"
template <typename T>
__device__ __forceinline__ void sum_chunks(long long rows, long long inner, long long chunk,
                                           long long nchunks, const T* x, T* y, T* buf) {
    for (long long blk = blockIdx.x; blk < rows * nchunks; blk += gridDim.x) {
        long long r = blk / nchunks, c = blk % nchunks;
        long long start = c * chunk;
        long long end = start + chunk < inner ? start + chunk : inner;
        const T* p = x + r * inner;
        T acc = T(0);
        for (long long j = start + threadIdx.x; j < end; j += blockDim.x) acc += p[j];
        buf[threadIdx.x] = acc;
        __syncthreads();
        for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
            if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
            __syncthreads();
        }
        if (threadIdx.x == 0) y[blk] = buf[0];
        __syncthreads();
    }
}

extern "C" __global__ void sum_chunks_f32(long long rows, long long inner, long long chunk,
                                          long long nchunks, const float* x, float* y) {
    __shared__ float buf[256];
    sum_chunks<float>(rows, inner, chunk, nchunks, x, y, buf);
}
extern "C" __global__ void sum_chunks_f64(long long rows, long long inner, long long chunk,
                                          long long nchunks, const double* x, double* y) {
    __shared__ double buf[256];
    sum_chunks<double>(rows, inner, chunk, nchunks, x, y, buf);
}
"#;

/// A module: its cache key, its source and the functions it defines.
pub struct KernelModule {
    /// Cache key (also the NVRTC program name).
    pub name: &'static str,
    /// The CUDA C source (without [`COMMON`], which is prepended).
    pub source: &'static str,
    /// The `extern "C"` kernels it defines.
    pub functions: &'static [&'static str],
}

/// Every kernel module of the backend.
pub const MODULES: &[KernelModule] = &[
    KernelModule {
        name: "elementwise",
        source: ELEMENTWISE,
        functions: &[
            "unary_f32",
            "unary_f64",
            "binary_f32",
            "binary_f64",
            "fill_f32",
            "fill_f64",
            "axpy_f32",
            "axpy_f64",
            "cast_f32_f64",
            "cast_f64_f32",
        ],
    },
    KernelModule {
        name: "reduce",
        source: REDUCE,
        functions: &["sum_chunks_f32", "sum_chunks_f64"],
    },
];

/// The module that defines `function`.
pub fn module_of(function: &str) -> Option<&'static KernelModule> {
    MODULES.iter().find(|m| m.functions.contains(&function))
}

/// Compiled PTX by module name (compiled once per process).
static PTX: Mutex<Option<HashMap<&'static str, Ptx>>> = Mutex::new(None);

/// The PTX of `module`, compiling it with NVRTC on first use. Err: why NVRTC is missing or the
/// compiler's log.
pub fn ptx(module: &KernelModule) -> Result<Ptx, String> {
    if let Err(e) = super::probe::nvrtc() {
        return Err(e.clone());
    }
    let mut cache = PTX.lock();
    let map = cache.get_or_insert_with(HashMap::new);
    if let Some(p) = map.get(module.name) {
        return Ok(p.clone());
    }
    let src = format!("{COMMON}\n{}", module.source);
    let opts = CompileOptions {
        name: Some(format!("{}.cu", module.name)),
        // No arch: the PTX targets NVRTC's default virtual architecture and the driver
        // JIT-compiles it for whatever GPU loads it.
        ..Default::default()
    };
    // A missing symbol inside NVRTC makes cudarc panic; report it as an error instead.
    let compiled = std::panic::catch_unwind(|| compile_ptx_with_opts(&src, opts))
        .map_err(|_| "NVRTC could not be called (incompatible library?)".to_string())?
        .map_err(|e| {
            format!(
                "NVRTC failed to compile kernel module {}: {e:?}",
                module.name
            )
        })?;
    map.insert(module.name, compiled.clone());
    Ok(compiled)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Compiles every module with NVRTC where the library can be found (this needs no GPU);
    /// skips with a message otherwise.
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
            let p = ptx(m).unwrap_or_else(|e| panic!("{e}"));
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

    #[test]
    fn every_function_has_a_module() {
        for f in ["unary_f32", "binary_f64", "sum_chunks_f32", "cast_f64_f32"] {
            assert!(module_of(f).is_some(), "{f}");
        }
        assert_eq!(std::mem::size_of::<KLayout>(), 8 + 16 * MAX_DIMS);
    }
}
