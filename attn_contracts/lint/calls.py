"""Calls as the interpreter reads them: arguments, parameters, summaries.

A call's arguments (:class:`CallArgs`), a function's parameters (:class:`Params`) and how
Python binds the one to the other (:func:`bind`), a function's summary (what it returns, the
kernels it reaches) and its instantiation for one call past the bound on contexts, the
literals written in the code, and whether a value or a call carries what the flow must follow.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Callable
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import replace
from typing import cast

from attn_contracts.findings import Location
from attn_contracts.lint.inferred import Kernel
from attn_contracts.lint.inferred import Misconverted
from attn_contracts.lint.program import FuncNode
from attn_contracts.lint.torch_model import constant_name
from attn_contracts.lint.torch_model import convert
from attn_contracts.lint.torch_model import lose_base
from attn_contracts.lint.torch_model import map_lse
from attn_contracts.lint.values import Arg
from attn_contracts.lint.values import Bound
from attn_contracts.lint.values import DictV
from attn_contracts.lint.values import Ext
from attn_contracts.lint.values import Flag
from attn_contracts.lint.values import Func
from attn_contracts.lint.values import Inst
from attn_contracts.lint.values import Lit
from attn_contracts.lint.values import Lse
from attn_contracts.lint.values import Num
from attn_contracts.lint.values import Partial
from attn_contracts.lint.values import Rec
from attn_contracts.lint.values import Seq
from attn_contracts.lint.values import Source
from attn_contracts.lint.values import Tup
from attn_contracts.lint.values import Value
from attn_contracts.lint.values import alternatives
from attn_contracts.lint.values import join
from attn_contracts.lint.values import lse_of


def place(path: str, node: ast.AST) -> Location:
    return Location(path, getattr(node, "lineno", 1), getattr(node, "col_offset", 0) + 1)


def source_text(node: ast.AST, limit: int = 60) -> str:
    try:
        text = ast.unparse(node)
    except (RecursionError, ValueError):
        return "<an expression nested too deeply to print>"
    return text if len(text) <= limit else f"{text[:limit - 1]}…"


@dataclass
class Summary:
    returns: Value = None
    kernels: frozenset[Kernel] = frozenset()  # LSEs where they are used (after conversions)
    produced: frozenset[Kernel] = frozenset()  # the producer calls themselves
    #: the parameters whose tensor the function changed in place (``p.mul_(c)``, never
    #: rebinding ``p``), with what they hold at its end: the caller's argument holds it too
    changed: tuple[tuple[str, Value], ...] = ()
    #: the enclosing function's variables its ``nonlocal`` statements rebind, with what they
    #: hold at its end
    nonlocals: tuple[tuple[str, Value], ...] = ()
    #: conversions it applied to an LSE already in their target base: each call of it (a
    #: memoised summary too) is reported where it hands the function that LSE
    misconverted: tuple[Misconverted, ...] = ()
    #: every path raises (or never leaves a loop): a call of it does not return
    never: bool = False
    #: what a ``__post_init__`` leaves in the fields it stores, over the paths that return
    after: tuple[tuple[str, Value], ...] = ()


#: a callee that changed its parameters' tensors in place (:attr:`Summary.changed`), and
#: whether the call surely runs it (not one of several overrides it dispatches to)
Changed = tuple[Func, tuple[tuple[str, Value], ...], bool]


def merge_summaries(a: object, b: object) -> Summary:
    """The summary of a call cycle's head over two passes (what either found)."""
    x, y = cast(Summary, a), cast(Summary, b)
    return Summary(join([x.returns, y.returns]), x.kernels | y.kernels, x.produced | y.produced,
                   _joined(x.changed, y.changed), _joined(x.nonlocals, y.nonlocals),
                   tuple(dict.fromkeys((*x.misconverted, *y.misconverted))),
                   x.never and y.never, _joined(x.after, y.after))


def _joined(a: tuple[tuple[str, Value], ...], b: tuple[tuple[str, Value], ...],
            ) -> tuple[tuple[str, Value], ...]:
    out = dict(a)
    for name, value in b:
        out[name] = join([out[name], value]) if name in out else value
    return tuple(out.items())


@dataclass
class CallArgs:
    pos: list[Arg]
    kw: dict[str, Arg]
    opaque: bool  # *args or **kwargs the linter cannot read
    #: keywords a ``**dict`` may not carry (set on some paths only)
    maybe: frozenset[str] = frozenset()
    where: Location | None = None
    #: its positional arguments are also under their parameters' names (the callee's
    #: signature is in the linted program)
    by_signature: bool = False
    #: a method called on the caller's own ``self``: the attributes the caller stored on it
    #: that the method reads (``self.base = b`` then ``self._bind()``), as the method sees them
    self_attrs: tuple[tuple[str, Value], ...] = ()


