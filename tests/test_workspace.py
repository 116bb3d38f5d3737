"""The DCP workspace: fixed addresses, views for smaller steps, slots that never alias, a step past
its size refused, one workspace per process group (the plan itself stays shared and immutable)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
import torch

from attn_contracts.checks import CallRefused
from attn_contracts.combine import plan_combine
from attn_contracts.combine.workspace import Workspace
from attn_contracts.findings import Code
from attn_contracts.testing.ranks import run_ranks
from fixtures import workspace_workers as w


def _plan(mode: str, world: int = 4) -> object:
    return plan_combine("torch.sdpa_ref", mode=mode, world_size=world, num_heads=8, head_dim=64,
                        out_dtype=torch.bfloat16)


@pytest.mark.parametrize("mode", ["ag_rs", "a2a", "ar"])
def test_smaller_steps_are_views_of_the_same_storage(mode: str) -> None:
    ws = Workspace(_plan(mode), None, max_tokens=16, slots=1, device="cpu")  # type: ignore[arg-type]
    cpu = torch.device("cpu")
    small, large = ws.lse_buffers(0, 3, cpu), ws.lse_buffers(0, 16, cpu)
    assert small[0].data_ptr() == large[0].data_ptr() and small[1].data_ptr() == large[1].data_ptr()
    assert small[1].shape == (4 * 3, 8) and small[1].is_contiguous()
    if mode == "a2a":
        s3, r3, o3 = ws.messages(0, 3, cpu)
        s16, r16, _ = ws.messages(0, 16, cpu)
        assert s3.data_ptr() == s16.data_ptr() and r3.data_ptr() == r16.data_ptr()
        assert o3 % 16 == 0 and s3.shape[0] == 4
    if mode == "ag_rs":
        assert ws.chunks(0, 3, cpu).data_ptr() == ws.chunks(0, 16, cpu).data_ptr()
        assert ws.chunks(0, 3, cpu).shape == (4, 3, 2, 64)


def _refused(fn: Callable[[], object]) -> list[tuple[Code, str, object]]:
    """The (code, field, found) of each finding ``fn`` was refused with; a refusal is also a
    ``ValueError``, what callers of the former bare errors catch."""
    with pytest.raises(CallRefused) as exc:
        fn()
    assert isinstance(exc.value, ValueError)
    return [(f.code, f.field, f.found) for f in exc.value.findings]


def test_a_step_past_the_size_or_a_wrong_slot_is_refused() -> None:
    ws = Workspace(_plan("ag_rs"), None, max_tokens=4, slots=2, device="cpu")  # type: ignore[arg-type]
    cpu = torch.device("cpu")
    assert _refused(lambda: ws.lse_buffers(0, 5, cpu)) == [(Code.AC027, "max_tokens", 5)]
    assert _refused(lambda: ws.chunks(2, 1, cpu)) == [(Code.AC027, "slot", 2)]
    assert _refused(lambda: ws.chunks(-1, 9, torch.device("meta"))) == [
        (Code.AC027, "slot", -1), (Code.AC027, "max_tokens", 9), (Code.AC027, "workspace", "cpu")]
    assert _refused(lambda: ws.check_group(object())) == [
        (Code.AC027, "group", "another group")]
    with pytest.raises(ValueError, match="max_tokens must be an int >= 1"):
        Workspace(_plan("ag_rs"), None, max_tokens=0, device="cpu")  # type: ignore[arg-type]
    with pytest.raises(CallRefused) as exc:
        Workspace(_plan("merge"), None, max_tokens=4, device="cpu")  # type: ignore[arg-type]
    assert exc.value.codes == [Code.AC027]


@pytest.mark.parametrize(("mode", "buffers"), [("ag_rs", "messages"), ("a2a", "chunks"),
                                               ("ar", "messages"), ("a2a", "direct_buffers")])
def test_a_step_that_needs_a_buffer_of_another_mode_is_refused(mode: str, buffers: str) -> None:
    ws = Workspace(_plan(mode), None, max_tokens=4, device="cpu")  # type: ignore[arg-type]
    assert _refused(lambda: getattr(ws, buffers)(0, 2, torch.device("cpu"))) == [
        (Code.AC027, "workspace", mode)]


@pytest.mark.parametrize("mode", ["ag_rs", "a2a", "ar"])
def test_slots_never_alias(mode: str) -> None:
    ws = Workspace(_plan(mode), None, max_tokens=8, slots=2, device="cpu")  # type: ignore[arg-type]
    cpu = torch.device("cpu")

    def spans(slot: int) -> list[tuple[int, int]]:
        views = list(ws.lse_buffers(slot, 8, cpu))
        views += [ws.chunks(slot, 8, cpu)] if mode == "ag_rs" else []
        views += list(ws.messages(slot, 8, cpu)[:2]) if mode == "a2a" else []
        return [(v.data_ptr(), v.data_ptr() + v.numel() * v.element_size()) for v in views]

    for a0, a1 in spans(0):
        for b0, b1 in spans(1):
            assert a1 <= b0 or b1 <= a0


def test_the_plan_carries_no_buffers() -> None:
    plan = _plan("a2a")
    assert not hasattr(plan, "buffers")  # state lives in workspaces, never on a shared plan


@pytest.mark.dist
def test_two_slots_alternate_with_exact_results_over_gloo() -> None:
    for rank in run_ranks(w.slots_alternate, 3, timeout_s=300):
        for mode, r in rank.value.items():
            assert r["errors"] == [0.0, 0.0, 0.0, 0.0], mode
            assert r["same_address"], mode
            assert "exceeds the workspace's max_tokens" in r["too_big"], mode


def test_a2a_direct_is_refused_where_it_cannot_run() -> None:
    """No CUDA here: planning the direct all-to-all names why (AC026); a2a_best plans."""
    from attn_contracts import Code
    from attn_contracts import ContractError
    from attn_contracts.cli import main

    if torch.cuda.is_available():
        pytest.skip("CUDA is here: the refusal comes from the group (tests/test_gpu.py)")
    with pytest.raises(ContractError) as exc:
        _plan("a2a_direct")
    (f,) = exc.value.findings
    assert f.code is Code.AC026 and "no CUDA device" in f.message and "a2a_best" in f.hint
    assert _plan("a2a_best").local_heads == 2  # type: ignore[attr-defined]
    assert main(["plan", "torch.sdpa_ref", "--mode", "a2a_direct", "--world-size", "4",
                 "--num-heads", "8", "--head-dim", "64"]) == 1


@pytest.mark.dist
def test_a2a_best_over_gloo_falls_back_to_a2a_and_says_why() -> None:
    for rank in run_ranks(w.a2a_best_over_gloo, 2, timeout_s=300):
        assert rank.value["why"].startswith("a2a_best: a2a over NCCL")
        assert rank.value["error"] == 0.0
