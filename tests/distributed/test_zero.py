"""ZeroRedundancyOptimizer: on two MPI ranks, sharded Adam (and SGD) training matches a plain
optimizer over all the parameters in the same process, each rank holds about half the state,
consolidated state dicts equal the plain optimizer's and load both ways; in one process, the
constructor's argument checks."""

from __future__ import annotations

import pytest

import remat
import remat.distributed as dist
from _launch import launch, requires_mpi
from remat.distributed.optim import ZeroRedundancyOptimizer

CASES = ("adam", "bucket_view", "bucket_mixed", "ddp", "sgd", "groups", "state_dict",
         "round_trip", "subgroup", "errors")
TOL = 1e-6


@pytest.fixture(scope="module")
def zero_results():
    job = launch("zero_worker.py", *CASES)
    assert job.returncode == 0, job.describe()
    results = {(r["case"], r["rank"]): r for r in job.results()}
    for key, r in results.items():
        assert "error" not in r, f"{key}: {r['error']}\n{r.get('trace', '')}"
    return results, job


def result(zero_results, case, rank):
    results, job = zero_results
    r = results.get((case, rank))
    assert r is not None, job.describe()
    return r


def check_halves(r):
    # Each rank holds its shard's two moments; together exactly the plain optimizer's.
    assert sum(r["all_local_bytes"]) == r["plain_bytes"]
    for b in r["all_local_bytes"]:
        assert abs(b - r["plain_bytes"] / 2) <= 0.05 * r["plain_bytes"], r


# -- two ranks --------------------------------------------------------------------------------

@requires_mpi
@pytest.mark.parametrize("case", ["adam", "bucket_view"])
@pytest.mark.parametrize("rank", [0, 1])
def test_sharded_adam_with_a_scheduler_matches_plain_adam(zero_results, case, rank):
    r = result(zero_results, case, rank)
    assert r["max_diff"] <= TOL, r
    assert r["ranks_equal"], r
    # The scheduler set zero.param_groups' lr; the trajectory above shows the local
    # optimizer used it; the local groups get it at each step (one step behind here).
    assert r["lr"] == pytest.approx(r["plain_lr"])
    assert r["local_lr"] == pytest.approx(r["plain_lr"] / 0.7)
    assert (r["n_groups"], r["n_params"]) == (1, 8)  # the full groups, all parameters


@requires_mpi
@pytest.mark.parametrize("case", ["adam", "ddp"])
@pytest.mark.parametrize("rank", [0, 1])
def test_each_rank_holds_the_state_of_its_greedy_shard_only(zero_results, case, rank):
    r = result(zero_results, case, rank)
    assert r["owned"] == r["expected_owned"], r
    assert r["local_bytes"] == r["expected_bytes"], r
    check_halves(r)


@requires_mpi
def test_the_ranks_own_disjoint_shards_covering_all_parameters(zero_results):
    owned = [result(zero_results, "adam", rank)["owned"] for rank in (0, 1)]
    assert sorted(owned[0] + owned[1]) == list(range(8))


@requires_mpi
@pytest.mark.parametrize("rank", [0, 1])
def test_under_ddp_on_half_batches_matches_plain_adam_on_the_whole_batch(zero_results, rank):
    r = result(zero_results, "ddp", rank)
    assert r["max_diff"] <= TOL, r
    assert r["ranks_equal"], r


@requires_mpi
@pytest.mark.parametrize("rank", [0, 1])
def test_bucket_views_of_two_dtypes(zero_results, rank):
    r = result(zero_results, "bucket_mixed", rank)
    assert r["max_diff"] <= TOL and r["extra_diff"] <= TOL, r
    assert r["ranks_equal"] and r["extra_dtype"] == "float64", r
    assert r["extra_owner"] == [0]  # the rank-1 copy came through a float64 bucket
    assert sum(r["all_local_bytes"]) == r["plain_bytes"]


