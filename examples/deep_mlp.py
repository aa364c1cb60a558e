"""Train a deep residual MLP on scikit-learn's bundled handwritten digits with gradient
checkpointing, and report test accuracy, peak memory and step time.

The model is ``Linear(64, width)``, then ``depth`` residual blocks
``x + Linear(GELU(Linear(LayerNorm(x))))``, then ``LayerNorm`` and ``Linear(width, 10)``. The
blocks run under one of the checkpointing strategies:

    none        keep every activation (the plain run)
    every       each block is a checkpoint segment (``activation_checkpointing = True``)
    sqrt        ``remat.checkpoint_sequential(blocks, "sqrt", x)``: about √depth segments
    budget:N    ``remat.checkpoint_sequential(blocks, None, x, budget_bytes=N)``: the least
                recompute that keeps activations within N bytes

All strategies give the same gradients; they differ in peak memory and step time.

``--memory-limit BYTES`` (e.g. ``8MB``) caps everything the engine holds (parameters,
gradients, optimizer state and activations) with ``remat.set_memory_limit``: activations are
evicted and recomputed as needed (dynamic rematerialisation), with no change to the model.

    python examples/deep_mlp.py --checkpoint sqrt
    python examples/deep_mlp.py --memory-limit 8MB
    python examples/deep_mlp.py --checkpoint none --depth 64
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from tqdm import tqdm

import remat
from remat import nn, optim


class Block(nn.Module):
    """Pre-norm residual MLP block: ``x + fc2(gelu(fc1(norm(x))))``."""

    def __init__(self, width: int, hidden: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, width)

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(self.norm(x))))


class DeepMLP(nn.Module):
    """Stem, ``depth`` residual blocks run under a checkpointing strategy, and a head."""

    def __init__(
        self, n_in: int, n_out: int, depth: int, width: int, checkpoint: str = "none"
    ) -> None:
        super().__init__()
        self.stem = nn.Linear(n_in, width)
        self.blocks = nn.Sequential(*[Block(width, width) for _ in range(depth)])
        self.head = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, n_out))
        self.checkpoint = checkpoint
        for b in self.blocks:
            b.activation_checkpointing = checkpoint == "every"

    def forward(self, x):
        x = self.stem(x)
        if self.checkpoint == "sqrt":
            x = remat.checkpoint_sequential(self.blocks, "sqrt", x)
        elif self.checkpoint.startswith("budget:"):
            budget = int(float(self.checkpoint.split(":", 1)[1]))
            x = remat.checkpoint_sequential(self.blocks, None, x, budget_bytes=budget)
        else:  # "none", or "every" (each block checkpoints itself)
            x = self.blocks(x)
        return self.head(x)


def train_step(model: nn.Module, opt: optim.Optimizer, xb, yb, device: str) -> float:
    """One optimisation step; returns the loss. The graph dies with the function's locals."""
    opt.zero_grad(set_to_none=False)
    loss = remat.cross_entropy(model(xb), yb)
    loss.backward()
    opt.step()
    if device != "cpu":
        remat.cuda.synchronize()
    return loss.item()


def parse_checkpoint(value: str) -> str:
    if value in ("none", "sqrt", "every"):
        return value
    if value.startswith("budget:"):
        try:
            n = int(float(value.split(":", 1)[1]))
        except ValueError:
            n = -1
        if n > 0:
            return value
    raise argparse.ArgumentTypeError(
        f"--checkpoint must be none, sqrt, every or budget:BYTES, got {value!r}"
    )


