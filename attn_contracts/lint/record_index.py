"""An index over records: what the linter knows about functions, read from records (never
hard-coded in a rule).

Producers (:class:`~attn_contracts.records.CapabilityRecord` with ``calls``) say which calls return
an LSE and in which base; consumers (:class:`~attn_contracts.consumer.ConsumerRecord`) say which
calls read one, where its LSE goes in and how the base is chosen. They come from the built-in
catalog and from the linted project's own record files (``[tool.attn-contracts] record-files``,
or any TOML file of the set with ``[[record]]``/``[[consumer]]`` tables). The old
``combine-functions``/``base-keywords`` settings become keyword consumers of unknown base: they
feed the literal-base rule (``AC003``) and nothing else.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from pathlib import Path
from typing import Any
from typing import TypeVar

from attn_contracts.call_base import CallBase
from attn_contracts.call_base import literal_key
from attn_contracts.consumer import ConsumerRecord
from attn_contracts.consumer import FixedBase
from attn_contracts.consumer import KeywordBase
from attn_contracts.findings import Code
from attn_contracts.findings import Finding
from attn_contracts.findings import Location
from attn_contracts.records import CapabilityRecord
from attn_contracts.sources import RECORD_TABLES
from attn_contracts.sources import FileReadError
from attn_contracts.sources import is_record_document
from attn_contracts.sources import read_file
from attn_contracts.sources import records_of
from attn_contracts.sources import split_roles
from attn_contracts.versions import effective_range
from attn_contracts.versions import in_range

__all__ = ["Consumer", "Knowledge", "Producer", "agreed_consumer", "call_literals",
           "disagreement", "fitting_signature", "is_record_document", "narrow_producers",
           "read_record_document"]

RECORD_KEYS = RECORD_TABLES


def read_record_document(doc: dict[str, Any], path: str, text: str = "",
                         ) -> tuple[list[CapabilityRecord], list[ConsumerRecord], list[Finding]]:
    """Every producer and consumer record of one parsed TOML document; bad ones are findings
    located at their ``name = ...`` line (the one reader, :func:`attn_contracts.sources.records_of`)."""
    recs, findings = records_of(doc, path=path, text=text, label=True)
    producers, consumers = split_roles(recs)
    return producers, consumers, findings


@dataclass(frozen=True)
class Consumer:
    """One callable that reads an LSE: a record's call, or a legacy ``combine-functions`` name."""

    function: str  # dotted path as in the record
    record: str  # record name ("" for a legacy setting)
    lse_args: tuple[str, ...]  # parameter names or positions ("1")
    #: FixedBase, KeywordBase, or None (legacy: keyword(s) of unknown meaning)
    base: FixedBase | KeywordBase | None
    keywords: tuple[str, ...]  # keywords that carry the base
    #: records of one name that disagree (version unknown): the rules use what they agree on
    agreed: tuple[Consumer, ...] = ()
    #: the merged LSE it returns (second in its result): "2", "e", "input" (the base it read), or
    #: None (no LSE returned)
    returns_base: str | None = None
    #: the record's library and the releases this call holds for (``AC029`` names them)
    library: str = ""
    versions: str = ""

    @property
    def last(self) -> str:
        return self.function.rpartition(".")[2]

    @property
    def owner_class(self) -> str | None:
        """``flashinfer.cascade.MergeState.run`` → ``MergeState``: a method, matched only on a
        receiver built from that class."""
        parts = self.function.split(".")
        return parts[-2] if len(parts) >= 2 and parts[-2][:1].isupper() else None

    def base_of(self, literal: str) -> str | None:
        if self.agreed:
            return _common(c.base_of(literal) for c in self.agreed)
        if isinstance(self.base, FixedBase):
            return self.base.base
        if isinstance(self.base, KeywordBase):
            return self.base.base_of(literal)
        return None

    @property
    def fixed_base(self) -> str | None:
        if self.agreed:
            return _common(c.fixed_base for c in self.agreed)
        return self.base.base if isinstance(self.base, FixedBase) else None

    @property
    def default_base(self) -> str | None:
        """The base a call that omits the keyword gets (a fixed base counts)."""
        if self.agreed:
            return _common(c.fixed_base or c.default_base for c in self.agreed)
        return self.base.default_base if isinstance(self.base, KeywordBase) else None

    @property
    def label(self) -> str:
        if self.agreed:
            return (f"{self.last} (consumer records {', '.join(c.record for c in self.agreed)}, "
                    "which agree on this)")
        return f"{self.last} (consumer record {self.record})" if self.record else self.last


