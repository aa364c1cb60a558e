"""DistributedSampler in one process (each rank's sampler built with num_replicas and rank
given): the ranks' slices cover the dataset, with PyTorch's padding and drop_last rules, the
same shuffle on every rank, a new one per epoch; unshuffled, PyTorch's indices exactly."""

from __future__ import annotations

import math

import pytest

import remat
import remat.distributed as dist
from remat.utils.data import DataLoader, DistributedSampler, Sampler, TensorDataset

SIZES = [(10, 3), (12, 4), (7, 2), (5, 8), (1, 3), (9, 1), (16, 5)]


def ranks(n, replicas, **kw):
    return [list(DistributedSampler(range(n), num_replicas=replicas, rank=r, **kw))
            for r in range(replicas)]


def test_is_a_sampler_exported_from_utils_data():
    import remat.utils.data as data
    import remat.utils.data.distributed as module

    assert "DistributedSampler" in data.__all__
    assert module.DistributedSampler is DistributedSampler
    assert issubclass(DistributedSampler, Sampler)


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("n,replicas", SIZES)
def test_padded_slices_cover_the_dataset_with_equal_lengths(n, replicas, shuffle):
    out = ranks(n, replicas, shuffle=shuffle)
    per = math.ceil(n / replicas)
    assert [len(o) for o in out] == [per] * replicas
    assert all(len(DistributedSampler(range(n), replicas, r)) == per for r in range(replicas))
    flat = [i for o in out for i in o]
    assert set(flat) == set(range(n))
    assert len(flat) == per * replicas
    if n >= replicas:
        # Each index is taken once, apart from the padding (which repeats the first ones).
        assert len(set(flat)) == n


