"""Finding codes and the finding record every check returns.

Codes are stable: tests, CI configurations and `# noqa` comments name them, so a code is never
renumbered or reused. The README documents every one.
"""

from __future__ import annotations

import enum
import math
from dataclasses import KW_ONLY, dataclass
from typing import Any

__all__ = ["Code", "ContractError", "Finding", "Severity", "error_text"]

_ERROR_TEXT_LIMIT = 300  # characters of an exception a finding quotes (a tensor repr is MBs)


def error_text(err: BaseException) -> str:
    """``Type: message`` of an exception raised by code we do not own (an adapter, a plugin),
    bounded: an exception that prints a tensor must not flood the report."""
    text = f"{type(err).__name__}: {err}"
    return text if len(text) <= _ERROR_TEXT_LIMIT else text[: _ERROR_TEXT_LIMIT - 3] + "..."


class Code(enum.StrEnum):
    """Closed set of finding codes (stable; documented in the README)."""

    AC000 = "AC000"  # a file could not be read or parsed
    AC001 = "AC001"  # returns LSE but declares no base
    AC002 = "AC002"  # the base comes only from an inherited default
    AC003 = "AC003"  # a combine call passes a literal base
    AC004 = "AC004"  # LSE details on something that returns no LSE
    AC005 = "AC005"  # duplicate record name
    AC006 = "AC006"  # DCP world size > 1 with a backend that returns no LSE
    AC007 = "AC007"  # DCP ranks disagree on records or settings
    AC008 = "AC008"  # what a kernel returns differs from its record
    AC009 = "AC009"  # getattr(obj, "<capability>", default)
    AC010 = "AC010"  # heads not divisible by the DCP world size in a head-scattered mode
    AC011 = "AC011"  # assert used to check a capability
    AC012 = "AC012"  # a record breaks its schema (unknown key, wrong type, bad value)
    AC013 = "AC013"  # unknown record or backend name
    AC014 = "AC014"  # a plugin could not be loaded
    AC015 = "AC015"  # the combine cannot read what the record declares
    AC016 = "AC016"  # edge: the consumer assumes another LSE base than the producer emits
    AC017 = "AC017"  # edge: the consumer reads another LSE layout than the producer writes
    AC018 = "AC018"  # edge: empty rows the consumer does not treat as empty, or NaN out of it
    AC019 = "AC019"  # edge: the setting is outside the consumer's limits
    AC020 = "AC020"  # edge: the consumer does not take the producer's LSE dtype
    AC021 = "AC021"  # a combine function's base parameter has a default value (lint)
    AC022 = "AC022"  # a call of a known consumer omits its base keyword (lint)
    AC023 = "AC023"  # one LSE reaches consumers (or comes from a producer) of another base (lint)
    AC024 = "AC024"  # a sink inside every rank's LSE would be counted once per rank
    AC025 = "AC025"  # empty rows are undefined and the call gave no row mask
    AC026 = "AC026"  # a symmetric-memory mode (a2a_direct, fi_a2a) cannot run here
    AC027 = "AC027"  # a combine call does not match its plan (N, H, D, dtype, sink, workspace, mode)
    AC028 = "AC028"  # a producer call leaves its LSE base to run-time dispatch
    AC029 = "AC029"  # records of one function disagree, version unknown: what they agree on is used
    AC030 = "AC030"  # edge: empty rows' output is undefined or NaN and the consumer multiplies it by 0
    AC031 = "AC031"  # ranks disagree on what a collective consumer needs identical (it would hang)
    AC032 = "AC032"  # a class's own LSE base is not confirmed by the kernels it calls (lint)


class Severity(enum.StrEnum):
    """How sure the tool is that a finding is a real defect (ruff and SARIF use the same three).

    ``error``: a contradiction the tool can show (a declared base that differs from what the called
    kernel's record says); ``warning``: a hazard the tool cannot decide (a default nothing confirms);
    ``note``: information (a base left to the call site)."""

    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


@dataclass(frozen=True)
class Finding:
    """One problem: which rule, about what, the value found, what is allowed, how to fix it.

    Everything after ``message`` is keyword-only: ``hint`` and ``allowed`` are both strings, and a
    swapped pair would type-check."""

    code: Code
    subject: str
    message: str
    _: KW_ONLY
    severity: Severity = Severity.ERROR
    hint: str = ""
    field: str = ""
    found: Any = None
    allowed: str = ""
    location: str = ""  # "path:line:col" for file-based findings, else empty

    def render(self) -> str:
        where = f"{self.location}: " if self.location else ""
        hint = f" (hint: {self.hint})" if self.hint else ""
        level = "" if self.severity is Severity.ERROR else f"[{self.severity}] "
        return f"{where}{self.code} {level}{self.subject}: {self.message}{hint}"

    def to_json(self) -> dict[str, Any]:
        return {
            "code": str(self.code),
            "severity": str(self.severity),
            "subject": self.subject,
            "field": self.field,
            "found": _jsonable(self.found),
            "allowed": self.allowed,
            "message": self.message,
            "hint": self.hint,
            "location": self.location,
        }


def _jsonable(value: Any) -> Any:
    """A value JSON (RFC 8259) can hold: inf and NaN have no JSON spelling, so they are text."""
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


class ContractError(Exception):
    """Every finding of one validation, raised together so an operator fixes them in one pass."""

    def __init__(self, findings: list[Finding], context: str = "contract validation failed"):
        self.findings = list(findings)
        self.context = context
        super().__init__(self.findings, context)

    @property
    def codes(self) -> list[Code]:
        return [f.code for f in self.findings]

    def __str__(self) -> str:
        lines = [f"{self.context}: {len(self.findings)} problem(s)"]
        lines += [f"  {f.render()}" for f in self.findings]
        return "\n".join(lines)
