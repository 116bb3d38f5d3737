"""The project's own combine plans as consumers: adapters and records the verifier runs in CI.

A plan (:func:`~attn_contracts.combine.plan_combine`, ``mode="merge"``) is the consumer end of a
producer record's edge: it reads the producer's base and layout, so there is one consumer per
(base, layout). Each adapter plans for a small producer record of that base and layout at the
probe's shape and calls the plan with the stacked LSE exactly as the verifier built it; the record
is :meth:`CombinePlan.as_consumer` under a name of its own. ``attn-contracts verify --consumer
attn_contracts.plan.merge`` verifies all four (Triton under the interpreter on the CPU).
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from attn_contracts.backends.adapter import ConsumerAdapter
from attn_contracts.consumer import ConsumerRecord
from attn_contracts.records import CapabilityRecord

__all__ = ["PLAN_PREFIX", "VARIANTS", "plan_consumer_records"]

PLAN_PREFIX = "attn_contracts.plan.merge"
#: suffix → (base, layout) of the producer the plan reads
VARIANTS: dict[str, tuple[str, str]] = {
    "basee": ("e", "token_head"),
    "base2": ("2", "token_head"),
    "basee+head_token": ("e", "head_token"),
    "base2+head_token": ("2", "head_token"),
}


@functools.lru_cache(maxsize=64)
def _producer(base: str, layout: str, head_dim: int) -> CapabilityRecord:
    """A producer of this base and layout whose kernel produces ``head_dim`` (what the plan reads
    from the record; nothing else of it matters here)."""
    return CapabilityRecord.model_validate({
        "name": f"verify.producer+base{base}", "library": "attn-contracts",
        "source": "attn_contracts/backends/plan_consumers.py", "evidence": "read_from_code",
        "lse": {"returns": "lse", "base": base, "layout": layout, "dtype": "float32",
                "empty_row": "-inf", "includes_sink": False},
        "decode": {"attention": "mha", "out_layout": "token_head_dim", "head_dims": [head_dim],
                   "q_dtypes": ["float32", "bfloat16", "float16"], "q_len_gt_1": False}})


def _plan(base: str, layout: str, o: torch.Tensor) -> Any:
    from attn_contracts.combine import plan_combine

    n, _, h, d = o.shape
    return plan_combine(_producer(base, layout, d), mode="merge", world_size=n, num_heads=h,
                        head_dim=d, out_dtype=o.dtype, return_lse=True)


def _adapter(base: str, layout: str) -> ConsumerAdapter:
    def run(o: torch.Tensor, lse: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out, lse_out = _plan(base, layout, o)(o, lse)  # the stacked LSE in the record's layout
        return out, (lse_out.T if layout == "head_token" else lse_out)  # [H, T] back as given

    return ConsumerAdapter(run=run, requires=("triton",))


merge_basee = _adapter("e", "token_head")
merge_base2 = _adapter("2", "token_head")
merge_basee_head_token = _adapter("e", "head_token")
merge_base2_head_token = _adapter("2", "head_token")


def plan_consumer_records() -> list[ConsumerRecord]:
    """One consumer record per variant: the plan's own :meth:`as_consumer`, renamed, with its
    adapter."""
    from attn_contracts.combine import plan_combine

    out = []
    for suffix, (base, layout) in VARIANTS.items():
        plan = plan_combine(_producer(base, layout, 8), mode="merge", world_size=3, num_heads=4,
                            head_dim=8, out_dtype=torch.float32, return_lse=True)
        data = plan.as_consumer().model_dump(mode="json")
        attr = "merge_" + suffix.replace("+", "_")
        data.update(name=f"{PLAN_PREFIX}+{suffix}",
                    adapter=f"attn_contracts.backends.plan_consumers:{attr}",
                    notes=f"the merge plan of a base-{base} {layout} producer record")
        out.append(ConsumerRecord.model_validate(data))
    return out
