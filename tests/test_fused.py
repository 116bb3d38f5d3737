"""FlashInfer's fused DCP combine (``flashinfer.comm.decode_cp_a2a_lse_reduce``): its consumer
record at the edge, and the planner's ``fi_a2a`` mode on the CPU — refused with the reason where
it cannot run, planned (with FlashInfer's availability stood in for) with the row mask its
multiply-by-weight merge needs, and the one pass that lays each peer's head slice out the way the
op reads it, against a stand-in for the op that follows its documented math (the real op runs in
tests/test_gpu.py)."""

from __future__ import annotations

import math
import sys
import types
from typing import Any

import pytest
import torch

from attn_contracts import Code
from attn_contracts import CombineSetting
from attn_contracts import ContractError
from attn_contracts import Registry
from attn_contracts import check_edge
from attn_contracts.combine import plan as plan_module
from attn_contracts.combine import plan_combine
from attn_contracts.combine.fused import FusedBuffers
from attn_contracts.combine.fused import fused_combine
from attn_contracts.startup import check_startup

REG = Registry()
FUSED = REG.consumer("flashinfer.decode_cp_a2a_lse_reduce")
GOOD = {"mode": "fi_a2a", "world_size": 2, "num_heads": 16, "head_dim": 512,
        "out_dtype": "bfloat16"}


def test_the_fused_combines_default_base_contradicts_the_cute_dsl_producer() -> None:
    """Its default lse_mode is base 2; vLLM's FlashInfer-MLA DCP path runs cute-dsl, base e."""
    cute = REG.get("flashinfer.mla.cute_dsl")
    (f,) = [f for f in check_edge(cute, FUSED) if f.code is Code.AC016]
    assert f.found == "'base2'" and "lse_mode='basee'" in f.hint
    assert not [f for f in check_edge(cute, FUSED, keyword_value="'basee'")
                if f.code is Code.AC016]


@pytest.mark.parametrize(("over", "field"), [
    ({"out_dtype": "float32"}, "limits.out_dtypes"),
    ({"head_dim": 60}, "limits.row_bytes_multiple"),  # 120 bytes: not 16-byte rows
    ({"world_size": 65, "num_heads": 65}, "limits.max_states"),
])
def test_the_fused_combines_limits_at_the_edge(over: dict[str, Any], field: str) -> None:
    rec = REG.get("torch.sdpa_ref")
    setting = CombineSetting(**{**GOOD, "mode": "a2a", **over})
    found = [f for f in check_edge(rec, FUSED, setting, keyword_value="'basee'")
             if f.code is Code.AC019]
    assert [f.field for f in found] == [field]


def test_one_process_says_the_ranks_agreement_is_unchecked() -> None:
    _, _, findings = check_startup(backend="torch.sdpa_ref", world_size=2,
                                   consumers=[(FUSED.name, "'basee'")])
    (note,) = [f for f in findings if f.code is Code.AC031]
    assert note.severity == "note" and note.subject == FUSED.name


def test_validate_startup_without_a_group_warns_about_the_hang() -> None:
    from attn_contracts import validate_startup

    with pytest.warns(RuntimeWarning, match="group="):
        validate_startup(backend="torch.sdpa_ref", world_size=2,
                         consumers=[(FUSED.name, "'basee'")])


# --- the planner --------------------------------------------------------------------------------
@pytest.mark.parametrize(("over", "why"), [
    ({}, "no CUDA"),  # this machine
    ({"sink": True}, "no attention sink"),
    ({"return_lse": True}, "no merged LSE"),
    ({"out_dtype": "float32"}, "out_dtype float32"),
    ({"head_dim": 60}, "16 bytes"),
    ({"world_size": 65, "num_heads": 65}, "at most 64"),
])
def test_fi_a2a_is_refused_with_the_reason_where_it_cannot_run(over: dict[str, Any],
                                                               why: str) -> None:
    if not over and torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    with pytest.raises(ContractError) as exc:
        plan_combine("torch.sdpa_ref", **{**GOOD, "head_dim": 64, **over})
    (f,) = [f for f in exc.value.findings if f.code is Code.AC026]  # (head dim 60: AC015 too)
    assert f.found == "fi_a2a" and why in f.message


