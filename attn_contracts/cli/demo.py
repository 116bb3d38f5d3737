"""``attn-contracts demo dcp``: decode context parallelism on CPU ranks, end to end.

N gloo ranks each hold a shard of a paged KV cache (uneven sequence lengths, some shorter than N,
so some ranks hold nothing for them), run the torch reference decode backend on it (base-e LSE),
and combine with every DCP mode. The table compares each result with full attention on one
process: the largest output error and whether the argmax of a (random) LM head is unchanged for
every token. ``--wrong-base`` also merges with the opposite base, the silent bug this project
exists to prevent, and then shows ``validate_startup`` refusing that configuration.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from typing import Any

import torch

from attn_contracts import CapabilityRecord
from attn_contracts import ContractError
from attn_contracts import get
from attn_contracts import validate_startup
from attn_contracts.backends.problem import DecodeProblem
from attn_contracts.backends.problem import make_problem
from attn_contracts.backends.sharding import shard_problem
from attn_contracts.backends.torch_ref import run as torch_decode
from attn_contracts.cli._output import console as make_console
from attn_contracts.cli._output import print_table
from attn_contracts.combine.dcp import dcp_combine
from attn_contracts.combine.plan import plan_combine
from attn_contracts.testing.ranks import RankFailure
from attn_contracts.testing.ranks import run_ranks

__all__ = ["run"]

HEADS, KV_HEADS, HEAD_DIM, VOCAB = 24, 4, 64, 2048  # 24 heads: N = 2, 3, 4, 6, 8 divide it
MODES = ("ag_rs", "a2a", "ar")


def _problem(world: int, seed: int) -> DecodeProblem:
    g = torch.Generator().manual_seed(seed)
    lens = torch.randint(0, 400, (32,), generator=g).tolist()
    lens[:4] = [0, 1, max(1, world - 1), 2]  # empty and shorter-than-world rows
    return make_problem(seq_lens=lens, q_len=1, num_heads=HEADS, num_kv_heads=KV_HEADS,
                        head_dim=HEAD_DIM, dtype=torch.float32, seed=seed, q_scale=2.0)


def _flipped(record: CapabilityRecord) -> CapabilityRecord:
    spec = record.lse.model_copy(update={"base": "2" if record.lse_base == "e" else "e"})
    return record.model_copy(update={"name": record.name + "+wrong-base", "lse": spec})


def _undefined_empty_rows(record: CapabilityRecord) -> CapabilityRecord:
    """The same kernel declared as FlashInfer's are: what it leaves in an empty row is garbage."""
    spec = record.lse.model_copy(update={"empty_row": "undefined"})
    return record.model_copy(update={"name": record.name + "+undefined-empty", "lse": spec})


def _rank(rank: int, world: int, seed: int, interleave: int | None, wrong_base: bool,
          repeats: int) -> dict[str, Any]:
    """One rank: decode its shard, then combine with every mode (and the wrong base); the
    masked runs first overwrite this rank's empty rows with garbage, as a kernel that cannot run
    a zero-key row leaves them, and pass the engine's row mask (local length > 0)."""
    record = get("torch.sdpa_ref")
    shard = shard_problem(_problem(world, seed), rank, world, interleave)
    o, lse = torch_decode(shard)
    rows = shard.seq_lens > 0  # q_len = 1: one row per request
    garbage_o, garbage_lse = o.clone(), lse.clone()
    garbage_o[~rows], garbage_lse[~rows] = math.nan, 1e4  # would win any merge that read it
    runs = [(m, record, m, False) for m in MODES]
    runs += [(f"{m}, masked (empty rows hold garbage)", _undefined_empty_rows(record), m, True)
             for m in ("ag_rs", "a2a")]
    if wrong_base:
        runs.append(("ar, merged as base 2 (wrong)", _flipped(record), "ar", False))
    out: dict[str, Any] = {"keys": int(shard.seq_lens.sum()), "empty_rows": int((~rows).sum())}
    for label, rec, mode, masked in runs:
        try:
            plan = plan_combine(rec, mode=mode, world_size=world, num_heads=HEADS,
                                head_dim=HEAD_DIM, out_dtype=torch.float32, row_mask=masked)
        except ContractError as err:  # e.g. AC010: heads not divisible by this world size
            out[label] = {"refused": "; ".join(f"{f.code} {f.message}" for f in err.findings)}
            continue
        inputs = (garbage_o, garbage_lse) if masked else (o, lse)
        mask = rows if masked else None
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            result = dcp_combine(plan, *inputs, row_mask=mask)
            times.append(time.perf_counter() - start)
        out[label] = {"out": result, "ms": 1e3 * statistics.median(times)}
    return out


