"""What the trace knows of one LSE tensor: its base, its axes, and where it came from.

A producer's record says the LSE it returns is ``[T, H]`` (``token_head``) or ``[H, T]``
(``head_token``), optionally with the token axis split into ``(B, q_len)``. The tag keeps that as
named axes, ``("T", "H")``, and every op the trace follows rewrites the names the way the op moves
the data: a transpose swaps two, a permute reorders them, a reshape groups the axes whose sizes
multiply to the same products (``[B, q, H] → [B·q, H]`` makes ``B`` and ``Q`` one ``T``), an index
drops or keeps them, a stack adds the states axis ``N``. The layout a consumer is handed is then
read off the names (:meth:`Tag.layout`) rather than guessed from shapes, so an ``[H, T]`` buffer
viewed as ``[T, H]`` (a reshape, not a transpose) stays ``head_token`` — which is what the memory
holds. Axes of size 1 may carry any name; names the trace cannot follow become ``"?"`` and the
layout is then unknown (never guessed).

Torch-free: the functions take shapes as tuples of ints.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

__all__ = ["Origin", "Tag", "TagMap", "axes_for", "index_axes", "permute_axes", "reshape_axes",
           "stack_axes", "transpose_axes"]

#: the token axis, and its two parts when a kernel keeps (batch, q_len) apart
TOKEN, BATCH, QLEN = "T", "B", "Q"
HEAD, STATES, UNIT, UNKNOWN = "H", "N", "1", "?"
_TOKENISH = frozenset({TOKEN, BATCH, QLEN})


@dataclass(frozen=True)
class Origin:
    """Where an LSE was produced: the producer records that describe the call, the function,
    the call site (``file:line``), and the base the call resolved to (None: left to dispatch,
    or records that disagree)."""

    records: tuple[str, ...]
    function: str
    site: str
    base: str | None

    def describe(self) -> str:
        return f"{self.function} at {self.site} ({', '.join(self.records)})"


@dataclass(frozen=True)
class Tag:
    """An LSE tensor's base(s) now, its axes, the producers it came from and the conversions it
    went through (``file:line (× ln 2: base 2 → e)``). ``bases`` holds one base, or several
    where tensors of different bases were stacked into one, or none where it is unknown."""

    bases: tuple[str, ...]
    axes: tuple[str, ...]
    origins: tuple[Origin, ...]
    conversions: tuple[str, ...] = ()

    @property
    def base(self) -> str | None:
        return self.bases[0] if len(self.bases) == 1 else None

    def with_axes(self, axes: Sequence[str]) -> Tag:
        return replace(self, axes=tuple(axes))

    def layout(self) -> str | None:
        """``token_head`` when every token axis comes before the head axis, ``head_token`` when
        the head axis comes first (``[B, H, q_len]`` included: the records' head_token with a
        q_len axis), None when the names do not say (no head or no token axis of size > 1
        named, or an axis the trace could not follow)."""
        named = [a for a in self.axes if a not in (UNIT, STATES)]
        if UNKNOWN in named or named.count(HEAD) != 1:
            return None
        h = named.index(HEAD)
        tokens = [i for i, a in enumerate(named) if i != h]
        if not tokens or any(named[i] not in _TOKENISH for i in tokens):
            return None
        return "token_head" if all(i < h for i in tokens) else "head_token"

    def states_axis(self) -> int | None:
        """Where the states axis ``N`` of a stack sits among the axes of size > 1 (None: no N)."""
        named = [a for a in self.axes if a != UNIT]
        return named.index(STATES) if STATES in named else None


class TagMap:
    """Tags by tensor identity, holding no tensor: a dict keyed by ``id()`` with a weak reference
    beside each tag; an entry goes when its tensor dies (the reference's callback), and an id
    reused by a new tensor is told apart by the reference. A lookup that misses, which is what
    almost every torch call the mode sees does, is one dict probe (``torch.utils.weak.
    WeakTensorKeyDictionary`` builds a reference object per lookup: ten times the cost)."""

    def __init__(self) -> None:
        self._d: dict[int, tuple[weakref.ref[Any], Tag]] = {}

    def get(self, tensor: object, default: Tag | None = None) -> Tag | None:
        entry = self._d.get(id(tensor))
        if entry is None or entry[0]() is not tensor:
            return default
        return entry[1]

    def __getitem__(self, tensor: object) -> Tag:
        found = self.get(tensor)
        if found is None:
            raise KeyError("no tag for this tensor")
        return found

    def __contains__(self, tensor: object) -> bool:
        return self.get(tensor) is not None

    def __setitem__(self, tensor: object, tag: Tag) -> None:
        key = id(tensor)
        entry = self._d.get(key)
        if entry is not None and entry[0]() is tensor:
            self._d[key] = (entry[0], tag)
            return
        table = self._d

        def gone(ref: weakref.ref[Any], key: int = key) -> None:
            current = table.get(key)
            if current is not None and current[0] is ref:
                del table[key]

        table[key] = (weakref.ref(tensor, gone), tag)

    def pop(self, tensor: object, default: Tag | None = None) -> Tag | None:
        found = self.get(tensor)
        if found is None:
            return default
        del self._d[id(tensor)]
        return found

    def __len__(self) -> int:
        return len(self._d)


def axes_for(layout: str, q_len_axis: bool, ndim: int) -> tuple[str, ...]:
    """The axes a producer's record describes, fitted to the tensor it returned (a record's
    ``[T, H]`` on a 3-D tensor is not what the record says: every axis is then unknown)."""
    if layout == "token_head":
        axes = (BATCH, QLEN, HEAD) if q_len_axis else (TOKEN, HEAD)
    else:
        axes = (BATCH, HEAD, QLEN) if q_len_axis else (HEAD, TOKEN)
    return axes if len(axes) == ndim else (UNKNOWN,) * ndim


def transpose_axes(axes: tuple[str, ...], d0: int, d1: int) -> tuple[str, ...]:
    n = len(axes)
    a, b = d0 % n, d1 % n
    out = list(axes)
    out[a], out[b] = out[b], out[a]
    return tuple(out)


def permute_axes(axes: tuple[str, ...], dims: Sequence[int]) -> tuple[str, ...]:
    n = len(axes)
    if len(dims) != n:
        return (UNKNOWN,) * len(dims)
    return tuple(axes[d % n] for d in dims)


def _merged(names: list[str]) -> str:
    """The name of axes flattened into one: ``B, Q`` → ``T``; ``X.0, X.1`` → ``X``; else
    unknown."""
    if len(names) == 1:
        return names[0]
    if names == [BATCH, QLEN]:
        return TOKEN
    stem = names[0].rsplit(".", 1)[0]
    if all(n == f"{stem}.{i}" for i, n in enumerate(names)):
        return stem
    return UNKNOWN


def _split(name: str, parts: int) -> list[str]:
    """The names of one axis split in ``parts``: tokens in two are ``(B, Q)``, others numbered."""
    if name == TOKEN and parts == 2:
        return [BATCH, QLEN]
    if name == UNKNOWN:
        return [UNKNOWN] * parts
    return [f"{name}.{i}" for i in range(parts)]


def reshape_axes(axes: tuple[str, ...], old: Sequence[int], new: Sequence[int]) -> tuple[str, ...]:
    """The axes after a view/reshape/flatten/unflatten/squeeze/unsqueeze from shape ``old`` to
    ``new``: groups of axes whose sizes multiply to the same product correspond (the memory
    order is kept, so a group keeps its names, merged or split); axes of size 1 are dropped
    and added freely."""
    if len(axes) != len(old) or 0 in old or 0 in new:
        return (UNKNOWN,) * len(new)
    src = [(a, s) for a, s in zip(axes, old, strict=True) if s != 1]
    dst = [s for s in new if s != 1]
    names: list[str] = []
    i = j = 0
    while i < len(src) and j < len(dst):
        group, p = [src[i][0]], src[i][1]
        sizes, q = [dst[j]], dst[j]
        i, j = i + 1, j + 1
        while p != q:
            if p < q:
                if i == len(src):
                    return (UNKNOWN,) * len(new)
                group.append(src[i][0])
                p *= src[i][1]
                i += 1
            else:
                if j == len(dst):
                    return (UNKNOWN,) * len(new)
                sizes.append(dst[j])
                q *= dst[j]
                j += 1
        if len(sizes) == 1:
            names.append(_merged(group))
        elif len(group) == 1:
            names += _split(group[0], len(sizes))
        else:
            names += [UNKNOWN] * len(sizes)
    if i != len(src) or j != len(dst):
        return (UNKNOWN,) * len(new)
    it = iter(names)
    return tuple(UNIT if s == 1 else next(it) for s in new)


def index_axes(axes: tuple[str, ...], key: object) -> tuple[str, ...] | None:
    """The axes after basic indexing (ints drop an axis, slices keep it, ``None`` adds one, one
    ``...``); None for an index the trace does not follow (tensors, lists, booleans)."""
    items = list(key) if isinstance(key, tuple) else [key]
    if any(not (it is None or it is Ellipsis or isinstance(it, (int, slice)))
           or isinstance(it, bool) for it in items):
        return None
    if items.count(Ellipsis) > 1:
        return None
    used = sum(1 for it in items if it is not None and it is not Ellipsis)
    if used > len(axes):
        return None
    if Ellipsis in items:
        at = items.index(Ellipsis)
        items[at:at + 1] = [slice(None)] * (len(axes) - used)
    else:
        items += [slice(None)] * (len(axes) - used)
    out: list[str] = []
    k = 0
    for it in items:
        if it is None:
            out.append(UNIT)
        elif isinstance(it, slice):
            out.append(axes[k])
            k += 1
        else:
            k += 1
    return tuple(out)


def stack_axes(axes: tuple[str, ...], dim: int) -> tuple[str, ...]:
    """A stack of tensors with these axes along a new ``dim``: the states axis ``N``."""
    n = len(axes) + 1
    at = dim % n
    return (*axes[:at], STATES, *axes[at:])
