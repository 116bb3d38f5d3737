"""The README's worked edge (examples/edge): a base-2 producer feeding a base-e consumer is caught
by validate (AC016), by lint (AC023 at the call) and, once someone declares the consumer base 2
to silence validate, by verify --consumer (AC008 on base)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attn_contracts.cli import main

EDGE = Path(__file__).resolve().parents[1] / "examples" / "edge"


def test_validate_catches_the_edge(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--no-builtin", "--file", str(EDGE / "contracts.toml"), "--backend",
                 "mylib.decode", "--world-size", "2", "--consumer", "mylib.merge",
                 "--format", "json"]) == 1
    found = json.loads(capsys.readouterr().out)["findings"]
    assert [(f["code"], f["field"]) for f in found] == [("AC016", "base"),
                                                         ("AC018", "empty.all_empty")]


def test_lint_catches_the_edge(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lint", str(EDGE), "--format", "json"]) == 1
    (f,) = json.loads(capsys.readouterr().out)
    assert (f["code"], Path(f["path"]).name, f["line"]) == ("AC023", "engine.py", 11)


def test_verify_catches_a_consumer_record_that_claims_the_producers_base(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    monkeypatch.syspath_prepend(str(EDGE))  # the example's adapter module, allowed by name
    assert main(["verify", "--consumer", "mylib.merge", "--file", str(EDGE / "claimed.json"),
                 "--allow-adapter", "adapters", "--format", "json"]) == 1
    (result,) = json.loads(capsys.readouterr().out)["results"]
    assert [f["field"] for f in result["findings"]] == ["base"]
