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

from attn_contracts.findings import Code, Finding
from attn_contracts.records import CapabilityRecord, findings_from_validation_error

__all__ = ["FileReadError", "parse_record", "read_file", "records_from_object"]

Loaded = tuple[list[CapabilityRecord], list[Finding]]


class FileReadError(OSError):
    """A records file is missing or is not valid TOML/JSON (exit code 2 in the CLI)."""


def parse_record(raw: Any, *, location: str = "") -> Loaded:
    """Validate one raw mapping (or pass a record through) into a record or findings."""
    if isinstance(raw, CapabilityRecord):
        return [raw], []
    if not isinstance(raw, Mapping):
        return [], [Finding(Code.AC012, "<record>", f"a record must be a table/object, found "
                            f"{type(raw).__name__}", found=type(raw).__name__,
                            allowed="a table/object", location=location)]
    data = dict(raw)
    try:
        return [CapabilityRecord.model_validate(data)], []
    except ValidationError as err:
        return [], findings_from_validation_error(err, data, location=location)


def _entries(doc: Any) -> list[Any]:
    """A document holds one record, a list of records, or ``{"record": [...]}`` / ``records``."""
    if isinstance(doc, list):
        return doc
    if isinstance(doc, dict):
        # Consumer records (``[[consumer]]``, attn_contracts.consumer) share the catalog folder but
        # are not producer records; a file of only consumers holds no producers.
        if set(doc) == {"consumer"}:
            return []
        for key in ("record", "records"):
            if key in doc and set(doc) == {key}:
                value = doc[key]
                return value if isinstance(value, list) else [value]
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
    records: list[CapabilityRecord] = []
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
    if isinstance(obj, (CapabilityRecord, Mapping)):
        return parse_record(obj, location=location)
    if isinstance(obj, (str, Path)):
        try:
            return read_file(obj)
        except FileReadError as err:
            return [], [Finding(Code.AC000, subject, str(err), location=location)]
    if isinstance(obj, Iterable):
        records: list[CapabilityRecord] = []
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
