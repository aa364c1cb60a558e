//! Scalar formulas that the op table's CPU rows share (GELU, SiLU, powers with fast paths,
//! sign, rounding half to even) and the constants the CUDA rows use through the prelude of
//! [`cuda_prelude`], so both devices use one set of values.

use crate::cpu::{self, gelu_pieces};
use crate::dtype::{DType, Element};
use crate::ops::from_vec;
use crate::ops::softmax::c_order;
use crate::tensor::Tensor;

/// sqrt(2 / pi), the tanh-GELU scale.
pub const GELU_K: f64 = 0.797_884_560_802_865_4;
/// The cubic coefficient of the tanh-GELU.
pub const GELU_C: f64 = 0.044_715;
/// 1 / sqrt(2).
pub const FRAC_1_SQRT_2: f64 = std::f64::consts::FRAC_1_SQRT_2;
/// 1 / sqrt(2 pi), the standard normal density at 0.
pub const FRAC_1_SQRT_2PI: f64 = 0.398_942_280_401_432_7;
/// 2 / sqrt(pi), the derivative of erf at 0.
pub const FRAC_2_SQRT_PI: f64 = std::f64::consts::FRAC_2_SQRT_PI;

/// The CUDA definitions the table's C expressions use: the constants above and the device
/// twins of the helpers below.
pub fn cuda_prelude() -> String {
    format!(
        r#"
#define GELU_K {GELU_K:e}
#define GELU_C {GELU_C:e}
#define FRAC_1_SQRT_2 {FRAC_1_SQRT_2:e}
#define FRAC_1_SQRT_2PI {FRAC_1_SQRT_2PI:e}
#define FRAC_2_SQRT_PI {FRAC_2_SQRT_PI:e}

// -1, 0 or 1 (0 for NaN and both zeros), as PyTorch's sign (`sign_of`).
template <typename T> __device__ __forceinline__ T sign_of(T x) {{
    return T((T(0) < x) - (x < T(0)));
}}
// g times SiLU's derivative `s (1 + x (1 - s))`, s = sigmoid(x) (`silu_grad`).
template <typename T> __device__ __forceinline__ T silu_grad(T g, T x) {{
    T s = T(1) / (T(1) + exp(-x));
    return g * s * (T(1) + x * (T(1) - s));
}}

// x^p with the CPU's fast paths (`pow_fast`), so both devices round alike.
template <typename T> __device__ __forceinline__ T pow_fast(T v, T p) {{
    if (p == T(2)) return v * v;
    if (p == T(1)) return v;
    if (p == T(0)) return T(1);
    if (p == T(0.5)) return sqrt(v);
    if (p == T(-1)) return T(1) / v;
    if (p == T(3)) return v * v * v;
    return pow(v, p);
}}
// g p x^(p-1) with the fast paths of `pow_fast_grad`.
template <typename T> __device__ __forceinline__ T pow_fast_grad(T g, T x, T p) {{
    if (p == T(0)) return T(0);
    if (p == T(1)) return g;
    if (p == T(2)) return g * (x + x);
    if (p == T(0.5)) return g * T(0.5) / sqrt(x);
    return g * p * pow(x, p - T(1));
}}
template <typename T> __device__ __forceinline__ T gelu_erf_grad(T g, T x) {{
    T cdf = T(0.5) * (T(1) + erf(x * T(FRAC_1_SQRT_2)));
    T pdf = T(FRAC_1_SQRT_2PI) * exp(-T(0.5) * x * x);
    return g * (cdf + x * pdf);
}}
template <typename T> __device__ __forceinline__ T gelu_tanh(T x) {{
    T u = T(GELU_K) * (x + T(GELU_C) * x * x * x);
    return T(0.5) * x * (T(1) + tanh(u));
}}
template <typename T> __device__ __forceinline__ T gelu_tanh_grad(T g, T x) {{
    T x2 = x * x;
    T t = tanh(T(GELU_K) * (x + T(GELU_C) * x2 * x));
    T du = T(GELU_K) * (T(1) + T(3) * T(GELU_C) * x2);
    return g * (T(0.5) * (T(1) + t) + T(0.5) * x * (T(1) - t * t) * du);
}}
"#
    )
}

/// `v^p` with exact fast paths for the common exponents (`p` is loop-invariant, so the
/// branches are predicted).
#[inline(always)]
pub fn pow_fast<T: Element>(v: T, p: T) -> T {
    let c = |k: f64| T::from_f64(k);
    if p == c(2.0) {
        v * v
    } else if p == c(1.0) {
        v
    } else if p == c(0.0) {
        // 0^0 = 1, as in NumPy and PyTorch.
        c(1.0)
    } else if p == c(0.5) {
        v.sqrt()
    } else if p == c(-1.0) {
        c(1.0) / v
    } else if p == c(3.0) {
        v * v * v
    } else if p.fract() == c(0.0) && p.abs() <= c(i32::MAX as f64) {
        v.powi(p.to_f64() as i32)
    } else {
        v.powf(p)
    }
}

/// `g p x^(p-1)`, with the fast paths of [`pow_fast`].
#[inline(always)]
pub fn pow_fast_grad<T: Element>(g: T, x: T, p: T) -> T {
    let c = |k: f64| T::from_f64(k);
    if p == c(0.0) {
        c(0.0)
    } else if p == c(1.0) {
        g
    } else if p == c(2.0) {
        g * (x + x)
    } else if p == c(0.5) {
        g * c(0.5) / x.sqrt()
    } else {
        let q = p - c(1.0);
        if q.fract() == c(0.0) && q.abs() <= c(i32::MAX as f64) {
            g * p * x.powi(q.to_f64() as i32)
        } else {
            g * p * x.powf(q)
        }
    }
}

