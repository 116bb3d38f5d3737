"""The vLLM mapping as data, without vLLM: every record and consumer it names is in the catalog,
and releases resolve to their mapping by version (a local version such as ``+cpu`` included)."""

from __future__ import annotations

import pytest

from attn_contracts.integrations import vllm as iv
from attn_contracts.registry import Registry


def test_every_record_and_consumer_the_mapping_names_is_in_the_catalog() -> None:
    registry = Registry()
    consumers = {c.name for c in registry.consumers()}
    for mapping in iv.MAPPINGS:
        for name, backend in mapping.backends.items():
            for config in (backend.dcp, backend.single):
                for record in config.records:
                    assert registry.get(record).returns_lse, (name, record)
                for edge in config.edges:
                    assert edge.consumer in consumers, (name, edge.consumer)
                    assert edge.source, (name, edge.consumer)


@pytest.mark.parametrize(("version", "mapped"), [
    ("0.32.0", True), ("0.32.0+cpu", True), ("0.32.3", True), ("0.33.0", False),
    ("0.31.9", False), ("not a version", False)])
def test_releases_resolve_by_version(version: str, mapped: bool) -> None:
    assert (iv.mapping_for(version) is iv.VLLM_0_32) is mapped


def test_importing_the_integration_imports_neither_vllm_nor_torch() -> None:
    import subprocess
    import sys

    code = ("import sys, attn_contracts.integrations.vllm, attn_contracts.integrations.sglang, "
            "attn_contracts.pytest_plugin; "
            "print([m for m in ('vllm', 'torch', 'sglang') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_registering_the_vllm_plugin_imports_nothing_heavy() -> None:
    """Issue 26 item 6: vLLM loads the plugin in every process, DCP or not. Registering imports
    neither vLLM's DCP module nor torch nor this project's records (pydantic models): only the
    package's light init and the plugin module; the check is hooked when vLLM imports it."""
    import subprocess
    import sys

    code = ("import sys\n"
            "before = set(sys.modules)\n"
            "from attn_contracts.integrations.vllm_plugin import register\n"
            "register(); register()\n"
            "new = sorted(m for m in set(sys.modules) - before if m.startswith('attn_contracts'))\n"
            "print(new)\n"
            "print([m for m in ('torch', 'pydantic', 'vllm.v1.worker.cp_utils') if m in sys.modules])\n"
            "print(sum(type(f).__name__ == '_HookOnImport' for f in sys.meta_path))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[:3] == [
        "['attn_contracts', 'attn_contracts.integrations', "
        "'attn_contracts.integrations.vllm_mode', 'attn_contracts.integrations.vllm_plugin']",
        "[]", "1"], out.stdout


@pytest.mark.parametrize(("value", "policy", "logged"), [
    ("", "error", False), ("error", "error", False), (" WARN ", "warn", False), ("off", "off", False),
    ("bogus", "error", True), ("0", "error", True), ("false", "error", True)])
def test_the_mode_is_read_leniently(monkeypatch: pytest.MonkeyPatch,
                                    caplog: pytest.LogCaptureFixture, value: str, policy: str,
                                    logged: bool) -> None:
    """Issue 26 item 5: an unknown ATTN_CONTRACTS_VLLM is the default and one logged line."""
    from attn_contracts.integrations import vllm_mode

    monkeypatch.setattr(vllm_mode, "_said", set())
    monkeypatch.setenv(vllm_mode.MODE_ENV, value)
    assert [vllm_mode.policy() for _ in range(3)] == [policy] * 3
    said = [r.getMessage() for r in caplog.records if vllm_mode.MODE_ENV in r.getMessage()]
    assert len(said) == (1 if logged else 0), said
    if logged:
        assert "error, warn, off" in said[0] and repr(value) in said[0]
