"""The base classes: the base-e default lives here and is inherited (case A)."""

from __future__ import annotations


class ImplBase:
    lse_base_on_e: bool = True

    def forward(self, q: object) -> object:
        raise NotImplementedError


class MLAImpl(ImplBase):
    def forward_mqa(self, q: object) -> tuple[object, object]:
        raise NotImplementedError


class Backend:
    def get_impl_cls(self) -> type[ImplBase]:
        raise NotImplementedError
