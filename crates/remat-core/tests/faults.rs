//! Out of memory on every path that allocates tensor storage outside an op's forward (casts,
//! copies, `.grad` accumulation, host vectors) is `Error::OutOfMemory`, never an abort, and
//! the engine keeps working afterwards. The allocations asked for here are larger than any
//! address space (2^47 elements), so they fail on every machine, without touching memory:
//! the sources are broadcast views of one element.
#![allow(clippy::unwrap_used)]

use remat_core::{autograd, ops, DType, Device, Error, Tensor};

/// A broadcast view of one `dtype` element with 2^47 elements (no memory behind it).
fn huge(dtype: DType) -> Tensor {
    ops::expand(&Tensor::scalar(1.0, dtype), &[1 << 47]).unwrap()
}

fn assert_oom<T: std::fmt::Debug>(r: remat_core::Result<T>, what: &str) {
    match r {
        Err(Error::OutOfMemory { bytes, .. }) => assert!(bytes >= 1 << 49, "{what}: {bytes}"),
        other => panic!("{what}: expected OutOfMemory, got {other:?}"),
    }
}

/// A small forward and backward still give the right gradient.
fn engine_still_works() {
    let x = Tensor::from_vec(vec![1.0f32, 2.0, 3.0], &[3]).unwrap();
    x.set_requires_grad(true).unwrap();
    let loss = ops::sum(&ops::mul(&x, &x).unwrap(), None, false).unwrap();
    autograd::backward(&[(loss, None)], false).unwrap();
    assert_eq!(x.grad().unwrap().to_vec::<f32>(), vec![2.0, 4.0, 6.0]);
}

#[test]
fn casts_that_run_out_of_memory_are_errors() {
    assert_oom(huge(DType::F32).to_dtype(DType::F64), "to_dtype f32 -> f64");
    assert_oom(huge(DType::F64).to_dtype(DType::F32), "to_dtype f64 -> f32");
    assert_oom(ops::cast(&huge(DType::F32), DType::F64), "cast");
    engine_still_works();
}

#[test]
fn copies_that_run_out_of_memory_are_errors() {
    for dtype in [DType::F32, DType::F64] {
        assert_oom(ops::contiguous_copy(&huge(dtype), dtype), "contiguous_copy");
        assert_oom(ops::contiguous(&huge(dtype)), "contiguous");
        assert_oom(huge(dtype).try_to_vec::<f64>(), "try_to_vec");
    }
    // The infallible form gives an empty vector rather than aborting.
    assert!(huge(DType::F32).to_vec::<f32>().is_empty());
    engine_still_works();
}

#[test]
fn kernels_whose_output_does_not_fit_are_errors() {
    let one = Tensor::scalar(2.0, DType::F32);
    assert_oom(ops::add(&huge(DType::F32), &one), "add");
    assert_oom(ops::exp(&huge(DType::F32)), "exp");
    assert_oom(ops::zeros(&[1 << 47], DType::F64, Device::Cpu), "zeros");
    let col = ops::expand(&Tensor::scalar(1.0, DType::F32), &[1 << 24, 1]).unwrap();
    let row = ops::expand(&Tensor::scalar(1.0, DType::F32), &[1, 1 << 24]).unwrap();
    assert_oom(ops::matmul(&col, &row), "matmul");
    engine_still_works();
}
