"""Empty shards by row mask and per-head sinks: the Triton kernels (interpreted on the CPU) against
the fp64 reference, and the reference against the formulas it documents."""

from __future__ import annotations

import math

import pytest
import torch

from attn_contracts.combine import merge
from attn_contracts.combine import merge_reference
from attn_contracts.combine import rescale
from attn_contracts.combine import rescale_reference
from attn_contracts.combine.reference import rows_from_lens
from attn_contracts.combine.reference import sink_in_base
from fixtures.tensors import assert_close_to
from fixtures.tensors import assert_lse_close
from fixtures.tensors import partials
from fixtures.tensors import poisoned

LN = {"e": 1.0, "2": math.log(2.0)}


def _garbage_rows(o: torch.Tensor, lse: torch.Tensor, keep: torch.Tensor) -> None:
    """What a kernel may leave in rows it never ran: NaN and ±inf in O, and LSEs that would win
    the merge if they were read (large finite, +inf, NaN)."""
    gone = ~keep.to(torch.bool)  # [N, T]
    junk_o = torch.tensor([math.nan, math.inf, -math.inf, 1e4], dtype=o.dtype)
    junk_lse = torch.tensor([1e4, math.inf, math.nan, 50.0])
    idx = gone.nonzero()
    for i, (n, t) in enumerate(idx.tolist()):
        o[n, t] = junk_o[i % 4]
        lse[n, t] = junk_lse[i % 4]


def _mask(n: int, t: int, seed: int, *, strided: bool) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    keep = torch.rand(n, t, generator=g) > 0.35
    keep[:, t - 1] = False  # a row empty on every shard
    keep[0, 0] = True
    if strided:  # the engine's [T, N] buffer read transposed: a [N, T] view with strides (1, N)
        keep = keep.t().contiguous().t()
        assert not keep.is_contiguous()
    return keep


