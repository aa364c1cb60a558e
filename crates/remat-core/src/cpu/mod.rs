//! CPU kernels: gathers of strided views, elementwise maps and broadcast zips (with wide
//! variants for branch-free bodies such as exact GELU's), axis reductions, and GEMM. Large
//! kernels run on the rayon pool.

pub mod alloc;
pub mod amx_gemm;
pub mod batch_norm;
pub mod bf16_gemm;
pub mod conv_direct;
pub mod erf;
pub mod flash;
pub mod gelu_pieces;
pub mod half_cast;
pub mod half_map;
pub mod host_alloc;
pub mod lanes;
pub mod matmul;
pub mod recurrent;
pub mod row_max;
pub mod sum;
mod transpose;

pub(crate) use transpose::{transpose_into, transpose_serial};

use crate::dtype::{Element, Scalar};
use crate::layout::{contiguous_strides, numel, Dims, Layout};
use crate::tensor_data::TensorData;
pub use alloc::{alloc, catch_oom, collect_exact, filled, out_of_memory, with_capacity, Workspace};
use rayon::prelude::*;
use smallvec::SmallVec;

/// Below this many elements a kernel runs on the calling thread (threads cost more).
pub const PAR_MIN: usize = 1 << 15;

/// Contiguous copies of at least this many elements run on the pool (one core's memory
/// bandwidth is the limit of a plain copy), in chunks of [`PAR_COPY_CHUNK`].
const PAR_COPY_MIN: usize = 1 << 18;
const PAR_COPY_CHUNK: usize = 1 << 16;

/// Elements per parallel work item of the broadcasting kernels (rows longer than this are
/// split, so one long row, such as a tensor times a scalar, still runs on every thread).
const PAR_CHUNK: usize = 1 << 14;

/// The typed slice behind a tensor's storage. Panics only on an engine bug (dtype mismatch
/// is checked by every op before it reaches a kernel).
#[inline]
pub fn slice<T: Scalar>(d: &TensorData) -> &[T] {
    d.storage
        .as_slice::<T>()
        .expect("kernel called with a storage of another dtype")
}

/// The view's elements as a contiguous slice, if it is one.
#[inline]
pub fn contiguous_slice<T: Scalar>(d: &TensorData) -> Option<&[T]> {
    if d.layout.is_contiguous() {
        let n = d.layout.numel();
        Some(&slice::<T>(d)[d.layout.offset..d.layout.offset + n])
    } else {
        None
    }
}

/// The view's elements in C order.
pub fn gather<T: Scalar>(d: &TensorData) -> Vec<T> {
    if let Some(s) = contiguous_slice::<T>(d) {
        if s.len() < PAR_COPY_MIN {
            let mut v = with_capacity(s.len());
            v.extend_from_slice(s);
            return v;
        }
        // A large copy is bound by one core's bandwidth: split it over the pool.
        let mut v = alloc::<T>(s.len());
        crate::parallel::install(|| {
            v.par_chunks_mut(PAR_COPY_CHUNK)
                .zip(s.par_chunks(PAR_COPY_CHUNK))
                .for_each(|(o, s)| o.copy_from_slice(s))
        });
        return v;
    }
    let n = d.layout.numel();
    let mut out = alloc::<T>(n);
    strided_rows(d, &mut out, |o, src, base, stride| {
        if stride == 1 {
            o.copy_from_slice(&src[base..base + o.len()]);
        } else {
            for (j, o) in o.iter_mut().enumerate() {
                *o = src[base + j * stride];
            }
        }
    });
    out
}

