"""Containers and literals in the interpreter's values: tuples, lists, dicts and comparisons.

An item of a tuple or list (by position, or any where positions are not known), what a ``for``
binds, a dict's entry by a constant or class key, the literal spellings a value may have, and
comparisons of literals (``kind != "log2"``, ``name in {"a", "b"}``).
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import replace
from typing import Any
from typing import cast

from attn_contracts.findings import Location
from attn_contracts.lint.torch_model import lose_layout
from attn_contracts.lint.torch_model import short_line
from attn_contracts.lint.values import SINGLETONS
from attn_contracts.lint.values import Arg
from attn_contracts.lint.values import Bound
from attn_contracts.lint.values import ClassRef
from attn_contracts.lint.values import DictV
from attn_contracts.lint.values import Ext
from attn_contracts.lint.values import ExtInst
from attn_contracts.lint.values import Flag
from attn_contracts.lint.values import Func
from attn_contracts.lint.values import Lit
from attn_contracts.lint.values import Lse
from attn_contracts.lint.values import ModuleRef
from attn_contracts.lint.values import Partial
from attn_contracts.lint.values import Seq
from attn_contracts.lint.values import Tup
from attn_contracts.lint.values import Union_
from attn_contracts.lint.values import Value
from attn_contracts.lint.values import alternatives
from attn_contracts.lint.values import is_empty_set
from attn_contracts.lint.values import join

#: the methods that add elements to (or take them from) a list, set or deque
GROWS = frozenset({"append", "extend", "insert", "add", "appendleft", "extendleft", "pop",
                    "popleft", "discard", "remove", "clear", "update"})


#: the methods that change a container in place
MUTATORS = GROWS | {"setdefault", "popitem", "__setitem__", "__delitem__", "reverse", "sort",
                    "difference_update", "intersection_update",
                    "symmetric_difference_update"}


def element(value: Value, i: int, exact: bool = False) -> Value:
    """Item ``i`` of a tuple or list (counted from the end where negative); any item of a
    container whose positions are not known."""
    if isinstance(value, Union_) and value.widened:
        return value  # unknown holding an LSE: so is every part of it
    options = []
    for alt in alternatives(value):
        if isinstance(alt, Tup):
            options.append(alt.get(i) if not (exact and alt.partial_items) else None)
        elif isinstance(alt, Seq):
            options.append(one_of(alt.item))
        else:
            options.append(None)
    return join(options) if options else None


def one_of(item: Value) -> Value:
    """One element, at a position not known, of a container that may hold any of ``item``:
    literals that differ are not known (which one is there is not a path the program takes,
    as a branch is, but a place the analysis did not follow); anything else as it is (an LSE
    of any of its sources, so that no source is lost)."""
    options = list(alternatives(item))
    literals = {(type(o.value), o.value) for o in options if isinstance(o, Lit)}
    if len(options) > 1 and len(literals) > 1 and all(isinstance(o, Lit) for o in options):
        return None
    return item


def rest_of(value: Value, start: int, after: int) -> Value:
    """What ``*rest`` binds in ``a, *rest, b = value``: a list of the items between."""
    options: list[Value] = []
    for alt in alternatives(value):
        if isinstance(alt, Tup) and not (after and alt.partial_items):
            options.append(Tup(alt.items[start:len(alt.items) - after], alt.partial_items,
                               mutable=True))
        elif isinstance(alt, Seq):
            options.append(alt)
        else:
            options.append(None)
    return join(options) if options else None


def iterate(value: Value) -> Value:
    """What a ``for`` over a value binds: any item of a tuple or list, the element of a
    container or generator; an LSE's rows are LSEs of its base."""
    options: list[Value] = []
    for alt in alternatives(value):
        if isinstance(alt, Tup):
            if alt.items:
                options.append(join(alt.items) if not alt.partial_items else None)
        elif isinstance(alt, Seq):
            options.append(alt.item)
        elif isinstance(alt, Lse):
            options.append(lose_layout(alt))
        elif (letters := characters(alt)) is not None:
            if letters.items:
                options.append(join(letters.items))
        else:
            options.append(None)
    return join(options) if options else None


