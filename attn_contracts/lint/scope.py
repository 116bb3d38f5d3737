"""Frames and scopes: statements and expressions, one handler per syntax node type.

A :class:`Scope` interprets one function's (or a module's) statements over the values of
:mod:`attn_contracts.lint.values`, the node's type choosing the handler (as pyflakes
dispatches): names and their environments, branches joined into unions, loops to a fixpoint
(:mod:`attn_contracts.lint.bounds`), assignments, and every expression but a call's
application, which :class:`~attn_contracts.lint.frame.Frame` adds.
"""

from __future__ import annotations

import ast
import itertools
import operator
import re
from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Sequence
from dataclasses import replace
from typing import Any
from typing import TypeVar
from typing import cast
from weakref import WeakKeyDictionary

from attn_contracts.findings import Location
from attn_contracts.lint.analysis import NEED_LEVELS
from attn_contracts.lint.attributes import SET_OPERATORS
from attn_contracts.lint.attributes import Resolver
from attn_contracts.lint.attributes import dataclass_decorated
from attn_contracts.lint.bounds import FUNCTION_BUDGET
from attn_contracts.lint.calls import DEFAULT
from attn_contracts.lint.calls import GENERATED_ITEM
from attn_contracts.lint.calls import PROTOCOL_METHODS as _PROTOCOL_METHODS
from attn_contracts.lint.calls import as_protocol_method
from attn_contracts.lint.calls import first_iterable_named
from attn_contracts.lint.calls import literal_value
from attn_contracts.lint.calls import nonlocal_names
from attn_contracts.lint.calls import params_of
from attn_contracts.lint.calls import place
from attn_contracts.lint.calls import source_text
from attn_contracts.lint.classes import ClassInfo
from attn_contracts.lint.classes import dotted_name
from attn_contracts.lint.classes import own_nodes
from attn_contracts.lint.containers import class_key
from attn_contracts.lint.containers import class_keyed
from attn_contracts.lint.containers import dict_key
from attn_contracts.lint.containers import dict_stored
from attn_contracts.lint.containers import element
from attn_contracts.lint.containers import entries
from attn_contracts.lint.containers import flag_values
from attn_contracts.lint.containers import index_of
from attn_contracts.lint.containers import iterate
from attn_contracts.lint.containers import literal_keys
from attn_contracts.lint.containers import literal_values
from attn_contracts.lint.containers import merge_items
from attn_contracts.lint.containers import merged
from attn_contracts.lint.containers import ordering
from attn_contracts.lint.containers import rest_of
from attn_contracts.lint.containers import truth
from attn_contracts.lint.containers import value_key
from attn_contracts.lint.exceptions import Oracle
from attn_contracts.lint.exceptions import catching
from attn_contracts.lint.exceptions import outcome
from attn_contracts.lint.flag_cases import MAX_CLASS_CASES
from attn_contracts.lint.flag_cases import PURE_BUILTINS
from attn_contracts.lint.flag_cases import FlagKey
from attn_contracts.lint.flag_cases import as_class
from attn_contracts.lint.flag_cases import assumed
from attn_contracts.lint.flag_cases import case as flag_case
from attn_contracts.lint.flag_cases import family_in
from attn_contracts.lint.flag_cases import flag_in
from attn_contracts.lint.flag_cases import key_of
from attn_contracts.lint.flag_cases import one_value
from attn_contracts.lint.flag_cases import unsettled
from attn_contracts.lint.folding import MODULE_CONSTANTS
from attn_contracts.lint.folding import UNKNOWN
from attn_contracts.lint.folding import concrete
from attn_contracts.lint.folding import concrete_options
from attn_contracts.lint.folding import fold_binop
from attn_contracts.lint.folding import fold_format
from attn_contracts.lint.inferred import Kernel
from attn_contracts.lint.inferred import Misconverted
from attn_contracts.lint.inferred import Mixed
from attn_contracts.lint.modules import captured
from attn_contracts.lint.partition import ALIAS
from attn_contracts.lint.partition import FACT
from attn_contracts.lint.partition import bound_names
from attn_contracts.lint.partition import condition
from attn_contracts.lint.partition import is_boolean
from attn_contracts.lint.partition import last_binding
from attn_contracts.lint.partition import operands
from attn_contracts.lint.partition import partitions
from attn_contracts.lint.partition import scalar_params
from attn_contracts.lint.partition import settled
from attn_contracts.lint.partition import tested_after
from attn_contracts.lint.program import FuncNode
from attn_contracts.lint.torch_model import VIEWS
from attn_contracts.lint.torch_model import as_number
from attn_contracts.lint.torch_model import chosen_join
from attn_contracts.lint.torch_model import chosen_logs
from attn_contracts.lint.torch_model import constant_name
from attn_contracts.lint.torch_model import convert
from attn_contracts.lint.torch_model import is_log_only
from attn_contracts.lint.torch_model import lose_base
from attn_contracts.lint.torch_model import lose_layout
from attn_contracts.lint.torch_model import named_number
from attn_contracts.lint.torch_model import without_logs
from attn_contracts.lint.triton_model import is_kernel
from attn_contracts.lint.values import NOT_SPECIAL
from attn_contracts.lint.values import SINGLETONS
from attn_contracts.lint.values import Arg
from attn_contracts.lint.values import Bound
from attn_contracts.lint.values import ClassKey
from attn_contracts.lint.values import ClassRef
from attn_contracts.lint.values import DictV
from attn_contracts.lint.values import Ext
from attn_contracts.lint.values import ExtInst
from attn_contracts.lint.values import Flag
from attn_contracts.lint.values import Func
from attn_contracts.lint.values import Inst
from attn_contracts.lint.values import Lit
from attn_contracts.lint.values import Lse
from attn_contracts.lint.values import Member
from attn_contracts.lint.values import ModuleRef
from attn_contracts.lint.values import Num
from attn_contracts.lint.values import Param
from attn_contracts.lint.values import Partial
from attn_contracts.lint.values import Seq
from attn_contracts.lint.values import Source
from attn_contracts.lint.values import Tup
from attn_contracts.lint.values import Union_
from attn_contracts.lint.values import Value
from attn_contracts.lint.values import alternatives
from attn_contracts.lint.values import is_empty_set
from attn_contracts.lint.values import join
from attn_contracts.lint.values import lse_of
from attn_contracts.lint.values import set_of
from attn_contracts.lint.values import source_order

#: each frame's serial (:attr:`Scope.serial`): never reused, unlike an object's id
_FRAME_SERIALS = itertools.count()


def _tuple_test(test: ast.expr | None) -> str | None:
    """``isinstance(x, tuple)`` (or ``(tuple, list)``): the name it narrows."""
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and
            test.func.id == "isinstance" and len(test.args) == 2 and
            isinstance(test.args[0], ast.Name)):
        return None
    kinds = test.args[1].elts if isinstance(test.args[1], ast.Tuple) else [test.args[1]]
    if all(isinstance(k, ast.Name) and k.id in ("tuple", "list") for k in kinds):
        return test.args[0].id
    return None


def _calls_nothing(node: ast.expr) -> bool:
    """An expression evaluated again without running code of the program: no call but
    ``super()``, no comprehension, lambda or walrus."""
    return not any(isinstance(n, (ast.comprehension, ast.Lambda, ast.NamedExpr, ast.Await,
                                  ast.Yield, ast.YieldFrom)) or
                   (isinstance(n, ast.Call) and not (isinstance(n.func, ast.Name) and
                                                     n.func.id == "super" and not n.args))
                   for n in ast.walk(node))


def _narrowing_operand(test: ast.BoolOp) -> bool:
    """Whether an operand of an ``and``/``or`` (at any depth) narrows a name alone
    (``x is None``, ``isinstance(x, tuple)``)."""
    return any(_narrowing_operand(v) if isinstance(v, ast.BoolOp) else
               _none_test(v) is not None or _tuple_test(v) is not None for v in test.values)


def _none_test(test: ast.expr | None) -> tuple[str, bool] | None:
    """``x is None`` (True) or ``x is not None`` (False): the name (dotted) it narrows."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and \
            isinstance(test.ops[0], (ast.Is, ast.IsNot)) and \
            isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None:
        name = dotted_name(test.left)
        if name is not None:
            return name, isinstance(test.ops[0], ast.Is)
    return None


def _may_be_none(value: Value) -> bool:
    """An alternative that may be ``None``: the literal, or what is not known (a parameter, an
    unknown); a tensor, an object, a function or a container is not."""
    return value is None or isinstance(value, Param) or (
        isinstance(value, Lit) and value.value is None)


def _identity(left: Value, op: ast.cmpop, right: Value,
              by_identity: Callable[[Value], bool]) -> bool | None:
    """A comparison decided by what the objects are, not their values: ``is None``
    (:func:`_none_identity`), an object compared by identity with a constant
    (:func:`_identity_equality`)."""
    found = _none_identity(left, op, right)
    return found if found is not None else _identity_equality(left, op, right, by_identity)


def _identity_equality(left: Value, op: ast.cmpop, right: Value,
                       by_identity: Callable[[Value], bool]) -> bool | None:
    """``f == "name"`` / ``f != "name"`` of an object Python compares by identity (a function,
    a bound method, a ``partial``, a module: ``by_identity``) with a literal: never equal
    (neither defines an ``__eq__`` that answers the other); None for any other pair."""
    if not isinstance(op, (ast.Eq, ast.NotEq)):
        return None
    for one, other in ((left, right), (right, left)):
        if literal_values(other) is not None and by_identity(one):
            return isinstance(op, ast.NotEq)
    return None


def _none_identity(left: Value, op: ast.cmpop, right: Value) -> bool | None:
    """``x is None`` / ``x is not None`` where every value ``x`` may hold answers it one way:
    ``None`` itself, or what is never ``None`` (an object built here, a tensor, a function, a
    container, a constant); None where one of them may be either (not known, a parameter, an
    object an annotation types). Likewise ``x is NotImplemented``, the other builtin
    singletons (:data:`SINGLETONS`)."""
    if not isinstance(op, (ast.Is, ast.IsNot)):
        return None
    def one(v: Value) -> bool:
        return (isinstance(v, Lit) and v.value is None) or (
            isinstance(v, ExtInst) and v.qualname in SINGLETONS.values())
    if one(right):
        other, it = left, right
    elif one(left):
        other, it = right, left
    else:
        return None
    options = list(alternatives(other))
    if not options or any(o is None or isinstance(o, Param | Flag) or (
            isinstance(o, ExtInst) and not one(o)) or (
            isinstance(o, Inst) and not o.exact) for o in options):
        return None  # not known, or typed by an annotation (``X | None`` reads as an X)
    nones = {o == it if isinstance(it, ExtInst) else one(o) and isinstance(o, Lit)
             for o in options}
    if len(nones) != 1:
        return None
    return nones.pop() == isinstance(op, ast.Is)


#: the unary operators of numbers, as Python applies them
_UNARY: dict[type, Callable[[Any], Any]] = {ast.Invert: operator.invert, ast.USub: operator.neg,
                                            ast.UAdd: operator.pos}


def _narrow(env: dict[str, Value], true_side: bool, narrowed: str | None,
            none_test: tuple[str, bool] | None) -> None:
    """What a name holds on one side of an ``if`` its test narrows: ``isinstance(x, tuple)``
    (the tuples there, the rest on the other side); ``x is None`` / ``x is not None`` (no None
    where it is not; only what may be None where it is)."""
    if narrowed is not None and narrowed in env:
        keep = [a for a in alternatives(env[narrowed]) if isinstance(a, Tup) == true_side]
        env[narrowed] = join(keep) if keep else None
    if none_test is not None and none_test[0] in env:
        name, is_none = none_test
        none_side = is_none == true_side
        keep = [a for a in alternatives(env[name]) if (
            _may_be_none(a) if none_side else not (isinstance(a, Lit) and a.value is None))]
        env[name] = join(keep) if keep else Lit(None)


def _case_matches(pattern: ast.pattern, subject: Sequence[object] | None,
                  evaluate: Callable[[ast.expr], Value]) -> bool | None:
    """Whether a ``case`` pattern matches a subject that is one of the literals ``subject``
    (None: not known): a capture or ``_`` always does (``case NAME:`` binds, never compares); a
    value pattern compares with ``==``, ``None``/``True``/``False`` with ``is``; None where
    it is not known."""
    if isinstance(pattern, ast.MatchAs):
        return True if pattern.pattern is None else _case_matches(pattern.pattern, subject,
                                                                  evaluate)
    if isinstance(pattern, ast.MatchOr):
        each = [_case_matches(p, subject, evaluate) for p in pattern.patterns]
        return True if True in each else (False if all(h is False for h in each) else None)
    if subject is None:
        return None
    hits: set[bool]
    if isinstance(pattern, ast.MatchSingleton):
        hits = {s is pattern.value for s in subject}
    elif isinstance(pattern, ast.MatchValue):
        values = literal_values(evaluate(pattern.value))
        if values is None or len(values) != 1:
            return None
        hits = {s == values[0] for s in subject}
    else:
        return None
    return hits.pop() if len(hits) == 1 else None


#: the builtin classes a class pattern with one positional sub-pattern matches as a whole
#: (``case int(n):`` binds the subject itself)
_SELF_MATCHING = frozenset({"bool", "bytearray", "bytes", "dict", "float", "frozenset", "int",
                            "list", "set", "str", "tuple"})

#: a name no code binds: what a capture is bound to where the part it takes is not read
_UNREAD_PART = "match part not read"

#: the builtin scalar classes a class pattern tests a constant against
_CLASS_TYPES: dict[str, type] = {"bool": bool, "int": int, "float": float, "str": str,
                                 "bytes": bytes}


def _builtin_class_parts(p: ast.MatchClass, name: str, value: Value, subject: ast.expr,
                         ) -> object:
    """``case int():``, ``case str(s):`` of a constant: whether it is of that builtin type
    (``True`` is an ``int``), with the one positional sub-pattern matched against it whole;
    None where the value is not a known constant."""
    alts = list(alternatives(value))
    if name not in _CLASS_TYPES or not alts or not all(isinstance(a, Lit) for a in alts) or \
            p.kwd_patterns or len(p.patterns) > 1:
        return None
    verdicts = {isinstance(cast(Lit, a).value, _CLASS_TYPES[name]) for a in alts}
    if verdicts == {False}:
        return False
    if verdicts != {True}:
        return None
    return [(q, value, subject) for q in p.patterns]


def _mapping_parts(p: ast.MatchMapping, value: Value, subject: ast.expr) -> object:
    """A mapping pattern's sub-patterns with the dict's values they match (``value`` a dict
    of known keys); False where a key it names is surely not there."""
    if not isinstance(value, DictV) or value.missing is not None:
        return None
    held = dict(value.items)
    out: list[tuple[ast.pattern, Value, ast.expr]] = []
    for key, q in zip(p.keys, p.patterns, strict=True):
        k = key.value if isinstance(key, ast.Constant) else None
        if not isinstance(k, str):
            return None
        if k not in held:
            return False
        if k in value.maybe:
            return None
        out.append((q, held[k].value, ast.Subscript(subject, key, ast.Load())))
    return out


def _keyword_only_dataclass(cls: ClassInfo) -> bool:
    """A class whose dataclass decorator or fields may take a field out of its generated
    ``__match_args__`` (``kw_only=``, ``match_args=``, ``field(init=...)``, ``KW_ONLY``)."""
    calls = [d for d in cls.decorators if isinstance(d, ast.Call)]
    calls += [v for v, _, _ in cls.attrs.values() if isinstance(v, ast.Call)]
    return any(k.arg in ("kw_only", "match_args", "init") for c in calls for k in c.keywords) or \
        any("KW_ONLY" in ast.dump(a) for a in cls.annotations.values())


def _keys(key: ast.expr, value: Value) -> list[str] | None:
    """The table keys a subscript by a computed key may be: each class ``type(obj)`` may be
    (each one for sure), else each known literal (``TABLE[name]``, the name a known string)."""
    if isinstance(key, (ast.Constant, ast.Slice)):
        return None
    classes = [class_key(k) for k in alternatives(value)]
    if classes and None not in classes:
        return [k for k in classes if k is not None]
    return literal_keys(value)


def _indices(key: ast.expr, value: Value) -> list[int]:
    """The positions a subscript may read: a constant one, or each known int (a bool too) the
    key may be; none where one of them is not known."""
    index = index_of(key)
    if index is not None:
        return [index]
    values = literal_values(value) or []
    ints = [v for v in values if isinstance(v, int)]
    return ints if ints and len(ints) == len(values) else []


def _on_base_test(test: ast.expr, base_attrs: frozenset[str]) -> bool:
    for sub in ast.walk(test):
        if isinstance(sub, ast.Attribute) and (sub.attr in base_attrs or "base" in sub.attr.lower()):
            return True
        if isinstance(sub, ast.Name) and "base" in sub.id.lower():
            return True
    return False


#: the longest ``try`` body whose handlers are run after each of its prefixes (a longer one:
#: from the state before the body)
_TRY_PREFIXES = 6
#: the most items of a literal tuple whose loop is run once per item
_UNROLLED = 8
#: the most passes of nested loops run once per item (the product of their lengths): an inner
#: loop past it is run to a fixpoint instead
_UNROLLED_NESTED = 64
#: the most elements a comprehension is run once per element for (past it: any element)
_COMPREHENDED = 32
#: the longest f-string built (as the folded strings: a longer one is not read)
_FSTRING_MAX = 4096


def _unrollable(body: list[ast.stmt]) -> bool:
    """A loop body run once per item as it is written (no ``yield`` or ``while`` at any depth
    of its own; a ``break`` or ``continue`` ends its pass, a ``return`` its path; an inner
    ``for`` is unrolled in its turn while the passes stay few): one pass per item is the
    loop."""
    return not any(isinstance(n, (ast.Yield, ast.YieldFrom, ast.While))
                   for n in own_nodes(body))


#: the name a class body's comprehension reads its first iterable by (run in the class scope)
_FIRST_ITERABLE = "<first iterable>"
#: the prefix of the environment's key marking a generator bound to a name and not consumed
LAZY = "\x00lazy:"
#: ``env[VIEW + name]``: the name's tensor a view of another's (:func:`_view_lit`)
VIEW = "\x00view:"


#: the longest list ``[x] * n`` built item by item
_REPEATED_MAX = 64


def _repeated(left: Value, op: ast.operator, right: Value) -> Tup | None:
    """``[x] * n`` / ``n * [x]`` of a list of known positions holding a container: the same
    objects repeated, as Python repeats them (``[[]] * 2`` is one list twice: a change through
    one item is seen through the other). None for anything else (numbers, strings and lists
    of them are folded as values)."""
    if not isinstance(op, ast.Mult):
        return None
    seq, n = (left, right) if isinstance(left, Tup) else (right, left)
    count = concrete(n)
    if not isinstance(seq, Tup) or seq.partial_items or type(count) is not int or \
            not any(isinstance(x, (Tup, Seq, DictV)) for x in seq.items) or \
            len(seq.items) * max(count, 0) > _REPEATED_MAX:
        return None
    return Tup(seq.items * max(count, 0), mutable=seq.mutable, repeated=True)


#: per function node, weakly (a memo keyed by ``id()`` outlives its node: a later tree's node at
#: the freed address would read the stale entry, so a long process's results would vary)
_STORES: WeakKeyDictionary[ast.AST, tuple[list[tuple[int, str]],
                                          list[tuple[int, int, frozenset[str]]]]] = \
    WeakKeyDictionary()


def _rebound_after(enclosing: ast.AST | None, inner: ast.AST) -> frozenset[str]:
    """The names the function ``enclosing`` binds after the line where ``inner`` (a nested
    function or lambda) is made, or anywhere in a loop around it."""
    if not isinstance(enclosing, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return frozenset()
    key = enclosing
    if key not in _STORES:
        body: list[ast.stmt] = enclosing.body if isinstance(enclosing.body, list) else \
            [ast.Expr(enclosing.body)]
        stores = [(n.lineno, n.id) for n in own_nodes(body) if isinstance(n, ast.Name) and
                  isinstance(n.ctx, ast.Store)]
        loops = [(n.lineno, n.end_lineno or n.lineno, frozenset(
            m.id for m in ast.walk(n) if isinstance(m, ast.Name) and isinstance(m.ctx, ast.Store)))
            for n in own_nodes(body) if isinstance(n, (ast.For, ast.AsyncFor, ast.While))]
        _STORES[key] = (stores, loops)
    stores, loops = _STORES[key]
    line = getattr(inner, "lineno", 0)
    after = {name for at, name in stores if at > line}
    for start, end, names in loops:
        if start <= line <= end:
            after |= names
    return frozenset(after)


def _with_item(held: Value, before: Value, after: Value) -> Value | object:
    """``held`` (a tuple of known positions or a dict) with its item ``before`` changed into
    ``after`` where it holds it: every position holding that object where they are known to
    be one (``[[]] * 2``); not known where two positions hold one value that may be two
    objects; NOT_SPECIAL where it does not hold it."""
    if isinstance(held, Tup) and not held.partial_items and \
            any(x is before for x in held.items):
        if sum(x is before for x in held.items) > 1 and not held.repeated:
            return None
        return replace(held, items=tuple(after if x is before else x for x in held.items))
    if isinstance(held, DictV) and any(a.value is before for _, a in held.items):
        if sum(a.value is before for _, a in held.items) > 1:
            return None
        return replace(held, items=tuple((k, replace(a, value=after) if a.value is before
                                          else a) for k, a in held.items))
    return NOT_SPECIAL


def _holds(container: Value, item: Value) -> bool:
    """``item`` (that very object) is among the items ``container`` holds, at any depth."""
    for alt in alternatives(container):
        inner: tuple[Value, ...] = ()
        if isinstance(alt, Tup):
            inner = alt.items
        elif isinstance(alt, Seq):
            inner = (alt.item,)
        elif isinstance(alt, DictV):
            inner = tuple(a.value for _, a in alt.items)
        if any(x is item or (x is not None and _holds(x, item)) for x in inner):
            return True
    return False


def _spliced(elts: list[ast.expr], values: list[Value]) -> list[Value] | None:
    """The items of a display with ``*x`` where each ``x`` is a tuple known item by item (a
    list literal, a tuple): the starred one's items in its place; None where one is not."""
    if not any(isinstance(e, ast.Starred) for e in elts):
        return None
    out: list[Value] = []
    for e, v in zip(elts, values, strict=True):
        if not isinstance(e, ast.Starred):
            out.append(v)
        elif isinstance(v, Tup) and not v.partial_items:
            out.extend(v.items)
        else:
            return None
    return out


