"""The one way an old spelling keeps working: it still does what it did, and says it is old.

Every renamed keyword or flag goes through :func:`renamed`, and every moved module through
:func:`moved`, so the warning reads the same everywhere (``fla.utils.deprecate_kwarg`` is the
pattern). Its category, :class:`AttnContractsDeprecationWarning`, is a ``DeprecationWarning`` of
this project alone, so a test suite can make the project's own deprecations errors wherever they
are called from (``-W error::attn_contracts.deprecation.AttnContractsDeprecationWarning``; this
project's pytest configuration does) while third-party deprecations stay what the suite decides.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from typing import TypeVar

__all__ = ["AttnContractsDeprecationWarning", "moved", "renamed"]

V = TypeVar("V")


class AttnContractsDeprecationWarning(DeprecationWarning):
    """A spelling of this project's API that still works and is deprecated."""


def renamed(old: str, new: str, value: V, *, stacklevel: int = 3) -> V:
    """Warn (:class:`AttnContractsDeprecationWarning`) that ``old`` is now ``new`` and return
    ``value`` unchanged.

    ``stacklevel`` 3 points at the caller of the function that took ``old``."""
    warnings.warn(f"{old} is deprecated, use {new}", AttnContractsDeprecationWarning,
                  stacklevel=stacklevel)
    return value


def moved(old: str, new: str) -> Callable[[str], object]:
    """The module ``__getattr__`` (PEP 562) of a module that moved from ``old`` to ``new``: every
    name read through the old module is the new module's (private ones too), and each read warns
    at the line that reads it (``from old import name`` included)."""

    def __getattr__(name: str) -> object:
        value = getattr(importlib.import_module(new), name)  # AttributeError: as the new module's
        return renamed(f"{old}.{name}", f"{new}.{name}", value)

    return __getattr__
