"""The linted program as one thing: every module, its bindings, its classes and their hierarchy.

The per-file pass (run in worker processes) reads each file into a :class:`ModuleInfo` and its
:class:`ClassInfo` s; this module joins them into a :class:`Program` in the parent process and
answers what the interpreter asks across files:

- which file a module path names (:meth:`Program.module`), and its syntax tree, parsed on demand
  (most files are never asked for: only those the LSE's flow reaches);
- what a name of a module is bound to (:meth:`Program.binding`): a function, a class, a module,
  an import of something outside the program, a module-level assignment;
- a class's methods, its ancestors in method-resolution order and its subclasses (for a call on
  an instance that may be of any subclass: class-hierarchy analysis).

Nothing is imported or run. Names resolve as Python would find them statically: a module's own
top-level bindings (also inside ``if``/``try`` at module level), then its imports, following
re-exports through package ``__init__`` files.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import cast

from attn_contracts.facts import reexports
from attn_contracts.lint.classes import ClassInfo
from attn_contracts.lint.classes import Hierarchy
from attn_contracts.lint.classes import ModuleInfo
from attn_contracts.lint.classes import loop_bindings
from attn_contracts.lint.classes import module_level
from attn_contracts.lint.classes import own_nodes
from attn_contracts.lint.classes import statements
from attn_contracts.lint.values import Func

__all__ = ["AttributeUses", "Binding", "Program"]

#: how many re-export hops are followed (``from a import X`` in b, ``from b import X`` in c, ...)
_MAX_HOPS = 32
#: a class with more subclasses than this is not dispatched over (``nn.Module``-like roots)
MAX_SUBCLASSES = 96

FuncNode = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Binding:
    """What a module-level name is bound to.

    ``kind``: ``"def"`` (``node`` a function), ``"class"`` (``cls``), ``"module"`` (``target``, a
    module of the program), ``"external"`` (``target``, a qualified name outside it),
    ``"assign"`` (``node`` the assigned expression, ``module`` where it is), ``"getattr"`` (a
    name ``module`` does not bind, which its ``__getattr__`` answers)."""

    kind: str
    module: str  # the path of the module that binds it
    name: str
    node: ast.AST | None = None
    cls: ClassInfo | None = None
    target: str = ""


@dataclass
class _Module:
    info: ModuleInfo
    tree: ast.Module | None = None
    failed: bool = False
    indexed: bool = False  # defs, assigns and class_nodes read from ``tree``
    #: module-level bindings: name → (kind, node); imports are in ``info``
    defs: dict[str, FuncNode] = field(default_factory=dict)
    assigns: dict[str, ast.expr] = field(default_factory=dict)
    class_nodes: dict[tuple[str, int], ast.ClassDef] = field(default_factory=dict)


def _accessor(fn: FuncNode) -> bool:
    """``@name.setter`` / ``@name.deleter`` over ``def name``: a property's other accessor."""
    return any(isinstance(d, ast.Attribute) and d.attr in ("setter", "deleter") and
               isinstance(d.value, ast.Name) and d.value.id == fn.name for d in fn.decorator_list)