#: a string iterated character by character is known to this length (a longer one: unknown)
_MAX_CHARACTERS = 64


def characters(value: Value) -> Tup | None:
    """What iterating a string literal gives, as Python iterates it: its characters, one
    position each (``list.extend("aiter")`` adds five one-letter strings, not the word)."""
    if isinstance(value, Lit) and isinstance(value.value, str) and \
            len(value.value) <= _MAX_CHARACTERS:
        return Tup(tuple(Lit(c, value.where) for c in value.value))
    return None


#: Python's builtins over an iterable whose meaning is its elements' order alone: read on any
#: tuple the flow holds (its items may be LSEs, not only literals), element by element
ITERATION = frozenset({"iter", "reversed", "enumerate", "zip", "next"})


def iteration(name: str, args: Sequence[Value], where: Location,
              keywords: Mapping[str, Value] | None = None) -> Value | None:
    """``iter(t)``, ``reversed(t)``, ``enumerate(t[, start])``, ``zip(a, b[, strict=...])``,
    ``next(t[, default])`` as Python computes them on tuples of known positions (an iterator is
    read as the tuple of what it yields); on a set, a grown list or a generator whose order is
    not known, what any of its elements may be (``next``) or nothing known. A generator consumed
    once is read as fresh again: what its second reader sees is not modelled."""
    keywords = keywords or {}
    tuples = [a if isinstance(a, Tup) and not a.partial_items else None for a in args]
    if name == "next":
        return _next(args, tuples[0]) if len(args) in (1, 2) else None
    if name == "zip":
        return _zip(args, tuples, keywords.get("strict", Lit(False, where)))
    if name == "enumerate" and (len(args) == 2 or "start" in keywords):
        start = args[1] if len(args) == 2 else keywords.get("start")
        return _enumerate(tuples[0] if len(args) <= 2 else None, start, where)
    if len(args) != 1:
        return None
    t = tuples[0]
    if t is None:  # positions not known
        return Seq(iterate(args[0]), iterator=True) if name != "enumerate" and \
            args[0] is not None else None
    if name == "enumerate":
        return Tup(tuple(Tup((Lit(i, where), v)) for i, v in enumerate(t.items)), iterator=True)
    return replace(t, iterator=True) if name == "iter" else \
        Tup(tuple(reversed(t.items)), iterator=True)


def _zip(args: Sequence[Value], tuples: Sequence[Tup | None], strict: Value) -> Value | None:
    """``zip(a, b[, strict=...])`` of tuples of known positions; with ``strict`` true and
    lengths that differ, Python raises: nothing is built."""
    known = [t for t in tuples if t is not None]
    if not args or len(known) != len(args) or not isinstance(strict, Lit):
        return None
    if strict.value and len({len(t.items) for t in known}) > 1:
        return None
    return Tup(tuple(Tup(items) for items in zip(*(t.items for t in known), strict=False)),
               iterator=True)


def _enumerate(t: Tup | None, start: Value, where: Location) -> Value | None:
    """``enumerate(t, start)`` of a tuple of known positions, counted from a known int."""
    if t is None or not (isinstance(start, Lit) and type(start.value) is int):
        return None
    return Tup(tuple(Tup((Lit(i, where), v)) for i, v in enumerate(t.items, start.value)),
               iterator=True)


#: what :mod:`itertools` builds from tuples of known positions, read as Python computes it
ITERTOOLS = frozenset({"zip_longest", "chain", "takewhile", "dropwhile", "groupby", "compress",
                       "filterfalse", "pairwise"})


