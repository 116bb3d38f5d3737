"""The committed catalog check (tools/check_catalog.py, run against the released wheels) is in
step with the catalog: every call of every record is checked in each read release its ranges
admit, found with its keywords, and every record not checked is listed with the reason. Offline:
this reads the committed report, never a wheel. After changing the catalog, rerun
``python tools/check_catalog.py --releases /work/releases --wheels /tmp/wheels --out
bench/results/catalog-check`` (the slim unpacked copies where they exist, else the wheels)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from attn_contracts.registry import Registry
from attn_contracts.versions import in_range

ROOT = Path(__file__).parents[1]
REPORT = ROOT / "bench" / "results" / "catalog-check.json"


def _tool():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("check_catalog", ROOT / "tools" / "check_catalog.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_catalog"] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_the_report_covers_every_call_in_every_release_it_claims() -> None:
    tool = _tool()
    report = json.loads(REPORT.read_text())
    assert report["releases"] == [f"{d} {v}" for d, v, _, _ in tool.RELEASES]
    rows = {(r["record"], r["function"], r["release"]): r for r in report["rows"] if r["claimed"]}
    expected = set()
    reg = Registry()
    for rec in [*reg.records(), *reg.consumers()]:
        for call in rec.calls:
            for _, version, package, library in tool.RELEASES:
                if (call.function.partition(".")[0] == package and rec.library == library
                        and in_range(rec.library_version, version)
                        and in_range(call.versions, version)):
                    expected.add((rec.name, call.function, f"{package} {version}"))
    assert set(rows) == expected, "catalog changed: rerun tools/check_catalog.py"
    bad = [k for k, r in rows.items() if not r["found"] or r.get("missing_keywords")]
    assert bad == []


def test_every_record_is_checked_or_listed_with_why() -> None:
    tool = _tool()
    report = json.loads(REPORT.read_text())
    checked = {r["record"] for r in report["rows"] if r["claimed"]}
    reg = Registry()
    names = {r.name for r in [*reg.records(), *reg.consumers()]}
    assert checked | set(report["unchecked"]) == names
    assert not checked & set(report["unchecked"])
    # a record of a library whose release is read is checked unless its range excludes them all
    libs = {lib for _, _, _, lib in tool.RELEASES}
    for rec in [*reg.records(), *reg.consumers()]:
        if rec.library in libs and rec.calls and rec.name not in checked:
            assert not any(in_range(rec.library_version, v) and any(
                in_range(c.versions, v) for c in rec.calls)
                for _, v, _, lib in tool.RELEASES if lib == rec.library), rec.name


#: the APIs of issue 29, each with the release its record is checked in
ISSUE_29 = {"flashinfer.decode_cp_a2a_lse_reduce": "flashinfer 0.7.2.post1",
            "flashinfer.batch_prefill": "flashinfer 0.7.2.post1",
            "flashinfer.trtllm_ragged_deepseek": "flashinfer 0.7.2.post1",
            "flashinfer.cudnn_prefill": "flashinfer 0.7.2.post1",
            "sglang.merge_state_v2": "sgl_kernel 0.4.10",
            "sglang.merge_state.dispatch": "sglang 0.5.23"}


def test_the_newest_apis_are_found_with_their_keywords_and_cited_at_their_line() -> None:
    report = json.loads(REPORT.read_text())
    for name, release in ISSUE_29.items():
        rows = [r for r in report["rows"] if r["record"] == name and r["claimed"]]
        assert rows and release in {r["release"] for r in rows}, name
        rows = [r for r in rows if r["release"] == release]  # older releases: below
        assert all(r["found"] and not r["missing_keywords"] for r in rows), name
        # the call-chosen keywords are checked where the record has them
        if name == "flashinfer.batch_prefill":
            assert any({"lse_base", "lse_layout"} <= set(r["keywords"]) for r in rows)
        if name == "flashinfer.decode_cp_a2a_lse_reduce":
            assert all("lse_mode" in r["keywords"] for r in rows)
        # a new record's citation names the file and a line range holding the definition
        if name != "flashinfer.batch_prefill":  # its run() is cited at the overload that runs
            assert all(r["cited"] == "line" for r in rows), name
    # before 0.7.2.post1 the prefill wrappers' run() has no lse_base/lse_layout: the record's
    # older calls rely on neither, and are found in every release vLLM pinned
    older = [r for r in report["rows"] if r["record"] == "flashinfer.batch_prefill"
             and r["release"] in ("flashinfer 0.6.13", "flashinfer 0.6.18", "flashinfer 0.7.0.post1")]
    assert len({r["release"] for r in older}) == 3
    assert all(r["found"] and "lse_base" not in r["keywords"] for r in older)


def test_a_citation_holds_the_line_only_after_its_own_file() -> None:
    tool = _tool()
    text = "a/x.py:L10-L20 (f), L40; b/y.py:L1-L5 @ 1.0"
    assert tool.citation(text, "a/x.py", 15) == "line"
    assert tool.citation(text, "a/x.py", 40) == "line"
    assert tool.citation(text, "a/x.py", 3) == "file"  # L1-L5 belongs to b/y.py
    assert tool.citation(text, "c/z.py", 3) == "no"


def test_a_release_is_read_from_its_unpacked_copy(tmp_path: Path) -> None:
    tool = _tool()
    pkg = tmp_path / "lib-1.0" / "lib"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("from .m import f\n")
    (pkg / "m.py").write_text("def f(lse, *, mode='a'):\n    return lse\n")
    wheel = tool._release("lib", "1.0", "lib", "lib", tmp_path, None)
    path, line, _ = tool._resolve(wheel, "lib.f")
    assert (path, line) == ("lib/m.py", 1)
    with pytest.raises(SystemExit):  # neither unpacked nor a folder to download it into
        tool._release("lib", "2.0", "lib", "lib", tmp_path, None)


def test_every_fact_beside_the_catalog_is_checked_and_found() -> None:
    """tools/check_catalog.py checks backends/catalog/facts too: every built-in adapter's library
    function and every engine attribute name, in the releases they cite (rerun it when they
    change)."""
    from attn_contracts.facts import facts_file

    facts = json.loads(REPORT.read_text())["facts"]
    assert facts and all(f["found"] for f in facts), [f for f in facts if not f["found"]]
    assert {f["name"] for f in facts if f["fact"] == "adapters"} == set(
        facts_file("adapters")["known"])
    raw = facts_file("attributes")["engine"]["vllm"]
    assert {f["name"] for f in facts if f["fact"] == "attributes.vllm"} == {
        *raw["returns"], *raw["base"], *raw["capabilities"]}


def test_the_catalog_check_refuses_overlapping_records_of_one_function() -> None:
    from test_lint_config import _consumer

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


def test_a_range_closes_only_at_a_verified_release() -> None:
    """Ranges come from verification: a hand cap at a release nobody checked (vLLM 0.34's
    ``<0.34`` on the vllm.dcp.* records, before 0.34.0 was verified) is refused, naming it."""
    from attn_contracts.consumer import ConsumerRecord
    from attn_contracts.registry import Registry

    tool = _tool()
    reg = Registry()
    assert tool.open_top([*reg.records(), *reg.consumers()]) == []  # the shipped catalog
    shipped = reg.consumer("vllm.dcp.cp_lse_ag_out_rs")
    raw = shipped.model_dump(mode="json")
    capped = ConsumerRecord.model_validate({**raw, "library_version": ">=0.29,<0.99"})
    [found] = tool.open_top([capped])
    assert found["record"] == "vllm.dcp.cp_lse_ag_out_rs" and found["bound"] == "<0.99"
    at_verified = ConsumerRecord.model_validate({**raw, "library_version": ">=0.29,<0.33"})
    assert tool.open_top([at_verified]) == []  # closed where the check saw it change


def _fake_release(text: str, version: str = "9.0.0"):  # type: ignore[no-untyped-def]
    """A vLLM "release" holding one module with the cited combine, written for this test."""
    tool = _tool()
    return tool.Wheel("vllm", "vllm", version, {"vllm/v1/attention/ops/dcp.py": text}, dist="vllm")


_COMBINE = ("def cp_lse_ag_out_rs(a, cp_attn_lse, group, ctx=None, return_lse=False,\n"
            "                     is_lse_base_on_e={default}, seq_lens=None,\n"
            "                     query_start_loc=None{more}):\n"
            "    return {body}\n")


def _status(text: str, stored: dict) -> dict:  # type: ignore[type-arg]
    tool = _tool()
    rows = tool.verify_release(_fake_release(text), stored)
    return {r["status"]: r for r in rows if r["record"] == "vllm.dcp.cp_lse_ag_out_rs"}


def test_a_changed_cited_function_fails_the_check_naming_the_record() -> None:
    tool = _tool()
    base = _COMBINE.format(default="True", more="", body="a")
    stored: dict = {}  # type: ignore[type-arg]
    first = _status(base, stored)
    assert set(first) == {"new"}
    fp = first["new"]["fingerprint"]
    stored = {"vllm.dcp.cp_lse_ag_out_rs": {
        "vllm.v1.attention.ops.dcp.cp_lse_ag_out_rs": {**fp, "release": "vllm 8.0.0"}}}
    assert set(_status(base, stored)) == {"same"}
    # a documentation edit and a move are no change
    moved = "\n\n" + base.replace("    return a", '    """Words."""\n    return a')
    assert set(_status(moved, stored)) == {"same"}
    grown = _status(_COMBINE.format(default="True", more=", out=None", body="a"), stored)
    assert "+`out=None`" in grown["changed"]["changes"][0]
    body = _status(_COMBINE.format(default="True", more="", body="group"), stored)
    assert body["changed"]["changes"][0].startswith("body hash")
    flipped = _status(_COMBINE.format(default="False", more="", body="a"), stored)
    assert "the record claims True" in "; ".join(flipped["broken"]["changes"])
    gone = tool.verify_release(_fake_release("def other():\n    pass\n"), stored)
    assert {r["status"] for r in gone if r["record"] == "vllm.dcp.cp_lse_ag_out_rs"} == {"broken"}
    assert tool.symbol_of(tool.Registry().consumer("vllm.dcp.cp_lse_ag_out_rs"),
                          tool.Registry().consumer("vllm.dcp.cp_lse_ag_out_rs").calls[0]) == \
        "vllm.v1.attention.ops.dcp.cp_lse_ag_out_rs(is_lse_base_on_e=True, cp_attn_lse)"


def test_every_cited_function_has_a_fingerprint_at_a_verified_release() -> None:
    """backends/catalog/facts/citations.json is written by --release ... --write: each entry
    names a release on the verified list, and its line is refreshed there."""
    from attn_contracts.versions import verified_dists

    tool = _tool()
    verified = {f"{d.dist} {v}" for d in verified_dists() for v in d.verified}
    stored = tool.load_citations()
    assert stored
    for rec, calls in stored.items():
        for fn, fp in calls.items():
            assert fp["release"] in verified, (rec, fn)
            assert ".py:" in fp["at"], (rec, fn)


def test_release_check_says_a_verified_release_needs_nothing(
        capsys: pytest.CaptureFixture[str]) -> None:
    """make release-check (tools/release_check.py) on releases the catalog was verified on asks
    no index and downloads nothing."""
    spec = importlib.util.spec_from_file_location("release_check",
                                                  ROOT / "tools" / "release_check.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["release_check"] = module
    spec.loader.exec_module(module)
    assert module.main(["--release", "vllm==0.34.0", "--release", "flashinfer-python==0.7.4"]) == 0
    assert capsys.readouterr().out.count("verified already") == 2
    assert module.main(["--release", "not-a-spec"]) == 2
