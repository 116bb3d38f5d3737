"""Constant folding: what Python's own builtins compute from values the flow knows exactly.

Where every operand of a builtin function (``frozenset``, ``len``, ``any``), a method of a
builtin container (``s.union(t)``, ``t.count(x)``) or an operator on containers (``a | b - c``,
``x in (t, "y")``) is known to the last element, the result is computed by Python itself, on
the literals the source writes (nothing of the linted program runs: the function is the
builtin, the operands are constants). That is Python's semantics by construction, its corner
cases included: operator precedence, a ``frozenset.union`` whose result is discarded, a
tuple nested in a tuple, the truth of a non-empty set. Anything not known exactly is not
folded (:data:`UNKNOWN`), and the interpreter's own reading applies.

A value is known exactly where it is one literal, a tuple whose every item is, or a set literal
of literals (:class:`~attn_contracts.lint.values.Seq` ``complete``); results come back as the
same kinds of value.
"""

from __future__ import annotations

import ast
import builtins
import fnmatch
import functools
import keyword
import math
import operator
import posixpath
import re
import string
from collections.abc import Callable
from typing import Any

from attn_contracts.findings import Location
from attn_contracts.lint.values import Lit
from attn_contracts.lint.values import Seq
from attn_contracts.lint.values import Tup
from attn_contracts.lint.values import Value
from attn_contracts.lint.values import alternatives
from attn_contracts.lint.values import set_of

__all__ = ["BUILTINS", "LIBRARY_FUNCTIONS", "METHOD_NAMES", "MODULE_CONSTANTS", "PATTERN",
           "REGEX_FUNCTIONS", "SCALARS",
           "UNKNOWN", "abstract", "compiled", "concrete", "concrete_options", "fold_binop",
           "fold_builtin", "fold_format", "fold_library", "fold_math", "fold_method", "fold_regex",
           "safe_format"]


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"


#: not known exactly: not folded
UNKNOWN: object = _Unknown()

#: the builtin functions folded: pure (their value is all they do) on constants
BUILTINS = frozenset({"frozenset", "set", "tuple", "list", "sorted", "len", "bool", "any", "all",
                      "min", "max", "str", "int", "float", "abs", "sum", "round", "divmod",
                      "ord", "chr", "range"})
#: the methods of builtin containers folded on constants (none changes its receiver)
_METHODS: dict[type, frozenset[str]] = {
    frozenset: frozenset({"union", "intersection", "difference", "symmetric_difference",
                          "issubset", "issuperset", "isdisjoint", "copy"}),
    tuple: frozenset({"count", "index"}),
}
#: every method name :func:`fold_method` may fold
METHOD_NAMES = frozenset().union(*_METHODS.values())
_SET_OPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.BitOr: operator.or_, ast.BitAnd: operator.and_, ast.Sub: operator.sub,
    ast.BitXor: operator.xor}
#: the largest container folded (a larger one is not read)
_MAX = 4096
#: the constants a literal holds (what the source can write)
SCALARS = (bool, int, float, str, type(None))
#: the constants of the standard library a module holds, by their qualified name
MODULE_CONSTANTS: dict[str, float] = {
    f"math.{n}": getattr(math, n) for n in ("e", "pi", "tau", "inf", "nan")}


def concrete(value: Value) -> Any:
    """The one Python value ``value`` is, where it is known exactly; else :data:`UNKNOWN`."""
    if isinstance(value, Lit):
        return value.value if isinstance(value.value, SCALARS) else UNKNOWN
    if isinstance(value, Tup) and not value.partial_items and len(value.items) <= _MAX:
        items = tuple(concrete(v) for v in value.items)
        if any(i is UNKNOWN for i in items):
            return UNKNOWN
        return iter(items) if value.iterator else items  # a fresh one per read
    if isinstance(value, Seq) and value.complete:
        if value.item is None:
            return frozenset()
        options = list(alternatives(value.item))
        if len(options) <= _MAX and all(isinstance(o, Lit) and isinstance(o.value, SCALARS)
                                         for o in options):
            return frozenset(o.value for o in options if isinstance(o, Lit))
    return UNKNOWN


