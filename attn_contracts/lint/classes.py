"""Class hierarchies across every linted file, read with ``ast`` only (nothing is imported).

A base is resolved the way Python would find it: through the importing module's own classes and
its imports (``from engine.attention import AttentionImpl``, ``import engine.attention as ea`` →
``ea.AttentionImpl``, relative imports, re-exports of a package's ``__init__``) to a *module path
and name*. A file's module path comes from its package (the folders above it that hold an
``__init__.py``); files outside a package are top-level modules of their folder. When two files of
the set claim the same module path, the one beside the importer (same root folder) wins, else the
base is unresolved. A base that cannot be resolved to a linted class is kept as an explicit
"unresolved" name, so a rule can say the fact may come from there, and the result never depends
on the order the files were given in.

Resolution is linear in the number of classes: facts are computed once per class and attribute,
from its bases' facts, with an explicit stack (no recursion, so a 5,000-deep chain is fine).
"""

from __future__ import annotations

import ast
import bisect
import re
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

__all__ = ["ClassInfo", "Hierarchy", "ModuleInfo", "collect_classes", "dotted_name", "module_info",
           "module_level", "relevant_functions", "statements"]

#: how many re-export hops (``from a import X`` in ``b``, ``from b import X`` in ``c``) are followed
_MAX_HOPS = 32


@dataclass(eq=False)
class ClassInfo:
    name: str
    path: str
    #: the decorators (the class's body is not kept: class facts cross process boundaries)
    decorators: list[ast.expr]
    #: the base expressions as written (``engine.AttentionImpl``), for messages
    bases: list[str]
    #: class-level assignments: attribute → (value node, line, column)
    attrs: dict[str, tuple[ast.expr, int, int]] = field(default_factory=dict)
    base_nodes: list[ast.expr] = field(default_factory=list)
    module: str = ""
    #: the line of its ``class`` statement (the program finds its body by it)
    line: int = 0
    #: class-level annotations without a value: attribute → annotation (``impl: AttentionImpl``)
    annotations: dict[str, ast.expr] = field(default_factory=dict)
    #: the methods its body defines: name → (first line, last line)
    methods: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: those of them that are properties (``@property``, ``@cached_property``)
    properties: frozenset[str] = frozenset()
    #: their return annotations (what a call the linter does not follow returns)
    returns: dict[str, ast.expr] = field(default_factory=dict)
    #: the attributes of ``attrs`` whose entry is a store made after the class body ran
    #: (read from the program, no statement of the body: later body statements precede it)
    set_after: set[str] = field(default_factory=set)


@dataclass(eq=False)
class ModuleInfo:
    """What one file binds at any level: its classes and the names its imports bring in."""

    path: str
    name: str  # dotted module path ("engine.attention.backends.flashinfer")
    root: str  # the folder the top-level package (or the module itself) sits in
    is_package: bool
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    #: ``from M import X as Y``: Y → (M, X); relative imports already made absolute
    from_imports: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: ``import a.b.c`` binds a → a; ``import a.b as x`` binds x → a.b
    module_imports: dict[str, str] = field(default_factory=dict)
    #: other names the module is importable under, each with its root (the regular-package
    #: name where namespace packages above it give it a longer one)
    aliases: tuple[tuple[str, str], ...] = ()
    #: the lines that name a producer, a consumer or a base attribute (where the LSE's flow can
    #: start or end): a function holding none, and calling none that does, is never interpreted
    trigger_lines: tuple[int, ...] = ()
    #: module-level functions (name → (first line, last line)) and assigned names, also inside
    #: ``if``/``try``
    defs: dict[str, tuple[int, int]] = field(default_factory=dict)
    assigns: frozenset[str] = frozenset()
    #: the module-level functions' return annotations
    returns: dict[str, ast.expr] = field(default_factory=dict)
    #: functions (``f``, ``Class.m``) whose lines hold a trigger line, or call one of this
    #: module that does (by name, ``f(`` or ``self.m(``): the ones a call is followed into
    relevant: frozenset[str] = frozenset()
    #: functions whose lines compute a logarithm (``m + tl.log2(s)``: an LSE written by hand),
    #: or call one of this module that does (a kernel's launch too): a call is followed into
    #: them for what they hand back, though no flow starts there
    computes_logs: frozenset[str] = frozenset()


