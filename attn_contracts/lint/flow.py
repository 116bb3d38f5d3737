"""Follow the LSE through engine code, one file at a time (``AC003`` indirect, ``AC021``-``AC023``).

Each function is interpreted once, statement by statement, over a small abstract domain: an
:class:`Lse` (where it came from and its base, when the linter can see it), a producer call's
result tuple, a callable the records know (a consumer or producer, through an alias,
``functools.partial``, a lambda or a helper function of the same file), a dict literal (for
``**kwargs``), an instance of a class (for ``wrapper.run``). Anything else is unknown, and an
unknown value is never guessed at: a call the linter cannot see through ends the chain, and a
base read from an expression (``is_lse_base_on_e=self.impl.lse_base_on_e``) is trusted. Branches
are joined: a name bound to different values on two paths becomes unknown.

A helper function of the file gets a summary the first time it is called: which of its parameters
reach which consumer (and whether a parameter of its own selects the base), and what it returns
(a parameter, a parameter converted to another base, a producer's LSE). Calls apply the summary,
so ``self._merge(lse)`` and ``log2_to_ln(lse)`` are followed one level at a time, any depth.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import TypeVar, Union

from attn_contracts.call_base import CallBase
from attn_contracts.consumer import KeywordBase
from attn_contracts.findings import Code, Finding, Severity
from attn_contracts.lint.classes import dotted_name, statements
from attn_contracts.lint.knowledge import Consumer, Knowledge, Producer, disagreement

__all__ = ["flow_findings", "mentions"]

# Calls and attributes that keep an LSE's base (layout, dtype, memory: not the values' meaning).
_KEEPS_BASE = frozenset({
    "transpose", "permute", "contiguous", "float", "to", "view", "reshape", "clone", "squeeze",
    "unsqueeze", "flatten", "t", "detach", "movedim", "swapaxes", "expand", "narrow", "view_as",
    "reshape_as", "type_as", "as_strided", "unflatten", "cpu", "cuda", "double", "half"})
_KEEPS_BASE_ATTRS = frozenset({"T", "mT", "data"})
_LN2 = math.log(2)
#: the flow rules' severities: a contradiction the records show is an error; a literal, a default
#: or an omitted keyword may well be right (a warning); what the linter merely tells is a note
_SEVERITY = {Code.AC003: Severity.WARNING, Code.AC021: Severity.WARNING,
             Code.AC022: Severity.WARNING, Code.AC023: Severity.ERROR,
             Code.AC028: Severity.WARNING, Code.AC029: Severity.NOTE}
_LOG2E = 1 / math.log(2)


# --- the abstract values -------------------------------------------------------------------------
@dataclass(frozen=True)
class Lse:
    origin: str  # unique within one function's analysis
    base: str | None  # known base, or None
    what: str  # for messages
    param: str | None = None  # exactly this parameter of the function being analysed
    conv_of: str | None = None  # this parameter, converted to ``base``


@dataclass(frozen=True)
class Tup:
    items: tuple[tuple[int, Value], ...]

    def get(self, i: int) -> Value:
        return dict(self.items).get(i)


@dataclass(frozen=True)
class Const:
    name: str  # "ln2" or "log2e"


@dataclass(frozen=True)
class Lit:
    """A literal the linter can see through a name: a local, a module or class constant, a
    ``getattr`` default of an attribute the file never sets, ``not`` of one."""

    value: bool | int | float | str | None
    node: ast.expr = field(compare=False)  # where the literal is written
    how: str = field(default="", compare=False)  # " through the local variable is_e", ...

    def constant(self) -> ast.Constant:
        return ast.copy_location(ast.Constant(self.value), self.node)


@dataclass(frozen=True)
class Instance:
    cls: str  # the last name of the class it was built from


@dataclass(frozen=True)
class Arg:
    node: ast.expr
    value: Value


@dataclass(frozen=True)
class DictLit:
    items: tuple[tuple[str, Arg], ...]


@dataclass(frozen=True)
class Func:
    """A function or lambda of the linted file."""

    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
    owner: str | None  # enclosing class, for methods
    name: str


@dataclass(frozen=True)
class Target:
    """Something callable the rules know, with what ``partial`` bound to it."""

    consumer: Consumer | None = None
    producer: Producer | None = None
    func: Func | None = None
    bound_self: bool = False  # a method called through an instance: the first parameter is bound
    pos: tuple[Arg, ...] = ()
    kw: tuple[tuple[str, Arg], ...] = ()
    via: str = ""  # "partial", "alias", "wrapper": how the call reached it (messages)


Value = Union[Lse, Tup, Const, Lit, Instance, DictLit, Target, None]  # noqa: UP007 (a runtime alias)


@dataclass
class Call:
    pos: list[Arg]
    kw: dict[str, Arg]
    opaque: bool  # *args or **kwargs the linter cannot read


@dataclass
class Sink:
    """A parameter of a helper that reaches a consumer."""

    param: str
    consumer: Consumer
    base: str | None
    base_param: str | None  # a parameter of the helper forwarded to the consumer's base keyword


@dataclass
class Summary:
    params: list[str]
    defaults: dict[str, ast.expr]
    sinks: list[Sink] = field(default_factory=list)
    returns: Value = None


@dataclass
class Use:
    lse: Lse
    base: str | None
    consumer: Consumer
    node: ast.AST
    path: tuple[tuple[int, int, bool], ...] = ()


# --- the per-file analysis -----------------------------------------------------------------------
def mentions(text: str, knowledge: Knowledge) -> bool:
    """A cheap text test: can anything in this file reach a consumer or a producer at all?"""
    return knowledge.follow_all or any(name in text for name in knowledge.names)


def flow_findings(tree: ast.Module, path: str, knowledge: Knowledge,
                  module: str = "") -> Iterator[Finding]:
    """``module``: the file's dotted module path, so a definition is known as a record's."""
    yield from _File(tree, path, knowledge, module).run()


def _same_module(function: str, module: str, owner: str | None) -> bool:
    """Whether ``module`` (``vllm.v1.attention.ops.common``, or just ``common`` for a file
    outside a package) is where the record's ``function`` is defined."""
    parts = function.split(".")[:-2 if owner else -1]
    recorded = ".".join(parts)
    return bool(module) and (recorded == module or recorded.endswith(f".{module}")
                             or module.endswith(f".{recorded}"))


