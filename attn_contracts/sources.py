"""Reading records from where they live: TOML/JSON files, raw mappings and plugin objects.

Every reader returns ``(records, findings)`` and never raises on bad content: a malformed record is a
finding (with its code) so an engine sees every problem at once, and a bad plugin is never a
traceback.
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Iterable
from collections.abc import Iterator
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Annotated
from typing import Any

from pydantic import Discriminator
from pydantic import Tag
from pydantic import TypeAdapter
from pydantic import ValidationError

from attn_contracts.collector import paused
from attn_contracts.consumer import ConsumerRecord
from attn_contracts.findings import Code
from attn_contracts.findings import Finding
from attn_contracts.findings import Location
from attn_contracts.findings import error_text
from attn_contracts.records import CapabilityRecord
from attn_contracts.records import findings_from_validation_error

try:  # tomllib's own upstream, compiled with mypyc: a 10 MiB records file parses ~3x faster
    import tomli as _toml
except ImportError:  # a dependency, but the standard library's parser reads the same documents
    import tomllib as _toml  # type: ignore[no-redef]

__all__ = ["MAX_FILE_BYTES", "MAX_NESTING", "MAX_PLUGIN_RECORDS", "RECORD_TABLES", "AnyRecord",
           "FileReadError", "Located", "is_record_document", "looks_like_records", "parse_document",
           "parse_record", "read_bytes", "read_file", "read_file_located", "records_from_object",
           "records_of", "split_roles"]

#: the most bytes a records file may hold; the catalog's largest file is ~10 KiB, so 10 MiB is room
#: for thousands of records while `/dev/zero` or a runaway file is refused instead of read to the end
MAX_FILE_BYTES = 10 * 1024 * 1024
#: the deepest nesting of tables/arrays a records document may have (a record needs 4)
MAX_NESTING = 64
#: the most records one plugin may return; an endless iterable stops here as an AC014 finding
MAX_PLUGIN_RECORDS = 10_000

#: a producer (a kernel that emits an LSE) or a consumer (a function that combines LSEs)
AnyRecord = CapabilityRecord | ConsumerRecord


def _role(raw: Any) -> Any:
    """The union's tag: a record's ``role``; an entry without one is a producer (the documents
    written before roles existed hold producers only, or ``[[consumer]]`` tables)."""
    if isinstance(raw, Mapping):
        return raw.get("role", "producer")
    return getattr(raw, "role", None)


#: the one record model: a discriminated union on ``role`` over the shared header
_RECORD: TypeAdapter[AnyRecord] = TypeAdapter(Annotated[
    Annotated[CapabilityRecord, Tag("producer")] | Annotated[ConsumerRecord, Tag("consumer")],
    Discriminator(_role)])
Loaded = tuple[list[AnyRecord], list[Finding]]
#: the table names a records document may hold, and the role each implies
_TABLES = {"record": "producer", "records": "producer", "consumer": "consumer",
           "consumers": "consumer"}
#: the table names of a records document (``[[record]]``, ``[[consumers]]``, ...)
RECORD_TABLES: tuple[str, ...] = tuple(_TABLES)
#: a ``[[record]]``-like table header in text that may not even parse
_TABLE_HEADER = re.compile(rf"^\s*\[\[\s*({'|'.join(RECORD_TABLES)})\s*\]\]", re.MULTILINE)


def is_record_document(doc: Any) -> bool:
    """A parsed document is a records document iff it holds a non-empty array of tables under
    one of :data:`RECORD_TABLES` (``ruff.toml`` and ``pyproject.toml`` do not)."""
    return isinstance(doc, dict) and any(
        isinstance(doc.get(k), list) and doc[k] and all(isinstance(e, dict) for e in doc[k])
        for k in RECORD_TABLES)


def looks_like_records(text: str) -> bool:
    """Whether a document's text has a records table header (for one that does not parse)."""
    return _TABLE_HEADER.search(text) is not None


def split_roles(records: Iterable[AnyRecord]) -> tuple[list[CapabilityRecord],
                                                       list[ConsumerRecord]]:
    """Producers and consumers of a mixed list, each in its original order."""
    items = list(records)
    return ([r for r in items if isinstance(r, CapabilityRecord)],
            [r for r in items if isinstance(r, ConsumerRecord)])