_FUNC_NODES = (ast.FunctionDef, ast.AsyncFunctionDef)


@dataclass
class Params:
    names: list[str]
    defaults: dict[str, ast.expr]
    annotations: dict[str, ast.expr]
    var: list[str]
    static: bool
    #: how many of ``names`` take positional arguments (the rest are keyword-only)
    positional: int = 0
    vararg: str | None = None  # ``*args``
    kwarg: str | None = None  # ``**kwargs``
    #: how many of ``names`` are positional-only (before ``/``): a keyword never binds them
    posonly: int = 0


def params_of(node: FuncNode | ast.Lambda) -> Params:
    a = node.args
    positional = [p.arg for p in (*a.posonlyargs, *a.args)]
    defaults = dict(zip(positional[len(positional) - len(a.defaults):], a.defaults, strict=True))
    defaults.update({k.arg: d for k, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)
                     if d is not None})
    anns = {p.arg: p.annotation for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)
            if p.annotation is not None}
    var = [v.arg for v in (a.vararg, a.kwarg) if v is not None]
    static = isinstance(node, _FUNC_NODES) and any(
        isinstance(d, ast.Name) and d.id == "staticmethod" for d in node.decorator_list)
    return Params(positional + [k.arg for k in a.kwonlyargs], defaults, anns, var, static,
                   len(positional), a.vararg.arg if a.vararg else None,
                   a.kwarg.arg if a.kwarg else None, len(a.posonlyargs))


def nonlocal_names(node: ast.AST) -> frozenset[str]:
    """The names a function's own ``nonlocal`` statements declare (not a nested function's):
    its stores rebind the enclosing function's variables."""
    out: set[str] = set()
    # a statement is only ever inside another's statement lists (an expression holds none),
    # so only those lists are walked
    todo: list[ast.AST] = [node]
    while todo:
        n = todo.pop()
        if isinstance(n, ast.Nonlocal):
            out.update(n.names)
        elif n is node or not isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda,
                                             ast.ClassDef)):
            for field in _STATEMENT_LISTS:
                held = getattr(n, field, None)
                if isinstance(held, list):  # a lambda's body is one expression
                    todo.extend(held)
    return frozenset(out)


#: the fields that hold statements (``match``'s cases and ``try``'s handlers hold bodies)
_STATEMENT_LISTS = ("body", "orelse", "finalbody", "handlers", "cases")


def carries(value: Value, depth: int = 0) -> bool:
    """A value the flow must follow from wherever it is read: an LSE, a combine (bound or not),
    an object built with a base."""
    if depth > 3:
        return False
    for alt in alternatives(value):
        if isinstance(alt, Lse):
            return True
        if isinstance(alt, Rec) and alt.consumers:
            return True
        if isinstance(alt, Partial) and carries(alt.target, depth + 1):
            return True
        if isinstance(alt, Tup) and any(carries(v, depth + 1) for v in alt.items):
            return True
        if isinstance(alt, Seq) and carries(alt.item, depth + 1):
            return True
        if isinstance(alt, Inst) and _built_with_base(alt):
            return True  # an object built with a base: MLADCPManager(is_lse_base_on_e=...)
    return False


def _built_with_base(inst: Inst) -> bool:
    """An object whose constructor was given an LSE, a backend's flag or a literal bool for a
    keyword that names an LSE or a base."""
    return inst.ctor is not None and any(
        isinstance(v, (Flag, Lse)) or (isinstance(v, Lit) and isinstance(v.value, bool)
                                       and ("lse" in k or "base" in k))
        for k, v in inst.ctor[1])


def call_matters(call: CallArgs) -> bool:
    """An argument carries an LSE, a backend's base attribute or a bound combine: the callee
    matters whatever its text names."""
    return any(_matters(value) for value in (*(a.value for a in (*call.pos, *call.kw.values())),
                                             *(v for _, v in call.self_attrs)))


def _matters(value: Value, depth: int = 0) -> bool:
    """The value is, or a container holds, an LSE, a base attribute or a bound callable (an
    ``(out, lse)`` pair passed whole to a helper that unpacks it)."""
    if depth > 3:
        return False
    for alt in alternatives(value):
        if isinstance(alt, (Lse, Flag, Partial)):
            return True
        if isinstance(alt, Tup) and any(_matters(v, depth + 1) for v in alt.items):
            return True
        if isinstance(alt, Seq) and _matters(alt.item, depth + 1):
            return True
        if isinstance(alt, DictV) and any(_matters(a.value, depth + 1) for _, a in alt.items):
            return True
    return False


