"""SGLang: its attention backends, the kernels their decode calls and the combines their LSE
reaches, derived from SGLang's own sources for the release at hand.

SGLang cannot be installed beside this project's CPU torch (0.5.23's wheel requires
``torch==2.14.1``, ``cuda-python>=13.0`` and ``flashinfer_python[cu13]==0.7.2``, its METADATA), so
nothing here imports it: the sources of an installed package (found by
``importlib.util.find_spec``, which runs none of its code) or of an unpacked wheel (``root=``) are
read with ``ast`` and the lint program model (:func:`attn_contracts.lint.lint_model`).

From the tree:

- **the names**: the registry (``@register_attention_backend("name")`` factories from 0.5.3; the
  ``if backend_str == "name"`` branches of ``ModelRunner._get_attention_backend_from_str`` before),
  and the classes each name's factory returns, for MLA models or others (the factory's
  ``runner.use_mla_backend`` test), following a factory that returns another factory's result;
- **the kernels**: the producer calls each class's decode method reaches (its MRO, ``self`` bound
  to the class), resolved to catalog records with the base each returns there;
- **the combine**: the MLA layer's DCP combine calls (``forward_mla.py``), the consumer record
  each call is, and the base keyword each passes, read as the function of the backend's name it
  is (``is_mla_dcp_lse_base_on_e(self.current_attention_backend)``, evaluated on each name from its
  body: ``name in {...}``, ``not in``, ``==`` or ``!=`` a string; any other body cannot be read,
  ``AC028``), or the record's default or fixed base where the call passes none (0.5.15-0.5.16).

The edge per name: each LSE-returning kernel record of its decode against each combine, with the
base the combine is told for that name (:func:`attn_contracts.checks.check_edge`). Where the
sources are laid out (the registry's file, the combine's file, the decode method) is data with
citations, ``backends/catalog/engines/sglang.toml``; an unseen release is read with the newest
entry and told so. Fails closed: a backend whose decode returns an LSE under DCP that no record
describes, combined with the base the name function gives every other name (its default), is an
error (``AC002``); one the name function names explicitly is a note.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from collections import Counter
from collections.abc import Callable
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING
from typing import cast

from attn_contracts.checks import check_edge
from attn_contracts.consumer import ConsumerRecord
from attn_contracts.consumer import FixedBase
from attn_contracts.consumer import KeywordBase
from attn_contracts.findings import RULES
from attn_contracts.findings import Code
from attn_contracts.findings import Finding
from attn_contracts.findings import Location
from attn_contracts.findings import Severity
from attn_contracts.integrations._report import EngineReport
from attn_contracts.integrations.engine_data import DcpCombineEntry
from attn_contracts.integrations.engine_data import RegistryEntry
from attn_contracts.integrations.engine_data import engine_data
from attn_contracts.records import CapabilityRecord
from attn_contracts.records import LseSpec
from attn_contracts.registry import Registry
from attn_contracts.registry import UnknownRecordError
from attn_contracts.sources import FileReadError
from attn_contracts.sources import read_bytes
from attn_contracts.versions import in_range
from attn_contracts.versions import package_version

if TYPE_CHECKING:  # the program model's query API, read without importing the lint at start
    from attn_contracts.lint.classes import ClassInfo
    from attn_contracts.lint.model import ProgramModel
    from attn_contracts.lint.program import Binding
    from attn_contracts.lint.program import Program

__all__ = ["Backend", "Built", "Combine", "Derived", "SglangReport", "derive", "find_root",
           "report"]

#: what the program model reads below the package: the backends (and the hardware backends some
#: names build); the registry's and the combine's files are added from the engine data
SCOPE = ("srt/layers/attention", "srt/hardware_backend")


class SglangReport(EngineReport):
    """One SGLang attention backend, as the ``engine`` command prints it."""


def find_root(root: str | Path | None = None) -> Path:
    """The ``sglang`` package folder: ``root`` (the package, or a folder holding it), else the
    installed one, located without importing it."""
    if root is not None:
        path = Path(root)
        path = path / "sglang" if (path / "sglang" / "srt").is_dir() else path
        if not (path / "srt").is_dir():
            raise FileNotFoundError(f"{root}: no SGLang sources (expected sglang/srt/ there); "
                                    "pass the folder holding the sglang package")
        return path
    spec = importlib.util.find_spec("sglang")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("SGLang is not installed; pass --root with an unpacked wheel "
                                "(pip download --no-deps sglang==0.5.23, then unzip it)")
    return Path(next(iter(spec.submodule_search_locations)))


class _Unparsable(Exception):
    """A source file of the tree that cannot be read or parsed: its ``AC000`` finding."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


def _parse(pkg: Path, rel: str) -> ast.Module:
    """The syntax tree of ``pkg/rel`` (``rel`` below the package), or :class:`_Unparsable` with
    one ``AC000`` located where the parser stopped."""
    where = f"sglang/{rel}"
    try:
        text = read_bytes(pkg / rel, "source file").decode("utf-8")
        return ast.parse(text, filename=str(pkg / rel))
    except SyntaxError as err:
        line, col, why = err.lineno or 1, err.offset or 1, f"does not parse: {err.msg}"
    except FileReadError as err:
        line, col, why = 1, 1, str(err).removeprefix(f"{pkg / rel}: ")
    except UnicodeDecodeError as err:
        line, col, why = 1, 1, f"not UTF-8 (byte offset {err.start})"
    except (RecursionError, MemoryError) as err:
        line, col, why = 1, 1, f"nested too deeply to parse ({type(err).__name__})"
    raise _Unparsable(Finding(Code.AC000, where, why, location=Location(where, line, col)))


# --- the derived facts -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Built:
    """A class one name's factory returns."""

    cls: str  # its dotted path ("" when the return names no class of the sources)
    where: Location  # the ``return``, ``sglang/...py:LINE``
    mla: bool | None  # built for MLA models (True), for the others (False), for either (None)
    why: str = ""  # why no class was found


@dataclass(frozen=True)
class Kernel:
    """A producer record the decode method reaches."""

    record: str
    where: Location  # the call, ``sglang/...py:LINE``
    base: str | None  # the base the call pins (None: the library's dispatch chooses)
    #: the call's base is passed by an expression the flow does not read (``**kwargs`` from
    #: the caller): trusted, as the lint trusts it, so the record's own base is no evidence
    unread: bool = False
    #: the call leaves the base to the library's run-time dispatch (``backend="auto"``, no
    #: ``return_lse_base``): each base the dispatch may pick is checked
    dispatch: bool = False


@dataclass(frozen=True)
class Combine:
    """One DCP combine call of the MLA layer and how it is told the base."""

    consumer: str  # the consumer record
    where: Location  # ``sglang/...py:LINE``
    keyword: str  # the record's base keyword ("" for a fixed-base record)
    #: how the call passes it: ``"omitted"`` (the default applies), ``"literal"``, ``"name"`` (a
    #: function of the backend's name), ``"unknown"`` (an expression this does not read)
    passes: str
    literal: str = ""  # the literal passed, for ``"literal"``
    function: str = ""  # the name function, for ``"name"``
    function_at: Location | None = None
    #: what the function answers for each registered name (the literal, ``"True"``, ``"2.0"``;
    #: ``"?"``: not read), as the lint's interpreter reads its body called with that name
    answers: tuple[tuple[str, str], ...] = ()
    #: what it answers for a name it does not know (its default)
    default: str = "?"
    #: the call of the helper that makes the combine which tells it so (a helper's parameter
    #: read at each of its calls), where the base is told there
    via: Location | None = None

    def value_for(self, name: str) -> tuple[str | None, bool]:
        """The keyword's literal for ``name`` (None: omitted; ``"?"``: cannot be read), and
        whether the name is one the code names itself (its answer is not the default's)."""
        if self.passes == "omitted":
            return None, False
        if self.passes == "literal":
            return self.literal, True
        if self.passes != "name":
            return "?", False
        literal = dict(self.answers).get(name, "?")
        named = literal != "?" and literal != self.default
        return (None, named) if literal == _OMITTED else (literal, named)


