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

import dataclasses
import enum
import math
import re
import tomllib
from collections.abc import Iterator
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import KW_ONLY
from dataclasses import dataclass
from functools import cache
from importlib import resources
from importlib.resources.abc import Traversable
from types import MappingProxyType
from typing import Annotated
from typing import Any

__all__ = ["RULES", "Code", "ContractError", "Escalation", "Finding", "Location", "OptionalLocation",
           "Rule", "RulesError", "Severity", "check_rules", "error_text", "location_text",
           "printable", "read_data_text", "rule_groups", "rules_markdown", "selected_codes",
           "selectors_text"]

_ERROR_TEXT_LIMIT = 300  # characters of an exception a finding quotes (a tensor repr is MBs)


def error_text(err: BaseException) -> str:
    """``Type: message`` of an exception raised by code we do not own (an adapter, a plugin),
    bounded: an exception that prints a tensor must not flood the report."""
    text = f"{type(err).__name__}: {err}"
    return text if len(text) <= _ERROR_TEXT_LIMIT else text[: _ERROR_TEXT_LIMIT - 3] + "..."


#: characters that would let a path or message forge output (a line break starts a fake finding,
#: an ANSI escape or a bidirectional override rewrites what a reader sees): the control
#: characters, the Unicode line and paragraph separators, and the bidirectional controls
_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f"
                          "\u202a-\u202e\u2066-\u2069]")


def printable(text: str) -> str:
    """``text`` with every character of :data:`_UNPRINTABLE` written as its Python escape
    (``\\n``, ``\\x1b``, ``\\u202e``): a file name or message printed as text is one line that
    reads as it is. The text and GitHub formats of every command print through this."""
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


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
    AC034 = "AC034"
    AC035 = "AC035"


class Severity(enum.StrEnum):
    """How sure the tool is that a finding is a real defect (ruff and SARIF use the same three).

    ``error``: a contradiction the tool can show (a declared base that differs from what the called
    kernel's record says); ``warning``: a hazard the tool cannot decide (a default nothing confirms);
    ``note``: information (a base left to the call site)."""

    ERROR = "error"
    WARNING = "warning"
    NOTE = "note"


@dataclass(frozen=True)
class Escalation:
    """A context in which a rule's finding has another severity than its default, named so that
    the checker that reports it says which (``Finding(..., escalation=NAME)``) and the README shows it."""

    severity: Severity
    when: str


@dataclass(frozen=True)
class Rule:
    """What a finding code means, as the README, SARIF and ``--statistics`` show it.

    ``severity`` is the default: what the linter and the engine checks report the code as where
    the context does not decide otherwise. ``escalations``: the named contexts that give the code
    another severity, each documented here (a finding takes one by name:
    ``Finding(code, ..., escalation=NAME)``). Validation and startup refuse on every
    finding but a note."""

    code: Code
    title: str
    severity: Severity
    meaning: str
    fix: str
    #: selects the rule as its code does (``--select edge-base``)
    name: str = ""
    #: the groups that select it (``--select lint``): keys of :func:`rule_groups`
    groups: tuple[str, ...] = ()
    escalations: Mapping[str, Escalation] = dataclasses.field(
        default_factory=lambda: MappingProxyType({}))


class RulesError(RuntimeError):
    """The rule table shipped with the package (``rules.toml``) is missing or damaged: a broken
    installation, told in one line naming the file and the problem (the CLI exits 2)."""


def _rules_file() -> Traversable:
    return resources.files("attn_contracts").joinpath("rules.toml")


