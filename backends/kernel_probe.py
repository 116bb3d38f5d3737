"""What a decode kernel really returns: build a problem that makes mistakes visible, run the
adapter on it and infer the observed contract (layout, base, dtype, empty-row value, output error).

The inputs have batch ≠ heads ≠ q_len, logits large enough that |lse| ≳ 2, a one-key row, an empty
row that is not first, shuffled pages and a strided output buffer. The LSE is read in every layout
its shape allows, against the fp64 reference in both bases; when neither base fits, the best linear
fit ``lse ≈ a·ln Σ e^s + c`` is reported, so a shifted or scaled LSE is caught. Loading, trust and
the judgement are shared with consumers (:mod:`attn_contracts.backends.runner`,
:func:`attn_contracts.judge.compare`); only the observation is here.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import torch

from attn_contracts.backends.adapter import Adapter
from attn_contracts.backends.problem import DecodeProblem
from attn_contracts.backends.problem import exact_attention
from attn_contracts.backends.problem import make_problem
from attn_contracts.backends.problem import tolerance
from attn_contracts.findings import error_text
from attn_contracts.judge import EmptyRows
from attn_contracts.judge import Observed
from attn_contracts.judge import declared_lse
from attn_contracts.records import LOG2E
from attn_contracts.records import CapabilityRecord
from attn_contracts.records import LseSpec

__all__ = ["capability_skip", "infer", "observe_empty_rows", "observe_kernel"]

_DTYPE_PREFERENCE = ("bfloat16", "float16", "float32")


def _problem_for(record: CapabilityRecord, adapter: Adapter, device: str, seed: int,
                 small: bool, lens: list[int] | None = None) -> DecodeProblem:
    """The verifier's decode problem for ``record`` (``lens``: these request lengths instead)."""
    dec = record.decode
    dtype_name = next((d for d in _DTYPE_PREFERENCE if d in dec.q_dtypes), dec.q_dtypes[0])
    mla = dec.attention == "mla"
    d_v = dec.head_dims[0] if mla else (128 if 128 in dec.head_dims else dec.head_dims[0])
    q_len = 3 if dec.q_len_gt_1 else 1
    if lens is None:  # batch ≠ heads ≠ q_len; a one-key row; an empty row (zero keys), not first
        lens = [23, 0, 1, 50, 7] if adapter.allows_empty_rows else [23, 2, 1, 50, 7]
        if small:
            lens = [9, 0, 1] if adapter.allows_empty_rows else [9, 2, 1]
    return make_problem(
        seq_lens=lens, q_len=q_len, num_heads=adapter.num_heads or 4,
        num_kv_heads=1 if mla else 2, head_dim=d_v + 64 if mla else d_v, d_v=d_v,
        dtype=getattr(torch, dtype_name), device=device, attention=dec.attention,
        page_size=adapter.page_size, q_scale=2.0, seed=seed)


def _candidates(lse: torch.Tensor, b: int, q: int, t: int, h: int
                ) -> list[tuple[str, bool, int | None, torch.Tensor]]:
    """Every reading of the returned LSE's shape as ``[T, H]``: (layout, q_len_axis, padded, view)."""
    shape = tuple(lse.shape)
    out: list[tuple[str, bool, int | None, torch.Tensor]] = []
    if len(shape) == 2:
        if shape[0] == t and shape[1] >= h:
            out.append(("token_head", False, None if shape[1] == h else shape[1], lse[:, :h]))
        if shape[1] == t and shape[0] >= h:
            out.append(("head_token", False, None if shape[0] == h else shape[0], lse.T[:, :h]))
    elif len(shape) == 3 and shape[0] == b:
        if shape[2] == q and shape[1] >= h:  # [B, H, q]
            view = lse.permute(0, 2, 1)[..., :h].reshape(t, h)
            out.append(("head_token", True, None if shape[1] == h else shape[1], view))
        if shape[1] == q and shape[2] >= h:  # [B, q, H]
            view = lse[..., :h].reshape(t, h)
            out.append(("token_head", True, None if shape[2] == h else shape[2], view))
    return out


def _fit(obs: torch.Tensor, ref: torch.Tensor) -> tuple[float, float, float]:
    """Least-squares ``obs ≈ a·ref + c``: (a, c, max residual)."""
    x = torch.stack([ref, torch.ones_like(ref)], dim=1)
    sol = torch.linalg.lstsq(x, obs.unsqueeze(1)).solution.squeeze(1)
    a, c = float(sol[0]), float(sol[1])
    return a, c, float((obs - (a * ref + c)).abs().max())


