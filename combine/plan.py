"""The planner: a record and a DCP setting in, an immutable combine plan out.

``plan_combine`` runs at engine startup. It reads everything the combine must know from the record
(base, LSE layout and padding, dtype, empty-row value), checks the setting (``ContractError`` with
``AC006``, ``AC001``, ``AC010``, ``AC015`` before any request), fixes the kernel variant and its
tiles, and says why. The hot path only calls the plan::

    plan = plan_combine(record, mode="merge", world_size=4, num_heads=128, head_dim=512,
                        out_dtype=torch.bfloat16)
    out = plan(partial_out, partial_lse)        # [N, T, H, D], LSE as the kernel returned it
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

from attn_contracts.checks import check_combinable, check_heads_divisible
from attn_contracts.combine.ops import OUT_DTYPES, KernelConfig, default_config, merge, rescale
from attn_contracts.findings import Code, ContractError, Finding
from attn_contracts.records import BASES, CapabilityRecord, LseSpec
from attn_contracts.registry import get as get_record
from attn_contracts.sources import parse_record

__all__ = ["MODES", "CombinePlan", "plan_combine"]

Mode = Literal["merge", "ag_rs", "a2a", "ar"]
MODES: tuple[str, ...] = ("merge", "ag_rs", "a2a", "ar")
_KERNEL = {"merge": "merge", "a2a": "merge", "ag_rs": "rescale", "ar": "rescale"}
_HEAD_SCATTERED = ("ag_rs", "a2a")
_MODE_WHY = {
    "merge": "merge: N partials of all H heads → one output (split-KV / cascade merge)",
    "a2a": "a2a: one all-to-all of O and fp32 LSE, then merge N partials of H/N heads",
    "ag_rs": "ag_rs: all-gather LSE, rescale the local partial, reduce-scatter O by heads",
    "ar": "ar: rescale the local partial, all-reduce O (every rank gets all heads)",
}


@dataclass(frozen=True)
class CombinePlan:
    """What to launch for one (record, setting); built once, called on every decode step."""

    record: CapabilityRecord
    mode: str
    kernel: str  # "merge" or "rescale"
    world_size: int
    num_heads: int
    local_heads: int  # heads one launch sees (H / world_size after an all-to-all)
    head_dim: int
    out_dtype: torch.dtype
    return_lse: bool
    lse_out_base: str
    config: KernelConfig | None  # None: tiles chosen per call from (N, T, H, D)
    reasons: tuple[str, ...]
    #: allow programmatic dependent launch where the tiles ask for it (Hopper and newer)
    pdl: bool = True
    #: communication buffers of the DCP collectives, per (kind, tokens, device); see dcp.py
    buffers: dict[tuple[str, int, str], torch.Tensor] = field(
        default_factory=dict, compare=False, repr=False)

    @property
    def lse(self) -> LseSpec:
        return _spec(self.record)

    @property
    def base(self) -> str:
        return self.lse.base

    # --- reading the kernel's LSE -------------------------------------------------------------
    def lse_view(self, lse: torch.Tensor, *, heads: int | None = None,
                 stacked: bool = True) -> torch.Tensor:
        """The record-layout LSE (with a leading N axis when ``stacked``) as a strided
        ``[N, T, H]`` or ``[N, B, Q, H]`` view: transposed, padded heads dropped, never copied."""
        heads = heads or self.local_heads
        spec = self.lse
        want = (1 if stacked else 0) + (3 if spec.q_len_axis else 2)
        if lse.dim() != want:
            raise ValueError(
                f"{self.record.name}: LSE of layout {_layout_text(spec, stacked)} has {want} dims,"
                f" found shape {tuple(lse.shape)}")
        if spec.layout == "head_token":
            lse = lse.transpose(-1, -2)  # [.., H, T] → [.., T, H]; [.., B, H, Q] → [.., B, Q, H]
        slots = spec.padded_heads or heads
        if lse.shape[-1] != slots:
            raise ValueError(f"{self.record.name}: LSE head axis has {lse.shape[-1]} entries, "
                             f"expected {slots} ({'padded heads' if spec.padded_heads else 'H'})")
        return lse[..., :heads] if spec.padded_heads else lse

    # --- launching ----------------------------------------------------------------------------
    def launch(self, partial_out: torch.Tensor, lse: torch.Tensor, *, rank: int | None = None,
               out: torch.Tensor | None = None, lse_out: torch.Tensor | None = None) -> Any:
        """Run the plan's kernel on an LSE already in ``[N, T, H]`` / ``[N, B, Q, H]`` form."""
        kwargs: dict[str, Any] = dict(
            base=self.base, out=out, lse_out=lse_out, return_lse=self.return_lse,
            lse_out_base=self.lse_out_base, out_dtype=self.out_dtype, config=self.config,
            pdl=self.pdl)
        if self.kernel == "merge":
            return merge(partial_out, lse, **kwargs)
        if rank is None:
            raise ValueError(f"mode {self.mode!r} rescales one rank's partial: pass rank=")
        return rescale(partial_out, lse, rank, **kwargs)

    def __call__(self, partial_out: torch.Tensor, partial_lse: torch.Tensor, *,
                 out: torch.Tensor | None = None, lse_out: torch.Tensor | None = None,
                 rank: int | None = None) -> Any:
        """``merge``/``a2a``: ``partial_out [N, T, H, D]`` (or ``[N, B, q, H, D]``) and the
        stacked LSE in the record's layout. ``ag_rs``/``ar``: one rank's ``partial_out [T, H, D]``,
        the gathered LSE ``[N, ...record layout]`` and ``rank``. Returns ``out`` or
        ``(out, lse)``."""
        if self.kernel == "merge" and partial_out.dim() == 5:  # [N, B, q, H, D] decode layout
            partial_out = partial_out.flatten(1, 2)
        heads = partial_out.shape[-2]
        return self.launch(partial_out, self.lse_view(partial_lse, heads=heads), rank=rank,
                           out=out, lse_out=lse_out)

    def explain(self) -> str:
        return "\n".join(f"- {r}" for r in self.reasons)


