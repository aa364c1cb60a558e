"""Optimizers in the style of ``torch.optim``: SGD (momentum, dampening, Nesterov, weight
decay), Adam, AdamW, RMSprop and Adagrad.

For SGD, Adam and AdamW ``step()`` calls one Rust kernel per parameter that has a gradient;
the kernel updates the parameter and its state tensors in place with PyTorch's formulas.
RMSprop and Adagrad run a few in-place engine ops per parameter instead. State tensors are
created lazily on a parameter's first step (Adagrad's at construction, as in PyTorch).
Parameters can be given as an iterable of Tensors, of ``(name, Tensor)`` pairs
(``model.named_parameters()``), or as a list of param-group dicts (``{"params": [...], "lr":
...}``) whose hyperparameters override the defaults; ``param_groups[i]["lr"]`` may be changed
between steps. Each optimizer takes PyTorch's ``maximize`` flag, and its implementation
switches (``foreach``, ``fused``, ``capturable``, ``differentiable``, those it has), which
select no different code path here (``differentiable=True`` is refused).
"""

from __future__ import annotations

from typing import Any, Callable
from collections.abc import Iterable, Iterator, MutableMapping

import numpy as np

import remat

from .. import _remat, _validate
from .._remat import Tensor
from . import _flags

__all__ = ["Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad"]


class _StateView(MutableMapping):
    """The optimizer's state keyed by parameter, a live view that behaves like PyTorch's
    ``defaultdict(dict)``: ``state[p]`` of a tensor without state creates (and returns) an
    empty dict, while ``p in state``, iteration and ``len`` only see tensors that have an
    entry. Parameters hash by identity."""

    def __init__(self, opt: Optimizer) -> None:
        self._opt = opt

    def _params(self) -> list:
        own = [p for g in self._opt.param_groups for p in g["params"]
               if id(p) in self._opt._state]
        return own + [t for t, _ in self._opt._foreign_state.values()]

    def _is_param(self, p: Tensor) -> bool:
        return any(q is p for g in self._opt.param_groups for q in g["params"])

    def __getitem__(self, p: Any) -> dict:
        if not isinstance(p, Tensor):
            raise KeyError(p)
        st = self._opt._state.get(id(p))
        if st is not None:
            return st
        if self._is_param(p):
            return self._opt._state.setdefault(id(p), {})
        # A tensor the optimizer does not hold: kept (with a reference, so that its id stays
        # its own) but never saved by state_dict.
        return self._opt._foreign_state.setdefault(id(p), (p, {}))[1]

    def __setitem__(self, p: Any, value: dict) -> None:
        if not isinstance(p, Tensor):
            raise KeyError(p)
        if self._is_param(p):
            self._opt._state[id(p)] = value
        else:
            self._opt._foreign_state[id(p)] = (p, value)

    def __delitem__(self, p: Any) -> None:
        if isinstance(p, Tensor) and id(p) in self._opt._state:
            del self._opt._state[id(p)]
        elif isinstance(p, Tensor) and id(p) in self._opt._foreign_state:
            del self._opt._foreign_state[id(p)]
        else:
            raise KeyError(p)

    def __contains__(self, p: object) -> bool:
        # `_state` is keyed by the ids of the optimizer's own parameters (which it keeps
        # alive), `_foreign_state` holds its tensors: an id there is the tensor's.
        return isinstance(p, Tensor) and (
            id(p) in self._opt._state or id(p) in self._opt._foreign_state
        )

    def __iter__(self) -> Iterator[Any]:
        return iter(self._params())

    def __len__(self) -> int:
        return len(self._params())

    def __repr__(self) -> str:
        return repr({p: self[p] for p in self._params()})


