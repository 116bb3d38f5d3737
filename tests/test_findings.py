"""attn_contracts.findings: the closed code set, its rule table (the one place a code is described)
and what reads it (the README table, SARIF rule metadata, ``--statistics``)."""

from __future__ import annotations

import ast
import compileall
import json
import shutil
import subprocess
import sys
import tomllib
from dataclasses import FrozenInstanceError
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from attn_contracts import ContractError
from attn_contracts import record_from_impl
from attn_contracts.findings import RULES
from attn_contracts.findings import Code
from attn_contracts.findings import Finding
from attn_contracts.findings import Location
from attn_contracts.findings import Severity
from attn_contracts.findings import rules_markdown
from fixtures.engine_classes import FlashInferMLAImpl

ROOT = Path(__file__).resolve().parents[1]


def test_every_code_has_one_rule_in_code_order() -> None:
    assert list(RULES) == list(Code)
    assert all(r.code is c for c, r in RULES.items())
    assert all(r.title and r.meaning and r.fix for r in RULES.values())


def test_the_readme_code_table_is_generated_from_the_rules() -> None:
    """Regenerate with ``python tools/readme_rules.py``."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert rules_markdown() in readme, "README's code table is stale: python tools/readme_rules.py"
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "readme_rules.py"), "--check"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr


def test_the_readme_documents_every_finding_code() -> None:
    """New codes are appended to the closed enum and documented in the README's code table."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert [c for c in Code if f"| {c} |" not in readme] == []


def test_the_readme_check_fails_on_a_stale_table(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("# x\n<!-- rules:begin -->\n| old |\n<!-- rules:end -->\nafter\n")
    tool = [sys.executable, str(ROOT / "tools" / "readme_rules.py"), "--readme", str(readme)]
    assert subprocess.run([*tool, "--check"], capture_output=True, check=False).returncode == 1
    assert subprocess.run(tool, check=False).returncode == 0
    assert subprocess.run([*tool, "--check"], check=False).returncode == 0
    assert readme.read_text().endswith("<!-- rules:end -->\nafter\n")


def test_sarif_rule_metadata_comes_from_the_rules() -> None:
    from attn_contracts.lint import sarif

    f = Finding(Code.AC003, "s", "m", location=Location("a.py", 1, 1))
    (rule,) = sarif([f])["runs"][0]["tool"]["driver"]["rules"]  # type: ignore[index]
    r = RULES[Code.AC003]
    assert rule["shortDescription"]["text"] == r.title
    assert rule["fullDescription"]["text"] == r.meaning
    assert rule["help"]["text"] == r.fix
    assert rule["defaultConfiguration"]["level"] == "warning"
    assert rule["name"] == r.name == "literal-combine-base"


def test_statistics_name_each_code_by_its_title() -> None:
    from attn_contracts.lint import statistics

    line = statistics([Finding(Code.AC009, "s", "m", location=Location("a.py", 1, 1))])
    assert line.endswith(f"\tAC009\t[warning]\t{RULES[Code.AC009].title}")


def test_lint_imports_where_only_bytecode_is_installed(tmp_path: Path) -> None:
    """No source is read at import time: an install of ``.pyc`` files alone imports the linter
    (``lint/__init__.py`` used to parse the comments of ``findings.py`` with a regex)."""
    package = tmp_path / "attn_contracts"
    shutil.copytree(ROOT / "attn_contracts", package,
                    ignore=shutil.ignore_patterns("__pycache__"))
    assert compileall.compile_dir(package, legacy=True, quiet=1)
    for source in package.rglob("*.py"):
        source.unlink()
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import attn_contracts.lint as l; "
            "assert l.__file__.startswith(sys.argv[1]), l.__file__; "
            "from attn_contracts.findings import RULES; print(len(RULES))")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(len(Code))


# --- error_text -------------------------------------------------------------------------------
def test_an_exception_quoted_in_a_finding_is_bounded() -> None:
    from attn_contracts.findings import error_text

    text = error_text(ValueError("x" * 100_000))
    assert text.startswith("ValueError: xxx") and len(text) <= 300 and text.endswith("...")


# --- ContractError ----------------------------------------------------------------------------
def test_contract_error_pickles_for_cross_rank_reporting() -> None:
    import pickle

    with pytest.raises(ContractError) as exc:
        record_from_impl(FlashInferMLAImpl)
    again = pickle.loads(pickle.dumps(exc.value))
    assert again.codes == [Code.AC002] and str(again) == str(exc.value)


