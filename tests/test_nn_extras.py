"""nn modules beyond the layers (activations, Embedding, ModuleDict, ParameterList,
ParameterDict), forward hooks and get_submodule, nn.init, nn.utils gradient clipping,
utils.data and remat.save/load (nested objects and .safetensors)."""

import math

import warnings

import numpy as np
import pytest

import remat
from remat import nn
from remat.nn import functional as F
from remat.nn import init
from remat.utils.data import DataLoader, Dataset, TensorDataset, default_collate, random_split


def _np(t):
    return t.detach().numpy()


# ------------------------------------------------------------------------------ activations

@pytest.mark.parametrize(
    "module, fn",
    [
        (nn.SiLU(), lambda x: x / (1 + np.exp(-x))),
        (nn.LeakyReLU(0.2), lambda x: np.where(x > 0, x, 0.2 * x)),
        (nn.Softmax(dim=1), lambda x: np.exp(x) / np.exp(x).sum(1, keepdims=True)),
        (nn.LogSoftmax(dim=-1), lambda x: x - np.log(np.exp(x).sum(-1, keepdims=True))),
        (nn.Softplus(), lambda x: np.log1p(np.exp(x))),
    ],
)
def test_activation_modules_match_numpy(module, fn):
    x = np.random.default_rng(0).standard_normal((3, 4))
    got = module(remat.tensor(x))
    np.testing.assert_allclose(got.detach().numpy(), fn(x), rtol=1e-10, atol=1e-12)


def test_activation_reprs():
    assert repr(nn.LeakyReLU(0.1)) == "LeakyReLU(negative_slope=0.1)"
    assert repr(nn.Softmax(dim=1)) == "Softmax(dim=1)"
    assert repr(nn.SiLU()) == "SiLU()"


# PyTorch has no top-level `torch.unfold`/`torch.fold` functions (`Tensor.unfold` is another
# op): they exist only under `F`.
FUNCTIONAL_ONLY = {"unfold", "fold", "relu_", "leaky_relu_"}


# Thin wrappers that add torch.nn.functional's extra arguments (dtype=, inplace=, broadcast
# loss targets, a 1-d linear weight) around the top-level function of the same name.
FUNCTIONAL_WRAPPERS = {"softmax", "log_softmax", "dropout", "linear", "mse_loss", "l1_loss",
                       "relu", "leaky_relu", "silu"}


def test_functional_names_are_the_top_level_functions():
    for name in set(F.__all__) - FUNCTIONAL_ONLY - FUNCTIONAL_WRAPPERS:
        assert getattr(F, name) is getattr(remat, name), name
    for name in FUNCTIONAL_WRAPPERS:
        assert name in F.__all__ and hasattr(remat, name)
        assert getattr(F, name) is not getattr(remat, name), name
    assert not any(hasattr(remat, name) for name in FUNCTIONAL_ONLY)


