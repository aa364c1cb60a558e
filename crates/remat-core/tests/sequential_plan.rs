//! `checkpoint_sequential`'s orchestration in the core: the one plan cache (hits for the same
//! layers, never for a freed layer whose address was reused), and validation of arguments
//! and plans as typed errors rather than panics.
#![allow(clippy::unwrap_used)]

mod common;
use common::{det, leaf};
use remat_core::checkpoint::{
    self, checkpoint_sequential, checkpoint_sequential_with, plan_with_ids, LayerFn, LayerId,
    LayerIdentity, PlanSegment, Segmentation, SegmentsArg, SequentialOptions,
};
use remat_core::{autograd, ops, Error, Tensor};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// `depth` tanh(x @ W) layers that count how often they run (all together).
fn counting_layers(depth: usize, calls: &Arc<AtomicUsize>) -> (Vec<LayerFn>, Vec<Tensor>) {
    let weights: Vec<Tensor> = (0..depth)
        .map(|i| leaf(&det(&[8, 8], 40 + i as u64)))
        .collect();
    let layers = weights
        .iter()
        .map(|w| {
            let (w, calls) = (w.clone(), calls.clone());
            Arc::new(move |x: &Tensor| {
                calls.fetch_add(1, Ordering::Relaxed);
                ops::tanh(&ops::matmul(x, &w)?)
            }) as LayerFn
        })
        .collect();
    (layers, weights)
}

fn input() -> Tensor {
    det(&[4, 8], 7)
}

/// A budget that every plan fits (the planner then keeps everything, but still measures).
const ROOMY: usize = 1 << 30;

#[test]
fn the_same_layers_reuse_their_budget_plan() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (layers, _w) = counting_layers(5, &calls);
    let x = input();
    let before = checkpoint::plan_cache_stats();
    let first = checkpoint::plan(&layers, Segmentation::Budget(ROOMY), &x).unwrap();
    // Measuring ran each layer once.
    assert_eq!(calls.load(Ordering::Relaxed), 5);
    let second = checkpoint::plan(&layers, Segmentation::Budget(ROOMY), &x).unwrap();
    assert_eq!(first, second);
    assert_eq!(
        calls.load(Ordering::Relaxed),
        5,
        "a cache hit must not measure again"
    );
    // Counters only grow (other tests may run concurrently), so these bounds are exact
    // enough: this test added at least one miss and one hit.
    let after = checkpoint::plan_cache_stats();
    assert!(after.hits > before.hits && after.misses > before.misses);
    // A different budget or input shape is another plan.
    checkpoint::plan(&layers, Segmentation::Budget(ROOMY + 1), &x).unwrap();
    assert_eq!(calls.load(Ordering::Relaxed), 10);
    checkpoint::plan(&layers, Segmentation::Budget(ROOMY), &det(&[2, 8], 3)).unwrap();
    assert_eq!(calls.load(Ordering::Relaxed), 15);
}

/// An identity with a chosen address whose liveness the test controls: it stands for a
/// foreign layer (a Python object) that is freed and whose address is then reused.
struct FakeIdentity {
    addr: usize,
    alive: Arc<AtomicBool>,
}

impl LayerIdentity for FakeIdentity {
    fn addr(&self) -> usize {
        self.addr
    }
    fn is_alive(&self) -> bool {
        self.alive.load(Ordering::Relaxed)
    }
}

fn fake_ids(base: usize, n: usize, alive: &Arc<AtomicBool>) -> Vec<LayerId> {
    (0..n)
        .map(|i| {
            Arc::new(FakeIdentity {
                addr: base + i,
                alive: alive.clone(),
            }) as LayerId
        })
        .collect()
}

