"""Rank consensus at startup: every rank reaches the same verdict, within the deadline + 2 s.

Most tests run over the store engines use: a ``TCPStore`` hosted by rank 0 (``rendezvous="tcp"``),
so a dead or departed rank 0 takes the store with it. One spawn per world size runs several rounds
in sequence where the store stays up; the scenarios that kill rank 0 have a spawn each.
"""

from __future__ import annotations

from typing import Any

import pytest
import torch

from attn_contracts.consensus import fingerprint
from attn_contracts.testing.ranks import RankFailure, RankResult, run_ranks
from fixtures import dcp_workers as w

pytestmark = pytest.mark.dist
WORLD_SIZES = (2, 3, 4)
DEADLINE = 2.0
SLACK = 2.0  # what a rank may take beyond its deadline
AGREE, DISAGREE, LATE, HUNG, DEAD = range(5)


def _verdicts(results: list[RankResult]) -> dict[int, dict[str, Any]]:
    """Rank -> verdict of the ranks that returned one (every rank must have, or died by design)."""
    return {r.rank: r.value for r in results if r.ok}


def _within_bound(verdicts: dict[int, dict[str, Any]]) -> None:
    for rank, v in verdicts.items():
        assert v["seconds"] <= DEADLINE + SLACK, (rank, v["seconds"])


@pytest.fixture(scope="module", params=WORLD_SIZES, ids=lambda ws: f"ws{ws}")
def rounds(request: pytest.FixtureRequest) -> tuple[int, list[RankResult]]:
    ws = request.param
    return ws, run_ranks(w.consensus_rounds, ws, DEADLINE, timeout_s=120, rendezvous="tcp",
                         require_all=False)


def _round(rounds: tuple[int, list[RankResult]], k: int) -> tuple[int, dict[int, Any]]:
    ws, results = rounds
    assert all(r.ok for r in results), [r.error for r in results]
    return ws, {r.rank: r.value[k] for r in results if len(r.value) > k}


def test_ranks_that_agree_pass_over_a_tcp_store(rounds) -> None:  # type: ignore[no-untyped-def]
    ws, verdicts = _round(rounds, AGREE)
    assert len(verdicts) == ws  # rank 0 passing a torch.bfloat16, the others "bfloat16"
    assert all(v["codes"] == [] for v in verdicts.values()), verdicts
    _within_bound(verdicts)


def test_disagreement_names_the_differing_fields(rounds) -> None:  # type: ignore[no-untyped-def]
    ws, verdicts = _round(rounds, DISAGREE)
    assert len(verdicts) == ws
    assert {tuple(v["codes"]) for v in verdicts.values()} == {("AC007",)}
    texts = {v["text"] for v in verdicts.values()}
    assert len(texts) == 1
    text = texts.pop()
    on_time = ",".join(map(str, range(ws - 1)))
    most = "ranks" if ws > 2 else "rank"
    have = "have" if ws > 2 else "has"
    assert (f"record test.dcp.shared: field lse.base: {most} {on_time} {have} 'e'; "
            f"rank {ws - 1} has '2'") in text
    assert f"setting num_heads: {most} {on_time} {have} {w.HEADS}; rank {ws - 1} has 13" in text
    assert "out_dtype" not in text  # torch.bfloat16 and "bfloat16" are the same setting
    _within_bound(verdicts)


def test_a_late_but_alive_rank_fails_like_the_others(rounds) -> None:  # type: ignore[no-untyped-def]
    ws, verdicts = _round(rounds, LATE)
    assert len(verdicts) == ws
    for rank, v in verdicts.items():
        assert v["codes"] == ["AC007"], (rank, v)
    texts = {v["text"] for v in verdicts.values()}
    assert len(texts) == 1  # one decision, followed by the late rank too
    assert f"rank(s) {ws - 1} of {ws} did not report" in texts.pop()
    assert verdicts[ws - 1]["seconds"] < 1.0  # it finds the decision made and does not wait
    _within_bound(verdicts)


@pytest.mark.parametrize("k", [HUNG, DEAD], ids=["hung", "dead"])
def test_a_hung_or_dead_rank_ends_the_others_with_ac007(rounds, k: int) -> None:  # type: ignore[no-untyped-def]
    ws, verdicts = _round(rounds, k)
    assert sorted(verdicts) == list(range(ws - 1))  # the last rank sat these rounds out
    for v in verdicts.values():
        assert v["codes"] == ["AC007"]
        assert f"rank(s) {ws - 1} of {ws} did not report" in v["text"]
        assert v["seconds"] >= DEADLINE
    _within_bound(verdicts)


