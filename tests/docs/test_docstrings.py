"""Every public name has a complete docstring (the standard in ``tools/doc_coverage.py``:
parameters, returns, raises and an example), and every example in them runs: each docstring's
``>>>`` lines are a doctest, with ``remat`` and ``np`` imported and the global seed fixed."""

from __future__ import annotations

import doctest
import gc
import importlib.util
import inspect
import pathlib

import numpy as np
import pytest

import remat

_TOOL = pathlib.Path(__file__).resolve().parents[2] / "tools" / "doc_coverage.py"
_spec = importlib.util.spec_from_file_location("doc_coverage", _TOOL)
assert _spec is not None and _spec.loader is not None
doc_coverage = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(doc_coverage)

PUBLIC = list(doc_coverage.public_objects())
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _doc(obj):
    target = obj.fget if isinstance(obj, property) else getattr(obj, "__func__", obj)
    return inspect.cleandoc(getattr(target, "__doc__", None) or "")


# Sorted by name, so every pytest-xdist worker collects the same list (attribute order of
# the extension's classes is not stable between processes).
WITH_EXAMPLES = sorted(((qual, obj) for qual, obj, _ in PUBLIC if ">>>" in _doc(obj)),
                       key=lambda e: e[0])


def test_every_public_name_has_a_complete_docstring():
    gaps = doc_coverage.gaps()
    listed = "\n".join(f"{path}: {line}" for path, lines in gaps.items() for line in lines)
    assert not gaps, f"incomplete docstrings (python tools/doc_coverage.py):\n{listed}"


@pytest.mark.parametrize("qual,obj", WITH_EXAMPLES, ids=[q for q, _ in WITH_EXAMPLES])
def test_docstring_examples_run(qual, obj, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that save files write here
    # Earlier tests' cyclic garbage (tensors included) goes now, not when a collection happens
    # to run inside an example that counts allocated bytes.
    gc.collect()
    remat.manual_seed(0)
    np.random.seed(0)
    parser = doctest.DocTestParser()
    test = parser.get_doctest(_doc(obj), {"remat": remat, "np": np}, qual, None, 0)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    lines: list[str] = []
    runner.run(test, out=lines.append)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, "".join(lines)

