"""remat.nn.functional: the top-level functions under PyTorch's names and arguments."""

import warnings
import numpy as np
import pytest
import remat
from remat import nn
from remat.nn import functional as F


FUNCTIONAL_ONLY = {"unfold", "fold", "relu_", "leaky_relu_", "interpolate"}


FUNCTIONAL_WRAPPERS = {"softmax", "log_softmax", "dropout", "linear", "mse_loss", "l1_loss",
                       "relu", "leaky_relu", "silu"}


def test_functional_names_are_the_top_level_functions():
    for name in set(F.__all__) - FUNCTIONAL_ONLY - FUNCTIONAL_WRAPPERS:
        assert getattr(F, name) is getattr(remat, name), name
    for name in FUNCTIONAL_WRAPPERS:
        assert name in F.__all__ and hasattr(remat, name)
        assert getattr(F, name) is not getattr(remat, name), name
    assert not any(hasattr(remat, name) for name in FUNCTIONAL_ONLY)


def test_functional_softmax_dtype_and_implicit_dim():
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    y = F.softmax(remat.tensor(x), dim=-1, dtype=remat.float64)
    assert y.dtype == remat.float64
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(y.detach().numpy(), np.exp(x64) / np.exp(x64).sum(-1, keepdims=True),
                               rtol=1e-12)
    assert F.log_softmax(remat.tensor(x), 1, dtype=remat.float64).dtype == remat.float64
    # Without dim: the last axis (API.md's default), no warning, for every rank.
    for shape in [(5,), (2, 3), (2, 3, 4), (2, 3, 4, 5)]:
        a = np.random.default_rng(1).standard_normal(shape)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = F.softmax(remat.tensor(a))
            lgot = F.log_softmax(remat.tensor(a))
            mod = nn.Softmax()(remat.tensor(a))
        np.testing.assert_allclose(np.asarray(got), np.exp(a) / np.exp(a).sum(-1, keepdims=True),
                                   rtol=1e-12)
        np.testing.assert_allclose(
            np.asarray(lgot), a - np.log(np.exp(a).sum(-1, keepdims=True)), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(mod.detach().numpy(), got.detach().numpy())
    assert F.softmax(remat.tensor(x), axis=-1).shape == (2, 3, 4)  # NumPy alias: no warning


def test_functional_dropout_inplace():
    x = remat.ones(1000)
    remat.manual_seed(3)
    out = F.dropout(x, 0.5, True, inplace=True)
    assert out is x  # written in place: x takes part in no graph
    vals = np.unique(x.detach().numpy())
    assert set(vals.tolist()) == {0.0, 2.0}
    assert F.dropout(x, 0.5, training=False, inplace=True) is x
    # a tensor of a graph is written through the graph (rebased, as PyTorch)
    w = remat.ones(4, requires_grad=True)
    h = w * 3.0
    remat.manual_seed(4)
    out = F.dropout(h, 0.5, True, inplace=True)
    assert out is h and h.grad_fn == "copy_"  # the write, as PyTorch's copy_ of the dropout
    kept = h.detach().numpy() != 0
    h.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.where(kept, 6.0, 0.0))
    with pytest.raises(remat.GraphError, match="leaf"):
        F.dropout(w, 0.5, True, inplace=True)
    assert repr(nn.Dropout(0.1, inplace=True)) == "Dropout(p=0.1, inplace=True)"
    y = remat.ones(8)
    assert nn.Dropout(1.0, inplace=True)(y) is y and np.all(y.detach().numpy() == 0)


def test_functional_linear_1d_weight_and_0d_bias():
    rng = np.random.default_rng(2)
    x, w, w2 = rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal((5, 4))
    xt, wt = remat.tensor(x, requires_grad=True), remat.tensor(w, requires_grad=True)
    out = F.linear(xt, wt, remat.tensor(0.5))
    assert out.shape == (3,)
    np.testing.assert_allclose(out.detach().numpy(), x @ w + 0.5, rtol=1e-12)
    out.sum().backward()
    np.testing.assert_allclose(wt.grad.detach().numpy(), x.sum(0), rtol=1e-12)
    np.testing.assert_allclose(xt.grad.detach().numpy(), np.tile(w, (3, 1)), rtol=1e-12)
    assert F.linear(remat.tensor(x[0]), remat.tensor(w)).shape == ()
    b = remat.tensor(1.5, requires_grad=True)
    out = F.linear(remat.tensor(x), remat.tensor(w2), b)
    np.testing.assert_allclose(out.detach().numpy(), x @ w2.T + 1.5, rtol=1e-12)
    out.sum().backward()
    assert b.grad.item() == 15.0
