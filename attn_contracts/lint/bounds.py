"""The bounds of the lint's abstract interpreter (issue 37, item 5): every input ends in a
number of steps that grows with its size, never exponentially, and a bound hit is said.

- **Values** are bounded in size (:data:`MAX_SIZE` nodes: tuple items, union options, dict
  values, the arguments a partial or a constructor keeps). Past it a value is *widened*: unknown,
  holding every LSE it may hold (:func:`~attn_contracts.lint.values.widen_to`), so a bound never
  hides a producer; a base it held is no longer read, as any expression the linter cannot read.
- **Loops** reach a fixpoint: the body is interpreted from the join of the values before the loop
  and after each pass until nothing changes (a body that changes nothing runs once); past
  :data:`LOOP_WIDEN_AFTER` passes the names still changing are widened, and a loop whose entry
  values were seen already in this function is not interpreted again (nested loops are linear).
- **Call cycles** are summarised to a fixpoint: a call of a function already being interpreted
  (with the same arguments) gets the summary found so far for it; the cycle's head is
  interpreted again until that summary no longer changes (:data:`CYCLE_PASSES`, then widened),
  and what the cycle's members returned meanwhile is kept for the pass, not recomputed per call.
  The call strings are bounded by the contexts kept per function and the depth of calls.
- **Budgets**: per function (:data:`FUNCTION_BUDGET` of its own steps) and per run (the
  interpreter's ``budget``). Where one is hit, or a value is widened, an ``AC033`` note names the
  function, once: never silence.

The interpreter calls in here at a few places (an assignment, a return, a loop, a function's
analysis); the semantics stay in the interpreter (:mod:`attn_contracts.lint.scope`,
:mod:`attn_contracts.lint.frame`, :mod:`attn_contracts.lint.interpret`).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from typing import Any

from attn_contracts.findings import Location
from attn_contracts.lint.inferred import BoundReached
from attn_contracts.lint.values import Union_
from attn_contracts.lint.values import Value
from attn_contracts.lint.values import children
from attn_contracts.lint.values import lse_sources_of
from attn_contracts.lint.values import widen_to

# The interpreter and its frames, which call in here (this module never imports them: the
# interpreter depends on its bounds, not the other way round).
Interpreter = Any
_Frame = Any

__all__ = ["CYCLE_PASSES", "FUNCTION_BUDGET", "LOOP_PASSES", "LOOP_WIDEN_AFTER", "MAX_SIZE",
           "Bounds", "bounded", "size"]

#: the most nodes a value keeps (a tuple of tuples, a union of tuples...) before it is widened;
#: the largest of vLLM 0.34.0's hold about 300 (a metadata constructor's 20 arguments)
MAX_SIZE = 1000
#: loop passes before the names still changing are widened, and the most passes in all
LOOP_WIDEN_AFTER = 3
LOOP_PASSES = 8
#: passes over a call cycle's head before its summary is widened, and the most in all
CYCLE_PASSES = 4
#: steps (statements and expressions) one function's own interpretation may take
FUNCTION_BUDGET = 200_000


def size(value: Value, limit: int = MAX_SIZE) -> int:
    """The nodes of ``value`` (each shared part counted where it is held), counted up to just
    past ``limit``: the cost of reading it is bounded by the limit, not by the value."""
    n = 0
    stack = [value]
    while stack and n <= limit:
        v = stack.pop()
        n += 1
        if v is not None:
            stack.extend(children(v))
    return n


def bounded(value: Value) -> tuple[Value, bool]:
    """``value``, or (past :data:`MAX_SIZE`) it widened; and whether it was."""
    if value is None or size(value) <= MAX_SIZE:
        return value, False
    return widen_to(lse_sources_of([value])), True


def _widen_env(before: dict[str, Value], after: dict[str, Value]) -> dict[str, Value]:
    """Every name whose value changed from ``before`` widened (its LSEs kept)."""
    out = dict(after)
    for name, value in after.items():
        old = before.get(name)
        if value is not old and value != old:
            out[name] = widen_to(lse_sources_of([value, old]))
    return out


def _env_key(env: dict[str, Value]) -> tuple[tuple[str, Value], ...]:
    return tuple(sorted(env.items(), key=lambda kv: kv[0]))


@dataclass
class _LoopMemo:
    """A loop's pass already interpreted from these entry values: what it left."""

    env: dict[str, Value]
    returns: list[Value]
    kernels: set[object]
    produced: set[object]
    breaks: list[dict[str, Value]]  # the paths that left the loop by ``break`` in the pass


