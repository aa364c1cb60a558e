"""remat.nn.Rearrange, Reduce and EinMix (remat/nn/modules/einops_layers.py): values against
einops on NumPy, EinMix's parameters and gradients, copies, and errors at construction."""

import copy

import numpy as np
import pytest

import remat
from remat import nn

einops = pytest.importorskip("einops")


def _np(t):
    return t.detach().numpy()


def test_rearrange_and_reduce_layers_match_einops_on_numpy():
    x = np.random.default_rng(0).standard_normal((2, 3, 4, 6))
    layer = nn.Rearrange("b c (h p) w -> b h (p w) c", p=2)
    np.testing.assert_array_equal(_np(layer(remat.tensor(x))),
                                  einops.rearrange(x, "b c (h p) w -> b h (p w) c", p=2))
    for reduction in ("min", "max", "sum", "mean", "prod"):
        pool = nn.Reduce("b c (h 2) (w 3) -> b c h w", reduction)
        np.testing.assert_allclose(
            _np(pool(remat.tensor(x))),
            einops.reduce(x, "b c (h 2) (w 3) -> b c h w", reduction), rtol=1e-12)
    assert repr(nn.Reduce("b c h w -> b c", "max")) == "Reduce('b c h w -> b c', 'max')"


def test_one_layer_serves_inputs_of_any_rank_its_ellipsis_allows():
    layer = nn.Rearrange("b ... c -> b c ...")
    assert layer(remat.zeros(2, 3)).shape == (2, 3)
    assert layer(remat.zeros(2, 4, 5, 3)).shape == (2, 3, 4, 5)


def test_einmix_matches_einsum_and_has_parameters():
    remat.manual_seed(0)
    mix = nn.EinMix("b (h c) -> b h d", weight_shape="h c d", bias_shape="h d",
                    h=2, c=3, d=4).double()
    assert [(n, p.shape) for n, p in mix.named_parameters()] == [("weight", (2, 3, 4)),
                                                                 ("bias", (1, 2, 4))]
    assert list(mix.state_dict()) == ["weight", "bias"]
    bound = (3 / 3) ** 0.5  # fan_in: c (h and d appear in the output)
    assert np.all(np.abs(_np(mix.weight)) <= bound)
    x = np.random.default_rng(1).standard_normal((5, 6))
    want = np.einsum("bhc,hcd->bhd", x.reshape(5, 2, 3), _np(mix.weight)) + _np(mix.bias)
    out = mix(remat.tensor(x))
    np.testing.assert_allclose(_np(out), want, rtol=1e-12, atol=1e-12)
    out.sum().backward()
    np.testing.assert_allclose(_np(mix.bias.grad), np.full((1, 2, 4), 5.0))
    np.testing.assert_allclose(_np(mix.weight.grad),
                               np.broadcast_to(x.reshape(5, 2, 3).sum(0)[..., None], (2, 3, 4)))


def test_einmix_without_bias_and_with_a_merged_output():
    mix = nn.EinMix("t b c -> t (b d)", weight_shape="c d", c=3, d=2)
    assert mix.bias is None and [n for n, _ in mix.named_parameters()] == ["weight"]
    assert mix(remat.randn(4, 5, 3)).shape == (4, 10)
    assert repr(mix) == "EinMix('t b c -> t (b d)', 'c d', c=3, d=2)"


def test_einmix_is_reproducible_under_manual_seed():
    remat.manual_seed(3)
    a = nn.EinMix("b c -> b d", weight_shape="c d", c=3, d=2)
    remat.manual_seed(3)
    b = nn.EinMix("b c -> b d", weight_shape="c d", c=3, d=2)
    np.testing.assert_array_equal(_np(a.weight), _np(b.weight))


def test_layers_deep_copy_and_move_like_modules():
    layer = nn.Rearrange("b (h p) -> b h p", p=2)
    clone = copy.deepcopy(layer)
    assert repr(clone) == repr(layer) and clone is not layer
    assert clone(remat.zeros(3, 4)).shape == (3, 2, 2)
    mix = copy.deepcopy(nn.EinMix("b c -> b d", weight_shape="c d", bias_shape="d", c=3, d=2))
    assert mix.double().weight.dtype == remat.float64


def test_bad_patterns_fail_at_construction():
    with pytest.raises(einops.EinopsError):
        nn.Rearrange("b c -> b d")
    with pytest.raises(einops.EinopsError):
        nn.Reduce("b c -> b", "median")
    with pytest.raises(einops.EinopsError, match="Dimension d of weight should be specified"):
        nn.EinMix("b c -> b d", weight_shape="c d", c=3)


def test_a_shape_the_pattern_does_not_fit_fails_when_called():
    with pytest.raises(einops.EinopsError):
        nn.Rearrange("b (h p) -> b h p", p=3)(remat.zeros(2, 4))
