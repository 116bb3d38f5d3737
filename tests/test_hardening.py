"""Hardening: bad input is one line and exit 2; what a file names never runs unasked (an adapter
is a function defined in an allowed module); plugins cannot end or flood a run; re-validation at
startup and planning; the JSON schema is as strict as the models; no Infinity/NaN in records or
JSON; a missing torch, library or device is exit 2 (or a skip when asked), never a false finding.

Every CLI case goes through ``main(argv)`` and checks the return code and that stderr is exactly one
line with no traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from attn_contracts import CapabilityRecord, sources
from attn_contracts.cli import main
from fixtures.records import good


def one_line_usage_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    """Run ``main(argv)``, require exit 2 and one stderr line without a traceback; return it."""
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


# --- 3. bad input: one line and exit 2 ------------------------------------------------------------

def _write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    f = tmp_path / name
    f.write_bytes(data if isinstance(data, bytes) else data.encode())
    return f


@pytest.mark.parametrize("command", [["validate"], ["verify"]])
@pytest.mark.parametrize("suffix", [".json", ".toml"])
def test_binary_records_file(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                             command: list[str], suffix: str) -> None:
    f = _write(tmp_path, "r" + suffix, b"\xff\xfe\x00\x01binary")
    line = one_line_usage_error(capsys, [*command, "--file", str(f)])
    assert "not UTF-8" in line and "0xff" in line


@pytest.mark.parametrize("name,text", [
    ("deep.json", "[" * 100_000 + "]" * 100_000),
    ("deep.toml", "a = " + "[" * 100_000 + "]" * 100_000),
    ("deep70.json", "[" * 70 + "]" * 70),  # parses, but deeper than any record needs
])
def test_deeply_nested_document(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                                text: str) -> None:
    f = _write(tmp_path, name, text)
    assert "nest" in one_line_usage_error(capsys, ["validate", "--file", str(f)])


def test_an_integer_too_long_to_convert(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _write(tmp_path, "big.json", '{"a": ' + "1" * 5000 + "}")
    assert "not valid JSON" in one_line_usage_error(capsys, ["validate", "--file", str(f)])


@pytest.mark.parametrize("name,text", [("e.toml", ""), ("e.json", ""), ("w.toml", "\n  \n"),
                                       ("l.json", "[]"), ("o.json", "{}")])
def test_empty_toml_and_json_are_the_same_usage_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, text: str) -> None:
    f = _write(tmp_path, name, text)
    line = one_line_usage_error(capsys, ["validate", "--file", str(f)])
    assert "empty" in line or "no records" in line


@pytest.mark.parametrize("command", [["validate"], ["verify"]])
def test_dev_zero_is_refused_not_read(capsys: pytest.CaptureFixture[str],
                                      command: list[str]) -> None:
    line = one_line_usage_error(capsys, [*command, "--file", "/dev/zero"])
    assert "not a regular file" in line and "character device" in line


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_is_refused_without_blocking(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "records.json"
    os.mkfifo(fifo)  # no writer: opening it for reading blocks forever unless non-blocking
    assert "FIFO" in one_line_usage_error(capsys, ["validate", "--file", str(fifo)])


def test_a_directory_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert "directory" in one_line_usage_error(capsys, ["validate", "--file", str(tmp_path)])


def test_a_file_over_the_bound_is_refused(tmp_path: Path) -> None:
    f = tmp_path / "huge.json"
    with f.open("wb") as fh:  # sparse: the bound is checked without writing 10 MiB of data
        fh.truncate(sources.MAX_FILE_BYTES + 1)
    with pytest.raises(sources.FileReadError, match="10 MiB"):
        sources.read_file(f)


@pytest.mark.parametrize("argv", [
    ["verify", "--device", "foo", "torch.sdpa_ref"],
    ["demo", "dcp", "--world-size", "0"],
    ["demo", "dcp", "--repeats", "0"],
    ["demo", "dcp", "--world-size", "-1"],
    ["demo", "dcp", "--interleave", "-1"],
    ["demo", "dcp", "--timeout", "0"],
    ["validate", "--world-size", "0"],
    ["validate", "--world-size", "-2"],
    ["validate", "--world-size", "0", "--backend", "torch.sdpa_ref"],
])
def test_bad_arguments_are_one_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    assert "error: argument" in one_line_usage_error(capsys, argv)


@pytest.mark.parametrize("argv", [
    ["show", "no.such"],
    ["plan", "no.such"],
    ["verify", "no.such"],
    ["validate", "--backend", "no.such"],
    ["validate", "--backend", "no.such", "--world-size", "2"],
    ["validate", "--backend", "torch.sdpa_ref", "--consumer", "no.such"],
])
def test_an_unknown_name_is_the_same_usage_error_everywhere(
        capsys: pytest.CaptureFixture[str], argv: list[str]) -> None:
    line = one_line_usage_error(capsys, argv)
    assert "AC013" in line and "no.such" in line


def test_verify_file_without_names_verifies_the_files_records(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    record = good(name="plain.kernel")  # no adapter: a declarative record, skipped cleanly
    f = _write(tmp_path, "r.json", json.dumps([record]))
    assert main(["verify", "--file", str(f)]) == 0
    out = capsys.readouterr().out
    assert "plain.kernel" in out and "1 skipped" in out


def test_subprocess_stderr_is_one_line_without_traceback(tmp_path: Path) -> None:
    """The console script itself, not just main(): nothing escapes as a traceback."""
    f = _write(tmp_path, "r.toml", b"\xff")
    proc = subprocess.run([sys.executable, "-c", "import sys; from attn_contracts.cli import main;"
                           " sys.exit(main(sys.argv[1:]))", "validate", "--file", str(f)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "Traceback" not in proc.stderr


# --- 4. trust boundaries: adapters named by a file ------------------------------------------------

def _record_with_adapter(adapter: str, name: str = "file.kernel") -> dict[str, object]:
    return good(name=name, library="torch", evidence="measured", adapter=adapter,
                lse={"returns": "lse", "base": "e", "layout": "token_head", "dtype": "float32",
                     "empty_row": "-inf", "includes_sink": False},
                decode={"attention": "mha", "out_layout": "token_head_dim", "head_dims": [64],
                        "q_dtypes": ["float32"], "q_len_gt_1": False})


MARKER_MODULE = """
import pathlib, sys
pathlib.Path({marker!r}).write_text("imported")
{tail}
def run(problem):
    sys.exit(3)
