"""Triton merge/rescale (under TRITON_INTERPRET=1 on the CPU) against the fp64 reference."""

from __future__ import annotations

import math

import pytest
import torch

from attn_contracts.combine import merge
from attn_contracts.combine import merge_reference
from attn_contracts.combine import rescale
from attn_contracts.combine import rescale_reference
from attn_contracts.combine.ops import uses_triton
from fixtures.tensors import assert_close_to
from fixtures.tensors import assert_lse_close
from fixtures.tensors import assert_merge_matches_reference
from fixtures.tensors import partials
from fixtures.tensors import poisoned

DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def test_kernels_run_through_triton_here() -> None:
    assert uses_triton(torch.empty(1)), "tests must exercise the Triton kernels (TRITON_INTERPRET)"


@pytest.mark.parametrize("base", ["e", "2"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("d", [64, 80, 128, 576])
@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_merge_matches_reference(n: int, d: int, dtype: torch.dtype, base: str,
                                 device: str) -> None:
    t, h = 3, 5
    o, lse = partials(n, t, h, d, dtype, seed=n * 1000 + d, device=device)
    out, lse_out = assert_merge_matches_reference(o, lse, base=base, device=device)
    assert not out.isnan().any()
    assert (out[t - 1, h - 1] == 0).all() and lse_out[t - 1, h - 1] == -math.inf


@pytest.mark.parametrize("base", ["e", "2"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("n", [1, 3, 8])
def test_rescale_matches_reference_and_sums_to_merge(n: int, dtype: torch.dtype,
                                                     base: str, device: str) -> None:
    t, h, d = 4, 3, 96
    o, lse = partials(n, t, h, d, dtype, seed=7 + n)
    total = torch.zeros(t, h, d, dtype=torch.float64)
    for r in range(n):
        out = poisoned((t, h, d), dtype, device)
        got, got_lse = rescale(o[r].to(device), lse.to(device), r, base=base, out=out,
                               return_lse=True)
        ref, ref_lse = rescale_reference(o[r], lse, r, base=base)
        assert got is out
        assert_close_to(got.cpu(), ref, dtype)
        assert_lse_close(got_lse.cpu(), ref_lse)
        total += got.cpu().double()
    atol, rtol = {torch.float32: (1e-5, 1e-5), torch.float16: (8e-3, 4e-3),
                  torch.bfloat16: (6e-2, 3e-2)}[dtype]
    torch.testing.assert_close(total, merge_reference(o, lse, base=base)[0], atol=atol,
                               rtol=rtol)


@pytest.mark.parametrize("base", ["e", "2"])
@pytest.mark.parametrize("magnitude", [10.0, 100.0, 1e4])
def test_large_lse_magnitudes(magnitude: float, base: str) -> None:
    o, lse = partials(4, 3, 4, 64, torch.float32, seed=3, lse_scale=3.0,
                      lse_offset=-magnitude if magnitude > 100 else magnitude)
    out, lse_out = merge(o, lse, base=base, return_lse=True)
    ref_o, ref_lse = merge_reference(o, lse, base=base)
    torch.testing.assert_close(out.double(), ref_o, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(lse_out.double(), ref_lse, atol=1e-5, rtol=2e-6)


def test_non_contiguous_inputs_and_outputs() -> None:
    n, t, h, d = 3, 4, 5, 80
    big_o, big_lse = partials(n, t, 2 * h, d + 16, torch.bfloat16, seed=11, specials=False)
    o = big_o[:, :, ::2, :d]  # stride over heads, padded head dim
    lse_ht = big_lse.transpose(1, 2).contiguous().transpose(1, 2)[:, :, ::2]  # [N, T, H] of a [N, H, T]
    assert not o.is_contiguous() and not lse_ht.is_contiguous()
    frame = poisoned((t, h + 2, d + 8), torch.bfloat16)
    out = frame[:, 1 : h + 1, 4 : d + 4]  # an output window inside a larger buffer
    merge(o, lse_ht, base="e", out=out)
    assert_close_to(out, merge_reference(o, lse_ht, base="e")[0], torch.bfloat16)
    assert frame[:, 0].isnan().all() and frame[:, h + 1].isnan().all()  # nothing outside written
    assert frame[:, :, :4].isnan().all() and frame[:, :, d + 4 :].isnan().all()


def test_lse_with_q_len_axis_is_read_through_strides() -> None:
    n, b, q, h, d = 2, 3, 2, 4, 64
    o, lse3 = partials(n, b * q, h, d, torch.float32, seed=5, specials=False)
    lse_bhq = lse3.view(n, b, q, h).permute(0, 1, 3, 2).contiguous()  # FlashAttention [B, H, q]
    lse4 = lse_bhq.permute(0, 1, 3, 2)  # [N, B, Q, H] view, not contiguous
    out = merge(o, lse4, base="e")
    torch.testing.assert_close(out.double(), merge_reference(o, lse3, base="e")[0], atol=1e-5,
                               rtol=1e-5)


@pytest.mark.parametrize(("base", "out_base"), [("2", "e"), ("e", "2")])
def test_merged_lse_in_requested_base(base: str, out_base: str) -> None:
    o, lse = partials(3, 3, 2, 64, torch.float32, seed=2)
    _, got = merge(o, lse, base=base, return_lse=True, lse_out_base=out_base)
    _, ref = merge_reference(o, lse, base=base, lse_out_base=out_base)
    assert_lse_close(got, ref)


def test_all_empty_rows_give_zero_and_minus_inf() -> None:
    o, lse = partials(3, 2, 2, 64, torch.float16, seed=9, specials=False)
    lse[:] = torch.tensor([-math.inf, math.inf, math.nan]).view(3, 1, 1)
    out, lse_out = merge(o, lse, base="2", return_lse=True)
    assert (out == 0).all() and (lse_out == -math.inf).all()
    r = rescale(o[1], lse, 1, base="2")
    assert (r == 0).all()


def test_torch_path_matches_triton_path(monkeypatch: pytest.MonkeyPatch) -> None:
    o, lse = partials(3, 3, 4, 80, torch.float32, seed=4)
    via_triton = merge(o, lse, base="e", return_lse=True)
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    assert not uses_triton(o)
    via_torch = merge(o, lse, base="e", return_lse=True)
    for a, b in zip(via_triton, via_torch, strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6)


def test_zero_tokens_is_a_no_op() -> None:
    o = torch.randn(2, 0, 4, 64)
    out = merge(o, torch.randn(2, 0, 4), base="e")
    assert out.shape == (0, 4, 64)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: merge(torch.randn(2, 3, 4), torch.randn(2, 3, 4), base="e"), "4 dims"),
        (lambda: merge(torch.randn(2, 3, 4, 8), torch.randn(3, 3, 4), base="e"), "does not match"),
        (lambda: merge(torch.randn(2, 3, 4, 8), torch.randn(2, 3, 4), base="10"), "allowed: 'e', '2'"),
        (lambda: merge(torch.randn(2, 3, 4, 8).int(), torch.randn(2, 3, 4), base="e"), "dtype"),
        (lambda: merge(torch.randn(2, 3, 4, 8), torch.randn(2, 3, 4), base="e",
                       out=torch.empty(3, 4, 9)), "out shape"),
        (lambda: merge(torch.randn(2, 3, 4, 8), torch.randn(2, 3, 4), base="e",
                       lse_out=torch.empty(3, 4, dtype=torch.float16)), "lse_out"),
        (lambda: merge(torch.randn(0, 3, 4, 8), torch.randn(0, 3, 4), base="e"), "N >= 1"),
        (lambda: rescale(torch.randn(3, 4, 8), torch.randn(2, 3, 4), 2, base="e"), "rank 2"),
        (lambda: rescale(torch.randn(3, 4, 8), torch.randn(2, 3, 5), 0, base="e"), "does not match"),
    ],
)
def test_launchers_reject_bad_inputs(call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=message):
        call()


def test_opcheck() -> None:
    o, lse = partials(3, 3, 4, 64, torch.float32, seed=1, specials=False)
    out = torch.empty(3, 4, 64)
    lse_out = torch.empty(3, 4)
    torch.library.opcheck(torch.ops.attn_contracts.merge_.default,
                          (o, lse, out, lse_out, "e", "e", 4, 64, 4))
    torch.library.opcheck(torch.ops.attn_contracts.rescale_.default,
                          (o[0], lse, 0, out, None, "2", "e", 4, 64, 4))


def test_torch_compile_fullgraph_caller() -> None:
    o, lse = partials(2, 3, 4, 64, torch.float32, seed=6, specials=False)

    def layer(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        merged, merged_lse = merge(x * 1.0, y, base="2", return_lse=True)
        return merged * 2.0 + merged_lse.unsqueeze(-1)

    compiled = torch.compile(layer, fullgraph=True, backend="aot_eager")
    torch.testing.assert_close(compiled(o, lse), layer(o, lse))


@pytest.mark.parametrize("triton_path", [True, False])
@pytest.mark.parametrize("chunks", [1, 2, 3])
def test_rescale_into_head_chunks_for_reduce_scatter(chunks: int, triton_path: bool,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    if not triton_path:
        monkeypatch.setenv("TRITON_INTERPRET", "0")
    t, h, d = 3, 6, 64
    o, lse = partials(4, t, h, d, torch.float32, seed=13)
    out = poisoned((chunks, t, h // chunks, d), torch.float32)
    lse_out = poisoned((t, h), torch.float32)
    rescale(o[2], lse, 2, base="e", out=out, lse_out=lse_out)
    ref, ref_lse = rescale_reference(o[2], lse, 2, base="e")
    torch.testing.assert_close(out.double(),
                               ref.view(t, chunks, h // chunks, d).transpose(0, 1), atol=1e-5,
                               rtol=1e-5)
    assert_lse_close(lse_out, ref_lse)
    with pytest.raises(ValueError, match="chunked out"):
        rescale(o[2], lse, 2, base="e", out=torch.empty(4, t, 2, d))


def test_rows_beyond_one_grid_axis_spill_to_the_next(monkeypatch: pytest.MonkeyPatch) -> None:
    """Grid axes 1 and 2 hold at most 65535 rows each; rows past that go to axis 2, and the last
    slice's spare programs must write nothing. A limit of 3 exercises it with T = 7."""
    from attn_contracts.combine import launch

    monkeypatch.setattr(launch, "MAX_GRID_YZ", 3)
    assert launch.launch_grid(7, 6, 64, 2, 64) == (3, 3, 3)
    o, lse = partials(3, 7, 6, 64, torch.float32, seed=21)
    out, lse_out = poisoned((7, 6, 64), torch.float32), poisoned((7, 6), torch.float32)
    merge(o, lse, base="2", out=out, lse_out=lse_out)
    ref_o, ref_lse = merge_reference(o, lse, base="2")
    torch.testing.assert_close(out.double(), ref_o, atol=1e-5, rtol=1e-5)
    assert_lse_close(lse_out, ref_lse)
    r = rescale(o[1], lse, 1, base="2")
    torch.testing.assert_close(r.double(), rescale_reference(o[1], lse, 1, base="2")[0], atol=1e-5,
                               rtol=1e-5)


@pytest.mark.parametrize(("shape", "kernel", "expected"), [
    # one-token decode: fewer 256-element merge tiles than SMs → 128-element tiles, PDL mode 2
    # (the next launch triggered before the wait)
    ((8, 1, 16, 512), "merge", (2, 64, 1, 2)),
    ((4, 1, 128, 512), "merge", (2, 128, 1, 2)),
    # rescale at one token: 1024 elements over four warps
    ((4, 1, 128, 512), "rescale", (8, 128, 4, 2)),
    # bandwidth-bound: one-warp tiles, many waves, no PDL
    ((8, 2048, 32, 128), "merge", (2, 128, 1, 0)),
    ((8, 256, 128, 512), "rescale", (2, 512, 1, 0)),
    # N = 3..4 on a grid of a few waves: 1024-element tiles on four warps, few enough for PDL
    ((3, 100, 40, 80), "merge", (8, 128, 4, 2)),
    ((4, 512, 32, 128), "merge", (8, 128, 4, 1)),
    ((4, 32, 128, 512), "merge", (8, 128, 4, 1)),
])
def test_default_tiles_follow_the_h200_sweep(shape: tuple[int, int, int, int], kernel: str,
                                             expected: tuple[int, int, int, int]) -> None:
    from attn_contracts.combine.tiles import default_config

    cfg = default_config(*shape, kernel)
    assert (cfg.block_h, cfg.block_d, cfg.num_warps, cfg.pdl) == expected


@pytest.mark.parametrize(("shape", "kernel", "maxnreg"), [
    # merges of 3-4 shards on four-warp tiles over more than one wave: capped (ptxas then issues
    # every partial's load before the weights)
    ((4, 32, 128, 512), "merge", 64),
    ((4, 512, 32, 128), "merge", 64),
    ((3, 32, 128, 512), "merge", 64),
    # one wave (PDL mode 2; measured slower capped), one-warp tiles, two shards, rescale: no cap
    ((3, 100, 40, 80), "merge", 0),
    ((8, 256, 128, 512), "merge", 0),
    ((2, 4096, 8, 128), "merge", 0),
    ((4, 32, 128, 512), "rescale", 0),
])
def test_register_cap_only_where_it_was_measured_faster(shape: tuple[int, int, int, int],
                                                         kernel: str, maxnreg: int) -> None:
    from attn_contracts.combine.tiles import default_config

    assert default_config(*shape, kernel).maxnreg == maxnreg


@pytest.mark.parametrize(("shape", "expected"), [
    # two-way merges: 1024 elements over four warps (the H200 sweep's winner over two), so an
    # SM keeps about as many bytes in flight as an 8-way merge's one-warp tiles do
    ((2, 4096, 32, 128), (8, 128, 4, 0)),
    ((2, 16384, 32, 128), (8, 128, 4, 0)),
    ((2, 8192, 128, 128), (8, 128, 4, 0)),
    ((2, 4096, 8, 128), (8, 128, 4, 1)),  # 4096 programs: at most 32 per SM, PDL mode 1
    ((2, 1024, 8, 256), (8, 128, 4, 1)),
    ((1, 300, 8, 128), (8, 128, 4, 2)),  # 300 programs: one wave, PDL mode 2
    # few heads: the tile cannot grow past the heads, one warp keeps 8-16 elements per thread
    ((2, 300, 2, 128), (2, 128, 1, 2)),
    # one token: latency-bound, shrunk to 256 elements on one warp, PDL mode 2
    ((2, 1, 128, 512), (4, 64, 1, 2)),
    # N >= 3 keeps the measured one-warp 256-element tiles on many-wave grids
    ((3, 4096, 32, 128), (2, 128, 1, 0)),
])
def test_two_way_merge_tiles(shape: tuple[int, int, int, int],
                             expected: tuple[int, int, int, int]) -> None:
    from attn_contracts.combine.tiles import default_config

    cfg = default_config(*shape, "merge")
    assert (cfg.block_h, cfg.block_d, cfg.num_warps, cfg.pdl) == expected


def test_pack_tiles_follow_the_h200_sweep() -> None:
    """1024-element, 128-wide tiles over four warps; eight at one token (latency-bound)."""
    from attn_contracts.combine.tiles import default_config

    got = {shape: default_config(*shape, "pack") for shape in [
        (4, 1, 128, 512), (4, 256, 128, 512), (8, 2048, 32, 128), (2, 3, 6, 80)]}
    assert [(c.block_h, c.block_d, c.num_warps, c.pdl) for c in got.values()] == [
        (8, 128, 8, 2), (8, 128, 4, 0), (8, 128, 4, 0), (8, 128, 8, 2)]
