"""The bfloat16 and float16 dtypes as PyTorch's: conversions, promotion, finfo, default
dtype, modules, NumPy (float16 zero-copy; bfloat16 through ml_dtypes), DLPack and
safetensors; and the bytes a bf16-autocast step keeps."""

import gc

import numpy as np
import pytest

import remat
import remat.nn as nn

HALVES = [remat.bfloat16, remat.float16]


@pytest.mark.parametrize("half", HALVES, ids=str)
def test_conversions_and_storage(half):
    x = remat.tensor([1.0, 2.5, -3.0])
    y = x.to(half)
    assert y.dtype == half and y.element_size() == 2 and y.is_floating_point()
    assert (x.half() if half == remat.float16 else x.bfloat16()).dtype == half
    assert y.float().tolist() == [1.0, 2.5, -3.0]
    assert remat.zeros(3, dtype=half).nbytes == 6


@pytest.mark.parametrize("name", ["bfloat16", "float16"])
def test_casts_round_as_pytorch_bit_for_bit(name):
    """float32 (and float64) to half rounds to nearest even, as PyTorch's casts do; among the
    values, 0x7da08005, which must round up."""
    torch = pytest.importorskip("torch")
    bits = np.random.default_rng(1).integers(0, 2**32, 100_000, dtype=np.uint64)
    x = np.concatenate([bits.astype(np.uint32).view(np.float32),
                        np.array([0x7DA08005], dtype=np.uint32).view(np.float32)])
    x = x[np.isfinite(x)]
    want = torch.from_numpy(x).to(getattr(torch, name)).view(torch.int16).numpy()
    got = remat.tensor(x).to(getattr(remat, name))
    assert np.array_equal(torch.from_dlpack(got).view(torch.int16).numpy(), want)
    got64 = remat.tensor(x.astype(np.float64)).to(getattr(remat, name))
    want64 = torch.from_numpy(x.astype(np.float64)).to(getattr(torch, name))
    assert np.array_equal(torch.from_dlpack(got64).view(torch.int16).numpy(),
                          want64.view(torch.int16).numpy())


def test_promotion_as_pytorch():
    b, h, f = remat.ones(2).bfloat16(), remat.ones(2).half(), remat.ones(2)
    assert (b + h).dtype == remat.float32
    assert (b + f).dtype == remat.float32
    assert (b * 2.5).dtype == remat.bfloat16
    assert (b + remat.tensor(1.0)).dtype == remat.bfloat16  # a 0-d float32 does not promote
    assert (remat.ones(2, dtype=remat.int64) + h).dtype == remat.float16


def test_finfo_and_iinfo_match_pytorch():
    bf, f16 = remat.finfo(remat.bfloat16), remat.finfo(remat.float16)
    assert (bf.bits, bf.eps, bf.max, bf.tiny) == (16, 0.0078125, 3.3895313892515355e38,
                                                  1.1754943508222875e-38)
    assert (f16.bits, f16.eps, f16.max, f16.tiny) == (16, 0.0009765625, 65504.0,
                                                      6.103515625e-05)
    assert remat.iinfo(remat.int32).max == 2**31 - 1
    assert remat.is_floating_point(remat.ones(1).bfloat16())


def test_default_dtype_can_be_half():
    old = remat.get_default_dtype()
    try:
        remat.set_default_dtype(remat.bfloat16)
        assert remat.tensor([1.5]).dtype == remat.bfloat16
        assert remat.randn(2).dtype == remat.bfloat16
        assert nn.Linear(2, 2).weight.dtype == remat.bfloat16
    finally:
        remat.set_default_dtype(old)
    assert remat.tensor([1.5]).dtype == remat.float32


@pytest.mark.parametrize("half", HALVES, ids=str)
def test_module_casts_and_trains_in_half(half):
    remat.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
    model = model.half() if half == remat.float16 else model.bfloat16()
    assert all(p.dtype == half for p in model.parameters())
    opt = remat.optim.Adam(model.parameters(), lr=1e-2)
    x = remat.randn(16, 4).to(half)
    losses = []
    for _ in range(40):
        opt.zero_grad()
        loss = model(x).float().pow(2).mean()
        loss.backward()
        assert all(p.grad.dtype == half for p in model.parameters())
        opt.step()
        losses.append(loss.item())
    assert all(p.dtype == half for p in model.parameters())
    assert losses[-1] < 0.6 * losses[0], losses
    assert model.to(remat.float32).__class__ is nn.Sequential
    assert all(p.dtype == remat.float32 for p in model.parameters())


