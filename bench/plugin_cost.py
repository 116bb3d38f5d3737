"""What this project's two auto-loaded plugins cost a process that never uses them.

    python bench/plugin_cost.py vllm   [--rounds 15] [--label L] [--out FILE.md]   # in .venv-vllm
    python bench/plugin_cost.py dcp    [--rounds 5]  [--label L] [--out FILE.md]   # in .venv-vllm
    python bench/plugin_cost.py pytest [--rounds 15] [--label L] [--out FILE.md]

Issue 26 items 6 and 19. Each sample is a fresh process, the two variants interleaved round by
round (the machine is shared, so its load drifts between rounds, not within one):

- ``vllm``: a process that has imported torch, ``vllm`` and ``vllm.config`` (as every vLLM
  process has when it loads plugins: the engine and its workers build or receive a ``VllmConfig``
  first) times ``vllm.plugins.load_general_plugins()`` with ``VLLM_PLUGINS=attn_contracts`` against
  ``VLLM_PLUGINS=""`` (no plugin), DCP off: no DCP check ever runs. Also counted: the modules the
  call added to ``sys.modules``.
- ``dcp`` (issue 35 item 2): what the check costs a rank when DCP is on. Two ranks (fresh
  processes, gloo over a local TCP store) that have imported torch and vLLM's attention backends,
  as a worker has by then, each time the hook's whole check of ``FLASHINFER_MLA`` at DCP=2
  (``validate_vllm_startup`` over the group: importing the check, the vLLM mapping, the cross-rank
  agreement), per rank: **cold** (an empty cache folder: the mapping the package ships for
  the installed release is read), **cold, unshipped** (an empty cache folder and no shipped
  mapping, as for a patched or unreleased vLLM: the mapping is derived from vLLM's sources) and
  **warm** (the folder a previous start filled), interleaved round by round.
- ``pytest``: the wall time of ``python -m pytest`` over one trivial test (in a scratch directory,
  no configuration of ours), with the plugin auto-loaded against ``-p no:attn_contracts``; and,
  inside the process, the time to import the plugin module and run its ``pytest_configure``
  (what pytest does with it) with pytest itself already imported.

The tables give medians and interquartile ranges (of the differences, with − without, where two
variants run); the in-process rows give the process's CPU time too, which the load of a shared
machine inflates less than wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _timing, also under PYTHONSAFEPATH=1
from _timing import wall_and_cpu_s

_VLLM_SAMPLE = """
import json, sys, time
import torch, vllm, vllm.config, vllm.plugins  # loaded in any vLLM process before its plugins
before = len(sys.modules)
start = time.perf_counter()
vllm.plugins.load_general_plugins()
ms = (time.perf_counter() - start) * 1e3
print(json.dumps({"ms": ms, "modules": len(sys.modules) - before}))
"""

_VLLM_PLUGIN_ALONE = """
import json, sys, time
import torch, vllm, vllm.config, vllm.plugins
from importlib.metadata import entry_points
(ep,) = [e for e in entry_points(group="vllm.general_plugins") if e.name == "attn_contracts"]
before = len(sys.modules)
start, cpu = time.perf_counter(), time.process_time()
ep.load()()
ms, cpu_ms = (time.perf_counter() - start) * 1e3, (time.process_time() - cpu) * 1e3
print(json.dumps({"ms": ms, "cpu_ms": cpu_ms, "modules": len(sys.modules) - before}))
"""

_PYTEST_IMPORT_SAMPLE = """
import json, sys, time
import pytest
before = len(sys.modules)
start, cpu = time.perf_counter(), time.process_time()
import attn_contracts.pytest_plugin as plugin
class _Config:
    def addinivalue_line(self, name, line): pass
plugin.pytest_configure(_Config())
ms, cpu_ms = (time.perf_counter() - start) * 1e3, (time.process_time() - cpu) * 1e3
print(json.dumps({"ms": ms, "cpu_ms": cpu_ms, "modules": len(sys.modules) - before}))
"""


_DCP_RANK = """
import json, os, sys, time
import torch, torch.distributed as dist, vllm, vllm.config
from vllm.v1.attention.backends.mla.flashinfer_mla import FlashInferMLAImpl  # as a worker has
dist.init_process_group("gloo")
dist.barrier()
start, cpu = time.perf_counter(), time.process_time()
if os.environ.get("BENCH_UNSHIPPED"):  # a tree no shipped mapping matches (patched, unreleased)
    from pathlib import Path
    from attn_contracts.integrations import vllm_cache
    vllm_cache.shipped_dir = lambda: Path("/nonexistent")
