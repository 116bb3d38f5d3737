"""``verify``: run records' adapters and compare what they do with what the records say.

::

    attn-contracts verify NAME... | --all [--file F]... [--device cuda] [--update F.json]
    attn-contracts verify --consumer NAME... | --all [--file F]... [--device cuda]
                          [--adapter MODULE:ATTR] [--allow-adapter MODULE]... [--[no-]probe-limits]

Producers are kernels (what they return: base, layout, dtype, empty rows); consumers are combine
functions (what they assume), from the catalog (``Registry().consumers()``) or ``--file``, plus
the project's own merge plans, ``attn_contracts.plan.merge+basee`` … (a name without its ``+``
suffix selects every variant). A consumer runs through its ``adapter``, else the built-in adapter
of a function in its ``calls`` (FlashInfer's merges), else the ``--adapter`` the user names.

Code named in a record runs only when the user allows it: the built-in adapter modules run as
shipped; any other module named by a record (catalog or ``--file``) needs ``--allow-adapter
MODULE`` (the module or a package above it). ``--adapter`` on the command line is the user's own
choice and needs nothing more. The allowlist is enforced by the library
(:mod:`attn_contracts.backends.runner`), this command only says which modules it holds.

Something the run needs that is not there — torch (the kernels extra), a library an adapter
requires (FlashInfer), the ``--device`` — is a usage error (exit 2) unless ``--skip-unavailable``
makes it a skip. The judgement is torch-free (:mod:`attn_contracts.judge`); running needs the
kernels extra and is imported only when a run is asked for.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from dataclasses import asdict
from datetime import date
from pathlib import Path
from typing import Any
from typing import NoReturn

from attn_contracts.cli._output import EXIT_FINDINGS
from attn_contracts.cli._output import EXIT_OK
from attn_contracts.cli._output import UsageError
from attn_contracts.cli._output import print_table
from attn_contracts.consumer import ConsumerRecord
from attn_contracts.findings import Code
from attn_contracts.findings import ContractError
from attn_contracts.findings import Finding
from attn_contracts.judge import VerifyResult
from attn_contracts.judge import describe
from attn_contracts.judge import describe_consumer
from attn_contracts.records import CapabilityRecord
from attn_contracts.registry import Registry
from attn_contracts.registry import UnknownRecordError
from attn_contracts.sources import AnyRecord
from attn_contracts.sources import read_file

__all__ = ["add_arguments", "result_json", "run", "table_rows", "verdict", "verify_all"]

_KERNELS_HINT = "pip install 'attn-contracts[kernels]'"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("names", nargs="*", metavar="NAME", help="records to verify")
    p.add_argument("--all", action="store_true", help="every record (with --file: of the files)")
    p.add_argument("--file", action="append", default=[], metavar="F",
                   help="verify records from this TOML/JSON file instead of the catalog")
    p.add_argument("--device", default="cpu", type=_device, help="cpu, cuda or cuda:N")
    p.add_argument("--skip-unavailable", action="store_true",
                   help="skip what cannot run here (no torch, a missing library, a --device that "
                        "is not there) instead of exiting 2")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument("--update", metavar="F", type=Path,
                   help="write the observed facts and today's date into this JSON records file")
    p.add_argument("--consumer", action="store_true",
                   help="verify consumer records (combine functions) instead of producers")
    p.add_argument("--adapter", metavar="MODULE:ATTR",
                   help="with --consumer: run the named consumers through this adapter")
    p.add_argument("--allow-adapter", action="append", default=[], metavar="MODULE",
                   help="allow adapters named by records in this module (or package); repeatable")
    p.add_argument("--probe-limits", action=argparse.BooleanOptionalAction, default=None,
                   help="with --consumer: run the launch-limit probe (default: CUDA functions)")


def _device(text: str) -> str:
    if not re.fullmatch(r"cpu|cuda(:\d+)?", text):
        raise argparse.ArgumentTypeError(f"expected cpu, cuda or cuda:N, found {text!r}")
    return text


# --- which records ------------------------------------------------------------------------------
def _pool(args: argparse.Namespace) -> tuple[list[AnyRecord], list[Finding]]:
    """The records of ``--file``, else the catalog (and, for consumers, the project's plans)."""
    if args.file:
        pool: list[AnyRecord] = []
        bad: list[Finding] = []
        for f in args.file:
            recs, found = read_file(f)
            pool += recs
            bad += found
        return pool, bad
    if not args.consumer:
        return list(Registry().records()), []
    try:
        from attn_contracts.backends.plan_consumers import plan_consumer_records
    except ImportError as err:  # the plans' records need torch; the catalog's do not
        if not args.skip_unavailable:
            raise UsageError(f"needs torch, {_KERNELS_HINT} ({err}) (--skip-unavailable skips "
                             "every record instead)") from err
        return list(Registry().consumers()), []
    return [*Registry().consumers(), *plan_consumer_records()], []


def _select(args: argparse.Namespace) -> tuple[list[AnyRecord], list[Finding]]:
    """The records of the wanted role that the names pick: the exact name, else every call-mode
    variant of it (``NAME+...``); an unknown name is ``AC013`` (exit 2)."""
    kind = ConsumerRecord if args.consumer else CapabilityRecord
    everything, bad = _pool(args)
    pool = [r for r in everything if isinstance(r, kind)]
    if args.all or (args.file and not args.names):  # --file alone: the records of the files
        return pool, bad
    chosen: list[AnyRecord] = []
    missing = []
    for name in args.names:
        hits = ([r for r in pool if r.name == name]
                or [r for r in pool if r.name.startswith(name + "+")])
        missing += [] if hits else [name]
        chosen += [r for r in hits if r not in chosen]
    if missing:
        _refuse_unknown(missing, pool, bad, "consumer record" if args.consumer else "record")
    return chosen, bad


def _refuse_unknown(missing: list[str], pool: list[AnyRecord], bad: list[Finding],
                    what: str) -> NoReturn:
    """``AC013`` for the names no record of the pool has (exit 2), with the findings of the
    records that failed to load, if any."""
    known = ", ".join(sorted(r.name for r in pool)) or "(none)"
    unknown = Finding(Code.AC013, missing[0], f"unknown {what}(s) {', '.join(missing)}; "
                      f"known: {known}", found=missing[0], allowed=known)
    if bad:  # a record that failed to load may be the one named: its error is the answer
        raise ContractError([*bad, unknown], f"the {what}s named could not all be read")
    raise UnknownRecordError([unknown], f"unknown {what}")


# --- running ------------------------------------------------------------------------------------
def _unavailable(args: argparse.Namespace, records: list[AnyRecord],
                 reason: str) -> list[VerifyResult[Any]]:
    """Something every run needs is not there: exit 2, or a skip of every record if asked."""
    if not args.skip_unavailable:
        raise UsageError(f"{reason} (--skip-unavailable skips every record instead)")
    return [VerifyResult(r.name, "skipped", f"skipped: {reason}", unavailable=True)
            for r in records]


def _results(args: argparse.Namespace, records: list[AnyRecord]) -> list[VerifyResult[Any]]:
    try:  # torch only now: a missing kernels extra is a usage error with the hint
        from attn_contracts.backends.adapter import device_unavailable
        from attn_contracts.backends.runner import verify_consumer
        from attn_contracts.backends.runner import verify_record
    except ImportError as err:
        return _unavailable(args, records, f"needs torch, {_KERNELS_HINT} ({err})")
    missing = device_unavailable(args.device)
    if missing:
        return _unavailable(args, records, f"--device {args.device}: {missing}")
    # The trust boundary is the library's (backends.runner.trusted): a records file is data, so
    # its adapters run only from the built-in modules and those named by --allow-adapter; the
    # user's own --adapter runs.
    allow = args.allow_adapter
    results: list[VerifyResult[Any]] = [
        verify_consumer(r, args.adapter, device=args.device, seed=args.seed,
                        probe_limits=args.probe_limits, allow_adapters=allow)
        if isinstance(r, ConsumerRecord) else
        verify_record(r, device=args.device, seed=args.seed, allow_adapters=allow)
        for r in records]
    gone = next((r for r in results if r.unavailable), None)
    if gone is not None and not args.skip_unavailable:
        raise UsageError(f"{gone.name}: {gone.reason.removeprefix('skipped: ')}, so it was not "
                         "verified (install it, or --skip-unavailable skips such records)")
    return results


def verify_all(args: argparse.Namespace) -> tuple[list[AnyRecord], dict[str, str | None],
                                                  list[VerifyResult[Any]], list[Finding]]:
    """Select, run (through the library's trust boundary), collect the findings; the CLI and
    the H200 script share this. Also: each record's adapter path, for reports."""
    if not args.names and not args.all and not args.file:
        what = "consumer records" if args.consumer else "records"
        raise UsageError(f"name {what}, pass --all, or pass --file F")
    records, bad = _select(args)
    results = _results(args, records)
    paths = {r.name: (args.adapter or _adapter_path(r)) for r in records}
    return records, paths, results, bad + [f for r in results for f in r.findings]


def _adapter_path(record: AnyRecord) -> str | None:
    if isinstance(record, ConsumerRecord):
        try:
            from attn_contracts.backends.adapter import adapter_path_for
        except ImportError:
            return record.adapter
        path: str | None = adapter_path_for(record)
        return path
    return record.adapter


# --- output -------------------------------------------------------------------------------------
def _jsonable(x: Any) -> Any:
    """JSON (RFC 8259) has no inf/NaN: non-finite floats become strings."""
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    if isinstance(x, dict):
        return {k: _jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    return x


def result_json(r: VerifyResult[Any], adapter: str | None) -> dict[str, Any]:
    doc: dict[str, Any] = _jsonable({
        "name": r.name, "status": r.status, "reason": r.reason, "adapter": adapter,
        "declared": r.declared, "observed": asdict(r.observed) if r.observed else None,
        "notes": r.notes, "seconds": r.seconds, "findings": [f.to_json() for f in r.findings]})
    return doc


def verdict(r: VerifyResult[Any]) -> str:
    if r.status == "skipped":
        return r.reason
    if r.status == "match":
        return "ok" + (f" ({len(r.notes)} note(s))" if r.notes else "")
    return "DIFFERS: " + ", ".join(dict.fromkeys(f.field for f in r.findings))


def table_rows(results: list[VerifyResult[Any]],
               records: dict[str, AnyRecord]) -> list[list[str]]:
    rows = []
    for r in results:
        rec = records[r.name]
        if isinstance(rec, ConsumerRecord):
            rows.append([r.name, describe_consumer(r.declared or None, rec),
                         describe_consumer(r.observed), verdict(r)])
        else:
            rows.append([r.name, describe(r.declared or None), describe(r.observed), verdict(r)])
    return rows


def _print_text(args: argparse.Namespace, results: list[VerifyResult[Any]],
                records: dict[str, AnyRecord], findings: list[Finding]) -> None:
    title = "verify --consumer" if args.consumer else "verify"
    print_table(f"{title} on {args.device}", ["consumer" if args.consumer else "record",
                                              "declared", "observed", "verdict"],
                table_rows(results, records))
    for f in findings:
        print(f.render())
    for r in results:
        for note in r.notes:
            print(f"note {r.name}: {note}")
    ran = sum(r.observed is not None for r in results)  # an adapter that never ran verified nothing
    skipped = sum(r.status == "skipped" for r in results)
    failed = len(results) - ran - skipped
    print(f"{ran} verified, {skipped} skipped, " + (f"{failed} could not run, " if failed else "")
          + f"{len(findings)} finding(s)")


def _update_file(path: Path, results: list[VerifyResult[Any]],
                 records: dict[str, AnyRecord], device: str) -> int:
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
        e = o.empty
        # only a documented zero-length request read in the caller's buffer makes a promise
        if e is not None and e.documented and e.buffer_honoured and \
                e.out in ("zero", "nan", "undefined"):
            data["lse"]["empty_out"] = e.out
        data.update(evidence="measured", verified=stamp)
        out.append(data)
    try:
        path.write_text(json.dumps(out, indent=2, allow_nan=False) + "\n")
    except OSError as err:
        raise UsageError(f"cannot write {path}: {err.strerror or err}") from err
    return len(out)


def run(args: argparse.Namespace) -> int:
    if args.consumer and args.update:
        raise UsageError("--update writes producer records; it does not take --consumer")
    if args.adapter and not args.consumer:
        raise UsageError("--adapter runs consumers; pass --consumer")
    records, paths, results, findings = verify_all(args)
    by_name = {r.name: r for r in records}
    if args.format == "json":
        print(json.dumps({"ok": not findings, "results": [result_json(r, paths[r.name])
                                                          for r in results],
                          "findings": [f.to_json() for f in findings]},
                         indent=2, allow_nan=False))
    else:
        _print_text(args, results, by_name, findings)
    if args.update:
        n = _update_file(args.update, results, by_name, args.device)
        print(f"wrote {n} record(s) to {args.update}")
    return EXIT_FINDINGS if findings else EXIT_OK
