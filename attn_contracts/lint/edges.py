"""The rules over the program model: every declaration against the kernels it describes, every
base a combine is given against every LSE that can reach it. Fail closed.

Declarations (a class that sets ``can_return_lse_for_decode = True``), judged by the kernels
its own methods reach (:class:`~attn_contracts.lint.inferred.Kernel`):

==========================  =================================  ==============================
its base                    the kernels                        finding
==========================  =================================  ==============================
own                         one contradicts it                 AC008 error
own                         all agree                          none
own                         one leaves its base to dispatch    AC032 warning
own                         none known                         AC032 note
inherited default           one contradicts it                 AC002 error
inherited default           all agree                          AC002 note
inherited default           none known, or dispatch            AC002 error (fail closed)
none anywhere               —                                  AC001 error (where the tree
                                                               declares bases at all)
==========================  =================================  ==============================

Edges (:class:`~attn_contracts.lint.inferred.Use`): a combine told a fixed base (its record's
own, a literal, a default, a value from a table) is checked against every source of the LSE
that reaches it — a producer's pinned base, a base a library's dispatch may pick, or the declared
base of the backend class whose method returned it: any that contradicts is an ``AC023`` error,
at the place the base is written. A literal that agrees (or that nothing confirms) stays an
``AC003`` warning; a base read from the backend's own attribute is checked against the LSE it
travels with; a parameter's default is ``AC021``; one LSE of unknown base read in two bases is
``AC023``.

Facts the interpreter infers on its way (:data:`~attn_contracts.lint.inferred.Fact`) become
findings here too (:func:`fact_findings`): an LSE exponentiated in the other base is ``AC023``; a
combine call that leaves its base keyword to the default, ``AC022``; a producer call that leaves
its base to the library's dispatch, ``AC028``; a combine whose records disagree, the versions
unknown, ``AC029``; a combine whose body returns its merged LSE in another base than its record
says, or a producer whose body hands back an LSE it computed in another base than its record,
``AC008``; a line adding or subtracting LSEs of two known bases, ``AC023``.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from typing import cast

from attn_contracts.findings import Code
from attn_contracts.findings import Finding
from attn_contracts.findings import Location
from attn_contracts.lint.classes import ClassInfo
from attn_contracts.lint.classes import Hierarchy
from attn_contracts.lint.inferred import BaseGiven
from attn_contracts.lint.inferred import BoundReached
from attn_contracts.lint.inferred import Computed
from attn_contracts.lint.inferred import Disagreed
from attn_contracts.lint.inferred import Dispatched
from attn_contracts.lint.inferred import Fact
from attn_contracts.lint.inferred import Kernel
from attn_contracts.lint.inferred import Misconverted
from attn_contracts.lint.inferred import Mixed
from attn_contracts.lint.inferred import Omitted
from attn_contracts.lint.inferred import Returned
from attn_contracts.lint.inferred import Use
from attn_contracts.lint.inferred import Weighed
from attn_contracts.lint.record_index import Consumer
from attn_contracts.lint.record_index import disagreement
from attn_contracts.lint.values import ClassKey
from attn_contracts.lint.values import Flag
from attn_contracts.lint.values import Lit
from attn_contracts.lint.values import Source
from attn_contracts.lint.values import repr_as_text
from attn_contracts.lint.values import source_order

__all__ = ["Declaration", "class_findings", "declaration", "edge_findings", "fact_findings"]

#: bases that can hold no backend attribute: a class whose only unresolved bases are these has
#: no base from a default anywhere
_NO_DEFAULTS = frozenset({"abc.ABC", "ABC", "object", "typing.Generic", "Generic",
                          "typing.Protocol", "Protocol", "enum.Enum", "Enum"})


def _at(path: str, line: int, col: int) -> Location:
    return Location(path, line, col + 1)


def _short(where: Location) -> str:
    """A place as a message names it: ``path:line``."""
    return f"{where.path}:{where.line}" if where.line is not None else str(where)


def _meaning(attr: str, value: ast.expr) -> str | None:
    """The base a literal of a base attribute means: ``lse_base_on_e = True`` → "e"."""
    if not isinstance(value, ast.Constant):
        return None
    if isinstance(value.value, bool) and attr.endswith("_on_e"):
        return "e" if value.value else "2"
    if value.value in ("e", "2"):
        return str(value.value)
    return None


def _attr_literal(attr: str, base: str) -> str:
    return ("True" if base == "e" else "False") if attr.endswith("_on_e") else repr(base)


@dataclass(frozen=True)
class Declaration:
    """A class's LSE base as its hierarchy declares it."""

    cls: ClassInfo
    attr: str
    owner: ClassInfo  # the class that assigns it (``cls`` for an own declaration)
    value: ast.expr
    base: str | None  # what the literal means; None for an expression
    returns_where: Location  # the ``can_return_lse_for_decode = True`` line
    returns_attr: str
    #: the class it is inherited from says it returns an LSE too: a declaration, not a default
    owner_returns: bool = False
    #: the class itself sets the returns-LSE attribute (else it inherits it)
    returns_own: bool = True

    @property
    def own(self) -> bool:
        return self.owner is self.cls

    @property
    def declared(self) -> bool:
        """Declared for an LSE-returning class (its own, or an LSE-returning ancestor's), as
        opposed to a default of a base class that returns none."""
        return self.own or self.owner_returns

    @property
    def where(self) -> Location:
        _, line, col = self.owner.attrs[self.attr]
        return _at(self.owner.path, line, col)

    @property
    def text(self) -> str:
        """The value as it reads: the literal (an expression read to one, as Python writes
        that value: where it is written is the finding's place)."""
        if self.base is not None and _meaning(self.attr, self.value) != self.base:
            # an expression, or a literal the body's later statements rebound
            return _attr_literal(self.attr, self.base)
        try:
            return ast.unparse(self.value)
        except (RecursionError, ValueError):
            return "<expression>"