def test_functional_softmax_dtype_and_implicit_dim():
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    y = F.softmax(remat.tensor(x), dim=-1, dtype=remat.float64)
    assert y.dtype == remat.float64
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(y.detach().numpy(), np.exp(x64) / np.exp(x64).sum(-1, keepdims=True),
                               rtol=1e-12)
    assert F.log_softmax(remat.tensor(x), 1, dtype=remat.float64).dtype == remat.float64
    # Without dim: the last axis (API.md's default), no warning, for every rank.
    for shape in [(5,), (2, 3), (2, 3, 4), (2, 3, 4, 5)]:
        a = np.random.default_rng(1).standard_normal(shape)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            got = F.softmax(remat.tensor(a))
            lgot = F.log_softmax(remat.tensor(a))
            mod = nn.Softmax()(remat.tensor(a))
        np.testing.assert_allclose(np.asarray(got), np.exp(a) / np.exp(a).sum(-1, keepdims=True),
                                   rtol=1e-12)
        np.testing.assert_allclose(
            np.asarray(lgot), a - np.log(np.exp(a).sum(-1, keepdims=True)), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(mod.detach().numpy(), got.detach().numpy())
    assert F.softmax(remat.tensor(x), axis=-1).shape == (2, 3, 4)  # NumPy alias: no warning


def test_functional_dropout_inplace():
    x = remat.ones(1000)
    remat.manual_seed(3)
    out = F.dropout(x, 0.5, True, inplace=True)
    assert out is x  # written in place: x takes part in no graph
    vals = np.unique(x.detach().numpy())
    assert set(vals.tolist()) == {0.0, 2.0}
    assert F.dropout(x, 0.5, training=False, inplace=True) is x
    # a tensor of a graph is written through the graph (rebased, as PyTorch)
    w = remat.ones(4, requires_grad=True)
    h = w * 3.0
    remat.manual_seed(4)
    out = F.dropout(h, 0.5, True, inplace=True)
    assert out is h and h.grad_fn == "where"  # the write (PyTorch: copy_ of the dropout)
    kept = h.detach().numpy() != 0
    h.sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), np.where(kept, 6.0, 0.0))
    with pytest.raises(remat.GraphError, match="leaf"):
        F.dropout(w, 0.5, True, inplace=True)
    assert repr(nn.Dropout(0.1, inplace=True)) == "Dropout(p=0.1, inplace=True)"
    y = remat.ones(8)
    assert nn.Dropout(1.0, inplace=True)(y) is y and np.all(y.detach().numpy() == 0)


def test_functional_linear_1d_weight_and_0d_bias():
    rng = np.random.default_rng(2)
    x, w, w2 = rng.standard_normal((3, 4)), rng.standard_normal(4), rng.standard_normal((5, 4))
    xt, wt = remat.tensor(x, requires_grad=True), remat.tensor(w, requires_grad=True)
    out = F.linear(xt, wt, remat.tensor(0.5))
    assert out.shape == (3,)
    np.testing.assert_allclose(out.detach().numpy(), x @ w + 0.5, rtol=1e-12)
    out.sum().backward()
    np.testing.assert_allclose(wt.grad.detach().numpy(), x.sum(0), rtol=1e-12)
    np.testing.assert_allclose(xt.grad.detach().numpy(), np.tile(w, (3, 1)), rtol=1e-12)
    assert F.linear(remat.tensor(x[0]), remat.tensor(w)).shape == ()
    b = remat.tensor(1.5, requires_grad=True)
    out = F.linear(remat.tensor(x), remat.tensor(w2), b)
    np.testing.assert_allclose(out.detach().numpy(), x @ w2.T + 1.5, rtol=1e-12)
    out.sum().backward()
    assert b.grad.item() == 15.0


# -------------------------------------------------------------------------------- embedding

def test_embedding_lookup_and_scatter_add_gradient():
    remat.manual_seed(0)
    emb = nn.Embedding(6, 3)
    assert emb.weight.shape == (6, 3) and emb.weight.requires_grad
    ids = remat.tensor([[1, 4, 1], [0, 5, 1]])
    out = emb(ids)
    assert out.shape == (2, 3, 3)
    np.testing.assert_array_equal(out.detach().numpy(), _np(emb.weight)[ids.detach().numpy()])
    out.sum().backward()
    counts = np.bincount(ids.detach().numpy().ravel(), minlength=6)[:, None] * np.ones((1, 3))
    np.testing.assert_array_equal(emb.weight.grad.detach().numpy(), counts)


def test_embedding_padding_idx_row_is_zero_and_gets_no_gradient():
    remat.manual_seed(1)
    emb = nn.Embedding(5, 2, padding_idx=-1)
    assert emb.padding_idx == 4
    np.testing.assert_array_equal(_np(emb.weight)[4], [0.0, 0.0])
    ids = remat.tensor([4, 2, 4, 0])
    (emb(ids) * 3.0).sum().backward()
    g = emb.weight.grad.detach().numpy()
    np.testing.assert_array_equal(g[4], [0.0, 0.0])
    np.testing.assert_array_equal(g[2], [3.0, 3.0])
    assert repr(emb) == "Embedding(5, 2, padding_idx=4)"


