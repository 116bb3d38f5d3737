"""The ``TorchFunctionMode`` that carries an LSE's tag through what the engine does to it.

Every torch function called while the trace runs passes through :meth:`_LseMode.__torch_function__`.
It calls the function, then, where the function is one the trace follows and an input carries a
tag, gives the result its tag. Which functions keep an LSE's base, and how each moves its axes,
is :mod:`attn_contracts.lse_ops`' table (the linter reads the same one): views and copies keep
the base and move the axes (:mod:`attn_contracts.tracing.tags`), a stack adds the states axis,
``logsumexp`` keeps base e only. A multiplication by ``ln 2`` (or a division by ``log2 e``)
re-tags base 2 as base e and the reverse re-tags e as 2 — the known conversions,
``vllm.v1.attention.backends.utils.log2_lse_to_ln`` among them, which is ``lse * math.log(2)``.
A conversion applied to the other base is an error at its own call site. Anything else yields an
untagged tensor: the trace never guesses that a sum or a difference is still an LSE.

Writes are followed as writes into memory (:meth:`~attn_contracts.tracing.tags.TagMap.write`):
``buf[k] = x``, ``dest.copy_(x)``, ``lse.mul_(ln 2)``, ``lse[:] = lse * ln 2`` and the in-place
clamps and fills relabel the region they write, for every view of it; the version counter read
just before the op tells a change the trace saw from one it did not. The handler never raises
for its own failure: the engine's call has run, and the trouble is a note.

Torch runs a mode's handler with the mode popped, so what a function called from it does is not
seen. For torch custom ops (``torch.ops.ns.op``: vLLM's attention runs inside one, an opaque
``unified_attention_with_output``) the handler calls the op through the dispatcher with the
mode pushed again, so the views and conversions inside are followed. While a wrapped producer
or consumer runs, the mode passes everything through: a kernel's own arithmetic is not the
engine's plumbing. While Dynamo traces (``torch.compile``), it passes everything through too,
so a compiled graph is the graph it would be without the trace.

torch is imported when :func:`mode_class` is first called, never at module level.
"""

from __future__ import annotations

import math
import time
import types
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import replace
from typing import Any
from typing import Protocol

from attn_contracts.findings import Location
from attn_contracts.lse_ops import LSE_OPS
from attn_contracts.records import LN2
from attn_contracts.records import LOG2E
from attn_contracts.tracing.tags import UNIT
from attn_contracts.tracing.tags import UNKNOWN
from attn_contracts.tracing.tags import Tag
from attn_contracts.tracing.tags import expand_axes
from attn_contracts.tracing.tags import index_axes
from attn_contracts.tracing.tags import permute_axes
from attn_contracts.tracing.tags import reduce_axes
from attn_contracts.tracing.tags import reshape_axes
from attn_contracts.tracing.tags import stack_axes
from attn_contracts.tracing.tags import transpose_axes
from attn_contracts.tracing.tags import union

__all__ = ["LN2", "LOG2E", "Follower", "conversion_of", "mode_class"]


# the base-keeping ops are the table the linter reads too (attn_contracts.lse_ops); the two
# conversions are the trace's own (a factor that is neither ln 2 nor log2 e drops the tag)
_MUL = ("mul", "multiply", "mul_", "multiply_", "__mul__", "__rmul__", "__imul__")
_DIV = ("div", "divide", "true_divide", "div_", "divide_", "true_divide_", "__truediv__",
        "__itruediv__")
_IN_PLACE_CONVERSIONS = frozenset({"mul_", "multiply_", "__imul__", "div_", "divide_",
                                   "true_divide_", "__itruediv__"})
#: in-place ops that change a tensor's shape or strides, not its memory
_METADATA_KINDS = frozenset({"reshape", "transpose", "reverse", "mt", "permute", "movedim"})


@dataclass(frozen=True)
class Rule:
    """What the mode does with one torch function: ``kind`` (an ``lse_ops`` axes kind, or
    ``mul``/``div``), whether it writes into its first argument, and the one base it keeps
    (None: any)."""

    kind: str
    writes: bool = False
    only_base: str | None = None


