"""Module-level names: bindings, imports, annotations, mutations, registered ops.

What a module-level name holds (its assignment alone, with what the module does to it later),
what an import binds, what an annotation says a value is, and which function of the program a
``torch.ops`` name runs.
"""

from __future__ import annotations

import ast
import contextlib
import copy
import functools
import re
import weakref
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import replace
from pathlib import Path
from typing import Any
from typing import cast

from attn_contracts.facts import reexports
from attn_contracts.findings import Location
from attn_contracts.lint.analysis import Analysis
from attn_contracts.lint.analysis import FrameView
from attn_contracts.lint.calls import CallArgs
from attn_contracts.lint.calls import params_of
from attn_contracts.lint.calls import place
from attn_contracts.lint.classes import dotted_name
from attn_contracts.lint.classes import module_level
from attn_contracts.lint.classes import own_nodes
from attn_contracts.lint.classes import own_statements
from attn_contracts.lint.containers import MUTATORS
from attn_contracts.lint.torch_model import named_number
from attn_contracts.lint.values import NOT_SPECIAL
from attn_contracts.lint.values import Arg
from attn_contracts.lint.values import Bound
from attn_contracts.lint.values import ClassRef
from attn_contracts.lint.values import Ext
from attn_contracts.lint.values import ExtInst
from attn_contracts.lint.values import Func
from attn_contracts.lint.values import Inst
from attn_contracts.lint.values import Lit
from attn_contracts.lint.values import ModuleRef
from attn_contracts.lint.values import Partial
from attn_contracts.lint.values import Value
from attn_contracts.lint.values import alternatives
from attn_contracts.lint.values import join

_WORD = re.compile(r"\w+")


def _registrations(node: ast.AST) -> Iterator[tuple[str, ast.AST]]:
    """(``"ns::name"`` or ``"*::name"``, the function) for each way ``node`` registers a
    Python function as a torch op: a ``custom_op("ns::name")`` decorator, a call
    ``custom_op("ns::name", fn)``, a registration helper given ``op_name=`` and ``op_func=``."""
    def op_name(call: ast.Call) -> str | None:
        first = call.args[0] if call.args else next(
            (k.value for k in call.keywords if k.arg in ("name", "qualname")), None)
        if isinstance(first, ast.Constant) and isinstance(first.value, str) and \
                "::" in first.value:
            return first.value.partition(".")[0]
        return None

    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        for d in node.decorator_list:
            if isinstance(d, ast.Call) and (dotted_name(d.func) or "").rpartition(".")[2] in (
                    "custom_op", "triton_op") and (key := op_name(d)) is not None:
                yield key, node
    elif isinstance(node, ast.Call):
        last = (dotted_name(node.func) or "").rpartition(".")[2]
        if last in ("custom_op", "triton_op") and len(node.args) >= 2 and \
                (key := op_name(node)) is not None:
            yield key, node.args[1]
        kw = {k.arg: k.value for k in node.keywords if k.arg is not None}
        named = kw.get("op_name")
        if "op_func" in kw and isinstance(named, ast.Constant) and isinstance(named.value, str):
            yield f"*::{named.value}", kw["op_func"]


def _mutated_name(st: ast.stmt) -> str | None:
    """The name a statement changes in place: ``NAME[k] = v``, ``NAME[a][b] = v``, ``del
    NAME[k]``, ``NAME.update(...)``, ``NAME[k].append(x)`` and the other mutating methods."""
    targets: list[ast.expr] = []
    if isinstance(st, ast.Assign):
        targets = list(st.targets)
    elif isinstance(st, (ast.AugAssign, ast.AnnAssign)):
        targets = [st.target]
    elif isinstance(st, ast.Delete):
        targets = list(st.targets)
    for t in targets:
        if isinstance(t, ast.Subscript) and (root := _root_name(t.value)) is not None:
            return root
    if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
        f = st.value.func
        if isinstance(f, ast.Attribute) and f.attr in MUTATORS:
            return _root_name(f.value)
    return None


def _root_name(node: ast.expr) -> str | None:
    """The name below items and attributes (``T`` of ``T["a"]["b"]``), None for anything
    else (a call's result, a literal)."""
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def changes_of(body: list[ast.stmt], name: str | frozenset[str]) -> list[ast.stmt]:
    """The statements of a block (a module's top level, a class body) that change what
    ``name`` holds, with the control flow around them kept (an ``if`` and its test, a
    ``try`` and its handlers, a loop, a ``match``, and ``break``/``continue`` in them), so
    that they run as Python runs them: a branch that may not run is one way of two. A
    rebinding of ``name`` (``name = ...``, ``name += ...``) is kept too: what follows changes
    another object. Functions and classes defined there are left out. ``name`` may be several
    names (those that share one object)."""
    names = frozenset({name}) if isinstance(name, str) else name
    return [st for st, real in (_kept(st, names) for st in body) if st is not None and real]


def _pruned(body: list[ast.stmt], name: frozenset[str]) -> tuple[list[ast.stmt], bool]:
    """A block's statements that change ``name`` or steer the loop around them (an ``if``
    that breaks), and whether any changes it."""
    out: list[ast.stmt] = []
    real = False
    for st in body:
        kept, changes = _kept(st, name)
        if kept is not None:
            out.append(kept)
            real = real or changes
    return out, real


def _kept(st: ast.stmt, name: frozenset[str]) -> tuple[ast.stmt | None, bool]:
    """The statement as kept (None: dropped), and whether it changes ``name`` (else it only
    steers a loop: a ``break``, an ``if`` around one)."""
    if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return None, False
    if _mutated_name(st) in name or any(_rebinds(st, n) for n in name):
        return st, True
    if isinstance(st, (ast.Break, ast.Continue)):
        return st, False
    blocks = [f for f in ("body", "orelse", "finalbody") if isinstance(getattr(st, f, None), list)]
    if not blocks and not isinstance(st, (ast.Try, ast.Match)):
        return None, False
    copy_, real, steers = _kept_compound(st, blocks, name)
    if real and isinstance(st, (ast.Try, ast.TryStar)):
        cast(ast.Try, copy_).body = st.body  # whether a handler runs: what all of it raises
    if not (real or steers):
        return None, False
    return ast.fix_missing_locations(copy_), real