class Optimizer:
    """Base class: holds ``param_groups`` (list of dicts with ``"params"`` and the
    hyperparameters) and per-parameter ``state``; subclasses implement :meth:`step`.

    A subclass passes its hyperparameters as ``defaults`` and implements the per-parameter
    update (``_update(p, grad, group, state)``, called by :meth:`step` for every parameter
    that has a gradient); ``_validate(group)`` checks a group's hyperparameters.

    Parameters
    ----------
    params : iterable of Tensor, iterable of (str, Tensor) or iterable of dict
        The leaf tensors to optimize, ``(name, tensor)`` pairs (``model.named_parameters()``,
        as PyTorch 2.6+ takes: the names are kept in each group's ``"param_names"``), or
        param-group dicts (``{"params": [...], "lr": ...}``) whose entries override
        ``defaults``.
    defaults : dict
        The hyperparameters of every group that does not set its own (``"lr"`` at least).

    Raises
    ------
    TypeError
        When ``params`` is a single Tensor, a parameter is not a Tensor, a group is not a
        dict, or a hyperparameter has the wrong type.
    ValueError
        When ``params`` is empty, a group has no ``"params"``, a parameter is not a leaf or
        appears twice, some parameters are named and others not, or a hyperparameter is out
        of range (``lr`` < 0 ...).
    KeyError
        When neither ``defaults`` nor a group gives ``"lr"``.

    Examples
    --------
    >>> class PlainSGD(remat.optim.Optimizer):
    ...     def __init__(self, params, lr=0.1):
    ...         super().__init__(params, {"lr": lr})
    ...     def _update(self, p, g, group, state):
    ...         with remat.no_grad():
    ...             p.sub_(g * group["lr"])
    >>> w = remat.tensor([1.0, 2.0], requires_grad=True)
    >>> opt = PlainSGD([w])
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([0.8000, 1.6000], requires_grad=True)
    >>> remat.optim.SGD([])
    Traceback (most recent call last):
        ...
    ValueError: optimizer got an empty parameter list
    """

    def __init__(self, params: Any, defaults: dict) -> None:
        self.defaults = dict(defaults)
        self.param_groups: list[dict] = []
        self._state: dict[int, dict] = {}
        self._foreign_state: dict[int, tuple] = {}
        if isinstance(params, Tensor):
            raise TypeError(
                "params argument given to the optimizer should be an iterable of Tensors or "
                "dicts, but got a Tensor"
            )
        params = list(params)
        if not params:
            raise ValueError("optimizer got an empty parameter list")
        if not isinstance(params[0], dict):
            params = [{"params": params}]
        for group in params:
            self.add_param_group(group)

    def add_param_group(self, group: dict) -> None:
        """Add a group of parameters (``{"params": ..., **hyperparameters}``).

        Missing hyperparameters are taken from the optimizer's defaults. Useful to start
        training layers that were frozen.

        Parameters
        ----------
        group : dict
            ``"params"`` (a Tensor, an iterable of leaf Tensors, or of ``(name, Tensor)``
            pairs such as ``model.named_parameters()``) and any hyperparameters.

        Returns
        -------
        None

        Raises
        ------
        TypeError
            When ``group`` is not a dict, a parameter is not a Tensor, or a hyperparameter
            has the wrong type.
        ValueError
            When ``"params"`` is missing, a parameter is not a leaf or is already
            optimized, only some parameters are named (in the group, or compared with the
            other groups), or a hyperparameter is out of range.

        Examples
        --------
        >>> a = remat.tensor([1.0], requires_grad=True)
        >>> b = remat.tensor([1.0], requires_grad=True)
        >>> opt = remat.optim.SGD([a], lr=0.1)
        >>> opt.add_param_group({"params": b, "lr": 0.5})
        >>> [g["lr"] for g in opt.param_groups], opt.param_groups[1]["momentum"]
        ([0.1, 0.5], 0.0)
        """
        if not isinstance(group, dict):
            raise TypeError(f"param group must be a dict, got {type(group).__name__}")
        group = dict(group)
        ps = group.get("params")
        if ps is None:
            raise ValueError("param group has no 'params'")
        ps = [ps] if isinstance(ps, Tensor) else list(ps)
        # `(name, parameter)` pairs (model.named_parameters()), as PyTorch 2.6+ accepts.
        names = [p[0] for p in ps if isinstance(p, tuple)]
        ps = [p[1] if isinstance(p, tuple) else p for p in ps]
        if names:
            if len(names) != len(ps):
                raise ValueError(
                    "all optimizer params should be with/without names. Some param names are "
                    "missing"
                )
            group["param_names"] = names
        for g in self.param_groups:
            if ("param_names" in g) != bool(names):
                raise ValueError(
                    "all optimizer param groups should be with/without names. cannot add "
                    f"param group {'with' if names else 'without'} names to the optimizer"
                )
        for p in ps:
            if not isinstance(p, Tensor):
                raise TypeError(f"optimizer can only optimize Tensors, got {type(p).__name__}")
            if not p.is_leaf:
                raise ValueError("can't optimize a non-leaf Tensor")
        seen = {id(p) for g in self.param_groups for p in g["params"]}
        if len({id(p) for p in ps}) != len(ps) or any(id(p) in seen for p in ps):
            raise ValueError("some parameters appear more than once in the optimizer")
        for k, v in self.defaults.items():
            group.setdefault(k, v)
        self._validate(group)
        group["params"] = ps
        self.param_groups.append(group)

    def _validate(self, group: dict) -> None:
        """Check a group's hyperparameters (TypeError/ValueError naming the optimizer and the
        argument); subclasses add theirs."""
        _validate.nonnegative(type(self).__name__, "lr", group["lr"])
        _flags.check(type(self).__name__, group)

    @property
    def state(self) -> _StateView:
        """Per-parameter state keyed by the parameter, as PyTorch: ``opt.state[p]`` is the
        dict of ``p``'s state (``"step"``, buffers).

        A live mapping (parameters hash by identity) holding the parameters that have
        state, i.e. that have been stepped; the state dicts themselves are the optimizer's
        own. As PyTorch's ``defaultdict(dict)``, ``opt.state[p]`` of a parameter without
        state creates an empty entry and returns it (``p in opt.state`` does not).

        Examples
        --------
        >>> w = remat.tensor([1.0, -1.0], requires_grad=True)
        >>> opt = remat.optim.Adam([w], lr=0.1)
        >>> len(opt.state), w in opt.state
        (0, False)
        >>> opt.state[w]
        {}
        >>> (w * w).sum().backward()
        >>> opt.step()
        >>> sorted(opt.state[w]), opt.state[w]["step"]
        (['exp_avg', 'exp_avg_sq', 'step'], 1)
        """
        return _StateView(self)

    @state.setter
    def state(self, value: Any) -> None:
        # `opt.state = defaultdict(dict, ...)` (as some PyTorch code resets it): take the
        # entries over.
        self._state, self._foreign_state = {}, {}
        view = _StateView(self)
        for p, st in dict(value).items():
            view[p] = st

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the gradients of all optimized parameters (None, or zero-filled in place).

        Parameters
        ----------
        set_to_none : bool, optional
            True: set each ``.grad`` to None (frees the memory); False: fill it with zeros
            in place. Default: ``True``.

        Returns
        -------
        None

        Raises
        ------
        TypeError
            When given more than one argument.

        Examples
        --------
        >>> w = remat.tensor([1.0, 2.0], requires_grad=True)
        >>> opt = remat.optim.SGD([w], lr=0.1)
        >>> (w * w).sum().backward()
        >>> opt.zero_grad(set_to_none=False)
        >>> w.grad
        tensor([0., 0.])
        >>> opt.zero_grad()
        >>> w.grad is None
        True
        """
        from ..nn.modules.module import _zero_grads

        _zero_grads((p for g in self.param_groups for p in g["params"]), set_to_none)

    def step(self, closure: Callable[[], Any] | None = None) -> Any:
        """Update every parameter that has a gradient; returns ``closure()`` if given.

        Parameters without a gradient (``.grad`` is None) are skipped and get no state.
        Each update runs in place, recording no graph. Call it after ``backward()``.

        Parameters
        ----------
        closure : callable, optional
            Re-evaluates the model and returns the loss; it is called first, with grad mode
            on, before the update. Default: ``None``.

        Returns
        -------
        Any
            What ``closure`` returned, or None without one.

        Raises
        ------
        NotImplementedError
            On the base class, which has no update rule.

        Examples
        --------
        >>> w = remat.tensor([1.0, 2.0], requires_grad=True)
        >>> opt = remat.optim.SGD([w], lr=0.1)
        >>> def closure():
        ...     opt.zero_grad()
        ...     loss = (w * w).sum()
        ...     loss.backward()
        ...     return loss
        >>> opt.step(closure)
        tensor(5., grad_fn=<sum>)
        >>> w
        tensor([0.8000, 1.6000], requires_grad=True)
        """
        loss = None
        if closure is not None:
            with remat.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                g = p.grad
                if g is None:
                    continue
                if group.get("maximize", False):
                    with remat.no_grad():
                        g = -g
                state = self._state.get(id(p))
                if state is None:
                    # As PyTorch, a parameter gets an entry only when its update keeps state
                    # (plain SGD keeps none).
                    state = {}
                    self._update(p, g, group, state)
                    if state:
                        self._state[id(p)] = state
                else:
                    self._update(p, g, group, state)
        return loss

    def _update(self, p: Tensor, g: Tensor, group: dict, state: dict) -> None:
        raise NotImplementedError

    # -- state dicts ------------------------------------------------------------------------

    def state_dict(self) -> dict:
        """``{"state": {index: {name: value}}, "param_groups": [...]}`` with parameters
        numbered in group order and the state as tensors, as PyTorch's.

        Each state tensor is a copy (a later step does not change the returned dict), of the
        buffer's dtype and device; the step count ``"step"`` is a 0-d float32 tensor, as in
        PyTorch (the optimizer itself counts with a Python int).

        Returns
        -------
        dict
            ``"state"``: per parameter index, its state (buffers as Tensor copies, the step
            as a 0-d float32 Tensor, other numbers as they are); ``"param_groups"``: each
            group's hyperparameters with ``"params"`` as the list of parameter indices.
            Saveable with ``remat.save``.

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> w = remat.tensor([1.0], requires_grad=True)
        >>> opt = remat.optim.SGD([w], lr=0.1, momentum=0.9)
        >>> (w * w).sum().backward()
        >>> opt.step()
        >>> sd = opt.state_dict()
        >>> sd["state"]
        {0: {'momentum_buffer': tensor([2.])}}
        >>> sd["param_groups"][0]["params"], sd["param_groups"][0]["lr"]
        ([0], 0.1)
        >>> opt = remat.optim.Adam([w], lr=0.1)
        >>> opt.step()
        >>> opt.state_dict()["state"][0]["step"]
        tensor(1.)
        """
        index: dict[int, int] = {}
        groups = []
        for g in self.param_groups:
            ids = []
            for p in g["params"]:
                index.setdefault(id(p), len(index))
                ids.append(index[id(p)])
            groups.append({**{k: v for k, v in g.items() if k != "params"}, "params": ids})
        state = {}
        for pid, st in self._state.items():
            if pid in index:
                state[index[pid]] = {k: _saved_state(k, v) for k, v in st.items()}
        return {"state": state, "param_groups": groups}

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore hyperparameters and state saved by :meth:`state_dict`.

        Parameters are matched by position (group by group); state buffers (Tensors, or
        NumPy arrays as older state dicts hold them) are copied with each parameter's dtype
        and device, and a ``"step"`` given as a tensor (PyTorch's form) becomes the
        optimizer's integer count again. Any earlier state is replaced.

        Parameters
        ----------
        state_dict : dict
            What :meth:`state_dict` returned (possibly through ``remat.save`` /
            ``remat.load``).

        Returns
        -------
        None

        Raises
        ------
        ValueError
            When the number of groups, or of parameters in a group, differs.
        KeyError
            When ``"param_groups"`` or ``"state"`` is missing, or a state refers to a
            parameter index that does not exist.

        Examples
        --------
        >>> w = remat.tensor([1.0, -1.0], requires_grad=True)
        >>> opt = remat.optim.Adam([w], lr=0.1)
        >>> (w * w).sum().backward()
        >>> opt.step()
        >>> w2 = remat.tensor([1.0, -1.0], requires_grad=True)
        >>> opt2 = remat.optim.Adam([w2], lr=0.5)
        >>> opt2.load_state_dict(opt.state_dict())
        >>> opt2.param_groups[0]["lr"], opt2.state[w2]["step"]
        (0.1, 1)
        """
        groups = state_dict["param_groups"]
        if len(groups) != len(self.param_groups):
            raise ValueError("loaded state dict has a different number of parameter groups")
        params: list[tuple[int, Tensor]] = []
        for mine, saved in zip(self.param_groups, groups):
            if len(mine["params"]) != len(saved["params"]):
                raise ValueError(
                    "loaded state dict contains a parameter group that doesn't match the size "
                    "of the optimizer's group"
                )
            params.extend(zip(saved["params"], mine["params"]))
        by_index = dict(params)
        for mine, saved in zip(self.param_groups, groups):
            # As PyTorch, a group's own parameter names are kept.
            keep = ("params", "param_names") if "param_names" in mine else ("params",)
            mine.update({k: v for k, v in saved.items() if k not in keep})
        self._state, self._foreign_state = {}, {}
        for i, st in state_dict["state"].items():
            p = by_index[int(i)]
            self._state[id(p)] = {k: _loaded_state(k, v, p) for k, v in st.items()}

    def __repr__(self) -> str:
        lines = [type(self).__name__ + " ("]
        for i, g in enumerate(self.param_groups):
            lines.append(f"Parameter Group {i}")
            for k in sorted(g):
                if k != "params":
                    lines.append(f"    {k}: {g[k]}")
        lines.append(")")
        return "\n".join(lines)


