"""Every prefix-cache and chunked-prefill merge site of a released engine, with the producers whose
LSE reaches it and the lint's verdict there (issue 29 item 5).

A merge site is a call of a consumer record whose name says it merges two attention states
(``vllm.merge_attn_states``, ``sglang.merge_state*``, ``flashinfer.merge_state*``: the merges
of a cached prefix or a chunk with the new tokens, not the DCP combines). For each, from the lint's
program model of the whole release (``attn_contracts.lint.lint_model``): where it is, the base it
reads there and how it is told, every LSE source the model follows to it (the producer record and
call, its base, a base the library's or the engine's dispatch picks, a conversion on the way), and
the verdict — the lint's own findings at that site (``AC023`` error: a source of another base
reaches it; ``AC003``: a literal base that agrees) or ``ok`` (every source agrees) or ``unknown``
(no source the model can follow).

    python bench/merge_sites.py --sources /work/releases --out bench/results/merge-sites

Sources as ``bench/lint_releases.py`` finds them (``--sources`` slim copies, else downloaded into
the cache); nothing of them is committed.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

from rich.console import Console

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _releases, also under PYTHONSAFEPATH=1
from _releases import ReleaseError
from _releases import default_cache
from _releases import parse_spec
from _releases import source
from _timing import write_results

from attn_contracts.findings import Location
from attn_contracts.lint import LintConfig
from attn_contracts.lint import lint_model

DEFAULT_RELEASES = ("vllm==0.33.0", "sglang==0.5.23")


@dataclass
class Site:
    site: str  # path:line inside the release
    consumer: str
    reads: set[str] = field(default_factory=set)
    sources: set[str] = field(default_factory=set)
    codes: set[str] = field(default_factory=set)  # the lint's findings there: "AC023 error"
    verdict: str = ""


def _site(at: Location | None, root: Path) -> str:
    """``path:line`` inside the release of a place (a point's column left out)."""
    if at is None:
        return ""
    path = at.path
    for prefix in (str(root.resolve()) + "/", str(root) + "/"):
        path = path.replace(prefix, "")
    return path if at.line is None else f"{path}:{at.line}"


def _is_merge(record: str) -> bool:
    """A merge of two attention states (prefix cache, chunked prefill), not a DCP combine."""
    return "merge" in record


def merge_sites(root: Path, package: str, jobs: int) -> list[Site]:
    """The merge sites of the package below ``root``, each with its sources and verdict."""
    findings, model = lint_model([root / package], LintConfig(), jobs=jobs)
    at: dict[str, set[str]] = {}
    for f in findings:
        at.setdefault(_site(f.location, root), set()).add(f"{f.code.value} {f.severity.value}")
    rows: dict[tuple[str, str], Site] = {}
    for use in model.uses:
        if not _is_merge(use.consumer.record):
            continue
        row = rows.setdefault((_site(use.where, root), use.consumer.record),
                              Site(_site(use.where, root), use.consumer.record))
        row.codes |= at.get(row.site, set())
        ways = use.given.options if use.given.kind == "choice" else (use.given,)
        for w in ways:
            row.reads.add(f"{w.base or '?'} ({w.how or w.kind})")
            if w.where is not None and w.where.point is not None:  # where the base is written
                # (a literal): its findings
                row.codes |= at.get(_site(w.where, root), set())
        for s in use.lse.sources:
            base = "/".join(s.bases) if s.dispatch and s.bases else (s.base or "?")
            how = f", after {s.converted}" if s.converted else ""
            pick = f", {s.choice}" if s.choice else ""
            what = s.what.replace(str(root.resolve()) + "/", "")
            row.sources.add(f"{what} [base {base}{pick}{how}]")
    out = []
    for key in sorted(rows):
        row = rows[key]
        row.verdict = ", ".join(sorted(row.codes)) or ("ok" if row.sources else "unknown")
        out.append(row)
    return out


def _markdown(results: dict[str, list[Site]], command: str) -> str:
    lines = ["# Prefix-cache and chunked-prefill merge sites, with what reaches them", "",
             f"Made by `{command}` (`bench/merge_sites.py`: what a merge site is, and the "
             "verdict's meaning, are in its docstring).", ""]
    for release, rows in results.items():
        errors = sum("AC023 error" in r.verdict for r in rows)
        lines += [f"## {release}: {len(rows)} merge sites, {errors} with an AC023 error", "",
                  "| site | consumer | reads base | LSE sources the model follows | verdict |",
                  "|---|---|---|---|---|"]
        for r in rows:
            srcs = "<br>".join(s.replace("|", "\\|") for s in sorted(r.sources)) or "-"
            lines.append(f"| `{r.site}` | `{r.consumer}` | {', '.join(sorted(r.reads))} | "
                         f"{srcs} | {r.verdict} |")
        lines.append("")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("releases", nargs="*", default=list(DEFAULT_RELEASES),
                    help="dist==version (default: %(default)s)")
    ap.add_argument("--sources", type=Path, action="append", default=[],
                    help="a folder of slim release copies <dist>-<version>/")
    ap.add_argument("--cache", type=Path, default=None)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None, help="write OUT.md and OUT.json")
    args = ap.parse_args(argv)
    err = Console(stderr=True)
    results: dict[str, list[Site]] = {}
    for spec in args.releases:
        try:
            release = parse_spec(spec)
            root = source(release, args.cache or default_cache(), args.sources)
        except ReleaseError as e:
            err.print(f"merge_sites: {e}")
            return 2
        err.print(f"linting {spec} ...")
        results[spec] = merge_sites(root, release.package, args.jobs)
    command = "python bench/merge_sites.py " + " ".join(sys.argv[1:] if argv is None else argv)
    text = _markdown(results, command)
    if args.out is not None:
        payload = {"command": command, **{k: [{**asdict(r), "reads": sorted(r.reads),
                                                "sources": sorted(r.sources),
                                                "codes": sorted(r.codes)} for r in v]
                                           for k, v in results.items()}}
        write_results(args.out.parent, args.out.name, text, payload)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
