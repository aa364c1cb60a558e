"""DistributedDataParallel on two MPI ranks: two ranks with half the batch each end five SGD
steps with the parameters one process reaches on the whole batch, plain and under every
checkpoint entry point (each of which must really recompute in the run)."""

import pytest

from _launch import launch, requires_mpi

pytestmark = requires_mpi

MODES = ("plain", "checkpoint", "checkpoint_tensor", "policy", "group",
         "checkpoint_sequential", "offload", "budget", "module_flag", "scope",
         "memory_limit", "auto_checkpoint", "autocast_bf16")


@pytest.fixture(scope="module")
def ddp_results():
    job = launch("ddp_worker.py", *MODES)
    assert job.returncode == 0, job.describe()
    return {r["mode"]: r for r in job.results()}, job


@pytest.mark.parametrize("mode", MODES)
def test_two_ranks_half_batch_match_one_process_full_batch(ddp_results, mode):
    results, job = ddp_results
    r = results.get(mode)
    assert r is not None, job.describe()
    assert "error" not in r, r["error"]
    # bf16 matmuls round the half batches' sums differently from the whole batch's.
    tol = 1e-4 if mode == "autocast_bf16" else 1e-6
    assert r["max_diff"] <= tol, r
    assert r["ranks_equal"], r
    assert r["buckets"] > 1, r  # several buckets, each reduced on its own
    if mode != "plain":
        assert r["recomputes"] > 0, f"{mode} recomputed nothing: {r}"
