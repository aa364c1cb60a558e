//! Selective checkpointing: which op outputs a checkpoint segment keeps from its forward
//! (PyTorch's `CheckpointPolicy`, JAX's `checkpoint_policies`).
//!
//! Inside a segment with a policy, every op run through `apply` is numbered in order; the
//! policy sees each op's name and output and may keep that output. The recompute numbers its
//! ops the same way and, for a kept number, takes the kept output instead of running the op,
//! so a saved matmul is never recomputed while the cheap ops around it are. Outputs are kept
//! by reference (no copy); `MustOffload` keeps a device output as a host copy, brought back
//! when the recompute needs it. Kept outputs are released once the recompute has run.
//! A tensor tagged with [`checkpoint_name`](crate::ops::checkpoint_name()) is seen under its tag
//! (the policy's `op` is the tag, and [`PolicyQuery::tag`] is set).

use crate::error::Result;
use crate::tensor::Tensor;
use crate::tensor_data::TensorData;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;

/// What a policy decides for one op output (PyTorch's `CheckpointPolicy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckpointPolicy {
    /// Keep the output; the recompute does not run the op.
    MustSave,
    /// Keep the output (PyTorch lets a compiler override this; remat keeps it).
    PreferSave,
    /// Do not keep it: the recompute runs the op again.
    MustRecompute,
    /// Do not keep it.
    PreferRecompute,
    /// Keep it in host memory (a device output is copied to the host; CPU outputs are kept
    /// as they are).
    MustOffload,
}

impl CheckpointPolicy {
    /// Whether the output is kept.
    pub fn keeps(self) -> bool {
        matches!(
            self,
            CheckpointPolicy::MustSave
                | CheckpointPolicy::PreferSave
                | CheckpointPolicy::MustOffload
        )
    }
}

/// One op output offered to a policy.
pub struct PolicyQuery<'a> {
    /// The op's name (`"matmul"`, `"linear"`, `"conv2d"`, ...), or the tag of a
    /// `checkpoint_name` op.
    pub op: &'a str,
    /// The tag when the op is `checkpoint_name(x, tag)`.
    pub tag: Option<&'a str>,
    /// The op's output.
    pub output: &'a Tensor,
}

/// A user-defined policy.
pub type PolicyFn = Arc<dyn Fn(&PolicyQuery<'_>) -> Result<CheckpointPolicy> + Send + Sync>;

/// Which op outputs a checkpoint keeps.
#[derive(Clone)]
pub enum SavePolicy {
    /// Keep every op output (no recompute at all; the most memory).
    EverythingSaveable,
    /// Keep nothing (the default: the whole function is recomputed).
    NothingSaveable,
    /// Keep the outputs of matrix products, linear layers, convolutions and attention
    /// ([`DOT_OPS`]: `scaled_dot_product_attention`'s output with its log-sum-exps); recompute
    /// the cheap ops around them (and, on the math path of mixed dtypes, attention's `T²`
    /// weights, `"attention_scores"` and the softmax: cheap to recompute, the largest
    /// activation of a transformer).
    DotsSaveable,
    /// Keep only the tensors tagged with one of these names by `checkpoint_name`.
    SaveOnlyTheseNames(Vec<String>),
    /// Keep the tensors tagged with one of these names in host memory.
    OffloadTheseNames(Vec<String>),
    /// Ask a function for each op output.
    Custom(PolicyFn),
}

impl std::fmt::Debug for SavePolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SavePolicy::EverythingSaveable => f.write_str("everything_saveable"),
            SavePolicy::NothingSaveable => f.write_str("nothing_saveable"),
            SavePolicy::DotsSaveable => f.write_str("dots_saveable"),
            SavePolicy::SaveOnlyTheseNames(n) => write!(f, "save_only_these_names{n:?}"),
            SavePolicy::OffloadTheseNames(n) => write!(f, "offload_these_names{n:?}"),
            SavePolicy::Custom(_) => f.write_str("custom policy"),
        }
    }
}

/// The ops whose outputs `DotsSaveable` keeps.
pub const DOT_OPS: &[&str] = &[
    "matmul",
    "mm",
    "bmm",
    "addmm",
    "baddbmm",
    "linear",
    "einsum",
    "conv1d",
    "conv2d",
    "conv3d",
    "scaled_dot_product_attention",
];