def _ends(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


_LOADED: WeakKeyDictionary[ast.AST, frozenset[str]] = WeakKeyDictionary()  # as _STORES


def _loaded_names(node: ast.AST) -> frozenset[str]:
    """The names a function or lambda reads anywhere in its body."""
    key = node
    if key not in _LOADED:
        _LOADED[key] = frozenset(n.id for n in ast.walk(node)
                                 if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
                                 ) | nonlocal_names(node)
    return _LOADED[key]


_H = TypeVar("_H", bound=Callable[..., Any])


#: syntax node type -> the Scope method that interprets it (filled by ``@_on`` as the class is
#: defined: each handler names its node types where it is written, as pyflakes dispatches)
_STMT: dict[type, Callable[[Scope, Any], None]] = {}


_EXPR: dict[type, Callable[[Scope, Any], Value]] = {}
#: the expressions read case by case where a flag they hold leaves them unread
_BY_CASE = (ast.Call, ast.Compare, ast.BoolOp, ast.UnaryOp, ast.IfExp, ast.BinOp, ast.Subscript,
            ast.Attribute)
#: what may bind a name or make a function where it is read again
_IMPURE = (ast.NamedExpr, ast.Lambda, ast.Yield, ast.YieldFrom, ast.Await, ast.ListComp,
           ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _on(table: dict[type, Any], *types: type) -> Callable[[_H], _H]:
    """Registers the decorated method as ``table``'s handler of ``types``."""

    def register(fn: _H) -> _H:
        table.update(dict.fromkeys(types, fn))
        return fn

    return register


def _target_name(target: ast.expr) -> str | None:
    """The name an assignment binds: ``x`` of ``x = ...`` and of ``self.x = ...``."""
    return target.id if isinstance(target, ast.Name) else (
        target.attr if isinstance(target, ast.Attribute) else None)


def told_names(fn: ast.AST, base_word: Callable[[str | None], bool],
               asked: Collection[int] = ()) -> frozenset[str]:
    """The local names whose value may reach a base in ``fn``'s own body: read in a base
    keyword's argument or in what a base name or attribute is assigned, and, in turn, read in
    what such a name is assigned (``natural = pick(name)`` before ``is_lse_base_on_e=natural``):
    their assignments' calls are read for their values, whatever the names are. ``asked``:
    the ids of expressions a question asks the value of (an argument passed by position),
    read like a base keyword's argument."""
    body = getattr(fn, "body", None)
    if not isinstance(body, list):
        return frozenset()  # a lambda: one expression, nothing assigned
    sinks, flows = _sinks_and_flows(body, base_word)
    if asked:
        sinks += [n for n in own_nodes(body) if isinstance(n, ast.expr) and id(n) in asked]
    told = set().union(*(_names_in(e) for e in sinks))
    changed = True
    while changed:
        changed = False
        for bound, value in flows:
            read = _names_in(value) - told if bound & told else set()
            if read:
                told |= read
                changed = True
    return frozenset(told)


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _sinks_and_flows(body: list[ast.stmt], base_word: Callable[[str | None], bool],
                     ) -> tuple[list[ast.expr], list[tuple[set[str], ast.expr]]]:
    """The expressions a base is read from (a base keyword's argument, what a base name or
    attribute is assigned), and each assignment's bound names with its value."""
    sinks: list[ast.expr] = []
    flows: list[tuple[set[str], ast.expr]] = []
    for node in own_nodes(body):
        if isinstance(node, ast.keyword) and base_word(node.arg):
            sinks.append(node.value)
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and \
                node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(base_word(_target_name(t)) for t in targets):
                sinks.append(node.value)
            bound = set().union(*(_names_in(t) for t in targets))
            if bound:
                flows.append((bound, node.value))
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            # ``with cm(x) as name``: name is bound to what the manager's call gives
            flows.append((_names_in(node.optional_vars), node.context_expr))
    return sinks, flows


#: decorators that make a generator function a context manager (``contextlib``'s)
_MANAGER_DECORATORS = frozenset({"contextmanager", "asynccontextmanager"})


def _after_yield(body: list[ast.stmt]) -> tuple[str, list[ast.stmt]] | None:
    """A context manager's ``yield name`` (at its body's top level, or in a ``with`` or
    ``try`` there) and the statements that run after it when the block exits; None where it
    yields otherwise."""
    for i, st in enumerate(body):
        if isinstance(st, ast.Expr) and isinstance(st.value, ast.Yield):
            value = st.value.value
            return (value.id, body[i + 1:]) if isinstance(value, ast.Name) else None
        if isinstance(st, (ast.With, ast.AsyncWith, ast.Try)):
            inner = _after_yield(st.body)
            if inner is not None:
                tail = st.finalbody if isinstance(st, ast.Try) else []
                return inner[0], [*inner[1], *tail, *body[i + 1:]]
    return None


class Scope:
    """One function's (or a module's) interpretation."""


    def __init__(self, interp: Resolver, path: str, func: Func | None, self_value: Inst | None,
                 owner: ClassKey | None):
        self.i, self.path, self.func, self.self_value, self.owner = (interp, path, func,
                                                                     self_value, owner)
        self.env: dict[str, Value] = {}
        #: which frame an argument's buffer names a variable of (:attr:`Arg.buffers`)
        self.serial = next(_FRAME_SERIALS)
        self.returns: list[Value] = []
        self.kernels: set[Kernel] = set()
        self.produced: set[Kernel] = set()
        self.on_base = 0
        self.module_level = func is None
        self.node: ast.AST | None = None  # the function's syntax node
        self.k = interp.knowledge(path)
        self.entry: Location | None = None  # the call that started this frame
        self._consumers: int | None = None
        self.param_ids: set[int] = set()  # the values its caller passed in
        self.yields: list[Value] = []  # a generator's yielded values
        self.misconverted: list[Misconverted] = []  # its conversions of the wrong base
        #: names an assignment rebinds, and those whose tensor a method changed in place (a
        #: parameter changed so and never rebound is the caller's argument, changed)
        self.rebound: set[str] = set()
        #: the parameters the call left out whose default is no literal, and that call
        self.defaulted: dict[str, Location] = {}
        self.inplace_names: set[str] = set()
        self.own_steps = 0  # its own statements (its budget: bounds.FUNCTION_BUDGET)
        self.cut = False  # a statement was left out past the budget
        #: the call nodes found calling a function that raises on every path
        self.never_returned: set[int] = set()
        #: the path being interpreted has returned or raised: what follows it never runs
        self.ended = False
        #: each loop's passes already interpreted, by their entry values (bounds.Bounds.loop)
        self.loop_memo: dict[tuple[object, ...], Any] = {}
        #: per loop being interpreted (innermost last): the names on the paths that left it by
        #: ``break`` (they skip its ``else``), and on those that went to its next pass by
        #: ``continue``
        self.breaks: list[list[dict[str, Value]]] = []
        self.continues: list[list[dict[str, Value]]] = []
        #: passes of the loops being unrolled around this point (the product of their lengths)
        self.unrolled = 1
        #: the names a class body binds, where this frame runs one (a comprehension there
        #: does not see them)
        self.class_names: frozenset[str] = frozenset()
        self.in_class_comprehension = False
        #: the first flag an expression being read holds (:mod:`.flag_cases`), and the bool
        #: each flag is assumed to read while an expression of it is read case by case
        self.flag_read: Flag | Inst | None = None
        self.flags_assumed: dict[FlagKey, bool] = {}
        #: the object of a family being read as one of exactly one class of it
        self.class_assumed: tuple[Inst, Inst] | None = None
        #: values read under an assumption in the statement being run, by node and assumption
        self.case_memo: dict[tuple[object, ...], Value] = {}
        #: the variables of the comprehensions being run (a lambda made there reads their
        #: last value when it runs), and that last value where it is known
        self.comprehended: frozenset[str] = frozenset()
        self.late_final: dict[str, Value] = {}
        #: the comprehensions being run, innermost last (:meth:`_runs_when`)
        self.comprehending: list[ast.AST] = []
        #: what the ``:=`` of the comprehensions being run bind (PEP 572: in the enclosing
        #: function's scope, so the last run's value outlives the comprehension); None outside
        self.walrus: dict[str, Value] | None = None
        #: the value expression of the assignment being run (what is bound to a name)
        self.stored: ast.expr | None = None
        #: a generator expression bound to a name (run later, when consumed)
        self.lazy: ast.expr | None = None
        #: the generator the assignment being run binds, with its first iterable's value
        self.pending_lazy: tuple[ast.GeneratorExp, Value] | None = None
        #: the generators bound to names and not yet consumed, by the id of the value bound
        #: (kept with it); ``env[LAZY + name]`` is that value on the paths it is unconsumed on
        self.lazies: dict[int, tuple[ast.GeneratorExp, Value, Value]] = {}
        #: per name, the names that hold the same container object (``ys = xs``)
        self.same: dict[str, frozenset[str]] = {}
        #: a name was bound to a view of another's tensor here (``env[VIEW + name]``), and
        #: the names viewed so (on some path)
        self.viewing = False
        self.viewed: set[str] = set()
        #: the paths this frame keeps apart now (lint.partition): at most PATHS
        self.paths = 1
        self.aliased = False  # a name holds a condition's alias (lint.partition.ALIAS)
        #: module-level names this function reads and changes as the analysis's overlay
        #: (Analysis.overlay), and their values where each path returned
        self.overlaid: tuple[str, ...] = ()
        #: other names whose values each returning path leaves are kept too (a constructor's
        #: ``self.<field>``: what the object holds once it is built)
        self.kept: tuple[str, ...] = ()
        self.exits: list[dict[str, Value]] = []

    def block(self, body: list[ast.stmt], tested: frozenset[str] = frozenset(),
              ) -> list[dict[str, Value]]:
        """The statements of ``body`` in order. ``tested``: the names the enclosing blocks
        test after it (a side of an ``if`` whose paths are kept apart): where its paths differ
        on one, they are returned apart (else an empty list; ``self.env`` is their join)."""
        kept: list[dict[str, Value]] = []  # the paths kept apart (lint.partition), if several
        after: list[frozenset[str]] = []
        for i, stmt in enumerate(body):
            if kept:
                kept = self._on_each(kept, stmt, after[i] | tested)
            elif self.ended:
                return []  # every path here returned or raised: the rest is dead code
            elif isinstance(stmt, ast.If) and _ends(stmt.body) and not stmt.orelse:
                # `if c: ...; return` — what follows runs only when c is false: the else side
                self.branches([stmt.body, body[i + 1:]], stmt.test, self.i.truth(self.expr(stmt.test)))
                return []
            elif isinstance(stmt, ast.If) and bound_names(stmt) and not bound_names(
                    stmt).isdisjoint((after := after or tested_after(body))[i] | tested):
                kept = self._on_each([self.env], stmt, after[i] | tested)
            else:
                self.stmt(stmt)
                continue
            if len(kept) <= 1:  # one path left (or none: each returned or raised)
                self.env, self.ended, kept = (kept[0], False, []) if kept else (self.env, True, [])
                if self.ended:
                    return []
        if kept:
            # every path began as the same environment: a name one lacks, it lacked before
            self.env, self.ended = self._join(kept, {}), False
        return kept

    def _on_each(self, paths: list[dict[str, Value]], st: ast.stmt,
                 tested: frozenset[str]) -> list[dict[str, Value]]:
        """``st`` run on each path kept apart; an ``if`` that binds a name a later test reads
        (``tested``) keeps its sides apart too. The paths that went on, those that agree on
        every name a later test reads joined (lint.partition)."""
        results: list[dict[str, Value]] = []
        outer = self.paths
        self.paths = outer * len(paths)
        try:
            for env in paths:
                self.env, self.ended = env, False
                if isinstance(st, ast.If) and not bound_names(st).isdisjoint(tested):
                    if self.counted(st):
                        results += self.branches([st.body, st.orelse], st.test,
                                                 self.i.truth(self.expr(st.test)), tested=tested)
                    else:
                        results.append(self.env)
                else:
                    self.stmt(st)
                    if not self.ended:
                        results.append(self.env)
        finally:
            self.paths = outer
        return [self._join(g, {}) for g in partitions(results, tested, outer)]

    def counted(self, st: ast.stmt) -> bool:
        """One more statement of the function's and the run's budgets; False past either (a
        note names the function)."""
        self.own_steps += 1
        if self.own_steps > FUNCTION_BUDGET or self.i.budget <= 0:
            self.i.bounds.note(self, "function budget" if self.i.budget > 0 else "run budget",
                               "the statements after this one are not interpreted", st)
            self.cut = True
            return False
        self.i.budget -= 1
        self.i.steps += 1
        return True

    def stmt(self, st: ast.stmt) -> None:
        if not self.counted(st):
            return
        self.case_memo.clear()  # what an expression read under an assumption held till now
        handler = _STMT.get(type(st))
        if handler is not None:
            handler(self, st)
        else:
            for child in ast.iter_child_nodes(st):
                if isinstance(child, ast.expr):
                    self.expr(child)

    def _told(self, targets: list[ast.expr]) -> bool:
        """Whether an assignment binds what may reach a base (:func:`told_names`)."""
        if any(self.i.base_word(_target_name(t)) for t in targets):
            return True
        if self.node is None:
            return False
        if self.i.watched:  # a question's: what reaches the expression it asks of too
            key = id(self.node)
            told = self.i.asked_told.get(key)
            if told is None:
                told = self.i.asked_told[key] = told_names(self.node, self.i.base_word,
                                                           self.i.watched.keys())
        elif (told := self.i.told_names.get(self.node)) is None:
            told = self.i.told_names[self.node] = told_names(self.node, self.i.base_word)
        return any(isinstance(n, ast.Name) and n.id in told
                   for t in targets for n in ast.walk(t))

    @_on(_STMT, ast.Assign)
    def s_assign(self, st: ast.Assign) -> None:
        self.stored = self.lazy = st.value
        self.pending_lazy = None
        value = self.needed(st.value) if self._told(st.targets) else self.expr(st.value)
        prior = self.env.get(VIEW + st.targets[0].id) \
            if self.viewing and isinstance(st.targets[0], ast.Name) else None
        for t in st.targets:
            self.assign(t, value, st.value)
        self._kept_lazy(st.targets)
        self._aliased(st.targets, st.value, value)
        self._viewing(st.targets, st.value, prior)
        target = st.targets[0]
        if len(st.targets) == 1 and isinstance(target, ast.Name) and is_boolean(st.value) and \
                truth(value) is None and (cond := condition(st.value)) is not None and \
                self._stays(operands(st.value), st.lineno) and \
                last_binding(self.node, target.id, st.lineno):
            # ``flag = not is_decode``: what a later test of ``not is_decode`` decided, flag is
            self.env[ALIAS + target.id] = Lit(f"{cond[0]}\x00{int(cond[1])}", None)
            self.aliased = True

    def _kept_lazy(self, targets: list[ast.expr]) -> None:
        """A generator just bound to one name: run when that name is first read."""
        pending, self.pending_lazy = self.pending_lazy, None
        if pending is None or len(targets) != 1 or not isinstance(targets[0], ast.Name) or \
                targets[0].id not in self.env:
            return
        bound = self.env[targets[0].id]
        self.lazies[id(bound)] = (*pending, bound)
        self.env[LAZY + targets[0].id] = bound

    def _consumed(self, name: str, value: Value) -> Value:
        """The generator bound to ``name``, read for the first time on this path: Python runs
        it now, so its conditions and elements read the names of the function as they are
        here (a name rebound since it was made included). Read again, it is spent: what it
        may yield is not known."""
        if self.env.get(LAZY + name) is not value or id(value) not in self.lazies:
            return value
        node, first, _ = self.lazies[id(value)]
        self.env[LAZY + name] = None  # spent on this path (kept, so a join says so)
        renamed = cast(ast.GeneratorExp, first_iterable_named(node, _FIRST_ITERABLE,
                                                              self.i.synthetic))
        lazy, self.lazy = self.lazy, None
        self.env[_FIRST_ITERABLE] = first
        try:
            return self._comprehension(renamed)
        finally:
            self.env.pop(_FIRST_ITERABLE, None)
            self.lazy = lazy

    @_on(_STMT, ast.AnnAssign)
    def s_annassign(self, st: ast.AnnAssign) -> None:
        if st.value is not None:
            self.stored = self.lazy = st.value
            value = self.needed(st.value) if self._told([st.target]) else self.expr(st.value)
            if value is None and isinstance(st.target, ast.Attribute):
                value = self.i.resolve_annotation(self.path, st.annotation)
            self.assign(st.target, value, st.value)

    @_on(_STMT, ast.AugAssign)
    def s_augassign(self, st: ast.AugAssign) -> None:
        current = self.expr(st.target)
        name = st.target.id if isinstance(st.target, ast.Name) else None
        shared = self.same.get(name, frozenset()) if name is not None else frozenset()
        after = self.binop(st.target, current, st.op, st.value)
        self.assign(st.target, after)
        if shared:
            # ``ys += more`` extends a list in place (every name holding it sees that) but
            # rebinds a tuple: where ``ys`` is not known to hold a list, the others are not
            # read any more
            in_place = isinstance(current, Tup) and current.mutable and isinstance(after, Tup)
            if in_place:
                for n in shared:
                    self.same[n] = shared
            for other in shared - {name}:
                if self.env.get(other) is current:
                    self.env[other] = self.env.get(cast(str, name)) if in_place else None

    @_on(_STMT, ast.Expr)
    def s_expr(self, st: ast.Expr) -> None:
        self.expr(st.value)
        if id(st.value) in self.never_returned:
            # a call statement of a function that raises on every path (``unsupported(x)``
            # closing an ``if`` chain): nothing after it runs, the function does not run off
            # its end there
            self.ended = True

    @_on(_STMT, ast.Return)
    def s_return(self, st: ast.Return) -> None:
        value = None if st.value is None else self.i.bounds.value(self, self.expr(st.value), st)
        self.returns.append(value)
        if self.overlaid or self.kept:
            self.exits.append({n: self.env.get(n) for n in (*self.overlaid, *self.kept)})
        if self.i.returned is not None and value is not None:
            self.i.returned.append((place(self.path, st), value))
        self.ended = True

    @_on(_STMT, ast.Raise)
    def s_raise(self, st: ast.Raise) -> None:
        for child in (st.exc, st.cause):
            if child is not None:
                self.expr(child)
        self.ended = True

    @_on(_STMT, ast.Assert)
    def s_assert(self, st: ast.Assert) -> None:
        """``assert x``: ``if not x: raise`` (engines run without ``-O``): a path on which
        ``x`` is false ends here; one where it is true or not known goes on."""
        if self.i.truth(self.expr(st.test)) is False:
            if st.msg is not None:
                self.expr(st.msg)
            self.ended = True

    @_on(_STMT, ast.If)
    def s_if(self, st: ast.If) -> None:
        self.branches([st.body, st.orelse], st.test, self.i.truth(self.expr(st.test)))

    @_on(_STMT, ast.For, ast.AsyncFor)
    def s_for(self, st: ast.For | ast.AsyncFor) -> None:
        iterable = self.i.enum_members(self.expr(st.iter))
        self.breaks.append([])
        try:
            if isinstance(iterable, Tup) and not iterable.partial_items and \
                    not iterable.items:
                exits = True  # nothing to iterate: the body never runs, the else does
            elif isinstance(iterable, Tup) and not iterable.partial_items and \
                    0 < len(iterable.items) <= _UNROLLED and \
                    self.unrolled * len(iterable.items) <= _UNROLLED_NESTED and \
                    _unrollable(st.body):
                # a loop over a literal tuple runs its body once per item, in order, as
                # Python does: what one pass stores under its key keeps that pass's values
                # (``for name, base in (("FI", False), ("FA", True)): T[name] = ...``); a
                # pass that breaks on every path is the last
                exits = self._unrolled(st.target, iterable.items, st.body)
            else:
                self.assign(st.target, iterate(iterable))
                self.loop(st.body, st)
                exits = True
        finally:
            broke = self.breaks.pop()
        self._after_loop(exits, st.orelse, broke)

    def _unrolled(self, target: ast.expr, items: tuple[Value, ...],
                  body: list[ast.stmt]) -> bool:
        """The body once per item; whether a path runs past the last item (not every path
        broke or returned on the way)."""
        self.unrolled *= len(items)
        try:
            return self._passes(target, items, body)
        finally:
            self.unrolled //= len(items)

    def _passes(self, target: ast.expr, items: tuple[Value, ...],
                body: list[ast.stmt]) -> bool:
        for item in items:
            self.assign(target, item)
            self.continues.append([])
            self.block(body)
            ends = ([] if self.ended else [self.env]) + self.continues.pop()
            if not ends:
                return False  # every path broke (or returned): no next pass, no else
            self.ended = False
            self.env = self.join_envs(ends, self.env) if len(ends) > 1 else ends[0]
        return True

    def _after_loop(self, exits: bool, orelse: list[ast.stmt],
                    broke: list[dict[str, Value]]) -> None:
        """A loop's ``else`` runs on the paths that ran out of items (``exits``), never on one
        that left by ``break``; after it, those paths join the ones that broke."""
        if exits:
            self.block(orelse)
        ends = ([] if self.ended or not exits else [self.env]) + broke
        if broke or not exits:
            self.ended = not ends  # no path runs out of it, and none broke: none goes on
            if ends:
                # a name one path lacks is unbound (or the object's) there, never another's
                self.env = self.join_envs(ends, {}) if len(ends) > 1 else dict(ends[0])

    @_on(_STMT, ast.While)
    def s_while(self, st: ast.While) -> None:
        self.expr(st.test)
        self.breaks.append([])
        try:
            self.loop(st.body, st)
        finally:
            broke = self.breaks.pop()
        # ``while True:`` (a constant true test) leaves only by ``break`` (or a return or
        # raise inside): no path runs out of it
        forever = isinstance(st.test, ast.Constant) and bool(st.test.value)
        self._after_loop(not forever, st.orelse, broke)

    @_on(_STMT, ast.Break)
    def s_break(self, st: ast.Break) -> None:
        if self.breaks:
            self.breaks[-1].append(dict(self.env))
        self.ended = True  # the rest of the pass never runs on this path

    @_on(_STMT, ast.Continue)
    def s_continue(self, st: ast.Continue) -> None:
        if self.continues:
            self.continues[-1].append(dict(self.env))
        self.ended = True

    @_on(_STMT, ast.With, ast.AsyncWith)
    def s_with(self, st: ast.With | ast.AsyncWith) -> None:
        resumed: list[tuple[ast.expr, str, FuncNode]] = []
        for item in st.items:
            told = item.optional_vars is not None and self._told([item.optional_vars])
            value = self.needed(item.context_expr) if told else self.expr(item.context_expr)
            manager = self._generator_manager(item.context_expr)
            if item.optional_vars is None:
                continue
            # ``with cm(...) as x``: of a ``@contextmanager`` generator, what it yields first
            # (its body runs to the yield on entering); of any other manager, what its
            # ``__enter__`` returns, not followed
            self.assign(item.optional_vars, None if manager is None else
                        element(value, 0) if isinstance(value, Tup) else iterate(value))
            if manager is not None:
                resumed.append((item.optional_vars, *manager))
        self.block(st.body)
        for target, path, node in reversed(resumed):  # exits run innermost first
            self._resume(target, path, node, st.body)

    def _generator_manager(self, expr: ast.expr) -> tuple[str, FuncNode] | None:
        """The generator function a ``@contextmanager`` call runs (its file and node); None
        where ``expr`` is no such call."""
        if not isinstance(expr, ast.Call):
            return None
        funcs = list(alternatives(self.expr(expr.func)))
        func = funcs[0] if len(funcs) == 1 and isinstance(funcs[0], Func) else None
        node = None if func is None else func.node or self.i.p.function(func.path, func.qualname)
        if func is None or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or \
                not any((dotted_name(d) or "").rpartition(".")[2] in _MANAGER_DECORATORS
                        for d in node.decorator_list):
            return None
        return func.path, node

    def _resume(self, target: ast.expr, path: str, node: FuncNode, body: list[ast.stmt]) -> None:
        """The ``with`` block exits: the generator runs on from its ``yield name``. What it
        does there to the object it yielded in place (``lse.mul_(c)``), the ``as`` target
        holds too, where the block did not rebind the name (another object then)."""
        after = _after_yield(node.body)
        if after is None or not isinstance(target, ast.Name) or any(
                isinstance(n, ast.Name) and n.id == target.id and not isinstance(n.ctx, ast.Load)
                for st in body for n in ast.walk(st)):
            return
        yielded, rest = after
        frame = type(self)(self.i, path, None, None, None)  # the rest of the generator's code
        frame.env[yielded] = self.env.get(target.id)
        for st in rest:
            frame.stmt(st)
        if yielded in frame.inplace_names and yielded not in frame.rebound:
            self.in_place(target, frame.env.get(yielded))

    @_on(_STMT, ast.Try, ast.TryStar)
    def s_try(self, st: ast.Try) -> None:
        before_try = len(self.returns)
        if isinstance(st, ast.TryStar):
            # ``except*``: every handler whose type matches a part of the group runs, one
            # after the other: each one may or may not
            self.branches([[*st.body, *st.orelse], []])
            for handler in st.handlers:
                self.branches([handler.body, []])
        else:
            self.branches(self._try_paths(st))
        pending = len(self.returns)
        ended, self.ended = self.ended, False
        self.block(st.finalbody)  # runs on every path, returned ones too
        if self.ended and st.finalbody:
            # a ``finally`` that itself returns or raises on every path replaces what the
            # ``try`` was returning: those values never reach the caller
            self.returns = self.returns[:before_try] + self.returns[pending:]
        self.ended = ended or self.ended

    def _try_paths(self, st: ast.Try) -> list[list[ast.stmt]]:
        """The paths of a ``try``: its body (then ``else``) or any handler; the one Python
        takes where its own rules decide it (:mod:`.exceptions`)."""
        every = [[*st.body, *st.orelse], *([*h.body] for h in st.handlers)]
        ended = outcome(st.body, Oracle(self._lookup_found, self._attr_found,
                                        self._store_refused, self._call_quiet))
        if ended is None and len(st.body) <= _TRY_PREFIXES and st.handlers:
            # any statement of the body may raise: a handler runs after the ones before it
            return [every[0], *([*st.body[:k], *h.body] for h in st.handlers
                                for k in range(len(st.body)))]
        if ended is None:
            return every
        if ended.raised_at is None:
            return every[:1]
        handler = catching(st.handlers, ended.raised)
        return every if handler is None else [[*st.body[:ended.raised_at], *handler.body]]

    def _attr_found(self, node: ast.Attribute) -> bool | None:
        """Whether an attribute read finds it: the object surely has it (True), surely lacks
        it (False); None where not known."""
        obj = self.expr(node.value)
        return True if self.i.has_surely(obj, node.attr) else \
            False if self.i.lacks(obj, node.attr) else None

    def _store_refused(self, node: ast.Attribute) -> bool | None:
        """Whether an attribute store raises: on every way the object may be, a frozen
        dataclass (True), or an instance that takes any store (False); None where not known."""
        return self.i.store_refused(self.expr(node.value), node.attr)

    def _call_quiet(self, node: ast.Call) -> bool:
        """A call that surely raises nothing: a class built by a generated ``__init__`` from
        arguments it takes."""
        return self.i.builds_quietly(self.expr(node.func), node)

    def _lookup_found(self, lookup: ast.Subscript) -> bool | None:
        """Whether a dict lookup finds its key: every key it may be in the one dict it
        reads (True), none of them (False); None where the dict or the key is not known."""
        table = self.expr(lookup.value)
        keys = literal_values(self.expr(lookup.slice))
        # a dict's keys here are strings; another key (``1``, ``True``) compares by Python's
        # equality across types, which this does not model
        if not isinstance(table, DictV) or not keys or \
                not all(isinstance(k, str) for k in keys):
            return None
        have = {k for k, _ in table.items}
        if any(k in table.maybe for k in keys):
            return None
        hits = {k in have for k in keys}
        return hits.pop() if len(hits) == 1 else None

    @_on(_STMT, ast.Match)
    def s_match(self, st: ast.Match) -> None:
        value = self.expr(st.subject)
        subject = literal_values(value)
        # the subject, evaluated once, under a name no Python code can write: a capture binds it
        held = f"match subject {st.lineno}:{st.col_offset}"
        self.env[held] = value
        paths: list[list[ast.stmt]] = []
        for case in st.cases:
            hit = self._hit(case.pattern, value, subject)
            captures = self._captures(case.pattern, value, ast.Name(held, ast.Load()))
            if hit is not False and case.guard is not None:
                # a guard reading a name the pattern binds reads it as the pattern binds it;
                # it runs on the case's path too (a ``:=`` in it binds there)
                guard = self.i.truth(self._guarded(case.guard, captures))
                hit = False if guard is False else (hit if guard is True else None)
                captures = [*captures, ast.copy_location(ast.Expr(case.guard), case.guard)]
            if hit is False:
                continue  # Python tries it and goes on: its body never runs
            paths.append([*captures, *case.body])
            if hit is True:
                break  # the first case that surely matches: the later ones never run
        else:
            paths.append([])  # no case may match
        self.branches(paths)

    def _hit(self, p: ast.pattern, value: Value, literals: Sequence[object] | None,
             ) -> bool | None:
        """Whether a ``case`` pattern matches ``value`` (``literals``: the literals it may
        be), as Python matches it: a class pattern where every object it may be is of the
        class (its sub-patterns against the attributes they name), a sequence pattern against
        a tuple or list of known length, a mapping pattern against a dict of known keys; None
        where it is not known."""
        if isinstance(p, ast.MatchAs) and p.pattern is not None:
            return self._hit(p.pattern, value, literals)
        if isinstance(p, ast.MatchOr):
            each = [self._hit(q, value, literals) for q in p.patterns]
            return True if True in each else (False if all(h is False for h in each) else None)
        parts = self._parts(p, value, ast.Name(_UNREAD_PART, ast.Load()))
        if parts is NOT_SPECIAL:
            return _case_matches(p, literals, self.expr)
        if parts is None or isinstance(parts, bool):
            return parts
        each = [self._hit(q, v, literal_values(v)) for q, v, _ in cast(
            list[tuple[ast.pattern, Value, ast.expr]], parts)]
        return False if False in each else (True if all(h is True for h in each) else None)

    def _captures(self, p: ast.pattern, value: Value, subject: ast.expr) -> list[ast.stmt]:
        """The bindings a ``case`` pattern makes before its body runs, as statements: a
        capture (``case NAME:``, ``as NAME``) is bound to the part of the subject it matched
        (``subject``: an expression of it): an item of a sequence, a value of a mapping, an
        attribute a class pattern names, where the subject surely has that shape. A capture
        whose part is not known that way (a shape not confirmed, a starred item, one of
        several alternatives) is bound to an unknown value, never left holding what it held
        before."""
        out: list[tuple[str, ast.expr | None]] = []

        def bind(q: ast.pattern, v: Value, part: ast.expr | None) -> None:
            if isinstance(q, ast.MatchAs):
                if q.pattern is not None:
                    bind(q.pattern, v, part)
                if q.name:
                    out.append((q.name, part))
                return
            parts = self._parts(q, v, part) if part is not None and \
                not isinstance(q, (ast.MatchOr, ast.MatchStar)) else None
            if not isinstance(parts, list):
                out.extend((n, None) for n in sorted(captured(q)))
                return
            for sub, sv, sp in parts:
                bind(sub, sv, sp)
            # a starred item's list and a mapping's ``**rest``: bound, to what is not read
            star = [s.name for s in getattr(q, "patterns", ()) if isinstance(s, ast.MatchStar)]
            rest = [q.rest] if isinstance(q, ast.MatchMapping) and q.rest else []
            out.extend((n, None) for n in [*star, *rest] if n)

        bind(p, value, subject)
        return [ast.fix_missing_locations(ast.copy_location(ast.Assign(
            [ast.Name(name, ast.Store())], part or ast.Name(_UNREAD_PART, ast.Load())), p))
            for name, part in out]

    def _parts(self, p: ast.pattern, value: Value, subject: ast.expr) -> object:
        """The sub-patterns of a class, sequence or mapping pattern, each with the part of
        ``value`` it is matched against and an expression of that part (of ``subject``),
        where ``value`` surely has that shape; False where it surely has not (a sequence of
        another length, a mapping without a key); None where that is not known; NOT_SPECIAL
        for any other pattern."""
        if isinstance(p, ast.MatchClass):
            return self._class_parts(p, value, subject)
        if isinstance(p, ast.MatchSequence):
            return self._sequence_parts(p, value, subject)
        if isinstance(p, ast.MatchMapping):
            return _mapping_parts(p, value, subject)
        return NOT_SPECIAL

    def _class_parts(self, p: ast.MatchClass, value: Value, subject: ast.expr) -> object:
        ref = self.expr(p.cls)
        if self._self_matching(p.cls, ref):
            return _builtin_class_parts(p, cast(ast.Name, p.cls).id, value, subject)
        info = self.i.class_info(ref.cls) if isinstance(ref, ClassRef) else None
        alts = list(alternatives(value))
        if info is None or not alts or not all(
                isinstance(a, Inst) and (c := self.i.class_info(a.cls)) is not None and
                info in self.i.p.mro(c) for a in alts):
            return None
        names = self._match_args(p.cls) if p.patterns else []
        if names is None or len(p.patterns) > len(names) or "" in names:
            return None
        where = place(self.path, p)
        return [(q, self.i.attribute(value, attr, where), ast.Attribute(subject, attr, ast.Load()))
                for attr, q in [*zip(names, p.patterns, strict=False),
                                *zip(p.kwd_attrs, p.kwd_patterns, strict=True)]]

    def _self_matching(self, cls: ast.expr, ref: Value) -> bool:
        """A builtin class that a class pattern matches as a whole (``int``, ``str``)."""
        return ref is None and isinstance(cls, ast.Name) and cls.id in _SELF_MATCHING and \
            self.i.builtin_at(self.path, cls.id)

    def _sequence_parts(self, p: ast.MatchSequence, value: Value, subject: ast.expr) -> object:
        alts = list(alternatives(value))
        if alts and all(isinstance(a, Lit) for a in alts):
            return False  # a constant (a str too) is never matched as a sequence
        seq = self.i.as_tuple(value, place(self.path, p))
        if not isinstance(seq, Tup) or seq.iterator or seq.partial_items or seq.view:
            return None
        star = [i for i, q in enumerate(p.patterns) if isinstance(q, ast.MatchStar)]
        fixed = [q for q in p.patterns if not isinstance(q, ast.MatchStar)]
        n = len(seq.items)
        if (n != len(fixed)) if not star else (n < len(fixed)):
            return False
        head = star[0] if star else len(fixed)
        at = [*range(head), *range(n - (len(fixed) - head), n)]
        return [(q, seq.items[j], ast.Subscript(subject, ast.Constant(j), ast.Load()))
                for q, j in zip(fixed, at, strict=True)]

    def _guarded(self, guard: ast.expr, captures: list[ast.stmt]) -> Value:
        """A case's guard, read with the names its pattern captures bound (then unbound
        again: the case's path binds them itself)."""
        if not captures:
            return self.expr(guard)
        saved = dict(self.env)
        try:
            for st in captures:
                self.stmt(st)
            return self.expr(guard)
        finally:
            self.env = saved

    def _match_args(self, cls: ast.expr) -> list[str] | None:
        """The attributes a class pattern's positional sub-patterns match, in order: the
        ``__match_args__`` the class has (the nearest class of its MRO that sets one: a
        literal of its body, or a dataclass's or ``NamedTuple``'s generated fields);
        ``[""]`` (the subject itself) for a builtin class that matches as a whole; None where
        they are not known."""
        ref = self.expr(cls)
        if self._self_matching(cls, ref):
            return [""]
        info = self.i.class_info(ref.cls) if isinstance(ref, ClassRef) else None
        for c in self.i.p.mro(info) if info is not None else ():
            if "__match_args__" in c.attrs:
                node = c.attrs["__match_args__"][0]
                names = [e.value for e in getattr(node, "elts", ())
                         if isinstance(e, ast.Constant) and isinstance(e.value, str)]
                return names if isinstance(node, ast.Tuple) and \
                    len(names) == len(node.elts) else None
            if self.i.is_named_tuple(c):
                return self.i.fields(c)  # (generated for the class itself)
            if dataclass_decorated(c):
                # the fields ``__init__`` takes by position; not read where the decorator or a
                # field may leave one out (``kw_only``, ``init=False``, ``match_args``)
                return None if any(_keyword_only_dataclass(k) for k in self.i.p.mro(c)) \
                    else self.i.fields(c)
        return None

    @_on(_STMT, ast.FunctionDef, ast.AsyncFunctionDef)
    def s_def(self, st: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        qual = st.name if self.func is None else f"{self.func.qualname}.<locals>.{st.name}"
        self.env[st.name] = Func(self.path, f"{qual}@{st.lineno}", st, self.closure(st))

    def closure(self, node: ast.AST) -> tuple[tuple[str, Value], ...]:
        """The values of this function's names that a nested function or lambda reads (Python
        looks them up in the enclosing scope: at module level, a comprehension's variables
        only, the rest are globals), and its parameters' defaults, evaluated where it is made
        (``DEFAULT`` + the parameter's name)."""
        free = _loaded_names(node)
        if self.func is None:
            free = free & self.comprehended
        # Python reads them when the function runs, not where it is made: a name the
        # enclosing function binds again after this point (or in a loop around it) holds what
        # was bound last, which is not followed; a comprehension's variable holds its last
        # element's value once the comprehension is done, where that is known
        rebound = _rebound_after(self.node, node) if self.func is not None else frozenset()
        when = self._runs_when(node)
        out: list[tuple[str, Value]] = []
        for n in sorted(free):
            value = self.env.get(n)
            if n in self.comprehended:  # the comprehension's own variable, whatever else
                # the function binds under that name: now, its last value; not read where it
                # may be either
                final = self.late_final.get(n)
                value = value if when == "now" else final if when == "after" else \
                    (value if final == value else None)
            elif n in rebound:
                continue
            if value is not None:
                out.append((n, value))
        return tuple(out) + self._made_defaults(node)

    def _runs_when(self, fn: ast.AST) -> str:
        """When a function made in the comprehension being run is called: ``"now"`` (called
        where it is made, ``(lambda: x)()``), ``"after"`` (an element of a list, set or dict
        the comprehension builds: read once it is done), else ``"either"`` (handed to a call,
        or yielded by a generator its consumer may call at once or later: not read where the
        two differ)."""
        if not self.comprehending:
            return "now"
        comp = self.comprehending[-1]
        if any(isinstance(c, ast.Call) and c.func is fn for c in ast.walk(comp)):
            return "now"
        if isinstance(comp, ast.GeneratorExp):
            return "either"
        roots: list[ast.AST] = [comp.key, comp.value] if isinstance(comp, ast.DictComp) else \
            [comp.elt] if isinstance(comp, (ast.ListComp, ast.SetComp)) else []
        while roots:  # through containers and choices only, never into a call
            sub = roots.pop()
            if sub is fn:
                return "after"
            if not isinstance(sub, (ast.Call, ast.Lambda, ast.ListComp, ast.SetComp,
                                    ast.DictComp, ast.GeneratorExp)):
                roots.extend(ast.iter_child_nodes(sub))
        return "either"

    def _made_defaults(self, node: ast.AST) -> tuple[tuple[str, Value], ...]:
        """A nested function's or lambda's defaults that are no literal (``lambda x,
        on_e=on_e: ...`` in a comprehension): their values where it is made."""
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)) or \
                (self.func is None and not self.comprehended):
            return ()
        out: list[tuple[str, Value]] = []
        for name, default in params_of(node).defaults.items():
            if isinstance(default, ast.Constant):
                continue
            value = self.expr(default)
            if value is not None:
                out.append((DEFAULT + name, value))
        return tuple(out)

    @_on(_STMT, ast.ClassDef)
    def s_class(self, st: ast.ClassDef) -> None:
        cls = self.i.p.cls((self.path, st.name))
        self.env[st.name] = ClassRef((self.path, st.name)) if cls is not None else None

    @_on(_STMT, ast.Import, ast.ImportFrom)
    def s_import(self, st: ast.Import | ast.ImportFrom) -> None:
        for alias in st.names:
            if alias.name == "*":
                continue
            name, value = self.i.import_value(self.path, st, alias)
            self.env[name] = value

    @_on(_STMT, ast.Delete)
    def s_delete(self, st: ast.Delete) -> None:
        for t in st.targets:
            if isinstance(t, ast.Name):
                self.env.pop(t.id, None)
            elif isinstance(t, ast.Subscript) and (d := dotted_name(t.value)) is not None and \
                    d in self.env:
                # ``del xs[i]``, ``del d[k]``: some element gone, which one not followed
                current = self.env[d]
                self.env[d] = join([Seq(iterate(alt)) if isinstance(alt, (Tup, Seq)) else None
                                    for alt in alternatives(current)]) \
                    if not isinstance(current, Lse) else current

    def loop(self, body: list[ast.stmt], node: ast.stmt) -> None:
        """A loop body to a fixpoint, joined with not running it (bounds.Bounds.loop)."""
        self.i.bounds.loop(self, body, node)

    def _deciding(self, test: ast.expr | None) -> ast.expr | None:
        """The operand of an ``or`` (``and``) whose others are all known false (true): the
        side the test takes is that operand's, which narrows as it alone does (``lse is None
        or flag`` with ``flag`` false: ``lse`` is None where the branch runs)."""
        if not isinstance(test, ast.BoolOp) or not _narrowing_operand(test) or \
                not _calls_nothing(test):
            return test  # no operand that narrows: nothing to evaluate again
        inert = isinstance(test.op, ast.And)  # the value an operand that decides nothing has
        left = [v for v in test.values if self.i.truth(self.expr(v)) is not inert]
        return self._deciding(left[0]) if len(left) == 1 else test

    def branches(self, bodies: list[list[ast.stmt]], test: ast.expr | None = None,
                 decided: bool | None = None, *, tested: frozenset[str] | None = None,
                 ) -> list[dict[str, Value]]:
        """Paths that join after (``if``/``else``, ``try`` and its handlers, ``match``
        cases). ``decided``: the ``if`` test's value where it is known (a literal a caller
        passed, a class attribute of the exact class the method runs on): only that side
        runs, as in Python. ``tested`` (the names later tests read, lint.partition): the
        paths that went on are returned apart, not joined."""
        before = dict(self.env)
        results = []
        on_base = test is not None and _on_base_test(test, self.i.base_attrs)
        deciding = self._deciding(test)
        narrowed = _tuple_test(deciding)
        none_test = _none_test(deciding)
        known = None if test is None or self.i.assume is None else self.i.assume(test)
        known = decided if known is None else known
        ran = stopped = 0
        for i, body in enumerate(bodies):
            if known is not None and i < 2 and (i == 0) != known:
                continue  # the side the assumption rules out
            ran += 1
            self.ended = False
            self.env = dict(before)
            if i < 2:
                _narrow(self.env, i == 0, narrowed, none_test)
                if known is None and test is not None:
                    self._hold(test, i == 0)
                    self._narrow_parts(test, i == 0)
            self.on_base += on_base
            apart = self.block(body, tested) if tested is not None else []
            if tested is None:
                self.block(body)
            self.on_base -= on_base
            if self.ended:
                stopped += 1  # returned or raised on every path of this side
            elif not _ends(body):
                results += apart or [self.env]
        self.ended = ran > 0 and stopped == ran
        if tested is not None:
            return results
        self.env = self._join(results, before, chosen=_undecided(test, known)) \
            if results else before
        return results

    def _hold(self, test: ast.expr, side: bool) -> None:
        """On a side of a test whose value is not known: the fact that its condition held (or
        not), where no later statement can rebind the names it read (lint.partition); on the
        true side of ``a and b``, each of them held."""
        cond = condition(test)
        if cond is None or not self._stays(operands(test), test.lineno):
            return
        self.env[FACT + cond[0]] = Lit(cond[1] == side, None)
        if side and isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
            for part in test.values:
                self._hold(part, True)

    def _stays(self, names: frozenset[str], line: int) -> bool:
        """The names are locals nothing rebinds from ``line`` on (lint.partition.settled), each
        holding a scalar (a literal, or a parameter annotated ``bool``, ``int``...): what a
        test read of them stays true, as no method can change a scalar in place."""
        scalars = scalar_params(self.node)
        return settled(self.node, names, line) and all(
            n in scalars or ((alts := list(alternatives(self.env.get(n)))) and
                             all(isinstance(a, Lit) for a in alts)) for n in names)

    def _narrow_parts(self, test: ast.expr, side: bool) -> None:
        """``a and b``: on its true side each part held (``x is not None`` narrows ``x``); on
        its false side, where every other part holds on this path, the one left did not. ``or``
        the other way round."""
        if not isinstance(test, ast.BoolOp):
            return
        conj = isinstance(test.op, ast.And)
        if side == conj:
            for part in test.values:
                _narrow(self.env, side, _tuple_test(part), _none_test(part))
            return
        left = [p for p in test.values if condition(p) is None or self.i.truth(self.expr(p)) is not conj]
        if len(left) == 1:
            _narrow(self.env, side, _tuple_test(left[0]), _none_test(left[0]))

    def _by_fact(self, name: str) -> Value:
        """A boolean name computed from a condition a test on this path decided: its value."""
        alias = self.env.get(ALIAS + name)
        if not isinstance(alias, Lit) or not isinstance(alias.value, str):
            return None
        key, _, held = alias.value.rpartition("\x00")
        fact = self.env.get(FACT + key)
        if isinstance(fact, Lit) and isinstance(fact.value, bool):
            return Lit(fact.value == (held == "1"), None)
        return None

    def join_envs(self, results: list[dict[str, Value]], before: dict[str, Value],
                  ) -> dict[str, Value]:
        """The names after paths that end in ``results`` (each a may-union of its paths)."""
        return self._join(results, before)

    @staticmethod
    def _join(results: list[dict[str, Value]], before: dict[str, Value], *,
              chosen: bool = False) -> dict[str, Value]:
        """``chosen``: the paths are the sides of a test the flow cannot decide, so a value
        they make with logarithms of two bases is of the base the test picks
        (:func:`~.torch_model.chosen_logs`)."""
        if len(results) == 1:
            return results[0]
        joined = dict(results[0])
        for r in results[1:]:
            for key in joined.keys() | r.keys():
                a = joined.get(key, before.get(key))
                b = r.get(key, before.get(key))
                if a is not b and a != b:
                    joined[key] = join([a, b])
        return chosen_logs(results, joined) if chosen else joined

    def assign(self, target: ast.expr, value: Value, source: ast.expr | None = None) -> None:
        """``target = value``; ``source``: the expression it was read from, where it is known
        (an item stored into a dict keeps the buffer it names)."""
        value = self.i.bounds.value(self, value, target)
        if isinstance(target, ast.Name):
            self.rebound.add(target.id)
            self.env[target.id] = value
            if self.same:
                self._unaliased(target.id)
            if self.viewing:
                self._unviewed(target.id)
            if self.aliased:
                self.env.pop(ALIAS + target.id, None)
        elif isinstance(target, (ast.Tuple, ast.List)):
            self.unpack(target, value)
        elif isinstance(target, ast.Attribute):
            obj = self.expr(target.value)
            for alt in alternatives(obj):
                if isinstance(alt, Inst):
                    self.i.stores.setdefault((alt, target.attr), set()).add(value)
                elif isinstance(alt, ClassRef) and alt.exact:  # a class changed after its body
                    # (not ``cls: type[X]``'s any subclass: X itself keeps its attribute)
                    self.i.class_stores.setdefault((alt.cls, target.attr), []).append(
                        (value, place(self.path, target),
                         self.func is not None and not self.i.defining))
            dotted = dotted_name(target)
            if dotted is not None:
                self.env[dotted] = value
        elif isinstance(target, ast.Subscript):
            self.store_item(target, value, source)

    def unpack(self, target: ast.Tuple | ast.List, value: Value) -> None:
        """``a, *rest, b = value``: each target its item (those after a starred one counted
        from the end)."""
        value = self.i.as_tuple(value, place(self.path, target))
        star = next((i for i, t in enumerate(target.elts) if isinstance(t, ast.Starred)),
                    None)
        after = len(target.elts) - star - 1 if star is not None else 0
        for i, t in enumerate(target.elts):
            if isinstance(t, ast.Starred):
                self.assign(t.value, rest_of(value, i, after))
            elif star is not None and i > star:  # counted from the end
                self.assign(t, element(value, i - len(target.elts), exact=True))
            else:
                self.assign(t, element(value, i))

    def in_place(self, target: ast.expr, value: Value) -> None:
        """The tensor ``target`` names now holds ``value``, changed in place: no rebinding (a
        parameter changed so is its caller's argument, changed)."""
        name = target.id if isinstance(target, ast.Name) else None
        rebound = name in self.rebound
        viewing = self.viewing
        views = self._views_of(name) if name is not None and name in self.viewed else []
        viewed = self.env.get(VIEW + name) if name is not None and viewing else None
        self.viewing = False  # changed in place, not rebound: the views stay views
        try:
            self.assign(target, value)
        finally:
            self.viewing = viewing
        if name is not None:
            self.inplace_names.add(name)
            if not rebound:
                self.rebound.discard(name)
        # the tensors that share its storage see the change: a whole view (or the tensor a
        # whole view views) holds the value now, a part of it either value
        for other, whole in [*views, *_viewed_roots(viewed)]:
            if other in self.env:
                self.env[other] = value if whole else join([self.env[other], value])
                self.inplace_names.add(other)

    def same_object_changed(self, name: str | None, before: Value, after: Value) -> None:
        """The container ``before`` that ``name`` held was changed in place into ``after``:
        every other name holding that very object (``ys = xs``, ``a = b = []``) sees the change
        as Python's names do; a container holding it as an item (``t = (xs, 1)``) is no longer
        read (where among its items is not followed)."""
        if not isinstance(before, (Tup, Seq, DictV)):
            return
        same = self.same.get(name, frozenset()) if name is not None else frozenset()
        for other, held in list(self.env.items()):
            if other == name:
                continue
            if held is before and other in same:
                self.env[other] = after
            elif held is not None and _holds(held, before):
                self.env[other] = None

    def changed_to(self, receiver: ast.expr, name: str | None, before: Value,
                   after: Value) -> None:
        """``receiver`` (named ``name``) changed in place from ``before`` to ``after``: the
        same object still, for it and the names that share it."""
        if name is None and isinstance(receiver, ast.Subscript) and \
                self._item_changed(receiver.value, before, after):
            return
        group = self.same.get(name) if name is not None else None
        self.assign(receiver, after)
        if group is not None:
            for n in group:
                self.same[n] = group
        self.same_object_changed(name, before, after)

    def _item_changed(self, holder: ast.expr, before: Value, after: Value) -> bool:
        """``xs[i].append(v)`` where the name ``xs`` holds a tuple of known positions (or a
        dict) whose item ``xs[i]`` is the object ``before``: that object changed, in every
        position holding it (``[[]] * 2`` repeats one list; ``[[] for _ in t]`` makes one
        each), and wherever else it is held. False where the holder is none of these."""
        base = dotted_name(holder)
        held = self.env.get(base) if base is not None else None
        found = _with_item(held, before, after)
        if found is NOT_SPECIAL:
            return False
        changed = cast(Value, found)
        self.env[cast(str, base)] = changed
        self.same_object_changed(base, held, changed)
        for other, value in list(self.env.items()):
            if other != base and value is before:
                # another name holding one value: the same object, or one equal to it (a
                # memoised call's): which is not followed
                self.env[other] = None
        return True

    def _aliased(self, targets: list[ast.expr], source: ast.expr, value: Value) -> None:
        """``ys = xs`` or ``a = b = []`` of a container: the names hold one object (its changes
        in place are seen through each, :meth:`same_object_changed`)."""
        names = {t.id for t in targets if isinstance(t, ast.Name)}
        src = dotted_name(source)
        if src is not None and src in self.env:
            names |= {src, *self.same.get(src, ())}
        if len(names) < 2 or not any(isinstance(a, (Tup, Seq, DictV))
                                     for a in alternatives(value)):
            return
        group = frozenset(names)
        for n in group:
            self.same[n] = group

    def _viewing(self, targets: list[ast.expr], source: ast.expr, prior: Value) -> None:
        """``w = buf.view(torch.float32)``, ``w = buf[:, 0]`` (a chain of sure views,
        :data:`~.torch_model.VIEWS`, and basic indexing): the name's tensor is a view of the
        other's, wholly or in part (kept in ``env`` under :data:`VIEW`, so a path that did not
        make it joins as "maybe"); ``prior``: what the name viewed before (``w = w[:, 5]``)."""
        if len(targets) != 1 or not isinstance(targets[0], ast.Name):
            return
        node, whole, steps = sure_view(source)
        name = targets[0].id
        if not steps or not isinstance(node, ast.Name):
            return
        if node.id == name:  # ``w = w[:, 5]``: a view of what the old ``w`` viewed
            roots = _viewed_roots(prior)
            if len(roots) == 1:
                self.env[VIEW + name] = _view_lit(roots[0][0], roots[0][1] and whole)
                self.viewed.add(roots[0][0])
        elif node.id in self.env:
            self.env[VIEW + name] = _view_lit(node.id, whole)
            self.viewing = True
            self.viewed.add(node.id)

    def _views_of(self, root: str) -> list[tuple[str, bool]]:
        """The names bound to a view of ``root``'s tensor (on some path: not whole), each
        with whether it views all of it."""
        return [(key[len(VIEW):], whole) for key, held in self.env.items()
                if key.startswith(VIEW) for r, whole in _viewed_roots(held) if r == root]

    def _unviewed(self, name: str) -> None:
        """``name`` rebound: it views nothing now, and what viewed its old tensor is no view
        of its new one."""
        self.env.pop(VIEW + name, None)
        if name in self.viewed:
            for other, _ in self._views_of(name):
                self.env.pop(VIEW + other, None)

    def _unaliased(self, name: str) -> None:
        """``name`` rebound: it no longer holds the object its group shares."""
        group = self.same.pop(name, None)
        if group is not None:
            rest = group - {name}
            for n in rest:
                self.same[n] = rest

    def store_item(self, target: ast.Subscript, value: Value, source: ast.expr | None) -> None:
        """``d["k"] = value`` into a dict the flow holds (a computed key: no dict it can read
        any more); ``lse[mask] = other``: an LSE of both origins."""
        dotted = dotted_name(target.value)
        if dotted is None:
            self.nested_store(target.value)
            return
        current = self.env.get(dotted)
        key = target.slice
        if any(isinstance(alt, (Tup, Seq)) for alt in alternatives(current)):
            # ``xs[i] = v``, ``xs[a:b] = ys``: its elements and the ones stored, at positions
            # not followed (nothing of it is sure any more)
            put = iterate(value) if isinstance(key, ast.Slice) else value
            self.env[dotted] = join([Seq(join([iterate(alt), put]))
                                     if isinstance(alt, (Tup, Seq)) else alt
                                     for alt in alternatives(current)])
            self.same_object_changed(dotted, current, self.env[dotted])
            return
        if any(isinstance(alt, DictV) for alt in alternatives(current)):
            keys = [key.value] if isinstance(key, ast.Constant) else literal_values(
                self.expr(key))
            if not keys or not all(isinstance(k, str) for k in keys):
                self.env[dotted] = None  # a computed key: no longer a dict it can read
                self.same_object_changed(dotted, current, None)
                return
            stored = Arg(value, place(self.path, target),
                         buffers=self.buffers(source) if source is not None else frozenset())
            self.env[dotted] = join([dict_stored(alt, cast(list[str], keys), stored)
                                     if isinstance(alt, DictV) else alt
                                     for alt in alternatives(current)])
            self.same_object_changed(dotted, current, self.env[dotted])
        elif lse_of(value) is not None and not isinstance(current, (Tup, Seq)):
            # ``lse[mask] = other``, ``buf[:, 0] = lse``: a tensor changed in part holds both
            # what it held and what was stored (a parameter's is its caller's argument's)
            self.in_place(target.value, join([current, value]))

    def nested_store(self, holder: ast.expr) -> None:
        """``d["a"]["b"] = v``: the object held under ``d["a"]`` changed, and any other entry
        (or name) holding that same object with it (``dict.fromkeys(ks, {})`` shares one):
        which ones is not known here, so what ``d`` holds is no longer read."""
        root = holder
        while isinstance(root, (ast.Subscript, ast.Attribute)) and dotted_name(root) is None:
            root = root.value
        name = dotted_name(root)
        if name is not None and name in self.env and not isinstance(self.env[name], Lse):
            self.env[name] = None

    def needed(self, node: ast.expr) -> Value:
        """An expression whose value may be a base: its calls are read for their values."""
        need = self.i.need
        self.i.need = NEED_LEVELS
        try:
            return self.expr(node)
        finally:
            self.i.need = need

    def expr(self, node: ast.expr) -> Value:
        self.i.steps += 1
        handler = _EXPR.get(type(node))
        if handler is None:
            for child in ast.iter_child_nodes(node):  # f-strings' parts...
                if isinstance(child, ast.expr):
                    self.expr(child)
            return None
        memo_key: tuple[object, ...] | None = None
        if (self.flags_assumed or self.class_assumed is not None) and not self.comprehending:
            # (not in a comprehension, which runs one node again with its variable rebound)
            # read again under the same assumption within one statement (an outer split
            # of an expression an inner one split already): the same value, read once
            memo_key = (id(node), tuple(self.flags_assumed.items()), self.class_assumed)
            if memo_key in self.case_memo:
                return self.case_memo[memo_key]
        outer, self.flag_read = self.flag_read, None
        try:
            value = handler(self, node)
        finally:
            read, self.flag_read = self.flag_read, outer
        if self.flags_assumed:
            value = assumed(value, self.flags_assumed)
        if self.class_assumed is not None:
            value = self.i.known_flags(as_class(value, *self.class_assumed))
        if memo_key is not None:
            self.case_memo[memo_key] = value
            return value
        if read is not None and not self.flags_assumed and unsettled(value) and \
                type(node) in _BY_CASE and self._pure(node):
            # one flag (or object) at a time, nothing read under it split again: bounded
            value = (self._by_case(node, read) or value) if isinstance(read, Flag) else \
                self._by_class(node, read, value)
        if outer is None:
            self.flag_read = flag_in(value) or family_in(value)
        return value

    def _by_class(self, node: ast.expr, owner: Inst, value: Value) -> Value:
        """An expression of an object that may be of any class of a small family, not folded
        (``isinstance(self.impl, TwoImpl)``): read once per class (the object of exactly it);
        where the results are one value, that value; where each class's is the bool it holds
        for a base attribute (or the other), that flag (or its negation), judged per class
        by the rules; else what it was."""
        cls = self.i.class_info(owner.cls)
        family = self.i.p.family(cls) if cls is not None else None
        if not family or not 1 < len(family) <= MAX_CLASS_CASES:
            return value
        results: list[Value] = []
        self.i.by_case += 1
        try:
            for c in family:
                self.class_assumed = (owner, Inst((c.path, c.name), exact=True))
                results.append(self.expr(node))
        finally:
            self.class_assumed = None
            self.i.by_case -= 1
        same = one_value(results)
        if same is not None:
            return same
        if not all(isinstance(r, Lit) and isinstance(r.value, bool) for r in results):
            return value
        return self._declared_by(owner, family, results, place(self.path, node)) or value

    def _declared_by(self, owner: Inst, family: list[ClassInfo], results: list[Value],
                     where: Location) -> Flag | None:
        """The base flag of ``owner`` (or its negation) each class of ``family`` holds as its
        bool in ``results``; None where no base attribute does."""
        for attr in sorted(self.i.base_attrs):
            held = [self.i.known_flags(Flag(attr, Inst((c.path, c.name), exact=True), where))
                    for c in family]
            if not all(isinstance(h, Lit) for h in held):
                continue
            same = [cast(Lit, h).value == cast(Lit, r).value for h, r in zip(held, results,
                                                                          strict=True)]
            if all(same) or not any(same):
                return Flag(attr, owner, where, negated=not all(same))
        return None

    def _by_case(self, node: ast.expr, flag: Flag) -> Value:
        """An expression of a backend's flag the flow does not fold, read where the flag reads
        True and where it reads False (:mod:`.flag_cases`); what it reads there reports
        nothing (the flag's own read is what the rules judge)."""
        results: list[Value] = []
        self.i.by_case += 1
        try:
            for held in (True, False):
                self.flags_assumed = {key_of(flag): held}
                results.append(self.expr(node))
        finally:
            self.flags_assumed = {}
            self.i.by_case -= 1
        return flag_case(flag, results[0], results[1])

    def _pure(self, node: ast.expr) -> bool:
        """Whether reading ``node`` again runs no code that may change anything: no binding,
        no function made, its calls only of pure builtins or an Enum's lookup ``E(v)``."""
        for sub in ast.walk(node):
            if isinstance(sub, _IMPURE):
                return False
            if isinstance(sub, ast.Call):
                if not isinstance(sub.func, ast.Name):
                    return False
                name = sub.func.id  # read without running anything (a generator kept)
                callee = self.env.get(name) if name in self.env else \
                    self.i.global_value(self.path, name)
                if not (callee is None and name in PURE_BUILTINS) and not (
                        isinstance(callee, ClassRef) and self.i.is_enum_class(callee)):
                    return False
        return True

    def _named(self, value: Value, node: ast.expr, what: str) -> Value:
        """A literal read through a name or attribute: where the flow uses it is here (the
        argument that hands it on), where it is written goes into ``how``; one its caller passed
        in keeps the caller's place."""
        if isinstance(value, Union_) and not value.widened and id(value) not in self.param_ids \
                and value.options and all(isinstance(o, Lit) for o in value.options):
            # the literals an object of any subclass may hold (``self.impl.is_sparse``): each
            # is used here, as one literal would be
            return join([self._named(o, node, what) for o in value.ordered()])
        if not isinstance(value, Lit) or value.how or id(value) in self.param_ids:
            return value
        at = value.where
        line = at.line if at is not None and at.line is not None else "?"
        return replace(value, where=place(self.path, node), how=f" through the {what} (line {line})")

    @_on(_EXPR, ast.Name)
    def e_name(self, node: ast.Name) -> Value:
        name = node.id
        if name in self.env:
            value = self.env[name]
            if self.lazies:
                value = self._consumed(name, value)
            if self.aliased and truth(value) is None and ALIAS + name in self.env:
                value = self._by_fact(name) or value
            return self._named(value, node, f"{'local variable' if self.func else 'name'} "
                               f"{name}")
        line = getattr(node, "lineno", None)  # none on a node the analysis built
        value = self.i.global_value(self.path, name) if self.func is not None or \
            line is None else self.i.global_value_at(self.path, name, line)
        if value is None and name in SINGLETONS and self.i.builtin_at(self.path, name):
            return ExtInst(SINGLETONS[name])  # ``NotImplemented``: one object, always true
        return self._named(value, node, f"module constant {name}")

    @_on(_EXPR, ast.Attribute)
    def e_attribute(self, node: ast.Attribute) -> Value:
        dotted = dotted_name(node)
        if dotted is not None and dotted in self.env:
            return self._named(self.env[dotted], node, f"attribute {dotted}")
        inner = self.expr(node.value)
        value = self.i.attribute(inner, node.attr, place(self.path, node))
        if value is None and node.attr in _PROTOCOL_METHODS and inner is not None and all(
                isinstance(a, (Tup, Seq, DictV)) or (isinstance(a, Lit) and
                                                     isinstance(a.value, str))
                for a in alternatives(inner)):
            # ``names.__contains__`` of a container: the method bound to it, which is its
            # operator (``partial(lambda r, v: v in r, names)``: no descriptor, as a bound
            # method is not)
            return Partial(self.expr(as_protocol_method(node.attr, node, self.i.synthetic)),
                           (Arg(inner, place(self.path, node)),), where=place(self.path, node))
        if isinstance(value, Ext) and value.qualname in MODULE_CONSTANTS:
            # ``math.e``: the number Python holds there (``int(math.e)`` is 2)
            return Lit(MODULE_CONSTANTS[value.qualname], place(self.path, node))
        return self._named(value, node, f"attribute {node.attr}")

    @_on(_EXPR, ast.Subscript)
    def e_subscript(self, node: ast.Subscript) -> Value:
        inner = self.i.as_tuple(self.expr(node.value), place(self.path, node))
        key = node.slice
        key_value = self.expr(key)
        if isinstance(inner, Union_) and inner.widened:
            return inner  # unknown holding an LSE: so is every part of it
        indices = _indices(key, key_value)
        if indices and any(isinstance(a, (Tup, Seq)) for a in alternatives(inner)):
            # ``t[1]``, ``t[flag]`` with the flag a known bool (an int): that element
            return join([element(inner, i) for i in indices])
        class_keys = _keys(key, key_value)
        options: list[Value] = []
        bounds = self._slice_bounds(key) if isinstance(key, ast.Slice) else None
        for alt in alternatives(inner):
            if isinstance(alt, (Tup, Seq)):
                options.append(_part(alt, key, bounds))
            elif isinstance(alt, DictV):
                options += entries(alt, key, class_keys)
            else:
                options.append(self._item_of(alt, key_value, node))
        return join(options) if options else None

    def _item_of(self, alt: Value, key_value: Value, node: ast.Subscript) -> Value:
        """``alt[key]`` for one object that is no tuple, list or dict."""
        if isinstance(alt, Lse):
            return lose_layout(alt)  # lse[:n], lse[..., i]: same base
        if isinstance(alt, Param):
            return alt
        if isinstance(alt, ModuleRef):
            return self._namespace_entry(alt, key_value, node)
        if isinstance(alt, ClassRef) and (
                member := self.i.enum_lookup(alt, key_value, False)) is not NOT_SPECIAL:
            return cast(Value, member)  # ``E["A"]``: the member named so
        if isinstance(alt, Func) and is_kernel(self.i.p.definition(alt)):
            return alt  # ``kernel[grid]``: the launcher, which calls the kernel
        if isinstance(alt, Inst) and (got := self.dunder(
                alt, "__getitem__", key_value, node)) is not NOT_SPECIAL:
            return cast(Value, got)  # ``obj[k]``: its class's ``__getitem__(k)``
        return None

    def dunder(self, obj: Inst, method: str, arg: Value, node: ast.expr) -> Value | object:
        """What ``obj.<method>(arg)`` returns where the object's class in the program defines
        the method (``obj[k]`` runs ``__getitem__``, ``k in obj`` ``__contains__``);
        :data:`NOT_SPECIAL` where it does not (the frame calls it)."""
        return NOT_SPECIAL

    def _namespace_entry(self, module: ModuleRef, key: Value, node: ast.Subscript) -> Value:
        """``globals()[name]``: the module's binding of each name ``name`` may be; unknown
        where it is not a known string."""
        names = literal_values(key)
        if not names or not all(isinstance(n, str) for n in names) or \
                _GLOBALS_CHANGED.search(self.i.module_text(module.name)):
            return None  # (a module that changes its namespace through ``globals()``: not read)
        if module.name == self.path and self.func is None:
            # at the module's top level: each name as it is bound at this line
            return join([self.expr(ast.copy_location(ast.Name(cast(str, n), ast.Load()), node))
                         for n in names])
        return join([self.i.attribute(module, cast(str, n), place(self.path, node))
                     for n in names])

    def _slice_bounds(self, key: ast.Slice) -> tuple[int | None, int | None, int | None] | None:
        """A slice's start, stop and step where each is absent or one known int (not 0 for
        the step); None where one is not known."""
        out: list[int | None] = []
        for part in (key.lower, key.upper, key.step):
            if part is None:
                out.append(None)
                continue
            one = concrete(self.expr(part))
            if not isinstance(one, int) or isinstance(one, bool) or abs(one) > 1 << 30:
                return None
            out.append(one)
        return None if out[2] == 0 else (out[0], out[1], out[2])

    @_on(_EXPR, ast.Constant)
    def e_constant(self, node: ast.Constant) -> Value:
        return literal_value(self.path, node)

    @_on(_EXPR, ast.JoinedStr)
    def e_fstring(self, node: ast.JoinedStr) -> Value:
        """An f-string whose every part is known: the text Python builds (each value
        formatted as :func:`format` does it, after its ``!r``/``!s``/``!a``)."""
        text = self.fstring_text(node)
        return None if text is None else Lit(text, place(self.path, node))

    def fstring_text(self, node: ast.JoinedStr) -> str | None:
        out: list[str] = []
        for part in node.values:
            if isinstance(part, ast.Constant) and isinstance(part.value, str):
                out.append(part.value)
                continue
            if not isinstance(part, ast.FormattedValue):
                return None
            value = self.expr(part.value)
            spec = None if part.format_spec is None else \
                self.fstring_text(part.format_spec) if isinstance(part.format_spec,
                                                                  ast.JoinedStr) else None
            if part.format_spec is not None and spec is None:
                return None
            one = fold_format(value, part.conversion, spec, place(self.path, part))
            if not isinstance(one, str):
                return None
            out.append(one)
        text = "".join(out)
        return text if len(text) <= _FSTRING_MAX else None  # a longer one is not read

    @_on(_EXPR, ast.BinOp)
    def e_binop(self, node: ast.BinOp) -> Value:
        return self.binop(node.left, self.expr(node.left), node.op, node.right)

    @_on(_EXPR, ast.UnaryOp)
    def e_unary(self, node: ast.UnaryOp) -> Value:
        inner = self.expr(node.operand)
        if isinstance(node.op, ast.Not):  # each value it may be, negated
            return join([self.negated(alt, node) for alt in alternatives(inner)])
        if isinstance(node.op, (ast.Invert, ast.USub, ast.UAdd)):
            # ``~flag`` (an int: -1 or -2, both true), ``-1``: of known numbers, the number
            fold = _UNARY[type(node.op)]
            return join([Lit(fold(alt.value), alt.where, alt.how) if isinstance(alt, Lit) and
                         isinstance(alt.value, (bool, int, float)) and not (
                             isinstance(node.op, ast.Invert) and isinstance(alt.value, float))
                         else None for alt in alternatives(inner)])
        return None

    def negated(self, alt: Value, node: ast.UnaryOp) -> Value:
        """``not`` of one value: a literal's or a flag's negation; of any other value whose
        truth Python decides one way (a tuple of known length, a set of known elements, a
        function), the other way."""
        if isinstance(alt, Lit):
            # which of several a table entry or a rebound global is stays as open negated
            return Lit(not alt.value, alt.where, alt.how, assumed=alt.assumed, table=alt.table,
                       rebound=alt.rebound)
        if isinstance(alt, Flag):
            return replace(alt, negated=not alt.negated)
        known = self.i.truth(alt)
        return None if known is None else \
            Lit(not known, place(self.path, node), f" (the value of {source_text(node)})")

    @_on(_EXPR, ast.Compare)
    def e_compare(self, node: ast.Compare) -> Value:
        """A comparison of literals the flow holds (``kind != "log2"``, ``name in {"a", "b"}``):
        its value where every value either side may hold decides it one way; unknown where
        they decide it both ways, or something is not a literal."""
        left = self.expr(node.left)
        rights = [self.expr(c) for c in node.comparators]
        if len(node.ops) == 1:
            return self.compare(node, left, node.ops[0], rights[0], node.comparators[0])
        # ``a < b < c`` is ``a < b and b < c``, each operand read once: false where one link is
        verdicts = [truth(self.compare(node, a, op, b, shown)) for a, op, b, shown in zip(
            [left, *rights[:-1]], node.ops, rights, node.comparators, strict=True)]
        if False in verdicts or all(v is True for v in verdicts):
            return Lit(False not in verdicts, place(self.path, node),
                       f" (the value of {source_text(node)})")
        return None

    def compare(self, node: ast.Compare, left: Value, op: ast.cmpop, right: Value,
                shown: ast.expr) -> Value:
        """One link ``left OP right`` of a comparison (``shown``: the right operand's node)."""
        left, right = self.i.known_flags(left), self.i.known_flags(right)
        if not isinstance(op, (ast.Is, ast.IsNot)):
            left, right = self.i.as_data(left), self.i.as_data(right)
        identity = _identity(left, op, right, self.i.by_identity)
        if identity is not None:
            return Lit(identity, place(self.path, node), f" (the value of {source_text(node)})")
        members = _member_compare(left, op, right)
        if members is not None:
            return Lit(members, place(self.path, node), f" (the value of {source_text(node)})")
        folded = _fold_compare(left, op, right)
        if folded is not None:  # ``(1, 2) == t``: two values known exactly, as Python compares
            return Lit(folded, place(self.path, node), f" (the value of {source_text(node)})")
        if isinstance(op, (ast.In, ast.NotIn)):
            contained = self._contains(left, right, node)
            if contained is not None:
                return Lit(contained == isinstance(op, ast.In), place(self.path, node),
                           f" (the value of {source_text(node)})")
            exact = _exact_membership(left, right, isinstance(op, ast.In))
            if exact is not None:
                return Lit(exact, place(self.path, node), f" (the value of {source_text(node)})")
        lefts: Sequence[object] | None = literal_values(left)
        if lefts is None and isinstance(op, (ast.Eq, ast.NotEq, ast.Lt, ast.LtE, ast.Gt,
                                             ast.GtE)):
            lefts = flag_values(left)  # ``is_lse_base_on_e != 2``: a declared flag is a bool
        if lefts is None:
            return None
        texts = literal_values(right)
        outcomes: set[bool] | None
        if isinstance(op, (ast.In, ast.NotIn)) and texts and all(
                isinstance(v, str) for v in (*lefts, *texts)):
            # ``"mla" in name``: a substring test of known strings
            outcomes = {(str(a) in str(b)) == isinstance(op, ast.In) for a in lefts for b in texts}
        elif isinstance(op, (ast.In, ast.NotIn)):
            outcomes = self._membership(shown, right, lefts, isinstance(op, ast.In))
        else:
            outcomes = ordering(lefts, right, op)
        if outcomes is None or len(outcomes) != 1:
            return None
        return Lit(outcomes.pop(), place(self.path, node), f" (the value of {source_text(node)})")

    def _contains(self, left: Value, right: Value, node: ast.Compare) -> bool | None:
        """``x in obj`` of objects whose class defines ``__contains__``: the truth of what it
        returns, where every object ``obj`` may be gives one answer; None otherwise."""
        options = list(alternatives(right))
        if not options or not all(isinstance(o, Inst) for o in options):
            return None
        answers: set[bool | None] = set()
        for obj in options:
            got = self.dunder(cast(Inst, obj), "__contains__", left, node)
            answers.add(None if got is NOT_SPECIAL else truth(cast(Value, got)))
        return answers.pop() if len(answers) == 1 else None

    def _membership(self, shown: ast.expr, right: Value, lefts: Sequence[object],
                    is_in: bool) -> set[bool] | None:
        """``x in C`` / ``x not in C`` for each literal ``x`` may be: None where a container's
        members are not all known and one of them might be ``x``."""
        if isinstance(shown, (ast.Set, ast.List, ast.Tuple)) and not any(
                isinstance(e, ast.Starred) for e in shown.elts):
            # a literal's every element
            right = self.i.as_data(Tup(tuple(self.expr(e) for e in shown.elts)))
        outcomes: set[bool] = set()
        for container in alternatives(right):  # a list one path grew: each way it may be
            found = _contained(container, lefts, is_in)
            if found is None:
                return None
            outcomes |= found
        return outcomes or None

    @_on(_EXPR, ast.BoolOp)
    def e_boolop(self, node: ast.BoolOp) -> Value:
        """``a or b`` is the first operand that is true, else the last; ``a and b`` the first
        that is false, else the last; no operand past the deciding one is evaluated. An operand
        whose truth is not known may be the result or not (``flag or True`` with ``flag=False``
        passed is True; unknown ``flag``: either)."""
        stops = isinstance(node.op, ast.Or)  # the truth that ends the chain
        results: list[Value] = []
        bools = True  # every operand not known so far is a bool (a comparison, a ``not``)
        for i, operand in enumerate(node.values):
            value = self.expr(operand)
            known = self.i.truth(value)
            if known is stops and bools and isinstance(value, Lit) and value.value is stops:
                # ``lse is None or not flag`` with ``flag`` False: each earlier operand was
                # either the bool that ends the chain, or false and passed on: True either way
                return value
            if known is None or known is stops or i == len(node.values) - 1:
                results.append(value)
            bools = bools and (known is not None or is_boolean(operand))
            if known is stops:
                break
        return join(results)

    @_on(_EXPR, ast.Tuple, ast.List, ast.Set)
    def e_tuple(self, node: ast.Tuple | ast.List | ast.Set) -> Value:
        values = [self.expr(e) for e in node.elts]
        spliced = _spliced(node.elts, values)
        if spliced is not None:
            # ``(a, *t)`` of a known tuple: its items in their places, as Python builds it
            if isinstance(node, ast.Set):
                return set_of(spliced, all(isinstance(v, Lit) for v in spliced))
            return Tup(tuple(spliced), mutable=isinstance(node, ast.List))
        if isinstance(node, ast.Set) or any(isinstance(e, ast.Starred) for e in node.elts):
            # ``[*a, b]``, ``{a, b}``: elements known, positions not (a set of literals holds
            # every one of them)
            starred = any(isinstance(e, ast.Starred) for e in node.elts)
            return set_of([iterate(v) if isinstance(e, ast.Starred) else v
                           for e, v in zip(node.elts, values, strict=True)],
                          not starred and all(isinstance(v, Lit) for v in values))
        return Tup(tuple(values), mutable=isinstance(node, ast.List))

    @_on(_EXPR, ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
    def e_comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp
                        | ast.DictComp) -> Value:
        """Each ``for`` binds its target to the elements of its iterable, in a scope of its
        own (the names do not leak out, as in Python 3); the result holds the element."""
        outer, self.walrus = self.walrus, {}
        try:
            if self.class_names and not self.in_class_comprehension:
                return self._class_body_comprehension(node)
            return self._comprehension(node)
        finally:
            bound, self.walrus = self.walrus, outer
            for name, value in bound.items():  # the scope the comprehension runs in binds them
                self.env[name] = value
                if outer is not None:
                    outer[name] = value

    def _class_body_comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp
                                  | ast.DictComp) -> Value:
        """A comprehension in a class body: Python runs its first iterable in the class's
        scope, and the rest in a function scope of its own that skips the class's names (a
        name the body assigned is read as the module's global there)."""
        first = self.expr(node.generators[0].iter)
        saved = self.env
        self.env = {k: v for k, v in saved.items() if k not in self.class_names}
        self.env[_FIRST_ITERABLE] = first
        self.in_class_comprehension = True
        try:
            return self._comprehension(first_iterable_named(node, _FIRST_ITERABLE,
                                                            self.i.synthetic))
        finally:
            self.in_class_comprehension = False
            self.env = saved

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp
                       | ast.DictComp) -> Value:
        self.comprehending.append(node)
        try:
            unrolled = self.dict_comprehension(node) if isinstance(node, ast.DictComp) else \
                self.seq_comprehension(node)
        finally:
            self.comprehending.pop()
        if unrolled is not NOT_SPECIAL:
            return cast(Value, unrolled)
        saved = dict(self.env)
        try:
            for gen in node.generators:
                self.assign(gen.target, iterate(self.i.enum_members(self.expr(gen.iter))))
                for cond in gen.ifs:
                    self.expr(cond)
            if isinstance(node, ast.DictComp):
                self.expr(node.key)
                self.expr(node.value)
                return None
            return Seq(self.expr(node.elt), iterator=isinstance(node, ast.GeneratorExp))
        finally:
            # an element not known: its ``:=`` may bind any value, or none (no element)
            self._walrus_maybe({k: saved[k] for k in (self.walrus or {}) if k in saved})
            self.env = saved

    def dict_comprehension(self, node: ast.DictComp) -> Value | object:
        """``{k: v for k, v in d.items() if ...}`` over what the flow holds whole (a
        ``**kwargs``, a literal, a tuple of pairs, nested ``for``s): run once per element, as
        Python does, so an entry the condition drops is absent from the result (the callee
        then gets its default), one it keeps is there, one it may keep is there on some paths
        only, and a key made twice holds the later value."""
        items: dict[str, Arg] = {}
        maybe: set[str] = set()
        unread = False

        def entry(decided: bool, where: Location) -> None:
            nonlocal unread
            keys = literal_keys(self.expr(node.key))
            if keys is None or len(keys) != 1:
                unread = True  # keyed by what it cannot read: the dict is not known
                return
            key, value = keys[0], self.expr(node.value)
            if decided or key not in items:
                items[key] = Arg(value, where)  # a later entry replaces it, in its place
                if decided:
                    maybe.discard(key)
                else:
                    maybe.add(key)
            else:  # kept on some paths only: the earlier value on the others
                items[key] = Arg(join([items[key].value, value]), where)

        if not self._each_run(node.generators, entry) or unread:
            return None if unread else NOT_SPECIAL
        return DictV(tuple(items.items()), frozenset(maybe))

    def seq_comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp
                          ) -> Value | object:
        """``[f(x) for x in t if c(x)]`` over a tuple, a set literal, an Enum or a dict the
        flow holds whole (nested ``for``s too): run once per element, as Python does, so an
        element the condition drops is not in the result and one it keeps is; where every
        condition is decided the result is known exactly (a list's positions too), else it
        holds any of the kept elements."""
        kept: list[Value] = []
        exact = True

        def element(decided: bool, _: Location) -> None:
            nonlocal exact
            exact = exact and decided
            kept.append(self.expr(node.elt))

        ordered = self._each_run(node.generators, element, ordered=True)
        if ordered is False:
            return NOT_SPECIAL
        if isinstance(node, ast.GeneratorExp) and node is self.lazy:
            # a generator kept runs when consumed, over what its iterable holds then: what it
            # yields may be any of these, or what a later change put there; where its first
            # iterable (evaluated now, as Python does) is read again without running code, it
            # is run where its name is first read in this function (:meth:`_consumed`)
            # (not ``map(f, xs)``'s generator: Python evaluates its ``f`` when it is made)
            first, target = node.generators[0].iter, node.generators[0].target
            made_by_map = isinstance(target, ast.Name) and target.id == GENERATED_ITEM
            self.pending_lazy = (node, self.expr(first)) \
                if _calls_nothing(first) and not made_by_map else None
            return Seq(join([*kept, None]), iterator=True)
        if isinstance(node, ast.SetComp) or ordered is None or not exact:
            complete = exact and isinstance(node, ast.SetComp) and all(
                isinstance(k, Lit) for k in kept)
            gen = isinstance(node, ast.GeneratorExp)
            return set_of(kept, (complete if kept else exact) and not gen, iterator=gen)
        return Tup(tuple(kept), iterator=isinstance(node, ast.GeneratorExp),
                   mutable=isinstance(node, ast.ListComp))

    def _each_run(self, gens: list[ast.comprehension], body: Callable[[bool, Location], None],
                  *, ordered: bool = False) -> bool | None:
        """Run ``body`` once per element the ``for``s of a comprehension bind, in their order
        and scope (the names do not leak out), where each iterable is held whole; ``body`` is
        told whether every condition on the way was decided. False where a ``for`` runs over
        what the flow does not hold whole (or past :data:`_COMPREHENDED` runs in all); with
        ``ordered``, None where the runs' order is not known."""
        if any(g.is_async for g in gens):
            return False
        saved = dict(self.env)
        runs = 0
        in_order = True

        def run(i: int, decided: bool) -> bool:
            nonlocal runs, in_order
            if i == len(gens):
                runs += 1
                if runs > _COMPREHENDED:
                    return False
                body(decided, place(self.path, gens[-1].iter))
                return True
            gen = gens[i]
            found = self._elements(gen.iter)
            if found is None:
                return False
            elements, known_order = found
            in_order = in_order and known_order
            scope = dict(self.env)
            bound = frozenset(n.id for n in ast.walk(gen.target) if isinstance(n, ast.Name))
            if len(gens) == 1:
                self.late_final = {**self.late_final, **self._last_bound(
                    gen.target, elements if known_order else [], bound)}
            for item, whole in elements:
                self.env = dict(scope)
                self.assign(gen.target, item)
                self.comprehended |= bound
                before = dict(self.walrus or {})
                verdicts: list[bool | None] = []
                for cond in gen.ifs:  # in order: one found false stops the rest, as in Python
                    verdicts.append(self.i.truth(self.expr(cond)))
                    if verdicts[-1] is False:
                        break
                if not (whole and None not in verdicts):
                    self._walrus_maybe(before)  # this run may not happen
                if False in verdicts:
                    continue  # the condition drops it
                if not run(i + 1, decided and whole and None not in verdicts):
                    return False
            return True

        comprehended, late_final = self.comprehended, self.late_final
        try:
            done = run(0, True)
        finally:
            self.env = saved
            self.comprehended, self.late_final = comprehended, late_final
        if not done:
            return False
        return None if ordered and not in_order else True

    def _last_bound(self, target: ast.expr, elements: list[tuple[Value, bool]],
                    bound: frozenset[str]) -> dict[str, Value]:
        """What a comprehension's variables hold once it is done (its one ``for``): the last
        element's (bound whatever the ``if`` decides), where the order is known and every
        path has it; nothing where it is not known."""
        if not elements or not elements[-1][1]:
            return {}
        saved = self.env
        self.env = dict(saved)
        try:
            self.assign(target, elements[-1][0])
            return {n: self.env.get(n) for n in bound}
        finally:
            self.env = saved

    def _walrus_maybe(self, before: dict[str, Value]) -> None:
        """What a ``:=`` bound in a comprehension run that may not happen: either its value or
        the one it had before (unknown where it had none)."""
        if self.walrus is None:
            return
        for name, value in self.walrus.items():
            if before.get(name) is not value:
                self.walrus[name] = join([before.get(name), value])

    def _elements(self, it: ast.expr) -> tuple[list[tuple[Value, bool]], bool] | None:
        """What a comprehension's ``for`` runs over, element by element, where the flow holds
        it whole: each element with whether every path has it (a dict's key some path lacks:
        not), and whether their order is known; None where it is none of these (or longer than
        :data:`_COMPREHENDED`)."""
        pairs = isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and \
            it.func.attr == "items" and not it.args and not it.keywords
        read = self.expr(it.func.value if pairs and isinstance(it, ast.Call) and
                         isinstance(it.func, ast.Attribute) else it)
        found: tuple[list[tuple[Value, bool]], bool] | None = None
        if isinstance(read, DictV):
            found = ([(Tup((Lit(k, a.where), a.value)) if pairs else Lit(k, a.where),
                       k not in read.maybe) for k, a in read.items], True)
        elif not pairs:
            found = self._sequence_elements(read)
        return found if found is not None and len(found[0]) <= _COMPREHENDED else None

    def _sequence_elements(self, read: Value) -> tuple[list[tuple[Value, bool]], bool] | None:
        """A tuple's items (in order), a complete set's or an Enum's members (in no order)."""
        iterable = self.i.enum_members(read)
        if isinstance(iterable, Tup) and not iterable.partial_items:
            return [(v, True) for v in iterable.items], True
        if isinstance(iterable, Seq) and iterable.complete and iterable.item is not None:
            return [(v, True) for v in alternatives(iterable.item)], False
        return None

    @_on(_EXPR, ast.Yield, ast.YieldFrom)
    def e_yield(self, node: ast.Yield | ast.YieldFrom) -> Value:
        value = self.expr(node.value) if node.value is not None else None
        self.yields.append(iterate(value) if isinstance(node, ast.YieldFrom) else value)
        return None

    @_on(_EXPR, ast.Dict)
    def e_dict(self, node: ast.Dict) -> Value:
        """A dict display, in Python's order: a later key (written, or one a ``**other``
        unpacks) replaces an earlier one; a key it cannot read, or a ``**`` of what the flow
        does not hold as one dict, makes the whole dict unknown."""
        items: dict[str, Arg] = {}
        maybe: set[str] = set()
        ok = True
        for k, v in zip(node.keys, node.values, strict=True):
            value = self.expr(v)
            if k is None:
                ok = ok and isinstance(value, DictV)
                if isinstance(value, DictV):
                    merge_items(items, maybe, value, place(self.path, node))
                continue
            name = dict_key(k) if isinstance(k, ast.Constant) else self._computed_key(k)
            if name is None:
                ok = False
                continue
            maybe.discard(name)
            items[name] = Arg(value, place(self.path, v), buffers=self.buffers(v))
        return DictV(tuple(items.items()), frozenset(maybe)) if ok else None

    def _computed_key(self, node: ast.expr) -> str | None:
        """A dict display's key written as an expression: a class, or one known constant
        (a tuple of them too)."""
        value = self.expr(node)
        keys = literal_keys(value)
        return class_key(value) if keys is None else keys[0] if len(keys) == 1 else None

    @_on(_EXPR, ast.Lambda)
    def e_lambda(self, node: ast.Lambda) -> Value:
        return Func(self.path, f"<lambda:{node.lineno}:{node.col_offset}>", node,
                    self.closure(node))

    @_on(_EXPR, ast.IfExp)
    def e_ifexp(self, node: ast.IfExp) -> Value:
        test = self.expr(node.test)
        decided = self.i.truth(test)
        if decided is not None:  # the side Python evaluates; the other is never run
            return self.expr(node.body if decided else node.orelse)
        body, orelse = self.expr(node.body), self.expr(node.orelse)
        if isinstance(test, Flag) and isinstance(body, Lit) and isinstance(orelse, Lit) and \
                {body.value, orelse.value} == {True, False}:
            # ``True if impl.lse_base_on_e else False``: the backend's own flag, spelled out
            return test if body.value is True else replace(test, negated=not test.negated)
        return chosen_join([body, orelse])

    @_on(_EXPR, ast.Await, ast.Starred, ast.NamedExpr)
    def e_wrapped(self, node: ast.Await | ast.Starred | ast.NamedExpr) -> Value:
        value = self.expr(node.value)
        if isinstance(node, ast.NamedExpr):
            self.assign(node.target, value)
            if self.walrus is not None:  # in a comprehension: bound in the function's scope
                self.walrus[node.target.id] = value
        return value

    @_on(_EXPR, ast.Call)
    def e_call(self, node: ast.Call) -> Value:
        return self.call(node)

    def binop(self, left_node: ast.expr, left: Value, op: ast.operator,
              right_node: ast.expr) -> Value:
        right = self.expr(right_node)
        where = place(self.path, left_node)
        repeated = _repeated(left, op, right)
        if repeated is not None:
            return repeated
        if isinstance(op, (ast.BitOr, ast.BitAnd, ast.Sub, ast.BitXor)):
            # a set subclass's objects: the base's operator, on their elements (a plain set)
            left, right = (cast(Value, c) if (c := self.i.builtin_content(v, SET_OPERATORS))
                           is not NOT_SPECIAL else v for v in (left, right))
        folded = fold_binop(as_number(left, where), op, as_number(right, where), where)
        if folded is not UNKNOWN:  # sets and numbers known exactly: Python's own value
            return named_number(cast(Value, folded))
        if isinstance(op, ast.BitOr) and isinstance(left, DictV) and isinstance(right, DictV):
            return merged([left, right], place(self.path, left_node))  # b's keys over a's
        if isinstance(op, (ast.BitOr, ast.BitAnd, ast.BitXor)) and \
                isinstance(left, Member) and isinstance(right, Member):
            return self.i.flag_combined(left, op, right, where)
        if isinstance(op, ast.Add) and any(isinstance(a, (Tup, Seq)) for a in (
                *alternatives(left), *alternatives(right))):
            return _concat(left, right)
        lc, rc = constant_name(left_node, left), constant_name(right_node, right)
        if isinstance(op, ast.Div) and isinstance(left_node, ast.Constant) and \
                left_node.value in (1, 1.0) and rc:
            return Num("log2e" if rc == "ln2" else "ln2")
        return self.lse_arithmetic(left_node, left, op, right_node, right, (lc, rc), where)

    def lse_arithmetic(self, left_node: ast.expr, left: Value, op: ast.operator,
                       right_node: ast.expr, right: Value, named: tuple[str | None, str | None],
                       where: Location) -> Value:
        """Arithmetic of which one side may be an LSE: ``lse - max`` keeps its base, ``lse *
        ln 2`` converts it, ``lse * s`` of another factor leaves its base not known."""
        if isinstance(op, (ast.Add, ast.Sub)):
            # a sum or difference is in its terms' units, whichever side they are on
            # (``m + log2(s)``, ``local - final``): of every base they hold (a mix of two is
            # of neither, so what reads it in one base reads the other wrong)
            sides = [lse for lse in (lse_of(left), lse_of(right)) if lse is not None]
            if len(sides) == 2 and not sides[1].sources <= sides[0].sources:
                self.note_mixed(op, sides[0], sides[1], where)
                return lose_layout(Lse(sides[0].sources | sides[1].sources))
            if sides:
                return sides[0]
        if isinstance(op, (ast.Mult, ast.Div)):
            left, right = _factors(left, right)
        lse, c = _scaled(left, right, named[0], named[1], op)
        if lse is None:
            return None
        if c is None and isinstance(op, (ast.Mult, ast.Div)):
            return self.scaled_by(lse, left_node if lse_of(left) is None else right_node,
                                  right if lse_of(left) is not None else left, op, where)
        if c is None or not isinstance(op, (ast.Mult, ast.Div)):
            return lse if isinstance(op, (ast.Add, ast.Sub)) else None  # lse - max: same base
        to_e = (c == "ln2") == isinstance(op, ast.Mult)
        how = f"{'×' if isinstance(op, ast.Mult) else '÷'} {'ln 2' if c == 'ln2' else 'log2 e'}"
        self.note_misconverted(lse, "e" if to_e else "2", how, where)
        return convert(lse, to_e, where, how)

    def note_mixed(self, op: ast.operator, left: Lse, right: Lse, where: Location) -> None:
        """A :class:`~.inferred.Mixed` fact where each side is of one known base on every
        path, the two bases different (a side whose paths hold either base, or whose base is
        not known, is no evidence)."""
        bases = [{s.base for s in side.sources} for side in (left, right)]
        if any(len(b) != 1 or not b <= {"e", "2"} or any(s.dispatch for s in side.sources)
               for b, side in zip(bases, (left, right), strict=True)) or bases[0] == bases[1]:
            return
        self.i.report(Mixed("+" if isinstance(op, ast.Add) else "-",
                            tuple(sorted(left.sources, key=source_order)),
                            tuple(sorted(right.sources, key=source_order)), where))

    def scaled_by(self, lse: Lse, factor_node: ast.expr, factor: Value, op: ast.operator,
                  where: Location) -> Value:
        """An LSE times (or over) a factor that is no conversion constant: the same LSE where
        the factor is 1 (``ln 2 ** False``), else an LSE of a base the lint does not know."""
        options = concrete_options(factor)
        if options is not None and all(o == 1 for o in options):
            return lse
        # a log scaled by another factor is no LSE the lint follows (a temperature's
        # ``log(pos) * scale``); a producer's or a parameter's stays one of unknown base
        kept = without_logs(lse)
        if kept is None:
            return None
        sign = "×" if isinstance(op, ast.Mult) else "÷"
        return lose_base(kept, where, f"{sign} {source_text(factor_node, 40)}")

    def note_misconverted(self, lse: Lse, target: str, how: str, where: Location) -> None:
        """A conversion into ``target`` of an LSE every known source of which is in it already
        (an LSE whose base some path leaves unknown, or that holds another base on another
        path, is no evidence: what is not read is not an error); the calls of this function
        report it where they hand it the LSE (:attr:`~attn_contracts.lint.calls.Summary.misconverted`)."""
        known = [s for s in lse.sources if s.base in ("e", "2") and not s.dispatch]
        if known and len(known) == len(lse.sources) and all(s.base == target for s in known):
            fact = Misconverted(how, target, tuple(sorted(known, key=source_order)), where)
            self.i.report(fact)
            self.misconverted.append(fact)

    def buffers(self, node: ast.expr) -> frozenset[tuple[int, ast.expr]]:
        """The variable ``node`` names, through the views of it (a slice ``buf[s:e]``,
        ``buf.view(...)``): a kernel writing into the view writes that variable's tensor."""
        while True:
            if isinstance(node, ast.Subscript):
                node = node.value
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in VIEWS:
                node = node.func.value
            else:
                break
        return frozenset({(self.serial, node)}) if dotted_name(node) is not None else frozenset()

    def call(self, node: ast.Call) -> Value:
        """A call's value (:class:`~attn_contracts.lint.frame.Frame`)."""
        raise NotImplementedError


