"""Which public names lack a complete docstring, and their runnable examples.

The standard (NumPy style, rendered by the docs site's mkdocstrings):

    One-line summary.

    Parameters
    ----------
    input : Tensor
        What it is.

    Returns
    -------
    Tensor
        What comes back.

    Raises
    ------
    ShapeError
        When.

    Examples
    --------
    >>> remat.sin(remat.tensor([0.0, 1.0]))
    tensor([0.        , 0.84147096])

A function or method needs every section (``Parameters`` only when it takes arguments);
a class needs ``Parameters`` (its constructor's), ``Raises`` and ``Examples``; a property or
attribute needs a summary and ``Examples``. Public methods of public classes (``Tensor``'s and
the others') need every section, as functions do. Examples run as doctests
(``tests/docs/test_docstrings.py``) with ``remat`` and ``np`` (NumPy) imported.

Usage: ``python tools/doc_coverage.py`` lists the gaps grouped by source file and exits 1 when
there are any.
"""

from __future__ import annotations

import enum
import importlib
import inspect
import sys
from collections import defaultdict
from collections.abc import Iterator
from typing import Any

# The modules whose public names are the API (API.md); their `__all__` (or public `dir`).
MODULES = (
    "remat",
    "remat.nn",
    "remat.nn.functional",
    "remat.nn.init",
    "remat.nn.utils",
    "remat.nn.parallel",
    "remat.distributed",
    "remat.distributed.optim",
    "remat.backends.cuda",
    "remat.backends.cudnn",
    "remat.backends.mkldnn",
    "remat.backends.mps",
    "remat.backends.cpu",
    "remat.accelerator",
    "remat.optim",
    "remat.optim.lr_scheduler",
    "remat.utils.data",
    "remat.utils.checkpoint",
    "remat.checkpoint_policies",
    "remat.testing",
    "remat.cuda",
    "remat.autograd",
)

SECTIONS = ("Parameters", "Returns", "Raises", "Examples")


def _public_names(mod: Any) -> list[str]:
    names = getattr(mod, "__all__", None)
    if names is None:
        names = [n for n in dir(mod) if not n.startswith("_")]
    return list(names)


def public_objects() -> Iterator[tuple[str, Any, str]]:
    """Each public object once, as ``(qualified name, object, kind)``; kind is ``function``,
    ``class``, ``method`` (a Tensor method, needing every section), ``attribute`` (a Tensor
    property or a constant) or ``member`` (a method of another public class)."""
    seen: set[int] = set()
    classes = []
    for modname in MODULES:
        mod = importlib.import_module(modname)
        for name in _public_names(mod):
            obj = getattr(mod, name)
            if inspect.ismodule(obj) or id(obj) in seen:
                continue
            seen.add(id(obj))
            if inspect.isclass(obj):
                classes.append((f"{modname}.{name}", obj))
                yield f"{modname}.{name}", obj, "class"
            elif callable(obj) and not isinstance(obj, (int, float, str)):
                yield f"{modname}.{name}", obj, "function"
            elif not isinstance(obj, (int, float, str, bool, tuple)):
                yield f"{modname}.{name}", obj, "attribute"
    import remat

    for qual, cls in classes:
        for name, member in vars(cls).items():
            if name.startswith("_") or id(member) in seen:
                continue
            seen.add(id(member))
            is_data = isinstance(member, property) or inspect.isgetsetdescriptor(member)
            if cls is remat.Tensor:
                yield f"{qual}.{name}", member, "attribute" if is_data else "method"
            elif cls.__module__.startswith("remat") and not is_data and callable(member):
                yield f"{qual}.{name}", member, "member"