/// Fill `out` (the view's `numel` elements, C order) row by row: `row(out_row, storage,
/// base, stride)` for each row of the view's last axis after merging the axes that are
/// contiguous with each other (`base`: the row's first storage index; `stride`: the step
/// along it). Rows are split into blocks of about 8K elements run on the rayon pool when
/// the view is large, each block by one call, so the result does not depend on threads.
pub(crate) fn strided_rows<T: Scalar, O: Scalar>(
    d: &TensorData,
    out: &mut [O],
    row: impl Fn(&mut [O], &[T], usize, usize) + Sync,
) {
    let n = d.layout.numel();
    if n == 0 {
        return;
    }
    let src = slice::<T>(d);
    let (shape, strides) = coalesce(&d.layout.shape, &[&d.layout.strides]);
    let st = &strides[0];
    let inner = *shape.last().unwrap_or(&1);
    let stride = *st.last().unwrap_or(&1);
    let offset = d.layout.offset;
    let rows_per_block = (8192 / inner.max(1)).max(1);
    let block = |b: usize, o: &mut [O]| {
        for (k, o) in o.chunks_mut(inner).enumerate() {
            let r = b * rows_per_block + k;
            row(o, src, row_base(r, &shape, st, offset), stride);
        }
    };
    if n >= PAR_MIN {
        crate::parallel::install(|| {
            out.par_chunks_mut(rows_per_block * inner)
                .enumerate()
                .for_each(|(b, o)| block(b, o))
        });
    } else {
        for (b, o) in out.chunks_mut(rows_per_block * inner).enumerate() {
            block(b, o);
        }
    }
}

/// The view's elements in C order converted to `D` (one allocation, no intermediate copy).
pub fn gather_cast<S: Scalar, D: Scalar>(d: &TensorData) -> Vec<D> {
    if S::DTYPE == D::DTYPE {
        // The same type: a plain gather (a memcpy when contiguous), handed over as `Vec<D>`.
        let same: Box<dyn std::any::Any> = Box::new(gather::<S>(d));
        if let Ok(v) = same.downcast::<Vec<D>>() {
            return *v;
        }
    }
    // Between integer types (and bool) through i64, so int64 values beyond 2^53 survive;
    // anything involving a float through f64.
    let cast = |x: S| {
        if S::DTYPE.is_float() || D::DTYPE.is_float() {
            D::from_f64(x.to_f64())
        } else {
            D::from_i64(x.to_i64())
        }
    };
    if let Some(s) = contiguous_slice::<S>(d) {
        if let Some(v) = half_cast::convert::<S, D>(s) {
            return v;
        }
        return collect_exact(s.iter().map(|&x| cast(x)));
    }
    let src = slice::<S>(d);
    let mut out = with_capacity(d.layout.numel());
    d.layout.for_each_index(|i| out.push(cast(src[i])));
    out
}

/// Merge adjacent axes that are contiguous in every layout (same shape for all), so that
/// broadcast loops run over the longest possible inner rows.
fn coalesce(shape: &[usize], strides: &[&[usize]]) -> (Dims, Vec<Dims>) {
    let mut out_shape: Dims = SmallVec::new();
    let mut out_strides: Vec<Dims> = vec![SmallVec::new(); strides.len()];
    for i in 0..shape.len() {
        if shape[i] == 1 {
            continue;
        }
        let can_merge = !out_shape.is_empty()
            && strides.iter().enumerate().all(|(k, s)| {
                let last = *out_strides[k].last().unwrap_or(&0);
                last == s[i] * shape[i]
            });
        if can_merge {
            let l = out_shape.len() - 1;
            out_shape[l] *= shape[i];
            for (k, s) in strides.iter().enumerate() {
                out_strides[k][l] = s[i];
            }
        } else {
            out_shape.push(shape[i]);
            for (k, s) in strides.iter().enumerate() {
                out_strides[k].push(s[i]);
            }
        }
    }
    if out_shape.is_empty() {
        out_shape.push(1);
        for s in out_strides.iter_mut() {
            s.push(0);
        }
    }
    (out_shape, out_strides)
}

/// Storage offset of row `r` (all axes but the last) for each layout.
#[inline]
fn row_base(r: usize, shape: &[usize], strides: &[usize], offset: usize) -> usize {
    let mut rem = r;
    let mut base = offset;
    for d in (0..shape.len() - 1).rev() {
        let i = rem % shape[d];
        rem /= shape[d];
        base += i * strides[d];
    }
    base
}

