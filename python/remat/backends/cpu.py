"""``remat.backends.cpu``, as ``torch.backends.cpu``: ``get_cpu_capability()``."""

from __future__ import annotations

import platform

__all__ = ["get_cpu_capability"]


def _x86_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def get_cpu_capability() -> str:
    """The widest vector instruction set of this CPU, named as
    ``torch.backends.cpu.get_cpu_capability()`` names it: ``"AVX512"``, ``"AVX2"`` or
    ``"DEFAULT"`` on x86-64 (read from ``/proc/cpuinfo``; ``"DEFAULT"`` where it cannot be
    read), ``"DEFAULT"`` elsewhere.

    It describes the machine (for scripts that log it); remat's kernels are compiled by the
    Rust toolchain and do not switch on it.

    Returns
    -------
    str
        ``"AVX512"``, ``"AVX2"`` or ``"DEFAULT"``.

    Raises
    ------
    TypeError
        When given an argument (it takes none).

    Examples
    --------
    >>> remat.backends.cpu.get_cpu_capability() in ("AVX512", "AVX2", "DEFAULT")
    True
    """
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return "DEFAULT"
    flags = _x86_flags()
    # PyTorch's AVX512 level needs the F, BW, VL and DQ subsets.
    if {"avx512f", "avx512bw", "avx512vl", "avx512dq"} <= flags:
        return "AVX512"
    if {"avx2", "fma"} <= flags:
        return "AVX2"
    return "DEFAULT"