def test_embedding_padding_idx_keeps_forward_values_and_second_order():
    w = remat.tensor(np.arange(8.0).reshape(4, 2), requires_grad=True)
    ids = remat.tensor([0, 1, 1, 3])
    out = remat.embedding(ids, w, padding_idx=1)
    np.testing.assert_array_equal(out.detach().numpy(), np.arange(8.0).reshape(4, 2)[[0, 1, 1, 3]])
    (g,) = remat.grad((out**2).sum(), [w], create_graph=True)
    np.testing.assert_array_equal(g.detach().numpy()[1], [0.0, 0.0])
    np.testing.assert_array_equal(g.detach().numpy()[3], [12.0, 14.0])
    (h,) = remat.grad(g.sum(), [w])
    np.testing.assert_array_equal(h.detach().numpy(), [[2, 2], [0, 0], [0, 0], [2, 2]])


def test_embedding_max_norm_renormalises_looked_up_rows_in_place():
    w = remat.tensor([[3.0, 4.0], [0.3, 0.4], [6.0, 8.0]])
    out = remat.embedding(remat.tensor([0, 1]), w, max_norm=1.0)
    norms = np.linalg.norm(w.detach().numpy(), axis=1)
    np.testing.assert_allclose(norms[:2], [1.0, 0.5], rtol=1e-6)
    assert norms[2] == pytest.approx(10.0)  # not looked up: unchanged
    np.testing.assert_allclose(out.detach().numpy(), w.detach().numpy()[:2])


def test_embedding_errors():
    with pytest.raises(ValueError, match="padding_idx"):
        nn.Embedding(3, 2, padding_idx=3)
    emb = nn.Embedding(3, 2)
    with pytest.raises(IndexError, match="embedding"):
        emb(remat.tensor([3]))
    with pytest.raises(TypeError, match="embedding"):
        emb(remat.tensor([0.0]))


def test_embedding_from_pretrained_is_frozen():
    table = remat.tensor([[1.0, 2.0], [3.0, 4.0]])
    emb = nn.Embedding.from_pretrained(table)
    assert not emb.weight.requires_grad
    np.testing.assert_array_equal(emb(remat.tensor([1])).detach().numpy(), [[3.0, 4.0]])
    # A frozen parameter is still a parameter: saved, listed, loaded and moved.
    assert list(emb.state_dict()) == ["weight"]
    assert [n for n, _ in emb.named_parameters()] == ["weight"]
    emb.to(remat.float64)
    assert emb.weight.dtype == remat.float64


def test_frozen_parameters_stay_registered():
    m = nn.Linear(2, 2)
    m.weight.requires_grad_(False)
    m.weight = m.weight  # re-assigning a frozen parameter keeps it one
    assert list(m.state_dict()) == ["weight", "bias"]
    with pytest.raises(TypeError, match="register_parameter"):
        m.weight = remat.zeros(2, 2)  # a plain tensor is refused, as in PyTorch
    m.register_parameter("weight", nn.Parameter(remat.zeros(2, 2), requires_grad=False))
    m.register_parameter("scale", nn.Parameter(remat.ones(1), requires_grad=False))
    assert [n for n, _ in m.named_parameters()] == ["weight", "bias", "scale"]
    with pytest.raises(TypeError, match="'scale'"):
        m.register_parameter("scale", [1.0])
    # An optimizer steps only what has a gradient.
    opt = remat.optim.SGD(m.parameters(), lr=0.1)
    m(remat.ones(1, 2)).sum().backward()
    opt.step()
    assert m.weight.tolist() == [[0.0, 0.0], [0.0, 0.0]] and m.bias.grad is not None


# ------------------------------------------------------------------------------- containers

def test_module_dict_registers_children():
    d = nn.ModuleDict({"a": nn.Linear(2, 3)})
    d["b"] = nn.ReLU()
    d.update([("c", nn.Linear(3, 1))])
    assert list(d) == ["a", "b", "c"] and len(d) == 3 and "b" in d
    assert [k for k, _ in d.named_parameters()] == ["a.weight", "a.bias", "c.weight", "c.bias"]
    assert isinstance(d.pop("b"), nn.ReLU) and list(d.keys()) == ["a", "c"]


