"""vLLM's backend mapping derived from its own sources, for any release.

From a source tree (the folder holding the ``vllm`` package: an installed site-packages or an
unpacked wheel) the lint program model (:func:`attn_contracts.lint.lint_model`) is built once, and
per ``AttentionBackendEnum`` member (read from the enum's class body: its values are class paths):
the backend class, the impl class ``get_impl_cls()`` returns, the impl's LSE declaration (own or
inherited, and where), the kernels its methods call (resolved to catalog records, with the base
each returns there) and the combines its LSE reaches with the base each is told
(:meth:`~attn_contracts.lint.model.ProgramModel.facts`). What the code does not say in a form
this can read is data with citations, ``backends/catalog/engines/vllm.toml`` (which file holds
the enum, the declaration attribute names per release range, the branch a call takes under DCP).

Nothing of vLLM is imported or run here. The layout of an LSE on an edge is not read (the edge's
label says so); its base, the kernels' bases and the empty-row handling are.
"""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from attn_contracts.findings import Finding
from attn_contracts.findings import Location
from attn_contracts.integrations.engine_data import DcpCallEntry
from attn_contracts.integrations.engine_data import EngineData
from attn_contracts.integrations.engine_data import VllmData
from attn_contracts.integrations.engine_data import engine_data as _engine_data
from attn_contracts.versions import package_version

if TYPE_CHECKING:  # the program model's query API, read without importing the lint at start
    from attn_contracts.lint.classes import ClassInfo
    from attn_contracts.lint.inferred import Kernel
    from attn_contracts.lint.inferred import Use
    from attn_contracts.lint.model import ProgramModel
    from attn_contracts.lint.program import Program

__all__ = ["Derived", "EngineData", "SourceError", "derive", "engine_data", "source_version"]

_ENGINE_FILE = "vllm.toml"


class SourceError(ValueError):
    """A source tree that cannot be read as vLLM (the message names the folder)."""


def engine_data() -> VllmData:
    """The hand-kept vLLM facts (read once)."""
    return _engine_data("vllm")


# --- the tree --------------------------------------------------------------------------------------
def _package(root: Path) -> Path:
    """``root/vllm`` (``root`` may also be the package itself)."""
    if (root / "vllm" / "__init__.py").is_file():
        return root / "vllm"
    if root.name == "vllm" and (root / "__init__.py").is_file():
        return root
    raise SourceError(f"{root}: no vllm package there (expected {root / 'vllm' / '__init__.py'}); "
                      "pass the folder that holds the vllm package, e.g. an unpacked wheel or "
                      "site-packages")


def source_version(root: Path) -> str | None:
    """The release of the tree (its ``vllm*.dist-info``, else its version module)."""
    return package_version(_package(root))


# --- the derived facts -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Attr:
    """One declaration attribute of an impl class, as its hierarchy sets it."""

    value: object  # the literal's value (None where it is no literal, or not set)
    where: Location  # ``vllm/...py:LINE`` of the assignment
    owner: str  # the class that assigns it
    inherited: bool


@dataclass(frozen=True)
class EdgeFacts:
    """One combine the impl's LSE reaches: who feeds it, with which base."""

    consumer: str  # the consumer record
    function: str  # the dotted function it calls
    where: Location  # the consumer call, ``vllm/...py:LINE``
    keyword: str | None  # the literal the call passes for the base ("False"), None: omitted
    from_attr: str | None  # the impl's own attribute is the keyword
    row_mask: bool
    #: the producer records whose LSE reaches it here, with the base it has there (after a
    #: conversion such as ``× ln 2``, the converted one)
    producers: tuple[tuple[str, str | None], ...]
    #: sources no record describes (a merged LSE), with their base and what they are
    unrecorded: tuple[tuple[str | None, str], ...] = ()
    #: the call passes ``not <from_attr>``: the other base than the impl declares
    negated: bool = False


@dataclass(frozen=True)
class MemberFacts:
    """One ``AttentionBackendEnum`` member, derived."""

    name: str
    backend: str  # the class path the enum gives ("" for a placeholder member)
    impl: str  # the impl class's dotted path ("" when not found, then ``why``)
    why: str = ""
    attrs: dict[str, Attr] = field(default_factory=dict)
    mro: tuple[tuple[str, str], ...] = ()  # (module, class) of the impl's MRO, nearest first
    records: tuple[str, ...] = ()
    #: per record, the bases its calls pin (after conversions); () where none is pinned (left
    #: to the library's dispatch, or chosen by an expression)
    observed: tuple[tuple[str, tuple[str, ...]], ...] = ()
    kernels_at: str = ""  # where the kernels are called
    call: tuple[tuple[str, object], ...] | None = None
    call_source: str = ""
    edges: tuple[EdgeFacts, ...] = ()