class Program:
    """Every module of the linted set (and of ``--project-root``), joined."""

    def __init__(self, modules: list[ModuleInfo], classes: list[ClassInfo],
                 trees: Mapping[str, ast.Module] | None = None):
        """``trees``: the syntax trees the per-file pass already parsed (by path), so a file
        is parsed once per run; a file not given is parsed on demand."""
        self.hierarchy = Hierarchy(classes, modules)
        trees = trees or {}
        self._mods: dict[str, _Module] = {m.path: _Module(m, trees.get(m.path))
                                          for m in modules}
        self._by_name: dict[str, list[str]] = {}
        for m in sorted(modules, key=lambda m: m.path):
            self._by_name.setdefault(m.name, []).append(m.path)
            for alias, _ in m.aliases:
                self._by_name.setdefault(alias, []).append(m.path)
        self._classes: dict[tuple[str, str], ClassInfo] = {}
        for c in classes:
            self._classes.setdefault((c.path, c.name), c)
        self._subclasses: dict[int, list[ClassInfo]] | None = None
        #: per class (by identity), it and the classes below it (None: past the bound)
        self._families: dict[int, list[ClassInfo] | None] = {}
        self._lines: dict[str, list[str]] = {}
        self._methods: dict[int, dict[str, FuncNode]] = {}
        self._uses: dict[int, dict[str, AttributeUses]] = {}

    # --- modules ------------------------------------------------------------------------------
    def info(self, path: str) -> ModuleInfo | None:
        m = self._mods.get(path)
        return None if m is None else m.info

    def text(self, path: str, start: int, end: int) -> str:
        """Lines ``start``-``end`` (1-based, inclusive) of a file, read once and kept."""
        lines = self._lines.get(path)
        if lines is None:
            try:
                lines = Path(path).read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                lines = []
            self._lines[path] = lines
        return "\n".join(lines[start - 1:end])

    def infos(self) -> list[ModuleInfo]:
        return [m.info for m in self._mods.values()]

    def module(self, name: str, importer: str | None = None) -> str | None:
        """The path of the module ``name``: the one file that claims it, or the one beside the
        importer (same root folder) where several do."""
        found = self._by_name.get(name, [])
        if len(found) == 1:
            return found[0]
        if importer is not None and importer in self._mods:
            root = self._mods[importer].info.root
            beside = [p for p in found if root in (self._mods[p].info.root,
                                                   *(r for _, r in self._mods[p].info.aliases))]
            if len(beside) == 1:
                return beside[0]
        return None

    def tree(self, path: str) -> ast.Module | None:
        m = self._mods.get(path)
        if m is None or m.failed:
            return None
        if m.tree is None:
            try:
                text = Path(path).read_bytes()
                m.tree = ast.parse(text, filename=path)
            except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
                m.failed = True  # the per-file pass reported it (AC000)
                return None
        if not m.indexed:
            m.indexed = True
            for st in module_level(m.tree.body):
                if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    m.defs[st.name] = st
                elif isinstance(st, ast.Assign):
                    for t in st.targets:
                        if isinstance(t, ast.Name):
                            m.assigns[t.id] = st.value
                        elif isinstance(t, (ast.Tuple, ast.List)):
                            m.assigns.update(_unpacked_items(t, st.value))
                elif isinstance(st, ast.AnnAssign) and st.value is not None and \
                        isinstance(st.target, ast.Name):
                    m.assigns[st.target.id] = st.value
                elif isinstance(st, ast.For):
                    m.assigns.update(loop_bindings(st))
            for node in statements(m.tree):
                if isinstance(node, ast.ClassDef):
                    m.class_nodes[(node.name, node.lineno)] = node
        return m.tree

    # --- names --------------------------------------------------------------------------------
    def binding(self, path: str, name: str, *, foreign: bool = False) -> Binding | None:
        """What ``name`` is bound to at the top of module ``path``, following imports into the
        program (re-exports included) and naming what lies outside it. ``foreign``: asked from
        outside the module (``m.name``), where a name it does not bind is its ``__getattr__``'s
        answer (PEP 562); its own code never asks that (its globals, then the builtins)."""
        for _ in range(_MAX_HOPS):
            m = self._mods.get(path)
            if m is None:
                return None
            info = m.info
            # (imported and assigned: the assignment is a fallback for a failed import)
            if name in info.classes or name in info.defs or (
                    name in info.assigns and name not in info.from_imports):
                return self._defined(path, name, info)
            if name in info.from_imports:
                found = self._from_import(path, name, info)
                if isinstance(found, Binding):
                    return found
                path, name = found  # a name of the program's: follow the re-export
                foreign = True
                continue
            if name in info.module_imports:
                dotted = info.module_imports[name]
                target = self.module(dotted, path)
                if target is not None:
                    return Binding("module", path, name, target=target)
                return Binding("external", path, name, target=dotted)
            if foreign and "__getattr__" in info.defs and not name.startswith("__"):
                # a name the module does not bind, looked up through its ``__getattr__``
                # (PEP 562), called with the name
                return Binding("getattr", path, name)
            return None
        return None

    def _defined(self, path: str, name: str, info: ModuleInfo) -> Binding | None:
        """A name the module itself binds: a class, a function or an assignment."""
        if name in info.classes:
            return Binding("class", path, name, cls=info.classes[name])
        if name in info.defs:
            return Binding("def", path, name)
        if not self.active(path) and not name.lstrip("_").isupper():
            # a module naming nothing the rules know: only its constants are read
            # (``_LN_2 = math.log(2)`` of a conversion helper), not its other values
            return None
        value = self._assign(path, name)
        return None if value is None else Binding("assign", path, name, node=value)

    def _from_import(self, path: str, name: str, info: ModuleInfo) -> Binding | tuple[str, str]:
        """What ``from source import orig as name`` binds: a module or a name outside the
        program, or (module path, name) of the program's to follow."""
        source, orig = info.from_imports[name]
        dotted = f"{source}.{orig}"
        modules, constants = reexports()
        if dotted in modules or dotted in constants:
            # an engine's re-export of a Triton module or constant (``from vllm.triton_utils
            # import tl``): what the data cites it is where Triton is installed, whether or not
            # the module is linted (it binds a placeholder where Triton is missing)
            return Binding("external", path, name, target=modules.get(dotted, dotted))
        target = self.module(source, path)
        if target is None:
            sub = self.module(f"{source}.{orig}", path)
            if sub is not None:
                return Binding("module", path, name, target=sub)
            return Binding("external", path, name, target=dotted)
        t = self._mods[target].info
        if orig not in t.classes and orig not in t.defs and orig not in t.assigns and \
                orig not in t.from_imports and orig not in t.module_imports and \
                not ("__getattr__" in t.defs and not orig.startswith("__")):
            sub = self.module(f"{source}.{orig}", path)
            if sub is not None:
                return Binding("module", path, name, target=sub)
            # the module does not bind it (a star import, a C extension's name): known
            # by its qualified name, as an import of a module outside the program is
            return Binding("external", path, name, target=f"{source}.{orig}")
        return target, orig

    def _assign(self, path: str, name: str) -> ast.expr | None:
        return self._mods[path].assigns.get(name) if self.tree(path) is not None else None

    def member(self, module_path: str, attr: str) -> Binding | None:
        """``module.attr`` for a module of the program: a binding, or a submodule."""
        b = self.binding(module_path, attr, foreign=True)
        if b is not None:
            return b
        info = self.info(module_path)
        if info is None:
            return None
        sub = self.module(f"{info.name}.{attr}", module_path)
        return Binding("module", module_path, attr, target=sub) if sub is not None else None

    def function(self, path: str, qualname: str) -> FuncNode | None:
        """A top-level function (``name``) or a method (``Class.name``) of module ``path``
        (parsed now if it was not)."""
        if self.tree(path) is None:
            return None
        cls_name, _, fn = qualname.rpartition(".")
        if not cls_name:
            return self._mods[path].defs.get(fn)
        cls = self._classes.get((path, cls_name))
        return None if cls is None else self.methods(cls).get(fn)

    def definition(self, func: Func) -> object:
        """The node of a function value (a def, or a lambda; None where it is not found): the
        one it carries (a lambda, a nested function), else its module's top-level function or
        method."""
        return func.node if func.node is not None else self.function(func.path, func.qualname)

    def span(self, path: str, qualname: str) -> tuple[int, int] | None:
        """The lines of a top-level function or a method, without parsing its module."""
        info = self.info(path)
        if info is None:
            return None
        cls_name, _, fn = qualname.rpartition(".")
        if not cls_name:
            return info.defs.get(fn)
        cls = self._classes.get((path, cls_name))
        return None if cls is None else cls.methods.get(fn)

    def active(self, path: str) -> bool:
        """Whether a module names anything the rules know (its trigger lines): only such
        modules' method bodies are read for what they store on ``self``."""
        info = self.info(path)
        return info is not None and bool(info.trigger_lines)

    # --- classes ------------------------------------------------------------------------------
    def cls(self, key: tuple[str, str]) -> ClassInfo | None:
        return self._classes.get(key)

    def class_node(self, cls: ClassInfo) -> ast.ClassDef | None:
        if self.tree(cls.path) is None:
            return None
        return self._mods[cls.path].class_nodes.get((cls.name, cls.line))

    def methods(self, cls: ClassInfo) -> dict[str, FuncNode]:
        """The functions a class body defines itself: of a property, its getter (what reading
        it runs; ``@name.setter`` and ``@name.deleter`` define the same property again)."""
        key = id(cls)
        if key not in self._methods:
            node = self.class_node(cls)
            self._methods[key] = {} if node is None else {
                st.name: st for st in node.body if isinstance(st, (ast.FunctionDef,
                                                                   ast.AsyncFunctionDef))
                and not _accessor(st)}
        return self._methods[key]

    def entry_methods(self, cls: ClassInfo) -> dict[str, FuncNode]:
        """The methods of a class body where what the class hands out is read: all but its
        private helpers (``_decode``, not a dunder) another of its methods reaches through its
        instance (``self._decode(...)``). Such a helper is read through its caller, after
        whatever the caller does to its result (an LSE converted, a flag set beside it); read on
        its own it would hand out what no caller returns. A public method may be called from
        outside too: always an entry. All of them where every one is so reached (a cycle)."""
        methods = self.methods(cls)
        reached: set[str] = set()
        for name, fn in methods.items():
            receiver = fn.args.posonlyargs[:1] or fn.args.args[:1]
            if not receiver:
                continue
            me = receiver[0].arg
            reached.update(n.attr for n in own_nodes(fn.body)
                           if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and
                           n.value.id == me and n.attr in methods and n.attr != name and
                           n.attr.startswith("_") and not n.attr.startswith("__"))
        entries = {n: fn for n, fn in methods.items() if n not in reached}
        return entries or methods

    def attribute_uses(self, cls: ClassInfo) -> dict[str, AttributeUses]:
        """Per method of a class body, how it names attributes (:class:`AttributeUses`),
        read once."""
        key = id(cls)
        if key not in self._uses:
            self._uses[key] = {m: _attribute_uses(fn) for m, fn in self.methods(cls).items()}
        return self._uses[key]

    def mro(self, cls: ClassInfo) -> list[ClassInfo]:
        return self.hierarchy.mro(cls)[0]

    def lookup(self, cls: ClassInfo, name: str, after: ClassInfo | None = None,
               ) -> ClassInfo | None:
        """The first class in ``cls``'s MRO (after ``after``, for ``super()``) that defines
        method ``name`` (read from the per-file pass: nothing is parsed)."""
        order = self.mro(cls)
        if after is not None:
            order = order[order.index(after) + 1:] if after in order else self.mro(after)[1:]
        return next((c for c in order if name in c.methods), None)

    def subclasses(self, cls: ClassInfo) -> list[ClassInfo]:
        """``cls`` and every class of the program below it (any depth), ``cls`` first; only
        ``cls`` where there are more than :data:`MAX_SUBCLASSES`."""
        family = self.family(cls)
        return [cls] if family is None else family

    def family(self, cls: ClassInfo) -> list[ClassInfo] | None:
        """``cls`` and every class of the program below it (any depth), ``cls`` first; None
        where there are more than :data:`MAX_SUBCLASSES`."""
        key = id(cls)
        if key not in self._families:
            self._families[key] = self._below(cls)
        return self._families[key]

    def _below(self, cls: ClassInfo) -> list[ClassInfo] | None:
        if self._subclasses is None:
            below: dict[int, list[ClassInfo]] = {}
            for c in self.hierarchy.classes:
                for b in self.hierarchy.bases(c):
                    if isinstance(b, ClassInfo):
                        below.setdefault(id(b), []).append(c)
            self._subclasses = below
        out: list[ClassInfo] = [cls]
        seen = {id(cls)}
        i = 0
        while i < len(out):
            for sub in self._subclasses.get(id(out[i]), []):
                if id(sub) not in seen:
                    seen.add(id(sub))
                    out.append(sub)
                    if len(out) > MAX_SUBCLASSES:
                        return None
            i += 1
        return out

    def resolve_base(self, cls: ClassInfo, expr: str) -> ClassInfo | str:
        """A dotted class name as written in module ``cls.path`` (for annotations)."""
        info = self.info(cls.path)
        if info is None:
            return expr
        return self.hierarchy.resolve(info, expr)


