"""DCP combine over ``torch.distributed``: the same code on NCCL (GPUs) and gloo (CPU).

Each rank holds ``partial_out [T, H, D]`` and its LSE (in the record's layout) for its shard of
the KV cache; :func:`dcp_combine` runs the plan's mode:

``ag_rs``  all-gather the fp32 LSE ``[N, T, H]``, rescale the local partial straight into a
           head-chunked ``[N, T, H/N, D]`` buffer, reduce-scatter it → ``[T, H/N, D]`` per rank.
``a2a``    one all-to-all whose message to rank j is ``o[:, heads_j, :]`` *and* the fp32 bits of
           ``lse[:, heads_j]`` packed together (no lossy cast, one collective), then merge the
           ``N`` received partials → ``[T, H/N, D]``.
``ar``     all-gather the LSE, rescale, all-reduce → every rank holds ``[T, H, D]``.
``fi_a2a`` FlashInfer's fused ``decode_cp_a2a_lse_reduce`` (``combine/fused.py``) → ``[T, H/N, D]``.

Empty shards: ``row_mask [T]`` (bool, True where this rank holds keys for the row) gives the
other rows weight 0 whatever the kernel wrote there: their LSE is sent as −inf (fused into the
copy that puts the LSE on the wire, or into the all-to-all pack), so every rank weighs them 0.
``lens [B]`` (local lengths per request, uniform ``q_len``) is the same mask by request.
Sinks: ``sink [H]`` (float logits, natural-log units) is added once, by the kernel after the merge.

Buffers come from a :class:`~attn_contracts.combine.workspace.Workspace` the caller owns (fixed
addresses: capture a step in a CUDA graph after one warm-up call). Without one, each call of a mode
whose table entry allows it allocates its own (fine eagerly, not for graphs); ``a2a_direct`` and
``a2a_best`` need one (their buffers, and the choice, are made once by every rank together). World
size 1 without a workspace runs the plan's kernel on the one partial, so the LSE comes back in the
plan's output base and empty rows sanitised, as on every other path; a step of no tokens returns
empty outputs. Which collective runs comes from the mode table (``attn_contracts.modes``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

from attn_contracts.checks import check_call_device
from attn_contracts.checks import check_call_lse
from attn_contracts.checks import check_call_out
from attn_contracts.checks import check_call_row_mask
from attn_contracts.checks import check_mode_call
from attn_contracts.checks import refuse
from attn_contracts.combine.direct import direct_merge
from attn_contracts.combine.direct import direct_send
from attn_contracts.combine.fastpath import PLANS
from attn_contracts.combine.fastpath import KernelCall
from attn_contracts.combine.fastpath import keep
from attn_contracts.combine.fastpath import sig
from attn_contracts.combine.fused import fused_combine
from attn_contracts.combine.inputs import LSE_DTYPES
from attn_contracts.combine.inputs import check_writable
from attn_contracts.combine.inputs import row_mask_arg
from attn_contracts.combine.launches import lse_scales
from attn_contracts.combine.ops import pack_a2a
from attn_contracts.combine.plan import CombinePlan
from attn_contracts.combine.plan import _dtype_name
from attn_contracts.combine.plan import _layout_text
from attn_contracts.combine.reference import log_of_base
from attn_contracts.combine.tiles import default_config
from attn_contracts.combine.tiles import sm_count
from attn_contracts.combine.workspace import Workspace

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


def _check_mask(plan: CombinePlan, row_mask: torch.Tensor | None, lens: torch.Tensor | None,
                tokens: int) -> torch.Tensor | None:
    """This rank's row mask ``[T]`` (bool) from ``row_mask`` or ``lens [B]`` (local lengths per
    request, uniform ``q_len = T / B``); refuses a call without one where the plan needs it."""
    plan.check_row_mask(row_mask is not None or lens is not None)
    if row_mask is not None and (lens is not None or row_mask.dtype != torch.bool
                                 or tuple(row_mask.shape) != (tokens,)):
        refuse(check_call_row_mask(plan.record.name, shape=tuple(row_mask.shape),
                                   dtype=_dtype_name(row_mask.dtype), want=(tokens,),
                                   lens=lens is not None), "the row mask does not fit the call")
    if lens is not None:
        _, q_len = row_mask_arg(None, lens, (), tokens, lens.device)  # checks lens, T = B·q_len
        return (lens > 0).repeat_interleave(q_len) if q_len > 1 else lens > 0
    return row_mask


def _local_lse(plan: CombinePlan, partial_lse: torch.Tensor, tokens: int) -> torch.Tensor:
    """This rank's LSE as a ``[T, H]`` view (record layout read through strides)."""
    view = plan.lse_view(partial_lse, heads=plan.num_heads, stacked=False)
    # checked here, not by the op: ag_rs and ar put the LSE on the wire before any op sees it
    rows = math.prod(view.shape[:-1])
    if view.dtype not in LSE_DTYPES or rows != tokens:
        refuse(check_call_lse(plan.record.name, shape=tuple(partial_lse.shape),
                              layout=_layout_text(plan.lse, False), dtype=_dtype_name(view.dtype), rows=rows,
                              tokens=tokens), "the LSE does not fit the call")
    flat: torch.Tensor = view.reshape(tokens, plan.num_heads)  # a view: [B, q, H] merges B, q
    return flat


