//! The CPU kernel of every in-place update: one walk over the destination's elements in C
//! order, through its strides (a view of a larger tensor, a transpose, a NumPy array's
//! memory), with the operand read through its broadcast layout; large tensors are split into
//! chunks that run in parallel on the engine's pool. Nothing is allocated except a copy of
//! an operand that shares the destination's storage at other positions (otherwise an element
//! could read a value another element's write already replaced), or a cast of an operand
//! whose dtype pairs with the destination's in none of the kernels below.
//!
//! Arithmetic computes in PyTorch's promoted dtype and rounds once into the destination:
//! float32 or float64 for floats, wrapping int64 for integers and bool. The kernels are
//! instantiated for the pairs (destination, operand) that need no cast: equal dtypes, the two
//! floats either way, an int32 or bool destination with an int64 operand (Python numbers),
//! and every destination with a bool mask.

use super::update::{Src, Update};
use crate::cpu;
use crate::device::Device;
use crate::dtype::{DType, Scalar};
use crate::error::{Error, Result};
use crate::layout::{Dims, Layout};
use crate::tensor_data::TensorData;
use rayon::prelude::*;
use smallvec::SmallVec;
use std::sync::Arc;

/// Elements per parallel chunk.
const CHUNK: usize = 1 << 14;

/// A pointer into a buffer shared by the threads of one update; each thread writes only its
/// own elements (the destination has no overlapping elements: checked by the rules).
#[derive(Clone, Copy)]
struct Shared<T>(*mut T);
// SAFETY: see the type's doc: the threads touch disjoint elements.
unsafe impl<T> Send for Shared<T> {}
unsafe impl<T> Sync for Shared<T> {}

impl<T> Shared<T> {
    /// The pointer (a method, so closures capture the `Sync` wrapper, not its field).
    #[inline(always)]
    fn get(self) -> *mut T {
        self.0
    }
}

/// A type updates compute in: `f32`, `f64` (IEEE; NaN propagates through the clamps, as
/// the clamp rows do) or `i64` (integers and bool, wrapping as PyTorch's integer ops).
trait Compute: Scalar {
    /// An element of the operand or the destination in this type.
    fn load<S: Scalar>(s: S) -> Self;
    /// This value written into an element of type `T` (rounded, wrapped, or `!= 0`).
    fn store<T: Scalar>(self) -> T;
    fn axpy(self, a: Self, v: Self) -> Self;
    fn mul(self, v: Self) -> Self;
    fn div(self, v: Self) -> Self;
    fn clamp_min(self, v: Self) -> Self;
    fn clamp_max(self, v: Self) -> Self;
    fn relu(self) -> Self;
    fn leaky_relu(self, v: Self) -> Self;
}

macro_rules! compute_float {
    ($T:ty) => {
        impl Compute for $T {
            #[inline(always)]
            fn load<S: Scalar>(s: S) -> Self {
                <$T>::from_f64(s.to_f64())
            }
            #[inline(always)]
            fn store<T: Scalar>(self) -> T {
                T::from_f64(self as f64)
            }
            #[inline(always)]
            fn axpy(self, a: Self, v: Self) -> Self {
                self + a * v
            }
            #[inline(always)]
            fn mul(self, v: Self) -> Self {
                self * v
            }
            #[inline(always)]
            fn div(self, v: Self) -> Self {
                self / v
            }
            #[inline(always)]
            fn clamp_min(self, v: Self) -> Self {
                if self.is_nan() || self > v {
                    self
                } else {
                    v
                }
            }
            #[inline(always)]
            fn clamp_max(self, v: Self) -> Self {
                if self.is_nan() || self < v {
                    self
                } else {
                    v
                }
            }
            #[inline(always)]
            fn relu(self) -> Self {
                if self < 0.0 {
                    0.0
                } else {
                    self
                }
            }
            #[inline(always)]
            fn leaky_relu(self, v: Self) -> Self {
                if self > 0.0 {
                    self
                } else {
                    self * v
                }
            }
        }
    };
}
compute_float!(f32);
compute_float!(f64);

