"""Triton kernels of the direct all-to-all (``a2a_direct``): peers' memory, epochs, one merge.

Every rank owns one symmetric buffer per workspace slot, laid out in bytes as::

    [0, 8N)             flags int32 [2, N]   flags[p, s] = e: rank s's epoch-e message is here
    [8N, 16N)           acks  int32 [2, N]   acks[p, d] = e: rank d has read my epoch-e message
    [DATA, ...)         data  [2, N, PIECE]  data[p, s]: rank s's message (O [T, H/N, D] | LSE)

with ``p = e % 2`` (double buffering: step e+1 writes the other half, so a slow peer still reading
step e is never overwritten) and a local int32 state ``[epoch, send count, merge count, error]``.
Both kernels read the epoch on the device, so a captured CUDA graph advances it on every replay.

``direct_send_kernel``: waits until every peer acknowledged the message it read two epochs ago
from this half, then writes each destination's head slice of O and the fp32 LSE (−inf on masked
rows) straight into that destination's buffer; the last program to finish (a counter) publishes
the epoch in every destination's ``flags`` (release, system scope).
``direct_merge_kernel``: waits for every source's flag, merges the N messages in its own buffer
(the policy of ``combine/reference.py``, the sink added once), and its last program acknowledges
every source and advances the epoch. A wait gives up after ``SPIN`` polls: it records the error in
the state and writes NaN, never hangs; the peers then time out the same way.
"""

from __future__ import annotations

import triton
import triton.language as tl

from attn_contracts.combine._kernels import _finite
from attn_contracts.combine._kernels import _load_lse
from attn_contracts.combine._kernels import _load_send
from attn_contracts.combine._kernels import _load_send_lse
from attn_contracts.combine._kernels import _reciprocal
from attn_contracts.combine._kernels import _sink_lse
from attn_contracts.combine._kernels import _sink_weight
from attn_contracts.combine._kernels import _store_lse
from attn_contracts.combine._kernels import _tile


@triton.jit
def _poll(flag_ptr):
    """One acquire read of a flag another GPU writes (system scope)."""
    return tl.atomic_add(flag_ptr, 0, sem="acquire", scope="sys")


@triton.jit
def _waited(flag_ptr, target, SPIN):
    """Spin until ``*flag_ptr >= target``; False if it was not reached in ``SPIN`` polls."""
    polls = 0
    seen = _poll(flag_ptr)
    while (seen < target) & (polls < SPIN):
        polls += 1
        seen = _poll(flag_ptr)
    return seen >= target


@triton.jit
def _last_program(count_ptr):
    """True in exactly one program: the last to get here (its block's writes ordered first)."""
    tl.debug_barrier()
    total = tl.num_programs(0) * tl.num_programs(1) * tl.num_programs(2)
    return tl.atomic_add(count_ptr, 1, sem="acq_rel", scope="sys") == total - 1


@triton.jit
def _peer(peers_ptr, rank, KIND: tl.constexpr):
    return tl.load(peers_ptr + rank).to(tl.pointer_type(KIND))