#[test]
fn a_freed_layer_whose_address_is_reused_does_not_get_the_stale_plan() {
    // Addresses no allocation can have, distinct from other tests.
    let base = usize::MAX - 1000;
    let x = input();
    let calls = Arc::new(AtomicUsize::new(0));
    let (old_layers, _w) = counting_layers(3, &calls);
    let old_alive = Arc::new(AtomicBool::new(true));
    let old_ids = fake_ids(base, 3, &old_alive);
    let how = Segmentation::Budget(ROOMY);
    plan_with_ids(&old_layers, &old_ids, how, &x).unwrap();
    plan_with_ids(&old_layers, &old_ids, how, &x).unwrap();
    assert_eq!(calls.load(Ordering::Relaxed), 3, "second call is a hit");

    // The old layers are freed; new ones get the very same addresses.
    old_alive.store(false, Ordering::Relaxed);
    let new_calls = Arc::new(AtomicUsize::new(0));
    let (new_layers, _w2) = counting_layers(3, &new_calls);
    let new_alive = Arc::new(AtomicBool::new(true));
    let new_ids = fake_ids(base, 3, &new_alive);
    plan_with_ids(&new_layers, &new_ids, how, &x).unwrap();
    assert_eq!(
        new_calls.load(Ordering::Relaxed),
        3,
        "the new layers were measured, not served the dead layers' plan"
    );
    // ...and their plan is cached in turn.
    plan_with_ids(&new_layers, &new_ids, how, &x).unwrap();
    assert_eq!(new_calls.load(Ordering::Relaxed), 3);
}

#[test]
fn rust_layers_are_identified_by_their_arcs() {
    let calls = Arc::new(AtomicUsize::new(0));
    let x = input();
    let (layers, _w) = counting_layers(2, &calls);
    checkpoint::plan(&layers, Segmentation::Budget(ROOMY), &x).unwrap();
    // Clones of the same Arcs are the same layers...
    let clones: Vec<LayerFn> = layers.to_vec();
    checkpoint::plan(&clones, Segmentation::Budget(ROOMY), &x).unwrap();
    assert_eq!(calls.load(Ordering::Relaxed), 2);
    // ...new Arcs around the same work are not.
    drop((layers, clones));
    let (fresh, _w) = counting_layers(2, &calls);
    checkpoint::plan(&fresh, Segmentation::Budget(ROOMY), &x).unwrap();
    assert_eq!(calls.load(Ordering::Relaxed), 4);
}

fn is_value_error(r: Result<impl std::fmt::Debug, Error>, needle: &str) {
    match r {
        Err(e @ Error::Value { .. }) => assert!(e.to_string().contains(needle), "{e}"),
        other => panic!("expected a value error containing {needle:?}, got {other:?}"),
    }
}

#[test]
fn bad_plans_are_value_errors_not_panics() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (layers, _w) = counting_layers(4, &calls);
    let x = input();
    let run = |start, end, checkpointed| {
        if checkpointed {
            PlanSegment::checkpoint(start, end)
        } else {
            PlanSegment::plain(start, end)
        }
    };
    // Out of range: slicing the layers would have panicked.
    is_value_error(
        checkpoint::run_plan(&layers, &[run(0, 2, true), run(2, 9, false)], &x, true),
        "past the last layer",
    );
    is_value_error(
        checkpoint::run_plan(&layers, &[run(0, 3, true), run(1, 4, false)], &x, true),
        "overlaps",
    );
    is_value_error(
        checkpoint::run_plan(&layers, &[run(0, 2, true)], &x, true),
        "end at layer 2, not 4",
    );
    is_value_error(
        checkpoint::run_plan(&layers, &[run(3, 1, true)], &x, true),
        "gap",
    );
    assert_eq!(calls.load(Ordering::Relaxed), 0, "no layer ran");
    // A good plan still runs.
    let y = checkpoint::run_plan(&layers, &[run(0, 2, true), run(2, 4, false)], &x, true);
    assert_eq!(y.unwrap().shape(), &[4, 8]);
}

