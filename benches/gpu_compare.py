"""remat vs PyTorch on a GPU: one training step of a deep MLP, plain and checkpointed.

    python benches/gpu_compare.py [--device cuda] [--out FILE.md] [--quick]
                                  [--width 4096] [--depth 64] [--batch 4096] [--segments 8]
                                  [--runs 10] [--warmup 2] [--modes plain,ckpt,offload]
                                  [--threads N] [--budget-s 60] [--total-timeout S]

Model: ``depth`` x (Linear(width, width) + ReLU), flattened into one ``nn.Sequential`` of
``2 * depth`` modules, float32. The same weights in both libraries: seeded NumPy, He-uniform
(U(-a, a) with a = sqrt(6 / width), so ReLU activations keep their scale through the depth),
each layer a row permutation and column rotation of one seeded base matrix (cheap to
generate for 64 layers of 4096 x 4096), zero biases; the input is seeded NumPy N(0, 1).

One step = forward, loss = mean(y * y), backward, SGD update (lr 1e-4). The gradients are
allocated before the measured steps (zero-filled in place by ``zero_grad(set_to_none=False)``)
so the peak counts the step's activations and temporaries, not the gradient buffers.

Modes (rows of the table):

- ``plain``: ``model(x)``.
- ``ckpt``: ``checkpoint_sequential(model, segments, x)`` (PyTorch: ``use_reentrant=False``);
  the last segment runs plainly in both libraries.
- ``offload``: the same segmentation with the kept segment inputs in host memory. remat:
  ``checkpoint_sequential(..., offload=True)``. PyTorch:
  ``torch.utils.checkpoint.checkpoint(run_segment, h, dummy, use_reentrant=True)``
  per checkpointed segment inside
  ``torch.autograd.graph.save_on_cpu(pin_memory=True)`` (the reentrant checkpoint saves its
  inputs with ``save_for_backward``, so they go to pinned host memory; ``dummy`` is a
  one-element tensor with ``requires_grad`` so that the first segment, whose input needs no
  gradient, still back-propagates into its parameters), last segment plain.

Figures: median step time (ms) over ``--runs`` timed steps after ``--warmup`` steps, each step
between two device synchronisations (``remat.cuda.synchronize()`` /
``torch.cuda.synchronize()``); peak device memory of a step above the step's start (remat:
``max_memory_allocated(device) - memory_allocated(device)`` after
``reset_peak_memory_stats(device)``; PyTorch: the same with ``torch.cuda.*``), the largest
over the timed steps; ratios remat/PyTorch (< 1 favours remat). On ``--device cpu`` PyTorch
has no allocator counters, so its peak is the growth of the process's peak RSS (marked).
The loss of the first step is reported for both libraries as a check that they compute the
same thing.

Every (library, mode) runs in its own subprocess, so neither library's allocator or CUDA
context disturbs the other and a crash or CUDA error in one mode is reported in the table
while the others still run. With ``--device cuda`` and no usable GPU for remat the script
prints a ``skipped`` line and exits 0. Exit status: 0 when every measurement succeeded (or
skipped), 3 when some mode failed (the table says which and why), 1 when remat cannot be
imported. This is a script, not a test; CI never runs it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

from machine_info import cpu_model, maxrss_kib, reset_peak_rss

MODES = ("plain", "ckpt", "offload")
LIBS = ("remat", "torch")
LR = 1e-4
RESULT_TAG = "@@GPU_COMPARE_RESULT "
QUICK = {"width": 256, "depth": 8, "batch": 128, "segments": 4, "runs": 3, "warmup": 1}
FULL = {"width": 4096, "depth": 64, "batch": 4096, "segments": 8, "runs": 10, "warmup": 2}


# -- measurements, run inside a worker subprocess ----------------------------------------------


def _maxrss_bytes() -> int:
    return maxrss_kib() * 1024


def _weights(width: int, depth: int):
    """Yield (weight (out, in), bias) per layer: the same seeded values for both libraries."""
    import numpy as np

    rng = np.random.default_rng(1)
    a = math.sqrt(6.0 / width)
    base = rng.random((width, width), dtype=np.float32)
    base *= np.float32(2 * a)
    base -= np.float32(a)
    bias = np.zeros(width, dtype=np.float32)
    for _ in range(depth):
        rows = rng.permutation(width)
        shift = int(rng.integers(width))
        yield np.roll(np.take(base, rows, axis=0), shift, axis=1), bias


def _input(batch: int, width: int):
    import numpy as np

    return np.random.default_rng(2).standard_normal((batch, width), dtype=np.float32)


def _plan(n_layers: int, segments: int) -> list[tuple[int, int, bool]]:
    """PyTorch's ``checkpoint_sequential`` split: ``segments`` runs of ``n // segments``
    layers, all checkpointed but the last, which runs plainly to the end."""
    size = max(1, n_layers // max(1, segments))
    out = []
    start = 0
    for _ in range(max(1, segments) - 1):
        end = min(start + size, n_layers)
        if end <= start:
            break
        out.append((start, end, True))
        start = end
    if start < n_layers:
        out.append((start, n_layers, False))
    return out


def _run_layers(layers):
    def run(h, *_ignored):
        for f in layers:
            h = f(h)
        return h

    return run


class _RematLib:
    name = "remat"

    def __init__(self, device: str) -> None:
        import remat

        self.m = remat
        self.device = device
        self.version = getattr(remat, "__version__", "unknown")

    def sync(self) -> None:
        if self.device != "cpu":
            self.m.cuda.synchronize()

    def build(self, width: int, depth: int):
        nn = self.m.nn
        mods = []
        for w, b in _weights(width, depth):
            lin = nn.Linear(1, 1)  # tiny default init; the real parameters are assigned below
            lin.weight = self.m.tensor(w, device=self.device, requires_grad=True)
            lin.bias = self.m.tensor(b, device=self.device, requires_grad=True)
            lin.in_features = lin.out_features = width
            mods += [lin, nn.ReLU()]
        return nn.Sequential(*mods)

    def tensor(self, array):
        return self.m.tensor(array, device=self.device)

    def zeros_like(self, p):
        return self.m.zeros_like(p, device=p.device)

    def forward_fn(self, mode: str, model, segments: int, x, notes: list):
        remat = self.m
        if mode == "plain":
            return lambda: model(x)
        if mode == "ckpt":
            return lambda: remat.checkpoint_sequential(model, segments, x)
        # offload
        notes.append("checkpoint_sequential(offload=True)")
        return lambda: remat.checkpoint_sequential(model, segments, x, offload=True)

    def memory(self):
        dev = self.device
        return (
            lambda: self.m.reset_peak_memory_stats(dev),
            lambda: self.m.memory_allocated(dev),
            lambda: self.m.max_memory_allocated(dev),
            "counters",
        )


class _TorchLib:
    name = "torch"

    def __init__(self, device: str) -> None:
        import torch

        self.m = torch
        self.device = device
        self.version = torch.__version__
        threads = int(os.environ.get("OMP_NUM_THREADS") or 0)
        if threads > 0:
            torch.set_num_threads(threads)
        if device != "cpu" and not torch.cuda.is_available():
            raise RuntimeError("torch.cuda.is_available() is False in this PyTorch build")
        if device != "cpu":
            # "cuda" alone means the current device (set_device needs an index).
            dev = torch.device(device)
            if dev.index is not None:
                torch.cuda.set_device(dev)

    def sync(self) -> None:
        if self.device != "cpu":
            self.m.cuda.synchronize()

    def build(self, width: int, depth: int):
        torch = self.m
        nn = torch.nn
        mods = []
        for w, b in _weights(width, depth):
            lin = nn.Linear(1, 1)  # as for remat: assign the real parameters
            lin.weight = nn.Parameter(torch.from_numpy(w).to(self.device))
            lin.bias = nn.Parameter(torch.from_numpy(b).to(self.device))
            lin.in_features = lin.out_features = width
            mods += [lin, nn.ReLU()]
        return nn.Sequential(*mods)

    def tensor(self, array):
        return self.m.from_numpy(array).to(self.device)

    def zeros_like(self, p):
        return self.m.zeros_like(p)

    def forward_fn(self, mode: str, model, segments: int, x, notes: list):
        torch = self.m
        from torch.utils.checkpoint import checkpoint, checkpoint_sequential

        if mode == "plain":
            return lambda: model(x)
        if mode == "ckpt":
            return lambda: checkpoint_sequential(model, segments, x, use_reentrant=False)
        layers = list(model)
        runs = [(_run_layers(layers[s:e]), ck) for s, e, ck in _plan(len(layers), segments)]
        dummy = torch.ones(1, device=self.device, requires_grad=True)
        pin = self.device != "cpu"
        notes.append(
            f"reentrant checkpoint x {sum(ck for _, ck in runs)} in "
            f"save_on_cpu(pin_memory={pin}), last segment plain"
        )

        def forward():
            h = x
            for fn, ck in runs:
                if ck:
                    with torch.autograd.graph.save_on_cpu(pin_memory=pin):
                        h = checkpoint(fn, h, dummy, use_reentrant=True)
                else:
                    h = fn(h)
            return h

        return forward

    def memory(self):
        cuda = self.m.cuda
        if self.device == "cpu":
            state = {}

            def reset():
                state["ok"] = reset_peak_rss()

            return (reset, _maxrss_bytes, _maxrss_bytes, "RSS growth")
        dev = self.device
        return (
            lambda: cuda.reset_peak_memory_stats(dev),
            lambda: cuda.memory_allocated(dev),
            lambda: cuda.max_memory_allocated(dev),
            "counters",
        )


def _make_lib(name: str, device: str):
    return _RematLib(device) if name == "remat" else _TorchLib(device)


def work_step(lib, a: argparse.Namespace) -> dict:
    """Build the model, warm up, then time ``a.runs`` steps (fewer when they would exceed
    ``a.budget_s``) and measure each one's peak memory above its start."""
    res: dict = {"notes": []}
    t0 = time.perf_counter()
    model = lib.build(a.width, a.depth)
    x = lib.tensor(_input(a.batch, a.width))
    params = list(model.parameters())
    opt = lib.m.optim.SGD(params, lr=LR)
    forward = lib.forward_fn(a.mode, model, a.segments, x, res["notes"])
    for p in params:
        p.grad = lib.zeros_like(p)
    lib.sync()
    res["setup_s"] = time.perf_counter() - t0

    def step():
        opt.zero_grad(set_to_none=False)
        y = forward()
        loss = (y * y).mean()
        del y
        loss.backward()
        opt.step()
        return loss

    warm = []
    for i in range(max(1, a.warmup)):
        lib.sync()
        t0 = time.perf_counter()
        loss = step()
        lib.sync()
        warm.append((time.perf_counter() - t0) * 1e3)
        if i == 0:
            res["loss0"] = float(loss.item())
    res["warmup_ms"] = warm
    runs = a.runs
    if a.budget_s > 0:
        runs = max(1, min(runs, int(a.budget_s * 1e3 / max(warm[-1], 1e-3))))
    if runs < a.runs:
        res["notes"].append(f"{runs} of {a.runs} runs (--budget-s {a.budget_s:g})")
    reset, allocated, max_allocated, kind = lib.memory()
    res["peak_kind"] = kind
    times, peaks, bases = [], [], []
    for _ in range(runs):
        lib.sync()
        reset()
        base = allocated()
        t0 = time.perf_counter()
        step()
        lib.sync()
        times.append((time.perf_counter() - t0) * 1e3)
        peaks.append(max_allocated() - base)
        bases.append(base)
    res["step_ms"] = times
    res["peak_bytes"] = peaks
    if kind == "counters":  # an RSS figure is not "allocated at the start"
        res["base_bytes"] = bases
    res["runs"] = runs
    return res


