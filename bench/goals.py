"""Issue 22's goals on one GPU, each beside its peer measured in the same run.

    python bench/goals.py --vllm DIR --out DIR                  # goals-h200.{md,json}
    python bench/goals.py --vllm DIR --experiments --out DIR    # the kernel A/B behind them
    python bench/goals.py --dry-run                             # the code path on a CPU, untimed

Peers: FlashInfer ``merge_state``/``merge_states`` (imported if installed) and vLLM 0.33's Triton
combine kernels (``_dcp_a2a_unpack_combine_kernel``, ``CorrectAttnCPOutKernel.kernel``,
``_dcp_a2a_pack_send_kernel``). vLLM is not a dependency: ``--vllm DIR`` names a folder holding
``vllm/v1/attention/ops/dcp.py`` as the released wheel has it; only its ``@triton.jit`` functions are
taken (parsed with ``ast`` and written beside it as ``_vllm_dcp_kernels.py``), and they are launched
here the way vLLM's wrappers launch them (grid, arguments, default warps). No vLLM or FlashInfer code
is part of this repository.

Timer: per launch in a CUDA graph of 100 launches, rotating over enough buffer sets to leave L2 cold
for T > 1 (``_timing.graph_per_launch``); each implementation is timed twice, interleaved with its
peer, and the better of its two medians kept (``_timing.best_of_rounds``). One-token rows report
µs; the others % of the copy bandwidth (a 1 GiB device copy). "copy" rows: a device copy of the
same bytes under the same timer, L2-cold, the ceiling of any kernel that streams those bytes once.
FlashInfer's merges allocate their outputs (in a graph: from its pool, one L2-warm buffer reused
by every launch), so beside them this project's merge is timed allocating too (like for like) and
into rotated ``out=`` buffers. Host time per eager call: median of 2,000 rounds after 50 warm-up
rounds, each round one call of every implementation (interleaved, ``time.perf_counter_ns``), the
GPU caught up every 50 rounds outside the timing (``_timing.host_medians``).

``--dry-run`` runs every goal's code on the CPU at small shapes (``_inputs.dry_shape``), each call
once and untimed (``_timing.dry_run``), and writes nothing unless ``--out`` is given: a smoke test
of this script, not a measurement. The combine's calls take its torch path there, and the bare
Triton launch is left out, unless ``TRITON_INTERPRET=1`` runs the kernels in the interpreter.
"""

from __future__ import annotations

import argparse
import ast
import functools
import importlib.util
import json
import math
import os
import sys
import textwrap
import time
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _timing, also under PYTHONSAFEPATH=1
from _inputs import BYTES
from _inputs import Shape
from _inputs import bench_record
from _inputs import input_sets
from _inputs import pack_sets
from _inputs import row_mask
from _inputs import sized
from _inputs import world_of_one
from _timing import best_of_rounds
from _timing import copies_for_cold_l2
from _timing import copy_bandwidth
from _timing import copy_calls
from _timing import dry_run
from _timing import environment
from _timing import host_medians
from _timing import write_results

from attn_contracts.combine import merge
from attn_contracts.combine import pack_a2a
from attn_contracts.combine import plan_combine
from attn_contracts.combine import rescale
from attn_contracts.combine.reference import merge_reference
from attn_contracts.combine.reference import rescale_reference
from attn_contracts.combine.workspace import a2a_piece_bytes

DEVICE = "cuda"  # a dry run sets "cpu"
DTYPE = torch.bfloat16
S = 2  # bytes per element of DTYPE


