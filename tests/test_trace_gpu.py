"""The trace over FlashInfer's real kernels on a GPU (skipped without CUDA or FlashInfer).

FlashInfer's paged decode (``BatchDecodeWithPagedKVCacheWrapper.run(return_lse=True)``) and
single decode return base-2 ``[T, H]`` / ``[H]`` LSEs (``flashinfer.batch_decode``,
``flashinfer.single_decode``, measured on the H200); its merges (``merge_state``,
``merge_states``) read base 2; the project's combine is told its base. Each test splits one
request's keys into two decodes and merges them, as a split-KV or DCP engine does. The H200 run:
``source .whl/device-prelude.sh; PYTHONSAFEPATH=1 python3 -m pytest -m gpu tests/test_trace_gpu.py``
(each FlashInfer kernel JIT-compiles in 15-25 s the first time)."""

from __future__ import annotations

import importlib.util
import math
from typing import Any

import pytest
import torch

import attn_contracts
from attn_contracts.backends.problem import DecodeProblem
from attn_contracts.backends.problem import make_problem
from attn_contracts.combine import merge
from attn_contracts.findings import Code
from attn_contracts.findings import Location
from fixtures.sites import caller_line

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(importlib.util.find_spec("flashinfer") is None,
                                 reason="flashinfer not installed")]
LN2 = math.log(2.0)
HERE = "tests/test_trace_gpu.py"


def _line() -> Location:
    """The caller's line, as the trace names a call site."""
    return caller_line(HERE)


@pytest.fixture(scope="module")
def fi() -> Any:
    import flashinfer  # imported before any trace starts: the trace wraps what is loaded

    return flashinfer


def _halves(batch: int, seed: int = 0) -> tuple[DecodeProblem, DecodeProblem]:
    """Two decodes of the same queries over two halves of each request's keys."""
    kw: dict[str, Any] = dict(q_len=1, num_heads=8, num_kv_heads=2, head_dim=128,
                              dtype=torch.float16, device="cuda")
    a = make_problem(seq_lens=[17 + 5 * i for i in range(batch)], seed=seed, **kw)
    b = make_problem(seq_lens=[9 + 3 * i for i in range(batch)], seed=seed + 1, **kw)
    return a, DecodeProblem(**{**vars(b), "q": a.q})


_RUN: list[Location] = []  # where _decode calls the kernel: the producer's call site the trace names


def _decode(fi: Any, p: DecodeProblem) -> tuple[torch.Tensor, torch.Tensor]:
    ws = torch.zeros(128 * 1024 * 1024, dtype=torch.uint8, device="cuda")
    w = fi.BatchDecodeWithPagedKVCacheWrapper(ws, "NHD")
    w.plan(p.page_indptr, p.page_indices, p.last_page_len, p.num_heads, p.k_pages.shape[2],
           p.q.shape[-1], p.page_size, sm_scale=p.sm_scale, q_data_type=p.q.dtype,
           kv_data_type=p.k_pages.dtype)
    out, lse = w.run(p.q, (p.k_pages, p.v_pages), return_lse=True); _RUN.append(_line())  # noqa: E702
    return out, lse


def test_flashinfer_decode_into_merges_of_each_base(fi: Any) -> None:
    a, b = _halves(batch=3)
    with attn_contracts.trace(on_error="report") as t:
        oa, la = _decode(fi, a)
        produced = _RUN[-1]  # the kernel's call (the innermost frame outside the library)
        ob, lb = _decode(fi, b)
        fi.merge_state(oa, la, ob, lb)  # FlashInfer's own merge: base 2, right
        o2 = torch.stack([oa, ob])
        merge(o2, torch.stack([la, lb]), base="2")  # told the right base
        merge(o2, torch.stack([la, lb]) * LN2, base="e")  # converted first: right
        merge(o2, torch.stack([la, lb]), base="e"); consumed = _line()  # noqa: E702  wrong
        torch.cuda.synchronize()
    (m,) = t.report.mismatches
    assert m.code is Code.AC016 and m.site == consumed
    assert m.producers == ("flashinfer.batch_decode",) and produced in m.producer_sites
    assert t.report.producer_calls and t.report.conversions == 1
    assert t.report.consumer_calls["flashinfer.merge_state"] == 1


def test_flashinfer_merge_states_reads_the_states_axis_second(fi: Any) -> None:
    a, b = _halves(batch=2)  # T == N == 2: a states-first stack has the right shape
    with attn_contracts.trace(on_error="report") as t:
        oa, la = _decode(fi, a)
        ob, lb = _decode(fi, b)
        fi.merge_states(torch.stack([oa, ob], dim=1), torch.stack([la, lb], dim=1))  # right
        fi.merge_states(torch.stack([oa, ob]), torch.stack([la, lb]))  # [N, T, H]: wrong
        torch.cuda.synchronize()
    assert [m.code for m in t.report.mismatches] == [Code.AC017]


def test_single_decode_lse_in_a_base_e_merge(fi: Any) -> None:
    a, b = _halves(batch=1)
    k_a, v_a = a.request_kv(0)
    k_b, v_b = b.request_kv(0)
    with attn_contracts.trace(on_error="report") as t:
        oa, la = fi.single_decode_with_kv_cache(a.q[0], k_a.contiguous(), v_a.contiguous(),
                                                return_lse=True)
        ob, lb = fi.single_decode_with_kv_cache(a.q[0], k_b.contiguous(), v_b.contiguous(),
                                                return_lse=True)
        # [H] each: unsqueezed to one token, merged by the project's combine told base e
        merge(torch.stack([oa, ob])[:, None], torch.stack([la, lb])[:, None], base="e")
        torch.cuda.synchronize()
    assert [(m.code, m.producers) for m in t.report.mismatches] == [
        (Code.AC016, ("flashinfer.single_decode",))]


def test_nothing_stays_wrapped_after_a_gpu_trace(fi: Any) -> None:
    run = fi.BatchDecodeWithPagedKVCacheWrapper.run
    merge_state = fi.merge_state
    with attn_contracts.trace(on_error="report"):
        assert fi.BatchDecodeWithPagedKVCacheWrapper.run is not run
    assert fi.BatchDecodeWithPagedKVCacheWrapper.run is run and fi.merge_state is merge_state
    assert not torch.overrides._get_current_function_mode_stack()
