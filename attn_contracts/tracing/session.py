"""One trace: wrap the records' functions, tag what producers return, check what consumers get.

While a :class:`Trace` runs, every producer its records name is wrapped: after the call, the
records whose ``when`` the actual arguments satisfy (the most specific win, as in the linter) give
the LSE's base — :func:`attn_contracts.checks.resolve_call_base` over the call's literal arguments,
the same resolution the static side uses (``CallBase.resolve``), so ``return_lse_base='basee'``
or a dispatch-chosen default is read from the call — and its layout; the LSE (the returned
tuple's ``lse_index``, and a tensor passed as ``lse=``) gets a :class:`~attn_contracts.tracing.
tags.Tag` naming the call site and the records. The mode (:mod:`attn_contracts.tracing.mode`)
carries it through views, copies and conversions. Every consumer is wrapped too: before the call,
each LSE argument's tag is compared with what the call tells the consumer — its fixed base, or
the keyword's literal through the consumer record's ``KeywordBase`` (omitted: its default) — by
:func:`attn_contracts.checks.check_edge` on the producer's record re-read with the tag's base,
layout and dtype. A mismatch is ``AC016`` (base) or ``AC017`` (layout, states axis), an error
naming the consumer's call site (the finding's location), the producer's call site and its
records, and every conversion on the way.

A module imported during the trace that defines a record's function is wrapped as its import
finishes (:class:`~attn_contracts.tracing.targets.ImportWatch`). What the trace saw but could
not check is counted, and the verdict is then "not checked", never "ok": an LSE argument with no
tag, a base keyword it cannot read, a record function imported where the watch could not wrap
it.

Off (no trace running) nothing of this exists: no mode is pushed and every function is the
library's own object. ``stop`` restores every patch, takes back every wrapper bound during the
trace (:func:`~attn_contracts.tracing.targets.sweep`), cuts each remaining wrapper's link to
the trace, and pops the mode, even when the traced code raised; nothing it installed keeps the
trace alive.
"""

from __future__ import annotations

import functools
import os
import sys
import threading
import time
import weakref
from collections import Counter
from collections.abc import Callable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from types import FrameType
from types import TracebackType
from typing import Any
from typing import Literal

from attn_contracts.call_base import literal_key
from attn_contracts.checks import check_edge
from attn_contracts.checks import resolve_call_base
from attn_contracts.consumer import ConsumerCall
from attn_contracts.consumer import ConsumerRecord
from attn_contracts.consumer import KeywordBase
from attn_contracts.findings import Code
from attn_contracts.findings import ContractError
from attn_contracts.findings import Finding
from attn_contracts.findings import Location
from attn_contracts.findings import Severity
from attn_contracts.records import CapabilityRecord
from attn_contracts.records import LseSpec
from attn_contracts.records import ProducerCall
from attn_contracts.registry import Registry
from attn_contracts.registry import default_registry
from attn_contracts.tracing.tags import Origin
from attn_contracts.tracing.tags import Tag
from attn_contracts.tracing.tags import TagMap
from attn_contracts.tracing.tags import axes_for
from attn_contracts.tracing.targets import ImportWatch
from attn_contracts.tracing.targets import Patches
from attn_contracts.tracing.targets import Target
from attn_contracts.tracing.targets import collect
from attn_contracts.tracing.targets import sweep
from attn_contracts.tracing.targets import watched_modules

__all__ = ["Mismatch", "Trace", "TraceReport", "trace"]

_HERE = os.path.dirname(os.path.abspath(__file__))
_LSE_BUFFERS = ("lse",)  # keyword a kernel writes its LSE into (``trtllm_...(lse=buf)``)
_LITERALS = (bool, int, float, str, type(None))
_KEEP_CODES = (Code.AC016, Code.AC017, Code.AC020)
_FLOAT_DTYPES = ("float32", "bfloat16", "float16")
_TRACED = "__attn_contracts_traced__"  # marks a wrapper (tests tell wrapped from original)
#: the site of a call no frame outside the trace and torch made: a unit with no file, written
#: as the tracer always wrote an unknown site
_NO_SITE = Location("?")


def _literal(value: object) -> str | None:
    """A Python value as literal text for the records' tables (None: no literal: a tensor, an
    object)."""
    return repr(value) if isinstance(value, _LITERALS) else None


@functools.lru_cache(maxsize=4096)
def _short(path: str) -> str:
    p = path.replace(os.sep, "/")
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in p:
            return p.rsplit(marker, 1)[1]
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return p
    return rel.replace(os.sep, "/") if not rel.startswith("..") else p


@dataclass(frozen=True)
class Mismatch:
    """A finding of the trace as data: where it is (a consumer's call site, or a conversion's),
    the consumer record (empty for a conversion), the argument, the producers the LSE came from
    and their call sites, and the conversions it went through."""

    code: Code
    site: Location
    consumer: str
    argument: str
    producers: tuple[str, ...]
    producer_sites: tuple[Location, ...]
    conversions: tuple[str, ...] = ()

    @classmethod
    def of(cls, code: Code, site: Location, consumer: str, argument: str, tag: Tag) -> Mismatch:
        return cls(code, site, consumer, argument,
                   tuple(dict.fromkeys(r for o in tag.origins for r in o.records)),
                   tuple(dict.fromkeys(o.site for o in tag.origins)), tag.conversions)


