//! The memory-budget planner for `checkpoint_sequential(..., budget_bytes=N)`: dynamic
//! programming over the chain of layers, choosing which runs of layers become checkpointed
//! segments so that the modelled activation memory fits the budget at the least recompute.
//!
//! Model, per layer i: `saved[i]` bytes it keeps for backward when run plainly and
//! `output[i]` bytes of its output. A plain layer keeps `saved[i]` until backward; a
//! checkpointed segment `[s, e)` keeps only its input and, during backward, re-materialises
//! `sum(saved[s..e])` once — when everything after it has already been freed, so the peak is
//! the largest of (bytes kept by the runs up to a segment + that segment's recompute), and the
//! bytes kept by the whole chain, plus the backward's transient gradient buffers (three of the
//! largest layer outputs). Recompute cost of a segment is `sum(saved[s..e])` (work is
//! proportional to the activations produced).

use crate::error::{Error, Result};

/// What one layer costs, measured by running it once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LayerCost {
    /// Bytes the layer's ops save for backward (storages it created).
    pub saved: usize,
    /// Bytes of the layer's output.
    pub output: usize,
}

/// One run of layers `[start, end)`, checkpointed or plain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanSegment {
    /// First layer.
    pub start: usize,
    /// One past the last layer.
    pub end: usize,
    /// Whether the run is a checkpoint segment.
    pub checkpointed: bool,
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
}

/// Check that `runs` cover layers `[0, n)` in order, each layer exactly once, with no empty
/// run: a plan from elsewhere (a caller, a cache) is checked before it is run, so a bad one
/// is an [`Error::Value`] naming the offending run rather than a panic on an index.
pub fn validate_segments(runs: &[PlanSegment], n: usize) -> Result<()> {
    let bad = |message: String| {
        Err(Error::value(
            "checkpoint_sequential",
            format!("invalid plan for {n} layers: {message}"),
        ))
    };
    let mut next = 0;
    for (i, r) in runs.iter().enumerate() {
        if r.start != next {
            let what = if r.start < next {
                "overlaps"
            } else {
                "leaves a gap before"
            };
            return bad(format!(
                "run {i} ({}..{}) {what} layer {next} (runs must follow each other)",
                r.start, r.end
            ));
        }
        if r.end <= r.start {
            return bad(format!("run {i} ({}..{}) is empty", r.start, r.end));
        }
        if r.end > n {
            return bad(format!(
                "run {i} ({}..{}) goes past the last layer",
                r.start, r.end
            ));
        }
        next = r.end;
    }
    if next != n {
        return bad(format!("the runs end at layer {next}, not {n}"));
    }
    Ok(())
}

const BUCKETS: usize = 96;

/// Chains longer than this are planned over groups of consecutive layers (segment boundaries
/// fall between groups), keeping the dynamic programme fast for very deep models.
const MAX_UNITS: usize = 128;

/// The cheapest plan (least recompute) whose modelled peak fits `budget` bytes.
/// `input_bytes` is the size of the chain's input.
pub fn plan_budget(costs: &[LayerCost], input_bytes: usize, budget: usize) -> Result<Plan> {
    if costs.len() <= MAX_UNITS {
        return plan_units(costs, input_bytes, budget);
    }
    let group = costs.len().div_ceil(MAX_UNITS);
    let grouped: Vec<LayerCost> = costs
        .chunks(group)
        .map(|c| LayerCost {
            saved: c.iter().map(|l| l.saved).sum(),
            output: c.last().map_or(0, |l| l.output),
        })
        .collect();
    let mut plan = plan_units(&grouped, input_bytes, budget)?;
    for s in plan.segments.iter_mut() {
        s.start = (s.start * group).min(costs.len());
        s.end = (s.end * group).min(costs.len());
    }
    Ok(plan)
}