def _kept_compound(st: ast.stmt, blocks: list[str], name: frozenset[str]
                   ) -> tuple[ast.stmt, bool, bool]:
    """A compound statement with each block pruned; whether one changes ``name``, and
    whether one steers a loop."""
    copy_ = copy.copy(st)
    real = steers = False
    for f in blocks:
        inner, changes = _pruned(getattr(st, f), name)
        real, steers = real or changes, steers or bool(inner)
        setattr(copy_, f, inner or ([ast.Pass()] if f == "body" else []))
    for f in ("handlers", "cases"):  # a ``try``'s handlers, a ``match``'s cases
        if isinstance(getattr(st, f, None), list):
            parts, changes = _kept_parts(getattr(st, f), name)
            real = real or changes
            setattr(copy_, f, parts)
    return copy_, real, steers


def _kept_parts(parts: list[ast.ExceptHandler | ast.match_case],
                name: frozenset[str]) -> tuple[list[ast.ExceptHandler | ast.match_case], bool]:
    """Handlers or cases, each with its body's changes of ``name`` kept (``pass`` where it
    has none), and whether one has any."""
    out: list[ast.ExceptHandler | ast.match_case] = []
    changed = False
    for part in parts:
        kept = copy.copy(part)
        body, changes = _pruned(part.body, name)
        changed = changed or changes or (
            isinstance(part, ast.match_case) and bool(captured(part.pattern) & name))
        kept.body = body or [ast.Pass()]
        out.append(kept)
    return out, changed


def _carried(body: list[ast.stmt], name: str) -> bool:
    """A top-level loop that changes ``name`` also binds another name it reads (``for ...:
    X = A; A = not A``): the statements kept for ``name`` alone would read that other name
    as the module ends, not as the pass left it."""
    stack = list(body)
    while stack:
        st = stack.pop()
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(st, (ast.For, ast.AsyncFor, ast.While)) and changes_of([st], name):
            nodes = [n for n in ast.walk(st) if isinstance(n, ast.Name)]
            targets = {n.id for n in ast.walk(st.target) if isinstance(n, ast.Name)} \
                if isinstance(st, (ast.For, ast.AsyncFor)) else set()
            stored = {n.id for n in nodes if isinstance(n.ctx, ast.Store)} - targets - {name}
            if stored & {n.id for n in nodes if isinstance(n.ctx, ast.Load)}:
                return True
            continue
        for f in ("body", "orelse", "finalbody"):
            stack.extend(getattr(st, f, None) or [])
        for part in [*getattr(st, "handlers", []), *getattr(st, "cases", [])]:
            stack.extend(part.body)
    return False


def captured(pattern: ast.pattern) -> frozenset[str]:
    """The names a ``case`` pattern binds where it matches (``case RED:`` binds ``RED``)."""
    return frozenset(n.name for n in ast.walk(pattern)
                     if isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name) | frozenset(
        n.rest for n in ast.walk(pattern) if isinstance(n, ast.MatchMapping) and n.rest)


def top_bindings(tree: ast.Module) -> Counter[str]:
    """Per name, how many statements of a module's top level (inside its ``if``/``for``/
    ``while``/``try``/``with``/``match`` too, not in functions or classes) bind it."""
    count: Counter[str] = Counter()
    stack: list[ast.stmt] = list(tree.body)
    while stack:
        st = stack.pop()
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        targets: list[ast.expr] = []
        if isinstance(st, ast.Assign):
            targets = list(st.targets)
        elif isinstance(st, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
            targets = [st.target]
        count.update({n.id for t in targets for n in ast.walk(t)
                      if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)})
        for f in ("body", "orelse", "finalbody"):
            stack.extend(getattr(st, f, None) or [])
        for part in [*getattr(st, "handlers", []), *getattr(st, "cases", [])]:
            stack.extend(part.body)
            if isinstance(part, ast.match_case):
                count.update(captured(part.pattern))
    return count


def _rebinds(st: ast.stmt, name: str) -> bool:
    """Whether a statement binds ``name`` anew (``name = ...``, ``name += ...``, a ``for``
    or ``with`` target)."""
    targets: list[ast.expr] = []
    if isinstance(st, ast.Assign):
        targets = list(st.targets)
    elif isinstance(st, (ast.AugAssign, ast.AnnAssign, ast.For, ast.AsyncFor)):
        targets = [st.target]
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store)
               for t in targets for n in ast.walk(t))


@dataclass(frozen=True)
class _Scope:
    """What one function of a module does to names in place (:func:`_changes`): the names it
    changes in place (``_mutated_name``), those it augments (``x += ...``), those it binds as
    its own locals (parameters, assignment, loop and ``with`` targets), those it declares
    ``global``."""

    mutated: frozenset[str]
    augmented: frozenset[str]
    binds: frozenset[str]
    globals: frozenset[str]

    def own(self, name: str) -> bool:
        """Whether the function binds ``name`` as its own local (not declared global)."""
        return name not in self.globals and name in self.binds


#: each module's scopes, read once (the questions below are asked per imported name)
_SCOPES_OF: weakref.WeakKeyDictionary[ast.Module, tuple[_Scope, tuple[_Scope, ...]]] = \
    weakref.WeakKeyDictionary()


def _scope_of(body: list[ast.stmt], fn: ast.FunctionDef | ast.AsyncFunctionDef | None) -> _Scope:
    statements = [st for st in own_nodes(body) if isinstance(st, ast.stmt)]
    mutated = {m for st in statements if (m := _mutated_name(st)) is not None}
    augmented = {st.target.id for st in statements
                 if isinstance(st, ast.AugAssign) and isinstance(st.target, ast.Name)}
    if fn is None:
        return _Scope(frozenset(mutated), frozenset(augmented), frozenset(), frozenset())
    declared = {n for st in ast.walk(fn) if isinstance(st, ast.Global) for n in st.names}
    a = fn.args
    binds = {x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg)
             if x is not None}
    binds |= {t.id for st in statements
              if isinstance(st, (ast.Assign, ast.AnnAssign, ast.For, ast.With))
              for t in ast.walk(st) if isinstance(t, ast.Name) and isinstance(t.ctx, ast.Store)}
    return _Scope(frozenset(mutated), frozenset(augmented), frozenset(binds),
                  frozenset(declared))


