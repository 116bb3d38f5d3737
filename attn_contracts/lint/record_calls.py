"""Calls that records name: producers that return or write an LSE, consumers that read one.

A call whose callee a record of :mod:`attn_contracts.lint.record_index` names is a producer
(its LSE's base, pinned or left to dispatch, for each way its arguments may go) or a consumer
(how the call tells it the base; the LSEs it reads, recorded as uses for the rules).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import replace

from attn_contracts.call_base import CallBase
from attn_contracts.consumer import KeywordBase
from attn_contracts.findings import Location
from attn_contracts.lint.calls import CallArgs
from attn_contracts.lint.calls import params_of
from attn_contracts.lint.calls import place
from attn_contracts.lint.calls import source_text
from attn_contracts.lint.classes import dotted_name
from attn_contracts.lint.classes import own_nodes
from attn_contracts.lint.containers import literal_text
from attn_contracts.lint.inferred import BaseGiven
from attn_contracts.lint.inferred import Disagreed
from attn_contracts.lint.inferred import Dispatched
from attn_contracts.lint.inferred import Kernel
from attn_contracts.lint.inferred import Omitted
from attn_contracts.lint.inferred import Use
from attn_contracts.lint.inferred import kernel_of
from attn_contracts.lint.record_index import Consumer
from attn_contracts.lint.record_index import Producer
from attn_contracts.lint.record_index import agreed_consumer
from attn_contracts.lint.record_index import fitting_signature
from attn_contracts.lint.record_index import narrow_producers
from attn_contracts.lint.scope import Scope
from attn_contracts.lint.torch_model import short_line
from attn_contracts.lint.values import MAX_UNION
from attn_contracts.lint.values import Bound
from attn_contracts.lint.values import Ext
from attn_contracts.lint.values import Flag
from attn_contracts.lint.values import Func
from attn_contracts.lint.values import Lit
from attn_contracts.lint.values import Lse
from attn_contracts.lint.values import Param
from attn_contracts.lint.values import Rec
from attn_contracts.lint.values import Source
from attn_contracts.lint.values import Tup
from attn_contracts.lint.values import Value
from attn_contracts.lint.values import alternatives
from attn_contracts.lint.values import join
from attn_contracts.lint.values import lse_of


class RecordCalls(Scope):
    """A frame's calls of producers and consumers."""


    def qualname(self, callee: Value) -> tuple[str | None, str | None]:
        """(the callee's qualified name, the class of its receiver) for a record lookup."""
        if isinstance(callee, Func):
            module = self.i.module_name(callee.path)
            owner, _, _ = callee.qualname.rpartition(".")
            return f"{module}.{callee.qualname}", owner.rpartition(".")[2] or None
        if isinstance(callee, Bound):
            module = self.i.module_name(callee.func.path)
            cls = self.i.class_info(callee.self_value.cls)
            return (f"{module}.{callee.func.qualname}",
                    cls.name if cls is not None else None)
        if isinstance(callee, Ext):
            owner = callee.qualname.rpartition(".")[0].rpartition(".")[2]
            if callee.qualname.startswith("?"):  # a method of a class known only by name
                return None, owner.lstrip("?") or None
            return callee.qualname, owner if owner[:1].isupper() else None
        return None, None

    def records_for(self, callee: Value, name: str, node: ast.Call) -> Rec | None:
        if not name or (name not in self.k.consumers and name not in self.k.producers):
            return None
        qual, owner = self.qualname(callee)
        if callee is None:
            # a bare name bound nowhere the linter sees (a star import): its records by name;
            # a method of a receiver it cannot type is no record's (``x.merge(...)``)
            if not isinstance(node.func, ast.Name) or node.func.id in self.env:
                return None
            owner = None
        elif qual is None and owner is None:
            return None
        consumers, producers = self.k.find(qual, name, owner)
        if not consumers and not producers and isinstance(callee, Bound):
            # a subclass of a library class (a FlashInfer wrapper) keeps its records
            cls = self.i.class_info(callee.self_value.cls)
            for base in (self.i.p.hierarchy.unresolved(cls) if cls is not None else ()):
                consumers, producers = self.k.find(f"{base}.{name}", name,
                                                      base.rpartition(".")[2])
                if consumers or producers:
                    break
        fitting = self._fitting(callee, consumers, node)
        if not fitting and not producers:
            return None  # no record describes this tree's function: it is read as code
        return Rec(qual or name, tuple(fitting), tuple(producers))

    def _fitting(self, callee: Value, consumers: list[Consumer],
                 call: ast.Call) -> list[Consumer]:
        """The consumer records the callee's definition in the linted files fits (records of
        a release before its base keyword, or after, describe another tree); none where its
        one record tells the base by a keyword that a plain definition (no decorator, bound
        once at its scope's top) does not take and the call does not pass: the function is
        then read from its body. A call that passes the keyword says the definition read is
        not the one that runs (a fallback of an ``ImportError``, a decorator's wrapper)."""
        func = callee.func if isinstance(callee, Bound) else callee
        if not isinstance(func, Func) or not consumers:
            return consumers
        node = self.i.p.definition(func)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return consumers
        params = params_of(node)
        if len(consumers) == 1:
            base = consumers[0].base
            if not isinstance(base, KeywordBase) or params.kwarg is not None or \
                    base.keyword in params.names or node.decorator_list or \
                    any(k.arg == base.keyword for k in call.keywords) or \
                    not self._bound_once(func, node):
                return consumers
            return []
        return fitting_signature(consumers, params.names, params.kwarg is not None)

    def _bound_once(self, func: Func, node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        """Whether a function's ``def`` is at its module's (or its class's) top level and its
        name bound nowhere else there (no ``try``/``if`` alternative)."""
        owner, _, name = func.qualname.partition("@")[0].rpartition(".")
        if owner:
            cls = self.i.p.cls((func.path, owner))
            body = self.i.p.class_node(cls) if cls is not None else None
            stmts = body.body if body is not None else []
        else:
            tree = self.i.p.tree(func.path)
            stmts = tree.body if tree is not None else []
        return any(st is node for st in stmts) and not _binds_again(stmts, name, node)

    def fallback_producer(self, attr: str, call: CallArgs) -> Rec | None:
        """``wrapper.run(..., return_lse=True)`` on a receiver of unknown type: a producer whose
        class this module imports (``run`` alone says nothing)."""
        found = self.k.producers.get(attr)
        if not found:
            return None
        info = self.i.p.info(self.path)
        if info is None:
            return None
        imported = {orig for _, orig in info.from_imports.values()} | set(info.from_imports)
        match = [p for p in found if p.owner_class is not None and p.owner_class in imported]
        return Rec(attr, (), tuple(match)) if match else None

    def record_call(self, rec: Rec, call: CallArgs, node: ast.Call, where: Location) -> Value:
        consumers = [c for c in rec.consumers if isinstance(c, Consumer)]
        if consumers:
            consumer, disagreed = agreed_consumer(consumers)
            if consumer is not None:
                if disagreed:
                    self.note_agreed(consumer, node)
                return self.consume(consumer, call, node, where)
        producers = [p for p in rec.producers if isinstance(p, Producer)]
        if producers:
            return self.produce(producers, call, node, where)
        return None

    def note_agreed(self, c: Consumer, node: ast.Call) -> None:
        key = (self.path, c.last)
        if key in self.i._noted_agreed:
            return
        self.i._noted_agreed.add(key)
        self.i.report(Disagreed(c, self.k.versions, place(self.path, node)))

    def note_literal(self, c: Consumer, call: CallArgs, node: ast.Call | None = None,
                     call_at: Location | None = None, bound_by: Location | None = None) -> None:
        """Where a literal base is written for a consumer (``AC003`` unless the rules find it
        contradicting a producer, ``AC023``); a literal inside an ``if`` on the base is the
        dispatch itself. ``bound_by``: the partial that binds it (a call of that partial
        that gives the keyword itself replaces it)."""
        if self.on_base:
            return
        for kw in c.keywords:
            arg = call.kw.get(kw)
            if arg is None:
                continue
            lit = arg.value
            if isinstance(lit, Lit) and not lit.omitted and not lit.assumed and \
                    (where := lit.where or arg.where):
                if node is not None and call_at is not None and _inside(where, node, call_at):
                    where = call_at  # where the edge's finding is (_at_call)
                if not self.i.by_case:
                    self.i.literal_sites.setdefault(where, (c, kw, lit))
                    if bound_by is not None:
                        self.i.bound_literals.setdefault(where, set()).add((bound_by, kw))

    def consume(self, c: Consumer, call: CallArgs, node: ast.Call, where: Location) -> Value:
        self.note_literal(c, call, node, where)
        given = self.base_given(c, call, node, where)
        read: set[str | None] = set()
        for spec in c.lse_args:
            arg = call.pos[int(spec)] if spec.isdigit() and int(spec) < len(call.pos) else \
                call.kw.get(spec)
            if arg is None:
                continue
            lse = self.as_lse(arg.value)
            if lse is None:
                continue
            use = Use(c, given, lse, self.responsible(arg.value, where), self.on_base > 0,
                      whole=isinstance(arg.value, Lse))
            # what the function's LSEs are where they are used (after their conversions): the
            # kernels a backend class's declaration is judged by
            for src in lse.sources:
                if (k := kernel_of(src)) is not None:
                    # a fixed-base combine judges this edge itself (AC023): a converted LSE, or
                    # one a state merge reads (a prefix or chunk merge of prefill states, not the
                    # decode LSE the class's declaration describes), says nothing about the class
                    settled = given.kind == "fixed" and (bool(src.converted)
                                                         or "merge" in c.record)
                    self.kernels.add(replace(k, settled=True) if settled else k)
            if not self.i.by_case:  # a flag assumed one way: its read is what is judged
                self.i.uses.setdefault((c.record, c.function, given, lse, where,
                                        use.dispatched), use)
            read |= {s.base for s in lse.sources}
        if c.returns_base is None:
            return None
        merged = c.returns_base if c.returns_base in ("2", "e") else (
            given.base if given.base is not None else (read.pop() if len(read) == 1 else None))
        source = Source(f"merged:{where}", merged,
                        f"the merged LSE of {c.label} ({short_line(where)})", site=where)
        return Tup((None, Lse(frozenset({source}))), partial_items=True)

    def responsible(self, value: Value, where: Location) -> Location:
        """Where an LSE meets its consumer: the consumer call, or, where the LSE came in
        unchanged from the callers (``self._merge(out, lse)`` handing it on), the outermost call
        that handed it on: the wrapper is generic, the call site gave it the wrong LSE."""
        frames = self.i.frames
        level = len(frames) - 1
        if level < 0 or frames[level] is not self:
            return where
        site = where
        while level > 0 and id(value) in frames[level].param_ids and \
                (entry := frames[level].entry) is not None and frames[level].single_consumer():
            site = entry
            level -= 1
        return site

    def single_consumer(self) -> bool:
        """Whether this function calls one combine (a generic wrapper: the caller chose its
        LSE), not several it picks between (a helper that may itself pick the wrong one)."""
        if self._consumers is None:
            names = set()
            for sub in ast.walk(self.node) if self.node is not None else ():
                if isinstance(sub, ast.Call):
                    f = sub.func
                    n = f.attr if isinstance(f, ast.Attribute) else (
                        f.id if isinstance(f, ast.Name) else "")
                    if n in self.k.consumers:
                        names.add(n)
            self._consumers = len(names)
        return self._consumers <= 1

    def as_lse(self, value: Value) -> Lse | None:
        lse = lse_of(value)
        params = [alt for alt in alternatives(value) if isinstance(alt, Param)]
        if params:
            extra = frozenset(Source(f"param:{p.path}:{p.func}:{p.name}", None, f"parameter {p.name!r}",
                                     param=p.name) for p in params)
            lse = Lse(extra | (lse.sources if lse is not None else frozenset()))
        return lse

    def base_given(self, c: Consumer, call: CallArgs, node: ast.Call, where: Location) -> BaseGiven:
        if c.fixed_base is not None:  # the record's own base: the call is where it is read
            return BaseGiven("fixed", c.fixed_base, where)
        outer = self._chosen_by_default(node)
        for kw in c.keywords:
            arg = call.kw.get(kw)
            if arg is None:
                continue
            value = arg.value
            if isinstance(value, Lit) and value.omitted == where:
                self.note_omitted(c, kw, self._lit_base(c, value), where)
                if outer is not None:
                    value = replace(value, omitted=outer[1], how=value.how + outer[0])
            written = next((f"{kw}={source_text(k.value)}" for k in node.keywords if k.arg == kw),
                           kw)
            return _at_call(self._given_by(c, kw, value, arg.where, where, written), node,
                            where)
        if call.opaque or c.base is None:
            return BaseGiven("unknown")
        if not call.by_signature and self._base_by_position(c, call):
            return BaseGiven("unknown")
        default = c.default_base
        if not all(isinstance(x.base, KeywordBase) for x in (c.agreed or (c,))):
            return BaseGiven("fixed", default, where, f"{c.label}") if default else \
                BaseGiven("unknown")
        if default is None:
            return BaseGiven("unknown")
        kw = c.keywords[0]
        self.note_omitted(c, kw, default, where)
        if outer is not None:
            return BaseGiven("fixed", default, where, f"{c.last}'s default for {kw}{outer[0]}",
                             keyword=kw, omitted=outer[1])
        return BaseGiven("fixed", default, where, f"{c.last}'s default for {kw} (left out here)",
                         keyword=kw, omitted=where)

    def _chosen_by_default(self, node: ast.Call) -> tuple[str, Location] | None:
        """Where the combine called is a parameter's default (``combine=cp_lse_ag_out_rs``)
        that the call of this function left out: how a finding says so, and that call, which
        chose the combine and so the default base it takes."""
        callee = node.func.id if isinstance(node.func, ast.Name) else None
        outer = self.defaulted.get(callee) if callee is not None and \
            callee not in self.rebound else None
        return (f", reached as the default of parameter {callee} (left out here)", outer) \
            if outer is not None else None

    def _base_by_position(self, c: Consumer, call: CallArgs) -> bool:
        """A combine whose signature is not in the linted files, given past its LSE a
        positional argument that may be the base (a value the keyword takes, a backend's flag):
        which parameter it binds is not known, and what is not read is no error."""
        last = max((int(a) for a in c.lse_args if a.isdigit()), default=1)
        for arg in call.pos[last + 1:]:
            if any(isinstance(v, Flag) or (isinstance(v, Lit) and self._lit_base(c, v))
                   for v in alternatives(arg.value)):
                return True
        return False

    def note_omitted(self, c: Consumer, kw: str, default: str | None, where: Location) -> None:
        self.i.report(Omitted(c, kw, default, where))

    def _given_by(self, c: Consumer, kw: str, value: Value, arg_where: Location | None,
                  where: Location, written: str = "") -> BaseGiven:
        """How the keyword's value tells the base: one way, or (a conditional expression, a
        table, two paths) each of the ways it may (:attr:`BaseGiven.options`)."""
        options = list(alternatives(value))
        lits = [v for v in options if isinstance(v, Lit)]
        if lits and len(lits) == len(options):
            bases = {self._lit_base(c, v) for v in lits}
            if len(bases) == 1 and None not in bases:
                lit = lits[0]
                return BaseGiven("fixed", bases.pop(), lit.where or arg_where,
                                 f"{kw}={lit.value!r}{lit.how}",
                                 literal=not (lit.omitted or lit.assumed),
                                 keyword=kw, omitted=lit.omitted, table=lit.table,
                                 rebound=lit.rebound)
        if len(options) > 1:
            ways = tuple(self._given_by(c, kw, v, arg_where, where, written) for v in options)
            return BaseGiven("choice", None, arg_where, kw, keyword=kw, options=ways)
        one = options[0] if options else None
        if isinstance(one, Flag):
            return BaseGiven("flag", None, one.where, f"{kw}=<{one.attr} of the backend>",
                             keyword=kw, flag=one)
        if isinstance(one, Param):
            return BaseGiven("param", None, arg_where, kw, keyword=kw, param=one)
        # given, but not read: what it was given is named (a warning where an LSE of a known
        # base reaches the call), never judged
        return BaseGiven("unknown", None, arg_where, written or kw, keyword=kw)

    @staticmethod
    def _lit_base(c: Consumer, lit: Lit) -> str | None:
        return c.base_of(repr(lit.value))

    def produce(self, producers: list[Producer], call: CallArgs, node: ast.Call,
                where: Location) -> Value:
        given: dict[str, str] = {}
        for k, a in call.kw.items():
            texts = literal_text(a.value)
            given[k] = texts[0] if len(texts) == 1 else "<expr>"
        found = narrow_producers(producers, given, call.opaque)
        if not found:
            return None
        sources: set[Source] = set()
        name = producers[0].last
        for p in found:
            for base, dispatch, bases, choice in self.bases_of(p, call, node, where):
                what = f"the LSE of {name}() (producer record {p.record}, {short_line(where)})"
                src = Source(f"producer:{where}:{p.record}", base, what, record=p.record,
                             choice=choice, dispatch=dispatch, bases=bases, layout=p.layout,
                             site=where)
                sources.add(src)
                self.produced.add(Kernel(p.record, name, where, base if not dispatch else None,
                                         dispatch, bases, choice))
        lse = Lse(frozenset(sources))
        for p in found:
            for spec in p.lse_out:
                self.write_out(call, spec, lse)
        index = found[0].lse_index if len({p.lse_index for p in found}) == 1 else None
        if index is None:
            return None
        items: list[Value] = [None] * (index + 1)
        items[index] = lse
        return Tup(tuple(items), partial_items=True)

    def write_out(self, call: CallArgs, spec: str, lse: Lse) -> None:
        """The kernel writes its LSE into the argument ``spec`` (a position, or a parameter's
        name) binds to, as Python binds it: by position, by keyword, or from a ``**mapping``
        whose keys are known. The buffer it is (or is a view of: ``lse=lse[start:end]``, one
        chunk per call) holds that LSE afterwards; where the mapping may lack the key, it holds
        either."""
        arg = (call.pos[int(spec)] if int(spec) < len(call.pos) else None) if spec.isdigit() \
            else call.kw.get(spec)
        if arg is None:
            return
        for serial, target in sorted(arg.buffers, key=lambda b: (b[1].lineno, b[1].col_offset)):
            if serial != self.serial:
                continue  # a variable of another call's frame (a mapping built there)
            name = dotted_name(target)
            self.assign(target, join([self.env.get(name), lse])
                        if spec in call.maybe and name is not None else lse)

    def bases_of(self, p: Producer, call: CallArgs, node: ast.Call, where: Location,
                 ) -> Iterator[tuple[str | None, bool, tuple[str, ...], str]]:
        """(base, left to dispatch, the bases dispatch may pick, the choice) for each way the
        call's arguments may go."""
        cb = p.call_base
        if cb is None:
            yield p.base, False, (), ""
            return
        dispatched = False
        for combo in _combos(cb, call)[:MAX_UNION]:
            if combo.get(cb.keyword) == "<expr>" or (
                    cb.default_by is not None and combo.get(cb.default_by) == "<expr>" and
                    cb.keyword not in combo):
                yield None, False, (), f"{cb.keyword} chosen by an expression"
                continue
            if call.opaque and cb.keyword not in combo and self._may_pass(node, cb.keyword):
                yield None, False, (), f"{cb.keyword} passed through **kwargs"
                continue
            base = cb.resolve(combo)
            if base is not None:
                choice = ", ".join(f"{k}={v}" for k, v in combo.items())
                yield base, False, (), choice
                continue
            dispatched = True
            yield None, True, cb.bases(), _left_to_dispatch(cb, combo)
        if dispatched:
            self.note_dispatched(p, cb, call, where)

    def note_dispatched(self, p: Producer, cb: CallBase, call: CallArgs, where: Location) -> None:
        self.i.report(Dispatched(p, cb, where))

    def _may_pass(self, node: ast.Call, keyword: str) -> bool:
        """Whether a ``**x`` the linter cannot read may carry ``keyword``: the function names
        the keyword anywhere (``x["keyword"] = ...``), or ``x`` is a parameter."""
        fn = self.node
        for kw in node.keywords:
            if kw.arg is not None:
                continue
            if not isinstance(kw.value, ast.Name) or fn is None:
                return True
            for sub in ast.walk(fn):
                if (isinstance(sub, ast.Constant) and sub.value == keyword) or (
                        isinstance(sub, ast.keyword) and sub.arg == keyword):
                    return True
                if isinstance(sub, ast.arg) and sub.arg == kw.value.id:
                    return True
        return False


def _combos(cb: CallBase, call: CallArgs) -> list[dict[str, str]]:
    """Each way the call's arguments that may decide the base may be spelled: its keyword, the
    one its default depends on, and those whose presence decides that default's dispatch (an
    expression there picks); a keyword a ``**mapping`` may lack, both with and without it."""
    keys = [cb.keyword, *([cb.default_by] if cb.default_by else []),
            *(name for name, _ in cb.picked_by)]
    options: list[list[str | None]] = []
    for k in keys:
        arg = call.kw.get(k)
        if arg is None:
            options.append([None])
            continue
        texts: list[str | None] = list(literal_text(arg.value))
        if k in call.maybe:
            texts.append(None)
        options.append(texts)
    combos: list[dict[str, str]] = [{}]
    for k, texts in zip(keys, options, strict=True):
        combos = [{**c, **({k: t} if t is not None else {})} for c in combos for t in texts]
    return combos


def _left_to_dispatch(cb: CallBase, combo: dict[str, str]) -> str:
    """How a call left its LSE's base to the library's dispatch, for the message."""
    by = ""
    if cb.default_by is not None:
        shown = combo.get(cb.default_by) or f"{cb.default_by_omitted} by default"
        by = f", {cb.default_by}={shown}" if shown.startswith("'") else \
            f", {cb.default_by} {shown}"
    chosen = "not passed" if cb.keyword not in combo else f"= {combo[cb.keyword]}"
    return f"{cb.keyword} {chosen}{by}: left to dispatch"


def _at_call(given: BaseGiven, node: ast.Call, where: Location) -> BaseGiven:
    """A base written inside the call itself (its keyword's value, on a line of a call written
    over several) is reported at the call: one place names the call whichever of its lines
    the base is on. A base written elsewhere (a constant, a default) keeps its own place."""
    inside = given.where is not None and _inside(given.where, node, where)
    options = tuple(_at_call(o, node, where) for o in given.options)
    if inside or options != given.options:
        return replace(given, where=where if inside else given.where, options=options)
    return given


def _inside(at: Location, node: ast.Call, call_at: Location) -> bool:
    """Whether ``at`` is on one of the lines of the call ``node`` (at ``call_at``)."""
    return at.path == call_at.path and at.line is not None and \
        node.lineno <= at.line <= (node.end_lineno or node.lineno)



def _binds_again(body: list[ast.stmt], name: str, node: ast.AST) -> bool:
    """Whether ``body``'s scope binds ``name`` anywhere but at ``node`` (an assignment, a
    ``def``, a class, an import, at any depth of its blocks: an ``if``/``try`` alternative)."""
    for n in own_nodes(body):
        if n is node:
            continue
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            bound = n.id
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound = n.name
        elif isinstance(n, ast.alias):
            bound = (n.asname or n.name).partition(".")[0]
        else:
            continue
        if bound == name:
            return True
    return False
