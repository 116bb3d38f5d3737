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
import ast
import io
import json
import multiprocessing as mp
import os
import re
import sys
import tokenize
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from functools import cache, partial
from pathlib import Path
from urllib.parse import quote

from attn_contracts.consumer import ConsumerRecord
from attn_contracts.findings import (
    RULES,
    Code,
    Finding,
    Rule,
    RulesError,
    Severity,
    check_rules,
    printable,
)
from attn_contracts.lint.classes import (
    ClassInfo,
    ModuleInfo,
    collect_classes,
    module_info,
    relevant_functions,
)
from attn_contracts.lint.config import (
    ConfigError,
    LintConfig,
    config_for,
    known_codes_text,
    load_config,
    unknown_codes,
)
from attn_contracts.lint.model import FileFacts, ProgramModel, build_model
from attn_contracts.lint.provenance import Named, check_document, read_named, trusted
from attn_contracts.lint.record_index import Knowledge
from attn_contracts.lint.rules import could_fire, tree_findings
from attn_contracts.records import CapabilityRecord
from attn_contracts.sources import MAX_FILE_BYTES, AnyRecord, FileReadError, read_bytes, split_roles
from attn_contracts.versions import library_key, resolve_all, tree_root, versions_of_tree

__all__ = [
    "MAX_FILE_BYTES",
    "EngineRule",
    "Knowledge",
    "LintConfig",
    "ProgramModel",
    "add_arguments",
    "exit_code",
    "knowledge_for",
    "lint_model",
    "lint_paths",
    "main",
    "run",
    "sarif",
    "statistics",
    "worker_count",
]

_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:\s*,\s*[A-Z]+[0-9]+)*))?",
                   re.IGNORECASE)
_SKIP_DIRS = {".git", ".venv", "venv", "__pycache__", "node_modules", "build", "dist", ".tox"}


class _Unreadable(Exception):
    """A file the linter refuses or cannot read: becomes one AC000 finding."""


def _files(paths: Iterable[Path], suffixes: tuple[str, ...] = (".py", ".toml"),
           ) -> Iterable[tuple[Path, bool]]:
    """(file, named explicitly) for every file with one of ``suffixes`` below the given paths;
    a named file is taken whatever its suffix (and refused later if it is not a regular file)."""
    for p in paths:
        if p.is_dir():
            for f in sorted(p.rglob("*")):
                if f.suffix in suffixes and f.is_file() and not (
                        set(f.relative_to(p).parts[:-1]) & _SKIP_DIRS):
                    yield f, False
        else:
            yield p, True


def _read(path: Path) -> str:
    """The text of a regular file of at most :data:`MAX_FILE_BYTES` (read by the one guarded
    reader, :func:`~attn_contracts.sources.read_bytes`: a FIFO or device is never opened),
    decoded as Python would decode it (a PEP 263 coding line or a BOM; UTF-8 otherwise)."""
    try:
        data = read_bytes(path, "TOML file" if path.suffix == ".toml" else "Python file")
    except FileReadError as err:
        raise _Unreadable(err.reason) from err
    encoding = "utf-8"
    if path.suffix != ".toml":  # TOML is UTF-8 by its spec
        try:
            encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        except SyntaxError as err:
            raise _Unreadable(f"bad coding line: {err}") from err
    try:
        return data.decode(encoding)
    except (UnicodeDecodeError, LookupError) as err:
        raise _Unreadable(f"cannot decode as {encoding}: {err}") from err


def _suppressed(finding: Finding, lines: list[str]) -> bool:
    line = int(finding.location.rsplit(":", 2)[1]) if finding.location.count(":") >= 2 else 0
    if not 0 < line <= len(lines):
        return False
    m = _NOQA.search(lines[line - 1])
    if m is None:
        return False
    codes = m.group("codes")
    return codes is None or finding.code in {c.strip().upper() for c in codes.split(",")}


