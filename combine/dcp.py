"""DCP combine over ``torch.distributed``: the same code on NCCL (GPUs) and gloo (CPU).

Each rank holds ``partial_out [T, H, D]`` and its LSE (in the record's layout) for its shard of
the KV cache; :func:`dcp_combine` runs the plan's mode:

``ag_rs``  all-gather the fp32 LSE ``[N, T, H]``, rescale the local partial straight into a
           head-chunked ``[N, T, H/N, D]`` buffer, reduce-scatter it → ``[T, H/N, D]`` per rank.
``a2a``    one all-to-all whose message to rank j is ``o[:, heads_j, :]`` *and* the fp32 bits of
           ``lse[:, heads_j]`` packed together (no lossy cast, one collective), then merge the
           ``N`` received partials → ``[T, H/N, D]``.
``ar``     all-gather the LSE, rescale, all-reduce → every rank holds ``[T, H, D]``.

Empty shards: ``row_mask [T]`` (bool, True where this rank holds keys for the row) gives the
other rows weight 0 whatever the kernel wrote there: their LSE is sent as −inf (fused into the
copy that puts the LSE on the wire, or into the all-to-all pack), so every rank weighs them 0.
Sinks: ``sink [H]`` (fp32 logits, natural-log units) is added once, by the kernel after the merge.

Buffers come from a :class:`~attn_contracts.combine.workspace.Workspace` the caller owns (fixed
addresses: capture a step in a CUDA graph after one warm-up call). Without one, each call allocates
its own (fine eagerly, not for graphs). World size 1 without a workspace returns the input (copied
into ``out=``); with one, it runs the same collective path as every other size.
"""

from __future__ import annotations

import functools
import math
from typing import Any

import torch
import torch.distributed as dist

from attn_contracts.combine.direct import direct_merge, direct_send
from attn_contracts.combine.ops import lse_scales, pack_a2a
from attn_contracts.combine.plan import CombinePlan
from attn_contracts.combine.reference import log_of_base
from attn_contracts.combine.tiles import default_config, sm_count
from attn_contracts.combine.workspace import Workspace
from attn_contracts.findings import ContractError

__all__ = ["dcp_combine"]

# torch 2.13 renamed the tensor collectives; 2.11 (the GPU machine) has only the old names.
_all_gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
_reduce_scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor


def _size_and_rank(group: Any) -> tuple[int, int]:
    """The group's size and this rank in it; a process group answers both itself (what
    ``dist.get_world_size``/``get_rank`` end in, minus their checks: a few µs per eager call)."""
    if group is not None and hasattr(group, "size") and hasattr(group, "rank"):
        return int(group.size()), int(group.rank())
    return dist.get_world_size(group), dist.get_rank(group)


def _check(plan: CombinePlan, partial_out: torch.Tensor, group: Any) -> tuple[int, int]:
    world, rank = _size_and_rank(group)
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
    return world, rank


def _check_mask(plan: CombinePlan, row_mask: torch.Tensor | None, tokens: int) -> None:
    if row_mask is None:
        if plan.needs_row_mask:
            raise ContractError([plan.missing_mask_finding()], "a row mask is required")
        return
    if row_mask.dtype != torch.bool or tuple(row_mask.shape) != (tokens,):
        raise ValueError(f"row_mask must be bool [T={tokens}], found {row_mask.dtype} "
                         f"{tuple(row_mask.shape)}")


def _local_lse(plan: CombinePlan, partial_lse: torch.Tensor, tokens: int) -> torch.Tensor:
    """This rank's LSE as a ``[T, H]`` view (record layout read through strides)."""
    view = plan.lse_view(partial_lse, heads=plan.num_heads, stacked=False)
    flat: torch.Tensor = view.reshape(tokens, plan.num_heads)  # a view: [B, q, H] merges B, q
    return flat


