"""Build the model of the linted program once and run the rules over it.

The per-file pass gives every module and class (:mod:`attn_contracts.lint.classes`); here they
become one :class:`~attn_contracts.lint.program.Program`, the interpreter follows the LSE from
every function of the files that name a producer, a consumer or a base attribute (and from every
backend class's own methods, for the kernels it calls), and the rules of
:mod:`attn_contracts.lint.edges` judge what it found. Findings are kept only where they are
located in a file the user asked about (``--project-root`` files only teach the model).
"""

from __future__ import annotations

import ast
import bisect
import functools
import re
from collections.abc import Callable
from collections.abc import Collection
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from attn_contracts.consumer import KeywordBase
from attn_contracts.findings import Code
from attn_contracts.findings import Finding
from attn_contracts.findings import Location
from attn_contracts.lint.callers import Given
from attn_contracts.lint.calls import Params
from attn_contracts.lint.calls import params_of
from attn_contracts.lint.classes import ClassInfo
from attn_contracts.lint.classes import Hierarchy
from attn_contracts.lint.classes import ModuleInfo
from attn_contracts.lint.containers import one_bool
from attn_contracts.lint.containers import truth
from attn_contracts.lint.contracts import run_contract
from attn_contracts.lint.contracts import run_producer
from attn_contracts.lint.edges import Declaration
from attn_contracts.lint.edges import attribute_declaration
from attn_contracts.lint.edges import class_findings
from attn_contracts.lint.edges import declaration
from attn_contracts.lint.edges import edge_findings
from attn_contracts.lint.edges import fact_findings
from attn_contracts.lint.inferred import Fact
from attn_contracts.lint.inferred import Kernel
from attn_contracts.lint.inferred import Use
from attn_contracts.lint.interpret import Interpreter
from attn_contracts.lint.program import Program
from attn_contracts.lint.record_index import Consumer
from attn_contracts.lint.record_index import Knowledge
from attn_contracts.lint.values import ClassKey
from attn_contracts.lint.values import DictV
from attn_contracts.lint.values import ExtInst
from attn_contracts.lint.values import Flag
from attn_contracts.lint.values import Inst
from attn_contracts.lint.values import Lit
from attn_contracts.lint.values import Union_
from attn_contracts.lint.values import Value
from attn_contracts.lint.values import alternatives

__all__ = ["ClassFacts", "FileFacts", "ProgramModel", "build_model", "model_findings"]


@dataclass
class FileFacts:
    """What the per-file pass tells the model about one file."""

    path: str
    report: bool  # findings located here are reported
    mentions: bool  # its text names a producer, a consumer or a base attribute
    module: ModuleInfo | None
    classes: list[ClassInfo]
    #: its functions with their qualified names and classes, once asked for
    functions: list[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str, str | None]] | None = None
    #: its syntax tree where the per-file pass kept it (else parsed again on demand)
    tree: ast.Module | None = None


def model_findings(files: list[FileFacts], knowledge: Mapping[str, Knowledge], *,
                   returns_attrs: tuple[str, ...], base_attrs: tuple[str, ...],
                   configured: bool = False) -> list[Finding]:
    """``knowledge``: each file's records (at its own tree's releases). ``configured``: the
    project named its base attributes itself (so a class without one is ``AC001`` even in a
    tree that declares none yet)."""
    return build_model(files, knowledge, returns_attrs=returns_attrs, base_attrs=base_attrs,
                       configured=configured).findings


@dataclass(frozen=True)
class ClassFacts:
    """What the model knows of one class of the program (for an engine's mapping).

    ``declaration``: its LSE declaration, own or inherited (None: it says it returns none);
    ``kernels``: the producer calls its own methods reach, with the base each returns there;
    ``uses``: the consumer calls that LSE (its methods' returns, or what its kernels produce)
    reaches, and those told the base by reading the class's declared attribute
    (``self.impl.lse_base_on_e`` on it or a base class of it)."""

    cls: ClassInfo
    declaration: Declaration | None
    kernels: frozenset[Kernel]
    uses: tuple[Use, ...]


