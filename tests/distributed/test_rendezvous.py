"""The rendezvous of the nccl backend (no GPU needed): rank 0's 128-byte id reaches every
rank through env:// (torchrun's variables), tcp:// and file://, each wait bounded; and
init_process_group("nccl") without NCCL says what to install."""

import os
import socket
import subprocess
import sys

import pytest

import remat
import remat.distributed as dist

CHILD = """
import os, sys
from remat.distributed import _rendezvous
method, rank, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = _rendezvous.exchange(None if method == "none" else method, rank, size,
                            lambda: bytes(range(128)), timeout=60)
print(data.hex())
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run_ranks(method, size, env=None):
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, method, str(r), str(size)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, **(env or {})})
             for r in range(size)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        outs.append(out.strip())
    return outs


@pytest.mark.parametrize("method", ["env", "tcp", "file"])
def test_every_rank_receives_rank_0s_id(method, tmp_path):
    port = free_port()
    if method == "env":
        outs = run_ranks("env://", 3, {"MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)})
    elif method == "tcp":
        outs = run_ranks(f"tcp://127.0.0.1:{port}", 3)
    else:
        outs = run_ranks(f"file://{tmp_path / 'id'}", 3)
    assert outs == [bytes(range(128)).hex()] * 3


def test_rendezvous_errors_and_timeouts(tmp_path, monkeypatch):
    from remat.distributed import _rendezvous

    for name in ("RANK", "WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
                 "PMI_RANK", "PMI_SIZE", "SLURM_PROCID", "SLURM_NTASKS"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ValueError, match="MASTER_ADDR"):
        _rendezvous.exchange("env://", 1, 2, bytes, timeout=1)
    with pytest.raises(ValueError, match="unknown init_method"):
        _rendezvous.exchange("udp://x:1", 1, 2, bytes, timeout=1)
    with pytest.raises(dist.DistBackendError, match="timed out"):
        _rendezvous.exchange(f"file://{tmp_path / 'never'}", 1, 2, bytes, timeout=0.3)
    port = free_port()
    with pytest.raises(dist.DistBackendError, match="timed out"):
        _rendezvous.exchange(f"tcp://127.0.0.1:{port}", 1, 2, bytes, timeout=0.5)
    with pytest.raises(ValueError, match="rank and world size"):
        _rendezvous.rank_and_size("env://", -1, -1)
    monkeypatch.setenv("RANK", "2")
    monkeypatch.setenv("WORLD_SIZE", "3")
    assert _rendezvous.rank_and_size("env://", -1, -1) == (2, 3)
    with pytest.raises(ValueError, match="not in"):
        _rendezvous.rank_and_size("file:///x", 5, 3)
    assert _rendezvous.rank_and_size("file:///x", 1, 4) == (1, 4)


@pytest.mark.skipif(remat.cuda.is_available(), reason="checks the error without NCCL")
def test_nccl_without_a_gpu_says_what_to_install():
    assert not dist.is_nccl_available()
    with pytest.raises(RuntimeError, match="nvidia-nccl-cu13"):
        dist.init_process_group("nccl", init_method="file:///nonexistent", rank=0,
                                world_size=1)
    assert not dist.is_initialized()
