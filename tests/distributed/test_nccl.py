"""The nccl backend on one GPU (world size 1; skipped without a GPU and libnccl): the
collectives on CUDA tensors, and the data-parallel example over NCCL."""

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

import remat.distributed as dist

pytestmark = pytest.mark.skipif(not dist.is_nccl_available(),
                                reason="needs a CUDA GPU and libnccl (nvidia-nccl-cu13)")

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ddp_gpt.py"

CHILD = """
import remat, remat.distributed as dist
dist.init_process_group("nccl", init_method="file://" + __import__("sys").argv[1], rank=0,
                        world_size=1, timeout=60)
t = remat.tensor([1.0, 2.0], device="cuda")
dist.all_reduce(t)
assert t.tolist() == [1.0, 2.0], t
b = remat.ones(3, dtype=remat.bfloat16, device="cuda")
dist.broadcast(b, src=0)
out = remat.zeros(2, device="cuda")
dist.all_gather_into_tensor(out, remat.tensor([3.0, 4.0], device="cuda"))
assert out.tolist() == [3.0, 4.0], out
rs = remat.zeros(2, device="cuda")
dist.reduce_scatter_tensor(rs, remat.tensor([5.0, 6.0], device="cuda"))
assert rs.tolist() == [5.0, 6.0], rs
w = dist.all_reduce(remat.ones(4, device="cuda"), op=dist.ReduceOp.AVG, async_op=True)
w.wait()
dist.barrier()
print("nccl ok", dist.get_backend())
dist.destroy_process_group()
"""


def test_nccl_collectives_on_one_gpu(tmp_path):
    r = subprocess.run([sys.executable, "-c", CHILD, str(tmp_path / "id")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "nccl ok nccl" in r.stdout


def test_ddp_example_over_nccl_on_one_gpu():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, RANK="0", WORLD_SIZE="1", LOCAL_RANK="0",
               MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    r = subprocess.run([sys.executable, str(EXAMPLE), "--backend", "nccl", "--steps", "5",
                        "--verify"], capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 ranks (nccl)" in r.stdout and "(agrees)" in r.stdout, r.stdout
