"""Issue 12 (hardening): bad input is one line and exit 2; what a file names never runs unasked;
plugins cannot end or flood a run; re-validation at startup and planning; the JSON schema is as
strict as the models; a missing torch or device is a clear skip or error, never a false finding.

Every CLI case goes through ``main(argv)`` and checks the return code and that stderr is exactly one
line with no traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attn_contracts import sources
from attn_contracts.cli import main
from fixtures.records import good


def one_line_usage_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run ``main(argv)``, require exit 2 and one stderr line without a traceback; return it."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


# --- 3. bad input: one line and exit 2 ------------------------------------------------------------

def _write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    f = tmp_path / name
    f.write_bytes(data if isinstance(data, bytes) else data.encode())
    return f


@pytest.mark.parametrize("command", [["validate"], ["verify"]])
@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_binary_records_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                             command: list[str], suffix: str) -> None:
    f = _write(tmp_path, "r" + suffix, b"\xff\xfe\x00\x01binary")
    line = one_line_usage_error(capsys, [*command, "--file", str(f)])
    assert "not UTF-8" in line and "0xff" in line


@pytest.mark.parametrize("name,text", [
    ("deep.json", "[" * 100_000 + "]" * 100_000),
    ("deep.toml", "a = " + "[" * 100_000 + "]" * 100_000),
    ("deep70.json", "[" * 70 + "]" * 70),  # parses, but deeper than any record needs
])
def test_deeply_nested_document(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                                text: str) -> None:
    f = _write(tmp_path, name, text)
    assert "nest" in one_line_usage_error(capsys, ["validate", "--file", str(f)])


def test_an_integer_too_long_to_convert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _write(tmp_path, "big.json", '{"a": ' + "1" * 5000 + "}")
    assert "not valid JSON" in one_line_usage_error(capsys, ["validate", "--file", str(f)])


@pytest.mark.parametrize("name,text", [("e.toml", ""), ("e.json", ""), ("w.toml", "\n  \n"),
                                       ("l.json", "[]"), ("o.json", "{}")])
def test_empty_toml_and_json_are_the_same_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str) -> None:
    f = _write(tmp_path, name, text)
    line = one_line_usage_error(capsys, ["validate", "--file", str(f)])
    assert "empty" in line or "no records" in line


@pytest.mark.parametrize("command", [["validate"], ["verify"]])
def test_dev_zero_is_refused_not_read(capsys: pytest.CaptureFixture[str],
                                      command: list[str]) -> None:
    line = one_line_usage_error(capsys, [*command, "--file", "/dev/zero"])
    assert "not a regular file" in line and "character device" in line


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_is_refused_without_blocking(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "records.json"
    os.mkfifo(fifo)  # no writer: opening it for reading blocks forever unless non-blocking
    assert "FIFO" in one_line_usage_error(capsys, ["validate", "--file", str(fifo)])


def test_a_directory_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "directory" in one_line_usage_error(capsys, ["validate", "--file", str(tmp_path)])


def test_a_file_over_the_bound_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "huge.json"
    with f.open("wb") as fh:  # sparse: the bound is checked without writing 10 MiB of data
        fh.truncate(sources.MAX_FILE_BYTES + 1)
    with pytest.raises(sources.FileReadError, match="10 MiB"):
        sources.read_file(f)


@pytest.mark.parametrize("argv", [
    ["verify", "--device", "foo", "torch.sdpa_ref"],
    ["demo", "dcp", "--world-size", "0"],
    ["demo", "dcp", "--repeats", "0"],
    ["demo", "dcp", "--world-size", "-1"],
    ["demo", "dcp", "--interleave", "-1"],
    ["demo", "dcp", "--timeout", "0"],
    ["validate", "--dcp", "0"],
    ["validate", "--dcp", "-2"],
    ["validate", "--world-size", "0", "--backend", "torch.sdpa_ref"],
])
def test_bad_arguments_are_one_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert "error: argument" in one_line_usage_error(capsys, argv)


@pytest.mark.parametrize("argv", [
    ["show", "no.such"],
    ["plan", "no.such"],
    ["verify", "no.such"],
    ["validate", "--backend", "no.such"],
    ["validate", "--backend", "no.such", "--dcp", "2"],
    ["validate", "--backend", "torch.sdpa_ref", "--consumer", "no.such"],
])
def test_an_unknown_name_is_the_same_usage_error_everywhere(
        capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    line = one_line_usage_error(capsys, argv)
    assert "AC013" in line and "no.such" in line


def test_verify_file_without_names_verifies_the_files_records(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = good(name="plain.kernel")  # no adapter: a declarative record, skipped cleanly
    f = _write(tmp_path, "r.json", json.dumps([record]))
    assert main(["verify", "--file", str(f)]) == 0
    out = capsys.readouterr().out
    assert "plain.kernel" in out and "1 skipped" in out


def test_subprocess_stderr_is_one_line_without_traceback(tmp_path: Path) -> None:
    """The console script itself, not just main(): nothing escapes as a traceback."""
    f = _write(tmp_path, "r.toml", b"\xff")
    proc = subprocess.run([sys.executable, "-c", "import sys; from attn_contracts.cli import main;"
                           " sys.exit(main(sys.argv[1:]))", "validate", "--file", str(f)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr
