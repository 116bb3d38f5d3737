"""Follow the LSE through the linted program: an abstract interpreter over every file at once.

Each function is interpreted statement by statement over the values of
:mod:`attn_contracts.lint.values`, with the syntax node's type choosing the handler (as pyflakes
dispatches). What it records, for the rules of :mod:`attn_contracts.lint.edges`:

- every **producer call** a record names (a kernel that returns an LSE, or writes one into an
  ``lse=`` buffer), with the base its arguments choose, pinned or left to the library's dispatch
  (:class:`Kernel`); which kernels each function reaches, through every call below it;
- every **consumer use**: an LSE reaching a combine whose record says how it reads the base, with
  the base this call gives it — a literal (written here, through a name, a partial, a
  constructor argument that an object keeps, a parameter's default), a backend's declared
  attribute (``self.impl.lse_base_on_e``), a parameter, or an expression it cannot read
  (:class:`Use`).

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
import bisect
import itertools
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TypeVar, cast

from attn_contracts import lse_ops
from attn_contracts.call_base import CallBase
from attn_contracts.consumer import KeywordBase
from attn_contracts.findings import Finding
from attn_contracts.lint.bounds import FUNCTION_BUDGET, Bounds
from attn_contracts.lint.classes import ClassInfo, dotted_name, module_level, statements
from attn_contracts.lint.program import FuncNode, Program
from attn_contracts.lint.record_index import (
    Consumer,
    Knowledge,
    Producer,
    agreed_consumer,
    narrow_producers,
)
from attn_contracts.lint.values import (
    MAX_UNION,
    Arg,
    Bound,
    ClassKey,
    ClassRef,
    DictV,
    Ext,
    ExtInst,
    Flag,
    Func,
    Inst,
    Lit,
    Lse,
    Member,
    ModuleRef,
    Num,
    Param,
    Partial,
    Rec,
    Seq,
    Source,
    Super,
    Tup,
    Union_,
    Value,
    alternatives,
    join,
    lse_of,
)
from attn_contracts.records import LN2, LOG2E

__all__ = ["BaseGiven", "Disagreed", "Dispatched", "Fact", "Interpreter", "Kernel", "Omitted",
           "Use", "Weighed"]

# Calls and attributes that keep an LSE's base: the table the tracer reads too (``lse_ops``)
_KEEPS_BASE = lse_ops.lint_methods()
#: of those, the ones that swap a 2-D LSE's two axes; the rest keep the layout or lose it
_TRANSPOSES = frozenset(op.name for op in lse_ops.LSE_OPS if op.layout in ("swap", "moved"))
_SWAPS = frozenset(op.name for op in lse_ops.LSE_OPS if op.layout == "swap")
_LAYOUT_KEEPING = frozenset(op.name for op in lse_ops.LSE_OPS if op.layout == "kept")
_KEEPS_BASE_ATTRS = lse_ops.lint_attributes()
_TORCH_KEEPS = lse_ops.lint_functions()
#: natural-log reductions of LSEs (``torch.logsumexp(lse, dim=-1)`` over a split axis,
#: ``torch.logaddexp(a, b)``): a natural-log LSE comes out, without its layout; a base-2 one
#: does not (what comes out of it is no LSE of either base)
_LN_REDUCTIONS = frozenset(op.name for op in lse_ops.LSE_OPS if op.only_base == "e")
#: exponentials a hand-written merge weighs LSEs with (``torch.exp2(lse - m)``,
#: ``logits.softmax(1)``): the table the tracer's twin reads (``lse_ops.EXPONENTIALS``)
_EXPONENTIALS = frozenset(op.name for op in lse_ops.EXPONENTIALS)
#: the methods that add elements to (or take them from) a list, set or deque
_GROWS = frozenset({"append", "extend", "insert", "add", "appendleft", "extendleft", "pop",
                    "popleft", "discard", "remove", "clear", "update"})
#: the methods that change a container in place
_MUTATORS = _GROWS | {"setdefault", "popitem", "__setitem__"}
#: tensor methods that return a view of their receiver (its storage, not a copy): a kernel
#: writing into the view writes the receiver
_VIEWS = frozenset({"view", "narrow", "select", "unsqueeze", "squeeze", "transpose", "permute",
                    "as_strided", "view_as", "unflatten", "diagonal", "t"})
#: each frame's serial (:attr:`_Frame.serial`): never reused, unlike an object's id
_FRAME_SERIALS = itertools.count()
#: wrappers that return the function they are given (``torch.compiler.disable(fn)``)
_IDENTITY_WRAPPERS = frozenset({"torch.compiler.disable", "torch._dynamo.disable"})
#: per function, the argument contexts kept apart before one generic context serves the rest
_MAX_CONTEXTS = 6
#: the annotations an LSE can have: a parameter typed so is read as a parameter (what its
#: caller passes), never as a bare instance of the type
_TENSOR_TYPES = frozenset({"torch.Tensor", "torch.FloatTensor"})
#: how deep calls are followed
_MAX_DEPTH = 24
_NO_TAINT = 1 << 30  # no cycle cut below this analysis
#: statements interpreted in one run before the interpreter stops following calls (a bound on
#: pathological programs; the released engines need a fraction of it)
_BUDGET = 3_000_000


def _at(path: str, node: ast.AST) -> str:
    return f"{path}:{getattr(node, 'lineno', 1)}:{getattr(node, 'col_offset', 0) + 1}"


def _text(node: ast.AST, limit: int = 60) -> str:
    try:
        text = ast.unparse(node)
    except (RecursionError, ValueError):
        return "<an expression nested too deeply to print>"
    return text if len(text) <= limit else f"{text[:limit - 1]}…"


def _line(where: str) -> str:
    path = where.rpartition(":")[0]
    path2, _, line = path.rpartition(":")
    return f"{path2.rsplit('/', 1)[-1]}:{line}" if path2 else where


# --- what the rules read -------------------------------------------------------------------------
@dataclass(frozen=True)
class Kernel:
    """A producer call reached: the record, where, and the base it returns there."""

    record: str
    name: str  # the call's last name
    where: str
    base: str | None  # pinned base, or None (dispatch, or an expression chooses)
    dispatch: bool = False
    bases: tuple[str, ...] = ()
    choice: str = ""
    #: handed to a combine told a fixed base after a conversion, or to a state merge: that edge
    #: is judged (AC023), and says nothing about the decode LSE the class declares
    settled: bool = False


@dataclass(frozen=True)
class BaseGiven:
    """How a consumer call is told the base.

    ``kind``: ``"fixed"`` (the record's own fixed base, a literal, a default), ``"flag"`` (a
    backend's declared attribute), ``"param"`` (a parameter of the function analysed alone),
    ``"unknown"`` (an expression the linter cannot read: trusted)."""

    kind: str
    base: str | None = None
    where: str = ""  # where the base is written (a literal, a default), or the call
    how: str = ""  # for messages
    literal: bool = False  # written as a literal in the linted code (AC003)
    keyword: str = ""
    flag: Flag | None = None
    param: Param | None = None
    omitted: str = ""  # the call that left the keyword (or a wrapper's parameter) out
    table: bool = False  # a literal read from a table by a key the linter cannot see
    rebound: bool = False  # one of the values of a global a function rebinds
    #: ``"choice"``: the ways the value may tell the base (``x if c else True``, a table)
    options: tuple[BaseGiven, ...] = ()


@dataclass(frozen=True)
class Use:
    """An LSE reaching a consumer call."""

    consumer: Consumer
    given: BaseGiven
    lse: Lse
    where: str  # the consumer call
    dispatched: bool  # inside an ``if`` on the base: the branch is the dispatch


@dataclass(frozen=True)
class Weighed:
    """An LSE exponentiated in one base (``torch.exp2(lse - m)``, a hand-written merge's
    weight): ``sources`` are its sources of the other base."""

    fn: str  # ``torch.exp2`` / ``.exp()``, as written
    name: str  # ``exp2``
    reads: str
    sources: tuple[Source, ...]
    where: str


@dataclass(frozen=True)
class Omitted:
    """A consumer call that leaves its base keyword out and gets the default base."""

    consumer: Consumer
    keyword: str
    default: str | None
    where: str


@dataclass(frozen=True)
class Dispatched:
    """A producer call that leaves its LSE's base to the library's run-time dispatch on some
    path."""

    producer: Producer
    call_base: CallBase
    where: str


@dataclass(frozen=True)
class Disagreed:
    """A consumer whose records (one per library version) disagree, the versions unknown:
    only what they agree on is used."""

    consumer: Consumer
    versions: Mapping[str, str]  # the knowledge's library versions, for the message
    where: str


#: what the interpreter infers besides the uses, for :mod:`attn_contracts.lint.edges`; a
#: ``Finding`` is a note about the analysis itself (a bound it hit), passed on as it is
Fact = Weighed | Omitted | Dispatched | Disagreed | Finding


@dataclass
class _Summary:
    returns: Value = None
    kernels: frozenset[Kernel] = frozenset()  # LSEs where they are used (after conversions)
    produced: frozenset[Kernel] = frozenset()  # the producer calls themselves


def _merge_summaries(a: object, b: object) -> _Summary:
    """The summary of a call cycle's head over two passes (what either found)."""
    x, y = cast(_Summary, a), cast(_Summary, b)
    return _Summary(join([x.returns, y.returns]), x.kernels | y.kernels, x.produced | y.produced)


@dataclass
class _Call:
    pos: list[Arg]
    kw: dict[str, Arg]
    opaque: bool  # *args or **kwargs the linter cannot read
    #: keywords a ``**dict`` may not carry (set on some paths only)
    maybe: frozenset[str] = frozenset()
    where: str = ""
    #: its positional arguments are also under their parameters' names (the callee's
    #: signature is in the linted program)
    by_signature: bool = False


# --- the interpreter ----------------------------------------------------------------------------
class Interpreter:
    """One run over a program: memoised function analyses, the events the rules read."""

    def __init__(self, program: Program, knowledge: Mapping[str, Knowledge], *,
                 base_attrs: tuple[str, ...], returns_attrs: tuple[str, ...],
                 report: Callable[[Fact], None]):
        self.p = program
        #: each file's knowledge: the records at its own tree's releases
        self._knowledge = knowledge
        self._default = next(iter(knowledge.values()), Knowledge())
        self.base_attrs = frozenset(base_attrs)
        self.returns_attrs = returns_attrs
        #: receives each fact the interpreter infers that the rules turn into a finding
        self.report = report
        self.uses: dict[tuple[object, ...], Use] = {}
        self._memo: dict[tuple[object, ...], _Summary] = {}
        self._contexts: dict[object, int] = {}
        self._active: set[tuple[object, ...]] = set()
        self._stack: list[tuple[object, ...]] = []
        #: the frames being interpreted, outermost first (where an LSE entered a call chain)
        self.frames: list[_Frame] = []
        self._taint = _NO_TAINT
        self._counted: set[tuple[object, ...]] = set()
        self._depth = 0
        self.budget = _BUDGET
        #: the work done: statements, expressions and calls interpreted (what tests count)
        self.steps = 0
        #: the bounds' state: call cycles' summaries so far, the notes of a bound hit
        self.bounds = Bounds(self)
        self._globals: dict[tuple[str, str], Value] = {}
        self._module_busy: set[tuple[str, str]] = set()
        #: names the flow found carrying an LSE or a combine (methods returning one, attributes
        #: holding one): their call sites are where more flow starts
        self.carrier_names: set[str] = set()
        self._module_carriers: set[str] = set()
        #: the functions (qualified names) found returning one
        self.carrier_funcs: set[str] = set()
        #: where a literal base is written for a consumer: the consumer, keyword and literal
        self.literal_sites: dict[str, tuple[Consumer, str, Lit]] = {}
        #: (instance, attribute) → values stored (``self.x = ...``)
        self.stores: dict[tuple[Inst, str], set[Value]] = {}
        self._init_done: set[Inst] = set()
        self._class_attr_memo: dict[tuple[ClassKey, str], Value] = {}
        self._fields_memo: dict[ClassKey, list[str] | None] = {}
        self._ops: dict[str, Func] = {}
        self._op_funcs: set[str] = set()
        self._op_texts: list[tuple[str, str]] | None = None  # modules registering ops
        self._op_names: set[str] = set()  # op names already looked for
        self._texts: dict[str, str] = {}  # module texts read for mutations of their globals
        self._mutation_index: dict[str, dict[str, tuple[list[ast.stmt], list[ast.expr],
                                                        bool]]] = {}
        self._assigns_attr: dict[int, dict[str, ast.expr | None]] = {}
        self._noted_agreed: set[tuple[str, str]] = set()
        self._carrier_lines: dict[str, tuple[int, ...]] = {}
        self._calls_memo: dict[tuple[str, str], bool] = {}
        self._relevant_pattern: re.Pattern[str] | None = None
        #: decides an ``if`` test where the caller knows it (an engine's configuration: DCP
        #: on), so only that side is interpreted; None: every side
        self.assume: Callable[[ast.expr], bool | None] | None = None
        #: > 0 while an expression whose value may be a base is evaluated (a base keyword's
        #: argument, a base attribute's assignment, and the calls made there, down to
        #: :data:`_NEED_LEVELS` levels): a call there is interpreted for its return value even
        #: where its function names no producer or consumer (``is_lse_base_on_e=base()``);
        #: the levels keep it from following a constructor into the whole engine
        self.need = 0
        self._base_words: frozenset[str] | None = None

    def knowledge(self, path: str) -> Knowledge:
        return self._knowledge.get(path, self._default)

    def base_word(self, name: str | None) -> bool:
        """Whether a keyword or attribute name may carry a base: a consumer record's base
        keyword, a producer record's base-choosing keyword, a base attribute."""
        if self._base_words is None:
            words = set(self.base_attrs)
            for k in self._knowledge.values():
                words |= {kw for group in k.consumers.values() for c in group
                          for kw in c.keywords}
                words |= {p.call_base.keyword for group in k.producers.values() for p in group
                          if p.call_base is not None}
            self._base_words = frozenset(words)
        return name is not None and name in self._base_words

    def wants_return(self, func: Func) -> bool:
        """Whether a call's return value must be read though nothing it names matters to the
        rules: it is where a base may be (:attr:`need`)."""
        return self.need > 0 or self.reaches(func)

    # --- entry points --------------------------------------------------------------------------
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
        lse = lse_of(_flatten(s.returns))
        from_return = frozenset(k for src in (lse.sources if lse else ())
                                if (k := _kernel_of(src)) is not None)
        if returned and from_return:
            return from_return
        seen = s.kernels | from_return
        # a producer call whose LSE the flow lost sight of counts as it returns it
        keys = {(k.where, k.record) for k in seen}
        return seen | frozenset(k for k in s.produced if (k.where, k.record) not in keys)

    # --- modules -------------------------------------------------------------------------------
    def run_statements(self, path: str, body: list[ast.stmt]) -> None:
        """Module-level statements (a combine called at import time, a partial bound there)."""
        frame = _Frame(self, path, None, None, None)
        for st in body:
            if not isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                try:
                    frame.stmt(st)
                except RecursionError:
                    return
        for name, value in frame.env.items():  # an alias or partial of a combine made here
            if _carries(value) or (isinstance(value, (Ext, Func)) and _callee_name(
                    value, "") in (*frame.k.consumers, *frame.k.producers)):
                self._module_carriers.add(name)

    def module_name(self, path: str) -> str:
        info = self.p.info(path)
        return info.name if info is not None else path

    def set_carrier_lines(self, lines: dict[str, tuple[int, ...]]) -> None:
        """Lines (per file) that name what the flow found carrying an LSE or a combine; what
        reaches them is followed from now on."""
        self._carrier_lines = lines

    def carrier_lines(self, path: str) -> tuple[int, ...]:
        return self._carrier_lines.get(path, ())

    def all_carrier_lines(self) -> dict[str, tuple[int, ...]]:
        return dict(self._carrier_lines)

    def found_carriers(self) -> set[str]:
        """Names of the methods and functions found returning an LSE (or a combine) and of the
        attributes found holding one, or an object built with a base."""
        names: set[str] = set()
        for (func, _, _), summary in self._memo.items():
            if isinstance(func, Func) and _carries(summary.returns):
                names.add(func.qualname.rpartition(".")[2])
                self.carrier_funcs.add(func.qualname)
        for (_, attr), values in self.stores.items():
            if any(_carries(v) for v in values):
                names.add(attr)
        names |= self._module_carriers
        return {n for n in names if n.isidentifier() and not n.startswith(("<", "__"))}

    def found_function_carriers(self) -> set[str]:
        """Of :meth:`found_carriers`, the module-level functions' names."""
        return {q.partition("@")[0] for q in self.carrier_funcs if "." not in q and "<" not in q}

    def reaches(self, func: Func) -> bool:
        """Whether a call into a function can matter to the rules (when no argument carries an
        LSE, a base attribute or a combine): it holds a line naming a producer, a consumer or a
        base attribute, or calls a function of its module that does (the per-file pass's
        ``relevant``), or it is a name the flow found carrying an LSE."""
        if func.qualname in self.carrier_funcs:
            return True
        info = self.p.info(func.path)
        if info is None:
            return False
        if func.qualname in info.relevant:
            return True
        if "<" not in func.qualname:
            return self._calls_relevant(func)
        node = func.node  # a nested function or lambda: its own lines
        start = getattr(node, "lineno", 0)
        end = getattr(node, "end_lineno", start) or start
        for lines in (info.trigger_lines, self._carrier_lines.get(func.path, ())):
            i = bisect.bisect_left(lines, start)
            if i < len(lines) and lines[i] <= end:
                return True
        return False

    def _calls_relevant(self, func: Func) -> bool:
        """Whether a function calls, by name, a method or function that some module's per-file
        pass found relevant (``get_attn_backend().forward(...)`` reaches every backend's
        ``forward_extend`` through ``AttentionBackend.forward``): one hop of names, read from
        the function's lines (its module is not parsed for it), so a dispatch through
        infrastructure that names nothing is still followed."""
        key = (func.path, func.qualname)
        if key not in self._calls_memo:
            span = self.p.span(func.path, func.qualname)
            self._calls_memo[key] = span is not None and bool(
                self._relevant_call().search(self.p.text(func.path, *span)))
        return self._calls_memo[key]

    def _relevant_call(self) -> re.Pattern[str]:
        if self._relevant_pattern is None:
            names = sorted({q.rpartition(".")[2] for info in self.p.infos()
                            for q in info.relevant})
            self._relevant_pattern = re.compile(
                r"\b(?:" + "|".join(map(re.escape, names)) + r")\s*\(" if names else r"(?!x)x")
        return self._relevant_pattern

    # --- bindings ------------------------------------------------------------------------------
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
            if b is not None and b.kind == "assign" and b.module == path:
                value = self._mutated(path, name, value, getattr(b.node, "lineno", 0))
        except RecursionError:
            value = None
        finally:
            self._module_busy.discard(key)
        self._globals[key] = value
        return value

    def _module_text(self, path: str) -> str:
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
        for fn in ast.walk(tree):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            body = list(_own_statements(fn))
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
        return found

    def _mutated(self, path: str, name: str, value: Value, line: int) -> Value:
        """A module-level value with what the module does to it afterwards: its own statements
        run in order; a value a function may rebind it to is one more way it may be (which one
        holds depends on what runs first); changed in place by a function, it is unknown."""
        text = self._module_text(path)
        if not re.search(r"\bglobal\b[^\n]*\b" + re.escape(name) + r"\b|\b" + re.escape(name)
                         + r"\s*(?:\[|\.\s*(?:" + "|".join(sorted(_MUTATORS)) + r")\s*\()",
                         text):
            return value  # nothing in the module can change it (read from its text first)
        stmts, rebinds, in_function = self._mutations(path).get(name, ([], [], False))
        if in_function:
            return None
        later = [st for st in stmts if st.lineno > line]
        if later:
            frame = _Frame(self, path, None, None, None)
            frame.env[name] = value
            for st in later:
                frame.stmt(st)
            value = frame.env.get(name)
        if rebinds:
            frame = _Frame(self, path, None, None, None)
            frame.module_level = False
            value = join([value, *(frame.expr(e) for e in rebinds)])
            value = join([replace(v, rebound=True) if isinstance(v, Lit) else v
                          for v in alternatives(value)])
        return value

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
                    self._op_texts.append((info.path, text))
        if name not in self._op_names:
            self._op_names.add(name)
            word = re.compile(r"\b" + re.escape(name) + r"\b")
            for path, text in self._op_texts:
                if not word.search(text):
                    continue
                tree = self.p.tree(path)
                for node in ast.walk(tree) if tree is not None else ():
                    for key, fn in _registrations(node):
                        if key.rpartition("::")[2] != name:
                            continue
                        func = self._registered_func(path, fn)
                        if func is not None:
                            self._ops.setdefault(key, func)
                            self._op_funcs.add(func.qualname)
        return self._ops.get(f"{namespace}::{name}") or self._ops.get(f"*::{name}")

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
            return Func(b.module, b.name)
        if b.kind == "module":
            return ModuleRef(b.target)
        if b.kind == "external":
            return Ext(b.target)
        if b.kind == "assign" and isinstance(b.node, ast.expr):
            if b.module != path:
                return self.global_value(b.module, b.name)
            frame = _Frame(self, path, None, None, None)
            frame.module_level = False  # names it reads are module globals, asked one by one
            return frame.expr(b.node)
        return None

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

    # --- classes -------------------------------------------------------------------------------
    def class_info(self, key: ClassKey) -> ClassInfo | None:
        return self.p.cls(key)

    def returns_lse(self, cls: ClassInfo) -> bool:
        h = self.p.hierarchy
        for attr in self.returns_attrs:
            value = h.value(cls, attr)
            if isinstance(value, ast.Constant) and value.value is True:
                return True
        return False

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
        return self.binding_value(b.module, b.name)

    # --- functions -----------------------------------------------------------------------------
    def analyse(self, func: Func, self_value: Inst | None, call: _Call | None, *,
                generic: bool = False) -> _Summary:
        node = func.node if func.node is not None else self.p.function(func.path, func.qualname)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return _Summary()
        params = _params(node)
        if generic or call is None:
            bound: dict[str, Value] = {}
            ctx: tuple[object, ...] = ("generic",)
        else:
            bound = self._bind(func, params, call, self_value is not None)
            ctx = tuple((name, bound[name]) for name in sorted(bound))
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
            return cast(_Summary, found[0])
        if key in self._active:
            # a cycle: the call gets the summary found so far for its head, which is
            # interpreted again until that summary no longer changes (bounds.Bounds)
            self._taint = min(self._taint, self._stack.index(key))
            return cast(_Summary, cycles.recursive(key, _Summary))
        if ctx != ("generic",) and key not in self._counted:
            # the contexts that carry an LSE, a base attribute or a partial are counted apart
            # from the rest: a function called with parameters by every other one's analysis
            # alone still gets the LSE its one real caller passes
            kind = (func, self_value, call is not None and _interesting(call))
            seen = self._contexts.get(kind, 0)
            if seen >= _MAX_CONTEXTS:  # enough contexts: the generic one serves the rest
                if kind[2]:
                    cycles.note(None, "call contexts", f"{func.qualname.partition('@')[0]} is "
                                f"called with more than {_MAX_CONTEXTS} different LSEs or bases; "
                                "the rest are read as its parameters")
                return _instantiate(self.analyse(func, self_value, None, generic=True),
                                    func, bound)
            self._contexts[kind] = seen + 1
            self._counted.add(key)
        if self._depth >= _MAX_DEPTH or self.budget <= 0:
            why = f"deeper than {_MAX_DEPTH} calls" if self.budget > 0 else \
                f"the run used its budget of {_BUDGET:,} steps"
            cycles.note(None, "call depth" if self.budget > 0 else "run budget",
                        f"the call of {func.qualname.partition('@')[0]} is not followed ({why})",
                        callee=(func.path, func.qualname, node))
            return _Summary()
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
                self._taint = _NO_TAINT
                mark, changes = len(cycles.provisional), cycles.changes
                try:
                    summary = self._interpret(func, node, params, self_value, bound,
                                              generic or call is None, call.where if call else "")
                except RecursionError:
                    summary = _Summary()
                head = self._taint >= pos
                kept, again = cycles.settle(key, summary, _merge_summaries, passes, head,
                                            changes)
                summary = cast(_Summary, kept)
                if not again:
                    break
                cycles.forget_since(mark)  # found under the approximation just replaced
                passes += 1
        finally:
            self.need = need
            self._depth -= 1
            self._active.discard(key)
            self._stack.pop()
        incomplete = self._taint < pos
        if incomplete:
            cycles.provisional[key] = (summary, self._taint)
        else:
            self._memo.update(cast(dict[tuple[object, ...], _Summary], cycles.complete_since(mark)))
            self._memo[key] = summary
        self._taint = min(saved, self._taint) if incomplete else saved
        return summary

    def _interpret(self, func: Func, node: FuncNode | ast.Lambda, params: _Params,
                   self_value: Inst | None, bound: dict[str, Value], generic: bool,
                   entry: str = "") -> _Summary:
        owner = self_value.cls if self_value is not None else None
        frame = _Frame(self, func.path, func, self_value, owner)
        frame.node = node
        frame.entry = entry
        frame.param_ids = {id(v) for v in bound.values() if v is not None}
        self.frames.append(frame)
        try:
            return self._run_frame(frame, func, node, params, self_value, bound, generic)
        finally:
            self.frames.pop()

    def _run_frame(self, frame: _Frame, func: Func, node: FuncNode | ast.Lambda,
                   params: _Params, self_value: Inst | None, bound: dict[str, Value],
                   generic: bool) -> _Summary:
        names = params.names
        start = 0
        frame.env.update(func.closure)
        if self_value is not None and names and not params.static:
            frame.env[names[0]] = self_value
            ann = params.annotations.get(names[0])
            if ann is not None and generic and not self_value.exact:
                # ``self: DeepseekV2AttentionMLA`` on a mixin's method: the class it runs in
                typed = self.resolve_annotation(func.path, ann)
                if isinstance(typed, Inst):
                    frame.env[names[0]] = typed
            start = 1
        for name in names[start:]:
            if generic:
                frame.env[name] = self._generic_param(func, params, name)
            else:
                frame.env[name] = bound.get(name)
        for extra in params.var:
            frame.env[extra] = None if generic else bound.get(extra)
        if isinstance(node, ast.Lambda):
            frame.returns.append(frame.expr(node.body))
        else:
            frame.block(node.body)
        if frame.yields:  # a generator: calling it returns an iterator of what it yields
            return _Summary(Seq(join(frame.yields)), frozenset(frame.kernels),
                            frozenset(frame.produced))
        return _Summary(join(frame.returns) if frame.returns else None,
                        frozenset(frame.kernels), frozenset(frame.produced))

    def _generic_param(self, func: Func, params: _Params, name: str) -> Value:
        """A parameter of a function read on its own: an instance of its annotated class, else
        a parameter (what any caller passes)."""
        ann = params.annotations.get(name)
        typed = self.resolve_annotation(func.path, ann) if ann is not None else None
        if isinstance(typed, ExtInst) and typed.qualname in _TENSOR_TYPES:
            typed = None  # a tensor parameter may be an LSE: its caller's, unknown here
        default = params.defaults.get(name)
        lit = _literal(func.path, default) if default is not None else None
        return typed if typed is not None else Param(
            name, func.qualname, lit if isinstance(lit, Lit) else None, func.path)

    def _bind(self, func: Func, params: _Params, call: _Call, method: bool) -> dict[str, Value]:
        """The parameters' values as Python binds a call's arguments: positions in order to the
        positional parameters, the rest to ``*args`` (a tuple); keywords by name, the rest to
        ``**kwargs`` (a dict); a parameter left out gets its default."""
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
        for name, arg in call.kw.items():
            if name in names:
                out[name] = arg.value
            else:
                extra.append((name, arg))
        if params.kwarg is not None:
            out[params.kwarg] = None if call.opaque else DictV(
                tuple(sorted(extra, key=lambda kv: kv[0])), call.maybe & {k for k, _ in extra})
        for name in names:
            if name in out:
                continue
            default = params.defaults.get(name)
            if default is None or call.opaque or name in call.maybe:
                continue
            lit = _literal(func.path, default)
            if isinstance(lit, Lit):
                out[name] = replace(lit, how=f" (the default of {func.qualname.rpartition('.')[2]}"
                                    f"({name}=...), left out)", omitted=call.where)
            else:
                out[name] = lit
        return out

    # --- attributes ----------------------------------------------------------------------------
    def attribute(self, obj: Value, attr: str, where: str) -> Value:
        options = []
        for alt in alternatives(obj):
            options.append(self._attribute(alt, attr, where))
        return join(options) if len(options) > 1 else (options[0] if options else None)

    def _attribute(self, obj: Value, attr: str, where: str) -> Value:
        if isinstance(obj, Lse):
            if attr in _KEEPS_BASE_ATTRS:
                return _swap(obj) if attr in _SWAPS else obj
            return None
        if isinstance(obj, ModuleRef):
            b = self.p.member(obj.name, attr)
            if b is None:
                return None
            if b.kind == "assign":
                return self.global_value(b.module, b.name)
            return self._binding(b)
        if isinstance(obj, Ext):
            parts = obj.qualname.split(".")
            if parts[:2] == ["torch", "ops"] and len(parts) == 3:
                # ``torch.ops.<ns>.<name>``: the Python function registered for the op
                registered = self.custom_op(parts[2], attr)
                if registered is not None:
                    return registered
            return Ext(f"{obj.qualname}.{attr}")
        if isinstance(obj, Func) and attr in ("default", "__wrapped__") and \
                obj.qualname in self._op_funcs:
            return obj  # ``torch.ops.ns.op.default``: the same overload
        if isinstance(obj, ExtInst):
            return Ext(f"{obj.qualname}.{attr}")
        if isinstance(obj, Super):
            cls = self.class_info(obj.self_value.cls)
            after = self.class_info(obj.after)
            if cls is None or after is None:
                return None
            owner = self.p.lookup(cls, attr, after=after)
            if owner is None:
                return None
            return Bound(Func(owner.path, f"{owner.name}.{attr}"), obj.self_value,
                         (owner.path, owner.name))
        if isinstance(obj, ClassRef):
            cls = self.class_info(obj.cls)
            if cls is None:
                return None
            owner = self.p.lookup(cls, attr)
            if owner is not None:
                return Func(owner.path, f"{owner.name}.{attr}")
            if attr in cls.attrs and self._is_enum(cls) and not attr.startswith("_"):
                # an Enum's member is an object of its class; ``.value`` is what is assigned
                return Member(obj.cls, attr, self.class_attr(cls, attr))
            return self.class_attr(cls, attr)
        if isinstance(obj, Member):
            if attr == "value":
                return obj.value
            if attr == "name":
                return Lit(obj.name, where)
            return None
        if isinstance(obj, Inst):
            return self.inst_attr(obj, attr, where)
        return None

    def inst_attr(self, inst: Inst, attr: str, where: str) -> Value:
        cls = self.class_info(inst.cls)
        if cls is not None and inst.ctor is not None:
            fields = self.fields(cls)
            if fields is not None and attr in fields:
                # a dataclass, NamedTuple or model: the constructor's argument for the field,
                # over the class's default (which is what any other instance holds)
                given = self._field_arg(inst, fields, attr)
                if given is not _NOT_SPECIAL:
                    return cast(Value, given)
        if attr in self.base_attrs:
            return Flag(attr, inst, where)
        if cls is None:
            return None
        owner = self.p.lookup(cls, attr)
        if owner is not None:
            func = Func(owner.path, f"{owner.name}.{attr}")
            if self._is_property(owner, attr):
                # what the property returns (``return True``, ``return self._base``): read
                # like any call (its own calls followed where they can matter); on an object
                # that may be of a subclass, every override's
                bound = Bound(func, inst, (owner.path, owner.name))
                call = _Call([], {}, False, where=where)
                if inst.exact or len(self.p.subclasses(cls)) <= 1:
                    return self.analyse(func, inst, call).returns
                return self.call_bound(bound, call, where)[0]
            return Bound(func, inst, (owner.path, owner.name))
        values: list[Value] = []
        if inst.ctor is not None:
            self._ensure_init(inst)
            values += self.stores.get((inst, attr), ())
        if not values:
            generic = self.class_attr(cls, attr)
            if generic is not None:
                values.append(generic)
        # ``m = partialmethod(f, ...)`` read from an instance: ``f`` bound to it
        values = [join([Partial(Bound(alt.target, inst, inst.cls), alt.pos, alt.kw, alt.where)
                        if isinstance(alt, Partial) and alt.method and
                        isinstance(alt.target, Func) else alt for alt in alternatives(v)])
                  for v in values]
        return join(values) if values else None

    def fields(self, cls: ClassInfo) -> list[str] | None:
        """The fields a generated ``__init__`` takes, in order (a dataclass, a ``NamedTuple``,
        an attrs or pydantic class: annotated class-level names, bases' first); None for a
        class whose ``__init__`` is written (or unknown)."""
        key = (cls.path, cls.name)
        if key in self._fields_memo:
            return self._fields_memo[key]
        self._fields_memo[key] = None
        generated = False
        names: list[str] = []
        for c in reversed(self.p.mro(cls)):
            marks = [dotted_name(d.func if isinstance(d, ast.Call) else d) or ""
                     for d in c.decorators]
            bases = [b.rpartition(".")[2] for b in c.bases]
            if any(m.rpartition(".")[2] in _FIELD_DECORATORS for m in marks) or any(
                    b in _FIELD_BASES for b in bases):
                generated = True
            elif "__init__" in c.methods:
                generated = False  # a written __init__ below a generated one replaces it
            node = self.p.class_node(c)
            for st in node.body if node is not None else ():
                if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and \
                        st.target.id not in names and not _is_classvar(st.annotation):
                    names.append(st.target.id)
        if not generated or self.p.lookup(cls, "__init__") is not None:
            return None
        self._fields_memo[key] = names
        return names

    @staticmethod
    def _field_arg(inst: Inst, fields: list[str], attr: str) -> Value | object:
        """The constructor's argument for field ``attr``: by keyword or by position; else
        nothing (the class default applies)."""
        if inst.ctor is None:
            return _NOT_SPECIAL
        args = dict(inst.ctor[1])
        if attr in args:
            return args[attr]
        i = str(fields.index(attr))
        return args.get(i, None if _OPAQUE_ARGS in args else _NOT_SPECIAL)

    def by_name(self, callee: Value, call: _Call) -> _Call:
        """A call of a function the program defines (a consumer in the linted tree) with its
        positional arguments also under their parameters' names, so a base passed by position
        (``lse_reduce(out, lse, True)``) is read like a keyword."""
        func = callee.func if isinstance(callee, Bound) else callee
        if not isinstance(func, Func) or not call.pos:
            return call
        node = func.node if func.node is not None else self.p.function(func.path, func.qualname)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return call
        params = _params(node)
        names = params.names[:params.positional]
        if isinstance(callee, Bound) and names and not params.static:
            names = names[1:]
        kw = dict(call.kw)
        for name, arg in zip(names, call.pos, strict=False):
            kw.setdefault(name, arg)
        if not call.opaque:  # a parameter left out: the default this code gives it
            defaults = params.defaults
            everyone = params.names[1:] if isinstance(callee, Bound) and not params.static \
                else params.names
            for name in everyone:
                if name not in kw and name not in call.maybe and name in defaults:
                    lit = _literal(func.path, defaults[name])
                    if isinstance(lit, Lit):
                        kw[name] = Arg(replace(lit, omitted=call.where), call.where)
        return _Call(call.pos, kw, call.opaque, call.maybe, call.where, by_signature=True)

    def declared_return(self, func: Func) -> Value:
        """What a function's return annotation says it returns (``-> AttentionBackend``: an
        instance of it or any subclass), for a call the linter does not follow into."""
        cls_name, _, name = func.qualname.rpartition(".")
        if "<" in func.qualname:
            return None
        if cls_name:
            cls = self.p.cls((func.path, cls_name))
            ann = cls.returns.get(name) if cls is not None else None
        else:
            info = self.p.info(func.path)
            ann = info.returns.get(name) if info is not None else None
        if ann is None:
            return None
        typed = self.resolve_annotation(func.path, ann)
        return typed if isinstance(typed, (Inst, Union_)) else None

    def _is_enum(self, cls: ClassInfo) -> bool:
        return any(b.rpartition(".")[2] in _ENUM_BASES
                   for c in self.p.mro(cls) for b in c.bases)

    @staticmethod
    def _is_property(owner: ClassInfo, attr: str) -> bool:
        return attr in owner.properties

    def _ensure_init(self, inst: Inst) -> None:
        if inst in self._init_done:
            return
        self._init_done.add(inst)
        cls = self.class_info(inst.cls)
        if cls is None or inst.ctor is None:
            return
        owner = self.p.lookup(cls, "__init__")
        if owner is None:
            return
        where, args = inst.ctor
        call = _Call([Arg(v) for k, v in args if k.isdigit()],
                     {k: Arg(v) for k, v in args if not k.isdigit()}, False, where=where)
        self.analyse(Func(owner.path, f"{owner.name}.__init__"), inst, call)

    def class_attr(self, cls: ClassInfo, attr: str) -> Value:
        """An attribute of every instance of ``cls``: its class-level value or annotation, and
        what any method of its class hierarchy stores into ``self.<attr>``."""
        key = ((cls.path, cls.name), attr)
        if key in self._class_attr_memo:
            return self._class_attr_memo[key]
        self._class_attr_memo[key] = None  # a read while computing it sees nothing
        values: list[Value] = []
        generic = Inst((cls.path, cls.name), exact=True)
        # ``__init__`` runs for every instance: what it stores on ``self`` unconditionally
        # shadows the class attribute, which no instance then reads
        shadowed = self._init_sets(cls, attr)
        for c in ([] if shadowed else self.p.mro(cls)):
            if attr in c.annotations:  # ``prefill_backend: MLAPrefillBackend | None = None``
                values.append(self.resolve_annotation(c.path, c.annotations[attr]))
            if attr in c.attrs:
                node = c.attrs[attr][0]
                value = _literal(c.path, node) if isinstance(node, ast.Constant) else \
                    self._class_level(c, node)
                if not (attr in c.annotations and isinstance(value, Lit) and value.value is None):
                    values.append(value)  # (a None default beside a type says nothing more)
            if attr in c.attrs or attr in c.annotations:
                break
        for c in self.p.mro(cls):
            if not (self.p.active(c.path) or c.path in self._carrier_lines):
                # a module that names nothing the rules know: only the objects it builds
                # (``self.attn_mha = RadixAttention(...)``), read from the syntax, no flow
                values += self._built(c, attr)
                continue
            for name, fn in self.p.methods(c).items():
                stored = self._stored_attrs(fn)
                if attr not in stored:
                    continue
                self.analyse(Func(c.path, f"{c.name}.{name}", fn), generic, None, generic=True)
                # a store the analysis could not follow (``self = super().__new__(cls)`` in a
                # branch it did not reach) is an unknown value, never the class default alone
                values += self.stores.get((generic, attr), (None,))
                ann = stored[attr]
                if ann is not None:
                    values.append(self.resolve_annotation(c.path, ann))
        value = join(values) if values else None
        self._class_attr_memo[key] = value
        return value

    def _init_sets(self, cls: ClassInfo, attr: str) -> bool:
        """Whether the ``__init__`` instances of ``cls`` run stores ``self.<attr>`` in its
        body's top level (not under an ``if``), as its first parameter is ``self``."""
        owner = self.p.lookup(cls, "__init__")
        fn = self.p.methods(owner).get("__init__") if owner is not None else None
        if fn is None or not fn.args.args:
            return False
        me = fn.args.args[0].arg
        for st in fn.body:
            targets = st.targets if isinstance(st, ast.Assign) else (
                [st.target] if isinstance(st, ast.AnnAssign) and st.value is not None else [])
            for t in targets:
                if isinstance(t, ast.Attribute) and t.attr == attr and \
                        isinstance(t.value, ast.Name) and t.value.id == me:
                    return True
        return False

    def _built(self, cls: ClassInfo, attr: str) -> list[Value]:
        """``self.<attr> = Class(...)`` in ``cls``'s methods: an instance of that class (its
        constructor's arguments not followed), read from the methods' lines without parsing
        the module; any other store is unknown."""
        out: list[Value] = []
        store = re.compile(r"\bself\." + re.escape(attr) + r"\s*(?::\s*([^=\n]+?))?\s*="
                           r"(?!=)\s*([A-Za-z_][\w.]*)?(\()?")
        for start, end in cls.methods.values():
            for m in store.finditer(self.p.text(cls.path, start, end)):
                ann, func, call = m.group(1), m.group(2), m.group(3)
                if ann:
                    try:
                        out.append(self.resolve_annotation(
                            cls.path, ast.parse(ann.strip(), mode="eval").body))
                    except (SyntaxError, ValueError, RecursionError):
                        out.append(None)
                ref = self._dotted_value(cls.path, func) if func and call else None
                out.append(Inst(ref.cls, exact=ref.exact) if isinstance(ref, ClassRef) else None)
        return out

    def class_level_value(self, cls: ClassInfo, node: ast.expr) -> Value:
        """What an expression of ``cls``'s body evaluates to (``_Unit.NATURAL.value``)."""
        return self._class_level(cls, node)

    def _class_level(self, cls: ClassInfo, node: ast.expr) -> Value:
        frame = _Frame(self, cls.path, None, None, None)
        # the class body's own functions are names there (``m = partialmethod(_m, ...)``)
        frame.env.update({name: Func(cls.path, f"{cls.name}.{name}", fn)
                          for name, fn in self.p.methods(cls).items()})
        try:
            return frame.expr(node)
        except RecursionError:
            return None

    def _stored_attrs(self, fn: FuncNode) -> dict[str, ast.expr | None]:
        """The attributes a method stores on ``self``, each with its annotation (if any)."""
        key = id(fn)
        if key not in self._assigns_attr:
            found: dict[str, ast.expr | None] = {}
            for st in statements(fn):  # type: ignore[arg-type]
                if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Attribute) and \
                        isinstance(st.target.value, ast.Name) and st.target.value.id == "self":
                    found[st.target.attr] = st.annotation
                    continue
                targets = st.targets if isinstance(st, ast.Assign) else (
                    [st.target] if isinstance(st, (ast.AugAssign, ast.For)) else [])
                for t in targets:
                    for sub in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]):
                        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) \
                                and sub.value.id == "self":
                            found.setdefault(sub.attr, None)
            self._assigns_attr[key] = found
        return self._assigns_attr[key]

    # --- calls ---------------------------------------------------------------------------------
    def call_bound(self, bound: Bound, call: _Call, where: str,
                   ) -> tuple[Value, frozenset[Kernel], frozenset[Kernel]]:
        """A method call: the method's (or, on an instance that may be of any subclass, every
        override's) result and the kernels it reaches."""
        inst = bound.self_value
        cls = self.class_info(inst.cls)
        method = bound.func.qualname.rpartition(".")[2]
        if cls is None:
            return None, frozenset(), frozenset()
        if inst.exact:
            targets = [(bound.func, inst, cls)]
        else:  # any subclass: every override the class hierarchy holds
            targets = []
            # every subclass, also where it inherits the method: what ``self.<m>(...)`` inside
            # it dispatches to is the subclass's (AttentionBackend.forward -> forward_extend)
            for sub in self.p.subclasses(cls):
                owner = self.p.lookup(sub, method)
                if owner is None:
                    continue
                targets.append((Func(owner.path, f"{owner.name}.{method}"),
                                Inst((sub.path, sub.name), exact=True), sub))
        results: list[Value] = []
        kernels: set[Kernel] = set()
        produced: set[Kernel] = set()
        interesting = _interesting(call)
        followed = [t for t in targets if interesting or self.wants_return(t[0])]
        if not followed:  # nothing below can matter: what the method says it returns
            declared = self.declared_return(bound.func)
            return declared, frozenset(), frozenset()
        targets = followed
        for func, self_value, sub in targets:
            s = self.analyse(func, self_value, call)
            kernels |= s.kernels
            produced |= s.produced
            value = s.returns
            if self.returns_lse(sub):  # an LSE-declaring class's method: its LSE is that class's
                value = _tag_impl(value, (sub.path, sub.name))
            if len(targets) > 1:
                value = _tag_choice(value, f"{sub.name}.{method}() (one of the {len(targets)} "
                                    f"implementations {cls.name}.{method} dispatches to)")
            results.append(value)
        return (join(results) if results else None), frozenset(kernels), frozenset(produced)


