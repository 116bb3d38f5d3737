"""Every clock the benchmarks read, in one place: per launch under CUDA-graph replay, the median of
``triton.testing.do_bench``, one call after a chosen L2 flush, host time per eager call, wall and
CPU seconds of a repeated run; the copy bandwidth that is the 100 % of every table; and what a
result file records about where it was measured.

Imported by path (``sys.path`` gets this folder first), so the benchmarks also run with
``PYTHONSAFEPATH=1``, which keeps a script's own folder off ``sys.path``. torch is imported by the
timers that need it, not here: the lint benchmark times a torch-free tool.

A dry run (:func:`dry_run`, the ``--dry-run`` of ``combine.py`` and ``goals.py``) makes every timer
call what it is given once and report that call's wall time, and the copy bandwidth NaN: the
benchmarks' code then runs end to end on a CPU (the Triton interpreter), and its numbers are no
measurement.
"""

from __future__ import annotations

import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from typing import TypeVar

__all__ = ["L2_BYTES", "after_flush_us", "best_of_rounds", "copies_for_cold_l2", "copy_bandwidth",
           "copy_calls", "do_bench_us", "dry_run", "environment", "graph_per_launch",
           "host_medians", "is_dry_run", "now_ns", "now_s", "wall_and_cpu_s", "wall_us", "write_results"]

L2_BYTES = 60 * 1024 * 1024  # H100/H200 L2 (50 MB on H100 PCIe; 60 MB bounds both)
R = TypeVar("R")
_DRY = False


def dry_run(on: bool = True) -> None:
    """Every timer calls its callables once and reports their wall time (see the docstring)."""
    global _DRY
    _DRY = on


def is_dry_run() -> bool:
    return _DRY


def _once_us(fns: Sequence[Callable[[], object]]) -> float:
    """A dry run's stand-in for a timing: each callable once, µs per call."""
    start = time.perf_counter()
    for fn in fns:
        fn()
    return (time.perf_counter() - start) * 1e6 / max(1, len(fns))


