"""The layer: an impl built from a class the backend returns (D), a manager given the impl's base (B)."""

from __future__ import annotations

from typing import cast

from lsefix.base import Backend, MLAImpl
from lsefix.manager import Manager


class Layer:
    def __init__(self, backend: Backend, group: object, mode: str, use_pcp: bool) -> None:
        self.backend = backend
        impl_cls = cast(type[MLAImpl], self.backend.get_impl_cls())
        self.impl = impl_cls()
        self.manager = Manager(group, mode, is_lse_base_on_e=self.impl.lse_base_on_e,
                               use_pcp=use_pcp, direct=False)

    def forward(self, q: object) -> object:
        out, lse = self.impl.forward_mqa(q)
        return self.manager.combine(out, lse, seq_lens=None)
