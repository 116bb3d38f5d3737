"""attn_contracts.lint.config and the records files lint reads: no records file the user did not
name changes a verdict, a named record that contradicts the catalog is left out (AC005), a
malformed file is located where the parser stopped and read in linear time, bad configuration is
one line and exit 2, versions are PEP 440 per distribution, each tree is linted at its own release,
and records of one function that disagree are named (AC029). Every fixture is written here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from attn_contracts.findings import Code
from attn_contracts.findings import Severity
from attn_contracts.lint import LintConfig
from attn_contracts.lint import lint_paths
from attn_contracts.lint import main

#: FlashInfer's decode wrapper returns base-2 LSE (built-in record flashinfer.batch_decode);
#: vLLM's merge_attn_states reads base e (built-in vllm.merge_attn_states): an AC023 error
ENGINE = """\
from flashinfer import BatchDecodeWithPagedKVCacheWrapper
from vllm.v1.attention.ops.merge_attn_states import merge_attn_states


def f(out, q, kv):
    w = BatchDecodeWithPagedKVCacheWrapper(None, "NHD")
    o, lse = w.run(q, kv, return_lse=True)
    merge_attn_states(out, o, lse, o, lse)
"""

#: a producer record saying that same call returns base e
PRODUCER_E = """\
[[record]]
name = "mine.decode"
library = "flashinfer"
source = "here"
evidence = "read_from_code"
lse = { returns = "lse", base = "e", layout = "token_head", dtype = "float32", empty_row = "-inf", includes_sink = false }
decode = { attention = "mha", out_layout = "token_head_dim", head_dims = [128], q_dtypes = ["bfloat16"], q_len_gt_1 = false }
calls = [{ function = "flashinfer.decode.BatchDecodeWithPagedKVCacheWrapper.run", when = %s }]
"""

#: a consumer record saying vLLM's merge reads base 2
CONSUMER_2 = """\
[[consumer]]
name = "mine.merge"
library = "vllm"
source = "here"
evidence = "read_from_code"
calls = [{ function = "vllm.v1.attention.ops.merge_attn_states.merge_attn_states", lse_args = ["prefix_lse", "suffix_lse", "2", "4"] }]
base = { kind = "fixed", base = "2" }
lse = { layouts = ["head_token"], states = "separate", dtypes = ["float32"] }
empty = { reads_as_empty = ["-inf"], all_empty = "zero", zero_weight_nan_safe = true }
output = { returns_lse = false }
"""

HOSTILE = {"producer": PRODUCER_E % '{ return_lse = "True" }', "consumer": CONSUMER_2}


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _codes(out: str) -> set[tuple[str, str]]:
    """(file name, code) of each text-format line."""
    found = set()
    for line in out.splitlines():
        where, _, rest = line.partition(": ")
        found.add((Path(where.rsplit(":", 2)[0]).name, rest.split()[0]))
    return found


# --- only named records teach --------------------------------------------------------------
@pytest.mark.parametrize("role", ["producer", "consumer"])
def test_a_records_file_in_the_linted_tree_never_silences_an_error(
        role: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path, {"engine.py": ENGINE})
    assert main(["--warnings-as-errors", str(tmp_path)]) == 1
    assert _codes(capsys.readouterr().out) == {("engine.py", "AC023")}
    _write(tmp_path, {"stray.toml": HOSTILE[role]})  # nobody named it
    assert main(["--warnings-as-errors", str(tmp_path)]) == 1  # was 0 (producer)
    assert _codes(capsys.readouterr().out) == {("engine.py", "AC023")}  # was an AC029 note (consumer)


def test_a_records_file_in_the_tree_is_still_checked_against_the_schema(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = HOSTILE["producer"].replace('base = "e", ', "")  # no base: AC001
    _write(tmp_path, {"engine.py": ENGINE, "stray.toml": broken})
    assert main([str(tmp_path)]) == 1
    assert _codes(capsys.readouterr().out) == {("engine.py", "AC023"), ("stray.toml", "AC001")}


@pytest.mark.parametrize("how", ["--records", "record-files"])
@pytest.mark.parametrize("role", ["producer", "consumer"])
def test_a_named_record_that_contradicts_the_catalog_is_ac005_and_left_out(
        role: str, how: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path, {"src/engine.py": ENGINE, "records/mine.toml": HOSTILE[role]})
    args = ["--warnings-as-errors", str(tmp_path / "src")]
    if how == "--records":
        args += ["--records", str(tmp_path / "records" / "mine.toml")]
    else:
        _write(tmp_path, {"pyproject.toml": '[tool.attn-contracts]\nrecord-files = '
                                            '["records/mine.toml"]\n'})
    assert main(args) == 1
    out = capsys.readouterr().out
    assert _codes(out) == {("engine.py", "AC023"), ("mine.toml", "AC005")}
    ac005 = next(s for s in out.splitlines() if " AC005 " in s)
    assert "mine.toml:2:1:" in ac005  # the record's own line


def test_named_records_the_catalog_does_not_contradict_teach(tmp_path: Path) -> None:
    basee = PRODUCER_E % '{ return_lse = "True", return_lse_base_on_e = "True" }'
    basee = basee.replace("flashinfer.decode.BatchDecodeWithPagedKVCacheWrapper",
                          "flashinfer.mla.BatchMLAPagedAttentionWrapper")
    files = {
        # what flashinfer.mla.fa2+basee says: one of the built-ins of that call agrees
        "agree.toml": basee,
        # a function the catalog does not know
        "new.toml": CONSUMER_2.replace("vllm.v1.attention.ops.merge_attn_states.merge_attn_states",
                                       "mine.ops.merge_two").replace('"mine.merge"', '"mine.m2"'),
        "m.py": "from mine.ops import merge_two\nfrom vllm.v1.attention.ops.merge_attn_states "
                "import merge_attn_states\n\n\ndef f(o, lse):\n    merge_two(o, o, lse, o, lse)\n"
                "    merge_attn_states(o, o, lse, o, lse)\n"}
    _write(tmp_path, files)
    found = lint_paths([tmp_path / "m.py"], records=[tmp_path / "agree.toml", tmp_path / "new.toml"])
    assert {(f.code, f.severity) for f in found} == {(Code.AC023, Severity.ERROR)}  # taught
    assert lint_paths([tmp_path / "m.py"]) == []  # not taught: merge_two is nobody's


def test_a_looser_or_narrower_named_record_still_contradicts(tmp_path: Path) -> None:
    # no `when` at all applies to every call of run(); an extra keyword that the real call passes
    # applies to that call: either way base e where the catalog says base 2
    for when in ("{}", '{ return_lse = "True", q_scale = "1.0" }'):
        _write(tmp_path, {"mine.toml": PRODUCER_E % when, "e.py": ENGINE.replace(
            "return_lse=True)", "return_lse=True, q_scale=1.0)")})
        found = lint_paths([tmp_path / "e.py"], records=[tmp_path / "mine.toml"])
        assert {f.code for f in found} == {Code.AC005, Code.AC023}, when


def test_a_missing_records_option_is_a_usage_error(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    _write(tmp_path, {"m.py": "x = 1\n"})
    assert main([str(tmp_path), "--records", str(tmp_path / "nope.toml")]) == 2
    assert "--records" in capsys.readouterr().err


# --- where a records file is malformed ---------------------------------------------------
def test_a_malformed_records_toml_is_located_where_the_parser_stopped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = '[[record]]\nname = "x.y"\nlibrary = = "x"\n'  # line 3, column 11
    _write(tmp_path, {"tree/r.toml": bad, "named.toml": bad, "tree/m.py": "x = 1\n"})
    assert main([str(tmp_path / "tree"), "--records", str(tmp_path / "named.toml")]) == 1
    out = capsys.readouterr().out
    assert "r.toml:3:11: AC000" in out and "named.toml:3:11: AC000" in out


# --- reading a records file is linear ----------------------------------------------------
def test_reading_a_records_file_visits_each_line_a_bounded_number_of_times(tmp_path: Path) -> None:
    """Counts the lines Python runs in attn_contracts/sources.py while reading a file of n
    records: a search of every line for every record (the old ``_line_of``) runs ~n²/2 times,
    one pass ~n. Speed itself is measured by bench/records_file.py, not here."""
    from attn_contracts import sources

    n = 600
    (tmp_path / "many.toml").write_text("".join(
        (PRODUCER_E % '{ return_lse = "True" }').replace("mine.decode", f"mine.k{i}")
        .replace("flashinfer.decode.", f"mine.m{i}.") + "\n" for i in range(n)))
    lines = len((tmp_path / "many.toml").read_text().splitlines())
    events = 0

    def local(frame, event, arg):  # type: ignore[no-untyped-def]
        nonlocal events
        events += event == "line"
        return local

    def call(frame, event, arg):  # type: ignore[no-untyped-def]
        return local if frame.f_code.co_filename == sources.__file__ else None

    sys.settrace(call)
    try:
        records, findings = sources.read_file(tmp_path / "many.toml")
    finally:
        sys.settrace(None)
    assert len(records) == n and findings == []
    assert events < 40 * lines, f"{events} lines run for a {lines}-line file"


# --- a bad pyproject.toml, a FIFO named by --config ----------------------------------------
@pytest.mark.parametrize("text", [
    "tool = 1\n", '[tool]\nattn-contracts = "x"\n', "a = = 1\n", "[tool.attn-contracts\n",
    b"\xff\xfe[tool]\n", "[tool.attn-contracts]\nselect = 3\n"])
def test_a_bad_nearest_pyproject_is_one_line_and_exit_2(
        text: str | bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "m.py").write_text("x = 1\n")
    py = tmp_path / "pyproject.toml"
    py.write_bytes(text if isinstance(text, bytes) else text.encode())
    for extra in ([], ["--exit-zero"]):
        assert main([str(tmp_path), *extra]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "pyproject.toml" in err and "Traceback" not in err


def test_a_fifo_named_by_config_is_refused_not_read(tmp_path: Path) -> None:
    fifo = tmp_path / "pyproject.toml"
    os.mkfifo(fifo)
    (tmp_path / "m.py").write_text("x = 1\n")
    code = ("import sys\nfrom attn_contracts.lint import main\n"
            f"sys.exit(main(['--config', {str(fifo)!r}, {str(tmp_path / 'm.py')!r}]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=False)  # blocked forever in open() before
    assert done.returncode == 2 and "not a regular file" in done.stderr


# --- [tool.attn-contracts] versions ------------------------------------------------------
@pytest.mark.parametrize(("table", "bad"), [
    ('{ vllm = "garbage" }', "garbage"), ('{ vllm = "" }', "vllm"), ('{ vllm = 33 }', "vllm"),
    ('{ "vl lm" = "1.0" }', "vl lm"), ('{ "-vllm" = "1.0" }', "-vllm"), ('"0.33.0"', "versions"),
    ('{ flashinfer = "0.7", flashinfer-python = "0.6" }', "flashinfer-python")])
def test_versions_must_be_pep440_per_distribution(
        table: str, bad: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "m.py").write_text("x = 1\n")
    (tmp_path / "pyproject.toml").write_text(f"[tool.attn-contracts]\nversions = {table}\n")
    assert main([str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert bad in err and err.count("\n") == 1


def test_a_distribution_name_is_the_records_library(tmp_path: Path) -> None:
    assert LintConfig(versions={"FlashInfer-Python": "0.7.2.post1"}).versions == {
        "flashinfer": "0.7.2.post1"}
    # return_lse_base pins the MLA decode's base in FlashInfer 0.7.2 and does not exist in 0.6
    # (there "auto" autotunes: AC028): the setting under its distribution name picks the release
    (tmp_path / "mla.py").write_text(
        "from flashinfer.decode import trtllm_batch_decode_with_kv_cache_mla as decode\n"
        "def f(q, kv, ws):\n    return decode(q, kv, ws, 1, 2, 3, None, None, 4, return_lse=True, "
        "return_lse_base='base2')\n")
    def codes(v: str) -> set[str]:
        return {f.code for f in lint_paths([tmp_path], LintConfig(
            versions={"flashinfer-python": v}))}
    assert "AC028" not in codes("0.7.2.post1") and "AC028" in codes("0.6.13")


# --- each tree at its own release --------------------------------------------------------
def _vllm_tree(root: Path, version: str) -> Path:
    """A vLLM-like tree of one release (dist-info beside the package) whose combine lives in
    ops/dcp.py: the catalog's path of it from vLLM 0.26 on (vllm.cp_lse_ag_out_rs)."""
    pkg = root / "vllm"
    _write(root, {
        "vllm/__init__.py": "", "vllm/v1/__init__.py": "", "vllm/v1/attention/__init__.py": "",
        "vllm/v1/attention/ops/__init__.py": "",
        "vllm/v1/attention/ops/dcp.py": "def cp_lse_ag_out_rs(cp_attn_out, cp_attn_lse, cp_group, "
                                        "is_lse_base_on_e=True):\n    return cp_attn_out\n",
        f"vllm-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n"})
    return pkg


