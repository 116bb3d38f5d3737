"""The adapters the verifier runs, and the one way they are loaded: the trust boundary.

Two conventions, one per end of the edge, because they observe different things:

* :class:`Adapter` — a decode kernel: ``run(problem) -> (out, lse)`` as the kernel returns them
  (:mod:`attn_contracts.backends.problem`).
* :class:`ConsumerAdapter` — a function that combines LSEs::

      run(o: Tensor[N, T, H, D], lse: Tensor[N, X, Y], **call) -> (out[T, H, D], lse_out | None)

  The verifier builds ``lse`` with ``(X, Y)`` either ``(T, H)`` or ``(H, T)`` and in base e or 2;
  the adapter passes it on **as it is** and only rearranges the *states* axis to the API's
  convention — ``lse[0], lse[1]`` for a two-argument merge ("separate"), a permute to
  ``[T, N, H]`` for a states-second API — never the base, never the token/head axes. So what the
  verifier sees is what the function assumes. ``lse_out`` comes back in the layout the function
  writes it. ``call`` carries the base keyword of a keyword-base consumer
  (``is_lse_base_on_e=False``); an adapter of a fixed-base function takes none.

Which adapter runs a record: its ``adapter = "module:name"`` field, or — for a consumer record
without one — the built-in adapter of a function it lists in ``calls`` (:data:`KNOWN_ADAPTERS`).

:func:`load_adapter` is the only loader, for both kinds, in the library API as in the CLI: a path
runs only when its module is allowed (decided from the text, before anything is imported), names
one attribute of that module (no attribute chains into what the module imported:
``combine_probe:subprocess.run`` is refused), and resolves to a function *defined* in an
allowed module (its ``__module__``). Whatever the import raises — ``SystemExit`` included — is
a refusal with the reason, never the end of the run; only ``KeyboardInterrupt`` goes through.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from typing import TypeVar

from attn_contracts.consumer import ConsumerRecord
from attn_contracts.facts import builtin_adapters
from attn_contracts.findings import error_text

__all__ = ["BUILTIN_ADAPTERS", "KNOWN_ADAPTERS", "Adapter", "AdapterRefused", "ConsumerAdapter",
           "adapter_allowed", "adapter_path_for", "device_unavailable", "load_adapter",
           "missing_requirement", "skip_reason"]

#: the package of the adapters this project ships: always allowed, whoever names them; and the
#: built-in adapters of library functions, by the qualified names consumer records list in
#: ``calls`` (data: ``catalog/facts/adapters.toml``)
BUILTIN_ADAPTERS, KNOWN_ADAPTERS = builtin_adapters()


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


@dataclass(frozen=True)
class ConsumerAdapter:
    """A runnable combine function behind the convention above."""

    run: Callable[..., tuple[Any, Any]]
    requires: tuple[str, ...] = ()  # importable modules (optional extras)
    needs_cuda: bool = False
    #: dtype of the partial outputs the probes use (FlashInfer's merges take fp16/bf16 only)
    dtype: str = "float32"
    #: head dim of the layout/empty probes (default: the record's smallest, else 8)
    head_dim: int | None = None
    #: run the launch-limit probe (None: when the function needs CUDA, where launches fail)
    probe_limits: bool | None = None

    def skip_reason(self, device: str) -> str | None:
        """Why this adapter cannot run here (None if it can)."""
        return skip_reason(self.requires, self.needs_cuda, device)

    def wants_limit_probe(self) -> bool:
        return self.needs_cuda if self.probe_limits is None else self.probe_limits


A = TypeVar("A", Adapter, ConsumerAdapter)


class AdapterRefused(Exception):
    """An adapter path that may not, or cannot, be loaded. ``allowed`` is False when the
    allowlist refused it (a skip: nothing was imported), True when loading it failed (a finding)."""

    def __init__(self, reason: str, *, allowed: bool) -> None:
        super().__init__(reason)
        self.allowed = allowed


def missing_requirement(requires: Iterable[str]) -> str | None:
    """The first of ``requires`` that is not installed (None if all are)."""
    return next((mod for mod in requires if importlib.util.find_spec(mod) is None), None)


def skip_reason(requires: Iterable[str], needs_cuda: bool, device: str) -> str | None:
    """Why an adapter (producer or consumer) that imports ``requires`` cannot run on ``device``:
    CUDA it needs and does not have, or a missing optional library (None if it can run). Each
    reason is a bare phrase; the caller says "skipped"."""
    if needs_cuda and not device.startswith("cuda"):
        return "needs CUDA (run with --device cuda on a GPU machine)"
    missing = missing_requirement(requires)
    if missing:
        return f"{missing} not installed"
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            return "needs CUDA, none available"
    return None


def adapter_allowed(path: str, allow: Iterable[str]) -> bool:
    """Whether ``"package.module:attr"`` lies in one of the ``allow``ed modules (or below one).

    Decided from the text alone: nothing is imported, so a record naming ``os:system`` runs
    nothing unless the user named ``os``."""
    return _module_allowed(path.partition(":")[0], allow)


def _module_allowed(module: str, allow: Iterable[str]) -> bool:
    return any(module == a or module.startswith(a + ".") for a in allow)


def _defined_in(obj: Any) -> str | None:
    """The module that defines what runs: a function's own, an adapter's ``run``'s."""
    fn = obj.run if isinstance(obj, (Adapter, ConsumerAdapter)) else obj
    module = getattr(fn, "__module__", None)
    return module if isinstance(module, str) else None


