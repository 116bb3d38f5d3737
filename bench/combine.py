"""Combine benchmark (CUDA): time, bytes moved and fraction of the measured copy bandwidth.

    python bench/combine.py --out bench/results            # the table, JSON and PNG
    python bench/combine.py --sweep targets --out DIR      # tiles of the shapes behind a peer (< 6 min)
    python bench/combine.py --sweep merge                  # tile sweep for the default heuristic
    python bench/combine.py --dry-run                      # the code path on a CPU, untimed

The table has, beside each plain call, the same kernel with a row mask (``row_mask [N, T]``, 20 % of
rows empty; the masked variant must stay within 3 % of the plain one), with a sink, and the a2a
send pack (one kernel) beside the two torch copies it replaced. Two-way merges include a
``[H, T]`` LSE (read through strides) and FlashInfer ``merge_state``; FlashInfer runs only where
its block fits (heads × min(D·bytes/16, 32) threads ≤ 1024: a failed launch poisons the context).

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

Bytes moved by each op (the floor of any implementation): ``_inputs.py``. Timers: ``_timing.py``.
``--dry-run`` runs the table's code (or a ``--sweep``'s) on the CPU at small shapes
(``_inputs.dry_shape``), each call once and untimed: a smoke test, not a measurement. The combine's
calls take its torch path there and the empty-kernel rows are left out, unless
``TRITON_INTERPRET=1`` runs the Triton kernels in the interpreter.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import inspect
import json
import math
import os
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import triton
import triton.language as tl
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _timing, also under PYTHONSAFEPATH=1
from _inputs import BYTES
from _inputs import Shape
from _inputs import bench_record
from _inputs import dry_shape
from _inputs import input_sets
from _inputs import pack_sets
from _inputs import row_mask
from _inputs import sink_like
from _inputs import sized
from _timing import after_flush_us
from _timing import copies_for_cold_l2
from _timing import copy_bandwidth
from _timing import copy_calls
from _timing import do_bench_us
from _timing import dry_run
from _timing import environment
from _timing import graph_per_launch
from _timing import host_medians
from _timing import is_dry_run
from _timing import write_results

from attn_contracts import CapabilityRecord
from attn_contracts.combine import KernelConfig
from attn_contracts.combine import merge
from attn_contracts.combine import merge_reference
from attn_contracts.combine import pack_a2a
from attn_contracts.combine import plan_combine
from attn_contracts.combine import rescale
from attn_contracts.combine import rescale_reference
from attn_contracts.combine.launch import uses_triton
from attn_contracts.combine.launches import merge_into
from attn_contracts.combine.tiles import default_config

SHAPES = [(4, 1, 128, 512), (8, 1, 16, 512), (4, 32, 128, 512), (8, 256, 128, 512),
          (4, 512, 32, 128), (8, 2048, 32, 128), (3, 100, 40, 128),
          (2, 4096, 32, 128), (2, 16384, 32, 128), (2, 8192, 128, 128), (2, 4096, 8, 128),
          (2, 1024, 8, 256)]
#: shapes whose LSE is also measured as a kernel's [N, H, T] buffer read through strides
HEAD_TOKEN_SHAPES = {(2, 4096, 32, 128)}
#: a2a send pack: (world, T, H, D)
PACK_SHAPES = [(4, 1, 128, 512), (4, 256, 128, 512), (2, 4096, 32, 128), (8, 2048, 32, 128)]
DEVICE = "cuda"  # the inputs' device (a dry run sets "cpu")


@dataclass
class Row:
    shape: Shape
    base: str
    impl: str
    bytes: int
    graph_us: float  # per launch in a CUDA graph (L2-cold rotation for T > 1)
    do_bench_us: float | None  # median of triton.testing.do_bench (T > 1 only)
    lse_layout: str = "[T,H]"

    def gbps(self, us: float | None) -> float | None:
        return None if us is None else self.bytes / (us * 1e-6) / 1e9


@triton.jit
def _empty_kernel(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), tl.zeros((BLOCK,), tl.float32))


Factory = Callable[[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor], Callable[[], object]]


def _input_sets(shape: Shape, dtype: torch.dtype, copies: int,
            layout: str = "ntHd") -> list[tuple[torch.Tensor, ...]]:
    """``copies`` sets of (partials, LSE, out, lse_out) on this table's device."""
    return input_sets(shape, dtype, copies, DEVICE, layout)


