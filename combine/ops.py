"""Launchers of the combine kernels, registered as torch custom ops.

``merge`` and ``rescale`` check their inputs (shapes, dtypes, devices), allocate what the caller did
not pass, and launch. The ops ``attn_contracts::merge_`` and ``attn_contracts::rescale_`` write into
their ``out``/``lse_out`` arguments and have fake implementations, so ``torch.compile(fullgraph=True)``
traces through them and CUDA graphs capture them. On CUDA tensors they run the Triton kernels; on
CPU tensors they run the same kernels under ``TRITON_INTERPRET=1`` when it is set, else the torch
path (fp32, the reference's policy).

LSE tensors are taken as ``[N, T, H]`` or ``[N, B, Q, H]`` strided views (``T = B·Q``); the
dispatcher builds those views from a record's layout, never copies.

Empty shards by mask: ``row_mask [N, T]`` (bool or uint8, any strides; nonzero = the shard holds keys
for the row) or ``lens [N, B]`` (int32/int64 local lengths per request, uniform ``q_len = T / B``;
row ``t`` is request ``t // q_len``). Either is read inside the kernel (no extra launch); a masked
row gets weight 0 whatever its partial holds. Ragged ``query_start_loc`` is not supported.
Sinks: ``sink [H]`` per-head logits in natural-log units, added once after the merge
(``reference.py``). ``pack_a2a`` writes the all-to-all message of ``dcp.py`` in one pass.
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass
from typing import Any, NoReturn

import torch

from attn_contracts.combine.reference import (
    log_of_base,
    merge_reference,
    rescale_reference,
)
from attn_contracts.records import BASES

__all__ = [
    "MAX_GRID_YZ",
    "OUT_DTYPES",
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


@dataclass(frozen=True)
class KernelConfig:
    block_h: int
    block_d: int
    num_warps: int
    #: programmatic dependent launch (used on compute capability 9.0 and newer only)
    pdl: bool = False


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _next_pow2(x: int) -> int:
    return 1 << max(0, (x - 1).bit_length())


_SMS = 132  # streaming multiprocessors of an H100/H200
_ONE_WAVE = 4 * _SMS  # grids this small are latency-bound: PDL pays; larger ones it slowed down


#: merge tiles of two-way (and one-way) merges: (elements per program, warps); see default_config
SMALL_N_MERGE_TILE = (1024, 4)


@functools.lru_cache(maxsize=1024)
def default_config(num_partials: int, num_tokens: int, num_heads: int, head_dim: int,
                   kernel: str = "merge") -> KernelConfig:
    """Tiles from the shape, no autotuning (plans are built at startup, graphs are captured).

    Measured on an H200 (``bench/results/combine-sweep-h200.txt``): one-warp programs are
    fastest, ``merge`` with 256 elements (8 per thread per shard, every shard in flight at once, so
    N multiplies the bytes in flight) and up to 128 of the head dim, ``rescale`` (and
    ``pack``, the a2a send copy: one stream in, one out) with 1024 (32 per thread: it has one
    stream, so each thread needs more in flight) and up to 512. With fewer programs than SMs
    (one-token decode, latency-bound) ``merge`` shrinks its tile to 128 elements and ``rescale``
    spreads 1024 over four warps. PDL is on for grids of at most one wave: it saved 0.45 µs per
    launch there and cost 10 % or more on larger grids.

    ``merge`` with N <= 2 (``SMALL_N_MERGE_TILE``): one-warp 256-element programs keep only
    N·16 bytes per thread in flight, and an SM holds at most 32 programs, so about 32 KB per SM:
    by Little's law (≈4.8 TB/s × ≈1 µs loaded latency / 132 SMs ≈ 36 KB) that caps a two-way
    merge near the 58-61 % measured. 1024 elements over two warps (16 per thread per shard, two
    16-byte loads each) give 64 B per thread; at 47 registers (ptxas for sm_90, triton 3.9) an
    SM holds 42 such warps, about 86 KB in flight: what FlashInfer's merge_state gets from its
    128-512-thread blocks. Measured (``bench/results/combine-sweep-targets-h200.md``): 1024
    elements over four warps (8 per thread per shard) were 1-3 % faster than over two, and the
    ``pack`` kernel was fastest with 1024-element, 128-wide tiles over four warps (eight at one
    token) rather than the rescale tiles."""
    d2 = _next_pow2(head_dim)
    small_n = kernel == "merge" and num_partials <= 2
    if kernel == "merge":
        elems, d_max = SMALL_N_MERGE_TILE[0] if small_n else 256, 128
    else:
        elems, d_max = 1024, 512
    block_d = min(d2, d_max)
    block_h = min(_next_pow2(num_heads), max(1, elems // block_d))
    num_warps = 1

    def programs(bh: int, bd: int) -> int:
        return num_tokens * _cdiv(num_heads, bh) * _cdiv(head_dim, bd)

    if programs(block_h, block_d) < _SMS:
        if kernel == "merge":
            while programs(block_h, block_d) < _SMS and block_h * block_d > 128:
                if block_d > 64:
                    block_d //= 2
                else:
                    block_h //= 2
        else:
            block_d = min(d2, 128)
            block_h = min(_next_pow2(num_heads), max(1, elems // block_d))
            num_warps = 4
    if small_n:  # keep 16 elements per thread per shard where the tile stayed large
        num_warps = max(1, min(SMALL_N_MERGE_TILE[1], block_h * block_d // 256))
    if kernel == "pack":  # one stream in, one out; 128-wide rows over 4 warps (8 at one token)
        block_d = min(d2, 128)
        block_h = min(_next_pow2(num_heads), max(1, 1024 // block_d))
        num_warps = 8 if programs(block_h, block_d) < _SMS else 4
    return KernelConfig(block_h, block_d, num_warps, pdl=programs(block_h, block_d) <= _ONE_WAVE)


def uses_triton(t: torch.Tensor) -> bool:
    """Whether a tensor on this device goes through the Triton kernels (else the torch path)."""
    return t.is_cuda or os.environ.get("TRITON_INTERPRET") == "1"


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
    if tuple(sink.shape) != (h,) or sink.dtype not in _LSE_DTYPES:
        _fail(f"sink must be a float [H] = ({h},) tensor of natural-log logits, found {sink.dtype} "
              f"{tuple(sink.shape)}")
    if sink.device != device:
        _fail(f"sink is on {sink.device} but the inputs are on {device}")


# --- launching ------------------------------------------------------------------------------------
MAX_GRID_YZ = 65535  # grid axes 1 and 2 hold at most this many programs each


def launch_grid(t: int, h: int, d: int, block_h: int, block_d: int) -> tuple[int, int, int]:
    """Axis 0: the (head, dim) blocks of a row; rows on axes 1 and 2 (see ``_kernels.py``)."""
    rows = min(t, MAX_GRID_YZ)
    return _cdiv(h, block_h) * _cdiv(d, block_d), rows, _cdiv(t, rows)


@functools.lru_cache(maxsize=64)
def _pdl_capable(device_index: int) -> bool:
    """``griddepcontrol`` needs compute capability 9.0 (Hopper) or newer."""
    return bool(torch.cuda.get_device_capability(device_index) >= (9, 0))


class _Launcher:
    """Launches a Triton kernel. After the first launch of an argument set (same ints, dtypes,
    pointer alignment, constants) it calls the compiled kernel directly and skips Triton's
    per-call binding and cache lookup: about 10 µs less host time per launch on the H200 host.
    Keying on the int values themselves keeps every specialisation Triton would make (``== 1``,
    divisible by 16, 64-bit) exact without recomputing it; the table is bounded."""

    _MAX_ENTRIES = 4096

    def __init__(self, fn: Any) -> None:
        self.fn = fn
        self.compiled: dict[tuple[Any, ...], Any] = {}
        self.direct = True  # off for good if this Triton's compiled-kernel call API differs

    def __call__(self, grid: tuple[int, int, int], tensors: tuple[torch.Tensor, ...],
                 ints: tuple[int, ...], consts: dict[str, Any], num_warps: int, pdl: bool) -> None:
        """``tensors`` then ``ints`` are the kernel's leading parameters, in order; ``consts`` its
        constexprs in signature order, ``PDL`` (last) left out: it is set here."""
        if not tensors[0].is_cuda:  # the interpreter: no compiled kernel to cache, no PDL
            self.fn[grid](*tensors, *ints, **consts, PDL=False, num_warps=num_warps)
            return
        device = tensors[0].device.index or 0
        pdl = pdl and _pdl_capable(device)
        consts = {**consts, "PDL": pdl}
        key = (device, num_warps, *consts.values(), *ints,
               *[(x.dtype, x.data_ptr() % 16 == 0) for x in tensors])
        kernel = self.compiled.get(key) if self.direct else None
        if kernel is not None:
            try:  # positional, as Triton's own launch passes them: consts in signature order
                kernel[grid](*tensors, *ints, *consts.values())
                return
            except TypeError:
                self.direct = False
        extra = {"launch_pdl": True} if pdl else {}
        kernel = self.fn[grid](*tensors, *ints, **consts, num_warps=num_warps, **extra)
        if self.direct:
            if len(self.compiled) >= self._MAX_ENTRIES:
                self.compiled.clear()
            self.compiled[key] = kernel


@functools.cache
def _launcher(name: str) -> _Launcher:
    from attn_contracts.combine import _kernels  # triton is imported on first launch only

    return _Launcher(getattr(_kernels, name))


def _mask_operands(mask: torch.Tensor | None, sink: torch.Tensor | None, dummy: torch.Tensor,
                   base: str) -> tuple[torch.Tensor, torch.Tensor, tuple[int, int, int],
                                       dict[str, Any]]:
    """Pointers, strides ``(s_mn, s_mt, s_s)`` and constexprs of the optional mask and sink (an
    absent one points at ``dummy`` and is never read: its ``HAS_*`` is False)."""
    s_mn, s_mt = (mask.stride() if mask.dim() == 2 else (0, mask.stride(0))) if mask is not None \
        else (0, 0)
    consts = dict(HAS_MASK=mask is not None, HAS_SINK=sink is not None,
                  SINK_SCALE=1.0 / log_of_base(base))
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
               block_h: int, block_d: int, num_warps: int, pdl: bool = False,
               mask: torch.Tensor | None = None, mask_q: int = 1,
               sink: torch.Tensor | None = None) -> None:
    """The body of the op ``attn_contracts::merge_``: launches with no input checks, for callers
    that checked once (``merge`` checks, then calls this). ``mask`` is the kernel's operand: uint8
    or int ``[N, T / mask_q]`` (``merge``'s ``row_mask``/``lens``)."""
    n, t, h, d = partial_out.shape
    if t == 0 or h == 0 or d == 0:
        return
    if not uses_triton(partial_out):
        o, lse = merge_reference(partial_out, _lse3(partial_lse), base=base,
                                 lse_out_base=lse_out_base, dtype=torch.float32,
                                 row_mask=_torch_row_mask(mask, mask_q), sink=sink)
        out.copy_(o)
        if lse_out is not None:
            lse_out.copy_(lse)
        return
    q_len, *lse_strides = _lse_geometry(partial_lse)
    in_scale, out_scale = lse_scales(base, lse_out_base)
    z = lse_out if lse_out is not None else out  # never written when WRITE_LSE is False
    m, k, extra_strides, extra_consts = _mask_operands(mask, sink, partial_lse, base)
    _launcher("merge_kernel")(
        launch_grid(t, h, d, block_h, block_d), (partial_out, partial_lse, out, z, m, k),
        (t, h, d, q_len, mask_q, *partial_out.stride(), *lse_strides, *out.stride(), z.stride(0),
         z.stride(1), *extra_strides),
        dict(N=n, IN_SCALE=in_scale, OUT_SCALE=out_scale, WRITE_LSE=lse_out is not None,
             **extra_consts, BLOCK_H=block_h, BLOCK_D=block_d, NUM_DB=_cdiv(d, block_d)),
        num_warps, pdl)


_merge_op = torch.library.custom_op("attn_contracts::merge_", mutates_args=("out", "lse_out"))(
    merge_into)


@_merge_op.register_fake
def _merge_fake(partial_out, partial_lse, out, lse_out, base, lse_out_base,  # type: ignore[no-untyped-def]
                block_h, block_d, num_warps, pdl=False, mask=None, mask_q=1, sink=None) -> None:
    return None


def rescale_into(partial_out: torch.Tensor, all_lse: torch.Tensor, rank: int, out: torch.Tensor,
                 lse_out: torch.Tensor | None, base: str, lse_out_base: str,
                 block_h: int, block_d: int, num_warps: int, pdl: bool = False,
                 mask: torch.Tensor | None = None, mask_q: int = 1,
                 sink: torch.Tensor | None = None) -> None:
    """The body of the op ``attn_contracts::rescale_`` (no input checks; see ``merge_into``)."""
    t, h, d = partial_out.shape
    if t == 0 or h == 0 or d == 0:
        return
    chunked = out.dim() == 4  # [C, T, H/C, D]: chunked by heads for a reduce-scatter
    chunks = out.shape[0] if chunked else 1
    if not uses_triton(partial_out):
        o, lse = rescale_reference(partial_out, _lse3(all_lse), rank, base=base,
                                   lse_out_base=lse_out_base, dtype=torch.float32,
                                   row_mask=_torch_row_mask(mask, mask_q), sink=sink)
        out.copy_(o.view(t, chunks, h // chunks, d).transpose(0, 1) if chunked else o)
        if lse_out is not None:
            lse_out.copy_(lse)
        return
    q_len, *lse_strides = _lse_geometry(all_lse)
    in_scale, out_scale = lse_scales(base, lse_out_base)
    z = lse_out if lse_out is not None else out
    y_strides = out.stride() if chunked else (0, *out.stride())
    m, k, extra_strides, extra_consts = _mask_operands(mask, sink, all_lse, base)
    _launcher("rescale_kernel")(
        launch_grid(t, h, d, block_h, block_d), (partial_out, all_lse, out, z, m, k),
        (rank, t, h, d, q_len, h // chunks, mask_q, *partial_out.stride(), *lse_strides,
         *y_strides, z.stride(0), z.stride(1), *extra_strides),
        dict(N=all_lse.shape[0], IN_SCALE=in_scale, OUT_SCALE=out_scale,
             WRITE_LSE=lse_out is not None, **extra_consts, BLOCK_H=block_h, BLOCK_D=block_d,
             NUM_DB=_cdiv(d, block_d)),
        num_warps, pdl)


_rescale_op = torch.library.custom_op(
    "attn_contracts::rescale_", mutates_args=("out", "lse_out"))(rescale_into)


@_rescale_op.register_fake
def _rescale_fake(partial_out, all_lse, rank, out, lse_out, base, lse_out_base,  # type: ignore[no-untyped-def]
                  block_h, block_d, num_warps, pdl=False, mask=None, mask_q=1, sink=None) -> None:
    return None


def _send_views(send: torch.Tensor, dtype: torch.dtype, o_bytes: int, t: int, hc: int,
                d: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The message buffer ``send [N, piece]`` (uint8) as ``O [N, T, HC, D]`` in ``dtype`` and
    ``LSE [N, T, HC]`` fp32 views (each destination's row: O at byte 0, LSE at ``o_bytes``)."""
    world = send.shape[0]
    size = torch.finfo(dtype).bits // 8
    o = send[:, : t * hc * d * size].view(dtype).view(world, t, hc, d)
    lse = send[:, o_bytes : o_bytes + t * hc * 4].view(torch.float32).view(world, t, hc)
    return o, lse


def pack_a2a_into(partial_out: torch.Tensor, lse: torch.Tensor, send: torch.Tensor, o_bytes: int,
                  block_h: int, block_d: int, num_warps: int, pdl: bool = False,
                  mask: torch.Tensor | None = None, mask_q: int = 1) -> None:
    """The body of the op ``attn_contracts::pack_a2a_`` (no input checks; see ``pack_a2a``)."""
    t, h, d = partial_out.shape
    world = send.shape[0]
    hc = h // world
    if t == 0 or h == 0 or d == 0:
        return
    if not uses_triton(partial_out):
        o_send, lse_send = _send_views(send, partial_out.dtype, o_bytes, t, hc, d)
        o_send.copy_(partial_out.view(t, world, hc, d).transpose(0, 1))  # [N, T, H/N, D]
        lse_send.copy_(lse.view(t, world, hc).transpose(0, 1))  # fp32 bits, [N, T, H/N]
        keep = _torch_row_mask(mask, mask_q)
        if keep is not None:
            o_send.masked_fill_(~keep.view(1, t, 1, 1), 0.0)
            lse_send.masked_fill_(~keep.view(1, t, 1), -math.inf)
        return
    size = partial_out.element_size()
    o_dst = send.view(partial_out.dtype)  # [N, piece / size]
    lse_dst = send[:, o_bytes:].view(torch.float32)  # [N, (piece - o_bytes) / 4]
    _launcher("pack_a2a_kernel")(
        launch_grid(t, h, d, block_h, block_d),
        (partial_out, lse, mask if mask is not None else lse, o_dst, lse_dst),
        (t, h, d, hc, mask_q, *partial_out.stride(), *lse.stride(),
         mask.stride(0) if mask is not None else 0, send.stride(0) // size, send.stride(0) // 4),
        dict(HAS_MASK=mask is not None, BLOCK_H=block_h, BLOCK_D=block_d,
             NUM_DB=_cdiv(d, block_d)),
        num_warps, pdl)


_pack_op = torch.library.custom_op("attn_contracts::pack_a2a_", mutates_args=("send",))(
    pack_a2a_into)


@_pack_op.register_fake
def _pack_fake(partial_out, lse, send, o_bytes, block_h, block_d, num_warps,  # type: ignore[no-untyped-def]
               pdl=False, mask=None, mask_q=1) -> None:
    return None


# --- launchers ------------------------------------------------------------------------------------
def _alloc(partial_out: torch.Tensor, shape: tuple[int, ...], out: torch.Tensor | None,
           lse_out: torch.Tensor | None, return_lse: bool,
           out_dtype: torch.dtype | None) -> tuple[torch.Tensor, torch.Tensor | None]:
    if out is None:
        out = partial_out.new_empty(shape, dtype=out_dtype or partial_out.dtype)
    if lse_out is None and return_lse:
        lse_out = partial_out.new_empty(shape[:2], dtype=torch.float32)
    return out, lse_out


def merge(
    partial_out: torch.Tensor,
    partial_lse: torch.Tensor,
    *,
    base: str,
    out: torch.Tensor | None = None,
    lse_out: torch.Tensor | None = None,
    return_lse: bool = False,
    lse_out_base: str | None = None,
    out_dtype: torch.dtype | None = None,
    config: KernelConfig | None = None,
    pdl: bool = True,
    row_mask: torch.Tensor | None = None,
    lens: torch.Tensor | None = None,
    sink: torch.Tensor | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Merge ``partial_out [N, T, H, D]`` by ``partial_lse [N, T, H]`` (or ``[N, B, Q, H]``) in
    base ``base`` into ``out [T, H, D]``; with ``return_lse`` (or ``lse_out``) also the merged
    float32 LSE ``[T, H]`` in ``lse_out_base`` (default: ``base``). ``pdl=False`` never uses
    programmatic dependent launch (``config.pdl`` decides otherwise, on Hopper and newer).

    Empty shards by mask: ``row_mask [N, T]`` (bool/uint8, any strides, nonzero = the shard has keys
    for the row) or ``lens [N, B]`` (int32/int64 local lengths, ``T = B · q_len`` rows, request
    ``t // q_len``). ``sink [H]``: per-head sink logits in natural-log units (as models store
    them), converted to base ``b`` as ``s · log_b(e)`` and added once: ``o ← o · b^L / (b^L +
    b^s')``, ``L ← log_b(b^L + b^s')``; a row empty on every shard gives ``o = 0``, ``L = s'``."""
    lse_out_base = lse_out_base or base
    _check_base(base, lse_out_base)
    _check_inputs(partial_out, partial_lse, 4)
    n, t, h, d = partial_out.shape
    if n < 1:
        _fail("merge needs at least one partial (N >= 1), found N=0")
    _check_lse(partial_lse, n, t, h, "partial_lse")
    row_mask_arg, mask_q = _row_mask_arg(row_mask, lens, (n,), t, partial_out.device)
    _check_sink(sink, h, partial_out.device)
    out, lse_out = _alloc(partial_out, (t, h, d), out, lse_out, return_lse, out_dtype)
    _check_outputs(out, lse_out, t, h, d, partial_out.device)
    cfg = config or default_config(n, t, h, d)
    # Eager calls skip the dispatcher (tens of µs per call); traced calls go through the op.
    op = torch.ops.attn_contracts.merge_ if torch.compiler.is_compiling() else merge_into
    op(partial_out, partial_lse, out, lse_out, base, lse_out_base, cfg.block_h, cfg.block_d,
       cfg.num_warps, cfg.pdl and pdl, row_mask_arg, mask_q, sink)
    return (out, lse_out) if lse_out is not None else out


def rescale(
    partial_out: torch.Tensor,
    all_lse: torch.Tensor,
    rank: int,
    *,
    base: str,
    out: torch.Tensor | None = None,
    lse_out: torch.Tensor | None = None,
    return_lse: bool = False,
    lse_out_base: str | None = None,
    out_dtype: torch.dtype | None = None,
    config: KernelConfig | None = None,
    pdl: bool = True,
    row_mask: torch.Tensor | None = None,
    lens: torch.Tensor | None = None,
    sink: torch.Tensor | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Scale rank ``rank``'s ``partial_out [T, H, D]`` by ``b^(lse_rank − LSE)`` computed from the
    gathered ``all_lse [N, T, H]``; summing the results over ranks (a reduce-scatter or
    all-reduce) gives the merge. ``out`` may alias ``partial_out`` (in-place). ``row_mask [N, T]`` /
    ``lens [N, B]`` mark every rank's empty rows and ``sink [H]`` (natural-log logits) enters the
    denominator and the merged LSE, as in :func:`merge`."""
    lse_out_base = lse_out_base or base
    _check_base(base, lse_out_base)
    _check_inputs(partial_out, all_lse, 3)
    t, h, d = partial_out.shape
    n = all_lse.shape[0] if all_lse.dim() in (3, 4) else 0
    _check_lse(all_lse, n, t, h, "all_lse")
    if not 0 <= rank < n:
        _fail(f"rank {rank} is outside the {n} gathered LSEs (allowed: 0..{n - 1})")
    row_mask_arg, mask_q = _row_mask_arg(row_mask, lens, (n,), t, partial_out.device)
    _check_sink(sink, h, partial_out.device)
    out, lse_out = _alloc(partial_out, (t, h, d), out, lse_out, return_lse, out_dtype)
    if out.dim() == 4:  # [N, T, H/N, D], head chunks for a reduce-scatter
        c = out.shape[0]
        if h % c or tuple(out.shape) != (c, t, h // c, d):
            _fail(f"chunked out shape {tuple(out.shape)} must be [C, T, H/C, D] with C dividing "
                  f"H={h} (T={t}, D={d})")
        _check_outputs(out[0], lse_out, t, h // c, d, partial_out.device, lse_heads=h)
    else:
        _check_outputs(out, lse_out, t, h, d, partial_out.device)
    cfg = config or default_config(n, t, h, d, "rescale")
    op = torch.ops.attn_contracts.rescale_ if torch.compiler.is_compiling() else rescale_into
    op(partial_out, all_lse, rank, out, lse_out, base, lse_out_base, cfg.block_h, cfg.block_d,
       cfg.num_warps, cfg.pdl and pdl, row_mask_arg, mask_q, sink)
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
    Returns ``send``."""
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
    # the typed views need rows and the LSE offset in whole fp32 (and O) elements
    if o_bytes < t * hc * d * size or o_bytes % 4 or piece % 4 or piece < o_bytes + t * hc * 4 \
            or send.stride(0) % 4 or send.storage_offset() % 4:
        _fail(f"send rows of {piece} bytes (row stride {send.stride(0)}, offset "
              f"{send.storage_offset()}) cannot hold O ({t * hc * d * size} bytes) then the LSE "
              f"({t * hc * 4} bytes) at o_bytes={o_bytes} (allowed: o_bytes, the row length, row "
              "stride and start offset multiples of 4 bytes)")
    for name, x in (("lse", lse), ("send", send)):
        if x.device != partial_out.device:
            _fail(f"{name} is on {x.device} but partial_out is on {partial_out.device}")
    row_mask_arg, mask_q = _row_mask_arg(row_mask, lens, (), t, partial_out.device)
    cfg = config or default_config(world, t, h, d, "pack")
    op = torch.ops.attn_contracts.pack_a2a_ if torch.compiler.is_compiling() else pack_a2a_into
    op(partial_out, lse, send, o_bytes, cfg.block_h, cfg.block_d, cfg.num_warps,
       cfg.pdl and pdl, row_mask_arg, mask_q)
    return send
