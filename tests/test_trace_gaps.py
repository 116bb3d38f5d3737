"""The trace's gaps of issue 35 item 6, each as a user meets it: in-place conversions, copies into
buffers and slices, wrappers left behind, producers imported late, ``register()``'d records, and
what the report counts as not checked. The expected verdicts come from the fixtures' records (what
each producer returns, what each consumer reads), never from a message text."""

from __future__ import annotations

import functools
import gc
import importlib
import math
import sys
import textwrap
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

import attn_contracts
from attn_contracts import registry as registry_module
from attn_contracts.backends import torch_ref
from attn_contracts.backends.problem import DecodeProblem
from attn_contracts.backends.problem import make_problem
from attn_contracts.combine import merge
from attn_contracts.findings import Code
from attn_contracts.findings import Location
from attn_contracts.registry import Registry
from attn_contracts.sources import parse_record
from attn_contracts.tracing import Trace
from fixtures import lse_kernels as k

LN2 = math.log(2.0)


def _problem() -> DecodeProblem:
    return make_problem(seq_lens=[3, 4, 5, 6], q_len=1, num_heads=4, num_kv_heads=2, head_dim=16,
                        dtype=torch.float32, seed=4)


@pytest.fixture
def reg() -> Registry:
    return k.registry()


def _trace(reg: Registry | None) -> Trace:
    return attn_contracts.trace(reg, on_error="report")


def _codes(t: Trace) -> list[Code]:
    return [m.code for m in t.report.mismatches]


def _traced(f: Any) -> bool:
    return bool(getattr(f, "__attn_contracts_traced__", False))


@pytest.fixture(autouse=True)
def _no_mode_left() -> Iterator[None]:
    yield
    assert not torch.overrides._get_current_function_mode_stack()


# --- in-place conversions relabel ------------------------------------------------------------------
@pytest.mark.parametrize("convert", [
    pytest.param(lambda x: x.__setitem__(slice(None), x * LN2), id="lse[:] = lse * ln2"),
    pytest.param(lambda x: x.__setitem__(Ellipsis, x * LN2), id="lse[...] = lse * ln2"),
    pytest.param(lambda x: x.mul_(LN2), id="lse.mul_(ln2)"),
    pytest.param(lambda x: x.div_(1.0 / LN2), id="lse.div_(log2 e)"),
    pytest.param(lambda x: x.copy_(x * LN2), id="lse.copy_(lse * ln2)"),
])
def test_an_in_place_conversion_relabels_the_lse_and_its_views(reg: Registry,
                                                               convert: Any) -> None:
    p = _problem()
    with _trace(reg) as t:
        o, lse = k.base2_decode(p)
        view = lse.view(4, 4)  # made before the conversion: it sees the same memory
        convert(lse)
        merge(torch.stack([o, o]), torch.stack([lse, lse]), base="e")
        merge(torch.stack([o, o]), torch.stack([view, view]), base="e")
    assert t.report.findings == [] and t.report.conversions >= 1
    assert t.report.untagged == {}  # checked, not skipped


def test_a_converted_lse_copied_into_a_buffer_is_the_converted_base(reg: Registry) -> None:
    p = _problem()
    with _trace(reg) as t:
        o, lse = k.base2_decode(p)
        buf = torch.empty(4, 4)
        buf.copy_(lse * LN2)
        merge(torch.stack([o, o]), torch.stack([buf, buf]), base="e")  # right
        merge(torch.stack([o, o]), torch.stack([buf, buf]), base="2")  # wrong
    assert _codes(t) == [Code.AC016]


def test_an_unfollowed_in_place_change_makes_the_label_unchecked_not_kept(reg: Registry) -> None:
    p = _problem()
    with _trace(reg) as t:
        o, lse = k.base2_decode(p)
        lse.add_(1.0)  # no longer the producer's LSE: the trace cannot vouch for its base
        merge(torch.stack([o, o]), torch.stack([lse, lse]), base="2")
    assert t.report.findings == [] and sum(t.report.untagged.values()) == 1
    assert t.report.verdict == "not checked"


