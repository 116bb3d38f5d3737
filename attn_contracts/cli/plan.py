"""``plan``: the combine variant a record gets for a setting, and why (needs the kernels extra)."""

from __future__ import annotations

import argparse

from attn_contracts.cli._output import EXIT_OK
from attn_contracts.cli._output import UsageError
from attn_contracts.cli._output import print_findings
from attn_contracts.cli._setting import add_setting_arguments
from attn_contracts.cli._setting import setting_from_args
from attn_contracts.findings import ContractError
from attn_contracts.registry import Registry
from attn_contracts.registry import UnknownRecordError

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", help="record name")
    add_setting_arguments(p, world_size_default=2)
    p.set_defaults(num_heads=128)  # --head-dim defaults to the record's first head dim


def run(args: argparse.Namespace) -> int:
    try:  # torch only now: every other command stays torch-free
        from attn_contracts.combine.plan import plan_combine
    except ImportError as err:
        raise UsageError(
            f"needs the kernels extra (pip install 'attn-contracts[kernels]'): {err}") from err
    if args.head_dim is None:
        args.head_dim = Registry().get(args.name).decode.head_dims[0]
    setting = setting_from_args(args)
    try:
        plan = plan_combine(args.name, setting)
    except ContractError as err:
        if isinstance(err, UnknownRecordError):
            raise
        return print_findings(err.findings, "text", ok_message="")
    print(f"{plan.record.name}: {plan.mode} over {plan.world_size} rank(s), kernel {plan.kernel}, "
          f"{plan.local_heads} head(s) per launch")
    print(plan.explain())
    return EXIT_OK
