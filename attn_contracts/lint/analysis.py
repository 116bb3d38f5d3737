"""The state of one interpreter run, and what decides which calls matter.

:class:`Analysis` is the base of :class:`~attn_contracts.lint.interpret.Interpreter`: the
program, the knowledge, the memos and the facts found so far, the names found carrying an LSE,
and whether a call can matter to the rules (:meth:`Analysis.reaches`). The analysis of a
function and the frames that interpret it are provided by the driver above it.
"""

from __future__ import annotations

import ast
import bisect
import re
import weakref
from abc import ABC
from abc import abstractmethod
from collections import Counter
from collections.abc import Callable
from collections.abc import Mapping
from typing import Any
from typing import Protocol

from attn_contracts.findings import Location
from attn_contracts.lint.bounds import Bounds
from attn_contracts.lint.calls import CallArgs
from attn_contracts.lint.calls import Changed
from attn_contracts.lint.calls import Summary
from attn_contracts.lint.calls import carries
from attn_contracts.lint.classes import ClassInfo
from attn_contracts.lint.inferred import Fact
from attn_contracts.lint.inferred import Kernel
from attn_contracts.lint.inferred import Misconverted
from attn_contracts.lint.inferred import Use
from attn_contracts.lint.program import Program
from attn_contracts.lint.record_index import Consumer
from attn_contracts.lint.record_index import Knowledge
from attn_contracts.lint.values import Bound
from attn_contracts.lint.values import ClassKey
from attn_contracts.lint.values import Func
from attn_contracts.lint.values import Inst
from attn_contracts.lint.values import Lit
from attn_contracts.lint.values import Value
from attn_contracts.lint.values import stable_key

NO_TAINT = 1 << 30  # no cycle cut below this analysis


#: statements interpreted in one run before the interpreter stops following calls (a bound on
#: pathological programs; the released engines need a fraction of it)
RUN_BUDGET = 3_000_000
#: how many levels of calls an expression that may be a base is read through (the function
#: it calls, the ones that calls, ...): a base computed by a helper of a helper
NEED_LEVELS = 3


class FrameView(Protocol):
    """What the resolution and the driver read of a frame (:class:`~attn_contracts.lint.frame.Frame`)."""

    env: dict[str, Value]
    module_level: bool
    stored: ast.expr | None
    lazy: ast.expr | None
    class_names: frozenset[str]
    same: dict[str, frozenset[str]]
    param_ids: set[int]
    entry: Location | None

    def stmt(self, st: ast.stmt) -> None: ...

    def expr(self, node: ast.expr) -> Value: ...

    def needed(self, node: ast.expr) -> Value: ...

    def single_consumer(self) -> bool: ...


