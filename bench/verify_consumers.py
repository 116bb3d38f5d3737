"""``verify --consumer`` as a results file: the table in Markdown, with its command and environment,
and the full JSON beside it.

On the GPU machine (FlashInfer's merges, the project's plans, the launch-limit probe)::

    python3 bench/verify_consumers.py --device cuda --out $OUT/verify-consumers-h200.md \\
        flashinfer.merge_state flashinfer.merge_state_in_place flashinfer.merge_states \\
        attn_contracts.plan.merge

Exit code as the CLI's: 0 clean, 1 findings, 2 usage. The same flags as ``attn-contracts verify
--consumer`` (``--file``, ``--allow-adapter``, ``--probe-limits``).
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import sys
from pathlib import Path

from attn_contracts.cli import verify as verify_cli
from attn_contracts.cli._output import UsageError
from attn_contracts.cli.verify import result_json
from attn_contracts.cli.verify import table_rows
from attn_contracts.cli.verify import verify_all


def _environment(device: str) -> str:
    import torch

    parts = [f"python {platform.python_version()}", f"torch {torch.__version__}"]
    for mod in ("triton", "flashinfer"):
        try:
            parts.append(f"{mod} {__import__(mod).__version__}")
        except Exception:  # an optional library: absent is a fact, not an error
            parts.append(f"{mod} not installed")
    if device.startswith("cuda") and torch.cuda.is_available():
        parts.append(torch.cuda.get_device_name(torch.device(device)))
    return ", ".join(parts)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    verify_cli.add_arguments(p)
    p.add_argument("--out", type=Path, required=True, help="the Markdown file (JSON beside it)")
    args = p.parse_args(argv)
    args.consumer = True
    try:
        records, paths, results, findings = verify_all(args)
    except UsageError as err:
        print(f"verify_consumers: {err}", file=sys.stderr)
        return 2
    by_name = {r.name: r for r in records}
    command = "python3 bench/verify_consumers.py " + shlex.join(argv or sys.argv[1:])
    lines = ["# `attn-contracts verify --consumer`", "", f"Command: `{command}`", "",
             f"Environment: {_environment(args.device)}", "",
             "| consumer | declared | observed | verdict |", "|---|---|---|---|"]
    lines += ["| " + " | ".join(_cell(c) for c in row) + " |"
              for row in table_rows(results, by_name)]
    lines += ["", f"{sum(r.status != 'skipped' for r in results)} verified, "
              f"{sum(r.status == 'skipped' for r in results)} skipped, "
              f"{len(findings)} finding(s)", ""]
    lines += [f"- {f.render()}" for f in findings]
    lines += [f"- note {r.name}: {n}" for r in results for n in r.notes]
    for r in results:
        limit = r.observed.limit if r.observed else None
        if limit is not None:
            lines.append(f"- launch probe {r.name}: {limit.dtype} head_dim {limit.head_dim}, "
                         f"max ok {limit.max_ok} heads, first failure {limit.min_failed} "
                         f"({limit.launches} launches) {limit.detail}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    args.out.with_suffix(".json").write_text(json.dumps(
        {"ok": not findings, "command": command, "environment": _environment(args.device),
         "results": [result_json(r, paths[r.name]) for r in results]}, indent=2) + "\n")
    print("\n".join(lines))
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
