//! Elementwise float32 kernels over half storage (`bfloat16`, `float16`), as PyTorch's CPU
//! kernels run them: each chunk of 4096 elements is widened into a float32 buffer on the
//! stack, the op's float32 kernel runs over it in wide vectors ([`map_slice`]), and the
//! results are rounded once into the half output. The values are those of the whole-tensor
//! path (`ops::half_compute`: widen, run the float32 kernel, round), since both widen exactly
//! and round to nearest even once, but no float32 copy of the tensor is ever allocated: a
//! half op reads 2 bytes and writes 2 bytes per element instead of 12. Binary ops of two
//! half operands of the same shape run the same way ([`zip_half`]); broadcasts widen.

use super::{contiguous_slice, gather, map_slice, zip_slice, PAR_MIN};
use crate::dtype::Scalar;
use crate::tensor_data::TensorData;
use half::slice::HalfFloatSliceExt;
use rayon::prelude::*;
use std::borrow::Cow;

/// Elements per chunk: two float32 buffers of 16 KiB, in L1.
const CHUNK: usize = 4096;

/// `x`'s elements in order: its storage when contiguous, a copy of a strided view.
fn elements<H: Scalar>(x: &TensorData) -> Cow<'_, [H]> {
    match contiguous_slice::<H>(x) {
        Some(s) => Cow::Borrowed(s),
        None => Cow::Owned(gather::<H>(x)),
    }
}

/// `f` over one chunk of half values into `out`.
#[inline(always)]
fn chunk<H, F>(src: &[H], out: &mut [H], f: F)
where
    [H]: HalfFloatSliceExt,
    F: Fn(f32) -> f32 + Copy,
{
    let mut wide = [0f32; CHUNK];
    let mut res = [0f32; CHUNK];
    let n = src.len();
    src.convert_to_f32_slice(&mut wide[..n]);
    map_slice(&wide[..n], &mut res[..n], f);
    out.convert_from_f32_slice(&res[..n]);
}

/// `f(x)` for every element of the half tensor `x` (strided views are copied out first), as
/// a new contiguous half vector.
pub fn map_half<H, F>(x: &TensorData, f: F) -> Vec<H>
where
    H: Scalar + Send + Sync,
    [H]: HalfFloatSliceExt,
    F: Fn(f32) -> f32 + Sync + Copy,
{
    let src = elements::<H>(x);
    let src: &[H] = &src;
    let mut out = super::alloc::<H>(src.len());
    if src.len() >= PAR_MIN {
        crate::parallel::install(|| {
            out.par_chunks_mut(CHUNK)
                .zip(src.par_chunks(CHUNK))
                .for_each(|(o, s)| chunk(s, o, f))
        });
    } else {
        for (o, s) in out.chunks_mut(CHUNK).zip(src.chunks(CHUNK)) {
            chunk(s, o, f);
        }
    }
    out
}

/// `f` over one chunk of two same-length half slices into `out`.
#[inline(always)]
fn chunk2<H, F>(a: &[H], b: &[H], out: &mut [H], f: F)
where
    [H]: HalfFloatSliceExt,
    F: Fn(f32, f32) -> f32 + Copy,
{
    let mut wa = [0f32; CHUNK];
    let mut wb = [0f32; CHUNK];
    let mut res = [0f32; CHUNK];
    let n = a.len();
    a.convert_to_f32_slice(&mut wa[..n]);
    b.convert_to_f32_slice(&mut wb[..n]);
    zip_slice(&wa[..n], &wb[..n], &mut res[..n], f);
    out.convert_from_f32_slice(&res[..n]);
}

/// `f(a, b)` elementwise for two half tensors of the same shape (strided ones copied out
/// first), as a new contiguous half vector.
pub fn zip_half<H, F>(a: &TensorData, b: &TensorData, f: F) -> Vec<H>
where
    H: Scalar + Send + Sync,
    [H]: HalfFloatSliceExt,
    F: Fn(f32, f32) -> f32 + Sync + Copy,
{
    let (x, y) = (elements::<H>(a), elements::<H>(b));
    let (x, y): (&[H], &[H]) = (&x, &y);
    let mut out = super::alloc::<H>(x.len());
    if x.len() >= PAR_MIN {
        crate::parallel::install(|| {
            out.par_chunks_mut(CHUNK)
                .zip(x.par_chunks(CHUNK).zip(y.par_chunks(CHUNK)))
                .for_each(|(o, (s, t))| chunk2(s, t, o, f))
        });
    } else {
        for ((o, s), t) in out
            .chunks_mut(CHUNK)
            .zip(x.chunks(CHUNK))
            .zip(y.chunks(CHUNK))
        {
            chunk2(s, t, o, f);
        }
    }
    out
}