"""


def _marker_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str,
                   tail: str = "") -> Path:
    """A module on sys.path that leaves a marker file when imported (cwd-on-sys.path attack)."""
    marker = tmp_path / f"{name}.imported"
    (tmp_path / f"{name}.py").write_text(MARKER_MODULE.format(marker=str(marker), tail=tail))
    monkeypatch.syspath_prepend(str(tmp_path))
    return marker


@pytest.mark.parametrize("adapter", ["os:system", "builtins:print", "sys:exit", "json:loads"])
def test_a_file_adapter_is_not_run_unless_allowed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], adapter: str) -> None:
    f = _write(tmp_path, "r.json", json.dumps([_record_with_adapter(adapter)]))
    assert main(["verify", "--file", str(f)]) == 0  # a skip, not a finding: nothing ran
    out = capsys.readouterr().out
    assert "adapter not allowed" in out and "0 verified, 1 skipped" in out
    assert f"--allow-adapter {adapter.partition(':')[0]}" in out


def test_a_local_module_named_by_a_file_is_never_imported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    marker = _marker_module(tmp_path, monkeypatch, "ac_local_adapter")
    f = _write(tmp_path, "r.json", json.dumps([_record_with_adapter("ac_local_adapter:run")]))
    assert main(["verify", "--file", str(f), "--all"]) == 0
    assert not marker.exists()
    assert "adapter not allowed" in capsys.readouterr().out


def test_an_allowed_adapter_that_exits_ends_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    marker = _marker_module(tmp_path, monkeypatch, "ac_exit_adapter")
    marker_import = _marker_module(tmp_path, monkeypatch, "ac_exit_at_import", "sys.exit(4)")
    f = _write(tmp_path, "r.json", json.dumps([
        _record_with_adapter("ac_exit_adapter:run", "exit.at-run"),
        _record_with_adapter("ac_exit_at_import:run", "exit.at-import"),
        _record_with_adapter("sys:exit", "exit.sys"),
    ]))
    argv = ["verify", "--file", str(f), "--allow-adapter", "ac_exit_adapter",
            "--allow-adapter", "ac_exit_at_import", "--allow-adapter", "sys"]
    assert main(argv) == 1  # every record reported, each a finding: none of them ran to the end
    out = capsys.readouterr().out
    assert marker.exists() and marker_import.exists()
    assert "SystemExit" in out and "0 verified, 0 skipped, 3 could not run, 3 finding(s)" in out


def test_allow_adapter_names_a_module_and_its_submodules() -> None:
    from attn_contracts.backends.adapter import adapter_allowed

    assert adapter_allowed("mylib.attn:decode", ["mylib"])
    assert adapter_allowed("mylib:decode", ["mylib"])
    assert not adapter_allowed("mylibrary:decode", ["mylib"])
    assert not adapter_allowed("os:system", ["attn_contracts.backends"])


def test_the_catalog_adapters_still_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "torch.sdpa_ref"]) == 0
    assert "1 verified" in capsys.readouterr().out


# --- 4. trust boundaries: plugins ----------------------------------------------------------------

def _install_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, body: str,
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
    _install_plugin(tmp_path, monkeypatch, "ac_hostile_plugin", HOSTILE_PLUGIN, entry_point + "\n")
    name = entry_point.partition(" =")[0]
    assert main(["validate", "--plugins", name, "--format", "json"]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert [f["code"] for f in findings if f["subject"] == name] == ["AC014"]
    assert any(expect in f["message"] for f in findings)


# --- 4. trust boundaries: what enters startup or planning is re-validated -------------------------

def _bad_copy() -> object:
    from attn_contracts import get

    record = get("torch.sdpa_ref")
    return record.model_copy(update={"name": "torch.sdpa_ref+bad",
                                     "lse": record.lse.model_copy(update={"base": "10"})})


@pytest.mark.filterwarnings("ignore::UserWarning")  # pydantic warns when it dumps the bad base
def test_a_model_copied_record_is_refused_at_startup() -> None:
    from attn_contracts import ContractError, validate_startup
    from attn_contracts.findings import Code

    bad = _bad_copy()
    with pytest.raises(ContractError) as exc:
        validate_startup(records=[bad], world_size=1)
    assert Code.AC012 in exc.value.codes
    with pytest.raises(ContractError) as exc:
        validate_startup(records=[], backend=bad, world_size=2)  # type: ignore[arg-type]
    assert Code.AC012 in exc.value.codes


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_model_copied_record_cannot_be_registered() -> None:
    from attn_contracts import ContractError
    from attn_contracts.registry import Registry

    with pytest.raises(ContractError) as exc:
        Registry().add(_bad_copy())  # type: ignore[type-var]
    assert "AC012" in str(exc.value)


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_a_model_copied_record_is_refused_by_plan_combine() -> None:
    pytest.importorskip("torch")
    from attn_contracts import ContractError
    from attn_contracts.combine.plan import plan_combine
    from attn_contracts.findings import Code

    with pytest.raises(ContractError) as exc:
        plan_combine(_bad_copy(), mode="merge", world_size=2, num_heads=4,  # type: ignore[arg-type]
                     head_dim=64, out_dtype="float32")
    assert Code.AC012 in exc.value.codes


# --- 4. trust boundaries: the JSON schema is as strict as the models ------------------------------

CONSUMER: dict[str, object] = {
    "role": "consumer", "name": "test.merge", "library": "vllm", "source": "tests",
    "evidence": "read_from_code", "base": {"kind": "fixed", "base": "e"},
    "lse": {"layouts": ["token_head"], "states": "separate", "dtypes": ["float32"]},
    "empty": {"reads_as_empty": ["-inf"], "all_empty": "zero", "zero_weight_nan_safe": True},
    "output": {"returns_lse": True, "lse_base": "e"},
}


def _consumer(**top: object) -> dict[str, object]:
    return json.loads(json.dumps({**CONSUMER, **top}))


def _mutated(base: dict[str, object], path: str, value: object) -> dict[str, object]:
    """A deep copy of ``base`` with ``path`` ("lse.base") set to ``value`` (or removed: DROP)."""
    d = json.loads(json.dumps(base))
    *parents, key = path.split(".")
    node = d
    for p in parents:
        node = node[p]
    if value is DROP:
        del node[key]
    else:
        node[key] = value
    return d


DROP = object()
_LSE = good()["lse"]
PRODUCER_CASES = [
    ("typo", DROP), ("lse.bsae", "e"), ("lse.base", 2), ("lse.base", "10"), ("lse.base", None),
    ("lse.base", DROP), ("lse.layout", "tokens"), ("lse.includes_sink", "no"),
    ("decode.head_dims", ["128"]), ("decode.head_dims", []), ("decode.head_dims", [128.5]),
    ("decode.head_dims", [0]), ("decode.head_dims", [True]), ("library_version", "latest"),
    ("library_version", "banana"), ("library_version", ">=1.2,<2"), ("library_version", "==0.7.*"),
    ("library_version", "~=1.4.2"), ("library_version", ">=0.2.8RC1"), ("library_version", ""),
    ("name", "Bad Name"), ("lse.returns", DROP), ("lse.empty_row", DROP), ("lse", {}),
    ("lse", {"returns": "none"}), ("lse", {"returns": "none", "base": "e"}),
    ("lse", {k: v for k, v in _LSE.items() if k != "returns"}), ("lse.padded_heads", 0),
    ("decode.min_compute_capability", "9"), ("adapter", "not an adapter"), ("verified", 3),
    ("calls", [{"function": "f", "when": {"return_lse": True}}]),
    ("calls", [{"function": "f", "when": {"return_lse": "True"}}]),
]
CONSUMER_CASES = [
    ("role", DROP), ("base", DROP), ("base", {"base": "e"}), ("base.kind", "keyword"),
    ("base", {"kind": "keyword", "keyword": "is_e", "values": {"True": "e"}}),
    ("base", {"kind": "keyword", "keyword": "is_e", "values": {}}),
    ("base", {"kind": "keyword", "keyword": "is_e", "values": {"True": "10"}}),
    ("output", {"returns_lse": True}), ("output", {"returns_lse": False}),
    ("output", {"returns_lse": False, "lse_base": "e"}), ("output", {"returns_lse": True,
                                                                     "lse_base": "input"}),
    ("lse.states", "third"), ("lse.layouts", []), ("empty.reads_as_empty", ["zero"]),
    ("library_version", "latest"), ("limits", {"max_states": 0}), ("limits", {"head_dims": [64]}),
]
# What JSON Schema cannot say: 128.0 is an integer to it (draft 2020-12, 6.1.1), and a keyword
# base's default must be one of its values' keys. The models refuse both; `schema` says so.
SCHEMA_GAPS = [
    ("producer", _mutated(good(), "decode.head_dims", [128.0])),
    ("consumer", _mutated(CONSUMER, "base", {"kind": "keyword", "keyword": "is_e",
                                             "values": {"True": "e"}, "default": "False"})),
]


def _schema_validator(role: str) -> object:
    jsonschema = pytest.importorskip("jsonschema")
    from attn_contracts.cli.catalog import record_schema

    schema = record_schema(role)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _accepted(raw: dict[str, object]) -> bool:
    recs, findings = sources.parse_record(raw)
    return bool(recs) and not findings


def _cases() -> list[tuple[str, dict[str, object]]]:
    out = [("producer", _mutated(good(), p, v) if p != "typo" else good(typo=1))
           for p, v in PRODUCER_CASES]
    out += [("consumer", _mutated(CONSUMER, p, v)) for p, v in CONSUMER_CASES]
    return [*out, ("producer", good()), ("consumer", _consumer())]


@pytest.mark.parametrize("role,raw", _cases())
def test_the_schema_accepts_exactly_what_the_models_accept(role: str,
                                                           raw: dict[str, object]) -> None:
    validator = _schema_validator(role)
    assert validator.is_valid(raw) == _accepted(raw), (  # type: ignore[attr-defined]
        [e.message for e in validator.iter_errors(raw)])  # type: ignore[attr-defined]


@pytest.mark.parametrize("role,raw", SCHEMA_GAPS)
def test_the_documented_schema_gaps(role: str, raw: dict[str, object]) -> None:
    assert _schema_validator(role).is_valid(raw) and not _accepted(raw)  # type: ignore[attr-defined]


def test_every_catalog_record_and_consumer_fits_the_schema() -> None:
    from attn_contracts.registry import Registry

    reg = Registry()
    producer, consumer = _schema_validator("producer"), _schema_validator("consumer")
    for r in reg.records():
        assert producer.is_valid(r.model_dump(mode="json")), r.name  # type: ignore[attr-defined]
    for c in reg.consumers():
        assert consumer.is_valid(c.model_dump(mode="json")), c.name  # type: ignore[attr-defined]
    assert consumer.is_valid(_consumer())  # type: ignore[attr-defined]


def test_schema_prints_either_role(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema", "--role", "consumer"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert "role" in schema["required"] and "KeywordBase" in schema["$defs"]
    assert main(["schema"]) == 0
    assert "LseSpec" in json.loads(capsys.readouterr().out)["$defs"]


# --- 5. missing torch or device: a clear skip or error, never a false finding ---------------------

def _without_torch(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh interpreter where importing torch fails (as if not installed)."""
    prelude = "import sys; sys.modules['torch'] = None\n"
    return subprocess.run([sys.executable, "-c", prelude + code], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).parent)


