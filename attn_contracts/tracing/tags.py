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
from dataclasses import dataclass
from dataclasses import replace
from typing import Any

from attn_contracts.findings import Location

__all__ = ["Origin", "Tag", "TagMap", "axes_for", "expand_axes", "index_axes", "permute_axes",
           "reduce_axes", "reshape_axes", "stack_axes", "transpose_axes", "union"]

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
    site: Location
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


def _version(tensor: Any) -> int | None:
    """The tensor's version counter (bumped by every in-place write into its memory, through any
    view); None where torch keeps none (an inference-mode tensor)."""
    try:
        return int(tensor._version)
    except (RuntimeError, AttributeError, TypeError):
        return None


def _root(tensor: Any) -> Any:
    """The tensor that owns the memory a view reads (``_base``: torch points every view, a view of
    a view too, at the one tensor it was cut from)."""
    base = getattr(tensor, "_base", None)
    return tensor if base is None else base


def _span(tensor: Any) -> tuple[int, int]:
    """``[lo, hi)``: the elements of the root's memory a tensor reaches (its first and one past its
    last, in storage elements)."""
    lo = int(tensor.storage_offset())
    sizes, strides = tuple(tensor.shape), tuple(tensor.stride())
    if 0 in sizes:
        return lo, lo
    return lo, lo + 1 + sum((n - 1) * abs(st) for n, st in zip(sizes, strides, strict=True))


def _geometry(tensor: Any) -> tuple[Any, ...]:
    return tuple(tensor.shape), tuple(tensor.stride()), int(tensor.storage_offset())


def union(tags: Sequence[Tag], axes: tuple[str, ...]) -> Tag:
    """One tag for values that came from several tags (a buffer written by two producers, a
    stack): every base (none where one is unknown), every origin, every conversion."""
    bases = () if any(not t.bases for t in tags) else \
        tuple(sorted({b for t in tags for b in t.bases}))
    return Tag(bases, axes, tuple(dict.fromkeys(o for t in tags for o in t.origins)),
               tuple(dict.fromkeys(c for t in tags for c in t.conversions)))


@dataclass
class _Write:
    """A write the trace saw into a root's memory: its span, the written view's geometry, the tag
    of the values written (None: values the trace knows nothing of), its sequence number, and
    whether the span is an upper bound (a masked or indexed write reaches only some of it)."""

    lo: int
    hi: int
    geometry: tuple[Any, ...]
    tag: Tag | None
    seq: int
    partial: bool


class _Entry:
    """One tensor's record: its own tag (None: none of its own), when it was set, and, for a
    tensor other tensors are views of, what the trace knows of its memory: the version counter
    after the last change it saw, the sequence number before which its views' tags are stale (the
    memory changed where the trace could not see), and the writes it saw since."""

    __slots__ = ("floor", "known", "ref", "seq", "tag", "writes")

    def __init__(self, ref: weakref.ref[Any]) -> None:
        self.ref = ref
        self.tag: Tag | None = None
        self.seq = 0
        self.known: int | None = None
        self.floor = 0
        self.writes: list[_Write] = []


#: seen writes kept per root; past it the oldest go (their spans then read as the views' own tags)
_MAX_WRITES = 256


