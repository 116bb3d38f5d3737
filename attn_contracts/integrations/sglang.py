"""SGLang: its attention backends mapped to kernel records, read statically (placeholder)."""

from __future__ import annotations

from typing import Any

__all__ = ["report"]


def report(backend: str | None = None, *, root: str | None = None) -> list[Any]:
    raise FileNotFoundError("the SGLang mapping is not written yet")