def _literal(node: ast.expr) -> list[str]:
    """A constant's spellings as a record may key it: ``True``, ``'e'``, ``"e"``, ``e``."""
    if not isinstance(node, ast.Constant):
        return []
    v = node.value
    return [ast.unparse(node), repr(v), f'"{v}"' if isinstance(v, str) else str(v), str(v)]


def _base_of(consumer: Consumer, node: ast.expr) -> str | None:
    return next((b for lit in _literal(node) if (b := consumer.base_of(lit)) is not None), None)


def _params(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda,
            ) -> tuple[list[str], dict[str, ast.expr]]:
    a = node.args
    positional = [p.arg for p in (*a.posonlyargs, *a.args)]
    defaults = dict(zip(positional[len(positional) - len(a.defaults):], a.defaults, strict=True))
    defaults.update({k.arg: d for k, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)
                     if d is not None})
    return positional + [k.arg for k in a.kwonlyargs], defaults


class _File:
    def __init__(self, tree: ast.Module, path: str, knowledge: Knowledge, module: str = ""):
        self.tree, self.path, self.k, self.module = tree, path, knowledge, module
        self.findings: dict[tuple[str, str], Finding] = {}
        self.top: dict[str, Func] = {}
        self.methods: dict[tuple[str, str], Func] = {}
        self.attr_types: dict[tuple[str, str], str] = {}  # (class, attr) -> class it was built from
        self.summaries: dict[int, Summary | None] = {}
        self.module_env: dict[str, Value] = {}
        self.owner: dict[int, str] = {}
        self.imported: dict[str, str] = {}
        self.renamed: dict[str, str] = {}
        self.agreed_noted: set[str] = set()
        #: (class, attr) → the one literal the class body or its methods assign (self.X = True)
        self.consts: dict[tuple[str, str], Lit | None] = {}
        #: every attribute name the file assigns anywhere (obj.X = ..., setattr(obj, "X", ...))
        self.assigned_attrs: set[str] = set()
        self._index()

    # --- setup --------------------------------------------------------------------------------
    def _index(self) -> None:
        for st in statements(self.tree):
            # the top-level package each imported name comes from: a record's function only
            # matches a name imported from its own package (flashinfer's merge_state is not
            # an engine's merge_state); a relative import says nothing, and matches
            if isinstance(st, ast.ImportFrom) and st.level == 0 and st.module:
                for alias in st.names:
                    self.imported.setdefault(alias.asname or alias.name,
                                             f"{st.module}.{alias.name}")
                    if alias.asname:  # from flashinfer.cascade import merge_state as fi_merge
                        self.renamed.setdefault(alias.asname, alias.name)
            elif isinstance(st, ast.Import):
                for alias in st.names:
                    self.imported.setdefault(alias.asname or alias.name.partition(".")[0],
                                             alias.name if alias.asname else
                                             alias.name.partition(".")[0])
        for node in self.tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.top[node.name] = Func(node, None, node.name)
        for cls in ast.walk(self.tree):  # one walk of the file, one of each method
            if isinstance(cls, ast.Attribute) and isinstance(cls.ctx, ast.Store):
                self.assigned_attrs.add(cls.attr)
            elif isinstance(cls, ast.Call) and isinstance(cls.func, ast.Name) and \
                    cls.func.id == "setattr" and len(cls.args) >= 2:
                arg = cls.args[1]
                self.assigned_attrs.add(arg.value if isinstance(arg, ast.Constant) and
                                        isinstance(arg.value, str) else "*")
            if not isinstance(cls, ast.ClassDef):
                continue
            for node in cls.body:
                if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                    for t in node.targets if isinstance(node, ast.Assign) else [node.target]:
                        if isinstance(t, ast.Name):
                            self._const(cls.name, t.id, node.value, f"class constant "
                                        f"{cls.name}.{t.id}")
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    static = any(isinstance(d, ast.Name) and d.id == "staticmethod"
                                 for d in node.decorator_list)
                    self.methods[(cls.name, node.name)] = Func(
                        node, None if static else cls.name, node.name)
                    if not static:
                        self.owner[id(node)] = cls.name
                    for sub in ast.walk(node):
                        if not isinstance(sub, ast.Assign):
                            continue
                        built = _class_name(sub.value.func) if isinstance(
                            sub.value, ast.Call) else None
                        for t in sub.targets:
                            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) \
                                    and t.value.id == "self":
                                self._const(cls.name, t.attr, sub.value,
                                            f"attribute self.{t.attr} (set to a literal)")
                                if built:
                                    self.attr_types[(cls.name, t.attr)] = built

    def _const(self, cls: str, attr: str, value: ast.expr, what: str) -> None:
        """A class attribute that is one literal wherever it is set; set to two values (or an
        expression) anywhere, it is not a constant."""
        lit = Lit(value.value, value, f" through the {what}") if isinstance(
            value, ast.Constant) and isinstance(value.value, (bool, str)) else None
        key = (cls, attr)
        if key in self.consts and self.consts[key] != lit:
            self.consts[key] = None
        else:
            self.consts.setdefault(key, lit)

    def class_const(self, cls: str, attr: str) -> Lit | None:
        return self.consts.get((cls, attr))

    def run(self) -> list[Finding]:
        module = _Frame(self, None, None)  # module level: aliases, partials, constants, calls
        module.block(self.tree.body)
        module.check_uses()
        self.module_env = module.env
        for node in ast.walk(self.tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.summary(Func(node, self.owner.get(id(node)), node.name))
        return sorted(self.findings.values(), key=lambda f: f.location)

    def report(self, code: Code, node: ast.AST, subject: str, message: str, hint: str,
               fld: str = "", found: object = None, allowed: str = "",
               severity: Severity | None = None) -> None:
        where = f"{self.path}:{getattr(node, 'lineno', 1)}:{getattr(node, 'col_offset', 0) + 1}"
        self.findings.setdefault((code.value, where), Finding(
            code, subject, message, severity=severity or _SEVERITY[code], hint=hint, field=fld,
            found=found, allowed=allowed, location=where))

    def summary(self, func: Func) -> Summary | None:
        key = id(func.node)
        if key in self.summaries:
            return self.summaries[key]
        self.summaries[key] = None  # a recursive call sees no summary
        params, defaults = _params(func.node)
        s = Summary(params, defaults)
        frame = _Frame(self, func, s)
        for i, p in enumerate(params):
            if i == 0 and func.owner is not None and p in ("self", "cls"):
                frame.env[p] = Instance(func.owner)
                continue
            frame.env[p] = Lse(f"param:{p}", None, f"parameter {p!r}", param=p)
        if isinstance(func.node, ast.Lambda):
            s.returns = frame.expr(func.node.body)
        else:
            frame.block(func.node.body)
            s.returns = frame.returned()
        frame.check_uses()
        self._defaulted_base(func, s)
        self.summaries[key] = s
        return s

    def _defaulted_base(self, func: Func, s: Summary) -> None:
        """AC021: a consumer's own definition, or a wrapper forwarding a parameter to one, whose
        base parameter has a default a caller silently gets."""
        names = {sk.base_param: sk.consumer for sk in s.sinks if sk.base_param}
        for c in self.k.consumers.get(func.name, []):
            if c.base is not None and c.keywords and c.owner_class in (None, func.owner) and \
                    _same_module(c.function, self.module, func.owner):
                names.setdefault(c.keywords[0], c)
        for name, consumer in names.items():
            default = s.defaults.get(name)
            if default is None:
                continue
            self.report(
                Code.AC021, default, func.name,
                f"{func.name}({name}={_text(default)}) gives its LSE base a default: a caller "
                f"that forgets {name} silently gets it (feeds {consumer.label})",
                f"make {name} required (no default), so every caller states the base", name,
                _text(default), "no default")


def _class_name(func: ast.expr) -> str | None:
    name = func.attr if isinstance(func, ast.Attribute) else (
        func.id if isinstance(func, ast.Name) else None)
    return name if name and name[:1].isupper() else None


def _text(node: ast.expr, limit: int = 60) -> str:
    try:
        text = ast.unparse(node)
    except RecursionError:
        return "<an expression nested too deeply to print>"
    return text if len(text) <= limit else f"{text[:limit - 1]}…"


def _const(node: ast.expr, env_value: Value) -> str | None:
    """``math.log(2)``, 0.6931…: "ln2"; ``math.log2(math.e)``, 1.4427…: "log2e"."""
    if isinstance(env_value, Const):
        return env_value.name
    if isinstance(node, ast.Constant) and isinstance(node.value, float):
        if math.isclose(node.value, _LN2, rel_tol=1e-6):
            return "ln2"
        if math.isclose(node.value, _LOG2E, rel_tol=1e-6):
            return "log2e"
    if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords:
        fn = node.func.attr if isinstance(node.func, ast.Attribute) else (
            node.func.id if isinstance(node.func, ast.Name) else "")
        arg = node.args[0]
        if fn == "log" and isinstance(arg, ast.Constant) and arg.value in (2, 2.0):
            return "ln2"
        if fn == "log2" and ((isinstance(arg, ast.Attribute) and arg.attr == "e")
                             or (isinstance(arg, ast.Constant) and isinstance(arg.value, float)
                                 and math.isclose(arg.value, math.e))):
            return "log2e"
    return None


class _Frame:
    """One function's (or the module's) interpretation."""

    def __init__(self, file: _File, func: Func | None, summary: Summary | None):
        self.f, self.func, self.s = file, func, summary
        self.env: dict[str, Value] = {}
        self.returns: list[Value] = []
        self.uses: list[Use] = []
        self.path: list[tuple[int, int, bool]] = []

    # --- statements ---------------------------------------------------------------------------
    def block(self, body: list[ast.stmt]) -> None:
        for i, stmt in enumerate(body):
            if isinstance(stmt, ast.If) and _ends(stmt.body) and not stmt.orelse:
                # `if c: ...; return` — what follows runs only when c is false: the else side
                self.expr(stmt.test)
                self.branches([stmt.body, body[i + 1:]], stmt)
                return
            self.stmt(stmt)

    def stmt(self, st: ast.stmt) -> None:
        if isinstance(st, ast.Assign):
            value = self.expr(st.value)
            for t in st.targets:
                self.assign(t, value)
        elif isinstance(st, ast.AnnAssign):
            if st.value is not None:
                self.assign(st.target, self.expr(st.value))
        elif isinstance(st, ast.AugAssign):
            current = self.expr(st.target)
            self.assign(st.target, self.binop(st.target, current, st.op, st.value))
        elif isinstance(st, ast.Expr):
            self.expr(st.value)
        elif isinstance(st, ast.Return):
            self.returns.append(None if st.value is None else self.expr(st.value))
        elif isinstance(st, ast.If):
            self.expr(st.test)
            self.branches([st.body, st.orelse], st)
        elif isinstance(st, (ast.For, ast.AsyncFor)):
            self.expr(st.iter)
            self.assign(st.target, None)
            self.branches([st.body, []])
            self.block(st.orelse)
        elif isinstance(st, ast.While):
            self.expr(st.test)
            self.branches([st.body, []])
            self.block(st.orelse)
        elif isinstance(st, (ast.With, ast.AsyncWith)):
            for item in st.items:
                self.expr(item.context_expr)
                if item.optional_vars is not None:
                    self.assign(item.optional_vars, None)
            self.block(st.body)
        elif isinstance(st, ast.Try):
            self.branches([[*st.body, *st.orelse], *([*h.body] for h in st.handlers)])
            self.block(st.finalbody)
        elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
            self.env[st.name] = Target(func=self.f.top.get(st.name) if self.func is None
                                       else Func(st, None, st.name))
        elif isinstance(st, ast.ClassDef):
            self.env[st.name] = None
        elif isinstance(st, (ast.Import, ast.ImportFrom)):
            for alias in st.names:
                bound = (alias.asname or alias.name).partition(".")[0]
                self.env.pop(bound, None)
        else:
            for child in ast.iter_child_nodes(st):
                if isinstance(child, ast.expr):
                    self.expr(child)

    def on_base(self) -> bool:
        """Inside a branch of an ``if`` on the base: a literal there is the dispatch itself."""
        return any(on for _, _, on in self.path)

    def branches(self, bodies: list[list[ast.stmt]], test: ast.If | None = None) -> None:
        before = dict(self.env)
        results = []
        # An `if` on the base (`if impl.lse_base_on_e: merge_e(...) else: merge_2(...)`) is a
        # dispatch, not a conflict: uses on its two sides are never compared.
        on_base = test is not None and "base" in _text(test.test, 1000).lower()
        for i, body in enumerate(bodies):
            self.env = dict(before)
            self.path.append((id(test) if test is not None else 0, i, on_base))
            self.block(body)
            self.path.pop()
            results.append(self.env)
        joined: dict[str, Value] = {}
        for key in set().union(*results):
            values = [r.get(key, before.get(key)) for r in results]
            joined[key] = values[0] if all(v == values[0] for v in values) else None
        self.env = joined

    def assign(self, target: ast.expr, value: Value) -> None:
        if isinstance(target, ast.Name):
            self.env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            for i, t in enumerate(target.elts):
                if isinstance(t, ast.Starred):
                    self.assign(t.value, None)
                    value = None  # later positions are no longer known
                    continue
                self.assign(t, _element(value, i))
        elif isinstance(target, ast.Attribute) and (dotted := _dotted(target)):
            self.env[dotted] = value
        elif isinstance(target, ast.Subscript) and (dotted := _dotted(target.value)):
            self.env[dotted] = None  # kwargs["backend"] = ...: no longer the dict literal it was

    def returned(self) -> Value:
        if not self.returns:
            return None
        first = self.returns[0]
        return first if all(r == first for r in self.returns) else None

    # --- expressions --------------------------------------------------------------------------
    def lookup(self, name: str) -> Value:
        if name in self.env:
            value = self.env[name]
            return replace(value, how=f" through the {'local variable' if self.func else 'name'}"
                           f" {name}") if isinstance(value, Lit) and not value.how else value
        if self.func is not None and name in self.f.module_env:
            value = self.f.module_env[name]
            return replace(value, how=f" through the module constant {name}") if isinstance(
                value, Lit) and not value.how else value
        if name in self.f.top:
            return Target(func=self.f.top[name])
        known = self.known(self.f.renamed.get(name, name), None, self.f.imported.get(name))
        if known is not None:
            return known
        return Lse(f"name:{name}", None, repr(name))

    def known(self, name: str, receiver: str | None, origin: str | None = None,
              node: ast.AST | None = None) -> Target | None:
        """A consumer or producer the records name: a method only on a receiver of its class; a
        name imported as ``origin`` (``flashinfer.cascade.merge_state``) only from the record's
        package, and where several records of that package disagree, the one whose function is
        exactly ``origin``. Consumers that still disagree (the tree's version unknown) count
        for what they agree on, and a note says so; producers that disagree match nothing."""
        found = [c for c in self.f.k.consumers.get(name, [])
                 if c.owner_class is None or c.owner_class == receiver]
        consumers = _narrow(found, origin, _consumer_key)
        if consumers:
            return Target(consumer=consumers[0])
        if origin is not None:
            package = origin.partition(".")[0]
            found = [c for c in found if c.function.partition(".")[0] == package]
            exact = [c for c in found if c.function == origin]
            found = exact or found
        if len({c.lse_args for c in found}) == 1 and len({c.record for c in found}) > 1:
            records = {c.record: c for c in found}
            returned = {c.returns_base for c in found}
            agreed = replace(found[0], record="", agreed=tuple(records.values()),
                             keywords=tuple(sorted({k for c in found for k in c.keywords})),
                             returns_base=returned.pop() if len(returned) == 1 else None)
            if node is not None and name not in self.f.agreed_noted:  # once per name and file
                self.f.agreed_noted.add(name)
                why = disagreement(sorted(records.values(), key=lambda c: c.record),
                                   self.f.k.versions)
                self.f.report(
                    Code.AC029, node, name,
                    f"{name}: {why}: only what they agree on is used", "set "
                    '[tool.attn-contracts] versions = { <library> = "<version>" } (or lint the '
                    "installed package with its dist-info); where it is set, import the "
                    "function by its module path, or fix the overlapping records",
                    "versions", None, "a known library version")
            return Target(consumer=agreed)
        producers = _narrow([p for p in self.f.k.producers.get(name, [])
                             if p.owner_class is None or p.owner_class == receiver],
                            origin, lambda p: (p.call_base or p.base, p.when, p.lse_index))
        if producers:
            return Target(producer=producers[0])
        return None

    def expr(self, node: ast.expr) -> Value:
        if isinstance(node, ast.Name):
            return self.lookup(node.id)
        if isinstance(node, ast.Attribute):
            dotted = _dotted(node)
            if dotted is not None and dotted in self.env:
                return self.env[dotted]
            inner = self.expr(node.value)
            if isinstance(inner, Lse) and node.attr in _KEEPS_BASE_ATTRS:
                return inner
            if isinstance(inner, Instance) and (lit := self.f.class_const(inner.cls, node.attr)):
                return lit
            if isinstance(inner, Instance):
                known = self.known(node.attr, inner.cls)
                if known is not None:
                    return known
                method = self.f.methods.get((inner.cls, node.attr))
                if method is not None:
                    return Target(func=method, bound_self=method.owner is not None)
                built = self.f.attr_types.get((inner.cls, node.attr))
                if built is not None:
                    return Instance(built)
            return None
        if isinstance(node, ast.Subscript):
            inner = self.expr(node.value)
            self.expr(node.slice)
            if isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, int) and (
                    isinstance(inner, Tup) or (isinstance(inner, Lse) and inner.origin.startswith(
                        "call:"))):
                return _element(inner, node.slice.value)
            return inner if isinstance(inner, Lse) else None
        if isinstance(node, ast.Call):
            return self.call(node)
        if isinstance(node, ast.BinOp):
            return self.binop(node.left, self.expr(node.left), node.op, node.right)
        if isinstance(node, ast.Constant):
            c = _const(node, None)
            if c:
                return Const(c)
            if isinstance(node.value, (bool, str)):
                return Lit(node.value, node)
            return None
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            inner = self.expr(node.operand)
            return Lit(not inner.value, inner.node, inner.how) if isinstance(inner, Lit) else None
        if isinstance(node, (ast.Tuple, ast.List)):
            values = [self.expr(e) for e in node.elts]
            if any(isinstance(e, ast.Starred) for e in node.elts):
                return None
            return Tup(tuple(enumerate(values)))
        if isinstance(node, ast.Dict):
            items = []
            for k, v in zip(node.keys, node.values, strict=True):
                value = self.expr(v)
                if k is None or not (isinstance(k, ast.Constant) and isinstance(k.value, str)):
                    return None  # {**other} or a computed key: not a dict the linter can read
                items.append((k.value, Arg(v, value)))
            return DictLit(tuple(items))
        if isinstance(node, ast.Lambda):
            return Target(func=Func(node, None, "<lambda>"))
        if isinstance(node, ast.IfExp):
            self.expr(node.test)
            a, b = self.expr(node.body), self.expr(node.orelse)
            return a if a == b else None
        if isinstance(node, (ast.Await, ast.Starred, ast.NamedExpr)):
            value = self.expr(node.value)
            if isinstance(node, ast.NamedExpr):
                self.assign(node.target, value)
            return value
        for child in ast.iter_child_nodes(node):  # BoolOp, Compare, UnaryOp, f-strings...
            if isinstance(child, ast.expr):
                self.expr(child)
        return None

    def binop(self, left_node: ast.expr, left: Value, op: ast.operator,
              right_node: ast.expr) -> Value:
        right = self.expr(right_node)
        lc, rc = _const(left_node, left), _const(right_node, right)
        if isinstance(op, ast.Div) and isinstance(left_node, ast.Constant) and \
                left_node.value in (1, 1.0) and rc:
            return Const("log2e" if rc == "ln2" else "ln2")
        lse, c = (left, rc) if isinstance(left, Lse) else (right, lc) if isinstance(
            right, Lse) and isinstance(op, ast.Mult) else (None, None)
        if lse is None or c is None or not isinstance(op, (ast.Mult, ast.Div)):
            return None
        # x * ln2 and x / log2e turn log2-sum-exp2 into ln-sum-exp; the inverse turns it back
        to_e = (c == "ln2") == isinstance(op, ast.Mult)
        base = "e" if to_e else "2"
        node = left_node
        return Lse(f"conv:{node.lineno}:{node.col_offset}", base,
                   f"{lse.what} converted to base {base} (line {node.lineno})",
                   conv_of=lse.param or lse.conv_of)

    # --- calls --------------------------------------------------------------------------------
    def args(self, node: ast.Call, target: Target | None) -> Call:
        call = Call(list(target.pos) if target else [], dict(target.kw) if target else {}, False)
        for a in node.args:
            if isinstance(a, ast.Starred):
                value = self.expr(a.value)
                if isinstance(value, Tup):
                    call.pos += [Arg(a.value, v) for _, v in value.items]
                else:
                    call.opaque = True
                continue
            call.pos.append(Arg(a, self.expr(a)))
        for kw in node.keywords:
            value = self.expr(kw.value)
            if kw.arg is not None:
                call.kw[kw.arg] = Arg(kw.value, value)
            elif isinstance(value, DictLit):
                call.kw.update(value.items)
            else:
                call.opaque = True
        return call

    def callee(self, func: ast.expr) -> Target | None:
        """What a call's function expression is, by records first, then by the file's code."""
        if isinstance(func, ast.Name):
            for env in (self.env, self.f.module_env if self.func is not None else {}):
                if func.id in env:
                    value = env[func.id]
                    return replace(value, via=value.via or "alias") if isinstance(
                        value, Target) else None
            known = self.known(self.f.renamed.get(func.id, func.id), None,
                               self.f.imported.get(func.id), func)
            if known is not None:
                return known
            return Target(func=self.f.top[func.id]) if func.id in self.f.top else None
        if isinstance(func, ast.Attribute):
            inner = self.expr(func.value)
            receiver = inner.cls if isinstance(inner, Instance) else None
            root = (_dotted(func.value) or "").partition(".")[0]
            module = self.f.imported.get(root) if root and root not in self.env else None
            dotted = _dotted(func.value) or ""
            origin = None if module is None else f"{module}{dotted[len(root):]}.{func.attr}"
            known = self.known(func.attr, receiver, origin, func)
            if known is not None:
                return known
            if receiver is not None and (method := self.f.methods.get((receiver, func.attr))):
                return Target(func=method, bound_self=method.owner is not None)
            return None
        value = self.expr(func)
        return value if isinstance(value, Target) else None

    def call(self, node: ast.Call) -> Value:
        fname = _last(node.func)
        if (c := _const(node, None)) is not None:
            return Const(c)
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("mul_", "div_") and \
                len(node.args) == 1 and _dotted(node.func.value) is not None:
            current = self.expr(node.func.value)
            op = ast.Mult() if node.func.attr == "mul_" else ast.Div()
            self.assign(node.func.value, self.binop(node.func.value, current, op, node.args[0]))
            return self.expr(node.func.value)
        if fname == "partial" and node.args:
            inner = self.callee(node.args[0])
            rest = ast.Call(func=node.args[0], args=node.args[1:], keywords=node.keywords)
            ast.copy_location(rest, node)
            call = self.args(rest, None)
            if inner is None:
                return None
            bound = replace(inner, pos=(*inner.pos, *call.pos),
                            kw=(*inner.kw, *call.kw.items()), via="partial")
            if bound.consumer is not None:  # a literal bound here is wrong for every call
                self.consumer_base(bound.consumer, call, node, report_omitted=False,
                                   via="partial")
            return bound
        if fname == "getattr" and isinstance(node.func, ast.Name) and len(node.args) in (2, 3) \
                and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            return self.getattr_(node)
        if fname == "dict" and not node.args and isinstance(node.func, ast.Name):
            call = self.args(node, None)
            return None if call.opaque else DictLit(tuple(call.kw.items()))
        if isinstance(node.func, ast.Attribute) and node.func.attr in _KEEPS_BASE:
            receiver = self.expr(node.func.value)
            for a in node.args:
                self.expr(a)
            if isinstance(receiver, Lse):
                return receiver
            if isinstance(node.func.value, ast.Name) and node.func.value.id == "torch" and \
                    node.args and isinstance(first := self.expr(node.args[0]), Lse):
                return first
            return None
        target = self.callee(node.func)
        if target is None:
            self.args(node, None)  # a consumer call may sit in an argument
            for a in node.args:  # it may also change them in place: forget what they were
                if isinstance(a, (ast.Name, ast.Attribute)) and (d := _dotted(a)):
                    self.env[d] = None
            if isinstance(node.func, ast.Attribute) and (d := _dotted(node.func.value)) and (
                    node.func.attr.endswith("_") or isinstance(self.env.get(d), DictLit)):
                self.env[d] = None  # lse.add_(...), kwargs.update(...): changed in place
            built = _class_name(node.func)
            if built is not None:  # Wrapper(...): an instance, for the methods records name
                return Instance(built)
            name = fname or "a call"
            return Lse(f"call:{node.lineno}:{node.col_offset}", None,
                       f"the result of {name}() (line {node.lineno})")
        call = self.args(node, target)
        if target.consumer is not None:
            return self.consume(target.consumer, call, node, target.via)
        if target.producer is not None:
            return self.produce(target.producer, call, node)
        if target.func is not None:
            return self.apply(target, call, node)
        return None

    def getattr_(self, node: ast.Call) -> Value:
        """``getattr(module, "cp_lse_ag_out_rs")``: the function; ``getattr(self, "_flag",
        False)`` of an attribute the file never sets: its default."""
        receiver, name = node.args[0], str(node.args[1].value)  # type: ignore[attr-defined]
        inner = self.expr(receiver)
        if len(node.args) == 3:
            default = self.expr(node.args[2])
            if isinstance(inner, Instance) and isinstance(default, Lit) and \
                    not {name, "*"} & self.f.assigned_attrs:
                return Lit(default.value, default.node,
                           f" through getattr(..., {name!r}, {default.value!r}), whose attribute "
                           "this file never sets")
            return None
        if isinstance(inner, Instance):
            return self.expr(ast.copy_location(ast.Attribute(receiver, name, ast.Load()), node))
        root = (_dotted(receiver) or "").partition(".")[0]
        module = self.f.imported.get(root) if root and root not in self.env else None
        origin = None if module is None else \
            f"{module}{(_dotted(receiver) or '')[len(root):]}.{name}"
        return self.known(name, None, origin, node)

    def consumer_base(self, c: Consumer, call: Call, node: ast.Call, *,
                      report_omitted: bool = True, via: str = "") -> tuple[str | None, str | None]:
        """(the base this call selects, or None; the caller's parameter forwarded to it)."""
        if c.fixed_base is not None:
            return c.fixed_base, None
        for kw in c.keywords:
            if kw not in call.kw:
                continue
            arg = call.kw[kw]
            lit = _lit(arg)
            if lit is not None:
                if self.on_base():  # if impl.lse_base_on_e: f(..., True) else: f(..., False)
                    return _base_of(c, lit.constant()), None
                direct = not via and any(k.value is arg.node for k in node.keywords)
                how = {"partial": " through functools.partial", "alias": " through an alias",
                       "": "" if direct else " through a **kwargs dict"}.get(via, f" ({via})")
                how = f"{lit.how} (line {lit.node.lineno})" if lit.how else how
                self.f.report(
                    Code.AC003, arg.node, c.last,
                    f"{c.last}({kw}={lit.value!r}) gets a literal LSE base{how}; it "
                    "must come from the backend's record or class",
                    f"pass {kw}=<backend>.lse_base_on_e or plan from the record", kw,
                    lit.value, "an expression read from the backend")
                return _base_of(c, lit.constant()), None
            forwarded = arg.node.id if isinstance(arg.node, ast.Name) and self.s is not None \
                and arg.node.id in self.s.params else None
            return None, forwarded
        if call.opaque or not report_omitted or c.base is None:
            return None, None
        default = c.default_base
        if not all(isinstance(x.base, KeywordBase) for x in (c.agreed or (c,))):
            return default, None  # one of the agreeing records takes no keyword: none omitted
        if default is not None:
            kw = c.keywords[0]
            self.f.report(
                Code.AC022, node, c.last,
                f"{c.last}(...) omits {kw} and silently gets the default base {default} "
                f"({c.label})", f"pass {kw}= read from the backend (e.g. "
                f"impl.lse_base_on_e)", kw, None, f"{kw}=<backend's base>")
        return default, None

    def consume(self, c: Consumer, call: Call, node: ast.Call, via: str) -> Value:
        base, forwarded = self.consumer_base(c, call, node, via=via)
        read: set[str | None] = set()
        for spec in c.lse_args:
            arg = call.pos[int(spec)] if spec.isdigit() and int(spec) < len(call.pos) else \
                call.kw.get(spec)
            if arg is not None and isinstance(arg.value, Lse):
                self.use(arg.value, base, forwarded, c, node)
                read.add(arg.value.base)
        if c.returns_base is None:
            return None
        # a combine that returns the merged LSE is a producer too: (out, lse), lse in its base
        merged = c.returns_base if c.returns_base in ("2", "e") else (
            base if base is not None else (read.pop() if len(read) == 1 else None))
        return Tup(((1, Lse(f"merged:{node.lineno}:{node.col_offset}", merged,
                            f"the merged LSE of {c.label} (line {node.lineno})")),))

    def use(self, lse: Lse, base: str | None, forwarded: str | None, c: Consumer,
            node: ast.AST) -> None:
        self.uses.append(Use(lse, base, c, node, tuple(self.path)))
        if self.s is not None and lse.param is not None:
            self.s.sinks.append(Sink(lse.param, c, base, forwarded))

    def produce(self, p: Producer, call: Call, node: ast.Call) -> Value:
        maybe = False  # return_lse=<an expression>: the call may return the LSE
        for kw, literal in p.when:
            arg = call.kw.get(kw)
            if arg is not None and literal in _literal(arg.node):
                continue
            if (arg is not None and not isinstance(arg.node, ast.Constant)) or (
                    arg is None and call.opaque):
                maybe = True
                continue
            return None  # called without return_lse=True: no LSE
        base: str | None = p.base
        if p.call_base is not None:
            base = self.call_base(p, p.call_base, call, node)
        if maybe:
            return None  # what it returns depends on an expression: nothing to follow
        lse = Lse(f"producer:{node.lineno}:{node.col_offset}", base,
                  f"the LSE of {p.last}() (producer record {p.record}, line {node.lineno})")
        return Tup(((p.lse_index, lse),))

    def call_base(self, p: Producer, cb: CallBase, call: Call, node: ast.Call) -> str | None:
        """The base a call chooses (AC028 where it leaves it to dispatch). An argument read
        from an expression is trusted; a ``**dict`` built in this function that never names
        the keyword does not pass it."""
        given = {k: (_text(a.node) if isinstance(a.node, ast.Constant) else "<expr>")
                 for k, a in call.kw.items()}
        base = cb.resolve(given)
        read = given.get(cb.keyword) == "<expr>" or (
            cb.default_by is not None and given.get(cb.default_by) == "<expr>")
        if base is not None or read or (call.opaque and self._may_pass(node, cb.keyword)):
            return base
        by = ""
        if cb.default_by is not None:
            shown = given.get(cb.default_by) or (
                "not given literally" if call.opaque else f"{cb.default_by_omitted} by default")
            by = f", {cb.default_by} {shown}" if not shown.startswith("'") else \
                f", {cb.default_by}={shown}"
        chosen = "not passed" if cb.keyword not in given else f"= {given[cb.keyword]}"
        self.f.report(
            Code.AC028, node, p.last,
            f"{p.last}(...) returns an LSE but leaves its base to dispatch ({cb.keyword} "
            f"{chosen}{by}): the kernel picked at run time decides between base "
            f"{' and '.join(cb.bases())} (producer record {p.record})",
            f"select an explicit base for stable units: pass {cb.pass_hint()}",
            cb.keyword, given.get(cb.keyword), cb.pass_hint())
        return None

    def _may_pass(self, node: ast.Call, keyword: str) -> bool:
        """Whether a ``**x`` of this call can carry ``keyword``: ``x`` is a parameter (anything
        may be in it), or the function names the keyword anywhere (``x["keyword"] = ...``)."""
        for kw in node.keywords:
            if kw.arg is not None:
                continue
            if not isinstance(kw.value, ast.Name) or (
                    self.s is not None and kw.value.id in self.s.params):
                return True
            if self.func is None or isinstance(self.func.node, ast.Lambda):
                return True
            for sub in ast.walk(self.func.node):
                if (isinstance(sub, ast.Constant) and sub.value == keyword) or (
                        isinstance(sub, ast.keyword) and sub.arg == keyword):
                    return True
                if isinstance(sub, ast.arg) and sub.arg == kw.value.id:
                    return True
        return False

    def apply(self, target: Target, call: Call, node: ast.Call) -> Value:
        summary = self.f.summary(target.func) if target.func is not None else None
        if summary is None:
            return None
        params = summary.params[1:] if target.bound_self else summary.params
        bound: dict[str, Arg] = dict(zip(params, call.pos, strict=False))
        bound.update({k: v for k, v in call.kw.items() if k in params})
        for sink in summary.sinks:
            arg = bound.get(sink.param)
            if arg is None or not isinstance(arg.value, Lse):
                continue
            base, forwarded = sink.base, None
            if sink.base_param is not None:
                base, forwarded = self.wrapper_base(target, summary, sink, bound, call, node)
            self.use(arg.value, base, forwarded, sink.consumer, node)
        return self.result(summary.returns, bound, node,
                           target.func.name if target.func else "?")

    def wrapper_base(self, target: Target, summary: Summary, sink: Sink,
                     bound: dict[str, Arg], call: Call, node: ast.Call,
                     ) -> tuple[str | None, str | None]:
        name, c = sink.base_param or "", sink.consumer
        arg = bound.get(name)
        if arg is not None:
            if isinstance(arg.node, ast.Constant) and not self.on_base():
                self.f.report(
                    Code.AC003, arg.node, target.func.name if target.func else c.last,
                    f"{target.func.name if target.func else '?'}({name}={arg.node.value!r}) "
                    f"passes a literal LSE base that it forwards to {c.last}; it must come from "
                    "the backend's record or class",
                    f"pass {name}=<backend>.lse_base_on_e", name, arg.node.value,
                    "an expression read from the backend")
                return _base_of(c, arg.node), None
            fwd = arg.node.id if isinstance(arg.node, ast.Name) and self.s is not None \
                and arg.node.id in self.s.params else None
            return None, fwd
        default = summary.defaults.get(name)
        if call.opaque or default is None:
            return None, None
        fn = target.func.name if target.func else "?"
        self.f.report(
            Code.AC022, node, fn, f"{fn}(...) omits {name} and silently gets its default "
            f"{_text(default)}, the base it forwards to {c.label}",
            f"pass {name}= read from the backend", name, None, f"{name}=<backend's base>")
        return _base_of(c, default), None

    def result(self, ret: Value, bound: dict[str, Arg], node: ast.Call, fn: str) -> Value:
        if isinstance(ret, Tup):
            return Tup(tuple((i, self.result(v, bound, node, fn)) for i, v in ret.items))
        if not isinstance(ret, Lse):
            return None
        if ret.param is not None:
            arg = bound.get(ret.param)
            return arg.value if arg is not None and isinstance(arg.value, Lse) else None
        if ret.conv_of is not None:
            arg = bound.get(ret.conv_of)
            if arg is None or not isinstance(arg.value, Lse):
                return None
            return Lse(f"conv:{node.lineno}:{node.col_offset}", ret.base,
                       f"{arg.value.what} converted to base {ret.base} by {fn}() (line "
                       f"{node.lineno})", conv_of=arg.value.param or arg.value.conv_of)
        if ret.origin.startswith(("name:", "expr:")):
            return None  # a global the helper reads: not this call's value
        return Lse(f"call:{node.lineno}:{node.col_offset}:{ret.origin}", ret.base,
                   f"{ret.what} via {fn}() (line {node.lineno})")

    # --- AC023 --------------------------------------------------------------------------------
    def check_uses(self) -> None:
        by_origin: dict[str, list[Use]] = {}
        for u in self.uses:
            by_origin.setdefault(u.lse.origin, []).append(u)
        for uses in by_origin.values():
            lse = uses[0].lse
            known = [u for u in uses if u.base is not None]
            if lse.base is not None:
                for u in known:
                    if u.base != lse.base:
                        self.f.report(
                            Code.AC023, u.node, u.consumer.last,
                            f"{lse.what} is base {lse.base} but reaches {u.consumer.label}, "
                            f"which reads base {u.base} here",
                            "convert it where the bases change (x * math.log(2): base 2 → e) or "
                            "select the consumer's base from the producer's record",
                            "base", u.base, lse.base)
                continue
            a = known[0] if known else None
            first = next((u for u in known if a is not None and u.base != a.base
                          and not _dispatched(a, u)), None)
            if a is not None and first is not None:
                self.f.report(
                    Code.AC023, first.node, first.consumer.last,
                    f"{lse.what} reaches {a.consumer.label} as base {a.base} (line "
                    f"{getattr(a.node, 'lineno', '?')}) and {first.consumer.label} as base "
                    f"{first.base}: one of the two is wrong", "convert it between the two, or "
                    "select both bases from the producer's record", "base", first.base, str(a.base))


