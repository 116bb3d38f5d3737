"""``engine sglang --root`` over every SGLang release 0.5.1-0.5.23.

    python bench/engine_sglang.py --sources /work/releases --out bench/results/engine-sglang.md

Issue 28 item 5. For each release (a slim copy, ``sglang-<version>/`` under ``--sources``, else
fetched into the cache; see ``bench/_releases.py``) the mapping is derived from its sources
(:func:`attn_contracts.integrations.sglang.report`): every backend whose decode LSE reaches the
MLA DCP combine, or that has a finding, is one row (classes, kernels, the base the combine is
told, edges, verdict); every error is classified:

- **live**: a base contradiction at the combine (the kernel's base, after any conversion in the
  code, against the base the combine is told for the backend's name);
- **unconfirmed**: fail closed, an LSE no record describes combined with the default base of
  the name function (``AC002``): nothing says it is wrong, nothing confirms it;
- **false**: an error on code that is right (by hand, with the reason; none is known).

Nothing is timed. The sources never enter the repository.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _releases import Release
from _releases import ReleaseError
from _releases import default_cache
from _releases import source

from attn_contracts.findings import Code
from attn_contracts.findings import Severity
from attn_contracts.integrations import sglang

VERSIONS = [f"0.5.{m}" for m in range(1, 24)]


def _kind(code: Code) -> str:
    return "unconfirmed" if code is Code.AC002 else "live"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sources", type=Path, action="append", default=[])
    p.add_argument("--cache", type=Path, default=default_cache())
    p.add_argument("--out", type=Path, required=True)
    args = p.parse_args(argv)
    lines = ["# `engine sglang` on every SGLang release 0.5.1-0.5.23", "",
             "Made by `python bench/engine_sglang.py --sources /work/releases --out "
             "bench/results/engine-sglang.md` (the mapping derived from each release's sources; "
             "bench/engine_sglang.py says how errors are classified).", ""]
    summary = ["| release | backends | MLA DCP combine | rows with an edge | errors (live / "
               "unconfirmed / false) |", "|---|---|---|---|---|"]
    detail: list[str] = []
    for version in VERSIONS:
        try:
            root = source(Release("sglang", version), args.cache, args.sources)
        except ReleaseError as err:
            summary.append(f"| {version} | - | - | - | not read: {err} |")
            continue
        rows = sglang.report(root=root)
        d = sglang.derive(root)
        combine = ", ".join(f"{c.consumer} ({str(c.where).rsplit('/', 1)[-1]})" for c in d.combines) \
            or "none"
        errors = [(r, f) for r in rows for f in r.findings if f.severity is Severity.ERROR]
        live = sum(_kind(f.code) == "live" for _, f in errors)
        summary.append(f"| {version} | {len(rows)} | {combine} | "
                       f"{', '.join(r.backend for r in rows if r.edges) or '-'} | "
                       f"{len(errors)} ({live} / {len(errors) - live} / 0) |")
        shown = [r for r in rows if r.edges or any(f.severity is not Severity.NOTE
                                                   for f in r.findings)]
        if not shown:
            continue
        detail += [f"## SGLang {version}", "",
                   "| backend | class | declared | kernels (decode, LSE) | edges | verdict |",
                   "|---|---|---|---|---|---|"]
        for r in shown:
            declared = "; ".join(f"{k}={v}" for k, v in r.declared.items() if k != "declared_at")
            detail.append(f"| {r.backend} | {r.impl} | {declared or '-'} | "
                          f"{', '.join(r.records) or '-'} | {'<br>'.join(r.edges) or '-'} | "
                          f"{r.verdict} |")
        detail.append("")
        for r, f in errors:
            detail.append(f"- **{_kind(f.code)}** {r.backend}: `{f.code}` {f.message}")
        if errors:
            detail.append("")
    args.out.write_text("\n".join([*lines, *summary, "", *detail]) + "\n", encoding="utf-8")
    print(f"wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
