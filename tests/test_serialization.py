"""``remat.save`` / ``remat.load`` as PyTorch programs call them: a whole Module is refused
with a message naming its state dict (remat never pickles code), ``map_location`` and
``weights_only`` are PyTorch's arguments, checkpoint dicts of model and optimizer state round
trip, and ``remat.serialization``'s allow-list functions are accepted."""

from __future__ import annotations

import io

import numpy as np
import pytest

import remat as torch
import remat.nn as nn
import remat.serialization


def test_saving_a_module_raises_and_names_its_state_dict(tmp_path):
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    path = tmp_path / "model.pt"
    with pytest.raises(TypeError, match=r"Sequential.*never pickles code.*state_dict\(\)"):
        torch.save(model, path)
    assert not path.exists()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(TypeError, match="SGD"):
        torch.save(opt, io.BytesIO())
    # What to do instead works.
    torch.save(model.state_dict(), path)
    fresh = nn.Sequential(nn.Linear(3, 4), nn.ReLU())
    fresh.load_state_dict(torch.load(path))
    np.testing.assert_array_equal(fresh[0].weight.detach().numpy(),
                                  model[0].weight.detach().numpy())


def test_checkpoint_dict_round_trips(tmp_path):
    torch.manual_seed(0)
    model = nn.Linear(4, 2)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    model(torch.randn(3, 4)).sum().backward()
    opt.step()
    ckpt = {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": 5,
            "config": {"lr": 1e-2, "name": "run", "betas": (0.9, 0.999)}}
    path = tmp_path / "ckpt.pt"
    torch.save(ckpt, path)
    back = torch.load(path, map_location="cpu", weights_only=True)
    assert back["epoch"] == 5 and back["config"]["name"] == "run"
    model2 = nn.Linear(4, 2)
    opt2 = torch.optim.Adam(model2.parameters(), lr=1e-2)
    model2.load_state_dict(back["model"])
    opt2.load_state_dict(back["optimizer"])
    for g1, g2 in zip(opt.param_groups, opt2.param_groups):
        assert g1["lr"] == g2["lr"] and g1["betas"] == tuple(g2["betas"])
    np.testing.assert_array_equal(model2.weight.detach().numpy(), model.weight.detach().numpy())


@pytest.mark.parametrize("where", [
    "cpu", torch.device("cpu"), {"cuda:0": "cpu"}, {"cpu": "cpu"}, {}, None,
    lambda storage, loc: storage,
])
def test_map_location_forms(tmp_path, where):
    path = tmp_path / "w.pt"
    torch.save({"w": torch.ones(2), "p": nn.Parameter(torch.zeros(1))}, path)
    back = torch.load(path, map_location=where)
    assert back["w"].device == "cpu" and back["w"].tolist() == [1.0, 1.0]
    assert back["p"].requires_grad


def test_map_location_errors(tmp_path):
    path = tmp_path / "w.pt"
    torch.save({"w": torch.ones(2)}, path)
    with pytest.raises(TypeError, match="map_location"):
        torch.load(path, map_location=3.5)
    with pytest.raises(TypeError, match="map_location returned"):
        torch.load(path, map_location=lambda s, loc: "nope")
    if not torch.cuda.is_available():
        with pytest.raises(torch.DeviceError):
            torch.load(path, map_location="cuda")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_map_location_moves_tensors_to_a_gpu(tmp_path):
    path = tmp_path / "w.pt"
    torch.save({"w": torch.ones(2), "nested": [torch.zeros(1)]}, path)
    back = torch.load(path, map_location="cuda:0")
    assert back["w"].device == "cuda:0" and back["nested"][0].device == "cuda:0"


def test_weights_only(tmp_path):
    path = tmp_path / "w.pt"
    torch.save({"w": torch.ones(2)}, path)
    assert list(torch.load(path, weights_only=True)) == ["w"]
    assert list(torch.load(path, weights_only=None)) == ["w"]
    with pytest.raises(ValueError, match="never"):
        torch.load(path, weights_only=False)
    # pickle.load's arguments are accepted (nothing is unpickled).
    assert list(torch.load(path, encoding="latin1")) == ["w"]


def test_safe_globals_are_accepted_no_ops(tmp_path):
    path = tmp_path / "w.pt"
    torch.save({"w": torch.ones(2)}, path)
    remat.serialization.add_safe_globals([nn.Linear, (nn.ReLU, "torch.nn.modules.ReLU")])
    try:
        assert nn.Linear in remat.serialization.get_safe_globals()
        assert list(torch.load(path)) == ["w"]
    finally:
        remat.serialization.clear_safe_globals()
    with remat.serialization.safe_globals([nn.Linear]):
        assert remat.serialization.get_safe_globals() == [nn.Linear]
        assert list(torch.load(path, weights_only=True)) == ["w"]
    assert remat.serialization.get_safe_globals() == []
    with pytest.raises(TypeError):
        remat.serialization.add_safe_globals(nn.Linear)