def _wire_lse(lse: torch.Tensor, row_mask: torch.Tensor | None, dst: torch.Tensor) -> None:
    """``dst ← lse`` as fp32 (the copy that puts it on the wire), with −inf where the row is
    masked: the mask rides in the same launch (a 0-d −inf operand, broadcast)."""
    if row_mask is None:
        dst.copy_(lse)
        return
    while row_mask.dim() < lse.dim():
        row_mask = row_mask.unsqueeze(-1)
    torch.where(row_mask, lse.float(), _neg_inf(lse.device), out=dst)


@functools.cache
def _neg_inf(device: torch.device) -> torch.Tensor:
    """A 0-d −inf per device, made once (outside any graph capture), never written."""
    return torch.tensor(-math.inf, device=device)


def dcp_combine(plan: CombinePlan, partial_out: torch.Tensor, partial_lse: torch.Tensor,
                group: Any = None, *, out: torch.Tensor | None = None,
                workspace: Workspace | None = None, slot: int = 0,
                row_mask: torch.Tensor | None = None, sink: torch.Tensor | None = None) -> Any:
    """Combine this rank's partial attention with the other ranks' (see the module docstring).

    Returns ``out`` (``[T, H/N, D]`` for ``ag_rs``/``a2a``, ``[T, H, D]`` for ``ar``), or
    ``(out, lse)`` when the plan returns the merged LSE (float32, the plan's output base).
    """
    if plan.mode == "merge":
        raise ValueError("dcp_combine runs the collective modes ('ag_rs', 'a2a', 'ar'); call a "
                         "'merge' plan directly on the stacked partials")
    world, rank = _check(plan, partial_out, group)
    tokens = partial_out.shape[0]
    _check_mask(plan, row_mask, tokens)
    plan.check_sink(sink)
    lse = _local_lse(plan, partial_lse, tokens)
    if world == 1 and workspace is None:
        return _world_of_one(plan, partial_out, lse, row_mask, sink, out)
    if workspace is None and plan.mode == "a2a_direct":
        raise ValueError("mode 'a2a_direct' needs a Workspace: its symmetric buffers are made "
                         "once, by every rank together (Workspace(plan, group, max_tokens=...))")
    if workspace is None:
        workspace = Workspace(plan, group, max_tokens=max(tokens, 1), device=partial_out.device)
    else:
        workspace.check_group(group)
    if plan.mode in ("a2a_direct", "a2a_best") and workspace.direct:
        return _a2a_direct(plan, partial_out, lse, out, workspace, slot, row_mask, sink)
    if plan.mode in ("a2a", "a2a_best"):
        return _a2a(plan, partial_out, lse, group, world, rank, out, workspace, slot, row_mask,
                    sink)
    return _gather_rescale(plan, partial_out, lse, group, world, rank, out, workspace, slot,
                           row_mask, sink)


def _world_of_one(plan: CombinePlan, partial_out: torch.Tensor, lse: torch.Tensor,
                  row_mask: torch.Tensor | None, sink: torch.Tensor | None,
                  out: torch.Tensor | None) -> Any:
    if row_mask is None and sink is None:
        result = out.copy_(partial_out) if out is not None else partial_out
        return (result, lse.float()) if plan.return_lse else result
    mask = None if row_mask is None else row_mask[None]
    return plan.launch(partial_out[None] if plan.kernel == "merge" else partial_out, lse[None],
                       rank=0, out=out, row_mask=mask, sink=sink)