def _changes(tree: ast.Module) -> tuple[_Scope, tuple[_Scope, ...]]:
    """The module's top level and each of its functions (at any depth), as :class:`_Scope`."""
    known = _SCOPES_OF.get(tree)
    if known is None:
        known = (_scope_of(tree.body, None), tuple(
            _scope_of(fn.body, fn) for fn in ast.walk(tree)
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))))
        _SCOPES_OF[tree] = known
    return known


def _may_change(text: str, name: str) -> bool:
    """Whether a module's text may change ``name`` in place or augment it (read before its
    tree: a name imported by many modules, a registry used as a decorator, is changed by
    none): ``name[...]``, ``name.<mutator>(...)``, either below attributes and items
    (``name.a[k] = v``, ``name[k].append(x)``), ``name += ...``."""
    if not text.isascii():
        return True  # a name Python normalises (NFKC) may be spelt otherwise: read the tree
    return name in text and _mutation_pattern(name).search(text) is not None


@functools.cache
def _mutation_pattern(name: str) -> re.Pattern[str]:
    # between the parts: spaces, line breaks, a backslash continuation, a closing
    # parenthesis (``(name)[k] = v``), a comment in parentheses
    gap = r"(?:[\s)\\]|#[^\n]*)*"
    return re.compile(r"\b" + re.escape(name) + gap + r"(?:\.\s*\w+" + gap + r")*(?:\[|\.\s*(?:"
                      + "|".join(sorted(MUTATORS)) + r")" + gap + r"\(|(?:[-+*/%&|^@]|<<|>>|//|\*\*)=)")


def _changes_import(tree: ast.Module | None, local: str) -> bool:
    """Whether a module changes in place the object its top-level name ``local`` is bound to:
    a statement of its top level, or of a function that does not bind ``local`` itself (one
    that does holds another object, unless it declares the name ``global``)."""
    if tree is None:
        return True  # not read: it may
    top, functions = _changes(tree)
    return any(local in s.mutated or local in s.augmented
               for s in (top, *(f for f in functions if not f.own(local))))


def _changes_in_function(tree: ast.Module, local: str) -> bool:
    """Whether a function of the module changes in place the object its top-level name
    ``local`` is bound to (one that does not bind ``local`` itself)."""
    return any(local in f.mutated and not f.own(local) for f in _changes(tree)[1])


#: the name a class is bound to while its decorators are applied (no Python name can clash)
_CLASS = "\x00class"

#: levels of calls read for their values from a class decorator (a factory, its wrapper, a
#: helper the wrapper calls)
_DECORATOR_LEVELS = 3


