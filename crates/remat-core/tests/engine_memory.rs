//! Backward frees gradient buffers as early as it can: a previous step's graph that is still
//! alive (and shares the parameters' accumulators) must not delay gradient accumulation.
#![allow(clippy::unwrap_used)]

mod common;
use common::{det, leaf};
use remat_core::{autograd, ops, Device, Tensor};

fn step(params: &[Tensor], x: &Tensor) -> Tensor {
    let mut h = x.clone();
    for w in params {
        h = ops::tanh(&ops::matmul(&h, w).unwrap()).unwrap();
    }
    let loss = ops::sum(&h, None, false).unwrap();
    autograd::backward(&[(loss.clone(), None)], false).unwrap();
    loss
}

#[test]
fn a_live_previous_graph_does_not_raise_the_backward_peak() {
    let params: Vec<Tensor> = (0..32).map(|i| leaf(&det(&[64, 64], i))).collect();
    let x = det(&[2, 64], 100);
    let peak_of = |keep_previous: bool| {
        for p in &params {
            p.set_grad(None).unwrap();
        }
        let previous = step(&params, &x);
        let previous = keep_previous.then_some(previous);
        // Pre-allocated gradients (as after zero_grad(set_to_none=False)): accumulation is in
        // place, so each gradient buffer can be freed as soon as it is added.
        for p in &params {
            p.set_grad(Some(ops::zeros(p.shape(), p.dtype(), Device::Cpu).unwrap()))
                .unwrap();
        }
        let base = remat_core::memory_allocated(Device::Cpu);
        remat_core::reset_peak_memory_stats(Device::Cpu);
        drop(step(&params, &x));
        drop(previous);
        remat_core::max_memory_allocated(Device::Cpu) - base
    };
    let fresh = peak_of(false);
    let with_previous = peak_of(true);
    assert_eq!(with_previous, fresh);
}
