"""The vLLM mapping's data, without vLLM: every record and consumer the table once kept by hand
(now the derivation's expected result) and the engine data name is in the catalog, and the engine
data holds every release from 0.24 on; importing the integration imports nothing heavy."""

from __future__ import annotations

import pytest

from attn_contracts.registry import Registry


def test_every_record_and_consumer_the_old_table_names_is_in_the_catalog() -> None:
    """The table once kept by hand (now the derivation's expected result) names records that
    exist; the hand-kept engine data names records that exist too."""
    from attn_contracts.integrations.vllm_source import engine_data
    from tests.fixtures.vllm_0_32_table import VLLM_0_32

    registry = Registry()
    consumers = {c.name for c in registry.consumers()}
    for name, backend in VLLM_0_32.backends.items():
        for config in (backend.dcp, backend.single):
            for record in config.records:
                assert registry.get(record).returns_lse, (name, record)
            for edge in config.edges:
                assert edge.consumer in consumers, (name, edge.consumer)
                assert edge.source, (name, edge.consumer)
    for entry in engine_data().dcp_call:
        for record in entry.records:
            assert registry.get(record).returns_lse, record


def test_the_engine_data_covers_every_release_from_0_24() -> None:
    from packaging.specifiers import SpecifierSet

    from attn_contracts.integrations.vllm_source import engine_data

    data = engine_data()
    for minor in range(24, 40):
        v = f"0.{minor}.0"
        assert sum(v in SpecifierSet(e.versions) for e in data.enum) == 1, v
        assert sum(v in SpecifierSet(e.versions) for e in data.declaration) == 1, v
    assert data.pick(data.declaration, "0.24.0")[0].base == ()
    assert data.pick(data.declaration, "0.25.0")[0].base == ("lse_base_on_e",)
    assert "supports_dcp" not in data.pick(data.declaration, "0.27.0")[0].returns


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
    assert [vllm_mode.read().policy for _ in range(3)] == [policy] * 3
    said = [r.getMessage() for r in caplog.records if vllm_mode.MODE_ENV in r.getMessage()]
    assert len(said) == (1 if logged else 0), said
    if logged:
        assert "error, warn, off" in said[0] and repr(value) in said[0]


def _dcp_config() -> object:
    from types import SimpleNamespace

    return SimpleNamespace(parallel_config=SimpleNamespace(decode_context_parallel_size=2))


def test_a_fault_of_the_checker_lets_the_start_go_on(monkeypatch: pytest.MonkeyPatch,
                                                    vllm_log: pytest.LogCaptureFixture) -> None:
    """The plugin is a guest: its own fault (not the contract's) is one warning and vLLM's own
    check's result; an error the peers were told of, or a refusal, still stops the start."""
    from attn_contracts import consensus
    from attn_contracts.findings import Code
    from attn_contracts.findings import ContractError
    from attn_contracts.findings import Finding
    from attn_contracts.integrations import vllm as iv
    from attn_contracts.integrations import vllm_plugin

    assert vllm_plugin._TOLD == consensus._TOLD  # one marker (the plugin imports no consensus)
    raised: list[BaseException] = []

    def validate(*args: object, **kwargs: object) -> None:
        raise raised[-1]

    monkeypatch.setattr(iv, "validate_vllm_config", validate)
    checked = vllm_plugin._wrap(lambda config, *rest: "vLLM's own check passed")
    raised.append(RuntimeError("the layers could not be read"))
    assert checked(_dcp_config()) == "vLLM's own check passed"
    (said,) = [r.getMessage() for r in vllm_log.records if "could not be checked" in
               r.getMessage()]
    assert "RuntimeError: the layers could not be read" in said
    told = TypeError("a setting")
    consensus._mark_told(told)
    raised.append(told)
    with pytest.raises(TypeError):
        checked(_dcp_config())
    raised.append(ContractError([Finding(Code.AC008, "vllm.x", "wrong base")], "refused"))
    with pytest.raises(ContractError):
        checked(_dcp_config())
