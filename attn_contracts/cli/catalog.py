"""``list``, ``show``, ``schema`` and ``matrix``: the records (producers, and consumers in the
matrix) as tables, JSON and the schema."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from attn_contracts.cli._output import EXIT_OK
from attn_contracts.cli._output import print_table
from attn_contracts.consumer import ConsumerRecord
from attn_contracts.consumer import FixedBase
from attn_contracts.findings import Code
from attn_contracts.findings import Finding
from attn_contracts.records import CapabilityRecord
from attn_contracts.records import LseSpec
from attn_contracts.registry import Registry
from attn_contracts.registry import UnknownRecordError

__all__ = ["CONSUMER_COLUMNS", "MATRIX_COLUMNS", "consumer_rows", "matrix_rows", "record_schema",
           "run_list", "run_matrix", "run_schema", "run_show"]


def _lse_cells(r: CapabilityRecord) -> list[str]:
    """LSE, base, layout, dtype, empty row (LSE / output), sink; a base or layout a call
    chooses by keyword names the keyword (the record's value is the default)."""
    if isinstance(r.lse, LseSpec):
        base_kw = next((c.base.keyword for c in r.calls if c.base is not None), None)
        layout_kw = next((c.layout.keyword for c in r.calls if c.layout is not None), None)
        layout = r.lse.layout + ("+q_len" if r.lse.q_len_axis else "")
        layout += f" (heads padded to {r.lse.padded_heads})" if r.lse.padded_heads else ""
        layout += f" (or by `{layout_kw}`)" if layout_kw else ""
        base = r.lse.base + (f" (or by `{base_kw}`)" if base_kw else "")
        empty = f"{r.lse.empty_row} / {r.lse.empty_out or 'absent'}"
        return ["yes", base, layout, r.lse.dtype, empty, "yes" if r.lse.includes_sink else "no"]
    return ["no", "-", "-", "-", "-", "-"]


def run_list(args: argparse.Namespace) -> int:
    rows = [[r.name, r.library, *_lse_cells(r)[:5], r.evidence]
            for r in sorted(Registry().records(), key=lambda r: r.name)]
    print_table("attention kernel contracts", ["record", "library", "LSE", "base", "layout",
                                               "dtype", "empty row (LSE / out)", "evidence"],
                rows)
    return EXIT_OK


def run_show(args: argparse.Namespace) -> int:
    """The record named NAME, producer or consumer, as JSON ``validate --file`` reads back (a
    consumer carries its ``role``); a name both roles use prints both, as a list."""
    registry = Registry()
    every: list[CapabilityRecord | ConsumerRecord] = [*registry.records(), *registry.consumers()]
    hits = [r for r in every if r.name == args.name]
    if not hits:
        known = ", ".join(sorted({r.name for r in every})) or "(none)"
        raise UnknownRecordError([Finding(Code.AC013, args.name, f"no record named "
                                          f"{args.name!r}; known: {known}", found=args.name,
                                          allowed=known)], "unknown record")
    docs = [r.model_dump(mode="json") for r in hits]
    print(json.dumps(docs[0] if len(docs) == 1 else docs, indent=2, allow_nan=False))
    return EXIT_OK


def record_schema(role: str = "producer") -> dict[str, Any]:
    """The JSON schema (draft 2020-12) of one record of ``role`` ("producer" or "consumer"), as
    strict as the model except where JSON Schema cannot say it: ``128.0`` is an integer to JSON
    Schema, and a consumer's ``base.default`` must be a key of ``base.values``."""
    model = ConsumerRecord if role == "consumer" else CapabilityRecord
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            **model.model_json_schema()}


def run_schema(args: argparse.Namespace) -> int:
    print(json.dumps(record_schema(args.role), indent=2, allow_nan=False))
    return EXIT_OK


