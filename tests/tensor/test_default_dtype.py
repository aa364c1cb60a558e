"""`set_default_dtype` / `get_default_dtype`: every place PyTorch's default float reaches
(Python floats, float constructors, module parameters, float results of integer inputs, the
`repr`), and its errors. Each test restores float32, even when it fails."""

import numpy as np
import pytest

import remat
import remat.nn as nn


@pytest.fixture
def float64_default():
    remat.set_default_dtype(remat.float64)
    try:
        yield
    finally:
        remat.set_default_dtype(remat.float32)


def test_float32_is_the_default():
    assert remat.get_default_dtype() is remat.float32
    assert remat.tensor([1.5]).dtype is remat.float32


def test_every_float_default_follows_the_setting(float64_default):
    assert remat.get_default_dtype() is remat.float64
    made = {
        "tensor": remat.tensor([1.5]), "scalar": remat.tensor(2.0),
        "zeros": remat.zeros(2), "ones": remat.ones(2), "empty": remat.empty(2),
        "full": remat.full((2,), 1.5), "rand": remat.rand(2), "randn": remat.randn(2),
        "arange": remat.arange(0.0, 2.0), "linspace": remat.linspace(0, 1, 3),
        "normal": remat.normal(0.0, 1.0, size=(2,)),
        "true_div": remat.arange(3) / 2, "sqrt_int": remat.arange(3).sqrt(),
        "mean_of_float_op": remat.tensor([1, 2]) * 0.5,
        "linear_weight": nn.Linear(2, 2).weight, "conv_weight": nn.Conv2d(1, 1, 1).weight,
    }
    wrong = {k: t.dtype for k, t in made.items() if t.dtype is not remat.float64}
    assert not wrong
    # What is not a default keeps its dtype.
    assert remat.tensor([1, 2]).dtype is remat.int64
    assert remat.tensor(np.array([1.0], dtype=np.float32)).dtype is remat.float32
    assert remat.zeros(2, dtype=remat.float32).dtype is remat.float32


def test_repr_spells_out_the_other_float(float64_default):
    assert repr(remat.tensor([1.5])) == "tensor([1.5000])"
    assert repr(remat.tensor([1.5], dtype=remat.float32)) == "tensor([1.5000], dtype=remat.float32)"
    assert "dtype" not in repr(remat.zeros(0))


def test_existing_tensors_keep_their_dtype():
    t = remat.tensor([1.0])
    remat.set_default_dtype(remat.float64)
    try:
        assert t.dtype is remat.float32 and (t + 1).dtype is remat.float32
    finally:
        remat.set_default_dtype(remat.float32)


@pytest.mark.parametrize("bad", [remat.int64, remat.int32, remat.bool_, "int64"])
def test_only_floats_can_be_the_default(bad):
    with pytest.raises(remat.DTypeError, match="set_default_dtype"):
        remat.set_default_dtype(bad)
    assert remat.get_default_dtype() is remat.float32


def test_matches_pytorch(float64_default):
    torch = pytest.importorskip("torch")
    torch.set_default_dtype(torch.float64)
    try:
        pairs = [(remat.tensor([1.5]), torch.tensor([1.5])),
                 (remat.arange(3) / 2, torch.arange(3) / 2),
                 (remat.arange(3).exp(), torch.arange(3).exp()),
                 (remat.full((1,), 2.5), torch.full((1,), 2.5))]
        for r, t in pairs:
            assert r.dtype.name == str(t.dtype).removeprefix("torch.")
    finally:
        torch.set_default_dtype(torch.float32)
