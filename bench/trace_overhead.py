"""What the trace (``attn_contracts.trace()``) adds to each call it sees, on the CPU.

    python bench/trace_overhead.py [--calls 2000] [--rounds 5] [--threads 1] [--only TEXT]
                                   [--out FILE.md]

Rows: a wrapped producer and consumers whose own work is nothing (the wrapper's cost alone), the
project's ``merge`` with its launch replaced by a no-op (``bench/eager_host.py``'s way: the
eager fast path minus the driver call), torch calls the mode follows (a view of a tagged LSE, a
conversion), calls it only passes through (an untagged view, an add, an op called through the
dispatcher), and a decoder block's forward written in torch calls (a stand-in for a profile
run's forward: many torch calls, no LSE). Each cell: the fastest of 15 batches of about 2 ms
of calls (at most ``--calls / 15``) after 20 warm-up calls, rows interleaved; each round times
every row without a trace, under a mode that does nothing (what any ``TorchFunctionMode`` costs:
the floor of a trace built on one), then inside a trace; the table shows each condition's
fastest over ``--rounds`` rounds. Each row
also shows what the trace's own account (``Trace.accounted_ns``: what ``TraceReport.overhead_s``
and the vLLM log line report) gave for the same batch, and its ratio to the measured difference.
The last lines time a trace's start and stop with the built-in catalog (calibration, wrapping,
the ``functools.partial`` scan, restoring and the sweep), and the calibrated per-call costs.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

import attn_contracts
from attn_contracts.combine import launches
from attn_contracts.combine import merge
from attn_contracts.registry import Registry
from attn_contracts.sources import parse_record

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _timing, also under PYTHONSAFEPATH=1
from _timing import now_ns
from _timing import now_s

LN2 = math.log(2.0)
T, H, D = 4, 8, 64
_OUT = torch.randn(T, H, D)
_LSE = torch.randn(T, H)


def noop_producer(q: torch.Tensor, *, return_lse: bool = False) -> Any:
    """A producer whose kernel is free: the traced call is the wrapper alone."""
    return (_OUT, _LSE) if return_lse else _OUT


def noop_consumer(o: torch.Tensor, lse: torch.Tensor) -> torch.Tensor:
    return o


def noop_keyword_consumer(o: torch.Tensor, lse: torch.Tensor, *,
                          is_lse_base_on_e: bool = True) -> torch.Tensor:
    return o


def _records() -> Registry:
    here = __name__
    common = {"library": "torch", "source": "bench/trace_overhead.py",
              "evidence": "read_from_code"}
    consumer = {**common, "role": "consumer", "lse": {
        "layouts": ["token_head"], "states": "first", "dtypes": ["float32"]},
        "empty": {"reads_as_empty": ["-inf"], "all_empty": "zero",
                  "zero_weight_nan_safe": True}, "output": {"returns_lse": False}}
    raws = [
        {**common, "name": "bench.noop_producer",
         "lse": {"returns": "lse", "base": "2", "layout": "token_head", "dtype": "float32",
                 "empty_row": "-inf", "includes_sink": False},
         "decode": {"attention": "mha", "out_layout": "token_head_dim", "head_dims": [D],
                    "q_dtypes": ["float32"], "q_len_gt_1": True},
         "calls": [{"function": f"{here}.noop_producer", "when": {"return_lse": "True"}}]},
        {**consumer, "name": "bench.noop_consumer", "base": {"kind": "fixed", "base": "2"},
         "calls": [{"function": f"{here}.noop_consumer", "lse_args": ["lse", "1"]}]},
        {**consumer, "name": "bench.noop_keyword_consumer", "base": {
            "kind": "keyword", "keyword": "is_lse_base_on_e",
            "values": {"True": "e", "False": "2"}, "default": "True"},
         "calls": [{"function": f"{here}.noop_keyword_consumer", "lse_args": ["lse", "1"]}]},
    ]
    reg = Registry()  # the built-in catalog too: the project's merge is one of its consumers
    for raw in raws:
        reg.add(parse_record(raw)[0][0])
    return reg


class _NoLaunch:
    def __call__(self, *tensors: torch.Tensor | int) -> None:
        return None


def _no_launch(*args: Any) -> _NoLaunch:
    return _NoLaunch()


def rows(module: Any) -> dict[str, Callable[[], object]]:
    """The calls, looked up through ``module`` at call time (so a trace's wrapper is what runs)."""
    q = torch.randn(T, H, D)
    x, y = torch.randn(T, H), torch.randn(T, H)
    lse_n = torch.randn(2, T, H)
    o_n = torch.randn(2, T, H, D)
    out, z = torch.empty(T, H, D), torch.empty(T, H)
    seq = torch.randn(32, 128)
    w_qkv, w_o = torch.randn(128, 384) * 0.05, torch.randn(128, 128) * 0.05
    w_up, w_down = torch.randn(128, 256) * 0.05, torch.randn(256, 128) * 0.05
    add = torch.ops.aten.add.Tensor

    def forward() -> object:
        """One decoder block in plain torch calls, as a model's forward makes them (norms,
        projections, views, attention, MLP): what the mode intercepts in a profile run. A
        module with a fused fast path is no stand-in: an active mode makes torch's own
        ``has_torch_function`` checks true, and ``nn.TransformerEncoderLayer`` then takes its
        slow path."""
        h = torch.nn.functional.rms_norm(seq, (128,))
        q, k_, v = (h @ w_qkv).view(32, 3, 4, 32).unbind(1)  # [T, heads, d] each
        a = torch.nn.functional.scaled_dot_product_attention(
            q.transpose(0, 1), k_.transpose(0, 1), v.transpose(0, 1), is_causal=True)
        x = seq + a.transpose(0, 1).reshape(32, 128) @ w_o
        h = torch.nn.functional.rms_norm(x, (128,))
        return x + torch.nn.functional.silu(h @ w_up) @ w_down

    return {
        "producer call (wrapped, kernel free)": lambda: module.noop_producer(q, return_lse=True),
        "consumer call, fixed base (wrapped, kernel free)":
            lambda: module.noop_consumer(o_n, module._LSE),
        "consumer call, keyword base (wrapped, kernel free)":
            lambda: module.noop_keyword_consumer(o_n, module._LSE, is_lse_base_on_e=False),
        "merge(o, lse, base=, out=, lse_out=) (catalog consumer, no-op launch)":
            lambda: merge(o_n, lse_n, base="2", out=out, lse_out=z),
        "lse.transpose(0, 1) of a tagged LSE (followed)": lambda: module._LSE.transpose(0, 1),
        "lse * ln 2 of a tagged LSE (a conversion)": lambda: module._LSE * LN2,
        "x.transpose(0, 1), untagged (passed through)": lambda: x.transpose(0, 1),
        "x + y (not a followed op)": lambda: x + y,
        "torch.ops.aten.add.Tensor(x, y) (an op through the dispatcher)": lambda: add(x, y),
        "a decoder block's forward in torch calls (no LSE in it)": forward,
    }


def _medians(fns: dict[str, Callable[[], object]], n_calls: int,
             trace: Any = None) -> tuple[dict[str, float], dict[str, float]]:
    """µs per call of each row: the fastest of 15 short batches (each about 2 ms of calls, at
    most ``n_calls // 15``; on a loaded machine a short batch is the likeliest to run
    undisturbed, and the fastest is the one the neighbours disturbed least), rows interleaved;
    and, inside a trace, what the trace's own account (``Trace.accounted_ns``, what its report
    and the vLLM log line say) gave for that same batch."""
    clock = now_ns
    sizes: dict[str, int] = {}
    for name, fn in fns.items():  # warm up, and size each row's batch
        t0 = clock()
        for _ in range(20):
            fn()
        per_call = max(1, (clock() - t0) // 20)
        sizes[name] = max(1, min(n_calls // 15, int(2e6 // per_call)))
    best: dict[str, float] = {name: math.inf for name in fns}
    account: dict[str, float] = {name: 0.0 for name in fns}
    for _ in range(15):
        for name, fn in fns.items():
            batch = sizes[name]
            a0 = trace.accounted_ns() if trace is not None else 0.0
            t0 = clock()
            for _ in range(batch):
                fn()
            us = (clock() - t0) / batch / 1e3
            if us < best[name]:
                best[name] = us
                if trace is not None:
                    account[name] = (trace.accounted_ns() - a0) / batch / 1e3
    return best, account


class _Bare(torch.overrides.TorchFunctionMode):
    """A mode that does nothing: what any TorchFunctionMode costs a torch call."""

    def __torch_function__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        return func(*args, **(kwargs or {}))


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console
    from rich.table import Table

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None, help="also write the table as markdown")
    ap.add_argument("--only", default="", help="time only the rows whose name holds this text")
    ap.add_argument("--threads", type=int, default=1,
                    help="torch's intra-op threads (1: on a shared 2-core machine a second "
                         "OpenMP thread waits out its neighbours, and one forward varies "
                         "from 0.2 to 250 ms)")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    launches.combine_launch = _no_launch  # type: ignore[assignment]
    module = sys.modules[__name__]
    reg = _records()
    fns = {name: fn for name, fn in rows(module).items() if args.only in name}
    off: dict[str, list[float]] = {n: [] for n in fns}
    bare: dict[str, list[float]] = {n: [] for n in fns}
    on: dict[str, list[float]] = {n: [] for n in fns}
    told: dict[str, list[float]] = {n: [] for n in fns}
    starts, stops, per_call = [], [], []
    for _ in range(args.rounds):
        for name, us in _medians(fns, args.calls)[0].items():
            off[name].append(us)
        with _Bare():
            for name, us in _medians(fns, args.calls)[0].items():
                bare[name].append(us)
        t0 = now_s()
        trace = attn_contracts.trace(reg, on_error="report")
        trace.start()
        starts.append(now_s() - t0)
        per_call.append(trace._per_call_ns)
        noop_producer(torch.randn(T, H, D), return_lse=True)  # tags _LSE (base 2)
        timed, account = _medians(fns, args.calls, trace)
        t0 = now_s()
        report = trace.stop()
        stops.append(now_s() - t0)
        for name, us in timed.items():
            on[name].append(us)
            told[name].append(account[name])
        if report.findings:
            raise SystemExit(f"the benchmark's calls should be clean: {report.render()}")
    # each condition's fastest round: the three run in phases a second apart, and on a shared
    # machine a phase can be slowed as a whole; the fastest round is the one least disturbed
    fastest = {n: min(range(args.rounds), key=lambda i, n=n: on[n][i]) for n in fns}
    table = Table(title=f"trace overhead on the CPU, µs per call, fastest of 15 batches of "
                        f"≤ {max(1, args.calls // 15)} calls (~2 ms each) in each of "
                        f"{args.rounds} rounds")
    cols = ("call", "off", "a no-op mode", "traced", "added by the trace",
            "the trace's own account", "account / added")
    for col in cols:
        table.add_column(col, justify="left" if col == "call" else "right")
    lines = [f"| {' | '.join(cols)} |", "|---|---|---|---|---|---|---|"]
    ratios = []
    for name in fns:
        a, m, b = (min(x[name]) for x in (off, bare, on))
        c = told[name][fastest[name]]
        wrapped = "wrapped" in name or "merge(" in name
        extra = f" ({(b - a) / a * 100:+.0f} %)" if "forward" in name else ""
        ratio = c / (b - a) if b > a else math.nan
        ratios.append(ratio)
        cells = (f"{a:.2f}", "—" if wrapped else f"{m:.2f}", f"{b:.2f}", f"{b - a:.2f}{extra}",
                 f"{c:.2f}", f"{ratio:.2f}")
        table.add_row(name, *cells)
        lines.append(f"| {name} | {' | '.join(cells)} |")
    mode_ns = statistics.median(p[0] for p in per_call)
    python_ns = statistics.median(p[1] for p in per_call)
    wrap_ns = statistics.median(p[2] for p in per_call)
    tail = [
        f"trace start (built-in catalog + these records: calibration, wrap, alias and partial "
        f"scan, import watch, mode): {statistics.median(starts) * 1e3:.1f} ms; stop (restore, "
        f"sweep for wrappers bound during the trace, report): "
        f"{statistics.median(stops) * 1e3:.1f} ms",
        f"calibrated at start, per call: torch's dispatch to a Python mode {mode_ns:.0f} ns "
        f"(a builtin), {python_ns:.0f} ns (a Python function's override path), a wrapper's "
        f"extra Python frame {wrap_ns:.0f} ns",
        f"the trace's account over what it added, per row: median "
        f"{statistics.median(ratios):.2f}, from {min(ratios):.2f} to {max(ratios):.2f}",
    ]
    console = Console()
    console.print(table)
    for line in tail:
        console.print(line)
    if args.out is not None:
        args.out.write_text("\n".join(lines + [""] + [f"- {t}" for t in tail]) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
