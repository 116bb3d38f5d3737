"""The combine, specified in plain torch (fp64-capable). Every kernel is tested against this.

Given ``N`` partial attention states ``(o_r, lse_r)`` of the same query rows over disjoint key sets,
with ``lse_r = log_b Σ_{k in shard r} b^{s_k}`` in base ``b``::

    LSE = log_b Σ_r b^{lse_r}
    w_r = b^{lse_r − LSE}
    o   = Σ_r w_r · o_r

Policy for empty shards (a row with no keys on a rank), matched by every kernel:
  * a NaN or +inf LSE is read as −inf (FlashAttention 2 writes +inf for a zero row sum);
  * the max over shards is clamped to 0 when every shard is −inf, so no ``−inf − (−inf)``;
  * a zero-weight partial contributes 0 by selection (``where``), never ``0 · NaN``;
  * a row where every shard is empty yields ``o = 0`` and ``LSE = −inf``;
  * accumulation in fp32 at least (fp64 here by default).

Row mask (``row_mask [N, T]``, nonzero = the shard holds keys for the row): a masked-out shard is
empty whatever its kernel wrote there (garbage, NaN, ±inf in O or LSE): its LSE is read as −inf.
Engines that hold per-request local lengths instead pass ``lens [N, B]`` with a uniform
``q_len = T / B`` (row ``t`` belongs to request ``t // q_len``); :func:`rows_from_lens` turns those into
the ``[N, T]`` mask. Ragged ``query_start_loc`` is not supported by the kernels.

Sink (``sink [H]``, one logit per head in **natural-log units**, as models store them): added once,
after the merge, as if it were one more shard whose output is 0::

    s' = s · log_b(e)                       (the sink in the LSE's base)
    o  ← o · b^LSE / (b^LSE + b^s')
    LSE ← log_b(b^LSE + b^s')

so a row with no keys on any shard gives ``o = 0`` and ``LSE = s'``. The sink joins the max of
the shards, so a large sink never overflows; a NaN or +inf sink follows the shards' policy.
"""

from __future__ import annotations

import math

import torch

from attn_contracts.records import LN2

__all__ = [
    "log_of_base",
    "merge_reference",
    "pack_a2a_reference",
    "rescale_reference",
    "rows_from_lens",
    "sanitize_lse",
    "sink_in_base",
]


def log_of_base(base: str) -> float:
    """ln b for the two bases a kernel may use."""
    if base == "e":
        return 1.0
    if base == "2":
        return LN2
    raise ValueError(f"LSE base {base!r} is not supported (allowed: 'e', '2')")


def sanitize_lse(lse: torch.Tensor) -> torch.Tensor:
    """NaN and +inf (empty-row markers) become −inf."""
    return torch.where(torch.isnan(lse) | (lse == math.inf), -math.inf, lse)


def rows_from_lens(lens: torch.Tensor, q_len: int) -> torch.Tensor:
    """``lens [N, B]`` (keys of request ``b`` on shard ``n``) → the bool row mask ``[N, B·q_len]``
    (rows of one request are consecutive: row ``t`` is request ``t // q_len``)."""
    if lens.dim() != 2 or q_len < 1:
        raise ValueError(f"lens must be [N, B] and q_len >= 1, found shape {tuple(lens.shape)}, "
                         f"q_len={q_len}")
    return (lens > 0).repeat_interleave(q_len, dim=1)