@pytest.fixture
def flashinfer_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """Plan as if FlashInfer's op were installed (the planner asks only this)."""
    import attn_contracts.combine.fused as fused

    monkeypatch.setattr(fused, "fused_unavailable_here", lambda setting: None)
    plan_module._plan.cache_clear()
    yield
    plan_module._plan.cache_clear()


def _record(empty_row: str, empty_out: str | None, base: str = "2") -> Any:
    lse = {"returns": "lse", "base": base, "layout": "token_head", "dtype": "float32",
           "empty_row": empty_row, "includes_sink": False}
    if empty_out is not None:
        lse["empty_out"] = empty_out
    name = f"test.fused.{empty_row.replace('-', 'm')}.{empty_out or 'absent'}"
    return {"name": name, "library": "t",
            "source": "tests/test_fused.py", "evidence": "measured", "lse": lse,
            "decode": {"attention": "mla", "out_layout": "token_head_dim", "head_dims": [512],
                       "q_dtypes": ["bfloat16"], "q_len_gt_1": False}}


@pytest.mark.usefixtures("flashinfer_here")
@pytest.mark.parametrize(("empty_row", "empty_out", "mode", "needs"), [
    ("-inf", "undefined", "fi_a2a", True),  # trtllm-gen MLA: FlashInfer multiplies by 0
    ("-inf", None, "fi_a2a", True),  # absent: read as undefined
    ("-inf", "nan", "fi_a2a", True),
    ("-inf", "zero", "fi_a2a", False),  # FA3: the kernel writes 0
    ("-inf", "undefined", "a2a", False),  # the project's merge selects weight 0 away
    ("undefined", "zero", "a2a", True),  # an undefined LSE always needs the mask
])
def test_the_plan_asks_a_row_mask_where_the_merge_would_read_an_empty_output(
        empty_row: str, empty_out: str | None, mode: str, needs: bool) -> None:
    plan = plan_combine(_record(empty_row, empty_out), **{**GOOD, "mode": mode})
    assert plan.needs_row_mask is needs
    if needs:
        with pytest.raises(ContractError) as exc:
            plan.check_row_mask(False)
        assert exc.value.codes == [Code.AC025]
        plan.check_row_mask(True)  # with one, it runs


@pytest.mark.usefixtures("flashinfer_here")
def test_the_fi_a2a_plan_explains_the_base_it_passes_and_the_mask() -> None:
    plan = plan_combine(_record("-inf", "undefined", base="e"), **GOOD)
    text = plan.explain()
    assert "lse_mode='basee'" in text and "decode_cp_a2a_lse_reduce" in text
    assert "row mask" in text
    assert plan.kernel == "merge" and plan.local_heads == 8
    consumer = plan.as_consumer()
    assert not consumer.empty.zero_weight_nan_safe and consumer.empty.accepts_row_mask