@dataclass
class TraceReport:
    """What one trace saw. ``overhead_s``: what the trace cost the calls it saw while it ran:
    the time inside its handler and wrappers (``handler_s``, timed) plus torch's and Python's
    cost of calling them at all, which no code inside them can time (``dispatch_s``: the calls
    counted, times the cost of one measured when the trace started); ``setup_s``: wrapping and
    restoring; ``wall_s``: from start to stop.

    What it could not check is counted, never passed as ok: consumer arguments whose LSE carried
    no tag (``untagged``: an unknown producer, or a change the trace could not follow), and
    record functions whose module was imported during the trace but could not be wrapped
    (``late_unchecked``)."""

    findings: list[Finding] = field(default_factory=list)
    #: the errors and warnings about LSEs, as data (one per finding about a traced edge)
    mismatches: list[Mismatch] = field(default_factory=list)
    wrapped: list[str] = field(default_factory=list)
    rebound: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    #: record functions wrapped when their module was imported during the trace
    wrapped_late: list[str] = field(default_factory=list)
    #: record functions imported during the trace that could not be wrapped: not checked
    late_unchecked: list[str] = field(default_factory=list)
    #: where wrappers were found and taken back at the end (bound during the trace)
    unwrapped: list[str] = field(default_factory=list)
    producer_calls: Counter[str] = field(default_factory=Counter)
    consumer_calls: Counter[str] = field(default_factory=Counter)
    tagged: int = 0
    followed: int = 0
    conversions: int = 0
    #: consumer arguments whose LSE carried no tag: ``record:argument at file:line``
    untagged: Counter[str] = field(default_factory=Counter)
    #: consumer calls whose base keyword was an object the trace does not read: not checked
    unread: Counter[str] = field(default_factory=Counter)
    torch_calls: int = 0
    wrapped_calls: int = 0
    overhead_s: float = 0.0
    handler_s: float = 0.0
    dispatch_s: float = 0.0
    setup_s: float = 0.0
    wall_s: float = 0.0
    notes: list[str] = field(default_factory=list)

    def errors(self) -> list[Finding]:
        return [f for f in self.findings if f.severity is Severity.ERROR]

    @property
    def not_checked(self) -> int:
        """What the trace saw but could not check: LSE arguments with no tag, consumer calls
        whose base keyword it could not read, and record functions imported during the trace
        that it could not wrap."""
        return sum(self.untagged.values()) + sum(self.unread.values()) + len(self.late_unchecked)

    @property
    def verdict(self) -> str:
        """``error``, ``warning``, ``not checked`` (no finding, but something seen was not
        checked), or ``ok`` (everything seen was checked and agrees)."""
        levels = {f.severity for f in self.findings}
        found = next((str(s) for s in (Severity.ERROR, Severity.WARNING) if s in levels), None)
        return found or ("not checked" if self.not_checked else "ok")

    def summary(self) -> str:
        """One line: what ran, what was not checked, what it cost, the verdict."""
        unchecked = sum(self.untagged.values())
        return (f"attn-contracts trace: {sum(self.producer_calls.values())} producer and "
                f"{sum(self.consumer_calls.values())} consumer calls, {self.tagged} LSEs tagged, "
                f"{self.followed} followed, {self.conversions} conversions, {len(self.findings)} "
                f"finding(s), {self.not_checked} not checked ({unchecked} LSE argument(s) with "
                f"no known producer, {sum(self.unread.values())} base(s) not read, "
                f"{len(self.late_unchecked)} late import(s) not wrapped) "
                f"({self.verdict}); {self.torch_calls} torch calls intercepted; overhead "
                f"{self.overhead_s * 1e3:.1f} ms of {self.wall_s * 1e3:.1f} ms (setup "
                f"{self.setup_s * 1e3:.1f} ms); {len(self.wrapped)} functions wrapped "
                f"({len(self.wrapped_late)} on import), {len(self.skipped)} skipped")

    def render(self) -> str:
        lines = [self.summary(), *(f"  {f.render()}" for f in self.findings)]
        lines += [f"  not checked: {k} (no tag: its producer was not traced, or the LSE was "
                  f"changed where the trace could not follow) x{n}"
                  for k, n in self.untagged.items()]
        lines += [f"  not checked: {k}: its base is not read x{n}" for k, n in self.unread.items()]
        lines += [f"  not checked: {p} (imported during the trace, not wrapped)"
                  for p in self.late_unchecked]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "findings": [f.to_json() for f in self.findings],
            "mismatches": [{**vars(m), "code": str(m.code), "site": str(m.site),
                            "producer_sites": [str(s) for s in m.producer_sites]}
                           for m in self.mismatches],
            "wrapped": self.wrapped, "rebound": self.rebound,
            "wrapped_late": self.wrapped_late, "late_unchecked": self.late_unchecked,
            "unwrapped": self.unwrapped, "not_checked": self.not_checked,
            "skipped": [{"function": p, "why": w} for p, w in self.skipped],
            "producer_calls": dict(self.producer_calls),
            "consumer_calls": dict(self.consumer_calls),
            "tagged": self.tagged, "followed": self.followed, "conversions": self.conversions,
            "untagged": dict(self.untagged), "unread": dict(self.unread),
            "torch_calls": self.torch_calls,
            "wrapped_calls": self.wrapped_calls, "overhead_s": self.overhead_s,
            "handler_s": self.handler_s, "dispatch_s": self.dispatch_s,
            "setup_s": self.setup_s, "wall_s": self.wall_s,
            "notes": self.notes,
        }

    def raise_for_errors(self, context: str = "the trace found LSE contract errors") -> None:
        errors = self.errors()
        if errors:
            raise ContractError(errors, context)