def _undecided(test: ast.expr | None, known: bool | None) -> bool:
    """Paths that are the sides of a test whose value the flow does not know."""
    return test is not None and known is None


def _member_compare(left: Value, op: ast.cmpop, right: Value) -> bool | None:
    """A comparison of Enum members of the program, as Python's enum answers it: ``a == b``
    and ``a is b`` where both are one member (an alias is the member it repeats: equal
    values); ``a in b`` of two ``Flag`` members, whether ``a``'s bits are all in ``b`` (a
    zero member is in every one). None where a side is not one member whose value is known,
    or the answer differs between the members a side may be."""
    lefts, rights = list(alternatives(left)), list(alternatives(right))
    if not lefts or not rights or not all(
            isinstance(m, Member) and isinstance(m.value, Lit) for m in (*lefts, *rights)):
        return None
    answers: set[bool] = set()
    for a in cast(list[Member], lefts):
        for b in cast(list[Member], rights):
            va, vb = cast(Lit, a.value).value, cast(Lit, b.value).value
            if isinstance(op, (ast.In, ast.NotIn)):
                if not isinstance(va, int) or not isinstance(vb, int) or a.cls != b.cls:
                    return None
                answers.add(((va & vb) == va) == isinstance(op, ast.In))
            elif isinstance(op, (ast.Eq, ast.Is, ast.NotEq, ast.IsNot)):
                same = a.cls == b.cls and (a.name == b.name or va == vb)
                answers.add(same == isinstance(op, (ast.Eq, ast.Is)))
            else:
                return None
    return answers.pop() if len(answers) == 1 else None