class ModuleResolver(Analysis):
    """The resolution of module-level names over the program."""


    def run_decorators(self, path: str, node: ast.ClassDef) -> None:
        """A class's decorators applied to it, innermost first, as its module does when it
        defines the class: what they store on it (``@lse_base(on_e=False)`` whose wrapper sets
        ``cls.lse_base_on_e``) is in :attr:`class_stores`. Read for their values: a decorator
        factory's call and the wrapper it returns are followed whatever they name."""
        frame = self.new_frame(path)
        frame.env[_CLASS] = ClassRef((path, node.name))
        with self._class_definition():
            for dec in reversed(node.decorator_list):
                applied = ast.copy_location(ast.Call(dec, [ast.Name(_CLASS, ast.Load())], []),
                                            dec)
                ast.fix_missing_locations(applied)
                before = {k: len(v) for k, v in self.class_stores.items()}
                if not isinstance(frame.expr(applied), ClassRef):
                    frame.env[_CLASS] = ClassRef((path, node.name))  # what it cannot read
                self._placed_at_decorator(before, path, dec)

    def _placed_at_decorator(self, before: dict[Any, int], path: str, dec: ast.expr) -> None:
        """A store a decorator of another file made while it was applied is shown, in the
        class's own file, by the decorator's line: the line of the class statement that
        changed the class (its ``class`` line is below it)."""
        for key, stores in self.class_stores.items():
            for i in range(before.get(key, 0), len(stores)):
                value, at, runtime = stores[i]
                if at.path != path:
                    stores[i] = (value, place(path, dec), runtime)

    def run_init_subclass(self, path: str, node: ast.ClassDef) -> None:
        """The ``__init_subclass__`` of the class's nearest base that defines one, run as
        Python runs it when the class is defined: on the class, with the keywords of its class
        statement (``class Impl(Base, lse_log_base="base2")``); what it stores on ``cls`` is in
        :attr:`class_stores`."""
        cls = self.p.cls((path, node.name))
        if cls is None:
            return
        owner = next((c for c in self.p.mro(cls)[1:]
                      if "__init_subclass__" in self.p.methods(c)), None)
        if owner is None:
            return
        frame = self.new_frame(path)
        kw = {k.arg: Arg(frame.expr(k.value), place(path, k.value))
              for k in node.keywords if k.arg is not None and k.arg != "metaclass"}
        call = CallArgs([Arg(ClassRef((path, node.name)), place(path, node))], kw,
                        any(k.arg is None for k in node.keywords), where=place(path, node))
        with self._class_definition():
            self.analyse(Func(owner.path, f"{owner.name}.__init_subclass__"), None, call)

    @contextlib.contextmanager
    def _class_definition(self) -> Iterator[None]:
        """Code a class statement runs (its decorators, its base's ``__init_subclass__``),
        read for its values: the calls it makes are followed whatever they name, a few levels
        deep; one that recurses without end is left where it stopped."""
        need = self.need
        self.need = _DECORATOR_LEVELS
        self.defining += 1
        try:
            yield
        except RecursionError:
            return
        finally:
            self.need = need
            self.defining -= 1

    def global_value(self, path: str, name: str) -> Value:
        """A module-level name's value, evaluated when first asked (its assignment alone, not
        the whole module body)."""
        key = (path, name)
        if key in self._globals:
            return self._globals[key]
        if key in self._module_busy:
            return None
        self._module_busy.add(key)
        try:
            value = self.binding_value(path, name)
            b = self.p.binding(path, name)
            if b is not None and b.kind == "assign" and b.module == path and \
                    self.bound_often(path, name):
                # bound more than once: the top level's statements that bind or change it,
                # run in order with their control flow (a loop's else, a match's cases)
                value = self._from_functions(path, name, self._run_top(path, name, None))
            elif b is not None and b.kind == "assign" and b.module == path:
                value = self._mutated(path, name, value, getattr(b.node, "lineno", 0))
                if value is not None and not all(
                        isinstance(a, Lit) for a in alternatives(value)):
                    value = self._changed_elsewhere(path, name, value,
                                                    self._mutability(path, b.node))
        except RecursionError:
            value = None
        finally:
            self._module_busy.discard(key)
        self._globals[key] = value
        return value

    def builtin_at(self, path: str, name: str) -> bool:
        """Whether ``name`` read in module ``path`` (outside any function binding it) is
        Python's builtin: no global of the module binds it anywhere (a ``global`` statement in
        a function included)."""
        info = self.p.info(path)
        text = self.module_text(path)
        return info is not None and name not in info.defs and name not in info.classes and \
            name not in info.assigns and name not in info.from_imports and \
            name not in info.module_imports and re.search(
                rf"\b{re.escape(name)}\s*(?::[^=\n]*)?=(?!=)|\bglobal\b[^\n]*\b{re.escape(name)}\b",
                text) is None

    def _mutability(self, path: str, node: ast.AST | None) -> bool | None:
        """Whether the object an expression builds can change in place (a list, set or dict
        display or comprehension, ``list``/``set``/``dict`` of the builtins), cannot (a
        tuple display, a constant, ``frozenset``/``tuple`` of the builtins); None where the
        expression does not say."""
        if isinstance(node, (ast.List, ast.Set, ast.Dict, ast.ListComp, ast.SetComp,
                             ast.DictComp)):
            return True
        if isinstance(node, (ast.Tuple, ast.Constant, ast.JoinedStr)):
            return False
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                self.builtin_at(path, node.func.id):
            return {"list": True, "set": True, "dict": True, "frozenset": False,
                    "tuple": False, "str": False}.get(node.func.id)
        return None

    def _changed_elsewhere(self, path: str, name: str, value: Value,
                           mutable: bool | None = None) -> Value:
        """The module-level container ``name`` of ``path`` with what the other modules of the
        program that import it change in place (``from m import TABLE`` then
        ``TABLE.append(x)``, ``TABLE[k] = v``): Python runs an importer's top level when the
        importer is imported, which may or may not happen first, so the value is either the
        module's own or the one after those statements, run in order. A change in a function
        that does not bind the name itself (run whenever it is called), ``TABLE += ...``, or an
        importer not parsed: unknown."""
        importers = self._importers(path, name)
        if not importers:
            return value
        if len(importers) > 1:
            return None  # which runs first, and what one reads of another's change: not known
        other, local = importers[0]
        tree = self.p.tree(other)
        if tree is None or _changes_in_function(tree, local):
            return None
        kept = changes_of(tree.body, local)
        for at, top in enumerate(kept):
            rebinds = [st for st in ast.walk(top) if isinstance(st, ast.stmt) and
                       _rebinds(st, local)]
            if not rebinds:
                continue
            # ``+=`` of a list changes it, of a tuple rebinds a copy: the importer's name
            # holds another object from then on (a top-level ``|=`` of a frozenset)
            if mutable is False and rebinds == [top] and isinstance(top, ast.AugAssign):
                kept = kept[:at]
                break
            if not (mutable and all(isinstance(st, ast.AugAssign) for st in rebinds)):
                return None
        frame = self.new_frame(other)
        frame.env[local] = value
        for st in kept:
            frame.stmt(st)
        return join([value, frame.env.get(local)])

    def _importers(self, path: str, name: str) -> list[tuple[str, str]]:
        """(module, local name) of each other module that imports the module-level ``name``
        of ``path`` and may change it in place (its text names a mutation of it)."""
        return [(other, local) for other, local in self.imported_as(path, name)
                if _may_change(self.module_text(other), local) and
                _changes_import(self.p.tree(other), local)]

    def imported_as(self, path: str, name: str) -> list[tuple[str, str]]:
        """(module, local name) of each other module of the program that imports the
        module-level ``name`` of ``path`` (``from m import name as local``), from an index of
        every module's imports made once."""
        if self._foreign_index is None:
            index: dict[tuple[str, str], list[tuple[str, str]]] = {}
            for importer in sorted(self.p.infos(), key=lambda i: i.path):
                for local, source in sorted(importer.from_imports.items()):
                    index.setdefault(source, []).append((importer.path, local))
            self._foreign_index = index
        info = self.p.info(path)
        if info is None:
            return []
        names = (info.name, *(alias for alias, _ in info.aliases))
        return [(other, local) for module in names
                for other, local in self._foreign_index.get((module, name), ())
                if other != path]

    def module_text(self, path: str) -> str:
        if path not in self._texts:
            try:
                self._texts[path] = Path(path).read_text(encoding="utf-8", errors="replace")
            except OSError:
                self._texts[path] = ""
        return self._texts[path]

    def _mutations(self, path: str) -> dict[str, tuple[list[ast.stmt], list[ast.expr], bool]]:
        """Per module-level name, what changes it after its assignment: the module-level
        statements that store into it or call a mutating method on it (in order), the values
        functions rebind it to (``global NAME``), and whether a function changes it in place."""
        if path in self._mutation_index:
            return self._mutation_index[path]
        found: dict[str, tuple[list[ast.stmt], list[ast.expr], bool]] = {}
        self._mutation_index[path] = found
        tree = self.p.tree(path)
        if tree is None:
            return found

        def entry(name: str) -> tuple[list[ast.stmt], list[ast.expr], bool]:
            return found.setdefault(name, ([], [], False))

        for st in module_level(tree.body):
            if (n := _mutated_name(st)) is not None:
                entry(n)[0].append(st)
            elif isinstance(st, (ast.For, ast.AsyncFor, ast.While)):
                # a table filled in a loop (``for k, v in PAIRS: TABLE[k] = ...``): the whole
                # loop runs after the literal, as the module runs it
                inner = {n for sub in ast.walk(st) if isinstance(sub, ast.stmt)
                         and (n := _mutated_name(sub)) is not None}
                for n in sorted(inner):
                    entry(n)[0].append(st)
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                _function_mutations(fn, found)
        return found

    def global_value_at(self, path: str, name: str, line: int) -> Value:
        """A module-level name as the module's own top level (or a class body there) reads it
        at ``line``: Python has run the statements above that line only, so a change the module
        makes further down (``T.update(...)`` after ``S = frozenset(T)``) is not seen yet, nor
        one an importer makes (it runs later)."""
        value = self.global_value(path, name)
        b = self.p.binding(path, name)
        if b is None or b.kind != "assign" or b.module != path:
            return value
        if self.bound_often(path, name):
            key = (path, name, line)
            if key not in self._globals_at:
                self._globals_at[key] = None  # read while being computed: not known
                with contextlib.suppress(RecursionError):
                    self._globals_at[key] = self._run_top(path, name, line)
            return self._globals_at[key]
        defined = getattr(b.node, "lineno", 0)
        group = self._shared(path).get(name)
        if group is not None and line > defined:  # changed through another name too
            key = (path, name, line)
            if key not in self._globals_at:
                self._globals_at[key] = None
                with contextlib.suppress(RecursionError):
                    self._globals_at[key] = self._changed_together(
                        path, name, group, self.binding_value(path, name), defined, line)
            return self._globals_at[key]
        stmts, _, in_function = self._mutations(path).get(name, ([], [], False))
        if in_function and line > defined:
            # a function changes it: its module's top level, mid-import, may see any state
            # (global_value's is the one the whole import leaves)
            return None
        if line <= defined or all(st.lineno < line for st in stmts):
            return value
        key = (path, name, line)
        if key not in self._globals_at:
            self._globals_at[key] = None  # read while being computed: not known
            with contextlib.suppress(RecursionError):
                self._globals_at[key] = self._mutated(
                    path, name, self.binding_value(path, name), defined, upto=line)
        return self._globals_at[key]

    def changed_after(self, path: str, name: str, line: int) -> bool:
        """The module changes its top-level name ``name`` in place after ``line`` (or in a
        function, or through another name)."""
        stmts, _, in_function = self._mutations(path).get(name, ([], [], False))
        return in_function or name in self._shared(path) or \
            any(st.lineno > line for st in stmts)

    def _mutated(self, path: str, name: str, value: Value, line: int,
                 upto: int | None = None) -> Value:
        """A module-level value with what the module does to it afterwards: its own statements
        run in order; a value a function may rebind it to is one more way it may be (which one
        holds depends on what runs first); changed in place by a function, it is unknown.
        ``upto``: only the statements above that line."""
        group = self._shared(path).get(name)
        if group is not None:  # another name for the same object changes it
            return self._changed_together(path, name, group, value, line, upto)
        text = self.module_text(path)
        if not re.search(r"\bglobal\b[^\n]*\b" + re.escape(name) + r"\b|\b" + re.escape(name)
                         + r"\s*(?:\[|\.\s*(?:" + "|".join(sorted(MUTATORS)) + r")\s*\()",
                         text):
            return value  # nothing in the module can change it (read from its text first)
        stmts, rebinds, in_function = self._mutations(path).get(name, ([], [], False))
        if in_function:
            # changed in place where a function runs: known only where each such function
            # runs while the module is imported, never after (a registry's decorator)
            return self.after_import(path, name, value, line) \
                if upto is None and not rebinds and not stmts else None
        tree = self.p.tree(path)
        later = [st for st in changes_of(tree.body, name)
                 if st.lineno > line and (upto is None or st.lineno < upto)] \
            if stmts and tree is not None else []
        if later:
            frame = self.new_frame(path)
            frame.env[name] = value
            for st in later:
                frame.stmt(st)
            value = frame.env.get(name)
        return self._rebound_by_functions(path, value, rebinds)

    def _rebound_by_functions(self, path: str, value: Value, rebinds: list[ast.expr]) -> Value:
        """A value with those functions may rebind it to (``global x; x = ...``): one more
        way it may be each, which one holds depending on what runs first."""
        if rebinds:
            frame = self.new_frame(path)
            frame.module_level = False
            value = join([value, *(frame.expr(e) for e in rebinds)])
            value = join([replace(v, rebound=True) if isinstance(v, Lit) else v
                          for v in alternatives(value)])
        return value

    def _from_functions(self, path: str, name: str, value: Value) -> Value:
        """A module-level value with what functions do to it: changed in place by one, not
        known; rebound by one (``global``), one more way it may be."""
        _, rebinds, in_function = self._mutations(path).get(name, ([], [], False))
        return None if in_function else self._rebound_by_functions(path, value, rebinds)

    def bound_often(self, path: str, name: str) -> bool:
        """The module's top level binds ``name`` in more than one statement."""
        if path not in self._top_bindings:
            tree = self.p.tree(path)
            self._top_bindings[path] = top_bindings(tree) if tree is not None else Counter()
        return self._top_bindings[path][name] > 1

    def _run_top(self, path: str, name: str, upto: int | None) -> Value:
        """``name`` after the module's top-level statements that bind or change it (above
        ``upto``), run in order from the start with the control flow around them."""
        tree = self.p.tree(path)
        if tree is None or _carried(tree.body, name):
            return None
        frame = self.new_frame(path)
        for st in changes_of(tree.body, name):
            if upto is None or st.lineno < upto:
                frame.stmt(st)
        return frame.env.get(name)

    def _changed_together(self, path: str, name: str, group: frozenset[str], value: Value,
                          line: int, upto: int | None) -> Value:
        """``name``'s value with what the module's top level does afterwards to it and to the
        names that may share its object (``F = C`` then ``F += [x]``: ``C`` is extended too, a
        list being changed in place), run in order as Python runs them; a change in a function
        of any of them: not followed."""
        index = self._mutations(path)
        tree = self.p.tree(path)
        if tree is None or any(index.get(n, ([], [], False))[2] or index.get(n, ([], [], False))[1]
                               for n in group):
            return None
        frame = self.new_frame(path)
        frame.env[name] = value
        b = self.p.binding(path, name)
        source = b.node if b is not None and isinstance(b.node, ast.Name) else None
        if source is not None and source.id in group:  # ``F = C``: F starts as C's object
            frame.env[source.id] = value
            frame.same.update(dict.fromkeys((name, source.id), frozenset({name, source.id})))
        for st in changes_of(tree.body, group):
            if st.lineno > line and (upto is None or st.lineno < upto):
                frame.stmt(st)
        return frame.env.get(name)

    def _shared(self, path: str) -> dict[str, frozenset[str]]:
        """The top-level names of a module bound to another one's object (``B = A``, ``A = B =
        []``, transitively) where some name of the group other than itself is changed in place
        (``B.append(x)``, ``B[k] = v``, ``B += [x]``, anywhere in the module), each with its
        group: its object may change through a name other than its own."""
        if path in self._shared_changed:
            return self._shared_changed[path]
        tree = self.p.tree(path)
        groups: dict[str, set[str]] = {}
        for st in module_level(tree.body) if tree is not None else ():
            if not isinstance(st, ast.Assign):
                continue
            names = {t.id for t in st.targets if isinstance(t, ast.Name)}
            if isinstance(st.value, ast.Name):
                names.add(st.value.id)
            if len(names) < 2:
                continue
            merged = set().union(names, *(groups.get(n, set()) for n in names))
            for n in merged:
                groups[n] = merged
        changed: set[str] = set()
        if groups and tree is not None:
            for node in ast.walk(tree):
                if isinstance(node, ast.stmt) and (hit := _mutated_name(node)) is not None:
                    changed.add(hit)
                if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                    changed.add(node.target.id)
        found = {n: frozenset(group) for n, group in groups.items() if (group - {n}) & changed}
        self._shared_changed[path] = found
        return found

    def function_attr(self, func: Func, attr: str) -> Value:
        """``f.attr`` on an undecorated function ``f`` defined at its module's top level, where
        one statement of that top level, outside any ``if`` or ``try``, stores it and nothing
        else in the module may (no other store of that attribute, no ``setattr``, ``__dict__``,
        ``vars`` or ``wraps`` naming ``f``): the value stored. Else None: not read."""
        if "." in func.qualname or "<" in func.qualname or attr.startswith("__"):
            return None
        node = self.p.function(func.path, func.qualname)
        stores = self._attribute_stores(func.path)
        values, elsewhere = stores.get((func.qualname, attr), ([], True))
        if elsewhere or len(values) != 1 or not isinstance(
                node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.decorator_list or \
                sum(1 for (_, a) in stores if a == attr) != 1 or re.search(
                    r"\b(?:setattr|vars|wraps|update_wrapper)\(|__dict__",
                    self.module_text(func.path)):
            return None
        return self.new_frame(func.path).expr(values[0])

    def _attribute_stores(self, path: str) -> dict[tuple[str, str], tuple[list[ast.expr], bool]]:
        """Per (name, attribute), the values the module's top level stores outside any ``if``
        or ``try`` (``f.tag = v``), and whether it is stored anywhere else in the module (a
        function, a branch)."""
        if path in self._attr_stores:
            return self._attr_stores[path]
        found: dict[tuple[str, str], tuple[list[ast.expr], bool]] = {}
        self._attr_stores[path] = found
        tree = self.p.tree(path)
        if tree is None:
            return found
        top = {id(st) for st in tree.body}
        for node in ast.walk(tree):
            if not isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name):
                    values, elsewhere = found.get((t.value.id, t.attr), ([], False))
                    if id(node) in top and isinstance(node, ast.Assign):
                        values = [*values, node.value]
                    else:
                        elsewhere = True
                    found[(t.value.id, t.attr)] = (values, elsewhere)
        return found

    def custom_op(self, namespace: str, name: str) -> Func | None:
        """The function of the program registered as the torch op ``namespace::name``
        (``@torch.library.custom_op("ns::name")``, ``torch.library.custom_op("ns::name",
        fn)``, a helper called with ``op_name="name", op_func=fn``); only the modules whose
        text names the op are parsed for it."""
        if self._op_texts is None:
            self._op_texts = []
            for info in self.p.infos():
                try:
                    text = Path(info.path).read_text(encoding="utf-8", errors="replace")
                except OSError:
                    continue
                if "custom_op" in text or "op_func" in text:
                    # its words, once: a name looked for is one of them (``\bname\b``)
                    self._op_texts.append((info.path, frozenset(_WORD.findall(text))))
        if name not in self._op_names:
            self._op_names.add(name)
            for path, words in self._op_texts:
                if name not in words:
                    continue
                for key, fn in self._registrations_in(path):
                    if key.rpartition("::")[2] != name:
                        continue
                    func = self._registered_func(path, fn)
                    if func is not None:
                        self._ops.setdefault(key, func)
                        self._op_funcs.add(func.qualname)
        return self._ops.get(f"{namespace}::{name}") or self._ops.get(f"*::{name}")

    def _registrations_in(self, path: str) -> list[tuple[str, ast.AST]]:
        """Every op registration of a module, walked once (a module names many ops)."""
        regs = self._op_regs.get(path)
        if regs is None:
            tree = self.p.tree(path)
            regs = [r for node in (ast.walk(tree) if tree is not None else ())
                    for r in _registrations(node)]
            self._op_regs[path] = regs
        return regs

    def _registered_func(self, path: str, fn: ast.AST) -> Func | None:
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if self.p.function(path, fn.name) is fn:
                return Func(path, fn.name, fn)
            return Func(path, f"{fn.name}@{fn.lineno}", fn)
        if isinstance(fn, ast.Name):
            value = self.global_value(path, fn.id)
            return value if isinstance(value, Func) else None
        return None

    def binding_value(self, path: str, name: str) -> Value:
        b = self.p.binding(path, name)
        if b is None:
            return None
        if b.kind == "class" and b.cls is not None:
            return ClassRef((b.cls.path, b.cls.name))
        if b.kind == "def":
            return self.decorated(b.module, b.name)
        if b.kind == "module":
            return ModuleRef(b.target)
        if b.kind == "external":
            number = reexports()[1].get(b.target)  # ``LOGE2`` of ``vllm.triton_utils``
            return Ext(b.target) if number is None else named_number(Lit(number))
        if b.kind == "getattr":
            return self.module_getattr(b.module, b.name)
        if b.kind == "assign" and isinstance(b.node, ast.expr):
            if b.module != path:
                return self.global_value(b.module, b.name)
            frame = self.new_frame(path)
            frame.module_level = False  # names it reads are module globals, asked one by one
            frame.stored = frame.lazy = b.node
            return frame.expr(b.node)
        return None

    def decorated(self, path: str, name: str) -> Value:
        """What a module's ``def name`` binds: the function, with its decorators applied,
        innermost first, as Python applies them (``@deco`` is ``name = deco(name)``). A
        decorator of the program is followed (its wrapper, or whatever it returns, is the
        name's value); one from outside it (``functools.cache``, ``torch.compile``) is read as
        handing the function back."""
        func = Func(path, name)
        node = self.p.function(path, name)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or \
                not node.decorator_list:
            return func
        key = (path, name)
        if key in self._decorated:
            return self._decorated[key]
        self._decorated[key] = func  # read while its decorators run: the function itself
        frame = self.new_frame(path)
        value: Value = func
        for dec in reversed(node.decorator_list):
            call = self.decorator_call(frame, frame.expr(dec), value, dec)
            if call is None:
                continue  # from outside the program (or not known): the function kept
            with self._class_definition():  # followed whatever it names, as a class's are
                applied = frame.expr(call)
            value = applied if alternatives(applied) else func  # cut short: left as it was
        self._decorated[key] = value
        return value

    def decorator_call(self, frame: FrameView, decorator: Value, value: Value, dec: ast.expr,
                       ) -> ast.Call | None:
        """The call that applies ``decorator`` (the value of the decorator expression ``dec``)
        to ``value`` in ``frame`` (``@deco`` is ``name = deco(name)``), placed at ``dec`` and
        built once per decorator; None where the decorator is not a function of the program
        (from outside it, or not known: what it returns is not read)."""
        if not alternatives(decorator) or not all(
                isinstance(d, (Func, Partial, Bound)) for d in alternatives(decorator)):
            return None
        frame.env[_DECORATOR], frame.env[_DECORATED] = decorator, value
        known = self.synthetic.get(id(dec))
        if known is None:
            call = ast.copy_location(ast.Call(ast.Name(_DECORATOR, ast.Load()),
                                              [ast.Name(_DECORATED, ast.Load())], []), dec)
            ast.fix_missing_locations(call)
            known = self.synthetic[id(dec)] = (dec, call)  # (kept alive with its node)
        return cast(ast.Call, known[1])

    def import_value(self, path: str, node: ast.ImportFrom | ast.Import, alias: ast.alias,
                     ) -> tuple[str, Value]:
        """The name a (function-level) import binds and its value."""
        info = self.p.info(path)
        if isinstance(node, ast.Import):
            if alias.asname:
                target = self.p.module(alias.name, path)
                return alias.asname, ModuleRef(target) if target else Ext(alias.name)
            top = alias.name.partition(".")[0]
            target = self.p.module(top, path)
            return top, ModuleRef(target) if target else Ext(top)
        package = ""
        if info is not None:
            package = info.name if info.is_package else info.name.rpartition(".")[0]
        source = node.module or ""
        if node.level:
            parts = package.split(".") if package else []
            base = parts[: len(parts) - (node.level - 1)] if node.level - 1 <= len(parts) else []
            source = ".".join([*base, *([node.module] if node.module else [])])
        bound = alias.asname or alias.name
        target = self.p.module(source, path)
        if target is None:
            sub = self.p.module(f"{source}.{alias.name}", path)
            return bound, ModuleRef(sub) if sub else Ext(f"{source}.{alias.name}")
        value = self.global_value(target, alias.name)
        if value is None:
            sub = self.p.module(f"{source}.{alias.name}", path)
            if sub is not None:
                return bound, ModuleRef(sub)
        return bound, value

    def resolve_annotation(self, path: str, node: ast.expr | None, exact: bool = False) -> Value:
        """The instance an annotation says a value is: ``X``, ``X | None``, ``Optional[X]``,
        ``"X"``, ``X[T]``; a union of classes where several."""
        if node is None:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                node = ast.parse(node.value, mode="eval").body
            except (SyntaxError, ValueError, RecursionError):
                return None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
            return join([v for v in (self.resolve_annotation(path, node.left),
                                     self.resolve_annotation(path, node.right)) if v is not None])
        if isinstance(node, ast.Subscript):
            wrapped = self._generic_annotation(path, node)
            if wrapped is not NOT_SPECIAL:
                return cast(Value, wrapped)
            node = node.value
        dotted = dotted_name(node)
        if dotted is None or dotted == "None":
            return None
        value = self._dotted_value(path, dotted)
        if isinstance(value, ClassRef):
            return Inst(value.cls, exact=exact)
        if isinstance(value, Ext):
            return ExtInst(value.qualname)
        return None

    def _generic_annotation(self, path: str, node: ast.Subscript) -> Value | object:
        """``Optional[X]`` (``Annotated``, ``Final``, ``ClassVar``), ``Union[X, Y]``,
        ``type[X]``; :data:`NOT_SPECIAL` for any other ``X[T]`` (read as ``X``)."""
        head = dotted_name(node.value) or ""
        last = head.rpartition(".")[2]
        if last in ("Optional", "Annotated", "Final", "ClassVar"):
            inner = node.slice.elts[0] if isinstance(node.slice, ast.Tuple) else node.slice
            return self.resolve_annotation(path, inner)
        if last == "Union" and isinstance(node.slice, ast.Tuple):
            return join([v for e in node.slice.elts
                         if (v := self.resolve_annotation(path, e)) is not None])
        if last == "type":
            of = self.resolve_annotation(path, node.slice)
            return ClassRef(of.cls, exact=False) if isinstance(of, Inst) else None
        return NOT_SPECIAL

    def _dotted_value(self, path: str, dotted: str) -> Value:
        head, *rest = dotted.split(".")
        value = self.global_value(path, head)
        for attr in rest:
            if isinstance(value, ModuleRef):
                b = self.p.member(value.name, attr)
                value = None if b is None else self._binding(b)
            elif isinstance(value, Ext):
                value = Ext(f"{value.qualname}.{attr}")
            else:
                return None
        return value

    def _binding(self, b: Any) -> Value:
        if b.kind == "module":
            return ModuleRef(b.target)
        if b.kind == "getattr":
            return self.module_getattr(b.module, b.name)
        return self.binding_value(b.module, b.name)

    def module_getattr(self, path: str, name: str) -> Value:
        """``m.name`` (or ``from m import name``) of a name module ``path`` does not bind:
        what its ``__getattr__`` returns for it (PEP 562)."""
        where = Location(path, 1, 1)
        return self.analyse(Func(path, "__getattr__"), None, CallArgs(
            [Arg(Lit(name, where), where)], {}, False, where=where)).returns