def copies_for_cold_l2(bytes_per_set: int, tokens: int | None = None) -> int:
    """Input sets to rotate through so a launch never finds the previous one's data in L2; one
    for a one-token shape (``tokens`` 1: launch-bound, its bytes fit in L2 anyway) or a dry run."""
    if tokens == 1 or _DRY:
        return 1
    return max(1, min(64, -(-3 * L2_BYTES // bytes_per_set)))


def graph_per_launch(fns: list[Callable[[], object]] | Callable[[], object], launches: int = 100,
                     replays: int = 20, *, warmup: int = 1,
                     before_replay: Callable[[], object] | None = None) -> float:
    """Microseconds per launch of ``launches`` calls captured in one CUDA graph (median over
    ``replays``). Given several callables (each on its own buffers), the calls rotate through
    them so data that the previous launch left in L2 is not read again (L2-cold, like
    ``do_bench``'s flush). ``before_replay`` runs before each timed replay (a barrier, so all
    ranks replay together)."""
    import torch

    fns = fns if isinstance(fns, list) else [fns]
    if _DRY:
        return _once_us(fns)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):  # warm-up off the capture stream: compiles, allocator, NCCL
        for _ in range(warmup):
            for fn in fns:
                fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(launches):
            fns[i % len(fns)]()
    g.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(replays):
        if before_replay is not None:
            before_replay()
        start.record()
        g.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / launches)
    return float(statistics.median(times))


def best_of_rounds(fns: Mapping[str, list[Callable[[], object]]], rounds: int = 2,
                   **graph: Any) -> dict[str, float]:
    """µs per launch of each entry (:func:`graph_per_launch` of its callables, ``graph`` its
    options), timed ``rounds`` times interleaved with the others; the best median of each."""
    best: dict[str, float] = {}
    for _ in range(rounds):
        for name, calls in fns.items():
            us = graph_per_launch(calls, **graph)
            best[name] = min(best.get(name, float("inf")), us)
    return best


def do_bench_us(fn: Callable[[], object]) -> float:
    """The median µs of ``triton.testing.do_bench`` (which flushes L2 before each call)."""
    if _DRY:
        return _once_us([fn])
    import triton

    return float(triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")) * 1e3


def after_flush_us(fn: Callable[[], object], flush: Callable[[], object], reps: int = 200) -> float:
    """``do_bench``'s loop (flush, event, call, event; median µs) with a chosen flush."""
    if _DRY:
        flush()
        return _once_us([fn])
    import torch

    fn()
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(reps)]
    for start, end in events:
        flush()
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return float(sorted(s.elapsed_time(e) for s, e in events)[reps // 2]) * 1e3


def wall_us(fn: Callable[[], object], repeats: int = 5,
            before: Callable[[], object] | None = None) -> float:
    """Median wall-clock µs of one call (CPU backends, where there is no graph to replay)."""
    times = []
    for _ in range(1 if _DRY else repeats):
        if before is not None:
            before()
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e6)
    return float(statistics.median(times))


def host_medians(fns: Mapping[str, Callable[[], object]], calls: int = 2000, *,
                 warmup: int = 50, sync_every: int = 50) -> dict[str, float]:
    """Median host µs of one call of each, the calls interleaved (``calls`` rounds of one call
    of each) after ``warmup`` rounds. On a GPU, every ``sync_every`` rounds the device is caught
    up outside the timing, so no call waits for a full launch queue."""
    import torch

    cuda = torch.cuda.is_available()
    if _DRY:
        calls, warmup = 1, 0
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    if cuda:
        torch.cuda.synchronize()
    times: dict[str, list[int]] = {name: [] for name in fns}
    clock = time.perf_counter_ns
    items = list(fns.items())
    for i in range(calls):
        if cuda and i % sync_every == 0:
            torch.cuda.synchronize()
        for name, fn in items:
            t0 = clock()
            fn()
            times[name].append(clock() - t0)
    if cuda:
        torch.cuda.synchronize()
    return {name: statistics.median(ts) / 1e3 for name, ts in times.items()}


def now_s() -> float:
    """The wall clock every benchmark reads (seconds; only differences mean anything)."""
    return time.perf_counter()


def now_ns() -> int:
    """:func:`now_s` in integer nanoseconds, for loops of sub-microsecond calls."""
    return time.perf_counter_ns()


def wall_and_cpu_s(fn: Callable[[], R], repeats: int) -> tuple[list[float], list[float], R]:
    """Wall seconds and CPU seconds (this process and its finished children, e.g. worker
    processes) of each of ``repeats`` runs of ``fn``, and the last run's result."""
    walls, cpus = [], []
    result: R
    for _ in range(max(1, repeats)):
        cpu0, wall0 = _cpu_s(), time.perf_counter()
        result = fn()
        walls.append(time.perf_counter() - wall0)
        cpus.append(_cpu_s() - cpu0)
    return walls, cpus, result


def _cpu_s() -> float:
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def copy_bandwidth() -> float:
    """GB/s (read + write) of a 1 GiB device-to-device copy: the 100 % of every table (NaN in a
    dry run: nothing was measured)."""
    if _DRY:
        return math.nan
    import torch
    import triton

    x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    ms = triton.testing.do_bench(lambda: y.copy_(x), return_mode="median")
    return float(2 * x.numel() / (ms * 1e-3) / 1e9)


def copy_calls(nbytes: int, copies: int, device: Any) -> list[Callable[[], object]]:
    """Device copies moving ``nbytes`` (half read, half written), rotating over ``copies``
    buffer pairs like the kernels' input sets: what a kernel that streams its bytes once could
    reach at this size, under the same timer."""
    import functools

    import torch

    calls: list[Callable[[], object]] = []
    for _ in range(copies):
        src = torch.empty(nbytes // 2, dtype=torch.uint8, device=device)
        dst = torch.empty_like(src)
        calls.append(functools.partial(dst.copy_, src))
    return calls


def environment(command: str | None = None) -> dict[str, Any]:
    """What a result file records about where it was measured."""
    import torch

    meta: dict[str, Any] = {"torch": torch.__version__, "python": platform.python_version(),
                            "command": command or "python " + " ".join(sys.argv)}
    try:
        import triton

        meta["triton"] = triton.__version__
    except ImportError:
        meta["triton"] = None
    meta["device"] = torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU"
    if _DRY:
        meta["dry_run"] = True
    return meta


def write_results(out_dir: Path, name: str, markdown: str, payload: dict[str, Any]) -> None:
    """``<out_dir>/<name>.md`` and ``<name>.json``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{name}.md").write_text(markdown)
    (out_dir / f"{name}.json").write_text(json.dumps(payload, indent=1, default=str))
