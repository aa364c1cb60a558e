//! Memory statistics, CUDA queries, seeding and the CPU thread count: thin wrappers over
//! remat-core.

use crate::args;
use crate::errors::CoreResultExt;
use pyo3::prelude::*;

/// The bytes of tensor storage alive on `device` now.
///
/// Counts every live storage: tensors you hold, parameters, gradients, the tensors a graph
/// saved for backward, and NumPy arrays shared with ``from_numpy``. Views share their base's
/// storage and add nothing. Asking about ``"cuda"`` works without a GPU (the count is then
/// 0).
///
/// Parameters
/// ----------
/// device : str or device, optional
///     ``"cpu"``, ``"cuda"`` or ``"cuda:N"``. Default: ``None`` (the CPU).
///
/// Returns
/// -------
/// int
///     The live bytes.
///
/// Raises
/// ------
/// DeviceError
///     When `device` is not a known device name.
///
/// Examples
/// --------
/// >>> before = remat.memory_allocated()
/// >>> x = remat.zeros(256)
/// >>> remat.memory_allocated() - before
/// 1024
/// >>> del x
/// >>> remat.memory_allocated() - before
/// 0
#[pyfunction]
#[pyo3(signature = (device=None))]
fn memory_allocated(device: Option<&Bound<'_, PyAny>>) -> PyResult<usize> {
    Ok(remat_core::memory_allocated(args::device(device)?))
}

/// The highest ``memory_allocated(device)`` since the start or the last
/// ``reset_peak_memory_stats``.
///
/// Parameters
/// ----------
/// device : str or device, optional
///     ``"cpu"``, ``"cuda"`` or ``"cuda:N"``. Default: ``None`` (the CPU).
///
/// Returns
/// -------
/// int
///     The peak of live bytes.
///
/// Raises
/// ------
/// DeviceError
///     When `device` is not a known device name.
///
/// Examples
/// --------
/// >>> remat.reset_peak_memory_stats()
/// >>> base = remat.max_memory_allocated()
/// >>> y = remat.ones(1024)
/// >>> del y
/// >>> remat.max_memory_allocated() - base
/// 4096
#[pyfunction]
#[pyo3(signature = (device=None))]
fn max_memory_allocated(device: Option<&Bound<'_, PyAny>>) -> PyResult<usize> {
    Ok(remat_core::max_memory_allocated(args::device(device)?))
}

/// Reset the peak counter of `device` (``max_memory_allocated``) to the current live bytes.
///
/// The eviction counters of ``memory_stats`` are left alone.
///
/// Parameters
/// ----------
/// device : str or device, optional
///     ``"cpu"``, ``"cuda"`` or ``"cuda:N"``. Default: ``None`` (the CPU).
///
/// Returns
/// -------
/// None
///
/// Raises
/// ------
/// DeviceError
///     When `device` is not a known device name.
///
/// Examples
/// --------
/// >>> remat.reset_peak_memory_stats()
/// >>> remat.max_memory_allocated() == remat.memory_allocated()
/// True
#[pyfunction]
#[pyo3(signature = (device=None))]
fn reset_peak_memory_stats(device: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
    remat_core::reset_peak_memory_stats(args::device(device)?);
    Ok(())
}

/// A limit argument: None, a byte count, or a string such as "8MB".
fn limit_bytes(limit: Option<&Bound<'_, PyAny>>) -> PyResult<Option<usize>> {
    let Some(limit) = limit.filter(|l| !l.is_none()) else {
        return Ok(None);
    };
    if let Ok(text) = limit.extract::<String>() {
        return remat_core::dtr::parse_bytes(&text).map(Some).py();
    }
    if limit.is_instance_of::<pyo3::types::PyBool>() {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "set_memory_limit: expected a byte count, a string such as \"8MB\", or None; got \
             a bool",
        ));
    }
    match limit.extract::<i128>() {
        Ok(n) if n >= 0 => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
        Ok(n) => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "set_memory_limit: the limit must be at least 0 bytes, got {n}"
        ))),
        Err(_) => Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "set_memory_limit: expected a byte count, a string such as \"8MB\", or None; got \
             {}",
            limit.get_type().name()?
        ))),
    }
}

