"""Plain PyTorch training scripts (tests/ported/: an MLP, a small GPT, a small CNN, a small
ResNet, a small ViT written with einops, and programs shaped like the widely copied public
ones: pytorch/examples' DCGAN, VAE and word_language_model, a nanoGPT-style GPT fed by a
multi-process DataLoader) run unchanged except for their imports: each `torch` module in an
import statement becomes the `remat` one (`import remat as torch`, `import remat.nn as nn`,
`from remat import nn`, ...), and einops' `from einops.layers.torch import` becomes
`from remat.nn import`. Their losses must fall, and the GPT's, the ResNet's, the ViT's and the
DCGAN generator's per-block checkpointing must give bit-identical losses to the plain run. No
test here imports torch (benches/torch_parity.py compares with PyTorch where installed)."""

import json
import math
import re
import sys
import types
from pathlib import Path

import pytest
from _subprocess import assert_clean_exit, run_python

PORTED = Path(__file__).parent


def port(source: str) -> str:
    """The script with its torch imports (and einops' torch layers) pointed at remat: the only
    change a user makes."""
    source = re.sub(r"^import torch$", "import remat as torch", source, flags=re.M)
    source = re.sub(r"^import torch\.(\S+) as (\w+)$", r"import remat.\1 as \2", source,
                    flags=re.M)
    source = re.sub(r"^from torch\.(\S+) import", r"from remat.\1 import", source, flags=re.M)
    source = re.sub(r"^from torch import", "from remat import", source, flags=re.M)
    # einops' layers live in einops' own package named after the framework, so this line is
    # the one a port changes that is not a torch import (docs/porting.md).
    return re.sub(r"^from einops\.layers\.torch import", "from remat.nn import", source,
                  flags=re.M)


def load(name: str) -> types.ModuleType:
    source = (PORTED / f"{name}.py").read_text()
    ported = port(source)
    assert "import torch\n" not in ported and "from torch" not in ported
    module = types.ModuleType(f"ported_{name}")
    module.__file__ = str(PORTED / f"{name}.py")
    sys.modules[module.__name__] = module
    exec(compile(ported, module.__file__, "exec"), module.__dict__)
    return module


@pytest.mark.parametrize("name", ["mlp", "gpt", "cnn", "resnet", "dcgan", "vae", "gpt_loader",
                                  "word_lm"])
def test_port_changes_only_import_lines(name):
    src = (PORTED / f"{name}.py").read_text()
    changed = [(a, b) for a, b in zip(src.splitlines(), port(src).splitlines()) if a != b]
    assert changed and all(a.startswith(("import torch", "from torch")) for a, _ in changed)
    assert all(b.startswith(("import remat", "from remat")) for _, b in changed)


def test_port_rewrites_from_torch_import():
    assert port("from torch import nn, optim\n") == "from remat import nn, optim\n"


def test_port_of_an_einops_script_changes_its_torch_imports_and_the_layers_line():
    src = (PORTED / "vit.py").read_text()
    changed = [(a, b) for a, b in zip(src.splitlines(), port(src).splitlines()) if a != b]
    assert all(a.startswith(("import torch", "from torch", "from einops.layers.torch"))
               for a, _ in changed)
    assert ("from einops.layers.torch import Rearrange", "from remat.nn import Rearrange") \
        in changed
    assert "from einops import rearrange, repeat" in port(src)  # einops itself is unchanged


@pytest.mark.parametrize("builtin", [False, True], ids=["einops_blocks", "nn_transformer"])
def test_vit_script_with_einops_trains_and_checkpointing_changes_nothing(builtin):
    pytest.importorskip("einops")
    vit = load("vit")
    losses, acc = vit.train(steps=40, builtin=builtin)
    ck_losses, ck_acc = vit.train(steps=40, builtin=builtin, checkpointing=True)
    assert all(math.isfinite(v) for v in losses)
    assert losses[-1] < 0.5 * losses[0] and acc > 0.8
    assert ck_losses == losses and ck_acc == acc  # bit for bit, dropout included


