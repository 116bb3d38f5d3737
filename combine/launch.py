"""How the combine's Triton kernels are launched: the grid, PDL, and a launcher that skips
Triton's per-call binding after the first launch of an argument set.

Every kernel of ``_kernels.py`` and ``_direct_kernels.py`` takes its tensors first, then its ints,
then its constexprs; :class:`Launcher` calls it so. Triton is imported on the first launch only.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

import torch

from attn_contracts.combine.tiles import cdiv

__all__ = ["MAX_GRID_YZ", "Launcher", "launch_grid", "launcher", "uses_triton"]

MAX_GRID_YZ = 65535  # grid axes 1 and 2 hold at most this many programs each


def uses_triton(t: torch.Tensor) -> bool:
    """Whether a tensor on this device goes through the Triton kernels (else the torch path)."""
    return t.is_cuda or os.environ.get("TRITON_INTERPRET") == "1"


def launch_grid(t: int, h: int, d: int, block_h: int, block_d: int) -> tuple[int, int, int]:
    """Axis 0: the (head, dim) blocks of a row; rows on axes 1 and 2 (see ``_kernels.py``)."""
    rows = min(t, MAX_GRID_YZ)
    return cdiv(h, block_h) * cdiv(d, block_d), rows, cdiv(t, rows)


@functools.lru_cache(maxsize=64)
def _pdl_capable(device_index: int) -> bool:
    """``griddepcontrol`` needs compute capability 9.0 (Hopper) or newer."""
    return bool(torch.cuda.get_device_capability(device_index) >= (9, 0))


class Prepared:
    """One launch with every decision made: the compiled kernel's launch function, its grid and
    the ints and constexprs that follow the tensors. Calling it does what Triton's own launch does
    once it has bound the arguments and found the compiled kernel: read the current stream and
    hand the pointers to the driver (``CompiledKernel.run``, as ``CompiledKernel[grid]`` calls it).
    Made only where no launch hook is set (a profiler's hooks keep the ordinary path)."""

    __slots__ = ("_device", "_function", "_grid", "_packed", "_run", "_tail")

    def __init__(self, kernel: Any, grid: tuple[int, int, int], tail: tuple[Any, ...],
                 device: int) -> None:
        self._run = kernel.run
        self._function = kernel.function
        self._packed = kernel.packed_metadata
        self._grid = grid
        self._tail = tail
        self._device = device

    def __call__(self, *tensors: torch.Tensor | int) -> None:
        """The kernel's tensors in order (an int is taken as a device address, as Triton's
        launcher takes it: same dtype and alignment as the tensor it was prepared with)."""
        g = self._grid
        self._run(g[0], g[1], g[2], _current_stream(self._device), self._function, self._packed,
                  None, None, None, *tensors, *self._tail)


#: the current CUDA stream of a device, as Triton reads it (``torch._C._cuda_getCurrentRawStream``)
_current_stream: Callable[[int], int] = getattr(torch._C, "_cuda_getCurrentRawStream", None) \
    or (lambda device: 0)


def _no_launch_hooks() -> bool:
    """No launch hook is set (a profiler's): Triton 3.6 keeps them as chains, empty by default."""
    from triton import knobs

    return not any(h is not None and (not hasattr(h, "calls") or h.calls)
                   for h in (knobs.runtime.launch_enter_hook, knobs.runtime.launch_exit_hook))


class Launcher:
    """Launches a Triton kernel. After the first launch of an argument set (same ints, dtypes,
    pointer alignment, constants) it calls the compiled kernel directly and skips Triton's
    per-call binding and cache lookup: about 10 µs less host time per launch on the H200 host.
    Keying on the int values themselves keeps every specialisation Triton would make (``== 1``,
    divisible by 16, 64-bit) exact without recomputing it; the table is bounded. Each launch
    returns its :class:`Prepared` (None in the interpreter): callers that can tell an argument
    set again from their own inputs call it straight away next time.

    ``has_pdl``: the kernel's last constexpr is ``PDL`` (programmatic dependent launch: 0 off, or
    the mode ``_kernels.py`` describes), set here from the call's ``pdl`` and the device; kernels
    without it are never PDL-launched."""

    _MAX_ENTRIES = 4096

    def __init__(self, fn: Any, *, has_pdl: bool = True) -> None:
        self.fn = fn
        self.has_pdl = has_pdl
        self.compiled: dict[tuple[Any, ...], Prepared | None] = {}
        # off for good if this torch or Triton lacks what Prepared calls
        self.direct = hasattr(torch._C, "_cuda_getCurrentRawStream")

    def __call__(self, grid: tuple[int, int, int], tensors: tuple[torch.Tensor, ...],
                 ints: tuple[int, ...], consts: dict[str, Any], num_warps: int,
                 pdl: int = 0, maxnreg: int = 0) -> Prepared | None:
        """``tensors`` then ``ints`` are the kernel's leading parameters, in order; ``consts`` its
        constexprs in signature order, ``PDL`` (last) left out: it is set here. ``maxnreg``: the
        register cap handed to ptxas (0: none; the interpreter has no ptxas)."""
        if not tensors[0].is_cuda:  # the interpreter: no compiled kernel to cache, no PDL
            extra_consts = {"PDL": 0} if self.has_pdl else {}
            self.fn[grid](*tensors, *ints, **consts, **extra_consts, num_warps=num_warps)
            return None
        device = tensors[0].get_device()
        pdl = int(pdl) if pdl and self.has_pdl and _pdl_capable(device) else 0
        if self.has_pdl:
            consts = {**consts, "PDL": pdl}
        key = (device, num_warps, maxnreg, grid, *consts.values(), *ints,
               *[(x.dtype, x.data_ptr() % 16 == 0) for x in tensors])
        prepared = self.compiled.get(key) if self.direct else None
        if prepared is not None:
            try:
                prepared(*tensors)
                return prepared
            except TypeError:
                self.direct = False
        extra: dict[str, Any] = {"launch_pdl": True} if pdl else {}
        if maxnreg:
            extra["maxnreg"] = maxnreg
        kernel = self.fn[grid](*tensors, *ints, **consts, num_warps=num_warps, **extra)
        if not self.direct or not _no_launch_hooks():
            return None
        prepared = Prepared(kernel, grid, (*ints, *consts.values()), device)
        if len(self.compiled) >= self._MAX_ENTRIES:
            self.compiled.clear()
        self.compiled[key] = prepared
        return prepared


@functools.cache
def launcher(name: str) -> Launcher:
    """The launcher of kernel ``name`` of ``_kernels.py`` (every one takes ``PDL``) or, for a
    ``direct_*`` name, of ``_direct_kernels.py`` (none does)."""
    if name.startswith("direct_"):
        from attn_contracts.combine import _direct_kernels

        return Launcher(getattr(_direct_kernels, name), has_pdl=False)
    from attn_contracts.combine import _kernels

    return Launcher(getattr(_kernels, name))
