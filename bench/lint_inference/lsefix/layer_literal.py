"""Case B with the caller's keyword changed to a literal: the value that must reach the combine."""

from __future__ import annotations

from lsefix.impls import Impl2
from lsefix.manager import Manager


class LiteralLayer:
    def __init__(self, group: object, mode: str, use_pcp: bool) -> None:
        self.impl = Impl2()
        self.manager = Manager(group, mode, is_lse_base_on_e=True, use_pcp=use_pcp, direct=False)

    def forward(self, q: object) -> object:
        out, lse = self.impl.forward_mqa(q)
        return self.manager.combine(out, lse, seq_lens=None)