def _masked(lse: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """``lse [N, T, H]`` with the rows a ``mask [N, T]`` marks empty set to −inf."""
    if mask is None:
        return lse
    return torch.where(mask.to(torch.bool).unsqueeze(-1), lse, -math.inf)


def sink_in_base(sink: torch.Tensor, base: str) -> torch.Tensor:
    """A natural-log sink logit in the LSE's base: ``s' = s · log_b(e) = s / ln b``."""
    return sink / log_of_base(base)


def _with_sink(lse: torch.Tensor, sink: torch.Tensor | None, base: str) -> torch.Tensor:
    """``lse [N, T, H]`` with the sink appended as shard ``N`` (``[N+1, T, H]``)."""
    if sink is None:
        return lse
    s = sink_in_base(sink.to(lse.dtype), base).expand(1, *lse.shape[1:])
    return torch.cat([lse, s])


def _weights(lse: torch.Tensor, base: str) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-shard weights ``[N, T, H]`` and the merged LSE ``[T, H]``, both in ``lse``'s dtype."""
    ln_b = log_of_base(base)
    x = sanitize_lse(lse)
    m = x.amax(dim=0)
    m = torch.where(m == -math.inf, 0.0, m)  # every shard empty: keep the exponent finite
    e = torch.exp((x - m) * ln_b)  # [N, T, H]; exactly 0 for an empty shard
    s = e.sum(dim=0)  # [T, H]
    w = torch.where(s > 0, e / torch.where(s > 0, s, 1.0), 0.0)
    merged = torch.where(s > 0, m + torch.log(torch.where(s > 0, s, 1.0)) / ln_b, -math.inf)
    return w, merged


def _convert_base(lse: torch.Tensor, base: str, out_base: str | None) -> torch.Tensor:
    if out_base is None or out_base == base:
        return lse
    return lse * (log_of_base(base) / log_of_base(out_base))


def merge_reference(
    partial_out: torch.Tensor,
    partial_lse: torch.Tensor,
    *,
    base: str,
    lse_out_base: str | None = None,
    dtype: torch.dtype = torch.float64,
    row_mask: torch.Tensor | None = None,
    sink: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Merge ``partial_out [N, T, H, D]`` by ``partial_lse [N, T, H]`` (base ``base``).

    ``row_mask [N, T]``: rows a shard holds no keys for (zero entries) count as empty. ``sink [H]``:
    per-head sink logits in natural-log units, added once (module docstring).
    Returns ``(out [T, H, D], lse [T, H])`` in ``dtype``; the LSE in ``lse_out_base`` (default:
    the input base).
    """
    o = partial_out.to(dtype)
    lse = _with_sink(_masked(partial_lse.to(dtype), row_mask), sink, base)
    w, merged = _weights(lse, base)
    w = w[: o.shape[0]].unsqueeze(-1)  # [N, T, H, 1]; the sink's weight multiplies o = 0
    out = torch.where(w > 0, w * o, 0.0).sum(dim=0)  # [T, H, D]
    return out, _convert_base(merged, base, lse_out_base)


def rescale_reference(
    partial_out: torch.Tensor,
    all_lse: torch.Tensor,
    rank: int,
    *,
    base: str,
    lse_out_base: str | None = None,
    dtype: torch.dtype = torch.float64,
    row_mask: torch.Tensor | None = None,
    sink: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Scale one rank's ``partial_out [T, H, D]`` by ``w_rank`` from the gathered
    ``all_lse [N, T, H]``, so that summing the results over ranks gives the merge.

    ``row_mask [N, T]`` and ``sink [H]`` as in :func:`merge_reference`: the sink enters every rank's
    denominator (and the merged LSE), so the sum over ranks is the merge with the sink.
    Returns ``(scaled [T, H, D], merged lse [T, H])`` in ``dtype``.
    """
    if not 0 <= rank < all_lse.shape[0]:
        raise ValueError(f"rank {rank} is outside the {all_lse.shape[0]} gathered LSEs")
    w, merged = _weights(_with_sink(_masked(all_lse.to(dtype), row_mask), sink, base), base)
    w_r = w[rank].unsqueeze(-1)  # [T, H, 1]
    out = torch.where(w_r > 0, w_r * partial_out.to(dtype), 0.0)
    return out, _convert_base(merged, base, lse_out_base)


def pack_a2a_reference(partial_out: torch.Tensor, lse: torch.Tensor, world: int,
                       row_mask: torch.Tensor | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """The all-to-all message of one rank: ``partial_out [T, H, D]`` and ``lse [T, H]`` split by
    heads into ``world`` destinations → ``(o [N, T, H/N, D]`` in ``partial_out``'s dtype,
    ``lse [N, T, H/N]`` float32). Rows a ``row_mask [T]`` marks empty send ``o = 0`` and
    ``lse = −inf``, so the receiver's merge gives them weight 0 whatever the kernel wrote."""
    t, h, d = partial_out.shape
    if h % world:
        raise ValueError(f"num_heads={h} is not divisible by world={world}")
    o = partial_out.view(t, world, h // world, d).transpose(0, 1)  # [N, T, H/N, D]
    x = lse.to(torch.float32).view(t, world, h // world).transpose(0, 1)  # [N, T, H/N]
    if row_mask is not None:
        keep = row_mask.to(torch.bool).view(1, t, 1)
        o = torch.where(keep.unsqueeze(-1), o, 0.0)
        x = torch.where(keep, x, -math.inf)
    return o.contiguous(), x.contiguous()
