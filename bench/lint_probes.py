"""The lint's reading of Python, checked against Python itself (issue 37: "a value is read as
Python computes it, or not at all").

Each probe of ``bench/lint_probes/probes.toml`` is a tiny module and an expression whose value
is a bool, written by a helper session that had not read the linter, about one corner of the
language (aliasing, scoping, classes, descriptors, dataclasses, enums, generators, ``match``,
``try``...). Python runs the module and evaluates the expression: that is the reference. The
lint then reads a program that tells a combine ``is_lse_base_on_e=<expression>`` of a base-2
LSE, and each probe is counted as one of:

- **read**: an error where Python's value is true, none where it is false, no warning;
- **not read**: a warning that the value could not be read (never a wrong answer);
- **wrong**: an error where Python's value is false (a false error), or no error and no warning
  where it is true (a silent miss). The goal is none.

Nothing of the linted program runs inside the lint; the probes run here, in this process, as
the reference (they are the benchmark's own programs, standard library only).

    python bench/lint_probes.py --out bench/results/lint-probes.md
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import tomllib
from pathlib import Path
from typing import Any

from lint_pathological import RECORDS  # the benchmark's own records (a sibling script)
from rich.console import Console
from rich.table import Table

from attn_contracts.findings import Code
from attn_contracts.lint import LintConfig
from attn_contracts.lint import lint_model

__all__ = ["PROBES", "judge", "load", "main", "reference"]

PROBES = Path(__file__).parent / "lint_probes" / "probes.toml"


def load(path: Path = PROBES) -> list[dict[str, str]]:
    """The probes: name, module, told."""
    return list(tomllib.loads(path.read_text())["probe"])


def reference(module: str, told: str) -> bool:
    """What Python computes: the module run in a namespace of its own, then the expression."""
    namespace: dict[str, Any] = {}
    exec(compile(module or "pass", "<probe>", "exec", dont_inherit=True), namespace)
    return bool(eval(told, namespace))


def judge(python: bool, codes: set[tuple[str, str]]) -> str:
    """read, not read or wrong (see the module's docstring)."""
    error = (Code.AC023.value, "error") in codes
    warned = (Code.AC035.value, "warning") in codes
    if error != python and (error or not warned):
        return "wrong"
    return "read" if error == python and not warned else "not read"


def lint_probe(folder: Path, module: str, told: str) -> set[tuple[str, str]]:
    """The (code, severity) of each finding on the probe's program."""
    folder.mkdir(parents=True)
    (folder / "layer.py").write_text(
        "from mylib import combine, decode\n" + module + "\n\ndef step(q):\n"
        "    out, lse = decode(q, return_lse=True)\n"
        f"    return combine(out, lse, is_lse_base_on_e={told})\n")
    records = folder.parent / f"{folder.name}-records.toml"
    records.write_text(RECORDS)
    findings, _ = lint_model([folder], LintConfig(), records=[records])
    return {(str(getattr(f.code, "value", f.code)), str(getattr(f.severity, "value", f.severity)))
            for f in findings}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--probes", type=Path, default=PROBES)
    ap.add_argument("--out", type=Path, default=None, help="also write the result as Markdown")
    ap.add_argument("--json", type=Path, default=None, help="also write every probe's verdict")
    args = ap.parse_args()
    probes = load(args.probes)
    verdicts: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for i, p in enumerate(probes):
            python = reference(p["module"], p["told"])
            codes = lint_probe(Path(tmp) / f"p{i}", p["module"], p["told"])
            verdicts.append({"name": p["name"], "python": python,
                             "verdict": judge(python, codes), "found": sorted(codes)})
    counts = {v: sum(x["verdict"] == v for x in verdicts) for v in ("read", "not read", "wrong")}
    table = Table(title=f"attn-contracts lint on {len(probes)} Python probes")
    for col in ("verdict", "probes"):
        table.add_column(col, justify="right")
    for v, n in counts.items():
        table.add_row(v, str(n))
    console = Console(stderr=False)
    console.print(table)
    wrong = [x for x in verdicts if x["verdict"] == "wrong"]
    for x in wrong:
        console.print(f"wrong: {x['name']} (Python: {x['python']}; found {x['found']})")
    if args.json:
        args.json.write_text(json.dumps({"counts": counts, "probes": verdicts}, indent=1))
    if args.out:
        lines = ["# The lint on Python probes", "", "    " + " ".join(["python", *sys.argv]), "",
                 "| verdict | probes |", "|---|---|",
                 *(f"| {v} | {n} |" for v, n in counts.items()), "",
                 "Wrong readings (the goal is none):", "",
                 *(f"- {x['name']} (Python: {x['python']})" for x in wrong), ""]
        args.out.write_text("\n".join(lines))


if __name__ == "__main__":
    main()
