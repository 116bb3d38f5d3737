"""The trace of the real producer and consumer calls (``attn_contracts.trace()``) on the CPU.

Producers: the torch reference (``torch.sdpa_ref``, base e) and the fixtures' base-2, buffer and
dispatch kernels; consumers: the project's combine (``attn_contracts.merge``, a keyword base with
no default) and the fixtures' ``[H, T]`` merge and keyword-with-default merge. The reference a
verdict is checked against is the producers' records (what each call returns) and the line of
each call in this file, never a message text."""

from __future__ import annotations

import functools
import gc
import inspect
import math
import sys
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
import torch

import attn_contracts
from attn_contracts.backends import torch_ref
from attn_contracts.backends.problem import DecodeProblem
from attn_contracts.backends.problem import make_problem
from attn_contracts.combine import merge
from attn_contracts.combine import ops as combine_ops
from attn_contracts.findings import Code
from attn_contracts.findings import ContractError
from attn_contracts.findings import Location
from attn_contracts.findings import Severity
from attn_contracts.registry import Registry
from attn_contracts.sources import parse_record
from attn_contracts.tracing import Trace
from fixtures import lse_kernels as k
from fixtures.sites import caller_line

LN2 = math.log(2.0)
HERE = "tests/test_trace.py"


def _line() -> Location:
    """The caller's line, as the trace names a call site."""
    return caller_line(HERE)


def _problem(tokens: int = 4, heads: int = 4) -> DecodeProblem:
    # tokens == heads: an [H, T] LSE read as [T, H] fails no shape check, only the trace sees it
    return make_problem(seq_lens=[3 + i for i in range(tokens)], q_len=1, num_heads=heads,
                        num_kv_heads=2, head_dim=16, dtype=torch.float32, seed=tokens)


@pytest.fixture
def reg() -> Registry:
    return k.registry()


def _trace(reg: Registry) -> Trace:
    return attn_contracts.trace(reg, on_error="report")


def _codes(t: Trace) -> list[Code]:
    return [m.code for m in t.report.mismatches]


def _ht_pair(p: DecodeProblem, lse_a: torch.Tensor, lse_b: torch.Tensor) -> None:
    o, _ = torch_ref.run(p)
    k.ht_merge(torch.empty_like(o), o, lse_a, o, lse_b)


_HT_PAIR_LINE = inspect.getsourcelines(_ht_pair)[1] + 2  # its ht_merge call: the consumer site


# --- off: nothing exists --------------------------------------------------------------------------
def _traced_objects() -> dict[str, Any]:
    return {"merge": combine_ops.merge, "combine.merge": attn_contracts.combine.merge,
            "sdpa_decode": torch_ref.sdpa_decode, "run": torch_ref.run,
            "ht_merge": k.ht_merge, "base2_decode": k.base2_decode}


def test_off_nothing_is_wrapped_and_no_mode_is_pushed(reg: Registry) -> None:
    before = _traced_objects()
    assert not torch.overrides._get_current_function_mode_stack()
    assert not any(getattr(f, "__attn_contracts_traced__", False) for f in before.values())
    with _trace(reg) as t:
        during = _traced_objects()
        assert all(getattr(f, "__attn_contracts_traced__", False) for f in during.values())
        assert len(torch.overrides._get_current_function_mode_stack()) == 1
    after = _traced_objects()
    assert all(after[n] is before[n] for n in before)  # the very same objects again
    assert not torch.overrides._get_current_function_mode_stack()
    assert len(t.tags) == 0  # no tag outlives the trace


def test_everything_is_restored_when_the_body_raises(reg: Registry) -> None:
    before = _traced_objects()
    with pytest.raises(KeyError), _trace(reg):
        k.ht_merge  # noqa: B018  (wrapped here)
        raise KeyError("the engine's own failure")
    assert all(_traced_objects()[n] is before[n] for n in before)
    assert not torch.overrides._get_current_function_mode_stack()


def test_a_mode_pushed_inside_the_trace_survives_its_stop(reg: Registry) -> None:
    class Outer(torch.overrides.TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (),
                               kwargs: Any = None) -> Any:
            return func(*args, **(kwargs or {}))

    t = _trace(reg)
    t.start()
    outer = Outer()
    outer.__enter__()
    t.stop()  # the engine's mode, pushed after the trace's, stays on
    assert torch.overrides._get_current_function_mode_stack() == [outer]
    outer.__exit__(None, None, None)


