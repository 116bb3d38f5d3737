"""Engine integrations: one module per engine, the engine imported only when a function is called.

Each maps the engine's own names (vLLM's ``AttentionBackendEnum`` members and their impl classes) to
the records of the kernels those backends call and the combine functions they feed, versioned by
the engine's release, and hooks the engine's startup where it already checks DCP support:

- :mod:`attn_contracts.integrations.vllm`: ``check()``, ``report()``, the ``vllm.general_plugins``
  entry point ``register()`` and ``validate_vllm_startup()``;
- :mod:`attn_contracts.integrations.sglang`: the same mapping for SGLang, read statically.

Nothing here imports torch or an engine at module level (the contract package stays torch-free).

:func:`lint_rules` are what the integrations add to ``attn-contracts lint``: rules over the
linted program that need an engine's own facts (SGLang's backend registry and its table of
bases), handed to the lint by the CLI.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from attn_contracts.lint import EngineRule

__all__ = ["lint_rules"]


def lint_rules() -> tuple[EngineRule, ...]:
    """Every integration's lint rule (:data:`attn_contracts.lint.EngineRule`)."""
    from attn_contracts.integrations import sglang

    return (sglang.lint_rule,)
