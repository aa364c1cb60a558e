//! Python bindings of the optimizer kernels (`remat_core::optim`): one call updates one
//! parameter and its state tensors in place. `python/remat/optim.py` builds SGD, Adam and
//! AdamW on top; `zero_` and `copy_` serve `nn.Module.zero_grad` and `load_state_dict`.

use crate::call::{heavy, run};
use crate::tensor::PyTensor;
use pyo3::prelude::*;
use remat_core::optim;

/// One SGD step on `param` in place (PyTorch's formula); `momentum_buf` is required when
/// `momentum != 0`, and `first_step` says it holds no history yet.
#[pyfunction]
#[pyo3(signature = (param, grad, momentum_buf, first_step, lr, momentum=0.0, weight_decay=0.0, dampening=0.0, nesterov=false))]
#[allow(clippy::too_many_arguments)]
fn sgd_step(
    py: Python<'_>,
    param: PyRef<'_, PyTensor>,
    grad: PyRef<'_, PyTensor>,
    momentum_buf: Option<PyRef<'_, PyTensor>>,
    first_step: bool,
    lr: f64,
    momentum: f64,
    weight_decay: f64,
    dampening: f64,
    nesterov: bool,
) -> PyResult<()> {
    let (p, g) = (param.inner.clone(), grad.inner.clone());
    let buf = momentum_buf.map(|b| b.inner.clone());
    run(py, heavy(&[&p]), || {
        optim::sgd_step(
            &p,
            &g,
            buf.as_ref(),
            first_step,
            lr,
            momentum,
            weight_decay,
            dampening,
            nesterov,
        )
    })
}

/// One Adam (`decoupled=False`) or AdamW (`decoupled=True`) step on `param` in place
/// (PyTorch's formula); `step` counts from 1 and includes this step; `max_exp_avg_sq`
/// (amsgrad): the running maximum of `exp_avg_sq`, updated in place and used as the
/// denominator.
#[pyfunction]
#[pyo3(signature = (param, grad, exp_avg, exp_avg_sq, step, lr, beta1=0.9, beta2=0.999, eps=1e-8, weight_decay=0.0, decoupled=false, max_exp_avg_sq=None))]
#[allow(clippy::too_many_arguments)]
fn adam_step(
    py: Python<'_>,
    param: PyRef<'_, PyTensor>,
    grad: PyRef<'_, PyTensor>,
    exp_avg: PyRef<'_, PyTensor>,
    exp_avg_sq: PyRef<'_, PyTensor>,
    step: u64,
    lr: f64,
    beta1: f64,
    beta2: f64,
    eps: f64,
    weight_decay: f64,
    decoupled: bool,
    max_exp_avg_sq: Option<PyRef<'_, PyTensor>>,
) -> PyResult<()> {
    let (p, g) = (param.inner.clone(), grad.inner.clone());
    let (m, v) = (exp_avg.inner.clone(), exp_avg_sq.inner.clone());
    let vmax = max_exp_avg_sq.map(|t| t.inner.clone());
    run(py, heavy(&[&p]), || {
        optim::adam_step(
            &p,
            &g,
            &m,
            &v,
            step,
            lr,
            beta1,
            beta2,
            eps,
            weight_decay,
            decoupled,
            vmax.as_ref(),
        )
    })
}

/// Zero a tensor in place, any dtype and layout (`zero_grad(set_to_none=False)`).
#[pyfunction]
fn zero_(py: Python<'_>, t: PyRef<'_, PyTensor>) -> PyResult<()> {
    let t = t.inner.clone();
    run(py, heavy(&[&t]), || optim::zero_(&t))
}

/// Copy `src` (same shape) into `dst` in place, casting to its dtype (`load_state_dict`).
#[pyfunction]
fn copy_(py: Python<'_>, dst: PyRef<'_, PyTensor>, src: PyRef<'_, PyTensor>) -> PyResult<()> {
    let (d, s) = (dst.inner.clone(), src.inner.clone());
    run(py, heavy(&[&d]), || optim::copy_(&d, &s))
}

/// Multiply every gradient by `inv_scale` in place; whether any held an inf or NaN
/// (`GradScaler.unscale_`, `remat_core::grad_scaling`).
#[pyfunction]
fn _amp_unscale_(
    py: Python<'_>,
    grads: Vec<PyRef<'_, PyTensor>>,
    inv_scale: f64,
) -> PyResult<bool> {
    let gs: Vec<remat_core::Tensor> = grads.iter().map(|g| g.inner.clone()).collect();
    let refs: Vec<&remat_core::Tensor> = gs.iter().collect();
    run(py, heavy(&refs), || {
        remat_core::grad_scaling::unscale_(&gs, inv_scale)
    })
}

/// Register the optimizer kernels in the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(sgd_step, m)?)?;
    m.add_function(wrap_pyfunction!(adam_step, m)?)?;
    m.add_function(wrap_pyfunction!(zero_, m)?)?;
    m.add_function(wrap_pyfunction!(copy_, m)?)?;
    m.add_function(wrap_pyfunction!(_amp_unscale_, m)?)?;
    Ok(())
}
