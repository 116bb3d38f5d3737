"""Facts about other people's code that are not records, read from data files beside the catalog.

``attn_contracts.backends``' ``catalog/facts/*.toml`` hold what each library's kernels are known
to emit (the hint of an ``AC001``), the adapters this project ships, the class attributes an
engine declares its LSE with, and what an engine module re-exports from Triton. Code reads them
here; ``tools/check_catalog.py`` checks the ones that cite a release against it. Nothing is read
at import: each file is read once, when first asked for (the package data is located like the
catalog's, by ``importlib.resources``).
"""

from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from importlib import resources
from typing import Any

__all__ = ["EngineAttributes", "builtin_adapters", "engine_attributes", "facts_file",
           "library_hint", "reexports"]


@functools.cache
def facts_file(name: str) -> dict[str, Any]:
    """The parsed ``catalog/facts/<name>.toml`` (cached; the shipped files are tested)."""
    entry = resources.files("attn_contracts.backends") / "catalog" / "facts" / f"{name}.toml"
    return tomllib.loads(entry.read_text(encoding="utf-8"))


def library_hint(library: str | None) -> str | None:
    """What ``library``'s kernels are known to emit (None for a library the data does not know);
    the name is matched as records spell it (``flash-attn`` is ``flash_attn``)."""
    key = (library or "").lower().replace("-", "_")
    entry = facts_file("libraries").get("library", {}).get(key)
    return None if entry is None else str(entry["hint"])


@dataclass(frozen=True)
class EngineAttributes:
    """The class attributes an engine's attention impls declare their LSE with."""

    engine: str
    returns: tuple[str, ...]  # True: the impl returns an LSE (any of them)
    base: tuple[str, ...]  # True: base e, False: base 2
    capabilities: tuple[str, ...]  # capability names whose getattr default / assert is flagged
    file: str  # where the releases in ``versions`` define them
    versions: str
    capabilities_versions: str  # the releases that define the capabilities there


def engine_attributes(engine: str = "vllm") -> EngineAttributes:
    """The attribute names of ``engine`` (``KeyError`` for an engine the data does not know)."""
    raw = facts_file("attributes")["engine"][engine]
    return EngineAttributes(engine, tuple(raw["returns"]), tuple(raw["base"]),
                            tuple(raw.get("capabilities", ())), raw["file"], raw["versions"],
                            raw.get("capabilities_versions", raw["versions"]))


@functools.cache
def reexports() -> tuple[dict[str, str], dict[str, float]]:
    """What engine modules re-export from Triton (``catalog/facts/attributes.toml``,
    ``[reexports]``): qualified name → the module it is (``vllm.triton_utils.tl`` →
    ``triton.language``), and qualified name → the number a constant is."""
    modules: dict[str, str] = {}
    constants: dict[str, float] = {}
    for raw in facts_file("attributes").get("reexports", {}).values():
        package = raw["file"].removesuffix("/__init__.py").removesuffix(".py").replace("/", ".")
        modules.update({f"{package}.{k}": v for k, v in raw.get("modules", {}).items()})
        constants.update({f"{package}.{k}": float(v) for k, v in raw.get("constants", {}).items()})
    return modules, constants


def builtin_adapters() -> tuple[str, dict[str, str]]:
    """The package of this project's adapters (always allowed), and library function →
    built-in adapter (``module:function``)."""
    raw = facts_file("adapters")
    return str(raw["package"]), {k: str(v["adapter"]) for k, v in raw.get("known", {}).items()}
