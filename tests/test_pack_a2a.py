"""The fused all-to-all pack kernel (interpreted on the CPU) against the torch copies it replaces
and the reference: every destination's heads of O and fp32 LSE bits in the packed message."""

from __future__ import annotations

import math

import pytest
import torch

from attn_contracts.combine import pack_a2a
from attn_contracts.combine.reference import pack_a2a_reference
from attn_contracts.combine.reference import rows_from_lens
from attn_contracts.combine.workspace import a2a_piece_bytes


def _message(t: int, hc: int, d: int, dtype: torch.dtype, world: int,
             device: str) -> tuple[torch.Tensor, int]:
    """The workspace's message layout, poisoned: 0xFF bytes are NaN in every float dtype."""
    o_bytes, piece = a2a_piece_bytes(t, hc, d, torch.finfo(dtype).bits // 8)
    return torch.full((world, piece), 0xFF, dtype=torch.uint8, device=device), o_bytes


def _read(send: torch.Tensor, t: int, hc: int, d: int, dtype: torch.dtype,
          o_bytes: int) -> tuple[torch.Tensor, torch.Tensor]:
    world, size = send.shape[0], torch.finfo(dtype).bits // 8
    o = send[:, : t * hc * d * size].view(dtype).view(world, t, hc, d)
    lse = send[:, o_bytes : o_bytes + t * hc * 4].view(torch.float32).view(world, t, hc)
    return o, lse


def _inputs(t: int, h: int, d: int, dtype: torch.dtype, layout: str, seed: int,
            strided_o: bool) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    big = torch.randn(t, 2 * h if strided_o else h, d + 3, generator=g).to(dtype)
    o = big[:, ::2, 1 : d + 1] if strided_o else big[:, :, :d]  # head stride, padded dim
    lse = torch.randn(t, h, generator=g) * 4
    lse[0, 0] = math.nan  # passed through as bits: the merge reads it as empty
    lse[-1, -1] = math.inf
    if layout == "head_token":  # the kernel's [H, T] buffer, read as a [T, H] view
        lse = lse.t().contiguous().t()
    return o, lse


@pytest.mark.parametrize("mask_kind", ["none", "mask", "lens"])
@pytest.mark.parametrize("layout", ["token_head", "head_token"])
@pytest.mark.parametrize(("world", "t", "h", "d", "dtype"), [
    (1, 3, 3, 24, torch.float32),
    (2, 1, 4, 40, torch.bfloat16),
    (3, 5, 6, 19, torch.float16),
    (4, 4, 8, 64, torch.bfloat16),
])
def test_pack_matches_the_torch_copies_and_the_reference(
        world: int, t: int, h: int, d: int, dtype: torch.dtype, layout: str, mask_kind: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    hc = h // world
    o, lse = _inputs(t, h, d, dtype, layout, seed=world * 10 + t, strided_o=d % 2 == 0)
    lens = torch.arange(t, dtype=torch.int32) % 3  # rows 0, 3, ... have no keys here
    keep = lens > 0
    kwargs = {"none": {}, "mask": {"row_mask": keep}, "lens": {"lens": lens}}[mask_kind]
    send, o_bytes = _message(t, hc, d, dtype, world, "cpu")
    assert pack_a2a(o, lse, send, o_bytes=o_bytes, **kwargs) is send
    got_o, got_lse = _read(send, t, hc, d, dtype, o_bytes)
    ref_o, ref_lse = pack_a2a_reference(o, lse, world, row_mask=None if mask_kind == "none" else keep)
    torch.testing.assert_close(got_o, ref_o, atol=0, rtol=0, equal_nan=True)
    torch.testing.assert_close(got_lse, ref_lse, atol=0, rtol=0, equal_nan=True)
    # the torch copies (the path without Triton) write the same bytes, padding left alone
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    send_torch, _ = _message(t, hc, d, dtype, world, "cpu")
    pack_a2a(o, lse, send_torch, o_bytes=o_bytes, **kwargs)
    assert torch.equal(send, send_torch)


def test_pack_writes_only_the_message() -> None:
    """A buffer with spare bytes after each row (a larger workspace): nothing outside written."""
    t, h, d, world = 2, 4, 16, 2
    o, lse = _inputs(t, h, d, torch.float32, "token_head", seed=3, strided_o=False)
    o_bytes = t * (h // world) * d * 4
    frame = torch.full((world, o_bytes + t * (h // world) * 4 + 64), 0xAB, dtype=torch.uint8)
    pack_a2a(o, lse, frame, o_bytes=o_bytes)
    assert (frame[:, o_bytes + t * (h // world) * 4 :] == 0xAB).all()
    got_o, got_lse = _read(frame, t, h // world, d, torch.float32, o_bytes)
    ref_o, ref_lse = pack_a2a_reference(o, lse, world)
    torch.testing.assert_close(got_o, ref_o, atol=0, rtol=0)
    torch.testing.assert_close(got_lse, ref_lse, atol=0, rtol=0, equal_nan=True)


def test_masked_rows_merge_as_empty_after_the_exchange() -> None:
    """Pack on two 'ranks', exchange by hand, merge: a masked row is empty whatever it held."""
    from attn_contracts.combine import merge
    from attn_contracts.combine import merge_reference

    t, h, d, world = 3, 4, 16, 2
    hc = h // world
    outs = [_inputs(t, h, d, torch.float32, "token_head", seed=r, strided_o=False)
            for r in range(world)]
    lens = [torch.tensor([1, 0, 2], dtype=torch.int32), torch.tensor([0, 0, 5], dtype=torch.int32)]
    outs[0][0][1] = math.nan  # rank 0, row 1: never ran, garbage
    outs[1][1][0] = 1e4
    sends = []
    for r in range(world):
        send, o_bytes = _message(t, hc, d, torch.float32, world, "cpu")
        sends.append(pack_a2a(*outs[r], send, o_bytes=o_bytes, lens=lens[r]))
    keep = rows_from_lens(torch.stack(lens), 1)  # [N, T]
    for j in range(world):  # rank j receives row j of every rank's message
        recv = torch.stack([s[j] for s in sends])
        o_recv, lse_recv = _read(recv, t, hc, d, torch.float32, o_bytes)
        out, lse_out = merge(o_recv, lse_recv, base="e", return_lse=True)
        heads = slice(j * hc, (j + 1) * hc)
        o_all = torch.stack([x[0][:, heads] for x in outs])
        lse_all = torch.stack([x[1][:, heads] for x in outs])
        ref_o, ref_lse = merge_reference(o_all, lse_all, base="e", row_mask=keep)
        torch.testing.assert_close(out.double(), ref_o, atol=1e-6, rtol=1e-6)
        torch.testing.assert_close(lse_out.double(), ref_lse, atol=1e-6, rtol=1e-6)
        assert (out[1] == 0).all() and (lse_out[1] == -math.inf).all()


@pytest.mark.parametrize(("call", "message"), [
    (lambda s: pack_a2a(torch.randn(2, 5, 8), torch.randn(2, 5), s, o_bytes=64), "not divisible"),
    (lambda s: pack_a2a(torch.randn(2, 4, 8), torch.randn(2, 3), s, o_bytes=64), "lse must be"),
    (lambda s: pack_a2a(torch.randn(2, 4, 8), torch.randn(2, 4), s, o_bytes=32), "cannot hold"),
    (lambda s: pack_a2a(torch.randn(2, 4, 8), torch.randn(2, 4), s.float(), o_bytes=64),
     "uint8"),
    (lambda s: pack_a2a(torch.randn(2, 4, 4), torch.randn(2, 4), s, o_bytes=64,
                        row_mask=torch.ones(3, dtype=torch.bool)), "mask has 3 rows"),
])
def test_pack_rejects_bad_inputs(call, message: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match=message):
        call(torch.zeros(2, 96, dtype=torch.uint8))


def test_opcheck_pack() -> None:
    o, lse = torch.randn(3, 4, 8), torch.randn(3, 4)
    send = torch.zeros(2, 3 * 2 * 8 * 4 + 32, dtype=torch.uint8)
    torch.library.opcheck(torch.ops.attn_contracts.pack_a2a_.default,
                          (o, lse, send, 3 * 2 * 8 * 4, 2, 8, 1, False,
                           torch.tensor([1, 0, 1], dtype=torch.uint8), 1))
