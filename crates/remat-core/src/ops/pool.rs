//! Pooling over 1 to 3 spatial axes, PyTorch's semantics and index conventions.
//!
//! - `max_pool`: one kernel finds each window's arg-max (a flat index into its plane, as
//!   PyTorch's `return_indices` gives, NaN winning as in PyTorch; a CPU loop or the CUDA
//!   `pool_argmax_*` kernel); the values are a `gather`
//!   of those indices, so the graph keeps only the int64 indices (the output's size), and the
//!   gradient (a scatter-add) and its own gradient come from `gather`.
//! - `avg_pool`: `unfold` then a sum over each window and a division by PyTorch's divisor
//!   (`count_include_pad`, `ceil_mode`, `divisor_override`); nothing is saved for backward.
//! - `adaptive_avg_pool`: PyTorch's adaptive windows (`floor(i·in/out)` to
//!   `ceil((i+1)·in/out)`) as one averaging matrix per axis applied with `matmul`.

use super::softmax::c_order;
use super::window::{planes_of, unfold, Plane, Window};
use super::{div, from_vec, gather, matmul, reshape, scale, sum, transpose};
use crate::dtype::Element;
use crate::error::{Error, Result};
use crate::layout::{fmt_shape, Dims};
use crate::tensor::Tensor;
use rayon::prelude::*;

fn pool_name(kind: &str, rank: usize) -> &'static str {
    match (kind, rank) {
        ("max", 1) => "max_pool1d",
        ("max", 2) => "max_pool2d",
        ("max", _) => "max_pool3d",
        ("avg", 1) => "avg_pool1d",
        ("avg", 2) => "avg_pool2d",
        ("avg", _) => "avg_pool3d",
        (_, 1) => "adaptive_avg_pool1d",
        (_, 2) => "adaptive_avg_pool2d",
        _ => "adaptive_avg_pool3d",
    }
}

/// PyTorch's rule for pooling: the padding at most half the (dilated) window, so every
/// window holds at least one input element.
fn check_pool_padding(op: &str, win: &Window) -> Result<()> {
    for a in 0..win.rank() {
        let eff = (win.kernel[a] - 1) * win.dilation[a] + 1;
        if win.padding[a] > eff / 2 {
            return Err(Error::value(
                op,
                format!(
                    "padding should be at most half of the effective kernel size, got padding \
                     {}, kernel_size {} and dilation {}",
                    fmt_shape(&win.padding),
                    fmt_shape(&win.kernel),
                    fmt_shape(&win.dilation)
                ),
            ));
        }
    }
    Ok(())
}

/// The output shape: `x`'s leading (batch, channel) axes, then `spatial`.
fn pooled_shape(x: &[usize], rank: usize, spatial: &[usize]) -> Dims {
    let mut s: Dims = x[..x.len() - rank].iter().copied().collect();
    s.extend_from_slice(spatial);
    s
}

/// For each window of each plane, the flat in-plane index of its maximum.
fn argmax_windows<T: Element>(plane: &Plane, x: &[T], out: &mut [i64]) {
    let [o0, o1, o2] = plane.out;
    let [k0, k1, k2] = plane.kernel;
    let [_, n1, n2] = plane.input;
    let mut o = 0;
    for a in 0..o0 {
        for b in 0..o1 {
            for c in 0..o2 {
                let mut best: Option<(usize, T)> = None;
                for ka in 0..k0 {
                    let Some(ia) = plane.coord(0, a, ka) else {
                        continue;
                    };
                    for kb in 0..k1 {
                        let Some(ib) = plane.coord(1, b, kb) else {
                            continue;
                        };
                        for kc in 0..k2 {
                            let Some(ic) = plane.coord(2, c, kc) else {
                                continue;
                            };
                            let i = (ia * n1 + ib) * n2 + ic;
                            let v = x[i];
                            #[allow(clippy::eq_op)]
                            let nan = v != v;
                            if best.is_none_or(|(_, m)| v > m || nan) {
                                best = Some((i, v));
                            }
                        }
                    }
                }
                // A window wholly in the padding (possible with dilation) is marked -1.
                out[o] = best.map_or(-1, |(i, _)| i as i64);
                o += 1;
            }
        }
    }
}

