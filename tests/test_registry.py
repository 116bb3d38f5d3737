"""Registry: built-in catalog, register as call and decorator, files, plugins through entry points."""

from __future__ import annotations

import importlib
import json
import textwrap
from pathlib import Path

import pytest

from attn_contracts import CapabilityRecord
from attn_contracts import Code
from attn_contracts import ContractError
from attn_contracts import Registry
from attn_contracts import UnknownRecordError
from attn_contracts import load_records
from attn_contracts.cli import main
from attn_contracts.registry import CONTRACT_ATTR
from fixtures.records import GOOD
from fixtures.records import bad_copy
from fixtures.records import good
from fixtures.records import without_base


def test_builtin_catalog_is_valid_and_covers_the_known_kernels() -> None:
    names = set(Registry().names())
    for expected in ("flashinfer.mla.fa2", "flashinfer.mla.fa3", "flashinfer.mla.fa2+basee",
                     "flashinfer.mla.fa3+basee", "flashinfer.single_decode",
                     "flashinfer.batch_decode", "flashinfer.batch_prefill", "flash_attn.fa2",
                     "flash_attn.fa3", "flash_mla.decode", "triton.mla_decode", "cutlass.mla",
                     "torch.sdpa_ref"):
        assert expected in names
    reg = Registry()
    assert reg.get("flashinfer.mla.fa3").lse_base == "2"
    assert reg.get("flashinfer.mla.fa3+basee").lse_base == "e"
    assert reg.get("flash_attn.fa2").lse.empty_row == "+inf"  # type: ignore[union-attr]
    assert reg.get("flash_attn.fa3").lse.empty_row == "-inf"  # type: ignore[union-attr]
    assert reg.get("cutlass.mla").lse.padded_heads == 128  # type: ignore[union-attr]
    assert all(r.source for r in reg)


def test_unknown_name_lists_known_names() -> None:
    with pytest.raises(UnknownRecordError) as exc:
        Registry().get("flashinfer.mla.fa4")
    assert exc.value.codes == [Code.AC013]
    assert "flashinfer.mla.fa3" in str(exc.value)
    assert isinstance(exc.value, KeyError)


def test_register_as_call_and_as_decorator() -> None:
    reg = Registry(builtin=False)
    rec = CapabilityRecord.model_validate(GOOD)
    reg.register(rec)
    assert reg.get("test.kernel") is rec

    other = CapabilityRecord.model_validate(good(name="test.decorated"))

    @reg.register(other)
    class Impl:
        pass

    assert getattr(Impl, CONTRACT_ATTR) is other
    assert reg.get("test.decorated") is other

    reg2 = Registry(builtin=False)
    assert reg2.register(Impl) is Impl  # a class carrying a record registers that record
    assert reg2.names() == ["test.decorated"]


def test_register_engine_class_through_the_bridge() -> None:
    class Base:
        can_return_lse_for_decode = False
        lse_base_on_e = True

    class Good(Base):
        can_return_lse_for_decode = True
        lse_base_on_e = False
        lse_layout, lse_dtype, lse_empty_row, lse_includes_sink = "token_head", "float32", "-inf", False
        head_dims = (128,)

    class Bad(Base):
        can_return_lse_for_decode = True

    reg = Registry(builtin=False)
    reg.register(Good)
    assert reg.get("engine.good").lse_base == "2"
    with pytest.raises(ContractError) as exc:
        reg.register(Bad)
    assert exc.value.codes == [Code.AC002]


def test_duplicate_name_is_ac005_and_identical_reregistration_is_harmless() -> None:
    reg = Registry(builtin=False)
    rec = CapabilityRecord.model_validate(GOOD)
    reg.add(rec)
    reg.add(CapabilityRecord.model_validate(GOOD))
    with pytest.raises(ContractError) as exc:
        reg.add(CapabilityRecord.model_validate(good(library="other")))
    assert exc.value.codes == [Code.AC005]
    assert "test.kernel" in str(exc.value)


def test_register_rejects_other_objects() -> None:
    with pytest.raises(TypeError, match="found dict"):
        Registry(builtin=False).register(GOOD)


def test_files_toml_and_json(tmp_path: Path) -> None:
    toml = tmp_path / "r.toml"
    toml.write_text(textwrap.dedent("""
        [[record]]
        name = "a.b"
        library = "x"
        source = "s"
        evidence = "measured"
        lse = { returns = "none" }
        decode = { attention = "mha", out_layout = "token_head_dim", head_dims = [64], q_dtypes = ["float16"], q_len_gt_1 = false }
    """))
    js = tmp_path / "r.json"
    js.write_text(json.dumps([GOOD]))
    assert [r.name for r in load_records(toml)] == ["a.b"]
    assert [r.name for r in load_records(js)] == ["test.kernel"]
    reg = Registry(builtin=False)
    reg.load_file(toml)
    assert "a.b" in reg


