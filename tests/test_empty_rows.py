"""Empty rows as two facts: what the LSE holds (``lse.empty_row``) and what the *output* holds
(``lse.empty_out``: ``zero``, ``nan``, ``undefined``). The bug: trtllm-gen MLA decode writes
``lse = -inf`` for ``seq_lens == 0`` rows but never writes ``out`` (flashinfer #4975), so a merge
that multiplies by the weight turns the buffer's NaN garbage into a NaN row at weight 0. A record
written before the output fact existed still loads; the checks read its absent fact as
``undefined`` (fail closed)."""

from __future__ import annotations

from typing import Any

import pytest

from attn_contracts import CapabilityRecord, Code, Registry, check_edge
from attn_contracts.records import LseSpec
from attn_contracts.sources import parse_record
from fixtures.records import good

REG = Registry()


def producer(**lse: Any) -> CapabilityRecord:
    spec = {"returns": "lse", "base": "2", "layout": "token_head", "dtype": "float32",
            "empty_row": "-inf", "includes_sink": False, **lse}
    return CapabilityRecord.model_validate(good(name="test.empty.producer", lse=spec))


def codes(findings: list[Any]) -> list[Code]:
    return [f.code for f in findings]


def test_a_record_without_the_output_fact_loads_and_reads_as_undefined() -> None:
    recs, findings = parse_record(good())  # written before lse.empty_out existed
    assert findings == [] and isinstance(recs[0], CapabilityRecord)
    spec = recs[0].lse
    assert isinstance(spec, LseSpec) and spec.empty_out is None
    assert spec.empty_output == "undefined"


@pytest.mark.parametrize("bad", ["0", "garbage", 0, None])
def test_an_output_fact_outside_the_three_is_refused(bad: object) -> None:
    lse = {**good()["lse"], "empty_out": bad}
    if bad is None:  # None is the absent fact spelled out in Python
        assert parse_record(good(lse=lse))[1] == []
        return
    _, findings = parse_record(good(lse=lse))
    assert codes(findings) == [Code.AC012] and findings[0].field == "lse.empty_out"


def test_no_lse_and_an_output_fact_is_ac004() -> None:
    _, findings = parse_record(good(lse={"returns": "none", "empty_out": "zero"}))
    assert codes(findings) == [Code.AC004]


def test_the_schema_has_the_output_fact() -> None:
    schema = CapabilityRecord.model_json_schema()
    spec = schema["$defs"]["LseSpec"]["properties"]["empty_out"]
    assert {"zero", "nan", "undefined"} <= {v for a in spec["anyOf"] for v in a.get("enum", [])}


@pytest.mark.parametrize(("out", "consumer", "want"), [
    ("undefined", "flashinfer.merge_state", [Code.AC030]),  # multiplies: 0 · NaN
    ("nan", "sglang.merge_state_v2", [Code.AC030]),
    (None, "flashinfer.merge_state", [Code.AC030]),  # absent: fail closed
    ("zero", "flashinfer.merge_state", []),  # the kernel writes 0: weight 0 gives 0
    ("undefined", "attn_contracts.merge", []),  # selects weight-0 partials away
    ("undefined", "flash_attn.fa3.combine", []),  # reads a partial only where its scale > 0
    ("undefined", "vllm.dcp.cp_lse_ag_out_rs", []),  # NaN-safe and takes the engine's mask
])
def test_an_undefined_output_into_a_merge_that_multiplies_by_zero_is_ac030(
        out: str | None, consumer: str, want: list[Code]) -> None:
    p = producer(**({} if out is None else {"empty_out": out}))
    found = [f for f in check_edge(p, REG.consumer(consumer)) if f.code is not Code.AC016]
    assert codes([f for f in found if f.code is Code.AC030]) == want
    if want:
        (f,) = [f for f in found if f.code is Code.AC030]
        assert f.field == "lse.empty_out" and f.found == (out or "undefined")


def test_an_undefined_lse_keeps_its_own_finding_and_no_second_one() -> None:
    """An undefined LSE already says the partial may be garbage (AC018); the output fact adds no
    second finding for the same row."""
    found = check_edge(producer(empty_row="undefined", empty_out="undefined"),
                       REG.consumer("flashinfer.merge_state"))
    assert Code.AC018 in codes(found) and Code.AC030 not in codes(found)


def test_trtllm_gen_mla_into_flashinfers_fused_combine_is_the_4975_edge() -> None:
    """trtllm-gen MLA (lse -inf, out unwritten) into FlashInfer's own fused DCP combine, which
    multiplies by the weight: AC030; the project's plan masks those rows instead."""
    trtllm = REG.get("flashinfer.mla.trtllm_gen")
    assert (trtllm.lse.empty_row, trtllm.lse.empty_out) == ("-inf", "undefined")
    fused = REG.consumer("flashinfer.decode_cp_a2a_lse_reduce")
    assert Code.AC030 in codes(check_edge(trtllm, fused, keyword_value="'base2'"))


def test_the_built_in_records_say_the_output_fact_where_their_code_does() -> None:
    facts = {r.name: r.lse.empty_out for r in REG.records() if isinstance(r.lse, LseSpec)}
    assert facts["flash_attn.fa2"] == "zero" and facts["flash_attn.fa3"] == "zero"
    assert facts["triton.mla_decode"] == "nan"  # acc / e_sum with e_sum = 0
    assert facts["torch.sdpa_ref"] == "zero"
    flashinfer = {n: v for n, v in facts.items() if n.startswith("flashinfer.")}
    assert flashinfer and all(v == "undefined" for v in flashinfer.values())
