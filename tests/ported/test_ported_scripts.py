"""Plain PyTorch training scripts (tests/ported/: an MLP, a small GPT, a small CNN, a small
ResNet, a small ViT written with einops) run unchanged except for their imports: each `torch`
module in an import statement becomes the `remat` one (`import remat as torch`,
`import remat.nn as nn`, ...), and einops' `from einops.layers.torch import` becomes
`from remat.nn import`. Their losses must fall, and the GPT's, the ResNet's and the ViT's
per-block checkpointing must give bit-identical losses to the plain run. No test here imports
torch (benches/torch_parity.py compares with PyTorch where installed)."""

import math
import re
import sys
import types
from pathlib import Path

import pytest

PORTED = Path(__file__).parent


def port(source: str) -> str:
    """The script with its torch imports (and einops' torch layers) pointed at remat: the only
    change a user makes."""
    source = re.sub(r"^import torch$", "import remat as torch", source, flags=re.M)
    source = re.sub(r"^import torch\.(\S+) as (\w+)$", r"import remat.\1 as \2", source,
                    flags=re.M)
    source = re.sub(r"^from torch\.(\S+) import", r"from remat.\1 import", source, flags=re.M)
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


def test_port_changes_only_import_lines():
    src = (PORTED / "gpt.py").read_text()
    changed = [(a, b) for a, b in zip(src.splitlines(), port(src).splitlines()) if a != b]
    assert changed and all(a.startswith(("import torch", "from torch")) for a, _ in changed)


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