class ProgramModel:
    """The model of one linted program after the rules ran: ``findings`` (what lint reports)
    and :meth:`facts` per class. Asking for a class the rules did not judge interprets its
    methods then; what that finds is not added to ``findings``."""

    def __init__(self, program: Program, interp: Interpreter, findings: list[Finding],
                 kernels: dict[int, frozenset[Kernel]], returns_attrs: tuple[str, ...],
                 base_attrs: tuple[str, ...]) -> None:
        self.program = program
        self.findings = findings
        self._interp = interp
        self._kernels = kernels
        self._attrs = (returns_attrs, base_attrs)

    @property
    def steps(self) -> int:
        """The interpreter's work so far: statements, expressions and calls it interpreted."""
        return self._interp.steps

    @property
    def uses(self) -> tuple[Use, ...]:
        """Every consumer call an LSE the model follows reaches (the edges the rules judged)."""
        return tuple(self._interp.uses.values())

    def find_class(self, module: str, name: str) -> ClassInfo | None:
        """The class ``name`` of the module with dotted name ``module`` (None: not in it)."""
        path = self.program.module(module)
        return None if path is None else self.program.cls((path, name))

    def facts(self, cls: ClassInfo) -> ClassFacts:
        h = self.program.hierarchy
        returns_attrs, base_attrs = self._attrs
        found = self._kernels.get(id(cls))
        if found is None:
            with self._quiet():
                found = self._kernels[id(cls)] = _own_kernels(self._interp, self.program, cls)
        key = (cls.path, cls.name)
        mro = {(c.path, c.name) for c in self.program.mro(cls)}
        produced = {k.where for k in found}  # its own kernels' calls: their LSEs are its
        uses = []
        for use in self._interp.uses.values():
            ways = use.given.options if use.given.kind == "choice" else (use.given,)
            flags = {w.flag.owner.cls for w in ways if w.flag is not None and
                     w.flag.owner is not None and (not w.flag.owner.exact or
                                                   w.flag.owner.cls == key)}
            if any(s.impl == key or (s.site in produced and s.key.startswith("producer:"))
                   for s in use.lse.sources) or \
                    flags & mro:
                uses.append(use)
        return ClassFacts(cls, declaration(h, cls, returns_attrs, base_attrs, own=False), found,
                          # by the place's text, as when places were text (line 10 before 9)
                          tuple(sorted(uses, key=lambda u: str(u.where))))

    def kernels_of(self, cls: ClassInfo, method: str, *, returned: bool = False,
                   assume: Callable[[ast.expr], bool | None] | None = None,
                   ) -> frozenset[Kernel]:
        """The producer calls one method of ``cls`` reaches (the method found along its MRO,
        ``self`` bound to ``cls`` itself, so its calls dispatch to ``cls``'s overrides): an
        engine's decode path, apart from the prefill kernels the same class runs.
        ``returned``: only the calls whose LSE the method returns (all it reaches where the
        flow loses the LSE before the return); ``assume``: decides the
        ``if`` tests it knows (the configuration being checked), so one side is read."""
        definer = self.program.lookup(cls, method)
        fn = None if definer is None else self.program.methods(definer).get(method)
        if definer is None or fn is None:
            return frozenset()
        with self._quiet():
            return frozenset(self._interp.run_function(
                definer.path, f"{definer.name}.{method}", fn,
                Inst((cls.path, cls.name), exact=True), returned=returned, assume=assume))

    def naming(self, word: str) -> list[str]:
        """The program's modules whose text names ``word`` (a name, as a word)."""
        return [path for path, _ in self._interp.naming(word)]

    def answer(self, path: str, function: str, args: tuple[str | bool | int | None, ...],
               ) -> tuple[bool, object]:
        """What the module-level function ``function`` of ``path`` returns when called with
        the literal ``args``, as the interpreter reads its body: (True, the literal) where it
        returns one literal, (False, None) where it cannot be read (not a function of the
        program, or a value that is not one literal on every path)."""
        fn = self.program.function(path, function)
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False, None
        with self._quiet():
            value = self._interp.evaluate(path, function, fn, args)
        return (True, value.value) if isinstance(value, Lit) else (False, None)

    def answer_at(self, path: str, qualname: str, keyword: ast.expr,
                  attrs: dict[str, str | bool | int | None], *,
                  key: str | None = None, keyword_path: str | None = None,
                  ) -> tuple[bool, object]:
        """What the keyword argument ``keyword`` of a call in function ``qualname`` of ``path``
        (a method: ``Class.method``, run on an instance of its class) is, with every object's
        attribute of ``attrs`` that literal: (True, the literal) where every path gives it one
        literal, (False, None) where it cannot be read. With ``key``, ``keyword`` is a call's
        ``**mapping`` and the answer is the value it gives ``key``: :data:`OMITTED` where every
        path's dict lacks it (the callee's default applies). ``keyword_path``: the keyword is
        of a call in that module, which the function reaches through its calls (a helper it
        calls, one a table holds)."""
        fn = self.program.function(path, qualname)
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return False, None
        # the same expression in the model's own tree of the file (``keyword`` may come from
        # another parse of it): by its place
        at = (type(keyword), keyword.lineno, keyword.col_offset)
        within = fn if keyword_path is None else self.program.tree(keyword_path)
        found = next((n for n in ast.walk(within) if isinstance(n, ast.expr) and
                      (type(n), n.lineno, n.col_offset) == at), None) \
            if within is not None else None
        if found is None and keyword_path is not None:
            return False, None
        keyword = found or keyword
        owner = qualname.rpartition(".")[0]
        cls = self.program.cls((path, owner)) if owner else None
        self_value = Inst((cls.path, cls.name)) if cls is not None else None
        where = Location(path, fn.lineno, 1)
        given: dict[str, Value] = {k: Lit(v, where) for k, v in attrs.items()}
        with self._quiet():
            value = self._interp.value_at(path, qualname, fn, self_value, keyword, given)
        if key is not None:
            return _keyed(value, key)
        return (True, value.value) if isinstance(value, Lit) else (False, None)

    @contextmanager
    def _quiet(self) -> Iterator[None]:
        """What the interpreter finds while answering a question is not a lint finding."""
        report, self._interp.report_to = self._interp.report_to, _discard
        try:
            yield
        finally:
            self._interp.report_to = report


