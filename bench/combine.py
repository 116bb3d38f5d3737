"""Combine benchmark (CUDA): time, bytes moved and fraction of the measured copy bandwidth.

    python bench/combine.py --out bench/results            # the table, JSON and PNG
    python bench/combine.py --sweep merge                  # tile sweep for the default heuristic

Implementations: this project's ``merge`` and ``rescale`` (through a plan, as serving code calls
them), the torch reference in fp32 (eager and ``torch.compile``d), and FlashInfer ``merge_states``
(base 2; it cannot launch 128 heads at head dim 512). Bandwidth-bound shapes are timed with the
median of ``triton.testing.do_bench`` (which flushes L2 between runs); one-token shapes are
launch-bound and timed per launch under CUDA-graph replay, as engines run decode. At one token
the plans use PDL (programmatic dependent launch; consecutive launches overlap only their launch
latency), so those shapes also get a "PDL off" row. "torch copy of the same bytes" is a plain
device copy moving as many bytes: under ``do_bench`` the L2 flush leaves L2 full of dirty lines
whose write-back competes with the measured kernel, which caps any kernel of 50-300 MB well below
the 1 GiB copy bandwidth.

Bytes moved by a merge (the floor of any implementation)::

    N·T·H·D·s_o + N·T·H·4 (read partials and LSE) + T·H·D·s_o + T·H·4 (write output and LSE)
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import inspect
import json
import math
import os
import platform
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import triton
import triton.language as tl
from rich.console import Console
from rich.table import Table

from attn_contracts.combine import KernelConfig, merge_reference, plan_combine, rescale_reference
from attn_contracts.combine.ops import default_config

SHAPES = [(4, 1, 128, 512), (8, 1, 16, 512), (4, 32, 128, 512), (8, 256, 128, 512),
          (4, 512, 32, 128), (8, 2048, 32, 128), (3, 100, 40, 128)]


@dataclass
class Row:
    shape: tuple[int, int, int, int]
    base: str
    impl: str
    bytes: int
    graph_us: float  # per launch in a CUDA graph (L2-cold rotation for T > 1)
    do_bench_us: float | None  # median of triton.testing.do_bench (T > 1 only)

    def gbps(self, us: float | None) -> float | None:
        return None if us is None else self.bytes / (us * 1e-6) / 1e9


def merge_bytes(n: int, t: int, h: int, d: int, s: int) -> int:
    return n * t * h * d * s + n * t * h * 4 + t * h * d * s + t * h * 4


def rescale_bytes(n: int, t: int, h: int, d: int, s: int) -> int:
    return 2 * t * h * d * s + n * t * h * 4 + t * h * 4


def copy_bandwidth() -> float:
    x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    ms = triton.testing.do_bench(lambda: y.copy_(x), return_mode="median")
    return 2 * x.numel() / (ms * 1e-3) / 1e9


def bench(fn: Callable[[], object]) -> float:
    return float(triton.testing.do_bench(fn, warmup=25, rep=100, return_mode="median")) * 1e3


def graph_per_launch(fns: list[Callable[[], object]] | Callable[[], object],
                     launches: int = 100, replays: int = 20) -> float:
    """Microseconds per launch of ``launches`` calls captured in one CUDA graph. Given several
    callables (each on its own buffers), the calls rotate through them so data that the previous
    launch left in L2 is not read again (L2-cold, like do_bench's flush)."""
    fns = fns if isinstance(fns, list) else [fns]
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for fn in fns:
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(launches):
            fns[i % len(fns)]()
    g.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(replays):
        start.record()
        g.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3 / launches)
    return sorted(times)[len(times) // 2]


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


_L2_BYTES = 60 * 1024 * 1024


def copies_for_cold_l2(bytes_per_set: int) -> int:
    return max(1, min(64, -(-3 * _L2_BYTES // bytes_per_set)))


@triton.jit
def _empty_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.zeros((BLOCK,), tl.float32))


Factory = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], Callable[[], object]]


def _inputs(shape: tuple[int, int, int, int], dtype: torch.dtype, copies: int,
            layout: str = "ntHd") -> list[tuple[torch.Tensor, ...]]:
    n, t, h, d = shape
    sets = []
    for _ in range(copies):
        o = torch.randn((t, n, h, d) if layout == "tnhd" else (n, t, h, d), device="cuda",
                        dtype=dtype)
        lse = torch.randn((t, n, h) if layout == "tnhd" else (n, t, h), device="cuda") * 4
        sets.append((o, lse, torch.empty(t, h, d, device="cuda", dtype=dtype),
                     torch.empty(t, h, device="cuda")))
    return sets


def measure(shape: tuple[int, int, int, int], base: str, impl: str, nbytes: int,
            make: Factory, dtype: torch.dtype, layout: str = "ntHd") -> Row:
    """Time one implementation: graph replay always, do_bench as well for T > 1."""
    t = shape[1]
    sets = _inputs(shape, dtype, 1 if t == 1 else copies_for_cold_l2(nbytes), layout)
    fns = [make(*x) for x in sets]
    graph = graph_per_launch(fns)
    return Row(shape, base, impl, nbytes, graph, None if t == 1 else bench(fns[0]))


def _record_for(d: int, base: str) -> str:
    if d == 512:
        return "flashinfer.mla.fa3" if base == "2" else "flashinfer.mla.fa3+basee"
    return "flashinfer.batch_decode" if base == "2" else "torch.sdpa_ref"


def run_shape(shape: tuple[int, int, int, int], base: str, dtype: torch.dtype,
              impls: set[str]) -> list[Row]:
    n, t, h, d = shape
    s = torch.finfo(dtype).bits // 8
    mb, rb = merge_bytes(n, t, h, d, s), rescale_bytes(n, t, h, d, s)
    rec = _record_for(d, base)
    rows = []
    if "merge" in impls:
        plan = plan_combine(rec, mode="merge", world_size=n, num_heads=h, head_dim=d,
                            out_dtype=dtype, return_lse=True)
        o, lse, out, lse_out = _inputs(shape, dtype, 1)[0]
        plan(o, lse, out=out, lse_out=lse_out)
        torch.testing.assert_close(out.double(), merge_reference(o, lse, base=base)[0],
                                   atol=2e-2, rtol=2e-2)
        rows.append(measure(shape, base, "attn-contracts merge", mb, lambda o, lse, out, z:
                            functools.partial(plan, o, lse, out=out, lse_out=z), dtype))
    if "rescale" in impls:
        plan_r = plan_combine(rec, mode="ag_rs" if h % n == 0 else "ar", world_size=n,
                              num_heads=h, head_dim=d, out_dtype=dtype, return_lse=True)
        o, lse, out, lse_out = _inputs(shape, dtype, 1)[0]
        plan_r(o[0], lse, rank=0, out=out, lse_out=lse_out)
        torch.testing.assert_close(out.double(), rescale_reference(o[0], lse, 0, base=base)[0],
                                   atol=2e-2, rtol=2e-2)
        rows.append(measure(shape, base, "attn-contracts rescale", rb, lambda o, lse, out, z:
                            functools.partial(plan_r, o[0], lse, rank=0, out=out, lse_out=z),
                            dtype))
    if "merge" in impls and t == 1:  # PDL on by default at one token: show the launch without it
        plan_np = plan_combine(rec, mode="merge", world_size=n, num_heads=h, head_dim=d,
                               out_dtype=dtype, return_lse=True, pdl=False)
        rows.append(measure(shape, base, "attn-contracts merge, PDL off", mb,
                            lambda o, lse, out, z: functools.partial(plan_np, o, lse, out=out,
                                                                     lse_out=z), dtype))
    if "copy" in impls and base == "2" and t > 1:
        rows.append(measure(shape, base, "torch copy of the same bytes", mb, lambda o, lse, out, z: (
            _copy_of(o, mb)), dtype))
    if "torch" in impls and base == "2":
        rows.append(measure(shape, base, "torch eager (fp32)", mb, lambda o, lse, out, z: (
            lambda: merge_reference(o, lse, base=base, dtype=torch.float32)), dtype))
    if "compile" in impls and base == "2":
        compiled = torch.compile(lambda a, b: merge_reference(a, b, base=base,
                                                              dtype=torch.float32),
                                 dynamic=False)
        rows.append(measure(shape, base, "torch.compile (fp32)", mb, lambda o, lse, out, z: (
            lambda: compiled(o, lse)), dtype))
    if "flashinfer" in impls and base == "2":
        rows += _flashinfer_row(shape, dtype, mb)
    return rows


def _copy_of(like: torch.Tensor, nbytes: int) -> Callable[[], object]:
    """A device-to-device copy moving ``nbytes`` (half read, half written): what a kernel that
    only streams its bytes once could reach at this size, under the same timer."""
    src = torch.empty(nbytes // 2, dtype=torch.uint8, device=like.device)
    dst = torch.empty_like(src)
    return lambda: dst.copy_(src)


def _flashinfer_row(shape: tuple[int, int, int, int], dtype: torch.dtype, nbytes: int) -> list[Row]:
    h, d = shape[2], shape[3]
    try:
        import flashinfer
    except ImportError:
        return []
    threads = h * d // (16 // (torch.finfo(dtype).bits // 8))
    if threads > 1024:  # its block is heads × D/vec threads; a failed launch poisons the context
        print(f"flashinfer merge_states {shape}: not run, needs {threads} threads per block "
              "(> 1024)", file=sys.stderr)
        return []
    return [measure(shape, "2", "flashinfer merge_states", nbytes, lambda v, s, out, z: (
        lambda: flashinfer.merge_states(v, s)), dtype, layout="tnhd")]


def launch_overhead(dtype: torch.dtype) -> list[tuple[str, float]]:
    """Host µs per eager call: what do_bench sees when the GPU work is shorter than this."""
    plan = plan_combine("flashinfer.mla.fa3", mode="merge", world_size=4, num_heads=128,
                        head_dim=512, out_dtype=dtype, return_lse=True)
    o, lse, out, z = _inputs((4, 1, 128, 512), dtype, 1)[0]
    from attn_contracts.combine.ops import _merge_impl

    empty = torch.empty(128, device="cuda")
    return [
        ("plan(o, lse, out=, lse_out=)", host_us_per_call(
            lambda: plan(o, lse, out=out, lse_out=z))),
        ("launcher body (no checks)", host_us_per_call(
            lambda: _merge_impl(o, lse, out, z, "2", "2", 1, 64, 4))),
        ("torch.ops.attn_contracts.merge_", host_us_per_call(
            lambda: torch.ops.attn_contracts.merge_(o, lse, out, z, "2", "2", 1, 64, 4))),
        ("almost empty Triton kernel", host_us_per_call(
            lambda: _empty_kernel[(1,)](empty, BLOCK=128))),
    ]


def _sweep_configs(kernel: str, n: int, t: int, h: int, d: int) -> list[KernelConfig]:
    """Sensible tiles: 4-16 elements per thread for merge (at most 128 across all shards), 4-32
    for rescale."""
    n_pad = triton.next_power_of_2(n) if kernel == "merge" else 1
    out = []
    for bd in (64, 128, 256, 512):
        for bh in (1, 2, 4, 8, 16):
            for warps in (1, 2, 4, 8):
                per_thread = bh * bd // (32 * warps)
                if 4 <= per_thread <= (16 if kernel == "merge" else 32) and bd <= triton.next_power_of_2(d) \
                        and bd >= min(d, 128) // (2 if t == 1 else 1) \
                        and bh <= triton.next_power_of_2(h) and n_pad * per_thread <= 128:
                    out.append(KernelConfig(bh, bd, warps))
    return out


def sweep(dtype: torch.dtype, kernel: str) -> None:
    """Time every sensible tile for each shape; print the best beside the default heuristic."""
    console = Console(width=200)
    table = Table(title=f"{kernel} tile sweep (base 2, CUDA-graph µs per launch, L2-cold, PDL off)")
    for col in ("shape", "default", "default µs", "best", "best µs", "gain"):
        table.add_column(col)
    s = torch.finfo(dtype).bits // 8
    for shape in SHAPES:
        n, t, h, d = shape
        nbytes = (merge_bytes if kernel == "merge" else rescale_bytes)(n, t, h, d, s)
        sets = _inputs(shape, dtype, 1 if t == 1 else copies_for_cold_l2(nbytes))
        results = {}
        for cfg in _sweep_configs(kernel, n, t, h, d):
            plan = plan_combine(_record_for(d, "2"), mode="merge" if kernel == "merge" else "ar",
                                world_size=n, num_heads=h, head_dim=d, out_dtype=dtype,
                                return_lse=True, config=cfg)
            calls = [functools.partial(plan, o, lse, out=out, lse_out=z) if kernel == "merge"
                     else functools.partial(plan, o[0], lse, rank=0, out=out, lse_out=z)
                     for o, lse, out, z in sets]
            results[cfg] = graph_per_launch(calls, launches=20, replays=7)
        best = min(results, key=results.__getitem__)
        dflt = dataclasses.replace(default_config(n, t, h, d, kernel), pdl=False)  # swept without
        table.add_row(str(shape), str(dflt), f"{results.get(dflt, math.nan):.2f}", str(best),
                      f"{results[best]:.2f}", f"{results.get(dflt, math.nan) / results[best]:.2f}x")
        print(json.dumps({"kernel": kernel, "shape": shape,
                          "results": {str(k): v for k, v in results.items()}}))
    console.print(table)


def timed_after(fn: Callable[[], object], flush: Callable[[], object], reps: int = 200) -> float:
    """``do_bench``'s loop (flush, event, call, event; median µs) with a chosen flush."""
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


def flush_study(dtype: torch.dtype, bw: float) -> Table:
    """Why ``do_bench`` cannot reach the 1 GiB copy bandwidth at 50-300 MB: its flush writes
    256 MB, leaving L2 full of dirty lines whose write-back competes with the timed kernel. The
    same loop with a read-only flush (L2 as cold, nothing dirty) isolates that cost."""
    cache = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    flushes = {"zero_ (do_bench)": cache.zero_, "read-only": lambda: cache.view(torch.float32).sum()}
    table = Table(title="timer study: the same call after each flush (median µs, % of copy BW)")
    for col in ("call", "N,T,H,D", "MB", "graph", *flushes):
        table.add_column(col, justify="left" if col == "call" else "right")
    s = torch.finfo(dtype).bits // 8
    for kernel, shape in (("merge", (8, 2048, 32, 128)), ("merge", (8, 256, 128, 512)),
                          ("rescale", (8, 256, 128, 512))):
        n, t, h, d = shape
        nbytes = (merge_bytes if kernel == "merge" else rescale_bytes)(n, t, h, d, s)
        plan = plan_combine(_record_for(d, "2"), mode="merge" if kernel == "merge" else "ar",
                            world_size=n, num_heads=h, head_dim=d, out_dtype=dtype)
        sets = _inputs(shape, dtype, copies_for_cold_l2(nbytes))
        calls = {f"attn-contracts {kernel}": [
            functools.partial(plan, o, lse, out=out) if kernel == "merge"
            else functools.partial(plan, o[0], lse, rank=0, out=out) for o, lse, out, _ in sets],
            "torch copy of the same bytes": [_copy_of(sets[0][0], nbytes)]}
        for name, fns in calls.items():
            us = [graph_per_launch(fns)] + [timed_after(fns[0], f) for f in flushes.values()]
            table.add_row(name, ",".join(map(str, shape)), f"{nbytes / 1e6:.1f}",
                          *[f"{u:.2f} ({100 * nbytes / (u * 1e-6) / 1e9 / bw:.0f} %)" for u in us])
    return table


def _pct(gbps: float | None, bw: float) -> str:
    return "-" if gbps is None else f"{100 * gbps / bw:.1f}"


def render(rows: list[Row], bw: float) -> Table:
    table = Table(title=f"combine on {torch.cuda.get_device_name()} (copy bandwidth {bw:.0f} GB/s)")
    cols = ("N,T,H,D", "base", "implementation", "MB moved", "graph µs", "graph % BW",
            "do_bench µs", "do_bench % BW")
    for col in cols:
        table.add_column(col, justify="left" if col == "implementation" else "right")
    for r in rows:
        table.add_row(",".join(map(str, r.shape)), r.base, r.impl, f"{r.bytes / 1e6:.2f}",
                      f"{r.graph_us:.2f}", _pct(r.gbps(r.graph_us), bw),
                      "-" if r.do_bench_us is None else f"{r.do_bench_us:.2f}",
                      _pct(r.gbps(r.do_bench_us), bw))
    return table


def plot(rows: list[Row], bw: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    picked = [r for r in rows if r.base == "2"]
    shapes = sorted({r.shape for r in picked}, key=SHAPES.index)
    impls = sorted({r.impl for r in picked})
    fig, ax = plt.subplots(figsize=(11, 4.5))
    width = 0.8 / len(impls)
    for i, impl in enumerate(impls):
        ys = [next((100 * r.bytes / (r.graph_us * 1e-6) / 1e9 / bw for r in picked
                    if r.shape == s and r.impl == impl), 0.0)
              for s in shapes]
        ax.bar([x + i * width for x in range(len(shapes))], ys, width, label=impl)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(shapes))],
                  [",".join(map(str, s)) for s in shapes])
    ax.set_xlabel("(N, T, H, D), bf16, base 2")
    ax.set_ylabel("% of copy bandwidth (CUDA-graph time)")
    ax.axhline(85, color="grey", ls="--", lw=0.8)
    ax.legend(fontsize=8)
    ax.set_title(f"DCP combine bandwidth on {torch.cuda.get_device_name()} ({bw:.0f} GB/s copy)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    ap.add_argument("--bases", nargs="+", default=["2", "e"])
    ap.add_argument("--impls", nargs="+",
                    default=["merge", "rescale", "copy", "torch", "compile", "flashinfer"])
    ap.add_argument("--shapes", nargs="+", default=None, help="N,T,H,D ...")
    ap.add_argument("--out", type=Path, default=None, help="folder for .md, .json and .png")
    ap.add_argument("--name", default="combine-h200")
    ap.add_argument("--sweep", choices=["merge", "rescale"], default=None,
                    help="tile sweep of one kernel instead of the table")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("bench/combine.py needs a CUDA GPU", file=sys.stderr)
        return 2
    dtype = getattr(torch, args.dtype)
    global SHAPES
    if args.shapes:
        SHAPES = [tuple(int(x) for x in s.split(",")) for s in args.shapes]  # type: ignore[misc]
    if args.sweep:
        sweep(dtype, args.sweep)
        return 0
    bw = copy_bandwidth()
    empty = torch.empty(128, device="cuda")
    empty_us = graph_per_launch(lambda: _empty_kernel[(1,)](empty, BLOCK=128))
    rows: list[Row] = []
    for shape in SHAPES:
        for base in args.bases:
            rows += run_shape(shape, base, dtype, set(args.impls))
    overhead = launch_overhead(dtype)
    study = flush_study(dtype, bw)
    console = Console(width=200)
    console.print(render(rows, bw))
    console.print(study)
    console.print(f"an almost empty Triton kernel: {empty_us:.2f} µs per launch in a CUDA graph")
    host = "\n".join(f"  {name}: {us:.1f} µs" for name, us in overhead)
    console.print(f"host time per eager call (launch overhead):\n{host}")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        command = "python " + " ".join(sys.argv)
        meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                "triton": triton.__version__, "python": platform.python_version(),
                "copy_bandwidth_gbps": bw, "empty_kernel_graph_us": empty_us, "command": command,
                "dtype": args.dtype, "host_us_per_call": dict(overhead)}
        (args.out / f"{args.name}.json").write_text(json.dumps(
            {"meta": meta, "rows": [asdict(r) | {
                "graph_fraction": r.bytes / (r.graph_us * 1e-6) / 1e9 / bw,
                "do_bench_fraction": None if r.do_bench_us is None else
                r.bytes / (r.do_bench_us * 1e-6) / 1e9 / bw} for r in rows]}, indent=1))
        md = Console(record=True, width=200, file=open(os.devnull, "w"))  # noqa: SIM115
        md.print(render(rows, bw))
        table_text = md.export_text()
        md.print(study)
        study_text = md.export_text()
        study_doc = inspect.cleandoc(flush_study.__doc__ or "")
        (args.out / f"{args.name}.md").write_text(
            f"# Combine benchmark: {meta['device']}\n\nCommand: `{command}`\n\n"
            f"torch {meta['torch']}, triton {meta['triton']}, {args.dtype}; copy bandwidth "
            f"{bw:.0f} GB/s (read + write, 1 GiB copy); almost empty Triton kernel "
            f"{empty_us:.2f} µs per launch in a CUDA graph.\n\n"
            "`graph`: per launch in a CUDA graph of 100 launches (for T > 1 rotating over enough "
            "buffer sets to leave L2 cold); `do_bench`: median of `triton.testing.do_bench` "
            "(L2 flushed), which also counts host launch gaps when they exceed the GPU time. "
            "One-token plans use PDL (a consecutive launch overlaps its launch latency with the "
            "kernel before it, then waits for it); the `PDL off` rows show the same plan without. "
            "`torch copy of the same bytes`: a plain device copy of as many bytes, the ceiling "
            "of a streaming kernel at that size under the same timer (do_bench's L2 flush leaves "
            "dirty lines whose write-back competes with the measured kernel).\n\n"
            f"```\n{table_text}```\n\n{study_doc}\n\n```\n{study_text}```\n\n"
            f"Host time per eager call:\n\n{host}\n")
        plot(rows, bw, args.out / f"{args.name}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
