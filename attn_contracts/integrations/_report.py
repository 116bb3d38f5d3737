"""The row an engine's report prints for one attention backend, shared by every integration."""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field
from typing import Any

from attn_contracts.findings import Finding
from attn_contracts.findings import Severity

__all__ = ["EngineReport"]


@dataclass
class EngineReport:
    """One attention backend of an engine: what it declares, what it calls, and every finding."""

    backend: str
    impl: str
    declared: dict[str, Any] = field(default_factory=dict)
    records: list[str] = field(default_factory=list)
    edges: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    note: str = ""

    @property
    def verdict(self) -> str:
        levels = {f.severity for f in self.findings}
        return next((str(s) for s in (Severity.ERROR, Severity.WARNING) if s in levels), "ok")

    def to_json(self) -> dict[str, Any]:
        return {"backend": self.backend, "impl": self.impl, "declared": self.declared,
                "records": self.records, "edges": self.edges, "verdict": self.verdict,
                "note": self.note, "findings": [f.to_json() for f in self.findings]}
