"""More adaptive optimizers in the style of ``torch.optim``: Adadelta, Adamax, NAdam and RAdam.

Each follows PyTorch's single-tensor update (its formulas, defaults, argument checks and state
names) with a few in-place engine ops per parameter, recording no graph. State is created on
a parameter's first step; ``state_dict`` / ``load_state_dict`` work as for the other
optimizers (the step count, and NAdam's ``mu_product``, saved as 0-d float32 tensors).
"""

from __future__ import annotations

from typing import Any
from collections.abc import Iterable

import numpy as np

import remat

from .. import _validate
from .._remat import Tensor
from .optimizers import Optimizer, check_betas

__all__ = ["Adadelta", "Adamax", "NAdam", "RAdam"]


def _lerp_(start: Tensor, end: Tensor, weight: float) -> None:
    """``start.lerp_(end, weight)`` in place, rounded as PyTorch's kernel rounds it: from the
    nearer end (``start + w * (end - start)`` below one half, else
    ``end - (1 - w) * (end - start)``)."""
    if abs(weight) < 0.5:
        start.add_(end - start, alpha=weight)
    else:
        start.copy_(end - (end - start) * (1 - weight))


def _check_common(opt: Optimizer, group: dict) -> str:
    name = type(opt).__name__
    _validate.nonnegative(name, "eps", group["eps"])
    _validate.nonnegative(name, "weight_decay", group["weight_decay"])
    return name


def _decay(p: Tensor, g: Tensor, group: dict) -> Tensor:
    """Weight decay before the update: the parameter scaled by ``1 - lr * weight_decay``
    (decoupled) or the L2 term added to the gradient; returns the gradient to use."""
    wd = float(group["weight_decay"])
    if wd == 0:
        return g
    if group.get("decoupled_weight_decay", False):
        p.mul_(1 - float(group["lr"]) * wd)
        return g
    return g + p * wd


