"""bench/lint_probes.py: Python probes read by the lint, Python itself the reference."""

from __future__ import annotations

from pathlib import Path

import pytest

from fixtures.bench import load

lp = load("lint_probes")


def test_every_probe_is_a_program_whose_expression_python_answers_with_a_bool() -> None:
    probes = lp.load()
    assert len(probes) >= 200
    assert len({p["name"] for p in probes}) == len(probes)
    answers = [lp.reference(p["module"], p["told"]) for p in probes]
    assert all(isinstance(a, bool) for a in answers)
    assert 0.3 < sum(answers) / len(answers) < 0.7  # both answers, about as often


@pytest.mark.parametrize(("python", "codes", "verdict"), [
    (True, {("AC023", "error")}, "read"),
    (False, set(), "read"),
    (False, {("AC003", "note")}, "read"),
    (True, {("AC035", "warning")}, "not read"),
    (False, {("AC035", "warning")}, "not read"),
    (False, {("AC023", "error")}, "wrong"),  # a false error
    (True, {("AC003", "note")}, "wrong"),  # a silent miss
])
def test_a_probe_is_read_not_read_or_wrong(python: bool, codes: set[tuple[str, str]],
                                           verdict: str) -> None:
    assert lp.judge(python, codes) == verdict


@pytest.mark.parametrize("name", ["for-else skipped after break",
                                  "list alias append is visible through original name"])
def test_a_probe_runs_end_to_end(name: str, tmp_path: Path) -> None:
    probe = next(p for p in lp.load() if p["name"] == name)
    python = lp.reference(probe["module"], probe["told"])
    codes = lp.lint_probe(tmp_path / "p", probe["module"], probe["told"])
    assert lp.judge(python, codes) == "read", (python, codes)
