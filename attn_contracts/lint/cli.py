"""``attn-contracts lint``: static checks for backend authors and engine code (no torch, no
execution: sources are read with ``ast``, records with ``tomllib``).

Rules: ``AC001`` returns LSE without a base, ``AC002`` base only from an inherited default,
``AC003`` literal base passed to a combine, ``AC004`` LSE details without LSE, ``AC009``
``getattr`` default on a capability, ``AC011`` ``assert`` on a capability, ``AC012`` a record file
breaking its schema, ``AC000`` a file that cannot be read (not a regular file, over
:data:`MAX_FILE_BYTES`, undecodable) or parsed or analysed (nested too deeply); the flow rules
(:mod:`attn_contracts.lint.flow`): ``AC003`` through partial/alias/wrapper/``**kwargs``,
``AC021`` a defaulted base parameter, ``AC022`` an omitted base keyword, ``AC023`` one LSE read
in two bases, ``AC028`` a producer call that leaves its base to dispatch, ``AC029`` records that
disagree for an unknown release (a note), ``AC005`` a named record contradicting a built-in one,
``AC033`` a bound of the analysis reached (a note naming the function: :mod:`.bounds`).
Records teach the rules only from the built-in catalog, ``record-files`` and ``--records FILE``
(:mod:`attn_contracts.lint.provenance`); a records file among the linted paths is only checked
against the schema. ``# noqa: AC003`` silences one line. Every finding has a severity (error,
warning, note) in every format (text, JSON, GitHub, SARIF 2.1.0); columns are characters, 1-based.
Exit codes: 0 no error (warnings and notes do not count, unless ``--warnings-as-errors``;
``--exit-zero``: always 0), 1 errors, 2 usage error (a missing path or ``--records`` file, a bad
or unreadable ``pyproject.toml``, paths of two projects whose settings differ, an unknown
selector in ``--select``/``--ignore`` (each a code or prefix, a rule name or a group), ``--jobs``
below 1, an unwritable ``--output-file``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from collections.abc import Sequence
from pathlib import Path

from attn_contracts.findings import Finding
from attn_contracts.findings import RulesError
from attn_contracts.findings import Severity
from attn_contracts.findings import check_rules
from attn_contracts.findings import printable
from attn_contracts.lint.config import ConfigError
from attn_contracts.lint.config import LintConfig
from attn_contracts.lint.config import config_for
from attn_contracts.lint.config import known_codes_text
from attn_contracts.lint.config import load_config
from attn_contracts.lint.config import unknown_codes
from attn_contracts.lint.driver import EngineRule
from attn_contracts.lint.driver import default_jobs
from attn_contracts.lint.driver import lint_paths
from attn_contracts.lint.report import render
from attn_contracts.lint.report import statistics

__all__ = ["add_arguments", "exit_code", "main", "run"]


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a whole number (allowed: 1, 2, ...)") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} workers (allowed: 1 or more)")
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="files or folders")
    p.add_argument("--format", choices=["text", "json", "github", "sarif"], default="text")
    p.add_argument("--select", default=None, help="comma-separated rules to report: codes or "
                   "their prefixes (AC016, AC00), rule names (edge-base) or groups (lint, "
                   "startup, engine)")
    p.add_argument("--ignore", default=None, help="comma-separated rules to skip, named as for "
                   "--select")
    p.add_argument("--config", type=Path, default=None,
                   help="pyproject.toml with [tool.attn-contracts] (default: nearest one)")
    p.add_argument("--jobs", "-j", type=_positive, default=None, metavar="N",
                   help="processes for the per-file work, at most one per chunk of files and "
                        "per CPU (default: the CPUs available)")
    p.add_argument("--exit-zero", action="store_true",
                   help="exit 0 even with findings (usage errors still exit 2)")
    p.add_argument("--warnings-as-errors", action="store_true",
                   help="exit 1 on warnings too (default: only errors set the exit code)")
    p.add_argument("--statistics", action="store_true",
                   help="print one line per code with its count instead of the findings")
    p.add_argument("--output-file", "-o", type=Path, default=None, metavar="FILE",
                   help="write the report to FILE instead of standard output")
    p.add_argument("--records", type=Path, action="append", default=[], metavar="FILE",
                   help="a TOML/JSON records file whose records teach the rules (repeatable; "
                        "besides [tool.attn-contracts] record-files); a records file among "
                        "PATH is only checked against the schema")
    p.add_argument("--project-root", type=Path, default=None, metavar="DIR",
                   help="read every .py below DIR for the class hierarchy, report only on PATH "
                        "(what the pre-commit hook does with the changed files)")


class _UsageError(Exception):
    """A usage error: the run stops with its message on standard error and exit code 2."""


def run(args: argparse.Namespace, engine_rules: Sequence[EngineRule] = ()) -> int:
    try:
        return _run(args, engine_rules)
    except _UsageError as err:
        print(printable(f"attn-contracts lint: {err}"), file=sys.stderr)
        return 2


def _run(args: argparse.Namespace, engine_rules: Sequence[EngineRule]) -> int:
    _check_arguments(args)
    cfg = _config(args)
    jobs = args.jobs if args.jobs is not None else default_jobs()
    findings = lint_paths(args.paths, cfg, project_root=args.project_root, jobs=jobs,
                          records=args.records, engine_rules=engine_rules)
    report = statistics(findings) if args.statistics else (
        render(findings, args.format) if findings or args.format in ("json", "sarif") else "")
    if args.output_file is not None:
        try:
            args.output_file.write_text(report + "\n" if report else "", encoding="utf-8")
        except OSError as err:
            raise _UsageError(f"--output-file: cannot write {args.output_file}: "
                              f"{err.strerror or err}") from err
    elif report:
        print(report)
    return 0 if args.exit_zero else exit_code(findings, warnings_as_errors=args.warnings_as_errors)


def _check_arguments(args: argparse.Namespace) -> None:
    """Options that do not go together, and named files or folders that do not exist."""
    if args.statistics and args.format != "text":  # the counts are text: the format would be lost
        raise _UsageError(f"--statistics prints text counts; --format {args.format} is not read "
                          "with it (allowed: --statistics alone, or --format without it)")
    missing = [str(p) for p in args.paths if not (p.exists() or p.is_symlink())]
    if args.project_root is not None and not args.project_root.is_dir():
        missing.append(f"{args.project_root} (--project-root)")
    missing += [f"{f} (--records)" for f in args.records if not (f.exists() or f.is_symlink())]
    if missing:
        raise _UsageError(f"no such file or folder: {', '.join(missing)}")


def _config(args: argparse.Namespace) -> LintConfig:
    """The project's settings (``--config``, else the nearest ``pyproject.toml``) with
    ``--select`` and ``--ignore`` over them."""
    try:
        cfg = load_config(args.config) if args.config else config_for(
            [*args.paths, *([args.project_root] if args.project_root else [])])
    except ConfigError as err:
        raise _UsageError(str(err)) from err
    overrides = {k: tuple(c.strip() for c in v.split(",") if c.strip())
                 for k, v in (("select", args.select), ("ignore", args.ignore)) if v is not None}
    for option, codes in overrides.items():
        bad = unknown_codes(codes)
        if bad:
            raise _UsageError(f"--{option}: unknown rule selector(s) {', '.join(bad)} "
                              f"(allowed: {known_codes_text()})")
    return cfg.model_copy(update=overrides)


def exit_code(findings: Iterable[Finding], *, warnings_as_errors: bool = False) -> int:
    """1 when a finding is an error (or a warning, with ``warnings_as_errors``); notes never
    count."""
    counted = {Severity.ERROR, Severity.WARNING} if warnings_as_errors else {Severity.ERROR}
    return 1 if any(f.severity in counted for f in findings) else 0


def main(argv: Sequence[str] | None = None) -> int:
    """``attn-contracts lint`` on its own (as pre-commit calls it)."""
    try:  # a broken installation: one line, before any argument is read
        check_rules()
    except RulesError as err:
        print(printable(f"attn-contracts lint: {err}"), file=sys.stderr)
        return 2
    parser = argparse.ArgumentParser(prog="attn-contracts lint", description=__doc__)
    add_arguments(parser)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    return run(args)
