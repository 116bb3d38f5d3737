"""Trace partitioning: where the sides of an ``if`` are kept apart instead of joined.

After ``if c: o, lse = a(); flag = True`` / ``else: o, lse = b(); flag = False``, a join holds
``lse`` as either kernel's and ``flag`` as either value, independently: ``if flag: lse =
convert(lse)`` then reads four combinations, two of which no run takes (``b``'s LSE converted,
``a``'s left as it is). Python runs one side and then the rest of the block with that side's
names. So where a later test of the same block reads a name the ``if`` binds, its sides go on
apart: each later statement of the block runs once per path. Paths that agree on every name
the rest of the block still tests are joined again (what tells them apart is no longer read),
and all of them at the block's end.

Bounded: a frame keeps at most :data:`PATHS` paths apart (nested blocks multiply); past it they
join as before (a may-union: sound, only less precise). The names are read from the syntax
alone, once per statement.
"""

from __future__ import annotations

import ast
import weakref
from collections.abc import Sequence

from attn_contracts.lint.classes import own_nodes
from attn_contracts.lint.values import DictV
from attn_contracts.lint.values import Seq
from attn_contracts.lint.values import Value
from attn_contracts.lint.values import alternatives
from attn_contracts.lint.values import stable_key

__all__ = ["ALIAS", "FACT", "PATHS", "bound_names", "condition", "is_boolean", "last_binding",
           "operands", "partitions", "scalar_params", "settled", "tested_after", "tested_names"]

#: the most paths one frame keeps apart (each ``if`` whose sides it keeps apart doubles them)
PATHS = 8

#: per statement (weakly: a tree linted and dropped takes its entries with it)
_BOUND: weakref.WeakKeyDictionary[ast.AST, frozenset[str]] = weakref.WeakKeyDictionary()
_TESTED: weakref.WeakKeyDictionary[ast.AST, frozenset[str]] = weakref.WeakKeyDictionary()


def bound_names(st: ast.stmt) -> frozenset[str]:
    """The plain names (``x``, never ``self.flag``) a statement stores to anywhere in its own
    scope: an attribute's value may change behind the frame's back (a method, an alias), so a
    path's own value of one never decides a later test."""
    found = _BOUND.get(st)
    if found is None:
        found = frozenset(node.id for node in own_nodes([st])
                          if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store))
        _BOUND[st] = found
    return found


def _tests(node: ast.AST) -> list[ast.expr]:
    """The expressions whose truth picks a path at ``node``."""
    if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)):
        return [node.test]
    if isinstance(node, ast.comprehension):
        return list(node.ifs)
    if isinstance(node, ast.Match):
        return [node.subject, *(c.guard for c in node.cases if c.guard is not None)]
    return []


def tested_names(st: ast.stmt) -> frozenset[str]:
    """The names read by the tests of a statement's own scope: what decides which of its paths
    runs."""
    found = _TESTED.get(st)
    if found is None:
        found = frozenset(sub.id for node in own_nodes([st]) for test in _tests(node)
                          for sub in ast.walk(test)
                          if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load))
        _TESTED[st] = found
    return found


#: per block (by its first statement; the block's length and last statement checked)
_AFTER: weakref.WeakKeyDictionary[ast.AST, tuple[int, ast.AST, list[frozenset[str]]]] = \
    weakref.WeakKeyDictionary()


def tested_after(body: Sequence[ast.stmt]) -> list[frozenset[str]]:
    """Per statement of ``body``, the names the statements after it test."""
    if not body:
        return []
    known = _AFTER.get(body[0])
    if known is not None and known[0] == len(body) and known[1] is body[-1]:
        return known[2]
    after: list[frozenset[str]] = [frozenset()] * len(body)
    seen: frozenset[str] = frozenset()
    for i in range(len(body) - 1, -1, -1):
        after[i] = seen
        seen = seen | tested_names(body[i])
    _AFTER[body[0]] = (len(body), body[-1], after)
    return after


def partitions(paths: list[dict[str, Value]], tested: frozenset[str], outer: int,
               ) -> list[list[dict[str, Value]]]:
    """The paths grouped by the values of the names the rest of the block tests (in the order
    the paths came); one group of all of them where the groups are more than :data:`PATHS`
    (``outer``: the paths already kept apart around this block)."""
    if len(paths) <= 1:
        return [paths] if paths else []
    first = paths[0]
    # a container a callee or an alias may change is never what tells paths apart
    differ = sorted(n for n in tested if any(p.get(n) != first.get(n) for p in paths[1:]) and
                    not any(isinstance(alt, (DictV, Seq)) for p in paths
                            for alt in alternatives(p.get(n))))
    if not differ:
        return [paths]
    groups: dict[tuple[str, ...], list[dict[str, Value]]] = {}
    for p in paths:
        groups.setdefault(tuple(stable_key(p.get(n)) for n in differ), []).append(p)
    if outer * len(groups) > PATHS:
        return [paths]
    return list(groups.values())


# --- conditions a path has decided ----------------------------------------------------------------
# ``flag = not is_decode`` ... ``if not is_decode:`` ... ``if flag:``: Python knows ``flag`` there,
# because the name it was computed from still holds what the test read. A test whose value is not
# known leaves, on each side, a fact (its condition held or not); a boolean computed from names
# is an alias of its condition. Both only where no statement of the function can rebind those
# names afterwards, and never in a loop (a later pass rebinds what an earlier one tested).

