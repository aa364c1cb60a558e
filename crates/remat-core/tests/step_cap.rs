//! A step's memory cap (`dtr::cap_until_backward`): set at a forward's start relative to what
//! is live, it evicts and rebuilds like `set_memory_limit`, goes over instead of failing when
//! nothing more can go, and is lifted when the backward pass ends. One test per binary (the
//! byte counters are per process).
#![allow(clippy::unwrap_used)]

mod common;
use common::{det, leaf};
use remat_core::{autograd, dtr, ops, Device, Tensor};

/// Forward and backward of a tanh MLP (float64, width 64, batch 256); the gradients, and the
/// live bytes at the end of the forward in `after_forward`. With `cap`, the step runs under
/// `cap_until_backward(cap)`, which must be in force until the backward ends.
fn step(
    params: &[Tensor],
    x: &Tensor,
    cap: Option<usize>,
    after_forward: &mut usize,
) -> Vec<Vec<f64>> {
    let cpu = Device::Cpu;
    if let Some(bytes) = cap {
        assert!(dtr::cap_until_backward(cpu, bytes));
    }
    let mut h = x.clone();
    for w in params {
        h = ops::tanh(&ops::matmul(&h, w).unwrap()).unwrap();
    }
    let loss = ops::sum(&ops::mul(&h, &h).unwrap(), None, false).unwrap();
    drop(h);
    *after_forward = remat_core::memory_allocated(cpu);
    assert_eq!(dtr::step_cap_active(cpu), cap.is_some());
    autograd::backward(&[(loss, None)], false).unwrap();
    assert!(
        !dtr::step_cap_active(cpu),
        "the backward pass lifts the cap"
    );
    assert_eq!(remat_core::get_memory_limit(cpu), None);
    let grads = params.iter().map(|p| p.grad().unwrap().to_vec()).collect();
    for p in params {
        remat_core::optim::zero_(&p.grad().unwrap()).unwrap();
    }
    grads
}

#[test]
fn a_step_cap_holds_from_forward_to_the_end_of_backward() {
    let cpu = Device::Cpu;
    let params: Vec<Tensor> = (0..32).map(|i| leaf(&det(&[64, 64], i as u64))).collect();
    let x = det(&[256, 64], 1000);
    let mut forward_end = 0;
    // A first step allocates the gradients; the steps measured below start with them.
    step(&params, &x, None, &mut forward_end);
    let base = remat_core::memory_allocated(cpu);
    remat_core::reset_peak_memory_stats(cpu);
    let plain = step(&params, &x, None, &mut forward_end);
    let plain_peak = remat_core::max_memory_allocated(cpu) - base;
    let activations = forward_end - base;

    // Half the plain peak: evictions and rebuilds, the peak within the cap, the same bits.
    let cap = plain_peak / 2;
    dtr::reset_eviction_stats(cpu);
    remat_core::reset_peak_memory_stats(cpu);
    let got = step(&params, &x, Some(cap), &mut forward_end);
    let peak = remat_core::max_memory_allocated(cpu) - base;
    let stats = dtr::eviction_stats(cpu);
    assert!(peak <= cap, "peak {peak} over the cap {cap}");
    assert!(
        forward_end - base < activations,
        "{forward_end} {activations}"
    );
    assert!(
        stats.evictions > 0 && stats.rematerializations > 0,
        "{stats:?}"
    );
    assert_eq!(got, plain, "gradients differ under the cap");
    assert_eq!(dtr::live_cells(), 0, "every cell is gone with its graph");

    // After the backward nothing is capped: a forward as large as the plain one evicts nothing.
    dtr::reset_eviction_stats(cpu);
    let mut h = x.clone();
    for w in &params {
        h = ops::tanh(&ops::matmul(&h, w).unwrap()).unwrap();
    }
    drop(h);
    assert_eq!(dtr::eviction_stats(cpu).evictions, 0);

    // Soft: a cap below what cannot be evicted goes over instead of failing the step.
    dtr::reset_eviction_stats(cpu);
    let tight = step(&params, &x, Some(64 * 64 * 8), &mut forward_end);
    assert_eq!(tight, plain);

    // A second forward before any backward replaces the first's cap (one per device).
    assert!(dtr::cap_until_backward(cpu, cap));
    assert!(dtr::cap_until_backward(cpu, cap));
    let got = step(&params, &x, Some(cap), &mut forward_end);
    assert_eq!(got, plain);

    // A limit the user set wins: no step cap over it, and setting one cancels a step cap.
    dtr::set_memory_limit(cpu, Some(usize::MAX / 2));
    assert!(!dtr::cap_until_backward(cpu, cap));
    dtr::set_memory_limit(cpu, None);
    assert!(dtr::cap_until_backward(cpu, cap));
    dtr::set_memory_limit(cpu, Some(usize::MAX / 2));
    assert!(!dtr::step_cap_active(cpu));
    let loss = ops::sum(&ops::mul(&params[0], &params[0]).unwrap(), None, false).unwrap();
    autograd::backward(&[(loss, None)], false).unwrap();
    assert_eq!(
        remat_core::get_memory_limit(cpu),
        Some(usize::MAX / 2),
        "the user's limit stays"
    );
    dtr::set_memory_limit(cpu, None);
}