def _empty_value(view: torch.Tensor, empty: torch.Tensor) -> str | None:
    if not bool(empty.any()):
        return None
    values = view[empty]
    if bool(values.isnan().all()):
        return "nan"
    if bool((values == math.inf).all()):
        return "+inf"
    if bool((values == -math.inf).all()):
        return "-inf"
    return f"finite({float(values[0]):.4g})"


def infer(p: DecodeProblem, out: torch.Tensor, lse: torch.Tensor,
          buffer: torch.Tensor | None) -> Observed:
    """The observed contract of one run of an adapter."""
    ref_out, ref_lse = exact_attention(p)
    t, h = ref_lse.shape
    rows = torch.repeat_interleave(p.seq_lens.cpu().long(), p.q_len)  # keys per token
    live = (rows > 0)[:, None].expand(t, h)
    tol = tolerance(lse.dtype).lse
    lse64 = lse.detach().double().cpu()
    best: tuple[float, str, bool, int | None, str, torch.Tensor] | None = None
    for layout, qax, padded, view in _candidates(lse64, p.batch, p.q_len, t, h):
        obs, ref = view[live], ref_lse[live]
        for base, scale in (("e", 1.0), ("2", LOG2E)):
            err = float((obs - ref * scale).abs().max()) if obs.numel() else 0.0
            if best is None or err < best[0]:
                best = (err, layout, qax, padded, base, view)
    if best is None:
        return Observed("unknown", False, None, "neither",
                        f"LSE shape {tuple(lse.shape)} fits no [T={t}, H={h}] layout",
                        str(lse.dtype).removeprefix("torch."), None, math.inf, False, None)
    err, layout, qax, padded, base, view = best
    if err > tol:
        a, c, resid = _fit(view[live], ref_lse[live])
        base, fit = "neither", (f"lse ≈ {a:.4f}·ln Σe^s + {c:+.4f} (residual {resid:.3g}); base e "
                                f"is a=1, base 2 is a={LOG2E:.4f}, both with c=0")
    else:
        fit = f"max |error| {err:.2e} as base {base}"
    out_t = out.detach().reshape(t, h, -1).double().cpu()
    out_err = float((out_t[live[:, 0]] - ref_out[live[:, 0]]).abs().max()) if live.any() else 0.0
    out_tol = tolerance(out.dtype).out
    honoured = None if buffer is None else out.data_ptr() == buffer.data_ptr()
    return Observed(layout, qax, padded, base, fit, str(lse.dtype).removeprefix("torch."),
                    _empty_value(view, ~live), out_err, out_err <= out_tol, honoured)


def capability_skip(record: CapabilityRecord, device: str) -> str | None:
    if not device.startswith("cuda"):
        return None
    major, minor = torch.cuda.get_device_capability(torch.device(device))
    cc = major + minor / 10
    lo, hi = record.decode.min_compute_capability, record.decode.max_compute_capability
    if (lo and cc < float(lo)) or (hi and cc > float(hi)):
        return f"compute capability {major}.{minor} outside {lo or 'any'}-{hi or 'any'}"
    return None


#: the empty-row probe's second fill: exact in every output dtype, and no value a kernel writes
_SENTINEL = 4096.0
_EMPTY_LENS = [5, 0, 3]  # the zero-length request is neither first nor last


