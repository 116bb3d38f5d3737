"""Triton kernels of the combine. They compute only; ``ops.py`` checks inputs and launches them.

Each program owns one token row ``t``, a block of ``BLOCK_H`` heads and a block of ``BLOCK_D`` of
the head dim (every axis masked, so any H and D work). Grid axis 0 walks the (head, dim) blocks of a
row, axes 1 and 2 the rows (``t = pid1 + pid2 · grid1``, as axes 1 and 2 hold at most 65535 each),
so neighbouring programs read neighbouring memory: about 3 % faster than a token-major order on
an H200 (``bench/results/kernel-experiments-h200.md``).

Shards are visited in two unrolled passes: the max LSE first, then every weight ``b^(lse_n − max)``
at once. No load depends on another, so all are in flight together, and the weights are N
independent exponentials instead of an online chain of 2N; ``merge`` normalises by the sum last,
off the loads' critical path. (Loading all shards as one ``[N, H, D]`` tile and reducing over N
was 4x slower: the reduction crossed threads. ``evict_first`` on the partials' loads gained 2-4
points under ``do_bench``'s dirty-L2 flush but lost 2-5 % of CUDA-graph time, so it is not used.)

The LSE is addressed through four strides ``[N, B, Q, H]`` with ``t = b · Q_LEN + q``, which covers
``[T, H]``, ``[H, T]``, ``[B, H, q_len]`` layouts and padded head axes without copies. Shard
pointers advance by their stride one step at a time, so ``n · stride`` never overflows 32 bits.
The policy is ``combine/reference.py``'s.

Bases: exponentials are ``exp2``; ``IN_SCALE`` = log2(b) turns a base-``b`` LSE difference into a
base-2 exponent (1 for base 2, log2 e for base e); ``OUT_SCALE`` = ln b_in / ln b_out converts the
merged LSE to the requested base. Both are compile-time constants.

``PDL``: programmatic dependent launch (Hopper and newer). The program first waits for the grid it
depends on (``gdc_wait``: all its writes visible), then lets the next PDL-launched kernel start its
launch. Only the launch latency overlaps, about 0.45 µs per kernel on an H200.
"""

from __future__ import annotations

import triton
import triton.language as tl
from triton.language.extra import cuda as tl_cuda


@triton.jit
def _load_lse(lse_n, offs_h, s_lh, mask_h):
    """One shard's LSE for a block of heads, fp32, with NaN and +inf read as −inf (empty)."""
    x = tl.load(lse_n + offs_h * s_lh, mask=mask_h, other=float("-inf")).to(tl.float32)
    return tl.where((x != x) | (x == float("inf")), float("-inf"), x)


@triton.jit
def _finite(m):
    """The max with −inf replaced by 0, so ``x − m`` is never ``−inf − (−inf)``."""
    return tl.where(m == float("-inf"), 0.0, m)


@triton.jit
def _max_lse(lse_row, s_ln, offs_h, s_lh, mask_h, N: tl.constexpr, BLOCK_H: tl.constexpr):
    """The shards' max LSE with −inf as 0 (``_finite``): pass 1."""
    m = tl.full((BLOCK_H,), float("-inf"), tl.float32)
    lse_n = lse_row
    for _ in tl.static_range(N):
        m = tl.maximum(m, _load_lse(lse_n, offs_h, s_lh, mask_h))
        lse_n += s_ln
    return _finite(m)


@triton.jit
def _reciprocal(s):
    """``1 / s``, and 0 where no shard had weight (an all-empty row gives ``o = 0``)."""
    return tl.where(s > 0, 1.0 / tl.where(s > 0, s, 1.0), 0.0)


