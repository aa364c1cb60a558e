"""Compare remat with PyTorch (CPU) in one command.

    python benches/compare_torch.py [--threads N] [--rounds R] [--out benches/results.md]

Each run is added to the benchmark journal (``--out``, default ``benches/results.md``), newest
first under its "Runs of benches/compare_torch.py" section, titled with the date, the commit
and the machine.

Workloads: per-op overhead (16-element ``a + a``; ``g * g`` with ``requires_grad``), float32
matmul GFLOP/s at 256/1024/2048, single ops in float32 (softmax over the last axis of
(4096, 1024); layer_norm forward+backward on (4096, 1024) with weight and bias; the attention
scores ``einsum('bhqd,bhkd->bhqk')`` at B=8, H=8, T=256, D=64), and one training step (forward,
backward, SGD update) of a 64-layer ReLU MLP of width 512 at batch 2048, plain and with
8-segment ``checkpoint_sequential``, with the peak memory of each step, and one training step of
4 transformer blocks (``examples/gpt.py``'s ``Block``: pre-LayerNorm, causal attention, GELU
MLP; dim 256, 4 heads, batch 8 × 128 tokens), and the forward and backward of a one-layer
``nn.LSTM`` (input 256, hidden 256, sequence 64, batch 32).

``--isa avx2`` measures both libraries on AVX2+FMA code on a machine that has AVX-512: it
sets ``REMAT_SIMD=avx2`` (remat's elementwise and row kernels), ``ATEN_CPU_CAPABILITY=avx2``
and ``MKL_ENABLE_INSTRUCTIONS=AVX2`` (PyTorch's kernels and its BLAS), and needs a remat built
without its AVX-512 GEMM kernels (``maturin build --release --no-default-features --features
cuda``), which it checks. Every header names the instruction sets each library ran on.

Matrix products are measured at ``--threads`` and at one thread. ``mlp:floor`` times, in one
process and round-robin, the plain MLP step, the ``checkpoint_sequential`` step and a forward
under ``no_grad``; the checkpointed step's floor is the plain step plus 7/8 of a forward (the
last segment is not re-run).

``--workloads softmax,einsum`` runs only the workloads whose names start with one of the given
prefixes (``overhead``, ``matmul`` (``matmul1``: the one-thread ones), ``softmax``,
``layer_norm``, ``einsum``, ``conv2d``, ``embedding``, ``gelu``, ``tanh``, ``sdpa``, ``lstm``,
``mlp``, ``gpt``).

Every measurement runs in a fresh subprocess (one library per process, so neither library's
thread pool or allocator disturbs the other), with the same thread count for both:
``torch.set_num_threads(n)`` and ``RAYON_NUM_THREADS=n`` (plus ``OMP_NUM_THREADS``) in the
subprocess environment. Rounds alternate remat and PyTorch (and swap which goes first) so
drift of the machine hits both; figures are medians over all runs of all rounds, and the ratio
column is the median over rounds of the ratio of the two libraries' medians in that round.

Peak memory: remat reads its byte counters (``max_memory_allocated()`` minus the baseline);
PyTorch has none on the CPU, so its figure is the growth of the process's peak RSS
(``ru_maxrss``) over the step, the peak being reset first through ``/proc/self/clear_refs``
where Linux allows it. remat's RSS growth is reported too, to compare like with like.
Gradients are allocated before the measured step in both.

PyTorch is optional: without it the PyTorch columns are left empty. This is a script, not a
test; CI never runs it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import timeit
from pathlib import Path

from machine_info import machine_line, maxrss_kib, remat_isa, reset_peak_rss

MLP_DEPTH = 64
MLP_WIDTH = 512
MLP_BATCH = 2048
MLP_SEGMENTS = 8
MATMUL_SIZES = (256, 512, 1024, 2048)
BF16_MATMUL_SIZES = (512, 1024, 2048)
SOFTMAX_SHAPE = (4096, 1024)
LAYER_NORM_SHAPE = (4096, 1024)
ATTENTION = (8, 8, 256, 64)  # batch, heads, tokens, head size
# Longer sequences for the tiled attention (causal, forward+backward): (batch, heads, tokens).
LONG_ATTENTION = {"sdpa1k": (2, 8, 1024), "sdpa4k": (1, 4, 4096)}
CONV = (16, 32, 32, 64)  # batch, in channels, height = width, out channels
CONV_LARGE = (1, 128, 256, 128)  # one large image: the bounded-workspace case
BATCH_NORM = (32, 64, 32, 32)  # BatchNorm2d(64) in training
CONV_STACK = (8, 32, 16, 32)  # layers of Conv2d(c, c, 3, padding=1) + ReLU, channels, batch, side
DCGAN_D = (16, 64, 64)  # batch, ndf, image side: pytorch/examples' discriminator on 3 channels
EMBEDDING = (8192, 512, (16, 256))  # vocab, dim, ids shape
LR = 1e-4
GPT = (4, 256, 4, 8, 128)  # blocks, dim, heads, batch, tokens
LSTM = (256, 256, 64, 32)  # input size, hidden size, sequence length, batch (one layer)


# -- measurements, run inside a worker subprocess ----------------------------------------------


def _rss_kib() -> int:
    """Current resident set size in KiB (VmRSS)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class _Lib:
    """The few calls the workloads need, for one library."""

    def __init__(self, name: str, threads: int) -> None:
        self.name = name
        if name == "torch":
            import torch

            torch.set_num_threads(threads)
            self.m = torch
            self.version = torch.__version__
        else:
            import remat

            self.m = remat
            self.version = _remat_version()

    def tensor(self, array, requires_grad=False):
        if self.name == "torch":
            t = self.m.from_numpy(array)
            return t.requires_grad_(requires_grad)
        return self.m.tensor(array, requires_grad=requires_grad)

    def no_grad(self):
        return self.m.no_grad()