def test_mlp_script_trains():
    losses, acc = load("mlp").train(steps=40)
    assert all(math.isfinite(v) for v in losses)
    assert losses[-1] < 0.5 * losses[0] and acc > 0.8


def test_gpt_script_trains_and_checkpointing_changes_nothing():
    gpt = load("gpt")
    plain = gpt.train(steps=12, checkpointing=False)
    ck = gpt.train(steps=12, checkpointing=True)
    assert ck == plain  # bit for bit
    assert plain[-1] < plain[0]


def test_gpt_script_under_bf16_autocast():
    """The GPT under `torch.autocast("cpu", dtype=torch.bfloat16)`: its loss falls, and the
    per-block checkpointing gives bit-identical losses (the recompute runs under the
    forward's autocast state)."""
    gpt = load("gpt")
    plain = gpt.train(steps=12, checkpointing=False, amp=True)
    ck = gpt.train(steps=12, checkpointing=True, amp=True)
    assert ck == plain
    fp32 = gpt.train(steps=12, checkpointing=False)
    assert plain[-1] < 0.95 * plain[0]
    # bf16 rounding of the matrix products' inputs: each step's loss within 1% of float32's
    assert all(abs(a - b) <= 0.01 * b for a, b in zip(plain, fp32)), (plain, fp32)



def test_cnn_script_trains():
    pytest.importorskip("sklearn")
    losses, acc = load("cnn").train(steps=40)
    assert losses[-1] < losses[0] and acc > 0.2


def test_resnet_script_trains_and_checkpointing_changes_nothing():
    """BatchNorm2d, ReLU(inplace=True) and the in-place residual `out += identity`, plain and
    with every block checkpointed: identical losses, accuracy and running statistics (the
    recompute does not update BatchNorm's statistics a second time)."""
    pytest.importorskip("sklearn")
    resnet = load("resnet")
    losses, acc, running = resnet.train(steps=30)
    ck_losses, ck_acc, ck_running = resnet.train(steps=30, checkpointing=True)
    assert all(math.isfinite(v) for v in losses)
    assert losses[-1] < 0.5 * losses[0] and acc > 0.5
    assert ck_losses == losses and ck_acc == acc  # bit for bit
    assert (ck_running == running).all()


def test_dcgan_script_trains_and_checkpointing_the_generator_changes_nothing():
    """ConvTranspose2d, BatchNorm2d in training mode, in-place ReLU / LeakyReLU, BCELoss with
    `fill_` labels, `.detach()` of the fakes, two Adam optimizers; the generator's three blocks
    checkpointed give the same losses and D outputs bit for bit."""
    dcgan = load("dcgan")
    plain = dcgan.train(steps=12)
    ck = dcgan.train(steps=12, checkpointing=True)
    assert all(math.isfinite(v) for key in plain for v in plain[key])
    assert all(0.0 < v < 1.0 for v in plain["D_x"] + plain["D_G_z"])  # Sigmoid outputs
    assert ck == plain  # bit for bit


def test_dcgan_discriminator_learns_against_a_fixed_generator():
    h = load("dcgan").train(steps=16, train_generator=False)
    assert h["errD"][-1] < 0.85 * h["errD"][0]
    # D(x) rises, D(G(z)) stays: the discriminator's outputs separate real from fake
    assert h["D_x"][-1] - h["D_G_z"][-1] > 0.1 > h["D_x"][0] - h["D_G_z"][0]


def test_vae_script_trains_and_is_deterministic_under_manual_seed():
    """`torch.randn_like` in the reparameterization, F.binary_cross_entropy with
    reduction='sum' plus the KL term; the same seed gives the same run bit for bit, another
    seed another run."""
    vae = load("vae")
    losses, sample = vae.train(epochs=3)
    again, sample_again = vae.train(epochs=3)
    other, _ = vae.train(epochs=3, seed=1)
    assert all(math.isfinite(v) for v in losses)
    assert losses[-1] < 0.85 * losses[0]
    assert again == losses and (sample_again == sample).all()
    assert other != losses
    assert sample.shape == (64, 1, 28, 28) and sample.min() >= 0.0 and sample.max() <= 1.0


