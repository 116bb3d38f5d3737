"""What every command prints through: the rich console, tables, findings, and the exit codes."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any

from attn_contracts.findings import Finding
from attn_contracts.findings import Severity

__all__ = ["EXIT_FINDINGS", "EXIT_OK", "EXIT_USAGE", "UsageError", "console", "print_findings",
           "print_table"]

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad arguments or input that is not the user's contract: one line on stderr, exit 2."""


def console(*, stderr: bool = False) -> Any:
    """The rich console of every command: wide when piped, so CI logs are not folded."""
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    return Console(file=stream, width=None if stream.isatty() else 160, highlight=False)


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """One rich table on stdout; every CLI table goes through here."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title=title, title_justify="left")
    for col in columns:
        table.add_column(col, overflow="fold")
    for row in rows:  # cells are plain text: "[kernels]" in a hint is no markup tag
        table.add_row(*(Text(str(c)) for c in row))
    console().print(table)


def print_findings(findings: Sequence[Finding], fmt: str, *, ok_message: str) -> int:
    """Print findings as text or JSON and return the exit code they imply: notes are shown but
    fail nothing (a base left to the call site is information, not a defect)."""
    problems = [f for f in findings if f.severity is not Severity.NOTE]
    if fmt == "json":
        print(json.dumps({"ok": not problems, "findings": [f.to_json() for f in findings]},
                         indent=2, allow_nan=False))
    else:
        for f in findings:
            print(f.render())
        notes = len(findings) - len(problems)
        print(f"{len(problems)} problem(s)" + (f", {notes} note(s)" if notes else "")
              if problems else ok_message + (f" ({notes} note(s))" if notes else ""))
    return EXIT_FINDINGS if problems else EXIT_OK