from attn_contracts.integrations import vllm as iv
iv.validate_vllm_startup(["FLASHINFER_MLA"], dcp_world_size=2, group=dist.group.WORLD)
ms, cpu_ms = (time.perf_counter() - start) * 1e3, (time.process_time() - cpu) * 1e3
print(json.dumps({"ms": ms, "cpu_ms": cpu_ms}))
dist.barrier()
dist.destroy_process_group()
"""


def _free_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _dcp_pair(env: dict[str, str]) -> list[dict[str, float]]:
    """One start of two DCP ranks; each rank's own timing of the check."""
    port = str(_free_port())
    procs = [subprocess.Popen([sys.executable, "-c", _DCP_RANK], text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env={**env, "RANK": str(r), "WORLD_SIZE": "2",
                                   "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port})
             for r in range(2)]
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=600)
        if p.returncode != 0:
            tail = "\n".join(stderr.strip().splitlines()[-15:])
            raise RuntimeError(f"a DCP rank exited with {p.returncode}:\n{tail}")
        out.append(dict(json.loads(stdout.strip().splitlines()[-1])))
    return out


def bench_dcp(rounds: int) -> list[str]:
    base = {k: v for k, v in os.environ.items()
            if k not in ("ATTN_CONTRACTS_VLLM", "BENCH_UNSHIPPED")}
    warm_dir = tempfile.mkdtemp(prefix="attn-contracts-warm-")
    _dcp_pair({**base, "XDG_CACHE_HOME": warm_dir, "BENCH_UNSHIPPED": "1"})  # fills it (no sample)
    kinds = {"cold": {}, "cold, unshipped": {"BENCH_UNSHIPPED": "1"}, "warm": {}}
    samples: dict[str, list[dict[str, float]]] = {k: [] for k in kinds}
    starts: dict[str, list[list[dict[str, float]]]] = {k: [] for k in kinds}
    for r in range(rounds):
        order = list(kinds) if r % 2 == 0 else list(reversed(kinds))
        for name in order:
            folder = warm_dir if name == "warm" else tempfile.mkdtemp(prefix="attn-contracts-cold-")
            pair = _dcp_pair({**base, **kinds[name], "XDG_CACHE_HOME": folder})
            samples[name] += pair
            starts[name].append(pair)
        print(f"round {r + 1}/{rounds}", file=sys.stderr)
    # unshipped: one rank derives, the other waits for it and reads what it stored
    # (vllm_cache.one_deriver): the slower rank of each start, and the host's CPU for the two
    samples["slower"] = [max(pair, key=lambda s: s["cpu_ms"]) for pair in starts["cold, unshipped"]]
    samples["both"] = [
        {"ms": max(s["ms"] for s in pair), "cpu_ms": sum(s["cpu_ms"] for s in pair)}
        for pair in starts["cold, unshipped"]]
    lines = ["| the check at startup, DCP=2, per rank | wall: median [IQR] | CPU time: median "
             "[IQR] | samples (ranks x rounds) |", "|---|---|---|---|"]
    for name, title in (("cold", "cold (empty cache folder: the mapping shipped for the release)"),
                        ("cold, unshipped", "cold, unshipped (empty cache folder, no shipped "
                                            "mapping: derived from vLLM's sources)"),
                        ("slower", "cold, unshipped: the slower rank of each start (the one "
                                   "that derived)"),
                        ("both", "cold, unshipped: the two ranks' CPU added (wall: the slower "
                                 "one's)"),
                        ("warm", "warm (the cache a previous start wrote)")):
        lo, mid, hi = _quartiles([s["ms"] for s in samples[name]])
        clo, cmid, chi = _quartiles([s["cpu_ms"] for s in samples[name]])
        lines.append(f"| {title} | {mid:.0f} [{lo:.0f}, {hi:.0f}] ms | {cmid:.0f} [{clo:.0f}, "
                     f"{chi:.0f}] ms | {len(samples[name])} |")
    return lines


def _sample(code: str, env: dict[str, str]) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True, timeout=300)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _wall(argv: list[str], cwd: str, env: dict[str, str]) -> dict[str, float]:
    walls, _, _ = wall_and_cpu_s(lambda: subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, check=True, timeout=300), 1)
    return {"ms": walls[0] * 1e3}


