"""remat.backends.cuda.matmul flags and remat.set/get_float32_matmul_precision: PyTorch's
defaults, checks and the allow_tf32 <-> precision tie; the values live in cuda._SETTINGS."""

import subprocess
import sys

import pytest

import remat
from remat.backends import cuda

matmul = remat.backends.cuda.matmul


def test_defaults_are_pytorchs():
    assert remat.get_float32_matmul_precision() == "highest"
    assert matmul.allow_tf32 is False
    assert matmul.allow_fp16_reduced_precision_reduction is True
    assert matmul.allow_bf16_reduced_precision_reduction is True
    assert matmul.allow_fp16_reduced_precision_reduction_split_k is True
    assert matmul.allow_bf16_reduced_precision_reduction_split_k is True
    assert matmul.allow_fp16_accumulation is False


def test_defaults_in_a_fresh_process():
    code = ("import remat; m = remat.backends.cuda.matmul; "
            "print(remat.get_float32_matmul_precision(), m.allow_tf32, "
            "m.allow_fp16_reduced_precision_reduction, m.allow_bf16_reduced_precision_reduction)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True).stdout.split()
    assert out == ["highest", "False", "True", "True"]


@pytest.mark.parametrize("precision,tf32", [("highest", False), ("high", True),
                                            ("medium", True)])
def test_precision_ties_to_allow_tf32(precision, tf32):
    remat.set_float32_matmul_precision(precision)
    assert remat.get_float32_matmul_precision() == precision
    assert matmul.allow_tf32 is tf32
    assert cuda._SETTINGS["float32_matmul_precision"] == precision


def test_allow_tf32_sets_the_precision():
    matmul.allow_tf32 = True
    assert remat.get_float32_matmul_precision() == "high"
    remat.set_float32_matmul_precision("medium")
    matmul.allow_tf32 = True
    assert remat.get_float32_matmul_precision() == "high"
    matmul.allow_tf32 = False
    assert remat.get_float32_matmul_precision() == "highest"


def test_unknown_precision_warns_and_changes_nothing():
    remat.set_float32_matmul_precision("high")
    for bad in ("low", "HIGH", ""):
        with pytest.warns(UserWarning, match=f"set_float32_matmul_precision: {bad!r} is not "
                                             "one of 'highest', 'high', or 'medium'"):
            remat.set_float32_matmul_precision(bad)
        assert remat.get_float32_matmul_precision() == "high"


@pytest.mark.parametrize("bad", [3, None, b"high"])
def test_precision_must_be_a_str(bad):
    with pytest.raises(RuntimeError, match="set_float32_matmul_precision expects a str, but "
                                           f"got {type(bad).__name__}"):
        remat.set_float32_matmul_precision(bad)


def test_flags_take_bools_only():
    with pytest.raises(RuntimeError, match="backends.cuda.matmul.allow_tf32 expects a bool, "
                                           "but got int"):
        matmul.allow_tf32 = 1
    with pytest.raises(RuntimeError, match="allow_fp16_accumulation expects a bool"):
        matmul.allow_fp16_accumulation = "yes"
    assert matmul.allow_tf32 is False and matmul.allow_fp16_accumulation is False
    matmul.allow_fp16_accumulation = True
    assert cuda._SETTINGS["matmul.allow_fp16_accumulation"] is True


@pytest.mark.parametrize("name", ["allow_fp16_reduced_precision_reduction",
                                  "allow_bf16_reduced_precision_reduction"])
def test_reduced_precision_reductions_take_a_bool_or_a_pair(name):
    setattr(matmul, name, False)
    assert getattr(matmul, name) is False and getattr(matmul, name + "_split_k") is True
    setattr(matmul, name, (True, False))
    assert getattr(matmul, name) is True and getattr(matmul, name + "_split_k") is False
    setattr(matmul, name, [False])
    assert getattr(matmul, name) is False and getattr(matmul, name + "_split_k") is True
    assert cuda._SETTINGS["matmul." + name] is False
    for bad, match in [(1, "expects a bool or a tuple/list of bools"),
                       ((), "expects at least one boolean argument"),
                       ((True, True, True), "expects at most two boolean arguments"),
                       ((1,), "expects a bool for allow_reduced_precision"),
                       ((True, 0), "expects a bool for allow_splitk")]:
        with pytest.raises(TypeError, match=f"{name} {match}"):
            setattr(matmul, name, bad)


def test_unknown_attributes_raise_attribute_error():
    with pytest.raises(AttributeError, match="Unknown attribute allow_tf33"):
        matmul.allow_tf33  # noqa: B018
    with pytest.raises(AttributeError, match="Unknown attribute allow_tf33"):
        matmul.allow_tf33 = True
    assert not hasattr(matmul, "allow_fp32")


def test_float32_matmul_is_unchanged_by_the_flags():
    # The flags record the setting; float32 matmuls stay full float32 today.
    a = remat.randn(16, 16)
    b = remat.randn(16, 16)
    exact = (a @ b).numpy()
    remat.set_float32_matmul_precision("medium")
    assert ((a @ b).numpy() == exact).all()


def test_repr_names_the_flags():
    assert repr(matmul).startswith("matmul(allow_tf32=False, ")


def test_defaults_and_ties_match_torch():
    pytest.importorskip("torch")
    code = (
        "import warnings, torch; warnings.simplefilter('ignore'); m = torch.backends.cuda.matmul\n"
        "print(torch.get_float32_matmul_precision(), m.allow_tf32, "
        "m.allow_fp16_reduced_precision_reduction, m.allow_bf16_reduced_precision_reduction)\n"
        "m.allow_tf32 = True; print(torch.get_float32_matmul_precision())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, check=True).stdout.split()
    assert out[:4] == ["highest", "False", "True", "True"]
    matmul.allow_tf32 = True
    assert out[4] == remat.get_float32_matmul_precision() == "high"
