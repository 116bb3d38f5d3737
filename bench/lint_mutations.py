"""Mutation benchmark of ``attn-contracts lint`` on released vLLM and SGLang sources.

The corpus (``bench/lint_mutations/*.toml``, one file per engine) holds small edits of released
engine files, written as an engine developer writes them: realistic LSE-base bugs (a flipped or
deleted ``lse_base_on_e``, a DCP decode switched to another FlashInfer backend, a literal base at
a consumer reached through a manager, a partial kept on ``self`` or in a dict, a conditional
choice of combine, an ``lse=`` out buffer, a removed ``log2_lse_to_ln``, a table of bases edited
wrong, a changed default, ...) and correct refactors that must stay clean (a conversion moved
into a helper, a base read from a table, dispatch on the backend's own flag, the fixes the
linter's hints recommend, renames, split functions). Each expectation is written from the rules
of issue 27 and the truth of the code (which base reaches which combine), not from what any
version of the linter reports.

    python bench/lint_mutations.py --sources /work/releases
    python bench/lint_mutations.py --check-patches --sources /work/releases
    python bench/lint_mutations.py --only v33-fimla-flip --show

Corpus format (TOML; validated by the pydantic models below, unknown keys refused)::

    engine = "vllm"
    scope = ["vllm/v1/attention", ...]     # what is linted per mutation (see "Scope")
    [[mutation]]
    id = "v33-fimla-flip"                  # unique over the corpus
    release = "vllm==0.33.0"
    shape = "flip-declaration"             # the kind of edit (one of SHAPES)
    description = "one line"
    expect = "error"                       # error | any | clean
    at = ["vllm/v1/.../flashinfer_mla.py:258", ...]   # accepted file:line in the MUTATED tree
    truth = "why the expectation holds (which base reaches which consumer)"
    [[mutation.edit]]
    file = "vllm/v1/attention/backends/mla/flashinfer_mla.py"
    line = 258                             # first line of `old` in the RELEASED file
    old = "    lse_base_on_e: bool = True\n"  # whole lines, exactly as released ("" inserts)
    new = "    lse_base_on_e: bool = False\n"
    # optional, per mutation: what it (and its baseline) is linted in instead of the scope
    scope = ["sglang"]

Rules of the benchmark (decided here; the issue left them open):

- ``expect = "error"``: found when the mutated tree has a finding of severity ``error`` at one of
  the ``at`` locations (file and line; the column is ignored; a line stands for its logical
  line, Python's unit: a call written over several physical lines is one, so the call's first
  line and its keyword's line name the same place) that the unmutated tree does not
  have. ``at`` lists every line a fair report may name: the declaration, the consumer call, the
  edited line. ``expect = "any"`` (the rules make the shape a warning): an error or a warning
  there. Notes never count, neither as a hit nor as a false finding.
- "Does not have": the released tree's findings are mapped through the edit (``difflib`` line
  matching) and a finding is new unless one at the same mapped line has the same code, severity
  and message (digits and the scratch path masked). A mutation may put a second contradiction at
  a consumer the release already reports; the message (which producer, which choice) tells the
  two apart.
- ``expect = "clean"``: no warning or error at a (file, mapped line, code, severity) that the
  unmutated tree lacks, anywhere in the scope; one the release has word for word elsewhere in
  the same file moved with its code (a split function) and is not new. Findings that disappear
  are fine (a hint's fix removes one).
- Recall as errors: hits among the ``error`` mutations; recall as any finding: an error or a
  warning at the line, over every mutation; false findings: clean refactors with a new warning or
  error (and how many findings).

Sources: each release is a slim copy (``.py`` files and dist-info, see ``bench/_releases.py``):
``--sources DIR`` names folders holding ``<dist>-<version>/`` copies, else they are downloaded
with ``pip download --no-deps`` into ``--cache DIR`` once. The package is copied into a scratch
folder per release; each mutation edits that copy, is linted and is restored.

Scope: linting the whole ``vllm`` package costs ~20-30 CPU seconds per run on the 2-core machine
(3,231 files); 60 mutations would take half an hour. By default each mutation lints the corpus's
``scope`` (vLLM: ``v1/attention``, ``model_executor/layers/attention`` and Kimi-K3's MLA layer,
about 76,000 lines; SGLang: ``srt/layers/attention``, ``srt/layers/dcp``, the DeepSeek model and
its ``deepseek_common`` forward methods, ``radix_attention.py``, about 103,000 lines): every
producer, consumer, class hierarchy and manager the corpus touches lies there. What the scope
misses: callers outside it (other model files that call a combine, ``vllm/models/*`` beyond
Kimi-K3's MLA layer, SGLang's NPU/MUSA hardware backends, ``sglang/kernels``), so a rule that
needs one of those files to decide is not measured; ``--scope package`` lints the whole package
per mutation instead (the cost is printed), and a mutation whose bug's flow runs through
code outside the scope names its own (``scope = ["sglang"]``: SGLang's chunked-prefix merge gets
its LSE from whichever of the package's backends the server chose), linted with a baseline of
that scope. Measured with the linter of 2026-12-02 on six vLLM
0.33.0 entries: 2.2 CPU s per mutation in the scope, 37.5 in the whole package, the same verdict
for each; the full corpus takes about 3 CPU minutes in the scope (10 minutes of wall time at a
load average of 8 on the 2-core machine) and would take about 50 in the package. Today's linter
gives different verdicts by scope on one release tree: SGLang 0.5.20's ``_safe_merge_state``
is an error when the scope is linted and nothing when the package is (issue 27 item 4: whether
it is found depends on which path is named), so the released trees are linted whole by
``bench/lint_releases.py`` and in the scope here, each compared only with itself.

Exit codes: 0 (the benchmark ran, whatever it found), 1 (``--check-patches``: an edit does not
apply or an ``at`` location does not exist), 2 (bad usage: a corpus that does not parse or
validate, a release that cannot be found or fetched, an unknown ``--only`` id).
"""

