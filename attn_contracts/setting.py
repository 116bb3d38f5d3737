"""The combine setting: one typed, frozen description of how partial outputs are combined.

The same object travels from the engine's startup (:func:`attn_contracts.validate_startup`) through
the rank consensus (compared by value) to the planner (:func:`attn_contracts.combine.plan_combine`)
and the CLI flags (``--mode --world-size --num-heads --head-dim --out-dtype ...``), so each quantity
has one name in every layer::

    setting = CombineSetting(mode="a2a", world_size=4, num_heads=128, head_dim=512,
                             out_dtype="bfloat16")

``world_size`` is the number of partials merged: the DCP world size for the collective modes,
the number of split-KV partials for ``merge``. ``out_dtype`` accepts a torch dtype as well as its
name (``torch.bfloat16`` and ``"bfloat16"`` are the same setting), without importing torch.
"""

from __future__ import annotations

from typing import Annotated
from typing import Any
from typing import Literal

from pydantic import BeforeValidator
from pydantic import Field

from attn_contracts.modes import MODE_TABLE
from attn_contracts.modes import MODES
from attn_contracts.modes import Mode
from attn_contracts.modes import ModeSpec
from attn_contracts.modes import mode_spec
from attn_contracts.records import Base
from attn_contracts.records import Frozen
from attn_contracts.records import StrictBool

__all__ = ["ALL_TO_ALL_MODES", "HEAD_SCATTERED_MODES", "MODES", "OUT_DTYPES", "CombineSetting", "Mode"]

# The modes live in attn_contracts.modes; these two views of the table are kept for callers.
#: modes that give each rank H / world_size heads of the output
HEAD_SCATTERED_MODES: tuple[str, ...] = tuple(m.name for m in MODE_TABLE.values()
                                              if m.scatters_heads)
#: modes whose message is an all-to-all of head slices (a launch then sees H / world_size heads)
ALL_TO_ALL_MODES: tuple[str, ...] = tuple(m.name for m in MODE_TABLE.values()
                                          if m.launch_sees_head_slice)
#: output dtypes the combine produces; other float dtypes are settings it refuses (AC015)
OUT_DTYPES: tuple[str, ...] = ("float16", "bfloat16", "float32")
DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8, "float8_e4m3fn": 1,
               "float8_e5m2": 1}


def _dtype_name(value: Any) -> Any:
    """``torch.bfloat16`` → ``"bfloat16"`` (duck-typed: the contract never imports torch)."""
    text = str(value)
    return text.removeprefix("torch.") if text.startswith("torch.") else value


PositiveInt = Annotated[int, Field(strict=True, ge=1)]
OutDType = Annotated[Literal["float16", "bfloat16", "float32", "float64", "float8_e4m3fn",
                             "float8_e5m2"], BeforeValidator(_dtype_name)]


class CombineSetting(Frozen):
    """How one combine runs; hashable, a plan-cache key, compared by value across ranks.

    ``mode``        ``merge`` (N partials → one), ``a2a``, ``ag_rs``, ``ar`` (DCP collectives),
                    ``a2a_direct`` (peers write into each other's symmetric memory; CUDA, NCCL,
                    >= 2 ranks), ``a2a_best`` (``a2a_direct`` where it can run, else ``a2a``).
    ``world_size``  the number of partials (DCP ranks for the collective modes).
    ``num_heads``   query heads of the attention (all of them, before any head scatter).
    ``head_dim``    the partial output's head dim (MLA: the latent dim, e.g. 512).
    ``out_dtype``   the partial outputs' and the combined output's dtype.
    ``return_lse``  also return the merged LSE (float32), in ``lse_out_base`` (default: the
                    record's base).
    ``sink``        the plan adds a per-head attention sink once after the merge (the kernels
                    run without it).
    ``row_mask``    every call passes which rows each shard holds keys for; rows outside get
                    weight 0 whatever the kernel wrote there.
    ``pdl``         allow programmatic dependent launch (Hopper+) where the tiles ask for it.
    """

    mode: Mode = "merge"
    world_size: PositiveInt
    num_heads: PositiveInt
    head_dim: PositiveInt
    out_dtype: OutDType = "bfloat16"
    return_lse: StrictBool = False
    lse_out_base: Base | None = None
    sink: StrictBool = False
    row_mask: StrictBool = False
    pdl: StrictBool = True

    @property
    def spec(self) -> ModeSpec:
        """The mode's entry of :data:`attn_contracts.modes.MODE_TABLE`."""
        return mode_spec(self.mode)

    @property
    def heads_per_launch(self) -> int:
        """Heads one combine launch sees: ``H / N`` after an all-to-all, else ``H``."""
        return (self.num_heads // self.world_size if self.spec.launch_sees_head_slice
                else self.num_heads)

    @property
    def out_dtype_bytes(self) -> int:
        return DTYPE_BYTES[self.out_dtype]