def _is_true(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _registered_with_record(cls: ClassInfo) -> bool:
    """``@register(CapabilityRecord(...))`` / ``@register(record)``: the record is the contract."""
    for dec in cls.decorators:
        if isinstance(dec, ast.Call) and dec.args:
            func = dec.func
            name = func.attr if isinstance(func, ast.Attribute) else (
                func.id if isinstance(func, ast.Name) else "")
            if name == "register":
                return True
    return False


#: what the first class's body leaves in an attribute (the one that assigns it: its value
#: with what the body's later statements do to it), read on an instance of the second class:
#: its one constant (``_Unit.NATURAL.value`` → True), else None
Evaluate = Callable[[ClassInfo, str, ClassInfo], object]


def _read_meaning(attr: str, owner: ClassInfo, value: ast.expr,
                  evaluate: Evaluate | None, cls: ClassInfo) -> str | None:
    """The base a base attribute's value means on an instance of ``cls``: the constant the
    interpreter reads the owner's class body to leave in it (an Enum member's value, a module
    constant, what a descriptor's ``__get__`` returns for ``cls``, a later ``for`` target of
    the same name), else (no interpreter) its literal."""
    if evaluate is None:
        return _meaning(attr, value)
    known = evaluate(owner, attr, cls)
    return _meaning(attr, ast.Constant(known)) if isinstance(known, (bool, str)) else None


def declaration(h: Hierarchy, cls: ClassInfo, returns_attrs: Iterable[str],
                base_attrs: Iterable[str], *, own: bool = True,
                evaluate: Evaluate | None = None) -> Declaration | None:
    """The declaration of a class that says it returns an LSE (``own``: itself, not only
    through a base class); None for any other. ``evaluate`` reads a base given by an
    expression."""
    says = [(a, o) for a in returns_attrs if (o := h.definer(cls, a)) is not None and
            _is_true(o.attrs[a][0]) and (o is cls or not own)]
    if not says:
        return None
    attr0, holder = says[0]
    _, line, col = holder.attrs[attr0]
    # where it says so: its own line, or (inherited) its class statement
    where = _at(holder.path, line, col) if holder is cls else _at(cls.path, cls.line, 0)
    own_attr = [attr0]
    for attr in base_attrs:
        owner = h.definer(cls, attr)
        if owner is not None:
            value = owner.attrs[attr][0]
            returns = any(_is_true(h.value(owner, a)) for a in returns_attrs)
            return Declaration(cls, attr, owner, value,
                               _read_meaning(attr, owner, value, evaluate, cls), where,
                               own_attr[0], owner_returns=returns, returns_own=holder is cls)
    return Declaration(cls, next(iter(base_attrs), ""), cls, ast.Constant(None), None, where,
                       own_attr[0], returns_own=holder is cls)


def attribute_declaration(h: Hierarchy, cls: ClassInfo, base_attrs: Iterable[str], *,
                          evaluate: Evaluate | None = None) -> Declaration | None:
    """What a class that does not say it returns an LSE holds in its base attribute (a
    manager or config object whose ``lse_base_on_e`` a combine is told): the value its
    hierarchy assigns, read like a backend's declaration; None where no class assigns it."""
    for attr in base_attrs:
        owner = h.definer(cls, attr)
        if owner is not None:
            value = owner.attrs[attr][0]
            return Declaration(cls, attr, owner, value,
                               _read_meaning(attr, owner, value, evaluate, cls),
                               _at(cls.path, cls.line, 0), "", returns_own=False)
    return None


def _returned(base: str) -> str:
    """What a kernel's LSE is where the class's methods hand it on."""
    return "an LSE of neither base (converted more often than once)" if base == "x" else \
        f"base {base}"


def _converted_hint(kernels: Iterable[Kernel]) -> str:
    return ("convert the LSE once between its kernel and the class's return ("
            + ", ".join(sorted({_short(k.where) for k in kernels})[:3]) + ")")


def _kernel_text(kernels: Iterable[Kernel], limit: int = 3) -> str:
    shown = sorted({f"{k.name}() ({_short(k.where)}, {k.record})" for k in kernels})
    more = f" and {len(shown) - limit} more" if len(shown) > limit else ""
    return ", ".join(shown[:limit]) + more


def class_findings(h: Hierarchy, classes: Iterable[ClassInfo],
                   kernels: dict[int, frozenset[Kernel]], *, returns_attrs: tuple[str, ...],
                   base_attrs: tuple[str, ...], tree_declares_bases: bool,
                   evaluate: Evaluate | None = None) -> Iterator[Finding]:
    """AC001, AC002, AC008, AC032 for each class that says it returns an LSE."""
    for cls in classes:
        decl = declaration(h, cls, returns_attrs, base_attrs, evaluate=evaluate) or declaration(
            h, cls, returns_attrs, base_attrs, own=False, evaluate=evaluate)
        if decl is None or _registered_with_record(cls):
            continue
        found = frozenset(k for k in kernels.get(id(cls), frozenset()) if not k.settled)
        yield from _judge(h, decl, found, base_attrs, tree_declares_bases)


def _judge(h: Hierarchy, d: Declaration, found: frozenset[Kernel], base_attrs: tuple[str, ...],
           tree_declares_bases: bool) -> Iterator[Finding]:
    cls = d.cls
    attr = base_attrs[0] if base_attrs else "lse_base_on_e"
    pinned = {k.base for k in found if k.base is not None}
    # a fixed order: the message names the same first one (the repr with places as text, as
    # when they were text: values.repr_as_text)
    kernels = sorted(found, key=repr_as_text)
    dispatch = [k for k in kernels if k.dispatch]
    if d.owner is cls and d.base is None and not isinstance(d.value, ast.Constant) and \
            d.attr in cls.attrs:
        return  # an own base read from an expression (composite backends): trusted
    if not d.returns_own and not any(a in cls.attrs for a in base_attrs) and \
            not (pinned - {d.base}):
        # a subclass of a backend that says so for it: judged only where its own methods
        # contradict what it inherits (its parent's check covers the rest)
        return
    if d.owner is cls and d.attr not in cls.attrs:  # no declaration anywhere
        unresolved = [u for u in h.unresolved(cls) if u not in _NO_DEFAULTS]
        if unresolved:
            yield Finding(
                Code.AC002, cls.name,
                f"{cls.name} sets {d.returns_attr} = True but no {'/'.join(base_attrs)} in the "
                f"linted files: the base can only come from a default on "
                f"{', '.join(unresolved)} (not linted)",
                escalation="unlinted-default",  # the default is in no linted file
                hint=f"set {attr} on {cls.name} itself (or lint the file that defines "
                f"{unresolved[0]} with --project-root)", field=attr, found=None,
                allowed=f"{attr} set on {cls.name}", location=d.returns_where)
        elif tree_declares_bases:  # a tree with no base attribute (vLLM 0.24): nothing to set
            yield Finding(
                Code.AC001, cls.name,
                f"{cls.name} sets {d.returns_attr} = True but no {'/'.join(base_attrs)} is "
                "declared anywhere in its hierarchy (allowed: True for base e, False for "
                "base 2)" + (f"; the kernels it calls return base {'/'.join(sorted(pinned))}"
                             if pinned else ""),
                hint=f"set {attr} = {_attr_literal(attr, pinned.pop())} on {cls.name}"
                if len(pinned) == 1 else f"set {attr} on {cls.name}", field=attr, found=None,
                allowed="True, False", location=d.returns_where)
        return
    contra = sorted(b for b in pinned if b != d.base)
    if d.declared:
        whose = "declares" if d.own else f"inherits from {d.owner.name}, which returns an LSE too,"
        if d.base is not None and contra:
            wrong = [k for k in kernels if k.base is not None and k.base != d.base]
            yield Finding(
                Code.AC008, cls.name,
                f"{cls.name} {whose} {d.attr} = {d.text} (base {d.base}), but the kernels it "
                f"calls return {_returned(contra[0])}: {_kernel_text(wrong)}",
                hint=_converted_hint(wrong) if contra[0] == "x" else
                f"set {d.attr} = {_attr_literal(d.attr, contra[0])} on {cls.name}, or pin "
                f"the kernel's base to {d.base} (a keyword such as return_lse_base)"
                if len(pinned) == 1 else f"make the kernels {cls.name} calls agree on one base",
                field=d.attr, found=d.text, allowed="an LSE converted once" if contra[0] == "x"
                else _attr_literal(d.attr, contra[0]),
                location=d.where if d.own else d.returns_where)
        elif dispatch:
            yield Finding(
                Code.AC032, cls.name,
                f"{cls.name} {whose} {d.attr} = {d.text} (base {d.base}), but a kernel it calls "
                f"leaves its base to the library's dispatch: {_kernel_text(dispatch)} "
                f"({dispatch[0].choice}); the declaration holds only while the dispatch picks a "
                f"base-{d.base} kernel",
                hint="pin the kernel's base at the call (e.g. return_lse_base="
                f"{'basee' if d.base == 'e' else 'base2'!r})", field=d.attr, found=d.text,
                allowed="a base every kernel it calls is pinned to",
                location=d.where if d.own else d.returns_where)
        elif not found:
            yield Finding(
                Code.AC032, cls.name,
                f"{cls.name} {whose} {d.attr} = {d.text} (base {d.base}); no kernel a producer "
                "record knows is called in its methods, so nothing confirms it",
                escalation="no-known-kernel",  # no known kernel, no dispatch
                hint="add a producer record (with `calls`) for the "
                "kernel it runs, so the linter can check the declaration", field=d.attr,
                found=d.text, allowed="a base a kernel's record confirms",
                location=d.where if d.own else d.returns_where)
        return
    origin = f"{d.owner.name} ({_short(d.where)})"
    if d.base is not None and contra:
        wrong = [k for k in found if k.base is not None and k.base != d.base]
        yield Finding(
            Code.AC002, cls.name,
            f"{cls.name} sets {d.returns_attr} = True and inherits {d.attr} = {d.text} (base "
            f"{d.base}) from {origin}, but the kernels it calls return base {contra[0]}: "
            f"{_kernel_text(wrong)}",
            hint=f"set {d.attr} = {_attr_literal(d.attr, contra[0])} on {cls.name} itself",
            field=d.attr, found=d.text, allowed=_attr_literal(d.attr, contra[0]),
            location=d.returns_where)
        return
    if d.base is not None and pinned == {d.base} and not dispatch:
        yield Finding(
            Code.AC002, cls.name,
            f"{cls.name} inherits {d.attr} = {d.text} (base {d.base}) from {origin}; the "
            f"kernels it calls confirm it: {_kernel_text(found)}",
            escalation="confirmed",  # the kernels confirm the default
            hint=f"declare {d.attr} = {d.text} on {cls.name} to make it explicit", field=d.attr,
            found=d.text, allowed=f"{d.attr} set on {cls.name}", location=d.returns_where)
        return
    why = (f"a kernel it calls leaves its base to dispatch: {_kernel_text(dispatch)} "
           f"({dispatch[0].choice})" if dispatch else
           "no kernel a producer record knows is called in its methods")
    yield Finding(
        Code.AC002, cls.name,
        f"{cls.name} sets {d.returns_attr} = True but {d.attr} = {d.text} comes only from the "
        f"default on {origin}, and nothing confirms it: {why}",
        hint=f"declare the base on {cls.name} itself ({d.attr} = True for base e, False for "
        "base 2), pin the kernel's base at its call (return_lse_base=...), or add a producer "
        "record for the kernel it calls", field=d.attr, found=d.text,
        allowed=f"{d.attr} set on {cls.name}", location=d.returns_where)


# --- edges ----------------------------------------------------------------------------------------
def _effective(s: Source, declared: dict[ClassKey, Declaration | None]) -> tuple[str | None, str]:
    """A source's base and what says so: pinned by the code, or the declared base of the
    backend class whose method returned it."""
    if s.pinned:
        return s.base, s.what
    if s.base is None and not s.dispatch and s.impl is not None:
        d = declared.get(s.impl)
        if d is not None and d.base is not None:
            return d.base, (f"the LSE of {d.cls.name} ({s.choice or 'its method'}), declared base "
                            f"{d.base} by {d.attr} = {d.text} ({_short(d.where)})")
    return None, ""


def _fix(given: BaseGiven, base: str) -> str:
    if given.keyword:
        value = "True" if base == "e" else "False"
        if "on_e" not in given.keyword:
            value = f"'{base}'"
        return f"pass {given.keyword}={value} read from the producer (its record or class), not a literal"
    return ("convert the LSE where the bases change (× math.log(2) or log2_lse_to_ln: base 2 → "
            "e; × 1/ln 2: e → 2), or use a combine of the producer's base")


def edge_findings(uses: Iterable[Use], declared: dict[ClassKey, Declaration | None],
                  literal_sites: dict[Location, tuple[Consumer, str, Lit]] | None = None,
                  families: Mapping[ClassKey, tuple[Declaration | None, ...]] | None = None,
                  stated: Collection[tuple[str, str, str]] = (),
                  ) -> Iterator[Finding]:
    """The findings of the uses (an LSE reaching a consumer call) and of the literal bases no
    LSE reaches; ``families``: what each class of a flag's owner's family declares, for a
    flag read on an object that may be of any subclass; ``stated``: the defaulted base
    parameters (path, function, name) every caller states (their default is never taken)."""
    seen: set[Location | None] = set()
    settled: set[Location | None] = set()  # literal sites an LSE reaches that need no finding
    found = list(_edge_findings(uses, declared, families or {}, settled, frozenset(stated)))
    # a literal some producer that reaches it confirms is not unconfirmed on another path
    # (a method read for any caller, its LSE a parameter): the note says what is known
    confirmed = {f.location for f in found
                 if f.code is Code.AC003 and f.escalation == "confirmed"}
    for f in found:
        if f.code in (Code.AC003, Code.AC023):
            seen.add(f.location)
        if f.code is Code.AC003 and f.escalation != "confirmed" and f.location in confirmed:
            continue
        yield f
    seen |= settled
    for where, (c, kw, lit) in (literal_sites or {}).items():
        if where in seen:
            continue
        yield Finding(
            Code.AC003, c.last,
            f"{c.last}({kw}={lit.value!r}{lit.how}) gets a literal LSE base; no LSE the linter "
            "can follow reaches it here, so nothing confirms it; it must come from the "
            "backend's record or class",
            hint=f"pass {kw}=<backend>.lse_base_on_e or plan from the record", field=kw,
            found=lit.value, allowed="an expression read from the backend", location=where)


def _edge_findings(uses: Iterable[Use], declared: dict[ClassKey, Declaration | None],
                   families: Mapping[ClassKey, tuple[Declaration | None, ...]],
                   settled: set[Location | None],
                   stated: frozenset[tuple[str, str, str]]) -> Iterator[Finding]:
    unknown_reads: dict[str, list[tuple[Use, str]]] = {}
    for use in uses:
        g = use.given
        if g.kind == "param" and g.param is not None and g.param.default is not None and \
                (g.param.path, g.param.func, g.param.name) not in stated:
            d = g.param.default
            yield Finding(
                Code.AC021, g.param.func.rpartition(".")[2],
                f"{g.param.func.rpartition('.')[2]}({g.param.name}={d.value!r}) gives its LSE "
                f"base a default: a caller that forgets {g.param.name} silently gets it (feeds "
                f"{use.consumer.label})",
                hint=f"make {g.param.name} required (no default), so every caller states the base",
                field=g.param.name, found=d.value, allowed="no default", location=d.where)
        if use.dispatched:
            continue
        ways = g.options if g.kind == "choice" else (g,)
        found: list[list[Finding]] = []
        for way in ways:
            if way.kind == "fixed" and way.base is not None:
                found.append(list(_fixed(use, way, declared, unknown_reads, settled)))
            elif way.kind == "flag" and way.flag is not None:
                found.append(list(_flagged(use, way, declared, families)))
            elif way.kind == "unknown" and way.keyword:
                found.append(list(_unread(use, way, declared)))
            else:
                found.append([])
        if any(w.rebound for w in ways) and any(
                w.rebound and not any(f.code is Code.AC023 for f in fs)
                for w, fs in zip(ways, found, strict=True)):
            # a global a function rebinds: which value holds depends on whether it ran first;
            # one value agrees with every LSE reaching the call, so the others contradict
            # nothing shown to reach it (an error needs every value it may be told wrong):
            # each is a warning, never silence
            found = [[_maybe(f) if w.rebound and f.code is Code.AC023 else f for f in fs]
                     for w, fs in zip(ways, found, strict=True)]
        for fs in found:
            yield from fs
    for reads in unknown_reads.values():
        first_use, first_base = reads[0]
        other = next(((u, b) for u, b in reads if b != first_base), None)
        if other is not None:
            u, b = other
            s = min(first_use.lse.sources, key=source_order)
            yield Finding(
                Code.AC023, u.consumer.last,
                f"{s.what} reaches {first_use.consumer.label} as base {first_base} "
                f"({_short(first_use.where)}) and {u.consumer.label} as base {b}: one of the two "
                "is wrong",
                hint="convert it between the two, or select both bases from the producer's record",
                field="base", found=b, allowed=first_base, location=u.where)


def _maybe(f: Finding) -> Finding:
    """An error on one value of a global some function rebinds, where another value it may
    hold agrees: not read which holds (a warning)."""
    return Finding(
        Code.AC035, f.subject,
        f"{f.message}; the base is one of the values of a global a function rebinds, and another "
        "agrees: which holds depends on whether that function ran first, which the lint cannot "
        "read",
        hint="bind the base once (a constant, or the backend's record), not in a function that "
        "may or may not have run", field=f.field, found=f.found, allowed=f.allowed,
        location=f.location)


def _unread(use: Use, g: BaseGiven, declared: dict[ClassKey, Declaration | None],
            ) -> Iterator[Finding]:
    """AC035: the call gives its base keyword an expression the lint could not read, and an LSE
    of a known base reaches it: a warning naming both (what is not read is never an error, and
    never silence either)."""
    known = sorted(((b, s, what) for s in use.lse.sources
                    for b, what in (_effective(s, declared),) if b in ("e", "2")),
                   key=lambda k: (k[0], source_order(k[1])))
    if not known:
        return
    b, _, what = known[0]
    others = sorted({k[0] for k in known} - {b})
    also = f" (and base {others[0]} from another source)" if others else ""
    yield Finding(
        Code.AC035, use.consumer.last,
        f"{use.consumer.label} ({_short(use.where)}) is told its base by {g.how}, which the "
        f"lint could not read; the LSE that reaches it is base {b}{also}: {what}",
        hint=f"pass {g.keyword} read from the producer's record or the backend's declaration, "
        "or lint the files the expression comes from",
        field=g.keyword, found=g.how, allowed=f"{g.keyword} telling base {b}",
        location=g.where or use.where)


def _fixed(use: Use, g: BaseGiven, declared: dict[ClassKey, Declaration | None],
           unknown_reads: dict[str, list[tuple[Use, str]]], settled: set[Location | None],
           ) -> Iterator[Finding]:
    base = g.base or ""
    contra: list[tuple[Source, str, str]] = []
    lost: list[Source] = []  # sources whose base an arithmetic the lint cannot read hides
    agree = False
    if g.table and len({b for s in use.lse.sources
                        if (b := _effective(s, declared)[0]) is not None}) > 1:
        return  # a table keyed by what picks the producer: which entry applies is a dispatch
    for s in sorted(use.lse.sources, key=source_order):
        if s.dispatch:
            other = [b for b in s.bases if b != base]
            if other:
                contra.append((s, other[0], f"{s.what}: {s.choice}"))
            continue
        b, what = _effective(s, declared)
        if b is None:
            if s.base is None and not s.dispatch and s.impl is None:
                unknown_reads.setdefault(s.key, []).append((use, base))
            if s.unread and s.param is None:
                lost.append(s)
            continue
        if b != base:
            contra.append((s, b, what))
        else:
            agree = True
    where = g.omitted or (g.where if (g.literal or g.how) and g.where else use.where)
    if contra:
        contra.sort(key=lambda c: (c[0].dispatch, source_order(c[0])))  # pinned names it best
        s, b, what = contra[0]
        shown = f"{what}{f' (after {s.converted})' if s.converted else ''}"
        choice = f"; the LSE depends on a run-time choice: {s.choice}" if s.choice and \
            s.choice not in what else ""
        base_text = "no LSE of either base" if b == "x" else f"base {b}"
        told = f" through {g.how}" if g.how and g.kind == "fixed" and g.keyword else ""
        more = f" (and {len(contra) - 1} more source(s))" if len(contra) > 1 else ""
        yield Finding(
            Code.AC023, use.consumer.last,
            f"{shown} is {base_text} but reaches {use.consumer.label} ({_short(use.where)}), "
            f"which reads base {base} here{told}{choice}{more}",
            hint=_fix(g, b) if g.keyword and b in ("e", "2") else _fix(BaseGiven("fixed"), b),
            field=g.keyword or "base", found=base, allowed=b, location=where)
        return
    if lost:
        yield _base_lost(use, g, base, lost)
    if g.table and agree and not contra:
        # a table of bases (keyed by the kernel's version, say) whose every entry agrees with
        # what reaches it: the mapping is written down once, as data, not a hard-coded guess
        settled.add(g.where)
        return
    if g.literal and g.keyword:
        reason = ("agrees with the producers that reach it today" if agree else
                  "no producer record confirms")
        message = (f"{use.consumer.last}({g.how}) gets a literal LSE base, which {reason}; it "
                   "must come from the backend's record or class")
        fields: dict[str, Any] = {
            "hint": f"pass {g.keyword}=<backend>.lse_base_on_e or plan from the record",
            "field": g.keyword, "found": g.how, "allowed": "an expression read from the backend",
            "location": g.where}
        yield Finding(Code.AC003, use.consumer.last, message, escalation="confirmed",
                                **fields) if agree else \
            Finding(Code.AC003, use.consumer.last, message, **fields)


def _lost_at(use: Use, g: BaseGiven, told: str) -> Iterator[Finding]:
    """AC035 where an LSE whose base an unread factor hid reaches a consumer told ``told``."""
    lost = [s for s in sorted(use.lse.sources, key=source_order) if s.unread and s.param is None]
    if lost:
        yield _base_lost(use, g, told, lost)


def _base_lost(use: Use, g: BaseGiven, base: str, lost: list[Source]) -> Finding:
    """AC035: an LSE reaches a consumer told ``base`` after an arithmetic the lint cannot read
    (a factor that may or may not convert it): a warning naming it, never silence."""
    s = lost[0]
    more = f" (and {len(lost) - 1} more source(s))" if len(lost) > 1 else ""
    return Finding(
        Code.AC035, use.consumer.last,
        f"{s.what}{more} reaches {use.consumer.label} ({_short(use.where)}), which reads "
        f"{'base ' if len(base) == 1 else ''}{base} here, after {s.unread}, which the lint could "
        "not read: the base it has there is neither confirmed nor contradicted",
        hint="convert with a constant the lint reads (× math.log(2): base 2 → e; × 1/ln 2: e → "
        "2), or lint the files the factor comes from",
        field="base", found=s.unread, allowed=f"an LSE of base {base}", location=use.where)


def _flagged(use: Use, g: BaseGiven, declared: dict[ClassKey, Declaration | None],
             families: Mapping[ClassKey, tuple[Declaration | None, ...]],
             ) -> Iterator[Finding]:
    """A combine told a backend's base flag (or ``not`` it: the other base) where the LSE it
    combines has another base than that tells. Read on an object that may be of any subclass
    (``self``, an annotated parameter), the flag may hold what each class of the family
    declares: an error needs every one of them to contradict the LSE."""
    flag = g.flag
    if flag is None:
        return
    owner = flag.owner
    unread = False
    yield from _lost_at(use, g, f"<{flag.attr} of the backend>")
    for s in sorted(use.lse.sources, key=source_order):
        if not s.pinned:
            continue
        own = declared.get(s.impl) if s.impl is not None else None
        if own is not None and not flag.negated and own.base in (None, s.base):
            # a backend's own method's LSE that agrees with its declaration (one that does
            # not is judged here: the method an instance dispatches to may not be the class's
            # own, ``legacy = run`` in a base, and the class's check reads its own methods)
            continue
        options: tuple[Declaration | None, ...] = (
            (own,) if own is not None else () if owner is None else
            (declared.get(owner.cls),) if owner.exact else families.get(owner.cls, ()))
        told = [_told(d, flag) for d in options]
        if options and all(t is not None and t != s.base for t in told):
            yield _flag_finding(use, g, flag, cast(Declaration, options[0]), s,
                                cast(str, told[0]), len(options) - 1)
        unread = unread or not options or None in told
    if unread:
        yield from _unread(use, g, declared)


def _told(d: Declaration | None, flag: Flag) -> str | None:
    """The base a flag tells read as ``d`` declares it (None: not read)."""
    if d is None or d.base is None:
        return None
    return {"e": "2", "2": "e"}.get(d.base) if flag.negated else d.base


def _flag_finding(use: Use, g: BaseGiven, flag: Flag, d: Declaration, s: Source,
                  told: str, subclasses: int = 0) -> Finding:
    """A combine told ``told`` by a backend's flag (or its negation) for an LSE of another
    base (``subclasses``: as many more classes of the family tell it the same)."""
    reads = (f"reads the other base than {d.cls.name}'s declared base {d.base}"
             if flag.negated else f"reads {d.cls.name}'s declared base {d.base}")
    if subclasses:
        reads += f" (as each of its {subclasses} subclass(es) declares it)"
    return Finding(
        Code.AC023, use.consumer.last,
        f"{use.consumer.last}({g.keyword}={'not ' if flag.negated else ''}...{flag.attr}) "
        f"{reads} ({d.attr} = {d.text}, {_short(d.where)}{', inherited' if not d.own else ''})"
        f", but the LSE it combines is base {s.base}: {s.what}",
        hint=f"pass {g.keyword}=...{flag.attr} itself" if flag.negated else
        f"set {d.attr} = {_attr_literal(d.attr, s.base or 'e')} on {d.cls.name}",
        field=g.keyword, found=told, allowed=s.base or "", location=flag.where)


def _misconverted(f: Misconverted) -> Iterator[Finding]:
    """AC016 where the conversion is written, and at each call that hands the function it is
    written in such an LSE (``called_at``): either may be the bug (a wrong constant, a helper
    applied twice)."""
    first = f.sources[0]
    more = f" (and {len(f.sources) - 1} more source(s))" if len(f.sources) > 1 else ""
    other = "2" if f.target == "e" else "e"
    hint = (f"drop the conversion: the LSE is base {f.target} already, or convert with the "
            f"constant that turns base {other} into {f.target} only where the LSE is base {other}")
    done = f" (after {first.converted})" if first.converted else ""
    if f.called_at is None:
        yield Finding(
            Code.AC016, f.how,
            f"{f.how} ({_short(f.where)}) turns base {other} into base {f.target}, but "
            f"{first.what}{done} is base {f.target} already{more}: what comes out is no LSE of "
            "either base", hint=hint, field="base", found=f.target, allowed=other,
            location=f.where)
    elif f.called_at != f.where:
        yield Finding(
            Code.AC016, f.how,
            f"this call hands {first.what}{done}, base {f.target} already{more}, to {f.how} "
            f"({_short(f.where)}), which turns base {other} into base {f.target}: what comes "
            "out is no LSE of either base", hint=hint, field="base", found=f.target,
            allowed=other, location=f.called_at)


def _returned_finding(f: Returned) -> Finding:
    """AC008 where a combine's body returns an LSE of another base than its record says."""
    c, src = f.consumer, f.source
    told = f" with {f.told}" if f.told else ""
    done = f" (after {src.converted})" if src.converted else ""
    return Finding(
        Code.AC008, c.last,
        f"{c.last}{told} returns {src.what}{done}, base {src.base}, but its record "
        f"({c.label}) says the LSE it returns is base {f.expected}: its callers convert by the "
        "record", hint=f"convert the returned LSE back to base {f.expected} (or correct the "
        "record to what the function returns)", field="output.lse_base", found=src.base,
        allowed=f.expected, location=f.where)


def _mixed_finding(f: Mixed) -> Finding:
    """AC023 where a line adds or subtracts LSEs of two known bases."""
    a, b = f.left[0], f.right[0]
    verb, to = ("adds", "to") if f.op == "+" else ("subtracts", "from")
    after = [f", after {s.converted}" if s.converted else "" for s in (a, b)]
    return Finding(
        Code.AC023, "arithmetic",
        f"this line {verb} {b.what} (base {b.base}{after[1]}) {to} {a.what} (base "
        f"{a.base}{after[0]}): the result is in neither base's units",
        hint="convert one side first (× ln 2 turns base 2 into e, × log2 e turns e into 2)",
        field="base", found=b.base, allowed=str(a.base), location=f.where)


def _computed_finding(f: Computed) -> Finding:
    """AC008 where a producer's body hands back an LSE of another base than its record."""
    src = f.source
    done = f" (after {src.converted})" if src.converted else ""
    return Finding(
        Code.AC008, f.function,
        f"{f.function}() hands back {src.what}{done}, base {src.base}, but its record "
        f"(producer record {f.record}) says base {f.expected}: its callers read it by the "
        "record", hint=f"compute the LSE in base {f.expected} (× ln 2 or × log2 e where it is "
        "the other), or correct the record", field="lse.base", found=src.base,
        allowed=f.expected, location=f.where)


def fact_findings(facts: Iterable[Fact], confirmed: Collection[Location] = ()
                  ) -> Iterator[Finding]:
    """The findings of what the interpreter inferred besides the uses (one per fact);
    ``confirmed``: the calls whose omitted base keyword every LSE reaching them confirms."""
    for f in facts:
        if isinstance(f, BoundReached):  # a note about the analysis itself
            yield Finding(
                Code.AC033, f.function,
                f"the analysis of {f.function} reached a bound ({f.kind}): {f.detail}",
                hint="split the function, or lint it with the rest of its package; what was "
                     "widened holds every LSE it may hold, but the bases it held are not read",
                field="analysis", found=f.kind, allowed="within the bounds", location=f.where)
        elif isinstance(f, Weighed):
            first = f.sources[0]
            yield Finding(
                Code.AC023, f.name,
                f"{first.what} is base {first.base} but {f.fn} weighs it as base {f.reads} "
                "(a hand-written merge of LSEs)"
                + (f" (and {len(f.sources) - 1} more source(s))" if len(f.sources) > 1 else ""),
                hint="exponentiate in the LSE's own base (torch.exp for natural log, "
                     "torch.exp2 for base 2), or convert it first (× ln 2 or × log2 e)",
                field="base", found=first.base, allowed=f.reads, location=f.where)
        elif isinstance(f, Misconverted):
            yield from _misconverted(f)
        elif isinstance(f, Returned):
            yield _returned_finding(f)
        elif isinstance(f, Mixed):
            yield _mixed_finding(f)
        elif isinstance(f, Computed):
            yield _computed_finding(f)
        elif isinstance(f, Omitted):
            c = f.consumer
            yield Finding(
                Code.AC022, c.last, f"{c.last}(...) omits {f.keyword} and silently gets the "
                f"default base {f.default} ({c.label})",
                hint=f"pass {f.keyword}= read from the backend (e.g. impl.lse_base_on_e)",
                field=f.keyword, allowed=f"{f.keyword}=<backend's base>", location=f.where,
                escalation="confirmed" if f.where in confirmed else None)
        elif isinstance(f, Dispatched):
            p, cb = f.producer, f.call_base
            yield Finding(
                Code.AC028, p.last,
                f"{p.last}(...) returns an LSE but leaves its base to dispatch on some path "
                f"({cb.keyword} not pinned"
                f"{', ' + cb.default_by + ' not pinned' if cb.default_by else ''}): the kernel "
                f"picked at run time decides between base {' and '.join(cb.bases())} "
                f"(producer record {p.record})",
                hint=f"select an explicit base for stable units: pass {cb.pass_hint()}",
                field=cb.keyword, found=None, allowed=cb.pass_hint(), location=f.where)
        elif isinstance(f, Disagreed):
            c = f.consumer
            why = disagreement(sorted(c.agreed, key=lambda x: x.record), f.versions)
            yield Finding(
                Code.AC029, c.last, f"{c.last}: {why}: only what they agree on is used",
                hint='set [tool.attn-contracts] versions = { <library> = '
                '"<version>" } (or lint the installed package with its dist-info); where it is '
                "set, import the function by its module path, or fix the overlapping records",
                field="versions", allowed="a known library version", location=f.where)
