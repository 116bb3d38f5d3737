"""What every benchmark that torchrun starts on each rank shares: its command line (``--out``,
``--quick``) and joining the process group (NCCL on GPUs, gloo on the CPU).

Imported by path, like ``_timing``; torch is imported inside, after the caller has set the NCCL
environment it wants (the caller's module docstring says which).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any


def rank_args(doc: str | None, quick: str) -> argparse.Namespace:
    """``--out DIR`` (where the results go) and ``--quick`` (helped by ``quick``)."""
    ap = argparse.ArgumentParser(description=doc,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--quick", action="store_true", help=quick)
    return ap.parse_args()


def join_ranks(cuda: bool) -> tuple[int, int, Any]:
    """(rank, world size, this rank's device) after joining torchrun's process group."""
    import torch
    import torch.distributed as dist

    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if cuda else "cpu")
    if cuda:
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if cuda else "gloo", device_id=device if cuda else None)
    return rank, world, device
