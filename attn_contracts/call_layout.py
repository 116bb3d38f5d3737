"""A producer's LSE layout chosen by its call (FlashInfer 0.7.2.post1's ``lse_layout``), as its base
already is (:mod:`attn_contracts.call_base`).

FlashInfer #5257 gave the prefill wrappers' ``run()`` a keyword for the layout of the LSE they
return: ``lse_layout="NH"`` (the default, ``[tokens, heads]``, what the kernels write) or ``"HN"``
(``[heads, tokens]``, one fused transpose), beside ``lse_base="log2"|"ln"``. A
:class:`CallLayout` on a record's call says so, in the shape :class:`~attn_contracts.call_base.
CallBase` has, so whoever reads one reads the other the same way (the edge check at startup, the
linter); :meth:`CallLayout.resolve` gives the layout for a call's literal arguments, or ``None``
where an argument the record cannot read decides it::

    layout = { keyword = "lse_layout", values = { "'NH'" = "token_head", "'HN'" = "head_token" },
               unset = [], default = "token_head" }

Literals are keyed as Python source; any spelling of the same value matches (``"HN"`` and
``'HN'`` are one value). A literal the record does not list selects no layout (``resolve`` gives
``None`` and :meth:`CallLayout.known` says it is not one the kernel takes).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated
from typing import Literal

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import WithJsonSchema

from attn_contracts._tables import as_pairs
from attn_contracts.call_base import literal_key

__all__ = ["CallLayout"]

_Layout = Literal["token_head", "head_token"]

_Map = Annotated[tuple[tuple[Annotated[str, Field(strict=True)], _Layout], ...],
                 *as_pairs(literal_key),
                 WithJsonSchema({"type": "object", "additionalProperties": {
                     "type": "string", "enum": ["token_head", "head_token"]}})]


class CallLayout(BaseModel):
    """The layout a call returns, chosen by ``keyword`` (``values``: literal → layout). Left
    out, or given one of ``unset``, ``default`` applies (``None``: nothing decides it)."""

    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")

    keyword: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
    values: Annotated[_Map, Field(min_length=1)]
    unset: Annotated[tuple[str, ...], Field(strict=False)] = ("None",)
    default: _Layout | None = None

    def layouts(self) -> tuple[str, ...]:
        """Every layout a call can get."""
        return tuple(sorted({lay for _, lay in self.values} | ({self.default} if self.default
                                                                else set())))

    def known(self, literal: str) -> bool:
        """Whether ``literal`` (Python source) is a value the record lists, or an unset one."""
        key = literal_key(literal)
        return key in dict(self.values) or key in {literal_key(u) for u in self.unset}

    def resolve(self, call: Mapping[str, str]) -> str | None:
        """The layout for a call's arguments (keyword → Python literal text; an argument that is
        not a literal is absent from ``call`` or given as ``"<expr>"``); ``None``: an expression
        or a value the record does not list decides it."""
        chosen = call.get(self.keyword)
        if chosen is None or literal_key(chosen) in {literal_key(u) for u in self.unset}:
            return self.default
        return dict(self.values).get(literal_key(chosen))

    def pass_hint(self, layout: str | None = None) -> str:
        """``lse_layout='HN'`` for ``head_token`` (every value where ``layout`` is None)."""
        lits = [k for k, lay in self.values if layout is None or lay == layout]
        return " or ".join(f"{self.keyword}={k}" for k in lits)
