"""attn_contracts.checks, the producer → consumer edges (at startup too): base, layout, empty rows,
limits and dtype, each refused with its own code, naming both records, the field, the value found
and what is allowed."""

from __future__ import annotations

import pytest

from attn_contracts import CapabilityRecord
from attn_contracts import Code
from attn_contracts import CombineSetting
from attn_contracts import ConsumerRecord
from attn_contracts import ContractError
from attn_contracts import Registry
from attn_contracts import check_edge
from attn_contracts import validate_startup
from attn_contracts.cli import main
from attn_contracts.findings import Finding
from attn_contracts.records import LseSpec
from fixtures.records import good


def producer(**lse: object) -> CapabilityRecord:
    spec = {"returns": "lse", "base": "2", "layout": "token_head", "dtype": "float32",
            "empty_row": "-inf", "includes_sink": False, **lse}
    return CapabilityRecord.model_validate(good(name="test.producer", lse=spec,
                                                decode={**good()["decode"], "head_dims": [96, 128]}))


def consumer(**over: object) -> ConsumerRecord:
    data = {"name": "test.consumer", "library": "test", "source": "tests/test_checks.py:1",
            "evidence": "read_from_code", "base": {"kind": "fixed", "base": "e"},
            "lse": {"layouts": ["token_head"], "states": "first", "dtypes": ["float32"]},
            "empty": {"reads_as_empty": ["-inf"], "all_empty": "zero",
                      "zero_weight_nan_safe": True},
            "output": {"returns_lse": False}, **over}
    return ConsumerRecord.model_validate(data)


SETTING = CombineSetting(mode="merge", world_size=2, num_heads=32, head_dim=128,
                         out_dtype="bfloat16")


def test_a_base_2_producer_into_a_base_e_consumer_is_refused_at_startup() -> None:
    with pytest.raises(ContractError) as exc:
        validate_startup([producer(), consumer()], backend="test.producer", setting=SETTING,
                         consumers=["test.consumer"])
    (f,) = exc.value.findings
    assert f.code is Code.AC016 and f.field == "base" and f.found == "2" and f.allowed == '"e"'
    assert "test.producer" in f.message and "test.consumer" in f.message


def test_a_keyword_consumer_gets_the_value_the_edge_needs_in_the_hint() -> None:
    kw = {"kind": "keyword", "keyword": "is_lse_base_on_e",
          "values": {"True": "e", "False": "2"}, "default": "True"}
    (f,) = check_edge(producer(), consumer(base=kw))  # the call omits it: default True = e
    assert f.code is Code.AC016 and "is_lse_base_on_e=False" in f.hint
    assert check_edge(producer(), consumer(base=kw), keyword_value="False") == []
    (g,) = check_edge(producer(base="e"), consumer(base=kw), keyword_value="False")
    assert g.found == "False" and "is_lse_base_on_e=True" in g.hint


def test_plus_inf_empty_rows_into_a_minus_inf_only_consumer() -> None:
    with pytest.raises(ContractError) as exc:
        validate_startup([producer(base="e", empty_row="+inf"), consumer()],
                         backend="test.producer", setting=SETTING, consumers=["test.consumer"])
    (f,) = exc.value.findings
    assert f.code is Code.AC018 and f.field == "empty.reads_as_empty" and f.found == "+inf"


def test_undefined_empty_rows_need_a_consumer_that_masks() -> None:
    found = check_edge(producer(base="e", empty_row="undefined"), consumer())
    assert [(f.code, f.field) for f in found] == [(Code.AC018, "empty.accepts_row_mask")]
    masks = consumer(empty={"reads_as_empty": ["-inf"], "all_empty": "zero",
                            "zero_weight_nan_safe": True, "accepts_row_mask": True})
    assert check_edge(producer(base="e", empty_row="undefined"), masks) == []


def test_nan_all_empty_rows_and_nan_unsafe_weights_are_refused() -> None:
    c = consumer(empty={"reads_as_empty": ["-inf", "nan"], "all_empty": "nan",
                        "zero_weight_nan_safe": False})
    fields = [f.field for f in check_edge(producer(base="e", empty_row="nan"), c)]
    assert fields == ["empty.all_empty", "empty.zero_weight_nan_safe"]


