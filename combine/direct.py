"""The direct all-to-all (``a2a_direct``): each rank writes its peers' head slices of O and the
fp32 LSE straight into their symmetric-memory buffers, and one kernel per rank waits for its
peers' epochs and merges (``combine/_direct_kernels.py`` has the protocol). Two launches a step,
no NCCL call, CUDA-graph capturable (the epoch lives on the device).

Where it cannot run — no CUDA, a group that is not NCCL, one rank, a dtype other than 16/32-bit
floats, a torch without ``torch.distributed._symmetric_memory`` — :func:`direct_unavailable`
says why: planning ``a2a_direct`` is then a ``ContractError`` (``AC026``), and ``a2a_best`` falls
back to ``a2a`` and says so.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any

import torch

from attn_contracts.combine.groups import nccl_group_unavailable
from attn_contracts.combine.launch import launch_grid
from attn_contracts.combine.launch import launcher
from attn_contracts.combine.message import aligned
from attn_contracts.combine.tiles import cdiv

__all__ = ["DIRECT_DTYPES", "DirectBuffers", "direct_merge", "direct_send", "direct_unavailable",
           "direct_unavailable_here"]

DIRECT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
#: polls of a peer's flag before the wait gives up (each poll is a system-scope atomic, ~1 µs
#: over NVLink: about 0.1-1 s in all, far longer than any step, far shorter than a hang)
SPIN = 1 << 20
_HEADER_ALIGN = 256


def direct_unavailable_here(dtype: str) -> str | None:
    """What this process alone can tell (at plan time): CUDA, symmetric memory, the dtype."""
    if not torch.cuda.is_available():
        return "no CUDA device (the direct all-to-all writes into peers' GPU memory)"
    if importlib.util.find_spec("torch.distributed._symmetric_memory") is None:
        return f"torch {torch.__version__} has no torch.distributed._symmetric_memory"
    if getattr(torch, dtype, None) not in DIRECT_DTYPES:
        return f"out_dtype {dtype} (allowed: float16, bfloat16, float32)"
    return None


def direct_unavailable(group: Any, dtype: str) -> str | None:
    """Why ``a2a_direct`` cannot run on ``group`` (None if it can)."""
    import torch.distributed as dist

    why = nccl_group_unavailable(group, direct_unavailable_here(dtype),
                                 "symmetric memory needs GPUs on NCCL")
    if why is not None:
        return why
    if dist.get_world_size(group) < 2:
        return "a single rank: there is no peer to write to"
    return None


@dataclass(frozen=True)
class DirectLayout:
    """Byte offsets of one slot's symmetric buffer (see ``_direct_kernels.py``)."""

    world: int
    piece: int  # one message (message.A2AMessage): O [T_max, H/N, D] | LSE [T_max, H/N]
    o_bytes: int  # where a message's LSE starts

    @property
    def data(self) -> int:
        return aligned(16 * self.world, _HEADER_ALIGN)

    @property
    def parity_bytes(self) -> int:
        return self.world * self.piece

    @property
    def nbytes(self) -> int:
        return self.data + 2 * self.parity_bytes


class DirectBuffers:
    """One slot's symmetric buffer, the peers' addresses and the local state
    ``[epoch, send count, merge count, error]``. Built once, at workspace creation."""

    def __init__(self, layout: DirectLayout, buffer: torch.Tensor, peers: list[int],
                 rank: int) -> None:
        self.layout, self.buffer, self.rank = layout, buffer, rank
        self.peers = torch.tensor(peers, dtype=torch.int64, device=buffer.device)
        self.state = torch.zeros(4, dtype=torch.int32, device=buffer.device)

    @classmethod
    def symmetric(cls, layout: DirectLayout, group: Any, device: torch.device) -> DirectBuffers:
        import torch.distributed as dist
        import torch.distributed._symmetric_memory as symm_mem

        buffer = symm_mem.empty(layout.nbytes, dtype=torch.uint8, device=device)
        buffer.zero_()
        handle = symm_mem.rendezvous(buffer, group=group)
        dist.barrier(group=group)  # every peer's header is zero before anyone signals
        return cls(layout, buffer, list(handle.buffer_ptrs), dist.get_rank(group))

    @classmethod
    def local(cls, layout: DirectLayout, device: torch.device) -> DirectBuffers:
        """A world of one on a plain allocation: the same kernels and protocol, the rank its own
        only peer (single-GPU tests of the kernels)."""
        buffer = torch.zeros(layout.nbytes, dtype=torch.uint8, device=device)
        return cls(layout, buffer, [buffer.data_ptr()], 0)

    def error(self) -> str | None:
        """What went wrong in the last steps, read on the host (a sync): None if nothing."""
        code = int(self.state[3])
        return {0: None, 1: "a peer did not acknowledge its previous message in time",
                2: "a peer's message did not arrive in time (dead, hung or a different step)"
                }.get(code, f"error {code}")


def direct_send(bufs: DirectBuffers, partial_out: torch.Tensor, lse: torch.Tensor,
                row_mask: torch.Tensor | None, *, block_h: int, block_d: int,
                num_warps: int) -> None:
    """Write ``partial_out [T, H, D]`` and ``lse [T, H]`` (any strides) to every peer."""
    t, h, d = partial_out.shape
    lay = bufs.layout
    mask = row_mask if row_mask is not None else lse
    launcher("direct_send_kernel")(
        launch_grid(t, h, d, block_h, block_d), (partial_out, lse, mask, bufs.peers, bufs.state),
        (t, h, d, h // lay.world, 1, bufs.rank, *partial_out.stride(), *lse.stride(),
         mask.stride(0), lay.piece, lay.parity_bytes, lay.o_bytes, lay.data, SPIN),
        dict(N=lay.world, HAS_MASK=row_mask is not None, BLOCK_H=block_h, BLOCK_D=block_d,
             NUM_DB=cdiv(d, block_d)),
        num_warps)


def direct_merge(bufs: DirectBuffers, out: torch.Tensor, lse_out: torch.Tensor | None,
                 sink: torch.Tensor | None, *, in_scale: float, out_scale: float,
                 sink_scale: float, block_h: int, block_d: int, num_warps: int) -> None:
    """Wait for every peer's message of this step and merge them into ``out [T, H/N, D]``."""
    t, hc, d = out.shape
    lay = bufs.layout
    z = lse_out if lse_out is not None else out
    s = sink if sink is not None else bufs.state
    launcher("direct_merge_kernel")(
        launch_grid(t, hc, d, block_h, block_d), (out, z, s, bufs.peers, bufs.state),
        (t, hc, d, bufs.rank, *out.stride(), z.stride(0), z.stride(1), s.stride(0), lay.piece,
         lay.parity_bytes, lay.o_bytes, lay.data, SPIN),
        dict(N=lay.world, IN_SCALE=in_scale, OUT_SCALE=out_scale, WRITE_LSE=lse_out is not None,
             HAS_SINK=sink is not None, SINK_SCALE=sink_scale, BLOCK_H=block_h, BLOCK_D=block_d,
             NUM_DB=cdiv(d, block_d)),
        num_warps)
