"""``examples/gpt.py``'s transformer ``Block`` (pre-LayerNorm, causal attention, GELU MLP, no
dropout), written once against any library with PyTorch's ``nn`` API, so benchmarks can run the
same block in remat and in PyTorch."""

from __future__ import annotations


def block_class(nn):
    """The ``Block`` class for the ``nn`` module given (``remat.nn`` or ``torch.nn``)."""
    sdpa = nn.functional.scaled_dot_product_attention

    class Block(nn.Module):
        def __init__(self, d: int, heads: int) -> None:
            super().__init__()
            self.heads = heads
            self.ln1 = nn.LayerNorm(d)
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)
            self.ln2 = nn.LayerNorm(d)
            self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x):
            b, t, d = x.shape
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
            q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2)
                       for z in (q, k, v))
            y = sdpa(q, k, v, is_causal=True)
            x = x + self.proj(y.transpose(1, 2).reshape(b, t, d))
            return x + self.mlp(self.ln2(x))

    return Block
