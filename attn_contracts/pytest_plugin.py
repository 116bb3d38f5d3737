"""pytest plugin for kernel authors: verify a record against your kernel in one line of a test.

Installed with attn-contracts (entry point ``pytest11``), so a backend's test suite needs nothing
more than::

    def test_decode_contract(verify_contract):
        verify_contract("mylib.decode", file="contracts.toml")          # a producer record

    def test_merge_contract(verify_contract):                            # a consumer record
        verify_contract("mylib.merge", file="contracts.toml", adapter="mylib.adapters:merge")

    @pytest.mark.attn_contract("mylib.decode", file="contracts.toml", device="cuda")
    def test_decode_on_gpu():
        ...                                                              # verified before the body

The record (a name in ``file`` or in the built-in catalog, or a record object) runs through its
adapter (or ``adapter=``) exactly as ``attn-contracts verify`` runs it; every difference between
what it declares and what the kernel does fails the test with the verifier's findings as the
message, one ``CODE subject: message`` per line. A record that cannot run here (no adapter, a
missing library, no CUDA) skips the test with the verifier's reason; ``skip=False`` fails instead.

Loaded in every pytest run of an environment that has attn-contracts installed, the plugin imports
nothing of this project (records, verifier, torch) until a test uses the fixture or the marker: a
run that does not pays only for registering the marker. Without torch (the ``kernels`` extra) a
test that verifies is skipped with the reason, as a record whose library is missing is.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING
from typing import Any

import pytest

if TYPE_CHECKING:
    from attn_contracts.consumer import ConsumerRecord
    from attn_contracts.records import CapabilityRecord

__all__ = ["ContractVerifier", "verify_contract", "verify_now"]

MARKER = "attn_contract"

ContractVerifier = Callable[..., Any]
_KERNELS_HINT = "pip install 'attn-contracts[kernels]'"


def _record(target: str | CapabilityRecord | ConsumerRecord,
            file: str | Path | None) -> CapabilityRecord | ConsumerRecord:
    from attn_contracts.consumer import ConsumerRecord
    from attn_contracts.records import CapabilityRecord
    from attn_contracts.registry import Registry
    from attn_contracts.sources import read_file
    from attn_contracts.sources import split_roles

    if isinstance(target, (CapabilityRecord, ConsumerRecord)):
        return target
    if file is not None:
        loaded, findings = read_file(file)
        if findings:
            pytest.fail(f"{file}: " + "\n".join(f.render() for f in findings), pytrace=False)
        producers, consumers = split_roles(loaded)
        pool: list[CapabilityRecord | ConsumerRecord] = [*producers, *consumers]
    else:
        registry = Registry()
        pool = [*registry.records(), *registry.consumers()]
    for record in pool:
        if record.name == target:
            return record
    known = ", ".join(sorted(r.name for r in pool)) or "(none)"
    pytest.fail(f"no record named {target!r} in {file or 'the catalog'}; known: {known}",
                pytrace=False)


def verify_now(target: str | CapabilityRecord | ConsumerRecord, *, file: str | Path | None = None,
               adapter: str | None = None, device: str = "cpu", seed: int = 0,
               skip: bool = True) -> Any:
    """Verify one record against its kernel; fail the running test with every finding.

    Returns the verifier's result (``VerifyResult`` or ``ConsumerVerifyResult``) when it matches."""
    from attn_contracts.consumer import ConsumerRecord
    from attn_contracts.records import CapabilityRecord

    record = _record(target, file)
    try:  # torch (the kernels extra) only now: without it the test is skipped, as `verify` does
        from attn_contracts.backends.adapter import adapter_path_for
        from attn_contracts.backends.runner import verify_consumer
        from attn_contracts.backends.runner import verify_record
    except ModuleNotFoundError as err:
        if (err.name or "attn_contracts").partition(".")[0] == "attn_contracts":
            raise  # a module of this project missing is a broken install, not a skip
        reason = f"{record.name}: needs {err.name}, {_KERNELS_HINT} ({err})"
        if skip:
            pytest.skip(reason)
        pytest.fail(f"{reason}; not verified", pytrace=False)
    # A test that names a record to verify is the user's code asking for it: the adapter of that
    # record (or the one passed here) runs; nothing else a file names does.
    own = adapter or record.adapter
    allow = [own.partition(":")[0]] if own else []
    if isinstance(record, ConsumerRecord):
        result: Any = verify_consumer(record, adapter or adapter_path_for(record), device=device,
                                      seed=seed, allow_adapters=allow)
    else:
        if adapter is not None:  # re-validated: model_copy(update=...) skips validation
            record = CapabilityRecord.model_validate({**record.model_dump(), "adapter": adapter})
        result = verify_record(record, device=device, seed=seed, allow_adapters=allow)
    if result.status == "skipped":
        if skip:
            pytest.skip(f"{record.name}: {result.reason}")
        pytest.fail(f"{record.name} was not verified: {result.reason}", pytrace=False)
    if result.findings:
        lines = [f"{record.name}: what the kernel does differs from its record "
                 f"({len(result.findings)} finding(s))"]
        lines += [f"  {f.render()}" for f in result.findings]
        pytest.fail("\n".join(lines), pytrace=False)
    return result


@pytest.fixture
def verify_contract() -> ContractVerifier:
    """``verify_contract(name_or_record, *, file=None, adapter=None, device="cpu", seed=0,
    skip=True)``: verify a record against its kernel; the test fails with the findings."""
    return verify_now


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}(name, *, file=None, adapter=None, device='cpu', seed=0, "
        "skip=True): verify the attn-contracts record NAME against its kernel before the test")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    for marker in item.iter_markers(name=MARKER):
        if len(marker.args) != 1:
            pytest.fail(f"@pytest.mark.{MARKER} takes one record name, got {marker.args!r}",
                        pytrace=False)
        verify_now(marker.args[0], **marker.kwargs)
