"""The launches of the combine kernels: one object per launch (:class:`CombineLaunch`,
:class:`PackLaunch`) holding the call's tensors and every decision the launcher made, the one launch
body per kernel that reads it (Triton, or the torch reference's path on a CPU without the
interpreter), and the torch custom ops ``attn_contracts::merge_``, ``rescale_`` and ``pack_a2a_``
whose bodies rebuild the object from the op's flat schema. The public ops (``ops.py``) check their
inputs and call :func:`combine_launch` / :func:`pack_launch`, the one seam a test or benchmark
replaces to observe or skip a launch."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import torch

from attn_contracts.combine.launch import Prepared
from attn_contracts.combine.launch import launch_grid
from attn_contracts.combine.launch import launcher
from attn_contracts.combine.launch import uses_triton
from attn_contracts.combine.message import A2AMessage
from attn_contracts.combine.reference import log_of_base
from attn_contracts.combine.reference import merge_reference
from attn_contracts.combine.reference import rescale_reference
from attn_contracts.combine.tiles import KernelConfig
from attn_contracts.combine.tiles import cdiv
from attn_contracts.records import LOG2E

__all__ = [
    "CombineLaunch",
    "PackLaunch",
    "combine_launch",
    "lse_scales",
    "mask_word",
    "merge_into",
    "pack_a2a_into",
    "pack_launch",
    "rescale_into",
]


@functools.lru_cache(maxsize=16)
def lse_scales(base: str, lse_out_base: str) -> tuple[float, float]:
    """``(IN_SCALE, OUT_SCALE)`` of the kernels: log2 of the base, and ln b_in / ln b_out."""
    in_scale = LOG2E if base == "e" else 1.0  # log2(b)
    return in_scale, log_of_base(base) / log_of_base(lse_out_base)


def _lse_geometry(lse: torch.Tensor) -> tuple[int, int, int, int, int]:
    """``(Q_LEN, s_n, s_b, s_q, s_h)``: ``[N, T, H]`` read as ``[N, T, 1, H]`` (no view made)."""
    if lse.dim() == 3:
        s_n, s_t, s_h = lse.stride()
        return 1, s_n, s_t, 0, s_h
    return lse.shape[2], *lse.stride()  # type: ignore[return-value]


def _lse3(lse: torch.Tensor) -> torch.Tensor:
    return lse if lse.dim() == 3 else lse.reshape(lse.shape[0], -1, lse.shape[-1])


def mask_word(mask: torch.Tensor, n: int, s_mn: int, s_mt: int) -> int:
    """The bits of one load that reads a row's ``n`` uint8 mask entries at once (``MASK_WORD`` of
    ``_kernels._load_lses``), or 0: adjacent (``s_mn = 1``), exactly a 2-, 4- or 8-byte word, and
    every row's word aligned."""
    if mask.dtype != torch.uint8 or n not in (2, 4, 8) or s_mn != 1 or mask.data_ptr() % n:
        return 0
    return 8 * n if mask.shape[-1] == 1 or s_mt % n == 0 else 0


def _mask_operands(mask: torch.Tensor | None, sink: torch.Tensor | None, dummy: torch.Tensor,
                   base: str, n: int) -> tuple[torch.Tensor, torch.Tensor, tuple[int, int, int],
                                               dict[str, Any]]:
    """Pointers, strides ``(s_mn, s_mt, s_s)`` and constexprs of the optional mask (over ``n``
    shards) and sink (an absent one points at ``dummy`` and is never read: its ``HAS_*`` is
    False)."""
    s_mn, s_mt = (mask.stride() if mask.dim() == 2 else (0, mask.stride(0))) if mask is not None \
        else (0, 0)
    consts = dict(HAS_MASK=mask is not None,
                  MASK_WORD=mask_word(mask, n, s_mn, s_mt) if mask is not None else 0,
                  HAS_SINK=sink is not None, SINK_SCALE=1.0 / log_of_base(base))
    return (mask if mask is not None else dummy, sink if sink is not None else dummy,
            (s_mn, s_mt, sink.stride(0) if sink is not None else 0), consts)


