//! What one in-place update computes at each element ([`Update`]) and from which operand
//! ([`Src`]): one description for both devices' kernels.

use crate::rng::{self, RngState};
use crate::tensor::Tensor;

/// The new value of each destination element from its old value `x` and the operand's
/// (broadcast) value `v`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Update {
    /// `x + a v` (`add_`; `sub_` is `a = -alpha`).
    Axpy(f64),
    /// `x v`.
    Mul,
    /// `x / v`.
    Div,
    /// `v` (`copy_`, `fill_`, `t[idx] = v`).
    Set,
    /// `max(x, v)`, NaN in either propagating (the clamp rows' formula).
    ClampMin,
    /// `min(x, v)`, NaN in either propagating.
    ClampMax,
    /// `value` where the mask `v` is nonzero, else `x`.
    MaskedFill(f64),
    /// `0` where `x < 0`, else `x` (the ReLU row's formula; NaN and -0 kept).
    Relu,
    /// `x` where `x > 0`, else `v x` (the leaky ReLU row's formula, `v` the slope).
    LeakyRelu,
    /// A normal draw `mean + std n`, element `i` (C order) from counter `i` of `key`.
    Normal { mean: f64, std: f64, key: RngState },
    /// A uniform draw in `[low, high)`, as `rand` draws it.
    Uniform { low: f64, high: f64, key: RngState },
    /// An exponential draw of rate `lambd`, `-ln(1 - u) / lambd` with `u` as `rand` draws it.
    Exponential { lambd: f64, key: RngState },
    /// A Bernoulli draw, 1 when `u < p` (with `u` as `rand` draws it), else 0.
    Bernoulli { p: f64, key: RngState },
}

impl Update {
    /// The random value of element `i` (C order) of a draw; the same numbers `randn`/`rand`
    /// give for the same generator key, on every device.
    #[inline(always)]
    pub(crate) fn sample(self, i: u64) -> f64 {
        match self {
            Update::Normal { mean, std, key } => mean + std * rng::normal(key, i),
            Update::Uniform { low, high, key } => low + (high - low) * rng::uniform(key, i),
            Update::Exponential { lambd, key } => -(-rng::uniform(key, i)).ln_1p() / lambd,
            Update::Bernoulli { p, key } => f64::from(u8::from(rng::uniform(key, i) < p)),
            _ => 0.0,
        }
    }

    /// Whether the update is a random fill (no operand; the values come from [`Self::sample`]).
    pub(crate) fn is_random(self) -> bool {
        matches!(
            self,
            Update::Normal { .. }
                | Update::Uniform { .. }
                | Update::Exponential { .. }
                | Update::Bernoulli { .. }
        )
    }
}

/// The operand of an update, already checked against the destination (broadcastable to its
/// shape, on its device).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Src<'a> {
    /// No operand (random fills).
    None,
    /// A number, converted to the destination's dtype.
    Scalar(f64),
    /// A tensor broadcast to the destination's shape (any float dtype).
    Tensor(&'a Tensor),
}