def test_bad_file_raises_with_codes(tmp_path: Path) -> None:
    js = tmp_path / "bad.json"
    js.write_text(json.dumps({"records": [without_base(), good(name="x.y", typo=1)]}))
    with pytest.raises(ContractError) as exc:
        load_records(js)
    assert exc.value.codes == [Code.AC001, Code.AC012]


def _install_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str,
                    entry_points: str) -> None:
    _install_plugin_module(tmp_path, monkeypatch, "acplugin", textwrap.dedent(body), entry_points)


PLUGIN = f"""
GOOD = {GOOD!r}
BAD = {without_base(name="plugin.nobase")!r}
def records():
    return [dict(GOOD, name="plugin.good")]
def broken():
    raise RuntimeError("kaput")
"""


def test_plugins_read_on_demand_with_allowlist(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    _install_plugin(tmp_path, monkeypatch, PLUGIN,
                    "good = acplugin:records\nbad = acplugin:BAD\nbroken = acplugin:broken\n"
                    "missing = acplugin_nothere:x\n")
    reg = Registry()
    assert "plugin.good" not in reg  # never at construction or import
    assert reg.load_plugins(["good"]) == []
    assert "plugin.good" in reg

    reg = Registry()
    findings = reg.load_plugins()
    got = {(f.code, f.subject) for f in findings}
    assert (Code.AC001, "plugin.nobase") in got
    assert (Code.AC014, "broken") in got
    assert (Code.AC014, "missing") in got
    assert "plugin.good" in reg and "plugin.nobase" not in reg

    unknown = Registry().load_plugins(["nope"])
    assert [f.code for f in unknown] == [Code.AC014]
    assert "good" in unknown[0].message  # lists the installed plugins


def test_the_package_exports_every_public_name_it_lists() -> None:
    """attn_contracts imports its names when first used: each one in __all__ resolves to the
    object its module defines, and ``records`` stays the registry's function."""
    import attn_contracts
    import attn_contracts.records  # the submodule of the same name, loaded
    from attn_contracts import registry

    assert set(attn_contracts.__all__) == set(attn_contracts._EXPORTS)
    for name in attn_contracts.__all__:
        module = importlib.import_module(attn_contracts._EXPORTS[name])
        assert getattr(attn_contracts, name) is getattr(module, name), name
    assert attn_contracts.records is registry.records
    with pytest.raises(AttributeError, match="no_such_name"):
        attn_contracts.no_such_name  # noqa: B018 - the attribute access is the test


# --- plugins cannot end or flood a run; what enters the registry is re-validated --------------
def _install_plugin_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, body: str,
                    entry_points: str) -> None:
    (tmp_path / f"{module}.py").write_text(body)
    dist = tmp_path / f"{module}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[attn_contracts.backends]\n" + entry_points)
    monkeypatch.syspath_prepend(str(tmp_path))


HOSTILE_PLUGIN = f"""
import itertools, sys
GOOD = {good(name="plugin.fine")!r}
def endless():
    return itertools.repeat(GOOD)
def exits():
    sys.exit(5)
def nested():
    loop = []
    loop.append(loop)
    return loop
"""


@pytest.mark.parametrize("entry_point,expect", [
    ("exits_at_import = ac_exit_plugin:x", "SystemExit"),
    ("exits_when_called = ac_hostile_plugin:exits", "SystemExit"),
    ("endless = ac_hostile_plugin:endless", "10000"),
    ("self_nested = ac_hostile_plugin:nested", "nested too deep"),
])
def test_a_hostile_plugin_is_an_ac014_finding(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        entry_point: str, expect: str) -> None:
    (tmp_path / "ac_exit_plugin.py").write_text("import sys\nsys.exit(7)\n")
    _install_plugin_module(tmp_path, monkeypatch, "ac_hostile_plugin", HOSTILE_PLUGIN, entry_point + "\n")
    name = entry_point.partition(" =")[0]
    assert main(["validate", "--plugins", name, "--format", "json"]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert [f["code"] for f in findings if f["subject"] == name] == ["AC014"]
    assert any(expect in f["message"] for f in findings)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_model_copied_record_cannot_be_registered() -> None:
    from attn_contracts import ContractError
    from attn_contracts.registry import Registry

    with pytest.raises(ContractError) as exc:
        Registry().add(bad_copy())  # type: ignore[type-var]
    assert "AC012" in str(exc.value)