def work_info(name: str, device: str) -> dict:
    """Versions and device availability of one library."""
    if name == "remat":
        import remat

        info = {"version": getattr(remat, "__version__", "unknown"), "file": remat.__file__}
        info["cuda_available"] = bool(remat.cuda.is_available())
        info["cuda_device_count"] = int(remat.cuda.device_count())
        if device != "cpu":
            try:
                remat.zeros(1, device=device)
                info["device_ok"] = True
            except Exception as e:  # noqa: BLE001 - the reason is what we report
                info["device_ok"] = False
                info["device_error"] = f"{type(e).__name__}: {e}"
        return info
    import torch

    info = {
        "version": torch.__version__,
        "cuda_build": torch.version.cuda,
        "cuda_available": torch.cuda.is_available(),
        "float32_matmul_precision": torch.get_float32_matmul_precision(),
    }
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
        props = torch.cuda.get_device_properties(0)
        info["gpu_memory_gib"] = round(props.total_memory / 2**30, 1)
        info["allow_tf32"] = bool(torch.backends.cuda.matmul.allow_tf32)
    return info


def worker(a: argparse.Namespace) -> None:
    try:
        if a.mode == "info":
            res = work_info(a.worker, a.device)
        else:
            lib = _make_lib(a.worker, a.device)
            res = work_step(lib, a)
            res["version"] = lib.version
    except BaseException as e:  # noqa: BLE001 - one mode's failure is a result, not a crash
        res = {
            "error": f"{type(e).__name__}: {e}".strip(),
            "traceback": traceback.format_exc()[-4000:],
        }
    print(RESULT_TAG + json.dumps(res), flush=True)


