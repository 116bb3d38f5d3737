"""Engine-startup validation: every problem, in one error, before the first request is served."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from attn_contracts.checks import check_backend_known, check_dcp, check_unique
from attn_contracts.findings import Code, ContractError, Finding
from attn_contracts.records import CapabilityRecord
from attn_contracts.registry import CONTRACT_ATTR, Registry, default_registry
from attn_contracts.sources import FileReadError, parse_record, read_file

__all__ = ["collect", "validate_startup"]

RecordSource = CapabilityRecord | Mapping[str, Any] | type | str | Path


def _collect_one(item: Any) -> tuple[list[CapabilityRecord], list[Finding]]:
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
            return [], [Finding(Code.AC000, str(item), str(err), location=str(item))]
    return parse_record(item)


def collect(records: Registry | Iterable[RecordSource] | None) -> tuple[list[CapabilityRecord],
                                                                          list[Finding]]:
    """Records and findings from a registry, or from records, raw mappings, engine classes and
    file paths mixed; the default registry when ``records`` is None."""
    if records is None:
        records = default_registry()
    if isinstance(records, Registry):
        return records.records(), list(records.load_findings)
    out: list[CapabilityRecord] = []
    findings: list[Finding] = []
    for item in records:
        r, f = _collect_one(item)
        out += r
        findings += f
    return out, findings


def validate_startup(
    records: Registry | Iterable[RecordSource] | None = None,
    *,
    backend: str | CapabilityRecord | None = None,
    dcp_world_size: int = 1,
    group: Any = None,
    probe: bool = False,
    timeout_s: float = 30.0,
    device: str | None = None,
    settings: Mapping[str, Any] | None = None,
) -> CapabilityRecord | None:
    """Check every record and the chosen DCP configuration; raise one :class:`ContractError`.

    ``records``: the registry (default), or an iterable of records, raw mappings, engine-style
    backend classes and TOML/JSON paths. ``backend``: the record (or its name) the engine will run.
    ``group``: a ``torch.distributed`` process group (None: no exchange); all ranks must then hold
    identical records, backend, ``dcp_world_size`` and ``settings`` (JSON values compared by value,
    e.g. ``setting.model_dump(mode="json")``: the combine's dtype, head count and head dim), else
    every rank raises ``AC007`` within ``timeout_s`` + 2 s; the group decides once, so no rank
    passes while another fails (see :mod:`attn_contracts.consensus`).
    ``probe``: run the chosen backend once on tiny inputs (on ``device``) and compare what it
    returns with its record (``AC008``). Returns the chosen backend's record (None when no backend was named).
    """
    if not isinstance(dcp_world_size, int) or isinstance(dcp_world_size, bool) or dcp_world_size < 1:
        raise ValueError(f"dcp_world_size must be an int >= 1, found {dcp_world_size!r}")
    recs, findings = collect(records)
    findings += check_unique(recs)
    chosen: CapabilityRecord | None = None
    if isinstance(backend, CapabilityRecord):
        chosen = backend
    elif backend is not None:
        by_name = {r.name: r for r in recs}
        findings += check_backend_known(backend, by_name)
        chosen = by_name.get(backend)
    if chosen is not None:
        findings += check_dcp(chosen, dcp_world_size)
        if probe and not findings:
            from attn_contracts.backends.runner import probe_record

            findings += probe_record(chosen, device=device)
    if group is not None:
        from attn_contracts.consensus import agree_across_ranks

        # Every rank takes part even with local findings, so no rank is left waiting in the
        # exchange; each then raises the union of what all ranks found.
        findings = agree_across_ranks(findings, recs, chosen, dcp_world_size, group=group,
                                      timeout_s=timeout_s, settings=settings)
    if findings:
        raise ContractError(findings, "attention contract validation failed at startup")
    return chosen
