"""plan_combine: the record picks the variant; bad settings fail at plan (startup) time."""

from __future__ import annotations

import math

import pytest
import torch

from attn_contracts import CapabilityRecord
from attn_contracts import Code
from attn_contracts import ContractError
from attn_contracts.checks import CallRefused
from attn_contracts.cli import main
from attn_contracts.combine import merge_reference
from attn_contracts.combine import plan_combine
from attn_contracts.combine import rescale_reference
from fixtures.records import bad_copy
from fixtures.records import good
from fixtures.records import without_base
from fixtures.tensors import partials


def record(**lse: object) -> CapabilityRecord:
    spec = {"returns": "lse", "base": "e", "layout": "token_head", "dtype": "float32",
            "empty_row": "-inf", "includes_sink": False, **lse}
    return CapabilityRecord.model_validate(
        good(name="test.plan", lse=spec, decode={**good()["decode"], "head_dims": [64, 80]}))


def test_the_base_comes_from_the_record() -> None:
    o, lse = partials(4, 3, 4, 64, torch.float32, seed=21)
    plan_e = plan_combine(record(base="e"), mode="merge", world_size=4, num_heads=4,
                          head_dim=64, out_dtype=torch.float32)
    plan_2 = plan_combine(record(base="2"), mode="merge", world_size=4, num_heads=4,
                          head_dim=64, out_dtype=torch.float32)
    out_e, out_2 = plan_e(o, lse), plan_2(o, lse)
    assert (out_e - out_2).abs().max() > 1e-2  # the same tensors, different answers
    torch.testing.assert_close(out_e.double(), merge_reference(o, lse, base="e")[0], atol=1e-5,
                               rtol=1e-5)
    torch.testing.assert_close(out_2.double(), merge_reference(o, lse, base="2")[0], atol=1e-5,
                               rtol=1e-5)


def test_head_token_and_padded_layouts_are_views() -> None:
    o, lse = partials(2, 3, 4, 64, torch.float32, seed=2)
    lse_ht = lse.transpose(1, 2).contiguous()  # what a [H, T] kernel returns, stacked
    plan = plan_combine(record(layout="head_token"), mode="merge", world_size=2, num_heads=4,
                        head_dim=64, out_dtype=torch.float32)
    view = plan.lse_view(lse_ht)
    assert view.data_ptr() == lse_ht.data_ptr() and view.shape == (2, 3, 4)
    torch.testing.assert_close(plan(o, lse_ht).double(), merge_reference(o, lse, base="e")[0],
                               atol=1e-5, rtol=1e-5)

    padded = torch.full((2, 3, 16), math.nan)
    padded[..., :4] = lse
    plan = plan_combine(record(padded_heads=16), mode="merge", world_size=2, num_heads=4,
                        head_dim=64, out_dtype=torch.float32)
    torch.testing.assert_close(plan(o, padded).double(), merge_reference(o, lse, base="e")[0],
                               atol=1e-5, rtol=1e-5)


def test_q_len_axis_layout_and_batch_qlen_output() -> None:
    n, b, q, h, d = 2, 2, 3, 4, 64
    o, lse = partials(n, b * q, h, d, torch.float32, seed=8)
    lse_bhq = lse.view(n, b, q, h).permute(0, 1, 3, 2).contiguous()
    plan = plan_combine(record(layout="head_token", q_len_axis=True, empty_row="+inf"),
                        mode="merge", world_size=n, num_heads=h, head_dim=d,
                        out_dtype=torch.float32)
    out = plan(o.view(n, b, q, h, d), lse_bhq)
    torch.testing.assert_close(out.double(), merge_reference(o, lse, base="e")[0], atol=1e-5,
                               rtol=1e-5)


