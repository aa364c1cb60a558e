"""What machine a benchmark ran on, and the peak memory of a process (shared by the
benchmark scripts)."""

from __future__ import annotations

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