@dataclass(frozen=True)
class Backend:
    """One registered name, derived."""

    name: str
    where: Location  # the factory, ``sglang/...py:LINE``
    built: tuple[Built, ...]
    #: per MLA class (dotted): the LSE-returning kernel records its decode reaches
    kernels: dict[str, tuple[Kernel, ...]] = field(default_factory=dict)
    #: per MLA class: its decode returns a pair on some path and does not refuse an LSE for
    #: MLA (the partial and the LSE the layer combines)
    returns_lse: dict[str, bool] = field(default_factory=dict)
    #: per class: the lint findings located in the class body (its own merges)
    lint: dict[str, tuple[Finding, ...]] = field(default_factory=dict)


@dataclass
class Derived:
    """The mapping of one SGLang tree."""

    root: Path
    version: str | None
    backends: dict[str, Backend]
    combines: tuple[Combine, ...]
    notes: list[str]
    unparsed: list[Finding]
    registry_at: str


def _rel(path: str) -> str:
    parts = str(path).replace("\\", "/").rsplit("/sglang/", 1)
    return "sglang/" + parts[1] if len(parts) == 2 else str(path)


def _short(where: Location) -> Location:
    """``/x/sglang/a.py:12:5`` → ``sglang/a.py:12``."""
    return Location(_rel(where.path), where.line)


def derive(root: str | Path | None = None, *, version: str | None = None) -> Derived:
    """The mapping of the SGLang tree at ``root`` (the package or the folder holding it; default:
    the installed one). Cached per folder and version."""
    pkg = find_root(root).resolve()
    return _derive(pkg, version or package_version(pkg))


@lru_cache(maxsize=4)
def _derive(pkg: Path, version: str | None) -> Derived:
    return _derive_now(pkg, version)


def _derive_now(pkg: Path, version: str | None) -> Derived:
    """The mapping as the files are now (a lint reads them afresh each run: a process that
    lints the same folder twice, edited between, sees the edit)."""
    from attn_contracts.lint import LintConfig
    from attn_contracts.lint import lint_model

    findings, model = lint_model(_read_paths(pkg, version), LintConfig())
    return _derive_on(pkg, version, model, findings)


def _entries(version: str | None) -> tuple[RegistryEntry, DcpCombineEntry, bool, list[str]]:
    """(the registry entry, the MLA DCP combine entry, whether the release is older than every
    combine entry, what the pick says) for a release."""
    data = engine_data("sglang")
    notes: list[str] = []
    reg, note = data.pick(data.registry, version)
    notes += [note] if note else []
    entries = data.dcp_combine
    # a release older than every entry has no MLA DCP combine; a newer (or unknown) one is read
    # with the newest entry, and told so
    older = bool(version) and all(
        _lowest(e.versions) and in_range(f"<{_lowest(e.versions)}", version, unparsed=False)
        for e in entries)
    combine_entry, note = data.pick(entries, version)
    if note and not older and note not in notes:
        notes.append(note)
    return reg, combine_entry, older, notes


def _read_paths(pkg: Path, version: str | None) -> list[Path]:
    """What the mapping reads of the tree: the backends' folders, the registry, the combine."""
    reg, combine_entry, older, _ = _entries(version)
    paths = [pkg / p for p in SCOPE if (pkg / p).is_dir()]
    trees: dict[str, ast.Module] = {}
    for file in (reg.file, *combine_entry.files):
        rel = file.removeprefix("sglang/")
        if (pkg / rel).is_file():
            paths.append(pkg / rel)
            if file in combine_entry.files and not older:
                with suppress(_Unparsable):  # (reported where the mapping reads it)
                    trees[rel] = _parse(pkg, rel)
    # and the files the combine's helpers live in
    paths += [pkg / rel for rel in _helper_files(pkg, trees, Registry(), version)]
    return paths


def _derive_on(pkg: Path, version: str | None, model: ProgramModel,
               findings: list[Finding]) -> Derived:
    """The mapping of the tree at ``pkg`` over a program model that holds its files."""
    reg, combine_entry, older, notes = _entries(version)
    unparsed: list[Finding] = []
    reg_rel = reg.file.removeprefix("sglang/")
    registry = Registry()
    try:
        factories = _factories(_parse(pkg, reg_rel), reg)
    except _Unparsable as err:
        unparsed.append(err.finding)
        factories = {}
    modules: dict[str, _Module] = {}
    for file in () if older else combine_entry.files:
        rel = file.removeprefix("sglang/")
        if not (pkg / rel).is_file():
            if file == combine_entry.file:  # the others are read where the release has them
                notes.append(f"{file} is not in the tree: no MLA DCP combine is read")
            continue
        try:
            tree = _parse(pkg, rel)
        except _Unparsable as err:
            unparsed.append(err.finding)
            continue
        modules[rel] = _Module(rel, tree, _Asked(model, str(pkg / rel), tuple(factories),
                                                 combine_entry.name_attr), _qualnames(tree))
    for rel, (tree, helpers) in _helper_files(pkg, {r: m.tree for r, m in modules.items()},
                                              registry, version).items():
        modules[rel] = _Module(rel, tree, _Asked(model, str(pkg / rel), tuple(factories),
                                                 combine_entry.name_attr), _qualnames(tree),
                               helpers)
    combines: tuple[Combine, ...] = ()
    for m in modules.values():
        combines += tuple(_combines(m, modules, registry, version))
    decode = combine_entry.decode_method
    assume = _under_dcp(frozenset(combine_entry.dcp_flags), frozenset(combine_entry.dcp_sizes))
    reg_path = str(pkg / reg_rel)
    backends: dict[str, Backend] = {}
    for name, (line, body, fn) in factories.items():
        built = tuple(_built(model, reg_path, body, fn))
        backends[name] = _backend(model, name, Location(f"sglang/{reg_rel}", line), built, decode,
                                  registry, version, findings, assume)
    return Derived(pkg, version, backends, combines, notes, unparsed, reg.file)


#: what ``attn-contracts lint`` reports of the mapping: the base at the MLA DCP combine,
#: confirmed or not (the layout, empty rows and limits are the startup report's)
_LINT_CODES = frozenset({Code.AC016, Code.AC002, Code.AC028})


def lint_rule(model: ProgramModel, linted: frozenset[Path]) -> list[Finding]:
    """The mapping's base edges as ``attn-contracts lint`` findings, for each SGLang package
    whose registry and MLA DCP combine are among the linted files: every registered name's
    decode LSE against the base the combine is told for that name (``AC016``), told by an
    expression this does not read (``AC028``, a warning), or an unconfirmed default
    (``AC002``), at the combine call, each naming the backends it holds for; the rest of the
    mapping's findings stay its own. The mapping reads the lint's own program model where the
    registry is linted too; where only the combine's file is, the package's registry and
    backends are read for it (as a type checker reads the modules a file imports: to judge the
    file named, never reported on themselves)."""
    out: list[Finding] = []
    for pkg in sorted({p for f in linted if (p := _package_of(f)) is not None}):
        version = package_version(pkg)
        reg, combine_entry, older, _ = _entries(version)
        if older or not any(pkg.parent / f in linted for f in combine_entry.files):
            continue
        d = _derive_on(pkg, version, model, []) if pkg.parent / reg.file in linted else \
            _derive_now(pkg, version)
        registry = Registry()
        hits: dict[tuple[Code, Location], list[tuple[str, Finding]]] = {}
        for name, b in d.backends.items():
            for f in _row(b, d, registry).findings:
                # errors, and the warning that a base is not read (never silence where a
                # name's answer cannot be read: a bug that hides it must not drop the finding)
                if (f.severity is Severity.ERROR or f.code is Code.AC028) and \
                        f.code in _LINT_CODES and f.location is not None and \
                        pkg.parent / f.location.path in linted:
                    hits.setdefault((f.code, f.location), []).append((name, f))
        for (_, where), found in hits.items():
            f = found[0][1]
            names = list(dict.fromkeys(n for n, _ in found))
            out.append(replace(
                f, subject=", ".join(f"sglang.{n}" for n in names),
                message=_merged_message(found),
                # the combine's line (``sglang/...py:LINE``), in the linted file, at column 1
                location=replace(where, path=str(pkg.parent / where.path), col=1)))
    return out