# --- a damaged rule table (issue 38, item 5) ----------------------------------------------------
_RULES_TOML = ROOT / "attn_contracts" / "rules.toml"


@pytest.mark.parametrize(("damage", "named"), [
    (lambda t: t.replace("[[rule]]", "[[rule]", 1), "not valid TOML"),
    (lambda t: t.replace('severity = "note"', 'severity = "fatal"', 1), "severity"),
    (lambda t: t.replace('code = "AC005"', 'code = "AC999"', 1), "AC999"),
    (lambda t: t[:t.index('[[rule]]\ncode = "AC032"')], "not one rule per code"),
    (lambda t: t[:t.index("[[rule]]")], "no [[rule]] tables"),
    (lambda t: "", "no [groups] table"),
    (lambda t: t.replace('groups = ["lint"]', 'groups = ["linter"]', 1), "linter"),
])
def test_a_damaged_rule_table_is_one_line_naming_the_file_and_the_problem(
        damage: Any, named: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from attn_contracts import findings
    from attn_contracts.cli import main
    from attn_contracts.lint import main as lint_main

    broken = tmp_path / "rules.toml"
    broken.write_text(damage(_RULES_TOML.read_text(encoding="utf-8")), encoding="utf-8")
    monkeypatch.setattr(findings, "_rules_file", lambda: broken)
    findings._load_rules.cache_clear()
    try:
        for run in (lambda: main(["schema"]), lambda: lint_main([str(tmp_path)])):
            assert run() == 2
            err = capsys.readouterr().err
            assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
            assert str(broken) in err and named in err
    finally:
        findings._load_rules.cache_clear()


def test_an_installed_copy_with_a_damaged_rule_table_says_so_in_one_line(tmp_path: Path) -> None:
    package = tmp_path / "attn_contracts"
    shutil.copytree(ROOT / "attn_contracts", package,
                    ignore=shutil.ignore_patterns("__pycache__"))
    (package / "rules.toml").write_text("[[rule]]\ncode = 1\n", encoding="utf-8")
    code = ("import sys; sys.path.insert(0, sys.argv[1]); from attn_contracts.cli import main; "
            "sys.exit(main(['lint', sys.argv[1]]))")
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True,
                          text=True, check=False)
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert str(package / "rules.toml") in done.stderr