# --- base ---------------------------------------------------------------------------------------
def test_a_wrong_base_is_caught_naming_both_call_sites(reg: Registry) -> None:
    p = _problem()
    with _trace(reg) as t:
        o, lse = k.base2_decode(p); produced = _line()  # noqa: E702
        merge(torch.stack([o, o]), torch.stack([lse, lse]), base="e"); consumed = _line()  # noqa: E702
    (m,) = t.report.mismatches
    assert m.code is Code.AC016 and m.consumer == "attn_contracts.merge"
    assert m.site == consumed and m.producer_sites == (produced,)
    assert m.producers == ("test.base2_decode",) and m.argument == "partial_lse"
    (f,) = t.report.errors()
    assert f.code is Code.AC016 and f.location == consumed


def test_the_same_lse_with_the_right_base_is_clean(reg: Registry) -> None:
    p = _problem()
    with _trace(reg) as t:
        o, lse = k.base2_decode(p)
        merge(torch.stack([o, o]), torch.stack([lse, lse]), base="2")
        o, lse = torch_ref.sdpa_decode(p)
        merge(torch.stack([o, o]), torch.stack([lse, lse]), base="e")
    assert t.report.findings == []
    assert t.report.consumer_calls["attn_contracts.combine.merge"] == 2


@pytest.mark.parametrize("convert", [
    pytest.param(lambda x: x * LN2, id="times-ln2"),
    pytest.param(lambda x: LN2 * x, id="ln2-times"),
    pytest.param(lambda x: x / (1.0 / LN2), id="over-log2e"),
    pytest.param(lambda x: torch.mul(x, LN2), id="torch.mul"),
    pytest.param(lambda x: x.clone().mul_(LN2), id="mul_"),
])
def test_a_correct_conversion_is_not_flagged(reg: Registry, convert: Any) -> None:
    p = _problem()
    with _trace(reg) as t:
        o, lse = k.base2_decode(p)
        ln = convert(lse)  # base 2 → e
        merge(torch.stack([o, o]), torch.stack([ln, ln]), base="e")
    assert t.report.findings == [] and t.report.conversions >= 1
    assert t.report.untagged == {}  # the converted LSE was checked, not skipped


def test_a_conversion_of_the_wrong_base_is_an_error_at_the_conversion(reg: Registry) -> None:
    p = _problem()
    with _trace(reg) as t:
        o, lse = torch_ref.sdpa_decode(p)  # already base e
        twice = lse * LN2; where = _line()  # noqa: E702
        merge(torch.stack([o, o]), torch.stack([twice, twice]), base="e")
    (m,) = t.report.mismatches
    assert m.code is Code.AC016 and m.site == where and m.consumer == ""
    assert m.producers == ("torch.sdpa_ref",)


def test_scaling_by_another_factor_drops_the_tag(reg: Registry) -> None:
    p = _problem()
    with _trace(reg) as t:
        o, lse = k.base2_decode(p)
        merge(torch.stack([o, o]), torch.stack([lse, lse]) * 0.5, base="e")
    assert t.report.findings == []
    assert sum(t.report.untagged.values()) == 1  # seen, but not an LSE the trace can vouch for


# --- following the tag -----------------------------------------------------------------------------
def test_the_tag_follows_view_transpose_contiguous_clone_to(reg: Registry) -> None:
    p = _problem()
    with _trace(reg) as t:
        _, lse = k.base2_decode(p); produced = _line()  # noqa: E702
        x = lse.view(4, 4).transpose(0, 1).contiguous().clone().to(torch.float32).to("cpu")
        assert t.tags[x].bases == ("2",) and t.tags[x].axes == ("H", "T")
        y = lse.T.contiguous()
        assert t.tags[y].layout() == "head_token"
        assert t.tags[y.unsqueeze(0).squeeze(0)[:, :2]].axes == ("H", "T")
        _ht_pair(p, x, y)  # base 2 into a base-e merge, both arguments
    assert [(m.code, m.argument) for m in t.report.mismatches] == [
        (Code.AC016, "prefix_lse"), (Code.AC016, "suffix_lse")]
    assert all(m.producer_sites == (produced,) for m in t.report.mismatches)
    assert t.report.mismatches[0].site == Location(HERE, _HT_PAIR_LINE)
    assert t.report.followed >= 8


def test_a_layout_read_the_wrong_way_round_is_caught(reg: Registry) -> None:
    p = _problem()  # T == H: the shapes agree, the layouts do not
    with _trace(reg) as t:
        _, lse = torch_ref.sdpa_decode(p)  # [T, H]
        _ht_pair(p, lse.transpose(0, 1).contiguous(), lse.contiguous())
    (m,) = t.report.mismatches
    assert m.code is Code.AC017 and m.argument == "suffix_lse"


def test_a_reshape_is_not_a_transpose(reg: Registry) -> None:
    p = _problem()
    with _trace(reg) as t:
        _, lse = torch_ref.sdpa_decode(p)
        wrong = lse.reshape(4, 4)  # [T, H] memory called [H, T]: still token_head
        _ht_pair(p, lse.t().contiguous(), wrong)
    assert _codes(t) == [Code.AC017]