from __future__ import annotations

import argparse
import difflib
import fnmatch
import io
import itertools
import json
import re
import shutil
import subprocess
import sys
import tempfile
import tokenize
import tomllib
from collections.abc import Iterable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from datetime import date
from pathlib import Path
from typing import Annotated
from typing import Any
from typing import Literal

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import ValidationError
from pydantic import model_validator
from rich.console import Console
from rich.progress import Progress
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _releases, also under PYTHONSAFEPATH=1
from _releases import Release
from _releases import ReleaseError
from _releases import default_cache
from _releases import package_lines
from _releases import parse_spec
from _releases import source
from _timing import wall_and_cpu_s

from attn_contracts.findings import Finding
from attn_contracts.findings import Severity
from attn_contracts.integrations import lint_rules
from attn_contracts.lint import LintConfig
from attn_contracts.lint import lint_paths

CORPUS = Path(__file__).resolve().parent / "lint_mutations"

#: the kinds of edit the corpus covers (a mutation names one; the table counts them)
SHAPES = (
    # bugs
    "flip-declaration", "delete-declaration", "add-declaration", "switch-backend",
    "explicit-return-base", "manager-literal", "partial-on-self", "partial-in-dict",
    "conditional-choice", "lse-out-buffer", "drop-conversion", "dispatch-choice",
    "chunked-prefix-dispatch", "table-edit", "default-changed", "omitted-keyword",
    "consumer-swapped", "hand-written-merge",
    # bugs and their fixes through the carriers of issue 37 item 1 (vllm34.toml)
    "kwargs-forwarding", "kwargs-dict", "namedtuple-default", "dataclass-default",
    "property-base", "init-attribute", "init-order", "enum-value", "closure", "dict-table",
    "positional-base", "subclass-override", "double-conversion", "conversion-added",
    "branch-drops-keyword", "early-return", "pair-list", "helper-default", "getattr-default",
    "producer-keyword-dropped",
    # correct refactors
    "declare-base", "pin-return-base", "pass-base-keyword", "helper-conversion",
    "inline-conversion", "table-base", "flag-dispatch", "rename", "split-function", "fix-bug",
)

Location = Annotated[str, Field(pattern=r"^[^:]+\.py:[1-9][0-9]*$")]


class Edit(BaseModel):
    """One replacement of whole lines of a released file."""

    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")
    file: Annotated[str, Field(pattern=r"^[A-Za-z0-9_./-]+\.py$")]
    line: Annotated[int, Field(ge=1)]
    old: str
    new: str

    @model_validator(mode="after")
    def _whole_lines(self) -> Edit:
        for name in ("old", "new"):
            text = getattr(self, name)
            if text and not text.endswith("\n"):
                raise ValueError(f"{name} of the edit at {self.file}:{self.line} must end with a "
                                 "newline (edits replace whole lines)")
        if self.old == self.new:
            raise ValueError(f"the edit at {self.file}:{self.line} changes nothing")
        if ".." in Path(self.file).parts or Path(self.file).is_absolute():
            raise ValueError(f"edit file {self.file!r} must be a path inside the package")
        return self


