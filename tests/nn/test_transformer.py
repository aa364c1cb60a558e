"""nn.Transformer and its layers: shapes, masks (bool, float, causal, key padding), pre-LN,
GELU, both layouts, determinism, gradients (finite differences), checkpointing each layer,
errors, PyTorch's parameter names; against a NumPy reference and, where installed, PyTorch."""

import math
import warnings

import numpy as np
import pytest
from conftest import check_grad

import remat
from remat import nn

E, H, FF = 8, 2, 16


def _np(t):
    return t.detach().numpy()


def _t(a, requires_grad=False):
    return remat.tensor(np.asarray(a), requires_grad=requires_grad)


# ------------------------------------------------------------------ NumPy reference

def _ln(x, m):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + m.eps) * _np(m.weight) + _np(m.bias)


def _lin(x, m):
    return x @ _np(m.weight).T + _np(m.bias)


def _gelu(x):
    from math import erf
    return 0.5 * x * (1.0 + np.vectorize(erf)(x / math.sqrt(2.0)))


def _additive(mask):
    if mask is None:
        return 0.0
    mask = np.asarray(mask)
    return np.where(mask, -np.inf, 0.0) if mask.dtype == bool else mask


def _mha(m, q, kv, attn_mask=None, pad=None):
    """PyTorch's MultiheadAttention, batch first, masks as PyTorch reads them."""
    e, h = m.embed_dim, m.num_heads
    d = e // h
    w, b = _np(m.in_proj_weight), _np(m.in_proj_bias)
    qp, kp, vp = (x @ w[i * e:(i + 1) * e].T + b[i * e:(i + 1) * e]
                  for i, x in enumerate((q, kv, kv)))

    def heads(t):
        return t.reshape(t.shape[0], t.shape[1], h, d).transpose(0, 2, 1, 3)

    s = heads(qp) @ heads(kp).transpose(0, 1, 3, 2) / math.sqrt(d)
    s = s + _additive(attn_mask)
    if pad is not None:
        s = s + _additive(pad)[:, None, None, :]
    a = np.exp(s - s.max(-1, keepdims=True))
    a = a / a.sum(-1, keepdims=True)
    o = (a @ heads(vp)).transpose(0, 2, 1, 3).reshape(q.shape[0], q.shape[1], e)
    return _lin(o, m.out_proj)


def _ff(layer, x, act):
    return _lin(act(_lin(x, layer.linear1)), layer.linear2)


def _encoder_layer_ref(layer, x, mask=None, pad=None, act=lambda v: np.maximum(v, 0)):
    if layer.norm_first:
        y = _ln(x, layer.norm1)
        x = x + _mha(layer.self_attn, y, y, mask, pad)
        return x + _ff(layer, _ln(x, layer.norm2), act)
    x = _ln(x + _mha(layer.self_attn, x, x, mask, pad), layer.norm1)
    return _ln(x + _ff(layer, x, act), layer.norm2)


def _decoder_layer_ref(layer, x, mem, tgt_mask=None, mem_mask=None, tgt_pad=None,
                       mem_pad=None):
    relu = lambda v: np.maximum(v, 0)  # noqa: E731
    if layer.norm_first:
        y = _ln(x, layer.norm1)
        x = x + _mha(layer.self_attn, y, y, tgt_mask, tgt_pad)
        x = x + _mha(layer.multihead_attn, _ln(x, layer.norm2), mem, mem_mask, mem_pad)
        return x + _ff(layer, _ln(x, layer.norm3), relu)
    x = _ln(x + _mha(layer.self_attn, x, x, tgt_mask, tgt_pad), layer.norm1)
    x = _ln(x + _mha(layer.multihead_attn, x, mem, mem_mask, mem_pad), layer.norm2)
    return _ln(x + _ff(layer, x, relu), layer.norm3)


def _rand_params(module, seed):
    """Random values everywhere (biases and norm weights too, so every term matters)."""
    rng = np.random.default_rng(seed)
    module.load_state_dict({k: 0.5 * rng.standard_normal(v.shape)
                            for k, v in module.state_dict().items()})
    return module


