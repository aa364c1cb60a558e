//! A convolution keeps only its input and weight for backward (as PyTorch does), never the
//! im2col matrix: after the forward the only new bytes are the output's. (One test in this
//! binary: the byte counters are process-wide.)
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
    // The im2col matrix (9x the input) existed only during the forward.
    let cols_bytes = 4 * 8 * 9 * 32 * 32 * 4;
    assert!(remat_core::max_memory_allocated(Device::Cpu) - base >= out_bytes + cols_bytes);
    let loss = ops::sum(&y, None, false).unwrap();
    autograd::backward(&[(loss, None)], false).unwrap();
    assert_eq!(x.grad().unwrap().shape(), x.shape());
    assert_eq!(w.grad().unwrap().shape(), w.shape());
}