class SGD(Optimizer):
    """Stochastic gradient descent, as ``torch.optim.SGD``::

    d = grad + weight_decay * p
    buf = d (first step) | momentum * buf + (1 - dampening) * d
    d = d + momentum * buf (nesterov) | buf (momentum != 0)
    p -= lr * d

    One Rust kernel per parameter updates it (and its momentum buffer, created on the
    first step) in place.

    Parameters
    ----------
    params : iterable of Tensor or iterable of dict
        The parameters, or param-group dicts overriding the defaults below.
    lr : float, optional
        Learning rate (>= 0). Default: ``1e-3``.
    momentum : float, optional
        Momentum factor (>= 0). Default: ``0.0``.
    dampening : float, optional
        Dampening of the momentum. Default: ``0.0``.
    weight_decay : float, optional
        L2 penalty added to the gradient (>= 0). Default: ``0.0``.
    nesterov : bool, optional
        Nesterov momentum (needs ``momentum > 0`` and ``dampening == 0``). Default:
        ``False``.
    maximize : bool, optional
        Maximize the objective: step along the gradient instead of against it (the
        gradient is negated before anything else, as in PyTorch). Default: ``False``.
    foreach, differentiable, fused : optional
        PyTorch's implementation switches, accepted so that its scripts run unchanged: remat
        has one implementation, so they select no different code path. ``differentiable=True``
        raises NotImplementedError (a step records no graph). Defaults:
        ``None``, ``False``, ``None``.

    Raises
    ------
    ValueError
        When ``lr``, ``momentum`` or ``weight_decay`` is negative, ``nesterov`` is set
        without momentum or with dampening, or ``params`` is empty or repeats a parameter.
    TypeError
        When a hyperparameter is not a number or a parameter is not a Tensor.
    RuntimeError
        When ``fused`` is combined with ``foreach`` (PyTorch's check).
    NotImplementedError
        When ``differentiable`` is true.

    Examples
    --------
    >>> w = remat.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = remat.optim.SGD([w], lr=0.1, momentum=0.9)
    >>> for _ in range(2):
    ...     opt.zero_grad()
    ...     (w * w).sum().backward()
    ...     opt.step()
    >>> w
    tensor([ 0.4600, -0.9200], requires_grad=True)
    >>> remat.optim.SGD([w], lr=0.1, nesterov=True)
    Traceback (most recent call last):
        ...
    ValueError: SGD: Nesterov momentum requires a momentum and zero dampening
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        momentum: float = 0.0,
        dampening: float = 0.0,
        weight_decay: float = 0.0,
        nesterov: bool = False,
        maximize: bool = False,
        *,
        foreach: bool | None = None,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        defaults = dict(
            lr=lr,
            momentum=momentum,
            dampening=dampening,
            weight_decay=weight_decay,
            nesterov=nesterov,
            maximize=maximize,
            foreach=foreach,
            differentiable=differentiable,
            fused=fused,
        )
        super().__init__(params, defaults)

    def _validate(self, group: dict) -> None:
        super()._validate(group)
        name = type(self).__name__
        momentum = _validate.nonnegative(name, "momentum", group["momentum"])
        dampening = _validate.real(name, "dampening", group["dampening"])
        _validate.nonnegative(name, "weight_decay", group["weight_decay"])
        if group["nesterov"] and (momentum <= 0 or dampening != 0):
            raise ValueError(f"{name}: Nesterov momentum requires a momentum and zero dampening")

    def _update(self, p: Tensor, g: Tensor, group: dict, state: dict) -> None:
        momentum = float(group["momentum"])
        buf = None
        first = False
        if momentum != 0.0:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = remat.zeros_like(p)
                first = True
        _remat.sgd_step(
            p,
            g,
            buf,
            first,
            float(group["lr"]),
            momentum,
            float(group["weight_decay"]),
            float(group["dampening"]),
            bool(group["nesterov"]),
        )


class Adam(Optimizer):
    """Adam, as ``torch.optim.Adam`` (L2 ``weight_decay`` added to the gradient)::

    g = grad + weight_decay * p
    m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
    p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)

    With ``amsgrad`` the denominator uses ``v_max = max(v_max, v)`` instead of ``v``.

    One Rust kernel per parameter updates it and its state (``exp_avg``, ``exp_avg_sq``,
    ``max_exp_avg_sq`` with amsgrad, ``step``), created on its first step, in place.

    Parameters
    ----------
    params : iterable of Tensor or iterable of dict
        The parameters, or param-group dicts overriding the defaults below.
    lr : float, optional
        Learning rate (>= 0). Default: ``1e-3``.
    betas : tuple of (float, float), optional
        Decay rates of the first and second moment estimates, each in [0, 1). Default:
        ``(0.9, 0.999)``.
    eps : float, optional
        Added to the denominator (>= 0). Default: ``1e-8``.
    weight_decay : float, optional
        L2 penalty added to the gradient (>= 0). Default: ``0.0``.
    amsgrad : bool, optional
        Use the running maximum of ``v``. Default: ``False``.
    maximize : bool, optional
        Maximize the objective: step along the gradient instead of against it (the
        gradient is negated before anything else, as in PyTorch). Default: ``False``.
    foreach, capturable, differentiable, fused : optional
        PyTorch's implementation switches, accepted so that its scripts run unchanged: remat
        has one implementation, so they select no different code path. ``differentiable=True``
        raises NotImplementedError (a step records no graph). Defaults:
        ``None``, ``False``, ``False``, ``None``.
    decoupled_weight_decay : bool, optional
        Decay the parameter itself (``p *= 1 - lr * weight_decay``) instead of adding the L2
        term to the gradient: AdamW's rule, as PyTorch's flag. Default: ``False``.

    Raises
    ------
    ValueError
        When ``lr``, ``eps`` or ``weight_decay`` is negative, a beta is outside [0, 1),
        or ``params`` is empty or repeats a parameter.
    TypeError
        When ``betas`` is not a pair, a hyperparameter is not a number, or a parameter is
        not a Tensor.
    RuntimeError
        When ``fused`` is combined with ``foreach`` (PyTorch's check).
    NotImplementedError
        When ``differentiable`` is true.

    Examples
    --------
    >>> w = remat.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = remat.optim.Adam([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()  # the first step moves each entry by about lr
    >>> w
    tensor([ 0.9000, -1.9000], requires_grad=True)
    >>> remat.optim.Adam([w], betas=(1.0, 0.999))
    Traceback (most recent call last):
        ...
    ValueError: Adam: betas[0] must be in [0.0, 1.0), got 1.0
    >>> remat.optim.Adam([w], fused=True).param_groups[0]["fused"]  # accepted, same update
    True
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        amsgrad: bool = False,
        maximize: bool = False,
        *,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
        decoupled_weight_decay: bool = False,
    ) -> None:
        defaults = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                        amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                        capturable=capturable, differentiable=differentiable, fused=fused,
                        decoupled_weight_decay=decoupled_weight_decay)
        super().__init__(params, defaults)

    def _validate(self, group: dict) -> None:
        super()._validate(group)
        name = type(self).__name__
        _validate.nonnegative(name, "eps", group["eps"])
        _validate.nonnegative(name, "weight_decay", group["weight_decay"])
        check_betas(name, group)

    def _update(self, p: Tensor, g: Tensor, group: dict, state: dict) -> None:
        if not state:
            state["step"] = 0
            state["exp_avg"] = remat.zeros_like(p)
            state["exp_avg_sq"] = remat.zeros_like(p)
        amsgrad = bool(group.get("amsgrad", False))
        if amsgrad and "max_exp_avg_sq" not in state:
            state["max_exp_avg_sq"] = remat.zeros_like(p)
        state["step"] += 1
        b1, b2 = group["betas"]
        _remat.adam_step(
            p,
            g,
            state["exp_avg"],
            state["exp_avg_sq"],
            int(state["step"]),
            float(group["lr"]),
            float(b1),
            float(b2),
            float(group["eps"]),
            float(group["weight_decay"]),
            bool(group.get("decoupled_weight_decay", False)),
            state["max_exp_avg_sq"] if amsgrad else None,
        )


class AdamW(Adam):
    """Adam with decoupled weight decay, as ``torch.optim.AdamW``: the parameter is first
    scaled by ``1 - lr * weight_decay``, then updated by Adam without weight decay.

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
        Decoupled weight decay (>= 0). Default: ``1e-2``.
    amsgrad : bool, optional
        Use the running maximum of the second moment. Default: ``False``.
    maximize : bool, optional
        Maximize the objective: step along the gradient instead of against it (the
        gradient is negated before anything else, as in PyTorch). Default: ``False``.
    foreach, capturable, differentiable, fused : optional
        PyTorch's implementation switches, accepted so that its scripts run unchanged: remat
        has one implementation, so they select no different code path. ``differentiable=True``
        raises NotImplementedError (a step records no graph). Defaults:
        ``None``, ``False``, ``False``, ``None``.

    Raises
    ------
    ValueError
        When ``lr``, ``eps`` or ``weight_decay`` is negative, a beta is outside [0, 1),
        or ``params`` is empty or repeats a parameter.
    TypeError
        When ``betas`` is not a pair, a hyperparameter is not a number, or a parameter is
        not a Tensor.
    RuntimeError
        When ``fused`` is combined with ``foreach`` (PyTorch's check).
    NotImplementedError
        When ``differentiable`` is true.

    Examples
    --------
    >>> w = remat.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = remat.optim.AdamW([w], lr=0.1, weight_decay=0.5)
    >>> (w * w).sum().backward()
    >>> opt.step()  # w * (1 - 0.1 * 0.5), then the Adam step
    >>> w
    tensor([ 0.8500, -1.8000], requires_grad=True)
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        weight_decay: float = 1e-2,
        amsgrad: bool = False,
        maximize: bool = False,
        *,
        foreach: bool | None = None,
        capturable: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay,
                         amsgrad=amsgrad, maximize=maximize, foreach=foreach,
                         capturable=capturable, differentiable=differentiable, fused=fused,
                         decoupled_weight_decay=True)


class RMSprop(Optimizer):
    """RMSprop, as ``torch.optim.RMSprop``::

    g = grad + weight_decay * p
    v = alpha * v + (1 - alpha) * g²
    avg = sqrt(v - m²) + eps with m = alpha * m + (1 - alpha) * g (centered) | sqrt(v) + eps
    buf = momentum * buf + g / avg; p -= lr * buf (momentum > 0) | p -= lr * g / avg

    The update is a few in-place engine ops per parameter (no graph is recorded).

    Parameters
    ----------
    params : iterable of Tensor or iterable of dict
        The parameters, or param-group dicts overriding the defaults below.
    lr : float, optional
        Learning rate (>= 0). Default: ``1e-2``.
    alpha : float, optional
        Smoothing constant of the squared-gradient average (>= 0). Default: ``0.99``.
    eps : float, optional
        Added to the denominator (>= 0). Default: ``1e-8``.
    weight_decay : float, optional
        L2 penalty added to the gradient (>= 0). Default: ``0.0``.
    momentum : float, optional
        Momentum factor (>= 0). Default: ``0.0``.
    centered : bool, optional
        Normalise by the variance estimate (``v - m²``) instead of ``v``. Default:
        ``False``.
    maximize : bool, optional
        Maximize the objective: step along the gradient instead of against it (the
        gradient is negated before anything else, as in PyTorch). Default: ``False``.
    capturable, foreach, differentiable : optional
        PyTorch's implementation switches, accepted so that its scripts run unchanged: remat
        has one implementation, so they select no different code path. ``differentiable=True``
        raises NotImplementedError (a step records no graph). Defaults:
        ``False``, ``None``, ``False``.

    Raises
    ------
    ValueError
        When a hyperparameter is negative, or ``params`` is empty or repeats a parameter.
    TypeError
        When a hyperparameter is not a number or a parameter is not a Tensor.
    NotImplementedError
        When ``differentiable`` is true.

    Examples
    --------
    >>> w = remat.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = remat.optim.RMSprop([w], lr=0.01)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([ 0.9000, -1.9000], requires_grad=True)
    >>> sorted(opt.state[w])
    ['square_avg', 'step']
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-2,
        alpha: float = 0.99,
        eps: float = 1e-8,
        weight_decay: float = 0.0,
        momentum: float = 0.0,
        centered: bool = False,
        capturable: bool = False,
        foreach: bool | None = None,
        maximize: bool = False,
        differentiable: bool = False,
    ) -> None:
        defaults = dict(lr=lr, alpha=alpha, eps=eps, weight_decay=weight_decay,
                        momentum=momentum, centered=centered, maximize=maximize,
                        capturable=capturable, foreach=foreach, differentiable=differentiable)
        super().__init__(params, defaults)

    def _validate(self, group: dict) -> None:
        super()._validate(group)
        name = type(self).__name__
        _validate.nonnegative(name, "alpha", group["alpha"])
        _validate.nonnegative(name, "eps", group["eps"])
        _validate.nonnegative(name, "weight_decay", group["weight_decay"])
        _validate.nonnegative(name, "momentum", group["momentum"])

    def _update(self, p: Tensor, g: Tensor, group: dict, state: dict) -> None:
        with remat.no_grad():
            if not state:
                state["step"] = 0
                state["square_avg"] = remat.zeros_like(p)
                if group["momentum"] > 0:
                    state["momentum_buffer"] = remat.zeros_like(p)
                if group["centered"]:
                    state["grad_avg"] = remat.zeros_like(p)
            state["step"] += 1
            alpha, eps = float(group["alpha"]), float(group["eps"])
            if group["weight_decay"]:
                g = g + p * float(group["weight_decay"])
            v = state["square_avg"]
            v.mul_(alpha).add_(g * g * (1 - alpha))
            if group["centered"]:
                m = state["grad_avg"]
                m.mul_(alpha).add_(g * (1 - alpha))
                avg = (v - m * m).sqrt() + eps
            else:
                avg = v.sqrt() + eps
            if group["momentum"] > 0:
                buf = state["momentum_buffer"]
                buf.mul_(float(group["momentum"])).add_(g / avg)
                p.sub_(buf * float(group["lr"]))
            else:
                p.sub_(g / avg * float(group["lr"]))