def _merged_message(found: list[tuple[str, Finding]]) -> str:
    """One combine's findings of one code, as one message (the lint keeps one finding per
    code and place): each problem with the backends it holds for, so a backend whose edge
    breaks in another way is named with its own problem, never folded into another's."""
    by_problem: dict[str, list[tuple[str, str]]] = {}
    for name, f in found:
        # the problem as it reads for any backend (a message names its own backend's answer)
        problem = re.sub(rf"(?<![\w.]){re.escape(name)}(?![\w.])", "\x00", f.message)
        by_problem.setdefault(problem, []).append((name, f.message))
    parts: list[str] = []
    causes: set[str] = set()  # the reasons given in full so far, as they read for any backend
    for problem, edges in by_problem.items():
        named = list(dict.fromkeys(n for n, _ in edges))
        more = f" ({len(edges) - 1} more such edge(s) here)" if len(edges) > 1 else ""
        # a problem in full where its reason (what tells the base, which kernel) is new,
        # else by its first clause (what feeds what); one said twice once
        cause = problem.partition(" (")[2]
        told = edges[0][1] if cause not in causes else edges[0][1].split(" (", 1)[0]
        causes.add(cause)
        part = (f"SGLang backend{'s' if len(named) > 1 else ''} "
                f"{', '.join(map(repr, named))}: {told}{more if not parts else ''}")
        if part not in parts:
            parts.append(part)
    return "; ".join(parts)


def _package_of(path: Path) -> Path | None:
    """The ``sglang`` package folder a file is in (None outside one)."""
    for parent in path.parents:
        if parent.name == "sglang" and (parent / "srt").is_dir():
            return parent
    return None


def _lowest(spec: str) -> str:
    """The lower bound of a ``>=X`` range ("" when it has none)."""
    for part in spec.split(","):
        part = part.strip()
        if part.startswith(">="):
            return part[2:].strip()
    return ""


def _under_dcp(flags: frozenset[str], sizes: frozenset[str],
               ) -> Callable[[ast.expr], bool | None]:
    """The value of an ``if`` test under DCP, where the test is one of the engine's DCP tests
    (a flag, ``not`` a flag, a size compared with 1, ``and``/``or`` of those); None otherwise."""

    def value(test: ast.expr) -> bool | None:
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            inner = value(test.operand)
            return None if inner is None else not inner
        if isinstance(test, ast.BoolOp):
            parts = [value(v) for v in test.values]
            if isinstance(test.op, ast.And):
                return False if False in parts else True if all(p is True for p in parts) \
                    else None
            return True if True in parts else False if all(p is False for p in parts) else None
        if _last(test) in flags:
            return True
        if isinstance(test, ast.Compare) and len(test.ops) == 1 and \
                _last(test.left) in sizes and isinstance(test.comparators[0], ast.Constant) \
                and test.comparators[0].value == 1:
            op = test.ops[0]
            if isinstance(op, (ast.Eq, ast.LtE, ast.Lt)):
                return False
            if isinstance(op, (ast.NotEq, ast.Gt)):
                return True
        return None

    return value


# --- the names -------------------------------------------------------------------------------------
_Body = list[ast.stmt]


def _factories(tree: ast.Module, entry: RegistryEntry) -> dict[str, tuple[int, _Body, ast.AST]]:
    """name → (line, the statements that build it, the function they are in)."""
    found: dict[str, tuple[int, _Body, ast.AST]] = {}
    if entry.form == "decorator":
        decorator = entry.function
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for dec in node.decorator_list:
                    if (isinstance(dec, ast.Call) and _last(dec.func) == decorator and dec.args
                            and isinstance(dec.args[0], ast.Constant)
                            and isinstance(dec.args[0].value, str)):
                        found.setdefault(dec.args[0].value, (node.lineno, node.body, node))
        return found
    # the branches of one method: ``if <x> == "name": ... elif <x> == "name": ...``
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
                node.name == entry.function:
            for st in node.body:
                branch: ast.stmt | None = st
                while isinstance(branch, ast.If):
                    name = _compared_name(branch.test)
                    if name is not None:
                        found.setdefault(name, (branch.lineno, branch.body, node))
                    branch = branch.orelse[0] if len(branch.orelse) == 1 else None
    return found


def _last(node: ast.expr) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr \
        if isinstance(node, ast.Attribute) else ""


def _compared_name(test: ast.expr) -> str | None:
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq):
        right = test.comparators[0]
        if isinstance(right, ast.Constant) and isinstance(right.value, str):
            return right.value
    return None


def _mla_polarity(test: ast.expr) -> bool | None:
    """True: the branch runs for MLA models (``if runner.use_mla_backend``); False: for the
    others (``if not ...``); None: the test is not about it."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    inner = test.operand if isinstance(test, ast.UnaryOp) else test
    if isinstance(inner, ast.Attribute) and inner.attr == "use_mla_backend":
        return not negated
    return None


def _statements(body: _Body, mla: bool | None) -> Iterator[tuple[ast.stmt, bool | None]]:
    """Each statement of ``body`` (into nested blocks) with the MLA branch it is on."""
    for st in body:
        yield st, mla
        if isinstance(st, ast.If):
            pol = _mla_polarity(st.test)
            yield from _statements(st.body, mla if pol is None else pol)
            yield from _statements(st.orelse, mla if pol is None else not pol)
        elif isinstance(st, (ast.With, ast.For, ast.While)):
            yield from _statements(st.body, mla)
        elif isinstance(st, ast.Try):
            for block in (st.body, *(h.body for h in st.handlers), st.orelse, st.finalbody):
                yield from _statements(block, mla)


def _local_imports(fn: ast.AST) -> dict[str, str]:
    return {a.asname or a.name: f"{node.module}.{a.name}" for node in ast.walk(fn)
            if isinstance(node, ast.ImportFrom) and node.module and not node.level
            for a in node.names}


def _built(model: ProgramModel, path: str, body: _Body, fn: ast.AST,
           depth: int = 0) -> Iterator[Built]:
    """The classes the statements return (following a returned factory call two levels)."""
    program = model.program
    local = _local_imports(fn)
    assigned: dict[str, ast.expr] = {}
    for st, mla in _statements(body, None):
        if isinstance(st, ast.Assign) and len(st.targets) == 1 and \
                isinstance(st.targets[0], ast.Name):
            assigned[st.targets[0].id] = st.value
        if not isinstance(st, ast.Return) or st.value is None:
            continue
        value = st.value
        if isinstance(value, ast.Name) and value.id in assigned:
            value = assigned[value.id]
        if not isinstance(value, ast.Call):
            continue
        where = Location(_rel(path), st.lineno)
        target = _resolve(program, path, ast.unparse(value.func), local)
        if target is None:
            yield Built("", where, mla, why=f"returns {ast.unparse(value.func)}(...), not a "
                                             "name of the sources")
        elif target.kind == "class" and target.cls is not None:
            c = target.cls
            yield Built(f"{c.module}.{c.name}" if c.module else c.name, where, mla)
        elif target.kind == "def" and depth < 2:
            node = program.function(target.module, target.name)
            if node is not None:
                for b in _built(model, target.module, node.body, node, depth + 1):
                    yield Built(b.cls, b.where, mla if b.mla is None else b.mla, b.why)
        else:
            yield Built("", where, mla, why=f"returns {ast.unparse(value.func)}(...), "
                                             f"{target.target or target.kind}")


def _resolve(program: Program, path: str, dotted: str, local: dict[str, str]) -> Binding | None:
    """What ``dotted`` (as written in module ``path``, with its function-local imports) is."""
    head, _, rest = dotted.partition(".")
    if rest:
        return None  # ``module.Class``: not a form the factories use
    if head in local:
        module, _, name = local[head].rpartition(".")
        mod_path = program.module(module)
        return None if mod_path is None else program.binding(mod_path, name)
    return program.binding(path, head)


def _backend(model: ProgramModel, name: str, where: Location, built: tuple[Built, ...], decode: str,
             registry: Registry, version: str | None, findings: list[Finding],
             assume: Callable[[ast.expr], bool | None]) -> Backend:
    program = model.program
    kernels: dict[str, tuple[Kernel, ...]] = {}
    returns: dict[str, bool] = {}
    lint: dict[str, tuple[Finding, ...]] = {}
    for b in built:
        if not b.cls:
            continue
        module, _, cls_name = b.cls.rpartition(".")
        cls = model.find_class(module, cls_name)
        if cls is None:
            continue
        lint[b.cls] = tuple(_findings_in(program, cls, findings))
        if b.mla is False:
            continue
        # the kernels whose LSE the decode returns (a subclass's own DCP call, not the
        # parent's path it takes otherwise); all it reaches where the flow loses the LSE
        # by the place's text (as when places were text: line 10 before line 9)
        found = sorted(model.kernels_of(cls, decode, returned=True, assume=assume),
                       key=lambda k: (str(k.where), k.record))
        kept: dict[tuple[str, str | None], Kernel] = {}
        for k in found:
            rec = _record(registry, k.record)
            if rec is None or not rec.returns_lse or not _holds(rec, version):
                continue
            base = None if k.dispatch else k.base
            # each base a path pins is an edge of its own (a conversion on one path only: the
            # other path's LSE reaches the combine in the kernel's base); the paths that pin
            # none are one: trusted only where every such path's base is an expression the
            # flow does not read (one that leaves it to the dispatch may run each kernel)
            entry = kept.get((k.record, base))
            dispatch = k.dispatch or (entry is not None and entry.dispatch)
            unread = base is None and not dispatch and (entry is None or entry.unread)
            kept[(k.record, base)] = Kernel(k.record, _short(k.where), base, unread, dispatch)
        kernels[b.cls] = tuple(kept.values())
        returns[b.cls] = _returns_pair(program, cls, decode)
    return Backend(name, where, built, kernels, returns, lint)


def _record(registry: Registry, name: str) -> CapabilityRecord | None:
    try:
        return registry.get(name)
    except UnknownRecordError:
        return None


def _holds(rec: CapabilityRecord, version: str | None) -> bool:
    """The record holds for an SGLang tree: a record of SGLang's own code at its release;
    another library's at any (the release SGLang pins is not read here)."""
    if rec.library != "sglang" or not version or not rec.library_version:
        return True
    return in_range(rec.library_version, version, unparsed=True)


