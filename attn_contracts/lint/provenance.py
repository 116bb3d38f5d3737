"""Which records may teach the linter's rules, and the check that none overrides the catalog.

Records teach the flow rules from three places only: the built-in catalog, the files
``[tool.attn-contracts] record-files`` of the linted project names, and ``--records FILE``. A
records document that merely lies among the linted paths is read for its schema (a backend
author's broken record is still reported: ``AC000``, ``AC001``, ``AC012``, ...) and never
teaches: a file nobody named must not change a verdict (a stray ``[[record]]`` saying
FlashInfer's decode is base e silenced the ``AC023`` it feeds). A named record that contradicts
a built-in one for the same function at the same release (another role, base, LSE position or
LSE arguments) is ``AC005`` and is left out, so the catalog's fact stands and the exit code says
so; a named record for a function the catalog does not know, or one that agrees, teaches.

"The same function" is what the rules cannot tell apart: the same package, class and name
(``flashinfer.BatchDecodeWithPagedKVCacheWrapper.run`` re-exports
``flashinfer.decode.BatchDecodeWithPagedKVCacheWrapper.run``). "The same release": both
records' ranges (``library_version`` and the call's ``versions``) hold the linted tree's version
of their library, or, where it is unknown, the two ranges overlap.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from attn_contracts.consumer import ConsumerCall
from attn_contracts.consumer import ConsumerRecord
from attn_contracts.consumer import FixedBase
from attn_contracts.findings import Code
from attn_contracts.findings import Finding
from attn_contracts.findings import Location
from attn_contracts.records import CapabilityRecord
from attn_contracts.records import ProducerCall
from attn_contracts.sources import AnyRecord
from attn_contracts.sources import FileReadError
from attn_contracts.sources import is_record_document
from attn_contracts.sources import looks_like_records
from attn_contracts.sources import parse_document
from attn_contracts.sources import read_file_located
from attn_contracts.sources import records_of
from attn_contracts.versions import effective_range
from attn_contracts.versions import in_range
from attn_contracts.versions import ranges_overlap

__all__ = ["Named", "check_document", "read_named", "trusted"]


@dataclass(frozen=True)
class Named:
    """A record from a file the user named, where it was read and which option named it."""

    record: AnyRecord
    location: Location
    via: str  # "record-files" or "--records"


def read_named(files: Iterable[tuple[str, str]]) -> tuple[list[Named], list[Finding]]:
    """The records of each ``(file, option)`` through the one guarded reader: a file that cannot
    be read (missing, a FIFO, too large, malformed) is one ``AC000`` at the parser's line and
    column; a bad record in it is a finding at its line, never a silent drop."""
    named: list[Named] = []
    findings: list[Finding] = []
    seen: set[str] = set()
    for file, via in files:
        p = _shown(Path(file))
        key = str(p.resolve()) if p.exists() else str(p)
        if key in seen:
            continue
        seen.add(key)
        try:
            located, found = read_file_located(p, label=True)
        except FileReadError as err:
            findings.append(Finding(
                Code.AC000, p.name, f"records file named by {via} cannot be read: {err}",
                location=Location(str(p), err.line, err.col)))
            continue
        named += [Named(r, where, via) for r, where in located]
        findings += found
    return named, findings


def _shown(p: Path) -> Path:
    """A path below the working folder as a relative one, as the linted paths usually are
    (``record-files`` are joined to the pyproject's absolute folder)."""
    if not p.is_absolute():
        return p
    try:
        return p.relative_to(Path.cwd())
    except ValueError:
        return p


def check_document(path: Path, text: str, *, named: bool) -> list[Finding]:
    """The schema findings of a TOML file among the linted paths; its records teach nothing
    (only :func:`read_named` reads records that do). A TOML file without record tables
    (``ruff.toml``, ``pyproject.toml``) is no records document and gives nothing, unless
    ``named`` (a file ``record-files`` or ``--records`` names, read by :func:`read_named`, whose
    findings this then leaves to it)."""
    if named or path.name == "pyproject.toml":
        return []
    try:  # the one reader of record documents (nesting bound included)
        doc = parse_document(path, text)
    except FileReadError as err:
        if not looks_like_records(text):
            return []
        return [Finding(Code.AC000, path.name, str(err).removeprefix(f"{path}: "),
                        location=Location(str(path), err.line, err.col))]
    if not is_record_document(doc):
        return []
    return records_of(doc, path=str(path), text=text, label=True)[1]


def trusted(builtin: Sequence[AnyRecord], named: Sequence[Named],
            versions: Mapping[str, str]) -> tuple[list[AnyRecord], list[Finding]]:
    """The named records that may teach (each one that contradicts none of ``builtin`` at the
    linted releases ``versions``), and an ``AC005`` error for each one left out."""
    index: dict[tuple[str, str | None, str], list[tuple[AnyRecord, int]]] = {}
    for rec in builtin:
        for i in range(len(rec.calls)):
            index.setdefault(_identity(_call(rec, i).function), []).append((rec, i))
    by_name = {(r.role, r.name): r for r in builtin}
    kept: list[AnyRecord] = []
    findings: list[Finding] = []
    for item in named:
        rec = item.record
        same = by_name.get((rec.role, rec.name))
        if same is not None:
            if same != rec:
                findings.append(_ac005(item, f"a different built-in {_kind(same)} is named "
                                       f"{rec.name!r}", "give the record its own name"))
            continue  # the identical record is the built-in one already
        clash = _contradiction(rec, index, versions)
        if clash is None:
            kept.append(rec)
        else:
            findings.append(_ac005(item, clash, "fix the record, or narrow its library_version "
                                   "or its call's versions to the releases it holds for; if "
                                   "the catalog is wrong, report it (the built-in record cites "
                                   "its source)"))
    return kept, findings


def _call(rec: AnyRecord, i: int) -> ProducerCall | ConsumerCall:
    """Call ``i`` of a record, typed (the two roles' calls share no base with these fields)."""
    return rec.calls[i]


def _kind(rec: AnyRecord) -> str:
    return "consumer record" if isinstance(rec, ConsumerRecord) else "record"


def _identity(function: str) -> tuple[str, str | None, str]:
    """What the rules match a call on: the package, the class of a method, the last name."""
    parts = function.split(".")
    owner = parts[-2] if len(parts) >= 2 and parts[-2][:1].isupper() else None
    return parts[0], owner, parts[-1]


def _facts(rec: AnyRecord, i: int) -> tuple[object, ...]:
    """What the flow rules take from one call of a record: its role and base, where the LSE
    is (a producer's result position, a consumer's arguments), and a merged LSE's base."""
    if isinstance(rec, CapabilityRecord):
        call = rec.calls[i]
        return "producer", call.base or rec.lse_base, call.result_index
    return ("consumer", rec.base, tuple(sorted(rec.calls[i].lse_args)),
            rec.output.lse_base if rec.output.returns_lse else None)


def _describe(rec: AnyRecord, i: int) -> str:
    if isinstance(rec, CapabilityRecord):
        call = rec.calls[i]
        base = (f"a base chosen by {call.base.keyword}" if call.base is not None
                else f"base-{rec.lse_base} LSE")
        return (f"returns {base} (element {call.lse_index} of its result)" if call.lse_returned
                else f"writes {base} into {', '.join(call.lse_out)}")
    base = rec.base.base if isinstance(rec.base, FixedBase) else f"chosen by {rec.base.keyword}"
    return (f"reads base {base} from {', '.join(rec.calls[i].lse_args)}"
            + (f" and returns base-{rec.output.lse_base} LSE" if rec.output.returns_lse else ""))


def _applies(rec: AnyRecord, i: int, versions: Mapping[str, str]) -> bool:
    version = versions.get(rec.library)
    return in_range(rec.library_version, version) and in_range(rec.calls[i].versions, version)


def _together(a: AnyRecord, i: int, b: AnyRecord, j: int, versions: Mapping[str, str]) -> bool:
    """Whether call ``i`` of ``a`` and call ``j`` of ``b`` both hold for one linted release."""
    if not (_applies(a, i, versions) and _applies(b, j, versions)):
        return False
    if a.library != b.library or a.library in versions:
        return True  # both hold at the known release (or at releases of two libraries)
    return ranges_overlap(effective_range(a.library_version, a.calls[i].versions),
                          effective_range(b.library_version, b.calls[j].versions))


def _when(rec: AnyRecord, i: int) -> dict[str, str]:
    """The literal keywords a call must pass for the record to apply (a consumer: none)."""
    return dict(rec.calls[i].when) if isinstance(rec, CapabilityRecord) else {}


def _contradiction(rec: AnyRecord, index: Mapping[tuple[str, str | None, str],
                                                  list[tuple[AnyRecord, int]]],
                   versions: Mapping[str, str]) -> str | None:
    """Why ``rec`` contradicts the catalog, or None. For each call it shares with a built-in
    record (the same function, both holding at one release), take the least call both apply to
    (their ``when`` keywords together; none conflicting): the built-in records that apply to
    that call say what it returns or reads, and ``rec`` contradicts them if it says something
    none of them says. Saying what one of them says adds nothing (where the built-ins already
    differ among themselves at that call, as FlashInfer's MLA ``run`` with and without
    ``return_lse_base_on_e``, the rules take what they agree on either way)."""
    for i in range(len(rec.calls)):
        if isinstance(rec, CapabilityRecord) and rec.lse_base is None:
            continue  # returns no LSE: the rules learn nothing from it
        call = _call(rec, i)
        mine = _when(rec, i)
        others = [(o, j) for o, j in index.get(_identity(call.function), [])
                  if not (isinstance(o, CapabilityRecord) and o.lse_base is None)
                  and _together(rec, i, o, j, versions)]
        for other, j in others:
            theirs = _when(other, j)
            if any(mine[k] != theirs[k] for k in mine.keys() & theirs.keys()):
                continue  # two call modes: no call is both
            least = {**mine, **theirs}
            said = {_facts(o, k) for o, k in others if _when(o, k).items() <= least.items()}
            if _facts(rec, i) in said:
                continue
            version = versions.get(other.library)
            at = (f"{other.library} {version}" if version is not None else
                  f"the releases both admit ({rec.library} "
                  f"{effective_range(rec.library_version, call.versions) or 'any'}; "
                  f"{other.library} "
                  f"{effective_range(other.library_version, _call(other, j).versions) or 'any'})")
            return (f"says {call.function} {_describe(rec, i)}, but the built-in "
                    f"{_kind(other)} {other.name} says {_call(other, j).function} "
                    f"{_describe(other, j)} at {at}")
    return None


def _ac005(item: Named, why: str, hint: str) -> Finding:
    return Finding(Code.AC005, item.record.name,
                   f"{_kind(item.record)} {item.record.name} (named by {item.via}) {why}; a named "
                   "record never overrides the catalog, so it is left out", hint=hint, field="calls",
                   found=item.record.name,
                   allowed="records that agree with the built-in catalog for its functions",
                   location=item.location)

