"""``attn-contracts lint`` on every released engine tree, whole, with the CLI's defaults; every
finding joined with its hand-kept classification; the cost of each run.

    python bench/lint_releases.py --sources /work/releases \\
        --mutations bench/results/lint-mutations.json --out bench/results/lint-engines
    # after editing the classification, without linting again:
    python bench/lint_releases.py --sources /work/releases \\
        --reclassify bench/results/lint-engines.json \\
        --mutations bench/results/lint-mutations.json --out bench/results/lint-engines

Releases: vLLM 0.24.0 ... 0.33.0 and SGLang 0.5.1, 0.5.10, 0.5.20, 0.5.23 (``--only`` picks some).
Each comes from a slim copy (``--sources DIR`` holding ``<dist>-<version>/``, else downloaded
with ``pip download --no-deps`` into ``--cache``; see ``bench/_releases.py``) and is linted by
``python -m attn_contracts.cli lint <package> --format json --exit-zero`` in a child process, so
its cost is its own: CPU seconds (user + system, workers included) and peak RSS from
``os.wait4``, the wall time, the files and lines of the package. ``--jobs N`` is passed on
(default: none, the CLI's own default, the CPUs available).

Classification (``bench/lint_classification.toml``): ``[[finding]]`` tables with ``path`` (a
shell pattern on the path inside the package, ``v1/attention/backends/flashinfer.py``),
``code``, and optionally ``subject`` (exact), ``contains`` (a substring of the finding's source
line) and ``releases`` (``vllm>=0.25,<0.33``); ``class`` is one of ``real`` (a bug the released
code has), ``latent`` (wrong, but no shipped path exercises it), ``hazard`` (right today, easy
to break: the warnings the rules keep) or ``false`` (the linter is wrong); ``why`` says why.
The key survives line shifts between releases; the first entry that matches a finding classifies
it, and findings no entry matches are listed as unclassified. Entries that match nothing in any
release read are listed too (stale or for a finding the linter no longer reports).
``[[expected]]`` tables name defects known in the releases (``path``, ``releases``, ``contains``:
a piece of the line the error belongs at, ``class``, ``why``); the report says for each release
whether an error stands at such a line, so a real bug the linter misses is visible too.

Writes ``<out>.json`` (every finding, its class, the cost) and ``<out>.md``; exit 0, or 2 on bad
usage (a release not found, a classification file that does not validate).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from datetime import date
from pathlib import Path
from typing import Annotated
from typing import Any
from typing import Literal

from packaging.specifiers import InvalidSpecifier
from packaging.specifiers import SpecifierSet
from packaging.version import Version
from pydantic import AfterValidator
from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import ValidationError

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _releases, also under PYTHONSAFEPATH=1
from _releases import Release
from _releases import ReleaseError
from _releases import default_cache
from _releases import package_lines
from _releases import parse_spec
from _releases import source
from _timing import wall_and_cpu_s

HERE = Path(__file__).resolve().parent
CLASSIFICATION = HERE / "lint_classification.toml"
RELEASES = [*(f"vllm=={v}" for v in ("0.24.0", "0.25.0", "0.26.0", "0.27.0", "0.28.0", "0.29.0",
                                      "0.30.0", "0.31.0", "0.32.0", "0.33.0")),
            *(f"sglang=={v}" for v in ("0.5.1", "0.5.10", "0.5.20", "0.5.23"))]
CLASSES = ("real", "latent", "hazard", "false")


def _split_releases(value: str) -> tuple[str, str]:
    """``vllm>=0.25,<0.33`` → ("vllm", ">=0.25,<0.33")."""
    cut = next((i for i, ch in enumerate(value) if ch in "<>=!~"), len(value))
    return value[:cut].strip(), value[cut:].strip()


def _check_releases(value: str) -> str:
    dist, spec = _split_releases(value)
    if not dist:
        raise ValueError(f"releases {value!r} names no distribution (allowed: e.g. vllm>=0.25)")
    try:
        SpecifierSet(spec)
    except InvalidSpecifier as err:
        raise ValueError(f"releases {value!r}: {err} (allowed: e.g. vllm>=0.25,<0.33)") from err
    return value


def _in_releases(value: str, release: Release) -> bool:
    dist, spec = _split_releases(value)
    return dist == release.dist and Version(release.version) in SpecifierSet(spec)


#: a distribution and a version specifier: ``vllm>=0.25,<0.33``
Releases = Annotated[str, AfterValidator(_check_releases)]


class Entry(BaseModel):
    """One class for the findings it matches."""

    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")
    path: str
    code: Annotated[str, Field(pattern=r"^AC[0-9]{3}$")]
    subject: str | None = None
    contains: str | None = None
    releases: Releases | None = None
    class_: Literal[CLASSES] = Field(alias="class")  # type: ignore[valid-type]
    why: Annotated[str, Field(min_length=1)]

    def matches(self, release: Release, f: dict[str, Any], line_text: str) -> bool:
        if self.releases is not None and not _in_releases(self.releases, release):
            return False
        return (fnmatch.fnmatchcase(f["rel"], self.path) and f["code"] == self.code
                and (self.subject is None or f["subject"] == self.subject)
                and (self.contains is None or self.contains in line_text))


class Expected(BaseModel):
    """A defect known in some releases: found when an error stands at a line of ``path`` that
    contains ``contains``."""

    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")
    path: str
    releases: Releases
    contains: Annotated[str, Field(min_length=1)]
    class_: Literal[CLASSES] = Field(alias="class")  # type: ignore[valid-type]
    why: Annotated[str, Field(min_length=1)]

    def applies(self, release: Release) -> bool:
        return _in_releases(self.releases, release)


class Classification(BaseModel):
    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")
    finding: list[Entry]
    expected: list[Expected] = []


def load_classification(path: Path) -> Classification:
    try:
        return Classification.model_validate(tomllib.loads(path.read_text(encoding="utf-8")))
    except (OSError, tomllib.TOMLDecodeError, ValidationError) as err:
        lines = str(err).strip().splitlines()
        raise ReleaseError(f"{path}: {' '.join(x.strip() for x in lines[:3])}") from err


@dataclass
class Run:
    release: Release
    files: int
    lines: int
    cpu_s: float
    wall_s: float
    rss_mib: float
    exit_code: int
    findings: list[dict[str, Any]] = field(default_factory=list)


def lint_release(release: Release, root: Path, jobs: int | None) -> Run:
    package = root / release.package
    cmd = [sys.executable, "-m", "attn_contracts.cli", "lint", str(package), "--format", "json",
           "--exit-zero", *(["--jobs", str(jobs)] if jobs else [])]
    out_path = root.parent / f".lint-{release.folder}-{os.getpid()}.json"
    def run_child() -> tuple[subprocess.Popen[bytes], int, Any]:
        with open(out_path, "w", encoding="utf-8") as out:  # a file, not a pipe: no deadlock, no cap
            child = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE)
            _, status, usage = os.wait4(child.pid, 0)
        return child, status, usage

    walls, _, (child, status, usage) = wall_and_cpu_s(run_child, 1)
    wall = walls[0]
    child.returncode = os.waitstatus_to_exitcode(status)
    stderr = child.stderr.read().decode(errors="replace") if child.stderr else ""
    try:
        text = out_path.read_text(encoding="utf-8")
    finally:
        out_path.unlink(missing_ok=True)
    if child.returncode != 0:
        raise ReleaseError(f"lint of {release} exited {child.returncode}: "
                           f"{stderr.strip().splitlines()[-1:] or ['no message']}")
    findings = json.loads(text)
    for f in findings:
        f["rel"] = Path(f["path"]).resolve().relative_to(package.resolve()).as_posix()
    files, lines = package_lines(package)
    # ru_maxrss is KiB on Linux; for a reaped child it is the largest of it and its own children
    return Run(release, files, lines, usage.ru_utime + usage.ru_stime, wall,
               usage.ru_maxrss / 1024, child.returncode, findings)


def classify(runs: list[Run], roots: dict[str, Path], cls: Classification) -> set[int]:
    """Set each finding's class and why; the indexes of the entries that matched something."""
    used: set[int] = set()
    for run in runs:
        package = roots[str(run.release)] / run.release.package
        texts: dict[str, list[str]] = {}
        for f in run.findings:
            lines = texts.setdefault(f["rel"], (package / f["rel"]).read_text(
                encoding="utf-8", errors="replace").splitlines())
            text = lines[f["line"] - 1] if 0 < f["line"] <= len(lines) else ""
            f["class"], f["why"] = "unclassified", ""
            for i, e in enumerate(cls.finding):
                if e.matches(run.release, f, text):
                    f["class"], f["why"] = e.class_, e.why
                    used.add(i)
                    break
    return used


