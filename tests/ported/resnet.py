"""A plain PyTorch training script: a small ResNet (BasicBlocks with BatchNorm2d,
`nn.ReLU(inplace=True)`, the in-place residual `out += identity`, a strided 1x1 downsample)
on scikit-learn's 8x8 digits, trained with SGD (momentum, Nesterov, weight decay) and a
CosineAnnealingLR schedule, optionally with each block checkpointed
(`torch.utils.checkpoint.checkpoint`), and evaluated in eval mode (BatchNorm's running
statistics).

tests/ported/test_ported_scripts.py runs it with `import torch` replaced by `import remat as torch`
(the only change); benches/torch_parity.py runs both and compares first-step numbers."""

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch.utils.checkpoint import checkpoint


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(
                nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        out = self.relu(out)
        return out


class Model(nn.Module):
    def __init__(self, classes=10, checkpointing=False):
        super().__init__()
        self.checkpointing = checkpointing
        self.stem = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8),
                                  nn.ReLU(inplace=True))
        self.blocks = nn.ModuleList([BasicBlock(8, 8), BasicBlock(8, 16, stride=2)])
        self.fc = nn.Linear(16, classes)

    def forward(self, x):
        x = self.stem(x)
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False) if self.checkpointing else block(x)
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


def make_data():
    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)[:, None]
    y = digits.target.astype(np.int64)
    return torch.tensor(x), torch.tensor(y)


def loss_fn(model, batch):
    x, y = batch
    return F.cross_entropy(model(x), y)


def train(steps=30, seed=0, batch=64, checkpointing=False):
    """Losses per step, the test accuracy in eval mode and the first block's BatchNorm
    running mean after training."""
    torch.manual_seed(seed)
    x, y = make_data()
    x_train, y_train, x_test, y_test = x[:1500], y[:1500], x[1500:], y[1500:]
    model = Model(checkpointing=checkpointing)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True,
                          weight_decay=5e-4)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps)
    losses = []
    model.train()
    for _ in range(steps):
        idx = torch.randint(0, x_train.shape[0], (batch,))
        loss = loss_fn(model, (x_train[idx], y_train[idx]))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        acc = (model(x_test).argmax(1) == y_test).float().mean().item()
    running = model.blocks[0].bn1.running_mean.detach().numpy().copy()
    return losses, acc, running


if __name__ == "__main__":
    losses, acc, _ = train()
    print(f"first loss {losses[0]:.4f}  last loss {losses[-1]:.4f}  test accuracy {acc:.3f}")