#[test]
fn bad_segmentations_are_value_errors() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (layers, _w) = counting_layers(3, &calls);
    let x = input();
    is_value_error(
        checkpoint_sequential(&layers, Segmentation::Count(0), &x, true),
        "at least 1",
    );
    is_value_error(
        checkpoint_sequential(&layers, Segmentation::Count(4), &x, true),
        "more segments than layers",
    );
    is_value_error(
        checkpoint::plan(&layers, Segmentation::Count(4), &x),
        "more segments than layers",
    );
    is_value_error(
        checkpoint_sequential(&layers, Segmentation::Budget(0), &x, true),
        "budget_bytes=0",
    );
    // Identities that do not match the layers.
    let ids: Vec<LayerId> = layers[..2].iter().map(checkpoint::layer_id).collect();
    is_value_error(
        checkpoint_sequential_with(
            &layers,
            &ids,
            Segmentation::Budget(ROOMY),
            &x,
            &SequentialOptions::default(),
        ),
        "2 layer identities for 3 layers",
    );
    // As many segments as layers is fine.
    assert!(checkpoint_sequential(&layers, Segmentation::Count(3), &x, true).is_ok());
}

#[test]
fn user_arguments_are_validated_in_the_core() {
    use SegmentsArg::*;
    assert_eq!(
        Segmentation::from_args(Count(3), None).unwrap(),
        Segmentation::Count(3)
    );
    assert_eq!(
        Segmentation::from_args(Named("sqrt"), None).unwrap(),
        Segmentation::Sqrt
    );
    assert_eq!(
        Segmentation::from_args(Absent, Some(1000)).unwrap(),
        Segmentation::Budget(1000)
    );
    is_value_error(Segmentation::from_args(Count(0), None), ">= 1, got 0");
    is_value_error(Segmentation::from_args(Count(-2), None), ">= 1, got -2");
    is_value_error(Segmentation::from_args(Named("cube"), None), "got 'cube'");
    is_value_error(Segmentation::from_args(Other("1.5"), None), "got 1.5");
    is_value_error(Segmentation::from_args(Absent, None), "give segments");
    is_value_error(
        Segmentation::from_args(Count(2), Some(10)),
        "either segments or budget_bytes",
    );
    is_value_error(
        Segmentation::from_args(Absent, Some(-1)),
        "budget_bytes must be >= 0",
    );
}

#[test]
fn under_no_grad_the_layers_simply_run() {
    let calls = Arc::new(AtomicUsize::new(0));
    let (layers, _w) = counting_layers(4, &calls);
    let x = input();
    let y = {
        let _g = remat_core::no_grad();
        checkpoint_sequential(&layers, Segmentation::Budget(ROOMY), &x, true).unwrap()
    };
    // No measuring pass: each layer ran once.
    assert_eq!(calls.load(Ordering::Relaxed), 4);
    assert!(!y.requires_grad());
    // With grad, the same call gives the same values and a graph.
    let z = checkpoint_sequential(&layers, Segmentation::Count(2), &x, true).unwrap();
    assert_eq!(z.to_vec::<f64>(), y.to_vec::<f64>());
    let loss = ops::sum(&z, None, false).unwrap();
    autograd::backward(&[(loss, None)], false).unwrap();
}

/// The gradients of `layers` on `x` under `runs` (and the layer calls it took).
fn grads_under(runs: &[PlanSegment], depth: usize) -> (Vec<Vec<f64>>, usize) {
    let calls = Arc::new(AtomicUsize::new(0));
    let (layers, weights) = counting_layers(depth, &calls);
    let y = checkpoint::run_plan(&layers, runs, &input(), true).unwrap();
    let loss = ops::sum(&ops::mul(&y, &y).unwrap(), None, false).unwrap();
    autograd::backward(&[(loss, None)], false).unwrap();
    let grads = weights
        .iter()
        .map(|w| w.grad().unwrap().to_vec::<f64>())
        .collect();
    (grads, calls.load(Ordering::Relaxed))
}

