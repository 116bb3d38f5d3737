"""What the vLLM hook does with a refusal (``ATTN_CONTRACTS_VLLM``), and its once-per-process log.

``error`` (the default: a broken contract stops startup), ``warn`` (logs it instead), ``off`` (the
check is not hooked, or does nothing); ``trace`` and ``trace-warn`` also arm the start-up trace
(:mod:`attn_contracts.integrations.vllm_trace`), the check then doing as ``error`` and ``warn``.
Read when used, so a process may change it. Any other value logs one line naming the accepted
values and is the default: a typo must neither stop vLLM nor switch the check off. Shared by the
light plugin module, the trace's wiring and the heavy check; imports nothing.
"""

from __future__ import annotations

import logging
import os

__all__ = ["ACCEPTED", "MODE_ENV", "POLICIES", "TRACE_POLICY", "log", "log_once", "mode", "policy",
           "traced"]

log = logging.getLogger("attn_contracts.vllm")

MODE_ENV = "ATTN_CONTRACTS_VLLM"
#: what the hook does with a refusal; the first is the default
POLICIES = ("error", "warn", "off")
#: the values that also arm the start-up trace → what the check does with a refusal
TRACE_POLICY = {"trace": "error", "trace-warn": "warn"}
#: every value the variable takes
ACCEPTED = (*POLICIES, *TRACE_POLICY)
_said: set[str] = set()  # lines logged once per process


def log_once(level: int, text: str) -> None:
    """Log ``text`` the first time this process says it: vLLM calls its DCP check (and loads
    plugins) more than once per process, and each rank logs for itself anyway."""
    if text not in _said:
        _said.add(text)
        log.log(level, "%s", text)


def mode() -> str:
    """``ATTN_CONTRACTS_VLLM`` read now: one of :data:`ACCEPTED`; unset, empty or anything else is
    the default (the last logged once, with the accepted values)."""
    raw = os.environ.get(MODE_ENV, "")
    value = raw.strip().lower()
    if value in ACCEPTED:
        return value
    if value:
        log_once(logging.WARNING, f"attn-contracts: {MODE_ENV}={raw!r} is not one of "
                 f"{', '.join(ACCEPTED)}; using {POLICIES[0]} (the default)")
    return POLICIES[0]


def policy() -> str:
    """What the check does with a refusal, read now: one of :data:`POLICIES` (``trace`` is
    ``error``, ``trace-warn`` is ``warn``; an unknown value the default, logged once)."""
    value = mode()
    return TRACE_POLICY.get(value, value)


def traced() -> bool:
    """Whether ``ATTN_CONTRACTS_VLLM`` asks for the start-up trace (``trace``, ``trace-warn``)."""
    return mode() in TRACE_POLICY
