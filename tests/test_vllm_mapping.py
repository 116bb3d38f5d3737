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
