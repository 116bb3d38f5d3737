"""The capability record: what an attention kernel variant returns, as typed, frozen data.

One record per kernel variant *and call mode* (``flashinfer.mla.fa3`` and ``flashinfer.mla.fa3+basee``
are two records). Everything a combine needs to read a kernel's partial output correctly is a field
here; nothing that corrupts results when wrong has a default.

The LSE declaration is a discriminated union on the string tag ``returns``::

    lse = {returns = "none"}                                   # no LSE: cannot take part in DCP
    lse = {returns = "lse", base = "2", layout = "token_head",
           dtype = "float32", empty_row = "-inf", includes_sink = false}

so "returns LSE but has no base" cannot be constructed: it fails validation with error type
``AC001`` (and "no LSE, but a base" with ``AC004``), which :func:`findings_from_validation_error`
turns into findings with the same codes.

An empty row is two facts: ``empty_row`` (what the LSE holds) and ``empty_out`` (what the
*output* holds: ``zero``, ``nan``, ``undefined``). ``empty_out`` came later, so a record without
it still validates; an absent output fact means "not declared" and every check reads it as
``undefined`` (:attr:`LseSpec.empty_output`): assuming ``zero`` where the kernel leaves garbage
corrupts a merge that multiplies by weight 0, assuming ``undefined`` where it writes 0 only asks
for a row mask, so the absent fact fails closed. A record's calls may choose the LSE's base and
layout by keyword (:class:`~attn_contracts.call_base.CallBase`,
:class:`~attn_contracts.call_layout.CallLayout`); the record's ``lse`` then holds their defaults.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable
from typing import Annotated
from typing import Any
from typing import Literal

from pydantic import AfterValidator
from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field
from pydantic import Strict
from pydantic import ValidationError
from pydantic import WithJsonSchema
from pydantic import model_validator
from pydantic_core import PydanticCustomError

from attn_contracts._tables import as_pairs
from attn_contracts.call_base import CallBase
from attn_contracts.call_layout import CallLayout
from attn_contracts.facts import library_hint
from attn_contracts.findings import Code
from attn_contracts.findings import Finding
from attn_contracts.findings import Location

__all__ = [
    "ADAPTER_RE",
    "BASES",
    "LN2",
    "LOG2E",
    "NAME_RE",
    "BaseMap",
    "CapabilityRecord",
    "DecodeSpec",
    "EmptyOut",
    "Frozen",
    "LibraryVersion",
    "LseSpec",
    "NoLse",
    "ProducerCall",
    "RecordHeader",
    "findings_from_validation_error",
    "hint_for_library",
    "require_in_schema",
]

Base = Literal["e", "2"]
BASES: tuple[str, ...] = ("e", "2")
#: the conversions between the bases: a base-2 LSE × LN2 is base e, a base-e LSE × LOG2E base 2
LN2 = math.log(2.0)
LOG2E = 1.0 / LN2
LseLayout = Literal["token_head", "head_token"]
LseDType = Literal["float32", "bfloat16", "float16", "query"]
DType = Literal["float32", "bfloat16", "float16", "float8_e4m3fn"]
# "undefined": the kernel cannot run a zero-key row at all (FlashInfer's paged decode), so what it
# leaves there is garbage; a combine must mask those rows by the engine's own lengths.
EmptyRow = Literal["-inf", "+inf", "nan", "undefined"]
# What the kernel leaves in the *output* of such a row, a fact of its own (FlashInfer #4975:
# trtllm-gen MLA writes lse = -inf for seq_lens == 0 but never writes out, so the caller's
# torch.empty garbage, NaN included, reaches the merge under weight 0). "zero": the kernel writes
# 0; "nan": it writes NaN (0/0); "undefined": it leaves the buffer as it was.
EmptyOut = Literal["zero", "nan", "undefined"]

# A dotted slug; '+' separates a call mode ("flashinfer.mla.fa3+basee").
NAME_RE = r"^[a-z][a-z0-9_-]*(\.[a-z0-9][a-z0-9_-]*)*(\+[a-z0-9][a-z0-9_-]*)*$"
# PEP 440 version specifiers ("", ">=0.2.8", "==0.7.*", ">=2.6,<3"); kept as a pattern so the contract
# needs pydantic alone.
_CLAUSE = (r"\s*(~=|===|==|!=|<=|>=|<|>)\s*v?\d+(\.\d+)*(\.\*)?((a|b|rc)\d+)?(\.post\d+)?(\.dev\d+)?"
           r"(\+[a-z0-9.]+)?\s*")
_SPEC_RE = re.compile(rf"^({_CLAUSE}(,{_CLAUSE})*)?$", re.IGNORECASE)
ADAPTER_RE = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_.]*$"
_CC_RE = r"^\d+\.\d+$"

# Which fields of an LseSpec make sense only when LSE is returned (AC004 if given with "none").
_LSE_DETAIL_KEYS = ("base", "layout", "q_len_axis", "padded_heads", "dtype", "empty_row",
                    "empty_out", "includes_sink")

def hint_for_library(library: str | None) -> str:
    """The known LSE convention of a library (data: ``catalog/facts/libraries.toml``), for
    hints; generic advice for unknown libraries."""
    known = library_hint(library)
    return known or 'measure it with `attn-contracts verify` and declare lse.base = "e" or "2"'


def _check_specifier(value: str) -> str:
    if not _SPEC_RE.match(value):
        raise PydanticCustomError(
            "AC012",
            "library_version {value} is not a PEP 440 version specifier (e.g. '>=0.2.8,<0.8')",
            {"value": value},
        )
    return value


def _any_case(regex: str) -> str:
    """``regex`` with every letter matched in either case, for JSON Schema's ``pattern``, which
    has no flags (ECMA-262 syntax): ``v`` → ``[vV]``, ``[a-z]`` → ``[a-zA-Z]``; escapes kept."""
    out, i = [], 0
    while i < len(regex):
        ch = regex[i]
        if ch == "\\":
            out.append(regex[i:i + 2])
            i += 2
        elif ch == "[":
            end = regex.index("]", i)
            cls = regex[i:end + 1]
            out.append(cls.replace("a-z", "a-zA-Z") if "A-Z" not in cls else cls)
            i = end + 1
        else:
            out.append(f"[{ch.lower()}{ch.upper()}]" if ch.isalpha() else ch)
            i += 1
    return "".join(out)


StrictStr = Annotated[str, Strict()]
# The pattern also goes into the JSON schema, so a schema validator rejects what the model does.
LibraryVersion = Annotated[str, Strict(), AfterValidator(_check_specifier),
                           Field(json_schema_extra={"pattern": _any_case(_SPEC_RE.pattern)})]
StrictInt = Annotated[int, Strict()]
StrictBool = Annotated[bool, Strict()]
# Sequences arrive as lists from TOML/JSON and as tuples from Python; they are stored as tuples so the
# record stays hashable. Field(strict=False) relaxes only the container, never the items.
HeadDims = Annotated[tuple[Annotated[int, Strict(), Field(gt=0)], ...],
                     Field(strict=False, min_length=1)]
DTypes = Annotated[tuple[DType, ...], Field(strict=False, min_length=1)]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, strict=True, extra="forbid")


def require_in_schema(*names: str) -> Callable[[dict[str, Any]], None]:
    """A ``json_schema_extra`` that marks fields required in the JSON schema although they have a
    default in Python: a discriminated union's tag. The models need it (a union without its tag
    is rejected); JSON Schema ignores ``discriminator``, so without this ``lse: {}`` would match
    ``NoLse`` there."""

    def extra(schema: dict[str, Any]) -> None:
        schema["required"] = [*schema.get("required", []),
                              *(n for n in names if n not in schema.get("required", []))]

    return extra


class NoLse(Frozen):
    """The kernel returns no LSE: its partial outputs cannot be combined across DCP ranks."""

    model_config = ConfigDict(json_schema_extra=require_in_schema("returns"))
    returns: Literal["none"] = "none"

    @model_validator(mode="before")
    @classmethod
    def _no_details(cls, data: Any) -> Any:
        if isinstance(data, dict):
            given = [k for k in _LSE_DETAIL_KEYS if k in data]
            if given:
                raise PydanticCustomError(
                    "AC004",
                    "lse.returns is 'none' but LSE details are declared: {keys}; a kernel that "
                    "returns no LSE has no base, layout or empty-row value",
                    {"keys": ", ".join(given)},
                )
        return data


class LseSpec(Frozen):
    """How to read the LSE a kernel returns.

    ``base``      log base of the LSE: ``"e"`` (ln Σ e^s) or ``"2"`` (log2 Σ 2^s'); required.
    ``layout``    ``"token_head"`` = ``[T, H]``, ``"head_token"`` = ``[H, T]``.
    ``q_len_axis`` the token axis is split into ``(batch, q_len)``: with ``head_token`` the LSE is
                  ``[B, H, q_len]`` (FlashAttention's padded batch, FlashMLA), with ``token_head``
                  ``[B, q_len, H]``.
    ``padded_heads`` the head axis has this many entries; the first ``H`` are real (Cutlass MLA).
    ``dtype``     storage dtype; ``"query"`` = the query's dtype (bf16 LSE loses merge weight).
    ``empty_row`` what a row with no keys yields in the LSE.
    ``empty_out`` what such a row holds in the *output* (``"zero"``, ``"nan"``,
                  ``"undefined"``: left as the caller's buffer was). A second fact, not implied by
                  the first: a kernel may write ``lse = -inf`` and leave ``out`` unwritten.
                  **Absent** (records written before the field existed): not declared, and read
                  as ``"undefined"`` by every check (:attr:`empty_output`): a wrong ``"zero"``
                  lets NaN garbage into a combine that multiplies by weight 0, a wrong
                  ``"undefined"`` only asks for a row mask, so the gate fails closed.
    ``includes_sink`` an attention-sink logit is inside the LSE (to be added once, not per rank).
    """

    model_config = ConfigDict(json_schema_extra=require_in_schema("returns"))
    returns: Literal["lse"] = "lse"
    base: Base
    layout: LseLayout
    q_len_axis: StrictBool = False
    padded_heads: Annotated[int, Strict(), Field(gt=0)] | None = None
    dtype: LseDType
    empty_row: EmptyRow
    empty_out: EmptyOut | None = None
    includes_sink: StrictBool

    @model_validator(mode="before")
    @classmethod
    def _base_is_required(cls, data: Any) -> Any:
        # A missing base must be reported as the contract violation it is, not a bare "field
        # required": this is the mistake that silently corrupts DCP outputs.
        if isinstance(data, dict) and data.get("base") is None:
            raise PydanticCustomError(
                "AC001",
                'returns LSE but declares no lse.base (allowed: "e", "2")',
            )
        return data

    @property
    def empty_output(self) -> str:
        """What an empty row's output holds, as the checks read it: the declared
        ``empty_out``, or ``"undefined"`` where the record does not say (fail closed)."""
        return self.empty_out if self.empty_out is not None else "undefined"


LseDecl = Annotated[LseSpec | NoLse, Field(discriminator="returns")]


class DecodeSpec(Frozen):
    """The decode call: output layout, head dims and dtypes it supports, where it runs."""

    attention: Literal["mha", "mla"]
    out_layout: Literal["token_head_dim", "batch_qlen_head_dim"]
    head_dims: HeadDims
    q_dtypes: DTypes
    q_len_gt_1: StrictBool
    min_compute_capability: Annotated[str, Strict(), Field(pattern=_CC_RE)] | None = None
    max_compute_capability: Annotated[str, Strict(), Field(pattern=_CC_RE)] | None = None


# string-keyed tables as sorted pairs (``_tables``)
_AS_PAIRS = as_pairs()
StrMap = Annotated[tuple[tuple[StrictStr, StrictStr], ...], *_AS_PAIRS,
                   WithJsonSchema({"type": "object", "additionalProperties": {"type": "string"}})]
BaseMap = Annotated[tuple[tuple[StrictStr, Base], ...], *_AS_PAIRS,
                    WithJsonSchema({"type": "object", "additionalProperties": {
                        "type": "string", "enum": list(BASES)}})]


class ProducerCall(Frozen):
    """A call that returns this kernel's LSE, as the linter sees it in engine code.

    ``function``: a dotted path (a function, or ``Class.method`` for a wrapper's ``run``); the
    linter matches the last name, and for a method also the class the receiver was built from.
    ``when``: keyword arguments that must be passed with these literal values for the call to
    return LSE (``{"return_lse": "True"}``). ``lse_index``: the LSE's position in the returned
    tuple; ``lse_returned = false``: the call returns no LSE at all (its output alone), and
    writes it only into its ``lse_out`` buffers.
    """

    function: Annotated[str, Strict(),
                        Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")]
    when: StrMap = ()
    lse_index: Annotated[int, Strict(), Field(ge=0)] = 1
    #: the releases of the record's library where the function is at this path ("": all)
    versions: LibraryVersion = ""
    #: the LSE's base chosen by the call (a keyword, a default by another argument, or left to
    #: run-time dispatch); absent: the record's ``lse.base``
    base: CallBase | None = None
    #: the LSE's layout chosen by the call (FlashInfer prefill's ``lse_layout``), read as
    #: ``base`` is; absent: the record's ``lse.layout``
    layout: CallLayout | None = None
    #: arguments the kernel writes the LSE into (an out buffer: ``lse=buf``), by keyword or by
    #: position ("4"); the buffer then holds this record's LSE
    lse_out: Annotated[tuple[Annotated[str, Strict(), Field(pattern=r"^([A-Za-z_][A-Za-z0-9_]*|[0-9]+)$")],
                             ...], Field(strict=False)] = ()
    #: whether the call's result holds the LSE (at ``lse_index``); false: only the buffers of
    #: ``lse_out`` do (a kernel that returns its output alone)
    lse_returned: Annotated[bool, Strict()] = True

    @model_validator(mode="after")
    def _somewhere(self) -> ProducerCall:
        if not self.lse_returned and not self.lse_out:
            raise ValueError("lse_returned = false needs lse_out (the buffers the LSE is written "
                             f"into); {self.function} would then produce no LSE anywhere")
        return self

    @property
    def result_index(self) -> int | None:
        """The LSE's position in the call's result; None where the result holds none."""
        return self.lse_index if self.lse_returned else None


class RecordHeader(Frozen):
    """What every record says about itself, whichever end of the edge it describes: its name and
    role, the library and versions it is true for, where the facts were read or measured, and the
    adapter that makes it verifiable. ``role`` is the tag of the union of the two record kinds
    (:data:`attn_contracts.sources.AnyRecord`): ``"producer"`` (a kernel that emits an LSE, the
    default, so documents written before roles existed keep loading) or ``"consumer"`` (a
    function that combines LSEs)."""

    role: Literal["producer", "consumer"]
    name: Annotated[str, Strict(), Field(pattern=NAME_RE, max_length=120)]
    library: Annotated[str, Strict(), Field(min_length=1)]
    library_version: LibraryVersion = ""
    source: Annotated[str, Strict(), Field(min_length=1)]
    evidence: Literal["measured", "read_from_code"]
    verified: StrictStr | None = None
    adapter: Annotated[str, Strict(), Field(pattern=ADAPTER_RE)] | None = None

    def fingerprint(self) -> str:
        """A digest of every field: equal iff two ranks hold the same contract."""
        return hashlib.sha256(self.model_dump_json().encode()).hexdigest()[:16]


class CapabilityRecord(RecordHeader):
    """A kernel variant's contract (a producer). Frozen and hashable: a registry key and a
    plan-cache key."""

    role: Literal["producer"] = "producer"
    lse: LseDecl
    decode: DecodeSpec
    #: calls the linter recognises as this producer (its LSE then flows to consumers)
    calls: Annotated[tuple[ProducerCall, ...], Field(strict=False)] = ()
    notes: StrictStr = ""

    # --- the design card's names, derived so they can never disagree with `lse` ---
    @property
    def returns_lse(self) -> bool:
        return isinstance(self.lse, LseSpec)

    @property
    def lse_base(self) -> str | None:
        return self.lse.base if isinstance(self.lse, LseSpec) else None

    @property
    def supports_dcp(self) -> bool:
        return self.returns_lse

    @property
    def decode_layout(self) -> str:
        return self.decode.out_layout


def findings_from_validation_error(
    err: ValidationError, raw: Any, *, location: Location | None = None
) -> list[Finding]:
    """Turn pydantic's errors on one record into findings; custom error types are our codes."""
    subject = _raw_name(raw)
    library = raw.get("library") if isinstance(raw, dict) else None
    out: list[Finding] = []
    for e in err.errors(include_url=False):
        code = Code(e["type"]) if e["type"] in Code.__members__ else Code.AC012
        field = _field_path(e["loc"])
        found = e.get("input") if e["type"] not in ("AC001", "AC004", "missing") else None
        consumer = isinstance(raw, dict) and raw.get("role") == "consumer"
        if code is Code.AC001 and consumer:  # its base is a table of its own, not lse.base
            message, allowed = e["msg"], '{kind = "fixed", base = "e"|"2"}, {kind = "keyword", ...}'
            hint = ("measure it with `attn-contracts verify --consumer` and declare base = "
                    '{kind = "fixed", base = "e"} (or "2"), or a keyword base')
            field = "base"
        elif code is Code.AC001:
            message, hint, allowed = (
                'returns_lse=True but no lse.base (allowed: "e", "2")',
                hint_for_library(library if isinstance(library, str) else None),
                '"e", "2"',
            )
            field = field or "lse.base"
            field = field if field.endswith("base") else f"{field}.base"
        elif code is Code.AC004:
            message, hint, allowed = e["msg"], "remove them, or declare returns = \"lse\"", ""
        elif e["type"] == "union_tag_invalid" and not e["loc"]:  # the record's own role
            field, found = "role", raw.get("role") if isinstance(raw, dict) else None
            message, hint, allowed = (f"role {found!r} is not a record role (allowed: "
                                      "'producer', 'consumer')", "", "producer, consumer")
        else:
            message = f"{field or '<record>'}: {e['msg']}" + (
                f" (found {_short(found)})" if e["type"] != "missing" else ""
            )
            hint, allowed = _schema_hint(e), _allowed(e)
        out.append(Finding(code, subject, message, hint=hint, field=field, found=found, allowed=allowed,
                           location=location))
    return out


def _raw_name(raw: Any) -> str:
    if isinstance(raw, dict) and isinstance(raw.get("name"), str):
        return str(raw["name"])
    name = getattr(raw, "name", None)
    return name if isinstance(name, str) else "<unnamed record>"


def _field_path(loc: tuple[int | str, ...]) -> str:
    # A discriminated union puts the tag into the location ("lse", "lse", "base"), and the
    # record's role leads it ("producer", ...): drop both.
    if loc and loc[0] in ("producer", "consumer"):
        loc = loc[1:]
    parts = [str(p) for i, p in enumerate(loc)
             if not (i > 0 and loc[i - 1] == "lse" and p in ("lse", "none"))]
    return ".".join(parts)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _allowed(e: Any) -> str:
    ctx = e.get("ctx") or {}
    if "expected" in ctx:
        return str(ctx["expected"])
    if "pattern" in ctx:
        return f"a string matching {ctx['pattern']}"
    return ""


def _schema_hint(e: Any) -> str:
    if e["type"] == "extra_forbidden":
        return (f"unknown key {_field_path(e['loc'])!r}; `attn-contracts schema` lists the "
                "allowed keys")
    if e["type"] == "missing":
        return "required: a wrong default here would corrupt combined outputs, so none is assumed"
    if e["type"] == "union_tag_invalid" or e["type"] == "union_tag_not_found":
        return 'lse.returns must be "lse" or "none"'
    return ""
