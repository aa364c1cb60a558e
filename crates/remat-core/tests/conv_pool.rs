//! Convolution, pooling and padding in the Rust API: forward against direct loops, gradients
//! against finite differences (float64), the unfold/fold adjoint identity, and errors that
//! name the op and the shapes.
#![allow(clippy::unwrap_used)]

mod common;
use common::{check_grad, det, leaf};
use remat_core::autograd::{grad_with, GradOptions};
use remat_core::ops::{self, ConvPadding, PadMode, Window};
use remat_core::{Error, Tensor};

/// Direct 2-D convolution (groups, stride, padding, dilation) with four nested loops.
#[allow(clippy::too_many_arguments)]
fn direct_conv2d(
    x: &[f64],
    xs: [usize; 4],
    w: &[f64],
    ws: [usize; 4],
    s: usize,
    p: usize,
    d: usize,
    g: usize,
) -> (Vec<f64>, [usize; 4]) {
    let [n, c, h, wd] = xs;
    let [o, cg, kh, kw] = ws;
    let oh = (h + 2 * p - d * (kh - 1) - 1) / s + 1;
    let ow = (wd + 2 * p - d * (kw - 1) - 1) / s + 1;
    let og = o / g;
    let mut out = vec![0.0; n * o * oh * ow];
    for b in 0..n {
        for oc in 0..o {
            let grp = oc / og;
            for i in 0..oh {
                for j in 0..ow {
                    let mut acc = 0.0;
                    for ci in 0..cg {
                        let ch = grp * cg + ci;
                        for a in 0..kh {
                            for e in 0..kw {
                                let y = (i * s + a * d) as isize - p as isize;
                                let z = (j * s + e * d) as isize - p as isize;
                                if y < 0 || z < 0 || y >= h as isize || z >= wd as isize {
                                    continue;
                                }
                                let xv = x[((b * c + ch) * h + y as usize) * wd + z as usize];
                                acc += xv * w[((oc * cg + ci) * kh + a) * kw + e];
                            }
                        }
                    }
                    out[((b * o + oc) * oh + i) * ow + j] = acc;
                }
            }
        }
    }
    (out, [n, o, oh, ow])
}

fn close(a: &[f64], b: &[f64]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() < 1e-12, "{x} vs {y}");
    }
}

#[test]
fn conv2d_matches_direct_loops() {
    for &(s, p, d, g) in &[(1, 0, 1, 1), (2, 1, 1, 1), (1, 2, 2, 2), (2, 0, 1, 4)] {
        let x = det(&[2, 4, 7, 6], 1);
        let w = det(&[4, 4 / g, 3, 2], 2);
        let y = ops::conv(
            &x,
            &w,
            None,
            &[s, s],
            &ConvPadding::Explicit([p, p].into_iter().collect()),
            &[d, d],
            g,
        )
        .unwrap();
        let (want, shape) = direct_conv2d(
            &x.to_vec::<f64>(),
            [2, 4, 7, 6],
            &w.to_vec::<f64>(),
            [4, 4 / g, 3, 2],
            s,
            p,
            d,
            g,
        );
        assert_eq!(y.shape(), shape);
        close(&y.to_vec::<f64>(), &want);
    }
}

#[test]
fn conv_gradients_match_finite_differences() {
    let pad = ConvPadding::Explicit([1, 0].into_iter().collect());
    check_grad(
        &[det(&[2, 2, 5, 4], 3), det(&[2, 1, 2, 3], 4), det(&[2], 5)],
        |t| ops::conv(&t[0], &t[1], Some(&t[2]), &[2, 1], &pad, &[1, 1], 2).unwrap(),
        1e-6,
    );
    // conv1d with 'same' padding (an even kernel: the extra zero goes at the end).
    check_grad(
        &[det(&[1, 2, 6], 6), det(&[3, 2, 4], 7)],
        |t| ops::conv(&t[0], &t[1], None, &[1], &ConvPadding::Same, &[1], 1).unwrap(),
        1e-6,
    );
}

/// The gradients of `sum(conv(x, w, b) * gy)` with respect to x, w and b, by the fused CPU
/// backward (`create_graph` false) or by the composed differentiable ops (true).
fn conv_grads(t: &[Tensor], cfg: (usize, usize, usize, usize), create_graph: bool) -> Vec<Tensor> {
    let (s, p, d, g) = cfg;
    let pad = ConvPadding::Explicit([p, p].into_iter().collect());
    let y = ops::conv(&t[0], &t[1], Some(&t[2]), &[s, s], &pad, &[d, d], g).unwrap();
    let gy = det(y.shape(), 99);
    let opts = GradOptions {
        create_graph,
        ..Default::default()
    };
    grad_with(&[y], &t[..3], Some(&[Some(gy)]), opts)
        .unwrap()
        .into_iter()
        .map(Option::unwrap)
        .collect()
}