def _spec(record: CapabilityRecord) -> LseSpec:
    if not isinstance(record.lse, LseSpec):  # plan_combine refuses these with AC006 first
        raise TypeError(f"{record.name} returns no LSE")
    return record.lse


def _layout_text(spec: LseSpec, stacked: bool) -> str:
    n = "N, " if stacked else ""
    h = f"H≤{spec.padded_heads}" if spec.padded_heads else "H"
    if spec.q_len_axis:
        return f"[{n}B, {h}, q_len]" if spec.layout == "head_token" else f"[{n}B, q_len, {h}]"
    return f"[{n}{h}, T]" if spec.layout == "head_token" else f"[{n}T, {h}]"


def _resolve(record: CapabilityRecord | Mapping[str, Any] | str) -> CapabilityRecord:
    if isinstance(record, str):
        return get_record(record)
    recs, findings = parse_record(record)
    if findings:
        raise ContractError(findings, "cannot plan a combine for an invalid record")
    return recs[0]


def _dtype(d: torch.dtype | str) -> torch.dtype:
    value = getattr(torch, d, None) if isinstance(d, str) else d
    if not isinstance(value, torch.dtype):
        raise ValueError(f"out_dtype {d!r} is not a torch dtype (allowed: {OUT_DTYPES})")
    return value


def plan_combine(
    record: CapabilityRecord | Mapping[str, Any] | str,
    *,
    mode: str,
    world_size: int,
    num_heads: int,
    head_dim: int,
    out_dtype: torch.dtype | str,
    return_lse: bool = False,
    lse_out_base: str | None = None,
    config: KernelConfig | None = None,
    pdl: bool = True,
) -> CombinePlan:
    """Build (or fetch from the cache) the combine plan for a record and a DCP setting.

    ``mode``: ``"merge"`` (local N-way merge), ``"a2a"``, ``"ag_rs"`` or ``"ar"`` (the DCP
    collectives, see :func:`attn_contracts.combine.dcp.dcp_combine`). ``world_size``: the number
    of partials / DCP ranks. ``pdl=False``: never use programmatic dependent launch (by default
    latency-bound launches use it on Hopper and newer; it overlaps only the launch, each kernel
    still waits for the one before). Raises :class:`ContractError` when the record cannot be
    combined.
    """
    if mode not in MODES:
        raise ValueError(f"mode {mode!r} is not one of {MODES}")
    for name, v in (("world_size", world_size), ("num_heads", num_heads), ("head_dim", head_dim)):
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ValueError(f"{name} must be an int >= 1, found {v!r}")
    if lse_out_base is not None and lse_out_base not in BASES:
        raise ValueError(f"lse_out_base {lse_out_base!r} is not supported "
                         f"(allowed: {', '.join(map(repr, BASES))})")
    return _plan(_resolve(record), mode, world_size, num_heads, head_dim, _dtype(out_dtype),
                 return_lse, lse_out_base, config, pdl)


