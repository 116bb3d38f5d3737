"""Deprecated: moved to :mod:`attn_contracts.judge` (every name there reads here too, and warns)."""

from attn_contracts.deprecation import moved

__getattr__ = moved(__name__, "attn_contracts.judge")
