"""``attn-contracts lint``: static checks for backend authors and engine code (no torch, no
execution: sources are read with ``ast``, records with ``tomllib``).

Rules: ``AC001`` returns LSE without a base, ``AC002`` base only from an inherited default,
``AC003`` literal base passed to a combine, ``AC004`` LSE details without LSE, ``AC009``
``getattr`` default on a capability, ``AC011`` ``assert`` on a capability, ``AC012`` a record file
breaking its schema, ``AC000`` a file that does not parse. ``# noqa: AC003`` silences one line.
Exit codes: 0 clean, 1 findings, 2 usage error.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import sys
import tomllib
from collections.abc import Iterable, Sequence
from pathlib import Path

from attn_contracts.findings import Code, Finding
from attn_contracts.lint.classes import Hierarchy, collect_classes
from attn_contracts.lint.config import ConfigError, LintConfig, find_pyproject, load_config
from attn_contracts.lint.rules import class_findings, tree_findings
from attn_contracts.sources import FileReadError, read_file

__all__ = ["LintConfig", "add_arguments", "lint_paths", "main", "run"]

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*))?",
                   re.IGNORECASE)
_SKIP_DIRS = {".git", ".venv", "venv", "__pycache__", "node_modules", "build", "dist", ".tox"}


def _files(paths: Iterable[Path]) -> Iterable[tuple[Path, bool]]:
    """(file, named explicitly) for every .py and .toml below the given paths."""
    for p in paths:
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                if f.suffix in (".py", ".toml") and f.is_file() and not (
                        set(f.relative_to(p).parts[:-1]) & _SKIP_DIRS):
                    yield f, False
        else:
            yield p, True


def _suppressed(finding: Finding, lines: list[str]) -> bool:
    line = int(finding.location.rsplit(":", 2)[1]) if finding.location.count(":") >= 2 else 0
    if not 0 < line <= len(lines):
        return False
    m = _NOQA.search(lines[line - 1])
    if m is None:
        return False
    codes = m.group("codes")
    return codes is None or finding.code in {c.strip().upper() for c in codes.split(",")}


def _lint_toml(path: Path, text: str, explicit: bool) -> list[Finding]:
    """Record files: the contract core's checks, located at each record's name line."""
    if path.name == "pyproject.toml":
        return []
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        return [Finding(Code.AC000, path.name, f"not valid TOML: {err}",
                        location=f"{path}:{getattr(err, 'lineno', 1)}:{getattr(err, 'colno', 1)}")]
    looks_like_records = "record" in doc or "records" in doc or "lse" in doc
    if not (explicit or looks_like_records):
        return []
    try:
        _, findings = read_file(path)
    except FileReadError as err:
        return [Finding(Code.AC000, path.name, str(err), location=f"{path}:1:1")]
    lines = text.splitlines()
    out = []
    for f in findings:
        line = next((i + 1 for i, s in enumerate(lines)
                     if re.match(rf'\s*name\s*=\s*"{re.escape(f.subject)}"', s)), 1)
        out.append(Finding(f.code, f.subject, f"record {f.subject}: {f.message}", f.hint,
                           f.field, f.found, f.allowed, f"{path}:{line}:1"))
    return out


def lint_paths(paths: Sequence[Path], config: LintConfig | None = None) -> list[Finding]:
    """Every finding for the given files and folders, in path and line order."""
    cfg = config or LintConfig()
    texts: dict[str, list[str]] = {}
    findings: list[Finding] = []
    trees: list[tuple[str, ast.Module]] = []
    classes = []
    for path, explicit in _files(paths):
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            findings.append(Finding(Code.AC000, path.name, f"cannot read: {err}",
                                    location=f"{path}:1:1"))
            continue
        texts[str(path)] = text.splitlines()
        if path.suffix == ".toml":
            findings += _lint_toml(path, text, explicit)
            continue
        try:
            tree = ast.parse(text, filename=str(path))
        except SyntaxError as err:
            findings.append(Finding(Code.AC000, path.name, f"does not parse: {err.msg}",
                                    location=f"{path}:{err.lineno or 1}:{err.offset or 1}"))
            continue
        trees.append((str(path), tree))
        classes += collect_classes(tree, str(path))
    findings += class_findings(Hierarchy(classes), cfg)
    for path_str, tree in trees:
        findings += tree_findings(tree, path_str, cfg)
    kept = [f for f in findings if _selected(f.code, cfg)
            and not _suppressed(f, texts.get(f.location.rsplit(":", 2)[0], []))]
    return sorted(kept, key=_order)


def _order(f: Finding) -> tuple[str, int, int, str]:
    path, line, col = f.location.rsplit(":", 2)
    return path, int(line), int(col), f.code


def _selected(code: Code, cfg: LintConfig) -> bool:
    if cfg.select and not any(code.startswith(s) for s in cfg.select):
        return False
    return not any(code.startswith(s) for s in cfg.ignore)


# --- output ---------------------------------------------------------------------------------------
def _render(findings: list[Finding], fmt: str) -> str:
    if fmt == "json":
        return json.dumps([{"path": f.location.rsplit(":", 2)[0],
                            "line": int(f.location.rsplit(":", 2)[1]),
                            "col": int(f.location.rsplit(":", 2)[2]), **f.to_json()}
                           for f in findings], indent=2)
    if fmt == "github":
        return "\n".join(
            f"::error file={f.location.rsplit(':', 2)[0]},line={f.location.rsplit(':', 2)[1]},"
            f"col={f.location.rsplit(':', 2)[2]},title={f.code}::{f.message}" for f in findings)
    return "\n".join(f"{f.location}: {f.code} {f.message}" for f in findings)


# --- CLI ------------------------------------------------------------------------------------------
def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="files or folders")
    p.add_argument("--format", choices=["text", "json", "github"], default="text")
    p.add_argument("--select", default=None, help="comma-separated codes (prefixes) to report")
    p.add_argument("--ignore", default=None, help="comma-separated codes (prefixes) to skip")
    p.add_argument("--config", type=Path, default=None,
                   help="pyproject.toml with [tool.attn-contracts] (default: nearest one)")


def run(args: argparse.Namespace) -> int:
    missing = [str(p) for p in args.paths if not p.exists()]
    if missing:
        print(f"attn-contracts lint: no such file or folder: {', '.join(missing)}",
              file=sys.stderr)
        return 2
    try:
        cfg = load_config(args.config or find_pyproject(args.paths[0]))
    except ConfigError as err:
        print(f"attn-contracts lint: {err}", file=sys.stderr)
        return 2
    overrides = {k: tuple(c.strip().upper() for c in v.split(",") if c.strip())
                 for k, v in (("select", args.select), ("ignore", args.ignore)) if v is not None}
    cfg = cfg.model_copy(update=overrides)
    findings = lint_paths(args.paths, cfg)
    if findings or args.format == "json":
        print(_render(findings, args.format))
    return 1 if findings else 0


def main(argv: Sequence[str] | None = None) -> int:
    """``attn-contracts lint`` on its own (as pre-commit calls it)."""
    parser = argparse.ArgumentParser(prog="attn-contracts lint", description=__doc__)
    add_arguments(parser)
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return int(exc.code or 0)
    return run(args)