class Mutation(BaseModel):
    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")
    id: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9.-]*$")]
    release: str
    #: the hand corpus names one of SHAPES; a held-out corpus written by someone who never read
    #: ours (bench/lint_heldout/) names its own kinds of edit, so any slug is taken
    shape: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9-]*$")]
    description: str
    expect: Literal["error", "any", "clean"]
    at: list[Location] = []
    truth: str
    edit: Annotated[list[Edit], Field(min_length=1)]
    #: what this mutation is linted in instead of the corpus's scope (the flow of its bug runs
    #: through code outside it: SGLang's chunked-prefix merge takes its LSE from whichever of
    #: the package's 55 backends the server chose), baseline included
    scope: list[str] = []

    @model_validator(mode="after")
    def _expectation(self) -> Mutation:
        if self.expect == "clean" and self.at:
            raise ValueError(f"{self.id}: a clean refactor names no location (at = [])")
        if self.expect != "clean" and not self.at:
            raise ValueError(f"{self.id}: expect = {self.expect!r} needs the locations (at)")
        parse_spec(self.release)  # raises ReleaseError, folded into the caller's message
        return self

    @property
    def is_clean(self) -> bool:
        return self.expect == "clean"


class Corpus(BaseModel):
    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")
    engine: str
    scope: Annotated[list[str], Field(min_length=1)]
    mutation: list[Mutation]


class CorpusError(Exception):
    """A corpus file that does not parse or validate (one line, exit 2)."""


class PatchError(Exception):
    """An edit that does not apply to its release (one line per edit)."""


def load_corpus(folder: Path = CORPUS) -> list[tuple[Corpus, Mutation]]:
    out: list[tuple[Corpus, Mutation]] = []
    seen: dict[str, Path] = {}
    files = sorted(folder.glob("*.toml"))
    if not files:
        raise CorpusError(f"no corpus file (*.toml) in {folder}")
    for path in files:
        try:
            corpus = Corpus.model_validate(tomllib.loads(path.read_text(encoding="utf-8")))
        except (OSError, tomllib.TOMLDecodeError, ValidationError, ReleaseError) as err:
            first = str(err).strip().splitlines()
            raise CorpusError(f"{path}: {' '.join(line.strip() for line in first[:3])}") from err
        for m in corpus.mutation:
            if m.id in seen:
                raise CorpusError(f"{path}: mutation id {m.id!r} also in {seen[m.id]}")
            seen[m.id] = path
            out.append((corpus, m))
    return out


# --- edits ----------------------------------------------------------------------------------------
def apply_edits(text: str, edits: Sequence[Edit], file: str) -> str:
    """``text`` with every edit applied; each ``old`` must stand at its ``line`` of the released
    text exactly, and edits of one file may not overlap."""
    lines = text.splitlines(keepends=True)
    spans: list[tuple[int, int, Edit]] = []
    for e in edits:
        start = e.line - 1
        old = e.old.splitlines(keepends=True)
        have = "".join(lines[start:start + len(old)])
        if start > len(lines) or have != e.old:
            got = lines[start].rstrip("\n") if start < len(lines) else "<end of file>"
            want = old[0].rstrip("\n") if old else "<insertion>"
            raise PatchError(f"{file}:{e.line}: expected {want!r}, the release has {got!r}")
        spans.append((start, start + len(old), e))
    spans.sort(key=lambda s: s[0])
    for (a0, a1, ea), (b0, _, eb) in itertools.pairwise(spans):
        if b0 < a1 or (b0 == a0 and a0 == a1):
            raise PatchError(f"{file}: edits at lines {ea.line} and {eb.line} overlap")
    for start, end, e in reversed(spans):
        lines[start:end] = e.new.splitlines(keepends=True)
    return "".join(lines)


def line_map(before: str, after: str, *, edited: bool = True) -> dict[int, int]:
    """1-based line of ``before`` → its line in ``after``: unchanged lines by difflib's
    matching, replaced lines (unless ``edited`` is off) by position inside their block (dropped
    when the block shrank)."""
    a, b = before.splitlines(), after.splitlines()
    out: dict[int, int] = {}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag == "delete" or (tag != "equal" and not edited):
            continue
        for k in range(i2 - i1):
            if tag == "equal" or j1 + k < j2:
                out[i1 + k + 1] = j1 + k + 1
    return out


def mutated_texts(root: Path, m: Mutation) -> dict[str, tuple[str, str]]:
    """file → (released text, mutated text) for every file the mutation edits."""
    by_file: dict[str, list[Edit]] = {}
    for e in m.edit:
        by_file.setdefault(e.file, []).append(e)
    out = {}
    for file, edits in by_file.items():
        path = root / file
        if not path.is_file():
            raise PatchError(f"{file}: no such file in {m.release}")
        text = path.read_text(encoding="utf-8")
        out[file] = (text, apply_edits(text, edits, file))
    return out


