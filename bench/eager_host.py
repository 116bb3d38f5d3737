"""Host time of the eager combine's own Python, on the CPU: the kernel launch replaced by a no-op.

    python bench/eager_host.py [--calls 2000] [--out FILE.md]

Issue 22 item 3 times eager calls on the H200 (``bench/goals.py``, ``host µs per eager call``);
this times the same calls' Python on a CPU with no GPU. The one launch body of merge and rescale
(``launches.combine_launch``, what a first call runs and a later call's ``launch.Prepared`` replaces)
is monkeypatched to hand back a no-op launch, so every call after the first takes the same eager
fast path as on a GPU and only the launch itself (the driver call) is missing. Each row: the
median of ``--calls`` calls after 200 warm-up calls, the rows interleaved (one call of each per
round: ``_timing.host_medians``, the timer of ``goals.py``'s rows). Tensors are small CPU tensors
of the goals' one-token shape (N, T, H, D) = (4, 1, 128, 512), bf16 partials, fp32 LSE;
``dcp_combine`` runs on a gloo process group of one rank.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _timing, also under PYTHONSAFEPATH=1
from _inputs import bench_record
from _inputs import world_of_one
from _timing import host_medians

from attn_contracts.combine import dcp_combine
from attn_contracts.combine import launches
from attn_contracts.combine import merge
from attn_contracts.combine import plan_combine

SHAPE = (4, 1, 128, 512)
DTYPE = torch.bfloat16


class _NoLaunch:
    """A decided launch that launches nothing (``launch.Prepared``'s call, minus the driver)."""

    def __call__(self, *tensors: torch.Tensor | int) -> None:
        return None


def _no_launch(*args: Any) -> _NoLaunch:
    return _NoLaunch()


def calls() -> dict[str, Callable[[], object]]:
    n, t, h, d = SHAPE
    rec = bench_record(d, "2", "eager_host")
    o = torch.randn(n, t, h, d, dtype=DTYPE)
    lse = torch.randn(n, t, h)
    out, z = torch.empty(t, h, d, dtype=DTYPE), torch.empty(t, h)
    keep = torch.ones(t, dtype=torch.bool)
    plan = plan_combine(rec, mode="merge", world_size=n, num_heads=h, head_dim=d, out_dtype=DTYPE,
                        return_lse=True)
    plan_r = plan_combine(rec, mode="ag_rs", world_size=n, num_heads=h, head_dim=d,
                          out_dtype=DTYPE, return_lse=True)
    group = world_of_one("gloo")
    a2a = plan_combine(rec, mode="a2a", world_size=1, num_heads=h, head_dim=d, out_dtype=DTYPE)
    ag_rs = plan_combine(rec, mode="ag_rs", world_size=1, num_heads=h, head_dim=d,
                         out_dtype=DTYPE)
    return {
        "merge(o, lse, base=, out=, lse_out=)": functools.partial(
            merge, o, lse, base="2", out=out, lse_out=z),
        "merge plan.launch(o, lse, out=, lse_out=)": functools.partial(
            plan.launch, o, lse, out=out, lse_out=z),
        "merge plan(o, lse, out=, lse_out=)": functools.partial(plan, o, lse, out=out, lse_out=z),
        "rescale plan.launch(o, lse, rank=, out=, lse_out=)": functools.partial(
            plan_r.launch, o[0], lse, rank=0, out=out, lse_out=z),
        "dcp_combine(a2a, world size 1)": functools.partial(dcp_combine, a2a, o[0], lse[0], group),
        "dcp_combine(a2a, world size 1, row_mask=)": functools.partial(
            dcp_combine, a2a, o[0], lse[0], group, row_mask=keep),
        "dcp_combine(a2a, world size 1, out=)": functools.partial(
            dcp_combine, a2a, o[0], lse[0], group, out=out),
        "dcp_combine(ag_rs, world size 1)": functools.partial(
            dcp_combine, ag_rs, o[0], lse[0], group),
        "(floor) torch.empty of the output": functools.partial(torch.empty, (t, h, d),
                                                               dtype=DTYPE),
    }


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console
    from rich.table import Table

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--label", default="", help="a column title (e.g. before/after)")
    ap.add_argument("--out", type=Path, default=None, help="also write the table as markdown")
    args = ap.parse_args(argv)
    launches.combine_launch = _no_launch  # type: ignore[assignment]
    timed = host_medians(calls(), args.calls, warmup=200)
    col = f"µs per call{f' ({args.label})' if args.label else ''}"
    table = Table(title=f"eager host time on the CPU, no-op launch, median of {args.calls}")
    table.add_column("call")
    table.add_column(col, justify="right")
    for name, us in timed.items():
        table.add_row(name, f"{us:.1f}")
    Console().print(table)
    if args.out is not None:
        lines = [f"| call | {col} |", "|---|---|"]
        lines += [f"| {name} | {us:.1f} |" for name, us in timed.items()]
        args.out.write_text("\n".join(lines) + "\n")
    if dist.is_initialized():
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