def _remat_version() -> str:
    try:
        from importlib.metadata import version

        return version("remat")
    except Exception:  # noqa: BLE001 - a missing dist-info only loses the version string
        import remat

        return getattr(remat, "__version__", "unknown")


def _timeit_us(stmt: str, env: dict, repeats: int = 7) -> list[float]:
    """Per-call µs of ``stmt`` for each of ``repeats`` timeit repeats (~0.2 s each)."""
    timer = timeit.Timer(stmt, globals=env)
    n, _ = timer.autorange()
    return [t / n * 1e6 for t in timer.repeat(repeat=repeats, number=n)]


def work_overhead(lib: _Lib, runs: int) -> dict:
    import numpy as np

    a = lib.tensor(np.ones(16, dtype=np.float32))
    g = lib.tensor(np.ones(16, dtype=np.float32), requires_grad=True)
    env = {"a": a, "g": g}
    return {"add_us": _timeit_us("a + a", env), "mul_grad_us": _timeit_us("g * g", env)}


def work_matmul(lib: _Lib, runs: int, n: int, dtype: str = "float32") -> dict:
    import numpy as np

    rng = np.random.default_rng(0)
    a = lib.tensor(rng.standard_normal((n, n), dtype=np.float32)).to(getattr(lib.m, dtype))
    b = lib.tensor(rng.standard_normal((n, n), dtype=np.float32)).to(getattr(lib.m, dtype))
    with lib.no_grad():
        # Warm up (thread pools, packing buffers) for at least two calls and ~0.2 s; the last
        # call's time sizes the timed loops.
        start = time.perf_counter()
        calls = 0
        while calls < 2 or time.perf_counter() - start < 0.2:
            t0 = time.perf_counter()
            a @ b
            last = time.perf_counter() - t0
            calls += 1
        # Loop small products so each timed run lasts ~0.1 s and the clock's resolution and
        # scheduling noise do not dominate.
        inner = max(1, int(0.1 / max(last, 1e-6)))
        out = []
        for _ in range(runs):
            t0 = time.perf_counter()
            for _ in range(inner):
                a @ b
            out.append(2 * n**3 * inner / (time.perf_counter() - t0) * 1e-9)
    return {"gflops": out}


def _time_ms(fn, runs: int) -> list[float]:
    """ms per call of ``fn``: warmed up for at least two calls and ~0.2 s, then ``runs`` timed
    loops of ~0.1 s each (so the clock's resolution and scheduling noise do not dominate)."""
    start = time.perf_counter()
    calls = 0
    while calls < 2 or time.perf_counter() - start < 0.2:
        t0 = time.perf_counter()
        fn()
        last = time.perf_counter() - t0
        calls += 1
    inner = max(1, int(0.1 / max(last, 1e-6)))
    out = []
    for _ in range(runs):
        t0 = time.perf_counter()
        for _ in range(inner):
            fn()
        out.append((time.perf_counter() - t0) / inner * 1e3)
    return out


