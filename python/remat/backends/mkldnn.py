"""``remat.backends.mkldnn``, as ``torch.backends.mkldnn``: ``is_available()`` (False: remat's
CPU kernels are its own, not oneDNN's) and the flags ``enabled`` (True) and ``deterministic``
(False), which record the setting (assigning anything but a bool raises RuntimeError, as in
PyTorch) and which nothing reads today. Their values live in
``remat.backends.cuda._SETTINGS`` with the other backend flags.

Examples
--------
>>> remat.backends.mkldnn.is_available(), remat.backends.mkldnn.enabled
(False, True)
"""

from __future__ import annotations

from . import _flag_module

__all__ = ["is_available"]


def is_available() -> bool:
    """Whether oneDNN (MKL-DNN) is available: always False, remat does not use it.

    Returns
    -------
    bool
        False.

    Raises
    ------
    TypeError
        When given an argument (it takes none).

    Examples
    --------
    >>> remat.backends.mkldnn.is_available()
    False
    """
    return False


_flag_module.install(__name__, {"enabled": "mkldnn.enabled",
                                "deterministic": "mkldnn.deterministic"})
