"""``verify --consumer``: run combine functions through adapters and compare what they assume with
their consumer records.

::

    attn-contracts verify --consumer NAME... | --all [--file F]... [--device cuda]
                          [--adapter MODULE:ATTR] [--allow-adapter MODULE]... [--probe-limits]

Names: consumer records of the catalog (``Registry().consumers()``) or of ``--file``, plus the
project's own merge plans, ``attn_contracts.plan.merge+basee`` … (the name without its ``+``
suffix selects every variant). Each record runs through its ``adapter``, else the built-in adapter
of a function in its ``calls`` (FlashInfer's merges), else the ``--adapter`` the user names.

Code named in a record runs only when the user allows it: the built-in adapter modules run as
shipped; any other module named by a record (catalog or ``--file``) needs ``--allow-adapter
MODULE`` (the module or a package above it). ``--adapter`` on the command line is the user's own
choice and needs nothing more. A record whose adapter is not allowed is reported as "skipped:
adapter not allowed" and nothing of it is imported, as for producer records.

The launch-limit probe runs for CUDA functions (child processes); ``--probe-limits`` forces it for
every consumer, ``--no-probe-limits`` skips it.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import asdict
from typing import Any

from attn_contracts.cli._output import EXIT_FINDINGS, EXIT_OK, UsageError, print_table
from attn_contracts.consumer import ConsumerRecord
from attn_contracts.findings import Finding
from attn_contracts.registry import Registry
from attn_contracts.sources import read_file, split_roles
from attn_contracts.verify_consumer import ConsumerVerifyResult, describe_consumer

__all__ = ["add_arguments", "result_json", "run",
           "table_rows", "verdict", "verify_all"]

def add_arguments(p: argparse.ArgumentParser) -> None:
    """The consumer flags of ``verify`` (names, --all, --file, --device, --format are shared)."""
    p.add_argument("--consumer", action="store_true",
                   help="verify consumer records (combine functions) instead of producers")
    p.add_argument("--adapter", metavar="MODULE:ATTR",
                   help="with --consumer: run the named consumers through this adapter")
    p.add_argument("--allow-adapter", action="append", default=[], metavar="MODULE",
                   help="allow adapters named by records in this module (or package); repeatable")
    p.add_argument("--probe-limits", action=argparse.BooleanOptionalAction, default=None,
                   help="with --consumer: run the launch-limit probe (default: CUDA functions)")


def _pool(args: argparse.Namespace) -> tuple[list[ConsumerRecord], list[Finding]]:
    if args.file:
        pool: list[ConsumerRecord] = []
        bad: list[Finding] = []
        for f in args.file:
            recs, found = read_file(f)
            pool += split_roles(recs)[1]
            bad += found
        return pool, bad
    try:
        from attn_contracts.backends.plan_consumers import plan_consumer_records
    except ImportError as err:
        raise UsageError(f"needs the kernels extra (pip install 'attn-contracts[kernels]'): "
                         f"{err}") from err
    return Registry().consumers() + plan_consumer_records(), []


def _select(pool: list[ConsumerRecord], args: argparse.Namespace) -> list[ConsumerRecord]:
    if args.all:
        return pool
    chosen: list[ConsumerRecord] = []
    missing = []
    for name in args.names:
        # the exact name, else every call-mode variant of it ("NAME+...")
        hits = ([r for r in pool if r.name == name]
                or [r for r in pool if r.name.startswith(name + "+")])
        if not hits:
            missing.append(name)
        chosen += [r for r in hits if r not in chosen]
    if missing:
        raise UsageError(f"unknown consumer record(s) {', '.join(missing)}; known: "
                         f"{', '.join(sorted(r.name for r in pool)) or '(none)'}")
    return chosen


def _adapters(records: list[ConsumerRecord], args: argparse.Namespace
              ) -> tuple[dict[str, str | None], dict[str, str]]:
    """Each record's adapter path, and the records whose adapter may not run (with why): code a
    record names runs only from the shipped adapters or a module the user allowed."""
    from attn_contracts.backends.adapter import BUILTIN_ADAPTERS, adapter_allowed
    from attn_contracts.backends.consumer_adapter import adapter_path_for

    allow = [BUILTIN_ADAPTERS, *args.allow_adapter]
    paths = {r.name: args.adapter or adapter_path_for(r) for r in records}
    refused = {n: f"skipped: adapter not allowed ({p}; pass --allow-adapter "
                  f"{p.partition(':')[0]} if you trust it)"
               for n, p in paths.items()
               if p and not args.adapter and not adapter_allowed(p, allow)}
    return paths, refused


def _jsonable(x: Any) -> Any:
    """JSON has no inf/NaN: non-finite floats become strings."""
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    return x


def result_json(r: ConsumerVerifyResult, adapter: str | None) -> dict[str, Any]:
    doc: dict[str, Any] = _jsonable({
        "name": r.name, "status": r.status, "reason": r.reason, "adapter": adapter,
        "declared": r.declared, "observed": asdict(r.observed) if r.observed else None,
        "notes": r.notes, "seconds": r.seconds, "findings": [f.to_json() for f in r.findings]})
    return doc


def verdict(r: ConsumerVerifyResult) -> str:
    if r.status == "skipped":
        return r.reason
    if r.status == "match":
        return "ok" + (f" ({len(r.notes)} note(s))" if r.notes else "")
    return "DIFFERS: " + ", ".join(dict.fromkeys(f.field for f in r.findings))


def table_rows(results: list[ConsumerVerifyResult],
               records: dict[str, ConsumerRecord]) -> list[list[str]]:
    return [[r.name, describe_consumer(r.declared or None, records[r.name]),
             describe_consumer(r.observed), verdict(r)] for r in results]


def _print_text(device: str, results: list[ConsumerVerifyResult],
                records: dict[str, ConsumerRecord], findings: list[Finding]) -> None:
    print_table(f"verify --consumer on {device}", ["consumer", "declared", "observed", "verdict"],
                table_rows(results, records))
    for f in findings:
        print(f.render())
    for r in results:
        for note in r.notes:
            print(f"note {r.name}: {note}")
    ran = sum(r.status != "skipped" for r in results)
    print(f"{ran} verified, {len(results) - ran} skipped, {len(findings)} finding(s)")


def verify_all(args: argparse.Namespace) -> tuple[list[ConsumerRecord], dict[str, str | None],
                                                  list[ConsumerVerifyResult], list[Finding]]:
    """Select, check the adapters are allowed, run; the CLI and the H200 script share this."""
    if not args.names and not args.all:
        raise UsageError("name consumer records or pass --all")
    pool, bad = _pool(args)
    records = _select(pool, args)
    paths, refused = _adapters(records, args)
    from attn_contracts.backends.adapter import device_unavailable
    from attn_contracts.backends.consumer_runner import verify_consumer
    from attn_contracts.verify_consumer import ConsumerVerifyResult

    missing = device_unavailable(args.device)  # as for producers: a device that is not there
    if missing and not args.skip_unavailable:
        raise UsageError(f"--device {args.device}: {missing} (--skip-unavailable skips every "
                         "record instead)")
    if missing:
        refused = {r.name: f"skipped: {missing}" for r in records}

    results = [ConsumerVerifyResult(r.name, "skipped", reason=refused[r.name])
               if r.name in refused else
               verify_consumer(r, paths[r.name], device=args.device, seed=args.seed,
                               probe_limits=args.probe_limits) for r in records]
    return records, paths, results, bad + [f for r in results for f in r.findings]


def run(args: argparse.Namespace) -> int:
    if args.update:
        raise UsageError("--update writes producer records; it does not take --consumer")
    records, paths, results, findings = verify_all(args)
    if args.format == "json":
        print(json.dumps({"ok": not findings, "results": [result_json(r, paths[r.name])
                                                          for r in results],
                          "findings": [f.to_json() for f in findings]}, indent=2))
    else:
        _print_text(args.device, results, {r.name: r for r in records}, findings)
    return EXIT_FINDINGS if findings else EXIT_OK