_FUNC_NODES = (ast.FunctionDef, ast.AsyncFunctionDef)
#: what generates a class's ``__init__`` from its annotated fields
_FIELD_DECORATORS = frozenset({"dataclass", "define", "frozen", "mutable", "s", "attrs",
                               "dataclass_transform"})
_FIELD_BASES = frozenset({"NamedTuple", "BaseModel", "TypedDict"})
_ENUM_BASES = frozenset({"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"})


def _is_classvar(annotation: ast.expr) -> bool:
    head = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    return (dotted_name(head) or "").rpartition(".")[2] == "ClassVar"


@dataclass
class _Params:
    names: list[str]
    defaults: dict[str, ast.expr]
    annotations: dict[str, ast.expr]
    var: list[str]
    static: bool
    #: how many of ``names`` take positional arguments (the rest are keyword-only)
    positional: int = 0
    vararg: str | None = None  # ``*args``
    kwarg: str | None = None  # ``**kwargs``


def _params(node: FuncNode | ast.Lambda) -> _Params:
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
    return _Params(positional + [k.arg for k in a.kwonlyargs], defaults, anns, var, static,
                   len(positional), a.vararg.arg if a.vararg else None,
                   a.kwarg.arg if a.kwarg else None)


def _carries(value: Value, depth: int = 0) -> bool:
    """A value the flow must follow from wherever it is read: an LSE, a combine (bound or not),
    an object built with a base."""
    if depth > 3:
        return False
    for alt in alternatives(value):
        if isinstance(alt, Lse):
            return True
        if isinstance(alt, Rec) and alt.consumers:
            return True
        if isinstance(alt, Partial) and _carries(alt.target, depth + 1):
            return True
        if isinstance(alt, Tup) and any(_carries(v, depth + 1) for v in alt.items):
            return True
        if isinstance(alt, Seq) and _carries(alt.item, depth + 1):
            return True
        if isinstance(alt, Inst) and alt.ctor is not None and any(
                isinstance(v, (Flag, Lse)) or (isinstance(v, Lit) and isinstance(v.value, bool)
                                               and ("lse" in k or "base" in k))
                for k, v in alt.ctor[1]):
            return True  # an object built with a base: MLADCPManager(is_lse_base_on_e=...)
    return False


