"""When the next release lands: check the newest vLLM, SGLang and FlashInfer on the index.

    make release-check            # = python tools/release_check.py

For each distribution (``--dist``, repeatable; default vllm, sglang, flashinfer-python) the
newest release on the package index (``pip index versions``; ``--release DIST==VERSION`` names
one instead, no index asked) is, unless it is on the verified list already:

1. checked against the catalog, ``tools/check_catalog.py --release DIST==VERSION`` (its ``.py``
   files downloaded once into ``bench/_releases.py``'s cache; its results file written under
   ``--results``): which cited functions changed, which records no longer hold;
2. for an engine (vLLM, SGLang), read by ``attn-contracts engine <engine> --source`` (the mapping
   derived from its own sources, the records of the newest verified release): its errors.

Then it says what to update: nothing (the release changes nothing the catalog cites: write it),
the records whose citations broke (fix or close their ranges there), the changed ones to review,
and the engine errors to classify in ``bench/results/engine-<engine>.md``. Exit 0 when every
release is verified already or changes nothing; 1 when something is to update; 2 when a release
cannot be found or fetched. Nothing is written to the catalog (``--write`` is the human's step).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tools"))

from _releases import Release  # noqa: E402
from _releases import ReleaseError  # noqa: E402
from _releases import default_cache  # noqa: E402
from _releases import parse_spec  # noqa: E402
from _releases import source  # noqa: E402

from attn_contracts.versions import verified_dists  # noqa: E402

DEFAULT = ("vllm", "sglang", "flashinfer-python")
#: distribution → the engine whose mapping ``attn-contracts engine`` derives from its sources
ENGINES = {"vllm": "vllm", "sglang": "sglang"}


def newest_on_index(dist: str) -> str:
    """The newest release of ``dist`` on the configured index (``pip index versions``)."""
    done = subprocess.run([sys.executable, "-m", "pip", "index", "versions", dist,
                           "--disable-pip-version-check"], capture_output=True, text=True)
    found = re.search(rf"^{re.escape(dist)} \(([^)]+)\)", done.stdout, re.MULTILINE | re.I)
    if done.returncode != 0 or found is None:
        last = (done.stderr.strip().splitlines() or ["no versions listed"])[-1]
        raise ReleaseError(f"cannot list the releases of {dist} on the index: {last}")
    return found.group(1)


def _engine_errors(engine: str, root: Path) -> tuple[int, list[str]]:
    """(exit code, the error lines) of ``attn-contracts engine <engine>`` over ``root``."""
    option = "--source" if engine == "vllm" else "--root"
    tree = root if engine == "vllm" else root / engine
    done = subprocess.run([sys.executable, "-m", "attn_contracts.cli", "engine", engine, option,
                           str(tree)], capture_output=True, text=True, cwd=ROOT)
    errors = [line for line in done.stdout.splitlines()
              if re.search(r": AC\d{3} ", line) and " [warning] " not in line
              and " [note] " not in line]
    return done.returncode, errors


def check(rel: Release, results: Path) -> tuple[list[str], bool]:
    """What to update for one release, and whether any of it needs a review (a broken or
    changed citation, an engine error); without one, only its ``--write`` is left."""
    import check_catalog

    todo: list[str] = []
    rc, rows = check_catalog.check_release(str(rel), write=False, out_dir=results, releases=None,
                                           stored=check_catalog.load_citations())
    if rc == 2:
        raise ReleaseError(f"{rel}: cannot be read")
    broken = sorted({str(r["record"]) for r in rows if r["status"] == "broken"})
    changed = sorted({str(r["record"]) for r in rows if r["status"] == "changed"})
    if broken:
        todo.append(f"{rel}: citations broken, the records do not hold there: {', '.join(broken)} "
                    "(fix each record, or close its range at this release)")
    if changed:
        todo.append(f"{rel}: cited functions changed (signature, default or body), review: "
                    f"{', '.join(changed)}")
    engine = ENGINES.get(rel.dist)
    if engine is not None:
        root = source(rel, default_cache())
        code, errors = _engine_errors(engine, root)
        if code not in (0, 1):
            todo.append(f"{rel}: `attn-contracts engine {engine}` could not read it (exit {code})")
        elif errors:
            todo.append(f"{rel}: `attn-contracts engine {engine}` gives {len(errors)} error(s): "
                        f"classify each in bench/results/engine-{engine}.md (bench/engine_"
                        f"{engine}.py) and fix the false ones")
    review = bool(todo)
    todo.append(f"{rel}: {'once reviewed, ' if review else 'changes nothing the catalog cites; '}"
                f"`python tools/check_catalog.py --release {rel} --write` adds it to the verified "
                f"list (results: {results}/)")
    return todo, review


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dist", action="append", help=f"a distribution (default: {', '.join(DEFAULT)})")
    p.add_argument("--release", action="append", default=[], metavar="DIST==VERSION",
                   help="check this release instead of asking the index for the newest")
    p.add_argument("--results", type=Path, default=Path("/tmp/attn-contracts-release-check"),
                   help="where check_catalog's release-<library>-<version>.md goes")
    args = p.parse_args(argv)
    verified = {(d.dist, v) for d in verified_dists() for v in d.verified}
    try:
        wanted = [parse_spec(s) for s in args.release] or [
            Release(d, newest_on_index(d)) for d in (args.dist or DEFAULT)]
    except ReleaseError as err:
        print(f"release-check: {err}", file=sys.stderr)
        return 2
    review = False
    for rel in wanted:
        if (rel.dist, rel.version) in verified:
            print(f"{rel}: verified already (backends/catalog/facts/verified.toml)")
            continue
        try:
            found, needs = check(rel, args.results)
        except ReleaseError as err:
            print(f"release-check: {err}", file=sys.stderr)
            return 2
        review |= needs
        for line in found:
            print(line)
    return 1 if review else 0


if __name__ == "__main__":
    sys.exit(main())
