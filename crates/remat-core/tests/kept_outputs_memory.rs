//! What a selective checkpoint holds between forward and backward, from the byte counters:
//! under `DotsSaveable` only the kept matmul outputs that the recompute will read stay; the
//! outputs of the op whose saves end the recompute, and of ops after it, are released when
//! the forward ends. (One test in this binary: the counters are process-wide.)
#![allow(clippy::unwrap_used)]

mod common;
use common::{det, leaf};
use remat_core::checkpoint::{checkpoint_segment_with, SavePolicy, SegmentFn, SegmentOptions};
use remat_core::{autograd, ops, Device, Tensor};
use std::sync::Arc;

/// `2 (tanh(x @ w1) @ w2) + a @ b` (`a`, `b` constants): the second matmul saves last, and
/// `a @ b` saves nothing.
fn body(a: Tensor, b: Tensor) -> SegmentFn {
    Arc::new(move |ts: &[Tensor]| {
        let h = ops::matmul(&ts[0], &ts[1])?;
        let z = ops::matmul(&ops::tanh(&h)?, &ts[2])?;
        Ok(vec![ops::add(
            &ops::scale(&z, 2.0)?,
            &ops::matmul(&a, &b)?,
        )?])
    })
}

#[test]
fn only_kept_outputs_the_recompute_reads_are_held() {
    let (a, b) = (det(&[64, 8], 1), det(&[8, 16], 2));
    let params = [det(&[64, 32], 3), det(&[32, 48], 4), det(&[48, 16], 5)];
    let run = |checkpointed: bool| {
        let leaves: Vec<Tensor> = params.iter().map(leaf).collect();
        let f = body(a.clone(), b.clone());
        let before = remat_core::memory_allocated(Device::Cpu);
        let y = if checkpointed {
            let mut opts = SegmentOptions::default();
            opts.policy = Some(SavePolicy::DotsSaveable);
            checkpoint_segment_with(f, &leaves, &opts)
                .unwrap()
                .remove(0)
        } else {
            f(&leaves).unwrap().remove(0)
        };
        let held = remat_core::memory_allocated(Device::Cpu) - before;
        let loss = ops::sum(&ops::mul(&y, &y).unwrap(), None, false).unwrap();
        autograd::backward(&[(loss, None)], false).unwrap();
        let grads: Vec<Vec<f64>> = leaves
            .iter()
            .map(|l| l.grad().unwrap().to_vec::<f64>())
            .collect();
        (held, grads)
    };
    let (_, plain) = run(false);
    let (held, grads) = run(true);
    assert_eq!(grads, plain);
    // The output (64 × 16) and the first matmul's (64 × 48), float64: not the second
    // matmul's nor `a @ b`'s.
    assert_eq!(held, (64 * 16 + 64 * 48) * 8);
}