def _findings_in(program: Program, cls: ClassInfo, findings: list[Finding]) -> Iterator[Finding]:
    node = program.class_node(cls)
    if node is None:
        return
    lo, hi = node.lineno, node.end_lineno or node.lineno
    for f in findings:  # lint locates every finding at a point: path, line, column
        at = f.location
        if at is not None and at.path == cls.path and (point := at.point) is not None and \
                lo <= point[0] <= hi:
            yield f


def _returns_pair(program: Program, cls: ClassInfo, decode: str, depth: int = 0) -> bool:
    """The decode method (along the MRO) returns a pair on some path: the partial and the LSE
    the layer hands to the combine (under DCP; SGLang's decode returns the output alone
    otherwise), itself or through a method of the class it returns the result of
    (``return self._forward_decode_dcp(...)``, two levels)."""
    definer = program.lookup(cls, decode)
    fn = None if definer is None else program.methods(definer).get(decode)
    if fn is None:
        return False
    delegated: list[str] = []
    for n in ast.walk(fn):
        if _refuses_mla_lse(n):
            return False
        if isinstance(n, ast.Return) and isinstance(n.value, ast.Tuple) and \
                len(n.value.elts) == 2:
            return True
        if isinstance(n, ast.Return) and (method := _self_method_call(n.value)) is not None:
            delegated.append(method)
    return depth < 2 and any(_returns_pair(program, cls, m, depth + 1)
                             for m in dict.fromkeys(delegated) if m != decode)


def _refuses_mla_lse(n: ast.AST) -> bool:
    """``if return_lse and self.use_mla: raise ...``: the MLA decode refuses an LSE."""
    if not (isinstance(n, ast.If) and n.body and isinstance(n.body[0], ast.Raise)):
        return False
    test = ast.unparse(n.test)
    return "use_mla" in test and "lse" in test and "not " not in test


def _self_method_call(value: ast.expr | None) -> str | None:
    """The method name of ``self.<method>(...)``; None for any other expression."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
            isinstance(value.func.value, ast.Name) and value.func.value.id == "self":
        return value.func.attr
    return None


# --- the combine -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Asked:
    """The program model that answers what a module-level function of the combine's file
    returns for each registered name."""

    model: ProgramModel
    path: str
    names: tuple[str, ...]
    #: the layer's attribute holding the registered name (engine data), where it is known
    name_attr: str | None = None

    def answers(self, function: str) -> tuple[tuple[tuple[str, str], ...], str]:
        """Per name, the function's answer (the literal it returns, ``"True"``, ``"2.0"``;
        ``"?"`` where it is not one literal), and its answer for a name no backend has (the default)."""
        def one(name: str) -> str:
            read, value = self.model.answer(self.path, function, (name,))
            return _answer(read, value)
        return tuple((n, one(n)) for n in self.names), one(_NO_NAME)

    def answers_at(self, qualname: str, keyword: ast.expr, key: str | None = None,
                   keyword_path: str | None = None,
                   ) -> tuple[tuple[tuple[str, str], ...], str] | None:
        """Per name, the keyword's value in function ``qualname`` run with the layer's name
        attribute that name (its body read as Python runs it: a loop, a set, a helper), and for
        a name no backend has; None without a name attribute to set. With ``key``,
        ``keyword`` is the call's ``**mapping`` and the answer what it gives ``key``
        (:data:`_OMITTED` where it gives nothing). ``keyword_path``: the keyword is of a call
        in that file, which the function reaches through its calls."""
        from attn_contracts.lint.model import OMITTED

        if self.name_attr is None:
            return None
        attr = self.name_attr

        def one(name: str) -> str:
            read, value = self.model.answer_at(self.path, qualname, keyword, {attr: name},
                                               key=key, keyword_path=keyword_path)
            return _OMITTED if read and value is OMITTED else _answer(read, value)
        return tuple((n, one(n)) for n in self.names), one(_NO_NAME)


def _answer(read: bool, value: object) -> str:
    """An answer as the literal the call passes (a float or ``None`` too: the consumer record
    says what each selects), ``"?"`` where it is not one literal of a plain type."""
    plain = value is None or isinstance(value, (bool, int, float, str))
    return repr(value) if read and plain else "?"


#: an answer: the call's ``**mapping`` does not give the keyword (the callee's default applies)
_OMITTED = "(omitted)"

#: a name no backend is registered under (what a name function answers by default)
_NO_NAME = "\x00 a name no backend has"


@dataclass(frozen=True)
class _Module:
    """A file of the combine, parsed, with what reads it: the program model's questions of
    it and its functions' qualified names."""

    rel: str  # inside the package (``srt/models/...py``)
    tree: ast.Module
    asked: _Asked
    qualnames: dict[int, str]
    #: a helper's file: the functions of it the combine's files import (those read alone)
    only: frozenset[str] | None = None

    def functions(self, modules: dict[str, _Module]) -> dict[str, tuple[ast.FunctionDef, _Module]]:
        """The module-level functions a name of the module calls: its own, and those it
        imports by name from another file of the combine (its ``from ... import f``)."""
        out = {n.name: (n, self) for n in self.tree.body if isinstance(n, ast.FunctionDef)}
        for n in self.tree.body:
            if not isinstance(n, ast.ImportFrom):
                continue
            source = modules.get(_imported_rel(self.rel, n))
            if source is None:
                continue
            own = {f.name: f for f in source.tree.body if isinstance(f, ast.FunctionDef)}
            for a in n.names:
                if a.name in own:
                    out.setdefault(a.asname or a.name, (own[a.name], source))
        return out


def _imported_names(rel: str, tree: ast.Module) -> dict[str, str]:
    """The names the file ``rel`` imports by ``from ... import``, each with the qualified name
    it stands for (a relative import's module resolved inside the package)."""
    out: dict[str, str] = {}
    for n in ast.walk(tree):
        if not isinstance(n, ast.ImportFrom):
            continue
        module = n.module if not n.level else \
            "sglang." + _imported_rel(rel, n).removesuffix(".py").replace("/", ".")
        if module:
            out.update({a.asname or a.name: f"{module}.{a.name}" for a in n.names})
    return out


def _own_functions(rel: str, tree: ast.Module) -> tuple[str, frozenset[str]]:
    """The file's module (dotted) and the functions its top level defines."""
    return ("sglang." + rel.removesuffix(".py").replace("/", "."),
            frozenset(f.name for f in tree.body
                      if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))))