def test_parameter_list_and_dict_register_parameters():
    pl = nn.ParameterList([remat.ones(2), remat.zeros(3)])
    pl.append(remat.ones(1))
    assert len(pl) == 3 and all(p.requires_grad for p in pl)
    assert list(pl.state_dict()) == ["0", "1", "2"]
    assert pl[-1].shape == (1,)
    pd = nn.ParameterDict({"scale": remat.ones(1)})
    pd["shift"] = remat.zeros(1)
    assert list(pd) == ["scale", "shift"] and pd["shift"].requires_grad
    assert sorted(k for k, _ in pd.named_parameters()) == ["scale", "shift"]


# --------------------------------------------------------------------------- hooks, lookup

def test_forward_hooks_run_in_order_and_can_replace_values():
    lin = nn.Linear(2, 2)
    seen = []
    h1 = lin.register_forward_pre_hook(lambda m, args: (args[0] * 0.0,))
    h2 = lin.register_forward_hook(lambda m, args, out: seen.append(out.shape))
    h3 = lin.register_forward_hook(lambda m, args, out: out + 1.0, prepend=False)
    out = lin(remat.ones(4, 2))
    np.testing.assert_allclose(out.detach().numpy(), np.broadcast_to(_np(lin.bias) + 1.0, (4, 2)))
    assert seen == [(4, 2)]
    for h in (h1, h2, h3):
        h.remove()
    out = lin(remat.ones(1, 2))
    np.testing.assert_allclose(np.asarray(out), np.ones((1, 2)) @ _np(lin.weight).T + _np(lin.bias),
                               rtol=1e-6)
    assert seen == [(4, 2)]


def test_forward_pre_hook_with_kwargs_and_prepend():
    calls = []
    m = nn.Identity()
    m.register_forward_pre_hook(lambda mod, args: calls.append("second"))
    m.register_forward_pre_hook(lambda mod, args: calls.append("first"), prepend=True)
    m.register_forward_pre_hook(
        lambda mod, args, kwargs: ((args[0] + 1,), kwargs), with_kwargs=True
    )
    assert m(1) == 2 and calls == ["first", "second"]


def test_hooks_run_around_a_checkpointed_module():
    remat.manual_seed(0)
    lin = nn.Linear(3, 3)
    lin.activation_checkpointing = True
    outs = []
    lin.register_forward_hook(lambda m, a, o: outs.append(o))
    x = remat.randn(2, 3, requires_grad=True)
    lin(x).sum().backward()
    assert len(outs) == 1 and x.grad is not None


def test_get_submodule():
    net = nn.Sequential(nn.Linear(2, 2), nn.Sequential(nn.ReLU(), nn.Linear(2, 1)))
    assert net.get_submodule("1.1") is net[1][1]
    assert net.get_submodule("") is net
    with pytest.raises(AttributeError, match="nothere"):
        net.get_submodule("1.nothere")
    with pytest.raises(AttributeError, match="not an nn.Module"):
        net.get_submodule("0.weight")


# ------------------------------------------------------------------------------------ init

def test_init_fans_and_bounds_follow_pytorch():
    remat.manual_seed(0)
    w = remat.zeros(64, 32, 3, 3)
    fan_in, fan_out = 32 * 9, 64 * 9
    init.kaiming_uniform_(w, a=math.sqrt(5))
    bound = init.calculate_gain("leaky_relu", math.sqrt(5)) * math.sqrt(3.0 / fan_in)
    assert np.abs(np.asarray(w)).max() <= bound and np.abs(np.asarray(w)).max() > 0.95 * bound
    init.xavier_uniform_(w, gain=2.0)
    a = 2.0 * math.sqrt(6.0 / (fan_in + fan_out))
    assert np.abs(w.detach().numpy()).max() <= a and np.abs(w.detach().numpy()).max() > 0.95 * a
    init.kaiming_normal_(w, mode="fan_out", nonlinearity="relu")
    assert w.detach().numpy().std() == pytest.approx(math.sqrt(2.0 / fan_out), rel=0.05)
    init.xavier_normal_(w)
    assert w.detach().numpy().std() == pytest.approx(math.sqrt(2.0 / (fan_in + fan_out)), rel=0.05)


