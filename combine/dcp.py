"""DCP combine over ``torch.distributed``: the same code on NCCL (GPUs) and gloo (CPU).

Each rank holds ``partial_out [T, H, D]`` and its LSE (in the record's layout) for its shard of
the KV cache; :func:`dcp_combine` runs the plan's mode:

``ag_rs``  all-gather the fp32 LSE ``[N, T, H]``, rescale the local partial straight into a
           head-chunked ``[N, T, H/N, D]`` buffer, reduce-scatter it → ``[T, H/N, D]`` per rank.
``a2a``    one all-to-all whose message to rank j is ``o[:, heads_j, :]`` *and* the fp32 bits of
           ``lse[:, heads_j]`` packed together (no lossy cast, one collective), then merge the
           ``N`` received partials → ``[T, H/N, D]``.
``ar``     all-gather the LSE, rescale, all-reduce → every rank holds ``[T, H, D]``.

Communication buffers are owned by the plan and reused for each token count, so a step can be
captured in a CUDA graph after one warm-up call; outputs are fresh tensors unless ``out=`` is
given. World size 1 returns the input untouched (copied into ``out=`` when one is given).
"""

from __future__ import annotations

from typing import Any

import torch
import torch.distributed as dist

from attn_contracts.combine.ops import pack_a2a
from attn_contracts.combine.plan import CombinePlan

__all__ = ["dcp_combine"]

# torch 2.13 renamed the tensor collectives; 2.11 (the GPU machine) has only the old names.
_all_gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
_reduce_scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
_ALIGN = 16  # bytes: each packed piece starts 16-byte aligned (vector loads, fp32 views)


