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
        DataLoader([1, 2], num_workers=2)
    with pytest.raises(remat.ShapeError, match="size mismatch"):
        TensorDataset(remat.zeros(3), remat.zeros(4))
