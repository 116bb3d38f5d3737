"""A 0.x library never released keeps no aliases (issue 39 item 6): the renamed spellings are
gone, each failing as Python and argparse fail on any unknown name (the README's changelog says
what each became); and a DeprecationWarning raised on behalf of a project module is an error in
this suite, so no deprecated name of a library is used inside the project unnoticed."""

from __future__ import annotations

import importlib

import pytest

from attn_contracts import validate_startup
from fixtures.cli import one_line_usage_error


def test_a_deprecation_raised_on_behalf_of_the_project_is_an_error_in_its_tests() -> None:
    warn = compile("import warnings\nwarnings.warn('old', DeprecationWarning, stacklevel=1)",
                   "<module>", "exec")
    with pytest.raises(DeprecationWarning):
        exec(warn, {"__name__": "attn_contracts.integrations.somewhere"})


@pytest.mark.parametrize("old", ["attn_contracts.identity", "attn_contracts.verify",
                                 "attn_contracts.lint.knowledge", "attn_contracts.deprecation"])
def test_moved_modules_are_gone(old: str) -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module(old)


@pytest.mark.parametrize("old", [{"dcp_world_size": 2}, {"settings": {"x": 1}}])
def test_renamed_keywords_are_gone(old: dict[str, object]) -> None:
    with pytest.raises(TypeError, match=next(iter(old))):
        validate_startup(backend="flashinfer.mla.fa3", **old)  # type: ignore[arg-type]


def test_the_renamed_flag_is_gone(capsys: pytest.CaptureFixture[str]) -> None:
    line = one_line_usage_error(capsys, ["validate", "--backend", "flashinfer.mla.fa3",
                                         "--dcp", "2"])
    assert "--dcp" in line


def test_the_plan_table_spellings_are_gone() -> None:
    pytest.importorskip("torch")
    from attn_contracts.combine.plan import CombinePlan

    assert not hasattr(CombinePlan, "eager_call") and not hasattr(CombinePlan, "keep")
