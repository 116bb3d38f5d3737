"""A producer's LSE base chosen by its call (FlashInfer 0.7.2's ``return_lse_base``).

Some kernels return the LSE in the base a keyword asks for, and left unset fall back to a default
that may itself depend on another argument: ``trtllm_batch_decode_with_kv_cache_mla(...,
return_lse_base=None|"base2"|"basee", backend="auto"|"trtllm-gen"|"cute-dsl"|"sparse")`` returns
base 2 from trtllm-gen and sparse, base e from cute-dsl, and under ``backend="auto"`` whatever the
dispatch picks at run time. A :class:`CallBase` on a record's call says so; :meth:`CallBase.resolve`
gives the base for a call's literal arguments, or ``None`` where it is left to dispatch::

    base = { keyword = "return_lse_base", values = { "'base2'" = "2", "'basee'" = "e" },
             unset = ["None"], default_by = "backend", default_by_omitted = "'auto'",
             default_values = { "'trtllm-gen'" = "2", "'sparse'" = "2", "'cute-dsl'" = "e" } }

Literals are keyed as Python source (``'basee'``, ``None``, ``True``); any spelling of the same
value matches (``"basee"`` and ``'basee'`` are one value).
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from typing import Annotated
from typing import Literal

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import WithJsonSchema
from pydantic import model_validator

from attn_contracts._tables import as_pairs

__all__ = ["CallBase", "literal_key"]

_Base = Literal["e", "2"]


def literal_key(text: str) -> str:
    """One spelling per Python value: ``"basee"``, ``'basee'`` → ``'basee'``; text that is no
    literal stays as it is."""
    try:
        return repr(ast.literal_eval(text.strip()))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text.strip()


_Map = Annotated[tuple[tuple[Annotated[str, Field(strict=True)], _Base], ...],
                 *as_pairs(literal_key),
                 WithJsonSchema({"type": "object", "additionalProperties": {
                     "type": "string", "enum": ["e", "2"]}})]
#: argument name -> the ``default_by`` literal its presence makes the dispatch pick
_Picks = Annotated[tuple[tuple[Annotated[str, Field(strict=True, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")],
                               Annotated[str, Field(strict=True)]], ...],
                   *as_pairs(),
                   WithJsonSchema({"type": "object", "additionalProperties": {"type": "string"}})]
#: what an argument of ``picked_by`` is given when the call does not ask for that path
_NOT_PICKED = frozenset({"0", "None", "False"})


class CallBase(BaseModel):
    """The base a call returns, chosen by ``keyword`` (``values``: literal → base). Left out, or
    given one of ``unset``, the default applies: ``default_values`` of the argument
    ``default_by`` (which is ``default_by_omitted`` when the call leaves it out), else
    ``default``; ``None`` where nothing decides: the base is left to run-time dispatch.

    ``picked_by``: arguments whose presence decides that dispatch (``{ sparse_mla_top_k =
    "'sparse'" }``: FlashInfer's ``backend="auto"`` MLA decode runs a call given a sparse top-k
    only on kernels of the sparse path). Given as a literal 0, ``None`` or ``False`` (the
    parameter's "off") it picks nothing; given as an expression it picks: an engine passes the
    argument to take that path."""

    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")

    keyword: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]
    values: Annotated[_Map, Field(min_length=1)]
    unset: Annotated[tuple[str, ...], Field(strict=False)] = ("None",)
    default_by: Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")] | None = None
    default_by_omitted: str | None = None
    default_values: _Map = ()
    default: _Base | None = None
    picked_by: _Picks = ()

    @model_validator(mode="after")
    def _consistent(self) -> CallBase:
        if self.default_values and self.default_by is None:
            raise ValueError("base.default_values needs base.default_by (the argument whose "
                             "value they are)")
        if self.picked_by and self.default_by_omitted is None:
            raise ValueError("base.picked_by needs base.default_by_omitted (the dispatching "
                             "value whose pick the arguments decide)")
        return self

    def bases(self) -> tuple[str, ...]:
        """Every base a call can get."""
        return tuple(sorted({b for _, b in (*self.values, *self.default_values)}
                            | ({self.default} if self.default else set())))

    def resolve(self, call: Mapping[str, str]) -> str | None:
        """The base for a call's arguments (keyword → Python literal text; an argument that is
        not a literal is absent from ``call`` or given as ``"<expr>"``); ``None``: decided at
        run time (or by an expression the caller cannot read)."""
        chosen = call.get(self.keyword)
        if chosen is not None and literal_key(chosen) not in {literal_key(u) for u in self.unset}:
            return dict(self.values).get(literal_key(chosen))
        if self.default_by is not None:
            by = call.get(self.default_by, self.default_by_omitted)
            if by is not None and self.default_by_omitted is not None \
                    and literal_key(by) == literal_key(self.default_by_omitted):
                by = self._picked(call, by)
            if by is not None:  # 'auto' (or an expression): left to dispatch unless `default`
                return dict(self.default_values).get(literal_key(by), self.default)
        return self.default

    def _picked(self, call: Mapping[str, str], by: str) -> str:
        """The value the dispatch picks for ``call`` (``by`` where no argument decides)."""
        for name, picked in self.picked_by:
            given = call.get(name)
            if given is not None and literal_key(given) not in _NOT_PICKED:
                return picked
        return by

    def pass_hint(self, base: str | None = None) -> str:
        """``return_lse_base='basee'`` for base e (every value where ``base`` is None)."""
        lits = [k for k, b in self.values if base is None or b == base]
        return " or ".join(f"{self.keyword}={k}" for k in lits)