def _unpacked_items(target: ast.Tuple | ast.List, value: ast.expr) -> dict[str, ast.expr]:
    """``a, *rest, b = value`` at a module's top level: each name with the expression of its
    part (``tuple(value)[0]``, ``list(tuple(value)[1:-1])``, ``tuple(value)[-1]``), read like
    any assignment; a
    nested target or two starred ones bind nothing read."""
    elts = target.elts
    starred = [i for i, e in enumerate(elts) if isinstance(e, ast.Starred)]
    if len(starred) > 1 or not all(isinstance(e.value if isinstance(e, ast.Starred) else e,
                                              ast.Name) for e in elts):
        return {}
    star = starred[0] if starred else None
    out: dict[str, ast.expr] = {}
    for i, e in enumerate(elts):
        if star is None or i < star:
            index: ast.expr = ast.Constant(i)
        elif i > star:
            index = ast.Constant(i - len(elts))
        else:
            after = len(elts) - star - 1
            index = ast.Slice(ast.Constant(star), ast.Constant(-after) if after else None)
        # unpacking iterates the value (a dict's keys, a set's elements): tuple() does too
        whole = ast.Call(ast.Name("tuple", ast.Load()), [value], [])
        part: ast.expr = ast.Subscript(whole, index, ast.Load())
        if i == star:
            part = ast.Call(ast.Name("list", ast.Load()), [part], [])
        name = e.value if isinstance(e, ast.Starred) else e
        out[cast(ast.Name, name).id] = ast.fix_missing_locations(ast.copy_location(part, value))
    return out


