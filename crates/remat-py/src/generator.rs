//! `remat.Generator` (a private random stream, as `torch.Generator`) and `remat.initial_seed`.
//! Ops that draw random numbers take `generator=`; they then draw from it under
//! `remat_core::Generator::run`, and the global generator is left alone.

use crate::tensor::{wrap, PyTensor};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use remat_core::rng::RngState;
use remat_core::Tensor;
use std::sync::Arc;

/// A random stream of its own: `Generator().manual_seed(0)`; pass it as `generator=` to
/// `randn`, `rand`, `randint`, `rand_like`, `randn_like`, `Tensor.normal_`/`uniform_` (and
/// DataLoader/`random_split`). `get_state()` is an int64 tensor `[seed, offset]`.
#[pyclass(name = "Generator", module = "remat", frozen)]
pub struct PyGenerator {
    inner: Arc<remat_core::Generator>,
}

/// Run `f` drawing from `generator` (the global stream when None).
pub fn drawing<R>(generator: Option<&Bound<'_, PyGenerator>>, f: impl FnOnce() -> R) -> R {
    match generator {
        Some(g) => g.get().inner.run(f),
        None => f(),
    }
}

fn seed_of(seed: i128) -> u64 {
    seed as u64
}

#[pymethods]
impl PyGenerator {
    #[new]
    #[pyo3(signature = (device=None))]
    fn new(device: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let d: String = match device {
            Some(d) if !d.is_none() => d.str()?.extract()?,
            _ => "cpu".to_owned(),
        };
        if d != "cpu" && !d.starts_with("cuda") {
            return Err(PyRuntimeError::new_err(format!(
                "Generator: unknown device {d:?} (expected \"cpu\" or \"cuda\")"
            )));
        }
        Ok(PyGenerator {
            inner: Arc::new(remat_core::Generator::default()),
        })
    }

    /// Restart the stream from `seed`; returns the generator.
    fn manual_seed(slf: Bound<'_, Self>, seed: i128) -> Bound<'_, Self> {
        slf.get().inner.manual_seed(seed_of(seed));
        slf
    }

    /// Seed from the operating system's entropy; returns the seed.
    fn seed(&self) -> PyResult<u64> {
        let mut b = [0u8; 8];
        getrandom(&mut b)?;
        let s = u64::from_le_bytes(b) >> 1;
        self.inner.manual_seed(s);
        Ok(s)
    }

    /// The seed the stream started from.
    fn initial_seed(&self) -> u64 {
        self.inner.state().seed
    }

    /// The stream's position: an int64 tensor `[seed, offset]`.
    fn get_state(&self) -> PyResult<PyTensor> {
        let st = self.inner.state();
        let v = vec![st.seed as i64, st.offset as i64];
        Tensor::from_vec(v, &[2])
            .map(wrap)
            .map_err(crate::errors::to_pyerr)
    }

    /// Move the stream to a position from `get_state()`; returns the generator.
    fn set_state<'py>(
        slf: Bound<'py, Self>,
        state: PyRef<'_, PyTensor>,
    ) -> PyResult<Bound<'py, Self>> {
        let v: Vec<i64> = state.inner.try_to_vec().map_err(crate::errors::to_pyerr)?;
        if v.len() != 2 || state.inner.dtype().is_float() {
            return Err(PyValueError::new_err(
                "Generator.set_state: expected the int64 tensor [seed, offset] of get_state()",
            ));
        }
        slf.get().inner.set_state(RngState {
            seed: v[0] as u64,
            offset: v[1] as u64,
        });
        Ok(slf)
    }

    /// Always the CPU: the counter-based stream serves every device.
    #[getter]
    fn device<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        py.import("remat._device")?
            .getattr("device")?
            .call1(("cpu",))
    }
}

/// Bytes from the OS (for `Generator.seed()`), through Python's `os.urandom`.
fn getrandom(buf: &mut [u8]) -> PyResult<()> {
    Python::with_gil(|py| {
        let b: Vec<u8> = py
            .import("os")?
            .getattr("urandom")?
            .call1((buf.len(),))?
            .extract()?;
        buf.copy_from_slice(&b);
        Ok(())
    })
}

/// The seed of the global stream (the last `manual_seed`).
#[pyfunction]
fn initial_seed() -> u64 {
    remat_core::initial_seed()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyGenerator>()?;
    m.add_function(wrap_pyfunction!(initial_seed, m)?)
}