def _lines(text: str) -> list[str]:
    """The lines as Python numbers them (``\\n``, ``\\r\\n``, ``\\r``; ``str.splitlines`` also
    splits at a form feed or U+2028, which the tokenizer does not)."""
    return re.split(r"\r\n|\r|\n", text)


def _parse(path: Path, text: str) -> ast.Module:
    """A syntax tree, or _Unreadable for a file that does not parse or nests too deeply."""
    try:
        return ast.parse(text, filename=str(path))
    except SyntaxError as err:
        line, offset = err.lineno or 1, err.offset or 1
        lines = _lines(text)
        if 0 < line <= len(lines):  # SyntaxError counts characters; the nodes' columns count
            # UTF-8 bytes until _in_characters turns every column into characters
            offset = len(lines[line - 1][:offset - 1].encode("utf-8")) + 1
        raise _Unreadable(f"does not parse: {err.msg}", line, offset) from err
    except (RecursionError, MemoryError) as err:
        raise _Unreadable(f"nested too deeply to parse ({type(err).__name__})") from err


def _ac000(path: Path | str, err: _Unreadable) -> Finding:
    line, col = (err.args[1], err.args[2]) if len(err.args) == 3 else (1, 1)
    return Finding(Code.AC000, Path(path).name, str(err.args[0]), location=f"{path}:{line}:{col}")


def _guarded(path: str, findings: Callable[[], Iterable[Finding]]) -> list[Finding]:
    """A rule that recurses past Python's limit on one pathological file (a 100,000-term sum, a
    huge default) gives one AC000 for that file; the run goes on."""
    try:
        return list(findings())
    except RecursionError:
        return [_ac000(path, _Unreadable("nested too deeply to analyse (RecursionError)"))]


@cache
def _builtin() -> tuple[list[CapabilityRecord], list[ConsumerRecord]]:
    return Knowledge.builtin()


def _for_records(versions: Mapping[str, str], records: Iterable[AnyRecord]) -> dict[str, str]:
    """``versions`` under the records' own spellings of each library (``sgl-kernel``,
    ``flash_attn``): the settings, pins and package folders spell them their own ways."""
    by_key = {library_key(k): v for k, v in versions.items()}
    out = dict(versions)
    for rec in records:
        if rec.library not in out and library_key(rec.library) in by_key:
            out[rec.library] = by_key[library_key(rec.library)]
    return out


def knowledge_for(cfg: LintConfig, named: Iterable[Named] = (),
                  versions: Mapping[str, str] | None = None) -> tuple[Knowledge, list[Finding]]:
    """The built-in catalog, the named records that agree with it (``record-files`` and
    ``--records``, read with :func:`~attn_contracts.lint.provenance.read_named`; one that
    contradicts it is an ``AC005`` finding instead) and the legacy
    ``combine-functions``/``base-keywords`` settings, as one lookup; ``versions`` (library →
    release of the linted tree; default: the configured ones) keeps the records and paths of
    those releases. Without ``named``, the files ``cfg.record_files`` names are read here."""
    producers, consumers = _builtin()
    builtin: list[AnyRecord] = [*producers, *consumers]
    findings: list[Finding] = []
    named = list(named)
    if not named and cfg.record_files:
        named, findings = read_named((f, "record-files") for f in cfg.record_files)
    have = _for_records(cfg.versions if versions is None else versions,
                        [*builtin, *(n.record for n in named)])
    # a release the catalog was not verified on reads as the verified release nearest below it
    # (the newest one for a new release), with one note per library: never an error by itself
    have, unverified = resolve_all(have)
    seen: set[str] = set()
    for r in unverified:
        if library_key(r.library) in seen:
            continue
        seen.add(library_key(r.library))
        findings.append(Finding.from_rule(
            Code.AC034, r.library, r.note, field="versions", found=f"{r.library} {r.version}",
            allowed="a release of backends/catalog/facts/verified.toml",
            hint="tools/check_catalog.py --release verifies every record against it"))
    kept, refused = trusted(builtin, named, have)
    mine_p, mine_c = split_roles(kept)
    return Knowledge.from_records(
        [*producers, *mine_p], [*consumers, *mine_c],
        legacy_functions=cfg.combine_functions, legacy_keywords=cfg.base_keywords,
        versions=have), findings + refused