# --- peers ------------------------------------------------------------------------------------------
def load_vllm(root: Path | None) -> Any:
    """vLLM's DCP Triton kernels from ``root/vllm/v1/attention/ops/dcp.py`` (None if absent)."""
    if root is None:
        return None
    src_path = root / "vllm" / "v1" / "attention" / "ops" / "dcp.py"
    if not src_path.exists():
        print(f"no {src_path}: vLLM peers left out", file=sys.stderr)
        return None
    text = src_path.read_text()
    tree = ast.parse(text)
    parts = ["import triton\nimport triton.language as tl\n"]

    def jitted(fn: ast.FunctionDef) -> bool:
        return any(ast.unparse(d) in ("triton.jit", "jit") for d in fn.decorator_list)

    for node in tree.body:
        fns: list[tuple[str, ast.FunctionDef]] = []
        if isinstance(node, ast.FunctionDef) and jitted(node):
            fns.append((node.name, node))
        elif isinstance(node, ast.ClassDef):
            fns += [(f"{node.name}_{f.name}", f) for f in node.body
                    if isinstance(f, ast.FunctionDef) and jitted(f)]
        for name, fn in fns:
            fn.decorator_list = [ast.parse("triton.jit").body[0].value]  # type: ignore[attr-defined]
            fn.name = name
            parts.append(textwrap.dedent(ast.unparse(fn)))
    out = root / "_vllm_dcp_kernels.py"
    out.write_text("\n\n".join(parts) + "\n")
    spec = importlib.util.spec_from_file_location("_vllm_dcp_kernels", out)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def vllm_recv(o: torch.Tensor, lse: torch.Tensor) -> torch.Tensor:
    """vLLM's a2a receive buffer ``[N, T, H, D + 2]``: O, then the fp32 LSE bits as two halves."""
    n, t, h, d = o.shape
    recv = torch.empty(n, t, h, d + 2, device=o.device, dtype=o.dtype)
    recv[..., :d] = o
    recv[..., d:] = lse.contiguous().view(o.dtype).view(n, t, h, 2)
    return recv


def vllm_merge_call(k: Any, recv: torch.Tensor, out: torch.Tensor,
                    lse_out: torch.Tensor) -> Callable[[], None]:
    """``_dcp_a2a_unpack_combine`` as vLLM launches it (grid ``(T, H/N)``, default warps)."""
    n, t, h, dp2 = recv.shape
    kernel = k._dcp_a2a_unpack_combine_kernel
    args = (recv, out, lse_out, *recv.stride(), *out.stride(), *lse_out.stride())

    def run() -> None:
        kernel[(t, h, 1)](*args, N=n, HEAD_DIM=dp2 - 2, IS_BASE_E=False, RETURN_LSE=True,
                          LSE_PACK_DIM=2)
    return run


def vllm_rescale_call(k: Any, o: torch.Tensor, lses: torch.Tensor,
                      vlse: torch.Tensor) -> Callable[[], None]:
    """``CorrectAttnCPOutKernel`` (in place, as ``correct_attn_out`` calls it), grid ``(T, H)``."""
    t, h, d = o.shape
    kernel = k.CorrectAttnCPOutKernel_kernel
    args = (o, o, lses, vlse, *o.stride(), *lses.stride(), 0)

    def run() -> None:
        kernel[(t, h, 1)](*args, HEAD_DIM=d, N_ROUNDED=lses.shape[0], IS_BASE_E=False)
    return run


