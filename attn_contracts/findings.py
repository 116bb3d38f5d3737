"""Finding codes, the rule table that says what each means, and the finding record every check
returns.

Codes are stable: tests, CI configurations and `# noqa` comments name them, so a code is never
renumbered or reused. :data:`RULES` is the one place a code is described (title, default severity,
what it means, the fix): the checkers take their default severities from it, the linter's
``--select``/``--statistics`` and SARIF rule metadata read it, and the README's code table is
generated from it (``python tools/readme_rules.py``; a test fails when the README is stale).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass
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


_E, _W, _N = Severity.ERROR, Severity.WARNING, Severity.NOTE

_RULES = (
    Rule(Code.AC000, "a file could not be read or parsed", _E,
         "a file could not be read or parsed (lint, validate)",
         "make the file a readable regular file of UTF-8 text under 10 MiB that parses"),
    Rule(Code.AC001, "returns LSE but declares no base", _E,
         "returns LSE but declares no base (record, file, plugin, class, `LseSpec(...)`, dict)",
         'declare the base: `base = "e"` or `"2"` (`lse_base_on_e = True`/`False` on a class)'),
    Rule(Code.AC002, "the base comes only from an inherited default", _E,
         "the base comes only from an inherited default (class hierarchy); an error where the "
         "kernels the class calls contradict it or nothing confirms it, a note where they "
         "confirm it, a warning where the default sits in a file not linted",
         "declare the base on the class itself, or pin the kernel's base at its call"),
    Rule(Code.AC003, "a combine call passes a literal base", _W,
         "a combine call passes a literal base instead of reading the backend's (lint)",
         "pass the base read from the backend (`is_lse_base_on_e=impl.lse_base_on_e`) or plan "
         "from the record"),
    Rule(Code.AC004, "LSE details on something that returns no LSE", _E,
         "LSE details declared on something that returns no LSE",
         'remove the LSE details, or declare that it returns an LSE (`"returns": "lse"`)'),
    Rule(Code.AC005, "duplicate record name", _E,
         "two different records with the same name; in lint, a named record (`record-files`, "
         "`--records`) that contradicts a built-in one for the same function and release (left "
         "out)",
         "rename one of the records, or drop the copy that contradicts the built-in one"),
    Rule(Code.AC006, "DCP world size > 1 with a backend that returns no LSE", _E,
         "DCP world size > 1 (or a combine plan) with a backend that returns no LSE",
         "use a backend that returns its LSE, or run with world size 1"),
    Rule(Code.AC007, "DCP ranks disagree on records or settings", _E,
         "DCP ranks disagree on records, backend or settings (each differing field named), a "
         "rank did not report in time, a rank failed before reporting (`rank 1 failed vLLM's "
         "own check: ...`, first, on every rank at once), or the store became unreachable",
         "give every rank the same records, backend and settings (the message names the field)"),
    Rule(Code.AC008, "what a kernel returns differs from its record", _E,
         "what a kernel returns differs from its record (verify, startup probe)",
         "correct the record (or the class's declaration) to what the kernel returns"),
    Rule(Code.AC009, 'getattr(obj, "<capability>", default)', _W,
         '`getattr(obj, "<capability>", default)`: a typo silently becomes the default (lint)',
         "read the capability as an attribute (`obj.lse_base_on_e`) so a missing one fails"),
    Rule(Code.AC010, "heads not divisible by the DCP world size in a head-scattered mode", _E,
         "heads not divisible by the world size in a head-scattered mode (`a2a`, `ag_rs`)",
         "choose a world size that divides the head count, or a mode that keeps all heads "
         "(`ar`)"),
    Rule(Code.AC011, "assert used to check a capability", _W,
         "`assert` used to check a capability; it vanishes under `python -O` (lint)",
         "raise an exception (or call `validate_startup`)"),
    Rule(Code.AC012, "a record breaks its schema (unknown key, wrong type, bad value)", _E,
         "a record breaks its schema: unknown key, wrong type (`base = 2`), bad value",
         "write the field as the schema allows (`attn-contracts schema`)"),
    Rule(Code.AC013, "unknown record or backend name", _E,
         "unknown record or backend name (the message lists the known ones); at vLLM's startup a "
         "backend no mapping knows, or no `AttentionBackendEnum` member (an out-of-tree "
         "backend), is a warning",
         "use a name the message lists, or register a record for it"),
    Rule(Code.AC014, "a plugin could not be loaded", _E,
         "a plugin could not be loaded, or is not a record source",
         "fix the entry point so it loads and returns records"),
    Rule(Code.AC015, "the combine cannot read what the record declares", _E,
         "the combine cannot serve what the record declares (head dim, padded heads, dtype)",
         "use a setting the combine serves, or another consumer"),
    Rule(Code.AC016, "edge: the consumer assumes another LSE base than the producer emits", _E,
         "edge: the consumer assumes another LSE base than the producer emits (the hint names "
         "the keyword value the edge needs); the trace: also a conversion (× ln 2, × log2 e) "
         "applied to the other base",
         "pass the keyword value the hint names, or convert the LSE between the bases"),
    Rule(Code.AC017, "edge: the consumer reads another LSE layout than the producer writes", _E,
         "edge: the consumer reads another LSE layout than the producer writes; the trace: also "
         "a stack whose states axis is not where the consumer reads it",
         "transpose the LSE (a view) to the consumer's layout, or ask the producer for it"),
    Rule(Code.AC018, "edge: empty rows the consumer does not treat as empty, or NaN out of it",
         _W,
         "edge: empty rows the consumer does not read as empty (or undefined ones it cannot "
         "mask), 0/0 = NaN on all-empty rows, 0·NaN",
         "pass a row mask, sanitise empty rows' LSE to −inf, or use a consumer that masks"),
    Rule(Code.AC019, "edge: the setting is outside the consumer's limits", _W,
         "edge: the setting is outside the consumer's limits (threads per block, heads × head "
         "dim, powers of two, head dims, states)",
         "use a consumer whose limits hold the setting"),
    Rule(Code.AC020, "edge: the consumer does not take the producer's LSE dtype", _W,
         "edge: the consumer does not take the producer's LSE dtype",
         "cast the LSE to a dtype the consumer takes (float32)"),
    Rule(Code.AC021, "a combine function's base parameter has a default value (lint)", _W,
         "a combine function's base parameter has a default a forgetful caller silently gets "
         "(lint)",
         "make the base parameter required, so every caller states the base"),
    Rule(Code.AC022, "a call of a known consumer omits its base keyword (lint)", _W,
         "a call of a known consumer omits its base keyword and relies on that default (lint)",
         "pass the base keyword, read from the producer's record or class"),
    Rule(Code.AC023, "one LSE reaches consumers (or comes from a producer) of another base "
         "(lint)", _E,
         "one LSE reaches consumers of two bases, or a producer's LSE a consumer of another "
         "base (lint)",
         "convert the LSE where the bases change, or select the consumer's base from the "
         "producer"),
    Rule(Code.AC024, "a sink inside every rank's LSE would be counted once per rank", _E,
         "a sink inside every partial's LSE would count once per partial (`includes_sink = "
         "true`, world size > 1)",
         "run the kernel without the sink and plan with `sink=True`: the combine adds it once"),
    Rule(Code.AC025, "empty rows are undefined and the call gave no row mask", _E,
         "a call without a row mask where one is required (empty rows undefined, planned with "
         "`row_mask=True`, or a mode whose merge multiplies by the weight while the record's "
         "empty output is not 0: `fi_a2a`)",
         "pass `row_mask=` (or `lens=`) on the call"),
    Rule(Code.AC026, "a symmetric-memory mode (a2a_direct, fi_a2a) cannot run here", _E,
         "a symmetric-memory mode cannot run here or with this setting: `a2a_direct` (no CUDA, "
         "no symmetric memory, not NCCL, a single rank, the dtype), `fi_a2a` (FlashInfer's comm "
         "module missing, no CUDA, not NCCL, the dtype, head-dim rows not 16-byte multiples, > "
         "64 ranks, a sink or merged LSE asked for)",
         "use `a2a` (or `a2a_best`, which falls back by itself), or fix what the message names"),
    Rule(Code.AC027, "a combine call does not match its plan (N, H, D, dtype, sink, workspace, "
         "mode)", _E,
         "a combine call that does not match its plan: partials, heads, head dim or dtype; an "
         "LSE of another layout, row count or dtype; a row mask of another shape or dtype, or "
         "beside `lens`; an `out` on another device; a sink of the wrong length or dtype; a "
         "workspace of another plan or group, or a step it cannot hold (slot, `max_tokens`, "
         "device, a buffer of another mode); a mode that needs a workspace called without one; "
         "a rescale without a rank",
         "call with what the plan was made for, or make a plan (and workspace) for the call"),
    Rule(Code.AC028, "a producer call leaves its LSE base to run-time dispatch", _W,
         "a producer call leaves its LSE base to run-time dispatch (FlashInfer's "
         "`trtllm_batch_decode_with_kv_cache_mla` without `return_lse_base` under "
         '`backend="auto"`): lint warns; `validate_startup(..., producer_call={...})` refuses, '
         "naming what to pass, and so does a backend whose base its call chooses given without "
         'the call (`validate_startup(backend="flashinfer.mla.trtllm_gen")`, `validate '
         "--backend ...` without `--call`: the engine must say which kernel it runs); the trace "
         "warns at the traced call",
         'pin the base at the call (`return_lse_base="base2"` or `"basee"`) and say so '
         "(`producer_call=`, `--call`)"),
    Rule(Code.AC029, "records of one function disagree, version unknown: what they agree on is "
         "used", _N,
         "records for one name disagree and the linted tree's version does not pick one "
         "(unknown, or their ranges overlap there, or two functions of one name): only what "
         "they agree on is used (lint note naming the records and why)",
         "set `[tool.attn-contracts] versions = { <library> = \"<version>\" }`"),
    Rule(Code.AC030, "edge: empty rows' output is undefined or NaN and the consumer multiplies "
         "it by 0", _E,
         "edge: an empty row's LSE says empty but its output holds NaN or garbage "
         "(`lse.empty_out` `nan`, `undefined`, or absent), and the consumer multiplies partials "
         "by their weight (0·NaN = NaN) and takes no row mask (trtllm-gen MLA into FlashInfer's "
         "merges, flashinfer #4975)",
         "zero the empty rows' output, pass a row mask, or use a consumer that selects "
         "weight-0 partials away"),
    Rule(Code.AC031, "ranks disagree on what a collective consumer needs identical (it would "
         "hang)", _E,
         "DCP ranks pass a collective consumer (one every rank calls together: FlashInfer's "
         "fused `decode_cp_a2a_lse_reduce`) different values where it needs them identical: "
         "the base its keyword selects, the plan's world size, heads, head dim, dtype, the "
         "workspace's `max_tokens`; it would hang (flashinfer #4586). A note where one process "
         "cannot check it (`validate`, or `validate_startup` without `group=`)",
         "give every rank the same values (the message names the field); pass `group=` so the "
         "ranks compare them"),
    Rule(Code.AC032, "a class's own LSE base is not confirmed by the kernels it calls (lint)", _W,
         "a class's own LSE base declaration is not confirmed by the kernels it calls (lint): a "
         "warning where a kernel it calls leaves its base to the library's dispatch, a note "
         "where no kernel a producer record knows is called",
         "pin the kernel's base at its call, or add a producer record (with `calls`) for the "
         "kernel it runs"),
)

#: code → its rule; every :class:`Code` has exactly one (a test checks)
RULES: Mapping[Code, Rule] = MappingProxyType({r.code: r for r in _RULES})


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
