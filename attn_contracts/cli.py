"""``attn-contracts``: list, show, validate, schema, matrix, plan, verify, lint and demo.

Exit codes (stable, documented in the README):
  0  clean
  1  findings (a broken contract, a verify mismatch, lint problems)
  2  usage or I/O error (bad arguments, a missing or malformed file)
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from attn_contracts import lint, verify
from attn_contracts.checks import check_backend_known, check_dcp, check_unique
from attn_contracts.findings import ContractError, Finding
from attn_contracts.records import CapabilityRecord, LseSpec
from attn_contracts.registry import Registry, UnknownRecordError
from attn_contracts.sources import FileReadError, read_file

__all__ = ["main"]

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def console() -> Any:
    """The rich console of every command: wide when piped, so CI logs are not folded."""
    from rich.console import Console

    return Console(width=None if sys.stdout.isatty() else 160, highlight=False)


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """One rich table on stdout; every CLI table goes through here."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for col in columns:
        table.add_column(col, overflow="fold")
    for row in rows:
        table.add_row(*(str(c) for c in row))
    console().print(table)


def print_findings(findings: Sequence[Finding], fmt: str, *, ok_message: str) -> int:
    """Print findings as text or JSON and return the exit code they imply."""
    if fmt == "json":
        print(json.dumps({"ok": not findings, "findings": [f.to_json() for f in findings]},
                         indent=2))
    elif findings:
        for f in findings:
            print(f.render())
        print(f"{len(findings)} problem(s)")
    else:
        print(ok_message)
    return EXIT_FINDINGS if findings else EXIT_OK


def _lse_cells(r: CapabilityRecord) -> list[str]:
    if isinstance(r.lse, LseSpec):
        layout = r.lse.layout + ("+q_len" if r.lse.q_len_axis else "")
        layout += f" (heads padded to {r.lse.padded_heads})" if r.lse.padded_heads else ""
        return ["yes", r.lse.base, layout, r.lse.dtype, r.lse.empty_row,
                "yes" if r.lse.includes_sink else "no"]
    return ["no", "-", "-", "-", "-", "-"]


# --- list / show / schema / matrix ----------------------------------------------------------------
def _cmd_list(args: argparse.Namespace) -> int:
    rows = [[r.name, r.library, *_lse_cells(r)[:5], r.evidence]
            for r in sorted(Registry().records(), key=lambda r: r.name)]
    print_table("attention kernel contracts", ["record", "library", "LSE", "base", "layout",
                                               "dtype", "empty row", "evidence"], rows)
    return EXIT_OK


def _cmd_show(args: argparse.Namespace) -> int:
    print(Registry().get(args.name).model_dump_json(indent=2))
    return EXIT_OK


def _cmd_schema(args: argparse.Namespace) -> int:
    print(json.dumps(CapabilityRecord.model_json_schema(), indent=2))
    return EXIT_OK


def matrix_rows(records: Sequence[CapabilityRecord]) -> list[list[str]]:
    rows = []
    for r in sorted(records, key=lambda r: r.name):
        cc = "-".join(c for c in (r.decode.min_compute_capability,
                                  r.decode.max_compute_capability) if c) or "any"
        rows.append([f"`{r.name}`", r.library, *_lse_cells(r), "yes" if r.supports_dcp else "no",
                     r.decode.attention.upper(), ", ".join(map(str, r.decode.head_dims)),
                     "yes" if r.decode.q_len_gt_1 else "no", cc, r.evidence.replace("_", " ")])
    return rows


MATRIX_COLUMNS = ["record", "library", "LSE", "base", "LSE layout", "LSE dtype", "empty row",
                  "sink in LSE", "DCP", "attention", "head dims", "q_len > 1", "compute cap.",
                  "evidence"]


def _cmd_matrix(args: argparse.Namespace) -> int:
    records = Registry().records()
    if args.format == "json":
        print(json.dumps([r.model_dump(mode="json") for r in records], indent=2))
        return EXIT_OK
    print("| " + " | ".join(MATRIX_COLUMNS) + " |")
    print("|" + "---|" * len(MATRIX_COLUMNS))
    for row in matrix_rows(records):
        print("| " + " | ".join(row) + " |")
    return EXIT_OK


# --- validate -------------------------------------------------------------------------------------
def _cmd_validate(args: argparse.Namespace) -> int:
    registry = Registry(builtin=not args.no_builtin)
    findings: list[Finding] = []
    if args.all_plugins or args.plugins:
        findings += registry.load_plugins(None if args.all_plugins else args.plugins)
    records = registry.records()
    for path in args.file:
        recs, found = read_file(path)  # FileReadError → exit 2 in main()
        records += recs
        findings += found
    findings += check_unique(records)
    if args.backend:
        by_name = {r.name: r for r in records}
        findings += check_backend_known(args.backend, by_name)
        if args.backend in by_name:
            findings += check_dcp(by_name[args.backend], args.dcp)
    elif args.dcp > 1:
        raise _UsageError("--dcp needs --backend NAME (the backend the engine will run)")
    n = len(set(records))
    return print_findings(findings, args.format, ok_message=f"ok: {n} record(s), no problems")


class _UsageError(Exception):
    pass