@dataclass
class _PyResult:
    """What one Python file contributes: its module and classes (for the hierarchy), its
    per-file findings, and its lines where a ``# noqa`` may apply."""

    path: str
    report: bool
    module: ModuleInfo | None = None
    classes: list[ClassInfo] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    noqa_lines: list[str] = field(default_factory=list)
    mentions: bool = False  # names a producer, a consumer or a base attribute
    #: line number → text of each line with a non-ASCII character, where a UTF-8 byte column
    #: differs from a character column (few lines, so cheap to send back from a worker)
    wide_lines: dict[int, str] = field(default_factory=dict)
    #: the parsed file, kept for the program model where the pass runs in this process (a
    #: worker drops it: sending a tree back costs more than parsing it again)
    tree: ast.Module | None = None
    size: int = 0  # characters of the file's text


def _analyse(path: Path, report: bool, cfg: LintConfig, knowledge: Knowledge) -> _PyResult:
    out = _PyResult(str(path), report)
    try:
        text = _read(path)
        if not text.isascii():
            out.wide_lines = {i: s for i, s in enumerate(_lines(text), 1) if not s.isascii()}
        tree = _parse(path, text)
    except _Unreadable as err:
        if report:
            out.findings.append(_ac000(path, err))
        return out
    out.module = module_info(path, tree)
    out.classes = collect_classes(tree, str(path), out.module)
    # no producer, consumer or base attribute named: no flow starts here
    out.module.trigger_lines = _trigger_lines(text, knowledge, cfg,
                                              out.module.name.partition(".")[0])
    out.module.relevant = relevant_functions(out.module, out.classes, text.splitlines(),
                                             out.module.trigger_lines)
    out.mentions = knowledge.follow_all or bool(out.module.trigger_lines)
    out.tree, out.size = tree, len(text)
    if not report:
        return out
    if "noqa" in text.lower():
        out.noqa_lines = _lines(text)
    if could_fire(text, cfg):
        out.findings += _guarded(out.path, partial(tree_findings, tree, out.path, cfg))
    return out


@cache
def _trigger_pattern(names: frozenset[str]) -> re.Pattern[str] | None:
    if not names:
        return None
    return re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, names))) + r")\b")


def _trigger_lines(text: str, knowledge: Knowledge, cfg: LintConfig, package: str = "",
                   ) -> tuple[int, ...]:
    """The (1-based) lines of ``text`` that name a producer, a consumer (of a package the text
    names too, or of its own ``package``) or a base attribute."""
    names = knowledge.names_in(text, package) | {n for n in (*cfg.base_attrs,
                                                             *cfg.returns_attrs) if n in text}
    pattern = _trigger_pattern(frozenset(names))
    if pattern is None:
        return ()
    lines: list[int] = []
    last = -1
    for m in pattern.finditer(text):
        line = text.count("\n", 0, m.start()) + 1 if last < 0 else lines[-1] + text.count(
            "\n", last, m.start())
        if not lines or lines[-1] != line:
            lines.append(line)
        last = m.start()
    return tuple(lines)


#: (config, knowledge of each tree's releases) for worker processes, set before they fork
_WORKER: tuple[LintConfig, list[Knowledge]] | None = None


def _analyse_in_worker(item: tuple[Path, bool, int]) -> _PyResult:
    if _WORKER is None:
        raise RuntimeError("lint worker started without its settings (lint_paths sets them)")
    cfg, knowledge = _WORKER
    result = _analyse(item[0], item[1], cfg, knowledge[item[2]])
    result.tree = None
    return result