def _dead_defaults(interp: Interpreter, capabilities: frozenset[str]) -> Iterator[Finding]:
    """AC009 as a note where a ``getattr(obj, "name", default)`` reads, on every object the
    flow found there, an attribute its class declares (in its body, a method, ``__init__``):
    the default is never taken, so a misspelt or missing declaration cannot hide behind it
    (the per-file rule, which cannot tell, warns)."""
    for where, (attr, dead) in sorted(interp.getattr_defaults.items(),
                                      key=lambda kv: (kv[0].path, kv[0].line, kv[0].col)):
        if dead and attr in capabilities:
            yield Finding(Code.AC009, attr, f"getattr(..., {attr!r}, ...): every object it "
                          f"reads here declares {attr}, so the default is never taken",
                          hint=f"read it as an attribute (obj.{attr})", field=attr,
                          found="a default never taken", allowed="no default",
                          escalation="never-taken", location=where)


def _stated(interp: Interpreter, program: Program, uses: Iterable[Use],
            ) -> frozenset[tuple[str, str, str]]:
    """The defaulted base parameters (path, function, name) of functions that every reference
    in the program calls with the parameter stated, or binds it in a ``partial``: the default
    is never taken in the program, so no caller linted can forget it (a caller that forgets
    it brings the finding back). A public function needs one such reference (one nothing in
    the program calls is there for callers outside it); a private one (``_name``) none. A
    reference that is neither (the function handed on, called with ``*args`` or
    ``**kwargs``) leaves the default reachable."""
    out: set[tuple[str, str, str]] = set()
    asked: set[tuple[str, str, str]] = set()  # each parameter read once, stated or not
    for use in uses:
        param = use.given.param
        if use.given.kind != "param" or param is None or param.default is None:
            continue
        key = (param.path, param.func, param.name)
        owner, _, last = param.func.rpartition(".")
        if key in asked:
            continue
        asked.add(key)
        fn = program.function(param.path, param.func)
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if last == "__init__" and owner and "." not in owner:
            # a constructor's callers build its class (``Wrapper(...)``), each way known
            cls = program.cls((param.path, owner))
            calls = interp.constructions(cls) if cls is not None else None
            method = True
        elif last.endswith("__"):
            continue
        else:
            calls = interp.program_calls(last)
            method = "." in param.func
        params = params_of(fn)
        if calls is not None and all(_states(g, param.name, params, method=method)
                                     for _, g in calls) and (last.startswith("_") or calls):
            out.add(key)
    return frozenset(out)


def _states(given: Given, name: str, params: Params, *, method: bool) -> bool:
    """Whether a call (or a ``partial``) with these arguments gives parameter ``name`` (by
    keyword, or by position where it takes one)."""
    args, keywords = given
    skip = 1 if method and not params.static else 0
    index = params.names.index(name) - skip if name in params.names[:params.positional] \
        else None
    keyword = name not in params.names[:params.posonly]  # ``/``: by position only
    return (keyword and any(k.arg == name for k in keywords)) or (
        index is not None and len(args) > index)


