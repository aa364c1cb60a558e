"""``torch.utils.checkpoint``'s names over remat's checkpointing: the same objects as
``remat.checkpoint`` and ``remat.checkpoint_sequential`` (PyTorch's keywords such as
``use_reentrant`` and ``preserve_rng_state`` are accepted there)."""

from __future__ import annotations

from ..checkpoint import checkpoint, checkpoint_sequential

__all__ = ["checkpoint", "checkpoint_sequential"]

# TODO(merge): set_checkpoint_early_stop is being added to remat.checkpoint concurrently (issue
# #11, item 6). Until it has landed it is re-exported only when present, through globals() so
# that type checkers (and stubtest) do not see a name that may be missing; then make this a
# plain import above and list it in __all__.
try:
    from ..checkpoint import set_checkpoint_early_stop as _set_early_stop  # type: ignore[attr-defined]  # noqa: E501
except ImportError:  # before the early-stop change is merged
    pass
else:
    globals()["set_checkpoint_early_stop"] = _set_early_stop
    __all__.append("set_checkpoint_early_stop")
