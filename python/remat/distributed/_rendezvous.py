"""How the ranks of an ``nccl`` job agree on one NCCL unique id: rank 0 makes it, the others
receive it. Only those 128 bytes are exchanged; the collectives then run on NCCL.

- Under an MPI launcher (``mpirun``, ``srun`` with PMI) with mpi4py installed: MPI's
  broadcast, with MPI's rank and size.
- ``env://`` (torchrun's): ``RANK``, ``WORLD_SIZE``, ``MASTER_ADDR`` and ``MASTER_PORT``;
  rank 0 listens on that address and hands the id to each rank that connects.
- ``tcp://host:port``: the same, with the address in the URL and ``rank``/``world_size``
  given to ``init_process_group``.
- ``file:///path``: rank 0 writes the id to the file (atomically, by a rename), the others
  wait for it to appear. The file must be new for each job.

Every wait is bounded by the process group's timeout.
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from urllib.parse import urlparse

from ._work import DistBackendError

__all__ = ["exchange", "rank_and_size"]

ID_BYTES = 128


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"init_process_group: environment variable {name}={value!r} is not "
                         "an integer") from None


def rank_and_size(init_method: str | None, rank: int, world_size: int) -> tuple[int, int]:
    """This process's rank and the job's size: the arguments, else the environment (torchrun's
    ``RANK``/``WORLD_SIZE``, or an MPI launcher's)."""
    r = rank if rank is not None and rank >= 0 else _env_int("RANK")
    n = world_size if world_size is not None and world_size > 0 else _env_int("WORLD_SIZE")
    if r is None or n is None:
        for rk, sk in (("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"), ("PMI_RANK", "PMI_SIZE"),
                       ("SLURM_PROCID", "SLURM_NTASKS")):
            if r is None and rk in os.environ:
                r = _env_int(rk)
            if n is None and sk in os.environ:
                n = _env_int(sk)
    if r is None or n is None:
        raise ValueError(
            f"init_process_group: the rank and world size are unknown for init_method="
            f"{init_method!r}: pass rank= and world_size=, or launch with torchrun (RANK, "
            "WORLD_SIZE) or an MPI launcher")
    if not 0 <= r < n:
        raise ValueError(f"init_process_group: rank {r} is not in [0, {n})")
    return r, n


def _tcp(host: str, port: int, rank: int, size: int, payload: Callable[[], bytes],
         timeout: float) -> bytes:
    deadline = time.monotonic() + timeout
    if rank == 0:
        data = payload()
        with socket.create_server((host if host not in ("", "localhost") else "", port),
                                  reuse_port=False) as server:
            server.settimeout(timeout)
            served = 0
            while served < size - 1:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise DistBackendError(
                        f"init_process_group: timed out after {timeout} s waiting for "
                        f"{size - 1 - served} of {size - 1} ranks to connect to {host}:{port}")
                server.settimeout(left)
                try:
                    conn, _ = server.accept()
                except socket.timeout:
                    continue
                with conn:
                    conn.sendall(data)
                served += 1
        return data
    while True:
        try:
            with socket.create_connection((host, port), timeout=5) as conn:
                chunks, got = [], 0
                while got < ID_BYTES:
                    chunk = conn.recv(ID_BYTES - got)
                    if not chunk:
                        break
                    chunks.append(chunk)
                    got += len(chunk)
                if got == ID_BYTES:
                    return b"".join(chunks)
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise DistBackendError(
                f"init_process_group: rank {rank} timed out after {timeout} s connecting to "
                f"rank 0 at {host}:{port}")
        time.sleep(0.1)


def _file(path: str, rank: int, payload: Callable[[], bytes], timeout: float) -> bytes:
    if rank == 0:
        data = payload()
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        return data
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open(path, "rb") as f:
                data = f.read()
            if len(data) == ID_BYTES:
                return data
        except FileNotFoundError:
            pass
        if time.monotonic() > deadline:
            raise DistBackendError(
                f"init_process_group: rank {rank} timed out after {timeout} s waiting for "
                f"rank 0 to write {path}")
        time.sleep(0.05)


def exchange(init_method: str | None, rank: int, size: int, payload: Callable[[], bytes],
             timeout: float) -> bytes:
    """Rank 0's ``payload()`` (128 bytes), on every rank."""
    method = init_method or "env://"
    url = urlparse(method)
    if url.scheme == "env":
        host = os.environ.get("MASTER_ADDR")
        port = _env_int("MASTER_PORT")
        if host is None or port is None:
            raise ValueError("init_process_group: env:// needs MASTER_ADDR and MASTER_PORT "
                             "(torchrun sets them)")
        return _tcp(host, port, rank, size, payload, timeout)
    if url.scheme == "tcp":
        if url.hostname is None or url.port is None:
            raise ValueError(f"init_process_group: tcp:// needs a host and a port, got "
                             f"{method!r}")
        return _tcp(url.hostname, url.port, rank, size, payload, timeout)
    if url.scheme == "file":
        if not url.path:
            raise ValueError(f"init_process_group: file:// needs a path, got {method!r}")
        return _file(url.path, rank, payload, timeout)
    raise ValueError(f"init_process_group: unknown init_method {method!r}; expected env://, "
                     "tcp://host:port or file:///path")
