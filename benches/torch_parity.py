"""First-step parity with PyTorch for the ported training scripts (tests/ported/: MLP, GPT,
CNN, ResNet with BatchNorm in training mode, ViT with einops, DCGAN, VAE, a nanoGPT-style GPT
fed by a DataLoader, word_language_model's Transformer and recurrent models): each script is
loaded twice, once as written (real ``torch``) and once with its imports pointed at remat (the
only change a user makes).
The PyTorch model's weights are copied into the remat model, both run the loss of one
identical batch and backward, and the loss and every parameter gradient are compared
(float32 tolerance: rtol 1e-4, atol 1e-5). The DCGAN compares its discriminator's and its
generator's losses, each network's gradients from its own loss; the VAE draws its
reparameterization noise from NumPy; the GPT's greedy generation (top_k=1) must pick the same
tokens. word_lm's recurrent cases are skipped while remat.nn lacks the layer they need.

    python benches/torch_parity.py

Needs PyTorch (scikit-learn for the CNN, einops for the ViT); prints a table and exits
non-zero on a mismatch. A script, not a test: the test suite never imports torch.
"""

from __future__ import annotations

import sys
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the test helpers (_subprocess)
sys.path.insert(0, str(ROOT / "tests" / "ported"))

from machine_info import machine_line  # noqa: E402
from test_ported_scripts import port  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5
# Under bf16 autocast both libraries round each listed op's inputs and results to bfloat16
# (8 significant bits): values agree to a few of its units.
BF16_RTOL, BF16_ATOL = 3e-2, 3e-3


def load(name: str, ported: bool) -> types.ModuleType:
    path = ROOT / "tests" / "ported" / f"{name}.py"
    source = path.read_text()
    module = types.ModuleType(f"{'remat' if ported else 'torch'}_{name}")
    module.__file__ = str(path)
    sys.modules[module.__name__] = module
    exec(compile(port(source) if ported else source, str(path), "exec"), module.__dict__)
    return module


# Parity cases: the script each runs and, for word_lm's recurrent models, the nn layer remat
# must have (a case whose layer remat lacks is reported as skipped, not as a mismatch).
CASES = {
    "mlp": ("mlp", None), "gpt": ("gpt", None), "gpt_bf16_autocast": ("gpt", None),
    "cnn": ("cnn", None),
    "resnet": ("resnet", None), "vit": ("vit", None), "dcgan": ("dcgan", None),
    "vae": ("vae", None), "gpt_loader": ("gpt_loader", None),
    "word_lm": ("word_lm", None), "word_lm_lstm": ("word_lm", "LSTM"),
    "word_lm_gru": ("word_lm", "GRU"), "word_lm_rnn_tanh": ("word_lm", "RNN"),
}
RNN_TYPES = {"word_lm_lstm": "LSTM", "word_lm_gru": "GRU", "word_lm_rnn_tanh": "RNN_TANH"}


def batch_of(name: str, mod: types.ModuleType, lib) -> tuple:
    """The same batch for both libraries (built from NumPy / the scripts' data)."""
    if name == "mlp":
        x, y = mod.make_data(n=64)
    elif name in ("cnn", "resnet", "vit"):
        x, y = mod.make_data()
        x, y = x[:64], y[:64]
    elif name == "gpt_loader":
        dataset = mod.make_data()
        items = [dataset[i] for i in range(0, 8 * 40, 40)]
        x = lib.stack([item[0] for item in items])
        y = lib.stack([item[1] for item in items])
    else:
        data, _ = mod.make_data()
        x = lib.stack([data[i: i + 32] for i in range(0, 8 * 40, 40)])
        y = lib.stack([data[i + 1: i + 33] for i in range(0, 8 * 40, 40)])
    return x, y


def models_of(name: str, mod: types.ModuleType) -> dict:
    """The script's model(s) by name, built as the script builds them."""
    if name in ("gpt", "gpt_bf16_autocast"):
        _, vocab = mod.make_data()
        return {"": mod.Model(vocab)}
    if name == "gpt_loader":
        dataset = mod.make_data()
        return {"": mod.GPT(dataset.vocab_size, block_size=dataset.block_size)}
    if name == "dcgan":
        net_g, net_d = mod.Generator(), mod.Discriminator()
        net_g.apply(mod.weights_init)
        net_d.apply(mod.weights_init)
        return {"netG.": net_g, "netD.": net_d}
    if name == "vae":
        return {"": mod.VAE()}
    if name.startswith("word_lm"):
        _, ntokens = mod.make_data()
        return {"": mod.build_model(RNN_TYPES.get(name, "Transformer"), ntokens)}
    return {"": mod.Model()}


def grads(models: dict) -> dict[str, np.ndarray]:
    return {prefix + n: p.grad.numpy().copy() for prefix, m in models.items()
            for n, p in m.named_parameters()}


