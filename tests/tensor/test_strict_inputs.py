"""Inputs PyTorch refuses are refused, with remat's typed errors naming the op: a string given
to ``to()`` is always a device (``tensor.to("int32")`` is an unknown device, not a cast, for
tensors and modules), and ``cross_entropy`` takes class indices of the batch's shape only
(an ``(N, 1)`` target is PyTorch's "multi-target not supported"). Several ``...`` in one index
stay accepted: PyTorch 2.15 accepts them too (``t[..., 0, ...]`` is ``t[..., 0]``), see
``test_advanced_indexing.py``."""

from __future__ import annotations

import numpy as np
import pytest

import remat
import remat.nn.functional as F
from remat import nn


@pytest.mark.parametrize("name", ["int32", "float64", "float32", "int64", "bool", "f4", "gpu"])
def test_a_string_given_to_tensor_to_is_a_device(name):
    t = remat.ones(2, 2)
    with pytest.raises(remat.DeviceError, match=f"{name}"):
        t.to(name)
    with pytest.raises(RuntimeError):  # DeviceError is a RuntimeError, as PyTorch raises
        t.to(name)


def test_dtype_objects_and_device_strings_still_convert():
    t = remat.ones(2, 2)
    assert t.to(remat.int32).dtype == remat.int32
    assert t.to(np.float64).dtype == remat.float64
    assert t.to("cpu").device == "cpu"
    assert t.to("cpu", remat.float64).dtype == remat.float64
    assert t.to(dtype=remat.float64).dtype == remat.float64


@pytest.mark.parametrize("name", ["int32", "float64"])
def test_a_string_given_to_module_to_is_a_device(name):
    lin = nn.Linear(2, 2)
    with pytest.raises(remat.DeviceError, match=f"Module.to.*{name}"):
        lin.to(name)
    assert lin.weight.dtype == remat.float32  # unchanged
    assert lin.to(remat.float64).weight.dtype == remat.float64
    with pytest.raises(TypeError, match="floating point"):
        lin.to(remat.int32)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_refuses_an_n_by_1_target(reduction):
    logits = remat.randn(3, 4)
    target = remat.tensor([[1], [2], [0]])
    with pytest.raises(remat.ShapeError, match=r"cross_entropy.*\(3, 4\).*\(3,\).*\(3, 1\)"):
        F.cross_entropy(logits, target, reduction=reduction)
    with pytest.raises(remat.ShapeError):
        nn.CrossEntropyLoss()(logits, target)
    assert F.cross_entropy(logits, target[:, 0], reduction=reduction).shape == (
        (3,) if reduction == "none" else ()
    )


def test_several_ellipses_match_pytorch():
    a = np.arange(24.0).reshape(2, 3, 4)
    t = remat.tensor(a)
    assert t[..., 0, ...].shape == (2, 3)
    np.testing.assert_array_equal(t[..., 0, ...].numpy(), a[..., 0])