@pytest.mark.parametrize("mask_dtype", [torch.bool, torch.uint8], ids=str)
@pytest.mark.parametrize("strided", [False, True])
@pytest.mark.parametrize("base", ["e", "2"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("n", [3, 8])  # the merge's select (N <= 4) and its added −inf (N > 4)
def test_masked_rows_get_weight_zero_whatever_they_hold(
        n: int, dtype: torch.dtype, base: str, strided: bool, mask_dtype: torch.dtype,
        device: str) -> None:
    t, h, d = 5, 3, 40
    o, lse = partials(n, t, h, d, dtype, seed=17, specials=False)
    keep = _mask(n, t, seed=3, strided=strided)
    clean_o, clean_lse = o.clone(), lse.masked_fill(~keep.unsqueeze(-1), -math.inf)
    _garbage_rows(o, lse, keep)
    mask = keep.to(mask_dtype)
    if mask_dtype == torch.uint8:  # any nonzero byte keeps the shard: 1, 2, 128 and 255 here
        mask = mask * torch.tensor([1, 2, 128, 255], dtype=torch.uint8).repeat(n * t)[:n * t].view(
            n, t)
        if strided:
            mask = mask.t().contiguous().t()
    out = poisoned((t, h, d), dtype, device)
    lse_out = poisoned((t, h), torch.float32, device)
    merge(o.to(device), lse.to(device), base=base, out=out, lse_out=lse_out, row_mask=mask.to(device))
    ref_o, ref_lse = merge_reference(o, lse, base=base, row_mask=mask)
    assert_close_to(out.cpu(), ref_o, dtype)
    assert_lse_close(lse_out.cpu(), ref_lse)
    # the mask is the same as the shard being truly empty (to fp64 rounding: the two reference
    # calls sum in different orders at N = 8)
    plain_o, plain_lse = merge_reference(clean_o, clean_lse, base=base)
    torch.testing.assert_close(ref_o, plain_o, atol=1e-15, rtol=1e-14)
    torch.testing.assert_close(ref_lse, plain_lse, atol=1e-15, rtol=1e-14)
    assert not out.isnan().any() and (out[t - 1] == 0).all() and (lse_out[t - 1] == -math.inf).all()
    for r in range(n):
        got = rescale(o[r].to(device), lse.to(device), r, base=base, row_mask=mask.to(device))
        assert_close_to(got.cpu(), rescale_reference(o[r], lse, r, base=base, row_mask=mask)[0], dtype)
        assert not got.isnan().any()


def test_local_lengths_with_uniform_q_len_are_read_in_the_kernel(device: str) -> None:
    n, b, q, h, d = 3, 4, 2, 2, 32
    # a negative length is empty like 0; one past 2^31 (int64) keeps its rows
    lens = torch.tensor([[5, 0, 3, 0], [0, -4, 7, 1], [2, 0, -(2**31), 9]], dtype=torch.int32)
    keep = rows_from_lens(lens, q)  # [N, B·q]
    assert keep.shape == (n, b * q) and not keep[:, 2:4].any()  # request 1 has no keys anywhere
    o, lse = partials(n, b * q, h, d, torch.float32, seed=5, specials=False)
    _garbage_rows(o, lse, keep)
    out, lse_out = merge(o.to(device), lse.to(device), base="2", return_lse=True,
                         lens=lens.to(device))
    ref_o, ref_lse = merge_reference(o, lse, base="2", row_mask=keep)
    assert_close_to(out.cpu(), ref_o, torch.float32)
    assert_lse_close(lse_out.cpu(), ref_lse)
    big = lens.long().masked_fill(lens == 9, 2**40)
    r = rescale(o[2].to(device), lse.to(device), 2, base="2", lens=big.to(device))
    assert_close_to(r.cpu(), rescale_reference(o[2], lse, 2, base="2", row_mask=keep)[0],
                    torch.float32)


@pytest.mark.parametrize("base", ["e", "2"])
@pytest.mark.parametrize("n", [1, 3])
def test_sink_is_added_once_after_the_merge(n: int, base: str, device: str) -> None:
    t, h, d = 4, 3, 48
    o, lse = partials(n, t, h, d, torch.float32, seed=23 + n, specials=False)
    sink = torch.tensor([0.7, -math.inf, 3.5])  # head 1 has no sink
    out = poisoned((t, h, d), torch.float32, device)
    lse_out = poisoned((t, h), torch.float32, device)
    merge(o.to(device), lse.to(device), base=base, out=out, lse_out=lse_out, sink=sink.to(device))
    ref_o, ref_lse = merge_reference(o, lse, base=base, sink=sink)
    assert_close_to(out.cpu(), ref_o, torch.float32)
    assert_lse_close(lse_out.cpu(), ref_lse)
    # the documented formula, from the merge without the sink
    o0, lse0 = merge_reference(o, lse, base=base)
    s = sink_in_base(sink.double(), base)
    b_l, b_s = torch.exp(lse0 * LN[base]), torch.exp(s * LN[base])
    torch.testing.assert_close(ref_o, o0 * (b_l / (b_l + b_s)).unsqueeze(-1), atol=1e-12,
                               rtol=1e-10)
    torch.testing.assert_close(ref_lse, torch.log(b_l + b_s) / LN[base], atol=1e-12, rtol=1e-10)
    # rescale: the sink in every rank's denominator, so the ranks sum to the merge with the sink
    total = torch.zeros(t, h, d, dtype=torch.float64)
    for r in range(n):
        got, got_lse = rescale(o[r].to(device), lse.to(device), r, base=base, return_lse=True,
                               sink=sink.to(device))
        ref_r, ref_r_lse = rescale_reference(o[r], lse, r, base=base, sink=sink)
        assert_close_to(got.cpu(), ref_r, torch.float32)
        assert_lse_close(got_lse.cpu(), ref_lse)
        assert_lse_close(ref_r_lse, ref_lse)
        total += got.cpu().double()
    torch.testing.assert_close(total, ref_o, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("base", ["e", "2"])
def test_all_empty_row_with_a_sink_gives_zero_and_the_sink(base: str, device: str) -> None:
    """Defined: no keys on any shard (by mask, and by −inf/+inf/NaN LSEs) plus a sink → o = 0
    and LSE = s' (the sink in the LSE's base)."""
    n, t, h, d = 3, 3, 2, 32
    o, lse = partials(n, t, h, d, torch.float16, seed=31, specials=False)
    keep = torch.ones(n, t, dtype=torch.bool)
    keep[:, 0] = False  # row 0: masked on every shard
    lse[:, 1] = torch.tensor([-math.inf, math.inf, math.nan]).view(n, 1)  # row 1: empty by value
    _garbage_rows(o, lse, keep)
    sink = torch.tensor([1.25, -2.0])
    out, lse_out = merge(o.to(device), lse.to(device), base=base, return_lse=True,
                         row_mask=keep.to(device), sink=sink.to(device))
    want = (sink / LN[base]).float()
    for row in (0, 1):
        assert (out[row] == 0).all()
        torch.testing.assert_close(lse_out[row].cpu(), want, atol=1e-6, rtol=1e-6)
    ref_o, ref_lse = merge_reference(o, lse, base=base, row_mask=keep, sink=sink)
    assert (ref_o[:2] == 0).all()
    torch.testing.assert_close(ref_lse[:2], (sink.double() / LN[base]).expand(2, h), atol=1e-12,
                               rtol=0)
    r = rescale(o[1].to(device), lse.to(device), 1, base=base, row_mask=keep.to(device),
                sink=sink.to(device))
    assert (r[:2] == 0).all() and not r.isnan().any()


def test_torch_path_takes_mask_and_sink(monkeypatch: pytest.MonkeyPatch) -> None:
    o, lse = partials(3, 4, 2, 32, torch.float32, seed=8, specials=False)
    keep = _mask(3, 4, seed=1, strided=False)
    _garbage_rows(o, lse, keep)
    sink = torch.tensor([0.5, 2.0])
    via_triton = merge(o, lse, base="e", return_lse=True, row_mask=keep, sink=sink)
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    via_torch = merge(o, lse, base="e", return_lse=True, row_mask=keep, sink=sink)
    for a, b in zip(via_triton, via_torch, strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(row_mask=torch.ones(3, 4, dtype=torch.bool)), "mask shape"),
        (dict(row_mask=torch.ones(2, 5, dtype=torch.bool)), "mask has 5 rows"),
        (dict(row_mask=torch.ones(2, 4)), "mask dtype"),
        (dict(lens=torch.ones(2, 3, dtype=torch.int32)), "uniform q_len"),
        (dict(lens=torch.ones(2, 2)), "lens dtype"),
        (dict(row_mask=torch.ones(2, 4, dtype=torch.bool), lens=torch.ones(2, 2, dtype=torch.int32)),
         "not both"),
        (dict(sink=torch.zeros(4)), "sink must be"),
        (dict(sink=torch.zeros(3, dtype=torch.int32)), "sink must be"),
    ],
)
def test_mask_and_sink_arguments_are_checked(kwargs: dict[str, torch.Tensor], message: str) -> None:
    o, lse = torch.randn(2, 4, 3, 8), torch.randn(2, 4, 3)
    with pytest.raises(ValueError, match=message):
        merge(o, lse, base="e", **kwargs)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=message):
        rescale(o[0], lse, 0, base="e", **kwargs)  # type: ignore[arg-type]