#: the frame's names that hold a fact and an alias (no Python name can hold these characters)
FACT = "\x00fact:"
ALIAS = "\x00alias:"

_SHAPE = (ast.Name, ast.Constant, ast.Compare, ast.BoolOp, ast.UnaryOp, ast.cmpop, ast.boolop,
          ast.unaryop, ast.expr_context)
_Scan = tuple[dict[str, int], list[tuple[int, int]], frozenset[str], frozenset[str],
              frozenset[str]]
_STABLE: weakref.WeakKeyDictionary[ast.AST, _Scan] = weakref.WeakKeyDictionary()


_CONDITIONS: weakref.WeakKeyDictionary[ast.AST, tuple[tuple[str, bool] | None, frozenset[str]]] \
    = weakref.WeakKeyDictionary()


def condition(test: ast.expr) -> tuple[str, bool] | None:
    """A test of names and constants as (its key, the truth the key's expression has when the
    test holds): ``not x`` → (key of ``x``, False). None for any other expression."""
    return _condition(test)[0]


def operands(expr: ast.expr) -> frozenset[str]:
    """The names a test reads."""
    return _condition(expr)[1]


def _condition(test: ast.expr) -> tuple[tuple[str, bool] | None, frozenset[str]]:
    known = _CONDITIONS.get(test)
    if known is None:
        known = _CONDITIONS[test] = (_read_condition(test), frozenset(
            n.id for n in ast.walk(test) if isinstance(n, ast.Name)))
    return known


def _read_condition(test: ast.expr) -> tuple[str, bool] | None:
    held = True
    while isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        test, held = test.operand, not held
    if not all(isinstance(n, _SHAPE) for n in ast.walk(test)):
        return None
    return ast.dump(test, annotate_fields=False), held


def is_boolean(value: ast.expr) -> bool:
    """An expression Python evaluates to a bool: ``not x``, a comparison, ``and``/``or`` of
    those."""
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.Not):
        return True
    if isinstance(value, ast.BoolOp):
        return all(is_boolean(v) for v in value.values)
    return isinstance(value, ast.Compare)


def _bound_by(node: ast.AST) -> list[str]:
    """The names a node of a function's own scope binds, whatever the construct."""
    if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
        return [node.id]
    if isinstance(node, ast.ExceptHandler) and node.name:
        return [node.name]
    if isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
        return [node.name]
    if isinstance(node, ast.MatchMapping) and node.rest:
        return [node.rest]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(a.asname or a.name).partition(".")[0] for a in node.names]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    return []


#: the scalar types a parameter's annotation may name (an object of one never changes in place)
_SCALARS = frozenset({"bool", "int", "float", "str"})


def _scalar(annotation: ast.expr | None) -> bool:
    if isinstance(annotation, ast.Name):
        return annotation.id in _SCALARS
    if isinstance(annotation, ast.Constant):
        return annotation.value is None
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _scalar(annotation.left) and _scalar(annotation.right)
    if isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Name) and \
            annotation.value.id == "Optional":
        return _scalar(annotation.slice)
    return False


def _scan(func: ast.AST) -> _Scan:
    """Per function: each local's last binding line, its loops' spans, the names ``global``
    or ``nonlocal`` anywhere in it, its parameters, those of them annotated with a scalar
    type."""
    known = _STABLE.get(func)
    if known is None:
        last: dict[str, int] = {}
        loops: list[tuple[int, int]] = []
        shared = frozenset(n for node in ast.walk(func)
                           if isinstance(node, (ast.Global, ast.Nonlocal)) for n in node.names)
        for node in own_nodes(list(getattr(func, "body", []))):
            for name in _bound_by(node):
                last[name] = max(last.get(name, 0), getattr(node, "lineno", 0))
            if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
                loops.append((node.lineno, getattr(node, "end_lineno", None) or node.lineno))
        args = getattr(func, "args", None)
        params = [] if not isinstance(args, ast.arguments) else [
            *args.posonlyargs, *args.args, *args.kwonlyargs,
            *([args.vararg] if args.vararg else []), *([args.kwarg] if args.kwarg else [])]
        known = _STABLE[func] = (last, loops, shared, frozenset(a.arg for a in params),
                                 frozenset(a.arg for a in params if _scalar(a.annotation)))
    return known


def settled(func: ast.AST | None, names: frozenset[str], line: int) -> bool:
    """Each of ``names`` is a local of ``func`` (a parameter, or bound in its own scope by any
    construct) that nothing binds at or after ``line``; ``line`` is in none of its loops; none
    of them is ``global`` or ``nonlocal`` anywhere in it."""
    if func is None:
        return False
    last, loops, shared, params, _ = _scan(func)
    return not _in_loop(loops, line) and not names & shared and all(
        (n in params or n in last) and last.get(n, 0) < line for n in names)


def last_binding(func: ast.AST | None, name: str, line: int) -> bool:
    """``line`` is the last place ``func`` binds its local ``name``, in none of its loops, and
    the name is neither ``global`` nor ``nonlocal``: what is bound there stays."""
    if func is None:
        return False
    last, loops, shared, _, _ = _scan(func)
    return last.get(name) == line and name not in shared and not _in_loop(loops, line)


def _in_loop(loops: list[tuple[int, int]], line: int) -> bool:
    return any(a <= line <= b for a, b in loops)


def scalar_params(func: ast.AST | None) -> frozenset[str]:
    """The parameters of ``func`` annotated with a scalar type (``bool``, ``int | None``)."""
    return frozenset() if func is None else _scan(func)[4]