#: the names a decorator and what it decorates are bound to where one is applied
_DECORATOR, _DECORATED = "<decorator>", "<decorated>"


def import_time_changers(tree: ast.Module, name: str
                         ) -> list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, bool]] | None:
    """The module-level functions whose code changes the module's ``name`` in place, each
    with whether it does so (also) in a function it defines and returns (a decorator factory's
    decorator: the change runs where that one is applied); None where other code changes it
    (a method, a function nested deeper, one kept otherwise than returned), or none does."""
    changing = [fn for fn in ast.walk(tree) if isinstance(fn, (ast.FunctionDef,
                                                               ast.AsyncFunctionDef))
                and _function_changes(fn, name)]
    tops = {id(st): st for st in module_level(tree.body)
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef))}
    returned_by = {id(d): t for t in tops.values() for d in _returned_defs(t)}
    found: dict[int, tuple[ast.FunctionDef | ast.AsyncFunctionDef, bool]] = {}
    for fn in changing:
        if id(fn) in tops:
            found.setdefault(id(fn), (fn, False))
        elif (parent := returned_by.get(id(fn))) is not None:
            found[id(parent)] = (parent, True)
        else:
            return None
    return sorted(found.values(), key=lambda f: f[0].lineno) or None


def replayed_bodies(changers: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, bool]]
                    ) -> list[ast.FunctionDef | ast.AsyncFunctionDef] | None:
    """The functions a replay of these changers runs (each, and the decorators it returns);
    None where one is not run to its end when called (a generator, a coroutine), or may change
    a container after it returned (a ``finally``)."""
    out: list[ast.FunctionDef | ast.AsyncFunctionDef] = []
    for fn, returned in changers:
        out += [fn, *(_returned_defs(fn) if returned else [])]
    for fn in out:
        if isinstance(fn, ast.AsyncFunctionDef) or any(
                isinstance(n, (ast.Yield, ast.YieldFrom, ast.Await)) or
                (isinstance(n, ast.Try) and n.finalbody) for n in own_nodes(fn.body)):
            return None
    return out


