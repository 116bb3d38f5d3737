"""Bridge from engine-style backend classes to records.

Engines declare LSE facts as class attributes with defaults on a common base class::

    class AttentionImpl:                    # the engine's base
        can_return_lse_for_decode = False
        lse_base_on_e = True                # a default, set for the kernels of its day

    class FlashInferMLAImpl(AttentionImpl):
        can_return_lse_for_decode = True    # returns LSE ... but never says its base (it is 2)

The subclass silently inherits ``lse_base_on_e = True`` and its base-2 LSE is combined as base e.
:func:`record_from_impl` refuses that (``AC002``): a class that returns LSE must state its base
itself, or inherit it from an ancestor that itself returns LSE (a deliberate declaration, not a
default).

Engine classes carry the base but rarely the other facts a combine needs. Each of them (layout,
LSE dtype, empty-row value, sink, head dims) is a keyword of :func:`record_from_impl`, or read from
the class attribute :data:`FACT_ATTRS` names (``lse_layout = "head_token"``); a fact given neither
way is an ``AC012`` finding naming it. Nothing that corrupts results when wrong is defaulted here,
as in :mod:`attn_contracts.records`: a FlashInfer-like class must say ``empty_row="undefined"``
itself, or its plan would stop demanding a row mask.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from attn_contracts.facts import engine_attributes
from attn_contracts.findings import Code
from attn_contracts.findings import ContractError
from attn_contracts.findings import Finding
from attn_contracts.records import CapabilityRecord
from attn_contracts.records import DecodeSpec
from attn_contracts.records import findings_from_validation_error
from attn_contracts.records import hint_for_library

__all__ = ["FACT_ATTRS", "declaration_findings", "impl_findings", "record_from_impl"]

_MISSING = object()

#: the LSE facts an engine class does not carry by convention, and the class attribute each is read
#: from when the caller does not pass it as a keyword (``impl_findings(cls, layout=...)``)
FACT_ATTRS: Mapping[str, str] = {
    "layout": "lse_layout",  # "token_head" ([T, H]) | "head_token" ([H, T])
    "lse_dtype": "lse_dtype",  # "float32" | "bfloat16" | "float16" | "query"
    "empty_row": "lse_empty_row",  # "-inf" | "+inf" | "nan" | "undefined"
    "includes_sink": "lse_includes_sink",  # True | False
    "head_dims": "head_dims",  # e.g. (64, 128)
}
#: what each fact may be, for the finding that names a missing one
_FACT_ALLOWED = {"layout": '"token_head", "head_token"',
                 "lse_dtype": '"float32", "bfloat16", "float16", "query"',
                 "empty_row": '"-inf", "+inf", "nan", "undefined"',
                 "includes_sink": "True, False", "head_dims": "a tuple of ints, e.g. (128,)"}


def _class(impl: type | object) -> type:
    """The class of an impl: itself, or the class of an impl object."""
    return impl if isinstance(impl, type) else type(impl)


def _definer(impl: type | object, attr: str) -> type | None:
    """The class in ``impl``'s MRO whose own namespace sets ``attr`` (None if none does); for an
    impl object that sets ``attr`` itself (an engine that copies a declaration onto the object it
    builds), its class: the object's own value is no inherited default."""
    if not isinstance(impl, type) and attr in getattr(impl, "__dict__", {}):
        return type(impl)
    return next((k for k in _class(impl).__mro__ if attr in vars(k)), None)


def _default_name(cls: type | object) -> str:
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", _class(cls).__name__).lower()
    return "engine." + re.sub(r"[^a-z0-9_]", "_", snake)


def _base_findings(impl: type | object, subject: str, library: str, returns_attr: str,
                   base_attr: str) -> tuple[bool, Any, list[Finding]]:
    """Whether ``impl`` (a class, or an impl object: its attributes and properties as the object
    answers them) returns LSE, its base attribute's value, and why either cannot be trusted."""
    cls = _class(impl)
    returns = getattr(impl, returns_attr, False)
    if not isinstance(returns, bool):
        return declaration_findings(subject, library, cls.__name__, returns_attr, base_attr,
                                    returns=returns, base=None, base_owner=None)
    base_owner = _definer(impl, base_attr)
    return declaration_findings(
        subject, library, cls.__name__, returns_attr, base_attr, returns=returns,
        base=getattr(impl, base_attr, _MISSING),
        base_owner=None if base_owner is None else base_owner.__name__,
        inherited=base_owner is not None and base_owner is not cls,
        owner_returns=getattr(base_owner, returns_attr, False))