class Adagrad(Optimizer):
    """Adagrad, as ``torch.optim.Adagrad``::

    g = grad + weight_decay * p
    clr = lr / (1 + (step - 1) * lr_decay)
    sum += g²;  p -= clr * g / (sqrt(sum) + eps)

    The update is a few in-place engine ops per parameter (no graph is recorded).

    Parameters
    ----------
    params : iterable of Tensor or iterable of dict
        The parameters, or param-group dicts overriding the defaults below.
    lr : float, optional
        Learning rate (>= 0). Default: ``1e-2``.
    lr_decay : float, optional
        Learning-rate decay per step (>= 0). Default: ``0.0``.
    weight_decay : float, optional
        L2 penalty added to the gradient (>= 0). Default: ``0.0``.
    initial_accumulator_value : float, optional
        Starting value of the squared-gradient sum (>= 0). Default: ``0.0``.
    eps : float, optional
        Added to the denominator (>= 0). Default: ``1e-10``.
    maximize : bool, optional
        Maximize the objective: step along the gradient instead of against it (the
        gradient is negated before anything else, as in PyTorch). Default: ``False``.
    foreach, differentiable, fused : optional
        PyTorch's implementation switches, accepted so that its scripts run unchanged: remat
        has one implementation, so they select no different code path. ``differentiable=True``
        raises NotImplementedError (a step records no graph). Defaults:
        ``None``, ``False``, ``None``.

    Raises
    ------
    ValueError
        When a hyperparameter is negative, or ``params`` is empty or repeats a parameter.
    TypeError
        When a hyperparameter is not a number or a parameter is not a Tensor.
    RuntimeError
        When ``fused`` is combined with ``foreach`` (PyTorch's check).
    NotImplementedError
        When ``differentiable`` is true.

    Examples
    --------
    >>> w = remat.tensor([1.0, -2.0], requires_grad=True)
    >>> opt = remat.optim.Adagrad([w], lr=0.1)
    >>> (w * w).sum().backward()
    >>> opt.step()
    >>> w
    tensor([ 0.9000, -1.9000], requires_grad=True)
    >>> opt.state[w]["sum"]
    tensor([ 4., 16.])
    """

    def __init__(
        self,
        params: Iterable[Any],
        lr: float = 1e-2,
        lr_decay: float = 0.0,
        weight_decay: float = 0.0,
        initial_accumulator_value: float = 0.0,
        eps: float = 1e-10,
        foreach: bool | None = None,
        *,
        maximize: bool = False,
        differentiable: bool = False,
        fused: bool | None = None,
    ) -> None:
        defaults = dict(lr=lr, lr_decay=lr_decay, weight_decay=weight_decay,
                        initial_accumulator_value=initial_accumulator_value, eps=eps,
                        foreach=foreach, maximize=maximize, differentiable=differentiable,
                        fused=fused)
        super().__init__(params, defaults)
        # As PyTorch, Adagrad's state (step 0 and the accumulator) exists from the start.
        for group in self.param_groups:
            for p in group["params"]:
                self._init_state(p, group, self._state.setdefault(id(p), {}))

    @staticmethod
    def _init_state(p: Tensor, group: dict, state: dict) -> None:
        state["step"] = 0
        state["sum"] = remat.full_like(p, float(group["initial_accumulator_value"]))

    def _validate(self, group: dict) -> None:
        super()._validate(group)
        name = type(self).__name__
        _validate.nonnegative(name, "lr_decay", group["lr_decay"])
        _validate.nonnegative(name, "weight_decay", group["weight_decay"])
        _validate.nonnegative(name, "initial_accumulator_value",
                              group["initial_accumulator_value"])
        _validate.nonnegative(name, "eps", group["eps"])

    def _update(self, p: Tensor, g: Tensor, group: dict, state: dict) -> None:
        with remat.no_grad():
            if not state:
                self._init_state(p, group, state)
            state["step"] += 1
            if group["weight_decay"]:
                g = g + p * float(group["weight_decay"])
            clr = float(group["lr"]) / (1 + (state["step"] - 1) * float(group["lr_decay"]))
            acc = state["sum"]
            acc.add_(g * g)
            p.sub_(g / (acc.sqrt() + float(group["eps"])) * clr)


