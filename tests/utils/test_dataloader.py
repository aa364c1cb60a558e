"""remat.utils.data: TensorDataset, DataLoader batching and shuffling, default_collate."""

import numpy as np
import pytest
import remat
from remat.utils.data import DataLoader, Dataset, TensorDataset, default_collate, random_split


def test_tensor_dataset_and_loader_batches():
    x = remat.arange(20).reshape(10, 2).float()
    y = remat.arange(10)
    ds = TensorDataset(x, y)
    assert len(ds) == 10 and ds[3][1].item() == 3
    dl = DataLoader(ds, batch_size=4)
    batches = list(dl)
    assert len(dl) == 3 and [b[0].shape for b in batches] == [(4, 2), (4, 2), (2, 2)]
    assert batches[0][1].dtype == remat.int64
    assert len(DataLoader(ds, batch_size=4, drop_last=True)) == 2
    assert [len(b[1]) for b in DataLoader(ds, batch_size=4, drop_last=True)] == [4, 4]


def test_loader_shuffle_is_a_seeded_permutation():
    ds = TensorDataset(remat.arange(50))
    dl = DataLoader(ds, batch_size=7, shuffle=True)
    remat.manual_seed(5)
    first = np.concatenate([b[0].detach().numpy() for b in dl])
    remat.manual_seed(5)
    again = np.concatenate([b[0].detach().numpy() for b in dl])
    assert sorted(first.tolist()) == list(range(50)) and first.tolist() != list(range(50))
    np.testing.assert_array_equal(first, again)


def test_default_collate_structures_and_custom_dataset():
    class Squares(Dataset):
        def __len__(self):
            return 5

        def __getitem__(self, i):
            return {"x": np.full(2, i, np.float32), "y": i * i, "name": f"s{i}"}

    batch = next(iter(DataLoader(Squares(), batch_size=5)))
    assert batch["x"].shape == (5, 2) and batch["y"].tolist() == [0, 1, 4, 9, 16]
    assert batch["name"] == ["s0", "s1", "s2", "s3", "s4"]
    assert default_collate([(1.0, 2), (3.0, 4)])[0].dtype == remat.float64
    a, b = random_split(Squares(), [3, 2])
    assert sorted([a.indices + b.indices][0]) == [0, 1, 2, 3, 4]


def test_loader_argument_errors():
    with pytest.raises(ValueError, match="batch_size"):
        DataLoader([1, 2], batch_size=0)
    with pytest.raises(ValueError, match="num_workers"):
        DataLoader([1, 2], num_workers=-1)
    with pytest.raises(remat.ShapeError, match="size mismatch"):
        TensorDataset(remat.zeros(3), remat.zeros(4))


def test_chain_dataset_and_dataset_addition():
    from remat.utils.data import ChainDataset, ConcatDataset, IterableDataset

    class Count(IterableDataset):
        def __init__(self, n):
            self.n = n

        def __iter__(self):
            return iter(range(self.n))

        def __len__(self):
            return self.n

    chained = ChainDataset([Count(2), Count(3)])
    assert list(chained) == [0, 1, 0, 1, 2] and len(chained) == 5
    assert list(chained) == [0, 1, 0, 1, 2]  # iterable again
    assert isinstance(Count(1) + Count(1), ChainDataset)
    assert [b.tolist() for b in DataLoader(chained, batch_size=2)] == [[0, 1], [0, 1], [2]]
    ds = TensorDataset(remat.arange(3)) + TensorDataset(remat.arange(3, 5))
    assert isinstance(ds, ConcatDataset) and len(ds) == 5 and ds[4][0].item() == 4
    with pytest.raises(TypeError, match="ChainDataset only supports IterableDataset"):
        list(ChainDataset([Count(1), [1, 2]]))
    with pytest.raises(TypeError, match="ChainDataset"):
        len(ChainDataset([[1]]))


def test_default_convert_and_unbatched_loading():
    import collections

    from remat.utils.data import default_convert

    Pair = collections.namedtuple("Pair", "a b")
    out = default_convert({"x": np.arange(3, dtype=np.int32), "n": 1, "s": "a",
                           "t": (np.float64(0.5), [np.bool_(True)]), "p": Pair(np.ones(2), 2),
                           "strs": np.array(["a"])})
    assert out["x"].dtype == remat.int32 and out["x"].tolist() == [0, 1, 2]
    assert out["n"] == 1 and out["s"] == "a" and isinstance(out["strs"], np.ndarray)
    assert isinstance(out["t"], list) and out["t"][0].dtype == remat.float64
    assert out["t"][1][0].dtype == remat.bool_ and isinstance(out["p"], Pair)
    t = remat.ones(2)
    assert default_convert(t) is t
    # batch_size=None: each sample converted (or passed to collate_fn), not batched
    ds = [np.full(2, i, np.float32) for i in range(3)]
    assert [x.tolist() for x in DataLoader(ds, batch_size=None)] == [[i, i] for i in
                                                                     (0.0, 1.0, 2.0)]
    assert list(DataLoader(ds, batch_size=None, collate_fn=lambda s: float(s.sum()))) == [
        0.0, 2.0, 4.0]


def test_loader_iterator_and_len():
    ds = TensorDataset(remat.arange(7))
    it = iter(DataLoader(ds, batch_size=3))
    assert iter(it) is it and len(it) == 3
    assert [b.tolist() for (b,) in it] == [[0, 1, 2], [3, 4, 5], [6]]
    with pytest.raises(StopIteration):
        next(it)
    with pytest.raises(TypeError, match="cannot be pickled"):
        import pickle

        pickle.dumps(iter(DataLoader(ds)))
