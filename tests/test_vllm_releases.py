"""The vLLM startup hook on every released vLLM 0.24.0-0.34.0 (issue 36 item 5): the mapping is
derived from each release's own sources (slim copies in ``$ATTN_CONTRACTS_RELEASES``, e.g.
~/.cache/attn-contracts/releases, where bench/_releases.py keeps them; skipped where it is not
set: CI has none, and deriving eleven releases is minutes of CPU), vLLM itself stood in for by its
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

RELEASES = Path(os.environ.get("ATTN_CONTRACTS_RELEASES", "/nonexistent"))

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
        if not impl.value(iv.RETURNS_ATTR):
            continue  # returns no LSE: DCP refuses it for that reason alone (AC006)
        try:
            iv.validate_vllm_startup([name], dcp_world_size=2, impls={name: impl})
        except ContractError as err:
            out[name] = ",".join(sorted({f.code.value for f in err.findings}))
    return out


@pytest.mark.parametrize("version", [f"0.{m}.0" for m in range(24, 35)])
def test_the_startup_hook_refuses_exactly_the_backends_with_a_bug(
        version: str, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _refused(version, monkeypatch) == REFUSED.get(version, {})