def changed_names(bodies: list[ast.FunctionDef | ast.AsyncFunctionDef]
                  ) -> tuple[frozenset[str], set[int]]:
    """The module-level names these functions change in place, and the nodes of those names
    that the changes receive (``NAME`` of ``NAME.add(x)``, of ``NAME[k] = v``)."""
    found: dict[str, tuple[list[ast.stmt], list[ast.expr], bool]] = {}
    receivers: set[int] = set()
    for fn in bodies:
        _function_mutations(fn, found)
        for st in own_statements(fn.body):
            if _mutated_name(st) is not None:
                receivers |= {id(n) for n in _receivers(st)}
    return frozenset(n for n, (_, _, changed) in found.items() if changed), receivers


def free_names(bodies: list[ast.FunctionDef | ast.AsyncFunctionDef]) -> set[str]:
    """The names these functions read that none of them binds (its parameters, its
    assignments, the functions it defines): globals, builtins, an enclosing one's."""
    free = {n.id for fn in bodies for n in ast.walk(fn)
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    for fn in bodies:
        params = params_of(fn)
        free -= {*params.names, *params.var}
        free -= {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and
                 isinstance(n.ctx, ast.Store)}
        free -= {d.name for d in ast.walk(fn)
                 if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) and d is not fn}
    return free