@functools.lru_cache(maxsize=256)
def _plan(record: CapabilityRecord, mode: str, world_size: int, num_heads: int, head_dim: int,
          out_dtype: torch.dtype, return_lse: bool, lse_out_base: str | None,
          config: KernelConfig | None, pdl: bool) -> CombinePlan:
    findings = check_combinable(record, mode)
    if mode in _HEAD_SCATTERED:
        findings += check_heads_divisible(record, num_heads, world_size, mode)
    findings += _readable(record, num_heads, head_dim, out_dtype)
    if findings:
        raise ContractError(findings, f"cannot plan a {mode} combine for {record.name}")
    spec = _spec(record)
    local_heads = num_heads // world_size if mode == "a2a" else num_heads
    out_base = lse_out_base or spec.base
    reasons = (
        _MODE_WHY[mode] + f"; kernel {_KERNEL[mode]}, world size {world_size}",
        f"base {spec.base}: record declares lse.base = {spec.base!r} ({record.evidence}: "
        f"{record.source}); compiled in as the exponent scale",
        f"layout {_layout_text(spec, True)}: read through strides"
        + (f", the first {local_heads} of {spec.padded_heads} head slots" if spec.padded_heads
           else "") + ", no copy",
        f"LSE dtype {spec.dtype}: loaded and accumulated in fp32",
        f"empty rows yield {spec.empty_row}: read as −inf (NaN and +inf always are), an all-empty "
        "row gives o = 0, LSE = −inf",
        (f"merged LSE returned in base {out_base}" if return_lse else "merged LSE not returned")
        + (f" (converted from base {spec.base})" if return_lse and out_base != spec.base else ""),
        f"output {str(out_dtype).removeprefix('torch.')}, fp32 accumulation; "
        + _tiles_text(config, world_size if _KERNEL[mode] == "merge" else 1, world_size,
                      local_heads, head_dim),
        "PDL (programmatic dependent launch) " + ("for one-wave grids on compute capability >= 9.0"
                                                  if pdl else "off"),
    )
    return CombinePlan(record, mode, _KERNEL[mode], world_size, num_heads, local_heads, head_dim,
                       out_dtype, return_lse, out_base, config, reasons, pdl=pdl)


def _tiles_text(config: KernelConfig | None, n: int, n_lse: int, heads: int, head_dim: int) -> str:
    if config is not None:
        return f"tiles fixed: {config}"
    kernel = "merge" if n > 1 else "rescale"
    one, many = (default_config(max(n, n_lse), t, heads, head_dim, kernel) for t in (1, 256))
    return (f"tiles per call from (N, T, H, D): T=1 → BLOCK_H={one.block_h} BLOCK_D="
            f"{one.block_d} warps={one.num_warps}; T=256 → BLOCK_H={many.block_h} BLOCK_D="
            f"{many.block_d} warps={many.num_warps}")


def _readable(record: CapabilityRecord, num_heads: int, head_dim: int,
              out_dtype: torch.dtype) -> list[Finding]:
    """``AC015``: settings the record says its kernel cannot produce."""
    out: list[Finding] = []
    spec = record.lse
    if isinstance(spec, LseSpec) and spec.padded_heads and num_heads > spec.padded_heads:
        out.append(Finding(Code.AC015, record.name, f"num_heads={num_heads} exceeds the "
                           f"{spec.padded_heads} padded LSE head slots", field="lse.padded_heads",
                           found=num_heads, allowed=f"<= {spec.padded_heads}"))
    if head_dim not in record.decode.head_dims:
        out.append(Finding(Code.AC015, record.name, f"head_dim={head_dim} is not one the kernel "
                           f"produces", field="decode.head_dims", found=head_dim,
                           allowed=", ".join(map(str, record.decode.head_dims))))
    if out_dtype not in OUT_DTYPES:
        out.append(Finding(Code.AC015, record.name, f"out_dtype {out_dtype} is not supported",
                           field="out_dtype", found=str(out_dtype),
                           allowed=", ".join(map(str, OUT_DTYPES))))
    return out