def _helper_files(pkg: Path, trees: dict[str, ast.Module], registry: Registry,
                  version: str | None) -> dict[str, tuple[ast.Module, frozenset[str]]]:
    """The files of the package that the combine's files (``trees``) import a function from
    (``from sglang.srt.layers.dcp.comm import reduce_partials``) that calls a consumer record
    and is none itself: the combine moved into a helper there. Each with those functions,
    which alone are read of it (the rest of the file is the combine's library, not the
    model's use of it)."""
    by_last = _consumers_by_last_name(registry, version)
    out: dict[str, tuple[ast.Module, frozenset[str]]] = {}
    for rel, names in sorted(_imported_functions(pkg, trees, by_last).items()):
        try:
            tree = _parse(pkg, rel)
        except _Unparsable:
            continue
        own = _own_functions(rel, tree)
        imported = _imported_names(rel, tree)
        helpers = frozenset(f.name for f in tree.body
                            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and
                            f.name in names and next(_consumer_calls(f, imported, by_last, own),
                                                     None) is not None)
        if helpers:
            out[rel] = (tree, helpers)
    return out


def _imported_functions(pkg: Path, trees: dict[str, ast.Module],
                        by_last: dict[str, list[tuple[ConsumerRecord, str]]],
                        ) -> dict[str, set[str]]:
    """The other files of the package the files ``trees`` import names from, each with those
    names, the consumer records' own functions left out."""
    records = {f for fs in by_last.values() for _, f in fs}
    wanted: dict[str, set[str]] = {}
    for rel, tree in trees.items():
        for n in ast.walk(tree):
            target = _imported_rel(rel, n) if isinstance(n, ast.ImportFrom) else ""
            if not target or target in trees or not (pkg / target).is_file():
                continue
            dotted = "sglang." + target.removesuffix(".py").replace("/", ".")
            wanted.setdefault(target, set()).update(
                a.name for a in cast(ast.ImportFrom, n).names
                if f"{dotted}.{a.name}" not in records)
    return wanted


def _imported_rel(rel: str, node: ast.ImportFrom) -> str:
    """The package-relative file a ``from X import ...`` of the file ``rel`` reads (its
    module as a path; ``""`` where it is outside the package)."""
    if node.level:
        parts = rel.split("/")[:-node.level]
        dotted = "/".join([*parts, *(node.module or "").split(".")]).strip("/")
        return f"{dotted}.py"
    if node.module is None or not node.module.startswith("sglang."):
        return ""
    return node.module.removeprefix("sglang.").replace(".", "/") + ".py"


def _combines(m: _Module, modules: dict[str, _Module], registry: Registry,
              version: str | None) -> Iterator[Combine]:
    """The calls of the file to a consumer record of SGLang at ``version``, each with how it
    passes the base (a helper's parameter: as each call of the helper passes it, one
    combine per way)."""
    imported = _imported_names(m.rel, m.tree)
    by_last = _consumers_by_last_name(registry, version)
    own = _own_functions(m.rel, m.tree)
    roots = [m.tree] if m.only is None else \
        [f for f in m.tree.body
         if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name in m.only]
    for fn in (n for r in roots for n in ast.walk(r)):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for node, consumer in _consumer_calls(fn, imported, by_last, own):
            where = Location(f"sglang/{m.rel}", node.lineno)
            yield from dict.fromkeys(_ways_told(consumer, node, where, fn, m, modules, 0))


#: how many helpers deep a base parameter is followed to the calls that give it
_HELPER_DEPTH = 3


def _ways_told(consumer: ConsumerRecord, node: ast.Call, where: Location,
          fn: ast.FunctionDef | ast.AsyncFunctionDef, m: _Module, modules: dict[str, _Module],
          depth: int) -> list[Combine]:
    """How ``node`` (a call in ``fn`` of ``m`` that carries the base keyword) tells the
    combine at ``where`` its base: as written; an expression read where it is, the function
    run with the layer's name attribute set to each name; a parameter of ``fn``, as each
    call of ``fn`` passes it (one way per call: a helper the merge was moved into)."""
    combine = _combine(consumer, node, where, _bound_once(fn), m.functions(modules),
                       _NameArg(fn, m.tree, m.asked.name_attr))
    qualname = m.qualnames.get(id(fn))
    if combine.passes != "unknown" or qualname is None:
        return [combine]
    read = _read_in(combine, node, fn, qualname, m)
    if read.passes != "unknown" or depth >= _HELPER_DEPTH:
        return [read]
    kw = next((k.value for k in node.keywords if k.arg == combine.keyword), None)
    ways = _at_callers(consumer, combine.keyword, kw.id, where, fn, m, modules, depth) \
        if isinstance(kw, ast.Name) else None
    return ways or _from_users(combine, node, fn, m, modules) or [read]


def _from_users(combine: Combine, call: ast.Call, fn: ast.FunctionDef | ast.AsyncFunctionDef,
                m: _Module, modules: dict[str, _Module]) -> list[Combine] | None:
    """A combine in a helper whose callers are not read one by one (a method another class
    calls, a helper a table holds or ``**kwargs`` hands the base to): its keyword as each
    function that names the helper makes it, run with the layer's name attribute set to each
    name (the interpreter following the helper's calls from there): one way per such
    function. None where one of them does not read it, or no function names it."""
    kw = next((k.value for k in call.keywords if k.arg == combine.keyword), None)
    spread = [k.value for k in call.keywords if k.arg is None]
    if kw is None and not spread:
        return None
    ways: list[Combine] = []
    held = _held_as(fn, m)  # (the helper's own module's tables, imported by the others)
    names = {rel: _held_as(fn, um) | held for rel, um in modules.items()}
    known = {um.asked.path for um in modules.values()}
    if any(other not in known for name in set().union(*names.values())
           for other in m.asked.model.naming(name)):
        return None  # a file this does not read names it: a use not seen
    for rel, user_module in modules.items():
        for qualname, user in _users(fn, user_module, names[rel]):
            # (named on another object: a call the run may not follow)
            way = _way_of(combine, kw, spread, user_module, qualname, user, m.asked.path) \
                if qualname is not None else None
            if way is None:
                return None
            ways.append(way)
    return ways or None


def _way_of(combine: Combine, kw: ast.expr | None, spread: list[ast.expr], module: _Module,
            qualname: str, user: ast.FunctionDef | ast.AsyncFunctionDef, path: str,
            ) -> Combine | None:
    """How the function ``user`` tells the combine (its keyword ``kw``, or what its
    ``**mapping``s ``spread`` give it, in the file ``path``), run per registered name; None
    where no name's answer is read."""
    asked = module.asked
    read = asked.answers_at(qualname, kw, keyword_path=path) if kw is not None else \
        _spread_answers([asked.answers_at(qualname, k, combine.keyword, path) for k in spread])
    if read is None or all(v == "?" for _, v in read[0]):
        return None
    answers, default = read
    at = Location(f"sglang/{module.rel}", user.lineno)
    return replace(combine, passes="name", function=qualname, function_at=at,
                   answers=answers, default=default, via=at)


def _held_as(fn: ast.FunctionDef | ast.AsyncFunctionDef, module: _Module) -> set[str]:
    """The helper's name, and the module's tables that hold it (``MERGES = {"x": helper}``)."""
    return {fn.name} | {t.id for st in module.tree.body if isinstance(st, ast.Assign)
                        and any(_name_of(n) == fn.name for n in ast.walk(st.value))
                        for t in st.targets if isinstance(t, ast.Name)}


def _named_outside_functions(tree: ast.Module, names: set[str]) -> bool:
    """Whether code outside the module's functions names one of ``names`` otherwise than in
    the module-level table that binds it."""
    tables = [st for st in tree.body if isinstance(st, ast.Assign) and any(
        isinstance(t, ast.Name) and t.id in names for t in st.targets)]
    inside = {id(n) for f in ast.walk(tree)
              if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
              for n in ast.walk(f)} | {id(n) for st in tables for n in ast.walk(st)}
    return any(_name_of(n) in names and id(n) not in inside for n in ast.walk(tree))


