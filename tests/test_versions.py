"""attn_contracts.versions: release ranges (``in_range``, the one check; ``ranges_overlap``), the
latter against an independent reference (every release of a fine grid). The versions a linted tree
holds (``tree_versions``) are tested where lint reads them, in test_lint_releases.py."""

from __future__ import annotations

import pytest

from attn_contracts.versions import in_range, ranges_overlap


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
    from hypothesis import given, settings
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