# --- copies into buffers and slices carry the label ---------------------------------------------
@pytest.mark.parametrize("fill", [
    pytest.param(lambda buf, lse: buf.__setitem__(slice(None), lse), id="buf[:] = lse"),
    pytest.param(lambda buf, lse: buf.__setitem__(slice(0, 4), lse), id="buf[:n] = lse"),
    pytest.param(lambda buf, lse: buf[:4].copy_(lse), id="buf[:n].copy_(lse)"),
    pytest.param(lambda buf, lse: buf.__setitem__(slice(None), lse.expand(4, 4)),
                 id="buf[:] = lse.expand"),
])
def test_a_base_2_lse_copied_into_a_buffer_reaches_a_base_e_merge_seen(reg: Registry,
                                                                        fill: Any) -> None:
    p = _problem()
    with _trace(reg) as t:
        o, lse = k.base2_decode(p)
        buf = torch.empty(4, 4)
        fill(buf, lse)
        merge(torch.stack([o, o]), torch.stack([buf, buf]), base="e")
    assert _codes(t) == [Code.AC016]


def test_a_buffer_of_states_filled_slice_by_slice(reg: Registry) -> None:
    p = _problem()
    with _trace(reg) as t:
        o, lse = k.base2_decode(p)
        buf = torch.empty(2, 4, 4)
        buf[0] = lse
        buf[1].copy_(lse)
        merge(torch.stack([o, o]), buf, base="2")  # right
        merge(torch.stack([o, o]), buf, base="e"); wrong = _where()  # noqa: E702
        merge(torch.stack([o, o]), lse.unsqueeze(0).expand(2, 4, 4), base="e")
    assert [(m.code, m.site == wrong) for m in t.report.mismatches] == [
        (Code.AC016, True), (Code.AC016, False)]


def test_shards_of_two_bases_in_one_buffer_are_an_error_at_the_merge(reg: Registry) -> None:
    p = _problem()
    with _trace(reg) as t:
        o, two = k.base2_decode(p)
        _, e = torch_ref.sdpa_decode(p)
        buf = torch.empty(2, 4, 4)
        buf[0] = two  # one shard's producer
        buf[1] = e  # another's
        merge(torch.stack([o, o]), buf, base="e")
    (m,) = t.report.mismatches
    assert m.code is Code.AC016
    assert set(m.producers) == {"test.base2_decode", "torch.sdpa_ref"}


def _converted_slice_by_slice(p: DecodeProblem) -> tuple[torch.Tensor, torch.Tensor]:
    """Base-2 shards copied into a buffer, then the whole buffer converted in place."""
    o, lse = k.base2_decode(p)
    buf = torch.empty(2, 4, 4)
    buf[0] = lse
    buf[1] = lse
    buf[:] = buf * LN2
    return o, buf


def _shards_of_one_base(p: DecodeProblem) -> tuple[torch.Tensor, torch.Tensor]:
    o, a = torch_ref.sdpa_decode(p)
    _, b = torch_ref.sdpa_decode(p)
    buf = torch.empty(2, 4, 4)
    buf[0] = a
    buf[1] = b
    return o, buf


def _overwritten_whole(p: DecodeProblem) -> tuple[torch.Tensor, torch.Tensor]:
    """A base-2 buffer overwritten whole by base-e values: it takes the new label."""
    o, two = k.base2_decode(p)
    _, e = torch_ref.sdpa_decode(p)
    buf = torch.empty(4, 4)
    buf[:] = two
    buf[:] = e  # the base-2 values are gone
    return o, torch.stack([buf, buf])


@pytest.mark.parametrize("fill", [
    pytest.param(_converted_slice_by_slice, id="an in-place conversion of the buffer relabels it"),
    pytest.param(_shards_of_one_base, id="shards of one base in one buffer"),
    pytest.param(_overwritten_whole, id="a buffer overwritten whole takes the new label")])
def test_a_buffer_of_base_e_values_merged_as_e_is_clean(reg: Registry, fill: Any) -> None:
    with _trace(reg) as t:
        o, buf = fill(_problem())
        merge(torch.stack([o, o]), buf, base="e")
    assert t.report.findings == [] and t.report.untagged == {}


