"""Function identities that follow releases, and the version of the tree being linted.

Engines move code: vLLM 0.25 defined ``cp_lse_ag_out_rs`` in ``vllm/v1/attention/ops/common.py``,
0.32 and later in ``vllm/v1/attention/ops/dcp.py``. A record's call names its function once per
path with the release range it holds for (``versions``, a PEP 440 specifier of the record's
library); the linter learns the linted tree's version of each library (:func:`tree_versions`:
``[tool.attn-contracts] versions``, a ``*.dist-info`` beside the package, or its ``version.py`` /
``_version.py``; the dependencies its dist-info pins exactly, ``flashinfer-python==0.6.13``) and
keeps the calls and records whose range holds it (:func:`in_range`). Where
the version is unknown every candidate stays, and the rules use what the candidates agree on.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

__all__ = ["in_range", "package_version", "pinned_requirements", "tree_versions"]

_VERSION_FILES = ("version.py", "_version.py", "__init__.py")
_NAMES = ("__version__", "version", "VERSION", "__VERSION__")


def in_range(specifier: str, version: str | None) -> bool:
    """Whether ``version`` is inside ``specifier`` ("" and an unknown version: yes; a version
    that is not PEP 440, or a specifier that does not parse: yes, never a silent drop)."""
    if not specifier or version is None:
        return True
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        return Version(version) in SpecifierSet(specifier, prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return True


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
    versions``) wins."""
    found: dict[str, str] = {}
    for path in paths:
        root = _package_root(path.resolve()) if path.exists() else None
        if root is None or root.name in found:
            continue
        version = package_version(root)
        if version is not None:
            found[root.name] = version
        for lib, pin in pinned_requirements(root).items():
            found.setdefault(lib, pin)
    found.update(configured or {})
    return found