def work_op(lib: _Lib, runs: int, name: str) -> dict:
    """One op in float32: ``softmax`` and ``einsum`` forward (no graph), ``layer_norm``
    forward and backward (input, weight and bias require grad; gradients reset each call)."""
    import numpy as np

    rng = np.random.default_rng(3)
    m = lib.m

    def randn(shape, requires_grad=False):
        return lib.tensor(rng.standard_normal(shape, dtype=np.float32), requires_grad)

    if name == "softmax":
        x = randn(SOFTMAX_SHAPE)
        with lib.no_grad():
            return {"ms": _time_ms(lambda: m.softmax(x, -1), runs)}
    if name == "einsum":
        b, h, t, d = ATTENTION
        q, k = randn((b, h, t, d)), randn((b, h, t, d))
        with lib.no_grad():
            return {"ms": _time_ms(lambda: m.einsum("bhqd,bhkd->bhqk", q, k), runs)}
    if name == "layer_norm":
        n = LAYER_NORM_SHAPE[-1]
        x, g = randn(LAYER_NORM_SHAPE, True), randn(LAYER_NORM_SHAPE)
        w = lib.tensor(np.ones(n, dtype=np.float32), True)
        bias = lib.tensor(np.zeros(n, dtype=np.float32), True)
        if lib.name == "torch":

            def fwd():
                return m.nn.functional.layer_norm(x, (n,), w, bias)
        else:

            def fwd():
                return m.layer_norm(x, weight=w, bias=bias)

        def step():
            for p in (x, w, bias):
                p.grad = None
            fwd().backward(g)

        return {"ms": _time_ms(step, runs)}
    if name == "gelu":
        x, g = randn(SOFTMAX_SHAPE, True), randn(SOFTMAX_SHAPE)
        gelu = m.nn.functional.gelu

        def step():
            x.grad = None
            gelu(x).backward(g)

        return {"ms": _time_ms(step, runs)}
    if name == "tanh":
        x = randn(SOFTMAX_SHAPE)
        with lib.no_grad():
            return {"ms": _time_ms(lambda: m.tanh(x), runs)}
    if name in ("batch_norm", "leaky_relu_", "convstack", "dcgan_d"):
        return {"ms": _time_ms(_training_step(lib, rng, name), runs)}
    if name == "sdpa" or name in LONG_ATTENTION:
        b, h, t, d = ATTENTION if name == "sdpa" else (*LONG_ATTENTION[name], ATTENTION[3])
        q, k, v = (randn((b, h, t, d), True) for _ in range(3))
        g = randn((b, h, t, d))
        sdpa = m.nn.functional.scaled_dot_product_attention

        def step():
            for p in (q, k, v):
                p.grad = None
            sdpa(q, k, v, is_causal=True).backward(g)

        return {"ms": _time_ms(step, runs)}
    if name in ("conv2d", "conv2d_large"):
        n, c, hw, o = CONV if name == "conv2d" else CONV_LARGE
        x, g = randn((n, c, hw, hw), True), randn((n, o, hw, hw))
        w, bias = randn((o, c, 3, 3), True), randn((o,), True)
        conv = m.nn.functional.conv2d

        def step():
            for p in (x, w, bias):
                p.grad = None
            conv(x, w, bias, padding=1).backward(g)

        return {"ms": _time_ms(step, runs)}
    if name == "embedding":
        vocab, dim, shape = EMBEDDING
        ids = lib.tensor(rng.integers(0, vocab, size=shape))
        w, g = randn((vocab, dim), True), randn(shape + (dim,))
        emb = m.nn.functional.embedding

        def step():
            w.grad = None
            emb(ids, w).backward(g)

        return {"ms": _time_ms(step, runs)}
    if name == "lstm":
        return {"ms": _time_ms(_lstm_step(lib, rng), runs)}
    raise SystemExit(f"unknown op workload {name}")


def _same_weights(module, lib: _Lib, rng) -> None:
    """Every floating parameter and buffer of ``module`` drawn once from ``rng`` (uniform in
    ±1/√fan-in, buffers kept), so that both libraries train the same model."""
    import numpy as np

    state = {}
    for k, v in module.state_dict().items():
        shape = tuple(v.shape)
        if k.endswith("weight") and len(shape) > 1:
            bound = 1 / float(np.prod(shape[1:])) ** 0.5
            arr = rng.uniform(-bound, bound, size=shape).astype(np.float32)
        elif k.endswith(("weight", "bias")):
            arr = rng.uniform(0.5, 1.5, size=shape).astype(np.float32)
        else:
            continue
        state[k] = lib.m.from_numpy(arr) if lib.name == "torch" else lib.tensor(arr)
    module.load_state_dict(state, strict=False)


def _training_step(lib: _Lib, rng, name: str):
    """A forward and backward that the porting work measured as slow: ``batch_norm``
    (BatchNorm2d in training on ``BATCH_NORM``), ``leaky_relu_`` (a clone and the in-place
    ``F.leaky_relu(.., 0.2, inplace=True)`` in a graph, on ``BATCH_NORM``), ``convstack``
    (``CONV_STACK``: layers of Conv2d + ReLU, loss mean(y²)) and ``dcgan_d`` (pytorch/examples'
    DCGAN discriminator on ``DCGAN_D``: Conv2d 4/2/1, BatchNorm2d, LeakyReLU(0.2, inplace),
    Sigmoid, BCELoss against ones). Gradients are reset before each step."""
    import numpy as np

    nn, F = lib.m.nn, lib.m.nn.functional

    def randn(shape, requires_grad=False):
        return lib.tensor(rng.standard_normal(shape, dtype=np.float32), requires_grad)

    if name in ("batch_norm", "leaky_relu_"):
        n, c, h, w = BATCH_NORM
        x, g = randn((n, c, h, w), True), randn((n, c, h, w))
        if name == "batch_norm":
            bn = nn.BatchNorm2d(c)
            params = [x, *bn.parameters()]

            def fwd():
                return bn(x)
        else:
            params = [x]

            def fwd():
                return F.leaky_relu(x.clone(), 0.2, inplace=True)

        def step():
            for p in params:
                p.grad = None
            fwd().backward(g)

        return step
    if name == "convstack":
        layers, c, n, side = CONV_STACK
        model = nn.Sequential(*[m for _ in range(layers)
                                for m in (nn.Conv2d(c, c, 3, padding=1), nn.ReLU())])
        x = randn((n, c, side, side))
    else:
        n, ndf, side = DCGAN_D
        model = nn.Sequential(
            nn.Conv2d(3, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 4),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 8),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False), nn.Sigmoid(),
        )
        x = randn((n, 3, side, side))
    _same_weights(model, lib, rng)
    params = list(model.parameters())
    target = lib.tensor(np.ones(n, dtype=np.float32))

    def step():
        for p in params:
            p.grad = None
        y = model(x)
        loss = (y * y).mean() if name == "convstack" else F.binary_cross_entropy(
            y.reshape(-1), target)
        loss.backward()

    return step


