//! CUDA C sources of the kernels, compiled at run time with NVRTC (no toolkit at build time;
//! see `compile`) and loaded once per device (see `context`).
//!
//! Index math: every operand is described by a [`KLayout`] (shape and strides in elements,
//! broadcast axes with stride 0, up to [`MAX_DIMS`] axes after merging) and the kernel maps
//! the linear C-order output index to the operand's storage offset. Pointers are passed with
//! the view's offset already applied.

use cudarc::driver::DeviceRepr;

/// Most axes a kernel operand may have (after merging contiguous axes).
pub const MAX_DIMS: usize = 8;

/// Threads per block of every kernel (the sum kernel's tree reduction relies on it).
pub const BLOCK: u32 = 256;

/// A strided operand as the kernels see it; mirrors `struct Lay` in the shared kernel prelude (`COMMON`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct KLayout {
    /// Number of axes in use.
    pub ndim: i32,
    /// 1 when the launch's element count (hence every extent) fits in 32 bits, so the index
    /// math may use 32-bit divisions (several times cheaper on the GPU); 0 otherwise.
    pub small: i32,
    /// Extent of each axis.
    pub shape: [i64; MAX_DIMS],
    /// Step in elements along each axis (0: broadcast).
    pub strides: [i64; MAX_DIMS],
}

// SAFETY: plain old data with the same C layout as the kernels' `struct Lay`.
unsafe impl DeviceRepr for KLayout {}

/// Declarations shared by the modules: the layout struct and the index mapping.
pub(crate) const COMMON: &str = r#"
#define MAXD 8
struct Lay { int ndim; int small; long long shape[MAXD]; long long strides[MAXD]; };

// Storage offset (elements) of the i-th element in C order of the view described by l. One
// axis (a contiguous or evenly strided operand, the common case after merging) needs no
// division; otherwise 32-bit divisions when the launch is small enough.
__device__ __forceinline__ long long loff(const Lay& l, long long i) {
    if (l.ndim == 1) return i * l.strides[0];
    long long o = 0;
    if (l.small) {
        unsigned int u = (unsigned int)i;
        for (int d = l.ndim - 1; d >= 0; --d) {
            unsigned int s = (unsigned int)l.shape[d];
            o += (long long)(u % s) * l.strides[d];
            u /= s;
        }
        return o;
    }
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

/// The elementwise module: the op table's `unary_op`/`binary_op` (generated from the rows of
/// `ops::elementwise`, with the constants and helpers they use) and the kernels over them.
pub fn elementwise_source() -> String {
    format!(
        "{}\n{}\n{}",
        crate::ops::elementwise::scalar::cuda_prelude(),
        crate::ops::elementwise::cuda_source(),
        ELEMENTWISE_KERNELS
    )
}

/// Elementwise kernels over the generated `unary_op`/`binary_op`: strided/broadcast maps and
/// axpy (float dtypes; moves, fills, casts and `where` for every dtype are in `typed_kernels`).
pub const ELEMENTWISE_KERNELS: &str = r#"
#define ELEMENTWISE_KERNELS(T, S) \
extern "C" __global__ void unary_##S(int op, double p, long long n, const T* x, Lay lx, \
                                     T* y) { \
    GRID_LOOP(i, n) { y[i] = unary_op<T>(op, x[loff(lx, i)], T(p)); } \
} \
extern "C" __global__ void binary_##S(int op, double p, long long n, const T* a, Lay la, \
                                      const T* b, Lay lb, T* y) { \
    GRID_LOOP(i, n) { y[i] = binary_op<T>(op, a[loff(la, i)], b[loff(lb, i)], T(p)); } \
} \
extern "C" __global__ void axpy_##S(long long n, T alpha, const T* x, Lay lx, T* y) { \
    GRID_LOOP(i, n) { y[i] += alpha * x[loff(lx, i)]; } \
}

ELEMENTWISE_KERNELS(float, f32)
ELEMENTWISE_KERNELS(double, f64)

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

