//! Selective checkpoint policies: a kept op output is never recomputed (the recompute takes
//! it instead of running the op), the other ops are, gradients are identical to the plain run,
//! `checkpoint_name` tags reach `SaveOnlyTheseNames`, a kept output written in place
//! before backward is an error, never a wrong gradient, and the op whose saves end an
//! early-stopping recompute is not run again when it saved only its inputs.
#![allow(clippy::unwrap_used)]

mod common;
use common::{det, leaf};
use remat_core::autograd::node::{apply, BackwardCtx, Op, Save};
use remat_core::checkpoint::{
    checkpoint_segment_with, CheckpointPolicy, SavePolicy, SegmentFn, SegmentOptions,
};
use remat_core::{autograd, ops, Result, Tensor};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// `x * 2`, counting its forward runs.
struct Doubling(Arc<AtomicUsize>);

impl Op for Doubling {
    fn name(&self) -> &'static str {
        "doubling"
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.0.fetch_add(1, Ordering::SeqCst);
        let _g = remat_core::grad_mode::no_grad();
        ops::scale(inputs[0], 2.0)
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        Ok(vec![Some(ops::scale(ctx.grad, 2.0)?)])
    }
}

/// `tanh(doubling(x) @ w)`: the doubling's output is saved by the matmul.
fn body(count: Arc<AtomicUsize>) -> SegmentFn {
    Arc::new(move |ts: &[Tensor]| {
        let d = apply(Doubling(count.clone()), &[&ts[0]], &[Save::Input(0)])?;
        let named = ops::checkpoint_name(&d, "doubled")?;
        Ok(vec![ops::tanh(&ops::matmul(&named, &ts[1])?)?])
    })
}

/// Gradients of `sum(f(x, w)²)` for fresh leaves `x (3, 4)` and `w (4, 5)` drawn with
/// `seeds`: `f` run plainly (`opts` None) or as a checkpoint segment with `opts`.
fn segment_grads(f: SegmentFn, seeds: (u64, u64), opts: Option<SegmentOptions>) -> Vec<Vec<f64>> {
    let (x, w) = (leaf(&det(&[3, 4], seeds.0)), leaf(&det(&[4, 5], seeds.1)));
    let y = match opts {
        None => f(&[x.clone(), w.clone()]).unwrap().remove(0),
        Some(opts) => checkpoint_segment_with(f, &[x.clone(), w.clone()], &opts)
            .unwrap()
            .remove(0),
    };
    let loss = ops::sum(&ops::mul(&y, &y).unwrap(), None, false).unwrap();
    autograd::backward(&[(loss, None)], false).unwrap();
    vec![
        x.grad().unwrap().to_vec::<f64>(),
        w.grad().unwrap().to_vec::<f64>(),
    ]
}

fn grads(policy: Option<SavePolicy>, checkpointed: bool) -> (Vec<Vec<f64>>, usize) {
    let count = Arc::new(AtomicUsize::new(0));
    let opts = checkpointed.then(|| {
        let mut opts = SegmentOptions::default();
        opts.policy = policy;
        opts
    });
    let g = segment_grads(body(count.clone()), (1, 2), opts);
    (g, count.load(Ordering::SeqCst))
}

#[test]
fn kept_outputs_are_not_recomputed_and_gradients_are_identical() {
    let (plain, runs) = grads(None, false);
    assert_eq!(runs, 1);
    // Nothing kept: the recompute runs the doubling again.
    let (g, runs) = grads(Some(SavePolicy::NothingSaveable), true);
    assert_eq!((g.clone(), runs), (plain.clone(), 2));
    let (g, runs) = grads(None, true);
    assert_eq!((g, runs), (plain.clone(), 2));
    // Everything kept: never recomputed.
    let (g, runs) = grads(Some(SavePolicy::EverythingSaveable), true);
    assert_eq!((g, runs), (plain.clone(), 1));
    // The tag reaches the name policies and custom policies.
    let (g, runs) = grads(
        Some(SavePolicy::SaveOnlyTheseNames(vec!["doubled".into()])),
        true,
    );
    assert_eq!((g, runs), (plain.clone(), 1));
    let (g, runs) = grads(Some(SavePolicy::SaveOnlyTheseNames(vec!["x".into()])), true);
    assert_eq!((g, runs), (plain.clone(), 2));
    let custom = SavePolicy::Custom(Arc::new(|q| {
        Ok(if q.op == "doubling" {
            CheckpointPolicy::MustSave
        } else {
            CheckpointPolicy::MustRecompute
        })
    }));
    let (g, runs) = grads(Some(custom), true);
    assert_eq!((g, runs), (plain, 1));
}