@dataclass
class Bounds:
    """The bounds' state for one interpreter run: the notes said, the loops and cycles."""

    interp: Interpreter
    #: (function, kind) already noted: one note per function and kind of bound
    noted: set[tuple[str, str]] = field(default_factory=set)
    #: the summary found so far of each analysis a cycle reached again (its key)
    approx: dict[tuple[object, ...], object] = field(default_factory=dict)
    #: analyses whose approximation was read while they ran (they head a cycle)
    read_approx: set[tuple[object, ...]] = field(default_factory=set)
    #: summaries of cycle members found under the current approximations (per pass), with
    #: the stack position of the running analysis they depend on
    provisional: dict[tuple[object, ...], tuple[object, int]] = field(default_factory=dict)
    #: how many times an approximation changed (a head runs again when one did in its pass)
    changes: int = 0

    # --- notes ---------------------------------------------------------------------------------
    def note(self, frame: _Frame | None, kind: str, detail: str, node: ast.AST | None = None,
             callee: tuple[str, str, ast.AST | None] | None = None) -> None:
        """An ``AC033`` note, once per function and kind: the analysis of ``frame``'s function
        (default: the innermost one running; none running: ``callee``, its path, qualified name
        and node) stopped short of the whole (``detail`` says how)."""
        if frame is None:
            frames = self.interp.frames
            frame = frames[-1] if frames else None
        if frame is None and callee is not None:
            path, func, node = callee[0], callee[1], node or callee[2]
        else:
            func = frame.func.qualname if frame is not None and frame.func is not None else \
                "<module>"
            path = frame.path if frame is not None else ""
        # the run's budget is spent once: one note, where it ran out
        key = ("", kind) if kind == "run budget" else (f"{path}:{func}", kind)
        if key in self.noted:
            return
        self.noted.add(key)
        at = node if node is not None else (frame.node if frame is not None else None)
        line = getattr(at, "lineno", 1)
        col = getattr(at, "col_offset", 0) + 1
        name = func.rpartition(".<locals>.")[2].partition("@")[0]
        self.interp.report(BoundReached(name, kind, detail, Location(path, line, col)))

    def value(self, frame: _Frame, value: Value, node: ast.AST | None = None) -> Value:
        """``value`` bounded in size (widened past :data:`MAX_SIZE`, with a note)."""
        out, widened = bounded(value)
        if widened:
            self.note(frame, "value size", f"a value of more than {MAX_SIZE} parts is widened "
                      "to unknown", node)
        return out

    # --- loops ---------------------------------------------------------------------------------
    def loop(self, frame: _Frame, body: list[ast.stmt], node: ast.stmt) -> None:
        """The body interpreted to a fixpoint (see the module's docstring)."""
        before = dict(frame.env)
        memo: dict[tuple[object, ...], _LoopMemo] = frame.loop_memo
        current = before
        for n in range(LOOP_PASSES):
            try:
                key: tuple[object, ...] | None = (id(node), _env_key(current))
                hit = memo.get(key)  # type: ignore[arg-type]
            except TypeError:  # an unhashable value (never expected): no memo
                key, hit = None, None
            breaks = frame.breaks[-1] if frame.breaks else []
            if hit is not None:
                frame.returns += hit.returns
                frame.kernels |= hit.kernels
                frame.produced |= hit.produced
                breaks += hit.breaks
                after = dict(hit.env)
            else:
                frame.env = dict(current)
                returns, kernels, produced = len(frame.returns), set(frame.kernels), \
                    set(frame.produced)
                broke = len(breaks)
                frame.continues.append([])
                frame.block(body)
                # the pass's end: the paths that ran to the body's end (a pass that returned
                # or broke on every path: none) and those that continued
                ends = ([] if frame.ended else [dict(frame.env)]) + frame.continues.pop()
                frame.ended = False  # a pass that returned: the next one (or none) may not
                after = frame.join_envs(ends, before) if ends else dict(current)
                if key is not None:
                    memo[key] = _LoopMemo(after, frame.returns[returns:],
                                          set(frame.kernels) - kernels,
                                          set(frame.produced) - produced, breaks[broke:])
            joined = frame.join_envs([current, after], before)
            if n + 1 >= LOOP_WIDEN_AFTER:
                joined = _widen_env(current, joined)
            if _same_env(joined, current):
                frame.env = joined
                return
            current = joined
        frame.env = current
        self.note(frame, "loop passes", f"the loop at line {getattr(node, 'lineno', '?')} "
                  f"still changed values after {LOOP_PASSES} passes", node)

    # --- call cycles ---------------------------------------------------------------------------
    def recursive(self, key: tuple[object, ...], empty: Callable[[], object]) -> object:
        """A call of an analysis already running: the summary found so far (at first, none)."""
        self.read_approx.add(key)
        return self.approx.setdefault(key, empty())

    def settle(self, key: tuple[object, ...], summary: object,
               merge: Callable[[object, object], object], passes: int, head: bool,
               changes: int) -> tuple[object, bool]:
        """After one pass over ``key``: the summary to keep, and whether to interpret it again.

        A member of a cycle whose head is further up (``head`` false) only records what it
        found; the head (nothing it depends on is still running) runs again while any
        approximation read in its pass changed (``changes``: their count when the pass began),
        widening its summary from :data:`CYCLE_PASSES` passes on."""
        changed = False
        if key in self.read_approx:
            old = self.approx[key]
            summary = merge(old, summary)
            if passes + 1 >= CYCLE_PASSES:
                summary = _widen_summary(summary)
            if summary != old:
                self.approx[key] = summary
                self.changes += 1
                changed = True
        if not head:
            return summary, False
        if changed or self.changes > changes:
            if passes + 1 <= CYCLE_PASSES:
                return summary, True
            self.note(None, "call cycle", f"a call cycle through it still changed after "
                      f"{CYCLE_PASSES + 1} passes")
        self.read_approx.discard(key)
        self.approx.pop(key, None)
        return summary, False

    def forget_since(self, mark: int) -> None:
        """Drop the cycle members' summaries found since ``mark`` (under an approximation that
        has changed)."""
        for key in list(self.provisional)[mark:]:
            del self.provisional[key]

    def complete_since(self, mark: int) -> dict[tuple[object, ...], object]:
        """The cycle members' summaries found since ``mark``, now final (their head settled)."""
        keys = list(self.provisional)[mark:]
        out = {k: self.provisional.pop(k)[0] for k in keys}
        for k in keys:
            self.read_approx.discard(k)
            self.approx.pop(k, None)
        return out


def _same_env(a: dict[str, Value], b: dict[str, Value]) -> bool:
    if a.keys() != b.keys():
        return False
    return all(a[k] is b[k] or a[k] == b[k] for k in a)


def _widen_summary(summary: object) -> object:
    """The summary with its returned value widened where it is a union still growing."""
    returns = getattr(summary, "returns", None)
    if isinstance(returns, Union_) and not returns.widened:
        return replace(summary, returns=widen_to(lse_sources_of([returns])))  # type: ignore
    return summary