def _part(container: Tup | Seq, key: ast.expr,
          bounds: tuple[int | None, int | None, int | None] | None) -> Value:
    """An item or slice of a container at a position the subscript does not give exactly
    (``t[1:]`` of a known tuple: Python's slice; another slice: some of its elements, positions
    not known; an item: any element)."""
    if isinstance(container, Tup) and bounds is not None and not container.partial_items:
        return Tup(container.items[slice(*bounds)])
    if isinstance(key, ast.Slice):
        return Seq(iterate(container))
    return iterate(container)


def _contained(container: Value, lefts: Sequence[object], is_in: bool) -> set[bool] | None:
    """``x in container`` / ``x not in container`` for each literal ``x`` may be: None where
    a member is not known and one of them might be ``x``."""
    if isinstance(container, DictV) and not class_keyed(container):
        return _keyed_in(container, lefts, is_in)
    members = _scalar_members(container)
    if members is None and isinstance(container, Tup):
        return None if _surely_in(container, lefts) is None else {is_in}
    if members is None:
        return None
    known, complete = members
    outcomes: set[bool] = set()
    for v in lefts:
        found = any(type(v) is type(m) and v == m for m in known)
        if found and not complete:
            return None  # one of the values it may hold: whether it does, not known
        outcomes.add(found if is_in else not found)
    return outcomes