def test_the_states_axis_of_a_stack_is_checked(reg: Registry) -> None:
    p = _problem(tokens=2)  # N == T: [T, N, H] passes for [N, T, H] unless the trace sees it
    with _trace(reg) as t:
        o, lse = torch_ref.sdpa_decode(p)
        right = torch.stack([lse, lse])  # [N, T, H]
        k.keyword_merge(torch.stack([o, o]), right)
        wrong = torch.stack([lse, lse], dim=1).transpose(0, 1)  # [N, T, H] again: clean
        k.keyword_merge(torch.stack([o, o]), wrong)
        k.keyword_merge(torch.stack([o, o]), torch.stack([lse, lse], dim=1))  # [T, N, H]
    assert _codes(t) == [Code.AC017]


def test_a_stack_of_two_bases_is_caught(reg: Registry) -> None:
    p = _problem()
    with _trace(reg) as t:
        o, e = torch_ref.sdpa_decode(p)
        _, two = k.base2_decode(p)
        merge(torch.stack([o, o]), torch.stack([e, two]), base="e")
    (m,) = t.report.mismatches
    assert m.code is Code.AC016 and set(m.producers) == {"torch.sdpa_ref", "test.base2_decode"}


def test_tags_keep_no_tensor_alive(reg: Registry) -> None:
    p = _problem()
    with _trace(reg) as t:
        _, lse = k.base2_decode(p)
        view = lse.transpose(0, 1)
        refs = [weakref.ref(lse), weakref.ref(view)]
        assert len(t.tags) == 2
        del lse, view
        gc.collect()
        assert [r() for r in refs] == [None, None] and len(t.tags) == 0


# --- what a call tells the consumer -------------------------------------------------------------
def test_a_keyword_base_and_its_default(reg: Registry) -> None:
    p = _problem()
    with _trace(reg) as t:
        o, e = torch_ref.sdpa_decode(p)
        _, two = k.base2_decode(p)
        oo = torch.stack([o, o])
        k.keyword_merge(oo, torch.stack([e, e]))  # the default, True: right
        k.keyword_merge(oo, torch.stack([two, two]), is_lse_base_on_e=False)  # right
        k.keyword_merge(oo, torch.stack([two, two])); omitted = _line()  # noqa: E702
        k.keyword_merge(oo, torch.stack([e, e]), is_lse_base_on_e=False); passed = _line()  # noqa: E702
    assert [(m.code, m.site) for m in t.report.mismatches] == [(Code.AC016, omitted),
                                                               (Code.AC016, passed)]


def test_an_lse_buffer_is_tagged(reg: Registry) -> None:
    p = _problem()
    with _trace(reg) as t:
        buf = torch.empty(4, 4)
        o = k.decode_into(p, lse=buf)
        merge(torch.stack([o, o]), torch.stack([buf, buf]), base="2")
    (m,) = t.report.mismatches
    assert m.code is Code.AC016 and m.producers == ("test.decode_into",)


def test_a_buffer_overwritten_by_something_else_loses_its_tag(reg: Registry) -> None:
    p = _problem()
    with _trace(reg) as t:
        buf = torch.empty(4, 4)
        o = k.decode_into(p, lse=buf)
        buf.copy_(torch.zeros(4, 4))
        merge(torch.stack([o, o]), torch.stack([buf, buf]), base="2")
    assert t.report.findings == [] and sum(t.report.untagged.values()) == 1


def test_the_call_chooses_the_base_or_leaves_it_to_dispatch(reg: Registry) -> None:
    p = _problem()  # four heads: "auto" picks the base-2 backend
    with _trace(reg) as t:
        o, lse = k.dispatch_decode(p, return_lse_base="basee")
        merge(torch.stack([o, o]), torch.stack([lse, lse]), base="e")  # right
        o, lse = k.dispatch_decode(p, backend="natural")
        merge(torch.stack([o, o]), torch.stack([lse, lse]), base="2"); wrong = _line()  # noqa: E702
        o, lse = k.dispatch_decode(p); auto = _line()  # noqa: E702
        merge(torch.stack([o, o]), torch.stack([lse, lse]), base="e")
    assert [(m.code, m.site) for m in t.report.mismatches] == [(Code.AC016, wrong)]
    (dispatch,) = [f for f in t.report.findings if f.code is Code.AC028]
    assert dispatch.severity is Severity.WARNING and dispatch.location == auto