#: what :meth:`ProgramModel.answer_at` answers for a ``**mapping`` that does not give the key
OMITTED = object()


def _keyed(value: Value, key: str) -> tuple[bool, object]:
    """What a ``**mapping`` of ``value`` gives ``key`` on every path: one literal, or
    :data:`OMITTED` where no path's dict has it; (False, None) where the paths differ or a
    mapping is not a dict whose keys are read."""
    found: set[object] = set()
    for alt in alternatives(value) if value is not None else ():
        if not isinstance(alt, DictV) or key in alt.maybe:
            return False, None
        arg = alt.get(key)
        if arg is None:
            found.add(OMITTED)
        elif isinstance(arg.value, Lit):
            found.add(arg.value.value)
        else:
            return False, None
    if len(found) != 1 or (isinstance(value, Union_) and value.widened):
        return False, None
    return True, found.pop()


def _discard(_: Fact) -> None:
    return None


def build_model(files: list[FileFacts], knowledge: Mapping[str, Knowledge], *,
                returns_attrs: tuple[str, ...], base_attrs: tuple[str, ...],
                configured: bool = False, capabilities: Collection[str] = ()) -> ProgramModel:
    """The program of ``files``, interpreted, with the rules' findings (:func:`model_findings`)."""
    # in path order, whatever order they were named in: which function is interpreted first
    # decides which calls get a context of their own (and so what may be found)
    files = sorted(files, key=lambda f: f.path)
    modules = [f.module for f in files if f.module is not None]
    classes = [c for f in files for c in f.classes]
    program = Program(modules, classes, {f.path: f.tree for f in files if f.tree is not None})
    reported = {f.path for f in files if f.report}
    out: list[Finding] = []
    facts: list[Fact] = []
    interp = Interpreter(program, knowledge, base_attrs=base_attrs, returns_attrs=returns_attrs,
                         report=facts.append)
    h = program.hierarchy
    h.init_runs = interp.init_runs
    h.changed()
    backend_classes = _backend_classes(h, files, returns_attrs, base_attrs)
    kernels = {id(cls): _own_kernels(interp, program, cls) for cls in backend_classes}
    _run_rounds(interp, program, [f for f in files if f.report])
    _changed_classes(interp, program, (*returns_attrs, *base_attrs), base_attrs)
    declared = _declared(interp, program, returns_attrs, base_attrs)
    tree_declares = configured or any(a in c.attrs for c in classes for a in base_attrs)
    out += class_findings(h, backend_classes, kernels, returns_attrs=returns_attrs,
                          base_attrs=base_attrs, tree_declares_bases=tree_declares,
                          evaluate=_evaluator(interp))
    out += edge_findings(interp.uses.values(), declared, interp.live_literal_sites(),
                         _families(interp, program, returns_attrs, base_attrs),
                         _stated(interp, program, interp.uses.values()))
    out += fact_findings(facts, _confirmed_defaults(interp.uses.values()))
    out += _dead_defaults(interp, frozenset((*returns_attrs, *base_attrs, *capabilities)))
    out += _defaulted_definitions(program, knowledge, reported)
    kept = [f for f in out if f.location is not None and f.location.path in reported]
    return ProgramModel(program, interp, kept, kernels, returns_attrs, base_attrs)


def _confirmed_defaults(uses: Iterable[Use]) -> frozenset[Location]:
    """The calls that leave a combine's base keyword to its default where every LSE that
    reaches them, on every path the lint followed, is of that base: the default is confirmed
    by the producers (``AC022`` is a note there, as ``AC003`` is for a confirmed literal)."""
    verdict: dict[Location, bool] = {}
    for use in uses:
        g = use.given
        if g.omitted is None:
            continue
        sources = use.lse.sources
        agrees = use.whole and g.kind == "fixed" and g.base is not None and bool(sources) and all(
            s.base == g.base and not s.unread and not s.dispatch and s.param is None
            for s in sources)
        verdict[g.omitted] = verdict.get(g.omitted, True) and agrees
    return frozenset(where for where, ok in verdict.items() if ok)


