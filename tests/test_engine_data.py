"""The engine data files (``backends/catalog/engines/*.toml``) are read into frozen pydantic
models: the shipped files validate, and a malformed entry is refused with one message naming the
file, the table, the entry and the field (a broken installation: the CLI says it in one line,
exit 2, never a traceback)."""

from __future__ import annotations

from collections.abc import Iterator
from importlib import resources
from pathlib import Path

import pytest

from attn_contracts.integrations import engine_data as ed
from fixtures.cli import one_line_usage_error


def _shipped(engine: str) -> str:
    return (resources.files("attn_contracts.backends") / "catalog" / "engines" /
            f"{engine}.toml").read_text(encoding="utf-8")


def test_the_shipped_files_validate_into_typed_entries() -> None:
    vllm, sglang = ed.engine_data("vllm"), ed.engine_data("sglang")
    assert all(isinstance(e, ed.DeclarationEntry) for e in vllm.declaration)
    assert {form for e in sglang.registry for form in [e.form]} == {"decorator", "branches"}
    assert vllm.dcp_call[0].call == (("backend", "cute-dsl"), ("return_lse", True))
    with pytest.raises(ValueError, match=r"'trtllm' \(allowed: vllm, sglang\)"):
        ed.engine_data("trtllm")


# (engine, the text replaced, its replacement, what the message names)
_BROKEN = [
    ("vllm", 'base = ["lse_base_on_e"]', 'base = "lse_base_on_e"',
     "[[declaration]] number 2 (AttentionImplBase, versions >=0.25), field base"),
    ("vllm", 'versions = ">=0.29"', 'versions = "0.29"',
     "[[dcp_call]] number 1 (FlashInferMLAImpl, versions 0.29), field versions: '0.29' is not "
     "a PEP 440 version range"),
    ("vllm", "records = [", "recs = [",
     "[[dcp_call]] number 1 (FlashInferMLAImpl, versions >=0.29), field recs: Extra inputs"),
    ("vllm", "[[enum]]", "[[enums]]", "table 'enums' (allowed tables: enum, declaration, "
     "dcp_call)"),
    ("sglang", 'form = "decorator"', 'form = "decorated"',
     "[[registry]] number 2 (register_attention_backend, versions >=0.5.3), field form"),
    ("sglang", 'decode_method = "forward_decode"', "decode_method = 3",
     "[[dcp_combine]] number 1 (sglang/srt/models/deepseek_common/attention_forward_methods/"
     "forward_mla.py, versions >=0.5.15,<0.5.20), field decode_method"),
]


@pytest.mark.parametrize(("engine", "old", "new", "named"), _BROKEN)
def test_a_malformed_entry_is_refused_naming_the_file_table_entry_and_field(
        engine: str, old: str, new: str, named: str) -> None:
    text = _shipped(engine)
    assert old in text
    model = ed.VllmData if engine == "vllm" else ed.SglangData
    with pytest.raises(ed.EngineDataError) as err:
        ed.parse(model, f"{engine}.toml", text.replace(old, new, 1))
    assert str(err.value).startswith(f"{engine}.toml: "), err.value
    assert named in str(err.value), err.value
    assert str(err.value).endswith("; reinstall attn-contracts"), err.value


@pytest.fixture
def damaged_vllm(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The shipped ``vllm.toml`` read with its first ``[[declaration]]`` missing a field."""
    text = _shipped("vllm").replace("capability = []\n", "", 1)
    ed._load.cache_clear()
    monkeypatch.setattr(ed, "_read", lambda path: text)
    yield
    ed._load.cache_clear()


def test_the_cli_says_a_damaged_file_in_one_line(damaged_vllm: None, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "vllm").mkdir()
    (tmp_path / "vllm" / "__init__.py").write_text("__version__ = '0.24.0'\n")
    line = one_line_usage_error(capsys, ["engine", "vllm", "--source", str(tmp_path)])
    assert "vllm.toml: [[declaration]] number 1 (AttentionImplBase, versions <0.25), field " \
           "capability: Field required; reinstall attn-contracts" in line, line
