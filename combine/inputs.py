"""Input checks of the combine ops (``ops.py``) and the DCP combine (``dcp.py``): shapes, dtypes,
devices, bases, the row mask and the sink. Each raises one ``ValueError`` naming the value found and
what is allowed; none of them launches or allocates."""

from __future__ import annotations

from typing import NoReturn

import torch

from attn_contracts.checks import SINK_DTYPES
from attn_contracts.records import BASES

__all__ = [
    "LENS_DTYPES",
    "LSE_DTYPES",
    "MASK_DTYPES",
    "OUT_DTYPES",
    "SINK_TENSOR_DTYPES",
    "check_base",
    "check_inputs",
    "check_lse",
    "check_outputs",
    "check_sink",
    "check_writable",
    "fail",
    "row_mask_arg",
]

OUT_DTYPES = (torch.float16, torch.bfloat16, torch.float32)
LSE_DTYPES = (torch.float32, torch.bfloat16, torch.float16, torch.float64)
MASK_DTYPES = (torch.bool, torch.uint8)
LENS_DTYPES = (torch.int32, torch.int64)
SINK_TENSOR_DTYPES = tuple(getattr(torch, name) for name in SINK_DTYPES)  # the plan's rule


def fail(what: str) -> NoReturn:
    raise ValueError(what)


def check_lse(lse: torch.Tensor, n: int, t: int, h: int, name: str) -> None:
    if lse.dim() not in (3, 4):
        fail(f"{name} must be [N, T, H] or [N, B, Q, H], found shape {tuple(lse.shape)}")
    if lse.dtype not in LSE_DTYPES:
        fail(f"{name} dtype {lse.dtype} is not a float dtype (allowed: {LSE_DTYPES})")
    t_of_lse = lse.shape[1] * (lse.shape[2] if lse.dim() == 4 else 1)
    if lse.shape[0] != n or t_of_lse != t or lse.shape[-1] != h:
        fail(f"{name} shape {tuple(lse.shape)} does not match N={n}, T={t}, H={h}")


def check_outputs(out: torch.Tensor, lse_out: torch.Tensor | None, t: int, h: int, d: int,
                   device: torch.device, lse_heads: int | None = None) -> None:
    if tuple(out.shape) != (t, h, d):
        fail(f"out shape {tuple(out.shape)} must be [T, H, D] = {(t, h, d)}")
    if out.dtype not in OUT_DTYPES:
        fail(f"out dtype {out.dtype} is not supported (allowed: {OUT_DTYPES})")
    hl = lse_heads or h
    if lse_out is not None and (tuple(lse_out.shape) != (t, hl) or lse_out.dtype != torch.float32):
        fail(f"lse_out must be float32 [T, H] = {(t, hl)}, found {lse_out.dtype} "
              f"{tuple(lse_out.shape)}")
    for name, x in (("out", out), ("lse_out", lse_out)):
        if x is not None and x.device != device:
            fail(f"{name} is on {x.device} but the inputs are on {device}")


def check_writable(**outputs: torch.Tensor | None) -> None:
    """Outputs must not overlap themselves (a stride-0 expanded view would have heads or rows
    overwrite each other); a contiguous tensor (the common case, a cached flag) never does."""
    for name, x in outputs.items():
        if x is not None and not x.is_contiguous() and _self_overlapping(x):
            fail(f"{name} overlaps itself (shape {tuple(x.shape)}, strides {x.stride()}): every "
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


def check_inputs(partial_out: torch.Tensor, lse: torch.Tensor, expect_dims: int) -> None:
    if partial_out.dim() != expect_dims:
        fail(f"partial_out must have {expect_dims} dims, found shape {tuple(partial_out.shape)}")
    if partial_out.dtype not in OUT_DTYPES:
        fail(f"partial_out dtype {partial_out.dtype} is not supported (allowed: {OUT_DTYPES})")
    if lse.device != partial_out.device:
        fail(f"partial_lse is on {lse.device} but partial_out is on {partial_out.device}")


def check_base(base: str, lse_out_base: str) -> None:
    for name, b in (("base", base), ("lse_out_base", lse_out_base)):
        if b not in BASES:
            fail(f"{name} {b!r} is not supported (allowed: {', '.join(map(repr, BASES))})")


def row_mask_arg(mask: torch.Tensor | None, lens: torch.Tensor | None, lead: tuple[int, ...],
                  t: int, device: torch.device) -> tuple[torch.Tensor | None, int]:
    """The kernel's mask operand and ``MASK_Q`` (rows per entry) from ``row_mask [*lead, T]`` (bool
    or uint8: one entry per row) or ``lens [*lead, B]`` (int lengths: one entry per request of
    ``q_len = T / B`` rows). Bool is read as uint8 through the same strides, never copied."""
    if mask is not None and lens is not None:
        fail("pass a row mask or local lengths, not both (found row_mask= and lens=)")
    if mask is not None:
        _check_mask_like(mask, "row_mask", "T", MASK_DTYPES, lead, device)
        if mask.shape[-1] != t:
            fail(f"row_mask has {mask.shape[-1]} rows, the partials have T={t}")
        return (mask.view(torch.uint8) if mask.dtype == torch.bool else mask), 1
    if lens is not None:
        _check_mask_like(lens, "lens", "B", LENS_DTYPES, lead, device)
        b = lens.shape[-1]
        if (b == 0 and t != 0) or (b and t % b):
            fail(f"T={t} rows are not B={b} requests of one uniform q_len (ragged "
                  "query_start_loc is not supported)")
        return lens, max(1, t // b) if b else 1
    return None, 1


def _check_mask_like(x: torch.Tensor, name: str, last: str, dtypes: tuple[torch.dtype, ...],
                     lead: tuple[int, ...], device: torch.device) -> None:
    if x.dim() != len(lead) + 1 or tuple(x.shape[:-1]) != lead:
        want = "[" + ", ".join([*map(str, lead), last]) + "]"
        fail(f"{name} shape {tuple(x.shape)} must be {want}")
    if x.dtype not in dtypes:
        fail(f"{name} dtype {x.dtype} is not supported (allowed: {dtypes})")
    if x.device != device:
        fail(f"{name} is on {x.device} but the inputs are on {device}")


def check_sink(sink: torch.Tensor | None, h: int, device: torch.device) -> None:
    if sink is None:
        return
    if tuple(sink.shape) != (h,) or sink.dtype not in SINK_TENSOR_DTYPES:
        fail(f"sink must be a float [H] = ({h},) tensor of natural-log logits, found {sink.dtype} "
              f"{tuple(sink.shape)}")
    if sink.device != device:
        fail(f"sink is on {sink.device} but the inputs are on {device}")