/// Row kernels over a contiguous `(rows, n)` matrix, one block of [`BLOCK`] threads per row
/// (grid-stride over rows) with shared-memory tree reductions: softmax / log_softmax and
/// their backward, layer norm and its backward, and the NaN-propagating row maximum.
pub const ROWS: &str = r#"
template <typename T> __device__ __forceinline__ T neg_inf();
template <> __device__ __forceinline__ float neg_inf<float>() { return __int_as_float(0xff800000); }
template <> __device__ __forceinline__ double neg_inf<double>() {
    return __longlong_as_double(0xfff0000000000000LL);
}

// Sum of v over the block (every thread gets the result).
template <typename T> __device__ __forceinline__ T block_sum(T v, T* buf) {
    buf[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    T r = buf[0];
    __syncthreads();
    return r;
}

// Max step where NaN wins (as the CPU's `max_step`).
template <typename T> __device__ __forceinline__ T max_nan(T acc, T v) {
    return (v > acc || v != v) ? v : acc;
}

// Maximum over the block; NaN wins when `nan_wins`, else NaN is skipped like `v > m`.
template <typename T> __device__ __forceinline__ T block_max(T v, T* buf, bool nan_wins) {
    buf[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            T a = buf[threadIdx.x], b = buf[threadIdx.x + s];
            buf[threadIdx.x] = nan_wins ? max_nan(a, b) : (b > a ? b : a);
        }
        __syncthreads();
    }
    T r = buf[0];
    __syncthreads();
    return r;
}

template <typename T>
__device__ void softmax_rows(long long rows, long long n, const T* x, T* y, int lg, T* buf) {
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * n;
        T* yr = y + r * n;
        T m = neg_inf<T>();
        for (long long j = threadIdx.x; j < n; j += blockDim.x) if (xr[j] > m) m = xr[j];
        m = block_max(m, buf, false);
        T s = T(0);
        for (long long j = threadIdx.x; j < n; j += blockDim.x) {
            T e = exp(xr[j] - m);
            if (!lg) yr[j] = e;
            s += e;
        }
        s = block_sum(s, buf);
        if (lg) {
            T ls = log(s);
            for (long long j = threadIdx.x; j < n; j += blockDim.x) yr[j] = xr[j] - m - ls;
        } else {
            T inv = T(1) / s;
            for (long long j = threadIdx.x; j < n; j += blockDim.x) yr[j] *= inv;
        }
    }
}

// softmax: gx = y (g - sum g y); log_softmax: gx = g - exp(y) sum g.
template <typename T>
__device__ void softmax_bwd_rows(long long rows, long long n, const T* g, const T* y, T* gx,
                                 int lg, T* buf) {
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* gr = g + r * n;
        const T* yr = y + r * n;
        T* o = gx + r * n;
        T acc = T(0);
        for (long long j = threadIdx.x; j < n; j += blockDim.x) acc += lg ? gr[j] : gr[j] * yr[j];
        acc = block_sum(acc, buf);
        for (long long j = threadIdx.x; j < n; j += blockDim.x)
            o[j] = lg ? gr[j] - exp(yr[j]) * acc : yr[j] * (gr[j] - acc);
    }
}

// Mean and 1 / sqrt(var + eps) of one row (two passes, as the CPU).
template <typename T>
__device__ __forceinline__ void row_stats(const T* xr, long long n, T eps, T* buf, T* mean,
                                          T* rstd) {
    T s = T(0);
    for (long long j = threadIdx.x; j < n; j += blockDim.x) s += xr[j];
    T m = block_sum(s, buf) / T(n);
    T v = T(0);
    for (long long j = threadIdx.x; j < n; j += blockDim.x) { T d = xr[j] - m; v += d * d; }
    T var = block_sum(v, buf) / T(n);
    *mean = m;
    *rstd = T(1) / sqrt(var + eps);
}

// y = (x - mean) rstd * w + b over each row; w and b may be null.
template <typename T>
__device__ void layer_norm_rows(long long rows, long long n, T eps, const T* x, const T* w,
                                const T* b, T* y, T* buf) {
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * n;
        T* yr = y + r * n;
        T mean, rstd;
        row_stats(xr, n, eps, buf, &mean, &rstd);
        for (long long j = threadIdx.x; j < n; j += blockDim.x) {
            T v = (xr[j] - mean) * rstd;
            if (w) v = v * w[j];
            if (b) v = v + b[j];
            yr[j] = v;
        }
    }
}