/// Exact GELU, `0.5 x (1 + erf(x / sqrt 2))`. Float32 takes the piecewise polynomials of
/// [`crate::cpu::gelu_pieces`] (the same bits as the row's slice kernel, [`gelu_erf_f32`]);
/// other dtypes the formula (branch-free, so the loops of [`crate::cpu::map_wide`] vectorise).
#[inline(always)]
pub fn gelu_erf<T: Element>(v: T) -> T {
    if T::DTYPE == DType::F32 {
        return T::from_f64(gelu_pieces::gelu(v.to_f64() as f32) as f64);
    }
    let (half, one) = (T::from_f64(0.5), T::from_f64(1.0));
    half * v * (one + Element::erf(v * T::from_f64(FRAC_1_SQRT_2)))
}

/// The `gelu` row's kernel for float32 tensors ([`gelu_pieces::gelu_slice`] on the pool);
/// None for other dtypes.
pub fn gelu_erf_f32(x: &Tensor) -> Option<Tensor> {
    if x.dtype() != DType::F32 {
        return None;
    }
    let src = c_order::<f32>(x.data());
    Some(from_vec(
        cpu::map_chunks(&src, gelu_pieces::gelu_slice),
        x.shape(),
    ))
}

/// The `gelu_backward` row's kernel for float32 operands of the output's shape
/// ([`gelu_pieces::gelu_grad_slice`] on the pool); None otherwise (broadcasts take the
/// per-element formula, the same bits).
pub fn gelu_erf_grad_f32(g: &Tensor, x: &Tensor, shape: &[usize]) -> Option<Tensor> {
    if g.dtype() != DType::F32 || g.shape() != shape || x.shape() != shape {
        return None;
    }
    let (gs, xs) = (c_order::<f32>(g.data()), c_order::<f32>(x.data()));
    Some(from_vec(
        cpu::zip_chunks(&gs, &xs, gelu_pieces::gelu_grad_slice),
        shape,
    ))
}

/// `g` times exact GELU's derivative at `x`: `Phi(x) + x phi(x)` (float32 as [`gelu_erf`]).
#[inline(always)]
pub fn gelu_erf_grad<T: Element>(g: T, x: T) -> T {
    if T::DTYPE == DType::F32 {
        let (g, x) = (g.to_f64() as f32, x.to_f64() as f32);
        return T::from_f64(gelu_pieces::gelu_grad(g, x) as f64);
    }
    let (half, one) = (T::from_f64(0.5), T::from_f64(1.0));
    let cdf = half * (one + Element::erf(x * T::from_f64(FRAC_1_SQRT_2)));
    let pdf = T::from_f64(FRAC_1_SQRT_2PI) * (-half * x * x).kernel_exp();
    g * (cdf + x * pdf)
}

/// PyTorch's tanh approximation of GELU, `0.5 x (1 + tanh(k (x + c x^3)))`.
#[inline(always)]
pub fn gelu_tanh<T: Element>(v: T) -> T {
    let (half, one) = (T::from_f64(0.5), T::from_f64(1.0));
    let u = T::from_f64(GELU_K) * (v + T::from_f64(GELU_C) * v * v * v);
    half * v * (one + u.fast_tanh())
}

/// `g` times the tanh-GELU's derivative: with `u = k (x + c x^3)`, `t = tanh u`,
/// `0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2)`.
#[inline(always)]
pub fn gelu_tanh_grad<T: Element>(g: T, x: T) -> T {
    let (half, one) = (T::from_f64(0.5), T::from_f64(1.0));
    let (k, c) = (T::from_f64(GELU_K), T::from_f64(GELU_C));
    let x2 = x * x;
    let t = (k * (x + c * x2 * x)).fast_tanh();
    let du = k * (one + T::from_f64(3.0) * c * x2);
    g * (half * (one + t) + half * x * (one - t * t) * du)
}

/// -1, 0 or 1 by the sign of `x`; 0 for NaN and for both zeros, as PyTorch's `sign`.
#[inline(always)]
pub fn sign_of<T: Element>(x: T) -> T {
    let zero = T::from_f64(0.0);
    if x > zero {
        T::from_f64(1.0)
    } else if x < zero {
        T::from_f64(-1.0)
    } else {
        zero
    }
}

/// `x` rounded to the nearest integer, ties to even (PyTorch's and NumPy's `round`, CUDA's
/// `rint`). `num_traits::Float` has only ties-away-from-zero `round`: a tie is detected by
/// its distance (exact for every float with a fractional part) and rounded as `2 round(x/2)`,
/// which is the even neighbour.
#[inline(always)]
pub fn round_half_even<T: Element>(x: T) -> T {
    let r = x.round();
    if (r - x).abs() == T::from_f64(0.5) {
        T::from_f64(2.0) * (x * T::from_f64(0.5)).round()
    } else {
        r
    }
}

/// `g` times SiLU's derivative at `x`: with `s = sigmoid(x)`, `s (1 + x (1 - s))`.
#[inline(always)]
pub fn silu_grad<T: Element>(g: T, x: T) -> T {
    let one = T::from_f64(1.0);
    let s = one / (one + (-x).fast_exp());
    g * s * (one + x * (one - s))
}
