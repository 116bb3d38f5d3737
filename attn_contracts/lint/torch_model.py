"""The torch model of the interpreter: what tensor operations do to an LSE.

Which calls and attributes keep an LSE's base (the table the tracer reads too,
:mod:`attn_contracts.lse_ops`), which swap or lose its layout, which exponentials read it in
which base, which reductions take natural-log LSEs, which methods return views; and the
conversions between the two bases (``x * ln 2``) with the constants that spell them.
"""

from __future__ import annotations

import ast
import math
import operator
from collections.abc import Callable
from dataclasses import replace

from attn_contracts import lse_ops
from attn_contracts.findings import Location
from attn_contracts.lint.values import NOT_SPECIAL
from attn_contracts.lint.values import ClassKey
from attn_contracts.lint.values import ClassRef
from attn_contracts.lint.values import Ext
from attn_contracts.lint.values import ExtInst
from attn_contracts.lint.values import Inst
from attn_contracts.lint.values import Lit
from attn_contracts.lint.values import Lse
from attn_contracts.lint.values import ModuleRef
from attn_contracts.lint.values import Num
from attn_contracts.lint.values import Seq
from attn_contracts.lint.values import Tup
from attn_contracts.lint.values import Union_
from attn_contracts.lint.values import Value
from attn_contracts.lint.values import alternatives
from attn_contracts.lint.values import join
from attn_contracts.lint.values import lse_of
from attn_contracts.records import LN2
from attn_contracts.records import LOG2E

# Calls and attributes that keep an LSE's base: the table the tracer reads too (``lse_ops``)
KEEPS_BASE = lse_ops.lint_methods()


#: ops that cut an LSE into a sequence of LSEs (``x.unbind(0)``, ``torch.split(x, 2)``), and
#: torch functions that make one LSE of a sequence of them (``torch.stack(parts)``): the base
#: kept, the layout not
PIECES = lse_ops.lint_pieces()
GATHERS = lse_ops.lint_gathers()

#: of those, the ones that swap a 2-D LSE's two axes; the rest keep the layout or lose it
TRANSPOSES = frozenset(op.name for op in lse_ops.LSE_OPS if op.layout in ("swap", "moved"))


SWAPS = frozenset(op.name for op in lse_ops.LSE_OPS if op.layout == "swap")


LAYOUT_KEEPING = frozenset(op.name for op in lse_ops.LSE_OPS if op.layout == "kept")


KEEPS_BASE_ATTRS = lse_ops.lint_attributes()


TORCH_KEEPS = lse_ops.lint_functions()


#: reductions of LSEs in one base, by name: the base (``torch.logsumexp(lse, dim=-1)`` over a
#: split axis and ``torch.logaddexp(a, b)`` natural-log, ``torch.logaddexp2`` base 2): an LSE
#: of that base comes out, without its layout; one of the other base is weighed in the wrong
#: base (what comes out of it is no LSE of either base)
BASE_REDUCTIONS = {op.name: op.only_base for op in lse_ops.LSE_OPS if op.only_base is not None}


#: exponentials a hand-written merge weighs LSEs with (``torch.exp2(lse - m)``,
#: ``logits.softmax(1)``): the table the tracer's twin reads (``lse_ops.EXPONENTIALS``)
EXPONENTIALS = frozenset(op.name for op in lse_ops.EXPONENTIALS)
#: the torch modules the table spells them in (``torch``, ``torch.nn.functional``, ...)
EXPONENTIAL_NAMESPACES = frozenset(ns for op in lse_ops.EXPONENTIALS for ns in op.namespaces)


#: tensor methods that return a view of their receiver (its storage, not a copy): a kernel
#: writing into the view writes the receiver
VIEWS = lse_ops.lint_views()


#: wrappers that return the function they are given (``torch.compiler.disable(fn)``), or a
#: value that computes as the one they are given (``tl.constexpr(1.44...)``: a kernel's
#: compile-time constant, the number itself in its arithmetic)
IDENTITY_WRAPPERS = frozenset({"torch.compiler.disable", "torch._dynamo.disable",
                               "triton.language.constexpr"})


#: the annotations an LSE can have: a parameter typed so is read as a parameter (what its
#: caller passes), never as a bare instance of the type
TENSOR_TYPES = frozenset({"torch.Tensor", "torch.FloatTensor"})


