"""Which path of a ``try`` statement runs, where Python's own rules decide it.

A ``try`` is read as its body or any of its handlers, joined: any call may raise. Where the body
calls nothing and its only operation that can raise is a dict lookup of keys the flow knows
(``TABLE[name]`` with ``name`` a known string), Python decides: a body whose lookups all find
their key runs to its end (no handler runs); the first lookup whose key is missing raises
``KeyError``, and the first handler that catches it runs (``except Exception`` before ``except
KeyError`` catches it first). The statements before the raising one have run.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Outcome", "catching", "outcome"]

#: the nodes a body may hold for its outcome to be read: no call, no arithmetic (a call may
#: raise anything; ``a / b`` may raise ZeroDivisionError), only names, constants and lookups
_PLAIN = (ast.Name, ast.Constant, ast.Subscript, ast.Tuple, ast.Load, ast.Store, ast.Return,
          ast.Assign, ast.Pass, ast.expr_context)


@dataclass(frozen=True)
class Outcome:
    """``raised_at``: the index of the body statement whose lookup raises ``KeyError`` (None:
    the body runs to its end)."""

    raised_at: int | None


def outcome(body: list[ast.stmt], found: Callable[[ast.Subscript], bool | None],
            ) -> Outcome | None:
    """How the ``try`` body ends, where Python decides it: ``found(lookup)`` says whether a
    lookup's key is in its dict (None: not known). None where the body may raise something
    else, or a lookup's outcome is not known."""
    stored: set[str] = set()
    for i, st in enumerate(body):
        nodes = list(ast.walk(st))
        if any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in stored
               for n in nodes):
            return None  # a name the body rebound: its lookups are not read before it runs
        stored |= {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        if not all(isinstance(n, _PLAIN) for n in nodes) or any(
                isinstance(n, (ast.Subscript, ast.Tuple)) and not isinstance(n.ctx, ast.Load)
                for n in nodes):
            return None  # ``lst[i] = v`` may raise IndexError, ``a, b = t`` ValueError
        # a lookup not known may raise before a missing one (an IndexError of a list): then
        # which exception is not known; every lookup known, one missing key raises KeyError
        hits = [found(n) for n in nodes if isinstance(n, ast.Subscript)]
        if None in hits:
            return None
        if False in hits:
            return Outcome(i)
    return Outcome(None)


def catching(handlers: list[ast.ExceptHandler]) -> ast.ExceptHandler | None:
    """The handler that catches a ``KeyError``: the first, in order, that does; None where
    none does (it propagates) or one before it names a class this does not know."""
    for h in handlers:
        caught = _catches(h)
        if caught is None:
            return None
        if caught:
            return h
    return None


def _catches(handler: ast.ExceptHandler) -> bool | None:
    """Whether ``handler`` catches a ``KeyError``: a bare ``except:``, or one naming a builtin
    exception class it is an instance of (``KeyError``, ``LookupError``, ``Exception``), alone
    or in a tuple; None where it names a class that is not a builtin one (its bases are the
    program's)."""
    if handler.type is None:
        return True
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    classes = [getattr(builtins, n.id, None) if isinstance(n, ast.Name) else None for n in names]
    if any(isinstance(c, type) and issubclass(KeyError, c) for c in classes):
        return True
    if all(isinstance(c, type) and issubclass(c, BaseException) for c in classes):
        return False
    return None
