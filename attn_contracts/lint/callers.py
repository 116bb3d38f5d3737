"""Where a module names a function or class: each reference, and the arguments of those that
are calls (syntax only).

A parameter's default matters only where some caller leaves it out, and a constructor's
argument is what its instances hold; both questions need every reference to be a call whose
arguments can be read one by one. A reference that is anything else (the function handed on,
a subclass's base, a call with ``*args``/``**kwargs``) leaves them open. A name in an
annotation, or a class ``isinstance`` tests, calls nothing and hands nothing on.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from collections.abc import Iterator

#: a call's positional arguments and keywords, as written
Given = tuple[list[ast.expr], list[ast.keyword]]


def calls_of(tree: ast.Module, last: str) -> tuple[int, list[Given]]:
    """How many references ``tree`` makes to ``last`` (a name, or an attribute of that name),
    and the arguments of those that are calls (or a ``partial`` of it, past the function)."""
    def refers(n: ast.AST) -> bool:
        return (isinstance(n, ast.Name) and n.id == last) or (
            isinstance(n, ast.Attribute) and n.attr == last)

    typed = {id(sub) for n in ast.walk(tree) for ann in _annotations(n) for sub in ast.walk(ann)}
    refs = sum(1 for n in ast.walk(tree) if refers(n) and id(n) not in typed)
    given = [g for n in ast.walk(tree) if isinstance(n, ast.Call)
             and (g := _call_args(n, refers)) is not None]
    return refs, given


def every_call(tree: ast.Module, last: str) -> list[Given] | None:
    """The arguments of every reference ``tree`` makes to ``last``, where each is a call that
    names its arguments one by one; None where one is not, or where ``tree`` imports it under
    another name (whose calls name that one)."""
    refs, given = calls_of(tree, last)
    renamed = any(isinstance(n, ast.alias) and n.name.rpartition(".")[2] == last and
                  n.asname not in (None, last) for n in ast.walk(tree))
    if renamed or refs != len(given) or any(
            any(isinstance(a, ast.Starred) for a in args) or any(k.arg is None for k in kws)
            for args, kws in given):
        return None
    return given


def _annotations(n: ast.AST) -> Iterator[ast.expr]:
    """The annotations ``n`` holds itself (a parameter's, a return's, an annotated
    assignment's), and the classes an ``isinstance``/``issubclass`` call tests."""
    if isinstance(n, ast.arg) and n.annotation is not None:
        yield n.annotation
    elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.returns is not None:
        yield n.returns
    elif isinstance(n, ast.AnnAssign):
        yield n.annotation
    elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and \
            n.func.id in ("isinstance", "issubclass") and len(n.args) == 2:
        yield n.args[1]


def _call_args(n: ast.Call, refers: Callable[[ast.AST], bool]) -> Given | None:
    """The arguments a call gives the function ``refers`` names: its own call's, or a
    ``partial``'s past the function; None for another call."""
    if refers(n.func):
        return n.args, n.keywords
    if n.args and refers(n.args[0]) and (
            (isinstance(n.func, ast.Name) and n.func.id == "partial") or
            (isinstance(n.func, ast.Attribute) and n.func.attr == "partial")):
        return n.args[1:], n.keywords
    return None
