"""A few eager launches for Nsight Compute to read, one kernel beside another:

    ncu --clock-control none --metrics ... python bench/ncu_probe.py two_way|mask_one_token

``two_way``: this project's merge and FlashInfer ``merge_state`` at (2, 4096, 8, 128);
``mask_one_token``: this project's merge at (8, 1, 16, 512) without and with a row mask.
Each kernel runs three times (ncu reports every launch; the last is warm in the code cache).
"""

from __future__ import annotations

import sys

import torch

from attn_contracts.combine import merge


def main(argv: list[str] | None = None) -> int:
    which = (argv if argv is not None else sys.argv[1:])[0]
    dev, dt = "cuda", torch.bfloat16
    if which == "two_way":
        o = torch.randn(2, 4096, 8, 128, device=dev, dtype=dt)
        lse = torch.randn(2, 4096, 8, device=dev) * 4
        out = torch.empty(4096, 8, 128, device=dev, dtype=dt)
        z = torch.empty(4096, 8, device=dev)
        for _ in range(3):
            merge(o, lse, base="2", out=out, lse_out=z)
        try:
            import flashinfer
        except ImportError:
            return 0
        for _ in range(3):
            flashinfer.merge_state(o[0], lse[0], o[1], lse[1])
    elif which == "mask_one_token":
        o = torch.randn(8, 1, 16, 512, device=dev, dtype=dt)
        lse = torch.randn(8, 1, 16, device=dev) * 4
        out = torch.empty(1, 16, 512, device=dev, dtype=dt)
        z = torch.empty(1, 16, device=dev)
        keep = torch.ones(8, 1, dtype=torch.bool, device=dev)
        for mask in (None, keep):
            for _ in range(3):
                merge(o, lse, base="2", out=out, lse_out=z, row_mask=mask)
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
