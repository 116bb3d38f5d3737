"""What the vLLM hook does (``ATTN_CONTRACTS_VLLM``, read once per start into a typed
:class:`Mode`), and where it says so (vLLM's own logger).

``error`` (the default: a broken contract stops startup), ``warn`` (logs it instead), ``off`` (the
check is not hooked, or does nothing); ``trace`` and ``trace-warn`` also arm the start-up trace
(:mod:`attn_contracts.integrations.vllm_trace`), the check then doing as ``error`` and ``warn``.
The plugin reads the variable once, when vLLM registers it in a process (:func:`read`), and hands
that :class:`Mode` to everything the start runs; a plain call reads it when called. Any other
value logs one line naming the accepted values and is the default: a typo must neither stop vLLM
nor switch the check off. Shared by the light plugin module, the trace's wiring and the heavy
check; imports nothing beyond the standard library.

The log: ``vllm.attn_contracts``, a child of the ``vllm`` logger that vLLM configures in each of
its processes (its handler, format and ``VLLM_LOGGING_LEVEL``, INFO by default; with
``VLLM_CONFIGURE_LOGGING=0`` the application's logging config decides), so a verdict is seen where
vLLM's own lines are, with the process's prefix (``(Worker_TP1 pid=...)``).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import Literal
from typing import cast

__all__ = ["ACCEPTED", "LOGGER", "MODE_ENV", "POLICIES", "TRACE_POLICY", "Mode", "log",
           "log_once", "read"]

#: the logger's name: a child of vLLM's own ``vllm`` logger (vllm/logger.py configures that one)
LOGGER = "vllm.attn_contracts"
log = logging.getLogger(LOGGER)

MODE_ENV = "ATTN_CONTRACTS_VLLM"
Policy = Literal["error", "warn", "off"]
#: what the hook does with a refusal; the first is the default
POLICIES: tuple[Policy, ...] = ("error", "warn", "off")
#: the values that also arm the start-up trace → what the check does with a refusal
TRACE_POLICY: dict[str, Policy] = {"trace": "error", "trace-warn": "warn"}
#: every value the variable takes
ACCEPTED = (*POLICIES, *TRACE_POLICY)
_said: set[str] = set()  # lines logged once per process


@dataclass(frozen=True)
class Mode:
    """``ATTN_CONTRACTS_VLLM`` as one start reads it: ``value`` (one of :data:`ACCEPTED`),
    ``policy`` (what a refusal does: ``trace`` is ``error``, ``trace-warn`` is ``warn``) and
    ``traced`` (whether it arms the start-up trace)."""

    value: str = POLICIES[0]

    def __post_init__(self) -> None:
        if self.value not in ACCEPTED:
            raise ValueError(f"{MODE_ENV} mode {self.value!r}: allowed: {', '.join(ACCEPTED)}")

    @property
    def policy(self) -> Policy:
        return TRACE_POLICY.get(self.value) or cast(Policy, self.value)

    @property
    def traced(self) -> bool:
        return self.value in TRACE_POLICY


def read() -> Mode:
    """``ATTN_CONTRACTS_VLLM`` read now; unset, empty or anything else is the default (the last
    logged once, with the accepted values)."""
    raw = os.environ.get(MODE_ENV, "")
    value = raw.strip().lower()
    if value in ACCEPTED:
        return Mode(value)
    if value:
        log_once(logging.WARNING, f"attn-contracts: {MODE_ENV}={raw!r} is not one of "
                 f"{', '.join(ACCEPTED)}; using {POLICIES[0]} (the default)")
    return Mode()


def log_once(level: int, text: str) -> None:
    """Log ``text`` the first time this process says it: vLLM calls its DCP check (and loads
    plugins) more than once per process, and each rank logs for itself anyway."""
    if text not in _said:
        _said.add(text)
        log.log(level, "%s", text)