class Trace:
    """A trace of the real producer and consumer calls (a context manager; see the module).

    ``registry``: the records to trace (default: the process's registry, the built-in catalog
    with what :func:`attn_contracts.register` and the plugins added). ``on_error``: at the end
    of a ``with`` block whose body did not raise, ``"raise"`` raises one
    :class:`~attn_contracts.findings.ContractError` with every error; ``"report"`` leaves them in
    :attr:`report`. ``partials``: also rebind ``functools.partial`` objects made of a traced
    function before the trace began (one pass over the garbage collector's referrers)."""

    def __init__(self, registry: Registry | None = None, *,
                 on_error: Literal["raise", "report"] = "raise", partials: bool = True) -> None:
        if on_error not in ("raise", "report"):
            raise ValueError(f"on_error={on_error!r}; allowed: 'raise', 'report'")
        self.registry = registry if registry is not None else default_registry()
        self.on_error = on_error
        self.partials = partials
        self.report = TraceReport()
        # read by the mode on every torch call: plain attributes
        self.tags = TagMap()
        self.torch_calls = 0
        self.wrapped_calls = 0
        self.followed = 0
        self.overhead_ns = 0
        #: what torch and Python cost per call of the handler and of a wrapper, outside them
        self._per_call_ns = (0.0, 0.0, 0.0)
        self.python_calls = 0  # of torch_calls, those of Python functions (F.rms_norm, ...)
        #: id(wrapper) → (wrapper, original), and each wrapper's link to this trace
        self._wrappers: dict[int, tuple[Any, Any]] = {}
        self._cells: list[list[Any]] = []
        self._watch: ImportWatch | None = None
        self._pending: list[tuple[str, str]] = []
        self._late_lock = threading.Lock()
        self._running = False
        self._started = False
        self._local = threading.local()
        self._patches = Patches()
        self._mode: Any = None
        self._hidden = False  # the mode is off the stack while Dynamo compiles
        self._dynamo: Any = None
        self._compiling = 0
        self._thread = 0
        self._t0 = 0.0
        self._quiet: Any = None
        self._producers: dict[str, CapabilityRecord | None] = {}
        self._seen: dict[tuple[object, ...], tuple[Finding, int, Mismatch | None]] = {}
        self._edges: dict[tuple[str | None, ...], list[Finding]] = {}
        self._bases: dict[tuple[Any, ...], tuple[str | None, list[Finding]]] = {}
        self._skip_dirs: tuple[str, ...] = (_HERE,)

    # --- lifecycle --------------------------------------------------------------------------
    def __enter__(self) -> Trace:
        self.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        report = self.stop()
        if exc_type is None and self.on_error == "raise":
            report.raise_for_errors()

    def start(self) -> None:
        """Wrap the records' functions and push the mode (a second start is refused)."""
        if self._started:
            raise RuntimeError("this trace has already run (a Trace runs once; make another)")
        self._started = True
        import torch

        from attn_contracts.tracing.mode import mode_class

        t0 = time.perf_counter()
        self._skip_dirs = (_HERE, os.path.dirname(os.path.abspath(torch.__file__)))
        self._quiet = torch._C.DisableTorchFunction
        self._per_call_ns = _calibrate()
        targets, skipped = collect(self.registry.records(), self.registry.consumers())
        self.report.skipped = skipped
        self.report.wrapped = [t.path for t in targets]
        try:
            self._patches.install(targets, self._wrap, partials=self.partials)
            self.report.rebound = list(self._patches.rebound)
            self._pending = list(skipped)
            names = watched_modules(p for p, _ in skipped)
            if names:  # a producer imported during the trace is wrapped on import
                self._watch = ImportWatch(names, self._imported)
                sys.meta_path.insert(0, self._watch)
            self._mode = mode_class()(self)
            self._mode.__enter__()
            self._thread = threading.get_ident()
            self._hook_dynamo()
        except BaseException:
            self._unhook_dynamo()
            if self._mode is not None:
                _remove_mode(self._mode)
            self._end_imports()
            self.report.notes += self._patches.restore()
            self._release()
            self._mode = None
            raise
        self._running = True
        self._t0 = time.perf_counter()
        self.report.setup_s = self._t0 - t0

    def stop(self) -> TraceReport:
        """Pop the mode, restore every patch, and finish the report (idempotent)."""
        if not self._running:
            return self.report
        t0 = time.perf_counter()
        self._running = False
        self.report.wall_s = t0 - self._t0
        try:
            self._pop_mode()
        finally:
            self._end_imports()
            self.report.notes += self._patches.restore()
            try:
                self.report.unwrapped = sweep(self._wrappers, referrers=self.partials)
            except Exception as err:  # a guest: a failed sweep leaves pass-through wrappers
                self.report.notes.append(f"could not take every wrapper back: "
                                         f"{type(err).__name__}: {err}")
            self._release()
        r = self.report
        r.torch_calls, r.followed, r.wrapped_calls = \
            self.torch_calls, self.followed, self.wrapped_calls
        r.handler_s = self.overhead_ns / 1e9
        r.overhead_s = self.accounted_ns() / 1e9
        r.dispatch_s = r.overhead_s - r.handler_s
        r.findings = [f if n == 1 else replace(f, message=f"{f.message} (seen {n} times)")
                      for f, n, _ in self._seen.values()]
        r.mismatches = [m for _, _, m in self._seen.values() if m is not None]
        r.setup_s += time.perf_counter() - t0
        self.tags = TagMap()  # drop every tag now: nothing outlives the trace
        return r

    def _release(self) -> None:
        """Cut every link from what the trace installed back to it: a wrapper kept where no
        sweep reaches (a tuple, a staticmethod made during the trace) then calls the library's
        own function and holds no trace."""
        for cell in self._cells:
            cell[0] = cell[1] = None
        self._wrappers = {}

    def _end_imports(self) -> None:
        """Stop watching imports; a record function that resolves now but was never wrapped was
        imported during the trace where the watch could not see it: not checked."""
        watch, self._watch = self._watch, None
        if watch is not None:
            watch.close()
        if not self._pending:
            return
        pending = {p for p, _ in self._pending}
        ours = set(self._wrappers) | {id(w[1]) for w in self._wrappers.values()}
        late, _ = collect(self._records_of(list(pending)), self._consumers_of(list(pending)))
        # a record of a pending path may name others, wrapped already (they resolve to the
        # wrapper here): only the pending paths that resolve to no function of ours count
        self.report.late_unchecked = [
            t.path for t in late if id(t.original) not in ours
            and ({t.path, *t.aliases} & pending)]

    def _records_of(self, paths: list[str]) -> list[CapabilityRecord]:
        want = set(paths)
        return [r for r in self.registry.records() if any(c.function in want for c in r.calls)]

    def _consumers_of(self, paths: list[str]) -> list[ConsumerRecord]:
        want = set(paths)
        return [r for r in self.registry.consumers()
                if any(c.function in want for c in r.calls)]

    def _imported(self, module: str) -> None:
        """A watched module finished importing: wrap the record functions it now makes
        resolvable (before anything can call them), and keep watching for the rest."""
        if not self._running:
            return
        try:
            with self._late_lock:
                paths = [p for p, _ in self._pending]
                targets, skipped = collect(self._records_of(paths), self._consumers_of(paths))
                done = {id(w[1]) for w in self._wrappers.values()}
                new = [t for t in targets if id(t.original) not in done]
                if new:
                    self._patches.install(new, self._wrap, partials=False)
                    self.report.wrapped += [t.path for t in new]
                    self.report.wrapped_late += [t.path for t in new]
                resolved = {t.path for t in targets} | {a for t in targets for a in t.aliases}
                self._pending = [(p, w) for p, w in skipped if p not in resolved]
                self.report.skipped = [(p, w) for p, w in self.report.skipped
                                       if p not in resolved]
        except Exception as err:  # a guest: the import goes on whatever the trace trips over
            self.report.notes.append(f"trace error wrapping what {module} defines: "
                                     f"{type(err).__name__}: {err}")

    def _pop_mode(self) -> None:
        """Take this trace's mode off the stack for good (a mode left on another thread's
        stack is told the trace is over: it passes everything through and holds no trace)."""
        self._unhook_dynamo()
        mode, self._mode = self._mode, None
        if mode is not None:
            mode.trace = _OFF
        if mode is None or self._hidden:
            return
        if not _remove_mode(mode):
            self.report.notes.append(
                "the trace's mode was not on this thread's stack (stopped from another thread "
                "than the one that started it); it passes every call through from now on")

    def accounted_ns(self) -> float:
        """What the report will call the overhead so far (ns): the timed handler and wrapper
        time plus the counted calls times their calibrated cost."""
        mode_ns, python_ns, wrap_ns = self._per_call_ns
        return (self.overhead_ns + (self.torch_calls - self.python_calls) * mode_ns
                + self.python_calls * python_ns + self.wrapped_calls * wrap_ns)

    # --- torch.compile ------------------------------------------------------------------------
    def _hook_dynamo(self) -> None:
        """While Dynamo captures a frame the mode is off the stack: Dynamo records the stack it
        finds in the frame's guards, an engine's compile cache pickles them (vLLM's AOT
        package refuses a mode it cannot pickle), and a compiled graph must be the graph it
        would be without the trace. Dynamo takes the stack through one object, its
        ``TorchFunctionModeStackStateManager``, on every capture path (``torch.compile`` and
        AOT compile); its enter and exit are wrapped while the trace runs, where Dynamo is
        loaded (elsewhere the handler passes through while compiling)."""
        module = sys.modules.get("torch._dynamo.variables.torch_function")
        cls = getattr(module, "TorchFunctionModeStackStateManager", None)
        enter, leave = getattr(cls, "__enter__", None), getattr(cls, "__exit__", None)
        if cls is None or enter is None or leave is None:
            return
        trace = weakref.ref(self)  # a hook someone else kept installed holds no trace

        def hidden_enter(mgr: Any) -> Any:
            t = trace()
            if t is not None:
                t._compile_starts()
            return enter(mgr)

        def hidden_exit(mgr: Any, *exc: Any) -> Any:
            try:
                return leave(mgr, *exc)
            finally:
                t = trace()
                if t is not None:
                    t._compile_ends()

        cls.__enter__, cls.__exit__ = hidden_enter, hidden_exit
        self._dynamo = (cls, enter, leave, hidden_enter, hidden_exit)

    def _unhook_dynamo(self) -> None:
        hooked, self._dynamo = self._dynamo, None
        if hooked is None:
            return
        cls, enter, leave, hidden_enter, hidden_exit = hooked
        if cls.__dict__.get("__enter__") is hidden_enter:
            cls.__enter__ = enter
        if cls.__dict__.get("__exit__") is hidden_exit:
            cls.__exit__ = leave

    def _compile_starts(self) -> None:
        if threading.get_ident() != self._thread:
            return
        self._compiling += 1
        if self._compiling == 1 and self._mode is not None and not self._hidden and \
                _remove_mode(self._mode):
            self._hidden = True

    def _compile_ends(self) -> None:
        if threading.get_ident() != self._thread:
            return
        self._compiling -= 1
        if self._compiling == 0 and self._hidden:
            self._hidden = False
            if self._mode is not None:
                self._mode.__enter__()

    # --- read by the mode -------------------------------------------------------------------
    def following(self) -> bool:
        """Whether the mode follows this call (the trace runs, and no wrapped call is running
        on this thread: a kernel's own arithmetic is not followed)."""
        return self._running and not getattr(self._local, "depth", 0)

    def site(self, frame: FrameType | None) -> Location:
        """The file and line of the first frame outside the trace and torch (:data:`_NO_SITE`
        where there is none)."""
        while frame is not None and frame.f_code.co_filename.startswith(self._skip_dirs):
            frame = frame.f_back
        if frame is None:
            return _NO_SITE
        return Location(_short(frame.f_code.co_filename), frame.f_lineno)

    def trouble(self, where: str, err: Exception) -> None:
        """The trace's own failure while following a call: a note (once per kind), never the
        engine's exception."""
        note = f"trace error {where}: {type(err).__name__}: {err}"
        if note not in self.report.notes:
            self.report.notes.append(note)

    def site_of_torch_call(self) -> Location:
        return self.site(sys._getframe(1))

    def converted(self, tag: Tag, conv: tuple[str, str, str], site: Location) -> Tag:
        """The tag after a conversion at ``site``; a conversion of the other base is AC016."""
        frm, to, how = conv
        self.report.conversions += 1
        if tag.bases == (frm,):
            return replace(tag, bases=(to,),
                           conversions=(*tag.conversions, f"{site} ({how}: base {frm} → {to})"))
        if tag.bases:
            names = ", ".join(dict.fromkeys(r for o in tag.origins for r in o.records))
            self._add(Finding(
                Code.AC016, f"{names} -> {how}",
                f"{how} at {site} converts base {frm} to {to}, but the LSE it is applied to is "
                f"base {'/'.join(tag.bases)} (from {self._from(tag)}): the result is in no base",
                hint=f"drop the conversion, or convert base {'/'.join(tag.bases)} with the other "
                     "factor (× ln 2 for 2 → e, × log2 e for e → 2)",
                field="base", found="/".join(tag.bases), allowed=frm, location=site),
                (site, "conversion", tuple(o.site for o in tag.origins)),
                Mismatch.of(Code.AC016, site, "", how, tag))
        return replace(tag, bases=(),
                       conversions=(*tag.conversions, f"{site} ({how} of base "
                                    f"{'/'.join(tag.bases) or '?'})"))

    # --- wrappers -----------------------------------------------------------------------------
    def _wrap(self, target: Target) -> Callable[..., Any]:
        import torch

        original = target.original
        is_compiling = torch.compiler.is_compiling
        stack_len = torch._C._len_torch_function_stack
        pop_mode = torch._C._pop_torch_function_stack
        push_mode = torch._C._push_on_torch_function_stack

        def top_mode() -> Any:
            return torch._C._get_function_stack_at(stack_len() - 1)

        local = self._local
        clock = time.perf_counter_ns
        # the wrapper reaches the trace through this cell, which stop() empties: a wrapper that
        # outlives the trace is the library's function again and keeps no trace alive
        cell: list[Any] = [self, target]
        self._cells.append(cell)

        @functools.wraps(original)
        def traced(*args: Any, **kwargs: Any) -> Any:
            t0 = clock()
            trace: Trace | None = cell[0]
            if trace is None:
                return original(*args, **kwargs)
            trace.wrapped_calls += 1  # each call pays the extra Python frame (_calibrate)
            if getattr(local, "depth", 0) or not trace._running or is_compiling():
                return original(*args, **kwargs)
            target: Target = cell[1]
            site = trace.site(sys._getframe(1))
            local.depth = 1
            t1 = t2 = 0
            try:
                trace._guard(trace._before, target, args, kwargs, site)
                # the kernel's own torch calls are not followed: the mode steps off the stack
                # for them when it is on top (else it passes them through)
                lifted = stack_len() > 0 and top_mode() is trace._mode
                if lifted:
                    pop_mode()
                t1 = clock()
                try:
                    out = original(*args, **kwargs)
                finally:
                    t2 = clock()
                    if lifted:
                        push_mode(trace._mode)
                trace._guard(trace._after, target, args, kwargs, out, site)
                return out
            finally:
                local.depth = 0
                trace.overhead_ns += (t1 - t0) + (clock() - t2) if t1 else clock() - t0

        setattr(traced, _TRACED, True)
        self._wrappers[id(traced)] = (traced, original)
        return traced

    def _guard(self, step: Callable[..., None], *args: Any) -> None:
        """The trace's own work never breaks the traced call: a failure becomes a note. It runs
        with torch functions undispatched: its own ``t.dim()`` is not the engine's plumbing."""
        try:
            with self._quiet():
                step(*args)
        except Exception as err:  # a guest: whatever the trace trips over, the call goes on
            note = f"trace error in {step.__name__} at {args[-1]}: {type(err).__name__}: {err}"
            if note not in self.report.notes:
                self.report.notes.append(note)

    def _arguments(self, target: Target, args: tuple[Any, ...], kwargs: dict[str, Any], *,
                   defaults: bool) -> dict[str, Any]:
        sig = target.signature
        if sig is None:
            return dict(kwargs)
        try:
            bound = sig.bind_partial(*args, **kwargs)
        except TypeError:
            return dict(kwargs)
        if defaults:
            bound.apply_defaults()
        return dict(bound.arguments)

    # --- producers ----------------------------------------------------------------------------
    def _after(self, target: Target, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any,
               site: Location) -> None:
        if not target.producers:
            return
        values = self._arguments(target, args, kwargs, defaults=True)
        lse_records = _lse_producers(target, values)
        if not lse_records:
            return
        self.report.producer_calls[target.path] += 1
        base = self._produced_base(lse_records, values, site)
        specs = {(r.lse.layout, r.lse.q_len_axis) for r, _ in lse_records
                 if isinstance(r.lse, LseSpec)}
        origin = Origin(tuple(r.name for r, _ in lse_records), target.path, site, base)
        index = lse_records[0][1].result_index
        for t in self._lse_tensors(values, out, index):
            layout, q_len = next(iter(specs)) if len(specs) == 1 else ("?", False)
            axes = axes_for(layout, q_len, t.dim())
            self.tags.produced(t, Tag((base,) if base else (), axes, (origin,)))
            self.report.tagged += 1

    def _produced_base(self, lse_records: list[tuple[CapabilityRecord, ProducerCall]],
                       values: Mapping[str, Any], site: Location) -> str | None:
        """The base the call's records agree it returns (None: they disagree, or one leaves it
        to dispatch, which is an ``AC028`` at ``site``)."""
        literals = {k: v for k, v in values.items() if isinstance(v, _LITERALS)}
        bases: set[str | None] = set()
        for record, _ in lse_records:
            base, dispatch = self._call_base(record, literals)
            for f in dispatch:  # AC028: the call leaves its base to dispatch
                self._add(replace(f.escalated(None), location=site,
                                  message=f"{f.message} (traced call at {site})"), (site,))
            bases.add(base)
        return bases.pop() if len(bases) == 1 else None

    def _call_base(self, record: CapabilityRecord, literals: dict[str, Any],
                   ) -> tuple[str | None, list[Finding]]:
        """The base a call's literal arguments choose (:func:`resolve_call_base`, memoised by
        the record and the literals; None: left to dispatch)."""
        key = (record.name, tuple(sorted((k, repr(v)) for k, v in literals.items())))
        hit = self._bases.get(key)
        if hit is None:
            resolved, dispatch = resolve_call_base(record, literals)
            hit = self._bases[key] = (None if dispatch else resolved.lse_base, dispatch)
        return hit

    @staticmethod
    def _lse_tensors(values: Mapping[str, Any], out: Any, index: int | None) -> list[Any]:
        import torch

        found = [values[k] for k in _LSE_BUFFERS if isinstance(values.get(k), torch.Tensor)]
        if index is not None and isinstance(out, (tuple, list)) and len(out) > index and \
                isinstance(out[index], torch.Tensor):
            found.append(out[index])
        unique = list({id(t): t for t in found}.values())
        return [t for t in unique if t.is_floating_point()]

    # --- consumers ----------------------------------------------------------------------------
    def _before(self, target: Target, args: tuple[Any, ...], kwargs: dict[str, Any],
                site: Location) -> None:
        if not target.consumers:
            return
        self.report.consumer_calls[target.path] += 1
        given = self._arguments(target, args, kwargs, defaults=False)
        offset = 1 if isinstance(target.owner, type) and not isinstance(target.raw, staticmethod) \
            else 0
        for record, call in target.consumers:
            self._check_consumer(record, call, given, args[offset:], site)

    def _check_consumer(self, record: ConsumerRecord, call: ConsumerCall,
                        given: Mapping[str, Any], positional: tuple[Any, ...],
                        site: Location) -> None:
        import torch

        keyword: str | None = None
        if isinstance(record.base, KeywordBase) and record.base.keyword in given:
            keyword = _literal(given[record.base.keyword])
            if keyword is None:  # an object, not a literal: what it selects is not read here
                self.report.unread[
                    f"{record.name} at {site}: {record.base.keyword} is not a literal "
                    f"({type(given[record.base.keyword]).__name__})"] += 1
                return
        seen: set[int] = set()
        for arg in call.lse_args:
            value = (positional[int(arg)] if int(arg) < len(positional) else None) \
                if arg.isdigit() else given.get(arg)
            if not isinstance(value, torch.Tensor) or id(value) in seen:
                continue
            seen.add(id(value))
            name = arg if not arg.isdigit() else f"argument {arg}"
            tag = self.tags.get(value)
            if tag is None:  # an unknown producer, or a change the trace did not follow
                self.report.untagged[f"{record.name}:{name} at {site}"] += 1
                continue
            self._compare(tag, record, keyword, value, name, site)

    def _compare(self, tag: Tag, consumer: ConsumerRecord, keyword: str | None, value: Any,
                 arg: str, site: Location) -> None:
        producer = self._producer_record(tag)
        if producer is None or not isinstance(producer.lse, LseSpec):
            return
        layout = tag.layout()
        dtype = str(value.dtype).removeprefix("torch.")
        for base in tag.bases or (None,):
            for f in self._edge(producer, consumer, keyword, base, layout, dtype):
                # the rule's default, not check_edge's escalation from the records: the trace
                # saw this call happen, so base and layout are errors and the dtype (which the
                # consumer may cast) a warning
                self._add(replace(
                    f.escalated(None), location=site,
                    message=f"{f.message}; traced: {consumer.name} called at {site} ({arg}) "
                            f"with the LSE from {self._from(tag)}"),
                    (site, arg, tuple(o.site for o in tag.origins)),
                    Mismatch.of(f.code, site, consumer.name, arg, tag))
        states = tag.states_axis()
        want = {"first": 0, "second": 1}.get(consumer.lse.states)
        if states is not None and want is not None and states != want:
            self._add(Finding(
                Code.AC017, f"{producer.name} -> {consumer.name}",
                f"{consumer.name} reads the states axis {consumer.lse.states} "
                f"({'[N, T, H]' if want == 0 else '[T, N, H]'}), but the LSE it is given at "
                f"{site} ({arg}) has it at axis {states} (from {self._from(tag)})",
                hint="stack the partial LSEs along the axis the consumer reads",
                field="lse.states", found=states, allowed=str(want), location=site),
                (site, arg, "states"), Mismatch.of(Code.AC017, site, consumer.name, arg, tag))

    def _edge(self, producer: CapabilityRecord, consumer: ConsumerRecord, keyword: str | None,
              base: str | None, layout: str | None, dtype: str) -> list[Finding]:
        """:func:`check_edge` on the producer's record re-read with what the tag says (the
        rules the trace judges: base, layout, dtype), once per distinct question."""
        key = (producer.name, consumer.name, keyword, base, layout, dtype)
        found = self._edges.get(key)
        if found is not None:
            return found
        spec = producer.lse
        if not isinstance(spec, LseSpec):
            return []
        spec = spec.model_copy(update={
            "base": base or spec.base, "layout": layout or consumer.lse.layouts[0],
            "q_len_axis": False, "dtype": dtype if dtype in _FLOAT_DTYPES else spec.dtype})
        found = [f for f in check_edge(producer.model_copy(update={"lse": spec}), consumer,
                                       keyword_value=keyword)
                 if f.code in _KEEP_CODES and f.severity is not Severity.NOTE
                 and not (f.code is Code.AC016 and base is None)
                 and not (f.code is Code.AC017 and layout is None)]
        self._edges[key] = found
        return found

    def _producer_record(self, tag: Tag) -> CapabilityRecord | None:
        for origin in tag.origins:
            for name in origin.records:
                if name not in self._producers:
                    self._producers[name] = self.registry.get(name) \
                        if name in self.registry else None
                found = self._producers[name]
                if found is not None:
                    return found
        return None

    @staticmethod
    def _from(tag: Tag) -> str:
        text = "; ".join(o.describe() for o in tag.origins)
        if tag.conversions:
            text += ", converted at " + ", ".join(tag.conversions)
        return text

    def _add(self, finding: Finding, key: tuple[object, ...],
             mismatch: Mismatch | None = None) -> None:
        """One finding per rule and place (two records of one consumer say it once; a call site
        run once per layer is counted, not repeated)."""
        k = (str(finding.code), *key)
        old = self._seen.get(k)
        self._seen[k] = (old[0], old[1] + 1, old[2]) if old else (finding, 1, mismatch)


