"""FlashInfer's fused DCP combine (``fi_a2a``) beside the project's ``a2a``, on NCCL.

    torchrun --nproc-per-node 1 bench/fi_a2a.py --out bench/results     # one GPU: world size 1
    torchrun --nproc-per-node N bench/fi_a2a.py --out bench/results     # N GPUs of one host

1. Correctness of both plans against the fp64 reference (bf16, base 2 and e), with a shard
   whose row this rank has no keys for holding NaN in O (an unwritten row, flashinfer #4975),
   masked by the engine's row mask, and a row empty on every shard.
2. Time per call (median of CUDA-graph replays, slowest rank) for MLA (H=128 and H=16, D=512) and
   GQA (H=32, D=128), T in {1, 8, 32, 256, 2048}: ``fi_a2a`` through the plan (the pass that lays
   the head slices out, then FlashInfer's op), FlashInfer's op alone on inputs already laid out,
   and the project's ``a2a`` (its pack, NCCL's all-to-all, its merge).
Where ``fi_a2a`` cannot run (FlashInfer without ``flashinfer.comm``, NCCL older than 2.29, ...),
the report says why and times ``a2a`` alone. NVLink multicast stays off.
"""

from __future__ import annotations

import math
import os
import sys
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
from _timing import write_results

from attn_contracts import ContractError
from attn_contracts.combine import Workspace
from attn_contracts.combine import dcp_combine
from attn_contracts.combine import merge_reference
from attn_contracts.combine import plan_combine
from attn_contracts.combine.fused import fused_unavailable
from attn_contracts.setting import CombineSetting

SHAPES = {"MLA H=128": (128, 512), "MLA H=16": (16, 512), "GQA H=32": (32, 128)}
TOKENS = (1, 8, 32, 256, 2048)


