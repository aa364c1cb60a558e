"""Learning-rate schedules with ``torch.optim.lr_scheduler``'s names, arguments and
formulas. Each ``step()`` sets ``group["lr"]`` of its optimizer's parameter groups.

As in PyTorch, most schedules are *chainable*: a step scales the group's current
``"lr"`` (whatever set it, e.g. another scheduler stepped on the same optimizer), so several
schedulers compose. From a fresh start, alone, they follow these closed forms (``base`` is the
group's ``initial_lr``, ``epoch`` the step count ``last_epoch``):

- ``StepLR``: ``base · gamma^(epoch // step_size)`` (``lr · gamma`` every ``step_size``)
- ``MultiStepLR``: ``base · gamma^(number of milestones <= epoch)``
- ``ExponentialLR``: ``base · gamma^epoch`` (``lr · gamma`` each step)
- ``CosineAnnealingLR``: ``eta_min + (base - eta_min)(1 + cos(π · epoch / T_max)) / 2``,
  reached by PyTorch's recursive form
- ``LinearLR``: ``base · (start + (end - start) · min(epoch, total_iters) / total_iters)``,
  reached by ratios of successive factors
- ``ConstantLR``: ``base · factor`` before ``total_iters``, ``base`` after

``LambdaLR`` (``base · lr_lambda(epoch)``) and ``OneCycleLR`` (PyTorch's two- or three-phase
cosine/linear cycle, cycling momentum or Adam's beta1 inversely) are not chainable: they
set the rate from their own formula. ``SequentialLR`` hands over from one scheduler to the
next at ``milestones``; ``ChainedScheduler`` steps several at once. The recursive forms are
PyTorch's, so the rates equal PyTorch's to the last bit, alone or chained.
``step(epoch)`` jumps to ``epoch`` through the closed form.

As in PyTorch, constructing a scheduler takes its first step (epoch 0), and ``step()`` is
called after ``optimizer.step()``.
"""

from __future__ import annotations

import bisect
import math
import types
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from .optimizers import Optimizer

__all__ = [
    "LRScheduler", "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR", "LambdaLR",
    "LinearLR", "ConstantLR", "OneCycleLR", "SequentialLR", "ChainedScheduler",
]


def _check_optimizer(owner: str, optimizer: Any) -> None:
    if not isinstance(optimizer, Optimizer):
        raise TypeError(f"{owner}: {type(optimizer).__name__} is not an Optimizer")


