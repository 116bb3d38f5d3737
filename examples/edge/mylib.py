"""A toy attention library with the bug this project exists for: its decode kernel returns a
base-2 LSE (``log2 Σ 2^(s·log2 e)``, as FlashInfer's do) and its merge assumes natural log."""

from __future__ import annotations

import math

import torch


def decode(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, return_lse: bool = False
           ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """``q [T, H, D]``, ``k``/``v [S, H, D]`` → ``out [T, H, D]`` and ``lse [T, H]`` in base 2."""
    s = torch.einsum("thd,shd->ths", q, k) / math.sqrt(q.shape[-1])
    out = torch.einsum("ths,shd->thd", torch.softmax(s, dim=-1), v)
    return (out, torch.logsumexp(s, dim=-1) / math.log(2.0)) if return_lse else out


def merge(o_a: torch.Tensor, lse_a: torch.Tensor, o_b: torch.Tensor, lse_b: torch.Tensor
          ) -> tuple[torch.Tensor, torch.Tensor]:
    """Merge two partial states ``[T, H, D]`` by their LSE ``[T, H]``, read as natural log."""
    lse = torch.logaddexp(lse_a, lse_b)
    w_a, w_b = torch.exp(lse_a - lse)[..., None], torch.exp(lse_b - lse)[..., None]
    return w_a * o_a + w_b * o_b, lse
