"""Rank consensus at startup: every rank reaches the same verdict, by the path its scenario
implies. Nothing here times a rank: each verdict carries what its round left in the store (the
decision followed, who proposed it, which ranks had reported, were missing or failed, whether this
rank published, how many ranks read it), so "did not wait" and "at once" are orders of events that a
loaded machine cannot reverse, not bounds it can overrun.

Most tests run over the store engines use: a ``TCPStore`` hosted by rank 0 (``rendezvous="tcp"``),
so a dead or departed rank 0 takes the store with it. One spawn per world size runs several rounds
in sequence where the store stays up; the scenarios that kill rank 0 have a spawn each.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch

from attn_contracts.consensus import fingerprint
from attn_contracts.testing.ranks import RankFailure
from attn_contracts.testing.ranks import RankResult
from attn_contracts.testing.ranks import run_ranks
from fixtures import dcp_workers as w

pytestmark = pytest.mark.dist
WORLD_SIZES = (2, 3, 4)
DEADLINE = 3.0  # the short timeout of the rounds that must expire (a rank late, hung or dead)
AGREE, DISAGREE, LATE, HUNG, DEAD = range(5)


def _verdicts(results: list[RankResult]) -> dict[int, dict[str, Any]]:
    """Rank -> verdict of the ranks that returned one (every rank must have, or died by design)."""
    return {r.rank: r.value for r in results if r.ok}


def _decided_with_every_report(verdicts: dict[int, dict[str, Any]]) -> None:
    """Every rank followed one decision, made once every rank had reported: no deadline fired."""
    ws = len(verdicts)
    decisions = {json.dumps(v["decision"], sort_keys=True) for v in verdicts.values()}
    assert len(decisions) == 1, decisions
    for rank, v in verdicts.items():
        assert v["decision"]["reported"] == list(range(ws)), (rank, v["decision"])
        assert v["decision"]["missing"] == [] and v["published"], (rank, v)


def _decided_without(verdicts: dict[int, dict[str, Any]], missing: list[int]) -> None:
    """Every rank that returned followed one decision, made by a deadline with ``missing``
    not reported."""
    decisions = {json.dumps(v["decision"], sort_keys=True) for v in verdicts.values()}
    assert len(decisions) == 1, decisions
    assert next(iter(verdicts.values()))["decision"]["missing"] == missing


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
    _decided_with_every_report(verdicts)


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
    _decided_with_every_report(verdicts)


def test_a_late_but_alive_rank_fails_like_the_others(rounds) -> None:  # type: ignore[no-untyped-def]
    ws, verdicts = _round(rounds, LATE)
    assert len(verdicts) == ws
    for rank, v in verdicts.items():
        assert v["codes"] == ["AC007"], (rank, v)
    texts = {v["text"] for v in verdicts.values()}
    assert len(texts) == 1  # one decision, followed by the late rank too
    assert f"rank(s) {ws - 1} of {ws} did not report" in texts.pop()
    _decided_without(verdicts, [ws - 1])
    # it finds the decision made and does not wait: it never even published its report
    assert verdicts[ws - 1]["published"] is False
    assert all(verdicts[r]["published"] for r in range(ws - 1))


@pytest.mark.parametrize("k", [HUNG, DEAD], ids=["hung", "dead"])
def test_a_hung_or_dead_rank_ends_the_others_with_ac007(rounds, k: int) -> None:  # type: ignore[no-untyped-def]
    ws, verdicts = _round(rounds, k)
    assert sorted(verdicts) == list(range(ws - 1))  # the last rank sat these rounds out
    for v in verdicts.values():
        assert v["codes"] == ["AC007"]
        assert f"rank(s) {ws - 1} of {ws} did not report" in v["text"]
    _decided_without(verdicts, [ws - 1])  # by a deadline, the last rank's report never in


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
    # the late rank read nothing of a round whose store had gone
    assert verdicts[ws - 1]["decision"] is None


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
        assert v["decision"] is None  # no store, so no decision to follow: this rank's own AC007
    # the survivors followed the host's one decision, made with every report in; a survivor
    # that looks after the host has left reads nothing (None), which is no second decision
    decisions = {json.dumps(v["decision"], sort_keys=True) for v in agreed.values()
                 if v["decision"] is not None}
    assert len(decisions) <= 1, decisions
    assert all(json.loads(d)["missing"] == [] for d in decisions), decisions


BOUND = 10.0


@pytest.fixture(scope="module")
def over_a_file_store() -> list[list[dict[str, Any]]]:
    """Rounds agree, then disagree, over the harness' FileStore; one spawn for both."""
    return [r.value for r in run_ranks(w.consensus_agree_then_mismatch, 3, BOUND,
                                       timeout_s=120)]


