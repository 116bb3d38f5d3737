"""attn-contracts lint through main(): every rule fires on its bug and is silent on the fix."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from attn_contracts.lint import main
from fixtures.records import NO_BASE_TOML

ENGINE = Path(__file__).parent / "fixtures" / "lint_engine"


def lint(tmp_path: Path, capsys: pytest.CaptureFixture[str], files: dict[str, str],
         *extra: str) -> tuple[int, str]:
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    code = main([str(tmp_path), *extra])
    return code, capsys.readouterr().out


def test_the_real_bug_is_caught_and_the_fix_is_clean(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(ENGINE / "buggy")]) == 1
    out = capsys.readouterr().out
    assert "flashinfer_mla.py:7:5: AC002" in out  # base only from AttentionImpl's default
    assert "layer.py:11:" in out and "AC003" in out  # is_lse_base_on_e=True hard-coded
    assert main([str(ENGINE / "fixed")]) == 0
    assert capsys.readouterr().out == ""


BASE = """
class AttentionImpl:
    can_return_lse_for_decode = False
    lse_base_on_e = True
"""


@pytest.mark.parametrize(("code", "bad", "good"), [
    ("AC001",
     "class Impl:\n    can_return_lse_for_decode = True\n",
     "class Impl:\n    can_return_lse_for_decode = True\n    lse_base_on_e = True\n"),
    ("AC001",
     "from attn_contracts import LseSpec\nx = LseSpec(layout='token_head')\n",
     "from attn_contracts import LseSpec\nx = LseSpec(base='2', layout='token_head')\n"),
    ("AC001",
     "rec = {'lse': {'returns': 'lse', 'layout': 'token_head', 'dtype': 'float32'}}\n",
     "rec = {'lse': {'returns': 'lse', 'base': 'e', 'layout': 'token_head'}}\n"),
    ("AC002",
     "from base import AttentionImpl\nclass Impl(AttentionImpl):\n    supports_dcp = True\n",
     "from base import AttentionImpl\nclass Impl(AttentionImpl):\n    supports_dcp = True\n"
     "    lse_base_on_e = False\n"),
    ("AC002",  # the base class is not in the linted set: the base can only be its default
     "from vllm import AttentionImpl\nclass Impl(AttentionImpl):\n"
     "    can_return_lse_for_decode = True\n",
     "from vllm import AttentionImpl\nclass Impl(AttentionImpl):\n"
     "    can_return_lse_for_decode = True\n    lse_base_on_e = True\n"),
    ("AC003",
     "dcp_a2a_lse_reduce(out, lse, group, is_lse_base_on_e=False)\n",
     "dcp_a2a_lse_reduce(out, lse, group, is_lse_base_on_e=impl.lse_base_on_e)\n"),
    ("AC003",
     "correct_attn_out(out, lse, rank, ctx, lse_base='e')\n",
     "correct_attn_out(out, lse, rank, ctx, lse_base=record.lse_base)\n"),
    ("AC003",
     "plan = plan_combine({'name': 'x', 'lse': {'base': '2'}}, mode='a2a')\n",
     "plan = plan_combine(get('flashinfer.mla.fa3'), mode='a2a')\n"),
    ("AC004",
     "rec = {'lse': {'returns': 'none', 'base': 'e'}}\n",
     "rec = {'lse': {'returns': 'none'}}\n"),
    ("AC009",
     "base_e = getattr(impl, 'lse_base_on_e', True)\n",
     "base_e = impl.lse_base_on_e\n"),
    ("AC011",
     "assert impl.can_return_lse_for_decode\n",
     "if not impl.can_return_lse_for_decode:\n    raise ValueError('needs LSE')\n"),
])
def test_rule_fires_and_not_on_the_fix(code: str, bad: str, good: str, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    bad_dir, good_dir = tmp_path / "bad", tmp_path / "good"
    bad_dir.mkdir()
    good_dir.mkdir()
    rc, out = lint(bad_dir, capsys, {"base.py": BASE, "mod.py": bad})
    assert rc == 1 and f" {code} " in out, out
    rc, out = lint(good_dir, capsys, {"base.py": BASE, "mod.py": good})
    assert rc == 0, out


def test_inherited_base_from_an_lse_returning_ancestor_is_fine(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = lint(tmp_path, capsys, {"a.py": BASE + (
        "class FlashAttnImpl(AttentionImpl):\n    can_return_lse_for_decode = True\n"
        "    lse_base_on_e = True\n"), "b.py": (
        "from a import FlashAttnImpl\nclass Varlen(FlashAttnImpl):\n"
        "    can_return_lse_for_decode = True\n")})
    assert rc == 0, out


def test_registered_record_classes_are_judged_by_their_record(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = lint(tmp_path, capsys, {"m.py": (
        "@register(RECORD)\nclass Impl:\n    can_return_lse_for_decode = True\n")})
    assert rc == 0, out


def test_noqa_select_ignore(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    files = {"m.py": "x = getattr(i, 'lse_base_on_e', True)  # noqa: AC009\n"
                     "assert i.supports_dcp\n"}
    rc, out = lint(tmp_path, capsys, files)
    assert rc == 1 and "AC009" not in out and "AC011" in out
    rc, out = lint(tmp_path, capsys, files, "--ignore", "AC011")
    assert rc == 0
    rc, out = lint(tmp_path, capsys, {"m.py": "assert i.supports_dcp  # noqa\n"})
    assert rc == 0
    rc, out = lint(tmp_path, capsys, {"m.py": "assert i.supports_dcp\n"
                                              "getattr(i, 'supports_dcp', 0)\n"},
                   "--select", "AC009")
    assert rc == 1 and "AC009" in out and "AC011" not in out


def test_settings_from_pyproject(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.attn-contracts]\nreturns-attrs = ["returns_lse"]\nbase-attrs = ["lse_is_ln"]\n'
        'combine-functions = ["my_merge"]\nignore = ["AC011"]\n')
    rc, out = lint(tmp_path, capsys, {"m.py": (
        "class K:\n    returns_lse = True\n"
        "my_merge(o, l, base='2')\nassert k.returns_lse\n")})
    assert rc == 1 and "AC001" in out and "AC003" in out and "AC011" not in out
    (tmp_path / "pyproject.toml").write_text('[tool.attn-contracts]\nretruns-attrs = ["x"]\n')
    assert main([str(tmp_path)]) == 2
    assert "allowed keys" in capsys.readouterr().err


def test_unparsable_file_is_ac000_and_the_rest_is_still_linted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, out = lint(tmp_path, capsys, {"broken.py": "def f(:\n", "ok.py": "assert x.supports_dcp\n"})
    assert rc == 1 and "broken.py:1:" in out and "AC000" in out and "AC011" in out


def test_record_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = NO_BASE_TOML + """
        [[record]]
        name = "my.other"
        library = "x"
        source = "here"
        evidence = "read_from_code"
        lse = { returns = "none", base = "e" }
        decode = { attention = "mha", out_layout = "token_head_dim", head_dims = [128], q_dtypes = ["bfloat16"], q_len_gt_1 = false }
        typo = 1
    """
    rc, out = lint(tmp_path, capsys, {"records.toml": bad, "other.toml": "[tool]\nx = 1\n"})
    assert rc == 1
    assert "records.toml:3:1: AC001 record my.kernel" in out
    assert "records.toml:11:1: AC004 record my.other" in out
    assert "records.toml:11:1: AC012" in out and "other.toml" not in out


@pytest.mark.parametrize("fmt", ["json", "github"])
def test_formats(fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(ENGINE / "buggy"), "--format", fmt]) == 1
    out = capsys.readouterr().out
    if fmt == "json":
        data = json.loads(out)
        assert {d["code"] for d in data} == {"AC002", "AC003"} and data[0]["line"] == 7
    else:
        assert out.startswith("::error file=") and "title=AC002::" in out


def test_usage_errors(tmp_path: Path) -> None:
    assert main([str(tmp_path / "missing.py")]) == 2
    assert main([]) == 2
    assert main([str(tmp_path), "--format", "xml"]) == 2


def test_lint_runs_without_torch(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['torch'] = None\n"  # importing torch would now fail
            "from attn_contracts.cli import main\n"
            f"sys.exit(main(['lint', {str(ENGINE / 'fixed')!r}]))")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
