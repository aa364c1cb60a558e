//! The memory-budget planner for `checkpoint_sequential(..., budget_bytes=N)`: dynamic
//! programming over the chain of layers, choosing which runs of layers become checkpointed
//! segments so that the modelled activation memory fits the budget at the least recompute.
//!
//! Model, per layer i: `saved[i]` bytes of tensors it makes and keeps for backward (its
//! output among them when it keeps that), `input_saved[i]` bytes of its input when it keeps
//! that, and `output[i]`. A tensor is counted once, by whoever holds it first: a plain
//! layer's input is already held when the layer before kept its output, when it is the chain's
//! input (live before the step), or when it is the input of the checkpoint being replayed. A
//! checkpointed segment `[s, e)` keeps only its input and, during backward, re-materialises
//! its layers once, when everything after it has been freed (the gradient of its output,
//! held meanwhile, is one of the backward's transient buffers); the replay may itself be
//! planned (nested checkpoints). The peak is the largest of
//! (bytes kept by the runs up to a segment + that segment's replay) and the bytes kept by the
//! whole chain, plus the backward's transient gradient buffers. Recompute cost is measured
//! forward time (bytes made stand in when no time is known).

use crate::error::{Error, Result};

/// What one layer costs, measured by running it once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayerCost {
    /// Bytes of the tensors the layer makes and saves for backward (its output included when
    /// it saves its output).
    pub saved: usize,
    /// Bytes of the layer's input when the layer saves its input for backward (0 otherwise).
    pub input_saved: usize,
    /// Whether `saved` includes the layer's output (the next layer's input is then held).
    pub keeps_output: bool,
    /// Bytes of the layer's output.
    pub output: usize,
    /// Measured forward time in nanoseconds (0: unknown; the planner then weighs layers by
    /// the bytes they make).
    pub compute_ns: u64,
    /// Bytes of the largest tensor the layer saved that it neither made nor took as input
    /// (a weight): its gradient is made in backward before it is added to `.grad`.
    pub weights: usize,
    /// Measured bytes the layer's backward holds at its peak beyond what the layer saved: the
    /// incoming gradient, the input's and the weights' gradients and the ops' workspaces
    /// (`None`: not measured; the planner then models it from the sizes).
    pub backward: Option<usize>,
}

/// One run of layers `[start, end)`, checkpointed or plain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanSegment {
    /// First layer.
    pub start: usize,
    /// One past the last layer.
    pub end: usize,
    /// Whether the run is a checkpoint segment.
    pub checkpointed: bool,
    /// For a checkpointed run: the schedule its replay in backward follows (runs covering
    /// `[start, end)`, themselves possibly nested); empty: the replay keeps every layer.
    pub inner: Vec<PlanSegment>,
}

impl PlanSegment {
    /// A plain run of layers `[start, end)`.
    pub fn plain(start: usize, end: usize) -> PlanSegment {
        PlanSegment {
            start,
            end,
            checkpointed: false,
            inner: Vec::new(),
        }
    }

    /// A checkpointed run of layers `[start, end)` whose replay keeps every layer.
    pub fn checkpoint(start: usize, end: usize) -> PlanSegment {
        PlanSegment {
            start,
            end,
            checkpointed: true,
            inner: Vec::new(),
        }
    }

    /// How deep checkpoints nest in this run (0 for a plain run).
    pub fn depth(&self) -> usize {
        if !self.checkpointed {
            return 0;
        }
        1 + self.inner.iter().map(PlanSegment::depth).max().unwrap_or(0)
    }
}

/// A segmentation of the chain with its modelled figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// The runs, in order, covering every layer.
    pub segments: Vec<PlanSegment>,
    /// Modelled bytes kept between forward and backward.
    pub kept_bytes: usize,
    /// Modelled peak (kept + the largest recompute).
    pub peak_bytes: usize,
    /// Modelled recompute cost (bytes re-materialised).
    pub recompute_bytes: usize,
    /// Layer forwards re-run in backward (a layer replayed at two levels counts twice).
    pub recompute_layers: usize,
}