#: per class and attribute: the values stored after its body, where the last was stored, and
#: whether the class's own value may still hold (a store made as the program runs)
_Changes = dict[tuple[ClassInfo, str], tuple[list[Value], Location, bool]]


def _changed_classes(interp: Interpreter, program: Program, attrs: tuple[str, ...],
                     base_attrs: tuple[str, ...]) -> None:
    """A returns or base attribute stored on a class after its body (``Impl.lse_base_on_e =
    False`` below it, ``setattr``, a class decorator) is the class's own, over its body's and
    its bases': the literal where every store agrees on one, else an expression (read from
    code the class statement does not show). A store a function makes as the program runs
    (``type(self).lse_base_on_e = False`` in ``__init__``), and a base a method stores on the
    instances under a condition, leave the class's own value in place until it runs, or on the
    instances it does not run for: each may hold either, an expression too where they differ."""
    h = program.hierarchy
    changed = _class_changes(interp, program, attrs)
    for key, (values, at, runtime) in _instance_changes(interp, program, base_attrs).items():
        # an instance's own store beside the class's: either may be what it reads
        before = changed.get(key)
        changed[key] = (values, at, runtime) if before is None else (
            [*before[0], *values], before[1], before[2])
    for (cls, attr), (values, at, runtime) in changed.items():
        if runtime:  # the class's own value holds until the store runs, or where it does not
            body = h.value(cls, attr)
            own = body.value if isinstance(body, ast.Constant) else ...
            values = [*values, Lit(own, at) if isinstance(own, (bool, int, float, str)) or
                      own is None else None]
        literals = {v.value for v in values if isinstance(v, Lit)}
        node: ast.expr = ast.Constant(literals.pop()) if len(literals) == 1 and all(
            isinstance(v, Lit) for v in values) else ast.Name("<set after the class body>",
                                                              ast.Load())
        # where: the store in the class's own file; else (a base's ``__init_subclass__``
        # elsewhere) the class's own declaration it replaces, or the class statement
        declared = cls.attrs.get(attr)
        line, col = (pt[0], pt[1] - 1) if (pt := at.point) is not None and at.path == cls.path \
            else (declared[1], declared[2]) if declared is not None else (cls.line, 0)
        cls.attrs[attr] = (node, line, col)
        cls.set_after.add(attr)
    if changed:  # what the class findings look up from now on is looked up again
        h.changed()


def _class_changes(interp: Interpreter, program: Program, attrs: tuple[str, ...]) -> _Changes:
    changed: _Changes = {}
    for (key, attr), stores in sorted(interp.class_stores.items(), key=lambda kv: kv[0]):
        cls = program.cls(key)
        if cls is not None and attr in attrs:
            changed[(cls, attr)] = ([v for v, _, _ in stores], stores[-1][1],
                                    any(runtime for _, _, runtime in stores))
    return changed


def _instance_changes(interp: Interpreter, program: Program, base_attrs: tuple[str, ...],
                      ) -> _Changes:
    """The classes whose instances a method gives another base than the class's own."""
    changed: _Changes = {}
    for (key, attr), values in sorted(interp.instance_stores(base_attrs).items(),
                                      key=lambda kv: kv[0]):
        cls = program.cls(key)
        body = None if cls is None else program.hierarchy.value(cls, attr)
        if cls is not None and not (isinstance(body, ast.Constant) and all(
                isinstance(v, Lit) and v.value == body.value for v in values)):
            changed[(cls, attr)] = (values, Location(cls.path, cls.line, 1), True)
    return changed


def _evaluator(interp: Interpreter) -> Callable[[ClassInfo, str, ClassInfo], object]:
    """What a class body leaves in an attribute, as the interpreter reads it on an instance
    of a class (a descriptor's ``__get__`` run for it): its one constant, else None."""
    def evaluate(owner: ClassInfo, attr: str, cls: ClassInfo) -> object:
        # a property is run on the object (``type(self)`` is ``cls`` there), never read as
        # its body's expression evaluated in the class's namespace
        value = interp.property_get(owner, attr, cls) if attr in owner.properties else \
            interp.descriptor_get(interp.class_body_attr(owner, attr), cls)
        if isinstance(value, Lit):
            return value.value
        known = one_bool(value)  # one bool on every path (two ``return True``)
        if known is not None:
            return known
        # an object: a flag it is read as by its truth (``if impl.lse_base_on_e:``)
        return truth(value) if isinstance(value, ExtInst) else None
    return evaluate


