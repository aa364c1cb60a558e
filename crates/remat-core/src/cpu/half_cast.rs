//! Contiguous conversions between float32 and the half dtypes, the hot path of every half
//! op (each widens its inputs and rounds its result): the `half` crate's slice conversions
//! (F16C for float16; bfloat16's shift-and-round loop vectorises), in parallel chunks for
//! large tensors, instead of the generic element-by-element cast through float64. The values
//! are the same: float32 is exact in float64, and both paths round to nearest even once.

use crate::dtype::{DType, Scalar};
use half::slice::HalfFloatSliceExt;
use half::{bf16, f16};
use rayon::prelude::*;

/// Elements per parallel chunk (a few hundred KiB each way).
const CHUNK: usize = 1 << 16;

/// `src` converted to `D` when the pair is float32 to or from a half dtype; None otherwise.
pub fn convert<S: Scalar, D: Scalar>(src: &[S]) -> Option<Vec<D>> {
    let n = src.len();
    match (S::DTYPE, D::DTYPE) {
        (DType::F32, DType::BF16) => {
            let out: Vec<bf16> = run(reinterpret::<S, f32>(src), n, |s, d: &mut [bf16]| {
                d.convert_from_f32_slice(s)
            });
            Some(retype(out))
        }
        (DType::F32, DType::F16) => {
            let out: Vec<f16> = run(reinterpret::<S, f32>(src), n, |s, d: &mut [f16]| {
                d.convert_from_f32_slice(s)
            });
            Some(retype(out))
        }
        (DType::BF16, DType::F32) => {
            let out: Vec<f32> = run(reinterpret::<S, bf16>(src), n, |s, d: &mut [f32]| {
                s.convert_to_f32_slice(d)
            });
            Some(retype(out))
        }
        (DType::F16, DType::F32) => {
            let out: Vec<f32> = run(reinterpret::<S, f16>(src), n, |s, d: &mut [f32]| {
                s.convert_to_f32_slice(d)
            });
            Some(retype(out))
        }
        _ => None,
    }
}

/// Convert `src` chunk by chunk into a new vector of `n` elements.
fn run<A: Sync, B: Scalar + Send>(
    src: &[A],
    n: usize,
    f: impl Fn(&[A], &mut [B]) + Sync,
) -> Vec<B> {
    let mut out = super::alloc::<B>(n);
    if n <= CHUNK {
        f(src, &mut out);
    } else {
        out.par_chunks_mut(CHUNK)
            .zip(src.par_chunks(CHUNK))
            .for_each(|(d, s)| f(s, d));
    }
    out
}

/// `src` as a slice of `T`, which it is: callers have checked `S::DTYPE` names `T`, and each
/// dtype has exactly one `Scalar` type.
fn reinterpret<S: Scalar, T: Scalar>(src: &[S]) -> &[T] {
    assert_eq!(S::DTYPE, T::DTYPE);
    // SAFETY: S and T are the same type (one Scalar type per dtype), so layout and validity
    // are the same.
    unsafe { std::slice::from_raw_parts(src.as_ptr().cast::<T>(), src.len()) }
}

/// `v` as a vector of `D`, which it is (see [`reinterpret`]).
fn retype<B: Scalar, D: Scalar>(v: Vec<B>) -> Vec<D> {
    assert_eq!(B::DTYPE, D::DTYPE);
    let mut v = std::mem::ManuallyDrop::new(v);
    // SAFETY: B and D are the same type, so the allocation's layout is the one D expects.
    unsafe { Vec::from_raw_parts(v.as_mut_ptr().cast::<D>(), v.len(), v.capacity()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_generic_cast_bit_for_bit() {
        let mut vals: Vec<f32> = (0..200_000u32)
            .map(|i| f32::from_bits(i.wrapping_mul(2_654_435_761)))
            .collect();
        vals.extend([
            0.0,
            -0.0,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            1.0,
            65504.0,
            65520.0,
        ]);
        let b: Vec<bf16> = convert::<f32, bf16>(&vals).unwrap();
        let h: Vec<f16> = convert::<f32, f16>(&vals).unwrap();
        for ((&x, &gb), &gh) in vals.iter().zip(&b).zip(&h) {
            let (wb, wh) = (
                <bf16 as Scalar>::from_f64(x as f64),
                <f16 as Scalar>::from_f64(x as f64),
            );
            assert!(
                gb.to_bits() == wb.to_bits() || (gb.is_nan() && wb.is_nan()),
                "{x}: {:#x} vs {:#x}",
                gb.to_bits(),
                wb.to_bits()
            );
            assert!(
                gh.to_bits() == wh.to_bits() || (gh.is_nan() && wh.is_nan()),
                "{x}"
            );
        }
        let back: Vec<f32> = convert::<bf16, f32>(&b).unwrap();
        for (&g, &w) in back.iter().zip(&b) {
            assert!(g.to_bits() == w.to_f32().to_bits() || g.is_nan());
        }
        assert!(convert::<f64, bf16>(&[1.0f64]).is_none());
    }
}