fn plan_units(costs: &[LayerCost], input_bytes: usize, budget: usize) -> Result<Plan> {
    let n = costs.len();
    if n == 0 {
        return Ok(Plan {
            segments: vec![],
            kept_bytes: 0,
            peak_bytes: 0,
            recompute_bytes: 0,
        });
    }
    let input_of = |i: usize| {
        if i == 0 {
            input_bytes
        } else {
            costs[i - 1].output
        }
    };
    // In backward the incoming gradient, the one being produced and a weight gradient are
    // alive at once.
    let transient = 3 * costs
        .iter()
        .map(|c| c.output)
        .max()
        .unwrap_or(0)
        .max(input_bytes);
    let mut prefix = vec![0usize; n + 1];
    for i in 0..n {
        prefix[i + 1] = prefix[i] + costs[i].saved;
    }
    let window = |s: usize, e: usize| prefix[e] - prefix[s];
    let largest = costs.iter().map(|c| c.saved).max().unwrap_or(0);
    let no_fit = || {
        Error::value(
            "checkpoint_sequential",
            format!(
                "no segmentation of the {n} layers fits budget_bytes={budget} under the \
                 planner's model (bytes kept by earlier layers plus one segment's recompute, \
                 plus {transient} bytes of gradient buffers); the plain run needs about {} \
                 bytes and the largest layer alone {largest}; give a larger budget",
                prefix[n] + transient
            ),
        )
    };
    if transient >= budget {
        return Err(no_fit());
    }
    let room = budget - transient;
    // dp[i][k]: least recompute covering layers [0, i) with k buckets kept by them (rounded
    // up, so the model never under-counts); back[i][k]: where the last run started and
    // whether it was checkpointed.
    let bucket = (room / BUCKETS).max(1);
    let q = |b: usize| b.div_ceil(bucket);
    let qmax = (room / bucket).min(BUCKETS);
    const INF: usize = usize::MAX;
    let mut dp = vec![vec![INF; qmax + 1]; n + 1];
    let mut back = vec![vec![(0usize, false); qmax + 1]; n + 1];
    dp[0][0] = 0;
    for i in 0..n {
        for k in 0..=qmax {
            let cur = dp[i][k];
            if cur == INF {
                continue;
            }
            // A plain layer: kept until its backward.
            let nk = k + q(costs[i].saved);
            if nk <= qmax && cur < dp[i + 1][nk] {
                dp[i + 1][nk] = cur;
                back[i + 1][nk] = (i, false);
            }
            // A checkpointed segment [i, j): keeps its input; its backward re-materialises
            // its layers while everything kept before it is still alive (later runs are
            // already freed by then).
            let nk = k + q(input_of(i));
            if nk > qmax {
                continue;
            }
            for j in i + 1..=n {
                let w = window(i, j);
                if nk * bucket + w > room {
                    break;
                }
                let cost = cur + w;
                if cost < dp[j][nk] {
                    dp[j][nk] = cost;
                    back[j][nk] = (i, true);
                }
            }
        }
    }
    let (k_best, &cost) = dp[n]
        .iter()
        .enumerate()
        .filter(|(_, &c)| c != INF)
        .min_by_key(|(_, &c)| c)
        .ok_or_else(no_fit)?;
    let mut segments = Vec::new();
    let (mut i, mut k) = (n, k_best);
    while i > 0 {
        let (s, ck) = back[i][k];
        k -= if ck {
            q(input_of(s))
        } else {
            q(costs[s].saved)
        };
        segments.push(PlanSegment {
            start: s,
            end: i,
            checkpointed: ck,
        });
        i = s;
    }
    segments.reverse();
    // Merge adjacent plain layers into one run.
    let mut merged: Vec<PlanSegment> = Vec::new();
    for s in segments {
        match merged.last_mut() {
            Some(last) if !last.checkpointed && !s.checkpointed => last.end = s.end,
            _ => merged.push(s),
        }
    }
    // The modelled figures of the chosen plan, in bytes.
    let (mut kept, mut peak) = (0usize, 0usize);
    for s in &merged {
        if s.checkpointed {
            kept += input_of(s.start);
            peak = peak.max(kept + window(s.start, s.end));
        } else {
            kept += window(s.start, s.end);
        }
    }
    Ok(Plan {
        segments: merged,
        kept_bytes: kept,
        peak_bytes: peak.max(kept) + transient,
        recompute_bytes: cost,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uniform(n: usize) -> Vec<LayerCost> {
        vec![
            LayerCost {
                saved: 100,
                output: 100
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
        PlanSegment {
            start,
            end,
            checkpointed,
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
    fn an_impossible_budget_is_a_clear_error() {
        let e = plan_budget(&uniform(8), 100, 150).unwrap_err();
        assert!(e.to_string().contains("budget_bytes=150"), "{e}");
    }
}
