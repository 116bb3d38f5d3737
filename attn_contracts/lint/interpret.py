"""Follow the LSE through the linted program: an abstract interpreter over every file at once.

Each function is interpreted statement by statement over the values of
:mod:`attn_contracts.lint.values`, with the syntax node's type choosing the handler (as pyflakes
dispatches). What it records, for the rules of :mod:`attn_contracts.lint.edges`:

- every **producer call** a record names (a kernel that returns an LSE, or writes one into an
  ``lse=`` buffer), with the base its arguments choose, pinned or left to the library's dispatch
  (:class:`~attn_contracts.lint.inferred.Kernel`); which kernels each function reaches, through
  every call below it;
- every **consumer use**: an LSE reaching a combine whose record says how it reads the base, with
  the base this call gives it — a literal (written here, through a name, a partial, a
  constructor argument that an object keeps, a parameter's default), a backend's declared
  attribute (``self.impl.lse_base_on_e``), a parameter, or an expression it cannot read
  (:class:`~attn_contracts.lint.inferred.Use`).

Interprocedural, across files: a call of a function of the program interprets it with the
arguments' values (memoised by them, a few contexts per function, then one generic context),
so a keyword given to a constructor (``MLADCPManager(is_lse_base_on_e=...)``) follows the object
into the methods that later use it, and a method called on an instance that may be of any
subclass (``self.impl.forward_mqa(...)``, ``self.impl`` built by ``cast(type[MLAAttentionImpl],
...)(...)``) is every override's. Attribute values come from the constructor's context where the
object was built here, else from every assignment in the class's methods; annotations give
types. Branches join into unions (a may-analysis): a conditional expression over three combines is
the three, an ``if`` over two kernels an LSE of both origins. Unknown values are never guessed:
a call the linter cannot see through ends the chain, and a base read from an expression it
cannot read is trusted.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import cast

from attn_contracts.findings import Location
from attn_contracts.lint.analysis import NEED_LEVELS
from attn_contracts.lint.analysis import NO_TAINT
from attn_contracts.lint.analysis import RUN_BUDGET
from attn_contracts.lint.attributes import Resolver
from attn_contracts.lint.callers import Use
from attn_contracts.lint.callers import import_time_uses
from attn_contracts.lint.callers import only_read
from attn_contracts.lint.calls import DEFAULT
from attn_contracts.lint.calls import CallArgs
from attn_contracts.lint.calls import Changed
from attn_contracts.lint.calls import Params
from attn_contracts.lint.calls import Summary
from attn_contracts.lint.calls import bind
from attn_contracts.lint.calls import call_matters
from attn_contracts.lint.calls import callee_name
from attn_contracts.lint.calls import carries
from attn_contracts.lint.calls import instantiate
from attn_contracts.lint.calls import literal_value
from attn_contracts.lint.calls import merge_summaries
from attn_contracts.lint.calls import nonlocal_names
from attn_contracts.lint.calls import params_of
from attn_contracts.lint.classes import ClassInfo
from attn_contracts.lint.classes import dotted_name
from attn_contracts.lint.classes import module_level
from attn_contracts.lint.classes import own_nodes
from attn_contracts.lint.frame import Frame
from attn_contracts.lint.inferred import Kernel
from attn_contracts.lint.inferred import kernel_of
from attn_contracts.lint.modules import changed_names
from attn_contracts.lint.modules import free_names
from attn_contracts.lint.modules import import_time_changers
from attn_contracts.lint.modules import replayed_bodies
from attn_contracts.lint.program import FuncNode
from attn_contracts.lint.torch_model import TENSOR_TYPES
from attn_contracts.lint.torch_model import chosen_join
from attn_contracts.lint.torch_model import flatten
from attn_contracts.lint.torch_model import tag_choice
from attn_contracts.lint.torch_model import tag_impl
from attn_contracts.lint.values import NOT_SPECIAL
from attn_contracts.lint.values import NOTHING_YET
from attn_contracts.lint.values import Arg
from attn_contracts.lint.values import Bound
from attn_contracts.lint.values import ClassRef
from attn_contracts.lint.values import DictV
from attn_contracts.lint.values import Ext
from attn_contracts.lint.values import ExtInst
from attn_contracts.lint.values import Func
from attn_contracts.lint.values import Inst
from attn_contracts.lint.values import Lit
from attn_contracts.lint.values import Member
from attn_contracts.lint.values import ModuleRef
from attn_contracts.lint.values import Num
from attn_contracts.lint.values import Param
from attn_contracts.lint.values import Partial
from attn_contracts.lint.values import Seq
from attn_contracts.lint.values import Tup
from attn_contracts.lint.values import Value
from attn_contracts.lint.values import alternatives
from attn_contracts.lint.values import join
from attn_contracts.lint.values import lse_of

__all__ = ["Interpreter"]

#: the most import-time uses replayed for a module's containers (each use copies them: the
#: cost of more would grow with their square)
_IMPORT_USES = 64
#: per function, the argument contexts kept apart before one generic context serves the rest
_MAX_CONTEXTS = 6


#: how deep calls are followed
_MAX_DEPTH = 24



class Interpreter(Resolver):
    """One run over a program: memoised function analyses, the events the rules read."""


    def run_function(self, path: str, qualname: str, node: FuncNode,
                     self_value: Inst | None, *, returned: bool = False,
                     assume: Callable[[ast.expr], bool | None] | None = None,
                     ) -> frozenset[Kernel]:
        """Interpret one function on its own: its parameters are unknown (typed by their
        annotations); the kernels it reaches (``returned``: only those whose LSE it returns,
        where it returns any; every one it reaches where the flow lost them all).
        ``assume``: the ``if`` tests it decides are taken one way only, in this function and
        every call it makes (analysed afresh, apart from the memo of the unassumed runs)."""
        func = Func(path, qualname, node)
        if assume is not None:
            memo, self._memo, self.assume = self._memo, {}, assume
            try:
                s = self.analyse(func, self_value, None, generic=True)
            finally:
                self._memo, self.assume = memo, None
        else:
            s = self.analyse(func, self_value, None, generic=True)
        lse = lse_of(flatten(s.returns))
        from_return = frozenset(k for src in (lse.sources if lse else ())
                                if (k := kernel_of(src)) is not None)
        if returned and from_return:
            return from_return
        seen = s.kernels | from_return
        # a producer call whose LSE the flow lost sight of counts as it returns it
        keys = {(k.where, k.record) for k in seen}
        return seen | frozenset(k for k in s.produced if (k.where, k.record) not in keys)

    def evaluate(self, path: str, qualname: str, node: FuncNode,
                 args: tuple[str | bool | int | None, ...]) -> Value:
        """What a call of a function with literal arguments returns: a context of its own,
        apart from the memo and the bound on contexts of the program's own calls (a question
        asked once per name of an engine's backends, say)."""
        func = Func(path, qualname, node)
        call = CallArgs([Arg(Lit(a, Location(path, node.lineno, 1))) for a in args], {}, False,
                        where=Location(path, node.lineno, 1))
        # the value is what is asked for: the calls it makes are read for theirs
        memo, need, self._memo, self.need = self._memo, self.need, {}, NEED_LEVELS + 1
        try:
            return self.analyse_apart(func, None, call).returns
        finally:
            self._memo, self.need = memo, need

    @contextmanager
    def reading_all_calls(self) -> Iterator[None]:
        """A context where every call is read for its value and what it changes, for
        :data:`NEED_LEVELS` levels down (a producer's body read on its own), with a memo of
        its own (its summaries take no place in the program's)."""
        memo, need, self._memo, self.need = self._memo, self.need, {}, NEED_LEVELS + 1
        try:
            yield
        finally:
            self._memo, self.need = memo, need

    def analyse_apart(self, func: Func, self_value: Inst | None, call: CallArgs) -> Summary:
        """A call no caller in the program makes (a function read as its record says it is
        called): its contexts, and those of what it calls, counted apart from the bound on the
        program's own calls, so that they take no real caller's place."""
        with self._apart(memo=False):
            return self.analyse(func, self_value, call)

    @contextmanager
    def _apart(self, *, memo: bool = True) -> Iterator[None]:
        """A context of its own: the bound on call contexts counted apart from the program's
        own calls, and (``memo``) a memo of its own (summaries read under another premise, an
        object of exactly one class, take no place in the program's)."""
        saved = self._memo, self._contexts, self._counted
        if memo:
            self._memo = {}
        self._contexts, self._counted = {}, set()
        try:
            yield
        finally:
            self._memo, self._contexts, self._counted = saved

    def descriptor_get(self, value: Value, cls: ClassInfo) -> Value:
        """A class attribute read on an instance of ``cls``: where it is an object whose class
        defines ``__get__`` (a descriptor), what ``__get__(instance, type(instance))`` returns,
        run in a context of its own; the value itself otherwise."""
        options: list[Value] = []
        for alt in alternatives(value):
            holder = self.class_info(alt.cls) if isinstance(alt, Inst) else None
            owner = self.p.lookup(holder, "__get__") if holder is not None else None
            fn = self.p.methods(owner).get("__get__") if owner is not None else None
            if fn is None or owner is None or not isinstance(alt, Inst):
                options.append(alt)
                continue
            key = (cls.path, cls.name)
            where = Location(cls.path, cls.line, 1)
            call = CallArgs([Arg(Inst(key, exact=True)), Arg(ClassRef(key, exact=True))], {},
                            False, where=where)
            with self._apart():
                options.append(self.analyse(Func(owner.path, f"{owner.name}.__get__", fn), alt,
                                            call).returns)
        return join(options) if options else None

    def property_get(self, owner: ClassInfo, attr: str, cls: ClassInfo) -> Value:
        """What ``owner``'s property ``attr`` returns read on an object of exactly ``cls``
        (``type(self)`` is ``cls`` in it), run in a context of its own; None where ``owner``
        defines no such property."""
        fn = self.p.methods(owner).get(attr)
        if fn is None or attr not in owner.properties:
            return None
        key = (cls.path, cls.name)
        memo_key = ((owner.path, owner.name), attr, key)
        if not self.given_attrs and memo_key in self._property_values:
            return self._property_values[memo_key]
        call = CallArgs([], {}, False, where=Location(cls.path, cls.line, 1))
        with self._apart():
            value = self.analyse(Func(owner.path, f"{owner.name}.{attr}", fn),
                                 Inst(key, exact=True), call).returns
        if not self.given_attrs:  # a question's premise may change what it returns
            self._property_values[memo_key] = value
        return value

    def value_at(self, path: str, qualname: str, node: FuncNode, self_value: Inst | None,
                 keyword: ast.expr, attrs: dict[str, Value]) -> Value:
        """The value a call's keyword argument (``keyword``, a node of ``node``'s body) takes
        when ``node`` runs on ``self_value`` with every object's attribute of ``attrs`` that
        value (an engine's question: the base a combine is told when the layer's backend is
        registered under a given name): what every path gives it, None where no path reaches
        it. A context of its own, apart from the memo (whose summaries were read without the
        premise)."""
        func = Func(path, qualname, node)
        given, watched = self.given_attrs, self.watched
        self.given_attrs, self.watched = attrs, {id(keyword): []}
        self.asked_told = {}
        try:
            with self._apart():
                self.analyse(func, self_value, None, generic=True)
            return join(self.watched[id(keyword)]) if self.watched[id(keyword)] else None
        finally:
            self.given_attrs, self.watched = given, watched
            self.asked_told = {}

    def run_statements(self, path: str, body: list[ast.stmt]) -> None:
        """Module-level statements (a combine called at import time, a partial bound there)."""
        frame = Frame(self, path, None, None, None)
        for st in body:
            if not isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                try:
                    frame.stmt(st)
                except RecursionError:
                    return
        for name, value in frame.env.items():  # an alias or partial of a combine made here
            if carries(value) or (isinstance(value, (Ext, Func)) and callee_name(
                    value, "") in (*frame.k.consumers, *frame.k.producers)):
                self._module_carriers.add(name)

    def analyse(self, func: Func, self_value: Inst | None, call: CallArgs | None, *,
                generic: bool = False) -> Summary:
        """What a call of ``func`` returns and does (its summary, memoised per context); a
        conversion it applies to an LSE already in its target base is reported at this call
        (a memoised summary's too: each call site that hands it such an LSE is one)."""
        s = self._analyse(func, self_value, call, generic=generic)
        if s.misconverted and call is not None and call.where is not None:
            for m in s.misconverted:
                if (m, call.where) not in self.misreported:
                    self.misreported.add((m, call.where))
                    self.report(replace(m, called_at=call.where))
        return s

    def _analyse(self, func: Func, self_value: Inst | None, call: CallArgs | None, *,
                 generic: bool = False) -> Summary:
        node = self.p.definition(func)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return Summary()
        params = params_of(node)
        bound, ctx = _bound(func, params, None if generic else call, self_value,
                            lambda name, node: self.made_default(func, name, node))
        # a function read for its value (:attr:`need`) follows calls its other analyses skip,
        # so that summary is kept apart
        key = (func, self_value, ctx if self.need <= 0 else (ctx, "need"))
        memo = self._memo.get(key)
        if memo is not None:
            return memo
        cycles = self.bounds
        found = cycles.provisional.get(key)
        if found is not None:  # a cycle's member, already interpreted in this pass
            self._taint = min(self._taint, found[1])
            return cast(Summary, found[0])
        if key in self._active:
            # a cycle: the call gets the summary found so far for its head, which is
            # interpreted again until that summary no longer changes (bounds.Bounds)
            self._taint = min(self._taint, self._stack.index(key))
            return cast(Summary, cycles.recursive(key, lambda: Summary(NOTHING_YET)))
        if ctx != ("generic",) and key not in self._counted and \
                not self._new_context(func, self_value, call, key):
            # enough contexts: the generic one serves the rest
            return instantiate(self.analyse(func, self_value, None, generic=True), func, bound)
        if self._depth >= _MAX_DEPTH or self.budget <= 0:
            self._not_followed(func, node)
            return Summary()
        self.budget -= 1
        self.steps += 1
        need = self.need
        self.need = max(need - 1, 0)  # one level of calls fewer read for their value
        pos = len(self._stack)
        self._stack.append(key)
        self._active.add(key)
        self._depth += 1
        saved = self._taint
        passes = 0
        try:
            while True:
                self._taint = NO_TAINT
                mark, changes = len(cycles.provisional), cycles.changes
                try:
                    summary = self._interpret(func, node, params, self_value, bound,
                                              generic or call is None, call.where if call else None)
                except RecursionError:
                    summary = Summary()
                head = self._taint >= pos
                kept, again = cycles.settle(key, summary, merge_summaries, passes, head,
                                            changes)
                summary = cast(Summary, kept)
                if not again:
                    break
                cycles.forget_since(mark)  # found under the approximation just replaced
                passes += 1
        finally:
            self.need = need
            self._depth -= 1
            self._active.discard(key)
            self._stack.pop()
        self._keep(key, summary, pos, mark, saved)
        return summary

    def _keep(self, key: tuple[object, ...], summary: Summary, pos: int, mark: int,
              saved: int) -> None:
        """A summary found: memoised, with those of the cycle's members found in its last
        pass, where it depends on no call still being interpreted; else provisional."""
        cycles = self.bounds
        incomplete = self._taint < pos
        if incomplete:
            cycles.provisional[key] = (summary, self._taint)
        else:
            self._memo.update(cast(dict[tuple[object, ...], Summary], cycles.complete_since(mark)))
            self._memo[key] = summary
        self._taint = min(saved, self._taint) if incomplete else saved

    def _new_context(self, func: Func, self_value: Inst | None, call: CallArgs | None,
                     key: tuple[object, ...]) -> bool:
        """Counts one more argument context of ``func``; False (and a note, where it carries
        what the rules read) past :data:`_MAX_CONTEXTS`."""
        # the contexts that carry an LSE, a base attribute or a partial are counted apart
        # from the rest: a function called with parameters by every other one's analysis
        # alone still gets the LSE its one real caller passes
        # per receiver: the instance a method runs on, or the class a class-level function
        # (``__init_subclass__``, a classmethod read as a function) is given first
        first = call.pos[0].value if call is not None and call.pos else None
        receiver = self_value if self_value is not None else (
            first if isinstance(first, ClassRef) and first.exact else None)
        kind = (func, receiver, call is not None and call_matters(call))
        seen = self._contexts.get(kind, 0)
        if seen >= _MAX_CONTEXTS:
            if kind[2]:
                self.bounds.note(None, "call contexts", f"{func.qualname.partition('@')[0]} is "
                                 f"called with more than {_MAX_CONTEXTS} different LSEs or "
                                 "bases; the rest are read as its parameters")
            return False
        self._contexts[kind] = seen + 1
        self._counted.add(key)
        return True

    def _not_followed(self, func: Func, node: FuncNode | ast.Lambda) -> None:
        """The note of a call not followed: too deep, or past the run's budget."""
        why = f"deeper than {_MAX_DEPTH} calls" if self.budget > 0 else \
            f"the run used its budget of {RUN_BUDGET:,} steps"
        self.bounds.note(None, "call depth" if self.budget > 0 else "run budget",
                         f"the call of {func.qualname.partition('@')[0]} is not followed ({why})",
                         callee=(func.path, func.qualname, node))

    def _interpret(self, func: Func, node: FuncNode | ast.Lambda, params: Params,
                   self_value: Inst | None, bound: dict[str, Value], generic: bool,
                   entry: Location | None = None) -> Summary:
        owner = self_value.cls if self_value is not None else None
        frame = Frame(self, func.path, func, self_value, owner)
        frame.node = node
        frame.entry = entry
        frame.param_ids = {id(v) for v in bound.values() if v is not None}
        if func.qualname.endswith(".__post_init__") and self_value is not None and \
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.args.args:
            # what it leaves in the fields it stores is what the object holds once built
            me = node.args.args[0].arg
            frame.kept = tuple(f"{me}.{a}" for a in sorted(self.stored_attrs(node)))
        if self.overlay:
            self._overlaid(frame, func, node)
        self.frames.append(frame)
        try:
            summary = self._run_frame(frame, func, node, params, self_value, bound, generic)
        finally:
            self.frames.pop()
        if frame.overlaid:
            self._overlay_changed(frame)
        return summary

    def _overlaid(self, frame: Frame, func: Func, node: FuncNode | ast.Lambda) -> None:
        """A function of the module whose container is being changed at import time
        (:meth:`after_import`) reads and changes the value so far, where it does not bind
        that name itself."""
        params = params_of(node)
        own = {n.id for n in own_nodes(node.body if isinstance(node.body, list)
                                       else [ast.Expr(node.body)])
               if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        own |= {*params.names, *params.var}
        frame.overlaid = tuple(n for (p, n) in self.overlay if p == func.path and n not in own)
        frame.env.update({n: self.overlay[(func.path, n)] for n in frame.overlaid})

    def _overlay_changed(self, frame: Frame) -> None:
        """What the function left in the container on the paths that returned (one that
        raised changes nothing the import keeps: the import fails)."""
        exits = [*frame.exits, *([{n: frame.env.get(n) for n in frame.overlaid}]
                                 if not frame.ended else [])]
        for n in frame.overlaid:
            if exits:
                self.overlay[(frame.path, n)] = join([e.get(n) for e in exits])

    def _run_frame(self, frame: Frame, func: Func, node: FuncNode | ast.Lambda,
                   params: Params, self_value: Inst | None, bound: dict[str, Value],
                   generic: bool) -> Summary:
        names = params.names
        start = self._bind_params(frame, func, params, self_value, bound, generic)
        if isinstance(node, ast.Lambda):
            frame.returns.append(frame.expr(node.body))
        else:
            frame.block(node.body)
        if frame.yields:  # a generator: calling it returns an iterator of what it yields
            # in order where each yield runs once, in the order written (no branch, loop or
            # yield from): the iterator's positions are known, as a tuple's
            yields = Tup(tuple(frame.yields)) if _straight_line(node) else \
                Seq(join(frame.yields))
            return Summary(yields, frozenset(frame.kernels), frozenset(frame.produced),
                           misconverted=tuple(frame.misconverted))
        if not isinstance(node, ast.Lambda) and not frame.ended and not frame.cut and \
                self._runs_when_called(func, node):
            # a path that runs off the function's end returns None, as Python's does
            frame.returns.append(Lit(None, Location(func.path, node.end_lineno or node.lineno, 1)))
        changed = tuple((name, frame.env.get(name)) for name in names[start:]
                        if name in frame.inplace_names and name not in frame.rebound)
        nonlocals = tuple((name, frame.env.get(name)) for name in sorted(nonlocal_names(node)))
        return Summary(chosen_join(frame.returns) if frame.returns else None,
                        frozenset(frame.kernels), frozenset(frame.produced), changed, nonlocals,
                        tuple(frame.misconverted),
                        never=frame.ended and not frame.returns and not frame.cut,
                        after=_kept_after(frame))

    def _runs_when_called(self, func: Func, node: FuncNode) -> bool:
        """Whether a call runs the function's own body: not an ``@abstractmethod`` of a class
        whose hierarchy may be an ABC (``ABC``, ``Protocol``, a metaclass, a base from outside
        the program: an instance calls an override); a stub of a plain class runs."""
        if not _abstract(node):
            return True
        cls = self.p.cls((func.path, func.qualname.rpartition(".")[0]))
        if cls is None:
            return False
        mro, outside = self.p.hierarchy.mro(cls)
        nodes = [self.p.class_node(c) for c in mro]
        return not outside and all(n is not None and not n.keywords for n in nodes) and not any(
            b.rpartition(".")[2] in ("ABC", "Protocol") for c in mro for b in c.bases)

    def _bind_params(self, frame: Frame, func: Func, params: Params, self_value: Inst | None,
                     bound: dict[str, Value], generic: bool) -> int:
        """The frame's names at the call: the closure, ``self``, each parameter (what any
        caller passes, where read for any); how many leading parameters ``self`` took."""
        names = params.names
        start = 0
        frame.env.update((k, v) for k, v in func.closure if not k.startswith(DEFAULT))
        if self_value is not None and names and not params.static:
            frame.env[names[0]] = self_value
            if func.qualname.endswith(".__new__"):
                # ``__new__(cls, ...)`` runs on the class; what ``super().__new__(cls)``
                # creates there is the instance (Frame.new_form)
                frame.env[names[0]] = ClassRef(self_value.cls, exact=self_value.exact)
            ann = params.annotations.get(names[0])
            if ann is not None and generic and not self_value.exact:
                # ``self: DeepseekV2AttentionMLA`` on a mixin's method: the class it runs in
                typed = self.resolve_annotation(func.path, ann)
                if isinstance(typed, Inst):
                    frame.env[names[0]] = typed
            start = 1
        for name in names[start:]:
            if generic:
                frame.env[name] = self.generic_param(func, params, name)
            else:
                frame.env[name] = bound.get(name)
        for extra in params.var:
            frame.env[extra] = None if generic else bound.get(extra)
        if not generic:  # ``self.base`` as the caller stored it (Frame.own_attrs)
            frame.env.update({k: v for k, v in bound.items() if "." in k})
            frame.defaulted = _defaulted_at(bound)
        return start

    def generic_param(self, func: Func, params: Params, name: str) -> Value:
        """A parameter of a function read on its own: an instance of its annotated class, else
        a parameter (what any caller passes)."""
        ann = params.annotations.get(name)
        typed = self.resolve_annotation(func.path, ann) if ann is not None else None
        if isinstance(typed, ExtInst) and typed.qualname in TENSOR_TYPES:
            typed = None  # a tensor parameter may be an LSE: its caller's, unknown here
        default = params.defaults.get(name)
        lit = literal_value(func.path, default) if default is not None else None
        return typed if typed is not None else Param(
            name, func.qualname, lit if isinstance(lit, Lit) else None, func.path)

    def _dispatched(self, sub: ClassInfo, method: str) -> Func | None:
        """What ``obj.<method>`` of an instance of exactly ``sub`` runs: the first class of
        its MRO whose body binds the name, a ``def`` there, or a function the body assigns
        to it (``legacy = run``: the function object it held then, not an override of
        ``run`` below); None where it is neither."""
        for c in self.p.mro(sub):
            if method in c.methods:
                return Func(c.path, f"{c.name}.{method}")
            value = self.class_body_function(c, method)
            if value is not NOT_SPECIAL:
                return value if isinstance(value, Func) else None
        return None

    def _bound_targets(self, bound: Bound, inst: Inst, cls: ClassInfo, method: str,
                       ) -> list[tuple[Func, Inst, ClassInfo]]:
        """What a method call on ``inst`` runs: the method, or (on an instance that may be of
        any subclass) every override the class hierarchy holds."""
        # an object built here of what the flow holds runs what its class runs; one of a
        # class that declares the method abstract, not seen built so (the ``self`` of a
        # mixin's method; also one built with no arguments, which is not told apart), is read
        # as an object of a class below that provides it: the class is made to be subclassed
        if (inst.exact and (inst.ctor is not None or not _abstract(
                self.p.definition(bound.func)))) or bound.static:
            return [(bound.func, inst, cls)]
        targets = []
        # every subclass, also where it inherits the method: what ``self.<m>(...)`` inside it
        # dispatches to is the subclass's (AttentionBackend.forward -> forward_extend)
        for sub in self.p.subclasses(cls):
            target = self._dispatched(sub, method)
            if target is not None:
                targets.append((target, Inst((sub.path, sub.name), exact=True), sub))
        provided = [t for t in targets if not _abstract(self.p.definition(t[0]))]
        # the classes that declare it abstract (or inherit only that) are the ones below them
        # made to provide it: their stub is no way it runs, unless none does
        return provided if provided else targets

    def call_bound(self, bound: Bound, call: CallArgs, where: Location,
                   ) -> tuple[Value, frozenset[Kernel], frozenset[Kernel], list[Changed]]:
        """A method call: the method's (or, on an instance that may be of any subclass, every
        override's) result, the kernels it reaches, and what each changed in place."""
        inst = bound.self_value
        cls = self.class_info(inst.cls)
        method = bound.looked_up or bound.func.qualname.rpartition(".")[2]
        if cls is None:
            return None, frozenset(), frozenset(), []
        targets = self._bound_targets(bound, inst, cls, method)
        results: list[Value] = []
        kernels: set[Kernel] = set()
        produced: set[Kernel] = set()
        interesting = call_matters(call)
        followed = [t for t in targets if interesting or self.wants_return(t[0])]
        if not followed:  # nothing below can matter: what the method says it returns
            declared = self.declared_return(bound.func)
            return declared, frozenset(), frozenset(), []
        targets = followed
        changed: list[Changed] = []
        sure = len(targets) == 1  # else each override's change is one the call may make
        for func, self_value, sub in targets:
            s = self.analyse(func, self_value, call)
            kernels |= s.kernels
            produced |= s.produced
            if s.changed:
                changed.append((func, s.changed, sure))
            value = s.returns
            if self.returns_lse(sub):  # an LSE-declaring class's method: its LSE is that class's
                value = tag_impl(value, (sub.path, sub.name))
            if len(targets) > 1:
                value = tag_choice(value, f"{sub.name}.{method}() (one of the {len(targets)} "
                                    f"implementations {cls.name}.{method} dispatches to)")
            results.append(value)
        return (join(results) if results else None), frozenset(kernels), frozenset(produced), \
            changed

    def new_frame(self, path: str) -> Frame:
        return Frame(self, path, None, None, None)

    def made_default(self, func: Func, name: str, node: ast.expr) -> Value:
        """The default of ``func``'s parameter ``name`` that is no literal (``combine=
        cp_lse_ag_out_rs``), as Python evaluates it: once, where the ``def`` runs, so in the
        module's top level as it stands at that line, or in the class body of a method; not
        read for a function made in another function (its closure keeps those) or a class
        nested deeper."""
        key = (func.path, func.qualname, name)
        if key in self._made_defaults:
            return self._made_defaults[key]
        self._made_defaults[key] = None  # a default read while it is being evaluated
        where = func.qualname.partition("@")[0].split(".")
        value: Value = None
        if any(isinstance(n, ast.Call) and (dotted_name(n.func) or "").rpartition(".")[2] !=
               "partial" for n in ast.walk(node)):
            return None  # a call runs code that reads the module as the import leaves it
        if "<locals>" not in where and len(where) == 1:
            try:
                value = self.new_frame(func.path).needed(node)
            except RecursionError:
                value = None
        elif "<locals>" not in where and len(where) == 2:
            cls = self.class_info((func.path, where[0]))
            value = self.class_level(cls, node) if cls is not None else None
        if not _unchanging(value):
            value = None  # one object every call shares: what code put in it since is not read
        self._made_defaults[key] = value
        return value

    def after_import(self, path: str, name: str, value: Value, line: int) -> Value:
        """The module-level container ``name`` of ``path`` (``value`` as bound at ``line``)
        once the program's modules are imported, where only functions of its own module
        change it in place and each runs only while that module is imported: a registration
        call at its top level, a decorator there (``@register("x", natural=True)``, whose
        decorator adds to the set as the class is defined). Each use runs as Python runs it,
        in the module's order, with every container those functions change as it is so far
        (a use under an ``if`` may or may not have run). None where that is not known: a
        function may run at another time (called in a function, kept, a bare decorator's
        wrapper, or never used here: there for callers outside the program), another module
        uses one (which modules are imported, and in what order, is not known here), a use
        may run more than once or stop half-way (a loop, a ``try``, a ``with``), one is a
        generator or has a ``finally``, or code other than these functions may change or
        share a container (an alias, an argument, ``global``)."""
        plan = self._replay_plan(path, name, line)
        if plan is None:
            return None
        start, uses = plan
        keys = [(path, n) for n in sorted(start)]
        self.overlay.update({(path, n): v for n, (v, _) in start.items()})
        try:
            for use in uses:
                before = {k: self.overlay[k] for k in keys}
                with self._apart():  # each runs its functions afresh: their changes are seen
                    self._import_use(path, use)
                if use.conditional:
                    for k in keys:
                        self.overlay[k] = join([before[k], self.overlay[k]])
            value = self.overlay[(path, name)]
            # an element a read hands out (``C[k]``, ``C.values()``) may be changed in place
            # where it is a container itself: only elements that cannot be are read
            return value if _immutable_elements(value) else None
        finally:
            for k in keys:
                del self.overlay[k]

    def _replay_plan(self, path: str, name: str, line: int,
                     ) -> tuple[dict[str, tuple[Value, set[int]]], list[Use]] | None:
        """What :meth:`after_import` replays: each container the changers of ``name``
        change, as bound, and their uses in order; None where the replay would not be
        Python's."""
        tree = self.p.tree(path)
        changers = import_time_changers(tree, name) if tree is not None else None
        bodies = replayed_bodies(changers) if changers else None
        if tree is None or not changers or bodies is None or any(
                p == path for p, _ in self.overlay):
            return None
        names, receivers = changed_names(bodies)
        start = self._replay_start(tree, path, names, changers)
        uses = self._import_uses(path, changers, line)
        if start is None or uses is None or not all(
                only_read(t, n, receivers | start[n][1]) for n in names
                for _, t in self.naming(n) if t is not None) or \
                not self._runs_alone(tree, path, names, bodies, uses, line):
            return None
        return start, uses

    def _runs_alone(self, tree: ast.Module, path: str, names: frozenset[str],
                    bodies: list[FuncNode], uses: list[Use], line: int) -> bool:
        """Whether nothing else the import runs sees or steers the replay: between the
        containers' binding and the last use the top level only defines functions, classes
        (no code in a class body) and constants, and makes the uses (no import, whose module
        may read them half-filled; no call, which may); what the changers read besides the
        containers is bound once, before the first use, and never changed (a flag set after
        a registration is not what it saw); the module looks up no global by text."""
        if re.search(r"\bglobals\(|\bvars\(|__dict__", self.module_text(path)):
            return False
        first, last = uses[0].node.lineno, max(u.node.end_lineno or 0 for u in uses)
        made = {id(u.node) for u in uses}
        return all(self._quiet(path, st, made) for st in tree.body
                   if line < st.lineno <= last) and \
            all(self._settled(path, n, first) for n in free_names(bodies) - names)

    def _settled(self, path: str, name: str, first: int) -> bool:
        """A name a changer reads: a builtin, or bound once before ``first`` (elsewhere, or in
        its module and never changed)."""
        b = self.p.binding(path, name)
        if b is None:
            return self.builtin_at(path, name)
        stmts, rebinds, changed = self._mutations(path).get(name, ([], [], False))
        return b.module != path or not (self.bound_often(path, name) or stmts or rebinds or
                                        changed or getattr(b.node, "lineno", first) >= first)

    def _quiet(self, path: str, st: ast.stmt, made: set[int]) -> bool:
        """A top-level statement that runs no code of the program besides the uses (``made``):
        a definition (its decorators uses; a class body that only defines or binds), a value
        bound or tested that calls only code from outside the program, an import of a module
        outside it, a use made."""
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            return self._quiet_definition(path, st, made)
        if isinstance(st, ast.Expr):
            return id(st.value) in made or self._quiet_expr(path, st.value)
        if isinstance(st, (ast.Assign, ast.AnnAssign)):
            return st.value is not None and self._quiet_expr(path, st.value)
        if isinstance(st, ast.If):
            return self._quiet_expr(path, st.test) and all(
                self._quiet(path, b, made) for b in (*st.body, *st.orelse))
        if isinstance(st, (ast.Import, ast.ImportFrom)):
            return not (isinstance(st, ast.ImportFrom) and st.level) and all(
                self.p.module(a.name if isinstance(st, ast.Import) else st.module or "",
                              path) is None for a in st.names)
        return isinstance(st, ast.Pass)

    def _quiet_definition(self, path: str, st: FuncNode | ast.ClassDef, made: set[int]
                          ) -> bool:
        if any(id(d) not in made for d in st.decorator_list):
            return False
        return not isinstance(st, ast.ClassDef) or (
            all(self._quiet_expr(path, e) for e in (*st.bases, *st.keywords)) and
            all(self._quiet(path, b, made) for b in st.body))

    def _quiet_expr(self, path: str, e: ast.AST) -> bool:
        """An expression whose calls all call code from outside the program (``os.environ.get``),
        which cannot read the module's containers."""
        for n in ast.walk(e):
            if isinstance(n, (ast.Lambda, ast.Await, ast.Yield, ast.YieldFrom, ast.NamedExpr)):
                return False
            if isinstance(n, ast.Call):
                root = dotted_name(n.func)
                b = self.p.binding(path, root.partition(".")[0]) if root else None
                if b is None or b.kind != "external":
                    return False
        return True

    def _replay_start(self, tree: ast.Module, path: str, names: frozenset[str],
                      changers: list[tuple[FuncNode, bool]],
                      ) -> dict[str, tuple[Value, set[int]]] | None:
        """Each container the changers change: its value as bound, and the nodes of its one
        binding; None where one is bound more than once, changed at the top level or by a
        function these are not, or rebound by a ``global``."""
        ours = {id(fn) for fn, _ in changers}
        out: dict[str, tuple[Value, set[int]]] = {}
        for n in names:
            b = self.p.binding(path, n)
            stmts, rebinds, _ = self._mutations(path).get(n, ([], [], False))
            theirs = import_time_changers(tree, n)
            if b is None or b.kind != "assign" or b.module != path or stmts or rebinds or \
                    self.bound_often(path, n) or theirs is None or \
                    not {id(fn) for fn, _ in theirs} <= ours:
                return None
            bound = {id(t) for st in module_level(tree.body)
                     if isinstance(st, (ast.Assign, ast.AnnAssign))
                     for t in (st.targets if isinstance(st, ast.Assign) else [st.target])
                     if isinstance(t, ast.Name) and t.id == n}
            out[n] = (self.binding_value(path, n), bound)
        return out

    def _import_uses(self, path: str, changers: list[tuple[FuncNode, bool]], line: int,
                     ) -> list[Use] | None:
        """The uses of the changers, in the module's order; None where one is not a use a
        replay reads (see :meth:`after_import`)."""
        uses: list[Use] = []
        for fn, returned in changers:
            if fn.decorator_list or Func(path, fn.name) != self.global_value(path, fn.name):
                return None
            count = len(uses)
            for other, t in self.naming(fn.name):
                found = import_time_uses(t, fn.name) if t is not None else None
                if found is None or (found and other != path) or not all(
                        _replayable(u, returned, line) for u in found):
                    return None
                uses += found
            if len(uses) == count:  # nothing here uses it: it is there for callers outside
                return None
        if len(uses) > _IMPORT_USES or _in_decorated_class(uses):
            return None
        return sorted(uses, key=lambda u: (u.node.lineno, u.node.col_offset))

    def _import_use(self, path: str, use: Use) -> None:
        """One use run at import time: the call made; a decorator applied to the function or
        class it decorates (the definition itself, before its other decorators: what a
        registry keeps of it is not what this reads)."""
        frame = self.new_frame(path)
        if use.decorates is None:
            frame.expr(use.node)
            return
        target = use.decorates
        top = self.p.tree(path)
        at_top = top is not None and any(target is st for st in module_level(top.body))
        # (a nested definition: what the registry keeps is not one the analysis names)
        info = self.p.cls((path, target.name)) if isinstance(target, ast.ClassDef) else None
        decorated = None if not at_top else ClassRef((path, target.name)) \
            if info is not None and self.p.class_node(info) is target \
            else Func(path, target.name) if self.p.function(path, target.name) is target else None
        call = self.decorator_call(frame, frame.expr(use.node), decorated, use.node)
        if call is not None:
            frame.expr(call)


def _replayable(use: Use, returned: bool, line: int) -> bool:
    """A use the replay runs as Python does: once, after the container is bound; a decorator
    applied to the definition itself (the innermost: one above another applies to what that
    one returned), and one whose changes are in the decorator it returns made by calling."""
    if use.guarded or use.node.lineno < line:
        return False
    if use.decorates is None:
        return True
    return use.node is use.decorates.decorator_list[-1] and (
        not returned or isinstance(use.node, ast.Call))


def _in_decorated_class(uses: list[Use]) -> bool:
    """A use in the body of a class another use decorates: the body runs before the decorator
    applies, not in the order of the lines."""
    return any(isinstance(u.decorates, ast.ClassDef) and any(
        u.decorates.lineno < o.node.lineno <= (u.decorates.end_lineno or 0) for o in uses)
        for u in uses)


def _immutable_elements(value: Value) -> bool:
    """Whether no element of a container value is a container the flow knows (one a read
    could hand out and the reader change in place)."""
    for alt in alternatives(value):
        items: list[Value] = []
        if isinstance(alt, DictV):
            items = [a.value for _, a in alt.items]
        elif isinstance(alt, Seq):
            items = [alt.item]
        elif isinstance(alt, Tup):
            items = list(alt.items)
        for item in items:
            if any(isinstance(i, (DictV, Seq)) or (isinstance(i, Tup) and i.mutable)
                   for i in alternatives(item)):
                return False
    return True


def _unchanging(value: Value) -> bool:
    """A value no code can change after it is made: a constant, a function, a partial, a
    class, a module, an Enum member, a tuple of such (not an object, a list, dict or set:
    a default is one object every call shares, and code may change it)."""
    alts = list(alternatives(value))
    return bool(alts) and all(
        isinstance(a, (Lit, Num, Func, Partial, ClassRef, ModuleRef, Ext, Member)) or (
            isinstance(a, Tup) and not a.mutable and not a.iterator and
            all(_unchanging(i) for i in a.items)) for a in alts)


def _defaulted_at(bound: dict[str, Value]) -> dict[str, Location]:
    """The parameters a call left out whose default is no literal, with that call."""
    return {k.removeprefix(DEFAULT): v.where for k, v in bound.items()
            if k.startswith(DEFAULT) and isinstance(v, Lit) and v.where}


def _kept_after(frame: Frame) -> tuple[tuple[str, Value], ...]:
    """What the names a frame keeps (a constructor's ``self.<field>``) hold where it returns,
    over every path that does; nothing where a path was cut."""
    ends = [*frame.exits, *([frame.env] if not frame.ended else [])] if frame.kept else []
    return tuple((n.partition(".")[2], join([e.get(n) for e in ends]))
                 for n in frame.kept) if ends and not frame.cut else ()


def _abstract(node: object) -> bool:
    """A function decorated ``@abstractmethod`` (a class below is to provide it)."""
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
        (dotted_name(d) or "").rpartition(".")[2] == "abstractmethod" for d in node.decorator_list)


