"""``validate``: every check over the catalog, files and plugins, a DCP setup and its edges.

The checks are :func:`attn_contracts.startup.check_startup`'s, the same sequence an engine runs.
"""

from __future__ import annotations

import argparse

from attn_contracts.cli._output import UsageError, print_findings
from attn_contracts.cli._setting import add_setting_arguments, setting_from_args
from attn_contracts.findings import Code, Finding
from attn_contracts.registry import Registry, UnknownRecordError
from attn_contracts.setting import CombineSetting
from attn_contracts.sources import AnyRecord, read_file
from attn_contracts.startup import ConsumerUse, check_startup

__all__ = ["add_arguments", "run"]


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--file", action="append", default=[], metavar="F", help="TOML/JSON records")
    plugins = p.add_mutually_exclusive_group()
    plugins.add_argument("--plugins", nargs="+", metavar="NAME", help="entry points to load")
    plugins.add_argument("--all-plugins", action="store_true", help="load every entry point")
    p.add_argument("--backend", metavar="NAME", help="the record the engine will run")
    p.add_argument("--consumer", action="append", default=[], metavar="NAME[=LITERAL]",
                   help="a combine function the backend's LSE feeds (repeatable); =LITERAL is "
                        "the value passed for its base keyword (e.g. =False)")
    p.add_argument("--no-builtin", action="store_true", help="leave the built-in catalog out")
    p.add_argument("--format", choices=["text", "json"], default="text")
    add_setting_arguments(p, world_size_default=None)


def _consumers(specs: list[str]) -> list[ConsumerUse]:
    uses: list[ConsumerUse] = []
    for spec in specs:
        name, sep, literal = spec.partition("=")
        uses.append((name, literal) if sep else name)
    return uses


def _setting(args: argparse.Namespace) -> CombineSetting | None:
    if args.num_heads is None and args.head_dim is None:
        return None  # no combine to plan: world size alone (AC006) and the edges' base/layout
    return setting_from_args(args)


def run(args: argparse.Namespace) -> int:
    if not args.backend and (args.world_size or 1) > 1:
        raise UsageError("--world-size needs --backend NAME (the backend the engine will run)")
    if args.consumer and not args.backend:
        raise UsageError("--consumer needs --backend NAME (the producer of the edge)")
    registry = Registry(builtin=not args.no_builtin)
    findings: list[Finding] = []
    if args.all_plugins or args.plugins:
        findings += registry.load_plugins(None if args.all_plugins else args.plugins)
    records: list[AnyRecord] = [*registry.records(), *registry.consumers()]
    for path in args.file:
        recs, found = read_file(path)  # FileReadError → exit 2 in main()
        records += recs
        findings += found
    _, seen, found = check_startup(records, backend=args.backend, setting=_setting(args),
                                   world_size=args.world_size,
                                   consumers=_consumers(args.consumer), load_findings=findings,
                                   builtin_consumers=not args.no_builtin)
    unknown = [f for f in found if f.code is Code.AC013]
    if unknown:  # a name given on the command line: a usage error, as in show, plan and verify
        raise UnknownRecordError(unknown, "unknown name")
    return print_findings(found, args.format,
                          ok_message=f"ok: {len(set(seen))} record(s), no problems")