// dx = rstd (gy - mean(gy) - xhat mean(gy xhat)), gy = g w (dx may be null); gxhat = g xhat
// (may be null; its column sums are the weight gradient).
template <typename T>
__device__ void layer_norm_bwd_rows(long long rows, long long n, T eps, const T* x, const T* g,
                                    const T* w, T* dx, T* gxhat, T* buf) {
    T inv_n = T(1.0 / (double)(n > 0 ? n : 1));
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * n;
        const T* gr = g + r * n;
        T mean, rstd;
        row_stats(xr, n, eps, buf, &mean, &rstd);
        if (gxhat)
            for (long long j = threadIdx.x; j < n; j += blockDim.x)
                gxhat[r * n + j] = gr[j] * (xr[j] - mean) * rstd;
        if (!dx) continue;
        T s1 = T(0), s2 = T(0);
        for (long long j = threadIdx.x; j < n; j += blockDim.x) {
            T gy = w ? gr[j] * w[j] : gr[j];
            s1 += gy;
            s2 += gy * (xr[j] - mean) * rstd;
        }
        s1 = block_sum(s1, buf);
        s2 = block_sum(s2, buf);
        T m1 = s1 * inv_n, m2 = s2 * inv_n;
        for (long long j = threadIdx.x; j < n; j += blockDim.x) {
            T gy = w ? gr[j] * w[j] : gr[j];
            dx[r * n + j] = rstd * (gy - m1 - (xr[j] - mean) * rstd * m2);
        }
    }
}

// Maximum of each row, NaN winning.
template <typename T>
__device__ void max_rows(long long rows, long long n, const T* x, T* y, T* buf) {
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * n;
        T m = neg_inf<T>();
        for (long long j = threadIdx.x; j < n; j += blockDim.x) m = max_nan(m, xr[j]);
        m = block_max(m, buf, true);
        if (threadIdx.x == 0) y[r] = m;
    }
}

#define ROW_KERNELS(T, S) \
extern "C" __global__ void softmax_##S(long long rows, long long n, const T* x, T* y, int lg) { \
    __shared__ T buf[256]; \
    softmax_rows<T>(rows, n, x, y, lg, buf); \
} \
extern "C" __global__ void softmax_bwd_##S(long long rows, long long n, const T* g, \
                                           const T* y, T* gx, int lg) { \
    __shared__ T buf[256]; \
    softmax_bwd_rows<T>(rows, n, g, y, gx, lg, buf); \
} \
extern "C" __global__ void layer_norm_##S(long long rows, long long n, double eps, const T* x, \
                                          const T* w, const T* b, T* y) { \
    __shared__ T buf[256]; \
    layer_norm_rows<T>(rows, n, T(eps), x, w, b, y, buf); \
} \
extern "C" __global__ void layer_norm_bwd_##S(long long rows, long long n, double eps, \
                                              const T* x, const T* g, const T* w, T* dx, \
                                              T* gxhat) { \
    __shared__ T buf[256]; \
    layer_norm_bwd_rows<T>(rows, n, T(eps), x, g, w, dx, gxhat, buf); \
} \
extern "C" __global__ void max_rows_##S(long long rows, long long n, const T* x, T* y) { \
    __shared__ T buf[256]; \
    max_rows<T>(rows, n, x, y, buf); \
}

ROW_KERNELS(float, f32)
ROW_KERNELS(double, f64)
"#;

/// The counter-based generator of `rng.rs`, ported with 64-bit integer math so a key gives
/// the same draws on both devices: `rng_mix` is `rng::mix` (SplitMix64 finaliser),
/// `rng_bits` is `rng::bits` and `rng_uniform` is `rng::uniform`, line for line. Dropout
/// keeps element `i` (C order) iff `uniform(key, i) >= p`, as the CPU.
pub const RANDOM: &str = r#"
typedef unsigned long long u64;

