"""Deep convolutions on small planes (a DCGAN discriminator's later layers: hundreds of
channels, 4×4 kernels, planes of 1-16 positions) run their CPU kernels on tiles that span
several samples. Their output, input gradient, weight gradient and bias gradient equal a
float64 NumPy reference, for batches that split between the threads evenly, unevenly and
not at all, with groups, for a plane too small to fill one tile, and for kernels that cover
the whole input."""

from __future__ import annotations

import numpy as np
import pytest
from np_windows import np_conv, np_fold, np_unfold

import remat
import remat.nn.functional as F

CASES = [
    # (batch, in channels, out channels, side, kernel, stride, padding, groups)
    (6, 128, 64, 8, 4, 2, 1, 1),  # even split, several samples per tile
    (5, 128, 32, 8, 4, 2, 1, 1),  # a batch the threads do not split evenly
    (7, 256, 8, 4, 4, 1, 0, 1),  # one position per sample (the discriminator's last layer)
    (4, 128, 64, 8, 4, 2, 1, 2),  # groups
    (3, 64, 16, 6, 3, 1, 1, 1),  # shallower: 36 positions per sample, single-sample tiles
    # The kernel covers the whole unpadded input (each column is a sample's planes):
    (16, 512, 1, 4, 4, 1, 0, 1),  # a DCGAN discriminator's last layer
    (4, 64, 8, 4, 4, 2, 0, 4),  # groups, a stride that never moves
    (1, 32, 4, 3, 3, 1, 0, 1),  # one sample
    (3, 8, 5, 3, 3, 1, 0, 1),  # shallow: single-sample tiles
]


def reference(x, w, b, g, stride, padding, groups):
    """(y, gx, gw, gb) in float64 for the output gradient g."""
    y = np_conv(x, w, b, stride=stride, padding=padding, groups=groups)
    n, c = x.shape[:2]
    o, cg, k = w.shape[0], w.shape[1], w.shape[2]
    og = o // groups
    gx = np.zeros_like(x)
    gw = np.zeros_like(w)
    for gi in range(groups):
        xs = x[:, gi * cg:(gi + 1) * cg]
        cols = np_unfold(xs, k, padding=padding, stride=stride)  # (n, cg k k, L)
        gyg = g[:, gi * og:(gi + 1) * og].reshape(n, og, -1)
        gw[gi * og:(gi + 1) * og] = np.einsum("nol,nkl->ok", gyg, cols).reshape(og, cg, k, k)
        wg = w[gi * og:(gi + 1) * og].reshape(og, -1)
        gcols = np.einsum("ok,nol->nkl", wg, gyg)
        gx[:, gi * cg:(gi + 1) * cg] = np_fold(gcols, x.shape[2:], k, padding=padding,
                                               stride=stride)
    return y, gx, gw, g.sum(axis=(0, 2, 3))


@pytest.mark.parametrize("case", CASES, ids=lambda c: "x".join(map(str, c)))
def test_deep_convolution_matches_the_float64_reference(case):
    n, c, o, side, k, stride, padding, groups = case
    rng = np.random.default_rng(sum(case))
    x = rng.standard_normal((n, c, side, side)).astype(np.float32)
    w = (rng.standard_normal((o, c // groups, k, k)) * 0.1).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32)
    xt = remat.tensor(x, requires_grad=True)
    wt = remat.tensor(w, requires_grad=True)
    bt = remat.tensor(b, requires_grad=True)
    y = F.conv2d(xt, wt, bt, stride=stride, padding=padding, groups=groups)
    g = rng.standard_normal(tuple(y.shape)).astype(np.float32)
    y.backward(remat.tensor(g))
    y64, gx64, gw64, gb64 = reference(x.astype(np.float64), w.astype(np.float64),
                                      b.astype(np.float64), g.astype(np.float64), stride,
                                      padding, groups)
    for got, want in ((y, y64), (xt.grad, gx64), (wt.grad, gw64), (bt.grad, gb64)):
        got = got.detach().numpy()
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3 * np.abs(want).max())


def test_deep_convolution_gives_the_same_gradients_with_one_thread_and_two():
    # The threads' split of the samples (and so the tiles) changes with the thread count;
    # the gradients agree to rounding.
    import subprocess
    import sys

    code = (
        "import numpy as np, remat, remat.nn.functional as F\n"
        "rng = np.random.default_rng(3)\n"
        "x = remat.tensor(rng.standard_normal((6, 128, 8, 8)).astype(np.float32), "
        "requires_grad=True)\n"
        "w = remat.tensor((rng.standard_normal((64, 128, 4, 4)) * 0.1).astype(np.float32), "
        "requires_grad=True)\n"
        "F.conv2d(x, w, stride=2, padding=1).square().sum().backward()\n"
        "np.save(__import__('sys').argv[1], np.concatenate([x.grad.numpy().ravel(), "
        "w.grad.numpy().ravel()]))\n"
    )
    import os
    import tempfile

    outs = []
    with tempfile.TemporaryDirectory() as d:
        for threads in ("1", "2"):
            path = os.path.join(d, f"g{threads}.npy")
            env = dict(os.environ, RAYON_NUM_THREADS=threads)
            subprocess.run([sys.executable, "-c", code, path], env=env, check=True, timeout=300)
            outs.append(np.load(path))
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-4, atol=1e-4)
