//! Checkpointing with the profiler in full: a transformer-like block stack whose blocks are
//! named checkpoint segments, profiled over one training step. Prints the per-segment records
//! (bytes not kept, recomputes, recompute time), the memory timeline's extremes, the report,
//! and writes a Chrome trace (open it in ui.perfetto.dev).
//!
//! ```text
//! cargo run --release -p remat-core --example enhanced_gradient_checkpointing
//! ```

use remat_core::checkpoint::{self, checkpoint_segment_with, profiler, SegmentOptions};
use remat_core::{autograd, ops, DType, Device, Result, Tensor};
use std::sync::Arc;

const BLOCKS: usize = 6;
const DIM: usize = 128;
const TOKENS: usize = 256;

/// `x + W2 gelu(W1 layer_norm(x))`: a feed-forward residual block.
fn block(x: &Tensor, w1: &Tensor, w2: &Tensor) -> Result<Tensor> {
    let h = ops::layer_norm(x, None, None, 1e-5)?;
    let h = ops::gelu(&ops::matmul(&h, w1)?, false)?;
    ops::add(x, &ops::matmul(&h, w2)?)
}

fn main() -> Result<()> {
    remat_core::manual_seed(0);
    let bound = 1.0 / (DIM as f64).sqrt();
    let weights: Vec<(Tensor, Tensor)> = (0..BLOCKS)
        .map(|_| {
            let w1 =
                ops::creation::uniform(&[DIM, 4 * DIM], -bound, bound, DType::F32, Device::Cpu)?;
            let w2 = ops::creation::uniform(
                &[4 * DIM, DIM],
                -bound / 2.0,
                bound / 2.0,
                DType::F32,
                Device::Cpu,
            )?;
            w1.set_requires_grad(true)?;
            w2.set_requires_grad(true)?;
            Ok((w1, w2))
        })
        .collect::<Result<_>>()?;
    let x = ops::randn(&[TOKENS, DIM], DType::F32, Device::Cpu)?;
    println!(
        "enhanced_gradient_checkpointing: {BLOCKS} feed-forward blocks (dim {DIM}, hidden {}), \
         {TOKENS} tokens, each block a named segment",
        4 * DIM
    );

    profiler::reset();
    profiler::start_tracking();
    let base = remat_core::memory_allocated(Device::Cpu);
    remat_core::reset_peak_memory_stats(Device::Cpu);
    let mut h = x.clone();
    for (i, (w1, w2)) in weights.iter().enumerate() {
        let (w1, w2) = (w1.clone(), w2.clone());
        let opts = SegmentOptions::new(Some(format!("blocks.{i}")), true, false, true);
        h = checkpoint_segment_with(
            Arc::new(move |t: &[Tensor]| Ok(vec![block(&t[0], &w1, &w2)?])),
            &[h],
            &opts,
        )?
        .remove(0);
    }
    let loss = ops::mean(&ops::mul(&h, &h)?, None, false)?;
    drop(h);
    let after_forward = remat_core::memory_allocated(Device::Cpu) - base;
    autograd::backward(&[(loss, None)], false)?;
    let peak = remat_core::max_memory_allocated(Device::Cpu).saturating_sub(base);
    profiler::stop_tracking();

    println!(
        "kept after the forward: {:.2} MiB; step peak above its start: {:.2} MiB",
        after_forward as f64 / 1048576.0,
        peak as f64 / 1048576.0
    );
    println!(
        "{:<10} {:>8} {:>14} {:>10} {:>12}",
        "record", "kind", "bytes saved", "recomp.", "recomp. ms"
    );
    for r in profiler::records() {
        println!(
            "{:<10} {:>8} {:>14} {:>10} {:>12.3}",
            r.name,
            r.kind,
            r.bytes_saved,
            r.recompute_count,
            r.recompute_seconds * 1e3
        );
    }
    let timeline = profiler::memory_timeline();
    let top = timeline.iter().map(|(_, b, _)| *b).max().unwrap_or(0);
    println!(
        "memory timeline: {} events over {:.3} ms, highest {:.2} MiB live",
        timeline.len(),
        timeline.last().map_or(0.0, |(t, _, _)| *t) * 1e3,
        top as f64 / 1048576.0
    );
    let path = std::env::temp_dir().join("remat_enhanced_trace.json");
    std::fs::write(&path, profiler::chrome_trace())
        .map_err(|e| remat_core::Error::value("chrome_trace", e.to_string()))?;
    println!("chrome trace written to {}", path.display());
    println!("\n{}", profiler::report());
    assert_eq!(profiler::checkpoint_count(), BLOCKS);
    assert_eq!(profiler::recompute_count(), BLOCKS);
    assert_eq!(checkpoint::live_checkpoint_state(), 0);
    Ok(())
}