def _pad(n, s):
    pad = np.zeros((n, s), bool)
    pad[0, -2:] = True
    pad[-1, -1] = True
    return pad


# ------------------------------------------------------------------ values and shapes

@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("masks", ["none", "bool", "float", "pad", "bool+pad", "causal"])
def test_encoder_layer_matches_reference(norm_first, batch_first, masks):
    remat.manual_seed(0)
    layer = _rand_params(nn.TransformerEncoderLayer(
        E, H, FF, batch_first=batch_first, norm_first=norm_first).double().eval(), 1)
    rng = np.random.default_rng(2)
    n, s = 3, 5
    x = rng.standard_normal((n, s, E))
    mask = pad = None
    kwargs = {}
    if "bool" in masks:
        mask = rng.random((s, s)) < 0.3
        np.fill_diagonal(mask, False)
    if masks == "float":
        mask = rng.standard_normal((s, s))
    if masks == "causal":
        mask = np.triu(np.full((s, s), -np.inf), 1)
        kwargs["is_causal"] = True
    if "pad" in masks:
        pad = _pad(n, s)
    inp = x if batch_first else x.transpose(1, 0, 2)
    out = layer(_t(inp), src_mask=None if mask is None else _t(mask),
                src_key_padding_mask=None if pad is None else _t(pad), **kwargs)
    out = _np(out) if batch_first else _np(out).transpose(1, 0, 2)
    np.testing.assert_allclose(out, _encoder_layer_ref(layer, x, mask, pad),
                               rtol=1e-10, atol=1e-10)


def test_encoder_layer_gelu_and_callable_activation():
    remat.manual_seed(0)
    x = np.random.default_rng(3).standard_normal((2, 4, E))
    for act in ("gelu", nn.GELU(), remat.nn.functional.gelu):
        layer = _rand_params(
            nn.TransformerEncoderLayer(E, H, FF, activation=act, batch_first=True), 4)
        layer = layer.double().eval()
        np.testing.assert_allclose(_np(layer(_t(x))), _encoder_layer_ref(layer, x, act=_gelu),
                                   rtol=1e-10, atol=1e-10)
    assert "activation" not in dict(layer.named_children())  # a function is no child
    module_act = nn.TransformerEncoderLayer(E, H, FF, activation=nn.GELU())
    assert isinstance(dict(module_act.named_children())["activation"], nn.GELU)
    assert module_act.activation_relu_or_gelu == 2
    assert nn.TransformerEncoderLayer(E, H, FF).activation_relu_or_gelu == 1
    assert nn.TransformerEncoderLayer(E, H, FF, activation=remat.tanh).activation_relu_or_gelu == 0


@pytest.mark.parametrize("norm_first", [False, True])
def test_decoder_layer_matches_reference(norm_first):
    remat.manual_seed(0)
    layer = _rand_params(nn.TransformerDecoderLayer(
        E, H, FF, batch_first=True, norm_first=norm_first).double().eval(), 5)
    rng = np.random.default_rng(6)
    n, t, s = 3, 4, 5
    x, mem = rng.standard_normal((n, t, E)), rng.standard_normal((n, s, E))
    causal = np.triu(np.full((t, t), -np.inf), 1)
    mem_mask = rng.random((t, s)) < 0.3
    mem_mask[:, 0] = False
    tgt_pad, mem_pad = _pad(n, t), _pad(n, s)
    tgt_pad[:, 0] = False
    out = layer(_t(x), _t(mem), tgt_mask=_t(causal), memory_mask=_t(mem_mask),
                tgt_key_padding_mask=_t(tgt_pad), memory_key_padding_mask=_t(mem_pad))
    want = _decoder_layer_ref(layer, x, mem, causal, mem_mask, tgt_pad, mem_pad)
    np.testing.assert_allclose(_np(out), want, rtol=1e-10, atol=1e-10)