def _backend_classes(h: Hierarchy, files: list[FileFacts], returns_attrs: tuple[str, ...],
                     base_attrs: tuple[str, ...]) -> list[ClassInfo]:
    """The reported classes that say they return an LSE, or inherit that and declare their own
    base or run kernels of their own (a subclass whose methods return another base than its
    parent says)."""
    return [c for f in files if f.report for c in f.classes
            if declaration(h, c, returns_attrs, base_attrs) is not None or (
                (c.methods or any(a in c.attrs for a in base_attrs)) and declaration(
                    h, c, returns_attrs, base_attrs, own=False) is not None)]


def _own_kernels(interp: Interpreter, program: Program, cls: ClassInfo) -> frozenset[Kernel]:
    """The kernels a backend class's own methods reach, run on an instance of exactly it: read
    from its entry methods (``Program.entry_methods``: a private helper's kernel is read
    through its caller, after what the caller does to its LSE); a helper's own kernels only
    where its caller's run did not reach them (a call the interpreter did not follow)."""
    found: set[Kernel] = set()
    exact = Inst((cls.path, cls.name), exact=True)
    entries = program.entry_methods(cls)
    for name, fn in entries.items():
        found |= interp.run_function(cls.path, f"{cls.name}.{name}", fn, exact)
    seen = {(k.where, k.record) for k in found}
    for name, fn in program.methods(cls).items():
        if name not in entries:
            found |= {k for k in interp.run_function(cls.path, f"{cls.name}.{name}", fn, exact)
                      if (k.where, k.record) not in seen}
    return frozenset(found)


def _declared(interp: Interpreter, program: Program, returns_attrs: tuple[str, ...],
              base_attrs: tuple[str, ...]) -> dict[ClassKey, Declaration | None]:
    """What each class that an LSE came from, or whose flag told a combine its base, declares
    (inherited declarations included)."""
    h = program.hierarchy
    evaluate = _evaluator(interp)
    declared: dict[ClassKey, Declaration | None] = {}
    for use in interp.uses.values():
        for s in use.lse.sources:
            if s.impl is not None and s.impl not in declared:
                impl = program.cls(s.impl)
                declared[s.impl] = None if impl is None else declaration(
                    h, impl, returns_attrs, base_attrs, own=False, evaluate=evaluate)
        for flag in _flags(use):
            if flag.owner is None or flag.owner.cls in declared:
                continue
            owner = program.cls(flag.owner.cls)
            declared[flag.owner.cls] = None if owner is None else declaration(
                h, owner, returns_attrs, base_attrs, own=False, evaluate=evaluate) or (
                attribute_declaration(h, owner, base_attrs, evaluate=evaluate)
                if flag.owner.exact else None)
    return declared


def _families(interp: Interpreter, program: Program, returns_attrs: tuple[str, ...],
              base_attrs: tuple[str, ...]) -> dict[ClassKey, tuple[Declaration | None, ...]]:
    """For each flag read on an object that may be of any subclass (``self``, an annotated
    parameter): what the class and each class of the program below it declares, as an
    instance of it reads the attribute (:meth:`Program.subclasses`: past its bound, the class
    alone)."""
    h = program.hierarchy
    evaluate = _evaluator(interp)
    families: dict[ClassKey, tuple[Declaration | None, ...]] = {}
    for use in interp.uses.values():
        for flag in _flags(use):
            if flag.owner is None or flag.owner.exact or flag.owner.cls in families:
                continue
            owner = program.cls(flag.owner.cls)
            families[flag.owner.cls] = tuple(
                declaration(h, c, returns_attrs, base_attrs, own=False, evaluate=evaluate) or
                attribute_declaration(h, c, base_attrs, evaluate=evaluate)
                for c in ([] if owner is None else program.subclasses(owner)))
    return families


def _flags(use: Use) -> Iterator[Flag]:
    """The backend flags a use's combine is told its base by (one, or one per way a choice
    may go)."""
    ways = use.given.options if use.given.kind == "choice" else (use.given,)
    yield from (w.flag for w in ways if w.flag is not None)


#: rounds of "what the flow found carrying an LSE is a new place to start from"
_ROUNDS = 4