MATRIX_COLUMNS = ["record", "library", "LSE", "base", "LSE layout", "LSE dtype",
                  "empty row (LSE / out)",
                  "sink in LSE", "DCP", "attention", "head dims", "q_len > 1", "compute cap.",
                  "evidence"]


def matrix_rows(records: Sequence[CapabilityRecord]) -> list[list[str]]:
    rows = []
    for r in sorted(records, key=lambda r: r.name):
        cc = "-".join(c for c in (r.decode.min_compute_capability,
                                  r.decode.max_compute_capability) if c) or "any"
        rows.append([f"`{r.name}`", r.library, *_lse_cells(r), "yes" if r.supports_dcp else "no",
                     r.decode.attention.upper(), ", ".join(map(str, r.decode.head_dims)),
                     "yes" if r.decode.q_len_gt_1 else "no", cc, r.evidence.replace("_", " ")])
    return rows


CONSUMER_COLUMNS = ["consumer", "library", "base", "LSE layouts", "states", "LSE dtypes",
                    "read as empty", "all-empty row", "0·NaN safe", "row mask", "merged LSE",
                    "limits", "every rank alike", "evidence"]


def _base_cell(c: ConsumerRecord) -> str:
    if isinstance(c.base, FixedBase):
        return c.base.base
    values = ", ".join(f"{lit}={b}" for lit, b in c.base.values)
    default = f"; default {c.base.default}" if c.base.default is not None else "; required"
    return f"`{c.base.keyword}` ({values}{default})"


def _limits_cell(c: ConsumerRecord) -> str:
    lim = c.limits
    parts = [f"head dims {', '.join(map(str, lim.head_dims))}" if lim.head_dims else "",
             "D power of 2" if lim.pow2_head_dim else "", "N power of 2" if lim.pow2_states else "",
             f"N ≤ {lim.max_states}" if lim.max_states else "",
             f"H·D ≤ {lim.max_heads_x_head_dim}" if lim.max_heads_x_head_dim else "",
             (f"H × min(D·bytes/{lim.threads.vector_bytes}, {lim.threads.max_lanes_per_head}) ≤ "
              f"{lim.threads.max_threads} threads") if lim.threads else "",
             f"D·bytes multiple of {lim.row_bytes_multiple}" if lim.row_bytes_multiple else "",
             f"out {', '.join(lim.out_dtypes)}" if lim.out_dtypes else ""]
    return "; ".join(p for p in parts if p) or "-"


def _ranks_cell(c: ConsumerRecord) -> str:
    if c.ranks is None:
        return "-"
    return f"{', '.join(c.ranks.same)} ({c.ranks.on_mismatch} otherwise)"


def consumer_rows(consumers: Sequence[ConsumerRecord]) -> list[list[str]]:
    rows = []
    for c in sorted(consumers, key=lambda c: c.name):
        out = (f"base {c.output.lse_base}" if c.output.returns_lse else "no")
        rows.append([f"`{c.name}`", c.library, _base_cell(c), ", ".join(c.lse.layouts),
                     c.lse.states, ", ".join(c.lse.dtypes),
                     ", ".join(c.empty.reads_as_empty) or "-", c.empty.all_empty,
                     "yes" if c.empty.zero_weight_nan_safe else "no",
                     "yes" if c.empty.accepts_row_mask else "no", out, _limits_cell(c),
                     _ranks_cell(c), c.evidence.replace("_", " ")])
    return rows


def _md_table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for row in rows:
        print("| " + " | ".join(row) + " |")


def run_matrix(args: argparse.Namespace) -> int:
    registry = Registry()
    if args.format == "json":
        print(json.dumps([r.model_dump(mode="json") for r in
                          (*registry.records(), *registry.consumers())], indent=2,
                         allow_nan=False))
        return EXIT_OK
    _md_table(MATRIX_COLUMNS, matrix_rows(registry.records()))
    print()
    _md_table(CONSUMER_COLUMNS, consumer_rows(registry.consumers()))
    return EXIT_OK
