"""``engine vllm|sglang``: the installed engine, never a folder of the working directory; and
``--source`` takes the folder holding ``vllm`` or the package folder itself (issue 38, items 6
and 7). The vLLM tree here is a few lines written for these tests."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from attn_contracts.cli import main
from fixtures.cli import one_line_usage_error

#: a package that says so when it is imported (it must never be)
_INIT = ("from pathlib import Path\n"
         "(Path(__file__).parent.parent / 'IMPORTED').write_text(__name__)\n"
         "__version__ = '0.33.0'\n")
_REGISTRY = ("import enum\n\n\nclass AttentionBackendEnum(enum.Enum):\n"
             "    MINE = 'vllm.v1.attention.backends.mine.MineBackend'\n")
_MINE = ("class MineImpl:\n    can_return_lse_for_decode = True\n    lse_base_on_e = True\n\n\n"
         "class MineBackend:\n    @staticmethod\n    def get_impl_cls():\n        return MineImpl\n")


def _tree(root: Path) -> Path:
    files = {"vllm/__init__.py": _INIT, "vllm/v1/__init__.py": "",
             "vllm/v1/attention/__init__.py": "", "vllm/v1/attention/backends/__init__.py": "",
             "vllm/v1/attention/backends/registry.py": _REGISTRY,
             "vllm/v1/attention/backends/mine/__init__.py": _MINE,
             "sglang/__init__.py": _INIT, "sglang/srt/__init__.py": ""}
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_the_engine_is_never_taken_from_the_working_directory(engine: str,
                                                               tmp_path: Path) -> None:
    """``python -m`` puts the working directory first on ``sys.path``: a ``vllm`` (or
    ``sglang``) folder there is not the installed engine (none is installed in this venv)."""
    tree = _tree(tmp_path)
    done = subprocess.run([sys.executable, "-m", "attn_contracts.cli", "engine", engine],
                          cwd=tree, capture_output=True, text=True, timeout=120, check=False)
    assert not (tree / "IMPORTED").exists()
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
    assert "installed" in done.stderr or "importable" in done.stderr


def test_source_is_the_folder_holding_vllm_or_the_package_folder_itself(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tree = _tree(tmp_path)
    assert main(["engine", "vllm", "--source", str(tree), "--format", "json"]) == 0
    holding = capsys.readouterr().out
    assert main(["engine", "vllm", "--source", str(tree / "vllm"), "--format", "json"]) == 0
    assert capsys.readouterr().out == holding and '"MINE"' in holding
    assert not (tree / "IMPORTED").exists()  # read, never imported


@pytest.mark.parametrize("argv", [["engine", "sglang", "--no-dcp"],
                                  ["engine", "sglang", "--source", "x"],
                                  ["engine", "vllm", "--root", "x"]])
def test_a_flag_of_the_other_engine_is_refused_not_ignored(
        argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    line = one_line_usage_error(capsys, argv)
    assert f"engine {argv[1]} does not read {argv[2]}" in line