__device__ __forceinline__ u64 rng_mix(u64 z) {
    // SplitMix64 finaliser: a strong 64-bit bijection.
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

// 64 random bits for counter i under the key (seed, offset).
__device__ __forceinline__ u64 rng_bits(u64 seed, u64 offset, u64 i) {
    return rng_mix(rng_mix(seed ^ 0x9e3779b97f4a7c15ULL) + (offset + i));
}

// A uniform double in [0, 1) for counter i: the top 53 bits times 2^-53.
__device__ __forceinline__ double rng_uniform(u64 seed, u64 offset, u64 i) {
    return (double)(rng_bits(seed, offset, i) >> 11) * (1.0 / 9007199254740992.0);
}

#define DROPOUT_KERNEL(T, S) \
extern "C" __global__ void dropout_##S(long long n, u64 seed, u64 offset, double p, \
                                       const T* x, Lay lx, T* y) { \
    T scale = T(1.0 / (1.0 - p)); \
    GRID_LOOP(i, n) { \
        y[i] = rng_uniform(seed, offset, (u64)i) >= p ? x[loff(lx, i)] * scale : T(0); \
    } \
}

DROPOUT_KERNEL(float, f32)
DROPOUT_KERNEL(double, f64)
"#;

/// Training kernels: the fused cross-entropy (per-row log-sum-exp loss; softmax minus
/// one-hot backward), the scatter-add of strided copies (index backward), and the fused
/// in-place optimizer updates (SGD, Adam/AdamW) with the CPU's formulas, operation for
/// operation in the parameter's dtype.
pub const TRAIN: &str = r#"
template <typename T> __device__ __forceinline__ T ce_neg_inf();
template <> __device__ __forceinline__ float ce_neg_inf<float>() {
    return __int_as_float(0xff800000);
}
template <> __device__ __forceinline__ double ce_neg_inf<double>() {
    return __longlong_as_double(0xfff0000000000000LL);
}

// Sum / max over the block (every thread gets the result).
template <typename T> __device__ __forceinline__ T ce_block_sum(T v, T* buf) {
    buf[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];
        __syncthreads();
    }
    T r = buf[0];
    __syncthreads();
    return r;
}
template <typename T> __device__ __forceinline__ T ce_block_max(T v, T* buf) {
    buf[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            T a = buf[threadIdx.x], b = buf[threadIdx.x + s];
            buf[threadIdx.x] = b > a ? b : a;
        }
        __syncthreads();
    }
    T r = buf[0];
    __syncthreads();
    return r;
}

// Max and sum(exp(x - max)) of a row, as the CPU's `row_max_sumexp`.
template <typename T>
__device__ __forceinline__ void ce_row(const T* xr, long long n, T* buf, T* m_out, T* s_out) {
    T m = ce_neg_inf<T>();
    for (long long j = threadIdx.x; j < n; j += blockDim.x) if (xr[j] > m) m = xr[j];
    m = ce_block_max(m, buf);
    T s = T(0);
    for (long long j = threadIdx.x; j < n; j += blockDim.x) s += exp(xr[j] - m);
    *m_out = m;
    *s_out = ce_block_sum(s, buf);
}

// loss[r] = max + ln(sum exp(x - max)) - x[target[r]].
template <typename T>
__device__ void ce_fwd_rows(long long rows, long long n, const T* x, const long long* target,
                            T* loss, T* buf) {
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * n;
        T m, s;
        ce_row(xr, n, buf, &m, &s);
        if (threadIdx.x == 0) loss[r] = m + log(s) - xr[target[r]];
    }
}

// gx[r] = (softmax(x[r]) - onehot(target[r])) * g[0] / rows_d (the CPU's `scale`).
template <typename T>
__device__ void ce_bwd_rows(long long rows, long long n, const T* x, const long long* target,
                            const T* g, double rows_d, T* gx, T* buf) {
    T sc = T((double)g[0] / rows_d);
    for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
        const T* xr = x + r * n;
        T* o = gx + r * n;
        T m, s;
        ce_row(xr, n, buf, &m, &s);
        T inv = T(1) / s;
        long long t = target[r];
        for (long long j = threadIdx.x; j < n; j += blockDim.x) {
            T v = exp(xr[j] - m) * inv * sc;
            o[j] = j == t ? v - sc : v;
        }
    }
}

