"""The one way an old spelling keeps working: it still does what it did, and says it is old.

Every renamed keyword or flag goes through :func:`renamed`, so the warning reads the same
everywhere (``fla.utils.deprecate_kwarg`` is the pattern) and a test can turn it into an error
with ``-W error::DeprecationWarning``.
"""

from __future__ import annotations

import warnings
from typing import TypeVar

__all__ = ["renamed"]

V = TypeVar("V")


def renamed(old: str, new: str, value: V, *, stacklevel: int = 3) -> V:
    """Warn (``DeprecationWarning``) that ``old`` is now ``new`` and return ``value`` unchanged.

    ``stacklevel`` 3 points at the caller of the function that took ``old``."""
    warnings.warn(f"{old} is deprecated, use {new}", DeprecationWarning, stacklevel=stacklevel)
    return value