@requires_mpi
@pytest.mark.parametrize("rank", [0, 1])
def test_sharded_sgd_with_nesterov_momentum_matches_plain_sgd(zero_results, rank):
    r = result(zero_results, "sgd", rank)
    assert r["max_diff"] <= TOL and r["ranks_equal"], r
    assert r["local_bytes"] == r["counted_bytes"]
    check_halves(r)


@requires_mpi
@pytest.mark.parametrize("rank", [0, 1])
def test_named_param_groups_and_add_param_group(zero_results, rank):
    r = result(zero_results, "groups", rank)
    assert r["max_diff"] <= TOL and r["ranks_equal"], r
    assert r["groups_after_add"] == [2, 2]
    assert r["added_lr"] == [0.05, 0.05]
    assert r["added_has_defaults"]  # the local optimizer's defaults show in the full group
    assert sum(r["all_local_bytes"]) == r["plain_bytes"]
    if rank == 0:
        assert r["same_keys"] and r["tensor_kinds_match"] and r["groups_equal"], r
        assert r["state_max_diff"] == 0.0
        assert r["param_names"] == ["0.bias", "2.bias", "4.bias", "6.bias"]


@requires_mpi
def test_consolidated_state_dict_equals_plain_adams(zero_results):
    for rank, key in ((0, "to_0"), (1, "to_1")):
        r = result(zero_results, "state_dict", rank)
        assert r["max_diff"] == 0.0
        c = r[key]
        assert c["same_keys"] and c["tensor_kinds_match"] and c["groups_equal"], r
        assert c["state_max_diff"] <= TOL, r
    r0 = result(zero_results, "state_dict", 0)
    assert r0["n_state"] == 8 and r0["keys_sorted"] and r0["tensors_on_cpu"]


@requires_mpi
def test_state_dict_raises_on_a_rank_the_state_was_not_consolidated_to(zero_results):
    r0, r1 = (result(zero_results, "state_dict", rank) for rank in (0, 1))
    for r, rank in ((r0, 0), (r1, 1)):
        assert r["before_consolidation"].startswith("RuntimeError"), r
        assert f"consolidate_state_dict(to={rank})" in r["before_consolidation"]
    assert r0["after_to_0"] == "ok" and r1["after_to_1"] == "ok"
    assert r1["after_to_0"].startswith("RuntimeError: ZeroRedundancyOptimizer"), r1
    # A consolidation to another rank drops what this rank held.
    assert r0["after_to_1"].startswith("RuntimeError"), r0


@requires_mpi
def test_state_dict_is_a_snapshot_with_the_current_hyperparameters(zero_results):
    r1 = result(zero_results, "state_dict", 1)
    assert r1["snapshot_kept"]
    assert r1["stale_state_dict"] > 0  # stale until consolidated again
    assert r1["lr_in_state_dict"] == 0.123


@requires_mpi
@pytest.mark.parametrize("rank", [0, 1])
def test_state_dicts_load_both_ways_and_training_continues_identically(zero_results, rank):
    r = result(zero_results, "round_trip", rank)
    assert r["max_diff"] <= TOL
    for way in ("zero_to_zero", "plain_to_zero", "zero_to_plain"):
        assert r[way] <= TOL, (way, r)
    assert r["ranks_equal"]
    assert r["loaded_lr"] == [0.01, 0.01, 0.01] and r["loaded_amsgrad"]
    # Loading keeps only this rank's shard of the state.
    assert r["loaded_local_bytes"] == r["original_local_bytes"]


@requires_mpi
def test_a_process_group_of_one_rank(zero_results):
    outside = result(zero_results, "subgroup", 0)["outside"]
    assert outside.startswith("ValueError") and "process_group" in outside
    r = result(zero_results, "subgroup", 1)
    assert (r["world_size"], r["group_rank"], r["global_rank"]) == (1, 0, 1)
    assert r["max_diff"] == 0.0 and r["local_bytes"] == r["plain_bytes"]
    s = r["state"]
    assert s["same_keys"] and s["groups_equal"] and s["state_max_diff"] == 0.0


