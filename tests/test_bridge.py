"""attn_contracts.bridge: engine-style backend classes -> records; a base that is only an inherited
default is AC002 (the seed's bug), every LSE fact is required and type-checked."""

from __future__ import annotations

import pytest

from attn_contracts import Code
from attn_contracts import ContractError
from attn_contracts import record_from_impl
from fixtures.engine_classes import AttentionImpl
from fixtures.engine_classes import FixedFlashInferMLAImpl
from fixtures.engine_classes import FlashAttnImpl
from fixtures.engine_classes import FlashAttnVarlenImpl
from fixtures.engine_classes import FlashInferMLAImpl

#: the LSE facts engine classes do not carry; the bridge takes them as keywords, never as defaults
FACTS = {"layout": "token_head", "lse_dtype": "float32", "empty_row": "-inf",
         "includes_sink": False, "head_dims": (128,)}


def test_bridge_inherited_default_base_is_ac002() -> None:
    with pytest.raises(ContractError) as exc:
        record_from_impl(FlashInferMLAImpl, library="flashinfer")
    f = exc.value.findings[0]
    assert f.code is Code.AC002 and f.field == "lse_base_on_e" and f.found is True
    assert "FlashInfer" in f.hint


def test_bridge_reads_own_and_deliberately_inherited_bases() -> None:
    assert record_from_impl(FixedFlashInferMLAImpl, **FACTS).lse_base == "2"
    assert record_from_impl(FlashAttnImpl, **FACTS).lse_base == "e"
    assert record_from_impl(FlashAttnVarlenImpl, **FACTS).lse_base == "e"
    r = record_from_impl(AttentionImpl, name="engine.base", head_dims=(128,))
    assert not r.returns_lse and r.name == "engine.base"


def test_bridge_no_base_anywhere_is_ac001() -> None:
    class Impl:
        can_return_lse_for_decode = True

    with pytest.raises(ContractError) as exc:
        record_from_impl(Impl)
    assert exc.value.codes == [Code.AC001]


def test_bridge_base_default_on_class_without_lse_is_allowed() -> None:
    class Impl(AttentionImpl):  # how an engine's base class declares its defaults
        lse_base_on_e = False

    assert not record_from_impl(Impl, head_dims=(128,)).returns_lse


def test_bridge_configurable_names_and_wrong_types() -> None:
    class Impl:
        returns_lse = True
        lse_is_natural = False

    r = record_from_impl(Impl, returns_attr="returns_lse", base_attr="lse_is_natural", **FACTS)
    assert r.lse_base == "2"

    class Weird:
        can_return_lse_for_decode = "yes"

    with pytest.raises(ContractError) as exc:
        record_from_impl(Weird)
    assert exc.value.codes == [Code.AC012]


def test_bridge_requires_every_lse_fact_and_names_the_missing_one() -> None:
    class FlashInferLikeImpl:  # base given, nothing else: no fact may be filled in silently
        can_return_lse_for_decode = True
        lse_base_on_e = False

    with pytest.raises(ContractError) as exc:
        record_from_impl(FlashInferLikeImpl)
    assert {f.field for f in exc.value.findings} == {
        "layout", "lse_dtype", "empty_row", "includes_sink", "head_dims"}
    assert set(exc.value.codes) == {Code.AC012}
    partial = dict(FACTS)
    del partial["empty_row"]
    with pytest.raises(ContractError) as exc:
        record_from_impl(FlashInferLikeImpl, **partial)
    assert [f.field for f in exc.value.findings] == ["empty_row"]
    # read from the named class attributes, and "undefined" kept (the plan then demands a mask)
    FlashInferLikeImpl.lse_empty_row = "undefined"  # type: ignore[attr-defined]
    r = record_from_impl(FlashInferLikeImpl, **partial)
    assert r.lse.empty_row == "undefined"  # type: ignore[union-attr]


def test_bridge_fact_inherited_from_a_no_lse_default_is_not_trusted() -> None:
    class Base:
        can_return_lse_for_decode = False
        lse_base_on_e = True
        lse_empty_row = "-inf"  # a default of its day, like the base

    class Impl(Base):
        can_return_lse_for_decode = True
        lse_base_on_e = False

    facts = {k: v for k, v in FACTS.items() if k != "empty_row"}
    with pytest.raises(ContractError) as exc:
        record_from_impl(Impl, **facts)
    assert [f.field for f in exc.value.findings] == ["empty_row"]


def test_bridge_wrong_kind_of_fact_is_a_finding() -> None:
    with pytest.raises(ContractError) as exc:
        record_from_impl(FlashAttnImpl, **(FACTS | {"layout": "TH"}))
    assert exc.value.codes == [Code.AC012]
