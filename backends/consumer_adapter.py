"""The consumer adapter convention: how the verifier calls a function that combines LSEs.

::

    run(o: Tensor[N, T, H, D], lse: Tensor[N, X, Y], **call) -> (out[T, H, D], lse_out | None)

The verifier builds ``lse`` with ``(X, Y)`` either ``(T, H)`` or ``(H, T)`` and in base e or 2;
the adapter passes it on **as it is** and only rearranges the *states* axis to the API's
convention — ``lse[0], lse[1]`` for a two-argument merge ("separate"), a permute to ``[T, N, H]``
for a states-second API — never the base, never the token/head axes. So what the verifier sees is
what the function assumes. ``lse_out`` comes back in the layout the function writes it (the
verifier reads it in the layout the input was read in). ``call`` carries the base keyword of a
:class:`~attn_contracts.consumer.KeywordBase` consumer (``is_lse_base_on_e=False``); an adapter of
a fixed-base function takes none.

Which adapter runs a record: its ``adapter = "module:attr"`` field, or — for a record without one —
the built-in adapter of a function it lists in ``calls`` (:data:`KNOWN_ADAPTERS`). A bare callable
is taken as ``run`` with the defaults.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from attn_contracts.backends.adapter import import_object, skip_reason
from attn_contracts.consumer import ConsumerRecord

__all__ = ["KNOWN_ADAPTERS", "ConsumerAdapter", "adapter_path_for", "resolve_consumer_adapter"]

_FI = "attn_contracts.backends.flashinfer_merge"
_VLLM = "attn_contracts.backends.vllm_merge"
#: built-in adapters of library functions, by the qualified names consumer records list in ``calls``
KNOWN_ADAPTERS: dict[str, str] = {
    "flashinfer.merge_state": f"{_FI}:merge_state",
    "flashinfer.cascade.merge_state": f"{_FI}:merge_state",
    "flashinfer.merge_state_in_place": f"{_FI}:merge_state_in_place",
    "flashinfer.cascade.merge_state_in_place": f"{_FI}:merge_state_in_place",
    "flashinfer.merge_states": f"{_FI}:merge_states",
    "flashinfer.cascade.merge_states": f"{_FI}:merge_states",
    # the installed vLLM's dispatcher (make test-vllm); on the CPU it runs its torch fallback
    "vllm.v1.attention.ops.merge_attn_states.merge_attn_states": f"{_VLLM}:merge_attn_states",
}


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
        reason: str | None = skip_reason(self.requires, self.needs_cuda, device)
        return reason

    def wants_limit_probe(self) -> bool:
        return self.needs_cuda if self.probe_limits is None else self.probe_limits


def adapter_path_for(record: ConsumerRecord) -> str | None:
    """The adapter that runs ``record``: its own, else a built-in one for a function it lists."""
    if record.adapter is not None:
        return record.adapter
    return next((KNOWN_ADAPTERS[c.function] for c in record.calls if c.function in KNOWN_ADAPTERS),
                None)


def resolve_consumer_adapter(path: str) -> ConsumerAdapter:
    """``"package.module:attr"`` → the :class:`ConsumerAdapter` (a callable gets the defaults)."""
    obj = import_object(path)
    if isinstance(obj, ConsumerAdapter):
        return obj
    if callable(obj):
        return ConsumerAdapter(run=obj)
    raise TypeError(f"consumer adapter {path!r} is a {type(obj).__name__}, not a ConsumerAdapter "
                    "or a callable")