class LRScheduler:
    """Base class: subclasses define :meth:`get_lr` (the rates of the next step, usually
    from the groups' current ``"lr"``) and/or :meth:`_lr_at` (the closed form).

    ``_lr_at(base_lr, group_index, epoch)`` returns a group's learning rate at ``epoch``
    from its base rate (the group's ``"initial_lr"``, set from ``"lr"`` on a fresh start);
    a subclass that defines only it is not chainable (:meth:`get_lr` then uses it).
    Construction takes the first step (epoch 0); call :meth:`step` after each
    ``optimizer.step()``.

    Parameters
    ----------
    optimizer : Optimizer
        The optimizer whose groups' ``"lr"`` is set.
    last_epoch : int, optional
        The index of the last epoch when resuming (the groups must then hold
        ``"initial_lr"``); -1 starts afresh. Construction takes one step, to
        ``last_epoch + 1``. Default: ``-1``.

    Raises
    ------
    TypeError
        When ``optimizer`` is not an ``Optimizer``.
    KeyError
        When resuming (``last_epoch != -1``) and a group has no ``"initial_lr"``.
    NotImplementedError
        When the class defines neither ``get_lr`` nor ``_lr_at`` (the base class itself).

    Examples
    --------
    >>> from remat.optim.lr_scheduler import LRScheduler
    >>> class Halving(LRScheduler):
    ...     def _lr_at(self, base_lr, group_index, epoch):
    ...         return base_lr / 2**epoch
    >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=0.1)
    >>> sched = Halving(opt)
    >>> sched.step()
    >>> sched.get_last_lr(), opt.param_groups[0]["lr"]
    ([0.05], 0.05)
    """

    _keep_out: tuple = ("optimizer",)

    def __init__(self, optimizer: Optimizer, last_epoch: int = -1) -> None:
        _check_optimizer(type(self).__name__, optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError(
                        f"param 'initial_lr' is not specified in param_groups[{i}] when "
                        "resuming an optimizer"
                    )
        self.base_lrs: list[float] = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_epoch = last_epoch
        self._initial_step()

    def _initial_step(self) -> None:
        """Reset the step count and take the first step, in "initial" mode (in which the
        chainable forms leave the rates as they are, as PyTorch's do)."""
        self._step_count = 0
        self._is_initial = True
        try:
            self.step()
        finally:
            self._is_initial = False

    def _lr_at(self, base_lr: float, group_index: int, epoch: int) -> float:
        raise NotImplementedError

    def _get_closed_form_lr(self) -> list[float]:
        """The rates at ``last_epoch`` from the closed form :meth:`_lr_at` (what
        ``step(epoch)`` uses); a class without one uses :meth:`get_lr`."""
        if type(self)._lr_at is LRScheduler._lr_at:
            return self.get_lr()
        return [self._lr_at(b, i, self.last_epoch) for i, b in enumerate(self.base_lrs)]

    def _group_lrs(self) -> list[float]:
        return [g["lr"] for g in self.optimizer.param_groups]

    def get_lr(self) -> list[float]:
        """The learning rates of the step just taken (``last_epoch``), as :meth:`step`
        computes them.

        A chainable scheduler computes them from the groups' current ``"lr"`` (so called
        outside :meth:`step` it gives the rates one more step would set, and warns, as
        PyTorch does); a closed-form one from its formula. It does not change the
        optimizer. To read the current rates use :meth:`get_last_lr`.

        Returns
        -------
        list of float
            One learning rate per parameter group.

        Raises
        ------
        NotImplementedError
            When the class defines no formula (the base class).

        Examples
        --------
        >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=0.1)
        >>> sched = remat.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
        >>> sched.get_last_lr()
        [0.1]
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     sched.get_lr()  # what the next step sets: the current lr times gamma
        [0.05]
        """
        self._warn_outside_step()
        return [self._lr_at(b, i, self.last_epoch) for i, b in enumerate(self.base_lrs)]

    def _warn_outside_step(self) -> None:
        if not self.__dict__.get("_get_lr_called_within_step", False):
            warnings.warn(
                "To get the last learning rate computed by the scheduler, please use "
                "`get_last_lr()`.",
                UserWarning,
                stacklevel=3,
            )

    def get_last_lr(self) -> list[float]:
        """The learning rates the last :meth:`step` set.

        Returns
        -------
        list of float
            One learning rate per parameter group (a copy).

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=0.1)
        >>> sched = remat.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
        >>> sched.get_last_lr()
        [0.1]
        >>> opt.step()
        >>> sched.step()
        >>> sched.get_last_lr()
        [0.05]
        """
        return list(self._last_lr)

    def step(self, epoch: int | None = None) -> None:
        """Advance one step (or jump to ``epoch``) and set the groups' learning rates.

        Call it after ``optimizer.step()``. A chainable scheduler scales the groups'
        current rates, so schedulers stepped together compose.

        Parameters
        ----------
        epoch : int, optional
            Jump to this epoch instead of the next one (taken with ``int()``), with the
            closed form (deprecated in PyTorch). Default: ``None``.

        Returns
        -------
        None

        Raises
        ------
        ValueError
            When ``int(epoch)`` fails (a string such as ``"x"``); ``OneCycleLR`` also when
            stepping past ``total_steps``.

        Examples
        --------
        >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=0.1)
        >>> sched = remat.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        >>> lrs = []
        >>> for _ in range(5):
        ...     opt.step()
        ...     sched.step()
        ...     lrs.append(opt.param_groups[0]["lr"])
        >>> lrs
        [0.1, 0.05, 0.05, 0.025, 0.025]
        >>> sched.step(10)
        >>> sched.get_last_lr()
        [0.003125]
        """
        self._step_count += 1
        self._update_lr(epoch)

    def _update_lr(self, epoch: int | None = None) -> None:
        """Advance ``last_epoch`` (or set it to ``epoch``, using the closed form) and write
        the new rates into the groups."""
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                self.last_epoch = int(epoch)
                values = self._get_closed_form_lr()
        finally:
            self._get_lr_called_within_step = False
        for group, lr in zip(self.optimizer.param_groups, values):
            group["lr"] = lr
        self._last_lr = self._group_lrs()

    def state_dict(self) -> dict:
        """Everything but the optimizer (and callables), for :meth:`load_state_dict`.

        Returns
        -------
        dict
            The scheduler's attributes (``last_epoch``, ``base_lrs``, its
            hyperparameters ...), without the optimizer.

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=0.1)
        >>> sched = remat.optim.lr_scheduler.StepLR(opt, step_size=2)
        >>> sched.state_dict()
        {'step_size': 2, 'gamma': 0.1, 'base_lrs': [0.1], 'last_epoch': 0, '_step_count': 1,
         '_is_initial': False, '_get_lr_called_within_step': False, '_last_lr': [0.1]}
        """
        return {k: v for k, v in self.__dict__.items() if k not in self._keep_out}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what :meth:`state_dict` returned.

        The attributes are set as saved; the optimizer's learning rates change at the next
        :meth:`step`.

        Parameters
        ----------
        state_dict : dict
            What :meth:`state_dict` returned.

        Returns
        -------
        None

        Raises
        ------
        TypeError
            When ``state_dict`` is not a mapping.

        Examples
        --------
        >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=0.1)
        >>> sched = remat.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        >>> for _ in range(3):
        ...     sched.step()
        >>> sd = sched.state_dict()
        >>> other = remat.optim.lr_scheduler.StepLR(opt, step_size=5)
        >>> other.load_state_dict(sd)
        >>> other.last_epoch, other.step_size, other.get_last_lr()
        (3, 2, [0.05])
        """
        self.__dict__.update(state_dict)


class StepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every ``step_size`` epochs.

    Chainable: at each multiple of ``step_size`` the group's current ``"lr"`` is multiplied
    by ``gamma``; alone, ``lr = base_lr * gamma ** (epoch // step_size)``.

    Parameters
    ----------
    optimizer : Optimizer
        The optimizer whose groups' ``"lr"`` is set.
    step_size : int
        Epochs between two decays (a positive int).
    gamma : float, optional
        The decay factor. Default: ``0.1``.
    last_epoch : int, optional
        The index of the last epoch when resuming (the groups must then hold
        ``"initial_lr"``); -1 starts afresh. Construction takes one step, to
        ``last_epoch + 1``. Default: ``-1``.

    Raises
    ------
    ValueError
        When ``step_size`` is not a positive int.
    TypeError
        When ``optimizer`` is not an ``Optimizer``.
    KeyError
        When resuming (``last_epoch != -1``) and a group has no ``"initial_lr"``.

    Examples
    --------
    >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=0.1)
    >>> sched = remat.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
    >>> lrs = []
    >>> for _ in range(5):
    ...     lrs.append(sched.get_last_lr()[0])
    ...     opt.step()
    ...     sched.step()
    >>> lrs
    [0.1, 0.1, 0.05, 0.05, 0.025]
    """

    def __init__(self, optimizer: Optimizer, step_size: int, gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        if isinstance(step_size, bool) or not isinstance(step_size, int) or step_size <= 0:
            raise ValueError(f"StepLR: step_size must be a positive int, got {step_size!r}")
        self.step_size, self.gamma = step_size, float(gamma)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The groups' current rates, times ``gamma`` when ``last_epoch`` is a non-zero
        multiple of ``step_size`` (PyTorch's chainable form).

        Returns
        -------
        list of float
            One learning rate per parameter group.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=0.1)
        >>> sched = remat.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
        >>> opt.param_groups[0]["lr"] = 0.3  # changed by hand: the next step scales it
        >>> sched.step()
        >>> sched.get_last_lr()
        [0.15]
        """
        self._warn_outside_step()
        if self.last_epoch == 0 or self.last_epoch % self.step_size != 0:
            return self._group_lrs()
        return [lr * self.gamma for lr in self._group_lrs()]

    def _lr_at(self, base_lr: float, group_index: int, epoch: int) -> float:
        return base_lr * self.gamma ** (epoch // self.step_size)


class MultiStepLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` at each milestone (repeats count twice).

    Chainable: at a milestone listed ``n`` times the group's current ``"lr"`` is multiplied
    by ``gamma ** n``; alone, ``lr = base_lr * gamma ** (number of milestones <= epoch)``.

    Parameters
    ----------
    optimizer : Optimizer
        The optimizer whose groups' ``"lr"`` is set.
    milestones : iterable of int
        The epochs at which to decay (kept as a ``collections.Counter``, as PyTorch).
    gamma : float, optional
        The decay factor. Default: ``0.1``.
    last_epoch : int, optional
        The index of the last epoch when resuming (the groups must then hold
        ``"initial_lr"``); -1 starts afresh. Construction takes one step, to
        ``last_epoch + 1``. Default: ``-1``.

    Raises
    ------
    ValueError
        When a milestone or ``gamma`` is not a number (``int()`` / ``float()`` fail).
    TypeError
        When ``milestones`` is not iterable, or ``optimizer`` is not an ``Optimizer``.
    KeyError
        When resuming (``last_epoch != -1``) and a group has no ``"initial_lr"``.

    Examples
    --------
    >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=1.0)
    >>> sched = remat.optim.lr_scheduler.MultiStepLR(opt, milestones=[1, 3], gamma=0.1)
    >>> lrs = []
    >>> for _ in range(5):
    ...     lrs.append(sched.get_last_lr()[0])
    ...     sched.step()
    >>> [round(lr, 6) for lr in lrs]
    [1.0, 0.1, 0.1, 0.01, 0.01]
    """

    def __init__(self, optimizer: Optimizer, milestones: Sequence[int], gamma: float = 0.1,
                 last_epoch: int = -1) -> None:
        self.milestones = Counter(int(m) for m in milestones)
        self.gamma = float(gamma)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The groups' current rates, times ``gamma ** n`` when ``last_epoch`` is a milestone
        listed ``n`` times (PyTorch's chainable form).

        Returns
        -------
        list of float
            One learning rate per parameter group.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=1.0)
        >>> sched = remat.optim.lr_scheduler.MultiStepLR(opt, milestones=[1, 1], gamma=0.5)
        >>> sched.step()
        >>> sched.get_last_lr()
        [0.25]
        """
        self._warn_outside_step()
        n = self.milestones.get(self.last_epoch, 0)
        if not n:
            return self._group_lrs()
        return [lr * self.gamma**n for lr in self._group_lrs()]

    def _lr_at(self, base_lr: float, group_index: int, epoch: int) -> float:
        marks = sorted(Counter(self.milestones).elements())
        return base_lr * self.gamma ** bisect.bisect_right(marks, epoch)


class ExponentialLR(LRScheduler):
    """Multiply the learning rate by ``gamma`` every epoch.

    Chainable: each step multiplies the group's current ``"lr"`` by ``gamma``; alone,
    ``lr = base_lr * gamma ** epoch``.

    Parameters
    ----------
    optimizer : Optimizer
        The optimizer whose groups' ``"lr"`` is set.
    gamma : float
        The decay factor per epoch.
    last_epoch : int, optional
        The index of the last epoch when resuming (the groups must then hold
        ``"initial_lr"``); -1 starts afresh. Construction takes one step, to
        ``last_epoch + 1``. Default: ``-1``.

    Raises
    ------
    ValueError
        When ``gamma`` is not a number.
    TypeError
        When ``optimizer`` is not an ``Optimizer``.
    KeyError
        When resuming (``last_epoch != -1``) and a group has no ``"initial_lr"``.

    Examples
    --------
    >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=0.1)
    >>> sched = remat.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
    >>> sched.step()
    >>> sched.step()
    >>> sched.get_last_lr()
    [0.025]
    """

    def __init__(self, optimizer: Optimizer, gamma: float, last_epoch: int = -1) -> None:
        self.gamma = float(gamma)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The groups' current rates times ``gamma`` (unchanged on the first step), PyTorch's
        chainable form.

        Returns
        -------
        list of float
            One learning rate per parameter group.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=0.1)
        >>> sched = remat.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
        >>> sched.step()
        >>> sched.get_last_lr()
        [0.05]
        """
        self._warn_outside_step()
        if self._is_initial:
            return self._group_lrs()
        return [lr * self.gamma for lr in self._group_lrs()]

    def _lr_at(self, base_lr: float, group_index: int, epoch: int) -> float:
        return base_lr * self.gamma**epoch


