"""SGLang's backends read statically: on a small source tree written here (every run), and on the
real SGLang 0.5.23 wheel's sources where ``make test-vllm`` unpacked them
(``ATTN_CONTRACTS_SGLANG_ROOT``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from attn_contracts.cli import main
from attn_contracts.findings import Code, Severity
from attn_contracts.integrations import sglang

REGISTRY = '''
def register_attention_backend(name):
    return lambda fn: fn

@register_attention_backend("flashinfer")
def create_flashinfer_backend(runner):
    return None

@register_attention_backend("cutedsl_mla")
def create_cutedsl_mla_backend(runner):
    return None

@register_attention_backend("triton")
def create_triton_backend(runner):
    return None
'''

FORWARD_MLA = '''
def is_mla_dcp_lse_base_on_e(attention_backend):
    return attention_backend in {{{names}}}

def combine(out, lse, group, backend):
    base_e = is_mla_dcp_lse_base_on_e(backend)
    return cp_lse_ag_out_rs_mla(out, lse, group, is_lse_base_on_e=base_e)
'''


def _tree(tmp_path: Path, base_e: str) -> Path:
    pkg = tmp_path / "sglang"
    for rel, text in ((sglang._REGISTRY, REGISTRY),
                      (sglang._FORWARD_MLA, FORWARD_MLA.format(names=base_e))):
        path = pkg / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    meta = tmp_path / "sglang-0.5.23.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: sglang\nVersion: 0.5.23\n")
    return tmp_path


def test_the_keyword_comes_from_the_set_in_the_source(tmp_path: Path) -> None:
    rows = {r.backend: r for r in sglang.report(root=_tree(tmp_path, '"flashmla", "cutedsl_mla"'))}
    assert set(rows) == {"flashinfer", "cutedsl_mla", "triton"}
    assert rows["flashinfer"].declared["is_lse_base_on_e"] == "False"  # base-2 kernels: right
    assert rows["cutedsl_mla"].declared["is_lse_base_on_e"] == "True"  # base-e kernel: right
    for name in ("flashinfer", "cutedsl_mla"):
        assert not [f for f in rows[name].findings if f.severity is Severity.ERROR]
    assert [f.code for f in rows["triton"].findings] == [Code.AC013]  # not mapped: a warning


def test_a_backend_left_out_of_the_set_is_an_error(tmp_path: Path) -> None:
    (row,) = sglang.report("cutedsl_mla", root=_tree(tmp_path, '"flashmla"'))
    (err,) = [f for f in row.findings if f.severity is Severity.ERROR]
    assert err.code is Code.AC016 and "is_mla_dcp_lse_base_on_e('cutedsl_mla') = False" in err.message
    assert err.location.endswith("forward_mla.py:3")


def test_engine_sglang_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _tree(tmp_path, '"flashmla"')
    assert main(["engine", "sglang", "--root", str(root), "--format", "json"]) == 1
    rows = json.loads(capsys.readouterr().out)
    assert {r["backend"]: r["verdict"] for r in rows}["cutedsl_mla"] == "error"
    assert main(["engine", "sglang", "--root", str(tmp_path / "nowhere")]) == 2


@pytest.mark.parametrize("broken", ["forward_mla", "registry"])
@pytest.mark.parametrize("text", [b"def combine(:\n", b"x = '\xff'\n"])
def test_a_source_that_does_not_parse_is_ac000_and_the_report_goes_on(
        broken: str, text: bytes, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = _tree(tmp_path, '"cutedsl_mla"')
    rel = sglang._FORWARD_MLA if broken == "forward_mla" else sglang._REGISTRY
    (root / "sglang" / rel).write_bytes(text)
    rows = sglang.report(root=root)
    found = [f for r in rows for f in r.findings if f.code is Code.AC000]
    assert len(found) == 1 and found[0].location.startswith(f"sglang/{rel}:1:")
    if text.startswith(b"def"):
        assert found[0].location == f"sglang/{rel}:1:13"  # where the parser stopped
    # without forward_mla.py every backend is still listed, no edge checked
    assert [r.backend for r in rows] == (["flashinfer", "cutedsl_mla", "triton"]
                                         if broken == "forward_mla" else ["(registry)"])
    assert all(r.edges == [] for r in rows)
    assert main(["engine", "sglang", "--root", str(root)]) == 1  # an error, not a traceback
    assert " AC000 " in capsys.readouterr().out


REAL = os.environ.get("ATTN_CONTRACTS_SGLANG_ROOT")


@pytest.mark.vllm
@pytest.mark.skipif(not REAL, reason="needs the SGLang 0.5.23 wheel's sources (make test-vllm)")
def test_the_real_sglang_0_5_23() -> None:
    rows = {r.backend: r for r in sglang.report(root=REAL)}
    assert {"flashinfer", "trtllm_mla", "cutedsl_mla", "flashmla", "triton"} <= set(rows)
    assert rows["flashinfer"].declared["is_lse_base_on_e"] == "False"
    assert rows["trtllm_mla"].declared["is_lse_base_on_e"] == "False"
    assert rows["cutedsl_mla"].declared["is_lse_base_on_e"] == "True"
    errors = [f.render() for r in rows.values() for f in r.findings if f.severity is Severity.ERROR]
    assert errors == []  # every mapped backend's base agrees with its kernel
