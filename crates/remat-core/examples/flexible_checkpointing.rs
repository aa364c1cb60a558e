//! The flexible checkpoint APIs: `CheckpointGroup::checkpoint_fn` taking its inputs as a
//! tuple, `checkpoint_fn_flex2` / `checkpoint_fn_flex3` returning several outputs that share
//! one recompute, `checkpoint_segment_flex` with options, and a selective policy
//! (`dots_saveable`: keep the matrix products, recompute the cheap ops). Each is checked
//! against the plain run's gradients and reported with the profiler's figures.
//!
//! ```text
//! cargo run --release -p remat-core --example flexible_checkpointing
//! ```

use remat_core::checkpoint::{
    self, checkpoint_segment_flex, profiler, CheckpointGroup, SavePolicy, SegmentOptions,
};
use remat_core::{autograd, ops, DType, Device, Result, Tensor};

const N: usize = 256;

fn leaf(shape: &[usize]) -> Result<Tensor> {
    let t = ops::randn(shape, DType::F32, Device::Cpu)?;
    t.set_requires_grad(true)?;
    Ok(t)
}

/// The gradients of `loss(a, b)` with respect to `a` and `b`, and the bytes kept between
/// forward and backward.
fn grads(
    a: &Tensor,
    b: &Tensor,
    loss: impl Fn(&Tensor, &Tensor) -> Result<Tensor>,
) -> Result<(Vec<f32>, Vec<f32>, usize)> {
    a.set_grad(None)?;
    b.set_grad(None)?;
    let base = remat_core::memory_allocated(Device::Cpu);
    let l = loss(a, b)?;
    let kept = remat_core::memory_allocated(Device::Cpu) - base;
    autograd::backward(&[(l, None)], false)?;
    let ga = a.grad().map(|g| g.to_vec::<f32>()).unwrap_or_default();
    let gb = b.grad().map(|g| g.to_vec::<f32>()).unwrap_or_default();
    Ok((ga, gb, kept))
}

fn total(ts: &[&Tensor]) -> Result<Tensor> {
    let mut acc = ops::sum(ts[0], None, false)?;
    for t in &ts[1..] {
        acc = ops::add(&acc, &ops::sum(t, None, false)?)?;
    }
    Ok(acc)
}

/// Three outputs of one computation: a product's tanh, its sine, and their product.
fn three(a: &Tensor, b: &Tensor) -> Result<(Tensor, Tensor, Tensor)> {
    let p = ops::matmul(a, b)?;
    let t = ops::tanh(&p)?;
    let s = ops::sin(&p)?;
    let m = ops::mul(&t, &s)?;
    Ok((t, s, m))
}

fn main() -> Result<()> {
    remat_core::manual_seed(0);
    let a = leaf(&[N, N])?;
    let b = leaf(&[N, N])?;
    println!("flexible_checkpointing: {N}x{N} float32 operands");

    let (pa, pb, plain_kept) = grads(&a, &b, |a, b| {
        let (t, s, m) = three(a, b)?;
        total(&[&t, &s, &m])
    })?;
    profiler::reset();
    profiler::start_tracking();
    let group = CheckpointGroup::new(Some("pair".into()), true, false);

    // Tuple inputs, a Vec of outputs.
    let (ga, gb, tuple_kept) = grads(&a, &b, |a, b| {
        let outs = group.checkpoint_fn((a, b), |t| {
            let (x, y, z) = three(&t[0], &t[1])?;
            Ok(vec![x, y, z])
        })?;
        total(&[&outs[0], &outs[1], &outs[2]])
    })?;
    assert!(
        ga == pa && gb == pb,
        "checkpoint_fn((&a, &b), ..) changed the gradients"
    );

    // Two outputs as a pair (the third recomputed from them outside the checkpoint).
    let (ga, gb, flex2_kept) = grads(&a, &b, |a, b| {
        let (t, s) = group.checkpoint_fn_flex2((a, b), |t| {
            let (x, y, _) = three(&t[0], &t[1])?;
            Ok((x, y))
        })?;
        let m = ops::mul(&t, &s)?;
        total(&[&t, &s, &m])
    })?;
    assert!(
        ga == pa && gb == pb,
        "checkpoint_fn_flex2 changed the gradients"
    );

    // Three outputs as a triple.
    let (ga, gb, flex3_kept) = grads(&a, &b, |a, b| {
        let (t, s, m) = group
            .checkpoint_fn_flex3([a.clone(), b.clone()].as_slice(), |t| three(&t[0], &t[1]))?;
        total(&[&t, &s, &m])
    })?;
    assert!(
        ga == pa && gb == pb,
        "checkpoint_fn_flex3 changed the gradients"
    );

    // A segment with options: keep the matrix product (dots_saveable), recompute the rest.
    let mut opts = SegmentOptions::new(Some("dots".into()), true, false, true);
    opts.policy = Some(SavePolicy::DotsSaveable);
    let (ga, gb, dots_kept) = grads(&a, &b, |a, b| {
        let outs = checkpoint_segment_flex(&[a.clone(), b.clone()], &opts, |t| {
            let (x, y, z) = three(&t[0], &t[1])?;
            Ok(vec![x, y, z])
        })?;
        total(&[&outs[0], &outs[1], &outs[2]])
    })?;
    assert!(
        ga == pa && gb == pb,
        "the dots_saveable segment changed the gradients"
    );
    profiler::stop_tracking();

    let mib = |b: usize| b as f64 / 1048576.0;
    println!("kept between forward and backward (engine byte counters):");
    for (form, kept) in [
        ("plain", plain_kept),
        ("group.checkpoint_fn((&a, &b), ..)", tuple_kept),
        ("group.checkpoint_fn_flex2", flex2_kept),
        ("group.checkpoint_fn_flex3", flex3_kept),
        ("checkpoint_segment_flex, dots_saveable", dots_kept),
    ] {
        println!("  {form:<40} {:.2} MiB", mib(kept));
    }
    println!(
        "group \"pair\": {} checkpoints, {} recomputes, {} bytes not kept",
        group.checkpoint_count(),
        group.recompute_count(),
        group.memory_saved()
    );
    println!("gradients bit-identical to the plain run for every form");
    println!("\n{}", profiler::report());
    assert_eq!(group.checkpoint_count(), 3);
    assert_eq!(group.recompute_count(), 3);
    assert!(dots_kept > tuple_kept && tuple_kept < plain_kept);
    assert_eq!(checkpoint::live_checkpoint_state(), 0);
    Ok(())
}
