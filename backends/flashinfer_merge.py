"""FlashInfer's merge functions behind the consumer adapter convention (``consumer_adapter.py``).

Signatures read at flashinfer-ai/flashinfer ``flashinfer/cascade.py`` (``merge_state(v_a, s_a, v_b,
s_b) -> (v, s)``, ``merge_state_in_place(v, s, v_other, s_other, mask=None)``, ``merge_states(v
[T, N, H, D], s [T, N, H]) -> (v, s)``). Each adapter only moves the states axis: the two states
become two arguments, or the axis goes second; base and token/head axes pass through as the
verifier built them. FlashInfer is imported inside each call (an optional extra); its kernels take
fp16/bf16 partials on CUDA, so the probes use fp16.
"""

from __future__ import annotations

from typing import Any

import torch

from attn_contracts.backends.adapter import ConsumerAdapter

__all__ = ["merge_state", "merge_state_in_place", "merge_states"]


def _merge_state(o: torch.Tensor, lse: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    import flashinfer

    out, lse_out = flashinfer.merge_state(o[0].contiguous(), lse[0].contiguous(),
                                          o[1].contiguous(), lse[1].contiguous())
    return out, lse_out


def _merge_state_in_place(o: torch.Tensor, lse: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    import flashinfer

    v, s = o[0].clone(), lse[0].clone()  # updated in place: the merged state
    flashinfer.merge_state_in_place(v, s, o[1].contiguous(), lse[1].contiguous())
    return v, s


def _merge_states(o: torch.Tensor, lse: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    import flashinfer

    # [N, T, H, D] → [T, N, H, D] and [N, X, Y] → [X, N, Y]: the states axis second, as the API
    # takes it; X, Y stay whatever the verifier put there
    out, lse_out = flashinfer.merge_states(o.transpose(0, 1).contiguous(),
                                           lse.transpose(0, 1).contiguous())
    return out, lse_out


def _fi(run: Any) -> ConsumerAdapter:
    """FlashInfer's merges: CUDA only, fp16/bf16 partials."""
    return ConsumerAdapter(run=run, requires=("flashinfer",), needs_cuda=True, dtype="float16")


merge_state = _fi(_merge_state)
merge_state_in_place = _fi(_merge_state_in_place)
merge_states = _fi(_merge_states)
