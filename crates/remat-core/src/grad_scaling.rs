//! The kernel behind `GradScaler.unscale_` (PyTorch's
//! `_amp_foreach_non_finite_check_and_unscale_`): every gradient is multiplied by the inverse
//! of the loss scale in place, and the call tells whether any of them held an infinity or a
//! NaN (the step is then skipped, and the scale backs off). The bookkeeping around it (the
//! scale, its growth and backoff, per-optimizer stages) lives with the optimizers in Python.

use crate::dtype::DType;
use crate::error::{Error, Result};
use crate::grad_mode::no_grad;
use crate::ops;
use crate::tensor::Tensor;

/// Multiply each of `grads` by `inv_scale` in place; true when any element of any of them
/// was infinite or NaN before (they are all multiplied all the same, as PyTorch's kernel
/// does). float16 gradients are refused, as PyTorch refuses to unscale them: their range is
/// what loss scaling is there to protect, so they mean the parameters themselves are float16.
pub fn unscale_(grads: &[Tensor], inv_scale: f64) -> Result<bool> {
    const OP: &str = "unscale_";
    if let Some(g) = grads.iter().find(|g| g.dtype() == DType::F16) {
        return Err(Error::value(
            OP,
            format!(
                "Attempting to unscale FP16 gradients (a gradient of shape {}); keep the \
                 parameters in float32 under autocast, which casts them per op",
                crate::layout::fmt_shape(g.shape())
            ),
        ));
    }
    if let Some(g) = grads.iter().find(|g| !g.dtype().is_float()) {
        return Err(Error::dtype(
            OP,
            format!("gradients must be floating-point, got {}", g.dtype()),
        ));
    }
    let _g = no_grad();
    let mut found_inf = false;
    for g in grads {
        // x·0 is 0 for every finite x and NaN for ±inf and NaN: the sum is NaN exactly when
        // some element is not finite, and never overflows.
        let probe = ops::sum(&ops::scale(g, 0.0)?, None, false)?;
        found_inf |= probe.item()?.is_nan();
        crate::optim::copy_(g, &ops::scale(g, inv_scale)?)?;
    }
    Ok(found_inf)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(v: &[f32]) -> Tensor {
        Tensor::from_vec(v.to_vec(), &[v.len()]).unwrap()
    }

    #[test]
    fn finite_gradients_are_unscaled_and_report_no_inf() {
        let g = t(&[2.0, -4.0, 8.0]);
        assert!(!unscale_(std::slice::from_ref(&g), 0.5).unwrap());
        assert_eq!(g.to_vec::<f32>(), vec![1.0, -2.0, 4.0]);
    }

    #[test]
    fn an_infinity_or_nan_anywhere_is_found() {
        for bad in [f32::INFINITY, f32::NEG_INFINITY, f32::NAN] {
            let (a, b) = (t(&[1.0, 2.0]), t(&[3.0, bad]));
            assert!(unscale_(&[a.clone(), b], 0.25).unwrap());
            assert_eq!(a.to_vec::<f32>(), vec![0.25, 0.5]);
        }
    }

    #[test]
    fn float16_gradients_are_refused() {
        let g = ops::cast(&t(&[1.0]), DType::F16).unwrap();
        let err = unscale_(&[g], 1.0).unwrap_err().to_string();
        assert!(err.contains("unscale FP16 gradients"), "{err}");
    }
}
