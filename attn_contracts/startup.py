"""Engine-startup validation: every problem, in one error, before the first request is served.

:func:`check_startup` is the one sequence of checks (``attn-contracts validate`` runs it too);
:func:`validate_startup` adds the optional probe of the chosen kernel and the rank consensus,
then raises one :class:`ContractError` listing everything.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

from pydantic import ValidationError

from attn_contracts.checks import check_backend_known
from attn_contracts.checks import check_call_turns_off_lse
from attn_contracts.checks import check_dcp
from attn_contracts.checks import check_edge
from attn_contracts.checks import check_setting
from attn_contracts.checks import check_unique
from attn_contracts.checks import resolve_call
from attn_contracts.consumer import ConsumerRecord
from attn_contracts.findings import Code
from attn_contracts.findings import ContractError
from attn_contracts.findings import Finding
from attn_contracts.findings import Location
from attn_contracts.findings import Severity
from attn_contracts.records import CapabilityRecord
from attn_contracts.registry import CONTRACT_ATTR
from attn_contracts.registry import Registry
from attn_contracts.registry import default_registry
from attn_contracts.setting import CombineSetting
from attn_contracts.sources import AnyRecord
from attn_contracts.sources import FileReadError
from attn_contracts.sources import parse_record
from attn_contracts.sources import read_file

if TYPE_CHECKING:  # consensus is imported where a group is given (it reaches torch.distributed)
    from attn_contracts.consensus import Opened

__all__ = ["ConsumerUse", "check_startup", "collect", "consumer_table", "validate_startup"]

RecordSource = CapabilityRecord | ConsumerRecord | Mapping[str, Any] | type | str | Path
#: a consumer the engine calls: its name or record, optionally with the literal it passes for a
#: keyword-selected base (``("vllm.cp_lse_ag_out_rs", "False")``)
ConsumerUse = str | ConsumerRecord | tuple[str | ConsumerRecord, str | None]


def _collect_one(item: Any) -> tuple[list[AnyRecord], list[Finding]]:
    if isinstance(item, type):
        attached = vars(item).get(CONTRACT_ATTR)
        if isinstance(attached, CapabilityRecord):
            return [attached], []
        from attn_contracts.bridge import impl_findings

        record, findings = impl_findings(item)
        return ([record] if record else []), findings
    if isinstance(item, (str, Path)):
        try:
            return read_file(item)
        except FileReadError as err:
            return [], [Finding(Code.AC000, str(item), str(err), location=Location(str(item)))]
    if isinstance(item, (CapabilityRecord, ConsumerRecord)):
        item = item.model_dump()  # re-validated: model_copy(update=...) skips validation
    return parse_record(item)


def collect(records: Registry | Iterable[RecordSource] | None) -> tuple[list[AnyRecord],
                                                                          list[Finding]]:
    """Records and findings from a registry, or from records, raw mappings, engine classes and
    file paths mixed; the default registry when ``records`` is None."""
    if records is None:
        records = default_registry()
    if isinstance(records, Registry):
        return [*records.records(), *records.consumers()], list(records.load_findings)
    out: list[AnyRecord] = []
    findings: list[Finding] = []
    for item in records:
        r, f = _collect_one(item)
        out += r
        findings += f
    return out, findings


def _revalidated(record: CapabilityRecord) -> tuple[CapabilityRecord | None, list[Finding]]:
    recs, findings = parse_record(record.model_dump())
    checked = recs[0] if recs and isinstance(recs[0], CapabilityRecord) else None
    return (record if checked == record else checked), findings  # the caller's object if valid


def consumer_table(records: Registry | Iterable[RecordSource] | None,
                   recs: Iterable[AnyRecord], *, builtin: bool = True,
                   ) -> tuple[dict[str, ConsumerRecord], list[Finding]]:
    """The one consumer lookup, for the API and the CLI alike: the consumers of ``recs`` and, when
    ``records`` is a plain list (not a registry, which holds its own) and ``builtin``, those of
    the default registry. A record that redefines a name already there is ``AC005``, never a
    silent replacement; the first definition (the registry's) is the one looked up."""
    given = [r for r in recs if isinstance(r, ConsumerRecord)]
    own = records is None or isinstance(records, Registry) or not builtin
    pool = given if own else [*default_registry().consumers(), *given]
    table: dict[str, ConsumerRecord] = {}
    for c in pool:
        table.setdefault(c.name, c)
    clash = [c for c in given if table[c.name] != c]
    return table, check_unique([*table.values(), *clash])


def _split_use(use: object) -> tuple[str | ConsumerRecord, str | None]:
    """``(consumer, literal)`` of one use; a use of another shape is the caller's mistake, said
    as such (not an unpacking error or an AttributeError deep in the literal comparison)."""
    if isinstance(use, (str, ConsumerRecord)):
        return use, None
    if isinstance(use, tuple) and len(use) == 2 and isinstance(use[0], (str, ConsumerRecord)) \
            and (use[1] is None or isinstance(use[1], str)):
        return use[0], use[1]
    raise ValueError(f"consumers: each use must be a name, a ConsumerRecord, or a (name or record, "
                     f"literal) pair whose literal is the keyword's source text (e.g. \"'2'\", "
                     f"\"False\") or None; found {use!r}")


def _consumer_uses(uses: Iterable[ConsumerUse], known: dict[str, ConsumerRecord]
                   ) -> tuple[list[tuple[ConsumerRecord, str | None]], list[Finding]]:
    out: list[tuple[ConsumerRecord, str | None]] = []
    findings: list[Finding] = []
    for use in uses:
        target, literal = _split_use(use)
        if isinstance(target, ConsumerRecord):
            recs, bad = parse_record(target.model_dump())
            findings += bad
            out += [(r, literal) for r in recs if isinstance(r, ConsumerRecord)]
        elif target in known:
            out.append((known[target], literal))
        else:
            findings.append(Finding(Code.AC013, str(target), f"no consumer record named "
                                    f"{target!r}; known: {', '.join(sorted(known)) or '(none)'}",
                                    field="consumer", found=target,
                                    allowed=", ".join(sorted(known))))
    return out, findings


def _setting(setting: CombineSetting | Mapping[str, Any] | None) -> CombineSetting | None:
    if setting is None or isinstance(setting, CombineSetting):
        return None if setting is None else CombineSetting.model_validate(setting.model_dump())
    return CombineSetting.model_validate(dict(setting))


def _world_size(setting: CombineSetting | None, world_size: int | None) -> int:
    named = {k: v for k, v in (("world_size", world_size),
                               ("setting.world_size", setting.world_size if setting else None))
             if v is not None}
    for name, v in named.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be an int >= 1, found {v!r}")
    if len(set(named.values())) > 1:
        raise ValueError(f"the world size is given twice with different values: {named}")
    return next(iter(named.values()), 1)


def check_startup(
    records: Registry | Iterable[RecordSource] | None = None,
    *,
    backend: str | CapabilityRecord | None = None,
    setting: CombineSetting | Mapping[str, Any] | None = None,
    world_size: int | None = None,
    consumers: Iterable[ConsumerUse] = (),
    load_findings: Iterable[Finding] = (),
    producer_call: Mapping[str, Any] | None = None,
    builtin_consumers: bool = True,
) -> tuple[CapabilityRecord | None, list[AnyRecord], list[Finding]]:
    """The chosen record (if any), every record seen, and every finding; raises nothing.

    ``setting``: the combine setting (typed, or a mapping of its fields). ``consumers``: the
    combine functions the engine feeds the backend's LSE into; every edge is checked; their
    names resolve as :func:`consumer_table` says (``builtin_consumers=False``: only among
    ``records``, as ``validate --no-builtin`` wants). ``producer_call``: the keyword arguments
    the engine passes the backend's kernel (Python values); a record whose base or layout the
    call chooses (``return_lse_base``, ``lse_layout``) gets that base and layout
    (:func:`~attn_contracts.checks.resolve_call`); a call that leaves the base to run-time
    dispatch, or no call given for a record whose base its call chooses (which kernel runs is
    then unknown), is ``AC028``."""
    try:
        typed = _setting(setting)
    except ValidationError as err:
        raise ValueError(f"invalid combine setting: {err}") from err
    world = _world_size(typed, world_size)
    recs, findings = collect(records)
    producers = {r.name: r for r in recs if isinstance(r, CapabilityRecord)}
    known_consumers, clashes = consumer_table(records, recs, builtin=builtin_consumers)
    findings = [*load_findings, *findings, *check_unique(
        [r for r in recs if isinstance(r, CapabilityRecord)]), *clashes]
    chosen, bad = _chosen(backend, producers)
    findings += bad
    uses, bad = _consumer_uses(consumers, known_consumers)
    findings += bad
    if chosen is not None and producer_call is not None:
        needed_by = [f"world_size={world}"] if world > 1 else []
        needed_by += [c.name for c, _ in uses]
        off = check_call_turns_off_lse(chosen, producer_call, " and ".join(needed_by)
                                       ) if needed_by else []
        if off:  # the edges and the setting are moot: the kernel returns no LSE to check
            return chosen, recs, [*findings, *off]
    if chosen is not None:
        chosen, bad = resolve_call(chosen, producer_call)
        findings += bad
    if chosen is not None:
        findings += _use_findings(chosen, world, typed, uses)
    if world > 1:
        findings += [_unchecked_agreement(c) for c, _ in uses if c.ranks is not None]
    return chosen, recs, findings


def _chosen(backend: str | CapabilityRecord | None, producers: Mapping[str, CapabilityRecord],
            ) -> tuple[CapabilityRecord | None, list[Finding]]:
    """The record of the backend the engine chose (a record given is validated again; a name
    must be a known producer's)."""
    if isinstance(backend, CapabilityRecord):
        return _revalidated(backend)
    if backend is not None:
        return producers.get(backend), check_backend_known(backend, producers)
    return None, []


def _use_findings(chosen: CapabilityRecord, world: int, typed: CombineSetting | None,
                  uses: Iterable[tuple[ConsumerRecord, str | None]]) -> list[Finding]:
    """The chosen record against its use: DCP over ``world`` ranks, the combine setting, and
    every consumer its LSE is fed into."""
    findings = list(check_dcp(chosen, world))
    if typed is not None and chosen.returns_lse:
        findings += check_setting(chosen, typed)
    for consumer, literal in uses:
        findings += check_edge(chosen, consumer, typed, keyword_value=literal)
    return findings


def _unchecked_agreement(consumer: ConsumerRecord) -> Finding:
    """``AC031`` (a note): one process cannot tell whether every rank passes a collective
    consumer the same values; ``validate_startup(group=...)`` compares them."""
    same = ", ".join(consumer.ranks.same) if consumer.ranks else ""
    return Finding(Code.AC031, consumer.name, f"{consumer.name} is a collective: every rank must "
                   f"pass it the same {same}; one process cannot check that, so it was not "
                   "checked here", escalation="one-process", field="ranks", found=None,
                   allowed="identical on every rank",
                   hint="at engine startup pass group= to validate_startup: the ranks then "
                   "compare what each passes (AC031 where they differ)")


def _agreement(consumer: ConsumerRecord, literal: str | None, setting: CombineSetting | None,
               extras: Mapping[str, Any] | None) -> dict[str, Any]:
    """What this rank passes a collective consumer, for the ranks to compare: the base its
    keyword literal resolves to (literals that select the same base are one value), the
    setting's fields and the workspace's ``max_tokens`` (from ``extras``) the record names."""
    ranks = consumer.ranks
    values: dict[str, Any] = {}
    for name in ranks.same if ranks else ():
        if name == "base":
            values[name] = consumer.base_for(literal) or f"no base ({literal!r} selects none)"
        elif name == "max_tokens":
            values[name] = (extras or {}).get("max_tokens")
        else:
            values[name] = None if setting is None else getattr(setting, name)
    return {"on_mismatch": ranks.on_mismatch if ranks else "wrong", "values": values}


def validate_startup(
    records: Registry | Iterable[RecordSource] | None = None,
    *,
    backend: str | CapabilityRecord | None = None,
    setting: CombineSetting | Mapping[str, Any] | None = None,
    world_size: int | None = None,
    consumers: Iterable[ConsumerUse] = (),
    group: Any = None,
    probe: bool = False,
    timeout_s: float = 30.0,
    device: str | None = None,
    allow_adapters: Iterable[str] = (),
    extras: Mapping[str, Any] | None = None,
    producer_call: Mapping[str, Any] | None = None,
    opened: Opened | None = None,
) -> CapabilityRecord | None:
    """Check every record, the chosen backend, its combine setting and every producer → consumer
    edge; raise one :class:`ContractError` listing every problem.

    ``records``: the registry (default), or an iterable of records (producers and consumers), raw
    mappings, engine-style backend classes and TOML/JSON paths. ``backend``: the record (or its
    name) the engine will run. ``setting``: the :class:`~attn_contracts.setting.CombineSetting`
    (its ``world_size`` is the DCP world size; ``world_size=`` alone suffices when there is no
    combine to plan). ``consumers``: the combine
    functions the engine calls (names of consumer records, or ``(name, keyword literal)``).
    ``group``: a ``torch.distributed`` process group: all ranks must then hold identical records,
    backend, setting and ``extras`` (free-form, JSON values compared by value), else every rank
    raises ``AC007`` within ``timeout_s`` + 2 s; the group decides once, so no rank passes while
    another fails (see :mod:`attn_contracts.consensus`). A *collective* consumer (a record with
    ``ranks``: FlashInfer's fused ``decode_cp_a2a_lse_reduce``, which hangs rather than fails
    when ranks differ) is compared by what each rank passes it: the base its keyword literal
    selects, the setting's fields it names and ``extras["max_tokens"]`` (the workspace's size);
    a difference is ``AC031`` on every rank. Without ``group`` at ``world_size > 1`` such a
    consumer gets a ``RuntimeWarning`` (nothing can be compared from one process). ``probe``: run
    the chosen backend once on tiny inputs (on ``device``) and compare what it returns with its
    record (``AC008``); its adapter runs only from the built-in modules or ``allow_adapters``
    (records may come from files, and a file is data).
    ``producer_call``: the keyword arguments the engine passes its kernel (``{"backend":
    "auto", "return_lse_base": "basee"}``); where the record's call chooses the base from them,
    the returned record carries that base; a base left to dispatch, or no ``producer_call`` for a
    record whose base its call chooses (which kernel runs is then unknown), is ``AC028``.
    ``opened``: the consensus round over ``group``, where the caller opened it before its own
    slow work (:func:`attn_contracts.consensus.open_round`; its deadline then runs from there).
    Returns the chosen backend's record (None when no backend was named).
    """
    try:
        world = _world_size(_setting(setting), world_size)
        chosen, recs, findings, shared, collective = _local_checks(
            records, backend=backend, setting=setting, world=world, consumers=list(consumers),
            probe=probe, device=device, allow_adapters=allow_adapters, extras=extras,
            producer_call=producer_call, share=group is not None)
    except Exception as err:  # no rank may wait out its timeout for a rank that has already failed
        if group is not None:
            from attn_contracts.consensus import tell_peers

            tell_peers(err, "before publishing its contract", group=group, timeout_s=timeout_s,
                       opened=opened)
        raise
    if group is not None:
        from attn_contracts.consensus import agree_across_ranks

        # Every rank takes part even with local findings, so no rank is left waiting in the
        # exchange; each then raises the union of what all ranks found.
        findings = agree_across_ranks(findings, recs, chosen, world, group=group,
                                      timeout_s=timeout_s, settings=shared,
                                      collective=collective, opened=opened)
    if findings:
        raise ContractError(findings, "attention contract validation failed at startup")
    return chosen


def _local_checks(
    records: Registry | Iterable[RecordSource] | None, *,
    backend: str | CapabilityRecord | None, setting: CombineSetting | Mapping[str, Any] | None,
    world: int, consumers: list[ConsumerUse], probe: bool, device: str | None,
    allow_adapters: Iterable[str], extras: Mapping[str, Any] | None,
    producer_call: Mapping[str, Any] | None, share: bool,
) -> tuple[CapabilityRecord | None, list[AnyRecord], list[Finding], dict[str, Any],
           dict[str, dict[str, Any]]]:
    """What this rank finds on its own, and (``share``) what it must agree on with the others:
    everything :func:`validate_startup` does before the consensus. The last two are the shared
    settings (compared as given) and, per collective consumer, the values it needs identical
    (compared by what they mean, ``AC031``)."""
    chosen, recs, findings = check_startup(records, backend=backend, setting=setting,
                                           world_size=world, consumers=consumers,
                                           producer_call=producer_call)
    # a note (a base left to the call site) informs the CLI; it never stops an engine
    findings = [f for f in findings if f.severity is not Severity.NOTE]
    if chosen is not None and probe and not findings:
        try:  # seam: the startup probe, the one part of startup that needs torch
            from attn_contracts.backends.runner import probe_record
        except ImportError as err:
            raise ImportError(f"validate_startup(probe=True) runs the backend once and needs torch "
                              f"(pip install 'attn-contracts[kernels]'), or pass probe=False: "
                              f"{err}") from err
        findings += probe_record(chosen, device=device, allow_adapters=allow_adapters)
    uses = _consumer_uses(consumers, consumer_table(records, recs)[0])[0]
    if not share and world > 1 and any(c.ranks is not None for c, _ in uses):
        # stacklevel 3: past this helper and validate_startup, at the engine's call
        warnings.warn("validate_startup: a collective consumer ("
                      + ", ".join(sorted(c.name for c, _ in uses if c.ranks is not None))
                      + ") hangs when ranks pass it different values; pass group= so the ranks "
                      "compare them (AC031)", RuntimeWarning, stacklevel=3)
    shared: dict[str, Any] = {}
    collective: dict[str, dict[str, Any]] = {}
    if share:
        typed = _setting(setting)
        # one key per setting field, so a disagreement names the field (`setting num_heads: ...`);
        # the local consumers the rank feeds (names and keyword literals) are part of what must
        # agree; a collective consumer's values are compared by what they mean (AC031)
        shared = {**(dict(extras) if extras else {}),
                  **(typed.model_dump(mode="json") if typed else {}),
                  "consumers": sorted(f"{c.name}={lit}" for c, lit in uses if c.ranks is None)}
        collective = {c.name: _agreement(c, lit, typed, extras) for c, lit in uses
                      if c.ranks is not None}
    return chosen, recs, findings, shared, collective