def conversion_of(factor: float) -> tuple[str, str, str] | None:
    """``(from, to, how)`` for a factor that converts an LSE's base: × ln 2 is base 2 → e,
    × log2 e is e → 2 (a division by one is a multiplication by the other)."""
    if math.isclose(factor, LN2, rel_tol=1e-6):
        return ("2", "e", "× ln 2")
    if math.isclose(factor, LOG2E, rel_tol=1e-6):
        return ("e", "2", "× log2 e")
    return None


class Follower(Protocol):
    """What the mode reads and counts on its trace (:class:`~attn_contracts.tracing.Trace`)."""

    tags: Any
    torch_calls: int
    python_calls: int
    followed: int
    overhead_ns: int

    def following(self) -> bool: ...

    def site_of_torch_call(self) -> Location: ...

    def converted(self, tag: Tag, conv: tuple[str, str, str], site: Location) -> Tag: ...

    def trouble(self, where: str, err: Exception) -> None: ...


def _rules() -> dict[Any, Rule]:
    """torch function object → rule, for every spelling torch hands a mode (the ``Tensor``
    method, the ``torch.*`` function, a property's ``__get__``) of every entry of the table."""
    import torch

    table: dict[Any, Rule] = {}

    def add(obj: Any, rule: Rule) -> None:
        if isinstance(obj, property) or type(obj).__name__ == "getset_descriptor":
            obj = obj.__get__
        if obj is not None and not isinstance(obj, torch.dtype):
            table[obj] = rule

    for op in LSE_OPS:
        rule = Rule(op.axes, writes=op.in_place or op.axes in ("copy", "setitem"),
                    only_base=op.only_base)
        if op.method or op.attribute:
            add(getattr(torch.Tensor, op.name, None), rule)
        if op.function:
            add(getattr(torch, op.name, None), rule)
    for kind, names in (("mul", _MUL), ("div", _DIV)):
        for name in names:
            rule = Rule(kind, writes=name in _IN_PLACE_CONVERSIONS)
            add(getattr(torch.Tensor, name, None), rule)
            if not name.startswith("_"):
                add(getattr(torch, name, None), rule)
    return table


def _dims(args: Sequence[Any], kwargs: dict[str, Any], names: tuple[str, ...],
          start: int = 1) -> list[Any]:
    given = list(args[start:start + len(names)])
    for name in names[len(given):]:
        if name in kwargs:
            given.append(kwargs[name])
    return given


def _out_axes(kind: str, tag: Tag, src: Any, args: Sequence[Any], kwargs: dict[str, Any],
              out: Any) -> tuple[str, ...] | None:
    """The result's axes for one tagged input (None: the result is not followed)."""
    rule = _AXES_RULES.get(kind)
    return None if rule is None else rule(tag.axes, src, args, kwargs, out)


#: the result's axes from the input's, for one kind of op: (axes, input, args, kwargs, result)
_AxesRule = Callable[[tuple[str, ...], Any, Sequence[Any], dict[str, Any], Any],
                     tuple[str, ...] | None]


def _reduce(axes: tuple[str, ...], src: Any, args: Sequence[Any], kwargs: dict[str, Any],
            out: Any) -> tuple[str, ...] | None:
    d = _dims(args, kwargs, ("dim", "keepdim"))
    return reduce_axes(axes, d[0] if d else None, bool(d[1]) if len(d) > 1 else False)


def _transpose(axes: tuple[str, ...], src: Any, args: Sequence[Any], kwargs: dict[str, Any],
               out: Any) -> tuple[str, ...] | None:
    d = _dims(args, kwargs, ("dim0", "dim1"))
    return transpose_axes(axes, int(d[0]), int(d[1])) if len(d) == 2 else None


def _permute(axes: tuple[str, ...], src: Any, args: Sequence[Any], kwargs: dict[str, Any],
             out: Any) -> tuple[str, ...] | None:
    dims = args[1:] if len(args) > 2 or (len(args) == 2 and isinstance(args[1], int)) \
        else (args[1] if len(args) == 2 else kwargs.get("dims", ()))
    return permute_axes(axes, [int(x) for x in dims])


def _movedim(axes: tuple[str, ...], src: Any, args: Sequence[Any], kwargs: dict[str, Any],
             out: Any) -> tuple[str, ...] | None:
    d = _dims(args, kwargs, ("source", "destination"))
    if len(d) != 2:
        return None
    n = len(axes)
    srcs = [d[0]] if isinstance(d[0], int) else list(d[0])
    dsts = [d[1]] if isinstance(d[1], int) else list(d[1])
    order = [i for i in range(n) if i not in {s % n for s in srcs}]
    for s, t in sorted(zip((x % n for x in srcs), (y % n for y in dsts), strict=True),
                       key=lambda p: p[1]):
        order.insert(t, s)
    return permute_axes(axes, order)


