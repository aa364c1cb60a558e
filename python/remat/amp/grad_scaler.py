"""``remat.amp.GradScaler``: dynamic loss scaling, as ``torch.amp.GradScaler``.

Scaling the loss before ``backward`` keeps small float16 gradients from flushing to zero;
``unscale_`` divides the gradients back in place (remat-core's ``grad_scaling::unscale_``,
which also finds infinities and NaNs), ``step`` skips the optimizer's step when it found any,
and ``update`` backs the scale off after such a step and grows it after ``growth_interval``
clean ones. The bookkeeping is per optimizer, as PyTorch's (each may be unscaled once per
``update``).
"""

from __future__ import annotations

import enum
import warnings
from typing import Any

from .. import _remat


class _Stage(enum.Enum):
    READY = 0
    UNSCALED = 1
    STEPPED = 2


class GradScaler:
    """Scale the loss, unscale the gradients, and skip steps whose gradients overflowed.

    Parameters
    ----------
    device : str, optional
        ``"cuda"`` or ``"cpu"``: the device of the loss. Default: ``"cuda"``, as PyTorch's
        (on a machine without a GPU that warns and disables the scaler).
    init_scale : float, optional
        The first scale. Default: ``65536.0`` (2**16).
    growth_factor : float, optional
        What the scale is multiplied by after ``growth_interval`` steps without inf/NaN.
        Default: ``2.0``.
    backoff_factor : float, optional
        What the scale is multiplied by after a step with inf/NaN gradients. Default: ``0.5``.
    growth_interval : int, optional
        Clean steps between two growths. Default: ``2000``.
    enabled : bool, optional
        ``False`` makes every method a pass-through (``scale`` returns its input, ``step``
        just steps). Default: ``True``.

    Raises
    ------
    ValueError
        When ``growth_factor`` is not above 1 or ``backoff_factor`` not in (0, 1).

    Examples
    --------
    >>> model = remat.nn.Linear(3, 1)
    >>> opt = remat.optim.SGD(model.parameters(), lr=0.1)
    >>> scaler = remat.amp.GradScaler("cpu", init_scale=1024.0)
    >>> loss = model(remat.ones(2, 3)).pow(2).mean()
    >>> scaler.scale(loss).backward()
    >>> scaler.step(opt)
    >>> scaler.update()
    >>> scaler.get_scale()
    1024.0
    """

    def __init__(self, device: str = "cuda", init_scale: float = 2.0**16,
                 growth_factor: float = 2.0, backoff_factor: float = 0.5,
                 growth_interval: int = 2000, enabled: bool = True) -> None:
        if growth_factor <= 1.0:
            raise ValueError(f"GradScaler: growth_factor must be above 1.0, got {growth_factor}")
        if not 0.0 < backoff_factor < 1.0:
            raise ValueError(
                f"GradScaler: backoff_factor must be between 0 and 1, got {backoff_factor}")
        self._device = device
        if enabled and device == "cuda" and not _remat.cuda_is_available():
            warnings.warn("remat.amp.GradScaler is enabled, but CUDA is not available. "
                          "Disabling.", stacklevel=2)
            enabled = False
        self._enabled = enabled
        self._scale = float(init_scale)
        self._init_scale = float(init_scale)
        self._growth_factor = float(growth_factor)
        self._backoff_factor = float(backoff_factor)
        self._growth_interval = int(growth_interval)
        self._growth_tracker = 0
        self._per_optimizer: dict[int, dict[str, Any]] = {}

    def is_enabled(self) -> bool:
        """Whether the scaler scales (``enabled`` and, for ``"cuda"``, a GPU present).

        Returns
        -------
        bool
            ``False`` makes every method a pass-through.

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> remat.amp.GradScaler("cpu").is_enabled()
        True
        """
        return self._enabled

    def _state(self, optimizer: Any) -> dict[str, Any]:
        return self._per_optimizer.setdefault(
            id(optimizer), {"stage": _Stage.READY, "found_inf": False})

    def scale(self, outputs: Any) -> Any:
        """Multiply ``outputs`` (a tensor, or nested lists/tuples of them) by the scale.

        Parameters
        ----------
        outputs : Tensor or sequence of Tensors
            The loss, or several.

        Returns
        -------
        Tensor or sequence of Tensors
            The scaled outputs, in the same structure (the inputs unchanged when disabled).

        Raises
        ------
        TypeError
            When ``outputs`` holds something other than tensors.

        Examples
        --------
        >>> s = remat.amp.GradScaler("cpu", init_scale=8.0)
        >>> s.scale(remat.tensor(0.5))
        tensor(4.)
        """
        if not self._enabled:
            return outputs
        if isinstance(outputs, _remat.Tensor):
            return outputs * self._scale
        if isinstance(outputs, (list, tuple)):
            return type(outputs)(self.scale(o) for o in outputs)
        raise TypeError(f"GradScaler.scale: outputs must be Tensors, got {type(outputs).__name__}")

    def unscale_(self, optimizer: Any) -> None:
        """Divide the gradients of ``optimizer``'s parameters by the scale, in place.

        Call it before clipping gradients (``clip_grad_norm_`` then sees true gradients);
        ``step`` calls it when it was not.

        Parameters
        ----------
        optimizer : Optimizer
            Whose ``param_groups`` hold the parameters.

        Returns
        -------
        None

        Raises
        ------
        RuntimeError
            When called twice for one optimizer before ``update``, or after ``step``.
        ValueError
            When a gradient is float16 (the parameters must stay float32).

        Examples
        --------
        >>> w = remat.nn.Parameter(remat.ones(2))
        >>> opt = remat.optim.SGD([w], lr=0.1)
        >>> s = remat.amp.GradScaler("cpu", init_scale=4.0)
        >>> s.scale((w * 3.0).sum()).backward()
        >>> s.unscale_(opt)
        >>> w.grad
        tensor([3., 3.])
        """
        if not self._enabled:
            return
        st = self._state(optimizer)
        if st["stage"] is _Stage.UNSCALED:
            raise RuntimeError(
                "unscale_() has already been called on this optimizer since the last update().")
        if st["stage"] is _Stage.STEPPED:
            raise RuntimeError("unscale_() is being called after step().")
        grads = [p.grad for g in optimizer.param_groups for p in g["params"]
                 if p.grad is not None]
        st["found_inf"] = _remat._amp_unscale_(grads, 1.0 / self._scale)
        st["stage"] = _Stage.UNSCALED

    def step(self, optimizer: Any, *args: Any, **kwargs: Any) -> Any:
        """Unscale (unless done) and step ``optimizer``, unless a gradient was inf or NaN.

        Parameters
        ----------
        optimizer : Optimizer
            The optimizer to step.
        *args : object
            Passed on to ``optimizer.step``.
        **kwargs : object
            Passed on to ``optimizer.step``.

        Returns
        -------
        object
            What ``optimizer.step`` returned, or ``None`` when the step was skipped.

        Raises
        ------
        RuntimeError
            When called twice for one optimizer before ``update``.

        Examples
        --------
        >>> w = remat.nn.Parameter(remat.ones(1))
        >>> opt = remat.optim.SGD([w], lr=1.0)
        >>> s = remat.amp.GradScaler("cpu")
        >>> s.scale((w * float("inf")).sum()).backward()
        >>> s.step(opt)  # skipped: w unchanged
        >>> w
        Parameter containing:
        tensor([1.], requires_grad=True)
        """
        if not self._enabled:
            return optimizer.step(*args, **kwargs)
        st = self._state(optimizer)
        if st["stage"] is _Stage.STEPPED:
            raise RuntimeError("step() has already been called since the last update().")
        if st["stage"] is _Stage.READY:
            self.unscale_(optimizer)
        st["stage"] = _Stage.STEPPED
        if st["found_inf"]:
            return None
        return optimizer.step(*args, **kwargs)

    def update(self, new_scale: float | Any = None) -> None:
        """Back the scale off after a skipped step, or grow it after ``growth_interval``
        clean ones; or set it to ``new_scale``.

        Parameters
        ----------
        new_scale : float or Tensor, optional
            The scale to use from now on. Default: ``None`` (the dynamic rule).

        Returns
        -------
        None

        Raises
        ------
        TypeError
            When ``new_scale`` is neither a number nor a one-element tensor.

        Examples
        --------
        >>> s = remat.amp.GradScaler("cpu", init_scale=8.0)
        >>> s.update(2.0)
        >>> s.get_scale()
        2.0
        """
        if not self._enabled:
            return
        if new_scale is not None:
            self._scale = float(new_scale.item() if isinstance(new_scale, _remat.Tensor)
                                else new_scale)
        else:
            found = any(st["found_inf"] for st in self._per_optimizer.values())
            if found:
                self._scale *= self._backoff_factor
                self._growth_tracker = 0
            else:
                self._growth_tracker += 1
                if self._growth_tracker == self._growth_interval:
                    self._scale *= self._growth_factor
                    self._growth_tracker = 0
        self._per_optimizer.clear()

    def get_scale(self) -> float:
        """The current scale (1.0 when disabled).

        Returns
        -------
        float
            The factor ``scale`` multiplies by.

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> remat.amp.GradScaler("cpu").get_scale()
        65536.0
        """
        return self._scale if self._enabled else 1.0

    def get_growth_factor(self) -> float:
        """The factor the scale grows by.

        Returns
        -------
        float
            ``growth_factor``.

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> remat.amp.GradScaler("cpu").get_growth_factor()
        2.0
        """
        return self._growth_factor

    def get_backoff_factor(self) -> float:
        """The factor the scale backs off by.

        Returns
        -------
        float
            ``backoff_factor``.

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> remat.amp.GradScaler("cpu").get_backoff_factor()
        0.5
        """
        return self._backoff_factor

    def get_growth_interval(self) -> int:
        """Clean steps between two growths.

        Returns
        -------
        int
            ``growth_interval``.

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> remat.amp.GradScaler("cpu").get_growth_interval()
        2000
        """
        return self._growth_interval

    def state_dict(self) -> dict[str, Any]:
        """The scaler's state, with PyTorch's keys (empty when disabled).

        Returns
        -------
        dict
            ``scale``, ``growth_factor``, ``backoff_factor``, ``growth_interval`` and
            ``_growth_tracker``.

        Raises
        ------
        TypeError
            When given an argument (it takes none).

        Examples
        --------
        >>> sorted(remat.amp.GradScaler("cpu").state_dict())
        ['_growth_tracker', 'backoff_factor', 'growth_factor', 'growth_interval', 'scale']
        """
        if not self._enabled:
            return {}
        return {"scale": self._scale, "growth_factor": self._growth_factor,
                "backoff_factor": self._backoff_factor,
                "growth_interval": self._growth_interval,
                "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Restore a state from ``state_dict``.

        Parameters
        ----------
        state_dict : dict
            What ``state_dict`` returned.

        Returns
        -------
        None

        Raises
        ------
        RuntimeError
            When ``state_dict`` is empty (it came from a disabled scaler) while this one is
            enabled.

        Examples
        --------
        >>> a = remat.amp.GradScaler("cpu", init_scale=4.0)
        >>> b = remat.amp.GradScaler("cpu")
        >>> b.load_state_dict(a.state_dict())
        >>> b.get_scale()
        4.0
        """
        if not self._enabled:
            return
        if len(state_dict) == 0:
            raise RuntimeError("The source state dict is empty, possibly because it was saved "
                               "from a disabled instance of GradScaler.")
        self._scale = float(state_dict["scale"])
        self._growth_factor = float(state_dict["growth_factor"])
        self._backoff_factor = float(state_dict["backoff_factor"])
        self._growth_interval = int(state_dict["growth_interval"])
        self._growth_tracker = int(state_dict["_growth_tracker"])