def _analyse_all(items: list[tuple[Path, bool, int]], cfg: LintConfig, knowledge: list[Knowledge],
                 jobs: int) -> list[_PyResult]:
    """Per-file work (read, parse, per-file rules) in ``jobs`` forked processes, each file with
    the knowledge of its tree's releases (``knowledge[i]``); the hierarchy is then resolved
    once in this one. Falls back to one process where fork is unavailable."""
    global _WORKER
    workers = worker_count(jobs, len(items))
    if workers <= 1 or "fork" not in mp.get_all_start_methods():
        out: list[_PyResult] = []
        kept = 0
        for p, r, k in items:
            result = _analyse(p, r, cfg, knowledge[k])
            # a file where a flow starts is interpreted: its tree is kept for the model. Any
            # other only while the kept ones stay small (a tree is ~30x its text: a whole
            # engine's would be gigabytes); past that it is parsed again if a flow reaches it
            if result.tree is not None and not result.mentions:
                if kept + result.size > KEEP_TREES_CHARS:
                    result.tree = None
                else:
                    kept += result.size
            out.append(result)
        return out
    _WORKER = (cfg, knowledge)
    try:
        with ProcessPoolExecutor(workers, mp_context=mp.get_context("fork")) as pool:
            return list(pool.map(_analyse_in_worker, items, chunksize=_CHUNK))
    finally:
        _WORKER = None


_CHUNK = 32
#: the text (characters) of the files without a flow start whose trees a run keeps for its
#: program model: about 8 MB of source, some 250 MB of trees (vLLM's attention code, the
#: startup scope, is 3 MB)
KEEP_TREES_CHARS = 8_000_000


