"""CUDA: the kernels natively, CUDA-graph capture, inductor, and the FlashInfer records verified.

Run on the GPU machine with ``pytest -m gpu``; skipped without CUDA.
"""

from __future__ import annotations

import importlib.util
import math

import pytest
import torch

from attn_contracts import Registry
from attn_contracts import get
from attn_contracts.backends.plan_consumers import plan_consumer_records
from attn_contracts.backends.runner import verify_consumer
from attn_contracts.backends.runner import verify_record
from attn_contracts.combine import merge
from attn_contracts.combine import merge_reference
from attn_contracts.combine import plan_combine
from attn_contracts.combine import rescale
from attn_contracts.combine import rescale_reference
from attn_contracts.consumer import ConsumerRecord
from fixtures.tensors import assert_close_to
from fixtures.tensors import assert_lse_close
from fixtures.tensors import assert_merge_matches_reference
from fixtures.tensors import partials
from fixtures.tensors import poisoned

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("base", ["e", "2"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32], ids=str)
@pytest.mark.parametrize(("n", "t", "h", "d"), [(4, 1, 128, 512), (8, 1, 16, 576), (3, 100, 40, 128),
                                                (8, 257, 32, 80), (5, 33, 7, 96), (1, 5, 3, 64),
                                                (4, 32, 128, 512)])  # the last: register cap
def test_merge_and_rescale_on_cuda(n: int, t: int, h: int, d: int, dtype: torch.dtype,
                                   base: str, device: str) -> None:
    o, lse = partials(n, t, h, d, dtype, seed=n + t, device=device)
    assert_merge_matches_reference(o, lse, base=base, device=device)
    r = rescale(o[n - 1], lse, n - 1, base=base)
    assert_close_to(r.cpu(), rescale_reference(o[n - 1].cpu(), lse.cpu(), n - 1, base=base)[0],
                    dtype)


def test_non_contiguous_on_cuda(device: str) -> None:
    o, lse = partials(4, 9, 16, 160, torch.bfloat16, seed=3, device=device)
    o_nc, lse_nc = o[:, :, ::2, 16:144], lse[:, :, ::2]
    out = merge(o_nc, lse_nc, base="2")
    assert_close_to(out.cpu(), merge_reference(o_nc.cpu(), lse_nc.cpu(), base="2")[0],
                    torch.bfloat16)


def test_cuda_graph_capture_of_a_plan(device: str) -> None:
    plan = plan_combine("flashinfer.mla.fa3", mode="merge", world_size=4, num_heads=128,
                        head_dim=512, out_dtype=torch.bfloat16, return_lse=True)
    o, lse = partials(4, 2, 128, 512, torch.bfloat16, seed=1, specials=False, device=device)
    out = torch.empty(2, 128, 512, dtype=torch.bfloat16, device=device)
    lse_out = torch.empty(2, 128, device=device)
    rows = torch.ones(4, 2, dtype=torch.bool, device=device)  # FlashInfer's empty rows: masked
    plan(o, lse, out=out, lse_out=lse_out, row_mask=rows)  # compile before capture
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        plan(o, lse, out=out, lse_out=lse_out, row_mask=rows)
    o2, lse2 = partials(4, 2, 128, 512, torch.bfloat16, seed=2, device=device)
    o.copy_(o2)
    lse.copy_(lse2)
    g.replay()
    torch.cuda.synchronize()
    ref_o, ref_lse = merge_reference(o2.cpu(), lse2.cpu(), base="2")
    assert_close_to(out.cpu(), ref_o, torch.bfloat16)
    assert_lse_close(lse_out.cpu(), ref_lse)


