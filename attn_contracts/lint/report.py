"""The report of ``attn-contracts lint``: findings as text, JSON, GitHub workflow commands or
SARIF 2.1.0 (GitHub code scanning), and the ``--statistics`` counts per code.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import quote

from attn_contracts.findings import RULES
from attn_contracts.findings import Code
from attn_contracts.findings import Finding
from attn_contracts.findings import Rule
from attn_contracts.findings import Severity
from attn_contracts.findings import location_text
from attn_contracts.findings import printable

__all__ = ["SRCROOT", "render", "sarif", "statistics"]


def _where(f: Finding) -> tuple[str, int, int]:
    """A lint finding's place, read from its :class:`~attn_contracts.findings.Location`'s
    fields: every one is a point of a file (path, line, column)."""
    at = f.location
    point = at.point if at is not None else None
    if at is None or point is None:
        raise ValueError(f"{f.code} is located at {location_text(at)!r}, not at a file's "
                         "path:line:col (allowed: the lint's findings only)")
    return at.path, point[0], point[1]


#: GitHub workflow commands per severity (``::notice`` is GitHub's name for a note)
_GITHUB = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "notice"}


def _property(value: object) -> str:
    """A workflow command's property value: ``%``, CR and LF escaped as in its data, and ``:``
    and ``,``, which end a property (``file=a,b.py`` would name ``a``)."""
    return _data(value).replace(":", "%3A").replace(",", "%2C")


def _data(value: object) -> str:
    """A workflow command's message: ``%`` first, so an escape is never escaped twice; then CR
    and LF as the runner unescapes them, and any other control character as text
    (:func:`~attn_contracts.findings.printable`), so no value starts a command of its own."""
    return printable(str(value).replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A"))


def render(findings: list[Finding], fmt: str) -> str:
    if fmt == "json":
        return json.dumps([{"path": _where(f)[0], "line": _where(f)[1], "col": _where(f)[2],
                            **f.to_json()} for f in findings], indent=2)
    if fmt == "sarif":
        return json.dumps(sarif(findings), indent=2)
    if fmt == "github":
        return "\n".join(
            f"::{_GITHUB[f.severity]} file={_property(_where(f)[0])},line={_where(f)[1]},"
            f"col={_where(f)[2]},title={_property(f.code)}::{_data(f.message)}"
            for f in findings)
    return "\n".join(printable(  # the place's text: path:line:col
        f"{location_text(f.location)}: {f.code} {'' if f.severity is Severity.ERROR else f'[{f.severity}] '}"
        f"{f.message}") for f in findings)


#: the base of the run's relative URIs (SARIF's ``originalUriBaseIds``; GitHub code scanning
#: resolves it to the checkout)
SRCROOT = "%SRCROOT%"


def _artifact(path: str, root: Path) -> dict[str, str]:
    """A SARIF ``artifactLocation``: a path below ``root`` as a percent-encoded relative
    reference against :data:`SRCROOT`, any other as an absolute ``file://`` URI (a space,
    ``#``, ``%``, ``?``, ``:`` or a non-ASCII letter is encoded, as RFC 3986 requires)."""
    absolute = Path(os.path.abspath(path))
    try:
        relative = absolute.relative_to(root)
    except ValueError:
        return {"uri": absolute.as_uri()}
    return {"uri": quote(relative.as_posix(), safe="/"), "uriBaseId": SRCROOT}


def _folder_uri(folder: Path) -> str:
    """A folder's ``file://`` URI with the trailing slash SARIF requires of a base."""
    uri = folder.as_uri()
    return uri if uri.endswith("/") else uri + "/"


def _sarif_rule(rule: Rule) -> dict[str, object]:
    """A SARIF ``reportingDescriptor`` from the code's rule: title, meaning, fix, and its default
    level (a result still carries its own)."""
    return {"id": str(rule.code), "name": rule.name,
            "shortDescription": {"text": rule.title},
            "fullDescription": {"text": rule.meaning},
            "help": {"text": rule.fix},
            "defaultConfiguration": {"level": str(rule.severity)}}


def sarif(findings: list[Finding], root: Path | None = None) -> dict[str, object]:
    """One SARIF 2.1.0 log (GitHub code scanning): a run of this tool, a rule per code that
    occurs, a result per finding with its level (``error``/``warning``/``note``, SARIF's own
    three) and its region; locations relative to ``root`` (default: the working folder),
    recorded as the run's ``%SRCROOT%``."""
    from attn_contracts import __version__

    base = Path(os.path.abspath(root if root is not None else os.getcwd()))
    codes = sorted({f.code for f in findings})
    index = {c: i for i, c in enumerate(codes)}
    rules = [_sarif_rule(RULES[c]) for c in codes]
    results = []
    for f in findings:
        path, line, col = _where(f)
        results.append({
            "ruleId": str(f.code), "ruleIndex": index[f.code], "level": str(f.severity),
            "message": {"text": f"{f.message} (hint: {f.hint})" if f.hint else f.message},
            "locations": [{"physicalLocation": {
                "artifactLocation": _artifact(path, base),
                "region": {"startLine": max(1, line), "startColumn": max(1, col)}}}]})
    return {"$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
            "runs": [{"tool": {"driver": {"name": "attn-contracts", "version": __version__,
                                          "rules": rules}},
                      "originalUriBaseIds": {SRCROOT: {"uri": _folder_uri(base)}},
                      "results": results}]}


def statistics(findings: list[Finding]) -> str:
    """``--statistics``: one line per code, most frequent first (as ruff prints them)."""
    counts: dict[tuple[Code, Severity], int] = {}
    for f in findings:
        counts[(f.code, f.severity)] = counts.get((f.code, f.severity), 0) + 1
    rows = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0][0], kv[0][1]))
    return "\n".join(f"{n:>5}\t{code}\t[{sev}]\t{RULES[code].title}"
                     for (code, sev), n in rows)
