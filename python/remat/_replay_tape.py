"""Calls that must happen once per step, replayed when a checkpointed function is re-run.

A checkpointed function (``checkpoint``, ``checkpoint_segment``, ``checkpoint_sequential``,
a group, a module's ``activation_checkpointing`` flag) runs twice: in the forward, and again
in backward to recompute what it did not keep. Most of what it does is pure and may run
again; a collective (``remat.distributed.all_reduce`` and the rest) is not: a second
all-reduce inside backward talks to the other ranks again, in an order they do not expect,
and an in-place one applied to an already-reduced value reduces it twice (a silent wrong
gradient on many ranks that is right on one).

So each checkpointed function's runs share a :class:`Tape`. The first run records what each
such call produced; later runs replay it in the same order instead of calling again. The
recorded results stay alive until backward frees the checkpoint, as kept activations do.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from . import _remat

__all__ = ["Tape", "running", "once"]

_local = threading.local()


class Tape:
    """The recorded results of one checkpointed function's once-per-step calls."""

    __slots__ = ("entries", "cursor", "ran")

    def __init__(self) -> None:
        self.entries: list[Any] = []
        self.cursor = 0
        self.ran = False


def _stack() -> list[tuple[Tape, bool]]:
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


@contextmanager
def running(tape: Tape) -> Iterator[None]:
    """One run of a checkpointed function: the first records into ``tape``, later ones replay
    it from the start."""
    replay = tape.ran
    tape.ran = True
    tape.cursor = 0
    stack = _stack()
    stack.append((tape, replay))
    try:
        yield
    finally:
        stack.pop()


def once(op: str, call: Callable[[], Any]) -> tuple[Any, bool]:
    """``call()``'s result, or, in a recompute, the result the forward's call recorded.

    Returns ``(result, replayed)``. Raises ``remat.CheckpointError`` when a recompute makes
    more such calls than its forward did, or when code is re-run with nothing to replay (the
    budget planner's measuring run of a layer that calls a collective).
    """
    stack = _stack()
    for i, (tape, replay) in enumerate(stack):
        if not replay:
            continue
        if tape.cursor >= len(tape.entries):
            raise _remat.CheckpointError(
                f"{op}: the recompute of a checkpointed function made more collective calls "
                f"than its forward did ({len(tape.entries)}); a collective inside a checkpoint "
                "must be called the same way in both runs"
            )
        entry = tape.entries[tape.cursor]
        tape.cursor += 1
        # Checkpoints nested inside the one being recomputed are made afresh: they record
        # the replayed result for their own recompute.
        for inner, inner_replay in stack[i + 1:]:
            if not inner_replay:
                inner.entries.append(entry)
        return entry, True
    if _remat._is_recomputing():
        raise _remat.CheckpointError(
            f"{op}: a collective cannot run while remat re-runs code outside a checkpointed "
            "function's recompute (the budget planner measuring a layer): it would talk to "
            "the other ranks again. Call it outside the planned layers"
        )
    entry = call()
    for tape, _ in stack:
        tape.entries.append(entry)
    return entry, False
