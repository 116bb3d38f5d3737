"""Triton kernels of the combine. They compute only; ``ops.py`` checks inputs and launches them.

Each program owns one token row ``t``, a block of ``BLOCK_H`` heads and a block of ``BLOCK_D`` of
the head dim (every axis masked, so any H and D work). Grid axis 0 walks the (head, dim) blocks of a
row, axes 1 and 2 the rows (``t = pid1 + pid2 · grid1``, as axes 1 and 2 hold at most 65535 each),
so neighbouring programs read neighbouring memory: about 3 % faster than a token-major order on
an H200 (``bench/results/kernel-experiments-h200.md``).

Every shard's LSE, mask entry and partial is loaded first (tuples of N, in program order), then
the max LSE, then every weight ``b^(lse_n − max)`` at once. No load depends on another, so all are
in flight together, and the weights are N independent exponentials instead of an online chain of
2N; ``merge`` normalises by the sum last, off the loads' critical path. (Loading all shards as one
``[N, H, D]`` tile and reducing over N was 4x slower: the reduction crossed threads.
``evict_first`` on the partials' loads gained 2-4 points under ``do_bench``'s dirty-L2 flush but
lost 2-5 % of CUDA-graph time, so it is not used.)

The LSE is addressed through four strides ``[N, B, Q, H]`` with ``t = b · Q_LEN + q``, which covers
``[T, H]``, ``[H, T]``, ``[B, H, q_len]`` layouts and padded head axes without copies. Shard
pointers advance by their stride one step at a time, so ``n · stride`` never overflows 32 bits.
The policy is ``combine/reference.py``'s.

Bases: exponentials are ``exp2``; ``IN_SCALE`` = log2(b) turns a base-``b`` LSE difference into a
base-2 exponent (1 for base 2, log2 e for base e); ``OUT_SCALE`` = ln b_in / ln b_out converts the
merged LSE to the requested base. Both are compile-time constants.

``PDL``: programmatic dependent launch (Hopper and newer), 0 (off) or one of three orders of its
two instructions. The program waits for the grid it depends on (``gdc_wait``: all its writes
visible) before its first load, and lets the next PDL-launched kernel start its launch
(``gdc_launch_dependents``): 1 waits, then triggers; 2 triggers before it waits (the next launch
also overlaps this one's wait); 3 triggers after the stores (the next kernel's programs never hold
SM slots while this grid still has programs to run). Only launch latency overlaps. The tile's
offsets are computed before the wait (they read no memory). ``tiles.default_config`` picks the
mode by grid size (measured: ``kernel-experiments-h200.md``, "Issue 22").

Row mask (``HAS_MASK``): ``mask_ptr`` holds one entry per ``MASK_Q`` consecutive rows and shard
(``MASK_Q = 1``: a ``[N, T]`` bool/uint8 row mask; ``MASK_Q = q_len``: per-request local lengths
``[N, B]``); an entry ``<= 0`` makes the shard empty for those rows whatever its LSE and O hold. It
is one scalar load per shard and program (one load per program where a row's entries are adjacent:
``MASK_WORD``), issued beside the LSE loads (the partials' loads never wait for it: the zero weight
already discards their values), so the masked kernel moves the same bytes as the unmasked one plus
``N·T`` mask bytes.

How the entry reaches the LSE depends on how many predicate registers the kernel already needs
(Hopper has 7; measured on the H200, ``kernel-experiments-h200.md``, "The row mask's
predicates"). A compare and select takes one predicate per shard. Where those do not fit (a
merge of more than 4 shards; a rescale, whose pick of this rank's LSE takes N more), ptxas parked
the partials' load predicate in a general register (``P2R``) and issued those loads only after
the weights, one after another at one token: +107 % at (8, 1, 16, 512), +9 % at (8, 256, 128,
512), +22 % for a one-token rescale. There the entry is added as 0 or −inf instead, built with
integer min/max and bit operations, which need no predicate (``_empty_penalty``): −1 %, +0.1 %,
+2 %. Where they fit (merges of up to 4 shards), the select is fewer instructions and measured
1-3 % where the addition measured 4-8 %.

Sink (``HAS_SINK``): a per-head logit in natural-log units, ``SINK_SCALE = 1 / ln b`` turns it into
the LSE's base; it is one more shard whose output is 0, so it joins the max (a large sink cannot
overflow) and the denominator, and the merged LSE includes it.
"""


from __future__ import annotations

