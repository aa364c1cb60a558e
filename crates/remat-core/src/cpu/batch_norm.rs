//! Batch normalisation's training-mode kernels on a contiguous `(N, C, S)` input: per-channel
//! statistics in two passes (mean, then the centred sum of squares, each accumulated in
//! float64), the normalisation `y = (x - mean) · invstd · w + b` in one pass, and the
//! first-order backward in two (the per-channel sums of `dy` and `dy · x̂`, then `dx`).
//!
//! Channels are independent: the statistics and the sums run one channel per task, each in a
//! fixed order, so results do not depend on the thread count.

use crate::dtype::{Element, Scalar};
use rayon::prelude::*;

/// `v` as float64 (the engine's conversion, not `num_traits`' fallible one).
#[inline(always)]
fn wide<T: Element>(v: T) -> f64 {
    <T as Scalar>::to_f64(v)
}

/// A float64 value in `T`.
#[inline(always)]
fn narrow<T: Element>(v: f64) -> T {
    <T as Scalar>::from_f64(v)
}

/// The shape of the problem: `n` samples, `c` channels, `s` positions per channel and sample.
#[derive(Clone, Copy, Debug)]
pub struct BnShape {
    /// Samples.
    pub n: usize,
    /// Channels.
    pub c: usize,
    /// Positions per sample and channel (the product of the spatial axes).
    pub s: usize,
}

impl BnShape {
    /// The `n` contiguous runs of channel `ch` in `x`.
    fn runs<'a, T>(&self, x: &'a [T], ch: usize) -> impl Iterator<Item = &'a [T]> {
        let (c, s) = (self.c, self.s);
        (0..self.n).map(move |i| &x[(i * c + ch) * s..(i * c + ch + 1) * s])
    }
    /// Elements per channel.
    fn count(&self) -> usize {
        self.n * self.s
    }
}

/// Whether the problem is large enough to spread over the thread pool.
fn parallel(sh: &BnShape) -> bool {
    sh.n * sh.c * sh.s >= super::PAR_MIN && sh.c > 1
}

/// Run `f(channel)` for every channel, collecting the results in channel order.
fn per_channel<R: Send>(sh: &BnShape, f: impl Fn(usize) -> R + Sync + Send) -> Vec<R> {
    if parallel(sh) {
        crate::parallel::install(|| (0..sh.c).into_par_iter().map(&f).collect())
    } else {
        (0..sh.c).map(f).collect()
    }
}

/// Per channel, the batch mean and the biased variance of `x`, in float64.
pub fn stats<T: Element>(sh: &BnShape, x: &[T]) -> (Vec<f64>, Vec<f64>) {
    let m = sh.count() as f64;
    per_channel(sh, |ch| {
        let sum: f64 = sh
            .runs(x, ch)
            .map(|r| r.iter().map(|&v| wide(v)).sum::<f64>())
            .sum();
        let mean = sum / m;
        let sq: f64 = sh
            .runs(x, ch)
            .map(|r| {
                r.iter()
                    .map(|&v| {
                        let d = wide(v) - mean;
                        d * d
                    })
                    .sum::<f64>()
            })
            .sum();
        (mean, sq / m)
    })
    .into_iter()
    .unzip()
}

/// Per channel, the factor and the offset of `y = x · a + b'`: `a = invstd · w`,
/// `b' = bias - mean · a` (one multiply-add per element in the output pass).
pub fn affine<T: Element>(
    mean: &[f64],
    invstd: &[f64],
    w: Option<&[T]>,
    b: Option<&[T]>,
) -> (Vec<T>, Vec<T>) {
    (0..mean.len())
        .map(|ch| {
            let a = invstd[ch] * w.map_or(1.0, |w| wide(w[ch]));
            let off = b.map_or(0.0, |b| wide(b[ch])) - mean[ch] * a;
            (narrow::<T>(a), narrow::<T>(off))
        })
        .unzip()
}

