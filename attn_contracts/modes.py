"""The combine modes as data: one table, torch-free, that every layer reads.

Each :class:`ModeSpec` says what kernel a mode launches, what collective carries it, whether it
scatters heads over the ranks, whether it needs a caller-owned workspace, and, for a mode that is a
choice between others (``a2a_best``), its candidates in priority order. The setting's ``Mode``
literal, the planner, the checks, the workspace and ``dcp_combine`` read this table; nothing else
compares mode names (the vLLM backend registry's enum-with-data pattern).

A choice is resolved once, when its workspace is built (:func:`resolve`): the first candidate that
no refusal stops runs, and every refusal is kept, so the workspace can say why (the xformers
dispatch pattern: candidates in a priority list, each refusing with reasons).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal
from typing import get_args

__all__ = ["MODES", "MODE_TABLE", "Collective", "Kernel", "Mode", "ModeSpec", "Resolution",
           "WorkspaceNeed", "mode_spec", "resolve"]

Kernel = Literal["merge", "rescale"]
#: how the partials travel: ``none`` (they are already local: a split-KV merge), an NCCL/gloo
#: all-to-all, all-gather of the LSE then reduce-scatter or all-reduce of O, peer writes into
#: symmetric memory, or ``fused``: another library's one call that moves and merges them
#: (FlashInfer's ``decode_cp_a2a_lse_reduce`` over NCCL symmetric memory)
Collective = Literal["none", "all_to_all", "reduce_scatter", "all_reduce", "symmetric_memory",
                     "fused"]
#: ``none``: the mode runs no collective (a workspace is refused); ``optional``: a call without
#: one allocates its own buffers; ``required``: its buffers are made once, by every rank together
WorkspaceNeed = Literal["none", "optional", "required"]
#: the mode names, in the table's order (``MODE_TABLE`` below must list exactly these)
Mode = Literal["merge", "ag_rs", "a2a", "ar", "a2a_direct", "a2a_best", "fi_a2a"]


@dataclass(frozen=True)
class ModeSpec:
    """One combine mode."""

    name: str
    kernel: Kernel
    collective: Collective
    #: each rank ends with ``H / world_size`` heads of the output (heads must divide: AC010)
    scatters_heads: bool
    #: a launch sees ``H / world_size`` heads (the message is an all-to-all of head slices)
    launch_sees_head_slice: bool
    workspace: WorkspaceNeed
    #: what the mode does, as the plan explains it
    why: str
    #: a choice: candidates in priority order, the first that can run is taken at workspace time
    candidates: tuple[str, ...] = ()
    #: where it can run, for messages (empty: anywhere)
    needs: str = ""
    #: how a workspace names what it runs (``Workspace.why``), and the mode in a refusal
    label: str = ""
    short: str = ""
    #: the consumer record of the kernel that merges, where it is not this project's (whose
    #: weight-0 partials are selected away, never multiplied): the planner reads its empty-row
    #: policy from the record (``fi_a2a``: FlashInfer's, not NaN-safe at weight 0)
    consumer: str = ""

    @property
    def is_choice(self) -> bool:
        return bool(self.candidates)


MODE_TABLE: dict[str, ModeSpec] = {m.name: m for m in (
    ModeSpec("merge", "merge", "none", scatters_heads=False, launch_sees_head_slice=False,
             workspace="none",
             why="merge: N partials of all H heads → one output (split-KV / cascade merge)"),
    ModeSpec("ag_rs", "rescale", "reduce_scatter", scatters_heads=True,
             launch_sees_head_slice=False, workspace="optional",
             why="ag_rs: all-gather LSE, rescale the local partial, reduce-scatter O by heads"),
    ModeSpec("a2a", "merge", "all_to_all", scatters_heads=True, launch_sees_head_slice=True,
             workspace="optional",
             why="a2a: one all-to-all of O and fp32 LSE, then merge N partials of H/N heads",
             label="a2a over NCCL"),
    ModeSpec("ar", "rescale", "all_reduce", scatters_heads=False, launch_sees_head_slice=False,
             workspace="optional",
             why="ar: rescale the local partial, all-reduce O (every rank gets all heads)"),
    ModeSpec("a2a_direct", "merge", "symmetric_memory", scatters_heads=True,
             launch_sees_head_slice=True, workspace="required",
             why="a2a_direct: write each peer's head slice of O and fp32 LSE into its symmetric "
                 "memory, then one kernel waits for the peers' epochs and merges (no NCCL call)",
             needs="CUDA GPUs on NCCL, >= 2 ranks, 16/32-bit floats",
             label="the direct all-to-all over symmetric memory", short="the direct all-to-all"),
    ModeSpec("a2a_best", "merge", "all_to_all", scatters_heads=True, launch_sees_head_slice=True,
             workspace="required",
             why="a2a_best: a2a_direct where the process group allows it (CUDA GPUs on NCCL, >= 2 "
                 "ranks, 16/32-bit floats), else a2a; the Workspace says which it took and why",
             candidates=("a2a_direct", "a2a")),
    ModeSpec("fi_a2a", "merge", "fused", scatters_heads=True, launch_sees_head_slice=True,
             workspace="required",
             why="fi_a2a: FlashInfer's fused decode_cp_a2a_lse_reduce: each peer's head slice of "
                 "O and its fp32 LSE move over NCCL symmetric memory and are merged in one "
                 "cooperative kernel (lse_mode from the record's base; no merged LSE, no sink)",
             needs="FlashInfer >= 0.7.2.post1 (flashinfer.comm), CUDA GPUs of one NVLink domain "
                   "on NCCL >= 2.29, float16/bfloat16, head_dim × 2 bytes a multiple of 16, "
                   "<= 64 ranks",
             label="FlashInfer's fused all-to-all + LSE reduce", short="FlashInfer's fused combine",
             consumer="flashinfer.decode_cp_a2a_lse_reduce"),
)}

MODES: tuple[str, ...] = tuple(MODE_TABLE)

if get_args(Mode) != MODES:  # the Literal is for type checkers and schemas; the table is the truth
    raise RuntimeError(f"Mode {get_args(Mode)} and MODE_TABLE {MODES} name different modes")


def mode_spec(name: str) -> ModeSpec:
    """The table's entry for ``name``; an unknown name lists the known ones."""
    spec = MODE_TABLE.get(name)
    if spec is None:
        raise ValueError(f"unknown combine mode {name!r} (allowed: {', '.join(MODES)})")
    return spec