#[test]
fn fused_cpu_kernels_match_direct_loops_and_the_composed_backward_at_any_batch_and_threads() {
    // Batches that split evenly over the threads (a sample range per thread), and ones that
    // do not (samples in turn, the GEMMs threaded); with a bias, strides, dilation, groups.
    let before = remat_core::get_num_threads();
    for threads in [1, 2, 3] {
        remat_core::set_num_threads(threads).unwrap();
        for n in [1, 2, 3, 8, 13] {
            for &(s, p, d, g) in &[(1, 1, 1, 1), (2, 0, 1, 2), (1, 2, 2, 4)] {
                let t = [
                    leaf(&det(&[n, 4, 7, 6], 1)),
                    leaf(&det(&[8, 4 / g, 3, 2], 2)),
                    leaf(&det(&[8], 3)),
                ];
                let pad = ConvPadding::Explicit([p, p].into_iter().collect());
                let y = ops::conv(&t[0], &t[1], Some(&t[2]), &[s, s], &pad, &[d, d], g).unwrap();
                let (mut want, shape) = direct_conv2d(
                    &t[0].to_vec::<f64>(),
                    [n, 4, 7, 6],
                    &t[1].to_vec::<f64>(),
                    [8, 4 / g, 3, 2],
                    s,
                    p,
                    d,
                    g,
                );
                let plane = shape[2] * shape[3];
                let bias = t[2].to_vec::<f64>();
                want.iter_mut()
                    .enumerate()
                    .for_each(|(i, v)| *v += bias[i / plane % 8]);
                assert_eq!(y.shape(), shape);
                close(&y.to_vec::<f64>(), &want);
                let fused = conv_grads(&t, (s, p, d, g), false);
                let composed = conv_grads(&t, (s, p, d, g), true);
                for (a, b) in fused.iter().zip(&composed) {
                    assert_eq!(a.shape(), b.shape());
                    close(&a.to_vec::<f64>(), &b.to_vec::<f64>());
                }
            }
        }
    }
    remat_core::set_num_threads(before).unwrap();
}

/// The convolution of `t` (input, weight, bias) against direct loops, and its fused
/// gradients against the composed backward's.
fn check_against_direct(t: &[Tensor; 3], (s, p, d, g): (usize, usize, usize, usize)) {
    let (xs, ws) = (t[0].shape().to_vec(), t[1].shape().to_vec());
    let pad = ConvPadding::Explicit([p, p].into_iter().collect());
    let y = ops::conv(&t[0], &t[1], Some(&t[2]), &[s, s], &pad, &[d, d], g).unwrap();
    let (mut want, shape) = direct_conv2d(
        &t[0].to_vec::<f64>(),
        [xs[0], xs[1], xs[2], xs[3]],
        &t[1].to_vec::<f64>(),
        [ws[0], ws[1], ws[2], ws[3]],
        s,
        p,
        d,
        g,
    );
    let (plane, o) = (shape[2] * shape[3], ws[0]);
    let bias = t[2].to_vec::<f64>();
    want.iter_mut()
        .enumerate()
        .for_each(|(i, v)| *v += bias[i / plane % o]);
    close(&y.to_vec::<f64>(), &want);
    let fused = conv_grads(t, (s, p, d, g), false);
    let composed = conv_grads(t, (s, p, d, g), true);
    for (a, b) in fused.iter().zip(&composed) {
        close(&a.to_vec::<f64>(), &b.to_vec::<f64>());
    }
}

#[test]
fn tiles_of_output_lines_match_direct_loops_and_the_composed_backward() {
    // 8 channels into 64, a 3x3 kernel and 46-52 output columns in float64: one output
    // line's im2col matrix is ~29 KB and a tile may take a quarter of the ~1.5 MB output, so
    // a tile holds about a dozen lines and the plane takes several tiles, the last one
    // partial; with strides, padding, dilation and groups.
    let (c, o) = (8, 64);
    for &(s, p, d, g) in &[(1, 1, 1, 1), (2, 0, 1, 2), (1, 2, 2, 4)] {
        let t = [
            leaf(&det(&[1, c, 63, 50], 4)),
            leaf(&det(&[o, c / g, 3, 3], 5)),
            leaf(&det(&[o], 6)),
        ];
        let (lines, cols) = (
            (63 + 2 * p - d * 2 - 1) / s + 1,
            (50 + 2 * p - d * 2 - 1) / s + 1,
        );
        let per_line = c * 9 * cols * 8;
        let tile = (o * lines * cols * 8 / 4).clamp(128 << 10, 2 << 20);
        assert!(
            per_line * 2 <= tile && per_line * lines > tile,
            "the plane must take several tiles of several lines"
        );
        check_against_direct(&t, (s, p, d, g));
    }
}

