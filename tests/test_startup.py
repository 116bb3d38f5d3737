"""attn_contracts.startup: validate_startup, every problem in one ContractError."""

from __future__ import annotations

import json
import re

import pytest

from attn_contracts import CapabilityRecord
from attn_contracts import Code
from attn_contracts import ContractError
from attn_contracts import Registry
from attn_contracts import validate_startup
from attn_contracts.cli import main
from fixtures.engine_classes import FlashInferMLAImpl
from fixtures.machine import has_cuda
from fixtures.machine import without_torch
from fixtures.records import GOOD
from fixtures.records import bad_copy
from fixtures.records import good
from fixtures.records import without_base


def test_clean_registry_passes_and_returns_the_chosen_record() -> None:
    assert validate_startup() is None
    chosen = validate_startup(backend="flashinfer.mla.fa3", world_size=4)
    assert chosen is not None and chosen.lse_base == "2"


def test_missing_base_fails_at_startup_with_ac001() -> None:
    with pytest.raises(ContractError) as exc:
        validate_startup([GOOD, without_base(name="bad.one")])
    assert exc.value.codes == [Code.AC001]
    assert exc.value.findings[0].subject == "bad.one"
    assert exc.value.findings[0].field == "lse.base"


def test_every_problem_is_listed_at_once() -> None:
    no_lse = good(name="no.lse", lse={"returns": "none"})
    with pytest.raises(ContractError) as exc:
        validate_startup(
            [GOOD, GOOD | {"library": "changed"}, without_base(name="bad.one"),
             good(name="bad.two", lse={"returns": "none", "layout": "token_head"}), no_lse,
             FlashInferMLAImpl],
            backend="no.lse", world_size=2)
    assert sorted(exc.value.codes) == [Code.AC001, Code.AC002, Code.AC004, Code.AC005,
                                       Code.AC006]
    text = str(exc.value)
    assert "5 problem(s)" in text


def test_unknown_backend_is_ac013() -> None:
    with pytest.raises(ContractError) as exc:
        validate_startup(backend="flashinfer.mla.fa4")
    assert exc.value.codes == [Code.AC013]


def test_dcp_without_lse_is_ac006_and_world_size_one_is_fine() -> None:
    assert validate_startup(backend="flashinfer.xqa", world_size=1) is not None
    with pytest.raises(ContractError) as exc:
        validate_startup(backend="flashinfer.xqa", world_size=2)
    assert exc.value.codes == [Code.AC006]


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
def test_bad_world_size_is_a_value_error(bad: object) -> None:
    with pytest.raises(ValueError, match="world_size"):
        validate_startup(world_size=bad)  # type: ignore[arg-type]


def test_registry_and_record_backend_accepted() -> None:
    reg = Registry(builtin=False)
    reg.add(CapabilityRecord.model_validate(GOOD))
    rec = validate_startup(reg, backend="test.kernel", world_size=8)
    assert rec == CapabilityRecord.model_validate(GOOD)
    assert validate_startup([], backend=rec, world_size=2) is rec


def test_bad_file_path_is_ac000(tmp_path) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ContractError) as exc:
        validate_startup([tmp_path / "missing.toml"])
    assert exc.value.codes == [Code.AC000]


# --- one consumer lookup, the same in the API and the CLI -----------------------------------------
def _redefined_merge(tmp_path):  # type: ignore[no-untyped-def]
    """A records file whose consumer takes a built-in name with other facts (a fixed base e)."""
    from attn_contracts.registry import Registry

    raw = Registry().consumer("attn_contracts.merge").model_dump(mode="json")
    raw.pop("role")
    raw["base"] = {"kind": "fixed", "base": "e"}

    path = tmp_path / "mine.json"
    path.write_text(json.dumps({"consumer": [raw]}))
    return path


def test_a_file_redefining_a_builtin_consumer_is_ac005_in_the_api_and_the_cli(
        tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]

    path = _redefined_merge(tmp_path)
    with pytest.raises(ContractError) as exc:
        validate_startup([path], backend=None, consumers=["attn_contracts.merge"])
    assert Code.AC005 in exc.value.codes
    assert main(["validate", "--file", str(path)]) == 1
    assert "AC005" in capsys.readouterr().out


@pytest.mark.parametrize("use", [("attn_contracts.merge",), ("attn_contracts.merge", 2), 3,
                                 ("attn_contracts.merge", "'2'", "extra")])
def test_a_consumer_use_of_another_shape_is_a_value_error_naming_it(use: object) -> None:
    """It used to be an unpacking ValueError or an AttributeError ('int' has no 'strip')."""
    with pytest.raises(ValueError, match=r"each use must be a name, a ConsumerRecord, or a .*"
                       r"found " + re.escape(repr(use))):
        validate_startup(backend="flashinfer.mla.fa3", world_size=2,
                         consumers=[use])  # type: ignore[list-item]


def test_consumers_given_as_a_generator_still_join_the_consensus(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The uses are read twice (edge checks, then the ranks' consensus): a generator used to be
    empty the second time, so the ranks agreed on no consumers at all."""
    import attn_contracts.consensus as consensus

    seen: dict[str, object] = {}

    def agree(findings, recs, chosen, world, *, group, timeout_s, settings, collective=None,  # type: ignore[no-untyped-def]
              opened=None):
        seen.update(settings)
        return findings

    monkeypatch.setattr(consensus, "agree_across_ranks", agree)
    uses = (u for u in [("attn_contracts.merge", "'2'")])
    assert validate_startup(backend="flashinfer.mla.fa3", world_size=2, consumers=uses,
                            group=object()) is not None
    assert seen["consumers"] == ["attn_contracts.merge='2'"]


# --- what enters startup is re-validated; the probe without torch or its device ---------------
@pytest.mark.filterwarnings("ignore::UserWarning")  # pydantic warns when it dumps the bad base
def test_a_model_copied_record_is_refused_at_startup() -> None:
    from attn_contracts import ContractError
    from attn_contracts import validate_startup
    from attn_contracts.findings import Code

    bad = bad_copy()
    with pytest.raises(ContractError) as exc:
        validate_startup(records=[bad], world_size=1)
    assert Code.AC012 in exc.value.codes
    with pytest.raises(ContractError) as exc:
        validate_startup(records=[], backend=bad, world_size=2)  # type: ignore[arg-type]
    assert Code.AC012 in exc.value.codes


def test_without_torch_the_probe_is_a_clear_error() -> None:
    proc = without_torch(
        "from attn_contracts import validate_startup\n"
        "try:\n"
        "    validate_startup(backend='torch.sdpa_ref', world_size=2, probe=True)\n"
        "except ImportError as err:\n"
        "    print(type(err).__name__, err)\n")
    assert proc.returncode == 0, proc.stderr
    assert "probe=True" in proc.stdout and "attn-contracts[kernels]" in proc.stdout


def test_without_torch_validate_without_probe_still_works() -> None:
    proc = without_torch("from attn_contracts import validate_startup\n"
                          "validate_startup(backend='torch.sdpa_ref', world_size=2)\n")
    assert proc.returncode == 0, proc.stderr


def test_the_probe_on_a_missing_device_is_an_error() -> None:
    from attn_contracts import validate_startup

    device = "cuda:999" if has_cuda() else "cuda"
    with pytest.raises(ValueError, match="probe device"):
        validate_startup(backend="torch.sdpa_ref", world_size=2, probe=True, device=device)