def test_direct_relaunch_keeps_triton_specialisations(device: str) -> None:
    """The launcher calls the compiled kernel directly from the second launch on; a different
    pointer alignment or int value must get its own kernel, never reuse a specialised one."""
    o, lse = partials(4, 6, 16, 128, torch.bfloat16, seed=8, specials=False, device=device)
    ref = merge_reference(o.cpu(), lse.cpu(), base="2")[0]
    for _ in range(2):  # the second call goes through the direct path
        assert_close_to(merge(o, lse, base="2").cpu(), ref, torch.bfloat16)
    flat = torch.empty(o.numel() + 1, dtype=o.dtype, device=device)
    o_odd = flat[1:].view(o.shape)  # 2-byte aligned only
    o_odd.copy_(o)
    for _ in range(2):
        assert_close_to(merge(o_odd, lse, base="2").cpu(), ref, torch.bfloat16)
    o1, lse1 = o[:, :1].contiguous(), lse[:, :1].contiguous()  # T = 1: Triton makes it a constant
    for _ in range(2):
        assert_close_to(merge(o1, lse1, base="2").cpu(), ref[:1], torch.bfloat16)


@pytest.mark.parametrize("kernel", ["merge", "rescale"])
def test_pdl_launches_in_a_cuda_graph_wait_for_their_inputs(kernel: str, device: str) -> None:
    """One-token tiles use PDL. A second PDL merge reads the first kernel's output (N = 1, the
    identity): the first lets it launch early, so only ``gdc_wait`` before its loads keeps it
    from reading stale values. Captured in a graph, replayed on new inputs."""
    from attn_contracts.combine.tiles import default_config

    assert default_config(4, 1, 128, 512, kernel).pdl and default_config(1, 1, 128, 512).pdl
    o, lse = partials(4, 1, 128, 512, torch.bfloat16, seed=4, specials=False, device=device)
    first = torch.empty(1, 128, 512, dtype=torch.bfloat16, device=device)
    second = torch.empty_like(first)
    zero_lse = torch.zeros(1, 1, 128, device=device)

    def step() -> None:
        if kernel == "merge":
            merge(o, lse, base="2", out=first)
        else:
            rescale(o[3], lse, 3, base="2", out=first)
        merge(first[None], zero_lse, base="2", out=second)
        first.fill_(float("nan"))  # after the reader: a late read would see NaN

    step()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(3):
            step()
    o2, lse2 = partials(4, 1, 128, 512, torch.bfloat16, seed=6, specials=False, device=device)
    o.copy_(o2)
    lse.copy_(lse2)
    second.zero_()
    g.replay()
    torch.cuda.synchronize()
    ref = merge_reference(o2.cpu(), lse2.cpu(), base="2")[0] if kernel == "merge" else \
        rescale_reference(o2[3].cpu(), lse2.cpu(), 3, base="2")[0]
    assert_close_to(second.cpu(), ref, torch.bfloat16)


