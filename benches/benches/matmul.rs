//! float32 square matmul at 256, 1024 and 2048. Criterion's throughput is set to the FLOP
//! count (2·n³ "elements" per iteration), so its `elem/s` figure reads as FLOP/s; a GFLOP/s
//! line per size is printed as well, from the median of a few extra timed runs.

use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use remat_benches::{machine, median_seconds, threads};
use remat_core::{ops, DType, Device, Tensor};
use std::hint::black_box;
use std::time::Duration;

const SIZES: [usize; 3] = [256, 1024, 2048];

fn operands(n: usize) -> (Tensor, Tensor) {
    remat_core::manual_seed(0);
    let a = ops::randn(&[n, n], DType::F32, Device::Cpu).expect("randn");
    let b = ops::randn(&[n, n], DType::F32, Device::Cpu).expect("randn");
    (a, b)
}

fn bench_matmul(c: &mut Criterion) {
    let (model, cores) = machine();
    println!(
        "machine: {model}, {cores} cores, {} rayon threads",
        threads()
    );
    let mut g = c.benchmark_group("matmul_f32");
    // The 2048 product takes a noticeable fraction of a second on small machines: equal-size
    // samples of one iteration keep the run short.
    g.sampling_mode(SamplingMode::Flat)
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for n in SIZES {
        let (a, b) = operands(n);
        let flops = 2 * (n as u64).pow(3);
        g.throughput(Throughput::Elements(flops));
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |bch, _| {
            bch.iter(|| black_box(ops::matmul(&a, &b).expect("matmul")))
        });
    }
    g.finish();
    for n in SIZES {
        let (a, b) = operands(n);
        let s = median_seconds(5, || ops::matmul(&a, &b).map(drop)).expect("matmul");
        println!(
            "matmul {n}x{n} f32: {:.1} GFLOP/s ({:.3} ms)",
            2.0 * (n as f64).powi(3) / s * 1e-9,
            s * 1e3
        );
    }
}

criterion_group!(benches, bench_matmul);
criterion_main!(benches);
