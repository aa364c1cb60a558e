//! Train a small deep residual MLP on random regression data from Rust alone, with every
//! block run as a checkpoint segment, and print the checkpoint profiler's report.
//!
//! Each block computes `x + tanh(x @ W + b) / sqrt(depth)`; only its input is kept for
//! backward and its forward is re-run once during backward. The parameters are updated with
//! the engine's SGD kernel. The final step is profiled, and its peak memory is compared with
//! the same step run without checkpointing.
//!
//! ```text
//! cargo run --release -p remat-core --example deep_mlp
//! ```

use remat_core::checkpoint::{checkpoint_segment, profiler};
use remat_core::{autograd, ops, optim, DType, Device, Result, Tensor};

const DEPTH: usize = 24;
const WIDTH: usize = 128;
const BATCH: usize = 256;
const STEPS: usize = 30;
const LR: f64 = 0.02;

/// One residual block's parameters.
struct Block {
    w: Tensor,
    b: Tensor,
}

/// A leaf parameter drawn from U(-bound, bound).
fn param(shape: &[usize], bound: f64) -> Result<Tensor> {
    let t = ops::creation::uniform(shape, -bound, bound, DType::F32, Device::Cpu)?;
    t.set_requires_grad(true)?;
    Ok(t)
}

/// `x + tanh(x @ w + b) / sqrt(DEPTH)` (the scaled residual keeps the depth trainable).
fn block_forward(x: &Tensor, w: &Tensor, b: &Tensor) -> Result<Tensor> {
    let h = ops::tanh(&ops::add(&ops::matmul(x, w)?, b)?)?;
    let scale = Tensor::scalar(1.0 / (DEPTH as f64).sqrt(), x.dtype());
    ops::add(x, &ops::mul(&h, &scale)?)
}

/// The model's output, each block a checkpoint segment when `checkpointed`.
fn forward(x: &Tensor, blocks: &[Block], head: &Tensor, checkpointed: bool) -> Result<Tensor> {
    let mut h = x.clone();
    for blk in blocks {
        h = if checkpointed {
            let (w, b) = (blk.w.clone(), blk.b.clone());
            let out = checkpoint_segment(&[h], move |ins: &[Tensor]| {
                Ok(vec![block_forward(&ins[0], &w, &b)?])
            })?;
            out.into_iter().next().ok_or_else(|| {
                remat_core::Error::checkpoint("deep_mlp", "segment returned no output")
            })?
        } else {
            block_forward(&h, &blk.w, &blk.b)?
        };
    }
    ops::matmul(&h, head)
}

/// One training step (forward, backward, SGD update); returns the loss.
fn train_step(
    x: &Tensor,
    y: &Tensor,
    blocks: &[Block],
    head: &Tensor,
    checkpointed: bool,
) -> Result<f64> {
    let params: Vec<&Tensor> = blocks
        .iter()
        .flat_map(|b| [&b.w, &b.b])
        .chain([head])
        .collect();
    for p in &params {
        p.set_grad(None)?;
    }
    let loss = ops::mse_loss(&forward(x, blocks, head, checkpointed)?, y)?;
    let value = loss.item()?;
    autograd::backward(&[(loss, None)], false)?;
    for p in &params {
        if let Some(g) = p.grad() {
            optim::sgd_step(p, &g, None, true, LR, 0.0, 0.0, 0.0, false)?;
        }
    }
    Ok(value)
}

/// Peak bytes above the starting point during one step.
fn step_peak(
    x: &Tensor,
    y: &Tensor,
    blocks: &[Block],
    head: &Tensor,
    checkpointed: bool,
) -> Result<(f64, usize)> {
    let base = remat_core::memory_allocated(Device::Cpu);
    remat_core::reset_peak_memory_stats(Device::Cpu);
    let loss = train_step(x, y, blocks, head, checkpointed)?;
    Ok((
        loss,
        remat_core::max_memory_allocated(Device::Cpu).saturating_sub(base),
    ))
}

fn main() -> Result<()> {
    remat_core::manual_seed(0);
    let bound = 1.0 / (WIDTH as f64).sqrt();
    let blocks: Vec<Block> = (0..DEPTH)
        .map(|_| {
            Ok(Block {
                w: param(&[WIDTH, WIDTH], bound)?,
                b: param(&[WIDTH], bound)?,
            })
        })
        .collect::<Result<_>>()?;
    // A zero-initialised head: the model starts at the constant 0 and learns from there.
    let head = ops::zeros(&[WIDTH, 1], DType::F32, Device::Cpu)?;
    head.set_requires_grad(true)?;

    // Random inputs and a smooth random target to fit.
    let x = ops::randn(&[BATCH, WIDTH], DType::F32, Device::Cpu)?;
    let teacher = ops::creation::uniform(&[WIDTH, 1], -bound, bound, DType::F32, Device::Cpu)?;
    let y = ops::tanh(&ops::matmul(&x, &teacher)?)?;

    println!(
        "deep_mlp (Rust): {DEPTH} residual blocks x{WIDTH}, batch {BATCH}, every block a \
         checkpoint segment"
    );
    let t0 = std::time::Instant::now();
    for step in 0..STEPS - 1 {
        let loss = train_step(&x, &y, &blocks, &head, true)?;
        if step % 5 == 0 {
            println!("step {step:>3}  loss {loss:.5}");
        }
    }
    let secs = t0.elapsed().as_secs_f64() / (STEPS - 1) as f64;

    let (_, plain_peak) = step_peak(&x, &y, &blocks, &head, false)?;
    profiler::reset();
    profiler::start_tracking();
    let (loss, ckpt_peak) = step_peak(&x, &y, &blocks, &head, true)?;
    profiler::stop_tracking();
    println!("step {:>3}  loss {loss:.5}", STEPS);
    println!("mean step time (checkpointed): {:.2} ms", secs * 1e3);
    println!(
        "peak memory above the step's start: {:.2} MiB without checkpointing, {:.2} MiB with",
        plain_peak as f64 / 1048576.0,
        ckpt_peak as f64 / 1048576.0
    );
    println!("\nprofile of the last step:\n{}", profiler::report());
    Ok(())
}