def statements(tree: ast.Module) -> Iterator[ast.stmt]:
    """Every statement, at any depth (class and import statements live only here); expressions
    are not entered, which makes this several times cheaper than ``ast.walk``."""
    stack: list[ast.stmt] = list(reversed(tree.body))
    while stack:
        node = stack.pop()
        yield node
        if type(node) not in _COMPOUND:  # most statements hold no other (one set lookup)
            continue
        for name in ("body", "orelse", "finalbody"):
            block = getattr(node, name, None)
            if block:
                stack.extend(reversed(block))
        for handler in getattr(node, "handlers", ()):
            stack.extend(reversed(handler.body))
        for case in getattr(node, "cases", ()):
            stack.extend(reversed(case.body))


#: the statements that hold statements
_COMPOUND = frozenset(
    t for t in vars(ast).values()
    if isinstance(t, type) and issubclass(t, ast.stmt) and
    any(f in ("body", "orelse", "finalbody", "handlers", "cases") for f in t._fields))

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)


def own_nodes(body: list[ast.stmt]) -> Iterator[ast.AST]:
    """Every node of ``body`` at any depth, statements and expressions, that belongs to the
    scope ``body`` is in: a function, class or lambda nested in it is yielded, not entered
    (what is inside it runs in a scope of its own, when that is called)."""
    stack: list[ast.AST] = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))