class Adadelta(Optimizer):
    """Adadelta, as ``torch.optim.Adadelta``::

    g = grad + weight_decay * p
    v = rho * v + (1 - rho) * g²
    delta = sqrt(u + eps) / sqrt(v + eps) * g
    u = rho * u + (1 - rho) * delta²
    p -= lr * delta

    ``v`` is the state ``square_avg``, ``u`` is ``acc_delta`` (with ``step``); the update is
    a few in-place engine ops per parameter (no graph is recorded).

    Parameters
    ----------
    params : iterable of Tensor or iterable of dict
        The parameters, or param-group dicts overriding the defaults below.
    lr : float, optional
        Scale of the delta before it is applied (>= 0). Default: ``1.0``.
    rho : float, optional
        Decay of the running averages, in [0, 1]. Default: ``0.9``.
    eps : float, optional
        Added inside both square roots (>= 0). Default: ``1e-6``.
    weight_decay : float, optional
        L2 penalty added to the gradient (>= 0). Default: ``0``.
    foreach, capturable, differentiable : optional
        PyTorch's implementation switches, accepted so that its scripts run unchanged: remat
        has one implementation, so they select no different code path. ``differentiable=True``
        raises NotImplementedError (a step records no graph). Defaults: ``None``, ``False``,
        ``False``.
    maximize : bool, optional
        Maximize the objective: step along the gradient instead of against it (the
        gradient is negated before anything else, as in PyTorch). Default: ``False``.

    Raises
    ------
    ValueError
        When ``lr``, ``eps`` or ``weight_decay`` is negative, ``rho`` is outside [0, 1], or
        ``params`` is empty or repeats a parameter.
    TypeError
        When a hyperparameter is not a number or a parameter is not a Tensor.
    NotImplementedError
        When ``differentiable`` is true.

    Examples
    --------
    >>> w = remat.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = remat.optim.Adadelta([w])
    >>> (w * w).sum().backward()
    >>> opt.step()  # the first delta is about sqrt(eps / (1 - rho)) * sign(grad)
    >>> w
    tensor([ 0.9968, -1.9968], requires_grad=True)
    >>> sorted(opt.state[w])
    ['acc_delta', 'square_avg', 'step']
    >>> remat.optim.Adadelta([w], rho=1.5)
    Traceback (most recent call last):
        ...
    ValueError: Adadelta: rho must be in [0.0, 1.0], got 1.5
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1.0,
        rho: float = 0.9,
        eps: float = 1e-6,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        capturable: bool = False,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        defaults = dict(lr=lr, rho=rho, eps=eps, weight_decay=weight_decay, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _validate(self, group: dict) -> None:
        super()._validate(group)
        name = _check_common(self, group)
        _validate.in_range(name, "rho", group["rho"], 0.0, 1.0)

    def _update(self, p: Tensor, g: Tensor, group: dict, state: dict) -> None:
        with remat.no_grad():
            if not state:
                state["step"] = 0
                state["square_avg"] = remat.zeros_like(p)
                state["acc_delta"] = remat.zeros_like(p)
            state["step"] += 1
            rho, eps = float(group["rho"]), float(group["eps"])
            g = _decay(p, g, group)
            v, u = state["square_avg"], state["acc_delta"]
            v.mul_(rho).add_(g * g, alpha=1 - rho)
            delta = (u + eps).sqrt() / (v + eps).sqrt() * g
            u.mul_(rho).add_(delta * delta, alpha=1 - rho)
            p.add_(delta, alpha=-float(group["lr"]))


class Adamax(Optimizer):
    """Adamax (Adam with the infinity norm), as ``torch.optim.Adamax``::

    g = grad + weight_decay * p
    m = beta1 * m + (1 - beta1) * g
    u = max(beta2 * u, |g| + eps)
    p -= lr / (1 - beta1^t) * m / u

    ``m`` is the state ``exp_avg``, ``u`` is ``exp_inf`` (with ``step``); the update is a
    few in-place engine ops per parameter (no graph is recorded).

    Parameters
    ----------
    params : iterable of Tensor or iterable of dict
        The parameters, or param-group dicts overriding the defaults below.
    lr : float, optional
        Learning rate (>= 0). Default: ``2e-3``.
    betas : tuple of (float, float), optional
        Decay of the first moment and of the infinity norm, each in [0, 1). Default:
        ``(0.9, 0.999)``.
    eps : float, optional
        Added to ``|g|`` before the maximum (>= 0). Default: ``1e-8``.
    weight_decay : float, optional
        L2 penalty added to the gradient (>= 0). Default: ``0``.
    foreach, differentiable, capturable : optional
        PyTorch's implementation switches, accepted so that its scripts run unchanged: remat
        has one implementation, so they select no different code path. ``differentiable=True``
        raises NotImplementedError (a step records no graph). Defaults: ``None``, ``False``,
        ``False``.
    maximize : bool, optional
        Maximize the objective: step along the gradient instead of against it (the
        gradient is negated before anything else, as in PyTorch). Default: ``False``.

    Raises
    ------
    ValueError
        When ``lr``, ``eps`` or ``weight_decay`` is negative, a beta is outside [0, 1), or
        ``params`` is empty or repeats a parameter.
    TypeError
        When ``betas`` is not a pair, a hyperparameter is not a number, or a parameter is
        not a Tensor.
    NotImplementedError
        When ``differentiable`` is true.

    Examples
    --------
    >>> w = remat.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = remat.optim.Adamax([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()  # the first step moves each entry by lr
    >>> w
    tensor([ 0.9000, -1.9000], requires_grad=True)
    >>> opt.state[w]["exp_inf"]
    tensor([2., 4.])
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        capturable: bool = False,
    ) -> None:
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        capturable=capturable)
        super().__init__(params, defaults)

    def _validate(self, group: dict) -> None:
        super()._validate(group)
        check_betas(_check_common(self, group), group)

    def _update(self, p: Tensor, g: Tensor, group: dict, state: dict) -> None:
        with remat.no_grad():
            if not state:
                state["step"] = 0
                state["exp_avg"] = remat.zeros_like(p)
                state["exp_inf"] = remat.zeros_like(p)
            state["step"] += 1
            b1, b2 = (float(b) for b in group["betas"])
            g = _decay(p, g, group)
            m, u = state["exp_avg"], state["exp_inf"]
            _lerp_(m, g, 1 - b1)
            u.copy_(remat.maximum(u.mul_(b2), g.abs() + float(group["eps"])))
            clr = float(group["lr"]) / (1 - b1 ** state["step"])
            p.add_(m / u, alpha=-clr)