def disagreement(records: Iterable[Consumer], versions: Mapping[str, str]) -> str:
    """Why records of one name are all in play (``AC029``): the linted tree's release of their
    library is unknown, or it is known and their ranges overlap there (one function), or they
    are functions of one name that the call does not tell apart."""
    found = list(records)
    libraries = sorted({c.library for c in found})
    known = {lib: versions[lib] for lib in libraries if lib in versions}
    listed = ", ".join(f"{c.record} ({c.function}{f' {c.versions}' if c.versions else ''})"
                       for c in found)
    if len(known) < len(libraries):
        missing = ", ".join(lib for lib in libraries if lib not in known)
        return (f"consumer records {listed} disagree on its base and the linted tree's release "
                f"of {missing} is unknown, so it does not pick one")
    at = ", ".join(f"{lib} {v}" for lib, v in known.items())
    if len({c.function for c in found}) == 1:
        return (f"consumer records {listed} disagree on its base and all hold for {at}: their "
                "ranges overlap (a catalog defect: tools/check_catalog.py refuses that)")
    return (f"consumer records {listed} disagree on its base and all hold for {at}: the call "
            "does not say which of these functions it is")


def _common(values: Iterable[str | None]) -> str | None:
    found = set(values)
    return found.pop() if len(found) == 1 else None


@dataclass(frozen=True)
class Producer:
    """A call that returns an LSE of a known base when called with ``when`` (or of the base
    its arguments choose, ``call_base``), possibly into an out buffer (``lse_out``)."""

    function: str
    record: str
    base: str
    when: tuple[tuple[str, str], ...]
    lse_index: int | None  # None: the result holds no LSE (only lse_out buffers do)
    call_base: CallBase | None = None
    lse_out: tuple[str, ...] = ()
    layout: str | None = None

    def bases_for(self, call: ast.Call) -> tuple[str, ...]:
        """The bases a call can return: one where its literal arguments decide, else every
        base its ``call_base`` allows."""
        if self.call_base is None:
            return (self.base,)
        chosen = self.call_base.resolve(call_literals(call))
        return (chosen,) if chosen is not None else self.call_base.bases()

    @property
    def last(self) -> str:
        return self.function.rpartition(".")[2]

    @property
    def owner_class(self) -> str | None:
        parts = self.function.split(".")
        return parts[-2] if len(parts) >= 2 and parts[-2][:1].isupper() else None


Rec = TypeVar("Rec", Consumer, Producer)


def agreed_consumer(found: list[Consumer]) -> tuple[Consumer | None, bool]:
    """One consumer for the records a call matched: the one, or, where records for one name
    disagree (the tree's release unknown), a consumer of what they agree on; the flag says
    whether they disagreed (an ``AC029`` note). Records that read their LSE from different
    arguments match nothing."""
    if not found:
        return None, False
    if len({(c.base, frozenset(c.lse_args), c.returns_base) for c in found}) == 1:
        return found[0], False
    if len({frozenset(c.lse_args) for c in found}) != 1:
        return None, False
    records = {c.record: c for c in found}
    if len(records) == 1:
        return found[0], False
    returned = {c.returns_base for c in found}
    return replace(found[0], record="", agreed=tuple(records.values()),
                   keywords=tuple(sorted({k for c in found for k in c.keywords})),
                   returns_base=returned.pop() if len(returned) == 1 else None), True


def fitting_signature(found: list[Consumer], params: Iterable[str], open_kwargs: bool,
                      ) -> list[Consumer]:
    """Of the records of one function (releases apart: the tree's own is not known), those its
    definition in the linted files fits: where it takes a base keyword a record names, the
    records of that keyword, not one of a fixed base (a release before the keyword came); a
    record of a keyword it does not take (and no ``**kwargs``) describes another release.
    All of them where none fits, or only one was found."""
    if len(found) < 2:
        return found
    names = set(params)
    takes = any(isinstance(c.base, KeywordBase) and c.base.keyword in names for c in found)
    fits = [c for c in found if isinstance(c.base, KeywordBase) and
            (c.base.keyword in names or open_kwargs)] if takes else \
        [c for c in found if not isinstance(c.base, KeywordBase) or open_kwargs]
    return fits or found