def known_defects(runs: list[Run], roots: dict[str, Path], cls: Classification,
                  ) -> list[tuple[Expected, Run, str]]:
    """(defect, release, "error at path:line" / "missed" / "not in this release") for every
    known defect and release it applies to."""
    out = []
    for e in cls.expected:
        for run in runs:
            if not e.applies(run.release):
                continue
            path = roots[str(run.release)] / run.release.package / e.path
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines() \
                if path.is_file() else []
            where = {i + 1 for i, text in enumerate(lines)
                     if e.contains in text and not text.lstrip().startswith("#")}
            if not where:
                out.append((e, run, "not in this release"))
                continue
            hits = [f for f in run.findings if f["rel"] == e.path and f["line"] in where
                    and f["severity"] == "error"]
            out.append((e, run, f"error at line {hits[0]['line']} ({hits[0]['code']})" if hits
                        else f"**missed** (line {min(where)})"))
    return out


def _fit(runs: list[Run]) -> tuple[float, float] | None:
    """Least squares CPU = a + b * lines over the runs: (a seconds, b µs per line)."""
    if len(runs) < 2:
        return None
    xs, ys = [r.lines for r in runs], [r.cpu_s for r in runs]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return None
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return my - b * mx, b * 1e6


def _commit() -> str:
    try:
        return subprocess.run(["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def markdown(runs: list[Run], cls: Classification, used: set[int], command: str,
             mutations: dict[str, Any] | None, mutations_md: str | None,
             defects: list[tuple[Expected, Run, str]]) -> str:
    today, commit = date.today().isoformat(), _commit()
    counts = {c: sum(f["class"] == c for r in runs for f in r.findings)
              for c in (*CLASSES, "unclassified")}
    errors = [f for r in runs for f in r.findings if f["severity"] == "error"]
    out = [f"# `attn-contracts lint` on released engines ({today}, linter at `{commit}`)", "",
           "Every release linted whole (the `vllm/` or `sglang/` package of its wheel, `.py` "
           "files only) with the CLI's defaults, by `bench/lint_releases.py`; every finding "
           "joined with its class in `bench/lint_classification.toml` (real: a bug the release "
           "has; latent: wrong, no shipped path runs it; hazard: right today, easy to break; "
           "false: the linter is wrong). The sources are downloaded by the script (or read from "
           "slim copies), never committed.", "", "```", command, "```", "",
           f"Findings: {sum(len(r.findings) for r in runs)} over {len(runs)} trees; errors "
           f"{len(errors)} ({sum(f['class'] == 'real' for f in errors)} classified real, "
           f"{sum(f['class'] == 'false' for f in errors)} false, "
           f"{sum(f['class'] == 'unclassified' for f in errors)} unclassified); by class: "
           + ", ".join(f"{k} {v}" for k, v in counts.items()) + ".", ""]
    if mutations is not None:
        s = mutations["summary"]
        out += ["## Mutation benchmark", "",
                f"`bench/lint_mutations.py` ({mutations['date']}, linter at `{mutations['commit']}`): "
                f"recall as errors **{s['found_as_error']} of {s['expect_error']}** "
                f"({_pct(s['recall_errors'])}), recall as any finding {s['found_as_any']} of "
                f"{s['mutations']} ({_pct(s['recall_any'])}), false findings: "
                f"{s['false_flagged']} of {s['clean_refactors']} correct refactors flagged "
                f"({s['false_findings']} findings); every mutation and refactor in "
                f"[`{mutations_md or 'lint-mutations.md'}`]({mutations_md or 'lint-mutations.md'}).",
                ""]
    if defects:
        out += ["## Known defects: reported as errors?", "",
                "From `[[expected]]` in the classification file: defects the releases have, "
                "whether the linter reports them or not.", "",
                "| release | where | class | reported | what |", "|---|---|---|---|---|"]
        out += [f"| {run.release} | `{e.path}` | {e.class_} | {status} | {_one_line(e.why)} |"
                for e, run, status in defects]
        out.append("")
    out += ["## Cost", "",
            "| release | files | lines | errors | warnings | notes | CPU s | wall s | peak RSS MiB "
            "| lines per CPU s |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        sev = [sum(f["severity"] == s for f in r.findings) for s in ("error", "warning", "note")]
        out.append(f"| {r.release} | {r.files:,} | {r.lines:,} | {sev[0]} | {sev[1]} | {sev[2]} | "
                   f"{r.cpu_s:.1f} | {r.wall_s:.1f} | {r.rss_mib:.0f} | "
                   f"{r.lines / r.cpu_s:,.0f} |")
    fit = _fit(runs)
    if fit is not None:
        a, b = fit
        out += ["", f"Least squares over the {len(runs)} trees: CPU s ≈ {a:.1f} + {b:.1f} µs × "
                    f"lines (the cost grows linearly with the tree: "
                    f"{1e6 / b:,.0f} lines per CPU second at the margin). Wall times depend on "
                    "the other jobs sharing the machine's two cores; CPU seconds are the "
                    "comparable number."]
    for r in runs:
        out += ["", f"## {r.release}", ""]
        if not r.findings:
            out.append("No finding.")
            continue
        out += ["| finding | severity | class | why |", "|---|---|---|---|"]
        for f in r.findings:
            subject = f" `{f['subject']}`" if f["subject"] else ""
            klass = f["class"] if f["class"] != "unclassified" else "**unclassified**"
            if f["severity"] == "error" and f["class"] == "real":
                klass = "**real**"
            out.append(f"| `{f['rel']}:{f['line']}:{f['col']}` {f['code']}{subject} | "
                       f"{f['severity']} | {klass} | {f['why'] or _one_line(f['message'])} |")
    stale = [e for i, e in enumerate(cls.finding) if i not in used]
    if stale:
        out += ["", "## Classification entries that matched no finding", "",
                "| path | code | subject | releases | class |", "|---|---|---|---|---|"]
        out += [f"| `{e.path}` | {e.code} | {e.subject or '-'} | {e.releases or 'all'} | "
                f"{e.class_} |" for e in stale]
    return "\n".join(out) + "\n"


def _one_line(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")[:300]


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f} %"


def _earlier(path: Path, releases: list[Release]) -> list[Run]:
    """The runs of an earlier report, in the order of ``releases``."""
    report = json.loads(path.read_text(encoding="utf-8"))
    by_name = {r["release"]: r for r in report["releases"]}
    missing = [str(r) for r in releases if str(r) not in by_name]
    if missing:
        raise ReleaseError(f"{path} has no run of {', '.join(missing)} "
                           f"(it has {', '.join(by_name) or 'none'})")
    return [Run(r, by_name[str(r)]["files"], by_name[str(r)]["lines"], by_name[str(r)]["cpu_s"],
                by_name[str(r)]["wall_s"], by_name[str(r)]["rss_mib"], 0,
                by_name[str(r)]["findings"]) for r in releases]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sources", type=Path, action="append", default=[], metavar="DIR")
    ap.add_argument("--cache", type=Path, default=default_cache(), metavar="DIR")
    ap.add_argument("--no-download", action="store_true",
                    help="a release missing from --sources and --cache is an error (exit 2)")
    ap.add_argument("--only", action="append", default=[], metavar="SPEC",
                    help="releases to lint (vllm==0.33.0), comma-separated (default: all 14)")
    ap.add_argument("--jobs", type=int, default=None, help="passed to the CLI (default: its own)")
    ap.add_argument("--classification", type=Path, default=CLASSIFICATION, metavar="FILE")
    ap.add_argument("--mutations", type=Path, default=None, metavar="JSON",
                    help="bench/lint_mutations.py --json output to summarise")
    ap.add_argument("--out", type=Path, required=True, metavar="STEM",
                    help="writes STEM.json and STEM.md")
    ap.add_argument("--reclassify", type=Path, default=None, metavar="JSON",
                    help="take the findings and costs of an earlier STEM.json instead of linting "
                         "again (after the classification file changed)")
    args = ap.parse_args(argv)
    try:
        specs = [s for item in args.only for s in item.split(",") if s] or RELEASES
        releases = [parse_spec(s) for s in specs]
        cls = load_classification(args.classification)
        mutations = (json.loads(args.mutations.read_text(encoding="utf-8"))
                     if args.mutations else None)
        roots = {str(r): source(r, args.cache, args.sources, download=not args.no_download) for r in releases}
        if args.reclassify is not None:
            runs = _earlier(args.reclassify, releases)
        else:
            runs = []
            for r in releases:
                print(f"linting {r} ...", file=sys.stderr, flush=True)
                runs.append(lint_release(r, roots[str(r)], args.jobs))
    except (ReleaseError, OSError, json.JSONDecodeError) as err:
        print(f"lint_releases: {err}", file=sys.stderr)
        return 2
    used = classify(runs, roots, cls)
    defects = known_defects(runs, roots, cls)
    command = "python bench/lint_releases.py " + " ".join(
        argv if argv is not None else sys.argv[1:])
    lint_command = command
    if args.reclassify is not None:  # the findings are the earlier run's: say how it was made
        earlier = json.loads(args.reclassify.read_text(encoding="utf-8"))
        lint_command = earlier.get("lint_command", earlier["command"])
    shown = command if lint_command == command else f"{lint_command}\n{command}"
    md_name = args.mutations.with_suffix(".md").name if args.mutations else None
    args.out.with_suffix(".md").write_text(
        markdown(runs, cls, used, shown, mutations, md_name, defects), encoding="utf-8")
    args.out.with_suffix(".json").write_text(json.dumps({
        "command": command, "lint_command": lint_command, "commit": _commit(),
        "date": date.today().isoformat(),
        "releases": [{"release": str(r.release), "files": r.files, "lines": r.lines,
                      "cpu_s": round(r.cpu_s, 2), "wall_s": round(r.wall_s, 2),
                      "rss_mib": round(r.rss_mib, 1), "findings": r.findings} for r in runs],
    }, indent=1) + "\n", encoding="utf-8")
    for run in runs:
        sev = {s: sum(f["severity"] == s for f in run.findings)
               for s in ("error", "warning", "note")}
        unclassified = sum(f["class"] == "unclassified" for f in run.findings)
        print(f"{run.release}: {run.files} files, {run.lines:,} lines, {sev}, {unclassified} "
              f"unclassified, {run.cpu_s:.1f} CPU s, {run.rss_mib:.0f} MiB", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
