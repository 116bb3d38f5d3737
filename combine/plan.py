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
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import torch
from pydantic import ValidationError

from attn_contracts.checks import SINK_DTYPES
from attn_contracts.checks import CallRefused
from attn_contracts.checks import check_call_lse
from attn_contracts.checks import check_call_partials
from attn_contracts.checks import check_call_sink
from attn_contracts.checks import check_direct
from attn_contracts.checks import check_rank
from attn_contracts.checks import check_row_mask_given
from attn_contracts.checks import check_setting
from attn_contracts.checks import refuse
from attn_contracts.combine import fastpath
from attn_contracts.combine.fastpath import PLANS
from attn_contracts.combine.fastpath import KernelCall
from attn_contracts.combine.fastpath import new_token
from attn_contracts.combine.fastpath import sig
from attn_contracts.combine.ops import CombineOptions
from attn_contracts.combine.ops import launch_checked
from attn_contracts.combine.tiles import KernelConfig
from attn_contracts.combine.tiles import default_config
from attn_contracts.consumer import ConsumerRecord
from attn_contracts.findings import ContractError
from attn_contracts.findings import Finding
from attn_contracts.modes import ModeSpec
from attn_contracts.records import CapabilityRecord
from attn_contracts.records import LseSpec
from attn_contracts.registry import default_registry
from attn_contracts.registry import get as get_record
from attn_contracts.setting import MODES
from attn_contracts.setting import CombineSetting
from attn_contracts.sources import parse_record

__all__ = ["MODES", "CombinePlan", "plan_combine"]

