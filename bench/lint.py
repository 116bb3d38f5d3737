"""Lint speed: generate backend-like files, lint them all, print the time (target < 5 s for
2,000 files on a 2-core machine).

    python bench/lint.py --files 2000
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from attn_contracts.lint import lint_paths

BASE = '''
class AttentionImpl:
    can_return_lse_for_decode: bool = False
    lse_base_on_e: bool = True
    supports_dcp: bool = False

    def forward(self, q, kv, out):
        raise NotImplementedError
'''

BACKEND = '''
"""Backend {i}: a decode kernel wrapper as engines write them."""

from attention_base import AttentionImpl
from dcp_ops import cp_lse_ag_out_rs


class Backend{i}Impl(AttentionImpl):
    can_return_lse_for_decode = {returns}
{base_line}
    def __init__(self, num_heads, head_dim, scale):
        self.num_heads = num_heads
        self.head_dim = head_dim
        self.scale = scale

    def forward(self, q, kv, out, group=None):
        o, lse = self.kernel(q, kv)
        if self.can_return_lse_for_decode and group is not None:
            o = cp_lse_ag_out_rs(o, lse, group, is_lse_base_on_e={base_arg})
        return o

    def kernel(self, q, kv):
        scores = [sum(a * b for a, b in zip(q, k)) * self.scale for k in kv]
        return scores, max(scores)
'''


def generate(folder: Path, n: int) -> int:
    (folder / "attention_base.py").write_text(BASE)
    planted = 0
    for i in range(n):
        bug = i % 10 == 0  # every tenth file carries one of the two bugs
        planted += bug
        (folder / f"backend_{i:05d}.py").write_text(BACKEND.format(
            i=i, returns=True,
            base_line="" if bug and i % 20 == 0 else "    lse_base_on_e = False\n",
            base_arg="True" if bug and i % 20 != 0 else "self.lse_base_on_e"))
    return planted


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        planted = generate(folder, args.files)
        size = sum(f.stat().st_size for f in folder.iterdir())
        times, found = [], 0
        for _ in range(args.repeats):
            start = time.perf_counter()
            found = len(lint_paths([folder]))
            times.append(time.perf_counter() - start)
    table = Table(title="attn-contracts lint speed")
    for col in ("files", "MB", "planted bugs", "findings", "best s", "median s", "files/s"):
        table.add_column(col, justify="right")
    best, median = min(times), sorted(times)[len(times) // 2]
    table.add_row(str(args.files + 1), f"{size / 1e6:.1f}", str(planted), str(found),
                  f"{best:.2f}", f"{median:.2f}", f"{(args.files + 1) / median:.0f}")
    Console(width=120).print(table)
    if found != planted:
        raise SystemExit(f"expected {planted} findings, got {found}")


if __name__ == "__main__":
    main()
