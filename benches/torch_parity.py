"""First-step parity with PyTorch for the ported training scripts (tests/ported/: MLP, GPT,
CNN, ResNet with BatchNorm in training mode, ViT with einops): each script is loaded twice,
once as written (real ``torch``) and once with its imports pointed at remat (the only change
a user makes).
The PyTorch model's weights are copied into the remat model, both run the loss of one
identical batch and backward, and the loss and every parameter gradient are compared
(float32 tolerance: rtol 1e-4, atol 1e-5).

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
sys.path.insert(0, str(ROOT / "tests" / "ported"))

from machine_info import machine_line  # noqa: E402
from test_ported_scripts import port  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


def load(name: str, ported: bool) -> types.ModuleType:
    path = ROOT / "tests" / "ported" / f"{name}.py"
    source = path.read_text()
    module = types.ModuleType(f"{'remat' if ported else 'torch'}_{name}")
    module.__file__ = str(path)
    sys.modules[module.__name__] = module
    exec(compile(port(source) if ported else source, str(path), "exec"), module.__dict__)
    return module


def batch_of(name: str, mod: types.ModuleType, lib) -> tuple:
    """The same batch for both libraries (built from NumPy / the scripts' data)."""
    if name == "mlp":
        x, y = mod.make_data(n=64)
    elif name in ("cnn", "resnet", "vit"):
        x, y = mod.make_data()
        x, y = x[:64], y[:64]
    else:
        data, _ = mod.make_data()
        x = lib.stack([data[i: i + 32] for i in range(0, 8 * 40, 40)])
        y = lib.stack([data[i + 1: i + 33] for i in range(0, 8 * 40, 40)])
    return x, y


def model_of(name: str, mod: types.ModuleType):
    if name == "gpt":
        _, vocab = mod.make_data()
        return mod.Model(vocab)
    return mod.Model()


def compare(name: str) -> list[tuple[str, float, bool]]:
    import torch

    import remat

    tmod, rmod = load(name, False), load(name, True)
    torch.manual_seed(0)
    tmodel, rmodel = model_of(name, tmod), model_of(name, rmod)
    if name != "resnet":  # resnet: BatchNorm in training mode (batch statistics), no dropout
        tmodel.eval()  # no dropout: the two libraries' random streams differ
        rmodel.eval()
    state = {k: v.detach().numpy().copy() for k, v in tmodel.state_dict().items()}
    rmodel.load_state_dict(state)
    tloss = tmod.loss_fn(tmodel, batch_of(name, tmod, torch))
    rloss = rmod.loss_fn(rmodel, batch_of(name, rmod, remat))
    tloss.backward()
    rloss.backward()
    rows = [("loss", abs(tloss.item() - rloss.item()),
             bool(np.isclose(rloss.item(), tloss.item(), rtol=RTOL, atol=ATOL)))]
    rparams = dict(rmodel.named_parameters())
    for pname, tp in tmodel.named_parameters():
        tg = tp.grad.numpy()
        rg = rparams[pname].grad.numpy()
        rows.append((f"grad {pname}", float(np.abs(tg - rg).max()),
                     bool(np.allclose(rg, tg, rtol=RTOL, atol=ATOL))))
    return rows


def main() -> int:
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed: nothing to compare")
        return 0
    print(f"machine: {machine_line()}; torch {torch.__version__}")
    ok = True
    for name in ("mlp", "gpt", "cnn", "resnet", "vit"):
        try:
            rows = compare(name)
        except AttributeError as e:  # a module or function remat does not have yet
            print(f"{name}: not compared, remat lacks it ({e})")
            ok = False
            continue
        bad = [r for r in rows if not r[2]]
        worst = max(rows, key=lambda r: r[1])
        print(f"{name}: {len(rows)} values (loss + {len(rows) - 1} gradients), worst abs diff "
              f"{worst[1]:.2e} ({worst[0]}), {'OK' if not bad else 'MISMATCH'}")
        for r in bad:
            print(f"   mismatch: {r[0]} (max abs diff {r[1]:.3e})")
        ok &= not bad
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
