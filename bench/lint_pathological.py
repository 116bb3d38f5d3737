"""The lint's abstract interpreter on inputs built to blow it up (issue 37, item 5): each is a
small package (20-80 lines at the sizes that used to take minutes) of one shape, at growing sizes:

- ``clique``: n one-statement functions, each calling every other one (a call cycle of n);
- ``loops``: n nested ``for`` loops around a conversion of a base-2 LSE;
- ``branches``: n ``if``/``else`` blocks, each rebinding a tuple that holds the LSE;
- ``conversions``: n ``if``/``else`` blocks, one side converting an element of such a tuple
  (2**n paths, each with its own conversions: the LSE used to be dropped past 8);
- ``tuples``: ``x = (x, x)`` n times, the LSE inside;
- ``flag_terms``: a combine told ``int(flag) + ... > -1`` of n terms of a backend's flag, each
  read with the flag True and False (the sum is always positive: told base e).

Every input ends in a combine told base e of a base-2 LSE, so each run must still report that
AC023 error: a bound may widen a value to "unknown", never drop the LSE it may hold. The table
gives, per shape and size, the lines, the lint's CPU seconds (one process, this one), the
interpreter's steps (statements, expressions and calls it interpreted: the counted work the tests
assert on) and whether the error was found. Targets: every input in <= 2 s on the 2-core machine,
and steps growing linearly with the size.

    python bench/lint_pathological.py --out bench/results/lint-pathological.md
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.table import Table

from attn_contracts.findings import Code
from attn_contracts.lint import LintConfig
from attn_contracts.lint import lint_model

__all__ = ["SHAPES", "branches", "clique", "conversions", "flag_terms", "lint_one", "loops",
           "tuples"]

# A producer of a base-2 LSE (second of its results) and a combine told the base by a keyword,
# written for this benchmark (records of no real library).
RECORDS = """
[[record]]
name = "mylib.decode"
library = "mylib"
source = "a kernel written for the benchmark"
evidence = "read_from_code"
lse = { returns = "lse", base = "2", layout = "token_head", dtype = "float32", \
empty_row = "-inf", empty_out = "zero", includes_sink = false }
decode = { attention = "mha", out_layout = "token_head_dim", head_dims = [64], \
q_dtypes = ["float32"], q_len_gt_1 = false }
calls = [{ function = "mylib.decode", lse_index = 1 }]

[[consumer]]
name = "mylib.combine"
library = "mylib"
source = "a combine written for the benchmark"
evidence = "read_from_code"
calls = [{ function = "mylib.combine", lse_args = ["1", "lse"] }]
base = { kind = "keyword", keyword = "is_lse_base_on_e", values = { "True" = "e", "False" = "2" } }
lse = { layouts = ["token_head"], states = "first", dtypes = ["float32"] }
empty = { reads_as_empty = ["-inf"], all_empty = "nan", zero_weight_nan_safe = false }
output = { returns_lse = false }
"""

HEAD = "from mylib import combine, decode\n\n\n"


def clique(n: int) -> str:
    """n functions, each one statement calling all the others (and the combine)."""
    out = [HEAD]
    for i in range(n):
        others = "".join(f" or f{j}(o, lse)" for j in range(n) if j != i)
        out.append(f"def f{i}(o, lse):\n"
                   f"    return combine(o, lse, is_lse_base_on_e=True){others}\n\n\n")
    out.append("def run(q):\n    o, lse = decode(q)\n    return f0(o, lse)\n")
    return "".join(out)


def loops(n: int) -> str:
    """n nested loops; the innermost converts the LSE (x ln 2) and the combine reads it after."""
    body = ["def run(q, chunks):\n", "    o, lse = decode(q)\n"]
    for d in range(n):
        body.append("    " * (d + 1) + f"for c{d} in chunks:\n")
    body.append("    " * (n + 1) + "lse = lse * 0.6931471805599453\n")
    body.append("    return combine(o, lse, is_lse_base_on_e=True)\n")
    return HEAD + "".join(body)


def branches(n: int) -> str:
    """n if/else blocks, each rebinding a tuple that holds the LSE (one side nested deeper)."""
    body = ["def run(q, flags):\n", "    o, lse = decode(q)\n", "    t = (lse, lse)\n"]
    for i in range(n):
        body.append(textwrap.indent(textwrap.dedent(f"""\
            if flags[{i}]:
                t = (t[0], t)
            else:
                t = (t, t[1])
            """), "    "))
    body.append("    return combine(o, t[0], is_lse_base_on_e=True)\n")
    return HEAD + "".join(body)


def conversions(n: int) -> str:
    """n if/else blocks, one side converting one element of a tuple (x ln 2) and swapping: each
    path's conversions differ, so the LSE may come from 2**n different paths."""
    body = ["def run(q, flags):\n", "    o, lse = decode(q)\n", "    t = (lse, lse)\n"]
    for i in range(n):
        body.append(textwrap.indent(textwrap.dedent(f"""\
            if flags[{i}]:
                t = (t[1] * 0.6931471805599453, t[0])
            else:
                t = (t[0], t[1])
            """), "    "))
    body.append("    return combine(o, t[0], is_lse_base_on_e=True)\n")
    return HEAD + "".join(body)


