"""validate_startup and the engine-class bridge: every problem in one ContractError."""

from __future__ import annotations

import re

import pytest

from attn_contracts import (
    CapabilityRecord,
    Code,
    ContractError,
    Registry,
    record_from_impl,
    validate_startup,
)
from fixtures.records import GOOD, good, without_base


class AttentionImpl:  # the engine's base class, with the defaults of its day
    can_return_lse_for_decode = False
    lse_base_on_e = True


class FlashInferMLAImpl(AttentionImpl):  # the real bug: returns LSE, base only inherited
    can_return_lse_for_decode = True


class FixedFlashInferMLAImpl(AttentionImpl):
    can_return_lse_for_decode = True
    lse_base_on_e = False


class FlashAttnImpl(AttentionImpl):
    can_return_lse_for_decode = True
    lse_base_on_e = True


class FlashAttnVarlenImpl(FlashAttnImpl):  # inherits from a class that itself returns LSE: fine
    pass


#: the LSE facts engine classes do not carry; the bridge takes them as keywords, never as defaults
FACTS = {"layout": "token_head", "lse_dtype": "float32", "empty_row": "-inf",
         "includes_sink": False, "head_dims": (128,)}


def test_clean_registry_passes_and_returns_the_chosen_record() -> None:
    assert validate_startup() is None
    chosen = validate_startup(backend="flashinfer.mla.fa3", world_size=4)
    assert chosen is not None and chosen.lse_base == "2"


def test_missing_base_fails_at_startup_with_ac001() -> None:
    with pytest.raises(ContractError) as exc:
        validate_startup([GOOD, without_base(name="bad.one")])
    assert exc.value.codes == [Code.AC001]
    assert exc.value.findings[0].subject == "bad.one"
    assert exc.value.findings[0].field == "lse.base"


def test_every_problem_is_listed_at_once() -> None:
    no_lse = good(name="no.lse", lse={"returns": "none"})
    with pytest.raises(ContractError) as exc:
        validate_startup(
            [GOOD, GOOD | {"library": "changed"}, without_base(name="bad.one"),
             good(name="bad.two", lse={"returns": "none", "layout": "token_head"}), no_lse,
             FlashInferMLAImpl],
            backend="no.lse", world_size=2)
    assert sorted(exc.value.codes) == [Code.AC001, Code.AC002, Code.AC004, Code.AC005,
                                       Code.AC006]
    text = str(exc.value)
    assert "5 problem(s)" in text


def test_unknown_backend_is_ac013() -> None:
    with pytest.raises(ContractError) as exc:
        validate_startup(backend="flashinfer.mla.fa4")
    assert exc.value.codes == [Code.AC013]


def test_dcp_without_lse_is_ac006_and_world_size_one_is_fine() -> None:
    assert validate_startup(backend="flashinfer.xqa", world_size=1) is not None
    with pytest.raises(ContractError) as exc:
        validate_startup(backend="flashinfer.xqa", world_size=2)
    assert exc.value.codes == [Code.AC006]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_bad_world_size_is_a_value_error(bad: object) -> None:
    with pytest.raises(ValueError, match="world_size"):
        validate_startup(world_size=bad)  # type: ignore[arg-type]


def test_registry_and_record_backend_accepted() -> None:
    reg = Registry(builtin=False)
    reg.add(CapabilityRecord.model_validate(GOOD))
    rec = validate_startup(reg, backend="test.kernel", world_size=8)
    assert rec == CapabilityRecord.model_validate(GOOD)
    assert validate_startup([], backend=rec, world_size=2) is rec


def test_bad_file_path_is_ac000(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ContractError) as exc:
        validate_startup([tmp_path / "missing.toml"])
    assert exc.value.codes == [Code.AC000]


# --- the bridge ---------------------------------------------------------------------------------
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


def test_contract_error_pickles_for_cross_rank_reporting() -> None:
    import pickle

    with pytest.raises(ContractError) as exc:
        record_from_impl(FlashInferMLAImpl)
    again = pickle.loads(pickle.dumps(exc.value))
    assert again.codes == [Code.AC002] and str(again) == str(exc.value)


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


# --- one consumer lookup, the same in the API and the CLI -----------------------------------------
def _redefined_merge(tmp_path):  # type: ignore[no-untyped-def]
    """A records file whose consumer takes a built-in name with other facts (a fixed base e)."""
    from attn_contracts.registry import Registry

    raw = Registry().consumer("attn_contracts.merge").model_dump(mode="json")
    raw.pop("role")
    raw["base"] = {"kind": "fixed", "base": "e"}
    import json

    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"consumer": [raw]}))
    return path


def test_a_file_redefining_a_builtin_consumer_is_ac005_in_the_api_and_the_cli(
        tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    from attn_contracts.cli import main

    path = _redefined_merge(tmp_path)
    with pytest.raises(ContractError) as exc:
        validate_startup([path], backend=None, consumers=["attn_contracts.merge"])
    assert Code.AC005 in exc.value.codes
    assert main(["validate", "--file", str(path)]) == 1
    assert "AC005" in capsys.readouterr().out


def test_old_spellings_warn_through_one_helper() -> None:
    from attn_contracts.deprecation import AttnContractsDeprecationWarning

    with pytest.warns(AttnContractsDeprecationWarning, match="dcp_world_size"):
        assert validate_startup(backend="flashinfer.mla.fa3", dcp_world_size=2) is not None
    with pytest.warns(AttnContractsDeprecationWarning, match="settings"):
        validate_startup(settings={"x": 1})
    with pytest.raises(ValueError, match="extras"):
        validate_startup(settings={"x": 1}, extras={"x": 1})


@pytest.mark.parametrize("use", [("attn_contracts.merge",), ("attn_contracts.merge", 2), 3,
                                 ("attn_contracts.merge", "'2'", "extra")])
def test_a_consumer_use_of_another_shape_is_a_value_error_naming_it(use: object) -> None:
    """It used to be an unpacking ValueError or an AttributeError ('int' has no 'strip')."""
    with pytest.raises(ValueError, match=r"each use must be a name, a ConsumerRecord, or a .*"
                       r"found " + re.escape(repr(use))):
        validate_startup(backend="flashinfer.mla.fa3", world_size=2,
                         consumers=[use])  # type: ignore[list-item]


def test_consumers_given_as_a_generator_still_join_the_consensus(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The uses are read twice (edge checks, then the ranks' consensus): a generator used to be
    empty the second time, so the ranks agreed on no consumers at all."""
    import attn_contracts.consensus as consensus

    seen: dict[str, object] = {}

    def agree(findings, recs, chosen, world, *, group, timeout_s, settings, collective=None):  # type: ignore[no-untyped-def]
        seen.update(settings)
        return findings

    monkeypatch.setattr(consensus, "agree_across_ranks", agree)
    uses = (u for u in [("attn_contracts.merge", "'2'")])
    assert validate_startup(backend="flashinfer.mla.fa3", world_size=2, consumers=uses,
                            group=object()) is not None
    assert seen["consumers"] == ["attn_contracts.merge='2'"]
