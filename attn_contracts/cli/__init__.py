"""``attn-contracts``: list, show, validate, schema, matrix, plan, verify, lint, engine and demo.

Exit codes (stable, documented in the README):
  0  clean
  1  findings (a broken contract, a verify mismatch, lint problems)
  2  usage or I/O error (bad arguments, a missing or malformed file)

The CLI is the composition root: the only part of the contract package that reaches the combine
and the backends, and only inside the commands that need them (``plan``, ``verify``, ``demo``).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from collections.abc import Sequence
from typing import NoReturn

from attn_contracts import __version__
from attn_contracts import integrations
from attn_contracts import lint
from attn_contracts.cli import catalog
from attn_contracts.cli import engine
from attn_contracts.cli import plan
from attn_contracts.cli import validate
from attn_contracts.cli import verify
from attn_contracts.cli._output import EXIT_FINDINGS
from attn_contracts.cli._output import EXIT_OK
from attn_contracts.cli._output import EXIT_USAGE
from attn_contracts.cli._output import UsageError
from attn_contracts.cli._setting import non_negative
from attn_contracts.cli._setting import positive
from attn_contracts.cli._setting import positive_float
from attn_contracts.findings import ContractError
from attn_contracts.findings import RulesError
from attn_contracts.findings import check_rules
from attn_contracts.findings import printable
from attn_contracts.registry import UnknownRecordError
from attn_contracts.sources import FileReadError

__all__ = ["main"]

Handler = Callable[[argparse.Namespace], int]


class _Parser(argparse.ArgumentParser):
    """Usage errors as one line on stderr (exit 2), like every other usage error of the CLI; the
    full usage is one ``--help`` away."""

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_USAGE, printable(f"{self.prog}: error: {message} (see {self.prog} --help)")
                  + "\n")


#: most ranks the demo starts: its head count (``demo.HEADS``), so each rank combines a head at
#: least; every rank is a process on this machine, so a huge N would try that many spawns
DEMO_MAX_RANKS = 24


def _demo_world_size(text: str) -> int:
    n = positive(text)
    if n > DEMO_MAX_RANKS:
        raise argparse.ArgumentTypeError(f"expected at most {DEMO_MAX_RANKS} ranks (the demo's "
                                         f"head count; each rank is a process here), found {n}")
    return n


def _add_demo_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("what", choices=["dcp"])
    p.add_argument("--world-size", type=_demo_world_size, default=4, metavar="N")
    p.add_argument("--interleave", type=non_negative, default=1, metavar="K",
                   help="deal the KV cache in blocks of K keys round-robin; 0: contiguous shards")
    p.add_argument("--wrong-base", action="store_true",
                   help="also merge with the opposite base, then show validate_startup refuse it")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--repeats", type=positive, default=5, help="timed calls per mode (median)")
    p.add_argument("--timeout", type=positive_float, default=300.0,
                   help="seconds for the whole run")


def _run_demo(args: argparse.Namespace) -> int:
    try:
        from attn_contracts.cli.demo import run
    except ImportError as err:
        raise UsageError(
            f"needs the kernels extra (pip install 'attn-contracts[kernels]'): {err}") from err
    return int(run(args))


def _build_parser() -> tuple[argparse.ArgumentParser, dict[str, Handler]]:
    parser = _Parser(prog="attn-contracts", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    handlers: dict[str, Handler] = {}

    def command(name: str, help_text: str, handler: Handler,
                arguments: Callable[[argparse.ArgumentParser], object] | None = None) -> None:
        p = sub.add_parser(name, help=help_text)
        if arguments is not None:
            arguments(p)
        handlers[name] = handler

    command("list", "table of the built-in records", catalog.run_list)
    command("show", "one record as JSON (accepted back by validate --file)", catalog.run_show,
            lambda p: p.add_argument("name"))
    command("schema", "JSON schema of a record (--role consumer: of a consumer record)",
            catalog.run_schema, lambda p: p.add_argument(
                "--role", choices=["producer", "consumer"], default="producer"))
    command("matrix", "feature matrix of the records", catalog.run_matrix,
            lambda p: p.add_argument("--format", choices=["md", "json"], default="md"))
    command("validate", "check records (catalog, files, plugins) and a DCP setup", validate.run,
            validate.add_arguments)
    command("plan", "print the combine variant a record gets, and why", plan.run,
            plan.add_arguments)
    command("demo", "DCP on CPU ranks: every combine mode vs full attention", _run_demo,
            _add_demo_arguments)
    command("verify", "run kernels and check what they return against records", verify.run,
            verify.add_arguments)
    command("lint", "statically check backend and engine code for broken contracts",
            lambda args: lint.run(args, engine_rules=integrations.lint_rules()),
            lint.add_arguments)
    command("engine", "an engine's attention backends: declared flags, records, edges, verdict",
            engine.run, engine.add_arguments)
    return parser, handlers


def main(argv: Sequence[str] | None = None) -> int:
    try:  # a broken installation first, the same for every command
        check_rules()
    except RulesError as err:
        print(printable(f"attn-contracts: {err}"), file=sys.stderr)
        return EXIT_USAGE
    parser, handlers = _build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse exits 2 on usage errors, 0 on --help and --version
        return int(exc.code or 0)
    return _dispatch(handlers, args)


def _dispatch(handlers: dict[str, Handler], args: argparse.Namespace) -> int:
    try:
        return handlers[args.command](args)
    except BrokenPipeError:  # `attn-contracts schema | head`: the reader left early, not an error
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except (FileReadError, RulesError) as err:  # RulesError: shipped data read on first use
        print(printable(f"attn-contracts: {err}"), file=sys.stderr)
        return EXIT_USAGE
    except UsageError as err:
        print(printable(f"attn-contracts {args.command}: {err}"), file=sys.stderr)
        return EXIT_USAGE
    except UnknownRecordError as err:
        first = err.findings[0]  # one line: the first unknown name and the known ones
        print(printable(f"attn-contracts {args.command}: {first.code} {first.message}"),
              file=sys.stderr)
        return EXIT_USAGE
    except ContractError as err:
        print(err, file=sys.stderr)
        return EXIT_FINDINGS


if __name__ == "__main__":
    sys.exit(main())