def check_locations(m: Mutation, texts: dict[str, tuple[str, str]], root: Path) -> list[str]:
    """Problems with the ``at`` locations: each names a non-blank line of the mutated tree."""
    problems = []
    for loc in m.at:
        file, _, line = loc.rpartition(":")
        if file in texts:
            lines = texts[file][1].splitlines()
        elif (root / file).is_file():
            lines = (root / file).read_text(encoding="utf-8").splitlines()
        else:
            problems.append(f"at {loc}: no such file in {m.release}")
            continue
        n = int(line)
        if n > len(lines) or not lines[n - 1].strip():
            problems.append(f"at {loc}: {'past the end' if n > len(lines) else 'a blank line'} "
                            "of the mutated file")
    return problems


def in_scope(file: str, scope: Sequence[str]) -> bool:
    return any(file == s or file.startswith(s.rstrip("/") + "/") for s in scope)


# --- findings -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Seen:
    """A finding as the benchmark compares it: the path relative to the release root."""

    path: str
    line: int
    code: str
    severity: str
    message: str  # digits and the scratch root masked

    def key(self) -> tuple[str, int, str, str]:
        return self.path, self.line, self.code, self.severity

    def label(self) -> str:
        return f"{self.path}:{self.line} {self.code} [{self.severity}]"


#: numbers in a message (line numbers move with an edit), not the digits of a name (a2a)
_DIGITS = re.compile(r"(?<![A-Za-z_])[0-9]+")


def _seen(f: Finding, root: Path) -> Seen | None:
    at = f.location
    if at is None or (point := at.point) is None:
        return None
    path, line = at.path, point[0]
    try:
        rel = Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        rel = path
    message = f.message.replace(str(root.resolve()), "<root>").replace(str(root), "<root>")
    return Seen(rel, line, str(f.code), str(f.severity), _DIGITS.sub("#", message))


def lint_scope(root: Path, scope: Sequence[str], jobs: int) -> tuple[list[Seen], float, float]:
    """(findings, CPU seconds, wall seconds) of one lint of the scope below ``root``."""
    paths = [root / s for s in scope if (root / s).exists()]
    # the rules `attn-contracts lint` runs: the lint's own and the integrations' (the CLI's)
    rules = lint_rules()
    walls, cpus, found = wall_and_cpu_s(
        lambda: lint_paths(paths, LintConfig(), jobs=jobs, engine_rules=rules), 1)
    cpu, wall = cpus[0], walls[0]
    return [s for f in found if (s := _seen(f, root)) is not None], cpu, wall



def _counted(s: Seen) -> bool:
    return s.severity in (Severity.ERROR, Severity.WARNING)


@dataclass
class Result:
    mutation: Mutation
    status: str  # error / warning / missed; for a clean refactor: clean / flagged
    matched: list[Seen] = field(default_factory=list)  # new findings at the accepted lines
    new: list[Seen] = field(default_factory=list)  # every new warning or error
    #: warnings and errors of the unmutated tree, on lines the edit left alone, that the
    #: mutated tree no longer has (issue 37's monotonicity: adding a bug removes none)
    lost: list[Seen] = field(default_factory=list)
    cpu_s: float = 0.0
    wall_s: float = 0.0

    @property
    def hit(self) -> bool:
        m = self.mutation
        if m.is_clean:
            return self.status == "clean"
        return self.status == "error" if m.expect == "error" else self.status in ("error",
                                                                                  "warning")


def logical_lines(text: str) -> dict[int, range]:
    """Per physical line of a Python source, the physical lines of the logical line it is part
    of (the language reference's "logical line": what one NEWLINE token ends, a call written
    over several lines included); lines the tokenizer cannot read are their own."""
    spans: dict[int, range] = {}
    start: int | None = None
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT,
                            tokenize.ENCODING, tokenize.ENDMARKER):
                continue
            if start is None:
                start = tok.start[0]
            if tok.type == tokenize.NEWLINE:
                span = range(start, tok.start[0] + 1)
                spans.update(dict.fromkeys(span, span))
                start = None
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    return spans


def accepted_lines(m: Mutation, texts: dict[str, tuple[str, str]],
                   root: Path | None = None) -> set[tuple[str, int]]:
    """The (file, line) pairs a finding of the bug may be at: each ``at`` line, widened to its
    logical line (a report that names the call ``f(`` and one that names its keyword's line
    name one statement)."""
    out: set[tuple[str, int]] = set()
    spans: dict[str, dict[int, range]] = {}
    for loc in m.at:
        where, _, number = loc.rpartition(":")
        line = int(number)
        out.add((where, line))
        if where not in spans:
            text = texts[where][1] if where in texts else ""
            if not text and root is not None and (root / where).is_file():
                text = (root / where).read_text(encoding="utf-8", errors="replace")
            spans[where] = logical_lines(text) if text else {}
        out |= {(where, n) for n in spans[where].get(line, ())}
    return out


