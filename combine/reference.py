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
"""

from __future__ import annotations

import math

import torch

__all__ = ["log_of_base", "merge_reference", "rescale_reference", "sanitize_lse"]


def log_of_base(base: str) -> float:
    """ln b for the two bases a kernel may use."""
    if base == "e":
        return 1.0
    if base == "2":
        return math.log(2.0)
    raise ValueError(f"LSE base {base!r} is not supported (allowed: 'e', '2')")


def sanitize_lse(lse: torch.Tensor) -> torch.Tensor:
    """NaN and +inf (empty-row markers) become −inf."""
    return torch.where(torch.isnan(lse) | (lse == math.inf), -math.inf, lse)


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
) -> tuple[torch.Tensor, torch.Tensor]:
    """Merge ``partial_out [N, T, H, D]`` by ``partial_lse [N, T, H]`` (base ``base``).

    Returns ``(out [T, H, D], lse [T, H])`` in ``dtype``; the LSE in ``lse_out_base`` (default:
    the input base).
    """
    o = partial_out.to(dtype)
    w, merged = _weights(partial_lse.to(dtype), base)
    w = w.unsqueeze(-1)  # [N, T, H, 1]
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
) -> tuple[torch.Tensor, torch.Tensor]:
    """Scale one rank's ``partial_out [T, H, D]`` by ``w_rank`` from the gathered
    ``all_lse [N, T, H]``, so that summing the results over ranks gives the merge.

    Returns ``(scaled [T, H, D], merged lse [T, H])`` in ``dtype``.
    """
    if not 0 <= rank < all_lse.shape[0]:
        raise ValueError(f"rank {rank} is outside the {all_lse.shape[0]} gathered LSEs")
    w, merged = _weights(all_lse.to(dtype), base)
    w_r = w[rank].unsqueeze(-1)  # [T, H, 1]
    out = torch.where(w_r > 0, w_r * partial_out.to(dtype), 0.0)
    return out, _convert_base(merged, base, lse_out_base)