def test_rescale_modes_need_rank_and_match_reference() -> None:
    o, lse = partials(3, 3, 6, 80, torch.float32, seed=4)
    plan = plan_combine(record(base="2"), mode="ag_rs", world_size=3, num_heads=6, head_dim=80,
                        out_dtype=torch.float32, return_lse=True, lse_out_base="e")
    assert plan.kernel == "rescale"
    with pytest.raises(CallRefused) as exc:
        plan(o[1], lse)
    assert exc.value.codes == [Code.AC027] and exc.value.findings[0].field == "rank"
    assert isinstance(exc.value, ValueError)  # what callers of the old ValueError catch
    got, got_lse = plan(o[1], lse, rank=1)
    ref, ref_lse = rescale_reference(o[1], lse, 1, base="2", lse_out_base="e")
    torch.testing.assert_close(got.double(), ref, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(got_lse.double(), ref_lse, atol=1e-5, rtol=1e-6)


def test_plans_are_cached_and_immutable() -> None:
    kw = dict(mode="a2a", world_size=4, num_heads=128, head_dim=512, out_dtype=torch.bfloat16)
    a = plan_combine("flashinfer.mla.fa3", **kw)  # type: ignore[arg-type]
    b = plan_combine("flashinfer.mla.fa3", **kw)  # type: ignore[arg-type]
    assert a is b and a.local_heads == 32 and a.base == "2"
    with pytest.raises(AttributeError):
        a.mode = "ar"  # type: ignore[misc]


@pytest.mark.parametrize(
    ("rec", "kw", "codes"),
    [
        ("flashinfer.xqa", {"head_dim": 128}, [Code.AC006]),
        (without_base(), {}, [Code.AC001]),
        ("flashinfer.mla.fa3", {"num_heads": 130, "mode": "a2a"}, [Code.AC010]),
        ("flashinfer.mla.fa3", {"num_heads": 130, "mode": "ag_rs"}, [Code.AC010]),
        ("cutlass.mla", {"num_heads": 256, "mode": "ar"}, [Code.AC015]),
        ("flashinfer.mla.fa3", {"head_dim": 128}, [Code.AC015]),
        ("flashinfer.mla.fa3", {"out_dtype": torch.float64}, [Code.AC015]),
    ],
)
def test_plan_time_failures(rec: object, kw: dict, codes: list[Code]) -> None:  # type: ignore[type-arg]
    args = dict(mode="merge", world_size=4, num_heads=128, head_dim=512,
                out_dtype=torch.bfloat16) | kw
    with pytest.raises(ContractError) as exc:
        plan_combine(rec, **args)  # type: ignore[arg-type]
    assert exc.value.codes == codes


def test_ar_allows_any_head_count() -> None:
    plan = plan_combine("flashinfer.mla.fa3", mode="ar", world_size=3, num_heads=128,
                        head_dim=512, out_dtype="bfloat16")
    assert plan.local_heads == 128


@pytest.mark.parametrize("kw", [{"mode": "gather"}, {"world_size": 0}, {"lse_out_base": "10"},
                                {"out_dtype": "complex"}])
def test_bad_arguments_are_value_errors(kw: dict) -> None:  # type: ignore[type-arg]
    args = dict(mode="merge", world_size=2, num_heads=4, head_dim=512, out_dtype="bfloat16") | kw
    with pytest.raises(ValueError):
        plan_combine("flashinfer.mla.fa3", **args)  # type: ignore[arg-type]


@pytest.mark.parametrize(("lse_shape", "found", "padded_heads"), [
    ((2, 3, 4), 3, None),  # [N, H=3, T=4]: the head axis of a [H, T] layout has 3 entries
    ((2, 4, 3, 1), (2, 4, 3, 1), None),  # 3 dims for [N, H, T], 4 given
    ((2, 8, 4), 8, 16),  # 8 of the 16 padded head slots
])
def test_wrong_lse_shape_for_the_layout_is_refused(lse_shape: tuple[int, ...], found: object,
                                                   padded_heads: int | None) -> None:
    plan = plan_combine(record(layout="head_token", padded_heads=padded_heads), mode="merge",
                        world_size=2, num_heads=4, head_dim=64, out_dtype=torch.float32)
    with pytest.raises(CallRefused) as exc:
        plan(torch.randn(2, 4, 4, 64), torch.randn(*lse_shape))
    (finding,) = exc.value.findings
    assert (finding.code, finding.field, finding.found) == (Code.AC027, "partial_lse", found)


def test_cli_plan(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "flashinfer.mla.fa3", "--mode", "a2a", "--world-size", "4"]) == 0
    out = capsys.readouterr().out
    assert "base 2" in out and "32 head(s)" in out
    assert main(["plan", "flashinfer.xqa", "--mode", "a2a", "--world-size", "4"]) == 1
    assert "AC006" in capsys.readouterr().out
    assert main(["plan", "nope"]) == 2
    assert main(["plan", "flashinfer.mla.fa3", "--world-size", "0"]) == 2


def test_pdl_can_be_switched_off_per_plan(monkeypatch: pytest.MonkeyPatch) -> None:
    """``pdl=False`` reaches the launch as mode 0 even where the tiles would use PDL; the default
    lets the tiles decide (PDL itself only exists on CUDA, so the launch's argument is what is
    checked: mode 2 here, a one-token grid)."""
    from attn_contracts.combine import launches

    seen: list[int] = []
    monkeypatch.setattr(launches, "combine_launch", lambda launch: seen.append(launch.config.pdl))
    o, lse = partials(4, 1, 128, 512, torch.float32, seed=2)
    for pdl in (True, False):
        plan = plan_combine("flashinfer.mla.fa3", mode="merge", world_size=4, num_heads=128,
                            head_dim=512, out_dtype=torch.float32, pdl=pdl)
        assert plan.pdl is pdl and ("PDL (programmatic dependent launch) off" in plan.explain()) is not pdl
        plan(o, lse, row_mask=torch.ones(4, 1, dtype=torch.bool))  # its empty rows are undefined
    assert seen == [2, 0]


# --- what enters planning is re-validated -----------------------------------------------------
@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_model_copied_record_is_refused_by_plan_combine() -> None:
    pytest.importorskip("torch")
    from attn_contracts import ContractError
    from attn_contracts.combine.plan import plan_combine
    from attn_contracts.findings import Code

    with pytest.raises(ContractError) as exc:
        plan_combine(bad_copy(), mode="merge", world_size=2, num_heads=4,  # type: ignore[arg-type]
                     head_dim=64, out_dtype="float32")
    assert Code.AC012 in exc.value.codes