def test_torch_compile_inductor_fullgraph_on_cuda(device: str) -> None:
    o, lse = partials(4, 16, 8, 128, torch.bfloat16, seed=5, specials=False, device=device)

    def layer(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        merged = merge(x, y, base="e")
        return torch.nn.functional.silu(merged.float()).sum(-1)

    compiled = torch.compile(layer, fullgraph=True)
    torch.testing.assert_close(compiled(o, lse), layer(o, lse), atol=1e-2, rtol=1e-2)


def test_torch_reference_backend_on_cuda(device: str) -> None:
    assert verify_record(get("torch.sdpa_ref"), device=device).status == "match"


FLASHINFER = [r for r in Registry().records() if r.library == "flashinfer" and r.adapter]
needs_flashinfer = pytest.mark.skipif(importlib.util.find_spec("flashinfer") is None,
                                      reason="flashinfer not installed")


@needs_flashinfer
@pytest.mark.parametrize("record", FLASHINFER, ids=lambda r: r.name)
def test_flashinfer_records_verify_clean(record, device: str) -> None:  # type: ignore[no-untyped-def]
    result = verify_record(record, device=device)
    if result.status == "skipped":
        pytest.skip(result.reason)
    assert result.status == "match", [f.render() for f in result.findings]


@needs_flashinfer
@pytest.mark.parametrize("record", FLASHINFER, ids=lambda r: r.name)
def test_flipping_a_flashinfer_base_fails_verify(record, device: str) -> None:  # type: ignore[no-untyped-def]
    flipped = record.model_copy(update={"lse": record.lse.model_copy(
        update={"base": "e" if record.lse.base == "2" else "2"})})
    result = verify_record(flipped, device=device)
    if result.status == "skipped":
        pytest.skip(result.reason)
    assert "lse.base" in [f.field for f in result.findings]


def test_dcp_collectives_on_nccl_at_world_size_one() -> None:
    from attn_contracts.testing.ranks import run_ranks
    from fixtures import dcp_workers

    errors = run_ranks(dcp_workers.nccl_world_of_one, 1, backend="nccl", timeout_s=300)[0].value
    assert max(errors.values()) < 1e-5, errors


def test_a_captured_dcp_step_survives_a_larger_eager_step() -> None:
    """Capture a step at T=2 on a workspace, run T=max eagerly (masks and sinks on), replay the
    graph on new inputs: the replay equals an eager call exactly (no buffer was reallocated)."""
    from attn_contracts.testing.ranks import run_ranks
    from fixtures import dcp_workers

    result = run_ranks(dcp_workers.nccl_graph_after_larger_step, 1, backend="nccl",
                       timeout_s=300)[0].value
    assert result["replay_vs_eager"] == {"ag_rs": 0.0, "a2a": 0.0, "ar": 0.0}, result
    assert all(result["same_address"].values()), result


# --- row masks, sinks, the a2a pack and the two-way tiles (issue 14) ---------------------------------
def _garbage_where_masked(o: torch.Tensor, lse: torch.Tensor, keep: torch.Tensor) -> None:
    gone = ~keep  # [N, T]
    o[gone] = float("nan")
    lse[gone] = 1e4  # would win the merge if it were read


@pytest.mark.parametrize("base", ["e", "2"])
@pytest.mark.parametrize("form", ["bool", "uint8_strided", "lens"])
@pytest.mark.parametrize(("n", "t", "h", "d"), [(2, 64, 32, 128), (4, 1, 128, 512), (8, 33, 16, 80),
                                                (8, 1, 16, 512), (4, 32, 128, 512)])
def test_row_mask_on_cuda(n: int, t: int, h: int, d: int, form: str, base: str,
                          device: str) -> None:
    from attn_contracts.combine.reference import rows_from_lens

    o, lse = partials(n, t, h, d, torch.bfloat16, seed=n * t, specials=False, device=device)
    g = torch.Generator(device=device).manual_seed(t)
    if form == "lens":
        q = 1 if t in (1, 33) else 2
        lens = (torch.rand(n, t // q, device=device, generator=g) > 0.3).int() * 5
        keep, kw = rows_from_lens(lens, q), {"lens": lens}
    else:
        keep = torch.rand(n, t, device=device, generator=g) > 0.3
        keep[:, -1] = False
        mask = keep.to(torch.uint8).t().contiguous().t() if form == "uint8_strided" else keep
        kw = {"row_mask": mask}
    _garbage_where_masked(o, lse, keep)
    out = poisoned((t, h, d), torch.bfloat16, device)
    lse_out = poisoned((t, h), torch.float32, device)
    merge(o, lse, base=base, out=out, lse_out=lse_out, **kw)
    ref_o, ref_lse = merge_reference(o.cpu(), lse.cpu(), base=base, row_mask=keep.cpu())
    assert_close_to(out.cpu(), ref_o, torch.bfloat16)
    assert_lse_close(lse_out.cpu(), ref_lse)
    r = rescale(o[n - 1], lse, n - 1, base=base, **kw)
    assert_close_to(r.cpu(), rescale_reference(o[n - 1].cpu(), lse.cpu(), n - 1, base=base,
                                               row_mask=keep.cpu())[0], torch.bfloat16)


@pytest.mark.parametrize("base", ["e", "2"])
@pytest.mark.parametrize(("n", "t", "h", "d"), [(2, 64, 32, 128), (4, 1, 128, 512), (3, 17, 8, 96)])
def test_sink_on_cuda_and_all_empty_rows_give_the_sink(n: int, t: int, h: int, d: int, base: str,
                                                        device: str) -> None:
    o, lse = partials(n, t, h, d, torch.bfloat16, seed=n + d, specials=False, device=device)
    sink = torch.randn(h, device=device) * 2
    keep = torch.ones(n, t, dtype=torch.bool, device=device)
    keep[:, 0] = False  # row 0 empty everywhere: o = 0, LSE = s'
    _garbage_where_masked(o, lse, keep)
    out, lse_out = merge(o, lse, base=base, return_lse=True, row_mask=keep, sink=sink)
    ref_o, ref_lse = merge_reference(o.cpu(), lse.cpu(), base=base, row_mask=keep.cpu(),
                                     sink=sink.cpu())
    assert_close_to(out.cpu(), ref_o, torch.bfloat16)
    assert_lse_close(lse_out.cpu(), ref_lse)
    assert (out[0] == 0).all()
    ln_b = 1.0 if base == "e" else math.log(2.0)
    torch.testing.assert_close(lse_out[0], sink / ln_b, atol=1e-5, rtol=1e-6)
    total = torch.zeros(t, h, d, dtype=torch.float64)
    for r in range(n):
        total += rescale(o[r], lse, r, base=base, out_dtype=torch.float32, row_mask=keep,
                         sink=sink).cpu().double()
    torch.testing.assert_close(total, ref_o, atol=2e-2, rtol=2e-2)


@pytest.mark.parametrize("layout", ["token_head", "head_token"])
@pytest.mark.parametrize(("world", "t", "h", "d"), [(4, 1, 128, 512), (4, 256, 128, 512),
                                                    (2, 37, 32, 128), (3, 5, 6, 80)])
def test_pack_a2a_on_cuda(world: int, t: int, h: int, d: int, layout: str, device: str) -> None:
    from attn_contracts.combine import pack_a2a
    from attn_contracts.combine.reference import pack_a2a_reference

    hc = h // world
    o = torch.randn(t, 2 * h, d, device=device, dtype=torch.bfloat16)[:, ::2]  # head-strided
    lse = torch.randn(t, h, device=device) * 4
    if layout == "head_token":
        lse = lse.t().contiguous().t()
    keep = torch.rand(t, device=device) > 0.25
    o_bytes = -(-t * hc * d * 2 // 16) * 16
    piece = o_bytes + -(-t * hc * 4 // 16) * 16
    for mask in (None, keep):
        send = torch.full((world, piece), 0xFF, dtype=torch.uint8, device=device)
        pack_a2a(o, lse, send, o_bytes=o_bytes, row_mask=mask)
        ref_o, ref_lse = pack_a2a_reference(o.cpu(), lse.cpu(), world,
                                            row_mask=None if mask is None else mask.cpu())
        got_o = send[:, : t * hc * d * 2].view(torch.bfloat16).view(world, t, hc, d)
        got_lse = send[:, o_bytes : o_bytes + t * hc * 4].view(torch.float32).view(world, t, hc)
        assert torch.equal(got_o.cpu(), ref_o) and torch.equal(got_lse.cpu(), ref_lse)


def test_pack_a2a_in_a_cuda_graph_with_pdl(device: str) -> None:
    """One token: the pack's tiles use PDL. A merge that reads the packed message right after
    it (as the receiving side of a world of one would) must see the new values on replay."""
    from attn_contracts.combine import pack_a2a
    from attn_contracts.combine.tiles import default_config

    assert default_config(4, 1, 128, 512, "pack").pdl
    t, h, d, world = 1, 128, 512, 4
    hc = h // world
    o = torch.randn(t, h, d, device=device, dtype=torch.bfloat16)
    lse = torch.randn(t, h, device=device)
    o_bytes = t * hc * d * 2
    send = torch.empty(world, o_bytes + 16 * -(-t * hc * 4 // 16), dtype=torch.uint8,
                       device=device)
    got_o = send[:, :o_bytes].view(torch.bfloat16).view(world, t, hc, d)
    got_lse = send[:, o_bytes : o_bytes + t * hc * 4].view(torch.float32).view(world, t, hc)
    out = torch.empty(t, hc, d, dtype=torch.bfloat16, device=device)

    def step() -> None:
        pack_a2a(o, lse, send, o_bytes=o_bytes)
        merge(got_o, got_lse, base="2", out=out)

    step()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        step()
    o.copy_(torch.randn_like(o))
    lse.copy_(torch.randn_like(lse))
    g.replay()
    torch.cuda.synchronize()
    from attn_contracts.combine.reference import pack_a2a_reference

    ref_o, ref_lse = pack_a2a_reference(o.cpu(), lse.cpu(), world)
    assert_close_to(out.cpu(), merge_reference(ref_o, ref_lse, base="2")[0], torch.bfloat16)


@pytest.mark.parametrize(("n", "t", "h", "d"), [(2, 4096, 32, 128), (2, 1024, 8, 256),
                                                (2, 2048, 128, 128), (2, 1, 128, 512),
                                                (1, 300, 8, 128)])
def test_two_way_tiles_on_cuda(n: int, t: int, h: int, d: int, device: str) -> None:
    """The N <= 2 tiles (1024 elements, four warps) and the sweep's other candidates compute the
    merge exactly as the reference does, with an [H, T] LSE too."""
    from attn_contracts.combine import KernelConfig
    from attn_contracts.combine.tiles import default_config

    cfg = default_config(n, t, h, d)
    if t > 1:
        assert cfg.block_h * cfg.block_d == 1024 and cfg.num_warps == 4, cfg
    o, lse = partials(n, t, h, d, torch.bfloat16, seed=t + h, device=device)
    lse_ht = lse.transpose(1, 2).contiguous().transpose(1, 2)
    ref_o, ref_lse = merge_reference(o.cpu(), lse.cpu(), base="2")
    for tiles in (cfg, KernelConfig(16, 128, 4), KernelConfig(4, 256, 2), KernelConfig(8, 128, 1)):
        for x in (lse, lse_ht):
            out = poisoned((t, h, d), torch.bfloat16, device)
            lse_out = poisoned((t, h), torch.float32, device)
            merge(o, x, base="2", out=out, lse_out=lse_out, config=tiles)
            assert_close_to(out.cpu(), ref_o, torch.bfloat16)
            assert_lse_close(lse_out.cpu(), ref_lse)


def test_mask_and_sink_in_a_cuda_graph(device: str) -> None:
    """Captured with a mask and a sink; new values in all four buffers before the replay."""
    n, t, h, d = 4, 1, 128, 512
    o, lse = partials(n, t, h, d, torch.bfloat16, seed=2, specials=False, device=device)
    keep = torch.ones(n, t, dtype=torch.bool, device=device)
    sink = torch.zeros(h, device=device)
    out = torch.empty(t, h, d, dtype=torch.bfloat16, device=device)
    lse_out = torch.empty(t, h, device=device)
    merge(o, lse, base="e", out=out, lse_out=lse_out, row_mask=keep, sink=sink)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        merge(o, lse, base="e", out=out, lse_out=lse_out, row_mask=keep, sink=sink)
    o2, lse2 = partials(n, t, h, d, torch.bfloat16, seed=3, specials=False, device=device)
    o.copy_(o2)
    lse.copy_(lse2)
    keep[1] = False
    sink.copy_(torch.randn(h, device=device))
    g.replay()
    torch.cuda.synchronize()
    ref_o, ref_lse = merge_reference(o2.cpu(), lse2.cpu(), base="e", row_mask=keep.cpu(),
                                     sink=sink.cpu())
    assert_close_to(out.cpu(), ref_o, torch.bfloat16)
    assert_lse_close(lse_out.cpu(), ref_lse)


# --- consumers: FlashInfer's merges verified empirically ------------------------------------------
def _flashinfer_consumer(name: str, states: str, base: str = "2") -> ConsumerRecord:
    """What FlashInfer's cascade.cuh says (base 2, [T, H], one block of heads × lanes ≤ 1024
    threads); the empty-row facts are what the probes check, per version, so they are not
    asserted here."""
    return ConsumerRecord.model_validate({
        "name": name, "library": "flashinfer", "source": "include/flashinfer/attention/cascade.cuh",
        "evidence": "read_from_code", "base": {"kind": "fixed", "base": base},
        "lse": {"layouts": ["token_head"], "states": states, "dtypes": ["float32"]},
        "empty": {"reads_as_empty": ["-inf"], "all_empty": "undefined",
                  "zero_weight_nan_safe": False},
        "output": {"returns_lse": True, "lse_base": "2"},
        "limits": {"head_dims": [64, 128, 256, 512],
                   "threads": {"max_threads": 1024, "vector_bytes": 16, "max_lanes_per_head": 32}}})


FI_MERGES = [("merge_state", "separate"), ("merge_state_in_place", "separate"),
             ("merge_states", "second")]


@needs_flashinfer
@pytest.mark.parametrize(("fn", "states"), FI_MERGES, ids=[f for f, _ in FI_MERGES])
def test_flashinfer_merges_verify_as_base_2_with_their_thread_limit(fn: str, states: str,
                                                                     device: str) -> None:
    rec = _flashinfer_consumer(f"flashinfer.{fn}", states)
    result = verify_consumer(rec, f"attn_contracts.backends.flashinfer_merge:{fn}", device=device)
    obs = result.observed
    assert obs is not None, result.reason
    assert (obs.bases, obs.layouts, obs.lse_base) == ({"": "2"}, ("token_head",), "2")
    assert "-inf" in (obs.reads_as_empty or ())
    # fp16 at head_dim 128: 16 lanes per head, so 64 heads fill the 1024-thread block
    assert obs.limit is not None and (obs.limit.max_ok, obs.limit.min_failed) == (64, 65)
    assert [f for f in result.findings if f.field.startswith(("base", "lse", "limits"))] == []


@needs_flashinfer
@pytest.mark.parametrize(("fn", "states"), FI_MERGES, ids=[f for f, _ in FI_MERGES])
def test_a_base_e_record_of_a_flashinfer_merge_is_caught(fn: str, states: str,
                                                         device: str) -> None:
    rec = _flashinfer_consumer(f"flashinfer.{fn}", states, base="e")
    result = verify_consumer(rec, f"attn_contracts.backends.flashinfer_merge:{fn}",
                             device=device, probe_limits=False)
    assert [(f.field, f.found) for f in result.findings if f.field == "base"] == [("base", "2")]


def test_the_projects_merge_plans_verify_clean_on_cuda(device: str) -> None:
    for rec in plan_consumer_records():
        result = verify_consumer(rec, rec.adapter, device=device, probe_limits=False)
        assert result.status == "match", [f.render() for f in result.findings]


# --- the direct all-to-all's kernels on one GPU (issue 15: multi-GPU runs need a lent kind) -------
def _direct_world_of_one(t: int, h: int, d: int, device: str) -> object:
    from attn_contracts.combine.direct import DirectBuffers
    from attn_contracts.combine.direct import DirectLayout
    from attn_contracts.combine.workspace import a2a_piece_bytes

    o_bytes, piece = a2a_piece_bytes(t, h, d, 2)
    return DirectBuffers.local(DirectLayout(1, piece, o_bytes), torch.device(device))


def _direct_step(bufs: object, o: torch.Tensor, lse: torch.Tensor, out: torch.Tensor,
                 lse_out: torch.Tensor, mask: torch.Tensor | None,
                 sink: torch.Tensor | None) -> None:
    from attn_contracts.combine.direct import direct_merge
    from attn_contracts.combine.direct import direct_send

    direct_send(bufs, o, lse, mask, block_h=8, block_d=128, num_warps=4)  # type: ignore[arg-type]
    direct_merge(bufs, out, lse_out, sink, in_scale=1.0, out_scale=1.0,  # type: ignore[arg-type]
                 sink_scale=1.0 / math.log(2.0), block_h=2, block_d=128, num_warps=1)


def _direct_reference(o: torch.Tensor, lse: torch.Tensor, mask: torch.Tensor | None,
                      sink: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    keep = torch.ones(o.shape[0], dtype=torch.bool) if mask is None else mask.cpu()
    lse_m = torch.where(keep[:, None], lse.cpu(), -math.inf)
    states, lses = o.cpu()[None], lse_m[None]
    if sink is not None:  # one more shard with output 0 (the sink, converted to base 2)
        states = torch.cat([states, torch.zeros_like(states)])
        lses = torch.cat([lses, (sink.cpu() / math.log(2.0)).expand_as(lse_m)[None]])
    return merge_reference(states, lses, base="2")


def test_direct_kernels_step_after_step_and_in_a_graph(device: str) -> None:
    """A world of one on a plain buffer: the same kernels and epoch protocol as between peers.
    Five eager steps (both halves, acknowledgements), then a captured step replayed three times
    on new inputs: every result equals the reference, and the epoch advanced each time."""
    t, h, d = 5, 16, 128
    bufs = _direct_world_of_one(t, h, d, device)
    out = torch.empty(t, h, d, dtype=torch.bfloat16, device=device)
    lse_out = torch.empty(t, h, device=device)
    o, lse = partials(1, t, h, d, torch.bfloat16, seed=3, specials=False, device=device)
    o, lse = o[0].clone(), lse[0].clone()
    mask = torch.tensor([True, False, True, True, False], device=device)
    sink = torch.randn(h, device=device)
    for step in range(5):
        o.copy_(torch.randn_like(o))
        lse.copy_(torch.randn_like(lse) * 3)
        use_mask, use_sink = (mask, sink) if step % 2 else (None, None)
        _direct_step(bufs, o, lse, out, lse_out, use_mask, use_sink)
        ref_o, ref_lse = _direct_reference(o, lse, use_mask, use_sink)
        assert_close_to(out.cpu(), ref_o, torch.bfloat16)
        assert_lse_close(lse_out.cpu(), ref_lse)
    assert bufs.error() is None and int(bufs.state[0]) == 5  # type: ignore[attr-defined]
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        _direct_step(bufs, o, lse, out, lse_out, mask, sink)
    torch.cuda.synchronize()
    start = int(bufs.state[0])  # type: ignore[attr-defined]
    for _ in range(3):
        o.copy_(torch.randn_like(o))
        lse.copy_(torch.randn_like(lse) * 3)
        g.replay()
        torch.cuda.synchronize()
        ref_o, ref_lse = _direct_reference(o, lse, mask, sink)
        assert_close_to(out.cpu(), ref_o, torch.bfloat16)
        assert_lse_close(lse_out.cpu(), ref_lse)
    assert int(bufs.state[0]) == start + 3 and bufs.error() is None  # type: ignore[attr-defined]


def test_direct_merge_gives_up_on_a_peer_that_never_signals(device: str) -> None:
    """No send this step: the merge's wait for the flag ends after its bounded spin, records the
    error and writes NaN; nothing hangs."""
    from attn_contracts.combine.direct import direct_merge

    t, h, d = 3, 8, 128
    bufs = _direct_world_of_one(t, h, d, device)
    out = torch.zeros(t, h, d, dtype=torch.bfloat16, device=device)
    direct_merge(bufs, out, None, None, in_scale=1.0, out_scale=1.0,  # type: ignore[arg-type]
                 sink_scale=1.0, block_h=8, block_d=128, num_warps=1)
    torch.cuda.synchronize()
    assert "did not arrive" in (bufs.error() or "")  # type: ignore[attr-defined]
    assert out.isnan().all()


def test_a2a_best_on_one_rank_falls_back_and_says_why() -> None:
    from attn_contracts.testing.ranks import run_ranks
    from fixtures import dcp_workers

    why = run_ranks(dcp_workers.nccl_a2a_best_world_of_one, 1, backend="nccl",
                    timeout_s=300)[0].value
    assert why["why"].startswith("a2a_best: a2a over NCCL") and "single rank" in why["why"]
    assert why["error"] == 0.0


# --- issue 29: both empty-row facts on the GPU, FlashInfer's fused DCP combine as fi_a2a ---------
_ROW_LSE = ("-inf", "+inf", "nan", "raised")
_ROW_OUT = ("zero", "nan", "undefined", "raised")


@needs_flashinfer
@pytest.mark.parametrize("record", FLASHINFER, ids=lambda r: r.name)
def test_flashinfer_records_report_both_empty_row_facts(record, device: str) -> None:  # type: ignore[no-untyped-def]
    """A request with seq_lens == 0, its output buffer filled with NaN and then a sentinel: the
    probe says what the LSE and the output rows held (or that the kernel refused the input)."""
    result = verify_record(record, device=device)
    if result.status == "skipped":
        pytest.skip(result.reason)
    assert result.status == "match", [f.render() for f in result.findings]
    e = result.observed.empty
    assert e is not None, "the empty-row probe did not run"
    assert e.lse in _ROW_LSE or e.lse.startswith("finite"), e
    assert e.out in _ROW_OUT or e.out.startswith("finite"), e


def _fused_available() -> str | None:
    from attn_contracts.combine.fused import fused_unavailable_here
    from attn_contracts.setting import CombineSetting

    return fused_unavailable_here(CombineSetting(mode="fi_a2a", world_size=1, num_heads=8,
                                                 head_dim=128))


def _check_fi_a2a(world: int) -> None:
    from attn_contracts.testing.ranks import run_ranks
    from fixtures import dcp_workers

    results = run_ranks(dcp_workers.nccl_fi_a2a, world, backend="nccl", timeout_s=540)
    nccl = tuple(torch.cuda.nccl.version())
    for r in results:
        got = r.value
        why = got["why_not"]
        if why is not None and "could not be set up" in why and nccl < (2, 29):
            # the refusal is what must happen there: AC026, with FlashInfer's own reason
            assert "AC026" in why and "fi_a2a" in why, why
            pytest.skip(f"FlashInfer's fused op needs NCCL >= 2.29 (its device API); this torch "
                        f"has NCCL {'.'.join(map(str, nccl))}, and fi_a2a was refused as AC026")
        assert why is None, why
        assert got["base e"] < 2e-2 and got["base 2"] < 2e-2, got  # bf16 against fp64
        assert got["unmasked e"] == ["AC025"] and got["unmasked 2"] == ["AC025"], got


@needs_flashinfer
def test_fi_a2a_at_world_size_one() -> None:
    """FlashInfer's fused combine through the plan on one GPU (NCCL, world size 1): the masked
    NaN rows never reach its merge, both bases, and a call without the mask is refused."""
    why = _fused_available()
    if why is not None and "not installed" in why:
        pytest.skip(why)
    _check_fi_a2a(1)


@needs_flashinfer
@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs 2 or more GPUs")
def test_fi_a2a_across_gpus() -> None:
    _check_fi_a2a(min(torch.cuda.device_count(), 4))