/// Check that `runs` cover layers `[0, n)` in order, each layer exactly once, with no empty
/// run: a plan from elsewhere (a caller, a cache) is checked before it is run, so a bad one
/// is an [`Error::Value`] naming the offending run rather than a panic on an index.
pub fn validate_segments(runs: &[PlanSegment], n: usize) -> Result<()> {
    check_runs(runs, 0, n, n).map_err(|message| {
        Error::value(
            "checkpoint_sequential",
            format!("invalid plan for {n} layers: {message}"),
        )
    })
}

/// Whether `runs` cover `[lo, hi)` in order (and each checkpointed run's inner schedule its
/// own layers); the message names the first offending run.
fn check_runs(
    runs: &[PlanSegment],
    lo: usize,
    hi: usize,
    n: usize,
) -> std::result::Result<(), String> {
    let mut next = lo;
    for (i, r) in runs.iter().enumerate() {
        if r.start != next {
            let what = if r.start < next {
                "overlaps"
            } else {
                "leaves a gap before"
            };
            return Err(format!(
                "run {i} ({}..{}) {what} layer {next} (runs must follow each other)",
                r.start, r.end
            ));
        }
        if r.end <= r.start {
            return Err(format!("run {i} ({}..{}) is empty", r.start, r.end));
        }
        if r.end > hi {
            let what = if hi == n {
                "the last layer"
            } else {
                "its enclosing run"
            };
            return Err(format!("run {i} ({}..{}) goes past {what}", r.start, r.end));
        }
        if !r.inner.is_empty() {
            if !r.checkpointed {
                return Err(format!(
                    "run {i} ({}..{}) is plain but has an inner schedule",
                    r.start, r.end
                ));
            }
            check_runs(&r.inner, r.start, r.end, n)
                .map_err(|m| format!("inside run {i} ({}..{}): {m}", r.start, r.end))?;
        }
        next = r.end;
    }
    if next != hi {
        return Err(format!("the runs end at layer {next}, not {hi}"));
    }
    Ok(())
}

/// Memory is planned in this many buckets of the budget (costs rounded up, so the model never
/// under-counts).
const BUCKETS: usize = 128;

/// Non-uniform chains longer than this are planned over groups of consecutive layers (segment
/// boundaries fall between groups), keeping the cubic programme fast for very deep models.
/// Uniform chains have a programme over lengths only and are never grouped.
const MAX_UNITS: usize = 128;

const INF: u64 = u64::MAX;

/// Whether a unit's input is already held by something counted elsewhere when the unit runs:
/// the chain's input, a replayed checkpoint's input, or an output the previous plain unit kept.
const HELD: usize = 1;
/// The unit's input is held only if the unit (or a checkpoint starting at it) keeps it.
const LOOSE: usize = 0;

/// The chain as the programme sees it: per unit, bytes it makes and keeps when run plainly,
/// bytes of its input it keeps, whether it keeps its output, its input's and output's sizes
/// and its forward cost.
struct Chain {
    saved: Vec<usize>,
    input_saved: Vec<usize>,
    keeps_output: Vec<bool>,
    /// `input[i]`: bytes of unit i's input, `output[i - 1]` (unit 0's input is always held).
    input: Vec<usize>,
    output: Vec<usize>,
    cost: Vec<u64>,
    /// Every unit alike: the optimum depends only on a run's length (Revolve's setting).
    uniform: bool,
}

impl Chain {
    fn new(costs: &[LayerCost]) -> Chain {
        // Measured times when every layer has one; otherwise bytes made stand in for work.
        let timed = costs.iter().all(|c| c.compute_ns > 0);
        let cost: Vec<u64> = costs
            .iter()
            .map(|c| {
                if timed {
                    c.compute_ns
                } else {
                    c.saved.max(c.output).max(1) as u64
                }
            })
            .collect();
        let uniform = costs.windows(2).all(|w| {
            (w[0].saved, w[0].input_saved, w[0].keeps_output, w[0].output)
                == (w[1].saved, w[1].input_saved, w[1].keeps_output, w[1].output)
        });
        // Timings of alike layers differ only by noise: plan with their mean.
        let cost = if uniform && !cost.is_empty() {
            let mean = cost.iter().sum::<u64>() / cost.len() as u64;
            vec![mean.max(1); cost.len()]
        } else {
            cost
        };
        let output: Vec<usize> = costs.iter().map(|c| c.output).collect();
        // A run that starts at unit 0 is the whole chain or a replay, whose input is held;
        // the uniform programme's runs of a length stand for runs at any start, whose input
        // is the output before them. So unit 0's entry is that output's size.
        let input = output
            .first()
            .copied()
            .into_iter()
            .chain(output.iter().copied())
            .take(costs.len())
            .collect();
        Chain {
            saved: costs.iter().map(|c| c.saved).collect(),
            input_saved: costs.iter().map(|c| c.input_saved).collect(),
            keeps_output: costs.iter().map(|c| c.keeps_output).collect(),
            input,
            output,
            cost,
            uniform,
        }
    }

