"""The benchmarks (``bench/``): no import cycles between them, one module that reads the clocks
(``_timing.py``), and each GPU benchmark's code runs end to end on a CPU (``--dry-run``: small
shapes, every call once, untimed), so a change that breaks one is seen without a GPU."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
MODULES = {p.stem: p for p in BENCH.glob("*.py")}
#: what reads a clock to time a call (``time.monotonic`` only bounds a run or reports its length)
CLOCKS = ("perf_counter", "perf_counter_ns", "os.times", "cuda.Event", "CUDAGraph", "do_bench",
          "elapsed_time")


def _imports(path: Path) -> set[str]:
    """The bench modules ``path`` imports, at any depth of the file (a function's import too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[-1] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module.split(".")[-1])
    return found & set(MODULES)


def test_no_benchmark_imports_one_that_imports_it_back() -> None:
    graph = {name: _imports(path) - {name} for name, path in MODULES.items()}
    cycles = []

    def visit(name: str, path: tuple[str, ...]) -> None:
        for dep in sorted(graph[name]):
            if dep in path:
                cycles.append(" -> ".join((*path[path.index(dep):], dep)))
            else:
                visit(dep, (*path, dep))

    for name in sorted(graph):
        visit(name, (name,))
    assert cycles == []


def _clocks(path: Path) -> list[str]:
    """The clocks ``path``'s code reads (attributes such as ``time.perf_counter``, or names
    imported from a module), not those its prose names."""
    used = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute):
            text = ast.unparse(node)
            used += [c for c in CLOCKS if text == c or text.endswith("." + c)]
        elif isinstance(node, ast.ImportFrom):
            used += [a.name for a in node.names if a.name in CLOCKS]
    return used


def test_only_the_timing_module_reads_a_clock() -> None:
    readers = {name: _clocks(path) for name, path in MODULES.items() if name != "_timing"}
    assert {name: found for name, found in readers.items() if found} == {}
    assert _clocks(MODULES["_timing"])  # the check sees what it looks for


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}  # the torch path
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=600,
                          env={**env, "PYTHONSAFEPATH": "1"}, check=False)


def test_importing_the_experiments_imports_no_second_copy_of_the_goals() -> None:
    """``goals.py --experiments`` imports ``goals_experiments``, which imported ``goals`` back:
    a second copy of the script beside ``__main__``."""
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import goals_experiments; "
            "print(sorted(m for m in sys.modules if m in ('goals', 'combine', 'eager_host')))")
    done = _run("-c", code, str(BENCH))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("args", [
    ("goals.py", "--dry-run"),
    ("combine.py", "--dry-run", "--bases", "2", "--shapes", "4,1,128,512", "2,4096,32,128"),
    ("combine.py", "--dry-run", "--sweep", "targets", "--budget-s", "1"),
])
def test_a_gpu_benchmark_runs_end_to_end_on_the_cpu(args: tuple[str, ...]) -> None:
    done = _run(str(BENCH / args[0]), *args[1:])
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