def _scalar_members(container: Value) -> tuple[list[object], bool] | None:
    """A container's members as a constant (``x in C``, ``x`` a string or number) sees them
    (:func:`~.containers.members_of`, whose members must all be literals, with tuples too):
    its literals, and its tuples, which equal no constant (``set(table.items())`` holds
    pairs); None where one member is neither."""
    if isinstance(container, Seq):  # any of its element's values: a set's members
        # (none at all: the empty set, folding.abstract)
        items: list[Value] = [] if is_empty_set(container) else [container.item]
        complete = container.complete
    elif isinstance(container, Tup) and not container.partial_items and \
            all(len(list(alternatives(i))) == 1 for i in container.items):
        # a tuple's positions each one value for sure (``(name,)`` with ``name`` either of
        # two holds only one of them)
        items, complete = list(container.items), True
    else:
        return None
    out: list[object] = []
    for alt in (a for item in items for a in alternatives(item)):
        if isinstance(alt, Lit):
            out.append(alt.value)
        elif not isinstance(alt, Tup):
            return None
    return out, complete


def _surely_in(container: Tup, lefts: Sequence[object]) -> bool | None:
    """A tuple with items not read: an item equal to each value ``x`` may be makes ``x in
    t`` true whatever the others are (True); no such item, and whether it is in is not
    known (None)."""
    if container.partial_items:
        return None
    sure = [one[0] for item in container.items
            if (one := literal_values(item)) is not None and len(one) == 1]
    return True if all(any(type(v) is type(m) and v == m for m in sure) for v in lefts) \
        else None


