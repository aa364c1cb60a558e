"""A plain PyTorch training script: an MLP classifier on synthetic data, with a DataLoader,
SGD with momentum and a StepLR schedule, dropout, train/eval modes and accuracy.

tests/ported/test_ported_scripts.py runs it with `import torch` replaced by `import remat as torch`
(the only change); benches/torch_parity.py runs both and compares first-step numbers."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class Model(nn.Module):
    def __init__(self, d_in=20, hidden=64, classes=4):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(d_in, hidden), nn.ReLU(), nn.Dropout(0.1),
            nn.Linear(hidden, hidden), nn.GELU(), nn.Linear(hidden, classes),
        )

    def forward(self, x):
        return self.net(x)


def make_data(n=512, d_in=20, classes=4, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.standard_normal((classes, d_in)) * 0.8
    y = rng.integers(0, classes, n)
    x = centers[y] + rng.standard_normal((n, d_in))
    return torch.tensor(x, dtype=torch.float32), torch.tensor(y)


def loss_fn(model, batch):
    x, y = batch
    return F.cross_entropy(model(x), y)


def train(steps=60, seed=0):
    torch.manual_seed(seed)
    x, y = make_data()
    loader = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True, drop_last=True)
    model = Model()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=20, gamma=0.5)
    losses, step = [], 0
    while step < steps:
        for batch in loader:
            model.train()
            loss = loss_fn(model, batch)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            losses.append(loss.item())
            step += 1
            if step == steps:
                break
    model.eval()
    with torch.no_grad():
        acc = (model(x).argmax(dim=1) == y).float().mean().item()
    return losses, acc


if __name__ == "__main__":
    losses, acc = train()
    print(f"first loss {losses[0]:.4f}  last loss {losses[-1]:.4f}  accuracy {acc:.3f}")
