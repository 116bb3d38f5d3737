"""A manager built with the base keyword; it keeps the combine it picks (case B)."""

from __future__ import annotations

import functools
from collections.abc import Callable

from lsefix.combine import combine_a2a, combine_ar, combine_rs


class Manager:
    def __init__(self, group: object, mode: str, is_lse_base_on_e: bool, use_pcp: bool,
                 direct: bool) -> None:
        self.group = group
        self.use_a2a = mode == "a2a"
        self.direct = direct
        self.combine = self._init_combine(is_lse_base_on_e, use_pcp)

    def _init_combine(self, is_lse_base_on_e: bool, use_pcp: bool) -> Callable[..., object]:
        if self.direct:
            return functools.partial(self._direct_combine, is_lse_base_on_e=is_lse_base_on_e)
        combine_fn = (
            combine_a2a if self.use_a2a else combine_ar if use_pcp else combine_rs
        )
        return functools.partial(combine_fn, group=self.group, is_lse_base_on_e=is_lse_base_on_e)

    def _direct_combine(self, out: object, lse: object, is_lse_base_on_e: bool,
                        seq_lens: object = None) -> object:
        return combine_a2a(out, lse, self.group, is_lse_base_on_e=is_lse_base_on_e,
                           seq_lens=seq_lens)