class TagMap:
    """Tags by tensor identity, holding no tensor: a dict keyed by ``id()`` with a weak reference
    beside each tag; an entry goes when its tensor dies (the reference's callback), and an id
    reused by a new tensor is told apart by the reference. A lookup that misses, which is what
    almost every torch call the mode sees does, is one dict probe and one attribute read
    (``torch.utils.weak.WeakTensorKeyDictionary`` builds a reference object per lookup: ten times
    the cost).

    A tag describes memory, not an object: :meth:`write` records what a copy, a ``buf[k] = x`` or
    an in-place conversion put where, on the root tensor that owns the memory, and :meth:`get`
    reads a tensor's tag as its own tag overlaid by every later write that reaches its span (a
    view cut before the write sees it; a buffer written by two producers carries both). Where
    torch keeps a version counter, a change the trace did not see (an ``add_``, a kernel writing
    in place) makes every older tag of that memory stale: :meth:`get` then answers None (not
    checked), never the old base."""

    def __init__(self) -> None:
        self._d: dict[int, _Entry] = {}
        self._seq = 0

    def _entry(self, tensor: object) -> _Entry | None:
        entry = self._d.get(id(tensor))
        if entry is None or entry.ref() is not tensor:
            return None
        return entry

    def _ensure(self, tensor: object) -> _Entry:
        entry = self._entry(tensor)
        if entry is not None:
            return entry
        key = id(tensor)
        table = self._d

        def gone(ref: weakref.ref[Any], key: int = key) -> None:
            current = table.get(key)
            if current is not None and current.ref is ref:
                del table[key]

        entry = table[key] = _Entry(weakref.ref(tensor, gone))
        return entry

    def _sync(self, root: object, before: int | None = None) -> _Entry:
        """The root's entry, its known version brought up to date: a version that moved since the
        last change the trace saw (``before``: the version just before the change it is seeing)
        makes everything older stale."""
        r = self._ensure(root)
        seen = _version(root) if before is None else before
        if r.known is not None and seen is not None and seen != r.known:
            r.floor = self._seq + 1  # the change about to be recorded is the first fresh one
            r.writes = []
        r.known = _version(root)
        return r

    def get(self, tensor: object, default: Tag | None = None, *,
            now: int | None = None) -> Tag | None:
        """The tag of the values ``tensor`` reads now (``default``: none the trace can vouch
        for); ``now``: the version to judge by (an in-place op's, read just before it ran)."""
        entry = self._entry(tensor)
        base = getattr(tensor, "_base", None)
        if entry is None and base is None:
            return default  # the common miss: a tensor of its own, never tagged
        found = self._read(tensor, entry, base, now)
        return found if found is not None else default

    def _read(self, tensor: object, entry: _Entry | None, base: object,
              now: int | None) -> Tag | None:
        """:meth:`get` past its common miss (``entry``: the tensor's own, ``base``: the tensor
        it views, if any); None where the trace cannot vouch for a tag."""
        root = tensor if base is None else base
        r = entry if base is None else self._entry(root)
        if _changed_unseen(r, root, now):
            return None
        floor = r.floor if r is not None else 0
        own = entry.tag if entry is not None and entry.seq >= floor else None
        if r is None or not r.writes:
            return own
        since = entry.seq if own is not None and entry is not None else -1
        newer = [w for w in r.writes if w.seq > since]
        if not newer:
            return own
        lo, hi = _span(tensor)
        hits = [w for w in newer if w.lo < hi and lo < w.hi]
        return _overlapped(tensor, hits, own, lo, hi) if hits else own

    def __getitem__(self, tensor: object) -> Tag:
        found = self.get(tensor)
        if found is None:
            raise KeyError("no tag for this tensor")
        return found

    def __contains__(self, tensor: object) -> bool:
        return self.get(tensor) is not None

    def __setitem__(self, tensor: object, tag: Tag) -> None:
        """Tag a tensor whose values the trace just saw made (a producer's LSE, a view of a
        tagged one)."""
        self._sync(_root(tensor))
        self._seq += 1
        entry = self._ensure(tensor)
        entry.tag, entry.seq = tag, self._seq

    def write(self, dest: object, tag: Tag | None, before: int | None, *,
              partial: bool = False) -> None:
        """``dest``'s memory now holds values tagged ``tag`` (None: values the trace knows
        nothing of); ``before``: its version just before the write; ``partial``: only some of
        ``dest``'s elements were written (a mask, an index tensor)."""
        root = _root(dest)
        r = self._sync(root, before)
        self._seq += 1
        lo, hi = _span(dest)
        if not partial:  # what this write covers whole is gone
            r.writes = [w for w in r.writes if not (lo <= w.lo and w.hi <= hi)]
        r.writes.append(_Write(lo, hi, _geometry(dest), tag, self._seq, partial))
        del r.writes[:-_MAX_WRITES]
        r.known = _version(root)

    def produced(self, tensor: object, tag: Tag) -> None:
        """A producer just wrote ``tensor`` (its returned LSE, or the ``lse=`` buffer it filled):
        the change since the last one seen is this write, so the other regions of its memory
        keep their tags, and a view of the region cut later (or earlier) reads this one; the
        tensor itself gets the tag too."""
        r = self._ensure(_root(tensor))
        self.write(tensor, tag, r.known)
        self[tensor] = tag

    def refresh(self, dest: object) -> None:
        """A change the trace saw that keeps what every tag of ``dest``'s memory says (a constant
        written into part of it: ``-inf`` is empty in every base)."""
        r = self._ensure(_root(dest))
        r.known = _version(_root(dest))

    def pop(self, tensor: object, default: Tag | None = None) -> Tag | None:
        found = self.get(tensor)
        entry = self._entry(tensor)
        if entry is not None:
            entry.tag = None
        return default if found is None else found

    def __len__(self) -> int:
        return len(self._d)


