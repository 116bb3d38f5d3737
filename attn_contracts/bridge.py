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
"""

from __future__ import annotations

import re
from typing import Any

from attn_contracts.findings import Code, ContractError, Finding
from attn_contracts.records import CapabilityRecord, DecodeSpec, LseSpec, NoLse, hint_for_library

__all__ = ["impl_findings", "record_from_impl"]

_MISSING = object()


def _definer(cls: type, attr: str) -> type | None:
    """The class in ``cls``'s MRO whose own namespace sets ``attr`` (None if none does)."""
    return next((k for k in cls.__mro__ if attr in vars(k)), None)


def _default_name(cls: type) -> str:
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", cls.__name__).lower()
    return "engine." + re.sub(r"[^a-z0-9_]", "_", snake)


def impl_findings(
    cls: type,
    *,
    name: str | None = None,
    library: str = "engine",
    source: str | None = None,
    returns_attr: str = "can_return_lse_for_decode",
    base_attr: str = "lse_base_on_e",
    layout: str = "token_head",
    lse_dtype: str = "float32",
    empty_row: str = "-inf",
    includes_sink: bool = False,
    decode: DecodeSpec | None = None,
) -> tuple[CapabilityRecord | None, list[Finding]]:
    """Read a record from ``cls``; return it with no findings, or None with every finding.

    A class that returns no LSE may still set the base attribute: that is how an engine's base
    class declares its defaults, so it is not flagged (records are: ``AC004``)."""
    subject = name or _default_name(cls)
    returns = getattr(cls, returns_attr, False)
    if not isinstance(returns, bool):
        return None, [Finding(Code.AC012, subject, f"{cls.__name__}.{returns_attr} is "
                              f"{returns!r}", field=returns_attr, found=returns, allowed="True, False")]
    base_owner = _definer(cls, base_attr)
    base_value = getattr(cls, base_attr, _MISSING)
    findings: list[Finding] = []
    if returns:
        if base_owner is None:
            findings.append(Finding(
                Code.AC001, subject,
                f"{cls.__name__}.{returns_attr}=True but no {base_attr} anywhere in its "
                f"hierarchy (allowed: True for base e, False for base 2)",
                hint=hint_for_library(library), field=base_attr, found=None, allowed="True, False"))
        elif base_owner is not cls and not getattr(base_owner, returns_attr, False):
            findings.append(Finding(
                Code.AC002, subject,
                f"{cls.__name__}.{returns_attr}=True but {base_attr}={base_value!r} comes only "
                f"from the default on {base_owner.__name__}, which returns no LSE itself",
                hint=f"set {base_attr} on {cls.__name__} itself; {hint_for_library(library)}",
                field=base_attr, found=base_value, allowed=f"{base_attr} set on {cls.__name__}"))
        elif not isinstance(base_value, bool):
            findings.append(Finding(
                Code.AC012, subject, f"{cls.__name__}.{base_attr} is {base_value!r}",
                field=base_attr, found=base_value, allowed="True (base e), False (base 2)"))
    if findings:
        return None, findings
    lse: LseSpec | NoLse = (
        LseSpec(base="e" if base_value else "2", layout=layout, dtype=lse_dtype,  # type: ignore[arg-type]
                empty_row=empty_row, includes_sink=includes_sink)  # type: ignore[arg-type]
        if returns else NoLse()
    )
    record = CapabilityRecord(
        name=subject, library=library, source=source or f"{cls.__module__}.{cls.__name__}",
        evidence="read_from_code", lse=lse,
        decode=decode or DecodeSpec(attention="mha", out_layout="token_head_dim", head_dims=(128,),
                                    q_dtypes=("bfloat16",), q_len_gt_1=False),
    )
    return record, []


def record_from_impl(cls: type, **kwargs: Any) -> CapabilityRecord:
    """Build a record from an engine-style backend class; raise :class:`ContractError` (``AC001``,
    ``AC002``, ``AC012``) when the class's declaration cannot be trusted.

    Keyword arguments as :func:`impl_findings`: ``name``, ``library``, ``returns_attr``,
    ``base_attr`` (the engine's attribute names) and the LSE facts engine classes do not carry.
    """
    record, findings = impl_findings(cls, **kwargs)
    if record is None:
        raise ContractError(findings, f"cannot build a record from {cls.__name__}")
    return record
