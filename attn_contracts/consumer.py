"""The consumer record: what a function that *combines* LSEs expects, as typed, frozen data.

A producer record (:class:`~attn_contracts.records.CapabilityRecord`) says what a kernel emits; a
consumer record says what a combine function reads. Every wrong-base bug seen in engines sat on the
edge between the two: a base-2 LSE merged by a natural-log kernel, ``[H, T]`` read as ``[T, H]``, a
``+inf`` empty row fed to a combine that only treats ``-inf`` as empty, 0/0 on an all-empty row.
:func:`attn_contracts.checks.check_edge` compares the two ends.

The base is required and a discriminated union on ``kind``::

    base = { kind = "fixed", base = "e" }                           # tl.exp / tl.log inside
    base = { kind = "keyword", keyword = "is_lse_base_on_e",
             values = { "True" = "e", "False" = "2" }, default = "True" }

``default`` is the key of ``values`` a caller gets by omitting the keyword (absent: the keyword is
required), which is exactly the hazard the linter flags.

A *collective* consumer (every rank of a group calls it together: FlashInfer's fused
``decode_cp_a2a_lse_reduce``) says in ``ranks`` what each rank must pass identically and what a
difference does (``on_mismatch = "hang"``): startup compares those values across the ranks
(``AC031``). Its absence means a local function: nothing to compare.
"""

from __future__ import annotations

import ast
from typing import Annotated
from typing import Literal

from pydantic import ConfigDict
from pydantic import Field
from pydantic import model_validator

from attn_contracts.call_base import literal_key
from attn_contracts.records import Base
from attn_contracts.records import BaseMap
from attn_contracts.records import Frozen
from attn_contracts.records import LibraryVersion
from attn_contracts.records import LseLayout
from attn_contracts.records import RecordHeader
from attn_contracts.records import StrictBool
from attn_contracts.records import StrictStr
from attn_contracts.records import require_in_schema

__all__ = ["AGREEMENT_FIELDS", "ConsumerCall", "ConsumerLimits", "ConsumerRecord", "EmptyPolicy",
           "FixedBase", "KeywordBase", "LseInput", "RankAgreement", "ThreadLimit"]

