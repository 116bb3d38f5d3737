"""attn_contracts.deprecation: old spellings keep working through one helper, warn with the
project's own category, and are errors inside this test suite. One test per deprecated module
spelling (the keyword and flag spellings are tested beside their functions)."""

from __future__ import annotations

import importlib

import pytest

from attn_contracts.deprecation import AttnContractsDeprecationWarning, renamed


def test_the_projects_own_deprecations_are_errors_in_its_tests() -> None:
    """pyproject.toml's filterwarnings: an old spelling called from anywhere (here, a test) and
    any DeprecationWarning raised on behalf of a project module are errors, so no deprecated name
    can be used inside the project unnoticed."""
    with pytest.raises(AttnContractsDeprecationWarning):
        renamed("old()", "new()", 1)
    warn = compile("import warnings\nwarnings.warn('old', DeprecationWarning, stacklevel=1)",
                   "<module>", "exec")
    with pytest.raises(DeprecationWarning):
        exec(warn, {"__name__": "attn_contracts.integrations.somewhere"})


def _read_through(old: str, name: str) -> object:
    module = importlib.import_module(old)  # importing alone does not warn: reading a name does
    with pytest.warns(AttnContractsDeprecationWarning, match=rf"{old}\.{name} is deprecated"):
        return getattr(module, name)


def test_attn_contracts_identity_is_attn_contracts_versions() -> None:
    from attn_contracts import versions

    assert _read_through("attn_contracts.identity", "in_range") is versions.in_range


def test_attn_contracts_verify_is_attn_contracts_judge() -> None:
    from attn_contracts import judge

    assert _read_through("attn_contracts.verify", "compare") is judge.compare


def test_attn_contracts_lint_knowledge_is_attn_contracts_lint_record_index() -> None:
    from attn_contracts.lint import record_index

    assert _read_through("attn_contracts.lint.knowledge", "Knowledge") is record_index.Knowledge


def test_from_import_of_a_moved_module_warns_at_the_importing_line() -> None:
    code = compile("from attn_contracts.identity import tree_root\n", "old_user.py", "exec")
    with pytest.warns(AttnContractsDeprecationWarning) as caught:
        exec(code, {"__name__": "old_user"})
    assert caught[0].filename == "old_user.py" and caught[0].lineno == 1


def test_a_name_the_new_module_lacks_is_an_attribute_error() -> None:
    import attn_contracts.identity as old

    with pytest.raises(AttributeError):
        _ = old.no_such_name
