"""FlashInfer's fused DCP combine as a mode of the planner (``fi_a2a``).

``flashinfer.comm.decode_cp_a2a_lse_reduce(partial_o, partial_lse, workspace, cp_rank, cp_size,
lse_mode)`` (FlashInfer 0.7.2.post1, ``flashinfer/comm/dcp_lse_reduce.py``) moves each peer's
slice over NCCL symmetric memory and merges in one cooperative kernel. Its contract is the
consumer record ``flashinfer.decode_cp_a2a_lse_reduce``; this module is what the plan does so
that the contract holds on every call:

* the base is the record's, passed as ``lse_mode`` on every call (``"base2"``/``"basee"``): never
  FlashInfer's default, which is base 2 whatever the producer emits;
* the head scatter of a DCP combine is laid out the way the op reads it: ``partial_o [T, H/N, N,
  D]`` with ``[..., r, :]`` the heads ``r·H/N ..`` bound for rank ``r``, the LSE ``[T, H/N, N]`` in
  fp32 (one pass from the record's layout, which also makes them contiguous, as the op needs);
* FlashInfer's merge multiplies each partial by its weight (``0 · NaN = NaN``), so rows that a
  rank has no keys for are zeroed (O) and set to −inf (LSE) in that same pass when the call
  passes a row mask; the plan requires one where the record's empty rows are not written as 0
  (``lse.empty_out``) or their LSE is undefined (``AC025``);
* every rank creates the workspace together (``decode_cp_a2a_lse_reduce_create_workspace``,
  collective), once per slot: FlashInfer allows one ordered CUDA stream per workspace.

What ranks must pass identically (base, world size, heads, head dim, dtype, workspace size) is
checked at startup (``validate_startup(group=...)``, ``AC031``): FlashInfer does not detect a
mismatch on the host and its kernel spins (flashinfer #4586).
"""

from __future__ import annotations

import importlib.util
import math
from dataclasses import dataclass
from typing import Any

import torch

from attn_contracts.combine.groups import nccl_group_unavailable
from attn_contracts.findings import error_text
from attn_contracts.setting import CombineSetting

__all__ = ["FUSED_DTYPES", "FusedBuffers", "fused_combine", "fused_unavailable",
           "fused_unavailable_here"]

FUSED_DTYPES = ("float16", "bfloat16")
#: FlashInfer's own bound (dcp_lse_reduce.py: cp_size must not exceed 64)
MAX_RANKS = 64
_ROW_ALIGN = 16  # bytes: FlashInfer's 16-byte vector rows


def _flashinfer_missing() -> str | None:
    """Why FlashInfer's fused op cannot be imported here (None: it can)."""
    if importlib.util.find_spec("flashinfer") is None:
        return "FlashInfer is not installed (the fused op is in flashinfer-python >= 0.7.2.post1)"
    try:
        import flashinfer.comm as comm
    except Exception as err:  # its comm package imports many optional pieces: say which failed
        return f"flashinfer.comm does not import here: {error_text(err)}"
    if getattr(comm, "decode_cp_a2a_lse_reduce", None) is None:
        return ("this FlashInfer has no flashinfer.comm.decode_cp_a2a_lse_reduce (it is in "
                "flashinfer-python >= 0.7.2.post1)")
    return None


def fused_unavailable_here(setting: CombineSetting) -> str | None:
    """Why ``fi_a2a`` cannot run with ``setting`` in this process (None if it can, as far as one
    process can tell: the group and NCCL are asked when the workspace is made)."""
    d, dtype = setting.head_dim, setting.out_dtype
    if setting.sink:
        return "FlashInfer's fused op adds no attention sink (plan sink=False, or mode 'a2a')"
    if setting.return_lse:
        return "FlashInfer's fused op returns no merged LSE (plan return_lse=False, or mode 'a2a')"
    if dtype not in FUSED_DTYPES:
        return f"out_dtype {dtype} (allowed: {', '.join(FUSED_DTYPES)})"
    if (d * setting.out_dtype_bytes) % _ROW_ALIGN:
        return (f"head_dim {d} × {setting.out_dtype_bytes} bytes is not a multiple of "
                f"{_ROW_ALIGN} bytes (FlashInfer's rows are 16-byte vectors)")
    if setting.world_size > MAX_RANKS:
        return f"world_size {setting.world_size} (FlashInfer allows at most {MAX_RANKS} ranks)"
    if not torch.cuda.is_available():
        return "no CUDA device (FlashInfer's fused op runs on GPUs of one NVLink domain)"
    return _flashinfer_missing()


