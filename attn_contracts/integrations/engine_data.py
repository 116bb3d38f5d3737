"""The hand-kept facts about an engine that its code does not say in a form a mapping can read:
``backends/catalog/engines/<engine>.toml``, a table of entries per kind, each holding for the
releases in its ``versions`` (PEP 440) and citing the file (and class or function) it describes.

A release that no entry of a kind holds is read with the newest entry, and told so (never passed
silently). ``tools/check_catalog.py`` checks every entry against the releases it covers.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from attn_contracts.versions import in_range

__all__ = ["EngineData", "Entry", "engine_data"]

_DISPLAY = {"vllm": "vLLM", "sglang": "SGLang"}


@dataclass(frozen=True)
class Entry:
    """One entry: the releases it holds for, the file it cites, the class or function there."""

    versions: str
    file: str
    cls: str  # the class it names ("" for an entry that names a function)
    source: str
    data: dict[str, Any]

    @property
    def function(self) -> str:
        return str(self.data.get("function", ""))


@dataclass(frozen=True)
class EngineData:
    """One engine's file, parsed: ``kinds`` maps a table name (``enum``, ``registry``) to its
    entries in file order (oldest range first)."""

    engine: str
    kinds: dict[str, tuple[Entry, ...]]

    @property
    def file(self) -> str:
        return f"{self.engine}.toml"

    def entries(self, kind: str) -> tuple[Entry, ...]:
        return self.kinds.get(kind, ())

    # the vLLM tables, by name
    @property
    def enum(self) -> tuple[Entry, ...]:
        return self.entries("enum")

    @property
    def declaration(self) -> tuple[Entry, ...]:
        return self.entries("declaration")

    @property
    def dcp_call(self) -> tuple[Entry, ...]:
        return self.entries("dcp_call")

    def pick(self, entries: Sequence[Entry], version: str | None) -> tuple[Entry, str]:
        """The entry for ``version``, and a note when it is only the newest one (an unseen or
        unknown release)."""
        for e in entries:
            if version and in_range(e.versions, version, unparsed=False):
                return e, ""
        newest = entries[-1]
        return newest, (f"no entry of {self.file} holds {_DISPLAY.get(self.engine, self.engine)} "
                        f"{version or '(version unknown)'}; read with the newest ({newest.versions})")

    def all_for(self, entries: Sequence[Entry], version: str | None) -> list[Entry]:
        return [e for e in entries if version and in_range(e.versions, version, unparsed=False)]


@lru_cache(maxsize=4)
def engine_data(engine: str) -> EngineData:
    """``backends/catalog/engines/<engine>.toml`` (read once)."""
    text = (resources.files("attn_contracts.backends") / "catalog" / "engines" /
            f"{engine}.toml").read_text(encoding="utf-8")
    raw = tomllib.loads(text)
    kinds = {kind: tuple(Entry(str(r["versions"]), str(r["file"]), str(r.get("class", "")),
                               str(r["source"]), r) for r in rows)
             for kind, rows in raw.items() if isinstance(rows, list)}
    return EngineData(engine, kinds)