# --- plan -----------------------------------------------------------------------------------------
def _cmd_plan(args: argparse.Namespace) -> int:
    try:  # torch only now: every other command stays torch-free
        from attn_contracts.combine.dispatch import plan_combine
    except ImportError as err:
        raise _UsageError(
            f"needs the kernels extra (pip install 'attn-contracts[kernels]'): {err}") from err
    head_dim = args.head_dim or Registry().get(args.name).decode.head_dims[0]
    try:
        plan = plan_combine(args.name, mode=args.mode, world_size=args.world_size,
                            num_heads=args.num_heads, head_dim=head_dim,
                            out_dtype=args.out_dtype, return_lse=args.return_lse,
                            lse_out_base=args.lse_out_base)
    except ContractError as err:
        if isinstance(err, UnknownRecordError):
            raise
        return print_findings(err.findings, "text", ok_message="")
    except ValueError as err:
        raise _UsageError(str(err)) from err
    print(f"{plan.record.name}: {plan.mode} over {plan.world_size} rank(s), kernel {plan.kernel}, "
          f"{plan.local_heads} head(s) per launch")
    print(plan.explain())
    return EXIT_OK


# --- demo -----------------------------------------------------------------------------------------
def _cmd_demo(args: argparse.Namespace) -> int:
    try:
        from attn_contracts.combine.demo import run
    except ImportError as err:
        raise _UsageError(
            f"needs the kernels extra (pip install 'attn-contracts[kernels]'): {err}") from err
    return int(run(args))


# --- wiring ---------------------------------------------------------------------------------------
def _build_parser() -> tuple[argparse.ArgumentParser, dict[str, Callable[[argparse.Namespace], int]]]:
    parser = argparse.ArgumentParser(prog="attn-contracts", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    handlers: dict[str, Callable[[argparse.Namespace], int]] = {}

    sub.add_parser("list", help="table of the built-in records")
    handlers["list"] = _cmd_list
    p = sub.add_parser("show", help="one record as JSON (accepted back by validate --file)")
    p.add_argument("name")
    handlers["show"] = _cmd_show
    sub.add_parser("schema", help="JSON schema of a record")
    handlers["schema"] = _cmd_schema
    p = sub.add_parser("matrix", help="feature matrix of the records")
    p.add_argument("--format", choices=["md", "json"], default="md")
    handlers["matrix"] = _cmd_matrix

    p = sub.add_parser("validate", help="check records (catalog, files, plugins) and a DCP setup")
    p.add_argument("--file", action="append", default=[], metavar="F", help="TOML/JSON records")
    plugins = p.add_mutually_exclusive_group()
    plugins.add_argument("--plugins", nargs="+", metavar="NAME", help="entry points to load")
    plugins.add_argument("--all-plugins", action="store_true", help="load every entry point")
    p.add_argument("--backend", metavar="NAME", help="the record the engine will run")
    p.add_argument("--dcp", type=int, default=1, metavar="N", help="DCP world size")
    p.add_argument("--no-builtin", action="store_true", help="leave the built-in catalog out")
    p.add_argument("--format", choices=["text", "json"], default="text")
    handlers["validate"] = _cmd_validate

    p = sub.add_parser("plan", help="print the combine variant a record gets, and why")
    p.add_argument("name", help="record name")
    p.add_argument("--mode", choices=["merge", "ag_rs", "a2a", "ar"], default="merge")
    p.add_argument("--world-size", type=int, default=2, metavar="N")
    p.add_argument("--num-heads", type=int, default=128, metavar="H")
    p.add_argument("--head-dim", type=int, default=None, metavar="D",
                   help="default: the record's first head dim")
    p.add_argument("--out-dtype", choices=["bfloat16", "float16", "float32"], default="bfloat16")
    p.add_argument("--return-lse", action="store_true")
    p.add_argument("--lse-out-base", choices=["e", "2"], default=None)
    handlers["plan"] = _cmd_plan

    p = sub.add_parser("demo", help="DCP on CPU ranks: every combine mode vs full attention")
    p.add_argument("what", choices=["dcp"])
    p.add_argument("--world-size", type=int, default=4, metavar="N")
    p.add_argument("--interleave", type=int, default=1, metavar="K",
                   help="deal the KV cache in blocks of K keys round-robin; 0: contiguous shards")
    p.add_argument("--wrong-base", action="store_true",
                   help="also merge with the opposite base, then show validate_startup refuse it")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeats", type=int, default=5, help="timed calls per mode (median)")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds for the whole run")
    handlers["demo"] = _cmd_demo

    # verify and lint live in their own (torch-free) modules
    for name, module, help_text in (
            ("verify", verify, "run kernels and check what they return against records"),
            ("lint", lint, "statically check backend and engine code for broken contracts")):
        module.add_arguments(sub.add_parser(name, help=help_text))
        handlers[name] = module.run
    return parser, handlers


def main(argv: Sequence[str] | None = None) -> int:
    parser, handlers = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help
        return int(exc.code or 0)
    try:
        return handlers[args.command](args)
    except FileReadError as err:
        print(f"attn-contracts: {err}", file=sys.stderr)
        return EXIT_USAGE
    except _UsageError as err:
        print(f"attn-contracts {args.command}: {err}", file=sys.stderr)
        return EXIT_USAGE
    except UnknownRecordError as err:
        print(f"attn-contracts {args.command}: {err.findings[0].message}", file=sys.stderr)
        return EXIT_USAGE
    except ContractError as err:
        print(err, file=sys.stderr)
        return EXIT_FINDINGS


if __name__ == "__main__":
    sys.exit(main())