_SET_ORDER: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
    ast.Gt: operator.gt, ast.GtE: operator.ge}


def _fold_compare(left: Value, op: ast.cmpop, right: Value) -> bool | None:
    """``a == b`` / ``a != b`` of two sequences known exactly that differ in an item or their
    length, or of a sequence and a scalar, and any order of two sets known exactly (``a <= b``
    is a subset): Python's answer; None for anything else (scalars are compared by
    the caller, which keeps where each was read). Equal items do not make two sequences
    equal: a list and a tuple of them differ, and which one a value is, is not kept."""
    a, b = concrete(left), concrete(right)
    if a is UNKNOWN or b is UNKNOWN:
        return None
    if isinstance(a, frozenset) and isinstance(b, frozenset) and type(op) in _SET_ORDER:
        return bool(_SET_ORDER[type(op)](a, b))  # equality, subset, superset of two sets
    if not isinstance(op, (ast.Eq, ast.NotEq)):
        return None
    if isinstance(a, tuple) and isinstance(b, tuple) and a != b:
        return not isinstance(op, ast.Eq)
    if isinstance(a, tuple) != isinstance(b, tuple) and not isinstance(
            a, frozenset) and not isinstance(b, frozenset):
        return not isinstance(op, ast.Eq)  # a sequence never equals a scalar
    return None