def test_ranks_that_agree_pass(over_a_file_store) -> None:  # type: ignore[no-untyped-def]
    assert all(r[0]["codes"] == [] for r in over_a_file_store)


def test_disagreeing_ranks_all_fail_with_the_same_ac007(over_a_file_store) -> None:  # type: ignore[no-untyped-def]
    results = [r[1] for r in over_a_file_store]
    texts = {r["text"] for r in results}
    assert len(texts) == 1  # the same message on every rank
    for r in results:
        assert r["codes"] == ["AC007"]
    # decided once every report was in, not by the deadline (BOUND) passing
    _decided_with_every_report(dict(enumerate(results)))
    text = texts.pop()
    assert "record test.dcp" not in text or "ranks 0,2" in text
    assert "backend" in text and "setting out_dtype" in text and "ranks 0,1" in text


def test_a_dead_rank_ends_the_others_by_the_deadline() -> None:
    bound = 3.0
    with pytest.raises(RankFailure) as exc:
        run_ranks(w.one_rank_dies, 3, bound, timeout_s=120)
    results = exc.value.results
    assert not results[1].ok and "exited with code 3" in results[1].error
    for r in (results[0], results[2]):
        assert r.ok and r.value["codes"] == ["AC007"]
        assert "rank(s) 1 of 3 did not report" in r.value["text"]
    _decided_without({0: results[0].value, 2: results[2].value}, [1])


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


@pytest.mark.parametrize(("ws", "fail_on"), [(3, 1), (2, 0)], ids=["peer", "store-host"])
def test_a_rank_that_fails_first_ends_every_rank_at_once_with_its_cause(ws: int,
                                                                        fail_on: int) -> None:
    """Issue 28 item 3: not "did not report within 30 s" after 30 s, but the failed rank's own
    error, first, on every rank; the failed rank raises its own. "At once" is an order of events:
    the decision every peer followed is the failed rank's (the first proposal wins, so it came
    before any peer's own 30 s timeout could propose "did not report"), and the failed rank
    stopped lingering because every rank had read it."""
    timeout_s = 30.0
    results = run_ranks(w.one_rank_fails_first, ws, fail_on, timeout_s, timeout_s=120,
                        rendezvous="tcp")
    values = {r.rank: r.value for r in results}
    assert [v["raised"] for v in values[fail_on]] == ["AssertionError", "TypeError"]
    causes = ["its engine's own check: AssertionError: DCP requires",
              "before publishing its contract: TypeError: setting 'device'"]
    for rank, rounds in values.items():
        if rank == fail_on:
            continue
        for k, (v, cause) in enumerate(zip(rounds, causes, strict=True)):
            assert v["codes"][0] == "AC007", (rank, k, v)
            first = v["text"].splitlines()[1]
            assert f"rank {fail_on} failed {cause}" in first, (rank, k, first)
            assert v["decision"] == {"by": fail_on, "reported": [], "missing": [],
                                     "failed": [fail_on]}, (rank, k, v["decision"])
    for v in values[fail_on]:
        assert v["decision"]["failed"] == [fail_on]
        assert v["read"] == ws  # its peers read the verdict: it lingers for that, not a clock