class Analysis(ABC):
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
        self.report_to = report
        #: expressions of a flag being read case by case (:mod:`.flag_cases`): what is read
        #: under an assumed flag reports nothing
        self.by_case = 0
        self.uses: dict[tuple[object, ...], Use] = {}
        self._memo: dict[tuple[object, ...], Summary] = {}
        self._contexts: dict[object, int] = {}
        self._active: set[tuple[object, ...]] = set()
        self._stack: list[tuple[object, ...]] = []
        #: the frames being interpreted, outermost first (where an LSE entered a call chain)
        self.frames: list[FrameView] = []
        self._taint = NO_TAINT
        self._counted: set[tuple[object, ...]] = set()
        self._depth = 0
        self.budget = RUN_BUDGET
        #: the work done: statements, expressions and calls interpreted (what tests count)
        self.steps = 0
        #: the bounds' state: call cycles' summaries so far, the notes of a bound hit
        self.bounds = Bounds(self)
        self._globals: dict[tuple[str, str], Value] = {}
        #: syntax the analysis builds from a node (``filter(f, xs)``'s generator expression,
        #: calls.as_generator), by the node's id, with the node (kept alive with the tree)
        self.synthetic: dict[int, tuple[ast.AST, ast.AST | None]] = {}
        #: a module-level name as the module's own top level reads it at a line, where a later
        #: statement changes it (modules.ModuleResolver.global_value_at)
        self._globals_at: dict[tuple[str, str, int], Value] = {}
        self._module_busy: set[tuple[str, str]] = set()
        #: a decorated module-level function's value (modules.decorated)
        self._decorated: dict[tuple[str, str], Value] = {}
        #: module-level containers being changed by the calls made while modules are imported
        #: (modules.ModuleResolver.after_import): each function of that module run meanwhile
        #: reads and changes this value, not the name's
        self.overlay: dict[tuple[str, str], Value] = {}
        #: names the flow found carrying an LSE or a combine (methods returning one, attributes
        #: holding one): their call sites are where more flow starts
        self.carrier_names: set[str] = set()
        self._module_carriers: set[str] = set()
        #: the functions (qualified names) found returning one
        self.carrier_funcs: set[str] = set()
        #: where a literal base is written for a consumer: the consumer, keyword and literal
        self.literal_sites: dict[Location, tuple[Consumer, str, Lit]] = {}
        #: the literal sites a partial binds (the partial's place, the keyword), and per
        #: partial and keyword whether each call of it kept that keyword (False: the call
        #: gave its own, which replaces it)
        self.bound_literals: dict[Location, set[tuple[Location, str]]] = {}
        self.partial_keywords: dict[tuple[Location, str], set[bool]] = {}
        #: ``getattr(obj, "name", default)`` calls, by place: (the attribute, whether every
        #: object it was read on so far surely has it, so the default was never taken)
        self.getattr_defaults: dict[Location, tuple[str, bool]] = {}
        #: while a combine's or a producer's body is read as its record says it is called
        #: (:mod:`.contracts`): each ``return`` of a value, in the order they run (innermost
        #: function first), with where
        self.returned: list[tuple[Location, Value]] | None = None
        #: while a producer's body is read as its record says (:mod:`.contracts`): each store
        #: of a kernel it launches, where, and what it stores
        self.stored: list[tuple[Location, Value]] | None = None
        #: (conversion, call) pairs reported (:meth:`Interpreter.analyse`)
        self.misreported: set[tuple[Misconverted, Location]] = set()
        #: (instance, attribute) → values stored (``self.x = ...``)
        self.stores: dict[tuple[Inst, str], set[Value]] = {}
        #: (class, attribute) → values stored on the class after its body, each with where
        #: (``Impl.x = v``, ``setattr(cls, "x", v)``, ``cls.x = v`` in a class decorator)
        #: each with where, and whether a function stored it as the program runs (not the
        #: module, a decorator or ``__init_subclass__`` as the class is defined)
        self.class_stores: dict[tuple[ClassKey, str], list[tuple[Value, Location, bool]]] = {}
        self.defining = 0  # depth of code a class statement runs (modules._class_definition)
        #: the objects whose ``__init__`` ran, and whether it ran reading calls for a base
        self._init_done: dict[Inst, bool] = {}
        #: what a generated ``__init__``'s ``__post_init__`` left in the fields it stores
        self._constructed: dict[Inst, dict[str, Value]] = {}
        self._class_attr_memo: dict[tuple[ClassKey, str], Value] = {}
        #: a parameter's default that is no literal, where its ``def`` ran (made_default)
        self._made_defaults: dict[tuple[str, str, str], Value] = {}
        #: a name (and whether partials count) → every call of it in the program, where each
        #: reference to it is one; a class → its constructions, where those are all
        self._program_calls: dict[tuple[str, bool, bool], list[tuple[str, Any]] | None] = {}
        self._constructions: dict[ClassKey, list[tuple[str, Any]] | None] = {}
        self._builds_any_memo: bool | None = None
        self._fields_memo: dict[ClassKey, list[str] | None] = {}
        self._ops: dict[str, Func] = {}
        self._op_funcs: set[str] = set()
        #: modules registering ops, with the words of their text
        self._op_texts: list[tuple[str, frozenset[str]]] | None = None
        self._op_names: set[str] = set()  # op names already looked for
        self._op_regs: dict[str, list[tuple[str, ast.AST]]] = {}  # per module, walked once
        self._texts: dict[str, str] = {}  # module texts read for mutations of their globals
        #: per (module, name) imported, the modules importing it and the local name (built once)
        self._foreign_index: dict[tuple[str, str], list[tuple[str, str]]] | None = None
        #: per module, the attributes it stores through anything but ``self.``
        self._outside_stores: dict[str, frozenset[str]] = {}
        #: per module: the attribute names it stores through any object, and whether it
        #: stores by computed names; per (class, exact, attribute): whether an object lacks it
        self._module_stores: dict[str, tuple[frozenset[str], bool]] = {}
        self._lacks_memo: dict[tuple[ClassKey, bool, str], bool] = {}
        self._outside_anywhere: dict[str, bool] = {}
        #: the base attributes stored through anything but ``self.`` anywhere in the program
        self._outside_base_stores: frozenset[str] | None = None
        #: per (property's class, its name, the class read on): what the property returns
        self._property_values: dict[tuple[ClassKey, str, ClassKey], Value] = {}
        #: per module, its stores into ``<X>.attr`` outside ``self.``, by attribute, walked
        #: once (attributes.store_index)
        self._store_index: dict[str, dict[str, list[Any]]] = {}
        #: per module, the attributes stored on its names (modules.ModuleResolver.function_attr)
        self._attr_stores: dict[str, dict[tuple[str, str], tuple[list[ast.expr], bool]]] = {}
        self._mutation_index: dict[str, dict[str, tuple[list[ast.stmt], list[ast.expr],
                                                        bool]]] = {}
        #: per module, the top-level names that share one object with another (``B = A``)
        #: and are changed in place or by ``+=`` somewhere in it
        self._shared_changed: dict[str, dict[str, frozenset[str]]] = {}
        #: per module, how many top-level statements bind each name (modules.top_bindings)
        self._top_bindings: dict[str, Counter[str]] = {}
        self._assigns_attr: dict[int, dict[str, ast.expr | None]] = {}
        #: per method, the attributes it reads on its ``self`` (attributes.Resolver.self_reads)
        self._self_reads: dict[Func, frozenset[str]] = {}
        #: per class, the classes whose ``__init__`` runs for its instances (Resolver.init_chain)
        self._init_chains: dict[ClassKey, list[ClassInfo] | None] = {}
        self._noted_agreed: set[tuple[str, str]] = set()
        self._carrier_lines: dict[str, tuple[int, ...]] = {}
        self._calls_memo: dict[tuple[str, str], bool] = {}
        self._relevant_pattern: re.Pattern[str] | None = None
        #: decides an ``if`` test where the caller knows it (an engine's configuration: DCP
        #: on), so only that side is interpreted; None: every side
        self.assume: Callable[[ast.expr], bool | None] | None = None
        #: what a question asked of the program (:meth:`Interpreter.value_at`) takes an
        #: object's attribute to be (the name an engine registered a backend under), and the
        #: values it records of one expression; empty outside such a question
        self.given_attrs: dict[str, Value] = {}
        #: per function node: the local names whose value may reach a base (scope.told_names)
        self.told_names: weakref.WeakKeyDictionary[ast.AST, frozenset[str]] = \
            weakref.WeakKeyDictionary()
        self.watched: dict[int, list[Value]] = {}
        #: per function node (by id), its told names with what a question watches
        #: (scope.told_names): kept for one question only
        self.asked_told: dict[int, frozenset[str]] = {}
        #: > 0 while an expression whose value may be a base is evaluated (a base keyword's
        #: argument, a base attribute's assignment, and the calls made there, down to
        #: :data:`NEED_LEVELS` levels): a call there is interpreted for its return value even
        #: where its function names no producer or consumer (``is_lse_base_on_e=base()``);
        #: the levels keep it from following a constructor into the whole engine
        self.need = 0
        self._base_words: frozenset[str] | None = None

    def live_literal_sites(self) -> dict[Location, tuple[Consumer, str, Lit]]:
        """The literal sites, less those only partials bind whose every call seen gives the
        keyword itself (the literal never reaches the consumer: Python's partial lets the
        call's keyword replace the bound one)."""
        def dead(site: Location) -> bool:
            bound = self.bound_literals.get(site)
            return bound is not None and all(
                self.partial_keywords.get(key) == {False} for key in bound)
        return {k: v for k, v in self.literal_sites.items() if not dead(k)}

    def report(self, fact: Fact) -> None:
        """A fact the rules turn into a finding; none while a flag is assumed."""
        if not self.by_case:
            self.report_to(fact)

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
            if isinstance(func, Func) and carries(summary.returns):
                names.add(func.qualname.rpartition(".")[2])
                self.carrier_funcs.add(func.qualname)
        for (_, attr), values in self.stores.items():
            if any(carries(v) for v in values):
                names.add(attr)
        names |= self._module_carriers
        return {n for n in names if n.isidentifier() and not n.startswith(("<", "__"))}

    def instance_stores(self, attrs: tuple[str, ...]) -> dict[tuple[ClassKey, str], list[Value]]:
        """Per class and attribute of ``attrs``, what its methods stored on an instance of
        exactly it (``self.lse_base_on_e = False``), in a fixed order."""
        found: dict[tuple[ClassKey, str], list[Value]] = {}
        for (inst, attr), values in self.stores.items():
            if attr in attrs and inst.exact:
                found.setdefault((inst.cls, attr), []).extend(values)
        return {k: sorted(v, key=stable_key) for k, v in found.items()}

    def found_function_carriers(self) -> set[str]:
        """Of :meth:`found_carriers`, the module-level functions' names."""
        return {q.partition("@")[0] for q in self.carrier_funcs if "." not in q and "<" not in q}

    def reaches(self, func: Func) -> bool:
        """Whether a call into a function can matter to the rules (when no argument carries an
        LSE, a base attribute or a combine): it holds a line naming a producer, a consumer or a
        base attribute, or calls a function of its module that does (the per-file pass's
        ``relevant``), or computes a logarithm or calls one of its module that does
        (``computes_logs``: what it hands back may be an LSE it computed), or it is a name the
        flow found carrying an LSE."""
        if func.qualname in self.carrier_funcs:
            return True
        info = self.p.info(func.path)
        if info is None:
            return False
        if func.qualname in info.relevant or func.qualname in info.computes_logs:
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
                            for q in (*info.relevant, *info.computes_logs)})
            self._relevant_pattern = re.compile(
                r"\b(?:" + "|".join(map(re.escape, names)) + r")\s*\(" if names else r"(?!x)x")
        return self._relevant_pattern

    # --- what the analysis driver (:mod:`attn_contracts.lint.interpret`) provides ------------
    @abstractmethod
    def analyse(self, func: Func, self_value: Inst | None, call: CallArgs | None, *,
                generic: bool = False) -> Summary:
        """A function's summary for one call (or on its own, ``generic``)."""

    @abstractmethod
    def call_bound(self, bound: Bound, call: CallArgs, where: Location,
                   ) -> tuple[Value, frozenset[Kernel], frozenset[Kernel], list[Changed]]:
        """A method call's result, the kernels it reaches and what it changed in place."""

    @abstractmethod
    def property_get(self, owner: ClassInfo, attr: str, cls: ClassInfo) -> Value:
        """What ``owner``'s property ``attr`` returns on an object of exactly ``cls``."""

    @abstractmethod
    def new_frame(self, path: str) -> FrameView:
        """A frame for module-level or class-level code of ``path``."""

    @abstractmethod
    def after_import(self, path: str, name: str, value: Value, line: int) -> Value:
        """A module-level container, bound to ``value`` at ``line``, with what the functions
        run while modules are imported change in it; None where that is not known."""
