"""Sampling: `multinomial`, `randperm`, `bernoulli`, `normal`, `Tensor.bernoulli_` and
`Tensor.exponential_`. Each is tested as a distribution (frequencies against the exact
probabilities, with bounds far outside the seeded draws' sampling error), for determinism under
`manual_seed` and a `Generator`, for its errors, and for replay inside a checkpoint (a recompute
draws the forward's numbers even while another thread draws from the global stream)."""

import itertools
import math
import threading

import numpy as np
import pytest

import remat
from remat.checkpoint import checkpoint


def _chi2_ok(counts, probs, n):
    """Pearson's statistic against `probs`, below a bound with p-value ~1e-6 for the degrees of
    freedom (Wilson-Hilferty), so a correct sampler never fails a seeded run by chance."""
    probs = np.asarray(probs, dtype=float)
    keep = probs > 0
    expected = n * probs[keep]
    stat = float(((counts[keep] - expected) ** 2 / expected).sum())
    k = int(keep.sum()) - 1
    z = 4.75  # one-sided normal quantile of 1e-6
    bound = k * (1 - 2 / (9 * k) + z * math.sqrt(2 / (9 * k))) ** 3 if k > 0 else 0.0
    return stat <= bound, stat, bound


# ---- multinomial


def test_multinomial_with_replacement_frequencies():
    remat.manual_seed(0)
    w = np.array([0.5, 1.0, 0.0, 2.5])
    n = 40000
    s = remat.multinomial(remat.tensor(w), n, replacement=True).numpy()
    assert s.dtype == np.int64 and s.shape == (n,)
    counts = np.bincount(s, minlength=4)
    assert counts[2] == 0  # zero weight is never drawn
    ok, stat, bound = _chi2_ok(counts, w / w.sum(), n)
    assert ok, (stat, bound)


def test_multinomial_without_replacement_first_and_second_draw():
    remat.manual_seed(1)
    w = np.array([1.0, 2.0, 3.0, 4.0])
    p = w / w.sum()
    m = 20000
    s = remat.multinomial(remat.tensor(np.tile(w, (m, 1))), 2).numpy()
    assert s.shape == (m, 2)
    assert (s[:, 0] != s[:, 1]).all()
    ok, stat, bound = _chi2_ok(np.bincount(s[:, 0], minlength=4), p, m)
    assert ok, (stat, bound)
    # P(second = j) = sum_{i != j} p_i p_j / (1 - p_i): draws proportional to what is left.
    second = np.array([sum(p[i] * p[j] / (1 - p[i]) for i in range(4) if i != j)
                       for j in range(4)])
    ok, stat, bound = _chi2_ok(np.bincount(s[:, 1], minlength=4), second, m)
    assert ok, (stat, bound)


def test_multinomial_all_categories_without_replacement_is_a_permutation():
    remat.manual_seed(2)
    s = remat.multinomial(remat.ones(5, 7), 7).numpy()
    assert (np.sort(s, axis=1) == np.arange(7)).all()


def test_multinomial_rows_are_independent_distributions():
    remat.manual_seed(3)
    w = remat.tensor([[0.0, 1.0, 0.0], [1.0, 0.0, 0.0]])
    s = remat.multinomial(w, 10, replacement=True).numpy()
    assert (s[0] == 1).all() and (s[1] == 0).all()
    assert remat.tensor([[0.0, 1.0]]).multinomial(1).tolist() == [[1]]


def test_multinomial_is_deterministic_under_seed_and_generator():
    w = remat.tensor([0.2, 0.3, 0.5])
    remat.manual_seed(7)
    a = remat.multinomial(w, 50, replacement=True)
    remat.manual_seed(7)
    b = remat.multinomial(w, 50, replacement=True)
    assert remat.equal(a, b)
    remat.manual_seed(7)
    g1 = remat.multinomial(w, 50, True, generator=remat.Generator().manual_seed(5))
    after = remat.multinomial(w, 50, replacement=True)
    g2 = remat.multinomial(w, 50, True, generator=remat.Generator().manual_seed(5))
    assert remat.equal(g1, g2)
    assert remat.equal(after, a)  # the generator left the global stream alone


@pytest.mark.parametrize("w,k,replacement,exc,needle", [
    ([[[1.0]]], 1, True, remat.ShapeError, "1 or 2 dim"),
    ([1.0, -0.5], 1, True, ValueError, "element < 0"),
    ([1.0, float("nan")], 1, True, ValueError, "nan"),
    ([1.0, float("inf")], 1, True, ValueError, "inf"),
    ([0.0, 0.0], 1, True, ValueError, "sum of probabilities"),
    ([1.0, 1.0], 3, False, ValueError, "without replacement"),
    ([1.0, 0.0, 0.0], 2, False, ValueError, "not enough"),
    ([1.0], 0, True, ValueError, "n_sample <= 0"),
    ([1.0], -1, True, ValueError, "n_sample <= 0"),
])
def test_multinomial_errors(w, k, replacement, exc, needle):
    with pytest.raises(exc, match="multinomial") as e:
        remat.multinomial(remat.tensor(w), k, replacement=replacement)
    assert needle in str(e.value)


