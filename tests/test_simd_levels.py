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
