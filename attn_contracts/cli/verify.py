"""``verify``: run records' adapters and compare what the kernels return with the records.

The judgement is torch-free (:mod:`attn_contracts.verify`); running needs the kernels extra and is
imported only when a run is asked for (:mod:`attn_contracts.backends.runner`).
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import asdict
from datetime import date
from pathlib import Path

from attn_contracts.cli import verify_consumer
from attn_contracts.cli._output import EXIT_FINDINGS, EXIT_OK, UsageError, print_table
from attn_contracts.findings import Code, Finding
from attn_contracts.records import CapabilityRecord
from attn_contracts.registry import Registry, UnknownRecordError
from attn_contracts.sources import read_file, split_roles
from attn_contracts.verify import VerifyResult, describe

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("names", nargs="*", metavar="NAME", help="records to verify")
    p.add_argument("--all", action="store_true", help="every record (with --file: of the files)")
    p.add_argument("--file", action="append", default=[], metavar="F",
                   help="verify records from this TOML/JSON file instead of the catalog")
    p.add_argument("--device", default="cpu", type=_device, help="cpu, cuda or cuda:N")
    p.add_argument("--skip-unavailable", action="store_true",
                   help="a --device that is not there skips every record (default: exit 2)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument("--update", metavar="F", type=Path,
                   help="write the observed facts and today's date into this JSON records file")
    verify_consumer.add_arguments(p)  # --consumer and its flags


def _device(text: str) -> str:
    if not re.fullmatch(r"cpu|cuda(:\d+)?", text):
        raise argparse.ArgumentTypeError(f"expected cpu, cuda or cuda:N, found {text!r}")
    return text


def _records(args: argparse.Namespace) -> tuple[list[CapabilityRecord], list[Finding]]:
    if args.file:
        pool: list[CapabilityRecord] = []
        bad: list[Finding] = []
        for f in args.file:
            recs, found = read_file(f)
            pool += split_roles(recs)[0]
            bad += found
    else:
        pool, bad = Registry().records(), []
    if args.all or (args.file and not args.names):  # --file alone: the records of the files
        return pool, bad
    by_name = {r.name: r for r in pool}
    missing = [n for n in args.names if n not in by_name]
    if missing:
        known = ", ".join(sorted(by_name)) or "(none)"
        raise UnknownRecordError([Finding(Code.AC013, missing[0], f"unknown record(s) "
                                          f"{', '.join(missing)}; known: {known}",
                                          found=missing[0], allowed=known)], "unknown record")
    return [by_name[n] for n in args.names], bad


def _update_file(path: Path, results: list[VerifyResult],
                 records: dict[str, CapabilityRecord], device: str) -> int:
    if path.suffix != ".json":
        raise UsageError(f"--update writes JSON; {path} does not end in .json")
    stamp = f"attn-contracts verify --device {device} on {date.today().isoformat()}"
    out = []
    for r in results:
        if r.observed is None:
            continue
        data = records[r.name].model_dump(mode="json")
        o = r.observed
        data["lse"].update(layout=o.layout if o.layout != "unknown" else data["lse"]["layout"],
                           q_len_axis=o.q_len_axis, padded_heads=o.padded_heads, dtype=o.dtype)
        if o.base in ("e", "2"):
            data["lse"]["base"] = o.base
        if o.empty_row in ("-inf", "+inf", "nan"):
            data["lse"]["empty_row"] = o.empty_row
        data.update(evidence="measured", verified=stamp)
        out.append(data)
    try:
        path.write_text(json.dumps(out, indent=2) + "\n")
    except OSError as err:
        raise UsageError(f"cannot write {path}: {err.strerror or err}") from err
    return len(out)


def _print_text(device: str, results: list[VerifyResult], findings: list[Finding]) -> None:
    print_table(f"verify on {device}", ["record", "declared", "observed", "verdict"], [
        [r.name, describe(r.declared or None), describe(r.observed),
         r.reason if r.status == "skipped" else
         ("ok" if r.status == "match" else "DIFFERS: " + ", ".join(f.field for f in r.findings))]
        for r in results])
    for f in findings:
        print(f.render())
    ran = sum(r.observed is not None for r in results)  # an adapter that never ran verified nothing
    skipped = sum(r.status == "skipped" for r in results)
    failed = len(results) - ran - skipped
    print(f"{ran} verified, {skipped} skipped, " + (f"{failed} could not run, " if failed else "")
          + f"{len(findings)} finding(s)")


def _results(args: argparse.Namespace, records: list[CapabilityRecord]) -> list[VerifyResult]:
    try:  # torch only now: a missing kernels extra is a skip with the hint, never a finding
        from attn_contracts.backends.adapter import BUILTIN_ADAPTERS, device_unavailable
        from attn_contracts.backends.runner import verify_record
    except ImportError as err:
        reason = f"skipped: needs torch, pip install 'attn-contracts[kernels]' ({err})"
        return [VerifyResult(r.name, "skipped", reason) for r in records]
    missing = device_unavailable(args.device)
    if missing and not args.skip_unavailable:
        raise UsageError(f"--device {args.device}: {missing} (--skip-unavailable skips every "
                         "record instead)")
    if missing:
        return [VerifyResult(r.name, "skipped", f"skipped: {missing}") for r in records]
    # The trust boundary: a records file is data, so its adapters run only from modules the user
    # named; the adapters this project ships are always allowed.
    allow = [BUILTIN_ADAPTERS, *args.allow_adapter]
    return [verify_record(r, device=args.device, seed=args.seed, allow_adapters=allow)
            for r in records]


def run(args: argparse.Namespace) -> int:
    if args.consumer:
        return verify_consumer.run(args)
    if args.adapter:
        raise UsageError("--adapter runs consumers; pass --consumer")
    if not args.names and not args.all and not args.file:
        raise UsageError("name records, pass --all, or pass --file F")
    records, bad = _records(args)
    results = _results(args, records)
    findings = bad + [f for r in results for f in r.findings]
    if args.format == "json":
        print(json.dumps({"ok": not findings, "results": [
            {"name": r.name, "status": r.status, "reason": r.reason, "declared": r.declared,
             "observed": asdict(r.observed) if r.observed else None, "seconds": r.seconds,
             "findings": [f.to_json() for f in r.findings]} for r in results]}, indent=2))
    else:
        _print_text(args.device, results, findings)
    if args.update:
        n = _update_file(args.update, results, {r.name: r for r in records}, args.device)
        print(f"wrote {n} record(s) to {args.update}")
    return EXIT_FINDINGS if findings else EXIT_OK