def _interesting(call: _Call) -> bool:
    """An argument carries an LSE, a backend's base attribute or a bound combine: the callee
    matters whatever its text names."""
    for arg in (*call.pos, *call.kw.values()):
        for alt in alternatives(arg.value):
            if isinstance(alt, (Lse, Flag, Partial)):
                return True
    return False


def _literal(path: str, node: ast.expr) -> Value:
    """A constant written in the code (bool, str, number, None), with where."""
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(
            node.value, (bool, int, float, str))):
        c = _const(node, None)
        if c is not None:
            return Num(c)
        return Lit(node.value, _at(path, node))
    return None


def _const(node: ast.expr, value: Value) -> str | None:
    """``math.log(2)``, 0.6931…: "ln2"; ``math.log2(math.e)``, 1.4427…: "log2e"."""
    if isinstance(value, Num):
        return value.name
    if isinstance(node, ast.Constant) and isinstance(node.value, float):
        if math.isclose(node.value, LN2, rel_tol=1e-6):
            return "ln2"
        if math.isclose(node.value, LOG2E, rel_tol=1e-6):
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


def _swap(lse: Lse) -> Lse:
    flipped = {"token_head": "head_token", "head_token": "token_head"}
    return Lse(frozenset(replace(s, layout=flipped.get(s.layout or ""))
                         for s in lse.sources))