#: a module changing its own namespace through ``globals()`` (``globals()[k] = v``, ``del``,
#: ``update``...)
_GLOBALS_CHANGED = re.compile(r"\bglobals\(\)\s*(?:\[[^\]\n]*\]\s*(?:[-+*/%|&^@]|//|\*\*|<<|>>)?=(?!=)"
                              r"|\.(?:update|setdefault|pop|popitem|clear|__setitem__|"
                              r"__delitem__)\b)|\bdel\s+globals\(\)")


def _keyed_in(table: DictV, lefts: Sequence[object], is_in: bool) -> set[bool] | None:
    """``x in table`` for each literal ``x`` may be: a key every path stores is in it, one
    no path stores is not; None where one may be stored or not."""
    outcomes: set[bool] = set()
    for v in lefts:
        key = value_key(v)
        if key is None or key in table.maybe or (isinstance(v, float) and v != v):
            return None  # (a NaN is found only as the very object stored: not known here)
        outcomes.add((table.get(key) is not None) == is_in)
    return outcomes


def _exact_membership(left: Value, right: Value, is_in: bool) -> bool | None:
    """``x in C`` where ``C`` is a tuple or set known exactly and ``x`` each value it may be
    is known too, or is an object no constant equals (a class, a function, a module of the
    program: ``type(obj) in {"A", "B"}`` is False): Python's answer, where every value of
    ``x`` gives the same one."""
    box = concrete(right)
    if not isinstance(box, (tuple, frozenset)):
        return None
    answers: set[bool] = set()
    for alt in alternatives(left):
        if isinstance(alt, (ClassRef, Func, Bound, ModuleRef)) and \
                all(isinstance(m, (bool, int, float, str, type(None))) for m in box):
            answers.add(not is_in)
            continue
        one = concrete(alt)
        if one is UNKNOWN:
            return None
        answers.add((one in box) == is_in)
    return answers.pop() if len(answers) == 1 else None