def test_stacks_and_transformer_compose_their_layers():
    remat.manual_seed(0)
    model = _rand_params(nn.Transformer(E, H, 2, 2, FF, batch_first=True).double().eval(), 7)
    rng = np.random.default_rng(8)
    src, tgt = rng.standard_normal((2, 5, E)), rng.standard_normal((2, 4, E))
    causal = np.triu(np.full((4, 4), -np.inf), 1)
    mem = src
    for layer in model.encoder.layers:
        mem = _encoder_layer_ref(layer, mem)
    mem = _ln(mem, model.encoder.norm)
    out = tgt
    for layer in model.decoder.layers:
        out = _decoder_layer_ref(layer, out, mem, tgt_mask=causal)
    out = _ln(out, model.decoder.norm)
    got = model(_t(src), _t(tgt), tgt_mask=model.generate_square_subsequent_mask(4).double())
    np.testing.assert_allclose(_np(got), out, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("batch_first", [False, True])
def test_shapes_batched_and_unbatched(batch_first):
    model = nn.Transformer(E, H, 1, 1, FF, batch_first=batch_first)
    src = remat.randn(2, 5, E) if batch_first else remat.randn(5, 2, E)
    tgt = remat.randn(2, 3, E) if batch_first else remat.randn(3, 2, E)
    assert model(src, tgt).shape == tgt.shape
    assert model(remat.randn(5, E), remat.randn(3, E)).shape == (3, E)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, FF, batch_first=batch_first), 2)
    assert enc(src).shape == src.shape
    assert enc(remat.randn(5, E), src_key_padding_mask=_t(np.zeros(5, bool))).shape == (5, E)


def test_unbatched_equals_a_batch_of_one():
    remat.manual_seed(1)
    model = nn.Transformer(E, H, 1, 1, FF, batch_first=True).double().eval()
    src, tgt = remat.randn(5, E, dtype=remat.float64), remat.randn(3, E, dtype=remat.float64)
    np.testing.assert_allclose(_np(model(src, tgt)),
                               _np(model(src.unsqueeze(0), tgt.unsqueeze(0)))[0], atol=1e-12)


def test_generate_square_subsequent_mask():
    m = nn.Transformer.generate_square_subsequent_mask(4)
    assert m.dtype == remat.float32 and m.shape == (4, 4)
    want = np.triu(np.full((4, 4), -np.inf, np.float32), 1)
    np.testing.assert_array_equal(_np(m), want)
    assert nn.Transformer.generate_square_subsequent_mask(3, dtype=remat.float64).dtype == \
        remat.float64
    assert nn.Transformer(E, H, 1, 1, FF).generate_square_subsequent_mask(0).shape == (0, 0)


# ------------------------------------------------------------------ mask semantics

def test_bool_mask_equals_its_float_form_and_causality_holds():
    remat.manual_seed(2)
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, FF, batch_first=True), 2)
    enc = enc.double().eval()
    x = np.random.default_rng(9).standard_normal((2, 6, E))
    bool_causal = _t(np.triu(np.ones((6, 6), bool), 1))
    float_causal = nn.Transformer.generate_square_subsequent_mask(6, dtype=remat.float64)
    a = _np(enc(_t(x), mask=bool_causal))
    b = _np(enc(_t(x), mask=float_causal))
    c = _np(enc(_t(x), mask=float_causal, is_causal=True))
    np.testing.assert_allclose(a, b, atol=1e-12)
    np.testing.assert_allclose(a, c, atol=1e-12)
    # Changing the last position changes nothing before it.
    x2 = x.copy()
    x2[:, -1] += 10.0
    d = _np(enc(_t(x2), mask=float_causal))
    np.testing.assert_allclose(a[:, :-1], d[:, :-1], atol=1e-12)
    assert not np.allclose(a[:, -1], d[:, -1])