def narrow_producers(found: Iterable[Producer], given: Mapping[str, str], opaque: bool,
                     ) -> list[Producer]:
    """The records a call can be, by its arguments (``given``: keyword → literal source text, or
    ``"<expr>"``; ``opaque``: ``**kwargs`` the linter cannot read): a record whose ``when`` the
    call contradicts (``return_lse=False``, or a keyword it does not pass) is dropped, and of
    records whose conditions nest, a call that satisfies the narrower one is only that one
    (``run(return_lse=True, return_lse_base_on_e=True)`` is the ``+basee`` record's call).
    Records that differ only in a condition the call leaves to an expression all stay."""
    kept: list[tuple[Producer, bool]] = []
    for p in found:
        exact = True
        for kw, literal in p.when:
            value = given.get(kw)
            if value is None:
                if not opaque:
                    break
                exact = False
            elif value == "<expr>":
                exact = False
            elif literal_key(value) != literal_key(literal):
                break
        else:
            kept.append((p, exact))
    return [p for p, _ in kept if not any(
        q_exact and set(p.when) < set(q.when) for q, q_exact in kept)]


@dataclass
class Knowledge:
    """Producers and consumers by the last name of their function."""

    consumers: dict[str, list[Consumer]] = field(default_factory=dict)
    producers: dict[str, list[Producer]] = field(default_factory=dict)
    #: follow every file, not only those naming a known function (benchmarks of the worst case)
    follow_all: bool = False
    #: library → the linted tree's release the records were chosen for
    versions: dict[str, str] = field(default_factory=dict)
    _names: frozenset[str] | None = field(default=None, repr=False, compare=False)
    _roots: dict[str, frozenset[str]] | None = field(default=None, repr=False, compare=False)
    _base_keywords: frozenset[str] | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_records(cls, producers: Iterable[CapabilityRecord] = (),
                     consumers: Iterable[ConsumerRecord] = (), *,
                     legacy_functions: Iterable[str] = (),
                     legacy_keywords: Iterable[str] = (),
                     versions: Mapping[str, str] | None = None) -> Knowledge:
        """``versions``: library → the linted tree's release; a record or call whose range
        excludes it is left out (an unknown version keeps every one)."""
        have = dict(versions or {})
        k = cls(versions=have)
        for rec in consumers:
            if not in_range(rec.library_version, have.get(rec.library)):
                continue
            for call in rec.calls:
                if not in_range(call.versions, have.get(rec.library)):
                    continue
                kws = (rec.base.keyword,) if isinstance(rec.base, KeywordBase) else ()
                k.add_consumer(Consumer(call.function, rec.name, call.lse_args, rec.base, kws,
                                        returns_base=rec.output.lse_base
                                        if rec.output.returns_lse else None,
                                        library=rec.library, versions=effective_range(
                                            rec.library_version, call.versions)))
        for prod in producers:
            base = prod.lse_base
            if base is None or not in_range(prod.library_version, have.get(prod.library)):
                continue
            for pcall in prod.calls:
                if in_range(pcall.versions, have.get(prod.library)):
                    layout = getattr(prod.lse, "layout", None)
                    k.add_producer(Producer(pcall.function, prod.name, base, pcall.when,
                                            pcall.result_index, pcall.base, pcall.lse_out,
                                            layout))
        legacy_kws = tuple(legacy_keywords)
        for fn in legacy_functions:
            if fn not in k.consumers:  # a record says more than a name in a setting
                k.add_consumer(Consumer(fn, "", (), None, legacy_kws))
        return k

    def names_in(self, text: str, package: str = "") -> frozenset[str]:
        """The names of :attr:`names` whose record's top-level package the text names too, or
        is the file's own (a file that never mentions ``flashinfer`` calls none of FlashInfer's
        ``merge_state``)."""
        if self._roots is None:
            roots: dict[str, set[str]] = {}
            ends: list[Consumer | Producer] = [
                *(r for g in self.consumers.values() for r in g),
                *(r for g in self.producers.values() for r in g)]
            for r in ends:
                roots.setdefault(r.owner_class or r.last, set()).add(r.function.partition(".")[0])
            self._roots = {n: frozenset(v) for n, v in roots.items()}
        return frozenset(n for n, pkgs in self._roots.items()
                         if n in text and (package in pkgs or any(p in text for p in pkgs)))

    @property
    def base_keywords(self) -> frozenset[str]:
        """The keywords by which a consumer is told its base that say so by their name
        (``is_lse_base_on_e``, ``IS_BASE_E``; not a plain ``base``, a word of many
        unrelated calls): a line passing one passes a base on, wherever it goes."""
        if self._base_keywords is None:  # (asked once per file: kept)
            self._base_keywords = frozenset(
                kw for group in self.consumers.values() for c in group for kw in c.keywords
                if "base" in kw.lower() and kw.lower() != "base")
        return self._base_keywords

    @property
    def names(self) -> frozenset[str]:
        """The names a file must contain for any record's call to be in it: a method's class
        (``run`` alone is in every file; a call of ``BatchDecodeWithPagedKVCacheWrapper.run``
        needs the class in the file), else the function's last name."""
        if self._names is None:
            names = {c.owner_class or c.last for group in self.consumers.values() for c in group}
            names |= {p.owner_class or p.last for group in self.producers.values() for p in group}
            self._names = frozenset(names)
        return self._names

    def find(self, qualname: str | None, last: str, owner: str | None,
             ) -> tuple[list[Consumer], list[Producer]]:
        """The records a call of ``last`` can be. ``qualname``: what the call resolved to
        (``vllm.v1.attention.ops.dcp.cp_lse_ag_out_rs``), or None where the callee is not
        known; ``owner``: the class of the receiver, for a method (a method record matches only
        a receiver of its class). A resolved call matches its exact path, else a record of the
        same top-level package (a re-export, a moved path); an engine's own ``merge_state`` is
        never FlashInfer's."""
        return (self._pick(self.consumers.get(last, []), qualname, owner),
                self._pick(self.producers.get(last, []), qualname, owner))

    @staticmethod
    def _pick(found: list[Rec], qualname: str | None, owner: str | None) -> list[Rec]:
        found = [r for r in found if r.owner_class == owner or (
            r.owner_class is None and owner is None)]
        if qualname is None or not found:
            return found
        exact = [r for r in found if r.function == qualname]
        if exact:
            return exact
        package = qualname.partition(".")[0]
        return [r for r in found if r.function.partition(".")[0] == package]

    def add_consumer(self, c: Consumer) -> None:
        self.consumers.setdefault(c.last, []).append(c)
        self._names = self._roots = self._base_keywords = None

    def add_producer(self, p: Producer) -> None:
        self.producers.setdefault(p.last, []).append(p)
        self._names = self._roots = None

    @staticmethod
    def builtin() -> tuple[list[CapabilityRecord], list[ConsumerRecord]]:
        """The built-in catalog's producers and consumers."""
        from attn_contracts.registry import Registry

        reg = Registry()
        return list(reg.records()), list(reg.consumers())