def declaration_findings(subject: str, library: str, cls_name: str, returns_attr: str,
                         base_attr: str, *, returns: object, base: object,
                         base_owner: str | None, inherited: bool = False,
                         owner_returns: object = False) -> tuple[bool, Any, list[Finding]]:
    """The declaration as read (of a class or object here; from a record, for an engine's
    check that reads one): whether it returns LSE, the base attribute's value, and why either
    cannot be trusted. ``base_owner``: the class that sets the base (None: nothing does);
    ``inherited``: that class is an ancestor; ``owner_returns``: that ancestor's own
    ``returns_attr``."""
    if not isinstance(returns, bool):
        return False, None, [Finding(Code.AC012, subject, f"{cls_name}.{returns_attr} is "
                                     f"{returns!r}", field=returns_attr, found=returns,
                                     allowed="True, False")]
    if not returns:
        return False, base, []
    if base_owner is None:
        return True, base, [Finding(
            Code.AC001, subject,
            f"{cls_name}.{returns_attr}=True but no {base_attr} anywhere in its "
            f"hierarchy (allowed: True for base e, False for base 2)",
            hint=hint_for_library(library), field=base_attr, found=None, allowed="True, False")]
    if inherited and not owner_returns:
        return True, base, [Finding(
            Code.AC002, subject,
            f"{cls_name}.{returns_attr}=True but {base_attr}={base!r} comes only "
            f"from the default on {base_owner}, which returns no LSE itself",
            hint=f"set {base_attr} on {cls_name} itself; {hint_for_library(library)}",
            field=base_attr, found=base, allowed=f"{base_attr} set on {cls_name}")]
    if not isinstance(base, bool):
        return True, base, [Finding(
            Code.AC012, subject, f"{cls_name}.{base_attr} is {base!r}",
            field=base_attr, found=base, allowed="True (base e), False (base 2)")]
    return True, base, []


def _fact_from_class(impl: type | object, fact: str, returns: bool, returns_attr: str) -> Any:
    """The attribute of ``fact`` (the object's, else its class's); None when absent, or when it is
    only the default of an ancestor that returns no LSE (the AC002 hazard, for the other facts
    too)."""
    owner = _definer(impl, FACT_ATTRS[fact])
    if owner is None:
        return None
    if returns and owner is not _class(impl) and getattr(owner, returns_attr, False) is not True:
        return None
    return getattr(impl, FACT_ATTRS[fact])


def _facts(cls: type | object, subject: str, given: Mapping[str, Any], wanted: Sequence[str],
           returns: bool, returns_attr: str) -> tuple[dict[str, Any], list[Finding]]:
    """Each wanted fact from its keyword, else its attribute; a finding for each missing."""
    name = _class(cls).__name__
    facts: dict[str, Any] = {}
    findings: list[Finding] = []
    for fact in wanted:
        value = given.get(fact)
        if value is None:
            value = _fact_from_class(cls, fact, returns, returns_attr)
        if value is None:
            attr = FACT_ATTRS[fact]
            findings.append(Finding(
                Code.AC012, subject,
                f"{name} does not say its {fact}: no {fact}= keyword, and no {attr} set "
                f"on {name} or an ancestor that returns LSE (allowed: "
                f"{_FACT_ALLOWED[fact]})",
                hint=f"pass record_from_impl({name}, {fact}=...) or set {attr} on the "
                "class; a wrong default here corrupts combined outputs, so none is assumed",
                field=fact, found=None, allowed=_FACT_ALLOWED[fact]))
        else:
            facts[fact] = value
    return facts, findings


