//! Unary ops (and binary ops of two operands of one shape) on bfloat16 and float16 CPU
//! tensors run the float32 formula chunk by chunk over
//! the half storage (`cpu::half_map`): bit for bit the values of widening the whole tensor,
//! running the float32 kernel and rounding once, and no float32 copy is allocated (the peak
//! of the op is its half output).

#![allow(clippy::unwrap_used)]

use remat_core::ops::elementwise::{binary_forward, unary_forward, Binary, Unary};
use remat_core::{memory, ops, DType, Device, Tensor};
use std::sync::Mutex;

/// The byte counters are per process: the tests of this file run one at a time, so that one
/// test's allocations never land in another's peak.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn inputs(n: usize) -> Vec<f32> {
    // Both signs, zero, small and large magnitudes, and a strided tail past one chunk.
    (0..n)
        .map(|i| {
            let t = i as f32 / n as f32;
            (t * 13.0 - 6.5) * if i % 7 == 0 { 0.01 } else { 1.0 }
        })
        .collect()
}

#[test]
fn every_unary_row_matches_the_widened_path_bit_for_bit() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let x32 = Tensor::from_vec(inputs(5000), &[5000]).unwrap();
    for half in [DType::BF16, DType::F16] {
        let x = ops::cast(&x32, half).unwrap();
        let wide = ops::cast(&x, DType::F32).unwrap();
        for &f in Unary::ALL {
            let got = unary_forward(f, &x, 0.5).unwrap();
            let want = ops::cast(&unary_forward(f, &wide, 0.5).unwrap(), half).unwrap();
            assert_eq!(got.dtype(), half, "{f:?}");
            let (a, b) = (
                ops::cast(&got, DType::F32).unwrap().to_vec::<f32>(),
                ops::cast(&want, DType::F32).unwrap().to_vec::<f32>(),
            );
            for (i, (u, v)) in a.iter().zip(&b).enumerate() {
                assert!(
                    u.to_bits() == v.to_bits() || (u.is_nan() && v.is_nan()),
                    "{f:?} {half:?} at {i}: {u} vs {v}"
                );
            }
        }
    }
}

#[test]
fn a_strided_half_input_gives_the_same_values() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let x32 = Tensor::from_vec(inputs(64 * 70), &[64, 70]).unwrap();
    let x = ops::cast(&x32, DType::BF16).unwrap();
    let xt = x.transpose(0, 1).unwrap();
    let got = unary_forward(Unary::Tanh, &xt, 0.0).unwrap();
    let want = unary_forward(Unary::Tanh, &ops::contiguous(&xt).unwrap(), 0.0).unwrap();
    assert_eq!(
        ops::cast(&got, DType::F32).unwrap().to_vec::<f32>(),
        ops::cast(&want, DType::F32).unwrap().to_vec::<f32>()
    );
}

#[test]
fn a_half_unary_op_allocates_only_its_output() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let n = 1 << 16;
    let x = ops::cast(&Tensor::from_vec(inputs(n), &[n]).unwrap(), DType::BF16).unwrap();
    let before = memory::memory_allocated(Device::Cpu);
    memory::reset_peak_memory_stats(Device::Cpu);
    let y = unary_forward(Unary::Exp, &x, 0.0).unwrap();
    let peak = memory::max_memory_allocated(Device::Cpu) - before;
    // The output's 2 bytes per element; the widened path also held 4 + 4 per element.
    assert_eq!(peak, 2 * n);
    drop(y);
}

#[test]
fn every_binary_row_on_same_shape_operands_matches_the_widened_path_bit_for_bit() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let a32 = Tensor::from_vec(inputs(5000), &[50, 100]).unwrap();
    let b32 = Tensor::from_vec(
        inputs(5000)
            .into_iter()
            .rev()
            .map(|v| v * 0.7 + 0.3)
            .collect(),
        &[50, 100],
    )
    .unwrap();
    for half in [DType::BF16, DType::F16] {
        let (a, b) = (
            ops::cast(&a32, half).unwrap(),
            ops::cast(&b32, half).unwrap(),
        );
        let (wa, wb) = (
            ops::cast(&a, DType::F32).unwrap(),
            ops::cast(&b, DType::F32).unwrap(),
        );
        for &f in Binary::ALL {
            let got = binary_forward(f, &a, &b, 0.5).unwrap();
            let want = ops::cast(&binary_forward(f, &wa, &wb, 0.5).unwrap(), half).unwrap();
            assert_eq!(got.dtype(), half, "{f:?}");
            let (u, v) = (
                ops::cast(&got, DType::F32).unwrap().to_vec::<f32>(),
                ops::cast(&want, DType::F32).unwrap().to_vec::<f32>(),
            );
            for (i, (x, y)) in u.iter().zip(&v).enumerate() {
                assert!(
                    x.to_bits() == y.to_bits() || (x.is_nan() && y.is_nan()),
                    "{f:?} {half:?} at {i}: {x} vs {y}"
                );
            }
        }
    }
    // A broadcast still gives the widened values.
    let a = ops::cast(&a32, DType::BF16).unwrap();
    let row = ops::cast(&Tensor::from_vec(inputs(100), &[100]).unwrap(), DType::BF16).unwrap();
    let got = binary_forward(Binary::Add, &a, &row, 0.0).unwrap();
    assert_eq!(got.shape(), &[50, 100]);
}
