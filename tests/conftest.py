from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # the `fixtures` helpers package


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


# Triton reads TRITON_INTERPRET when a kernel is defined, so it is set before any test imports the
# combine kernels; on a CUDA machine the kernels run natively instead.
if not _cuda():
    os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if _cuda():
        return
    skip = pytest.mark.skip(reason="needs CUDA")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def device() -> str:
    """Where the kernel tests run: the GPU when there is one, else the CPU (Triton interpreter)."""
    return "cuda" if _cuda() else "cpu"


@pytest.fixture
def vllm_log(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """``caplog`` for the vLLM hook's logger (``vllm.attn_contracts``, a child of vLLM's own),
    every level: vLLM's logging config stops ``vllm`` from propagating to the root logger, where
    caplog listens, so the handler goes on the hook's logger itself (which then does not
    propagate, or a process without vLLM's config would record each line twice)."""
    import logging

    logger = logging.getLogger("vllm.attn_contracts")
    level, propagate = logger.level, logger.propagate
    logger.addHandler(caplog.handler)
    logger.setLevel(logging.DEBUG)
    logger.propagate = False
    try:
        yield caplog
    finally:
        logger.removeHandler(caplog.handler)
        logger.setLevel(level)
        logger.propagate = propagate