def concrete_options(value: Value) -> list[Any] | None:
    """Every Python value ``value`` may be (each alternative known exactly); None where one
    is not."""
    out = [concrete(alt) for alt in alternatives(value)]
    return None if not out or any(o is UNKNOWN for o in out) else out


def abstract(obj: Any, where: Location) -> Value:
    """A folded result as a value (None where it is no constant the interpreter keeps)."""
    if isinstance(obj, SCALARS):
        return Lit(obj, where) if not isinstance(obj, str) or len(obj) <= _MAX else None
    if isinstance(obj, (tuple, list)) and len(obj) <= _MAX:
        return Tup(tuple(abstract(o, where) for o in obj), mutable=isinstance(obj, list))
    if isinstance(obj, (set, frozenset)) and len(obj) <= _MAX:
        if not obj:
            return Seq(None, complete=True)  # the empty set: no element, and that is all
        ordered = sorted(obj, key=lambda o: (type(o).__name__, repr(o)))  # any hash seed
        # its elements: constants, or tuples of them (``set(table.items())``)
        members = [abstract(o, where) for o in ordered]
        return set_of(members, True) if None not in members else None
    return None


def _call(fn: Callable[..., Any], args: list[Any], where: Location) -> Value:
    try:
        return abstract(fn(*args), where)
    except (TypeError, ValueError, AttributeError, LookupError, ArithmeticError):
        return None  # Python raises (``1 / 0``, ``"%s" % ()``): no value


def fold_builtin(name: str, args: list[Value], where: Location) -> object:
    """``name(*args)`` of a builtin function, where every argument is known exactly; else
    :data:`UNKNOWN`."""
    if name not in BUILTINS:
        return UNKNOWN
    values = [concrete(a) for a in args]
    if any(v is UNKNOWN for v in values):
        return UNKNOWN
    if name in _ORDERED and any(isinstance(v, frozenset) for v in values):
        # a set's order is its hash order, which changes with PYTHONHASHSEED (``str``'s
        # text, ``list``'s positions): not read (``sorted``, ``len``, ``min``... are)
        return UNKNOWN
    if name == "range":
        # its numbers as a tuple (iterated, indexed, ``x in range(n)``), where they are few
        if not all(isinstance(v, int) and abs(v) <= 1 << 30 for v in values):
            return UNKNOWN
        try:
            span = range(*values)
        except (TypeError, ValueError):
            return None  # Python raises (``range(0, 3, 0)``)
        return _call(tuple, [span], where) if len(span) <= _RANGE_MAX else UNKNOWN
    return _call(getattr(builtins, name), values, where)


#: the longest ``range`` folded into its numbers (a longer one is a loop's count, not a table)
_RANGE_MAX = 64
#: the builtins whose result shows the order their argument iterates in
_ORDERED = frozenset({"tuple", "list", "str"})

#: the pure functions of :mod:`math` folded on known numbers (``math.isclose(base, 2)``)
MATH_FUNCTIONS = frozenset({"isclose", "log", "log2", "log10", "exp", "sqrt", "floor", "ceil",
                            "trunc", "isinf", "isnan", "isfinite", "fabs"})


#: the pure functions of other standard modules folded on constants, by module: their value
#: is all they do, and none calls back into the program (``fnmatch.fnmatchcase(name, "*_mla")``,
#: ``operator.contains(names, name)``, ``os.path.splitext(path)``)
LIBRARY_FUNCTIONS: dict[str, frozenset[str]] = {
    "fnmatch": frozenset({"fnmatch", "fnmatchcase", "filter"}),
    # (not ``is_``/``is_not``: which equal constants are one object is CPython's choice)
    "operator": frozenset({"eq", "ne", "lt", "le", "gt", "ge", "not_", "truth", "contains",
                           "countOf", "indexOf", "concat", "or_", "and_", "xor", "neg", "pos",
                           "abs"}),
    "os.path": frozenset({"basename", "dirname", "splitext", "split", "join", "normpath"}),
    "posixpath": frozenset({"basename", "dirname", "splitext", "split", "join", "normpath"}),
    "keyword": frozenset({"iskeyword", "issoftkeyword"}),
    "string": frozenset({"capwords"}),
}
_LIBRARY_MODULES = {"fnmatch": fnmatch, "operator": operator, "os.path": posixpath,
                    "posixpath": posixpath, "keyword": keyword, "string": string}