@pytest.mark.parametrize("ws", WORLD_SIZES)
def test_a_late_rank_after_the_store_host_left_gets_ac007(ws: int) -> None:
    verdicts = _verdicts(run_ranks(w.store_host_leaves_before_late_rank, ws, DEADLINE,
                                   timeout_s=120, rendezvous="tcp"))
    assert len(verdicts) == ws
    for rank, v in verdicts.items():
        assert v["codes"] == ["AC007"], (rank, v)
    assert "store became unreachable" in verdicts[ws - 1]["text"]
    for rank in range(ws - 1):  # the on-time ranks: the decision, or the store gone under them
        assert (f"rank(s) {ws - 1} of {ws} did not report" in verdicts[rank]["text"]
                or "store became unreachable" in verdicts[rank]["text"])
    _within_bound(verdicts)


@pytest.mark.parametrize("ws", WORLD_SIZES)
def test_the_store_host_leaving_at_once_after_agreeing_and_then_dead(ws: int) -> None:
    with pytest.raises(RankFailure) as exc:
        run_ranks(w.store_host_dies, ws, DEADLINE, timeout_s=120, rendezvous="tcp")
    results = exc.value.results
    assert not results[0].ok and "exited with code 3" in results[0].error  # rank 0 passed
    assert all(r.ok for r in results[1:]), [r.error for r in results]
    agreed = {r.rank: r.value[0] for r in results[1:]}
    assert all(v["codes"] == [] for v in agreed.values()), agreed  # so did every other rank
    stranded = {r.rank: r.value[1] for r in results[1:]}
    for v in stranded.values():
        assert v["codes"] == ["AC007"]
        assert "store became unreachable" in v["text"]
    _within_bound(agreed)
    _within_bound(stranded)


BOUND = 10.0


@pytest.fixture(scope="module")
def over_a_file_store() -> list[list[dict[str, Any]]]:
    """Rounds agree, then disagree, over the harness' FileStore; one spawn for both."""
    return [r.value for r in run_ranks(w.consensus_agree_then_mismatch, 3, BOUND,
                                       timeout_s=120)]


def test_ranks_that_agree_pass(over_a_file_store) -> None:  # type: ignore[no-untyped-def]
    assert all(r[0]["codes"] == [] for r in over_a_file_store)


def test_disagreeing_ranks_all_fail_with_the_same_ac007(over_a_file_store) -> None:  # type: ignore[no-untyped-def]
    bound = BOUND
    results = [r[1] for r in over_a_file_store]
    texts = {r["text"] for r in results}
    assert len(texts) == 1  # the same message on every rank
    for r in results:
        assert r["codes"] == ["AC007"]
        assert r["seconds"] < bound
    text = texts.pop()
    assert "record test.dcp" not in text or "ranks 0,2" in text
    assert "backend" in text and "setting out_dtype" in text and "ranks 0,1" in text


def test_a_dead_rank_ends_the_others_within_the_bound() -> None:
    bound = 3.0
    with pytest.raises(RankFailure) as exc:
        run_ranks(w.one_rank_dies, 3, bound, timeout_s=120)
    results = exc.value.results
    assert not results[1].ok and "exited with code 3" in results[1].error
    for r in (results[0], results[2]):
        assert r.ok and r.value["codes"] == ["AC007"]
        assert "rank(s) 1 of 3 did not report" in r.value["text"]
        assert bound <= r.value["seconds"] < bound + 5.0


def test_settings_compare_by_value() -> None:
    rec = w.record("e", "token_head", "-inf")
    typed = fingerprint([rec], rec, 2, {"out_dtype": torch.bfloat16, "heads": (1, 2)})
    plain = fingerprint([rec], rec, 2, {"out_dtype": "bfloat16", "heads": [1, 2]})
    assert typed == plain


def test_a_setting_that_is_no_json_value_is_refused() -> None:
    with pytest.raises(TypeError, match=r"setting 'device'.*found object"):
        fingerprint([], None, 1, {"device": object()})


def test_ranks_compare_what_they_pass_a_collective_consumer() -> None:
    """FlashInfer's fused DCP combine hangs when ranks pass it different bases or plans
    (flashinfer #4586): the ranks compare the base each literal selects and the plan, so two
    spellings of one base agree, another base or head count is AC031 on every rank."""
    ws = 2
    results = run_ranks(w.collective_consumer_rounds, ws, DEADLINE, timeout_s=120)
    assert all(r.ok for r in results), [r.error for r in results]
    rounds = list(zip(*(r.value for r in results), strict=True))
    agree, spelled, other_base, other_plan = ({tuple(v["codes"]) for v in rnd} for rnd in rounds)
    assert agree == {()} and spelled == {()}
    # the odd rank's own edge (base 2 into a base-e producer) is every rank's AC016
    assert other_base == {("AC016", "AC031")}, other_base
    assert other_plan == {("AC031", "AC007")}, other_plan
    texts = {v["text"] for v in rounds[2]}
    assert len(texts) == 1 and "flashinfer.decode_cp_a2a_lse_reduce base" in texts.pop()