def test_init_simple_fills_and_gains():
    w = remat.zeros(3, 4)
    assert init.ones_(w) is w and np.all(w.detach().numpy() == 1)
    init.constant_(w, 2.5)
    assert np.all(w.detach().numpy() == 2.5)
    init.zeros_(w)
    assert np.all(w.detach().numpy() == 0)
    init.eye_(w)
    np.testing.assert_array_equal(w.detach().numpy(), np.eye(3, 4))
    init.uniform_(w, -0.1, 0.1)
    assert np.all(np.abs(w.detach().numpy()) <= 0.1)
    init.normal_(w, 5.0, 0.0)
    assert np.all(w.detach().numpy() == 5.0)
    assert init.calculate_gain("tanh") == pytest.approx(5 / 3)
    assert init.calculate_gain("relu") == pytest.approx(math.sqrt(2))
    assert init.calculate_gain("conv2d") == 1.0
    with pytest.raises(ValueError, match="nonlinearity"):
        init.calculate_gain("bogus")


def test_init_on_a_parameter_needs_no_no_grad_and_is_reproducible():
    lin = nn.Linear(10, 10)
    remat.manual_seed(3)
    init.trunc_normal_(lin.weight, std=0.5, a=-0.6, b=0.6)
    first = _np(lin.weight).copy()
    assert np.all(np.abs(first) <= 0.6) and lin.weight.is_leaf
    remat.manual_seed(3)
    init.trunc_normal_(lin.weight, std=0.5, a=-0.6, b=0.6)
    np.testing.assert_array_equal(_np(lin.weight), first)


def test_init_errors():
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(remat.zeros(3))
    with pytest.raises(remat.DTypeError, match="float"):
        init.normal_(remat.zeros(3, dtype=remat.int64))
    with pytest.raises(ValueError, match="mode"):
        init.kaiming_uniform_(remat.zeros(2, 2), mode="fan_avg")


# ------------------------------------------------------------------------------- clipping

def test_clip_grad_norm_scales_all_gradients_together():
    a = remat.tensor([3.0], requires_grad=True)
    b = remat.tensor([4.0], requires_grad=True)
    (a * a / 2 + b * b / 2).sum().backward()  # grads 3 and 4: total norm 5
    total = nn.utils.clip_grad_norm_([a, b], max_norm=1.0)
    assert total.item() == pytest.approx(5.0)
    coef = 1.0 / (5.0 + 1e-6)
    assert a.grad.item() == pytest.approx(3 * coef) and b.grad.item() == pytest.approx(4 * coef)
    total = nn.utils.clip_grad_norm_([a, b], max_norm=10.0)  # below: untouched
    assert total.item() == pytest.approx(1.0, rel=1e-5)
    inf = nn.utils.clip_grad_norm_([a, b], max_norm=1.0, norm_type=float("inf"))
    assert inf.item() == pytest.approx(4 * coef, rel=1e-5)


def test_clip_grad_norm_float64_dtype_and_exact_scaling():
    rng = np.random.default_rng(4)
    ga, gb = rng.standard_normal((3, 4)) * 3, rng.standard_normal(5) * 3
    a, b = remat.zeros(3, 4, dtype=remat.float64), remat.zeros(5, dtype=remat.float64)
    a.requires_grad_(True)
    b.requires_grad_(True)
    a.grad, b.grad = remat.tensor(ga), remat.tensor(gb)
    total = nn.utils.clip_grad_norm_([a, b], 1.0)
    assert total.dtype == remat.float64 and total.shape == ()
    want = np.linalg.norm([np.linalg.norm(ga), np.linalg.norm(gb)])
    np.testing.assert_allclose(total.item(), want, rtol=1e-15)
    coef = 1.0 / (total.item() + 1e-6)  # computed in float64, as PyTorch does
    np.testing.assert_allclose(a.grad.detach().numpy(), ga * coef, rtol=1e-15)
    np.testing.assert_allclose(b.grad.detach().numpy(), gb * coef, rtol=1e-15)
    # float32 gradients: a float32 total; mixed float32/float64: promoted to float64
    c = remat.zeros(2, requires_grad=True)
    c.grad = remat.tensor([3.0, 4.0])
    assert nn.utils.clip_grad_norm_([c], 10.0).dtype == remat.float32
    assert nn.utils.clip_grad_norm_([c, a], 10.0).dtype == remat.float64
    assert c.grad.dtype == remat.float32
    assert nn.utils.get_total_norm([]).dtype == remat.float32


