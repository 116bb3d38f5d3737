"""Function identities that follow releases, and the version of the tree being linted.

Engines move code: vLLM 0.25 defined ``cp_lse_ag_out_rs`` in ``vllm/v1/attention/ops/common.py``,
0.32 and later in ``vllm/v1/attention/ops/dcp.py``. A record's call names its function once per
path with the release range it holds for (``versions``, a PEP 440 specifier of the record's
library); the linter learns the linted tree's version of each library (:func:`tree_versions`:
``[tool.attn-contracts] versions``, a ``*.dist-info`` beside the package, or its ``version.py`` /
``_version.py``; the dependencies its dist-info pins exactly, ``flashinfer-python==0.6.13``) and
keeps the calls and records whose range holds it (:func:`in_range`). Where
the version is unknown every candidate stays, and the rules use what the candidates agree on.
Each linted file has the release of its own tree (:func:`tree_root`, :func:`versions_of_tree`):
two trees of one package at two releases are linted each at its own.
"""

from __future__ import annotations

import ast
import re
import tomllib
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

__all__ = ["Resolved", "VerifiedDist", "effective_range", "in_range", "library_key",
           "package_version", "pinned_requirements", "ranges_overlap", "resolve", "resolve_all",
           "tree_root", "tree_versions", "verified_dists", "verified_releases", "versions_of_tree"]

_VERSION_FILES = ("version.py", "_version.py", "__init__.py")
_NAMES = ("__version__", "version", "VERSION", "__VERSION__")


