"""Checks over records: pure functions from data to findings (no I/O, no raising).

Each check derives its verdict from the record's fields, so adding a capability to the record
means adding data, not a new method per backend.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from attn_contracts.findings import Code, Finding
from attn_contracts.records import CapabilityRecord

__all__ = ["check_backend_known", "check_combinable", "check_dcp", "check_heads_divisible",
           "check_unique"]


def check_unique(records: Sequence[CapabilityRecord]) -> list[Finding]:
    """``AC005`` for every name used by more than one (different) record."""
    counts = Counter(r.name for r in set(records))
    names = sorted(counts)
    return [
        Finding(Code.AC005, name, f"{n} different records are named {name!r}",
                "give each kernel variant and call mode its own name", "name", name,
                f"unique names (all: {', '.join(names)})")
        for name, n in sorted(counts.items()) if n > 1
    ]


def check_backend_known(backend: str, known: Iterable[str]) -> list[Finding]:
    """``AC013`` when the engine chose a backend no record describes."""
    names = sorted(set(known))
    if backend in names:
        return []
    return [Finding(Code.AC013, backend, f"the chosen backend {backend!r} has no record; known: "
                    f"{', '.join(names) or '(none)'}",
                    "register a record for it (decorator, TOML file or entry point)",
                    "backend", backend, ", ".join(names))]


def _needs_lse(record: CapabilityRecord, what: str, hint: str) -> list[Finding]:
    if record.returns_lse:
        return []
    return [Finding(Code.AC006, record.name, f"{what} but the backend returns no LSE "
                    "(lse.returns = 'none'); partial outputs cannot be combined", hint,
                    "lse.returns", "none", f'"lse" (required for {what})')]


def check_dcp(record: CapabilityRecord, world_size: int) -> list[Finding]:
    """``AC006``: DCP combines partial outputs by their LSE, so a backend without one cannot shard."""
    if world_size <= 1:
        return []
    return _needs_lse(record, f"dcp_world_size={world_size}",
                      "choose a backend that returns LSE, or run with dcp_world_size=1")


def check_combinable(record: CapabilityRecord, mode: str) -> list[Finding]:
    """``AC006`` for a combine plan: every mode weighs partials by their LSE."""
    return _needs_lse(record, f"a {mode!r} combine", "plan the combine for a backend that "
                      "returns LSE")


def check_heads_divisible(record: CapabilityRecord, num_heads: int, world_size: int,
                          mode: str) -> list[Finding]:
    """``AC010``: head-scattered modes give each rank ``num_heads / world_size`` heads."""
    if num_heads % world_size:
        return [Finding(Code.AC010, record.name, f"mode {mode!r} scatters heads over the ranks but "
                        f"num_heads={num_heads} is not divisible by world_size={world_size}",
                        "use mode 'ar', or a world size that divides the head count", "num_heads",
                        num_heads, f"a multiple of {world_size}")]
    return []