def test_multinomial_refuses_integer_weights():
    with pytest.raises(remat.DTypeError, match="multinomial"):
        remat.multinomial(remat.tensor([1, 2]), 1)


# ---- randperm


def test_randperm_every_permutation_equally_likely():
    remat.manual_seed(4)
    n = 12000
    perms = [tuple(remat.randperm(3).tolist()) for _ in range(n)]
    index = {p: i for i, p in enumerate(itertools.permutations(range(3)))}
    counts = np.bincount([index[p] for p in perms], minlength=6)
    ok, stat, bound = _chi2_ok(counts, np.full(6, 1 / 6), n)
    assert ok, (stat, bound)


def test_randperm_positions_are_uniform_for_longer_permutations():
    remat.manual_seed(5)
    n, m = 10, 4000
    first = np.array([remat.randperm(n)[0].item() for _ in range(m)])
    ok, stat, bound = _chi2_ok(np.bincount(first, minlength=n), np.full(n, 1 / n), m)
    assert ok, (stat, bound)
    p = remat.randperm(1000)
    assert sorted(p.tolist()) == list(range(1000))


def test_randperm_dtypes_sizes_and_determinism():
    assert remat.randperm(0).shape == (0,)
    assert remat.randperm(1).tolist() == [0]
    assert remat.randperm(5).dtype == remat.int64
    assert remat.randperm(5, dtype=remat.int32).dtype == remat.int32
    f = remat.randperm(5, dtype=remat.float64)
    assert f.dtype == remat.float64 and sorted(f.tolist()) == [0.0, 1.0, 2.0, 3.0, 4.0]
    remat.manual_seed(9)
    a = remat.randperm(50)
    remat.manual_seed(9)
    assert remat.equal(a, remat.randperm(50))
    g = remat.randperm(50, generator=remat.Generator().manual_seed(3))
    assert remat.equal(g, remat.randperm(50, generator=remat.Generator().manual_seed(3)))


def test_randperm_errors():
    with pytest.raises(ValueError, match="randperm"):
        remat.randperm(-1)
    with pytest.raises(remat.DTypeError, match="randperm"):
        remat.randperm(3, dtype=remat.bool_)


# ---- bernoulli, exponential_, normal


def test_bernoulli_frequencies_per_element():
    remat.manual_seed(6)
    p = np.array([0.0, 0.1, 0.5, 0.9, 1.0])
    n = 20000
    s = remat.bernoulli(remat.tensor(np.tile(p, (n, 1)))).numpy()
    assert set(np.unique(s)) <= {0.0, 1.0}
    freq = s.mean(axis=0)
    assert freq[0] == 0.0 and freq[-1] == 1.0
    assert np.all(np.abs(freq - p) <= 6 * np.sqrt(p * (1 - p) / n) + 1e-12)


def test_bernoulli_forms_and_dtype():
    x = remat.zeros(3, dtype=remat.float64)
    assert x.bernoulli(1.0).tolist() == [1.0, 1.0, 1.0]
    assert remat.bernoulli(x, 1.0).dtype == remat.float64
    y = remat.tensor([0.3, 0.7], requires_grad=True)
    assert not remat.bernoulli(y).requires_grad  # the samples are not differentiable


def test_bernoulli_in_place_with_a_number_and_a_tensor():
    remat.manual_seed(8)
    n = 50000
    x = remat.empty(n).bernoulli_(0.25)
    assert abs(float(x.mean()) - 0.25) < 6 * math.sqrt(0.25 * 0.75 / n)
    assert remat.empty(4).bernoulli_().shape == (4,)  # p = 0.5
    m = remat.empty(3, 2).bernoulli_(remat.tensor([0.0, 1.0]))
    assert m.tolist() == [[0.0, 1.0]] * 3


def test_bernoulli_errors():
    with pytest.raises(ValueError, match="bernoulli"):
        remat.bernoulli(remat.tensor([1.5]))
    with pytest.raises(ValueError, match="bernoulli_"):
        remat.empty(2).bernoulli_(-0.1)
    with pytest.raises(remat.DTypeError, match="bernoulli_"):
        remat.zeros(2, dtype=remat.int64).bernoulli_(0.5)
    w = remat.zeros(2, requires_grad=True)
    with pytest.raises(remat.GraphError):
        w.bernoulli_(0.5)