/// Cap the live tensor bytes of `device`; ``None`` removes the cap.
///
/// The cap covers everything ``memory_allocated(device)`` counts, parameters included. While
/// it is set, ops evict recomputable tensors (saved activations that a graph can rebuild) to
/// stay under it and rebuild them when needed; an allocation that still does not fit raises
/// ``MemoryError``, naming the smallest limit that would work. Strings take the units B,
/// K/KB/KiB, M/MB/MiB, G/GB/GiB and T/TB/TiB (any case), all powers of 1024: ``"8MB"`` is
/// 8 * 2**20 bytes.
/// ``remat.memory_limit`` sets a limit for a ``with`` block only.
///
/// Parameters
/// ----------
/// limit : int, str or None
///     The cap in bytes (``1000000``), as a string (``"512KB"``, ``"8MB"``, ``"1.5GB"``), or
///     ``None`` for no cap.
/// device : str or device, optional
///     ``"cpu"``, ``"cuda"`` or ``"cuda:N"``. Default: ``None`` (the CPU).
///
/// Returns
/// -------
/// None
///
/// Raises
/// ------
/// ValueError
///     When `limit` is negative or a string that is not a byte count.
/// TypeError
///     When `limit` is neither an int, a string nor ``None`` (a bool or a float, say).
/// DeviceError
///     When `device` is not a known device name.
///
/// Examples
/// --------
/// >>> remat.set_memory_limit("8MB")
/// >>> remat.get_memory_limit()
/// 8388608
/// >>> remat.set_memory_limit(None)
/// >>> remat.get_memory_limit() is None
/// True
#[pyfunction]
#[pyo3(signature = (limit, device=None))]
fn set_memory_limit(
    limit: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<()> {
    let limit = limit_bytes(limit)?;
    remat_core::set_memory_limit(args::device(device)?, limit);
    Ok(())
}

/// The cap on `device`'s live tensor bytes that ``set_memory_limit`` set, or ``None``.
///
/// Parameters
/// ----------
/// device : str or device, optional
///     ``"cpu"``, ``"cuda"`` or ``"cuda:N"``. Default: ``None`` (the CPU).
///
/// Returns
/// -------
/// int or None
///     The limit in bytes, or ``None`` when there is none.
///
/// Raises
/// ------
/// DeviceError
///     When `device` is not a known device name.
///
/// Examples
/// --------
/// >>> remat.set_memory_limit(4096)
/// >>> remat.get_memory_limit()
/// 4096
/// >>> remat.set_memory_limit(None)
/// >>> remat.get_memory_limit() is None
/// True
#[pyfunction]
#[pyo3(signature = (device=None))]
fn get_memory_limit(device: Option<&Bound<'_, PyAny>>) -> PyResult<Option<usize>> {
    Ok(remat_core::get_memory_limit(args::device(device)?))
}

/// Cap `device`'s live bytes at what is live now plus `bytes` until the next backward pass
/// ends (softly: what cannot be evicted goes over it). Set by a module whose
/// ``auto_checkpoint`` plan runs it under dynamic rematerialisation, when its forward starts.
/// Does nothing while ``set_memory_limit`` has set a limit; returns whether it set the cap.
#[pyfunction]
#[pyo3(signature = (bytes, device=None))]
fn _cap_until_backward(bytes: usize, device: Option<&Bound<'_, PyAny>>) -> PyResult<bool> {
    Ok(remat_core::dtr::cap_until_backward(
        args::device(device)?,
        bytes,
    ))
}

/// Live and peak bytes, the limit, and the eviction counters of `device`, as a dict.
///
/// The keys: ``"allocated"`` (``memory_allocated``), ``"peak"`` (``max_memory_allocated``),
/// ``"limit"`` (``get_memory_limit``, ``None`` when unset), ``"evictions"`` and
/// ``"evicted_bytes"`` (tensors evicted under the limit, and their bytes),
/// ``"rematerializations"`` and ``"remat_seconds"`` (rebuilds of evicted tensors, and the
/// time they took), and ``"evictable_cells"`` (evictable tensors alive now, on any device).
/// The eviction counters count since the start of the process.
///
/// The rebuild bound (see :func:`set_rebuild_bound`): ``"step_forward_seconds"`` and
/// ``"step_remat_seconds"`` (the time of a step's forward ops that made evictable tensors,
/// and of its rebuilds: the running step's, or the last one's when none runs; a step ends
/// with its outermost backward pass), ``"rebuild_bound"``,
/// ``"rebuild_stops"`` (how often the bound stopped eviction) and ``"overshoot_bytes"`` (the
/// most bytes a step's soft cap, from an ``auto_checkpoint`` plan, was gone over by: what
/// could not stay under it once eviction stopped).
///
/// Parameters
/// ----------
/// device : str or device, optional
///     ``"cpu"``, ``"cuda"`` or ``"cuda:N"``. Default: ``None`` (the CPU).
///
/// Returns
/// -------
/// dict
///     The statistics above (ints, except ``"remat_seconds"``, a float, and ``"limit"``).
///
/// Raises
/// ------
/// DeviceError
///     When `device` is not a known device name.
///
/// Examples
/// --------
/// >>> stats = remat.memory_stats()
/// >>> sorted(stats)
/// ['allocated', 'evictable_cells', 'evicted_bytes', 'evictions', 'limit', 'overshoot_bytes',
///  'peak', 'rebuild_bound', 'rebuild_stops', 'remat_seconds', 'rematerializations',
///  'step_forward_seconds', 'step_remat_seconds']
/// >>> stats["allocated"] == remat.memory_allocated()
/// True
#[pyfunction]
#[pyo3(signature = (device=None))]
fn memory_stats<'py>(
    py: Python<'py>,
    device: Option<&Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    let device = args::device(device)?;
    let s = remat_core::memory_stats(device);
    let d = pyo3::types::PyDict::new(py);
    d.set_item("allocated", s.allocated)?;
    d.set_item("peak", s.peak)?;
    d.set_item("limit", s.limit)?;
    d.set_item("evictions", s.eviction.evictions)?;
    d.set_item("evicted_bytes", s.eviction.evicted_bytes)?;
    d.set_item("rematerializations", s.eviction.rematerializations)?;
    d.set_item("remat_seconds", s.eviction.remat_seconds)?;
    d.set_item("evictable_cells", remat_core::dtr::live_cells())?;
    d.set_item("step_forward_seconds", s.step.forward_seconds)?;
    d.set_item("step_remat_seconds", s.step.rebuild_seconds)?;
    d.set_item("rebuild_bound", remat_core::dtr::rebuild_bound())?;
    d.set_item("rebuild_stops", s.step.stops)?;
    d.set_item("overshoot_bytes", s.overshoot)?;
    Ok(d)
}

