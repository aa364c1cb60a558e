"""``remat.backends.mps``, as ``torch.backends.mps``: remat has no Metal (Apple GPU) backend,
so it is neither built nor available."""

from __future__ import annotations

__all__ = ["is_available", "is_built"]


def is_available() -> bool:
    """Whether the MPS (Apple Metal) device can be used: always False in remat.

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
    >>> device = "mps" if remat.backends.mps.is_available() else "cpu"
    >>> device
    'cpu'
    """
    return False


def is_built() -> bool:
    """Whether remat was built with MPS support: always False (there is no Metal backend).

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
    >>> remat.backends.mps.is_built()
    False
    """
    return False
