"""The combine ops: launchers of the combine kernels, registered as torch custom ops (their tiles
come from ``tiles.py``, the launch itself from ``launch.py``).

``merge`` and ``rescale`` check their inputs (shapes, dtypes, devices), allocate what the caller did
not pass, and launch. The ops ``attn_contracts::merge_`` and ``attn_contracts::rescale_`` write into
their ``out``/``lse_out`` arguments and have fake implementations, so ``torch.compile(fullgraph=True)``
traces through them and CUDA graphs capture them. On CUDA tensors they run the Triton kernels; on
CPU tensors they run the same kernels under ``TRITON_INTERPRET=1`` when it is set, else the torch
path (fp32, the reference's policy).

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

import functools
import math
from typing import Any, NoReturn, TypedDict, Unpack

import torch

from attn_contracts.checks import SINK_DTYPES, check_rank, refuse
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
from attn_contracts.records import BASES

__all__ = [
    "MAX_GRID_YZ",
    "OUT_DTYPES",
    "CombineOptions",
    "KernelConfig",
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
    in_scale = 1.0 / math.log(2.0) if base == "e" else 1.0  # log2(b)
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


# --- custom ops -----------------------------------------------------------------------------------
def merge_into(partial_out: torch.Tensor, partial_lse: torch.Tensor, out: torch.Tensor,
               lse_out: torch.Tensor | None, base: str, lse_out_base: str,
               block_h: int, block_d: int, num_warps: int, pdl: int = 0,
               mask: torch.Tensor | None = None, mask_q: int = 1,
               sink: torch.Tensor | None = None, maxnreg: int = 0) -> None:
    """The body of the op ``attn_contracts::merge_``: launches with no input checks, for callers
    that checked once (``merge`` checks, then calls this). ``mask`` is the kernel's operand: uint8
    or int ``[N, T / mask_q]`` (``merge``'s ``row_mask``/``lens``). ``pdl``: the kernel's PDL mode
    (0 off; ``_kernels.py``); ``maxnreg``: the tiles' register cap (0: none)."""
    _merge_launch(partial_out, partial_lse, out, lse_out, base, lse_out_base, block_h, block_d,
                  num_warps, pdl, mask, mask_q, sink, maxnreg)


def _merge_launch(partial_out: torch.Tensor, partial_lse: torch.Tensor, out: torch.Tensor,
                  lse_out: torch.Tensor | None, base: str, lse_out_base: str,
                  block_h: int, block_d: int, num_warps: int, pdl: int,
                  mask: torch.Tensor | None, mask_q: int,
                  sink: torch.Tensor | None, maxnreg: int = 0) -> Prepared | None:
    """``merge_into``, returning the launch it made (None on the torch path or for no rows)."""
    n, t, h, d = partial_out.shape
    if t == 0 or h == 0 or d == 0:
        return None
    if not uses_triton(partial_out):
        o, lse = merge_reference(partial_out, _lse3(partial_lse), base=base,
                                 lse_out_base=lse_out_base, dtype=torch.float32,
                                 row_mask=_torch_row_mask(mask, mask_q), sink=sink)
        out.copy_(o)
        if lse_out is not None:
            lse_out.copy_(lse)
        return None
    q_len, *lse_strides = _lse_geometry(partial_lse)
    in_scale, out_scale = lse_scales(base, lse_out_base)
    z = lse_out if lse_out is not None else out  # never written when WRITE_LSE is False
    m, k, extra_strides, extra_consts = _mask_operands(mask, sink, partial_lse, base, n)
    grid = launch_grid(t, h, d, block_h, block_d)
    return launcher("merge_kernel")(
        grid, (partial_out, partial_lse, out, z, m, k),
        (t, h, d, q_len, mask_q, *partial_out.stride(), *lse_strides, *out.stride(), z.stride(0),
         z.stride(1), *extra_strides),
        dict(N=n, IN_SCALE=in_scale, OUT_SCALE=out_scale, WRITE_LSE=lse_out is not None,
             **extra_consts, BLOCK_H=block_h, BLOCK_D=block_d, NUM_DB=cdiv(d, block_d)),
        num_warps, pdl, maxnreg)


_merge_op = torch.library.custom_op("attn_contracts::merge_", mutates_args=("out", "lse_out"))(
    merge_into)


def _writes_in_place(*args: Any, **kwargs: Any) -> None:
    """The fake of every op here: each writes only into tensors it was given, so tracing needs
    no output (its parameters are the op's own, declared once, by the op's body)."""
    return None


_merge_op.register_fake(_writes_in_place)


def rescale_into(partial_out: torch.Tensor, all_lse: torch.Tensor, rank: int, out: torch.Tensor,
                 lse_out: torch.Tensor | None, base: str, lse_out_base: str,
                 block_h: int, block_d: int, num_warps: int, pdl: int = 0,
                 mask: torch.Tensor | None = None, mask_q: int = 1,
                 sink: torch.Tensor | None = None, maxnreg: int = 0) -> None:
    """The body of the op ``attn_contracts::rescale_`` (no input checks; see ``merge_into``)."""
    _rescale_launch(partial_out, all_lse, rank, out, lse_out, base, lse_out_base, block_h,
                    block_d, num_warps, pdl, mask, mask_q, sink, maxnreg)


def _rescale_launch(partial_out: torch.Tensor, all_lse: torch.Tensor, rank: int,
                    out: torch.Tensor, lse_out: torch.Tensor | None, base: str,
                    lse_out_base: str, block_h: int, block_d: int, num_warps: int, pdl: int,
                    mask: torch.Tensor | None, mask_q: int,
                    sink: torch.Tensor | None, maxnreg: int = 0) -> Prepared | None:
    """``rescale_into``, returning the launch it made (see ``_merge_launch``)."""
    t, h, d = partial_out.shape
    if t == 0 or h == 0 or d == 0:
        return None
    chunked = out.dim() == 4  # [C, T, H/C, D]: chunked by heads for a reduce-scatter
    chunks = out.shape[0] if chunked else 1
    if not uses_triton(partial_out):
        o, lse = rescale_reference(partial_out, _lse3(all_lse), rank, base=base,
                                   lse_out_base=lse_out_base, dtype=torch.float32,
                                   row_mask=_torch_row_mask(mask, mask_q), sink=sink)
        out.copy_(o.view(t, chunks, h // chunks, d).transpose(0, 1) if chunked else o)
        if lse_out is not None:
            lse_out.copy_(lse)
        return None
    q_len, *lse_strides = _lse_geometry(all_lse)
    in_scale, out_scale = lse_scales(base, lse_out_base)
    z = lse_out if lse_out is not None else out
    y_strides = out.stride() if chunked else (0, *out.stride())
    m, k, extra_strides, extra_consts = _mask_operands(mask, sink, all_lse, base,
                                                       all_lse.shape[0])
    return launcher("rescale_kernel")(
        launch_grid(t, h, d, block_h, block_d), (partial_out, all_lse, out, z, m, k),
        (rank, t, h, d, q_len, h // chunks, mask_q, *partial_out.stride(), *lse_strides,
         *y_strides, z.stride(0), z.stride(1), *extra_strides),
        dict(N=all_lse.shape[0], IN_SCALE=in_scale, OUT_SCALE=out_scale,
             WRITE_LSE=lse_out is not None, **extra_consts, BLOCK_H=block_h, BLOCK_D=block_d,
             NUM_DB=cdiv(d, block_d)),
        num_warps, pdl, maxnreg)


_rescale_op = torch.library.custom_op(
    "attn_contracts::rescale_", mutates_args=("out", "lse_out"))(rescale_into)


_rescale_op.register_fake(_writes_in_place)


def pack_a2a_into(partial_out: torch.Tensor, lse: torch.Tensor, send: torch.Tensor, o_bytes: int,
                  block_h: int, block_d: int, num_warps: int, pdl: int = 0,
                  mask: torch.Tensor | None = None, mask_q: int = 1, maxnreg: int = 0) -> None:
    """The body of the op ``attn_contracts::pack_a2a_`` (no input checks; see ``pack_a2a``)."""
    _pack_launch(partial_out, lse, send, o_bytes, block_h, block_d, num_warps, pdl, mask, mask_q,
                 maxnreg)


def _pack_launch(partial_out: torch.Tensor, lse: torch.Tensor, send: torch.Tensor, o_bytes: int,
                 block_h: int, block_d: int, num_warps: int, pdl: int,
                 mask: torch.Tensor | None, mask_q: int, maxnreg: int = 0) -> Prepared | None:
    """``pack_a2a_into``, returning the launch it made (see ``_merge_launch``)."""
    t, h, d = partial_out.shape
    world = send.shape[0]
    hc = h // world
    if t == 0 or h == 0 or d == 0:
        return None
    if not uses_triton(partial_out):
        o_send, lse_send = A2AMessage(world, t, hc, d, partial_out.element_size()).views(
            send, partial_out.dtype, o_bytes=o_bytes)
        o_send.copy_(partial_out.view(t, world, hc, d).transpose(0, 1))  # [N, T, H/N, D]
        lse_send.copy_(lse.view(t, world, hc).transpose(0, 1))  # fp32 bits, [N, T, H/N]
        keep = _torch_row_mask(mask, mask_q)
        if keep is not None:
            o_send.masked_fill_(~keep.view(1, t, 1, 1), 0.0)
            lse_send.masked_fill_(~keep.view(1, t, 1), -math.inf)
        return None
    size = partial_out.element_size()
    o_dst = send.view(partial_out.dtype)  # [N, piece / size]
    lse_dst = send[:, o_bytes:].view(torch.float32)  # [N, (piece - o_bytes) / 4]
    return launcher("pack_a2a_kernel")(
        launch_grid(t, h, d, block_h, block_d),
        (partial_out, lse, mask if mask is not None else lse, o_dst, lse_dst),
        (t, h, d, hc, mask_q, *partial_out.stride(), *lse.stride(),
         mask.stride(0) if mask is not None else 0, send.stride(0) // size, send.stride(0) // 4),
        dict(HAS_MASK=mask is not None, BLOCK_H=block_h, BLOCK_D=block_d,
             NUM_DB=cdiv(d, block_d)),
        num_warps, pdl, maxnreg)


_pack_op = torch.library.custom_op("attn_contracts::pack_a2a_", mutates_args=("send",))(
    pack_a2a_into)


_pack_op.register_fake(_writes_in_place)


# --- the eager fast path ------------------------------------------------------------------------
# A call whose inputs look like an earlier call's (every tensor's shape, strides, dtype, device and
# 16-byte alignment, and every option) passed the same checks and gets the same tiles, ints and
# compiled kernel: the first call decides, later ones only launch (``launch.Prepared``). What
# stays per call is reading those properties (the key), allocating what the caller did not pass,
# and the launch itself: a bare Triton launch does as much. A plan keeps the decided call of its own
# calls (``decided_call``, ``CombinePlan.decided_launch``), keyed by the call's tensors alone (the
# options are the plan's, decided once), so ``plan(...)``, ``plan.launch`` and ``dcp_combine`` at
# world size 1 skip their own checks and views the same way.
_FAST: dict[tuple[Any, ...], Any] = {}  # values: KernelCall | _PackCall
_FAST_MAX = 4096


def _sig(x: torch.Tensor | None) -> tuple[Any, ...] | None:
    """What a launch's decisions read from a tensor (its data only through alignment)."""
    if x is None:
        return None
    return (x.shape, x.stride(), x.dtype, x.get_device(), x.data_ptr() & 15)


def _options_key(options: CombineOptions) -> tuple[Any, ...]:
    """The options' part of a merge/rescale key: every option by name (an unknown one makes a new
    key, so its first call is refused as ever), tensors by ``_sig``."""
    return (tuple(options), _sig(options.get("out")), _sig(options.get("lse_out")),
            _sig(options.get("row_mask")), _sig(options.get("lens")), _sig(options.get("sink")),
            options.get("return_lse"), options.get("lse_out_base"), options.get("out_dtype"),
            options.get("config"), options.get("pdl"))


def _merge_key(partial_out: torch.Tensor, partial_lse: torch.Tensor, base: str,
               options: CombineOptions) -> tuple[Any, ...]:
    return ("merge", _sig(partial_out), _sig(partial_lse), base, *_options_key(options))


def _rescale_key(partial_out: torch.Tensor, all_lse: torch.Tensor, rank: int, base: str,
                 options: CombineOptions) -> tuple[Any, ...]:
    return ("rescale", _sig(partial_out), _sig(all_lse), rank, base, *_options_key(options))


def decided_call(kernel: str, partial_out: torch.Tensor, lse: torch.Tensor, rank: int | None,
                 base: str, options: CombineOptions) -> KernelCall | None:
    """The decided call an earlier ``merge``/``rescale`` call of these arguments left (None if
    it left none: the torch path, no rows, a launch hook, or under ``torch.compile``). A caller
    that can tell this argument set again from its own inputs (a plan) keeps it and calls it
    straight away: ``call(partial_out, lse, out, lse_out, row_mask or lens, sink)``."""
    key = _merge_key(partial_out, lse, base, options) if kernel == "merge" else \
        _rescale_key(partial_out, lse, rank if rank is not None else -1, base, options)
    call: KernelCall | None = _FAST.get(key)
    return call


def _mask_option(options: CombineOptions) -> torch.Tensor | None:
    mask = options.get("row_mask")
    return mask if mask is not None else options.get("lens")


def _is_bool(mask: torch.Tensor | None) -> bool:
    return mask is not None and mask.dtype == torch.bool


def _fast_result(key: tuple[Any, ...], partial_out: torch.Tensor, lse: torch.Tensor,
                 options: CombineOptions) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor] | None:
    """A merge/rescale call like an earlier one, launched as that one decided; None for a new one."""
    fast = _FAST.get(key)
    if fast is None:
        return None
    result: torch.Tensor | tuple[torch.Tensor, torch.Tensor] = fast(
        partial_out, lse, options.get("out"), options.get("lse_out"), _mask_option(options),
        options.get("sink"))
    return result


def _remember_call(key: tuple[Any, ...], prepared: Prepared, device: torch.device,
                   out_shape: tuple[int, int, int], out: torch.Tensor, lse_out: torch.Tensor | None,
                   options: CombineOptions) -> None:
    """Keep a merge/rescale launch for the calls like it (``_fast_result``)."""
    _remember(key, KernelCall(prepared, device, out_shape, out.dtype,
                               out_shape[:2] if lse_out is not None else None,
                               _is_bool(options.get("row_mask"))))


def _remember(key: tuple[Any, ...], fast: Any) -> None:
    if len(_FAST) >= _FAST_MAX:
        _FAST.clear()
    _FAST[key] = fast


class KernelCall:
    """A merge or rescale call decided once: its launch, what to allocate, how to pass the mask."""

    __slots__ = ("bool_mask", "device", "lse_shape", "out_dtype", "out_shape", "prepared")

    def __init__(self, prepared: Prepared, device: torch.device, out_shape: tuple[int, ...],
                 out_dtype: torch.dtype, lse_shape: tuple[int, ...] | None,
                 bool_mask: bool) -> None:
        self.prepared, self.device = prepared, device
        self.out_shape, self.out_dtype, self.lse_shape = out_shape, out_dtype, lse_shape
        self.bool_mask = bool_mask

    def __call__(self, o: torch.Tensor, lse: torch.Tensor, out: torch.Tensor | None,
                 lse_out: torch.Tensor | None, mask: torch.Tensor | None,
                 sink: torch.Tensor | None) -> Any:
        if out is None:
            out = torch.empty(self.out_shape, dtype=self.out_dtype, device=self.device)
        if lse_out is None and self.lse_shape is not None:
            lse_out = torch.empty(self.lse_shape, dtype=torch.float32, device=self.device)
        # a bool mask goes as its address (the kernel reads it as uint8): no view made per call
        self.prepared(o, lse, out, out if lse_out is None else lse_out,
                      lse if mask is None else mask.data_ptr() if self.bool_mask else mask,
                      lse if sink is None else sink)
        return out if lse_out is None else (out, lse_out)


class _PackCall:
    """A ``pack_a2a`` call decided once."""

    __slots__ = ("bool_mask", "dtype", "o_bytes", "prepared")

    def __init__(self, prepared: Prepared, dtype: torch.dtype, o_bytes: int,
                 bool_mask: bool) -> None:
        self.prepared, self.dtype, self.o_bytes, self.bool_mask = prepared, dtype, o_bytes, bool_mask

    def __call__(self, o: torch.Tensor, lse: torch.Tensor, send: torch.Tensor,
                 mask: torch.Tensor | None) -> torch.Tensor:
        # the message's O and LSE parts as addresses (the kernel has their dtypes): no views
        ptr = send.data_ptr()
        self.prepared(o, lse, lse if mask is None else mask.data_ptr() if self.bool_mask else mask,
                      ptr, ptr + self.o_bytes)
        return send


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
    the checks and the tile choice: they were made once (see ``_FAST``)."""
    compiling = torch.compiler.is_compiling()
    if not compiling:
        key = _merge_key(partial_out, partial_lse, base, options)
        result = _fast_result(key, partial_out, partial_lse, options)
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
    cfg = options.get("config") or default_config(n, t, h, d, sms=sm_count(partial_out.device))
    pdl = cfg.pdl if options.get("pdl", True) else 0
    if compiling:  # traced calls go through the op; eager ones skip the dispatcher (tens of µs)
        torch.ops.attn_contracts.merge_(
            partial_out, partial_lse, out, lse_out, base=base, lse_out_base=lse_out_base,
            block_h=cfg.block_h, block_d=cfg.block_d, num_warps=cfg.num_warps, pdl=pdl,
            mask=row_mask_arg, mask_q=mask_q, sink=options.get("sink"), maxnreg=cfg.maxnreg)
    else:
        prepared = _merge_launch(partial_out, partial_lse, out, lse_out, base, lse_out_base,
                                 cfg.block_h, cfg.block_d, cfg.num_warps, pdl, row_mask_arg,
                                 mask_q, options.get("sink"), cfg.maxnreg)
        if prepared is not None:
            _remember_call(key, prepared, partial_out.device, (t, h, d), out, lse_out, options)
    return (out, lse_out) if lse_out is not None else out


def rescale(partial_out: torch.Tensor, all_lse: torch.Tensor, rank: int, *, base: str,
            **options: Unpack[CombineOptions]) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Scale rank ``rank``'s ``partial_out [T, H, D]`` by ``b^(lse_rank − LSE)`` computed from the
    gathered ``all_lse [N, T, H]``; summing the results over ranks (a reduce-scatter or
    all-reduce) gives the merge. ``out`` may alias ``partial_out`` (in-place), or be head chunks
    ``[C, T, H/C, D]`` for a reduce-scatter. ``row_mask [N, T]`` / ``lens [N, B]`` mark every
    rank's empty rows and ``sink [H]`` (natural-log logits) enters the denominator and the merged
    LSE, as in :func:`merge`. Options: :class:`CombineOptions`. Repeated calls: see
    :func:`merge`."""
    compiling = torch.compiler.is_compiling()
    if not compiling:
        key = _rescale_key(partial_out, all_lse, rank, base, options)
        result = _fast_result(key, partial_out, all_lse, options)
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
    cfg = options.get("config") or default_config(n, t, h, d, "rescale",
                                                  sms=sm_count(partial_out.device))
    pdl = cfg.pdl if options.get("pdl", True) else 0
    if compiling:
        torch.ops.attn_contracts.rescale_(
            partial_out, all_lse, rank, out, lse_out, base=base, lse_out_base=lse_out_base,
            block_h=cfg.block_h, block_d=cfg.block_d, num_warps=cfg.num_warps, pdl=pdl,
            mask=row_mask_arg, mask_q=mask_q, sink=options.get("sink"), maxnreg=cfg.maxnreg)
    else:
        prepared = _rescale_launch(partial_out, all_lse, rank, out, lse_out, base, lse_out_base,
                                   cfg.block_h, cfg.block_d, cfg.num_warps, pdl, row_mask_arg,
                                   mask_q, options.get("sink"), cfg.maxnreg)
        if prepared is not None:
            _remember_call(key, prepared, partial_out.device, (t, h, d), out, lse_out, options)
    return (out, lse_out) if lse_out is not None else out


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
    compiling = torch.compiler.is_compiling()
    if not compiling:
        key = ("pack", _sig(partial_out), _sig(lse), _sig(send), o_bytes, _sig(row_mask),
               _sig(lens), config, pdl)
        fast = _FAST.get(key)
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
    cfg = config or default_config(world, t, h, d, "pack", sms=sm_count(partial_out.device))
    pdl_mode = cfg.pdl if pdl else 0
    if compiling:
        torch.ops.attn_contracts.pack_a2a_(
            partial_out, lse, send, o_bytes, block_h=cfg.block_h, block_d=cfg.block_d,
            num_warps=cfg.num_warps, pdl=pdl_mode, mask=row_mask_arg, mask_q=mask_q,
            maxnreg=cfg.maxnreg)
    else:
        prepared = _pack_launch(partial_out, lse, send, o_bytes, cfg.block_h, cfg.block_d,
                                cfg.num_warps, pdl_mode, row_mask_arg, mask_q, cfg.maxnreg)
        if prepared is not None:
            _remember(key, _PackCall(prepared, partial_out.dtype, o_bytes, _is_bool(row_mask)))
    return send