/// Bound the rebuild work of dynamic rematerialisation: the tensors rebuilt in one step may
/// cost at most ``bound`` times the step's forward; returns the previous bound.
///
/// Under a memory limit, evicting and rebuilding is what pays for the memory; a limit too
/// tight for the graph would rebuild the same tensors again and again. Each step (from a
/// forward to the end of its backward pass) counts the measured time of its ops and of its
/// rebuilds (the forward is taken as at least the previous step's, and at least a
/// millisecond). Past the bound, eviction stops for the rest of the step: a hard limit
/// (``set_memory_limit``) raises ``MemoryError`` saying so, and a step's soft cap (an
/// ``auto_checkpoint`` plan) lets the step go over it and reports the overshoot in
/// ``memory_stats()["overshoot_bytes"]``.
///
/// Parameters
/// ----------
/// bound : float or None
///     The largest ratio of rebuild time to forward time (positive; ``None`` or
///     ``float("inf")``: no bound). The default is 10.
///
/// Returns
/// -------
/// float
///     The bound before the call.
///
/// Raises
/// ------
/// ValueError
///     When `bound` is not positive (or is NaN).
///
/// Examples
/// --------
/// >>> previous = remat.set_rebuild_bound(4.0)
/// >>> previous, remat.get_rebuild_bound()
/// (10.0, 4.0)
/// >>> remat.set_rebuild_bound(previous)
/// 4.0
#[pyfunction]
fn set_rebuild_bound(bound: Option<f64>) -> PyResult<f64> {
    let bound = bound.unwrap_or(f64::INFINITY);
    if bound.is_nan() || bound <= 0.0 {
        return Err(crate::errors::to_pyerr(remat_core::Error::value(
            "set_rebuild_bound",
            format!("the bound must be a positive number of forwards, got {bound}"),
        )));
    }
    Ok(remat_core::dtr::set_rebuild_bound(bound))
}

/// The bound of :func:`set_rebuild_bound`: how many forwards' time a step's rebuilds may
/// cost under a memory limit.
///
/// Returns
/// -------
/// float
///     The bound (``inf`` when unbounded; 10 unless changed).
///
/// Raises
/// ------
/// None
///     Nothing is raised.
///
/// Examples
/// --------
/// >>> remat.get_rebuild_bound()
/// 10.0
#[pyfunction]
fn get_rebuild_bound() -> f64 {
    remat_core::dtr::rebuild_bound()
}

/// Whether a usable CUDA device exists.
#[pyfunction]
fn cuda_is_available() -> bool {
    remat_core::cuda::is_available()
}

/// Number of usable CUDA devices.
#[pyfunction]
fn cuda_device_count() -> usize {
    remat_core::cuda::device_count()
}

/// Wait for queued GPU work (GIL released while waiting).
#[pyfunction]
fn cuda_synchronize(py: Python<'_>) -> PyResult<()> {
    py.allow_threads(remat_core::cuda::synchronize).py()
}

/// Return cached device blocks and pooled pinned host blocks to the driver (GIL released).
#[pyfunction]
fn cuda_empty_cache(py: Python<'_>) -> PyResult<()> {
    py.allow_threads(remat_core::cuda::empty_cache).py()
}