@triton.jit
def direct_send_kernel(
    o_ptr, lse_ptr, mask_ptr, peers_ptr, state_ptr,
    T, H, D, HC, MASK_Q, RANK,
    s_ot, s_oh, s_od, s_lt, s_lh, s_mt,
    PIECE, PARITY_BYTES, O_BYTES, DATA, SPIN,
    N: tl.constexpr, HAS_MASK: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr,
    NUM_DB: tl.constexpr,
):
    e = tl.load(state_ptr) + 1
    p = e % 2
    me = _peer(peers_ptr, RANK, tl.int32)
    ok = True
    for n in tl.static_range(N):  # the destinations have read what this half held at e - 2
        ok = ok & _waited(me + 2 * N + p * N + n, e - 2, SPIN)
    tl.atomic_max(state_ptr + 3, tl.where(ok, 0, 1))
    t, offs_h, offs_d, mask_h, mask, lse_off = _tile(T, H, D, 1, s_lt, 0, NUM_DB, BLOCK_H,
                                                     BLOCK_D)
    mask_h = mask_h & ok
    mask = mask & ok
    o, valid = _load_send(o_ptr, t, offs_h, offs_d, s_ot, s_oh, s_od, mask,
                          mask_ptr + (t // MASK_Q) * s_mt, t < T, HAS_MASK)
    j = (offs_h // HC).to(tl.int64)
    dst = tl.load(peers_ptr + j, mask=mask_h, other=0).to(tl.pointer_type(tl.uint8))
    region = dst + DATA + p * PARITY_BYTES + RANK * PIECE  # [BLOCK_H] pointers
    row = t * HC + offs_h % HC
    o_dst = region.to(tl.pointer_type(o_ptr.dtype.element_ty))
    tl.store(o_dst[:, None] + row[:, None] * D + offs_d[None, :], o, mask=mask)
    if tl.program_id(0) % NUM_DB == 0:
        x = _load_send_lse(lse_ptr + lse_off, offs_h, s_lh, mask_h, valid, HAS_MASK)
        lse_dst = (region + O_BYTES).to(tl.pointer_type(tl.float32))
        tl.store(lse_dst + row, x, mask=mask_h)
    if _last_program(state_ptr + 1):
        tl.store(state_ptr + 1, 0)
        if tl.atomic_add(state_ptr + 3, 0) == 0:
            for n in tl.static_range(N):
                tl.atomic_xchg(_peer(peers_ptr, n, tl.int32) + p * N + RANK, e, sem="release",
                               scope="sys")


@triton.jit
def direct_merge_kernel(
    out_ptr, lse_out_ptr, sink_ptr, peers_ptr, state_ptr,
    T, HC, D, RANK,
    s_yt, s_yh, s_yd, s_zt, s_zh, s_s,
    PIECE, PARITY_BYTES, O_BYTES, DATA, SPIN,
    N: tl.constexpr, IN_SCALE: tl.constexpr, OUT_SCALE: tl.constexpr, WRITE_LSE: tl.constexpr,
    HAS_SINK: tl.constexpr, SINK_SCALE: tl.constexpr, BLOCK_H: tl.constexpr,
    BLOCK_D: tl.constexpr, NUM_DB: tl.constexpr,
):
    """The messages' O has the output's dtype (every rank sends the plan's ``out_dtype``)."""
    e = tl.load(state_ptr) + 1
    p = e % 2
    me = _peer(peers_ptr, RANK, tl.uint8)
    ok = True
    for n in tl.static_range(N):  # every source's epoch-e message is in this half
        ok = ok & _waited(me.to(tl.pointer_type(tl.int32)) + p * N + n, e, SPIN)
    tl.atomic_max(state_ptr + 3, tl.where(ok, 0, 2))
    t, offs_h, offs_d, mask_h, mask, _ = _tile(T, HC, D, 1, 0, 0, NUM_DB, BLOCK_H, BLOCK_D)
    read_h = mask_h & ok
    half = me + DATA + p * PARITY_BYTES
    row = t * HC + offs_h
    sink = _sink_lse(sink_ptr, offs_h, s_s, read_h, HAS_SINK, SINK_SCALE, BLOCK_H)
    m = sink
    for n in tl.static_range(N):
        lse_n = (half + n * PIECE + O_BYTES).to(tl.pointer_type(tl.float32)) + t * HC
        m = tl.maximum(m, _load_lse(lse_n, offs_h, 1, read_h))
    m = _finite(m)
    s = _sink_weight(sink, m, IN_SCALE, HAS_SINK, BLOCK_H)
    acc = tl.zeros((BLOCK_H, BLOCK_D), tl.float32)
    for n in tl.static_range(N):
        lse_n = (half + n * PIECE + O_BYTES).to(tl.pointer_type(tl.float32)) + t * HC
        w = tl.exp2((_load_lse(lse_n, offs_h, 1, read_h) - m) * IN_SCALE)  # 0 when empty
        o_n = (half + n * PIECE).to(tl.pointer_type(out_ptr.dtype.element_ty))
        o = tl.load(o_n + row[:, None] * D + offs_d[None, :], mask=mask & ok,
                    other=0.0).to(tl.float32)
        s += w
        acc += tl.where(w[:, None] > 0, w[:, None] * o, 0.0)
    acc = tl.where(ok, acc * _reciprocal(s)[:, None], float("nan"))
    tl.store(out_ptr + t * s_yt + offs_h[:, None] * s_yh + offs_d[None, :] * s_yd,
             acc.to(out_ptr.dtype.element_ty), mask=mask)
    if WRITE_LSE:
        if tl.program_id(0) % NUM_DB == 0:
            _store_lse(lse_out_ptr, t, offs_h, mask_h, s_zt, s_zh, m, s, IN_SCALE, OUT_SCALE)
    if _last_program(state_ptr + 2):  # every program has read its share: acknowledge, advance
        tl.store(state_ptr + 2, 0)
        if tl.atomic_add(state_ptr + 3, 0) == 0:
            for n in tl.static_range(N):
                tl.atomic_xchg(_peer(peers_ptr, n, tl.int32) + 2 * N + p * N + RANK, e,
                               sem="release", scope="sys")
            tl.store(state_ptr, e)