def _resolve(path: str, allow: Iterable[str] | None) -> Any:
    module, _, attr = path.partition(":")
    if not attr or "." in attr:
        raise AdapterRefused(f"adapter {path!r} must name one attribute of its module "
                             f"(module:name), found {attr or 'none'!r}", allowed=True)
    try:
        obj = getattr(importlib.import_module(module), attr)
    except KeyboardInterrupt:
        raise
    except BaseException as err:  # SystemExit at import included: one adapter never ends the run
        raise AdapterRefused(f"adapter {path} not loadable: {error_text(err)}",
                             allowed=True) from None
    defined = _defined_in(obj)
    inside = defined is not None and _module_allowed(defined, [module])
    if not inside or (allow is not None and not _module_allowed(defined or "", allow)):
        raise AdapterRefused(f"adapter {path} is not defined in {module} (it is "
                             f"{defined or 'of no module'}'s, reached through an import); an "
                             "adapter must be a function defined in an allowed module",
                             allowed=True)
    return obj


def load_adapter(path: str, kind: type[A], *, allow: Iterable[str] | None = None) -> A:
    """``"package.module:name"`` → a :class:`Adapter` or :class:`ConsumerAdapter` (``kind``);
    a bare function gets the defaults. ``allow``: the modules whose adapters may run (with their
    submodules); None: any (a path the caller chose in code). Raises :class:`AdapterRefused`."""
    allow = None if allow is None else list(allow)
    if allow is not None and not adapter_allowed(path, allow):
        module = path.partition(":")[0]
        raise AdapterRefused(f"adapter not allowed ({path}; pass --allow-adapter {module} "
                             "if you trust it)", allowed=False)
    obj = _resolve(path, allow)
    if isinstance(obj, kind):
        return obj
    if callable(obj) and not isinstance(obj, (type, Adapter, ConsumerAdapter)):
        return kind(run=obj)
    raise AdapterRefused(f"adapter {path} is a {type(obj).__name__}, not a {kind.__name__} or "
                         "a function", allowed=True)


def adapter_path_for(record: ConsumerRecord) -> str | None:
    """The adapter that runs a consumer ``record``: its own, else a built-in one for a function
    it lists."""
    if record.adapter is not None:
        return record.adapter
    return next((KNOWN_ADAPTERS[c.function] for c in record.calls if c.function in KNOWN_ADAPTERS),
                None)


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