@dataclass(frozen=True)
class CombinePlan:
    """What to launch for one (record, setting); built once, called on every decode step."""

    record: CapabilityRecord
    setting: CombineSetting
    kernel: str  # "merge" or "rescale": the mode table's kernel
    lse_out_base: str
    config: KernelConfig | None  # None: tiles chosen per call from (N, T, H, D)
    reasons: tuple[str, ...]
    # decided once, in __post_init__ (plain attributes: torch.compile traces through them)
    _local_heads: int = field(init=False, repr=False, compare=False)
    _out_dtype: torch.dtype = field(init=False, repr=False, compare=False)
    _lse: LseSpec | None = field(init=False, repr=False, compare=False)
    _needs_row_mask: bool = field(init=False, repr=False, compare=False)
    #: why the mode's kernel would read an empty row's output under weight 0 (None: it cannot)
    _empty_out_unsafe: str | None = field(init=False, repr=False, compare=False)
    #: the launch options every call of the plan passes (the call adds out, lse_out, mask, sink)
    _options: CombineOptions = field(init=False, repr=False, compare=False)
    #: this plan among the plans of the process: its part of the keys under which the fast path
    #: keeps the decided launches of its calls (``fastpath.PLANS``; drawn afresh by a copy)
    token: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        decided = object.__setattr__  # frozen: set once, here
        spec = self.record.lse if isinstance(self.record.lse, LseSpec) else None
        decided(self, "_local_heads", self.setting.heads_per_launch)
        decided(self, "_out_dtype", getattr(torch, self.setting.out_dtype))
        decided(self, "_lse", spec)
        unsafe = None if spec is None else empty_out_unsafe(spec, self.setting.spec)
        decided(self, "_empty_out_unsafe", unsafe)
        decided(self, "_needs_row_mask", self.setting.row_mask or unsafe is not None
                or (spec is not None and spec.empty_row == "undefined"))
        decided(self, "_options", {"return_lse": self.setting.return_lse,
                                   "lse_out_base": self.lse_out_base,
                                   "out_dtype": self._out_dtype, "config": self.config,
                                   "pdl": self.setting.pdl})
        decided(self, "token", new_token())

    def __setstate__(self, state: dict[str, Any]) -> None:
        """A copied or unpickled plan draws its own token: another process's numbers mean other
        plans here, and the decided launches hold this process's compiled kernels."""
        for name, value in {**state, "token": new_token()}.items():
            object.__setattr__(self, name, value)

    # --- the setting's quantities, under the setting's names ---------------------------------
    @property
    def mode(self) -> str:
        return self.setting.mode

    @property
    def world_size(self) -> int:
        return self.setting.world_size

    @property
    def num_heads(self) -> int:
        return self.setting.num_heads

    @property
    def head_dim(self) -> int:
        return self.setting.head_dim

    @property
    def local_heads(self) -> int:
        """Heads one launch sees (H / world_size after an all-to-all)."""
        return self._local_heads

    @property
    def out_dtype(self) -> torch.dtype:
        return self._out_dtype

    @property
    def return_lse(self) -> bool:
        return self.setting.return_lse

    @property
    def pdl(self) -> bool:
        return self.setting.pdl

    @property
    def lse(self) -> LseSpec:
        return self._lse if self._lse is not None else _spec(self.record)

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
            refuse(check_call_lse(self.record.name, shape=tuple(lse.shape),
                                  layout=_layout_text(spec, stacked), dims=want),
                   "the LSE is not in its record's layout")
        given = lse
        if spec.layout == "head_token":
            lse = lse.transpose(-1, -2)  # [.., H, T] → [.., T, H]; [.., B, H, Q] → [.., B, Q, H]
        slots = spec.padded_heads or heads
        if lse.shape[-1] != slots:
            refuse(check_call_lse(self.record.name, shape=tuple(given.shape),
                                  layout=_layout_text(spec, stacked), heads=lse.shape[-1],
                                  slots=slots, padded=bool(spec.padded_heads)),
                   "the LSE is not in its record's layout")
        return lse[..., :heads] if spec.padded_heads else lse

    # --- masks and sinks: what every call must bring ---------------------------------------------
    @property
    def needs_row_mask(self) -> bool:
        """Calls must pass a row mask: the setting says so, the record's empty rows are
        undefined (the kernel cannot run a zero-key row, so what it leaves there is garbage), or
        the mode merges with a kernel that multiplies partials by their weight and the record's
        empty rows are not written as 0 in the output (``lse.empty_out``; ``fi_a2a``)."""
        return self._needs_row_mask

    def missing_mask_finding(self) -> Finding:
        """The ``AC025`` a call without a row mask gets (``checks.check_row_mask_given``)."""
        return check_row_mask_given(self.record.name, self.setting.model_copy(
            update={"row_mask": True}) if not self.needs_row_mask else self.setting,
            self.lse.empty_row, False, empty_out_unsafe=self._empty_out_unsafe)[0]

    def check_row_mask(self, given: bool) -> None:
        """Refuse (``AC025``) a call without a row mask (or ``lens``) where the plan needs one."""
        if not given and self.needs_row_mask:
            refuse(check_row_mask_given(self.record.name, self.setting, self.lse.empty_row,
                                        given, empty_out_unsafe=self._empty_out_unsafe),
                   "a row mask is required")

    def check_sink(self, sink: torch.Tensor | None) -> None:
        """A plan made with ``sink=True`` takes the per-head sink logits ``[H]`` (a float dtype,
        natural-log units) on every call, and one made without refuses them: the kernels would
        otherwise count a sink nobody planned (``AC027``, ``checks.check_call_sink``)."""
        if sink is None and not self.setting.sink:
            return
        if sink is not None and self.setting.sink and sink.dim() == 1 \
                and sink.shape[0] == self.num_heads and sink.dtype in _SINK_DTYPES:
            return
        refuse(check_call_sink(self.record.name, self.setting,
                               shape=None if sink is None else tuple(sink.shape),
                               dtype=None if sink is None else _dtype_name(sink.dtype)),
               "the sink does not match the plan")

    def check_partials(self, partial_out: torch.Tensor, *, heads: int | None = None,
                       stacked: bool | None = None, world: int | None = None,
                       gathered: int | None = None) -> None:
        """Refuse (``AC027``) partials of another N, H, D or dtype than the plan's: ``stacked``
        ``[N, T, H, D]`` for a merge kernel, else one rank's ``[T, H, D]``; ``heads`` default:
        the heads one launch sees; ``gathered``: the N of the LSEs a rescale weighs against."""
        stacked = self.kernel == "merge" if stacked is None else stacked
        heads = self.local_heads if heads is None else heads
        shape = partial_out.shape
        if partial_out.dim() == (4 if stacked else 3) and shape[-2] == heads \
                and shape[-1] == self.head_dim and partial_out.dtype == self.out_dtype \
                and (not stacked or shape[0] == self.world_size) \
                and (world is None or world == self.world_size) \
                and (gathered is None or gathered == self.world_size):
            return
        refuse(check_call_partials(self.record.name, self.setting, shape=tuple(shape),
                                   dtype=_dtype_name(partial_out.dtype), stacked=stacked,
                                   heads=heads, world=world, gathered=gathered),
               f"the call does not match its {self.mode} plan")

    # --- launching ----------------------------------------------------------------------------
    # What every launch of the plan passes is decided once (``_options``); a call whose tensors
    # look like an earlier call's (``fastpath.sig``: shape, strides, dtype, device, alignment)
    # passed the same checks and runs the same decided launch (``fastpath.KernelCall``), kept in
    # ``fastpath.PLANS`` under ``(self.token, entry, ...)``: later calls compare a key and launch.
    # A call that misses takes the checked path, as ever.
    def launch(self, partial_out: torch.Tensor, lse: torch.Tensor, *, rank: int | None = None,
               out: torch.Tensor | None = None, lse_out: torch.Tensor | None = None,
               row_mask: torch.Tensor | None = None, lens: torch.Tensor | None = None,
               sink: torch.Tensor | None = None) -> Any:
        """Run the plan's kernel on an LSE already in ``[N, T, H]`` / ``[N, B, Q, H]`` form;
        ``row_mask [N, T]`` (bool) or ``lens [N, B]`` and ``sink [H]`` as the plan's setting
        asks (no plan-level checks: :meth:`__call__` and ``dcp_combine`` made them)."""
        return self.decided_launch(partial_out, lse, rank, out, lse_out, row_mask, lens, sink)[0]

    def decided_launch(self, partial_out: torch.Tensor, lse: torch.Tensor, rank: int | None,
                       out: torch.Tensor | None, lse_out: torch.Tensor | None,
                       row_mask: torch.Tensor | None, lens: torch.Tensor | None,
                       sink: torch.Tensor | None) -> tuple[Any, KernelCall | None]:
        """:meth:`launch`, and the decided launch that runs this argument set again (None where
        there is none: the torch path, no rows, a launch hook, ``torch.compile``)."""
        if torch.compiler.is_compiling():
            return self._launch(partial_out, lse, rank, out, lse_out, row_mask, lens, sink)[0], None
        key = (self.token, "launch", sig(partial_out), sig(lse), rank, rank.__class__, sig(out),
               sig(lse_out), sig(row_mask), sig(lens), sig(sink))
        fast = PLANS.get(key)
        if fast is not None:
            return fast(partial_out, lse, out, lse_out,
                        row_mask if row_mask is not None else lens, sink), fast
        result, call = self._launch(partial_out, lse, rank, out, lse_out, row_mask, lens, sink)
        fastpath.keep(PLANS, key, call)
        return result, call

    def _launch(self, partial_out: torch.Tensor, lse: torch.Tensor, rank: int | None,
                out: torch.Tensor | None, lse_out: torch.Tensor | None,
                row_mask: torch.Tensor | None, lens: torch.Tensor | None,
                sink: torch.Tensor | None) -> tuple[Any, KernelCall | None]:
        options: CombineOptions = {"out": out, "lse_out": lse_out, **self._options}
        if row_mask is not None:
            options["row_mask"] = row_mask
        if lens is not None:
            options["lens"] = lens
        if sink is not None:
            options["sink"] = sink
        if self.kernel == "rescale" and rank is None:  # check_rank wants an int: always refused
            raise CallRefused(check_rank(self.record.name, rank, lse.shape[0]),
                              f"mode {self.mode!r} rescales one rank's partial: pass rank=")
        return launch_checked(partial_out, lse, None if self.kernel == "merge" else rank,
                              base=self.base, options=options)

    def __call__(self, partial_out: torch.Tensor, partial_lse: torch.Tensor, *,
                 out: torch.Tensor | None = None, lse_out: torch.Tensor | None = None,
                 rank: int | None = None, row_mask: torch.Tensor | None = None,
                 lens: torch.Tensor | None = None, sink: torch.Tensor | None = None) -> Any:
        """``merge``/``a2a``: ``partial_out [N, T, H, D]`` (or ``[N, B, q, H, D]``; ``H / N``
        heads for an all-to-all mode's merge) and the stacked LSE in the record's layout.
        ``ag_rs``/``ar``: one rank's ``partial_out [T, H, D]``, the gathered LSE
        ``[N, ...record layout]`` and ``rank``. ``row_mask [N, T]`` (bool, True where the shard
        holds keys for the row) or ``lens [N, B]`` (local lengths, uniform ``q_len``) and
        ``sink [H]`` (float, natural-log logits) as the setting asks. Partials of another N, H, D
        or dtype than the plan's are refused (``AC027``). Returns ``out`` or ``(out, lse)``."""
        key = None
        if not torch.compiler.is_compiling():
            key = (self.token, "call", sig(partial_out), sig(partial_lse), rank, rank.__class__,
                   sig(out), sig(lse_out), sig(row_mask), sig(lens), sig(sink))
            fast = PLANS.get(key)
            if fast is not None:  # an earlier call of these inputs passed the checks below
                return fast(partial_out, partial_lse, out, lse_out,
                            row_mask if row_mask is not None else lens, sink)
        o = partial_out
        if self.kernel == "merge" and o.dim() == 5:  # [N, B, q, H, D] decode layout
            o = o.flatten(1, 2)
        self.check_partials(o)
        self.check_row_mask(row_mask is not None or lens is not None)
        self.check_sink(sink)
        view = self.lse_view(partial_lse, heads=o.shape[-2])
        if self.kernel == "rescale":  # one rank's partial: N comes from the gathered LSE alone
            self.check_partials(o, gathered=view.shape[0])
        # straight to the launch, not through decided_launch: its key (of the views) would be a
        # second key computed and kept for this one call
        result, call = self._launch(o, view, rank, out, lse_out, row_mask, lens, sink)
        # the views start where the inputs do (no copy was made): the launch takes the inputs
        if key is not None and o.data_ptr() == partial_out.data_ptr() \
                and view.data_ptr() == partial_lse.data_ptr():
            fastpath.keep(PLANS, key, call)
        return result

    def explain(self) -> str:
        return "\n".join(f"- {r}" for r in self.reasons)

    def as_consumer(self) -> ConsumerRecord:
        """This plan as the consumer end of its edge: it reads the record's base and layout
        through strides, treats −inf, +inf and NaN as empty and yields 0 for all-empty rows; a
        mode that merges with another library's kernel (``fi_a2a``) is NaN-safe at weight 0
        only through the row mask the plan applies before it."""
        spec = self.lse
        fused = bool(self.setting.spec.consumer)
        return ConsumerRecord.model_validate({
            "name": f"attn_contracts.plan.{self.mode}", "library": "attn-contracts",
            "source": f"attn_contracts.combine.plan for {self.record.name}",
            "evidence": "measured", "base": {"kind": "fixed", "base": spec.base},
            "lse": {"layouts": [spec.layout], "states": "first",
                    "dtypes": ["float32", "bfloat16", "float16"]},
            "empty": {"reads_as_empty": ["-inf", "+inf", "nan"], "all_empty": "zero",
                      "zero_weight_nan_safe": not fused,
                      "accepts_row_mask": self.setting.row_mask or fused},
            "output": {"returns_lse": self.return_lse,
                       "lse_base": self.lse_out_base if self.return_lse else None}})


