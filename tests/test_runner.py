"""attn_contracts.backends.runner (the verifier pipeline): a missing torch, library or device is exit
2 (or a skip when asked), never a false finding; every skip says so once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from attn_contracts import CapabilityRecord
from attn_contracts.cli import main
from fixtures.adapters import record_with_adapter
from fixtures.cli import one_line_usage_error
from fixtures.cli import write
from fixtures.machine import has_cuda
from fixtures.machine import without_torch


@pytest.mark.parametrize("argv", [["verify", "torch.sdpa_ref"], ["verify", "--all"],
                                  ["verify", "--all", "--device", "cuda"]])
def test_without_torch_verify_skips_with_the_install_hint(argv: list[str]) -> None:
    # --skip-unavailable: without it a missing torch is exit 2 (the test below)
    argv = [*argv, "--skip-unavailable"]
    proc = without_torch(f"from attn_contracts.cli import main; sys.exit(main({argv!r}))")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "AC008" not in proc.stdout
    assert "0 verified" in proc.stdout and "attn-contracts[kernels]" in proc.stdout


@pytest.mark.parametrize("argv", [["verify", "torch.sdpa_ref"], ["verify", "--all"],
                                  ["verify", "--consumer", "--all"]])
def test_without_torch_verify_is_a_usage_error_like_a_missing_device(argv: list[str]) -> None:
    """A CI job that forgot the kernels extra must not go green with nothing verified."""
    proc = without_torch(f"from attn_contracts.cli import main; sys.exit(main({argv!r}))")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "attn-contracts[kernels]" in lines[0], proc.stderr
    assert "--skip-unavailable" in lines[0] and "Traceback" not in proc.stderr


def test_a_missing_library_an_adapter_requires_is_a_usage_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """FlashInfer missing for a FlashInfer record: exit 2 unless --skip-unavailable."""
    module = tmp_path / "ac_needs_lib.py"
    module.write_text("from attn_contracts.backends.torch_ref import run as _run\n"
                      "from attn_contracts.backends.adapter import Adapter\n"
                      "def run(p):\n    return _run(p)\n"
                      "decode = Adapter(run=run, requires=('no_such_library_xyz',))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    f = write(tmp_path, "r.json", json.dumps([record_with_adapter("ac_needs_lib:decode")]))
    argv = ["verify", "--file", str(f), "--allow-adapter", "ac_needs_lib"]
    line = one_line_usage_error(capsys, argv)
    assert "no_such_library_xyz not installed" in line and "--skip-unavailable" in line
    assert main([*argv, "--skip-unavailable"]) == 0
    assert "0 verified, 1 skipped" in capsys.readouterr().out


def test_an_adapter_that_cannot_load_is_not_counted_as_verified(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = write(tmp_path, "r.json", json.dumps([
        record_with_adapter("attn_contracts.backends.no_such_module:run", "gone.module"),
        record_with_adapter("attn_contracts.backends.torch_ref:no_such_attr", "gone.attr")]))
    assert main(["verify", "--file", str(f)]) == 1
    out = capsys.readouterr().out
    assert "0 verified, 0 skipped, 2 could not run, 2 finding(s)" in out


def test_a_device_that_is_not_there_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    if has_cuda():
        line = one_line_usage_error(capsys, ["verify", "--device", "cuda:999", "torch.sdpa_ref"])
        assert "does not exist" in line
        return
    line = one_line_usage_error(capsys, ["verify", "--device", "cuda", "torch.sdpa_ref"])
    assert "no CUDA device" in line and "--skip-unavailable" in line


def test_skip_unavailable_makes_a_missing_device_a_skip(
        capsys: pytest.CaptureFixture[str]) -> None:
    device = "cuda:999" if has_cuda() else "cuda"
    assert main(["verify", "--device", device, "--skip-unavailable", "torch.sdpa_ref"]) == 0
    assert "0 verified, 1 skipped" in capsys.readouterr().out


def test_every_skip_reason_says_skipped_once(tmp_path: Path) -> None:
    from attn_contracts import get
    from attn_contracts.backends.runner import verify_consumer
    from attn_contracts.backends.runner import verify_record
    from attn_contracts.registry import Registry

    reasons = [verify_record(get("flashinfer.xqa")).reason,  # no LSE
               verify_record(get("flash_attn.fa2")).reason,  # no adapter
               verify_record(get("flashinfer.mla.fa3")).reason,  # needs CUDA
               verify_record(CapabilityRecord.model_validate(record_with_adapter("os:system")),
                             allow_adapters=["attn_contracts.backends"]).reason,  # not allowed
               verify_consumer(Registry().consumer("flashinfer.merge_state")).reason]
    for reason in reasons:
        assert reason.startswith("skipped: ") and reason.count("skipped") == 1, reason