def _torch_row_mask(mask: torch.Tensor | None, mask_q: int) -> torch.Tensor | None:
    """The torch path's bool ``[.., T]`` row mask from the kernel's operand."""
    if mask is None:
        return None
    return (mask > 0).repeat_interleave(mask_q, dim=-1) if mask_q > 1 else mask > 0


# --- launches -------------------------------------------------------------------------------------
# A launch is one object: the call's tensors and every decision the launcher made (tiles, PDL, the
# mask operand). The eager path hands it to the launch body; a traced call flattens it into the
# op's arguments (``op_args``), and the op's body, whose flat signature is the op's schema, makes
# it again. The ops' schemas are the only other place the parameters are written.
@dataclass(frozen=True, slots=True)
class CombineLaunch:
    """One ``merge`` or ``rescale`` launch, every decision made.

    ``partial_out [N, T, H, D]`` (merge) or one rank's ``[T, H, D]`` (rescale, ``rank`` not
    None); ``lse [N, T, H]`` / ``[N, B, Q, H]`` (strided); ``out [T, H, D]`` or, for a rescale,
    head chunks ``[C, T, H/C, D]``; ``lse_out [T, H]`` fp32 or None; ``config``: the tiles, its
    ``pdl`` the launch's PDL mode (0: off); ``mask``: the kernel's operand, uint8 or int
    ``[N, T / mask_q]`` (``merge``'s ``row_mask``/``lens``); ``sink [H]`` natural-log logits."""

    partial_out: torch.Tensor
    lse: torch.Tensor
    out: torch.Tensor
    lse_out: torch.Tensor | None
    base: str
    lse_out_base: str
    config: KernelConfig
    mask: torch.Tensor | None = None
    mask_q: int = 1
    sink: torch.Tensor | None = None
    rank: int | None = None

    def op_args(self) -> tuple[Any, ...]:
        """The arguments of the op ``attn_contracts::merge_`` (``rescale_``: ``rank`` third)."""
        c = self.config
        lead = (self.partial_out, self.lse) if self.rank is None else \
            (self.partial_out, self.lse, self.rank)
        return (*lead, self.out, self.lse_out, self.base, self.lse_out_base, c.block_h, c.block_d,
                c.num_warps, c.pdl, self.mask, self.mask_q, self.sink, c.maxnreg)


@dataclass(frozen=True, slots=True)
class PackLaunch:
    """One ``pack_a2a`` launch: ``partial_out [T, H, D]``, ``lse [T, H]`` (strided), ``send
    [N, piece]`` (uint8), the LSE at byte ``o_bytes`` of a piece, tiles and PDL in ``config``,
    the mask operand (uint8 or int ``[T / mask_q]``)."""

    partial_out: torch.Tensor
    lse: torch.Tensor
    send: torch.Tensor
    o_bytes: int
    config: KernelConfig
    mask: torch.Tensor | None = None
    mask_q: int = 1

    def op_args(self) -> tuple[Any, ...]:
        """The arguments of the op ``attn_contracts::pack_a2a_``."""
        c = self.config
        return (self.partial_out, self.lse, self.send, self.o_bytes, c.block_h, c.block_d,
                c.num_warps, c.pdl, self.mask, self.mask_q, c.maxnreg)