def tuples(n: int) -> str:
    """``x = (x, x)`` n times, starting from the LSE, then ``x = x[0]`` n times."""
    body = ["def run(q):\n", "    o, x = decode(q)\n"]
    body += ["    x = (x, x)\n"] * n
    body += ["    x = x[0]\n"] * n
    body.append("    return combine(o, x, is_lse_base_on_e=True)\n")
    return HEAD + "".join(body)


def flag_terms(n: int) -> str:
    """A combine told ``(int(impl.flag) + ... ) > -1`` of n terms of an annotated backend's
    flag: each term, and each sum, read case by case (True on both sides: base e)."""
    classes = textwrap.dedent("""\
        class Base:
            lse_base_on_e = True
        class Two(Base):
            lse_base_on_e = False
        """)
    terms = " + ".join(["int(impl.lse_base_on_e)"] * n)
    body = ["def run(q, impl: Base):\n", "    o, lse = decode(q)\n",
            f"    return combine(o, lse, is_lse_base_on_e=({terms}) > -1)\n"]
    return HEAD + classes + "".join(body)


#: shape -> (generator, sizes, the unit its work is linear in: a clique of n has n² calls)
SHAPES: dict[str, tuple[Callable[[int], str], tuple[int, ...], Callable[[int], int]]] = {
    "clique": (clique, (2, 4, 6, 8, 10, 12), lambda n: n * n),
    "loops": (loops, (1, 5, 10, 15, 20, 25, 30), lambda n: n),
    "branches": (branches, (1, 5, 10, 20, 26, 30, 40), lambda n: n),
    "conversions": (conversions, (1, 5, 10, 20, 26, 30, 40), lambda n: n),
    "tuples": (tuples, (1, 4, 8, 12, 16, 20, 24), lambda n: n),
    "flag_terms": (flag_terms, (1, 10, 50, 100, 200, 300), lambda n: n),
}


def lint_one(folder: Path, text: str) -> tuple[float, int, bool, int]:
    """Lint ``text`` as ``folder/engine.py`` (with the records above): CPU seconds, interpreter
    steps, whether the combine's AC023 error was found, and the notes of a bound hit (AC033)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "engine.py").write_text(text)
    records = folder.parent / f"{folder.name}-records.toml"
    records.write_text(RECORDS)
    start = time.process_time()
    findings, model = lint_model([folder], LintConfig(), records=[records])
    cpu = time.process_time() - start
    found = any(f.code == Code.AC023 and f.severity == "error" for f in findings)
    notes = sum(f.code == "AC033" for f in findings)
    return cpu, model.steps, found, notes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shapes", default=",".join(SHAPES), help="comma-separated: " +
                    ", ".join(SHAPES))
    ap.add_argument("--out", type=Path, default=None, help="also write the table as Markdown")
    args = ap.parse_args()
    rows: list[tuple[str, int, int, float, int, int, bool, int]] = []
    table = Table(title="attn-contracts lint on pathological inputs (one process)")
    for col in ("shape", "size", "lines", "CPU s", "steps", "steps / unit", "AC023 found",
                "bound notes"):
        table.add_column(col, justify="right")
    with tempfile.TemporaryDirectory() as tmp:
        for shape in args.shapes.split(","):
            make, sizes, unit = SHAPES[shape]
            for n in sizes:
                text = make(n)
                cpu, steps, found, notes = lint_one(Path(tmp) / f"{shape}{n}", text)
                lines = text.count("\n")
                rows.append((shape, n, lines, cpu, steps, unit(n), found, notes))
                table.add_row(shape, str(n), str(lines), f"{cpu:.3f}", f"{steps:,}",
                              f"{steps / unit(n):,.0f}", "yes" if found else "NO", str(notes))
    Console(width=120).print(table)
    worst = max(r[3] for r in rows)
    missed = [f"{r[0]}{r[1]}" for r in rows if not r[6]]
    print(f"slowest: {worst:.3f} CPU s (target <= 2 s); the error missed in: {missed or 'none'}")
    if args.out is not None:
        lines_md = [
            "# The lint on pathological inputs (issue 37, item 5)", "",
            "Generated by `bench/lint_pathological.py` (one process; CPU seconds of this "
            "process; steps: statements, expressions and calls the interpreter ran; the unit: "
            "the size, or for a clique of n functions its n² calls; bound notes: AC033).", "",
            "    .venv/bin/python bench/lint_pathological.py --out "
            "bench/results/lint-pathological.md", "",
            f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python "
            f"{platform.python_version()}; load average {os.getloadavg()[0]:.1f} at the end.", "",
            "| shape | size | lines | CPU s | steps | steps / unit | AC023 found | bound notes |",
            "|---|---:|---:|---:|---:|---:|---|---:|"]
        lines_md += [f"| {s} | {n} | {ln} | {c:.3f} | {st:,} | {st / u:,.0f} | "
                     f"{'yes' if f else 'NO'} | {no} |" for s, n, ln, c, st, u, f, no in rows]
        lines_md += ["", f"Slowest: {worst:.3f} CPU s (target: at most 2 s). The base-2 LSE "
                     f"reaching the base-e combine is found in every input: "
                     f"{'yes' if not missed else 'no, missed in ' + ', '.join(missed)}.", "", ""]
        args.out.write_text("\n".join(lines_md))
    if missed:
        sys.exit(1)


if __name__ == "__main__":
    main()