def judge(m: Mutation, baseline: list[Seen], after: list[Seen],
          texts: dict[str, tuple[str, str]], root: Path | None = None,
          ) -> tuple[str, list[Seen], list[Seen]]:
    """(status, findings at the accepted lines, every new warning or error)."""
    mapped = _mapped(baseline, texts)
    keys = {s.key() for s in mapped}
    exact = {(*s.key(), s.message) for s in mapped}
    # a finding the release has elsewhere in the same file, word for word, moved with its code
    # (also one whose line the edit replaced: code moved into a new function takes it along)
    moved = {(s.path, s.code, s.severity, s.message) for s in baseline}
    new = [s for s in after if _counted(s) and s.key() not in keys
           and (s.path, s.code, s.severity, s.message) not in moved]
    if m.is_clean:
        return ("flagged" if new else "clean"), [], new
    accepted = accepted_lines(m, texts, root)
    matched = [s for s in after if _counted(s) and (s.path, s.line) in accepted
               and (*s.key(), s.message) not in exact]
    severities = {s.severity for s in matched}
    status = "error" if "error" in severities else "warning" if severities else "missed"
    return status, matched, [s for s in new if s not in matched]


def _mapped(baseline: list[Seen], texts: dict[str, tuple[str, str]], *,
            edited: bool = True) -> list[Seen]:
    """The baseline's findings at their lines in the mutated files (those on a deleted line
    dropped; with ``edited`` off, those on a replaced line too)."""
    maps = {file: line_map(before, mutated, edited=edited)
            for file, (before, mutated) in texts.items()}
    out: list[Seen] = []
    for s in baseline:
        if s.path in maps:
            line = maps[s.path].get(s.line)
            if line is None:
                continue
            s = Seen(s.path, line, s.code, s.severity, s.message)
        out.append(s)
    return out


def lost(baseline: list[Seen], after: list[Seen],
         texts: dict[str, tuple[str, str]]) -> list[Seen]:
    """The warnings and errors of the unmutated tree, on lines the edit did not touch, that the
    mutated tree lacks: neither at their (moved) line nor, word for word, elsewhere in their
    file (code an edit moved takes its finding along). A warning whose line now holds an error
    is not lost: it was made stronger (a base the lint could not read, AC035, that the bug made
    readable and wrong)."""
    have = {s.key() for s in after}
    moved = {(s.path, s.code, s.severity, s.message) for s in after}
    errors = {(s.path, s.line) for s in after if s.severity == "error"}
    return [s for s in _mapped(baseline, texts, edited=False) if _counted(s) and s.key() not in have
            and (s.path, s.code, s.severity, s.message) not in moved
            and not (s.severity == "warning" and (s.path, s.line) in errors)]


# --- running --------------------------------------------------------------------------------------
@dataclass
class ReleaseRun:
    release: Release
    root: Path  # the scratch copy
    scope: list[str]
    baseline: list[Seen]
    files: int
    lines: int
    cpu_s: float
    wall_s: float


