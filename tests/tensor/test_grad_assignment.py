"""Assigning ``.grad``: backward never writes into a tensor the user assigned (it copies first,
as PyTorch does), assignment is checked like PyTorch's, and the engine's own gradient is
still updated in place (the optimizer fast path)."""

import numpy as np
import pytest

import remat


def test_a_zeros_tensor_shared_by_two_parameters_is_not_summed_into():
    zeros = remat.zeros(3)
    a = remat.ones(3, requires_grad=True)
    b = remat.ones(3, requires_grad=True)
    a.grad = zeros
    b.grad = zeros
    (a * 2).sum().backward()
    (b * 5).sum().backward()
    np.testing.assert_array_equal(a.grad.numpy(), [2, 2, 2])
    np.testing.assert_array_equal(b.grad.numpy(), [5, 5, 5])
    np.testing.assert_array_equal(zeros.numpy(), [0, 0, 0])


def test_the_users_tensor_is_not_modified():
    x = remat.ones(2, requires_grad=True)
    g = remat.tensor([10.0, 20.0])
    x.grad = g
    (x * 3).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [13, 23])
    np.testing.assert_array_equal(g.numpy(), [10, 20])


def test_assigning_a_detached_view_of_the_tensor_leaves_the_tensor_alone():
    x = remat.tensor([1.0, 2.0], requires_grad=True)
    x.grad = x.detach()
    x.sum().backward()
    np.testing.assert_array_equal(x.detach().numpy(), [1, 2])
    np.testing.assert_array_equal(x.grad.numpy(), [2, 3])


def test_a_numpy_view_of_an_assigned_grad_does_not_change():
    x = remat.ones(2, requires_grad=True)
    g = remat.zeros(2)
    view = g.numpy()
    x.grad = g
    x.sum().backward()
    np.testing.assert_array_equal(view, [0, 0])


def test_the_tensor_cannot_be_its_own_grad():
    x = remat.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="can't be the tensor itself"):
        x.grad = x
    assert x.grad is None


@pytest.mark.parametrize(
    "value, error",
    [
        (remat.ones(3), ValueError),  # shape
        (remat.ones(2, dtype=remat.float64), TypeError),  # dtype
        ([1.0, 1.0], TypeError),  # not a Tensor, as PyTorch
        (np.ones(2, dtype=np.float32), TypeError),
        (1.0, TypeError),
    ],
)
def test_mismatched_assignments_are_refused(value, error):
    x = remat.ones(2, requires_grad=True)
    with pytest.raises(error):
        x.grad = value
    assert x.grad is None


def test_the_engines_own_gradient_is_accumulated_in_place():
    x = remat.ones(2, requires_grad=True)
    x.sum().backward()
    view = x.grad.numpy()  # shares the gradient's storage
    (x * 2).sum().backward()
    np.testing.assert_array_equal(view, [3, 3])
    # After the first accumulation replaced an assigned gradient, the engine owns the sum.
    x.grad = remat.zeros(2)
    x.sum().backward()
    view = x.grad.numpy()
    x.sum().backward()
    np.testing.assert_array_equal(view, [2, 2])


def test_an_optimizer_step_sees_the_accumulated_assigned_gradient():
    w = remat.ones(2, requires_grad=True)
    w.grad = remat.full((2,), 1.0)
    opt = remat.optim.SGD([w], lr=0.5)
    (w * 3).sum().backward()
    opt.step()
    np.testing.assert_allclose(w.detach().numpy(), [1 - 0.5 * 4] * 2)

