"""The pytest plugin, as a kernel author uses it: an inner pytest session whose tests verify this
project's own adapters (the torch reference, and liars bent one way each) in one line."""

from __future__ import annotations

from importlib import metadata
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

FIXTURES = Path(__file__).parent / "fixtures"

# what both records promise (the second has no adapter to verify it)
_MINE = """\
lse = { returns = "lse", base = "e", layout = "token_head", dtype = "float32", empty_row = "-inf", includes_sink = false }
decode = { attention = "mha", out_layout = "token_head_dim", head_dims = [64], q_dtypes = ["float32"], q_len_gt_1 = false }
"""

# the consumer is a plain string: its TOML tables are not f-string fields
RECORDS = f"""
[[record]]
name = "mine.decode"
library = "mine"
source = "the torch reference, declared honestly"
evidence = "measured"
adapter = "attn_contracts.backends.torch_ref:decode"
{_MINE}
[[record]]
name = "mine.declarative"
library = "mine"
source = "no adapter"
evidence = "read_from_code"
{_MINE}
""" + """[[consumer]]
name = "mine.merge"
library = "mine"
source = "tests/fixtures/fake_consumers.py"
evidence = "measured"
adapter = "fixtures.fake_consumers:truthful"
base = { kind = "fixed", base = "e" }
lse = { layouts = ["token_head"], states = "first", dtypes = ["float32"] }
empty = { reads_as_empty = ["-inf", "+inf", "nan"], all_empty = "zero", zero_weight_nan_safe = true }
output = { returns_lse = true, lse_base = "input" }
"""


def test_the_plugin_is_registered_in_the_installed_metadata() -> None:
    eps = {ep.name: ep.value for ep in metadata.entry_points(group="pytest11")}
    assert eps.get("attn_contracts") == "attn_contracts.pytest_plugin"


def test_one_line_verifies_a_record_and_fails_with_the_findings(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    pytester.makefile(".toml", contracts=RECORDS)
    # `fixtures.liars`, `fixtures.fake_consumers`: adapters that lie about the LSE, one way each
    monkeypatch.setenv("PYTHONPATH", str(FIXTURES.parent))
    pytester.makepyfile(test_kernel="""
        import pytest

        def test_honest(verify_contract):
            verify_contract("mine.decode", file="contracts.toml")

        def test_base2_liar(verify_contract):
            verify_contract("mine.decode", file="contracts.toml", adapter="fixtures.liars:base2")

        @pytest.mark.attn_contract("mine.decode", file="contracts.toml",
                                   adapter="fixtures.liars:head_token")
        def test_marker_liar():
            pass

        def test_no_adapter_skips(verify_contract):
            verify_contract("mine.declarative", file="contracts.toml")

        def test_unknown_name(verify_contract):
            verify_contract("mine.nope", file="contracts.toml")

        def test_consumer(verify_contract):
            verify_contract("mine.merge", file="contracts.toml")

        def test_consumer_liar(verify_contract):  # a 0/0 all-empty row the record says is 0
            verify_contract("mine.merge", file="contracts.toml",
                            adapter="fixtures.fake_consumers:zero_over_zero")
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rs")
    result.assert_outcomes(passed=2, failed=4, skipped=1)
    out = result.stdout.str()
    assert "mine.decode: what the kernel does differs from its record" in out
    assert "AC008 mine.decode: lse.base" in out  # the verifier's own finding, as the message
    assert "lse.layout" in out
    assert "no adapter" in out  # the skip reason
    assert "no record named 'mine.nope'" in out
    assert "known: mine.declarative, mine.decode, mine.merge" in out
    assert "mine.merge: what the kernel does differs" in out and "all_empty" in out


def test_without_torch_a_test_that_verifies_is_skipped_with_the_reason(
        pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 26 item 18: torch is the kernels extra; without it the test is skipped, as the
    verifier skips a record whose library is missing (``skip=False`` fails, with the reason)."""
    pytester.makefile(".toml", contracts=RECORDS)
    pytester.makeconftest("import sys\nsys.modules['torch'] = None  # torch is not installed\n")
    pytester.makepyfile(test_kernel="""
        def test_skips(verify_contract):
            verify_contract("mine.decode", file="contracts.toml")

        def test_fails(verify_contract):
            verify_contract("mine.decode", file="contracts.toml", skip=False)
    """)
    # CI set: pytest then never cuts the summary lines to the terminal's width (as on CI machines)
    monkeypatch.setenv("CI", "true")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rsf")
    result.assert_outcomes(skipped=1, failed=1)
    out = result.stdout.str()
    reason = "mine.decode: needs torch, pip install 'attn-contracts[kernels]'"
    skipped = [line for line in out.splitlines() if line.startswith("SKIPPED [1]")]
    failed = [line for line in out.splitlines() if line.startswith("FAILED test_kernel.py::test_fails")]
    assert len(skipped) == 1 and reason in skipped[0], out
    assert len(failed) == 1 and reason in failed[0] and "not verified" in failed[0], out
    assert "ModuleNotFoundError" not in out  # no traceback


def test_an_unused_plugin_imports_nothing_of_the_project(pytester: pytest.Pytester) -> None:
    """Issue 26 item 19: loaded in every pytest run of the environment, the plugin imports only
    the package's light init and itself until a test uses the fixture or the marker."""
    pytester.makepyfile(test_other="""
        import sys

        def test_nothing_loaded():
            assert "attn_contracts.pytest_plugin" in sys.modules  # auto-loaded, as installed
            loaded = sorted(m for m in sys.modules if m.startswith("attn_contracts"))
            assert loaded == ["attn_contracts", "attn_contracts.pytest_plugin"], loaded
            assert "torch" not in sys.modules
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
