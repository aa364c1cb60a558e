"""NumPy references of the ops that make spatial axes larger: the transposed convolution (a
direct scatter of every input position's weighted window) and ``interpolate`` (PyTorch's
source-position formulas, written out per axis)."""

import itertools

import numpy as np


def np_conv_transpose(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1,
                      dilation=1):
    """``x (N, C_in, *s)``, ``w (C_in, C_out/g, *k)``: each input position adds
    ``x · w`` into the output window starting at ``i·stride - padding``."""
    unbatched = x.ndim == w.ndim - 1
    if unbatched:
        x = x[None]
    rank = w.ndim - 2
    tup = lambda v: (v,) * rank if np.isscalar(v) else tuple(v)  # noqa: E731
    st, p, op, d = tup(stride), tup(padding), tup(output_padding), tup(dilation)
    n, c_in, *s = x.shape
    og, k = w.shape[1], w.shape[2:]
    cig = c_in // groups
    full = [(s[i] - 1) * st[i] + d[i] * (k[i] - 1) + 1 + op[i] for i in range(rank)]
    out = np.zeros((n, og * groups, *full))
    for g in range(groups):
        xs = x[:, g * cig:(g + 1) * cig]
        ws = w[g * cig:(g + 1) * cig]
        for kk in itertools.product(*(range(v) for v in k)):
            contrib = np.einsum("nc...,co->no...", xs, ws[(slice(None), slice(None), *kk)])
            idx = tuple(slice(kk[i] * d[i], kk[i] * d[i] + (s[i] - 1) * st[i] + 1, st[i])
                        for i in range(rank))
            out[(slice(None), slice(g * og, (g + 1) * og), *idx)] += contrib
    crop = tuple(slice(p[i], full[i] - p[i]) for i in range(rank))
    out = out[(slice(None), slice(None), *crop)]
    if b is not None:
        out = out + b.reshape((1, -1) + (1,) * rank)
    return out[0] if unbatched else out


def _source_positions(n_in, n_out, mode, align_corners, scale_factor):
    """(low index, high index, weight of high) per output position along one axis."""
    d = np.arange(n_out, dtype=np.float64)
    if mode in ("nearest", "nearest-exact"):
        s = np.float32(1.0 / scale_factor if scale_factor else n_in / n_out)
        off = np.float32(0.5 if mode == "nearest-exact" else 0.0)
        i = np.minimum(np.floor((d.astype(np.float32) + off) * s), n_in - 1).astype(int)
        return i, i, np.zeros(n_out)
    if align_corners:
        src = d * ((n_in - 1) / (n_out - 1) if n_out > 1 else 0.0)
    else:
        s = 1.0 / scale_factor if scale_factor else n_in / n_out
        src = np.maximum((d + 0.5) * s - 0.5, 0.0)
    lo = np.minimum(np.floor(src).astype(int), n_in - 1)
    hi = np.minimum(lo + 1, n_in - 1)
    return lo, hi, src - lo


def np_interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=None):
    rank = x.ndim - 2
    if size is not None:
        size = (size,) * rank if np.isscalar(size) else tuple(size)
        factors = (None,) * rank
    else:
        factors = (scale_factor,) * rank if np.isscalar(scale_factor) else tuple(scale_factor)
        size = tuple(int(np.floor(x.shape[2 + i] * factors[i])) for i in range(rank))
    if mode == "area":
        out = np.empty(x.shape[:2] + size)
        for pos in itertools.product(*(range(v) for v in size)):
            win = tuple(slice((p * x.shape[2 + i]) // size[i],
                              -((-(p + 1) * x.shape[2 + i]) // size[i]))
                        for i, p in enumerate(pos))
            out[(...,) + pos] = x[(slice(None), slice(None)) + win].mean(
                axis=tuple(range(2, 2 + rank)))
        return out
    y = x
    for i in range(rank):
        lo, hi, w = _source_positions(x.shape[2 + i], size[i], mode, align_corners, factors[i])
        shape = [1] * y.ndim
        shape[2 + i] = size[i]
        w = w.reshape(shape)
        y = np.take(y, lo, axis=2 + i) * (1 - w) + np.take(y, hi, axis=2 + i) * w
    return y