impl Compute for i64 {
    #[inline(always)]
    fn load<S: Scalar>(s: S) -> Self {
        s.to_i64()
    }
    #[inline(always)]
    fn store<T: Scalar>(self) -> T {
        T::from_i64(self)
    }
    #[inline(always)]
    fn axpy(self, a: Self, v: Self) -> Self {
        self.wrapping_add(a.wrapping_mul(v))
    }
    #[inline(always)]
    fn mul(self, v: Self) -> Self {
        self.wrapping_mul(v)
    }
    #[inline(always)]
    fn div(self, v: Self) -> Self {
        // Integer destinations refuse true division before any kernel runs; never panic.
        if v == 0 {
            0
        } else {
            self.wrapping_div(v)
        }
    }
    #[inline(always)]
    fn clamp_min(self, v: Self) -> Self {
        self.max(v)
    }
    #[inline(always)]
    fn clamp_max(self, v: Self) -> Self {
        self.min(v)
    }
    #[inline(always)]
    fn relu(self) -> Self {
        self.max(0)
    }
    #[inline(always)]
    fn leaky_relu(self, v: Self) -> Self {
        if self > 0 {
            self
        } else {
            self.wrapping_mul(v)
        }
    }
}

/// The dtype an arithmetic update of a `dst` tensor computes in with an operand of dtype
/// `src` (PyTorch's promotion; integers and bool compute in int64).
pub(crate) fn compute_dtype(dst: DType, src: DType) -> DType {
    match dst.promote(src) {
        d @ (DType::F32 | DType::F64) => d,
        // Half dtypes update in float32 and round once per element (PyTorch's opmath).
        d if d.is_half() => DType::F32,
        _ => DType::I64,
    }
}

/// Whether the arithmetic kernels read an operand of dtype `src` next to a destination of
/// dtype `dst` directly (else it is cast to [`compute_dtype`] first).
fn direct_pair(dst: DType, src: DType) -> bool {
    use DType::*;
    matches!(
        (dst, src),
        (F32, F32)
            | (F32, F64)
            | (F64, F64)
            | (F64, F32)
            | (I64, I64)
            | (I32, I32)
            | (I32, I64)
            | (Bool, Bool)
            | (Bool, I64)
            | (BF16, BF16 | F32 | F64)
            | (F16, F16 | F32 | F64)
            | (F32, BF16 | F16)
    )
}

/// Run `u` with operand `src` over every element of the CPU view `dst` (dtypes already
/// checked by the public op).
pub(crate) fn update(op: &str, dst: &TensorData, src: Src<'_>, u: Update) -> Result<()> {
    if dst.storage.device() != Device::Cpu {
        return Err(Error::device(op, "the CPU kernel got a device tensor"));
    }
    if let Src::Tensor(s) = src {
        if s.device() != Device::Cpu {
            return Err(Error::device(op, "the CPU kernel got a device operand"));
        }
    }
    if dst.layout.numel() == 0 {
        return Ok(());
    }
    let dt = dst.storage.dtype();
    match (u, src) {
        (u, _) if u.is_random() && dt.is_float() => {
            crate::dispatch_any!(dt, T => random::<T>(dst, u));
            Ok(())
        }
        (u, _) if u.is_random() => Err(Error::dtype(
            op,
            format!("expects a floating point tensor, got {dt}"),
        )),
        (Update::MaskedFill(value), Src::Tensor(mask)) if mask.dtype() == DType::Bool => {
            let m = operand::<u8>(op, dst, mask.data())?;
            crate::dispatch_any!(dt, T => {
                let value: T = T::from_f64(value);
                run::<T, u8, _>(dst, &m, move |_, x, m| if m != 0 { value } else { x });
            });
            Ok(())
        }
        (Update::MaskedFill(_), _) => Err(Error::dtype(op, "the mask must be a bool tensor")),
        (_, Src::Tensor(s)) if !direct_pair(dt, s.dtype()) => {
            // A copy converts to the destination's dtype; arithmetic to the promoted one.
            let to = match u {
                Update::Set => dt,
                _ => compute_dtype(dt, s.dtype()),
            };
            let cast = crate::ops::cast(s, to)?;
            arith(op, dst, Src::Tensor(&cast), u)
        }
        _ => arith(op, dst, src, u),
    }
}

