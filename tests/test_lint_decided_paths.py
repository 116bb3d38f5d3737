"""The paths the interpreter decides as Python does (``try``, ``match``, ``itertools``, ``math``,
Triton pointers, library collectives) never decide one Python would not take: where a program
rebinds, aliases or computes what the rule does not model, the path stays open and the finding
of a base-2 LSE told base e is kept. Each case here lost its finding, or stopped the run, in a
first version of those rules (a review of it)."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from attn_contracts.collector import paused
from fixtures.semantic_pairs import LN2
from fixtures.semantic_pairs import lint_json

HEAD = """
        from mylib import combine, decode
"""


def _errors(tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str,
            kept: tuple[str, ...] = ("error",)) -> list[str]:
    files = {"layer.py": HEAD + body}
    return [str(f["code"]) for f in lint_json(tmp_path, capsys, "case", files)
            if f["severity"] in kept]


CASES = {
    # the guard reads the name the pattern binds: it sees the subject, not the outer k
    "a match guard reads the capture it follows": """
        def on_e(kernel):
            k = "cute"
            match kernel:
                case k if k == "trtllm":
                    return True
            return False
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=on_e("trtllm"))
        """,
    # the body rebinds the key before the lookup: it raises, the handler runs
    "a try body that rebinds its key": """
        BASES = {"fa": False}
        def on_e(name):
            try:
                name = "mla"
                return BASES[name]
            except KeyError:
                return True
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=on_e("fa"))
        """,
    # the subject is evaluated once: the capture holds what pop returned
    "a match subject with a side effect": """
        def on_e():
            opts = {"natural": True}
            match opts.pop("natural", False):
                case v:
                    return v
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=on_e())
        """,
    # True == 1: Python finds the key, and so does the lint (a key is the value Python hashes
    # it as)
    "a lookup by a key of another type": """
        BASES = {1: True}
        def on_e(v):
            try:
                return BASES[v]
            except KeyError:
                return False
        def step(q):
            out, lse = decode(q, return_lse=True)
            return combine(out, lse, is_lse_base_on_e=on_e(True))
        """,
    "a library collective imported under another name": """
        import torch
        from flashinfer.comm.dcp_alltoall import decode_cp_a2a_alltoall as exchange
        from mylib import merge
        def step(q, ws):
            out, lse = decode(q, return_lse=True)
            stats = torch.empty(lse.shape[0], 2)
            stats[:, 0] = lse
            o, s = exchange(out, stats, ws, 0, 2)
            return merge(o, s[:, 0])
        """,
    "a Triton pointer written offset-first": """
        import torch
        import triton
        import triton.language as tl
        from mylib import merge
        @triton.jit
        def _pack(lse_ptr, dst_ptr, stride):
            i = tl.program_id(0)
            tl.store(i * stride + dst_ptr, tl.load(lse_ptr + i))
        def step(q):
            out, lse = decode(q, return_lse=True)
            packed = torch.empty(lse.shape[0], 2)
            _pack[(lse.shape[0],)](lse, packed, packed.stride(0))
            return merge(out, packed)
        """,
}


#: the cases whose base is not read (never decided the wrong way): a warning, not silence
UNREAD: dict[str, str] = {}


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_base_2_lse_told_base_e_stays_an_error(
        name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if name in UNREAD:
        assert UNREAD[name] in _errors(tmp_path, capsys, CASES[name], ("warning",)), name
    else:
        assert "AC023" in _errors(tmp_path, capsys, CASES[name]), name


def test_arithmetic_python_refuses_is_no_value_and_no_crash(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``1 / 0``, ``math.log(8, 1)``, ``math.e % 0``: Python raises, so nothing is known (the
    lint goes on and still reports the edge)."""
    body = f"""
        import math
        def step(q):
            a = 1 / 0
            b = math.log(8, 1)
            c = math.e % 0
            out, lse = decode(q, return_lse=True)
            return combine(out, lse * {LN2}, is_lse_base_on_e=False)
        """
    assert _errors(tmp_path, capsys, body) == ["AC023"]


def test_a_host_that_froze_its_heap_keeps_it_frozen() -> None:
    was = gc.isenabled()
    gc.enable()
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with paused():
            [object() for _ in range(10)]
        assert gc.get_freeze_count() == frozen and gc.isenabled()
    finally:
        gc.unfreeze()
        if not was:
            gc.disable()
