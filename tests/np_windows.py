"""NumPy references (float64) for the sliding-window ops: convolution, pooling, padding,
im2col/col2im. Written independently of the engine's im2col: convolutions sum shifted strided
slices of the padded input, pools take maxima/means of the same slices, with PyTorch's output
size, ``ceil_mode`` and divisor rules spelled out."""

from __future__ import annotations

import numpy as np


def sizes(v, n):
    """An int repeated ``n`` times, or the tuple itself."""
    return (v,) * n if isinstance(v, (int, np.integer)) else tuple(v)


def pool_out(n, k, s, p, d, ceil):
    """PyTorch's pooled/convolved length of an axis of ``n``."""
    span = n + 2 * p - d * (k - 1) - 1
    o = (-(-span // s) if ceil else span // s) + 1
    if ceil and (o - 1) * s >= n + p:
        o -= 1
    return o


def _windows(xp, k, s, d, out):
    """Yield (kernel offset, strided slice of the padded ``xp`` for that offset)."""
    r = len(k)
    for off in np.ndindex(*k):
        sl = tuple(slice(off[i] * d[i], off[i] * d[i] + s[i] * (out[i] - 1) + 1, s[i])
                   for i in range(r))
        yield off, xp[(Ellipsis,) + sl]


def np_conv(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    r = w.ndim - 2
    unbatched = x.ndim == r + 1
    if unbatched:
        x = x[None]
    s, d, k = sizes(stride, r), sizes(dilation, r), w.shape[2:]
    if padding == "valid":
        before, after = (0,) * r, (0,) * r
    elif padding == "same":
        total = [d[i] * (k[i] - 1) for i in range(r)]
        before = tuple(t // 2 for t in total)
        after = tuple(t - t // 2 for t in total)
    else:
        before = after = sizes(padding, r)
    xp = np.pad(x, [(0, 0), (0, 0)] + list(zip(before, after)))
    out_sz = [(xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(r)]
    n, c, o = x.shape[0], x.shape[1], w.shape[0]
    cg, og = c // groups, o // groups
    out = np.zeros((n, o, *out_sz))
    for off, patch in _windows(xp, k, s, d, out_sz):
        for g in range(groups):
            wk = w[(slice(g * og, (g + 1) * og), slice(None)) + off]
            out[:, g * og:(g + 1) * og] += np.einsum("nc...,oc->no...",
                                                      patch[:, g * cg:(g + 1) * cg], wk)
    if b is not None:
        out += b.reshape((o,) + (1,) * r)
    return out[0] if unbatched else out


def _pool_geometry(x, r, kernel_size, stride, padding, dilation, ceil_mode):
    k = sizes(kernel_size, r)
    s = sizes(stride if stride not in (None, ()) else kernel_size, r)
    p, d = sizes(padding, r), sizes(dilation, r)
    sp = x.shape[-r:]
    out = [pool_out(sp[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(r)]
    # Enough padding on the right for the last (ceil-mode) window.
    need = [(out[i] - 1) * s[i] + d[i] * (k[i] - 1) + 1 for i in range(r)]
    pads = [(p[i], max(p[i], need[i] - sp[i] - p[i])) for i in range(r)]
    return k, s, p, d, sp, out, pads


def np_max_pool(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, rank=2):
    k, s, _, d, _, out, pads = _pool_geometry(x, rank, kernel_size, stride, padding, dilation,
                                              ceil_mode)
    lead = x.ndim - rank
    xp = np.pad(x, [(0, 0)] * lead + pads, constant_values=-np.inf)
    res = np.full(x.shape[:lead] + tuple(out), -np.inf)
    for _, patch in _windows(xp, k, s, d, out):
        res = np.maximum(res, patch)
    return res


def np_avg_pool(x, kernel_size, stride=None, padding=0, ceil_mode=False,
                count_include_pad=True, divisor_override=None, rank=2):
    k, s, p, d, sp, out, pads = _pool_geometry(x, rank, kernel_size, stride, padding, 1,
                                               ceil_mode)
    lead = x.ndim - rank
    xp = np.pad(x, [(0, 0)] * lead + pads)
    total = np.zeros(x.shape[:lead] + tuple(out))
    for _, patch in _windows(xp, k, s, d, out):
        total += patch
    if divisor_override:
        return total / divisor_override
    div = np.ones(())
    for i in range(rank):
        start = np.arange(out[i]) * s[i] - p[i]
        end = np.minimum(start + k[i], sp[i] + p[i])
        size = end - start
        if not count_include_pad:
            size = np.minimum(end, sp[i]) - np.maximum(start, 0)
        div = np.multiply.outer(div, size)
    return total / div


def np_adaptive_avg_pool(x, output_size, rank=2):
    out = sizes(output_size, rank)
    for i in range(rank):
        axis = x.ndim - rank + i
        n, o = x.shape[axis], out[i] if out[i] is not None else x.shape[axis]
        parts = [np.take(x, range(j * n // o, -(-(j + 1) * n // o)), axis=axis).mean(
            axis=axis, keepdims=True) for j in range(o)]
        x = np.concatenate(parts, axis=axis)
    return x


_NP_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
             "circular": "wrap"}


def np_pad(x, pad, mode="constant", value=None):
    nd = x.ndim
    widths = [(0, 0)] * nd
    for j in range(len(pad) // 2):
        widths[nd - 1 - j] = (pad[2 * j], pad[2 * j + 1])
    crop = tuple(slice(max(-b, 0), x.shape[a] - max(-e, 0)) for a, (b, e) in enumerate(widths))
    x = x[crop]
    widths = [(max(b, 0), max(e, 0)) for b, e in widths]
    if mode == "constant":
        return np.pad(x, widths, constant_values=value or 0.0)
    return np.pad(x, widths, mode=_NP_MODES[mode])


def np_unfold(x, kernel_size, dilation=1, padding=0, stride=1):
    k, d, p, s = (sizes(v, 2) for v in (kernel_size, dilation, padding, stride))
    xp = np.pad(x, [(0, 0), (0, 0)] + [(p[i], p[i]) for i in range(2)])
    out = [(xp.shape[2 + i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    n, c = x.shape[:2]
    cols = np.zeros((n, c, k[0] * k[1], out[0] * out[1]))
    for j, (_, patch) in enumerate(_windows(xp, k, s, d, out)):
        cols[:, :, j] = patch.reshape(n, c, -1)
    return cols.reshape(n, c * k[0] * k[1], -1)


def np_fold(cols, output_size, kernel_size, dilation=1, padding=0, stride=1):
    size, k, d, p, s = (sizes(v, 2) for v in (output_size, kernel_size, dilation, padding,
                                                stride))
    out = [(size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2)]
    n = cols.shape[0]
    c = cols.shape[1] // (k[0] * k[1])
    blocks = cols.reshape(n, c, k[0] * k[1], out[0], out[1])
    img = np.zeros((n, c, size[0] + 2 * p[0], size[1] + 2 * p[1]))
    for j, off in enumerate(np.ndindex(*k)):
        sl = tuple(slice(off[i] * d[i], off[i] * d[i] + s[i] * (out[i] - 1) + 1, s[i])
                   for i in range(2))
        img[(Ellipsis,) + sl] += blocks[:, :, j]
    return img[:, :, p[0]:p[0] + size[0], p[1]:p[1] + size[1]]