_SINK_DTYPES = tuple(getattr(torch, name) for name in SINK_DTYPES)


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def empty_out_unsafe(spec: LseSpec, mode: ModeSpec) -> str | None:
    """Why a call of ``mode`` must mask the rows a shard has no keys for because of what their
    *output* holds (None where it need not): the mode merges with another library's kernel
    (``ModeSpec.consumer``) whose consumer record says it multiplies partials by their weight
    (``0 · NaN = NaN``), and the record does not say its empty rows are written as 0
    (``lse.empty_out``; absent reads as undefined). This project's kernels select weight-0
    partials away, so its own modes never need it."""
    if not mode.consumer or spec.empty_output == "zero":
        return None
    try:
        consumer = default_registry().consumer(mode.consumer)
    except Exception:  # a registry without the record: fail closed, as an absent fact does
        consumer = None
    if consumer is not None and consumer.empty.zero_weight_nan_safe:
        return None
    held = {"nan": "NaN", "undefined": "whatever the buffer held"}[spec.empty_output]
    declared = (f"lse.empty_out = {spec.empty_out!r}" if spec.empty_out is not None else
                "lse.empty_out absent, read as 'undefined'")
    return (f"mode {mode.name!r} merges with {mode.consumer}, which multiplies each partial by "
            f"its weight (0 · NaN = NaN), and an empty row's output holds {held} ({declared})")


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
    """The record by name, or the given one re-validated (``model_copy(update=...)`` and
    ``model_construct`` skip validation, so nothing enters a plan unchecked)."""
    if isinstance(record, str):
        return get_record(record)
    raw = record.model_dump() if isinstance(record, CapabilityRecord) else record
    recs, findings = parse_record(raw)
    if findings or not recs or not isinstance(recs[0], CapabilityRecord):
        raise ContractError(findings, "cannot plan a combine for an invalid record")
    return recs[0]


