"""The table of base-keeping torch ops (``attn_contracts.lse_ops``), checked entry by entry on CPU
tensors: every value an op returns is one of its input's values (selected, rearranged, copied,
or cast to the result's dtype) or a constant the call itself names (a fill, a bound), never a
rescale; the ops that keep only one base reproduce the whole LSE in that base. Then: the tracer
and the linter read this table and no list of their own."""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch

from attn_contracts import lse_ops
from attn_contracts.lse_ops import LSE_OPS
from attn_contracts.lse_ops import LseOp

LN2 = math.log(2.0)

# How each entry is called: (args after the tensor, kwargs, constants the call itself writes).
# A new entry without a line here fails test_every_entry_has_an_example.
_CALLS: dict[str, tuple[tuple[Any, ...], dict[str, Any], tuple[float, ...]]] = {
    "contiguous": ((), {}, ()), "clone": ((), {}, ()), "detach": ((), {}, ()),
    "detach_": ((), {}, ()), "to": ((torch.float64,), {}, ()), "float": ((), {}, ()),
    "double": ((), {}, ()), "half": ((), {}, ()), "bfloat16": ((), {}, ()), "cpu": ((), {}, ()),
    "type": ((torch.float64,), {}, ()), "type_as": ((torch.zeros(1, dtype=torch.float16),), {}, ()),
    "requires_grad_": ((), {}, ()), "cuda": ((), {}, ()), "pin_memory": ((), {}, ()),
    "data": ((), {}, ()),
    "masked_fill": ((torch.eye(4, 6, dtype=torch.bool), -math.inf), {}, (-math.inf,)),
    "masked_fill_": ((torch.eye(4, 6, dtype=torch.bool), -math.inf), {}, (-math.inf,)),
    "nan_to_num": ((), {"neginf": -30.0}, (-30.0,)),
    "nan_to_num_": ((), {"neginf": -30.0}, (-30.0,)),
    "clamp": ((-1.5, 1.5), {}, (-1.5, 1.5)), "clamp_": ((-1.5, 1.5), {}, (-1.5, 1.5)),
    "clip": ((-1.5, 1.5), {}, (-1.5, 1.5)), "clip_": ((-1.5, 1.5), {}, (-1.5, 1.5)),
    "clamp_min": ((-1.5,), {}, (-1.5,)), "clamp_min_": ((-1.5,), {}, (-1.5,)),
    "clamp_max": ((1.5,), {}, (1.5,)), "clamp_max_": ((1.5,), {}, (1.5,)),
    "narrow": ((1, 1, 3), {}, ()), "index_select": ((0, torch.tensor([2, 0])), {}, ()),
    "repeat_interleave": ((2,), {"dim": 0}, ()),
    "copy_": ((), {}, ()), "__setitem__": ((), {}, ()), "__getitem__": (((1, slice(2, 5)),), {}, ()),
    "view": (((6, 4),), {}, ()), "reshape": (((2, 12),), {}, ()), "flatten": ((), {}, ()),
    "unflatten": ((1, (2, 3)), {}, ()), "squeeze": ((), {}, ()), "squeeze_": ((), {}, ()),
    "unsqueeze": ((0,), {}, ()), "unsqueeze_": ((0,), {}, ()),
    "view_as": ((torch.empty(24),), {}, ()), "reshape_as": ((torch.empty(8, 3),), {}, ()),
    "ravel": ((), {}, ()), "expand": (((3, 4, 6),), {}, ()),
    "expand_as": ((torch.empty(2, 4, 6),), {}, ()), "broadcast_to": (((2, 4, 6),), {}, ()),
    "as_strided": (((3, 2), (1, 6)), {}, ()), "diagonal": ((), {}, ()),
    "transpose": ((0, 1), {}, ()), "transpose_": ((0, 1), {}, ()), "swapaxes": ((0, 1), {}, ()),
    "swapaxes_": ((0, 1), {}, ()), "swapdims": ((0, 1), {}, ()), "swapdims_": ((0, 1), {}, ()),
    "t": ((), {}, ()), "t_": ((), {}, ()), "T": ((), {}, ()), "mT": ((), {}, ()),
    "mH": ((), {}, ()), "adjoint": ((), {}, ()), "permute": (((1, 0),), {}, ()),
    "movedim": ((0, 1), {}, ()), "moveaxis": ((0, 1), {}, ()), "select": ((1, 2), {}, ()),
    "split": ((2,), {}, ()), "chunk": ((3, 1), {}, ()), "tensor_split": ((3,), {}, ()),
    "split_with_sizes": (([1, 3],), {}, ()), "unsafe_split": ((2,), {}, ()),
    "hsplit": ((2,), {}, ()), "vsplit": ((2,), {}, ()), "unbind": ((1,), {}, ()),
    "stack": ((), {}, ()), "cat": ((), {}, ()), "concat": ((), {}, ()),
    "concatenate": ((), {}, ()), "where": ((), {}, ()), "maximum": ((), {}, ()),
    "minimum": ((), {}, ()), "fmax": ((), {}, ()), "fmin": ((), {}, ()),
    "amax": ((1,), {}, ()), "amin": ((0,), {"keepdim": True}, ()),
    "logsumexp": ((), {}, ()), "logaddexp": ((), {}, ()), "logaddexp2": ((), {}, ()),
}