def _lose_layout(lse: Lse) -> Lse:
    if all(s.layout is None for s in lse.sources):
        return lse
    return Lse(frozenset(replace(s, layout=None) for s in lse.sources))


def _map_lse(value: Value, fn: Callable[[Lse], Lse]) -> Value:
    if isinstance(value, Lse):
        return fn(value)
    if isinstance(value, Tup):
        return Tup(tuple(_map_lse(v, fn) for v in value.items), value.partial_items)
    if isinstance(value, Seq):
        return Seq(_map_lse(value.item, fn))
    if isinstance(value, Union_):
        return join([_map_lse(v, fn) for v in value.options])
    return value


def _tag_impl(value: Value, impl: ClassKey) -> Value:
    return _map_lse(value, lambda lse: Lse(frozenset(
        s if s.impl is not None else replace(s, impl=impl) for s in lse.sources)))


def _tag_choice(value: Value, choice: str) -> Value:
    return _map_lse(value, lambda lse: Lse(frozenset(
        s if s.choice else replace(s, choice=choice) for s in lse.sources)))


def _instantiate(summary: _Summary, func: Func, bound: dict[str, Value]) -> _Summary:
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
                given = _convert(given, target == "e", where, how)
            out |= given.sources
        return Lse(frozenset(out))

    return replace(summary, returns=_map_lse(summary.returns, put))


def _convert(lse: Lse, to_e: bool, where: str, how: str) -> Lse:
    """``x * ln 2`` (``to_e``) turns log2-sum-exp2 into ln-sum-exp; the inverse turns it back.
    A source already in the target base stops being an LSE of either base."""
    target = "e" if to_e else "2"
    out = set()
    for s in lse.sources:
        note = f"{s.converted}, {how} ({_line(where)})" if s.converted else f"{how} ({_line(where)})"
        if s.param is not None and s.base != "x":
            # past two equal conversions in a row it is of neither base, whatever it was;
            # before that the conversions alternate, and dropping one pair after the first
            # keeps their outcome: at most three are kept, so a cycle's summary settles
            shifts = (*s.shifts, (target, where, how))
            if len(shifts) > 3:
                shifts = shifts[:1] + shifts[3:]
            s = replace(s, shifts=shifts)
        if s.base is None or s.dispatch:
            out.add(replace(s, base=target if s.base is None and not s.dispatch else None,
                            dispatch=False, bases=(), converted=note))
        elif s.base == target:
            out.add(replace(s, base="x", converted=note))
        elif s.base == "x":
            out.add(replace(s, converted=note))
        else:
            out.add(replace(s, base=target, converted=note))
    return Lse(frozenset(out))


def _tuple_test(test: ast.expr | None) -> str | None:
    """``isinstance(x, tuple)`` (or ``(tuple, list)``): the name it narrows."""
    if not (isinstance(test, ast.Call) and isinstance(test.func, ast.Name) and
            test.func.id == "isinstance" and len(test.args) == 2 and
            isinstance(test.args[0], ast.Name)):
        return None
    kinds = test.args[1].elts if isinstance(test.args[1], ast.Tuple) else [test.args[1]]
    if all(isinstance(k, ast.Name) and k.id in ("tuple", "list") for k in kinds):
        return test.args[0].id
    return None


def _on_base_test(test: ast.expr, base_attrs: frozenset[str]) -> bool:
    for sub in ast.walk(test):
        if isinstance(sub, ast.Attribute) and (sub.attr in base_attrs or "base" in sub.attr.lower()):
            return True
        if isinstance(sub, ast.Name) and "base" in sub.id.lower():
            return True
    return False


def _ends(body: list[ast.stmt]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def _element(value: Value, i: int, exact: bool = False) -> Value:
    """Item ``i`` of a tuple or list (counted from the end where negative); any item of a
    container whose positions are not known."""
    if isinstance(value, Union_) and value.widened:
        return value  # unknown holding an LSE: so is every part of it
    options = []
    for alt in alternatives(value):
        if isinstance(alt, Tup):
            options.append(alt.get(i) if not (exact and alt.partial_items) else None)
        elif isinstance(alt, Seq):
            options.append(alt.item)
        else:
            options.append(None)
    return join(options) if options else None


def _rest(value: Value, start: int, after: int) -> Value:
    """What ``*rest`` binds in ``a, *rest, b = value``: a list of the items between."""
    options: list[Value] = []
    for alt in alternatives(value):
        if isinstance(alt, Tup) and not (after and alt.partial_items):
            options.append(Tup(alt.items[start:len(alt.items) - after], alt.partial_items))
        elif isinstance(alt, Seq):
            options.append(alt)
        else:
            options.append(None)
    return join(options) if options else None


def _iterate(value: Value) -> Value:
    """What a ``for`` over a value binds: any item of a tuple or list, the element of a
    container or generator; an LSE's rows are LSEs of its base."""
    options: list[Value] = []
    for alt in alternatives(value):
        if isinstance(alt, Tup):
            if alt.items:
                options.append(join(alt.items) if not alt.partial_items else None)
        elif isinstance(alt, Seq):
            options.append(alt.item)
        elif isinstance(alt, Lse):
            options.append(_lose_layout(alt))
        else:
            options.append(None)
    return join(options) if options else None


def _index(node: ast.expr) -> int | None:
    """A constant integer subscript (``x[1]``, ``x[-1]``)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and \
            not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and \
            isinstance(node.operand, ast.Constant) and isinstance(node.operand.value, int):
        return -node.operand.value
    return None


_LOADED: dict[int, frozenset[str]] = {}


def _loaded_names(node: ast.AST) -> frozenset[str]:
    """The names a function or lambda reads anywhere in its body."""
    key = id(node)
    if key not in _LOADED:
        _LOADED[key] = frozenset(n.id for n in ast.walk(node)
                                 if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load))
    return _LOADED[key]


def _kernel_of(src: Source) -> Kernel | None:
    """What a producer's LSE is where it ends up (used or returned), for the class rules;
    None for what no producer record made (a parameter, a merged LSE)."""
    if not src.record or not src.key.startswith("producer:"):
        return None
    where = src.key.removeprefix("producer:").rsplit(":", 1)[0]
    base = src.base if src.pinned else None
    name = src.what.partition("(")[0].removeprefix("the LSE of ").strip()
    choice = src.choice + (f", after {src.converted}" if src.converted else "")
    return Kernel(src.record, name, where, base, src.dispatch, src.bases, choice)


def _flatten(value: Value) -> Value:
    """The LSEs a value holds anywhere (tuple items included), as one value."""
    found: list[Value] = []
    for alt in alternatives(value):
        if isinstance(alt, Tup):
            found += [_flatten(v) for v in alt.items]
        elif isinstance(alt, Seq):
            found.append(_flatten(alt.item))
        else:
            found.append(alt)
    return join(found)


def _dict_key(node: ast.Constant) -> str | None:
    """A dict literal's constant key as the DictV keys it: a string as itself (``**kwargs``
    read it so), any other constant by its repr, marked so it never equals a string."""
    if isinstance(node.value, str):
        return node.value
    if node.value is None or isinstance(node.value, (bool, int, float)):
        return f"\x00{node.value!r}"
    return None


def _class_key(value: Value) -> str | None:
    """A class used as a dict key, as the DictV keys it (never equal to a string's or another
    constant's key); None where it is not one class for sure."""
    if isinstance(value, ClassRef) and value.exact:
        return f"\x00class {value.cls[0]}:{value.cls[1]}"
    if isinstance(value, Ext):
        return f"\x00class {value.qualname}"
    return None


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


def _own_statements(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.stmt]:
    """The statements of a function's body at any depth, not those of functions or classes
    nested in it (each is walked on its own)."""
    stack = list(reversed(fn.body))
    while stack:
        st = stack.pop()
        yield st
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        for child in ast.iter_child_nodes(st):
            if isinstance(child, ast.stmt):
                stack.append(child)
            elif isinstance(child, (ast.excepthandler, ast.match_case)):
                stack.extend(c for c in ast.iter_child_nodes(child) if isinstance(c, ast.stmt))


def _mutated_name(st: ast.stmt) -> str | None:
    """The name a statement changes in place: ``NAME[k] = v``, ``del NAME[k]``,
    ``NAME.update(...)``, ``NAME.append(x)`` and the other mutating methods."""
    targets: list[ast.expr] = []
    if isinstance(st, ast.Assign):
        targets = list(st.targets)
    elif isinstance(st, (ast.AugAssign, ast.AnnAssign)):
        targets = [st.target]
    elif isinstance(st, ast.Delete):
        targets = list(st.targets)
    for t in targets:
        if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
            return t.value.id
    if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call):
        f = st.value.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) and \
                f.attr in _MUTATORS:
            return f.value.id
    return None