def _full_output(label: str, per_rank: list[dict[str, Any]]) -> torch.Tensor:
    if label.startswith("ar"):
        full: torch.Tensor = per_rank[0][label]["out"]  # every rank holds all heads
        return full
    return torch.cat([r[label]["out"] for r in per_rank], dim=1)  # head slices by rank


def run(args: argparse.Namespace) -> int:
    from rich.progress import Progress

    console = make_console()
    world, interleave = args.world_size, (args.interleave or None)
    layout = "contiguous" if interleave is None else f"interleaved by {interleave}"
    console.print(f"[bold]DCP demo[/]: {world} gloo ranks on the CPU, KV cache sharded "
                  f"{layout}, torch reference decode (base-e LSE), H={HEADS}, D={HEAD_DIM}")
    with Progress(console=console, transient=True) as progress:
        task = progress.add_task("starting ranks", total=world)
        try:
            results = run_ranks(_rank, world, args.seed, interleave, args.wrong_base, args.repeats,
                                timeout_s=args.timeout,
                                on_ready=lambda r: progress.advance(task))
        except RankFailure as err:
            console.print(f"[red]a rank failed[/]: {err}")
            return 1
    per_rank = [r.value for r in results]
    console.print("keys per rank: " + ", ".join(str(r["keys"]) for r in per_rank))
    console.print("requests with no keys on the rank (of 32): "
                  + ", ".join(str(r["empty_rows"]) for r in per_rank)
                  + f"; {sum(1 for n in _problem(world, args.seed).seq_lens.tolist() if n < world)}"
                  " requests are shorter than the world size")
    ref_o, _ = torch_decode(_problem(world, args.seed))  # full attention on one process
    lm_head = torch.randn(HEADS * HEAD_DIM, VOCAB, generator=torch.Generator().manual_seed(7))
    ref_tokens = (ref_o.flatten(1) @ lm_head).argmax(-1)
    rows, ok = [], True
    for label in per_rank[0]:
        if label in ("keys", "empty_rows"):
            continue
        if "refused" in per_rank[0][label]:
            rows.append([label, "refused at plan time", per_rank[0][label]["refused"], "-"])
            continue
        got = _full_output(label, per_rank)
        error = float((got - ref_o).abs().max())
        same = int(((got.flatten(1) @ lm_head).argmax(-1) == ref_tokens).sum())
        wrong = "wrong" in label
        ok &= wrong or error < 1e-4
        rows.append([label, f"{error:.2e}", f"{same}/{len(ref_tokens)}"
                     + ("" if same == len(ref_tokens) else f" ({len(ref_tokens) - same} flipped)"),
                     f"{per_rank[0][label]['ms']:.2f}"])
    print_table("combined vs full attention", ["mode", "max |error|", "argmax agreement",
                                               "ms per call (rank 0)"], rows)
    if args.wrong_base:
        _show_refusal(console)
    return 0 if ok else 1


def _show_refusal(console: Any) -> None:
    """The wrong base is refused at startup, before any request, in both ways it arises."""

    class AttentionImpl:  # an engine base class with the default of its day
        can_return_lse_for_decode = False
        lse_base_on_e = True

    class MyKernelImpl(AttentionImpl):  # returns LSE, never says which base
        can_return_lse_for_decode = True

    console.print("\n[bold]validate_startup refuses it[/]: a backend whose base comes only "
                  "from an inherited default")
    try:
        validate_startup([MyKernelImpl], world_size=4)
    except ContractError as err:
        console.print(str(err), markup=False, highlight=False)
    console.print("\n[bold]and a record that misdeclares the base is caught by the startup "
                  "probe[/] (it runs the kernel once)")
    wrong = _flipped(get("torch.sdpa_ref"))
    try:
        validate_startup([wrong], backend=wrong.name, world_size=4, probe=True, device="cpu")
    except ContractError as err:
        console.print(str(err), markup=False, highlight=False)
