"""nn.Embedding: lookup, padding_idx, max_norm, from_pretrained and errors."""

import numpy as np
import pytest
import remat
from remat import nn


def _np(t):
    return t.detach().numpy()


def test_embedding_lookup_and_scatter_add_gradient():
    remat.manual_seed(0)
    emb = nn.Embedding(6, 3)
    assert emb.weight.shape == (6, 3) and emb.weight.requires_grad
    ids = remat.tensor([[1, 4, 1], [0, 5, 1]])
    out = emb(ids)
    assert out.shape == (2, 3, 3)
    np.testing.assert_array_equal(out.detach().numpy(), _np(emb.weight)[ids.detach().numpy()])
    out.sum().backward()
    counts = np.bincount(ids.detach().numpy().ravel(), minlength=6)[:, None] * np.ones((1, 3))
    np.testing.assert_array_equal(emb.weight.grad.detach().numpy(), counts)


def test_embedding_padding_idx_row_is_zero_and_gets_no_gradient():
    remat.manual_seed(1)
    emb = nn.Embedding(5, 2, padding_idx=-1)
    assert emb.padding_idx == 4
    np.testing.assert_array_equal(_np(emb.weight)[4], [0.0, 0.0])
    ids = remat.tensor([4, 2, 4, 0])
    (emb(ids) * 3.0).sum().backward()
    g = emb.weight.grad.detach().numpy()
    np.testing.assert_array_equal(g[4], [0.0, 0.0])
    np.testing.assert_array_equal(g[2], [3.0, 3.0])
    assert repr(emb) == "Embedding(5, 2, padding_idx=4)"


def test_embedding_padding_idx_keeps_forward_values_and_second_order():
    w = remat.tensor(np.arange(8.0).reshape(4, 2), requires_grad=True)
    ids = remat.tensor([0, 1, 1, 3])
    out = remat.embedding(ids, w, padding_idx=1)
    np.testing.assert_array_equal(out.detach().numpy(), np.arange(8.0).reshape(4, 2)[[0, 1, 1, 3]])
    (g,) = remat.grad((out**2).sum(), [w], create_graph=True)
    np.testing.assert_array_equal(g.detach().numpy()[1], [0.0, 0.0])
    np.testing.assert_array_equal(g.detach().numpy()[3], [12.0, 14.0])
    (h,) = remat.grad(g.sum(), [w])
    np.testing.assert_array_equal(h.detach().numpy(), [[2, 2], [0, 0], [0, 0], [2, 2]])


def test_embedding_max_norm_renormalises_looked_up_rows_in_place():
    w = remat.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]])
    out = remat.embedding(remat.tensor([0, 1]), w, max_norm=1.0)
    norms = np.linalg.norm(w.detach().numpy(), axis=1)
    np.testing.assert_allclose(norms[:2], [1.0, 0.5], rtol=1e-6)
    assert norms[2] == pytest.approx(10.0)  # not looked up: unchanged
    np.testing.assert_allclose(out.detach().numpy(), w.detach().numpy()[:2])


def test_embedding_errors():
    with pytest.raises(ValueError, match="padding_idx"):
        nn.Embedding(3, 2, padding_idx=3)
    emb = nn.Embedding(3, 2)
    with pytest.raises(IndexError, match="embedding"):
        emb(remat.tensor([3]))
    with pytest.raises(TypeError, match="embedding"):
        emb(remat.tensor([0.0]))


def test_embedding_from_pretrained_is_frozen():
    table = remat.tensor([[1.0, 2.0], [3.0, 4.0]])
    emb = nn.Embedding.from_pretrained(table)
    assert not emb.weight.requires_grad
    np.testing.assert_array_equal(emb(remat.tensor([1])).detach().numpy(), [[3.0, 4.0]])
    # A frozen parameter is still a parameter: saved, listed, loaded and moved.
    assert list(emb.state_dict()) == ["weight"]
    assert [n for n, _ in emb.named_parameters()] == ["weight"]
    emb.to(remat.float64)
    assert emb.weight.dtype == remat.float64