def test_clip_grad_norm_nonfinite_gradients_scale_like_pytorch():
    p = remat.zeros(3, requires_grad=True)
    q = remat.zeros(2, requires_grad=True)
    p.grad = remat.tensor([1.0, float("nan"), 2.0])
    q.grad = remat.tensor([3.0, 4.0])
    total = nn.utils.clip_grad_norm_([p, q], 1.0)
    assert math.isnan(total.item())
    assert np.isnan(p.grad.numpy()).all() and np.isnan(q.grad.numpy()).all()  # scaled by NaN
    p.grad = remat.tensor([1.0, float("inf"), 2.0])
    q.grad = remat.tensor([3.0, 4.0])
    total = nn.utils.clip_grad_norm_([p, q], 1.0)
    assert total.item() == float("inf")
    # scaled by 0: the infinite element becomes NaN, the others 0
    np.testing.assert_array_equal(np.isnan(p.grad.detach().numpy()), [False, True, False])
    np.testing.assert_array_equal(q.grad.detach().numpy(), [0.0, 0.0])
    with pytest.warns(UserWarning, match="empty generator"):
        nn.utils.clip_grad_norm_((x for x in []), 1.0)


def test_clip_grad_value_and_nonfinite_error():
    p = remat.tensor([1.0, -2.0, 3.0], requires_grad=True)
    (p * p).sum().backward()
    nn.utils.clip_grad_value_(p, 1.5)
    np.testing.assert_array_equal(p.grad.detach().numpy(), [1.5, -1.5, 1.5])
    p.grad = remat.tensor([float("inf"), 0.0, 0.0])
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)


# ------------------------------------------------------------------------------------ data

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


# ----------------------------------------------------------------------------- save / load

def test_save_load_nested_objects(tmp_path):
    obj = {
        "model": {"w": remat.randn(2, 3), "steps": remat.tensor([1, 2])},
        "epoch": 3,
        "history": [0.5, None, "text", (remat.zeros(1), np.ones(2))],
        7: True,
    }
    remat.save(obj, tmp_path / "ckpt.pt")
    back = remat.load(tmp_path / "ckpt.pt")
    assert back["epoch"] == 3 and back[7] is True
    assert back["history"][:3] == [0.5, None, "text"]
    assert isinstance(back["history"][3], tuple)
    assert isinstance(back["history"][3][1], np.ndarray)
    np.testing.assert_array_equal(np.asarray(back["model"]["w"]), np.asarray(obj["model"]["w"]))
    assert back["model"]["steps"].dtype == remat.int64


def test_save_load_state_dict_returns_tensors_in_order(tmp_path):
    net = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 1))
    remat.save(net.state_dict(), tmp_path / "net.npz")
    back = remat.load(tmp_path / "net.npz")
    assert list(back) == list(net.state_dict())
    assert all(isinstance(v, remat.Tensor) for v in back.values())
    np.load(tmp_path / "net.npz")  # still a plain NumPy archive


def test_safetensors_round_trip_and_format(tmp_path):
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    sd = {"w": remat.randn(3, 2), "ids": remat.arange(4), "mask": remat.tensor([True, False])}
    path = tmp_path / "weights.safetensors"
    remat.save(sd, path, metadata={"format": "pt"})
    raw = safetensors_numpy.load_file(str(path))  # readable by the reference library
    assert raw["w"].dtype == np.float32 and raw["ids"].dtype == np.int64
    back = remat.load(path)
    assert set(back) == {"w", "ids", "mask"}
    for k in sd:
        np.testing.assert_array_equal(back[k].detach().numpy(), sd[k].detach().numpy())
        assert back[k].dtype == sd[k].dtype
    with pytest.raises(TypeError, match="flat mapping"):
        remat.save({"nested": {"w": remat.ones(1)}}, tmp_path / "bad.safetensors")


