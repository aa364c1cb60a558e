"""Backend switches in the layout of ``torch.backends``: :mod:`remat.backends.cuda`
(``matmul.allow_tf32`` and the cuBLAS flags), :mod:`remat.backends.cudnn`,
:mod:`remat.backends.mkldnn`, :mod:`remat.backends.mps` and :mod:`remat.backends.cpu`.

The flags record the setting with PyTorch's defaults and checks, so that scripts which set
or read them run unchanged; remat computes float32 matmuls in full float32 whatever they say
today (TF32 comes with the mixed-precision work), and it uses neither cuDNN, oneDNN nor
Metal. Every flag's value is kept in one place, ``remat.backends.cuda._SETTINGS``, for the
engine to read.
"""

from __future__ import annotations

from . import cpu, cuda, cudnn, mkldnn, mps

__all__ = ["cpu", "cuda", "cudnn", "mkldnn", "mps"]