def _bound(func: Func, params: Params, call: CallArgs | None, self_value: Inst | None,
           made: Callable[[str, ast.expr], Value]) -> tuple[dict[str, Value], tuple[object, ...]]:
    """A call's arguments by parameter name, and the context they make (None: read for any
    caller, the generic context)."""
    if call is None:
        return {}, ("generic",)
    bound = bind(func, params, call, self_value is not None, made)
    if call.self_attrs and self_value is not None and params.names and not params.static:
        # what the caller stored on ``self`` before the call, under the dotted names the
        # method reads it by
        bound.update({f"{params.names[0]}.{a}": v for a, v in call.self_attrs})
    return bound, tuple((name, bound[name]) for name in sorted(bound))


#: statements after which a yield may run more than once, not at all, or out of order
_FLOW = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.With, ast.AsyncWith, ast.Match,
         ast.YieldFrom, ast.Return, ast.Raise, ast.Break, ast.Continue, ast.IfExp, ast.BoolOp,
         ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)


def _straight_line(fn: FuncNode | ast.Lambda) -> bool:
    """A generator function whose yields each run once, in the order written: its body has no
    branch, loop, early exit or nested comprehension (a function or class nested in it is a
    scope of its own)."""
    return isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and \
        not any(isinstance(n, _FLOW) for n in own_nodes(fn.body))
