"""The CPU kernels have copies for the baseline ISA, AVX2 and AVX-512 (the widest the CPU
has runs; ``REMAT_SIMD=baseline|avx2`` caps it). No copy fuses multiplies and adds, so every
copy must give bit-identical results: checked here on the vectorised elementwise kernels
(exp, tanh, sigmoid, GELU and their gradients), softmax and layer_norm, forward and
backward, in child interpreters (the level is read once per process)."""

from __future__ import annotations

import json

import pytest

from _subprocess import assert_clean_exit, run_python

CODE = """
import json, numpy as np, remat
import remat.nn.functional as F
rng = np.random.default_rng(0)
a = rng.standard_normal((67, 129)).astype(np.float32) * 6
a[0, :6] = [0.0, -0.0, 100.0, -100.0, 1e-30, -90.0]
x = remat.tensor(a, requires_grad=True)
outs = [x.exp(), x.tanh(), x.sigmoid(), F.gelu(x), F.gelu(x, approximate="tanh"), F.silu(x),
        x.softmax(-1), x.log_softmax(-1), F.layer_norm(x, (129,))]
total = sum((o * remat.tensor(rng.standard_normal(o.shape).astype(np.float32))).sum()
            for o in outs)
total.backward()
print(json.dumps([o.detach().numpy().tobytes().hex() for o in outs]
                 + [x.grad.numpy().tobytes().hex()]))
"""


def _run(level: str | None) -> list[str]:
    run = run_python(CODE, env={"REMAT_SIMD": level} if level else {"REMAT_SIMD": "avx512"})
    assert_clean_exit(f"REMAT_SIMD={level}", run)
    return json.loads(run.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("level", ["baseline", "avx2"])
def test_every_simd_copy_gives_identical_bits(level):
    widest = _run(None)
    narrow = _run(level)
    names = ["exp", "tanh", "sigmoid", "gelu", "gelu tanh", "silu", "softmax", "log_softmax",
             "layer_norm", "input gradient"]
    for name, w, n in zip(names, widest, narrow):
        assert w == n, f"{name}: REMAT_SIMD={level} differs from the widest copy"


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as f:
            return set(f.read().split())
    except OSError:
        return set()


@pytest.mark.parametrize("level", ["baseline", "avx2", "avx512"])
def test_the_reported_capability_is_the_capped_level_and_the_gemm_kernels(level):
    code = "import json, remat._remat as r; print(json.dumps(r._cpu_capability()))"
    run = run_python(code, env={"REMAT_SIMD": level})
    assert_clean_exit(f"REMAT_SIMD={level}", run)
    cap = json.loads(run.stdout.strip().splitlines()[-1])
    flags = _cpu_flags()
    widest = ("avx512" if "avx512f" in flags
              else "avx2" if {"avx2", "fma"} <= flags else "baseline")
    order = ["baseline", "avx2", "avx512"]
    assert cap["simd"] == order[min(order.index(level), order.index(widest))]
    # The GEMMs do not follow REMAT_SIMD: the default build uses AVX-512 where the CPU has it.
    assert cap["gemm"] in ("avx512f", "avx2+fma", "baseline")
    if "avx512f" in flags:
        assert cap["gemm"] in ("avx512f", "avx2+fma")  # avx2+fma: a build without avx512-gemm