def literal_value(path: str, node: ast.expr) -> Value:
    """A constant written in the code (bool, str, number, None), with where."""
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(
            node.value, (bool, int, float, str))):
        c = constant_name(node, None)
        if c is not None:
            return Num(c)
        return Lit(node.value, place(path, node))
    return None


def instantiate(summary: Summary, func: Func, bound: dict[str, Value]) -> Summary:
    """A function's summary read with its parameters (past the bound on call contexts) for
    one call: the LSE it returns from a parameter is the argument's, put through the same
    conversions (counted: an LSE converted twice is of neither base)."""
    prefix = f"param:{func.path}:{func.qualname}:"

    def put(lse: Lse) -> Lse:
        out: set[Source] = set()
        for s in lse.sources:
            given = lse_of(bound[s.param]) if s.param is not None and \
                s.key == prefix + s.param and s.param in bound else None
            if given is None:
                out.add(s)
                continue
            for target, where, how in s.shifts:
                given = lose_base(given, where, how) if target == "?" else \
                    convert(given, target == "e", where, how)
            out |= given.sources
        return Lse(frozenset(out))

    # what it changed in place is read for one context's arguments only: not carried over
    return replace(summary, returns=map_lse(summary.returns, put), changed=())


def callee_name(callee: Value, written: str) -> str:
    """The name a callee's records are found by: its own (a partial's target called through
    ``self.dcp_combine(...)`` is ``cp_lse_ag_out_rs``), else the name the call is written with."""
    if isinstance(callee, Func):
        return callee.qualname.rpartition(".")[2].partition("@")[0]
    if isinstance(callee, Bound):
        return callee.func.qualname.rpartition(".")[2]
    if isinstance(callee, Ext):
        return callee.qualname.rpartition(".")[2]
    return written


#: the key a constructor call's ``*args``/``**kwargs`` leaves among its arguments: a field
#: it does not name may have been given any value by them
OPAQUE_ARGS = "*"


def bind(func: Func, params: Params, call: CallArgs, method: bool,
         made: Callable[[str, ast.expr], Value] | None = None) -> dict[str, Value]:
    """The parameters' values as Python binds a call's arguments: positions in order to the
    positional parameters, the rest to ``*args`` (a tuple); keywords by name, the rest to
    ``**kwargs`` (a dict); a parameter left out gets its default (``made``: what a default
    that is no literal evaluated to where the ``def`` ran)."""
    skip = 1 if method and not params.static else 0
    names = params.names[skip:]
    positional = names[:max(params.positional - skip, 0)]
    out: dict[str, Value] = {}
    for name, arg in zip(positional, call.pos, strict=False):
        out[name] = arg.value
    if params.vararg is not None:
        out[params.vararg] = None if call.opaque else Tup(
            tuple(a.value for a in call.pos[len(positional):]))
    extra: list[tuple[str, Arg]] = []
    by_keyword = set(names) - set(params.names[:params.posonly])
    for name, arg in call.kw.items():
        if name in by_keyword:  # a positional-only parameter's name goes to ``**kwargs``
            out[name] = arg.value
        else:
            extra.append((name, arg))
    if params.kwarg is not None:
        out[params.kwarg] = None if call.opaque else DictV(
            tuple(sorted(extra, key=lambda kv: kv[0])), call.maybe & {k for k, _ in extra})
    if not call.opaque:
        _defaulted(out, func, params, call, names, made)
    return out


def _defaulted(out: dict[str, Value], func: Func, params: Params, call: CallArgs,
               names: Sequence[str], made_at: Callable[[str, ast.expr], Value] | None) -> None:
    """Each parameter the call leaves out (surely) gets its default: the value it had where
    the function was made (a nested function's, kept in its closure), else the literal its
    ``def`` writes, else what ``made_at`` reads the expression as where the ``def`` ran."""
    made = dict(func.closure)
    for name in names:
        if name in out or name in call.maybe:
            continue
        if DEFAULT + name in made:
            out[name] = made[DEFAULT + name]
            continue
        default = params.defaults.get(name)
        if default is None:
            continue
        lit = literal_value(func.path, default)
        if isinstance(lit, Lit):
            out[name] = replace(lit, how=f" (the default of {func.qualname.rpartition('.')[2]}"
                                f"({name}=...), left out)", omitted=call.where)
        elif lit is None and made_at is not None:
            out[name] = made_at(name, default)
            if out[name] is not None and call.where is not None:
                # which call left it out: a context of its own (the finding of what it
                # holds may name that call, as a left-out literal's does)
                out[DEFAULT + name] = Lit(None, call.where)
        else:
            out[name] = lit


