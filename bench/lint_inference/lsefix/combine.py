"""Consumers: combines that take the LSE and its base."""

from __future__ import annotations


def combine_rs(out: object, lse: object, group: object, is_lse_base_on_e: bool = True) -> object:
    return out


def combine_ar(out: object, lse: object, group: object, is_lse_base_on_e: bool = True) -> object:
    return out


def combine_a2a(out: object, lse: object, group: object, is_lse_base_on_e: bool = True,
                seq_lens: object = None) -> object:
    return out