def test_key_padding_hides_the_padded_positions():
    remat.manual_seed(3)
    model = nn.Transformer(E, H, 1, 1, FF, batch_first=True).double().eval()
    rng = np.random.default_rng(10)
    src, tgt = rng.standard_normal((2, 5, E)), rng.standard_normal((2, 4, E))
    pad = _pad(2, 5)
    out = _np(model(_t(src), _t(tgt), src_key_padding_mask=_t(pad),
                    memory_key_padding_mask=_t(pad)))
    src2 = np.where(pad[..., None], 100.0, src)  # change only the padded positions
    out2 = _np(model(_t(src2), _t(tgt), src_key_padding_mask=_t(pad),
                     memory_key_padding_mask=_t(pad)))
    np.testing.assert_allclose(out, out2, atol=1e-12)
    float_pad = np.where(pad, -np.inf, 0.0)
    out3 = _np(model(_t(src), _t(tgt), src_key_padding_mask=_t(float_pad),
                     memory_key_padding_mask=_t(float_pad)))
    np.testing.assert_allclose(out, out3, atol=1e-12)


def test_per_head_3d_mask():
    remat.manual_seed(4)
    layer = nn.TransformerEncoderLayer(E, H, FF, batch_first=True).double().eval()
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 5, E))
    mask = rng.standard_normal((5, 5))
    a = _np(layer(_t(x), src_mask=_t(mask)))
    b = _np(layer(_t(x), src_mask=_t(np.broadcast_to(mask, (2 * H, 5, 5)).copy())))
    np.testing.assert_allclose(a, b, atol=1e-12)


