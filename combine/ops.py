"""The combine ops, the public face of the combine kernels: ``merge``, ``rescale`` and ``pack_a2a``
check their inputs (``inputs.py``), allocate what the caller did not pass, pick the tiles
(``tiles.py``) and launch: every decision of a launch goes into one object
(``launches.CombineLaunch``, ``PackLaunch``), which the launch body there reads; a repeated call
runs the launch its first call decided (``fastpath.py``). The ops
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
from typing import Any
from typing import TypedDict
from typing import Unpack

import torch

from attn_contracts.checks import check_rank
from attn_contracts.checks import refuse
from attn_contracts.combine import launches
from attn_contracts.combine.fastpath import OPS
from attn_contracts.combine.fastpath import KernelCall
from attn_contracts.combine.fastpath import PackCall
from attn_contracts.combine.fastpath import keep
from attn_contracts.combine.fastpath import kernel_call
from attn_contracts.combine.fastpath import lookup
from attn_contracts.combine.fastpath import pack_key
from attn_contracts.combine.inputs import LSE_DTYPES
from attn_contracts.combine.inputs import OUT_DTYPES
from attn_contracts.combine.inputs import check_base
from attn_contracts.combine.inputs import check_inputs
from attn_contracts.combine.inputs import check_lse
from attn_contracts.combine.inputs import check_outputs
from attn_contracts.combine.inputs import check_sink
from attn_contracts.combine.inputs import check_writable
from attn_contracts.combine.inputs import fail
from attn_contracts.combine.inputs import row_mask_arg
from attn_contracts.combine.launch import MAX_GRID_YZ
from attn_contracts.combine.launch import launch_grid
from attn_contracts.combine.launch import uses_triton
from attn_contracts.combine.launches import CombineLaunch
from attn_contracts.combine.launches import PackLaunch
from attn_contracts.combine.tiles import KernelConfig
from attn_contracts.combine.tiles import default_config
from attn_contracts.combine.tiles import sm_count

__all__ = [
    "MAX_GRID_YZ",
    "CombineOptions",
    "KernelConfig",
    "default_config",
    "launch_grid",
    "merge",
    "pack_a2a",
    "rescale",
    "uses_triton",
]


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
    check_base(base, lse_out_base)
    mask_arg, mask_q = row_mask_arg(options.get("row_mask"), options.get("lens"), (n,), t,
                                         partial_out.device)
    check_sink(options.get("sink"), h, partial_out.device)
    out, lse_out = _alloc(partial_out, (t, h, d), options.get("out"), options.get("lse_out"),
                          options.get("return_lse", False), options.get("out_dtype"))
    return lse_out_base, mask_arg, mask_q, out, lse_out


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
        keep(OPS, key, kernel_call(launches.combine_launch(a), a.out, a.lse_out, options))
    return (a.out, a.lse_out) if a.lse_out is not None else a.out


def launch_checked(partial_out: torch.Tensor, lse: torch.Tensor, rank: int | None, *, base: str,
                   options: CombineOptions) -> tuple[torch.Tensor | tuple[torch.Tensor, torch.Tensor],
                                                     KernelCall | None]:
    """A ``merge`` (``rank`` None) or ``rescale`` with every check, and the decided launch that
    runs this argument set again (None: the torch path, no rows, ``torch.compile``), for a caller
    that keeps it under a key of its own (a plan): no key of ``OPS`` is made or looked up, so a
    plan's first call computes one key, its own."""
    a = _merge_launch(partial_out, lse, base, options) if rank is None else \
        _rescale_launch(partial_out, lse, rank, base, options)
    if torch.compiler.is_compiling():
        return _run(a, None, options), None
    call = kernel_call(launches.combine_launch(a), a.out, a.lse_out, options)
    return ((a.out, a.lse_out) if a.lse_out is not None else a.out), call


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
    return _run(_merge_launch(partial_out, partial_lse, base, options), key, options)


def _merge_launch(partial_out: torch.Tensor, partial_lse: torch.Tensor, base: str,
                  options: CombineOptions) -> CombineLaunch:
    """The checks of :func:`merge` and every decision of its launch."""
    _options("merge", options)
    check_inputs(partial_out, partial_lse, 4)
    n, t, h, d = partial_out.shape
    if n < 1:
        fail("merge needs at least one partial (N >= 1), found N=0")
    check_lse(partial_lse, n, t, h, "partial_lse")
    lse_out_base, mask_arg, mask_q, out, lse_out = _prepare(partial_out, n, t, h, d, base,
                                                            options)
    check_outputs(out, lse_out, t, h, d, partial_out.device)
    check_writable(out=out, lse_out=lse_out)
    cfg = _tiles(options.get("config"), options.get("pdl", True), n, t, h, d, "merge",
                 partial_out.device)
    return CombineLaunch(partial_out, partial_lse, out, lse_out, base, lse_out_base, cfg,
                         mask_arg, mask_q, options.get("sink"))


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
    return _run(_rescale_launch(partial_out, all_lse, rank, base, options), key, options)