def _lstm_step(lib: _Lib, rng):
    """One training step's forward and backward of a one-layer ``nn.LSTM`` (the same weights
    in both libraries): ``loss = mean(output²)``, gradients of the input and every parameter,
    reset before each step."""
    import numpy as np

    n_in, hidden, steps, batch = LSTM
    lstm = lib.m.nn.LSTM(n_in, hidden)
    bound = 1 / hidden**0.5
    state = {k: rng.uniform(-bound, bound, size=tuple(v.shape)).astype(np.float32)
             for k, v in lstm.state_dict().items()}
    if lib.name == "torch":
        state = {k: lib.m.from_numpy(v) for k, v in state.items()}
    lstm.load_state_dict(state)
    x = lib.tensor(rng.standard_normal((steps, batch, n_in), dtype=np.float32), True)
    params = list(lstm.parameters())

    def step():
        for p in params + [x]:
            p.grad = None
        out, _ = lstm(x)
        (out * out).mean().backward()

    return step


def _mlp_weights():
    """He-initialised weights (in, out) and zero biases, the same values for both libraries.
    The default init of ``nn.Linear`` shrinks ReLU activations sixfold in variance per layer;
    after 64 layers they would be denormal floats and both libraries would time the FPU's
    slow path."""
    import numpy as np

    rng = np.random.default_rng(1)
    std = (2.0 / MLP_WIDTH) ** 0.5
    return [
        (
            (rng.standard_normal((MLP_WIDTH, MLP_WIDTH)) * std).astype(np.float32),
            np.zeros(MLP_WIDTH, dtype=np.float32),
        )
        for _ in range(MLP_DEPTH)
    ]


def _build_mlp(lib: _Lib):
    """``nn.Sequential`` of Linear+ReLU with the shared weights (weight stored (out, in))."""
    import numpy as np

    nn = lib.m.nn
    mods = []
    for w, b in _mlp_weights():
        lin = nn.Linear(MLP_WIDTH, MLP_WIDTH)
        state = {"weight": np.ascontiguousarray(w.T), "bias": b}
        if lib.name == "torch":
            state = {k: lib.m.from_numpy(v) for k, v in state.items()}
        lin.load_state_dict(state)
        mods += [lin, nn.ReLU()]
    return nn.Sequential(*mods)


def _mlp_training(lib: _Lib):
    """The MLP, its input and one SGD step (forward, mean(y²), backward, update) as
    ``step(forward)``, with the plain and the ``checkpoint_sequential`` forwards. Gradients
    exist before the first step (zero-filled in place afterwards), so a step's peak counts
    its activations and temporaries, not the gradient buffers."""
    import numpy as np

    model = _build_mlp(lib)
    x = lib.tensor(
        np.random.default_rng(2).standard_normal((MLP_BATCH, MLP_WIDTH), dtype=np.float32)
    )
    params = list(model.parameters())
    opt = lib.m.optim.SGD(params, lr=LR)
    if lib.name == "torch":
        from torch.utils.checkpoint import checkpoint_sequential

        def ckpt_forward():
            return checkpoint_sequential(model, MLP_SEGMENTS, x, use_reentrant=False)
    else:

        def ckpt_forward():
            return lib.m.checkpoint_sequential(model, MLP_SEGMENTS, x)

    for p in params:
        p.grad = lib.m.zeros_like(p)

    def step(forward):
        opt.zero_grad(set_to_none=False)
        y = forward()
        loss = (y * y).mean()
        del y
        loss.backward()
        opt.step()

    return model, x, step, (lambda: model(x)), ckpt_forward


def work_mlp(lib: _Lib, runs: int, ckpt: bool, amp: bool = False) -> dict:
    _, _, train, plain_forward, ckpt_forward = _mlp_training(lib)
    forward = ckpt_forward if ckpt else plain_forward
    if amp:
        inner = forward

        def forward():
            with lib.m.autocast("cpu", dtype=lib.m.bfloat16):
                return inner()

    def step():
        train(forward)

    res: dict = {}
    reset_ok = reset_peak_rss()
    rss_before = maxrss_kib() if reset_ok else _rss_kib()
    if lib.name == "remat":
        base = lib.m.memory_allocated()
        lib.m.reset_peak_memory_stats()
    t0 = time.perf_counter()
    step()  # warm-up, and the memory measurement
    first = time.perf_counter() - t0
    res["rss_growth"] = [(maxrss_kib() - rss_before) * 1024]
    res["rss_reset"] = reset_ok
    if lib.name == "remat":
        res["peak_bytes"] = [lib.m.max_memory_allocated() - base]
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        step()
        times.append(time.perf_counter() - t0)
    res["step_ms"] = [t * 1e3 for t in times]
    res["first_step_ms"] = first * 1e3
    return res


