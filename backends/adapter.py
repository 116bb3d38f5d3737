"""What an adapter needs to run, so the verifier can skip it cleanly instead of failing."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["Adapter", "resolve_adapter"]


@dataclass(frozen=True)
class Adapter:
    """A runnable decode kernel: ``run(problem) -> (out, lse)`` as the kernel returns them."""

    run: Callable[..., tuple[Any, Any]]
    requires: tuple[str, ...] = ()  # importable modules (optional extras)
    needs_cuda: bool = False
    allows_empty_rows: bool = True  # a request with zero keys is legal input
    accepts_out: bool = False  # honours problem.out (a caller-owned, maybe strided buffer)
    num_heads: int | None = None  # head count the kernel needs (MLA kernels: 16/32/64/128)
    page_size: int = 16

    def skip_reason(self, device: str) -> str | None:
        """Why this adapter cannot run here (None if it can)."""
        for mod in self.requires:
            if importlib.util.find_spec(mod) is None:
                return f"skipped: {mod} not installed"
        if self.needs_cuda and not device.startswith("cuda"):
            return "skipped: needs CUDA (run with --device cuda on a GPU machine)"
        if device.startswith("cuda"):
            import torch

            if not torch.cuda.is_available():
                return "skipped: needs CUDA, none available"
        return None


def resolve_adapter(path: str) -> Adapter:
    """``"package.module:attr"`` → the :class:`Adapter` (a bare callable gets the defaults)."""
    module, _, attr = path.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if isinstance(obj, Adapter):
        return obj
    if callable(obj):
        return Adapter(run=obj)
    raise TypeError(f"adapter {path!r} is a {type(obj).__name__}, not an Adapter or a callable")