def _out_heads(plan: CombinePlan) -> int:
    """Heads of this rank's output: ``H / N`` where the mode scatters heads, else ``H``."""
    return plan.num_heads // plan.world_size if plan.setting.spec.scatters_heads else plan.num_heads


def _check_out(plan: CombinePlan, out: torch.Tensor | None, tokens: int,
               device: torch.device) -> None:
    """``out [T, heads, D]`` in the plan's dtype, on the partials' device, never overlapping
    itself: ``ag_rs`` reduce-scatters straight into it, so no op checks it there."""
    if out is None:
        return
    want = (tokens, _out_heads(plan), plan.head_dim)
    refuse(check_call_out(plan.record.name, plan.setting, shape=tuple(out.shape),
                          dtype=str(out.dtype).removeprefix("torch."), want=want),
           f"out does not match its {plan.mode} plan")
    if out.device != device:
        refuse(check_call_device(plan.record.name, "out", found=str(out.device),
                                 want=str(device)), f"out does not match its {plan.mode} plan")
    check_writable(out=out)


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
                row_mask: torch.Tensor | None = None, lens: torch.Tensor | None = None,
                sink: torch.Tensor | None = None) -> Any:
    """Combine this rank's partial attention with the other ranks' (see the module docstring).

    ``row_mask [T]`` (bool) or ``lens [B]`` (this rank's local length per request, uniform
    ``q_len = T / B``) marks the rows this rank holds keys for; ``sink [H]`` as the plan asks.
    Returns ``out`` (``[T, H/N, D]`` for ``ag_rs``/``a2a``, ``[T, H, D]`` for ``ar``), or
    ``(out, lse)`` when the plan returns the merged LSE (float32, the plan's output base).
    A call that does not match its plan or its workspace is refused (``AC025``, ``AC027``).
    """
    key = None
    if workspace is None and lens is None and not torch.compiler.is_compiling():
        # a world of one: a call like an earlier one (same tensors' shape, strides, dtype, device,
        # alignment) passed the same checks and runs the same decided launch (``_world_of_one``)
        key = (plan.token, "dcp", sig(partial_out), sig(partial_lse), sig(out), sig(row_mask),
               sig(sink))
        fast = PLANS.get(key)
        if fast is not None and _size_and_rank(group)[0] == 1:
            return fast(partial_out, partial_lse, out, None, row_mask, sink)
    refuse(check_mode_call(plan.record.name, plan.setting, collective=True,
                           has_workspace=workspace is not None), "cannot run this combine")
    world, rank = _size_and_rank(group)
    plan.check_partials(partial_out, heads=plan.num_heads, stacked=False, world=world)
    tokens = partial_out.shape[0]
    row_mask = _check_mask(plan, row_mask, lens, tokens)
    plan.check_sink(sink)
    if workspace is not None:
        workspace.check_call(plan, group)
    lse = _local_lse(plan, partial_lse, tokens)
    _check_out(plan, out, tokens, partial_out.device)
    if tokens == 0:  # an empty step: every rank has it (the rows are the same on every rank)
        return _empty(plan, partial_out, out)
    if world == 1 and workspace is None:
        result, call = _world_of_one(plan, partial_out, lse, row_mask, sink, out)
        if key is not None and lse.data_ptr() == partial_lse.data_ptr():  # lse: a view, no copy
            keep(PLANS, key, call)
        return result
    if workspace is None:  # the table allows it: buffers for this call only (eager, no graphs)
        workspace = Workspace(plan, group, max_tokens=tokens, device=partial_out.device)
    return _RUNS[workspace.runs.collective](plan, partial_out, lse, group, world, rank, out,
                                             workspace, slot, row_mask, sink)


def _empty(plan: CombinePlan, partial_out: torch.Tensor, out: torch.Tensor | None) -> Any:
    """The result of a step of no tokens: ``[0, heads, D]`` (and ``[0, heads]`` LSE)."""
    heads = _out_heads(plan)
    result = out if out is not None else partial_out.new_empty((0, heads, plan.head_dim))
    if plan.return_lse:
        return result, partial_out.new_empty((0, heads), dtype=torch.float32)
    return result