def _table_entry(value: Value) -> Value:
    """A value read from a table by a key the linter cannot see: which entry applies is a
    dispatch."""
    if isinstance(value, Lit):
        return replace(value, table=True, how=f"{value.how} (a value of a table)")
    return value


def _literal_text(value: Value) -> list[str]:
    """The literal spellings a value may have (``["'basee'"]``), and ``"<expr>"`` for each way
    it may be something the linter cannot read."""
    out: list[str] = []
    for alt in alternatives(value):
        text = repr(alt.value) if isinstance(alt, Lit) else "<expr>"
        if text not in out:
            out.append(text)
    return out or ["<expr>"]


_H = TypeVar("_H", bound=Callable[..., Any])
#: syntax node type -> the _Frame method that interprets it (filled by ``@_on`` as the class is
#: defined: each handler names its node types where it is written, as pyflakes dispatches)
_STMT: dict[type, Callable[[_Frame, Any], None]] = {}
_EXPR: dict[type, Callable[[_Frame, Any], Value]] = {}


def _on(table: dict[type, Any], *types: type) -> Callable[[_H], _H]:
    """Registers the decorated method as ``table``'s handler of ``types``."""

    def register(fn: _H) -> _H:
        table.update(dict.fromkeys(types, fn))
        return fn

    return register


