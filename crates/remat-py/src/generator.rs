//! `remat.Generator` (a private random stream, as `torch.Generator`) and `remat.initial_seed`.
//! Ops that draw random numbers take `generator=`; they then draw from it under
//! `remat_core::Generator::run`, and the global generator is left alone.

use crate::tensor::{wrap, PyTensor};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use remat_core::rng::RngState;
use remat_core::Tensor;
use std::sync::Arc;

/// A random stream of its own, as ``torch.Generator``.
///
/// Pass it as ``generator=`` to ``randn``, ``rand``, ``randint``, ``rand_like``,
/// ``randn_like``, ``Tensor.normal_``/``uniform_`` (and ``DataLoader``/``random_split``):
/// those ops then draw from it and advance it by what they drew, and the global stream
/// (``remat.manual_seed``) is left alone, so a generator seeded the same way gives the same
/// numbers whatever else runs. A new generator starts from the default seed 1592598566;
/// ``get_state()`` is the int64 tensor ``[seed, offset]``. The stream is counter based and
/// serves every device, so ``device`` is always the CPU.
///
/// Parameters
/// ----------
/// device : str or device, optional
///     ``"cpu"``, ``"cuda"`` or ``"cuda:N"``, accepted for PyTorch compatibility (no GPU is
///     needed). Default: ``None`` (``"cpu"``).
///
/// Raises
/// ------
/// RuntimeError
///     When `device` names neither the CPU nor CUDA.
///
/// Examples
/// --------
/// >>> g = remat.Generator().manual_seed(7)
/// >>> a = remat.rand(3, generator=g)
/// >>> g.get_state()
/// tensor([7, 3])
/// >>> b = remat.rand(3, generator=remat.Generator().manual_seed(7))
/// >>> bool((a == b).all())
/// True
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

    /// Restart the stream from `seed` (taken modulo 2**64); returns the generator.
    ///
    /// Parameters
    /// ----------
    /// seed : int
    ///     The seed.
    ///
    /// Returns
    /// -------
    /// Generator
    ///     This generator, so ``Generator().manual_seed(0)`` can be passed on directly.
    ///
    /// Raises
    /// ------
    /// TypeError
    ///     When `seed` is not an int.
    ///
    /// Examples
    /// --------
    /// >>> g = remat.Generator()
    /// >>> g.manual_seed(5) is g
    /// True
    /// >>> g.initial_seed()
    /// 5
    fn manual_seed(slf: Bound<'_, Self>, seed: i128) -> Bound<'_, Self> {
        slf.get().inner.manual_seed(seed_of(seed));
        slf
    }

    /// Seed the stream from the operating system's entropy (``os.urandom``); returns the seed.
    ///
    /// Returns
    /// -------
    /// int
    ///     The new seed, below 2**63.
    ///
    /// Raises
    /// ------
    /// OSError
    ///     When the operating system provides no randomness.
    ///
    /// Examples
    /// --------
    /// >>> g = remat.Generator()
    /// >>> s = g.seed()
    /// >>> g.initial_seed() == s
    /// True
    fn seed(&self) -> PyResult<u64> {
        let mut b = [0u8; 8];
        getrandom(&mut b)?;
        let s = u64::from_le_bytes(b) >> 1;
        self.inner.manual_seed(s);
        Ok(s)
    }

    /// The seed the stream started from (the last ``manual_seed`` or ``seed``).
    ///
    /// Returns
    /// -------
    /// int
    ///     The seed.
    ///
    /// Raises
    /// ------
    /// TypeError
    ///     When given an argument (it takes none).
    ///
    /// Examples
    /// --------
    /// >>> remat.Generator().manual_seed(3).initial_seed()
    /// 3
    fn initial_seed(&self) -> u64 {
        self.inner.state().seed
    }

    /// The stream's position: the int64 tensor ``[seed, offset]``, for ``set_state``.
    ///
    /// Returns
    /// -------
    /// Tensor
    ///     A new int64 tensor of shape ``(2,)``.
    ///
    /// Raises
    /// ------
    /// TypeError
    ///     When given an argument (it takes none).
    ///
    /// Examples
    /// --------
    /// >>> g = remat.Generator().manual_seed(7)
    /// >>> g.get_state()
    /// tensor([7, 0])
    fn get_state(&self) -> PyResult<PyTensor> {
        let st = self.inner.state();
        let v = vec![st.seed as i64, st.offset as i64];
        Tensor::from_vec(v, &[2])
            .map(wrap)
            .map_err(crate::errors::to_pyerr)
    }

    /// Move the stream to a position that ``get_state()`` returned; returns the generator.
    ///
    /// Parameters
    /// ----------
    /// state : Tensor
    ///     The integer tensor ``[seed, offset]``.
    ///
    /// Returns
    /// -------
    /// Generator
    ///     This generator.
    ///
    /// Raises
    /// ------
    /// ValueError
    ///     When `state` is a floating point tensor or does not have exactly two elements.
    /// TypeError
    ///     When `state` is not a Tensor.
    ///
    /// Examples
    /// --------
    /// >>> g = remat.Generator().manual_seed(7)
    /// >>> state = g.get_state()
    /// >>> a = remat.rand(2, generator=g)
    /// >>> b = remat.rand(2, generator=g.set_state(state))
    /// >>> bool((a == b).all())
    /// True
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

    /// The generator's device: always the CPU, since the counter-based stream serves every
    /// device.
    ///
    /// Examples
    /// --------
    /// >>> remat.Generator("cuda").device
    /// device(type='cpu')
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

/// The seed of the global random stream: the last ``remat.manual_seed``.
///
/// Before any ``manual_seed`` it is the default seed, 1592598566. Inside a checkpoint
/// recompute it is the seed of the replay stream.
///
/// Returns
/// -------
/// int
///     The seed, in ``[0, 2**64)`` (a negative ``manual_seed`` wraps).
///
/// Raises
/// ------
/// TypeError
///     When given an argument (it takes none).
///
/// Examples
/// --------
/// >>> remat.manual_seed(42)
/// >>> remat.initial_seed()
/// 42
/// >>> remat.manual_seed(-1)
/// >>> remat.initial_seed()
/// 18446744073709551615
#[pyfunction]
fn initial_seed() -> u64 {
    remat_core::initial_seed()
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyGenerator>()?;
    m.add_function(wrap_pyfunction!(initial_seed, m)?)
}