def call_literals(call: ast.Call) -> dict[str, str]:
    """A call's keyword arguments that are literals, as Python source (``"'basee'"``); an
    argument that is an expression is ``"<expr>"`` (present, value unknown)."""
    out = {}
    for kw in call.keywords:
        if kw.arg is not None:
            out[kw.arg] = ast.unparse(kw.value) if isinstance(kw.value, ast.Constant) else "<expr>"
    return out


def load_project_records(files: Iterable[str]) -> tuple[list[CapabilityRecord],
                                                         list[ConsumerRecord], list[Finding]]:
    """The records of the files ``record-files`` names, through the one guarded reader (a FIFO,
    an oversized or missing file is one AC000); a bad record in them is a finding at its line,
    never a silent drop from the flow rules."""
    producers: list[CapabilityRecord] = []
    consumers: list[ConsumerRecord] = []
    findings: list[Finding] = []
    for f in files:
        p = Path(f)
        try:
            recs, found = read_file(p, label=True)
        except FileReadError as err:
            findings.append(Finding(Code.AC000, p.name, f"record file named in record-files "
                                    f"cannot be read: {err}", location=Location(str(p), 1, 1)))
            continue
        prods, cons = split_roles(recs)
        producers += prods
        consumers += cons
        findings += found
    return producers, consumers, findings
