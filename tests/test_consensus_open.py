"""A consensus round opened before a rank's slow work (issue 35 item 2), a failure told in it,
and a rank that abstains because its own checker failed (the plugin is a guest: its own fault
never refuses a start). The ranks' consensus timeout is long (600 s) and the harness ends them
after 120 s: a verdict that arrives at all arrived before any rank's own timeout could fire."""

from __future__ import annotations

import pytest

from attn_contracts.testing.ranks import run_ranks
from fixtures import open_round_workers as w

pytestmark = pytest.mark.dist
TIMEOUT_S = 600.0  # never reached: the harness stops the ranks long before


@pytest.mark.parametrize(("ws", "odd"), [(2, 1), (3, 0)], ids=["peer", "store-host"])
def test_a_round_opened_before_the_slow_work(ws: int, odd: int) -> None:
    values = {r.rank: r.value for r in run_ranks(w.opened_rounds, ws, odd, TIMEOUT_S,
                                                 timeout_s=120, rendezvous="tcp")}
    others = [r for r in range(ws) if r != odd]
    # round 1: the failure in the slow work reaches every peer as its cause, first
    for r in others:
        first = values[r][0]
        assert first["codes"][0] == "AC007", first
        assert f"rank {odd} failed its slow work: RuntimeError: the slow work failed here" in \
            first["text"].splitlines()[1]
    # round 2: an abstaining rank refuses nobody; the others pass, not waiting for it
    assert [values[r][1]["codes"] for r in others] == [[]] * len(others)
    # round 3: each of the others is still judged on its own findings
    for r in others:
        assert bool(values[r][2]["codes"]) == (r == others[0]), (r, values[r][2])
    # round 4: the rounds stay in step after all this: everyone agrees
    assert [values[r][3]["codes"] for r in range(ws)] == [[]] * ws


@pytest.mark.parametrize(("ws", "odd"), [(2, 1), (2, 0)], ids=["peer", "store-host"])
def test_a_slow_rank_is_waited_for_and_a_frozen_one_is_not(ws: int, odd: int) -> None:
    """A rank whose slow work runs past the others' deadline but is alive (a loaded machine)
    is waited for: every rank passes. One that froze after opening its round (its beat stops)
    ends the others with AC007, "started" and late, within seconds of their deadline."""
    timeout_s, past_s = 2.0, 8.0  # past the deadline by more than a stale beat allows
    values = {r.rank: r.value for r in run_ranks(w.slow_then_frozen, ws, odd, timeout_s, past_s,
                                                 timeout_s=120, rendezvous="tcp")}
    assert [values[r][0]["codes"] for r in range(ws)] == [[]] * ws  # slow but alive: waited for
    others = [r for r in range(ws) if r != odd]
    for r in others:
        frozen = values[r][1]
        assert frozen["codes"] == ["AC007"], frozen
        assert f"rank(s) {odd} of {ws} did not report" in frozen["text"]
        assert "had started checking" in frozen["text"]
    # the late rank follows the verdict made without it
    assert values[odd][1]["codes"] == ["AC007"]
