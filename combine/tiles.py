"""Tile choices of the combine kernels: the heuristic, its result, and the device facts it reads.

No autotuning: plans are built at startup and graphs are captured, so tiles follow from the shape
(and the device's SM count) alone. The values were measured on an H200
(``bench/results/combine-sweep-h200.txt``); :func:`default_config` says why each one is what it is.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch

__all__ = ["CPU_SMS", "MERGE_W4_MAXNREG", "SMALL_N_MERGE_TILE", "KernelConfig", "cdiv",
           "default_config", "next_pow2", "sm_count"]


@dataclass(frozen=True)
class KernelConfig:
    """One launch's tiles: heads and head-dim elements per program, warps, and PDL."""

    block_h: int
    block_d: int
    num_warps: int
    #: programmatic dependent launch (compute capability 9.0 and newer only): 0 off, or the
    #: kernels' PDL mode (``_kernels.py``: 1 wait then trigger, 2 trigger then wait, 3 late)
    pdl: int = 0
    #: the register cap given to ptxas (Triton's ``maxnreg``), 0 for none; see default_config.
    #: ``merge``, ``rescale`` and ``pack_a2a`` honour it (the direct all-to-all's kernels do not)
    maxnreg: int = 0


def cdiv(a: int, b: int) -> int:
    """``ceil(a / b)`` for ints."""
    return -(-a // b)


def next_pow2(x: int) -> int:
    return 1 << max(0, (x - 1).bit_length())


#: streaming multiprocessors assumed where there is no CUDA device (the interpreter, the torch
#: path): an H100/H200's, so CPU runs choose the tiles the H200 would
CPU_SMS = 132


@functools.lru_cache(maxsize=64)
def _cuda_sms(index: int) -> int:
    return int(torch.cuda.get_device_properties(index).multi_processor_count)


def sm_count(device: torch.device | None = None) -> int:
    """The SM count of ``device`` (default: the current CUDA device), read once per device;
    :data:`CPU_SMS` for a CPU device or where CUDA is absent."""
    if device is None:
        if not torch.cuda.is_available():
            return CPU_SMS
        return _cuda_sms(torch.cuda.current_device())
    if device.type != "cuda":
        return CPU_SMS
    return _cuda_sms(device.index if device.index is not None else torch.cuda.current_device())


#: merge tiles of two-way (and one-way) merges: (elements per program, warps); see default_config
SMALL_N_MERGE_TILE = (1024, 4)
#: PDL by grid size, in programs per SM: trigger before the wait up to the first, after it up to
#: the second, none above (see default_config)
PDL_EARLY_PER_SM, PDL_PER_SM = 4, 32
#: the register cap of merges of 3-4 shards on four-warp tiles over more than one wave (see
#: default_config): any cap makes ptxas issue every partial's load first
MERGE_W4_MAXNREG = 64


def default_config(num_partials: int, num_tokens: int, num_heads: int, head_dim: int,
                   kernel: str = "merge", *, sms: int | None = None) -> KernelConfig:
    """Tiles from the shape and ``sms`` (the device's SM count; default: :func:`sm_count` of the
    current device).

    Measured on an H200 (``bench/results/combine-sweep-h200.txt``): one-warp programs are
    fastest, ``merge`` with 256 elements (8 per thread per shard, every shard in flight at once, so
    N multiplies the bytes in flight) and up to 128 of the head dim, ``rescale`` (and
    ``pack``, the a2a send copy: one stream in, one out) with 1024 (32 per thread: it has one
    stream, so each thread needs more in flight) and up to 512. With fewer programs than SMs
    (one-token decode, latency-bound) ``merge`` shrinks its tile to 128 elements and ``rescale``
    spreads 1024 over four warps. PDL is on for grids of at most one wave (4 programs per SM): it
    saved 0.45 µs per launch there and cost 10 % or more on larger grids.

    ``merge`` with N <= 2 (``SMALL_N_MERGE_TILE``): one-warp 256-element programs keep only
    N·16 bytes per thread in flight, and an SM holds at most 32 programs, so about 32 KB per SM:
    by Little's law (≈4.8 TB/s × ≈1 µs loaded latency / 132 SMs ≈ 36 KB) that caps a two-way
    merge near the 58-61 % measured. 1024 elements over two warps (16 per thread per shard, two
    16-byte loads each) give 64 B per thread; at 47 registers (ptxas for sm_90, triton 3.9) an
    SM holds 42 such warps, about 86 KB in flight: what FlashInfer's merge_state gets from its
    128-512-thread blocks. Measured (``bench/results/combine-sweep-targets-h200.md``): 1024
    elements over four warps (8 per thread per shard) were 1-3 % faster than over two, and the
    ``pack`` kernel was fastest with 1024-element, 128-wide tiles over four warps (eight at one
    token) rather than the rescale tiles.

    PDL (``PDL_EARLY_PER_SM``, ``PDL_PER_SM``; ``bench/results/kernel-experiments-h200.md``, issue
    22): grids of at most 4 programs per SM (one token) trigger the next launch before they wait
    (mode 2: 1.17 → 1.08-1.09 µs for a one-token merge, 1.04 → 0.93 for a rescale); grids of at
    most 32 per SM wait, then trigger (mode 1: 7.25 → 6.74 µs at merge (4, 32, 128, 512), 8.23 →
    7.56 at (2, 4096, 8, 128)); larger grids run without (8192 one-warp programs took 7.25 µs
    without PDL and 10.7 with). So ``merge`` with N in 3..4 takes 1024-element, four-warp tiles
    where that grid has at most 32 programs per SM and the 256-element one more than 4: fewer,
    larger programs that PDL can overlap (68 → 73.5 % at (4, 32, 128, 512) and (4, 512, 32, 128)).

    Those four-warp merges of 3-4 shards get a register cap (``MERGE_W4_MAXNREG``) where the grid
    has more than one wave (PDL mode 1). Without one, ptxas (Triton 3.6's, for sm_90) issues two of
    the four partials' loads only after the weights, at 40 registers; with any cap from 48 up it
    issues all four first, at the same 40 (the SASS; ``kernel-experiments-h200.md``, "The register
    cap"). Measured: 74.4 → 77.3 % at (4, 32, 128, 512), 70.7 → 73.7 % at (3, 32, 128, 512),
    73.9 → 75.0 % at (4, 512, 32, 128); but 2.69 → 2.98 µs on the one-wave (3, 100, 40, 128), so
    not with PDL mode 2."""
    return _default_config(num_partials, num_tokens, num_heads, head_dim, kernel,
                           sm_count() if sms is None else sms)


@functools.lru_cache(maxsize=1024)
def _default_config(num_partials: int, num_tokens: int, num_heads: int, head_dim: int,
                    kernel: str, sms: int) -> KernelConfig:
    one_wave = PDL_EARLY_PER_SM * sms  # grids this small are latency-bound
    d2 = next_pow2(head_dim)
    small_n = kernel == "merge" and num_partials <= 2
    if kernel == "merge":
        elems, d_max = SMALL_N_MERGE_TILE[0] if small_n else 256, 128
    else:
        elems, d_max = 1024, 512
    block_d = min(d2, d_max)
    block_h = min(next_pow2(num_heads), max(1, elems // block_d))
    num_warps = 1

    def programs(bh: int, bd: int) -> int:
        return num_tokens * cdiv(num_heads, bh) * cdiv(head_dim, bd)

    if programs(block_h, block_d) < sms:
        if kernel == "merge":
            while programs(block_h, block_d) < sms and block_h * block_d > 128:
                if block_d > 64:
                    block_d //= 2
                else:
                    block_h //= 2
        else:
            block_d = min(d2, 128)
            block_h = min(next_pow2(num_heads), max(1, elems // block_d))
            num_warps = 4
    if small_n:  # keep 16 elements per thread per shard where the tile stayed large
        num_warps = max(1, min(SMALL_N_MERGE_TILE[1], block_h * block_d // 256))
    if kernel == "pack":  # one stream in, one out; 128-wide rows over 4 warps (8 at one token)
        block_d = min(d2, 128)
        block_h = min(next_pow2(num_heads), max(1, 1024 // block_d))
        num_warps = 8 if programs(block_h, block_d) < sms else 4
    if kernel == "merge" and 2 < num_partials <= 4 and programs(block_h, block_d) > one_wave:
        bd = min(d2, 128)
        bh = min(next_pow2(num_heads), max(1, 1024 // bd))
        if programs(bh, bd) <= PDL_PER_SM * sms:
            block_h, block_d, num_warps = bh, bd, 4
    p = programs(block_h, block_d)
    pdl = 2 if p <= one_wave else 1 if p <= PDL_PER_SM * sms else 0
    capped = kernel == "merge" and 2 < num_partials <= 4 and num_warps == 4 and pdl == 1
    return KernelConfig(block_h, block_d, num_warps, pdl=pdl,
                        maxnreg=MERGE_W4_MAXNREG if capped else 0)