/// `f` applied to every element, output contiguous in C order.
pub fn map<T: Scalar, F: Fn(T) -> T + Sync>(x: &TensorData, f: F) -> Vec<T> {
    let n = x.layout.numel();
    let mut out = alloc::<T>(n);
    match contiguous_slice::<T>(x) {
        Some(src) => {
            if n >= PAR_MIN {
                crate::parallel::install(|| {
                    out.par_chunks_mut(4096)
                        .zip(src.par_chunks(4096))
                        .for_each(|(o, s)| {
                            for (o, &s) in o.iter_mut().zip(s) {
                                *o = f(s);
                            }
                        })
                });
            } else {
                for (o, &s) in out.iter_mut().zip(src) {
                    *o = f(s);
                }
            }
        }
        None => strided_rows(x, &mut out, |o, src: &[T], base, stride| {
            for (j, o) in o.iter_mut().enumerate() {
                *o = f(src[base + j * stride]);
            }
        }),
    }
    out
}

/// `f(a, b)` over the broadcast of `a` and `b` to `shape` (already validated), output
/// contiguous in C order (of another type for comparisons).
pub fn zip<T: Scalar, O: Scalar, F: Fn(T, T) -> O + Sync>(
    a: &TensorData,
    b: &TensorData,
    shape: &[usize],
    f: F,
) -> Vec<O> {
    let n = numel(shape);
    let mut out = alloc::<O>(n);
    if n == 0 {
        return out;
    }
    let (sa, sb) = (slice::<T>(a), slice::<T>(b));
    // Fast paths: same-shape contiguous operands, or one side a single element.
    let same = a.layout.shape.as_slice() == shape && b.layout.shape.as_slice() == shape;
    if same {
        if let (Some(x), Some(y)) = (contiguous_slice::<T>(a), contiguous_slice::<T>(b)) {
            let body = |o: &mut [O], x: &[T], y: &[T]| {
                for ((o, &x), &y) in o.iter_mut().zip(x).zip(y) {
                    *o = f(x, y);
                }
            };
            if n >= PAR_MIN {
                crate::parallel::install(|| {
                    out.par_chunks_mut(4096)
                        .zip(x.par_chunks(4096).zip(y.par_chunks(4096)))
                        .for_each(|(o, (x, y))| body(o, x, y))
                });
            } else {
                body(&mut out, x, y);
            }
            return out;
        }
    }
    let la = a
        .layout
        .broadcast_to("zip", shape)
        .expect("validated broadcast");
    let lb = b
        .layout
        .broadcast_to("zip", shape)
        .expect("validated broadcast");
    let (cshape, cstrides) = coalesce(shape, &[&la.strides, &lb.strides]);
    let inner = *cshape.last().unwrap_or(&1);
    let (ia, ib) = (
        cstrides[0][cstrides[0].len() - 1],
        cstrides[1][cstrides[1].len() - 1],
    );
    // `row(r, j, o)`: elements `j..j + o.len()` of coalesced row `r`.
    let row = |r: usize, j: usize, o: &mut [O]| {
        let ba = row_base(r, &cshape, &cstrides[0], la.offset) + j * ia;
        let bb = row_base(r, &cshape, &cstrides[1], lb.offset) + j * ib;
        let len = o.len();
        match (ia, ib) {
            (1, 1) => {
                for ((o, &x), &y) in o.iter_mut().zip(&sa[ba..ba + len]).zip(&sb[bb..bb + len]) {
                    *o = f(x, y);
                }
            }
            (1, 0) => {
                let y = sb[bb];
                for (o, &x) in o.iter_mut().zip(&sa[ba..ba + len]) {
                    *o = f(x, y);
                }
            }
            (0, 1) => {
                let x = sa[ba];
                for (o, &y) in o.iter_mut().zip(&sb[bb..bb + len]) {
                    *o = f(x, y);
                }
            }
            _ => {
                for (k, o) in o.iter_mut().enumerate() {
                    *o = f(sa[ba + k * ia], sb[bb + k * ib]);
                }
            }
        }
    };
    // The output elements `start..start + o.len()`, row piece by row piece.
    let span = |start: usize, mut o: &mut [O]| {
        let mut pos = start;
        while !o.is_empty() {
            let (r, j) = (pos / inner, pos % inner);
            let len = (inner - j).min(o.len());
            let (head, tail) = std::mem::take(&mut o).split_at_mut(len);
            row(r, j, head);
            pos += head.len();
            o = tail;
        }
    };
    if n >= PAR_MIN {
        crate::parallel::install(|| {
            out.par_chunks_mut(PAR_CHUNK)
                .enumerate()
                .for_each(|(c, o)| span(c * PAR_CHUNK, o))
        });
    } else {
        span(0, &mut out);
    }
    out
}