class FileReadError(OSError):
    """A records file is missing or is not valid TOML/JSON (exit code 2 in the CLI). ``line`` and
    ``col`` (1-based, characters) say where the parser stopped; 1, 1 when it did not say;
    ``reason`` is the message without the path (what a finding located at the file says)."""

    def __init__(self, message: str, line: int = 1, col: int = 1, *, reason: str = "") -> None:
        super().__init__(message)
        self.line, self.col = line, col
        self.reason = reason or message

    def __str__(self) -> str:
        return str(self.args[0])


def parse_record(raw: Any, *, location: Location | None = None) -> Loaded:
    """Validate one raw mapping (or re-validate a record) into a record or findings: the
    record's ``role`` picks the model (``"producer"`` when absent, ``"consumer"``)."""
    if isinstance(raw, (CapabilityRecord, ConsumerRecord)):
        # re-validated: model_copy(update=...) and model_construct skip validation
        recs, findings = parse_record(raw.model_dump(warnings=False), location=location)
        return ([raw] if recs == [raw] else recs), findings  # the caller's object if valid
    if not isinstance(raw, Mapping):
        return [], [Finding(Code.AC012, "<record>", f"a record must be a table/object, found "
                            f"{type(raw).__name__}", found=type(raw).__name__,
                            allowed="a table/object", location=location)]
    data = dict(raw)
    try:
        return [_RECORD.validate_python(data)], []
    except ValidationError as err:
        return [], findings_from_validation_error(err, data, location=location)


def _entries(doc: Any) -> list[tuple[str, Any]]:
    """(table role, entry) for each entry: a document holds one record, a list of records, or
    tables of them: ``record`` (or ``records``) for producers, ``consumer`` (or ``consumers``)
    for consumers. A consumer table's entries get ``role = "consumer"``."""
    if isinstance(doc, list):
        return [(_role_word(e), e) for e in doc]
    if isinstance(doc, dict) and doc and set(doc) <= set(_TABLES):
        out: list[tuple[str, Any]] = []
        for key, value in doc.items():
            for entry in value if isinstance(value, list) else [value]:
                if _TABLES[key] == "consumer" and isinstance(entry, dict):
                    entry = {"role": "consumer", **entry}
                out.append((_TABLES[key], entry))
        return out
    return [(_role_word(doc), doc)]


def _role_word(entry: Any) -> str:
    return "consumer" if isinstance(entry, Mapping) and entry.get("role") == "consumer" else \
        "producer"


#: an entry's ``name = "..."`` (TOML) or ``"name": "..."`` (JSON), the name captured
_NAME_KEY = re.compile(r'(?:^|[{,\s])"?name"?\s*[=:]\s*"([^"\\\n]*)"')


def _name_lines(text: str) -> dict[str, int]:
    """Each entry name → the first line that sets it, in one pass over the text (a lookup per
    record that scanned every line made a 10 MiB file take an hour)."""
    lines: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if "name" in line:
            for m in _NAME_KEY.finditer(line):
                lines.setdefault(m.group(1), number)
    return lines


#: a record with the ``path:line:col`` of its entry (the line of its ``name``)
Located = tuple[AnyRecord, Location]


def records_of(doc: Any, *, path: str, text: str = "", label: bool = False) -> Loaded:
    """Every record of one parsed document and a finding for each bad entry, located at
    ``path:line:1`` (the line of the entry's name). ``label``: begin each message with the
    entry's kind and name (``record my.kernel: ...``), for output that shows no subject."""
    located, findings = _located_records_of(doc, path=path, text=text, label=label)
    return [r for r, _ in located], findings


@paused()
def _located_records_of(doc: Any, *, path: str, text: str, label: bool,
                        ) -> tuple[list[Located], list[Finding]]:
    lines = _name_lines(text)
    records: list[Located] = []
    findings: list[Finding] = []
    for role, raw in _entries(doc):
        name = raw.get("name") if isinstance(raw, Mapping) else None
        location = Location(path, lines.get(name, 1) if isinstance(name, str) else 1, 1)
        recs, found = parse_record(raw, location=location)
        records += [(r, location) for r in recs]
        word = "consumer" if role == "consumer" else "record"
        findings += [replace(f, message=f"{word} {f.subject}: {f.message}") if label else f
                     for f in found]
    return records, findings


