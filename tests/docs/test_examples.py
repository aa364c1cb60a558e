"""The examples run end to end in their quick modes."""

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def run(args, cwd):
    return subprocess.run(
        [sys.executable, *args], cwd=cwd, capture_output=True, text=True, timeout=600
    )


@pytest.mark.parametrize("strategy", ["none", "sqrt", "every", "budget:2000000"])
def test_deep_mlp_quick(strategy, tmp_path):
    r = run([str(EXAMPLES / "deep_mlp.py"), "--quick", "--checkpoint", strategy], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    for text in ("test accuracy:", "peak memory", "median step time", "train loss"):
        assert text in r.stdout, r.stdout


def _trained_under(limit, tmp_path):
    return run([str(EXAMPLES / "deep_mlp.py"), "--quick", "--memory-limit", limit], tmp_path)


def test_deep_mlp_trains_under_a_memory_limit(tmp_path):
    """``--memory-limit``: the same loss and accuracy as the plain run, a peak under the
    limit (which evicts), and a clear exit for a limit that cannot be met or parsed."""
    plain = run([str(EXAMPLES / "deep_mlp.py"), "--quick"], tmp_path)
    limited = _trained_under("500KB", tmp_path)
    assert limited.returncode == 0, limited.stdout + limited.stderr
    lines = dict(line.split(": ", 1) for line in limited.stdout.splitlines() if ": " in line)
    plain_lines = dict(line.split(": ", 1) for line in plain.stdout.splitlines() if ": " in line)
    for key in ("train loss (last epoch)", "test accuracy"):
        assert lines[key] == plain_lines[key], (limited.stdout, plain.stdout)
    assert float(lines["peak memory per training step"].split()[0]) <= 500 / 1024 + 0.005
    (summary,) = [v for k, v in lines.items() if k.startswith("memory limit")]
    assert int(summary.split()[0]) > 0, limited.stdout  # evictions
    tight = _trained_under("100KB", tmp_path)
    assert tight.returncode == 3 and "smallest working set" in tight.stderr, tight.stderr
    assert "Traceback" not in tight.stderr
    bad = _trained_under("lots", tmp_path)
    assert bad.returncode == 2 and "set_memory_limit" in bad.stderr


def test_deep_mlp_cuda_without_gpu_exits_2(tmp_path):
    import remat

    if remat.cuda.is_available():
        pytest.skip("a GPU is available")
    r = run([str(EXAMPLES / "deep_mlp.py"), "--quick", "--device", "cuda"], tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "error:" in r.stderr and "Traceback" not in r.stderr


def test_deep_mlp_rejects_bad_strategy(tmp_path):
    r = run([str(EXAMPLES / "deep_mlp.py"), "--quick", "--checkpoint", "half"], tmp_path)
    assert r.returncode == 2 and "--checkpoint" in r.stderr


def test_memory_tradeoff_quick_writes_png(tmp_path):
    out = tmp_path / "tradeoff.png"
    r = run([str(EXAMPLES / "memory_tradeoff.py"), "--quick", "--out", str(out)], tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert out.exists() and out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "depth" in r.stdout and "sqrt" in r.stdout


def test_gpt_compare_quick():
    """examples/gpt.py trains plain and checkpointed from one seed: identical losses."""
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / "gpt.py"), "--compare", "--steps", "3", "--layers", "1",
         "--d", "16", "--context", "16", "--batch", "4"],
        capture_output=True, text=True, timeout=600,
    )
    assert out.returncode == 0, out.stderr
    assert "losses identical: True" in out.stdout
