"""``examples/ddp_gpt.py`` on two MPI ranks: the data-parallel GPT with checkpointed blocks
trains, and its losses agree with one process on the whole batches."""

from pathlib import Path

from _launch import launch, requires_mpi

pytestmark = requires_mpi

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "ddp_gpt.py"


def test_ddp_gpt_example_agrees_with_one_process():
    job = launch(str(EXAMPLE), "--steps", "4", "--verify", "--layers", "2")
    assert job.returncode == 0, job.describe()
    assert "2 ranks (mpi)" in job.stdout, job.describe()
    assert "(agrees)" in job.stdout, job.describe()
