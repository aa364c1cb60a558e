"""CUDA backend beyond the op registry's generated CPU-vs-CUDA checks (test_op_registry.py):
large and strided inputs, kernel fast paths, dropout masks, transfers, device mixing,
optimizers, the device byte counters, and a model trained on the GPU. The cuda cases skip
where no GPU is usable; the availability checks run everywhere."""

import numpy as np
import pytest

import remat

needs_gpu = pytest.mark.skipif(not remat.cuda.is_available(), reason="CUDA not available")

RTOL = {"float32": 1e-5, "float64": 1e-12}


def _pair(shape, dtype, seed, positive=False):
    """The same data on the CPU and on the GPU, both leaves requiring grad."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape).astype(dtype)
    if positive:
        a = np.abs(a) + 0.5
    c = remat.tensor(a, requires_grad=True)
    g = remat.tensor(a, device="cuda", requires_grad=True)
    return c, g


def _close(cpu, gpu, dtype):
    assert gpu.device == "cuda:0"
    np.testing.assert_allclose(gpu.detach().numpy(), cpu.detach().numpy(),
                               rtol=RTOL[dtype] * 10, atol=RTOL[dtype])


def test_availability_queries_never_raise():
    assert isinstance(remat.cuda.is_available(), bool)
    assert remat.cuda.device_count() >= 0
    assert remat.cuda.is_available() == (remat.cuda.device_count() > 0)
    remat.cuda.synchronize()
    remat.cuda.empty_cache()


def test_cuda_request_without_gpu_raises_device_error():
    if remat.cuda.is_available():
        pytest.skip("a GPU is available")
    with pytest.raises(remat.DeviceError):
        remat.zeros(2, 3, device="cuda")
    with pytest.raises(remat.DeviceError):
        remat.ones(2, device="cuda").cuda()
    with pytest.raises(remat.DeviceError):
        remat.ones(2).cuda()
    with pytest.raises(remat.DeviceError):
        remat.ones(2).to("cuda")


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_strided_views_and_sums(dtype):
    c, g = _pair((3, 4, 5), dtype, 4)
    for f in (
        lambda t: t.transpose(0, 2).exp().sum(),
        lambda t: (t.transpose(1, 2) * 2.0).reshape(3, 20).sum(axis=1),
        lambda t: t.sum(axis=(1, 2)),
        lambda t: t.sum(axis=0),
        lambda t: t.sum(),
    ):
        _close(f(c), f(g), dtype)


@needs_gpu
def test_transfers_round_trip_and_carry_gradients():
    a = remat.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    g = a.to("cuda")
    assert g.device == "cuda:0"
    assert a.cuda().device == "cuda:0"
    back = g.cpu()
    assert back.device == "cpu"
    np.testing.assert_array_equal(back.detach().numpy(), a.detach().numpy())
    assert g.tolist() == a.tolist()
    assert g.sum().item() == 15.0
    (g * g).sum().backward()
    assert a.grad.device == "cpu"
    np.testing.assert_allclose(a.grad.numpy(), 2 * a.detach().numpy())
    assert remat.zeros(2, 2, device="cuda").device == "cuda:0"
    t64 = remat.ones(2, dtype=remat.float64, device="cuda")
    assert t64.to(remat.float32).dtype == remat.float32


@needs_gpu
def test_mixing_devices_raises_device_error():
    a = remat.ones(3)
    b = remat.ones(3, device="cuda")
    with pytest.raises(remat.DeviceError):
        remat.add(a, b)
    with pytest.raises(remat.DeviceError):
        remat.matmul(remat.ones(2, 2), remat.ones(2, 2, device="cuda"))


@needs_gpu
def test_unsupported_view_raises_device_error_not_crash():
    # Nine axes that no merge can fuse exceed the kernels' eight.
    x = remat.ones(*([2] * 9), device="cuda")
    with pytest.raises(remat.DeviceError):
        x.permute(list(range(8, -1, -1))).exp()


def _grads_match(fc, fg, pairs, dtype, seed=0):
    """Forward of fc (cpu) and fg (cuda) match, and so do the gradients of a weighted sum."""
    yc, yg = fc(), fg()
    _close(yc, yg, dtype)
    w = np.random.default_rng(seed).standard_normal(yc.shape).astype(dtype)
    (yc * remat.tensor(w)).sum().backward()
    (yg * remat.tensor(w, device="cuda")).sum().backward()
    for c, g in pairs:
        _close(c.grad, g.grad, dtype)


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("p", [2.0, 3.0, 0.5, -1.0, 1.7, 0.0])
def test_pow_scalar_matches_cpu(dtype, p):
    c, g = _pair((3, 4), dtype, 12, positive=True)
    _grads_match(lambda: c.pow(p), lambda: g.pow(p), [(c, g)], dtype)


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("fn", ["softmax", "log_softmax"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_matches_cpu(dtype, fn, axis):
    c, g = _pair((3, 300, 5), dtype, 15)
    f = getattr(remat, fn)
    _grads_match(lambda: f(c, axis=axis), lambda: f(g, axis=axis), [(c, g)], dtype)


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_dropout_mask_is_identical_on_both_devices(dtype):
    c, g = _pair((37, 129), dtype, 19)
    remat.manual_seed(5)
    yc = remat.dropout(c, 0.3, training=True)
    remat.manual_seed(5)
    yg = remat.dropout(g, 0.3, training=True)
    np.testing.assert_array_equal(yg.detach().numpy() == 0, yc.detach().numpy() == 0)
    _close(yc, yg, dtype)
    yc.sum().backward()
    yg.sum().backward()
    _close(c.grad, g.grad, dtype)


@needs_gpu
def test_max_ties_share_the_gradient_like_cpu():
    a = np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]])
    c = remat.tensor(a, requires_grad=True)
    g = remat.tensor(a, device="cuda", requires_grad=True)
    c.amax(axis=1).sum().backward()
    g.amax(axis=1).sum().backward()
    np.testing.assert_allclose(g.grad.numpy(), c.grad.numpy())


@needs_gpu
def test_device_memory_counters():
    remat.cuda.synchronize()
    base = remat.memory_allocated("cuda")
    remat.reset_peak_memory_stats("cuda")
    t = remat.zeros(1024, 256, device="cuda")  # 1 MiB of float32
    assert remat.memory_allocated("cuda") == base + 1024 * 256 * 4
    assert remat.max_memory_allocated("cuda") >= base + 1024 * 256 * 4
    del t
    assert remat.memory_allocated("cuda") == base


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(6, 300), (10,), (1, 3)])
def test_cross_entropy_matches_cpu(dtype, shape):
    c, g = _pair(shape, dtype, 32)
    rows = 1 if len(shape) == 1 else shape[0]
    target = [int(i) for i in np.random.default_rng(33).integers(0, shape[-1], rows)]
    if len(shape) == 1:
        target = target[:1]
    _grads_match(
        lambda: remat.cross_entropy(c, target),
        lambda: remat.cross_entropy(g, target),
        [(c, g)],
        dtype,
    )


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_where_matches_cpu(dtype):
    cond = np.array([[1.0, 0.0, np.nan, 0.0]])
    ac, ag = _pair((3, 4), dtype, 34)
    bc, bg = _pair((4,), dtype, 35)
    cc, cg = remat.tensor(cond), remat.tensor(cond, device="cuda")
    _grads_match(
        lambda: remat.where(cc, ac, bc),
        lambda: remat.where(cg, ag, bg),
        [(ac, ag), (bc, bg)],
        dtype,
    )
    # A condition of the other dtype (tiny nonzero float64 values stay true).
    c64 = np.array([1e-300, 0.0, 2.0, 0.0])
    yc = remat.where(remat.tensor(c64), ac.detach(), bc.detach())
    yg = remat.where(remat.tensor(c64, device="cuda"), ag.detach(), bg.detach())
    _close(yc, yg, dtype)


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_concat_and_stack_match_cpu(dtype, axis):
    ac, ag = _pair((3, 4), dtype, 36)
    bc, bg = _pair((3, 4), dtype, 37)
    pairs = [(ac, ag), (bc, bg)]
    # A transposed (strided) input exercises the strided copy.
    _grads_match(
        lambda: remat.concat([ac, bc.transpose(0, 1).transpose(0, 1), ac], axis=axis),
        lambda: remat.concat([ag, bg.transpose(0, 1).transpose(0, 1), ag], axis=axis),
        pairs,
        dtype,
    )
    for c, g in pairs:
        c.grad = None
        g.grad = None
    _grads_match(
        lambda: remat.stack([ac, bc.T.T], axis=axis),
        lambda: remat.stack([ag, bg.T.T], axis=axis),
        pairs,
        dtype,
    )


def _train(device, opt_cls, dtype, **kw):
    """A few optimizer steps on a small regression; returns the parameters."""
    rng = np.random.default_rng(40)
    w = remat.tensor(rng.standard_normal((4, 3)).astype(dtype), device=device, requires_grad=True)
    x = remat.tensor(rng.standard_normal((8, 4)).astype(dtype), device=device)
    y = remat.tensor(rng.standard_normal((8, 3)).astype(dtype), device=device)
    opt = opt_cls([w], **kw)
    for _ in range(3):
        opt.zero_grad(set_to_none=False)
        remat.mse_loss(remat.matmul(x, w), y).backward()
        opt.step()
    return w


@needs_gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "opt, kw",
    [
        ("SGD", dict(lr=0.1)),
        ("SGD", dict(lr=0.1, momentum=0.9, weight_decay=0.01)),
        ("SGD", dict(lr=0.1, momentum=0.9, nesterov=True)),
        ("Adam", dict(lr=0.01, weight_decay=0.01)),
        ("AdamW", dict(lr=0.01, weight_decay=0.1)),
    ],
)
def test_optimizer_steps_match_cpu(dtype, opt, kw):
    cls = getattr(remat.optim, opt)
    _close(_train("cpu", cls, dtype, **kw), _train("cuda", cls, dtype, **kw), dtype)


@needs_gpu
def test_zero_and_copy_in_place_on_cuda():
    a = remat.tensor(np.arange(6.0).reshape(2, 3), device="cuda")
    src = remat.tensor(np.arange(6.0).reshape(3, 2) + 10, device="cuda").T
    remat._remat.copy_(a, src)
    np.testing.assert_array_equal(a.numpy(), np.arange(6.0).reshape(3, 2).T + 10)
    remat._remat.zero_(a)
    np.testing.assert_array_equal(a.numpy(), np.zeros((2, 3)))


@needs_gpu
def test_cached_blocks_are_not_counted():
    remat.cuda.synchronize()
    base = remat.memory_allocated("cuda")
    for _ in range(3):
        t = remat.zeros(1000, 300, device="cuda")
        assert remat.memory_allocated("cuda") == base + 1000 * 300 * 4
        del t
        assert remat.memory_allocated("cuda") == base
    remat.cuda.empty_cache()
    assert remat.memory_allocated("cuda") == base
    t = remat.zeros(1000, 300, device="cuda")
    assert remat.memory_allocated("cuda") == base + 1000 * 300 * 4
    del t


def _block_model(width=32, depth=4):
    from remat import nn

    remat.manual_seed(3)
    blocks = [nn.Sequential(nn.LayerNorm(width), nn.Linear(width, width), nn.GELU(),
                            nn.Dropout(0.1)) for _ in range(depth)]
    return nn.Sequential(*blocks, nn.Linear(width, 10))


@needs_gpu
def test_module_training_on_cuda_matches_cpu_and_checkpointing_is_exact():
    """A LayerNorm/Linear/GELU/Dropout model moved with Module.to("cuda") trains like its CPU
    copy for a few AdamW steps; on the GPU, per-block activation checkpointing and
    checkpoint_sequential with offload give bit-identical gradients to the plain run, and
    device memory returns to the same level after every step."""
    from remat import optim

    x = np.random.default_rng(0).standard_normal((16, 32)).astype(np.float32)
    y = np.random.default_rng(1).integers(0, 10, size=16)
    cpu_model, gpu_model = _block_model(), _block_model().to("cuda")
    losses = {}
    for name, model, device in (("cpu", cpu_model, "cpu"), ("cuda", gpu_model, "cuda")):
        opt = optim.AdamW(model.parameters(), lr=1e-2)
        xs, ys = remat.tensor(x, device=device), remat.tensor(y, device=device)
        out = []
        for step in range(3):
            remat.manual_seed(100 + step)
            opt.zero_grad()
            loss = remat.cross_entropy(model(xs), ys)
            loss.backward()
            opt.step()
            out.append(loss.item())
        losses[name] = out
    np.testing.assert_allclose(losses["cuda"], losses["cpu"], rtol=1e-4, atol=1e-5)

    xs, ys = remat.tensor(x, device="cuda"), remat.tensor(y, device="cuda")

    def grads(forward):
        gpu_model.zero_grad()
        remat.manual_seed(7)
        remat.cross_entropy(forward(), ys).backward()
        return [p.grad.numpy().copy() for p in gpu_model.parameters()]

    def level():
        remat.cuda.synchronize()
        return remat.memory_allocated("cuda")

    ref = grads(lambda: gpu_model(xs))
    base = level()
    for b in list(gpu_model)[:-1]:
        b.activation_checkpointing = True
    per_block = grads(lambda: gpu_model(xs))
    for b in list(gpu_model)[:-1]:
        b.activation_checkpointing = False
    assert level() == base
    offloaded = grads(lambda: remat.checkpoint_sequential(gpu_model, 2, xs, offload=True))
    assert level() == base
    for r, a, b in zip(ref, per_block, offloaded):
        np.testing.assert_array_equal(r, a)
        np.testing.assert_array_equal(r, b)
