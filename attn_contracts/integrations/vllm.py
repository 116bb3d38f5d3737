"""vLLM: its attention backends mapped to the records of the kernels they call, checked.

vLLM names a backend by an ``AttentionBackendEnum`` member (``FLASHINFER_MLA``); the member's class
gives an impl class (``get_impl_cls()``) whose class attributes declare the LSE it returns
(``can_return_lse_for_decode``, ``lse_base_on_e``). What the impl really returns is what the kernels
it calls return, and which kernels depends on the configuration (under DCP, ``FlashInferMLAImpl``
forces the cute-dsl decode). The mapping (:func:`mapping_for`: which kernel records each
backend's impl calls with and without DCP, and which combine functions, consumer records, it feeds
with what keyword — a literal at the call site, or the impl's own attribute) is derived from the
sources of the vLLM at hand (:mod:`attn_contracts.integrations.vllm_source`: the installed one, or
a tree given as ``source=``), for any release; what its code cannot say is cited data in
``backends/catalog/engines/vllm.toml``.

- :func:`check` / :func:`report`: every backend of the installed vLLM, its declaration compared
  with the mapped kernels and every edge checked. A declaration that contradicts a kernel is an
  error naming the class, the attribute, the record and the source line; an inherited default the
  kernels confirm is a note; a backend the mapping does not know is a warning.
- :func:`register` (:mod:`attn_contracts.integrations.vllm_plugin`, the ``vllm.general_plugins``
  entry point) wraps vLLM's own DCP check so that at startup, with DCP on,
  :func:`validate_vllm_config` checks the layers' backends and ``validate_startup`` runs over the
  DCP group (every rank one verdict), failing with one
  :class:`~attn_contracts.findings.ContractError` before the first request.
  :func:`validate_vllm_startup` is the same as a plain call. At startup only what the
  configuration being started reaches is refused: a declaration nothing in it reads (FLASHINFER's
  inherited ``lse_base_on_e``, which its combine never reads) is one warning
  (:mod:`attn_contracts.integrations._reach`); a backend no mapping knows is a warning.

vLLM and torch are imported only inside these functions.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any
from typing import Literal

from attn_contracts.bridge import declaration_findings
from attn_contracts.checks import check_edge
from attn_contracts.checks import resolve_call_base
from attn_contracts.consumer import ConsumerRecord
from attn_contracts.consumer import KeywordBase
from attn_contracts.findings import Code
from attn_contracts.findings import ContractError
from attn_contracts.findings import Finding
from attn_contracts.findings import Location
from attn_contracts.findings import Severity
from attn_contracts.findings import location_text
from attn_contracts.integrations import vllm_mode
from attn_contracts.integrations._reach import split_by_reach
from attn_contracts.integrations._report import EngineReport
from attn_contracts.integrations.vllm_impl import ImplFacts
from attn_contracts.integrations.vllm_impl import as_facts
from attn_contracts.integrations.vllm_impl import from_source
from attn_contracts.integrations.vllm_impl import read_attr
from attn_contracts.integrations.vllm_mode import MODE_ENV
from attn_contracts.integrations.vllm_mode import Mode
from attn_contracts.integrations.vllm_mode import log
from attn_contracts.integrations.vllm_mode import log_once
from attn_contracts.records import CapabilityRecord
from attn_contracts.records import LseSpec
from attn_contracts.registry import Registry
from attn_contracts.registry import UnknownRecordError
from attn_contracts.versions import in_range

if TYPE_CHECKING:  # a derivation's type, read without importing the lint at start
    from attn_contracts.integrations.vllm_source import Derived

__all__ = [
    "MODE_ENV",
    "OVERRIDES",
    "BackendMap",
    "BackendReport",
    "Config",
    "Edge",
    "VllmMapping",
    "check",
    "dcp_group",
    "mapping_for",
    "report",
    "validate_vllm_config",
    "validate_vllm_startup",
]

RETURNS_ATTR = "can_return_lse_for_decode"
BASE_ATTR = "lse_base_on_e"
#: the impl attributes that declare its LSE (a finding about one names it as its ``field``)
DECLARATIONS = (RETURNS_ATTR, BASE_ATTR)


@dataclass(frozen=True)
class Edge:
    """One call site where the impl's LSE reaches a combine function.

    ``keyword``: the literal the call passes for the consumer's base keyword (``"False"``), None when
    it omits it (the consumer's default applies). ``from_attr``: the call passes the impl's own
    attribute instead (``is_lse_base_on_e=self.impl.lse_base_on_e``), so the declaration *is* the
    keyword. ``transform``: what the call does to the LSE on the way (``transpose``: ``[H, T]`` →
    ``[T, H]``; ``flatten``: ``[B, H, q_len]`` → ``[B·q_len, H]``; ``unread``: a derived edge, whose
    layout is not read from the code, so it is not checked). ``row_mask``: the call passes the
    local lengths (``seq_lens`` with ``query_start_loc``) that mask empty shards.
    ``producers``: the kernel records whose LSE reaches this call, with the base it has there
    where the code pins it (after a conversion: the converted base); empty: every kernel of the
    configuration."""

    consumer: str
    source: str
    keyword: str | None = None
    from_attr: str | None = None
    transform: Literal["none", "transpose", "flatten", "unread"] = "none"
    row_mask: bool = False
    producers: tuple[tuple[str, str | None], ...] = ()
    #: the call passes ``not self.impl.<from_attr>``
    negated: bool = False
    #: the call, where the edge is derived from the sources (``source`` cites it as text); None
    #: for an edge written by hand, whose ``source`` is its citation. Not compared: a derived
    #: edge equals the same edge written by hand
    at: Location | None = field(default=None, compare=False)


@dataclass(frozen=True)
class Config:
    """The kernels an impl calls in one configuration, and the edges their LSE takes.

    ``call``: the keyword arguments (Python values) the impl passes its kernels, where a record's
    base is chosen by them (FlashInfer's MLA decode: ``backend='cute-dsl'``); cited in
    ``source``."""

    records: tuple[str, ...]
    source: str
    edges: tuple[Edge, ...] = ()
    note: str = ""
    call: tuple[tuple[str, object], ...] | None = None
    #: derived: per record, the bases its calls pin after conversions (``()``: none, the base
    #: is left to the library's dispatch or an expression); a record not named: its own base
    observed: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def reads(self) -> tuple[str, ...]:
        """The impl's declaration attributes this configuration reads: ``can_return_lse_for_decode``
        always (``AttentionImplBase.__init__`` derives ``need_to_return_lse_for_decode`` from it,
        which the kernels and vLLM's own DCP check read: v1/attention/backend.py:L872-L874 at
        0.32), and each attribute an edge passes a combine as its base keyword."""
        return tuple(dict.fromkeys((RETURNS_ATTR, *(e.from_attr for e in self.edges
                                                    if e.from_attr))))


@dataclass(frozen=True)
class BackendMap:
    """One ``AttentionBackendEnum`` member: its impl class and what it calls with and without DCP.

    ``declared``: where the impl class declares its LSE attributes (file:line of that release), for
    the report when the class cannot be imported on this machine."""

    impl: str
    dcp: Config
    single: Config
    declared: str = ""


@dataclass(frozen=True)
class VllmMapping:
    """The mapping of the releases in ``versions`` (a PEP 440 specifier); ``read``: the release
    whose sources were read. ``readers``: every place the release reads an impl's
    ``lse_base_on_e`` (``file:line (what)``), named by a latent declaration's warning.
    ``base_attrs``: the release's base attribute (none before 0.25: each combine is told the
    base at its call). ``unmapped``: members with no impl class to check, and why.
    ``edge_findings``: the linter's findings at a member's edges that no record describes (a
    merged LSE fed on). ``notes``: what the derivation says of itself (an unseen release)."""

    versions: str
    read: str
    backends: dict[str, BackendMap]
    readers: tuple[str, ...] = ()
    base_attrs: tuple[str, ...] = (BASE_ATTR,)
    unmapped: dict[str, str] = field(default_factory=dict)
    edge_findings: dict[str, list[Finding]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    #: the tree's releases the catalog was not verified on (one ``AC034`` note in the report)
    unverified: tuple[str, ...] = ()
    #: the impl classes of a source tree (no import), as the check reads an impl
    impls: dict[str, ImplFacts] = field(default_factory=dict)


#: mapping entries that replace the derived one of a member (a test's, an out-of-tree backend's)
OVERRIDES: dict[str, BackendMap] = {}


# --- the report ----------------------------------------------------------------------------------
@dataclass
class BackendReport(EngineReport):
    """One backend of the installed vLLM: what it declares, what it calls, and every finding.

    ``reads``: the declaration attributes the reported configuration reads (:meth:`Config.reads`;
    empty for a backend no mapping knows); ``kernels``: its records as its calls leave their
    LSE (a base the call pins, read from the sources, resolved); neither is part of the JSON
    row."""

    reads: tuple[str, ...] = ()
    kernels: tuple[CapabilityRecord, ...] = ()


_CATALOG: list[Registry] = []


def _catalog() -> Registry:
    """The built-in catalog, read once per process (a fresh ``Registry()`` parses every catalog
    file again: at startup, tens of milliseconds each time)."""
    if not _CATALOG:
        _CATALOG.append(Registry())
    return _CATALOG[0]


def installed_version() -> str:
    """The installed vLLM's version (``vllm.__version__``; imports vLLM)."""
    import vllm

    return str(vllm.__version__)


def mapping_for(source: str | Path | None = None, *, version: str | None = None,
                scope: tuple[str, ...] | None = None, cache: bool = False) -> VllmMapping:
    """The mapping derived from the vLLM sources at ``source`` (the folder holding ``vllm``;
    default: the installed vLLM's, found without importing it), for the release ``version``
    (default: what the tree says); ``cache``: through the on-disk cache of derived mappings
    (:mod:`~attn_contracts.integrations.vllm_cache`, what startup does). A folder without
    vLLM is a ``ValueError`` naming it."""
    from attn_contracts.integrations import vllm_source

    if source is None:
        source = _installed_root()
    derived = vllm_source.derive(source, version=version, scope=scope, cache=cache)
    made = _MAPPED.get(id(derived))
    if made is None or made[0] is not derived:  # one mapping per derivation (they are cached)
        made = _MAPPED[id(derived)] = (derived, _mapping(derived))
    return made[1]


_MAPPED: dict[int, tuple[Derived, VllmMapping]] = {}


def _installed_root() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("vllm")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("No module named 'vllm'")
    return Path(next(iter(spec.submodule_search_locations))).parent


_SINGLE = Config((), "no DCP: need_to_return_lse_for_decode is False (AttentionImplBase.__init__ "
                 "derives it from can_return_lse_for_decode and the DCP world size), so no decode "
                 "LSE is consumed", note="no LSE consumed")


def _mapping(derived: Derived) -> VllmMapping:
    backends: dict[str, BackendMap] = {}
    unmapped: dict[str, str] = {}
    impls: dict[str, ImplFacts] = {}
    consumers = _consumers_at(derived.version)
    for name, m in derived.members.items():
        if not m.impl:
            unmapped[name] = m.why
            continue
        edges = tuple(Edge(consumers.get(e.function, e.consumer),
                           str(e.where).removeprefix("vllm/"), keyword=e.keyword,
                           from_attr=e.from_attr, transform="unread", row_mask=e.row_mask,
                           producers=e.producers, negated=e.negated, at=e.where)
                      for e in m.edges)
        where = m.call_source or ", ".join(w.removeprefix("vllm/") for w in
                                           m.kernels_at.split(", ") if w) or "no kernel call found"
        returns = m.attrs.get(RETURNS_ATTR)
        records, note = m.records, "" if m.records else "no kernel a record knows is called"
        if returns is None or returns.value is not True:
            # vLLM's own DCP check refuses an impl that returns no decode LSE: no kernel's LSE
            # is combined under DCP (its prefill merges, edges below, still are)
            records, note = (), "declares no decode LSE: vLLM refuses it under DCP"
        backends[name] = BackendMap(
            impl=m.impl, declared=", ".join(f"{a}: {str(v.where).removeprefix('vllm/')}"
                                            for a, v in m.attrs.items()),
            dcp=Config(records, where, edges=edges, call=m.call, observed=m.observed,
                       note=note),
            single=_SINGLE)
        impls[name] = from_source(m, derived.returns_attrs + derived.base_attrs)
    version = derived.version or "?"
    return VllmMapping(
        versions=f"=={version}" if derived.version else "(unknown)",
        read=f"vllm {version} sources at {derived.root}", backends=backends,
        readers=tuple(f"vllm/{r.removeprefix('vllm/')}" for r in derived.readers),
        base_attrs=derived.base_attrs, unmapped=unmapped, edge_findings=derived.edge_lint,
        notes=tuple(derived.notes), unverified=derived.unverified, impls=impls)


def _consumers_at(version: str | None) -> dict[str, str]:
    """function → the consumer record for it at ``version`` that names the release in its
    ``library_version`` (a record of that release's code), where the catalog has one; else the
    linter's record (one for every release) stays. A record of the CPU build's fallback
    (``.cpu``) is not one: the tree may be the GPU wheel."""
    if not version:
        return {}
    out: dict[str, str] = {}
    for c in _catalog().consumers():
        if c.library != "vllm" or not c.library_version or c.name.endswith(".cpu") or \
                not in_range(c.library_version, version, unparsed=False):
            continue
        for call in c.calls:
            if in_range(call.versions, version, unparsed=False):
                out.setdefault(call.function, c.name)
    return out


def _cite(record: CapabilityRecord) -> str:
    return record.source if len(record.source) <= 160 else record.source[:157] + "..."


def _declaration(impl: ImplFacts, backend: str, kernels: Sequence[CapabilityRecord],
                 base_attrs: Sequence[str] = (BASE_ATTR,)) -> tuple[dict[str, Any], list[Finding]]:
    """The impl's declared flags, and what the bridge and the mapped kernels say of them.
    ``impl``: the record of its class (the static report), or of the object vLLM built (at
    startup: what the object answers, its own attributes and properties, is what vLLM reads).
    ``base_attrs``: the release's base attribute; none (vLLM 0.24): the base is told each
    combine at its call, so only the edges judge it."""
    returns = impl.value(RETURNS_ATTR)
    base = impl.attr(BASE_ATTR)
    base_value, owner, where = base.value, base.owner_name, base.where
    r_where = impl.attr(RETURNS_ATTR).where
    declared: dict[str, Any] = {
        RETURNS_ATTR: returns, "returns_declared_at": location_text(r_where),
        BASE_ATTR: base_value, "base_declared_at": location_text(where),
        "base_owner": owner,
        "base_inherited": impl.inherited(BASE_ATTR),
    }
    subject = f"vllm.{backend.lower()}"
    lse_kernels = [k for k in kernels if isinstance(k.lse, LseSpec)]
    if not lse_kernels:
        return declared, []
    # the declaration as the bridge judges a class's (its other LSE facts are the mapped
    # kernel's, never a default): an attribute nothing sets reads as False / absent
    _, _, bridge = declaration_findings(
        subject, "vllm", impl.name, RETURNS_ATTR, BASE_ATTR,
        returns=returns if impl.is_set(RETURNS_ATTR) else False, base=base_value,
        base_owner=owner, inherited=impl.inherited(BASE_ATTR),
        owner_returns=impl.read_on(base.owner, RETURNS_ATTR, False) if base.owner else False)
    findings: list[Finding] = []
    if returns is not True:
        findings.append(Finding(
            Code.AC006, subject, f"{impl.name}.{RETURNS_ATTR}={returns!r} "
            f"({location_text(r_where)}), but under "
            f"DCP it returns the LSE of {', '.join(k.name for k in lse_kernels)}",
            field=RETURNS_ATTR, found=returns, allowed="True", location=r_where))
        return declared, findings
    if not base_attrs:
        declared["base_declared_at"] = "no base attribute in this release"
        return declared, []
    if not isinstance(base_value, bool):
        return declared, bridge  # AC001 (no base anywhere) or AC012 (not a bool): errors as they are
    declared_base = "e" if base_value else "2"
    wrong = [k for k in lse_kernels if k.lse_base != declared_base]
    inherited = f", inherited from {owner}" if impl.inherited(BASE_ATTR) else ""
    for k in wrong:
        want = "True" if k.lse_base == "e" else "False"
        findings.append(Finding(
            Code.AC008, subject,
            f"{impl.name}.{BASE_ATTR}={base_value!r} (base {declared_base}{inherited}, "
            f"{location_text(where)}) contradicts {k.name}, which emits base-{k.lse_base} LSE ({_cite(k)})",
            hint=f"set {BASE_ATTR} = {want} on {impl.name}", field=BASE_ATTR, found=base_value,
            allowed=want, location=where))
    for f in bridge:  # AC002: the base is only a default of a class that returns no LSE
        if wrong:  # an error: the default is wrong for the kernels it calls
            findings.append(replace(f, message=f"{f.message} ({location_text(where)})",
                                    location=where))
        else:
            findings.append(replace(
                f.escalated("confirmed"), location=where,
                message=f"{f.message} ({location_text(where)}); the mapped kernels "
                        f"({', '.join(k.name for k in lse_kernels)}) confirm base {declared_base}"))
    return declared, findings


# Severities: an edge finding has its code's default (RULES: base and layout errors, empty rows,
# limits and dtype warnings), not check_edge's `from-records` escalation; a gap in the mapping
# (AC013, AC014) is a warning here, not the registry's error, so the engine is told and still
# starts (the rule table's `mapping-gap` escalation, named at each such finding).


def _through(record: CapabilityRecord, transform: str) -> CapabilityRecord:
    """The producer's record as the consumer receives it, after the call site's transform."""
    spec = record.lse
    if transform == "none" or not isinstance(spec, LseSpec):
        return record
    layout = "token_head"
    if transform == "transpose":
        layout = "token_head" if spec.layout == "head_token" else "head_token"
    lse = spec.model_copy(update={"layout": layout, "q_len_axis": False})
    return record.model_copy(update={"lse": lse})


def _edge_site(edge: Edge) -> Location:
    """Where an edge's findings are: a derived edge's call; a hand-written one's is what its
    citation names first (``file.py:L10-L12 (what)``), the data's own text, a unit (no line
    is read out of it)."""
    return edge.at or Location("vllm/" + edge.source.split(" ", 1)[0])


def _edge_findings(impl: ImplFacts, backend: str, kernels: Sequence[CapabilityRecord],
                   edge: Edge, consumers: dict[str, ConsumerRecord]) -> tuple[str, list[Finding]]:
    consumer = consumers.get(edge.consumer)
    subject = f"vllm.{backend.lower()}"
    if consumer is None:
        return edge.consumer, [Finding(
            Code.AC013, subject, f"edge to {edge.consumer!r}: no such consumer record",
            escalation="mapping-gap", field="consumer", found=edge.consumer)]
    literal = edge.keyword
    keyword = consumer.base.keyword if isinstance(consumer.base, KeywordBase) else None
    how = ("fixed base" if keyword is None else f"{keyword}={literal}" if literal
           else f"{keyword} omitted")
    if edge.from_attr is not None:
        value = impl.value(edge.from_attr)  # the object's answer: what the combine is told
        if edge.negated and isinstance(value, bool):
            value = not value
        literal = repr(value) if isinstance(value, bool) else None
        how = f"{keyword}={'not ' if edge.negated else ''}self.impl.{edge.from_attr} ({literal})"
    if not edge.row_mask and consumer.empty.accepts_row_mask:
        consumer = consumer.model_copy(update={
            "empty": consumer.empty.model_copy(update={"accepts_row_mask": False})})
    shown = {"none": "", "unread": ", layout not read"}.get(edge.transform, f", {edge.transform}")
    label = f"{edge.consumer} [{how}{shown}" + ("" if edge.row_mask else ", no row mask") + "]"
    findings: list[Finding] = []
    for k in _edge_producers(kernels, edge):
        produced = _through(k, edge.transform)
        if edge.transform == "unread" and isinstance(produced.lse, LseSpec):
            produced = produced.model_copy(update={"lse": produced.lse.model_copy(update={
                "layout": consumer.lse.layouts[0], "q_len_axis": False})})
        for f in check_edge(produced, consumer, keyword_value=literal):
            extra = f" at vllm/{edge.source}"
            if edge.from_attr is not None and f.code is Code.AC016:
                extra += f"; the keyword is {impl.name}.{edge.from_attr}"
            where = _edge_site(edge)
            findings.append(replace(f.escalated(None), message=f.message + extra,
                                    location=f.location or where))
    return label, findings


def _as_observed(kernels: list[CapabilityRecord], observed: dict[str, tuple[str, ...]],
                 subject: str, source: str, row: BackendReport) -> list[CapabilityRecord]:
    """The kernels as the impl's calls leave their LSE: a record whose every call converts it
    (``× ln 2``) has the converted base; one whose base no call pins (the library's dispatch, an
    expression) is left out of the declaration's judgement with an ``AC028`` warning (its base
    is decided at run time: nothing here can confirm or contradict it)."""
    out = []
    for k in kernels:
        seen = observed.get(k.name)
        if seen is None or not isinstance(k.lse, LseSpec):
            out.append(k)
            continue
        if not seen:
            row.findings.append(Finding(
                Code.AC028, subject, f"{k.name}: the impl's call leaves its LSE base to run-time "
                f"dispatch or an expression (vllm/{source.split(' ', 1)[0]}), so which base it "
                f"returns is decided at run time ({'/'.join(_record_bases(k))})",
                hint="pin the kernel's base at the call (return_lse_base=...)",
                field="producer_call", found=None,
                allowed="a pinned base"))
            continue
        if len(seen) == 1:
            # the impl's calls pin this base: the record as this engine uses it has that base,
            # and its call no longer chooses one (what startup would otherwise ask it for)
            k = k.model_copy(update={
                "lse": k.lse.model_copy(update={"base": seen[0]}),
                "calls": tuple(c.model_copy(update={"base": None}) for c in k.calls)})
        out.append(k)
    return out


def _record_bases(k: CapabilityRecord) -> list[str]:
    chosen = next((c.base for c in k.calls if c.base is not None), None)
    return list(chosen.bases()) if chosen is not None else [str(k.lse_base)]


def _edge_producers(kernels: Sequence[CapabilityRecord], edge: Edge) -> list[CapabilityRecord]:
    """The records whose LSE reaches the edge, each with the base it has there where the code
    pins it (a conversion on the way: the converted base)."""
    if not edge.producers:
        return list(kernels)
    registry = _catalog()
    out: list[CapabilityRecord] = []
    names = {k.name for k in kernels}
    for name, base in edge.producers:
        if base is None and name not in names:
            continue  # no call pins its base here (dispatch): nothing to judge it by
        try:
            rec = next((k for k in kernels if k.name == name), None) or registry.get(name)
        except UnknownRecordError:
            continue
        if base in ("e", "2") and isinstance(rec.lse, LseSpec) and rec.lse.base != base:
            rec = rec.model_copy(update={"lse": rec.lse.model_copy(update={"base": base})})
        if rec not in out:
            out.append(rec)
    return out


def _impl_of(member: Any) -> tuple[type | None, str, str]:
    """The impl class of an ``AttentionBackendEnum`` member, its name, or why it is not there."""
    try:
        backend_cls = member.get_class()
        impl = backend_cls.get_impl_cls()
    except BaseException as err:  # a backend that cannot load on this machine: a finding
        if isinstance(err, KeyboardInterrupt):
            raise
        text = f"{type(err).__name__}: {err}".splitlines()[0][:200]
        return None, "", text
    if not isinstance(impl, type):
        return None, "", f"get_impl_cls() returned {type(impl).__name__}"
    return impl, f"{impl.__module__}.{impl.__qualname__}", ""


def _report_one(name: str, found: ImplFacts | type | object | None, why: str,
                mapped: BackendMap | None, mapping: VllmMapping | None, dcp: bool,
                registry: Registry) -> BackendReport:
    """One backend's row; ``found``: its class, or the impl object vLLM built (judged by what it
    answers), or a source tree's record of its class, or None where neither loads. The check
    reads the record alone."""
    subject = f"vllm.{name.lower()}"
    impl = None if found is None else as_facts(found, _asked(mapped, dcp))
    row = BackendReport(name, impl.path if impl is not None else (mapped.impl if mapped else "?"))
    if impl is not None:
        row.declared = {RETURNS_ATTR: impl.value(RETURNS_ATTR), BASE_ATTR: impl.value(BASE_ATTR)}
    if mapped is None:
        returns = row.declared.get(RETURNS_ATTR)
        reason = mapping.unmapped.get(name, "not derived") if mapping else "no mapping"
        tail = ("; it declares no decode LSE, so vLLM refuses it under DCP" if returns is False
                else "; its LSE base is unchecked" if returns else "")
        row.findings.append(Finding(
            Code.AC013, subject, f"backend {name}: no impl class derived from the sources "
            f"({reason}){tail}" + (f" (and does not load here: {why})" if why else ""),
            escalation="mapping-gap", hint="an impl built at run time (a composite backend) "
            "or outside the sources: map it in attn_contracts.integrations.vllm.OVERRIDES with "
            "the kernels it calls", field="backend", found=name))
        return row
    config = mapped.dcp if dcp else mapped.single
    row.note = config.note
    kernels: list[CapabilityRecord] = []
    for rec in config.records:
        try:
            kernels.append(registry.get(rec))
        except UnknownRecordError:
            row.findings.append(Finding(Code.AC013, subject, f"mapped record {rec!r} is not in "
                                        f"the catalog", escalation="mapping-gap", found=rec))
    if config.call is not None:
        call = dict(config.call)
        resolved = [resolve_call_base(k, call) for k in kernels]
        kernels = [k for k, _ in resolved]
        row.findings += [replace(f, subject=subject, message=f"{f.message} (the call at vllm/"
                                 f"{config.source.split(' ', 1)[0]})")
                         for _, found in resolved for f in found]
    if config.call is None and config.observed:
        kernels = _as_observed(kernels, dict(config.observed), subject, config.source, row)
    row.records = [k.name for k in kernels]
    row.kernels = tuple(kernels)
    row.reads = config.reads()
    if impl is None:
        row.declared = {"declared_at": mapped.declared}
        row.findings.append(Finding(
            Code.AC014, subject, f"{mapped.impl} does not load on this machine ({why}); its "
            f"declaration (vllm/{mapped.declared}) is unchecked", escalation="mapping-gap",
            field="impl", found=mapped.impl))
        return row
    declared, findings = _declaration(impl, name, kernels,
                                      mapping.base_attrs if mapping else (BASE_ATTR,))
    row.declared, row.findings = declared, row.findings + findings
    consumers = {c.name: c for c in registry.consumers()}
    for edge in config.edges:
        label, found = _edge_findings(impl, name, kernels, edge, consumers)
        row.edges.append(label)
        row.findings += found
    if dcp and mapping is not None:  # merged LSEs no record describes: the linter's verdict
        row.findings += [replace(f, subject=subject, message=f"{f.message} (lint)")
                         for f in mapping.edge_findings.get(name, [])]
    return row


def _asked(mapped: BackendMap | None, dcp: bool) -> tuple[str, ...]:
    """The impl attributes the check of a row reads: the declarations, and each attribute an
    edge passes a combine as its base keyword."""
    edges = () if mapped is None else (mapped.dcp if dcp else mapped.single).edges
    return tuple(dict.fromkeys((*DECLARATIONS, *(e.from_attr for e in edges if e.from_attr))))


def report(backend: str | None = None, *, dcp: bool = True,
           overrides: dict[str, type] | None = None,
           source: str | Path | None = None) -> list[BackendReport]:
    """One :class:`BackendReport` per backend of the installed vLLM, or of the vLLM sources at
    ``source`` (the folder holding ``vllm``, read without importing it); or the one named (a
    name that is no ``AttentionBackendEnum`` member is a ``ValueError`` listing the known ones).

    ``overrides``: impl classes to use instead of the enum's (tests, out-of-tree backends)."""
    if source is not None:
        mapping = mapping_for(source)
        names = [*mapping.backends, *mapping.unmapped]
        if backend is not None and backend not in names:
            raise ValueError(f"unknown vLLM backend {backend!r}; known: {', '.join(sorted(names))}")
        return _source_reports(mapping, None if backend is None else [backend], dcp=dcp)
    from vllm.v1.attention.backends.registry import AttentionBackendEnum

    members = {m.name: m for m in AttentionBackendEnum}
    if backend is not None and backend not in members:
        raise ValueError(f"unknown vLLM backend {backend!r}; known: {', '.join(sorted(members))}")
    return _reports(None if backend is None else [backend], dcp=dcp, overrides=overrides)


def _noted(rows: list[BackendReport], mapping: VllmMapping) -> list[BackendReport]:
    if rows and mapping.unverified:  # a release the catalog was not verified on: said once
        rows[0].findings.insert(0, Finding(
            Code.AC034, "vllm", "; ".join(mapping.unverified),
            field="versions", found=mapping.versions))
    for note in mapping.notes:  # an unseen release: read with the newest layout, and said
        for row in rows:
            row.findings.insert(0, Finding(
                Code.AC013, f"vllm.{row.backend.lower()}", f"{note} ({mapping.read})",
                escalation="mapping-gap", field="vllm", found=mapping.versions))
    return rows


def _source_reports(mapping: VllmMapping, names: Sequence[str] | None, *, dcp: bool
                    ) -> list[BackendReport]:
    registry = _catalog()
    rows = []
    for name in (names if names is not None else [*mapping.backends, *mapping.unmapped]):
        if name in mapping.unmapped and mapping.unmapped[name].startswith("a placeholder"):
            continue  # TORCH_SDPA, CUSTOM: no class to check until one is registered
        mapped = OVERRIDES.get(name) or mapping.backends.get(name)
        rows.append(_report_one(name, mapping.impls.get(name), "", mapped, mapping, dcp,
                                registry))
    return _noted(rows, mapping)


def _reports(names: Sequence[str] | None, *, dcp: bool,
             overrides: Mapping[str, type | object] | None,
             scope: tuple[str, ...] | None = None, cache: bool = False) -> list[BackendReport]:
    """The rows of ``names`` (every member when None). A name that is no member (an
    out-of-tree backend, or one whose ``get_name()`` differs from its member's name) is a row
    with an ``AC013`` warning: its declaration is unchecked, and that is said, never raised."""
    from vllm.v1.attention.backends.registry import AttentionBackendEnum

    version = installed_version()
    mapping = mapping_for(version=version, scope=scope, cache=cache)
    registry = _catalog()
    members = {m.name: m for m in AttentionBackendEnum}
    rows: list[BackendReport] = []
    for name in (list(members) if names is None else names):
        member = members.get(name)
        impl: type | object | None
        if overrides and name in overrides:
            impl, why = overrides[name], ""
        elif member is not None:
            impl, _, why = _impl_of(member)
        else:
            impl, why = None, "no such AttentionBackendEnum member"
        if member is None:
            rows.append(_unknown_backend(name, impl, version))
            continue
        mapped = OVERRIDES.get(name) or mapping.backends.get(name)
        if impl is None and why.startswith("ValueError: Backend") and mapped is None:
            continue  # placeholders (CUSTOM, TORCH_SDPA): no class to check until registered
        rows.append(_report_one(name, impl, why, mapped, mapping, dcp, registry))
    return _noted(rows, mapping)


def _unknown_backend(name: str, found: ImplFacts | type | object | None,
                     version: str) -> BackendReport:
    impl = None if found is None else as_facts(found, DECLARATIONS)
    where = impl.path if impl is not None else "?"
    row = BackendReport(name, where)
    if impl is not None:
        row.declared = {RETURNS_ATTR: impl.value(RETURNS_ATTR), BASE_ATTR: impl.value(BASE_ATTR)}
    row.findings.append(Finding(
        Code.AC013, f"vllm.{name.lower()}", f"backend {name!r} (impl {where}) is no "
        f"AttentionBackendEnum member of vLLM {version} (an out-of-tree backend, or a get_name() "
        f"that differs from its member's name): its LSE declaration "
        f"({RETURNS_ATTR}={row.declared.get(RETURNS_ATTR)!r}, "
        f"{BASE_ATTR}={row.declared.get(BASE_ATTR)!r}) is unchecked",
        escalation="mapping-gap", hint="map it in attn_contracts.integrations.vllm.OVERRIDES "
        "with the kernels its impl calls", field="backend", found=name))
    return row


def check(backend: str | None = None, *, dcp: bool = True) -> list[Finding]:
    """Every finding of :func:`report` over the installed vLLM (or the one backend named)."""
    return [f for row in report(backend, dcp=dcp) for f in row.findings]


# --- at vLLM's startup ---------------------------------------------------------------------------
#: per backend: its impl class, the impl object vLLM built, the distinct objects of its layers,
#: or a source tree's record of its class (``VllmMapping.impls``)
Impls = Mapping[str, "ImplFacts | type | object | Sequence[object]"]


def validate_vllm_startup(backends: Iterable[str], *, dcp_world_size: int, group: Any = None,
                          impls: Impls | None = None,
                          timeout_s: float = 30.0) -> list[BackendReport]:
    """Check the backends vLLM selected for a DCP world of ``dcp_world_size`` ranks; raise one
    :class:`ContractError` with every error this configuration reaches (warnings are logged,
    once per process). Each rank logs one line with its verdict, ok included (the backend, its
    base, the kernels and the combines checked) through vLLM's logger.

    What is refused is what the configuration being started reaches (a base that reaches a
    combine wrong, a declaration one of its combines reads); a declaration nothing in it reads is
    one warning naming the class and where vLLM would read it
    (:func:`~attn_contracts.integrations._reach.split_by_reach`). A name that is no
    ``AttentionBackendEnum`` member is an ``AC013`` warning.
    ``group``: the DCP ranks' ``torch.distributed`` group (gloo or NCCL; vLLM's
    ``get_dcp_group().cpu_group``): every rank then runs ``validate_startup`` over the chosen
    kernel records with these findings as a shared setting, so the ranks agree or all fail alike.
    The round is opened before the mapping is derived (the slow part), so its deadline runs from
    the start of the check. A rank whose check cannot run (a fault of this checker, not of the
    contract) logs why and abstains: it starts unchecked, and its peers stop waiting for it.
    ``impls``: what the layers really use, per backend: the impl objects vLLM built (judged by
    what they answer: an attribute set on the object, a property), or classes, or records
    (:class:`~attn_contracts.integrations.vllm_impl.ImplFacts`; default: each backend's
    ``get_impl_cls()``); each is read into one record, which is all the check reads. Returns the
    reports of the backends checked."""
    from attn_contracts.startup import validate_startup

    names = sorted(set(backends))
    who = _rank_prefix(group)
    opened = _open(group, timeout_s)
    try:
        rows, errors, call = _gate(names, dcp_world_size, impls)
    except Exception as err:  # the checker's own fault: a guest does not refuse the start for it
        cause = f"{type(err).__name__}: {err}".splitlines()[0][:300]
        log.warning("attn-contracts: %sthe attention contract could not be checked (%s); "
                    "start-up goes on unchecked", who, cause)
        if opened is not None:
            opened.abstain(cause)
        return []
    registry = _catalog()
    kernels = list(dict.fromkeys(k for r in rows for k in r.records))
    # each record as the rows judged it (a base the impl's call pins, read from the sources),
    # else as the catalog has it
    judged = {k.name: k for r in reversed(rows) for k in r.kernels}
    chosen = [judged.get(k) or registry.get(k) for k in kernels]
    shared = {"vllm_backends": names, "vllm_findings": sorted(f.render() for f in errors)}
    try:
        validate_startup(chosen, backend=chosen[0] if chosen else None,
                         world_size=dcp_world_size, group=group, timeout_s=timeout_s,
                         extras=shared, producer_call=call, opened=opened)
    except ContractError as err:
        peers = [f for f in err.findings if f.code is Code.AC007 and f.field == "failed"]
        rest = [f for f in err.findings if f not in errors and f not in peers]
        refused = ContractError([*peers, *errors, *rest],
                                "attention contract validation failed at vLLM startup")
        _say_verdict(who, rows, refused)
        _finish(opened)
        raise refused from None
    if errors:
        refused = ContractError(errors, "attention contract validation failed at vLLM startup")
        _say_verdict(who, rows, refused)
        _finish(opened)
        raise refused
    _say_verdict(who, rows, None)
    _finish(opened)
    return rows


def _finish(opened: Any) -> None:
    """Every rank has logged its verdict before any raises (vLLM stops them all at the first)."""
    if opened is not None:
        opened.finish()


def _open(group: Any, timeout_s: float) -> Any:
    """The consensus round over ``group``, opened before the slow work (None without a group, or
    where ``torch.distributed`` is not up: ``validate_startup`` then says so itself)."""
    if group is None:
        return None
    try:
        from attn_contracts.consensus import open_round

        return open_round(group, timeout_s)
    except Exception:  # not initialised: the exchange later raises vLLM's own error for it
        return None


def _rank_prefix(group: Any) -> str:
    """``"DCP rank 1/2: "`` for this process in ``group`` (empty without one)."""
    from attn_contracts.consensus import rank_in

    where = rank_in(group) if group is not None else None
    return f"DCP rank {where[0]}/{where[1]}: " if where else ""


def _base_of(value: object) -> str:
    return "base e" if value is True else "base 2" if value is False else f"no base ({value!r})"


def _say_verdict(who: str, rows: Sequence[BackendReport], refused: ContractError | None) -> None:
    """One line per rank and verdict, through vLLM's logger (shown with vLLM's own logging): per
    backend its impl, its declared base, the kernels and the combines checked; the refusal's
    codes (its findings follow in the error)."""
    parts = []
    for r in rows:
        impl = r.impl.rsplit(".", 1)[-1]
        base = r.declared.get(BASE_ATTR)
        kernels = ", ".join(r.records) or "no kernel record"
        combines = "; ".join(r.edges) or "none"
        parts.append(f"{r.backend} ({impl}, {BASE_ATTR}={base!r}: {_base_of(base)}) -> "
                     f"{kernels}; combine checked: {combines}")
    what = " | ".join(parts) or "no attention backend on this rank"
    if refused is None:
        warned = sum(f.severity is Severity.WARNING for r in rows for f in r.findings)
        log_once(logging.INFO, f"attn-contracts: {who}attention contract ok: {what}"
                 + (f" ({warned} warning(s) above)" if warned else ""))
        return
    codes = ", ".join(dict.fromkeys(str(f.code) for f in refused.findings))
    log_once(logging.ERROR, f"attn-contracts: {who}attention contract refused ({codes}): {what}")


def _gate(names: Sequence[str], dcp_world_size: int, impls: Impls | None
          ) -> tuple[list[BackendReport], list[Finding], dict[str, object] | None]:
    """The rows of ``names`` (one per distinct impl object where a backend's layers hold
    several), the errors the configuration reaches (latent declarations and warnings logged
    once), and the call the first kernel record is made with."""
    from attn_contracts.integrations.vllm_source import STARTUP_SCOPE

    # a guest in the engine's start-up: the program model of the attention code, not the package
    rows: list[BackendReport] = []
    variants = {n: list(v) if isinstance(v, (list, tuple)) else [v]
                for n, v in (impls or {}).items()}
    for name in names:
        for impl in variants.get(name) or [None]:
            rows += _reports([name], dcp=dcp_world_size > 1,
                             overrides=None if impl is None else {name: impl},
                             scope=STARTUP_SCOPE, cache=True)
    mapping = mapping_for(version=installed_version(), scope=STARTUP_SCOPE, cache=True)
    readers = mapping.readers
    errors: list[Finding] = []
    for r in rows:
        live, latent = split_by_reach(r.findings, impl=r.impl.rsplit(".", 1)[-1],
                                      declared=DECLARATIONS, reads=r.reads, readers=readers)
        for f in [*latent, *(f for f in live if f.severity is Severity.WARNING)]:
            log_once(logging.WARNING, f"attn-contracts: {f.render()}")
        errors += [f for f in live if f.severity is Severity.ERROR and f not in errors]
    call = None
    first = next((r for r in rows if r.records), None)
    mapped = None if first is None else (OVERRIDES.get(first.backend) or
                                         mapping.backends.get(first.backend))
    if mapped is not None:
        config = mapped.dcp if dcp_world_size > 1 else mapped.single
        call = dict(config.call) if config.call is not None else None
    return rows, errors, call


def _backend_name(backend_cls: Any) -> str:
    """The ``AttentionBackendEnum`` member of a layer's backend class: its ``get_name()`` where
    that is a member, else the member whose class path is the class's (vLLM 0.32's
    ``ROCM_AITER_TRITON_MLA`` reports ``AITER_TRITON_MLA``), else the name it reports."""
    name = str(backend_cls.get_name())
    from vllm.v1.attention.backends.registry import AttentionBackendEnum

    if name in AttentionBackendEnum.__members__:
        return name
    path = f"{backend_cls.__module__}.{backend_cls.__qualname__}"
    for member in AttentionBackendEnum:
        try:
            if member.get_path() == path:
                return str(member.name)
        except Exception:  # a member whose path cannot be read is not this class
            continue
    return name


def validate_vllm_config(vllm_config: Any, target_layer_names: Iterable[str] | None = None,
                         *, group: Any = None, mode: Mode | None = None) -> list[BackendReport]:
    """:func:`validate_vllm_startup` for the attention layers of a ``VllmConfig`` (what the hook
    runs after vLLM's own check): their backends, the impl objects vLLM built for them (judged
    by what each answers, not by its class), the DCP group's ranks. ``mode``: this start's
    ``ATTN_CONTRACTS_VLLM`` (default: read now); ``warn`` logs the error instead of raising it,
    ``off`` checks nothing."""
    dcp = int(vllm_config.parallel_config.decode_context_parallel_size)
    mode = mode or vllm_mode.read()
    if dcp <= 1 or mode.policy == "off":
        return []
    from vllm.config import get_layers_from_vllm_config

    targets = set(target_layer_names) if target_layer_names is not None else None
    # per backend, the distinct impl objects its layers hold (by what they declare): a model
    # whose layers were built differently is judged on each
    backends: dict[str, dict[tuple[object, ...], object]] = {}
    for name, layer in get_layers_from_vllm_config(vllm_config, object).items():
        impl = getattr(layer, "impl", None)
        get_backend = getattr(layer, "get_attn_backend", None)
        if impl is None or get_backend is None or (targets is not None and name not in targets):
            continue
        key = (type(impl), *(repr(read_attr(impl, a)) for a in DECLARATIONS))
        backends.setdefault(_backend_name(get_backend()), {}).setdefault(key, impl)
    if group is None:
        group = dcp_group()
    # a rank with no layer to check still takes part: its peers wait for its verdict
    try:
        return validate_vllm_startup(backends, dcp_world_size=dcp, group=group,
                                     impls={n: list(v.values()) for n, v in backends.items()})
    except ContractError as err:
        if mode.policy == "warn":
            log.error("attn-contracts (%s=warn, not raising): %s", MODE_ENV, err)
            return []
        raise


def dcp_group() -> Any:
    """The DCP ranks' CPU (gloo) group, where vLLM has initialised it (else None: one rank)."""
    try:
        from vllm.distributed.parallel_state import get_dcp_group

        return get_dcp_group().cpu_group
    except (ImportError, AssertionError, AttributeError):
        return None
