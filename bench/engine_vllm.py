"""``engine vllm --source`` over every vLLM release 0.24.0-0.34.0, and lint's errors beside it.

    python bench/engine_vllm.py --out bench/results/engine-vllm.md

Issue 36 item 4 extends it to 0.34.0 (the releases in the cache folder of ``bench/_releases.py``,
downloaded there when missing).

Issue 28 item 1. For each release (a slim copy, ``<dist>-<version>/`` under ``--sources``; see
``bench/_releases.py``) the mapping is derived from its sources
(:func:`attn_contracts.integrations.vllm.report` with ``source=``) and every backend that returns
an LSE (or has a finding) is one row: declaration, kernels, edges, verdict. Each error is
classified:

- **latent**: a declaration attribute nothing in that backend's DCP configuration reads (the
  startup gate's own rule, :func:`attn_contracts.integrations._reach.split_by_reach`): wrong,
  but no combine is told it; the gate warns;
- **live**: a base, layout or empty-row contradiction at a combine the configuration reaches;
- **unconfirmed**: an empty-row error (``AC030``) whose consumer record holds conservative
  values, not facts read from code (``_UNREAD_EMPTY``: vLLM 0.33's direct all-to-all op is C++
  that is not in the wheel);
- **false**: an error on code that is right (listed by hand in ``_FALSE`` with the reason, so it
  is never hidden; none is known).

Then lint's errors over the same tree (``attn-contracts lint``'s rules, from the same program
model) and, for each, the engine error that covers it (its backend, the class or the edge's
location), or "missing". Nothing is timed. The sources never enter the repository.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _releases import Release
from _releases import ReleaseError
from _releases import default_cache
from _releases import source

from attn_contracts.findings import Finding
from attn_contracts.findings import Severity
from attn_contracts.findings import location_text
from attn_contracts.integrations import vllm as iv
from attn_contracts.integrations import vllm_source
from attn_contracts.integrations._reach import split_by_reach

RELEASES = [Release("vllm", f"0.{m}.0") for m in range(24, 35)]
#: (release, backend, code) → why an error the engine reports is wrong (listed, never hidden)
_FALSE: dict[tuple[str, str, str], str] = {}  # none now: 0.34's FLASH_ATTN_MLA_SPARSE_FA4 AC008
# was one (an lse= out buffer handed over in a **mapping); the interpreter binds it since issue 36
#: consumer records whose empty-row facts are conservative values, not read from code: an error
#: they give is live only if the kernel really does what the record assumes
_UNREAD_EMPTY: dict[str, str] = {}  # none now: vllm.direct_dcp_a2a_lse_reduce's facts are read
# from the CUDA source of the revision the 0.33/0.34 wheels ship (its op schema, compiled into them)


def _reason(f: Finding, row: iv.BackendReport, latent: bool) -> str:
    if latent:
        told = "; ".join(e.split(",")[0].removesuffix("]") + "]" for e in row.edges)
        return (f"{row.impl.rsplit('.', 1)[-1]}.{f.field} is read by no combine of this "
                f"backend's DCP configuration (its edges: {told or 'none'})")
    text = f.message
    if " feeds " in text:
        return text.split(": ", 1)[1].split(" (hint")[0][:200]
    return text[:200]


def _short(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def release_section(rel: Release, root: Path) -> tuple[list[str], dict[str, int]]:
    derived = vllm_source.derive(root)
    mapping = iv.mapping_for(root)
    rows = iv.report(source=root)
    lines = [f"## vLLM {rel.version}", ""]
    if mapping.notes or mapping.unverified:
        lines += [f"- {n}" for n in [*mapping.notes, *mapping.unverified]] + [""]
    lines += ["| backend | impl | declaration | kernels (DCP) | edges | verdict |",
              "|---|---|---|---|---|---|"]
    counts = {"latent": 0, "live": 0, "unconfirmed": 0, "false": 0}
    errors: list[tuple[str, Finding, str, str]] = []
    unmapped = []
    for row in rows:
        returns = row.declared.get(iv.RETURNS_ATTR)
        if not returns and row.verdict == "ok":
            continue
        if not row.records and not row.edges and row.verdict != "error" and returns is None:
            unmapped.append(row.backend)
            continue
        d = row.declared
        base = d.get(iv.BASE_ATTR)
        decl = f"returns={returns}"
        if mapping.base_attrs:
            decl += f", {iv.BASE_ATTR}={base}"
            decl += f" ({'inherited: ' + str(d.get('base_owner')) if d.get('base_inherited') else 'own'})"
        else:
            decl += " (no base attribute in this release)"
        lines.append(f"| {row.backend} | {row.impl.rsplit('.', 1)[-1]} | {_short(decl)} | "
                     f"{', '.join(row.records) or '-'} | {_short('; '.join(row.edges)) or '-'} | "
                     f"{row.verdict} |")
        live, latent = split_by_reach(row.findings, impl=row.impl.rsplit(".", 1)[-1],
                                      declared=iv.DECLARATIONS, reads=row.reads,
                                      readers=mapping.readers)
        latent_src = [f for f in row.findings if f.severity is Severity.ERROR and f not in live]
        for f in row.findings:
            if f.severity is not Severity.ERROR:
                continue
            key = (rel.version, row.backend, f.code.value)
            unread = next((why for name, why in _UNREAD_EMPTY.items()
                           if f"feeds {name}" in f.message), None)
            kind = ("false" if key in _FALSE else "latent" if f in latent_src else
                    "unconfirmed" if unread and f.code.value == "AC030" else "live")
            counts[kind] += 1
            errors.append((row.backend, f, kind, _FALSE.get(key) or (unread if kind == "unconfirmed"
                           else _reason(f, row, kind == "latent"))))
        del latent
    if unmapped:
        lines += ["", f"Members with no impl class derived (warnings, AC013): {', '.join(unmapped)}"]
    lines += ["", f"Errors: {counts['live']} live, {counts['latent']} latent, "
              f"{counts['unconfirmed']} unconfirmed, {counts['false']} false.", ""]
    if errors:
        lines += ["| backend | code | class | finding | reason |", "|---|---|---|---|---|"]
        lines += [f"| {b} | {f.code.value} | {k} | {_short(f.message[:180])} | {_short(r)} |"
                  for b, f, k, r in errors]
        lines.append("")
    lint_errors = [f for f in derived.lint if f.severity is Severity.ERROR]
    lines += [f"Lint errors over the same tree: {len(lint_errors)}", ""]
    if lint_errors:
        lines += ["| lint | at | covered by |", "|---|---|---|"]
        for f in lint_errors:
            where = location_text(f.location).split("/vllm/", 1)[-1]
            cover = _cover(f, rows, errors)
            if cover == "missing" and f.code.value == "AC001" and not mapping.base_attrs:
                cover = ("none, by design: this release has no base attribute (engines/vllm.toml), "
                         "so lint's AC001 (a missing lse_base_on_e) is a false error here; the "
                         "engine judges the base at the edges")
            lines.append(f"| {f.code.value} {_short(f.subject)} | vllm/{where} | {cover} |")
        lines.append("")
    return lines, counts


def _cover(f: Finding, rows: Sequence[iv.BackendReport], errors: list[tuple[str, Finding, str, str]]
           ) -> str:
    """The engine errors that report lint's error: the same class's declaration, or the same
    edge location."""
    at = f.location  # lint's: a point (path, line, column); the engine's: path and line
    where = "" if at is None else f"vllm/{at.path.split('/vllm/', 1)[-1]}:{at.line}"
    hits = sorted({f"{b} {e.code.value} ({k})" for b, e, k, _ in errors
                   if location_text(e.location) == where or
                   location_text(e.location).startswith(where + " ") or
                   (f.subject and f.subject in e.message and f.code.value in ("AC001", "AC002", "AC008")
                    and e.code.value in ("AC001", "AC002", "AC008"))})
    if hits:
        return ", ".join(hits)
    impls = {r.impl.rsplit(".", 1)[-1] for r in rows}
    if f.subject not in impls and f.code.value in ("AC001", "AC002", "AC008"):
        return f"no AttentionBackendEnum member's impl ({f.subject}: a model's own class)"
    return "missing"


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sources", action="append", default=[], type=Path)
    p.add_argument("--out", type=Path, default=Path("bench/results/engine-vllm.md"))
    args = p.parse_args(argv)
    out = ["# `engine vllm --source` over vLLM 0.24.0-0.34.0", "",
           "Made by `ATTN_CONTRACTS_RELEASES=~/.cache/attn-contracts/releases python "
           "bench/engine_vllm.py --out bench/results/engine-vllm.md` (issue 28 item 1, issue 36 "
           "items 4-5: the slim copies of `bench/_releases.py`'s cache, "
           "`~/.cache/attn-contracts/releases`); the "
           "mapping derived from each "
           "release's own sources. Rows: the backends that return an LSE or have a finding, "
           "under DCP. Errors classified latent (a declaration no combine of the configuration "
           "reads: the startup gate warns), live (a contradiction at a combine the configuration "
           "reaches), unconfirmed (an empty-row error resting on a record's conservative values), false "
           "(wrong on right code). One code location reached from several backends (the MLA "
           "layer's prefill merge) is one error per backend.", ""]
    summary = ["| release | live | latent | unconfirmed | false |", "|---|---|---|---|---|"]
    body: list[str] = []
    for rel in RELEASES:
        try:
            root = source(rel, default_cache(), args.sources)
        except ReleaseError as err:
            print(f"{rel}: {err}", file=sys.stderr)
            return 2
        lines, counts = release_section(rel, root)
        summary.append(f"| {rel.version} | {counts['live']} | {counts['latent']} | "
                       f"{counts['unconfirmed']} | {counts['false']} |")
        body += lines
        print(f"{rel}: {counts}", file=sys.stderr)
    args.out.write_text("\n".join([*out, *summary, "", *body]) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