# --- a finding's severity comes from the rule table (issue 38, item 8) -------------------------
def test_validate_reports_ac028_at_the_severity_the_rule_table_documents(
        capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from attn_contracts.cli import main

    rule = RULES[Code.AC028]
    unplanned = rule.escalations["unplanned-call"]  # issue 26: startup fails closed
    assert f"{unplanned.severity} (unplanned-call)" in (ROOT / "README.md").read_text()
    for call in ([], ["--call", "backend=auto"]):  # no call given; a call left to dispatch
        assert main(["validate", "--backend", "flashinfer.mla.trtllm_gen", *call,
                     "--format", "json"]) == 1
        found = json.loads(capsys.readouterr().out)["findings"]
        assert [(f["code"], f["severity"]) for f in found] == [("AC028", unplanned.severity)]


def _finding_calls() -> list[tuple[str, int, ast.Call]]:
    """Every call of ``Finding`` (or ``replace``) in the package: the file, the line, the call."""
    calls = []
    for path in sorted((ROOT / "attn_contracts").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] in (
                    "Finding", "replace"):
                calls.append((path.name, node.lineno, node))
    return calls


def test_no_call_gives_a_finding_its_severity() -> None:
    """The severity is the rule table's: no ``Finding(..., severity=...)`` and no
    ``replace(f, severity=...)`` anywhere in the package (nor ``**`` of a dict that holds one:
    the constructor refuses it)."""
    given = [(where, line) for where, line, call in _finding_calls()
             if any(k.arg == "severity" for k in call.keywords)]
    assert given == []


def test_every_escalation_a_finding_names_is_documented() -> None:
    """Each ``Finding(Code.X, ..., escalation="name")`` in the package names an escalation of
    its rule in rules.toml (the constructor would raise at run time, on a path a test may miss)."""
    unknown = []
    for where, line, call in _finding_calls():
        code = next((a.attr for a in call.args[:1] if isinstance(a, ast.Attribute)
                     and ast.unparse(a.value) == "Code"), None)
        escalation = next((k.value for k in call.keywords if k.arg == "escalation"), None)
        if code is None or not isinstance(escalation, ast.Constant) or escalation.value is None:
            continue
        if escalation.value not in RULES[Code(code)].escalations:
            unknown.append((where, line, code, escalation.value))
    assert unknown == []


def test_a_finding_takes_its_code_default_severity_from_the_rule_table() -> None:
    text = (ROOT / "attn_contracts" / "rules.toml").read_text(encoding="utf-8")
    table = {r["code"]: r for r in tomllib.loads(text)["rule"]}
    for code in Code:
        assert Finding(code, "s", "m").severity == table[code.value]["severity"]
    assert Finding(Code.AC003, "s", "m").severity is Severity.WARNING
    assert Finding(Code.AC029, "s", "m").severity is Severity.NOTE


def test_every_escalation_in_the_rule_table_gives_its_severity() -> None:
    text = (ROOT / "attn_contracts" / "rules.toml").read_text(encoding="utf-8")
    named = [(Code(r["code"]), name, e["severity"])
             for r in tomllib.loads(text)["rule"] for name, e in r.get("escalations", {}).items()]
    assert len(named) >= 10
    for code, name, severity in named:
        found = Finding(code, "s", "m", escalation=name)
        assert found.severity == severity and found.escalation == name
        assert Finding(code, "s", "m").escalated(name) == found
        assert found.escalated(None).severity is RULES[code].severity


def test_an_unknown_escalation_is_refused_naming_the_allowed_ones() -> None:
    with pytest.raises(ValueError, match=r"'louder'.*allowed: unplanned-call"):
        Finding(Code.AC028, "s", "m", escalation="louder")
    with pytest.raises(ValueError, match=r"'louder'.*allowed: none"):
        Finding(Code.AC000, "s", "m").escalated("louder")


def test_a_severity_cannot_be_given_or_replaced() -> None:
    f = Finding(Code.AC002, "s", "m", location=Location("a.py", 1, 1))
    with pytest.raises(TypeError, match="severity"):
        Finding(Code.AC002, "s", "m", severity=Severity.NOTE)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match="severity"):
        replace(f, severity=Severity.NOTE)
    with pytest.raises(FrozenInstanceError):
        f.severity = Severity.NOTE  # type: ignore[misc]
    moved = replace(f.escalated("confirmed"), location=Location("b.py", 2, 2))  # keeps its escalation
    assert moved.severity is Severity.NOTE and moved.location == Location("b.py", 2, 2)


def test_a_finding_reads_back_from_json_at_every_severity_its_rule_allows() -> None:
    for code, rule in RULES.items():
        for escalation in (None, *rule.escalations):
            f = Finding(code, "s", "m", escalation=escalation, hint="h", field="x", found=3,
                        allowed="a", location=Location("a.py", 1, 2))
            back = Finding.from_json(json.loads(json.dumps(f.to_json())))
            assert back == f and back.to_json() == f.to_json()
    data = Finding(Code.AC029, "s", "m").to_json()
    with pytest.raises(ValueError, match="AC029 cannot be severity 'error' \\(allowed: note"):
        Finding.from_json({**data, "severity": "error"})


def test_every_ac028_is_built_from_the_rule_table() -> None:
    """The AC028 sites are still found by the scan (``test_no_call_gives_a_finding_its_severity``
    then covers them): the default, or the escalation the rule table documents, named."""
    sites = [(where, line) for where, line, call in _finding_calls()
             if call.args and ast.unparse(call.args[0]) == "Code.AC028"]
    assert len(sites) >= 5


@given(st.text(), st.integers(min_value=0), st.integers(min_value=0))
def test_a_location_reads_back_as_written(path: str, line: int, col: int) -> None:
    """``str(Location)`` is ``path:line:col`` and parses back to the same place, whatever
    the path holds (colons and digits included)."""
    at = Location(path, line, col)
    assert str(at) == f"{path}:{line}:{col}"
    assert Location.parse(str(at)) == at
    assert Finding(Code.AC001, "s", "m", location=at).at == at


@pytest.mark.parametrize("text", ["a release's note", "a.py:1:x", "a.py:\u00b2", "a.py:07",
                                  "a.py:-1", "plugin p (m:f)"])
def test_text_that_names_no_line_is_a_unit_of_that_name(text: str) -> None:
    """Text that is no ``path:line[:col]`` as :class:`Location` writes it is a whole unit:
    no line is guessed from it, and it is written back as it came."""
    at = Location.parse(text)
    assert at == Location(text) and at.line is None and str(at) == text
    assert Finding(Code.AC001, "s", "m", location=at).at is None  # no point of a file


def test_empty_text_is_no_location() -> None:
    assert Location.parse("") is None