def _select(axes: tuple[str, ...], src: Any, args: Sequence[Any], kwargs: dict[str, Any],
            out: Any) -> tuple[str, ...] | None:
    d = _dims(args, kwargs, ("dim",))
    if not d:
        return None
    at = int(d[0]) % len(axes)
    return axes[:at] + axes[at + 1:]


def _index(axes: tuple[str, ...], src: Any, args: Sequence[Any], kwargs: dict[str, Any],
           out: Any) -> tuple[str, ...] | None:
    found = index_axes(axes, args[1] if len(args) > 1 else None)
    if found is None and out.dim() == src.dim():  # rows picked by a tensor: same axes
        return axes
    return found


#: one rule per axes kind of op (:mod:`attn_contracts.lse_ops`); a kind
#: without a rule leaves its result unfollowed
_AXES_RULES: dict[str, _AxesRule] = {
    "same": lambda axes, src, args, kwargs, out: axes,
    "expand": lambda axes, src, args, kwargs, out: expand_axes(
        axes, tuple(src.shape), tuple(out.shape)),
    "opaque": lambda axes, src, args, kwargs, out: (UNKNOWN,) * int(out.dim()),
    "reduce": _reduce,
    "reshape": lambda axes, src, args, kwargs, out: reshape_axes(
        axes, tuple(src.shape), tuple(out.shape)),
    "transpose": _transpose,
    "permute": _permute,
    "movedim": _movedim,
    "reverse": lambda axes, src, args, kwargs, out: tuple(reversed(axes)),
    "mt": lambda axes, src, args, kwargs, out: transpose_axes(axes, -2, -1)
    if len(axes) >= 2 else None,
    "select": _select,
    "index": _index,
}


def _version(tensor: Any) -> int | None:
    try:
        return int(tensor._version)
    except (RuntimeError, AttributeError, TypeError):
        return None


