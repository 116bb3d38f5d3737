"""The run of ``attn-contracts lint``: find the files below the named paths, read and parse each
(refusing, as one ``AC000``, a file that cannot be read, parsed or analysed), run the per-file
rules in a pool of forked workers, build the program model once over every file
(:mod:`attn_contracts.lint.model`), run the engines' rules over it, and keep the findings that
are selected and not silenced by a ``# noqa``, in path and line order (columns in characters).
The knowledge each file is judged with is the one of its own tree's releases
(:func:`knowledge_for`).
"""

from __future__ import annotations

import ast
import io
import multiprocessing as mp
import os
import re
import tokenize
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from functools import cache
from functools import partial
from pathlib import Path

from attn_contracts.collector import paused
from attn_contracts.consumer import ConsumerRecord
from attn_contracts.findings import Code
from attn_contracts.findings import Finding
from attn_contracts.findings import Location
from attn_contracts.findings import location_text
from attn_contracts.lint.classes import ClassInfo
from attn_contracts.lint.classes import ModuleInfo
from attn_contracts.lint.classes import collect_classes
from attn_contracts.lint.classes import module_info
from attn_contracts.lint.classes import relevant_functions
from attn_contracts.lint.config import LintConfig
from attn_contracts.lint.model import FileFacts
from attn_contracts.lint.model import ProgramModel
from attn_contracts.lint.model import build_model
from attn_contracts.lint.provenance import Named
from attn_contracts.lint.provenance import check_document
from attn_contracts.lint.provenance import read_named
from attn_contracts.lint.provenance import trusted
from attn_contracts.lint.record_index import Knowledge
from attn_contracts.lint.rules import could_fire
from attn_contracts.lint.rules import tree_findings
from attn_contracts.records import CapabilityRecord
from attn_contracts.sources import AnyRecord
from attn_contracts.sources import FileReadError
from attn_contracts.sources import read_bytes
from attn_contracts.sources import split_roles
from attn_contracts.versions import library_key
from attn_contracts.versions import resolve_all
from attn_contracts.versions import tree_root
from attn_contracts.versions import versions_of_tree

__all__ = ["EngineRule", "default_jobs", "knowledge_for", "lint_model", "lint_paths", "worker_count"]

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
    at = finding.location
    line = at.line if at is not None and at.line is not None else 0
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
    return Finding(Code.AC000, Path(path).name, str(err.args[0]),
                   location=Location(str(path), line, col))


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
        findings.append(Finding(
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
    lines = text.splitlines()
    out.module.relevant = relevant_functions(out.module, out.classes, lines,
                                             out.module.trigger_lines)
    out.module.computes_logs = relevant_functions(out.module, out.classes, lines,
                                                  _logarithm_lines(text))
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
    names too, or of its own ``package``), a base attribute, or a consumer's base keyword."""
    names = knowledge.names_in(text, package) | {
        n for n in (*cfg.base_attrs, *cfg.returns_attrs, *knowledge.base_keywords) if n in text}
    pattern = _trigger_pattern(frozenset(names))
    lines: list[int] = []
    last = -1
    for m in pattern.finditer(text) if pattern is not None else ():
        line = text.count("\n", 0, m.start()) + 1 if last < 0 else lines[-1] + text.count(
            "\n", last, m.start())
        if not lines or lines[-1] != line:
            lines.append(line)
        last = m.start()
    return tuple(lines)


def _logarithm_lines(text: str) -> tuple[int, ...]:
    """The (1-based) lines of ``text`` that take a tensor's logarithm (a log-sum-exp computed
    by hand, ``m + tl.log2(s)``)."""
    if ".log" not in text:
        return ()
    return tuple(sorted({text.count("\n", 0, m.start()) + 1 for m in _LOGARITHM.finditer(text)
                         if m.group(1) not in _NUMBER_MODULES}))


#: a tensor's logarithm in one base, as a function of torch or Triton or a tensor's method
#: (``torch.log2(s)``, ``tl.math.log(s)``, ``s.log()``), with what it is an attribute of
_LOGARITHM = re.compile(r"([\w.]*)\.log2?\(")
#: the modules whose ``log`` is of a number, a constant (``math.log(2)``), not of a tensor
_NUMBER_MODULES = frozenset({"math", "np", "numpy"})


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
#: program model: about 2 MB of source, some 60 MB of trees (vLLM's attention code, the
#: startup scope, is 3 MB). At 8 MB vLLM 0.34.0 whole peaked at 1.03 GiB (issue 37's bound is
#: 1 GiB), at 2 MB 0.91 GiB for the same CPU time: a tree parsed again is cheap beside one kept
#: that nothing reads
KEEP_TREES_CHARS = 2_000_000


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
    with paused():  # millions of nodes and values live to the end of the run
        return _lint_model(paths, config, project_root, knowledge, jobs, records, engine_rules)


def _lint_model(paths: Sequence[Path], config: LintConfig | None, project_root: Path | None,
                knowledge: Knowledge | None, jobs: int, records: Sequence[Path],
                engine_rules: Sequence[EngineRule]) -> tuple[list[Finding], ProgramModel]:
    cfg = config or LintConfig()
    named, findings = read_named([*((f, "record-files") for f in cfg.record_files),
                                  *((str(f), "--records") for f in records)])
    named_files = {str(Path(f).resolve()) for f in (*cfg.record_files, *map(str, records))}
    python, texts, checked = _split_records(_found(paths, project_root), named_files)
    findings += checked
    if knowledge is not None:
        knowledges, items = [knowledge], [(p, r, 0) for p, r, _ in python]
    else:
        knowledges, items, notes = _knowledge_per_tree(cfg, named, python)
        findings += notes
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
                        base_attrs=cfg.base_attrs, configured="base_attrs" in cfg.model_fields_set,
                        capabilities=cfg.capabilities)
    # the program model's finding of a code at a place goes first: it read the flow that the
    # per-file rule of the same code at that place could not (a literal base its producers
    # confirm is a note there, not the per-file rule's warning); _kept keeps the first
    findings = [*model.findings, *findings]
    linted = frozenset(path for path, report, _ in python if report)
    for rule in engine_rules:
        findings += rule(model, linted)
    return _kept(findings, cfg, texts, wide), model


