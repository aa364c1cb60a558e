"""``remat.testing.assert_close``: PyTorch's comparison of tensors (and numbers, arrays, and
sequences or mappings of them) within tolerances chosen by dtype."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ._remat import Tensor

__all__ = ["assert_close"]

# PyTorch's default (rtol, atol) by dtype; integers and bools compare exactly.
_DEFAULT_TOLERANCES = {
    np.dtype(np.float16): (1e-3, 1e-5),
    np.dtype(np.float32): (1.3e-6, 1e-5),
    np.dtype(np.float64): (1e-7, 1e-7),
}


def _array(value: Any) -> tuple[np.ndarray, str]:
    if isinstance(value, Tensor):
        return np.asarray(value.detach().cpu().numpy()), str(value.device)
    return np.asarray(value), "cpu"


def _compare(actual: Any, expected: Any, rtol: float | None, atol: float | None,
             equal_nan: bool, check_device: bool, check_dtype: bool, path: str,
             msg: str | None) -> None:
    if isinstance(expected, Mapping) and not isinstance(expected, Tensor):
        if not isinstance(actual, Mapping) or set(actual) != set(expected):
            raise AssertionError(f"The keys of the mappings do not match{path}")
        for k in expected:
            _compare(actual[k], expected[k], rtol, atol, equal_nan, check_device, check_dtype,
                     f"{path}[{k!r}]", msg)
        return
    if isinstance(expected, Sequence) and not isinstance(expected, (str, bytes)) and not (
        isinstance(actual, (Tensor, np.ndarray))
    ):
        if not isinstance(actual, Sequence) or len(actual) != len(expected):
            raise AssertionError(f"The length of the sequences do not match{path}")
        for i, (a, e) in enumerate(zip(actual, expected)):
            _compare(a, e, rtol, atol, equal_nan, check_device, check_dtype, f"{path}[{i}]",
                     msg)
        return
    a, a_dev = _array(actual)
    e, e_dev = _array(expected)
    where = f" at item{path}" if path else ""
    if isinstance(actual, Tensor) != isinstance(expected, Tensor) and (
        isinstance(actual, Tensor) or isinstance(expected, Tensor)
    ) and not isinstance(expected, (int, float, bool)):
        raise AssertionError(
            f"Expected both inputs to be tensors{where}, got {type(actual).__name__} and "
            f"{type(expected).__name__}"
        )
    if a.shape != e.shape:
        raise AssertionError(f"The values for attribute 'shape' do not match{where}: "
                             f"{a.shape} != {e.shape}.")
    if check_dtype and isinstance(actual, Tensor) and isinstance(expected, Tensor) and (
        a.dtype != e.dtype
    ):
        raise AssertionError(f"The values for attribute 'dtype' do not match{where}: "
                             f"{actual.dtype} != {expected.dtype}.")
    if check_device and a_dev != e_dev:
        raise AssertionError(f"The values for attribute 'device' do not match{where}: "
                             f"{a_dev} != {e_dev}.")
    if (rtol is None) != (atol is None):
        raise ValueError("Both 'rtol' and 'atol' must be either specified or omitted")
    if rtol is None or atol is None:
        rtol, atol = max(_DEFAULT_TOLERANCES.get(a.dtype, (0.0, 0.0)),
                         _DEFAULT_TOLERANCES.get(e.dtype, (0.0, 0.0)))
    if a.dtype == np.bool_ or e.dtype == np.bool_:
        close = a == e
    else:
        af, ef = a.astype(np.float64), e.astype(np.float64)
        close = np.isclose(af, ef, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if not np.all(close):
        bad = int(np.size(close) - np.count_nonzero(close))
        with np.errstate(invalid="ignore", divide="ignore"):
            diff = np.abs(a.astype(np.float64) - e.astype(np.float64))
            rel = diff / np.abs(e.astype(np.float64))
        diff, rel = diff[~close], rel[~close]
        text = (
            f"Tensor-likes are not close!{where}\n\nMismatched elements: {bad} / {np.size(close)} "
            f"({100.0 * bad / max(np.size(close), 1):.1f}%)\nGreatest absolute difference: "
            f"{np.max(diff)} (up to {atol} allowed)\nGreatest relative "
            f"difference: {np.max(rel)} (up to {rtol} allowed)"
        )
        raise AssertionError(msg if msg is not None else text)


def assert_close(
    actual: Any,
    expected: Any,
    *,
    rtol: float | None = None,
    atol: float | None = None,
    equal_nan: bool = False,
    check_device: bool = True,
    check_dtype: bool = True,
    msg: str | None = None,
) -> None:
    """Raise ``AssertionError`` unless ``|actual - expected| <= atol + rtol * |expected|``
    elementwise, with matching shapes (and dtypes and devices for tensors). Without
    ``rtol``/``atol`` the tolerances are PyTorch's defaults for the dtype (float32: 1.3e-6 and
    1e-5; float64: 1e-7 and 1e-7; integers and bools exactly). Sequences and mappings are
    compared item by item.

    When the two sides have different float dtypes (``check_dtype=False``), the looser
    default tolerances of the two apply. Tensors are compared on the host. A Tensor
    ``actual`` may be compared with a Python number ``expected``; otherwise both sides must
    be Tensors or neither (a Tensor against a NumPy array or a list fails).

    Parameters
    ----------
    actual : Tensor, array, number, sequence or mapping
        The value to check.
    expected : Tensor, array, number, sequence or mapping
        The reference value.
    rtol : float, optional
        Relative tolerance; give it together with ``atol``. Default: ``None`` (by dtype).
    atol : float, optional
        Absolute tolerance; give it together with ``rtol``. Default: ``None`` (by dtype).
    equal_nan : bool, optional
        Count NaN as equal to NaN. Default: ``False``.
    check_device : bool, optional
        Require both tensors on the same device. Default: ``True``.
    check_dtype : bool, optional
        Require both tensors to have the same dtype. Default: ``True``.
    msg : str, optional
        The message of the ``AssertionError`` raised for values that are not close,
        instead of the default report. Default: ``None``.

    Returns
    -------
    None

    Raises
    ------
    AssertionError
        When the values are not close, or shapes, dtypes, devices, sequence lengths or
        mapping keys differ, or only one side is a Tensor (except a Tensor ``actual``
        against a number ``expected``).
    ValueError
        When only one of ``rtol`` and ``atol`` is given.

    Examples
    --------
    >>> from remat.testing import assert_close
    >>> assert_close(remat.tensor([1.0, 2.0]), remat.tensor([1.0, 2.000001]))
    >>> assert_close(remat.tensor([1.0, 2.0]), remat.tensor([1.0, 2.1]))
    Traceback (most recent call last):
        ...
    AssertionError: Tensor-likes are not close!
    <BLANKLINE>
    Mismatched elements: 1 / 2 (50.0%)
    Greatest absolute difference: 0.0999999046325... (up to 1e-05 allowed)
    Greatest relative difference: 0.047619004368... (up to 1.3e-06 allowed)
    >>> assert_close(remat.tensor([1.0, 2.0]), remat.tensor([1.0, 2.1]), rtol=0.0, atol=0.2)
    >>> assert_close({"w": [remat.tensor([1.0])]}, {"w": [remat.tensor([1.0])]})
    >>> assert_close(remat.tensor([1.0]), remat.tensor([1.0], dtype=remat.float64))
    Traceback (most recent call last):
        ...
    AssertionError: The values for attribute 'dtype' do not match: float32 != float64.
    """
    _compare(actual, expected, rtol, atol, equal_nan, check_device, check_dtype, "", msg)