def first_step(name: str, mod: types.ModuleType, lib, models: dict
               ) -> tuple[dict[str, float], dict[str, np.ndarray]]:
    """One step's loss(es) and every parameter's gradient, from the same inputs in either
    library."""
    if name == "dcgan":
        # The script's first iteration: the discriminator on real and detached fake images,
        # then the generator through the discriminator (the optimizers' steps left out).
        net_g, net_d = models["netG."], models["netD."]
        real = mod.make_data()[:32]
        noise = lib.tensor(np.random.default_rng(0).standard_normal(
            (32, mod.nz, 1, 1)).astype(np.float32))
        criterion = mod.nn.BCELoss()
        label = lib.full((32,), 1, dtype=real.dtype)
        err_d_real = criterion(net_d(real), label)
        err_d_real.backward()  # before fill_: BCELoss keeps the labels for its backward
        fake = net_g(noise)
        label.fill_(0)
        err_d_fake = criterion(net_d(fake.detach()), label)
        err_d_fake.backward()
        err_d = err_d_real + err_d_fake
        d_grads = grads({"netD.": net_d})
        label.fill_(1)
        err_g = criterion(net_d(fake), label)
        err_g.backward()
        return ({"errD": err_d.item(), "errG": err_g.item()},
                {**grads({"netG.": net_g}), **d_grads})
    if name == "vae":
        # The reparameterization's noise from NumPy: the two libraries' streams differ.
        model = models[""]
        x = mod.make_data()[0][:32]
        eps = lib.tensor(np.random.default_rng(0).standard_normal((32, 20)).astype(np.float32))
        model.reparameterize = lambda mu, logvar: mu + eps * lib.exp(0.5 * logvar)
        recon, mu, logvar = model(x)
        loss = mod.loss_function(recon, x, mu, logvar)
        loss.backward()
        return {"loss": loss.item()}, grads(models)
    if name.startswith("word_lm"):
        model = models[""]
        data, _ = mod.make_data()
        batch = mod.get_batch(data, 0)
        if name in RNN_TYPES:
            batch = (*batch, model.init_hidden(data.size(1)))
        loss = mod.loss_fn(model, batch)
    elif name == "gpt_bf16_autocast":
        loss = mod.loss_fn(models[""], batch_of(name, mod, lib), amp=True)
    else:
        loss = mod.loss_fn(models[""], batch_of(name, mod, lib))
    loss.backward()
    return {"loss": loss.item()}, grads(models)


def greedy_generation(mod: types.ModuleType, lib, model) -> list[int]:
    """gpt_loader's generate() with top_k=1: the sampling is then the argmax in either library,
    whatever the random stream."""
    dataset = mod.make_data()
    x = lib.tensor([[dataset.stoi[c] for c in "First"]], dtype=lib.long)
    return model.generate(x, 16, top_k=1)[0].tolist()


def compare(name: str) -> list[tuple[str, float, bool]]:
    import torch

    import remat

    script, _ = CASES[name]
    tmod, rmod = load(script, False), load(script, True)
    torch.manual_seed(0)
    tmodels, rmodels = models_of(name, tmod), models_of(name, rmod)
    for key, tmodel in tmodels.items():
        # resnet, dcgan: BatchNorm in training mode (batch statistics), no dropout
        if name not in ("resnet", "dcgan"):
            tmodel.eval()  # no dropout: the two libraries' random streams differ
            rmodels[key].eval()
        state = {k: v.detach().numpy().copy() for k, v in tmodel.state_dict().items()}
        rmodels[key].load_state_dict(state)
    tlosses, tgrads = first_step(name, tmod, torch, tmodels)
    rlosses, rgrads = first_step(name, rmod, remat, rmodels)
    rtol, atol = (BF16_RTOL, BF16_ATOL) if "bf16" in name else (RTOL, ATOL)
    rows = [(lname, abs(tlosses[lname] - rloss),
             bool(np.isclose(rloss, tlosses[lname], rtol=rtol, atol=atol)))
            for lname, rloss in rlosses.items()]
    for pname, tg in tgrads.items():
        rg = rgrads[pname]
        rows.append((f"grad {pname}", float(np.abs(tg - rg).max()),
                     bool(np.allclose(rg, tg, rtol=rtol, atol=atol))))
    if name == "gpt_loader":
        with torch.no_grad():
            tids = greedy_generation(tmod, torch, tmodels[""])
        rids = greedy_generation(rmod, remat, rmodels[""])
        wrong = sum(a != b for a, b in zip(tids, rids)) + abs(len(tids) - len(rids))
        rows.append(("generate(top_k=1) tokens differing", float(wrong), wrong == 0))
    return rows


def main() -> int:
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed: nothing to compare")
        return 0
    print(f"machine: {machine_line()}; torch {torch.__version__}")
    ok = True
    import remat.nn

    for name, (_, layer) in CASES.items():
        if layer is not None and not hasattr(remat.nn, layer):
            print(f"{name}: skipped, remat.nn has no {layer} yet (the recurrent layers are "
                  "not on main)")
            continue
        try:
            rows = compare(name)
        except AttributeError as e:  # a module or function remat does not have yet
            print(f"{name}: not compared, remat lacks it ({e})")
            ok = False
            continue
        bad = [r for r in rows if not r[2]]
        worst = max(rows, key=lambda r: r[1])
        nloss = sum(not r[0].startswith(("grad ", "generate")) for r in rows)
        ngrad = sum(r[0].startswith("grad ") for r in rows)
        extra = " + greedy generation" if name == "gpt_loader" else ""
        print(f"{name}: {nloss + ngrad} values ({nloss} loss + {ngrad} gradients){extra}, worst "
              f"abs diff {worst[1]:.2e} ({worst[0]}), {'OK' if not bad else 'MISMATCH'}")
        for r in bad:
            print(f"   mismatch: {r[0]} (max abs diff {r[1]:.3e})")
        ok &= not bad
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
