"""remat.distributed's collectives on two MPI ranks: results as torch.distributed's, errors
that name both ranks when they disagree, and a collective inside checkpointed code that talks
to the other rank once (in the forward), never again in the recompute."""

import pytest

import remat
import remat.distributed as dist
from _launch import launch, requires_mpi


def by_rank(job):
    assert job.returncode == 0, job.describe()
    out = {r["rank"]: r for r in job.results()}
    assert sorted(out) == [0, 1], job.describe()
    return out


@requires_mpi
def test_collective_results():
    out = by_rank(launch("collectives_worker.py", "ops"))
    for r in (0, 1):
        o = out[r]
        assert o["sum"] == [3.0, 6.0]
        assert o["avg"] == [2.5, -5.0] and o["max"] == [3.0, -4.0]
        assert o["min"] == [2.0, -6.0] and o["product"] == [6.0, 24.0]
        assert o["int64"] == [3, 20] and o["bool_max"] == [True, False]
        assert o["bf16"] == [[2.0, 2.0, 2.0], "bfloat16"] and o["work_done"]
        assert o["broadcast"] == [[1.0, 1.0], [1.0, 1.0]]
        assert o["all_gather"] == [[0.0, 0.0], [10.0, 10.0]]
        assert o["all_gather_into_tensor"] == [0.0, 0.0, 1.0, 1.0]
        assert o["version_bumped"]
        assert o["both"] == [3.0] and o["group_broadcast"] == [1.0]
        assert o["backend"] == "mpi"
    # reduce_scatter of arange(4) + rank: sums [1, 3, 5, 7], rank r gets chunk r.
    assert out[0]["reduce_scatter"] == [1.0, 3.0] and out[1]["reduce_scatter"] == [5.0, 7.0]
    # new_group([1]): rank 0 is outside it (the collective does nothing, rank -1).
    assert out[0]["solo"] == [[5.0], True, -1, -1]
    assert out[1]["solo"] == [[6.0], True, 0, 1]


@requires_mpi
def test_mismatched_ranks_raise_an_error_naming_both_and_the_group_survives():
    out = by_rank(launch("collectives_worker.py", "mismatch"))
    for r in (0, 1):
        o = out[r]
        assert o["shape"].startswith("ShapeError: all_reduce:")
        assert "rank 0 called all_reduce with a float32 tensor of shape (3,)" in o["shape"]
        assert "rank 1 called all_reduce with a float32 tensor of shape (4,)" in o["shape"]
        assert o["dtype"].startswith("DTypeError:") and "float64" in o["dtype"]
        assert "different collectives" in o["collective"] and "rank 1 called barrier" in \
            o["collective"]
        assert "different roots" in o["root"] and "from group rank 1" in o["root"]
        assert o["gather_list"].startswith("ValueError: all_gather:")
        assert o["after"] == [2.0, 2.0]


@requires_mpi
def test_a_collective_inside_a_checkpoint_is_not_recomputed():
    out = by_rank(launch("collectives_worker.py", "checkpointed"))
    for r in (0, 1):
        for entry in ("checkpoint", "nested", "scope"):
            o = out[r][entry]
            assert o["equal"], (r, entry, o)
            assert o["forward_calls"] == o["plain_calls"] == 1, (r, entry, o)
            assert o["backward_calls"] == 0, (r, entry, o)


def test_collectives_before_init_process_group_raise():
    assert not dist.is_initialized()
    for call in (lambda: dist.all_reduce(remat.ones(2)), dist.get_rank, dist.get_world_size,
                 dist.barrier, lambda: dist.broadcast(remat.ones(1), src=0),
                 dist.destroy_process_group, dist.new_group):
        with pytest.raises(RuntimeError, match="Default process group has not been "
                                               "initialized"):
            call()
    with pytest.raises(ValueError, match="init_process_group"):  # also a ValueError
        dist.all_reduce(remat.ones(2))
    with pytest.raises(ValueError, match="gloo"):
        dist.init_process_group("gloo")
    with pytest.raises(ValueError, match="unknown backend"):
        dist.init_process_group("carrier-pigeon")
    assert not dist.is_initialized()