def test_gpt_loader_script_with_worker_processes():
    """A DataLoader over a Dataset of token windows, shuffled, with two worker processes
    (forked: run in a fresh interpreter with a timeout), over an epoch boundary: the losses
    equal those of num_workers=0 exactly; generation with top-k and torch.multinomial is
    deterministic under manual_seed and gives valid token ids."""
    code = f"""
        import json, sys
        sys.path[:0] = [{str(PORTED)!r}, {str(PORTED.parent)!r}]
        from test_ported_scripts import load
        g = load("gpt_loader")
        l0, m0 = g.train(steps=30, batch_size=64, num_workers=0)
        l2, m2 = g.train(steps=30, batch_size=64, num_workers=2)
        s0, s0_again, s2 = g.sample(m0), g.sample(m0), g.sample(m2)
        s_other = g.sample(m0, seed=7)
        print(json.dumps(dict(l0=l0, l2=l2, s0=s0[0], s0_again=s0_again[0], s2=s2[0],
                              s_other=s_other[0], text=s0[1], vocab=g.make_data().vocab_size,
                              batches=len(g.make_data()) // 64 + 1)))
    """
    run = run_python(code)
    assert_clean_exit("gpt_loader with num_workers=2", run)
    r = json.loads(run.stdout.strip().splitlines()[-1])
    assert r["batches"] < 30  # the run starts a second epoch (new workers, new order)
    assert all(math.isfinite(v) for v in r["l0"])
    assert r["l0"][-1] < 0.8 * r["l0"][0]
    assert r["l2"] == r["l0"]  # bit for bit
    start = r["s0"][:5]
    assert r["text"].startswith("First") and len(r["s0"]) == 5 + 24
    assert r["s0_again"] == r["s0"] and r["s2"] == r["s0"]
    assert r["s_other"][:5] == start and r["s_other"] != r["s0"]
    assert all(isinstance(i, int) and 0 <= i < r["vocab"] for i in r["s0"] + r["s_other"])


def check_word_lm(model_type, loss_ratio):
    word_lm = load("word_lm")
    train_losses, val_losses, test_loss, model, corpus = word_lm.train(model_type)
    assert all(math.isfinite(v) for v in train_losses + val_losses + [test_loss])
    assert sum(train_losses[-5:]) / 5 < loss_ratio * train_losses[0]
    assert test_loss < loss_ratio * train_losses[0]
    ids = word_lm.generate(model, corpus)
    assert ids == word_lm.generate(model, corpus)  # deterministic under manual_seed
    assert len(ids) == 12 and all(0 <= i < len(corpus.dictionary) for i in ids)


def test_word_lm_transformer_trains_and_generates():
    """word_language_model's TransformerModel: nn.TransformerEncoder with a float causal mask
    built by masked_fill, a registered positional-encoding buffer, NLLLoss, clip_grad_norm_,
    SGD as `p.data.add_(p.grad, alpha=-lr)`, the learning rate annealed; generation by
    torch.multinomial over the last position."""
    check_word_lm("Transformer", 0.5)


@pytest.mark.parametrize("rnn_type,layer", [("LSTM", "LSTM"), ("GRU", "GRU"),
                                            ("RNN_TANH", "RNN")])
def test_word_lm_recurrent_models_train_and_generate(rnn_type, layer):
    """word_language_model's RNNModel (`getattr(nn, rnn_type)` / nn.RNN, dropout between the
    layers, `repackage_hidden` between batches, `weight.new_zeros` hidden states)."""
    import remat.nn

    if not hasattr(remat.nn, layer):
        pytest.skip(f"remat.nn has no {layer} yet (the recurrent layers are not on main): "
                    f"word_lm's {rnn_type} model needs nn.{layer}")
    check_word_lm(rnn_type, 0.75)
