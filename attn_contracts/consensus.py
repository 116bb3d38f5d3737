"""Rank consensus at startup: every DCP rank must combine with the same contract.

Each rank publishes a fingerprint of its records, its chosen backend, its DCP settings and its own
findings through the process group's key-value store, then waits for every other rank's, with a
deadline. The store is used (not a collective) so that a rank that died or never joined ends the
others with a clear error within ``timeout_s`` instead of a hang until the collective timeout.
Every rank computes the same verdict from the same set of fingerprints, so either all pass or all
raise the same ``AC007``.

torch is imported inside the functions: the contract package stays importable without it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any

from attn_contracts.findings import Code, Finding
from attn_contracts.records import CapabilityRecord

__all__ = ["agree_across_ranks", "fingerprint"]

_round: dict[tuple[int, ...], int] = {}  # per group: how many consensus rounds this rank ran


def fingerprint(records: Sequence[CapabilityRecord], chosen: CapabilityRecord | None,
                dcp_world_size: int, settings: Mapping[str, Any] | None) -> dict[str, Any]:
    """What ranks must agree on: every record (all fields), the chosen backend, the settings."""
    return {
        "records": {r.name: r.fingerprint() for r in sorted(set(records), key=lambda r: r.name)},
        "backend": None if chosen is None else f"{chosen.name}@{chosen.fingerprint()}",
        "dcp_world_size": dcp_world_size,
        "settings": {k: str(v) for k, v in sorted((settings or {}).items())},
    }


def _differences(prints: dict[int, dict[str, Any]]) -> list[str]:
    """Human lines naming each differing field and which ranks hold which value."""
    lines = []
    for key in ("backend", "dcp_world_size"):
        values = {r: p[key] for r, p in prints.items()}
        if len(set(map(json.dumps, values.values()))) > 1:
            lines.append(f"{key}: " + _by_value(values))
    names = sorted({n for p in prints.values() for n in p["records"]})
    for name in names:
        values = {r: p["records"].get(name, "<missing>") for r, p in prints.items()}
        if len(set(values.values())) > 1:
            lines.append(f"record {name}: " + _by_value(values))
    keys = sorted({k for p in prints.values() for k in p["settings"]})
    for key in keys:
        values = {r: p["settings"].get(key, "<missing>") for r, p in prints.items()}
        if len(set(values.values())) > 1:
            lines.append(f"setting {key}: " + _by_value(values))
    return lines


def _by_value(values: dict[int, Any]) -> str:
    groups: dict[str, list[int]] = {}
    for rank, v in sorted(values.items()):
        groups.setdefault(json.dumps(v), []).append(rank)
    return "; ".join(f"ranks {','.join(map(str, rs))} have {json.loads(v)!r}"
                     for v, rs in groups.items())


def agree_across_ranks(findings: list[Finding], records: Sequence[CapabilityRecord],
                       chosen: CapabilityRecord | None, dcp_world_size: int, *, group: Any,
                       timeout_s: float, settings: Mapping[str, Any] | None = None
                       ) -> list[Finding]:
    """Exchange fingerprints and findings with every rank of ``group``; return the findings all
    ranks share: the union of every rank's findings, plus ``AC007`` if ranks differ or a rank
    did not report within ``timeout_s``."""
    import torch.distributed as dist

    store = dist.distributed_c10d._get_default_store()  # every group's ranks share it
    ranks = tuple(dist.get_process_group_ranks(group)) if group is not None else tuple(
        range(dist.get_world_size()))
    me = dist.get_rank(group)
    generation = _round[ranks] = _round.get(ranks, 0) + 1
    prefix = f"attn_contracts/consensus/{'-'.join(map(str, ranks))}/{generation}"
    mine = fingerprint(records, chosen, dcp_world_size, settings)
    mine["findings"] = [f.to_json() for f in findings]
    store.set(f"{prefix}/{me}", json.dumps(mine))
    keys = [f"{prefix}/{r}" for r in range(len(ranks))]
    try:
        store.wait(keys, timedelta(seconds=timeout_s))
    except Exception:  # the store raises its own timeout type; report who is missing instead
        missing = [r for r in range(len(ranks)) if not store.check([keys[r]])]
        return [*findings, Finding(
            Code.AC007, "dcp", f"rank(s) {','.join(map(str, missing))} of {len(ranks)} did not "
            f"report their contract within {timeout_s:g} s (dead, hung, or never started)",
            "check those ranks' logs; every rank must call validate_startup with the same group",
            "ranks", missing, f"all {len(ranks)} ranks")]
    prints = {r: json.loads(store.get(keys[r])) for r in range(len(ranks))}
    shared = _union_findings(prints)
    diffs = _differences(prints)
    if diffs:
        shared.append(Finding(
            Code.AC007, "dcp", "DCP ranks disagree on their contracts: " + " | ".join(diffs),
            "deploy the same records, backend and settings on every rank", "fingerprint",
            f"{len(diffs)} differing field(s)", "identical on every rank"))
    return shared


def _union_findings(prints: dict[int, dict[str, Any]]) -> list[Finding]:
    """Every rank's findings, deduplicated, in rank order, each naming the rank if not all."""
    seen: dict[str, tuple[dict[str, Any], list[int]]] = {}
    for rank, p in sorted(prints.items()):
        for f in p["findings"]:
            key = json.dumps(f, sort_keys=True)
            seen.setdefault(key, (f, []))[1].append(rank)
    out = []
    for f, on in seen.values():
        suffix = "" if len(on) == len(prints) else f" (on rank(s) {','.join(map(str, on))})"
        out.append(Finding(Code(f["code"]), f["subject"], f["message"] + suffix, f["hint"],
                           f["field"], f["found"], f["allowed"], f["location"]))
    return out