def plan_combine(
    record: CapabilityRecord | Mapping[str, Any] | str,
    setting: CombineSetting | None = None,
    *,
    config: KernelConfig | None = None,
    **fields: Any,
) -> CombinePlan:
    """Build (or fetch from the cache) the combine plan for a record and a setting.

    ``setting``: a :class:`~attn_contracts.setting.CombineSetting`; or its fields as keywords
    (``mode=, world_size=, num_heads=, head_dim=, out_dtype=`` ...; ``out_dtype`` may be a torch
    dtype). ``config``: fixed tiles (default: chosen per call from the shape). Raises
    :class:`ContractError` with every reason the record cannot be combined so
    (:func:`attn_contracts.checks.check_setting`), ``ValueError`` for a malformed setting.
    """
    if setting is None:
        try:
            setting = CombineSetting(**fields)
        except ValidationError as err:
            raise ValueError(f"invalid combine setting: {_first_errors(err)}") from None
    elif fields:
        raise ValueError(f"pass a setting or its fields, not both (got {sorted(fields)})")
    else:
        setting = CombineSetting.model_validate(setting.model_dump())
    return _plan(_resolve(record), setting, config)


def _first_errors(err: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']} (found {e.get('input')!r})"
                     for e in err.errors(include_url=False))


@functools.lru_cache(maxsize=256)
def _plan(record: CapabilityRecord, setting: CombineSetting,
          config: KernelConfig | None) -> CombinePlan:
    findings = check_setting(record, setting)
    if setting.spec.collective == "symmetric_memory":
        from attn_contracts.combine.direct import direct_unavailable_here

        findings += check_direct(record, setting, direct_unavailable_here(setting.out_dtype))
    elif setting.spec.collective == "fused":
        from attn_contracts.combine.fused import fused_unavailable_here

        findings += check_direct(record, setting, fused_unavailable_here(setting))
    if findings:
        raise ContractError(findings, f"cannot plan a {setting.mode} combine for {record.name}")
    spec = _spec(record)
    out_base = setting.lse_out_base or spec.base
    return CombinePlan(record, setting, setting.spec.kernel, out_base, config,
                       _reasons(record, spec, setting, out_base, config))