def read_bytes(p: Path, kind: str = "records file") -> bytes:
    """At most :data:`MAX_FILE_BYTES` of a regular file (``kind`` names it in errors). A FIFO,
    device or directory is refused before it is opened (stat first: opening some devices has
    effects), and the open is non-blocking and checked again (fstat), so a file swapped in
    between cannot hang the caller."""
    try:
        st = os.stat(p)
    except OSError as err:
        raise _refused(p, f"cannot read {kind} ({err.strerror or err})") from err
    if not stat.S_ISREG(st.st_mode):
        raise _refused(p, f"not a regular file (a {kind} must be one; found a "
                          f"{_file_kind(st.st_mode)})")
    if st.st_size > MAX_FILE_BYTES:  # refused before a byte is read
        raise _refused(p, f"{st.st_size} bytes is larger than "
                          f"{MAX_FILE_BYTES // (1024 * 1024)} MiB, the most a {kind} may hold")
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as err:
        raise _refused(p, f"cannot read {kind} ({err.strerror or err})") from err
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise _refused(p, f"not a regular file (a {kind} must be one; found a "
                          f"{_file_kind(mode)})")
    with os.fdopen(fd, "rb") as fh:
        try:
            data = fh.read(MAX_FILE_BYTES + 1)
        except OSError as err:
            raise _refused(p, f"cannot read {kind} ({err.strerror or err})") from err
    if len(data) > MAX_FILE_BYTES:  # grew since stat, or a file whose size stat does not tell
        raise _refused(p, f"larger than {MAX_FILE_BYTES // (1024 * 1024)} MiB, the most a "
                          f"{kind} may hold")
    return data


def _refused(p: Path, reason: str) -> FileReadError:
    return FileReadError(f"{p}: {reason}", reason=reason)


