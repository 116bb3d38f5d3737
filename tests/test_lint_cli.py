"""The lint CLI's conventions (issue 19 §3/§4, issue 20 §4): severities in every format, exit codes
that count errors, SARIF, --exit-zero, --statistics, --output-file, bounded --jobs."""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import unquote
from urllib.parse import urlsplit

import jsonschema
import pytest

from attn_contracts.findings import Severity
from attn_contracts.lint import lint_paths
from attn_contracts.lint import main
from attn_contracts.lint import worker_count

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
    from attn_contracts.lint import driver

    monkeypatch.setattr(driver, "default_jobs", lambda: 4)
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

    monkeypatch.setattr(driver, "ProcessPoolExecutor", Pool)
    for i in range(64):
        (tmp_path / f"f{i}.py").write_text("x = 1\n")
    lint_paths([tmp_path], jobs=40)
    assert started == [2]


def test_every_lint_finding_has_a_severity_from_the_model() -> None:
    found = lint_paths([ENGINE / "buggy"])
    assert {f.code: f.severity for f in found} == {"AC002": Severity.ERROR,
                                                   "AC003": Severity.WARNING}


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


# --- SARIF URIs -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["with space.py", "hash#1.py", "per%cent.py", "what?.py",
                                  "naïve.py", "colon:x.py"])
