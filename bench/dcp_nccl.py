"""Multi-GPU DCP on NCCL: correctness, rank consensus, speed against the bare collective, and a
FlashInfer end-to-end decode.

    torchrun --nproc-per-node N bench/dcp_nccl.py --out bench/results        # N GPUs, NCCL
    torchrun --nproc-per-node 2 bench/dcp_nccl.py --quick                    # CPU smoke test, gloo

1. ``ag_rs``, ``a2a`` and ``ar`` against the fp64 reference for MLA (H=128 and H=16, D=512) and
   GQA (H=32, D=128), T in {1, 32, 256, 2048}, both bases, with empty shards (−inf, +inf, NaN).
2. Rank consensus: the last rank declares a different base; every rank must fail with AC007.
3. Time per mode (median of CUDA-graph replays) beside the bare collective moving the same bytes.
4. FlashInfer ``BatchDecodeWithPagedKVCacheWrapper`` on each rank's KV shard (base-2 LSE),
   combined by the plan from its record, against single-GPU full attention.
NVLink multicast stays off (``NCCL_NVLS_ENABLE=0``, ``TORCH_SYMM_MEM_DISABLE_MULTICAST=1``).
"""

from __future__ import annotations

import functools
import math
import os
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
os.environ.setdefault("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1")

import torch  # imported after the NCCL environment above is set
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _timing, also under PYTHONSAFEPATH=1
from _inputs import bench_record
from _ranks import join_ranks
from _ranks import rank_args
from _timing import graph_per_launch
from _timing import wall_us
from _timing import write_results

from attn_contracts import CapabilityRecord
from attn_contracts import ContractError
from attn_contracts import get
from attn_contracts import validate_startup
from attn_contracts.combine import Workspace
from attn_contracts.combine import dcp_combine
from attn_contracts.combine import merge_reference
from attn_contracts.combine import plan_combine

SHAPES = {"MLA H=128": (128, 512), "MLA H=16": (16, 512), "GQA H=32": (32, 128)}
TOKENS = (1, 8, 32, 256, 2048)
EMPTY = (-math.inf, math.inf, math.nan)


@functools.cache
def record_for(d: int, base: str) -> CapabilityRecord:
    """FlashInfer's base and layout, empty rows −inf (the −inf/+inf/NaN shards below); the masked
    rows use FlashInfer's own records, whose empty rows are undefined."""
    record: CapabilityRecord = bench_record(d, base, "dcp_nccl")
    return record


def flashinfer_record(d: int, base: str) -> str:
    if d == 512:
        return "flashinfer.mla.fa3" if base == "2" else "flashinfer.mla.fa3+basee"
    return "flashinfer.batch_decode" if base == "2" else "torch.sdpa_ref"


def modes(world: int) -> tuple[str, ...]:
    """The collective modes, and the direct all-to-all where the group allows it."""
    from attn_contracts.combine.direct import direct_unavailable

    direct = direct_unavailable(dist.group.WORLD, "bfloat16") is None
    return ("ag_rs", "a2a", "ar", *(("a2a_direct",) if direct else ()))


