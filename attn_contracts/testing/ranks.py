"""Start N ranks on this machine (gloo on the CPU, or NCCL with one GPU each) and collect results.

Used by the demo, the examples and the tests (never by the shipped combine). Results travel
as ``torch.save`` bytes and are read back with ``weights_only=True``: tensors, containers, numbers
and strings. Rendezvous is a ``FileStore`` in a fresh temporary
folder (no fixed port, nothing to clean up between runs), or, with ``rendezvous="tcp"``, the
``TCPStore`` that rank 0 hosts on a free loopback port, as engines run it (the store then dies with
rank 0). Every wait has a deadline: a rank that dies, hangs or never joins is reported by rank
number, and the survivors are stopped, so nothing is left hanging.
"""

from __future__ import annotations

import io
import os
import queue
import socket
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any
from typing import Literal

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

__all__ = ["RankFailure", "RankResult", "run_ranks"]


@dataclass
class RankResult:
    rank: int
    ok: bool
    value: Any = None
    error: str = ""  # traceback text, or why the rank gave no result


class RankFailure(RuntimeError):
    """One or more ranks failed; ``results`` holds every rank's outcome."""

    def __init__(self, results: list[RankResult]):
        self.results = results
        bad = [r for r in results if not r.ok]
        super().__init__("; ".join(f"rank {r.rank}: {r.error.strip().splitlines()[-1]}"
                                   for r in bad))


def _to_bytes(value: Any) -> bytes:
    # Tensors are serialized, not shared: a shared-memory handle dies with the rank that made it.
    buf = io.BytesIO()
    torch.save(value, buf)
    return buf.getvalue()


def _from_bytes(data: bytes) -> Any:
    # weights_only: tensors, containers, numbers and strings only; a rank's result never runs
    # code in the parent when it is read
    return torch.load(io.BytesIO(data), weights_only=True)


def _free_loopback_port() -> int:
    # The kernel picks a free port; closed again at once, so rank 0 can bind it (a port taken in
    # between makes init fail loudly, it never joins a stranger's store).
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _entry(fn: Callable[..., Any], rank: int, world_size: int, store_at: str, backend: str,
           init_timeout_s: float, results: Any, args: tuple[Any, ...]) -> None:
    try:
        if backend == "nccl":
            torch.cuda.set_device(rank)
        timeout = timedelta(seconds=init_timeout_s)
        if store_at.startswith("tcp://"):  # rank 0 hosts the TCPStore, as under env:// or tcp://
            dist.init_process_group(backend, init_method=store_at, rank=rank,
                                    world_size=world_size, timeout=timeout)
        else:
            store = dist.FileStore(store_at, world_size)  # type: ignore[attr-defined]  # stubs omit it
            dist.init_process_group(backend, store=store,
                                    rank=rank, world_size=world_size, timeout=timeout)
        results.put((rank, "ready", None))
        value = fn(rank, world_size, *args)
        results.put((rank, "ok", _to_bytes(value)))
    except BaseException:
        results.put((rank, "error", traceback.format_exc()))
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def run_ranks(fn: Callable[..., Any], world_size: int, *args: Any, backend: str = "gloo",
              timeout_s: float = 300.0, init_timeout_s: float = 60.0,
              on_ready: Callable[[int], None] | None = None,
              require_all: bool = True,
              rendezvous: Literal["file", "tcp"] = "file") -> list[RankResult]:
    """Run ``fn(rank, world_size, *args)`` in ``world_size`` spawned processes.

    ``fn`` must be importable by name (a module-level function). Returns one
    :class:`RankResult` per rank; with ``require_all`` a failed or silent rank raises
    :class:`RankFailure` instead. ``timeout_s`` bounds the whole run. ``rendezvous``: a
    ``FileStore`` in a temporary folder, or a ``TCPStore`` hosted by rank 0 on loopback.
    """
    if rendezvous not in ("file", "tcp"):
        raise ValueError(f"rendezvous must be 'file' or 'tcp', found {rendezvous!r}")
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    with tempfile.TemporaryDirectory(prefix="attn-contracts-") as tmp:
        store_at = (f"tcp://127.0.0.1:{_free_loopback_port()}" if rendezvous == "tcp" else
                    os.path.join(tmp, "store"))
        procs = [ctx.Process(target=_entry, daemon=True, args=(
            fn, r, world_size, store_at, backend, init_timeout_s, results, args))
            for r in range(world_size)]
        for p in procs:
            p.start()
        outcomes = _collect(procs, results, timeout_s, on_ready)
        for p in procs:
            p.join(timeout=5)
            if p.is_alive():
                p.kill()
    ordered = [outcomes.get(r) or RankResult(r, False, error="no result") for r in
               range(world_size)]
    if require_all and not all(o.ok for o in ordered):
        raise RankFailure(ordered)
    return ordered


def _collect(procs: list[Any], results: Any, timeout_s: float,
             on_ready: Callable[[int], None] | None) -> dict[int, RankResult]:
    deadline = time.monotonic() + timeout_s
    outcomes: dict[int, RankResult] = {}
    while len(outcomes) < len(procs):
        left = deadline - time.monotonic()
        if left <= 0:
            for r in range(len(procs)):
                outcomes.setdefault(r, RankResult(r, False, error=f"no result within {timeout_s:g} s"))
            break
        try:
            rank, kind, value = results.get(timeout=min(left, 0.5))
        except queue.Empty:
            for r, p in enumerate(procs):  # a process that exited without a word is dead
                if r not in outcomes and p.exitcode is not None and results.empty():
                    outcomes[r] = RankResult(r, False, error=f"process exited with code "
                                                             f"{p.exitcode} before reporting")
            continue
        if kind == "ready":
            if on_ready is not None:
                on_ready(rank)
        else:
            outcomes[rank] = RankResult(rank, kind == "ok",
                                        _from_bytes(value) if kind == "ok" else None,
                                        "" if kind == "ok" else value)
    return outcomes
