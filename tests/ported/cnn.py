"""A plain PyTorch training script: a small CNN (Conv2d, BatchNorm-free, MaxPool2d,
AvgPool2d, Flatten, Linear) on scikit-learn's 8x8 digits, trained with Adam and a
OneCycleLR schedule, with a held-out accuracy.

tests/ported/test_ported_scripts.py runs it with `import torch` replaced by `import remat as torch`
(the only change); benches/torch_parity.py runs both and compares first-step numbers."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits


class Model(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, kernel_size=3, padding=1), nn.SiLU(), nn.AvgPool2d(2),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(16 * 2 * 2, classes))

    def forward(self, x):
        return self.classifier(self.features(x))


def make_data():
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None]
    y = digits.target.astype(np.int64)
    return torch.tensor(x), torch.tensor(y)


def loss_fn(model, batch):
    x, y = batch
    return F.cross_entropy(model(x), y, label_smoothing=0.05)


def train(steps=40, seed=0, batch=64):
    torch.manual_seed(seed)
    x, y = make_data()
    x_train, y_train, x_test, y_test = x[:1500], y[:1500], x[1500:], y[1500:]
    model = Model()
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-2, total_steps=steps)
    losses = []
    for _ in range(steps):
        idx = torch.randint(0, x_train.shape[0], (batch,))
        loss = loss_fn(model, (x_train[idx], y_train[idx]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    with torch.no_grad():
        acc = (model(x_test).argmax(1) == y_test).float().mean().item()
    return losses, acc


if __name__ == "__main__":
    losses, acc = train()
    print(f"first loss {losses[0]:.4f}  last loss {losses[-1]:.4f}  test accuracy {acc:.3f}")
