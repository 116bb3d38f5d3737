"""Combine benchmark (CUDA): time, bytes moved and fraction of the measured copy bandwidth.

    python bench/combine.py --out bench/results            # the table, JSON and PNG
    python bench/combine.py --sweep                        # tile sweep for the default heuristic

Implementations: this project's ``merge`` and ``rescale`` (through a plan, as serving code calls
them), the torch reference in fp32 (eager and ``torch.compile``d), and FlashInfer ``merge_states``
(base 2; it cannot launch 128 heads at head dim 512). Bandwidth-bound shapes are timed with the
median of ``triton.testing.do_bench`` (which flushes L2 between runs); one-token shapes are
launch-bound and timed per launch under CUDA-graph replay, as engines run decode.

Bytes moved by a merge (the floor of any implementation)::

    N·T·H·D·s_o + N·T·H·4 (read partials and LSE) + T·H·D·s_o + T·H·4 (write output and LSE)
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import platform
import sys
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
    us: float
    bytes: int
    timing: str  # do_bench | graph

    @property
    def gbps(self) -> float:
        return self.bytes / (self.us * 1e-6) / 1e9


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


def graph_per_launch(fn: Callable[[], object], launches: int = 100, replays: int = 20) -> float:
    """Microseconds per launch of ``fn`` captured ``launches`` times in one CUDA graph."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(launches):
            fn()
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


@triton.jit
def _empty_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.zeros((BLOCK,), tl.float32))


def _timer(t: int) -> tuple[Callable[[Callable[[], object]], float], str]:
    return (graph_per_launch, "graph") if t == 1 else (bench, "do_bench")


def run_shape(shape: tuple[int, int, int, int], base: str, dtype: torch.dtype,
              impls: set[str]) -> list[Row]:
    n, t, h, d = shape
    s = torch.finfo(dtype).bits // 8
    o = torch.randn(n, t, h, d, device="cuda", dtype=dtype)
    lse = torch.randn(n, t, h, device="cuda") * 4
    out = torch.empty(t, h, d, device="cuda", dtype=dtype)
    lse_out = torch.empty(t, h, device="cuda")
    timer, how = _timer(t)
    rows = []
    record = "flashinfer.mla.fa3" if base == "2" else "flashinfer.mla.fa3+basee"
    head_dim_ok = d == 512
    rec = record if head_dim_ok else ("flashinfer.batch_decode" if base == "2" else "torch.sdpa_ref")
    if "merge" in impls:
        plan = plan_combine(rec, mode="merge", world_size=n, num_heads=h, head_dim=d,
                            out_dtype=dtype, return_lse=True)
        ref_o, _ = merge_reference(o, lse, base=base)
        plan(o, lse, out=out, lse_out=lse_out)
        torch.testing.assert_close(out.double(), ref_o, atol=2e-2, rtol=2e-2)
        rows.append(Row(shape, base, "attn-contracts merge", timer(
            lambda: plan(o, lse, out=out, lse_out=lse_out)), merge_bytes(n, t, h, d, s), how))
    if "rescale" in impls:
        plan_r = plan_combine(rec, mode="ag_rs" if h % n == 0 else "ar", world_size=n,
                              num_heads=h, head_dim=d, out_dtype=dtype, return_lse=True)
        ref_r, _ = rescale_reference(o[0], lse, 0, base=base)
        plan_r(o[0], lse, rank=0, out=out, lse_out=lse_out)
        torch.testing.assert_close(out.double(), ref_r, atol=2e-2, rtol=2e-2)
        rows.append(Row(shape, base, "attn-contracts rescale", timer(
            lambda: plan_r(o[0], lse, rank=0, out=out, lse_out=lse_out)),
            rescale_bytes(n, t, h, d, s), how))
    if "torch" in impls:
        rows.append(Row(shape, base, "torch eager (fp32)", timer(
            lambda: merge_reference(o, lse, base=base, dtype=torch.float32)),
            merge_bytes(n, t, h, d, s), how))
    if "compile" in impls:
        compiled = torch.compile(lambda a, b: merge_reference(a, b, base=base,
                                                              dtype=torch.float32),
                                 dynamic=False)
        compiled(o, lse)
        rows.append(Row(shape, base, "torch.compile (fp32)", timer(lambda: compiled(o, lse)),
                        merge_bytes(n, t, h, d, s), how))
    if "flashinfer" in impls and base == "2":
        rows += _flashinfer_row(shape, dtype, timer, how)
    return rows


