"""What a process group offers the symmetric-memory combine paths (``a2a_direct``, ``fi_a2a``):
both need NCCL, and both first ask what the process alone can tell (CUDA, the dtype, the library),
so a plan made on a machine without GPUs says that rather than a group's backend."""

from __future__ import annotations

from typing import Any

__all__ = ["nccl_group_unavailable"]


def nccl_group_unavailable(group: Any, here: str | None, why_nccl: str) -> str | None:
    """Why a path that needs NCCL cannot run on ``group``: ``here`` (what the process alone could
    not offer) first, then a backend other than NCCL (``why_nccl`` says what needs it)."""
    import torch.distributed as dist

    if here is not None:
        return here
    backend = str(dist.get_backend(group))
    if backend != "nccl":
        return f"process group backend {backend} ({why_nccl})"
    return None