def partials(world: int, t: int, h: int, d: int, device: torch.device, seed: int
             ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Every rank's partial (one seed: the same on every rank), its keep mask ``[N, T]``: rank 0
    has no keys for row 0 (NaN in O there), the last row has keys on no rank."""
    g = torch.Generator(device=device).manual_seed(seed)
    o = torch.randn(world, t, h, d, device=device, generator=g)
    lse = torch.randn(world, t, h, device=device, generator=g) * 4
    keep = torch.ones(world, t, dtype=torch.bool, device=device)
    if t > 1:
        keep[0, 0] = False
        keep[:, t - 1] = False
    o[~keep] = math.nan
    lse[~keep] = -math.inf
    return o.to(torch.bfloat16), lse, keep


def _graph_us(fn: Any) -> float:
    return graph_per_launch(fn, launches=20, replays=10, warmup=3, before_replay=dist.barrier)


def _worst(values: list[float], device: torch.device) -> list[float]:
    x = torch.tensor(values, device=device, dtype=torch.float64)
    dist.all_reduce(x, op=dist.ReduceOp.MAX)
    return [float(v) for v in x.tolist()]


def _time_plan(plan: Any, ws: Workspace, o: torch.Tensor, lse: torch.Tensor,
               mask: torch.Tensor) -> float:
    t, h, d = o.shape
    out = o.new_empty((t, h // plan.world_size, d))
    return _graph_us(lambda: dcp_combine(plan, o, lse, dist.group.WORLD, workspace=ws,
                                         row_mask=mask, out=out))


def _time_op(ws: Workspace, t: int, device: torch.device) -> float:
    import flashinfer.comm as comm

    bufs = ws.fused_buffers(0, t, device)
    return _graph_us(lambda: comm.decode_cp_a2a_lse_reduce(
        bufs.o_send[:t], bufs.lse_send[:t], bufs.workspace, bufs.rank, bufs.world,
        lse_mode="base2"))


def run(rank: int, world: int, device: torch.device, tokens: tuple[int, ...],
        fused_ok: bool) -> dict[str, Any]:
    correct, timing = [], []
    modes = ("fi_a2a", "a2a") if fused_ok else ("a2a",)
    for label, (h, d) in SHAPES.items():
        hc = h // world
        for t in tokens:
            for base in ("2", "e"):
                o_all, lse_all, keep = partials(world, t, h, d, device, seed=t + h)
                ref, _ = merge_reference(o_all, lse_all, base=base, row_mask=keep)
                want = ref[:, rank * hc:(rank + 1) * hc]
                for mode in modes:
                    plan = plan_combine(bench_record(d, base, "fi_a2a"), mode=mode,
                                        world_size=world, num_heads=h, head_dim=d,
                                        out_dtype=torch.bfloat16, row_mask=True)
                    ws = Workspace(plan, dist.group.WORLD, max_tokens=t, device=device)
                    got = dcp_combine(plan, o_all[rank], lse_all[rank], dist.group.WORLD,
                                      workspace=ws, row_mask=keep[rank])
                    diff = (got.double() - want).abs()
                    bad = int((diff > 1e-2 + 2e-2 * want.abs()).sum()) + int(got.isnan().sum())
                    err, bad_f = _worst([float(diff.nan_to_num(math.inf).max()), float(bad)],
                                        device)
                    correct.append({"shape": label, "T": t, "base": base, "mode": mode,
                                    "max_err": err, "ok": bad_f == 0})
            o_all, lse_all, keep = partials(world, t, h, d, device, seed=1)
            o, lse, mask = o_all[rank].contiguous(), lse_all[rank].contiguous(), keep[rank]
            row: dict[str, Any] = {"shape": label, "T": t}
            for mode in modes:
                plan = plan_combine(bench_record(d, "2", "fi_a2a"), mode=mode, world_size=world,
                                    num_heads=h, head_dim=d, out_dtype=torch.bfloat16,
                                    row_mask=True)
                ws = Workspace(plan, dist.group.WORLD, max_tokens=t, device=device)
                row[mode] = _time_plan(plan, ws, o, lse, mask)
                if mode == "fi_a2a":  # FlashInfer's op alone, on the slices already laid out
                    row["fi_op"] = _time_op(ws, t, device)
            keys = [k for k in ("fi_a2a", "fi_op", "a2a") if k in row]
            worst = _worst([row[k] for k in keys], device)
            row.update(dict(zip(keys, worst, strict=True)))
            timing.append(row)
    return {"correct": correct, "timing": timing}


def report(results: dict[str, Any], world: int, why_not: str | None, out_dir: Path | None
           ) -> str:
    gpu = torch.cuda.get_device_name()
    lines = [f"# FlashInfer's fused DCP combine (fi_a2a) beside a2a: {world} rank(s) ({gpu})", "",
             f"Command: `torchrun --nproc-per-node {world} {' '.join(sys.argv)}`", "",
             ("fi_a2a: " + ("runs" if why_not is None else f"not run: {why_not}")), "",
             "## Correctness against the fp64 reference (bf16 out, a masked NaN row, an all-empty "
             "row)", "", "ok: every element within 1e-2 + 2e-2·|ref|, no NaN.", "",
             "| shape | T | base | mode | max abs error | ok |", "|---|---|---|---|---|---|"]
    lines += [f"| {r['shape']} | {r['T']} | {r['base']} | {r['mode']} | {r['max_err']:.2e} | "
              f"{'yes' if r['ok'] else 'NO'} |" for r in results["correct"]]
    lines += ["", "## Time per call (µs, median of CUDA-graph replays, slowest rank), bf16, "
              "base 2, row mask on", "",
              "fi_a2a: through the plan (lay the head slices out with the mask, then FlashInfer's "
              "op); FlashInfer op: its call alone on slices already laid out; a2a: the project's "
              "pack, NCCL all-to-all and merge.", "",
              "| shape | T | fi_a2a | FlashInfer op | a2a |", "|---|---|---|---|---|"]
    fmt = lambda r, k: f"{r[k]:.1f}" if k in r else "-"  # noqa: E731
    lines += [f"| {r['shape']} | {r['T']} | {fmt(r, 'fi_a2a')} | {fmt(r, 'fi_op')} | "
              f"{fmt(r, 'a2a')} |" for r in results["timing"]]
    text = "\n".join(lines) + "\n"
    if out_dir is not None:
        write_results(out_dir, f"fi-a2a-h200x{world}", text, {**results, "why_not": why_not})
    return text


def main() -> int:
    args = rank_args(__doc__, "T in {1, 32} only")
    if not torch.cuda.is_available():
        print("fi_a2a needs CUDA GPUs (FlashInfer's fused combine)", file=sys.stderr)
        return 2
    rank, world, device = join_ranks(cuda=True)
    why_not = fused_unavailable(dist.group.WORLD, CombineSetting(
        mode="fi_a2a", world_size=world, num_heads=16, head_dim=512, out_dtype="bfloat16"))
    tokens = (1, 32) if args.quick else TOKENS
    try:
        results = run(rank, world, device, tokens, fused_ok=why_not is None)
    except ContractError as err:  # refused where its workspace is made (JIT build, NCCL < 2.29)
        why_not = str(err).replace("\n", " ")
        results = run(rank, world, device, tokens, fused_ok=False)
    if rank == 0:
        print(report(results, world, why_not, args.out))
    dist.barrier()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