#define TRAIN_KERNELS(T, S) \
extern "C" __global__ void ce_fwd_##S(long long rows, long long n, const T* x, \
                                      const long long* target, T* loss) { \
    __shared__ T buf[256]; \
    ce_fwd_rows<T>(rows, n, x, target, loss, buf); \
} \
extern "C" __global__ void ce_bwd_##S(long long rows, long long n, const T* x, \
                                      const long long* target, const T* g, double rows_d, \
                                      T* gx) { \
    __shared__ T buf[256]; \
    ce_bwd_rows<T>(rows, n, x, target, g, rows_d, gx, buf); \
} \
extern "C" __global__ void strided_add_##S(long long n, const T* x, Lay lx, T* y, Lay ly) { \
    GRID_LOOP(i, n) { y[loff(ly, i)] += x[loff(lx, i)]; } \
} \
extern "C" __global__ void sgd_##S(long long n, T* p, const T* g, Lay lg, T* b, int first, \
                                   double lr_, double mom_, double wd_, double damp_, \
                                   int nesterov, int use_wd) { \
    T lr = T(lr_), mom = T(mom_), wd = T(wd_), damp = T(damp_); \
    GRID_LOOP(i, n) { \
        T gi = g[loff(lg, i)]; \
        T pi = p[i]; \
        T d = use_wd ? gi + wd * pi : gi; \
        if (b) { \
            T bi = first ? d : mom * b[i] + damp * d; \
            b[i] = bi; \
            d = nesterov ? d + mom * bi : bi; \
        } \
        p[i] = pi - lr * d; \
    } \
} \
extern "C" __global__ void adam_##S(long long n, T* p, const T* g, Lay lg, T* m, T* v, \
                                    T* vmax, int use_wd, int decoupled, double decay_, double wd_, \
                                    double w1_, double b2_, double w2_, double neg_step_, \
                                    double bc2s_, double eps_) { \
    T decay = T(decay_), wd = T(wd_), w1 = T(w1_), b2 = T(b2_), w2 = T(w2_); \
    T neg_step = T(neg_step_), bc2s = T(bc2s_), eps = T(eps_); \
    GRID_LOOP(i, n) { \
        T gi = g[loff(lg, i)]; \
        T pi = p[i]; \
        if (use_wd) { \
            if (decoupled) pi = pi * decay; \
            else gi = gi + wd * pi; \
        } \
        T mi = m[i]; \
        mi = w1 < T(0.5) ? mi + w1 * (gi - mi) : gi - (gi - mi) * (T(1) - w1); \
        T vi = v[i] * b2 + w2 * gi * gi; \
        T second = vi; \
        if (vmax) { \
            T vm = vmax[i]; \
            if (vi > vm || vi != vi) vm = vi; \
            vmax[i] = vm; \
            second = vm; \
        } \
        T denom = sqrt(second) / bc2s + eps; \
        m[i] = mi; \
        v[i] = vi; \
        p[i] = pi + neg_step * (mi / denom); \
    } \
}

TRAIN_KERNELS(float, f32)
TRAIN_KERNELS(double, f64)
"#;