def work_mlp_floor(lib: _Lib, runs: int) -> dict:
    """The checkpointed MLP step against its floor, in one process: each round times a plain
    step, a ``checkpoint_sequential`` step and a ``no_grad`` forward (round-robin, so drift
    hits all three); the floor is plain + (segments - 1)/segments of the forward."""
    model, x, step, plain_forward, ckpt_forward = _mlp_training(lib)

    def forward_only():
        with lib.no_grad():
            model(x)

    def timed(f, *a):
        t0 = time.perf_counter()
        f(*a)
        return (time.perf_counter() - t0) * 1e3

    step(plain_forward)
    step(ckpt_forward)
    forward_only()
    plain, ckpt, fwd = [], [], []
    for _ in range(runs):
        plain.append(timed(step, plain_forward))
        ckpt.append(timed(step, ckpt_forward))
        fwd.append(timed(forward_only))
    share = (MLP_SEGMENTS - 1) / MLP_SEGMENTS
    floor = [p + share * f for p, f in zip(plain, fwd)]
    return {
        "plain_ms": plain,
        "ckpt_ms": ckpt,
        "forward_ms": fwd,
        "floor_ms": floor,
        "over_floor": [c / f for c, f in zip(ckpt, floor)],
    }


def work_gpt(lib: _Lib, runs: int, amp: bool = False) -> dict:
    """One SGD step of GPT blocks (forward, mean(y²), backward, update), gradients
    pre-allocated; step times and remat's peak above the step's start."""
    import numpy as np

    from gpt_block import block_class

    n, d, heads, batch, tokens = GPT
    block = block_class(lib.m.nn)
    lib.m.manual_seed(0)
    model = lib.m.nn.Sequential(*[block(d, heads) for _ in range(n)])
    x = lib.tensor(np.random.default_rng(4).standard_normal((batch, tokens, d),
                                                          dtype=np.float32))
    params = list(model.parameters())
    opt = lib.m.optim.SGD(params, lr=LR)
    for p in params:
        p.grad = lib.m.zeros_like(p)

    def step():
        opt.zero_grad(set_to_none=False)
        with lib.m.autocast("cpu", dtype=lib.m.bfloat16, enabled=amp):
            loss = (model(x).float() ** 2).mean()
        loss.backward()
        opt.step()

    res: dict = {}
    if lib.name == "remat":
        base = lib.m.memory_allocated()
        lib.m.reset_peak_memory_stats()
    step()
    if lib.name == "remat":
        res["peak_bytes"] = [lib.m.max_memory_allocated() - base]
    res["step_ms"] = _time_ms(step, runs)
    return res


def worker(args: argparse.Namespace) -> None:
    lib = _Lib(args.worker, args.threads)
    kind, _, param = args.workload.partition(":")
    if kind == "overhead":
        res = work_overhead(lib, args.runs)
    elif kind in ("matmul", "matmul1"):
        res = work_matmul(lib, args.runs, int(param))
    elif kind == "matmul_bf16":
        res = work_matmul(lib, args.runs, int(param), "bfloat16")
    elif kind == "op":
        res = work_op(lib, args.runs, param)
    elif kind == "mlp" and param == "floor":
        res = work_mlp_floor(lib, args.runs)
    elif kind == "mlp":
        res = work_mlp(lib, args.runs, param == "ckpt", amp=param == "bf16")
    elif kind == "gpt":
        res = work_gpt(lib, args.runs, amp=param == "bf16")
    else:
        raise SystemExit(f"unknown workload {args.workload}")
    res["version"] = lib.version
    if lib.name == "torch":
        res["torch_threads"] = lib.m.get_num_threads()
        res["isa"] = f"ATen {lib.m.backends.cpu.get_cpu_capability()}"
    else:
        res["isa"] = remat_isa()
    print(json.dumps(res))


# -- the driver ---------------------------------------------------------------------------------


def _has_torch() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


# What ``--isa avx2`` sets in every worker's environment.
AVX2_ENV = {
    "REMAT_SIMD": "avx2",
    "ATEN_CPU_CAPABILITY": "avx2",
    "MKL_ENABLE_INSTRUCTIONS": "AVX2",
    "ONEDNN_MAX_CPU_ISA": "AVX2",
}


