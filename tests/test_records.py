"""The record model: the illegal states are unrepresentable and carry their codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from attn_contracts import CapabilityRecord
from attn_contracts import Code
from attn_contracts import LseSpec
from attn_contracts import NoLse
from attn_contracts import sources
from attn_contracts.cli import main
from attn_contracts.records import findings_from_validation_error
from attn_contracts.sources import parse_record
from fixtures.cli import one_line_usage_error
from fixtures.cli import write
from fixtures.records import GOOD
from fixtures.records import good
from fixtures.records import without_base


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


def test_a_consumer_without_a_base_is_told_about_its_own_base_field() -> None:
    """AC001 of a consumer record read as the producer's ("no lse.base", "declare lse.base"),
    a field consumer records do not have."""
    from attn_contracts.sources import parse_record

    _, findings = parse_record({"role": "consumer", "name": "a.b"})
    (ac001,) = [f for f in findings if f.code is Code.AC001]
    assert ac001.field == "base" and "a consumer record declares no base" in ac001.message
    assert "lse.base" not in ac001.message + ac001.hint and "verify --consumer" in ac001.hint


# --- the JSON schema is as strict as the models; no Infinity/NaN in a record or JSON output ---
CONSUMER: dict[str, object] = {
    "role": "consumer", "name": "test.merge", "library": "vllm", "source": "tests",
    "evidence": "read_from_code", "base": {"kind": "fixed", "base": "e"},
    "lse": {"layouts": ["token_head"], "states": "separate", "dtypes": ["float32"]},
    "empty": {"reads_as_empty": ["-inf"], "all_empty": "zero", "zero_weight_nan_safe": True},
    "output": {"returns_lse": True, "lse_base": "e"},
}


def _consumer(**top: object) -> dict[str, object]:
    return json.loads(json.dumps({**CONSUMER, **top}))


def _mutated(base: dict[str, object], path: str, value: object) -> dict[str, object]:
    """A deep copy of ``base`` with ``path`` ("lse.base") set to ``value`` (or removed: DROP)."""
    d = json.loads(json.dumps(base))
    *parents, key = path.split(".")
    node = d
    for p in parents:
        node = node[p]
    if value is DROP:
        del node[key]
    else:
        node[key] = value
    return d


DROP = object()


_LSE = good()["lse"]


PRODUCER_CASES = [
    ("typo", DROP), ("lse.bsae", "e"), ("lse.base", 2), ("lse.base", "10"), ("lse.base", None),
    ("lse.base", DROP), ("lse.layout", "tokens"), ("lse.includes_sink", "no"),
    ("decode.head_dims", ["128"]), ("decode.head_dims", []), ("decode.head_dims", [128.5]),
    ("decode.head_dims", [0]), ("decode.head_dims", [True]), ("library_version", "latest"),
    ("library_version", "banana"), ("library_version", ">=1.2,<2"), ("library_version", "==0.7.*"),
    ("library_version", "~=1.4.2"), ("library_version", ">=0.2.8RC1"), ("library_version", ""),
    ("name", "Bad Name"), ("lse.returns", DROP), ("lse.empty_row", DROP), ("lse", {}),
    ("lse", {"returns": "none"}), ("lse", {"returns": "none", "base": "e"}),
    ("lse", {k: v for k, v in _LSE.items() if k != "returns"}), ("lse.padded_heads", 0),
    ("decode.min_compute_capability", "9"), ("adapter", "not an adapter"), ("verified", 3),
    ("calls", [{"function": "f", "when": {"return_lse": True}}]),
    ("calls", [{"function": "f", "when": {"return_lse": "True"}}]),
]


CONSUMER_CASES = [
    ("role", DROP), ("base", DROP), ("base", {"base": "e"}), ("base.kind", "keyword"),
    ("base", {"kind": "keyword", "keyword": "is_e", "values": {"True": "e"}}),
    ("base", {"kind": "keyword", "keyword": "is_e", "values": {}}),
    ("base", {"kind": "keyword", "keyword": "is_e", "values": {"True": "10"}}),
    ("output", {"returns_lse": True}), ("output", {"returns_lse": False}),
    ("output", {"returns_lse": False, "lse_base": "e"}), ("output", {"returns_lse": True,
                                                                     "lse_base": "input"}),
    ("lse.states", "third"), ("lse.layouts", []), ("empty.reads_as_empty", ["zero"]),
    ("library_version", "latest"), ("limits", {"max_states": 0}), ("limits", {"head_dims": [64]}),
]


# What JSON Schema cannot say: 128.0 is an integer to it (draft 2020-12, 6.1.1), and a keyword
# base's default must be one of its values' keys. The models refuse both; `schema` says so.
SCHEMA_GAPS = [
    ("producer", _mutated(good(), "decode.head_dims", [128.0])),
    ("consumer", _mutated(CONSUMER, "base", {"kind": "keyword", "keyword": "is_e",
                                             "values": {"True": "e"}, "default": "False"})),
]


def _schema_validator(role: str) -> object:
    jsonschema = pytest.importorskip("jsonschema")
    from attn_contracts.cli.catalog import record_schema

    schema = record_schema(role)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _accepted(raw: dict[str, object]) -> bool:
    recs, findings = sources.parse_record(raw)
    return bool(recs) and not findings


def _cases() -> list[tuple[str, dict[str, object]]]:
    out = [("producer", _mutated(good(), p, v) if p != "typo" else good(typo=1))
           for p, v in PRODUCER_CASES]
    out += [("consumer", _mutated(CONSUMER, p, v)) for p, v in CONSUMER_CASES]
    return [*out, ("producer", good()), ("consumer", _consumer())]


@pytest.mark.parametrize("role,raw", _cases())
def test_the_schema_accepts_exactly_what_the_models_accept(role: str,
                                                           raw: dict[str, object]) -> None:
    validator = _schema_validator(role)
    assert validator.is_valid(raw) == _accepted(raw), (  # type: ignore[attr-defined]
        [e.message for e in validator.iter_errors(raw)])  # type: ignore[attr-defined]


@pytest.mark.parametrize("role,raw", SCHEMA_GAPS)
def test_the_documented_schema_gaps(role: str, raw: dict[str, object]) -> None:
    assert _schema_validator(role).is_valid(raw) and not _accepted(raw)  # type: ignore[attr-defined]


def test_every_catalog_record_and_consumer_fits_the_schema() -> None:
    from attn_contracts.registry import Registry

    reg = Registry()
    producer, consumer = _schema_validator("producer"), _schema_validator("consumer")
    for r in reg.records():
        assert producer.is_valid(r.model_dump(mode="json")), r.name  # type: ignore[attr-defined]
    for c in reg.consumers():
        assert consumer.is_valid(c.model_dump(mode="json")), c.name  # type: ignore[attr-defined]
    assert consumer.is_valid(_consumer())  # type: ignore[attr-defined]


def test_schema_prints_either_role(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--role", "consumer"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert "role" in schema["required"] and "KeywordBase" in schema["$defs"]
    assert main(["schema"]) == 0
    assert "LseSpec" in json.loads(capsys.readouterr().out)["$defs"]


NON_FINITE_TOML = """
[[record]]
name = "x.nonfinite"
library = "x"
source = "s"
evidence = "measured"
lse = { returns = "lse", base = "2", layout = "token_head", dtype = "float32", empty_row = "-inf", includes_sink = false, padded_heads = inf }
decode = { attention = "mha", out_layout = "token_head_dim", head_dims = [nan], q_dtypes = ["bfloat16"], q_len_gt_1 = false }
"""


def _strict_json(text: str) -> object:
    def refuse(name: str) -> object:
        raise AssertionError(f"{name} printed: not JSON")

    return json.loads(text, parse_constant=refuse)


def test_non_finite_numbers_are_refused_and_never_printed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = write(tmp_path, "records.toml", NON_FINITE_TOML)
    assert main(["validate", "--no-builtin", "--file", str(f), "--format", "json"]) == 1
    doc = _strict_json(capsys.readouterr().out)
    fields = {x["field"] for x in doc["findings"]}  # type: ignore[index]
    assert {"lse.padded_heads", "decode.head_dims.0"} <= fields
    assert main(["lint", str(f), "--format", "json"]) == 1
    assert _strict_json(capsys.readouterr().out)
    bad_json = write(tmp_path, "r.json", '[{"name": "x.y", "padded_heads": Infinity}]')
    line = one_line_usage_error(capsys, ["validate", "--file", str(bad_json)])
    assert "Infinity is not a JSON value" in line


# --- empty rows: what the LSE holds (lse.empty_row) and what the output holds (lse.empty_out) ---
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
    assert [f.code for f in findings] == [Code.AC012] and findings[0].field == "lse.empty_out"


def test_no_lse_and_an_output_fact_is_ac004() -> None:
    _, findings = parse_record(good(lse={"returns": "none", "empty_out": "zero"}))
    assert [f.code for f in findings] == [Code.AC004]


def test_the_schema_has_the_output_fact() -> None:
    schema = CapabilityRecord.model_json_schema()
    spec = schema["$defs"]["LseSpec"]["properties"]["empty_out"]
    assert {"zero", "nan", "undefined"} <= {v for a in spec["anyOf"] for v in a.get("enum", [])}