def _copy_release(src: Path, release: Release, into: Path) -> Path:
    root = into / release.folder
    root.mkdir(parents=True)
    shutil.copytree(src / release.package, root / release.package,
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for info in src.glob("*.dist-info"):  # the linter reads the version and pins from it
        shutil.copytree(info, root / info.name)
    return root


def run(selected: list[tuple[Corpus, Mutation]], args: argparse.Namespace,
        console: Console) -> tuple[list[ReleaseRun], list[Result]]:
    releases: dict[str, tuple[Release, list[str], list[Mutation]]] = {}
    for corpus, m in selected:
        rel = parse_spec(m.release)
        entry = releases.setdefault(str(rel), (rel, corpus.scope, []))
        entry[2].append(m)
    runs: list[ReleaseRun] = []
    results: list[Result] = []
    quiet = args.quiet or not sys.stderr.isatty()
    with tempfile.TemporaryDirectory(prefix="lint-mutations-") as tmp, \
            Progress(console=Console(stderr=True), disable=quiet, transient=True) as progress:
        task = progress.add_task("mutations", total=len(selected))
        for rel, corpus_scope, mutations in releases.values():
            src = source(rel, args.cache, args.sources, download=not args.no_download)
            progress.update(task, description=f"{rel}: copying")
            root = _copy_release(src, rel, Path(tmp))
            scope = [rel.package] if args.scope == "package" else corpus_scope
            progress.update(task, description=f"{rel}: the released tree")
            baseline, cpu, wall = lint_scope(root, scope, args.jobs)
            files = lines = 0
            for s in scope:
                if (root / s).is_dir():
                    f, n = package_lines(root / s)
                elif (root / s).is_file():
                    f, n = 1, (root / s).read_bytes().count(b"\n")
                else:
                    f = n = 0
                files, lines = files + f, lines + n
            runs.append(ReleaseRun(rel, root, scope, baseline, files, lines, cpu, wall))
            baselines = {tuple(scope): baseline}
            for m in mutations:
                progress.update(task, description=f"{rel}: {m.id}")
                own = m.scope if m.scope and args.scope != "package" else scope
                if tuple(own) not in baselines:
                    baselines[tuple(own)] = lint_scope(root, own, args.jobs)[0]
                texts = mutated_texts(root, m)
                try:
                    for file, (_, mutated) in texts.items():
                        (root / file).write_text(mutated, encoding="utf-8")
                    after, cpu, wall = lint_scope(root, own, args.jobs)
                finally:
                    for file, (released, _) in texts.items():
                        (root / file).write_text(released, encoding="utf-8")
                status, matched, new = judge(m, baselines[tuple(own)], after, texts, root)
                results.append(Result(m, status, matched, new, lost(baselines[tuple(own)],
                                                                    after, texts), cpu, wall))
                progress.advance(task)
            shutil.rmtree(root)
    return runs, results


# --- reports --------------------------------------------------------------------------------------
def fix_id(bug_id: str) -> str:
    """The id of a bug's matching fix: ``<id>-fix``, or ``<stem>-fix`` for ``<stem>-bug`` (set14
    names its bugs so)."""
    return (bug_id.removesuffix("-bug") if bug_id.endswith("-bug") else bug_id) + "-fix"


def summary(results: list[Result]) -> dict[str, Any]:
    bugs = [r for r in results if not r.mutation.is_clean]
    errors = [r for r in bugs if r.mutation.expect == "error"]
    clean = [r for r in results if r.mutation.is_clean]
    flagged = [r for r in clean if r.status == "flagged"]
    # a bug whose matching fix is in the corpus (:func:`fix_id`, as the held-out corpora pair
    # them): the measure is the bug found as an error AND its fix left clean
    by_id = {r.mutation.id: r for r in results}
    paired = [(r, by_id[fix]) for r in errors if (fix := fix_id(r.mutation.id)) in by_id]
    return {
        "mutations": len(bugs), "expect_error": len(errors),
        "found_as_error": sum(r.status == "error" for r in errors),
        "found_as_any": sum(r.status in ("error", "warning") for r in bugs),
        "recall_errors": _ratio(sum(r.status == "error" for r in errors), len(errors)),
        "recall_any": _ratio(sum(r.status in ("error", "warning") for r in bugs), len(bugs)),
        "clean_refactors": len(clean), "false_flagged": len(flagged),
        "false_findings": sum(len(r.new) for r in flagged),
        # the monotonicity: bugs that remove a finding of the unmutated tree
        "monotonicity_violations": sum(bool(r.lost) for r in bugs),
        "lost_findings": sum(len(r.lost) for r in bugs),
        "pairs": len(paired),
        "pairs_found_fix_clean": sum(b.status == "error" and f.hit for b, f in paired),
        "cpu_s": round(sum(r.cpu_s for r in results), 1),
        "wall_s": round(sum(r.wall_s for r in results), 1),
    }


def _ratio(n: int, d: int) -> float | None:
    return round(n / d, 4) if d else None


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f} %"


def table(results: list[Result]) -> Table:
    t = Table(title="attn-contracts lint: mutation benchmark")
    for col in ("id", "release", "shape", "expect", "result", "at the line", "other new"):
        t.add_column(col, overflow="fold")
    for r in results:
        m = r.mutation
        style = "green" if r.hit else "red"
        result = r.status if not m.is_clean else ("clean" if r.hit else "FLAGGED")
        t.add_row(m.id, m.release, m.shape, m.expect, f"[{style}]{result}[/{style}]",
                  ", ".join(f"{s.code}[{s.severity[0]}]@{s.line}" for s in r.matched) or "-",
                  str(len(r.new)))
    return t


def _commit() -> str:
    try:
        out = subprocess.run(["git", "-C", str(Path(__file__).resolve().parent), "rev-parse",
                              "--short", "HEAD"], capture_output=True, text=True, check=True)
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def to_json(runs: list[ReleaseRun], results: list[Result], argv: Sequence[str]) -> dict[str, Any]:
    def seen(s: Seen) -> dict[str, Any]:
        return {"path": s.path, "line": s.line, "code": s.code, "severity": s.severity,
                "message": s.message}

    return {
        "command": "python bench/lint_mutations.py " + " ".join(argv),
        "commit": _commit(), "date": date.today().isoformat(),
        "releases": [{"release": str(r.release), "scope": r.scope, "files": r.files,
                      "lines": r.lines, "cpu_s": round(r.cpu_s, 2), "wall_s": round(r.wall_s, 2),
                      "baseline": [seen(s) for s in r.baseline]} for r in runs],
        "mutations": [{"id": r.mutation.id, "release": r.mutation.release,
                       "shape": r.mutation.shape, "expect": r.mutation.expect,
                       "description": r.mutation.description, "at": r.mutation.at,
                       "status": r.status, "hit": r.hit,
                       "matched": [seen(s) for s in r.matched], "new": [seen(s) for s in r.new],
                       "lost": [seen(s) for s in r.lost],
                       "cpu_s": round(r.cpu_s, 2), "wall_s": round(r.wall_s, 2)}
                      for r in results],
        "summary": summary(results),
    }