#[test]
fn a_kept_output_written_in_place_is_an_error() {
    let (x, w) = (leaf(&det(&[3, 4], 3)), leaf(&det(&[4, 5], 4)));
    let keep = Arc::new(std::sync::Mutex::new(None::<Tensor>));
    let k = keep.clone();
    let f: SegmentFn = Arc::new(move |ts: &[Tensor]| {
        let h = ops::matmul(&ts[0], &ts[1])?;
        *k.lock().unwrap() = Some(h.detach());
        Ok(vec![ops::tanh(&h)?])
    });
    let mut opts = SegmentOptions::default();
    opts.policy = Some(SavePolicy::DotsSaveable);
    let y = checkpoint_segment_with(f, &[x, w], &opts)
        .unwrap()
        .remove(0);
    // Write the kept matmul output through a detached alias.
    let alias = keep.lock().unwrap().take().unwrap();
    ops::fill_(&alias, ops::Operand::Scalar(0.0)).unwrap();
    let loss = ops::sum(&y, None, false).unwrap();
    let e = autograd::backward(&[(loss, None)], false).unwrap_err();
    assert!(e.to_string().contains("modified"), "{e}");
}

/// `x @ w`, saving only its inputs, counting its forward runs.
struct CountingMatmul(Arc<AtomicUsize>);

impl Op for CountingMatmul {
    fn name(&self) -> &'static str {
        "matmul"
    }
    fn cpu(&self, inputs: &[&Tensor]) -> Result<Tensor> {
        self.0.fetch_add(1, Ordering::SeqCst);
        let _g = remat_core::grad_mode::no_grad();
        ops::matmul(inputs[0], inputs[1])
    }
    fn backward(&self, ctx: &BackwardCtx<'_>) -> Result<Vec<Option<Tensor>>> {
        let (x, w) = (&ctx.saved[0], &ctx.saved[1]);
        Ok(vec![
            Some(ops::matmul(ctx.grad, &ops::transpose(w, 0, 1)?)?),
            Some(ops::matmul(&ops::transpose(x, 0, 1)?, ctx.grad)?),
        ])
    }
}

/// `2 (tanh(x) @ w)` through a counting matmul (the last op that saves anything), under
/// `policy` (None: plain run) with early stop on or off; the gradients and the matmul's runs.
fn last_saver_grads(
    policy: Option<Option<SavePolicy>>,
    early_stop: bool,
) -> (Vec<Vec<f64>>, usize) {
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    let f: SegmentFn = Arc::new(move |ts: &[Tensor]| {
        let t = ops::tanh(&ts[0])?;
        let y = apply(
            CountingMatmul(c.clone()),
            &[&t, &ts[1]],
            &[Save::Input(0), Save::Input(1)],
        )?;
        Ok(vec![ops::scale(&y, 2.0)?])
    });
    let opts = policy.map(|policy| {
        let mut opts = SegmentOptions::default();
        opts.policy = policy;
        opts.early_stop = early_stop;
        opts
    });
    let g = segment_grads(f, (5, 6), opts);
    (g, count.load(Ordering::SeqCst))
}

#[test]
fn the_last_saver_is_not_run_again_when_it_saved_only_inputs() {
    let (plain, runs) = last_saver_grads(None, true);
    assert_eq!(runs, 1);
    for policy in [
        None,
        Some(SavePolicy::NothingSaveable),
        Some(SavePolicy::DotsSaveable),
        Some(SavePolicy::EverythingSaveable),
    ] {
        // The recompute ends at the matmul's saves without running it, whatever was kept.
        let (g, runs) = last_saver_grads(Some(policy.clone()), true);
        assert_eq!((g, runs), (plain.clone(), 1), "{policy:?}");
    }
    // Without early stop the whole function runs again (the matmul too, unless kept).
    let (g, runs) = last_saver_grads(Some(None), false);
    assert_eq!((g, runs), (plain.clone(), 2));
    let (g, runs) = last_saver_grads(Some(Some(SavePolicy::DotsSaveable)), false);
    assert_eq!((g, runs), (plain, 1));
}
