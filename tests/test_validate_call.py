"""``validate --backend NAME --call KEY=VALUE``: one call, every key read, an LSE turned off is a
finding; and ``--backend`` never hides why a record is missing (issue 38, items 2 and 3)."""

from __future__ import annotations

from pathlib import Path

import pytest

from attn_contracts import validate_startup
from attn_contracts.cli import main
from attn_contracts.findings import Code
from attn_contracts.findings import ContractError
from fixtures.cli import one_line_usage_error
from fixtures.cli import write

DISPATCHED = "flashinfer.mla.trtllm_gen"  # its call chooses the base: return_lse_base, backend
KEYS = "backend, return_lse, return_lse_base, sparse_mla_top_k"


def test_a_repeated_key_is_refused_naming_the_keys_the_call_reads(
        capsys: pytest.CaptureFixture[str]) -> None:
    line = one_line_usage_error(capsys, ["validate", "--backend", DISPATCHED, "--call",
                                         "backend=auto", "--call", "backend=trtllm-gen"])
    assert "backend given twice" in line and "'auto'" in line and "'trtllm-gen'" in line
    assert KEYS in line


def test_an_unknown_key_is_refused_naming_the_keys_the_call_reads(
        capsys: pytest.CaptureFixture[str]) -> None:
    line = one_line_usage_error(capsys, ["validate", "--backend", DISPATCHED, "--call",
                                         "return_lse_base=basee", "--call", "retrun_lse=True"])
    assert "retrun_lse" in line and KEYS in line


def test_a_key_for_a_record_whose_call_reads_none_is_refused(
        capsys: pytest.CaptureFixture[str]) -> None:
    line = one_line_usage_error(capsys, ["validate", "--backend", "torch.sdpa_ref", "--call",
                                         "backend=auto"])
    assert "reads no keyword" in line


def test_known_keys_once_each_still_pass() -> None:
    assert main(["validate", "--backend", DISPATCHED, "--call", "return_lse_base=basee",
                 "--call", "return_lse=True"]) == 0


@pytest.mark.parametrize("needs", [["--consumer", "attn_contracts.merge"], ["--world-size", "2"]])
def test_a_call_that_turns_off_the_lse_a_consumer_needs_is_a_finding(
        capsys: pytest.CaptureFixture[str], needs: list[str]) -> None:
    assert main(["validate", "--backend", "flashinfer.mla.fa3", "--call", "return_lse=False",
                 *needs, "--format", "json"]) == 1
    out = capsys.readouterr().out
    assert '"code": "AC006"' in out and "return_lse=False" in out


def test_a_call_that_turns_off_the_lse_nothing_needs_is_no_finding() -> None:
    assert main(["validate", "--backend", "flashinfer.mla.fa3", "--call", "return_lse=False"]) == 0


def test_a_flag_is_read_by_its_truth() -> None:
    """``return_lse=1`` returns the LSE as ``True`` does (the kernel tests the flag with ``if``)."""
    assert main(["validate", "--backend", "flashinfer.mla.fa3", "--call", "return_lse=1",
                 "--world-size", "2"]) == 0
    assert main(["validate", "--backend", "flashinfer.mla.fa3", "--call", "return_lse=0",
                 "--world-size", "2"]) == 1


def test_validate_startup_refuses_a_producer_call_without_the_lse() -> None:
    with pytest.raises(ContractError) as err:
        validate_startup(backend="flashinfer.mla.fa3", consumers=["attn_contracts.merge"],
                         producer_call={"return_lse": False})
    assert err.value.codes == [Code.AC006]


SCHEMA_ERROR = """
[[record]]
name = "my.kernel"
library = "mylib"
source = "a record with an unknown key"
evidence = "read_from_code"
bogus_key = 1
lse = { returns = "lse", base = "e", layout = "token_head", dtype = "float32", empty_row = "-inf", includes_sink = false }
decode = { attention = "mha", out_layout = "token_head_dim", head_dims = [128], q_dtypes = ["bfloat16"], q_len_gt_1 = false }
"""


def test_backend_shows_the_schema_error_of_its_records_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = write(tmp_path, "r.toml", SCHEMA_ERROR)
    assert main(["validate", "--file", str(f), "--backend", "my.kernel"]) == 1
    out = capsys.readouterr().out
    assert "AC012" in out and "bogus_key" in out


def test_verify_shows_the_schema_error_of_the_record_it_was_asked_for(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = write(tmp_path, "r.toml", SCHEMA_ERROR)
    assert main(["verify", "--file", str(f), "my.kernel"]) == 1
    err = capsys.readouterr().err
    assert "AC012" in err and "bogus_key" in err and "AC013" in err