def test_numpy_float16_is_zero_copy_both_ways():
    a = np.arange(6, dtype=np.float16).reshape(2, 3)
    t = remat.from_numpy(a)
    assert t.dtype == remat.float16
    a[0, 0] = 7.0
    assert t[0, 0].item() == 7.0
    back = t.numpy()
    assert back.dtype == np.float16 and np.shares_memory(back, a)


def test_numpy_bfloat16_through_ml_dtypes():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    a = np.array([1.0, 0.5, -2.0, 3.140625], dtype=ml_dtypes.bfloat16)
    t = remat.from_numpy(a)
    assert t.dtype == remat.bfloat16 and t.float().tolist() == [1.0, 0.5, -2.0, 3.140625]
    back = t.numpy()
    assert back.dtype == ml_dtypes.bfloat16 and np.shares_memory(back, a)
    assert remat.tensor(a).dtype == remat.bfloat16


@pytest.mark.parametrize("name", ["bfloat16", "float16"])
def test_dlpack_with_pytorch_both_ways(name):
    torch = pytest.importorskip("torch")
    src = torch.randn(3, 4).to(getattr(torch, name))
    t = remat.from_dlpack(src)
    assert str(t.dtype) == name
    assert torch.equal(torch.from_dlpack(t).view(torch.int16), src.view(torch.int16))
    back = torch.from_dlpack(t)
    back[0, 0] = 5.0
    assert t[0, 0].item() == 5.0  # shared memory


def test_safetensors_half_files_round_trip_bit_exactly(tmp_path):
    bits = np.random.default_rng(0).integers(0, 2**16, 64, dtype=np.uint16)
    bits = bits[(bits & 0x7F80) != 0x7F80]  # drop the NaN and infinity patterns
    wide = (bits.astype(np.uint32) << 16).view(np.float32)
    w = remat.tensor(wide).bfloat16()
    h = remat.tensor(np.array([1.0, -0.33325, 65504.0], dtype=np.float16))
    remat.save({"w": w, "h": h}, tmp_path / "half.safetensors", metadata={"format": "pt"})
    back = remat.load(tmp_path / "half.safetensors")
    assert back["w"].dtype == remat.bfloat16 and back["h"].dtype == remat.float16
    np.testing.assert_array_equal(back["w"].float().numpy(), wide)
    np.testing.assert_array_equal(back["h"].numpy(), h.numpy())


def test_safetensors_bf16_written_by_pytorch_loads_exactly(tmp_path):
    torch = pytest.importorskip("torch")
    st = pytest.importorskip("safetensors.torch")
    w = torch.randn(5, 7).bfloat16()
    st.save_file({"weight": w, "bias": torch.randn(5).half()}, str(tmp_path / "t.safetensors"))
    back = remat.load(tmp_path / "t.safetensors")
    assert back["weight"].dtype == remat.bfloat16 and back["bias"].dtype == remat.float16
    assert np.array_equal(back["weight"].float().numpy(), w.float().numpy())
    # and the other way: PyTorch reads remat's file bit for bit
    remat.save(dict(back), tmp_path / "r.safetensors")
    again = st.load_file(str(tmp_path / "r.safetensors"))
    assert torch.equal(again["weight"].view(torch.int16), w.view(torch.int16))
    # load_state_dict casts to the module's dtype, as PyTorch's copy_ does
    lin = nn.Linear(7, 5)
    lin.load_state_dict(back)
    assert lin.weight.dtype == remat.float32
    np.testing.assert_array_equal(lin.weight.detach().numpy(), w.float().numpy())


@pytest.mark.parametrize("name", ["complex64", "uint8", "float8_e4m3fn"])
def test_missing_dtypes_raise_naming_them(name):
    with pytest.raises(remat.DTypeError, match=name):
        remat.zeros(2, dtype=name)


def _kept_bytes(autocast):
    """Bytes the graph keeps after the forward of a 16 x (Linear + ReLU) MLP step, and the
    bytes of the parameters' bf16 casts among them (cached for the region and kept by the
    graph, as PyTorch's are)."""
    remat.manual_seed(0)
    layers = []
    for _ in range(16):
        layers += [nn.Linear(256, 256), nn.ReLU()]
    model = nn.Sequential(*layers)
    x = remat.randn(1024, 256)
    gc.collect()
    base = remat.memory_allocated()
    with remat.autocast("cpu", enabled=autocast):
        loss = model(x).pow(2).mean()
    kept = remat.memory_allocated() - base
    loss.backward()
    casts = sum(p.numel() * 2 for p in model.parameters()) if autocast else 0
    return kept, casts


def test_bf16_autocast_keeps_about_half_the_activation_bytes():
    fp32, _ = _kept_bytes(False)
    bf16, casts = _kept_bytes(True)
    assert (bf16 - casts) <= 0.55 * fp32, (bf16, casts, fp32)