def _concat(left: Value, right: Value) -> Value:
    """``a + b`` of tuples or lists: a tuple of both's items where positions are known, else
    a list of either's elements."""
    if isinstance(left, Tup) and isinstance(right, Tup) and not left.partial_items:
        return Tup(left.items + right.items, right.partial_items, mutable=left.mutable)
    return Seq(join([iterate(left), iterate(right)]))


def _factors(left: Value, right: Value) -> tuple[Value, Value]:
    """A product's operands, where one is an LSE that only logarithms made and the other a
    producer's or a parameter's LSE (``torch.log(t) * lse``): the log is the factor, not the
    LSE scaled."""
    a, b = lse_of(left), lse_of(right)
    if a is not None and b is not None and is_log_only(a) != is_log_only(b):
        return (None, right) if is_log_only(a) else (left, None)
    return left, right


def _scaled(left: Value, right: Value, lc: str | None, rc: str | None,
            op: ast.operator) -> tuple[Lse | None, str | None]:
    """The LSE an arithmetic operation works on, and the constant the other side is: the left
    operand's, the right one's in a product, or a parameter's scaled by a constant (the
    conversion its callers' LSEs go through)."""
    lse, c = (lse_of(left), rc) if lse_of(left) is not None else (
        lse_of(right), lc) if lse_of(right) is not None and isinstance(op, ast.Mult) else (
            None, None)
    if lse is None and isinstance(left, Param) and rc:
        lse = Lse(frozenset({Source(f"param:{left.path}:{left.func}:{left.name}", None,
                                    f"parameter {left.name!r}", param=left.name)}))
        c = rc  # the parameter's conversion, which its callers' LSEs go through
    return lse, c


def _viewed_roots(viewed: Value) -> list[tuple[str, bool]]:
    """The tensors a name bound to a view views (``env[VIEW + name]``), each with whether
    the view is surely all of it (a view on one path only is not)."""
    if viewed is None:
        return []
    alts = list(alternatives(viewed))
    sure = [str(a.value).partition("\x00") for a in alts if isinstance(a, Lit)]
    return [(r, whole == "1" and len(sure) == len(alts) == 1) for r, _, whole in sure]


def _view_lit(root: str, whole: bool) -> Lit:
    """``env[VIEW + name]``'s value: the tensor ``root`` the name views, and whether all."""
    return Lit(f"{root}\x00{int(whole)}", None)


def sure_view(node: ast.expr) -> tuple[ast.expr, bool, int]:
    """Where a chain of sure views (:data:`~.torch_model.VIEWS`, basic indexing) of ``node``
    starts, whether it is all of that tensor (no subscript on the way), and how many steps it
    has (none: ``node`` is no view)."""
    whole, steps = True, 0
    while True:
        if isinstance(node, ast.Subscript) and _basic_index(node.slice):
            node, whole = node.value, False
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in VIEWS:
            node = node.func.value
        else:
            return node, whole, steps
        steps += 1


def _basic_index(key: ast.expr) -> bool:
    """Whether a subscript's key is basic indexing (slices, integers, ``None``, ``...``:
    a view); a name or a call may be a tensor index, which copies."""
    parts = key.elts if isinstance(key, ast.Tuple) else [key]
    return all(isinstance(p, (ast.Slice, ast.Constant, ast.UnaryOp, ast.BinOp)) for p in parts)