def _users(fn: ast.FunctionDef | ast.AsyncFunctionDef, module: _Module, names: set[str],
           ) -> Iterator[tuple[str | None, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """The functions of ``module`` that name the helper ``fn`` (or a table holding it, of
    ``names``), with their qualified names; None for one that names it as an attribute of
    another object than ``self``/``cls``, and for the module itself where code outside its
    functions names it otherwise than in such a table (``merge = staticmethod(helper)`` in a
    class)."""
    if _named_outside_functions(module.tree, names):
        yield None, fn
        return
    for user in ast.walk(module.tree):
        if not isinstance(user, (ast.FunctionDef, ast.AsyncFunctionDef)) or user is fn or \
                (qualname := module.qualnames.get(id(user))) is None:
            continue
        refs = [n for n in ast.walk(user) if _name_of(n) in names]
        if any(isinstance(n, ast.Attribute) and not (
                isinstance(n.value, ast.Name) and n.value.id in ("self", "cls")) for n in refs):
            yield None, user
        elif refs:
            yield qualname, user


def _name_of(n: ast.AST) -> str | None:
    """The name a reference names: a ``Name``'s, an attribute's last."""
    return n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else None


def _at_callers(consumer: ConsumerRecord, keyword: str, param: str, where: Location,
                fn: ast.FunctionDef | ast.AsyncFunctionDef, m: _Module,
                modules: dict[str, _Module], depth: int) -> list[Combine] | None:
    """A parameter of ``fn`` that tells the combine its base, as each call of ``fn`` in the
    combine's files gives it (by keyword or position; left out: ``fn``'s default for it),
    read in the caller as a base written there is. None where the parameter is none of
    ``fn``'s or ``fn`` rebinds it, a file names ``fn`` other than in such a call, or a call
    spreads ``*args``/``**kwargs``."""
    from attn_contracts.lint.calls import params_of  # the lint's binding, read when asked

    params = params_of(fn)
    if param not in params.names or _rebinds(fn, param):
        return None
    method = m.qualnames.get(id(fn), "").count(".") == 1
    past_self = method and not params.static
    owner = m.qualnames.get(id(fn), "").rpartition(".")[0]
    ways: list[Combine] = []
    for caller_module in modules.values():
        calls = _direct_calls(fn.name, method, caller_module.tree, caller_module.qualnames)
        if calls is None or _renamed(fn.name, caller_module.tree):
            return None
        for caller, call, by in calls:
            calls_it = _calls_helper(fn, owner, m, caller, caller_module, modules)
            if calls_it is None:
                return None  # a call that may or may not reach it: what it passes is not read
            if not calls_it:
                continue  # another function of that name
            told = _told_by(call, keyword, _argument_for(
                call, past_self, params.names[:params.positional], param),
                params.defaults.get(param))
            if told is None:
                return None
            node, given = told
            # given: read in the caller; left out: the helper's default, read where it is
            # defined
            read = _ways_told(consumer, node, where, cast(ast.FunctionDef, by), caller_module,
                              modules, depth + 1) if given else \
                _ways_told(consumer, node, where, fn, m, modules, _HELPER_DEPTH)
            via = Location(f"sglang/{caller_module.rel}", call.lineno)
            ways += [replace(w, via=via) for w in read]
    return ways or None


def _calls_helper(fn: ast.FunctionDef | ast.AsyncFunctionDef, owner: str, m: _Module,
                  caller: str, caller_module: _Module, modules: dict[str, _Module],
                  ) -> bool | None:
    """Whether a call of ``fn``'s name made in ``caller`` (of ``caller_module``) calls
    ``fn`` (a method of class ``owner``, or a function of ``m``): a function called by the
    name the caller's module defines or imports it under; a method called as ``self.name``
    in its own class. False where the name is another function (the module's own, one
    imported from elsewhere, a method the caller's class defines itself); None where it
    may or may not be ``fn`` (a method called from another class, which may inherit it)."""
    if not owner:
        return caller_module.functions(modules).get(fn.name, (None, None))[0] is fn
    klass = caller.rpartition(".")[0]
    if caller_module is m and klass == owner:
        return True
    return False if f"{klass}.{fn.name}" in caller_module.qualnames.values() else None


def _told_by(call: ast.Call, keyword: str, arg: ast.expr | None, default: ast.expr | None,
             ) -> tuple[ast.Call, bool] | None:
    """The call of a helper as a call that gives the combine's ``keyword`` what the helper's
    parameter holds (the argument, or the default where it is left out), and whether the
    argument was given; None where a ``*args``/``**kwargs`` may give it, or it is left out
    with no default (Python raises)."""
    if any(isinstance(a, ast.Starred) for a in call.args) or \
            any(k.arg is None for k in call.keywords):
        return None
    value = arg if arg is not None else default
    if value is None:
        return None
    return ast.copy_location(ast.Call(func=call.func, args=[], keywords=[
        ast.keyword(arg=keyword, value=value)]), call), arg is not None


def _renamed(name: str, tree: ast.Module) -> bool:
    """Whether the module imports ``name`` under another name (its calls are not found by
    the name)."""
    return any(a.name == name and a.asname not in (None, name)
               for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names)


#: a dict's methods that change it in place
_DICT_CHANGES = frozenset({"update", "setdefault", "pop", "popitem", "clear", "__setitem__",
                           "__delitem__"})


def _bound_once(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, ast.expr]:
    """The names a function binds once and never changes in place, with their one value (one
    bound on several paths, a loop, an ``else``, or a dict filled after its literal,
    ``d[k] = v``, ``d.update(...)``, ``d += ...``: the interpreter reads which value reaches a
    call)."""
    stores = [(t.id, st.value) for st in ast.walk(fn) if isinstance(st, ast.Assign)
              for t in st.targets if isinstance(t, ast.Name)]
    once = Counter(n for n, _ in stores)
    changed = {name for n in ast.walk(fn) if (name := _changed_in_place(n)) is not None}
    return {n: v for n, v in stores if once[n] == 1 and n not in changed}


def _changed_in_place(node: ast.AST) -> str | None:
    """The name ``node`` changes without rebinding it: ``d[k] = v``, ``del d[k]``,
    ``d.update(...)`` and the other dict methods that change it, ``d += ...``."""
    target: ast.expr | None = None
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, (ast.Store, ast.Del)):
        target = node.value
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
            node.func.attr in _DICT_CHANGES:
        target = node.func.value
    elif isinstance(node, ast.AugAssign):
        target = node.target
    return target.id if isinstance(target, ast.Name) else None


def _qualnames(tree: ast.Module) -> dict[int, str]:
    """The module's top-level functions and its classes' methods, by node: what the program
    model can run (a nested function is not asked)."""
    out = {id(n): n.name for n in tree.body if isinstance(n, (ast.FunctionDef,
                                                             ast.AsyncFunctionDef))}
    out.update({id(m): f"{c.name}.{m.name}" for c in tree.body if isinstance(c, ast.ClassDef)
                for m in c.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))})
    return out


def _read_in(combine: Combine, call: ast.Call, fn: ast.FunctionDef | ast.AsyncFunctionDef,
             qualname: str, m: _Module) -> Combine:
    """A base keyword given by an expression (a loop over names, a set, a cached attribute):
    its value read where the call is, in the function that makes it, run with the layer's
    name attribute set to each registered name."""
    kw = next((k.value for k in call.keywords if k.arg == combine.keyword), None)
    if kw is not None:
        read = m.asked.answers_at(qualname, kw)
    else:  # carried by ``**mapping``s: what each gives the keyword, as the interpreter reads it
        read = _spread_answers([m.asked.answers_at(qualname, k.value, combine.keyword)
                                for k in call.keywords if k.arg is None])
    if read is None or all(v == "?" for _, v in read[0]):
        return combine
    answers, default = read
    return replace(combine, passes="name", function=qualname,
                   function_at=Location(f"sglang/{m.rel}", fn.lineno), answers=answers,
                   default=default)