/// `out[i, ch, :] = x[i, ch, :] · a[ch] + b[ch]`.
pub fn normalize<T: Element>(sh: &BnShape, x: &[T], a: &[T], b: &[T], out: &mut [T]) {
    let s = sh.s.max(1);
    let row = |(k, (o, xr)): (usize, (&mut [T], &[T]))| {
        let ch = k % sh.c;
        let (a, b) = (a[ch], b[ch]);
        for (o, &v) in o.iter_mut().zip(xr) {
            *o = v * a + b;
        }
    };
    if parallel(sh) {
        crate::parallel::install(|| {
            out.par_chunks_mut(s)
                .zip(x.par_chunks(s))
                .enumerate()
                .for_each(row)
        });
    } else {
        out.chunks_mut(s).zip(x.chunks(s)).enumerate().for_each(row);
    }
}

/// The first-order gradients of the training-mode normalisation from the saved input `x`,
/// its statistics and the output gradient `dy`: `(dx, dw, db)`, each only when asked for.
/// `dx = w · invstd · (dy - Σdy / m - x̂ · Σ(dy · x̂) / m)`, `dw = Σ(dy · x̂)`, `db = Σdy`.
#[allow(clippy::type_complexity, clippy::too_many_arguments)]
pub fn backward<T: Element>(
    sh: &BnShape,
    x: &[T],
    dy: &[T],
    mean: &[f64],
    invstd: &[f64],
    w: Option<&[T]>,
    need: [bool; 3],
) -> (Option<Vec<T>>, Option<Vec<T>>, Option<Vec<T>>) {
    // Σdy and Σ(dy · x̂) per channel, in float64.
    let sums: Vec<(f64, f64)> = per_channel(sh, |ch| {
        let mu = mean[ch];
        let (mut sdy, mut sdyx) = (0.0f64, 0.0f64);
        for (xr, gr) in sh.runs(x, ch).zip(sh.runs(dy, ch)) {
            let (mut a, mut b) = (0.0f64, 0.0f64);
            for (&v, &g) in xr.iter().zip(gr) {
                let g = wide(g);
                a += g;
                b += g * (wide(v) - mu);
            }
            sdy += a;
            sdyx += b;
        }
        (sdy, sdyx * invstd[ch])
    });
    let db = need[2].then(|| sums.iter().map(|&(s, _)| narrow::<T>(s)).collect());
    let dw = need[1].then(|| sums.iter().map(|&(_, s)| narrow::<T>(s)).collect());
    let dx = need[0].then(|| {
        let m = sh.count() as f64;
        // dx = k · dy - k/m · Σdy - k · x̂ · Σ(dy x̂)/m with k = w · invstd, written as
        // dx = p · dy + q · x + r per channel.
        let coef: Vec<(T, T, T)> = (0..sh.c)
            .map(|ch| {
                let k = invstd[ch] * w.map_or(1.0, |w| wide(w[ch]));
                let (sdy, sdyx) = sums[ch];
                let q = -k * invstd[ch] * sdyx / m;
                let r = -k * sdy / m - q * mean[ch];
                (narrow::<T>(k), narrow::<T>(q), narrow::<T>(r))
            })
            .collect();
        let mut out = super::alloc::<T>(x.len());
        let s = sh.s.max(1);
        let row = |(k, ((o, xr), gr)): (usize, ((&mut [T], &[T]), &[T]))| {
            let (p, q, r) = coef[k % sh.c];
            for ((o, &v), &g) in o.iter_mut().zip(xr).zip(gr) {
                *o = p * g + q * v + r;
            }
        };
        if parallel(sh) {
            crate::parallel::install(|| {
                out.par_chunks_mut(s)
                    .zip(x.par_chunks(s))
                    .zip(dy.par_chunks(s))
                    .enumerate()
                    .for_each(row)
            });
        } else {
            out.chunks_mut(s)
                .zip(x.chunks(s))
                .zip(dy.chunks(s))
                .enumerate()
                .for_each(row);
        }
        out
    });
    (dx, dw, db)
}
