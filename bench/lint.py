"""Lint speed on two trees: generated backend-like files with planted bugs (every one must be
found), and a released engine's sources (a wheel fetched with ``pip download --no-deps`` into a
temporary folder, never committed), with the flow rules on. Targets on a 2-core machine: 2,000
generated files in < 5 s, and >= 50,000 lines/s on the engine tree.

    python bench/lint.py --files 2000 --wheel sglang==0.5.23 --jobs 2
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _timing, also under PYTHONSAFEPATH=1
from _timing import wall_and_cpu_s

from attn_contracts.lint import Knowledge
from attn_contracts.lint import LintConfig
from attn_contracts.lint import knowledge_for
from attn_contracts.lint import lint_paths

# Besides the built-in catalog, the flow fixture's records (a producer call,
# BatchDecodeWithPagedKVCacheWrapper.run, that the catalog does not name yet).
RECORDS = Path(__file__).parents[1] / "tests" / "fixtures" / "lint_flow" / "buggy" / "contracts.toml"

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


def _timed(paths: list[Path], repeats: int, jobs: int, knowledge: Knowledge | None,
           ) -> tuple[list[float], list[float], int]:
    """Wall and CPU seconds of each run (the lint workers' CPU too), and the findings of the
    last; notes (AC029: records of an unknown release agree) are information, not findings."""
    return wall_and_cpu_s(lambda: sum(f.severity != "note" for f in lint_paths(
        paths, jobs=jobs, knowledge=knowledge)), repeats)


def _engine_tree(spec: str, folder: Path, wheels: Path | None = None) -> Path:
    name, _, version = spec.partition("==")
    have = sorted(wheels.glob(f"{name.replace('-', '_')}-{version}-*.whl")) if wheels else []
    if not have:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q", "-d",
                        str(folder), spec], check=True)
    wheel = have[0] if have else next(folder.glob("*.whl"))
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(folder / "src")
    return folder / "src"


def _lines(root: Path) -> int:
    return sum(f.read_bytes().count(b"\n") for f in root.rglob("*.py") if f.is_file())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--files", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--wheel", default="sglang==0.5.23",
                    help="a pip requirement whose wheel is the real tree ('' to skip)")
    ap.add_argument("--wheels", type=Path, default=None,
                    help="a folder that may already hold the wheel (else pip download)")
    ap.add_argument("--subtrees", default="",
                    help="comma-separated folders of the wheel's package to lint (srt,kernels); "
                         "default: the whole wheel")
    args = ap.parse_args()
    load0 = os.getloadavg()
    # the built-in catalog (producers and consumers) plus the fixture's records
    knowledge, _ = knowledge_for(LintConfig(record_files=(str(RECORDS),)))
    everywhere = Knowledge(knowledge.consumers, knowledge.producers, follow_all=True)
    table = Table(title=f"attn-contracts lint speed ({args.jobs} processes, flow rules on)")
    for col in ("tree", "files", "lines", "planted", "findings", "best s", "median s",
                "CPU s", "lines/s (best)", "lines per CPU s"):
        table.add_column(col, justify="right")
    with tempfile.TemporaryDirectory() as tmp:
        if args.files > 0:  # --files 0: the engine tree alone
            folder = Path(tmp) / "gen"
            folder.mkdir()
            planted = generate(folder, args.files)
            walls, cpus, found = _timed([folder], args.repeats, args.jobs, None)
            _row(table, "generated", args.files + 1, _lines(folder), str(planted), found, walls,
                 cpus)
            if found != planted:
                raise SystemExit(f"expected {planted} findings, got {found}")
        if args.wheel:
            tree = _engine_tree(args.wheel, Path(tmp) / "wheel", args.wheels)
            package = args.wheel.partition("==")[0].replace("-", "_")
            roots = [tree / package / s for s in args.subtrees.split(",")] if args.subtrees \
                else [tree]
            files = sum(1 for r in roots for _ in r.rglob("*.py"))
            lines = sum(_lines(r) for r in roots)
            name = args.wheel + (f" {'+'.join(args.subtrees.split(','))}" if args.subtrees else "")
            for label, k in ((name, knowledge), (f"{name}, flow on every file", everywhere)):
                walls, cpus, found = _timed(roots, args.repeats, args.jobs, k)
                _row(table, label, files, lines, "-", found, walls, cpus)
    Console(width=160).print(table)
    print(f"load average before/after: {load0} / {os.getloadavg()} on {os.cpu_count()} CPUs")
    # the memory bound is per run: the largest resident set of this process and of the
    # worker processes (ru_maxrss is in KiB on Linux)
    peak = max(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
               resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
    print(f"peak resident memory of one process: {peak / 2**20:.2f} GiB")


def _row(table: Table, label: str, files: int, lines: int, planted: str, found: int,
         walls: list[float], cpus: list[float]) -> None:
    best, median, cpu = min(walls), sorted(walls)[len(walls) // 2], min(cpus)
    table.add_row(label, str(files), f"{lines:,}", planted, str(found), f"{best:.2f}",
                  f"{median:.2f}", f"{cpu:.1f}", f"{lines / best:,.0f}", f"{lines / cpu:,.0f}")


if __name__ == "__main__":
    main()
