//! CUDA C sources of the kernels for the integer-aware arithmetic ops, each the device twin
//! of a CPU row with the same results bit for bit:
//! - `logic_S` (int64, int32, bool): the rows of `ops::logical` (and, or, xor, not), bitwise
//!   on integers and logical on bools stored as 0/1 bytes;
//! - `classify_S` (float32, float64): `ops::compare`'s float classes (isnan, isinf,
//!   isfinite), bool out;
//! - `divmod_S` (float32, float64, int64, int32): `ops::int_div`'s floor division,
//!   remainder and truncating division with Python's sign rules (floats through `fmod` as
//!   PyTorch's kernels; integers exact, the divisor checked nonzero on the host first,
//!   `MIN / -1` wrapping as Rust's `wrapping_div`);
//! - `int_zip_i64`: the elementwise rows that keep integers exact (add, sub, mul, maximum,
//!   minimum) in wrapping int64 arithmetic, as `ops::elementwise::int_rules` on the CPU;
//! - `cumsum_S` (float32, float64): `ops::cumsum`'s prefix sums along one axis of a
//!   contiguous `(outer, n, inner)` tensor, one thread per line adding in order (the CPU's
//!   order, so results are bit-identical to it).

/// The module's source (the shared prelude `COMMON` is prepended by the compiler).
pub const SOURCE: &str = r#"
__device__ __forceinline__ long long not_of(long long u) { return ~u; }
__device__ __forceinline__ int not_of(int u) { return ~u; }
__device__ __forceinline__ unsigned char not_of(unsigned char u) { return u ? 0 : 1; }

// Row `op` of the logic table: 0 and, 1 or, 2 xor, 3 not (b unread).
#define LOGIC_KERNEL(T, S) \
extern "C" __global__ void logic_##S(int op, long long n, const T* a, Lay la, const T* b, \
                                     Lay lb, T* y) { \
    GRID_LOOP(i, n) { \
        T u = a[loff(la, i)]; \
        T r; \
        switch (op) { \
            case 0: r = (T)(u & b[loff(lb, i)]); break; \
            case 1: r = (T)(u | b[loff(lb, i)]); break; \
            case 2: r = (T)(u ^ b[loff(lb, i)]); break; \
            default: r = not_of(u); \
        } \
        y[i] = r; \
    } \
}
LOGIC_KERNEL(long long, i64)
LOGIC_KERNEL(int, i32)
LOGIC_KERNEL(unsigned char, b8)

__device__ __forceinline__ float fmod_of(float a, float b) { return fmodf(a, b); }
__device__ __forceinline__ double fmod_of(double a, double b) { return fmod(a, b); }
__device__ __forceinline__ float floor_of(float a) { return floorf(a); }
__device__ __forceinline__ double floor_of(double a) { return floor(a); }
__device__ __forceinline__ float trunc_of(float a) { return truncf(a); }
__device__ __forceinline__ double trunc_of(double a) { return trunc(a); }

// Row `op` of the classification table: 0 isnan, 1 isinf, 2 isfinite.
#define CLASSIFY_KERNEL(T, S) \
extern "C" __global__ void classify_##S(int op, long long n, const T* x, Lay lx, \
                                        unsigned char* y) { \
    GRID_LOOP(i, n) { \
        T v = x[loff(lx, i)]; \
        bool r; \
        switch (op) { \
            case 0: r = isnan(v); break; \
            case 1: r = isinf(v); break; \
            default: r = isfinite(v); \
        } \
        y[i] = r ? 1 : 0; \
    } \
}
CLASSIFY_KERNEL(float, f32)
CLASSIFY_KERNEL(double, f64)

// Modes, in `DivMode` order: 0 floor division, 1 remainder, 2 truncating division.
template <typename T> __device__ __forceinline__ T divmod_float(int mode, T a, T b) {
    T zero = T(0);
    if (mode == 2) return trunc_of(a / b);
    T m = fmod_of(a, b);
    bool adjust = m != zero && ((b < zero) != (m < zero));
    if (mode == 1) return adjust ? m + b : m;
    if (b == zero) return a / b;
    T div = (a - m) / b;
    if (adjust) div -= T(1);
    if (div != zero) {
        T fd = floor_of(div);
        if (div - fd > T(0.5)) fd += T(1);
        return fd;
    }
    return signbit(a / b) ? -zero : zero;
}

// b != 0 (checked before the launch). b == -1 is done apart: MIN / -1 overflows in C, and
// Rust's wrapping_div gives MIN (the negation's low bits).
template <typename T> __device__ __forceinline__ T divmod_int(int mode, T a, T b) {
    T q, r;
    if (b == T(-1)) {
        q = (T)(0ULL - (unsigned long long)(long long)a);
        r = 0;
    } else {
        q = a / b;
        r = a % b;
    }
    bool adjust = r != 0 && ((r < 0) != (b < 0));
    if (mode == 0) return adjust ? q - 1 : q;
    if (mode == 1) return adjust ? r + b : r;
    return q;
}