#: the longest text or tuple a library function folds (``fnmatch`` compiles its pattern)
_LIBRARY_ARG_MAX = 256


def _small(value: Any) -> bool:
    """A constant, tuple or set short enough for a library function to fold."""
    if isinstance(value, str | tuple | frozenset):
        return len(value) <= _LIBRARY_ARG_MAX
    return value is not UNKNOWN and isinstance(value, SCALARS)


def fold_library(module: str, name: str, args: list[Value], keywords: dict[str, Value],
                 where: Location) -> object:
    """``module.name(*args, **keywords)`` of :data:`LIBRARY_FUNCTIONS` (or of :mod:`math`)
    where every argument is known exactly: what Python computes (paths as on POSIX, where the
    engines run); else :data:`UNKNOWN`."""
    if module == "math":
        return fold_math(name, args, keywords, where)
    if name not in LIBRARY_FUNCTIONS.get(module, frozenset()):
        return UNKNOWN
    values = [concrete(a) for a in args]
    named = {k: concrete(v) for k, v in keywords.items()}
    if not all(_small(v) for v in (*values, *named.values())):
        return UNKNOWN  # not known, an iterator, or an argument too long to fold
    return _call(functools.partial(getattr(_LIBRARY_MODULES[module], name), **named),
                 values, where)


def fold_math(name: str, args: list[Value], keywords: dict[str, Value],
              where: Location) -> object:
    """``math.name(*args, **keywords)`` where every argument is a known number; else
    :data:`UNKNOWN`."""
    if name not in MATH_FUNCTIONS:
        return UNKNOWN
    values = [concrete(a) for a in args]
    named = {k: concrete(v) for k, v in keywords.items()}
    if any(not isinstance(v, (int, float)) for v in (*values, *named.values())):
        return UNKNOWN
    try:
        result = getattr(math, name)(*values, **named)
    except (TypeError, ValueError, ArithmeticError):
        return UNKNOWN  # Python raises (``math.log(8, 1)``): no value
    return Lit(result, where)


#: what ``re`` folds: a compiled pattern's or the module's matching functions
REGEX_FUNCTIONS = frozenset({"match", "fullmatch", "search"})
#: the prefix of the value a compiled pattern is (an external instance naming its source)
PATTERN = "re.Pattern:"
#: the longest pattern and string matched (a longer one is not read)
_REGEX_MAX = 64
#: a group repeated (``(a+)+``, ``(a|a)*``): a pattern whose matching may backtrack without
#: end on a short string; not run (an optional group, ``(x)?``, is two ways at most)
_REPEATED_GROUP = re.compile(r"\)\s*[+*{]")
#: repetitions in all (``a*a*a*a*b`` backtracks as the string's length to their number)
_REPEATS = re.compile(r"[+*]|\{\d")
_MAX_REPEATS = 3
#: the flags a folded pattern may carry (``re.DEBUG`` prints; others are unknown here)
_SAFE_FLAGS = int(re.IGNORECASE | re.MULTILINE | re.DOTALL | re.VERBOSE | re.ASCII | re.UNICODE)


def compiled(pattern: Value, flags: Value | None) -> str | None:
    """The name of the value ``re.compile(pattern, flags)`` is, where both are known and the
    pattern compiles; None elsewhere."""
    text, bits = concrete(pattern), 0 if flags is None else concrete(flags)
    if not isinstance(text, str) or type(bits) is not int or bits & ~_SAFE_FLAGS or \
            len(text) > _REGEX_MAX or _REPEATED_GROUP.search(text) or \
            len(_REPEATS.findall(text)) > _MAX_REPEATS:
        return None
    try:
        re.compile(text, bits)
    except (re.error, ValueError, TypeError, OverflowError):
        return None
    return f"{PATTERN}{bits}:{text}"


