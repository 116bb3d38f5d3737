"""Finding codes, the rule table that says what each means, and the finding record every check
returns.

Codes are stable: tests, CI configurations and `# noqa` comments name them, so a code is never
renumbered or reused. :data:`RULES` is the one place a code is described (title, default severity,
what it means, the fix; the words are data, ``rules.toml`` beside this module): the checkers take
their default severities from it, the linter's ``--select``/``--statistics`` and SARIF rule
metadata read it, and the README's code table is generated from it (``python
tools/readme_rules.py``; a test fails when the README is stale).
"""

from __future__ import annotations

import enum
import math
import tomllib
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
from importlib import resources
from types import MappingProxyType
from typing import Any

__all__ = ["RULES", "Code", "ContractError", "Finding", "Rule", "Severity", "error_text",
           "rules_markdown"]

_ERROR_TEXT_LIMIT = 300  # characters of an exception a finding quotes (a tensor repr is MBs)


def error_text(err: BaseException) -> str:
    """``Type: message`` of an exception raised by code we do not own (an adapter, a plugin),
    bounded: an exception that prints a tensor must not flood the report."""
    text = f"{type(err).__name__}: {err}"
    return text if len(text) <= _ERROR_TEXT_LIMIT else text[: _ERROR_TEXT_LIMIT - 3] + "..."


class Code(enum.StrEnum):
    """Closed set of finding codes (stable; each described by its :data:`RULES` entry)."""

    AC000 = "AC000"
    AC001 = "AC001"
    AC002 = "AC002"
    AC003 = "AC003"
    AC004 = "AC004"
    AC005 = "AC005"
    AC006 = "AC006"
    AC007 = "AC007"
    AC008 = "AC008"
    AC009 = "AC009"
    AC010 = "AC010"
    AC011 = "AC011"
    AC012 = "AC012"
    AC013 = "AC013"
    AC014 = "AC014"
    AC015 = "AC015"
    AC016 = "AC016"
    AC017 = "AC017"
    AC018 = "AC018"
    AC019 = "AC019"
    AC020 = "AC020"
    AC021 = "AC021"
    AC022 = "AC022"
    AC023 = "AC023"
    AC024 = "AC024"
    AC025 = "AC025"
    AC026 = "AC026"
    AC027 = "AC027"
    AC028 = "AC028"
    AC029 = "AC029"
    AC030 = "AC030"
    AC031 = "AC031"
    AC032 = "AC032"
    AC033 = "AC033"


class Severity(enum.StrEnum):
    """How sure the tool is that a finding is a real defect (ruff and SARIF use the same three).

    ``error``: a contradiction the tool can show (a declared base that differs from what the called
    kernel's record says); ``warning``: a hazard the tool cannot decide (a default nothing confirms);
    ``note``: information (a base left to the call site)."""

    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


@dataclass(frozen=True)
class Rule:
    """What a finding code means, as the README, SARIF and ``--statistics`` show it.

    ``severity`` is the default: what the linter and the engine checks report the code as where
    the context does not decide otherwise. A checker whose severity depends on what it found (an
    inherited base the kernels confirm is a note, one they contradict an error) says so at the
    call, with a comment; validation and startup refuse on every finding but a note."""

    code: Code
    title: str
    severity: Severity
    meaning: str
    fix: str


def _load_rules() -> tuple[Rule, ...]:
    """The rule table from ``rules.toml`` beside this module (data shipped with the package: a
    code's words are edited there, not here). Every :class:`Code` has exactly one rule, in order."""
    with resources.files("attn_contracts").joinpath("rules.toml").open("rb") as f:
        rows = tomllib.load(f)["rule"]
    rules = tuple(Rule(Code(r["code"]), r["title"], Severity(r["severity"]), r["meaning"], r["fix"])
                  for r in rows)
    if [r.code for r in rules] != list(Code):
        raise RuntimeError(f"attn_contracts/rules.toml holds {[r.code.value for r in rules]}, "
                           f"not one rule per code in order ({[c.value for c in Code]})")
    return rules


#: code → its rule; every :class:`Code` has exactly one (checked as the table loads)
RULES: Mapping[Code, Rule] = MappingProxyType({r.code: r for r in _load_rules()})


def rules_markdown() -> str:
    """The README's code table: one row per code, from :data:`RULES`."""
    rows = ["| code | default severity | meaning | fix |", "|---|---|---|---|"]
    rows += [f"| {r.code} | {r.severity} | {_cell(r.meaning)} | {_cell(r.fix)} |"
             for r in RULES.values()]
    return "\n".join(rows)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


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

    @classmethod
    def from_rule(cls, code: Code, subject: str, message: str, **fields: Any) -> Finding:
        """A finding with its code's default severity (:data:`RULES`), unless ``severity`` is
        given."""
        fields.setdefault("severity", RULES[code].severity)
        return cls(code, subject, message, **fields)

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