def _direct_calls(name: str, method: bool, tree: ast.Module, qualnames: dict[int, str],
                  ) -> list[tuple[str, ast.Call, ast.FunctionDef | ast.AsyncFunctionDef]] | None:
    """Each call of function ``name`` (a method: ``self.name(...)``) in the module's functions
    and methods, with its caller's qualified name and definition; None where the module
    names it any other way."""
    calls = [(qualnames[id(caller)], cast(ast.Call, n), caller) for caller in ast.walk(tree)
             if isinstance(caller, (ast.FunctionDef, ast.AsyncFunctionDef)) and
             id(caller) in qualnames for n in ast.walk(caller) if _calls(n, name, method)]
    read = {id(call.func) for _, call, _ in calls}
    if any(id(n) not in read for n in ast.walk(tree)
           if (isinstance(n, ast.Attribute) and n.attr == name) or
           (isinstance(n, ast.Name) and n.id == name)):
        return None
    return calls


def _rebinds(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """Whether ``fn`` binds ``name`` again (an assignment, ``del``, ``global``/``nonlocal``):
    what a caller passes is then not what it holds everywhere."""
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and node.id == name and \
                isinstance(node.ctx, (ast.Store, ast.Del)):
            return True
        if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return True
    return False


def _calls(node: ast.AST, name: str, method: bool) -> bool:
    """Whether ``node`` calls function ``name`` (a method: as ``self.name(...)``)."""
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if method:
        return isinstance(func, ast.Attribute) and func.attr == name and \
            isinstance(func.value, ast.Name) and func.value.id == "self"
    return isinstance(func, ast.Name) and func.id == name


def _argument_for(node: ast.Call, method: bool, params: list[str],
                  param: str) -> ast.expr | None:
    """The argument a call of a function binds to ``param``: by keyword, else by position
    (past ``self`` for a method); None where it binds none, or spreads ``*args``/
    ``**kwargs``."""
    if method:
        params = params[1:]
    if any(isinstance(a, ast.Starred) for a in node.args) or \
            any(k.arg is None for k in node.keywords):
        return None
    given = next((k.value for k in node.keywords if k.arg == param), None)
    if given is not None:
        return given
    index = params.index(param) if param in params else -1
    return node.args[index] if 0 <= index < len(node.args) else None


#: per registered name, a question's answer, and the answer for a name no backend has
_Answers = tuple[tuple[tuple[str, str], ...], str]


def _spread_answers(reads: list[_Answers | None]) -> _Answers | None:
    """Per name, what a call's ``**mapping``s give the keyword together: the one that gives it
    (Python refuses a keyword given twice), :data:`_OMITTED` where none does, ``"?"`` where
    one is not read; None where there is no mapping, or one was not asked (None)."""
    def merged(answers: list[str]) -> str:
        if "?" in answers:
            return "?"
        given = [a for a in answers if a != _OMITTED]
        return given[0] if len(given) == 1 else _OMITTED if not given else "?"
    done = [r for r in reads if r is not None]
    if not done or len(done) != len(reads):
        return None
    names = [n for n, _ in done[0][0]]
    per = [dict(r[0]) for r in done]
    return (tuple((n, merged([p[n] for p in per])) for n in names),
            merged([r[1] for r in done]))


def _consumer_calls(fn: ast.FunctionDef | ast.AsyncFunctionDef, imported: dict[str, str],
                    by_last: dict[str, list[tuple[ConsumerRecord, str]]],
                    own: tuple[str, frozenset[str]] = ("", frozenset()),
                    ) -> Iterator[tuple[ast.Call, ConsumerRecord]]:
    """The calls in ``fn`` of a name imported from a consumer record's package, or (``own``:
    the file's module and the functions its top level defines) of the record's function
    defined in the file itself, each with the first record it matches."""
    for node in ast.walk(fn):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
            continue
        full = imported.get(node.func.id, "")
        for consumer, function in by_last.get(node.func.id, []):
            module = function.rpartition(".")[0]
            if not full and node.func.id in own[1] and module == own[0]:
                yield node, consumer  # the record's own function, called in its module
                break
            if not full or not module.startswith(full.rpartition(".")[0]):
                continue  # the name is not imported from the record's package
            yield node, consumer
            break


def _consumers_by_last_name(registry: Registry, version: str | None,
                            ) -> dict[str, list[tuple[ConsumerRecord, str]]]:
    """SGLang's consumer records at ``version`` (any, for an unknown release) with each call
    they name, by the call's last name."""
    by_last: dict[str, list[tuple[ConsumerRecord, str]]] = {}
    for c in registry.consumers():
        if c.library != "sglang" or (version and c.library_version and
                                     not in_range(c.library_version, version, unparsed=True)):
            continue
        for call in c.calls:
            by_last.setdefault(call.function.rsplit(".", 1)[-1], []).append((c, call.function))
    return by_last


#: a ``**mapping`` whose keys are not read: whether it carries the keyword is not known
_UNREAD = object()


def _spread_keyword(call: ast.Call, keyword: str, assigned: dict[str, ast.expr],
                    ) -> tuple[ast.expr, ast.expr] | object | None:
    """The ``**mapping`` of the call that gives ``keyword`` (``**{"k": v}``, ``**dict(k=v)``,
    or a name the function binds once to one of them), with the value it gives; None where
    every mapping's keys are known and none is the keyword (it is left out); :data:`_UNREAD`
    where a mapping's keys are not known."""
    for k in call.keywords:
        if k.arg is not None:
            continue
        mapping = k.value
        if isinstance(mapping, ast.Name) and mapping.id in assigned:
            mapping = assigned[mapping.id]
        if isinstance(mapping, ast.Dict) and all(
                isinstance(key, ast.Constant) and isinstance(key.value, str)
                for key in mapping.keys):
            pairs = {cast(ast.Constant, key).value: v for key, v in zip(mapping.keys,
                                                                       mapping.values,
                                                                       strict=True)}
        elif isinstance(mapping, ast.Call) and isinstance(mapping.func, ast.Name) and \
                mapping.func.id == "dict" and not mapping.args and \
                all(kw.arg is not None for kw in mapping.keywords):
            pairs = {kw.arg: kw.value for kw in mapping.keywords if kw.arg is not None}
        else:
            return _UNREAD
        if keyword in pairs:
            return k.value, pairs[keyword]
    return None


def _combine(consumer: ConsumerRecord, call: ast.Call, where: Location,
             assigned: dict[str, ast.expr],
             functions: dict[str, tuple[ast.FunctionDef, _Module]],
             names: _NameArg) -> Combine:
    base = consumer.base
    if isinstance(base, FixedBase) or not isinstance(base, KeywordBase):
        return Combine(consumer.name, where, "", "omitted")
    kw = next((k.value for k in call.keywords if k.arg == base.keyword), None)
    if kw is None:
        spread = _spread_keyword(call, base.keyword, assigned)
        if spread is _UNREAD:
            return Combine(consumer.name, where, base.keyword, "unknown")
        if spread is not None:
            _, kw = cast(tuple[ast.expr, ast.expr], spread)
    if kw is None:
        return Combine(consumer.name, where, base.keyword, "omitted")
    # reported at the call's line, whichever of its lines the keyword (or the ``**mapping``
    # that carries it) is on, as the lint reports a base written inside the call
    if isinstance(kw, ast.Name) and kw.id in assigned:
        kw = assigned[kw.id]
    if isinstance(kw, ast.Constant):
        return Combine(consumer.name, where, base.keyword, "literal", literal=repr(kw.value))
    if isinstance(kw, ast.Call) and isinstance(kw.func, ast.Name) and len(kw.args) == 1 and \
            kw.func.id in functions and names.is_name(kw.args[0]):
        fn, defined = functions[kw.func.id]
        answers, default = defined.asked.answers(fn.name)
        return Combine(consumer.name, where, base.keyword, "name", function=fn.name,
                       function_at=Location(f"sglang/{defined.rel}", fn.lineno),
                       answers=answers, default=default)
    return Combine(consumer.name, where, base.keyword, "unknown")


@dataclass(frozen=True)
class _NameArg:
    """Whether a name function's argument, in the function ``fn`` of ``tree`` that makes the
    combine call, is the layer's name attribute (``self.current_attention_backend``): only
    then is the function's answer for a backend's name what the call passes for that backend.
    A parameter of a module-level ``fn`` is, where every call of ``fn`` in the module gives it
    the name attribute. Any other argument (an attribute set on some batches only) is read
    where the call is, as the program runs it."""

    fn: ast.FunctionDef | ast.AsyncFunctionDef
    tree: ast.Module
    name_attr: str | None

    def is_name(self, arg: ast.expr) -> bool:
        if self.name_attr is None:
            return False
        if self._attr(arg):
            return True
        params = [a.arg for a in (*self.fn.args.posonlyargs, *self.fn.args.args)]
        if not isinstance(arg, ast.Name) or arg.id not in params or \
                self.fn not in self.tree.body or _rebound(self.fn, arg.id):
            return False
        at = params.index(arg.id)
        given = [c.args[at] if at < len(c.args) else next(
                     (k.value for k in c.keywords if k.arg == arg.id), None)
                 for c in ast.walk(self.tree) if isinstance(c, ast.Call) and
                 isinstance(c.func, ast.Name) and c.func.id == self.fn.name]
        return bool(given) and all(g is not None and self._attr(g) for g in given)

    def _attr(self, arg: ast.expr) -> bool:
        return isinstance(arg, ast.Attribute) and arg.attr == self.name_attr and \
            isinstance(arg.value, ast.Name) and arg.value.id == "self"


def _rebound(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """Whether a function binds one of its parameters again in its body."""
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
               for n in ast.walk(fn))


# --- the report ------------------------------------------------------------------------------------
def report(backend: str | None = None, *, root: str | Path | None = None) -> list[SglangReport]:
    """One row per registered SGLang attention backend (or the one named). A source that does
    not parse is one ``AC000`` (on the first row) and the report goes on without what it would
    have said."""
    d = derive(root)
    if not d.backends:
        row = SglangReport("(registry)", d.registry_at, findings=list(d.unparsed),
                           note="the registry does not parse: no backend is known"
                           if d.unparsed else "the registry names no backend")
        return [row]
    if backend is not None and backend not in d.backends:
        raise ValueError(f"unknown SGLang backend {backend!r}; known: "
                         f"{', '.join(sorted(d.backends))}")
    registry = Registry()
    rows: list[SglangReport] = []
    for name, b in d.backends.items():
        if backend is not None and name != backend:
            continue
        row = _row(b, d, registry)
        if not rows:  # said once, on the first row
            row.findings[:0] = [*d.unparsed, *(Finding(
                Code.AC013, f"sglang.{name}", n, escalation="mapping-gap", field="sglang",
                found=d.version or "?") for n in d.notes)]
        rows.append(row)
    return rows


def _row(b: Backend, d: Derived, registry: Registry) -> SglangReport:
    subject = f"sglang.{b.name}"
    classes = [x for x in b.built if x.cls]
    mla = [x for x in classes if x.mla is not False]
    impl = ", ".join(dict.fromkeys(x.cls.rsplit(".", 1)[-1] for x in mla or classes)) or "-"
    row = SglangReport(b.name, impl)
    if not classes:
        row.note = "; ".join(dict.fromkeys(x.why for x in b.built)) or "the factory returns " \
            "no class"
    for findings in b.lint.values():
        row.findings += [f for f in findings if f not in row.findings]
    # (a combine a helper makes is one per way its callers tell it the base: several a place)
    values = {c: c.value_for(b.name) for c in d.combines}
    row.declared = {"declared_at": ", ".join(dict.fromkeys(
        str(c.function_at or c.where) for c in d.combines)) or "no MLA DCP combine in this release"}
    told_by: dict[str, list[str]] = {}
    for c in d.combines:
        literal, _ = values[c]
        if c.keyword:
            told_by.setdefault(f"{c.keyword} ({c.consumer.rsplit('.', 1)[-1]})", []).append(
                "(default)" if literal is None else literal)
    row.declared.update({k: " | ".join(dict.fromkeys(v)) for k, v in told_by.items()})
    if not d.combines:
        row.note = row.note or f"no MLA DCP combine in SGLang {d.version or '(version unknown)'}"
        return row
    if not mla:
        if classes:
            row.note = row.note or "no MLA class: its LSE does not reach the MLA DCP combine"
        return row
    for x in mla:
        kernels = b.kernels.get(x.cls, ())
        row.records += [k.record for k in kernels if k.record not in row.records]
        if not b.returns_lse.get(x.cls):
            row.note = row.note or (f"{x.cls.rsplit('.', 1)[-1]}'s decode returns no LSE under "
                                    "DCP: not a DCP backend")
            continue
        for c in d.combines:
            consumer = registry.consumer(c.consumer)
            literal, named = values[c]
            told = _told(consumer, literal)
            row.edges.append(f"{c.consumer} [{c.keyword or 'base'}="
                             f"{'(default)' if literal is None else literal} → base {told}, "
                             f"layout not read] ({c.where})")
            if literal == "?":
                # an expression not read is not an error by itself (issue 37's precision
                # policy): the warning names what was not read
                row.findings.append(Finding(
                    Code.AC028, subject, f"the base {c.where} passes for {b.name} cannot be "
                    f"read ({c.function or 'an expression'}): nothing confirms it",
                    location=c.where,
                    hint="pass the base as a literal, or a set test of the backend name"))
                continue
            if not kernels:
                how = (f"{c.function}({b.name!r}) = {literal} ({c.function_at})" if c.function
                       else f"the {'default' if literal is None else 'literal'} of {c.consumer}")
                if named:
                    row.findings.append(Finding(
                        Code.AC002, subject, f"{x.cls.rsplit('.', 1)[-1]}'s decode LSE under DCP "
                        f"comes from a kernel no record describes; {how} names it, so SGLang "
                        "says its base; not confirmed", escalation="engine-names-base",
                        location=c.where))
                else:
                    row.findings.append(Finding(
                        Code.AC002, subject, f"{x.cls.rsplit('.', 1)[-1]}'s decode LSE under DCP "
                        f"comes from a kernel no record describes, and {c.consumer} at {c.where} "
                        f"combines it as base {told} by default ({how}): nothing confirms it",
                        location=c.where,
                        hint=f"name {b.name!r} in {c.function or 'the base keyword'} with its "
                        "kernel's base, or add a record of the kernel it calls"))
                continue
            for k in kernels:
                if k.unread:
                    continue
                kernel = _as_received(registry.get(k.record), consumer, k.base)
                for f in check_edge(kernel, consumer, keyword_value=literal):
                    # the base: an error; the rest (empty rows, dtype, limits) warnings: this
                    # does not read what the call site does about them (SGLang zeroes
                    # trtllm-gen's empty rows after the kernel, a fix-up AC030 cannot see)
                    escalation = None if f.code is Code.AC016 or \
                        RULES[f.code].severity is Severity.WARNING else "call-site-unread"
                    # (a way a helper's caller tells: where, unless a name function, which
                    # says where it is, tells it; the finding then reads as it did inline)
                    if c.function:
                        said = f"{c.function}({b.name!r}) = {literal}, {c.function_at}"
                    else:
                        said = f"{c.keyword or 'base'}=" \
                            f"{'(default)' if literal is None else literal}" + (
                                f", given by the call at {c.via}" if c.via else "")
                    chosen = " (the call leaves the base to the library's dispatch, which " \
                        "may pick this kernel: pin the base at the call)" if k.dispatch else ""
                    row.findings.append(Finding(
                        f.code, f.subject, f"{f.message}{chosen} ({said}; the combine at "
                        f"{c.where}, the kernel at {k.where})", escalation=escalation, hint=f.hint,
                        field=f.field, found=f.found, allowed=f.allowed, location=c.where))
    return row


def _as_received(record: CapabilityRecord, consumer: ConsumerRecord,
                 base: str | None) -> CapabilityRecord:
    """The kernel's record as the combine receives it: in the base the call pins (after a
    conversion such as ``lse * log2(e)``, the converted one), with the layout the combine
    reads (the MLA layer reshapes the decode LSE, ``lse.contiguous()`` and views, before the
    call; that is not read here)."""
    spec = record.lse
    if not isinstance(spec, LseSpec):
        return record
    update: dict[str, object] = {"layout": consumer.lse.layouts[0], "q_len_axis": False}
    if base in ("e", "2"):
        update["base"] = base
    lse = spec.model_copy(update=update)
    return record.model_copy(update={"lse": lse})


def _told(consumer: ConsumerRecord, literal: str | None) -> str:
    base = consumer.base
    if isinstance(base, FixedBase):
        return base.base
    if isinstance(base, KeywordBase):
        key = base.default if literal is None else literal
        return dict(base.values).get(key or "", "?")
    return "?"
