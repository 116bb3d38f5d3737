"""A combine call must match its plan, its workspace and its mode (refused with AC025/AC027 and a
message naming the value found), world size 1 gives the numbers every other path gives, and an
empty step is valid input in every mode."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from attn_contracts.checks import CallRefused
from attn_contracts.combine import merge
from attn_contracts.combine import plan_combine
from attn_contracts.combine import rescale
from attn_contracts.combine.reference import merge_reference
from attn_contracts.findings import Code
from attn_contracts.testing.ranks import run_ranks
from fixtures import call_workers as w
from fixtures.dcp_workers import record


def _one(fn: Any, world: int) -> Any:
    results = run_ranks(fn, world, timeout_s=300)
    return [r.value for r in results]


# --- issue 19: silent wrong results ------------------------------------------------------------
def test_world_of_one_honours_the_output_base_and_sanitises_on_every_path() -> None:
    """No workspace, no mask, no sink used to hand back the kernel's LSE as it came (base 2 where
    base e was planned; +inf and a NaN output for an empty row)."""
    (got,) = _one(w.world_of_one_paths, 1)
    for path, r in got.items():
        assert r["o"] < 1e-5 and r["lse"] < 1e-5, (path, r)
        assert r["empty_lse"] == -math.inf and r["empty_o"] == 0.0, (path, r)


def _merge_plan(**kw: Any) -> Any:
    return plan_combine(record("e", "token_head", "-inf"), mode="merge", world_size=4,
                        num_heads=4, head_dim=32, out_dtype=torch.float32, **kw)


@pytest.mark.parametrize(("shape", "dtype", "field"), [
    ((2, 3, 4, 32), torch.float32, "world_size"),
    ((4, 3, 8, 32), torch.float32, "num_heads"),
    ((4, 3, 4, 16), torch.float32, "head_dim"),
    ((4, 3, 4, 32), torch.bfloat16, "out_dtype"),
    ((4, 4, 32), torch.float32, "partial_out"),
])
def test_a_merge_plan_refuses_partials_of_another_shape_or_dtype(
        shape: tuple[int, ...], dtype: torch.dtype, field: str) -> None:
    plan = _merge_plan()
    o = torch.randn(shape).to(dtype)
    lse = torch.randn(*shape[:-1])
    with pytest.raises(CallRefused) as exc:
        plan(o, lse)
    assert exc.value.codes == [Code.AC027] and exc.value.findings[0].field == field
    assert (isinstance(exc.value, ValueError) and str(tuple(shape)) in str(exc.value)) or \
        (field == "out_dtype" and "bfloat16" in str(exc.value))


def test_a_merge_plan_still_runs_what_it_was_made_for() -> None:
    plan = _merge_plan()
    o, lse = torch.randn(4, 2, 4, 32), torch.randn(4, 2, 4)
    torch.testing.assert_close(plan(o, lse).double(), merge_reference(o, lse, base="e")[0],
                               atol=1e-5, rtol=1e-5)


def test_a_workspace_is_tied_to_its_plan_and_a_sink_to_the_heads() -> None:
    (got,) = _one(w.calls_against_their_plan, 1)
    for case in ("same_shapes", "other_dtype", "other_heads"):
        r = got[case]
        assert r["type"] == "CallRefused" and r["codes"] == ["AC027"], (case, r)
        assert "another plan" in r["text"] and "Check failed" not in r["text"], (case, r)
    assert got["own_plan"] == {"type": "ok"} and got["sink_h"] == {"type": "ok"}
    sink = got["sink_h_plus_3"]
    assert sink["codes"] == ["AC027"] and "(7,)" in sink["text"] and "[H=4]" in sink["text"]
    best = got["best_without_workspace"]
    assert best["codes"] == ["AC027"] and "needs a Workspace" in best["text"]
    # a2a_best is resolved once, at workspace time; every refusal reason is kept
    assert got["best_why"].startswith("a2a_best: a2a over NCCL, since the direct all-to-all")
    assert [name for name, _ in got["best_refused"]] == ["a2a_direct"]
    assert "no CUDA" in got["best_refused"][0][1]


def test_an_overlapping_out_and_a_non_int_rank_are_refused() -> None:
    o, lse = torch.randn(2, 3, 4, 32), torch.randn(2, 3, 4)
    expanded = torch.empty(3, 1, 32).expand(3, 4, 32)  # heads would overwrite each other
    with pytest.raises(ValueError, match="out overlaps itself"):
        merge(o, lse, base="e", out=expanded)
    with pytest.raises(ValueError, match="lse_out overlaps itself"):
        merge(o, lse, base="e", lse_out=torch.empty(3, 1).expand(3, 4))
    for rank in (True, 1.0):
        with pytest.raises(CallRefused, match=r"rank .* is not a rank of the 2 gathered") as exc:
            rescale(o[1], lse, rank, base="e")  # type: ignore[arg-type]
        assert exc.value.findings[0].field == "rank"


# --- issue 19: an empty step --------------------------------------------------------------------
def test_an_empty_step_is_valid_in_every_mode() -> None:
    for rank in _one(w.empty_steps, 2):
        for mode in ("ag_rs", "a2a"):
            assert rank[f"{mode}/bare"] == rank[f"{mode}/workspace"] == [[0, 2, 32], [0, 2]]
        assert rank["ar/bare"] == rank["ar/workspace"] == [[0, 4, 32], [0, 4]]
        assert rank["a2a_best/workspace"] == [[0, 2, 32], [0, 2]]
        assert all(rank[f"{m}/after"] == [2, 2 if m != "ar" else 4, 32]
                   for m in ("ag_rs", "a2a", "ar", "a2a_best"))


def test_an_empty_merge_and_pack() -> None:
    plan = _merge_plan()
    assert plan(torch.randn(4, 0, 4, 32), torch.randn(4, 0, 4)).shape == (0, 4, 32)


# --- issue 18: lens wherever a row mask is -----------------------------------------------------
def test_lens_is_accepted_by_a_plan_and_by_dcp_combine() -> None:
    plan = plan_combine(record("2", "token_head", "undefined"), mode="merge", world_size=2,
                        num_heads=4, head_dim=32, out_dtype=torch.float32)
    o, lse = torch.randn(2, 4, 4, 32), torch.randn(2, 4, 4)
    lens = torch.tensor([[0, 5], [1, 0]])  # B = 2 requests of q_len 2
    keep = (lens > 0).repeat_interleave(2, dim=1)
    o[~keep] = math.nan
    torch.testing.assert_close(plan(o, lse, lens=lens), plan(o, lse, row_mask=keep))
    for rank in _one(w.lens_like_row_mask, 2):
        assert all(err == 0.0 for err in rank.values()), rank


def test_out_and_lse_of_a_dcp_call_are_checked_before_any_collective() -> None:
    for rank in _one(w.buffers_against_their_plan, 2):
        for mode in ("ag_rs", "a2a", "ar"):
            for label in ("bf16_out", "shape_out", "empty_step_shape_out", "meta_out",
                          "mask_and_lens"):
                r = rank[f"{mode}/{label}"]
                assert r["type"] == "CallRefused" and r["codes"] == ["AC027"], (mode, label, r)
                assert "Check failed" not in r["text"], (mode, label, r)
            assert "bfloat16" in rank[f"{mode}/bf16_out"]["text"]
            assert "(5, 7)" in rank[f"{mode}/empty_step_shape_out"]["text"]
            for label in ("lse_of_other_t", "int_lse"):
                r = rank[f"{mode}/{label}"]
                assert r["type"] == "CallRefused" and r["codes"] == ["AC027"], (mode, label, r)
                assert r["value_error"] and "partial_lse" in r["text"], (mode, label, r)
            assert "(4, 4)" in rank[f"{mode}/lse_of_other_t"]["text"]
            assert "int64" in rank[f"{mode}/int_lse"]["text"]
            assert rank[f"{mode}/own_out"] == [True, 0.0]


def test_a_rescale_plan_refuses_lses_gathered_from_another_world_size() -> None:
    """An ag_rs plan for 4 ranks called with the LSEs of 2 used to rescale against 2 silently."""
    plan = plan_combine(record("e", "token_head", "-inf"), mode="ag_rs", world_size=4,
                        num_heads=4, head_dim=32, out_dtype=torch.float32)
    o = torch.randn(3, 4, 32)
    with pytest.raises(CallRefused, match=r"gathered LSE holds 2 ranks' LSEs") as exc:
        plan(o, torch.randn(2, 3, 4), rank=1)
    assert exc.value.codes == [Code.AC027] and exc.value.findings[0].field == "world_size"
    lse = torch.randn(4, 3, 4)
    torch.testing.assert_close(plan(o, lse, rank=1).double(),
                               rescale(o, lse, 1, base="e").double())
def test_a_call_like_an_earlier_one_runs_its_decided_launch_and_a_mismatch_is_still_refused() -> None:
    """Eager calls at world size 1, ``plan(...)`` and ``plan.launch``: the first call checks and
    launches, later ones of the same inputs run its decided launch on the same addresses (checked
    here with the launch a no-op, as on a GPU after a first call); a call that does not match its
    plan is refused with the same findings and text after calls were kept as before."""
    (got,) = _one(w.decided_launches, 1)
    # plan.launch given the views dcp_combine launched on: that launch was kept already (dcp_combine
    # launches through plan.launch's own entry). plan() keeps its launch under its own key only
    # (one key per call, issue 39 item 4), so plan.launch's first call of the same views is slow.
    earlier = {"rescale/plan.launch": "ag_rs/row_mask+sink"}
    for name, run in got["runs"].items():
        kinds = [kind for kind, _ in run["log"]]
        assert kinds == ["fast" if name in earlier else "slow", "fast", "fast"], (name, run)
        assert len({ptrs for _, ptrs in run["log"]}) == 1, (name, run)
        assert run["returns_out"], name
    for name, first in {**earlier, "merge/plan.launch": "merge/plan()"}.items():
        assert got["runs"][name]["log"][0][1] == got["runs"][first]["log"][0][1], name
    assert got["after"] == got["before"]
    for name, refusal in got["before"].items():
        assert refusal["type"] != "ok" and refusal["value_error"], (name, refusal)
    assert got["before"]["ag_rs/no_mask"]["codes"] == ["AC025"]
    for name in ("a2a/sink", "a2a/mask_shape", "a2a/mask_dtype", "a2a/lse_heads", "merge/lse",
                 "launch/no_rank"):
        assert got["before"][name]["codes"] == ["AC027"], (name, got["before"][name])