def _rescale_launch(partial_out: torch.Tensor, all_lse: torch.Tensor, rank: int, base: str,
                    options: CombineOptions) -> CombineLaunch:
    """The checks of :func:`rescale` and every decision of its launch."""
    _options("rescale", options)
    check_inputs(partial_out, all_lse, 3)
    t, h, d = partial_out.shape
    n = all_lse.shape[0] if all_lse.dim() in (3, 4) else 0
    check_lse(all_lse, n, t, h, "all_lse")
    if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < n:
        refuse(check_rank("rescale", rank, n), "rank outside the gathered LSEs")
    lse_out_base, mask_arg, mask_q, out, lse_out = _prepare(partial_out, n, t, h, d, base,
                                                            options)
    if out.dim() == 4:  # [N, T, H/N, D], head chunks for a reduce-scatter
        c = out.shape[0]
        if h % c or tuple(out.shape) != (c, t, h // c, d):
            fail(f"chunked out shape {tuple(out.shape)} must be [C, T, H/C, D] with C dividing "
                 f"H={h} (T={t}, D={d})")
        check_outputs(out[0], lse_out, t, h // c, d, partial_out.device, lse_heads=h)
    else:
        check_outputs(out, lse_out, t, h, d, partial_out.device)
    check_writable(out=out, lse_out=lse_out)
    cfg = _tiles(options.get("config"), options.get("pdl", True), n, t, h, d, "rescale",
                 partial_out.device)
    return CombineLaunch(partial_out, all_lse, out, lse_out, base, lse_out_base, cfg,
                         mask_arg, mask_q, options.get("sink"), rank)


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
        fail(f"partial_out must be [T, H, D] of {OUT_DTYPES}, found {partial_out.dtype} "
             f"{tuple(partial_out.shape)}")
    t, h, d = partial_out.shape
    if lse.dim() != 2 or tuple(lse.shape) != (t, h) or lse.dtype not in LSE_DTYPES:
        fail(f"lse must be a float [T, H] = {(t, h)} view, found {lse.dtype} {tuple(lse.shape)}")
    if send.dim() != 2 or send.dtype != torch.uint8 or send.stride(1) != 1 or send.shape[0] < 1:
        fail(f"send must be a uint8 [N, piece] buffer with contiguous rows, found {send.dtype} "
              f"{tuple(send.shape)} strides {send.stride()}")
    world, piece = send.shape
    size = partial_out.element_size()
    if h % world:
        fail(f"num_heads={h} is not divisible by the {world} destinations")
    hc = h // world
    # the typed views need rows and the LSE offset in whole fp32 (and O) elements (an empty step
    # has nothing to write: its rows may be empty)
    if t and (o_bytes < t * hc * d * size or o_bytes % 4 or piece % 4
              or piece < o_bytes + t * hc * 4 or send.stride(0) % 4 or send.storage_offset() % 4):
        fail(f"send rows of {piece} bytes (row stride {send.stride(0)}, offset "
              f"{send.storage_offset()}) cannot hold O ({t * hc * d * size} bytes) then the LSE "
              f"({t * hc * 4} bytes) at o_bytes={o_bytes} (allowed: o_bytes, the row length, row "
              "stride and start offset multiples of 4 bytes)")
    for name, x in (("lse", lse), ("send", send)):
        if x.device != partial_out.device:
            fail(f"{name} is on {x.device} but partial_out is on {partial_out.device}")
    mask_arg, mask_q = row_mask_arg(row_mask, lens, (), t, partial_out.device)
    cfg = _tiles(config, pdl, world, t, h, d, "pack", partial_out.device)
    launch = PackLaunch(partial_out, lse, send, o_bytes, cfg, mask_arg, mask_q)
    if key is None:
        torch.ops.attn_contracts.pack_a2a_(*launch.op_args())
    else:
        prepared = launches.pack_launch(launch)
        if prepared is not None:
            keep(OPS, key, PackCall(prepared, o_bytes, row_mask is not None
                                   and row_mask.dtype == torch.bool))
    return send
