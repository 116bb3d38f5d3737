"""FlashInfer decode kernels behind the one adapter convention (``problem.py``).

FlashInfer is an optional extra and is imported inside each call, so this module imports anywhere;
``Adapter.requires`` lets the verifier say "skipped: flashinfer not installed" instead. Outputs are
returned exactly as FlashInfer returns them (LSE base 2 unless an MLA plan asks for base e).
FlashInfer's paged decode has no zero-length requests (``last_page_len`` is 1..page_size), so
these adapters declare ``allows_empty_rows=False``; the verifier's empty-row probe runs them on
one anyway and reports what the kernels did (an undocumented input: a report, not a promise).
A caller-owned ``problem.out`` is passed as the wrappers' ``out=`` (single decode has none), so
that probe reads the rows in the buffer it filled; the regular probe gives none
(``accepts_out`` stays False: the wrappers take contiguous buffers only).
"""

from __future__ import annotations

from typing import Any

import torch

from attn_contracts.backends.adapter import Adapter
from attn_contracts.backends.problem import DecodeProblem

__all__ = ["batch_decode", "batch_prefill", "mla_fa2", "mla_fa2_basee", "mla_fa3",
           "mla_fa3_basee", "single_decode"]

_WORKSPACE_BYTES = 128 * 1024 * 1024
_workspaces: dict[torch.device, torch.Tensor] = {}


def _workspace(device: torch.device) -> torch.Tensor:
    if device not in _workspaces:
        _workspaces[device] = torch.zeros(_WORKSPACE_BYTES, dtype=torch.uint8, device=device)
    return _workspaces[device]


def _out(p: DecodeProblem) -> dict[str, torch.Tensor]:
    """``out=`` for a wrapper's ``run`` where the problem brings a buffer."""
    return {} if p.out is None else {"out": p.out}


def _qo_indptr(p: DecodeProblem) -> torch.Tensor:
    indptr: torch.Tensor = torch.arange(0, p.batch + 1, dtype=torch.int32, device=p.q.device)
    scaled: torch.Tensor = indptr * p.q_len
    return scaled


def _run_single_decode(p: DecodeProblem) -> tuple[torch.Tensor, torch.Tensor]:
    import flashinfer

    outs, lses = [], []
    for b in range(p.batch):  # one call per request: the kernel takes one
        k, v = p.request_kv(b)
        o, lse = flashinfer.single_decode_with_kv_cache(
            p.q[b * p.q_len], k.contiguous(), v.contiguous(), kv_layout="NHD",
            sm_scale=p.sm_scale, return_lse=True)
        outs.append(o)
        lses.append(lse)
    return torch.stack(outs), torch.stack(lses)


def _run_batch_decode(p: DecodeProblem) -> tuple[torch.Tensor, torch.Tensor]:
    import flashinfer

    w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(_workspace(p.q.device), "NHD")
    w.plan(p.page_indptr, p.page_indices, p.last_page_len, p.num_heads, p.k_pages.shape[2],
           p.q.shape[-1], p.page_size, sm_scale=p.sm_scale, q_data_type=p.q.dtype,
           kv_data_type=p.k_pages.dtype)
    out, lse = w.run(p.q, (p.k_pages, p.v_pages), return_lse=True, **_out(p))
    return out, lse


def _run_batch_prefill(p: DecodeProblem) -> tuple[torch.Tensor, torch.Tensor]:
    import flashinfer

    # fa2 explicitly: "auto" picks the SM90 path, whose JIT needs CUTLASS's util headers that
    # a trimmed FlashInfer install (no CUTLASS headers) leaves out; the LSE contract is the same.
    w = flashinfer.BatchPrefillWithPagedKVCacheWrapper(_workspace(p.q.device), "NHD",
                                                       backend="fa2")
    w.plan(_qo_indptr(p), p.page_indptr, p.page_indices, p.last_page_len, p.num_heads,
           p.k_pages.shape[2], p.q.shape[-1], p.page_size, causal=False, sm_scale=p.sm_scale,
           q_data_type=p.q.dtype, kv_data_type=p.k_pages.dtype)
    out, lse = w.run(p.q, (p.k_pages, p.v_pages), return_lse=True, **_out(p))
    return out, lse


def _mla(backend: str, base_e: bool) -> Any:
    def run(p: DecodeProblem) -> tuple[torch.Tensor, torch.Tensor]:
        import flashinfer
        import flashinfer.mla as fmla

        d_ckv = p.d_v
        q_nope, q_pe = p.q[..., :d_ckv].contiguous(), p.q[..., d_ckv:].contiguous()
        ckv = p.k_pages[:, :, 0, :d_ckv].contiguous()  # [P, page, d_ckv]
        kpe = p.k_pages[:, :, 0, d_ckv:].contiguous()  # [P, page, d_kpe]
        w = flashinfer.mla.BatchMLAPagedAttentionWrapper(_workspace(p.q.device), backend=backend)
        common = dict(num_heads=p.num_heads, head_dim_ckv=d_ckv, head_dim_kpe=q_pe.shape[-1],
                      page_size=p.page_size, causal=False, sm_scale=p.sm_scale,
                      q_data_type=p.q.dtype, kv_data_type=p.k_pages.dtype)
        if hasattr(fmla, "MLAPlanMetadata"):  # 0.7+: the plan fixes the LSE mode
            meta = fmla.MLAPlanMetadata.csr(_qo_indptr(p), p.page_indptr, p.page_indices,
                                            p.seq_lens)
            w.plan(metadata=meta, lse_mode="basee" if base_e else "base2",
                   query_layout="split", kv_cache_layout="split", **common)
            out, lse = w.run(query=(q_nope, q_pe), kv_cache=(ckv, kpe), return_lse=True,
                             return_lse_base_on_e=base_e, **_out(p))
        else:  # older releases: flat CSR plan, LSE mode chosen at run time (base 2 only)
            w.plan(_qo_indptr(p), p.page_indptr, p.page_indices, p.seq_lens, **common)
            kwargs = {"return_lse_base_on_e": True} if base_e else {}
            out, lse = w.run(q_nope, q_pe, ckv, kpe, return_lse=True, **kwargs, **_out(p))
        return out, lse

    return run


_FI: dict[str, Any] = dict(requires=("flashinfer",), needs_cuda=True, allows_empty_rows=False)
single_decode = Adapter(run=_run_single_decode, **_FI)
batch_decode = Adapter(run=_run_batch_decode, **_FI)
batch_prefill = Adapter(run=_run_batch_prefill, **_FI)
mla_fa2 = Adapter(run=_mla("fa2", base_e=False), num_heads=16, page_size=64, **_FI)
mla_fa3 = Adapter(run=_mla("fa3", base_e=False), num_heads=16, page_size=64, **_FI)
mla_fa2_basee = Adapter(run=_mla("fa2", base_e=True), num_heads=16, page_size=64, **_FI)
mla_fa3_basee = Adapter(run=_mla("fa3", base_e=True), num_heads=16, page_size=64, **_FI)