@triton.jit
def _tile(T, H, D, Q_LEN, s_lb, s_lq, NUM_DB: tl.constexpr, BLOCK_H: tl.constexpr,
          BLOCK_D: tl.constexpr):
    """This program's row ``t`` (int64), head and dim offsets, masks and LSE row offset."""
    hb = tl.program_id(0) // NUM_DB
    db = tl.program_id(0) % NUM_DB
    t = tl.program_id(1) + tl.program_id(2) * tl.num_programs(1)
    offs_h = hb * BLOCK_H + tl.arange(0, BLOCK_H)
    offs_d = db * BLOCK_D + tl.arange(0, BLOCK_D)
    mask_h = offs_h < tl.where(t < T, H, 0)  # rows past T (last grid-z slice) do nothing
    mask = mask_h[:, None] & (offs_d < D)[None, :]
    lse_off = (t // Q_LEN).to(tl.int64) * s_lb + (t % Q_LEN).to(tl.int64) * s_lq
    return t.to(tl.int64), offs_h, offs_d, mask_h, mask, lse_off


@triton.jit
def _store_lse(lse_out_ptr, t, offs_h, mask_h, s_zt, s_zh, m, s, IN_SCALE: tl.constexpr,
               OUT_SCALE: tl.constexpr):
    merged = m + tl.log2(tl.where(s > 0, s, 1.0)) / IN_SCALE
    merged = tl.where(s > 0, merged * OUT_SCALE, float("-inf"))
    tl.store(lse_out_ptr + t * s_zt + offs_h * s_zh, merged, mask=mask_h)


@triton.jit
def merge_kernel(
    o_ptr, lse_ptr, out_ptr, lse_out_ptr,
    T, H, D, Q_LEN,
    s_on, s_ot, s_oh, s_od,
    s_ln, s_lb, s_lq, s_lh,
    s_yt, s_yh, s_yd,
    s_zt, s_zh,
    N: tl.constexpr, IN_SCALE: tl.constexpr, OUT_SCALE: tl.constexpr, WRITE_LSE: tl.constexpr,
    BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr, NUM_DB: tl.constexpr, PDL: tl.constexpr,
):
    """out[t, h, :] = Σ_n w_n · o[n, t, h, :]; optionally lse_out[t, h] = merged LSE."""
    if PDL:
        tl_cuda.gdc_wait()
        tl_cuda.gdc_launch_dependents()
    t, offs_h, offs_d, mask_h, mask, lse_off = _tile(T, H, D, Q_LEN, s_lb, s_lq, NUM_DB, BLOCK_H,
                                                     BLOCK_D)
    lse_row = lse_ptr + lse_off
    m = _max_lse(lse_row, s_ln, offs_h, s_lh, mask_h, N, BLOCK_H)
    s = tl.zeros((BLOCK_H,), tl.float32)
    acc = tl.zeros((BLOCK_H, BLOCK_D), tl.float32)
    o_n = o_ptr + t * s_ot + offs_h[:, None] * s_oh + offs_d[None, :] * s_od
    lse_n = lse_row
    for _ in tl.static_range(N):
        p = tl.exp2((_load_lse(lse_n, offs_h, s_lh, mask_h) - m) * IN_SCALE)  # 0 when empty
        o = tl.load(o_n, mask=mask, other=0.0).to(tl.float32)
        s += p
        acc += tl.where(p[:, None] > 0, p[:, None] * o, 0.0)  # empty shard: adds 0, even if o is NaN
        o_n += s_on
        lse_n += s_ln
    # normalised last, so the reciprocal is off the loads' critical path (one-token latency)
    acc *= _reciprocal(s)[:, None]
    tl.store(out_ptr + t * s_yt + offs_h[:, None] * s_yh + offs_d[None, :] * s_yd,
             acc.to(out_ptr.dtype.element_ty), mask=mask)
    if WRITE_LSE:
        if tl.program_id(0) % NUM_DB == 0:
            _store_lse(lse_out_ptr, t, offs_h, mask_h, s_zt, s_zh, m, s, IN_SCALE, OUT_SCALE)


@triton.jit
def rescale_kernel(
    o_ptr, lse_ptr, out_ptr, lse_out_ptr,
    RANK, T, H, D, Q_LEN, HC,
    s_ot, s_oh, s_od,
    s_ln, s_lb, s_lq, s_lh,
    s_yc, s_yt, s_yh, s_yd,
    s_zt, s_zh,
    N: tl.constexpr, IN_SCALE: tl.constexpr, OUT_SCALE: tl.constexpr, WRITE_LSE: tl.constexpr,
    BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr, NUM_DB: tl.constexpr, PDL: tl.constexpr,
):
    """out[t, h, :] = w_RANK · o[t, h, :] with w from all N gathered LSEs (the AG+RS step).

    Head ``h`` is written to chunk ``h // HC`` (stride ``s_yc``) at head ``h % HC``: with
    ``HC = H / N`` the output is laid out ``[N, T, H/N, D]``, ready for a reduce-scatter by heads
    without a copy; ``HC = H``, ``s_yc = 0`` is the plain ``[T, H, D]``."""
    if PDL:
        tl_cuda.gdc_wait()
        tl_cuda.gdc_launch_dependents()
    t, offs_h, offs_d, mask_h, mask, lse_off = _tile(T, H, D, Q_LEN, s_lb, s_lq, NUM_DB, BLOCK_H,
                                                     BLOCK_D)
    o = tl.load(o_ptr + t * s_ot + offs_h[:, None] * s_oh + offs_d[None, :] * s_od, mask=mask,
                other=0.0).to(tl.float32)
    lse_row = lse_ptr + lse_off
    m = _max_lse(lse_row, s_ln, offs_h, s_lh, mask_h, N, BLOCK_H)
    s = tl.zeros((BLOCK_H,), tl.float32)
    lse_n = lse_row
    for _ in tl.static_range(N):
        s += tl.exp2((_load_lse(lse_n, offs_h, s_lh, mask_h) - m) * IN_SCALE)  # 0 when empty
        lse_n += s_ln
    x_r = _load_lse(lse_row + RANK * s_ln, offs_h, s_lh, mask_h)
    w = (tl.exp2((x_r - m) * IN_SCALE) * _reciprocal(s))[:, None]
    out_h = (offs_h // HC).to(tl.int64) * s_yc + (offs_h % HC) * s_yh
    tl.store(out_ptr + t * s_yt + out_h[:, None] + offs_d[None, :] * s_yd,
             tl.where(w > 0, w * o, 0.0).to(out_ptr.dtype.element_ty), mask=mask)
    if WRITE_LSE:
        if tl.program_id(0) % NUM_DB == 0:
            _store_lse(lse_out_ptr, t, offs_h, mask_h, s_zt, s_zh, m, s, IN_SCALE, OUT_SCALE)
