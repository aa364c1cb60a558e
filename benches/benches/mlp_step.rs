//! One training step (forward, backward, SGD update) of a deep ReLU MLP, width 256, batch
//! 256, depths 16/64/256, per checkpoint strategy: none, a segment per layer, √n segments,
//! and the planner under a budget of a quarter of the plain step's peak (a third or a
//! half where a quarter cannot be met; see `budget_strategy`).
//!
//! Samples are few and short (flat sampling, 10 samples) so the whole file stays within a
//! few minutes on a 2-core machine.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode};
use remat_benches::{budget_strategy, measure_memory, train_step, Mlp, Strategy};
use std::time::Duration;

const WIDTH: usize = 256;
const BATCH: usize = 256;
const DEPTHS: [usize; 3] = [16, 64, 256];
const LR: f64 = 1e-4;

fn bench_mlp_step(c: &mut Criterion) {
    let mut g = c.benchmark_group("mlp_step");
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300));
    for depth in DEPTHS {
        // Ten one-step samples of the deepest model take ~5 s; ask for that much time so
        // criterion does not warn, and keep the shallower ones at 2 s.
        g.measurement_time(Duration::from_secs(if depth >= 256 { 6 } else { 2 }));
        let mlp = Mlp::new(depth, WIDTH, 1).expect("mlp");
        let x = mlp.input(BATCH, 2).expect("input");
        let plain_peak = measure_memory(&mlp, &x, Strategy::None)
            .expect("measure")
            .peak;
        let (budget, _) = budget_strategy(&mlp, &x, plain_peak).expect("budget");
        for strategy in [Strategy::None, Strategy::Every, Strategy::Sqrt, budget] {
            g.bench_with_input(BenchmarkId::new(strategy.name(), depth), &depth, |b, _| {
                b.iter(|| train_step(&mlp, &x, strategy, LR).expect("step"))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench_mlp_step);
criterion_main!(benches);