def in_range(specifier: str, version: str | None, *, unparsed: bool = True) -> bool:
    """Whether ``version`` is inside ``specifier`` (pre-releases and local labels included:
    ``0.32.0+cpu`` is in ``>=0.32,<0.33``). The one release-range check of the project.

    "" and an unknown version: yes. A version that is not PEP 440, or a specifier that does not
    parse: ``unparsed`` — yes by default (the linter keeps a candidate rather than silently drop
    it); ``unparsed=False`` where only a version shown to be inside counts (which engine mapping
    applies, whether an installed library is inside a record's range)."""
    if not specifier or version is None:
        return True
    from packaging.specifiers import InvalidSpecifier
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion
    from packaging.version import Version

    try:
        return Version(version) in SpecifierSet(specifier, prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return unparsed


def library_key(name: str) -> str:
    """One spelling of a library or distribution name: PEP 503 normalised, with ``_`` for the
    separators and without a ``-python`` suffix (``flashinfer-python``, ``FlashInfer`` and
    ``flashinfer`` are one library; ``sgl-kernel`` is ``sgl_kernel``)."""
    return re.sub(r"[-_.]+", "_", name).lower().removesuffix("_python")


def effective_range(*specifiers: str) -> str:
    """The releases a record's call holds for: its record's ``library_version`` and the call's
    ``versions``, both (an empty one admits every release)."""
    return ",".join(s.strip() for s in specifiers if s.strip())


def _candidates(specifier: str) -> list[str]:
    """Versions where the set of releases one of ``specifier``'s clauses admits begins or ends:
    the clause's version, the lowest version of its release (``0.25.dev0``) and one just above
    it (``0.25.0.0.0.1``: above every 0.25 release PEP 440's ``>0.25`` admits, below 0.25.1)."""
    from packaging.specifiers import InvalidSpecifier
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion
    from packaging.version import Version

    out = ["0.dev0"]
    try:
        clauses = list(SpecifierSet(specifier))
    except InvalidSpecifier:
        return out
    for clause in clauses:
        try:
            v = Version(clause.version.removesuffix(".*"))
        except InvalidVersion:
            continue
        release = ".".join(map(str, v.release))
        epoch = f"{v.epoch}!" if v.epoch else ""
        out += [str(v), f"{epoch}{release}.dev0", f"{epoch}{release}.0.0.0.1"]
    return out


def ranges_overlap(a: str, b: str) -> bool:
    """Whether some release is in both PEP 440 specifiers (``""`` admits every release; one that
    does not parse overlaps everything, as :func:`in_range` admits every version to it).

    Both are unions of intervals, so if they meet, they meet at or just above the lowest
    point of the intersection, which is a boundary of one of them: each clause's version, the
    lowest version of its release and a version just above it are tried."""
    from packaging.specifiers import InvalidSpecifier
    from packaging.specifiers import SpecifierSet

    try:
        sa, sb = SpecifierSet(a, prereleases=True), SpecifierSet(b, prereleases=True)
    except InvalidSpecifier:
        return True
    return any(sa.contains(v) and sb.contains(v) for v in {*_candidates(a), *_candidates(b)})


def _literal_version(path: Path) -> str | None:
    """``__version__ = "0.33.0"`` (or ``version``/``VERSION``, or a tuple assigned to one)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    if not any(n in text for n in _NAMES):
        return None
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else (
            [node.target] if isinstance(node, ast.AnnAssign) and node.value is not None else [])
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        if any(isinstance(t, ast.Name) and t.id in _NAMES for t in targets) and \
                isinstance(value, ast.Constant) and isinstance(value.value, str) and \
                re.match(r"^\d+(\.\d+)*", value.value):
            return value.value
    return None


def _dist_info_version(package: Path) -> str | None:
    """``<site>/<name>-<version>.dist-info/METADATA`` beside ``<site>/<package>``."""
    name = package.name.lower().replace("-", "_")
    for meta in sorted(package.parent.glob("*.dist-info/METADATA")):
        try:
            head = meta.read_text(encoding="utf-8", errors="replace")[:4000]
        except OSError:
            continue
        n = re.search(r"^Name:\s*(\S+)", head, re.MULTILINE)
        v = re.search(r"^Version:\s*(\S+)", head, re.MULTILINE)
        if n and v and n.group(1).lower().replace("-", "_") in (name, f"{name}_python"):
            return v.group(1)
        top = meta.parent / "top_level.txt"
        if v and top.is_file() and name in top.read_text(errors="replace").split():
            return v.group(1)
    return None


def pinned_requirements(package: Path) -> dict[str, str]:
    """Library → version of the ``Requires-Dist: name==version`` pins in the package's
    dist-info (vLLM 0.25 pins ``flashinfer-python==0.6.13``): the release of a dependency the
    tree is built for. ``flashinfer-python`` is the library ``flashinfer``."""
    name = package.name.lower().replace("-", "_")
    out: dict[str, str] = {}
    for meta in sorted(package.parent.glob("*.dist-info/METADATA")):
        try:
            head = meta.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        n = re.search(r"^Name:\s*(\S+)", head, re.MULTILINE)
        if not n or n.group(1).lower().replace("-", "_") != name:
            continue
        for m in re.finditer(r"^Requires-Dist:\s*([A-Za-z0-9_.-]+)\s*==\s*([0-9][^\s;,]*)\s*$",
                             head, re.MULTILINE):
            lib = m.group(1).lower().replace("-", "_").removesuffix("_python")
            out.setdefault(lib, m.group(2))
    return out


def package_version(package: Path) -> str | None:
    """The release of a package folder: its dist-info, else its version module."""
    found = _dist_info_version(package)
    if found:
        return found
    for f in _VERSION_FILES:
        if (package / f).is_file() and (v := _literal_version(package / f)):
            return v
    return None


def tree_root(path: Path) -> Path | None:
    """The top-level package folder of a linted file or folder (None outside any package)."""
    return _package_root(path.resolve()) if path.exists() else None


def versions_of_tree(root: Path | None, configured: Mapping[str, str] | None = None,
                     ) -> dict[str, str]:
    """Library → version for one tree: its own package's release (dist-info or version
    module) and the dependencies its dist-info pins; ``configured`` wins."""
    found: dict[str, str] = {}
    if root is not None:
        version = package_version(root)
        if version is not None:
            found[root.name] = version
        for lib, pin in pinned_requirements(root).items():
            found.setdefault(lib, pin)
    found.update(configured or {})
    return found


def _package_root(path: Path) -> Path | None:
    """The top-level package folder a file or folder belongs to (the highest folder above it
    that holds an ``__init__.py``)."""
    p = path if path.is_dir() else path.parent
    top = None
    while (p / "__init__.py").is_file():
        top = p
        if p.parent == p:
            break
        p = p.parent
    return top


def tree_versions(paths: Iterable[Path], configured: Mapping[str, str] | None = None,
                  ) -> dict[str, str]:
    """Library → version for the packages the linted paths sit in (the folder name is the
    library: ``vllm``, ``sglang``, ``flashinfer``); ``configured`` (``[tool.attn-contracts]
    versions``) wins. One mapping for all the paths, so where two of them are trees of one
    package the first one's release is kept: the linter asks :func:`versions_of_tree` per
    file instead."""
    found: dict[str, str] = {}
    for path in paths:
        root = tree_root(path)
        if root is not None and root.name not in found:
            for lib, version in versions_of_tree(root).items():
                found.setdefault(lib, version)
    found.update(configured or {})
    return found


# --- the releases the catalog was verified on -----------------------------------------------


@dataclass(frozen=True)
class VerifiedDist:
    """One distribution of ``backends/catalog/verified.toml``: the record library it is, its
    top-level package and the releases ``tools/check_catalog.py`` verified the catalog on."""

    dist: str
    library: str
    package: str
    verified: tuple[str, ...]


def _verified_text() -> str:
    return (resources.files("attn_contracts.backends") / "catalog" / "facts" / "verified.toml").read_text(
        encoding="utf-8")


@lru_cache(maxsize=1)
def verified_dists() -> tuple[VerifiedDist, ...]:
    """Every distribution of the verified list, in file order."""
    raw = tomllib.loads(_verified_text()).get("dist", {})
    return tuple(VerifiedDist(dist, str(t["library"]), str(t["package"]),
                              tuple(str(v) for v in t.get("verified", ())))
                 for dist, t in raw.items())


def verified_releases(library: str) -> tuple[str, ...]:
    """The verified releases of a record library (every distribution of it), oldest first;
    ``()`` for a library the list does not hold (its versions are taken as they are)."""
    from packaging.version import InvalidVersion
    from packaging.version import Version

    key = library_key(library)
    found = {v for d in verified_dists() if library_key(d.library) == key for v in d.verified}

    def order(v: str) -> tuple[int, Version | str]:
        try:
            return 0, Version(v)
        except InvalidVersion:
            return 1, v
    return tuple(sorted(found, key=order))


@dataclass(frozen=True)
class Resolved:
    """The release whose verified facts a version is read with, and a note where that is not
    the version itself (empty where it is verified, or the library has no verified list)."""

    library: str
    version: str
    used: str
    note: str = ""


def resolve(library: str, version: str) -> Resolved:
    """The verified release ``version`` of ``library`` is read as.

    A verified release (a local label aside: ``0.32.0+cpu`` is 0.32.0) is itself. A release
    newer than the newest verified one gets the newest one's facts; one between two verified
    releases the newest verified one below it (the facts that held last before it: FlashInfer
    0.7.3, pinned by vLLM 0.34.0 and absent from the index, reads as 0.7.2.post1); either way one
    note names the command that verifies it. A release older than every verified one, or a
    version that does not parse, stays as it is (the records' own ranges decide), with a note
    for the former. Never an error: a release is not a defect by itself."""
    from packaging.version import InvalidVersion
    from packaging.version import Version

    releases = verified_releases(library)
    if not releases:
        return Resolved(library, version, version)
    try:
        have = Version(version)
    except InvalidVersion:
        return Resolved(library, version, version)
    parsed = []
    for r in releases:
        try:
            parsed.append((Version(r), r))
        except InvalidVersion:
            continue
    if any(v == have or v.public == have.public for v, _ in parsed):
        return Resolved(library, version, version)
    dist = next((d.dist for d in verified_dists() if library_key(d.library) == library_key(
        library)), library)
    command = f"run `tools/check_catalog.py --release {dist}=={version}`"
    below = [(v, r) for v, r in parsed if v < have]
    if not below:
        return Resolved(library, version, version,
                        f"{library} {version} not verified (older than every verified release, "
                        f"{releases[0]}): read by the records' own ranges; {command}")
    used = max(below)[1]
    newest = max(parsed)[1]
    where = "the newest verified" if used == newest else "the nearest verified release below it"
    return Resolved(library, version, used,
                    f"{library} {version} not verified: read with the facts of {library} {used} "
                    f"({where}); {command}")


def resolve_all(versions: Mapping[str, str]) -> tuple[dict[str, str], list[Resolved]]:
    """Every library's version resolved (:func:`resolve`), and those that carry a note."""
    out: dict[str, str] = {}
    notes: list[Resolved] = []
    for lib, v in versions.items():
        r = resolve(lib, v)
        out[lib] = r.used
        if r.note:
            notes.append(r)
    return out, notes