def test_a_consumer_whose_head_limit_is_exceeded() -> None:
    fi = Registry().consumer("flashinfer.merge_states")
    big = CombineSetting(mode="merge", world_size=2, num_heads=128, head_dim=128,
                         out_dtype="bfloat16")
    findings = check_edge(producer(empty_row="-inf"), fi, big)
    (f,) = [f for f in findings if f.code is Code.AC019]
    assert f.field == "limits.threads" and f.found == 128 * 16 and f.allowed == "<= 1024"
    ok = CombineSetting(mode="merge", world_size=2, num_heads=64, head_dim=128,
                        out_dtype="bfloat16")
    assert not [f for f in check_edge(producer(), fi, ok) if f.code is Code.AC019]
    with pytest.raises(ContractError) as exc:
        validate_startup([producer(), consumer(base={"kind": "fixed", "base": "2"},
                                               limits={"pow2_head_dim": True,
                                                       "max_heads_x_head_dim": 1024})],
                         backend="test.producer", consumers=["test.consumer"],
                         setting=CombineSetting(world_size=3, num_heads=32, head_dim=96))
    assert [(f.code, f.field) for f in exc.value.findings] == [
        (Code.AC019, "limits.pow2_head_dim"), (Code.AC019, "limits.max_heads_x_head_dim")]


def test_layout_and_dtype_mismatches() -> None:
    c = consumer(base={"kind": "fixed", "base": "2"},
                 lse={"layouts": ["head_token"], "states": "separate", "dtypes": ["float32"]})
    found = check_edge(producer(dtype="bfloat16"), c)
    assert [(f.code, f.field, f.found) for f in found] == [
        (Code.AC017, "lse.layouts", "token_head"), (Code.AC020, "lse.dtypes", "bfloat16")]
    query = check_edge(producer(dtype="query"), c, SETTING)  # the query's dtype: bf16 here
    assert [f.found for f in query if f.code is Code.AC020] == ["bfloat16"]


def test_every_finding_at_once_and_unknown_consumers_named() -> None:
    c = consumer(lse={"layouts": ["head_token"], "states": "first", "dtypes": ["float32"]})
    with pytest.raises(ContractError) as exc:
        validate_startup([producer(empty_row="+inf"), c], backend="test.producer",
                         consumers=["test.consumer", "no.such.consumer"])
    assert sorted(exc.value.codes) == [Code.AC013, Code.AC016, Code.AC017, Code.AC018]
    unknown = next(f for f in exc.value.findings if f.code is Code.AC013)
    assert "flashinfer.merge_state" in unknown.allowed  # the known ones are listed


def test_the_plans_own_consumer_matches_its_record() -> None:
    pytest.importorskip("torch")
    from attn_contracts.combine import plan_combine

    rec = producer(empty_row="nan")
    plan = plan_combine(rec, SETTING)
    assert check_edge(rec, plan.as_consumer(), SETTING) == []


def test_cli_validate_checks_edges(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--backend", "flashinfer.mla.fa3", "--world-size", "4",
                 "--consumer", "vllm.cp_lse_ag_out_rs"]) == 1
    out = capsys.readouterr().out
    assert "AC016" in out and "is_lse_base_on_e=False" in out
    assert main(["validate", "--backend", "flashinfer.mla.fa3", "--world-size", "4",
                 "--consumer", "vllm.cp_lse_ag_out_rs=False", "--consumer",
                 "attn_contracts.merge='2'"]) in (0, 1)
    out = capsys.readouterr().out
    assert "AC016" not in out
    assert main(["validate", "--consumer", "vllm.cp_lse_ag_out_rs"]) == 2


def test_the_readme_engine_wiring_validates() -> None:
    """The README's engine snippet: FlashInfer MLA (undefined empty rows) into the project's own
    merge, with a row mask: no finding."""
    setting = CombineSetting(mode="a2a", world_size=4, num_heads=128, head_dim=512,
                             out_dtype="bfloat16", row_mask=True)
    assert validate_startup(backend="flashinfer.mla.fa3", setting=setting,
                            consumers=["attn_contracts.merge"]) is not None
    with pytest.raises(ContractError) as exc:  # without the mask the edge is refused
        validate_startup(backend="flashinfer.mla.fa3", consumers=["vllm.merge_attn_states"],
                         setting=setting)
    assert Code.AC018 in exc.value.codes


def test_a_sink_inside_the_lse_and_a_planned_sink_count_twice() -> None:
    rec = producer(includes_sink=True)
    from attn_contracts import check_setting

    one = CombineSetting(world_size=1, num_heads=32, head_dim=128, sink=True)
    assert [f.code for f in check_setting(rec, one)] == [Code.AC024]
    assert check_setting(rec, one.model_copy(update={"sink": False})) == []