@cache
def _load_rules() -> tuple[Mapping[Code, Rule], Mapping[str, str]]:
    """The rule table from ``rules.toml`` beside this module (data shipped with the package: a
    code's words are edited there, not here) and its groups, read on first use, never at import: a damaged
    file is one :class:`RulesError` naming it and the problem. Every :class:`Code` has exactly
    one rule, in order."""
    from pydantic import BaseModel
    from pydantic import ConfigDict
    from pydantic import Field
    from pydantic import ValidationError

    class _Escalation(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)
        severity: Severity
        when: str

    class _Row(BaseModel):
        model_config = ConfigDict(extra="forbid", frozen=True)
        code: Code
        name: Annotated[str, Field(pattern=r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")]
        groups: Annotated[tuple[str, ...], Field(min_length=1)]
        title: str
        severity: Severity
        meaning: str
        fix: str
        escalations: dict[str, _Escalation] = {}

    path = _rules_file()
    doc = _read_table(path)
    groups = _groups(path, doc)
    rows = doc.get("rule")
    if not isinstance(rows, list) or not rows:
        raise RulesError(f"{path}: no [[rule]] tables (found keys: "
                         f"{', '.join(sorted(doc)) or 'none'}); reinstall attn-contracts")
    rules: list[Rule] = []
    for i, raw in enumerate(rows, 1):
        try:
            row = _Row.model_validate(raw)
        except ValidationError as err:
            problems = "; ".join(f"{'.'.join(map(str, e['loc'])) or 'the table'}: {e['msg']}"
                                 for e in err.errors())
            code = raw.get("code", "?") if isinstance(raw, dict) else "?"
            raise RulesError(f"{path}: [[rule]] number {i} ({code}): {problems}; reinstall "
                             "attn-contracts") from None
        escalations = {name: Escalation(e.severity, e.when) for name, e in row.escalations.items()}
        _check_names(path, f"[[rule]] number {i} ({row.code})", row.name, row.groups, groups,
                     {r.name for r in rules})
        rules.append(Rule(row.code, row.title, row.severity, row.meaning, row.fix, row.name,
                          row.groups,
                          MappingProxyType(escalations)))
    if [r.code for r in rules] != list(Code):
        raise RulesError(f"{path}: holds {', '.join(r.code.value for r in rules)}, not one rule "
                         f"per code in order (allowed: {', '.join(c.value for c in Code)}); "
                         "reinstall attn-contracts")
    return MappingProxyType({r.code: r for r in rules}), MappingProxyType(groups)


def read_data_text(path: Traversable, what: str, error: type[RulesError] = RulesError) -> str:
    """The text of a data file the package ships (``what`` names it in messages); one that
    cannot be read or is not UTF-8 is ``error``, one line naming the file."""
    try:
        return path.read_bytes().decode("utf-8")
    except OSError as err:
        raise error(f"{path}: cannot read {what} ({err.strerror or err}); "
                    "reinstall attn-contracts") from None
    except UnicodeDecodeError as err:
        raise error(f"{path}: {what} is not UTF-8 (byte offset {err.start}); "
                    "reinstall attn-contracts") from None


def _read_table(path: Traversable) -> dict[str, Any]:
    """``rules.toml`` parsed; a file that cannot be read, decoded or parsed is a
    :class:`RulesError`."""
    text = read_data_text(path, "the rule table")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise RulesError(f"{path}: the rule table is not valid TOML ({err}); reinstall "
                         "attn-contracts") from None


def _groups(path: Traversable, doc: Mapping[str, Any]) -> dict[str, str]:
    """The ``[groups]`` table: group name → description, at least one."""
    groups = doc.get("groups")
    if not isinstance(groups, dict) or not groups or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in groups.items()):
        raise RulesError(f"{path}: no [groups] table of group names and their descriptions "
                         f"(found {groups!r:.60}); reinstall attn-contracts")
    return groups


def _check_names(path: Traversable, which: str, name: str, in_groups: Sequence[str],
                 groups: Mapping[str, str], taken: set[str]) -> None:
    """A rule's groups are among ``[groups]``, and its name is its own (no group's, no earlier
    rule's)."""
    unknown = [g for g in in_groups if g not in groups]
    if unknown or name in groups or name in taken:
        problem = (f"groups {unknown} are not among [groups] ({', '.join(groups)})" if unknown
                   else f"name {name!r} is taken (allowed: a name of its own, no group's)")
        raise RulesError(f"{path}: {which}: {problem}; reinstall attn-contracts")


class _RuleTable(Mapping[Code, Rule]):
    """:data:`RULES`: the rule table, loaded on first use (a damaged ``rules.toml`` must not
    make ``import attn_contracts`` fail before anything can say what is wrong)."""

    def __getitem__(self, code: Code) -> Rule:
        return _load_rules()[0][code]

    def __iter__(self) -> Iterator[Code]:
        return iter(_load_rules()[0])

    def __len__(self) -> int:
        return len(_load_rules()[0])


#: code → its rule; every :class:`Code` has exactly one (checked as the table loads)
RULES: Mapping[Code, Rule] = _RuleTable()


def rule_groups() -> Mapping[str, str]:
    """Each group of rules (``lint``, ``startup``, ``engine``) and what it holds, from
    ``rules.toml``."""
    return _load_rules()[1]


@cache  # asked once per finding by the linter; the table does not change within a run
def selected_codes(selector: str) -> frozenset[Code] | None:
    """The codes a ``--select``/``--ignore`` selector names, case-insensitive: a code or a prefix
    of codes (``AC003``, ``AC00``), a rule's name (``edge-base``) or a group (``lint``); ``None``
    where it names nothing (selecting it would silently select nothing)."""
    text = selector.strip()
    by_prefix = frozenset(c for c in Code if text and c.value.startswith(text.upper()))
    if by_prefix:
        return by_prefix
    key = text.lower()
    by_name = frozenset(r.code for r in RULES.values() if key in (r.name, *r.groups))
    return by_name or None


def selectors_text() -> str:
    """What a selector may be, for the message that refuses one."""
    return (f"a code or a prefix of codes ({', '.join(Code)}; AC00 selects several), "
            f"a rule name ({', '.join(r.name for r in RULES.values())}) or a group "
            f"({', '.join(rule_groups())})")


def check_rules() -> None:
    """Load the rule table now (the CLI's first step): :class:`RulesError` if it is damaged."""
    _load_rules()


def rules_markdown() -> str:
    """The README's code table: one row per code, from :data:`RULES`."""
    rows = ["| code | name | groups | default severity | meaning | fix |",
            "|---|---|---|---|---|---|"]
    rows += [f"| {r.code} | `{r.name}` | {', '.join(r.groups)} | {_severities(r)} | "
             f"{_cell(r.meaning)} | {_cell(r.fix)} |" for r in RULES.values()]
    return "\n".join(rows)


def _severities(rule: Rule) -> str:
    """The default severity, then each documented escalation: ``warning; error: <when>``."""
    return "; ".join([str(rule.severity), *(f"{e.severity} ({name}): {_cell(e.when)}"
                                            for name, e in rule.escalations.items())])


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


#: a line or column number as :class:`Location` writes it (no sign, no leading zero, ASCII
#: digits only): text read back into a place is the text it writes again
_NUMBER = "0|[1-9][0-9]*"
_POINT = re.compile(rf"(?P<path>.*):(?P<line>{_NUMBER}):(?P<col>{_NUMBER})", re.DOTALL)
_LINE = re.compile(rf"(?P<path>.*):(?P<line>{_NUMBER})", re.DOTALL)


@dataclass(frozen=True)
class Location:
    """Where a finding (or a fact the linter infers) is: a point in a source file, a line of
    one, or a whole unit that has no line to name.

    - ``Location(path, line, col)``: a point, 1-based line and column, as the parser gives
      every node (``str``: ``"path:line:col"``);
    - ``Location(path, line)``: a line, as an engine integration cites a declaration in the
      engine's sources (``"vllm/v1/attention/backend.py:798"``) and the tracer a call site;
    - ``Location(name)``: a whole unit: a file named without a line (a record file), or a
      place that is no file at all (a plugin's entry point, the object vLLM built, a class
      whose source cannot be read). ``path`` holds the file's path or the unit's name.

    A column is only given with a line. A finding about no place at all has no Location
    (``Finding.location is None``), never an empty one. Places are carried as Locations from
    where they are made (the syntax node, the frame, the entry point) to where they are
    written: the outputs read the fields (:mod:`attn_contracts.lint.report`), and the text
    form (``str``) is what the text and JSON formats write. Text is read back into a place
    only where it comes in from outside: :meth:`parse` (a finding read back from JSON, a
    stored mapping)."""

    path: str
    line: int | None = None
    col: int | None = None

    def __post_init__(self) -> None:
        if self.col is not None and self.line is None:
            raise ValueError(f"a column ({self.col}) without a line in {self.path!r} "
                             "(allowed: path; path, line; path, line, col)")

    def __str__(self) -> str:
        if self.line is None:
            return self.path
        if self.col is None:
            return f"{self.path}:{self.line}"
        return f"{self.path}:{self.line}:{self.col}"

    @property
    def point(self) -> tuple[int, int] | None:
        """(line, column) where this is a point in a file, else None (a line, a unit)."""
        return None if self.line is None or self.col is None else (self.line, self.col)

    @classmethod
    def parse(cls, text: str) -> Location | None:
        """The place a text names, read at the boundary where text comes in: ``"path:line:col"``
        is a point, ``"path:line"`` a line (the path may hold colons itself), any other
        non-empty text a unit of that name; ``""`` is no place (None). ``str`` of the result is
        ``text`` again (numbers are read only as :class:`Location` writes them: ``"a.py:07"``
        is a unit). Text is read as the most specific place it spells: a unit whose name ends
        in ``:<number>`` reads back as a line, a line whose path does as a point."""
        if not text:
            return None
        if (m := _POINT.fullmatch(text)) is not None:
            return cls(m["path"], int(m["line"]), int(m["col"]))
        if (m := _LINE.fullmatch(text)) is not None:
            return cls(m["path"], int(m["line"]))
        return cls(text)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        """pydantic (a stored vLLM mapping) reads and writes a place as its text: the stored
        bytes are those of the text form, and text coming back in is read by :meth:`parse`."""
        return _text_schema(optional=False)


def location_text(at: Location | None) -> str:
    """The text a place is written as: ``str(at)``, ``""`` for no place."""
    return "" if at is None else str(at)


def _from_text(value: object, optional: bool) -> Location | None:
    if isinstance(value, Location) or (value is None and optional):
        return value
    if isinstance(value, str) and (at := Location.parse(value)) is not None:
        return at
    if isinstance(value, str) and optional:  # "": no place
        return None
    raise ValueError(f"not a place: {value!r:.80} (allowed: 'path:line:col', 'path:line', a "
                     f"name{', or empty' if optional else ''})")


def _text_schema(optional: bool) -> Any:
    from pydantic_core import core_schema

    return core_schema.no_info_plain_validator_function(
        lambda value: _from_text(value, optional),
        serialization=core_schema.plain_serializer_function_ser_schema(location_text))


class _AsText:
    """pydantic metadata for an optional place (``Annotated[Location | None, _AsText()]``):
    written as its text, ``""`` for none, as the JSON of a finding writes it."""

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        return _text_schema(optional=True)


#: a place or none, stored by pydantic as its text (``""``: none)
OptionalLocation = Annotated[Location | None, _AsText()]


@dataclass(frozen=True)
class Finding:
    """One problem: which rule, about what, the value found, what is allowed, how to fix it.

    Everything after ``message`` is keyword-only: ``hint`` and ``allowed`` are both strings, and a
    swapped pair would type-check.

    The severity is the rule table's (:data:`RULES`), never the caller's: the code's default,
    or that of the documented escalation named (``escalation="confirmed"``; an unknown name is
    a ``ValueError`` listing the rule's). It is no argument, so ``Finding(..., severity=...)``
    and ``dataclasses.replace(f, severity=...)`` fail; :meth:`escalated` re-grades a finding
    by name and :meth:`from_json` reads one back."""

    code: Code
    subject: str
    message: str
    _: KW_ONLY
    #: the documented escalation of the rule this finding is reported under (None: the
    #: default); kept so that ``replace(f, location=...)`` keeps the severity. Not compared:
    #: two findings that say the same are equal whichever name of one severity they carry.
    escalation: str | None = dataclasses.field(default=None, compare=False)
    severity: Severity = dataclasses.field(init=False)
    hint: str = ""
    field: str = ""
    found: Any = None
    allowed: str = ""
    #: where it is (None: about no place, as a catalog record's own finding)
    location: OptionalLocation = None

    def __post_init__(self) -> None:
        rule = RULES[self.code]
        if self.escalation is None:
            severity = rule.severity
        elif self.escalation in rule.escalations:
            severity = rule.escalations[self.escalation].severity
        else:
            raise ValueError(f"{self.code} has no escalation {self.escalation!r} (allowed: "
                             f"{', '.join(rule.escalations) or 'none'}; rules.toml)")
        object.__setattr__(self, "severity", severity)  # frozen: set once, here

    def escalated(self, escalation: str | None) -> Finding:
        """The same finding at the severity of the rule's documented ``escalation`` (None: the
        code's default), for a caller whose context re-grades a finding another check made."""
        return dataclasses.replace(self, escalation=escalation)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Finding:
        """A finding from :meth:`to_json`'s form (a peer rank's report). Its severity must be
        one its rule allows (the default or an escalation's; the escalation is picked by it),
        else a ``ValueError`` naming the value and the allowed ones; ``found`` is kept as JSON
        gave it."""
        code = Code(data["code"])
        rule = RULES[code]
        allowed: dict[str, str | None] = {str(rule.severity): None}
        for name, e in rule.escalations.items():
            allowed.setdefault(str(e.severity), name)
        severity = data["severity"]
        if severity not in allowed:
            raise ValueError(f"{code} cannot be severity {severity!r} (allowed: "
                             f"{', '.join(allowed)}; rules.toml)")
        return cls(code, data["subject"], data["message"], escalation=allowed[severity],
                   hint=data["hint"], field=data["field"], found=data["found"],
                   allowed=data["allowed"], location=Location.parse(data["location"]))

    @property
    def at(self) -> Location | None:
        """:attr:`location` where it is a point in a file (a line and a column), else None."""
        return self.location if self.location is not None and self.location.point else None

    def render(self) -> str:
        """One line of text (control characters escaped: :func:`printable`)."""
        where = f"{self.location}: " if self.location is not None else ""
        hint = f" (hint: {self.hint})" if self.hint else ""
        level = "" if self.severity is Severity.ERROR else f"[{self.severity}] "
        return printable(f"{where}{self.code} {level}{self.subject}: {self.message}{hint}")

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
            "location": location_text(self.location),
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
