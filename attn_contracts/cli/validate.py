"""``validate``: every check over the catalog, files and plugins, a DCP setup and its edges.

The checks are :func:`attn_contracts.startup.check_startup`'s, the same sequence an engine runs.
"""

from __future__ import annotations

import argparse
import ast

from attn_contracts.checks import call_keys
from attn_contracts.cli._output import UsageError
from attn_contracts.cli._output import print_findings
from attn_contracts.cli._setting import add_setting_arguments
from attn_contracts.cli._setting import setting_from_args
from attn_contracts.findings import Code
from attn_contracts.findings import Finding
from attn_contracts.records import CapabilityRecord
from attn_contracts.registry import Registry
from attn_contracts.registry import UnknownRecordError
from attn_contracts.setting import CombineSetting
from attn_contracts.sources import AnyRecord
from attn_contracts.sources import read_file
from attn_contracts.startup import ConsumerUse
from attn_contracts.startup import check_startup

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
    p.add_argument("--call", action="append", type=_call_argument, default=None,
                   metavar="KEY=VALUE", help="a keyword argument the engine passes the backend's "
                   "kernel (repeatable; VALUE is a Python literal such as None, True, 'basee', or "
                   "else plain text: --call backend=cute-dsl); a record whose base the call "
                   "chooses needs it (AC028)")
    p.add_argument("--no-builtin", action="store_true", help="leave the built-in catalog out")
    p.add_argument("--format", choices=["text", "json"], default="text")
    add_setting_arguments(p, world_size_default=None)


def _call_argument(text: str) -> tuple[str, object]:
    """``KEY=VALUE`` → ``(KEY, value)``: VALUE as a Python literal, else as the text itself."""
    key, sep, value = text.partition("=")
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE with KEY a Python identifier, "
                                         f"found {text!r}")
    try:
        return key, ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return key, value


def _consumers(specs: list[str]) -> list[ConsumerUse]:
    uses: list[ConsumerUse] = []
    for spec in specs:
        name, sep, literal = spec.partition("=")
        uses.append((name, literal) if sep else name)
    return uses


#: flags that only a full combine setting reads, with their defaults
_SETTING_ONLY = {"mode": "merge", "out_dtype": "bfloat16", "return_lse": False,
                 "lse_out_base": None, "sink": False, "row_mask": False}


def _setting(args: argparse.Namespace) -> CombineSetting | None:
    if args.num_heads is None and args.head_dim is None:
        # no combine to plan: world size alone (AC006) and the edges' base/layout. A setting
        # flag given here would be checked by nothing, and "ok" would claim it was
        given = [f"--{k.replace('_', '-')}" for k, v in _SETTING_ONLY.items()
                 if getattr(args, k) != v]
        if given:
            raise UsageError(f"{', '.join(given)} describe(s) a combine setting, which also "
                             "needs --world-size, --num-heads and --head-dim")
        return None
    return setting_from_args(args)


def run(args: argparse.Namespace) -> int:
    _check_backend_given(args)
    records, findings = _records(args)
    named = [r for r in records if isinstance(r, CapabilityRecord) and r.name == args.backend]
    call = _call(args.call, named) if args.call else None
    _, seen, found = check_startup(records, backend=args.backend, setting=_setting(args),
                                   world_size=args.world_size,
                                   consumers=_consumers(args.consumer), load_findings=findings,
                                   producer_call=call,
                                   builtin_consumers=not args.no_builtin)
    unknown = [f for f in found if f.code is Code.AC013]
    # a name given on the command line is a usage error, as in show, plan and verify; unless a
    # record failed to load: the unknown name may be that record's, and its error is the answer
    if unknown and not any(f.code in _LOAD_CODES for f in found):
        raise UnknownRecordError(unknown, "unknown name")
    return print_findings(found, args.format,
                          ok_message=f"ok: {len(set(seen))} record(s), no problems")


def _check_backend_given(args: argparse.Namespace) -> None:
    """The options that describe the chosen backend's use need ``--backend``."""
    if not args.backend and (args.world_size or 1) > 1:
        raise UsageError("--world-size needs --backend NAME (the backend the engine will run)")
    if args.consumer and not args.backend:
        raise UsageError("--consumer needs --backend NAME (the producer of the edge)")
    if args.call and not args.backend:
        raise UsageError("--call needs --backend NAME (the record of the kernel called)")


def _records(args: argparse.Namespace) -> tuple[list[AnyRecord], list[Finding]]:
    """The records to check (built-in unless ``--no-builtin``, plugins, ``FILE``s) and the
    findings of loading them."""
    registry = Registry(builtin=not args.no_builtin)
    findings: list[Finding] = []
    if args.all_plugins or args.plugins:
        findings += registry.load_plugins(None if args.all_plugins else args.plugins)
    records: list[AnyRecord] = [*registry.records(), *registry.consumers()]
    for path in args.file:
        recs, found = read_file(path)  # FileReadError → exit 2 in main()
        records += recs
        findings += found
    return records, findings


#: findings of a record that could not be read or built (a file, its schema, a plugin)
_LOAD_CODES = frozenset({Code.AC000, Code.AC012, Code.AC014})


def _call(pairs: list[tuple[str, object]], named: list[CapabilityRecord]) -> dict[str, object]:
    """The ``--call`` pairs as one call; a key given twice, or one the call of the record named
    by ``--backend`` does not read, is a usage error naming the keys it reads (one would
    silently win, the other would be checked by nothing). No such record: the unknown name is
    the error, reported by the checks."""
    keys = sorted({k for r in named for k in call_keys(r)})
    name = named[0].name if named else "the backend"
    accepted = (f"{name}'s call reads: {', '.join(keys)}" if keys else
                f"{name}'s call reads no keyword: its base and layout are fixed")
    call: dict[str, object] = {}
    for key, value in pairs:
        if key in call:
            raise UsageError(f"--call {key} given twice ({call[key]!r}, {value!r}); give each key "
                             f"once ({accepted})")
        call[key] = value
    unknown = [k for k in call if k not in keys]
    if named and unknown:
        raise UsageError(f"--call: unknown key(s) {', '.join(unknown)} ({accepted})")
    return call