    fn len(&self) -> usize {
        self.saved.len()
    }

    /// Bytes a plain unit `s` adds to what is kept, given whether its input is held.
    fn keep_bytes(&self, s: usize, held: usize) -> usize {
        self.saved[s] + if held == HELD { 0 } else { self.input_saved[s] }
    }

    /// Bytes a checkpoint starting at unit `s` adds to what is kept (its input).
    fn checkpoint_input_bytes(&self, s: usize, held: usize) -> usize {
        if held == HELD {
            0
        } else {
            self.input[s]
        }
    }

    /// Whether the unit after a plain unit `s` finds its input held.
    fn after_keep(&self, s: usize) -> usize {
        if self.keeps_output[s] {
            HELD
        } else {
            LOOSE
        }
    }

    /// The least memory (bytes) any schedule of the whole chain needs. `min[h][s][e]` for the
    /// run `[s, e)` whose first input is held (`h`) or not: keep unit `s` plainly and go on,
    /// or checkpoint `[s, j)` (keeping its input), do the rest, then replay `[s, j)` once the
    /// rest is freed.
    fn min_room(&self) -> usize {
        let n = self.len();
        if self.uniform {
            // By length only: `min[h][l]` for any run of `l` alike units.
            let mut min = [vec![0usize; n + 1], vec![0usize; n + 1]];
            for l in 1..=n {
                for h in [LOOSE, HELD] {
                    let keep = self.keep_bytes(0, h) + min[self.after_keep(0)][l - 1];
                    let cin = self.checkpoint_input_bytes(0, h);
                    min[h][l] = (1..l)
                        .map(|k| cin + min[LOOSE][l - k].max(min[HELD][k]))
                        .fold(keep, usize::min);
                }
            }
            return min[HELD][n];
        }
        let idx = |s: usize, e: usize| s * (n + 1) + e;
        let mut min = [
            vec![0usize; (n + 1) * (n + 1)],
            vec![0usize; (n + 1) * (n + 1)],
        ];
        for len in 1..=n {
            for s in 0..=n - len {
                let e = s + len;
                for h in [LOOSE, HELD] {
                    let keep = self.keep_bytes(s, h) + min[self.after_keep(s)][idx(s + 1, e)];
                    let cin = self.checkpoint_input_bytes(s, h);
                    min[h][idx(s, e)] = (s + 1..e)
                        .map(|j| cin + min[LOOSE][idx(j, e)].max(min[HELD][idx(s, j)]))
                        .fold(keep, usize::min);
                }
            }
        }
        min[HELD][idx(0, n)]
    }
}

/// One choice of the programme for a run `[s, e)` at a memory level.
#[derive(Clone, Copy)]
enum Choice {
    /// Keep unit `s`'s saved tensors and go on with `[s + 1, e)`.
    Keep,
    /// Checkpoint `[s, s + len)`: run it keeping only its input, do the rest, then replay
    /// it (itself planned in the same memory).
    Split(usize),
}

/// The optimal schedules under `m` buckets, as tables over (input held or not, run, memory).
struct Programme<'a> {
    chain: &'a Chain,
    buckets: usize,
    bucket: usize,
    /// `opt[h][key(s, e)][m]`: least total forward cost of `[s, e)` (first run included)
    /// when its first input is held (`h`) or not; `choice` alike.
    opt: [Vec<Vec<u64>>; 2],
    choice: [Vec<Vec<Choice>>; 2],
    prefix_cost: Vec<u64>,
}

