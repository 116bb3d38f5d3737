"""Split a decode problem's KV cache across DCP ranks, as serving engines do.

``interleave=None`` gives each rank one contiguous run of every sequence (rank r holds keys
``[r·⌈S/N⌉, (r+1)·⌈S/N⌉)``); ``interleave=K`` deals blocks of K consecutive keys round-robin
(rank r holds the keys ``s`` with ``(s // K) % N == r``), the layout engines use so that decode
appends land on every rank in turn. A sequence shorter than N leaves some ranks empty for it.
"""

from __future__ import annotations

import dataclasses
import math

import torch

from attn_contracts.backends.problem import DecodeProblem

__all__ = ["owner_of_keys", "shard_problem"]


def owner_of_keys(seq_len: int, world_size: int, interleave: int | None) -> torch.Tensor:
    """The rank holding each key position ``[S]``."""
    pos = torch.arange(seq_len)
    if interleave is None:
        per_rank = max(1, math.ceil(seq_len / world_size))
        return pos // per_rank
    if interleave < 1:
        raise ValueError(f"interleave must be None (contiguous) or >= 1, found {interleave}")
    return (pos // interleave) % world_size


def shard_problem(p: DecodeProblem, rank: int, world_size: int,
                  interleave: int | None = 1) -> DecodeProblem:
    """The part of ``p`` rank ``rank`` holds: the same queries, its keys repacked into pages."""
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is outside world size {world_size}")
    ks, vs, lens = [], [], []
    for b in range(p.batch):
        k, v = p.request_kv(b)
        mine = owner_of_keys(k.shape[0], world_size, interleave).to(k.device) == rank
        ks.append(k[mine])
        vs.append(v[mine])
        lens.append(int(mine.sum()))
    page = p.page_size
    pages_per = [math.ceil(n / page) for n in lens]
    total = max(1, sum(pages_per))
    k_pages = p.k_pages.new_zeros((total, page, *p.k_pages.shape[2:]))
    v_pages = None if p.v_pages is None else p.v_pages.new_zeros((total, page,
                                                                  *p.v_pages.shape[2:]))
    first = 0
    for b, n in enumerate(lens):
        flat_k = k_pages[first : first + pages_per[b]].flatten(0, 1)
        flat_k[:n] = ks[b]
        if v_pages is not None:
            v_pages[first : first + pages_per[b]].flatten(0, 1)[:n] = vs[b]
        first += pages_per[b]
    indptr = torch.tensor([0, *torch.tensor(pages_per).cumsum(0).tolist()], dtype=torch.int32)
    return dataclasses.replace(
        p, k_pages=k_pages, v_pages=v_pages, page_indptr=indptr.to(p.q.device),
        page_indices=torch.arange(int(indptr[-1]), dtype=torch.int32, device=p.q.device),
        seq_lens=torch.tensor(lens, dtype=torch.int32, device=p.q.device), out=None)
