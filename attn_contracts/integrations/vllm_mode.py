"""What the vLLM hook does with a refusal (``ATTN_CONTRACTS_VLLM``), and its once-per-process log.

``error`` (the default: a broken contract stops startup), ``warn`` (logs it instead), ``off`` (the
check is not hooked, or does nothing). Read when used, so a process may change it. Any other value
logs one line naming the accepted values and is the default: a typo must neither stop vLLM nor
switch the check off. Shared by the light plugin module and the heavy check; imports nothing.
"""

from __future__ import annotations

import logging
import os

__all__ = ["MODE_ENV", "POLICIES", "log", "log_once", "policy"]

log = logging.getLogger("attn_contracts.vllm")

MODE_ENV = "ATTN_CONTRACTS_VLLM"
#: what the hook does with a refusal; the first is the default
POLICIES = ("error", "warn", "off")
_said: set[str] = set()  # lines logged once per process


def log_once(level: int, text: str) -> None:
    """Log ``text`` the first time this process says it: vLLM calls its DCP check (and loads
    plugins) more than once per process, and each rank logs for itself anyway."""
    if text not in _said:
        _said.add(text)
        log.log(level, "%s", text)


def policy() -> str:
    """``ATTN_CONTRACTS_VLLM`` read now: one of :data:`POLICIES`; unset, empty or anything else is
    the default (the last logged once, with the accepted values)."""
    raw = os.environ.get(MODE_ENV, "")
    value = raw.strip().lower()
    if value in POLICIES:
        return value
    if value:
        log_once(logging.WARNING, f"attn-contracts: {MODE_ENV}={raw!r} is not one of "
                 f"{', '.join(POLICIES)}; using {POLICIES[0]} (the default)")
    return POLICIES[0]
