"""attn_contracts.judge, the verifier's verdicts, through the pipeline that feeds it
(``backends.runner``): what a kernel really returns, and what a combine function really assumes,
each against its record — every kind of lie caught on the field that claims otherwise (AC008)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from attn_contracts import CapabilityRecord
from attn_contracts import Code
from attn_contracts import ContractError
from attn_contracts import get
from attn_contracts import validate_startup
from attn_contracts.backends.plan_consumers import plan_consumer_records
from attn_contracts.backends.runner import verify_consumer
from attn_contracts.backends.runner import verify_record
from attn_contracts.cli import main
from attn_contracts.consumer import ConsumerRecord
from attn_contracts.judge import ConsumerObserved
from attn_contracts.judge import LimitProbe
from attn_contracts.judge import Observed
from attn_contracts.judge import VerifyResult
from attn_contracts.judge import compare_consumer
from attn_contracts.judge import conservative_notes
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


def test_startup_probe_catches_a_mis_declared_backend_quickly(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # "quickly" is counted, not timed: the startup probe builds one small problem (a dozen keys)
    # and runs the kernel on it once, with no empty-row probe (the verifier's full run builds
    # several problems of ~80 keys)
    from attn_contracts.backends import kernel_probe

    built: list[list[int]] = []
    make = kernel_probe.make_problem

    def counted(*args: Any, **kwargs: Any) -> Any:
        built.append(list(kwargs["seq_lens"]))
        return make(*args, **kwargs)

    monkeypatch.setattr(kernel_probe, "make_problem", counted)
    assert validate_startup(backend="torch.sdpa_ref", world_size=2, probe=True) is not None
    assert len(built) == 1 and sum(built[0]) <= 12, built
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


# --- consumers: what a combine function assumes ----------------------------------------
FAKES = "fixtures.fake_consumers"
# What the truthful fake does: base e, [T, H], every marker empty, all-empty rows 0, 0·NaN = 0.
CONSUMER_TRUTH: dict[str, Any] = {
    "name": "fake.merge", "library": "fake", "source": "tests/fixtures/fake_consumers.py",
    "evidence": "measured", "base": {"kind": "fixed", "base": "e"},
    "lse": {"layouts": ["token_head"], "states": "first", "dtypes": ["float32"]},
    "empty": {"reads_as_empty": ["-inf", "+inf", "nan"], "all_empty": "zero",
              "zero_weight_nan_safe": True},
    "output": {"returns_lse": True, "lse_base": "input"},
}


def record(**changes: Any) -> ConsumerRecord:
    data = json.loads(json.dumps(CONSUMER_TRUTH))
    for key, value in changes.items():
        head, _, tail = key.partition("__")
        if tail:
            data[head][tail] = value
        else:
            data[head] = value
    return ConsumerRecord.model_validate(data)


def verify_fake(fake: str, rec: ConsumerRecord, **kw: Any) -> Any:
    return verify_consumer(rec, f"{FAKES}:{fake}", **kw)


def test_the_truthful_fake_matches_and_every_fact_is_observed() -> None:
    result = verify_fake("truthful", record())
    assert result.status == "match", [f.render() for f in result.findings]
    obs = result.observed
    assert obs is not None
    assert (obs.bases, obs.layouts, obs.reads_as_empty, obs.all_empty, obs.zero_weight_nan_safe,
            obs.returns_lse, obs.lse_base) == ({"": "e"}, ("token_head",),
                                               ("-inf", "+inf", "nan"), "zero", True, True, "e")
    assert obs.limit is None  # a CPU function: no launch-limit probe unless asked
    assert result.notes == []


@pytest.mark.parametrize(
    ("fake", "claim", "field", "found"),
    [
        ("base_e_kernel", {"base": {"kind": "fixed", "base": "2"}}, "base", "e"),
        ("token_head_reader", {"lse__layouts": ["head_token"]}, "lse.layouts", ["token_head"]),
        ("posinf_unsanitised", {}, "empty.reads_as_empty", ["-inf", "nan"]),
        ("zero_over_zero", {}, "empty.all_empty", "nan"),
        ("nan_leak", {}, "empty.zero_weight_nan_safe", False),
        ("no_lse_out", {}, "output.returns_lse", False),
        ("base2_kernel", {"base": {"kind": "fixed", "base": "2"}, "output__lse_base": "e"},
         "output.lse_base", "2"),
    ],
)
def test_each_failure_kind_is_caught_on_its_field(fake: str, claim: dict[str, Any], field: str,
                                                  found: Any) -> None:
    result = verify_fake(fake, record(**claim))
    assert result.status == "differs"
    assert [(f.code, f.field, f.found) for f in result.findings] == [(Code.AC008, field, found)]


def test_declaring_what_the_function_does_makes_it_match() -> None:
    assert verify_fake("base_e_kernel", record()).status == "match"
    assert verify_fake("head_token_reader", record(lse__layouts=["head_token"])).status == "match"
    assert verify_fake("posinf_unsanitised", record(empty__reads_as_empty=["-inf", "nan"])
                  ).status == "match"
    assert verify_fake("zero_over_zero", record(empty__all_empty="nan")).status == "match"
    assert verify_fake("nan_leak", record(empty__zero_weight_nan_safe=False)).status == "match"


def test_conservative_claims_are_notes_not_findings() -> None:
    result = verify_fake("truthful", record(empty__reads_as_empty=["-inf"], empty__all_empty="nan",
                                       empty__zero_weight_nan_safe=False))
    assert result.status == "match"
    assert [n.split(":")[0] for n in result.notes] == [
        "empty.reads_as_empty", "empty.all_empty", "empty.zero_weight_nan_safe"]
    assert verify_fake("zero_over_zero", record(empty__all_empty="undefined")).status == "match"


KEYWORD = {"kind": "keyword", "keyword": "is_lse_base_on_e",
           "values": {"True": "e", "False": "2"}, "default": "True"}


def test_a_keyword_base_is_observed_per_value_and_for_the_omission() -> None:
    result = verify_fake("keyword_base", record(base=KEYWORD))
    assert result.status == "match", [f.render() for f in result.findings]
    assert result.observed is not None
    assert result.observed.bases == {"True": "e", "False": "2", "": "e"}


def test_a_swapped_keyword_map_and_a_wrong_default_are_caught() -> None:
    swapped = dict(KEYWORD, values={"True": "2", "False": "e"})
    result = verify_fake("keyword_base", record(base=swapped))
    assert sorted((f.field, f.found) for f in result.findings) == [
        ("base.default", "e"), ("base.values.False", "2"), ("base.values.True", "e")]


def test_a_required_keyword_raises_when_omitted_and_that_is_no_finding() -> None:
    required = {"kind": "keyword", "keyword": "base", "values": {"'e'": "e", "'2'": "2"}}
    result = verify_fake("keyword_required", record(base=required))
    assert result.status == "match", [f.render() for f in result.findings]
    assert result.observed is not None
    assert result.observed.bases == {"'2'": "2", "'e'": "e", "": "raised"}
    assert result.notes == []


def test_a_crashing_function_and_a_bad_adapter_are_findings() -> None:
    result = verify_fake("broken", record())
    assert result.status == "differs" and [f.field for f in result.findings] == ["run"]
    assert "kernel launch failed" in result.reason
    for path in (f"{FAKES}:missing", "no_such_module_xyz:f", f"{FAKES}:not_an_adapter"):
        result = verify_consumer(record(), path)
        assert [f.field for f in result.findings] == ["adapter"], path


def test_no_adapter_is_skipped() -> None:
    result = verify_consumer(record(), None)
    assert result.status == "skipped" and not result.findings


def test_a_cuda_adapter_is_skipped_on_the_cpu() -> None:
    result = verify_consumer(record(), "attn_contracts.backends.flashinfer_merge:merge_states")
    assert result.status == "skipped"


def test_a_record_for_another_library_version_is_skipped() -> None:
    result = verify_fake("truthful", record(library="torch", library_version="<1"))
    assert result.status == "skipped" and "outside <1" in result.reason


@pytest.mark.parametrize("rec", plan_consumer_records(), ids=lambda r: r.name)
def test_the_projects_merge_plans_verify_clean(rec: ConsumerRecord) -> None:
    result = verify_consumer(rec, rec.adapter)
    assert result.status == "match", [f.render() for f in result.findings]
    assert result.notes == []


# --- the launch-limit probe (child processes; a fake that "fails to launch" above 512) ------------
def test_the_limit_probe_finds_the_bound_and_an_overclaiming_record_is_caught() -> None:
    result = verify_fake("limited", record(limits={"max_heads_x_head_dim": 1024}))
    limit = result.observed.limit if result.observed else None
    assert limit is not None
    assert (limit.head_dim, limit.max_ok, limit.min_failed) == (128, 4, 5)
    assert limit.launches <= 10
    assert "invalid configuration argument" in limit.detail
    assert [(f.field, f.found) for f in result.findings] == [("limits.max_heads_x_head_dim", 4)]


def test_the_limit_probe_matches_a_right_bound_and_needs_no_bisection() -> None:
    result = verify_fake("limited", record(limits={"max_heads_x_head_dim": 512}))
    assert result.status == "match", [f.render() for f in result.findings]
    assert result.observed is not None and result.observed.limit is not None
    assert result.observed.limit.launches == 3  # 4 ok, 8 fails; then 5 (the bound + 1) fails


def test_a_launch_that_kills_the_child_is_a_failure_there_not_here() -> None:
    result = verify_fake("crashing", record(limits={"max_heads_x_head_dim": 512}))
    limit = result.observed.limit if result.observed else None
    assert limit is not None and (limit.max_ok, limit.min_failed) == (4, 5)
    assert "exit code 134" in limit.detail
    assert result.status == "match"


def _observed(limit: LimitProbe | None) -> ConsumerObserved:
    return ConsumerObserved(bases={"": "2"}, layouts=("token_head",), out_error=0.0, errors={},
                            reads_as_empty=("-inf",), all_empty="zero",
                            zero_weight_nan_safe=False, returns_lse=True, lse_base="2",
                            limit=limit)


FLASHINFER_LIKE = record(base={"kind": "fixed", "base": "2"}, lse__states="separate",
                         empty__reads_as_empty=["-inf"], empty__zero_weight_nan_safe=False,
                         limits={"threads": {"max_threads": 1024, "vector_bytes": 16,
                                             "max_lanes_per_head": 32}})


def test_the_judge_reads_a_thread_limit_at_the_probed_head_dim() -> None:
    # bf16, head_dim 128: 16 lanes per head, so 64 heads fill 1024 threads
    right = _observed(LimitProbe(128, "bfloat16", 64, 65, 7, "RuntimeError: invalid config"))
    assert compare_consumer(FLASHINFER_LIKE, right) == []
    too_low = _observed(LimitProbe(128, "bfloat16", 32, 33, 9, "RuntimeError"))
    assert [f.field for f in compare_consumer(FLASHINFER_LIKE, too_low)] == ["limits.threads"]
    stricter = _observed(LimitProbe(128, "bfloat16", 128, 129, 9, ""))
    assert compare_consumer(FLASHINFER_LIKE, stricter) == []
    assert conservative_notes(FLASHINFER_LIKE, stricter)[0].startswith("limits.threads")
    no_limit = record(base={"kind": "fixed", "base": "2"}, lse__states="separate",
                      empty__reads_as_empty=["-inf"], empty__zero_weight_nan_safe=False)
    assert [f.field for f in compare_consumer(no_limit, right)] == ["limits"]


# --- the CLI ---------------------------------------------------------------------------------------
def consumer_file(tmp_path: Path, adapter: str | None) -> str:
    """A records file (JSON, with the ``consumer`` table a TOML file has) holding CONSUMER_TRUTH."""
    f = tmp_path / "consumers.json"
    f.write_text(json.dumps({"consumer": [CONSUMER_TRUTH | ({"adapter": adapter} if adapter else {})]}))
    return str(f)


def test_cli_verifies_the_projects_plans_clean(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--consumer", "attn_contracts.plan.merge"]) == 0
    out = capsys.readouterr().out
    assert "4 verified, 0 skipped, 0 finding(s)" in out
    assert main(["verify", "--consumer", "attn_contracts.plan.merge+base2", "--format",
                 "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] and [r["observed"]["bases"] for r in doc["results"]] == [{"": "2"}]


def test_cli_runs_record_named_code_only_when_allowed(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    f = consumer_file(tmp_path, "untrusted_pkg.adapters:run")
    assert main(["verify", "--consumer", "--all", "--file", f]) == 0  # nothing ran, no finding
    out = capsys.readouterr().out
    assert "skipped: adapter not allowed" in out and "--allow-adapter untrusted_pkg" in out
    # allowed: it runs (and the missing module is a finding, not a usage error)
    assert main(["verify", "--consumer", "--all", "--file", f, "--allow-adapter",
                 "untrusted_pkg"]) == 1
    assert "adapter" in capsys.readouterr().out


def test_cli_finding_and_user_named_adapter(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    f = consumer_file(tmp_path, f"{FAKES}:nan_leak")
    assert main(["verify", "--consumer", "fake.merge", "--file", f, "--allow-adapter",
                 "fixtures", "--format", "json"]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [x["field"] for x in doc["results"][0]["findings"]] == ["empty.zero_weight_nan_safe"]
    f = consumer_file(tmp_path, None)  # a declarative record; the user names the adapter
    assert main(["verify", "--consumer", "fake.merge", "--file", f, "--adapter",
                 f"{FAKES}:truthful"]) == 0
    capsys.readouterr()


def test_cli_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--consumer", "no.such.consumer"]) == 2
    assert "known:" in capsys.readouterr().err
    assert main(["verify", "--consumer"]) == 2
    assert main(["verify", "torch.sdpa_ref", "--adapter", f"{FAKES}:truthful"]) == 2
    capsys.readouterr()


def test_cli_a_device_that_is_not_there_is_a_usage_error(
        capsys: pytest.CaptureFixture[str]) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("CUDA is here")
    assert main(["verify", "--consumer", "attn_contracts.plan.merge", "--device", "cuda"]) == 2
    assert "no CUDA device" in capsys.readouterr().err
    assert main(["verify", "--consumer", "attn_contracts.plan.merge", "--device", "cuda",
                 "--skip-unavailable"]) == 0
    assert "4 skipped" in capsys.readouterr().out


def test_the_python_api_enforces_the_consumer_allowlist(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The trust boundary is the library's: verify_consumer() refuses a record-named adapter
    outside ``allow_adapters`` without importing anything, as verify_record() does."""
    marker = tmp_path / "imported"
    (tmp_path / "ac_untrusted_merge.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('x')\n"
        "def run(o, lse):\n    raise SystemExit(3)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    rec = record(adapter="ac_untrusted_merge:run")
    result = verify_consumer(rec, allow_adapters=["attn_contracts.backends"])
    assert result.status == "skipped" and "adapter not allowed" in result.reason
    assert not marker.exists()
    allowed = verify_consumer(rec, allow_adapters=["ac_untrusted_merge"])
    assert marker.exists()  # allowed: it runs, and what it raises is a finding, never the end
    assert allowed.status == "differs" and "SystemExit" in allowed.reason


def test_ctrl_c_in_an_adapter_ends_the_run(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The one exception policy: anything an adapter raises is a finding, except
    KeyboardInterrupt, which is the user stopping the run (at import and at run time)."""
    (tmp_path / "ac_interrupting_merge.py").write_text(
        "def run(o, lse):\n    raise KeyboardInterrupt\n")
    (tmp_path / "ac_interrupting_import.py").write_text(
        "raise KeyboardInterrupt\ndef run(o, lse):\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for adapter in ("ac_interrupting_merge:run", "ac_interrupting_import:run"):
        with pytest.raises(KeyboardInterrupt):
            verify_consumer(record(adapter=adapter), allow_adapters=[adapter.partition(":")[0]])


def test_one_result_type_for_both_ends() -> None:
    from attn_contracts.judge import ConsumerVerifyResult
    from attn_contracts.judge import VerifyResult

    result = verify_fake("truthful", record())
    assert isinstance(result, VerifyResult) and ConsumerVerifyResult.__origin__ is VerifyResult  # type: ignore[attr-defined]