def test_two_trees_of_one_package_are_each_linted_at_their_own_release(tmp_path: Path) -> None:
    old, new = _vllm_tree(tmp_path / "a", "0.25.0"), _vllm_tree(tmp_path / "b", "0.33.0")

    def at(paths: list[Path]) -> set[tuple[str, str]]:
        return {(f.location.path.split("/vllm/")[0].rsplit("/", 1)[-1], f.code)
                for f in lint_paths(paths) if f.location is not None}

    alone = at([old]) | at([new])
    assert alone == {("b", "AC021")}  # dcp.py is the record's function at 0.33 only
    assert at([old, new]) == at([new, old]) == alone


# --- overlapping records are named -------------------------------------------------------
def _consumer(name: str, base: str, versions: str) -> str:
    base_table = ('{ kind = "fixed", base = "e" }' if base == "e" else
                  '{ kind = "keyword", keyword = "base_e", values = { "True" = "e", "False" = "2" }, '
                  'default = "True" }')
    return (CONSUMER_2.replace('"mine.merge"', f'"{name}"')
            .replace('library = "vllm"', f'library = "eng"\nlibrary_version = "{versions}"')
            .replace("vllm.v1.attention.ops.merge_attn_states.merge_attn_states", "eng.ops.combine")
            .replace('base = { kind = "fixed", base = "2" }', f"base = {base_table}"))