class _Frame:
    """One function's (or a module's) interpretation."""

    def __init__(self, interp: Interpreter, path: str, func: Func | None, self_value: Inst | None,
                 owner: ClassKey | None):
        self.i, self.path, self.func, self.self_value, self.owner = (interp, path, func,
                                                                     self_value, owner)
        self.env: dict[str, Value] = {}
        #: which frame an argument's buffer names a variable of (:attr:`Arg.buffers`)
        self.serial = next(_FRAME_SERIALS)
        self.returns: list[Value] = []
        self.kernels: set[Kernel] = set()
        self.produced: set[Kernel] = set()
        self.on_base = 0
        self.module_level = func is None
        self.node: ast.AST | None = None  # the function's syntax node
        self.k = interp.knowledge(path)
        self.entry = ""  # the call that started this frame
        self._consumers: int | None = None
        self.param_ids: set[int] = set()  # the values its caller passed in
        self.yields: list[Value] = []  # a generator's yielded values
        self.own_steps = 0  # its own statements (its budget: bounds.FUNCTION_BUDGET)
        #: each loop's passes already interpreted, by their entry values (bounds.Bounds.loop)
        self.loop_memo: dict[tuple[object, ...], Any] = {}

    # --- statements ---------------------------------------------------------------------------
    def block(self, body: list[ast.stmt]) -> None:
        for i, stmt in enumerate(body):
            if isinstance(stmt, ast.If) and _ends(stmt.body) and not stmt.orelse:
                # `if c: ...; return` — what follows runs only when c is false: the else side
                self.expr(stmt.test)
                self.branches([stmt.body, body[i + 1:]], stmt.test)
                return
            self.stmt(stmt)

    def stmt(self, st: ast.stmt) -> None:
        self.own_steps += 1
        if self.own_steps > FUNCTION_BUDGET or self.i.budget <= 0:
            self.i.bounds.note(self, "function budget" if self.i.budget > 0 else "run budget",
                               "the statements after this one are not interpreted", st)
            return
        self.i.budget -= 1
        self.i.steps += 1
        handler = _STMT.get(type(st))
        if handler is not None:
            handler(self, st)
        else:
            for child in ast.iter_child_nodes(st):
                if isinstance(child, ast.expr):
                    self.expr(child)

    @_on(_STMT, ast.Assign)
    def s_assign(self, st: ast.Assign) -> None:
        value = self.needed(st.value) if any(self.i.base_word(_target_name(t))
                                             for t in st.targets) else self.expr(st.value)
        for t in st.targets:
            self.assign(t, value, st.value)

    @_on(_STMT, ast.AnnAssign)
    def s_annassign(self, st: ast.AnnAssign) -> None:
        if st.value is not None:
            value = self.expr(st.value)
            if value is None and isinstance(st.target, ast.Attribute):
                value = self.i.resolve_annotation(self.path, st.annotation)
            self.assign(st.target, value, st.value)

    @_on(_STMT, ast.AugAssign)
    def s_augassign(self, st: ast.AugAssign) -> None:
        current = self.expr(st.target)
        self.assign(st.target, self.binop(st.target, current, st.op, st.value))

    @_on(_STMT, ast.Expr)
    def s_expr(self, st: ast.Expr) -> None:
        self.expr(st.value)

    @_on(_STMT, ast.Return)
    def s_return(self, st: ast.Return) -> None:
        self.returns.append(None if st.value is None else self.i.bounds.value(
            self, self.expr(st.value), st))

    @_on(_STMT, ast.If)
    def s_if(self, st: ast.If) -> None:
        self.expr(st.test)
        self.branches([st.body, st.orelse], st.test)

    @_on(_STMT, ast.For, ast.AsyncFor)
    def s_for(self, st: ast.For | ast.AsyncFor) -> None:
        self.assign(st.target, _iterate(self.expr(st.iter)))
        self.loop(st.body, st)
        self.block(st.orelse)

    @_on(_STMT, ast.While)
    def s_while(self, st: ast.While) -> None:
        self.expr(st.test)
        self.loop(st.body, st)
        self.block(st.orelse)

    @_on(_STMT, ast.With, ast.AsyncWith)
    def s_with(self, st: ast.With | ast.AsyncWith) -> None:
        for item in st.items:
            self.expr(item.context_expr)
            if item.optional_vars is not None:
                self.assign(item.optional_vars, None)
        self.block(st.body)

    @_on(_STMT, ast.Try, ast.TryStar)
    def s_try(self, st: ast.Try) -> None:
        self.branches([[*st.body, *st.orelse], *([*h.body] for h in st.handlers)])
        self.block(st.finalbody)

    @_on(_STMT, ast.Match)
    def s_match(self, st: ast.Match) -> None:
        self.expr(st.subject)
        self.branches([c.body for c in st.cases] + [[]])

    @_on(_STMT, ast.FunctionDef, ast.AsyncFunctionDef)
    def s_def(self, st: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        qual = st.name if self.func is None else f"{self.func.qualname}.<locals>.{st.name}"
        self.env[st.name] = Func(self.path, f"{qual}@{st.lineno}", st, self.closure(st))

    def closure(self, node: ast.AST) -> tuple[tuple[str, Value], ...]:
        """The values of this function's names that a nested function or lambda reads (Python
        looks them up in the enclosing scope); none at module level, where they are globals."""
        if self.func is None:
            return ()
        free = _loaded_names(node)
        return tuple(sorted(((n, self.env[n]) for n in free if n in self.env
                             and self.env[n] is not None), key=lambda kv: kv[0]))

    @_on(_STMT, ast.ClassDef)
    def s_class(self, st: ast.ClassDef) -> None:
        cls = self.i.p.cls((self.path, st.name))
        self.env[st.name] = ClassRef((self.path, st.name)) if cls is not None else None

    @_on(_STMT, ast.Import, ast.ImportFrom)
    def s_import(self, st: ast.Import | ast.ImportFrom) -> None:
        for alias in st.names:
            if alias.name == "*":
                continue
            name, value = self.i.import_value(self.path, st, alias)
            self.env[name] = value

    @_on(_STMT, ast.Delete)
    def s_delete(self, st: ast.Delete) -> None:
        for t in st.targets:
            if isinstance(t, ast.Name):
                self.env.pop(t.id, None)

    def loop(self, body: list[ast.stmt], node: ast.stmt) -> None:
        """A loop body to a fixpoint, joined with not running it (bounds.Bounds.loop)."""
        self.i.bounds.loop(self, body, node)

    def branches(self, bodies: list[list[ast.stmt]], test: ast.expr | None = None) -> None:
        before = dict(self.env)
        results = []
        on_base = test is not None and _on_base_test(test, self.i.base_attrs)
        narrowed = _tuple_test(test)
        known = None if test is None or self.i.assume is None else self.i.assume(test)
        for i, body in enumerate(bodies):
            if known is not None and i < 2 and (i == 0) != known:
                continue  # the side the assumption rules out
            self.env = dict(before)
            if narrowed is not None and i < 2 and narrowed in self.env:
                # ``if isinstance(ret, tuple): ... return ...`` / else: what each side holds
                keep = [a for a in alternatives(self.env[narrowed])
                        if isinstance(a, Tup) == (i == 0)]
                self.env[narrowed] = join(keep) if keep else None
            self.on_base += on_base
            self.block(body)
            self.on_base -= on_base
            if not _ends(body):
                results.append(self.env)
        self.env = self._join(results, before) if results else before

    def join_envs(self, results: list[dict[str, Value]], before: dict[str, Value],
                  ) -> dict[str, Value]:
        """The names after paths that end in ``results`` (each a may-union of its paths)."""
        return self._join(results, before)

    @staticmethod
    def _join(results: list[dict[str, Value]], before: dict[str, Value]) -> dict[str, Value]:
        if len(results) == 1:
            return results[0]
        joined = dict(results[0])
        for r in results[1:]:
            for key in joined.keys() | r.keys():
                a = joined.get(key, before.get(key))
                b = r.get(key, before.get(key))
                if a is not b and a != b:
                    joined[key] = join([a, b])
        return joined

    def assign(self, target: ast.expr, value: Value, source: ast.expr | None = None) -> None:
        """``target = value``; ``source``: the expression it was read from, where it is known
        (an item stored into a dict keeps the buffer it names)."""
        value = self.i.bounds.value(self, value, target)
        if isinstance(target, ast.Name):
            self.env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            star = next((i for i, t in enumerate(target.elts) if isinstance(t, ast.Starred)),
                        None)
            after = len(target.elts) - star - 1 if star is not None else 0
            for i, t in enumerate(target.elts):
                if isinstance(t, ast.Starred):
                    self.assign(t.value, _rest(value, i, after))
                elif star is not None and i > star:  # counted from the end
                    self.assign(t, _element(value, i - len(target.elts), exact=True))
                else:
                    self.assign(t, _element(value, i))
        elif isinstance(target, ast.Attribute):
            obj = self.expr(target.value)
            for alt in alternatives(obj):
                if isinstance(alt, Inst):
                    self.i.stores.setdefault((alt, target.attr), set()).add(value)
            dotted = dotted_name(target)
            if dotted is not None:
                self.env[dotted] = value
        elif isinstance(target, ast.Subscript):
            dotted = dotted_name(target.value)
            if dotted is None:
                return
            current = self.env.get(dotted)
            key = target.slice
            if any(isinstance(alt, DictV) for alt in alternatives(current)):
                if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
                    self.env[dotted] = None  # a computed key: no longer a dict it can read
                    return
                stored = Arg(value, _at(self.path, target),
                             buffers=self.buffers(source) if source is not None else frozenset())
                self.env[dotted] = join([DictV((*((k, a) for k, a in alt.items
                                                   if k != key.value), (key.value, stored)),
                                               alt.maybe - {key.value})
                                         if isinstance(alt, DictV) else alt
                                         for alt in alternatives(current)])
            elif isinstance(current, Lse) and isinstance(value, Lse):
                self.env[dotted] = join([current, value])  # lse[mask] = other: both origins

    # --- expressions --------------------------------------------------------------------------
    def needed(self, node: ast.expr) -> Value:
        """An expression whose value may be a base: its calls are read for their values."""
        need = self.i.need
        self.i.need = _NEED_LEVELS
        try:
            return self.expr(node)
        finally:
            self.i.need = need

    def expr(self, node: ast.expr) -> Value:
        self.i.steps += 1
        handler = _EXPR.get(type(node))
        if handler is not None:
            return handler(self, node)
        for child in ast.iter_child_nodes(node):  # Compare, f-strings, comprehensions...
            if isinstance(child, ast.expr):
                self.expr(child)
        return None

    def _named(self, value: Value, node: ast.expr, what: str) -> Value:
        """A literal read through a name or attribute: where the flow uses it is here (the
        argument that hands it on), where it is written goes into ``how``; one its caller passed
        in keeps the caller's place."""
        if not isinstance(value, Lit) or value.how or id(value) in self.param_ids:
            return value
        line = value.where.rsplit(":", 2)[1] if value.where.count(":") >= 2 else "?"
        return replace(value, where=_at(self.path, node), how=f" through the {what} (line {line})")

    @_on(_EXPR, ast.Name)
    def e_name(self, node: ast.Name) -> Value:
        name = node.id
        if name in self.env:
            return self._named(self.env[name], node, f"{'local variable' if self.func else 'name'} "
                               f"{name}")
        return self._named(self.i.global_value(self.path, name), node, f"module constant {name}")

    @_on(_EXPR, ast.Attribute)
    def e_attribute(self, node: ast.Attribute) -> Value:
        dotted = dotted_name(node)
        if dotted is not None and dotted in self.env:
            return self._named(self.env[dotted], node, f"attribute {dotted}")
        inner = self.expr(node.value)
        value = self.i.attribute(inner, node.attr, _at(self.path, node))
        return self._named(value, node, f"attribute {node.attr}")

    @_on(_EXPR, ast.Subscript)
    def e_subscript(self, node: ast.Subscript) -> Value:
        inner = self.expr(node.value)
        key = node.slice
        key_value = self.expr(key)
        classes = [_class_key(k) for k in alternatives(key_value)]
        class_keys = [k for k in classes if k is not None] if not isinstance(
            key, ast.Constant) and classes and None not in classes else None
        if isinstance(inner, Union_) and inner.widened:
            return inner  # unknown holding an LSE: so is every part of it
        index = _index(key)
        if index is not None and any(isinstance(a, (Tup, Seq)) for a in alternatives(inner)):
            return _element(inner, index)
        options: list[Value] = []
        for alt in alternatives(inner):
            if isinstance(alt, (Tup, Seq)):  # a position the linter cannot see: any element
                options.append(alt if isinstance(key, ast.Slice) else _iterate(alt))
            elif isinstance(alt, Lse):
                options.append(_lose_layout(alt))  # lse[:n], lse[..., i]: same base
            elif isinstance(alt, DictV):
                options += _entries(alt, key, class_keys)
            elif isinstance(alt, Param):
                options.append(alt)
            else:
                options.append(None)
        return join(options) if options else None

    @_on(_EXPR, ast.Constant)
    def e_constant(self, node: ast.Constant) -> Value:
        return _literal(self.path, node)

    @_on(_EXPR, ast.BinOp)
    def e_binop(self, node: ast.BinOp) -> Value:
        return self.binop(node.left, self.expr(node.left), node.op, node.right)

    @_on(_EXPR, ast.UnaryOp)
    def e_unary(self, node: ast.UnaryOp) -> Value:
        inner = self.expr(node.operand)
        if isinstance(node.op, ast.Not):
            opts = [Lit(not alt.value, alt.where, alt.how) if isinstance(alt, Lit) else None
                    for alt in alternatives(inner)]
            return join(opts)
        if isinstance(node.op, ast.USub) and isinstance(inner, Lse):
            return None
        return None

    @_on(_EXPR, ast.Compare)
    def e_compare(self, node: ast.Compare) -> Value:
        """A comparison of literals the flow holds (``kind != "log2"``, ``name in {"a", "b"}``):
        its value where every value either side may hold decides it one way; unknown where
        they decide it both ways, or something is not a literal."""
        left = self.expr(node.left)
        rights = [self.expr(c) for c in node.comparators]
        if len(node.ops) != 1:
            return None
        op, right = node.ops[0], rights[0]
        lefts = _literal_values(left)
        if lefts is None:
            return None
        if isinstance(op, (ast.In, ast.NotIn)):
            outcomes = self._membership(node.comparators[0], right, lefts, isinstance(op, ast.In))
        else:
            outcomes = _ordering(lefts, right, op)
        if outcomes is None or len(outcomes) != 1:
            return None
        return Lit(outcomes.pop(), _at(self.path, node), f" (the value of {_text(node)})")

    def _membership(self, shown: ast.expr, right: Value, lefts: Sequence[object],
                    is_in: bool) -> set[bool] | None:
        """``x in C`` / ``x not in C`` for each literal ``x`` may be: None where a container's
        members are not all known and one of them might be ``x``."""
        if isinstance(shown, (ast.Set, ast.List, ast.Tuple)) and not any(
                isinstance(e, ast.Starred) for e in shown.elts):
            right = Tup(tuple(self.expr(e) for e in shown.elts))  # a literal's every element
        members = _members(right)
        if members is None:
            return None
        known, complete = members
        outcomes: set[bool] = set()
        for v in lefts:
            found = any(type(v) is type(m) and v == m for m in known)
            if found and not complete:
                return None  # one of the values it may hold: whether it does, not known
            outcomes.add(found if is_in else not found)
        return outcomes

    @_on(_EXPR, ast.BoolOp)
    def e_boolop(self, node: ast.BoolOp) -> Value:
        values = [self.expr(v) for v in node.values]
        if isinstance(node.op, ast.Or):  # `a or b`: either (an LSE or a default)
            return join(values)
        return None

    @_on(_EXPR, ast.Tuple, ast.List, ast.Set)
    def e_tuple(self, node: ast.Tuple | ast.List | ast.Set) -> Value:
        values = [self.expr(e) for e in node.elts]
        if isinstance(node, ast.Set) or any(isinstance(e, ast.Starred) for e in node.elts):
            # ``[*a, b]``, ``{a, b}``: elements known, positions not
            return Seq(join([_iterate(v) if isinstance(e, ast.Starred) else v
                             for e, v in zip(node.elts, values, strict=True)]))
        return Tup(tuple(values))

    @_on(_EXPR, ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
    def e_comprehension(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp
                        | ast.DictComp) -> Value:
        """Each ``for`` binds its target to the elements of its iterable, in a scope of its
        own (the names do not leak out, as in Python 3); the result holds the element."""
        if isinstance(node, ast.DictComp):
            unrolled = self.dict_comprehension(node)
            if unrolled is not _NOT_SPECIAL:
                return cast(Value, unrolled)
        saved = dict(self.env)
        try:
            for gen in node.generators:
                self.assign(gen.target, _iterate(self.expr(gen.iter)))
                for cond in gen.ifs:
                    self.expr(cond)
            if isinstance(node, ast.DictComp):
                self.expr(node.key)
                self.expr(node.value)
                return None
            return Seq(self.expr(node.elt))
        finally:
            self.env = saved

    def dict_comprehension(self, node: ast.DictComp) -> Value | object:
        """``{k: v for k, v in d.items() if ...}`` over a dict the flow holds whole (a
        ``**kwargs``, a literal): run once per entry, as Python does, so an entry the condition
        drops is absent from the result (the callee then gets its default), one it keeps is
        there, and one it may keep is there on some paths only."""
        if len(node.generators) != 1 or node.generators[0].is_async:
            return _NOT_SPECIAL
        gen = node.generators[0]
        source, pairs = self._comprehended(gen.iter)
        if source is None:
            return _NOT_SPECIAL
        saved = dict(self.env)
        items: list[tuple[str, Arg]] = []
        maybe = set()
        try:
            for key, arg in source.items:
                self.env = dict(saved)
                k_lit = Lit(key, arg.where)
                self.assign(gen.target, Tup((k_lit, arg.value)) if pairs else k_lit)
                tests = [self.expr(cond) for cond in gen.ifs]
                verdicts = [_literal_values(t) for t in tests]
                if any(v is not None and not any(v) for v in verdicts):
                    continue  # the condition drops it on every path
                new_key = self.expr(node.key)
                if not (isinstance(new_key, Lit) and isinstance(new_key.value, str)):
                    return None  # keyed by what it cannot read: the dict is not known
                items.append((new_key.value, Arg(self.expr(node.value), arg.where)))
                if key in source.maybe or any(v is None or not all(v) for v in verdicts):
                    maybe.add(new_key.value)
        finally:
            self.env = saved
        return DictV(tuple(items), frozenset(maybe))

    def _comprehended(self, it: ast.expr) -> tuple[DictV | None, bool]:
        """The dict a comprehension runs over (``d`` or ``d.items()``: the second is True), where
        the flow holds it whole."""
        items = isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and \
            it.func.attr == "items" and not it.args and not it.keywords
        source = self.expr(it.func.value if items and isinstance(it, ast.Call)
                           and isinstance(it.func, ast.Attribute) else it)
        return (source if isinstance(source, DictV) else None), items

    @_on(_EXPR, ast.Yield, ast.YieldFrom)
    def e_yield(self, node: ast.Yield | ast.YieldFrom) -> Value:
        value = self.expr(node.value) if node.value is not None else None
        self.yields.append(_iterate(value) if isinstance(node, ast.YieldFrom) else value)
        return None

    @_on(_EXPR, ast.Dict)
    def e_dict(self, node: ast.Dict) -> Value:
        items = []
        ok = True
        for k, v in zip(node.keys, node.values, strict=True):
            value = self.expr(v)
            name = _dict_key(k) if isinstance(k, ast.Constant) else (
                _class_key(self.expr(k)) if k is not None else None)
            if name is None:
                ok = False
                continue
            items.append((name, Arg(value, _at(self.path, v), buffers=self.buffers(v))))
        return DictV(tuple(items)) if ok else None

    @_on(_EXPR, ast.Lambda)
    def e_lambda(self, node: ast.Lambda) -> Value:
        return Func(self.path, f"<lambda:{node.lineno}:{node.col_offset}>", node,
                    self.closure(node))

    @_on(_EXPR, ast.IfExp)
    def e_ifexp(self, node: ast.IfExp) -> Value:
        test = self.expr(node.test)
        body, orelse = self.expr(node.body), self.expr(node.orelse)
        if isinstance(test, Flag) and isinstance(body, Lit) and isinstance(orelse, Lit) and \
                {body.value, orelse.value} == {True, False}:
            # ``True if impl.lse_base_on_e else False``: the backend's own flag, spelled out
            return test if body.value is True else None
        return join([body, orelse])

    @_on(_EXPR, ast.Await, ast.Starred, ast.NamedExpr)
    def e_wrapped(self, node: ast.Await | ast.Starred | ast.NamedExpr) -> Value:
        value = self.expr(node.value)
        if isinstance(node, ast.NamedExpr):
            self.assign(node.target, value)
        return value

    @_on(_EXPR, ast.Call)
    def e_call(self, node: ast.Call) -> Value:
        return self.call(node)

    def binop(self, left_node: ast.expr, left: Value, op: ast.operator,
              right_node: ast.expr) -> Value:
        right = self.expr(right_node)
        if isinstance(op, ast.Add) and any(isinstance(a, (Tup, Seq)) for a in (
                *alternatives(left), *alternatives(right))):
            if isinstance(left, Tup) and isinstance(right, Tup) and not left.partial_items:
                return Tup(left.items + right.items, right.partial_items)
            return Seq(join([_iterate(left), _iterate(right)]))
        lc, rc = _const(left_node, left), _const(right_node, right)
        if isinstance(op, ast.Div) and isinstance(left_node, ast.Constant) and \
                left_node.value in (1, 1.0) and rc:
            return Num("log2e" if rc == "ln2" else "ln2")
        lse, c = (lse_of(left), rc) if lse_of(left) is not None else (
            lse_of(right), lc) if lse_of(right) is not None and isinstance(op, ast.Mult) else (
                None, None)
        if lse is None and isinstance(left, Param) and rc:
            lse = Lse(frozenset({Source(f"param:{left.path}:{left.func}:{left.name}", None,
                                        f"parameter {left.name!r}", param=left.name)}))
            c = rc  # the parameter's conversion, which its callers' LSEs go through
        if lse is None:
            return None
        if c is None or not isinstance(op, (ast.Mult, ast.Div)):
            if isinstance(op, (ast.Add, ast.Sub)):
                return lse  # lse + sink, lse - max: same base
            return None
        to_e = (c == "ln2") == isinstance(op, ast.Mult)
        return _convert(lse, to_e, _at(self.path, left_node),
                        f"{'×' if isinstance(op, ast.Mult) else '÷'} "
                        f"{'ln 2' if c == 'ln2' else 'log2 e'}")

    # --- calls --------------------------------------------------------------------------------
    def buffers(self, node: ast.expr) -> frozenset[tuple[int, ast.expr]]:
        """The variable ``node`` names, through the views of it (a slice ``buf[s:e]``,
        ``buf.view(...)``): a kernel writing into the view writes that variable's tensor."""
        while True:
            if isinstance(node, ast.Subscript):
                node = node.value
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr in _VIEWS:
                node = node.func.value
            else:
                break
        return frozenset({(self.serial, node)}) if dotted_name(node) is not None else frozenset()

    def args(self, node: ast.Call, partial: Partial | None = None) -> _Call:
        call = _Call(list(partial.pos) if partial else [], dict(partial.kw) if partial else {},
                     False, where=_at(self.path, node))
        for a in node.args:
            if isinstance(a, ast.Starred):
                value = self.expr(a.value)
                tuples = [t for t in alternatives(value) if isinstance(t, Tup)]
                if tuples and len(tuples) == len(list(alternatives(value))) and \
                        len({len(t.items) for t in tuples}) == 1:
                    # ``*x`` of a tuple, or of one of several tuples of one length (an element
                    # of a list of pairs): each position holds what any of them holds there
                    call.pos += [Arg(join([t.items[i] for t in tuples]), _at(self.path, a.value))
                                 for i in range(len(tuples[0].items))]
                else:
                    call.opaque = True
                continue
            call.pos.append(Arg(self.expr(a), _at(self.path, a), "", self.buffers(a)))
        maybe: set[str] = set()
        for kw in node.keywords:
            value = self.needed(kw.value) if self.i.base_word(kw.arg) else self.expr(kw.value)
            if kw.arg is not None:
                call.kw[kw.arg] = Arg(value, _at(self.path, kw.value),
                                      buffers=self.buffers(kw.value))
                continue
            dicts = [alt for alt in alternatives(value) if isinstance(alt, DictV)]
            if len(dicts) == 1 and not isinstance(value, Union_):
                call.kw.update(dicts[0].items)
                maybe |= dicts[0].maybe
            elif dicts and all(isinstance(alt, DictV) for alt in alternatives(value)):
                keys = {k for d in dicts for k, _ in d.items}
                for k in keys:
                    vals = [d.get(k) for d in dicts]
                    call.kw[k] = Arg(join([a.value for a in vals if a is not None]),
                                     next(a.where for a in vals if a is not None),
                                     buffers=frozenset().union(
                                         *(a.buffers for a in vals if a is not None)))
                    if any(a is None for a in vals):
                        maybe.add(k)
                maybe |= {k for d in dicts for k in d.maybe}
            else:
                call.opaque = True
        call.maybe = frozenset(maybe)
        return call

    def call(self, node: ast.Call) -> Value:
        func = node.func
        where = _at(self.path, node)
        if (c := _const(node, None)) is not None:
            return Num(c)
        name = func.attr if isinstance(func, ast.Attribute) else (
            func.id if isinstance(func, ast.Name) else "")
        if isinstance(func, ast.Attribute) and name in ("mul_", "div_") and len(node.args) == 1 \
                and dotted_name(func.value) is not None:
            current = self.expr(func.value)
            op: ast.operator = ast.Mult() if name == "mul_" else ast.Div()
            self.assign(func.value, self.binop(func.value, current, op, node.args[0]))
            return self.expr(func.value)
        if isinstance(func, ast.Attribute) and name in _EXPONENTIALS:
            weighed = self.exponential(func, node, where)
            if weighed is not _NOT_SPECIAL:
                return cast(Value, weighed)
        if isinstance(func, ast.Attribute) and name in _LN_REDUCTIONS:
            reduced = self.ln_reduction(func, node)
            if reduced is not _NOT_SPECIAL:
                return cast(Value, reduced)
        if isinstance(func, ast.Attribute) and name in _KEEPS_BASE:
            receiver = self.expr(func.value)
            for a in node.args:
                self.expr(a)
            rl = lse_of(receiver)
            if rl is not None:
                if name in _TRANSPOSES:
                    return _swap(rl) if name in _SWAPS and (
                        name == "t" or _swaps_two(node)) else _lose_layout(rl)
                return rl if name in _LAYOUT_KEEPING else _lose_layout(rl)
            if isinstance(func.value, ast.Name) and func.value.id == "torch" and node.args:
                first = lse_of(self.expr(node.args[0]))
                if first is not None and name in _TORCH_KEEPS:
                    return _swap(first) if name == "transpose" and _swaps_two(node, 1) else \
                        _lose_layout(first) if name != "contiguous" else first
            if not isinstance(receiver, (Inst, ModuleRef, Ext, ExtInst, ClassRef)):
                return None
        callee = self.expr(func)
        if name in ("empty_like", "zeros_like", "full_like", "ones_like") and node.args:
            self.args(node)
            return None  # a fresh buffer shaped like it: no LSE until a kernel writes it
        special = self.special(callee, name, node)
        if special is not _NOT_SPECIAL:
            return cast(Value, special)
        call = self.args(node)
        return self.apply(callee, call, node, where, name)

    def exponential(self, func: ast.Attribute, node: ast.Call, where: str) -> Value | object:
        """``torch.exp2(x)``/``x.exp2()``, ``torch.exp(x)``/``x.exp()``, ``x.softmax(dim)``,
        ``F.softmax(x, dim)``, ``torch.sigmoid(a - b)`` of an LSE (or of an LSE minus another, a
        hand-written merge's weight): each reads its operand in one base, so an LSE of the other
        is an error (AC023) here; the weight that comes out is no LSE."""
        op = lse_ops.exponential(func.attr)
        if op is None:
            return _NOT_SPECIAL
        namespace = self.torch_namespace(func.value)
        on_torch = namespace is not None
        if (namespace not in op.namespaces) if on_torch else not op.method:
            return _NOT_SPECIAL
        operand = (node.args[0] if node.args else None) if on_torch else func.value
        if operand is None:
            return _NOT_SPECIAL
        value = self.expr(operand)
        lse = lse_of(value)
        for a in node.args[1:] if on_torch else node.args:
            self.expr(a)
        for k in node.keywords:
            self.expr(k.value)
        if lse is None:
            return _not_a_tensor_method(value, on_torch)
        other = sorted((s for s in lse.sources if s.base in ("e", "2") and s.base != op.base),
                       key=lambda s: s.key)
        if other:
            fn = f"{namespace}.{func.attr}" if on_torch else f".{func.attr}()"
            self.i.report(Weighed(fn, func.attr, op.base, tuple(other), where))
        return None

    def torch_namespace(self, node: ast.expr) -> str | None:
        """The torch module ``node`` names (``torch``; ``F`` bound by ``import
        torch.nn.functional as F``; ``torch.special``), else None: a tensor or another object."""
        if isinstance(node, ast.Name) and node.id == "torch":
            return "torch"
        if dotted_name(node) is None:
            return None
        found = self.expr(node)
        return found.qualname if isinstance(found, Ext) and found.qualname in (
            "torch", "torch.nn.functional", "torch.special") else None

    def ln_reduction(self, func: ast.Attribute, node: ast.Call) -> Value | object:
        """``torch.logsumexp(x, ...)``, ``x.logsumexp(...)``, ``torch.logaddexp(a, b)``: the
        natural-log sources of the LSEs reduced (no layout); anything else is not this."""
        on_torch = isinstance(func.value, ast.Name) and func.value.id == "torch"
        operands = list(node.args) if on_torch else [func.value, *node.args]
        values = [self.expr(a) for a in operands]
        found = [lse_of(v) for v in values]
        for k in node.keywords:
            self.expr(k.value)
        reduced = [s for lse in found if lse is not None for s in lse.sources
                   if s.base == "e"]
        if not any(lse is not None for lse in found):
            return _not_a_tensor_method(values[0] if values else None, on_torch)
        return _lose_layout(Lse(frozenset(reduced))) if reduced else None

    def special(self, callee: Value, name: str, node: ast.Call) -> Value | object:
        qual = callee.qualname if isinstance(callee, Ext) else ""
        if callee is None and isinstance(node.func, ast.Name) and name == "type" and \
                len(node.args) == 1 and not node.keywords:
            # ``type(obj)``: the class of every object it may be; of one that may be of a
            # subclass, that class or any subclass (a key no table entry matches for sure)
            return join([ClassRef(o.cls, exact=o.exact) if isinstance(o, Inst) else
                         Ext(o.qualname) if isinstance(o, ExtInst) and
                         not o.qualname.startswith("?") else None
                         for o in alternatives(self.expr(node.args[0]))])
        if qual in _IDENTITY_WRAPPERS and len(node.args) == 1:
            return self.expr(node.args[0])
        method = name == "partialmethod" and (callee is None or qual.endswith(".partialmethod"))
        if method or qual == "functools.partial" or (callee is None and name == "partial") or (
                qual.endswith(".partial") and name == "partial"):
            if not node.args:
                return None
            target = self.expr(node.args[0])
            rest = ast.Call(func=node.args[0], args=node.args[1:], keywords=node.keywords)
            ast.copy_location(rest, node)
            call = self.args(rest)
            first = node.args[0]
            written = first.attr if isinstance(first, ast.Attribute) else (
                first.id if isinstance(first, ast.Name) else "")
            for t in alternatives(target):  # a literal base bound here is one for every call
                rec = t if isinstance(t, Rec) else self.records_for(
                    t, _callee_name(t, written), rest)
                for c in rec.consumers if rec is not None else ():
                    if isinstance(c, Consumer):
                        self.note_literal(c, call)
            return join([Partial(t.target if isinstance(t, Partial) else t,
                                 (*(t.pos if isinstance(t, Partial) else ()), *call.pos),
                                 (*(t.kw if isinstance(t, Partial) else ()), *call.kw.items()),
                                 _at(self.path, node), method) for t in alternatives(target)])
        if qual in ("typing.cast", "typing_extensions.cast") or (callee is None and name == "cast"):
            if len(node.args) == 2:
                typed = self.i.resolve_annotation(self.path, node.args[0])
                value = self.expr(node.args[1])
                return typed if typed is not None else value
            return None
        if qual == "builtins.super" or (callee is None and name == "super" and
                                         isinstance(node.func, ast.Name)):
            if self.self_value is not None and self.owner is not None:
                return Super(self.owner, self.self_value)
            return None
        if callee is None and isinstance(node.func, ast.Name) and name == "getattr" and \
                len(node.args) in (2, 3) and not node.keywords:
            return self.getattr_(node)
        if callee is None and name == "get" and isinstance(node.func, ast.Attribute) and \
                1 <= len(node.args) <= 2 and not node.keywords:
            table = self.expr(node.func.value)
            if any(isinstance(alt, DictV) for alt in alternatives(table)):
                return self.dict_get(table, node)
        if callee is None and isinstance(node.func, ast.Name) and name == "dict" and not node.args:
            call = self.args(node)
            return None if call.opaque else DictV(tuple(call.kw.items()))
        return _NOT_SPECIAL

    def getattr_(self, node: ast.Call) -> Value:
        """``getattr(obj, name[, default])``: the attribute of every name the second argument
        may be (a constant, a name bound to one, a table's values); unknown where it may be
        something else."""
        receiver = node.args[0]
        inner = self.expr(receiver)
        names = list(alternatives(self.expr(node.args[1])))
        default = self.expr(node.args[2]) if len(node.args) == 3 else None
        if not names or not all(isinstance(n, Lit) and isinstance(n.value, str) for n in names):
            return None
        values: list[Value] = []
        for n in names:
            attr = str(cast(Lit, n).value)
            value = self.i.attribute(inner, attr, _at(self.path, node))
            if value is None and isinstance(default, Lit) and isinstance(inner, Inst):
                cls = self.i.class_info(inner.cls)
                if cls is not None and self.i.p.lookup(cls, attr) is None and \
                        self.i.class_attr(cls, attr) is None:
                    value = replace(default, how=f" through getattr(..., {attr!r}, "
                                    f"{default.value!r}), whose attribute nothing sets")
            values.append(value)  # set somewhere: its value (the default is for never-set ones)
        return join(values)

    def dict_get(self, table: Value, node: ast.Call) -> Value:
        """``d.get(key, default)`` on a dict the flow holds: the entry, or the default where
        the key may be absent; by a key it cannot see, any entry or the default."""
        key = node.args[0]
        default = self.expr(node.args[1]) if len(node.args) == 2 else \
            Lit(None, _at(self.path, node))
        keys: list[str] | None = None
        if isinstance(key, ast.Constant):
            one = _dict_key(key)
            keys = [one] if one is not None else None
        else:  # a class (``type(obj)``): each class it may be, where each is one for sure
            classes = [_class_key(k) for k in alternatives(self.expr(key))]
            keys = [k for k in classes if k is not None] if classes and None not in classes \
                else None
        options: list[Value] = []
        for alt in alternatives(table):
            if not isinstance(alt, DictV):
                options.append(None)
                continue
            if keys is not None:
                for known in keys:
                    arg = alt.get(known)
                    options.append(arg.value if arg is not None else default)
                    if arg is not None and known in alt.maybe:
                        options.append(default)
                continue
            options += [_table_entry(a.value) for _, a in alt.items]
            options.append(_table_entry(default))
        return join(options)

    def apply(self, callee: Value, call: _Call, node: ast.Call, where: str, name: str) -> Value:
        options = list(alternatives(callee))
        results = [self.apply_one(alt, call, node, where, name) for alt in options]
        return join(results) if len(results) > 1 else (results[0] if results else None)

    def apply_one(self, callee: Value, call: _Call, node: ast.Call, where: str,
                  name: str) -> Value:
        if isinstance(callee, Partial):
            merged = _Call([*callee.pos, *call.pos], {**dict(callee.kw), **call.kw},
                           call.opaque, call.maybe, where)
            return self.apply(callee.target, merged, node, where, name)
        if name == "__new__" and call.pos and isinstance(call.pos[0].value, ClassRef):
            ref = call.pos[0].value  # super().__new__(cls), object.__new__(cls): the instance
            return Inst(ref.cls, exact=ref.exact)
        own = _callee_name(callee, name)
        rec = callee if isinstance(callee, Rec) else self.records_for(callee, own, node)
        if rec is None and own != name and not isinstance(callee, Rec):
            rec = self.records_for(callee, name, node)  # a stub bound under the record's name
        if rec is not None:
            return self.record_call(rec, self.i.by_name(callee, call), node, where)
        if isinstance(callee, Func):
            # a closure's enclosing values are arguments too (``bind(lse)(out)``)
            if not (_interesting(call) or _interesting(_Call([Arg(v) for _, v in callee.closure],
                                                             {}, False))
                    or self.i.wants_return(callee)):
                return self.i.declared_return(callee)
            s = self.i.analyse(callee, None, call)
            self.kernels |= s.kernels
            self.produced |= s.produced
            return s.returns if s.returns is not None else self.i.declared_return(callee)
        if isinstance(callee, Bound):
            value, kernels, produced = self.i.call_bound(callee, call, where)
            self.kernels |= kernels
            self.produced |= produced
            return value
        if isinstance(callee, ClassRef):
            return self.construct(callee, call, where)
        if isinstance(callee, Inst):
            cls = self.i.class_info(callee.cls)
            if cls is None:
                return None
            for method in ("__call__", "forward"):
                owner = self.i.p.lookup(cls, method)
                if owner is not None:
                    bound = Bound(Func(owner.path, f"{owner.name}.{method}"), callee,
                                  (owner.path, owner.name))
                    return self.apply_one(bound, call, node, where, method)
            return None
        if isinstance(callee, Ext):
            return ExtInst(callee.qualname) if callee.qualname.rpartition(".")[2][:1].isupper() \
                else None
        if callee is None and isinstance(node.func, ast.Name) and node.func.id[:1].isupper() \
                and node.func.id not in self.env:
            return ExtInst(f"?{node.func.id}")  # a class bound nowhere it sees: by its name
        if callee is None and isinstance(node.func, ast.Attribute):
            prod = self.fallback_producer(node.func.attr, call)
            if prod is not None:
                return self.record_call(prod, call, node, where)
            if node.func.attr in _GROWS and dotted_name(node.func.value) is not None:
                grown = self.grow(node.func.value, node.func.attr, call)
                if grown is not _NOT_SPECIAL:
                    return cast(Value, grown)
            # x.add_(...), kwargs.update(...): changed in place; forget what it was
            d = dotted_name(node.func.value)
            if d is not None and (node.func.attr.endswith("_") or isinstance(
                    self.env.get(d), DictV)):
                current = self.env.get(d)
                given: dict[str, Arg] | None = dict(call.kw)
                if call.pos:  # d.update(other): a dict it can read, then the keywords
                    other = call.pos[0].value if len(call.pos) == 1 else None
                    given = {**dict(other.items), **call.kw} if isinstance(other, DictV) and \
                        not other.maybe else None
                if node.func.attr == "update" and given is not None and not call.opaque and any(
                        isinstance(alt, DictV) for alt in alternatives(current)):
                    self.env[d] = join([DictV((*((k, a) for k, a in alt.items
                                                 if k not in given), *given.items()),
                                              alt.maybe - set(given))
                                        if isinstance(alt, DictV) else alt
                                        for alt in alternatives(current)])
                elif not isinstance(current, Lse):
                    self.env[d] = None
        return None

    def grow(self, receiver: ast.expr, method: str, call: _Call) -> Value | object:
        """``xs.append(x)``, ``xs.extend(ys)``, ``s.add(x)``, ``xs.pop()`` on a list, tuple or
        set the flow holds: afterwards it holds those elements too (positions not known)."""
        d = dotted_name(receiver)
        current = self.env[d] if d is not None and d in self.env else self.expr(receiver)
        if not any(isinstance(a, (Tup, Seq)) for a in alternatives(current)):
            return _NOT_SPECIAL
        had = [_iterate(a) for a in alternatives(current)
               if not (isinstance(a, Tup) and not a.items)]
        if method in ("pop", "popleft"):
            return join(had) if had else None
        if method in ("discard", "remove", "clear"):
            return None  # still a subset of what it held
        added = [a.value for a in call.pos[-1:]]
        if method in ("extend", "update", "extendleft"):
            added = [_iterate(a.value) for a in call.pos]
        if call.opaque:
            added.append(None)
        self.assign(receiver, Seq(join([*had, *added])))
        return None

    def construct(self, ref: ClassRef, call: _Call, where: str) -> Value:
        cls = self.i.class_info(ref.cls)
        if cls is None:
            return None
        args: list[tuple[str, Value]] = [(str(i), a.value) for i, a in enumerate(call.pos)]
        args += sorted(((k, a.value) for k, a in call.kw.items()), key=lambda kv: kv[0])
        if self.i.fields(cls) is not None and (args or call.opaque):
            # a dataclass or NamedTuple holds what its constructor was given, wherever it is
            # built: each field its argument (unknown where not read), the default only where
            # the call omits it; ``*args``/``**kwargs`` may give any field
            if call.opaque:
                args.append((_OPAQUE_ARGS, None))
            return Inst(ref.cls, exact=ref.exact, ctor=(where, tuple(args)))
        interesting = any(v is not None and not isinstance(v, (Inst, ExtInst))
                          for _, v in args)
        ctor = (where, tuple(args)) if interesting and not call.opaque else None
        if ctor is not None and self.module_level:
            ctor = None  # module-level singletons: their attributes from the class
        return Inst(ref.cls, exact=ref.exact, ctor=ctor)

    # --- records ------------------------------------------------------------------------------
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
        if not consumers and not producers:
            return None
        return Rec(qual or name, tuple(consumers), tuple(producers))

    def fallback_producer(self, attr: str, call: _Call) -> Rec | None:
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

    def record_call(self, rec: Rec, call: _Call, node: ast.Call, where: str) -> Value:
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
        self.i.report(Disagreed(c, self.k.versions, _at(self.path, node)))

    def note_literal(self, c: Consumer, call: _Call) -> None:
        """Where a literal base is written for a consumer (``AC003`` unless the rules find it
        contradicting a producer, ``AC023``); a literal inside an ``if`` on the base is the
        dispatch itself."""
        if self.on_base:
            return
        for kw in c.keywords:
            arg = call.kw.get(kw)
            if arg is None:
                continue
            lit = arg.value
            if isinstance(lit, Lit) and not lit.omitted and (lit.where or arg.where):
                where = lit.where or arg.where
                self.i.literal_sites.setdefault(where, (c, kw, lit))

    def consume(self, c: Consumer, call: _Call, node: ast.Call, where: str) -> Value:
        self.note_literal(c, call)
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
            use = Use(c, given, lse, self.responsible(arg.value, where), self.on_base > 0)
            # what the function's LSEs are where they are used (after their conversions): the
            # kernels a backend class's declaration is judged by
            for src in lse.sources:
                if (k := _kernel_of(src)) is not None:
                    # a fixed-base combine judges this edge itself (AC023): a converted LSE, or
                    # one a state merge reads (a prefix or chunk merge of prefill states, not the
                    # decode LSE the class's declaration describes), says nothing about the class
                    settled = given.kind == "fixed" and (bool(src.converted)
                                                         or "merge" in c.record)
                    self.kernels.add(replace(k, settled=True) if settled else k)
            self.i.uses.setdefault((c.record, c.function, given, lse, where, use.dispatched), use)
            read |= {s.base for s in lse.sources}
        if c.returns_base is None:
            return None
        merged = c.returns_base if c.returns_base in ("2", "e") else (
            given.base if given.base is not None else (read.pop() if len(read) == 1 else None))
        source = Source(f"merged:{where}", merged,
                        f"the merged LSE of {c.label} ({_line(where)})")
        return Tup((None, Lse(frozenset({source}))), partial_items=True)

    def responsible(self, value: Value, where: str) -> str:
        """Where an LSE meets its consumer: the consumer call, or, where the LSE came in
        unchanged from the callers (``self._merge(out, lse)`` handing it on), the outermost call
        that handed it on: the wrapper is generic, the call site gave it the wrong LSE."""
        frames = self.i.frames
        level = len(frames) - 1
        if level < 0 or frames[level] is not self:
            return where
        site = where
        while level > 0 and id(value) in frames[level].param_ids and frames[level].entry and \
                frames[level].single_consumer():
            site = frames[level].entry
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

    def base_given(self, c: Consumer, call: _Call, node: ast.Call, where: str) -> BaseGiven:
        if c.fixed_base is not None:  # the record's own base: the call is where it is read
            return BaseGiven("fixed", c.fixed_base, where)
        for kw in c.keywords:
            arg = call.kw.get(kw)
            if arg is None:
                continue
            if isinstance(arg.value, Lit) and arg.value.omitted == where:
                self.omitted_warning(c, kw, self._lit_base(c, arg.value), where)
            written = next((f"{kw}={_text(k.value)}" for k in node.keywords if k.arg == kw), kw)
            return self._given_by(c, kw, arg.value, arg.where, where, written)
        if call.opaque or c.base is None:
            return BaseGiven("unknown")
        if not call.by_signature:
            # a combine whose signature is not in the linted files, given past its LSE a
            # positional argument that may be the base (a value the keyword takes, a backend's
            # flag): which parameter it binds is not known, and what is not read is no error
            last = max((int(a) for a in c.lse_args if a.isdigit()), default=1)
            for arg in call.pos[last + 1:]:
                if any(isinstance(v, Flag) or (isinstance(v, Lit) and self._lit_base(c, v))
                       for v in alternatives(arg.value)):
                    return BaseGiven("unknown")
        default = c.default_base
        if not all(isinstance(x.base, KeywordBase) for x in (c.agreed or (c,))):
            return BaseGiven("fixed", default, where, f"{c.label}") if default else \
                BaseGiven("unknown")
        if default is None:
            return BaseGiven("unknown")
        kw = c.keywords[0]
        self.omitted_warning(c, kw, default, where)
        return BaseGiven("fixed", default, where, f"{c.last}'s default for {kw} (left out here)",
                         keyword=kw, omitted=where)

    def omitted_warning(self, c: Consumer, kw: str, default: str | None, where: str) -> None:
        self.i.report(Omitted(c, kw, default, where))

    def _given_by(self, c: Consumer, kw: str, value: Value, arg_where: str,
                  where: str, written: str = "") -> BaseGiven:
        """How the keyword's value tells the base: one way, or (a conditional expression, a
        table, two paths) each of the ways it may (:attr:`BaseGiven.options`)."""
        options = list(alternatives(value))
        lits = [v for v in options if isinstance(v, Lit)]
        if lits and len(lits) == len(options):
            bases = {self._lit_base(c, v) for v in lits}
            if len(bases) == 1 and None not in bases:
                lit = lits[0]
                return BaseGiven("fixed", bases.pop(), lit.where or arg_where,
                                 f"{kw}={lit.value!r}{lit.how}", literal=not lit.omitted,
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

    def produce(self, producers: list[Producer], call: _Call, node: ast.Call,
                where: str) -> Value:
        given: dict[str, str] = {}
        for k, a in call.kw.items():
            texts = _literal_text(a.value)
            given[k] = texts[0] if len(texts) == 1 else "<expr>"
        found = narrow_producers(producers, given, call.opaque)
        if not found:
            return None
        sources: set[Source] = set()
        name = producers[0].last
        for p in found:
            for base, dispatch, bases, choice in self.bases_of(p, call, node, where):
                what = f"the LSE of {name}() (producer record {p.record}, {_line(where)})"
                src = Source(f"producer:{where}:{p.record}", base, what, record=p.record,
                             choice=choice, dispatch=dispatch, bases=bases, layout=p.layout)
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

    def write_out(self, call: _Call, spec: str, lse: Lse) -> None:
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

    def bases_of(self, p: Producer, call: _Call, node: ast.Call, where: str,
                 ) -> Iterator[tuple[str | None, bool, tuple[str, ...], str]]:
        """(base, left to dispatch, the bases dispatch may pick, the choice) for each way the
        call's arguments may go."""
        cb = p.call_base
        if cb is None:
            yield p.base, False, (), ""
            return
        # the arguments that may decide the base: its keyword, the one its default depends on,
        # and those whose presence decides that default's dispatch (an expression there picks)
        keys = [cb.keyword, *([cb.default_by] if cb.default_by else []),
                *(name for name, _ in cb.picked_by)]
        options: list[list[str | None]] = []
        for k in keys:
            arg = call.kw.get(k)
            if arg is None:
                options.append([None])
                continue
            texts: list[str | None] = list(_literal_text(arg.value))
            if k in call.maybe:
                texts.append(None)
            options.append(texts)
        combos: list[dict[str, str]] = [{}]
        for k, texts in zip(keys, options, strict=True):
            combos = [{**c, **({k: t} if t is not None else {})} for c in combos for t in texts]
        dispatched = False
        for combo in combos[:MAX_UNION]:
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
            by = ""
            if cb.default_by is not None:
                shown = combo.get(cb.default_by) or f"{cb.default_by_omitted} by default"
                by = f", {cb.default_by}={shown}" if shown.startswith("'") else \
                    f", {cb.default_by} {shown}"
            chosen = "not passed" if cb.keyword not in combo else f"= {combo[cb.keyword]}"
            yield None, True, cb.bases(), f"{cb.keyword} {chosen}{by}: left to dispatch"
        if dispatched:
            self.dispatch_warning(p, cb, call, where)

    def dispatch_warning(self, p: Producer, cb: CallBase, call: _Call, where: str) -> None:
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


#: how many levels of calls an expression that may be a base is read through (the function
#: it calls, the ones that calls, ...): a base computed by a helper of a helper
_NEED_LEVELS = 3

#: the comparisons of two literals :meth:`_Frame.e_compare` reads
_COMPARE: dict[type, Callable[[Any, Any], object]] = {
    ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b,
    ast.Is: lambda a, b: a is b if a is None or b is None else type(a) is type(b) and a == b,
    ast.IsNot: lambda a, b: a is not b if a is None or b is None else not (
        type(a) is type(b) and a == b),
    ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b}


def _entries(table: DictV, key: ast.expr, class_keys: list[str] | None) -> list[Value]:
    """What ``table[key]`` may be: the entry of a constant key; with ``type(obj)`` as the key
    (``class_keys``), the entry of each class it may be; any entry for a key the linter cannot
    see."""
    if isinstance(key, ast.Constant) and _dict_key(key) is not None:
        arg = table.get(_dict_key(key) or "")
        return [arg.value if arg is not None else None]
    if class_keys is not None:
        return [a.value if (a := table.get(k)) is not None else None for k in class_keys]
    return [join([_table_entry(a.value) for _, a in table.items]) if table.items else None]


def _ordering(lefts: Sequence[object], right: Value, op: ast.cmpop) -> set[bool] | None:
    """``a OP b`` for every literal pair the two sides may hold; None where one side is no
    literal, the operator is none of :data:`_COMPARE`, or Python would raise."""
    values = _literal_values(right)
    compare = _COMPARE.get(type(op))
    if values is None or compare is None:
        return None
    outcomes: set[bool] = set()
    for a in lefts:
        for b in values:
            try:
                outcomes.add(bool(compare(a, b)))
            except TypeError:  # ``None < 1``: Python raises; nothing to read
                return None
    return outcomes


def _literal_values(value: Value) -> list[bool | int | float | str | None] | None:
    """Every Python value a value may be, where each of its alternatives is a literal."""
    options = list(alternatives(value))
    if not options or not all(isinstance(v, Lit) for v in options):
        return None
    return [cast(Lit, v).value for v in options]


def _members(value: Value) -> tuple[list[bool | int | float | str | None], bool] | None:
    """What a container of literals holds, and whether that is all it holds (a tuple's
    positions are known; a set or grown list may hold any of its values, or not)."""
    if isinstance(value, Tup) and not value.partial_items:
        out: list[bool | int | float | str | None] = []
        for item in value.items:
            one = _literal_values(item)
            if one is None or len(one) != 1:
                return None
            out += one
        return out, True
    if isinstance(value, Seq):
        many = _literal_values(value.item)
        return (many, False) if many is not None else None
    return None


def _target_name(target: ast.expr) -> str | None:
    """The name an assignment binds: ``x`` of ``x = ...`` and of ``self.x = ...``."""
    return target.id if isinstance(target, ast.Name) else (
        target.attr if isinstance(target, ast.Attribute) else None)


def _callee_name(callee: Value, written: str) -> str:
    """The name a callee's records are found by: its own (a partial's target called through
    ``self.dcp_combine(...)`` is ``cp_lse_ag_out_rs``), else the name the call is written with."""
    if isinstance(callee, Func):
        return callee.qualname.rpartition(".")[2].partition("@")[0]
    if isinstance(callee, Bound):
        return callee.func.qualname.rpartition(".")[2]
    if isinstance(callee, Ext):
        return callee.qualname.rpartition(".")[2]
    return written


def _not_a_tensor_method(receiver: Value, on_torch: bool) -> Value | object:
    """After ``torch.f(x)`` or ``x.f()`` of what is no LSE: no LSE either (its arguments are read
    already), unless ``x`` is an object whose own method ``f`` the call runs (the program's, an
    external one): then the call is interpreted as any other."""
    if on_torch or not isinstance(receiver, (Inst, ModuleRef, Ext, ExtInst, ClassRef)):
        return None
    return _NOT_SPECIAL


def _swaps_two(node: ast.Call, skip: int = 0) -> bool:
    """``x.transpose(0, 1)`` / ``x.transpose(-1, -2)``: the two axes of a 2-D LSE."""
    args = node.args[skip:]
    if len(args) != 2 or not all(isinstance(a, (ast.Constant, ast.UnaryOp)) for a in args):
        return False
    try:
        values = {ast.literal_eval(a) for a in args}
    except ValueError:
        return False
    return values in ({0, 1}, {-1, -2}, {0, -1}, {1, -2})


_NOT_SPECIAL = object()

#: the key a constructor call's ``*args``/``**kwargs`` leaves among its arguments: a field
#: it does not name may have been given any value by them
_OPAQUE_ARGS = "*"
