"""The eager fast path (``combine/fastpath.py``): what a key tells apart, where decided launches
are kept (not on the shared plan), and that the tables stay bounded. The launch body is replaced
by one that hands back a no-op decided launch, so calls after the first take the fast path as on
a GPU (on the CPU the interpreter makes no decided launch to keep)."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Iterator
from typing import Any

import pytest
import torch

from attn_contracts.checks import CallRefused
from attn_contracts.combine import fastpath
from attn_contracts.combine import launches as launches_module
from attn_contracts.combine import plan_combine
from attn_contracts.combine import rescale
from attn_contracts.combine.launches import CombineLaunch
from attn_contracts.findings import Code
from fixtures.dcp_workers import record

H, D = 4, 32


class _NoLaunch:
    """A decided launch that counts its calls (the launch itself a no-op)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, *tensors: Any) -> None:
        self.calls += 1


@pytest.fixture
def launches(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[CombineLaunch]]:
    """The launches the checked path made; every one hands back a decided launch. The tables
    start and end empty: an entry of a no-op launch must not serve another test's call."""
    made: list[CombineLaunch] = []

    def launch(a: CombineLaunch) -> _NoLaunch:
        made.append(a)
        return _NoLaunch()

    monkeypatch.setattr(launches_module, "combine_launch", launch)
    fastpath.OPS.clear()
    fastpath.PLANS.clear()
    yield made
    fastpath.OPS.clear()
    fastpath.PLANS.clear()


def _plan(**kw: Any) -> Any:
    return plan_combine(record("e", "token_head", "-inf", name="test.fastpath"), mode="merge",
                        world_size=2, num_heads=H, head_dim=D, out_dtype=torch.float32, **kw)


@pytest.mark.parametrize("rank", [True, 1.0])
def test_a_rank_that_equals_an_int_is_still_refused_after_the_int_was_kept(
        launches: list[CombineLaunch], rank: Any) -> None:
    """``True == 1`` and ``1.0 == 1`` hash alike: a key without the rank's type let such a call
    run the launch decided for rank 1 instead of being refused."""
    o, lse, out = torch.randn(3, H, D), torch.randn(2, 3, H), torch.empty(3, H, D)
    for _ in range(2):
        rescale(o, lse, 1, base="e", out=out)
    assert len(launches) == 1  # the second call took the fast path
    with pytest.raises(CallRefused) as exc:
        rescale(o, lse, rank, base="e", out=out)
    assert exc.value.codes == [Code.AC027] and exc.value.findings[0].field == "rank"


def test_calling_a_plan_changes_nothing_on_it(launches: list[CombineLaunch]) -> None:
    """The plan is cached and shared: its calls' decided launches are kept in the fast path's
    table, under the plan's token, not on the plan."""
    plan = _plan(return_lse=True)
    before = {name: copy.copy(value) for name, value in vars(plan).items()}
    o, lse = torch.randn(2, 3, H, D), torch.randn(2, 3, H)
    for _ in range(3):
        plan(o, lse)
        plan.launch(o, lse)
    assert len(launches) == 2  # each entry's first call; every later one took the fast path
    assert vars(plan) == before
    assert {key[:2] for key in fastpath.PLANS} == {(plan.token, "call"), (plan.token, "launch")}


def test_a_plan_call_computes_one_key(launches: list[CombineLaunch],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 39 item 4: a plan's first call computes its own key once and keeps its decided
    launch there; nothing of the ops' table (``OPS``, ``combine_key``) is computed for it."""
    computed: list[str] = []
    monkeypatch.setattr(fastpath, "combine_key",
                        lambda *a, **k: computed.append("ops") or ("ops-key",))
    sig = fastpath.sig
    o, lse = torch.randn(2, 3, H, D), torch.randn(2, 3, H)
    plan = _plan(return_lse=True)
    signed: list[int] = []
    monkeypatch.setattr("attn_contracts.combine.plan.sig",
                        lambda x: signed.append(1) or sig(x))
    plan(o, lse)
    assert computed == [] and not fastpath.OPS
    assert len(signed) == 7  # the seven tensors of one key: (token, "call", ...)
    assert [key[:2] for key in fastpath.PLANS] == [(plan.token, "call")]
    plan(o, lse)
    assert len(launches) == 1 and len(signed) == 14  # the second call: one key, a hit


def test_a_copied_or_unpickled_plan_has_its_own_token(launches: list[CombineLaunch]) -> None:
    plan = _plan()
    o, lse = torch.randn(2, 3, H, D), torch.randn(2, 3, H)
    plan(o, lse)
    for other in (copy.copy(plan), copy.deepcopy(plan), pickle.loads(pickle.dumps(plan))):
        assert other == plan and other.token != plan.token
        assert not any(key[0] == other.token for key in fastpath.PLANS)
        torch.testing.assert_close(other.lse_view(lse), plan.lse_view(lse))


def test_a_full_table_is_emptied_before_it_grows() -> None:
    table: dict[tuple[Any, ...], Any] = {}
    for i in range(3):
        fastpath.keep(table, (i,), i, max_entries=3)
    fastpath.keep(table, (9,), None, max_entries=3)  # nothing decided: nothing kept
    assert len(table) == 3
    fastpath.keep(table, (3,), 3, max_entries=3)
    assert table == {(3,): 3}