def _poison_allocator(device: torch.device, nbytes: int, fill: float) -> None:
    """Leave ``fill`` in the CUDA caching allocator's next blocks, so an output the kernel
    allocates itself (``torch.empty``) starts as ``fill`` rather than as whatever was freed
    last: a row it never writes then shows. (The CPU allocator keeps no such blocks; there the
    caller's buffer is the probe.)"""
    if device.type == "cuda":
        for _ in range(2):
            junk = torch.full((nbytes // 4 + 1,), fill, dtype=torch.float32, device=device)
            del junk


def _out_rows(out: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    t = rows.numel()
    return out.detach().reshape(t, -1).float().cpu()[rows]


def _out_fact(first: torch.Tensor, second: torch.Tensor) -> str:
    """What a zero-length request's output rows hold, from a NaN fill and a sentinel fill."""
    if bool((first == 0).all()) and bool((second == 0).all()):
        return "zero"
    if bool(first.isnan().all()):
        if bool((second == _SENTINEL).all()):
            return "undefined"
        if bool(second.isnan().all()):
            return "nan"
    finite = first[first.isfinite()]
    return f"finite({float(finite[0]):.4g})" if finite.numel() else "undefined"


def observe_empty_rows(record: CapabilityRecord, spec: LseSpec, adapter: Adapter, device: str,
                       seed: int) -> EmptyRows:
    """Run the adapter on a batch whose middle request has ``seq_lens == 0``, twice: its output
    buffer filled with NaN, then with a finite sentinel (the caching allocator poisoned alike),
    and read both facts of that request's rows: the LSE in the record's layout, and whether the
    output was written 0, written NaN, or left as it was. A kernel that refuses the input
    (FlashInfer's paged decode documents ``1 <= kv_last_page_len``) is reported as ``raised``."""
    p = _problem_for(record, adapter, device, seed, small=False, lens=_EMPTY_LENS)
    t, h = p.q.shape[:2]
    rows = torch.repeat_interleave(p.seq_lens.cpu().long(), p.q_len) == 0  # [T]
    dev = p.q.device
    seen: list[tuple[torch.Tensor, torch.Tensor, bool]] = []
    for fill in (math.nan, _SENTINEL):
        buffer = p.q.new_full((t, h, p.d_v), fill)
        _poison_allocator(dev, buffer.numel() * buffer.element_size() * 4, fill)
        try:
            out, lse = adapter.run(replace(p, out=buffer))
            if dev.type == "cuda":
                torch.cuda.synchronize(dev)
        except Exception as err:  # the kernel refuses a zero-length request: that is the fact
            return EmptyRows("raised", "raised", adapter.allows_empty_rows, None, error_text(err))
        seen.append((out, lse, out.data_ptr() == buffer.data_ptr()))
    (out1, lse1, honoured), (out2, _, _) = seen
    views = [v for layout, qax, _, v in _candidates(lse1.detach().double().cpu(), p.batch,
                                                     p.q_len, t, h)
             if layout == spec.layout and qax == spec.q_len_axis]
    lse_fact = "unknown"
    if views:
        lse_fact = _empty_value(views[0], rows[:, None].expand(t, h)) or "unknown"
    try:
        out_fact = _out_fact(_out_rows(out1, rows), _out_rows(out2, rows))
    except RuntimeError as err:  # an output of a shape no [T, H, D] reading fits
        return EmptyRows(lse_fact, "unknown", adapter.allows_empty_rows, honoured,
                         error_text(err))
    where = "the caller's buffer" if honoured else "the kernel's own output"
    return EmptyRows(lse_fact, out_fact, adapter.allows_empty_rows, honoured,
                     f"read in {where}, filled with NaN and then {_SENTINEL:g}")


def observe_kernel(record: CapabilityRecord, spec: LseSpec, adapter: Adapter, device: str,
                   seed: int, small: bool) -> tuple[dict[str, Any], Observed | str]:
    """The declared facts a run can check, and the observation (or why the output is unusable),
    with the empty-row probe (:func:`observe_empty_rows`) unless ``small`` (the startup probe).
    The adapter's own exceptions propagate: the pipeline's one exception policy decides."""
    p = _problem_for(record, adapter, device, seed, small)
    buffer = None
    if adapter.accepts_out:  # a strided view inside a larger buffer
        t, h = p.q.shape[:2]
        buffer = p.q.new_full((t, h, 2 * p.d_v), math.nan)[..., ::2]
        p = replace(p, out=buffer)
    declared = declared_lse(spec, str(p.q.dtype).removeprefix("torch."))
    out, lse = adapter.run(p)
    if not (isinstance(out, torch.Tensor) and isinstance(lse, torch.Tensor)):
        return declared, (f"adapter returned ({type(out).__name__}, {type(lse).__name__}), not "
                          "(out, lse) tensors")
    try:
        observed = infer(p, out, lse, buffer)
    except Exception as err:  # tensors of a shape no reading fits (reshape fails)
        return declared, f"adapter output unreadable: {type(err).__name__}: {err}"
    if not small:
        observed.empty = observe_empty_rows(record, spec, adapter, device, seed)
    return declared, observed
