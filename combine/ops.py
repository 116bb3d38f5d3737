"""The combine ops: launchers of the combine kernels, registered as torch custom ops (their tiles
come from ``tiles.py``, the launch itself from ``launch.py``, a repeated call's decided launch from
``fastpath.py``).

``merge``, ``rescale`` and ``pack_a2a`` check their inputs (shapes, dtypes, devices), allocate what
the caller did not pass, and launch: every decision of a launch goes into one object
(:class:`CombineLaunch`, :class:`PackLaunch`), which the launch body reads. The ops
``attn_contracts::merge_``, ``attn_contracts::rescale_`` and ``attn_contracts::pack_a2a_`` write
only into the tensors they are given and have fake implementations, so
``torch.compile(fullgraph=True)`` traces through them and CUDA graphs capture them. On CUDA
tensors they run the Triton kernels; on CPU tensors they run the same kernels under
``TRITON_INTERPRET=1`` when it is set, else the torch path (fp32, the reference's policy).

LSE tensors are taken as ``[N, T, H]`` or ``[N, B, Q, H]`` strided views (``T = B·Q``); the
planner (``plan.py``) builds those views from a record's layout, never copies.

Empty shards by mask: ``row_mask [N, T]`` (bool or uint8, any strides; nonzero = the shard holds keys
for the row) or ``lens [N, B]`` (int32/int64 local lengths per request, uniform ``q_len = T / B``;
row ``t`` is request ``t // q_len``). Either is read inside the kernel (no extra launch); a masked
row gets weight 0 whatever its partial holds. Ragged ``query_start_loc`` is not supported. For
N = 2, 4 or 8, a row mask whose row entries are adjacent (a ``[T, N]`` uint8/bool buffer passed as
its ``[N, T]`` transpose) is read with one load per program instead of N: on an H200 that took a
rescale at (8, 2048, 32, 128) from +5.6 % to +1.3 % over the unmasked call
(``bench/results/goals-h200.md``).
Sinks: ``sink [H]`` per-head logits in natural-log units, added once after the merge
(``reference.py``). ``pack_a2a`` writes the all-to-all message of ``dcp.py`` in one pass.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any, NoReturn, TypedDict, Unpack

import torch

from attn_contracts.checks import SINK_DTYPES, check_rank, refuse
from attn_contracts.combine.fastpath import OPS, PackCall, keep, keep_call, lookup, pack_key
from attn_contracts.combine.launch import (
    MAX_GRID_YZ,
    Prepared,
    launch_grid,
    launcher,
    uses_triton,
)
from attn_contracts.combine.message import A2AMessage
from attn_contracts.combine.reference import (
    log_of_base,
    merge_reference,
    rescale_reference,
)
from attn_contracts.combine.tiles import KernelConfig, cdiv, default_config, sm_count
from attn_contracts.records import BASES, LOG2E

__all__ = [
    "MAX_GRID_YZ",
    "OUT_DTYPES",
    "CombineLaunch",
    "CombineOptions",
    "KernelConfig",
    "PackLaunch",
    "default_config",
    "launch_grid",
    "lse_scales",
    "merge",
    "merge_into",
    "pack_a2a",
    "pack_a2a_into",
    "rescale",
    "rescale_into",
    "uses_triton",
]

OUT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
_LSE_DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.float64)
_MASK_DTYPES = (torch.bool, torch.uint8)
_LENS_DTYPES = (torch.int32, torch.int64)
_SINK_DTYPES = tuple(getattr(torch, name) for name in SINK_DTYPES)  # the plan's rule, as dtypes


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


# --- input checks (launchers) ---------------------------------------------------------------------
def _fail(what: str) -> NoReturn:
    raise ValueError(what)


def _check_lse(lse: torch.Tensor, n: int, t: int, h: int, name: str) -> None:
    if lse.dim() not in (3, 4):
        _fail(f"{name} must be [N, T, H] or [N, B, Q, H], found shape {tuple(lse.shape)}")
    if lse.dtype not in _LSE_DTYPES:
        _fail(f"{name} dtype {lse.dtype} is not a float dtype (allowed: {_LSE_DTYPES})")
    t_of_lse = lse.shape[1] * (lse.shape[2] if lse.dim() == 4 else 1)
    if lse.shape[0] != n or t_of_lse != t or lse.shape[-1] != h:
        _fail(f"{name} shape {tuple(lse.shape)} does not match N={n}, T={t}, H={h}")


def _check_outputs(out: torch.Tensor, lse_out: torch.Tensor | None, t: int, h: int, d: int,
                   device: torch.device, lse_heads: int | None = None) -> None:
    if tuple(out.shape) != (t, h, d):
        _fail(f"out shape {tuple(out.shape)} must be [T, H, D] = {(t, h, d)}")
    if out.dtype not in OUT_DTYPES:
        _fail(f"out dtype {out.dtype} is not supported (allowed: {OUT_DTYPES})")
    hl = lse_heads or h
    if lse_out is not None and (tuple(lse_out.shape) != (t, hl) or lse_out.dtype != torch.float32):
        _fail(f"lse_out must be float32 [T, H] = {(t, hl)}, found {lse_out.dtype} "
              f"{tuple(lse_out.shape)}")
    for name, x in (("out", out), ("lse_out", lse_out)):
        if x is not None and x.device != device:
            _fail(f"{name} is on {x.device} but the inputs are on {device}")


def _check_writable(**outputs: torch.Tensor | None) -> None:
    """Outputs must not overlap themselves (a stride-0 expanded view would have heads or rows
    overwrite each other); a contiguous tensor (the common case, a cached flag) never does."""
    for name, x in outputs.items():
        if x is not None and not x.is_contiguous() and _self_overlapping(x):
            _fail(f"{name} overlaps itself (shape {tuple(x.shape)}, strides {x.stride()}): every "
                  "element must have its own memory (allowed: a non-overlapping view, e.g. not "
                  ".expand())")


def _self_overlapping(x: torch.Tensor) -> bool:
    """Whether two indices of ``x`` may address one element: sorted by stride, each dim of size
    > 1 must step past the whole extent of the smaller ones (conservative: never a false 'no')."""
    extent = 1
    for stride, size in sorted((st, sz) for st, sz in zip(x.stride(), x.shape, strict=True)
                               if sz > 1):
        if stride < extent:
            return True
        extent = stride * size
    return False


def _check_inputs(partial_out: torch.Tensor, lse: torch.Tensor, expect_dims: int) -> None:
    if partial_out.dim() != expect_dims:
        _fail(f"partial_out must have {expect_dims} dims, found shape {tuple(partial_out.shape)}")
    if partial_out.dtype not in OUT_DTYPES:
        _fail(f"partial_out dtype {partial_out.dtype} is not supported (allowed: {OUT_DTYPES})")
    if lse.device != partial_out.device:
        _fail(f"partial_lse is on {lse.device} but partial_out is on {partial_out.device}")


def _check_base(base: str, lse_out_base: str) -> None:
    for name, b in (("base", base), ("lse_out_base", lse_out_base)):
        if b not in BASES:
            _fail(f"{name} {b!r} is not supported (allowed: {', '.join(map(repr, BASES))})")


def _row_mask_arg(mask: torch.Tensor | None, lens: torch.Tensor | None, lead: tuple[int, ...],
                  t: int, device: torch.device) -> tuple[torch.Tensor | None, int]:
    """The kernel's mask operand and ``MASK_Q`` (rows per entry) from ``row_mask [*lead, T]`` (bool
    or uint8: one entry per row) or ``lens [*lead, B]`` (int lengths: one entry per request of
    ``q_len = T / B`` rows). Bool is read as uint8 through the same strides, never copied."""
    if mask is not None and lens is not None:
        _fail("pass a row mask or local lengths, not both (found row_mask= and lens=)")
    if mask is not None:
        _check_mask_like(mask, "row_mask", "T", _MASK_DTYPES, lead, device)
        if mask.shape[-1] != t:
            _fail(f"row_mask has {mask.shape[-1]} rows, the partials have T={t}")
        return (mask.view(torch.uint8) if mask.dtype == torch.bool else mask), 1
    if lens is not None:
        _check_mask_like(lens, "lens", "B", _LENS_DTYPES, lead, device)
        b = lens.shape[-1]
        if (b == 0 and t != 0) or (b and t % b):
            _fail(f"T={t} rows are not B={b} requests of one uniform q_len (ragged "
                  "query_start_loc is not supported)")
        return lens, max(1, t // b) if b else 1
    return None, 1


def _check_mask_like(x: torch.Tensor, name: str, last: str, dtypes: tuple[torch.dtype, ...],
                     lead: tuple[int, ...], device: torch.device) -> None:
    if x.dim() != len(lead) + 1 or tuple(x.shape[:-1]) != lead:
        want = "[" + ", ".join([*map(str, lead), last]) + "]"
        _fail(f"{name} shape {tuple(x.shape)} must be {want}")
    if x.dtype not in dtypes:
        _fail(f"{name} dtype {x.dtype} is not supported (allowed: {dtypes})")
    if x.device != device:
        _fail(f"{name} is on {x.device} but the inputs are on {device}")


def _check_sink(sink: torch.Tensor | None, h: int, device: torch.device) -> None:
    if sink is None:
        return
    if tuple(sink.shape) != (h,) or sink.dtype not in _SINK_DTYPES:
        _fail(f"sink must be a float [H] = ({h},) tensor of natural-log logits, found {sink.dtype} "
              f"{tuple(sink.shape)}")
    if sink.device != device:
        _fail(f"sink is on {sink.device} but the inputs are on {device}")


# --- launching ------------------------------------------------------------------------------------
def _mask_word(mask: torch.Tensor, n: int, s_mn: int, s_mt: int) -> int:
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
                  MASK_WORD=_mask_word(mask, n, s_mn, s_mt) if mask is not None else 0,
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


def _combine_launch(a: CombineLaunch) -> Prepared | None:
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


def _pack_launch(a: PackLaunch) -> Prepared | None:
    """Launch a ``pack_a2a``, returning the launch it made (see ``_combine_launch``)."""
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
    _combine_launch(CombineLaunch(partial_out, partial_lse, out, lse_out, base, lse_out_base,
                                  KernelConfig(block_h, block_d, num_warps, pdl, maxnreg),
                                  mask, mask_q, sink))


def rescale_into(partial_out: torch.Tensor, all_lse: torch.Tensor, rank: int, out: torch.Tensor,
                 lse_out: torch.Tensor | None, base: str, lse_out_base: str,
                 block_h: int, block_d: int, num_warps: int, pdl: int = 0,
                 mask: torch.Tensor | None = None, mask_q: int = 1,
                 sink: torch.Tensor | None = None, maxnreg: int = 0) -> None:
    """The body of the op ``attn_contracts::rescale_`` (see :func:`merge_into`)."""
    _combine_launch(CombineLaunch(partial_out, all_lse, out, lse_out, base, lse_out_base,
                                  KernelConfig(block_h, block_d, num_warps, pdl, maxnreg),
                                  mask, mask_q, sink, rank))


def pack_a2a_into(partial_out: torch.Tensor, lse: torch.Tensor, send: torch.Tensor, o_bytes: int,
                  block_h: int, block_d: int, num_warps: int, pdl: int = 0,
                  mask: torch.Tensor | None = None, mask_q: int = 1, maxnreg: int = 0) -> None:
    """The body of the op ``attn_contracts::pack_a2a_`` (:class:`PackLaunch`)."""
    _pack_launch(PackLaunch(partial_out, lse, send, o_bytes,
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


# --- launchers ------------------------------------------------------------------------------------
def _alloc(partial_out: torch.Tensor, shape: tuple[int, ...], out: torch.Tensor | None,
           lse_out: torch.Tensor | None, return_lse: bool,
           out_dtype: torch.dtype | None) -> tuple[torch.Tensor, torch.Tensor | None]:
    if out is None:
        out = partial_out.new_empty(shape, dtype=out_dtype or partial_out.dtype)
    if lse_out is None and return_lse:
        lse_out = partial_out.new_empty(shape[:2], dtype=torch.float32)
    return out, lse_out


class CombineOptions(TypedDict, total=False):
    """The keyword options :func:`merge` and :func:`rescale` share (each optional).

    ``out``/``lse_out``: where to write (allocated if absent); ``return_lse``: also return the
    merged fp32 LSE ``[T, H]``; ``lse_out_base``: its base (default: ``base``); ``out_dtype``:
    the allocated output's dtype (default: the partials'); ``config``: fixed tiles (default:
    ``tiles.default_config`` of the shape and device); ``pdl``: False never uses programmatic
    dependent launch (True lets the tiles decide, on Hopper and newer); ``row_mask [N, T]``
    (bool/uint8, any strides, nonzero = the shard has keys for the row) or ``lens [N, B]``
    (int32/int64 local lengths, ``T = B · q_len`` rows, request ``t // q_len``); ``sink [H]``:
    per-head sink logits in natural-log units, added once after the merge."""

    out: torch.Tensor | None
    lse_out: torch.Tensor | None
    return_lse: bool
    lse_out_base: str | None
    out_dtype: torch.dtype | None
    config: KernelConfig | None
    pdl: bool
    row_mask: torch.Tensor | None
    lens: torch.Tensor | None
    sink: torch.Tensor | None


_OPTIONS = frozenset(CombineOptions.__annotations__)


def _options(fn: str, options: CombineOptions) -> CombineOptions:
    if not _OPTIONS.issuperset(options):
        unknown = sorted(set(options) - _OPTIONS)
        raise TypeError(f"{fn}() got unexpected keyword argument(s) {', '.join(unknown)} "
                        f"(allowed: base, {', '.join(sorted(_OPTIONS))})")
    return options


def _prepare(partial_out: torch.Tensor, n: int, t: int, h: int, d: int, base: str,
             options: CombineOptions) -> tuple[str, torch.Tensor | None, int, torch.Tensor,
                                               torch.Tensor | None]:
    """What ``merge`` and ``rescale`` share after their input checks: the output base, the
    kernel's mask operand and ``MASK_Q``, the sink checked, ``out``/``lse_out`` allocated."""
    lse_out_base = options.get("lse_out_base") or base
    _check_base(base, lse_out_base)
    row_mask_arg, mask_q = _row_mask_arg(options.get("row_mask"), options.get("lens"), (n,), t,
                                         partial_out.device)
    _check_sink(options.get("sink"), h, partial_out.device)
    out, lse_out = _alloc(partial_out, (t, h, d), options.get("out"), options.get("lse_out"),
                          options.get("return_lse", False), options.get("out_dtype"))
    return lse_out_base, row_mask_arg, mask_q, out, lse_out


def _tiles(config: KernelConfig | None, pdl: bool, n: int, t: int, h: int, d: int, kernel: str,
           device: torch.device) -> KernelConfig:
    """The launch's tiles: ``config``, else the heuristic's for the shape and device; PDL off
    where the call says so (else as the tiles decide)."""
    cfg = config or default_config(n, t, h, d, kernel, sms=sm_count(device))
    return cfg if pdl or not cfg.pdl else dataclasses.replace(cfg, pdl=0)


def _run(a: CombineLaunch, key: tuple[Any, ...] | None,
         options: CombineOptions) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Launch ``a``: through the op when traced (``key`` None), else straight to the launch body
    (the dispatcher costs tens of µs per eager call), keeping the launch for calls of ``key``."""
    if key is None:
        op = torch.ops.attn_contracts.merge_ if a.rank is None else torch.ops.attn_contracts.rescale_
        op(*a.op_args())
    else:
        keep_call(key, _combine_launch(a), a.out, a.lse_out, options)
    return (a.out, a.lse_out) if a.lse_out is not None else a.out


def merge(partial_out: torch.Tensor, partial_lse: torch.Tensor, *, base: str,
          **options: Unpack[CombineOptions]) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Merge ``partial_out [N, T, H, D]`` by ``partial_lse [N, T, H]`` (or ``[N, B, Q, H]``) in
    base ``base`` into ``out [T, H, D]``; with ``return_lse`` (or ``lse_out``) also the merged
    float32 LSE ``[T, H]`` in ``lse_out_base`` (default: ``base``). Options:
    :class:`CombineOptions`.

    Empty shards by mask (``row_mask``/``lens``) get weight 0 whatever they hold. ``sink [H]``
    (natural-log units, as models store them) is converted to base ``b`` as ``s · log_b(e)`` and
    added once: ``o ← o · b^L / (b^L + b^s')``, ``L ← log_b(b^L + b^s')``; a row empty on every
    shard gives ``o = 0``, ``L = s'``.

    Calls like an earlier one (same shapes, strides, dtypes, devices, alignment and options) skip
    the checks and the tile choice: they were made once (``fastpath``)."""
    key, result = lookup("merge", partial_out, partial_lse, None, base, options)
    if result is not None:
        return result
    _options("merge", options)
    _check_inputs(partial_out, partial_lse, 4)
    n, t, h, d = partial_out.shape
    if n < 1:
        _fail("merge needs at least one partial (N >= 1), found N=0")
    _check_lse(partial_lse, n, t, h, "partial_lse")
    lse_out_base, row_mask_arg, mask_q, out, lse_out = _prepare(partial_out, n, t, h, d, base,
                                                                options)
    _check_outputs(out, lse_out, t, h, d, partial_out.device)
    _check_writable(out=out, lse_out=lse_out)
    cfg = _tiles(options.get("config"), options.get("pdl", True), n, t, h, d, "merge",
                 partial_out.device)
    return _run(CombineLaunch(partial_out, partial_lse, out, lse_out, base, lse_out_base, cfg,
                              row_mask_arg, mask_q, options.get("sink")), key, options)


def rescale(partial_out: torch.Tensor, all_lse: torch.Tensor, rank: int, *, base: str,
            **options: Unpack[CombineOptions]) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Scale rank ``rank``'s ``partial_out [T, H, D]`` by ``b^(lse_rank − LSE)`` computed from the
    gathered ``all_lse [N, T, H]``; summing the results over ranks (a reduce-scatter or
    all-reduce) gives the merge. ``out`` may alias ``partial_out`` (in-place), or be head chunks
    ``[C, T, H/C, D]`` for a reduce-scatter. ``row_mask [N, T]`` / ``lens [N, B]`` mark every
    rank's empty rows and ``sink [H]`` (natural-log logits) enters the denominator and the merged
    LSE, as in :func:`merge`. Options: :class:`CombineOptions`. Repeated calls: see
    :func:`merge`."""
    key, result = lookup("rescale", partial_out, all_lse, rank, base, options)
    if result is not None:
        return result
    _options("rescale", options)
    _check_inputs(partial_out, all_lse, 3)
    t, h, d = partial_out.shape
    n = all_lse.shape[0] if all_lse.dim() in (3, 4) else 0
    _check_lse(all_lse, n, t, h, "all_lse")
    if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < n:
        refuse(check_rank("rescale", rank, n), "rank outside the gathered LSEs")
    lse_out_base, row_mask_arg, mask_q, out, lse_out = _prepare(partial_out, n, t, h, d, base,
                                                                options)
    if out.dim() == 4:  # [N, T, H/N, D], head chunks for a reduce-scatter
        c = out.shape[0]
        if h % c or tuple(out.shape) != (c, t, h // c, d):
            _fail(f"chunked out shape {tuple(out.shape)} must be [C, T, H/C, D] with C dividing "
                  f"H={h} (T={t}, D={d})")
        _check_outputs(out[0], lse_out, t, h // c, d, partial_out.device, lse_heads=h)
    else:
        _check_outputs(out, lse_out, t, h, d, partial_out.device)
    _check_writable(out=out, lse_out=lse_out)
    cfg = _tiles(options.get("config"), options.get("pdl", True), n, t, h, d, "rescale",
                 partial_out.device)
    return _run(CombineLaunch(partial_out, all_lse, out, lse_out, base, lse_out_base, cfg,
                              row_mask_arg, mask_q, options.get("sink"), rank), key, options)


def pack_a2a(
    partial_out: torch.Tensor,
    lse: torch.Tensor,
    send: torch.Tensor,
    *,
    o_bytes: int,
    row_mask: torch.Tensor | None = None,
    lens: torch.Tensor | None = None,
    config: KernelConfig | None = None,
    pdl: bool = True,
) -> torch.Tensor:
    """Pack one rank's all-to-all message in one pass (``dcp.py``'s ``a2a``): destination ``j``'s
    row of ``send [N, piece]`` (uint8) gets ``partial_out[:, heads_j, :]`` as ``[T, H/N, D]``
    (contiguous, from byte 0) and ``lse[:, heads_j]`` as fp32 bits ``[T, H/N]`` from byte
    ``o_bytes``, where ``heads_j = j·H/N .. (j+1)·H/N``. ``lse [T, H]`` may have any strides (a
    ``[H, T]`` buffer transposed) and any float dtype. Rows that ``row_mask [T]`` (bool/uint8) or
    ``lens [B]`` (int lengths, ``T = B · q_len``) mark empty send ``O = 0`` and ``LSE = −inf``.
    Returns ``send``. Repeated calls: see :func:`merge`."""
    key = None
    if not torch.compiler.is_compiling():
        key = pack_key(partial_out, lse, send, o_bytes, row_mask, lens, config, pdl)
        fast = OPS.get(key)
        if fast is not None:
            packed: torch.Tensor = fast(partial_out, lse, send,
                                        row_mask if row_mask is not None else lens)
            return packed
    if partial_out.dim() != 3 or partial_out.dtype not in OUT_DTYPES:
        _fail(f"partial_out must be [T, H, D] of {OUT_DTYPES}, found {partial_out.dtype} "
              f"{tuple(partial_out.shape)}")
    t, h, d = partial_out.shape
    if lse.dim() != 2 or tuple(lse.shape) != (t, h) or lse.dtype not in _LSE_DTYPES:
        _fail(f"lse must be a float [T, H] = {(t, h)} view, found {lse.dtype} {tuple(lse.shape)}")
    if send.dim() != 2 or send.dtype != torch.uint8 or send.stride(1) != 1 or send.shape[0] < 1:
        _fail(f"send must be a uint8 [N, piece] buffer with contiguous rows, found {send.dtype} "
              f"{tuple(send.shape)} strides {send.stride()}")
    world, piece = send.shape
    size = partial_out.element_size()
    if h % world:
        _fail(f"num_heads={h} is not divisible by the {world} destinations")
    hc = h // world
    # the typed views need rows and the LSE offset in whole fp32 (and O) elements (an empty step
    # has nothing to write: its rows may be empty)
    if t and (o_bytes < t * hc * d * size or o_bytes % 4 or piece % 4
              or piece < o_bytes + t * hc * 4 or send.stride(0) % 4 or send.storage_offset() % 4):
        _fail(f"send rows of {piece} bytes (row stride {send.stride(0)}, offset "
              f"{send.storage_offset()}) cannot hold O ({t * hc * d * size} bytes) then the LSE "
              f"({t * hc * 4} bytes) at o_bytes={o_bytes} (allowed: o_bytes, the row length, row "
              "stride and start offset multiples of 4 bytes)")
    for name, x in (("lse", lse), ("send", send)):
        if x.device != partial_out.device:
            _fail(f"{name} is on {x.device} but partial_out is on {partial_out.device}")
    row_mask_arg, mask_q = _row_mask_arg(row_mask, lens, (), t, partial_out.device)
    cfg = _tiles(config, pdl, world, t, h, d, "pack", partial_out.device)
    launch = PackLaunch(partial_out, lse, send, o_bytes, cfg, row_mask_arg, mask_q)
    if key is None:
        torch.ops.attn_contracts.pack_a2a_(*launch.op_args())
    else:
        prepared = _pack_launch(launch)
        if prepared is not None:
            keep(OPS, key, PackCall(prepared, o_bytes, row_mask is not None
                                   and row_mask.dtype == torch.bool))
    return send