/// Sliding windows (`ops/window.rs`): im2col writes each output element once (one thread per
/// column element); `pool_argmax` finds each max-pooling window's arg-max (a flat index into
/// its plane, NaN winning, as `ops::pool`'s CPU loop; 0 for a window wholly in the padding,
/// which the caller masks); col2im gathers, per image element, the column elements that land on it,
/// in kernel order (no atomics: deterministic, and bit-identical to the CPU's order of
/// additions). The geometry is lifted to three spatial axes: `in`/`out`/`k`/`s`/`p`/`d`.
pub const WINDOW: &str = r#"
#define WINDOW_KERNELS(T, S) \
extern "C" __global__ void im2col_##S(long long total, const T* x, T* cols, \
        long long i0, long long i1, long long i2, long long o0, long long o1, long long o2, \
        long long k0, long long k1, long long k2, long long s0, long long s1, long long s2, \
        long long p0, long long p1, long long p2, long long d0, long long d1, long long d2) { \
    long long L = o0 * o1 * o2, K = k0 * k1 * k2, P = i0 * i1 * i2; \
    GRID_LOOP(idx, total) { \
        long long l = idx % L, t = idx / L; \
        long long k = t % K, plane = t / K; \
        long long c = l % o2, b = (l / o2) % o1, a = l / (o2 * o1); \
        long long kc = k % k2, kb = (k / k2) % k1, ka = k / (k2 * k1); \
        long long ia = a * s0 + ka * d0 - p0, ib = b * s1 + kb * d1 - p1; \
        long long ic = c * s2 + kc * d2 - p2; \
        T v = T(0); \
        if (ia >= 0 && ia < i0 && ib >= 0 && ib < i1 && ic >= 0 && ic < i2) \
            v = x[plane * P + (ia * i1 + ib) * i2 + ic]; \
        cols[idx] = v; \
    } \
} \
extern "C" __global__ void col2im_##S(long long total, const T* cols, T* x, \
        long long i0, long long i1, long long i2, long long o0, long long o1, long long o2, \
        long long k0, long long k1, long long k2, long long s0, long long s1, long long s2, \
        long long p0, long long p1, long long p2, long long d0, long long d1, long long d2) { \
    long long L = o0 * o1 * o2, K = k0 * k1 * k2, P = i0 * i1 * i2; \
    GRID_LOOP(idx, total) { \
        long long ic = idx % i2, ib = (idx / i2) % i1, ia = (idx / (i2 * i1)) % i0; \
        long long plane = idx / P; \
        const T* base = cols + plane * K * L; \
        T acc = T(0); \
        for (long long ka = 0; ka < k0; ++ka) { \
            long long na = ia + p0 - ka * d0; \
            if (na < 0 || na % s0 != 0 || na / s0 >= o0) continue; \
            for (long long kb = 0; kb < k1; ++kb) { \
                long long nb = ib + p1 - kb * d1; \
                if (nb < 0 || nb % s1 != 0 || nb / s1 >= o1) continue; \
                for (long long kc = 0; kc < k2; ++kc) { \
                    long long nc = ic + p2 - kc * d2; \
                    if (nc < 0 || nc % s2 != 0 || nc / s2 >= o2) continue; \
                    long long k = (ka * k1 + kb) * k2 + kc; \
                    acc += base[k * L + ((na / s0) * o1 + nb / s1) * o2 + nc / s2]; \
                } \
            } \
        } \
        x[idx] = acc; \
    } \
} \
extern "C" __global__ void pool_argmax_##S(long long total, const T* x, long long* out, \
        long long i0, long long i1, long long i2, long long o0, long long o1, long long o2, \
        long long k0, long long k1, long long k2, long long s0, long long s1, long long s2, \
        long long p0, long long p1, long long p2, long long d0, long long d1, long long d2) { \
    long long L = o0 * o1 * o2, P = i0 * i1 * i2; \
    GRID_LOOP(idx, total) { \
        long long l = idx % L, plane = idx / L; \
        long long c = l % o2, b = (l / o2) % o1, a = l / (o2 * o1); \
        const T* px = x + plane * P; \
        long long best = -1; \
        T m = T(0); \
        for (long long ka = 0; ka < k0; ++ka) { \
            long long ia = a * s0 + ka * d0 - p0; \
            if (ia < 0 || ia >= i0) continue; \
            for (long long kb = 0; kb < k1; ++kb) { \
                long long ib = b * s1 + kb * d1 - p1; \
                if (ib < 0 || ib >= i1) continue; \
                for (long long kc = 0; kc < k2; ++kc) { \
                    long long ic = c * s2 + kc * d2 - p2; \
                    if (ic < 0 || ic >= i2) continue; \
                    long long i = (ia * i1 + ib) * i2 + ic; \
                    T v = px[i]; \
                    if (best < 0 || v > m || v != v) { best = i; m = v; } \
                } \
            } \
        } \
        out[idx] = best < 0 ? 0 : best; \
    } \
}

WINDOW_KERNELS(float, f32)
WINDOW_KERNELS(double, f64)
"#;

/// A module: its cache key, its source and the functions it defines.
pub struct KernelModule {
    /// Cache key (also the NVRTC program name).
    pub name: &'static str,
    /// The CUDA C source (without the shared prelude `COMMON`, which is prepended); a
    /// function, so generated modules are assembled from the op table.
    pub source: fn() -> String,
    /// The `extern "C"` kernels it defines.
    pub functions: &'static [&'static str],
}