/// `src` (a number, or a tensor of `dst`'s dtype broadcast to `shape`) written at the storage
/// `offsets` of `dst`, in order (the last of repeated offsets wins). The values are read in
/// full first: the operand may share `dst`'s storage.
pub(crate) fn scatter(
    op: &str,
    dst: &TensorData,
    offsets: &[usize],
    shape: &[usize],
    src: Src<'_>,
) -> Result<()> {
    let len = dst.storage.len();
    if dst.storage.device() != Device::Cpu || offsets.iter().any(|&o| o >= len) {
        return Err(Error::value(
            op,
            "element offsets outside the CPU tensor's storage",
        ));
    }
    crate::dispatch_any!(dst.storage.dtype(), T => {
        let values: Vec<T> = match src {
            Src::Tensor(t) if t.dtype() == T::DTYPE && t.device() == Device::Cpu => {
                let view = TensorData {
                    storage: t.storage().clone(),
                    layout: t.layout().broadcast_to(op, shape)?,
                };
                cpu::catch_oom(op, || Ok(cpu::gather::<T>(&view)))?
            }
            Src::Scalar(v) => vec![T::from_f64(v); offsets.len().min(1)],
            _ => return Err(Error::dtype(op, "the values must be a number or a CPU tensor of the destination's dtype")),
        };
        let base = dst.storage.as_ptr() as *mut T;
        for (k, &o) in offsets.iter().enumerate() {
            let v = if values.len() == offsets.len() { values[k] } else { values[0] };
            // SAFETY: `o` is inside the storage (checked above); the values were copied out.
            unsafe { *base.add(o) = v };
        }
    });
    Ok(())
}

/// An arithmetic update (or a copy) with a directly readable operand.
fn arith(op: &str, dst: &TensorData, src: Src<'_>, u: Update) -> Result<()> {
    use DType::*;
    let dt = dst.storage.dtype();
    // A number is held as one broadcast element: of the destination's dtype for a fill
    // (converted as a cast does: `0.5` is true in a bool tensor), else of the compute dtype.
    let sdt = match (src, u) {
        (Src::Tensor(s), _) => s.dtype(),
        (_, Update::Set) => dt,
        _ => compute_dtype(dt, dt),
    };
    macro_rules! pair {
        ($T:ty, $S:ty, $P:ty) => {{
            let s = source::<$S>(op, dst, src)?;
            formula::<$T, $S, $P>(dst, &s, u);
        }};
    }
    match (dt, sdt) {
        (F32, F32) => pair!(f32, f32, f32),
        (F32, F64) => pair!(f32, f64, f64),
        (F64, F64) => pair!(f64, f64, f64),
        (F64, F32) => pair!(f64, f32, f64),
        (I64, I64) => pair!(i64, i64, i64),
        (I32, I32) => pair!(i32, i32, i64),
        (I32, I64) => pair!(i32, i64, i64),
        (Bool, Bool) => pair!(u8, u8, i64),
        (Bool, I64) => pair!(u8, i64, i64),
        (BF16, BF16) => pair!(half::bf16, half::bf16, f32),
        (BF16, F32) => pair!(half::bf16, f32, f32),
        (BF16, F64) => pair!(half::bf16, f64, f64),
        (F16, F16) => pair!(half::f16, half::f16, f32),
        (F16, F32) => pair!(half::f16, f32, f32),
        (F16, F64) => pair!(half::f16, f64, f64),
        (F32, BF16) => pair!(f32, half::bf16, f32),
        (F32, F16) => pair!(f32, half::f16, f32),
        (d, s) => {
            return Err(Error::dtype(
                op,
                format!("no in-place kernel for a {d} tensor with a {s} operand"),
            ))
        }
    }
    Ok(())
}