Rec = TypeVar("Rec", Consumer, Producer)


def _consumer_key(c: Consumer) -> object:
    return (c.base, tuple(sorted(c.lse_args)))


def _narrow(found: list[Rec], origin: str | None, key: Callable[[Rec], object]) -> list[Rec]:
    if origin is not None:
        package = origin.partition(".")[0]
        found = [r for r in found if r.function.partition(".")[0] == package]
    if len({key(r) for r in found}) > 1 and origin is not None:
        found = [r for r in found if r.function == origin]
    return found if len({key(r) for r in found}) == 1 else []


def _lit(arg: Arg) -> Lit | None:
    """The literal an argument is, written there or seen through a name."""
    if isinstance(arg.node, ast.Constant) and (arg.node.value is None or isinstance(
            arg.node.value, (bool, int, float, str))):
        return Lit(arg.node.value, arg.node)
    return arg.value if isinstance(arg.value, Lit) else None


def _ends(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def _element(value: Value, i: int) -> Value:
    """Element ``i`` of a tuple value; of an unknown call's result, a fresh identity."""
    if isinstance(value, Tup):
        return value.get(i)
    if isinstance(value, Lse) and value.origin.startswith("call:"):
        return Lse(f"{value.origin}[{i}]", None, f"element {i} of {value.what}")
    return None


def _dispatched(a: Use, b: Use) -> bool:
    """The two uses sit on different sides of an ``if`` on the base."""
    for (ia, ba, on_base), (ib, bb, _) in zip(a.path, b.path, strict=False):
        if ia != ib:
            return False
        if ba != bb:
            return on_base
    return False


_dotted = dotted_name  # ``a.b.c`` of a name or an attribute chain, else None


def _last(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None