import triton
import triton.language as tl
from triton.language.extra import cuda as tl_cuda


@triton.jit
def _pdl_enter(PDL: tl.constexpr):
    """The start of a PDL program (see the module docstring): wait, and trigger unless late."""
    if PDL == 2:
        tl_cuda.gdc_launch_dependents()
    if PDL != 0:
        tl_cuda.gdc_wait()
    if PDL == 1:
        tl_cuda.gdc_launch_dependents()


@triton.jit
def _pdl_exit(PDL: tl.constexpr):
    """The end of a PDL program: the late trigger (mode 3)."""
    if PDL == 3:
        tl_cuda.gdc_launch_dependents()


@triton.jit
def _load_lse(lse_n, offs_h, s_lh, mask_h):
    """One shard's LSE for a block of heads, fp32, with NaN and +inf read as −inf (empty); the
    direct all-to-all's merge (``_direct_kernels.py``) reads its peers' LSEs so."""
    x = tl.load(lse_n + offs_h * s_lh, mask=mask_h, other=float("-inf")).to(tl.float32)
    return tl.where((x != x) | (x == float("inf")), float("-inf"), x)


@triton.jit
def _sink_lse(sink_ptr, offs_h, s_s, mask_h, HAS_SINK: tl.constexpr, SINK_SCALE: tl.constexpr,
              BLOCK_H: tl.constexpr):
    """The sink in the LSE's base (``s · log_b e``) per head, −inf without a sink."""
    if HAS_SINK:
        x = tl.load(sink_ptr + offs_h * s_s, mask=mask_h, other=float("-inf")).to(tl.float32)
        x = tl.where((x != x) | (x == float("inf")), float("-inf"), x * SINK_SCALE)
    else:
        x = tl.full((BLOCK_H,), float("-inf"), tl.float32)
    return x


@triton.jit
def _finite(m):
    """The max with −inf replaced by 0, so ``x − m`` is never ``−inf − (−inf)``."""
    return tl.where(m == float("-inf"), 0.0, m)


@triton.jit
def _row_valid(mask_n, row_ok):
    """Whether the shard holds keys for this row: its mask entry (bool, uint8 or a length) > 0."""
    return tl.load(mask_n, mask=row_ok, other=0) > 0


@triton.jit
def _load_lses(lse_row, s_ln, mask_row, s_mn, row_ok, offs_h, s_lh, mask_h, N: tl.constexpr,
               HAS_MASK: tl.constexpr, MASK_WORD: tl.constexpr):
    """Every shard's raw LSE ``[BLOCK_H]`` and row-mask entry, as two tuples of ``N`` (the
    mask's empty without ``HAS_MASK``). Only loads: nothing here waits for memory. (Tuples grow
    by ``+``: Triton's frontend takes no starred unpacking, hence the RUF005 exemptions.)

    ``MASK_WORD`` (16, 32, 64; 0: one load per shard): the row's ``N`` uint8 entries are adjacent
    (``s_mn = 1``: a one-token ``[N, 1]`` mask, or a ``[T, N]`` buffer transposed) and aligned, and
    are read as one integer of that many bits. ``N`` one-byte loads of one sector from a warp ran
    one after another: +1.2 µs for a one-token 8-way merge (kernel-experiments-h200.md)."""
    xs = ()
    vs = ()
    lse_n = lse_row
    mask_n = mask_row
    if HAS_MASK:
        if MASK_WORD == 16:
            word = tl.load(mask_row.to(tl.pointer_type(tl.int16)), mask=row_ok, other=0)
        elif MASK_WORD == 32:
            word = tl.load(mask_row.to(tl.pointer_type(tl.int32)), mask=row_ok, other=0)
        elif MASK_WORD == 64:
            word = tl.load(mask_row.to(tl.pointer_type(tl.int64)), mask=row_ok, other=0)
    for n in tl.static_range(N):
        xs = xs + (tl.load(lse_n + offs_h * s_lh, mask=mask_h, other=float("-inf")),)  # noqa: RUF005
        if HAS_MASK:
            if MASK_WORD == 0:
                vs = vs + (tl.load(mask_n, mask=row_ok, other=0),)  # noqa: RUF005
            else:
                vs = vs + ((word >> (8 * n)) & 0xFF,)  # noqa: RUF005
        lse_n += s_ln
        mask_n += s_mn
    return xs, vs


