"""Triton kernels of the combine. They compute only; ``ops.py`` checks inputs and launches them.

Each program owns one token row ``t``, a block of ``BLOCK_H`` heads and a block of ``BLOCK_D`` of
the head dim (every axis masked, so any H and D work). The LSE is addressed through four strides
``[N, B, Q, H]`` with ``t = b · Q_LEN + q``, which covers ``[T, H]``, ``[H, T]`` and
``[B, H, q_len]`` layouts, and padded head axes, without copies. The policy is
``combine/reference.py``'s.

Bases: exponentials are ``exp2``; ``IN_SCALE`` = log2(b) of the input base turns a base-``b`` LSE
difference into a base-2 exponent (1 for base 2, log2 e for base e); ``OUT_SCALE`` = ln b_in / ln
b_out converts the merged LSE to the requested output base. Both are compile-time constants.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _lse_stats(lse_row_ptr, s_ln, mask_h, N: tl.constexpr, IN_SCALE: tl.constexpr):
    """Max (clamped to 0 when every shard is empty) and Σ 2^((x−m)·IN_SCALE) over N shards."""
    m = tl.full(mask_h.shape, float("-inf"), tl.float32)
    for n in tl.static_range(N):
        x = tl.load(lse_row_ptr + n * s_ln, mask=mask_h, other=float("-inf")).to(tl.float32)
        x = tl.where((x != x) | (x == float("inf")), float("-inf"), x)  # NaN, +inf: empty
        m = tl.maximum(m, x)
    m = tl.where(m == float("-inf"), 0.0, m)
    s = tl.zeros(mask_h.shape, tl.float32)
    for n in tl.static_range(N):
        x = tl.load(lse_row_ptr + n * s_ln, mask=mask_h, other=float("-inf")).to(tl.float32)
        x = tl.where((x != x) | (x == float("inf")), float("-inf"), x)
        s += tl.exp2((x - m) * IN_SCALE)
    return m, s


@triton.jit
def _shard_weight(lse_row_ptr, n, s_ln, mask_h, m, inv_s, IN_SCALE: tl.constexpr):
    x = tl.load(lse_row_ptr + n * s_ln, mask=mask_h, other=float("-inf")).to(tl.float32)
    x = tl.where((x != x) | (x == float("inf")), float("-inf"), x)
    return tl.exp2((x - m) * IN_SCALE) * inv_s


@triton.jit
def _store_lse(lse_out_ptr, t, offs_h, mask_h, s_zt, s_zh, m, s, IN_SCALE: tl.constexpr,
               OUT_SCALE: tl.constexpr):
    merged = m + tl.log2(tl.where(s > 0, s, 1.0)) / IN_SCALE
    merged = tl.where(s > 0, merged * OUT_SCALE, float("-inf"))
    tl.store(lse_out_ptr + t * s_zt + offs_h * s_zh, merged, mask=mask_h)


@triton.jit
def merge_kernel(
    o_ptr, lse_ptr, out_ptr, lse_out_ptr,
    H, D, Q_LEN,
    s_on, s_ot, s_oh, s_od,
    s_ln, s_lb, s_lq, s_lh,
    s_yt, s_yh, s_yd,
    s_zt, s_zh,
    N: tl.constexpr, IN_SCALE: tl.constexpr, OUT_SCALE: tl.constexpr,
    WRITE_LSE: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr,
):
    """out[t, h, :] = Σ_n w_n · o[n, t, h, :]; optionally lse_out[t, h] = merged LSE."""
    t = tl.program_id(0).to(tl.int64)  # 64-bit: N·T·H·D exceeds 2^31 at long contexts
    offs_h = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    offs_d = tl.program_id(2) * BLOCK_D + tl.arange(0, BLOCK_D)
    mask_h = offs_h < H
    mask_d = offs_d < D
    mask = mask_h[:, None] & mask_d[None, :]

    lse_row = lse_ptr + (t // Q_LEN) * s_lb + (t % Q_LEN) * s_lq + offs_h * s_lh
    m, s = _lse_stats(lse_row, s_ln, mask_h, N, IN_SCALE)
    inv_s = tl.where(s > 0, 1.0 / tl.where(s > 0, s, 1.0), 0.0)  # all empty: weights 0, o = 0

    o_tile = o_ptr + t * s_ot + offs_h[:, None] * s_oh + offs_d[None, :] * s_od
    acc = tl.zeros((BLOCK_H, BLOCK_D), tl.float32)
    for n in tl.static_range(N):
        w = _shard_weight(lse_row, n, s_ln, mask_h, m, inv_s, IN_SCALE)[:, None]
        o = tl.load(o_tile + n * s_on, mask=mask, other=0.0).to(tl.float32)
        acc += tl.where(w > 0, w * o, 0.0)  # select, never 0·NaN from an empty shard
    out = out_ptr + t * s_yt + offs_h[:, None] * s_yh + offs_d[None, :] * s_yd
    tl.store(out, acc.to(out_ptr.dtype.element_ty), mask=mask)

    if WRITE_LSE:
        if tl.program_id(2) == 0:
            _store_lse(lse_out_ptr, t, offs_h, mask_h, s_zt, s_zh, m, s, IN_SCALE, OUT_SCALE)


@triton.jit
def rescale_kernel(
    o_ptr, lse_ptr, out_ptr, lse_out_ptr,
    RANK, H, D, Q_LEN,
    s_ot, s_oh, s_od,
    s_ln, s_lb, s_lq, s_lh,
    s_yt, s_yh, s_yd,
    s_zt, s_zh,
    N: tl.constexpr, IN_SCALE: tl.constexpr, OUT_SCALE: tl.constexpr,
    WRITE_LSE: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr,
):
    """out[t, h, :] = w_RANK · o[t, h, :] with w from all N gathered LSEs (the AG+RS step)."""
    t = tl.program_id(0).to(tl.int64)
    offs_h = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    offs_d = tl.program_id(2) * BLOCK_D + tl.arange(0, BLOCK_D)
    mask_h = offs_h < H
    mask_d = offs_d < D
    mask = mask_h[:, None] & mask_d[None, :]

    lse_row = lse_ptr + (t // Q_LEN) * s_lb + (t % Q_LEN) * s_lq + offs_h * s_lh
    m, s = _lse_stats(lse_row, s_ln, mask_h, N, IN_SCALE)
    inv_s = tl.where(s > 0, 1.0 / tl.where(s > 0, s, 1.0), 0.0)
    w = _shard_weight(lse_row, RANK, s_ln, mask_h, m, inv_s, IN_SCALE)[:, None]

    o = tl.load(o_ptr + t * s_ot + offs_h[:, None] * s_oh + offs_d[None, :] * s_od,
                mask=mask, other=0.0).to(tl.float32)
    out = out_ptr + t * s_yt + offs_h[:, None] * s_yh + offs_d[None, :] * s_yd
    tl.store(out, tl.where(w > 0, w * o, 0.0).to(out_ptr.dtype.element_ty), mask=mask)

    if WRITE_LSE:
        if tl.program_id(2) == 0:
            _store_lse(lse_out_ptr, t, offs_h, mask_h, s_zt, s_zh, m, s, IN_SCALE, OUT_SCALE)