def test_mismatched_mask_dtypes_warn_as_pytorch():
    layer = nn.TransformerEncoderLayer(E, H, FF)
    x = remat.randn(5, 2, E)
    with pytest.warns(UserWarning, match="mismatched src_key_padding_mask and src_mask"):
        layer(x, src_mask=nn.Transformer.generate_square_subsequent_mask(5),
              src_key_padding_mask=_t(np.zeros((2, 5), bool)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        layer(x, src_key_padding_mask=_t(np.zeros((2, 5), bool)))


# ------------------------------------------------------------------ modes and gradients

def test_eval_is_deterministic_and_training_uses_dropout():
    remat.manual_seed(5)
    model = nn.Transformer(E, H, 1, 1, FF, dropout=0.5)
    src, tgt = remat.randn(5, 2, E), remat.randn(3, 2, E)
    model.eval()
    a, b = _np(model(src, tgt)), _np(model(src, tgt))
    np.testing.assert_array_equal(a, b)
    model.train()
    remat.manual_seed(6)
    c = _np(model(src, tgt))
    remat.manual_seed(6)
    d = _np(model(src, tgt))
    np.testing.assert_array_equal(c, d)
    assert not np.allclose(a, c)


def test_encoder_layer_gradients_match_finite_differences():
    remat.manual_seed(7)
    layer = _rand_params(nn.TransformerEncoderLayer(4, 2, 6, dropout=0.0, batch_first=True), 12)
    layer = layer.double()
    pad = _t(np.array([[False, False, True], [False, False, False]]))
    x = np.random.default_rng(13).standard_normal((2, 3, 4))
    check_grad(lambda inp: layer(inp, src_key_padding_mask=pad), x)
    # A parameter's gradient (the attention's input projection) against central differences.
    w = np.random.default_rng(14).standard_normal((2, 3, 4))
    layer.zero_grad()
    (layer(_t(x), src_key_padding_mask=pad) * _t(w)).sum().backward()
    param = layer.self_attn.in_proj_weight
    analytic = _np(param.grad)
    eps = 1e-6
    for idx in [(0, 0), (5, 2), (9, 1), (11, 3)]:
        values = []
        for step in (eps, -eps):
            with remat.no_grad():
                param[idx] = float(_np(param)[idx]) + step
                values.append(float((_np(layer(_t(x), src_key_padding_mask=pad)) * w).sum()))
                param[idx] = float(_np(param)[idx]) - step
        np.testing.assert_allclose(analytic[idx], (values[0] - values[1]) / (2 * eps),
                                   rtol=1e-5, atol=1e-7)


def test_decoder_layer_gradients_match_finite_differences():
    remat.manual_seed(8)
    layer = _rand_params(nn.TransformerDecoderLayer(4, 2, 6, dropout=0.0, norm_first=True), 14)
    layer = layer.double()
    rng = np.random.default_rng(15)
    tgt, mem = rng.standard_normal((3, 2, 4)), rng.standard_normal((4, 2, 4))
    causal = nn.Transformer.generate_square_subsequent_mask(3, dtype=remat.float64)
    check_grad(lambda t, m: layer(t, m, tgt_mask=causal), tgt, mem)


def test_every_parameter_gets_a_gradient():
    model = nn.Transformer(E, H, 2, 2, FF)
    model(remat.randn(5, 2, E), remat.randn(3, 2, E)).sum().backward()
    for name, p in model.named_parameters():
        assert p.grad is not None, name
        assert np.all(np.isfinite(_np(p.grad))), name


@pytest.mark.parametrize("training", [False, True])
def test_checkpointing_each_encoder_layer_is_bit_identical(training):
    remat.manual_seed(9)
    enc = nn.TransformerEncoder(
        nn.TransformerEncoderLayer(E, H, FF, dropout=0.2, batch_first=True), 3,
        norm=nn.LayerNorm(E)).train(training)
    x0 = np.random.default_rng(16).standard_normal((2, 6, E)).astype(np.float32)
    pad = _t(_pad(2, 6))

    def run(checkpointed):
        remat.manual_seed(10)
        x = _t(x0, requires_grad=True)
        h = x
        for layer in enc.layers:
            if checkpointed:
                h = remat.checkpoint(layer, h, src_key_padding_mask=pad)
            else:
                h = layer(h, src_key_padding_mask=pad)
        loss = (enc.norm(h) ** 2).mean()
        enc.zero_grad()
        loss.backward()
        return _np(loss), _np(x.grad), [_np(p.grad).copy() for p in enc.parameters()]

    plain, ckpt = run(False), run(True)
    np.testing.assert_array_equal(plain[0], ckpt[0])
    np.testing.assert_array_equal(plain[1], ckpt[1])
    for a, b in zip(plain[2], ckpt[2]):
        np.testing.assert_array_equal(a, b)
    # The module attribute route (each layer's calls run as a checkpoint) agrees too.
    for layer in enc.layers:
        layer.activation_checkpointing = True
    try:
        remat.manual_seed(10)
        x = _t(x0, requires_grad=True)
        loss = (enc(x, src_key_padding_mask=pad) ** 2).mean()
        enc.zero_grad()
        loss.backward()
        np.testing.assert_array_equal(_np(loss), plain[0])
        np.testing.assert_array_equal(_np(x.grad), plain[1])
    finally:
        for layer in enc.layers:
            layer.activation_checkpointing = False


# ------------------------------------------------------------------ structure

ENCODER_LAYER_KEYS = [
    "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
    "self_attn.out_proj.bias", "linear1.weight", "linear1.bias", "linear2.weight",
    "linear2.bias", "norm1.weight", "norm1.bias", "norm2.weight", "norm2.bias",
]
DECODER_LAYER_KEYS = [
    "self_attn.in_proj_weight", "self_attn.in_proj_bias", "self_attn.out_proj.weight",
    "self_attn.out_proj.bias", "multihead_attn.in_proj_weight", "multihead_attn.in_proj_bias",
    "multihead_attn.out_proj.weight", "multihead_attn.out_proj.bias", "linear1.weight",
    "linear1.bias", "linear2.weight", "linear2.bias", "norm1.weight", "norm1.bias",
    "norm2.weight", "norm2.bias", "norm3.weight", "norm3.bias",
]


def test_parameter_names_are_pytorchs():
    assert list(nn.TransformerEncoderLayer(E, H, FF).state_dict()) == ENCODER_LAYER_KEYS
    assert list(nn.TransformerDecoderLayer(E, H, FF).state_dict()) == DECODER_LAYER_KEYS
    keys = list(nn.Transformer(E, H, 2, 1, FF).state_dict())
    want = ([f"encoder.layers.{i}.{k}" for i in range(2) for k in ENCODER_LAYER_KEYS]
            + ["encoder.norm.weight", "encoder.norm.bias"]
            + [f"decoder.layers.0.{k}" for k in DECODER_LAYER_KEYS]
            + ["decoder.norm.weight", "decoder.norm.bias"])
    assert keys == want
    no_bias = nn.TransformerEncoderLayer(E, H, FF, bias=False).state_dict()
    assert list(no_bias) == [k for k in ENCODER_LAYER_KEYS if not k.endswith("bias")]


def test_layers_are_independent_deep_copies():
    layer = nn.TransformerEncoderLayer(E, H, FF)
    enc = nn.TransformerEncoder(layer, 3, enable_nested_tensor=False, mask_check=False)
    assert enc.num_layers == 3 and not enc.use_nested_tensor and not enc.mask_check
    ws = [lay.linear1.weight for lay in enc.layers]
    assert len({id(w) for w in ws} | {id(layer.linear1.weight)}) == 4
    for w in ws:
        np.testing.assert_array_equal(_np(w), _np(layer.linear1.weight))
    with remat.no_grad():
        ws[0].add_(1.0)
    assert not np.allclose(_np(ws[0]), _np(ws[1]))


def test_custom_encoder_and_decoder():
    enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, FF), 1)
    dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(E, H, FF), 1)
    model = nn.Transformer(E, H, custom_encoder=enc, custom_decoder=dec)
    assert model.encoder is enc and model.decoder is dec
    assert model(remat.randn(5, 2, E), remat.randn(3, 2, E)).shape == (3, 2, E)


