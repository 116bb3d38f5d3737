"""attn_contracts.call_layout, with call_base (the other half of one choice): a producer's LSE base
*and layout* chosen by its call (FlashInfer 0.7.2.post1's prefill ``run(..., lse_base=,
lse_layout=)``, flashinfer #5257): the record says which keyword picks which, startup resolves the
engine's literal arguments, and the edge is checked with what the call returns. The bug this
guards: vLLM 0.24-0.28 merged FlashInfer prefill's base-2 ``[T, H]`` LSE with
``merge_attn_states`` (natural log, ``[H, T]``; vLLM #52796), SGLang merges it with its
natural-log ``merge_state`` (SGLang #40903)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from attn_contracts import Code
from attn_contracts import ContractError
from attn_contracts import Registry
from attn_contracts import validate_startup
from attn_contracts.call_base import CallBase
from attn_contracts.call_layout import CallLayout
from attn_contracts.checks import resolve_call
from attn_contracts.checks import resolve_call_layout

LAYOUT = CallLayout.model_validate({"keyword": "lse_layout",
                                    "values": {"'NH'": "token_head", "'HN'": "head_token"},
                                    "unset": [], "default": "token_head"})
PREFILL = Registry().get("flashinfer.batch_prefill")


def test_a_call_layout_resolves_literals_by_value_and_falls_back_to_its_default() -> None:
    assert LAYOUT.resolve({"lse_layout": "'HN'"}) == "head_token"
    assert LAYOUT.resolve({"lse_layout": '"HN"'}) == "head_token"  # one value, two spellings
    assert LAYOUT.resolve({}) == "token_head"
    assert LAYOUT.resolve({"lse_layout": "'XY'"}) is None  # not a layout the kernel takes
    assert LAYOUT.resolve({"lse_layout": "<expr>"}) is None  # an expression decides
    assert LAYOUT.layouts() == ("head_token", "token_head")
    assert LAYOUT.pass_hint("head_token") == "lse_layout='HN'"
    with_unset = LAYOUT.model_copy(update={"unset": ("None",)})
    assert with_unset.resolve({"lse_layout": "None"}) == "token_head"


def test_a_call_layout_refuses_a_layout_that_is_not_one() -> None:
    with pytest.raises(ValidationError):
        CallLayout.model_validate({"keyword": "lse_layout", "values": {"'NH'": "rows"}})


def test_the_prefill_record_chooses_both_by_keyword() -> None:
    chosen = [c for c in PREFILL.calls if c.layout is not None]
    assert {c.function.rsplit(".", 2)[1] for c in chosen} == {
        "BatchPrefillWithPagedKVCacheWrapper", "BatchPrefillWithRaggedKVCacheWrapper"}
    assert all(c.base is not None and c.base.keyword == "lse_base" for c in chosen)
    # the record's own fields are what the defaults give
    assert (PREFILL.lse.base, PREFILL.lse.layout) == ("2", "token_head")
    ln_hn, _ = resolve_call(PREFILL, {"return_lse": True, "lse_base": "ln", "lse_layout": "HN"})
    assert (ln_hn.lse.base, ln_hn.lse.layout) == ("e", "head_token")
    same, findings = resolve_call(PREFILL, {"return_lse": True})
    assert same is PREFILL and findings == []


def test_without_the_call_the_base_is_ac028_and_the_records_layout_stands() -> None:
    """Both rules at once (the merge of issue 26 item 2 with issue 29's call-chosen layout): no
    ``producer_call`` for a record whose base its call chooses is ``AC028``, and no layout is
    resolved from a call that was not given."""
    record, findings = resolve_call(PREFILL, None)
    assert record is PREFILL and [f.code for f in findings] == [Code.AC028]
    with pytest.raises(ContractError) as exc:
        validate_startup(backend="flashinfer.batch_prefill", world_size=1)
    assert exc.value.codes == [Code.AC028]


def test_a_layout_the_kernel_does_not_take_is_ac017() -> None:
    record, (f,) = resolve_call_layout(PREFILL, {"lse_layout": "TN"})
    assert record is PREFILL and f.code is Code.AC017 and f.found == "'TN'"
    assert "lse_layout='HN'" in f.allowed


def test_prefill_into_vllms_merge_attn_states_is_caught_and_the_keywords_fix_it() -> None:
    """vLLM #52796: base 2 and [T, H] into a natural-log [H, T] merge (AC016, AC017); with
    lse_base='ln', lse_layout='HN' only the empty-row fact is left (FlashInfer's prefill has no
    documented zero-key row and merge_attn_states takes no row mask: AC018)."""
    def codes(call: dict[str, object]) -> set[Code]:
        with pytest.raises(ContractError) as exc:
            validate_startup(backend="flashinfer.batch_prefill", world_size=1,
                             consumers=["vllm.merge_attn_states"], producer_call=call)
        return set(exc.value.codes)

    assert codes({"return_lse": True}) == {Code.AC016, Code.AC017, Code.AC018}
    assert codes({"return_lse": True, "lse_base": "ln", "lse_layout": "HN"}) == {Code.AC018}


def test_prefill_into_sglangs_merge_state_needs_lse_base_ln_either_way() -> None:
    """SGLang #40903: its merge_state picks sgl_kernel's merge_state_v2 or the Triton merge by
    dtype and head dim, but both are base e and [T, H]: one base either way, so the fix is the
    producer's keyword, not the dispatch."""
    def base_codes(call: dict[str, object], consumer: str) -> set[Code]:
        try:
            validate_startup(backend="flashinfer.batch_prefill", world_size=1,
                             consumers=[consumer], producer_call=call)
        except ContractError as err:
            return {c for c in err.codes if c in (Code.AC016, Code.AC017)}
        return set()

    for consumer in ("sglang.merge_state.dispatch", "sglang.merge_state_v2",
                     "sglang.merge_state.triton"):
        assert base_codes({"return_lse": True}, consumer) == {Code.AC016}, consumer
        assert base_codes({"return_lse": True, "lse_base": "ln"}, consumer) == set(), consumer
        assert base_codes({"return_lse": True, "lse_base": "ln", "lse_layout": "HN"},
                          consumer) == {Code.AC017}, consumer


@pytest.mark.parametrize(("call", "base"), [
    ({"sparse_mla_top_k": "<expr>"}, "2"),  # backend omitted: "auto", and a sparse call picks
    ({"sparse_mla_top_k": "64", "backend": "'auto'"}, "2"),
    ({"sparse_mla_top_k": "0"}, None),  # the parameter's "off": the dense dispatch decides
    ({"sparse_mla_top_k": "None"}, None),
    ({}, None),
    ({"sparse_mla_top_k": "64", "backend": "'cute-dsl'"}, "e"),  # a pinned backend wins
    ({"sparse_mla_top_k": "64", "return_lse_base": "'basee'"}, "e"),  # and the keyword over all
])
def test_an_argument_that_decides_the_dispatch_picks_its_base(call: dict[str, str],
                                                              base: str | None) -> None:
    """FlashInfer 0.7.2.post1's MLA decode under ``backend="auto"`` runs a sparse call only on
    base-2 kernels (mla/_core.py:L4200-L4205, L3184): the record's ``picked_by``."""
    (rec,) = [r for r in Registry().records() if r.name == "flashinfer.mla.sparse"]
    (cb,) = {c.base for c in rec.calls}
    assert cb is not None and cb.resolve(call) == base


def test_picked_by_needs_the_dispatching_value() -> None:
    with pytest.raises(ValueError, match="default_by_omitted"):
        CallBase.model_validate({"keyword": "k", "values": {"1": "2"},
                                 "picked_by": {"top_k": "'sparse'"}})