#: the entries that copy whatever the strides (a fresh tensor of new values or a new dtype)
_SURE_COPIES = frozenset({"clone", "index_select", "repeat_interleave", "masked_fill",
                          "nan_to_num", "clamp", "clip", "clamp_min", "clamp_max", "double",
                          "half", "bfloat16"})


def _lse() -> torch.Tensor:
    """A [4, 6] LSE of distinct values (a rescale of it shares none of them), -inf in one row."""
    x = (torch.randperm(24, generator=torch.Generator().manual_seed(0)).float() - 11.5) / 7.0
    x = x.view(4, 6)
    x[3, 5] = -math.inf
    return x


def _strided() -> torch.Tensor:
    """``_lse()``'s values in a [4, 6] tensor that is not contiguous (the first columns of a
    wider one: its rows cannot be merged without a copy)."""
    wide = torch.zeros(4, 12)
    wide[:, :6] = _lse()
    return wide[:, :6]


def _other() -> torch.Tensor:
    """A second LSE of the same shape, with values of its own."""
    return _lse().flip(0) + 0.03125


def _run(op: LseOp, form: str, x: torch.Tensor, y: torch.Tensor) -> Any:
    """The op on x (and y where it takes two LSEs), called by one spelling."""
    args, kwargs, _ = _CALLS[op.name]
    if op.axes in ("stack", "cat"):
        return getattr(torch, op.name)([x, y], *args, **kwargs)
    if op.axes == "where":
        return torch.where(torch.eye(4, 6, dtype=torch.bool), x, y)
    if op.axes == "pick" and op.only_base is None:
        return getattr(x, op.name)(y) if form == "method" else getattr(torch, op.name)(x, y)
    if op.name == "copy_":
        dest = torch.empty_like(x)
        dest.copy_(x)
        return dest
    if op.name == "__setitem__":
        dest = torch.empty(2, 4, 6)
        dest[0] = x
        dest[1:] = y
        return dest
    if op.name in ("squeeze", "squeeze_"):
        x = x.unsqueeze(0)
    if form == "attribute":
        return getattr(x, op.name)
    if form == "function":
        return getattr(torch, op.name)(x, *args, **kwargs)
    return getattr(x, op.name)(*args, **kwargs)


def _forms(op: LseOp) -> list[str]:
    return [f for f, on in (("method", op.method), ("function", op.function),
                            ("attribute", op.attribute)) if on]


def _values_from(result: Any, sources: list[torch.Tensor], constants: tuple[float, ...]) -> None:
    """Every value of ``result`` is one of the sources' values cast to its dtype, or a constant
    the call names; and at least one source value is there."""
    pieces = list(result) if isinstance(result, (tuple, list)) else [result]
    found = 0
    for piece in pieces:
        assert isinstance(piece, torch.Tensor) and piece.is_floating_point()
        allowed = {float(v) for s in sources for v in s.to(piece.dtype).flatten().tolist()}
        allowed |= {float(torch.tensor(c).to(piece.dtype)) for c in constants}
        got = [float(v) for v in piece.detach().flatten().tolist()]
        assert got, "an empty result says nothing"
        assert set(got) <= allowed, f"{set(got) - allowed} are not the input's values"
        found += sum(v not in constants for v in got)
    assert found, "every value was a constant: nothing of the input is left"


def test_every_entry_has_an_example() -> None:
    assert sorted(_CALLS) == sorted(op.name for op in LSE_OPS)


