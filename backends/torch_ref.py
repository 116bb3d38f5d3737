"""The torch reference decode: base-e LSE in ``[T, H]`` float32; the embedded CPU default.

Runs on CPU and CUDA. Requests are padded to the longest and masked, so one batched einsum serves
the whole batch. An empty request yields ``out = 0`` and ``lse = −inf`` (record
``torch.sdpa_ref``).
"""

from __future__ import annotations

import math

import torch

from attn_contracts.backends.adapter import Adapter
from attn_contracts.backends.problem import DecodeProblem

__all__ = ["decode", "run", "sdpa_decode"]


def _padded_kv(p: DecodeProblem) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Keys ``[B, S, Hkv, D]``, values ``[B, S, Hkv, Dv]`` padded to the longest request, and the
    valid-key mask ``[B, S]``."""
    b = p.batch
    max_pages = int((p.page_indptr[1:] - p.page_indptr[:-1]).max()) if b else 0
    slots = torch.zeros(b, max(max_pages, 1), dtype=torch.long, device=p.q.device)
    counts = (p.page_indptr[1:] - p.page_indptr[:-1]).long()
    rows = torch.repeat_interleave(torch.arange(b, device=p.q.device), counts)
    cols = torch.arange(int(p.page_indptr[-1]), device=p.q.device) - p.page_indptr[:-1].long()[rows]
    slots[rows, cols] = p.page_indices.long()
    k = p.k_pages[slots].flatten(1, 2)  # [B, S, Hkv, D], S = max_pages · page
    v = k[..., : p.d_v] if p.v_pages is None else p.v_pages[slots].flatten(1, 2)
    mask = torch.arange(k.shape[1], device=p.q.device)[None, :] < p.seq_lens[:, None].long()
    return k, v, mask


def sdpa_decode(p: DecodeProblem) -> tuple[torch.Tensor, torch.Tensor]:
    """``out [T, H, Dv]`` in the query dtype, ``lse [T, H]`` float32 natural log. Named for the
    record's ``calls`` (a producer is matched by its last name, and ``run`` is every kernel
    wrapper's method); ``run`` is the same function, the adapters' name."""
    k, v, mask = _padded_kv(p)
    b, h = p.batch, p.num_heads
    group = h // k.shape[2]  # GQA: query heads per KV head
    q = p.q.float().view(b, p.q_len, k.shape[2], group, -1)  # [B, q, Hkv, G, D]
    logits = torch.einsum("bqkgd,bskd->bqkgs", q, k.float()) * p.sm_scale
    logits = logits.masked_fill(~mask[:, None, None, None, :], -math.inf)
    lse = torch.logsumexp(logits, dim=-1)  # [B, q, Hkv, G]; −inf for an empty request
    probs = torch.exp(logits - torch.where(lse.isinf(), 0.0, lse)[..., None])
    out = torch.einsum("bqkgs,bskd->bqkgd", probs, v.float())
    out = out.reshape(b * p.q_len, h, -1)
    lse = lse.reshape(b * p.q_len, h)
    if p.out is not None:
        p.out.copy_(out)
        return p.out, lse
    return out.to(p.q.dtype), lse


run = sdpa_decode
decode = Adapter(run=run, accepts_out=True)