def impl_findings(
    cls: type | object,
    *,
    name: str | None = None,
    library: str = "engine",
    source: str | None = None,
    returns_attr: str | None = None,
    base_attr: str | None = None,
    layout: str | None = None,
    lse_dtype: str | None = None,
    empty_row: str | None = None,
    includes_sink: bool | None = None,
    head_dims: Sequence[int] | None = None,
    decode: DecodeSpec | None = None,
) -> tuple[CapabilityRecord | None, list[Finding]]:
    """Read a record from ``cls`` (a class, or an impl object: what the object answers, its own
    attributes and properties included); return it with no findings, or None with every finding.

    ``returns_attr`` and ``base_attr`` default to vLLM's names (``can_return_lse_for_decode``,
    ``lse_base_on_e``: data, :func:`attn_contracts.facts.engine_attributes`).
    The base comes from ``base_attr`` (``True``: e, ``False``: 2). The other facts come from
    their keyword, else the class attribute :data:`FACT_ATTRS` names: ``layout``, ``lse_dtype``,
    ``empty_row``, ``includes_sink`` when the class returns LSE, and ``head_dims`` (unless a whole
    ``decode`` spec is passed) for every class; a missing one is an ``AC012`` naming it. The
    decode call is otherwise MHA, ``[T, H, D]`` output, bfloat16 queries, ``q_len == 1``.

    A class that returns no LSE may still set the base attribute: that is how an engine's base
    class declares its defaults, so it is not flagged (records are: ``AC004``)."""
    subject = name or _default_name(cls)
    names = engine_attributes("vllm")
    returns_attr = returns_attr or names.returns[0]
    base_attr = base_attr or names.base[0]
    returns, base_value, findings = _base_findings(cls, subject, library, returns_attr, base_attr)
    if findings:  # an untrusted base first: the class's other facts are then moot
        return None, findings
    given = {"layout": layout, "lse_dtype": lse_dtype, "empty_row": empty_row,
             "includes_sink": includes_sink, "head_dims": head_dims}
    wanted = [*(("layout", "lse_dtype", "empty_row", "includes_sink") if returns else ()),
              *(("head_dims",) if decode is None else ())]
    facts, findings = _facts(cls, subject, given, wanted, returns, returns_attr)
    if findings:
        return None, findings
    raw: dict[str, Any] = {
        "name": subject, "library": library, "evidence": "read_from_code",
        "source": source or f"{_class(cls).__module__}.{_class(cls).__name__}",
        "lse": ({"returns": "lse", "base": "e" if base_value else "2", "layout": facts["layout"],
                 "dtype": facts["lse_dtype"], "empty_row": facts["empty_row"],
                 "includes_sink": facts["includes_sink"]} if returns else {"returns": "none"}),
        "decode": (decode.model_dump() if decode is not None else
                   {"attention": "mha", "out_layout": "token_head_dim",
                    "head_dims": list(facts["head_dims"]), "q_dtypes": ["bfloat16"],
                    "q_len_gt_1": False}),
    }
    try:  # a fact of the wrong kind (layout="TH") is a finding like any record's
        return CapabilityRecord.model_validate(raw), []
    except ValidationError as err:
        return None, findings_from_validation_error(err, raw)


def record_from_impl(cls: type, **kwargs: Any) -> CapabilityRecord:
    """Build a record from an engine-style backend class; raise :class:`ContractError` (``AC001``,
    ``AC002``, ``AC012``) when the class's declaration cannot be trusted or is incomplete.

    Signature (all keyword-only, as :func:`impl_findings`)::

        record_from_impl(cls, *, name=None, library="engine", source=None,
                         returns_attr=None, base_attr=None,  # vLLM's names (data)
                         layout=None, lse_dtype=None, empty_row=None, includes_sink=None,
                         head_dims=None, decode=None)

    Each fact left None is read from the class attribute :data:`FACT_ATTRS` names; one given
    neither way is an ``AC012`` that names it. E.g. for a FlashInfer-MLA-like class::

        record_from_impl(FlashInferMLAImpl, library="flashinfer", layout="token_head",
                         lse_dtype="float32", empty_row="undefined", includes_sink=False,
                         decode=DecodeSpec(attention="mla", ...))
    """
    record, findings = impl_findings(cls, **kwargs)
    if record is None:
        raise ContractError(findings, f"cannot build a record from {cls.__name__}")
    return record
