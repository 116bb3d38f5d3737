"""Issue 26 (hardening, round 3), the linter's items: no records file the user did not name changes
a verdict (1), output that other tools read is valid for them (8-10), bad input is one line and
exit 2 (11, 13, 14), a records file is read in linear time (12), each tree is linted at its own
release (15) and overlapping records are named (16). Every fixture is written here."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from test_lint_cli import validate_sarif

from attn_contracts.findings import Code, Severity
from attn_contracts.lint import LintConfig, lint_paths, main

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


# --- item 1: only named records teach --------------------------------------------------------------
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


# --- item 8: SARIF URIs -----------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["with space.py", "hash#1.py", "per%cent.py", "what?.py",
                                  "naïve.py", "colon:x.py"])
def test_sarif_uris_are_valid_and_lead_back_to_the_file(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    inside, outside = tmp_path / "repo", tmp_path / "elsewhere"
    _write(inside, {f"sub dir/{name}": "assert i.supports_dcp\n"})
    _write(outside, {name: "assert i.supports_dcp\n"})
    monkeypatch.chdir(inside)
    assert main(["--warnings-as-errors", "--format", "sarif", "sub dir", str(outside)]) == 1
    log = json.loads(capsys.readouterr().out)
    validate_sarif(log)
    run = log["runs"][0]
    base = run["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert base.startswith("file:///") and base.endswith("/")
    files = []
    for result in run["results"]:
        loc = result["locations"][0]["physicalLocation"]["artifactLocation"]
        uri = loc["uri"] if "uriBaseId" not in loc else base + loc["uri"]
        assert loc.get("uriBaseId", "%SRCROOT%") == "%SRCROOT%"
        assert urlsplit(uri).scheme == "file"
        files.append(Path(unquote(urlsplit(uri).path)))
    assert sorted(files) == sorted([inside / "sub dir" / name, outside / name])
    relative = [r for r in run["results"]
                if "uriBaseId" in r["locations"][0]["physicalLocation"]["artifactLocation"]]
    assert len(relative) == 1  # the file below the working folder is relative to %SRCROOT%


# --- item 9: GitHub workflow commands -------------------------------------------------------------
def _unescape(value: str) -> str:
    for code, char in (("%3A", ":"), ("%2C", ","), ("%0D", "\r"), ("%0A", "\n"), ("%25", "%")):
        value = value.replace(code, char)
    return value


def test_github_annotations_escape_paths_and_messages(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    target = _write(tmp_path, {"a,b:c%d.py": "assert i.supports_dcp\n"}) / "a,b:c%d.py"
    assert main(["--warnings-as-errors", "--format", "github", str(target)]) == 1
    line = capsys.readouterr().out.strip()
    command, _, message = line[2:].partition("::")
    kind, _, props = command.partition(" ")
    # the runner's parser: properties split at ',', each at its first '='
    parsed = dict(p.split("=", 1) for p in props.split(","))
    assert set(parsed) == {"file", "line", "col", "title"}
    assert _unescape(parsed["file"]) == str(target)
    assert kind == "warning" or kind == "error"
    assert parsed["title"] == "AC011" and "\n" not in message


# --- item 10: columns are characters --------------------------------------------------------------
def test_columns_count_characters_in_every_format(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # the assert is the 14th character and the 19th byte of the line
    f = _write(tmp_path, {"m.py": 'x = "ééééé"; assert i.supports_dcp\n'}) / "m.py"
    assert main([str(f), "--warnings-as-errors"]) == 1
    assert "m.py:1:14: AC011" in capsys.readouterr().out
    main([str(f), "--format", "json"])
    assert json.loads(capsys.readouterr().out)[0]["col"] == 14
    main([str(f), "--format", "github"])
    assert ",col=14," in capsys.readouterr().out
    main([str(f), "--format", "sarif"])
    region = json.loads(capsys.readouterr().out)["runs"][0]["results"][0]["locations"][0][
        "physicalLocation"]["region"]
    assert region == {"startLine": 1, "startColumn": 14}
    f.write_text('y = "ü"; z = "\n')  # unterminated string: SyntaxError counts characters already
    main([str(f)])
    assert "m.py:1:14: AC000" in capsys.readouterr().out


# --- item 11: where a records file is malformed ---------------------------------------------------
def test_a_malformed_records_toml_is_located_where_the_parser_stopped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = '[[record]]\nname = "x.y"\nlibrary = = "x"\n'  # line 3, column 11
    _write(tmp_path, {"tree/r.toml": bad, "named.toml": bad, "tree/m.py": "x = 1\n"})
    assert main([str(tmp_path / "tree"), "--records", str(tmp_path / "named.toml")]) == 1
    out = capsys.readouterr().out
    assert "r.toml:3:11: AC000" in out and "named.toml:3:11: AC000" in out


# --- item 12: reading a records file is linear ----------------------------------------------------
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


# --- item 13: a bad pyproject.toml, a FIFO named by --config ----------------------------------------
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


# --- item 14: [tool.attn-contracts] versions ------------------------------------------------------
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


# --- item 15: each tree at its own release --------------------------------------------------------
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
        return {(f.location.split("/vllm/")[0].rsplit("/", 1)[-1], f.code)
                for f in lint_paths(paths)}

    alone = at([old]) | at([new])
    assert alone == {("b", "AC021")}  # dcp.py is the record's function at 0.33 only
    assert at([old, new]) == at([new, old]) == alone


# --- item 16: overlapping records are named -------------------------------------------------------
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


def test_the_catalog_check_refuses_overlapping_records_of_one_function() -> None:
    from test_catalog_check import _tool

    from attn_contracts.consumer import ConsumerRecord
    from attn_contracts.registry import Registry

    tool = _tool()
    reg = Registry()
    assert tool.overlaps([*reg.records(), *reg.consumers()]) == []  # the shipped catalog
    assert tool.main(["--ranges-only"]) == 0
    import tomllib

    def rec(name: str, base: str, versions: str) -> ConsumerRecord:
        return ConsumerRecord.model_validate({"role": "consumer", **tomllib.loads(
            _consumer(name, base, versions))["consumer"][0]})

    pair = [rec("eng.kw", "keyword", "<1.0"), rec("eng.fixed", "e", ">=0.5")]
    assert [o["records"] for o in tool.overlaps(pair)] == ["eng.kw, eng.fixed"]
    assert tool.overlaps([rec("eng.kw", "keyword", "<0.5"), rec("eng.fixed", "e", ">=0.5")]) == []
    assert tool.overlaps([rec("eng.a", "e", "<1.0"), rec("eng.b", "e", ">=0.5")]) == []  # agree


@pytest.mark.parametrize(("a", "b", "meet"), [
    (">=0.29", "<0.29", False), (">=0.25", "<0.29", True), ("==0.25.*", ">0.25.5", True),
    (">0.25", "<=0.25", False), (">0.25", "<0.25.1", True), ("<0.25", ">=0.24.9", True),
    ("!=0.25", "==0.25", False), ("~=0.25.1", "<0.25.1", False), ("", ">=0.3", True),
    (">=0.26,<0.30", ">=0.30", False), (">=0.32,<0.33", ">=0.26", True), ("<0.25", "<0.25", True)])
def test_ranges_overlap(a: str, b: str, meet: bool) -> None:
    from attn_contracts.versions import ranges_overlap

    assert ranges_overlap(a, b) is meet and ranges_overlap(b, a) is meet


def test_ranges_overlap_agrees_with_trying_every_release() -> None:
    """Against an independent reference: every version of a fine grid."""
    from hypothesis import given, settings
    from hypothesis import strategies as st
    from packaging.specifiers import SpecifierSet

    from attn_contracts.versions import ranges_overlap

    grid = [f"0.{m}.{p}" for m in range(6) for p in range(4)]
    versions = [*grid, *(f"{v}.post1" for v in grid), *(f"{v}rc1" for v in grid)]
    clause = st.builds(lambda op, v: f"{op}{v}", st.sampled_from(
        [">=", ">", "<=", "<", "==", "!=", "~="]), st.sampled_from(grid))
    spec = st.lists(clause, min_size=1, max_size=3).map(",".join)

    @settings(max_examples=300, deadline=None)
    @given(spec, spec)
    def check(a: str, b: str) -> None:
        sa, sb = SpecifierSet(a, prereleases=True), SpecifierSet(b, prereleases=True)
        if any(sa.contains(v) and sb.contains(v) for v in versions):
            assert ranges_overlap(a, b), (a, b)

    check()


def test_lint_keeps_working_on_the_real_release_trees_in_both_orders() -> None:
    roots = [Path("/work/releases/vllm-0.25.0/vllm/v1/attention/ops"),
             Path("/work/releases/vllm-0.33.0/vllm/v1/attention/ops")]
    if not all(r.is_dir() for r in roots):
        pytest.skip("needs the unpacked vLLM 0.25.0 and 0.33.0 sources")
    both = lint_paths(roots)
    assert both == lint_paths(roots[::-1])
    assert set(both) == {*lint_paths(roots[:1]), *lint_paths(roots[1:])}
