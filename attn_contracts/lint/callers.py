"""Where a module names a function or class: each reference, and the arguments of those that
are calls (syntax only).

A parameter's default matters only where some caller leaves it out, and a constructor's
argument is what its instances hold; both questions need every reference to be a call whose
arguments can be read one by one. A reference that is anything else (the function handed on,
a subclass's base, a call with ``*args``/``**kwargs``) leaves them open. A name in an
annotation, or a class ``isinstance`` tests, calls nothing and hands nothing on. A module is
read once for every name (:class:`_Index`), as these questions are asked of many names.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field

#: a call's positional arguments and keywords, as written
Given = tuple[list[ast.expr], list[ast.keyword]]


@dataclass
class _Index:
    """One module's references by name (a ``Name``, or an attribute of that name)."""

    refs: dict[str, int] = field(default_factory=dict)
    calls: dict[str, list[Given]] = field(default_factory=dict)
    #: names the module imports under another name (``from m import f as g``)
    renamed: set[str] = field(default_factory=set)


_INDEXES: weakref.WeakKeyDictionary[ast.Module, _Index] = weakref.WeakKeyDictionary()


def every_call(tree: ast.Module, last: str) -> list[Given] | None:
    """The arguments of every reference ``tree`` makes to ``last``, where each is a call (or
    a ``partial`` of it, past the function) that names its arguments one by one; None where
    one is not, or where ``tree`` imports it under another name (whose calls name that one)."""
    index = _INDEXES.get(tree)
    if index is None:
        index = _INDEXES[tree] = _index(tree)
    given = index.calls.get(last, [])
    if last in index.renamed or index.refs.get(last, 0) != len(given) or any(
            any(isinstance(a, ast.Starred) for a in args) or any(k.arg is None for k in kws)
            for args, kws in given):
        return None
    return given


def _index(tree: ast.Module) -> _Index:
    index = _Index()
    nodes = list(ast.walk(tree))
    typed = {id(sub) for n in nodes for ann in _annotations(n) for sub in ast.walk(ann)}
    for n in nodes:
        name = _name_of(n)
        if name is not None and id(n) not in typed:
            index.refs[name] = index.refs.get(name, 0) + 1
        elif isinstance(n, ast.alias) and n.asname not in (None, n.name.rpartition(".")[2]):
            index.renamed.add(n.name.rpartition(".")[2])
        if not isinstance(n, ast.Call):
            continue
        called = _name_of(n.func)
        if called is not None:
            index.calls.setdefault(called, []).append((n.args, n.keywords))
        bound = _name_of(n.args[0]) if called == "partial" and n.args else None
        if bound is not None:  # ``partial(f, ...)``: a call of ``f`` with these, later
            index.calls.setdefault(bound, []).append((n.args[1:], n.keywords))
    return index


def _name_of(n: ast.AST) -> str | None:
    """The name a reference names: a ``Name``'s, an attribute's last."""
    if isinstance(n, ast.Name):
        return n.id
    if isinstance(n, ast.Attribute):
        return n.attr
    return None


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
