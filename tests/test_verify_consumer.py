"""The consumer verifier infers what a combine function assumes and catches each known failure kind
on the record field that claims otherwise (AC008)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from attn_contracts.backends.plan_consumers import plan_consumer_records
from attn_contracts.backends.runner import verify_consumer
from attn_contracts.cli import main
from attn_contracts.consumer import ConsumerRecord
from attn_contracts.findings import Code
from attn_contracts.judge import (
    ConsumerObserved,
    LimitProbe,
    compare_consumer,
    conservative_notes,
)

FAKES = "fixtures.fake_consumers"
# What the truthful fake does: base e, [T, H], every marker empty, all-empty rows 0, 0·NaN = 0.
TRUTH: dict[str, Any] = {
    "name": "fake.merge", "library": "fake", "source": "tests/fixtures/fake_consumers.py",
    "evidence": "measured", "base": {"kind": "fixed", "base": "e"},
    "lse": {"layouts": ["token_head"], "states": "first", "dtypes": ["float32"]},
    "empty": {"reads_as_empty": ["-inf", "+inf", "nan"], "all_empty": "zero",
              "zero_weight_nan_safe": True},
    "output": {"returns_lse": True, "lse_base": "input"},
}


def record(**changes: Any) -> ConsumerRecord:
    data = json.loads(json.dumps(TRUTH))
    for key, value in changes.items():
        head, _, tail = key.partition("__")
        if tail:
            data[head][tail] = value
        else:
            data[head] = value
    return ConsumerRecord.model_validate(data)


def verify(fake: str, rec: ConsumerRecord, **kw: Any) -> Any:
    return verify_consumer(rec, f"{FAKES}:{fake}", **kw)


def test_the_truthful_fake_matches_and_every_fact_is_observed() -> None:
    result = verify("truthful", record())
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
    result = verify(fake, record(**claim))
    assert result.status == "differs"
    assert [(f.code, f.field, f.found) for f in result.findings] == [(Code.AC008, field, found)]


def test_declaring_what_the_function_does_makes_it_match() -> None:
    assert verify("base_e_kernel", record()).status == "match"
    assert verify("head_token_reader", record(lse__layouts=["head_token"])).status == "match"
    assert verify("posinf_unsanitised", record(empty__reads_as_empty=["-inf", "nan"])
                  ).status == "match"
    assert verify("zero_over_zero", record(empty__all_empty="nan")).status == "match"
    assert verify("nan_leak", record(empty__zero_weight_nan_safe=False)).status == "match"


def test_conservative_claims_are_notes_not_findings() -> None:
    result = verify("truthful", record(empty__reads_as_empty=["-inf"], empty__all_empty="nan",
                                       empty__zero_weight_nan_safe=False))
    assert result.status == "match"
    assert [n.split(":")[0] for n in result.notes] == [
        "empty.reads_as_empty", "empty.all_empty", "empty.zero_weight_nan_safe"]
    assert verify("zero_over_zero", record(empty__all_empty="undefined")).status == "match"


KEYWORD = {"kind": "keyword", "keyword": "is_lse_base_on_e",
           "values": {"True": "e", "False": "2"}, "default": "True"}


def test_a_keyword_base_is_observed_per_value_and_for_the_omission() -> None:
    result = verify("keyword_base", record(base=KEYWORD))
    assert result.status == "match", [f.render() for f in result.findings]
    assert result.observed is not None
    assert result.observed.bases == {"True": "e", "False": "2", "": "e"}


def test_a_swapped_keyword_map_and_a_wrong_default_are_caught() -> None:
    swapped = dict(KEYWORD, values={"True": "2", "False": "e"})
    result = verify("keyword_base", record(base=swapped))
    assert sorted((f.field, f.found) for f in result.findings) == [
        ("base.default", "e"), ("base.values.False", "2"), ("base.values.True", "e")]


def test_a_required_keyword_raises_when_omitted_and_that_is_no_finding() -> None:
    required = {"kind": "keyword", "keyword": "base", "values": {"'e'": "e", "'2'": "2"}}
    result = verify("keyword_required", record(base=required))
    assert result.status == "match", [f.render() for f in result.findings]
    assert result.observed is not None
    assert result.observed.bases == {"'2'": "2", "'e'": "e", "": "raised"}
    assert result.notes == []


def test_a_crashing_function_and_a_bad_adapter_are_findings() -> None:
    result = verify("broken", record())
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
    result = verify("truthful", record(library="torch", library_version="<1"))
    assert result.status == "skipped" and "outside <1" in result.reason


@pytest.mark.parametrize("rec", plan_consumer_records(), ids=lambda r: r.name)
def test_the_projects_merge_plans_verify_clean(rec: ConsumerRecord) -> None:
    result = verify_consumer(rec, rec.adapter)
    assert result.status == "match", [f.render() for f in result.findings]
    assert result.notes == []


# --- the launch-limit probe (child processes; a fake that "fails to launch" above 512) ------------
def test_the_limit_probe_finds_the_bound_and_an_overclaiming_record_is_caught() -> None:
    result = verify("limited", record(limits={"max_heads_x_head_dim": 1024}))
    limit = result.observed.limit if result.observed else None
    assert limit is not None
    assert (limit.head_dim, limit.max_ok, limit.min_failed) == (128, 4, 5)
    assert limit.launches <= 10
    assert "invalid configuration argument" in limit.detail
    assert [(f.field, f.found) for f in result.findings] == [("limits.max_heads_x_head_dim", 4)]


def test_the_limit_probe_matches_a_right_bound_and_needs_no_bisection() -> None:
    result = verify("limited", record(limits={"max_heads_x_head_dim": 512}))
    assert result.status == "match", [f.render() for f in result.findings]
    assert result.observed is not None and result.observed.limit is not None
    assert result.observed.limit.launches == 3  # 4 ok, 8 fails; then 5 (the bound + 1) fails


def test_a_launch_that_kills_the_child_is_a_failure_there_not_here() -> None:
    result = verify("crashing", record(limits={"max_heads_x_head_dim": 512}))
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
    """A records file (JSON, with the ``consumer`` table a TOML file has) holding TRUTH."""
    f = tmp_path / "consumers.json"
    f.write_text(json.dumps({"consumer": [TRUTH | ({"adapter": adapter} if adapter else {})]}))
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
    from attn_contracts.judge import ConsumerVerifyResult, VerifyResult

    result = verify("truthful", record())
    assert isinstance(result, VerifyResult) and ConsumerVerifyResult.__origin__ is VerifyResult  # type: ignore[attr-defined]