def _covers(writes: Sequence[_Write], lo: int, hi: int) -> bool:
    """Whether the writes' spans together cover ``[lo, hi)``."""
    at = lo
    for w in sorted(writes, key=lambda w: w.lo):
        if w.lo > at:
            return False
        at = max(at, w.hi)
        if at >= hi:
            return True
    return at >= hi


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


def expand_axes(axes: tuple[str, ...], old: Sequence[int], new: Sequence[int]) -> tuple[str, ...]:
    """The axes after broadcasting shape ``old`` to ``new`` (``expand``, a copy or ``buf[k] = x``
    into a larger region): new leading axes, and axes of size 1 that grew, are unknown (a repeat
    of the same values, not an axis the LSE had)."""
    k = len(new) - len(old)
    if k < 0 or len(axes) != len(old):
        return (UNKNOWN,) * len(new)
    grown = tuple(a if o == n else (UNIT if n == 1 else UNKNOWN)
                  for a, o, n in zip(axes, old, new[k:], strict=True))
    return (*((UNKNOWN if n != 1 else UNIT) for n in new[:k]), *grown)


def reduce_axes(axes: tuple[str, ...], dims: object, keepdim: bool) -> tuple[str, ...]:
    """The axes after a reduction over ``dims`` (an int, a sequence, or None for all)."""
    n = len(axes)
    if dims is None:
        picked = set(range(n))
    elif isinstance(dims, int):
        picked = {dims % n} if n else set()
    else:
        picked = {int(d) % n for d in dims}  # type: ignore[attr-defined]
    if keepdim:
        return tuple(UNIT if i in picked else a for i, a in enumerate(axes))
    return tuple(a for i, a in enumerate(axes) if i not in picked)


def _changed_unseen(r: _Entry | None, root: object, now: int | None) -> bool:
    """The root's memory changed where the trace could not see: its version (``now``, else read
    here) is not the one the trace last knew."""
    if r is None or r.known is None:
        return False
    now = _version(root) if now is None else now
    return now is not None and now != r.known


def _overlapped(tensor: object, hits: list[_Write], own: Tag | None, lo: int, hi: int,
                ) -> Tag | None:
    """The tag of a read of ``[lo, hi)`` that later writes (``hits``) overlap: the union of what
    they wrote, and of the tensor's own tag where they do not cover the read whole; its axes
    those of the last write of the tensor's own geometry, else the own tag's, else unknown."""
    covered = _covers([w for w in hits if not w.partial], lo, hi)
    parts = [w.tag for w in hits if w.tag is not None]
    if not covered and own is not None:
        parts.append(own)
    if not parts:
        return None
    geometry = _geometry(tensor)
    same = [w for w in hits if w.geometry == geometry and w.tag is not None]
    ndim = len(geometry[0])
    if same:
        axes = same[-1].tag.axes if same[-1].tag is not None else (UNKNOWN,) * ndim
    elif own is not None:
        axes = own.axes
    else:
        axes = (UNKNOWN,) * ndim
    return parts[0] if len(parts) == 1 and parts[0].axes == axes else union(parts, axes)