/// Like [`map`], for a branch-free `f` worth running on the widest vectors the CPU has (exact
/// GELU, built on [`erf::erf`]): the input (copied out first when strided) goes through
/// [`map_slice`]. `f` should be an `#[inline(always)]` function (so that it inlines into the
/// AVX2 loop); results are bit-identical to [`map`]'s.
pub fn map_wide<T: Element, F: Fn(T) -> T + Sync + Copy>(x: &TensorData, f: F) -> Vec<T> {
    // A strided view is copied out first: `f` runs only in the wide copies of the loop (its
    // fused multiply-adds would be calls in the baseline one).
    match contiguous_slice::<T>(x) {
        Some(src) => map_wide_slice(src, f),
        None => map_wide_slice(&gather::<T>(x), f),
    }
}

/// [`map_wide`] over a contiguous slice.
fn map_wide_slice<T: Element, F: Fn(T) -> T + Sync + Copy>(src: &[T], f: F) -> Vec<T> {
    map_chunks(src, move |s, o| map_slice(s, o, f))
}

/// `kernel(src, out)` over a new output the length of `src`, in chunks of 4096 elements on
/// the pool for long inputs: for slice kernels (the wide elementwise loops).
pub fn map_chunks<T: Scalar, K: Fn(&[T], &mut [T]) + Sync>(src: &[T], kernel: K) -> Vec<T> {
    let mut out = alloc::<T>(src.len());
    if src.len() >= PAR_MIN {
        crate::parallel::install(|| {
            out.par_chunks_mut(4096)
                .zip(src.par_chunks(4096))
                .for_each(|(o, s)| kernel(s, o))
        });
    } else {
        kernel(src, &mut out);
    }
    out
}

/// [`map_chunks`] for a kernel of two same-length slices, `kernel(x, y, out)`.
pub fn zip_chunks<T: Scalar, K: Fn(&[T], &[T], &mut [T]) + Sync>(
    x: &[T],
    y: &[T],
    kernel: K,
) -> Vec<T> {
    debug_assert_eq!(x.len(), y.len());
    let mut out = alloc::<T>(x.len());
    if x.len() >= PAR_MIN {
        crate::parallel::install(|| {
            out.par_chunks_mut(4096)
                .zip(x.par_chunks(4096).zip(y.par_chunks(4096)))
                .for_each(|(o, (x, y))| kernel(x, y, o))
        });
    } else {
        kernel(x, y, &mut out);
    }
    out
}

/// Like [`zip`], for a branch-free `f` (see [`map_wide`]): same-shape operands go through
/// [`zip_slice`] (strided ones copied out first), a tensor and a single element through
/// [`map_slice`], other broadcasts through [`zip`].
pub fn zip_wide<T: Element, F: Fn(T, T) -> T + Sync + Copy>(
    a: &TensorData,
    b: &TensorData,
    shape: &[usize],
    f: F,
) -> Vec<T> {
    let (full_a, full_b) = (
        a.layout.shape.as_slice() == shape,
        b.layout.shape.as_slice() == shape,
    );
    let (ca, cb) = (contiguous_slice::<T>(a), contiguous_slice::<T>(b));
    // One side a single element (a tensor and a scalar): a map over the other side.
    if let (Some(x), Some(&[y]), true) = (ca, cb, full_a) {
        return map_wide_slice(x, move |v| f(v, y));
    }
    if let (Some(&[x]), Some(y), true) = (ca, cb, full_b) {
        return map_wide_slice(y, move |v| f(x, v));
    }
    if !(full_a && full_b) {
        // Other broadcasts run in the general kernel.
        return zip(a, b, shape, f);
    }
    // Strided operands of the same shape are copied out first (see `map_wide`).
    let (ga, gb): (Vec<T>, Vec<T>);
    let x = match ca {
        Some(x) => x,
        None => {
            ga = gather::<T>(a);
            &ga
        }
    };
    let y = match cb {
        Some(y) => y,
        None => {
            gb = gather::<T>(b);
            &gb
        }
    };
    zip_chunks(x, y, move |x, y, o| zip_slice(x, y, o, f))
}

