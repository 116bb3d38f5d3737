"""The lint CLI's conventions (issue 19 §3/§4, issue 20 §4): severities in every format, exit codes
that count errors, SARIF, --exit-zero, --statistics, --output-file, bounded --jobs."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from attn_contracts.findings import Severity
from attn_contracts.lint import lint_paths, main, worker_count

ENGINE = Path(__file__).parent / "fixtures" / "lint_engine"
#: the OASIS SARIF 2.1.0 schema (errata01, os), as oasis-tcs/sarif-spec publishes it in
#: sarif-2.1/schema/sarif-schema-2.1.0.json (commit e058381)
SARIF_SCHEMA = Path(__file__).parent / "fixtures" / "sarif-schema-2.1.0.json"


def validate_sarif(log: object) -> None:
    """Against the full official schema, with its ``uri``/``uri-reference`` formats checked
    (``rfc3986-validator``, of the dev extra: without it jsonschema skips them silently)."""
    checker = jsonschema.FormatChecker()
    assert {"uri", "uri-reference"} <= set(checker.checkers), "pip install rfc3986-validator"
    jsonschema.validate(log, json.loads(SARIF_SCHEMA.read_text()), format_checker=checker)


def test_severity_sets_the_exit_code(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # buggy: one error (AC002, the default contradicts the kernel) and one warning (AC003)
    assert main([str(ENGINE / "buggy")]) == 1
    out = capsys.readouterr().out
    assert " AC002 FlashInferMLAImpl" in out and " AC003 [warning] " in out
    # a warning alone exits 0, and 1 with --warnings-as-errors
    (tmp_path / "m.py").write_text("cp_lse_ag_out_rs(o, lse, g, is_lse_base_on_e=False)\n")
    assert main([str(tmp_path)]) == 0
    assert "[warning]" in capsys.readouterr().out
    assert main([str(tmp_path), "--warnings-as-errors"]) == 1
    assert main([str(ENGINE / "buggy"), "--exit-zero"]) == 0
    assert main([str(ENGINE / "fixed"), "--warnings-as-errors"]) == 0


def test_sarif_is_valid_sarif_2_1_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(ENGINE / "buggy"), "--format", "sarif"]) == 1
    log = json.loads(capsys.readouterr().out)
    validate_sarif(log)
    run = log["runs"][0]
    levels = {r["ruleId"]: r["level"] for r in run["results"]}
    assert levels == {"AC002": "error", "AC003": "warning"}
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    assert all(rules[r["ruleIndex"]] == r["ruleId"] for r in run["results"])
    region = run["results"][0]["locations"][0]["physicalLocation"]["region"]
    assert region == {"startLine": 8, "startColumn": 5}
    # a clean tree is still one valid log, with no results
    assert main([str(ENGINE / "fixed"), "--format", "sarif"]) == 0
    clean = json.loads(capsys.readouterr().out)
    validate_sarif(clean)
    assert clean["runs"][0]["results"] == []


def test_json_and_github_carry_the_severity(capsys: pytest.CaptureFixture[str]) -> None:
    main([str(ENGINE / "buggy"), "--format", "json"])
    assert {d["code"]: d["severity"] for d in json.loads(capsys.readouterr().out)} == {
        "AC002": "error", "AC003": "warning"}
    main([str(ENGINE / "buggy"), "--format", "github"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("::error ") and lines[1].startswith("::warning ")


def test_statistics_and_output_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for i in range(3):
        (tmp_path / f"m{i}.py").write_text(
            "cp_lse_ag_out_rs(o, lse, g, is_lse_base_on_e=False)\n"
            "x = getattr(impl, 'lse_base_on_e', True)\n" * (i + 1))
    assert main([str(tmp_path), "--statistics", "--select", "AC003,AC009"]) == 0
    rows = [r.split("\t") for r in capsys.readouterr().out.splitlines()]
    assert [(r[0].strip(), r[1], r[2]) for r in rows] == [("6", "AC003", "[warning]"),
                                                         ("6", "AC009", "[warning]")]
    report = tmp_path / "out" / "lint.sarif"
    report.parent.mkdir()
    assert main([str(tmp_path), "--format", "sarif", "--output-file", str(report),
                 "--warnings-as-errors"]) == 1
    assert capsys.readouterr().out == ""
    assert len(json.loads(report.read_text())["runs"][0]["results"]) >= 12
    assert main([str(tmp_path), "--output-file", str(tmp_path / "missing" / "x.txt")]) == 2


@pytest.mark.parametrize("jobs", ["0", "-1", "two", "1.5", ""])
def test_nonsense_jobs_is_a_usage_error(jobs: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(ENGINE / "fixed"), "--jobs", jobs]) == 2
    assert "--jobs" in capsys.readouterr().err


def test_never_more_workers_than_chunks_or_cpus(monkeypatch: pytest.MonkeyPatch,
                                               tmp_path: Path) -> None:
    import attn_contracts.lint as lint

    monkeypatch.setattr(lint, "default_jobs", lambda: 4)
    assert worker_count(40, 64) == 2  # 64 files are two chunks of 32
    assert worker_count(100_000, 10_000) == 4  # never more than the CPUs
    assert worker_count(3, 10) == 1  # one chunk: no pool at all
    assert worker_count(1, 10_000) == 1
    started: list[int] = []

    class Pool:
        def __init__(self, n: int, **_: object) -> None:
            started.append(n)

        def __enter__(self) -> Pool:
            return self

        def __exit__(self, *_: object) -> None:
            return None

        def map(self, fn, items, chunksize):  # type: ignore[no-untyped-def]
            return map(fn, items)

    monkeypatch.setattr(lint, "ProcessPoolExecutor", Pool)
    for i in range(64):
        (tmp_path / f"f{i}.py").write_text("x = 1\n")
    lint_paths([tmp_path], jobs=40)
    assert started == [2]


def test_every_lint_finding_has_a_severity_from_the_model() -> None:
    found = lint_paths([ENGINE / "buggy"])
    assert {f.code: f.severity for f in found} == {"AC002": Severity.ERROR,
                                                   "AC003": Severity.WARNING}
