"""``Module.state_dict()`` as PyTorch's: an ordered dict of detached Tensors sharing storage
with the parameters and buffers, used the way PyTorch programs use it (written with only the
import changed), and ``load_state_dict`` accepting Tensors, NumPy arrays and PyTorch's legacy
``(1,)`` value of a 0-d buffer."""

from __future__ import annotations

import copy
from collections import OrderedDict

import numpy as np
import pytest

import remat as torch
import remat.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(3, 4)
        self.bn = nn.BatchNorm1d(4)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        return self.head(torch.relu(self.bn(self.fc(x))))


def test_pytorch_script_idioms_on_state_dict_values():
    torch.manual_seed(0)
    model = Net()
    sd = model.state_dict()
    assert isinstance(sd, OrderedDict)
    assert list(sd) == [
        "fc.weight", "fc.bias", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var",
        "bn.num_batches_tracked", "head.weight", "head.bias",
    ]
    # The idioms of PyTorch programs: export to NumPy, shapes, clones, deep copies.
    arrays = {k: model.state_dict()[k].detach().cpu().numpy() for k in sd}
    np.testing.assert_array_equal(arrays["fc.weight"], model.fc.weight.detach().numpy())
    assert sd["fc.weight"].shape == (4, 3)
    assert sd["bn.num_batches_tracked"].shape == () and sd["bn.num_batches_tracked"].dtype == (
        torch.int64
    )
    clone = sd["head.bias"].clone()
    deep = copy.deepcopy(sd)
    assert all(not v.requires_grad for v in sd.values())
    assert all(isinstance(v, torch.Tensor) for v in deep.values())
    # Detached views of the parameters: an optimizer step shows in a state dict taken before
    # it, not in its clone or deep copy.
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    model(torch.randn(8, 3)).sum().backward()
    opt.step()
    np.testing.assert_array_equal(sd["head.bias"].numpy(), model.head.bias.detach().numpy())
    assert not np.array_equal(clone.numpy(), model.head.bias.detach().numpy())
    assert not np.array_equal(deep["head.bias"].numpy(), model.head.bias.detach().numpy())
    assert int(sd["bn.num_batches_tracked"].item()) == 1
    # The snapshot loads back (Tensors), as does its NumPy export.
    model.load_state_dict(deep)
    np.testing.assert_array_equal(model.head.bias.detach().numpy(), clone.numpy())
    model.load_state_dict(arrays)
    np.testing.assert_array_equal(model.fc.weight.detach().numpy(), arrays["fc.weight"])


def test_keep_vars_destination_and_positional_forms():
    lin = nn.Linear(2, 2)
    kept = lin.state_dict(keep_vars=True)
    assert kept["weight"] is lin.weight and kept["weight"].requires_grad
    dest: OrderedDict = OrderedDict(extra=1)
    out = lin.state_dict(dest, "lin.")
    assert out is dest and list(out) == ["extra", "lin.weight", "lin.bias"]
    with pytest.raises(TypeError, match="state_dict"):
        lin.state_dict(None, "", False, 1)


def test_legacy_shape_of_a_0d_buffer_loads():
    bn = nn.BatchNorm1d(3)
    sd = {k: v.clone() for k, v in bn.state_dict().items()}
    sd["num_batches_tracked"] = torch.tensor([7])  # how old PyTorch versions saved it
    bn.load_state_dict(sd)
    assert bn.num_batches_tracked.shape == () and bn.num_batches_tracked.item() == 7
    sd["num_batches_tracked"] = np.array([9])
    bn.load_state_dict(sd)
    assert bn.num_batches_tracked.item() == 9


def test_errors_name_a_buffer_as_a_buffer():
    bn = nn.BatchNorm1d(3)
    sd = {k: v.clone() for k, v in bn.state_dict().items()}
    sd["running_mean"] = torch.zeros(4)
    with pytest.raises(torch.ShapeError, match=r"'running_mean'.*buffer has shape \(3,\)"):
        bn.load_state_dict(sd)
    sd = {k: v.clone() for k, v in bn.state_dict().items()}
    sd["weight"] = torch.zeros(4)
    with pytest.raises(torch.ShapeError, match=r"'weight'.*parameter has shape \(3,\)"):
        bn.load_state_dict(sd)


def test_state_dict_round_trips_through_save_and_load(tmp_path):
    torch.manual_seed(1)
    model = Net()
    path = tmp_path / "model.pt"
    torch.save({"model": model.state_dict(), "epoch": 3}, path)
    back = torch.load(path)
    assert back["epoch"] == 3
    other = Net()
    other.load_state_dict(back["model"])
    for k, v in model.state_dict().items():
        np.testing.assert_array_equal(other.state_dict()[k].numpy(), v.numpy())