class NAdam(Optimizer):
    """NAdam (Adam with Nesterov momentum), as ``torch.optim.NAdam``::

    g = grad + weight_decay * p          (or p *= 1 - lr * weight_decay, decoupled)
    mu_t = beta1 * (1 - 0.5 * 0.96^(t * momentum_decay)), mu_{t+1} likewise
    mu_product *= mu_t
    m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g²
    d = sqrt(v / (1 - beta2^t)) + eps
    p -= lr * (1 - mu_t) / (1 - mu_product) * g / d
    p -= lr * mu_{t+1} / (1 - mu_product * mu_{t+1}) * m / d

    The state is ``step``, ``mu_product`` (a float, rounded to float32 at each step as
    PyTorch's 0-d tensor is), ``exp_avg`` and ``exp_avg_sq``; the update is a few in-place
    engine ops per parameter (no graph is recorded).

    Parameters
    ----------
    params : iterable of Tensor or iterable of dict
        The parameters, or param-group dicts overriding the defaults below.
    lr : float, optional
        Learning rate (>= 0). Default: ``2e-3``.
    betas : tuple of (float, float), optional
        Decay rates of the moment estimates, each in [0, 1). Default: ``(0.9, 0.999)``.
    eps : float, optional
        Added to the denominator (>= 0). Default: ``1e-8``.
    weight_decay : float, optional
        Weight decay (>= 0): an L2 term, or decoupled. Default: ``0``.
    momentum_decay : float, optional
        Decay of the momentum coefficient over steps (>= 0). Default: ``4e-3``.
    decoupled_weight_decay : bool, optional
        Scale the parameter by ``1 - lr * weight_decay`` instead of adding the L2 term to
        the gradient (NAdamW). Default: ``False``.
    foreach, capturable, differentiable : optional
        PyTorch's implementation switches, accepted so that its scripts run unchanged: remat
        has one implementation, so they select no different code path. ``differentiable=True``
        raises NotImplementedError (a step records no graph). Defaults: ``None``, ``False``,
        ``False``.
    maximize : bool, optional
        Maximize the objective: step along the gradient instead of against it (the
        gradient is negated before anything else, as in PyTorch). Default: ``False``.

    Raises
    ------
    ValueError
        When ``lr``, ``eps``, ``weight_decay`` or ``momentum_decay`` is negative, a beta is
        outside [0, 1), or ``params`` is empty or repeats a parameter.
    TypeError
        When ``betas`` is not a pair, a hyperparameter is not a number, or a parameter is
        not a Tensor.
    NotImplementedError
        When ``differentiable`` is true.

    Examples
    --------
    >>> w = remat.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = remat.optim.NAdam([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([ 0.8944, -1.8944], requires_grad=True)
    >>> round(opt.state[w]["mu_product"], 6)
    0.450073
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 2e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        momentum_decay: float = 4e-3,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        momentum_decay=momentum_decay,
                        decoupled_weight_decay=decoupled_weight_decay, maximize=maximize,
                        foreach=foreach, capturable=capturable, differentiable=differentiable)
        super().__init__(params, defaults)

    def _validate(self, group: dict) -> None:
        super()._validate(group)
        name = _check_common(self, group)
        check_betas(name, group)
        _validate.nonnegative(name, "momentum_decay", group["momentum_decay"])

    def _update(self, p: Tensor, g: Tensor, group: dict, state: dict) -> None:
        with remat.no_grad():
            if not state:
                state["step"] = 0
                state["mu_product"] = 1.0
                state["exp_avg"] = remat.zeros_like(p)
                state["exp_avg_sq"] = remat.zeros_like(p)
            state["step"] += 1
            t = state["step"]
            lr, eps = float(group["lr"]), float(group["eps"])
            b1, b2 = (float(b) for b in group["betas"])
            md = float(group["momentum_decay"])
            g = _decay(p, g, group)
            mu = b1 * (1.0 - 0.5 * 0.96 ** (t * md))
            mu_next = b1 * (1.0 - 0.5 * 0.96 ** ((t + 1) * md))
            # PyTorch keeps the product as a float32 tensor: the same rounding here.
            mu_product = float(np.float32(state["mu_product"]) * np.float32(mu))
            state["mu_product"] = mu_product
            m, v = state["exp_avg"], state["exp_avg_sq"]
            _lerp_(m, g, 1 - b1)
            v.mul_(b2).add_(g * g, alpha=1 - b2)
            denom = (v / (1 - b2**t)).sqrt() + eps
            p.add_(g / denom, alpha=-lr * (1.0 - mu) / (1.0 - mu_product))
            p.add_(m / denom, alpha=-lr * mu_next / (1.0 - mu_product * mu_next))


class RAdam(Optimizer):
    """RAdam (Adam with a rectified adaptive learning rate), as ``torch.optim.RAdam``::

    g = grad + weight_decay * p          (or p *= 1 - lr * weight_decay, decoupled)
    m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g²
    rho_inf = 2 / (1 - beta2) - 1;  rho_t = rho_inf - 2 t beta2^t / (1 - beta2^t)
    m_hat = m / (1 - beta1^t)
    rho_t > 5:  p -= m_hat * lr * sqrt(1 - beta2^t) / (sqrt(v) + eps) * r_t
                with r_t = sqrt((rho_t - 4)(rho_t - 2) rho_inf / ((rho_inf - 4)(rho_inf - 2) rho_t))
    otherwise:  p -= m_hat * lr

    The state is ``step``, ``exp_avg`` and ``exp_avg_sq``; the update is a few in-place
    engine ops per parameter (no graph is recorded).

    Parameters
    ----------
    params : iterable of Tensor or iterable of dict
        The parameters, or param-group dicts overriding the defaults below.
    lr : float, optional
        Learning rate (>= 0). Default: ``1e-3``.
    betas : tuple of (float, float), optional
        Decay rates of the moment estimates, each in [0, 1). Default: ``(0.9, 0.999)``.
    eps : float, optional
        Added to the denominator (>= 0). Default: ``1e-8``.
    weight_decay : float, optional
        Weight decay (>= 0): an L2 term, or decoupled. Default: ``0``.
    decoupled_weight_decay : bool, optional
        Scale the parameter by ``1 - lr * weight_decay`` instead of adding the L2 term to
        the gradient (RAdamW). Default: ``False``.
    foreach, capturable, differentiable : optional
        PyTorch's implementation switches, accepted so that its scripts run unchanged: remat
        has one implementation, so they select no different code path. ``differentiable=True``
        raises NotImplementedError (a step records no graph). Defaults: ``None``, ``False``,
        ``False``.
    maximize : bool, optional
        Maximize the objective: step along the gradient instead of against it (the
        gradient is negated before anything else, as in PyTorch). Default: ``False``.

    Raises
    ------
    ValueError
        When ``lr``, ``eps`` or ``weight_decay`` is negative, a beta is outside [0, 1), or
        ``params`` is empty or repeats a parameter.
    TypeError
        When ``betas`` is not a pair, a hyperparameter is not a number, or a parameter is
        not a Tensor.
    NotImplementedError
        When ``differentiable`` is true.

    Examples
    --------
    >>> w = remat.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = remat.optim.RAdam([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()  # early steps (rho_t <= 5) are momentum SGD: m_hat is the gradient here
    >>> w
    tensor([ 0.8000, -1.6000], requires_grad=True)
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0,
        decoupled_weight_decay: bool = False,
        *,
        foreach: bool | None = None,
        maximize: bool = False,
        capturable: bool = False,
        differentiable: bool = False,
    ) -> None:
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        maximize=maximize, foreach=foreach, capturable=capturable,
                        decoupled_weight_decay=decoupled_weight_decay,
                        differentiable=differentiable)
        super().__init__(params, defaults)

    def _validate(self, group: dict) -> None:
        super()._validate(group)
        check_betas(_check_common(self, group), group)

    def _update(self, p: Tensor, g: Tensor, group: dict, state: dict) -> None:
        with remat.no_grad():
            if not state:
                state["step"] = 0
                state["exp_avg"] = remat.zeros_like(p)
                state["exp_avg_sq"] = remat.zeros_like(p)
            state["step"] += 1
            t = state["step"]
            lr, eps = float(group["lr"]), float(group["eps"])
            b1, b2 = (float(b) for b in group["betas"])
            g = _decay(p, g, group)
            m, v = state["exp_avg"], state["exp_avg_sq"]
            _lerp_(m, g, 1 - b1)
            v.mul_(b2).add_(g * g, alpha=1 - b2)
            bc1, bc2 = 1 - b1**t, 1 - b2**t
            m_hat = m / bc1
            rho_inf = 2 / (1 - b2) - 1
            rho_t = rho_inf - 2 * t * (b2**t) / bc2
            if rho_t > 5.0:
                rect = ((rho_t - 4) * (rho_t - 2) * rho_inf
                        / ((rho_inf - 4) * (rho_inf - 2) * rho_t)) ** 0.5
                adaptive = (bc2**0.5) / (v.sqrt() + eps)
                p.sub_(m_hat * lr * adaptive * rect)
            else:
                p.sub_(m_hat * lr)