def short_line(where: Location) -> str:
    """A place as a message names it: ``/x/y/f.py:12:5`` → ``f.py:12``."""
    name = where.path.rsplit("/", 1)[-1]
    return f"{name}:{where.line}" if where.path and where.line is not None else str(where)


def constant_name(node: ast.expr, value: Value) -> str | None:
    """``math.log(2)``, 0.6931…: "ln2"; ``math.log2(math.e)``, 1.4427…: "log2e"."""
    if isinstance(value, Num):
        return value.name
    number = fold_number(node)
    if number is None or (isinstance(node, ast.Constant) and not isinstance(node.value, float)):
        return None  # an int literal (``2``) is a count, not a factor
    if math.isclose(number, LN2, rel_tol=1e-6):
        return "ln2"
    if math.isclose(number, LOG2E, rel_tol=1e-6):
        return "log2e"
    return None


#: the functions and constants of ``math`` (and their ``numpy``/``torch`` namesakes on plain
#: numbers) folded on known numbers
_MATH_FUNCTIONS: dict[str, Callable[..., float]] = {
    "log": math.log, "log2": math.log2, "log10": math.log10, "exp": math.exp,
    "exp2": lambda x: 2.0 ** x, "sqrt": math.sqrt}
_MATH_CONSTANTS = {"e": math.e, "pi": math.pi}
_BINARY: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.Pow: operator.pow}


def fold_number(node: ast.expr, depth: int = 0) -> float | None:
    """The number an expression of number literals, ``math.e``/``math.pi`` and calls of
    ``math.log(x[, base])``, ``log2``, ``log10``, ``exp``, ``sqrt`` computes, as Python computes
    it (``math.log(math.e, 2)`` is log2 e; ``1 / math.log(2)`` too); None for anything else."""
    if depth > 8:
        return None
    if isinstance(node, (ast.Constant, ast.Attribute)):
        return _number_leaf(node)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        inner = fold_number(node.operand, depth + 1)
        return None if inner is None else (-inner if isinstance(node.op, ast.USub) else inner)
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _apply(_BINARY[type(node.op)], [node.left, node.right], depth)
    if isinstance(node, ast.Call) and not node.keywords and 1 <= len(node.args) <= 2:
        fn = node.func.attr if isinstance(node.func, ast.Attribute) else (
            node.func.id if isinstance(node.func, ast.Name) else "")
        if fn in _MATH_FUNCTIONS and (len(node.args) == 1 or fn == "log"):
            return _apply(_MATH_FUNCTIONS[fn], node.args, depth)
    return None


def _number_leaf(node: ast.Constant | ast.Attribute) -> float | None:
    """A number literal, or ``math.e``/``math.pi`` (``numpy``'s and ``torch``'s too)."""
    if isinstance(node, ast.Constant):
        value = node.value
        return float(value) if isinstance(value, (int, float)) and \
            not isinstance(value, bool) else None
    if isinstance(node.value, ast.Name) and node.value.id in ("math", "np", "numpy", "torch"):
        return _MATH_CONSTANTS.get(node.attr)
    return None


def _apply(fn: Callable[..., float], operands: list[ast.expr], depth: int) -> float | None:
    """``fn`` of the numbers its operands fold to; None where one does not, or Python raises."""
    args = [fold_number(a, depth + 1) for a in operands]
    if any(a is None for a in args):
        return None
    try:
        return float(fn(*args))
    except (ArithmeticError, ValueError, TypeError):
        return None


def swap(lse: Lse) -> Lse:
    flipped = {"token_head": "head_token", "head_token": "token_head"}
    return Lse(frozenset(replace(s, layout=flipped.get(s.layout or ""))
                         for s in lse.sources))


def lose_layout(lse: Lse) -> Lse:
    if all(s.layout is None for s in lse.sources):
        return lse
    return Lse(frozenset(replace(s, layout=None) for s in lse.sources))


def map_lse(value: Value, fn: Callable[[Lse], Lse]) -> Value:
    if isinstance(value, Lse):
        return fn(value)
    if isinstance(value, Tup):
        return Tup(tuple(map_lse(v, fn) for v in value.items), value.partial_items)
    if isinstance(value, Seq):
        return Seq(map_lse(value.item, fn))
    if isinstance(value, Union_):
        return join([map_lse(v, fn) for v in value.options])
    return value


