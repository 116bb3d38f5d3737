"""The verifier's judge: what a record declares against what a run observed (torch-free).

A record is a claim. :mod:`attn_contracts.backends.runner` builds inputs that make mistakes visible,
runs the record's adapter and infers the observed contract (:class:`Observed`); this module compares
the two field by field. Every declared field that differs is an ``AC008`` finding.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from attn_contracts.findings import Code, Finding
from attn_contracts.records import CapabilityRecord, LseSpec

__all__ = ["Observed", "VerifyResult", "compare", "declared_lse", "describe"]


@dataclass
class Observed:
    """What the kernel really returned."""

    layout: str  # token_head | head_token | unknown
    q_len_axis: bool
    padded_heads: int | None
    base: str  # e | 2 | neither
    base_fit: str
    dtype: str
    empty_row: str | None  # -inf | +inf | nan | finite(...) | None when not testable
    out_error: float
    out_ok: bool
    out_buffer_honoured: bool | None


@dataclass
class VerifyResult:
    name: str
    status: str  # match | differs | skipped
    reason: str = ""
    declared: dict[str, Any] = field(default_factory=dict)
    observed: Observed | None = None
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0


def declared_lse(spec: LseSpec, q_dtype: str) -> dict[str, Any]:
    """The declared LSE facts a run can observe (``dtype = "query"`` resolved to the query's)."""
    return {"base": spec.base, "layout": spec.layout, "q_len_axis": spec.q_len_axis,
            "padded_heads": spec.padded_heads,
            "dtype": q_dtype if spec.dtype == "query" else spec.dtype,
            "empty_row": spec.empty_row}


def compare(record: CapabilityRecord, declared: dict[str, Any], obs: Observed) -> list[Finding]:
    """``AC008`` for every declared field the observation contradicts."""
    observed = {"base": obs.base, "layout": obs.layout, "q_len_axis": obs.q_len_axis,
                "padded_heads": obs.padded_heads, "dtype": obs.dtype, "empty_row": obs.empty_row}
    findings = []
    for key, want in declared.items():
        got = observed[key]
        if key == "empty_row" and (got is None or want == "undefined"):
            continue  # nothing observed, or nothing promised: undefined rows may hold anything
        if got != want:
            extra = f" ({obs.base_fit})" if key == "base" else ""
            findings.append(Finding(
                Code.AC008, record.name,
                f"lse.{key}: declared {want!r}, observed {got!r}{extra}",
                hint="fix the record (or the kernel); `attn-contracts verify --update F` writes the "
                "observed facts to a file you name", field=f"lse.{key}", found=got, allowed=repr(want)))
    if not obs.out_ok:
        findings.append(Finding(Code.AC008, record.name, f"output differs from the fp64 reference "
                                f"by {obs.out_error:.3g}", hint="the kernel or the adapter is wrong",
                                field="output", found=obs.out_error, allowed="within the dtype's tolerance"))
    if obs.out_buffer_honoured is False:
        findings.append(Finding(Code.AC008, record.name, "the adapter ignored the caller's out= "
                                "buffer", field="out", found="new tensor", allowed="out= buffer"))
    return findings


def describe(d: dict[str, Any] | Observed | None) -> str:
    if d is None:
        return "-"
    x = asdict(d) if isinstance(d, Observed) else d
    layout = x["layout"] + ("+q_len" if x["q_len_axis"] else "")
    layout += f"/{x['padded_heads']}" if x["padded_heads"] else ""
    empty = x["empty_row"] if x["empty_row"] is not None else "n/a"
    text = f"base {x['base']}, {layout}, {x['dtype']}, empty {empty}"
    if isinstance(d, Observed):
        text += f", out err {d.out_error:.1e}"
    return text