def mode_class() -> type:
    """The mode class (built once: it subclasses torch's, so torch is imported here)."""
    global _MODE
    if _MODE is not None:
        return _MODE
    import torch
    from torch.overrides import TorchFunctionMode

    rules = _rules()
    is_compiling = torch.compiler.is_compiling
    op_types = (torch._ops.OpOverload, torch._ops.OpOverloadPacket)
    call_boxed = getattr(torch._C, "_dispatch_call_boxed", None)
    tensor = torch.Tensor
    quiet = torch._C.DisableTorchFunction
    clock = time.perf_counter_ns
    python_function = types.FunctionType

    class LseMode(TorchFunctionMode):
        """Follows tagged LSEs through torch calls for one :class:`Trace`."""

        def __init__(self, trace: Follower) -> None:
            super().__init__()
            self.trace = trace

        def __torch_function__(self, func: Any, types: Any, args: Sequence[Any] = (),
                               kwargs: dict[str, Any] | None = None) -> Any:
            t0 = clock()
            kwargs = kwargs or {}
            trace = self.trace
            if is_compiling():  # Dynamo traces this call: the graph is the plain one
                return func(*args, **kwargs)
            trace.torch_calls += 1
            if type(func) is python_function:  # torch's override path ran in Python for it
                trace.python_calls += 1
            if not trace.following():
                trace.overhead_ns += clock() - t0
                return func(*args, **kwargs)
            rule = rules.get(func)
            if rule is None:
                if isinstance(func, op_types) and call_boxed is not None:
                    op = func if isinstance(func, torch._ops.OpOverload) else _only_overload(func)
                    if op is not None:
                        t1 = t2 = clock()
                        try:
                            with self:  # what the op's Python kernel does is followed too
                                t1 = clock()
                                try:
                                    return call_boxed(op._handle, *args, **kwargs)
                                finally:
                                    t2 = clock()
                        finally:  # pushing and popping the mode again is the trace's cost
                            trace.overhead_ns += (t1 - t0) + (clock() - t2)
                trace.overhead_ns += clock() - t0
                return func(*args, **kwargs)
            before = _version(args[0]) if rule.writes and args and \
                isinstance(args[0], tensor) else None
            t1 = clock()
            out = func(*args, **kwargs)
            t2 = clock()
            try:
                self._follow(rule, args, kwargs, out, before)
            except Exception as err:  # a guest: the engine's call has run; the tag is lost
                trace.trouble(f"following {getattr(func, '__name__', func)}", err)
            finally:
                trace.overhead_ns += (t1 - t0) + (clock() - t2)
            return out

        def _follow(self, rule: Rule, args: Sequence[Any], kwargs: dict[str, Any],
                    out: Any, before: int | None) -> None:
            kind = rule.kind
            tags = self.trace.tags
            if kind in ("stack", "cat"):
                seq = args[0] if args else kwargs.get("tensors", ())
                dim = args[1] if len(args) > 1 else kwargs.get("dim", 0)
                self._combine(kind, list(seq), int(dim), out)
                return
            if kind == "where":
                if len(args) >= 3:
                    self._pick(args[1], args[2], out, rule.only_base)
                return
            if kind == "pick":
                if len(args) >= 2:
                    self._pick(args[0], args[1], out, rule.only_base)
                return
            if kind == "copy":
                if len(args) >= 2 and isinstance(args[0], tensor):
                    self._copy(args[0], args[1], before)
                return
            if kind == "setitem":
                if len(args) >= 3 and isinstance(args[0], tensor):
                    self._setitem(args[0], args[1], args[2], before)
                return
            src = args[0] if args else None
            if not isinstance(src, tensor):
                if kind == "mul" and len(args) > 1 and isinstance(args[1], tensor):
                    src, args = args[1], (args[1], args[0])  # 0.69 * lse
                else:
                    return
            tag = tags.get(src, now=before if rule.writes else None)
            if tag is None:
                if rule.writes and out is src:  # an in-place change of unknown values
                    tags.write(src, None, before)
                return
            if kind in ("mul", "div"):
                self._convert(kind, tag, src, args, out, before if rule.writes else None)
                return
            if rule.only_base is not None and tag.bases != (rule.only_base,):
                return  # logsumexp of base-2 LSEs: no LSE of either base
            if kind in ("parts", "unbind"):
                if not isinstance(out, (tuple, list)):
                    return
                axes = tag.axes
                if kind == "unbind":
                    d = _dims(args, kwargs, ("dim",))
                    at = int(d[0]) % len(axes) if d else 0
                    axes = axes[:at] + axes[at + 1:]
                for piece in out:
                    self._tag(piece, replace(tag, axes=axes))
                return
            if not isinstance(out, tensor) or not out.is_floating_point():
                return
            try:
                axes = _out_axes(kind, tag, src, args, kwargs, out)
            except (TypeError, ValueError, IndexError, ZeroDivisionError):
                axes = (UNKNOWN,) * out.dim()
            if axes is None:
                return
            if len(axes) != out.dim():
                axes = (UNKNOWN,) * out.dim()
            if UNKNOWN in axes and out is not src and out._base is not None:
                # a view of a buffer written region by region: the region's own write may
                # say more than the whole buffer's merged tag
                found = tags.get(out)
                if found is not None and UNKNOWN not in found.axes:
                    self._tag(out, found)
                    return
            if rule.writes and out is src and kind not in _METADATA_KINDS:
                tags.write(out, replace(tag, axes=axes), before)  # clamp_, masked_fill_
                self.trace.followed += 1
                return
            self._tag(out, replace(tag, axes=axes))

        def _tag(self, out: Any, tag: Tag) -> None:
            if isinstance(out, tensor):
                self.trace.tags[out] = tag
                self.trace.followed += 1

        def _combine(self, kind: str, seq: list[Any], dim: int, out: Any) -> None:
            tags = self.trace.tags
            found = [tags.get(t) for t in seq if isinstance(t, tensor)]
            tagged = [t for t in found if t is not None]
            if not tagged or not isinstance(out, tensor):
                return
            axes = tagged[0].axes if all(t.axes == tagged[0].axes for t in tagged) and \
                len(tagged) == len(found) else (UNKNOWN,) * (out.dim() - (kind == "stack"))
            new_axes = stack_axes(axes, dim) if kind == "stack" else axes
            if len(new_axes) != out.dim():
                new_axes = (UNKNOWN,) * out.dim()
            self._tag(out, union(tagged, new_axes))

        def _pick(self, x: Any, y: Any, out: Any, only: str | None) -> None:
            """``torch.where(c, x, y)``, ``torch.maximum(x, y)``: each value from x or y (a
            constant or an untagged side, ``-inf`` rows, is taken as empty in every base)."""
            tags = self.trace.tags
            tx = tags.get(x) if isinstance(x, tensor) else None
            ty = tags.get(y) if isinstance(y, tensor) else None
            picked = tx or ty
            if picked is None or (tx is not None and ty is not None and tx.bases != ty.bases):
                return
            if only is not None and (picked.bases != (only,) or tx is None or ty is None):
                return  # logaddexp of two base-e LSEs only
            if isinstance(out, tensor) and out.dim() == len(picked.axes):
                self._tag(out, picked)

        def _copy(self, dest: Any, src: Any, before: int | None) -> None:
            tags = self.trace.tags
            tag = tags.get(src) if isinstance(src, tensor) else None
            if tag is None:
                tags.write(dest, None, before)  # the buffer now holds something else
                return
            self.trace.followed += 1
            tags.write(dest, replace(tag, axes=_fit(tag.axes, src, dest)), before)

        def _setitem(self, dest: Any, key: Any, value: Any, before: int | None) -> None:
            """``dest[key] = value``: the region now holds value's values (a scalar keeps
            whatever the region held: -inf is empty in every base)."""
            tags = self.trace.tags
            if not isinstance(value, tensor):
                tags.refresh(dest)
                return
            tag = tags.get(value)
            basic = index_axes((UNKNOWN,) * dest.dim(), key) is not None
            if not basic:  # a mask or index tensor: some of dest, which the trace cannot say
                tags.write(dest, replace(tag, axes=(UNKNOWN,) * dest.dim())
                           if tag is not None else None, before, partial=True)
                return
            with quiet():
                region = dest[key]
            if tag is not None:
                tag = replace(tag, axes=_fit(tag.axes, value, region))
                self.trace.followed += 1
            tags.write(region, tag, before)
            if tag is not None and region.dim() + 1 == dest.dim() and \
                    tuple(dest.shape[1:]) == tuple(region.shape) and dest._base is None:
                # dest[i] = lse: a buffer of states, the leading axis N (as a stack makes it)
                whole = tags.get(dest)
                if whole is not None:
                    tags[dest] = replace(whole, axes=("N", *tag.axes)) \
                        if dest.shape[0] > 1 else replace(whole, axes=(UNIT, *tag.axes))

        def _convert(self, kind: str, tag: Tag, src: Any, args: Sequence[Any], out: Any,
                     before: int | None) -> None:
            other = args[1] if len(args) > 1 else None
            tags = self.trace.tags
            in_place = out is src
            if isinstance(other, bool) or not isinstance(other, (int, float)) or other == 0:
                if in_place:  # scaled in place by something else: no longer an LSE we know
                    tags.write(src, None, before)
                return
            factor = float(other) if kind == "mul" else 1.0 / float(other)
            conv = conversion_of(factor)
            if conv is None:
                if in_place:
                    tags.write(src, None, before)
                return
            site = self.trace.site_of_torch_call()
            new = self.trace.converted(tag, conv, site)
            if in_place:  # lse.mul_(ln 2): the memory is base e now, for every view of it
                tags.write(src, new, before)
                self.trace.followed += 1
            elif isinstance(out, tensor):
                self._tag(out, new)

    _MODE = LseMode
    return _MODE


def _fit(axes: tuple[str, ...], src: Any, dest: Any) -> tuple[str, ...]:
    """The axes of ``src``'s values once written into ``dest`` (same shape: the same axes; a
    broadcast: :func:`expand_axes`; the same count in another shape: a reshape)."""
    old, new = tuple(src.shape), tuple(dest.shape)
    if old == new:
        return axes
    if len(new) >= len(old) and all(o in (1, n) for o, n in zip(old, new[len(new) - len(old):],
                                                                  strict=True)):
        return expand_axes(axes, old, new)
    return reshape_axes(axes, old, new)


_MODE: type | None = None


def _only_overload(packet: Any) -> Any:
    """The overload a packet call resolves to when it has just one (None: let torch pick)."""
    try:
        names = packet.overloads()
    except (AttributeError, RuntimeError):
        return None
    return getattr(packet, names[0], None) if len(names) == 1 else None