def worker_count(jobs: int, files: int) -> int:
    """Processes for ``files`` files: never more than ``jobs``, the chunks of work (one chunk is
    :data:`_CHUNK` files; fewer than two chunks run in this process) or the CPUs available."""
    chunks = -(-files // _CHUNK)
    return max(1, min(jobs, chunks if chunks >= 2 else 1, default_jobs()))


def default_jobs() -> int:
    """The CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


#: A rule over the whole linted program that an engine integration brings (the SGLang
#: mapping's edges, read from the same program model): the model and the linted files in, its
#: findings out. The lint runs the rules its caller hands it; the CLI, the composition root,
#: hands it every integration's (:func:`attn_contracts.integrations.lint_rules`).
EngineRule = Callable[[ProgramModel, frozenset[Path]], list[Finding]]


def lint_paths(paths: Sequence[Path], config: LintConfig | None = None, *,
               project_root: Path | None = None, knowledge: Knowledge | None = None,
               jobs: int = 1, records: Sequence[Path] = (),
               engine_rules: Sequence[EngineRule] = ()) -> list[Finding]:
    """Every finding for the given files and folders, in path and line order (the first of
    :func:`lint_model`)."""
    return lint_model(paths, config, project_root=project_root, knowledge=knowledge, jobs=jobs,
                      records=records, engine_rules=engine_rules)[0]


def lint_model(paths: Sequence[Path], config: LintConfig | None = None, *,
               project_root: Path | None = None, knowledge: Knowledge | None = None,
               jobs: int = 1, records: Sequence[Path] = (),
               engine_rules: Sequence[EngineRule] = ()) -> tuple[list[Finding], ProgramModel]:
    """What :func:`lint_paths` reports, and the program model it was judged on (per-class
    facts for an engine's mapping: :meth:`ProgramModel.facts`). The findings: every one for the
    given files and folders, in path and line order.

    ``project_root``: every .py file below it is read for the class hierarchy too (a base in an
    unchanged file is then resolved), but findings are reported only for ``paths``.
    ``knowledge``: the producers and consumers the flow rules know, for every file (default:
    per file, from the built-in catalog, ``record-files`` and ``records`` at the releases of
    the file's own tree, see :func:`knowledge_for`). ``records``: record files that teach the
    rules (``--records``). A records document among ``paths`` is checked, never taught from.
    ``jobs``: processes for the per-file work. ``engine_rules``: rules an engine integration
    brings (:data:`EngineRule`), run over the model once it is built.
    """
    cfg = config or LintConfig()
    texts: dict[str, list[str]] = {}
    named, findings = read_named([*((f, "record-files") for f in cfg.record_files),
                                  *((str(f), "--records") for f in records)])
    named_files = {str(Path(f).resolve()) for f in (*cfg.record_files, *map(str, records))}
    # (file, reported, the tree it came from: the package a linted path is in, so a vendored
    # folder without __init__.py below it is still linted at that package's release)
    found: list[tuple[Path, bool, Path | None]] = []
    for arg in paths:
        found += [(f, True, tree_root(arg)) for f, _ in _files([arg])]
    if project_root is not None:
        found += [(f, False, tree_root(project_root)) for f, _ in _files([project_root], (".py",))]
    seen: set[str] = set()
    python: list[tuple[Path, bool, Path | None]] = []
    for path, report, arg_tree in found:
        key = str(path.resolve())
        if key in seen:
            continue
        seen.add(key)
        if path.suffix != ".toml":
            python.append((path, report, _tree_of(path, arg_tree)))
            continue
        try:
            text = _read(path)
        except _Unreadable as err:
            findings.append(_ac000(path, err))
            continue
        texts[str(path)] = _lines(text)
        findings += check_document(path, text, named=key in named_files)
    knowledges: list[Knowledge] = []
    items: list[tuple[Path, bool, int]] = []
    if knowledge is not None:
        knowledges, items = [knowledge], [(p, r, 0) for p, r, _ in python]
    else:
        # one knowledge per distinct set of releases, built once; each file gets its tree's
        by_versions: dict[tuple[tuple[str, str], ...], int] = {}
        by_root: dict[Path | None, int] = {}

        def index_of(root: Path | None) -> int:
            if root not in by_root:
                versions = versions_of_tree(root, cfg.versions)
                key = tuple(sorted(versions.items()))
                if key not in by_versions:
                    k, more = knowledge_for(cfg, named, versions)
                    # a release's notes (AC034) are about the tree: one note, at its package
                    unverified = [f for f in more if f.code is Code.AC034]
                    more = [f for f in more if f.code is not Code.AC034]
                    if unverified:
                        more.append(replace(
                            unverified[0], location=f"{root / '__init__.py'}:1:1"
                            if root is not None else "",
                            message="; ".join(f.message for f in unverified),
                            found=", ".join(str(f.found) for f in unverified)))
                    by_versions[key] = len(knowledges)
                    knowledges.append(k)
                    findings.extend(more)
                by_root[root] = by_versions[key]
            return by_root[root]

        items = [(path, report, index_of(tree)) for path, report, tree in python]
        if not knowledges:  # no Python file: the named records are still checked
            index_of(None)
    results = _analyse_all(items, cfg, knowledges, jobs)
    wide: dict[str, dict[int, str]] = {}
    for r in results:
        findings += r.findings
        if r.noqa_lines:
            texts[r.path] = r.noqa_lines
        if r.wide_lines:
            wide[r.path] = r.wide_lines
    facts = [FileFacts(r.path, r.report, r.mentions, r.module, r.classes, tree=r.tree)
             for r in results]
    knowledge_at = {str(p): knowledges[k] for p, _, k in items}
    model = build_model(facts, knowledge_at, returns_attrs=cfg.returns_attrs,
                        base_attrs=cfg.base_attrs, configured="base_attrs" in cfg.model_fields_set)
    findings += model.findings
    linted = frozenset(path for path, report, _ in python if report)
    for rule in engine_rules:
        findings += rule(model, linted)
    kept: dict[tuple[str, str], Finding] = {}
    for f in findings:  # the direct-call rule and the flow rule may both see one literal
        if cfg.selects(f.code) and not _suppressed(
                f, texts.get(f.location.rsplit(":", 2)[0], [])):
            kept.setdefault((f.code.value, f.location), f)
    return sorted((_in_characters(f, wide) for f in kept.values()), key=_order), model


def _tree_of(path: Path, arg_tree: Path | None) -> Path | None:
    """The tree whose release a file is linted at: the package of the linted path it came from
    when the file is inside it, else the file's own top-level package."""
    if arg_tree is not None and path.resolve().is_relative_to(arg_tree):
        return arg_tree
    return tree_root(path)


def _in_characters(f: Finding, wide: Mapping[str, Mapping[int, str]]) -> Finding:
    """The finding with its column in characters: the rules take ``col_offset`` from ``ast``,
    which counts UTF-8 bytes (``é`` is two), and every format reports characters, 1-based."""
    if f.location.count(":") < 2:
        return f
    path, line, col = f.location.rsplit(":", 2)
    text = wide.get(path, {}).get(int(line)) if line.isdigit() else None
    if text is None or not col.isdigit():
        return f
    chars = len(text.encode("utf-8")[:int(col) - 1].decode("utf-8", errors="ignore")) + 1
    return replace(f, location=f"{path}:{line}:{chars}")


def _order(f: Finding) -> tuple[str, int, int, str]:
    parts = f.location.rsplit(":", 2)
    if len(parts) != 3 or not (parts[1].isdigit() and parts[2].isdigit()):
        return f.location, 0, 0, f.code  # a finding about no file line (a release's note)
    path, line, col = parts
    return path, int(line), int(col), f.code


# --- output ---------------------------------------------------------------------------------------
def _where(f: Finding) -> tuple[str, int, int]:
    path, line, col = f.location.rsplit(":", 2)
    return path, int(line), int(col)


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


def _render(findings: list[Finding], fmt: str) -> str:
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
    return "\n".join(printable(
        f"{f.location}: {f.code} {'' if f.severity is Severity.ERROR else f'[{f.severity}] '}"
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


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a whole number (allowed: 1, 2, ...)") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} workers (allowed: 1 or more)")
    return value


# --- CLI ------------------------------------------------------------------------------------------
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


def run(args: argparse.Namespace, engine_rules: Sequence[EngineRule] = ()) -> int:
    if args.statistics and args.format != "text":  # the counts are text: the format would be lost
        print(f"attn-contracts lint: --statistics prints text counts; --format {args.format} is "
              "not read with it (allowed: --statistics alone, or --format without it)",
              file=sys.stderr)
        return 2
    missing = [str(p) for p in args.paths if not (p.exists() or p.is_symlink())]
    if args.project_root is not None and not args.project_root.is_dir():
        missing.append(f"{args.project_root} (--project-root)")
    missing += [f"{f} (--records)" for f in args.records if not (f.exists() or f.is_symlink())]
    if missing:
        print(printable(f"attn-contracts lint: no such file or folder: {', '.join(missing)}"),
              file=sys.stderr)
        return 2
    try:
        cfg = load_config(args.config) if args.config else config_for(
            [*args.paths, *([args.project_root] if args.project_root else [])])
    except ConfigError as err:
        print(printable(f"attn-contracts lint: {err}"), file=sys.stderr)
        return 2
    overrides = {k: tuple(c.strip() for c in v.split(",") if c.strip())
                 for k, v in (("select", args.select), ("ignore", args.ignore)) if v is not None}
    for option, codes in overrides.items():
        bad = unknown_codes(codes)
        if bad:
            print(printable(f"attn-contracts lint: --{option}: unknown rule selector(s) "
                            f"{', '.join(bad)} (allowed: {known_codes_text()})"), file=sys.stderr)
            return 2
    cfg = cfg.model_copy(update=overrides)
    jobs = args.jobs if args.jobs is not None else default_jobs()
    findings = lint_paths(args.paths, cfg, project_root=args.project_root, jobs=jobs,
                          records=args.records, engine_rules=engine_rules)
    report = statistics(findings) if args.statistics else (
        _render(findings, args.format) if findings or args.format in ("json", "sarif") else "")
    if args.output_file is not None:
        try:
            args.output_file.write_text(report + "\n" if report else "", encoding="utf-8")
        except OSError as err:
            print(printable(f"attn-contracts lint: --output-file: cannot write "
                            f"{args.output_file}: {err.strerror or err}"), file=sys.stderr)
            return 2
    elif report:
        print(report)
    return 0 if args.exit_zero else exit_code(findings, warnings_as_errors=args.warnings_as_errors)


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