@dataclass(frozen=True)
class Resolution:
    """What a mode runs as on one workspace: the concrete mode taken and every refusal met."""

    mode: ModeSpec  # the mode planned
    runs: ModeSpec  # the concrete mode taken (``mode`` itself unless it is a choice)
    refused: tuple[tuple[str, str], ...]  # (candidate, why it cannot run), in priority order

    @property
    def why(self) -> str:
        """``a2a_best: a2a over NCCL, since the direct all-to-all cannot: <reason>``."""
        runs = self.runs.label or self.runs.name
        reasons = "; ".join(f"{mode_spec(name).short or name} cannot: {why}"
                            for name, why in self.refused)
        return f"{self.mode.name}: {runs}" + (f", since {reasons}" if reasons else "")


def resolve(name: str, refusal: Callable[[ModeSpec], str | None]) -> Resolution:
    """Resolve mode ``name``: a concrete mode is itself (``refusal`` is not asked); a choice takes
    its first candidate that ``refusal`` lets through (None), keeping every refusal. A choice whose
    every candidate is refused raises ``ValueError`` listing them all."""
    spec = mode_spec(name)
    if not spec.is_choice:
        return Resolution(spec, spec, ())
    refused: list[tuple[str, str]] = []
    for candidate in map(mode_spec, spec.candidates):
        why = refusal(candidate)
        if why is None:
            return Resolution(spec, candidate, tuple(refused))
        refused.append((candidate.name, why))
    raise ValueError(f"mode {name!r}: no candidate can run: "
                     + "; ".join(f"{n}: {w}" for n, w in refused))