def combine_launch(a: CombineLaunch) -> Prepared | None:
    """Launch a merge or a rescale (``a.rank`` set), returning the launch it made (None on the
    torch path or for no rows: nothing to run again)."""
    o, lse, out, lse_out = a.partial_out, a.lse, a.out, a.lse_out
    t, h, d = o.shape[-3:]
    if t == 0 or h == 0 or d == 0:
        return None
    chunks = out.shape[0] if out.dim() == 4 else 1  # [C, T, H/C, D]: a rescale for a reduce-scatter
    if not uses_triton(o):
        _torch_combine(a, chunks)
        return None
    q_len, *lse_strides = _lse_geometry(lse)
    in_scale, out_scale = lse_scales(a.base, a.lse_out_base)
    z = lse_out if lse_out is not None else out  # never written when WRITE_LSE is False
    n = lse.shape[0]
    m, k, extra_strides, extra_consts = _mask_operands(a.mask, a.sink, lse, a.base, n)
    lead: tuple[int, ...]
    if a.rank is None:
        name, lead, y_strides = "merge_kernel", (t, h, d, q_len, a.mask_q), out.stride()
    else:  # rescale: head h goes to chunk h // HC; a plain [T, H, D] out is one chunk
        name, lead = "rescale_kernel", (a.rank, t, h, d, q_len, h // chunks, a.mask_q)
        y_strides = out.stride() if out.dim() == 4 else (0, *out.stride())
    cfg = a.config
    return launcher(name)(
        launch_grid(t, h, d, cfg.block_h, cfg.block_d), (o, lse, out, z, m, k),
        (*lead, *o.stride(), *lse_strides, *y_strides, z.stride(0), z.stride(1), *extra_strides),
        dict(N=n, IN_SCALE=in_scale, OUT_SCALE=out_scale, WRITE_LSE=lse_out is not None,
             **extra_consts, BLOCK_H=cfg.block_h, BLOCK_D=cfg.block_d,
             NUM_DB=cdiv(d, cfg.block_d)),
        cfg.num_warps, cfg.pdl, cfg.maxnreg)


def _torch_combine(a: CombineLaunch, chunks: int) -> None:
    """The torch path of a launch (CPU without the interpreter): the reference in fp32."""
    row_mask = _torch_row_mask(a.mask, a.mask_q)
    if a.rank is None:
        o, lse = merge_reference(a.partial_out, _lse3(a.lse), base=a.base,
                                 lse_out_base=a.lse_out_base, dtype=torch.float32,
                                 row_mask=row_mask, sink=a.sink)
    else:
        o, lse = rescale_reference(a.partial_out, _lse3(a.lse), a.rank, base=a.base,
                                   lse_out_base=a.lse_out_base, dtype=torch.float32,
                                   row_mask=row_mask, sink=a.sink)
    if a.out.dim() == 4:  # [T, H, D] → [C, T, H/C, D]
        t, h, d = o.shape
        o = o.view(t, chunks, h // chunks, d).transpose(0, 1)
    a.out.copy_(o)
    if a.lse_out is not None:
        a.lse_out.copy_(lse)


def pack_launch(a: PackLaunch) -> Prepared | None:
    """Launch a ``pack_a2a``, returning the launch it made (see ``combine_launch``)."""
    o, lse, send, mask = a.partial_out, a.lse, a.send, a.mask
    t, h, d = o.shape
    world = send.shape[0]
    hc = h // world
    if t == 0 or h == 0 or d == 0:
        return None
    if not uses_triton(o):
        o_send, lse_send = A2AMessage(world, t, hc, d, o.element_size()).views(
            send, o.dtype, o_bytes=a.o_bytes)
        o_send.copy_(o.view(t, world, hc, d).transpose(0, 1))  # [N, T, H/N, D]
        lse_send.copy_(lse.view(t, world, hc).transpose(0, 1))  # fp32 bits, [N, T, H/N]
        keep = _torch_row_mask(mask, a.mask_q)
        if keep is not None:
            o_send.masked_fill_(~keep.view(1, t, 1, 1), 0.0)
            lse_send.masked_fill_(~keep.view(1, t, 1), -math.inf)
        return None
    size = o.element_size()
    o_dst = send.view(o.dtype)  # [N, piece / size]
    lse_dst = send[:, a.o_bytes:].view(torch.float32)  # [N, (piece - o_bytes) / 4]
    cfg = a.config
    return launcher("pack_a2a_kernel")(
        launch_grid(t, h, d, cfg.block_h, cfg.block_d),
        (o, lse, mask if mask is not None else lse, o_dst, lse_dst),
        (t, h, d, hc, a.mask_q, *o.stride(), *lse.stride(),
         mask.stride(0) if mask is not None else 0, send.stride(0) // size, send.stride(0) // 4),
        dict(HAS_MASK=mask is not None, BLOCK_H=cfg.block_h, BLOCK_D=cfg.block_d,
             NUM_DB=cdiv(d, cfg.block_d)),
        cfg.num_warps, cfg.pdl, cfg.maxnreg)


# --- custom ops -----------------------------------------------------------------------------------
# Each op's body takes the op's schema (flat: torch.library reads it from the signature) and
# launches through the same body as an eager call, with no input checks: for callers that
# checked once (``merge`` checks, then launches).
def merge_into(partial_out: torch.Tensor, partial_lse: torch.Tensor, out: torch.Tensor,
               lse_out: torch.Tensor | None, base: str, lse_out_base: str,
               block_h: int, block_d: int, num_warps: int, pdl: int = 0,
               mask: torch.Tensor | None = None, mask_q: int = 1,
               sink: torch.Tensor | None = None, maxnreg: int = 0) -> None:
    """The body of the op ``attn_contracts::merge_`` (:class:`CombineLaunch` says what each
    argument is; ``pdl``: the kernel's PDL mode, 0 off, ``_kernels.py``; ``maxnreg``: the tiles'
    register cap, 0 none)."""
    combine_launch(CombineLaunch(partial_out, partial_lse, out, lse_out, base, lse_out_base,
                                  KernelConfig(block_h, block_d, num_warps, pdl, maxnreg),
                                  mask, mask_q, sink))


def rescale_into(partial_out: torch.Tensor, all_lse: torch.Tensor, rank: int, out: torch.Tensor,
                 lse_out: torch.Tensor | None, base: str, lse_out_base: str,
                 block_h: int, block_d: int, num_warps: int, pdl: int = 0,
                 mask: torch.Tensor | None = None, mask_q: int = 1,
                 sink: torch.Tensor | None = None, maxnreg: int = 0) -> None:
    """The body of the op ``attn_contracts::rescale_`` (see :func:`merge_into`)."""
    combine_launch(CombineLaunch(partial_out, all_lse, out, lse_out, base, lse_out_base,
                                  KernelConfig(block_h, block_d, num_warps, pdl, maxnreg),
                                  mask, mask_q, sink, rank))


def pack_a2a_into(partial_out: torch.Tensor, lse: torch.Tensor, send: torch.Tensor, o_bytes: int,
                  block_h: int, block_d: int, num_warps: int, pdl: int = 0,
                  mask: torch.Tensor | None = None, mask_q: int = 1, maxnreg: int = 0) -> None:
    """The body of the op ``attn_contracts::pack_a2a_`` (:class:`PackLaunch`)."""
    pack_launch(PackLaunch(partial_out, lse, send, o_bytes,
                            KernelConfig(block_h, block_d, num_warps, pdl, maxnreg), mask, mask_q))


def _writes_in_place(*args: Any, **kwargs: Any) -> None:
    """The fake of every op here: each writes only into tensors it was given, so tracing needs
    no output (its parameters are the op's own, declared once, by the op's body)."""
    return None


_merge_op = torch.library.custom_op("attn_contracts::merge_", mutates_args=("out", "lse_out"))(
    merge_into)
_merge_op.register_fake(_writes_in_place)
_rescale_op = torch.library.custom_op(
    "attn_contracts::rescale_", mutates_args=("out", "lse_out"))(rescale_into)
_rescale_op.register_fake(_writes_in_place)
_pack_op = torch.library.custom_op("attn_contracts::pack_a2a_", mutates_args=("send",))(
    pack_a2a_into)
_pack_op.register_fake(_writes_in_place)
