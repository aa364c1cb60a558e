"""What machine a benchmark ran on, and the peak memory of a process (shared by the
benchmark scripts)."""

from __future__ import annotations

import os
import platform
import resource


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo, or the platform's best guess."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def cpu_flags() -> str:
    """Which of the vector and bf16 extensions that matter to the kernels this CPU has
    (``avx512f, avx2, fma``, and the bfloat16 units ``avx512_bf16`` and ``amx_bf16``)."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = f.read()
    except OSError:
        return "?"
    found = [f for f in ("avx512f", "avx2", "fma", "avx512_bf16", "amx_bf16") if f" {f}" in flags]
    return ", ".join(found) or "none of avx512f/avx2/fma"


def remat_isa() -> str:
    """The instruction sets remat's kernels run on in this process (elementwise/row kernels
    and GEMMs), e.g. ``remat kernels avx512, GEMM avx512f``: ``REMAT_SIMD`` caps the first, a
    build without the ``avx512-gemm`` feature the second."""
    try:
        from remat import _remat

        cap = _remat._cpu_capability()
    except (ImportError, AttributeError):
        return "remat not importable"
    return f"remat kernels {cap['simd']}, GEMM {cap['gemm']}"


def machine_line() -> str:
    """One line for a benchmark header: CPU model, its vector flags, logical cores."""
    return f"{cpu_model()} ({cpu_flags()}), {os.cpu_count()} logical cores, {platform.machine()}"


def reset_peak_rss() -> bool:
    """Reset the kernel's RSS high-water mark (which ``ru_maxrss`` reports) to the current RSS,
    so that a later ``maxrss_kib()`` is the peak of what ran in between, not of the imports.
    False where Linux does not allow it."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def maxrss_kib() -> int:
    """The peak resident set size of this process in KiB."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
