"""Small string-keyed tables (``{"True" = "e"}`` in TOML) in a record: kept as sorted pairs so the
record stays hashable; they serialise, and appear in the JSON schema, as the tables they are
written as (each table type adds its own ``WithJsonSchema``)."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from typing import Any

from pydantic import AfterValidator
from pydantic import BeforeValidator
from pydantic import Field
from pydantic import PlainSerializer

__all__ = ["as_pairs"]


def _pairs(value: Any) -> Any:
    return tuple(value.items()) if isinstance(value, Mapping) else value


def as_pairs(key: Callable[[str], str] | None = None) -> tuple[Any, ...]:
    """The ``Annotated`` metadata of such a table; ``key`` respells each key before the sort."""
    if key is None:
        after = AfterValidator(lambda pairs: tuple(sorted(pairs)))
    else:
        respell = key
        after = AfterValidator(lambda pairs: tuple(sorted((respell(k), v) for k, v in pairs)))
    return BeforeValidator(_pairs), after, PlainSerializer(dict), Field(strict=False)
