//! A convolution keeps only its input and weight for backward (as PyTorch does), never the
//! im2col matrix: after the forward the only new bytes are the output's; and on the CPU its
//! workspace is bounded whatever the image (one tile of output lines' matrix per thread, at
//! most 2 MiB, or a quarter of the output on small images, unless one line needs more). (One test in this binary: the byte counters are
//! process-wide.)
#![allow(clippy::unwrap_used)]

use remat_core::ops::{self, ConvPadding};
use remat_core::{autograd, DType, Device, Tensor};

#[test]
fn conv_forward_keeps_only_its_output() {
    let x = ops::randn(&[4, 8, 32, 32], DType::F32, Device::Cpu).unwrap();
    let w = ops::randn(&[16, 8, 3, 3], DType::F32, Device::Cpu).unwrap();
    x.set_requires_grad(true).unwrap();
    w.set_requires_grad(true).unwrap();
    let base = remat_core::memory_allocated(Device::Cpu);
    remat_core::reset_peak_memory_stats(Device::Cpu);
    let pad = ConvPadding::Explicit([1, 1].into_iter().collect());
    let y: Tensor = ops::conv(&x, &w, None, &[1, 1], &pad, &[1, 1], 1).unwrap();
    let out_bytes = 4 * 16 * 32 * 32 * 4;
    assert_eq!(remat_core::memory_allocated(Device::Cpu) - base, out_bytes);
    // The im2col workspace existed only during the forward: at most one sample's matrix (9x
    // the sample) per thread at work, never the batch's. (The output's vector is charged
    // once it becomes a tensor, after the workspace is gone: the peak is the larger.)
    let sample_cols = 8 * 9 * 32 * 32 * 4;
    let workers = remat_core::get_num_threads().min(4);
    let peak = remat_core::max_memory_allocated(Device::Cpu) - base;
    assert!(
        peak >= out_bytes && peak <= out_bytes + workers * sample_cols,
        "forward peak {peak}: output {out_bytes}, {workers} x {sample_cols} of workspace at most"
    );
    let loss = ops::sum(&y, None, false).unwrap();
    autograd::backward(&[(loss, None)], false).unwrap();
    assert_eq!(x.grad().unwrap().shape(), x.shape());
    assert_eq!(w.grad().unwrap().shape(), w.shape());

    // A batch whose whole im2col matrix (9.4 MB) is 4.5x the chunk: neither the forward nor
    // the backward (which rebuilds the matrix for the weight gradient) ever holds it.
    let x = ops::randn(&[32, 8, 32, 32], DType::F32, Device::Cpu).unwrap();
    let w = ops::randn(&[4, 8, 3, 3], DType::F32, Device::Cpu).unwrap();
    x.set_requires_grad(true).unwrap();
    w.set_requires_grad(true).unwrap();
    let base = remat_core::memory_allocated(Device::Cpu);
    remat_core::reset_peak_memory_stats(Device::Cpu);
    let y: Tensor = ops::conv(&x, &w, None, &[1, 1], &pad, &[1, 1], 1).unwrap();
    let loss = ops::sum(&y, None, false).unwrap();
    autograd::backward(&[(loss, None)], false).unwrap();
    let whole_cols = 32 * 8 * 9 * 32 * 32 * 4;
    assert!(whole_cols > 4 * ops::CPU_CHUNK_BYTES);
    let peak = remat_core::max_memory_allocated(Device::Cpu) - base;
    // The output and its gradient (0.5 MiB each), the input gradient (1 MiB) and per-thread
    // workspaces of one or two samples' matrices (0.3 MB each): a few MB, where the whole
    // batch's matrix alone is 9.4 MB.
    assert!(
        peak < whole_cols,
        "peak {peak} >= the whole im2col matrix {whole_cols}"
    );

    // One large image, Conv2d(128, 128, 3, padding=1) on (1, 128, 256, 256) (32 MiB): a
    // whole-sample im2col matrix would be 288 MiB (596 MiB peaked in forward + backward
    // before the tiles). The step's peak above its start stays within twice the input,
    // output and gradients.
    let (c, hw) = (128, 256);
    let x = ops::randn(&[1, c, hw, hw], DType::F32, Device::Cpu).unwrap();
    let w = ops::randn(&[c, c, 3, 3], DType::F32, Device::Cpu).unwrap();
    x.set_requires_grad(true).unwrap();
    w.set_requires_grad(true).unwrap();
    let base = remat_core::memory_allocated(Device::Cpu);
    remat_core::reset_peak_memory_stats(Device::Cpu);
    let y: Tensor = ops::conv(&x, &w, None, &[1, 1], &pad, &[1, 1], 1).unwrap();
    let loss = ops::sum(&y, None, false).unwrap();
    drop(y);
    autograd::backward(&[(loss, None)], false).unwrap();
    let peak = remat_core::max_memory_allocated(Device::Cpu) - base;
    let image = c * hw * hw * 4;
    let weight = c * c * 9 * 4;
    // Input + output + the output's, input's and weight's gradients.
    let step = image + image + image + image + weight;
    assert!(
        peak <= 2 * step,
        "peak {peak} above twice input + output + gradients ({step})"
    );
    // The workspace itself: at most a few tiles of 2 MiB (forward, backward's two matrices,
    // per-thread weight-gradient sums), far below one sample's 288 MiB matrix.
    let cols = c * 9 * hw * hw * 4;
    assert!(peak < step + cols / 8, "peak {peak}: workspace too large");
}