/// The elements an update reads next to `dst`: a pointer, the layout broadcast to `dst`'s
/// shape, and the buffer it points into when it had to be made here.
struct Operand<S> {
    base: *const S,
    layout: Layout,
    /// Whether it reads the destination's own storage (then at the same positions).
    aliased: bool,
    _held: Vec<S>,
}

/// `src` as an [`Operand`] of element type `S` (its dtype, or a number).
fn source<S: Scalar>(op: &str, dst: &TensorData, src: Src<'_>) -> Result<Operand<S>> {
    match src {
        Src::Tensor(t) => operand::<S>(op, dst, t.data()),
        Src::Scalar(v) => Ok(number(dst, S::from_f64(v))),
        Src::None => Ok(number(dst, S::from_f64(0.0))),
    }
}

/// One value broadcast over `dst`'s shape.
fn number<S: Scalar>(dst: &TensorData, v: S) -> Operand<S> {
    let held = vec![v];
    let zeros: Dims = SmallVec::from_elem(0, dst.layout.ndim());
    Operand {
        base: held.as_ptr(),
        layout: Layout {
            shape: dst.layout.shape.clone(),
            strides: zeros,
            offset: 0,
        },
        aliased: false,
        _held: held,
    }
}

/// The tensor `s` (dtype `S`) read next to `dst`: through its own storage, or a copy when it
/// shares `dst`'s storage at other positions.
fn operand<S: Scalar>(op: &str, dst: &TensorData, s: &TensorData) -> Result<Operand<S>> {
    if s.storage.dtype() != S::DTYPE {
        return Err(Error::dtype(op, "operand of an unexpected dtype"));
    }
    let shape = &dst.layout.shape;
    let bl = s.layout.broadcast_to(op, shape)?;
    if Arc::ptr_eq(&s.storage, &dst.storage) && bl != dst.layout {
        let view = TensorData {
            storage: s.storage.clone(),
            layout: bl,
        };
        let held = cpu::catch_oom(op, || Ok(cpu::gather::<S>(&view)))?;
        return Ok(Operand {
            base: held.as_ptr(),
            layout: Layout::contiguous(shape),
            aliased: false,
            _held: held,
        });
    }
    // The same raw pointer the destination is written through: the operand is read by
    // address, never through a slice the writes would alias.
    Ok(Operand {
        base: s.storage.as_ptr() as *const S,
        layout: bl,
        aliased: Arc::ptr_eq(&s.storage, &dst.storage),
        _held: Vec::new(),
    })
}

/// Pick the per-element formula of the arithmetic update `u`, computed in `P`.
fn formula<T: Scalar, S: Scalar, P: Compute>(dst: &TensorData, s: &Operand<S>, u: Update) {
    let load = |v: S| P::load(v);
    match u {
        Update::Axpy(a) => {
            let a = P::from_f64(a);
            run::<T, S, _>(dst, s, move |_, x, v| {
                P::load(x).axpy(a, load(v)).store::<T>()
            })
        }
        Update::Mul => run::<T, S, _>(dst, s, |_, x, v| P::load(x).mul(load(v)).store()),
        Update::Div => run::<T, S, _>(dst, s, |_, x, v| P::load(x).div(load(v)).store()),
        Update::Set => run::<T, S, _>(dst, s, |_, _, v| load(v).store()),
        Update::ClampMin => run::<T, S, _>(dst, s, |_, x, v| P::load(x).clamp_min(load(v)).store()),
        Update::ClampMax => run::<T, S, _>(dst, s, |_, x, v| P::load(x).clamp_max(load(v)).store()),
        Update::Relu => run::<T, S, _>(dst, s, |_, x, _| P::load(x).relu().store()),
        Update::LeakyRelu => {
            run::<T, S, _>(dst, s, |_, x, v| P::load(x).leaky_relu(load(v)).store())
        }
        // Not arithmetic: dispatched before.
        Update::MaskedFill(_)
        | Update::Normal { .. }
        | Update::Uniform { .. }
        | Update::Exponential { .. }
        | Update::Bernoulli { .. } => {}
    }
}