@dataclass
class Derived:
    """The mapping of one source tree."""

    root: Path
    version: str | None
    returns_attrs: tuple[str, ...]
    base_attrs: tuple[str, ...]
    members: dict[str, MemberFacts]
    readers: tuple[str, ...]
    notes: list[str]
    lint: list[Finding]
    #: lint's findings located at an edge of a member (by member), for edges no record covers
    edge_lint: dict[str, list[Finding]] = field(default_factory=dict)

    @property
    def unverified(self) -> tuple[str, ...]:
        """The tree's releases the catalog was not verified on (lint's ``AC034`` note): read
        with the nearest verified facts, said once, never an error."""
        return tuple(dict.fromkeys(f.message for f in self.lint if f.code.value == "AC034"))


def _rel(path: str) -> str:
    parts = path.replace("\\", "/").rsplit("/vllm/", 1)
    return "vllm/" + parts[1] if len(parts) == 2 else path


def _short(where: Location) -> Location:
    """``/x/vllm/a.py:12:5`` → ``vllm/a.py:12``."""
    return Location(_rel(where.path), where.line)


def _enum_members(tree: ast.Module, name: str) -> list[tuple[str, str]]:
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == name:
            out = []
            for st in node.body:
                if isinstance(st, ast.Assign) and len(st.targets) == 1 and \
                        isinstance(st.targets[0], ast.Name) and isinstance(st.value, ast.Constant) \
                        and isinstance(st.value.value, str):
                    out.append((st.targets[0].id, st.value.value))
            return out
    return []


#: what the startup gate reads of the vLLM being started: the attention backends, their ops
#: (the DCP combines, the merges) and the attention layers that call them. The whole package
#: (``engine vllm``) is 1.3 million lines and ~25 CPU s; these folders are ~75,000 lines and
#: ~3 CPU s, and hold every class and call the mapping is made of (the models' own attention
#: code is left to ``engine vllm`` and ``lint``). A folder a release lacks is skipped.
STARTUP_SCOPE = ("vllm/v1/attention", "vllm/model_executor/layers/attention", "vllm/attention")


def derive(root: str | Path, *, version: str | None = None,
           scope: tuple[str, ...] | None = None, cache: bool = False) -> Derived:
    """The mapping of the vLLM tree at ``root`` (the folder holding ``vllm``, or the ``vllm``
    package folder itself); ``version``:
    the release, when the tree does not say (read from its dist-info or ``_version.py``);
    ``scope``: the folders below ``root`` the program model reads (default: the whole
    package; :data:`STARTUP_SCOPE` at startup). Cached per folder, version and scope in the
    process, and with ``cache`` on disk too, keyed by the hashes of the files it reads
    (:mod:`~attn_contracts.integrations.vllm_cache`). A folder without vLLM is
    :class:`SourceError`."""
    path = _package(Path(root).resolve()).parent  # the package folder itself names its parent
    return _derive(path, version or source_version(path), scope, cache)


@lru_cache(maxsize=4)
def _derive(root: Path, version: str | None, scope: tuple[str, ...] | None = None,
            cache: bool = False) -> Derived:
    if cache:
        from attn_contracts.integrations import vllm_cache

        return vllm_cache.cached(root, version, scope,
                                 lambda: _derive_now(root, version, scope), Derived)
    return _derive_now(root, version, scope)


def _derive_now(root: Path, version: str | None, scope: tuple[str, ...] | None) -> Derived:
    from attn_contracts.collector import paused

    with paused():  # the member facts walk the model the lint built: as costly
        return _derive_paused(root, version, scope)