def _where() -> Location:
    return Location("tests/test_trace_gaps.py", sys._getframe(1).f_lineno)


# --- nothing of the trace outlives it ---------------------------------------------------------------
def _write_module(tmp_path: Path, name: str, body: str) -> None:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))


@pytest.fixture
def on_path(tmp_path: Path) -> Iterator[Path]:
    sys.path.insert(0, str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    sys.path.remove(str(tmp_path))
    for name in set(sys.modules) - before:
        if name.startswith("late_"):
            del sys.modules[name]


def test_wrappers_taken_during_the_trace_are_put_back_and_nothing_keeps_it_alive(
        reg: Registry, on_path: Path) -> None:
    _write_module(on_path, "late_user", """
        from fixtures.lse_kernels import ht_merge, keyword_merge as kw
        TABLE = {"merge": ht_merge}
        """)
    original, original_kw = k.ht_merge, k.keyword_merge
    t = _trace(reg)
    with t:
        late = importlib.import_module("late_user")  # binds the wrappers under its names
        made = functools.partial(k.ht_merge, torch.empty(4, 4, 16))
        kept = [k.keyword_merge]
        assert _traced(late.ht_merge) and _traced(made.func) and _traced(kept[0])
    assert late.ht_merge is original and late.kw is original_kw
    assert late.TABLE["merge"] is original and kept[0] is original_kw
    assert made.func is original
    gone = weakref.ref(t)
    del t
    gc.collect()
    assert gone() is None  # no wrapper, hook or mode holds the trace


def test_a_wrapper_kept_where_the_trace_cannot_reach_does_nothing_after_it(reg: Registry) -> None:
    p = _problem()
    t = _trace(reg)
    with t:
        hidden = (k.keyword_merge,)  # a tuple: nothing can be put back into it
    o, lse = k.base2_decode(p)
    hidden[0](torch.stack([o, o]), torch.stack([lse, lse]))  # runs as the library's own
    assert t.report.consumer_calls == {}
    gone = weakref.ref(t)
    del t
    gc.collect()
    assert gone() is None


# --- producers imported after the trace starts ------------------------------------------------------
def _late_registry(name: str) -> Registry:
    reg = k.registry()
    raw = dict(k.RECORDS[0], name=f"test.{name}", calls=[{"function": f"{name}.decode"}])
    reg.add(parse_record(raw)[0][0])
    return reg


_LATE = """
    from fixtures.lse_kernels import base2_decode

    def decode(p):
        return base2_decode(p)
    """


def test_a_producer_imported_after_the_trace_starts_is_checked(on_path: Path) -> None:
    _write_module(on_path, "late_producer", _LATE)
    p = _problem()
    with _trace(_late_registry("late_producer")) as t:
        mod = importlib.import_module("late_producer")
        o, lse = mod.decode(p)
        merge(torch.stack([o, o]), torch.stack([lse, lse]), base="e")
    (m,) = t.report.mismatches
    assert m.code is Code.AC016 and m.producers == ("test.late_producer",)
    assert "late_producer.decode" in t.report.wrapped_late
    assert not _traced(mod.decode)


def test_an_lse_from_an_unknown_producer_is_not_checked_never_ok(reg: Registry) -> None:
    p = _problem()
    with _trace(reg) as t:
        o, lse = torch_ref.sdpa_decode.__wrapped__(p)  # a producer the records do not name
        merge(torch.stack([o, o]), torch.stack([lse, lse]), base="e")
    r = t.report
    assert r.findings == [] and sum(r.untagged.values()) == 1
    assert r.verdict == "not checked" and "(ok)" not in r.summary()
    assert "1 not checked" in r.summary()


def test_a_clean_trace_of_checked_calls_is_ok(reg: Registry) -> None:
    p = _problem()
    with _trace(reg) as t:
        o, lse = torch_ref.sdpa_decode(p)
        merge(torch.stack([o, o]), torch.stack([lse, lse]), base="e")
    assert t.report.verdict == "ok" and "(ok)" in t.report.summary()


# --- the registry's records --------------------------------------------------------------------
def test_trace_without_arguments_sees_registered_records(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(registry_module, "_DEFAULT", Registry())
    for raw in k.RECORDS:
        attn_contracts.register(parse_record(raw)[0][0])
    p = _problem()
    with attn_contracts.trace(on_error="report") as t:
        o, lse = k.base2_decode(p)
        merge(torch.stack([o, o]), torch.stack([lse, lse]), base="e")
    assert _codes(t) == [Code.AC016]


# --- numbers and exceptions are the program's own ------------------------------------------------
def _program(p: DecodeProblem) -> list[torch.Tensor]:
    o, lse = k.base2_decode(p)
    buf = torch.empty(2, 4, 4)
    buf[0] = lse
    buf[1].copy_(lse)
    buf.mul_(LN2)
    return [buf, merge(torch.stack([o, o]), buf, base="e")[0]]


def test_numbers_are_bit_identical_with_and_without_the_trace(reg: Registry) -> None:
    plain = _program(_problem())
    with _trace(reg) as t:
        traced = _program(_problem())
    assert all(torch.equal(a, b) for a, b in zip(plain, traced, strict=True))
    assert t.report.findings == []


def test_an_exception_in_a_traced_setitem_propagates(reg: Registry) -> None:
    p = _problem()
    with pytest.raises(RuntimeError), _trace(reg):
        _, lse = k.base2_decode(p)
        torch.empty(3, 3)[:] = lse  # shapes that do not fit: torch's own error


def test_shards_of_two_bases_read_back_region_by_region_are_clean(reg: Registry) -> None:
    """One workspace, two regions, two producers: each region read back by the merge of its own
    base is right; the workspace merged whole is not."""
    p = _problem()
    with _trace(reg) as t:
        o, two = k.base2_decode(p)
        _, e = torch_ref.sdpa_decode(p)
        work = torch.empty(8, 4)
        work[:4] = two
        work[4:].copy_(e)
        merge(torch.stack([o, o]), torch.stack([work[:4], work[:4]]), base="2")
        merge(torch.stack([o, o]), torch.stack([work[4:], work[4:]]), base="e")
        assert t.report.findings == [] and t.report.untagged == {}
        merge(torch.stack([o, o]), work.view(2, 4, 4), base="e")
    (m,) = t.report.mismatches
    assert m.code is Code.AC016


@pytest.mark.parametrize(("produce", "right"), [
    pytest.param(lambda p: torch_ref.sdpa_decode(p), True, id="base-e"),
    pytest.param(lambda p: k.base2_decode(p), False, id="base-2"),
])  # looked up when called: the trace's wrapper
def test_a_natural_log_reduction_keeps_base_e_only(reg: Registry, produce: Any,
                                                   right: bool) -> None:
    p = _problem()
    with _trace(reg) as t:
        o, lse = produce(p)
        halves = torch.stack([lse, lse])  # two partial LSEs of one row set
        whole = torch.logsumexp(halves, dim=0)
        merge(torch.stack([o, o]), torch.stack([whole, whole]), base="e")
    if right:  # base e in, base e out: checked and right
        assert t.report.findings == [] and t.report.untagged == {}
    else:  # base 2 in: what comes out is no LSE of either base: not checked, never ok
        assert t.report.findings == [] and t.report.verdict == "not checked"


def test_a_record_function_imported_where_the_watch_cannot_see_is_not_checked() -> None:
    import types

    reg = _late_registry("late_injected")
    with _trace(reg) as t:
        mod = types.ModuleType("late_injected")  # no import system: no loader to watch

        def decode(p: DecodeProblem) -> Any:
            return k.base2_decode(p)

        mod.decode = decode  # type: ignore[attr-defined]
        sys.modules["late_injected"] = mod
    try:
        assert t.report.late_unchecked == ["late_injected.decode"]
        assert t.report.verdict == "not checked" and "1 late import(s) not wrapped" in \
            t.report.summary()
    finally:
        del sys.modules["late_injected"]


def test_the_overhead_counts_what_cannot_be_timed_from_inside(reg: Registry) -> None:
    p = _problem()
    with _trace(reg) as t:
        o, lse = k.base2_decode(p)
        for _ in range(5):
            merge(torch.stack([o, o]), torch.stack([lse, lse]), base="2")
        torch.nn.functional.relu(o)  # a Python function: torch's override path in Python
    r = t.report
    mode_ns, python_ns, wrap_ns = t._per_call_ns
    assert r.wrapped_calls >= 6  # the producer and five merges, each through its wrapper
    assert 0 < t.python_calls < r.torch_calls
    assert r.dispatch_s == pytest.approx(((r.torch_calls - t.python_calls) * mode_ns
                                          + t.python_calls * python_ns
                                          + r.wrapped_calls * wrap_ns) / 1e9)
    assert r.overhead_s == pytest.approx(r.handler_s + r.dispatch_s)
    assert r.to_json()["dispatch_s"] == r.dispatch_s


def test_a_stack_with_a_part_of_unknown_origin_keeps_the_known_parts_base(reg: Registry) -> None:
    """What the trace knows is still checked: a base-2 part into a base-e merge is an error
    whatever the other part is."""
    p = _problem()
    with _trace(reg) as t:
        o, two = k.base2_decode(p)
        unknown = torch.zeros(4, 4)
        merge(torch.stack([o, o]), torch.stack([two, unknown]), base="e")
    assert _codes(t) == [Code.AC016]


def test_a_late_import_wrapped_on_import_is_not_counted_unchecked(on_path: Path) -> None:
    """A record naming two functions, one imported late: the one wrapped on import is checked,
    and the record's other, absent one is not 'imported during the trace'."""
    _write_module(on_path, "late_pair", _LATE)
    reg = k.registry()
    raw = dict(k.RECORDS[0], name="test.late_pair", calls=[
        {"function": "late_pair.decode"}, {"function": "late_pair_absent.decode"}])
    reg.add(parse_record(raw)[0][0])
    with _trace(reg) as t:
        importlib.import_module("late_pair")
    assert t.report.wrapped_late == ["late_pair.decode"]
    assert t.report.late_unchecked == [] and t.report.verdict == "ok"


def test_producers_writing_regions_of_one_workspace_are_each_checked(reg: Registry) -> None:
    """Two kernels fill the two halves of one LSE workspace through ``lse=`` (each a view that
    dies with the call): each half read back carries its producer's base, and filling the
    second does not make the first unchecked."""
    p = _problem()
    with _trace(reg) as t:
        work = torch.empty(8, 4)
        o = k.decode_into(p, lse=work[:4])
        k.decode_into(p, lse=work[4:])
        merge(torch.stack([o, o]), torch.stack([work[:4], work[4:]]), base="e")  # right
        merge(torch.stack([o, o]), torch.stack([work[:4], work[:4]]), base="2")  # wrong
    assert _codes(t) == [Code.AC016] and t.report.untagged == {}


def test_the_traces_own_failure_is_a_note_and_the_program_runs_on(
        reg: Registry, monkeypatch: pytest.MonkeyPatch) -> None:
    from attn_contracts.tracing.tags import TagMap

    def broken(*args: Any, **kwargs: Any) -> None:
        raise ValueError("the trace's own bug")

    monkeypatch.setattr(TagMap, "write", broken)
    p = _problem()
    plain = _program(_problem())
    with _trace(reg) as t:
        traced = _program(p)  # copies and in-place conversions: every write fails inside
    assert all(torch.equal(a, b) for a, b in zip(plain, traced, strict=True))
    assert any("the trace's own bug" in n for n in t.report.notes)


def test_a_base_keyword_the_trace_cannot_read_is_not_checked(reg: Registry) -> None:
    class Flag:  # an object standing for the base: what it selects is not read
        def __bool__(self) -> bool:
            return False

    p = _problem()
    with _trace(reg) as t:
        o, lse = k.base2_decode(p)
        k.keyword_merge(torch.stack([o, o]), torch.stack([lse, lse]), is_lse_base_on_e=Flag())
    assert t.report.findings == [] and sum(t.report.unread.values()) == 1
    assert t.report.verdict == "not checked" and "1 base(s) not read" in t.report.summary()
