"""The combine setting's flags, shared by every command that takes one (``validate``, ``plan``):
one flag per :class:`~attn_contracts.setting.CombineSetting` field, under the field's name."""

from __future__ import annotations

import argparse

from pydantic import ValidationError

from attn_contracts.cli._output import UsageError
from attn_contracts.setting import MODES
from attn_contracts.setting import OUT_DTYPES
from attn_contracts.setting import CombineSetting

__all__ = ["add_setting_arguments", "non_negative", "positive", "positive_float", "setting_from_args"]


def _whole(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= {least}, found {text!r}"
                                         ) from None
    if value < least:
        raise argparse.ArgumentTypeError(f"expected a whole number >= {least}, found {value}")
    return value


def positive(text: str) -> int:
    """An argparse type: a whole number >= 1 (a world size, a head count, a repeat count)."""
    return _whole(text, 1)


def non_negative(text: str) -> int:
    """An argparse type: a whole number >= 0."""
    return _whole(text, 0)


def positive_float(text: str) -> float:
    """An argparse type: a finite number > 0 (seconds)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number > 0, found {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, found {text}")
    return value


def add_setting_arguments(p: argparse.ArgumentParser, *, world_size_default: int | None) -> None:
    g = p.add_argument_group("combine setting")
    g.add_argument("--mode", choices=MODES, default="merge")
    g.add_argument("--world-size", dest="world_size", type=positive,
                   default=world_size_default, metavar="N",
                   help="partials to combine: the DCP world size")
    g.add_argument("--num-heads", type=positive, default=None, metavar="H")
    g.add_argument("--head-dim", type=positive, default=None, metavar="D")
    g.add_argument("--out-dtype", choices=OUT_DTYPES, default="bfloat16")
    g.add_argument("--return-lse", action="store_true")
    g.add_argument("--lse-out-base", choices=["e", "2"], default=None)
    g.add_argument("--sink", action="store_true", help="the plan adds an attention sink once")
    g.add_argument("--row-mask", action="store_true",
                   help="every call passes which rows each shard holds keys for")


def setting_from_args(args: argparse.Namespace) -> CombineSetting:
    """The setting the flags describe; a usage error names what is missing or wrong."""
    missing = [f"--{n.replace('_', '-')}" for n in ("world_size", "num_heads", "head_dim")
               if getattr(args, n) is None]
    if missing:
        raise UsageError(f"a combine setting needs {', '.join(missing)}")
    try:
        return CombineSetting(mode=args.mode, world_size=args.world_size,
                              num_heads=args.num_heads, head_dim=args.head_dim,
                              out_dtype=args.out_dtype, return_lse=args.return_lse,
                              lse_out_base=args.lse_out_base, sink=args.sink,
                              row_mask=args.row_mask)
    except ValidationError as err:
        raise UsageError("; ".join(f"--{'.'.join(map(str, e['loc'])).replace('_', '-')}: "
                                   f"{e['msg']}" for e in err.errors())) from None
