"""The eager fast path: a call like an earlier one runs the launch that call decided.

A call whose inputs look like an earlier call's (every tensor's shape, strides, dtype, device and
16-byte alignment: :func:`sig`; every option and scalar argument by value and type) passed the
same checks and gets the same tiles, ints and compiled kernel. So the first call checks, decides
and launches, and keeps what it decided (a :class:`KernelCall` or :class:`PackCall`, around
``launch.Prepared``) under that key; a later call reads the key, allocates what the caller did
not pass and launches, about what a bare Triton launch does. A call whose key misses takes the
checked path, as ever; nothing is kept under ``torch.compile``, on the torch path, for a launch
of no rows, or where a launch hook is set (a profiler's).

Two tables (plain dicts), both bounded (emptied when full, so a process that sees ever new
shapes does not grow): :data:`OPS`, the calls of ``ops.merge``/``rescale``/``pack_a2a``, keyed by
those calls' arguments; and :data:`PLANS`, the calls of a plan (``plan(...)``, ``plan.launch``,
``dcp_combine`` at world size 1), keyed by the plan's :attr:`~plan.CombinePlan.token` and the
call's tensors alone (the options are the plan's, decided once).

Why the plans' table lives here and not on the plan: a plan is a cached, shared, frozen value
(``plan_combine`` returns the same object to every caller that asks for the same record and
setting), and state that a call adds must not hang on such a value (STYLE.md). What a call keeps
is not per-call state, such as the buffers a :class:`~workspace.Workspace` owns, but a memo:
the same plan and the same tensor properties always decide the same launch, so calls that share
a plan may share it, and no call can change what another computes. Kept here, the plan stays
immutable (nothing to drop when it is copied or pickled; no mutable field beside its equality);
the key says which plan by a token the plan draws once from :func:`new_token`, never reused in
the process (unlike ``id()``) and drawn afresh by a copy or an unpickled plan, so no entry can
be found through another plan. A workspace is not the home either: calls without one take the
fast path too (``plan(...)``, world size 1), and what is kept is not the workspace's to own.
"""

from __future__ import annotations

import itertools
from typing import Any

import torch

from attn_contracts.combine.launch import Prepared

__all__ = ["MAX_ENTRIES", "OPS", "PLANS", "KernelCall", "PackCall", "combine_key",
           "keep", "kernel_call", "lookup", "new_token", "pack_key", "sig"]


#: the decided calls of ``merge``, ``rescale`` and ``pack_a2a``, by key (plain dicts: a lookup is
#: ``dict.get`` itself, about three times faster than on a dict subclass)
OPS: dict[tuple[Any, ...], Any] = {}
#: the decided calls of plans, keyed by ``(plan.token, entry, ...)``
PLANS: dict[tuple[Any, ...], Any] = {}
MAX_ENTRIES = 4096  # per table


def keep(table: dict[tuple[Any, ...], Any], key: tuple[Any, ...], call: Any,
         max_entries: int = MAX_ENTRIES) -> None:
    """Keep ``call`` in ``table`` for later calls of ``key`` (nothing when there is none): a key
    must say every property of the call's inputs that its checks and its launch read. A full
    table is emptied first, then refilled by the calls that still come."""
    if call is None:
        return
    if len(table) >= max_entries:
        table.clear()
    table[key] = call


_tokens = itertools.count()


def new_token() -> int:
    """A number no other plan of this process has had or will have."""
    return next(_tokens)


def sig(x: torch.Tensor | None) -> tuple[Any, ...] | None:
    """What a launch's decisions read from a tensor (its data only through alignment)."""
    if x is None:
        return None
    return (x.shape, x.stride(), x.dtype, x.get_device(), x.data_ptr() & 15)


def combine_key(kernel: str, partial_out: torch.Tensor, lse: torch.Tensor, rank: Any,
                base: str, options: Any) -> tuple[Any, ...]:
    """The key of a ``merge`` (``rank`` None) or ``rescale`` call: every option by name (an unknown
    one makes a new key, so its first call is refused as ever), tensors by :func:`sig`. The rank
    goes in with its type: ``True == 1`` and ``1.0 == 1``, but only an int is a rank
    (``checks.check_rank``)."""
    get = options.get
    return (kernel, sig(partial_out), sig(lse), rank, rank.__class__, base, tuple(options),
            sig(get("out")), sig(get("lse_out")), sig(get("row_mask")), sig(get("lens")),
            sig(get("sink")), get("return_lse"), get("lse_out_base"), get("out_dtype"),
            get("config"), get("pdl"))


