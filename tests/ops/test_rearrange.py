"""PyTorch's argument forms and result types of the rearranging ops (unbind, roll, tile,
repeat_interleave, meshgrid, diagonal, diag, trace, swapaxes/swapdims) beyond the op
registry's value, gradient and checkpoint checks: tuples, varargs and list forms, integer
dtypes, and the errors that name the op."""

import numpy as np
import pytest

import remat


def test_unbind_returns_a_tuple_that_unpacks():
    qkv = remat.arange(24).reshape(3, 2, 4)
    q, k, v = qkv.unbind(0)
    assert isinstance(qkv.unbind(0), tuple)
    assert q.shape == (2, 4) and v.tolist() == qkv[2].tolist()
    assert [t.tolist() for t in remat.unbind(remat.tensor([[1, 2], [3, 4]]), dim=1)] == [
        [1, 3], [2, 4]]


def test_roll_forms_match_numpy():
    x = np.arange(12).reshape(3, 4)
    t = remat.tensor(x)
    assert t.roll(1).tolist() == np.roll(x, 1).tolist()
    assert t.roll((1, -1), (0, 1)).tolist() == np.roll(x, (1, -1), (0, 1)).tolist()
    assert remat.roll(t, -5, dims=1).tolist() == np.roll(x, -5, 1).tolist()
    assert remat.roll(remat.zeros(0, 3), 2, 0).shape == (0, 3)


def test_tile_method_takes_varargs_or_a_sequence():
    t = remat.tensor([[1, 2]])
    assert t.tile(2, 1).tolist() == t.tile((2, 1)).tolist() == [[1, 2], [1, 2]]
    assert remat.tile(t, (3,)).shape == (1, 6)
    assert remat.tile(remat.tensor([1, 2]), (2, 2)).shape == (2, 4)


def test_repeat_interleave_counts_and_output_size():
    t = remat.tensor([[1, 2], [3, 4]])
    assert t.repeat_interleave(2).tolist() == [1, 1, 2, 2, 3, 3, 4, 4]
    assert t.repeat_interleave([1, 2], dim=1).tolist() == [[1, 2, 2], [3, 4, 4]]
    assert t.repeat_interleave(remat.tensor([2]), dim=0).shape == (4, 2)
    assert remat.repeat_interleave(t, 2, dim=0, output_size=4).shape == (4, 2)
    with pytest.raises(ValueError, match="output_size"):
        remat.repeat_interleave(t, 2, dim=0, output_size=3)
    with pytest.raises(TypeError, match="repeat_interleave"):
        t.repeat_interleave(remat.tensor([1.0, 2.0]), dim=0)


def test_grouped_query_attention_repeat_matches_expand_reshape():
    k = remat.randn(2, 3, 5, 4)
    want = k[:, :, None].expand(2, 3, 2, 5, 4).reshape(2, 6, 5, 4)
    np.testing.assert_array_equal(k.repeat_interleave(2, dim=1).numpy(), want.numpy())


def test_meshgrid_list_form_and_default_indexing():
    a, b = remat.tensor([1, 2]), remat.tensor([3, 4, 5])
    ys, xs = remat.meshgrid([a, b])
    assert ys.shape == (2, 3) and ys.tolist() == [[1, 1, 1], [2, 2, 2]]
    gx, gy = remat.meshgrid(a, b, indexing="xy")
    nx, ny = np.meshgrid([1, 2], [3, 4, 5])
    assert gx.tolist() == nx.tolist() and gy.tolist() == ny.tolist()
    with pytest.raises(ValueError, match="meshgrid"):
        remat.meshgrid()


def test_diagonal_diag_trace_on_integers_and_floats():
    x = remat.arange(12).reshape(3, 4)
    assert x.diagonal().tolist() == [0, 5, 10]
    assert x.diagonal(-1).tolist() == [4, 9]
    assert x.diagonal(5).shape == (0,)
    assert remat.diag(remat.tensor([1, 2]), 1).tolist() == [[0, 1, 0], [0, 0, 2], [0, 0, 0]]
    tr = remat.trace(x)
    assert tr.dtype == remat.int64 and tr.item() == 15
    w = remat.randn(4, 4, requires_grad=True)
    w.trace().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.eye(4, dtype=np.float32))


def test_swapaxes_and_swapdims_are_transposes():
    x = remat.zeros(2, 3, 4)
    assert x.swapaxes(0, 2).shape == remat.swapdims(x, 2, 0).shape == (4, 3, 2)


@pytest.mark.parametrize("call, exc", [
    (lambda: remat.unbind(remat.tensor(1.0)), remat.ShapeError),
    (lambda: remat.roll(remat.zeros(2, 3), (1, 2)), remat.ShapeError),
    (lambda: remat.diagonal(remat.zeros(3, 3), 0, 1, 1), remat.ShapeError),
    (lambda: remat.diag(remat.zeros(2, 2, 2)), remat.ShapeError),
    (lambda: remat.trace(remat.zeros(3)), remat.ShapeError),
    (lambda: remat.meshgrid(remat.zeros(2), indexing="yx"), ValueError),
])
def test_errors_name_the_op(call, exc):
    with pytest.raises(exc) as info:
        call()
    assert any(n in str(info.value) for n in
               ("unbind", "roll", "diagonal", "diag", "trace", "meshgrid"))