def test_in_place_means_it_writes_its_receiver() -> None:
    for op in LSE_OPS:
        if op.in_place:  # the result is the receiver itself, its memory written or re-viewed
            x = _lse().clone()
            args, kwargs, _ = _CALLS[op.name]
            if op.name in ("squeeze_",):
                x = x.unsqueeze(0)
            src = _other() if op.name == "copy_" else None
            out = x.copy_(src) if src is not None else getattr(x, op.name)(*args, **kwargs)
            assert out is x, op.name
    assert not any(op.in_place for op in LSE_OPS if op.name.startswith("__"))


@pytest.mark.parametrize("op", [pytest.param(op, id=op.name) for op in LSE_OPS])
def test_every_spelling_exists(op: LseOp) -> None:
    assert _forms(op), "an entry names no spelling"
    if op.method:
        assert callable(getattr(torch.Tensor, op.name))
    if op.function:
        assert callable(getattr(torch, op.name)) and not isinstance(getattr(torch, op.name),
                                                                    torch.dtype)
    if op.attribute:
        assert not callable(getattr(_lse(), op.name))  # a tensor, not a method


def _check(op: LseOp, form: str) -> None:
    if op.only_base is not None:
        _one_base(op, form)
        return
    x, y = _lse(), _other()
    _, _, constants = _CALLS[op.name]
    out = _run(op, form, x.clone(), y.clone())
    two = op.axes in ("stack", "cat", "where", "pick", "setitem")
    _values_from(out, [x, y] if two else [x], constants)
    if op.axes == "same" and op.layout == "kept" and op.name not in ("narrow", "index_select"):
        # the same position holds the same value (cast), or the call's constant
        assert out.shape == x.shape
        cast = x.to(out.dtype)
        keep = ~torch.isin(out, torch.tensor(constants, dtype=out.dtype)) if constants \
            else torch.ones_like(out, dtype=torch.bool)
        assert torch.equal(out[keep], cast[keep])


@pytest.mark.parametrize(("op", "form"), [
    pytest.param(op, form, id=f"{op.name}-{form}") for op in LSE_OPS for form in _forms(op)
    if op.device is None])
def test_each_op_keeps_the_values_of_its_input(op: LseOp, form: str) -> None:
    _check(op, form)


@pytest.mark.gpu
@pytest.mark.parametrize(("op", "form"), [
    pytest.param(op, form, id=f"{op.name}-{form}") for op in LSE_OPS for form in _forms(op)
    if op.device is not None])
def test_each_device_op_keeps_the_values_of_its_input(op: LseOp, form: str) -> None:
    x = _lse()
    out = getattr(x, op.name)()
    _values_from(out.cpu(), [x], ())


@pytest.mark.parametrize(("op", "form"), [
    pytest.param(op, form, id=f"{op.name}-{form}") for op in LSE_OPS for form in _forms(op)
    if op.device is None and op.only_base is None and op.axes not in (
        "stack", "cat", "where", "pick", "copy", "setitem")])
def test_a_view_shares_its_inputs_storage_and_nothing_else_is_called_one(op: LseOp,
                                                                         form: str) -> None:
    """``view`` says the result is a view of a contiguous input (one storage: the linter
    lets a write into a name bound to it reach the input's name); every other entry of one
    tensor in and one out makes a new tensor, or hands back its receiver (in place)."""
    x = _lse().clone()  # a tensor of its own (``_lse()`` hands back a view)
    out = _run(op, form, x, _other())
    pieces = list(out) if isinstance(out, (tuple, list)) else [out]
    shared = all(p.untyped_storage().data_ptr() == x.untyped_storage().data_ptr()
                 for p in pieces)
    if op.view:
        assert shared and all(p is not x for p in pieces)
        # of a non-contiguous input too: a view whatever the strides (or no result: ``view``
        # refuses strides it cannot view, it never copies)
        y = _strided()
        try:
            again = _run(op, form, y, _other())
        except RuntimeError:
            return
        assert again.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()
    elif op.axes not in ("parts", "unbind") and not op.in_place and op.name != "requires_grad_":
        # a cast to the dtype it has already (``x.to(torch.float32)``, ``contiguous()`` of a
        # contiguous tensor) hands x back, and a reshape of one is a view: each is listed by
        # what it does where it must copy; a non-contiguous input makes them copy
        y = _strided()
        again = _run(op, form, y.contiguous() if op.name in _SURE_COPIES else y, _other())
        pieces = list(again) if isinstance(again, (tuple, list)) else [again]
        assert not all(p.untyped_storage().data_ptr() == y.untyped_storage().data_ptr()
                       for p in pieces) or op.name in ("to", "float", "type", "type_as", "cpu")