impl<'a> Programme<'a> {
    fn key(&self, s: usize, e: usize) -> usize {
        let n = self.chain.len();
        if self.chain.uniform {
            e - s
        } else {
            s * (n + 1) + e
        }
    }

    fn q(&self, bytes: usize) -> usize {
        bytes.div_ceil(self.bucket)
    }

    fn forward_cost(&self, s: usize, e: usize) -> u64 {
        self.prefix_cost[e] - self.prefix_cost[s]
    }

    fn solve(chain: &'a Chain, room: usize) -> Programme<'a> {
        let n = chain.len();
        // The bucket: a multiple of every size's common divisor (so alike sizes are counted
        // exactly), at least room / BUCKETS (so the table stays small).
        let g = chain
            .saved
            .iter()
            .chain(&chain.output)
            .chain(&chain.input)
            .chain(&chain.input_saved)
            .filter(|&&b| b > 0)
            .fold(0usize, |g, &b| gcd(g, b))
            .max(1);
        let bucket = room.div_ceil(BUCKETS).div_ceil(g).max(1) * g;
        let buckets = room / bucket;
        let mut prefix_cost = vec![0u64; n + 1];
        for i in 0..n {
            prefix_cost[i + 1] = prefix_cost[i] + chain.cost[i];
        }
        let keys = if chain.uniform {
            n + 1
        } else {
            (n + 1) * (n + 1)
        };
        let mut p = Programme {
            chain,
            buckets,
            bucket,
            opt: [vec![Vec::new(); keys], vec![Vec::new(); keys]],
            choice: [vec![Vec::new(); keys], vec![Vec::new(); keys]],
            prefix_cost,
        };
        // An empty run costs nothing at any memory.
        for s in 0..=n {
            let k = p.key(s, s);
            for h in [LOOSE, HELD] {
                p.opt[h][k] = vec![0; buckets + 1];
                p.choice[h][k] = vec![Choice::Keep; buckets + 1];
            }
        }
        for len in 1..=n {
            // A uniform chain's runs of one length are all alike: solve one of them.
            let starts = if chain.uniform { 0..1 } else { 0..n + 1 - len };
            for s in starts {
                let e = s + len;
                for h in [LOOSE, HELD] {
                    let (opt, choice) = p.solve_run(s, e, h);
                    let k = p.key(s, e);
                    p.opt[h][k] = opt;
                    p.choice[h][k] = choice;
                }
            }
        }
        p
    }

    /// The row of `[s, e)` (first input held: `h`) over every memory level, from the rows of
    /// shorter runs.
    fn solve_run(&self, s: usize, e: usize, h: usize) -> (Vec<u64>, Vec<Choice>) {
        let chain = self.chain;
        let buckets = self.buckets;
        let mut opt = vec![INF; buckets + 1];
        let mut choice = vec![Choice::Keep; buckets + 1];
        let keep = self.q(chain.keep_bytes(s, h));
        let next = &self.opt[chain.after_keep(s)][self.key(s + 1, e)];
        let cin = self.q(chain.checkpoint_input_bytes(s, h));
        for m in 0..=buckets {
            if keep <= m && next[m - keep] != INF {
                opt[m] = chain.cost[s] + next[m - keep];
            }
            if cin > m {
                continue;
            }
            let room = m - cin;
            for j in s + 1..e {
                // The rest and the replay each run beside the checkpoint's input. (The
                // replay also holds the gradient of the checkpoint's output: one of the
                // backward's transient buffers, counted once for the whole chain.)
                let rest = self.opt[LOOSE][self.key(j, e)][room];
                if rest == INF {
                    continue;
                }
                let replay = self.opt[HELD][self.key(s, j)][room];
                if replay == INF {
                    continue;
                }
                let c = self.forward_cost(s, j) + rest + replay;
                if c < opt[m] {
                    opt[m] = c;
                    choice[m] = Choice::Split(j - s);
                }
            }
        }
        (opt, choice)
    }

    fn feasible(&self) -> bool {
        self.opt[HELD][self.key(0, self.chain.len())][self.buckets] != INF
    }

    /// The runs of `[s, e)` at memory `m` (feasible) when its first input is held (`h`) or
    /// not, nested where a replay is itself split.
    fn runs(&self, s: usize, e: usize, m: usize, h: usize) -> Vec<PlanSegment> {
        let mut out = Vec::new();
        let (mut s, mut m, mut h) = (s, m, h);
        while s < e {
            match self.choice[h][self.key(s, e)][m] {
                Choice::Keep => {
                    out.push(PlanSegment::plain(s, s + 1));
                    m -= self.q(self.chain.keep_bytes(s, h));
                    h = self.chain.after_keep(s);
                    s += 1;
                }
                Choice::Split(len) => {
                    let j = s + len;
                    m -= self.q(self.chain.checkpoint_input_bytes(s, h));
                    let mut inner = self.runs(s, j, m, HELD);
                    if inner.iter().all(|r| !r.checkpointed) {
                        inner.clear();
                    }
                    out.push(PlanSegment {
                        start: s,
                        end: j,
                        checkpointed: true,
                        inner,
                    });
                    h = LOOSE;
                    s = j;
                }
            }
        }
        merge_plain(out)
    }
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// Adjacent plain runs become one.
fn merge_plain(runs: Vec<PlanSegment>) -> Vec<PlanSegment> {
    let mut merged: Vec<PlanSegment> = Vec::with_capacity(runs.len());
    for r in runs {
        match merged.last_mut() {
            Some(last) if !last.checkpointed && !r.checkpointed => last.end = r.end,
            _ => merged.push(r),
        }
    }
    merged
}

/// The modelled figures of `runs` (first input held: `h`): (bytes kept until backward, peak
/// bytes, bytes re-materialised, layer forwards re-run).
fn figures(chain: &Chain, runs: &[PlanSegment], h: usize) -> (usize, usize, usize, usize) {
    let (mut kept, mut peak, mut remat, mut reruns) = (0usize, 0usize, 0usize, 0usize);
    let mut h = h;
    for r in runs {
        if r.checkpointed {
            kept += chain.checkpoint_input_bytes(r.start, h);
            let replay = [PlanSegment::plain(r.start, r.end)];
            let inner = if r.inner.is_empty() {
                &replay[..]
            } else {
                &r.inner[..]
            };
            let (window, inner_peak, inner_remat, inner_reruns) = figures(chain, inner, HELD);
            // The replay runs when everything after it is freed (the gradient of its output,
            // which the run's backward holds meanwhile, is a transient buffer).
            peak = peak.max(kept + inner_peak);
            remat += window + inner_remat;
            reruns += (r.end - r.start) + inner_reruns;
            h = LOOSE;
        } else {
            for s in r.start..r.end {
                kept += chain.keep_bytes(s, h);
                h = chain.after_keep(s);
            }
        }
        peak = peak.max(kept);
    }
    (kept, peak, remat, reruns)
}

/// The cheapest plan (least recompute time) whose modelled peak fits `budget` bytes.
/// `input_bytes` is the size of the chain's input (live before the step, so not counted).
///
/// Checkpointed runs may be nested: a run's [`PlanSegment::inner`] is the schedule its
/// replay follows (Revolve-style multi-level checkpointing), so budgets down to a few
/// activations plus the largest layer are met. Uniform chains (every layer alike) are solved
/// over run lengths, exactly, at any depth; others by dynamic programming over measured
/// bytes and times, grouped into at most 128 units.
pub fn plan_budget(costs: &[LayerCost], input_bytes: usize, budget: usize) -> Result<Plan> {
    let n = costs.len();
    if n == 0 {
        return Ok(Plan {
            segments: vec![],
            kept_bytes: 0,
            peak_bytes: 0,
            recompute_bytes: 0,
            recompute_layers: 0,
        });
    }
    let (units, group) = units_of(costs);
    let chain = Chain::new(&units);
    let transient = transient_bytes(costs, input_bytes);
    let plan = (budget > transient).then(|| solve_within(&chain, budget - transient));
    let Some(Some(p)) = plan else {
        let least = min_budget_of(&chain, transient);
        let plain = figures(&chain, &[PlanSegment::plain(0, chain.len())], HELD).0;
        return Err(Error::value(
            "checkpoint_sequential",
            format!(
                "no schedule of the {n} layers fits budget_bytes={budget}; the smallest budget \
                 that fits is budget_bytes={least} (the planner's model: bytes kept by earlier \
                 layers, one replay at a time, nested checkpoints, plus {transient} bytes of \
                 gradient buffers; the plain run needs about {} bytes)",
                plain + transient
            ),
        ));
    };
    let runs = p.runs(0, chain.len(), p.buckets, HELD);
    let (kept, peak, remat, reruns) = figures(&chain, &runs, HELD);
    Ok(Plan {
        segments: ungroup(runs, group, n),
        kept_bytes: kept,
        peak_bytes: peak + transient,
        recompute_bytes: remat,
        recompute_layers: reruns * group,
    })
}

/// The smallest budget [`plan_budget`] accepts for `costs`.
pub fn min_budget(costs: &[LayerCost], input_bytes: usize) -> usize {
    if costs.is_empty() {
        return 0;
    }
    let (units, _) = units_of(costs);
    min_budget_of(&Chain::new(&units), transient_bytes(costs, input_bytes))
}

fn min_budget_of(chain: &Chain, transient: usize) -> usize {
    // The exact least memory, then up in small steps until the bucketed programme (which
    // rounds every cost up) agrees.
    let exact = chain.min_room().max(1);
    let mut room = exact;
    loop {
        if solve_within(chain, room).is_some() {
            return room + transient + 1;
        }
        room += (exact / 64).max(1);
    }
}

/// The programme for `room` bytes when it is feasible and the schedule it yields keeps to
/// `room` in [`figures`] too (the model the plan's reported peak comes from): the
/// programme's bucketed costs can round a replay's peak down where runs merge.
fn solve_within(chain: &Chain, room: usize) -> Option<Programme<'_>> {
    let p = Programme::solve(chain, room);
    if !p.feasible() {
        return None;
    }
    let runs = p.runs(0, chain.len(), p.buckets, HELD);
    (figures(chain, &runs, HELD).1 <= room).then_some(p)
}

/// What the backward of the layer at its peak holds beyond the bytes kept: the incoming
/// gradient, the ones being produced (the input's, a weight's before it is added to
/// `.grad`) and the ops' workspaces. Measured when the layers were (at least the incoming
/// and the produced activation gradients), plus one weight for adding a weight's gradient
/// into `.grad` and the chain's output, held by the caller through the backward; else modelled as those two and two more of the
/// larger of an activation and a weight (a weight's gradient and a contiguous copy of the
/// weight). The loss around the chain makes a few small tensors (its scalar, its seed).
fn transient_bytes(costs: &[LayerCost], input_bytes: usize) -> usize {
    const LOSS_SCALARS: usize = 64;
    let activation = costs
        .iter()
        .map(|c| c.output)
        .max()
        .unwrap_or(0)
        .max(input_bytes);
    let weight = costs.iter().map(|c| c.weights).max().unwrap_or(0);
    let measured = costs
        .iter()
        .map(|c| c.backward)
        .try_fold(0usize, |m, b| b.map(|b| m.max(b)));
    match measured {
        // A weight's gradient added into an existing `.grad` (dropped when measured), and the
        // chain's output, which a caller holding it (`out = model(x)`) keeps alive through
        // every layer's backward.
        Some(b) => {
            let output = costs.last().map_or(0, |c| c.output);
            LOSS_SCALARS + b.max(2 * activation) + weight + output
        }
        None => LOSS_SCALARS + 2 * activation + 2 * activation.max(weight),
    }
}

/// The units the programme plans over, and how many layers each holds: the layers
/// themselves for uniform or short chains, otherwise groups of consecutive layers (a group
/// keeps what its layers keep run plainly one after another).
fn units_of(costs: &[LayerCost]) -> (Vec<LayerCost>, usize) {
    if costs.len() <= MAX_UNITS || Chain::new(costs).uniform {
        return (costs.to_vec(), 1);
    }
    let group = costs.len().div_ceil(MAX_UNITS);
    let units = costs
        .chunks(group)
        .map(|c| {
            let inner_inputs: usize = c
                .windows(2)
                .filter(|w| !w[0].keeps_output)
                .map(|w| w[1].input_saved)
                .sum();
            LayerCost {
                saved: c.iter().map(|l| l.saved).sum::<usize>() + inner_inputs,
                input_saved: c[0].input_saved,
                keeps_output: c[c.len() - 1].keeps_output,
                output: c[c.len() - 1].output,
                compute_ns: c.iter().map(|l| l.compute_ns).sum(),
                weights: c.iter().map(|l| l.weights).max().unwrap_or(0),
                backward: c
                    .iter()
                    .map(|l| l.backward)
                    .try_fold(0usize, |m, b| b.map(|b| m.max(b))),
            }
        })
        .collect();
    (units, group)
}

/// Runs over units mapped back to layers.
fn ungroup(runs: Vec<PlanSegment>, group: usize, n: usize) -> Vec<PlanSegment> {
    runs.into_iter()
        .map(|r| PlanSegment {
            start: (r.start * group).min(n),
            end: (r.end * group).min(n),
            checkpointed: r.checkpointed,
            inner: ungroup(r.inner, group, n),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uniform(n: usize) -> Vec<LayerCost> {
        vec![
            LayerCost {
                saved: 0,
                input_saved: 100,
                keeps_output: false,
                output: 100,
                compute_ns: 1000,
                weights: 0,
                backward: None,
            };
            n
        ]
    }

    #[test]
    fn a_generous_budget_checkpoints_nothing() {
        let p = plan_budget(&uniform(16), 100, 1_000_000).unwrap();
        assert_eq!(p.recompute_bytes, 0);
        assert!(p.segments.iter().all(|s| !s.checkpointed));
    }

    #[test]
    fn a_tight_budget_fits_and_covers_every_layer() {
        let costs = uniform(64);
        let p = plan_budget(&costs, 100, 2300).unwrap();
        assert!(p.peak_bytes <= 2300, "{p:?}");
        assert_eq!(p.segments.first().unwrap().start, 0);
        assert_eq!(p.segments.last().unwrap().end, 64);
        for w in p.segments.windows(2) {
            assert_eq!(w[0].end, w[1].start);
        }
        // Fewer bytes allowed never means less recompute.
        let q = plan_budget(&costs, 100, 4300).unwrap();
        assert!(q.recompute_bytes <= p.recompute_bytes);
    }

    #[test]
    fn very_deep_chains_are_planned_over_groups() {
        let costs = uniform(512);
        let p = plan_budget(&costs, 100, 20_000).unwrap();
        assert_eq!(p.segments.first().unwrap().start, 0);
        assert_eq!(p.segments.last().unwrap().end, 512);
        for w in p.segments.windows(2) {
            assert_eq!(w[0].end, w[1].start);
        }
        assert!(p.peak_bytes <= 20_000);
    }

    fn run(start: usize, end: usize, checkpointed: bool) -> PlanSegment {
        if checkpointed {
            PlanSegment::checkpoint(start, end)
        } else {
            PlanSegment::plain(start, end)
        }
    }

    #[test]
    fn plans_that_do_not_cover_the_layers_in_order_are_errors() {
        assert!(validate_segments(&[run(0, 2, true), run(2, 5, false)], 5).is_ok());
        assert!(validate_segments(&[], 0).is_ok());
        let cases: [(&[PlanSegment], &str); 6] = [
            (&[run(0, 3, true), run(2, 5, false)], "overlaps"),
            (&[run(0, 2, true), run(3, 5, false)], "gap"),
            (&[run(0, 2, true), run(2, 9, false)], "past the last layer"),
            (&[run(0, 0, true), run(0, 5, false)], "empty"),
            (&[run(0, 2, true)], "end at layer 2, not 5"),
            (&[], "end at layer 0, not 5"),
        ];
        for (runs, needle) in cases {
            let e = validate_segments(runs, 5).unwrap_err();
            assert!(matches!(e, Error::Value { .. }), "{e:?}");
            assert!(e.to_string().contains(needle), "{runs:?}: {e}");
        }
    }

    #[test]
    fn an_impossible_budget_is_a_clear_error_naming_the_least_that_fits() {
        let costs = uniform(8);
        let e = plan_budget(&costs, 100, 150).unwrap_err();
        let least = min_budget(&costs, 100);
        assert!(e.to_string().contains("budget_bytes=150"), "{e}");
        assert!(
            e.to_string().contains(&format!("budget_bytes={least}")),
            "{e}"
        );
        assert!(plan_budget(&costs, 100, least).is_ok());
    }

    #[test]
    fn inner_schedules_must_cover_their_run() {
        let mut outer = run(0, 4, true);
        outer.inner = vec![run(0, 2, true), run(2, 3, false)];
        let e = validate_segments(&[outer.clone(), run(4, 5, false)], 5).unwrap_err();
        assert!(e.to_string().contains("inside run 0 (0..4)"), "{e}");
        outer.inner.push(run(3, 4, false));
        assert!(validate_segments(&[outer.clone(), run(4, 5, false)], 5).is_ok());
        let mut plain = run(4, 5, false);
        plain.inner = vec![run(4, 5, false)];
        let e = validate_segments(&[outer, plain], 5).unwrap_err();
        assert!(
            e.to_string().contains("plain but has an inner schedule"),
            "{e}"
        );
    }

    #[test]
    fn nested_schedules_meet_budgets_single_level_cannot() {
        // 64 alike layers keeping 100 bytes each: one level needs k - 1 kept inputs plus a
        // replay of about 64 / k layers, at least 15 layers' worth; 8 fit only nested.
        let costs = uniform(64);
        let transient = 64 + 4 * 100; // gradient buffers, as transient_bytes models them
        let one_level = (1..=64)
            .map(|k: usize| (k - 1) * 100 + 64usize.div_ceil(k) * 100)
            .min()
            .unwrap();
        assert!(one_level > 800, "{one_level}");
        let p = plan_budget(&costs, 100, 800 + transient).unwrap();
        assert!(p.peak_bytes <= 800 + transient, "{p:?}");
        assert!(p.segments.iter().any(|s| s.depth() >= 2), "{p:?}");
        validate_segments(&p.segments, 64).unwrap();
        // The floor: a few activations (an input and a gradient per nesting level, about
        // log n levels) plus the largest layer, far below one level's 15.
        let least = min_budget(&costs, 100);
        assert!(least <= 8 * 100 + transient + 1, "least budget {least}");
    }

    /// Revolve's optimum `F[s][n]`: the fewest forward steps that reverse `n` steps from a
    /// stored input with `s` more checkpoint slots (Griewank & Walther).
    fn revolve(n_max: usize, s_max: usize) -> Vec<Vec<usize>> {
        let mut f = vec![(0..=n_max)
            .map(|k| k * k.saturating_sub(1) / 2)
            .collect::<Vec<_>>()];
        for s in 1..=s_max {
            let mut row = vec![0, 0];
            for n in 2..=n_max {
                row.push((1..n).map(|m| m + f[s - 1][n - m] + row[m]).min().unwrap());
            }
            f.push(row);
        }
        f
    }

    #[test]
    fn uniform_chains_recompute_no_more_than_revolve_at_the_same_memory() {
        // Each layer keeps exactly its input (Revolve's setting). The smallest budget leaves
        // room for no checkpoint slot; every 100 bytes more is one slot.
        let f = revolve(200, 8);
        for n in [16, 64, 200] {
            let costs = uniform(n);
            let least = min_budget(&costs, 100);
            for (slots, optimum) in f.iter().enumerate() {
                let p = plan_budget(&costs, 100, least + 100 * slots).unwrap();
                assert!(p.peak_bytes <= least + 100 * slots, "{n} {slots}: {p:?}");
                assert!(
                    p.recompute_layers <= optimum[n],
                    "n {n}, {slots} slots: {} re-runs, Revolve {}",
                    p.recompute_layers,
                    optimum[n]
                );
            }
        }
    }

    #[test]
    fn a_tensor_two_layers_keep_is_counted_once() {
        // A layer keeping its output, then one keeping its input (the same tensor), then a
        // layer keeping its input that the one before did not keep.
        let layer = |saved, input_saved, keeps_output| LayerCost {
            saved,
            input_saved,
            keeps_output,
            output: 100,
            compute_ns: 1,
            weights: 0,
            backward: None,
        };
        let costs = [
            layer(100, 0, true),
            layer(0, 100, false),
            layer(0, 100, false),
        ];
        let p = plan_budget(&costs, 100, 1_000_000).unwrap();
        assert!(p.segments.iter().all(|s| !s.checkpointed));
        assert_eq!(p.kept_bytes, 200);
    }
}