/// The widest x86-64 vector extension the elementwise and row kernels are compiled for, as
/// detected on this CPU and capped by the environment variable `REMAT_SIMD` (`baseline`,
/// `avx2` or `avx512`; read once), so that the narrower copies can be measured and tested
/// on a machine that has the wider ones.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum SimdLevel {
    /// The target's baseline (SSE2 on x86-64: 4 `f32` lanes).
    Baseline,
    /// AVX2 with FMA (8 `f32` lanes).
    Avx2,
    /// AVX-512F (16 `f32` lanes).
    Avx512,
}

/// The [`SimdLevel`] the kernels dispatch to (detected once).
pub fn simd_level() -> SimdLevel {
    static LEVEL: std::sync::OnceLock<SimdLevel> = std::sync::OnceLock::new();
    *LEVEL.get_or_init(|| {
        #[cfg(target_arch = "x86_64")]
        let detected = if std::is_x86_feature_detected!("avx512f") {
            SimdLevel::Avx512
        } else if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("fma") {
            SimdLevel::Avx2
        } else {
            SimdLevel::Baseline
        };
        #[cfg(not(target_arch = "x86_64"))]
        let detected = SimdLevel::Baseline;
        let cap = match std::env::var("REMAT_SIMD").as_deref() {
            Ok("baseline") => SimdLevel::Baseline,
            Ok("avx2") => SimdLevel::Avx2,
            _ => SimdLevel::Avx512,
        };
        detected.min(cap)
    })
}

/// The instruction set the GEMM library's float kernels run on here: `"avx512f"` where the
/// CPU has AVX-512F and the `avx512-gemm` feature compiled those kernels in, `"avx2+fma"`
/// where it has FMA, `"baseline"` otherwise (and on other architectures). `REMAT_SIMD` does
/// not reach the GEMMs (the library detects the CPU itself); a build without `avx512-gemm`
/// does, which is how an AVX2-only machine's matrix products are measured on one with AVX-512.
pub fn gemm_isa() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if cfg!(feature = "avx512-gemm") && std::is_x86_feature_detected!("avx512f") {
            return "avx512f";
        }
        if std::is_x86_feature_detected!("fma") {
            return "avx2+fma";
        }
    }
    "baseline"
}

/// The name of [`simd_level`] as `REMAT_SIMD` spells it (`"avx512"`, `"avx2"`, `"baseline"`).
pub fn simd_level_name() -> &'static str {
    match simd_level() {
        SimdLevel::Avx512 => "avx512",
        SimdLevel::Avx2 => "avx2",
        SimdLevel::Baseline => "baseline",
    }
}