class _Off:
    """What a mode left behind follows once its trace has stopped: nothing."""

    tags: Any = None
    torch_calls = python_calls = followed = overhead_ns = 0

    @staticmethod
    def following() -> bool:
        return False

    @staticmethod
    def trouble(where: str, err: Exception) -> None:
        return None


_OFF = _Off()


def _calibrate(calls: int = 200, rounds: int = 5) -> tuple[float, float, float]:
    """ns per call that torch and Python add to a torch call when a Python mode is on the stack
    (a builtin, ``x.view_as``; a Python function such as ``torch.nn.functional.relu``, whose
    override check and dispatch run in Python), and to a call through a Python ``*args,
    **kwargs`` wrapper; neither can be timed from inside
    the handler or the wrapper, so the report counts calls and multiplies. The fastest of
    ``rounds`` batches of each (on a shared machine the batch disturbed least)."""
    import torch
    from torch.overrides import TorchFunctionMode

    class Bare(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            return func(*args, **(kwargs or {}))

    x = torch.zeros(2)
    op = x.view_as
    python_op = torch.nn.functional.relu  # a Python function: torch's Python override path

    def plain(*args: Any, **kwargs: Any) -> Any:
        return None

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return plain(*args, **kwargs)

    def best(fn: Callable[[], object]) -> float:
        fast = float("inf")
        for _ in range(rounds):
            t0 = time.perf_counter_ns()
            for _ in range(calls):
                fn()
            fast = min(fast, (time.perf_counter_ns() - t0) / calls)
        return fast

    off = best(lambda: op(x))
    py_off = best(lambda: python_op(x))
    with Bare():
        on = best(lambda: op(x))
        py_on = best(lambda: python_op(x))
    wrapped = best(lambda: wrapper(x, k=1)) - best(lambda: plain(x, k=1))
    return max(0.0, on - off), max(0.0, py_on - py_off), max(0.0, wrapped)


def _remove_mode(pushed: object) -> bool:
    """Take ``pushed`` off this thread's torch-function mode stack wherever it sits (the modes
    pushed after it stay, in their order); False when it is not there."""
    import torch.overrides

    ov: Any = torch.overrides  # its stack helpers are private and untyped
    if pushed not in ov._get_current_function_mode_stack():
        return False
    above = []
    while (top := ov._pop_mode()) is not pushed:
        above.append(top)
    for m in reversed(above):
        ov._push_mode(m)
    return True


_key = functools.lru_cache(maxsize=1024)(literal_key)


def _when_holds(call: ProducerCall, values: Mapping[str, Any]) -> bool:
    """Every ``when`` keyword has the literal the record asks for (omitted: its default). The
    call's value is a Python value, whose ``repr`` is already the one spelling ``literal_key``
    gives a literal."""
    for keyword, literal in call.when:
        if keyword not in values:
            return False
        text = _literal(values[keyword])
        if text is None or text != _key(literal):
            return False
    return True


def trace(registry: Registry | None = None, *, on_error: Literal["raise", "report"] = "raise",
          partials: bool = True) -> Trace:
    """A :class:`Trace` of the records in ``registry`` (default: the built-in catalog), to use as
    ``with attn_contracts.trace() as t: ...``; ``t.report`` holds what it saw."""
    return Trace(registry, on_error=on_error, partials=partials)


def _lse_producers(target: Target, values: Mapping[str, Any],
                   ) -> list[tuple[CapabilityRecord, ProducerCall]]:
    """The producer records of ``target`` whose call conditions the arguments meet (the most
    specific ones: a ``when`` that another's extends gives way) and that return an LSE."""
    matches = [(r, c) for r, c in target.producers if _when_holds(c, values)]
    matches = [(r, c) for r, c in matches
               if not any(set(c.when) < set(o.when) for _, o in matches)]
    return [(r, c) for r, c in matches if isinstance(r.lse, LseSpec)]
