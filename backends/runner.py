"""The one verifier pipeline, for both ends of the edge: load the adapter through the trust
boundary, skip what cannot run here, run it under one exception policy, judge the observation.

::

    verify_record(record, ...)          a producer: what the kernel returns  (kernel_probe)
    verify_consumer(record, path, ...)  a consumer: what the function assumes (combine_probe)

Both take ``allow_adapters``: the modules whose adapters may run (with their submodules); an
adapter outside them is skipped without importing anything. None: any (a path chosen in code).
Whatever an adapter raises, at import or at run time — ``SystemExit`` included — is an ``AC008``
finding with no observation (nothing was verified); only ``KeyboardInterrupt`` goes through. A
skip because torch, a library the adapter requires or the device is missing is marked
``unavailable`` (the CLI exits 2 for it unless ``--skip-unavailable``).
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable
from collections.abc import Iterable
from typing import Any
from typing import TypeVar

import torch

from attn_contracts.backends.adapter import BUILTIN_ADAPTERS
from attn_contracts.backends.adapter import Adapter
from attn_contracts.backends.adapter import AdapterRefused
from attn_contracts.backends.adapter import ConsumerAdapter
from attn_contracts.backends.adapter import adapter_path_for
from attn_contracts.backends.adapter import device_unavailable
from attn_contracts.backends.adapter import load_adapter
from attn_contracts.backends.adapter import missing_requirement
from attn_contracts.backends.combine_probe import observe_combine
from attn_contracts.backends.combine_probe import version_skip
from attn_contracts.backends.kernel_probe import capability_skip
from attn_contracts.backends.kernel_probe import observe_kernel
from attn_contracts.consumer import ConsumerRecord
from attn_contracts.findings import Code
from attn_contracts.findings import Finding
from attn_contracts.findings import error_text
from attn_contracts.judge import ConsumerObserved
from attn_contracts.judge import ConsumerVerifyResult
from attn_contracts.judge import Observed
from attn_contracts.judge import VerifyResult
from attn_contracts.judge import compare
from attn_contracts.judge import compare_consumer
from attn_contracts.judge import conservative_notes
from attn_contracts.judge import declared_consumer
from attn_contracts.judge import producer_notes
from attn_contracts.records import CapabilityRecord
from attn_contracts.records import LseSpec

__all__ = ["probe_record", "verify_consumer", "verify_record"]

A = TypeVar("A", Adapter, ConsumerAdapter)
T = TypeVar("T")


def _skip(result: VerifyResult[Any], reason: str, *, unavailable: bool = False) -> None:
    result.status, result.reason, result.unavailable = "skipped", f"skipped: {reason}", unavailable


def _not_run(result: VerifyResult[Any], reason: str, field: str,
             found: str | None = None) -> None:
    """The adapter could not be loaded or run: a finding, and no observation (not verified)."""
    result.status, result.reason, result.observed = "differs", reason, None
    result.findings = [Finding(Code.AC008, result.name, reason, field=field, found=found)]


def trusted(allow_adapters: Iterable[str] | None, *named_in_code: str | None) -> list[str]:
    """The modules whose adapters may run: the ones this project ships, the caller's
    ``allow_adapters``, and the module of an adapter the caller named in code (not one a record
    names: a record may come from a file, and a file is data)."""
    return [BUILTIN_ADAPTERS, *(allow_adapters or ()),
            *(p.partition(":")[0] for p in named_in_code if p)]


def _load(result: VerifyResult[Any], path: str, kind: type[A], device: str,
          allow: list[str], extra_skip: Callable[[A], str | None]) -> A | None:
    """The adapter, or None with ``result`` filled in (skipped, or differs with a finding)."""
    try:
        adapter = load_adapter(path, kind, allow=allow)
    except AdapterRefused as err:
        if err.allowed:
            _not_run(result, str(err), "adapter", found=path)
        else:
            _skip(result, str(err))
        return None
    missing = missing_requirement(adapter.requires)
    reason = adapter.skip_reason(device) or extra_skip(adapter)
    if reason:
        unavailable = missing is not None and reason.startswith(missing)
        _skip(result, reason, unavailable=unavailable)
        return None
    return adapter


def _guarded(result: VerifyResult[Any], what: str, fn: Callable[[], T]) -> T | None:
    """``fn()``; None with a finding when it raises (the one exception policy)."""
    try:
        return fn()
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # a kernel that cannot run on its own declared inputs
        _not_run(result, f"{what} raised {error_text(err)}", "run")
        return None


def verify_record(record: CapabilityRecord, *, device: str = "cpu", seed: int = 0,
                  small: bool = False, allow_adapters: Iterable[str] | None = None,
                  ) -> VerifyResult[Observed]:
    """Run a producer record's adapter once and compare what it returns with the record.

    ``allow_adapters``: modules (with their submodules) whose adapters may run besides the
    built-in ones; a record naming an adapter elsewhere is skipped and nothing is imported."""
    start = time.perf_counter()
    result: VerifyResult[Observed] = VerifyResult(record.name, "skipped")
    if not isinstance(record.lse, LseSpec):
        _skip(result, "returns no LSE (nothing to verify)")
        return result
    spec = record.lse
    if record.adapter is None:
        _skip(result, "no adapter (a declarative record)")
        return result
    adapter = _load(result, record.adapter, Adapter, device, trusted(allow_adapters),
                    lambda _: capability_skip(record, device))
    if adapter is None:
        return result
    ran = _guarded(result, "adapter", lambda: observe_kernel(record, spec, adapter, device, seed,
                                                             small))
    if ran is None:
        return result
    result.declared, observed = ran
    if isinstance(observed, str):
        _not_run(result, observed, "run")
        return result
    result.observed = observed
    result.findings = compare(record, result.declared, observed)
    result.notes = producer_notes(record, observed)
    result.status = "differs" if result.findings else "match"
    result.seconds = time.perf_counter() - start
    return result


def verify_consumer(record: ConsumerRecord, adapter_path: str | None = None, *,
                    device: str = "cpu", seed: int = 0, probe_limits: bool | None = None,
                    allow_adapters: Iterable[str] | None = None) -> ConsumerVerifyResult:
    """Run a consumer through its adapter and compare what it assumes with its record.

    ``adapter_path``: the adapter to run (None: the record's own, else the built-in adapter of a
    function it lists): an adapter passed here is the caller's choice and runs; a record's
    own runs only from the built-in modules and ``allow_adapters``. ``probe_limits``: run the
    launch-limit probe (None: as the adapter says)."""
    start = time.perf_counter()
    result: VerifyResult[ConsumerObserved] = VerifyResult(
        record.name, "skipped", declared=declared_consumer(record))
    path = adapter_path or adapter_path_for(record)
    if path is None:
        _skip(result, "no adapter (a declarative record; pass --adapter MODULE:ATTR)")
        return result
    adapter = _load(result, path, ConsumerAdapter, device, trusted(allow_adapters, adapter_path),
                    lambda _: version_skip(record))
    if adapter is None:
        return result
    ran = _guarded(result, "adapter", lambda: observe_combine(
        record, adapter, path, device=device, seed=seed, probe_limits=probe_limits))
    if ran is None:
        return result
    obs, errors = ran
    result.observed = obs
    if not any(e != "raised" for e in obs.bases.values()):
        _not_run(result, f"adapter raised {errors[0] if errors else 'on every call'}", "run")
        return result
    result.findings = compare_consumer(record, obs)
    result.notes = conservative_notes(record, obs)
    result.status = "differs" if result.findings else "match"
    result.seconds = time.perf_counter() - start
    return result


def probe_record(record: CapabilityRecord, *, device: str | None = None,
                 allow_adapters: Iterable[str] | None = None) -> list[Finding]:
    """The engine-startup probe: one small run of the chosen backend on the engine's device
    (its adapter from the built-in modules or ``allow_adapters``, as :func:`verify_record`)."""
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    missing = device_unavailable(device)
    if missing:  # the engine named a device that is not there: an error, never a silent skip
        raise ValueError(f"probe device {device!r}: {missing}")
    result = verify_record(record, device=device, small=True, allow_adapters=allow_adapters)
    if result.status == "skipped":
        warnings.warn(f"probe of {record.name} {result.reason}", RuntimeWarning, stacklevel=2)
    return result.findings
