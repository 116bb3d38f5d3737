"""The registry of capability records: the built-in catalog, explicit registrations, files, plugins.

Nothing is read at import. The built-in catalog (``attn_contracts.backends``' TOML files) is read on
first use; third-party records come from the entry-point group ``attn_contracts.backends`` only when
:meth:`Registry.load_plugins` is called, optionally restricted to an allowlist of entry-point names
so an engine loads exactly the plugins it names.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from importlib import metadata
from importlib import resources
from pathlib import Path
from typing import Any
from typing import TypeVar
from typing import overload

from attn_contracts.consumer import ConsumerRecord
from attn_contracts.findings import Code
from attn_contracts.findings import ContractError
from attn_contracts.findings import Finding
from attn_contracts.findings import Location
from attn_contracts.findings import error_text
from attn_contracts.records import CapabilityRecord
from attn_contracts.sources import AnyRecord
from attn_contracts.sources import parse_record
from attn_contracts.sources import read_file
from attn_contracts.sources import records_from_object

__all__ = [
    "ENTRY_POINT_GROUP",
    "Registry",
    "UnknownRecordError",
    "default_registry",
    "get",
    "load_records",
    "records",
    "register",
]

ENTRY_POINT_GROUP = "attn_contracts.backends"
CONTRACT_ATTR = "__attn_contract__"

T = TypeVar("T", bound=type)
R = TypeVar("R", bound=CapabilityRecord | ConsumerRecord)


class UnknownRecordError(ContractError, KeyError):
    """``get(name)`` for a name no record has; the message lists the known names."""

    def __str__(self) -> str:
        return ContractError.__str__(self)


def _known(names: Iterable[str]) -> str:
    listed = sorted(names)
    return ", ".join(listed) if listed else "(none)"


def _lookup(table: dict[str, R], name: str, kind: str) -> R:
    try:
        return table[name]
    except KeyError:
        raise UnknownRecordError(
            [Finding(Code.AC013, name, f"no {kind} named {name!r}; known: {_known(table)}",
                     found=name, allowed=_known(table))],
            f"unknown {kind}",
        ) from None


class Registry:
    """Records by name. ``Registry()`` starts with the built-in catalog; ``builtin=False`` empty."""

    def __init__(self, *, builtin: bool = True) -> None:
        self._records: dict[str, CapabilityRecord] = {}
        self._consumers: dict[str, ConsumerRecord] = {}
        self._builtin_pending = builtin
        #: findings from sources that could not be turned into records (plugins, files)
        self.load_findings: list[Finding] = []

    # --- reading -----------------------------------------------------------------------------
    def _ensure_builtin(self) -> None:
        if not self._builtin_pending:
            return
        self._builtin_pending = False
        catalog = resources.files("attn_contracts.backends") / "catalog"
        for entry in sorted(catalog.iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".toml"):
                with resources.as_file(entry) as path:
                    recs, findings = read_file(path)
                if findings:  # the shipped catalog is tested clean; never ship a broken one silently
                    raise ContractError(findings, f"built-in catalog file {entry.name} is invalid")
                for r in recs:
                    self._add(r)

    def get(self, name: str) -> CapabilityRecord:
        """The producer record ``name``; :class:`UnknownRecordError` lists the known names."""
        self._ensure_builtin()
        return _lookup(self._records, name, "record")

    def consumer(self, name: str) -> ConsumerRecord:
        """The consumer record ``name``; :class:`UnknownRecordError` lists the known names."""
        self._ensure_builtin()
        return _lookup(self._consumers, name, "consumer record")

    def records(self) -> list[CapabilityRecord]:
        """Every producer record (kernels that emit an LSE)."""
        self._ensure_builtin()
        return list(self._records.values())

    def consumers(self) -> list[ConsumerRecord]:
        """Every consumer record (functions that combine LSEs)."""
        self._ensure_builtin()
        return list(self._consumers.values())

    def names(self) -> list[str]:
        return [r.name for r in self.records()]

    def __contains__(self, name: object) -> bool:
        self._ensure_builtin()
        return name in self._records

    def __iter__(self) -> Iterator[CapabilityRecord]:
        return iter(self.records())

    def __len__(self) -> int:
        return len(self.records())

    # --- adding ------------------------------------------------------------------------------
    def _add(self, record: R) -> R:
        checked, findings = parse_record(record)  # a model_copy'd record is re-validated here
        if findings or checked != [record]:
            raise ContractError(findings, f"invalid record {record.name!r}")
        table: dict[str, Any] = (self._consumers if isinstance(record, ConsumerRecord)
                                 else self._records)
        if record.name in table:
            if table[record.name] == record:
                return record  # re-registering the identical record (a re-import) is harmless
            raise ContractError(
                [Finding(Code.AC005, record.name, f"a different record named {record.name!r} is "
                         f"already registered; known: {_known(table)}",
                         hint="give each kernel variant and call mode its own name", field="name",
                         found=record.name, allowed="a name not yet registered")],
                "duplicate record",
            )
        table[record.name] = record
        return record

    def add(self, record: R) -> R:
        """Register one producer or consumer record; a different record under the same name is
        ``AC005``."""
        self._ensure_builtin()
        return self._add(record)

    @overload
    def register(self, obj: CapabilityRecord) -> Callable[[T], T]: ...
    @overload
    def register(self, obj: T) -> T: ...
    def register(self, obj: Any) -> Any:
        """Register a record, as a call or a class decorator.

        ``register(record)`` registers at once and returns a decorator that attaches the record to
        a backend class (``cls.__attn_contract__``); ``@register`` on a class reads the class's
        attached record, or its engine-style attributes through :func:`record_from_impl`.
        """
        if isinstance(obj, ConsumerRecord):
            return self.add(obj)
        if isinstance(obj, CapabilityRecord):
            record = self.add(obj)

            def attach(cls: T) -> T:
                setattr(cls, CONTRACT_ATTR, record)
                return cls

            return attach
        if isinstance(obj, type):
            attached = vars(obj).get(CONTRACT_ATTR)
            if isinstance(attached, CapabilityRecord):
                self.add(attached)
            else:
                from attn_contracts.bridge import record_from_impl

                self.add(record_from_impl(obj))
            return obj
        raise TypeError(f"register() takes a CapabilityRecord or a backend class, "
                        f"found {type(obj).__name__}")

    def load_file(self, path: str | Path) -> list[AnyRecord]:
        """Register every record of a file; raise :class:`ContractError` if any is invalid."""
        recs, findings = read_file(path)
        if findings:
            raise ContractError(findings, f"invalid records in {path}")
        return [self.add(r) for r in recs]

    def load_plugins(self, allow: Iterable[str] | None = None) -> list[Finding]:
        """Read records from the ``attn_contracts.backends`` entry points (only those in ``allow``,
        if given). Never raises for a bad plugin: its problems are returned as findings (and kept
        in :attr:`load_findings`)."""
        self._ensure_builtin()
        eps = {ep.name: ep for ep in metadata.entry_points(group=ENTRY_POINT_GROUP)}
        wanted = list(eps) if allow is None else list(allow)
        findings: list[Finding] = []
        for name in wanted:
            ep = eps.get(name)
            if ep is None:
                findings.append(Finding(Code.AC014, name, f"no plugin named {name!r} in entry-point "
                                        f"group {ENTRY_POINT_GROUP}; installed: {_known(eps)}",
                                        found=name, allowed=_known(eps)))
                continue
            location = Location(f"plugin {name} ({ep.value})")  # an entry point: no file
            try:
                obj = ep.load()
            except KeyboardInterrupt:
                raise
            except BaseException as err:  # sys.exit at import included: a finding, never the end
                findings.append(Finding(Code.AC014, name,
                    f"loading {ep.value} raised {error_text(err)}", location=location))
                continue
            recs, found = records_from_object(obj, location=location, subject=name)
            findings += found
            for r in recs:
                try:
                    self._add(r)
                except ContractError as err:
                    findings += err.findings
        self.load_findings += findings
        return findings


_DEFAULT: Registry | None = None


def default_registry() -> Registry:
    """The process-wide registry behind :func:`register`, :func:`get` and :func:`records`."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = Registry()
    return _DEFAULT


def register(obj: Any) -> Any:
    """Register a record or backend class in the default registry (see :meth:`Registry.register`)."""
    return default_registry().register(obj)


def get(name: str) -> CapabilityRecord:
    """The record named ``name``; :class:`UnknownRecordError` lists the known names."""
    return default_registry().get(name)


def records() -> list[CapabilityRecord]:
    """Every record of the default registry (built-in catalog, registrations, loaded plugins)."""
    return default_registry().records()


def load_records(path: str | Path) -> list[AnyRecord]:
    """Read (not register) the records of a TOML/JSON file; :class:`ContractError` if any is bad."""
    recs, findings = read_file(path)
    if findings:
        raise ContractError(findings, f"invalid records in {path}")
    return recs
