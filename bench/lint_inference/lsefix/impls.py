"""Two MLA implementations in another module (cases A and D): one inherits base e, one declares 2."""

from __future__ import annotations

from lsefix.base import MLAImpl
from lsefix.kernels import decode_base_2, decode_base_e


class ImplE(MLAImpl):
    def forward_mqa(self, q: object) -> tuple[object, object]:
        return decode_base_e(q)


class Impl2(MLAImpl):
    lse_base_on_e = False

    def forward_mqa(self, q: object) -> tuple[object, object]:
        return decode_base_2(q)


class Impl2Child(Impl2):
    pass
