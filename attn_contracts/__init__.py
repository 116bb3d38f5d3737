"""attn-contracts: typed, checked contracts between attention kernels and the combine of their
partial outputs (LSE base, layout, empty rows) for decode context parallelism.

This package never imports torch at module level: records, registry, checks, startup validation
and the linter run where torch is absent. The combine lives in :mod:`attn_contracts.combine` and
the runnable backends in :mod:`attn_contracts.backends`.
"""

from attn_contracts.bridge import record_from_impl
from attn_contracts.checks import check_edge, check_setting
from attn_contracts.consumer import ConsumerRecord
from attn_contracts.findings import Code, ContractError, Finding
from attn_contracts.records import CapabilityRecord, DecodeSpec, LseSpec, NoLse
from attn_contracts.registry import (
    Registry,
    UnknownRecordError,
    default_registry,
    get,
    load_records,
    records,
    register,
)
from attn_contracts.setting import CombineSetting
from attn_contracts.startup import check_startup, validate_startup
from attn_contracts.tracing import Trace, TraceReport, trace

#: the one version: pyproject.toml reads it (``dynamic = ["version"]``), ``--version`` prints it
__version__ = "0.1.0"

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
