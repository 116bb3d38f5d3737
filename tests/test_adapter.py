"""attn_contracts.backends.adapter: what a file names never runs unasked; an adapter is a function
defined in an allowed module (never one it imports), and one that exits ends nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attn_contracts.cli import main
from fixtures.adapters import marker_module
from fixtures.adapters import record_with_adapter
from fixtures.cli import write


@pytest.mark.parametrize("adapter", ["os:system", "builtins:print", "sys:exit", "json:loads"])
def test_a_file_adapter_is_not_run_unless_allowed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], adapter: str) -> None:
    f = write(tmp_path, "r.json", json.dumps([record_with_adapter(adapter)]))
    assert main(["verify", "--file", str(f)]) == 0  # a skip, not a finding: nothing ran
    out = capsys.readouterr().out
    assert "adapter not allowed" in out and "0 verified, 1 skipped" in out
    assert f"--allow-adapter {adapter.partition(':')[0]}" in out


def test_a_local_module_named_by_a_file_is_never_imported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    marker = marker_module(tmp_path, monkeypatch, "ac_local_adapter")
    f = write(tmp_path, "r.json", json.dumps([record_with_adapter("ac_local_adapter:run")]))
    assert main(["verify", "--file", str(f), "--all"]) == 0
    assert not marker.exists()
    assert "adapter not allowed" in capsys.readouterr().out


def test_an_allowed_adapter_that_exits_ends_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    marker = marker_module(tmp_path, monkeypatch, "ac_exit_adapter")
    marker_import = marker_module(tmp_path, monkeypatch, "ac_exit_at_import", "sys.exit(4)")
    f = write(tmp_path, "r.json", json.dumps([
        record_with_adapter("ac_exit_adapter:run", "exit.at-run"),
        record_with_adapter("ac_exit_at_import:run", "exit.at-import"),
        record_with_adapter("sys:exit", "exit.sys"),
    ]))
    argv = ["verify", "--file", str(f), "--allow-adapter", "ac_exit_adapter",
            "--allow-adapter", "ac_exit_at_import", "--allow-adapter", "sys"]
    assert main(argv) == 1  # every record reported, each a finding: none of them ran to the end
    out = capsys.readouterr().out
    assert marker.exists() and marker_import.exists()
    assert "SystemExit" in out and "0 verified, 0 skipped, 3 could not run, 3 finding(s)" in out


def test_allow_adapter_names_a_module_and_its_submodules() -> None:
    from attn_contracts.backends.adapter import adapter_allowed

    assert adapter_allowed("mylib.attn:decode", ["mylib"])
    assert adapter_allowed("mylib:decode", ["mylib"])
    assert not adapter_allowed("mylibrary:decode", ["mylib"])
    assert not adapter_allowed("os:system", ["attn_contracts.backends"])


def test_the_catalog_adapters_still_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "torch.sdpa_ref"]) == 0
    assert "1 verified" in capsys.readouterr().out


@pytest.mark.parametrize("adapter", [
    "attn_contracts.backends.combine_probe:subprocess.run",  # an attribute chain into an import
    "attn_contracts.backends.adapter:importlib.import_module",
    "attn_contracts.backends.combine_probe:subprocess",  # a module, not a function
    "attn_contracts.backends.combine_probe:merge_reference",  # imported from the combine
    "attn_contracts.backends.runner:warnings",
])
def test_an_allowed_module_does_not_lend_its_imports(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        adapter: str) -> None:
    import subprocess as sp

    called: list[object] = []
    monkeypatch.setattr(sp, "run", lambda *a, **k: called.append(a))  # if reached, recorded
    raw = {"name": "evil.merge", "library": "evil", "source": "s", "evidence": "measured",
           "adapter": adapter, "base": {"kind": "keyword", "keyword": "shell",
                                        "values": {"True": "e"}, "default": "True"},
           "lse": {"layouts": ["token_head"], "states": "first", "dtypes": ["float32"]},
           "empty": {"reads_as_empty": ["-inf"], "all_empty": "zero",
                     "zero_weight_nan_safe": True},
           "output": {"returns_lse": False}}
    f = write(tmp_path, "c.json", json.dumps({"consumer": [raw]}))
    assert main(["verify", "--consumer", "--all", "--file", str(f)]) == 1
    out = capsys.readouterr().out
    assert not called and "adapter" in out and "AC008" in out
    producer = write(tmp_path, "p.json", json.dumps([record_with_adapter(adapter)]))
    assert main(["verify", "--file", str(producer)]) == 1
    assert not called