def _run_rounds(interp: Interpreter, program: Program, files: list[FileFacts]) -> None:
    """Interpret every function (and module-level statement) whose lines name a producer, a
    consumer or a base attribute; then, a few rounds, every one whose lines name a method or an
    attribute the flow found carrying an LSE or a combine (``self.impl.forward_mqa(...)``,
    ``self.dcp_manager.combine(...)``), until nothing new is found."""
    lines: dict[str, tuple[int, ...]] = {
        f.path: f.module.trigger_lines for f in files if f.module is not None}
    done: set[int] = set()
    names: set[str] = set()
    for _ in range(_ROUNDS):
        for f in files:
            if lines.get(f.path):
                _run_roots(interp, program, f, lines[f.path], done)
        found = interp.found_carriers() - names
        if not found:
            return
        names |= found
        # a module naming nothing the rules know is a root where it names a module-level
        # function found carrying an LSE (a helper module between a producer and a combine);
        # method names (``forward``) name too much there to follow everywhere
        helpers = frozenset(interp.found_function_carriers() & found)
        lines = {}
        for f in files:
            if f.module is None or (not f.module.trigger_lines and not helpers):
                continue
            wanted = found if f.module.trigger_lines or not helpers else helpers
            hits = _lines_matching(f.path, wanted)
            if hits:
                lines[f.path] = hits
        merged = {p: tuple(sorted({*interp.carrier_lines(p), *ls})) for p, ls in lines.items()}
        interp.set_carrier_lines({**interp.all_carrier_lines(), **merged})


def _lines_matching(path: str, names: Collection[str]) -> tuple[int, ...]:
    """The lines of a module that name one of ``names`` as a whole word."""
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ()
    # most modules hold none of the names: a substring test rules them out at C speed
    present = tuple(sorted(n for n in names if n in text))
    if not present:
        return ()
    pattern = _words_pattern(present)
    out: list[int] = []
    pos, line = 0, 1
    for m in pattern.finditer(text):
        line += text.count("\n", pos, m.start())
        pos = m.start()
        if not out or out[-1] != line:
            out.append(line)
    return tuple(out)


@functools.lru_cache(maxsize=256)
def _words_pattern(names: tuple[str, ...]) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(map(re.escape, names)) + r")\b")


