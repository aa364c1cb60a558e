//! The basic concepts of remat's checkpointing, from Rust alone: what a plain run keeps for
//! backward, and what each entry point keeps instead, read off the engine's byte counters;
//! the gradients are the same bits every time, and the profiler reports what was not kept.
//!
//! - `checkpoint(x)`: one tensor not kept; backward recomputes it from its op's inputs.
//! - `checkpoint_segment(inputs, f)`: only the inputs are kept; backward re-runs `f` once.
//! - `checkpoint_scope()`: every tensor made inside is recomputed instead of kept.
//!
//! ```text
//! cargo run --release -p remat-core --example simple_checkpointing
//! ```

use remat_core::checkpoint::{self, checkpoint_segment, profiler};
use remat_core::{autograd, ops, DType, Device, Result, Tensor};

const N: usize = 512;

/// Three tanh layers: each output is saved by the next tanh's backward.
fn three_tanh(x: &Tensor) -> Result<Tensor> {
    ops::tanh(&ops::tanh(&ops::tanh(x)?)?)
}

/// Bytes kept alive between forward and backward by `forward`, and the gradient of
/// `sum(forward(x))` with respect to `x`.
fn kept_and_grad(
    x: &Tensor,
    forward: impl Fn(&Tensor) -> Result<Tensor>,
) -> Result<(usize, Vec<f32>)> {
    x.set_grad(None)?;
    let base = remat_core::memory_allocated(Device::Cpu);
    let loss = ops::sum(&forward(x)?, None, false)?;
    let kept = remat_core::memory_allocated(Device::Cpu) - base;
    autograd::backward(&[(loss, None)], false)?;
    let grad = x.grad().map(|g| g.to_vec::<f32>()).unwrap_or_default();
    Ok((kept, grad))
}

fn mib(bytes: usize) -> String {
    format!("{:.2} MiB", bytes as f64 / 1048576.0)
}

fn main() -> Result<()> {
    remat_core::manual_seed(0);
    let x = ops::randn(&[N, N], DType::F32, Device::Cpu)?;
    x.set_requires_grad(true)?;
    println!(
        "simple_checkpointing: three tanh layers on a {N}x{N} float32 input ({} per activation)",
        mib(N * N * 4)
    );

    profiler::reset();
    profiler::start_tracking();
    let (plain, g_plain) = kept_and_grad(&x, three_tanh)?;
    let (tensor, g_tensor) = kept_and_grad(&x, |x| {
        // The first tanh's output is not kept: its consumer saves a recipe instead.
        let h = checkpoint::checkpoint(&ops::tanh(x)?)?;
        ops::tanh(&ops::tanh(&h)?)
    })?;
    let (segment, g_segment) = kept_and_grad(&x, |x| {
        Ok(
            checkpoint_segment(std::slice::from_ref(x), |t| Ok(vec![three_tanh(&t[0])?]))?
                .remove(0),
        )
    })?;
    let (scope, g_scope) = kept_and_grad(&x, |x| {
        let _scope = checkpoint::checkpoint_scope();
        three_tanh(x)
    })?;
    profiler::stop_tracking();

    println!("kept between forward and backward (engine byte counters):");
    println!("  plain run            {}", mib(plain));
    println!("  checkpoint(x)        {}", mib(tensor));
    println!("  checkpoint_segment   {}", mib(segment));
    println!("  checkpoint_scope     {}", mib(scope));
    let same = g_plain == g_tensor && g_plain == g_segment && g_plain == g_scope;
    println!("gradients bit-identical to the plain run: {same}");
    println!(
        "profiler: {} bytes not kept, {} checkpoints, {} recomputes in {:.3} ms",
        profiler::memory_saved(),
        profiler::checkpoint_count(),
        profiler::recompute_count(),
        profiler::recompute_seconds() * 1e3
    );
    println!("\n{}", profiler::report());
    assert!(same, "a checkpoint changed the gradients");
    assert!(segment < plain && scope < plain && tensor < plain);
    assert_eq!(checkpoint::live_checkpoint_state(), 0);
    Ok(())
}
