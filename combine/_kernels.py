"""Triton kernels of the combine. They compute only; ``ops.py`` checks inputs and launches them.

Each program owns one token row ``t``, a block of ``BLOCK_H`` heads and a block of ``BLOCK_D`` of
the head dim (every axis masked, so any H and D work). All ``N`` shards are loaded at once, as an
``[N_PAD, BLOCK_H]`` LSE tile and an ``[N_PAD, BLOCK_H, BLOCK_D]`` output tile (``N_PAD`` = N
rounded up to a power of two, masked): every load is in flight together, which is what both the
launch-bound one-token case and the bandwidth-bound case need.

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
def _shard_weights(lse_ptr, t, offs_h, mask_h, Q_LEN, s_ln, s_lb, s_lq, s_lh, N,
                   N_PAD: tl.constexpr, IN_SCALE: tl.constexpr):
    """Weights ``w [N_PAD, BLOCK_H]`` (0 for empty or padded shards), the clamped max ``m`` and
    ``s = Σ 2^((x−m)·IN_SCALE)`` (0 when every shard is empty)."""
    offs_n = tl.arange(0, N_PAD)
    row = lse_ptr + (t // Q_LEN) * s_lb + (t % Q_LEN) * s_lq
    x = tl.load(row + offs_n[:, None] * s_ln + offs_h[None, :] * s_lh,
                mask=(offs_n[:, None] < N) & mask_h[None, :], other=float("-inf")).to(tl.float32)
    x = tl.where((x != x) | (x == float("inf")), float("-inf"), x)  # NaN, +inf: empty shard
    m = tl.max(x, axis=0)
    m = tl.where(m == float("-inf"), 0.0, m)  # every shard empty: keep the exponent finite
    e = tl.exp2((x - m[None, :]) * IN_SCALE)
    s = tl.sum(e, axis=0)
    inv_s = tl.where(s > 0, 1.0 / tl.where(s > 0, s, 1.0), 0.0)  # all empty: weights 0, o = 0
    return e * inv_s[None, :], m, s


@triton.jit
def _store_lse(lse_out_ptr, t, offs_h, mask_h, s_zt, s_zh, m, s, IN_SCALE: tl.constexpr,
               OUT_SCALE: tl.constexpr):
    merged = m + tl.log2(tl.where(s > 0, s, 1.0)) / IN_SCALE
    merged = tl.where(s > 0, merged * OUT_SCALE, float("-inf"))
    tl.store(lse_out_ptr + t * s_zt + offs_h * s_zh, merged, mask=mask_h)


@triton.jit
def merge_kernel(
    o_ptr, lse_ptr, out_ptr, lse_out_ptr,
    N, H, D, Q_LEN,
    s_on, s_ot, s_oh, s_od,
    s_ln, s_lb, s_lq, s_lh,
    s_yt, s_yh, s_yd,
    s_zt, s_zh,
    N_PAD: tl.constexpr, IN_SCALE: tl.constexpr, OUT_SCALE: tl.constexpr,
    WRITE_LSE: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr,
):
    """out[t, h, :] = Σ_n w_n · o[n, t, h, :]; optionally lse_out[t, h] = merged LSE."""
    t = tl.program_id(0).to(tl.int64)  # 64-bit: N·T·H·D exceeds 2^31 at long contexts
    offs_h = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    offs_d = tl.program_id(2) * BLOCK_D + tl.arange(0, BLOCK_D)
    offs_n = tl.arange(0, N_PAD)
    mask_h = offs_h < H
    mask_hd = mask_h[:, None] & (offs_d < D)[None, :]

    w, m, s = _shard_weights(lse_ptr, t, offs_h, mask_h, Q_LEN, s_ln, s_lb, s_lq, s_lh, N, N_PAD,
                             IN_SCALE)
    w = w[:, :, None]  # [N_PAD, BLOCK_H, 1]
    o = tl.load(o_ptr + t * s_ot + offs_n[:, None, None] * s_on + offs_h[None, :, None] * s_oh
                + offs_d[None, None, :] * s_od,
                mask=(offs_n < N)[:, None, None] & mask_hd[None, :, :], other=0.0)
    acc = tl.sum(tl.where(w > 0, w * o.to(tl.float32), 0.0), axis=0)  # select, never 0·NaN
    tl.store(out_ptr + t * s_yt + offs_h[:, None] * s_yh + offs_d[None, :] * s_yd,
             acc.to(out_ptr.dtype.element_ty), mask=mask_hd)
    if WRITE_LSE:
        if tl.program_id(2) == 0:
            _store_lse(lse_out_ptr, t, offs_h, mask_h, s_zt, s_zh, m, s, IN_SCALE, OUT_SCALE)


@triton.jit
def rescale_kernel(
    o_ptr, lse_ptr, out_ptr, lse_out_ptr,
    RANK, N, H, D, Q_LEN,
    s_ot, s_oh, s_od,
    s_ln, s_lb, s_lq, s_lh,
    s_yt, s_yh, s_yd,
    s_zt, s_zh,
    N_PAD: tl.constexpr, IN_SCALE: tl.constexpr, OUT_SCALE: tl.constexpr,
    WRITE_LSE: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr,
):
    """out[t, h, :] = w_RANK · o[t, h, :] with w from all N gathered LSEs (the AG+RS step)."""
    t = tl.program_id(0).to(tl.int64)
    offs_h = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    offs_d = tl.program_id(2) * BLOCK_D + tl.arange(0, BLOCK_D)
    mask_h = offs_h < H
    mask_hd = mask_h[:, None] & (offs_d < D)[None, :]

    w, m, s = _shard_weights(lse_ptr, t, offs_h, mask_h, Q_LEN, s_ln, s_lb, s_lq, s_lh, N, N_PAD,
                             IN_SCALE)
    w_r = tl.sum(tl.where(tl.arange(0, N_PAD)[:, None] == RANK, w, 0.0), axis=0)[:, None]
    o = tl.load(o_ptr + t * s_ot + offs_h[:, None] * s_oh + offs_d[None, :] * s_od,
                mask=mask_hd, other=0.0).to(tl.float32)
    tl.store(out_ptr + t * s_yt + offs_h[:, None] * s_yh + offs_d[None, :] * s_yd,
             tl.where(w_r > 0, w_r * o, 0.0).to(out_ptr.dtype.element_ty), mask=mask_hd)
    if WRITE_LSE:
        if tl.program_id(2) == 0:
            _store_lse(lse_out_ptr, t, offs_h, mask_h, s_zt, s_zh, m, s, IN_SCALE, OUT_SCALE)