def _file_kind(mode: int) -> str:
    kinds = ((stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "FIFO"), (stat.S_ISCHR, "character "
             "device"), (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket"))
    return next((name for test, name in kinds if test(mode)), "special file")


def _depth(doc: Any) -> int:
    """The nesting depth of a parsed document, computed without recursion."""
    if not isinstance(doc, (dict, list)):
        return 0
    deepest, stack = 0, [(doc, 1)]
    while stack:  # containers only: the scalars of a 10 MiB file are most of its nodes
        node, level = stack.pop()
        deepest = max(deepest, level)
        if level > MAX_NESTING:
            break
        children = node.values() if isinstance(node, dict) else node
        stack += [(c, level + 1) for c in children if isinstance(c, (dict, list))]
    return deepest


def _no_constant(name: str) -> Any:
    """Python's json reads ``Infinity``/``NaN``; JSON (RFC 8259) has no such values."""
    raise ValueError(f"{name} is not a JSON value (RFC 8259 has no inf or NaN)")


def _decode(p: Path, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        kind = "TOML" if p.suffix == ".toml" else "JSON"
        raise FileReadError(f"{p}: not UTF-8 text (byte 0x{data[err.start]:02x} at offset "
                            f"{err.start}); a records file is UTF-8 {kind}") from None


#: where tomllib (before Python 3.14, which adds ``lineno``/``colno``) says it stopped
_TOML_AT = re.compile(r"\(at line (\d+), column (\d+)\)")


def error_position(err: BaseException) -> tuple[int, int]:
    """(line, column), 1-based, of a TOML or JSON decode error: its ``lineno``/``colno`` where
    the parser sets them (json; tomllib from Python 3.14), else the position tomllib writes in
    its message on 3.11-3.13; (1, 1) when neither says."""
    line, col = getattr(err, "lineno", None), getattr(err, "colno", None)
    if isinstance(line, int) and isinstance(col, int):
        return max(1, line), max(1, col)
    m = _TOML_AT.search(str(err))
    return (int(m.group(1)), int(m.group(2))) if m else (1, 1)


@paused()
def parse_document(path: str | Path, text: str) -> Any:
    """The parsed ``.toml`` (else JSON) document of ``text``, within :data:`MAX_NESTING`; a
    :class:`FileReadError` when it is empty, malformed or nested too deeply."""
    p = Path(path)
    kind = "TOML" if p.suffix == ".toml" else "JSON"
    if not text.strip():
        raise FileReadError(f"{p}: empty file, no records")
    try:
        doc = _toml.loads(text) if kind == "TOML" else json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise FileReadError(f"{p}: not valid {kind}: nested deeper than the parser can read "
                            f"(a records file may nest at most {MAX_NESTING} levels)") from None
    except ValueError as err:  # TOMLDecodeError, JSONDecodeError, an integer too long to convert
        raise FileReadError(f"{p}: not valid {kind}: {err}", *error_position(err)) from None
    if _depth(doc) > MAX_NESTING:
        raise FileReadError(f"{p}: nested deeper than {MAX_NESTING} levels, the most a records "
                            "file may nest")
    if doc in ({}, []):
        raise FileReadError(f"{p}: holds no records (an empty {kind} document)")
    return doc


def read_file(path: str | Path, *, label: bool = False) -> Loaded:
    """Read every record of a ``.toml`` or ``.json`` file (any other suffix is read as JSON).

    The one reader of record documents: the registry, the CLI, startup and the linter all come
    here. The file is stat'ed before it is opened (a FIFO or device is never read) and at most
    :data:`MAX_FILE_BYTES` are read. Raises :class:`FileReadError` when the file cannot be read
    or parsed at all: missing, not a regular file, over :data:`MAX_FILE_BYTES`, not UTF-8, empty,
    malformed, or nested deeper than :data:`MAX_NESTING`. Bad records inside a well-formed file
    are findings located at ``path:line:1`` (see :func:`records_of`; ``label`` as there).
    """
    located, findings = read_file_located(path, label=label)
    return [r for r, _ in located], findings


def read_file_located(path: str | Path, *, label: bool = False,
                      ) -> tuple[list[Located], list[Finding]]:
    """:func:`read_file`, each record with the ``path:line:1`` of its entry."""
    p = Path(path)
    text = _decode(p, read_bytes(p))
    return _located_records_of(parse_document(p, text), path=str(p), text=text, label=label)



def records_from_object(obj: Any, *, location: Location, subject: str = "") -> Loaded:
    """What a plugin entry point may return: a record, a mapping, a path, an iterable of those, or
    a zero-argument callable returning any of them. ``subject`` names the plugin in findings.

    A plugin is someone else's code: whatever it raises (``SystemExit`` included) is an ``AC014``
    finding, and it may yield at most :data:`MAX_PLUGIN_RECORDS` entries, so an endless iterable
    ends as a finding too."""
    subject = subject or str(location)
    records: list[AnyRecord] = []
    findings: list[Finding] = []
    try:
        for count, item in enumerate(_flatten(obj, location, subject)):
            if count >= MAX_PLUGIN_RECORDS:
                findings.append(Finding(
                    Code.AC014, subject, f"the plugin returned more than {MAX_PLUGIN_RECORDS} "
                    "entries (an endless iterable?); the most one plugin may return is "
                    f"{MAX_PLUGIN_RECORDS}", found=f">{MAX_PLUGIN_RECORDS}",
                    allowed=f"at most {MAX_PLUGIN_RECORDS} records", location=location))
                break
            r, f = item
            records += r
            findings += f
    except KeyboardInterrupt:
        raise
    except ValidationError as err:  # a plugin that builds a record in code and gets it wrong
        findings += findings_from_validation_error(err, None, location=location)
    except BaseException as err:  # a broken plugin is a finding, never the end of the engine
        findings.append(Finding(Code.AC014, subject,
            f"the plugin raised {error_text(err)}", location=location))
    return records, findings


def _flatten(obj: Any, location: Location, subject: str, depth: int = 0) -> Iterator[Loaded]:
    """The loaded records of each entry of a plugin's object, lazily (so a bound can stop it)."""
    if callable(obj) and not isinstance(obj, type):
        obj = obj()
    if isinstance(obj, (CapabilityRecord, ConsumerRecord, Mapping)):
        yield parse_record(obj, location=location)
    elif isinstance(obj, (str, Path)):
        try:
            yield read_file(obj)
        except FileReadError as err:
            yield [], [Finding(Code.AC000, subject, str(err), location=location)]
    elif isinstance(obj, Iterable) and depth < MAX_NESTING:
        for item in obj:
            yield from _flatten(item, location, subject, depth + 1)
    else:
        what = "nested too deep" if isinstance(obj, Iterable) else "is not a record source"
        yield [], [Finding(Code.AC014, subject, f"plugin object of type {type(obj).__name__} "
                           f"{what}", found=type(obj).__name__,
                           allowed="CapabilityRecord, mapping, path, iterable or callable",
                           location=location)]