def _run_worker(lib: str, workload: str, threads: int, runs: int, isa: str = "native") -> dict:
    env = dict(os.environ)
    env.update(
        {
            "RAYON_NUM_THREADS": str(threads),
            "OMP_NUM_THREADS": str(threads),
            "MKL_NUM_THREADS": str(threads),
        }
    )
    if isa == "avx2":
        env.update(AVX2_ENV)
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        lib,
        "--workload",
        workload,
        "--threads",
        str(threads),
        "--runs",
        str(runs),
    ]
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"{lib} {workload} failed:\n{p.stderr[-3000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def _collect(
    workload: str, libs: list[str], rounds: int, runs: int, threads: int, isa: str
) -> dict:
    """Run ``workload`` ``rounds`` times per library, alternating libraries (and which goes
    first); merge the lists of figures of each library."""
    merged: dict[str, dict] = {lib: {} for lib in libs}
    for r in range(rounds):
        order = libs if r % 2 == 0 else libs[::-1]
        for lib in order:
            res = _run_worker(lib, workload, threads, runs, isa)
            for k, v in res.items():
                if isinstance(v, list):
                    merged[lib].setdefault(k, []).extend(v)
                    # This round's median, for the per-round ratios.
                    merged[lib].setdefault("round:" + k, []).append(statistics.median(v))
                else:
                    merged[lib][k] = v
        print(f"  {workload}: round {r + 1}/{rounds} done", file=sys.stderr, flush=True)
    return merged