/// Every kernel module of the backend.
pub const MODULES: &[KernelModule] = &[
    KernelModule {
        name: "elementwise",
        source: elementwise_source,
        functions: &[
            "unary_f32",
            "unary_f64",
            "binary_f32",
            "binary_f64",
            "axpy_f32",
            "axpy_f64",
        ],
    },
    KernelModule {
        name: "typed",
        source: super::typed_kernels::source,
        functions: super::typed_kernels::FUNCTIONS,
    },
    KernelModule {
        name: "arith",
        source: || super::arith_kernels::SOURCE.to_string(),
        functions: super::arith_kernels::FUNCTIONS,
    },
    KernelModule {
        name: "reduce",
        source: || REDUCE.to_string(),
        functions: &["sum_chunks_f32", "sum_chunks_f64"],
    },
    KernelModule {
        name: "rows",
        source: || ROWS.to_string(),
        functions: &[
            "softmax_f32",
            "softmax_f64",
            "softmax_bwd_f32",
            "softmax_bwd_f64",
            "layer_norm_f32",
            "layer_norm_f64",
            "layer_norm_bwd_f32",
            "layer_norm_bwd_f64",
            "max_rows_f32",
            "max_rows_f64",
        ],
    },
    KernelModule {
        name: "window",
        source: || WINDOW.to_string(),
        functions: &[
            "im2col_f32",
            "im2col_f64",
            "col2im_f32",
            "col2im_f64",
            "pool_argmax_f32",
            "pool_argmax_f64",
        ],
    },
    KernelModule {
        name: "random",
        source: || RANDOM.to_string(),
        functions: &["dropout_f32", "dropout_f64"],
    },
    KernelModule {
        name: "train",
        source: || TRAIN.to_string(),
        functions: &[
            "ce_fwd_f32",
            "ce_fwd_f64",
            "ce_bwd_f32",
            "ce_bwd_f64",
            "strided_add_f32",
            "strided_add_f64",
            "sgd_f32",
            "sgd_f64",
            "adam_f32",
            "adam_f64",
        ],
    },
];

/// The module that defines `function`.
pub fn module_of(function: &str) -> Option<&'static KernelModule> {
    MODULES.iter().find(|m| m.functions.contains(&function))
}

#[cfg(test)]
mod tests {
    use super::*;

    // The kernel's generator (`RANDOM`) transliterated line for line; u64 wrapping math is
    // CUDA's `unsigned long long` arithmetic.
    fn rng_mix(mut z: u64) -> u64 {
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
        z ^ (z >> 31)
    }
    fn rng_bits(seed: u64, offset: u64, i: u64) -> u64 {
        rng_mix(rng_mix(seed ^ 0x9e3779b97f4a7c15).wrapping_add(offset.wrapping_add(i)))
    }
    fn rng_uniform(seed: u64, offset: u64, i: u64) -> f64 {
        (rng_bits(seed, offset, i) >> 11) as f64 * (1.0 / 9007199254740992.0)
    }

    /// The CUDA dropout mask equals the CPU's: the ported formula gives bit-identical
    /// uniforms (hence masks) for assorted keys and counters, and the kernel source holds
    /// the same constants and shifts.
    #[test]
    fn dropout_generator_matches_the_cpu() {
        use crate::rng::{self, RngState};
        let keys = [
            (0, 0),
            (7, 100),
            (0x5eed_2026, 12_345),
            (u64::MAX, u64::MAX - 3),
        ];
        for (seed, offset) in keys {
            let key = RngState { seed, offset };
            for i in [0u64, 1, 2, 3, 4095, 4096, 65_537, 1 << 40] {
                let (cpu, port) = (rng::uniform(key, i), rng_uniform(seed, offset, i));
                assert_eq!(cpu.to_bits(), port.to_bits(), "key {key:?} counter {i}");
                assert_eq!(rng::bits(key, i), rng_bits(seed, offset, i));
                for p in [0.1, 0.5, 0.9] {
                    assert_eq!(cpu >= p, port >= p);
                }
            }
        }
        for needle in [
            "(z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL",
            "(z ^ (z >> 27)) * 0x94d049bb133111ebULL",
            "return z ^ (z >> 31);",
            "rng_mix(rng_mix(seed ^ 0x9e3779b97f4a7c15ULL) + (offset + i))",
            "(double)(rng_bits(seed, offset, i) >> 11) * (1.0 / 9007199254740992.0)",
            ">= p ? x[loff(lx, i)] * scale : T(0)",
        ] {
            assert!(RANDOM.contains(needle), "kernel source lost: {needle}");
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
