"""attn_contracts.facts: the data beside the catalog (backends/catalog/facts) is what the code
reads, and the names still spelled in code elsewhere agree with it."""

from __future__ import annotations

from attn_contracts.facts import builtin_adapters
from attn_contracts.facts import engine_attributes
from attn_contracts.facts import facts_file
from attn_contracts.facts import library_hint
from attn_contracts.lint.config import LintConfig
from attn_contracts.records import hint_for_library


def test_library_hints_come_from_the_data() -> None:
    for library, entry in facts_file("libraries")["library"].items():
        assert hint_for_library(library) == entry["hint"] == library_hint(library)
    assert library_hint("flash-attn") == library_hint("flash_attn")
    assert library_hint("nobody") is None and "attn-contracts verify" in hint_for_library("nobody")


def test_the_adapters_are_the_data() -> None:
    from attn_contracts.backends.adapter import BUILTIN_ADAPTERS
    from attn_contracts.backends.adapter import KNOWN_ADAPTERS

    package, known = builtin_adapters()
    assert BUILTIN_ADAPTERS == package == "attn_contracts.backends"
    assert known == KNOWN_ADAPTERS and all(a.startswith(package + ".") for a in known.values())


def test_the_engine_attribute_names_agree_everywhere() -> None:
    """The data names vLLM's declaration attributes; the bridge and the engine command read it,
    and the linter's defaults and the vLLM mapping (modules of their own) spell the same."""
    from attn_contracts.integrations import vllm

    names = engine_attributes("vllm")
    assert names.returns == (vllm.RETURNS_ATTR,) and names.base == (vllm.BASE_ATTR,)
    cfg = LintConfig()
    assert cfg.returns_attrs == names.returns and cfg.base_attrs == names.base
    assert cfg.capability_attrs == names.capabilities


def test_the_bridge_reads_the_engine_attribute_names() -> None:
    from attn_contracts.bridge import impl_findings

    names = engine_attributes("vllm")
    cls = type("Impl", (), {names.returns[0]: True, names.base[0]: False})
    record, findings = impl_findings(cls, name="x.impl", layout="token_head", lse_dtype="float32",
                                     empty_row="-inf", includes_sink=False, head_dims=(128,))
    assert findings == [] and record is not None and record.lse_base == "2"
