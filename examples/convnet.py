"""Train a small CNN on scikit-learn's bundled 8x8 handwritten digits (no download), and
report test accuracy, step time and peak memory.

The model is two convolution blocks (``Conv2d`` 3x3 + ReLU + ``MaxPool2d``), then
``Flatten`` and a ``Linear`` classifier. With ``--checkpoint`` each convolution block is a
checkpoint segment (``activation_checkpointing = True``): its activations are recomputed
in backward instead of kept, with identical gradients.

    python examples/convnet.py
    python examples/convnet.py --checkpoint --epochs 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np
from sklearn.datasets import load_digits
from tqdm import tqdm

import remat
import remat.nn.functional as F
from remat import nn, optim
from remat.utils.data import DataLoader, TensorDataset


def conv_block(c_in: int, c_out: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2))


class ConvNet(nn.Module):
    def __init__(self, width: int, checkpoint: bool) -> None:
        super().__init__()
        self.blocks = nn.Sequential(conv_block(1, width), conv_block(width, 2 * width))
        for block in self.blocks:
            block.activation_checkpointing = checkpoint
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(2 * width * 2 * 2, 10))

    def forward(self, x):
        return self.head(self.blocks(x))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--width", type=int, default=16)
    p.add_argument("--lr", type=float, default=3e-3)
    p.add_argument("--checkpoint", action="store_true")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args()

    remat.manual_seed(args.seed)
    digits = load_digits()
    x = remat.tensor((digits.images / 16.0).astype(np.float32)[:, None])
    y = remat.tensor(digits.target.astype(np.int64))
    n_train = int(0.8 * len(y))
    train = DataLoader(TensorDataset(x[:n_train], y[:n_train]), batch_size=args.batch,
                       shuffle=True)
    model = ConvNet(args.width, args.checkpoint)
    opt = optim.Adam(model.parameters(), lr=args.lr)
    sched = optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.epochs * len(train))
    times = []
    remat.reset_peak_memory_stats()
    base = remat.memory_allocated()
    for epoch in range(args.epochs):
        bar = tqdm(train, desc=f"epoch {epoch + 1}/{args.epochs}", leave=False)
        for xb, yb in bar:
            t0 = time.perf_counter()
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            times.append(time.perf_counter() - t0)
            bar.set_postfix(loss=f"{loss.item():.3f}")
    peak = remat.max_memory_allocated() - base
    model.eval()
    with remat.no_grad():
        pred = model(x[n_train:]).argmax(dim=1)
        acc = (pred == y[n_train:]).float().mean().item()
    print(f"test accuracy {acc:.3f}; step {1e3 * statistics.median(times):.2f} ms (median); "
          f"peak memory above the model {peak / 2**20:.2f} MiB; checkpoint={args.checkpoint}")
    return 0 if acc > 0.5 else 1


if __name__ == "__main__":
    sys.exit(main())