def own_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements among :func:`own_nodes`."""
    return [n for n in own_nodes(body) if isinstance(n, ast.stmt)]


#: how many folders without ``__init__.py`` (PEP 420 namespace packages inside a regular
#: package: SGLang's ``sglang/srt/``) may sit between a module and its top-level package
_NAMESPACE_GAP = 4


def _package_top(folder: Path) -> Path:
    """The folder the top-level package of a module in ``folder`` sits in: above the highest
    ancestor with an ``__init__.py``, crossing at most :data:`_NAMESPACE_GAP` folders without
    one in a row (namespace packages inside a regular package)."""
    top, gap, here = folder, 0, folder
    while here.name and here != here.parent:
        if (here / "__init__.py").is_file():
            top, gap = here.parent, 0
        else:
            gap += 1
            if gap > _NAMESPACE_GAP:
                break
        here = here.parent
    return top


def module_info(path: Path, tree: ast.Module) -> ModuleInfo:
    """The module path of ``path`` (from the ``__init__.py`` files above it, namespace packages
    inside a regular package included) and its bindings."""
    own = [] if path.name == "__init__.py" else [path.stem]
    # the regular-package name: the folders above holding an ``__init__.py``, without a gap
    short, folder = list(own), path.parent
    while (folder / "__init__.py").is_file() and folder.name and folder != folder.parent:
        short.insert(0, folder.name)
        folder = folder.parent
    # the name through namespace packages up to the highest regular package (``sglang.srt.*``)
    top = _package_top(path.parent)
    try:
        parts = list(path.parent.relative_to(top).parts) + own
    except ValueError:
        parts, top = short, folder
    name = ".".join(parts) or path.stem
    info = ModuleInfo(str(path), name, str(top), path.name == "__init__.py")
    alias = ".".join(short) or path.stem
    if alias != name:  # ``from attention_base import X`` beside it resolves too
        info.aliases = ((alias, str(folder)),)
    _imports(info, tree, name if info.is_package else name.rpartition(".")[0])
    _module_defs(info, tree)
    return info


def _imports(info: ModuleInfo, tree: ast.Module, package: str) -> None:
    """The module's imports (anywhere in it, the first binding of a name kept): ``from`` imports
    resolved against ``package``, ``import a.b`` binding ``a``."""
    for node in statements(tree):
        if isinstance(node, ast.ImportFrom):
            source = _absolute(package, node.module, node.level)
            if source is None:
                continue
            for imported in node.names:
                if imported.name != "*":
                    info.from_imports.setdefault(imported.asname or imported.name,
                                                 (source, imported.name))
        elif isinstance(node, ast.Import):
            for imported in node.names:
                if imported.asname:
                    info.module_imports.setdefault(imported.asname, imported.name)
                else:
                    first = imported.name.partition(".")[0]
                    info.module_imports.setdefault(first, first)


def _module_defs(info: ModuleInfo, tree: ast.Module) -> None:
    """The module-level functions (lines, return annotations) and assigned names."""
    assigned: set[str] = set()
    for st in module_level(tree.body):
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            info.defs[st.name] = (st.lineno, st.end_lineno or st.lineno)
            if st.returns is not None:
                info.returns[st.name] = st.returns
        elif isinstance(st, ast.Assign):
            assigned.update(t.id for t in st.targets if isinstance(t, ast.Name))
            assigned.update(e.id for t in st.targets if isinstance(t, (ast.Tuple, ast.List))
                            for sub in t.elts
                            for e in (sub.value if isinstance(sub, ast.Starred) else sub,)
                            if isinstance(e, ast.Name))
        elif isinstance(st, ast.AnnAssign) and st.value is not None and \
                isinstance(st.target, ast.Name):
            assigned.add(st.target.id)
        elif isinstance(st, ast.For):
            assigned.update(loop_bindings(st))
    info.assigns = frozenset(assigned)


def loop_bindings(st: ast.For) -> dict[str, ast.expr]:
    """What a loop leaves its target names bound to once it ends, as an expression of its
    iterable: the last item's part (``for k, v in PAIRS:`` binds ``v`` to ``PAIRS[-1][1]``),
    which a function defined beside it reads when it is called (a closure over a global is
    late-bound). None for a loop that may stop early (``break``) or rebinds its target in its
    body, and for a starred target: which item is left is then not known."""
    body = [n for b in st.body for n in ast.walk(b)]
    if any(isinstance(n, ast.Break) for n in body):
        return {}
    rebound = {t.id for n in body if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign,
                                                    ast.For))
               for target in (n.targets if isinstance(n, ast.Assign) else [n.target])
               for t in ast.walk(target) if isinstance(t, ast.Name)}
    out: dict[str, ast.expr] = {}

    def bind(target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Name) and target.id not in rebound:
            out[target.id] = ast.copy_location(value, st.iter)
        elif isinstance(target, (ast.Tuple, ast.List)) and not any(
                isinstance(e, ast.Starred) for e in target.elts):
            for i, e in enumerate(target.elts):
                bind(e, ast.Subscript(value, ast.Constant(i), ast.Load()))

    bind(st.target, ast.Subscript(st.iter, ast.UnaryOp(ast.USub(), ast.Constant(1)), ast.Load()))
    for node in out.values():
        ast.fix_missing_locations(node)
    return out


def module_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements at module level, also inside ``if``/``try``/``with``/``match`` blocks there
    (optional imports, platform switches), never inside functions or classes."""
    stack = list(reversed(body))
    while stack:
        st = stack.pop()
        yield st
        if isinstance(st, (ast.If, ast.Try, ast.With, ast.AsyncWith)) or (
                hasattr(ast, "TryStar") and isinstance(st, ast.TryStar)):
            blocks = [st.body, getattr(st, "orelse", []), getattr(st, "finalbody", [])]
            blocks += [h.body for h in getattr(st, "handlers", [])]
            for block in reversed(blocks):
                stack.extend(reversed(block))
        elif isinstance(st, ast.Match):
            # (its cases' assignments; a function or class a case defines is not indexed: which
            # case's definition the name holds is decided by the match, not by the last one)
            for case in reversed(st.cases):
                stack.extend(reversed([b for b in case.body if not isinstance(
                    b, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]))


def _absolute(package: str, module: str | None, level: int) -> str | None:
    if level == 0:
        return module
    pkg = package.split(".") if package else []
    if level - 1 > len(pkg):
        return None  # beyond the top-level package: Python raises ImportError here
    base = pkg[: len(pkg) - (level - 1)]
    return ".".join([*base, *([module] if module else [])]) or None


def _dotted(expr: ast.expr) -> str | None:
    """A base class expression: ``a.b.C`` → "a.b.C"; ``Base[T]`` → "Base"; anything else (a
    call, a subscript of a call) → None."""
    if isinstance(expr, ast.Subscript):  # Generic[T], Base[...]
        return _dotted(expr.value)
    return dotted_name(expr)


def dotted_name(expr: ast.expr) -> str | None:
    """``a.b.c`` → "a.b.c" for a name or a chain of attributes on one; anything else → None."""
    names: list[str] = []
    while isinstance(expr, ast.Attribute):
        names.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    names.append(expr.id)
    return ".".join(reversed(names))


def collect_classes(tree: ast.Module, path: str, module: ModuleInfo | None = None,
                    ) -> list[ClassInfo]:
    out = []
    top_level = {id(n) for n in tree.body}
    for node in statements(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        written = [_dotted(e) for e in node.bases]
        info = ClassInfo(node.name, path, node.decorator_list, [w for w in written if w],
                         base_nodes=list(node.bases), module=module.name if module else "",
                         line=node.lineno)
        _class_body(node, info)
        _instance_attrs(node, info)
        out.append(info)
        # Top-level classes are what an import can reach; the last definition wins, as in Python.
        if module is not None and id(node) in top_level:
            module.classes[node.name] = info
    return out


def assignment(stmt: ast.stmt) -> tuple[list[ast.expr], ast.expr | None]:
    """The targets and the value of a statement that assigns one (``x = v``, ``x: T = v``);
    none for any other (``x: T`` alone assigns nothing)."""
    if isinstance(stmt, ast.Assign):
        return stmt.targets, stmt.value
    if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        return [stmt.target], stmt.value
    return [], None


def _is_property(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any((isinstance(d, ast.Name) and d.id in ("property", "cached_property")) or
               (isinstance(d, ast.Attribute) and d.attr == "cached_property")
               for d in fn.decorator_list)


def _class_body(node: ast.ClassDef, info: ClassInfo) -> None:
    """What the class body itself defines: its assignments, annotations, methods (with their
    lines and return annotations) and properties."""
    for stmt in node.body:
        targets, value = assignment(stmt)
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            info.annotations[stmt.target.id] = stmt.annotation
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            info.methods[stmt.name] = (stmt.lineno, stmt.end_lineno or stmt.lineno)
            if stmt.returns is not None:
                info.returns[stmt.name] = stmt.returns
            if _is_property(stmt):
                info.properties |= {stmt.name}
        for t, v in _unpacked(targets, value):
            if isinstance(t, ast.Name):
                info.attrs[t.id] = (v, stmt.lineno, stmt.col_offset)


def _unpacked(targets: list[ast.expr], value: ast.expr | None,
              ) -> Iterator[tuple[ast.expr, ast.expr]]:
    """Each target with the expression it is bound to: ``a, b = x, y`` binds ``a`` to ``x``
    (a tuple unpacked item by item where both sides have as many items and no star)."""
    if value is None:
        return
    for t in targets:
        if isinstance(t, (ast.Tuple, ast.List)) and isinstance(value, (ast.Tuple, ast.List)) \
                and len(t.elts) == len(value.elts) and \
                not any(isinstance(e, ast.Starred) for e in (*t.elts, *value.elts)):
            yield from (p for te, ve in zip(t.elts, value.elts, strict=True)
                        for p in _unpacked([te], ve))
        else:
            yield t, value


def _instance_attrs(node: ast.ClassDef, info: ClassInfo) -> None:
    """What every instance of the class reads as an attribute besides its class body's
    assignments: a property (:func:`_property_value`), and what
    ``__init__`` stores on ``self`` unconditionally (it shadows the class's own assignment, as
    an instance attribute does)."""
    for stmt in node.body:
        if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = stmt.body[1:] if stmt.body and isinstance(stmt.body[0], ast.Expr) and \
            isinstance(stmt.body[0].value, ast.Constant) else stmt.body
        if stmt.name in info.properties:
            info.attrs.setdefault(stmt.name, _property_value(stmt, body))
        if stmt.name != "__init__" or not stmt.args.args:
            continue
        me = stmt.args.args[0].arg
        for st in body:
            targets, value = assignment(st)
            for t, v in _unpacked(targets, value):
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and \
                        t.value.id == me:
                    info.attrs[t.attr] = (v, st.lineno, st.col_offset)


def _property_value(fn: ast.FunctionDef | ast.AsyncFunctionDef, body: list[ast.stmt],
                    ) -> tuple[ast.expr, int, int]:
    """What a property's name holds for the class body's readers, with its place: the
    expression of a body that is one ``return <expr>``; for any other its name, the object
    the class body binds (a read on an instance runs it; it shadows a base class's value all
    the same), placed at its one ``return``, where its value is decided."""
    if len(body) == 1 and isinstance(body[0], ast.Return) and body[0].value is not None:
        return body[0].value, body[0].lineno, body[0].col_offset
    returns = [st for st in statements(ast.Module(body, [])) if
               isinstance(st, ast.Return) and st.value is not None]
    at: ast.stmt = returns[0] if len(returns) == 1 else fn
    name = ast.Name(fn.name, ast.Load(), lineno=at.lineno, col_offset=at.col_offset,
                    end_lineno=at.lineno, end_col_offset=at.col_offset + len(fn.name))
    return name, at.lineno, at.col_offset


#: a resolved base: a linted class, or the qualified name of one that is not in the set
Base = ClassInfo | str


class Hierarchy:
    """Every class of the linted set, with its bases resolved through the imports."""

    def __init__(self, classes: list[ClassInfo], modules: list[ModuleInfo] | None = None):
        self.classes = classes
        self._modules: dict[str, list[ModuleInfo]] = {}
        for m in sorted(modules or [], key=lambda m: m.path):
            self._modules.setdefault(m.name, []).append(m)
            for alias, _ in m.aliases:
                self._modules.setdefault(alias, []).append(m)
        self._by_path = {m.path: m for m in modules or []}
        self._bases: dict[int, list[Base]] = {}
        self._definer: dict[str, dict[int, ClassInfo | None]] = {}
        self._unresolved: dict[int, tuple[str, ...]] = {}
        self._linear: dict[int, list[ClassInfo]] = {}
        #: whether ``c``'s ``__init__`` runs for an instance of ``cls`` (``init_runs(cls, c)``),
        #: as the interpreter follows ``super().__init__`` and ``Base.__init__(self)``; None:
        #: every one is taken to run
        self.init_runs: Callable[[ClassInfo, ClassInfo], bool] | None = None

    # --- resolution -------------------------------------------------------------------------------
    def bases(self, cls: ClassInfo) -> list[Base]:
        key = id(cls)
        if key not in self._bases:
            module = self._by_path.get(cls.path)
            out: list[Base] = []
            for expr in cls.base_nodes:
                dotted = _dotted(expr)
                if dotted is None or dotted == "object":
                    continue
                out.append(self.resolve(module, dotted) if module else dotted)
            self._bases[key] = out
        return self._bases[key]

    def resolve(self, module: ModuleInfo, dotted: str) -> Base:
        """A dotted class name as written in ``module``: the linted class, or its qualified name."""
        head, _, rest = dotted.partition(".")
        if not rest:
            if head in module.classes:
                return module.classes[head]
            if head in module.from_imports:
                return self._lookup(module, *module.from_imports[head])
            return dotted
        if head in module.module_imports:
            target = module.module_imports[head]
            mod_path, _, name = f"{target}.{rest}".rpartition(".")
            return self._lookup(module, mod_path, name)
        if head in module.from_imports:  # from pkg import mod; mod.Class
            src, orig = module.from_imports[head]
            mod_path, _, name = f"{src}.{orig}.{rest}".rpartition(".")
            return self._lookup(module, mod_path, name)
        return dotted

    def _module(self, importer: ModuleInfo, name: str) -> ModuleInfo | None:
        found = self._modules.get(name, [])
        if len(found) == 1:
            return found[0]
        beside = [m for m in found if importer.root in (m.root, *(r for _, r in m.aliases))]
        return beside[0] if len(beside) == 1 else None

    def _lookup(self, importer: ModuleInfo, mod_path: str, name: str) -> Base:
        qualified = f"{mod_path}.{name}"
        for _ in range(_MAX_HOPS):
            module = self._module(importer, mod_path)
            if module is None:
                return qualified
            if name in module.classes:
                return module.classes[name]
            if name not in module.from_imports:
                return qualified
            importer = module
            mod_path, name = module.from_imports[name]
        return qualified

    # --- facts, memoised per class -----------------------------------------------------------------
    def _post_order(self, cls: ClassInfo, done: dict[int, Any]) -> list[ClassInfo]:
        """``cls`` and its not-yet-computed ancestors, every class after its bases (cycles cut)."""
        order: list[ClassInfo] = []
        on_stack: set[int] = set()
        stack: list[tuple[ClassInfo, bool]] = [(cls, False)]
        while stack:
            c, expanded = stack.pop()
            if id(c) in done:
                continue
            if expanded:
                on_stack.discard(id(c))
                done[id(c)] = None  # placeholder; the caller fills it in this order
                order.append(c)
                continue
            if id(c) in on_stack:
                continue  # a cycle (class A(B), class B(A)): Python rejects it; cut it here
            on_stack.add(id(c))
            stack.append((c, True))
            for b in reversed(self.bases(c)):
                if isinstance(b, ClassInfo) and id(b) not in done and id(b) not in on_stack:
                    stack.append((b, False))
        for c in order:
            del done[id(c)]
        return order

    def definer(self, cls: ClassInfo, attr: str) -> ClassInfo | None:
        """The first class in ``cls``'s method resolution order that assigns ``attr`` itself:
        the class Python reads ``cls.attr`` from."""
        memo = self._definer.setdefault(attr, {})
        if id(cls) not in memo:
            memo[id(cls)] = next((c for c in self.linear(cls) if attr in c.attrs and
                                  self._stored_for(cls, c, attr)), None)
        return memo[id(cls)]

    def _stored_for(self, cls: ClassInfo, c: ClassInfo, attr: str) -> bool:
        """Whether ``c``'s ``attr`` is there for an instance of ``cls``: a class body's
        always; a store in ``c``'s ``__init__`` only where that ``__init__`` runs for it (a
        mixin whose ``__init__`` an explicit ``Base.__init__(self)`` skips stores nothing)."""
        span = c.methods.get("__init__")
        line = c.attrs[attr][1]
        if self.init_runs is None or span is None or not span[0] <= line <= span[1]:
            return True
        return self.init_runs(cls, c)

    def changed(self) -> None:
        """A class's attributes changed after its body was read (a store below it, a class
        decorator): what was looked up is looked up again."""
        self._definer.clear()

    def linear(self, cls: ClassInfo) -> list[ClassInfo]:
        """``cls`` and its known ancestors in Python's method resolution order (the C3
        linearization: ``class K(A, Mixin)`` reads ``A``'s whole chain before ``Mixin`` unless
        they share a base); the left-to-right depth-first order where the bases admit no C3
        order, which Python would refuse. A base outside the linted classes is left out."""
        key = id(cls)
        if key not in self._linear:
            self._linear[key] = [cls]  # a cycle through it reads it alone
            bases = [b for b in self.bases(cls) if isinstance(b, ClassInfo)]
            merged = _c3([*(list(self.linear(b)) for b in bases), list(bases)])
            self._linear[key] = [cls, *merged] if merged is not None else self._depth_first(cls)
        return self._linear[key]

    def _depth_first(self, cls: ClassInfo) -> list[ClassInfo]:
        seen: list[ClassInfo] = []
        ids: set[int] = set()
        stack: list[ClassInfo] = [cls]
        while stack:
            c = stack.pop()
            if id(c) in ids:
                continue
            ids.add(id(c))
            seen.append(c)
            stack.extend(b for b in reversed(self.bases(c)) if isinstance(b, ClassInfo))
        return seen

    def unresolved(self, cls: ClassInfo) -> tuple[str, ...]:
        """Qualified names of every base, anywhere above ``cls``, that is not a linted class."""
        memo = self._unresolved
        if id(cls) not in memo:
            for c in self._post_order(cls, memo):
                parts: list[tuple[str, ...]] = []
                for b in self.bases(c):
                    parts.append((b,) if isinstance(b, str) else memo.get(id(b), ()))
                if len(parts) == 1:
                    memo[id(c)] = parts[0]  # shared, so a long chain stays linear
                else:
                    memo[id(c)] = tuple(dict.fromkeys(n for p in parts for n in p))
        return memo[id(cls)]

    def mro(self, cls: ClassInfo) -> tuple[list[ClassInfo], list[str]]:
        """Known ancestors in method resolution order (``cls`` first, :meth:`linear`), and the
        names of bases that are not in the linted set (for callers that want the whole list)."""
        return list(self.linear(cls)), list(self.unresolved(cls))

    def value(self, cls: ClassInfo, attr: str) -> ast.expr | None:
        owner = self.definer(cls, attr)
        return None if owner is None else owner.attrs[attr][0]


def _c3(sequences: list[list[ClassInfo]]) -> list[ClassInfo] | None:
    """The C3 merge of the bases' linearizations and the bases' list: each step takes the
    first head that is in no other list's tail; None where none is (no consistent order)."""
    seqs = [list(s) for s in sequences if s]
    out: list[ClassInfo] = []
    while seqs:
        tails = {id(c) for s in seqs for c in s[1:]}
        head = next((s[0] for s in seqs if id(s[0]) not in tails), None)
        if head is None:
            return None
        out.append(head)
        seqs = [rest for s in seqs if (rest := [c for c in s if c is not head])]
    return out


def relevant_functions(module: ModuleInfo, classes: list[ClassInfo], lines: list[str],
                       triggers: tuple[int, ...]) -> frozenset[str]:
    """The module's functions and methods whose lines hold a trigger line, and (a few rounds)
    those whose text calls one of them by name (``helper(`` for a module function, ``self.m(``
    or ``.m(`` for a method, ``kernel[grid](`` for a kernel's launch)."""
    if not triggers:
        return frozenset()
    spans: dict[str, tuple[int, int]] = dict(module.defs)
    for cls in classes:
        if module.classes.get(cls.name) is cls:
            spans.update({f"{cls.name}.{m}": span for m, span in cls.methods.items()})
    marks = sorted(triggers)

    def holds(span: tuple[int, int]) -> bool:
        i = bisect.bisect_left(marks, span[0])
        return i < len(marks) and marks[i] <= span[1]

    found = {q for q, span in spans.items() if holds(span)}
    for _ in range(4):
        names = {q.rpartition(".")[2] for q in found}
        if not names:
            break
        # a call, or a Triton kernel's launch (``kernel[grid](...)``)
        pattern = re.compile(r"\b(?:" + "|".join(sorted(map(re.escape, names))) + r")\s*[(\[]")
        more = {q for q, (a, b) in spans.items() if q not in found and
                pattern.search("\n".join(lines[a - 1:b]))}
        if not more:
            break
        found |= more
    return frozenset(found)