def measure(shape: Shape, base: str, impl: str, nbytes: int,
            make: Factory, dtype: torch.dtype, layout: str = "ntHd") -> Row:
    """Time one implementation: graph replay always, do_bench as well for T > 1."""
    t = shape[1]
    sets = _input_sets(shape, dtype, copies_for_cold_l2(nbytes, t), layout)
    fns = [make(*x) for x in sets]
    graph = graph_per_launch(fns)
    return Row(shape, base, impl, nbytes, graph, None if t == 1 else do_bench_us(fns[0]),
               "[H,T]" if layout == "ht" else "[T,H]")


@functools.cache
def _record_for(d: int, base: str) -> CapabilityRecord:
    return bench_record(d, base, "combine")  # see _timing.bench_record


def _variant(kernel: str, base: str, cfg: KernelConfig, masked: bool, sink: bool) -> Factory:
    """A factory of one eager launch with the plain call's tiles, plus a mask and/or a sink."""
    def make(o: torch.Tensor, lse: torch.Tensor, out: torch.Tensor,
             z: torch.Tensor) -> Callable[[], object]:
        kw = dict(base=base, out=out, lse_out=z, config=cfg,
                  row_mask=row_mask(o.shape[:2], o.device) if masked else None,
                  sink=sink_like(o.shape[-2], o.device) if sink else None)
        if kernel == "merge":
            return functools.partial(merge, o, lse, **kw)
        return functools.partial(rescale, o[0], lse, 0, **kw)
    return make


def _variant_rows(shape: Shape, base: str, dtype: torch.dtype, kernel: str,
                  nbytes: int, layout: str) -> list[Row]:
    """The plain launch (same path as the variants: ``merge``/``rescale`` with the default
    tiles) beside masked, sink and masked+sink: the cost of each option by itself."""
    cfg = default_config(*shape, kernel)
    name = f"attn-contracts {kernel}"
    rows = []
    for label, masked, sink in (("direct", False, False), ("masked", True, False),
                                ("sink", False, True), ("masked + sink", True, True)):
        rows.append(measure(shape, base, f"{name}, {label}", nbytes,
                            _variant(kernel, base, cfg, masked, sink), dtype, layout))
    return rows


def run_shape(shape: Shape, base: str, dtype: torch.dtype,
              impls: set[str], layout: str = "ntHd") -> list[Row]:
    n, t, h, d = shape
    s = torch.finfo(dtype).bits // 8
    mb, rb = BYTES["merge"](n, t, h, d, s), BYTES["rescale"](n, t, h, d, s)
    rec = _record_for(d, base)
    rows = []
    if "merge" in impls:
        plan = plan_combine(rec, mode="merge", world_size=n, num_heads=h, head_dim=d,
                            out_dtype=dtype, return_lse=True)
        o, lse, out, lse_out = _input_sets(shape, dtype, 1, layout)[0]
        plan(o, lse, out=out, lse_out=lse_out)
        torch.testing.assert_close(out.double(), merge_reference(o, lse, base=base)[0],
                                   atol=2e-2, rtol=2e-2)
        mask, sink = row_mask(o.shape[:2], o.device), sink_like(h, o.device)
        merge(o, lse, base=base, out=out, row_mask=mask, sink=sink)
        torch.testing.assert_close(out.double(), merge_reference(o, lse, base=base, row_mask=mask,
                                                                 sink=sink)[0],
                                   atol=2e-2, rtol=2e-2)
        rows.append(measure(shape, base, "attn-contracts merge", mb, lambda o, lse, out, z:
                            functools.partial(plan, o, lse, out=out, lse_out=z), dtype, layout))
        if "variants" in impls:
            rows += _variant_rows(shape, base, dtype, "merge", mb, layout)
    if "rescale" in impls and layout == "ntHd":
        plan_r = plan_combine(rec, mode="ag_rs" if h % n == 0 else "ar", world_size=n,
                              num_heads=h, head_dim=d, out_dtype=dtype, return_lse=True)
        o, lse, out, lse_out = _input_sets(shape, dtype, 1)[0]
        plan_r(o[0], lse, rank=0, out=out, lse_out=lse_out)
        torch.testing.assert_close(out.double(), rescale_reference(o[0], lse, 0, base=base)[0],
                                   atol=2e-2, rtol=2e-2)
        rows.append(measure(shape, base, "attn-contracts rescale", rb, lambda o, lse, out, z:
                            functools.partial(plan_r, o[0], lse, rank=0, out=out, lse_out=z),
                            dtype))
        if "variants" in impls:
            rows += _variant_rows(shape, base, dtype, "rescale", rb, layout)
    if "merge" in impls and t == 1:  # PDL on by default at one token: show the launch without it
        plan_np = plan_combine(rec, mode="merge", world_size=n, num_heads=h, head_dim=d,
                               out_dtype=dtype, return_lse=True, pdl=False)
        rows.append(measure(shape, base, "attn-contracts merge, PDL off", mb,
                            lambda o, lse, out, z: functools.partial(plan_np, o, lse, out=out,
                                                                     lse_out=z), dtype))
    if "copy" in impls and base == "2" and t > 1:
        rows.append(measure(shape, base, "torch copy of the same bytes", mb, lambda o, lse, out, z: (
            copy_calls(mb, 1, o.device)[0]), dtype))
    if "torch" in impls and base == "2":
        rows.append(measure(shape, base, "torch eager (fp32)", mb, lambda o, lse, out, z: (
            lambda: merge_reference(o, lse, base=base, dtype=torch.float32)), dtype, layout))
    if "compile" in impls and base == "2":
        compiled = torch.compile(lambda a, b: merge_reference(a, b, base=base,
                                                              dtype=torch.float32),
                                 dynamic=False)
        rows.append(measure(shape, base, "torch.compile (fp32)", mb, lambda o, lse, out, z: (
            lambda: compiled(o, lse)), dtype))
    if "flashinfer" in impls and base == "2":
        rows += _flashinfer_row(shape, dtype, mb)
    return rows