impl SavePolicy {
    /// The decision for one op output.
    pub fn decide(&self, q: &PolicyQuery<'_>) -> Result<CheckpointPolicy> {
        let keep = |yes: bool| {
            if yes {
                CheckpointPolicy::MustSave
            } else {
                CheckpointPolicy::PreferRecompute
            }
        };
        let named = |names: &[String]| q.tag.is_some_and(|t| names.iter().any(|n| n == t));
        Ok(match self {
            SavePolicy::EverythingSaveable => CheckpointPolicy::MustSave,
            SavePolicy::NothingSaveable => CheckpointPolicy::PreferRecompute,
            SavePolicy::DotsSaveable => keep(DOT_OPS.contains(&q.op)),
            SavePolicy::SaveOnlyTheseNames(names) => keep(named(names)),
            SavePolicy::OffloadTheseNames(names) => {
                if named(names) {
                    CheckpointPolicy::MustOffload
                } else {
                    CheckpointPolicy::PreferRecompute
                }
            }
            SavePolicy::Custom(f) => f(q)?,
        })
    }
}

/// An output kept by a segment's forward: its data, and for an offloaded device output the
/// device to bring it back to.
#[derive(Clone)]
pub(crate) struct Kept {
    data: TensorData,
    device: Option<crate::Device>,
    /// The storage's version when kept: an output written in place since must not be
    /// handed to the recompute (its backward would see other values).
    version: u64,
}

impl Kept {
    /// The output as the recompute must see it (copied back to its device if offloaded).
    pub(crate) fn restore(&self, who: &str) -> Result<TensorData> {
        crate::autograd::saved::check(&self.data, self.version, who)?;
        match self.device {
            None => Ok(self.data.clone()),
            Some(d) => {
                let host = Tensor::from_data(self.data.clone());
                Ok(crate::ops::to_device(&host, d)?.data().clone())
            }
        }
    }
}

/// What the recompute finds for one op number.
pub(crate) enum KeptLookup {
    /// Nothing: run the op.
    Run,
    /// The forward kept its output: take it instead of running the op.
    Output(TensorData),
    /// The op whose saves end an early-stopping recompute, and none of them is its output:
    /// its inputs are all the backward needs, so the op need not run at all.
    LastSaver,
}

/// The outputs one segment's forward kept, by op number; shared with its recompute.
#[derive(Default)]
pub(crate) struct KeptOutputs {
    map: Mutex<HashMap<usize, Kept>>,
    last_saver: Mutex<Option<usize>>,
}

impl KeptOutputs {
    /// Keep `out` (op number `i`) as `decision` says.
    pub(crate) fn offer(&self, i: usize, out: &Tensor, decision: CheckpointPolicy) -> Result<()> {
        if !decision.keeps() {
            return Ok(());
        }
        let offload =
            decision == CheckpointPolicy::MustOffload && out.device() != crate::Device::Cpu;
        let kept = if offload {
            let data = crate::ops::to_device(out, crate::Device::Cpu)?
                .data()
                .clone();
            let version = data.storage.version();
            Kept {
                data,
                device: Some(out.device()),
                version,
            }
        } else {
            Kept {
                data: out.data().clone(),
                device: None,
                version: out.data().storage.version(),
            }
        };
        self.map.lock().insert(i, kept);
        Ok(())
    }

    /// The output kept for op number `i`, if any.
    pub(crate) fn get(&self, i: usize) -> Option<Kept> {
        self.map.lock().get(&i).cloned()
    }

    /// What the recompute does for op number `i`.
    pub(crate) fn lookup(&self, i: usize, who: &str) -> Result<KeptLookup> {
        if *self.last_saver.lock() == Some(i) {
            return Ok(KeptLookup::LastSaver);
        }
        match self.get(i) {
            Some(k) => k.restore(who).map(KeptLookup::Output),
            None => Ok(KeptLookup::Run),
        }
    }

    /// The forward is over and its recompute will stop early: op number `stop` and after are
    /// never reached (their kept outputs go), and `last_saver`, when given, need not run.
    pub(crate) fn end_at(&self, stop: usize, last_saver: Option<usize>) {
        let mut map = self.map.lock();
        map.retain(|&i, _| i < stop && Some(i) != last_saver);
        *self.last_saver.lock() = last_saver;
    }

    /// Release every kept output (the recompute has run; a second one runs every op).
    pub(crate) fn clear(&self) {
        self.map.lock().clear();
        *self.last_saver.lock() = None;
    }
}
