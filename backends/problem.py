"""The one calling convention of the runnable adapters: a decode call over a paged KV cache.

An adapter takes a :class:`DecodeProblem` and returns ``(out, lse)`` exactly as its kernel returns
them: no transposes, no base changes, no dtype casts. The record says how to read them.

Shapes (``T = batch · q_len`` query tokens, request-major)::

    q            [T, H, D]             MLA: D = d_ckv + d_kpe, q_nope = q[..., :d_ckv]
    k_pages      [P, page, Hkv, D]     MLA: Hkv = 1, the packed [ckv | kpe] latent cache
    v_pages      [P, page, Hkv, Dv]    MLA: None (values are the ckv part of k_pages)
    page_indptr  [B + 1] int32, page_indices [nnz] int32, seq_lens [B] int32

Every query of a request attends to all of that request's keys (no causal mask); a request with
``seq_len = 0`` is an empty row.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

__all__ = ["TOLERANCE", "DecodeProblem", "Tolerance", "exact_attention", "make_problem",
           "tolerance"]


@dataclass(frozen=True)
class Tolerance:
    """How far a run may stray from the fp64 reference (:func:`exact_attention`, and
    :func:`~attn_contracts.combine.merge_reference` for combines) before the verifier calls it
    wrong. A wrong base or layout moves outputs by O(0.1) and LSEs by O(1), far outside these.

    ``out``: max |out − reference|, for an output stored in the dtype (rounding dominates).
    ``lse``: max |lse − reference| for an LSE stored in the dtype, relative to ``1 + |lse|``
    for a merged LSE (FlashInfer's kernels use fast exp2/log2: 1e-2 seen on an H200)."""

    out: float
    lse: float


#: the one tolerance table of the verifier, producers and consumers alike, by dtype name
TOLERANCE: dict[str, Tolerance] = {
    "float64": Tolerance(out=1e-6, lse=2e-2),
    "float32": Tolerance(out=1e-3, lse=2e-2),
    "float16": Tolerance(out=8e-3, lse=2e-2),
    "bfloat16": Tolerance(out=4e-2, lse=0.15),
}


def tolerance(dtype: torch.dtype | str) -> Tolerance:
    """The row of :data:`TOLERANCE` for ``dtype`` (a dtype or its name); the loosest for others."""
    name = str(dtype).removeprefix("torch.")
    return TOLERANCE.get(name, TOLERANCE["bfloat16"])


@dataclass(frozen=True)
class DecodeProblem:
    q: torch.Tensor
    k_pages: torch.Tensor
    v_pages: torch.Tensor | None
    page_indptr: torch.Tensor
    page_indices: torch.Tensor
    seq_lens: torch.Tensor
    q_len: int
    sm_scale: float
    attention: str  # "mha" | "mla"
    d_v: int
    #: caller-owned output buffer (may be non-contiguous) for adapters that accept one
    out: torch.Tensor | None = None

    @property
    def batch(self) -> int:
        return int(self.seq_lens.numel())

    @property
    def num_heads(self) -> int:
        return int(self.q.shape[1])

    @property
    def page_size(self) -> int:
        return int(self.k_pages.shape[1])

    @property
    def last_page_len(self) -> torch.Tensor:
        """FlashInfer's per-request fill of the last page (1..page_size; 0 for an empty request)."""
        lens = self.seq_lens
        return torch.where(lens > 0, (lens - 1) % self.page_size + 1, 0).to(torch.int32)

    def request_kv(self, b: int) -> tuple[torch.Tensor, torch.Tensor]:
        """Dense keys ``[S, Hkv, D]`` and values ``[S, Hkv, Dv]`` of request ``b``."""
        pages = self.page_indices[int(self.page_indptr[b]) : int(self.page_indptr[b + 1])].long()
        n = int(self.seq_lens[b])
        k = self.k_pages[pages].flatten(0, 1)[:n]
        v = k[..., : self.d_v] if self.v_pages is None else self.v_pages[pages].flatten(0, 1)[:n]
        return k, v


def make_problem(
    *,
    seq_lens: Sequence[int],
    q_len: int,
    num_heads: int,
    num_kv_heads: int,
    head_dim: int,
    dtype: torch.dtype,
    device: str | torch.device = "cpu",
    attention: str = "mha",
    d_v: int | None = None,
    page_size: int = 16,
    q_scale: float = 1.0,
    seed: int = 0,
    shuffle_pages: bool = True,
) -> DecodeProblem:
    """Random queries and a random paged KV cache; pages are handed out in shuffled order so a
    kernel that ignores the page table fails."""
    g = torch.Generator().manual_seed(seed)
    pages_per = [math.ceil(n / page_size) for n in seq_lens]
    total = max(1, sum(pages_per))
    order = torch.randperm(total, generator=g) if shuffle_pages else torch.arange(total)
    indptr = torch.tensor([0, *itertools.accumulate(pages_per)], dtype=torch.int32)
    hkv = 1 if attention == "mla" else num_kv_heads
    d_v = d_v if d_v is not None else head_dim
    k = torch.randn(total, page_size, hkv, head_dim, generator=g)
    v = None if attention == "mla" else torch.randn(total, page_size, hkv, d_v, generator=g)
    q = torch.randn(len(seq_lens) * q_len, num_heads, head_dim, generator=g) * q_scale
    return DecodeProblem(
        q=q.to(device=device, dtype=dtype), k_pages=k.to(device=device, dtype=dtype),
        v_pages=None if v is None else v.to(device=device, dtype=dtype),
        page_indptr=indptr.to(device),
        page_indices=order[: int(indptr[-1])].to(torch.int32).to(device),
        seq_lens=torch.tensor(list(seq_lens), dtype=torch.int32, device=device), q_len=q_len,
        sm_scale=1.0 / math.sqrt(head_dim), attention=attention, d_v=d_v,
    )


def exact_attention(p: DecodeProblem) -> tuple[torch.Tensor, torch.Tensor]:
    """fp64 ``out [T, H, Dv]`` and natural-log ``lse [T, H]`` (−inf for empty rows)."""
    t, h = p.q.shape[:2]
    out = torch.zeros(t, h, p.d_v, dtype=torch.float64)
    lse = torch.full((t, h), -math.inf, dtype=torch.float64)
    for b in range(p.batch):
        k, v = p.request_kv(b)
        if k.shape[0] == 0:
            continue
        rows = slice(b * p.q_len, (b + 1) * p.q_len)
        q = p.q[rows].double().cpu()  # [q, H, D]
        kk = k.double().cpu().repeat_interleave(h // k.shape[1], dim=1)  # [S, H, D]
        vv = v.double().cpu().repeat_interleave(h // v.shape[1], dim=1)
        s = torch.einsum("qhd,shd->qhs", q, kk) * p.sm_scale
        lse[rows] = torch.logsumexp(s, dim=-1)
        out[rows] = torch.einsum("qhs,shd->qhd", torch.softmax(s, dim=-1), vv)
    return out, lse