def itertools_value(name: str, args: Sequence[Value], fill: Value,
                    keep: Callable[[Value], bool | None] | None) -> Value:
    """``itertools.zip_longest(a, b, fillvalue=fill)``, ``chain(a, b)``, ``takewhile(p, t)``,
    ``dropwhile(p, t)``, ``filterfalse(p, t)``, ``compress(t, selectors)``, ``pairwise(t)`` over
    tuples of known positions (``keep``: ``p`` of an element, None where it is not known): the
    tuple Python's iterator yields; None where a position or a predicate's answer is not
    known."""
    tuples = [a for a in args if isinstance(a, Tup) and not a.partial_items]
    if len(tuples) != len(args) or not args:
        return None
    built = _ITERTOOLS_BUILT.get(name)  # (``groupby`` is read apart: :func:`grouped`)
    return None if built is None else built(tuples, fill, keep)


def _zip_longest(tuples: list[Tup], fill: Value, _: object) -> Value:
    longest = max(len(t.items) for t in tuples)
    return Tup(tuple(Tup(tuple(t.items[i] if i < len(t.items) else fill for t in tuples))
                     for i in range(longest)))


def _pairwise(tuples: list[Tup], *_: object) -> Value:
    if len(tuples) != 1:
        return None
    return Tup(tuple(Tup(pair) for pair in itertools.pairwise(tuples[0].items)), iterator=True)


def _compressed(tuples: list[Tup], *_: object) -> Value:
    """``itertools.compress(data, selectors)``: each element whose selector (paired as
    ``zip`` pairs them, the shorter ending it) is true; None where a selector's truth is not
    known."""
    if len(tuples) != 2:
        return None
    kept: list[Value] = []
    for v, sel in zip(tuples[0].items, tuples[1].items, strict=False):  # the shorter ends it
        answer = truth(sel)
        if answer is None:
            return None
        if answer:
            kept.append(v)
    return Tup(tuple(kept), iterator=True)


def _filtered_false(tuples: list[Tup], _: Value,
                    keep: Callable[[Value], bool | None] | None) -> Value:
    """``itertools.filterfalse(p, t)``: the elements ``p`` refuses (Python asks of each)."""
    if keep is None or len(tuples) != 1:
        return None
    answers = [keep(v) for v in tuples[0].items]
    if any(a is None for a in answers):
        return None
    return Tup(tuple(v for v, a in zip(tuples[0].items, answers, strict=True) if not a),
               iterator=True)


def _while(name: str, tuples: list[Tup], keep: Callable[[Value], bool | None] | None) -> Value:
    """``takewhile``/``dropwhile``: the elements before (after) the first one ``keep`` refuses;
    None where its answer for one up to that is not known."""
    if keep is None or len(tuples) != 1:
        return None
    items = tuples[0].items
    cut = len(items)
    for i, v in enumerate(items):  # Python calls the predicate up to its first refusal only
        answer = keep(v)
        if answer is None:
            return None  # where it stops is not known
        if not answer:
            cut = i
            break
    return Tup(items[:cut] if name == "takewhile" else items[cut:])


#: each :data:`ITERTOOLS` function's value, of its tuples, fill value and predicate
_ITERTOOLS_BUILT: dict[str, Callable[[list[Tup], Value, Callable[[Value], bool | None] | None],
                                     Value]] = {
    "zip_longest": _zip_longest,
    "chain": lambda tuples, *_: Tup(tuple(v for t in tuples for v in t.items)),
    "takewhile": lambda tuples, _, keep: _while("takewhile", tuples, keep),
    "dropwhile": lambda tuples, _, keep: _while("dropwhile", tuples, keep),
    "pairwise": _pairwise,
    "compress": _compressed,
    "filterfalse": _filtered_false,
}


def grouped(keys: Sequence[Value]) -> Value:
    """``itertools.groupby``: one ``(key, group)`` pair per run of consecutive elements whose
    keys are equal (``keys``: each element's key, as the key function gives it), as Python
    yields them: an unsorted input gives a key once per run. A group's elements are not read:
    the iterator the groups share empties one once it moves on, and whether a group is read
    before that (in its step) or after (kept, ``list(groupby(...))``) is not modelled. None
    where a key is not one known literal (where the runs break is not known)."""
    known = [literal_values(k) for k in keys]
    if any(k is None or len(k) != 1 for k in known):
        return None
    runs: list[Value] = []
    previous: object = None  # compared only once a run has begun
    for key, value in zip(keys, known, strict=True):
        one = cast(list[object], value)[0]
        if not runs or previous != one:  # keys compared by value, as Python does
            runs.append(key)
        previous = one
    return Tup(tuple(Tup((key, None)) for key in runs), iterator=True)


