"""The CPU thread count: ``set_num_threads`` / ``get_num_threads`` (PyTorch's names)."""

import numpy as np
import pytest

import remat


def test_thread_count_is_set_and_results_do_not_depend_on_it():
    before = remat.get_num_threads()
    assert before >= 1
    x = remat.randn(512, 512, requires_grad=True)
    try:
        results = []
        for n in (1, 2, 3, 1):
            remat.set_num_threads(n)
            assert remat.get_num_threads() == n
            y = (x @ x).tanh().sum()
            y.backward()
            results.append((y.item(), x.grad.numpy().copy()))
            x.grad = None
        for value, grad in results[1:]:
            assert value == results[0][0]
            np.testing.assert_array_equal(grad, results[0][1])
    finally:
        remat.set_num_threads(before)


@pytest.mark.parametrize("bad", [0, -1])
def test_thread_count_must_be_positive(bad):
    with pytest.raises(ValueError, match="set_num_threads"):
        remat.set_num_threads(bad)
