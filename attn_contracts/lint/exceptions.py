"""Which path of a ``try`` statement runs, where Python's own rules decide it.

A ``try`` is read as its body or any of its handlers, joined: any call may raise. Where each
operation of the body that can raise is one the flow can decide, Python decides: a dict lookup of
keys the flow knows (``TABLE[name]`` with ``name`` a known string: ``KeyError`` where the key is
missing), an attribute read of an object whose class surely has, or surely lacks, it
(``AttributeError``), an attribute store on an object that surely accepts it, or surely refuses
it (a frozen dataclass: ``FrozenInstanceError``, an ``AttributeError``), and the construction
of a class whose generated ``__init__`` takes the arguments given (which raises nothing). A body
where none raises runs to its end (no handler runs); the first statement where one raises
raises it, and the first handler that catches it runs (``except Exception`` before ``except
KeyError`` catches it first). The statements before the raising one have run.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

__all__ = ["Oracle", "Outcome", "catching", "outcome"]

#: the nodes a body may hold for its outcome to be read: no arithmetic (``a / b`` may raise
#: ZeroDivisionError), only names, constants, lookups, attributes and calls the flow decides
_PLAIN = (ast.Name, ast.Constant, ast.Subscript, ast.Tuple, ast.Load, ast.Store, ast.Return,
          ast.Assign, ast.Pass, ast.expr_context, ast.Attribute, ast.Call, ast.keyword, ast.Expr)


@dataclass(frozen=True)
class Outcome:
    """``raised_at``: the index of the body statement that raises (None: the body runs to its
    end); ``raised``: what it raises."""

    raised_at: int | None
    raised: type[BaseException] = KeyError


@dataclass(frozen=True)
class Oracle:
    """What the flow knows of a body's operations that may raise: True, False or None (not
    known) for whether a lookup finds its key, an object has the attribute read, an object
    refuses the attribute stored; whether a call surely raises nothing."""

    lookup_found: Callable[[ast.Subscript], bool | None]
    attr_found: Callable[[ast.Attribute], bool | None]
    store_refused: Callable[[ast.Attribute], bool | None]
    call_quiet: Callable[[ast.Call], bool]


#: an operation the flow cannot decide
_UNKNOWN = object()


def _raises(n: ast.AST, oracle: Oracle) -> type[BaseException] | object | None:
    """What one node raises (None: nothing; _UNKNOWN: not known)."""
    if isinstance(n, ast.Subscript):
        found = oracle.lookup_found(n) if isinstance(n.ctx, ast.Load) else None
        return _UNKNOWN if found is None else (None if found else KeyError)
    if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load):
        found = oracle.attr_found(n)
        return _UNKNOWN if found is None else (None if found else AttributeError)
    if isinstance(n, ast.Attribute):
        refused = oracle.store_refused(n) if isinstance(n.ctx, ast.Store) else None  # a del
        return _UNKNOWN if refused is None else (
            dataclasses.FrozenInstanceError if refused else None)
    if isinstance(n, ast.Call):
        return None if oracle.call_quiet(n) else _UNKNOWN
    if isinstance(n, ast.Tuple) and not isinstance(n.ctx, ast.Load):
        return _UNKNOWN  # ``a, b = t`` may raise ValueError
    return None


def outcome(body: list[ast.stmt], oracle: Oracle) -> Outcome | None:
    """How the ``try`` body ends, where Python decides it. None where the body may raise
    something the flow does not decide, or which of two exceptions a statement raises first
    is not known."""
    stored: set[str] = set()
    for i, st in enumerate(body):
        nodes = list(ast.walk(st))
        if any(isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in stored
               for n in nodes):
            return None  # a name the body rebound: its operations are not read before it runs
        stored |= {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        if not all(isinstance(n, _PLAIN) for n in nodes):
            return None
        raised = [_raises(n, oracle) for n in nodes]
        if _UNKNOWN in raised:
            return None  # one not known may raise before (an IndexError of a list)
        kinds = {r for r in raised if r is not None}
        if len(kinds) > 1:
            return None  # which raises first: Python's evaluation order, not followed
        if kinds:
            return Outcome(i, cast(type[BaseException], kinds.pop()))
    return Outcome(None)


def catching(handlers: list[ast.ExceptHandler], raised: type[BaseException] = KeyError,
             ) -> ast.ExceptHandler | None:
    """The handler that catches ``raised``: the first, in order, that does; None where none
    does (it propagates) or one before it names a class this does not know."""
    for h in handlers:
        caught = _catches(h, raised)
        if caught is None:
            return None
        if caught:
            return h
    return None


#: the standard library's exception classes a body here may raise, besides the builtins
_LIBRARY = {"FrozenInstanceError": dataclasses.FrozenInstanceError,
            "dataclasses.FrozenInstanceError": dataclasses.FrozenInstanceError}


def _exception_class(node: ast.expr) -> object:
    """The class an ``except`` names: a builtin one, or one of :data:`_LIBRARY`; None for
    another (the program's, whose bases are not read here)."""
    name = ast.unparse(node) if isinstance(node, (ast.Name, ast.Attribute)) else ""
    return getattr(builtins, name, None) if isinstance(node, ast.Name) and \
        hasattr(builtins, name) else _LIBRARY.get(name)


def _catches(handler: ast.ExceptHandler, raised: type[BaseException]) -> bool | None:
    """Whether ``handler`` catches ``raised``: a bare ``except:``, or one naming a builtin
    exception class it is an instance of (``KeyError``, ``LookupError``, ``Exception``), alone
    or in a tuple (``FrozenInstanceError`` too); None where it names a class of the program (its
    bases are not read here)."""
    if handler.type is None:
        return True
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    classes = [_exception_class(n) for n in names]
    if any(isinstance(c, type) and issubclass(raised, c) for c in classes):
        return True
    if all(isinstance(c, type) and issubclass(c, BaseException) for c in classes):
        return False
    return None