def _derive_paused(root: Path, version: str | None, scope: tuple[str, ...] | None) -> Derived:
    from attn_contracts.lint import LintConfig
    from attn_contracts.lint import lint_model

    data = engine_data()
    notes: list[str] = []
    enum, note = data.pick(data.enum, version)
    if note:
        notes.append(note)
    decl, note = data.pick(data.declaration, version)
    if note and note not in notes:
        notes.append(note)
    returns, bases, capability = decl.returns, decl.base, decl.capability
    enum_file = root / enum.file
    try:
        enum_tree = ast.parse(enum_file.read_text(encoding="utf-8"), str(enum_file))
    except (OSError, SyntaxError, ValueError) as err:
        raise SourceError(f"{root}: cannot read vLLM's {enum.cls} at {enum.file} ({err}); "
                          f"{_ENGINE_FILE} says it is there for vLLM {enum.versions}") from None
    members = _enum_members(enum_tree, enum.cls)
    if not members:
        raise SourceError(f"{root}: {enum.file} defines no {enum.cls} with class-path members "
                          f"({_ENGINE_FILE} says it does for vLLM {enum.versions})")
    cfg = LintConfig(returns_attrs=returns, base_attrs=bases or ("lse_base_on_e",),
                     capability_attrs=capability)
    paths = [root / p for p in scope if (root / p).is_dir()] if scope else []
    findings, model = lint_model(paths or [root / "vllm"], cfg)
    calls = {e.cls: e for e in data.all_for(data.dcp_call, version)}
    out: dict[str, MemberFacts] = {}
    edge_lint: dict[str, list[Finding]] = {}
    readers: dict[str, None] = {}
    try:
        for name, value in members:
            out[name] = _member(model, name, value, returns, bases, calls, findings, edge_lint,
                                readers)
    finally:
        _CALLS.clear()  # the index holds the model: let it go with the derivation
    return Derived(root, version, returns, bases, out, tuple(readers), notes, findings, edge_lint)


def _literal(node: ast.expr) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _member(model: ProgramModel, name: str, value: str, returns: tuple[str, ...], bases: tuple[str, ...],
            calls: dict[str, DcpCallEntry], lint: list[Finding], edge_lint: dict[str, list[Finding]],
            readers: dict[str, None]) -> MemberFacts:
    if not value or "." not in value:
        return MemberFacts(name, value, "", why="a placeholder member (no class path)")
    module, _, cls_name = value.rpartition(".")
    backend = model.find_class(module, cls_name)
    if backend is None:
        return MemberFacts(name, value, "", why=f"{value} is not in the sources")
    program = model.program
    impl = _impl_class(program, backend)
    if isinstance(impl, str):
        return MemberFacts(name, value, "", why=impl)
    h = program.hierarchy
    mro = program.mro(impl)
    attrs: dict[str, Attr] = {}
    for attr in (*returns, *bases):
        owner = h.definer(impl, attr)
        if owner is None:
            continue
        node, line, _ = owner.attrs[attr]
        attrs[attr] = Attr(_literal(node), Location(_rel(owner.path), line), owner.name,
                           owner is not impl)
    facts = model.facts(impl)
    # by the place's text, as when places were text (line 10 before line 9): the stored
    # mapping's bytes keep this order
    kernels = sorted(facts.kernels, key=lambda k: (str(k.where), k.record))
    records = tuple(dict.fromkeys(k.record for k in kernels))
    observed = tuple((r, tuple(sorted({k.base for k in kernels if k.record == r and k.base
                                       and not k.dispatch}))) for r in records)
    kernels_at = ", ".join(dict.fromkeys(str(_short(k.where)) for k in kernels))  # for the report
    call = None
    call_source = ""
    pinned = calls.get(impl.name)
    if pinned is not None and _rel(impl.path) == pinned.file:
        records = pinned.records
        call = pinned.call
        call_source = f"{pinned.source} ({_ENGINE_FILE})"
    key = (impl.path, impl.name)
    #: records of its own call sites that the pinned DCP branch does not take
    untaken = set(dict.fromkeys(k.record for k in kernels)) - set(records) if call else set()
    edges: dict[tuple[object, ...], EdgeFacts] = {}
    mine: list[Finding] = []
    for use in facts.uses:
        edge = _edge(program, use, key, kernels, pinned=call is not None)
        if edge is None:
            continue
        if untaken:
            kept = tuple(p for p in edge.producers if p[0] not in untaken)
            if not kept and not edge.unrecorded:
                continue
            edge = replace(edge, producers=kept)
        k = (edge.consumer, edge.function, edge.where, edge.keyword, edge.from_attr, edge.negated)
        if k in edges:
            old = edges[k]
            edge = replace(edge, row_mask=edge.row_mask or old.row_mask,
                           producers=tuple(dict.fromkeys((*old.producers, *edge.producers))),
                           unrecorded=tuple(dict.fromkeys((*old.unrecorded, *edge.unrecorded))))
        edges[k] = edge
        ways = use.given.options if use.given.kind == "choice" else (use.given,)
        for w in ways:
            if w.flag is not None:
                readers[f"{_short(w.flag.where)} (reads {w.flag.attr} of the impl)"] = None
        if edge.unrecorded:
            sites = {use.where, use.given.where, use.given.omitted}
            mine += [f for f in lint if f.location in sites and f not in mine]
    if mine:
        edge_lint[name] = mine
    return MemberFacts(name, value, f"{impl.module}.{impl.name}" if impl.module else impl.name,
                       attrs=attrs, mro=tuple((c.module, c.name) for c in mro),
                       records=records, observed=() if call else observed,
                       kernels_at=kernels_at, call=call,
                       call_source=call_source, edges=tuple(edges.values()))