def all_partials(world: int, t: int, h: int, d: int, device: torch.device,
                 seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Every rank's partial (the same on every rank: a shared seed), with empty shards."""
    g = torch.Generator(device=device).manual_seed(seed)
    o = torch.randn(world, t, h, d, device=device, generator=g, dtype=torch.float32)
    lse = torch.randn(world, t, h, device=device, generator=g) * 4
    if t > 1:  # token 0: empty on rank 0; the last token empty everywhere (−inf, +inf, NaN)
        lse[0, 0] = EMPTY[seed % 3]
        for r in range(world):
            lse[r, t - 1] = EMPTY[r % 3]
    return o.to(torch.bfloat16), lse


def check_correctness(rank: int, world: int, device: torch.device, tokens: tuple[int, ...]
                      ) -> list[dict[str, Any]]:
    rows = []
    for label, (h, d) in SHAPES.items():
        for t in tokens:
            for base in ("2", "e"):
                o_all, lse_all = all_partials(world, t, h, d, device, seed=t + h)
                ref_o, ref_lse = merge_reference(o_all, lse_all, base=base)
                keep = ~(lse_all.isinf() | lse_all.isnan())[:, :, 0]  # [N, T]: the empty shards
                garbage_o, garbage_lse = o_all.clone(), lse_all.clone()
                garbage_o[~keep], garbage_lse[~keep] = math.nan, 1e4
                for mode, masked in [(m, False) for m in modes(world)] + [
                        (m, True) for m in modes(world)]:
                    rec = flashinfer_record(d, base) if masked else record_for(d, base)
                    plan = plan_combine(rec, mode=mode, world_size=world, num_heads=h,
                                        head_dim=d, out_dtype=torch.bfloat16, return_lse=True,
                                        row_mask=masked)
                    ws = Workspace(plan, dist.group.WORLD, max_tokens=t, device=device)
                    o_in, lse_in = (garbage_o, garbage_lse) if masked else (o_all, lse_all)
                    out, lse = dcp_combine(plan, o_in[rank], lse_in[rank], dist.group.WORLD,
                                           workspace=ws, row_mask=keep[rank] if masked else None)
                    heads = slice(None) if mode == "ar" else slice(rank * h // world,
                                                                   (rank + 1) * h // world)
                    diff = (out.double() - ref_o[:, heads]).abs()
                    err = float(diff.max())
                    bad = int((diff > 1e-2 + 2e-2 * ref_o[:, heads].abs()).sum())  # bf16 tol
                    want = ref_lse[:, heads]
                    live = torch.isfinite(want)
                    lerr = float((lse.double() - want)[live].abs().max()) if live.any() else 0.0
                    nan = bool(out.isnan().any()) or bool((lse[~live] != -math.inf).any())
                    worst = _max_over_ranks(torch.tensor([err, lerr, float(nan), float(bad)],
                                                         device=device))
                    rows.append({"shape": label, "T": t, "base": base,
                                 "mode": mode + (" (masked)" if masked else ""),
                                 "max_err": worst[0], "lse_err": worst[1],
                                 "ok": worst[3] == 0 and worst[1] < 1e-3 and worst[2] == 0})
    return rows


def _max_over_ranks(x: torch.Tensor) -> list[float]:
    dist.all_reduce(x, op=dist.ReduceOp.MAX)
    return [float(v) for v in x.tolist()]


def check_consensus(rank: int, world: int) -> list[dict[str, Any]]:
    record = get("flashinfer.mla.fa3")
    if rank == world - 1:  # this rank was deployed with a different declaration
        record = record.model_copy(update={"lse": record.lse.model_copy(update={"base": "e"})})
    start = time.monotonic()
    try:
        validate_startup([record], backend=record, world_size=world, group=dist.group.WORLD,
                         timeout_s=10, extras={"out_dtype": "bfloat16", "num_heads": 128})
        codes: list[str] = []
    except ContractError as err:
        codes = [str(c) for c in err.codes]
    mine = {"rank": rank, "codes": codes, "seconds": time.monotonic() - start}
    gathered: list[Any] = [None] * world
    dist.all_gather_object(gathered, mine)
    return gathered


def _graph_us(fn: Any) -> float:
    """Per call in a CUDA graph of 20 calls, all ranks replaying together."""
    return graph_per_launch(fn, launches=20, replays=10, warmup=3, before_replay=dist.barrier)


def _wall_us(fn: Any) -> float:
    return wall_us(fn, before=dist.barrier)


def bare_collective(mode: str, world: int, t: int, h: int, d: int,
                    device: torch.device) -> Any:
    """The same collectives moving the same bytes, with no combine work."""
    lse_mine = torch.empty(t, h, device=device)
    lse_all = torch.empty(world * t, h, device=device)
    o = torch.empty(t, h, d, device=device, dtype=torch.bfloat16)
    out = torch.empty(t, h // world, d, device=device, dtype=torch.bfloat16)
    piece = o.numel() * 2 // world + t * h // world * 4
    send = torch.empty(world * piece, device=device, dtype=torch.uint8)
    recv = torch.empty_like(send)
    gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor

    def run() -> None:
        if mode == "a2a":
            dist.all_to_all_single(recv, send)
            return
        gather(lse_all, lse_mine)
        if mode == "ag_rs":
            scatter(out, o.view(world * t, h // world, d))
        else:
            dist.all_reduce(o)
    return run


def time_modes(rank: int, world: int, device: torch.device,
               tokens: tuple[int, ...]) -> list[dict[str, Any]]:
    timer = _graph_us if device.type == "cuda" else _wall_us
    rows = []
    for label, (h, d) in SHAPES.items():
        for t in tokens:
            o_all, lse_all = all_partials(world, t, h, d, device, seed=1)
            o, lse = o_all[rank].contiguous(), lse_all[rank].contiguous()
            for mode in modes(world):
                plan = plan_combine(record_for(d, "2"), mode=mode, world_size=world,
                                    num_heads=h, head_dim=d, out_dtype=torch.bfloat16)
                ws = Workspace(plan, dist.group.WORLD, max_tokens=t, device=device)
                out = torch.empty((t, h if mode == "ar" else h // world, d), device=device,
                                  dtype=torch.bfloat16)
                combine_us = timer(lambda: dcp_combine(
                    plan, o, lse, dist.group.WORLD, workspace=ws, out=out))  # noqa: B023
                bare = "a2a" if mode == "a2a_direct" else mode  # vs NCCL's all-to-all of it
                bare_us = timer(bare_collective(bare, world, t, h, d, device))
                worst = _max_over_ranks(torch.tensor([combine_us, bare_us], device=device))
                rows.append({"shape": label, "T": t, "mode": mode, "combine_us": worst[0],
                             "bare_us": worst[1],
                             "overhead_pct": 100 * (worst[0] - worst[1]) / worst[1]})
    return rows


def flashinfer_end_to_end(rank: int, world: int, device: torch.device
                          ) -> list[dict[str, Any]] | None:
    """FlashInfer decode on each rank's KV shard, combined by the record's plan (with the row
    mask its undefined empty rows require), against single-GPU attention: BatchDecode (GQA) and
    the MLA wrapper (fa3, 16 heads at D=512)."""
    try:
        import flashinfer  # noqa: F401
    except ImportError:
        return None
    from attn_contracts.backends.flashinfer_adapters import batch_decode
    from attn_contracts.backends.flashinfer_adapters import mla_fa3

    return [_end_to_end("BatchDecode, GQA H=32, D=128", batch_decode, "flashinfer.batch_decode",
                        rank, world, device, heads=32, kv_heads=8, head_dim=128, d_v=128,
                        attention="mha", page=16),
            _end_to_end("MLA wrapper (fa3), H=16, D=512", mla_fa3, "flashinfer.mla.fa3", rank,
                        world, device, heads=16, kv_heads=1, head_dim=576, d_v=512,
                        attention="mla", page=64)]


def _end_to_end(label: str, adapter: Any, record: str, rank: int, world: int,
                device: torch.device, *, heads: int, kv_heads: int, head_dim: int, d_v: int,
                attention: str, page: int) -> dict[str, Any]:
    from attn_contracts.backends.problem import make_problem
    from attn_contracts.backends.sharding import shard_problem

    g = torch.Generator().manual_seed(3)
    lens = (torch.randint(world * page, 3000, (64,), generator=g)).tolist()  # no empty shard:
    problem = make_problem(seq_lens=lens, q_len=1, num_heads=heads, num_kv_heads=kv_heads,
                           head_dim=head_dim, d_v=d_v, dtype=torch.bfloat16, device=device,
                           seed=3, q_scale=2.0, attention=attention, page_size=page)
    plan = plan_combine(record, mode="a2a", world_size=world, num_heads=heads, head_dim=d_v,
                        out_dtype=torch.bfloat16, row_mask=True)
    shard = shard_problem(problem, rank, world, interleave=page)
    o, lse = adapter.run(shard)
    out = dcp_combine(plan, o, lse, row_mask=shard.seq_lens > 0)  # [T, H/N, D]
    full, _ = adapter.run(problem)  # single-GPU full attention
    mine = slice(rank * heads // world, (rank + 1) * heads // world)
    gathered = torch.empty(world, *out.shape, device=device, dtype=out.dtype)
    gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    gather(gathered.view(world * out.shape[0], *out.shape[1:]), out.contiguous())
    combined = gathered.permute(1, 0, 2, 3).reshape(full.shape)
    lm_head = torch.randn(heads * d_v, 4096, device=device, generator=torch.Generator(
        device=device).manual_seed(7), dtype=torch.float32)
    same = int(((combined.float().flatten(1) @ lm_head).argmax(-1)
                == (full.float().flatten(1) @ lm_head).argmax(-1)).sum())
    err = float((out.float() - full[:, mine].float()).abs().max())
    return {"what": label, "tokens": len(lens), "argmax_same": same,
            "max_err": _max_over_ranks(torch.tensor([err], device=device))[0]}


def report(results: dict[str, Any], world: int, device: str, out_dir: Path | None) -> str:
    lines = [f"# DCP over {'NCCL' if device == 'cuda' else 'gloo'}: {world} ranks"
             f" ({torch.cuda.get_device_name() if device == 'cuda' else 'CPU'})", "",
             f"Command: `torchrun --nproc-per-node {world} {' '.join(sys.argv)}`", "",
             "## Correctness against the fp64 reference (bf16 out, empty shards included)", "",
             "ok: every element within 1e-2 + 2e-2·|ref| (bf16, two roundings in ag_rs/ar), the "
             "merged LSE within 1e-3, empty rows exactly −inf, no NaN.", "",
             "| shape | T | base | mode | max abs error | LSE error | ok |", "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['shape']} | {r['T']} | {r['base']} | {r['mode']} | {r['max_err']:.2e} | "
              f"{r['lse_err']:.2e} | {'yes' if r['ok'] else 'NO'} |" for r in results["correct"]]
    lines += ["", "## Rank consensus (the last rank declares base e for flashinfer.mla.fa3)", "",
              "| rank | codes | seconds |", "|---|---|---|"]
    lines += [f"| {r['rank']} | {', '.join(r['codes']) or 'none'} | {r['seconds']:.2f} |"
              for r in results["consensus"]]
    timing = "median of CUDA-graph replays" if device == "cuda" else "wall clock"
    lines += ["", f"## Time per call ({timing}; slowest rank), bf16, base 2", "",
              "| shape | T | mode | combine µs | bare collective µs | overhead |",
              "|---|---|---|---|---|---|"]
    lines += [f"| {r['shape']} | {r['T']} | {r['mode']} | {r['combine_us']:.1f} | "
              f"{r['bare_us']:.1f} | {r['overhead_pct']:+.0f} % |" for r in results["timing"]]
    lines += ["", "## FlashInfer end to end (base-2 LSE, a2a, row mask)", ""]
    lines += ["not run (flashinfer not installed)"] if results["flashinfer"] is None else [
        f"- {e['what']}: {e['tokens']} tokens, argmax identical for {e['argmax_same']}/"
        f"{e['tokens']}, max abs error vs single-GPU attention {e['max_err']:.2e}"
        for e in results["flashinfer"]]
    text = "\n".join(lines) + "\n"
    if out_dir is not None:
        name = f"dcp-nccl-h200x{world}" if device == "cuda" else f"dcp-gloo-cpu-x{world}"
        write_results(out_dir, name, text, results)
    return text


def main() -> int:
    args = rank_args(__doc__, "T in {1, 32} only (a smoke test)")
    cuda = torch.cuda.is_available()
    rank, world, device = join_ranks(cuda)
    tokens = TOKENS[:2] if args.quick else TOKENS
    results = {"correct": check_correctness(rank, world, device, tokens)}
    results["consensus"] = check_consensus(rank, world)
    results["timing"] = time_modes(rank, world, device, tokens)
    results["flashinfer"] = flashinfer_end_to_end(rank, world, device) if cuda else None
    if rank == 0:
        print(report(results, world, device.type, args.out))
    dist.barrier()
    dist.destroy_process_group()
    ok = all(r["ok"] for r in results["correct"]) and all(
        r["codes"] == ["AC007"] for r in results["consensus"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