Result = torch.Tensor | tuple[torch.Tensor, torch.Tensor]  # out, or (out, lse_out)


def lookup(kernel: str, partial_out: torch.Tensor, lse: torch.Tensor, rank: Any, base: str,
           options: Any) -> tuple[tuple[Any, ...] | None, Result | None]:
    """``(key, result)`` of a ``merge``/``rescale`` call: its key (None under ``torch.compile``:
    nothing is looked up or kept there) and, for a call like an earlier one, its result,
    launched as that one decided (else None)."""
    if torch.compiler.is_compiling():
        return None, None
    key = combine_key(kernel, partial_out, lse, rank, base, options)
    fast = OPS.get(key)
    if fast is None:
        return key, None
    mask = options.get("row_mask")
    result: Result = fast(partial_out, lse, options.get("out"), options.get("lse_out"),
                          mask if mask is not None else options.get("lens"), options.get("sink"))
    return key, result


def pack_key(partial_out: torch.Tensor, lse: torch.Tensor, send: torch.Tensor, o_bytes: int,
             row_mask: torch.Tensor | None, lens: torch.Tensor | None, config: Any,
             pdl: bool) -> tuple[Any, ...]:
    """The key of a ``pack_a2a`` call."""
    return ("pack", sig(partial_out), sig(lse), sig(send), o_bytes, o_bytes.__class__,
            sig(row_mask), sig(lens), config, pdl)


def kernel_call(prepared: Prepared | None, out: torch.Tensor, lse_out: torch.Tensor | None,
                options: Any) -> KernelCall | None:
    """The decided call of a merge/rescale launch (``prepared``; None where there is none) that
    runs a call like it again: ``out [T, H, D]`` (or head chunks ``[C, T, H/C, D]``) and
    ``lse_out`` are what it wrote, so what a later call allocates has their shapes. The caller
    keeps it under its own key (``OPS`` for ``merge``/``rescale``, ``PLANS`` for a plan)."""
    if prepared is None:
        return None
    return KernelCall(prepared, out.device, tuple(out.shape), out.dtype,
                      tuple(lse_out.shape) if lse_out is not None else None,
                      _is_bool(options.get("row_mask")))


def _is_bool(mask: torch.Tensor | None) -> bool:
    return mask is not None and mask.dtype == torch.bool


class KernelCall:
    """A merge or rescale call decided once: its launch, what to allocate, how to pass the mask."""

    __slots__ = ("bool_mask", "device", "lse_shape", "out_dtype", "out_shape", "prepared")

    def __init__(self, prepared: Prepared, device: torch.device, out_shape: tuple[int, ...],
                 out_dtype: torch.dtype, lse_shape: tuple[int, ...] | None,
                 bool_mask: bool) -> None:
        self.prepared, self.device = prepared, device
        self.out_shape, self.out_dtype, self.lse_shape = out_shape, out_dtype, lse_shape
        self.bool_mask = bool_mask

    def __call__(self, o: torch.Tensor, lse: torch.Tensor, out: torch.Tensor | None,
                 lse_out: torch.Tensor | None, mask: torch.Tensor | None,
                 sink: torch.Tensor | None) -> Any:
        if out is None:
            out = torch.empty(self.out_shape, dtype=self.out_dtype, device=self.device)
        if lse_out is None and self.lse_shape is not None:
            lse_out = torch.empty(self.lse_shape, dtype=torch.float32, device=self.device)
        # a bool mask goes as its address (the kernel reads it as uint8): no view made per call
        self.prepared(o, lse, out, out if lse_out is None else lse_out,
                      lse if mask is None else mask.data_ptr() if self.bool_mask else mask,
                      lse if sink is None else sink)
        return out if lse_out is None else (out, lse_out)


class PackCall:
    """A ``pack_a2a`` call decided once."""

    __slots__ = ("bool_mask", "o_bytes", "prepared")

    def __init__(self, prepared: Prepared, o_bytes: int, bool_mask: bool) -> None:
        self.prepared, self.o_bytes, self.bool_mask = prepared, o_bytes, bool_mask

    def __call__(self, o: torch.Tensor, lse: torch.Tensor, send: torch.Tensor,
                 mask: torch.Tensor | None) -> torch.Tensor:
        # the message's O and LSE parts as addresses (the kernel has their dtypes): no views
        ptr = send.data_ptr()
        self.prepared(o, lse, lse if mask is None else mask.data_ptr() if self.bool_mask else mask,
                      ptr, ptr + self.o_bytes)
        return send