def test_exponential_matches_its_distribution():
    remat.manual_seed(10)
    n, lambd = 100000, 2.0
    x = remat.empty(n, dtype=remat.float64).exponential_(lambd).numpy()
    assert (x >= 0).all()
    assert abs(x.mean() - 1 / lambd) < 6 * (1 / lambd) / math.sqrt(n)
    # Kolmogorov-Smirnov distance against the CDF 1 - exp(-lambd x).
    xs = np.sort(x)
    cdf = 1 - np.exp(-lambd * xs)
    d = max(np.max(np.arange(1, n + 1) / n - cdf), np.max(cdf - np.arange(n) / n))
    assert d < 1.95 / math.sqrt(n)  # the Kolmogorov distribution's 0.1% critical value
    with pytest.raises(ValueError, match="exponential_"):
        remat.empty(2).exponential_(0.0)


def test_normal_forms_and_moments():
    remat.manual_seed(11)
    n = 100000
    a = remat.normal(remat.full((n,), 3.0), remat.full((n,), 2.0)).numpy()
    assert abs(a.mean() - 3.0) < 6 * 2 / math.sqrt(n) and abs(a.std() - 2.0) < 0.03
    b = remat.normal(remat.zeros(n), 0.5).numpy()
    assert abs(b.std() - 0.5) < 0.01
    c = remat.normal(-1.0, remat.full((n,), 1.0)).numpy()
    assert abs(c.mean() + 1.0) < 0.03
    d = remat.normal(0.0, 1.0, size=(4, 5), dtype=remat.float64)
    assert d.shape == (4, 5) and d.dtype == remat.float64
    e = remat.normal(remat.zeros(2, 1), remat.ones(3))
    assert e.shape == (2, 3)
    assert remat.normal(0.0, 1.0, size=(2,), requires_grad=True).requires_grad
    assert not remat.normal(remat.zeros(2, requires_grad=True), 1.0).requires_grad


def test_normal_errors():
    with pytest.raises(TypeError, match="size"):
        remat.normal(0.0, 1.0)
    with pytest.raises(TypeError, match="size"):
        remat.normal(remat.zeros(2), 1.0, size=(2,))
    with pytest.raises(ValueError, match="std"):
        remat.normal(0.0, -1.0, size=(2,))
    with pytest.raises(ValueError, match="std"):
        remat.normal(remat.zeros(2), remat.tensor([1.0, -1.0]))
    with pytest.raises(TypeError, match="normal"):
        remat.normal("zero", 1.0)


# ---- checkpoint replay


def _noisy_block(x):
    """A block whose forward draws from every sampler (a recompute must draw the same)."""
    keep = remat.bernoulli(remat.full(x.shape, 0.7))
    idx = remat.multinomial(remat.ones(x.shape[-1]), x.shape[-1])
    noise = remat.normal(remat.zeros(x.shape), 0.1)
    perm = remat.randperm(x.shape[0])
    e = remat.empty(x.shape).exponential_(1.0)
    y = (x * keep + noise) * e
    return (y[perm][:, idx]).tanh()


def test_samplers_replay_identically_inside_a_checkpoint():
    x0 = np.random.default_rng(0).standard_normal((6, 5))
    x = remat.tensor(x0, requires_grad=True)
    remat.manual_seed(21)
    plain = _noisy_block(x)
    plain.sum().backward()
    g_plain = x.grad.numpy().copy()
    x.grad = None
    remat.manual_seed(21)
    ck = checkpoint(_noisy_block, x)
    ck.sum().backward()
    assert remat.equal(plain, ck)
    np.testing.assert_array_equal(x.grad.numpy(), g_plain)


def test_recompute_agrees_while_another_thread_draws():
    """A recompute replays the forward's keys even when another thread draws from the global
    generator between the forward and the backward."""
    x = remat.tensor(np.random.default_rng(1).standard_normal((8, 5)), requires_grad=True)
    remat.manual_seed(22)
    plain = _noisy_block(x)
    plain.sum().backward()
    g_plain = x.grad.numpy().copy()
    x.grad = None

    remat.manual_seed(22)
    ck = checkpoint(_noisy_block, x)
    stop, drew = threading.Event(), threading.Event()

    def draw():
        while not stop.is_set():
            remat.multinomial(remat.ones(4), 2)
            remat.randperm(16)
            remat.rand(8)
            drew.set()

    t = threading.Thread(target=draw)
    t.start()
    try:
        assert drew.wait(timeout=60)  # the global stream moved on after the forward
        ck.sum().backward()
    finally:
        stop.set()
        t.join()
    np.testing.assert_array_equal(x.grad.numpy(), g_plain)