class CosineAnnealingLR(LRScheduler):
    """Cosine from the base learning rate down to ``eta_min`` over ``T_max`` epochs.

    Alone, ``lr = eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / T_max)) / 2`` (past
    ``T_max`` it rises again, as a cosine does). Each step computes it, as PyTorch does,
    recursively from the group's current ``"lr"``:
    ``eta_min + (lr - eta_min) * (1 + cos(pi * e / T_max)) / (1 + cos(pi * (e - 1) / T_max))``
    (at the restart points ``lr + (base_lr - eta_min) * (1 - cos(pi / T_max)) / 2``), so it
    composes with other schedulers and gives PyTorch's numbers exactly.

    Parameters
    ----------
    optimizer : Optimizer
        The optimizer whose groups' ``"lr"`` is set.
    T_max : int
        Epochs of the descent (a positive int).
    eta_min : float, optional
        The learning rate at ``T_max``. Default: ``0.0``.
    last_epoch : int, optional
        The index of the last epoch when resuming (the groups must then hold
        ``"initial_lr"``); -1 starts afresh. Construction takes one step, to
        ``last_epoch + 1``. Default: ``-1``.

    Raises
    ------
    ValueError
        When ``T_max`` is not a positive int.
    TypeError
        When ``optimizer`` is not an ``Optimizer``.
    KeyError
        When resuming (``last_epoch != -1``) and a group has no ``"initial_lr"``.

    Examples
    --------
    >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=0.1)
    >>> sched = remat.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4)
    >>> lrs = []
    >>> for _ in range(5):
    ...     lrs.append(round(sched.get_last_lr()[0], 6))
    ...     sched.step()
    >>> lrs
    [0.1, 0.085355, 0.05, 0.014645, 0.0]
    """

    def __init__(self, optimizer: Optimizer, T_max: int, eta_min: float = 0.0,  # noqa: N803
                 last_epoch: int = -1) -> None:
        if isinstance(T_max, bool) or not isinstance(T_max, int) or T_max <= 0:
            raise ValueError(f"CosineAnnealingLR: T_max must be a positive int, got {T_max!r}")
        self.T_max, self.eta_min = T_max, float(eta_min)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The next rates by PyTorch's recursive cosine form, from the groups' current
        ``"lr"`` (see the class docstring).

        Returns
        -------
        list of float
            One learning rate per parameter group.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=1.0)
        >>> sched = remat.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=2)
        >>> sched.step()
        >>> [round(lr, 6) for lr in sched.get_last_lr()]
        [0.5]
        """
        self._warn_outside_step()
        e, t, eta = self.last_epoch, self.T_max, self.eta_min
        groups = self._group_lrs()
        if self._is_initial:
            return groups
        if self._step_count == 1 and e > 0:
            return [eta + (b - eta) * (1 + math.cos(e * math.pi / t)) / 2 for b in self.base_lrs]
        if (e - 1 - t) % (2 * t) == 0:
            return [lr + (b - eta) * (1 - math.cos(math.pi / t)) / 2
                    for b, lr in zip(self.base_lrs, groups)]
        return [
            (1 + math.cos(math.pi * e / t)) / (1 + math.cos(math.pi * (e - 1) / t)) * (lr - eta)
            + eta
            for lr in groups
        ]

    def _lr_at(self, base_lr: float, group_index: int, epoch: int) -> float:
        cos = math.cos(math.pi * epoch / self.T_max)
        return self.eta_min + (base_lr - self.eta_min) * (1 + cos) / 2


class LambdaLR(LRScheduler):
    """The base learning rate times ``lr_lambda(epoch)`` (one function, or one per group).

    Not chainable (as in PyTorch): each step sets ``base_lr * lr_lambda(epoch)``, whatever
    the group's rate was.

    Parameters
    ----------
    optimizer : Optimizer
        The optimizer whose groups' ``"lr"`` is set.
    lr_lambda : callable or sequence of callable
        ``epoch -> factor``: one for every group, or one per group.
    last_epoch : int, optional
        The index of the last epoch when resuming (the groups must then hold
        ``"initial_lr"``); -1 starts afresh. Construction takes one step, to
        ``last_epoch + 1``. Default: ``-1``.

    Raises
    ------
    ValueError
        When a sequence of functions does not have one per group.
    TypeError
        When ``optimizer`` is not an ``Optimizer``.
    KeyError
        When resuming (``last_epoch != -1``) and a group has no ``"initial_lr"``.

    Examples
    --------
    >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=0.1)
    >>> sched = remat.optim.lr_scheduler.LambdaLR(opt, lambda epoch: 1 / (epoch + 1))
    >>> sched.step()
    >>> sched.get_last_lr()
    [0.05]
    """

    _keep_out = ("optimizer", "lr_lambdas")

    def __init__(self, optimizer: Optimizer,
                 lr_lambda: Callable[[int], float] | Sequence[Callable[[int], float]],
                 last_epoch: int = -1) -> None:
        _check_optimizer("LambdaLR", optimizer)
        n = len(optimizer.param_groups)
        if callable(lr_lambda):
            self.lr_lambdas = [lr_lambda] * n
        else:
            fns = list(lr_lambda)
            if len(fns) != n:
                raise ValueError(f"Expected {n} lr_lambdas, but got {len(fns)}")
            self.lr_lambdas = fns
        super().__init__(optimizer, last_epoch)

    def _lr_at(self, base_lr: float, group_index: int, epoch: int) -> float:
        return base_lr * self.lr_lambdas[group_index](epoch)

    def state_dict(self) -> dict:
        """The scheduler's state; ``"lr_lambdas"`` holds, per group, the ``__dict__`` of a
        callable object, or None for a plain function (functions are never saved).

        Returns
        -------
        dict
            As :meth:`LRScheduler.state_dict`, plus ``"lr_lambdas"``.

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> class Warmup:
        ...     def __init__(self, n):
        ...         self.n = n
        ...     def __call__(self, epoch):
        ...         return min(1.0, (epoch + 1) / self.n)
        >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=1.0)
        >>> sched = remat.optim.lr_scheduler.LambdaLR(opt, Warmup(4))
        >>> sched.state_dict()["lr_lambdas"]
        [{'n': 4}]
        """
        state = super().state_dict()
        # As PyTorch: only callable objects' attributes are saved, never functions.
        state["lr_lambdas"] = [
            None if isinstance(f, (types.FunctionType, types.BuiltinFunctionType))
            else dict(f.__dict__) for f in self.lr_lambdas
        ]
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what :meth:`state_dict` returned; the saved attributes of callable
        objects are set back on this scheduler's ``lr_lambda`` objects.

        Parameters
        ----------
        state_dict : dict
            What :meth:`state_dict` returned.

        Returns
        -------
        None

        Raises
        ------
        TypeError
            When ``state_dict`` is not a mapping.

        Examples
        --------
        >>> class Warmup:
        ...     def __init__(self, n):
        ...         self.n = n
        ...     def __call__(self, epoch):
        ...         return min(1.0, (epoch + 1) / self.n)
        >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=1.0)
        >>> sd = remat.optim.lr_scheduler.LambdaLR(opt, Warmup(4)).state_dict()
        >>> fn = Warmup(100)
        >>> remat.optim.lr_scheduler.LambdaLR(opt, fn).load_state_dict(sd)
        >>> fn.n
        4
        """
        state = dict(state_dict)
        lambdas = state.pop("lr_lambdas", [])
        super().load_state_dict(state)
        for f, saved in zip(self.lr_lambdas, lambdas):
            if saved is not None:
                f.__dict__.update(saved)