def mib(n: int) -> str:
    return f"{n / 2**20:.2f} MiB"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--checkpoint",
        type=parse_checkpoint,
        default="none",
        help="none | sqrt | every | budget:BYTES (default: none)",
    )
    ap.add_argument("--device", default="cpu", help="cpu or cuda (default: cpu)")
    ap.add_argument("--depth", type=int, default=32, help="residual blocks (default: 32)")
    ap.add_argument("--width", type=int, default=64, help="hidden width (default: 64)")
    ap.add_argument("--epochs", type=int, default=8, help="passes over the data (default: 8)")
    ap.add_argument("--batch-size", type=int, default=128, help="default: 128")
    ap.add_argument(
        "--memory-limit",
        default=None,
        help="cap the engine's memory (bytes, or e.g. 8MB): dynamic rematerialisation",
    )
    ap.add_argument("--lr", type=float, default=1e-3, help="AdamW learning rate (default: 1e-3)")
    ap.add_argument("--seed", type=int, default=0, help="default: 0")
    ap.add_argument(
        "--quick",
        action="store_true",
        help="a tiny run (4 blocks, width 32, 1 epoch) for the test suite",
    )
    args = ap.parse_args(argv)
    if args.quick:
        args.depth, args.width, args.epochs = 4, 32, 1
    if args.depth < 1 or args.width < 1 or args.epochs < 1 or args.batch_size < 1:
        ap.error("--depth, --width, --epochs and --batch-size must be positive")

    device = args.device
    if device.startswith("cuda"):
        try:
            remat.zeros(1, device=device)
        except remat.DeviceError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2

    # Data: 1797 8x8 digit images, standardised, 80/20 split with a fixed seed.
    digits = load_digits()
    x_train, x_test, y_train, y_test = train_test_split(
        digits.data,
        digits.target,
        test_size=0.2,
        random_state=args.seed,
        stratify=digits.target,
    )
    scaler = StandardScaler().fit(x_train)
    x_train = scaler.transform(x_train).astype(np.float32)
    x_test = scaler.transform(x_test).astype(np.float32)
    if args.quick:
        x_train, y_train = x_train[:256], y_train[:256]

    if args.memory_limit is not None:
        try:
            remat.set_memory_limit(args.memory_limit, device)
        except (ValueError, TypeError) as e:
            ap.error(str(e))
    remat.manual_seed(args.seed)
    rng = np.random.default_rng(args.seed)
    model = DeepMLP(64, 10, args.depth, args.width, args.checkpoint).to(device)
    opt = optim.AdamW(model.parameters(), lr=args.lr, weight_decay=1e-4)
    n_params = sum(p.numel() for p in model.parameters())
    print(
        f"deep_mlp: {args.depth} residual blocks, width {args.width}, {n_params:,} parameters, "
        f"checkpoint={args.checkpoint}, device={device}"
    )
    print(f"data: {len(x_train)} train / {len(x_test)} test digits, batch {args.batch_size}")

    x_test_t = remat.tensor(x_test, device=device)
    step_times: list[float] = []
    peaks: list[int] = []
    extra: list[int] = []
    n = len(x_train)
    steps_per_epoch = (n + args.batch_size - 1) // args.batch_size
    bar = tqdm(total=args.epochs * steps_per_epoch, desc="train", unit="step", file=sys.stderr)
    epoch_loss = float("nan")
    for _epoch in range(args.epochs):
        model.train()
        order = rng.permutation(n)
        losses = []
        for i in range(0, n, args.batch_size):
            idx = order[i : i + args.batch_size]
            xb = remat.tensor(x_train[idx], device=device)
            yb = y_train[idx]
            base = remat.memory_allocated(device)
            remat.reset_peak_memory_stats(device)
            t0 = time.perf_counter()
            try:
                losses.append(train_step(model, opt, xb, yb, device))
            except MemoryError as e:
                bar.close()
                print(f"error: {e}", file=sys.stderr)
                return 3
            step_times.append(time.perf_counter() - t0)
            peaks.append(remat.max_memory_allocated(device))
            extra.append(peaks[-1] - base)
            bar.update(1)
            bar.set_postfix(loss=f"{losses[-1]:.4f}")
        epoch_loss = float(np.mean(losses))
    bar.close()

    model.eval()
    try:
        with remat.no_grad():
            logits = model(x_test_t).numpy()
    except MemoryError as e:
        print(f"error: evaluating the test set: {e}", file=sys.stderr)
        return 3
    accuracy = float(np.mean(np.argmax(logits, axis=1) == y_test))
    # The first step also allocates the gradients and the optimizer state: leave it out.
    timed = step_times[1:] or step_times
    peaks, extra = (peaks[1:] or peaks), (extra[1:] or extra)
    print(f"train loss (last epoch): {epoch_loss:.4f}")
    print(f"test accuracy: {accuracy * 100:.2f}%")
    print(
        f"peak memory per training step: {mib(max(peaks))} "
        f"(above the step's starting point: {mib(max(extra))})"
    )
    print(f"median step time: {statistics.median(timed) * 1e3:.2f} ms")
    stats = remat.memory_stats(device)
    if stats["limit"] is not None:
        print(
            f"memory limit {mib(stats['limit'])}: {stats['evictions']} evictions, "
            f"{stats['rematerializations']} rematerializations "
            f"({stats['remat_seconds'] * 1e3:.1f} ms recomputing)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