/// A random fill of a float destination.
fn random<T: Scalar>(dst: &TensorData, u: Update) {
    let none = number::<T>(dst, T::from_f64(0.0));
    run::<T, T, _>(dst, &none, move |i, _, _| T::from_f64(u.sample(i as u64)));
}

/// `d[i] = f(i, d[i], s[i])` over every element `i` (C order) of the view `dst` and the
/// operand `s` (broadcast to the same shape), in parallel chunks when large.
fn run<T: Scalar, S: Scalar, F>(dst: &TensorData, s: &Operand<S>, f: F)
where
    F: Fn(usize, T, S) -> T + Sync,
{
    let (dl, sl, s_aliased) = (&dst.layout, &s.layout, s.aliased);
    let (shape, ds, ss) = merge(&dl.shape, &dl.strides, &sl.strides);
    let n = dl.numel();
    let d = dst.storage.as_ptr() as *mut T;
    // SAFETY: both offsets lie inside their buffers (valid views with at least one element).
    let (d, s) = unsafe {
        (
            Shared(d.add(dl.offset)),
            Shared(s.base.add(sl.offset) as *mut S),
        )
    };
    // Both views contiguous (or the operand one broadcast value) and in different buffers:
    // plain slices, which the compiler vectorises.
    let flat = shape.len() == 1 && ds[0] == 1 && ss[0] <= 1 && !s_aliased;
    let chunk = |start: usize, end: usize| {
        if flat {
            // SAFETY: `start..end` are elements of both views (the operand's one element
            // when its stride is 0); the buffers are distinct, so the slices do not alias.
            unsafe {
                let out = std::slice::from_raw_parts_mut(d.get().add(start), end - start);
                if ss[0] == 1 {
                    let src = std::slice::from_raw_parts(s.get().add(start), end - start);
                    for (k, (x, &v)) in out.iter_mut().zip(src).enumerate() {
                        *x = f(start + k, *x, v);
                    }
                } else {
                    let v = *s.get();
                    for (k, x) in out.iter_mut().enumerate() {
                        *x = f(start + k, *x, v);
                    }
                }
            }
            return;
        }
        walk(&shape, &ds, &ss, start, end, |i, od, os| {
            // SAFETY: `od`/`os` are offsets of elements of the two views, inside their
            // buffers; the destination's elements are distinct, and an operand sharing its
            // storage either sits at the same positions (each element reads its own old
            // value before writing it) or was copied out by `operand`.
            unsafe {
                let p = d.get().add(od);
                *p = f(i, *p, *s.get().add(os));
            }
        })
    };
    if n >= cpu::PAR_MIN {
        crate::parallel::install(|| {
            (0..n.div_ceil(CHUNK))
                .into_par_iter()
                .for_each(|c| chunk(c * CHUNK, (c * CHUNK + CHUNK).min(n)))
        });
    } else {
        chunk(0, n);
    }
}