/// Max pooling of `x (N, C, *spatial)` or `(C, *spatial)` over `win`: `(values, indices)`,
/// the indices flat positions in each `spatial` plane (PyTorch's `return_indices`).
pub fn max_pool(x: &Tensor, win: &Window) -> Result<(Tensor, Tensor)> {
    crate::autocast::composite(pool_name("max", win.rank()), [Some(x)], |[x]| match x {
        Some(x) => max_pool_now(x, win),
        None => unreachable!("the input stays present"),
    })
}

fn max_pool_now(x: &Tensor, win: &Window) -> Result<(Tensor, Tensor)> {
    let op = pool_name("max", win.rank());
    win.check(op)?;
    let (planes, spatial) = planes_of(op, x.shape(), win.rank(), "input")?;
    check_pool_padding(op, win)?;
    if !x.dtype().is_float() {
        return Err(Error::dtype(
            op,
            format!("expected a float tensor, got {}", x.dtype()),
        ));
    }
    let out = win.output_size(op, &spatial)?;
    let plane = Plane::new(win, &spatial, &out);
    let (p_in, l) = (plane.input_len(), plane.out_len());
    let shape = pooled_shape(x.shape(), win.rank(), &out);
    if x.device() != crate::Device::Cpu {
        // The arg-max kernel (0 for windows wholly in the padding), then the same gather;
        // the empty windows follow from the geometry alone (the same in every plane).
        let idx = crate::cuda::launch::pool_argmax(op, x, &plane.geometry(), planes)?;
        let mut values = gather(&reshape(x, &[planes, p_in])?, 1, &idx)?;
        if let Some(empty) = empty_windows(&plane) {
            let mask = crate::cuda::launch::transfer(op, &from_vec(empty, &[1, l]), x.device())?;
            values = super::masked_fill_scalar(&values, &mask, f64::NEG_INFINITY)?;
        }
        return Ok((reshape(&values, &shape)?, reshape(&idx, &shape)?));
    }
    let mut idx = crate::cpu::alloc::<i64>(planes * l);
    // The arg-max compares half values exactly as their float32 widening does.
    let xk = if x.dtype().is_half() {
        super::cast(x, crate::dtype::DType::F32)?
    } else {
        x.clone()
    };
    crate::dispatch!(xk.dtype(), T => {
        let xs = c_order::<T>(xk.data());
        crate::parallel::install(|| {
            idx.par_chunks_mut(l.max(1)).enumerate().for_each(|(p, dst)| {
                argmax_windows(&plane, &xs[p * p_in..(p + 1) * p_in], dst)
            })
        });
    });
    // Windows that hold no input element give -inf, as in PyTorch (gathering element 0,
    // then masked, so their gradient is zero).
    let empty: Vec<u8> = idx.iter().map(|&i| u8::from(i < 0)).collect();
    let any_empty = empty.contains(&1);
    idx.iter_mut().for_each(|i| *i = (*i).max(0));
    let idx = from_vec(idx, &[planes, l]);
    let mut values = gather(&reshape(x, &[planes, p_in])?, 1, &idx)?;
    if any_empty {
        let mask = from_vec(empty, &[planes, l]);
        values = super::masked_fill_scalar(&values, &mask, f64::NEG_INFINITY)?;
    }
    Ok((reshape(&values, &shape)?, reshape(&idx, &shape)?))
}