def _signature_names(obj: Any) -> list[str] | None:
    """The parameter names a docstring documents (``*args``/``**kwargs`` with their stars),
    or None where Python cannot tell (no text signature)."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    names = []
    for p in sig.parameters.values():
        if p.name in ("self", "cls"):
            continue
        star = {p.VAR_POSITIONAL: "*", p.VAR_KEYWORD: "**"}.get(p.kind, "")
        names.append(star + p.name)
    return names


def documented_parameters(doc: str) -> list[str]:
    """The names the ``Parameters`` section lists (``a, b : Tensor`` lists two)."""
    lines = doc.splitlines()
    names: list[str] = []
    def underlined(j: int) -> bool:
        return j + 1 < len(lines) and set(lines[j + 1].strip()) == {"-"}

    for i, line in enumerate(lines):
        if line.strip() == "Parameters" and underlined(i):
            indent = len(line) - len(line.lstrip())
            for j in range(i + 2, len(lines)):
                entry = lines[j]
                if not entry.strip():
                    continue
                depth = len(entry) - len(entry.lstrip())
                if depth > indent:
                    continue
                if underlined(j):
                    break
                head = entry.strip().split(" : ")[0].split(":")[0]
                names.extend(n.strip() for n in head.split(",") if n.strip())
            break
    return names


def parameter_mismatch(obj: Any, kind: str) -> list[str]:
    """Documented names the signature lacks and signature names left undocumented."""
    target = obj.fget if isinstance(obj, property) else getattr(obj, "__func__", obj)
    if kind == "attribute":
        return []
    if inspect.isclass(target) and issubclass(target, enum.Enum):
        # An enum's call signature is the enum machinery's, and it changed in Python 3.12.
        return []
    doc = inspect.cleandoc(getattr(target, "__doc__", None) or "")
    if not _has_section(doc, "Parameters"):
        return []
    expected = _signature_names(target)
    if expected is None:
        return []
    if kind == "method":
        # A row of the op table gives `remat.X` and `Tensor.X` one doc, written for the
        # function's signature (checked there); the method form is `input.X(...)`.
        import remat

        twin = getattr(remat, getattr(target, "__name__", ""), None)
        if twin is not None and inspect.cleandoc(getattr(twin, "__doc__", None) or "") == doc:
            return []
    documented = documented_parameters(doc)
    out = [f"documents unknown parameter {n!r}" for n in documented if n not in expected]
    out += [f"leaves parameter {n!r} undocumented" for n in expected if n not in documented]
    return out


def _takes_arguments(obj: Any) -> bool:
    names = _signature_names(obj)
    return names is None or bool(names)


def _has_section(doc: str, section: str) -> bool:
    lines = [line.strip() for line in doc.splitlines()]
    return any(
        line == section and i + 1 < len(lines) and set(lines[i + 1]) == {"-"}
        for i, line in enumerate(lines)
    )


def missing(obj: Any, kind: str) -> list[str]:
    """The parts of ``obj``'s docstring that the standard asks for and it lacks."""
    target = obj.fget if isinstance(obj, property) else obj
    if isinstance(obj, (staticmethod, classmethod)):
        target = obj.__func__
    doc = inspect.cleandoc(getattr(target, "__doc__", None) or "")
    if not doc:
        return ["docstring"]
    if kind == "attribute":
        needed = ["Examples"]
    elif kind == "class":
        init = getattr(target, "__init__", None)
        needed = ["Raises", "Examples"]
        if init is not None and init is not object.__init__ and _takes_arguments(init):
            needed.insert(0, "Parameters")
    else:
        needed = ["Returns", "Raises", "Examples"]
        if _takes_arguments(target):
            needed.insert(0, "Parameters")
    gaps = [s for s in needed if not _has_section(doc, s)]
    if "Examples" not in gaps and ">>>" not in doc:
        gaps.append("Examples (no >>> line)")
    return gaps + parameter_mismatch(obj, kind)


def source_of(obj: Any) -> str:
    target = obj.fget if isinstance(obj, property) else obj
    target = getattr(target, "__func__", target)
    try:
        path = inspect.getsourcefile(target)
    except TypeError:
        path = None
    if path is None:
        return "compiled (crates/remat-py/src or remat-core's op tables)"
    marker = "python/remat/"
    return "python/remat/" + path.split(marker, 1)[1] if marker in path else path


def gaps() -> dict[str, list[str]]:
    """``{source file: ["name: missing sections", ...]}`` for every incomplete docstring."""
    found: dict[str, list[str]] = defaultdict(list)
    for qual, obj, kind in public_objects():
        parts = missing(obj, kind)
        if parts:
            found[source_of(obj)].append(f"{qual} ({kind}): {', '.join(parts)}")
    return dict(found)


def main() -> int:
    found = gaps()
    total = 0
    for path in sorted(found):
        print(f"== {path} ({len(found[path])})")
        for line in found[path]:
            print(f"  {line}")
        total += len(found[path])
    print(f"{total} incomplete docstrings")
    return 1 if total else 0


if __name__ == "__main__":
    sys.exit(main())
