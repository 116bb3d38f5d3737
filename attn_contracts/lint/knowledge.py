"""What the linter knows about functions, read from records (never hard-coded in a rule).

Producers (:class:`~attn_contracts.records.CapabilityRecord` with ``calls``) say which calls return
an LSE and in which base; consumers (:class:`~attn_contracts.consumer.ConsumerRecord`) say which
calls read one, where its LSE goes in and how the base is chosen. They come from the built-in
catalog and from the linted project's own record files (``[tool.attn-contracts] record-files``,
or any TOML file of the set with ``[[record]]``/``[[consumer]]`` tables). The old
``combine-functions``/``base-keywords`` settings become keyword consumers of unknown base: they
feed the literal-base rule (``AC003``) and nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from attn_contracts.consumer import ConsumerRecord, FixedBase, KeywordBase
from attn_contracts.findings import Code, Finding
from attn_contracts.records import CapabilityRecord
from attn_contracts.sources import (
    RECORD_TABLES,
    FileReadError,
    is_record_document,
    read_file,
    records_of,
    split_roles,
)

__all__ = ["Consumer", "Knowledge", "Producer", "is_record_document", "read_record_document"]

RECORD_KEYS = RECORD_TABLES


def read_record_document(doc: dict[str, Any], path: str, text: str = "",
                         ) -> tuple[list[CapabilityRecord], list[ConsumerRecord], list[Finding]]:
    """Every producer and consumer record of one parsed TOML document; bad ones are findings
    located at their ``name = ...`` line (the one reader, :func:`attn_contracts.sources.records_of`)."""
    recs, findings = records_of(doc, path=path, text=text, label=True)
    producers, consumers = split_roles(recs)
    return producers, consumers, findings


@dataclass(frozen=True)
class Consumer:
    """One callable that reads an LSE: a record's call, or a legacy ``combine-functions`` name."""

    function: str  # dotted path as in the record
    record: str  # record name ("" for a legacy setting)
    lse_args: tuple[str, ...]  # parameter names or positions ("1")
    #: FixedBase, KeywordBase, or None (legacy: keyword(s) of unknown meaning)
    base: FixedBase | KeywordBase | None
    keywords: tuple[str, ...]  # keywords that carry the base

    @property
    def last(self) -> str:
        return self.function.rpartition(".")[2]

    @property
    def owner_class(self) -> str | None:
        """``flashinfer.cascade.MergeState.run`` → ``MergeState``: a method, matched only on a
        receiver built from that class."""
        parts = self.function.split(".")
        return parts[-2] if len(parts) >= 2 and parts[-2][:1].isupper() else None

    def base_of(self, literal: str) -> str | None:
        if isinstance(self.base, FixedBase):
            return self.base.base
        if isinstance(self.base, KeywordBase):
            return self.base.base_of(literal)
        return None

    @property
    def fixed_base(self) -> str | None:
        return self.base.base if isinstance(self.base, FixedBase) else None

    @property
    def default_base(self) -> str | None:
        return self.base.default_base if isinstance(self.base, KeywordBase) else None

    @property
    def label(self) -> str:
        return f"{self.last} (consumer record {self.record})" if self.record else self.last


@dataclass(frozen=True)
class Producer:
    """A call that returns an LSE of a known base when called with ``when``."""

    function: str
    record: str
    base: str
    when: tuple[tuple[str, str], ...]
    lse_index: int

    @property
    def last(self) -> str:
        return self.function.rpartition(".")[2]

    @property
    def owner_class(self) -> str | None:
        parts = self.function.split(".")
        return parts[-2] if len(parts) >= 2 and parts[-2][:1].isupper() else None


@dataclass
class Knowledge:
    """Producers and consumers by the last name of their function."""

    consumers: dict[str, list[Consumer]] = field(default_factory=dict)
    producers: dict[str, list[Producer]] = field(default_factory=dict)
    #: follow every file, not only those naming a known function (benchmarks of the worst case)
    follow_all: bool = False

    @classmethod
    def from_records(cls, producers: Iterable[CapabilityRecord] = (),
                     consumers: Iterable[ConsumerRecord] = (), *,
                     legacy_functions: Iterable[str] = (),
                     legacy_keywords: Iterable[str] = ()) -> Knowledge:
        k = cls()
        for rec in consumers:
            for call in rec.calls:
                kws = (rec.base.keyword,) if isinstance(rec.base, KeywordBase) else ()
                k.add_consumer(Consumer(call.function, rec.name, call.lse_args, rec.base, kws))
        for prod in producers:
            base = prod.lse_base
            if base is None:
                continue
            for pcall in prod.calls:
                k.add_producer(Producer(pcall.function, prod.name, base, pcall.when,
                                        pcall.lse_index))
        legacy_kws = tuple(legacy_keywords)
        for fn in legacy_functions:
            if fn not in k.consumers:  # a record says more than a name in a setting
                k.add_consumer(Consumer(fn, "", (), None, legacy_kws))
        return k

    def add_consumer(self, c: Consumer) -> None:
        self.consumers.setdefault(c.last, []).append(c)

    def add_producer(self, p: Producer) -> None:
        self.producers.setdefault(p.last, []).append(p)

    @staticmethod
    def builtin() -> tuple[list[CapabilityRecord], list[ConsumerRecord]]:
        """The built-in catalog's producers and consumers."""
        from attn_contracts.registry import Registry

        reg = Registry()
        return list(reg.records()), list(reg.consumers())


def load_project_records(files: Iterable[str]) -> tuple[list[CapabilityRecord],
                                                         list[ConsumerRecord], list[Finding]]:
    """The records of the files ``record-files`` names, through the one guarded reader (a FIFO,
    an oversized or missing file is one AC000); a bad record in them is a finding at its line,
    never a silent drop from the flow rules."""
    producers: list[CapabilityRecord] = []
    consumers: list[ConsumerRecord] = []
    findings: list[Finding] = []
    for f in files:
        p = Path(f)
        try:
            recs, found = read_file(p, label=True)
        except FileReadError as err:
            findings.append(Finding(Code.AC000, p.name, f"record file named in record-files "
                                    f"cannot be read: {err}", location=f"{p}:1:1"))
            continue
        prods, cons = split_roles(recs)
        producers += prods
        consumers += cons
        findings += found
    return producers, consumers, findings