/// Which output windows of `plane` hold no input element (1) and which do (0), in C order,
/// or None when every window holds one: a window is empty when some axis has no kernel tap
/// inside the input.
fn empty_windows(plane: &Plane) -> Option<Vec<u8>> {
    let inside: Vec<Vec<bool>> = (0..3)
        .map(|a| {
            (0..plane.out[a])
                .map(|o| (0..plane.kernel[a]).any(|k| plane.coord(a, o, k).is_some()))
                .collect()
        })
        .collect();
    if inside.iter().all(|v| v.iter().all(|&b| b)) {
        return None;
    }
    let mut m = Vec::with_capacity(plane.out_len());
    for a in 0..plane.out[0] {
        for b in 0..plane.out[1] {
            for c in 0..plane.out[2] {
                m.push(u8::from(!(inside[0][a] && inside[1][b] && inside[2][c])));
            }
        }
    }
    Some(m)
}

/// PyTorch's divisor for each output position: the window's size clipped to the padded
/// input (`count_include_pad`) or to the input itself.
fn avg_divisors(win: &Window, spatial: &[usize], out: &[usize], include_pad: bool) -> Vec<f64> {
    let per_axis: Vec<Vec<f64>> = (0..win.rank())
        .map(|a| {
            let (k, s, p, n) = (win.kernel[a], win.stride[a], win.padding[a], spatial[a]);
            (0..out[a])
                .map(|o| {
                    let start = o * s; // in padded coordinates
                    let end = (start + k).min(n + 2 * p);
                    if include_pad {
                        (end - start) as f64
                    } else {
                        let (lo, hi) = (start.max(p), end.min(n + p));
                        hi.saturating_sub(lo) as f64
                    }
                })
                .collect()
        })
        .collect();
    let mut d = vec![1.0];
    for axis in &per_axis {
        d = d
            .iter()
            .flat_map(|&x| axis.iter().map(move |&c| x * c))
            .collect();
    }
    d
}

/// Average pooling of `x (N, C, *spatial)` or `(C, *spatial)` over `win` (dilation 1):
/// PyTorch's `count_include_pad` and `divisor_override`.
pub fn avg_pool(
    x: &Tensor,
    win: &Window,
    count_include_pad: bool,
    divisor_override: Option<f64>,
) -> Result<Tensor> {
    crate::autocast::composite(pool_name("avg", win.rank()), [Some(x)], |[x]| match x {
        Some(x) => avg_pool_now(x, win, count_include_pad, divisor_override),
        None => unreachable!("the input stays present"),
    })
}

fn avg_pool_now(
    x: &Tensor,
    win: &Window,
    count_include_pad: bool,
    divisor_override: Option<f64>,
) -> Result<Tensor> {
    let op = pool_name("avg", win.rank());
    win.check(op)?;
    let (planes, spatial) = planes_of(op, x.shape(), win.rank(), "input")?;
    check_pool_padding(op, win)?;
    if win.dilation.iter().any(|&d| d != 1) {
        return Err(Error::value(op, "average pooling takes no dilation"));
    }
    if divisor_override == Some(0.0) {
        return Err(Error::value(op, "divisor_override must be non-zero"));
    }
    let out = win.output_size(op, &spatial)?;
    let mut lifted: Dims = [planes, 1].into_iter().collect();
    lifted.extend_from_slice(&spatial);
    let cols = unfold(&reshape(x, &lifted)?, win)?; // (planes, K, L)
    let sums = sum(&cols, Some(&[1]), false)?; // (planes, L)
    let shape = pooled_shape(x.shape(), win.rank(), &out);
    let avg = match divisor_override {
        Some(d) => scale(&sums, 1.0 / d)?,
        None if count_include_pad && !win.ceil_mode => scale(&sums, 1.0 / win.volume() as f64)?,
        None => {
            let d = avg_divisors(win, &spatial, &out, count_include_pad);
            let n = d.len();
            let d = super::to_dtype(&Tensor::from_vec(d, &[n])?, x.dtype())?;
            let d = super::to_device(&d, x.device())?;
            div(&sums, &d)?
        }
    };
    reshape(&avg, &shape)
}

