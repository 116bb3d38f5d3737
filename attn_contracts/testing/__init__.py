"""Helpers for tests, examples and the CLI demo, not for serving: a multi-process rank harness
(:mod:`attn_contracts.testing.ranks`). Needs torch; the contract itself never imports this."""
