"""attn_contracts.versions: release ranges (``in_range``, the one check; ``ranges_overlap``), the
latter against an independent reference (every release of a fine grid). The versions a linted tree
holds (``tree_versions``) are tested where lint reads them, in test_lint_releases.py."""

from __future__ import annotations

import pytest

from attn_contracts.versions import in_range
from attn_contracts.versions import ranges_overlap


def test_in_range() -> None:
    assert in_range(">=0.26", "0.33.0") and not in_range("<0.32", "0.33.0")
    assert in_range("<0.32", None) and in_range("", "1.0") and in_range(">=1", "not-a-version")


@pytest.mark.parametrize(("a", "b", "meet"), [
    (">=0.29", "<0.29", False), (">=0.25", "<0.29", True), ("==0.25.*", ">0.25.5", True),
    (">0.25", "<=0.25", False), (">0.25", "<0.25.1", True), ("<0.25", ">=0.24.9", True),
    ("!=0.25", "==0.25", False), ("~=0.25.1", "<0.25.1", False), ("", ">=0.3", True),
    (">=0.26,<0.30", ">=0.30", False), (">=0.32,<0.33", ">=0.26", True), ("<0.25", "<0.25", True)])
def test_ranges_overlap(a: str, b: str, meet: bool) -> None:
    assert ranges_overlap(a, b) is meet and ranges_overlap(b, a) is meet


def test_ranges_overlap_agrees_with_trying_every_release() -> None:
    """Against an independent reference: every version of a fine grid."""
    from hypothesis import given
    from hypothesis import settings
    from hypothesis import strategies as st
    from packaging.specifiers import SpecifierSet

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


# --- ranges from verification (backends/catalog/facts/verified.toml) ---------------------------


def test_a_verified_release_reads_as_itself_without_a_note() -> None:
    from attn_contracts.versions import resolve
    from attn_contracts.versions import verified_releases

    assert "0.33.0" in verified_releases("vllm") and "0.7.2.post1" in verified_releases(
        "flashinfer-python")  # one library under each spelling
    assert resolve("vllm", "0.33.0").used == "0.33.0" and not resolve("vllm", "0.33.0").note
    assert not resolve("vllm", "0.32.0+cpu").note  # a local label is its release
    assert resolve("not_a_library", "9.9").used == "9.9"  # no list: taken as it is


def test_a_newer_release_reads_as_the_newest_verified_with_one_note_naming_the_command() -> None:
    from attn_contracts.versions import resolve
    from attn_contracts.versions import verified_releases

    newest = verified_releases("vllm")[-1]
    r = resolve("vllm", "9.0.0")
    assert r.used == newest
    assert r.note.startswith("vllm 9.0.0 not verified")
    assert "`tools/check_catalog.py --release vllm==9.0.0`" in r.note


def test_a_pinned_release_between_two_verified_reads_as_the_one_below() -> None:
    """FlashInfer 0.7.3 (vLLM 0.34.0 pins it; the index does not hold it)."""
    from attn_contracts.versions import resolve

    r = resolve("flashinfer", "0.7.3")
    assert r.used == "0.7.2.post1" and "nearest verified release below it" in r.note
    older = resolve("vllm", "0.1.0")  # older than every verified one: its own ranges decide
    assert older.used == "0.1.0" and "older than every verified release" in older.note


def test_lint_says_an_unverified_release_once_as_a_note() -> None:
    from attn_contracts.findings import Code
    from attn_contracts.findings import Severity
    from attn_contracts.lint import LintConfig
    from attn_contracts.lint import knowledge_for

    k, found = knowledge_for(LintConfig(), versions={"vllm": "9.0.0", "flashinfer": "0.7.3"})
    notes = [f for f in found if f.code is Code.AC034]
    assert [f.severity for f in notes] == [Severity.NOTE, Severity.NOTE]
    assert k.versions["flashinfer"] == "0.7.2.post1"  # the records of the nearest verified one
    _, again = knowledge_for(LintConfig(), versions={"vllm": "0.33.0"})
    assert not [f for f in again if f.code is Code.AC034]