def check_betas(name: str, group: dict) -> None:
    """Check ``group["betas"]`` (a pair, each in [0, 1)) and store it as a tuple; ``name``
    is the optimizer's, for the messages."""
    betas = group["betas"]
    if not isinstance(betas, (tuple, list)) or len(betas) != 2:
        raise TypeError(
            f"{name}: betas must be a pair of numbers (beta1, beta2), got {betas!r}"
        )
    for i, b in enumerate(betas):
        _validate.in_range(name, f"betas[{i}]", b, 0.0, 1.0, high_open=True)
    group["betas"] = tuple(betas)


# State entries kept as Python numbers and saved as PyTorch keeps them, 0-d float32 tensors:
# the step count, and NAdam's running product of momentum coefficients (rounded to float32
# at every step, as PyTorch's tensor is, so that a saved value restores exactly).
_SCALAR_STATE = {"step": int, "mu_product": float}


def _saved_state(name: str, value: Any) -> Any:
    """One state entry as :meth:`Optimizer.state_dict` hands it out: a tensor copied (so later
    steps do not write into it), the integer step count as PyTorch's 0-d float32 tensor."""
    if isinstance(value, Tensor):
        with remat.no_grad():
            return value.detach().clone()
    if (name in _SCALAR_STATE and isinstance(value, (int, float))
            and not isinstance(value, bool)):
        return remat.tensor(float(value), dtype=remat.float32)
    return value


def _loaded_state(name: str, value: Any, p: Tensor) -> Any:
    """One state entry from a state dict as the optimizer keeps it: the step count as a
    Python int and NAdam's ``mu_product`` as a float (from a tensor, an array or a number),
    buffers copied to ``p``'s dtype and device (from a remat Tensor or a NumPy array),
    anything else as it is."""
    if name in _SCALAR_STATE and isinstance(value, (Tensor, np.ndarray)):
        count = value.numel() if isinstance(value, Tensor) else value.size
        if count == 1:
            return _SCALAR_STATE[name](float(value.item()))
    if (name in _SCALAR_STATE and isinstance(value, (int, float))
            and not isinstance(value, bool)):
        return _SCALAR_STATE[name](value)
    if isinstance(value, Tensor):
        with remat.no_grad():
            return value.detach().to(dtype=p.dtype, device=p.device).clone()
    if isinstance(value, np.ndarray):
        return remat.tensor(np.asarray(value), dtype=p.dtype, device=p.device)
    return value