def test_records_of_one_function_that_disagree_are_named_with_why(tmp_path: Path) -> None:
    # a keyword consumer and a fixed-e one for one function: with True both mean e (agreed)
    _write(tmp_path, {
        "records.toml": _consumer("eng.kw", "keyword", "<1.0") + "\n" + _consumer(
            "eng.fixed", "e", "<0.5"),
        "m.py": "from eng.ops import combine\n\ndef f(o, lse, impl):\n"
                "    return combine(o, o, lse, o, lse, base_e=impl.base_e)\n"})

    def ac029(versions: dict[str, str]) -> str:
        found = lint_paths([tmp_path / "m.py"], LintConfig(versions=versions),
                           records=[tmp_path / "records.toml"])
        notes = [f for f in found if f.code is Code.AC029]
        assert [f.severity for f in notes] == [Severity.NOTE], found
        return notes[0].message

    unknown = ac029({})
    assert "eng.kw" in unknown and "eng.fixed" in unknown and "unknown" in unknown
    overlap = ac029({"eng": "0.4"})  # configured, and both ranges hold it
    assert "eng.kw" in overlap and "eng.fixed" in overlap and "eng 0.4" in overlap
    assert "unknown" not in overlap
    assert not [f for f in lint_paths([tmp_path / "m.py"], LintConfig(versions={"eng": "0.7"}),
                                      records=[tmp_path / "records.toml"])]  # one record holds