def to_markdown(report: dict[str, Any]) -> str:
    s = report["summary"]
    out = [f"# `attn-contracts lint`: mutation benchmark ({report['date']}, linter at "
           f"`{report['commit']}`)", "",
           "Written by `bench/lint_mutations.py` (the corpus and the rules of the benchmark are "
           "in its docstring and in `bench/lint_mutations/`).", "", "```", report["command"],
           "```", "",
           "| mutations | found as error | recall as errors | found as any | recall as any | "
           "clean refactors | flagged (false) | false findings | CPU s (mutations) |",
           "|---|---|---|---|---|---|---|---|---|",
           f"| {s['mutations']} | {s['found_as_error']} of {s['expect_error']} | "
           f"{_pct(s['recall_errors'])} | {s['found_as_any']} of {s['mutations']} | "
           f"{_pct(s['recall_any'])} | {s['clean_refactors']} | {s['false_flagged']} | "
           f"{s['false_findings']} | {s['cpu_s']} |", "",
           *([f"Bugs with their fix in the corpus (`<id>-fix`): {s['pairs']}; found as an error "
              f"with the fix left clean: {s['pairs_found_fix_clean']} of {s['pairs']}.", ""]
             if s.get("pairs") else []),
           f"Monotonicity (a bug removes no warning or error of the unmutated tree on a line it "
           f"did not edit): {s.get('monotonicity_violations', 0)} of {s['mutations']} bugs "
           f"remove {s.get('lost_findings', 0)} finding(s)"
           + (": " + "; ".join(f"`{m['id']}` loses " + ", ".join(
               f"`{f['path']}:{f['line']}` {f['code']} [{f['severity']}]" for f in m["lost"])
               for m in report["mutations"] if m.get("lost") and m["expect"] != "clean")
              if s.get("monotonicity_violations") else "") + ".", "",
           "A mutation is found when a new finding of the expected severity stands on the "
           "logical line of one of its accepted lines (`at` in the corpus: a call written over "
           "several physical lines is one logical line); a correct refactor is flagged by any new "
           "warning or error. Notes never count. Each mutation is linted in the scope below "
           "(`--scope package`: the whole package; what the scope misses is in the script's "
           "docstring).", "",
           "## Released trees (the scope each mutation is linted in)", "",
           "| release | scope | files | lines | findings (error/warning/note) | CPU s | wall s |",
           "|---|---|---|---|---|---|---|"]
    for r in report["releases"]:
        counts = [sum(f["severity"] == sev for f in r["baseline"])
                  for sev in ("error", "warning", "note")]
        out.append(f"| {r['release']} | {', '.join(f'`{x}`' for x in r['scope'])} | "
                   f"{r['files']:,} | {r['lines']:,} | {'/'.join(map(str, counts))} | "
                   f"{r['cpu_s']} | {r['wall_s']} |")
    for title, clean in (("Mutations", False), ("Correct refactors (must stay clean)", True)):
        out += ["", f"## {title}", "",
                "| id | release | shape | what | expect | result | at the line | "
                "other new findings |", "|---|---|---|---|---|---|---|---|"]
        for m in report["mutations"]:
            if (m["expect"] == "clean") != clean:
                continue
            at = ", ".join(f"{f['code']} [{f['severity']}] l.{f['line']}" for f in m["matched"])
            other = "; ".join(f"`{f['path']}:{f['line']}` {f['code']} [{f['severity']}]"
                              for f in m["new"])
            result = m["status"] if m["hit"] else f"**{m['status']}**"
            out.append(f"| `{m['id']}` | {m['release']} | {m['shape']} | {m['description']} | "
                       f"{m['expect']} | {result} | {at or '-'} | {other or '-'} |")
    return "\n".join(out) + "\n"


def show(m: Mutation, texts: dict[str, tuple[str, str]], root: Path) -> str:
    out = [f"# {m.id} ({m.release}, {m.shape}, expect {m.expect}): {m.description}"]
    for file, (before, after) in texts.items():
        out += difflib.unified_diff(before.splitlines(), after.splitlines(), f"a/{file}",
                                    f"b/{file}", n=1, lineterm="")
    for loc in m.at:
        file, _, line = loc.rpartition(":")
        text = texts[file][1] if file in texts else (root / file).read_text(encoding="utf-8")
        out.append(f"at {loc}: {text.splitlines()[int(line) - 1].strip()}")
    return "\n".join(out)


