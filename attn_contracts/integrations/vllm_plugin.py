"""The ``vllm.general_plugins`` entry point: vLLM's own DCP check, hooked at no cost to a process
that never runs it.

vLLM loads its general plugins in every process it starts (the API server, the engine core, each
worker, the model-inspection subprocess), DCP or not, and a plugin is a guest there. So
:func:`register` imports nothing (not vLLM's modules, not torch, not this project's records): if
``vllm.v1.worker.cp_utils`` is loaded it wraps ``check_attention_cp_compatibility`` at once
(rebinding the modules that imported it by name), else it asks the import system to do so when the
module is first imported (a meta-path finder that leaves once it has), so that the model runners'
``from ... import check_attention_cp_compatibility`` bind the wrapped check. Every vLLM release of
0.24.0-0.33.0 defines the check there (``v1/worker/cp_utils.py``).

The wrapper runs vLLM's check first, as it was. Only with DCP on (``decode_context_parallel_size
> 1``) does it import :mod:`attn_contracts.integrations.vllm` and check the contract of the layers
being started (:func:`~attn_contracts.integrations.vllm.validate_vllm_config`: the impl objects
vLLM built). A rank whose own check fails logs its cause (vLLM may stop the process before its
traceback is printed), then tells its DCP peers through the consensus before the error
propagates, so theirs stop at once with that cause (``rank 1 failed vLLM's own check:
AssertionError: ...``) instead of waiting out the consensus timeout. A fault of this checker
itself (not of the contract) is one warning, and the start goes on: a guest never refuses a
start for its own sake.

``ATTN_CONTRACTS_VLLM`` (:mod:`attn_contracts.integrations.vllm_mode`), read once when vLLM
registers the plugin in a process: ``error``, ``warn`` or ``off``; ``off`` leaves the check
unhooked. ``trace`` and ``trace-warn`` also arm the start-up trace
of a worker process (:mod:`attn_contracts.integrations.vllm_trace`), the check then doing as
``error`` and ``warn``: only in those modes does registering import anything more (the trace's
wiring and :mod:`attn_contracts.tracing`), since the trace must be armed before the worker's
device is up, whether DCP is on or not.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import logging
import sys
import types
from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

from attn_contracts.integrations import vllm_mode
from attn_contracts.integrations.vllm_mode import Mode
from attn_contracts.integrations.vllm_mode import log
from attn_contracts.integrations.vllm_mode import log_once

__all__ = ["CHECK_FUNCTION", "CHECK_MODULE", "install", "register"]

CHECK_MODULE = "vllm.v1.worker.cp_utils"
CHECK_FUNCTION = "check_attention_cp_compatibility"
HOOKED = "__attn_contracts_hook__"  # set on the wrapper: registering twice wraps once
#: this start's ``ATTN_CONTRACTS_VLLM``, read by :func:`register` (the hook reads no variable)
_MODE: list[Mode] = []


def register() -> None:
    """Hook vLLM's DCP check now if its module is loaded, else when it is first imported.

    Idempotent (vLLM loads plugins in every process, possibly more than once); costs a dictionary
    look-up and, at most, one finder on ``sys.meta_path`` (with ``ATTN_CONTRACTS_VLLM=trace``,
    also the trace's wiring)."""
    mode = vllm_mode.read()
    _MODE[:] = [mode]
    if mode.policy == "off":
        return
    if mode.traced:
        _arm_trace(mode.value)
    module = sys.modules.get(CHECK_MODULE)
    if module is not None:
        install(module)
    elif not any(isinstance(f, _HookOnImport) for f in sys.meta_path):
        sys.meta_path.insert(0, _HookOnImport())


def _arm_trace(value: str) -> None:
    """The start-up trace, asked for: imported here, never in another mode (it loads the records)."""
    try:
        from attn_contracts.integrations import vllm_trace

        vllm_trace.install(value)
    except Exception as err:  # a diagnostic the user asked for, never a reason to stop vLLM
        log_once(logging.WARNING, f"attn-contracts: the start-up trace could not be armed "
                 f"({type(err).__name__}: {err}); start-up goes on untraced")


def install(module: types.ModuleType) -> None:
    """Wrap the check in ``module`` (and where other loaded modules hold it by name)."""
    original = vars(module).get(CHECK_FUNCTION)
    if original is None or not callable(original):
        log_once(logging.WARNING, f"attn-contracts: vLLM has no {CHECK_MODULE}.{CHECK_FUNCTION} "
                 "to hook; the attention contract is not checked at startup")
        return
    if getattr(original, HOOKED, False):
        return
    checked = _wrap(original)
    setattr(module, CHECK_FUNCTION, checked)
    # modules that imported the check by name before this ran still hold the original; their
    # namespace is read, not getattr: a module's __getattr__ may import (lazy modules)
    for other in list(sys.modules.values()):
        try:
            namespace = vars(other)
        except TypeError:  # sys.modules may hold objects that are no modules and have no vars
            continue
        if isinstance(namespace, dict) and namespace.get(CHECK_FUNCTION) is original:
            namespace[CHECK_FUNCTION] = checked


def _dcp_size(vllm_config: Any) -> int:
    try:
        return int(vllm_config.parallel_config.decode_context_parallel_size)
    except (AttributeError, TypeError, ValueError):
        return 1


def started_mode() -> Mode:
    """The mode this start read (:func:`register`); read now where no registration ran."""
    return _MODE[0] if _MODE else vllm_mode.read()


def _wrap(original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def checked(*args: Any, **kwargs: Any) -> Any:
        vllm_config = args[0] if args else kwargs.get("vllm_config")
        mode = started_mode()
        if _dcp_size(vllm_config) <= 1 or mode.policy == "off":
            return original(*args, **kwargs)
        try:
            result = original(*args, **kwargs)
        except Exception as err:
            # its own cause in this rank's log first: the peers stop at once with it, and vLLM
            # may stop this process before its traceback is printed
            log.error("attn-contracts: %svLLM's own DCP check failed here (%s: %s); telling the "
                      "DCP peers, which stop with this cause", _rank_prefix(), type(err).__name__,
                      err)
            _tell_peers(err)
            raise
        targets = args[1] if len(args) > 1 else kwargs.get("target_layer_names")
        from attn_contracts.findings import ContractError
        from attn_contracts.integrations.vllm import validate_vllm_config

        try:
            validate_vllm_config(vllm_config, targets, mode=mode)
        except ContractError:
            raise
        except Exception as err:
            if getattr(err, _TOLD, False):
                raise  # the peers were told this rank failed: it stops with them
            # the checker's own fault, not the contract's: a guest does not refuse the start
            _abstain(err)
        return result

    setattr(checked, HOOKED, True)
    return checked


_TOLD = "__attn_contracts_told_peers__"  # consensus marks an error its peers were told of


def _abstain(err: BaseException) -> None:
    """Say why this rank goes on unchecked, and let its DCP peers stop waiting for it."""
    cause = f"{type(err).__name__}: {err}".splitlines()[0][:300]
    log.warning("attn-contracts: %sthe attention contract could not be checked (%s); start-up "
                "goes on unchecked", _rank_prefix(), cause)
    try:
        from attn_contracts.consensus import open_round
        from attn_contracts.integrations.vllm import dcp_group

        group = dcp_group()
        if group is not None:
            open_round(group, 30.0).abstain(cause)
    except Exception as inner:  # torch.distributed not up: no peer is waiting
        log.debug("attn-contracts: no DCP peer told (%s: %s)", type(inner).__name__, inner)


def _rank_prefix() -> str:
    """``"DCP rank 1/2: "`` where vLLM's DCP group is up (else empty): which rank says it."""
    try:
        from vllm.distributed.parallel_state import get_dcp_group

        group = get_dcp_group()
        return f"DCP rank {group.rank_in_group}/{group.world_size}: "
    except Exception:  # no DCP group (a plain call, a test): the line goes without a rank
        return ""


def _tell_peers(err: BaseException) -> None:
    """The DCP peers are about to wait for this rank's contract: tell them it failed, and why."""
    try:
        from attn_contracts.consensus import tell_peers
        from attn_contracts.integrations.vllm import dcp_group

        tell_peers(err, "vLLM's own check", group=dcp_group())
    except Exception as inner:  # vLLM's error is the one to raise; ours only delays the peers
        log_once(logging.WARNING, f"attn-contracts: could not tell the DCP peers that vLLM's "
                 f"check failed here ({type(inner).__name__}: {inner})")


class _HookOnImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for :data:`CHECK_MODULE` it asks the finders after it for the real
    spec and hands back that spec with a loader that installs the hook once the module has run."""

    def find_spec(self, fullname: str, path: Sequence[str] | None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if fullname != CHECK_MODULE:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _InstallAfter(spec.loader, self)
        return spec


class _InstallAfter(importlib.abc.Loader):
    """The module's own loader, then :func:`install`; every other attribute (``get_source``,
    ``get_filename``: what ``inspect`` reads) is the original loader's."""

    def __init__(self, inner: Any, finder: _HookOnImport):
        self._inner, self._finder = inner, finder

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return self._inner.create_module(spec)  # type: ignore[no-any-return]

    def exec_module(self, module: types.ModuleType) -> None:
        self._inner.exec_module(module)
        if self._finder in sys.meta_path:
            sys.meta_path.remove(self._finder)
        install(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