#[test]
fn a_line_too_wide_for_one_tile_is_cut_into_column_blocks() {
    // 128 channels, 3x3, 258-260 output columns in float64: one line's im2col matrix is
    // ~2.4 MB, over any tile's budget (at most 2 MiB), so each line is cut into blocks of
    // columns.
    let (c, o) = (128, 4);
    for &(s, p, d) in &[(1, 1, 1), (1, 0, 2), (2, 1, 1)] {
        let t = [
            leaf(&det(&[1, c, 7, 262], 7)),
            leaf(&det(&[o, c, 3, 3], 8)),
            leaf(&det(&[o], 9)),
        ];
        check_against_direct(&t, (s, p, d, 1));
    }
}

#[test]
fn unfold_and_fold_are_adjoint() {
    // <unfold(x), c> == <x, fold(c)> for any x, c.
    let win = Window::new(&[2, 3], &[2, 1], &[1, 1], &[1, 2]);
    let x = det(&[2, 3, 5, 6], 8);
    let u = ops::unfold(&x, &win).unwrap();
    let c = det(u.shape(), 9);
    let f = ops::fold(&c, &[5, 6], &win).unwrap();
    let dot = |a: &Tensor, b: &Tensor| -> f64 {
        a.to_vec::<f64>()
            .iter()
            .zip(b.to_vec::<f64>())
            .map(|(p, q)| p * q)
            .sum()
    };
    assert!((dot(&u, &c) - dot(&x, &f)).abs() < 1e-10);
}

#[test]
fn max_pool_values_indices_and_gradient() {
    let x = Tensor::from_vec((0..16).map(|v| v as f64).collect::<Vec<_>>(), &[1, 1, 4, 4]).unwrap();
    let win = Window::new(&[2, 2], &[2, 2], &[0, 0], &[1, 1]);
    let (v, i) = ops::max_pool(&x, &win).unwrap();
    assert_eq!(v.to_vec::<f64>(), vec![5.0, 7.0, 13.0, 15.0]);
    assert_eq!(i.to_vec::<i64>(), vec![5, 7, 13, 15]);
    let mut ceil = Window::new(&[3], &[2], &[1], &[1]);
    ceil.ceil_mode = true;
    check_grad(
        &[det(&[2, 7], 10)],
        |t| ops::max_pool(&t[0], &ceil).unwrap().0,
        1e-6,
    );
}

#[test]
fn avg_pool_and_pad_gradients() {
    let mut win = Window::new(&[3, 2], &[2, 2], &[1, 1], &[1, 1]);
    win.ceil_mode = true;
    check_grad(
        &[det(&[1, 2, 5, 5], 11)],
        |t| ops::avg_pool(&t[0], &win, false, None).unwrap(),
        1e-6,
    );
    for mode in [
        PadMode::Constant,
        PadMode::Reflect,
        PadMode::Replicate,
        PadMode::Circular,
    ] {
        check_grad(
            &[det(&[2, 3, 4], 12)],
            |t| ops::pad(&t[0], &[1, 2, 2, 0], mode, 0.5).unwrap(),
            1e-6,
        );
    }
    check_grad(
        &[det(&[2, 5, 7], 13)],
        |t| ops::adaptive_avg_pool(&t[0], &[3, 4]).unwrap(),
        1e-6,
    );
}

#[test]
fn a_weight_of_another_rank_is_an_error_naming_the_convolution_called() {
    let x = det(&[1, 3, 8, 8], 16);
    for w in [det(&[4, 3, 3], 17), det(&[4, 3, 3, 3, 3], 18)] {
        let e =
            ops::conv_nd(2, &x, &w, None, &[1, 1], &ConvPadding::Valid, &[1, 1], 1).unwrap_err();
        assert!(matches!(e, Error::Shape { .. }));
        let msg = e.to_string();
        assert!(
            msg.starts_with("conv2d") && msg.contains("4-D weight") && msg.contains("(1, 3, 8, 8)"),
            "{msg}"
        );
    }
}

#[test]
fn bad_inputs_are_errors_naming_op_and_shapes() {
    let x = det(&[1, 3, 4, 4], 14);
    let e = ops::conv(
        &x,
        &det(&[2, 2, 3, 3], 15),
        None,
        &[1, 1],
        &ConvPadding::Valid,
        &[1, 1],
        1,
    )
    .unwrap_err();
    assert!(matches!(e, Error::Shape { .. }));
    let msg = e.to_string();
    assert!(
        msg.contains("conv2d") && msg.contains("(1, 3, 4, 4)"),
        "{msg}"
    );
    let e = ops::max_pool(&x, &Window::new(&[2, 2], &[1, 1], &[2, 2], &[1, 1])).unwrap_err();
    assert!(e.to_string().contains("max_pool2d"), "{e}");
    let e = ops::pad(&x, &[5, 5], PadMode::Reflect, 0.0).unwrap_err();
    assert!(e.to_string().contains("pad"), "{e}");
    let e = ops::unfold(&x, &Window::new(&[0, 2], &[1, 1], &[0, 0], &[1, 1])).unwrap_err();
    assert!(e.to_string().contains("kernel_size"), "{e}");
}