def _impl_class(program: Program, backend: ClassInfo) -> ClassInfo | str:
    """The class ``get_impl_cls()`` returns (the first ``return`` that names a class), or why
    not."""
    definer = program.lookup(backend, "get_impl_cls")
    if definer is None:
        return f"{backend.name} has no get_impl_cls() in the sources"
    fn = program.methods(definer).get("get_impl_cls")
    if fn is None:
        return f"{definer.name}.get_impl_cls() cannot be read"
    for node in ast.walk(fn):
        if isinstance(node, ast.Return) and isinstance(node.value, (ast.Name, ast.Attribute)):
            found = program.resolve_base(definer, ast.unparse(node.value))
            if not isinstance(found, str):
                return found
            return f"{definer.name}.get_impl_cls() returns {found}, not a class of the sources"
    return f"{definer.name}.get_impl_cls() returns no class name"


def _edge(program: Program, use: Use, key: tuple[str, str], kernels: Sequence[Kernel],
          pinned: bool = False) -> EdgeFacts | None:
    from attn_contracts.lint.values import source_order  # derivation only: the lint is loaded

    g = use.given
    if g.kind == "param":
        return None  # the combine's wrapper analysed alone: its callers are the edges
    wheres = {k.where for k in kernels}  # its own kernels' calls: their LSEs are its
    producers: list[tuple[str, str | None]] = []
    unrecorded: list[tuple[str | None, str]] = []
    for s in sorted(use.lse.sources, key=source_order):
        # a flow the interpreter followed with another impl class as self (a subclass that
        # converts the LSE of the kernel call it shares through super()) is that backend's
        ours = s.impl == key if s.impl is not None else (
            s.site in wheres and s.key.startswith("producer:"))
        if not ours:
            continue
        if s.record:
            producers.append((s.record, s.base if s.pinned else None))
        elif s.pinned:
            unrecorded.append((s.base, s.what))
    flag_owner = next((w.flag for w in (g.options if g.kind == "choice" else (g,))
                       if w.flag is not None), None)
    if not producers and not unrecorded and flag_owner is None:
        return None
    keyword: str | None = None
    from_attr: str | None = None
    if flag_owner is not None:
        from_attr = flag_owner.attr
    elif g.kind == "fixed" and g.literal and g.keyword:
        keyword = "True" if g.base == "e" else "False" if g.base == "2" else None
    if not producers and not unrecorded and not pinned:
        return None  # the attribute is read, but no LSE of this impl is followed there
    # pinned: the engine data says which kernel this impl runs under DCP, and this combine is
    # told the base by the impl's own attribute (the MLA layer's decode LSE), so it combines that
    # kernel's LSE even where no record of the tree's library lets the flow follow it there
    return EdgeFacts(use.consumer.record, use.consumer.function, _short(use.where), keyword,
                     from_attr,
                     _row_mask(program, use.where), tuple(dict.fromkeys(producers)),
                     tuple(dict.fromkeys(unrecorded)),
                     negated=flag_owner is not None and flag_owner.negated)


def _row_mask(program: Program, where: Location) -> bool:
    """The consumer call at ``where`` passes the local lengths (``seq_lens`` or
    ``query_start_loc``) that mask empty shards."""
    point = where.point
    node = _calls(program, where.path).get((point[0], point[1] - 1)) if point else None
    return node is not None and any(k.arg in ("seq_lens", "query_start_loc")
                                    for k in node.keywords)


_CALLS: dict[tuple[int, str], tuple[Program, dict[tuple[int, int], ast.Call]]] = {}


def _calls(program: Program, path: str) -> dict[tuple[int, int], ast.Call]:
    """The calls of the file at ``path`` by (line, column), indexed once per program model: a
    walk of the whole file per consumer call was a seventh of a cold derivation."""
    key = (id(program), path)
    held = _CALLS.get(key)
    if held is None or held[0] is not program:
        tree = program.tree(path)
        index: dict[tuple[int, int], ast.Call] = {}
        for n in ast.walk(tree) if tree is not None else ():
            if isinstance(n, ast.Call):  # the first in walk order, as a search would find it
                index.setdefault((n.lineno, n.col_offset), n)
        held = _CALLS[key] = (program, index)
    return held[1]
