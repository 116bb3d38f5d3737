"""``validate``: every check over the catalog, files and plugins, and a DCP setup."""

from __future__ import annotations

import argparse

from attn_contracts.checks import check_backend_known, check_dcp, check_unique
from attn_contracts.cli._output import UsageError, print_findings
from attn_contracts.findings import Finding
from attn_contracts.registry import Registry
from attn_contracts.sources import read_file

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--file", action="append", default=[], metavar="F", help="TOML/JSON records")
    plugins = p.add_mutually_exclusive_group()
    plugins.add_argument("--plugins", nargs="+", metavar="NAME", help="entry points to load")
    plugins.add_argument("--all-plugins", action="store_true", help="load every entry point")
    p.add_argument("--backend", metavar="NAME", help="the record the engine will run")
    p.add_argument("--dcp", type=int, default=1, metavar="N", help="DCP world size")
    p.add_argument("--no-builtin", action="store_true", help="leave the built-in catalog out")
    p.add_argument("--format", choices=["text", "json"], default="text")


def run(args: argparse.Namespace) -> int:
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
        raise UsageError("--dcp needs --backend NAME (the backend the engine will run)")
    n = len(set(records))
    return print_findings(findings, args.format, ok_message=f"ok: {n} record(s), no problems")