@pytest.mark.parametrize("n,replicas", SIZES)
def test_padding_repeats_the_first_indices(n, replicas):
    out = ranks(n, replicas, shuffle=False)
    total = math.ceil(n / replicas) * replicas
    order = [out[k % replicas][k // replicas] for k in range(total)]
    assert order[:n] == list(range(n))
    assert order[n:] == [k % n for k in range(total - n)]


@pytest.mark.parametrize("shuffle", [False, True])
@pytest.mark.parametrize("n,replicas", SIZES)
def test_drop_last_drops_the_tail_so_each_rank_gets_the_same_count(n, replicas, shuffle):
    out = ranks(n, replicas, shuffle=shuffle, drop_last=True)
    per = n // replicas
    assert [len(o) for o in out] == [per] * replicas
    assert all(len(DistributedSampler(range(n), replicas, r, drop_last=True)) == per
               for r in range(replicas))
    flat = [i for o in out for i in o]
    assert len(set(flat)) == len(flat) == per * replicas  # no repeats
    assert set(flat) <= set(range(n))
    if not shuffle:
        assert sorted(flat) == list(range(per * replicas))


def test_rank_takes_every_num_replicas_th_index_from_its_rank():
    assert ranks(10, 3, shuffle=False) == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]
    assert ranks(10, 3, shuffle=False, drop_last=True) == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    assert ranks(0, 2, shuffle=False) == [[], []]


def test_shuffle_is_the_same_on_every_rank_and_a_permutation():
    out = ranks(20, 4, seed=3)
    again = ranks(20, 4, seed=3)
    assert out == again  # the same on every "rank", every time
    flat = [i for o in out for i in o]
    assert sorted(flat) == list(range(20))
    order = [out[k % 4][k // 4] for k in range(20)]
    assert order != list(range(20))  # shuffled


def test_set_epoch_changes_the_order_the_same_way_on_every_rank():
    samplers = [DistributedSampler(range(30), num_replicas=3, rank=r, seed=5) for r in range(3)]
    first = [list(s) for s in samplers]
    for s in samplers:
        s.set_epoch(1)
    second = [list(s) for s in samplers]
    assert first != second
    assert sorted(i for o in second for i in o) == list(range(30))
    fresh = [DistributedSampler(range(30), num_replicas=3, rank=r, seed=5) for r in range(3)]
    for s in fresh:
        s.set_epoch(1)
    assert [list(s) for s in fresh] == second
    assert samplers[0].epoch == 1
    # seed + epoch is what seeds it.
    shifted = [list(DistributedSampler(range(30), num_replicas=3, rank=r, seed=6))
               for r in range(3)]
    assert shifted == second


def test_seed_changes_the_order_and_the_global_stream_does_not():
    remat.manual_seed(0)
    a = ranks(25, 2, seed=0)
    remat.manual_seed(123)
    b = ranks(25, 2, seed=0)
    assert a == b
    assert ranks(25, 2, seed=1) != a


def test_numpy_integers_are_accepted():
    np = pytest.importorskip("numpy")
    s = DistributedSampler(range(6), num_replicas=np.int64(2), rank=np.int32(1), shuffle=False)
    s.set_epoch(np.int64(2))
    assert list(s) == [1, 3, 5] and s.epoch == 2


def test_works_with_a_dataloader():
    x = remat.arange(10).float()
    ds = TensorDataset(x)
    got = []
    for r in range(2):
        s = DistributedSampler(ds, num_replicas=2, rank=r, shuffle=False)
        got.append([b[0].tolist() for b in DataLoader(ds, batch_size=2, sampler=s)])
    assert got == [[[0.0, 2.0], [4.0, 6.0], [8.0]], [[1.0, 3.0], [5.0, 7.0], [9.0]]]
    s = DistributedSampler(ds, num_replicas=2, rank=0, seed=2)
    loader = DataLoader(ds, batch_size=5, sampler=s)
    epoch0 = [b[0].tolist() for b in loader]
    s.set_epoch(1)
    epoch1 = [b[0].tolist() for b in loader]
    assert epoch0 != epoch1 and len(loader) == 1


@pytest.mark.parametrize("rank", [-1, 3, 4])
def test_rank_outside_the_replicas_raises(rank):
    with pytest.raises(ValueError, match=r"Invalid rank .*interval \[0, 2\]"):
        DistributedSampler(range(6), num_replicas=3, rank=rank)


def test_bad_arguments_raise():
    with pytest.raises(ValueError, match="num_replicas"):
        DistributedSampler(range(6), num_replicas=0, rank=0)
    with pytest.raises(TypeError, match="num_replicas"):
        DistributedSampler(range(6), num_replicas=2.0, rank=0)
    with pytest.raises(TypeError, match="rank"):
        DistributedSampler(range(6), num_replicas=2, rank="0")
    with pytest.raises(TypeError, match="seed"):
        DistributedSampler(range(6), num_replicas=2, rank=0, seed=None)
    with pytest.raises(TypeError, match="epoch"):
        DistributedSampler(range(6), num_replicas=2, rank=0).set_epoch(1.5)
    with pytest.raises(TypeError):
        DistributedSampler(object(), num_replicas=2, rank=0)


def test_without_a_process_group_num_replicas_and_rank_are_required():
    assert not dist.is_initialized()
    with pytest.raises(RuntimeError, match="Requires distributed package"):
        DistributedSampler(range(6))
    with pytest.raises(RuntimeError, match="Requires distributed package"):
        DistributedSampler(range(6), num_replicas=2)
    with pytest.raises(RuntimeError, match="Requires distributed package"):
        DistributedSampler(range(6), rank=0)


@pytest.mark.parametrize("drop_last,left", [(True, 3), (False, 0)])
def test_a_dataset_that_shrank_is_an_error(drop_last, left):
    data = list(range(8))
    s = DistributedSampler(data, num_replicas=2, rank=0, shuffle=False, drop_last=drop_last)
    del data[left:]
    with pytest.raises(RuntimeError, match="length changed since"):
        list(s)


@pytest.mark.parametrize("drop_last", [False, True])
@pytest.mark.parametrize("n,replicas", SIZES + [(0, 2), (3, 7), (100, 7)])
def test_unshuffled_indices_match_pytorch(n, replicas, drop_last):
    torch_data = pytest.importorskip("torch.utils.data")
    for r in range(replicas):
        theirs = torch_data.DistributedSampler(range(n), num_replicas=replicas, rank=r,
                                               shuffle=False, drop_last=drop_last)
        ours = DistributedSampler(range(n), num_replicas=replicas, rank=r, shuffle=False,
                                  drop_last=drop_last)
        assert list(ours) == list(theirs)
        assert len(ours) == len(theirs)
        assert (ours.num_samples, ours.total_size) == (theirs.num_samples, theirs.total_size)
