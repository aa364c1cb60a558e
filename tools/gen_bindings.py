"""Rewrite the generated regions of the Python surface from the installed extension.

The parameterless unary ops (``remat.sin(x)`` / ``Tensor.sin()``, ...) are the rows of
remat-core's elementwise table written ``fn(name)``; the extension binds them from that table
and lists their names, in table order, in ``remat._remat._unary_ops``. Their stub lines in
``python/remat/_remat.pyi`` and their re-exports in ``python/remat/__init__.py`` are static (so
type checkers and ``mypy.stubtest`` see them) and are written here, between the marker lines

    # BEGIN GENERATED: <region> (tools/gen_bindings.py)
    # END GENERATED: <region>

Everything outside the markers is hand-written and left as it is. Usage, after building the
extension (``maturin develop``)::

    python tools/gen_bindings.py           # rewrite the regions
    python tools/gen_bindings.py --check   # exit 1 if a region is stale (what the tests run)
"""

from __future__ import annotations

import argparse
import builtins
import pathlib
import re
import sys
from collections.abc import Callable, Sequence

ROOT = pathlib.Path(__file__).resolve().parents[1]
STUB = ROOT / "python" / "remat" / "_remat.pyi"
INIT = ROOT / "python" / "remat" / "__init__.py"
WIDTH = 100  # ruff's line-length

_REGION = re.compile(
    r"^(?P<indent>[ \t]*)# BEGIN GENERATED: (?P<name>[\w .-]+?) \(tools/gen_bindings\.py\)\n"
    r"(?P<body>.*?)"
    r"^(?P=indent)# END GENERATED: (?P=name)\n",
    re.MULTILINE | re.DOTALL,
)


def _quoted(names: Sequence[str], indent: str) -> list[str]:
    """``"a", "b",`` wrapped at ``WIDTH`` columns."""
    lines: list[str] = []
    line = indent
    for n in names:
        item = f'"{n}",'
        if line.strip() and len(line) + 1 + len(item) > WIDTH:
            lines.append(line)
            line = indent
        line += (" " if line.strip() else "") + item
    if line.strip():
        lines.append(line)
    return lines


# Each region: (file, name) -> lines of its body, from the op names and the region's indent.
Region = Callable[[Sequence[str], str], list[str]]


def _shadows(name: str) -> bool:
    """A builtin's name (``abs``, ``round``): ``remat`` re-exports it explicitly (``abs as
    abs``) but keeps it out of ``remat.__all__``, so ``from remat import *`` does not shadow the
    builtin (as for ``max``, ``sum``, ``pow``)."""
    return hasattr(builtins, name)

REGIONS: dict[tuple[pathlib.Path, str], Region] = {
    (STUB, "unary ops __all__"): lambda ops, ind: _quoted(ops, ind),
    (STUB, "unary ops methods"): lambda ops, ind: [
        f"{ind}def {n}(self) -> Tensor: ..." for n in ops
    ],
    (STUB, "unary ops functions"): lambda ops, ind: [
        f"{ind}def {n}(x: _ArrayLike) -> Tensor: ..." for n in ops
    ],
    (INIT, "unary ops imports"): lambda ops, ind: [
        f"{ind}from ._remat import (",
        *(f"{ind}    {n} as {n}," if _shadows(n) else f"{ind}    {n}," for n in ops),
        f"{ind})",
    ],
    (INIT, "unary ops __all__"): lambda ops, ind: _quoted([n for n in ops if not _shadows(n)], ind),
}


def unary_ops() -> list[str]:
    """The parameterless unary ops, in table order, from the installed extension."""
    from remat import _remat

    return list(_remat._unary_ops)


def render(path: pathlib.Path, text: str, ops: Sequence[str]) -> str:
    """``text`` (the contents of ``path``) with every generated region rewritten."""
    wanted = {name for (p, name) in REGIONS if p == path}
    seen: set[str] = set()

    def body(m: re.Match[str]) -> str:
        name, indent = m["name"], m["indent"]
        if (path, name) not in REGIONS:
            raise SystemExit(f"{path}: unknown generated region {name!r}")
        seen.add(name)
        lines = REGIONS[path, name](ops, indent)
        begin = f"{indent}# BEGIN GENERATED: {name} (tools/gen_bindings.py)\n"
        return begin + "".join(line + "\n" for line in lines) + f"{indent}# END GENERATED: {name}\n"

    out = _REGION.sub(body, text)
    if seen != wanted:
        raise SystemExit(f"{path}: generated regions missing: {sorted(wanted - seen)}")
    return out


def stale(ops: Sequence[str] | None = None) -> list[pathlib.Path]:
    """The files whose generated regions differ from what the extension gives."""
    ops = unary_ops() if ops is None else ops
    return [p for p in (STUB, INIT) if render(p, p.read_text(), ops) != p.read_text()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report stale regions")
    args = parser.parse_args(argv)
    ops = unary_ops()
    if args.check:
        bad = stale(ops)
        for p in bad:
            print(f"{p.relative_to(ROOT)}: generated regions are stale; "
                  "run tools/gen_bindings.py", file=sys.stderr)
        return 1 if bad else 0
    for p in (STUB, INIT):
        old = p.read_text()
        new = render(p, old, ops)
        if new != old:
            p.write_text(new)
            print(f"rewrote {p.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