/// Seed the global random stream, which every random op draws from by default.
///
/// That is ``randn``, ``rand``, ``randint``, ``*_like``, ``dropout``, ``Tensor.normal_``/
/// ``uniform_`` and the ``remat.nn.init`` functions (a ``remat.Generator`` passed as
/// ``generator=`` is separate). The same seed gives the same numbers. The seed is taken modulo
/// 2**64, so negative seeds wrap. Unlike PyTorch, nothing is returned. Inside a checkpoint
/// recompute it seeds the replay stream instead.
///
/// Parameters
/// ----------
/// seed : int
///     The seed.
///
/// Returns
/// -------
/// None
///
/// Raises
/// ------
/// TypeError
///     When `seed` is not an int.
/// OverflowError
///     When `seed` is outside the signed 128-bit range.
///
/// Examples
/// --------
/// >>> remat.manual_seed(42)
/// >>> a = remat.rand(3)
/// >>> remat.manual_seed(42)
/// >>> bool((remat.rand(3) == a).all())
/// True
/// >>> remat.initial_seed()
/// 42
#[pyfunction]
fn manual_seed(seed: i128) {
    remat_core::manual_seed(seed as u64);
}

/// Run CPU kernels on `n` threads from now on.
///
/// Parameters
/// ----------
/// n : int
///     The number of threads, at least 1.
///
/// Returns
/// -------
/// None
///
/// Raises
/// ------
/// ValueError
///     When `n` is less than 1.
/// TypeError
///     When `n` is not an int.
/// DeviceError
///     When the threads cannot be started.
///
/// Examples
/// --------
/// >>> old = remat.get_num_threads()
/// >>> remat.set_num_threads(1)
/// >>> remat.get_num_threads()
/// 1
/// >>> remat.set_num_threads(old)
#[pyfunction]
fn set_num_threads(n: i64) -> PyResult<()> {
    if n < 1 {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "set_num_threads: the number of threads must be at least 1, got {n}"
        )));
    }
    remat_core::set_num_threads(n as usize).py()
}

/// The number of threads CPU kernels run on (``set_num_threads`` changes it).
///
/// Returns
/// -------
/// int
///     The thread count, at least 1.
///
/// Raises
/// ------
/// TypeError
///     When given an argument (it takes none).
///
/// Examples
/// --------
/// >>> remat.get_num_threads() >= 1
/// True
#[pyfunction]
fn get_num_threads() -> usize {
    remat_core::get_num_threads()
}

/// The instruction sets the CPU kernels run on, for benchmark reports: ``{"simd": ...,
/// "gemm": ...}``. ``simd`` is the level of the elementwise and row kernels (``"avx512"``,
/// ``"avx2"`` or ``"baseline"``: the CPU's, capped by the environment variable
/// ``REMAT_SIMD``); ``gemm`` is what the matrix products run on (``"avx512f"``,
/// ``"avx2+fma"`` or ``"baseline"``: the CPU's, and ``"avx2+fma"`` at most in a build without
/// the ``avx512-gemm`` feature).
#[pyfunction]
fn _cpu_capability() -> std::collections::HashMap<&'static str, &'static str> {
    std::collections::HashMap::from([
        ("simd", remat_core::cpu::simd_level_name()),
        ("gemm", remat_core::cpu::gemm_isa()),
    ])
}

/// Tell the CUDA probe about this interpreter's package folders (`sys.path`), so the
/// libraries of the `nvidia-*` pip wheels are found. Runs at import, before any probe.
fn register_cuda_library_dirs(py: Python<'_>) {
    let dirs: Vec<String> = py
        .import("sys")
        .and_then(|sys| sys.getattr("path"))
        .and_then(|p| p.extract())
        .unwrap_or_default();
    let dirs: Vec<std::path::PathBuf> = dirs
        .into_iter()
        .filter(|d| !d.is_empty())
        .map(std::path::PathBuf::from)
        .collect();
    remat_core::cuda::add_library_dirs(&dirs);
}

/// Register the functions.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    register_cuda_library_dirs(m.py());
    m.add_function(wrap_pyfunction!(memory_allocated, m)?)?;
    m.add_function(wrap_pyfunction!(max_memory_allocated, m)?)?;
    m.add_function(wrap_pyfunction!(reset_peak_memory_stats, m)?)?;
    m.add_function(wrap_pyfunction!(set_memory_limit, m)?)?;
    m.add_function(wrap_pyfunction!(get_memory_limit, m)?)?;
    m.add_function(wrap_pyfunction!(_cap_until_backward, m)?)?;
    m.add_function(wrap_pyfunction!(set_rebuild_bound, m)?)?;
    m.add_function(wrap_pyfunction!(get_rebuild_bound, m)?)?;
    m.add_function(wrap_pyfunction!(memory_stats, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_is_available, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_device_count, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_synchronize, m)?)?;
    m.add_function(wrap_pyfunction!(cuda_empty_cache, m)?)?;
    m.add_function(wrap_pyfunction!(manual_seed, m)?)?;
    m.add_function(wrap_pyfunction!(set_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(get_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(_cpu_capability, m)?)?;
    Ok(())
}