def test_the_check_refuses_a_rescale() -> None:
    x = _lse()
    for rescaled in (x * LN2, x / LN2, x + 0.5):
        with pytest.raises(AssertionError):
            _values_from(rescaled, [x], ())


def _one_base(op: LseOp, form: str) -> None:
    """The whole LSE of 48 scores, from the LSEs of its two halves: exact (to rounding) in the
    op's base, wrong in the other."""
    scores = torch.randn(4, 12, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    a, b = scores[:, :6], scores[:, 6:]
    for base, right in (("e", op.only_base == "e"), ("2", op.only_base == "2")):
        exp, log = (torch.exp, torch.log) if base == "e" else (torch.exp2, torch.log2)
        whole = log(exp(scores).sum(-1))
        la, lb = log(exp(a).sum(-1)), log(exp(b).sum(-1))
        if op.name == "logsumexp":
            stacked = torch.stack([la, lb])
            got = stacked.logsumexp(0) if form == "method" else torch.logsumexp(stacked, 0)
        else:
            got = getattr(la, op.name)(lb) if form == "method" else getattr(torch, op.name)(la, lb)
        assert torch.allclose(got, whole) is right, (op.name, base)


# --- the readers ---------------------------------------------------------------------------------
def test_the_tracer_follows_every_entry_by_every_spelling() -> None:
    from attn_contracts.tracing.mode import _rules

    rules = _rules()
    for op in LSE_OPS:
        for form in _forms(op):
            if form == "method":
                obj: Any = getattr(torch.Tensor, op.name)
            elif form == "function":
                obj = getattr(torch, op.name)
            else:
                obj = getattr(torch.Tensor, op.name).__get__
            assert rules.get(obj) is not None, (op.name, form)


def test_the_linter_reads_the_table() -> None:
    from attn_contracts.lint import torch_model

    assert lse_ops.lint_methods() == torch_model.KEEPS_BASE
    assert lse_ops.lint_functions() == torch_model.TORCH_KEEPS
    assert lse_ops.lint_attributes() == torch_model.KEEPS_BASE_ATTRS
    names = {op.name for op in LSE_OPS}
    assert names >= torch_model.LAYOUT_KEEPING and names >= torch_model.TRANSPOSES
    assert {op.name: op.only_base for op in LSE_OPS if op.only_base} == \
        torch_model.BASE_REDUCTIONS
    assert {op.name for op in lse_ops.EXPONENTIALS} == torch_model.EXPONENTIALS


def _lint_knowledge() -> Any:
    from attn_contracts.consumer import ConsumerRecord
    from attn_contracts.lint import Knowledge
    from attn_contracts.records import CapabilityRecord
    from fixtures.records import LINT_PRODUCER
    from fixtures.records import lint_merge

    consumers = [ConsumerRecord.model_validate(lint_merge(b)) for b in ("e", "2")]
    producer = CapabilityRecord.model_validate(LINT_PRODUCER)
    return Knowledge.from_records([producer], consumers)


_LINTED = sorted({f"lse.{n}()" for n in lse_ops.lint_methods()}
                 | {f"torch.{n}(lse)" for n in lse_ops.lint_functions() if n != "where"}
                 | {f"lse.{n}" for n in lse_ops.lint_attributes()})


@pytest.mark.parametrize("kept", _LINTED)
def test_the_linter_keeps_the_base_through_each_entry(kept: str, tmp_path: Path) -> None:
    """A base-2 producer's LSE, through the op, into a base-e consumer is an error, and into a
    base-2 one is clean: the op kept the base."""
    from attn_contracts.lint import lint_paths

    found = {}
    for consumer in ("merge_e", "merge_2"):
        (tmp_path / consumer).mkdir()
        (tmp_path / consumer / "x.py").write_text(
            "import torch\ndef f(q):\n    k = Kernel()\n    o, lse = k.run(q, return_lse=True)\n"
            f"    {consumer}(o, {kept})\n")
        found[consumer] = {f.code for f in lint_paths([tmp_path / consumer],
                                                       knowledge=_lint_knowledge())
                           if f.severity == "error"}
    assert found["merge_e"] and not found["merge_2"], found


def _weights(name: str, x: torch.Tensor, base: float) -> torch.Tensor:
    """What each exponential computes from ``x`` when it reads ``x`` in ``base``, written with
    powers only (the reference the table's base is checked against)."""
    p = torch.pow(torch.tensor(base, dtype=x.dtype), x)
    if name in ("exp", "exp2"):
        return p
    if name == "softmax":
        return p / p.sum(1, keepdim=True)
    if name == "log_softmax":
        return torch.log(p / p.sum(1, keepdim=True))
    return p / (1 + p)  # sigmoid, expit


@pytest.mark.parametrize("op", lse_ops.EXPONENTIALS, ids=lambda op: op.name)
def test_every_exponential_reads_its_input_in_its_base(op: lse_ops.Exponential) -> None:
    """Each entry of ``lse_ops.EXPONENTIALS``, by every spelling it lists (a torch namespace's
    function, a Tensor method), computes its weights as powers of the base the table gives it,
    and not of the other one."""
    import importlib

    x = torch.linspace(-3.0, 2.0, 12, dtype=torch.float64).reshape(3, 4)
    base = math.e if op.base == "e" else 2.0
    other = 2.0 if op.base == "e" else math.e
    # (Triton's spellings run inside a kernel alone: test_tritons_math_is_in_the_tables_base)
    spellings: list[Any] = [getattr(importlib.import_module(ns), op.name) for ns in op.namespaces
                            if not ns.startswith("triton")]
    if op.method:
        spellings.append(lambda t, *a: getattr(t, op.name)(*a))
    args = (1,) if "softmax" in op.name else ()
    for fn in spellings:
        got = fn(x, *args)
        torch.testing.assert_close(got, _weights(op.name, x, base))
        assert not torch.allclose(got, _weights(op.name, x, other))


@pytest.mark.interpret
def test_tritons_exponentials_are_in_the_tables_base() -> None:
    """The Triton spellings the table lists (``tl.exp``, ``tl.math.exp2``...), run in a kernel
    under the interpreter on CPU tensors: each exponentiates in the base its entry gives."""
    import triton
    import triton.language as tl

    @triton.jit
    def _math(x_ptr, out_ptr, N: tl.constexpr):
        i = tl.arange(0, N)
        x = tl.load(x_ptr + i)
        tl.store(out_ptr + 0 * N + i, tl.exp(x))
        tl.store(out_ptr + 1 * N + i, tl.math.exp(x))
        tl.store(out_ptr + 2 * N + i, tl.exp2(x))
        tl.store(out_ptr + 3 * N + i, tl.math.exp2(x))

    x = torch.linspace(-3.0, 2.0, 16, dtype=torch.float32)
    out = torch.empty(4, 16, dtype=torch.float32)
    _math[(1,)](x, out, N=16)
    expected = {"e": torch.exp(x), "2": torch.exp2(x)}
    rows = {"exp": 0, "exp2": 2}
    listed = [op for op in lse_ops.EXPONENTIALS if "triton.language" in op.namespaces]
    assert {op.name for op in listed} == set(rows)
    for op in listed:
        assert {"triton.language", "triton.language.math"} <= set(op.namespaces)
        for row in (rows[op.name], rows[op.name] + 1):  # tl.<name>, tl.math.<name>
            torch.testing.assert_close(out[row], expected[op.base])


def test_each_collective_of_torch_distributed_hands_back_what_was_sent(tmp_path: Path) -> None:
    """On one CPU rank (gloo) each collective of ``torch.distributed`` the table names writes
    the tensor sent, unchanged, into its buffer: gathered or exchanged, never rescaled. The
    others are an engine's group methods (``GroupCoordinator.all_gather``), cited in the table."""
    import torch.distributed as dist

    ran = []
    dist.init_process_group("gloo", init_method=f"file://{tmp_path / 'store'}", rank=0,
                            world_size=1)
    try:
        for c in lse_ops.COLLECTIVES:
            fn = getattr(dist, c.name, None)
            if c.item is not None:
                assert fn is None, c.name  # a library's exchange returning a tuple (cited)
                continue
            if c.out is None:
                assert c.source == 0, c.name  # a group's method: (input_, dim)
                continue
            if fn is None:  # all_gather_single is torch 2.13's name; older ones lack it
                assert tuple(int(x) for x in torch.__version__.split(".")[:2]) < (2, 13), c.name
                continue
            x = _lse()
            buf = torch.full_like(x, 7.0)
            args = [None, None]
            args[c.source], args[c.out] = x.clone(), buf
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)  # all_gather_into_tensor's rename
                fn(*args)
            assert torch.equal(buf, x), c.name
            ran.append(c.name)
    finally:
        dist.destroy_process_group()
    assert ran, "no collective of torch.distributed was run"
