//! PyTorch's autocast op lists, per device, by remat's op names (the names ops and composite
//! entries give [`autocast::op_entry`](super::autocast::op_entry)).
//!
//! They follow `aten/src/ATen/autocast_mode.cpp` of PyTorch 2.x and were checked against
//! `torch.autocast` itself, op by op (`tests/amp/test_autocast_lists.py` does so whenever
//! PyTorch is installed). On the CPU PyTorch keeps softmax, norms, sums and exp/log in the
//! input's dtype (its bf16 CPU kernels accumulate in float32 inside), so they are in no CPU
//! list; on CUDA they run in float32.

/// How an op in one of the lists casts its floating-point inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CastPolicy {
    /// To the device's autocast dtype (bfloat16 or float16).
    LowerPrecision,
    /// To float32.
    Float32,
    /// To the widest float among them (and at least the autocast dtype).
    Promote,
}

/// One device's three lists.
pub struct OpLists {
    /// Ops cast to the device's autocast dtype.
    pub lower_precision: &'static [&'static str],
    /// Ops cast to float32 (besides the losses, float32 on every device).
    pub float32: &'static [&'static str],
    /// Ops cast to the widest float of their inputs.
    pub promote: &'static [&'static str],
}

impl OpLists {
    /// The list `name` is in, if any.
    pub fn policy(&self, name: &str) -> Option<CastPolicy> {
        if self.lower_precision.contains(&name) {
            Some(CastPolicy::LowerPrecision)
        } else if LOSSES.contains(&name) || self.float32.contains(&name) {
            Some(CastPolicy::Float32)
        } else if self.promote.contains(&name) {
            Some(CastPolicy::Promote)
        } else {
            None
        }
    }
}

/// Matrix products, convolutions, recurrent layers and attention: where lower precision is
/// fast and accumulates in float32 inside (both devices).
const LOWER_PRECISION: &[&str] = &[
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
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "prelu",
    "scaled_dot_product_attention",
    "lstm_layer",
    "gru_layer",
    "rnn_layer",
];

/// The losses: float32 on both devices.
pub const LOSSES: &[&str] = &[
    "cross_entropy",
    "nll_loss",
    "mse_loss",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "binary_cross_entropy_with_logits",
    "kl_div",
];

/// The CPU's lists (PyTorch's `AutocastCPU` kernels).
pub static CPU: OpLists = OpLists {
    lower_precision: LOWER_PRECISION,
    float32: &[
        "binary_cross_entropy",
        "prod",
        "trace",
        "reflection_pad",
        "replication_pad",
        "max_pool3d",
        "avg_pool3d",
        "adaptive_avg_pool3d",
    ],
    promote: &["cat", "stack"],
};

/// CUDA's lists (PyTorch's `AutocastCUDA` kernels).
pub static CUDA: OpLists = OpLists {
    lower_precision: LOWER_PRECISION,
    float32: &[
        "softmax",
        "log_softmax",
        "causal_softmax",
        "layer_norm",
        "group_norm",
        "rms_norm",
        "norm",
        "sum",
        "cumsum",
        "prod",
        "logsumexp",
        "exp",
        "expm1",
        "log",
        "log2",
        "log10",
        "log1p",
        "pow",
        "reciprocal",
        "rsqrt",
        "sinh",
        "cosh",
        "tan",
        "asin",
        "acos",
        "softplus",
        "interpolate",
    ],
    promote: &["addcmul", "addcdiv", "atan2", "scatter_add", "index_put"],
};
