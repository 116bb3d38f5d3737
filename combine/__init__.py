"""The DCP combine: reference, Triton kernels, launchers, the record-driven planner, the
workspace and the collectives. Installed as ``attn_contracts.combine``; needs torch (and triton
for the kernels)."""

from attn_contracts.combine.dcp import dcp_combine
from attn_contracts.combine.ops import merge
from attn_contracts.combine.ops import pack_a2a
from attn_contracts.combine.ops import rescale
from attn_contracts.combine.plan import MODES
from attn_contracts.combine.plan import CombinePlan
from attn_contracts.combine.plan import plan_combine
from attn_contracts.combine.reference import merge_reference
from attn_contracts.combine.reference import rescale_reference
from attn_contracts.combine.tiles import KernelConfig
from attn_contracts.combine.workspace import Workspace

__all__ = [
    "MODES",
    "CombinePlan",
    "KernelConfig",
    "Workspace",
    "dcp_combine",
    "merge",
    "merge_reference",
    "pack_a2a",
    "plan_combine",
    "rescale",
    "rescale_reference",
]
