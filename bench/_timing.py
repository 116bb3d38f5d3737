"""Timers and result writing shared by the benchmarks (``combine.py``, ``dcp_nccl.py``).

Imported by path (``sys.path`` gets this folder first), so the benchmarks also run with
``PYTHONSAFEPATH=1``, which keeps a script's own folder off ``sys.path``.
"""

from __future__ import annotations

import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

L2_BYTES = 60 * 1024 * 1024  # H100/H200 L2 (50 MB on H100 PCIe; 60 MB bounds both)


def copies_for_cold_l2(bytes_per_set: int) -> int:
    """Input sets to rotate through so a launch never finds the previous one's data in L2."""
    return max(1, min(64, -(-3 * L2_BYTES // bytes_per_set)))


def graph_per_launch(fns: list[Callable[[], object]] | Callable[[], object], launches: int = 100,
                     replays: int = 20, *, warmup: int = 1,
                     before_replay: Callable[[], object] | None = None) -> float:
    """Microseconds per launch of ``launches`` calls captured in one CUDA graph (median over
    ``replays``). Given several callables (each on its own buffers), the calls rotate through
    them so data that the previous launch left in L2 is not read again (L2-cold, like
    ``do_bench``'s flush). ``before_replay`` runs before each timed replay (a barrier, so all
    ranks replay together)."""
    fns = fns if isinstance(fns, list) else [fns]
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


def wall_us(fn: Callable[[], object], repeats: int = 5,
            before: Callable[[], object] | None = None) -> float:
    """Median wall-clock µs of one call (CPU backends, where there is no graph to replay)."""
    times = []
    for _ in range(repeats):
        if before is not None:
            before()
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1e6)
    return float(statistics.median(times))


def host_us_per_call(fn: Callable[[], object], calls: int = 2000) -> float:
    """Host time of one eager call (launch overhead), the GPU kept ahead of the CPU."""
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    elapsed = time.perf_counter() - start
    torch.cuda.synchronize()
    return elapsed / calls * 1e6


def copy_bandwidth() -> float:
    """GB/s (read + write) of a 1 GiB device-to-device copy: the 100 % of every table."""
    import triton

    x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    ms = triton.testing.do_bench(lambda: y.copy_(x), return_mode="median")
    return float(2 * x.numel() / (ms * 1e-3) / 1e9)


def environment(command: str | None = None) -> dict[str, Any]:
    """What a result file records about where it was measured."""
    meta: dict[str, Any] = {"torch": torch.__version__, "python": platform.python_version(),
                            "command": command or "python " + " ".join(sys.argv)}
    try:
        import triton

        meta["triton"] = triton.__version__
    except ImportError:
        meta["triton"] = None
    meta["device"] = torch.cuda.get_device_name() if torch.cuda.is_available() else "CPU"
    return meta


def write_results(out_dir: Path, name: str, markdown: str, payload: dict[str, Any]) -> None:
    """``<out_dir>/<name>.md`` and ``<name>.json``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"{name}.md").write_text(markdown)
    (out_dir / f"{name}.json").write_text(json.dumps(payload, indent=1, default=str))


def bench_record(d: int, base: str, name: str) -> Any:
    """The record a benchmark plans with: FlashInfer's base and layout (``[T, H]`` fp32) but empty
    rows defined as −inf, so the plain rows time the unmasked kernel. FlashInfer's own records
    declare their empty rows undefined, and their plans demand a row mask: the "masked" rows."""
    from attn_contracts import CapabilityRecord

    return CapabilityRecord.model_validate({
        "name": f"bench.{name}.base{base}", "library": "bench", "source": f"bench/{name}.py",
        "evidence": "measured",
        # the benchmarks write every partial: an empty row's output is 0, never garbage
        "lse": {"returns": "lse", "base": base, "layout": "token_head", "dtype": "float32",
                "empty_row": "-inf", "empty_out": "zero", "includes_sink": False},
        "decode": {"attention": "mla" if d == 512 else "mha", "out_layout": "token_head_dim",
                   "head_dims": [d], "q_dtypes": ["bfloat16", "float16", "float32"],
                   "q_len_gt_1": False}})