def _quartiles(values: list[float]) -> tuple[float, float, float]:
    q = statistics.quantiles(values, n=4, method="inclusive")
    return q[0], statistics.median(values), q[2]


def _rows(variants: dict[str, Callable[[], dict[str, float]]], rounds: int
          ) -> dict[str, list[dict[str, float]]]:
    samples: dict[str, list[dict[str, float]]] = {k: [] for k in variants}
    for r in range(rounds):
        order = list(variants) if r % 2 == 0 else list(reversed(variants))
        for name in order:
            samples[name].append(variants[name]())
        print(f"round {r + 1}/{rounds}", file=sys.stderr)
    return samples


def _table(title: str, samples: dict[str, list[dict[str, float]]], with_: str, without: str,
           keys: tuple[str, ...]) -> list[str]:
    lines = [f"| {title} | with (median) | without (median) | with − without: median [IQR] |",
             "|---|---|---|---|"]
    for key in keys:
        a = [s[key] for s in samples[with_]]
        b = [s[key] for s in samples[without]]
        diff = [x - y for x, y in zip(a, b, strict=True)]
        lo, mid, hi = _quartiles(diff)
        unit = "ms" if key == "ms" else ""
        lines.append(f"| {key} | {statistics.median(a):.1f} {unit} | {statistics.median(b):.1f} "
                     f"{unit} | {mid:+.1f} [{lo:+.1f}, {hi:+.1f}] {unit} |")
    return lines


def bench_vllm(rounds: int) -> list[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("VLLM_PLUGINS",)}
    base.pop("VLLM_DECODE_CONTEXT_PARALLEL_SIZE", None)
    variants = {
        "with": lambda: _sample(_VLLM_SAMPLE, {**base, "VLLM_PLUGINS": "attn_contracts"}),
        "without": lambda: _sample(_VLLM_SAMPLE, {**base, "VLLM_PLUGINS": ""}),
    }
    samples = _rows(variants, rounds)
    lines = _table("load_general_plugins()", samples, "with", "without", ("ms", "modules"))
    return lines + _alone("the plugin alone (its entry point loaded and called), vLLM imported",
                          "attn_contracts:register", _VLLM_PLUGIN_ALONE, base, rounds)


def _alone(title: str, what: str, code: str, env: dict[str, str], rounds: int) -> list[str]:
    own = [_sample(code, env) for _ in range(rounds)]
    lo, mid, hi = _quartiles([s["ms"] for s in own])
    clo, cmid, chi = _quartiles([s["cpu_ms"] for s in own])
    mods = statistics.median([s["modules"] for s in own])
    return ["", f"| {title} | wall: median [IQR] | CPU time: median [IQR] | modules added |",
            "|---|---|---|---|",
            f"| {what} | {mid:.1f} [{lo:.1f}, {hi:.1f}] ms | {cmid:.1f} [{clo:.1f}, {chi:.1f}] ms "
            f"| {mods:.0f} |"]


def bench_pytest(rounds: int) -> list[str]:
    scratch = tempfile.mkdtemp()
    Path(scratch, "test_one.py").write_text("def test_one():\n    assert True\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTEST_ADDOPTS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD")}
    run = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_one.py"]
    variants = {
        "with": lambda: _wall(run, scratch, env),
        "without": lambda: _wall([*run, "-p", "no:attn_contracts"], scratch, env),
    }
    wall = _rows(variants, rounds)
    lines = _table("pytest run, wall", wall, "with", "without", ("ms",))
    return lines + _alone("the plugin alone (import + pytest_configure), pytest imported",
                          "attn_contracts.pytest_plugin", _PYTEST_IMPORT_SAMPLE, env, rounds)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("which", choices=["vllm", "dcp", "pytest"])
    p.add_argument("--rounds", type=int, default=15)
    p.add_argument("--label", default="")
    p.add_argument("--out", type=Path)
    args = p.parse_args(argv)
    lines = {"vllm": bench_vllm, "dcp": bench_dcp, "pytest": bench_pytest}[args.which](args.rounds)
    head = [f"### {args.which}{' (' + args.label + ')' if args.label else ''}: {args.rounds} rounds, "
            f"Python {sys.version.split()[0]}", ""]
    text = "\n".join([*head, *lines, ""])
    print(text)
    if args.out:
        with args.out.open("a") as f:
            f.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