def tag_impl(value: Value, impl: ClassKey) -> Value:
    return map_lse(value, lambda lse: Lse(frozenset(
        s if s.impl is not None else replace(s, impl=impl) for s in lse.sources)))


def tag_choice(value: Value, choice: str) -> Value:
    return map_lse(value, lambda lse: Lse(frozenset(
        s if s.choice else replace(s, choice=choice) for s in lse.sources)))


def convert(lse: Lse, to_e: bool, where: Location, how: str) -> Lse:
    """``x * ln 2`` (``to_e``) turns log2-sum-exp2 into ln-sum-exp; the inverse turns it back.
    A source already in the target base stops being an LSE of either base."""
    target = "e" if to_e else "2"
    out = set()
    for s in lse.sources:
        note = f"{s.converted}, {how} ({short_line(where)})" if s.converted else \
            f"{how} ({short_line(where)})"
        if s.param is not None and s.base != "x":
            # past two equal conversions in a row it is of neither base, whatever it was;
            # before that the conversions alternate, and dropping one pair after the first
            # keeps their outcome: at most three are kept, so a cycle's summary settles
            shifts = (*s.shifts, (target, where, how))
            if len(shifts) > 3:
                shifts = shifts[:1] + shifts[3:]
            s = replace(s, shifts=shifts)
        if s.base is None or s.dispatch:
            # an unread factor before this one leaves the base unread after it too
            out.add(replace(s, base=target if s.base is None and not s.dispatch and
                            not s.unread else None,
                            dispatch=False, bases=(), converted=note))
        elif s.base == target:
            out.add(replace(s, base="x", converted=note))
        elif s.base == "x":
            out.add(replace(s, converted=note))
        else:
            out.add(replace(s, base=target, converted=note))
    return Lse(frozenset(out))


#: the key of an LSE a logarithm made (``m + tl.log2(s)``, :meth:`Frame.logarithm`)
LOG_KEY = "log:"


def logs_of(value: Value) -> frozenset[str]:
    """The bases of the LSEs logarithms made that ``value`` holds."""
    lse = lse_of(value)
    return frozenset() if lse is None else frozenset(
        s.base for s in lse.sources if s.key.startswith(LOG_KEY) and s.base in ("e", "2"))


def chosen_logs(sides: list[dict[str, Value]], joined: dict[str, Value]) -> dict[str, Value]:
    """After a test the flow cannot decide: a value that one side computed with a logarithm of
    one base and another side with one of the other (``lse = tl.log(s) if IS_E else
    tl.log2(s)``) is of the base the test chooses, which the lint does not know: those
    logarithms' LSEs lose their base in the joined value (a side that mixes both keeps them:
    that is in neither base on its own)."""
    out = joined
    for name, value in joined.items():
        per_side = [logs_of(side[name]) for side in sides if name in side]
        if len(per_side) < 2 or any(len(b) > 1 for b in per_side) or \
                len(frozenset().union(*per_side)) < 2:
            continue
        if out is joined:
            out = dict(joined)
        out[name] = map_lse(value, lambda lse: Lse(frozenset(
            replace(s, base=None, unread="chosen by a test the lint cannot decide")
            if s.key.startswith(LOG_KEY) else s for s in lse.sources)))
    return out


def chosen_join(values: list[Value]) -> Value:
    """The join of values that paths the flow cannot tell apart make (a function's ``return``
    statements, the two sides of ``a if test else b``), where logarithms of two bases made on
    different paths (``if IS_E: return tl.log(s)`` then ``return tl.log2(s)``) are of the base
    the path picks (:func:`chosen_logs`)."""
    joined = join(values)
    if len(values) < 2 or len(logs_of(joined)) < 2:
        return joined
    return chosen_logs([{"": v} for v in values], {"": joined})[""]


def is_log_only(lse: Lse) -> bool:
    """An LSE that only logarithms made (no producer's, no parameter's): a tensor's log that
    may be a hand-written LSE, or may be any log (a temperature, a position's)."""
    return all(s.key.startswith(LOG_KEY) for s in lse.sources)