/// PyTorch's adaptive average pooling matrix `(out, n)` of one axis.
fn adaptive_matrix(n: usize, out: usize) -> Vec<f64> {
    let mut m = vec![0.0; out * n];
    for i in 0..out {
        let start = i * n / out;
        let end = ((i + 1) * n).div_ceil(out);
        let w = 1.0 / (end - start) as f64;
        m[i * n + start..i * n + end].fill(w);
    }
    m
}

/// Adaptive average pooling of `x (N, C, *spatial)` or `(C, *spatial)` to `output_size`
/// (one entry per spatial axis, 1 to 3).
pub fn adaptive_avg_pool(x: &Tensor, output_size: &[usize]) -> Result<Tensor> {
    crate::autocast::composite(
        pool_name("adaptive", output_size.len().clamp(1, 3)),
        [Some(x)],
        |[x]| match x {
            Some(x) => adaptive_avg_pool_now(x, output_size),
            None => unreachable!("the input stays present"),
        },
    )
}

fn adaptive_avg_pool_now(x: &Tensor, output_size: &[usize]) -> Result<Tensor> {
    let rank = output_size.len();
    let op = pool_name("adaptive", rank.clamp(1, 3));
    if !(1..=3).contains(&rank) {
        return Err(Error::value(op, "output_size must have 1 to 3 entries"));
    }
    let (_, spatial) = planes_of(op, x.shape(), rank, "input")?;
    if spatial.contains(&0) || output_size.contains(&0) {
        return Err(Error::shape(
            op,
            format!(
                "expected non-empty spatial axes and output_size, got input {} and output_size {}",
                fmt_shape(x.shape()),
                fmt_shape(output_size)
            ),
        ));
    }
    let nd = x.ndim() as isize;
    let mut y = x.clone();
    let mut changed = false;
    for a in 0..rank {
        let (n, o) = (spatial[a], output_size[a]);
        if n == o {
            continue;
        }
        changed = true;
        let m = Tensor::from_vec(adaptive_matrix(n, o), &[o, n])?;
        let m = super::to_device(&super::to_dtype(&m, x.dtype())?, x.device())?;
        // Move axis `a` last, contract it with mᵀ, move it back.
        let axis = nd - rank as isize + a as isize;
        let moved = transpose(&y, axis, -1)?;
        y = transpose(&matmul(&moved, &super::matrix_transpose(&m)?)?, axis, -1)?;
    }
    if changed && y.is_contiguous() {
        Ok(y)
    } else {
        // A fresh tensor, as PyTorch returns (never the input itself).
        super::clone(&y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The geometric empty-window mask (the CUDA path's) marks exactly the windows the CPU
    /// arg-max loop finds no input element in.
    #[test]
    fn empty_windows_match_the_cpu_loop() {
        // (input, kernel, stride, padding, dilation)
        type Geometry<'a> = (
            &'a [usize],
            &'a [usize],
            &'a [usize],
            &'a [usize],
            &'a [usize],
        );
        let cases: &[Geometry] = &[
            (&[2], &[2], &[1], &[2], &[4]),
            (&[2, 6], &[2, 2], &[1, 1], &[2, 1], &[4, 1]),
            (&[9], &[3], &[2], &[1], &[1]),
            (&[3, 5], &[2, 3], &[1, 2], &[1, 1], &[3, 2]),
        ];
        for &(input, kernel, stride, padding, dilation) in cases {
            let mut win = Window::new(kernel, stride, padding, dilation);
            win.ceil_mode = true;
            let out = win.output_size("t", input).unwrap();
            let plane = Plane::new(&win, input, &out);
            let x = vec![0.5f32; plane.input_len()];
            let mut idx = vec![0i64; plane.out_len()];
            argmax_windows(&plane, &x, &mut idx);
            let want: Vec<u8> = idx.iter().map(|&i| u8::from(i < 0)).collect();
            let got = empty_windows(&plane);
            assert_eq!(
                got.clone().unwrap_or_else(|| vec![0; want.len()]),
                want,
                "{input:?} {kernel:?} {padding:?} {dilation:?}"
            );
            assert_eq!(got.is_some(), want.contains(&1));
        }
    }
}