@dataclass(frozen=True)
class AttributeUses:
    """How one method names attributes: called on ``self``, named any other way, the strings
    it holds, and whether it looks one up by a name it computes (``getattr(self, x)``)."""

    self_calls: frozenset[str]
    named: frozenset[str]
    strings: frozenset[str]
    dynamic: bool


def _attribute_uses(fn: ast.AST) -> AttributeUses:
    called: set[int] = set()
    self_calls: set[str] = set()
    attrs: list[ast.Attribute] = []
    strings: set[str] = set()
    dynamic = False
    for node in ast.walk(fn):
        if isinstance(node, ast.Attribute):
            attrs.append(node)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            strings.add(node.value)
        elif isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
                    func.value.id == "self":
                called.add(id(func))
                self_calls.add(func.attr)
            last = func.attr if isinstance(func, ast.Attribute) else \
                func.id if isinstance(func, ast.Name) else ""
            looked_up = node.args[1:2] if last == "getattr" else \
                node.args[:1] if last in ("methodcaller", "attrgetter") else []
            dynamic = dynamic or any(not isinstance(a, ast.Constant) for a in looked_up)
    named = frozenset(a.attr for a in attrs if id(a) not in called)
    return AttributeUses(frozenset(self_calls), named, frozenset(strings), dynamic)