#: a file to lint: its path, whether it is reported on, and the tree whose releases it is read at
_Found = tuple[Path, bool, Path | None]


def _found(paths: Sequence[Path], project_root: Path | None) -> list[_Found]:
    """Every file below ``paths`` (reported on) and every .py below ``project_root`` (read for
    the hierarchy only), each with the tree it came from: the package a linted path is in, so a
    vendored folder without __init__.py below it is still linted at that package's release."""
    found: list[_Found] = []
    for arg in paths:
        found += [(f, True, tree_root(arg)) for f, _ in _files([arg])]
    if project_root is not None:
        found += [(f, False, tree_root(project_root)) for f, _ in _files([project_root], (".py",))]
    return found


def _split_records(found: list[_Found], named_files: set[str],
                   ) -> tuple[list[_Found], dict[str, list[str]], list[Finding]]:
    """The Python files (once each, with the tree each is read at), and the record files
    checked here against the schema: their lines (for ``# noqa``) and their findings."""
    texts: dict[str, list[str]] = {}
    findings: list[Finding] = []
    seen: set[str] = set()
    python: list[_Found] = []
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
    return python, texts, findings


def _knowledge_per_tree(cfg: LintConfig, named: list[Named], python: list[_Found],
                        ) -> tuple[list[Knowledge], list[tuple[Path, bool, int]], list[Finding]]:
    """One knowledge per distinct set of releases, built once; each file gets its tree's (the
    index into the knowledges), and the findings of building them."""
    knowledges: list[Knowledge] = []
    findings: list[Finding] = []
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
                        unverified[0], location=Location(str(root / "__init__.py"), 1, 1)
                        if root is not None else None,
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
    return knowledges, items, findings


def _kept(findings: list[Finding], cfg: LintConfig, texts: Mapping[str, list[str]],
          wide: Mapping[str, Mapping[int, str]]) -> list[Finding]:
    """The selected findings no ``# noqa`` silences, once per code and place, with their
    columns in characters, in path and line order."""
    kept: dict[tuple[str, Location | None], Finding] = {}
    for f in findings:  # the direct-call rule and the flow rule may both see one literal
        if cfg.selects(f.code) and not _suppressed(
                f, texts.get(at.path, []) if (at := f.location) is not None else []):
            kept.setdefault((f.code.value, f.location), f)
    return sorted((_in_characters(f, wide) for f in kept.values()), key=_order)


def _tree_of(path: Path, arg_tree: Path | None) -> Path | None:
    """The tree whose release a file is linted at: the package of the linted path it came from
    when the file is inside it, else the file's own top-level package."""
    if arg_tree is not None and path.resolve().is_relative_to(arg_tree):
        return arg_tree
    return tree_root(path)


def _in_characters(f: Finding, wide: Mapping[str, Mapping[int, str]]) -> Finding:
    """The finding with its column in characters: the rules take ``col_offset`` from ``ast``,
    which counts UTF-8 bytes (``é`` is two), and every format reports characters, 1-based."""
    at = f.location
    point = at.point if at is not None else None
    text = wide.get(at.path, {}).get(point[0]) if at is not None and point is not None else None
    if at is None or point is None or text is None:
        return f
    chars = len(text.encode("utf-8")[:point[1] - 1].decode("utf-8", errors="ignore")) + 1
    return replace(f, location=replace(at, col=chars))


def _order(f: Finding) -> tuple[str, int, int, str]:
    at = f.location
    if at is None or (point := at.point) is None:
        # a finding at no point of a file (a release's note): by its text, (text, 0, 0), as
        # when every location was text, so the order of the output is what it was
        return location_text(at), 0, 0, f.code
    return at.path, point[0], point[1], f.code