@requires_mpi
@pytest.mark.parametrize("rank", [0, 1])
def test_errors_on_two_ranks(zero_results, rank):
    r = result(zero_results, "errors", rank)
    expected = {"to_too_big": "ValueError", "to_negative": "ValueError", "bad_lr": "ValueError",
                "bad_group": "ValueError", "bad_index": "KeyError", "repeated": "ValueError",
                "bad_added_lr": "ValueError"}
    for label, kind in expected.items():
        assert r[label].startswith(kind + ":"), (label, r[label])
    assert "consolidate_state_dict" in r["to_too_big"] and "to must be" in r["to_too_big"]
    assert "Adam" in r["bad_lr"] and "lr" in r["bad_lr"]
    assert r["groups_after_failed_add"] == [1, 1]  # a refused group is not kept


# -- one process ------------------------------------------------------------------------------

def params():
    return list(remat.nn.Linear(3, 2).parameters())


def test_exported_like_pytorch():
    import remat.distributed.optim as optim
    import remat.distributed.optim.zero_redundancy_optimizer as module

    assert optim.__all__ == ["ZeroRedundancyOptimizer"]
    assert module.ZeroRedundancyOptimizer is ZeroRedundancyOptimizer
    assert issubclass(ZeroRedundancyOptimizer, remat.optim.Optimizer)


@pytest.mark.parametrize("bad", ["Adam", remat.optim.Adam(params()), object, len, None])
def test_optimizer_class_must_be_an_optimizer_subclass(bad):
    with pytest.raises(TypeError, match="ZeroRedundancyOptimizer: optimizer_class must be a "
                                        "subclass of remat.optim.Optimizer"):
        ZeroRedundancyOptimizer(params(), bad, lr=0.1)


def test_optimizer_class_cannot_be_zero_itself():
    with pytest.raises(TypeError, match="optimizer_class"):
        ZeroRedundancyOptimizer(params(), ZeroRedundancyOptimizer)


def test_bad_params_raise():
    with pytest.raises(TypeError, match="params argument should be an iterable"):
        ZeroRedundancyOptimizer(remat.ones(2, requires_grad=True), remat.optim.Adam)
    with pytest.raises(TypeError, match="params argument should be an iterable"):
        ZeroRedundancyOptimizer(3, remat.optim.Adam)
    with pytest.raises(ValueError, match="ZeroRedundancyOptimizer got an empty parameter list"):
        ZeroRedundancyOptimizer([], remat.optim.Adam)
    with pytest.raises(TypeError, match="not a mix"):
        ZeroRedundancyOptimizer([remat.ones(2), {"params": [remat.ones(2)]}], remat.optim.Adam)
    with pytest.raises(ValueError, match="'params' key"):
        ZeroRedundancyOptimizer([{"lr": 0.1}], remat.optim.Adam)


def test_flags():
    with pytest.raises(NotImplementedError, match="overlap_with_ddp=True is not supported"):
        ZeroRedundancyOptimizer(params(), remat.optim.Adam, overlap_with_ddp=True)
    with pytest.raises(TypeError, match="parameters_as_bucket_view must be a bool"):
        ZeroRedundancyOptimizer(params(), remat.optim.Adam, parameters_as_bucket_view="yes")
    with pytest.raises(TypeError, match="overlap_with_ddp must be a bool"):
        ZeroRedundancyOptimizer(params(), remat.optim.Adam, overlap_with_ddp=1)


def test_needs_a_process_group():
    assert not dist.is_initialized()
    with pytest.raises(dist.ProcessGroupNotInitializedError,
                       match="ZeroRedundancyOptimizer: Default process group"):
        ZeroRedundancyOptimizer(params(), remat.optim.Adam, lr=0.1)
    with pytest.raises(RuntimeError):  # as PyTorch raised it
        ZeroRedundancyOptimizer(params(), remat.optim.Adam, lr=0.1)
