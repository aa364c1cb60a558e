//! Gradient checkpointing of a deep network: a 64-layer MLP (Linear + GELU) trained plainly,
//! with `checkpoint_sequential` in ⌈√n⌉ and in 8 segments, and under a memory budget planned
//! by the engine (nested, Revolve-style schedules); for each, the peak memory of one step
//! above its start (byte counters; the gradients exist before the step, as after a first
//! one, so the peak is the activations'), its time, the recomputes the profiler counted, and
//! the check that the gradients are the plain run's.
//!
//! ```text
//! cargo run --release -p remat-core --example gradient_checkpointing
//! ```

use remat_core::checkpoint::{self, checkpoint_sequential, profiler, LayerFn, Segmentation};
use remat_core::{autograd, ops, DType, Device, Result, Tensor};
use std::sync::Arc;
use std::time::Instant;

const DEPTH: usize = 64;
const WIDTH: usize = 256;
const BATCH: usize = 512;

/// One Linear + GELU layer as a chain link.
fn layer(w: Tensor, b: Tensor) -> LayerFn {
    Arc::new(move |x: &Tensor| ops::gelu(&ops::add(&ops::matmul(x, &w)?, &b)?, false))
}

/// One step's gradients, peak bytes above its start, and seconds.
fn step(
    layers: &[LayerFn],
    params: &[Tensor],
    x: &Tensor,
    how: Option<Segmentation>,
) -> Result<(Vec<Vec<f32>>, usize, f64)> {
    // Gradients stay allocated between steps (zeroed), as in a training loop after its first
    // step: what the step allocates above its start is then its activations.
    for p in params {
        if let Some(g) = p.grad() {
            ops::zero_(&g)?;
        }
    }
    let base = remat_core::memory_allocated(Device::Cpu);
    remat_core::reset_peak_memory_stats(Device::Cpu);
    let t0 = Instant::now();
    let y = match how {
        Some(how) => checkpoint_sequential(layers, how, x, true)?,
        None => layers.iter().try_fold(x.clone(), |h, l| l(&h))?,
    };
    let loss = ops::mean(&ops::mul(&y, &y)?, None, false)?;
    drop(y);
    autograd::backward(&[(loss, None)], false)?;
    let secs = t0.elapsed().as_secs_f64();
    let peak = remat_core::max_memory_allocated(Device::Cpu).saturating_sub(base);
    let grads = params
        .iter()
        .map(|p| p.grad().map(|g| g.to_vec::<f32>()).unwrap_or_default())
        .collect();
    Ok((grads, peak, secs))
}

fn main() -> Result<()> {
    remat_core::manual_seed(0);
    let bound = 1.0 / (WIDTH as f64).sqrt();
    let mut params = Vec::new();
    let mut layers = Vec::new();
    for _ in 0..DEPTH {
        let w = ops::creation::uniform(&[WIDTH, WIDTH], -bound, bound, DType::F32, Device::Cpu)?;
        let b = ops::zeros(&[WIDTH], DType::F32, Device::Cpu)?;
        w.set_requires_grad(true)?;
        b.set_requires_grad(true)?;
        layers.push(layer(w.clone(), b.clone()));
        params.extend([w, b]);
    }
    let x = ops::randn(&[BATCH, WIDTH], DType::F32, Device::Cpu)?;
    println!(
        "gradient_checkpointing: {DEPTH} x (Linear({WIDTH}, {WIDTH}) + GELU), batch {BATCH}, float32"
    );

    step(&layers, &params, &x, None)?; // allocates the gradients
    let (plain, plain_peak, plain_secs) = step(&layers, &params, &x, None)?;
    let budget = plain_peak / 4;
    println!(
        "{:<34} {:>10} {:>10} {:>10} {:>8}",
        "strategy", "peak MiB", "x plain", "step ms", "recomp."
    );
    println!(
        "{:<34} {:>10.2} {:>10.2} {:>10.1} {:>8}",
        "plain",
        plain_peak as f64 / 1048576.0,
        1.0,
        plain_secs * 1e3,
        0
    );
    for (name, how) in [
        (
            "checkpoint_sequential(\"sqrt\")".to_string(),
            Segmentation::Sqrt,
        ),
        (
            "checkpoint_sequential(8)".to_string(),
            Segmentation::Count(8),
        ),
        (
            format!("budget plain/4 = {budget} B"),
            Segmentation::Budget(budget),
        ),
    ] {
        // A first step plans (the budget plan measures the layers) and warms up.
        step(&layers, &params, &x, Some(how))?;
        profiler::reset();
        profiler::start_tracking();
        let (grads, peak, secs) = step(&layers, &params, &x, Some(how))?;
        profiler::stop_tracking();
        assert!(
            grads == plain,
            "{name}: gradients differ from the plain run"
        );
        if let Segmentation::Budget(b) = how {
            assert!(peak <= b, "{name}: peak {peak} above the budget");
        }
        println!(
            "{:<34} {:>10.2} {:>10.2} {:>10.1} {:>8}",
            name,
            peak as f64 / 1048576.0,
            peak as f64 / plain_peak as f64,
            secs * 1e3,
            profiler::recompute_count()
        );
    }
    println!("gradients bit-identical to the plain run under every strategy");
    println!(
        "\nprofile of the budget-planned step:\n{}",
        profiler::report()
    );
    assert_eq!(checkpoint::live_checkpoint_state(), 0);
    Ok(())
}
