"""The vLLM startup hook on every released vLLM 0.24.0-0.34.0 (issue 36 item 5): the mapping is
derived from each release's own sources (slim copies in ``$ATTN_CONTRACTS_RELEASES``, default
/work/releases; skipped where there are none: CI has none), vLLM itself stood in for by its
version and its enum, and every backend that returns an LSE is started under DCP=2 alone. The
hook refuses exactly the backends whose decode base (or empty rows) disagrees with a combine the
configuration reaches (the live errors of bench/results/engine-vllm.md, each a bug vLLM shipped)
and none whose decode base agrees with its combine."""

from __future__ import annotations

import enum
import os
import sys
import types
from pathlib import Path

import pytest

from attn_contracts.findings import ContractError
from attn_contracts.integrations import vllm as iv

RELEASES = Path(os.environ.get("ATTN_CONTRACTS_RELEASES", "/work/releases"))

# The bugs 0.24-0.28 shipped (the live errors of bench/results/engine-vllm.md): the MLA layer's and
# FlashInfer's chunked-prefill merge feeds FlashInfer prefill's base-2 LSE to the natural-log
# merge_attn_states (AC016, vLLM #52796), and Triton/Cutlass/FlashMLA/TokenSpeed MLA decode leave
# NaN or unwritten output in empty rows that the DCP combine of those releases multiplies by its
# zero weight (AC030).
_BUGGY_MLA = {"CUTLASS_MLA": "AC016,AC030", "FLASHINFER": "AC016", "FLASHMLA": "AC016,AC030",
              "FLASH_ATTN_MLA": "AC016", "TRITON_MLA": "AC016,AC030"}
_SPARSE_ERA = {**_BUGGY_MLA, "FLASHINFER_MLA": "AC016", "FLASHINFER_MLA_SPARSE": "AC016",
               "TOKENSPEED_MLA": "AC016,AC030"}
#: release → the backends the hook must refuse (backend → the codes); every other backend that
#: returns an LSE must start
REFUSED: dict[str, dict[str, str]] = {
    "0.24.0": _BUGGY_MLA,
    "0.25.0": {**_BUGGY_MLA, "FLASHINFER_MLA": "AC016"},
    "0.26.0": _SPARSE_ERA, "0.27.0": _SPARSE_ERA, "0.28.0": _SPARSE_ERA,
}
#: release → backend → why the hook refuses it though its decode base agrees with its combine (a
#: defect of this project, kept visible: the strict xfail below fails the day it is fixed)
_SPARSE_AC028 = (
    "AC028: the interpreter reads the impl's kernel call and finds base 2 for each of its three "
    "records (picked_by sparse_mla_top_k: FlashInfer 0.7.2's sparse kernels), and the row is "
    "judged with those bases; but the gate (integrations/vllm.py _gate) then hands "
    "validate_startup the registry's first record (flashinfer.mla.cute_dsl, base chosen by the "
    "call) with no producer_call, since engines/vllm.toml pins a dcp_call only for "
    "FlashInferMLAImpl: the observed bases are not passed on")
KNOWN_FALSE: dict[str, dict[str, str]] = {
    "0.33.0": {"FLASHINFER_MLA_SPARSE": _SPARSE_AC028},
    "0.34.0": {"FLASHINFER_MLA_SPARSE": _SPARSE_AC028},
}
#: release → what the hook refuses (each release is derived once: a minute of CPU)
_SEEN: dict[str, dict[str, str]] = {}


def _tree(version: str) -> Path:
    path = RELEASES / f"vllm-{version}"
    if not (path / "vllm" / "__init__.py").is_file():
        pytest.skip(f"no vLLM {version} sources at {path} (set ATTN_CONTRACTS_RELEASES)")
    return path


def _refused(version: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    if version not in _SEEN:
        _SEEN[version] = refused_at(version, monkeypatch)
    return _SEEN[version]


def refused_at(version: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Backend → the codes the startup hook refuses it with, each backend started alone under
    DCP=2 with the impl class the release's sources define."""
    root = _tree(version)
    mapping = iv.mapping_for(root)
    registry = types.ModuleType("vllm.v1.attention.backends.registry")
    names = [*mapping.backends, *mapping.unmapped]
    registry.AttentionBackendEnum = enum.Enum(  # type: ignore[attr-defined]
        "AttentionBackendEnum", {n: n for n in names})
    fake = {m: types.ModuleType(m) for m in ("vllm", "vllm.v1", "vllm.v1.attention",
                                             "vllm.v1.attention.backends")}
    fake["vllm.v1.attention.backends.registry"] = registry
    fake["vllm"].__version__ = version  # type: ignore[attr-defined]
    for name, module in fake.items():
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(iv, "_installed_root", lambda: root)
    out: dict[str, str] = {}
    for name, impl in sorted(mapping.impls.items()):
        if not getattr(impl, iv.RETURNS_ATTR, False):
            continue  # returns no LSE: DCP refuses it for that reason alone (AC006)
        try:
            iv.validate_vllm_startup([name], dcp_world_size=2, impls={name: impl})
        except ContractError as err:
            out[name] = ",".join(sorted({f.code.value for f in err.findings}))
    return out


@pytest.mark.parametrize("version", [f"0.{m}.0" for m in range(24, 35)])
def test_the_startup_hook_refuses_exactly_the_backends_with_a_bug(
        version: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Besides the known false refusals (``KNOWN_FALSE``, asserted apart)."""
    known = KNOWN_FALSE.get(version, {})
    refused = {n: c for n, c in _refused(version, monkeypatch).items() if n not in known}
    assert refused == REFUSED.get(version, {})


@pytest.mark.parametrize("version", [
    pytest.param(v, marks=pytest.mark.xfail(reason="; ".join(f"{n}: {why}" for n, why in
                                                             known.items()), strict=True))
    for v, known in sorted(KNOWN_FALSE.items())])
def test_the_known_false_refusals(version: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert not set(_refused(version, monkeypatch)) & set(KNOWN_FALSE[version])
