"""DCP collectives over gloo with 2, 3 and 4 ranks against the single-process fp64 reference.

Each world size is spawned once per module (a fixture), running every case in one go; the
parametrized tests then check the collected results. Rank consensus: tests/test_consensus.py.
"""

from __future__ import annotations

import math

import pytest
import torch

from attn_contracts.backends.problem import DecodeProblem
from attn_contracts.backends.problem import exact_attention
from attn_contracts.testing.ranks import run_ranks
from fixtures import dcp_workers as w

pytestmark = pytest.mark.dist
WORLD_SIZES = (2, 3, 4)
CASES = w.cases()
MASKED = w.masked_cases()


@pytest.fixture(scope="module")
def full() -> tuple[torch.Tensor, torch.Tensor]:
    p: DecodeProblem = w.problem()
    return exact_attention(p)  # fp64 out [T, H, D], natural-log lse [T, H]


@pytest.fixture(scope="module")
def dcp_results() -> dict[int, list[list[dict[str, torch.Tensor]]]]:
    return {ws: [r.value for r in run_ranks(w.combine_all_cases, ws, timeout_s=600)]
            for ws in WORLD_SIZES}


@pytest.mark.parametrize("ws", WORLD_SIZES)
@pytest.mark.parametrize("i", range(len(CASES)),
                         ids=[f"{c['mode']}-b{c['base']}-{c['layout']}-i{c['interleave']}-"
                              f"{c['empty_row']}" for c in CASES])
def test_dcp_matches_full_attention(ws: int, i: int, dcp_results, full) -> None:  # type: ignore[no-untyped-def]
    case = CASES[i]
    ref_o, ref_lse_e = full
    ref_lse = ref_lse_e / math.log(2.0) if case["base"] == "2" else ref_lse_e
    hc = w.HEADS // ws
    for rank, per_rank in enumerate(dcp_results[ws]):
        got = per_rank[i]
        heads = slice(None) if case["mode"] == "ar" else slice(rank * hc, (rank + 1) * hc)
        torch.testing.assert_close(got["out"].double(), ref_o[:, heads], atol=2e-5, rtol=2e-5)
        torch.testing.assert_close(got["lse"].double(), ref_lse[:, heads], atol=2e-5, rtol=2e-5)
        assert not got["out"].isnan().any()
        assert (got["out"][2] == 0).all() and (got["lse"][2] == -math.inf).all()  # empty request


@pytest.mark.parametrize("ws", WORLD_SIZES)
def test_ag_rs_and_a2a_agree(ws: int, dcp_results) -> None:  # type: ignore[no-untyped-def]
    by = {(c["mode"], c["base"], c["layout"], c["interleave"]): k for k, c in enumerate(CASES)}
    for (mode, base, layout, inter), k in by.items():
        if mode != "ag_rs":
            continue
        other = by[("a2a", base, layout, inter)]
        for per_rank in dcp_results[ws]:
            torch.testing.assert_close(per_rank[k]["out"], per_rank[other]["out"], atol=1e-5,
                                       rtol=1e-5)


def _with_sink(out: torch.Tensor, lse_e: torch.Tensor, sink: torch.Tensor
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """Full attention with the sink as one more logit whose value is 0 (natural log, fp64)."""
    s = sink.double()[None, :]
    total = torch.logaddexp(lse_e, s)  # [T, H]; an empty request: the sink alone
    return out * torch.exp(lse_e - total)[..., None], total


@pytest.mark.parametrize("ws", WORLD_SIZES)
@pytest.mark.parametrize("i", range(len(MASKED)),
                         ids=[f"{c['mode']}-b{c['base']}-{c['layout']}" for c in MASKED])
def test_masked_shards_with_a_sink_on_two_slots(ws: int, i: int, dcp_results, full) -> None:  # type: ignore[no-untyped-def]
    """Garbage in every empty row (NaN partials, LSE 1e4), masked by the local lengths; a sink
    added once; the workspace's two slots used alternately: equal to full attention with the
    sink, in both bases."""
    case = MASKED[i]
    ref_o, ref_lse = _with_sink(*full, w.sink_logits())
    ref_lse = ref_lse / math.log(2.0) if case["base"] == "2" else ref_lse
    hc = w.HEADS // ws
    for rank, per_rank in enumerate(dcp_results[ws]):
        got = per_rank[len(CASES) + i]
        heads = slice(None) if case["mode"] == "ar" else slice(rank * hc, (rank + 1) * hc)
        torch.testing.assert_close(got["out"].double(), ref_o[:, heads], atol=2e-5, rtol=2e-5)
        torch.testing.assert_close(got["lse"].double(), ref_lse[:, heads], atol=2e-5, rtol=2e-5)
        assert (got["out"][2] == 0).all()  # the empty request: the sink takes all the weight