def _median(res: dict, lib: str, key: str) -> float | None:
    v = res.get(lib, {}).get(key)
    return statistics.median(v) if v else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--threads",
        type=int,
        default=os.cpu_count() or 1,
        help="threads for both libraries (default: all logical cores)",
    )
    ap.add_argument(
        "--rounds",
        type=int,
        default=5,
        help="alternating subprocess rounds per workload (default 5)",
    )
    ap.add_argument(
        "--out",
        default=str(Path(__file__).with_name("results.md")),
        help="Markdown results file (default benches/results.md)",
    )
    ap.add_argument("--no-torch", action="store_true", help="measure remat only")
    ap.add_argument(
        "--isa",
        choices=("native", "avx2"),
        default="native",
        help="avx2: cap both libraries at AVX2+FMA (needs remat built without avx512-gemm)",
    )
    ap.add_argument(
        "--workloads",
        default="",
        help="comma-separated name prefixes of the workloads to run (default: all)",
    )
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--workload", help=argparse.SUPPRESS)
    ap.add_argument("--runs", type=int, default=1, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return

    libs = ["remat"] + (["torch"] if _has_torch() and not args.no_torch else [])
    n = args.threads
    rounds = max(1, args.rounds)
    results = {}
    # Runs per subprocess: with the default 5 rounds every figure is a median of >= 5 runs.
    plan = [("overhead", 1)] + [(f"matmul:{s}", 3) for s in MATMUL_SIZES]
    plan += [("op:softmax", 3), ("op:layer_norm", 3), ("op:einsum", 3), ("op:conv2d", 3)]
    plan += [("op:embedding", 3), ("op:gelu", 3), ("op:tanh", 3), ("op:sdpa", 3)]
    plan += [("op:sdpa1k", 3), ("op:sdpa4k", 2), ("op:conv2d_large", 2), ("op:lstm", 3)]
    plan += [(f"matmul1:{s}", 3) for s in MATMUL_SIZES]
    plan += [("mlp:plain", 1), ("mlp:ckpt", 1), ("mlp:floor", 3), ("gpt:plain", 3)]
    plan += [(f"matmul_bf16:{s}", 3) for s in BF16_MATMUL_SIZES]
    plan += [("mlp:bf16", 1), ("gpt:bf16", 3)]
    plan += [("op:batch_norm", 3), ("op:leaky_relu_", 3), ("op:convstack", 2), ("op:dcgan_d", 2)]
    prefixes = [p for p in args.workloads.split(",") if p]
    if prefixes:
        plan = [
            (w, r) for w, r in plan if any(w.removeprefix("op:").startswith(p) for p in prefixes)
        ]
        if not plan:
            raise SystemExit(f"no workload starts with {args.workloads!r} (an op's name, "
                             "without 'op:', or matmul, mlp, gpt)")
    if args.isa == "avx2":
        probe = subprocess.run(
            [sys.executable, "-c", "import remat._remat as r; print(r._cpu_capability()['gemm'])"],
            env={**os.environ, **AVX2_ENV}, capture_output=True, text=True, check=True,
        ).stdout.strip()
        if probe not in ("avx2+fma", "baseline"):
            raise SystemExit(
                f"--isa avx2: this remat's GEMMs run {probe}; install a build without the "
                "avx512-gemm feature (maturin build --release --no-default-features "
                "--features cuda)"
            )
    for workload, runs in plan:
        threads = 1 if workload.startswith("matmul1:") else n
        results[workload] = _collect(workload, libs, rounds, runs, threads, args.isa)

    first = next(iter(results.values()))
    versions = {lib: first[lib].get("version", "?") for lib in libs}
    import numpy

    header = [
        f"- date: {datetime.date.today().isoformat()}, commit {_commit()}",
        f"- command: python benches/compare_torch.py {' '.join(sys.argv[1:])}".rstrip(),
        f"- machine: {machine_line()}",
        f"- threads: {n} for both (RAYON_NUM_THREADS / torch.set_num_threads; matmul also "
        "at 1)",
        "- instruction sets: "
        + "; ".join(f"{lib}: {first[lib].get('isa', '?')}" for lib in libs)
        + (
            " (`--isa avx2`: " + ", ".join(f"{k}={v}" for k, v in AVX2_ENV.items()) + ")"
            if args.isa == "avx2"
            else ""
        ),
        f"- Python {platform.python_version()}, NumPy {numpy.__version__}, remat "
        f"{versions['remat']}, PyTorch {versions.get('torch', 'not installed')}",
        f"- {rounds} alternating subprocess rounds per workload; medians of all runs",
        f"- MLP: {MLP_DEPTH} x (Linear({MLP_WIDTH}, {MLP_WIDTH}) + ReLU), batch {MLP_BATCH}, "
        f"float32, loss mean(y²), SGD lr {LR}; checkpointed: checkpoint_sequential with "
        f"{MLP_SEGMENTS} segments (PyTorch: use_reentrant=False)",
        f"- ops (float32, ms per call): softmax over the last axis of {SOFTMAX_SHAPE}; "
        f"layer_norm forward+backward on {LAYER_NORM_SHAPE} with weight and bias; "
        "einsum 'bhqd,bhkd->bhqk' at B={}, H={}, T={}, D={}; ".format(*ATTENTION)
        + f"gelu forward+backward and tanh on {SOFTMAX_SHAPE}; causal scaled_dot_product_"
        "attention forward+backward at the einsum's sizes; conv2d, embedding, gelu and sdpa: "
        "every input that has a gradient requires it",
        "- peak memory of a step above the step's start, gradients pre-allocated: remat from "
        "its byte counters; RSS growth = ru_maxrss after the step minus before "
        "(peak reset through /proc/self/clear_refs"
        + (
            ""
            if results.get("mlp:plain", {}).get("remat", {}).get("rss_reset", True)
            else ": NOT available here"
        )
        + ")",
        "- remat/PyTorch: the median over rounds of the two libraries' figures of the same round "
        "(run back to back); for µs, ms and bytes < 1 favours remat; for GFLOP/s > 1 does",
    ]
    rows = []

    def row(name, unit, key, workload, fmt, lib_keys=None):
        if workload not in results:
            return
        r_key, t_key = lib_keys or (key, key)
        r = _median(results[workload], "remat", r_key)
        t = _median(results[workload], "torch", t_key) if "torch" in libs else None
        ratio = ""
        if r is not None and t:
            # The median over rounds of remat's figure over PyTorch's in the same round (the
            # two ran back to back), steadier than the ratio of the overall medians when the
            # machine's speed drifts between rounds.
            rr = results[workload]["remat"].get("round:" + r_key, [])
            tr = results[workload]["torch"].get("round:" + t_key, [])
            per_round = [a / b for a, b in zip(rr, tr) if b] if len(rr) == len(tr) else []
            ratio = f"{statistics.median(per_round) if per_round else r / t:.2f}"
        rows.append(f"| {name} | {unit} | {fmt(r)} | {fmt(t)} | {ratio} |")

    def us(v):
        return "" if v is None else f"{v:.2f}"

    def gf(v):
        return "" if v is None else f"{v:.1f}"

    def ms(v):
        return "" if v is None else f"{v:.0f}"

    def ms2(v):
        return "" if v is None else f"{v:.2f}"

    def mib(v):
        return "" if v is None else f"{v / 2**20:.1f}"

    row("`a + a`, 16 elements", "µs", "add_us", "overhead", us)
    row("`g * g`, 16 elements, requires_grad", "µs", "mul_grad_us", "overhead", us)
    for s in MATMUL_SIZES:
        row(f"matmul {s}×{s} float32", "GFLOP/s", "gflops", f"matmul:{s}", gf)
    for s in MATMUL_SIZES:
        row(f"matmul {s}×{s} float32, 1 thread", "GFLOP/s", "gflops", f"matmul1:{s}", gf)
    row(f"softmax {SOFTMAX_SHAPE}, last axis", "ms", "ms", "op:softmax", ms2)
    row(f"gelu {SOFTMAX_SHAPE} forward+backward", "ms", "ms", "op:gelu", ms2)
    row(f"tanh {SOFTMAX_SHAPE}", "ms", "ms", "op:tanh", ms2)
    row("causal scaled_dot_product_attention B={} H={} T={} D={} forward+backward".format(
        *ATTENTION), "ms", "ms", "op:sdpa", ms2)
    row(f"layer_norm {LAYER_NORM_SHAPE} forward+backward", "ms", "ms", "op:layer_norm", ms2)
    b, h, t, d = ATTENTION
    row(f"einsum 'bhqd,bhkd->bhqk' B={b} H={h} T={t} D={d}", "ms", "ms", "op:einsum", ms2)
    for key, (b, h, t) in LONG_ATTENTION.items():
        row(f"causal scaled_dot_product_attention B={b} H={h} T={t} D={d} forward+backward",
            "ms", "ms", f"op:{key}", ms2)
    n, c, hw, o = CONV
    row(f"conv2d 3×3 pad 1, x ({n}, {c}, {hw}, {hw}) → {o} channels, forward+backward", "ms",
        "ms", "op:conv2d", ms2)
    n, c, hw, o = CONV_LARGE
    row(f"conv2d 3×3 pad 1, x ({n}, {c}, {hw}, {hw}) → {o} channels, forward+backward", "ms",
        "ms", "op:conv2d_large", ms2)
    n_in, hidden, steps, batch = LSTM
    row(f"LSTM one layer, input {n_in}, hidden {hidden}, sequence {steps}, batch {batch}, "
        "forward+backward", "ms", "ms", "op:lstm", ms2)
    vocab, dim, shape = EMBEDDING
    row(f"embedding ({vocab}, {dim}) of {shape} ids, forward+backward", "ms", "ms",
        "op:embedding", ms2)
    n, c, h, w = BATCH_NORM
    row(f"BatchNorm2d({c}) training on ({n}, {c}, {h}, {w}), forward+backward", "ms", "ms",
        "op:batch_norm", ms2)
    row(f"clone + F.leaky_relu(0.2, inplace=True) in a graph on ({n}, {c}, {h}, {w}), "
        "forward+backward", "ms", "ms", "op:leaky_relu_", ms2)
    layers, c, n, side = CONV_STACK
    row(f"{layers} x (Conv2d({c}, {c}, 3, padding=1) + ReLU), batch {n}, {side}x{side}, "
        "training step", "ms", "ms", "op:convstack", ms2)
    n, ndf, side = DCGAN_D
    row(f"DCGAN discriminator (ndf {ndf}) on ({n}, 3, {side}, {side}), BCELoss, training step",
        "ms", "ms", "op:dcgan_d", ms2)
    for s in BF16_MATMUL_SIZES:
        row(f"matmul {s}×{s} bfloat16", "GFLOP/s", "gflops", f"matmul_bf16:{s}", gf)
    row("MLP step, no checkpointing", "ms", "step_ms", "mlp:plain", ms)
    row("MLP step under bf16 autocast", "ms", "step_ms", "mlp:bf16", ms)
    row(f"MLP step, checkpoint_sequential({MLP_SEGMENTS})", "ms", "step_ms", "mlp:ckpt", ms)
    row(f"MLP checkpoint_sequential({MLP_SEGMENTS}) step, same-process rounds", "ms", "ckpt_ms",
        "mlp:floor", ms)
    row(f"its floor: plain step + {MLP_SEGMENTS - 1}/{MLP_SEGMENTS} of a no_grad forward", "ms",
        "floor_ms", "mlp:floor", ms)
    row("checkpointed step / its floor (median of per-round ratios)", "×", "over_floor",
        "mlp:floor", ms2)
    blocks, gd, gh, gb, gt = GPT
    row(f"GPT step: {blocks} blocks, dim {gd}, {gh} heads, batch {gb} × {gt} tokens", "ms",
        "step_ms", "gpt:plain", ms)
    row(f"GPT step under bf16 autocast: {blocks} blocks, dim {gd}, {gh} heads, batch {gb} × "
        f"{gt} tokens", "ms", "step_ms", "gpt:bf16", ms)
    row(
        "MLP peak, no checkpointing (remat counters vs PyTorch RSS)",
        "MiB",
        None,
        "mlp:plain",
        mib,
        ("peak_bytes", "rss_growth"),
    )
    row(
        f"MLP peak, checkpoint_sequential({MLP_SEGMENTS}) (remat counters vs PyTorch RSS)",
        "MiB",
        None,
        "mlp:ckpt",
        mib,
        ("peak_bytes", "rss_growth"),
    )
    row("MLP peak RSS growth, no checkpointing", "MiB", "rss_growth", "mlp:plain", mib)
    row(
        f"MLP peak RSS growth, checkpoint_sequential({MLP_SEGMENTS})",
        "MiB",
        "rss_growth",
        "mlp:ckpt",
        mib,
    )

    table = ["| workload | unit | remat | PyTorch | remat/PyTorch |", "|---|---|---:|---:|---:|"]
    title = f"## {datetime.date.today().isoformat()}, commit {_commit()}: {machine_line()}"
    text = title + "\n\n" + "\n".join(header) + "\n\n" + "\n".join(table + rows)
    print(text)
    _record(Path(args.out), text)
    print(f"\nadded to {args.out}", file=sys.stderr)


def _commit() -> str:
    """The short hash of the checkout being measured (with "+changes" when it is dirty)."""
    here = Path(__file__).resolve().parent
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here,
                              capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=here, capture_output=True, text=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return head + ("+changes" if dirty else "")


# The journal's section that runs of this script go into, newest first.
RUNS_HEADING = "# Runs of `benches/compare_torch.py`"


def _record(path: Path, text: str) -> None:
    """Add this run to the journal at ``path``, newest first under ``RUNS_HEADING`` (a file
    without that section gets it at its end; a missing file is created)."""
    journal = path.read_text() if path.exists() else ""
    if RUNS_HEADING not in journal:
        journal = journal.rstrip("\n") + ("\n\n" if journal else "") + RUNS_HEADING + "\n"
    at = journal.index(RUNS_HEADING) + len(RUNS_HEADING)
    path.write_text(journal[:at] + "\n\n" + text + "\n" + journal[at:])


if __name__ == "__main__":
    main()
