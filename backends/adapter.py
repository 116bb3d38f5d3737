"""What an adapter needs to run, so the verifier can skip it cleanly instead of failing."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

__all__ = ["BUILTIN_ADAPTERS", "Adapter", "adapter_allowed", "device_unavailable",
           "import_object", "resolve_adapter", "skip_reason"]

#: the package of the adapters this project ships: always allowed, whoever names them
BUILTIN_ADAPTERS = "attn_contracts.backends"


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
        return skip_reason(self.requires, self.needs_cuda, device)


def skip_reason(requires: Iterable[str], needs_cuda: bool, device: str) -> str | None:
    """Why an adapter (producer or consumer) that imports ``requires`` cannot run on ``device``:
    a missing optional library, or CUDA it needs and does not have (None if it can run)."""
    for mod in requires:
        if importlib.util.find_spec(mod) is None:
            return f"skipped: {mod} not installed"
    if needs_cuda and not device.startswith("cuda"):
        return "skipped: needs CUDA (run with --device cuda on a GPU machine)"
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            return "skipped: needs CUDA, none available"
    return None


def import_object(path: str) -> Any:
    """``"package.module:attr.sub"`` → that object (imports the module: call it only for a path
    the user allowed, see :func:`adapter_allowed`)."""
    module, _, attr = path.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def resolve_adapter(path: str) -> Adapter:
    """``"package.module:attr"`` → the :class:`Adapter` (a bare callable gets the defaults)."""
    obj = import_object(path)
    if isinstance(obj, Adapter):
        return obj
    if callable(obj):
        return Adapter(run=obj)
    raise TypeError(f"adapter {path!r} is a {type(obj).__name__}, not an Adapter or a callable")


def adapter_allowed(path: str, allow: Iterable[str]) -> bool:
    """Whether ``"package.module:attr"`` lies in one of the ``allow``ed modules (or below one).

    Decided from the text alone: nothing is imported, so a record naming ``os:system`` runs
    nothing unless the user named ``os``."""
    module = path.partition(":")[0]
    return any(module == a or module.startswith(a + ".") for a in allow)


def device_unavailable(device: str) -> str | None:
    """Why ``device`` ("cpu", "cuda", "cuda:N") is not there (None if it is)."""
    if device == "cpu":
        return None
    kind, _, index_text = device.partition(":")
    if device != "cuda" and not (kind == "cuda" and index_text.isdigit()):
        return f"{device!r} is not a device this verifier runs on (allowed: cpu, cuda, cuda:N)"
    import torch

    if not torch.cuda.is_available():
        return "no CUDA device is available"
    index, count = int(index_text or 0), torch.cuda.device_count()
    if index >= count:
        return f"CUDA device {index} does not exist ({count} available: 0-{count - 1})"
    return None
