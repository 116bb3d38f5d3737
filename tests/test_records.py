"""The record model: the illegal states are unrepresentable and carry their codes."""

from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import ValidationError

from attn_contracts import CapabilityRecord, Code, LseSpec, NoLse
from attn_contracts.records import findings_from_validation_error
from fixtures.records import GOOD, good, without_base


def codes(data: dict) -> list[Code]:
    with pytest.raises(ValidationError) as exc:
        CapabilityRecord.model_validate(data)
    return [f.code for f in findings_from_validation_error(exc.value, data)]


def test_good_record_round_trips_and_is_hashable() -> None:
    r = CapabilityRecord.model_validate(GOOD)
    assert r.returns_lse and r.lse_base == "2" and r.supports_dcp
    assert r.decode_layout == "token_head_dim"
    assert CapabilityRecord.model_validate_json(r.model_dump_json()) == r
    assert len({r, CapabilityRecord.model_validate(GOOD)}) == 1
    assert r.fingerprint() == CapabilityRecord.model_validate(GOOD).fingerprint()


def test_missing_base_is_ac001_not_field_required() -> None:
    assert codes(without_base()) == [Code.AC001]
    with pytest.raises(ValidationError) as exc:
        LseSpec(layout="token_head", dtype="float32", empty_row="-inf", includes_sink=False)  # type: ignore[call-arg]
    assert exc.value.errors()[0]["type"] == "AC001"
    assert "field required" not in str(exc.value).lower()


def test_explicit_none_base_is_ac001() -> None:
    d = good()
    d["lse"]["base"] = None
    assert codes(d) == [Code.AC001]


def test_lse_details_without_lse_is_ac004() -> None:
    assert codes(good(lse={"returns": "none", "base": "e"})) == [Code.AC004]
    assert not CapabilityRecord.model_validate(good(lse={"returns": "none"})).returns_lse
    assert CapabilityRecord.model_validate(good(lse={"returns": "none"})).lse_base is None


@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(lambda d: d.update(typo=1), id="unknown-key"),
        pytest.param(lambda d: d["lse"].update(bsae="e"), id="typo-in-lse"),
        pytest.param(lambda d: d["lse"].update(base=2), id="base-as-number"),
        pytest.param(lambda d: d["lse"].update(base="10"), id="base-10"),
        pytest.param(lambda d: d["lse"].update(layout="tokens"), id="bad-layout"),
        pytest.param(lambda d: d["lse"].update(includes_sink="no"), id="bool-as-string"),
        pytest.param(lambda d: d["decode"].update(head_dims=["128"]), id="dim-as-string"),
        pytest.param(lambda d: d["decode"].update(head_dims=[]), id="no-head-dims"),
        pytest.param(lambda d: d.update(library_version="latest"), id="not-pep440"),
        pytest.param(lambda d: d.update(name="Bad Name"), id="bad-name"),
        pytest.param(lambda d: d["lse"].pop("returns"), id="no-tag"),
        pytest.param(lambda d: d["lse"].pop("empty_row"), id="no-empty-row"),
    ],
)
def test_schema_violations_are_ac012(mutate) -> None:  # type: ignore[no-untyped-def]
    d = good()
    mutate(d)
    assert set(codes(d)) == {Code.AC012}


def test_records_are_frozen() -> None:
    r = CapabilityRecord.model_validate(GOOD)
    with pytest.raises(ValidationError):
        r.name = "other"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        r.lse.base = "e"  # type: ignore[misc,union-attr]


def test_python_construction_accepts_sequences_as_tuples() -> None:
    r = CapabilityRecord.model_validate(good(decode={**GOOD["decode"], "head_dims": (64, 128)}))
    assert r.decode.head_dims == (64, 128)
    assert isinstance(NoLse(), NoLse)


@pytest.mark.parametrize("spec", ["", ">=0.2.8", "==0.7.*", ">=2.6,<3", "~=1.4.2", "==0.7.2.post1"])
def test_pep440_specifiers_accepted(spec: str) -> None:
    assert CapabilityRecord.model_validate(good(library_version=spec)).library_version == spec


def test_importing_the_contract_does_not_import_torch() -> None:
    code = "import attn_contracts, attn_contracts.cli, sys; assert 'torch' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True)


# --- one record model: a shared header, a role discriminator ------------------------------------
def test_both_roles_share_one_header_and_one_fingerprint() -> None:
    from attn_contracts.consumer import ConsumerRecord
    from attn_contracts.records import RecordHeader

    header = {"name", "role", "library", "library_version", "source", "evidence", "verified",
              "adapter"}
    for model in (CapabilityRecord, ConsumerRecord):
        assert issubclass(model, RecordHeader) and header <= set(model.model_fields)
        assert model.fingerprint is RecordHeader.fingerprint


def test_the_role_picks_the_model_and_old_documents_keep_loading() -> None:
    from attn_contracts.consumer import ConsumerRecord
    from attn_contracts.registry import Registry
    from attn_contracts.sources import parse_record

    consumer = Registry().consumer("vllm.merge_attn_states").model_dump(mode="json")
    for raw, model in ((GOOD, CapabilityRecord), (good(role="producer"), CapabilityRecord),
                       (consumer, ConsumerRecord)):
        recs, findings = parse_record(raw)
        assert findings == [] and type(recs[0]) is model
    assert CapabilityRecord.model_validate(GOOD).role == "producer"  # no role written: a producer
    recs, findings = parse_record(good(role="kernel"))
    assert recs == [] and [(f.code, f.field) for f in findings] == [(Code.AC012, "role")]
    recs, findings = parse_record(good(role="consumer"))  # a producer's fields under the wrong tag
    assert recs == [] and findings and all(f.code in (Code.AC001, Code.AC012) for f in findings)