def _reasons(record: CapabilityRecord, spec: LseSpec, s: CombineSetting, out_base: str,
             config: KernelConfig | None) -> tuple[str, ...]:
    kernel = s.spec.kernel
    empty = (f"empty rows yield {spec.empty_row}: read as −inf (NaN and +inf always are)"
             if spec.empty_row != "undefined" else
             "empty rows are undefined (the kernel cannot run a zero-key row): every call must "
             "pass a row mask, or it is refused (AC025)")
    unsafe = empty_out_unsafe(spec, s.spec)
    empty += (f"; their output: {unsafe}: every call must pass a row mask (those rows are zeroed "
              "before the merge), or it is refused (AC025)" if unsafe else
              f"; their output ({spec.empty_output}) is never read: weight-0 partials are "
              "selected away, never multiplied" if not s.spec.consumer else
              f"; their output is {spec.empty_output}, which {s.spec.consumer} reads safely")
    if s.spec.collective == "fused":
        empty += (f"; lse_mode={'basee' if spec.base == 'e' else 'base2'!r} passed on every call "
                  "(FlashInfer's default is base 2 whatever the producer emits)")
    return (
        s.spec.why + f"; kernel {kernel}, world size {s.world_size}",
        f"base {spec.base}: record declares lse.base = {spec.base!r} ({record.evidence}: "
        f"{record.source}); compiled in as the exponent scale",
        f"layout {_layout_text(spec, True)}: read through strides"
        + (f", the first {s.heads_per_launch} of {spec.padded_heads} head slots"
           if spec.padded_heads else "") + ", no copy",
        f"LSE dtype {spec.dtype}: loaded and accumulated in fp32",
        empty + ("; masked rows get weight 0 whatever they hold" if s.row_mask else "")
        + "; an all-empty row gives o = 0, LSE = −inf",
        ("sink: added once after the merge (o · b^L / (b^L + b^s), sink logits in natural-log "
         "units)" if s.sink else "no sink"),
        (f"merged LSE returned in base {out_base}" if s.return_lse else "merged LSE not returned")
        + (f" (converted from base {spec.base})" if s.return_lse and out_base != spec.base
           else ""),
        f"output {s.out_dtype}, fp32 accumulation; "
        + _tiles_text(config, s.world_size if kernel == "merge" else 1, s.world_size,
                      s.heads_per_launch, s.head_dim),
        "PDL (programmatic dependent launch) " + ("for one-wave grids on compute capability >= 9.0"
                                                  if s.pdl else "off"),
    )


def _tiles_text(config: KernelConfig | None, n: int, n_lse: int, heads: int, head_dim: int) -> str:
    if config is not None:
        return f"tiles fixed: {config}"
    kernel = "merge" if n > 1 else "rescale"
    one, many = (default_config(max(n, n_lse), t, heads, head_dim, kernel) for t in (1, 256))
    return (f"tiles per call from (N, T, H, D): T=1 → BLOCK_H={one.block_h} BLOCK_D="
            f"{one.block_d} warps={one.num_warps}; T=256 → BLOCK_H={many.block_h} BLOCK_D="
            f"{many.block_d} warps={many.num_warps}")