/// The shape and two stride lists with axes of extent 1 dropped and neighbouring axes that
/// are contiguous with each other in both views merged (a contiguous tensor becomes one
/// axis), so the inner loop is as long as possible. C order is unchanged.
fn merge(shape: &[usize], a: &[usize], b: &[usize]) -> (Dims, Dims, Dims) {
    let (mut sh, mut sa, mut sb): (Dims, Dims, Dims) = Default::default();
    for k in 0..shape.len() {
        let d = shape[k];
        if d == 1 {
            continue;
        }
        if let (Some(&pa), Some(&pb)) = (sa.last(), sb.last()) {
            if pa == a[k] * d && pb == b[k] * d {
                let last = sh.len() - 1;
                sh[last] *= d;
                sa[last] = a[k];
                sb[last] = b[k];
                continue;
            }
        }
        sh.push(d);
        sa.push(a[k]);
        sb.push(b[k]);
    }
    (sh, sa, sb)
}

/// Call `body(i, offset_a, offset_b)` for the elements `start..end` (C order) of `shape`
/// walked with strides `sa` and `sb`.
fn walk(
    shape: &[usize],
    sa: &[usize],
    sb: &[usize],
    start: usize,
    end: usize,
    mut body: impl FnMut(usize, usize, usize),
) {
    if start >= end {
        return;
    }
    let nd = shape.len();
    if nd == 0 {
        body(0, 0, 0);
        return;
    }
    // The multi-index of `start`, and the offsets of the start of its innermost row.
    let mut idx: Dims = SmallVec::from_elem(0, nd);
    let mut rem = start;
    for k in (0..nd).rev() {
        idx[k] = rem % shape[k];
        rem /= shape[k];
    }
    let last = nd - 1;
    let (mut ra, mut rb) = (0usize, 0usize);
    for k in 0..last {
        ra += idx[k] * sa[k];
        rb += idx[k] * sb[k];
    }
    let (ia, ib) = (sa[last], sb[last]);
    let mut j = idx[last];
    let mut i = start;
    loop {
        let stop = shape[last].min(j + (end - i));
        // Unit and zero strides get their own loops, which the compiler vectorises.
        let first = i - j;
        match (ia, ib) {
            (1, 1) => (j..stop).for_each(|jj| body(first + jj, ra + jj, rb + jj)),
            (1, 0) => (j..stop).for_each(|jj| body(first + jj, ra + jj, rb)),
            _ => (j..stop).for_each(|jj| body(first + jj, ra + jj * ia, rb + jj * ib)),
        }
        i += stop - j;
        if i >= end {
            return;
        }
        // Next row: carry into the outer axes (there is one, since elements remain).
        j = 0;
        let mut k = last;
        loop {
            k -= 1;
            idx[k] += 1;
            ra += sa[k];
            rb += sb[k];
            if idx[k] < shape[k] {
                break;
            }
            ra -= sa[k] * shape[k];
            rb -= sb[k] * shape[k];
            idx[k] = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn offsets(shape: &[usize], a: &[usize], start: usize, end: usize) -> Vec<(usize, usize)> {
        let (sh, sa, sb) = merge(shape, a, a);
        let mut v = Vec::new();
        walk(&sh, &sa, &sb, start, end, |i, oa, _| v.push((i, oa)));
        v
    }

    #[test]
    fn walks_any_range_of_a_transposed_view_in_c_order() {
        // A (2, 3) transpose of a contiguous (3, 2): element (r, c) sits at c * 2 + r.
        let all = offsets(&[2, 3], &[1, 2], 0, 6);
        assert_eq!(all, vec![(0, 0), (1, 2), (2, 4), (3, 1), (4, 3), (5, 5)]);
        for s in 0..6 {
            for e in s..=6 {
                assert_eq!(offsets(&[2, 3], &[1, 2], s, e), all[s..e].to_vec());
            }
        }
    }

    #[test]
    fn contiguous_axes_merge_into_one() {
        let (sh, sa, _) = merge(&[2, 1, 3, 4], &[12, 12, 4, 1], &[0, 0, 0, 0]);
        assert_eq!(sh.as_slice(), &[24]);
        assert_eq!(sa.as_slice(), &[1]);
        let (sh, _, _) = merge(&[2, 3], &[3, 1], &[0, 1]);
        assert_eq!(sh.as_slice(), &[2, 3]);
    }
}
