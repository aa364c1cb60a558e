//! Dynamic rematerialisation: under a memory limit, training evicts and rebuilds activations,
//! stays under the limit, and gives the unlimited run's gradients bit for bit. One test per
//! binary (the byte counters are per process).
#![allow(clippy::unwrap_used)]

mod common;
use common::{det, leaf};
use remat_core::{autograd, dtr, ops, Device, Error, Tensor};

const DEPTH: usize = 48;

/// One step of a tanh MLP (float64, width 64, batch 256); returns the gradients, and the
/// live bytes at the end of the forward in `after_forward`.
fn step(
    params: &[Tensor],
    x: &Tensor,
    after_forward: &mut usize,
) -> remat_core::Result<Vec<Vec<f64>>> {
    for p in params {
        p.set_grad(None)?;
    }
    let mut h = x.clone();
    for w in params {
        h = ops::tanh(&ops::matmul(&h, w)?)?;
    }
    let loss = ops::sum(&ops::mul(&h, &h)?, None, false)?;
    drop(h);
    *after_forward = remat_core::memory_allocated(Device::Cpu);
    autograd::backward(&[(loss, None)], false)?;
    Ok(params.iter().map(|p| p.grad().unwrap().to_vec()).collect())
}

#[test]
fn training_under_a_memory_limit() {
    let cpu = Device::Cpu;
    let params: Vec<Tensor> = (0..DEPTH)
        .map(|i| leaf(&det(&[64, 64], i as u64)))
        .collect();
    let x = det(&[256, 64], 1000);
    let base = remat_core::memory_allocated(cpu);
    let mut forward_end = 0;
    let plain = step(&params, &x, &mut forward_end).unwrap();
    // The activations a plain run keeps for its backward, and the gradients a step leaves.
    let activations = forward_end - base;
    let grads = remat_core::memory_allocated(cpu) - base;
    assert!(activations > 2 * grads, "{activations} {grads}");

    for divisor in [2, 3, 4] {
        let limit = base + grads + activations / divisor;
        dtr::reset_eviction_stats(cpu);
        remat_core::reset_peak_memory_stats(cpu);
        let got = {
            let _limit = remat_core::memory_limit(cpu, Some(limit));
            assert_eq!(remat_core::memory_stats(cpu).limit, Some(limit));
            step(&params, &x, &mut forward_end).unwrap()
        };
        assert_eq!(remat_core::get_memory_limit(cpu), None);
        let peak = remat_core::max_memory_allocated(cpu);
        let stats = dtr::eviction_stats(cpu);
        assert!(
            peak <= limit,
            "1/{divisor}: peak {peak} over the limit {limit}"
        );
        assert!(
            stats.evictions > 0 && stats.rematerializations > 0,
            "{stats:?}"
        );
        assert_eq!(got, plain, "1/{divisor}: gradients differ");
    }
    // Nothing outlives the step: every cell is gone with its graph.
    assert_eq!(dtr::live_cells(), 0);

    // A limit below what cannot be evicted: a clear error, and the engine still works.
    let tight = remat_core::memory_allocated(cpu) + 64 * 64 * 8;
    dtr::set_memory_limit(cpu, Some(tight));
    let e = step(&params, &x, &mut forward_end).unwrap_err();
    dtr::set_memory_limit(cpu, None);
    assert!(matches!(e, Error::MemoryLimit { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("smallest working set"), "{msg}");
    assert!(
        msg.starts_with("matmul") || msg.starts_with("tanh"),
        "{msg}"
    );
    assert_eq!(step(&params, &x, &mut forward_end).unwrap(), plain);

    // Parsing of limits.
    assert_eq!(dtr::parse_bytes("8MB").unwrap(), 8 << 20);
    assert_eq!(dtr::parse_bytes(" 1.5 GiB").unwrap(), 3 << 29);
    assert_eq!(dtr::parse_bytes("1000").unwrap(), 1000);
    assert!(dtr::parse_bytes("8 parsecs").is_err());
    assert!(dtr::parse_bytes("-1MB").is_err());
}
