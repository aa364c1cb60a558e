"""A plain PyTorch training script: a small Vision Transformer written with einops, as such
models usually are: patches cut by einops' `Rearrange` layer, a class token added with
`einops.repeat`, attention heads split and merged with `einops.rearrange`, and (with
`builtin=True`) the blocks replaced by `nn.TransformerEncoder`. Trained with AdamW on
synthetic 8x8 images whose class is the bright quadrant, optionally with per-block activation
checkpointing (torch.utils.checkpoint).

tests/ported/test_ported_scripts.py runs it with its torch imports pointed at remat and the
one einops line that names the framework, `from einops.layers.torch import Rearrange`, made
`from remat.nn import Rearrange`; benches/torch_parity.py runs both and compares first-step
numbers."""

import math

import numpy as np
import torch
import torch.nn as nn
from einops import rearrange, repeat
from einops.layers.torch import Rearrange
from torch.utils.checkpoint import checkpoint


class Attention(nn.Module):
    def __init__(self, dim, heads, dropout=0.1):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.norm = nn.LayerNorm(dim)
        self.to_qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x):
        x = self.norm(x)
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads)
                   for t in self.to_qkv(x).chunk(3, dim=-1))
        attn = self.dropout(torch.softmax(torch.matmul(q, k.transpose(-1, -2)) * self.scale, -1))
        return self.to_out(rearrange(torch.matmul(attn, v), "b h n d -> b n (h d)"))


class Block(nn.Module):
    def __init__(self, dim, heads, mlp_dim):
        super().__init__()
        self.attn = Attention(dim, heads)
        self.ff = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, mlp_dim), nn.GELU(),
                                nn.Dropout(0.1), nn.Linear(mlp_dim, dim))

    def forward(self, x):
        x = x + self.attn(x)
        return x + self.ff(x)


class Model(nn.Module):
    def __init__(self, image=8, patch=2, classes=4, dim=32, depth=2, heads=4, mlp_dim=64,
                 builtin=False, checkpointing=False):
        super().__init__()
        patches = (image // patch) ** 2
        self.to_patch_embedding = nn.Sequential(
            Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=patch, p2=patch),
            nn.Linear(patch * patch, dim),
            nn.LayerNorm(dim),
        )
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim))
        self.pos_embedding = nn.Parameter(torch.randn(1, patches + 1, dim))
        if builtin:
            layer = nn.TransformerEncoderLayer(dim, heads, mlp_dim, activation="gelu",
                                               batch_first=True, norm_first=True)
            self.encoder = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        else:
            self.blocks = nn.ModuleList([Block(dim, heads, mlp_dim) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)
        self.checkpointing = checkpointing

    def forward(self, img):
        x = self.to_patch_embedding(img)
        cls = repeat(self.cls_token, "1 1 d -> b 1 d", b=x.shape[0])
        x = torch.cat([cls, x], dim=1) + self.pos_embedding
        for block in self.encoder.layers if hasattr(self, "encoder") else self.blocks:
            if self.checkpointing:
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        return self.head(self.norm(x[:, 0]))


def make_data(n=256, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 4, n)
    x = rng.normal(0.0, 0.3, (n, 1, 8, 8)).astype(np.float32)
    for i, c in enumerate(y):
        r, q = divmod(int(c), 2)
        x[i, 0, 4 * r: 4 * r + 4, 4 * q: 4 * q + 4] += 1.0
    return torch.tensor(x), torch.tensor(y.astype(np.int64))


def loss_fn(model, batch):
    x, y = batch
    return nn.functional.cross_entropy(model(x), y)


def train(steps=40, seed=0, builtin=False, checkpointing=False):
    torch.manual_seed(seed)
    x, y = make_data()
    model = Model(builtin=builtin, checkpointing=checkpointing)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(steps):
        idx = torch.randint(0, len(x), (32,))
        loss = loss_fn(model, (x[idx], y[idx]))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert math.isfinite(losses[-1])
    model.eval()
    with torch.no_grad():
        acc = (model(x).argmax(-1) == y).float().mean().item()
    return losses, acc


if __name__ == "__main__":
    for builtin in (False, True):
        losses, acc = train(builtin=builtin)
        print(f"builtin={builtin}: first loss {losses[0]:.4f}  last loss {losses[-1]:.4f}  "
              f"accuracy {acc:.2f}")