def _aligned(nbytes: int) -> int:
    return -(-nbytes // _ALIGN) * _ALIGN


def _buffer(plan: CombinePlan, kind: str, tokens: int, device: torch.device,
            shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """A communication buffer owned by the plan, reused for every call with this token count
    (so a captured CUDA graph keeps pointing at it)."""
    key = (kind, tokens, str(device))
    buf = plan.buffers.get(key)
    if buf is None or buf.shape != shape or buf.dtype != dtype:
        buf = torch.empty(shape, dtype=dtype, device=device)
        plan.buffers[key] = buf
    return buf


def _check(plan: CombinePlan, partial_out: torch.Tensor, group: Any) -> tuple[int, int]:
    world = dist.get_world_size(group)
    if world != plan.world_size:
        raise ValueError(f"the plan is for world_size={plan.world_size}, the process group has "
                         f"{world} ranks")
    if partial_out.dim() != 3 or partial_out.shape[1:] != (plan.num_heads, plan.head_dim):
        raise ValueError(f"partial_out must be [T, H={plan.num_heads}, D={plan.head_dim}], found "
                         f"{tuple(partial_out.shape)}")
    if partial_out.dtype != plan.out_dtype:
        # gloo would reinterpret the bytes silently (bf16 read as fp16): refuse before sending
        raise ValueError(f"partial_out dtype {partial_out.dtype} differs from the plan's "
                         f"out_dtype {plan.out_dtype}; every rank must send the same dtype")
    return world, dist.get_rank(group)


def _local_lse(plan: CombinePlan, partial_lse: torch.Tensor, tokens: int) -> torch.Tensor:
    """This rank's LSE as a ``[T, H]`` view (record layout read through strides)."""
    view = plan.lse_view(partial_lse, heads=plan.num_heads, stacked=False)
    return view.reshape(tokens, plan.num_heads)  # a view for [T, H]; [B, q, H] merges B and q


def dcp_combine(plan: CombinePlan, partial_out: torch.Tensor, partial_lse: torch.Tensor,
                group: Any = None, *, out: torch.Tensor | None = None) -> Any:
    """Combine this rank's partial attention with the other ranks' (see the module docstring).

    Returns ``out`` (``[T, H/N, D]`` for ``ag_rs``/``a2a``, ``[T, H, D]`` for ``ar``), or
    ``(out, lse)`` when the plan returns the merged LSE (float32, the plan's output base).
    """
    if plan.mode == "merge":
        raise ValueError("dcp_combine runs the collective modes ('ag_rs', 'a2a', 'ar'); call a "
                         "'merge' plan directly on the stacked partials")
    world, rank = _check(plan, partial_out, group)
    tokens = partial_out.shape[0]
    lse = _local_lse(plan, partial_lse, tokens)
    if world == 1:
        result = out.copy_(partial_out) if out is not None else partial_out
        return (result, lse.float()) if plan.return_lse else result
    if plan.mode == "a2a":
        return _a2a(plan, partial_out, lse, group, world, out)
    return _gather_rescale(plan, partial_out, lse, group, world, rank, out)


def _gather_lse(plan: CombinePlan, lse: torch.Tensor, group: Any, world: int) -> torch.Tensor:
    t, h = lse.shape
    mine = _buffer(plan, "lse_local", t, lse.device, (t, h), torch.float32)
    mine.copy_(lse)  # fp32 on the wire whatever the kernel's LSE dtype
    gathered = _buffer(plan, "lse_all", t, lse.device, (world * t, h), torch.float32)
    _all_gather(gathered, mine, group=group)  # concatenated on dim 0: what gloo and NCCL take
    return gathered.view(world, t, h)


def _gather_rescale(plan: CombinePlan, partial_out: torch.Tensor, lse: torch.Tensor, group: Any,
                    world: int, rank: int, out: torch.Tensor | None) -> Any:
    t, h, d = partial_out.shape
    all_lse = _gather_lse(plan, lse, group, world)
    lse_all_heads = lse.new_empty((t, h), dtype=torch.float32) if plan.return_lse else None
    if plan.mode == "ar":
        result = out if out is not None else partial_out.new_empty((t, h, d))
        plan.launch(partial_out, all_lse, rank=rank, out=result, lse_out=lse_all_heads)
        dist.all_reduce(result, group=group)
        return (result, lse_all_heads) if plan.return_lse else result
    hc = h // world
    chunks = _buffer(plan, "chunks", t, partial_out.device, (world, t, hc, d), plan.out_dtype)
    plan.launch(partial_out, all_lse, rank=rank, out=chunks, lse_out=lse_all_heads)
    result = out if out is not None else partial_out.new_empty((t, hc, d))
    _reduce_scatter(result, chunks.view(world * t, hc, d), group=group)
    if plan.return_lse and lse_all_heads is not None:
        return result, lse_all_heads[:, rank * hc : (rank + 1) * hc]
    return result


def _a2a(plan: CombinePlan, partial_out: torch.Tensor, lse: torch.Tensor, group: Any,
         world: int, out: torch.Tensor | None) -> Any:
    t, h, d = partial_out.shape
    hc = h // world
    o_bytes = _aligned(t * hc * d * partial_out.element_size())
    piece = o_bytes + _aligned(t * hc * 4)
    send = _buffer(plan, "a2a_send", t, partial_out.device, (world, piece), torch.uint8)
    recv = _buffer(plan, "a2a_recv", t, partial_out.device, (world, piece), torch.uint8)
    # one pass: each destination's heads of O [T, H/N, D] and its fp32 LSE bits [T, H/N]
    pack_a2a(partial_out, lse, send, o_bytes=o_bytes, pdl=plan.pdl)
    dist.all_to_all_single(recv, send, group=group)
    o_recv, lse_recv = _pieces(recv, world, t, hc, d, o_bytes, plan.out_dtype)
    return plan.launch(o_recv, lse_recv, out=out)  # strided views into the message, no copy


def _pieces(buf: torch.Tensor, world: int, t: int, hc: int, d: int, o_bytes: int,
            dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """The output ``[N, T, H/N, D]`` and LSE ``[N, T, H/N]`` views of a packed message buffer."""
    size = torch.finfo(dtype).bits // 8
    o = buf[:, : t * hc * d * size].view(dtype).view(world, t, hc, d)
    lse = buf[:, o_bytes : o_bytes + t * hc * 4].view(torch.float32).view(world, t, hc)
    return o, lse
