//! The rebuild bound of dynamic rematerialisation (`dtr::set_rebuild_bound`): a step cap too
//! tight for a recurrence's graph stops evicting once the step's rebuilds cost more than the
//! bound times its forward, goes over the cap instead (the overshoot is reported), and keeps
//! the plain step's gradients. One test per binary (the counters are per process).
#![allow(clippy::unwrap_used)]

mod common;
use common::{det, leaf};
use remat_core::{autograd, dtr, ops, Device, Tensor};

/// A GRU-like recurrence over 24 steps with shared weights (float64, hidden 32, batch 16):
/// the gradients of its squared output's sum.
fn step(wx: &Tensor, wh: &Tensor, xs: &[Tensor], cap: Option<usize>) -> Vec<Vec<f64>> {
    if let Some(bytes) = cap {
        assert!(dtr::cap_until_backward(Device::Cpu, bytes));
    }
    let mut h = ops::zeros(&[16, 32], remat_core::DType::F64, Device::Cpu).unwrap();
    for x in xs {
        let g = ops::add(&ops::matmul(x, wx).unwrap(), &ops::matmul(&h, wh).unwrap()).unwrap();
        let z = ops::sigmoid(&ops::narrow(&g, 1, 0, 32).unwrap()).unwrap();
        let n = ops::tanh(&ops::narrow(&g, 1, 32, 32).unwrap()).unwrap();
        let keep = ops::mul(&ops::add_scalar(&ops::neg(&z).unwrap(), 1.0).unwrap(), &h).unwrap();
        h = ops::add(&keep, &ops::mul(&z, &n).unwrap()).unwrap();
    }
    let loss = ops::sum(&ops::mul(&h, &h).unwrap(), None, false).unwrap();
    drop(h);
    autograd::backward(&[(loss, None)], false).unwrap();
    let grads = [wx, wh]
        .iter()
        .map(|p| p.grad().unwrap().to_vec())
        .collect();
    for p in [wx, wh] {
        remat_core::optim::zero_(&p.grad().unwrap()).unwrap();
    }
    grads
}

#[test]
fn a_step_cap_too_tight_for_a_recurrence_stops_rebuilding_and_overshoots() {
    let cpu = Device::Cpu;
    let (wx, wh) = (leaf(&det(&[32, 64], 1)), leaf(&det(&[32, 64], 2)));
    let xs: Vec<Tensor> = (0..24).map(|i| det(&[16, 32], 10 + i)).collect();
    step(&wx, &wh, &xs, None); // allocates the gradients
    let base = remat_core::memory_allocated(cpu);
    remat_core::reset_peak_memory_stats(cpu);
    let plain = step(&wx, &wh, &xs, None);
    let plain_peak = remat_core::max_memory_allocated(cpu) - base;
    assert_eq!(dtr::rebuild_bound(), dtr::DEFAULT_BOUND);

    for fraction in [0.35, 0.2, 0.1] {
        let cap = (plain_peak as f64 * fraction) as usize;
        dtr::reset_eviction_stats(cpu);
        let got = step(&wx, &wh, &xs, Some(cap));
        assert_eq!(
            got, plain,
            "gradients differ under a cap of {fraction} x plain"
        );
        let stats = dtr::memory_stats(cpu);
        let work = stats.step;
        let judged = work.judged_forward_seconds;
        // The bound, plus what was evicted when eviction stopped (rebuilt once by the
        // backward): about 10-15 forwards. Unbounded, this recurrence thrashed at several
        // thousand; the margin is for a loaded machine's clock (rebuilds timed while other
        // processes ran have measured 44 forwards).
        assert!(
            work.rebuild_seconds <= 200.0 * judged,
            "{fraction}: rebuilt {:?} against a forward of {judged}",
            work
        );
        if fraction == 0.1 {
            assert!(
                work.stops > 0,
                "a tenth of the peak must hit the bound: {work:?}"
            );
        }
        if work.stops > 0 {
            assert!(
                stats.overshoot > 0,
                "{fraction}: stopped without going over: {stats:?}"
            );
        }
    }

    // No bound: the same caps still give the same gradients (slowly; the smallest only).
    let previous = dtr::set_rebuild_bound(f64::INFINITY);
    dtr::reset_eviction_stats(cpu);
    assert_eq!(step(&wx, &wh, &xs, Some(plain_peak / 2)), plain);
    assert_eq!(dtr::memory_stats(cpu).step.stops, 0);
    dtr::set_rebuild_bound(previous);
    assert_eq!(dtr::live_cells(), 0);
}