#: the prefix of a nested function's default in its closure (:meth:`~.scope.Scope.closure`):
#: no name a source can bind
DEFAULT = "=default:"

#: the variable of the generator :func:`as_generator` writes for ``map``/``filter`` (no name a
#: source can bind)
GENERATED_ITEM = "<item>"

#: a comprehension's syntax node
ComprehensionNode = ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp


def _placed(built: ast.AST, at: ast.AST, kept: Sequence[ast.AST] = ()) -> None:
    """Every node of ``built`` (a synthetic tree) that has no place yet takes ``at``'s (those
    in ``kept``, the source's own, keep theirs)."""
    for sub in ast.walk(built):
        if "lineno" in getattr(sub, "_attributes", ()) and not hasattr(sub, "lineno") and \
                not any(sub is k for k in kept):
            ast.copy_location(sub, at)


def as_generator(node: ast.Call, kept: dict[int, tuple[ast.AST, ast.AST | None]]
                 ) -> ast.GeneratorExp | None:
    """``filter(f, xs)`` as the generator ``(x for x in xs if f(x))`` (``filter(None,
    xs)``: ``if x``), ``map(f, xs)`` as ``(f(x) for x in xs)``: what Python's builtins
    compute, read by the comprehension's own semantics. None for another form (keywords,
    ``*args``, ``map`` over several iterables). ``kept``: the nodes built, by the call's id
    (each built once, and kept alive with the tree: a cache keyed by a node's id never sees
    a freed node's id again)."""
    known = kept.get(id(node))
    if known is not None:
        return cast(ast.GeneratorExp | None, known[1])
    gen: ast.GeneratorExp | None = None
    name = node.func.id if isinstance(node.func, ast.Name) else ""
    if len(node.args) == 2 and not node.keywords and \
            not any(isinstance(a, ast.Starred) for a in node.args):
        fn, items = node.args
        item = ast.Name(id=GENERATED_ITEM, ctx=ast.Load())
        applied = ast.Call(func=fn, args=[item], keywords=[])
        none = isinstance(fn, ast.Constant) and fn.value is None
        elt: ast.expr = item if name == "filter" or none else applied
        ifs: list[ast.expr] = [item if none else applied] if name == "filter" else []
        gen = ast.GeneratorExp(elt=elt, generators=[ast.comprehension(
            target=ast.Name(id=GENERATED_ITEM, ctx=ast.Store()), iter=items, ifs=ifs, is_async=0)])
        _placed(gen, node, (fn, items))
    kept[id(node)] = (node, gen)
    return gen


def as_itemgetter(node: ast.Call, kept: dict[int, tuple[ast.AST, ast.AST | None]]
                  ) -> ast.Lambda | None:
    """``operator.itemgetter(k)`` as ``lambda x: x[k]`` (``itemgetter(a, b)``: ``lambda x:
    (x[a], x[b])``), for constant keys: the function Python builds, read by subscription's
    own semantics. None for another form. ``kept``: as in :func:`as_generator`."""
    known = kept.get(id(node))
    if known is not None:
        return cast(ast.Lambda | None, known[1])
    lam: ast.Lambda | None = None
    if node.args and not node.keywords and all(isinstance(a, ast.Constant) for a in node.args):
        items: list[ast.expr] = [
            ast.Subscript(value=ast.Name(id=GENERATED_ITEM, ctx=ast.Load()), slice=key,
                          ctx=ast.Load()) for key in node.args]
        body = items[0] if len(items) == 1 else ast.Tuple(elts=items, ctx=ast.Load())
        lam = ast.Lambda(args=ast.arguments(posonlyargs=[], args=[ast.arg(arg=GENERATED_ITEM)],
                                            kwonlyargs=[], kw_defaults=[], defaults=[]),
                         body=body)
        _placed(lam, node, node.args)
    kept[id(node)] = (node, lam)
    return lam


