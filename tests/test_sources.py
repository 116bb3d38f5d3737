"""attn_contracts.sources (the one reader of record documents): a records file that is binary,
nested too deeply, empty, a device, a FIFO, a directory or over the bound is one line and exit 2,
never a hang or a traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from attn_contracts import sources
from fixtures.cli import one_line_usage_error
from fixtures.cli import write


@pytest.mark.parametrize("command", [["validate"], ["verify"]])
@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_binary_records_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                             command: list[str], suffix: str) -> None:
    f = write(tmp_path, "r" + suffix, b"\xff\xfe\x00\x01binary")
    line = one_line_usage_error(capsys, [*command, "--file", str(f)])
    assert "not UTF-8" in line and "0xff" in line


@pytest.mark.parametrize("name,text", [
    ("deep.json", "[" * 100_000 + "]" * 100_000),
    ("deep.toml", "a = " + "[" * 100_000 + "]" * 100_000),
    ("deep70.json", "[" * 70 + "]" * 70),  # parses, but deeper than any record needs
])
def test_deeply_nested_document(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                                text: str) -> None:
    f = write(tmp_path, name, text)
    assert "nest" in one_line_usage_error(capsys, ["validate", "--file", str(f)])


def test_an_integer_too_long_to_convert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = write(tmp_path, "big.json", '{"a": ' + "1" * 5000 + "}")
    assert "not valid JSON" in one_line_usage_error(capsys, ["validate", "--file", str(f)])


@pytest.mark.parametrize("name,text", [("e.toml", ""), ("e.json", ""), ("w.toml", "\n  \n"),
                                       ("l.json", "[]"), ("o.json", "{}")])
def test_empty_toml_and_json_are_the_same_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str) -> None:
    f = write(tmp_path, name, text)
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
