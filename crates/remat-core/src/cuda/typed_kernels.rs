//! CUDA C sources of the kernels instantiated for **every** dtype (float32, float64, int64,
//! int32, bool): moving elements (strided copies, fills, `where`), casts between any two
//! dtypes, comparisons (bool results), and the index ops (`index_select`, its backward
//! `index_add`, `gather`, `scatter_add`). The float-only arithmetic lives in `kernels`.
//!
//! Kernel names are `BASE_SUFFIX` with the suffixes of [`SUFFIXES`] (`cast_SRC_DST` for
//! casts); [`name`] and [`cast_name`] look them up.
//!
//! Sums that may see one position several times (`index_add`, `scatter_add`) are
//! deterministic: one thread owns each output column (index_add) or line (scatter_add) and
//! adds the contributions in index order, as the CPU loops do, so results are bit-identical
//! run to run and to the CPU (no atomics).

use crate::dtype::DType;

/// The C type and name suffix of each dtype, in [`DType`] order of the kernels.
pub const SUFFIXES: &[(DType, &str, &str)] = &[
    (DType::F32, "float", "f32"),
    (DType::F64, "double", "f64"),
    (DType::I64, "long long", "i64"),
    (DType::I32, "int", "i32"),
    (DType::Bool, "unsigned char", "b8"),
];

/// The position of `dtype` in [`SUFFIXES`].
fn dtype_index(dtype: DType) -> usize {
    match dtype {
        DType::F32 => 0,
        DType::F64 => 1,
        DType::I64 => 2,
        DType::I32 => 3,
        DType::Bool => 4,
        // No device buffer has a half dtype (`CudaBuffer::alloc` refuses them).
        DType::BF16 | DType::F16 => unreachable!("no {dtype} kernels on cuda"),
    }
}

/// A family of kernels of this module (one per dtype), in [`FUNCTIONS`] order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Typed {
    /// `where_S`: `c ? a : b` with a bool condition.
    Where,
    /// `strided_copy_S`: one strided view into another.
    StridedCopy,
    /// `fill_S`: a constant into a contiguous buffer.
    Fill,
    /// `compare_S`: a comparison row, bool out.
    Compare,
    /// `index_select_S`: slices at positions along an axis.
    IndexSelect,
    /// `index_add_S`: `index_select`'s backward (deterministic).
    IndexAdd,
    /// `gather_S`: elements at per-position indices along an axis.
    Gather,
    /// `scatter_add_S`: `gather`'s backward (deterministic).
    ScatterAdd,
}

/// The kernel of `family` for `dtype`.
pub fn name(family: Typed, dtype: DType) -> &'static str {
    FUNCTIONS[family as usize * SUFFIXES.len() + dtype_index(dtype)]
}

/// The cast kernel from `from` to `to` (distinct dtypes).
pub fn cast_name(from: DType, to: DType) -> &'static str {
    let (f, t) = (dtype_index(from), dtype_index(to));
    let n = SUFFIXES.len();
    FUNCTIONS[8 * n + f * (n - 1) + if t > f { t - 1 } else { t }]
}

/// Kernels per dtype `T` (suffix `S`). `where` reads a bool condition; `compare` writes bool
/// (0/1) for row `op` of the comparison table (`ops::compare::Compare::ALL` order: eq, ne,
/// lt, le, gt, ge; NaN compares unequal to everything, as in C).
const PER_DTYPE: &str = r#"
#define TYPED_KERNELS(T, S) \
extern "C" __global__ void where_##S(long long n, const unsigned char* c, Lay lc, const T* a, \
                                     Lay la, const T* b, Lay lb, T* y) { \
    GRID_LOOP(i, n) { y[i] = c[loff(lc, i)] ? a[loff(la, i)] : b[loff(lb, i)]; } \
} \
extern "C" __global__ void strided_copy_##S(long long n, const T* x, Lay lx, T* y, Lay ly) { \
    GRID_LOOP(i, n) { y[loff(ly, i)] = x[loff(lx, i)]; } \
} \
extern "C" __global__ void fill_##S(long long n, T v, T* y) { \
    GRID_LOOP(i, n) { y[i] = v; } \
} \
extern "C" __global__ void compare_##S(int op, long long n, const T* a, Lay la, const T* b, \
                                       Lay lb, unsigned char* y) { \
    GRID_LOOP(i, n) { \
        T u = a[loff(la, i)], v = b[loff(lb, i)]; \
        bool r; \
        switch (op) { \
            case 0: r = u == v; break; \
            case 1: r = u != v; break; \
            case 2: r = u < v; break; \
            case 3: r = u <= v; break; \
            case 4: r = u > v; break; \
            default: r = u >= v; \
        } \
        y[i] = r ? 1 : 0; \
    } \
} \
extern "C" __global__ void index_select_##S(long long outer, long long n, long long inner, \
                                            long long k, const T* x, const long long* pos, \
                                            T* y) { \
    GRID_LOOP(i, outer * k * inner) { \
        long long r = i % inner, j = (i / inner) % k, o = i / (inner * k); \
        y[i] = x[(o * n + pos[j]) * inner + r]; \
    } \
} \
extern "C" __global__ void index_add_##S(long long outer, long long n, long long inner, \
                                         long long k, const T* src, const long long* pos, \
                                         T* y) { \
    GRID_LOOP(t, outer * inner) { \
        long long o = t / inner, r = t % inner; \
        for (long long j = 0; j < k; ++j) { \
            T* d = &y[(o * n + pos[j]) * inner + r]; \
            *d = acc(*d, src[(o * k + j) * inner + r]); \
        } \
    } \
} \
extern "C" __global__ void gather_##S(long long n, const T* x, Lay lx, long long sd, \
                                      const long long* pos, T* y) { \
    GRID_LOOP(i, n) { y[i] = x[loff(lx, i) + pos[i] * sd]; } \
} \
extern "C" __global__ void scatter_add_##S(long long lines, long long len, Lay lo, Lay ls, \
                                           long long osd, long long isd, const T* src, \
                                           const long long* pos, T* y) { \
    GRID_LOOP(t, lines) { \
        long long o = loff(lo, t), s = loff(ls, t); \
        for (long long j = 0; j < len; ++j) { \
            long long at = s + j * isd; \
            T* d = &y[o + pos[at] * osd]; \
            *d = acc(*d, src[at]); \
        } \
    } \
}
"#;

/// Accumulation as the CPU's `Scalar::accumulate`: addition (wrapping for integers: CUDA's
/// integer addition wraps), logical or for bool.
const ACCUMULATE: &str = r#"
template <typename T> __device__ __forceinline__ T acc(T a, T b) { return a + b; }
template <> __device__ __forceinline__ unsigned char acc(unsigned char a, unsigned char b) {
    return (a | b) ? 1 : 0;
}
"#;

/// The module's source: the per-dtype kernels for each dtype and a cast for each ordered
/// pair of distinct dtypes (to bool: `x != 0`, NaN included; float to integer truncates
/// toward zero, saturating, NaN to 0, as Rust's `as`).
pub fn source() -> String {
    let mut s = format!("{ACCUMULATE}\n{PER_DTYPE}\n");
    for (_, c, sfx) in SUFFIXES {
        s.push_str(&format!("TYPED_KERNELS({c}, {sfx})\n"));
    }
    for (_, a, sa) in SUFFIXES {
        for (_, b, sb) in SUFFIXES {
            if sa == sb {
                continue;
            }
            let expr = if *sb == "b8" {
                format!("(x[loff(lx, i)] != ({a})0) ? 1 : 0")
            } else {
                format!("({b})x[loff(lx, i)]")
            };
            s.push_str(&format!(
                "extern \"C\" __global__ void cast_{sa}_{sb}(long long n, const {a}* x, Lay lx, \
                 {b}* y) {{ GRID_LOOP(i, n) {{ y[i] = {expr}; }} }}\n"
            ));
        }
    }
    s
}

/// Every kernel of the module ([`source`]), by name.
macro_rules! per_dtype {
    ($($base:literal),* ; casts) => {
        &[
            $( concat!($base, "_f32"), concat!($base, "_f64"), concat!($base, "_i64"),
               concat!($base, "_i32"), concat!($base, "_b8"), )*
            "cast_f32_f64", "cast_f32_i64", "cast_f32_i32", "cast_f32_b8",
            "cast_f64_f32", "cast_f64_i64", "cast_f64_i32", "cast_f64_b8",
            "cast_i64_f32", "cast_i64_f64", "cast_i64_i32", "cast_i64_b8",
            "cast_i32_f32", "cast_i32_f64", "cast_i32_i64", "cast_i32_b8",
            "cast_b8_f32", "cast_b8_f64", "cast_b8_i64", "cast_b8_i32",
        ]
    };
}

/// The names of the module's kernels.
pub const FUNCTIONS: &[&str] = per_dtype!(
    "where", "strided_copy", "fill", "compare", "index_select", "index_add", "gather",
    "scatter_add"; casts
);

#[cfg(test)]
mod tests {
    use super::*;

    /// Each name once: 8 kernels per dtype and a cast per ordered pair of distinct dtypes
    /// (that each is in the compiled module is checked by the NVRTC test in `compile`).
    #[test]
    fn the_kernel_list_covers_every_dtype_once() {
        let n = SUFFIXES.len();
        assert_eq!(FUNCTIONS.len(), 8 * n + n * (n - 1));
        let mut names: Vec<&str> = FUNCTIONS.to_vec();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), FUNCTIONS.len());
        let src = source();
        for (d, a, sa) in SUFFIXES {
            assert!(src.contains(&format!("TYPED_KERNELS({a}, {sa})")));
            assert_eq!(name(Typed::ScatterAdd, *d), format!("scatter_add_{sa}"));
            assert_eq!(name(Typed::Where, *d), format!("where_{sa}"));
            for (e, _, sb) in SUFFIXES {
                if sa != sb {
                    assert_eq!(cast_name(*d, *e), format!("cast_{sa}_{sb}"));
                }
            }
        }
    }
}
