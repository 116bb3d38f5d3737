"""How a serving engine wires attn-contracts into its attention layer (runnable on the CPU).

    python examples/engine_startup.py            # 2 gloo ranks on this machine

At startup, every DCP rank validates the contracts it will run (and that all ranks agree), then
builds its combine plan once; each decode step only runs the kernel and the plan.
"""

from __future__ import annotations

import sys

import torch
import torch.distributed as dist

from attn_contracts import CapabilityRecord
from attn_contracts import validate_startup
from attn_contracts.backends.adapter import Adapter
from attn_contracts.backends.adapter import load_adapter
from attn_contracts.backends.problem import DecodeProblem
from attn_contracts.backends.problem import make_problem
from attn_contracts.backends.sharding import shard_problem
from attn_contracts.combine import plan_combine
from attn_contracts.combine.dcp import dcp_combine
from attn_contracts.testing.ranks import run_ranks

NUM_HEADS, HEAD_DIM = 8, 64


class DcpAttention:
    """The engine's attention layer under decode context parallelism."""

    def __init__(self, backend: str, *, group: dist.ProcessGroup, mode: str = "a2a") -> None:
        world = dist.get_world_size(group)
        settings = {"num_heads": NUM_HEADS, "head_dim": HEAD_DIM, "out_dtype": "float32",
                    "mode": mode}
        # 1. Before serving: every problem in one error; all ranks agree or all fail (AC007);
        #    probe=True runs the kernel once and checks its real LSE base and layout.
        record: CapabilityRecord | None = validate_startup(
            backend=backend, world_size=world, group=group, extras=settings, probe=True)
        if record is None or record.adapter is None:
            raise RuntimeError(f"backend {backend!r} has no runnable adapter")
        self.kernel = load_adapter(record.adapter, Adapter).run
        # 2. The combine is chosen from the record (base, layout, empty rows), never from a
        #    default: this is where a hard-coded `is_lse_base_on_e=True` used to live.
        self.plan = plan_combine(record, mode=mode, world_size=world, num_heads=NUM_HEADS,
                                 head_dim=HEAD_DIM, out_dtype=torch.float32)
        self.group = group

    def decode(self, shard: DecodeProblem) -> torch.Tensor:
        # 3. The hot path: the kernel on this rank's KV shard, then one combine launch.
        partial_out, partial_lse = self.kernel(shard)
        return dcp_combine(self.plan, partial_out, partial_lse, self.group)


def rank_main(rank: int, world: int) -> float:
    problem = make_problem(seq_lens=[0, 1, 5, 40, 97], q_len=1, num_heads=NUM_HEADS,
                           num_kv_heads=2, head_dim=HEAD_DIM, dtype=torch.float32, seed=1)
    layer = DcpAttention("torch.sdpa_ref", group=dist.group.WORLD)
    out = layer.decode(shard_problem(problem, rank, world, interleave=1))  # [T, H/N, D]
    full, _ = load_adapter("attn_contracts.backends.torch_ref:decode", Adapter).run(problem)
    heads = slice(rank * NUM_HEADS // world, (rank + 1) * NUM_HEADS // world)
    return float((out - full[:, heads]).abs().max())


def main() -> int:
    errors = [r.value for r in run_ranks(rank_main, 2, timeout_s=300)]
    for rank, err in enumerate(errors):
        print(f"rank {rank}: max |error| vs full attention = {err:.2e}")
    return 0 if max(errors) < 1e-4 else 1


if __name__ == "__main__":
    sys.exit(main())
