"""The torch operations that keep an LSE's base: one table, read by the linter and the tracer.

An LSE passed through ``.float()``, ``.transpose(0, 1)`` or ``buf[:n] = lse`` is still an LSE of
the same base: the values that come out are the values that went in, selected, rearranged, copied
or cast, never rescaled. ``lse * ln 2`` is not in this table: it changes the base (the linter and
the tracer each know the conversions). Each entry says where the op is spelled (a ``Tensor``
method, a ``torch`` function, a ``Tensor`` attribute) and how the result's axes follow from the
input's, which is what each reader needs:

- the tracer (:mod:`attn_contracts.tracing.mode`) re-tags the result by :attr:`LseOp.axes`;
- the linter (:mod:`attn_contracts.lint.torch_model`) reads the names by spelling, and by
  :attr:`LseOp.layout` whether a 2-D ``[T, H]`` LSE keeps its layout, may have its two axes
  swapped (it reads the arguments), or loses it; it models the ops of one tensor argument and
  one tensor result (:func:`lint_methods`), not the splits, stacks and writes the tracer follows.

``only_base``: a reduction that yields an LSE in one base only (``logsumexp`` of base-e LSEs is the
base-e LSE of their union; of base-2 LSEs it is no LSE of either base).

``tests/test_lse_ops.py`` runs every entry on CPU tensors and checks what it says. Torch-free.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["COLLECTIVES", "EXPONENTIALS", "LOGARITHMS", "LSE_OPS", "Collective", "Exponential",
           "LseOp", "by_kind", "chosen_operands", "collective", "exponential",
           "lint_attributes", "lint_functions", "lint_methods", "lint_views", "logarithm",
           "named"]

#: how the result's axes follow from the (first tagged) input's
Axes = Literal[
    "same",       # the input's axes (casts, copies, device moves, fills, clamps, narrowing)
    "copy",       # ``dest.copy_(src)``: dest holds src's values
    "setitem",    # ``dest[key] = src``: a part (or all) of dest holds src's values
    "index",      # ``x[key]``: basic indexing drops, keeps or adds axes
    "reshape",    # the same memory order in another shape
    "expand",     # broadcast to a larger shape: new axes, repeated values
    "opaque",     # the base is kept, the axes are not known (``as_strided``)
    "transpose",  # two axes swapped
    "reverse",    # every axis reversed (``t``, ``T``)
    "mt",         # the last two axes swapped (``mT``)
    "permute",    # axes reordered
    "movedim",    # some axes moved
    "select",     # one axis dropped at an index
    "parts",      # a tuple of pieces along one axis
    "unbind",     # a tuple of slices along one axis, which each drop it
    "stack",      # a sequence stacked along a new axis (the states axis)
    "cat",        # a sequence concatenated along an axis
    "where",      # ``torch.where(cond, x, y)``: each value from x or y
    "pick",       # ``torch.maximum(x, y)``: each value from x or y, elementwise
    "reduce",     # an axis reduced (dropped, or kept as size 1 with ``keepdim``)
]
#: what a 2-D ``[T, H]`` LSE's layout is after the op, read without shapes: kept whatever the
#: arguments; swapped when the arguments name the two axes; lost (depends on shapes/arguments)
Layout = Literal["kept", "swap", "moved", "lost"]


@dataclass(frozen=True)
class LseOp:
    """One op that keeps an LSE's base. ``method``: ``Tensor.name(...)``; ``function``:
    ``torch.name(...)``; ``attribute``: ``Tensor.name``; ``in_place``: the op writes into its
    receiver; ``device``: the device it needs to run (None: any, the CPU included); ``view``:
    its result is always a view of its input (one storage: a write into either is seen
    through the other, ``w = buf.view(torch.float32)`` then a kernel storing into ``w[:, 0]``
    changes ``buf``); not where it copies on some inputs (``reshape``, ``contiguous``)."""

    name: str
    axes: Axes
    layout: Layout
    method: bool = True
    function: bool = False
    attribute: bool = False
    in_place: bool = False
    only_base: str | None = None
    device: str | None = None
    view: bool = False


def _ops(axes: Axes, layout: Layout, spec: str, **kw: object) -> list[LseOp]:
    """Entries from ``"name:forms ..."``: forms ``m`` method, ``f`` torch function, ``a``
    attribute; a trailing ``_`` marks an in-place method (a dunder is none)."""
    out = []
    for word in spec.split():
        name, _, forms = word.partition(":")
        forms = forms or "m"
        out.append(LseOp(name, axes, layout, method="m" in forms, function="f" in forms,
                         attribute="a" in forms,
                         in_place=name.endswith("_") and not name.endswith("__"),
                         **kw))  # type: ignore[arg-type]
    return out


LSE_OPS: tuple[LseOp, ...] = (
    # casts, copies and moves: the same values, or their rounding to another dtype
    *_ops("same", "kept", "contiguous clone:mf detach_ to float double half bfloat16 cpu type "
                          "type_as requires_grad_"),
    *_ops("same", "kept", "detach:mf", view=True),
    *_ops("same", "kept", "cuda pin_memory", device="cuda"),
    *_ops("same", "kept", "data:a", view=True),
    # fills and clamps: values kept or replaced by a constant the call names (-inf rows, bounds)
    *_ops("same", "kept", "masked_fill:mf masked_fill_ nan_to_num:mf nan_to_num_ clamp:mf "
                          "clamp_ clamp_min:mf clamp_min_ clamp_max:mf clamp_max_ clip:mf clip_"),
    # rows or columns picked along one axis
    *_ops("same", "kept", "narrow:mf", view=True),
    *_ops("same", "kept", "index_select:mf"),
    *_ops("same", "lost", "repeat_interleave:mf"),
    *_ops("copy", "kept", "copy_"),
    *_ops("setitem", "kept", "__setitem__"),
    *_ops("index", "lost", "__getitem__", view=True),
    # the same memory in another shape
    *_ops("reshape", "lost", "view unflatten:mf squeeze:mf unsqueeze:mf view_as", view=True),
    # (a view where the strides allow it, else a copy: no sure view)
    *_ops("reshape", "lost", "reshape:mf flatten:mf reshape_as ravel:mf squeeze_ unsqueeze_"),
    *_ops("expand", "lost", "expand expand_as broadcast_to:mf", view=True),
    *_ops("opaque", "lost", "as_strided:mf diagonal:mf", view=True),
    # axes reordered
    *_ops("transpose", "swap", "transpose:mf swapaxes:mf swapdims:mf", view=True),
    *_ops("transpose", "swap", "transpose_ swapaxes_ swapdims_"),
    *_ops("reverse", "swap", "t:mf T:a", view=True),
    *_ops("reverse", "swap", "t_"),
    *_ops("mt", "swap", "mT:a mH:a adjoint:mf", view=True),
    *_ops("permute", "moved", "permute:mf", view=True),
    *_ops("movedim", "moved", "movedim:mf moveaxis:mf", view=True),
    # pieces
    *_ops("select", "lost", "select:mf", view=True),
    *_ops("parts", "lost", "split:mf chunk:mf tensor_split:mf split_with_sizes:mf unsafe_split:mf "
                           "hsplit:mf vsplit:mf"),
    *_ops("unbind", "lost", "unbind:mf"),
    *_ops("stack", "lost", "stack:f"),
    *_ops("cat", "lost", "cat:f concat:f concatenate:f"),
    *_ops("where", "kept", "where:f"),
    # reductions and elementwise choices: each value one of the inputs'
    *_ops("pick", "kept", "maximum:mf minimum:mf fmax:mf fmin:mf"),
    *_ops("reduce", "lost", "amax:mf amin:mf"),
    # reductions that are an LSE in one base only
    *_ops("reduce", "lost", "logsumexp:mf", only_base="e"),
    *_ops("pick", "kept", "logaddexp:mf", only_base="e"),
    *_ops("pick", "kept", "logaddexp2:mf", only_base="2"),
)

#: kinds whose input or result is a sequence, or that write into their receiver: the tracer
#: follows them; the linter, which models one tensor in and one out, does not read them here
_SEQUENCE_OR_WRITE = frozenset({"parts", "unbind", "stack", "cat", "setitem", "index"})
#: kinds that pick each value from one of two tensors: the linter reads both
#: (:func:`chosen_operands`), not the first alone
_CHOOSERS = frozenset({"where", "pick"})


def named(name: str) -> LseOp | None:
    """The entry for ``name`` (None: not a base-keeping op)."""
    return _BY_NAME.get(name)


def by_kind() -> dict[str, tuple[LseOp, ...]]:
    """The entries grouped by :attr:`LseOp.axes`."""
    out: dict[str, list[LseOp]] = {}
    for op in LSE_OPS:
        out.setdefault(op.axes, []).append(op)
    return {k: tuple(v) for k, v in out.items()}


def _lint(op: LseOp) -> bool:
    return op.only_base is None and op.axes not in _SEQUENCE_OR_WRITE | _CHOOSERS


def lint_methods() -> frozenset[str]:
    """``x.name(...)`` that keeps the base of an LSE ``x`` (one tensor in, one out)."""
    return frozenset(op.name for op in LSE_OPS if op.method and _lint(op))


def lint_functions() -> frozenset[str]:
    """``torch.name(x, ...)`` that keeps the base of an LSE ``x``."""
    return frozenset(op.name for op in LSE_OPS if op.function and _lint(op))


def lint_pieces() -> frozenset[str]:
    """``x.name(...)`` / ``torch.name(x, ...)`` that cut an LSE ``x`` into a sequence of LSEs of
    its base (``unbind``, ``split``, ``chunk``...)."""
    return frozenset(op.name for op in LSE_OPS if op.axes in ("parts", "unbind"))


def lint_gathers() -> frozenset[str]:
    """``torch.name(seq, ...)`` that makes one LSE of a sequence of LSEs of one base
    (``stack``, ``cat``...)."""
    return frozenset(op.name for op in LSE_OPS if op.axes in ("stack", "cat"))


def lint_views() -> frozenset[str]:
    """The spellings (method, function or attribute) of the ops whose result is a view of
    their input (:attr:`LseOp.view`)."""
    return frozenset(op.name for op in LSE_OPS if op.view)


def lint_attributes() -> frozenset[str]:
    """``x.name`` that keeps the base of an LSE ``x``."""
    return frozenset(op.name for op in LSE_OPS if op.attribute)


def chosen_operands(name: str, *, method: bool) -> tuple[int, ...] | None:
    """The operands each value of ``name``'s result is chosen from, where it picks elementwise
    between two tensors (``torch.where(cond, x, y)``: x, y; ``torch.maximum(x, y)``: both):
    positions among the arguments of the ``torch`` function, or, for the method, with the
    receiver as -1 (``x.maximum(y)``: x, y). None where ``name`` is no such op."""
    op = _BY_NAME.get(name)
    if op is None or op.axes not in _CHOOSERS or op.only_base is not None or \
            not (op.method if method else op.function):
        return None
    if op.axes == "where":
        return (1, 2)  # a torch function only
    return (-1, 0) if method else (0, 1)


_BY_NAME = {op.name: op for op in LSE_OPS}
if len(_BY_NAME) != len(LSE_OPS):  # a name twice would be read two ways
    raise RuntimeError("attn_contracts.lse_ops: a name is listed twice")


@dataclass(frozen=True)
class Exponential:
    """An op that exponentiates its input in one base: ``torch.exp2(lse - m)``, a hand-written
    merge's weight, or ``logits.softmax(dim)`` over LSEs, which weighs each by ``e**lse``. An
    LSE of the other base read by it is weighed wrong (its partials mixed in wrong proportions).
    ``method``: ``Tensor.name(...)``; ``namespaces``: the modules it is a function of."""

    name: str
    base: Literal["e", "2"]
    method: bool = True
    namespaces: tuple[str, ...] = ("torch",)


_NN = ("torch", "torch.nn.functional", "torch.special")
#: Triton's math, inside a kernel (``tl.exp2(lse - m)``): ``triton.language`` and its ``math``
_TL = ("triton.language", "triton.language.math")
EXPONENTIALS: tuple[Exponential, ...] = (
    Exponential("exp", "e", namespaces=("torch", *_TL)),
    Exponential("exp2", "2", namespaces=("torch", "torch.special", *_TL)),
    # softmax(x)_i = e**x_i / sum_j e**x_j; log_softmax its log; sigmoid(a - b) = softmax of two
    Exponential("softmax", "e", namespaces=_NN),
    Exponential("log_softmax", "e", namespaces=_NN),
    Exponential("sigmoid", "e", namespaces=("torch", "torch.nn.functional")),
    Exponential("expit", "e", method=False, namespaces=("torch.special",)),
)
_EXPONENTIALS = {op.name: op for op in EXPONENTIALS}


#: logarithms in one base: ``m + tl.log2(s)``, a log-sum-exp computed by hand from the sum of
#: exponentials (a merge's weights, a kernel's softmax denominator), is in that base's units
#: (entries of the exponentials' shape: the name, its base, the modules that spell it)
LOGARITHMS: tuple[Exponential, ...] = (
    Exponential("log", "e", namespaces=("torch", *_TL)),
    Exponential("log2", "2", namespaces=("torch", *_TL)),
)
_LOGARITHMS = {op.name: op for op in LOGARITHMS}


def logarithm(name: str) -> Exponential | None:
    """The logarithm named ``name`` (None: not one)."""
    return _LOGARITHMS.get(name)


def exponential(name: str) -> Exponential | None:
    """The exponential named ``name`` (None: not one)."""
    return _EXPONENTIALS.get(name)


@dataclass(frozen=True)
class Collective:
    """A collective that hands every rank the values the ranks gave it, gathered or exchanged,
    never summed: an LSE sent through it keeps its base (every rank runs one program, so each
    sends an LSE of one base). ``source``: the position of the tensor sent; ``out``: the
    position of the buffer it is written into (None: the call returns it); ``item``: where the
    call returns a tuple of what it exchanged, the position of the LSE's.

    Spelled as a method of a process group (an engine's ``GroupCoordinator``) or a function of
    ``torch.distributed``; the linter reads the name, whatever the receiver (a group the linted
    files may not define). The tracer follows tensors through torch's ops, not through
    collectives: these are the linter's alone. ``tests/test_lse_ops.py`` runs the
    ``torch.distributed`` ones on one CPU rank (gloo)."""

    name: str
    source: int
    out: int | None = None
    item: int | None = None


COLLECTIVES: tuple[Collective, ...] = (
    # vLLM's and SGLang's GroupCoordinator.all_gather(input_, dim) returns the gathered tensor
    # (vllm/distributed/parallel_state.py:L758 @ vllm 0.34.0; sglang/srt/distributed/
    # parallel_state.py:L1374 @ sglang 0.5.23); torch.distributed.all_gather(list, tensor) fills a
    # list instead, which is not read (its LSE is not the first argument)
    Collective("all_gather", 0),
    Collective("all_gather_into_tensor", 1, out=0),
    Collective("all_gather_single", 1, out=0),  # its name from torch 2.13 on
    Collective("all_to_all_single", 1, out=0),
    # FlashInfer's DCP all-to-all: decode_cp_a2a_alltoall(partial_o, softmax_stats, workspace,
    # cp_rank, cp_size) -> (partial_o_out, softmax_stats_out), each rank's slices exchanged
    # (flashinfer/comm/dcp_alltoall.py:L262 @ flashinfer-python 0.7.4); SGLang 0.5.23 sends the
    # LSE in softmax_stats' slot 0 (the pack at sglang/srt/layers/dcp/comm.py:L573)
    Collective("decode_cp_a2a_alltoall", 1, item=1),
)
_COLLECTIVES = {c.name: c for c in COLLECTIVES}


def collective(name: str) -> Collective | None:
    """The collective named ``name`` (None: not one)."""
    return _COLLECTIVES.get(name)