def as_methodcaller(node: ast.Call, kept: dict[int, tuple[ast.AST, ast.AST | None]]
                    ) -> ast.Lambda | None:
    """``operator.methodcaller("name", a, k=b)`` as ``lambda p0, p1, x: x.name(p0, k=p1)``, to
    be bound to the arguments as given (a ``partial`` of it: they are evaluated once, where
    the call is, and the object is no descriptor, as ``methodcaller``'s is not): the function
    Python builds, read by the method call's own semantics. None for another form (a name
    that is not a constant string, ``*args``/``**kwargs``). ``kept``: as in
    :func:`as_generator`."""
    known = kept.get(id(node))
    if known is not None:
        return cast(ast.Lambda | None, known[1])
    lam: ast.Lambda | None = None
    first = node.args[0] if node.args else None
    if isinstance(first, ast.Constant) and isinstance(first.value, str) and \
            first.value.isidentifier() and \
            not any(isinstance(a, ast.Starred) for a in node.args) and \
            all(k.arg is not None for k in node.keywords):
        bound = [f"{GENERATED_ITEM}{i}" for i in range(len(node.args) - 1 + len(node.keywords))]
        given = len(node.args) - 1
        call = ast.Call(
            func=ast.Attribute(value=ast.Name(id=GENERATED_ITEM, ctx=ast.Load()),
                               attr=first.value, ctx=ast.Load()),
            args=[ast.Name(id=b, ctx=ast.Load()) for b in bound[:given]],
            keywords=[ast.keyword(arg=k.arg, value=ast.Name(id=b, ctx=ast.Load()))
                      for k, b in zip(node.keywords, bound[given:], strict=True)])
        lam = ast.Lambda(args=ast.arguments(
            posonlyargs=[], args=[ast.arg(arg=b) for b in (*bound, GENERATED_ITEM)],
            kwonlyargs=[], kw_defaults=[], defaults=[]), body=call)
        _placed(lam, node)
    kept[id(node)] = (node, lam)
    return lam


#: the methods of Python's containers and strings that are their operators, by the
#: expression each is, of the receiver ``r`` and the argument ``v``
PROTOCOL_METHODS: dict[str, Callable[[ast.expr, ast.expr], ast.expr]] = {
    "__contains__": lambda r, v: ast.Compare(left=v, ops=[ast.In()], comparators=[r]),
    "__getitem__": lambda r, v: ast.Subscript(value=r, slice=v, ctx=ast.Load()),
}


def as_protocol_method(name: str, node: ast.AST,
                       kept: dict[int, tuple[ast.AST, ast.AST | None]]) -> ast.Lambda:
    """``r.__contains__`` of a container, as ``lambda r, v: v in r`` (bound to the receiver
    by the caller): the operator the method is. ``kept``: as in :func:`as_generator`."""
    known = kept.get(id(node))
    if known is not None:
        return cast(ast.Lambda, known[1])
    r, v = f"{GENERATED_ITEM}r", f"{GENERATED_ITEM}v"
    lam = ast.Lambda(args=ast.arguments(
        posonlyargs=[], args=[ast.arg(arg=r), ast.arg(arg=v)], kwonlyargs=[], kw_defaults=[],
        defaults=[]), body=PROTOCOL_METHODS[name](ast.Name(id=r, ctx=ast.Load()),
                                                  ast.Name(id=v, ctx=ast.Load())))
    _placed(lam, node)
    kept[id(node)] = (node, lam)
    return lam


def as_bound_call(node: ast.Call, kept: dict[int, tuple[ast.AST, ast.AST | None]]
                  ) -> ast.Call:
    """``str.lower(x, *rest)`` (a builtin type's method looked up on the type) as
    ``x.lower(*rest)``: Python binds the first argument as the receiver, so the method reads
    as it does called on the object. ``kept``: as in :func:`as_generator`."""
    known = kept.get(id(node))
    if known is not None:
        return cast(ast.Call, known[1])
    func = cast(ast.Attribute, node.func)
    bound = ast.Call(func=ast.copy_location(ast.Attribute(value=node.args[0], attr=func.attr,
                                                          ctx=ast.Load()), func),
                     args=node.args[1:], keywords=node.keywords)
    ast.copy_location(bound, node)
    kept[id(node)] = (node, bound)
    return bound


def first_iterable_named(node: ComprehensionNode, name: str,
                         kept: dict[int, tuple[ast.AST, ast.AST | None]]) -> ComprehensionNode:
    """``node`` with its first iterable replaced by the name ``name`` (a class body's
    comprehension, whose first iterable is evaluated apart). ``kept``: as in
    :func:`as_generator`."""
    known = kept.get(id(node))
    if known is not None:
        return cast(ComprehensionNode, known[1])
    first = copy.copy(node.generators[0])
    first.iter = ast.copy_location(ast.Name(id=name, ctx=ast.Load()), node.generators[0].iter)
    renamed = copy.copy(node)
    renamed.generators = [first, *node.generators[1:]]
    kept[id(node)] = (node, renamed)
    return renamed
