"""The abstract values of the program model (:mod:`attn_contracts.lint.interpret`).

A value is what the linter knows about a Python value at one point of the linted program, and
every value is frozen and hashable: a function's analysis is memoised by the values of its
arguments. ``None`` is the unknown value: an unknown value is never guessed at.

The domain is a *may* domain: where two paths meet, a name holds the :class:`Union` of what each
path bound (a conditional expression over three combines is the three of them), so an LSE that
one of the paths makes wrong is still seen. The sets are small and bounded (:data:`MAX_UNION`);
past the bound a value becomes unknown, which keeps the analysis fast and never invents a finding.

What an LSE is, is a set of :class:`Source` s: where it was produced (a producer record's call,
a parameter of the function being analysed, the merged output of a combine) and the base each
source has there, after the conversions it went through.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from dataclasses import fields
from dataclasses import is_dataclass
from dataclasses import replace
from typing import Union

from attn_contracts.findings import Location
from attn_contracts.findings import location_text

__all__ = ["MAX_SOURCES", "MAX_UNION", "NOT_SPECIAL", "Arg", "Bound", "ClassKey", "ClassRef", "DictV", "Ext",
           "ExtInst", "Flag", "FlagCase", "Func", "Inst", "Lit", "Lse", "Member", "ModuleRef", "Num", "Param",
           "Partial", "Rec", "Seq", "Source", "Super", "Tup", "Union_", "Value", "alternatives",
           "children", "collapse", "join", "lse_of", "lse_sources_of", "relabel", "repr_as_text",
           "source_order", "stable_key", "widen_to"]

#: the most alternatives a value keeps; a larger union is unknown (never a finding)
MAX_UNION = 24
#: the most sources an LSE keeps apart; past it, the sources of one origin are one (their
#: messages' details, the conversions and choices along each path, are those of one of them)
MAX_SOURCES = MAX_UNION * 4

#: a class of the linted program: (module path, class name); a class outside it is an ``Ext``
ClassKey = tuple[str, str]


@dataclass(frozen=True)
class Source:
    """One place an LSE can come from, and its base there.

    ``base``: ``"e"``, ``"2"``, ``None`` (not known here) or ``"x"`` (no LSE of either base any
    more: a base-e LSE converted as if it were base 2). ``dispatch``: the kernel library picks the
    base at run time (``backend="auto"``); ``bases`` then lists what it may pick."""

    #: identity: "producer:path:line:col:record", "param:path:func:name", "merged:path:line:col"
    #: (text: a key, never read back into a place: :attr:`site` is the place)
    key: str
    base: str | None
    what: str  # for messages: "the LSE of decode_wrapper.run() (flashinfer.batch_decode, f.py:12)"
    record: str = ""  # the producer record, where one says the base
    choice: str = ""  # the run-time choice that leads to this source, for messages
    dispatch: bool = False
    bases: tuple[str, ...] = ()  # under dispatch: the bases the library may pick
    impl: ClassKey | None = None  # the LSE-declaring class whose method returned it
    param: str | None = None  # a parameter of the function under analysis (base unknown)
    layout: str | None = None  # "token_head" / "head_token" where the producer says
    converted: str = ""  # the conversions it went through, for messages
    #: a parameter's LSE: each conversion since the parameter (the base it turns the LSE
    #: into, and where), in order, so that a caller's own LSE can be put through the same
    shifts: tuple[tuple[str, Location, str], ...] = ()
    #: the arithmetic after which its base is not known (``× scale``, where): what a consumer
    #: it reaches is told is then neither confirmed nor contradicted, and the consumer warns
    unread: str = ""
    #: the call that made it (a producer's call, a combine's for its merged LSE); None for a
    #: parameter's. Its key names the same place, so it is neither compared nor shown
    site: Location | None = field(default=None, compare=False, repr=False)

    @property
    def pinned(self) -> bool:
        """A base the code fixes (not unknown, not left to dispatch)."""
        return self.base is not None and not self.dispatch


def source_order(s: Source) -> tuple[str, str]:
    """Sources in one fixed order (a set's iteration changes with ``PYTHONHASHSEED``, and two
    sources may share a key: one call's LSE with its base pinned on one path, not on another):
    by key, then by every field."""
    return s.key, repr_as_text(s)


def repr_as_text(value: object) -> str:
    """``repr(value)`` as it read when the linter kept its places as text: each
    :class:`Location` written as the repr of its text (``'path:line:col'``), a place left
    out (None) as ``''``. The fixed orders that sort by a repr (sources, the kernels a
    message names first, values by :func:`stable_key`) sort by this: a Location's own repr
    orders its numbers (line 1 before line 10) where the text did not (``a:10:1`` before
    ``a:1:5``), and the outputs are to stay byte for byte what they were."""
    if isinstance(value, Location):
        return repr(str(value))
    if is_dataclass(value) and not isinstance(value, type):
        parts = []
        for f in fields(value):
            if f.repr:
                v = getattr(value, f.name)
                place = v is None and f.type == "Location | None"  # a place left out
                parts.append(f"{f.name}={repr('') if place else repr_as_text(v)}")
        return f"{type(value).__qualname__}({', '.join(parts)})"
    if isinstance(value, tuple) and type(value) is tuple:
        inner = ", ".join(map(repr_as_text, value))
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    return repr(value)


@dataclass(frozen=True)
class Lse:
    """An LSE tensor: every source it may hold."""

    sources: frozenset[Source]

    def with_sources(self, sources: Iterable[Source]) -> Lse:
        return Lse(frozenset(sources))


@dataclass(frozen=True)
class Lit:
    """A literal the linter can see (written at ``where``, possibly through a name: ``how``).
    ``omitted``: the call that left a parameter out, so that its default is this literal."""

    value: bool | int | float | str | None
    where: Location | None = None  # where the literal is written
    how: str = field(default="", compare=False)  # " through the local variable is_e"
    omitted: Location | None = None
    #: read from a table by a key the linter cannot see (which entry applies is a dispatch)
    table: bool = field(default=False, compare=False)
    #: one of the values a module global may hold, a function rebinding it (``global``)
    rebound: bool = field(default=False, compare=False)
    #: written nowhere: the value a consumer record says its callers pass, given to the
    #: function's own body (:mod:`attn_contracts.lint.contracts`)
    assumed: bool = False


@dataclass(frozen=True)
class Param:
    """A parameter of the function being analysed on its own (its callers unknown)."""

    name: str
    func: str  # the function's name, for messages
    default: Lit | None = None  # its default, where it is a literal
    path: str = ""  # the function's file (two modules may each have a ``reduce(out, lse)``)


@dataclass(frozen=True)
class Num:
    """A constant that converts between bases: ``"ln2"`` (× turns base 2 into e) or ``"log2e"``."""

    name: str


@dataclass(frozen=True)
class Flag:
    """A read of a backend's base attribute (``self.impl.lse_base_on_e``): the base it declares,
    per class. ``owner``: the instance it was read from (``None``: not known)."""

    attr: str
    owner: Inst | None
    where: Location
    #: ``not impl.lse_base_on_e``: the other base than the one it declares
    negated: bool = False


@dataclass(frozen=True)
class FlagCase:
    """A value computed from a backend's base flag (``LseBase(impl.lse_base_on_e)``,
    ``TABLE[impl.lse_base_on_e]``): ``on_true`` for a class whose flag reads True,
    ``on_false`` for one whose flag reads False. ``flag``: the read, never negated."""

    flag: Flag
    on_true: Value
    on_false: Value


@dataclass(frozen=True)
class Inst:
    """An instance of a class of the program. ``exact``: of that class itself (built here), else
    of it or any subclass (from an annotation or ``cast``); ``ctor``: the constructor call's
    site and arguments, where known (the object's attributes follow them)."""

    cls: ClassKey
    exact: bool = True
    ctor: tuple[Location, tuple[tuple[str, Value], ...]] | None = None


#: the builtin singletons besides None, read as the one object of their type (``x is
#: NotImplemented``); both are true (``bool(NotImplemented)`` too, with a warning)
SINGLETONS = {"NotImplemented": "builtins.NotImplementedType", "Ellipsis": "builtins.ellipsis"}


@dataclass(frozen=True)
class ExtInst:
    """An instance of a class outside the program (``flashinfer.BatchDecodeWithPagedKVCacheWrapper``)."""

    qualname: str


@dataclass(frozen=True)
class ClassRef:
    """A class object (``exact=False``: ``type[X]``, any subclass)."""

    cls: ClassKey
    exact: bool = True


@dataclass(frozen=True)
class Func:
    """A function (or lambda) of the program: its file and qualified name (``Class.method``,
    ``f.<locals>.g@12``); its syntax node where already at hand (else parsed when it is
    interpreted)."""

    path: str
    qualname: str
    node: object = field(default=None, repr=False, compare=False, hash=False)
    #: the enclosing function's names it reads, with their values where it was made (a
    #: closure, a lambda): a function made with other values is another function
    closure: tuple[tuple[str, Value], ...] = ()


@dataclass(frozen=True)
class Bound:
    """A method bound to an instance (``self`` given)."""

    func: Func
    self_value: Inst
    owner: ClassKey  # the class whose body defines it (for super())
    #: ``super().m``: the method found after the caller's class, called as it is, not
    #: dispatched again to an override of a subclass the instance may be of (Python looks
    #: ``m`` up once, in ``type(self).__mro__`` past that class; not knowing ``self``'s exact
    #: class, the lint takes the MRO of the class the call is written in, so a sibling that
    #: multiple inheritance would put in between is missed)
    static: bool = False
    #: the name it was read under where that is not its own (``legacy = run`` in a class
    #: body, read as ``obj.legacy``): an instance of a subclass runs what that name finds
    #: in its MRO, not an override of ``run``
    looked_up: str = ""


@dataclass(frozen=True)
class Super:
    """``super()`` inside a method of ``after`` with ``self`` as ``self_value``."""

    after: ClassKey
    self_value: Inst


@dataclass(frozen=True)
class ModuleRef:
    name: str


@dataclass(frozen=True)
class Ext:
    """A name outside the program, by its qualified name (``flashinfer.prefill.trtllm_...``)."""

    qualname: str


@dataclass(frozen=True)
class Rec:
    """A function the records know: consumer and producer candidates of one name, not yet
    narrowed by the call's arguments."""

    name: str  # the qualified or last name it was found by
    consumers: tuple[object, ...] = ()
    producers: tuple[object, ...] = ()


@dataclass(frozen=True)
class Arg:
    """An argument as passed: its value and where it is written."""

    value: Value
    where: Location | None = None
    text: str = field(default="", compare=False)
    #: the buffers the argument is, or is a view of (``buf``, ``buf[s:e]``, ``self.buf``), each
    #: as (the frame it names a variable of, that name's expression): a kernel that writes into
    #: the argument writes them (:meth:`~attn_contracts.lint.record_calls.RecordCalls.produce`). Not
    #: compared: it says where the value lives, not what it is
    buffers: frozenset[tuple[int, ast.expr]] = field(default=frozenset(), compare=False,
                                                     hash=False)


@dataclass(frozen=True)
class Partial:
    """``functools.partial(target, *pos, **kw)``."""

    target: Value
    pos: tuple[Arg, ...] = ()
    kw: tuple[tuple[str, Arg], ...] = ()
    where: Location | None = None
    #: ``functools.partialmethod``: read from an instance, the target is bound to it first
    method: bool = False
    #: bound with a ``*``/``**`` the linter cannot read: any keyword may be bound (never
    #: "omitted"); ``maybe``: keywords a ``**dict`` may not have bound
    opaque: bool = False
    maybe: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Tup:
    items: tuple[Value, ...]
    #: a call's result whose other elements are not known (a producer's ``(out, lse)``)
    partial_items: bool = False
    #: an iterator that yields the items (a generator expression, ``filter(...)``,
    #: ``iter(t)``): always true, whatever it yields
    iterator: bool = False
    #: a list (built by a list display or comprehension): ``+=`` changes it in place; where
    #: not set, a tuple, or a list not known to be one
    mutable: bool = False
    #: items that are one value are one object (``[[]] * 2``); where not set, which items
    #: share an object is not known (two calls may give one memoised value)
    repeated: bool = False
    #: a dict's view (``d.keys()``): iterated as its items, but no sequence (no index, no
    #: sequence pattern matches it)
    view: bool = False

    def get(self, i: int) -> Value:
        if i < 0 and not self.partial_items:  # from the end, as Python indexes
            i += len(self.items)
        return self.items[i] if 0 <= i < len(self.items) else None


@dataclass(frozen=True)
class Seq:
    """A container or iterator whose positions are not known (a list appended to, a
    comprehension, a generator's yields, a set): each element may be any of ``item``."""

    item: Value
    #: every value ``item`` may be is surely an element (a set literal of literals)
    complete: bool = False
    #: an iterator (a generator, ``filter(...)``): always true, whatever it yields
    iterator: bool = False


def is_empty_set(value: Value) -> bool:
    """Whether the value is the empty set (:func:`set_of` of no element)."""
    return isinstance(value, Seq) and value.item is None and value.complete


def set_of(items: list[Value], complete: bool, iterator: bool = False) -> Seq:
    """A container whose elements are ``items`` (positions not known); ``complete``: each is
    surely an element and there is no other. ``Seq(None, complete=True)`` is the empty set,
    so a join too large to keep (``None``) is never complete."""
    item = join(items)
    return Seq(item, complete=complete and (item is not None or not items), iterator=iterator)


@dataclass(frozen=True)
class Member:
    """A member of an ``enum.Enum`` class of the program: ``.value`` is what its body assigns."""

    cls: ClassKey
    name: str
    value: Value


@dataclass(frozen=True)
class DictV:
    """A dict literal (or ``dict(...)``) and the items later stored into it. ``maybe``: keys a
    path may not have set."""

    items: tuple[tuple[str, Arg], ...]
    maybe: frozenset[str] = frozenset()
    #: what a key it lacks reads as where indexed (a ``defaultdict``'s factory called with
    #: nothing); None: not known, or a plain dict (which raises)
    missing: Value = None

    def get(self, key: str) -> Arg | None:
        return next((a for k, a in self.items if k == key), None)


@dataclass(frozen=True)
class Union_:
    """One of several values (two paths, a conditional expression, a class hierarchy).

    ``widened``: a value past the bounds of :mod:`attn_contracts.lint.bounds` (too large, or
    still changing around a loop or a call cycle): unknown, but holding every LSE it may hold
    (its options are that LSE and ``None``); whatever is read out of it is the same."""

    options: frozenset[Value]
    widened: bool = False
    #: the options in a fixed order (:func:`stable_key`), sorted when first read: what is
    #: decided by the first of them, or reported once per option, is the same under any
    #: ``PYTHONHASHSEED``
    order: tuple[Value, ...] = field(default=(), compare=False, hash=False, repr=False)

    def ordered(self) -> tuple[Value, ...]:
        if not self.order:
            object.__setattr__(self, "order", tuple(sorted(self.options, key=stable_key)))
        return self.order


Value = Union[Lse, Lit, Param, Num, Flag, FlagCase, Inst, ExtInst, ClassRef, Func, Bound, Super,  # noqa: UP007
              ModuleRef, Ext, Rec, Partial, Tup, Seq, Member, DictV, Union_, None]

#: "nothing found yet": what a call cycle's head returns to a call of itself before its first
#: pass ends. A join drops it (the paths that found something are what the value is); alone
#: it reads as unknown (no alternative a rule could judge), never as a value
NOTHING_YET = Union_(frozenset())


def alternatives(value: Value) -> Iterator[Value]:
    """The values a value may be (itself, or each option of a union)."""
    if isinstance(value, Union_):
        yield from value.ordered()
    else:
        yield value


def join(values: Iterable[Value]) -> Value:
    """The value of a name bound to ``values`` on different paths: a union of the alternatives
    (LSEs merge their sources: one tensor of either origin). Unknown on one path stays an
    alternative (``None`` in the union): what the other paths bind is still seen (a
    ``backend`` that is ``"cute-dsl"`` on one path and computed on another), and a rule that
    needs the value itself (a base keyword) treats the union as unknown."""
    flat: set[Value] = set()
    lse: set[Source] = set()
    widened = False
    pending = False  # every path so far is a cycle's "nothing found yet"
    for v in values:
        pending = pending or (isinstance(v, Union_) and not v.options)
        widened = widened or (isinstance(v, Union_) and v.widened)
        for alt in alternatives(v):
            if isinstance(alt, Lse):
                lse |= alt.sources
            else:
                flat.add(alt)
    if widened:  # unknown with an LSE absorbs the rest: what it may hold stays in sight
        return widen_to(lse_sources_of(flat) | lse)
    if lse:
        if len(lse) > MAX_SOURCES:  # the same origins by many paths: one source per origin
            lse = set(collapse(lse))
        flat.add(Lse(frozenset(lse)))
    if len(flat) > MAX_UNION:
        flat = _widen(flat)
    if not flat and pending:
        return NOTHING_YET  # still nothing: a later pass of the cycle finds what it is
    if not flat or flat == {None} or len(flat) > MAX_UNION:
        return None
    if len(flat) == 1:
        return next(iter(flat))
    return Union_(frozenset(flat))


def _widen(flat: set[Value]) -> set[Value]:
    """Too many alternatives (a method of 55 subclasses): tuples of one length become one tuple
    of their items' joins, so the LSE the 55 return stays in sight; the rest is unknown."""
    tuples: dict[int, list[Tup]] = {}
    out: set[Value] = set()
    seqs = [v.item for v in flat if isinstance(v, Seq)]
    if seqs:
        out.add(Seq(join(seqs)))
    for v in flat:
        if isinstance(v, Tup):
            tuples.setdefault(len(v.items), []).append(v)
        elif isinstance(v, Seq):
            continue
        elif isinstance(v, Lse):
            out.add(v)
        else:
            out.add(None)
    for n, group in tuples.items():
        out.add(Tup(tuple(join([t.items[i] for t in group]) for i in range(n)),
                    any(t.partial_items for t in group)))
    return out


def lse_of(value: Value) -> Lse | None:
    """The LSE a value is (the LSE alternatives of a union), or None."""
    found = [v for v in alternatives(value) if isinstance(v, Lse)]
    if not found:
        return None
    return found[0] if len(found) == 1 else Lse(frozenset(s for v in found for s in v.sources))


def relabel(lse: Lse, **changes: object) -> Lse:
    """Every source of ``lse`` with ``changes`` applied (dataclasses.replace)."""
    return Lse(frozenset(replace(s, **changes) for s in lse.sources))  # type: ignore[arg-type]


def lse_sources_of(values: Iterable[Value]) -> set[Source]:
    """Every source of every LSE anywhere in ``values`` (tuple items, union options, dict
    values, arguments kept by a partial or a constructor), each shared part read once."""
    out: set[Source] = set()
    seen: set[int] = set()
    stack = list(values)
    while stack:
        v = stack.pop()
        if v is None or id(v) in seen:
            continue
        seen.add(id(v))
        if isinstance(v, Lse):
            out |= v.sources
        else:
            stack.extend(children(v))
    return out


def children(v: Value) -> Iterator[Value]:
    """The values a value holds (for its size, its LSEs and its order)."""
    if isinstance(v, Tup):
        yield from v.items
    elif isinstance(v, Union_):
        yield from v.options
    elif isinstance(v, DictV):
        yield from (a.value for _, a in v.items)
    elif isinstance(v, Partial):
        yield v.target
        yield from (a.value for a in v.pos)
        yield from (a.value for _, a in v.kw)
    elif isinstance(v, Inst) and v.ctor is not None:
        yield from (x for _, x in v.ctor[1])
    elif isinstance(v, (Bound, Super)):
        yield v.self_value
    elif isinstance(v, Flag) and v.owner is not None:
        yield v.owner
    elif isinstance(v, FlagCase):
        yield from (v.flag, v.on_true, v.on_false)
    elif isinstance(v, Seq):
        yield v.item
    elif isinstance(v, Member):
        yield v.value
    elif isinstance(v, Func):
        yield from (x for _, x in v.closure)


def widen_to(sources: Iterable[Source]) -> Value:
    """Unknown, holding an LSE of ``sources`` (one per origin: :func:`collapse`, so widening
    again what a loop or a cycle changed gives the same value), or nothing."""
    found = frozenset(collapse(sources))
    if not found:
        return None
    return Union_(frozenset({Lse(found), None}), widened=True)


def collapse(sources: Iterable[Source]) -> list[Source]:
    """One source per origin (its key, base, record, dispatch, class, parameter and layout):
    of several that differ only in what their messages say, the one first in a fixed order."""
    best: dict[tuple[object, ...], Source] = {}
    for s in sources:
        ident = (s.key, s.base, s.record, s.dispatch, s.bases, s.impl, s.param, s.layout,
                 s.shifts)
        kept = best.get(ident)
        if kept is None or _source_key(s) < _source_key(kept):
            best[ident] = s
    return list(best.values())


def _source_key(s: Source) -> tuple[int, str]:
    return len(s.converted) + len(s.choice), repr_as_text(s)


def stable_key(value: Value) -> str:
    """A text that orders values the same way in every run (a set's iteration order changes
    with ``PYTHONHASHSEED``; this does not): the value's type and fields, sets sorted."""
    if value is None:
        return "0"
    if isinstance(value, Lse):
        return "Lse(" + ",".join(sorted(repr_as_text(s) for s in value.sources)) + ")"
    if isinstance(value, Union_):
        return f"Union({value.widened}," + ",".join(sorted(map(stable_key, value.options))) + ")"
    if isinstance(value, Tup):
        return f"Tup({value.partial_items}," + ",".join(map(stable_key, value.items)) + ")"
    if isinstance(value, DictV):
        return ("DictV(" + ",".join(f"{k}={stable_key(a.value)}@{location_text(a.where)}"
                                    for k, a in value.items)
                + "|" + ",".join(sorted(value.maybe)) + "|" + stable_key(value.missing) + ")")
    if isinstance(value, Partial):
        return (f"Partial({stable_key(value.target)},"
                + ",".join(f"{stable_key(a.value)}@{location_text(a.where)}" for a in value.pos)
                + ";" + ",".join(f"{k}={stable_key(a.value)}@{location_text(a.where)}"
                                 for k, a in value.kw)
                + f",{location_text(value.where)},{value.opaque}|" + ",".join(sorted(value.maybe))
                + ")")
    if isinstance(value, Inst):
        ctor = "" if value.ctor is None else str(value.ctor[0]) + ":" + ",".join(
            f"{k}={stable_key(v)}" for k, v in value.ctor[1])
        return f"Inst({value.cls},{value.exact},{ctor})"
    if isinstance(value, Bound):
        return f"Bound({value.func.path},{value.func.qualname},{stable_key(value.self_value)}," \
            f"{value.owner}{',static' if value.static else ''})"
    if isinstance(value, Super):
        return f"Super({value.after},{stable_key(value.self_value)})"
    if isinstance(value, Flag):
        return f"Flag({value.attr},{stable_key(value.owner)},{value.where},{value.negated})"
    if isinstance(value, FlagCase):
        return f"FlagCase({stable_key(value.flag)},{stable_key(value.on_true)}," \
            f"{stable_key(value.on_false)})"
    if isinstance(value, Func):
        closure = ",".join(f"{k}={stable_key(v)}" for k, v in value.closure)
        return f"Func({value.path},{value.qualname},{closure})"
    if isinstance(value, Seq):
        return f"Seq({stable_key(value.item)},{value.complete})"
    if isinstance(value, Member):
        return f"Member({value.cls},{value.name},{stable_key(value.value)})"
    if isinstance(value, Lit):
        return f"Lit({type(value.value).__name__},{value.value!r},{location_text(value.where)}," \
            f"{location_text(value.omitted)}," \
            f"{value.table},{value.rebound})"
    if isinstance(value, Rec):
        return f"Rec({value.name}," + ",".join(
            getattr(r, "record", "?") for r in (*value.consumers, *value.producers)) + ")"
    return repr_as_text(value)  # Param, Num, ClassRef, ModuleRef, Ext, ExtInst: plain fields


#: what a special form's evaluation returns where it does not apply (the call is then read as
#: any other): never a value
NOT_SPECIAL = object()