class LinearLR(LRScheduler):
    """Scale the base learning rate linearly from ``start_factor`` to ``end_factor`` over
    ``total_iters`` epochs, then keep ``end_factor``.

    Chainable, as in PyTorch: the first step multiplies the group's ``"lr"`` by
    ``start_factor``, each later one (up to ``total_iters``) by the ratio of successive
    factors, ``1 + (end - start) / (total_iters * start + (epoch - 1) * (end - start))``.

    Parameters
    ----------
    optimizer : Optimizer
        The optimizer whose groups' ``"lr"`` is set.
    start_factor : float, optional
        The factor at epoch 0, in (0, 1]. Default: ``1/3``.
    end_factor : float, optional
        The factor from ``total_iters`` on, in [0, 1]. Default: ``1.0``.
    total_iters : int, optional
        Epochs of the ramp. Default: ``5``.
    last_epoch : int, optional
        The index of the last epoch when resuming (the groups must then hold
        ``"initial_lr"``); -1 starts afresh. Construction takes one step, to
        ``last_epoch + 1``. Default: ``-1``.

    Raises
    ------
    ValueError
        When ``start_factor`` is not in (0, 1] or ``end_factor`` not in [0, 1].
    TypeError
        When ``optimizer`` is not an ``Optimizer``.
    KeyError
        When resuming (``last_epoch != -1``) and a group has no ``"initial_lr"``.

    Examples
    --------
    >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=0.1)
    >>> sched = remat.optim.lr_scheduler.LinearLR(opt, start_factor=0.5, total_iters=2)
    >>> lrs = []
    >>> for _ in range(4):
    ...     lrs.append(round(sched.get_last_lr()[0], 6))
    ...     sched.step()
    >>> lrs
    [0.05, 0.075, 0.1, 0.1]
    """

    def __init__(self, optimizer: Optimizer, start_factor: float = 1.0 / 3,
                 end_factor: float = 1.0, total_iters: int = 5, last_epoch: int = -1) -> None:
        if not 0 < start_factor <= 1:
            raise ValueError(
                "Starting multiplicative factor expected to be greater than 0 and less or "
                f"equal to 1, got {start_factor}"
            )
        if not 0 <= end_factor <= 1:
            raise ValueError(
                "Ending multiplicative factor expected to be between 0 and 1, got "
                f"{end_factor}"
            )
        self.start_factor, self.end_factor = float(start_factor), float(end_factor)
        self.total_iters = int(total_iters)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The groups' current rates times the ratio of successive factors (``start_factor``
        on epoch 0), PyTorch's chainable form.

        Returns
        -------
        list of float
            One learning rate per parameter group.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=1.0)
        >>> sched = remat.optim.lr_scheduler.LinearLR(opt, start_factor=0.5, total_iters=2)
        >>> sched.step()
        >>> sched.get_last_lr()
        [0.75]
        """
        self._warn_outside_step()
        groups = self._group_lrs()
        if self.last_epoch == 0:
            return [lr * self.start_factor for lr in groups]
        if self._is_initial or self.last_epoch > self.total_iters:
            return groups
        delta = self.end_factor - self.start_factor
        ratio = 1.0 + delta / (self.total_iters * self.start_factor
                               + (self.last_epoch - 1) * delta)
        return [lr * ratio for lr in groups]

    def _lr_at(self, base_lr: float, group_index: int, epoch: int) -> float:
        frac = min(self.total_iters, epoch) / self.total_iters if self.total_iters else 1.0
        return base_lr * (self.start_factor + (self.end_factor - self.start_factor) * frac)


class ConstantLR(LRScheduler):
    """The base learning rate times ``factor`` until ``total_iters``, then the base.

    Chainable, as in PyTorch: the first step multiplies the group's ``"lr"`` by ``factor``,
    the step at ``total_iters`` divides it by ``factor`` again.

    Parameters
    ----------
    optimizer : Optimizer
        The optimizer whose groups' ``"lr"`` is set.
    factor : float, optional
        The factor before ``total_iters``, in [0, 1]. Default: ``1/3``.
    total_iters : int, optional
        Epochs with the factor. Default: ``5``.
    last_epoch : int, optional
        The index of the last epoch when resuming (the groups must then hold
        ``"initial_lr"``); -1 starts afresh. Construction takes one step, to
        ``last_epoch + 1``. Default: ``-1``.

    Raises
    ------
    ValueError
        When ``factor`` is not in [0, 1].
    TypeError
        When ``optimizer`` is not an ``Optimizer``.
    KeyError
        When resuming (``last_epoch != -1``) and a group has no ``"initial_lr"``.

    Examples
    --------
    >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=0.1)
    >>> sched = remat.optim.lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=2)
    >>> lrs = []
    >>> for _ in range(4):
    ...     lrs.append(sched.get_last_lr()[0])
    ...     sched.step()
    >>> lrs
    [0.05, 0.05, 0.1, 0.1]
    """

    def __init__(self, optimizer: Optimizer, factor: float = 1.0 / 3, total_iters: int = 5,
                 last_epoch: int = -1) -> None:
        if not 0 <= factor <= 1:
            raise ValueError(
                f"Constant multiplicative factor expected to be between 0 and 1, got {factor}"
            )
        self.factor, self.total_iters = float(factor), int(total_iters)
        super().__init__(optimizer, last_epoch)

    def get_lr(self) -> list[float]:
        """The groups' current rates times ``factor`` on epoch 0, times ``1 / factor`` at
        ``total_iters``, unchanged otherwise (PyTorch's chainable form).

        Returns
        -------
        list of float
            One learning rate per parameter group.

        Raises
        ------
        None
            Nothing is raised.

        Examples
        --------
        >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=0.1)
        >>> sched = remat.optim.lr_scheduler.ConstantLR(opt, factor=0.5, total_iters=1)
        >>> sched.get_last_lr()
        [0.05]
        >>> sched.step()
        >>> sched.get_last_lr()
        [0.1]
        """
        self._warn_outside_step()
        groups = self._group_lrs()
        if self.last_epoch == 0:
            return [lr * self.factor for lr in groups]
        if self.last_epoch != self.total_iters:
            return groups
        if self.factor == 0:  # PyTorch divides by zero here; the closed form is the base
            return self._get_closed_form_lr()
        return [lr * (1.0 / self.factor) for lr in groups]

    def _lr_at(self, base_lr: float, group_index: int, epoch: int) -> float:
        return base_lr * (self.factor if epoch < self.total_iters else 1.0)


class OneCycleLR(LRScheduler):
    """PyTorch's 1cycle policy: from ``max_lr / div_factor`` up to ``max_lr`` over
    ``pct_start`` of ``total_steps``, then down to ``initial_lr / final_div_factor``
    (``three_phase``: back to the initial rate first), annealing by cosine or linearly, and
    cycling momentum (SGD) or beta1 (Adam) between ``max_momentum`` and ``base_momentum``
    the other way.

    Construction sets each group's ``initial_lr`` (``max_lr / div_factor``), ``max_lr``,
    ``min_lr`` and, with ``cycle_momentum``, its momentum (or beta1), ``max_momentum`` and
    ``base_momentum``. Step once per batch; stepping past ``total_steps`` raises.

    Parameters
    ----------
    optimizer : Optimizer
        The optimizer whose groups' ``"lr"`` is set.
    max_lr : float or sequence of float
        The peak learning rate (one, or one per group).
    total_steps : int, optional
        Steps in the cycle; or give ``epochs`` and ``steps_per_epoch``. Default: ``None``.
    epochs : int, optional
        With ``steps_per_epoch``: ``total_steps = epochs * steps_per_epoch``. Default:
        ``None``.
    steps_per_epoch : int, optional
        See ``epochs``. Default: ``None``.
    pct_start : float, optional
        Fraction of the cycle spent rising, in [0, 1]. Default: ``0.3``.
    anneal_strategy : {"cos", "linear"}, optional
        How each phase anneals. Default: ``"cos"``.
    cycle_momentum : bool, optional
        Cycle the momentum (SGD) or beta1 (Adam and friends). Default: ``True``.
    base_momentum : float or sequence of float, optional
        The momentum at the learning-rate peak. Default: ``0.85``.
    max_momentum : float or sequence of float, optional
        The momentum at the start and end. Default: ``0.95``.
    div_factor : float, optional
        ``initial_lr = max_lr / div_factor``. Default: ``25.0``.
    final_div_factor : float, optional
        ``min_lr = initial_lr / final_div_factor``. Default: ``1e4``.
    three_phase : bool, optional
        Rise, fall back to ``initial_lr``, then anneal to ``min_lr``. Default: ``False``.
    last_epoch : int, optional
        The index of the last epoch when resuming (the groups must then hold
        ``"initial_lr"``); -1 starts afresh. Construction takes one step, to
        ``last_epoch + 1``. Default: ``-1``.

    Raises
    ------
    ValueError
        When neither ``total_steps`` nor both ``epochs`` and ``steps_per_epoch`` are given
        (or they are not positive), ``pct_start`` is outside [0, 1], ``anneal_strategy``
        is unknown, a per-group sequence has the wrong length, or ``cycle_momentum`` is
        set for an optimizer with neither momentum nor betas.
    TypeError
        When ``optimizer`` is not an ``Optimizer``.
    KeyError
        When resuming (``last_epoch != -1``) and a group has no ``"initial_lr"``.

    Examples
    --------
    >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=0.1,
    ...                       momentum=0.9)
    >>> sched = remat.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=10)
    >>> lrs, moms = [], []
    >>> for _ in range(10):
    ...     lrs.append(round(sched.get_last_lr()[0], 4))
    ...     moms.append(round(opt.param_groups[0]["momentum"], 4))
    ...     opt.step()
    ...     if len(lrs) < 10:
    ...         sched.step()
    >>> lrs
    [0.04, 0.52, 1.0, 0.9505, 0.8117, 0.6113, 0.3887, 0.1883, 0.0495, 0.0]
    >>> moms[:3]
    [0.95, 0.9, 0.85]
    """

    def __init__(self, optimizer: Optimizer, max_lr: float | Sequence[float],
                 total_steps: int | None = None, epochs: int | None = None,
                 steps_per_epoch: int | None = None, pct_start: float = 0.3,
                 anneal_strategy: str = "cos", cycle_momentum: bool = True,
                 base_momentum: float | Sequence[float] = 0.85,
                 max_momentum: float | Sequence[float] = 0.95, div_factor: float = 25.0,
                 final_div_factor: float = 1e4, three_phase: bool = False,
                 last_epoch: int = -1) -> None:
        _check_optimizer("OneCycleLR", optimizer)
        if total_steps is not None:
            if total_steps <= 0 or not isinstance(total_steps, int):
                raise ValueError(f"Expected positive integer total_steps, but got {total_steps}")
            self.total_steps = total_steps
        elif epochs is not None and steps_per_epoch is not None:
            if epochs <= 0 or steps_per_epoch <= 0:
                raise ValueError(
                    f"Expected positive epochs and steps_per_epoch, got {epochs}, "
                    f"{steps_per_epoch}"
                )
            self.total_steps = epochs * steps_per_epoch
        else:
            raise ValueError("You must define either total_steps OR (epochs AND steps_per_epoch)")
        if not 0 <= pct_start <= 1:
            raise ValueError(f"Expected float between 0 and 1 pct_start, but got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError(
                f"anneal_strategy must be one of 'cos' or 'linear', instead got "
                f"{anneal_strategy}"
            )
        self.anneal_strategy = anneal_strategy
        t = self.total_steps
        if three_phase:
            self._phases = [
                (float(pct_start * t) - 1, "initial_lr", "max_lr", "max_momentum",
                 "base_momentum"),
                (float(2 * pct_start * t) - 2, "max_lr", "initial_lr", "base_momentum",
                 "max_momentum"),
                (t - 1, "initial_lr", "min_lr", "max_momentum", "max_momentum"),
            ]
        else:
            self._phases = [
                (float(pct_start * t) - 1, "initial_lr", "max_lr", "max_momentum",
                 "base_momentum"),
                (t - 1, "max_lr", "min_lr", "base_momentum", "max_momentum"),
            ]
        groups = optimizer.param_groups
        max_lrs = self._per_group("max_lr", max_lr, len(groups))
        if last_epoch == -1:
            for g, m in zip(groups, max_lrs):
                g["initial_lr"] = m / div_factor
                g["max_lr"] = m
                g["min_lr"] = g["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError(
                    "optimizer must support momentum or beta1 with `cycle_momentum` option "
                    "enabled"
                )
            self._use_beta1 = "betas" in optimizer.defaults
            maxs = self._per_group("max_momentum", max_momentum, len(groups))
            bases = self._per_group("base_momentum", base_momentum, len(groups))
            if last_epoch == -1:
                for g, mx, bs in zip(groups, maxs, bases):
                    self._set_momentum(g, mx)
                    g["max_momentum"], g["base_momentum"] = mx, bs
        super().__init__(optimizer, last_epoch)

    @staticmethod
    def _per_group(name: str, value: Any, n: int) -> list[float]:
        if isinstance(value, (list, tuple)):
            if len(value) != n:
                raise ValueError(f"expected {n} values for {name}, got {len(value)}")
            return [float(v) for v in value]
        return [float(value)] * n

    def _set_momentum(self, group: dict, m: float) -> None:
        if self._use_beta1:
            group["betas"] = (m, *group["betas"][1:])
        else:
            group["momentum"] = m

    def _anneal(self, start: float, end: float, pct: float) -> float:
        if self.anneal_strategy == "cos":
            return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)
        return (end - start) * pct + start

    def get_lr(self) -> list[float]:
        """The learning rates at ``last_epoch``; with ``cycle_momentum`` it also sets each
        group's momentum (or beta1) for that step.

        Returns
        -------
        list of float
            One learning rate per parameter group.

        Raises
        ------
        ValueError
            When ``last_epoch`` is past ``total_steps``.

        Examples
        --------
        >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=0.1)
        >>> sched = remat.optim.lr_scheduler.OneCycleLR(opt, max_lr=1.0, total_steps=4,
        ...                                             cycle_momentum=False)
        >>> import warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # called outside step(): PyTorch warns too
        ...     [round(lr, 4) for lr in sched.get_lr()]
        [0.04]
        """
        self._warn_outside_step()
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError(
                f"Tried to step {step} times. The specified number of total steps is "
                f"{self.total_steps}"
            )
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0.0
            for i, (end, lr0, lr1, m0, m1) in enumerate(self._phases):
                if step <= end or i == len(self._phases) - 1:
                    pct = (step - start) / (end - start) if end != start else 1.0
                    lrs.append(self._anneal(group[lr0], group[lr1], pct))
                    if self.cycle_momentum:
                        self._set_momentum(group, self._anneal(group[m0], group[m1], pct))
                    break
                start = end
        return lrs


class _SchedulerGroup(LRScheduler):
    """A scheduler made of inner schedulers (``SequentialLR``, ``ChainedScheduler``):
    their state dicts travel inside its own, under ``"_schedulers"``."""

    _schedulers: list[LRScheduler]

    def state_dict(self) -> dict:
        """The state, with each scheduler's state dict under ``"_schedulers"``.

        Returns
        -------
        dict
            ``_last_lr`` and the inner state dicts.

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> from remat.optim.lr_scheduler import ChainedScheduler, StepLR
        >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=0.1)
        >>> len(ChainedScheduler([StepLR(opt, 1), StepLR(opt, 2)]).state_dict()["_schedulers"])
        2
        """
        state = super().state_dict()
        state["_schedulers"] = [s.state_dict() for s in self._schedulers]
        return state

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore what :meth:`state_dict` returned, inner schedulers included.

        Parameters
        ----------
        state_dict : dict
            What :meth:`state_dict` returned.

        Returns
        -------
        None

        Raises
        ------
        TypeError
            When ``state_dict`` is not a mapping.

        Examples
        --------
        >>> from remat.optim.lr_scheduler import ChainedScheduler, StepLR
        >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=0.1)
        >>> a = ChainedScheduler([StepLR(opt, 1, 0.5)])
        >>> a.step()
        >>> b = ChainedScheduler([StepLR(opt, 1, 0.5)])
        >>> b.load_state_dict(a.state_dict())
        >>> b._schedulers[0].last_epoch
        1
        """
        state = dict(state_dict)
        subs = state.pop("_schedulers", [])
        super().load_state_dict(state)
        for s, sd in zip(self._schedulers, subs):
            s.load_state_dict(sd)


