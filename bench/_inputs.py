"""What the combine benchmarks feed the calls they time: the bytes each op moves (the floor of any
implementation), input sets, row masks and sinks, the record they plan with, a process group of
one rank, and the small shape a dry run uses instead of each measured one. Imported by path, like ``_timing``.

Bytes moved (``s``: bytes per element of the partials)::

    merge    N·T·H·D·s + N·T·H·4 (read partials and LSE) + T·H·D·s + T·H·4 (write output and LSE)
    rescale  2·T·H·D·s + N·T·H·4 + T·H·4
    pack     2·(T·H·D·s + T·H·4) (read O and the LSE once, write the message once)
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from typing import Any

import torch
from _timing import is_dry_run

from attn_contracts.combine.workspace import a2a_piece_bytes

__all__ = ["BYTES", "MASKED_FRACTION", "Shape", "bench_record", "dry_shape", "input_sets",
           "merge_bytes", "pack_bytes", "pack_sets", "rescale_bytes", "row_mask", "sink_like",
           "sized", "world_of_one"]

Shape = tuple[int, int, int, int]  # (N, T, H, D)
MASKED_FRACTION = 0.2  # rows a masked call marks empty


def merge_bytes(n: int, t: int, h: int, d: int, s: int) -> int:
    return n * t * h * d * s + n * t * h * 4 + t * h * d * s + t * h * 4


def rescale_bytes(n: int, t: int, h: int, d: int, s: int) -> int:
    return 2 * t * h * d * s + n * t * h * 4 + t * h * 4


def pack_bytes(n: int, t: int, h: int, d: int, s: int) -> int:
    return 2 * (t * h * d * s + t * h * 4)


#: bytes moved by each kernel, by name
BYTES: dict[str, Callable[[int, int, int, int, int], int]] = {
    "merge": merge_bytes, "rescale": rescale_bytes, "pack": pack_bytes}


def input_sets(shape: Shape, dtype: torch.dtype, copies: int, device: Any,
               layout: str = "ntHd") -> list[tuple[torch.Tensor, ...]]:
    """``copies`` sets of (partials, LSE, out, lse_out), random (LSE × 4). ``layout``: ``ntHd``
    (``[N, T, H]`` LSE), ``ht`` (the LSE an ``[N, H, T]`` buffer, passed as its ``[N, T, H]``
    view), ``tnhd`` (FlashInfer ``merge_states``: ``[T, N, H, D]`` and ``[T, N, H]``)."""
    n, t, h, d = shape
    sets = []
    for _ in range(copies):
        o = torch.randn((t, n, h, d) if layout == "tnhd" else (n, t, h, d), device=device,
                        dtype=dtype)
        if layout == "ht":
            lse = (torch.randn((n, h, t), device=device) * 4).transpose(1, 2)
        else:
            lse = torch.randn((t, n, h) if layout == "tnhd" else (n, t, h), device=device) * 4
        sets.append((o, lse, torch.empty(t, h, d, device=device, dtype=dtype),
                     torch.empty(t, h, device=device)))
    return sets


def pack_sets(shape: Shape, dtype: torch.dtype, copies: int,
              device: Any) -> list[tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]]:
    """``copies`` sets of (partial_out [T, H, D], LSE [T, H], send [N, piece], o_bytes) in
    ``dcp.py``'s all-to-all layout (N = ``shape[0]`` destinations)."""
    n, t, h, d = shape
    o_bytes, piece = a2a_piece_bytes(t, h // n, d, torch.finfo(dtype).bits // 8)
    return [(torch.randn(t, h, d, device=device, dtype=dtype),
             torch.randn(t, h, device=device) * 4,
             torch.empty(n, piece, dtype=torch.uint8, device=device), o_bytes)
            for _ in range(copies)]


def row_mask(shape: tuple[int, ...], device: Any, seed: int = 0) -> torch.Tensor:
    """A bool mask of ``shape`` (``[N, T]``, or ``[T]`` for one rank), ``MASKED_FRACTION`` of the
    rows empty; row 0 kept, so a one-token shape has one."""
    g = torch.Generator(device=device).manual_seed(seed)
    keep = torch.rand(shape, device=device, generator=g) >= MASKED_FRACTION
    keep[..., 0] = True
    return keep


def sink_like(heads: int, device: Any) -> torch.Tensor:
    """Per-head sink logits ``[H]`` (natural-log units)."""
    return torch.randn(heads, device=device)


def bench_record(d: int, base: str, name: str) -> Any:
    """The record a benchmark plans with: FlashInfer's base and layout (``[T, H]`` fp32) but empty
    rows defined as −inf, so the plain rows time the unmasked kernel. FlashInfer's own records
    declare their empty rows undefined, and their plans demand a row mask: the "masked" rows."""
    from attn_contracts import CapabilityRecord

    return CapabilityRecord.model_validate({
        "name": f"bench.{name}.base{base}", "library": "bench", "source": f"bench/{name}.py",
        "evidence": "measured",
        # the benchmarks write every partial: an empty row's output is 0, never garbage
        "lse": {"returns": "lse", "base": base, "layout": "token_head", "dtype": "float32",
                "empty_row": "-inf", "empty_out": "zero", "includes_sink": False},
        "decode": {"attention": "mla" if d == 512 else "mha", "out_layout": "token_head_dim",
                   "head_dims": [d], "q_dtypes": ["bfloat16", "float16", "float32"],
                   "q_len_gt_1": False}})


def dry_shape(shape: Shape) -> Shape:
    """The shape a dry run uses for ``shape``: the same N, at most 3 tokens (one stays one), at
    most 2·N heads (a multiple of N where ``shape``'s was, so the same modes apply) and a head
    dim of at most 64 (40 where it was not a power of two)."""
    n, t, h, d = shape
    heads = h if h <= 2 * n else 2 * n if h % n == 0 else 2 * n + 1
    dim = d if d <= 64 else 64 if d & (d - 1) == 0 else 40
    return n, min(t, 3), heads, dim


def sized(shape: Shape) -> Shape:
    """The shape a benchmark measures: ``shape``, or in a dry run its :func:`dry_shape`."""
    return dry_shape(shape) if is_dry_run() else shape


def world_of_one(backend: str) -> Any:
    """A process group of this process alone (``dcp_combine`` at world size 1), on ``backend``
    (``"nccl"``, ``"gloo"``); the one already made where there is one."""
    import torch.distributed as dist

    if not dist.is_initialized():
        store = dist.FileStore(os.path.join(tempfile.mkdtemp(), "store"), 1)
        dist.init_process_group(backend, store=store, rank=0, world_size=1)
    return dist.group.WORLD