def without_logs(lse: Lse) -> Lse | None:
    """The LSE less what logarithms made; None where nothing else is left."""
    kept = frozenset(s for s in lse.sources if not s.key.startswith(LOG_KEY))
    return None if not kept else lse if len(kept) == len(lse.sources) else Lse(kept)


def lose_base(lse: Lse, where: Location, how: str) -> Lse:
    """``x * scale`` where the lint cannot read ``scale`` (nor say it is 1): the LSE stays an
    LSE, but of a base not known (never dropped: a consumer it reaches warns, naming this). A
    parameter's LSE records it, so a caller's own LSE goes through the same."""
    out = set()
    for s in lse.sources:
        note = f"{s.converted}, {how} ({short_line(where)})" if s.converted else \
            f"{how} ({short_line(where)})"
        if s.param is not None and s.base != "x":
            shifts = (*s.shifts, ("?", where, how))
            s = replace(s, shifts=shifts[:1] + shifts[3:] if len(shifts) > 3 else shifts)
        out.add(replace(s, base=None, dispatch=False, bases=(), impl=None, converted=note,
                        unread=f"{how} ({short_line(where)})"))
    return Lse(frozenset(out))


#: the conversion constants' values, for arithmetic on them (``math.log(2) ** flag``)
_NUMBERS = {"ln2": LN2, "log2e": LOG2E}


def as_number(value: Value, where: Location) -> Value:
    """A conversion constant as the float it is, for folding arithmetic on it."""
    return Lit(_NUMBERS[value.name], where) if isinstance(value, Num) else value


def named_number(value: Value) -> Value:
    """A folded float that is a conversion constant (``math.log(2) ** True``), as that
    constant; any other value as it is."""
    if isinstance(value, Lit) and isinstance(value.value, float):
        for name, number in _NUMBERS.items():
            if math.isclose(value.value, number, rel_tol=1e-6):
                return Num(name)
    return value


def flatten(value: Value) -> Value:
    """The LSEs a value holds anywhere (tuple items included), as one value."""
    found: list[Value] = []
    for alt in alternatives(value):
        if isinstance(alt, Tup):
            found += [flatten(v) for v in alt.items]
        elif isinstance(alt, Seq):
            found.append(flatten(alt.item))
        else:
            found.append(alt)
    return join(found)


def not_a_tensor_method(receiver: Value, on_torch: bool) -> Value | object:
    """After ``torch.f(x)`` or ``x.f()`` of what is no LSE: no LSE either (its arguments are read
    already), unless ``x`` is an object whose own method ``f`` the call runs (the program's, an
    external one): then the call is interpreted as any other."""
    if on_torch or not isinstance(receiver, (Inst, ModuleRef, Ext, ExtInst, ClassRef)):
        return None
    return NOT_SPECIAL


def _swaps_two(node: ast.Call, skip: int = 0) -> bool:
    """``x.transpose(0, 1)`` / ``x.transpose(-1, -2)``: the two axes of a 2-D LSE."""
    args = node.args[skip:]
    if len(args) != 2 or not all(isinstance(a, (ast.Constant, ast.UnaryOp)) for a in args):
        return False
    try:
        values = {ast.literal_eval(a) for a in args}
    except ValueError:
        return False
    return values in ({0, 1}, {-1, -2}, {0, -1}, {1, -2})


def through_method(name: str, node: ast.Call, lse: Lse) -> Lse:
    """``lse.<name>(...)`` of an op that keeps the base: its layout kept, swapped (``.t()``,
    ``.transpose(0, 1)``) or lost."""
    if name in TRANSPOSES:
        return swap(lse) if name in SWAPS and (name == "t" or _swaps_two(node)) else \
            lose_layout(lse)
    return lse if name in LAYOUT_KEEPING else lose_layout(lse)


def through_function(name: str, node: ast.Call, lse: Lse) -> Lse:
    """``torch.<name>(lse, ...)`` of an op that keeps the base: swapped by
    ``torch.transpose(lse, 0, 1)``, kept by ``torch.contiguous``, else its layout lost."""
    return swap(lse) if name == "transpose" and _swaps_two(node, 1) else \
        lose_layout(lse) if name != "contiguous" else lse