def _flashinfer_row(shape: tuple[int, int, int, int], dtype: torch.dtype,
                    timer: Callable[[Callable[[], object]], float], how: str) -> list[Row]:
    n, t, h, d = shape
    try:
        import flashinfer
    except ImportError:
        return []
    v = torch.randn(t, n, h, d, device="cuda", dtype=dtype)  # its own layout [T, N, H, D]
    s = torch.randn(t, n, h, device="cuda") * 4
    try:
        flashinfer.merge_states(v, s)
        torch.cuda.synchronize()
    except Exception as err:  # e.g. 128 heads × D=512 exceeds its block size
        print(f"flashinfer merge_states {shape}: cannot launch ({type(err).__name__}: "
              f"{str(err)[:80]})", file=sys.stderr)
        return []
    return [Row(shape, "2", "flashinfer merge_states", timer(lambda: flashinfer.merge_states(v, s)),
                merge_bytes(n, t, h, d, torch.finfo(dtype).bits // 8), how)]


def sweep(dtype: torch.dtype) -> None:
    """Time every sensible tile for each shape; print the best beside the default heuristic."""
    console = Console(width=200)
    table = Table(title="merge tile sweep (base 2)")
    for col in ("shape", "default", "default µs", "best", "best µs", "gain"):
        table.add_column(col)
    for shape in SHAPES:
        n, t, h, d = shape
        o = torch.randn(n, t, h, d, device="cuda", dtype=dtype)
        lse = torch.randn(n, t, h, device="cuda")
        out = torch.empty(t, h, d, device="cuda", dtype=dtype)
        lse_out = torch.empty(t, h, device="cuda")
        timer, _ = _timer(t)
        results = {}
        for bd in (128, 256, 512):
            for bh in (1, 2, 4, 8, 16):
                for warps in (4, 8):
                    if not 256 <= bh * bd <= 8192 or bd > 2 * triton.next_power_of_2(d) \
                            or bh > triton.next_power_of_2(h) or bh * bd // (32 * warps) < 4:
                        continue
                    cfg = KernelConfig(bh, bd, warps)
                    plan = plan_combine("flashinfer.mla.fa3" if d == 512 else
                                        "flashinfer.batch_decode", mode="merge", world_size=n,
                                        num_heads=h, head_dim=d, out_dtype=dtype,
                                        return_lse=True, config=cfg)
                    results[cfg] = timer(functools.partial(plan, o, lse, out=out, lse_out=lse_out))
        best = min(results, key=results.__getitem__)
        dflt = default_config(h, d)
        table.add_row(str(shape), str(dflt), f"{results.get(dflt, math.nan):.2f}", str(best),
                      f"{results[best]:.2f}", f"{results.get(dflt, math.nan) / results[best]:.2f}x")
        print(json.dumps({"shape": shape, "results": {str(k): v for k, v in results.items()}}))
    console.print(table)


def render(rows: list[Row], bw: float) -> Table:
    table = Table(title=f"combine on {torch.cuda.get_device_name()} (copy bandwidth {bw:.0f} GB/s)")
    for col in ("N,T,H,D", "base", "implementation", "timing", "µs", "MB moved", "GB/s",
                "% of copy BW"):
        table.add_column(col, justify="right" if col not in ("implementation", "timing") else "left")
    for r in rows:
        table.add_row(",".join(map(str, r.shape)), r.base, r.impl, r.timing, f"{r.us:.2f}",
                      f"{r.bytes / 1e6:.2f}", f"{r.gbps:.0f}", f"{100 * r.gbps / bw:.1f}")
    return table


def plot(rows: list[Row], bw: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    picked = [r for r in rows if r.base == "2" and r.timing == "do_bench"]
    shapes = sorted({r.shape for r in picked}, key=SHAPES.index)
    impls = sorted({r.impl for r in picked})
    fig, ax = plt.subplots(figsize=(11, 4.5))
    width = 0.8 / len(impls)
    for i, impl in enumerate(impls):
        ys = [next((100 * r.gbps / bw for r in picked if r.shape == s and r.impl == impl), 0.0)
              for s in shapes]
        ax.bar([x + i * width for x in range(len(shapes))], ys, width, label=impl)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(shapes))],
                  [",".join(map(str, s)) for s in shapes])
    ax.set_xlabel("(N, T, H, D), bf16, base 2")
    ax.set_ylabel("% of measured copy bandwidth")
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
                    default=["merge", "rescale", "torch", "compile", "flashinfer"])
    ap.add_argument("--shapes", nargs="+", default=None, help="N,T,H,D ...")
    ap.add_argument("--out", type=Path, default=None, help="folder for .md, .json and .png")
    ap.add_argument("--name", default="combine-h200")
    ap.add_argument("--sweep", action="store_true", help="tile sweep instead of the table")
    args = ap.parse_args(argv)
    if not torch.cuda.is_available():
        print("bench/combine.py needs a CUDA GPU", file=sys.stderr)
        return 2
    dtype = getattr(torch, args.dtype)
    if args.sweep:
        sweep(dtype)
        return 0
    global SHAPES
    if args.shapes:
        SHAPES = [tuple(int(x) for x in s.split(",")) for s in args.shapes]  # type: ignore[misc]
    bw = copy_bandwidth()
    empty = torch.empty(128, device="cuda")
    empty_us = graph_per_launch(lambda: _empty_kernel[(1,)](empty, BLOCK=128))
    rows: list[Row] = []
    for shape in SHAPES:
        for base in args.bases:
            rows += run_shape(shape, base, dtype, set(args.impls))
    console = Console(width=200)
    console.print(render(rows, bw))
    console.print(f"an almost empty Triton kernel: {empty_us:.2f} µs per launch in a CUDA graph")
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        command = "python " + " ".join(sys.argv)
        meta = {"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                "triton": triton.__version__, "python": platform.python_version(),
                "copy_bandwidth_gbps": bw, "empty_kernel_graph_us": empty_us, "command": command,
                "dtype": args.dtype}
        (args.out / f"{args.name}.json").write_text(json.dumps(
            {"meta": meta, "rows": [asdict(r) | {"gbps": r.gbps, "fraction": r.gbps / bw}
                                    for r in rows]}, indent=1))
        md = Console(record=True, width=200, file=open("/dev/null", "w"))  # noqa: SIM115
        md.print(render(rows, bw))
        (args.out / f"{args.name}.md").write_text(
            f"# Combine benchmark: {meta['device']}\n\nCommand: `{command}`\n\n"
            f"torch {meta['torch']}, triton {meta['triton']}, {args.dtype}; copy bandwidth "
            f"{bw:.0f} GB/s (read + write, 1 GiB copy); empty Triton kernel {empty_us:.2f} µs "
            f"per launch in a CUDA graph.\n\n```\n{md.export_text()}```\n")
        plot(rows, bw, args.out / f"{args.name}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
