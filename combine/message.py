"""The all-to-all message of the ``a2a`` modes: one layout, read by the pack kernel's launcher
(``ops.pack_a2a``), the collectives (``dcp``), the workspace that sizes the buffers and the direct
all-to-all's symmetric buffers (``direct``).

A message to destination ``j`` (one row of a ``[N, piece]`` uint8 buffer) is the head slice
``O[:, heads_j, :]`` as ``[T, H/N, D]`` in the output dtype from byte 0, then the fp32 bits of
``LSE[:, heads_j]`` as ``[T, H/N]`` from byte ``o_bytes``; each part starts 16-byte aligned
(vector loads, fp32 views).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["A2A_ALIGN", "A2AMessage", "aligned"]

A2A_ALIGN = 16  # bytes: each packed part starts 16-byte aligned (vector loads, fp32 views)


def aligned(nbytes: int, align: int = A2A_ALIGN) -> int:
    """``nbytes`` rounded up to a multiple of ``align``."""
    return -(-nbytes // align) * align


@dataclass(frozen=True)
class A2AMessage:
    """The layout of one step's messages: ``world`` destinations, ``tokens`` rows, ``heads`` per
    destination (``H / N``), ``head_dim``, and the output dtype's size in bytes."""

    world: int
    tokens: int
    heads: int
    head_dim: int
    out_bytes: int

    @property
    def o_bytes(self) -> int:
        """Where a message's LSE starts (the O part, aligned)."""
        return aligned(self.tokens * self.heads * self.head_dim * self.out_bytes)

    @property
    def piece(self) -> int:
        """Bytes of one message: O, then the fp32 LSE, each aligned."""
        return self.o_bytes + aligned(self.tokens * self.heads * 4)

    @property
    def nbytes(self) -> int:
        """Bytes of all ``world`` messages of one buffer."""
        return self.world * self.piece

    def views(self, buf: torch.Tensor, dtype: torch.dtype, *, o_bytes: int | None = None
              ) -> tuple[torch.Tensor, torch.Tensor]:
        """The buffer ``[N, piece]`` (uint8) as ``O [N, T, H/N, D]`` in ``dtype`` and
        ``LSE [N, T, H/N]`` fp32 views (each destination's row: O at byte 0, LSE at ``o_bytes``,
        default: this layout's)."""
        t, hc, d = self.tokens, self.heads, self.head_dim
        at = self.o_bytes if o_bytes is None else o_bytes
        size = torch.finfo(dtype).bits // 8
        o = buf[:, : t * hc * d * size].view(dtype).view(self.world, t, hc, d)
        lse = buf[:, at : at + t * hc * 4].view(torch.float32).view(self.world, t, hc)
        return o, lse