#define DIVMOD_KERNEL(T, S, F) \
extern "C" __global__ void divmod_##S(int mode, long long n, const T* a, Lay la, const T* b, \
                                      Lay lb, T* y) { \
    GRID_LOOP(i, n) { y[i] = F<T>(mode, a[loff(la, i)], b[loff(lb, i)]); } \
}
DIVMOD_KERNEL(float, f32, divmod_float)
DIVMOD_KERNEL(double, f64, divmod_float)
DIVMOD_KERNEL(long long, i64, divmod_int)
DIVMOD_KERNEL(int, i32, divmod_int)

// Integer rows of the elementwise table, exact in int64 and wrapping as Rust's wrapping_*
// (through unsigned arithmetic: signed overflow is undefined in C): 0 add, 1 sub, 2 mul,
// 3 maximum, 4 minimum.
extern "C" __global__ void int_zip_i64(int op, long long n, const long long* a, Lay la,
                                       const long long* b, Lay lb, long long* y) {
    GRID_LOOP(i, n) {
        long long u = a[loff(la, i)], v = b[loff(lb, i)];
        unsigned long long uu = (unsigned long long)u, uv = (unsigned long long)v;
        long long r;
        switch (op) {
            case 0: r = (long long)(uu + uv); break;
            case 1: r = (long long)(uu - uv); break;
            case 2: r = (long long)(uu * uv); break;
            case 3: r = u > v ? u : v; break;
            default: r = u < v ? u : v;
        }
        y[i] = r;
    }
}

// Inclusive prefix sums along the middle axis of a contiguous (outer, n, inner) tensor: one
// thread per line, the first element copied (so -0.0 stays -0.0, as on the CPU).
#define CUMSUM_KERNEL(T, S) \
extern "C" __global__ void cumsum_##S(long long outer, long long n, long long inner, \
                                      const T* x, T* y) { \
    GRID_LOOP(t, outer * inner) { \
        long long o = t / inner, r = t % inner; \
        const T* p = x + o * n * inner + r; \
        T* q = y + o * n * inner + r; \
        T acc = p[0]; \
        q[0] = acc; \
        for (long long j = 1; j < n; ++j) { \
            acc = p[j * inner] + acc; \
            q[j * inner] = acc; \
        } \
    } \
}
CUMSUM_KERNEL(float, f32)
CUMSUM_KERNEL(double, f64)
"#;

/// The `extern "C"` kernels of [`SOURCE`].
pub const FUNCTIONS: &[&str] = &[
    "logic_i64",
    "logic_i32",
    "logic_b8",
    "classify_f32",
    "classify_f64",
    "divmod_f32",
    "divmod_f64",
    "divmod_i64",
    "divmod_i32",
    "cumsum_f32",
    "cumsum_f64",
    "int_zip_i64",
];

/// The kernel of family `base` (`logic`, `classify`, `divmod`, `cumsum`) for `dtype`, or
/// None where the family has no kernel for that dtype.
pub fn name(base: &str, dtype: crate::dtype::DType) -> Option<&'static str> {
    let (_, _, sfx) = super::typed_kernels::SUFFIXES
        .iter()
        .find(|(d, _, _)| *d == dtype)?;
    FUNCTIONS
        .iter()
        .copied()
        .find(|f| f.strip_prefix(base).and_then(|r| r.strip_prefix('_')) == Some(*sfx))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dtype::DType;

    #[test]
    fn every_kernel_is_defined_once_and_found_by_name() {
        for f in FUNCTIONS.iter().filter(|f| !f.starts_with("int_zip")) {
            let (base, sfx) = f.rsplit_once('_').unwrap();
            let instance = SOURCE
                .lines()
                .filter(|l| l.starts_with(&format!("{}_KERNEL(", base.to_uppercase())))
                .filter(|l| l.contains(&format!(", {sfx}")))
                .count();
            assert_eq!(instance, 1, "{f}");
        }
        assert_eq!(name("logic", DType::Bool), Some("logic_b8"));
        assert_eq!(name("divmod", DType::I32), Some("divmod_i32"));
        assert_eq!(name("cumsum", DType::I64), None);
        assert_eq!(name("classify", DType::F64), Some("classify_f64"));
        assert_eq!(name("int_zip", DType::I64), Some("int_zip_i64"));
        assert!(SOURCE.contains("void int_zip_i64("));
    }
}
