"""The main job (the DCP demo) and the integration example, end to end on CPU ranks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from attn_contracts.cli import main

pytestmark = pytest.mark.dist
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def _torch_path(monkeypatch: pytest.MonkeyPatch) -> None:
    # The kernels are tested under the interpreter elsewhere; here the ranks take the torch
    # path so the end-to-end runs stay quick on two cores.
    monkeypatch.setenv("TRITON_INTERPRET", "0")


def test_demo_dcp_with_wrong_base(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "dcp", "--world-size", "3", "--interleave", "2", "--wrong-base",
                 "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    for mode in ("ag_rs", "a2a", "ar"):
        assert mode in out
    assert "32/32" in out and "flipped" in out  # right modes agree; the wrong base flips tokens
    assert "AC002" in out and "AC008" in out  # and validate_startup refuses it both ways


def test_demo_contiguous_sharding(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "dcp", "--world-size", "2", "--interleave", "0", "--repeats", "1"]) == 0
    assert "contiguous" in capsys.readouterr().out


def test_engine_startup_example_runs() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "engine_startup.py")],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "rank 1: max |error|" in done.stdout


@pytest.mark.parametrize("n", ["25", "100000"])
def test_the_demo_refuses_more_ranks_than_heads_before_spawning(
        n: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Each rank is a process: --world-size 100000 used to start spawning 100,000 of them."""
    from attn_contracts.cli import DEMO_MAX_RANKS
    from attn_contracts.cli.demo import HEADS

    assert DEMO_MAX_RANKS == HEADS
    assert main(["demo", "dcp", "--world-size", n]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"at most {HEADS} ranks" in err and n in err
