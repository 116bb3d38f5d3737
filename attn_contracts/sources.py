"""Reading records from where they live: TOML/JSON files, raw mappings and plugin objects.

Every reader returns ``(records, findings)`` and never raises on bad content: a malformed record is a
finding (with its code) so an engine sees every problem at once, and a bad plugin is never a
traceback.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from attn_contracts.consumer import ConsumerRecord
from attn_contracts.findings import Code, Finding
from attn_contracts.records import CapabilityRecord, findings_from_validation_error

__all__ = ["AnyRecord", "FileReadError", "parse_record", "read_file", "records_from_object",
           "split_roles"]

#: a producer (a kernel that emits an LSE) or a consumer (a function that combines LSEs)
AnyRecord = CapabilityRecord | ConsumerRecord
Loaded = tuple[list[AnyRecord], list[Finding]]
#: the table names a records document may hold, and the role each implies
_TABLES = {"record": "producer", "records": "producer", "consumer": "consumer",
           "consumers": "consumer"}


def split_roles(records: Iterable[AnyRecord]) -> tuple[list[CapabilityRecord],
                                                       list[ConsumerRecord]]:
    """Producers and consumers of a mixed list, each in its original order."""
    items = list(records)
    return ([r for r in items if isinstance(r, CapabilityRecord)],
            [r for r in items if isinstance(r, ConsumerRecord)])


class FileReadError(OSError):
    """A records file is missing or is not valid TOML/JSON (exit code 2 in the CLI)."""


def parse_record(raw: Any, *, location: str = "") -> Loaded:
    """Validate one raw mapping (or pass a record through) into a record or findings. A mapping
    with ``role = "consumer"`` is a consumer record, any other a producer record."""
    if isinstance(raw, (CapabilityRecord, ConsumerRecord)):
        return [raw], []
    if not isinstance(raw, Mapping):
        return [], [Finding(Code.AC012, "<record>", f"a record must be a table/object, found "
                            f"{type(raw).__name__}", found=type(raw).__name__,
                            allowed="a table/object", location=location)]
    data = dict(raw)
    model = ConsumerRecord if data.get("role") == "consumer" else CapabilityRecord
    try:
        return [model.model_validate(data)], []
    except ValidationError as err:
        return [], findings_from_validation_error(err, data, location=location)


def _entries(doc: Any) -> list[Any]:
    """A document holds one record, a list of records, or tables of them: ``record`` (or
    ``records``) for producers, ``consumer`` (or ``consumers``) for consumers."""
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict) and doc and set(doc) <= set(_TABLES):
        out: list[Any] = []
        for key, value in doc.items():
            for entry in value if isinstance(value, list) else [value]:
                if _TABLES[key] == "consumer" and isinstance(entry, dict):
                    entry = {"role": "consumer", **entry}
                out.append(entry)
        return out
    return [doc]


def read_file(path: str | Path) -> Loaded:
    """Read every record of a ``.toml`` or ``.json`` file.

    Raises :class:`FileReadError` when the file cannot be read or parsed at all; bad records
    inside a well-formed file are findings.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as err:
        raise FileReadError(f"{p}: cannot read records file ({err.strerror or err})") from err
    try:
        doc = tomllib.loads(text) if p.suffix == ".toml" else json.loads(text)
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as err:
        kind = "TOML" if p.suffix == ".toml" else "JSON"
        raise FileReadError(f"{p}: not valid {kind}: {err}") from err
    records: list[AnyRecord] = []
    findings: list[Finding] = []
    for i, raw in enumerate(_entries(doc)):
        r, f = parse_record(raw, location=f"{p}#{i}")
        records += r
        findings += f
    return records, findings


def records_from_object(obj: Any, *, location: str, subject: str = "") -> Loaded:
    """What a plugin entry point may return: a record, a mapping, a path, an iterable of those, or
    a zero-argument callable returning any of them. ``subject`` names the plugin in findings."""
    subject = subject or location
    if callable(obj) and not isinstance(obj, type):
        try:
            obj = obj()
        except ValidationError as err:
            return [], findings_from_validation_error(err, None, location=location)
        except Exception as err:  # a broken plugin is a finding, never a crash of the engine
            return [], [Finding(Code.AC014, subject, f"calling the plugin raised "
                                f"{type(err).__name__}: {err}", location=location)]
    if isinstance(obj, (CapabilityRecord, ConsumerRecord, Mapping)):
        return parse_record(obj, location=location)
    if isinstance(obj, (str, Path)):
        try:
            return read_file(obj)
        except FileReadError as err:
            return [], [Finding(Code.AC000, subject, str(err), location=location)]
    if isinstance(obj, Iterable):
        records: list[AnyRecord] = []
        findings: list[Finding] = []
        for item in obj:
            r, f = records_from_object(item, location=location, subject=subject)
            records += r
            findings += f
        return records, findings
    return [], [Finding(Code.AC014, subject, f"plugin object of type {type(obj).__name__} is not a "
                        "record source", found=type(obj).__name__,
                        allowed="CapabilityRecord, mapping, path, iterable or callable",
                        location=location)]