@pytest.mark.parametrize("argv", [["verify", "torch.sdpa_ref"], ["verify", "--all"],
                                  ["verify", "--all", "--device", "cuda"]])
def test_without_torch_verify_skips_with_the_install_hint(argv: list[str]) -> None:
    # --skip-unavailable: without it a missing torch is exit 2 (the test below)
    argv = [*argv, "--skip-unavailable"]
    proc = _without_torch(f"from attn_contracts.cli import main; sys.exit(main({argv!r}))")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "AC008" not in proc.stdout
    assert "0 verified" in proc.stdout and "attn-contracts[kernels]" in proc.stdout


@pytest.mark.parametrize("argv", [["verify", "torch.sdpa_ref"], ["verify", "--all"],
                                  ["verify", "--consumer", "--all"]])
def test_without_torch_verify_is_a_usage_error_like_a_missing_device(argv: list[str]) -> None:
    """A CI job that forgot the kernels extra must not go green with nothing verified."""
    proc = _without_torch(f"from attn_contracts.cli import main; sys.exit(main({argv!r}))")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "attn-contracts[kernels]" in lines[0], proc.stderr
    assert "--skip-unavailable" in lines[0] and "Traceback" not in proc.stderr


def test_a_missing_library_an_adapter_requires_is_a_usage_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """FlashInfer missing for a FlashInfer record: exit 2 unless --skip-unavailable."""
    module = tmp_path / "ac_needs_lib.py"
    module.write_text("from attn_contracts.backends.torch_ref import run as _run\n"
                      "from attn_contracts.backends.adapter import Adapter\n"
                      "def run(p):\n    return _run(p)\n"
                      "decode = Adapter(run=run, requires=('no_such_library_xyz',))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    f = _write(tmp_path, "r.json", json.dumps([_record_with_adapter("ac_needs_lib:decode")]))
    argv = ["verify", "--file", str(f), "--allow-adapter", "ac_needs_lib"]
    line = one_line_usage_error(capsys, argv)
    assert "no_such_library_xyz not installed" in line and "--skip-unavailable" in line
    assert main([*argv, "--skip-unavailable"]) == 0
    assert "0 verified, 1 skipped" in capsys.readouterr().out


def test_without_torch_the_probe_is_a_clear_error() -> None:
    proc = _without_torch(
        "from attn_contracts import validate_startup\n"
        "try:\n"
        "    validate_startup(backend='torch.sdpa_ref', world_size=2, probe=True)\n"
        "except ImportError as err:\n"
        "    print(type(err).__name__, err)\n")
    assert proc.returncode == 0, proc.stderr
    assert "probe=True" in proc.stdout and "attn-contracts[kernels]" in proc.stdout


def test_without_torch_validate_without_probe_still_works() -> None:
    proc = _without_torch("from attn_contracts import validate_startup\n"
                          "validate_startup(backend='torch.sdpa_ref', world_size=2)\n")
    assert proc.returncode == 0, proc.stderr


def test_an_adapter_that_cannot_load_is_not_counted_as_verified(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _write(tmp_path, "r.json", json.dumps([
        _record_with_adapter("attn_contracts.backends.no_such_module:run", "gone.module"),
        _record_with_adapter("attn_contracts.backends.torch_ref:no_such_attr", "gone.attr")]))
    assert main(["verify", "--file", str(f)]) == 1
    out = capsys.readouterr().out
    assert "0 verified, 0 skipped, 2 could not run, 2 finding(s)" in out


def _has_cuda() -> bool:
    torch = pytest.importorskip("torch")
    return bool(torch.cuda.is_available())


def test_a_device_that_is_not_there_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    if _has_cuda():
        line = one_line_usage_error(capsys, ["verify", "--device", "cuda:999", "torch.sdpa_ref"])
        assert "does not exist" in line
        return
    line = one_line_usage_error(capsys, ["verify", "--device", "cuda", "torch.sdpa_ref"])
    assert "no CUDA device" in line and "--skip-unavailable" in line


def test_skip_unavailable_makes_a_missing_device_a_skip(
        capsys: pytest.CaptureFixture[str]) -> None:
    device = "cuda:999" if _has_cuda() else "cuda"
    assert main(["verify", "--device", device, "--skip-unavailable", "torch.sdpa_ref"]) == 0
    assert "0 verified, 1 skipped" in capsys.readouterr().out


def test_the_probe_on_a_missing_device_is_an_error() -> None:
    from attn_contracts import validate_startup

    device = "cuda:999" if _has_cuda() else "cuda"
    with pytest.raises(ValueError, match="probe device"):
        validate_startup(backend="torch.sdpa_ref", world_size=2, probe=True, device=device)


def test_an_exception_quoted_in_a_finding_is_bounded() -> None:
    from attn_contracts.findings import error_text

    text = error_text(ValueError("x" * 100_000))
    assert text.startswith("ValueError: xxx") and len(text) <= 300 and text.endswith("...")


# --- an adapter is a function defined in an allowed module ---------------------------------------
@pytest.mark.parametrize("adapter", [
    "attn_contracts.backends.combine_probe:subprocess.run",  # an attribute chain into an import
    "attn_contracts.backends.adapter:importlib.import_module",
    "attn_contracts.backends.combine_probe:subprocess",  # a module, not a function
    "attn_contracts.backends.combine_probe:merge_reference",  # imported from the combine
    "attn_contracts.backends.runner:warnings",
])
def test_an_allowed_module_does_not_lend_its_imports(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        adapter: str) -> None:
    import subprocess as sp

    called: list[object] = []
    monkeypatch.setattr(sp, "run", lambda *a, **k: called.append(a))  # if reached, recorded
    raw = {"name": "evil.merge", "library": "evil", "source": "s", "evidence": "measured",
           "adapter": adapter, "base": {"kind": "keyword", "keyword": "shell",
                                        "values": {"True": "e"}, "default": "True"},
           "lse": {"layouts": ["token_head"], "states": "first", "dtypes": ["float32"]},
           "empty": {"reads_as_empty": ["-inf"], "all_empty": "zero",
                     "zero_weight_nan_safe": True},
           "output": {"returns_lse": False}}
    f = _write(tmp_path, "c.json", json.dumps({"consumer": [raw]}))
    assert main(["verify", "--consumer", "--all", "--file", str(f)]) == 1
    out = capsys.readouterr().out
    assert not called and "adapter" in out and "AC008" in out
    producer = _write(tmp_path, "p.json", json.dumps([_record_with_adapter(adapter)]))
    assert main(["verify", "--file", str(producer)]) == 1
    assert not called


def test_every_skip_reason_says_skipped_once(tmp_path: Path) -> None:
    from attn_contracts import get
    from attn_contracts.backends.runner import verify_consumer, verify_record
    from attn_contracts.registry import Registry

    reasons = [verify_record(get("flashinfer.xqa")).reason,  # no LSE
               verify_record(get("flash_attn.fa2")).reason,  # no adapter
               verify_record(get("flashinfer.mla.fa3")).reason,  # needs CUDA
               verify_record(CapabilityRecord.model_validate(_record_with_adapter("os:system")),
                             allow_adapters=["attn_contracts.backends"]).reason,  # not allowed
               verify_consumer(Registry().consumer("flashinfer.merge_state")).reason]
    for reason in reasons:
        assert reason.startswith("skipped: ") and reason.count("skipped") == 1, reason


# --- no Infinity/NaN in a record, nor in JSON output --------------------------------------------
NON_FINITE_TOML = """
[[record]]
name = "x.nonfinite"
library = "x"
source = "s"
evidence = "measured"
lse = { returns = "lse", base = "2", layout = "token_head", dtype = "float32", empty_row = "-inf", includes_sink = false, padded_heads = inf }
decode = { attention = "mha", out_layout = "token_head_dim", head_dims = [nan], q_dtypes = ["bfloat16"], q_len_gt_1 = false }
"""


def _strict_json(text: str) -> object:
    def refuse(name: str) -> object:
        raise AssertionError(f"{name} printed: not JSON")

    return json.loads(text, parse_constant=refuse)


def test_non_finite_numbers_are_refused_and_never_printed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = _write(tmp_path, "records.toml", NON_FINITE_TOML)
    assert main(["validate", "--no-builtin", "--file", str(f), "--format", "json"]) == 1
    doc = _strict_json(capsys.readouterr().out)
    fields = {x["field"] for x in doc["findings"]}  # type: ignore[index]
    assert {"lse.padded_heads", "decode.head_dims.0"} <= fields
    assert main(["lint", str(f), "--format", "json"]) == 1
    assert _strict_json(capsys.readouterr().out)
    bad_json = _write(tmp_path, "r.json", '[{"name": "x.y", "padded_heads": Infinity}]')
    line = one_line_usage_error(capsys, ["validate", "--file", str(bad_json)])
    assert "Infinity is not a JSON value" in line
