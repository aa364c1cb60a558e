"""`remat.cuda.amp` exists as PyTorch's module path, and asking it for the mixed-precision
names says plainly that remat has none yet."""

import importlib

import pytest

import remat


def test_the_module_path_imports():
    amp = importlib.import_module("remat.cuda.amp")
    assert amp is remat.cuda.amp
    assert remat.cuda.is_available() in (True, False)  # the package still is remat.cuda


@pytest.mark.parametrize("name", ["autocast", "GradScaler", "custom_fwd", "custom_bwd"])
def test_mixed_precision_names_explain_their_absence(name):
    with pytest.raises(ImportError, match=f"remat.cuda.amp.{name}: remat has no mixed precision"):
        exec(f"from remat.cuda.amp import {name}", {})


def test_other_names_are_ordinary_attribute_errors():
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        remat.cuda.amp.nothing  # noqa: B018
