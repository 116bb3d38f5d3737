"""Every CLI command through main(), checking the return code (0 clean, 1 findings, 2 usage/I-O)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from attn_contracts.cli import main
from fixtures.cli import one_line_usage_error
from fixtures.cli import write
from fixtures.records import NO_BASE_TOML
from fixtures.records import good
from fixtures.records import without_base


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    out = capsys.readouterr().out
    assert "flashinfer.mla.fa3+basee" in out and "torch.sdpa_ref" in out


def test_show_round_trips_through_validate(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "flashinfer.mla.fa2"]) == 0
    text = capsys.readouterr().out
    assert json.loads(text)["lse"]["base"] == "2"
    f = tmp_path / "r.json"
    f.write_text(text)
    assert main(["validate", "--no-builtin", "--file", str(f)]) == 0
    assert main(["validate", "--file", str(f)]) == 0  # identical to the catalog's: no AC005


def test_show_unknown_is_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "nope"]) == 2
    assert "flashinfer.mla.fa3" in capsys.readouterr().err


def test_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert "lse" in schema["properties"] and "LseSpec" in schema["$defs"]
    assert "base" in schema["$defs"]["LseSpec"]["required"]


@pytest.mark.parametrize("fmt", ["md", "json"])
def test_matrix(fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["matrix", "--format", fmt]) == 0
    out = capsys.readouterr().out
    if fmt == "md":
        assert out.startswith("| record |") and "`flash_attn.fa2`" in out
    else:
        assert {r["name"] for r in json.loads(out)} >= {"flash_attn.fa2", "cutlass.mla"}


BAD_TOML = NO_BASE_TOML


def test_validate_file_without_base_exits_1_naming_ac001(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(BAD_TOML)
    assert main(["validate", "--file", str(f)]) == 1
    out = capsys.readouterr().out
    assert "AC001" in out and "my.kernel" in out and "lse.base" in out
    assert main(["validate", "--file", str(f), "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["ok"] is False
    assert [(x["code"], x["subject"], x["field"]) for x in data["findings"]] == [
        ("AC001", "my.kernel", "lse.base")]


def test_validate_clean_catalog_and_dcp(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate"]) == 0
    assert main(["validate", "--backend", "flashinfer.mla.fa3", "--world-size", "4"]) == 0
    assert main(["validate", "--backend", "flashinfer.trtllm_gen", "--world-size", "4"]) == 1
    assert "AC006" in capsys.readouterr().out
    # an unknown name on the command line is a usage error (exit 2, one line on stderr), as in
    # show, plan and verify (not exit 1 with the finding on stdout)
    assert main(["validate", "--backend", "no.such", "--world-size", "2"]) == 2
    assert "AC013" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [
    ["validate", "--file", "/nonexistent/records.toml"],
    ["validate", "--world-size", "4"],
    ["validate", "--format", "yaml"],
    ["frobnicate"],
    [],
])
def test_usage_and_io_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2


def test_malformed_file_is_one_line_exit_2(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "broken.toml"
    f.write_text("[[record]\nname = ")
    assert main(["validate", "--file", str(f)]) == 2
    err = capsys.readouterr().err
    assert "not valid TOML" in err and "Traceback" not in err
    j = tmp_path / "broken.json"
    j.write_text("{")
    assert main(["validate", "--file", str(j)]) == 2


def test_validate_all_plugins_with_bad_plugin_exits_1(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "acbad.py").write_text(f"BAD = {without_base(name='plugin.nobase')!r}\n")
    dist = tmp_path / "acbad-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: acbad\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[attn_contracts.backends]\nbad = acbad:BAD\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["validate", "--all-plugins"]) == 1
    out = capsys.readouterr().out
    assert "AC001" in out and "plugin.nobase" in out
    assert main(["validate", "--plugins", "bad"]) == 1
    assert main(["validate", "--plugins", "other"]) == 1
    assert "AC014" in capsys.readouterr().out


def test_version_has_one_source(capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.metadata
    import tomllib

    import attn_contracts

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"attn-contracts {attn_contracts.__version__}"
    assert importlib.metadata.version("attn-contracts") == attn_contracts.__version__
    with (Path(__file__).resolve().parents[1] / "pyproject.toml").open("rb") as f:
        project = tomllib.load(f)["project"]
    assert "version" not in project and "version" in project["dynamic"]  # no second copy


def test_show_displays_consumer_records_that_validate_reads_back(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", "vllm.merge_attn_states"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["role"] == "consumer" and doc["name"] == "vllm.merge_attn_states"
    f = tmp_path / "c.json"
    f.write_text(json.dumps(doc))
    assert main(["validate", "--file", str(f)]) == 0  # identical to the catalog's: no AC005


def test_the_readme_catalog_is_what_matrix_generates(capsys: pytest.CaptureFixture[str]) -> None:
    """The README says its tables are generated by `attn-contracts matrix`: keep them so
    (regenerate: paste the output of `attn-contracts matrix` over the two tables)."""
    assert main(["matrix"]) == 0
    generated = capsys.readouterr().out.rstrip("\n")
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text()
    assert generated in readme, "README's catalog tables are stale: regenerate them"


@pytest.mark.parametrize("flag", [["--mode", "a2a"], ["--sink"], ["--row-mask"], ["--return-lse"],
                                  ["--lse-out-base", "e"], ["--out-dtype", "float16"]])
def test_a_setting_flag_without_the_setting_is_a_usage_error(
        flag: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """Without --num-heads/--head-dim there is no setting to check: such a flag used to be
    dropped and "ok" printed (``--mode a2a --world-size 3`` passed; with 16 heads it is AC010)."""
    argv = ["validate", "--backend", "flashinfer.mla.fa3", "--world-size", "3", *flag]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and flag[0] in err and "--num-heads and --head-dim" in err
    assert main([*argv, "--num-heads", "16", "--head-dim", "512"]) in (0, 1)
    assert main(["validate", "--backend", "flashinfer.mla.fa3", "--world-size", "3", "--mode",
                 "a2a", "--num-heads", "16", "--head-dim", "512"]) == 1
    assert "AC010" in capsys.readouterr().out


# --- usage errors: one line on stderr and exit 2, never a traceback ---------------------------
@pytest.mark.parametrize("argv", [
    ["verify", "--device", "foo", "torch.sdpa_ref"],
    ["demo", "dcp", "--world-size", "0"],
    ["demo", "dcp", "--repeats", "0"],
    ["demo", "dcp", "--world-size", "-1"],
    ["demo", "dcp", "--interleave", "-1"],
    ["demo", "dcp", "--timeout", "0"],
    ["validate", "--world-size", "0"],
    ["validate", "--world-size", "-2"],
    ["validate", "--world-size", "0", "--backend", "torch.sdpa_ref"],
])
def test_bad_arguments_are_one_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert "error: argument" in one_line_usage_error(capsys, argv)


@pytest.mark.parametrize("argv", [
    ["show", "no.such"],
    ["plan", "no.such"],
    ["verify", "no.such"],
    ["validate", "--backend", "no.such"],
    ["validate", "--backend", "no.such", "--world-size", "2"],
    ["validate", "--backend", "torch.sdpa_ref", "--consumer", "no.such"],
])
def test_an_unknown_name_is_the_same_usage_error_everywhere(
        capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    line = one_line_usage_error(capsys, argv)
    assert "AC013" in line and "no.such" in line


def test_verify_file_without_names_verifies_the_files_records(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = good(name="plain.kernel")  # no adapter: a declarative record, skipped cleanly
    f = write(tmp_path, "r.json", json.dumps([record]))
    assert main(["verify", "--file", str(f)]) == 0
    out = capsys.readouterr().out
    assert "plain.kernel" in out and "1 skipped" in out


def test_subprocess_stderr_is_one_line_without_traceback(tmp_path: Path) -> None:
    """The console script itself, not just main(): nothing escapes as a traceback."""
    f = write(tmp_path, "r.toml", b"\xff")
    proc = subprocess.run([sys.executable, "-c", "import sys; from attn_contracts.cli import main;"
                           " sys.exit(main(sys.argv[1:]))", "validate", "--file", str(f)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
