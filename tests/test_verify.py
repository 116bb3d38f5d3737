"""The verifier infers what a kernel really returns and catches every kind of lie (AC008)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from attn_contracts import CapabilityRecord, Code, ContractError, get, validate_startup
from attn_contracts.backends.runner import verify_record
from attn_contracts.cli import main
from attn_contracts.judge import Observed, VerifyResult
from fixtures.records import good

TRUTH = {"returns": "lse", "base": "e", "layout": "token_head", "dtype": "float32",
         "empty_row": "-inf", "includes_sink": False}
DECODE = {"attention": "mha", "out_layout": "token_head_dim", "head_dims": [64],
          "q_dtypes": ["float32"], "q_len_gt_1": True}


def liar(adapter: str, **lse: object) -> CapabilityRecord:
    return CapabilityRecord.model_validate(good(
        name=f"liar.{adapter}", library="torch", adapter=f"fixtures.liars:{adapter}",
        lse=TRUTH | lse, decode=DECODE))


#: the test's own adapters: verifying a record that names one is allowed in so many words
LIARS = ["fixtures.liars"]


def verify(record: CapabilityRecord) -> VerifyResult[Observed]:
    return verify_record(record, allow_adapters=LIARS)


def test_a_record_naming_an_adapter_outside_the_allowlist_runs_nothing() -> None:
    """The trust boundary is the library's: by default only the built-in adapters run, through
    verify_record as through the startup probe (a record may come from a file)."""
    result = verify_record(liar("truthful"))
    assert result.status == "skipped" and "adapter not allowed" in result.reason
    assert result.findings == []
    with pytest.warns(RuntimeWarning, match="adapter not allowed"):
        validate_startup([liar("base2")], backend="liar.base2", world_size=2, probe=True)


def test_torch_reference_verifies_clean() -> None:
    result = verify_record(get("torch.sdpa_ref"))
    assert result.status == "match", result.findings
    obs = result.observed
    assert obs is not None
    assert (obs.base, obs.layout, obs.dtype, obs.empty_row) == ("e", "token_head", "float32",
                                                                "-inf")
    assert obs.out_buffer_honoured is True


def test_truthful_fake_matches() -> None:
    assert verify(liar("truthful")).status == "match"


@pytest.mark.parametrize(
    ("adapter", "field", "observed"),
    [
        ("base2", "lse.base", "2"),  # declares e, returns base 2
        ("head_token", "lse.layout", "head_token"),  # declares [T, H], returns [H, T]
        ("posinf_empty", "lse.empty_row", "+inf"),  # declares −inf empty rows, returns +inf
        ("bf16_lse", "lse.dtype", "bfloat16"),  # declares float32, returns bf16
        ("shifted", "lse.base", "neither"),  # lse + 0.5: no base fits
        ("scaled", "lse.base", "neither"),  # lse · 1.2: neither e nor 2
    ],
)
def test_each_lie_is_caught_naming_its_field(adapter: str, field: str, observed: str) -> None:
    result = verify(liar(adapter))
    assert result.status == "differs"
    assert [(f.code, f.field, f.found) for f in result.findings] == [(Code.AC008, field,
                                                                      observed)]


def test_the_fit_is_reported_for_a_shifted_lse() -> None:
    f = verify(liar("shifted")).findings[0]
    assert "+0.5000" in f.message and "1.0000" in f.message


def test_declaring_the_lie_makes_it_match() -> None:
    assert verify(liar("base2", base="2")).status == "match"
    assert verify(liar("head_token", layout="head_token")).status == "match"
    assert verify(liar("posinf_empty", empty_row="+inf")).status == "match"


def test_flipping_the_catalog_base_fails() -> None:
    flipped = get("torch.sdpa_ref").model_copy(
        update={"lse": get("torch.sdpa_ref").lse.model_copy(update={"base": "2"})})
    assert [f.field for f in verify_record(flipped).findings] == ["lse.base"]


def test_a_crashing_adapter_is_a_finding() -> None:
    result = verify(liar("broken"))
    assert result.status == "differs" and result.findings[0].field == "run"


def test_skips_are_explicit() -> None:
    assert "no adapter" in verify_record(get("flash_attn.fa2")).reason
    assert "returns no LSE" in verify_record(get("flashinfer.xqa")).reason
    fi = verify_record(get("flashinfer.mla.fa3"))
    assert fi.status == "skipped" and fi.reason.startswith("skipped:")


def test_startup_probe_catches_a_mis_declared_backend_quickly() -> None:
    start = time.perf_counter()
    assert validate_startup(backend="torch.sdpa_ref", world_size=2, probe=True) is not None
    assert time.perf_counter() - start < 5.0  # documented aim: < 1 s after warm-up
    with pytest.raises(ContractError) as exc:
        validate_startup([liar("base2")], backend="liar.base2", world_size=2, probe=True,
                         allow_adapters=LIARS)
    assert exc.value.codes == [Code.AC008]


# a records file is data: its adapters run only from modules the user allows (issue 12 §4)
ALLOW = ["--allow-adapter", "fixtures.liars"]


def _liars_file(tmp_path: Path) -> Path:
    f = tmp_path / "liars.json"
    f.write_text(json.dumps([liar(a).model_dump(mode="json") for a in
                             ("truthful", "base2", "head_token")]))
    return f


def test_cli_verify(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "torch.sdpa_ref"]) == 0
    assert "1 verified" in capsys.readouterr().out
    f = _liars_file(tmp_path)
    assert main(["verify", *ALLOW, "--file", str(f), "--all"]) == 1
    out = capsys.readouterr().out
    assert "AC008" in out and "DIFFERS" in out
    assert main(["verify", *ALLOW, "--file", str(f), "liar.truthful"]) == 0
    capsys.readouterr()
    assert main(["verify", *ALLOW, "--file", str(f), "--all", "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert [r["status"] for r in data["results"]] == ["match", "differs", "differs"]


def test_cli_verify_update_writes_the_observed_facts(tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    f = _liars_file(tmp_path)
    target = tmp_path / "observed.json"
    assert main(["verify", *ALLOW, "--file", str(f), "--all", "--update", str(target)]) == 1
    fixed = json.loads(target.read_text())
    assert {r["name"]: r["lse"]["base"] for r in fixed}["liar.base2"] == "2"
    assert {r["name"]: r["lse"]["layout"] for r in fixed}["liar.head_token"] == "head_token"
    assert all(r["verified"].startswith("attn-contracts verify") for r in fixed)
    assert main(["verify", *ALLOW, "--file", str(target), "--all"]) == 0  # the written facts verify
    assert main(["verify", *ALLOW, "--file", str(f), "--all", "--update", str(tmp_path / "x.toml")]) == 2


@pytest.mark.parametrize("argv", [["verify"], ["verify", "no.such"]])
def test_cli_verify_usage_errors(argv: list[str]) -> None:
    assert main(argv) == 2


# --- the empty-row probe: both facts of a zero-length request (issue 29) ------------------------
def test_the_probe_reads_both_empty_row_facts_of_the_torch_reference() -> None:
    result = verify(liar("truthful"))
    assert result.status == "match" and result.observed is not None
    e = result.observed.empty
    assert e is not None and (e.lse, e.out, e.buffer_honoured) == ("-inf", "zero", True)


@pytest.mark.parametrize(("adapter", "out"), [("never_writes_empty_out", "undefined"),
                                              ("writes_nan_empty_out", "nan")])
def test_an_output_declared_zero_that_is_not_written_zero_is_ac008(adapter: str, out: str) -> None:
    """The NaN fill alone cannot tell a row written NaN from one never written; the sentinel
    fill can."""
    result = verify(liar(adapter, empty_out="zero"))
    assert result.observed is not None and result.observed.empty is not None
    assert result.observed.empty.out == out
    assert [f.field for f in result.findings] == ["lse.empty_out"]
    assert result.findings[0].code is Code.AC008


def test_an_undefined_or_absent_output_is_no_broken_promise_only_a_note() -> None:
    undefined = verify(liar("never_writes_empty_out", empty_out="undefined"))
    assert undefined.status == "match" and undefined.notes == []
    absent = verify(liar("truthful"))  # TRUTH has no empty_out
    assert absent.status == "match"
    assert absent.notes and absent.notes[0].startswith("lse.empty_out: absent")


def test_a_kernel_that_refuses_a_zero_length_request_is_reported_not_failed() -> None:
    result = verify(liar("refuses_empty_rows", empty_row="undefined", empty_out="undefined"))
    assert result.status == "match", [f.render() for f in result.findings]
    e = result.observed.empty if result.observed else None
    assert e is not None and (e.lse, e.out, e.documented) == ("raised", "raised", False)
    assert any("raised" in n for n in result.notes)