#[test]
fn nested_plans_replay_by_their_inner_schedule_with_identical_gradients() {
    let (plain, plain_calls) = grads_under(&[PlanSegment::plain(0, 8)], 8);
    assert_eq!(plain_calls, 8);
    let mut outer = PlanSegment::checkpoint(0, 6);
    outer.inner = vec![PlanSegment::checkpoint(0, 3), PlanSegment::plain(3, 6)];
    assert_eq!(outer.depth(), 2);
    let (nested, calls) = grads_under(&[outer, PlanSegment::plain(6, 8)], 8);
    assert_eq!(nested, plain);
    // The forward (8), the outer replay (6, the inner run's forward included), then the
    // inner run's own replay (3).
    assert_eq!(calls, 8 + 6 + 3);
}

#[test]
fn measuring_the_layers_backward_leaves_every_grad_and_the_peak_as_they_were() {
    // The planner backpropagates each layer's measuring run (to learn what its backward
    // needs) with the weights' gradients made and dropped: no `.grad` appears, no hook of a
    // weight runs, and the measured layer costs include the backward.
    let calls = Arc::new(AtomicUsize::new(0));
    let (layers, weights) = counting_layers(4, &calls);
    let hooked = Arc::new(AtomicUsize::new(0));
    let seen = hooked.clone();
    let _handle = weights[0]
        .register_hook(Arc::new(move |g: &Tensor| {
            seen.fetch_add(1, Ordering::Relaxed);
            Ok(Some(g.clone()))
        }))
        .unwrap();
    // A peak from before the measurement survives it (the measurement watches its own peak
    // without resetting the caller's).
    let big = ops::zeros(&[1 << 18], remat_core::DType::F32, remat_core::Device::Cpu).unwrap();
    let high = remat_core::memory_allocated(remat_core::Device::Cpu);
    drop(big);
    let costs = checkpoint::measure_layers(&layers, &input()).unwrap();
    assert!(remat_core::max_memory_allocated(remat_core::Device::Cpu) >= high);
    assert!(costs.iter().all(|c| c.backward.is_some_and(|b| b > 0)));
    assert!(weights.iter().all(|w| w.grad().is_none()));
    assert_eq!(hooked.load(Ordering::Relaxed), 0);
    // A real backward afterwards accumulates as usual.
    let x = input();
    let mut h = x.clone();
    for l in &layers {
        h = l(&h).unwrap();
    }
    autograd::backward(&[(ops::sum(&h, None, false).unwrap(), None)], false).unwrap();
    assert!(weights.iter().all(|w| w.grad().is_some()));
    assert_eq!(hooked.load(Ordering::Relaxed), 1);
}

#[test]
fn measuring_on_another_thread_never_lowers_the_peak_a_reader_sees() {
    // The planner measures layers while other threads allocate and read the peak (the test
    // harness runs tests side by side, as a data loader or a second model would): the peak
    // that was reached must stay visible to every reader throughout.
    let cpu = remat_core::Device::Cpu;
    let big = ops::zeros(&[1 << 16], remat_core::DType::F32, cpu).unwrap();
    let high = remat_core::memory_allocated(cpu);
    drop(big);
    let stop = Arc::new(AtomicBool::new(false));
    let rounds = Arc::new(AtomicUsize::new(0));
    let measurer = {
        let (stop, rounds) = (stop.clone(), rounds.clone());
        std::thread::spawn(move || {
            let calls = Arc::new(AtomicUsize::new(0));
            let (layers, _w) = counting_layers(3, &calls);
            while !stop.load(Ordering::Relaxed) {
                checkpoint::measure_layers(&layers, &input()).unwrap();
                rounds.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let mut lowest = usize::MAX;
    while rounds.load(Ordering::Relaxed) < 200 {
        lowest = lowest.min(remat_core::max_memory_allocated(cpu));
    }
    stop.store(true, Ordering::Relaxed);
    measurer.join().unwrap();
    assert!(
        lowest >= high,
        "the peak read {lowest} after reaching {high}"
    );
}