def _world_of_one(plan: CombinePlan, partial_out: torch.Tensor, lse: torch.Tensor,
                  row_mask: torch.Tensor | None, sink: torch.Tensor | None,
                  out: torch.Tensor | None) -> tuple[Any, KernelCall | None]:
    """One rank, no workspace: the plan's kernel on one partial, so the LSE is converted to the
    plan's output base and empty rows sanitised exactly as on every other path. Also returns the
    decided launch (``CombinePlan.decided_launch``): the views start where the inputs do, so a
    later call passes the inputs themselves."""
    mask = None if row_mask is None else row_mask[None]
    return plan.decided_launch(partial_out[None] if plan.kernel == "merge" else partial_out,
                               lse[None], 0, out, None, mask, None, sink)


def _gather_lse(plan: CombinePlan, partial_out: torch.Tensor, lse: torch.Tensor, group: Any,
                world: int, ws: Workspace, slot: int, row_mask: torch.Tensor | None
                ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Every rank's fp32 LSE ``[N, T, H]`` (masked rows −inf), and the merged-LSE buffer."""
    t, h, _ = partial_out.shape
    mine, gathered = ws.lse_buffers(slot, t, partial_out.device)
    _wire_lse(lse, row_mask, mine)  # fp32 on the wire whatever the kernel's LSE dtype
    _all_gather(gathered, mine, group=group)  # concatenated on dim 0: what gloo and NCCL take
    lse_all_heads = lse.new_empty((t, h), dtype=torch.float32) if plan.return_lse else None
    return gathered.view(world, t, h), lse_all_heads


def _all_reduce(plan: CombinePlan, partial_out: torch.Tensor, lse: torch.Tensor, group: Any,
                world: int, rank: int, out: torch.Tensor | None, ws: Workspace, slot: int,
                row_mask: torch.Tensor | None, sink: torch.Tensor | None) -> Any:
    all_lse, lse_all_heads = _gather_lse(plan, partial_out, lse, group, world, ws, slot, row_mask)
    result = out if out is not None else partial_out.new_empty(partial_out.shape)
    plan.launch(partial_out, all_lse, rank=rank, out=result, lse_out=lse_all_heads, sink=sink)
    dist.all_reduce(result, group=group)
    return (result, lse_all_heads) if plan.return_lse else result


def _reduce_scatter_heads(plan: CombinePlan, partial_out: torch.Tensor, lse: torch.Tensor,
                          group: Any, world: int, rank: int, out: torch.Tensor | None,
                          ws: Workspace, slot: int, row_mask: torch.Tensor | None,
                          sink: torch.Tensor | None) -> Any:
    t, h, d = partial_out.shape
    all_lse, lse_all_heads = _gather_lse(plan, partial_out, lse, group, world, ws, slot, row_mask)
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
    t, h, _ = partial_out.shape
    hc = h // world
    send, recv, o_bytes = ws.messages(slot, t, partial_out.device)
    # one pass: each destination's heads of O [T, H/N, D] and its fp32 LSE bits [T, H/N], −inf
    # where row_mask says this rank has no keys (the receivers' merge then skips those rows)
    pack_a2a(partial_out, lse, send, o_bytes=o_bytes, row_mask=row_mask, pdl=plan.pdl)
    dist.all_to_all_single(recv, send, group=group)
    o_recv, lse_recv = ws.message(t).views(recv, plan.out_dtype)
    my_sink = None if sink is None else sink[rank * hc : (rank + 1) * hc]
    return plan.launch(o_recv, lse_recv, out=out, sink=my_sink)  # views into the message


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


_Run = Callable[[CombinePlan, torch.Tensor, torch.Tensor, Any, int, int, "torch.Tensor | None",
                 Workspace, int, "torch.Tensor | None", "torch.Tensor | None"], Any]


def _run_direct(plan: CombinePlan, partial_out: torch.Tensor, lse: torch.Tensor, group: Any,
                world: int, rank: int, out: torch.Tensor | None, ws: Workspace, slot: int,
                row_mask: torch.Tensor | None, sink: torch.Tensor | None) -> Any:
    return _a2a_direct(plan, partial_out, lse, out, ws, slot, row_mask, sink)


def _run_fused(plan: CombinePlan, partial_out: torch.Tensor, lse: torch.Tensor, group: Any,
               world: int, rank: int, out: torch.Tensor | None, ws: Workspace, slot: int,
               row_mask: torch.Tensor | None, sink: torch.Tensor | None) -> Any:
    """FlashInfer's fused combine (``fi_a2a``): one pass lays the head slices out (masked rows
    zeroed), then FlashInfer's op moves and merges them; the plan refused a sink and a merged
    LSE (the op has neither)."""
    bufs = ws.fused_buffers(slot, partial_out.shape[0], partial_out.device)
    return fused_combine(bufs, partial_out, lse, base=plan.base, row_mask=row_mask, out=out)


#: how each collective of the mode table runs (``Workspace.runs``: a choice already resolved)
_RUNS: dict[str, _Run] = {
    "all_to_all": _a2a,
    "symmetric_memory": _run_direct,
    "fused": _run_fused,
    "reduce_scatter": _reduce_scatter_heads,
    "all_reduce": _all_reduce,
}
