"""What a Triton kernel does with the tensors it is launched with, as the interpreter reads it.

A kernel (``@triton.jit``) is launched as ``kernel[grid](a, b, ...)``: indexing it gives a launcher
that calls it with the arguments. Inside, a tensor argument is a pointer to its first element;
pointer arithmetic (``lse_ptr + i * stride``) still points into that tensor, so it keeps the
tensor's value (the interpreter's ``lse + x`` is the LSE already). ``tl.load(p)`` reads elements
of the tensor ``p`` points into; ``tl.store(p, v)`` writes ``v`` into part of it: the kernel's
caller sees its tensor changed in place, as by ``buf[...] = v``. A packing kernel that scatters
an LSE into a send buffer thus hands the buffer the LSE, of its base.
"""

from __future__ import annotations

import ast

from attn_contracts.lint.calls import params_of
from attn_contracts.lint.classes import dotted_name
from attn_contracts.lint.classes import own_nodes

__all__ = ["LOAD", "NAMESPACES", "STORE", "TRITON_CHOOSERS", "TRITON_KEEPS", "is_kernel",
           "pointer_roots"]

#: the qualified names of Triton's element read and write
LOAD = "triton.language.load"
STORE = "triton.language.store"

#: the modules Triton's element-wise math is a function of, inside a kernel
NAMESPACES = frozenset({"triton.language", "triton.language.math"})

#: Triton's functions whose every value is one of two operands' (``tl.where(mask, lse, -inf)``,
#: ``tl.maximum(m, lse)``): the positions of those operands. The base of an LSE among them is
#: the result's (the other operand, a constant fill, adds none)
TRITON_CHOOSERS: dict[str, tuple[int, ...]] = {"where": (1, 2), "maximum": (0, 1),
                                               "minimum": (0, 1)}

#: Triton's functions that keep their first operand's values, rearranged or reduced to one of
#: them (``tl.max(lse, axis=0)``, ``tl.reshape(lse, ...)``): an LSE of its base, no layout
TRITON_KEEPS = frozenset({"max", "min", "reshape", "view", "broadcast_to", "expand_dims",
                          "trans", "permute", "ravel"})

#: the decorators that make a function a kernel launched by ``kernel[grid](...)``
_KERNEL_DECORATORS = frozenset({"jit", "autotune", "heuristics"})


def is_kernel(node: object) -> bool:
    """A function decorated as a Triton kernel (``@triton.jit``, ``@triton.autotune(...)``
    over it): indexing it gives its launcher."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return False
    for d in node.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if (dotted_name(target) or "").rpartition(".")[2] in _KERNEL_DECORATORS:
            return True
    return False


def pointer_roots(fn: ast.AST | None, pointer: ast.expr) -> list[ast.Name]:
    """The parameter of the kernel ``fn`` that the pointer expression points into: the leftmost
    parameter among the terms of its sum (``dst_ptr + off``, ``i * stride + dst_ptr``), followed
    through the kernel's locals assigned once (``dst = dst_ptr + b * stride`` then
    ``tl.store(dst + offs, v)``). Empty where it is none of them."""
    if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    params = set(params_of(fn).names)
    once = _assigned_once(fn)
    seen: set[str] = set()
    todo: list[ast.expr] = [pointer]
    while todo:  # the sum's terms, left to right, locals followed to what they were bound to
        node = todo.pop(0)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Sub)):
            todo[:0] = [node.left, node.right]
        elif isinstance(node, ast.Name) and node.id not in seen:
            seen.add(node.id)
            if node.id in params:
                return [node]  # the leftmost parameter: Triton's ``ptr + offsets``
            if node.id in once:
                todo.insert(0, once[node.id])
    return []


def _assigned_once(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, ast.expr]:
    """The kernel's local names bound exactly once, by a plain ``name = value``."""
    counts: dict[str, int] = {}
    values: dict[str, ast.expr] = {}
    for n in own_nodes(fn.body):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            counts[n.id] = counts.get(n.id, 0) + 1
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and \
                isinstance(n.targets[0], ast.Name):
            values[n.targets[0].id] = n.value
    return {k: v for k, v in values.items() if counts.get(k) == 1}