def _receivers(st: ast.stmt) -> list[ast.expr]:
    """The names a change in place is made on (the root of its target or receiver)."""
    roots: list[ast.expr] = []
    targets = st.targets if isinstance(st, (ast.Assign, ast.Delete)) else \
        [st.target] if isinstance(st, (ast.AugAssign, ast.AnnAssign)) else []
    if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and \
            isinstance(st.value.func, ast.Attribute):
        targets = [st.value.func.value]
    for t in targets:
        while isinstance(t, (ast.Subscript, ast.Attribute)):
            t = t.value
        if isinstance(t, ast.Name):
            roots.append(t)
    return roots


def _function_changes(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """Whether the function's own code changes the module-level ``name`` in place."""
    found: dict[str, tuple[list[ast.stmt], list[ast.expr], bool]] = {}
    _function_mutations(fn, found)
    return found.get(name, ([], [], False))[2]


def _returned_defs(fn: ast.FunctionDef | ast.AsyncFunctionDef
                   ) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The undecorated functions ``fn`` defines whose name it only returns (``def
    decorator(f): ...; return decorator``): they run only where its caller calls what it
    returned."""
    body = own_statements(fn.body)
    out = []
    for d in body:
        if not isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)) or d.decorator_list:
            continue
        loads = sum(1 for n in ast.walk(fn) if isinstance(n, ast.Name) and n.id == d.name)
        returns = sum(1 for st in body if isinstance(st, ast.Return) and
                      isinstance(st.value, ast.Name) and st.value.id == d.name)
        if returns and loads == returns:
            out.append(d)
    return out


def _function_mutations(fn: ast.FunctionDef | ast.AsyncFunctionDef,
                        found: dict[str, tuple[list[ast.stmt], list[ast.expr], bool]]) -> None:
    """What one function does to module-level names (into ``found``): the values it rebinds
    a ``global`` to, and the names it changes in place that are not its own locals."""
    def entry(name: str) -> tuple[list[ast.stmt], list[ast.expr], bool]:
        return found.setdefault(name, ([], [], False))

    body = own_statements(fn.body)
    declared = {n for g in body if isinstance(g, ast.Global) for n in g.names}
    # a name the function binds itself (a parameter, an assignment) is its own local
    local = {a.arg for a in (*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs)}
    local |= {t.id for st in body if isinstance(st, (ast.Assign, ast.AnnAssign, ast.For))
              for t in (st.targets if isinstance(st, ast.Assign) else [st.target])
              if isinstance(t, ast.Name)} - declared
    for st in body:
        if isinstance(st, (ast.Assign, ast.AnnAssign)) and st.value is not None:
            targets = st.targets if isinstance(st, ast.Assign) else [st.target]
            for t in targets:
                if isinstance(t, ast.Name) and t.id in declared:
                    entry(t.id)[1].append(st.value)
        n = _mutated_name(st)
        if n is not None and n not in local:
            stmts, rebinds, _ = entry(n)
            found[n] = (stmts, rebinds, True)