def test_opcheck_with_mask_and_sink() -> None:
    o, lse = partials(2, 3, 4, 32, torch.float32, seed=1, specials=False)
    mask = torch.tensor([[1, 0, 1], [1, 1, 0]], dtype=torch.uint8)
    sink = torch.randn(4)
    out, lse_out = torch.empty(3, 4, 32), torch.empty(3, 4)
    torch.library.opcheck(torch.ops.attn_contracts.merge_.default,
                          (o, lse, out, lse_out, "e", "2", 4, 32, 1, False, mask, 1, sink))
    torch.library.opcheck(torch.ops.attn_contracts.rescale_.default,
                          (o[1], lse, 1, out, lse_out, "2", "2", 4, 32, 1, False, mask, 1, sink))


def test_mask_sink_and_pack_on_rows_spilled_to_grid_axis_2(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows past one grid axis go to the next and the last slice has spare programs (T = 7 with
    a limit of 3): those must read no mask entry and write nothing."""
    from attn_contracts.combine import launch
    from attn_contracts.combine import pack_a2a
    from attn_contracts.combine.reference import pack_a2a_reference

    monkeypatch.setattr(launch, "MAX_GRID_YZ", 3)
    n, t, h, d = 2, 7, 4, 32
    o, lse = partials(n, t, h, d, torch.float32, seed=41, specials=False)
    keep = _mask(n, t, seed=2, strided=False)
    _garbage_rows(o, lse, keep)
    sink = torch.tensor([0.1, -1.0, 2.0, 0.0])
    out, lse_out = poisoned((t, h, d), torch.float32), poisoned((t, h), torch.float32)
    merge(o, lse, base="2", out=out, lse_out=lse_out, row_mask=keep, sink=sink)
    ref_o, ref_lse = merge_reference(o, lse, base="2", row_mask=keep, sink=sink)
    assert_close_to(out, ref_o, torch.float32)
    assert_lse_close(lse_out, ref_lse)
    r = rescale(o[1], lse, 1, base="2", row_mask=keep, sink=sink)
    assert_close_to(r, rescale_reference(o[1], lse, 1, base="2", row_mask=keep, sink=sink)[0],
                    torch.float32)
    o_bytes = t * (h // n) * d * 4
    send = torch.full((n, o_bytes + t * (h // n) * 4), 0xFF, dtype=torch.uint8)
    pack_a2a(o[0], lse[0], send, o_bytes=o_bytes, row_mask=keep[0])
    ref_po, ref_pl = pack_a2a_reference(o[0], lse[0], n, row_mask=keep[0])
    torch.testing.assert_close(send[:, :o_bytes].view(torch.float32).view(n, t, h // n, d), ref_po,
                               atol=0, rtol=0)
    torch.testing.assert_close(send[:, o_bytes:].view(torch.float32).view(n, t, h // n), ref_pl,
                               atol=0, rtol=0, equal_nan=True)


@pytest.mark.parametrize(("n", "t", "strided", "word"), [
    (8, 1, False, 64), (4, 1, False, 32), (2, 1, False, 16),  # one token: [N, 1], adjacent
    (4, 3, True, 32), (8, 2, True, 64),  # a [T, N] buffer read transposed
    (3, 1, False, 0), (4, 3, False, 0),  # not a whole word / not adjacent: one load per shard
])
def test_a_rows_mask_entries_read_as_one_word(n: int, t: int, strided: bool, word: int,
                                              device: str) -> None:
    """Where a row's N uint8 entries are adjacent and make a 2-, 4- or 8-byte word, the kernels
    read them in one load (``MASK_WORD``) and shift each shard's byte out: same result."""
    from attn_contracts.combine.launches import mask_word

    h, d = 3, 40
    o, lse = partials(n, t, h, d, torch.float32, seed=5, specials=False)
    keep = _mask(n, t, seed=9, strided=strided) if t > 1 else torch.rand(n, 1) > 0.4
    keep[0, 0] = True
    _garbage_rows(o, lse, keep)
    mask = keep.to(device)
    assert mask_word(mask.view(torch.uint8), n, *mask.stride()) == word
    out = merge(o.to(device), lse.to(device), base="2", row_mask=mask)
    assert_close_to(out.cpu(), merge_reference(o, lse, base="2", row_mask=keep)[0], torch.float32)
    r = rescale(o[1].to(device), lse.to(device), 1, base="2", row_mask=mask)
    assert_close_to(r.cpu(), rescale_reference(o[1], lse, 1, base="2", row_mask=keep)[0],
                    torch.float32)