PositiveInt = Annotated[int, Field(gt=0, strict=True)]
# A dotted Python path: "vllm.attention.ops.merge_attn_states.merge_attn_states" or a method
# "flashinfer.cascade.MergeStateInPlace.run"; the linter matches calls by the last name.
QualName = Annotated[str, Field(strict=True, pattern=r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")]
ReadsAsEmpty = Annotated[tuple[Literal["-inf", "+inf", "nan"], ...], Field(strict=False)]


class FixedBase(Frozen):
    """The base is fixed by the code (``tl.exp``/``tl.log`` = e, ``exp2``/``log2`` = 2)."""

    model_config = ConfigDict(json_schema_extra=require_in_schema("kind"))
    kind: Literal["fixed"] = "fixed"
    base: Base


class KeywordBase(Frozen):
    """The caller selects the base with a keyword argument."""

    model_config = ConfigDict(json_schema_extra=require_in_schema("kind"))
    kind: Literal["keyword"] = "keyword"
    keyword: QualName
    #: the keyword's values as Python literals ("True", "False", "'e'") and the base each selects
    values: Annotated[BaseMap, Field(min_length=1, json_schema_extra={"minProperties": 1})]
    #: the key of ``values`` used when the keyword is omitted; None: the keyword is required
    default: StrictStr | None = None

    @model_validator(mode="after")
    def _default_is_a_value(self) -> KeywordBase:
        keys = [k for k, _ in self.values]
        if self.default is not None and self.default not in keys:
            raise ValueError(f"base.default {self.default!r} is not one of base.values "
                             f"({', '.join(keys)})")
        return self

    def keyword_for(self, base: str) -> str | None:
        """The literal that selects ``base`` (``"False"`` for base 2), for hints."""
        return next((lit for lit, b in self.values if b == base), None)

    def base_of(self, literal: str) -> str | None:
        """The base a keyword literal selects (None for a literal the record does not list).

        Literals are compared as the Python values they spell (``"2"`` and ``'2'`` are one
        string; ``True`` is not ``1``), not as text. A flag (a keyword whose values are
        ``True`` and ``False``) is read by its truth, as the combine's ``if`` reads it: ``2.0``
        selects what ``True`` selects, ``None`` and ``0`` what ``False`` does."""
        want = literal_key(literal)
        found = next((b for lit, b in self.values if literal_key(lit) == want), None)
        if found is not None or not self.is_flag:
            return found
        truth = _truth(want)
        return None if truth is None else self.base_of(repr(truth))

    @property
    def is_flag(self) -> bool:
        """Its values are the two booleans (the combine tests the keyword's truth)."""
        return {literal_key(lit) for lit, _ in self.values} == {"True", "False"}

    @property
    def default_base(self) -> str | None:
        return None if self.default is None else self.base_of(self.default)


def _truth(literal: str) -> bool | None:
    """The truth of a literal of a type whose truth Python fixes (a number, a string,
    ``None``); None for text that is no such literal."""
    try:
        value = ast.literal_eval(literal)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return bool(value)
    return None


ConsumerBase = Annotated[FixedBase | KeywordBase, Field(discriminator="kind")]


class LseInput(Frozen):
    """How the LSE is read. ``states``: where the N partial states sit —
    ``"separate"`` (two arguments, a 2-way merge), ``"first"`` (``[N, T, H]``), ``"second"``
    (``[T, N, H]``, FlashInfer's ``merge_states``), ``"last"`` (``[T, H, N]``, FlashInfer's fused
    ``decode_cp_a2a_lse_reduce``: ``partial_lse[..., peer]`` is the slice bound for that peer)."""

    layouts: Annotated[tuple[LseLayout, ...], Field(strict=False, min_length=1)]
    states: Literal["separate", "first", "second", "last"]
    dtypes: Annotated[tuple[Literal["float32", "bfloat16", "float16"], ...],
                      Field(strict=False, min_length=1)]


class EmptyPolicy(Frozen):
    """Which LSE values the consumer reads as an empty shard, and what it does with them."""

    #: values read as "no keys" (weight 0); others are treated as real LSEs
    reads_as_empty: ReadsAsEmpty
    #: what a row whose every shard is empty yields: 0 (``o = 0``), NaN (0/0) or undefined
    all_empty: Literal["zero", "nan", "undefined"]
    #: a zero weight times a NaN partial stays 0 (selection, not multiplication)
    zero_weight_nan_safe: StrictBool
    #: takes the engine's row mask (or lengths) and gives masked rows weight 0 whatever they hold
    accepts_row_mask: StrictBool = False


class ThreadLimit(Frozen):
    """A launch bound of the form ``heads × min(head_dim · dtype_bytes / vector_bytes,
    max_lanes_per_head) ≤ max_threads`` (FlashInfer's merge: one block of heads × lanes)."""

    max_threads: PositiveInt
    vector_bytes: PositiveInt
    max_lanes_per_head: PositiveInt

    def threads(self, num_heads: int, head_dim: int, dtype_bytes: int) -> int:
        lanes = min(max(1, head_dim * dtype_bytes // self.vector_bytes), self.max_lanes_per_head)
        return num_heads * lanes


class ConsumerLimits(Frozen):
    """Settings outside which the consumer fails to launch or silently misreads."""

    head_dims: Annotated[tuple[PositiveInt, ...], Field(strict=False, min_length=1)] | None = None
    pow2_head_dim: StrictBool = False
    pow2_states: StrictBool = False
    max_states: PositiveInt | None = None
    max_heads_x_head_dim: PositiveInt | None = None
    threads: ThreadLimit | None = None
    #: a row of the partial output (``head_dim · dtype bytes``) must be a multiple of this many
    #: bytes (16-byte vector loads: sgl-kernel's ``merge_state_v2``, FlashInfer's fused combine)
    row_bytes_multiple: PositiveInt | None = None
    #: the partial outputs' dtypes it takes (None: any the combine setting allows)
    out_dtypes: Annotated[tuple[Literal["float32", "bfloat16", "float16"], ...],
                          Field(strict=False, min_length=1)] | None = None


#: what a collective consumer may need identical on every rank: its base (the keyword's resolved
#: value), the combine setting's fields, the workspace's token capacity
AGREEMENT_FIELDS = ("base", "world_size", "num_heads", "head_dim", "out_dtype", "max_tokens")


class RankAgreement(Frozen):
    """A collective consumer: every rank of the group calls it together, in the same order and
    the same number of times, and what ``same`` names must be identical on every rank. A rank
    that differs does not get an error: ``on_mismatch`` says what happens instead (``"hang"``:
    FlashInfer's fused DCP combine waits in its kernel for writes that never come, flashinfer
    #4586; ``"wrong"``: the merge reads slices laid out for another plan; ``"error"``: the
    library raises). :func:`attn_contracts.validate_startup` with ``group=`` compares them across
    the ranks (``AC031``)."""

    same: Annotated[tuple[Literal["base", "world_size", "num_heads", "head_dim", "out_dtype",
                                  "max_tokens"], ...], Field(strict=False, min_length=1)]
    on_mismatch: Literal["hang", "wrong", "error"]
    max_ranks: PositiveInt | None = None
    #: what the group must be besides (one NVLink domain, a workspace made by all together)
    needs: StrictStr = ""


class ConsumerOutput(Frozen):
    """Whether a merged LSE comes back, and in which base (``"input"``: the input's base)."""

    # the validator's rule below, as JSON Schema says it
    model_config = ConfigDict(json_schema_extra={
        "if": {"properties": {"returns_lse": {"const": True}}},
        "then": {"required": ["lse_base"], "properties": {"lse_base": {"not": {"type": "null"}}}},
        "else": {"properties": {"lse_base": {"type": "null"}}}})

    returns_lse: StrictBool
    lse_base: Base | Literal["input"] | None = None

    @model_validator(mode="after")
    def _base_iff_returned(self) -> ConsumerOutput:
        if self.returns_lse and self.lse_base is None:
            raise ValueError('output.returns_lse is true but output.lse_base is missing (allowed: '
                             '"e", "2", "input")')
        if not self.returns_lse and self.lse_base is not None:
            raise ValueError("output.lse_base is set but output.returns_lse is false")
        return self


class ConsumerCall(Frozen):
    """A function (or method) the linter recognises as this consumer, and where its LSEs go in."""

    function: QualName
    #: parameters that take an LSE: names, or positions as decimal strings ("2")
    lse_args: Annotated[tuple[StrictStr, ...], Field(strict=False, min_length=1)]
    #: the releases of the record's library where the function is at this path ("": all)
    versions: LibraryVersion = ""


class ConsumerRecord(RecordHeader):
    """A combine function's contract. Frozen and hashable, like a producer record; the header
    (name, library, versions, source, evidence, adapter, fingerprint) is the producer's.

    ``role`` is required in the JSON schema: a document entry without it is read as a producer
    (``[[consumer]]`` tables of a TOML file add it)."""

    model_config = ConfigDict(json_schema_extra=require_in_schema("role"))

    role: Literal["consumer"] = "consumer"
    calls: Annotated[tuple[ConsumerCall, ...], Field(strict=False)] = ()
    base: ConsumerBase
    lse: LseInput
    empty: EmptyPolicy
    output: ConsumerOutput
    limits: ConsumerLimits = ConsumerLimits()
    #: a collective: what every rank must pass identically (None: a local function)
    ranks: RankAgreement | None = None
    notes: StrictStr = ""

    @model_validator(mode="before")
    @classmethod
    def _base_is_required(cls, data: object) -> object:
        # As for producers: a consumer with no declared base is the bug, not a schema detail.
        if isinstance(data, dict) and data.get("base") is None:
            from pydantic_core import PydanticCustomError

            raise PydanticCustomError(
                "AC001", 'a consumer record declares no base (allowed: {"kind": "fixed", "base": '
                '"e"|"2"} or {"kind": "keyword", ...})')
        return data

    def bases(self) -> tuple[str, ...]:
        """Every base a caller can get from this consumer."""
        if isinstance(self.base, FixedBase):
            return (self.base.base,)
        return tuple(sorted({b for _, b in self.base.values}))

    def base_for(self, literal: str | None) -> str | None:
        """The base a call gets that passes ``literal`` for the base keyword (None: omits it);
        None where the literal selects no base or the keyword is required and omitted."""
        if isinstance(self.base, FixedBase):
            return self.base.base
        chosen = literal if literal is not None else self.base.default
        return None if chosen is None else self.base.base_of(chosen)