class SequentialLR(_SchedulerGroup):
    """Run ``schedulers[i]`` between ``milestones[i-1]`` and ``milestones[i]``; each takes
    over from its own epoch 0.

    As in PyTorch: construction resets the groups' learning rates to their
    ``initial_lr``, undoes the first step every scheduler took when it was built, and
    restarts the first one at its epoch 0; at a milestone the next scheduler is set to its
    epoch 0 by its closed form, and steps on from there (chainably, from the rate it found).
    It has no formula of its own (``get_lr`` raises ``NotImplementedError``).

    Parameters
    ----------
    optimizer : Optimizer
        The optimizer whose groups' ``"lr"`` is set.
    schedulers : sequence of LRScheduler
        The schedulers, all of ``optimizer``, in order.
    milestones : sequence of int
        The epochs at which the next scheduler takes over (one fewer than schedulers).
    last_epoch : int, optional
        The epoch before the first step (-1: a fresh start). Default: ``-1``.

    Raises
    ------
    ValueError
        When ``schedulers`` is empty, a scheduler belongs to another optimizer, or the
        number of milestones is not one fewer than the number of schedulers.
    TypeError
        When ``optimizer`` is not an ``Optimizer``.

    Examples
    --------
    >>> from remat.optim.lr_scheduler import ExponentialLR, LinearLR, SequentialLR
    >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=0.1)
    >>> warmup = LinearLR(opt, start_factor=0.1, total_iters=2)
    >>> decay = ExponentialLR(opt, gamma=0.5)
    >>> sched = SequentialLR(opt, [warmup, decay], milestones=[2])
    >>> lrs = []
    >>> for _ in range(6):
    ...     lrs.append(round(sched.get_last_lr()[0], 6))
    ...     opt.step()
    ...     sched.step()
    >>> lrs
    [0.01, 0.055, 0.1, 0.05, 0.025, 0.0125]
    """

    _keep_out = ("optimizer", "_schedulers")

    def __init__(self, optimizer: Optimizer, schedulers: Sequence[LRScheduler],
                 milestones: Sequence[int], last_epoch: int = -1) -> None:
        _check_optimizer("SequentialLR", optimizer)
        if len(schedulers) < 1:
            raise ValueError("SequentialLR expects at least one scheduler")
        for i, s in enumerate(schedulers):
            if s.optimizer is not optimizer:
                raise ValueError(
                    f"SequentialLR expects all schedulers to belong to the same optimizer, but "
                    f"got scheduler at index {i} with a different one"
                )
        if len(milestones) != len(schedulers) - 1:
            raise ValueError(
                "Sequential Schedulers expects number of schedulers provided to be one more "
                f"than the number of milestone points, but got number of schedulers "
                f"{len(schedulers)} and the number of milestones to be equal to "
                f"{len(milestones)}"
            )
        self._schedulers = list(schedulers)
        self._milestones = [int(m) for m in milestones]
        self.optimizer = optimizer
        self.last_epoch = last_epoch + 1
        for g in optimizer.param_groups:
            g["lr"] = g["initial_lr"]
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self._undo_initial_steps(self)
        # The scheduler of epoch 0 starts over, with its first (initial) step.
        idx = bisect.bisect_right(self._milestones, 0)
        self._schedulers[idx]._initial_step()
        self._last_lr = self._schedulers[idx].get_last_lr()

    @classmethod
    def _undo_initial_steps(cls, sched: Any) -> None:
        """Take back the step every (nested) scheduler took when it was built."""
        if hasattr(sched, "_schedulers"):
            for s in sched._schedulers:
                cls._undo_initial_steps(s)
        elif hasattr(sched, "last_epoch"):
            sched.last_epoch -= 1

    def get_lr(self) -> list[float]:
        """Not defined for ``SequentialLR`` (the active scheduler computes the rates).

        Returns
        -------
        list of float
            Never returns.

        Raises
        ------
        NotImplementedError
            Always; use :meth:`get_last_lr`.

        Examples
        --------
        >>> from remat.optim.lr_scheduler import ConstantLR, SequentialLR
        >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=0.1)
        >>> SequentialLR(opt, [ConstantLR(opt, factor=0.5)], milestones=[]).get_last_lr()
        [0.05]
        """
        raise NotImplementedError("SequentialLR has no learning-rate formula of its own")

    def step(self, epoch: int | None = None) -> None:
        """Advance one step: the scheduler whose span holds the new epoch steps (restarting
        at its epoch 0 on its milestone).

        Parameters
        ----------
        epoch : int, optional
            Accepted for the signature's sake and ignored: it always advances one step.
            Default: ``None``.

        Returns
        -------
        None

        Raises
        ------
        ValueError
            When the active scheduler raises (a ``OneCycleLR`` past its total steps).

        Examples
        --------
        >>> from remat.optim.lr_scheduler import ConstantLR, SequentialLR, StepLR
        >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=0.1)
        >>> sched = SequentialLR(opt, [ConstantLR(opt, factor=0.5), StepLR(opt, 1, 0.5)],
        ...                      milestones=[1])
        >>> sched.get_last_lr()
        [0.05]
        >>> sched.step()
        >>> sched.get_last_lr()
        [0.1]
        """
        self.last_epoch += 1
        idx = bisect.bisect_right(self._milestones, self.last_epoch)
        scheduler = self._schedulers[idx]
        if idx > 0 and self._milestones[idx - 1] == self.last_epoch:
            scheduler._update_lr(0)
        else:
            scheduler.step()
        self._last_lr = scheduler.get_last_lr()