# -- the driver ---------------------------------------------------------------------------------


def _has_torch() -> bool:
    import importlib.util

    return importlib.util.find_spec("torch") is not None


def _worker_cmd(lib: str, mode: str, a: argparse.Namespace) -> list[str]:
    cmd = [sys.executable, __file__, "--worker", lib, "--mode", mode, "--device", a.device]
    for k in ("width", "depth", "batch", "segments", "runs", "warmup", "threads"):
        cmd += [f"--{k}", str(getattr(a, k))]
    return cmd + ["--budget-s", str(a.budget_s)]


def _run_worker(cmd: list[str], timeout: float, threads: int = 0) -> dict:
    env = dict(os.environ)
    if threads > 0:
        for var in ("RAYON_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            env[var] = str(threads)
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired as e:
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else e.stderr
        return {
            "error": f"timed out after {timeout:.0f} s",
            "stderr": (err or "")[-3000:],
            "wall_s": time.perf_counter() - t0,
        }
    res = None
    for line in p.stdout.splitlines():
        if line.startswith(RESULT_TAG):
            res = json.loads(line[len(RESULT_TAG) :])
    if res is None:
        why = f"exit code {p.returncode}"
        if p.returncode < 0:
            why = f"killed by signal {-p.returncode}"
        res = {"error": f"worker died without a result ({why})"}
    if p.stderr.strip():
        res["stderr"] = p.stderr[-3000:]
    res["wall_s"] = time.perf_counter() - t0
    return res


def _nvidia_smi() -> str | None:
    if not shutil.which("nvidia-smi"):
        return None
    try:
        p = subprocess.run(
            [
                "nvidia-smi",
                "--query-gpu=name,driver_version,memory.total",
                "--format=csv,noheader",
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return p.stdout.strip().replace("\n", "; ") or None


def _mem_total_gib() -> str:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return f"{int(line.split()[1]) / 2**20:.0f} GiB RAM"
    except OSError:
        pass
    return "RAM unknown"


def _med(v) -> float | None:
    return statistics.median(v) if v else None


def _fmt(v: float | None, digits: int = 1) -> str:
    return "" if v is None else f"{v:.{digits}f}"


def _ratio(r: float | None, t: float | None) -> str:
    return f"{r / t:.2f}" if r is not None and t else ""


def _cell_error(res: dict | None) -> str:
    if not res or "error" not in res:
        return ""
    return res["error"].splitlines()[0][:160].replace("|", "/")


def _print_failure(name: str, res: dict) -> None:
    print(f"\n--- {name}: {res['error']}", file=sys.stderr)
    for key in ("traceback", "stderr"):
        if res.get(key):
            print(res[key].rstrip(), file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda", help='"cuda" (default), "cuda:N" or "cpu"')
    ap.add_argument(
        "--quick",
        action="store_true",
        help="tiny sizes (width 256, depth 8, batch 128, 4 segments, 3 runs)",
    )
    for k, v in FULL.items():
        ap.add_argument(f"--{k}", type=int, default=None, help=f"default {v} ({QUICK[k]} quick)")
    ap.add_argument(
        "--modes", default=",".join(MODES), help="comma-separated subset of " + ", ".join(MODES)
    )
    ap.add_argument("--no-torch", action="store_true", help="measure remat only")
    ap.add_argument(
        "--threads",
        type=int,
        default=0,
        help="CPU threads for both libraries (torch.set_num_threads, "
        "RAYON_NUM_THREADS, OMP_NUM_THREADS); default 0: each library's default",
    )
    ap.add_argument("--out", default=None, help="also write the results as Markdown here")
    ap.add_argument(
        "--budget-s",
        type=float,
        default=60.0,
        help="cap on the timed steps of one worker, in seconds: fewer runs when "
        "--runs steps would take longer (default 60; 0: no cap)",
    )
    ap.add_argument(
        "--worker-timeout",
        type=float,
        default=300.0,
        help="kill a worker after this many seconds (default 300)",
    )
    ap.add_argument(
        "--total-timeout",
        type=float,
        default=0.0,
        help="stop starting workers once this many seconds have passed, and give "
        "each at most what is left (default 0: no limit)",
    )
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--mode", help=argparse.SUPPRESS)
    a = ap.parse_args()
    sizes = QUICK if a.quick else FULL
    for k, v in sizes.items():
        if getattr(a, k) is None:
            setattr(a, k, v)
    if a.worker:
        worker(a)
        return 0

    start = time.perf_counter()
    modes = [m.strip() for m in a.modes.split(",") if m.strip()]
    bad = [m for m in modes if m not in MODES]
    if bad:
        ap.error(f"unknown mode(s) {bad}; choose from {MODES}")
    libs = ["remat"] + (["torch"] if _has_torch() and not a.no_torch else [])
    on_gpu = a.device != "cpu"

    info = {lib: _run_worker(_worker_cmd(lib, "info", a), 120, a.threads) for lib in libs}
    rinfo, tinfo = info["remat"], info.get("torch", {})
    if "error" in rinfo:
        _print_failure("remat (import / device query)", rinfo)
        print(f"error: remat could not be imported or queried: {rinfo['error']}")
        return 1
    if on_gpu and not (rinfo.get("cuda_available") and rinfo.get("device_ok")):
        why = rinfo.get("device_error") or "remat.cuda.is_available() is False"
        line = (
            f"skipped: --device {a.device} asked but remat has no usable GPU "
            f"(remat.cuda.is_available() = {rinfo.get('cuda_available')}): {why}"
        )
        print(line)
        if a.out:
            Path(a.out).write_text(f"# remat vs PyTorch ({a.device})\n\n{line}\n")
        return 0

    import numpy

    gpu = tinfo.get("gpu") if on_gpu else None
    smi = _nvidia_smi() if on_gpu else None
    torch_ver = (
        "not installed"
        if "torch" not in libs
        else tinfo.get("error") or f"{tinfo.get('version')} (CUDA {tinfo.get('cuda_build')})"
    )
    header = [
        f"- date: {datetime.date.today().isoformat()}",
        f"- machine: {cpu_model()}, {os.cpu_count()} logical cores, {_mem_total_gib()}, "
        f"{platform.machine()}",
    ]
    if on_gpu:
        header.append(
            f"- device: {a.device}, GPU {gpu or 'name unknown (PyTorch without CUDA)'}"
            + (f" ({tinfo.get('gpu_memory_gib')} GiB)" if gpu else "")
            + (f"; nvidia-smi: {smi}" if smi else "")
        )
    else:
        header.append("- device: cpu")
    header += [
        f"- Python {platform.python_version()}, NumPy {numpy.__version__}, remat "
        f"{rinfo.get('version')} ({rinfo.get('file')}), PyTorch {torch_ver}",
    ]
    if "torch" in libs and "error" not in tinfo:
        header.append(
            f"- PyTorch float32 matmul precision: {tinfo.get('float32_matmul_precision')}"
            + (f", cuda.matmul.allow_tf32 = {tinfo.get('allow_tf32')}" if on_gpu else "")
            + " (remat: cuBLAS default math mode, no TF32 override)"
        )
    if a.threads > 0:
        header.append(f"- CPU threads: {a.threads} for both libraries")
    header += [
        f"- MLP: {a.depth} x (Linear({a.width}, {a.width}) + ReLU), batch {a.batch}, float32; "
        f"step = forward, loss mean(y²), backward, SGD lr {LR}; gradients pre-allocated",
        f"- checkpointing: {a.segments} segments, last one plain (offload: segment inputs kept "
        "in host memory; see the notes column)",
        f"- {a.warmup} warm-up step(s), then median of {a.runs} timed steps (device synchronised "
        "before and after each)",
        "- peak: largest over the timed steps of the step's peak allocated device memory above "
        "its start (max_memory_allocated after reset_peak_memory_stats, minus "
        "memory_allocated)"
        + ("" if on_gpu else "; PyTorch on the CPU: growth of peak RSS instead"),
        "- remat/PyTorch < 1 favours remat; each (library, mode) ran in its own subprocess",
    ]
    print("# remat vs PyTorch" + (f" ({a.device})" if on_gpu else " (cpu)"))
    print("\n".join(header), flush=True)

    results: dict[tuple[str, str], dict] = {}
    jobs = [(lib, mode) for mode in modes for lib in libs]
    for i, (lib, mode) in enumerate(jobs):
        if lib == "torch" and "error" in tinfo:
            results[(lib, mode)] = {"error": f"PyTorch unavailable: {tinfo['error']}"}
            continue
        timeout = a.worker_timeout
        if a.total_timeout > 0:
            left = a.total_timeout - (time.perf_counter() - start)
            if left < 10:
                results[(lib, mode)] = {"error": "not run: --total-timeout reached"}
                continue
            # leave the workers after this one 20 s each, or at least an equal share
            after = len(jobs) - i - 1
            timeout = min(timeout, max(left - 20 * after, left / (after + 1)))
        res = _run_worker(_worker_cmd(lib, mode, a), timeout, a.threads)
        results[(lib, mode)] = res
        status = res["error"] if "error" in res else f"median {_fmt(_med(res['step_ms']))} ms"
        print(
            f"  {lib:5s} {mode:7s}: {status} ({res.get('wall_s', 0):.1f} s)",
            file=sys.stderr,
            flush=True,
        )
        if "error" in res:
            _print_failure(f"{lib} {mode}", res)

    label = {
        "plain": "plain",
        "ckpt": f"checkpoint_sequential({a.segments})",
        "offload": f"checkpoint_sequential({a.segments}) + offload",
    }
    rows = [
        "| mode | remat ms | PyTorch ms | ms remat/PyTorch | remat peak MiB | PyTorch peak MiB "
        "| peak remat/PyTorch |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    details = [
        "| mode | library | runs | median / min / max ms | first step ms | allocated at start "
        "MiB | loss (first step) | notes / error |",
        "|---|---|---:|---|---:|---:|---:|---|",
    ]
    failed = 0
    for mode in modes:
        r = results.get(("remat", mode), {})
        t = results.get(("torch", mode), {}) if "torch" in libs else {}
        rm, tm = _med(r.get("step_ms")), _med(t.get("step_ms"))
        rp = max(r["peak_bytes"]) / 2**20 if r.get("peak_bytes") else None
        tp = max(t["peak_bytes"]) / 2**20 if t.get("peak_bytes") else None
        tp_s = _fmt(tp) + (" (RSS)" if tp is not None and t.get("peak_kind") != "counters" else "")
        if "error" in r:
            rm_s = rp_s = "failed"
        else:
            rm_s, rp_s = _fmt(rm), _fmt(rp)
        tm_s = "failed" if "error" in t else _fmt(tm)
        if "error" in t:
            tp_s = "failed"
        rows.append(
            f"| {label[mode]} | {rm_s} | {tm_s} | {_ratio(rm, tm)} | {rp_s} | {tp_s} "
            f"| {_ratio(rp, tp) if t.get('peak_kind') == 'counters' else ''} |"
        )
        for lib, res in (("remat", r), ("torch", t)):
            if lib not in libs:
                continue
            if "error" in res:
                failed += 1
            ms = res.get("step_ms") or []
            spread = f"{_fmt(_med(ms))} / {_fmt(min(ms))} / {_fmt(max(ms))}" if ms else ""
            base = _fmt(_med(res.get("base_bytes")) / 2**20) if res.get("base_bytes") else ""
            first = _fmt(res["warmup_ms"][0]) if res.get("warmup_ms") else ""
            loss = f"{res['loss0']:.6g}" if "loss0" in res else ""
            note = "; ".join(res.get("notes", []))
            err = _cell_error(res)
            if err:
                note = (note + "; " if note else "") + "**error**: " + err
            details.append(
                f"| {label[mode]} | {'PyTorch' if lib == 'torch' else lib} | {res.get('runs', '')} "
                f"| {spread} | {first} | {base} | {loss} | {note} |"
            )
        if "loss0" in r and "loss0" in t and t["loss0"]:
            rel = abs(r["loss0"] - t["loss0"]) / abs(t["loss0"])
            details.append(f"| {label[mode]} | loss rel. diff | | | | | {rel:.2e} | |")
    elapsed = time.perf_counter() - start
    text = (
        "# remat vs PyTorch"
        + (f" ({a.device})" if on_gpu else " (cpu)")
        + "\n\n"
        + "\n".join(header)
        + "\n\n"
        + "\n".join(rows)
        + "\n\nDetails:\n\n"
        + "\n".join(details)
        + f"\n\n{failed} failed measurement(s); {elapsed:.0f} s in all.\n"
    )
    print()
    print("\n".join(rows))
    print("\nDetails:\n")
    print("\n".join(details))
    print(f"\n{failed} failed measurement(s); {elapsed:.0f} s in all.")
    if a.out:
        Path(a.out).write_text(text)
        print(f"written to {a.out}", file=sys.stderr)
    return 3 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
