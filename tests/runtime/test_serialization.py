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



def test_save_load_nested_objects(tmp_path):
    obj = {
        "model": {"w": remat.randn(2, 3), "steps": remat.tensor([1, 2])},
        "epoch": 3,
        "history": [0.5, None, "text", (remat.zeros(1), np.ones(2))],
        7: True,
    }
    remat.save(obj, tmp_path / "ckpt.pt")
    back = remat.load(tmp_path / "ckpt.pt")
    assert back["epoch"] == 3 and back[7] is True
    assert back["history"][:3] == [0.5, None, "text"]
    assert isinstance(back["history"][3], tuple)
    assert isinstance(back["history"][3][1], np.ndarray)
    np.testing.assert_array_equal(np.asarray(back["model"]["w"]), np.asarray(obj["model"]["w"]))
    assert back["model"]["steps"].dtype == remat.int64


def test_save_load_state_dict_returns_tensors_in_order(tmp_path):
    net = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 1))
    remat.save(net.state_dict(), tmp_path / "net.npz")
    back = remat.load(tmp_path / "net.npz")
    assert list(back) == list(net.state_dict())
    assert all(isinstance(v, remat.Tensor) for v in back.values())
    np.load(tmp_path / "net.npz")  # still a plain NumPy archive


def test_safetensors_round_trip_and_format(tmp_path):
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    sd = {"w": remat.randn(3, 2), "ids": remat.arange(4), "mask": remat.tensor([True, False])}
    path = tmp_path / "weights.safetensors"
    remat.save(sd, path, metadata={"format": "pt"})
    raw = safetensors_numpy.load_file(str(path))  # readable by the reference library
    assert raw["w"].dtype == np.float32 and raw["ids"].dtype == np.int64
    back = remat.load(path)
    assert set(back) == {"w", "ids", "mask"}
    for k in sd:
        np.testing.assert_array_equal(back[k].detach().numpy(), sd[k].detach().numpy())
        assert back[k].dtype == sd[k].dtype
    with pytest.raises(TypeError, match="flat mapping"):
        remat.save({"nested": {"w": remat.ones(1)}}, tmp_path / "bad.safetensors")


def test_safetensors_files_written_by_pytorch_load(tmp_path):
    torch = pytest.importorskip("torch")
    st_torch = pytest.importorskip("safetensors.torch")
    st_torch.save_file({"w": torch.arange(6.0).reshape(2, 3)}, str(tmp_path / "t.safetensors"))
    back = remat.load(tmp_path / "t.safetensors")
    np.testing.assert_array_equal(back["w"].detach().numpy(), np.arange(6.0).reshape(2, 3))
    remat.save({"v": remat.ones(2)}, tmp_path / "r.safetensors")
    assert st_torch.load_file(str(tmp_path / "r.safetensors"))["v"].tolist() == [1.0, 1.0]


def test_save_load_keeps_requires_grad_and_parameters(tmp_path):
    p = nn.Parameter(remat.tensor([1.0, 2.0]))
    frozen = remat.tensor([3.0])
    # a flat mapping: still a plain NumPy archive, requires_grad in the zip comment
    remat.save({"p": p, "t": frozen, "n": remat.tensor([1, 2])}, tmp_path / "flat.npz")
    assert sorted(np.load(tmp_path / "flat.npz").files) == ["n", "p", "t"]
    back = remat.load(tmp_path / "flat.npz")
    assert isinstance(back["p"], nn.Parameter) and back["p"].is_leaf
    assert back["p"].requires_grad and not back["t"].requires_grad
    assert not isinstance(back["t"], nn.Parameter) and back["n"].dtype == remat.int64
    # a nested structure; a non-leaf that requires grad comes back as a leaf that does
    h = p * 2
    remat.save({"model": {"w": p}, "acts": [h, frozen], "step": 3}, tmp_path / "ckpt.pt")
    back = remat.load(tmp_path / "ckpt.pt")
    assert isinstance(back["model"]["w"], nn.Parameter)
    assert back["acts"][0].requires_grad and back["acts"][0].is_leaf
    assert not back["acts"][1].requires_grad and back["step"] == 3
    np.testing.assert_array_equal(back["acts"][0].detach().numpy(), [2.0, 4.0])


def test_save_load_file_objects(tmp_path):
    import io

    buf = io.BytesIO()
    net = nn.Linear(2, 3)
    remat.save(net.state_dict(), buf)
    buf.seek(0)
    back = remat.load(buf)
    assert list(back) == ["weight", "bias"]
    np.testing.assert_array_equal(back["weight"].detach().numpy(), net.state_dict()["weight"])
    with open(tmp_path / "obj.bin", "wb") as f:
        remat.save({"p": nn.Parameter(remat.ones(2)), "xs": [1, "a"]}, f)
    with open(tmp_path / "obj.bin", "rb") as f:
        back = remat.load(f)
    assert back["xs"] == [1, "a"] and back["p"].requires_grad
    back = remat.load(tmp_path / "obj.bin")  # the same bytes as a path
    assert back["xs"] == [1, "a"]
    pytest.importorskip("safetensors.numpy")
    with open(tmp_path / "w.safetensors", "wb") as f:  # the format follows the file's name
        remat.save({"w": remat.ones(2)}, f)
    assert remat.load(tmp_path / "w.safetensors")["w"].tolist() == [1.0, 1.0]
    with open(tmp_path / "w.safetensors", "rb") as f:  # told by its first bytes
        assert remat.load(f)["w"].tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="not a valid file"):
        remat.load(io.BytesIO(b"not an archive"))


def test_save_refuses_code(tmp_path):
    with pytest.raises(TypeError, match="function"):
        remat.save({"f": [print]}, tmp_path / "x.pt")