def fold_regex(name: str, pattern: str, subject: Value) -> object:
    """``p.match(s)`` / ``fullmatch`` / ``search`` of a pattern named by :func:`compiled` on a
    known string: whether Python finds a match (True: a match object, always true; False:
    None); :data:`UNKNOWN` where the string is not known or too long."""
    bits, _, text = pattern.removeprefix(PATTERN).partition(":")
    value = concrete(subject)
    if name not in REGEX_FUNCTIONS or not isinstance(value, str) or len(value) > _REGEX_MAX:
        return UNKNOWN
    return getattr(re.compile(text, int(bits)), name)(value) is not None


def fold_method(receiver: Value, name: str, args: list[Value], where: Location) -> object:
    """``receiver.name(*args)`` of a builtin container's pure method, where the receiver and
    every argument are known exactly; else :data:`UNKNOWN`."""
    obj = concrete(receiver)
    if obj is UNKNOWN or name not in _METHODS.get(type(obj), frozenset()):
        return UNKNOWN
    values = [concrete(a) for a in args]
    if any(v is UNKNOWN for v in values):
        return UNKNOWN
    return _call(getattr(obj, name), values, where)


def fold_binop(left: Value, op: ast.operator, right: Value, where: Location) -> object:
    """``left OP right`` of two sets (``|``, ``&``, ``-``, ``^``) or two scalars (``flag |
    True``, ``"fa" + "3"``, ``"%s3" % "fa"``, ``2 ** 3``) known exactly; else
    :data:`UNKNOWN`."""
    a, b = concrete(left), concrete(right)
    if isinstance(a, frozenset) and isinstance(b, frozenset) and type(op) in _SET_OPS:
        return _call(_SET_OPS[type(op)], [a, b], where)
    fn = _SCALAR_OPS.get(type(op))
    if fn is None or not isinstance(a, SCALARS) or not (
            isinstance(b, SCALARS) or (isinstance(op, ast.Mod) and isinstance(b, tuple))):
        return UNKNOWN
    if not _bounded(a, op, b):
        return UNKNOWN  # a result too large to build: not read
    return _call(fn, [a, b], where)


_SCALAR_OPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.LShift: operator.lshift, ast.RShift: operator.rshift,
    ast.BitOr: operator.or_, ast.BitAnd: operator.and_, ast.BitXor: operator.xor}


def _bounded(a: Any, op: ast.operator, b: Any) -> bool:
    """Whether Python computes ``a OP b`` in bounded time and memory: no large power, shift or
    repetition, no formatting with a large width, no operand of more than 1024 bits (``x = x *
    x`` repeated stays small)."""
    if any(isinstance(x, int) and x.bit_length() > 1024 for x in (a, b)):
        return False
    if isinstance(op, (ast.Pow, ast.LShift)):
        return isinstance(b, (int, float)) and abs(b) <= 64 and (
            not isinstance(a, int) or a.bit_length() <= 64)
    if isinstance(op, ast.Mult) and isinstance(a, str | int) and isinstance(b, str | int):
        text, times = (a, b) if isinstance(a, str) else (b, a)
        return not isinstance(text, str) or not isinstance(times, int) or \
            len(text) * max(times, 0) <= _MAX
    if isinstance(op, ast.Mod) and isinstance(a, str):
        return safe_format(a)
    return True


def safe_format(text: str) -> bool:
    """A format string (``%`` or ``format``) with no width or precision of more than three
    digits: formatting it with scalars stays small."""
    run = 0
    for ch in text:
        run = run + 1 if ch.isdigit() else 0
        if run > 3:
            return False
    return len(text) <= _MAX


#: an f-string's ``!s``/``!r``/``!a`` (-1: none)
_CONVERSIONS: dict[int, Callable[[Any], Any]] = {-1: lambda x: x, 115: str, 114: repr, 97: ascii}


def fold_format(value: Value, conversion: int, spec: str | None, where: Location) -> object:
    """One ``{value!c:spec}`` of an f-string, where the value is one known scalar: the text
    Python formats it to; else :data:`UNKNOWN`."""
    v = concrete(value)
    if not isinstance(v, SCALARS) or (spec is not None and not safe_format(spec)):
        return UNKNOWN
    convert = _CONVERSIONS.get(conversion)
    if convert is None:
        return UNKNOWN
    try:
        return format(convert(v), spec or "")
    except (TypeError, ValueError):
        return UNKNOWN  # Python raises: no value
