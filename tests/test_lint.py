"""attn-contracts lint through main(): every rule fires on its bug and is silent on the fix."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from attn_contracts.findings import Code
from attn_contracts.lint import main
from fixtures.records import NO_BASE_TOML

ENGINE = Path(__file__).parent / "fixtures" / "lint_engine"


def lint(tmp_path: Path, capsys: pytest.CaptureFixture[str], files: dict[str, str],
         *extra: str) -> tuple[int, str]:
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    code = main([str(tmp_path), "--warnings-as-errors", *extra])
    return code, capsys.readouterr().out


def test_the_real_bug_is_caught_and_the_fix_is_clean(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(ENGINE / "buggy")]) == 1
    out = capsys.readouterr().out
    assert "flashinfer_mla.py:8:5: AC002" in out  # base only from AttentionImpl's default
    assert "layer.py:11:" in out and "AC003" in out  # is_lse_base_on_e=True hard-coded
    assert main([str(ENGINE / "fixed")]) == 0
    # only notes remain: FlashAttnImpl's own base e is confirmed by no kernel record (AC032)
    assert {line.split()[1] for line in capsys.readouterr().out.splitlines()} <= {"AC032"}


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
    ("AC002",  # the inherited default, nothing confirms it: fails closed
     "from base import AttentionImpl\nclass Impl(AttentionImpl):\n"
     "    can_return_lse_for_decode = True\n",
     "from base import AttentionImpl\nclass Impl(AttentionImpl):\n"
     "    can_return_lse_for_decode = True\n    lse_base_on_e = False\n"),
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
        data = [d for d in json.loads(out) if d["severity"] != "note"]
        assert {d["code"] for d in data} == {"AC002", "AC003"} and data[0]["line"] == 8
        assert [d["severity"] for d in data] == ["error", "warning"]
        assert {d["code"] for d in json.loads(out) if d["severity"] == "note"} <= {"AC032"}
    else:
        assert "::error file=" in out and "title=AC002::" in out
        assert "::warning file=" in out and "title=AC003::" in out


def test_usage_errors(tmp_path: Path) -> None:
    assert main([str(tmp_path / "missing.py")]) == 2
    assert main([]) == 2
    assert main([str(tmp_path), "--format", "xml"]) == 2


def test_lint_runs_without_torch(tmp_path: Path) -> None:
    code = ("import sys; sys.modules['torch'] = None\n"  # importing torch would now fail
            "from attn_contracts.cli import main\n"
            f"sys.exit(main(['lint', {str(ENGINE / 'fixed')!r}]))")
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


# --- hardening (issue 12 §2, §3) ------------------------------------------------------------------
def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(textwrap.dedent(text))


def test_bases_resolve_through_imports_whatever_the_argument_order(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A real AC002 in engine/, and an unrelated other/base.py whose same-named class returns LSE:
    # matched by bare name, the AC002 came and went with the order of the arguments.
    _write(tmp_path, {
        "engine/base.py": BASE,
        "engine/impl.py": "from base import AttentionImpl\nclass Impl(AttentionImpl):\n"
                          "    can_return_lse_for_decode = True\n",
        "other/base.py": "class AttentionImpl:\n    can_return_lse_for_decode = True\n"
                         "    lse_base_on_e = False\n"})
    outs = []
    for order in ([tmp_path / "engine", tmp_path / "other"], [tmp_path / "other", tmp_path / "engine"],
                  [tmp_path / "engine"]):
        assert main(["--warnings-as-errors", *(str(p) for p in order)]) == 1
        outs.append("\n".join(line for line in capsys.readouterr().out.splitlines()
                              if "[note]" not in line))
    assert outs[0] == outs[1] == outs[2]
    assert "impl.py:3:5: AC002" in outs[0] and "default on AttentionImpl" in outs[0]


def test_bases_resolve_through_packages_aliases_and_relative_imports(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path, {
        "eng/__init__.py": "from .layers.base import AttentionImpl as AttentionImpl\n",
        "eng/layers/__init__.py": "",
        "eng/layers/base.py": BASE,
        "eng/backends/__init__.py": "",
        "eng/backends/a.py": "import eng.layers.base as lb\nclass A(lb.AttentionImpl):\n"
                             "    can_return_lse_for_decode = True\n",
        "eng/backends/b.py": "from ..layers import base\nclass B(base.AttentionImpl):\n"
                             "    can_return_lse_for_decode = True\n",
        "eng/backends/c.py": "from eng import AttentionImpl\nclass C(AttentionImpl):\n"
                             "    can_return_lse_for_decode = True\n",
        "eng/backends/d.py": "from elsewhere import AttentionImpl\nclass D(AttentionImpl):\n"
                             "    can_return_lse_for_decode = True\n"})
    assert main(["--warnings-as-errors", str(tmp_path / "eng")]) == 1
    out = capsys.readouterr().out
    for name in ("a", "b", "c"):  # resolved to eng.layers.base.AttentionImpl and its default
        assert f"{name}.py:3:5: AC002" in out and "lse_base_on_e = True comes only" in out
    assert "d.py:3:5: AC002" in out and "elsewhere.AttentionImpl (not linted)" in out


def test_project_root_sees_the_whole_hierarchy_and_reports_on_the_named_files(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path, {
        "base.py": BASE + "class FlashAttnImpl(AttentionImpl):\n    can_return_lse_for_decode = True\n"
                          "    lse_base_on_e = True\n",
        "child.py": "from base import FlashAttnImpl\nclass Varlen(FlashAttnImpl):\n"
                    "    can_return_lse_for_decode = True\n",
        "untouched.py": "assert impl.supports_dcp\n",
        "ruff.toml": "line-length = 110\n[lint]\nselect = ['E']\n[lint.isort]\nknown = ['x']\n"})
    changed = [str(tmp_path / "child.py"), str(tmp_path / "ruff.toml")]
    assert main(["--warnings-as-errors", *changed]) == 1  # without the root, the correct base is not seen
    assert "AC002" in capsys.readouterr().out
    assert main(["--project-root", str(tmp_path), *changed]) == 0, capsys.readouterr().out
    hook = (Path(__file__).parents[1] / ".pre-commit-hooks.yaml").read_text()
    assert "--project-root" in hook


def test_record_files_are_only_files_with_record_tables(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path, {"ruff.toml": "line-length = 110\nname = 3\n",
                      "typos.toml": "[default]\nlse = 1\n"})
    assert main([str(tmp_path / "ruff.toml"), str(tmp_path / "typos.toml"), str(tmp_path)]) == 0
    (tmp_path / "pyproject.toml").write_text('[tool.attn-contracts]\nrecord-files = ["mine.toml"]\n')
    (tmp_path / "mine.toml").write_text('name = "my.kernel"\nlibrary = "x"\n')  # a bare record
    assert main(["--warnings-as-errors", str(tmp_path)]) == 1
    assert "mine.toml:1:1: AC012" in capsys.readouterr().out


def test_deep_inheritance_is_linear(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from attn_contracts.lint.classes import Hierarchy

    # every class of a deep chain returns LSE with the base only from C0's default: each one's
    # hierarchy is resolved, so a quadratic walk per class is cubic in all. The work is counted
    # (base lookups, which every walk of the hierarchy goes through), never timed: doubling the
    # depth may at most double it.
    lookups = 0
    bases = Hierarchy.bases

    def counted(self: Hierarchy, cls: Any) -> Any:
        nonlocal lookups
        lookups += 1
        return bases(self, cls)

    monkeypatch.setattr(Hierarchy, "bases", counted)
    work = {}
    for depth in (1000, 2000):
        chain = ["class C0:\n    can_return_lse_for_decode = False\n    lse_base_on_e = True\n"]
        chain += [f"class C{i}(C{i - 1}):\n    can_return_lse_for_decode = True\n"
                  for i in range(1, depth)]
        tree = tmp_path / f"d{depth}"
        tree.mkdir()
        (tree / "deep.py").write_text("".join(chain))
        lookups = 0
        assert main(["--warnings-as-errors", str(tree)]) == 1
        work[depth] = lookups
        out = capsys.readouterr().out
        # each fails closed: an inherited default that no kernel of its confirms is an error
        assert out.count(" AC002 ") == depth - 1
        assert f"deep.py:{2 * depth + 1}:5: AC002 C{depth - 1} sets" in out
    assert 0 < work[2000] <= 2.2 * work[1000], work  # linear (was quadratic: 4x)


def test_deep_nesting_is_one_ac000_and_the_run_goes_on(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path, {
        "sum.py": "x = " + "1+" * 100_000 + "1\n",
        "attrs.py": "x = a" + ".b" * 100_000 + "\n",
        "default.py": "class Impl:\n    can_return_lse_for_decode = False\n"
                      "    lse_base_on_e = " + "+".join(["1"] * 900) + "\n"
                      "class Child(Impl):\n    can_return_lse_for_decode = True\n"
                      "y = getattr(i, 'lse_base_on_e', " + "+".join(["1"] * 900) + ")\n",
        "ok.py": "assert i.supports_dcp\n"})
    assert main(["--warnings-as-errors", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "sum.py:1:1: AC000" in out and "attrs.py:1:1: AC000" in out
    assert "default.py:5:5: AC002" in out and "default.py:6:5: AC009" in out
    assert "ok.py:1:1: AC011" in out


def test_a_pep263_coding_line_is_honoured(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "latin.py").write_bytes(
        b"# -*- coding: latin-1 -*-\n# caf\xe9\nassert i.supports_dcp\n")
    assert main(["--warnings-as-errors", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "latin.py:3:1: AC011" in out and "AC000" not in out


@pytest.mark.parametrize("how", ["--select", "--ignore", "pyproject"])
def test_unknown_codes_are_a_usage_error(how: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "m.py").write_text("assert i.supports_dcp\n")
    if how == "pyproject":
        (tmp_path / "pyproject.toml").write_text('[tool.attn-contracts]\nselect = ["AC3"]\n')
        args = [str(tmp_path)]
    else:
        args = [str(tmp_path), how, "AC011,bogus"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert ("bogus" in err or "AC3" in err) and "AC000, AC001" in err
    (tmp_path / "pyproject.toml").unlink(missing_ok=True)
    assert main(["--warnings-as-errors", str(tmp_path), "--select", "AC01"]) == 1  # a prefix of known codes is fine


def test_non_regular_and_huge_files_are_refused(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "pipe.py"
    os.mkfifo(fifo)
    (tmp_path / "huge.py").write_bytes(b"#" * (10 * 1024 * 1024 + 1))
    code = ("import sys\nfrom attn_contracts.lint import main\n"
            f"sys.exit(main(['/dev/zero', {str(fifo)!r}, {str(tmp_path / 'huge.py')!r}]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 3 and all(" AC000 " in s for s in lines)
    assert "not a regular file" in done.stdout and "10 MiB" in done.stdout


# --- following the LSE (issue 13 §3): AC003 through partial/alias/wrapper/**kwargs, AC021-AC023 ---
FLOW = Path(__file__).parent / "fixtures" / "lint_flow"


def _found(out: str) -> set[tuple[str, int, str]]:
    found = set()
    for line in out.splitlines():
        where, _, rest = line.partition(": ")
        path, row, _ = where.rsplit(":", 2)
        found.add((Path(path).name, int(row), rest.split()[0]))
    return found


def test_the_flow_fixture_engine_is_flagged_case_by_case_and_its_fix_is_clean(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--warnings-as-errors", str(FLOW / "buggy")]) == 1
    assert _found(capsys.readouterr().out) == {
        ("combine_calls.py", 7, "AC003"),   # functools.partial(..., is_lse_base_on_e=True)
        ("combine_calls.py", 9, "AC003"),   # the **KWARGS dict literal
        ("combine_calls.py", 21, "AC003"),  # combine = cp_lse_ag_out_rs; combine(..., False)
        ("combine_calls.py", 25, "AC003"),  # a wrapper forwarding its base_e
        ("combine_calls.py", 30, "AC003"),  # a lambda forwarding its e
        ("defaults.py", 6, "AC021"),        # def ...(is_lse_base_on_e=True) feeding the combine
        ("defaults.py", 15, "AC022"),       # cp_lse_ag_out_rs(out, lse, group): the default
        ("paths.py", 13, "AC023"),          # prefix_lse read as base 2 and as base e
        ("paths.py", 27, "AC023"),          # FlashInfer's base-2 LSE into a base-e merge
    }
    assert main([str(FLOW / "fixed")]) == 0, capsys.readouterr().out


def test_ac023_names_both_consumers_and_their_records(capsys: pytest.CaptureFixture[str]) -> None:
    main([str(FLOW / "buggy" / "paths.py"), str(FLOW / "buggy" / "contracts.toml")])
    out = capsys.readouterr().out
    two = next(s for s in out.splitlines() if ":13:" in s)
    assert "merge_state (consumer record flashinfer.merge_state) as base 2" in two
    assert "merge_attn_states (consumer record engine.merge_attn_states) as base e" in two
    prod = next(s for s in out.splitlines() if ":27:" in s)
    # the built-in flashinfer.batch_decode and the fixture's engine.flashinfer_decode agree
    assert "is base 2" in prod and "producer record" in prod and "reads base e" in prod


def _knowledge() -> object:
    from attn_contracts.consumer import ConsumerRecord
    from attn_contracts.lint import Knowledge
    from attn_contracts.records import CapabilityRecord
    from fixtures.records import LINT_CONSUMER_COMMON as common
    from fixtures.records import LINT_PRODUCER
    from fixtures.records import lint_merge

    consumers = [
        ConsumerRecord.model_validate({**common, "name": "x.combine", "calls": [
            {"function": "x.cp_combine", "lse_args": ["1"]}], "base": {
            "kind": "keyword", "keyword": "base_e", "values": {"True": "e", "False": "2"},
            "default": "True"}}),
        *(ConsumerRecord.model_validate(lint_merge(b)) for b in ("e", "2"))]
    producer = CapabilityRecord.model_validate(LINT_PRODUCER)
    return Knowledge.from_records([producer], consumers)


@pytest.mark.parametrize(("code", "bad", "good"), [
    ("AC022", "cp_combine(o, lse)\n", "cp_combine(o, lse, base_e=impl.lse_base_on_e)\n"),
    ("AC022", "cp_combine(o, lse)\n", "cp_combine(o, lse, **backend_kwargs)\n"),  # unreadable
    ("AC021", "def cp_combine(o, lse, base_e=True):\n    ...\n",
     "def cp_combine(o, lse, *, base_e):\n    ...\n"),
    ("AC003", "from functools import partial\nf = partial(cp_combine, base_e=False)\n",
     "from functools import partial\nf = partial(cp_combine, base_e=impl.lse_base_on_e)\n"),
    ("AC023", "def f(o, lse):\n    merge_e(o, lse)\n    merge_2(o, lse)\n",
     "def f(o, lse):\n    merge_e(o, lse)\n    merge_2(o, lse / math.log(2))\n"),
    ("AC023",  # a call the linter cannot see through ends the chain: no finding, not a guess
     "def f(o, lse):\n    merge_e(o, lse)\n    merge_2(o, lse)\n",
     "def f(o, lse):\n    merge_e(o, lse)\n    merge_2(o, to_base2(lse))\n"),
    ("AC023",  # a dispatch on the base is not a conflict
     "def f(o, lse, flag):\n    if flag:\n        merge_e(o, lse)\n    else:\n        merge_2(o, lse)\n",
     "def f(o, lse, lse_base_on_e):\n    if lse_base_on_e:\n        merge_e(o, lse)\n"
     "    else:\n        merge_2(o, lse)\n"),
    ("AC023",
     "class A:\n    def __init__(self):\n        self.k = Kernel()\n    def fwd(self, q):\n"
     "        o, lse = self.k.run(q, return_lse=True)\n        return merge_e(o, lse)\n",
     "class A:\n    def __init__(self):\n        self.k = Kernel()\n    def fwd(self, q):\n"
     "        o, lse = self.k.run(q, return_lse=True)\n        return merge_e(o, lse * math.log(2))\n"),
    ("AC023",
     "def f(k: object, q):\n    k = Kernel()\n    o, lse = k.run(q, return_lse=True)\n    merge_e(o, lse)\n",
     # return_lse read from an expression may still return the LSE: converted, it is right
     "def f(k: object, q):\n    k = Kernel()\n    o, lse = k.run(q, return_lse=flag)\n"
     "    merge_e(o, lse * math.log(2))\n"),
    ("AC023",  # a same-named function of another package is not the record's
     "from x import merge_e, merge_2\ndef f(o, lse):\n    merge_e(o, lse)\n    merge_2(o, lse)\n",
     "from x import merge_e\nfrom mine import merge_2\ndef f(o, lse):\n    merge_e(o, lse)\n"
     "    merge_2(o, lse)\n"),
    ("AC023",  # a record's function imported under another name
     "from x import merge_e as me, merge_2\ndef f(o, lse):\n    me(o, lse)\n    merge_2(o, lse)\n",
     "from x import merge_e as me, merge_2\ndef f(o, lse):\n    me(o, lse * LN2)\n"
     "    merge_2(o, lse)\nLN2 = math.log(2)\n"),
    ("AC023",  # through a helper of the same file
     "def _m(o, x):\n    return merge_e(o, x)\ndef f(o, lse):\n    merge_2(o, lse)\n    _m(o, lse)\n",
     "def _m(o, x):\n    return merge_e(o, x)\ndef f(o, lse):\n    merge_2(o, lse)\n    _m(o, lse * LN2)\n"
     "LN2 = math.log(2)\n"),
])
def test_flow_rules_from_records_built_in_python(code: str, bad: str, good: str,
                                                 tmp_path: Path) -> None:
    from attn_contracts.lint import lint_paths

    for folder, text in (("bad", bad), ("good", good)):  # module x: the records' own module
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "x.py").write_text(text)
    k = _knowledge()
    assert code in {f.code for f in lint_paths([tmp_path / "bad"], knowledge=k)}  # type: ignore[arg-type]
    assert lint_paths([tmp_path / "good"], knowledge=k) == []  # type: ignore[arg-type]


def test_backend_base_and_legacy_settings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.attn-contracts]\ncombine-functions = ["my_merge"]\nbase-keywords = ["b"]\n')
    rc, out = lint(tmp_path, capsys, {"m.py": (
        "import functools\nf = functools.partial(my_merge, b=True)\n"
        "my_merge(o, l)\n"                      # legacy: base of unknown meaning, so no AC022
        "my_merge(o, l, b=self.impl.lse_base_on_e)\n")})
    assert rc == 1 and _found(out) == {("m.py", 2, "AC003")}, out


def test_record_files_of_the_project_teach_the_flow_rules(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "records").mkdir()
    (tmp_path / "records" / "mine.toml").write_text((FLOW / "buggy" / "contracts.toml").read_text())
    (tmp_path / "pyproject.toml").write_text(
        '[tool.attn-contracts]\nrecord-files = ["records/mine.toml"]\n')
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text(
        "from engine.distributed.cp import cp_lse_ag_out_rs\ncp_lse_ag_out_rs(out, lse, group)\n")
    assert main(["--warnings-as-errors", str(tmp_path / "src")]) == 1
    assert _found(capsys.readouterr().out) == {("m.py", 2, "AC022")}


def test_parallel_per_file_work_gives_the_same_findings(tmp_path: Path) -> None:
    from attn_contracts.lint import lint_paths

    (tmp_path / "base.py").write_text(BASE)
    for i in range(80):
        (tmp_path / f"b{i}.py").write_text(
            "from base import AttentionImpl\n"
            f"class B{i}(AttentionImpl):\n    can_return_lse_for_decode = True\n"
            + ("    lse_base_on_e = False\n" if i % 3 else "")
            + f"def f(o, l, g):\n    return cp_lse_ag_out_rs(o, l, g, is_lse_base_on_e={i % 2 == 0})\n")
    one = lint_paths([tmp_path], jobs=1)
    # 27 inherited defaults nothing confirms, 80 literal bases; the notes besides (AC029: the
    # vLLM release unknown, AC032: 53 own declarations no kernel confirms) are not counted
    assert len([f for f in one if f.severity != "note"]) == 27 + 80
    assert sum(f.code == "AC032" for f in one) == 53
    assert lint_paths([tmp_path], jobs=2) == one


# --- one reader of record documents ----------------------------------------------------------------
def test_a_broken_consumers_table_is_ac000(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """The linter's old table pattern knew [[record]], [[records]], [[consumer]] but not
    [[consumers]]: a broken file of those was skipped without a word."""
    rc, out = lint(tmp_path, capsys, {"mine.toml": '[[consumers]]\nname = "x.y\n'})
    assert rc == 1 and "mine.toml:" in out and "AC000" in out


def test_record_files_keep_their_per_record_findings_and_are_read_guarded(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import os

    (tmp_path / "records").mkdir()
    (tmp_path / "records" / "bad.toml").write_text(NO_BASE_TOML)
    os.mkfifo(tmp_path / "records" / "pipe.toml")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.attn-contracts]\nrecord-files = ["records/bad.toml", "records/pipe.toml"]\n')
    (tmp_path / "engine.py").write_text("x = 1\n")
    from attn_contracts.lint.config import load_config
    from attn_contracts.lint.record_index import load_project_records

    cfg = load_config(tmp_path / "pyproject.toml")
    producers, _, findings = load_project_records(cfg.record_files)
    assert producers == []
    assert sorted(f.code for f in findings) == [Code.AC000, Code.AC001]
    assert any(f.location is not None and f.location.path.endswith("bad.toml")
               and f.location.point == (3, 1) for f in findings)  # the bad record, at its line
    assert any("not a regular file" in f.message for f in findings)  # the FIFO, never opened
