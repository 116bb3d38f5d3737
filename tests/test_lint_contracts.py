"""A combine's body is read as its own consumer record says it is called (lint/contracts.py):
the kernels it launches are judged like any combine call, and the LSE it returns against what
its record says that LSE is. Each case a bug (an error at the line) and its fix (clean)."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from attn_contracts.lint import main
from fixtures.records import MYLIB_RECORDS
from fixtures.records import consumer_toml

#: ``mylib.combine`` returning its merged LSE in the base it was given (``output.lse_base =
#: "input"``), a kernel ``ops._k`` told its base by the constexpr ``IS_E``, and a reduce of
#: ``ops`` that returns its merged LSE in the base it is told
_RETURNS = 'output = { returns_lse = true, lse_base = "input" }'
_HEAD, _, _TAIL = MYLIB_RECORDS.rpartition("output = { returns_lse = false }")  # mylib.combine's
RECORDS = _HEAD + _RETURNS + _TAIL + consumer_toml(
    "eng.kernel", "ops._k", '{ kind = "keyword", keyword = "IS_E", values = { "True" = "e", '
    '"False" = "2" } }', lse_args='["1", "lse_ptr"]') + consumer_toml(
    "eng.told_reduce", "ops.told_reduce", '{ kind = "keyword", keyword = "is_lse_base_on_e", '
    'values = { "True" = "e", "False" = "2" } }').replace(
        "output = { returns_lse = false }", _RETURNS)

CALLER = """
    from mylib import combine, decode
    def step(q):
        out, lse = decode(q, return_lse=True)
        return combine(out, lse, is_lse_base_on_e=False)
    """

#: a kernel launched through a context object, as ``ctx.call_kernel(kernel, grid, *args,
#: **constexprs)`` launches it; the combine rescales a base-2 LSE to natural log first
KERNEL_BUG = {"ops.py": """
    import triton
    import triton.language as tl
    @triton.jit
    def _k(out_ptr, lse_ptr, n, IS_E: tl.constexpr):
        tl.store(out_ptr, tl.load(lse_ptr))
    class Launcher:
        def call_kernel(self, kernel, grid, *args, **constexprs):
            kernel[grid](*args, **constexprs)
    """, "mylib.py": """
    import math
    from ops import Launcher, _k
    def combine(out, lse, is_lse_base_on_e):
        if not is_lse_base_on_e:
            lse = lse * math.log(2.0)
        args = (out, lse, 4)
        Launcher().call_kernel(_k, (1,), *args, **{"IS_E": is_lse_base_on_e})
        return out
    def decode(q, return_lse=False):
        return q, q
    """, "layer.py": CALLER}

#: a combine that merges in natural log and hands its merged LSE back unconverted
RETURNED_BUG = {"ops.py": """
    def told_reduce(out, lse, is_lse_base_on_e):
        return out, lse
    """, "mylib.py": """
    import math
    from ops import told_reduce
    def combine(out, lse, is_lse_base_on_e):
        lse = lse * (1.0 if is_lse_base_on_e else math.log(2.0))
        return _merge(out, lse)
    def _merge(out, lse):
        return told_reduce(out, lse, is_lse_base_on_e=True)
    def decode(q, return_lse=False):
        return q, q
    """, "layer.py": CALLER}


def _lint(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
          files: dict[str, str]) -> list[dict[str, object]]:
    root = tmp_path / name
    root.mkdir()
    for fname, text in files.items():
        (root / fname).write_text(textwrap.dedent(text))
    (tmp_path / "records.toml").write_text(RECORDS)
    main([str(root), "--records", str(tmp_path / "records.toml"), "--format", "json"])
    found: list[dict[str, object]] = json.loads(capsys.readouterr().out)
    return found


def _errors(found: list[dict[str, object]]) -> list[tuple[str, str, object]]:
    return [(str(f["code"]), Path(str(f["path"])).name, f["line"]) for f in found
            if f["severity"] == "error"]


def test_a_kernel_launched_through_a_helper_is_judged_by_its_record(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The combine converts a base-2 LSE to natural log, then tells the kernel (through a
    launcher's ``**constexprs``) the base it was given: an error at the launch. Without the
    conversion the kernel reads what it is told."""
    assert _errors(_lint(tmp_path, capsys, "bug", KERNEL_BUG)) == [("AC023", "mylib.py", 8)]
    fixed = {**KERNEL_BUG, "mylib.py": KERNEL_BUG["mylib.py"].replace(
        "lse = lse * math.log(2.0)", "pass")}
    assert _errors(_lint(tmp_path, capsys, "fix", fixed)) == []


def test_a_combine_returning_another_base_than_its_record_says_is_ac008(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Its record says the merged LSE comes back in the base the combine was given; told
    base 2, it merges in natural log and returns that: AC008 at the ``return`` that hands it
    back first (the helper's). Converted back, it is clean."""
    found = _lint(tmp_path, capsys, "bug", RETURNED_BUG)
    assert _errors(found) == [("AC008", "mylib.py", 8)]
    ac008 = next(f for f in found if f["code"] == "AC008")
    assert ac008["found"] == "e" and ac008["allowed"] == "2"
    fixed = {**RETURNED_BUG, "mylib.py": RETURNED_BUG["mylib.py"].replace(
        "return _merge(out, lse)",
        "out, merged = _merge(out, lse)\n"
        "        return out, merged * (1.0 if is_lse_base_on_e else math.log2(math.e))")}
    assert _errors(_lint(tmp_path, capsys, "fix", fixed)) == []


#: a combine that packs its LSE into a send buffer through a view bound to a name (a copy
#: into the view writes the buffer), exchanges the buffer over ``all_to_all_single`` through
#: reinterpreting views, and reads the LSE back out of the received buffer's view
PACKED_BUG = {"ops.py": RETURNED_BUG["ops.py"], "mylib.py": """
    import torch
    from ops import told_reduce
    def _merge(out, lse, is_lse_base_on_e=True):
        o, _ = told_reduce(out, lse, is_lse_base_on_e=is_lse_base_on_e)
        return o
    def _pack(o, lse, dst_o, dst_lse):
        dst_o.copy_(o)
        dst_lse.copy_(lse)
    def combine(out, lse, is_lse_base_on_e, group=None):
        send = torch.empty(4, 8)
        words = send.view(torch.float32)
        _pack(out, lse, send[:, :4], words[:, 5])
        recv = torch.empty_like(send)
        group.all_to_all_single(recv.reshape(-1).view(torch.uint8),
                                send.reshape(-1).view(torch.uint8))
        received = recv.view(torch.float32)[:, 5]
        return _merge(recv, received)
    def decode(q, return_lse=False):
        return q, q
    """, "layer.py": CALLER}


def test_an_lse_packed_through_views_and_exchanged_is_followed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The LSE written into a view of the send buffer is in the buffer; the collective hands
    it to the received buffer it writes through views; read back, it reaches the merge told
    the helper's default (natural log) whatever the combine was told: an error where the
    helper is called. Passing the base on, it is clean."""
    assert _errors(_lint(tmp_path, capsys, "bug", PACKED_BUG)) == [("AC023", "mylib.py", 18)]
    fixed = {**PACKED_BUG, "mylib.py": PACKED_BUG["mylib.py"].replace(
        "return _merge(recv, received)", "return _merge(recv, received, is_lse_base_on_e)")}
    assert _errors(_lint(tmp_path, capsys, "fix", fixed)) == []
