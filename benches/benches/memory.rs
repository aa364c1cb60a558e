//! The memory harness (`cargo bench -p remat-benches --bench memory`): for a deep ReLU MLP
//! of several depths and each checkpoint strategy, the exact peak bytes of one forward +
//! backward above the baseline (parameters, pre-allocated gradients and the input), the bytes
//! kept after the forward, the profiler's `memory_saved`, and the median time of a training
//! step; printed as a Markdown table.

use remat_benches::{
    budget_strategy, machine, measure_memory, median_seconds, threads, train_step, Mlp, Strategy,
};

const WIDTH: usize = 256;
const BATCH: usize = 256;
const DEPTHS: [usize; 5] = [16, 32, 64, 128, 256];
const RUNS: usize = 3;
const LR: f64 = 1e-4;

/// Bytes with a binary-prefixed size next to them, e.g. `33816576 (32.2 MiB)`.
fn bytes(b: usize) -> String {
    format!("{b} ({:.1} MiB)", b as f64 / (1 << 20) as f64)
}

fn main() -> remat_core::Result<()> {
    // `cargo bench` passes `--bench` (and any filter) to every target; there is nothing to
    // select here, so arguments are ignored.
    let (model, cores) = machine();
    println!("# remat memory harness\n");
    println!(
        "- machine: {model}, {cores} logical cores, {} rayon threads",
        threads()
    );
    println!("- model: ReLU MLP `h = relu(h @ W + b)`, width {WIDTH}, batch {BATCH}, float32");
    println!("- loss: mean(y²); gradients pre-allocated before the measured step");
    println!("- strategies: none; every = checkpoint_segment per layer; sqrt = checkpoint_sequential(Sqrt); budget = checkpoint_sequential(Budget(plain peak / 4)), or the smallest budget the planner fits where a quarter does not");
    println!("- peak = max_memory_allocated − baseline over one forward + backward; kept = memory_allocated − baseline after the forward (loss computed, output dropped)");
    println!("- step = forward + backward + SGD update, median of {RUNS} runs\n");
    println!("| depth | strategy | peak bytes | ratio to none | kept after forward | memory_saved | step ms | ratio to none |");
    println!("|---:|---|---:|---:|---:|---:|---:|---:|");
    for depth in DEPTHS {
        let mlp = Mlp::new(depth, WIDTH, 1)?;
        let x = mlp.input(BATCH, 2)?;
        // A first step warms the allocator and the rayon pool before anything is measured.
        train_step(&mlp, &x, Strategy::None, LR)?;
        let none = measure_memory(&mlp, &x, Strategy::None)?;
        let mut none_ms = f64::NAN;
        let (budget, budget_label) = budget_strategy(&mlp, &x, none.peak)?;
        for strategy in [Strategy::None, Strategy::Every, Strategy::Sqrt, budget] {
            let m = measure_memory(&mlp, &x, strategy)?;
            let ms = median_seconds(RUNS, || train_step(&mlp, &x, strategy, LR))? * 1e3;
            if strategy == Strategy::None {
                none_ms = ms;
            }
            let label = match strategy {
                Strategy::Budget(_) => budget_label.clone(),
                s => s.to_string(),
            };
            println!(
                "| {depth} | {label} | {} | {:.3} | {} | {} | {ms:.1} | {:.2} |",
                bytes(m.peak),
                m.peak as f64 / none.peak as f64,
                bytes(m.kept_after_forward),
                bytes(m.memory_saved),
                ms / none_ms,
            );
        }
    }
    Ok(())
}
