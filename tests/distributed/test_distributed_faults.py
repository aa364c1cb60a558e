"""Faults in a two-rank job end it with a clear error, well within the collective timeout
(60 s in the worker), never a hang: a rank that raises, a rank that dies, a rank that never
joins a collective (the other times out and its group is then broken)."""

from _launch import launch, requires_mpi

pytestmark = requires_mpi


def test_a_rank_that_raises_ends_the_job():
    job = launch("collectives_worker.py", "raising", timeout=120)
    assert job.returncode not in (0, None), job.describe()
    assert job.seconds < 60, job.describe()
    assert "ValueError: a bug in rank 1's training step" in job.stderr, job.describe()
    assert "remat.distributed: rank 1 of 2 raised ValueError" in job.stderr, job.describe()
    assert "after the second all_reduce" not in job.stdout


def test_a_rank_that_dies_ends_the_job():
    job = launch("collectives_worker.py", "dying", timeout=120)
    assert job.returncode not in (0, None), job.describe()
    assert job.seconds < 60, job.describe()
    assert "Exit code:    3" in job.stderr or "exit code 3" in job.stderr.lower(), job.describe()
    assert "after the second all_reduce" not in job.stdout


def test_a_rank_that_never_joins_times_out_the_other():
    job = launch("collectives_worker.py", "timeout", "2", timeout=120)
    assert job.returncode == 0, job.describe()
    out = {r["rank"]: r for r in job.results()}
    assert "timed out" in out[0]["error"] and out[0]["backend_error"], out[0]
    assert 1.9 <= out[0]["waited"] < 30, out[0]
    assert "the process group is broken" in out[0]["again"], out[0]
    assert out[1]["slept"]