/// `o[i] = f(s[i])`. On x86-64 the loop runs in a copy compiled for the widest of AVX-512F
/// (16 `f32` lanes) and AVX2 with FMA (8) that [`simd_level`] allows (the baseline's 4
/// otherwise). Rust never fuses a multiply and an add into an FMA itself, and an explicit
/// `mul_add` is exactly rounded in every copy, so results do not depend on which copy runs.
#[inline(always)]
pub fn map_slice<T: Copy, F: Fn(T) -> T>(s: &[T], o: &mut [T], f: F) {
    #[inline(always)]
    fn body<T: Copy, F: Fn(T) -> T>(s: &[T], o: &mut [T], f: F) {
        for (o, &s) in o.iter_mut().zip(s) {
            *o = f(s);
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        /// # Safety
        /// The CPU must support AVX-512F (which implies FMA).
        #[target_feature(enable = "avx512f,fma")]
        unsafe fn avx512<T: Copy, F: Fn(T) -> T>(s: &[T], o: &mut [T], f: F) {
            body(s, o, f)
        }
        /// # Safety
        /// The CPU must support AVX2 and FMA.
        #[target_feature(enable = "avx2,fma")]
        unsafe fn avx2<T: Copy, F: Fn(T) -> T>(s: &[T], o: &mut [T], f: F) {
            body(s, o, f)
        }
        match simd_level() {
            // SAFETY: simd_level reports only what the CPU supports.
            SimdLevel::Avx512 => return unsafe { avx512(s, o, f) },
            // SAFETY: as above.
            SimdLevel::Avx2 => return unsafe { avx2(s, o, f) },
            SimdLevel::Baseline => {}
        }
    }
    body(s, o, f)
}

/// Define `fn $name<T: Bound>(args) -> R` that runs `$body(args)` in a copy compiled for the
/// widest of AVX-512F and AVX2 that [`simd_level`] allows (the baseline copy otherwise), like
/// [`map_slice`]: for row kernels whose loops should use wide vectors. `$body` must be
/// `#[inline(always)]`: a target feature reaches only code inlined into the function that
/// enables it. No FMA is ever formed from separate operations (an explicit `mul_add` is exact
/// in every copy), so the results do not depend on which copy runs.
macro_rules! avx2_twin {
    ($(#[$m:meta])* $vis:vis fn $name:ident<$T:ident: $B:path>($($a:ident: $t:ty),* $(,)?)
        $(-> $r:ty)? = $body:ident;) => {
        $(#[$m])*
        $vis fn $name<$T: $B>($($a: $t),*) $(-> $r)? {
            #[cfg(target_arch = "x86_64")]
            {
                /// # Safety
                /// The CPU must support AVX-512F (which implies FMA).
                #[target_feature(enable = "avx512f,fma")]
                unsafe fn avx512<$T: $B>($($a: $t),*) $(-> $r)? {
                    $body($($a),*)
                }
                /// # Safety
                /// The CPU must support AVX2 and FMA.
                #[target_feature(enable = "avx2,fma")]
                unsafe fn avx2<$T: $B>($($a: $t),*) $(-> $r)? {
                    $body($($a),*)
                }
                match $crate::cpu::simd_level() {
                    // SAFETY: simd_level reports only what the CPU supports.
                    $crate::cpu::SimdLevel::Avx512 => return unsafe { avx512($($a),*) },
                    // SAFETY: as above.
                    $crate::cpu::SimdLevel::Avx2 => return unsafe { avx2($($a),*) },
                    $crate::cpu::SimdLevel::Baseline => {}
                }
            }
            $body($($a),*)
        }
    };
}
pub(crate) use avx2_twin;

/// `o[i] = f(x[i], y[i])`, dispatched like [`map_slice`].
#[inline(always)]
pub fn zip_slice<T: Copy, F: Fn(T, T) -> T>(x: &[T], y: &[T], o: &mut [T], f: F) {
    #[inline(always)]
    fn body<T: Copy, F: Fn(T, T) -> T>(x: &[T], y: &[T], o: &mut [T], f: F) {
        for ((o, &x), &y) in o.iter_mut().zip(x).zip(y) {
            *o = f(x, y);
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        /// # Safety
        /// The CPU must support AVX-512F (which implies FMA).
        #[target_feature(enable = "avx512f,fma")]
        unsafe fn avx512<T: Copy, F: Fn(T, T) -> T>(x: &[T], y: &[T], o: &mut [T], f: F) {
            body(x, y, o, f)
        }
        /// # Safety
        /// The CPU must support AVX2 and FMA.
        #[target_feature(enable = "avx2,fma")]
        unsafe fn avx2<T: Copy, F: Fn(T, T) -> T>(x: &[T], y: &[T], o: &mut [T], f: F) {
            body(x, y, o, f)
        }
        match simd_level() {
            // SAFETY: simd_level reports only what the CPU supports.
            SimdLevel::Avx512 => return unsafe { avx512(x, y, o, f) },
            // SAFETY: as above.
            SimdLevel::Avx2 => return unsafe { avx2(x, y, o, f) },
            SimdLevel::Baseline => {}
        }
    }
    body(x, y, o, f)
}

/// The total of `N` (a power of two) partial sums, folding the upper half onto the lower
/// until one is left: a fixed order (the same bits at every vector width) that maps onto
/// whole-register halves. (A pairwise tree over neighbours, `(a0 + a1) + (a2 + a3)`, made
/// LLVM lay the accumulators out for that tree and shuffle every chunk of the loop before.)
#[inline(always)]
pub fn fold_halves<T: Copy + std::ops::Add<Output = T>, const N: usize>(mut a: [T; N]) -> T {
    let mut n = N;
    while n > 1 {
        n /= 2;
        for i in 0..n {
            a[i] = a[i] + a[i + n];
        }
    }
    a[0]
}

/// `o[i] = if c[i] != 0 { a[i] } else { b[i] }` (a bool mask selecting between two
/// operands), dispatched like [`map_slice`]: the select is a vector blend.
#[inline(always)]
pub fn select_slice<T: Copy>(c: &[u8], a: &[T], b: &[T], o: &mut [T]) {
    /// A bitwise blend on same-sized integers: a plain `if` becomes a select of addresses
    /// and a gather.
    #[inline(always)]
    fn blend<U>(c: &[u8], a: &[U], b: &[U], o: &mut [U])
    where
        U: Copy
            + std::ops::BitAnd<Output = U>
            + std::ops::BitOr<Output = U>
            + std::ops::Not<Output = U>
            + num_traits::WrappingSub
            + From<u8>,
    {
        let n = o.len();
        let (c, a, b) = (&c[..n], &a[..n], &b[..n]);
        for i in 0..n {
            // All ones where `c` is set, else zero.
            let m = U::from(0).wrapping_sub(&U::from(u8::from(c[i] != 0)));
            o[i] = (a[i] & m) | (b[i] & !m);
        }
    }
    #[inline(always)]
    fn body<T: Copy>(c: &[u8], a: &[T], b: &[T], o: &mut [T]) {
        /// `s` as a slice of `U` (same size and alignment as `T`).
        fn cast<T, U>(s: &[T]) -> &[U] {
            // SAFETY: the callers check that U has T's size and alignment; every bit
            // pattern is a valid integer.
            unsafe { std::slice::from_raw_parts(s.as_ptr().cast(), s.len()) }
        }
        fn cast_mut<T, U>(s: &mut [T]) -> &mut [U] {
            // SAFETY: as above; the blend writes only bit patterns taken from `a` or `b`,
            // which are valid `T`s.
            unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast(), s.len()) }
        }
        use std::mem::{align_of, size_of};
        if size_of::<T>() == 4 && align_of::<T>() == 4 {
            return blend::<u32>(c, cast(a), cast(b), cast_mut(o));
        }
        if size_of::<T>() == 8 && align_of::<T>() == 8 {
            return blend::<u64>(c, cast(a), cast(b), cast_mut(o));
        }
        let n = o.len();
        let (c, a, b) = (&c[..n], &a[..n], &b[..n]);
        for i in 0..n {
            o[i] = if c[i] != 0 { a[i] } else { b[i] };
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        /// # Safety
        /// The CPU must support AVX-512F.
        #[target_feature(enable = "avx512f,avx512bw,fma")]
        unsafe fn avx512<T: Copy>(c: &[u8], a: &[T], b: &[T], o: &mut [T]) {
            body(c, a, b, o)
        }
        /// # Safety
        /// The CPU must support AVX2 and FMA.
        #[target_feature(enable = "avx2,fma")]
        unsafe fn avx2<T: Copy>(c: &[u8], a: &[T], b: &[T], o: &mut [T]) {
            body(c, a, b, o)
        }
        match simd_level() {
            // SAFETY: simd_level reports only what the CPU supports (AVX-512BW is checked
            // here: the byte mask's compare needs it).
            SimdLevel::Avx512 if std::is_x86_feature_detected!("avx512bw") => {
                return unsafe { avx512(c, a, b, o) }
            }
            // SAFETY: as above.
            SimdLevel::Avx512 | SimdLevel::Avx2 => return unsafe { avx2(c, a, b, o) },
            SimdLevel::Baseline => {}
        }
    }
    body(c, a, b, o)
}

/// Reduce `x` over `axes` (sorted, unique) with `init` and `f`, returning the values in C
/// order of the kept axes (reduced axes removed).
pub fn reduce<T: Scalar, F: Fn(T, T) -> T + Sync + Send>(
    x: &TensorData,
    axes: &[usize],
    init: T,
    f: F,
) -> Vec<T> {
    let shape = &x.layout.shape;
    let src = slice::<T>(x);
    // Permute so kept axes come first, reduced axes last; then each output element reduces a
    // contiguous run of the permuted index space.
    let kept: Dims = (0..shape.len()).filter(|a| !axes.contains(a)).collect();
    let mut perm: Dims = kept.clone();
    perm.extend(axes.iter().copied());
    let pl = x.layout.permute(&perm);
    let outer: usize = kept.iter().map(|&a| shape[a]).product();
    let inner: usize = axes.iter().map(|&a| shape[a]).product();
    let mut out = filled(outer, init);
    if inner == 0 || outer == 0 {
        return out;
    }
    // Fast path: the reduced axes are the trailing contiguous block.
    if let Some(c) = contiguous_slice::<T>(x) {
        if axes.iter().copied().eq(kept.len()..shape.len()) {
            let body = |(o, chunk): (&mut T, &[T])| {
                *o = chunk.iter().fold(init, |acc, &v| f(acc, v));
            };
            if outer * inner >= PAR_MIN {
                crate::parallel::install(|| {
                    out.par_iter_mut().zip(c.par_chunks(inner)).for_each(body)
                });
            } else {
                out.iter_mut().zip(c.chunks(inner)).for_each(body);
            }
            return out;
        }
        if axes.iter().copied().eq(0..axes.len()) {
            // Leading axes reduced (bias gradients): accumulate rows into the output.
            for r in c.chunks(outer) {
                for (o, &v) in out.iter_mut().zip(r) {
                    *o = f(*o, v);
                }
            }
            return out;
        }
    }
    let mut k = 0usize;
    let mut acc = init;
    pl.for_each_index(|i| {
        acc = f(acc, src[i]);
        k += 1;
        if k.is_multiple_of(inner) {
            out[k / inner - 1] = acc;
            acc = init;
        }
    });
    out
}

/// Contiguous strides helper re-exported for kernels.
pub fn strides_of(shape: &[usize]) -> Dims {
    contiguous_strides(shape)
}

#[allow(dead_code)]
fn _layout_is_used(_: &Layout) {}

#[cfg(test)]
mod tests {
    #[test]
    fn select_slice_keeps_every_bit_for_each_element_size() {
        let c: Vec<u8> = (0..37).map(|i| u8::from(i % 3 != 0)).collect();
        let pick = |i: usize| c[i] != 0;
        let a32: Vec<f32> = (0..37)
            .map(|i| if i == 4 { f32::NAN } else { i as f32 })
            .collect();
        let b32: Vec<f32> = (0..37)
            .map(|i| if i == 3 { -0.0 } else { -(i as f32) })
            .collect();
        let mut o32 = vec![0f32; 37];
        super::select_slice(&c, &a32, &b32, &mut o32);
        for i in 0..37 {
            let want = if pick(i) { a32[i] } else { b32[i] };
            assert_eq!(o32[i].to_bits(), want.to_bits(), "f32 at {i}");
        }
        let a64: Vec<i64> = (0..37).map(|i| i64::MIN + i).collect();
        let b64: Vec<i64> = (0..37).map(|i| i64::MAX - i).collect();
        let mut o64 = vec![0i64; 37];
        super::select_slice(&c, &a64, &b64, &mut o64);
        let a8: Vec<u8> = (0..37).map(|i| i as u8).collect();
        let b8: Vec<u8> = (0..37).map(|i| 200 + i as u8).collect();
        let mut o8 = vec![0u8; 37];
        super::select_slice(&c, &a8, &b8, &mut o8);
        for i in 0..37 {
            assert_eq!(o64[i], if pick(i) { a64[i] } else { b64[i] });
            assert_eq!(o8[i], if pick(i) { a8[i] } else { b8[i] });
        }
    }
}
