"""Launchers of the combine kernels, registered as torch custom ops.

``merge`` and ``rescale`` check their inputs (shapes, dtypes, devices), allocate what the caller did
not pass, and launch. The ops ``attn_contracts::merge_`` and ``attn_contracts::rescale_`` write into
their ``out``/``lse_out`` arguments and have fake implementations, so ``torch.compile(fullgraph=True)``
traces through them and CUDA graphs capture them. On CUDA tensors they run the Triton kernels; on
CPU tensors they run the same kernels under ``TRITON_INTERPRET=1`` when it is set, else the torch
path (fp32, the reference's policy).

LSE tensors are taken as ``[N, T, H]`` or ``[N, B, Q, H]`` strided views (``T = B·Q``); the
dispatcher builds those views from a record's layout, never copies.
"""

from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass
from typing import Any

import torch

from attn_contracts.combine.reference import log_of_base, merge_reference, rescale_reference
from attn_contracts.records import BASES

__all__ = ["OUT_DTYPES", "KernelConfig", "default_config", "merge", "rescale", "uses_triton"]

OUT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
_LSE_DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.float64)


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


@functools.lru_cache(maxsize=1024)
def default_config(num_partials: int, num_tokens: int, num_heads: int, head_dim: int,
                   kernel: str = "merge") -> KernelConfig:
    """Tiles from the shape, no autotuning (plans are built at startup, graphs are captured).

    Measured on an H200 (``bench/results/combine-sweep-h200.txt``): one-warp programs are
    fastest, ``merge`` with 256 elements (8 per thread per shard, every shard in flight at once, so
    N multiplies the bytes in flight) and up to 128 of the head dim, ``rescale`` with 1024 (32 per
    thread: it has one stream, so each thread needs more in flight) and up to 512. With fewer
    programs than SMs (one-token decode, latency-bound) ``merge`` shrinks its tile to 128 elements
    and ``rescale`` spreads 1024 over four warps. PDL is on for grids of at most one wave: it saved
    0.45 µs per launch there and cost 10 % or more on larger grids."""
    del num_partials  # all shards' tiles are in flight together; N does not change the tile
    d2 = _next_pow2(head_dim)
    elems, d_max = (256, 128) if kernel == "merge" else (1024, 512)
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
    return KernelConfig(block_h, block_d, num_warps, pdl=programs(block_h, block_d) <= _ONE_WAVE)


def uses_triton(t: torch.Tensor) -> bool:
    """Whether a tensor on this device goes through the Triton kernels (else the torch path)."""
    return t.is_cuda or os.environ.get("TRITON_INTERPRET") == "1"


@functools.lru_cache(maxsize=16)
def _scales(base: str, lse_out_base: str) -> tuple[float, float]:
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
def _fail(what: str) -> None:
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


# --- launching ------------------------------------------------------------------------------------
_MAX_GRID_YZ = 65535  # grid axes 1 and 2 hold at most this many programs each


def _grid(t: int, h: int, d: int, block_h: int, block_d: int) -> tuple[int, int, int]:
    """Axis 0: the (head, dim) blocks of a row; rows on axes 1 and 2 (see ``_kernels.py``)."""
    rows = min(t, _MAX_GRID_YZ)
    return _cdiv(h, block_h) * _cdiv(d, block_d), rows, _cdiv(t, rows)


@functools.lru_cache(maxsize=64)
def _pdl_capable(device_index: int) -> bool:
    """``griddepcontrol`` needs compute capability 9.0 (Hopper) or newer."""
    return torch.cuda.get_device_capability(device_index) >= (9, 0)


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


# --- custom ops -----------------------------------------------------------------------------------
def _merge_impl(partial_out: torch.Tensor, partial_lse: torch.Tensor, out: torch.Tensor,
                lse_out: torch.Tensor | None, base: str, lse_out_base: str,
                block_h: int, block_d: int, num_warps: int, pdl: bool = False) -> None:
    n, t, h, d = partial_out.shape
    if t == 0 or h == 0 or d == 0:
        return
    if not uses_triton(partial_out):
        o, lse = merge_reference(partial_out, _lse3(partial_lse), base=base,
                                 lse_out_base=lse_out_base, dtype=torch.float32)
        out.copy_(o)
        if lse_out is not None:
            lse_out.copy_(lse)
        return
    q_len, *lse_strides = _lse_geometry(partial_lse)
    in_scale, out_scale = _scales(base, lse_out_base)
    z = lse_out if lse_out is not None else out  # never written when WRITE_LSE is False
    _launcher("merge_kernel")(
        _grid(t, h, d, block_h, block_d), (partial_out, partial_lse, out, z),
        (t, h, d, q_len, *partial_out.stride(), *lse_strides, *out.stride(), z.stride(0),
         z.stride(1)),
        dict(N=n, IN_SCALE=in_scale, OUT_SCALE=out_scale, WRITE_LSE=lse_out is not None,
             BLOCK_H=block_h, BLOCK_D=block_d, NUM_DB=_cdiv(d, block_d)),
        num_warps, pdl)