@triton.jit
def _load_sink(sink_ptr, offs_h, s_s, mask_h, HAS_SINK: tl.constexpr, BLOCK_H: tl.constexpr):
    """The raw per-head sink logits (natural log), −inf without a sink. Only a load."""
    if HAS_SINK:
        x = tl.load(sink_ptr + offs_h * s_s, mask=mask_h, other=float("-inf"))
    else:
        x = tl.full((BLOCK_H,), float("-inf"), tl.float32)
    return x


@triton.jit
def _clean(x):
    """fp32, with NaN and +inf read as −inf (empty)."""
    x = x.to(tl.float32)
    return tl.where((x != x) | (x == float("inf")), float("-inf"), x)


@triton.jit
def _empty_penalty(v):
    """0.0 where the mask entry ``v`` is > 0, −inf where it is <= 0, made with integer min/max
    and bit operations: no predicate register (see the module docstring)."""
    keep = tl.minimum(tl.maximum(v, 0), 1).to(tl.int32)  # 1 or 0
    return ((keep - 1) & -8388608).to(tl.float32, bitcast=True)  # 0x00000000 or 0xFF800000


@triton.jit
def _shard_weights(xs, vs, sink, N: tl.constexpr, HAS_MASK: tl.constexpr,
                   HAS_SINK: tl.constexpr, SINK_SCALE: tl.constexpr, MASK_SELECT: tl.constexpr):
    """The shards' LSEs cleaned (``_clean``; −inf where the row mask says the shard is empty),
    the sink in the LSE's base (``s · log_b e``; −inf without one), and the max over both with
    −inf as 0 (so ``x − m`` is never ``−inf − (−inf)``). ``MASK_SELECT``: the mask entry applied
    by a select, else by ``_empty_penalty`` (the module docstring says where each is used)."""
    if HAS_SINK:
        sink = _clean(sink) * SINK_SCALE
    m = sink
    cs = ()
    for n in tl.static_range(N):
        x = _clean(xs[n])
        if HAS_MASK:
            if MASK_SELECT:
                x = tl.where(vs[n] > 0, x, float("-inf"))
            else:
                x = x + _empty_penalty(vs[n])
        cs = cs + (x,)  # noqa: RUF005
        m = tl.maximum(m, x)
    return cs, sink, _finite(m)


@triton.jit
def _sink_weight(sink, m, IN_SCALE: tl.constexpr, HAS_SINK: tl.constexpr, BLOCK_H: tl.constexpr):
    """The sink's term of the denominator (its output is 0, so it adds nothing else)."""
    if HAS_SINK:
        s = tl.exp2((sink - m) * IN_SCALE)
    else:
        s = tl.zeros((BLOCK_H,), tl.float32)
    return s


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
def _finish(lse_out_ptr, t, offs_h, mask_h, s_zt, s_zh, m, s, IN_SCALE: tl.constexpr,
            OUT_SCALE: tl.constexpr, WRITE_LSE: tl.constexpr, NUM_DB: tl.constexpr,
            PDL: tl.constexpr):
    """The end of a merge or rescale program: the merged LSE (by the programs of the first dim
    block), then the PDL exit."""
    if WRITE_LSE:
        if tl.program_id(0) % NUM_DB == 0:
            _store_lse(lse_out_ptr, t, offs_h, mask_h, s_zt, s_zh, m, s, IN_SCALE, OUT_SCALE)
    _pdl_exit(PDL)


@triton.jit
def _load_send(o_ptr, t, offs_h, offs_d, s_ot, s_oh, s_od, mask, mask_row, row_ok,
               HAS_MASK: tl.constexpr):
    """An all-to-all send's O tile, zeroed on rows the mask marks empty, and those rows' flags
    (``row_ok`` where there is no mask)."""
    o = tl.load(o_ptr + t * s_ot + offs_h[:, None] * s_oh + offs_d[None, :] * s_od, mask=mask,
                other=0.0)
    valid = row_ok
    if HAS_MASK:
        valid = _row_valid(mask_row, row_ok)
        o = tl.where(valid, o, tl.zeros_like(o))
    return o, valid


@triton.jit
def _load_send_lse(lse_row, offs_h, s_lh, mask_h, valid, HAS_MASK: tl.constexpr):
    """An all-to-all send's fp32 LSE, −inf on rows the mask marks empty."""
    x = tl.load(lse_row + offs_h * s_lh, mask=mask_h, other=0.0).to(tl.float32)
    if HAS_MASK:
        x = tl.where(valid, x, float("-inf"))
    return x


