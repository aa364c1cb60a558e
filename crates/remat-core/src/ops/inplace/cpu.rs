//! The CPU kernel of every in-place update: one walk over the destination's elements in C
//! order, through its strides (a view of a larger tensor, a transpose, a NumPy array's
//! memory), with the operand read through its broadcast layout; large tensors are split into
//! chunks that run in parallel on the engine's pool. Nothing is allocated except a copy of
//! an operand that shares the destination's storage at other positions (otherwise an element
//! could read a value another element's write already replaced).
//!
//! Mixed dtypes compute in float64 and round once into the destination, as PyTorch computes
//! in the promoted dtype; equal dtypes compute in their own.

use super::update::{Src, Update};
use crate::cpu;
use crate::device::Device;
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::layout::{Dims, Layout};
use crate::tensor::TensorData;
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

/// Run `u` with operand `src` over every element of the CPU view `dst`.
pub(crate) fn update(op: &str, dst: &TensorData, src: Src<'_>, u: Update) -> Result<()> {
    if dst.storage.device() != Device::Cpu {
        return Err(Error::device(op, "the CPU kernel got a device tensor"));
    }
    match src {
        Src::Tensor(s) => {
            if s.device() != Device::Cpu {
                return Err(Error::device(op, "the CPU kernel got a device operand"));
            }
            crate::dispatch!(dst.storage.dtype(), T => crate::dispatch!(s.dtype(), S => {
                typed::<T, S>(op, dst, Some(s.data()), 0.0, u)
            }))
        }
        Src::Scalar(v) => {
            crate::dispatch!(dst.storage.dtype(), T => typed::<T, T>(op, dst, None, v, u))
        }
        Src::None => {
            crate::dispatch!(dst.storage.dtype(), T => typed::<T, T>(op, dst, None, 0.0, u))
        }
    }
}

/// The update with the destination's element type `T` and the operand's `S` (a tensor
/// operand, or the number `scalar` held as one broadcast element).
fn typed<T: Element, S: Element>(
    op: &str,
    dst: &TensorData,
    src: Option<&TensorData>,
    scalar: f64,
    u: Update,
) -> Result<()> {
    let shape = &dst.layout.shape;
    if dst.layout.numel() == 0 {
        return Ok(());
    }
    let held: Vec<S>;
    let (sbase, sl): (*const S, Layout) = match src {
        Some(s) => {
            let bl = s.layout.broadcast_to(op, shape)?;
            if Arc::ptr_eq(&s.storage, &dst.storage) && bl != dst.layout {
                let view = TensorData {
                    storage: s.storage.clone(),
                    layout: bl,
                };
                held = cpu::catch_oom(op, || Ok(cpu::gather::<S>(&view)))?;
                (held.as_ptr(), Layout::contiguous(shape))
            } else {
                // The same raw pointer the destination is written through: the operand is
                // read by address, never through a slice the writes would alias.
                (s.storage.as_ptr() as *const S, bl)
            }
        }
        None => {
            held = vec![S::from_f64(scalar)];
            let zeros: Dims = SmallVec::from_elem(0, shape.len());
            let l = Layout {
                shape: shape.clone(),
                strides: zeros,
                offset: 0,
            };
            (held.as_ptr(), l)
        }
    };
    let dbase = dst.storage.as_ptr() as *mut T;
    if T::DTYPE == S::DTYPE {
        formula::<T, S, T>(dbase, &dst.layout, sbase, &sl, u);
    } else {
        formula::<T, S, f64>(dbase, &dst.layout, sbase, &sl, u);
    }
    Ok(())
}

/// Pick the per-element formula of `u`, computed in `P`.
fn formula<T: Element, S: Element, P: Element>(
    d: *mut T,
    dl: &Layout,
    s: *const S,
    sl: &Layout,
    u: Update,
) {
    let zero = P::from_f64(0.0);
    match u {
        Update::Axpy(a) => {
            let a = P::from_f64(a);
            run::<T, S, P, _>(d, dl, s, sl, move |_, x, v| x + a * v)
        }
        Update::Mul => run::<T, S, P, _>(d, dl, s, sl, |_, x, v| x * v),
        Update::Div => run::<T, S, P, _>(d, dl, s, sl, |_, x, v| x / v),
        Update::Set => run::<T, S, P, _>(d, dl, s, sl, |_, _, v| v),
        Update::ClampMin => {
            run::<T, S, P, _>(
                d,
                dl,
                s,
                sl,
                |_, x, v| {
                    if x.is_nan() || x > v {
                        x
                    } else {
                        v
                    }
                },
            )
        }
        Update::ClampMax => {
            run::<T, S, P, _>(
                d,
                dl,
                s,
                sl,
                |_, x, v| {
                    if x.is_nan() || x < v {
                        x
                    } else {
                        v
                    }
                },
            )
        }
        Update::MaskedFill(value) => {
            let value = P::from_f64(value);
            run::<T, S, P, _>(
                d,
                dl,
                s,
                sl,
                move |_, x, m| if m != zero { value } else { x },
            )
        }
        Update::Normal { .. } | Update::Uniform { .. } => {
            run::<T, S, P, _>(d, dl, s, sl, move |i, _, _| P::from_f64(u.sample(i as u64)))
        }
    }
}

/// `d[i] = f(i, d[i], s[i])` over every element `i` (C order) of the views `dl` of `d` and
/// `sl` of `s` (same shape), in parallel chunks when large.
fn run<T: Element, S: Element, P: Element, F>(
    d: *mut T,
    dl: &Layout,
    s: *const S,
    sl: &Layout,
    f: F,
) where
    F: Fn(usize, P, P) -> P + Sync,
{
    let (shape, ds, ss) = merge(&dl.shape, &dl.strides, &sl.strides);
    let n = dl.numel();
    // SAFETY: both offsets lie inside their buffers (valid views with at least one element).
    let (d, s) = unsafe { (Shared(d.add(dl.offset)), Shared(s.add(sl.offset) as *mut S)) };
    let chunk = |start: usize, end: usize| {
        walk(&shape, &ds, &ss, start, end, |i, od, os| {
            // SAFETY: `od`/`os` are offsets of elements of the two views, inside their
            // buffers; the destination's elements are distinct, and an operand sharing its
            // storage either sits at the same positions (each element reads its own old
            // value before writing it) or was copied out by the caller.
            unsafe {
                let p = d.get().add(od);
                let x = P::from_f64((*p).to_f64());
                let v = P::from_f64((*s.get().add(os)).to_f64());
                *p = T::from_f64(f(i, x, v).to_f64());
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
        for jj in j..stop {
            body(i, ra + jj * ia, rb + jj * ib);
            i += 1;
        }
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
