"""The committed catalog check (tools/check_catalog.py, run against the released wheels) is in
step with the catalog: every call of every record is checked in each read release its ranges
admit, found with its keywords, and every record not checked is listed with the reason. Offline:
this reads the committed report, never a wheel. After changing the catalog, rerun
``python tools/check_catalog.py --wheels /tmp/wheels --out bench/results/catalog-check``."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

from attn_contracts.identity import in_range
from attn_contracts.registry import Registry

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