def _gather_rescale(plan: CombinePlan, partial_out: torch.Tensor, lse: torch.Tensor, group: Any,
                    world: int, rank: int, out: torch.Tensor | None, ws: Workspace, slot: int,
                    row_mask: torch.Tensor | None, sink: torch.Tensor | None) -> Any:
    t, h, d = partial_out.shape
    mine, gathered = ws.lse_buffers(slot, t, partial_out.device)
    _wire_lse(lse, row_mask, mine)  # fp32 on the wire whatever the kernel's LSE dtype
    _all_gather(gathered, mine, group=group)  # concatenated on dim 0: what gloo and NCCL take
    all_lse = gathered.view(world, t, h)
    lse_all_heads = lse.new_empty((t, h), dtype=torch.float32) if plan.return_lse else None
    if plan.mode == "ar":
        result = out if out is not None else partial_out.new_empty((t, h, d))
        plan.launch(partial_out, all_lse, rank=rank, out=result, lse_out=lse_all_heads, sink=sink)
        dist.all_reduce(result, group=group)
        return (result, lse_all_heads) if plan.return_lse else result
    hc = h // world
    chunks = ws.chunks(slot, t, partial_out.device)
    plan.launch(partial_out, all_lse, rank=rank, out=chunks, lse_out=lse_all_heads, sink=sink)
    result = out if out is not None else partial_out.new_empty((t, hc, d))
    _reduce_scatter(result, chunks.view(world * t, hc, d), group=group)
    if plan.return_lse and lse_all_heads is not None:
        return result, lse_all_heads[:, rank * hc : (rank + 1) * hc]
    return result


def _a2a(plan: CombinePlan, partial_out: torch.Tensor, lse: torch.Tensor, group: Any,
         world: int, rank: int, out: torch.Tensor | None, ws: Workspace, slot: int,
         row_mask: torch.Tensor | None, sink: torch.Tensor | None) -> Any:
    t, h, d = partial_out.shape
    hc = h // world
    send, recv, o_bytes = ws.messages(slot, t, partial_out.device)
    # one pass: each destination's heads of O [T, H/N, D] and its fp32 LSE bits [T, H/N], −inf
    # where row_mask says this rank has no keys (the receivers' merge then skips those rows)
    pack_a2a(partial_out, lse, send, o_bytes=o_bytes, row_mask=row_mask, pdl=plan.pdl)
    dist.all_to_all_single(recv, send, group=group)
    o_recv, lse_recv = _pieces(recv, world, t, hc, d, o_bytes, plan.out_dtype)
    my_sink = None if sink is None else sink[rank * hc : (rank + 1) * hc]
    return plan.launch(o_recv, lse_recv, out=out, sink=my_sink)  # views into the message


def _pieces(buf: torch.Tensor, world: int, t: int, hc: int, d: int, o_bytes: int,
            dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """The output ``[N, T, H/N, D]`` and LSE ``[N, T, H/N]`` views of a packed message buffer."""
    size = torch.finfo(dtype).bits // 8
    o = buf[:, : t * hc * d * size].view(dtype).view(world, t, hc, d)
    lse = buf[:, o_bytes : o_bytes + t * hc * 4].view(torch.float32).view(world, t, hc)
    return o, lse


def _a2a_direct(plan: CombinePlan, partial_out: torch.Tensor, lse: torch.Tensor,
                out: torch.Tensor | None, ws: Workspace, slot: int,
                row_mask: torch.Tensor | None, sink: torch.Tensor | None) -> Any:
    """Two launches: write the head slices into the peers' buffers, then wait and merge."""
    t, h, d = partial_out.shape
    bufs = ws.direct_buffers(slot, t, partial_out.device)
    hc = h // plan.world_size
    sms = sm_count(partial_out.device)
    pack = default_config(plan.world_size, t, h, d, "pack", sms=sms)
    direct_send(bufs, partial_out, lse, row_mask, block_h=pack.block_h, block_d=pack.block_d,
                num_warps=pack.num_warps)
    result = out if out is not None else partial_out.new_empty((t, hc, d))
    lse_out = partial_out.new_empty((t, hc), dtype=torch.float32) if plan.return_lse else None
    cfg = plan.config or default_config(plan.world_size, t, hc, d, sms=sms)
    in_scale, out_scale = lse_scales(plan.base, plan.lse_out_base)
    my_sink = None if sink is None else sink[bufs.rank * hc : (bufs.rank + 1) * hc]
    direct_merge(bufs, result, lse_out, my_sink, in_scale=in_scale, out_scale=out_scale,
                 sink_scale=1.0 / log_of_base(plan.base), block_h=cfg.block_h,
                 block_d=cfg.block_d, num_warps=cfg.num_warps)
    return (result, lse_out) if plan.return_lse else result