_merge_op = torch.library.custom_op("attn_contracts::merge_", mutates_args=("out", "lse_out"))(
    _merge_impl)


@_merge_op.register_fake
def _merge_fake(partial_out, partial_lse, out, lse_out, base, lse_out_base,  # type: ignore[no-untyped-def]
                block_h, block_d, num_warps, pdl=False) -> None:
    return None


def _rescale_impl(partial_out: torch.Tensor, all_lse: torch.Tensor, rank: int, out: torch.Tensor,
                  lse_out: torch.Tensor | None, base: str, lse_out_base: str,
                  block_h: int, block_d: int, num_warps: int, pdl: bool = False) -> None:
    t, h, d = partial_out.shape
    if t == 0 or h == 0 or d == 0:
        return
    chunked = out.dim() == 4  # [C, T, H/C, D]: chunked by heads for a reduce-scatter
    chunks = out.shape[0] if chunked else 1
    if not uses_triton(partial_out):
        o, lse = rescale_reference(partial_out, _lse3(all_lse), rank, base=base,
                                   lse_out_base=lse_out_base, dtype=torch.float32)
        out.copy_(o.view(t, chunks, h // chunks, d).transpose(0, 1) if chunked else o)
        if lse_out is not None:
            lse_out.copy_(lse)
        return
    q_len, *lse_strides = _lse_geometry(all_lse)
    in_scale, out_scale = _scales(base, lse_out_base)
    z = lse_out if lse_out is not None else out
    y_strides = out.stride() if chunked else (0, *out.stride())
    _launcher("rescale_kernel")(
        _grid(t, h, d, block_h, block_d), (partial_out, all_lse, out, z),
        (rank, t, h, d, q_len, h // chunks, *partial_out.stride(), *lse_strides, *y_strides,
         z.stride(0), z.stride(1)),
        dict(N=all_lse.shape[0], IN_SCALE=in_scale, OUT_SCALE=out_scale,
             WRITE_LSE=lse_out is not None, BLOCK_H=block_h, BLOCK_D=block_d,
             NUM_DB=_cdiv(d, block_d)),
        num_warps, pdl)


_rescale_op = torch.library.custom_op(
    "attn_contracts::rescale_", mutates_args=("out", "lse_out"))(_rescale_impl)


@_rescale_op.register_fake
def _rescale_fake(partial_out, all_lse, rank, out, lse_out, base, lse_out_base,  # type: ignore[no-untyped-def]
                  block_h, block_d, num_warps, pdl=False) -> None:
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
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Merge ``partial_out [N, T, H, D]`` by ``partial_lse [N, T, H]`` (or ``[N, B, Q, H]``) in
    base ``base`` into ``out [T, H, D]``; with ``return_lse`` (or ``lse_out``) also the merged
    float32 LSE ``[T, H]`` in ``lse_out_base`` (default: ``base``). ``pdl=False`` never uses
    programmatic dependent launch (``config.pdl`` decides otherwise, on Hopper and newer)."""
    lse_out_base = lse_out_base or base
    _check_base(base, lse_out_base)
    _check_inputs(partial_out, partial_lse, 4)
    n, t, h, d = partial_out.shape
    if n < 1:
        _fail("merge needs at least one partial (N >= 1), found N=0")
    _check_lse(partial_lse, n, t, h, "partial_lse")
    out, lse_out = _alloc(partial_out, (t, h, d), out, lse_out, return_lse, out_dtype)
    _check_outputs(out, lse_out, t, h, d, partial_out.device)
    cfg = config or default_config(n, t, h, d)
    # Eager calls skip the dispatcher (tens of µs per call); traced calls go through the op.
    op = torch.ops.attn_contracts.merge_ if torch.compiler.is_compiling() else _merge_impl
    op(partial_out, partial_lse, out, lse_out, base, lse_out_base, cfg.block_h, cfg.block_d,
       cfg.num_warps, cfg.pdl and pdl)
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
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Scale rank ``rank``'s ``partial_out [T, H, D]`` by ``b^(lse_rank − LSE)`` computed from the
    gathered ``all_lse [N, T, H]``; summing the results over ranks (a reduce-scatter or
    all-reduce) gives the merge. ``out`` may alias ``partial_out`` (in-place)."""
    lse_out_base = lse_out_base or base
    _check_base(base, lse_out_base)
    _check_inputs(partial_out, all_lse, 3)
    t, h, d = partial_out.shape
    n = all_lse.shape[0] if all_lse.dim() in (3, 4) else 0
    _check_lse(all_lse, n, t, h, "all_lse")
    if not 0 <= rank < n:
        _fail(f"rank {rank} is outside the {n} gathered LSEs (allowed: 0..{n - 1})")
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
    op = torch.ops.attn_contracts.rescale_ if torch.compiler.is_compiling() else _rescale_impl
    op(partial_out, all_lse, rank, out, lse_out, base, lse_out_base, cfg.block_h, cfg.block_d,
       cfg.num_warps, cfg.pdl and pdl)
    return (out, lse_out) if lse_out is not None else out
