"""Both facts of an empty row, for every producer record the verifier can run here: what a request
with ``seq_lens == 0`` leaves in the LSE and in the output (the output buffer filled with NaN,
then with a finite sentinel, and the CUDA caching allocator poisoned alike, so a row the kernel
never writes shows as ``undefined`` and one it writes NaN into as ``nan``).

    python3 bench/empty_rows.py --device cuda --out $OUT/empty-rows-h200.md    # the GPU machine
    python3 bench/empty_rows.py --device cpu --out /tmp/empty-rows-cpu.md      # the torch reference

Every FlashInfer record with an adapter and the torch reference by default, or the records named.
Exit code: 0 when every record ran clean, 1 when a record's verification found something (its
findings are in the table), 2 for a usage error.
"""

from __future__ import annotations

import argparse
import json
import platform
import shlex
import sys
from pathlib import Path
from typing import Any

from attn_contracts.backends.runner import verify_record
from attn_contracts.records import CapabilityRecord
from attn_contracts.records import LseSpec
from attn_contracts.registry import Registry
from attn_contracts.registry import UnknownRecordError


def _environment(device: str) -> str:
    import torch

    parts = [f"python {platform.python_version()}", f"torch {torch.__version__}"]
    try:
        import flashinfer

        parts.append(f"flashinfer {flashinfer.__version__}")
    except Exception:  # an optional library: absent is a fact, not an error
        parts.append("flashinfer not installed")
    if device.startswith("cuda") and torch.cuda.is_available():
        parts.append(torch.cuda.get_device_name(torch.device(device)))
    return ", ".join(parts)


def _records(names: list[str]) -> list[CapabilityRecord]:
    reg = Registry()
    if names:
        return [reg.get(n) for n in names]
    return [r for r in reg.records() if r.adapter and (r.library == "flashinfer"
                                                       or r.name == "torch.sdpa_ref")]


def _row(record: CapabilityRecord, device: str) -> dict[str, Any]:
    spec = record.lse
    declared = (f"{spec.empty_row} / {spec.empty_out or 'absent'}"
                if isinstance(spec, LseSpec) else "-")
    result = verify_record(record, device=device)
    e = result.observed.empty if result.observed is not None else None
    return {"record": record.name, "declared": declared, "status": result.status,
            "reason": result.reason,
            "lse": e.lse if e else "-", "out": e.out if e else "-",
            "buffer": ("-" if e is None or e.buffer_honoured is None else
                       "caller's" if e.buffer_honoured else "kernel's own"),
            "documented": "-" if e is None else ("yes" if e.documented else "no"),
            "detail": e.detail if e else "", "notes": result.notes,
            "findings": [f.render() for f in result.findings]}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("names", nargs="*", help="records (default: FlashInfer's and torch.sdpa_ref)")
    p.add_argument("--device", default="cuda")
    p.add_argument("--out", type=Path, required=True, help="the Markdown file (JSON beside it)")
    args = p.parse_args(argv)
    try:
        records = _records(args.names)
    except UnknownRecordError as err:
        print(f"empty_rows: {err}", file=sys.stderr)
        return 2
    rows = [_row(r, args.device) for r in records]
    command = "python3 bench/empty_rows.py " + shlex.join(argv or sys.argv[1:])
    lines = ["# Empty rows: the LSE's value and the output's, measured", "",
             f"Command: `{command}`", "", f"Environment: {_environment(args.device)}", "",
             "A batch of three requests whose middle one has `seq_lens == 0`. *lse*: what that "
             "request's LSE rows held (in the record's layout); *out*: its output rows — `zero` "
             "(written 0), `nan` (written NaN under both fills), `undefined` (the fill came back: "
             "never written), `raised` (the kernel refused the input). *buffer*: whether the "
             "kernel wrote into the caller's buffer or returned its own. *documented*: whether "
             "the kernel's contract takes a zero-length request; an undocumented one is reported, "
             "never written into a record as a promise.", "",
             "| record | declared (lse / out) | lse | out | buffer | documented | verdict |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        verdict = (r["reason"] if r["status"] == "skipped" else
                   "ok" if r["status"] == "match" else "DIFFERS: " + "; ".join(r["findings"]))
        lines.append(f"| `{r['record']}` | {r['declared']} | {r['lse']} | {r['out']} | "
                     f"{r['buffer']} | {r['documented']} | {verdict.replace('|', '/')} |")
    notes = [f"- `{r['record']}`: {n}" for r in rows for n in r["notes"]]
    text = "\n".join(lines + (["", "Notes:", "", *notes] if notes else [])) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    args.out.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n")
    print(text)
    return 1 if any(r["status"] == "differs" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
