"""``list``, ``show``, ``schema`` and ``matrix``: the records as tables, JSON and the schema."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

from attn_contracts.cli._output import EXIT_OK, print_table
from attn_contracts.consumer import ConsumerRecord
from attn_contracts.records import CapabilityRecord, LseSpec
from attn_contracts.registry import Registry

__all__ = ["MATRIX_COLUMNS", "matrix_rows", "record_schema", "run_list", "run_matrix", "run_schema",
           "run_show"]


def _lse_cells(r: CapabilityRecord) -> list[str]:
    if isinstance(r.lse, LseSpec):
        layout = r.lse.layout + ("+q_len" if r.lse.q_len_axis else "")
        layout += f" (heads padded to {r.lse.padded_heads})" if r.lse.padded_heads else ""
        return ["yes", r.lse.base, layout, r.lse.dtype, r.lse.empty_row,
                "yes" if r.lse.includes_sink else "no"]
    return ["no", "-", "-", "-", "-", "-"]


def run_list(args: argparse.Namespace) -> int:
    rows = [[r.name, r.library, *_lse_cells(r)[:5], r.evidence]
            for r in sorted(Registry().records(), key=lambda r: r.name)]
    print_table("attention kernel contracts", ["record", "library", "LSE", "base", "layout",
                                               "dtype", "empty row", "evidence"], rows)
    return EXIT_OK


def run_show(args: argparse.Namespace) -> int:
    print(Registry().get(args.name).model_dump_json(indent=2))
    return EXIT_OK


def record_schema(role: str = "producer") -> dict[str, Any]:
    """The JSON schema (draft 2020-12) of one record of ``role`` ("producer" or "consumer"), as
    strict as the model except where JSON Schema cannot say it: ``128.0`` is an integer to JSON
    Schema, and a consumer's ``base.default`` must be a key of ``base.values``."""
    model = ConsumerRecord if role == "consumer" else CapabilityRecord
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            **model.model_json_schema()}


def run_schema(args: argparse.Namespace) -> int:
    print(json.dumps(record_schema(args.role), indent=2))
    return EXIT_OK


MATRIX_COLUMNS = ["record", "library", "LSE", "base", "LSE layout", "LSE dtype", "empty row",
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


def run_matrix(args: argparse.Namespace) -> int:
    records = Registry().records()
    if args.format == "json":
        print(json.dumps([r.model_dump(mode="json") for r in records], indent=2))
        return EXIT_OK
    print("| " + " | ".join(MATRIX_COLUMNS) + " |")
    print("|" + "---|" * len(MATRIX_COLUMNS))
    for row in matrix_rows(records):
        print("| " + " | ".join(row) + " |")
    return EXIT_OK
