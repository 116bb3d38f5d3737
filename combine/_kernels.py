"""Triton kernels of the combine. They compute only; ``ops.py`` checks inputs and launches them.

Each program owns one token row ``t``, a block of ``BLOCK_H`` heads and a block of ``BLOCK_D`` of
the head dim (every axis masked, so any H and D work). The ``N`` shards are visited in one
unrolled pass with an online max (as flash attention does), so no load depends on another and all
of them are in flight together: that is what both the launch-bound one-token case and the
bandwidth-bound case need. (Loading all shards as one ``[N, H, D]`` tile and reducing over N was
4x slower on an H200: the reduction crossed threads.)

The LSE is addressed through four strides ``[N, B, Q, H]`` with ``t = b · Q_LEN + q``, which covers
``[T, H]``, ``[H, T]``, ``[B, H, q_len]`` layouts and padded head axes without copies. The policy
is ``combine/reference.py``'s.

Bases: exponentials are ``exp2``; ``IN_SCALE`` = log2(b) turns a base-``b`` LSE difference into a
base-2 exponent (1 for base 2, log2 e for base e); ``OUT_SCALE`` = ln b_in / ln b_out converts the
merged LSE to the requested base. Both are compile-time constants.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def _load_lse(lse_row, n, s_ln, offs_h, s_lh, mask_h):
    """One shard's LSE for a block of heads, fp32, with NaN and +inf read as −inf (empty)."""
    x = tl.load(lse_row + n * s_ln + offs_h * s_lh, mask=mask_h, other=float("-inf"))
    x = x.to(tl.float32)
    return tl.where((x != x) | (x == float("inf")), float("-inf"), x)


@triton.jit
def _finite(m):
    """The running max with −inf replaced by 0, so ``x − m`` is never ``−inf − (−inf)``."""
    return tl.where(m == float("-inf"), 0.0, m)


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
    mask = mask_h[:, None] & (offs_d < D)[None, :]
    lse_row = lse_ptr + (t // Q_LEN) * s_lb + (t % Q_LEN) * s_lq
    o_tile = o_ptr + t * s_ot + offs_h[:, None] * s_oh + offs_d[None, :] * s_od

    m = tl.full((BLOCK_H,), float("-inf"), tl.float32)
    s = tl.zeros((BLOCK_H,), tl.float32)
    acc = tl.zeros((BLOCK_H, BLOCK_D), tl.float32)
    for n in tl.static_range(N):
        x = _load_lse(lse_row, n, s_ln, offs_h, s_lh, mask_h)
        o = tl.load(o_tile + n * s_on, mask=mask, other=0.0).to(tl.float32)
        m_new = tl.maximum(m, x)
        alpha = tl.exp2((m - _finite(m_new)) * IN_SCALE)  # rescales what was summed so far
        p = tl.exp2((x - _finite(m_new)) * IN_SCALE)  # exactly 0 for an empty shard
        s = s * alpha + p
        acc = acc * alpha[:, None] + tl.where(p[:, None] > 0, p[:, None] * o, 0.0)  # no 0·NaN
        m = m_new
    inv_s = tl.where(s > 0, 1.0 / tl.where(s > 0, s, 1.0), 0.0)  # all empty: o = 0
    tl.store(out_ptr + t * s_yt + offs_h[:, None] * s_yh + offs_d[None, :] * s_yd,
             (acc * inv_s[:, None]).to(out_ptr.dtype.element_ty), mask=mask)
    if WRITE_LSE:
        if tl.program_id(2) == 0:
            _store_lse(lse_out_ptr, t, offs_h, mask_h, s_zt, s_zh, _finite(m), s, IN_SCALE,
                       OUT_SCALE)


@triton.jit
def rescale_kernel(
    o_ptr, lse_ptr, out_ptr, lse_out_ptr,
    RANK, H, D, Q_LEN, HC,
    s_ot, s_oh, s_od,
    s_ln, s_lb, s_lq, s_lh,
    s_yc, s_yt, s_yh, s_yd,
    s_zt, s_zh,
    N: tl.constexpr, IN_SCALE: tl.constexpr, OUT_SCALE: tl.constexpr,
    WRITE_LSE: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr,
):
    """out[t, h, :] = w_RANK · o[t, h, :] with w from all N gathered LSEs (the AG+RS step).

    Head ``h`` is written to chunk ``h // HC`` (stride ``s_yc``) at head ``h % HC``: with
    ``HC = H / N`` the output is laid out ``[N, T, H/N, D]``, ready for a reduce-scatter by heads
    without a copy; ``HC = H``, ``s_yc = 0`` is the plain ``[T, H, D]``."""
    t = tl.program_id(0).to(tl.int64)
    offs_h = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    offs_d = tl.program_id(2) * BLOCK_D + tl.arange(0, BLOCK_D)
    mask_h = offs_h < H
    mask = mask_h[:, None] & (offs_d < D)[None, :]
    lse_row = lse_ptr + (t // Q_LEN) * s_lb + (t % Q_LEN) * s_lq
    o = tl.load(o_ptr + t * s_ot + offs_h[:, None] * s_oh + offs_d[None, :] * s_od,
                mask=mask, other=0.0).to(tl.float32)

    m = tl.full((BLOCK_H,), float("-inf"), tl.float32)
    s = tl.zeros((BLOCK_H,), tl.float32)
    for n in tl.static_range(N):
        x = _load_lse(lse_row, n, s_ln, offs_h, s_lh, mask_h)
        m_new = tl.maximum(m, x)
        s = s * tl.exp2((m - _finite(m_new)) * IN_SCALE) + tl.exp2((x - _finite(m_new)) * IN_SCALE)
        m = m_new
    x_r = _load_lse(lse_row, RANK, s_ln, offs_h, s_lh, mask_h)
    inv_s = tl.where(s > 0, 1.0 / tl.where(s > 0, s, 1.0), 0.0)
    w = (tl.exp2((x_r - _finite(m)) * IN_SCALE) * inv_s)[:, None]
    out_h = (offs_h // HC) * s_yc + (offs_h % HC) * s_yh
    tl.store(out_ptr + t * s_yt + out_h[:, None] + offs_d[None, :] * s_yd,
             tl.where(w > 0, w * o, 0.0).to(out_ptr.dtype.element_ty), mask=mask)
    if WRITE_LSE:
        if tl.program_id(2) == 0:
            _store_lse(lse_out_ptr, t, offs_h, mask_h, s_zt, s_zh, _finite(m), s, IN_SCALE,
                       OUT_SCALE)
