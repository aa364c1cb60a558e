"""Layer constructors and forwards raise errors naming the class, the argument, the op
and the shapes."""

import pytest
import remat
from remat import nn


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda: nn.Conv2d(3, 4, 3, groups=2), ("Conv2d", "groups")),
        (lambda: nn.Conv2d(0, 4, 3), ("Conv2d", "in_channels")),
        (lambda: nn.Conv1d(2, 2, 3, padding="full"), ("Conv1d", "padding")),
        (lambda: nn.Conv2d(2, 2, 3, padding_mode="mirror"), ("Conv2d", "padding_mode")),
        (lambda: nn.Conv2d(2, 2, (3, 3, 3)), ("kernel_size",)),
        (lambda: nn.GroupNorm(4, 6), ("GroupNorm", "num_groups")),
        (lambda: nn.GroupNorm(2, 4, eps=-1), ("GroupNorm", "eps")),
        (lambda: nn.RMSNorm(()), ("RMSNorm", "normalized_shape")),
        (lambda: nn.MultiheadAttention(6, 4), ("MultiheadAttention", "num_heads")),
        (lambda: nn.MultiheadAttention(6, 2, dropout=1.5), ("MultiheadAttention", "dropout")),
    ],
)
def test_constructor_errors_name_class_and_argument(make, words):
    with pytest.raises((ValueError, TypeError)) as e:
        make()
    for w in words:
        assert w in str(e.value)


def test_forward_errors_name_the_op_and_shapes():
    with pytest.raises(remat.ShapeError, match=r"conv2d.*\(1, 3, 5, 5\)"):
        nn.Conv2d(2, 4, 3)(remat.randn(1, 3, 5, 5))
    # A weight of another rank: the error names the convolution called, not another one.
    for w in (remat.randn(4, 3, 3), remat.randn(4, 3, 3, 3, 3)):
        with pytest.raises(remat.ShapeError, match=r"^conv2d: expected a 4-D weight"):
            remat.nn.functional.conv2d(remat.randn(1, 3, 8, 8), w)
    with pytest.raises(remat.ShapeError, match="group_norm"):
        nn.GroupNorm(2, 4)(remat.randn(2, 6, 3))
    with pytest.raises(remat.ShapeError, match="MultiheadAttention"):
        nn.MultiheadAttention(4, 2, batch_first=True)(*(remat.randn(2, 3, 5),) * 3)
    with pytest.raises(remat.ShapeError, match="MultiheadAttention.*batch"):
        m = nn.MultiheadAttention(4, 2, batch_first=True)
        m(remat.randn(2, 3, 4), remat.randn(3, 3, 4), remat.randn(3, 3, 4))