# --- the pass before FlashInfer's op ------------------------------------------------------------
class _Op:
    """Stands in for flashinfer.comm at world size ``n``: records what it was given and merges
    the slices this rank sent as the op's documented math does (NaN/+inf LSE as -inf, the max
    clamped to 0 when all are -inf, each partial *multiplied* by its weight)."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def decode_cp_a2a_lse_reduce(self, partial_o: torch.Tensor, partial_lse: torch.Tensor,
                                 workspace: torch.Tensor, cp_rank: int, cp_size: int,
                                 lse_mode: str = "base2") -> torch.Tensor:
        self.calls.append({"o": partial_o.clone(), "lse": partial_lse.clone(), "rank": cp_rank,
                           "size": cp_size, "lse_mode": lse_mode})
        scale = 1.0 if lse_mode == "basee" else math.log(2.0)
        lse = torch.where(partial_lse.isnan() | (partial_lse == math.inf), -math.inf, partial_lse)
        m = lse.amax(-1, keepdim=True)
        m = torch.where(m == -math.inf, 0.0, m)
        w = torch.exp((lse - m) * scale)
        w = w / w.sum(-1, keepdim=True).clamp_min(1e-30)
        return (partial_o.float() * w[..., None]).sum(-2).to(partial_o.dtype)


@pytest.fixture
def op(monkeypatch: pytest.MonkeyPatch) -> _Op:
    fake = _Op()
    module = types.ModuleType("flashinfer.comm")
    module.decode_cp_a2a_lse_reduce = fake.decode_cp_a2a_lse_reduce  # type: ignore[attr-defined]
    package = types.ModuleType("flashinfer")
    package.comm = module  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "flashinfer", package)
    monkeypatch.setitem(sys.modules, "flashinfer.comm", module)
    return fake


def _buffers(t: int, h: int, n: int, d: int, rank: int) -> FusedBuffers:
    return FusedBuffers(torch.empty(0, dtype=torch.uint8),
                        torch.full((t, h // n, n, d), 7.0), torch.full((t, h // n, n), 7.0),
                        rank, n)


def test_each_peers_head_slice_goes_where_the_op_reads_it(op: _Op) -> None:
    t, h, n, d = 3, 6, 3, 4
    g = torch.Generator().manual_seed(0)
    o = torch.randn(t, 2 * h, d, generator=g)[:, ::2]  # strided: the pass reads through strides
    lse = torch.randn(h, t, generator=g).T  # a [H, T] record read as a [T, H] view
    fused_combine(_buffers(t, h, n, d, rank=1), o, lse, base="2", row_mask=None, out=None)
    (call,) = op.calls
    hc = h // n
    for r in range(n):  # [..., r, :] holds the heads bound for rank r
        assert torch.equal(call["o"][:, :, r], o[:, r * hc:(r + 1) * hc])
        assert torch.equal(call["lse"][:, :, r], lse[:, r * hc:(r + 1) * hc])
    assert (call["rank"], call["size"], call["lse_mode"]) == (1, n, "base2")
    assert call["o"].is_contiguous() and call["lse"].dtype == torch.float32


@pytest.mark.parametrize("base", ["e", "2"])
def test_a_masked_row_is_zeroed_before_the_op_so_its_nan_never_reaches_the_merge(
        op: _Op, base: str) -> None:
    t, h, d = 4, 4, 8
    o = torch.randn(t, h, d)
    lse = torch.randn(t, h)
    o[2] = math.nan  # an unwritten row (flashinfer #4975) ...
    lse[2] = -math.inf  # ... whose LSE says empty
    keep = torch.tensor([True, True, False, True])
    out = torch.full((t, h, d), math.nan)
    got = fused_combine(_buffers(t, h, 1, d, 0), o, lse, base=base, row_mask=keep, out=out)
    assert got is out and op.calls[0]["lse_mode"] == ("basee" if base == "e" else "base2")
    assert torch.equal(got[2], torch.zeros(h, d))  # FlashInfer's all-empty row: o = 0
    assert torch.allclose(got[keep], o[keep])
    unmasked = fused_combine(_buffers(t, h, 1, d, 0), o, lse, base=base, row_mask=None, out=None)
    assert unmasked[2].isnan().all()  # what the mask prevents: 0 · NaN in the op's merge


@pytest.mark.usefixtures("flashinfer_here")
def test_a_workspace_flashinfer_cannot_set_up_is_ac026_with_its_reason(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """FlashInfer checks NCCL's device API only when its op first runs: the workspace runs it
    once, and a failure there is a refusal naming FlashInfer's reason, not a crash in a step."""
    import attn_contracts.combine.workspace as workspace

    def no_devcomm(*args: Any, **kwargs: Any) -> FusedBuffers:
        raise RuntimeError("decode_cp_a2a_lse_reduce requires NCCL >= 2.29 with device "
                           "communicator support")

    monkeypatch.setattr(workspace, "fused_unavailable", lambda group, setting: None)
    monkeypatch.setattr(workspace.FusedBuffers, "create", no_devcomm)
    plan = plan_combine(_record("-inf", "zero"), **GOOD)
    with pytest.raises(ContractError) as exc:
        workspace.Workspace(plan, None, max_tokens=4, device="cpu")
    (f,) = exc.value.findings
    assert f.code is Code.AC026 and "NCCL >= 2.29" in f.message