def check_patches(selected: list[tuple[Corpus, Mutation]], args: argparse.Namespace,
                  console: Console) -> int:
    problems: list[str] = []
    roots: dict[str, Path] = {}
    for corpus, m in selected:
        rel = parse_spec(m.release)
        if str(rel) not in roots:
            roots[str(rel)] = source(rel, args.cache, args.sources, download=not args.no_download)
        root = roots[str(rel)]
        try:
            texts = mutated_texts(root, m)
        except PatchError as err:
            problems.append(f"{m.id}: {err}")
            continue
        for e in m.edit:
            if not in_scope(e.file, corpus.scope):
                problems.append(f"{m.id}: {e.file} is outside the corpus scope "
                                f"({', '.join(corpus.scope)})")
        problems += [f"{m.id}: {p}" for p in check_locations(m, texts, root)]
        if args.show:
            console.print(show(m, texts, root), markup=False, highlight=False)
    for p in problems:
        console.print(p, markup=False, highlight=False)
    bugs = sum(not m.is_clean for _, m in selected)
    console.print(f"{len(selected)} entries ({bugs} mutations, {len(selected) - bugs} clean "
                  f"refactors) over {len(roots)} releases: "
                  f"{'all apply' if not problems else f'{len(problems)} problem(s)'}")
    return 1 if problems else 0


def _select(entries: list[tuple[Corpus, Mutation]], only: Iterable[str]
            ) -> list[tuple[Corpus, Mutation]]:
    patterns = [p for item in only for p in item.split(",") if p]
    if not patterns:
        return entries
    chosen = [(c, m) for c, m in entries if any(fnmatch.fnmatchcase(m.id, p) for p in patterns)]
    unmatched = [p for p in patterns if not any(fnmatch.fnmatchcase(m.id, p) for _, m in entries)]
    if unmatched:
        raise CorpusError(f"--only: no mutation matches {', '.join(unmatched)} (known: "
                          f"{', '.join(m.id for _, m in entries)})")
    return chosen


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sources", type=Path, action="append", default=[], metavar="DIR",
                    help="a folder holding slim copies <dist>-<version>/ (repeatable)")
    ap.add_argument("--cache", type=Path, default=default_cache(), metavar="DIR",
                    help="where releases are downloaded and unpacked (default: %(default)s)")
    ap.add_argument("--no-download", action="store_true",
                    help="a release missing from --sources and --cache is an error (exit 2)")
    ap.add_argument("--corpus", type=Path, default=CORPUS, metavar="DIR")
    ap.add_argument("--only", action="append", default=[], metavar="ID",
                    help="mutation ids or shell patterns, comma-separated (repeatable)")
    ap.add_argument("--scope", choices=["corpus", "package"], default="corpus",
                    help="lint the corpus's scope (default) or the whole package per mutation")
    ap.add_argument("--jobs", type=int, default=1, help="lint processes (default 1)")
    ap.add_argument("--check-patches", action="store_true",
                    help="only verify that every edit applies and every location exists")
    ap.add_argument("--show", action="store_true", help="print each mutation as a diff")
    ap.add_argument("--json", type=Path, default=None, metavar="OUT")
    ap.add_argument("--markdown", type=Path, default=None, metavar="OUT")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    console = Console(width=200)
    try:
        if args.jobs < 1:
            raise CorpusError(f"--jobs {args.jobs} (allowed: 1 or more)")
        selected = _select(load_corpus(args.corpus), args.only)
        if args.check_patches:
            return check_patches(selected, args, console)
        for corpus, m in selected:  # fail before a long run, not in its middle
            for e in m.edit:
                if not in_scope(e.file, corpus.scope):
                    raise CorpusError(f"{m.id}: {e.file} is outside the corpus scope")
        runs, results = run(selected, args, console)
    except (CorpusError, ReleaseError, PatchError) as err:
        print(f"lint_mutations: {err}", file=sys.stderr)
        return 2
    console.print(table(results))
    s = summary(results)
    console.print(
        f"recall as errors: {s['found_as_error']} of {s['expect_error']} ({_pct(s['recall_errors'])}); "
        f"recall as any finding: {s['found_as_any']} of {s['mutations']} ({_pct(s['recall_any'])}); "
        f"false findings: {s['false_flagged']} of {s['clean_refactors']} clean refactors flagged "
        f"({s['false_findings']} findings); lint CPU {s['cpu_s']} s over {len(results)} runs "
        f"+ {sum(r.cpu_s for r in runs):.1f} s for {len(runs)} released trees")
    report = to_json(runs, results, list(argv if argv is not None else sys.argv[1:]))
    if args.json:
        args.json.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    if args.markdown:
        args.markdown.write_text(to_markdown(report), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
