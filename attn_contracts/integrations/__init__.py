"""Engine integrations: one module per engine, the engine imported only when a function is called.

Each maps the engine's own names (vLLM's ``AttentionBackendEnum`` members and their impl classes) to
the records of the kernels those backends call and the combine functions they feed, versioned by
the engine's release, and hooks the engine's startup where it already checks DCP support:

- :mod:`attn_contracts.integrations.vllm`: ``check()``, ``report()``, the ``vllm.general_plugins``
  entry point ``register()`` and ``validate_vllm_startup()``;
- :mod:`attn_contracts.integrations.sglang`: the same mapping for SGLang, read statically.

Nothing here imports torch or an engine at module level (the contract package stays torch-free).
"""

__all__: list[str] = []