def vllm_pack_call(k: Any, o: torch.Tensor, lse: torch.Tensor,
                   send: torch.Tensor) -> Callable[[], None]:
    """``_dcp_a2a_pack_send`` without a mask: ``send [N, T, H/N, D + 2]``, grid ``(T, H/N)``."""
    t, h, d = o.shape
    n = send.shape[0]
    kernel = k._dcp_a2a_pack_send_kernel
    args = (o, lse, send, None, None, 0, *o.stride(), *lse.stride(), *send.stride())

    def run() -> None:
        kernel[(t, h // n, 1)](*args, N=n, HEAD_DIM=d, H_PER_RANK=h // n, LSE_PACK_DIM=2,
                               HAS_MASK=False, NUM_SEQS_POW2=1)
    return run


def flashinfer() -> Any:
    try:
        import flashinfer as fi
    except ImportError:
        return None
    return fi


# --- inputs ------------------------------------------------------------------------------------------
def inputs(shape: Shape, copies: int, layout: str = "ntHd") -> list[tuple[torch.Tensor, ...]]:
    """``copies`` sets of (partials, LSE, out, lse_out) in this table's dtype and device."""
    return input_sets(shape, DTYPE, copies, DEVICE, layout)


@functools.cache
def record(d: int) -> Any:
    return bench_record(d, "2", "goals")


def merge_plan(shape: Shape) -> Any:
    n, _, h, d = shape
    return plan_combine(record(d), mode="merge", world_size=n, num_heads=h, head_dim=d,
                        out_dtype=DTYPE, return_lse=True)


def rescale_plan(shape: Shape) -> Any:
    n, _, h, d = shape
    return plan_combine(record(d), mode="ag_rs" if h % n == 0 else "ar", world_size=n,
                        num_heads=h, head_dim=d, out_dtype=DTYPE, return_lse=True)


# --- the committed table: no row may regress against it ---------------------------------------------
COMMITTED = Path(__file__).resolve().parent / "results" / "combine-h200.json"


@functools.cache
def _committed() -> dict[tuple[tuple[int, ...], str], float]:
    if not COMMITTED.exists():
        return {}
    rows = json.loads(COMMITTED.read_text())["rows"]
    return {(tuple(r["shape"]), r["impl"]): r["graph_us"] for r in rows
            if r["lse_layout"] == "[T,H]" and r["base"] in ("2", "-")}


def committed_note(shape: tuple[int, ...], impl: str, us: float) -> tuple[str, bool]:
    """``committed X µs`` (the same implementation and shape in ``combine-h200.json``) and
    whether this run is within 3 % of it or faster (False: a regression)."""
    old = _committed().get((tuple(shape), impl))
    if old is None:
        return "", True
    ok = us <= old * 1.03
    return f"committed {old:.2f} µs{'' if ok else ' (REGRESSION)'}", ok


# --- the goals ------------------------------------------------------------------------------------
@dataclass
class Goal:
    what: str
    shape: tuple[int, ...]
    ours: str
    peer: str
    goal: str
    met: bool
    note: str = ""
    raw: dict[str, float] = field(default_factory=dict)
    regressed: bool = False

    def against(self, impl: str, us: float) -> Goal:
        """Adds the committed table's value of ``impl`` at this shape to the note."""
        text, ok = committed_note(self.shape, impl, us)
        self.note = "; ".join(x for x in (self.note, text) if x)
        self.regressed = self.regressed or not ok
        return self


def pct(nbytes: int, us: float, bw: float) -> float:
    return 100 * nbytes / (us * 1e-6) / 1e9 / bw


def merge_fns(shape: Shape, sets: list[tuple[torch.Tensor, ...]]
              ) -> list[Callable[[], object]]:
    plan = merge_plan(shape)
    o, lse, out, z = sets[0]
    plan(o, lse, out=out, lse_out=z)
    torch.testing.assert_close(out.double(), merge_reference(o, lse, base="2")[0], atol=2e-2,
                               rtol=2e-2)
    return [functools.partial(plan, o, lse, out=out, lse_out=z) for o, lse, out, z in sets]


def goal_merge_vs_flashinfer(shape: Shape, bw: float, fi: Any) -> Goal:
    shape = sized(shape)
    n, t = shape[:2]
    nbytes = BYTES["merge"](*shape, S)
    copies = copies_for_cold_l2(nbytes, t)
    fns = {"ours": merge_fns(shape, inputs(shape, copies))}
    # like for like: FlashInfer's call allocates its outputs (in a graph, from the graph's pool:
    # every launch writes the same, L2-warm buffer); so does this call
    fns["ours, allocating"] = [functools.partial(merge, o, lse, base="2", return_lse=True)
                               for o, lse, _, _ in inputs(shape, copies)]
    if fi is not None:
        if n == 2:
            fns["peer"] = [functools.partial(fi.merge_state, o[0], lse[0], o[1], lse[1])
                           for o, lse, _, _ in inputs(shape, copies)]
        else:
            fns["peer"] = [functools.partial(fi.merge_states, o, lse)
                           for o, lse, _, _ in inputs(shape, copies, "tnhd")]
    fns["copy"] = copy_calls(nbytes, copies, DEVICE)
    us = best_of_rounds(fns)
    ours, copy = pct(nbytes, us["ours"], bw), pct(nbytes, us["copy"], bw)
    alloc = pct(nbytes, us["ours, allocating"], bw)
    peer = pct(nbytes, us["peer"], bw) if "peer" in us else float("nan")
    name = "FlashInfer " + ("merge_state" if n == 2 else "merge_states")
    return Goal(f"{'2-way ' if n == 2 else ''}merge", shape,
                f"{alloc:.1f} % ({us['ours, allocating']:.2f} µs) allocating its outputs as the "
                f"peer does; {ours:.1f} % ({us['ours']:.2f} µs) into rotated out=",
                f"{name} {peer:.1f} % ({us.get('peer', float('nan')):.2f} µs)",
                "≥ FlashInfer", alloc >= peer, f"copy of the same bytes {copy:.1f} %",
                us).against("attn-contracts merge", us["ours"])


def goal_merge_pct(shape: Shape, bw: float, vk: Any, target: float,
                   label: str = "merge") -> Goal:
    shape = sized(shape)
    t = shape[1]
    nbytes = BYTES["merge"](*shape, S)
    copies = copies_for_cold_l2(nbytes, t)
    fns = {"ours": merge_fns(shape, inputs(shape, copies))}
    if vk is not None:
        fns["peer"] = [vllm_merge_call(vk, vllm_recv(o, lse), out, z)
                       for o, lse, out, z in inputs(shape, copies)]
    fns["copy"] = copy_calls(nbytes, copies, DEVICE)
    us = best_of_rounds(fns)
    ours, copy = pct(nbytes, us["ours"], bw), pct(nbytes, us["copy"], bw)
    peer = f"vLLM {pct(nbytes, us['peer'], bw):.1f} %" if "peer" in us else "-"
    return Goal(label, shape, f"{ours:.1f} % ({us['ours']:.2f} µs)", peer, f"≥ {target:g} %",
                ours >= target, f"copy of the same bytes {copy:.1f} %",
                us).against("attn-contracts merge", us["ours"])


def goal_one_token(shape: Shape, vk: Any, target_us: float) -> Goal:
    shape = sized(shape)
    fns = {"ours": merge_fns(shape, inputs(shape, 1))}
    if vk is not None:
        fns["peer"] = [vllm_merge_call(vk, vllm_recv(o, lse), out, z)
                       for o, lse, out, z in inputs(shape, 1)]
    us = best_of_rounds(fns, rounds=3)
    peer = f"vLLM {us['peer']:.2f} µs" if "peer" in us else "-"
    return Goal("merge, one token", shape, f"{us['ours']:.2f} µs", peer, f"≤ {target_us:g} µs",
                us["ours"] <= target_us, "", us).against("attn-contracts merge", us["ours"])


def goal_rescale(shape: Shape, bw: float, vk: Any, target: float) -> Goal:
    shape = sized(shape)
    t = shape[1]
    nbytes = BYTES["rescale"](*shape, S)
    copies = copies_for_cold_l2(nbytes, t)
    plan = rescale_plan(shape)
    sets = inputs(shape, copies)
    o, lse, out, z = sets[0]
    plan(o[0], lse, rank=0, out=out, lse_out=z)
    torch.testing.assert_close(out.double(), rescale_reference(o[0], lse, 0, base="2")[0],
                               atol=2e-2, rtol=2e-2)
    fns = {"ours": [functools.partial(plan, o[0], lse, rank=0, out=out, lse_out=z)
                    for o, lse, out, z in sets]}
    if vk is not None:
        fns["peer"] = [vllm_rescale_call(vk, o[0].clone(), lse, z) for o, lse, _, z in sets]
    fns["copy"] = copy_calls(nbytes, copies, DEVICE)
    us = best_of_rounds(fns)
    ours, copy = pct(nbytes, us["ours"], bw), pct(nbytes, us["copy"], bw)
    peer = f"vLLM {pct(nbytes, us['peer'], bw):.1f} %" if "peer" in us else "-"
    return Goal("rescale", shape, f"{ours:.1f} % ({us['ours']:.2f} µs)", peer, f"≥ {target:g} %",
                ours >= target, f"copy of the same bytes {copy:.1f} %",
                us).against("attn-contracts rescale", us["ours"])


def goal_pack(shape: Shape, bw: float, vk: Any, target: float) -> Goal:
    shape = sized(shape)
    n, t, h, d = shape
    nbytes = BYTES["pack"](*shape, S)
    copies = copies_for_cold_l2(nbytes, t)
    sets = pack_sets(shape, DTYPE, copies, DEVICE)
    fns = {"ours": [functools.partial(pack_a2a, o, lse, send, o_bytes=o_bytes)
                    for o, lse, send, o_bytes in sets]}
    if vk is not None:
        fns["peer"] = [vllm_pack_call(vk, o, lse, torch.empty(n, t, h // n, d + 2, device=DEVICE,
                                                               dtype=DTYPE))
                       for o, lse, _, _ in sets]
    fns["copy"] = copy_calls(nbytes, copies, DEVICE)
    us = best_of_rounds(fns)
    ours, copy = pct(nbytes, us["ours"], bw), pct(nbytes, us["copy"], bw)
    peer = f"vLLM {pct(nbytes, us['peer'], bw):.1f} %" if "peer" in us else "-"
    return Goal("a2a send pack", shape, f"{ours:.1f} % ({us['ours']:.2f} µs)", peer,
                f"≥ {target:g} %", ours >= target, f"copy of the same bytes {copy:.1f} %",
                us).against("attn-contracts pack_a2a", us["ours"])


def goal_mask(shape: Shape, kernel: str = "merge") -> Goal:
    """The row mask's cost: the same call (default tiles) with and without ``row_mask`` (each
    rotated set its own ``[N, T]`` mask, L2-cold like the partials: the goal's row). The note adds
    two ways of passing the mask, timed in the same rounds: one mask for every set (L2-warm, as an
    engine's per-step mask is when every layer reads it), and each set's mask a ``[T, N]`` buffer
    viewed as ``[N, T]`` (a row's entries adjacent: one load per program, ``MASK_WORD``)."""
    shape = sized(shape)
    n, t = shape[:2]
    nbytes = BYTES[kernel](*shape, S)
    sets = inputs(shape, copies_for_cold_l2(nbytes, t))
    masks = {"masked": [row_mask((n, t), DEVICE, seed=i) for i in range(len(sets))]}
    masks["warm"] = [masks["masked"][0]] * len(sets)
    word = n in (2, 4, 8) and t > 1  # where a [T, N] mask reads differently (one word a row)
    if word:
        masks["tn"] = [m.t().contiguous().t() for m in masks["masked"]]

    def calls(kind: str | None) -> list[Callable[[], object]]:
        ms = masks[kind] if kind else [None] * len(sets)
        if kernel == "merge":
            return [functools.partial(merge, o, lse, base="2", out=out, lse_out=z, row_mask=m)
                    for (o, lse, out, z), m in zip(sets, ms, strict=True)]
        return [functools.partial(rescale, o[0], lse, 0, base="2", out=out, lse_out=z,
                                  row_mask=m)
                for (o, lse, out, z), m in zip(sets, ms, strict=True)]
    us = best_of_rounds({"plain": calls(None), **{k: calls(k) for k in masks}}, rounds=3)

    def cost(kind: str) -> float:
        return 100 * (us[kind] / us["plain"] - 1)
    note = (f"L2-warm mask {cost('warm'):+.1f} %" + ("; [T, N] mask viewed as [N, T] "
            f"{cost('tn'):+.1f} %" if word else ""))
    return Goal(f"{kernel}, row mask's cost", shape,
                f"{cost('masked'):+.1f} % ({us['masked']:.2f} vs {us['plain']:.2f} µs)", "-",
                "≤ 3 %", cost("masked") <= 3.0, note, us).against(
                    f"attn-contracts {kernel}, masked", us["masked"])


# --- eager host time --------------------------------------------------------------------------------
def eager_goals(vk: Any) -> list[Goal]:
    import triton

    from attn_contracts.combine import _kernels
    from attn_contracts.combine import dcp_combine
    from attn_contracts.combine import fastpath
    from attn_contracts.combine.ops import default_config
    from attn_contracts.combine.ops import launch_grid
    from attn_contracts.combine.ops import uses_triton

    shape = sized((4, 1, 128, 512))
    n, t, h, d = shape
    o, lse, out, z = inputs(shape, 1)[0]
    plan = merge_plan(shape)
    plan_r = rescale_plan(shape)
    o_bytes, piece = a2a_piece_bytes(t, h // n, d, S)
    send = torch.empty(n, piece, dtype=torch.uint8, device=DEVICE)
    cfg = default_config(n, t, h, d)
    dummy = lse
    bare_args = (o, lse, out, z, dummy, dummy, t, h, d, 1, 1, *o.stride(), lse.stride(0),
                 lse.stride(1), 0, lse.stride(2), *out.stride(), *z.stride(), 0, 0, 0)
    grid = launch_grid(t, h, d, cfg.block_h, cfg.block_d)

    def bare_merge() -> None:
        _kernels.merge_kernel[grid](*bare_args, N=n, IN_SCALE=1.0, OUT_SCALE=1.0, WRITE_LSE=True,
                                    HAS_MASK=False, MASK_WORD=0, HAS_SINK=False, SINK_SCALE=1.0,
                                    BLOCK_H=cfg.block_h, BLOCK_D=cfg.block_d,
                                    NUM_DB=triton.cdiv(d, cfg.block_d), PDL=0,
                                    num_warps=cfg.num_warps)

    fns: dict[str, Callable[[], object]] = {
        "merge: plan(o, lse, out=, lse_out=)": functools.partial(plan, o, lse, out=out, lse_out=z),
        "merge(o, lse, base=, out=, lse_out=)": functools.partial(merge, o, lse, base="2", out=out,
                                                                  lse_out=z),
        "rescale(o, lse, rank, base=, out=, lse_out=)": functools.partial(
            rescale, o[0], lse, 0, base="2", out=out, lse_out=z),
        "rescale: plan(o, lse, rank=, out=, lse_out=)": functools.partial(
            plan_r, o[0], lse, rank=0, out=out, lse_out=z),
        "pack_a2a(o, lse, send, o_bytes=)": functools.partial(pack_a2a, o[0], lse[0], send,
                                                              o_bytes=o_bytes),
    }
    if uses_triton(o):  # a dry run without the interpreter has no Triton launch to time
        fns["this project's merge_kernel[grid]() (bare Triton launch)"] = bare_merge
    group = _world_of_one_group()
    if group is not None:
        plan_a2a = plan_combine(record(d), mode="a2a", world_size=1, num_heads=h, head_dim=d,
                                out_dtype=DTYPE)
        keep = torch.ones(t, dtype=torch.bool, device=DEVICE)
        fns["dcp_combine(a2a, world size 1)"] = functools.partial(
            dcp_combine, plan_a2a, o[0], lse[0], group)
        fns["dcp_combine(a2a, world size 1, row_mask=)"] = functools.partial(
            dcp_combine, plan_a2a, o[0], lse[0], group, row_mask=keep)
    if vk is not None:
        fns["vLLM unpack_combine kernel[grid]()"] = vllm_merge_call(vk, vllm_recv(o, lse), out, z)
        fns["vLLM correct_attn_out kernel[grid]()"] = vllm_rescale_call(vk, o[0].clone(), lse, z)
        fns["vLLM pack_send kernel[grid]()"] = vllm_pack_call(
            vk, o[0], lse[0], torch.empty(n, t, h // n, d + 2, device=DEVICE, dtype=DTYPE))
    # the pieces of the fast path, for the record: the compiled kernel's launch alone, the key
    key = fastpath.combine_key("merge", o, lse, None, "2", {"out": out, "lse_out": z})
    timed = host_medians(fns)
    fast = fastpath.OPS.get(key)  # made by the merge(o, lse, base=, out=, lse_out=) calls above
    if fast is not None:
        sig = fastpath.sig
        timed |= host_medians({
            "(part) the decided launch alone (launch.Prepared)": functools.partial(
                fast.prepared, o, lse, out, z, lse, lse),
            "(part) merge's key: 7 tensors' shape, strides, dtype, device, alignment": lambda: (
                sig(o), sig(lse), sig(out), sig(z), sig(None), sig(None), sig(None)),
            "(part) torch.compiler.is_compiling()": torch.compiler.is_compiling,
        })
    print("host µs per eager call (median of 2000, interleaved):")
    for name, us in timed.items():
        print(f"  {name}: {us:.1f}")
    bare = timed.get("this project's merge_kernel[grid]() (bare Triton launch)", math.nan)
    rows = [("merge: plan(o, lse, out=, lse_out=)", "vLLM unpack_combine kernel[grid]()"),
            ("merge(o, lse, base=, out=, lse_out=)", "vLLM unpack_combine kernel[grid]()"),
            ("rescale(o, lse, rank, base=, out=, lse_out=)", "vLLM correct_attn_out kernel[grid]()"),
            ("rescale: plan(o, lse, rank=, out=, lse_out=)", "vLLM correct_attn_out kernel[grid]()"),
            ("pack_a2a(o, lse, send, o_bytes=)", "vLLM pack_send kernel[grid]()"),
            ("dcp_combine(a2a, world size 1)", None),
            ("dcp_combine(a2a, world size 1, row_mask=)", None)]
    goals = []
    for ours, peer in rows:
        if ours not in timed:
            continue
        a = timed[ours]
        b = timed.get(peer, float("nan")) if peer else float("nan")
        limit = min((x for x in (b, bare) if x == x), default=math.nan)
        goals.append(Goal("host µs per eager call", shape, f"{ours}: {a:.1f} µs",
                          (f"{peer}: {b:.1f} µs; " if peer else "")
                          + f"this project's merge_kernel[grid](): {bare:.1f} µs",
                          "≤ a bare Triton launch", a <= limit, "", dict(timed)))
    return goals


def _world_of_one_group() -> Any:
    """A process group of this process alone: NCCL on the GPU, gloo in a dry run (None where
    there is none: those rows are left out)."""
    try:
        return world_of_one("nccl" if DEVICE == "cuda" else "gloo")
    except Exception as err:
        print(f"no world-of-one process group: {err}", file=sys.stderr)
        return None


# --- the table ----------------------------------------------------------------------------------------
def run_goals(vk: Any, only: set[str] | None = None) -> tuple[list[Goal], float]:
    bw = copy_bandwidth()
    fi = flashinfer()
    goals: list[Goal] = []

    def want(tag: str) -> bool:
        return only is None or tag in only

    if want("peers"):
        goals.append(goal_merge_vs_flashinfer((4, 512, 32, 128), bw, fi))
        goals.append(goal_merge_vs_flashinfer((2, 4096, 8, 128), bw, fi))
        goals.append(goal_merge_vs_flashinfer((2, 1024, 8, 256), bw, fi))
        goals.append(goal_merge_pct((4, 32, 128, 512), bw, vk, 75))
        goals.append(goal_rescale((4, 256, 128, 512), bw, vk, 90))
        goals.append(goal_rescale((8, 2048, 32, 128), bw, vk, 90))
        goals.append(goal_one_token((4, 1, 128, 512), vk, 1.1))
        goals.append(goal_one_token((8, 1, 16, 512), vk, 1.1))
    if want("mask"):
        for shape in ((4, 1, 128, 512), (8, 1, 16, 512), (4, 32, 128, 512), (8, 256, 128, 512),
                      (4, 512, 32, 128), (8, 2048, 32, 128), (2, 4096, 8, 128), (2, 1024, 8, 256),
                      (2, 16384, 32, 128)):
            goals.append(goal_mask(shape))
        for shape in ((4, 1, 128, 512), (4, 256, 128, 512), (8, 2048, 32, 128)):
            goals.append(goal_mask(shape, "rescale"))
    if want("eager"):
        goals += eager_goals(vk)
    if want("kept"):
        goals.append(goal_merge_pct((8, 256, 128, 512), bw, vk, 98))
        goals.append(goal_merge_pct((8, 2048, 32, 128), bw, vk, 96))
        goals.append(goal_merge_vs_flashinfer((2, 16384, 32, 128), bw, fi))
        goals.append(goal_pack((4, 256, 128, 512), bw, vk, 85))
    return goals, bw


def render(goals: list[Goal], committed: dict[str, float]) -> str:
    lines = ["| op | (N,T,H,D) | this project | peer, same run | goal | met | note |",
             "|---|---|---|---|---|---|---|"]
    for g in goals:
        lines.append(f"| {g.what} | {','.join(map(str, g.shape))} | {g.ours} | {g.peer} | "
                     f"{g.goal} | {'yes' if g.met else '**no**'} | {g.note} |")
    bad = [g for g in goals if g.regressed]
    lines.append("")
    lines.append("Against `bench/results/combine-h200.md` (same implementation and shape, 3 % "
                 "tolerance): " + (", ".join(f"{g.what} {g.shape}" for g in bad) + " regressed"
                                   if bad else "no row regressed") + ".")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--vllm", type=Path, default=None,
                    help="folder holding vllm/v1/attention/ops/dcp.py (from the released wheel)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--name", default="goals-h200")
    ap.add_argument("--only", nargs="+", default=None, choices=["peers", "mask", "eager", "kept"])
    ap.add_argument("--experiments", action="store_true",
                    help="the kernel A/B (bench/goals_experiments.py) instead of the table")
    ap.add_argument("--dry-run", action="store_true",
                    help="run the table's code on the CPU at small shapes, untimed (a smoke test)")
    args = ap.parse_args(argv)
    if args.dry_run:
        if args.experiments:
            print("bench/goals.py: --dry-run runs the table, not --experiments", file=sys.stderr)
            return 2
        global DEVICE
        DEVICE = "cpu"
        dry_run()
    elif not torch.cuda.is_available():
        print("bench/goals.py needs a CUDA GPU (or --dry-run)", file=sys.stderr)
        return 2
    vk = load_vllm(args.vllm)
    if args.experiments:
        from goals_experiments import run_experiments

        return run_experiments(vk, args.out)
    started = time.monotonic()
    goals, bw = run_goals(vk, set(args.only) if args.only else None)
    table = render(goals, {})
    meta = environment(os.environ.get("GOALS_COMMAND")) | {
        "copy_bandwidth_gbps": bw, "seconds": time.monotonic() - started}
    text = (f"# Issue 22's goals: {meta['device']}\n\nCommand: `{meta['command']}`\n\n"
            f"torch {meta['torch']}, triton {meta['triton']}, bf16 outputs, fp32 LSE, base 2; copy "
            f"bandwidth {bw:.0f} GB/s. {inspect_doc()}\n\n{table}\n")
    print(table)
    if args.out:
        write_results(args.out, args.name, text,
                      {"meta": meta, "goals": [g.__dict__ for g in goals]})
    return 0


def inspect_doc() -> str:
    doc = (__doc__ or "").split("Timer:", 1)[1].split("``--dry-run``", 1)[0]
    return "Timer: " + " ".join(doc.split())


if __name__ == "__main__":
    sys.exit(main())