def test_device_and_dtype_arguments():
    model = nn.Transformer(E, H, 1, 1, FF, dtype=remat.float64, device="cpu")
    assert {p.dtype for p in model.parameters()} == {remat.float64}


# ------------------------------------------------------------------ errors

@pytest.mark.parametrize("cls", [nn.TransformerEncoderLayer, nn.TransformerDecoderLayer])
def test_layer_constructor_errors(cls):
    name = cls.__name__
    with pytest.raises(ValueError, match=rf"{name}: d_model \(6\) must be divisible by nhead"):
        cls(6, 4)
    with pytest.raises(ValueError, match=f"{name}: nhead must be >= 1"):
        cls(8, 0)
    with pytest.raises(TypeError, match=f"{name}: d_model must be an int"):
        cls(8.0, 2)
    with pytest.raises(ValueError, match=f"{name}: dropout must be in"):
        cls(8, 2, dropout=1.5)
    with pytest.raises(ValueError, match=f"{name}: activation should be 'relu' or 'gelu'"):
        cls(8, 2, activation="swish")
    with pytest.raises(TypeError, match=f"{name}: activation must be"):
        cls(8, 2, activation=3)


def test_stack_and_transformer_constructor_errors():
    layer = nn.TransformerEncoderLayer(E, H, FF)
    with pytest.raises(ValueError, match="TransformerEncoder: num_layers must be >= 1"):
        nn.TransformerEncoder(layer, 0)
    with pytest.raises(TypeError, match="TransformerEncoder: encoder_layer must be a Module"):
        nn.TransformerEncoder("layer", 2)
    with pytest.raises(TypeError, match="TransformerDecoder: norm must be a Module"):
        nn.TransformerDecoder(nn.TransformerDecoderLayer(E, H, FF), 2, norm=3)
    with pytest.raises(ValueError, match=r"Transformer: d_model \(10\) must be divisible"):
        nn.Transformer(10, 4)
    with pytest.raises(TypeError, match="Transformer: custom_encoder must be a Module"):
        nn.Transformer(E, H, custom_encoder=object())


def test_forward_errors():
    model = nn.Transformer(E, H, 1, 1, FF)
    with pytest.raises(remat.ShapeError, match=r"batch sizes of src \(2\) and tgt \(3\)"):
        model(remat.randn(5, 2, E), remat.randn(4, 3, E))
    with pytest.raises(remat.ShapeError, match=r"must equal d_model \(8\)"):
        model(remat.randn(5, 2, 4), remat.randn(4, 2, 4))
    with pytest.raises(remat.ShapeError, match="must both be 2-D"):
        model(remat.randn(5, E), remat.randn(4, 2, E))
    layer = nn.TransformerEncoderLayer(E, H, FF)
    x = remat.randn(5, 2, E)
    with pytest.raises(remat.DTypeError, match="src_mask must be a bool or floating"):
        layer(x, src_mask=remat.zeros(5, 5, dtype=remat.int64))
    with pytest.raises(remat.ShapeError, match=r"attn_mask is \(4, 4\), but should be \(5, 5\)"):
        layer(x, src_mask=remat.zeros(4, 4))
    with pytest.raises(remat.ShapeError, match=r"key_padding_mask must have shape \(2, 5\)"):
        layer(x, src_key_padding_mask=remat.zeros(2, 4, dtype=remat.bool_))
    with pytest.raises(RuntimeError, match="need attn_mask"):
        nn.TransformerEncoder(layer, 1)(x, is_causal=True)
    with pytest.raises(TypeError, match="sz must be an int"):
        nn.Transformer.generate_square_subsequent_mask(2.5)