class ChainedScheduler(_SchedulerGroup):
    """Step several schedulers of one optimizer together, as ``torch``'s
    ``ChainedScheduler``: each :meth:`step` steps every scheduler in order, so chainable
    ones compose (e.g. a ``ConstantLR`` warm-up times an ``ExponentialLR`` decay).

    Parameters
    ----------
    schedulers : sequence of LRScheduler
        The schedulers, all of the same optimizer, stepped in this order.
    optimizer : Optimizer, optional
        Their optimizer. Default: ``None`` (the first scheduler's).

    Raises
    ------
    ValueError
        When ``schedulers`` is empty or a scheduler belongs to another optimizer.
    TypeError
        When a scheduler has no ``optimizer``.

    Examples
    --------
    >>> from remat.optim.lr_scheduler import ChainedScheduler, ConstantLR, ExponentialLR
    >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=1.0)
    >>> sched = ChainedScheduler([ConstantLR(opt, factor=0.5, total_iters=2),
    ...                           ExponentialLR(opt, gamma=0.5)])
    >>> lrs = []
    >>> for _ in range(4):
    ...     lrs.append(sched.get_last_lr()[0])
    ...     opt.step()
    ...     sched.step()
    >>> lrs
    [0.5, 0.25, 0.25, 0.125]
    """

    _keep_out = ("optimizer", "_schedulers")

    def __init__(self, schedulers: Sequence[LRScheduler],
                 optimizer: Optimizer | None = None) -> None:
        if len(schedulers) < 1:
            raise ValueError(
                "ChainedScheduler expects at least one scheduler to be chained, but got no "
                "scheduler."
            )
        optimizer = optimizer or schedulers[0].optimizer
        for i, s in enumerate(schedulers):
            if not hasattr(s, "optimizer"):
                raise TypeError(f"ChainedScheduler at index {i} should have `optimizer` as its "
                                "attribute.")
            if s.optimizer is not optimizer:
                raise ValueError(
                    "ChainedScheduler expects all schedulers to belong to the same optimizer, "
                    f"but got scheduler {type(s).__name__} at index {i} with a different one"
                )
        self._schedulers = list(schedulers)
        self.optimizer = optimizer
        self._last_lr = [g["lr"] for g in self._schedulers[-1].optimizer.param_groups]

    def get_lr(self) -> list[float]:
        """Not defined for ``ChainedScheduler`` (its schedulers compute the rates).

        Returns
        -------
        list of float
            Never returns.

        Raises
        ------
        NotImplementedError
            Always; use :meth:`get_last_lr`.

        Examples
        --------
        >>> from remat.optim.lr_scheduler import ChainedScheduler, StepLR
        >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=0.1)
        >>> ChainedScheduler([StepLR(opt, 1)]).get_last_lr()
        [0.1]
        """
        raise NotImplementedError("ChainedScheduler has no learning-rate formula of its own")

    def step(self, epoch: int | None = None) -> None:
        """Step every scheduler once, in order.

        Parameters
        ----------
        epoch : int, optional
            Accepted for the signature's sake and ignored. Default: ``None``.

        Returns
        -------
        None

        Raises
        ------
        ValueError
            When a scheduler raises (a ``OneCycleLR`` past its total steps).

        Examples
        --------
        >>> from remat.optim.lr_scheduler import ChainedScheduler, ExponentialLR, StepLR
        >>> opt = remat.optim.SGD([remat.tensor([1.0], requires_grad=True)], lr=1.0)
        >>> sched = ChainedScheduler([StepLR(opt, 1, 0.5), ExponentialLR(opt, 0.5)])
        >>> sched.step()
        >>> sched.get_last_lr()
        [0.25]
        """
        for s in self._schedulers:
            s.step()
        self._last_lr = [g["lr"] for g in self._schedulers[-1].optimizer.param_groups]