def _next(args: Sequence[Value], t: Tup | None) -> Value:
    """``next(it[, default])``: the first element of a tuple (the default, or no value, where
    it is empty); of a container whose positions are not known, one of its elements."""
    if t is not None:
        return t.items[0] if t.items else (args[1] if len(args) == 2 else None)
    first = one_of(iterate(args[0]))
    return join([first, args[1]]) if len(args) == 2 else first


def index_of(node: ast.expr) -> int | None:
    """A constant integer subscript (``x[1]``, ``x[-1]``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and \
            not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and \
            isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, int):
        return -node.operand.value
    return None


def dict_key(node: ast.Constant) -> str | None:
    """A dict literal's constant key as the DictV keys it (:func:`value_key`)."""
    return value_key(node.value)


def value_key(value: object) -> str | None:
    """A literal as the DictV keys it: a string as itself (``**kwargs`` read it so), any other
    constant by the repr of the value Python hashes it as (``True``, ``1`` and ``1.0`` are one
    key), marked so it never equals a string."""
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, (bool, int, float)):
        return f"\x00{_hashed_as(value)!r}"
    return None


def _hashed_as(value: object) -> object:
    """The one value of those Python counts equal as a dict key (``True == 1 == 1.0``)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def literal_keys(value: Value) -> list[str] | None:
    """The DictV keys of every literal a value may be (``TABLE[name]`` with ``name`` a known
    string); None where one is no literal."""
    values = literal_values(value)
    keys = [value_key(v) for v in values] if values is not None else None
    return None if keys is None or any(k is None for k in keys) else cast(list[str], keys)


def key_value(key: str) -> object:
    """The Python value a DictV key stands for."""
    return ast.literal_eval(key[1:]) if key.startswith("\x00") and not \
        key.startswith("\x00class ") else key


def class_keyed(table: DictV) -> bool:
    """Whether a dict has a class among its keys (:func:`class_key`)."""
    return any(k.startswith("\x00class ") for k, _ in table.items)


def class_key(value: Value) -> str | None:
    """A class used as a dict key, as the DictV keys it (never equal to a string's or another
    constant's key); None where it is not one class for sure."""
    if isinstance(value, ClassRef) and value.exact:
        return f"\x00class {value.cls[0]}:{value.cls[1]}"
    if isinstance(value, Ext):
        return f"\x00class {value.qualname}"
    return None


def merge_items(items: dict[str, Arg], maybe: set[str], other: DictV, site: Location) -> None:
    """``other``'s items laid over ``items`` as ``{**items, **other}`` does: its keys replace
    the same keys (in their place); one it may lack keeps the earlier value as an option. A
    literal that replaces another key's value was chosen by the merge at ``site``: it is
    located there (where a wrong choice is fixed), its own place named."""
    for key, arg in other.items:
        old = items.get(key)
        if key in other.maybe and old is not None:
            items[key] = Arg(join([old.value, arg.value]), arg.where, arg.text,
                             old.buffers | arg.buffers)
            continue
        if old is not None and site:
            arg = replace(arg, value=join([
                replace(v, where=site, how=f"{v.how} (written at {short_line(v.where)}, chosen "
                        f"over the other {key} by this merge)") if isinstance(v, Lit) and
                v.where else v for v in alternatives(arg.value)]))
        items[key] = arg
        if key in other.maybe:
            maybe.add(key)
        else:
            maybe.discard(key)


def merged(dicts: list[DictV], site: Location) -> DictV:
    """``{**a, **b, ...}`` at ``site``: each later dict's keys over the earlier ones'."""
    items: dict[str, Arg] = {}
    maybe: set[str] = set()
    for d in dicts:
        merge_items(items, maybe, d, site)
    return DictV(tuple(items.items()), frozenset(maybe))


def table_entry(value: Value) -> Value:
    """A value read from a table by a key the linter cannot see: which entry applies is a
    dispatch."""
    if isinstance(value, Lit):
        return replace(value, table=True, how=f"{value.how} (a value of a table)")
    return value


def literal_text(value: Value) -> list[str]:
    """The literal spellings a value may have (``["'basee'"]``), and ``"<expr>"`` for each way
    it may be something the linter cannot read."""
    out: list[str] = []
    for alt in alternatives(value):
        text = repr(alt.value) if isinstance(alt, Lit) else "<expr>"
        if text not in out:
            out.append(text)
    return out or ["<expr>"]


#: the comparisons of two literals :meth:`~attn_contracts.lint.scope.Scope.e_compare` reads
_COMPARE: dict[type, Callable[[Any, Any], object]] = {
    ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
    ast.Is: lambda a, b: a is b if a is None or b is None else type(a) is type(b) and a == b,
    ast.IsNot: lambda a, b: a is not b if a is None or b is None else not (
        type(a) is type(b) and a == b),
    ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b}


def entries(table: DictV, key: ast.expr, class_keys: list[str] | None) -> list[Value]:
    """What ``table[key]`` may be: the entry of a constant key; with ``type(obj)`` as the key
    (``class_keys``), the entry of each class it may be; any entry for a key the linter cannot
    see."""
    if isinstance(key, ast.Constant) and dict_key(key) is not None:
        arg = table.get(dict_key(key) or "")
        return [arg.value if arg is not None else table.missing]
    if class_keys is not None:
        return [a.value if (a := table.get(k)) is not None else table.missing
                for k in class_keys]
    found = [table_entry(a.value) for _, a in table.items]
    if table.missing is not None:
        found.append(table.missing)  # a key it lacks: the factory's value
    return [join(found) if found else None]


def ordering(lefts: Sequence[object], right: Value, op: ast.cmpop) -> set[bool] | None:
    """``a OP b`` for every literal pair the two sides may hold; None where one side is no
    literal, the operator is none of :data:`_COMPARE`, or Python would raise."""
    values = literal_values(right)
    compare = _COMPARE.get(type(op))
    if values is None or compare is None:
        return None
    outcomes: set[bool] = set()
    for a in lefts:
        for b in values:
            try:
                outcomes.add(bool(compare(a, b)))
            except TypeError:  # ``None < 1``: Python raises; nothing to read
                return None
    return outcomes


def one_bool(value: Value) -> bool | None:
    """The one bool every value ``value`` may be is (two paths that both return ``True``);
    None where it may be anything else."""
    values = literal_values(value)
    found = {v for v in values if isinstance(v, bool)} if values is not None and \
        all(type(v) is bool for v in values) else set()
    return found.pop() if len(found) == 1 else None


def literal_values(value: Value) -> list[bool | int | float | str | None] | None:
    """Every Python value a value may be, where each of its alternatives is a literal."""
    options = list(alternatives(value))
    if not options or not all(isinstance(v, Lit) for v in options):
        return None
    return [cast(Lit, v).value for v in options]


def flag_values(value: Value) -> list[object] | None:
    """Every Python value ``value`` may be where each alternative is a literal or a backend's
    base flag (a bool as its class declares it: either); None where one is neither."""
    out: list[object] = []
    for alt in alternatives(value):
        if isinstance(alt, Lit):
            out.append(alt.value)
        elif isinstance(alt, Flag):
            out += [True, False]
        else:
            return None
    return out or None


def truth(value: Value) -> bool | None:
    """What ``bool(value)`` is, where every value it may be gives the same answer: a literal
    (``if log2:`` with ``log2=False`` passed); a function, method, partial, class or module
    (always true: ``if self.is_base_e:`` without the call); a tuple of known length (``x =
    True,`` is a true one-tuple). None where one of them may go either way (a default read in
    a function's own context, a flag, an object, two paths that differ)."""
    options = list(alternatives(value))
    answers = {_truth_of(v) for v in options}
    return answers.pop() if options and len(answers) == 1 else None


#: classes of the standard library whose objects define neither ``__bool__`` nor ``__len__``:
#: every one is true (a match, a compiled pattern, the ``Field`` that ``dataclasses.field()``
#: returns outside a dataclass)
_ALWAYS_TRUE = ("re.Match", "re.Pattern", "dataclasses.Field", *SINGLETONS.values())


def _truth_of(value: Value) -> bool | None:
    if isinstance(value, Lit):
        return bool(value.value)
    if isinstance(value, (Func, Bound, Partial, ClassRef, ModuleRef)) or \
            (isinstance(value, (Tup, Seq)) and value.iterator) or \
            (isinstance(value, ExtInst) and value.qualname.startswith(_ALWAYS_TRUE)):
        return True  # an iterator is true even where it yields nothing; so is a match
    if isinstance(value, Tup) and not value.partial_items:
        return bool(value.items)
    if isinstance(value, Seq) and value.complete:  # a set of known elements, all of them
        return value.item is not None
    if isinstance(value, DictV):  # a key every path sets: not empty; no key at all: empty
        return True if any(k not in value.maybe for k, _ in value.items) else \
            (False if not value.items else None)
    return None


def members_of(value: Value) -> tuple[list[bool | int | float | str | None], bool] | None:
    """What a container of literals holds, and whether that is all it holds (a tuple's
    positions are known; a set or grown list may hold any of its values, or not)."""
    if isinstance(value, Tup) and not value.partial_items:
        out: list[bool | int | float | str | None] = []
        for item in value.items:
            one = literal_values(item)
            if one is None or len(one) != 1:
                return None
            out += one
        return out, True
    if isinstance(value, Seq):
        if is_empty_set(value):
            return [], True  # the empty set (folding.abstract), every element of it sure
        many = literal_values(value.item)
        return (many, value.complete) if many is not None else None
    if isinstance(value, DictV) and not class_keyed(value):
        # ``name in table``: its keys (all of them, where no path may lack one)
        return [cast(Any, key_value(k)) for k, _ in value.items], not value.maybe
    return None


# --- a dict value after a change in place (``d[k] = v``, ``setdefault``, ``pop``) -------------
def dict_stored(d: DictV, keys: list[str], stored: Arg) -> DictV:
    """``d[k] = v`` where ``k`` is one of ``keys``: that entry replaced where the key is
    known; else each key may now hold the value or what it held (``for k in NAMES: T[k] = f``
    leaves every name's entry maybe set)."""
    if len(set(keys)) == 1:
        (k,) = set(keys)
        return replace(d, items=_put(d.items, k, stored), maybe=d.maybe - {k})
    items = dict(d.items)
    maybe = set(d.maybe)
    for k in sorted(set(keys)):
        old = items.get(k)
        if old is None:
            items[k] = stored
            maybe.add(k)
        else:
            items[k] = Arg(join([old.value, stored.value]), stored.where, stored.text,
                           old.buffers | stored.buffers)
    return DictV(tuple(items.items()), frozenset(maybe))


def dict_setdefault(d: DictV, key: str, default: Arg) -> DictV:
    """``d`` after ``d.setdefault(key, default)``: the key there for sure, its entry kept where
    it had one."""
    had = d.get(key)
    if had is None:
        return replace(d, items=(*d.items, (key, default)))
    entry = had if key not in d.maybe else Arg(join([had.value, default.value]), had.where)
    return replace(d, items=_put(d.items, key, entry), maybe=d.maybe - {key})


def _put(items: tuple[tuple[str, Arg], ...], key: str, value: Arg
         ) -> tuple[tuple[str, Arg], ...]:
    """A dict's entries with ``key`` set: in its place where it is there (a dict keeps the
    order keys were first inserted in), else last."""
    if any(k == key for k, _ in items):
        return tuple((k, value if k == key else a) for k, a in items)
    return (*items, (key, value))


def dict_popped(d: DictV, key: str) -> DictV:
    """``d`` after ``d.pop(key)``: without the key."""
    return replace(d, items=tuple((k, a) for k, a in d.items if k != key),
                   maybe=d.maybe - {key})