# ------------------------------------------------------------------ against PyTorch

def _torch_to_remat(tm, rm):
    rm.load_state_dict({k: v.detach().numpy() for k, v in tm.state_dict().items()})
    assert list(rm.state_dict()) == list(tm.state_dict())


def _compare(torch, tm, rm, inputs, masks, rtol=1e-5, atol=1e-5):
    """Outputs, input gradients and parameter gradients agree (eval mode, float32)."""
    tin = [torch.tensor(a, requires_grad=True) for a in inputs]
    rin = [_t(a, requires_grad=True) for a in inputs]
    tk = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in masks.items()}
    rk = {k: _t(v) if isinstance(v, np.ndarray) else v for k, v in masks.items()}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # both libraries' deprecation notes on mixed mask dtypes
        to = tm(*tin, **tk)
        ro = rm(*rin, **rk)
    np.testing.assert_allclose(_np(ro), to.detach().numpy(), rtol=rtol, atol=atol)
    w = np.random.default_rng(0).standard_normal(tuple(to.shape)).astype(np.float32)
    (to * torch.tensor(w)).sum().backward()
    (ro * _t(w)).sum().backward()
    for a, b in zip(rin, tin):
        np.testing.assert_allclose(_np(a.grad), b.grad.numpy(), rtol=rtol, atol=atol)
    for (name, p), q in zip(tm.named_parameters(), rm.parameters()):
        np.testing.assert_allclose(_np(q.grad), p.grad.numpy(), rtol=rtol, atol=atol,
                                   err_msg=name)


def _mask_kinds(n, s, t=None):
    rng = np.random.default_rng(1)
    t = s if t is None else t
    boolean = rng.random((t, s)) < 0.3
    boolean[:, 0] = False
    return {
        "none": {},
        "bool": boolean,
        "float": rng.standard_normal((t, s)).astype(np.float32),
        "causal": np.triu(np.full((t, s), -np.inf, np.float32), 1),
        "pad": _pad(n, s),
        "float_pad": np.where(_pad(n, s), -1e9, 0.0).astype(np.float32),
    }


@pytest.mark.parametrize("config", [
    dict(batch_first=False), dict(batch_first=True), dict(norm_first=True),
    dict(activation="gelu", batch_first=True), dict(bias=False),
])
@pytest.mark.parametrize("kind", ["none", "bool", "float", "causal", "causal_hint", "pad",
                                  "float_pad", "bool+pad"])
def test_encoder_against_torch(config, kind):
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    n, s = 3, 5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # enable_nested_tensor's note on the fast path
        tm = torch.nn.TransformerEncoder(
            torch.nn.TransformerEncoderLayer(E, H, FF, **config), 2,
            norm=torch.nn.LayerNorm(E)).eval()
    rm = nn.TransformerEncoder(nn.TransformerEncoderLayer(E, H, FF, **config), 2,
                               norm=nn.LayerNorm(E)).eval()
    _torch_to_remat(tm, rm)
    kinds = _mask_kinds(n, s)
    masks = {}
    if kind in ("bool", "float", "causal"):
        masks["mask"] = kinds[kind]
    if kind == "causal_hint":
        masks.update(mask=kinds["causal"], is_causal=True)
    if kind in ("pad", "float_pad"):
        masks["src_key_padding_mask"] = kinds[kind]
    if kind == "bool+pad":
        masks.update(mask=kinds["bool"], src_key_padding_mask=kinds["pad"])
    shape = (n, s, E) if config.get("batch_first") else (s, n, E)
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    _compare(torch, tm, rm, [x], masks)


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("kind", ["none", "tgt_causal", "tgt_causal_hint", "memory_bool",
                                  "memory_float", "pads", "all"])