# --- where the functions are reached --------------------------------------------------------------
def test_aliases_and_partials_made_before_the_trace_are_traced(reg: Registry) -> None:
    p = _problem()
    bound = functools.partial(merge, base="e")  # made before: holds merge itself
    alias = sys.modules[__name__].__dict__["merge"]  # this module's own `from ... import merge`
    with _trace(reg) as t:
        o, lse = k.base2_decode(p)
        bound(torch.stack([o, o]), torch.stack([lse, lse]))
        assert sys.modules[__name__].__dict__["merge"] is not alias
    assert _codes(t) == [Code.AC016]
    assert bound.func is combine_ops.merge and not hasattr(bound.func, "__attn_contracts_traced__")
    assert any(r.startswith("functools.partial(") for r in t.report.rebound)


def test_a_placeholder_bound_under_many_names_is_wrapped_under_its_records_name_only(
        reg: Registry) -> None:
    stub = k.absent_helper
    with _trace(reg):
        assert getattr(k.absent_decode, "__attn_contracts_traced__", False)
        assert k.absent_helper is stub  # another kernel's name, not an alias of this one


def test_views_inside_a_custom_op_are_followed(reg: Registry) -> None:
    p = _problem()
    with _trace(reg) as t:
        o, two = k.base2_decode(p)
        _, e = torch_ref.sdpa_decode(p)
        out = torch.empty_like(o)
        torch.ops.attn_contracts_test.opaque_ht_merge(out, o, e, o, e)  # right: no finding
        k.opaque_ht_merge(out, o, e, o, two)  # base 2 into the base-e merge inside the op
    assert _codes(t) == [Code.AC016]
    assert t.report.consumer_calls["fixtures.lse_kernels.ht_merge"] == 2


def test_an_absent_function_is_skipped_with_a_note() -> None:
    reg = k.registry()
    raw = dict(k.RECORDS[0], name="test.absent", calls=[
        {"function": "no_such_package.kernel"},
        {"function": "attn_contracts.backends.torch_ref.no_such_function"},
        {"function": "attn_contracts.backends.torch_ref.TOLERANCE_MISSING.run"}])
    reg.add(parse_record(raw)[0][0])
    with attn_contracts.trace(reg, on_error="report") as t:
        pass
    why = dict(t.report.skipped)
    assert "is not imported" in why["no_such_package.kernel"]
    assert "no_such_function" in why["attn_contracts.backends.torch_ref.no_such_function"]
    assert "attn_contracts.backends.torch_ref.TOLERANCE_MISSING.run" in why


def test_errors_raise_at_the_end_of_the_block_by_default(reg: Registry) -> None:
    p = _problem()
    with pytest.raises(ContractError) as err, attn_contracts.trace(reg):
        o, lse = k.base2_decode(p)
        merge(torch.stack([o, o]), torch.stack([lse, lse]), base="e")
    assert err.value.codes == [Code.AC016]


def test_a_trace_runs_once() -> None:
    t = attn_contracts.trace(on_error="report")
    with t:
        pass
    with pytest.raises(RuntimeError):
        t.start()


def test_torch_compile_sees_no_trace(reg: Registry) -> None:
    def f(x: torch.Tensor) -> torch.Tensor:
        return (x.transpose(0, 1) * LN2).contiguous()

    compiled = torch.compile(f, fullgraph=True, backend="eager")
    x = torch.randn(3, 5)
    from torch._dynamo.variables.torch_function import torch_function_mode_stack_state_mgr

    at_compile: list[list[Any]] = []

    def seen(gm: torch.fx.GraphModule, inputs: Any) -> Any:
        at_compile.append(list(torch_function_mode_stack_state_mgr.stack))
        return gm.forward

    compiled_seen = torch.compile(f, fullgraph=True, backend=seen)
    with _trace(reg):
        got = compiled(x)  # fullgraph: a graph break inside the mode would raise here
        compiled_seen(x)
        assert len(torch.overrides._get_current_function_mode_stack()) == 1  # back after it
    torch.testing.assert_close(got, f(x))
    assert at_compile == [[]]  # the stack Dynamo took (its guards' record) holds no trace


def test_the_report_counts_and_times(reg: Registry) -> None:
    p = _problem()
    with _trace(reg) as t:
        o, lse = k.base2_decode(p)
        merge(torch.stack([o, o]), torch.stack([lse * LN2] * 2), base="e")
    r = t.report
    assert r.producer_calls == {"fixtures.lse_kernels.base2_decode": 1}
    assert r.tagged == 1 and r.conversions == 1 and r.torch_calls >= 3
    assert 0 < r.overhead_s < r.wall_s and r.setup_s > 0
    assert r.verdict == "ok" and r.to_json()["verdict"] == "ok"


@pytest.fixture(autouse=True)
def _no_mode_left() -> Iterator[None]:
    yield
    assert not torch.overrides._get_current_function_mode_stack()
