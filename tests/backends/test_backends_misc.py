"""remat.backends.mps (neither built nor available), remat.backends.mkldnn (not available,
PyTorch's flag defaults, bool checks) and remat.backends.cpu.get_cpu_capability()."""

import pytest

import remat
from remat.backends import cpu, cuda, mkldnn, mps


def test_package_layout():
    assert remat.backends.cuda is cuda and remat.backends.mps is mps
    assert set(remat.backends.__all__) == {"cpu", "cuda", "cudnn", "mkldnn", "mps"}


def test_mps_is_neither_built_nor_available():
    assert mps.is_available() is False and mps.is_built() is False


def test_mkldnn_flags():
    assert mkldnn.is_available() is False
    assert (mkldnn.enabled, mkldnn.deterministic) == (True, False)
    mkldnn.deterministic = True
    assert cuda._SETTINGS["mkldnn.deterministic"] is True
    with pytest.raises(RuntimeError, match="backends.mkldnn.enabled expects a bool"):
        mkldnn.enabled = "no"


def test_cpu_capability(monkeypatch):
    assert cpu.get_cpu_capability() in ("AVX512", "AVX2", "DEFAULT")
    monkeypatch.setattr(cpu.platform, "machine", lambda: "x86_64")
    for flags, want in [({"avx512f", "avx512bw", "avx512vl", "avx512dq", "avx2", "fma"},
                         "AVX512"),
                        ({"avx512f", "avx2", "fma"}, "AVX2"),
                        ({"sse4_2"}, "DEFAULT"),
                        (set(), "DEFAULT")]:
        monkeypatch.setattr(cpu, "_x86_flags", lambda flags=flags: flags)
        assert cpu.get_cpu_capability() == want
    monkeypatch.setattr(cpu.platform, "machine", lambda: "aarch64")
    assert cpu.get_cpu_capability() == "DEFAULT"


def test_cpu_capability_matches_torch():
    torch = pytest.importorskip("torch")
    if torch.backends.cpu.get_cpu_capability() not in ("AVX512", "AVX2", "DEFAULT"):
        pytest.skip("a capability remat does not name")
    assert cpu.get_cpu_capability() == torch.backends.cpu.get_cpu_capability()
