"""``plan``: the combine variant a record gets for a setting, and why (needs the kernels extra)."""

from __future__ import annotations

import argparse

from attn_contracts.cli._output import EXIT_OK, UsageError, print_findings
from attn_contracts.findings import ContractError
from attn_contracts.registry import Registry, UnknownRecordError

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="record name")
    p.add_argument("--mode", choices=["merge", "ag_rs", "a2a", "ar"], default="merge")
    p.add_argument("--world-size", type=int, default=2, metavar="N")
    p.add_argument("--num-heads", type=int, default=128, metavar="H")
    p.add_argument("--head-dim", type=int, default=None, metavar="D",
                   help="default: the record's first head dim")
    p.add_argument("--out-dtype", choices=["bfloat16", "float16", "float32"], default="bfloat16")
    p.add_argument("--return-lse", action="store_true")
    p.add_argument("--lse-out-base", choices=["e", "2"], default=None)


def run(args: argparse.Namespace) -> int:
    try:  # torch only now: every other command stays torch-free
        from attn_contracts.combine.plan import plan_combine
    except ImportError as err:
        raise UsageError(
            f"needs the kernels extra (pip install 'attn-contracts[kernels]'): {err}") from err
    head_dim = args.head_dim or Registry().get(args.name).decode.head_dims[0]
    try:
        plan = plan_combine(args.name, mode=args.mode, world_size=args.world_size,
                            num_heads=args.num_heads, head_dim=head_dim,
                            out_dtype=args.out_dtype, return_lse=args.return_lse,
                            lse_out_base=args.lse_out_base)
    except ContractError as err:
        if isinstance(err, UnknownRecordError):
            raise
        return print_findings(err.findings, "text", ok_message="")
    except ValueError as err:
        raise UsageError(str(err)) from err
    print(f"{plan.record.name}: {plan.mode} over {plan.world_size} rank(s), kernel {plan.kernel}, "
          f"{plan.local_heads} head(s) per launch")
    print(plan.explain())
    return EXIT_OK
