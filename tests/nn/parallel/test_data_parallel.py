"""remat.nn.DataParallel / remat.nn.parallel.data_parallel: without a GPU the wrapper calls the
module (PyTorch's behaviour without GPUs), `.module`, `module.`-prefixed state dicts; the GPU
branch's argument handling (with remat.cuda mocked), and a real one-GPU run when there is one."""

import numpy as np
import pytest

import remat
from remat import nn
from remat.nn.parallel import data_parallel as dp_module_function
from remat.nn.parallel.data_parallel import _to_device


def _np(t):
    return np.asarray(t.detach().numpy())


@pytest.fixture
def no_gpu(monkeypatch):
    monkeypatch.setattr(remat.cuda, "is_available", lambda: False)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2))
        self.norm = nn.BatchNorm1d(2)

    def forward(self, x, scale=1.0):
        return self.norm(self.body(x)) * scale


def test_paths_are_pytorchs():
    import remat.nn.parallel.data_parallel  # noqa: F401  the module path scripts import
    from remat.nn.parallel.data_parallel import DataParallel

    assert nn.DataParallel is nn.parallel.DataParallel is DataParallel
    assert callable(dp_module_function)


def test_without_a_gpu_it_calls_the_module(no_gpu):
    remat.manual_seed(0)
    net = Net()
    model = nn.DataParallel(net)
    assert model.module is net and model.device_ids == [] and model.dim == 0
    x = remat.randn(5, 3)
    out = model(x, scale=2.0)
    np.testing.assert_array_equal(_np(out), _np(net(x, scale=2.0)))
    out.sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    assert [id(p) for p in model.parameters()] == [id(p) for p in net.parameters()]
    # The wrapper takes no arguments of its own and passes everything through.
    assert nn.DataParallel(nn.Identity())(x, ) is x


def test_state_dict_keys_carry_the_module_prefix(no_gpu):
    net = Net()
    model = nn.DataParallel(net)
    inner = net.state_dict()
    outer = model.state_dict()
    assert list(outer) == ["module." + k for k in inner]
    for k, v in inner.items():
        np.testing.assert_array_equal(_np(outer["module." + k]), _np(v))
    # A checkpoint of the wrapper loads into another wrapper, and without the prefix into the
    # bare module.
    other = nn.DataParallel(Net())
    other.load_state_dict(outer)
    x = remat.randn(4, 3)
    model.eval()
    other.eval()
    np.testing.assert_array_equal(_np(other(x)), _np(model(x)))
    bare = Net()
    bare.load_state_dict({k[len("module."):]: v for k, v in outer.items()})
    bare.eval()
    np.testing.assert_array_equal(_np(bare(x)), _np(model(x)))


def test_train_eval_and_repr_reach_the_module(no_gpu):
    model = nn.DataParallel(nn.Linear(3, 2))
    model.eval()
    assert not model.module.training
    model.train()
    assert model.module.training
    assert repr(model) == (
        "DataParallel(\n  (module): Linear(in_features=3, out_features=2, bias=True)\n)"
    )


def test_data_parallel_function(no_gpu):
    net = nn.Linear(3, 2)
    x = remat.randn(4, 3)
    np.testing.assert_array_equal(_np(dp_module_function(net, x)), _np(net(x)))
    np.testing.assert_array_equal(_np(dp_module_function(net, (x,))), _np(net(x)))
    scaled = dp_module_function(Net().eval(), (x,), module_kwargs={"scale": 0.0})
    np.testing.assert_array_equal(_np(scaled), np.zeros((4, 2), np.float32))


def test_bad_module_is_a_type_error():
    with pytest.raises(TypeError, match="DataParallel: module must be a remat.nn.Module, got "
                                        "function"):
        nn.DataParallel(lambda x: x)
    with pytest.raises(TypeError, match="data_parallel: module must be a remat.nn.Module"):
        dp_module_function(lambda x: x, ())


def test_to_device_moves_tensors_through_containers():
    x, y = remat.ones(2), remat.zeros(3)
    moved = _to_device(([x, {"y": y, "n": 3}], "s"), "cpu")
    assert isinstance(moved, tuple) and isinstance(moved[0], list)
    assert moved[0][1]["n"] == 3 and moved[1] == "s"
    np.testing.assert_array_equal(_np(moved[0][1]["y"]), _np(y))


class _Recorder(nn.Linear):
    """A Linear whose `to` records where it was sent (there is no GPU to move it to)."""

    def to(self, *args, **kwargs):
        self.moved_to = args[0] if args else kwargs.get("device")
        return self


@pytest.fixture
def two_gpus(monkeypatch):
    monkeypatch.setattr(remat.cuda, "is_available", lambda: True)
    monkeypatch.setattr(remat.cuda, "device_count", lambda: 2)


def test_gpu_branch_resolves_devices_as_pytorch(two_gpus):
    with pytest.warns(UserWarning, match=r"runs the module on cuda:0 \(device_ids\[0\]\) only"):
        model = nn.DataParallel(_Recorder(3, 2))
    assert model.device_ids == [0, 1] and model.output_device == 0
    assert model.src_device_obj == remat.device("cuda", 0)
    assert model.module.moved_to == "cuda:0"
    model = nn.DataParallel(_Recorder(3, 2), device_ids=["cuda:1"], output_device=-1, dim=1)
    assert (model.device_ids, model.output_device, model.dim) == ([1], -1, 1)
    assert model.module.moved_to == "cuda:1"
    with pytest.warns(UserWarning, match="not split across device_ids"):
        model = nn.DataParallel(_Recorder(3, 2), device_ids=[remat.device("cuda", 1), 0])
    assert model.device_ids == [1, 0] and model.output_device == 1


def test_gpu_branch_errors(two_gpus):
    with pytest.raises(RuntimeError, match="no available devices were found"):
        nn.DataParallel(_Recorder(3, 2), device_ids=[])
    with pytest.raises(ValueError, match="DataParallel: expected a cuda device, but got: cpu"):
        nn.DataParallel(_Recorder(3, 2), device_ids=["cpu"])
    with pytest.raises(TypeError, match="DataParallel: a device id must be an int"):
        nn.DataParallel(_Recorder(3, 2), device_ids=[1.5])
    # `to` was mocked, so the parameters stayed on the CPU: PyTorch's check at call time.
    model = nn.DataParallel(_Recorder(3, 2), device_ids=[0])
    with pytest.raises(RuntimeError, match=r"module must have its parameters and buffers on "
                                           r"device cuda:0 \(device_ids\[0\]\) but found one "
                                           "of them on device: cpu"):
        model(remat.ones(1, 3))


@pytest.mark.skipif(not remat.cuda.is_available(), reason="CUDA not available")
def test_on_one_gpu_inputs_move_and_the_output_stays_there():
    net = Net()
    x = remat.randn(4, 3)
    net.eval()
    want = _np(net(x))
    model = nn.DataParallel(net, device_ids=[0])
    out = model(x)  # a CPU input is moved, as PyTorch's scatter moves it
    assert out.device == "cuda:0"
    np.testing.assert_allclose(_np(out.cpu()), want, rtol=1e-5, atol=1e-6)
    assert all(p.device == "cuda:0" for p in model.parameters())


def test_same_keys_and_repr_as_torch():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available() or remat.cuda.is_available():
        pytest.skip("compares the no-GPU behaviour")
    t = torch.nn.DataParallel(torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.Linear(4, 2)))
    r = nn.DataParallel(nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 2)))
    assert list(r.state_dict()) == list(t.state_dict())
    assert r.device_ids == t.device_ids == []
    assert repr(r) == repr(t)
