"""attn-contracts: typed, checked contracts between attention kernels and the combine of their
partial outputs (LSE base, layout, empty rows) for decode context parallelism.

This package never imports torch at module level: records, registry, checks, startup validation
and the linter run where torch is absent. The combine lives in :mod:`attn_contracts.combine` and
the runnable backends in :mod:`attn_contracts.backends`.

The names below are imported when first used (PEP 562): the package is loaded by every process
that loads one of its entry points (vLLM's ``vllm.general_plugins`` in each vLLM process, the
``pytest11`` plugin in every pytest run), where the records' pydantic models would cost hundreds of
milliseconds that a process which never checks a contract should not pay.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING
from typing import Any

if TYPE_CHECKING:
    from attn_contracts.bridge import record_from_impl
    from attn_contracts.checks import check_edge
    from attn_contracts.checks import check_setting
    from attn_contracts.consumer import ConsumerRecord
    from attn_contracts.findings import Code
    from attn_contracts.findings import ContractError
    from attn_contracts.findings import Finding
    from attn_contracts.records import CapabilityRecord
    from attn_contracts.records import DecodeSpec
    from attn_contracts.records import LseSpec
    from attn_contracts.records import NoLse
    from attn_contracts.registry import Registry
    from attn_contracts.registry import UnknownRecordError
    from attn_contracts.registry import default_registry
    from attn_contracts.registry import get
    from attn_contracts.registry import load_records
    from attn_contracts.registry import records
    from attn_contracts.registry import register
    from attn_contracts.setting import CombineSetting
    from attn_contracts.startup import check_startup
    from attn_contracts.startup import validate_startup
    from attn_contracts.tracing import Trace
    from attn_contracts.tracing import TraceReport
    from attn_contracts.tracing import trace

#: the one version: pyproject.toml reads it (``dynamic = ["version"]``), ``--version`` prints it
__version__ = "0.1.0"

#: each public name and the module that defines it
_EXPORTS = {
    "record_from_impl": "attn_contracts.bridge",
    "check_edge": "attn_contracts.checks",
    "check_setting": "attn_contracts.checks",
    "ConsumerRecord": "attn_contracts.consumer",
    "Code": "attn_contracts.findings",
    "ContractError": "attn_contracts.findings",
    "Finding": "attn_contracts.findings",
    "CapabilityRecord": "attn_contracts.records",
    "DecodeSpec": "attn_contracts.records",
    "LseSpec": "attn_contracts.records",
    "NoLse": "attn_contracts.records",
    "Registry": "attn_contracts.registry",
    "UnknownRecordError": "attn_contracts.registry",
    "default_registry": "attn_contracts.registry",
    "get": "attn_contracts.registry",
    "load_records": "attn_contracts.registry",
    "records": "attn_contracts.registry",
    "register": "attn_contracts.registry",
    "CombineSetting": "attn_contracts.setting",
    "check_startup": "attn_contracts.startup",
    "validate_startup": "attn_contracts.startup",
    "Trace": "attn_contracts.tracing",
    "TraceReport": "attn_contracts.tracing",
    "trace": "attn_contracts.tracing",
}

__all__ = [
    "CapabilityRecord",
    "Code",
    "CombineSetting",
    "ConsumerRecord",
    "ContractError",
    "DecodeSpec",
    "Finding",
    "LseSpec",
    "NoLse",
    "Registry",
    "Trace",
    "TraceReport",
    "UnknownRecordError",
    "check_edge",
    "check_setting",
    "check_startup",
    "default_registry",
    "get",
    "load_records",
    "record_from_impl",
    "records",
    "register",
    "trace",
    "validate_startup",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})


class _Package(types.ModuleType):
    """The import system binds every submodule it loads on its package; ``records`` (the
    registry's function, a public name) shares its name with the submodule
    ``attn_contracts.records``, and stays the function, as it was when the package imported
    everything at once."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _EXPORTS and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
