"""Run Python code in a fresh interpreter, with a timeout, for tests whose failure mode could
take the test process down with it: an abort, a segfault, a hang, a resource limit that
cannot be lifted again, a ``fork``.

``run_python(code)`` returns a ``Run`` (exit status, output, whether it was killed after the
timeout); ``assert_clean_exit(name, run)`` turns a crash, an abort or a hang into an assertion
error that names the case and shows the tail of its stderr.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from dataclasses import dataclass

# Generous: a hang is what this guards against, not slowness (debug builds on a loaded
# machine can be slow).
TIMEOUT = 300.0


@dataclass
class Run:
    """The outcome of one child interpreter."""

    returncode: int | None  # None: killed after the timeout
    stdout: str
    stderr: str

    @property
    def timed_out(self) -> bool:
        return self.returncode is None

    def status(self) -> str:
        """The exit status in words: ``exit 0``, ``killed by SIGABRT``, ``timed out``."""
        if self.returncode is None:
            return "timed out (hung)"
        if self.returncode < 0:
            try:
                return f"killed by {signal.Signals(-self.returncode).name}"
            except ValueError:
                return f"killed by signal {-self.returncode}"
        return f"exit {self.returncode}"

    def tail(self, chars: int = 2000) -> str:
        """The last ``chars`` characters of stderr (then of stdout, if stderr is empty)."""
        text = self.stderr.strip() or self.stdout.strip()
        return text[-chars:]


def _text(data: str | bytes | None) -> str:
    if data is None:
        return ""
    return data.decode(errors="replace") if isinstance(data, bytes) else data


def run_python(code: str, timeout: float = TIMEOUT, env: dict[str, str] | None = None) -> Run:
    """Run ``code`` (dedented) in a new interpreter; kill it after ``timeout`` seconds."""
    full_env = dict(os.environ)
    full_env.setdefault("PYTHONFAULTHANDLER", "1")  # a segfault prints the Python stack
    if env:
        full_env.update(env)
    try:
        proc = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code)],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=full_env,
        )
    except subprocess.TimeoutExpired as e:
        return Run(None, _text(e.stdout), _text(e.stderr))
    return Run(proc.returncode, proc.stdout, proc.stderr)


def describe(name: str, run: Run) -> str:
    """A failure message: the case, how the child ended, and the tail of its stderr."""
    return f"{name}: {run.status()}\n--- stderr tail ---\n{run.tail()}"


def assert_clean_exit(name: str, run: Run) -> None:
    """Fail (naming ``name``) unless the child exited normally with status 0."""
    assert run.returncode == 0, describe(name, run)