def flashinfer_fits(h: int, d: int, dtype: torch.dtype) -> tuple[bool, int]:
    """FlashInfer's merge block is heads × min(D·bytes/16, 32) threads; above 1024 the launch
    fails and poisons the CUDA context, so such shapes are never run."""
    threads = h * min(d * (torch.finfo(dtype).bits // 8) // 16, 32)
    return threads <= 1024, threads


def _flashinfer_row(shape: Shape, dtype: torch.dtype, nbytes: int) -> list[Row]:
    n, h, d = shape[0], shape[2], shape[3]
    try:
        import flashinfer
    except ImportError:
        return []
    fits, threads = flashinfer_fits(h, d, dtype)
    if not fits:
        print(f"flashinfer merge {shape}: not run, needs {threads} threads per block (> 1024)",
              file=sys.stderr)
        return []
    if n == 2:  # the two-way kernel, on [T, H, D] / [T, H] pairs
        return [measure(shape, "2", "flashinfer merge_state", nbytes, lambda v, s, out, z: (
            lambda: flashinfer.merge_state(v[0], s[0], v[1], s[1])), dtype)]
    return [measure(shape, "2", "flashinfer merge_states", nbytes, lambda v, s, out, z: (
        lambda: flashinfer.merge_states(v, s)), dtype, layout="tnhd")]


def _torch_pack(o: torch.Tensor, lse: torch.Tensor, send: torch.Tensor,
                o_bytes: int) -> Callable[[], object]:
    """The two torch copies ``dcp._a2a`` used before the pack kernel."""
    t, h, d = o.shape
    n = send.shape[0]
    hc = h // n
    o_send = send[:, : t * hc * d * o.element_size()].view(o.dtype).view(n, t, hc, d)
    lse_send = send[:, o_bytes : o_bytes + t * hc * 4].view(torch.float32).view(n, t, hc)

    def run() -> None:
        o_send.copy_(o.view(t, n, hc, d).transpose(0, 1))
        lse_send.copy_(lse.view(t, n, hc).transpose(0, 1))
    return run


def pack_rows(shape: Shape, dtype: torch.dtype) -> list[Row]:
    n, t, h, d = shape
    nbytes = BYTES["pack"](n, t, h, d, torch.finfo(dtype).bits // 8)
    sets = pack_sets(shape, dtype, copies_for_cold_l2(nbytes, t), DEVICE)
    o, lse, send, o_bytes = sets[0]
    check = send.clone()
    pack_a2a(o, lse, send, o_bytes=o_bytes)
    _torch_pack(o, lse, check, o_bytes)()
    assert torch.equal(send[:, : o_bytes + t * (h // n) * 4], check[:, : o_bytes + t * (h // n) * 4])
    keep = row_mask((t,), DEVICE)
    calls = {
        "attn-contracts pack_a2a": [functools.partial(pack_a2a, x, y, z, o_bytes=b)
                                    for x, y, z, b in sets],
        "attn-contracts pack_a2a, masked": [functools.partial(pack_a2a, x, y, z, o_bytes=b,
                                                              row_mask=keep) for x, y, z, b in sets],
        "torch: two copies (dcp before)": [_torch_pack(*x) for x in sets],
        "torch copy of the same bytes": copy_calls(nbytes, 1, DEVICE),
    }
    rows = []
    for impl, fns in calls.items():
        graph = graph_per_launch(fns)
        rows.append(Row(shape, "-", impl, nbytes, graph, None if t == 1 else do_bench_us(fns[0])))
    return rows


def launch_overhead(dtype: torch.dtype) -> list[tuple[str, float]]:
    """Host µs per eager call (``_timing.host_medians``: interleaved, median): what do_bench sees
    when the GPU work is shorter than this."""
    n, t, h, d = sized((4, 1, 128, 512))
    plan = plan_combine(_record_for(d, "2"), mode="merge", world_size=n, num_heads=h,
                        head_dim=d, out_dtype=dtype, return_lse=True)
    o, lse, out, z = _input_sets((n, t, h, d), dtype, 1)[0]
    empty = torch.empty(128, device=DEVICE)
    fns: dict[str, Callable[[], object]] = {
        "plan(o, lse, out=, lse_out=)": lambda: plan(o, lse, out=out, lse_out=z),
        "launcher body (no checks)": lambda: merge_into(o, lse, out, z, "2", "2", 1, 64, 4),
        "torch.ops.attn_contracts.merge_": lambda: torch.ops.attn_contracts.merge_(
            o, lse, out, z, "2", "2", 1, 64, 4),
    }
    if uses_triton(empty):  # a dry run without the interpreter has no Triton launch
        fns["almost empty Triton kernel"] = lambda: _empty_kernel[(1,)](empty, BLOCK=128)
    return list(host_medians(fns).items())


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
        nbytes = BYTES[kernel](n, t, h, d, s)
        sets = _input_sets(shape, dtype, copies_for_cold_l2(nbytes, t))
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


# --- the targeted sweep: the shapes where a peer is faster ----------------------------------------
#: (kernel, (N, T, H, D), LSE layout): the shapes of the 2026-12-01 side-by-side table where this
#: project trails FlashInfer or a goal (DESIGN.md "Measured side by side")
TARGETS: list[tuple[str, Shape, str]] = [
    ("merge", (2, 4096, 32, 128), "ht"),
    ("merge", (2, 16384, 32, 128), "ntHd"),
    ("merge", (2, 8192, 128, 128), "ntHd"),
    ("merge", (2, 4096, 8, 128), "ntHd"),
    ("merge", (2, 1024, 8, 256), "ntHd"),
    ("merge", (4, 512, 32, 128), "ntHd"),
    ("merge", (4, 1, 128, 512), "ntHd"),
    ("rescale", (4, 256, 128, 512), "ntHd"),
    ("rescale", (8, 2048, 32, 128), "ntHd"),
    ("pack", (4, 256, 128, 512), "ntHd"),
    ("pack", (4, 1, 128, 512), "ntHd"),
]
_MAX_CANDIDATES = 24


def _programs(t: int, h: int, d: int, bh: int, bd: int) -> int:
    return t * -(-h // bh) * -(-d // bd)


def target_candidates(kernel: str, n: int, t: int, h: int, d: int,
                      dtype_bytes: int) -> list[KernelConfig]:
    """Tiles of 128-4096 elements over 1-8 warps with 4-64 elements per thread (merge: at most
    256 bytes per thread across the N shards), the head-dim block a power of two from 64 (T = 1)
    or 128 up; PDL as ``default_config`` sets it (grids of at most one wave). Nearest to the
    default first, at most ``_MAX_CANDIDATES``."""
    d2, h2 = triton.next_power_of_2(d), triton.next_power_of_2(h)
    dflt = default_config(n, t, h, d, kernel)
    out = []
    for bd in sorted({min(d2, x) for x in (64, 128, 256, 512) if x >= min(d2, 64 if t == 1 else 128)}):
        for elems in (128, 256, 512, 1024, 2048, 4096):
            bh = elems // bd
            if bh < 1 or bh > h2 or (t > 1 and elems < 256):
                continue
            for warps in (1, 2, 4, 8):
                per_thread = elems // (32 * warps)
                shards = n if kernel == "merge" else 1
                if 4 <= per_thread <= 64 and shards * per_thread * dtype_bytes <= 256:
                    out.append(KernelConfig(bh, bd, warps,
                                            pdl=_programs(t, h, d, bh, bd) <= 4 * 132))

    def distance(c: KernelConfig) -> float:
        return abs(math.log2(c.block_h * c.block_d / (dflt.block_h * dflt.block_d))) \
            + 0.5 * abs(math.log2(c.num_warps / dflt.num_warps)) \
            + 0.25 * abs(math.log2(c.block_d / dflt.block_d))
    ranked = sorted(set(out) - {dflt}, key=distance)
    return [dflt, *ranked[: _MAX_CANDIDATES - 1]]


def _target_calls(kernel: str, shape: Shape, layout: str, dtype: torch.dtype,
                  cfg: KernelConfig, sets: list[tuple[Any, ...]]) -> list[Callable[[], object]]:
    if kernel == "pack":
        return [functools.partial(pack_a2a, o, lse, send, o_bytes=b, config=cfg)
                for o, lse, send, b in sets]
    if kernel == "merge":
        return [functools.partial(merge, o, lse, base="2", out=out, lse_out=z, config=cfg)
                for o, lse, out, z in sets]
    return [functools.partial(rescale, o[0], lse, 0, base="2", out=out, lse_out=z, config=cfg)
            for o, lse, out, z in sets]


def sweep_targets(dtype: torch.dtype, budget_s: float, out_dir: Path | None) -> int:
    """Tiles for ``TARGETS`` in one bounded run: each shape gets an equal share of what is left
    of ``budget_s`` (candidates nearest the default first), so every shape is measured even when
    compiles are slow. Prints, per shape, the default and the best tile with % of copy
    bandwidth, and writes ``sweep-targets.{md,json}`` to ``out_dir``."""
    started = time.monotonic()
    bw = copy_bandwidth()
    s = torch.finfo(dtype).bits // 8
    table = Table(title=f"targeted tile sweep ({dtype}, base 2, CUDA-graph µs per launch, L2-cold;"
                        f" copy bandwidth {bw:.0f} GB/s)")
    for col in ("kernel", "N,T,H,D", "LSE", "default", "µs", "% BW", "best", "µs ", "% BW ",
                "gain", "tried"):
        table.add_column(col)
    records = []
    for i, (kernel, shape, layout) in enumerate(TARGETS):
        shape = sized(shape)
        n, t, h, d = shape
        nbytes = BYTES[kernel](n, t, h, d, s)
        copies = copies_for_cold_l2(nbytes, t)
        sets: list[tuple[Any, ...]] = pack_sets(shape, dtype, copies, DEVICE) \
            if kernel == "pack" else _input_sets(shape, dtype, copies, layout)
        share = (budget_s - (time.monotonic() - started)) / (len(TARGETS) - i)
        shape_start = time.monotonic()
        results: dict[KernelConfig, float] = {}
        for cfg in target_candidates(kernel, n, t, h, d, s):
            if results and time.monotonic() - shape_start > share:
                break
            results[cfg] = graph_per_launch(_target_calls(kernel, shape, layout, dtype, cfg, sets),
                                            launches=20, replays=7)
        del sets
        dflt = default_config(n, t, h, d, kernel)
        best = min(results, key=results.__getitem__)
        pct = {c: 100 * nbytes / (us * 1e-6) / 1e9 / bw for c, us in results.items()}
        table.add_row(kernel, ",".join(map(str, shape)), "[H,T]" if layout == "ht" else "[T,H]",
                      _cfg_text(dflt), f"{results[dflt]:.2f}", f"{pct[dflt]:.1f}", _cfg_text(best),
                      f"{results[best]:.2f}", f"{pct[best]:.1f}",
                      f"{results[dflt] / results[best]:.2f}x", str(len(results)))
        records.append({"kernel": kernel, "shape": shape, "lse_layout": layout, "bytes": nbytes,
                        "default": asdict(dflt), "best": asdict(best),
                        "results": [asdict(c) | {"us": us, "pct_copy_bw": pct[c]}
                                    for c, us in sorted(results.items(), key=lambda kv: kv[1])]})
        print(json.dumps(records[-1]["results"][0] | {"kernel": kernel, "shape": shape}),
              flush=True)
    console = Console(width=220)
    console.print(table)
    winners = [f"{r['kernel']} {tuple(r['shape'])}: best {_cfg_text(KernelConfig(**r['best']))}"
               f" ({r['results'][0]['pct_copy_bw']:.1f} %)" for r in records]
    console.print("winners:\n  " + "\n  ".join(winners))
    elapsed = time.monotonic() - started
    console.print(f"sweep took {elapsed:.0f} s (budget {budget_s:.0f} s)")
    if out_dir is not None:
        md = Console(record=True, width=220, file=open(os.devnull, "w"))  # noqa: SIM115
        md.print(table)
        meta = environment() | {"copy_bandwidth_gbps": bw, "dtype": str(dtype),
                                "seconds": elapsed}
        write_results(out_dir, "sweep-targets",
                      f"# Targeted tile sweep: {meta['device']}\n\nCommand: `{meta['command']}`\n\n"
                      f"```\n{md.export_text()}```\n\nWinners:\n\n"
                      + "\n".join(f"- {w}" for w in winners) + "\n",
                      {"meta": meta, "shapes": records})
    return 0


def _cfg_text(c: KernelConfig) -> str:
    return f"{c.block_h}x{c.block_d} w{c.num_warps}{' pdl' if c.pdl else ''}"


def flush_study(dtype: torch.dtype, bw: float) -> Table:
    """Why ``do_bench`` cannot reach the 1 GiB copy bandwidth at 50-300 MB: its flush writes
    256 MB, leaving L2 full of dirty lines whose write-back competes with the timed kernel. The
    same loop with a read-only flush (L2 as cold, nothing dirty) isolates that cost."""
    cache = torch.empty((1 << 20 if is_dry_run() else 256 * 1024 * 1024) // 4, dtype=torch.int32,
                        device=DEVICE)
    flushes = {"zero_ (do_bench)": cache.zero_, "read-only": lambda: cache.view(torch.float32).sum()}
    table = Table(title="timer study: the same call after each flush (median µs, % of copy BW)")
    for col in ("call", "N,T,H,D", "MB", "graph", *flushes):
        table.add_column(col, justify="left" if col == "call" else "right")
    s = torch.finfo(dtype).bits // 8
    for kernel, measured in (("merge", (8, 2048, 32, 128)), ("merge", (8, 256, 128, 512)),
                             ("rescale", (8, 256, 128, 512))):
        shape = sized(measured)
        n, t, h, d = shape
        nbytes = BYTES[kernel](n, t, h, d, s)
        plan = plan_combine(_record_for(d, "2"), mode="merge" if kernel == "merge" else "ar",
                            world_size=n, num_heads=h, head_dim=d, out_dtype=dtype)
        sets = _input_sets(shape, dtype, copies_for_cold_l2(nbytes, t))
        calls = {f"attn-contracts {kernel}": [
            functools.partial(plan, o, lse, out=out) if kernel == "merge"
            else functools.partial(plan, o[0], lse, rank=0, out=out) for o, lse, out, _ in sets],
            "torch copy of the same bytes": copy_calls(nbytes, 1, DEVICE)}
        for name, fns in calls.items():
            us = [graph_per_launch(fns)] + [after_flush_us(fns[0], f) for f in flushes.values()]
            table.add_row(name, ",".join(map(str, shape)), f"{nbytes / 1e6:.1f}",
                          *[f"{u:.2f} ({100 * nbytes / (u * 1e-6) / 1e9 / bw:.0f} %)" for u in us])
    return table


def _pct(gbps: float | None, bw: float) -> str:
    return "-" if gbps is None else f"{100 * gbps / bw:.1f}"


def _shape_text(r: Row) -> str:
    return ",".join(map(str, r.shape)) + (" [H,T]" if r.lse_layout == "[H,T]" else "")


def render(rows: list[Row], bw: float) -> Table:
    table = Table(title=f"combine on {environment()['device']} (copy bandwidth {bw:.0f} GB/s)")
    cols = ("N,T,H,D", "base", "implementation", "MB moved", "graph µs", "graph % BW",
            "do_bench µs", "do_bench % BW")
    for col in cols:
        table.add_column(col, justify="left" if col == "implementation" else "right")
    for r in rows:
        table.add_row(_shape_text(r), r.base, r.impl, f"{r.bytes / 1e6:.2f}",
                      f"{r.graph_us:.2f}", _pct(r.gbps(r.graph_us), bw),
                      "-" if r.do_bench_us is None else f"{r.do_bench_us:.2f}",
                      _pct(r.gbps(r.do_bench_us), bw))
    return table


def option_costs(rows: list[Row]) -> list[str]:
    """Each option's graph time over the plain direct launch of the same shape and base (the
    masked kernel must stay within 3 %)."""
    plain = {(r.shape, r.base, r.lse_layout, r.impl.removesuffix(", direct")): r.graph_us
             for r in rows if r.impl.endswith(", direct")}
    lines = []
    for r in rows:
        for option in (", masked", ", sink", ", masked + sink"):
            if r.impl.endswith(option) and not r.impl.startswith("attn-contracts pack"):
                key = (r.shape, r.base, r.lse_layout, r.impl.removesuffix(option))
                if key in plain:
                    lines.append(f"{r.impl} {_shape_text(r)} base {r.base}: "
                                 f"{100 * (r.graph_us / plain[key] - 1):+.1f} %")
    pack = {r.shape: r.graph_us for r in rows if r.impl == "attn-contracts pack_a2a"}
    lines += [f"attn-contracts pack_a2a, masked {_shape_text(r)}: "
              f"{100 * (r.graph_us / pack[r.shape] - 1):+.1f} %"
              for r in rows if r.impl == "attn-contracts pack_a2a, masked" and r.shape in pack]
    return lines


_PLOTTED = ("attn-contracts merge", "attn-contracts rescale", "attn-contracts pack_a2a",
            "torch: two copies (dcp before)", "flashinfer merge_state", "flashinfer merge_states",
            "torch copy of the same bytes")


def plot(rows: list[Row], bw: float, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    picked = [r for r in rows if r.base in ("2", "-") and r.impl in _PLOTTED]
    keys = list(dict.fromkeys((_shape_text(r), r.impl.startswith(("attn-contracts pack",
                                                                    "torch: two")))
                              for r in picked))
    impls = [i for i in _PLOTTED if any(r.impl == i for r in picked)]
    fig, ax = plt.subplots(figsize=(15, 5))
    width = 0.8 / max(1, len(impls))
    for i, impl in enumerate(impls):
        ys = [next((100 * r.bytes / (r.graph_us * 1e-6) / 1e9 / bw for r in picked
                    if _shape_text(r) == k[0] and r.impl == impl
                    and r.impl.startswith(("attn-contracts pack", "torch: two")) == k[1]), 0.0)
              for k in keys]
        ax.bar([x + i * width for x in range(len(keys))], ys, width, label=impl)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(keys))],
                  [("pack " if p else "") + k for k, p in keys], rotation=30, ha="right",
                  fontsize=7)
    ax.set_xlabel("(N, T, H, D), bf16, base 2")
    ax.set_ylabel("% of copy bandwidth (CUDA-graph time)")
    ax.axhline(85, color="grey", ls="--", lw=0.8)
    ax.legend(fontsize=7)
    ax.set_title(f"DCP combine bandwidth on {environment()['device']} ({bw:.0f} GB/s copy)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    ap.add_argument("--bases", nargs="+", default=["2", "e"])
    ap.add_argument("--impls", nargs="+",
                    default=["merge", "rescale", "variants", "pack", "copy", "torch",
                             "flashinfer"],
                    help="'compile' (torch.compile of the reference) is left out by default: it "
                         "compiles once per shape, minutes in all")
    ap.add_argument("--shapes", nargs="+", default=None, help="N,T,H,D ...")
    ap.add_argument("--out", type=Path, default=None, help="folder for .md, .json and .png")
    ap.add_argument("--name", default="combine-h200")
    ap.add_argument("--sweep", choices=["merge", "rescale", "targets"], default=None,
                    help="tile sweep instead of the table: of one kernel over --shapes, or "
                         "'targets': the shapes behind a peer, bounded by --budget-s")
    ap.add_argument("--budget-s", type=float, default=300.0,
                    help="time for --sweep targets (every shape gets a share)")
    ap.add_argument("--no-study", action="store_true", help="skip the do_bench flush study")
    ap.add_argument("--dry-run", action="store_true",
                    help="run the code on the CPU at small shapes, untimed (a smoke test)")
    args = ap.parse_args(argv)
    global SHAPES, PACK_SHAPES, HEAD_TOKEN_SHAPES, DEVICE
    if args.dry_run:
        dry_run()
        DEVICE = "cpu"
    elif not torch.cuda.is_available():
        print("bench/combine.py needs a CUDA GPU (or --dry-run)", file=sys.stderr)
        return 2
    dtype = getattr(torch, args.dtype)
    if args.shapes:
        SHAPES = [tuple(int(x) for x in s.split(",")) for s in args.shapes]  # type: ignore[misc]
    if args.dry_run:
        SHAPES, PACK_SHAPES = [dry_shape(x) for x in SHAPES], [dry_shape(x) for x in PACK_SHAPES]
        HEAD_TOKEN_SHAPES = {dry_shape(x) for x in HEAD_TOKEN_SHAPES}
    if args.sweep == "targets":
        return sweep_targets(dtype, args.budget_s, args.out)
    if args.sweep:
        sweep(dtype, args.sweep)
        return 0
    started = time.monotonic()
    bw = copy_bandwidth()
    empty = torch.empty(128, device=DEVICE)
    empty_us = graph_per_launch(lambda: _empty_kernel[(1,)](empty, BLOCK=128)) \
        if uses_triton(empty) else math.nan
    rows: list[Row] = []
    impls = set(args.impls)
    for shape in SHAPES:
        for base in args.bases:
            rows += run_shape(shape, base, dtype, impls)
            if shape in HEAD_TOKEN_SHAPES:
                rows += run_shape(shape, base, dtype, impls & {"merge", "variants"}, layout="ht")
    if "pack" in impls:
        for shape in PACK_SHAPES:
            rows += pack_rows(shape, dtype)
    overhead = launch_overhead(dtype)
    study = None if args.no_study else flush_study(dtype, bw)
    console = Console(width=200)
    console.print(render(rows, bw))
    costs = option_costs(rows)
    console.print("options over the plain launch (graph time):\n  " + "\n  ".join(costs))
    if study is not None:
        console.print(study)
    console.print(f"an almost empty Triton kernel: {empty_us:.2f} µs per launch in a CUDA graph")
    host = "\n".join(f"  {name}: {us:.1f} µs" for name, us in overhead)
    console.print(f"host time per eager call (launch overhead):\n{host}")
    console.print(f"table took {time.monotonic() - started:.0f} s")
    if args.out:
        meta = environment() | {"copy_bandwidth_gbps": bw, "empty_kernel_graph_us": empty_us,
                                "dtype": args.dtype, "host_us_per_call": dict(overhead)}
        md = Console(record=True, width=200, file=open(os.devnull, "w"))  # noqa: SIM115
        md.print(render(rows, bw))
        table_text = md.export_text()
        study_text = ""
        if study is not None:
            md.print(study)
            study_text = (f"{inspect.cleandoc(flush_study.__doc__ or '')}\n\n"
                          f"```\n{md.export_text()}```\n\n")
        cost_text = "\n".join(f"- {c}" for c in costs)
        write_results(args.out, args.name,
            f"# Combine benchmark: {meta['device']}\n\nCommand: `{meta['command']}`\n\n"
            f"torch {meta['torch']}, triton {meta['triton']}, {args.dtype}; copy bandwidth "
            f"{bw:.0f} GB/s (read + write, 1 GiB copy); almost empty Triton kernel "
            f"{empty_us:.2f} µs per launch in a CUDA graph.\n\n"
            "`graph`: per launch in a CUDA graph of 100 launches (for T > 1 rotating over enough "
            "buffer sets to leave L2 cold); `do_bench`: median of `triton.testing.do_bench` "
            "(L2 flushed), which also counts host launch gaps when they exceed the GPU time. "
            "One-token plans use PDL (a consecutive launch overlaps its launch latency with the "
            "kernel before it, then waits for it); the `PDL off` rows show the same plan without. "
            "`direct`, `masked`, `sink`: the same kernel and tiles called through `merge`/"
            "`rescale` without and with a row mask (20 % of rows empty) or a sink. "
            "`torch copy of the same bytes`: a plain device copy of as many bytes, the ceiling "
            "of a streaming kernel at that size under the same timer (do_bench's L2 flush leaves "
            "dirty lines whose write-back competes with the measured kernel).\n\n"
            f"```\n{table_text}```\n\nOptions over the plain launch:\n\n{cost_text}\n\n"
            f"{study_text}Host time per eager call:\n\n{host}\n",
            {"meta": meta, "rows": [asdict(r) | {
                "graph_fraction": r.bytes / (r.graph_us * 1e-6) / 1e9 / bw,
                "do_bench_fraction": None if r.do_bench_us is None else
                r.bytes / (r.do_bench_us * 1e-6) / 1e9 / bw} for r in rows]})
        plot(rows, bw, args.out / f"{args.name}.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