def test_decoder_against_torch(norm_first, kind):
    torch = pytest.importorskip("torch")
    torch.manual_seed(1)
    n, t, s = 2, 4, 5
    tm = torch.nn.TransformerDecoder(
        torch.nn.TransformerDecoderLayer(E, H, FF, norm_first=norm_first, batch_first=True),
        2, norm=torch.nn.LayerNorm(E)).eval()
    rm = nn.TransformerDecoder(
        nn.TransformerDecoderLayer(E, H, FF, norm_first=norm_first, batch_first=True),
        2, norm=nn.LayerNorm(E)).eval()
    _torch_to_remat(tm, rm)
    self_kinds, cross_kinds = _mask_kinds(n, t), _mask_kinds(n, s, t)
    masks = {}
    if kind in ("tgt_causal", "all"):
        masks["tgt_mask"] = self_kinds["causal"]
    if kind == "tgt_causal_hint":
        masks.update(tgt_mask=self_kinds["causal"], tgt_is_causal=True)
    if kind in ("memory_bool", "all"):
        masks["memory_mask"] = cross_kinds["bool"]
    if kind == "memory_float":
        masks["memory_mask"] = cross_kinds["float"]
    if kind in ("pads", "all"):
        tgt_pad = self_kinds["pad"]
        tgt_pad[:, 0] = False
        masks.update(tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=cross_kinds["pad"])
    rng = np.random.default_rng(3)
    tgt, mem = (rng.standard_normal((n, length, E)).astype(np.float32) for length in (t, s))
    _compare(torch, tm, rm, [tgt, mem], masks)


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("masked", [False, True])
def test_transformer_against_torch(batch_first, masked):
    torch = pytest.importorskip("torch")
    torch.manual_seed(2)
    n, s, t = 2, 5, 4
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tm = torch.nn.Transformer(E, H, 2, 2, FF, batch_first=batch_first).eval()
    rm = nn.Transformer(E, H, 2, 2, FF, batch_first=batch_first).eval()
    _torch_to_remat(tm, rm)
    rng = np.random.default_rng(4)
    src = rng.standard_normal((n, s, E) if batch_first else (s, n, E)).astype(np.float32)
    tgt = rng.standard_normal((n, t, E) if batch_first else (t, n, E)).astype(np.float32)
    masks = {}
    if masked:
        pad = _pad(n, s)
        masks = dict(src_mask=_mask_kinds(n, s)["float"],
                     tgt_mask=np.triu(np.full((t, t), -np.inf, np.float32), 1),
                     memory_mask=_mask_kinds(n, s, t)["bool"],
                     src_key_padding_mask=pad, memory_key_padding_mask=pad)
    _compare(torch, tm, rm, [src, tgt], masks)


def test_state_dict_moves_from_remat_to_torch():
    torch = pytest.importorskip("torch")
    rm = nn.Transformer(E, H, 1, 1, FF).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tm = torch.nn.Transformer(E, H, 1, 1, FF).eval()
    tm.load_state_dict({k: torch.tensor(_np(v)) for k, v in rm.state_dict().items()})
    src, tgt = np.ones((5, 2, E), np.float32), np.full((3, 2, E), 0.5, np.float32)
    with torch.no_grad():
        want = tm(torch.tensor(src), torch.tensor(tgt)).numpy()
    np.testing.assert_allclose(_np(rm(_t(src), _t(tgt))), want, rtol=1e-5, atol=1e-5)


def test_square_subsequent_mask_matches_torch():
    torch = pytest.importorskip("torch")
    np.testing.assert_array_equal(
        _np(nn.Transformer.generate_square_subsequent_mask(5)),
        torch.nn.Transformer.generate_square_subsequent_mask(5).numpy())
