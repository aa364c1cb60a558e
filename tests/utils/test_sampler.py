"""``remat.utils.data``'s samplers and datasets as ``torch.utils.data``'s: lazy, reproducible
under ``manual_seed``, with the statistics of their distributions, and the DataLoader built
on them (``sampler``, ``batch_sampler``, ``IterableDataset``)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import remat
from remat.utils.data import (
    BatchSampler,
    ConcatDataset,
    DataLoader,
    IterableDataset,
    RandomSampler,
    Sampler,
    SequentialSampler,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
)


def test_module_paths_mirror_torch():
    import remat.utils.data.dataloader as dataloader
    import remat.utils.data.dataset as dataset
    import remat.utils.data.sampler as sampler

    assert dataloader.DataLoader is DataLoader
    assert dataset.TensorDataset is TensorDataset
    assert sampler.RandomSampler is RandomSampler


def test_random_sampler_with_replacement_is_lazy_and_uniform():
    s = RandomSampler(range(4), replacement=True, num_samples=10**10)
    assert len(s) == 10**10
    draws = np.array(list(itertools.islice(iter(s), 40_000)))
    counts = np.bincount(draws, minlength=4)
    assert counts.sum() == 40_000 and draws.min() >= 0 and draws.max() <= 3
    # Each count is Binomial(40000, 1/4): mean 10000, sd 87.
    assert np.all(np.abs(counts - 10_000) < 500), counts


def test_random_sampler_without_replacement_gives_permutations():
    remat.manual_seed(3)
    a = list(RandomSampler(range(10)))
    assert sorted(a) == list(range(10))
    more = list(RandomSampler(range(4), num_samples=10))
    assert sorted(more[:4]) == [0, 1, 2, 3] and sorted(more[4:8]) == [0, 1, 2, 3]
    assert len(more) == 10
    remat.manual_seed(3)
    assert list(RandomSampler(range(10))) == a  # reproducible


def test_generators_make_samplers_reproducible_apart_from_the_global_stream():
    def draws():
        g = remat.Generator()
        g.manual_seed(7)
        return list(RandomSampler(range(100), replacement=True, num_samples=50, generator=g))

    first = draws()
    remat.rand(10)  # the global stream moves; the generator's does not
    assert draws() == first


def test_subset_random_sampler():
    out = list(SubsetRandomSampler([10, 20, 30, 40]))
    assert sorted(out) == [10, 20, 30, 40]
    assert len(SubsetRandomSampler([1, 2])) == 2


def test_weighted_random_sampler_frequencies():
    remat.manual_seed(0)
    w = [1.0, 2.0, 7.0, 0.0]
    draws = np.array(list(WeightedRandomSampler(w, 20_000)))
    freq = np.bincount(draws, minlength=4) / 20_000
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.7, 0.0], atol=0.015)
    no_rep = list(WeightedRandomSampler(w, 3, replacement=False))
    assert sorted(no_rep) == [0, 1, 2]
    # Without replacement the heavy index tends to come first.
    firsts = [next(iter(WeightedRandomSampler([1.0, 9.0], 2, replacement=False)))
              for _ in range(400)]
    assert 0.8 < np.mean(np.array(firsts) == 1) < 0.97


@pytest.mark.parametrize("bad", [
    lambda: WeightedRandomSampler([0.0, 0.0], 2),
    lambda: WeightedRandomSampler([-1.0, 2.0], 2),
    lambda: WeightedRandomSampler([1.0, 0.0], 2, replacement=False),
    lambda: WeightedRandomSampler([1.0], 0),
    lambda: RandomSampler(range(3), num_samples=0),
    lambda: BatchSampler(range(3), 0, False),
    lambda: BatchSampler(range(3), 2, drop_last=1),
])
def test_bad_sampler_arguments(bad):
    with pytest.raises(ValueError):
        bad()


def test_batch_sampler_and_loader_forms():
    assert list(BatchSampler(SequentialSampler(range(5)), 2, drop_last=True)) == [[0, 1], [2, 3]]
    ds = TensorDataset(remat.arange(6))
    loader = DataLoader(ds, batch_sampler=BatchSampler(range(6), 4, drop_last=False))
    assert [b.tolist() for (b,) in loader] == [[0, 1, 2, 3], [4, 5]] and len(loader) == 2
    assert isinstance(DataLoader(ds).sampler, SequentialSampler)
    assert isinstance(DataLoader(ds, shuffle=True).sampler, RandomSampler)
    assert isinstance(DataLoader(ds, batch_size=2).batch_sampler, BatchSampler)
    assert [x.tolist() for (x,) in DataLoader(ds, batch_size=None)][:2] == [0, 1]


def test_loader_over_a_custom_sampler_without_len_still_iterates():
    class FirstThree(Sampler):
        def __iter__(self):
            return iter([2, 0, 1])

    ds = TensorDataset(remat.arange(3))
    assert [b.tolist() for (b,) in DataLoader(ds, batch_size=2, sampler=FirstThree())] == [
        [2, 0], [1]]


def test_iterable_dataset_batches_in_order():
    class Stream(IterableDataset):
        def __iter__(self):
            return (remat.tensor([float(i)]) for i in range(5))

    out = [b.tolist() for b in DataLoader(Stream(), batch_size=2, drop_last=True)]
    assert out == [[[0.0], [1.0]], [[2.0], [3.0]]]
    with pytest.raises(ValueError, match="IterableDataset"):
        DataLoader(Stream(), shuffle=True)


def test_concat_dataset():
    ds = ConcatDataset([TensorDataset(remat.arange(3)), TensorDataset(remat.arange(3, 5))])
    assert len(ds) == 5 and ds[3][0].item() == 3 and ds[-1][0].item() == 4
    assert [b.tolist() for (b,) in DataLoader(ds, batch_size=5)] == [[0, 1, 2, 3, 4]]
    with pytest.raises(IndexError):
        ds[5]


def test_samplers_are_lazy_generators():
    import inspect

    for s in (RandomSampler(range(5), replacement=True, num_samples=10**12),
              RandomSampler(range(5)), BatchSampler(range(10**12), 3, False),
              SubsetRandomSampler([1, 2]), WeightedRandomSampler([1.0, 2.0], 10**12)):
        it = iter(s)
        assert inspect.isgenerator(it), type(s).__name__
        next(it)
    assert next(iter(BatchSampler(RandomSampler(range(4), True, 10**12), 2, True))) != []


def test_random_sampler_takes_one_draw_of_the_global_stream_per_epoch():
    # As PyTorch's: without a generator it seeds its own from one global draw, so reading
    # its indices early or late (a loader's workers prefetch) leaves the global stream alone.
    for replacement in (False, True):
        s = RandomSampler(range(50), replacement=replacement, num_samples=100)
        remat.manual_seed(2)
        it = iter(s)
        first = [next(it)]
        after_one = remat.rand(2).tolist()
        remat.manual_seed(2)
        everything = list(s)
        assert remat.rand(2).tolist() == after_one
        assert everything[0] == first[0] and len(everything) == 100