def test_sarif_uris_are_valid_and_lead_back_to_the_file(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    inside, outside = tmp_path / "repo", tmp_path / "elsewhere"
    _write(inside, {f"sub dir/{name}": "assert i.supports_dcp\n"})
    _write(outside, {name: "assert i.supports_dcp\n"})
    monkeypatch.chdir(inside)
    assert main(["--warnings-as-errors", "--format", "sarif", "sub dir", str(outside)]) == 1
    log = json.loads(capsys.readouterr().out)
    validate_sarif(log)
    run = log["runs"][0]
    base = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert base.startswith("file:///") and base.endswith("/")
    files = []
    for result in run["results"]:
        loc = result["locations"][0]["physicalLocation"]["artifactLocation"]
        uri = loc["uri"] if "uriBaseId" not in loc else base + loc["uri"]
        assert loc.get("uriBaseId", "%SRCROOT%") == "%SRCROOT%"
        assert urlsplit(uri).scheme == "file"
        files.append(Path(unquote(urlsplit(uri).path)))
    assert sorted(files) == sorted([inside / "sub dir" / name, outside / name])
    relative = [r for r in run["results"]
                if "uriBaseId" in r["locations"][0]["physicalLocation"]["artifactLocation"]]
    assert len(relative) == 1  # the file below the working folder is relative to %SRCROOT%


# --- GitHub workflow commands -------------------------------------------------------------
def _unescape(value: str) -> str:
    for code, char in (("%3A", ":"), ("%2C", ","), ("%0D", "\r"), ("%0A", "\n"), ("%25", "%")):
        value = value.replace(code, char)
    return value


def test_github_annotations_escape_paths_and_messages(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = _write(tmp_path, {"a,b:c%d.py": "assert i.supports_dcp\n"}) / "a,b:c%d.py"
    assert main(["--warnings-as-errors", "--format", "github", str(target)]) == 1
    line = capsys.readouterr().out.strip()
    command, _, message = line[2:].partition("::")
    kind, _, props = command.partition(" ")
    # the runner's parser: properties split at ',', each at its first '='
    parsed = dict(p.split("=", 1) for p in props.split(","))
    assert set(parsed) == {"file", "line", "col", "title"}
    assert _unescape(parsed["file"]) == str(target)
    assert kind == "warning" or kind == "error"
    assert parsed["title"] == "AC011" and "\n" not in message


# --- columns are characters --------------------------------------------------------------
def test_columns_count_characters_in_every_format(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the assert is the 14th character and the 19th byte of the line
    f = _write(tmp_path, {"m.py": 'x = "ééééé"; assert i.supports_dcp\n'}) / "m.py"
    assert main([str(f), "--warnings-as-errors"]) == 1
    assert "m.py:1:14: AC011" in capsys.readouterr().out
    main([str(f), "--format", "json"])
    assert json.loads(capsys.readouterr().out)[0]["col"] == 14
    main([str(f), "--format", "github"])
    assert ",col=14," in capsys.readouterr().out
    main([str(f), "--format", "sarif"])
    region = json.loads(capsys.readouterr().out)["runs"][0]["results"][0]["locations"][0][
        "physicalLocation"]["region"]
    assert region == {"startLine": 1, "startColumn": 14}
    f.write_text('y = "ü"; z = "\n')  # unterminated string: SyntaxError counts characters already
    main([str(f)])
    assert "m.py:1:14: AC000" in capsys.readouterr().out


# --- no path or message forges output (issue 38, item 4) ----------------------------------------
FORGED = "x.py:1:1: AC001 forged\n\x1b[2K\u202eevil\rz.py"


@pytest.mark.parametrize("fmt", ["text", "github"])
def test_control_characters_in_a_path_are_escaped(
        fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = _write(tmp_path, {FORGED: "assert i.supports_dcp\n"}) / FORGED
    assert main(["--format", fmt, "--warnings-as-errors", str(target)]) == 1
    out = capsys.readouterr().out
    assert len(out.strip().splitlines()) == 1, out  # one finding, one line
    assert not {"\x1b", "\u202e", "\r"} & set(out)
    if fmt == "text":
        assert out.startswith(str(tmp_path)) and "\\n\\x1b[2K\\u202eevil\\rz.py:1:1: AC011" in out


def test_control_characters_in_a_validated_file_name_are_escaped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from attn_contracts.cli import main as cli

    f = _write(tmp_path, {"r\nAC000 ok.toml": "[[record]]\nname = 1\n"}) / "r\nAC000 ok.toml"
    assert cli(["validate", "--no-builtin", "--file", str(f)]) == 1
    out = capsys.readouterr().out
    assert all(line.startswith((str(tmp_path), "  ")) or "problem" in line
               for line in out.strip().splitlines()), out


# --- --select/--ignore by rule name and group (issue 39, item 7) --------------------------------
_TWO_RULES = "getattr(i, 'supports_dcp', False)\nassert i.supports_dcp\n"  # AC009, AC011


@pytest.mark.parametrize(("option", "found"), [
    (["--select", "assert-capability"], {"AC011"}),
    (["--select", "AC011"], {"AC011"}),
    (["--ignore", "Assert-Capability"], {"AC009"}),
    (["--select", "lint"], {"AC009", "AC011"}),
    (["--select", "LINT", "--ignore", "getattr-capability-default"], {"AC011"}),
    (["--select", "startup"], set()),  # the startup checks' rules: neither is one
    (["--select", "AC00,assert-capability"], {"AC009", "AC011"}),
])
def test_select_and_ignore_take_names_groups_and_prefixes(
        option: list[str], found: set[str], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path, {"m.py": _TWO_RULES})
    main([str(tmp_path / "m.py"), "--format", "json", *option])
    assert {f["code"] for f in json.loads(capsys.readouterr().out)} == found


def test_the_project_selects_by_name_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path, {"m.py": _TWO_RULES, "pyproject.toml":
                      '[tool.attn-contracts]\nselect = ["getattr-capability-default"]\n'})
    main([str(tmp_path / "m.py"), "--format", "json"])
    assert {f["code"] for f in json.loads(capsys.readouterr().out)} == {"AC009"}


def test_an_unknown_selector_names_every_code_name_and_group(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from attn_contracts.findings import RULES

    _write(tmp_path, {"m.py": _TWO_RULES})
    assert main([str(tmp_path / "m.py"), "--select", "asert-capability"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "asert-capability" in err
    assert all(r.code in err and r.name in err for r in RULES.values())
    assert "lint, startup, engine" in err


def test_every_rule_has_its_own_name_and_a_group() -> None:
    from attn_contracts.findings import RULES
    from attn_contracts.findings import rule_groups

    names = [r.name for r in RULES.values()]
    assert len(set(names)) == len(names) and all(names)
    assert set(rule_groups()) == {"lint", "startup", "engine"}
    assert all(r.groups and set(r.groups) <= set(rule_groups()) for r in RULES.values())


def test_statistics_refuses_a_format_it_would_ignore(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path, {"m.py": _TWO_RULES})
    assert main([str(tmp_path), "--statistics", "--format", "json"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "--format json" in err
