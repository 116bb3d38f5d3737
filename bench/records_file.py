"""Reading a large records file (issue 26 item 12): a generated TOML of n producer and consumer
records, read by the one reader (``attn_contracts.sources.read_file``, which ``validate --file``
and ``validate_startup`` use), by ``attn-contracts validate --file`` and by ``attn-contracts lint
--records``; and, for reference, locating each record's line by searching every line for every
record (how the reader did it before, quadratic) against the one pass it does now. Target: a file
at the 10 MiB cap read in under 5 s on the 2-core CPU machine.

    python bench/records_file.py --records 1000,2000,4000 --cap --repeats 3
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _timing, also under PYTHONSAFEPATH=1
from _timing import wall_and_cpu_s
from rich.console import Console
from rich.table import Table

from attn_contracts.sources import MAX_FILE_BYTES
from attn_contracts.sources import _name_lines
from attn_contracts.sources import read_file

PRODUCER = """[[record]]
name = "bench.kernel{i}"
library = "bench"
library_version = ">=0.{i}"
source = "bench/kernels.py:L{i} (a generated kernel whose decode returns its LSE in base 2)"
evidence = "read_from_code"
lse = {{ returns = "lse", base = "2", layout = "token_head", dtype = "float32", {lse_tail} }}
decode = {{ attention = "mha", out_layout = "token_head_dim", head_dims = [64, 128], {decode_tail} }}
calls = [{{ function = "bench.ops{i}.Kernel.run", when = {{ return_lse = "True" }} }}]

"""

CONSUMER = """[[consumer]]
name = "bench.merge{i}"
library = "bench"
source = "bench/merge.py:L{i} (a generated combine reading base e)"
evidence = "read_from_code"
calls = [{{ function = "bench.ops{i}.merge", lse_args = ["lse", "1"] }}]
base = {{ kind = "fixed", base = "e" }}
lse = {{ layouts = ["token_head"], states = "separate", dtypes = ["float32"] }}
empty = {{ reads_as_empty = ["-inf"], all_empty = "zero", zero_weight_nan_safe = true }}
output = {{ returns_lse = false }}

"""


#: the rest of the two inline tables (TOML keeps an inline table on one line)
TAILS = {"lse_tail": 'empty_row = "-inf", includes_sink = false',
         "decode_tail": 'q_dtypes = ["bfloat16"], q_len_gt_1 = false'}


def document(n: int) -> str:
    return "".join((PRODUCER if i % 2 else CONSUMER).format(i=i, **TAILS) for i in range(n))


def at_cap() -> tuple[int, str]:
    """The most records that fit in :data:`MAX_FILE_BYTES`, and their document."""
    per = len(document(2).encode()) / 2
    n = int(MAX_FILE_BYTES / per)
    while len(text := document(n).encode()) > MAX_FILE_BYTES:
        n -= 50
    return n, text.decode()


def _scan_per_record(text: str) -> dict[str, int]:
    """The lookup the reader used to make: every line searched for each record's name."""
    lines = text.splitlines()
    names = re.findall(r'^name = "([^"]+)"', text, re.MULTILINE)
    out = {}
    for name in names:
        pattern = re.compile(rf'(^|[{{,\s])"?name"?\s*[=:]\s*"{re.escape(name)}"')
        out[name] = next((i + 1 for i, s in enumerate(lines) if pattern.search(s)), 1)
    return out


def _timed(fn: Callable[[], object], repeats: int) -> tuple[float, float, float]:
    """Best and median wall seconds, and the CPU seconds of the best run (on a shared machine
    the CPU time is what the same run takes on an idle core)."""
    times, cpu, _ = wall_and_cpu_s(fn, repeats)
    return min(times), statistics.median(times), cpu[times.index(min(times))]


def _quiet(fn: Callable[[], int]) -> Callable[[], int]:
    def run() -> int:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            return fn()
    return run


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--records", default="1000,2000,4000", help="comma-separated record counts")
    p.add_argument("--cap", action="store_true", help="also a file at the 10 MiB cap")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--old-up-to", type=int, default=2000,
                   help="time the per-record scan only up to this many records (it is quadratic)")
    args = p.parse_args(argv)
    from attn_contracts.cli import main as cli
    from attn_contracts.lint import main as lint

    load = os.getloadavg()
    sizes = [(int(n), document(int(n))) for n in args.records.split(",")]
    if args.cap:
        sizes.append(at_cap())
    table = Table(title="reading one records file: best / median of "
                        f"{args.repeats} wall seconds (CPU seconds of the best)")
    for col in ("records", "MiB", "read_file", "validate --file", "lint --records",
                "lines: one pass", "lines: scan per record (before)"):
        table.add_column(col, justify="right")
    with tempfile.TemporaryDirectory() as tmp:
        engine = Path(tmp) / "engine.py"
        engine.write_text("from bench.ops1 import merge\n\ndef f(o, lse):\n    merge(o, lse)\n")
        for n, text in sizes:
            path = Path(tmp) / f"records-{n}.toml"
            path.write_text(text)
            recs, findings = read_file(path)
            if len(recs) != n or findings:
                raise SystemExit(f"{path}: read {len(recs)} of {n} records, {len(findings)} findings")

            def cell(t: tuple[float, float, float]) -> str:
                return f"{t[0]:.2f} / {t[1]:.2f} ({t[2]:.2f})"

            read = _timed(lambda p=path: read_file(p), args.repeats)
            validate = _timed(_quiet(lambda p=path: cli(["validate", "--no-builtin", "--file",
                                                        str(p)])), args.repeats)
            linted = _timed(_quiet(lambda p=path: lint([str(engine), "--records", str(p),
                                                        "--exit-zero"])), args.repeats)
            one = _timed(lambda t=text: _name_lines(t), args.repeats)
            old = cell(_timed(lambda t=text: _scan_per_record(t), 1)) if n <= args.old_up_to \
                else "-"
            table.add_row(f"{n:,}", f"{len(text.encode()) / 2**20:.2f}", cell(read),
                          cell(validate), cell(linted), cell(one), old)
    Console(width=160).print(table)
    print(f"load average before/after: {load} / {os.getloadavg()} on {os.cpu_count()} CPUs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
