"""Module-level flags that check what is assigned (``remat.backends.cudnn.benchmark = True``),
as PyTorch's backend modules do: the module's class is swapped for one whose attribute access
reads and writes the flag's entry in ``remat.backends.cuda._SETTINGS``."""

from __future__ import annotations

import sys
import types
from typing import Any

from .cuda import _SETTINGS, _check_bool


class _FlagModule(types.ModuleType):
    # attribute name -> key in _SETTINGS; set on each module's own subclass
    _FLAGS: dict[str, str] = {}

    def __getattr__(self, name: str) -> Any:
        key = type(self)._FLAGS.get(name)
        if key is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        return _SETTINGS[key]

    def __setattr__(self, name: str, value: Any) -> None:
        key = type(self)._FLAGS.get(name)
        if key is None:
            super().__setattr__(name, value)
        else:
            _SETTINGS[key] = _check_bool(f"{self.__name__.removeprefix('remat.')}.{name}",
                                         value)

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *type(self)._FLAGS})


def install(module_name: str, flags: dict[str, str]) -> None:
    """Give the module ``module_name`` the checked bool flags ``flags`` (attribute name ->
    ``_SETTINGS`` key)."""
    mod = sys.modules[module_name]
    # Named as the module's own (documentation tools look a module's members up through it).
    mod.__class__ = type("_FlagModule", (_FlagModule,),
                         {"_FLAGS": dict(flags), "__module__": module_name})
