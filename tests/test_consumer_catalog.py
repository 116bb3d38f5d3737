"""The built-in consumer catalog (backends/catalog/consumers.toml): every entry is a valid, cited
ConsumerRecord, and the facts read from the libraries' sources are spot-checked here."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from attn_contracts.consumer import ConsumerRecord
from attn_contracts.consumer import FixedBase
from attn_contracts.consumer import KeywordBase
from attn_contracts.registry import Registry
from attn_contracts.sources import read_file

CATALOG = Path(__file__).resolve().parents[1] / "backends" / "catalog" / "consumers.toml"
# "path/file.ext:L12" or ":L12-L40": a file and a line in it.
CITATION = re.compile(r"[\w./-]+\.(py|cu|cuh|h|hpp|cpp|cc):L\d+")
# FlashInfer's three merges, in the releases with and without the all-empty guards (d7f2c64).
FLASHINFER_MERGES = [f"flashinfer.{f}{v}" for f in ("merge_state", "merge_state_in_place",
                                                    "merge_states")
                     for v in ("", ".pre-d7f2c64")]


def _raw() -> list[dict[str, object]]:
    with CATALOG.open("rb") as f:
        entries = tomllib.load(f)["consumer"]
    assert isinstance(entries, list)
    return entries


@pytest.fixture(scope="module")
def records() -> dict[str, ConsumerRecord]:
    recs = [ConsumerRecord.model_validate(raw) for raw in _raw()]
    return {r.name: r for r in recs}


def test_every_entry_validates_and_names_are_unique() -> None:
    raws = _raw()
    names = [raw["name"] for raw in raws]
    assert len(names) == len(set(names)), sorted(n for n in names if names.count(n) > 1)
    for raw in raws:
        ConsumerRecord.model_validate(raw)
    assert len(raws) >= 20


def test_every_source_cites_a_file_and_a_line(records: dict[str, ConsumerRecord]) -> None:
    uncited = [n for n, r in records.items() if not CITATION.search(r.source)]
    assert uncited == []


def test_every_source_names_what_was_read(records: dict[str, ConsumerRecord]) -> None:
    # A 40-hex commit, a release tag, or (for this project) its own files.
    version = re.compile(r"[0-9a-f]{12,40}|\bv\d+\.\d+")
    unversioned = [n for n, r in records.items()
                   if r.library != "attn-contracts" and not version.search(r.source)]
    assert unversioned == []


def test_every_call_names_lse_arguments(records: dict[str, ConsumerRecord]) -> None:
    assert all(r.calls for r in records.values())
    for r in records.values():
        for call in r.calls:
            assert call.lse_args, (r.name, call.function)


def test_the_registry_reads_the_catalog(records: dict[str, ConsumerRecord]) -> None:
    recs, findings = read_file(CATALOG)
    assert findings == []
    assert sorted(r.name for r in recs) == sorted(records)
    reg = Registry()
    assert reg.consumer("flashinfer.merge_states") == records["flashinfer.merge_states"]
    assert "flash_attn.fa3" in reg.names()  # producers still load beside the consumers


@pytest.mark.parametrize("name", FLASHINFER_MERGES)
def test_flashinfer_merges_are_base_2_with_the_thread_limit(
        records: dict[str, ConsumerRecord], name: str) -> None:
    r = records[name]
    assert r.base == FixedBase(base="2")
    assert r.output.lse_base == "2"
    assert r.lse.layouts == ("token_head",)
    threads = r.limits.threads
    assert threads is not None
    assert (threads.max_threads, threads.vector_bytes, threads.max_lanes_per_head) == (1024, 16, 32)
    assert r.limits.head_dims == (64, 128, 256, 512)


def _flashinfer_block(num_heads: int, head_dim: int, dtype_bytes: int) -> int:
    # cascade.cuh MergeState: vec_size = max(16 / sizeof(DType), HEAD_DIM / 32), block
    # (HEAD_DIM / vec_size, num_heads); computed here the way the kernel does, not the record's way.
    vec_size = max(16 // dtype_bytes, head_dim // 32)
    return (head_dim // vec_size) * num_heads


@pytest.mark.parametrize("head_dim", [64, 128, 256, 512])
@pytest.mark.parametrize("dtype_bytes", [2, 4])
@pytest.mark.parametrize("num_heads", [1, 7, 32, 64, 128])
def test_thread_limit_matches_the_flashinfer_launch(
        records: dict[str, ConsumerRecord], head_dim: int, dtype_bytes: int,
        num_heads: int) -> None:
    limit = records["flashinfer.merge_state"].limits.threads
    assert limit is not None
    assert limit.threads(num_heads, head_dim, dtype_bytes) == _flashinfer_block(
        num_heads, head_dim, dtype_bytes)


def test_flashinfer_thread_limit_spot_values(records: dict[str, ConsumerRecord]) -> None:
    limit = records["flashinfer.merge_state"].limits.threads
    assert limit is not None
    assert limit.threads(64, 128, 2) == 1024          # fp16, D=128: 16 lanes, 64 heads fit
    assert limit.threads(128, 128, 2) > limit.max_threads
    assert limit.threads(32, 256, 2) == 1024          # D=256: 32 lanes
    assert limit.threads(33, 256, 2) > limit.max_threads


def test_flashinfer_states_axis_and_empty_rows(records: dict[str, ConsumerRecord]) -> None:
    assert records["flashinfer.merge_states"].lse.states == "second"
    assert records["flashinfer.merge_state"].lse.states == "separate"
    # d7f2c64 added the d_sum > 0 guard: before it two -inf shards gave 0/0.
    assert records["flashinfer.merge_state"].empty.all_empty == "zero"
    assert records["flashinfer.merge_state.pre-d7f2c64"].empty.all_empty == "nan"
    # The in-place merge casts s with .to(float32): a bf16 s would not be updated.
    assert records["flashinfer.merge_state_in_place"].lse.dtypes == ("float32",)


def test_dcp_keywords_and_their_defaults(records: dict[str, ConsumerRecord]) -> None:
    for name, default_base in [("vllm.cp_lse_ag_out_rs", "e"), ("vllm.correct_attn_out", "e"),
                               ("vllm.dcp_a2a_lse_reduce", "e"),
                               ("sglang.cp_lse_ag_out_rs_mla", "2")]:
        base = records[name].base
        assert isinstance(base, KeywordBase), name
        assert base.keyword == "is_lse_base_on_e"
        assert base.base_of("True") == "e" and base.base_of("False") == "2"
        assert base.default_base == default_base, name


def test_project_merge_requires_its_base_keyword(records: dict[str, ConsumerRecord]) -> None:
    base = records["attn_contracts.merge"].base
    assert isinstance(base, KeywordBase)
    assert base.keyword == "base" and base.default is None
    assert base.keyword_for("2") == "'2'" and base.keyword_for("e") == "'e'"
    r = records["attn_contracts.merge"]
    assert set(r.empty.reads_as_empty) == {"-inf", "+inf", "nan"}
    assert r.empty.all_empty == "zero" and r.empty.zero_weight_nan_safe
    assert r.lse.states == "first" and set(r.lse.layouts) == {"token_head", "head_token"}


def test_spot_facts_read_from_the_sources(records: dict[str, ConsumerRecord]) -> None:
    # vLLM's two-way merge reads [H, T]; SGLang's v2 port reads [T, H].
    assert records["vllm.merge_attn_states.triton"].lse.layouts == ("head_token",)
    assert records["sglang.merge_state_v2"].lse.layouts == ("token_head",)
    # FA2's +inf empty row is mapped to -inf by vLLM's merge, not by xformers.
    assert "+inf" in records["vllm.merge_attn_states.triton"].empty.reads_as_empty
    assert records["xformers.merge_attentions"].empty.reads_as_empty == ("-inf",)
    # FA3's combine: natural log, at most 256 splits, zero-weight partials skipped.
    fa3 = records["flash_attn.fa3.combine"]
    assert fa3.base == FixedBase(base="e")
    assert fa3.limits.max_states == 256 and fa3.empty.zero_weight_nan_safe
    # Triton DCP kernels use tl.arange(0, HEAD_DIM) / tl.arange(0, N) without masks.
    assert records["vllm.cp_lse_ag_out_rs"].limits.pow2_head_dim
    assert records["vllm.cp_lse_ag_out_rs"].limits.pow2_states
    assert not records["vllm.dcp_a2a_lse_reduce"].limits.pow2_states
    assert records["xformers.merge_attentions"].lse.layouts == ("head_token",)
    assert records["sglang.cp_lse_ag_out_rs_mha"].empty.zero_weight_nan_safe
