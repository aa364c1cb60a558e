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
    """An error of ``remat.distributed`` (PyTorch's ``torch.distributed.DistError``).

    A subclass of ``RuntimeError``, and the base of ``DistBackendError`` and of the error
    raised when no default process group exists (which is also a ``ValueError``).

    Parameters
    ----------
    *args : object
        The message (and any further values), kept in ``args``; ``str(e)`` is the message.

    Raises
    ------
    TypeError
        When given keyword arguments, as every built-in exception.

    Examples
    --------
    >>> import remat.distributed as dist
    >>> try:
    ...     dist.get_rank()
    ... except dist.DistError as e:
    ...     print(e)
    get_rank: Default process group has not been initialized, please make sure to call ...
    >>> issubclass(dist.DistError, RuntimeError)
    True
    """


class DistBackendError(DistError):
    """A collective failed in its backend: a timeout, a broken or destroyed group, a rank that
    called a different collective (PyTorch's ``torch.distributed.DistBackendError``).

    A subclass of ``DistError`` (so a ``RuntimeError``). After a timeout the group is
    broken: every later collective on it raises this at once, until it is destroyed.

    Parameters
    ----------
    *args : object
        The message (and any further values), kept in ``args``; ``str(e)`` is the message.

    Raises
    ------
    TypeError
        When given keyword arguments, as every built-in exception.

    Examples
    --------
    >>> import remat.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> group = dist.new_group()
    >>> dist.destroy_process_group(group)
    >>> try:
    ...     dist.barrier(group=group)
    ... except dist.DistBackendError as e:
    ...     print(e)
    barrier: the process group was destroyed
    >>> dist.destroy_process_group()
    """


class ProcessGroupNotInitializedError(DistError, ValueError):
    """No default process group: ``init_process_group`` was not called (or the group was
    destroyed). A RuntimeError, as PyTorch raised it up to 2.1, and a ValueError, as it
    raises it since, so that either ``except`` catches it."""


class Work:
    """The handle of one queued collective (PyTorch's ``torch.distributed.Work``).

    ``wait()`` returns True once the collective finished and its results are in the output
    tensors; it raises the collective's error (a timeout after the group's ``timeout``, a
    mismatch between ranks) instead. ``is_completed()`` asks without blocking. The
    collectives return one with ``async_op=True`` (and ``ProcessGroup.submit`` always);
    ``seconds`` is how long the collective took on the communication thread.

    Parameters
    ----------
    op : str
        The collective's name, as its errors name it.
    write : callable, optional
        Called once, by the first ``wait()``, with what the collective produced; it writes
        the results into the caller's tensors, and what it returns is ``result()``.
        Default: ``None`` (nothing to write).

    Raises
    ------
    TypeError
        When given other arguments than ``op`` and ``write``; the collective's own errors
        come from ``wait()``.

    Examples
    --------
    >>> import remat.distributed as dist
    >>> dist.init_process_group("mpi")
    >>> t = remat.tensor([1.0, 2.0])
    >>> work = dist.all_reduce(t, async_op=True)
    >>> work.wait()
    True
    >>> work.is_completed(), work.is_success(), work.exception()
    (True, True, None)
    >>> work.result() is t
    True
    >>> dist.destroy_process_group()
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
        """Whether the collective finished (successfully or not), without blocking.

        Returns
        -------
        bool
            True once the communication thread finished the collective (``wait()`` then
            returns or raises at once).

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> import remat.distributed as dist
        >>> dist.init_process_group("mpi")
        >>> t = remat.tensor([1.0, 2.0])
        >>> work = dist.all_reduce(t, async_op=True)
        >>> work.wait()
        True
        >>> work.is_completed()
        True
        >>> dist.destroy_process_group()
        """
        return self._event.is_set()

    def is_success(self) -> bool:
        """Whether it finished without an error.

        Returns
        -------
        bool
            True when the collective finished and did not fail; False while it runs or
            after it failed.

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> import remat.distributed as dist
        >>> dist.init_process_group("mpi")
        >>> work = dist.GroupMember.WORLD.submit("fails", None, lambda backend, d: 1 / 0)
        >>> try:
        ...     work.wait()
        ... except ZeroDivisionError:
        ...     pass
        >>> work.is_completed(), work.is_success()
        (True, False)
        >>> dist.destroy_process_group()
        """
        return self._event.is_set() and self._error is None

    def exception(self) -> BaseException | None:
        """The collective's error, once finished; None otherwise.

        Returns
        -------
        BaseException or None
            What the collective raised (what ``wait()`` raises), or None while it runs or
            when it succeeded.

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> import remat.distributed as dist
        >>> dist.init_process_group("mpi")
        >>> work = dist.GroupMember.WORLD.submit("fails", None, lambda backend, d: 1 / 0)
        >>> try:
        ...     work.wait()
        ... except ZeroDivisionError:
        ...     pass
        >>> work.exception()
        ZeroDivisionError('division by zero')
        >>> dist.destroy_process_group()
        """
        return self._error if self._event.is_set() else None

    def wait(self, timeout: Any = None) -> bool:
        """Block until the collective finished, then write its results; True on success.

        The group's own timeout bounds the wait (the communication thread gives up on a
        collective that no other rank joins); ``timeout`` (seconds or a ``timedelta``)
        bounds it further and raises ``DistBackendError`` when it passes first. The results
        are written into the output tensors once, by the first call that returns.

        Parameters
        ----------
        timeout : timedelta or float, optional
            The longest this call waits, in seconds. Default: ``None`` (until the
            collective finishes).

        Returns
        -------
        bool
            True: the collective succeeded and its results are in the output tensors.

        Raises
        ------
        DistBackendError
            When ``timeout`` passes before the collective finished (it goes on running), or
            the collective failed so: a timeout waiting for the other ranks, a destroyed or
            broken group, ranks that called different collectives.
        ShapeError, DTypeError
            When the ranks' tensors differ in shape or dtype; any other error the
            collective raised is raised here too, on every call.
        TypeError, ValueError
            When ``timeout`` is neither a number nor a ``timedelta``.

        Examples
        --------
        >>> import remat.distributed as dist
        >>> from datetime import timedelta
        >>> dist.init_process_group("mpi")
        >>> t = remat.tensor([1.0, 2.0])
        >>> work = dist.all_reduce(t, async_op=True)
        >>> work.wait(timeout=timedelta(seconds=60))
        True
        >>> t
        tensor([1., 2.])
        >>> dist.destroy_process_group()
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
        """What the collective produced (after ``wait()``): its output tensors.

        Returns
        -------
        object
            The output tensor (``all_reduce``'s ``tensor``, ``broadcast``'s, ...), the
            output list for ``all_gather``, None for ``barrier``.

        Raises
        ------
        DistBackendError
            As ``wait()``, which it calls first: the collective's error is raised here.

        Examples
        --------
        >>> import remat.distributed as dist
        >>> dist.init_process_group("mpi")
        >>> out = [remat.zeros(2)]
        >>> dist.all_gather(out, remat.tensor([1.0, 2.0]), async_op=True).result()
        [tensor([1., 2.])]
        >>> dist.destroy_process_group()
        """
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