def fused_unavailable(group: Any, setting: CombineSetting) -> str | None:
    """Why ``fi_a2a`` cannot run on ``group`` (None if it can)."""
    return nccl_group_unavailable(group, fused_unavailable_here(setting),
                                  "FlashInfer's workspace is NCCL symmetric memory")


@dataclass(frozen=True)
class FusedBuffers:
    """One slot of an ``fi_a2a`` workspace: FlashInfer's symmetric workspace (made by every rank
    together) and the send tensors the pass lays the partials out in."""

    workspace: torch.Tensor  # uint8, NCCL symmetric memory (FlashInfer's)
    o_send: torch.Tensor  # [T_max, H/N, N, D] out dtype
    lse_send: torch.Tensor  # [T_max, H/N, N] fp32
    rank: int
    world: int

    @classmethod
    def create(cls, group: Any, max_tokens: int, num_heads: int, head_dim: int,
               dtype: torch.dtype, device: torch.device) -> FusedBuffers:
        """Collective: every rank of ``group`` calls it, in the same order."""
        import flashinfer.comm as comm
        import torch.distributed as dist

        group = group if group is not None else dist.group.WORLD  # FlashInfer names the group
        world, rank = dist.get_world_size(group), dist.get_rank(group)
        hc = num_heads // world
        with torch.cuda.device(device):
            ws = comm.decode_cp_a2a_lse_reduce_create_workspace(max_tokens, hc, world, head_dim,
                                                                dtype, group)
        o = torch.zeros((max_tokens, hc, world, head_dim), dtype=dtype, device=device)
        lse = torch.full((max_tokens, hc, world), -math.inf, dtype=torch.float32, device=device)
        # One call of one all-empty token, by every rank at the same point: FlashInfer checks
        # NCCL's device API (>= 2.29) only when the op runs, and a step is too late to learn it.
        comm.decode_cp_a2a_lse_reduce(o[:1], lse[:1], ws, rank, world, lse_mode="base2")
        return cls(ws, o, lse, rank, world)


def fused_combine(bufs: FusedBuffers, partial_out: torch.Tensor, lse: torch.Tensor, *, base: str,
                  row_mask: torch.Tensor | None, out: torch.Tensor | None) -> torch.Tensor:
    """This rank's ``[T, H/N, D]`` of the merged output. ``partial_out [T, H, D]``, ``lse
    [T, H]`` (the record's layout read through strides, any float dtype), ``row_mask [T]``
    (bool: the rows this rank holds keys for) or None."""
    import flashinfer.comm as comm

    t, h, _ = partial_out.shape
    n = bufs.world
    hc = h // n
    # splitting one axis is a view whatever its stride (reshape copies nothing here):
    # [T, N, H/N, D] → [T, H/N, N, D], so [..., r, :] holds the heads bound for rank r, as the op
    # reads its cp_size axis
    o_view = partial_out.reshape(t, n, hc, partial_out.shape[-1]).permute(0, 2, 1, 3)
    lse_view = lse.reshape(t, n, hc).permute(0, 2, 1)  # [T, H/N, N]
    o_send, lse_send = bufs.o_send[:t], bufs.lse_send[:t]
    if row_mask is None:
        o_send.copy_(o_view)
        lse_send.copy_(lse_view)
    else:  # the mask rides in the pass that lays the partials out: no extra kernel per buffer
        keep = row_mask.view(t, 1, 1)
        torch.where(keep.unsqueeze(-1), o_view, _zero(partial_out.device, partial_out.dtype),
                    out=o_send)
        torch.where(keep, lse_view.float(), _neg_inf(lse.device), out=lse_send)
    result: torch.Tensor = comm.decode_cp_a2a_lse_reduce(
        o_send, lse_send, bufs.workspace, bufs.rank, n,
        lse_mode="basee" if base == "e" else "base2")
    if out is None:
        return result
    out.copy_(result)
    return out


_CONSTANTS: dict[tuple[torch.device, torch.dtype, float], torch.Tensor] = {}


def _constant(device: torch.device, dtype: torch.dtype, value: float) -> torch.Tensor:
    """A 0-d constant per (device, dtype), made once (outside any graph capture), never written."""
    key = (device, dtype, value)
    if key not in _CONSTANTS:
        _CONSTANTS[key] = torch.tensor(value, device=device, dtype=dtype)
    return _CONSTANTS[key]


def _zero(device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    return _constant(device, dtype, 0.0)


def _neg_inf(device: torch.device) -> torch.Tensor:
    return _constant(device, torch.float32, -math.inf)