def test_safetensors_files_written_by_pytorch_load(tmp_path):
    torch = pytest.importorskip("torch")
    st_torch = pytest.importorskip("safetensors.torch")
    st_torch.save_file({"w": torch.arange(6.0).reshape(2, 3)}, str(tmp_path / "t.safetensors"))
    back = remat.load(tmp_path / "t.safetensors")
    np.testing.assert_array_equal(back["w"].detach().numpy(), np.arange(6.0).reshape(2, 3))
    remat.save({"v": remat.ones(2)}, tmp_path / "r.safetensors")
    assert st_torch.load_file(str(tmp_path / "r.safetensors"))["v"].tolist() == [1.0, 1.0]


def test_save_load_keeps_requires_grad_and_parameters(tmp_path):
    p = nn.Parameter(remat.tensor([1.0, 2.0]))
    frozen = remat.tensor([3.0])
    # a flat mapping: still a plain NumPy archive, requires_grad in the zip comment
    remat.save({"p": p, "t": frozen, "n": remat.tensor([1, 2])}, tmp_path / "flat.npz")
    assert sorted(np.load(tmp_path / "flat.npz").files) == ["n", "p", "t"]
    back = remat.load(tmp_path / "flat.npz")
    assert isinstance(back["p"], nn.Parameter) and back["p"].is_leaf
    assert back["p"].requires_grad and not back["t"].requires_grad
    assert not isinstance(back["t"], nn.Parameter) and back["n"].dtype == remat.int64
    # a nested structure; a non-leaf that requires grad comes back as a leaf that does
    h = p * 2
    remat.save({"model": {"w": p}, "acts": [h, frozen], "step": 3}, tmp_path / "ckpt.pt")
    back = remat.load(tmp_path / "ckpt.pt")
    assert isinstance(back["model"]["w"], nn.Parameter)
    assert back["acts"][0].requires_grad and back["acts"][0].is_leaf
    assert not back["acts"][1].requires_grad and back["step"] == 3
    np.testing.assert_array_equal(back["acts"][0].detach().numpy(), [2.0, 4.0])


def test_save_load_file_objects(tmp_path):
    import io

    buf = io.BytesIO()
    net = nn.Linear(2, 3)
    remat.save(net.state_dict(), buf)
    buf.seek(0)
    back = remat.load(buf)
    assert list(back) == ["weight", "bias"]
    np.testing.assert_array_equal(back["weight"].detach().numpy(), net.state_dict()["weight"])
    with open(tmp_path / "obj.bin", "wb") as f:
        remat.save({"p": nn.Parameter(remat.ones(2)), "xs": [1, "a"]}, f)
    with open(tmp_path / "obj.bin", "rb") as f:
        back = remat.load(f)
    assert back["xs"] == [1, "a"] and back["p"].requires_grad
    back = remat.load(tmp_path / "obj.bin")  # the same bytes as a path
    assert back["xs"] == [1, "a"]
    pytest.importorskip("safetensors.numpy")
    with open(tmp_path / "w.safetensors", "wb") as f:  # the format follows the file's name
        remat.save({"w": remat.ones(2)}, f)
    assert remat.load(tmp_path / "w.safetensors")["w"].tolist() == [1.0, 1.0]
    with open(tmp_path / "w.safetensors", "rb") as f:  # told by its first bytes
        assert remat.load(f)["w"].tolist() == [1.0, 1.0]
    with pytest.raises(ValueError, match="not a valid file"):
        remat.load(io.BytesIO(b"not an archive"))


def test_save_refuses_code(tmp_path):
    with pytest.raises(TypeError, match="function"):
        remat.save({"f": [print]}, tmp_path / "x.pt")
