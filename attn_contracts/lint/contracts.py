"""A combine function's body, read as its own consumer record says it is called.

A consumer record says what a function does with the LSE it is given: "``is_lse_base_on_e=False``
reads base 2". The calls of that function are judged by the record; its body is another
matter: a wrapper that converts the LSE the wrong way before the kernel it calls, or that drops
the base keyword on its way to the next combine, contradicts its own record, and no caller can
see that. Read on its own, the body's LSE parameter is of no known base, so nothing inside it
contradicts anything.

So a function a consumer record describes is also interpreted once per base the record lets a
caller select (issue 37: a record must not make its own body opaque): its LSE parameter holds an
LSE of that base, its base keyword the value that selects it, another parameter named as a base
its default (the call the record describes passes no other base), every other parameter what
any caller passes. The combines it calls in turn are then uses like any other, and the rules of
:mod:`attn_contracts.lint.edges` judge them. What the body returns is judged here against the
record's output (``output.lse_base``): a merged LSE of another base is a
:class:`~attn_contracts.lint.inferred.Returned` fact, which the rules make ``AC008``.

A producer record's own function (a wrapper of the engine's Triton kernels, say) is read the
same way (:func:`run_producer`): called as the record says, every call it makes followed, its
``lse_out`` buffer an LSE of no known base so that what writes it is followed. The LSE it hands
back (returned, or left in that buffer by the kernels it launches) is judged against the
record's base: one its body computed in the other base (``m + tl.log2(s)`` under a natural-log
record) is a :class:`~attn_contracts.lint.inferred.Computed` fact, ``AC008`` too.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import TYPE_CHECKING

from attn_contracts.consumer import FixedBase
from attn_contracts.consumer import KeywordBase
from attn_contracts.findings import Location
from attn_contracts.lint.calls import CallArgs
from attn_contracts.lint.calls import Params
from attn_contracts.lint.calls import Summary
from attn_contracts.lint.calls import params_of
from attn_contracts.lint.inferred import Computed
from attn_contracts.lint.inferred import Returned
from attn_contracts.lint.program import FuncNode
from attn_contracts.lint.record_index import Consumer
from attn_contracts.lint.record_index import Producer
from attn_contracts.lint.record_index import agreed_consumer
from attn_contracts.lint.record_index import fitting_signature
from attn_contracts.lint.values import Arg
from attn_contracts.lint.values import Func
from attn_contracts.lint.values import Inst
from attn_contracts.lint.values import Lit
from attn_contracts.lint.values import Lse
from attn_contracts.lint.values import Source
from attn_contracts.lint.values import Tup
from attn_contracts.lint.values import Value
from attn_contracts.lint.values import alternatives
from attn_contracts.lint.values import join
from attn_contracts.lint.values import lse_sources_of
from attn_contracts.lint.values import source_order

if TYPE_CHECKING:
    from attn_contracts.lint.interpret import Interpreter

__all__ = ["run_contract", "run_producer"]


def run_contract(interp: Interpreter, path: str, qualname: str, node: FuncNode,
                 self_value: Inst | None) -> None:
    """Interpret ``qualname`` once per base its consumer record lets a caller select (nothing
    where no record describes it, or where its LSE parameter is not one of its own)."""
    consumer = _described(interp, path, qualname, node, self_value)
    if consumer is None:
        return
    params = params_of(node)
    skip = 1 if self_value is not None and not params.static else 0
    names = params.names[skip:]
    lse_name = _lse_parameter(consumer, names, max(params.positional - skip, 0))
    if lse_name is None:
        return
    func = Func(path, qualname, node)
    last = qualname.rpartition(".")[2]
    for keyword, value, literal, base in _selections(consumer, names):
        told = f" with {keyword}={literal}" if keyword else ""
        source = Source(f"contract:{path}:{qualname}:{literal}", base,
                        f"the LSE that {consumer.label} reads as base {base}{told}")
        # the call the record describes passes the LSE and its base keyword: a parameter
        # named as a base (one the record does not know) takes its default (``if not
        # is_lse_base_on_e: lse *= ln 2`` under a default True is no conversion the record's
        # callers get); any other is what any caller passes (``comm_backend="fi_a2a"``)
        kw = {name: Arg(interp.generic_param(func, params, name)) for name in names
              if name not in (lse_name, keyword) and not (
                  name in params.defaults and interp.base_word(name))}
        kw[lse_name] = Arg(Lse(frozenset({source})))
        if keyword:
            kw[keyword] = Arg(Lit(value, how=f" (what a caller of {last}() may pass)", assumed=True))
        summary, returned = _read_apart(interp, func, self_value, params, kw)
        expected = consumer.returns_base if consumer.returns_base in ("2", "e") else (
            base if consumer.returns_base == "input" else None)
        if expected is not None:
            _judge_returned(interp, consumer, f"{keyword}={literal}" if keyword else "",
                            expected, summary.returns, returned,
                            Location(path, node.lineno, node.col_offset + 1))


def run_producer(interp: Interpreter, path: str, qualname: str, node: FuncNode,
                 self_value: Inst | None) -> None:
    """Interpret ``qualname`` once as the producer record(s) of its exact path say it is
    called (their ``when`` arguments given), and judge the LSE it hands back (returned at the
    record's position, or left in its ``lse_out`` argument) against the record's base: an LSE
    its body computed in the other base is a :class:`~.inferred.Computed` fact. Nothing where
    no record of one fixed base describes it."""
    p = _described_producer(interp, path, qualname, self_value)
    if p is None:
        return
    params = params_of(node)
    skip = 1 if self_value is not None and not params.static else 0
    names = params.names[skip:]
    func = Func(path, qualname, node)
    outs = [names[int(spec)] if spec.isdigit() and int(spec) < len(names) else spec
            for spec in p.lse_out]
    kw = _producer_call(interp, p, func, params, names, outs)
    if kw is None:
        return
    # the LSE is what is asked for: the calls it makes (into the kernels that write it) are
    # read for what they do, whether or not an argument carries an LSE, in a memo of their own
    outer, interp.stored = interp.stored, []
    try:
        with interp.reading_all_calls():
            summary, returned = _read_apart(interp, func, self_value, params, kw)
    finally:
        stored, interp.stored = interp.stored, outer
    returned += stored
    changed = dict(summary.changed)
    handed = [changed.get(name) for name in outs]
    if p.lse_index is not None:
        handed.append(_item(summary.returns, p.lse_index))
    last = qualname.rpartition(".")[2]
    for src, where in _contradicting(handed, p.base, returned,
                                     Location(path, node.lineno, node.col_offset + 1)):
        interp.report(Computed(p.record, last, p.base, src, where))


def _described_producer(interp: Interpreter, path: str, qualname: str,
                        self_value: Inst | None) -> Producer | None:
    """The producer record(s) of exactly this function, where they agree on one fixed base,
    the arguments they are called with and where the LSE goes."""
    last = qualname.rpartition(".")[2]
    knowledge = interp.knowledge(path)
    if last not in knowledge.producers:
        return None
    full = f"{interp.module_name(path)}.{qualname}"
    found = [p for p in knowledge.find(full, last, _owner(interp, self_value))[1]
             if p.function == full]
    if not found or any(p.call_base is not None for p in found) or \
            len({(p.base, p.when, p.lse_index, p.lse_out) for p in found}) != 1:
        return None
    return found[0]


def _producer_call(interp: Interpreter, p: Producer, func: Func, params: Params,
                   names: list[str], outs: list[str]) -> dict[str, Arg] | None:
    """The arguments of the call the record describes: its ``when`` literals, the buffer the
    LSE is written into (an LSE of no known base, so that what writes it is followed), every
    other parameter what any caller passes; None where a ``when`` literal is none Python
    reads, or names no parameter."""
    kw = {name: Arg(interp.generic_param(func, params, name)) for name in names}
    last = func.qualname.rpartition(".")[2]
    for name in outs:
        if name in kw:
            kw[name] = Arg(Lse(frozenset({Source(
                f"param:{func.path}:{func.qualname}:{name}", None,
                f"the buffer {name!r} of {last}()", param=name)})))
    for key, literal in p.when:
        try:
            value = ast.literal_eval(literal)
        except (ValueError, SyntaxError):
            return None
        if key not in names or not isinstance(value, (bool, int, float, str, type(None))):
            return None
        kw[key] = Arg(Lit(value, how=f" (as producer record {p.record} is called)",
                          assumed=True))
    return kw


def _read_apart(interp: Interpreter, func: Func, self_value: Inst | None, params: Params,
                kw: dict[str, Arg]) -> tuple[Summary, list[tuple[Location, Value]]]:
    """The function's summary, called with ``kw`` by no caller of the program, and what it
    returns where (each ``return``, in the order they run)."""
    outer, interp.returned = interp.returned, []
    try:
        summary = interp.analyse_apart(func, self_value, CallArgs(
            [], kw, params.vararg is not None or params.kwarg is not None))
    finally:
        returned, interp.returned = interp.returned, outer
    return summary, returned


def _owner(interp: Interpreter, self_value: Inst | None) -> str | None:
    """The class name a method record must name, for a method run on ``self_value``."""
    cls = interp.class_info(self_value.cls) if self_value is not None else None
    return cls.name if cls is not None else None


def _item(value: Value, index: int) -> Value:
    """Item ``index`` of the tuples ``value`` may be (what a producer returns its LSE in)."""
    items = [a.items[index] for a in alternatives(value) if isinstance(a, Tup) and
             index < len(a.items)]
    return join(items) if items else None


def _judge_returned(interp: Interpreter, consumer: Consumer, told: str, expected: str,
                    returns: Value, returned: list[tuple[Location, Value]],
                    defined: Location) -> None:
    """A :class:`~.inferred.Returned` fact for each LSE of a known base other than
    ``expected`` the body returns, at the first ``return`` that returns it."""
    for src, where in _contradicting([returns], expected, returned, defined):
        interp.report(Returned(consumer, told, expected, src, where))


def _contradicting(handed: list[Value], expected: str, returned: list[tuple[Location, Value]],
                   defined: Location) -> Iterator[tuple[Source, Location]]:
    """Each LSE of a known base other than ``expected`` among ``handed``, in a fixed order,
    with the first place in ``returned`` that hands it back (a body that hands it back
    otherwise, a generator's ``yield``: ``defined``, its ``def``)."""
    for src in sorted(lse_sources_of(handed), key=source_order):
        if src.base not in ("2", "e") or src.dispatch or src.base == expected:
            continue
        where = next((at for at, value in returned if src in lse_sources_of([value])), None)
        yield src, where or defined


def _described(interp: Interpreter, path: str, qualname: str, node: FuncNode,
               self_value: Inst | None) -> Consumer | None:
    """The consumer record(s) of the function that its signature fits, as one (what records of
    one name agree on)."""
    last = qualname.rpartition(".")[2]
    knowledge = interp.knowledge(path)
    if last not in knowledge.consumers:
        return None
    consumers, _ = knowledge.find(f"{interp.module_name(path)}.{qualname}", last,
                                  _owner(interp, self_value))
    found = [c for c in consumers if isinstance(c, Consumer) and c.record]
    params = params_of(node)
    consumer, _ = agreed_consumer(fitting_signature(found, params.names,
                                                    params.kwarg is not None))
    return consumer


def _lse_parameter(consumer: Consumer, names: list[str], positional: int) -> str | None:
    """The parameter the record says takes the LSE: by name, or by position (a caller's
    position, the receiver not counted: one of the first ``positional`` of ``names``, never a
    keyword-only one)."""
    for spec in consumer.lse_args:
        if spec.isdigit():
            if int(spec) < positional:
                return names[int(spec)]
        elif spec in names:
            return spec
    return None


def _selections(consumer: Consumer, names: list[str],
                ) -> list[tuple[str, bool | int | float | str | None, str, str]]:
    """(base keyword, its value, that value as written, the base it selects) for each base a
    caller can select; the keyword is "" for a fixed base. A value the records of one name do
    not agree on selects nothing."""
    records = consumer.agreed or (consumer,)
    if all(isinstance(c.base, FixedBase) for c in records):
        base = consumer.fixed_base
        return [("", None, "", base)] if base is not None else []
    keywords = [c.base.keyword for c in records if isinstance(c.base, KeywordBase)]
    keyword = keywords[0] if keywords and len(set(keywords)) == 1 else None
    if keyword is None or keyword not in names:
        return []
    literals = sorted({lit for c in records if isinstance(c.base, KeywordBase)
                       for lit, _ in c.base.values})
    out = []
    for literal in literals:
        base = consumer.base_of(literal)
        try:
            value = ast.literal_eval(literal)
        except (ValueError, SyntaxError):
            continue
        if base is not None and isinstance(value, (bool, int, float, str, type(None))):
            out.append((keyword, value, literal, base))
    return out
