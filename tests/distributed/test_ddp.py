"""DistributedDataParallel on two MPI ranks: two ranks with half the batch each end five SGD
steps with the parameters one process reaches on the whole batch, plain and under every
checkpoint entry point (each of which must really recompute in the run)."""

import pytest

from _launch import launch, requires_mpi
from ddp_worker import Net

pytestmark = requires_mpi

MODES = Net.MODES


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


@pytest.fixture(scope="module")
def special_results():
    job = launch("ddp_worker.py", "no_sync", "unused", "buffers")
    assert job.returncode == 0, job.describe()
    out = {}
    for r in job.results():
        out.setdefault(r["mode"], {})[r.get("rank", 0)] = r
    return out, job


def test_no_sync_accumulates_locally_then_reduces_the_sum(special_results):
    out, job = special_results
    r = out["no_sync"][0]
    assert "error" not in r, r
    assert r["bytes_before_sync"] == 0  # nothing was communicated under no_sync
    assert r["bytes_synced"] > 0
    assert r["max_diff"] <= 1e-6, r


def test_unused_parameters_are_found_and_errors_match_pytorch(special_results):
    out, job = special_results
    g0, g1 = out["unused"][0], out["unused"][1]
    assert "error" not in g0 and "error" not in g1, (g0, g1)
    # b is used on rank 0 only: both ranks get the average; no rank used `never`.
    assert g0["grads"] == g1["grads"]
    assert g0["grads"]["b.bias"] == [1.0, 1.0, 1.0, 1.0]
    assert g0["grads"]["never.weight"] is None and g0["grads"]["never.bias"] is None
    assert "Expected to have finished reduction in the prior iteration" in g0["strict_error"]
    assert "b.weight" in g0["strict_error"]
    assert "Expected to mark a variable ready only once" in g0["twice_error"]


def test_buffers_come_from_rank_0_at_each_forward(special_results):
    out, job = special_results
    r = out["buffers"][0]
    assert "error" not in r, r
    assert r["equal"], r