def test_a_required_base_keyword_left_unsaid_is_a_note_not_silence(
        capsys: pytest.CaptureFixture[str]) -> None:
    """The README's engine example: the merge's ``base`` keyword is required and was never given,
    so the base edge was not checked; validate says so (a note: correct code passes it)."""
    assert main(["validate", "--backend", "flashinfer.mla.fa3", "--world-size", "2",
                 "--consumer", "attn_contracts.merge"]) == 0
    out = capsys.readouterr().out
    assert "AC016 [note]" in out and "attn_contracts.merge='2'" in out
    assert main(["validate", "--backend", "flashinfer.mla.fa3", "--world-size", "2",
                 "--consumer", "attn_contracts.merge", "--format", "json"]) == 0
    import json

    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] and [f["severity"] for f in doc["findings"]] == ["note"]


def test_keyword_literals_are_compared_as_python_values(
        capsys: pytest.CaptureFixture[str]) -> None:
    for spelled in ('attn_contracts.merge="2"', "attn_contracts.merge='2'"):
        assert main(["validate", "--backend", "flashinfer.mla.fa3", "--world-size", "2",
                     "--consumer", spelled]) == 0
        assert "AC016" not in capsys.readouterr().out
    # a value, not text: True is not 1, and "e" is not "2"
    assert main(["validate", "--backend", "flashinfer.mla.fa3", "--world-size", "2",
                 "--consumer", 'attn_contracts.merge="e"']) == 1
    assert "AC016" in capsys.readouterr().out


def test_a_literal_the_consumer_does_not_take_names_the_ones_it_does(
        capsys: pytest.CaptureFixture[str]) -> None:
    """``base=2`` (an int) selects no base of attn_contracts.merge: the finding used to read
    "(base None)"; it names the literals the record lists."""
    assert main(["validate", "--backend", "flashinfer.mla.fa3", "--world-size", "2",
                 "--consumer", "attn_contracts.merge=2"]) == 1
    out = capsys.readouterr().out
    assert "AC016" in out and "base None" not in out
    assert "does not take; allowed: '2', 'e'" in out


# --- empty rows' output (lse.empty_out) into a merge that multiplies by the weight (AC030) --------
# trtllm-gen MLA decode writes lse = -inf for seq_lens == 0 rows but never writes out (flashinfer
# #4975): a merge that multiplies by the weight turns the buffer's NaN garbage into a NaN row.
REG = Registry()


def _codes(findings: list[Finding]) -> list[Code]:
    return [f.code for f in findings]


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
    assert _codes([f for f in found if f.code is Code.AC030]) == want
    if want:
        (f,) = [f for f in found if f.code is Code.AC030]
        assert f.field == "lse.empty_out" and f.found == (out or "undefined")


def test_an_undefined_lse_keeps_its_own_finding_and_no_second_one() -> None:
    """An undefined LSE already says the partial may be garbage (AC018); the output fact adds no
    second finding for the same row."""
    found = check_edge(producer(empty_row="undefined", empty_out="undefined"),
                       REG.consumer("flashinfer.merge_state"))
    assert Code.AC018 in _codes(found) and Code.AC030 not in _codes(found)


def test_trtllm_gen_mla_into_flashinfers_fused_combine_is_the_4975_edge() -> None:
    """trtllm-gen MLA (lse -inf, out unwritten) into FlashInfer's own fused DCP combine, which
    multiplies by the weight: AC030; the project's plan masks those rows instead."""
    trtllm = REG.get("flashinfer.mla.trtllm_gen")
    assert (trtllm.lse.empty_row, trtllm.lse.empty_out) == ("-inf", "undefined")
    fused = REG.consumer("flashinfer.decode_cp_a2a_lse_reduce")
    assert Code.AC030 in _codes(check_edge(trtllm, fused, keyword_value="'base2'"))


def test_the_built_in_records_say_the_output_fact_where_their_code_does() -> None:
    facts = {r.name: r.lse.empty_out for r in REG.records() if isinstance(r.lse, LseSpec)}
    assert facts["flash_attn.fa2"] == "zero" and facts["flash_attn.fa3"] == "zero"
    assert facts["triton.mla_decode"] == "nan"  # acc / e_sum with e_sum = 0
    assert facts["torch.sdpa_ref"] == "zero"
    flashinfer = {n: v for n, v in facts.items() if n.startswith("flashinfer.")}
    # FlashInfer's kernels leave an empty row's output as it was, except the two whose own
    # documentation says what an empty row gives (0.7.4's qsa: "Empty rows return zero outputs")
    said = {n: v for n, v in flashinfer.items() if v != "undefined"}
    assert flashinfer and said == {"flashinfer.qsa": "zero", "flashinfer.qsa_indexed": "zero"}
