//! Time the exact (erf) GELU on the CPU: forward alone, and forward plus backward, over a
//! float32 (or float64) tensor of standard normal samples, printing the median ns/element.
//!
//! ```text
//! cargo run --release -p remat-core --example gelu_bench [-- N [f64]]
//! ```
//!
//! `N` is the element count (default 4M); the rayon pool size follows `RAYON_NUM_THREADS`.

// A bench: failing loudly on a broken engine is the point.
#![allow(clippy::unwrap_used)]

use remat_core::{autograd, no_grad, ops, DType, Device, Result, Tensor};
use std::time::Instant;

const REPS: usize = 15;

/// Median seconds of `REPS` runs of `f` (after one warm-up run).
fn median_secs(mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    let mut t = Vec::with_capacity(REPS);
    for _ in 0..REPS {
        let start = Instant::now();
        f()?;
        t.push(start.elapsed().as_secs_f64());
    }
    t.sort_by(f64::total_cmp);
    Ok(t[REPS / 2])
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(1 << 22, |s| s.parse().unwrap());
    let dtype = match args.next().as_deref() {
        Some("f64") => DType::F64,
        _ => DType::F32,
    };
    remat_core::manual_seed(0);
    let x = ops::randn(&[n], dtype, Device::Cpu)?;
    let g = ops::randn(&[n], dtype, Device::Cpu)?;
    let fwd = median_secs(|| {
        let _guard = no_grad();
        ops::gelu(&x, false).map(drop)
    })?;
    // A memory-bound op of the same shape, for scale: what allocating, reading and writing
    // the tensor costs.
    let relu = median_secs(|| {
        let _guard = no_grad();
        ops::relu(&x).map(drop)
    })?;
    let leaf = x.detach();
    leaf.set_requires_grad(true)?;
    let both = median_secs(|| {
        let y = ops::gelu(&leaf, false)?;
        let gx = autograd::grad(
            &[y],
            std::slice::from_ref(&leaf),
            Some(&[Some(g.clone())]),
            false,
        )?;
        drop::<Vec<Option<Tensor>>>(gx);
        Ok(())
    })?;
    let ns = |s: f64| s * 1e9 / n as f64;
    println!(
        "gelu(erf) {dtype} n={n} threads={}: forward {:.3} ns/elem, forward+backward {:.3} \
         ns/elem (backward ~{:.3}); relu forward {:.3} ns/elem",
        rayon_threads(),
        ns(fwd),
        ns(both),
        ns(both - fwd),
        ns(relu)
    );
    Ok(())
}

/// The rayon pool size (the engine's kernels run on the global pool).
fn rayon_threads() -> String {
    std::env::var("RAYON_NUM_THREADS").unwrap_or_else(|_| {
        std::thread::available_parallelism().map_or("?".into(), |n| n.to_string())
    })
}