# --- one verdict whatever the order of the paths (issue 38, item 1) -----------------------------
def _two_projects(tmp_path: Path, ignore_b: str) -> tuple[Path, Path]:
    """Project ``a`` ignores AC023; project ``b`` holds the AC023 error and ignores ``ignore_b``."""
    _write(tmp_path / "a", {"pyproject.toml": '[tool.attn-contracts]\nignore = ["AC023"]\n',
                            "m.py": "x = 1\n"})
    _write(tmp_path / "b", {"pyproject.toml": f"[tool.attn-contracts]\nignore = [{ignore_b}]\n",
                            "engine.py": ENGINE})
    return tmp_path / "a", tmp_path / "b"


def test_two_projects_that_differ_are_refused_in_either_order(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, b = _two_projects(tmp_path, "")
    assert main([str(a), str(b)]) == 2
    first = capsys.readouterr().err
    assert main([str(b), str(a)]) == 2
    assert capsys.readouterr().err == first
    assert len(first.strip().splitlines()) == 1
    assert str(a / "pyproject.toml") in first and str(b / "pyproject.toml") in first


def test_two_projects_that_say_the_same_are_linted_together(tmp_path: Path) -> None:
    a, b = _two_projects(tmp_path, '"AC023"')
    assert main([str(a), str(b)]) == main([str(b), str(a)]) == 0


def test_a_path_outside_any_project_is_another_configuration(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a, _ = _two_projects(tmp_path, "")
    loose = tmp_path / "loose"
    _write(loose, {"engine.py": ENGINE})
    assert main([str(loose), str(a)]) == main([str(a), str(loose)]) == 2
    assert "no pyproject.toml" in capsys.readouterr().err
    # --config: one configuration for every path, by the user's choice
    assert main([str(loose), str(a), "--config", str(a / "pyproject.toml")]) == 0
    assert main([str(loose)]) == 1


def test_a_setting_given_at_its_default_is_still_the_projects_word(tmp_path: Path) -> None:
    """``base-attrs`` given (even as the default) changes how declarations are read, so two
    projects that differ only in giving it are two configurations."""
    _write(tmp_path / "a", {"pyproject.toml": '[tool.attn-contracts]\nbase-attrs = '
                            '["lse_base_on_e"]\n', "m.py": "x = 1\n"})
    _write(tmp_path / "b", {"pyproject.toml": "[tool.attn-contracts]\n", "m.py": "x = 1\n"})
    assert main([str(tmp_path / "a"), str(tmp_path / "b")]) == 2