@triton.jit
def merge_kernel(
    o_ptr, lse_ptr, out_ptr, lse_out_ptr, mask_ptr, sink_ptr,
    T, H, D, Q_LEN, MASK_Q,
    s_on, s_ot, s_oh, s_od,
    s_ln, s_lb, s_lq, s_lh,
    s_yt, s_yh, s_yd,
    s_zt, s_zh,
    s_mn, s_mt, s_s,
    N: tl.constexpr, IN_SCALE: tl.constexpr, OUT_SCALE: tl.constexpr, WRITE_LSE: tl.constexpr,
    HAS_MASK: tl.constexpr, MASK_WORD: tl.constexpr, HAS_SINK: tl.constexpr,
    SINK_SCALE: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr, NUM_DB: tl.constexpr,
    PDL: tl.constexpr,
):
    """out[t, h, :] = Σ_n w_n · o[n, t, h, :]; optionally lse_out[t, h] = merged LSE."""
    t, offs_h, offs_d, mask_h, mask, lse_off = _tile(T, H, D, Q_LEN, s_lb, s_lq, NUM_DB, BLOCK_H,
                                                     BLOCK_D)
    _pdl_enter(PDL)
    # every load first, then the math (ptxas still interleaves some of it with the loads)
    xs, vs = _load_lses(lse_ptr + lse_off, s_ln, mask_ptr + (t // MASK_Q) * s_mt, s_mn, t < T,
                        offs_h, s_lh, mask_h, N, HAS_MASK, MASK_WORD)
    sink = _load_sink(sink_ptr, offs_h, s_s, mask_h, HAS_SINK, BLOCK_H)
    os = ()
    o_n = o_ptr + t * s_ot + offs_h[:, None] * s_oh + offs_d[None, :] * s_od
    for _ in tl.static_range(N):
        os = os + (tl.load(o_n, mask=mask, other=0.0),)  # noqa: RUF005
        o_n += s_on
    # the select where its N predicates fit beside the rest (module docstring, "Row mask")
    cs, sink, m = _shard_weights(xs, vs, sink, N, HAS_MASK, HAS_SINK, SINK_SCALE, N <= 4)
    s = _sink_weight(sink, m, IN_SCALE, HAS_SINK, BLOCK_H)
    acc = tl.zeros((BLOCK_H, BLOCK_D), tl.float32)
    for n in tl.static_range(N):
        p = tl.exp2((cs[n] - m) * IN_SCALE)  # 0 when empty
        s += p
        # an empty shard adds 0, even if its o is NaN
        acc += tl.where(p[:, None] > 0, p[:, None] * os[n].to(tl.float32), 0.0)
    # normalised last, so the reciprocal is off the loads' critical path (one-token latency)
    acc *= _reciprocal(s)[:, None]
    tl.store(out_ptr + t * s_yt + offs_h[:, None] * s_yh + offs_d[None, :] * s_yd,
             acc.to(out_ptr.dtype.element_ty), mask=mask)
    _finish(lse_out_ptr, t, offs_h, mask_h, s_zt, s_zh, m, s, IN_SCALE, OUT_SCALE, WRITE_LSE,
            NUM_DB, PDL)


@triton.jit
def rescale_kernel(
    o_ptr, lse_ptr, out_ptr, lse_out_ptr, mask_ptr, sink_ptr,
    RANK, T, H, D, Q_LEN, HC, MASK_Q,
    s_ot, s_oh, s_od,
    s_ln, s_lb, s_lq, s_lh,
    s_yc, s_yt, s_yh, s_yd,
    s_zt, s_zh,
    s_mn, s_mt, s_s,
    N: tl.constexpr, IN_SCALE: tl.constexpr, OUT_SCALE: tl.constexpr, WRITE_LSE: tl.constexpr,
    HAS_MASK: tl.constexpr, MASK_WORD: tl.constexpr, HAS_SINK: tl.constexpr,
    SINK_SCALE: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr, NUM_DB: tl.constexpr,
    PDL: tl.constexpr,
):
    """out[t, h, :] = w_RANK · o[t, h, :] with w from all N gathered LSEs (the AG+RS step).

    Head ``h`` is written to chunk ``h // HC`` (stride ``s_yc``) at head ``h % HC``: with
    ``HC = H / N`` the output is laid out ``[N, T, H/N, D]``, ready for a reduce-scatter by heads
    without a copy; ``HC = H``, ``s_yc = 0`` is the plain ``[T, H, D]``. The sink (if any) is in
    every rank's denominator, so the sum over ranks is the merge with the sink."""
    t, offs_h, offs_d, mask_h, mask, lse_off = _tile(T, H, D, Q_LEN, s_lb, s_lq, NUM_DB, BLOCK_H,
                                                     BLOCK_D)
    _pdl_enter(PDL)
    # every load first (see merge_kernel); this rank's LSE is picked from the N loaded, not reloaded
    o = tl.load(o_ptr + t * s_ot + offs_h[:, None] * s_oh + offs_d[None, :] * s_od, mask=mask,
                other=0.0)
    xs, vs = _load_lses(lse_ptr + lse_off, s_ln, mask_ptr + (t // MASK_Q) * s_mt, s_mn, t < T,
                        offs_h, s_lh, mask_h, N, HAS_MASK, MASK_WORD)
    sink = _load_sink(sink_ptr, offs_h, s_s, mask_h, HAS_SINK, BLOCK_H)
    # never the select: picking this rank's LSE already takes N predicates (module docstring)
    cs, sink, m = _shard_weights(xs, vs, sink, N, HAS_MASK, HAS_SINK, SINK_SCALE, False)
    s = _sink_weight(sink, m, IN_SCALE, HAS_SINK, BLOCK_H)
    x_r = tl.full((BLOCK_H,), float("-inf"), tl.float32)
    for n in tl.static_range(N):
        s += tl.exp2((cs[n] - m) * IN_SCALE)  # 0 when empty
        x_r = tl.where(RANK == n, cs[n], x_r)  # noqa: SIM300 (RANK is a tensor, n a constexpr)
    w = (tl.exp2((x_r - m) * IN_SCALE) * _reciprocal(s))[:, None]
    out_h = (offs_h // HC).to(tl.int64) * s_yc + (offs_h % HC) * s_yh
    tl.store(out_ptr + t * s_yt + out_h[:, None] + offs_d[None, :] * s_yd,
             tl.where(w > 0, w * o.to(tl.float32), 0.0).to(out_ptr.dtype.element_ty), mask=mask)
    _finish(lse_out_ptr, t, offs_h, mask_h, s_zt, s_zh, m, s, IN_SCALE, OUT_SCALE, WRITE_LSE,
            NUM_DB, PDL)


@triton.jit
def pack_a2a_kernel(
    o_ptr, lse_ptr, mask_ptr, o_dst_ptr, lse_dst_ptr,
    T, H, D, HC, MASK_Q,
    s_ot, s_oh, s_od,
    s_lt, s_lh,
    s_mt,
    s_on_dst, s_ln_dst,
    HAS_MASK: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_D: tl.constexpr, NUM_DB: tl.constexpr,
    PDL: tl.constexpr,
):
    """The all-to-all send buffer in one pass: head ``h`` of row ``t`` goes to destination
    ``j = h // HC``, whose message holds ``O [T, HC, D]`` (contiguous, ``o_dst_ptr + j·s_on_dst``)
    and the fp32 LSE ``[T, HC]`` (``lse_dst_ptr + j·s_ln_dst``). Rows the mask marks empty send
    ``O = 0`` and ``LSE = −inf``. The LSE is written by the programs of the first dim block."""
    t, offs_h, offs_d, mask_h, mask, lse_off = _tile(T, H, D, 1, s_lt, 0, NUM_DB, BLOCK_H,
                                                     BLOCK_D)
    _pdl_enter(PDL)
    o, valid = _load_send(o_ptr, t, offs_h, offs_d, s_ot, s_oh, s_od, mask,
                          mask_ptr + (t // MASK_Q) * s_mt, t < T, HAS_MASK)
    j = (offs_h // HC).to(tl.int64)
    row = t * HC + offs_h % HC  # [BLOCK_H] int64: the row of [T, HC] within a message
    tl.store(o_dst_ptr + (j * s_on_dst + row * D)[:, None] + offs_d[None, :],
             o.to(o_dst_ptr.dtype.element_ty), mask=mask)
    if tl.program_id(0) % NUM_DB == 0:
        x = _load_send_lse(lse_ptr + lse_off, offs_h, s_lh, mask_h, valid, HAS_MASK)
        tl.store(lse_dst_ptr + j * s_ln_dst + row, x, mask=mask_h)
    _pdl_exit(PDL)
