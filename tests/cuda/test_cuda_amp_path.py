"""`remat.cuda.amp` exists as PyTorch's module path, with `autocast`, `GradScaler`,
`custom_fwd` and `custom_bwd` under PyTorch's deprecated names."""

import importlib
import warnings

import pytest

import remat


def test_the_module_path_imports():
    amp = importlib.import_module("remat.cuda.amp")
    assert amp is remat.cuda.amp
    assert remat.cuda.is_available() in (True, False)  # the package still is remat.cuda


def test_the_mixed_precision_names_are_there():
    from remat.cuda.amp import GradScaler, autocast, custom_bwd, custom_fwd

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # without a GPU both disable themselves, warning
        with autocast():
            assert remat.get_autocast_dtype("cuda") == remat.float16
        assert GradScaler().is_enabled() == remat.cuda.is_available()
    assert callable(custom_fwd(cast_inputs=remat.float32)) and callable(custom_bwd())


def test_other_names_are_ordinary_attribute_errors():
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        remat.cuda.amp.nothing  # noqa: B018