def _run_roots(interp: Interpreter, program: Program, f: FileFacts, lines: tuple[int, ...],
               done: set[int]) -> None:
    tree = program.tree(f.path)
    if tree is None:
        return
    top = [st for st in tree.body if _spans(st, lines) and id(st) not in done and not isinstance(
        st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    done.update(id(st) for st in top)
    if top:
        interp.run_statements(f.path, top)
    for st in tree.body:  # a class its decorators or its bases' __init_subclass__ change
        if isinstance(st, ast.ClassDef) and id(st) not in done and _spans(st, lines):
            done.add(id(st))
            interp.run_init_subclass(f.path, st)
            if st.decorator_list:
                interp.run_decorators(f.path, st)
    _run_functions(interp, program, f, tree, lines, done)


def _run_functions(interp: Interpreter, program: Program, f: FileFacts, tree: ast.Module,
                   lines: tuple[int, ...], done: set[int]) -> None:
    """Each function of the file that spans a carrier line or calls one, run on its own."""
    if f.functions is None:
        f.functions = list(_functions(tree))
    relevant = f.module.relevant if f.module is not None else frozenset()
    for node, qual, owner in f.functions:
        if id(node) in done or not (_spans(node, lines) or qual in relevant):
            continue
        done.add(id(node))
        self_value = Inst((f.path, owner), exact=False) if owner else None
        cls = program.cls((f.path, owner)) if owner else None
        runs = _runs_on(program, cls, qual.rpartition(".")[2]) if cls is not None else None
        for on in runs if runs is not None else [self_value]:
            interp.run_function(f.path, qual, node, on)
        run_contract(interp, f.path, qual, node, self_value)
        run_producer(interp, f.path, qual, node, self_value)


#: the most classes a method's run on its own is made for, one by one (past it: one run, on
#: an object of any class of the family)
_MAX_RUNS_ON = 4


def _runs_on(program: Program, cls: ClassInfo, name: str) -> list[Inst] | None:
    """The objects a method of ``cls`` runs on when the lint runs it on its own: one of
    exactly each class of the family that inherits it (for a subclass that overrides it, the
    override's own run follows its ``super()`` call); of a private one (``_name``), only
    those that reach one of its callers, where the family calls it as ``self._name(...)``
    alone (a subclass that overrides the caller reaches it only through the override's
    ``super()`` call, which that override's run follows). None, for one run on an object of
    any class of the family, for a dunder method, where the family is past its bound, or it
    runs on too many classes."""
    if name.startswith("__"):
        return None
    family = program.family(cls)
    if family is None:
        return None  # past the bound on subclasses: not enumerated
    runs = [c for c in family if program.lookup(c, name) is cls]
    callers = _self_callers(program, [*program.mro(cls), *family[1:]], name) \
        if name.startswith("_") else None
    if callers:
        runs = [c for c in runs if any(program.lookup(c, m) is owner for owner, m in callers)]
    if not runs or len(runs) > _MAX_RUNS_ON:
        return None
    return [Inst((c.path, c.name), exact=True) for c in runs]


def _self_callers(program: Program, classes: list[ClassInfo], name: str,
                  ) -> list[tuple[ClassInfo, str]] | None:
    """The methods of ``classes`` that call ``self.<name>(...)``; None where one of them
    may reach it another way: names it otherwise (a callback, ``super()._name``), holds its
    name as a string, or looks an attribute up by a name it computes (``getattr(self, x)``)."""
    out: list[tuple[ClassInfo, str]] = []
    for c in classes:
        for method, uses in program.attribute_uses(c).items():
            if uses.dynamic or name in uses.named or name in uses.strings:
                return None
            if name in uses.self_calls:
                out.append((c, method))
    return out


def _spans(node: ast.AST, lines: tuple[int, ...]) -> bool:
    start = getattr(node, "lineno", 0)
    end = getattr(node, "end_lineno", start) or start
    i = bisect.bisect_left(lines, start)
    return i < len(lines) and lines[i] <= end


def _functions(tree: ast.Module) -> Iterable[tuple[ast.FunctionDef | ast.AsyncFunctionDef, str,
                                                   str | None]]:
    """Every function of a module with its qualified name and, for a method, its class."""
    stack: list[tuple[ast.AST, str, str | None]] = [(tree, "", None)]
    while stack:
        node, prefix, cls = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                qual = f"{prefix}{child.name}"
                static = any(isinstance(d, ast.Name) and d.id == "staticmethod"
                             for d in child.decorator_list)
                yield child, qual, (None if static else cls)
                stack.append((child, f"{qual}.<locals>.", None))
            elif isinstance(child, ast.ClassDef):
                stack.append((child, f"{prefix}{child.name}.", child.name if not prefix else None))
            elif isinstance(child, (ast.If, ast.Try, ast.With)) or (
                    hasattr(ast, "TryStar") and isinstance(child, ast.TryStar)):
                stack.append((child, prefix, cls))


def _defaulted_definitions(program: Program, knowledge: Mapping[str, Knowledge],
                           reported: set[str]) -> list[Finding]:
    """AC021 on a consumer's own definition in the linted files: its base keyword has a
    default a caller silently gets. Each file is judged by its own tree's records."""
    by_module: dict[tuple[int, str], list[Consumer]] = {}
    out = []
    for path in sorted(reported):
        info = program.info(path)
        k = knowledge.get(path)
        if info is None or k is None:
            continue
        if (id(k), "") not in by_module:
            by_module[(id(k), "")] = []
            for group in k.consumers.values():
                for c in group:
                    if isinstance(c.base, KeywordBase) and c.base.default is not None:
                        parts = c.function.split(".")
                        mod = ".".join(parts[:-2] if c.owner_class else parts[:-1])
                        by_module.setdefault((id(k), mod), []).append(c)
        for name in (info.name, *(a for a, _ in info.aliases)):
            for c in by_module.get((id(k), name), []):
                out += _defaulted(program, path, c)
    return out


def _defaulted(program: Program, path: str, c: Consumer) -> list[Finding]:
    parts = c.function.split(".")
    qual = f"{c.owner_class}.{parts[-1]}" if c.owner_class else parts[-1]
    fn = program.function(path, qual)
    if fn is None or not isinstance(c.base, KeywordBase):
        return []
    kw = c.base.keyword
    default = params_of(fn).defaults.get(kw)
    if default is None:
        return []
    text = ast.unparse(default)
    return [Finding(
        Code.AC021, parts[-1],
        f"{parts[-1]}({kw}={text}) gives its LSE base a default: a caller that forgets {kw} "
        f"silently gets it (consumer record {c.record})",
        hint=f"make {kw} required (no default), so every caller states the base", field=kw,
        found=text, allowed="no default",
        location=Location(path, default.lineno, default.col_offset + 1))]
