"""The DCP workspace: communication buffers of one (plan, process group), owned by the caller.

A plan is immutable and shared (plans are cached); buffers are state, so they live here. An engine
creates one workspace per (plan, process group) at startup, sized for the largest token count it
will serve, with one slot per micro-batch that runs concurrently (dual-batch overlap)::

    ws = Workspace(plan, group, max_tokens=512, slots=2, device="cuda")
    out = dcp_combine(plan, o, lse, group, workspace=ws, slot=step % 2)

Every buffer is allocated once, in the constructor. A step with fewer tokens uses views at the
start of the same storage, so the addresses a captured CUDA graph holds stay valid whatever batch
runs eagerly in between; a step with more tokens than ``max_tokens`` is an error, never a silent
reallocation (a growable workspace that freed a captured address crashed an engine on replay).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from typing import NoReturn

import torch

from attn_contracts.checks import CallRefused
from attn_contracts.checks import check_direct
from attn_contracts.checks import check_workspace_buffer
from attn_contracts.checks import check_workspace_call
from attn_contracts.checks import check_workspace_mode
from attn_contracts.checks import check_workspace_step
from attn_contracts.checks import refuse
from attn_contracts.combine.direct import DirectBuffers
from attn_contracts.combine.direct import DirectLayout
from attn_contracts.combine.direct import direct_unavailable
from attn_contracts.combine.fused import FusedBuffers
from attn_contracts.combine.fused import fused_unavailable
from attn_contracts.combine.message import A2A_ALIGN
from attn_contracts.combine.message import A2AMessage
from attn_contracts.combine.plan import CombinePlan
from attn_contracts.findings import ContractError
from attn_contracts.findings import error_text
from attn_contracts.modes import ModeSpec
from attn_contracts.modes import Resolution
from attn_contracts.modes import resolve

__all__ = ["A2A_ALIGN", "Workspace", "a2a_piece_bytes"]


def a2a_piece_bytes(tokens: int, heads_per_rank: int, head_dim: int, out_bytes: int) -> tuple[
        int, int]:
    """``(o_bytes, piece_bytes)`` of one all-to-all message (:class:`A2AMessage`)."""
    msg = A2AMessage(1, tokens, heads_per_rank, head_dim, out_bytes)
    return msg.o_bytes, msg.piece


def _normalised(device: str | torch.device | None) -> torch.device:
    """``"cuda"`` → ``cuda:<current>`` (tensors always carry an index); None → the current CUDA
    device, else the CPU."""
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dev = torch.device(device)
    if dev.type == "cuda" and dev.index is None:
        dev = torch.device("cuda", torch.cuda.current_device())
    return dev


@dataclass(frozen=True)
class _Slot:
    """The flat storage of one slot; every step takes views at its start."""

    lse_local: torch.Tensor  # fp32 [T_max · H]
    lse_all: torch.Tensor  # fp32 [N · T_max · H]
    chunks: torch.Tensor | None  # out dtype [N · T_max · H/N · D] (ag_rs)
    send: torch.Tensor | None  # uint8 [N · piece(T_max)] (a2a)
    recv: torch.Tensor | None
    direct: DirectBuffers | None = None  # a2a_direct: this slot's symmetric buffer and state
    fused: FusedBuffers | None = None  # fi_a2a: FlashInfer's workspace and the send layout


class Workspace:
    """Buffers for ``plan`` on ``group`` (``world_size`` ranks), ``slots`` × up to ``max_tokens``."""

    def __init__(self, plan: CombinePlan, group: Any = None, *, max_tokens: int, slots: int = 1,
                 device: str | torch.device | None = None) -> None:
        for name, v in (("max_tokens", max_tokens), ("slots", slots)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 1:
                raise ValueError(f"{name} must be an int >= 1, found {v!r}")
        refuse(check_workspace_mode(plan.record.name, plan.setting), "cannot make a workspace")
        self.plan, self.group, self.max_tokens = plan, group, max_tokens
        self.device = _normalised(device)
        #: the concrete mode this workspace runs (a choice such as a2a_best is resolved here,
        #: once) and every candidate it refused, with why
        self.resolution = self._resolve()
        self.runs: ModeSpec = self.resolution.runs
        self.direct = self.runs.collective == "symmetric_memory"
        self.why = self.resolution.why
        self._slots = tuple(self._allocate() for _ in range(slots))

    def _refusal(self, candidate: ModeSpec) -> str | None:
        """Why ``candidate`` cannot run on this group (None if it can)."""
        if candidate.collective == "symmetric_memory":
            reason: str | None = direct_unavailable(self.group, self.plan.setting.out_dtype)
            return reason
        if candidate.collective == "fused":
            return fused_unavailable(self.group, self.plan.setting)
        return None

    def _resolve(self) -> Resolution:
        """A concrete mode runs or is refused (``AC026`` for the direct all-to-all and
        FlashInfer's fused combine); a choice takes its first candidate that can run and keeps
        the others' reasons."""
        resolution = resolve(self.plan.mode, self._refusal)
        if not resolution.mode.is_choice:
            reason = self._refusal(resolution.runs)
            if reason is not None:
                raise ContractError(check_direct(self.plan.record, self.plan.setting, reason),
                                    f"cannot make a {resolution.runs.name} workspace")
        return resolution

    @property
    def slots(self) -> int:
        return len(self._slots)

    def _allocate(self) -> _Slot:
        p, t = self.plan, self.max_tokens
        n, h, d = p.world_size, p.num_heads, p.head_dim

        def empty(numel: int, dtype: torch.dtype) -> torch.Tensor:
            return torch.empty(numel, dtype=dtype, device=self.device)

        chunks = send = recv = direct = fused = None
        collective = self.runs.collective
        if collective == "reduce_scatter":
            chunks = empty(t * h * d, p.out_dtype)
        msg = self.message(t)
        if collective == "symmetric_memory":
            direct = DirectBuffers.symmetric(DirectLayout(n, msg.piece, msg.o_bytes), self.group,
                                             self.device)
        elif collective == "all_to_all":
            send, recv = empty(msg.nbytes, torch.uint8), empty(msg.nbytes, torch.uint8)
        elif collective == "fused":  # collective: every rank makes its slots together
            try:
                fused = FusedBuffers.create(self.group, t, h, d, p.out_dtype, self.device)
            except Exception as err:  # FlashInfer's JIT build, NCCL's device API, the group
                raise ContractError(check_direct(p.record, p.setting, "FlashInfer's fused combine "
                                                 f"could not be set up: {error_text(err)}"),
                                    "cannot make a fi_a2a workspace") from err
            return _Slot(empty(0, torch.float32), empty(0, torch.float32), None, None, None,
                         None, fused)
        return _Slot(empty(t * h, torch.float32), empty(n * t * h, torch.float32), chunks, send,
                     recv, direct)

    def _slot(self, slot: int, tokens: int, device: torch.device) -> _Slot:
        """The slot of a step of ``tokens`` rows on ``device``; refused (``AC027``) where it does
        not fit."""
        if not (0 <= slot < len(self._slots) and tokens <= self.max_tokens
                and device == self.device):
            refuse(check_workspace_step(self.plan.record.name, slot=slot, slots=len(self._slots),
                                        tokens=tokens, max_tokens=self.max_tokens,
                                        device=str(device), workspace_device=str(self.device)),
                   "the step does not fit its workspace")
        return self._slots[slot]

    def _no_buffer(self, buffer: str) -> NoReturn:
        """Refuse (``AC027``) a step that needs ``buffer``, which this workspace's mode lacks."""
        raise CallRefused(check_workspace_buffer(self.plan.record.name,
                                                 runs=self.runs.name, buffer=buffer,
                                                 has=False), "wrong workspace")

    def direct_buffers(self, slot: int, tokens: int, device: torch.device) -> DirectBuffers:
        """The slot's symmetric buffer of an ``a2a_direct`` workspace."""
        s = self._slot(slot, tokens, device)
        if s.direct is None:
            self._no_buffer("symmetric buffer (the direct all-to-all)")
        return s.direct

    def fused_buffers(self, slot: int, tokens: int, device: torch.device) -> FusedBuffers:
        """The slot's FlashInfer workspace of an ``fi_a2a`` workspace."""
        s = self._slot(slot, tokens, device)
        if s.fused is None:
            raise ValueError(f"this workspace runs {self.why or self.plan.mode}, not FlashInfer's "
                             "fused combine")
        return s.fused

    def direct_error(self) -> str | None:
        """A peer that never signalled, read on the host (a device sync: call it where the engine
        synchronises anyway); None when every slot's steps completed."""
        return next((e for s in self._slots if s.direct and (e := s.direct.error())), None)

    def check_group(self, group: Any) -> None:
        refuse(check_workspace_call(self.plan.record.name, same_plan=True,
                                    same_group=group is self.group), "wrong workspace")

    def check_call(self, plan: CombinePlan, group: Any) -> None:
        """Refuse a call whose plan or group is not this workspace's (``AC027``): its buffers
        are sized and typed by its plan, and shared with its group."""
        same_plan = plan is self.plan or plan == self.plan
        if not same_plan or group is not self.group:
            refuse(check_workspace_call(plan.record.name, same_plan=same_plan,
                                        same_group=group is self.group), "wrong workspace")

    def message(self, tokens: int) -> A2AMessage:
        """The all-to-all message layout of a step of ``tokens`` rows."""
        p = self.plan
        return A2AMessage(p.world_size, tokens, p.num_heads // p.world_size, p.head_dim,
                          p.out_dtype.itemsize)

    # --- views for one step ---------------------------------------------------------------------
    def lse_buffers(self, slot: int, tokens: int, device: torch.device
                    ) -> tuple[torch.Tensor, torch.Tensor]:
        """This rank's fp32 LSE ``[T, H]`` and the all-gathered ``[N · T, H]``."""
        s, h, n = self._slot(slot, tokens, device), self.plan.num_heads, self.plan.world_size
        return (s.lse_local[: tokens * h].view(tokens, h),
                s.lse_all[: n * tokens * h].view(n * tokens, h))

    def chunks(self, slot: int, tokens: int, device: torch.device) -> torch.Tensor:
        """The head-chunked rescaled partial ``[N, T, H/N, D]`` a reduce-scatter sends."""
        s, p = self._slot(slot, tokens, device), self.plan
        if s.chunks is None:
            self._no_buffer("head-chunk buffer (ag_rs)")
        hc = p.num_heads // p.world_size
        return s.chunks[: tokens * p.num_heads * p.head_dim].view(p.world_size, tokens, hc,
                                                                   p.head_dim)

    def messages(self, slot: int, tokens: int, device: torch.device
                 ) -> tuple[torch.Tensor, torch.Tensor, int]:
        """The all-to-all send and receive buffers ``[N, piece]`` (uint8) and the O bytes of a
        piece (the LSE bits follow at that offset; :meth:`message` is the whole layout)."""
        s = self._slot(slot, tokens, device)
        if s.send is None or s.recv is None:
            self._no_buffer("all-to-all message buffers (a2a)")
        msg = self.message(tokens)
        n, piece = msg.world, msg.piece
        return s.send[: n * piece].view(n, piece), s.recv[: n * piece].view(n, piece), msg.o_bytes
