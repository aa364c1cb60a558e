"""Work handles of collectives, and the errors a process group raises.

A collective is queued on its group's communication thread and runs there; a :class:`Work`
is its handle. ``wait()`` blocks until it finished and then writes the results into the
caller's tensors on the waiting thread (an in-place write that bumps their version counters,
so autograd sees that they changed), exactly once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

__all__ = ["DistBackendError", "DistError", "ProcessGroupNotInitializedError", "Work"]


class DistError(RuntimeError):
    """An error of ``remat.distributed`` (PyTorch's ``torch.distributed.DistError``)."""


class DistBackendError(DistError):
    """A collective failed in its backend: a timeout, a broken or destroyed group, a rank that
    called a different collective (PyTorch's ``torch.distributed.DistBackendError``)."""


class ProcessGroupNotInitializedError(DistError, ValueError):
    """No default process group: ``init_process_group`` was not called (or the group was
    destroyed). A RuntimeError, as PyTorch raised it up to 2.1, and a ValueError, as it
    raises it since, so that either ``except`` catches it."""


class Work:
    """The handle of one queued collective (PyTorch's ``torch.distributed.Work``).

    ``wait()`` returns True once the collective finished and its results are in the output
    tensors; it raises the collective's error (a timeout after the group's ``timeout``, a
    mismatch between ranks) instead. ``is_completed()`` asks without blocking.
    """

    def __init__(self, op: str, write: Callable[[Any], Any] | None = None) -> None:
        self.op = op
        self._write = write
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._error: BaseException | None = None
        self._arrays: Any = None
        self._written = False
        self._value: Any = None
        #: Seconds the collective took on the communication thread (for overlap figures).
        self.seconds = 0.0

    # -- the communication thread's side
    def _complete(self, arrays: Any, error: BaseException | None, seconds: float) -> None:
        self._arrays, self._error, self.seconds = arrays, error, seconds
        self._event.set()

    # -- the caller's side
    def is_completed(self) -> bool:
        """Whether the collective finished (successfully or not)."""
        return self._event.is_set()

    def is_success(self) -> bool:
        """Whether it finished without an error."""
        return self._event.is_set() and self._error is None

    def exception(self) -> BaseException | None:
        """The collective's error, once finished; None otherwise."""
        return self._error if self._event.is_set() else None

    def wait(self, timeout: Any = None) -> bool:
        """Block until the collective finished, then write its results; True on success.

        The group's own timeout bounds the wait (the communication thread gives up on a
        collective that no other rank joins); ``timeout`` (seconds or a ``timedelta``)
        bounds it further and raises ``DistBackendError`` when it passes first.
        """
        limit = _seconds(timeout)
        if not self._event.wait(limit):
            raise DistBackendError(f"{self.op}: Work.wait timed out after {limit} s")
        if self._error is not None:
            raise self._error
        with self._lock:
            if not self._written:
                self._written = True
                if self._write is not None:
                    self._value = self._write(self._arrays)
        return True

    def result(self) -> Any:
        """What the collective produced (after ``wait()``): its output tensors."""
        self.wait()
        return self._value

    def _rewrite(self, write: Callable[[Any], Any]) -> Work:
        """A finished handle that writes this collective's recorded results with ``write``:
        a checkpoint's recompute replays a collective so, without calling it again."""
        self.wait()
        replay = Work(self.op, write)
        replay._complete(self._arrays, None, 0.0)
        return replay


def _seconds(timeout: Any) -> float | None:
    if timeout is None:
        return None
    if hasattr(timeout, "total_seconds"):
        return float(timeout.total_seconds())
    return float(timeout)
