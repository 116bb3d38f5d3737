"""A frame's calls: arguments, special forms, and the application of every kind of callee.

The arguments as Python passes them (``*args``, ``**kwargs`` of a dict the flow holds), the
tensor methods of the torch model (:mod:`attn_contracts.lint.torch_model`), the special forms
(``partial``, ``cast``, ``super``, ``getattr``, ``dict.get``, ``type``), and a call of a
function, a bound method, a class, an object, or a record's producer or consumer.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from typing import Any
from typing import cast

from attn_contracts import lse_ops
from attn_contracts.findings import Location
from attn_contracts.lint.attributes import made_by_new
from attn_contracts.lint.calls import OPAQUE_ARGS
from attn_contracts.lint.calls import CallArgs
from attn_contracts.lint.calls import as_bound_call
from attn_contracts.lint.calls import as_generator
from attn_contracts.lint.calls import as_itemgetter
from attn_contracts.lint.calls import as_methodcaller
from attn_contracts.lint.calls import call_matters
from attn_contracts.lint.calls import callee_name
from attn_contracts.lint.calls import nonlocal_names
from attn_contracts.lint.calls import params_of
from attn_contracts.lint.calls import place
from attn_contracts.lint.calls import source_text
from attn_contracts.lint.classes import ClassInfo
from attn_contracts.lint.classes import dotted_name
from attn_contracts.lint.containers import GROWS
from attn_contracts.lint.containers import ITERATION
from attn_contracts.lint.containers import ITERTOOLS
from attn_contracts.lint.containers import MUTATORS
from attn_contracts.lint.containers import characters
from attn_contracts.lint.containers import class_key
from attn_contracts.lint.containers import class_keyed
from attn_contracts.lint.containers import dict_key
from attn_contracts.lint.containers import dict_popped
from attn_contracts.lint.containers import dict_setdefault
from attn_contracts.lint.containers import flag_values
from attn_contracts.lint.containers import grouped
from attn_contracts.lint.containers import iterate
from attn_contracts.lint.containers import iteration
from attn_contracts.lint.containers import itertools_value
from attn_contracts.lint.containers import key_value
from attn_contracts.lint.containers import literal_keys
from attn_contracts.lint.containers import literal_values
from attn_contracts.lint.containers import members_of
from attn_contracts.lint.containers import merged
from attn_contracts.lint.containers import table_entry
from attn_contracts.lint.containers import truth
from attn_contracts.lint.containers import value_key
from attn_contracts.lint.folding import BUILTINS
from attn_contracts.lint.folding import LIBRARY_FUNCTIONS
from attn_contracts.lint.folding import MATH_FUNCTIONS
from attn_contracts.lint.folding import METHOD_NAMES
from attn_contracts.lint.folding import PATTERN
from attn_contracts.lint.folding import REGEX_FUNCTIONS
from attn_contracts.lint.folding import SCALARS
from attn_contracts.lint.folding import UNKNOWN
from attn_contracts.lint.folding import abstract
from attn_contracts.lint.folding import compiled
from attn_contracts.lint.folding import concrete
from attn_contracts.lint.folding import fold_builtin
from attn_contracts.lint.folding import fold_library
from attn_contracts.lint.folding import fold_method
from attn_contracts.lint.folding import fold_regex
from attn_contracts.lint.folding import safe_format
from attn_contracts.lint.inferred import Weighed
from attn_contracts.lint.record_calls import RecordCalls
from attn_contracts.lint.record_index import Consumer
from attn_contracts.lint.scope import sure_view
from attn_contracts.lint.torch_model import BASE_REDUCTIONS
from attn_contracts.lint.torch_model import EXPONENTIAL_NAMESPACES
from attn_contracts.lint.torch_model import EXPONENTIALS
from attn_contracts.lint.torch_model import GATHERS
from attn_contracts.lint.torch_model import IDENTITY_WRAPPERS
from attn_contracts.lint.torch_model import KEEPS_BASE
from attn_contracts.lint.torch_model import LOG_KEY
from attn_contracts.lint.torch_model import PIECES
from attn_contracts.lint.torch_model import TORCH_KEEPS
from attn_contracts.lint.torch_model import constant_name
from attn_contracts.lint.torch_model import lose_layout
from attn_contracts.lint.torch_model import not_a_tensor_method
from attn_contracts.lint.torch_model import short_line
from attn_contracts.lint.torch_model import through_function
from attn_contracts.lint.torch_model import through_method
from attn_contracts.lint.triton_model import LOAD
from attn_contracts.lint.triton_model import NAMESPACES
from attn_contracts.lint.triton_model import STORE
from attn_contracts.lint.triton_model import TRITON_CHOOSERS
from attn_contracts.lint.triton_model import TRITON_KEEPS
from attn_contracts.lint.triton_model import pointer_roots
from attn_contracts.lint.values import NOT_SPECIAL
from attn_contracts.lint.values import NOTHING_YET
from attn_contracts.lint.values import Arg
from attn_contracts.lint.values import Bound
from attn_contracts.lint.values import ClassRef
from attn_contracts.lint.values import DictV
from attn_contracts.lint.values import Ext
from attn_contracts.lint.values import ExtInst
from attn_contracts.lint.values import Flag
from attn_contracts.lint.values import Func
from attn_contracts.lint.values import Inst
from attn_contracts.lint.values import Lit
from attn_contracts.lint.values import Lse
from attn_contracts.lint.values import ModuleRef
from attn_contracts.lint.values import Num
from attn_contracts.lint.values import Param
from attn_contracts.lint.values import Partial
from attn_contracts.lint.values import Rec
from attn_contracts.lint.values import Seq
from attn_contracts.lint.values import Source
from attn_contracts.lint.values import Super
from attn_contracts.lint.values import Tup
from attn_contracts.lint.values import Union_
from attn_contracts.lint.values import Value
from attn_contracts.lint.values import alternatives
from attn_contracts.lint.values import join
from attn_contracts.lint.values import lse_of
from attn_contracts.lint.values import source_order


class Frame(RecordCalls):
    """One function's (or a module's) interpretation, calls included."""


    def args(self, node: ast.Call, callee: Value = None) -> CallArgs:
        call = CallArgs([], {}, False, where=place(self.path, node))
        # a positional argument bound to a parameter that may carry a base is read for its
        # value, as a keyword of that name is
        words = self._positional_base_params(callee) if node.args else ()
        for i, a in enumerate(node.args):
            if isinstance(a, ast.Starred):
                items = _star_items(self.expr(a.value))
                if items is not None:
                    call.pos += [Arg(v, place(self.path, a.value)) for v in items]
                else:
                    call.opaque = True
                continue
            watched = self.i.watched.get(id(a)) if self.i.watched else None
            # an argument a question asks for (a base passed by position): read for its value
            value = self.expr(a) if watched is None and not (
                i < len(words) and self.i.base_word(words[i])) else self.needed(a)
            if watched is not None:
                watched.append(value)
            call.pos.append(Arg(value, place(self.path, a), "", self.buffers(a)))
        maybe: set[str] = set()
        for kw in node.keywords:
            value = self.needed(kw.value) if self.i.base_word(kw.arg) else self.expr(kw.value)
            if self.i.watched and id(kw.value) in self.i.watched:
                self.i.watched[id(kw.value)].append(value)
            if kw.arg is not None:
                call.kw[kw.arg] = Arg(value, place(self.path, kw.value),
                                      buffers=self.buffers(kw.value))
                continue
            maybe |= _spread(call, value)
        call.maybe = frozenset(maybe)
        return call

    def _positional_base_params(self, callee: Value) -> tuple[str, ...]:
        """The names of the positional parameters of the one function ``callee`` is (a
        method's past its object); none where it is not one function of the program."""
        bound = isinstance(callee, Bound)
        func = callee.func if isinstance(callee, Bound) else callee
        if not isinstance(func, Func):
            return ()
        fn = self.i.p.definition(func)
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return ()
        params = params_of(fn)
        names = tuple(params.names[:params.positional])
        return names[1:] if bound and not params.static else names

    def call(self, node: ast.Call) -> Value:
        func = node.func
        where = place(self.path, node)
        if (c := constant_name(node, None)) is not None:
            return Num(c)
        name = func.attr if isinstance(func, ast.Attribute) else (
            func.id if isinstance(func, ast.Name) else "")
        if self._str_type_method(func, name, node):
            # ``str.lower(x)``: the method of the builtin type, bound to its first argument
            node = as_bound_call(node, self.i.synthetic)
            func = cast(ast.Attribute, node.func)
        if isinstance(func, ast.Attribute):
            method = self._method_value(func, node, name, where)
            if method is not NOT_SPECIAL:
                return cast(Value, method)
        callee = self.expr(func)
        if name in ("empty_like", "zeros_like", "full_like", "ones_like") and node.args:
            self.args(node)
            return None  # a fresh buffer shaped like it: no LSE until a kernel writes it
        special = self.special(callee, name, node)
        if special is not NOT_SPECIAL:
            return cast(Value, special)
        call = self.args(node, callee)
        if callee is None and isinstance(func, ast.Name) and name in _BUILTIN_CALLS and \
                not call.opaque and (not call.kw or set(call.kw) <= _ITERATION_KEYWORDS.get(
                    name, frozenset())):
            return self.builtin(name, call, where, node)
        return self.apply(callee, call, node, where, name)

    def _method_value(self, func: ast.Attribute, node: ast.Call, name: str,
                      where: Location) -> Value | object:
        """A method call read without its callee: a ``str`` method folded, a tensor method,
        a pure container method folded; :data:`NOT_SPECIAL` where it is none of these."""
        if name in _STR_METHODS and _reevaluable(func.value):
            folded = self.str_method(func, node, name, where)
            if folded is not NOT_SPECIAL:
                return folded
        on_tensor = self.tensor_method(func, node, name, where)
        if on_tensor is not NOT_SPECIAL:
            return on_tensor
        folded = self.container_method(func, node, name, where)
        return NOT_SPECIAL if folded is UNKNOWN else folded

    def _str_type_method(self, func: ast.expr, name: str, node: ast.Call) -> bool:
        """``str.<method>(x, ...)`` of the builtin ``str`` (no name of the program binds it)."""
        return isinstance(func, ast.Attribute) and name in _STR_METHODS and \
            isinstance(func.value, ast.Name) and func.value.id == "str" and bool(node.args) \
            and not isinstance(node.args[0], ast.Starred) and self.builtin_name("str")

    def container_method(self, func: ast.Attribute, node: ast.Call, name: str,
                         where: Location) -> Value | object:
        """A pure method of a set or tuple known exactly (``S.union({"x"})``): Python's own
        value (:mod:`.folding`); :data:`~.folding.UNKNOWN` where it is none."""
        if not _reevaluable(func.value) or node.keywords or name not in METHOD_NAMES:
            return UNKNOWN
        return fold_method(self.expr(func.value), name, [self.expr(a) for a in node.args], where)

    def builtin(self, name: str, call: CallArgs, where: Location, node: ast.Call) -> Value:
        """A builtin function of Python's (the name bound to nothing in the program): folded
        where its arguments are known exactly (:mod:`.folding`); a conversion of a container
        (``list(t)``, ``frozenset(s)``) holds its elements; the rest is not known."""
        args = [a.value for a in call.pos]
        if name in _ITERATES_FIRST and args and isinstance(args[0], DictV) and \
                not args[0].maybe and not class_keyed(args[0]):
            # a dict iterates over its keys (their values, not as the DictV keys them), in the
            # order they were first stored
            args[0] = Tup(tuple(Lit(cast(Any, key_value(k)), where) for k, _ in args[0].items))
        if name in ITERATION:
            return iteration(name, args, where, {k: a.value for k, a in call.kw.items()})
        if call.kw:
            return self._keyed(name, args, call, where, node)
        folded = fold_builtin(name, args, where)
        if folded is not UNKNOWN:
            return cast(Value, folded)
        if name == "bool" and len(args) == 1:
            return self._bool_of(args[0], where)
        if name in ("tuple", "list") and len(args) == 1 and isinstance(args[0], Tup):
            # positions kept; a list is known as one
            return replace(args[0], iterator=False, mutable=name == "list")
        if name in ("tuple", "list", "set", "frozenset", "sorted") and len(args) == 1:
            return Seq(iterate(args[0]))
        return None

    def _keyed(self, name: str, args: list[Value], call: CallArgs, where: Location,
               node: ast.Call) -> Value:
        """``sorted(t, key=f, reverse=r)``, ``min(t, key=f)``, ``max(t, key=f)`` over a tuple
        of known positions: ``f`` called on each element, as Python calls it, and the elements
        ordered by what it returns (a stable sort; the first of equal extremes); not known where
        a key is not one known value, or keys do not compare."""
        items = args[0] if len(args) == 1 else None
        if not isinstance(items, Tup) or items.partial_items:
            return None
        key = call.kw["key"].value if "key" in call.kw else NOT_SPECIAL
        known = [concrete(k) for k in self._keys_by(items.items, key, node, where, name)]
        reverse = concrete(call.kw["reverse"].value) if "reverse" in call.kw else False
        if any(k is UNKNOWN for k in known) or reverse is UNKNOWN or not items.items:
            return None
        positions = range(len(known))
        try:
            if name == "min":
                return items.items[min(positions, key=known.__getitem__)]
            if name == "max":
                return items.items[max(positions, key=known.__getitem__)]
            order = sorted(positions, key=known.__getitem__, reverse=bool(reverse))
        except TypeError:
            return None  # Python raises: no value
        return replace(items, items=tuple(items.items[i] for i in order), iterator=False,
                       mutable=True)

    def _keys_by(self, items: tuple[Value, ...], key: Value | object, node: ast.Call,
                 where: Location, name: str) -> list[Value]:
        """Each element's key as the call's key function gives it (the ``key=`` keyword, or
        ``key`` as given by position: :data:`NOT_SPECIAL` where the call gives none); the
        element itself where there is none, or it is ``None``."""
        if key is NOT_SPECIAL or (isinstance(key, Lit) and key.value is None):
            return list(items)
        key_node = next((k.value for k in node.keywords if k.arg == "key"), None) \
            if len(node.args) < 2 else node.args[1]
        return [self.call_with(cast(Value, key), key_node, [v], node, where, name)
                for v in items]

    def call_with(self, fn: Value, fn_node: ast.expr | None, args: list[Value], node: ast.Call,
                  where: Location, name: str) -> Value:
        """``fn(*args)`` for a function handed as a value (a key function, a folding
        function): one of Python's builtins written by its name, folded as a call of it is;
        any other function called as Python calls it."""
        call = CallArgs([Arg(a, where) for a in args], {}, False, where=where)
        if fn is None and isinstance(fn_node, ast.Name) and fn_node.id in BUILTINS and \
                self.builtin_name(fn_node.id):
            return self.builtin(fn_node.id, call, where, node)
        return self.apply(fn, call, node, where, name)

    def _bool_of(self, value: Value, where: Location) -> Value:
        """``bool(x)``: the truth of an object whose truth is known (a match, an iterator); a
        backend's declared flag itself (``bool(impl.lse_base_on_e)``: it is a bool)."""
        known = self.i.truth(value)
        if known is not None:
            return Lit(known, where)
        if value is not None and all(isinstance(a, Flag) for a in alternatives(value)):
            return value
        return None

    def str_method(self, func: ast.Attribute, node: ast.Call, name: str,
                   where: Location) -> Value | object:
        """A method of ``str`` called on a known string with known arguments
        (``"a,b".split(",")``, ``name.endswith("_mla")``): its value, folded as Python computes
        it (the builtin's own code on literals the source writes; nothing of the linted program
        runs); :data:`NOT_SPECIAL` where the receiver is not one known string."""
        texts = literal_values(self.expr(func.value))
        if not texts or len(texts) != 1 or not isinstance(texts[0], str) or \
                any(isinstance(a, ast.Starred) for a in node.args) or \
                any(k.arg is None for k in node.keywords):
            return NOT_SPECIAL
        args = [_one_literal(self.expr(a)) for a in node.args]
        kwargs = {k.arg: _one_literal(self.expr(k.value)) for k in node.keywords if k.arg}
        if any(a is NOT_SPECIAL for a in (*args, *kwargs.values())):
            return None  # an argument it does not know
        if (name == "format" and not safe_format(texts[0])) or (
                name in _WIDENS and any(isinstance(a, int) and a > _FOLD_MAX for a in args)):
            return None  # a result too large to build: not read
        try:
            result = getattr(texts[0], name)(*args, **kwargs)
        except (TypeError, ValueError, AttributeError):
            return None  # Python raises: no value
        return _folded(result, where)

    def arithmetic(self, func: ast.Attribute, node: ast.Call, op: ast.operator, *,
                   in_place: bool) -> Value:
        """``x.mul_(c)`` (``x *= c``, in place), ``x.add(c)`` (``x + c``): the operator."""
        if not in_place:  # ``lse.add(c)``: ``lse + c``, a new tensor
            return self.binop(func.value, self.expr(func.value), op, node.args[0])
        if dotted_name(func.value) is not None:
            current = self.expr(func.value)
            self.in_place(func.value, self.binop(func.value, current, op, node.args[0]))
            return self.expr(func.value)
        # ``lse.view(-1, h).mul_(c)``: the view is scaled and handed back, and so is the
        # tensor it views, whose storage it shares (wholly, or in part through a slice)
        scaled = self.binop(func.value, self.expr(func.value), op, node.args[0])
        root, whole = _viewed(func.value)
        before = self.expr(root) if root is not None else None
        if root is not None and lse_of(before) is not None:
            after = self.binop(root, before, op, node.args[0])
            self.in_place(root, after if whole else join([before, after]))
        return scaled

    def tensor_method(self, func: ast.Attribute, node: ast.Call, name: str,
                      where: Location) -> Value | object:
        """``x.f(...)``/``torch.f(x, ...)`` of the torch model (:mod:`.torch_model`): an
        in-place scaling, an exponential, a natural-log reduction, an op that keeps the base;
        :data:`NOT_SPECIAL` where the call is none of them (or runs an object's own method)."""
        arith = _ARITHMETIC.get(name.removesuffix("_"))
        if arith is not None and len(node.args) == 1 and not node.keywords and (
                name in ("mul_", "div_") or (dotted_name(func.value) is not None and
                                             lse_of(self.expr(func.value)) is not None)):
            return self.arithmetic(func, node, arith(), in_place=name.endswith("_"))

        if name == "copy_" and len(node.args) == 1 and not node.keywords:
            copied = self.copy_into(func.value, node.args[0])
            if copied is not NOT_SPECIAL:
                return copied
        for names, form in _TENSOR_FORMS:  # each may find the call is none of its
            if name in names:
                value = form(self, func, node, name, where)
                if value is not NOT_SPECIAL:
                    return value
        if name in KEEPS_BASE:
            return self.keeps_base(func, node, name)
        if name in PIECES or name in GATHERS:
            return self.pieces(func, node, name)
        if (gather := lse_ops.collective(name)) is not None:
            return self.collective(gather, node)
        return NOT_SPECIAL

    def copy_into(self, dst: ast.expr, src: ast.expr) -> Value | object:
        """``buf.copy_(lse)``, ``buf[:n].copy_(lse)``: the tensor ``buf`` holds the LSE now
        (wholly, or in the part a slice names: either), and the call hands ``buf`` back;
        :data:`NOT_SPECIAL` where what is copied is no LSE."""
        copied = self.expr(src)
        if lse_of(copied) is None:
            return NOT_SPECIAL
        root, whole = _viewed(dst)
        if root is None:
            return copied
        before = self.expr(root)
        self.in_place(root, copied if whole else join([before, copied]))
        return self.expr(dst)

    def collective(self, c: lse_ops.Collective, node: ast.Call) -> Value | object:
        """``group.all_gather(lse, dim=0)``, ``dist.all_to_all_single(out, lse)``: the LSE every
        rank sent, of its base, returned or in the buffer written (its layout not read: a rank
        axis comes in); :data:`NOT_SPECIAL` where what is sent is no LSE (the call is then read
        as any other)."""
        if len(node.args) <= c.source or any(isinstance(a, ast.Starred) for a in node.args) \
                or not _plain(node.args[c.source]):
            # read only what is read again at no cost where it is no LSE (the call is then
            # read as any other): a call in it would be interpreted twice, nested ones 2**n times
            return NOT_SPECIAL
        sent = lse_of(self.expr(node.args[c.source]))
        if sent is None:
            return NOT_SPECIAL
        for i, a in enumerate(node.args):
            if i != c.source:
                self.expr(a)
        for k in node.keywords:
            self.expr(k.value)
        gathered = lose_layout(sent)
        if c.item is not None:
            return Tup(tuple(gathered if i == c.item else None for i in range(c.item + 1)),
                       partial_items=True)
        if c.out is None:
            return gathered
        # the buffer written, through its views (``recv.reshape(-1).view(torch.uint8)``): all
        # of it where every step is a sure view of all of it, else (a step that may copy)
        # either value
        target = node.args[c.out]
        root, _ = _viewed(target)
        if root is not None:
            start, sure, _ = sure_view(target)
            self.in_place(root, gathered if sure and start is root else
                          join([self.expr(root), gathered]))
        return None

    def changed_args(self, func: Func, changed: tuple[tuple[str, Value], ...], call: CallArgs,
                     method: bool, sure: bool = True) -> None:
        """A callee changed the tensors of parameters in place: the caller's variables its
        arguments name (wholly: what the parameter holds at the callee's end; a view or slice
        of them: either) hold that now; ``sure``: not only on some of the callees a call
        dispatches to."""
        node = self.i.p.definition(func)
        if not changed or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return
        params = params_of(node)
        skip = 1 if method and not params.static else 0
        positional = params.names[skip:params.positional]
        for name, value in changed:
            arg = call.kw.get(name)
            if arg is None and name in positional and positional.index(name) < len(call.pos):
                arg = call.pos[positional.index(name)]
            if arg is None:
                continue
            for serial, target in sorted(arg.buffers, key=lambda b: (b[1].lineno, b[1].col_offset)):
                if serial != self.serial:
                    continue
                before = self.expr(target)
                whole = sure and arg.value is before
                self.in_place(target, value if whole else join([before, value]))

    def chosen(self, func: ast.Attribute, node: ast.Call, name: str,
               where: Location) -> Value | object:
        """``torch.where(c, x, y)``, ``torch.maximum(x, y)``, ``x.maximum(y)``, ``tl.where(c,
        x, y)``, ``tl.max(x, axis=0)``: each value of the result is one of the operands' (a
        constant fill adds none), so it is an LSE of every base they hold (a mix of two bases
        is of neither: what reads it in one base reads the other wrong); its layout lost.
        :data:`NOT_SPECIAL` where the call is none of these (an object's own method)."""
        root = (dotted_name(func.value) or "").partition(".")[0]
        if root in self.env and lse_ops.chosen_operands(name, method=True) is None:
            return NOT_SPECIAL  # a local's method Triton's names share (``x.view(...)``)
        namespace, receiver = self.torch_namespace(func.value, _VALUE_NAMESPACES)
        positions = _chosen_positions(namespace, name)
        if positions is None or any(isinstance(a, ast.Starred) for a in node.args):
            return NOT_SPECIAL
        values: list[Value] = []
        if namespace is None:  # a tensor's method: its receiver is the first operand
            values.append(self.expr(func.value) if receiver is NOT_SPECIAL
                          else cast(Value, receiver))
        for i, a in enumerate(node.args):
            v = self.expr(a)
            if i in positions:
                values.append(v)
        for k in node.keywords:
            self.expr(k.value)
        if namespace is None and lse_of(values[0]) is None:
            return not_a_tensor_method(values[0], False)
        found = [lse for v in values if (lse := lse_of(v)) is not None]
        if not found:
            return None
        return lose_layout(Lse(frozenset(s for lse in found for s in lse.sources)))

    def keeps_base(self, func: ast.Attribute, node: ast.Call, name: str) -> Value | object:
        """``lse.view(...)``, ``torch.transpose(lse, 0, 1)``: an LSE of the same base (its layout
        kept, swapped or lost); of what is no LSE, nothing, unless the receiver is an object
        whose own method the call runs (:data:`NOT_SPECIAL`: interpreted as any call)."""
        receiver = self.expr(func.value)
        for a in node.args:
            self.expr(a)
        rl = lse_of(receiver)
        if rl is not None:
            return through_method(name, node, rl)
        if isinstance(func.value, ast.Name) and func.value.id == "torch" and node.args:
            first = lse_of(self.expr(node.args[0]))
            if first is not None and name in TORCH_KEEPS:
                return through_function(name, node, first)
        if not isinstance(receiver, (Inst, ModuleRef, Ext, ExtInst, ClassRef)):
            return None
        return NOT_SPECIAL

    def pieces(self, func: ast.Attribute, node: ast.Call, name: str) -> Value | object:
        """``lse.unbind(0)``, ``torch.split(lse, 2)``: LSEs of its base, how many not known;
        ``torch.stack(parts)``, ``torch.cat(parts)``: one LSE of theirs; the layout lost
        either way. Of what holds no LSE, nothing (an object's own method: any call)."""
        on_torch = isinstance(func.value, ast.Name) and func.value.id == "torch"
        if on_torch and not node.args:
            return NOT_SPECIAL
        if not on_torch and name not in PIECES:
            return NOT_SPECIAL
        first = self.expr(node.args[0] if on_torch else func.value)
        lse = lse_of(iterate(first) if name in GATHERS else first)
        if lse is None and not on_torch:  # ``name.split(",")``: read as any call
            return NOT_SPECIAL
        for a in node.args[1 if on_torch else 0:]:
            self.expr(a)
        for k in node.keywords:
            self.expr(k.value)
        if lse is None or (name in GATHERS and {"e", "2"} <= {s.base for s in lse.sources}):
            # tensors of both bases in one: no LSE of either base (a row converted later,
            # ``stacked[1] *= ln 2``, is not followed row by row)
            return None
        return Seq(lose_layout(lse)) if name in PIECES else lose_layout(lse)

    def exponential(self, func: ast.Attribute, node: ast.Call, name: str,
                    where: Location) -> Value | object:
        """``torch.exp2(x)``/``x.exp2()``, ``torch.exp(x)``/``x.exp()``, ``x.softmax(dim)``,
        ``F.softmax(x, dim)``, ``torch.sigmoid(a - b)`` of an LSE (or of an LSE minus another, a
        hand-written merge's weight): each reads its operand in one base, so an LSE of the other
        is an error (AC023) here; the weight that comes out is no LSE."""
        op = lse_ops.exponential(func.attr)
        read = self.operand(func, node, op) if op is not None else NOT_SPECIAL
        if op is None or read is NOT_SPECIAL:
            return NOT_SPECIAL
        namespace, value = cast(tuple[str | None, Value], read)
        lse = lse_of(value)
        if lse is None:
            return not_a_tensor_method(value, namespace is not None)
        other = sorted((s for s in lse.sources if s.base in ("e", "2") and s.base != op.base),
                       key=source_order)
        if other:
            fn = f"{namespace}.{func.attr}" if namespace is not None else f".{func.attr}()"
            self.i.report(Weighed(fn, func.attr, op.base, tuple(other), where))
        return None

    def operand(self, func: ast.Attribute, node: ast.Call, op: lse_ops.Exponential, *,
                single: bool = False) -> tuple[str | None, Value] | object:
        """What ``op`` reads in a call of it, every argument read once: ``torch.f(x, ...)``,
        ``tl.f(x)`` (with the module's name) or ``x.f(...)`` (with None; the receiver read once,
        already where it is a dotted name). :data:`NOT_SPECIAL` where the call is no spelling
        of ``op`` (``single``: its module's form takes exactly one plain argument)."""
        namespace, receiver = self.torch_namespace(func.value)
        on_module = namespace is not None
        if (namespace not in op.namespaces) if on_module else not op.method:
            return NOT_SPECIAL
        if on_module and (not node.args or (single and (
                len(node.args) != 1 or isinstance(node.args[0], ast.Starred)))):
            return NOT_SPECIAL
        value = self.expr(node.args[0]) if on_module else \
            self.expr(func.value) if receiver is NOT_SPECIAL else cast(Value, receiver)
        for a in node.args[1:] if on_module else node.args:
            self.expr(a)
        for k in node.keywords:
            self.expr(k.value)
        return namespace, value

    def logarithm(self, func: ast.Attribute, node: ast.Call, name: str,
                  where: Location) -> Value | object:
        """``torch.log2(s)``, ``s.log()``, ``tl.log(s)`` of a tensor: a value in that base's
        units, as a log-sum-exp written by hand is (``m + tl.log2(acc)``: a merge's merged LSE,
        the LSE a kernel computes from its softmax's denominator), an LSE of that base made
        here (where the two sides of a test the flow cannot decide make it in two bases, its
        base is not read: :func:`~.torch_model.chosen_logs`); nothing of an LSE, or of what is
        no tensor."""
        op = cast(lse_ops.Exponential, lse_ops.logarithm(name))
        read = self.operand(func, node, op, single=True)
        if read is NOT_SPECIAL:
            return NOT_SPECIAL
        namespace, value = cast(tuple[str | None, Value], read)
        if namespace is None and any(isinstance(a, (Inst, ModuleRef, Ext, ClassRef))
                                     for a in alternatives(value)):
            return NOT_SPECIAL  # an object's own ``log()``
        if lse_of(value) is not None or not _maybe_tensor(value):
            return None
        fn = f"{namespace}.{name}" if namespace is not None else f".{name}()"
        return Lse(frozenset({Source(f"{LOG_KEY}{where}", op.base,
                                     f"the {fn} at {short_line(where)}", site=where)}))

    def torch_namespace(self, node: ast.expr, namespaces: frozenset[str] = EXPONENTIAL_NAMESPACES,
                        ) -> tuple[str | None, Value | object]:
        """The module of ``namespaces`` ``node`` names (``torch``; ``F`` bound by ``import
        torch.nn.functional as F``; ``torch.special``; Triton's ``tl``), else None: a tensor or
        another object;
        with what ``node`` evaluated to where it had to be read (else ``NOT_SPECIAL``)."""
        if isinstance(node, ast.Name) and node.id == "torch":
            return "torch", NOT_SPECIAL
        if dotted_name(node) is None:
            return None, NOT_SPECIAL
        found = self.expr(node)
        return (found.qualname if isinstance(found, Ext) and
                found.qualname in namespaces else None), found

    def base_reduction(self, func: ast.Attribute, node: ast.Call, name: str,
                       where: Location) -> Value | object:
        """``torch.logsumexp(x, ...)``, ``x.logsumexp(...)``, ``torch.logaddexp(a, b)``,
        ``torch.logaddexp2(a, b)``: :meth:`reduced`; anything else is not this."""
        on_torch = isinstance(func.value, ast.Name) and func.value.id == "torch"
        operands = list(node.args) if on_torch else [func.value, *node.args]
        values = [self.expr(a) for a in operands]
        for k in node.keywords:
            self.expr(k.value)
        if not any(lse_of(v) is not None for v in values):
            return not_a_tensor_method(values[0] if values else None, on_torch)
        fn = f"torch.{func.attr}" if on_torch else f".{func.attr}()"
        return self.reduced(func.attr, fn, values, where)

    def reduced(self, name: str, fn: str, values: list[Value], where: Location) -> Value:
        """A reduction of LSEs in one base (:data:`~.torch_model.BASE_REDUCTIONS`): the
        sources of that base, reduced (no layout); one of the other base is weighed in the
        wrong base there (``AC023``), and no LSE of either base comes of it."""
        base = BASE_REDUCTIONS[name]
        sources = [s for v in values if (lse := lse_of(v)) is not None for s in lse.sources]
        other = sorted((s for s in sources if s.base in ("e", "2") and s.base != base),
                       key=source_order)
        if other:
            self.i.report(Weighed(fn, name, base, tuple(other), where))
        kept = [s for s in sources if s.base == base]
        return lose_layout(Lse(frozenset(kept))) if kept else None

    def special(self, callee: Value, name: str, node: ast.Call) -> Value | object:
        """The value of a special form (:data:`_SPECIAL_FORMS`, tried in order);
        :data:`NOT_SPECIAL` where the call is none of them."""
        qual = callee.qualname if isinstance(callee, Ext) else ""
        for form in _SPECIAL_FORMS:
            value = form(self, callee, qual, name, node)
            if value is not NOT_SPECIAL:
                return value
        return NOT_SPECIAL

    def type_of(self, callee: Value, qual: str, name: str, node: ast.Call) -> Value | object:
        """``type(obj)``: the class of every object it may be; of one that may be of a
        subclass, that class or any subclass (a key no table entry matches for sure)."""
        if not (callee is None and isinstance(node.func, ast.Name) and name == "type" and
                len(node.args) == 1 and not node.keywords):
            return NOT_SPECIAL
        return join([ClassRef(o.cls, exact=o.exact) if isinstance(o, Inst) else
                     Ext(o.qualname) if isinstance(o, ExtInst) and
                     not o.qualname.startswith("?") else None
                     for o in alternatives(self.expr(node.args[0]))])

    def isinstance_form(self, callee: Value, qual: str, name: str,
                        node: ast.Call) -> Value | object:
        """``isinstance(obj, C)`` / ``issubclass(cls, C)`` (``C`` a class of the program, or a
        tuple of them): whether each object it may be is one, from its class's MRO; an object
        that may be of a subclass is one where its class is, is none where no class below it
        is, and not known otherwise."""
        if not (callee is None and isinstance(node.func, ast.Name) and len(node.args) == 2
                and name in ("isinstance", "issubclass") and not node.keywords):
            return NOT_SPECIAL
        obj, spec = self.expr(node.args[0]), self.expr(node.args[1])
        types = self._builtin_types(node.args[1]) if name == "isinstance" else None
        if types is not None:
            return self._is_instance_of_builtin(obj, types, node)
        return self._is_instance_of_classes(obj, spec, name, node)

    def _is_instance_of_classes(self, obj: Value, spec: Value, name: str,
                                node: ast.Call) -> Value:
        """``isinstance``/``issubclass`` against classes of the program."""
        targets = [t for alt in alternatives(spec)
                   for t in (alt.items if isinstance(alt, Tup) else (alt,))]
        infos = [self.i.class_info(t.cls) if isinstance(t, ClassRef) and t.exact else None
                 for t in targets]
        known = [i for i in infos if i is not None]
        if not infos or len(known) != len(infos):
            return None
        verdicts = {self._is_instance(o, name, known) for o in alternatives(obj)}
        if len(verdicts) != 1 or None in verdicts:
            return None
        return Lit(verdicts.pop(), place(self.path, node), f" (the value of {source_text(node)})")

    def _builtin_types(self, spec: ast.expr) -> tuple[type, ...] | None:
        """``int``, ``(int, float)``, ``type(None)``: the builtin scalar types a class spec
        names (names the program does not bind); None where it names anything else."""
        items = spec.elts if isinstance(spec, ast.Tuple) else [spec]
        out: list[type] = []
        for item in items:
            if isinstance(item, ast.Tuple):
                inner = self._builtin_types(item)
                if inner is None:
                    return None
                out += inner
            elif isinstance(item, ast.Name) and item.id in _BUILTIN_TYPES and \
                    self.expr(item) is None:
                out.append(_BUILTIN_TYPES[item.id])
            elif isinstance(item, ast.Call) and isinstance(item.func, ast.Name) and \
                    item.func.id == "type" and len(item.args) == 1 and not item.keywords and \
                    isinstance(item.args[0], ast.Constant) and item.args[0].value is None and \
                    self.expr(item.func) is None:
                out.append(type(None))
            else:
                return None
        return tuple(out)

    def _is_instance_of_builtin(self, obj: Value, types: tuple[type, ...],
                                node: ast.Call) -> Value:
        """``isinstance(x, (int, float))`` of a value the flow knows exactly (a backend's base
        flag: a bool): Python's own answer (``bool`` is an ``int``); not known where one value
        it may be is not known."""
        verdicts: set[bool] = set()
        for alt in alternatives(obj):
            # a container of the flow: a list (display, comprehension) or the tuple a kernel,
            # collective or combine returns (its record's ``(out, lse)``)
            sample: list[object] | tuple[()] | None = [] if isinstance(alt, Tup) and \
                alt.mutable else \
                () if isinstance(alt, Tup) and alt.partial_items and not alt.iterator else None
            if sample is not None:
                verdicts.add(isinstance(sample, types))
                continue
            values = flag_values(alt)
            if values is None or not all(isinstance(v, SCALARS) for v in values):
                return None
            verdicts |= {isinstance(v, types) for v in values}
        if not verdicts:
            return None
        where = place(self.path, node)
        how = f" (the value of {source_text(node)})"
        return join([Lit(v, where, how) for v in sorted(verdicts)])

    def _is_instance(self, obj: Value, name: str, targets: list[ClassInfo]) -> bool | None:
        """One object (``isinstance``) or class (``issubclass``) against the targets."""
        held = obj if isinstance(obj, Inst if name == "isinstance" else ClassRef) else None
        if not isinstance(held, (Inst, ClassRef)):
            return None
        cls = self.i.class_info(held.cls)
        return None if cls is None else self._is_subclass(cls, held.exact, targets)

    def _is_subclass(self, cls: ClassInfo, exact: bool, targets: list[ClassInfo]) -> bool | None:
        """Whether ``cls`` (or, not ``exact``, any class below it) is a subclass of a target.
        "No" only where every target is checked by its MRO alone: a target whose hierarchy
        reaches outside the program (``typing.Protocol``, ``abc.ABC`` with ``register``) or
        sets a metaclass or ``__subclasshook__``/``__instancecheck__`` may say yes to a class
        that does not inherit it."""
        if any(t in self.i.p.mro(cls) for t in targets):
            return True
        if not all(self._nominal(t) for t in targets):
            return None
        if exact:
            return False
        below = self.i.p.subclasses(cls)
        return None if any(t in self.i.p.mro(sub) for sub in below for t in targets) else False

    def _nominal(self, target: ClassInfo) -> bool:
        h = self.i.p.hierarchy
        for c in self.i.p.mro(target):
            node = self.i.p.class_node(c)
            if h.unresolved(c) or node is None or node.keywords or any(
                    m in c.methods for m in ("__subclasshook__", "__instancecheck__",
                                             "__subclasscheck__")):
                return False
        return True

    def identity(self, callee: Value, qual: str, name: str, node: ast.Call) -> Value | object:
        """``torch.compiler.disable(fn)``: ``fn``; ``copy.copy(x)``, ``copy.deepcopy(x)``: what
        ``x`` holds (a value here is never changed in place: a later store into the copy, or
        into ``x``, rebinds that name's value alone)."""
        if (qual in IDENTITY_WRAPPERS or qual in _COPIES or _is_new_type(callee)) and \
                len(node.args) == 1 and not node.keywords:
            return self.expr(node.args[0])
        return NOT_SPECIAL

    def partial(self, callee: Value, qual: str, name: str, node: ast.Call) -> Value | object:
        """``functools.partial(f, ...)``, ``partialmethod(f, ...)``: ``f`` with the arguments
        bound; a literal base bound here is one for every call."""
        method = name == "partialmethod" and (callee is None or qual.endswith(".partialmethod"))
        if not (method or _is_partial(callee, qual, name)):
            return NOT_SPECIAL
        if not node.args:
            return None
        target = self.expr(node.args[0])
        rest = ast.Call(func=node.args[0], args=node.args[1:], keywords=node.keywords)
        ast.copy_location(rest, node)
        call = self.args(rest)
        first = node.args[0]
        written = first.attr if isinstance(first, ast.Attribute) else (
            first.id if isinstance(first, ast.Name) else "")
        self.note_bound_literals(target, written, rest, call, place(self.path, node))
        return join([Partial(t.target if isinstance(t, Partial) else t,
                             (*(t.pos if isinstance(t, Partial) else ()), *call.pos),
                             tuple({**dict(t.kw if isinstance(t, Partial) else ()),
                                    **call.kw}.items()),
                             place(self.path, node), method,
                             call.opaque or (isinstance(t, Partial) and t.opaque),
                             call.maybe | (t.maybe if isinstance(t, Partial) else frozenset()))
                      for t in alternatives(target)])

    def note_bound_literals(self, target: Value, written: str, rest: ast.Call,
                            call: CallArgs, made: Location) -> None:
        """A literal base bound by a partial of a consumer (made at ``made``) is one for every
        call of it that does not give the keyword itself."""
        for t in alternatives(target):
            rec = t if isinstance(t, Rec) else self.records_for(
                t, callee_name(t, written), rest)
            for c in rec.consumers if rec is not None else ():
                if isinstance(c, Consumer):
                    self.note_literal(c, call, bound_by=made)

    def cast_(self, callee: Value, qual: str, name: str, node: ast.Call) -> Value | object:
        """``typing.cast(T, x)``: an instance of ``T`` where it names a class, else ``x``."""
        if not (qual in ("typing.cast", "typing_extensions.cast") or
                (callee is None and name == "cast")):
            return NOT_SPECIAL
        if len(node.args) == 2:
            typed = self.i.resolve_annotation(self.path, node.args[0])
            value = self.expr(node.args[1])
            return typed if typed is not None else value
        return None

    def super_(self, callee: Value, qual: str, name: str, node: ast.Call) -> Value | object:
        """``super()`` in a method: the instance, its lookups after the method's class."""
        if not (qual == "builtins.super" or (callee is None and name == "super" and
                                             isinstance(node.func, ast.Name))):
            return NOT_SPECIAL
        if node.args or node.keywords:
            return self._super_of(node)
        if self.self_value is not None and self.owner is not None:
            # the class the method is written in (its ``__class__`` cell), not the class of
            # the instance it runs on: a subclass's instance calling it looks past that class
            written = self.func.qualname.partition("@")[0].rpartition(".")[0] \
                if self.func is not None else ""
            here = (self.func.path, written) if self.func is not None else self.owner
            return Super(here if written and self.i.class_info(here) is not None
                         else self.owner, self.self_value)
        return None

    def _super_of(self, node: ast.Call) -> Value:
        """``super(T, obj)``: lookups in ``obj``'s MRO after ``T``, where ``T`` is one class
        known exactly (``type(self)`` of an object of exactly one class too) and ``obj`` one
        instance; unknown otherwise (never the argument-less form's class)."""
        if len(node.args) != 2 or node.keywords or \
                any(isinstance(a, ast.Starred) for a in node.args):
            return None
        after, obj = self.expr(node.args[0]), self.expr(node.args[1])
        if not (isinstance(after, ClassRef) and after.exact and isinstance(obj, Inst)):
            return None
        above, cls = self.i.class_info(after.cls), self.i.class_info(obj.cls)
        if above is None or cls is None or above not in self.i.p.mro(cls):
            return None  # Python raises where T is not in the object's MRO
        return Super(after.cls, obj)

    def getattr_form(self, callee: Value, qual: str, name: str,
                     node: ast.Call) -> Value | object:
        """``getattr(obj, name[, default])`` (:meth:`getattr_`)."""
        if callee is None and isinstance(node.func, ast.Name) and name == "getattr" and \
                len(node.args) in (2, 3) and not node.keywords:
            return self.getattr_(node)
        if qual == "inspect.getattr_static" and len(node.args) in (2, 3) and \
                not node.keywords and not self._descriptor_named(node):
            # the attribute as it is stored (no property run, no ``__getattr__``): for one
            # that is no descriptor, what ``getattr`` reads
            return self.getattr_(node)
        return NOT_SPECIAL

    def _descriptor_named(self, node: ast.Call) -> bool:
        """Whether ``getattr_static``'s name may be a property or another descriptor of a
        class of the program (it then returns the descriptor object, not its value)."""
        names = literal_values(self.expr(node.args[1]))
        if not names:
            return True
        for c in self.i.p.hierarchy.classes:
            slots = _slots(c)
            if slots is None or any(n in c.properties or n in slots for n in names):
                return True
        return False

    def hasattr_form(self, callee: Value, qual: str, name: str,
                     node: ast.Call) -> Value | object:
        """``hasattr(obj, "name")``: true where every way ``obj`` may be surely has it, false
        where none may (no class of the program sets it); else not known."""
        if not (callee is None and isinstance(node.func, ast.Name) and name == "hasattr" and
                len(node.args) == 2 and not node.keywords):
            return NOT_SPECIAL
        obj = self.expr(node.args[0])
        names = literal_values(self.expr(node.args[1]))
        if not names or len(names) != 1 or not isinstance(names[0], str):
            return None
        where = place(self.path, node)
        if self.i.has_surely(obj, names[0]):
            return Lit(True, where)
        if self.i.lacks(obj, names[0]):
            return Lit(False, where)
        return None

    def setattr_form(self, callee: Value, qual: str, name: str,
                     node: ast.Call) -> Value | object:
        """``setattr(obj, "name", value)``: the store ``obj.name = value`` it is."""
        if callee is None and isinstance(node.func, ast.Name) and name == "setattr" and \
                len(node.args) == 3 and not node.keywords and \
                isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str) \
                and node.args[1].value.isidentifier():
            target = ast.copy_location(ast.Attribute(node.args[0], node.args[1].value,
                                                     ast.Store()), node)
            self.assign(target, self.expr(node.args[2]), node.args[2])
            return Lit(None, place(self.path, node))
        return NOT_SPECIAL

    def get_form(self, callee: Value, qual: str, name: str, node: ast.Call) -> Value | object:
        """``d.get(key[, default])`` on a dict the flow holds (:meth:`dict_get`)."""
        if callee is None and name == "get" and isinstance(node.func, ast.Attribute) and \
                1 <= len(node.args) <= 2 and not node.keywords:
            table = self.expr(node.func.value)
            if any(isinstance(alt, DictV) for alt in alternatives(table)):
                return self.dict_get(table, node)
        return NOT_SPECIAL

    def dict_form(self, callee: Value, qual: str, name: str, node: ast.Call) -> Value | object:
        """``dict(k=v, ...)``, ``dict(m, k=v)``: the dict of its keywords over ``m``'s items;
        ``collections.ChainMap(a, b, ...)``: a lookup finds the first map's key, so the later
        maps lie under the earlier ones. Unknown where any part is not a dict the flow holds."""
        if callee is None and isinstance(node.func, ast.Name) and name == "dict" and \
                len(node.args) <= 1:
            where = place(self.path, node)
            first = [_pairs_dict(v, where) for a in node.args for v in (self.expr(a),)]
            call = self.args(ast.copy_location(ast.Call(node.func, [], node.keywords), node))
            if call.opaque or not all(isinstance(d, DictV) for d in first):
                return None
            return merged([*cast(list[DictV], first),
                           DictV(tuple(call.kw.items()), call.maybe)], place(self.path, node))
        if qual == "collections.defaultdict":
            return self._defaultdict(node)
        if qual == "collections.ChainMap" and not node.keywords:
            maps = [self.expr(a) for a in node.args]
            if any(isinstance(a, ast.Starred) for a in node.args) or \
                    not all(isinstance(d, DictV) for d in maps):
                return None
            return merged(cast(list[DictV], maps[::-1]), place(self.path, node))
        return NOT_SPECIAL

    def builtin_name(self, name: str) -> bool:
        """Whether ``name`` read here is Python's builtin: no local, parameter or global of
        the module binds it anywhere (a ``global`` statement in a function included)."""
        return name not in self.env and self.i.builtin_at(self.path, name)

    def fromkeys_form(self, callee: Value, qual: str, name: str,
                      node: ast.Call) -> Value | object:
        """``dict.fromkeys(keys, value=None)``: each key of a known iterable, in its order,
        mapped to the one value (None where none is given); unknown where a key is not
        known."""
        if not (name == "fromkeys" and callee is None and isinstance(node.func, ast.Attribute)
                and dotted_name(node.func.value) == "dict" and self.builtin_name("dict")):
            return NOT_SPECIAL
        where = place(self.path, node)
        if not 1 <= len(node.args) <= 2 or node.keywords or \
                any(isinstance(a, ast.Starred) for a in node.args):
            return None
        keys = concrete(self.expr(node.args[0]))
        if isinstance(keys, frozenset) and len(keys) <= 1:
            keys = tuple(keys)
        value = self.expr(node.args[1]) if len(node.args) == 2 else Lit(None, where)
        if not isinstance(keys, tuple | str) or len(keys) > _FOLD_MAX:
            return None  # not known, or a set (whose order, the dict's, is its hash order)
        names = [value_key(k) for k in keys]
        if any(k is None for k in names):
            return None
        return DictV(tuple((k, Arg(value, where)) for k in dict.fromkeys(cast(list[str], names))))

    def _defaultdict(self, node: ast.Call) -> Value:
        """``defaultdict(factory, mapping, k=v)``: the dict it starts with, and what a key
        it lacks reads as where indexed: the factory called with nothing (``lambda: True``,
        ``bool``); ``.get`` and ``in`` never call it. Unknown where a part is not read."""
        where = place(self.path, node)
        if len(node.args) > 2 or any(isinstance(a, ast.Starred) for a in node.args):
            return None
        start = [_pairs_dict(self.expr(a), where) for a in node.args[1:]]
        call = self.args(ast.copy_location(ast.Call(node.func, [], node.keywords), node))
        if call.opaque or not all(isinstance(d, DictV) for d in start):
            return None
        table = merged([*cast(list[DictV], start), DictV(tuple(call.kw.items()), call.maybe)],
                       where)
        if not node.args or not isinstance(table, DictV):
            return table
        factory, written = self.expr(node.args[0]), node.args[0]
        missing: Value = None
        if re.search(r"\bdefault_factory\b", self.i.module_text(self.path)):
            return table  # a factory replaced later: what a missing key reads is not known
        if isinstance(written, ast.Name) and written.id in _FACTORY_BUILTINS and factory is None:
            missing = Lit(_FACTORY_BUILTINS[written.id], where)
        elif isinstance(written, ast.Lambda) and isinstance(written.body, ast.Constant) and \
                not written.args.args:
            # ``lambda: True``: its value is the same whenever it is called (one that reads a
            # name is called at the lookup, with what the name holds then: not read)
            missing = self.expr(written.body)
        return replace(table, missing=missing)

    def replace_form(self, callee: Value, qual: str, name: str, node: ast.Call) -> Value | object:
        """``nt._replace(f=v)``, ``dataclasses.replace(obj, f=v)``: a new object of the same
        class, with the fields given replaced and the others as the old one holds them."""
        if name == "_replace" and isinstance(node.func, ast.Attribute):
            shown = node.func.value
            receiver, given = self.expr(shown), node
        elif qual == "dataclasses.replace" and len(node.args) == 1:
            shown = node.args[0]
            receiver = self.expr(shown)
            given = ast.copy_location(ast.Call(node.func, [], node.keywords), node)
        else:
            return NOT_SPECIAL
        held = [(obj, self._fields_of(obj)) for obj in alternatives(receiver)]
        call = self.args(given)
        if not held or any(names is None for _, names in held) or \
                (node.args and name == "_replace"):
            return None  # an object whose fields it does not hold: the copy is unknown
        where = place(self.path, node)
        return join([_replaced(self._held_fields(cast(Inst, obj), names or [], where,
                                                 shown if len(held) == 1 else None),
                               names or [], call, where) for obj, names in held])

    def base_contains_form(self, callee: Value, qual: str, name: str,
                           node: ast.Call) -> Value | object:
        """``frozenset.__contains__(obj, x)`` (``set``'s too) of an object of a set subclass
        of the program (:meth:`~.attributes.Resolver.builtin_content`): whether ``x`` is one
        of its elements, as the base's own method answers."""
        base = dotted_name(node.func) if name == "__contains__" else None
        if base not in ("frozenset.__contains__", "set.__contains__") or len(node.args) != 2 or \
                node.keywords or any(isinstance(a, ast.Starred) for a in node.args) or \
                not self.i.builtin_at(self.path, base.partition(".")[0]):
            return NOT_SPECIAL
        content = self.i.builtin_content(self.expr(node.args[0]), ())
        if content is NOT_SPECIAL or content is None:
            return None
        test = ast.copy_location(ast.Compare(node.args[1], [ast.In()], [node.args[0]]), node)
        return self.compare(test, self.expr(node.args[1]), ast.In(), cast(Value, content),
                            node.args[0])

    def make_form(self, callee: Value, qual: str, name: str, node: ast.Call) -> Value | object:
        """``C._make(iterable)`` of a ``NamedTuple`` class of the program: an object of its
        items as the fields, in order, made by ``tuple.__new__`` (a ``__new__`` the class
        writes does not run); not known where the items are not."""
        if name != "_make" or not isinstance(node.func, ast.Attribute) or \
                len(node.args) != 1 or node.keywords or isinstance(node.args[0], ast.Starred):
            return NOT_SPECIAL
        ref = self.expr(node.func.value)
        cls = self.i.class_info(ref.cls) if isinstance(ref, ClassRef) else None
        if cls is None or not self.i.is_named_tuple(cls):
            return NOT_SPECIAL  # not a NamedTuple of the program: its own ``_make``
        fields = cast(list[str], self.i.fields(cls))
        where = place(self.path, node)
        items = self.i.as_tuple(self.expr(node.args[0]), where)
        if not isinstance(items, Tup) or items.iterator or len(items.items) != len(fields):
            return None
        return self._built(cast(ClassRef, ref), cls, CallArgs(
            [Arg(v, where) for v in items.items], {}, False, where=where), where)

    def _held_fields(self, obj: Inst, names: list[str], where: Location,
                     shown: ast.expr | None = None) -> Inst:
        """``obj`` as built with each field it holds now: read as ``obj.f`` is where the
        object is named (a store since it was built, ``c.on_e = False``, is seen); else as it
        was built, or (built elsewhere) as any instance holds it."""
        if shown is not None and dotted_name(shown) is not None:
            reads = []
            for f in names:
                read = ast.Attribute(value=shown, attr=f, ctx=ast.Load())
                reads.append((f, self.expr(ast.copy_location(read, shown))))
            return Inst(obj.cls, obj.exact, (where, tuple(sorted(reads, key=lambda kv: kv[0]))))
        if obj.ctor is not None:
            return obj
        return Inst(obj.cls, obj.exact, (where, tuple(
            sorted(((f, self.i.inst_attr(obj, f, where)) for f in names),
                   key=lambda kv: kv[0]))))

    def fields_form(self, callee: Value, qual: str, name: str, node: ast.Call
                    ) -> Value | object:
        """``dataclasses.asdict(obj)``, ``nt._asdict()`` (a dict of the fields, in order) and
        ``dataclasses.astuple(obj)`` (a tuple): each field as the object holds it; a field
        holding another such object is not read (``asdict`` copies it into a dict too)."""
        if name == "_asdict" and isinstance(node.func, ast.Attribute) and not node.args and \
                _reevaluable(node.func.value):
            shown, as_dict = node.func.value, True
        elif qual in ("dataclasses.asdict", "dataclasses.astuple") and len(node.args) == 1 \
                and not node.keywords:
            shown, as_dict = node.args[0], qual.endswith("asdict")
        else:
            return NOT_SPECIAL
        receiver = self.expr(shown)
        where = place(self.path, node)
        out: list[Value] = []
        options = list(alternatives(receiver))
        for obj in options:
            names = self._fields_of(obj) if isinstance(obj, Inst) else None
            if names is None or (name != "_asdict" and not self.i.is_dataclass(cast(Inst, obj))):
                return None  # ``dataclasses.asdict`` of what is no dataclass raises
            held = self._held_fields(cast(Inst, obj), names, where,
                                     shown if len(options) == 1 else None)
            values = [self.i.inst_attr(held, f, where) for f in names]
            if name != "_asdict":  # ``nt._asdict()`` is shallow; the functions recurse
                values = [self._as_data(v, as_dict, where, 0) for v in values]
            out.append(DictV(tuple((f, Arg(v, where)) for f, v in zip(names, values,
                                                                       strict=True)))
                       if as_dict else Tup(tuple(values)))
        return join(out)

    def _as_data(self, value: Value, as_dict: bool, where: Location, depth: int) -> Value:
        """A field's value as ``dataclasses.asdict`` (``as_dict``) or ``astuple`` copies it: a
        dataclass instance becomes a dict (a tuple) of its fields, converted alike; a list,
        tuple or dict is rebuilt with its items converted; anything else is deep-copied
        (equal, so read as it is). Unknown past a few levels, for a ``NamedTuple`` (rebuilt
        as its own class, not followed) and for a dataclass whose fields are not known."""
        if depth > 3:
            return None
        out: list[Value] = []
        for alt in alternatives(value):
            if isinstance(alt, Inst) and self.i.is_dataclass(alt):
                names = self._fields_of(alt)
                if names is None or any(self.i.stored_outside_anywhere(f) for f in names):
                    return None  # (a field changed since it was built is not read from it)
                items = [self._as_data(self.i.inst_attr(alt, f, where), as_dict, where,
                                       depth + 1) for f in names]
                out.append(DictV(tuple((f, Arg(v, where)) for f, v in zip(
                    names, items, strict=True))) if as_dict else Tup(tuple(items)))
            elif isinstance(alt, Inst) and (c := self.i.class_info(alt.cls)) is not None and \
                    self.i.is_named_tuple(c):
                return None  # a NamedTuple: rebuilt as its class with its fields converted
            elif isinstance(alt, Tup) and not alt.iterator:
                out.append(replace(alt, items=tuple(self._as_data(i, as_dict, where, depth + 1)
                                                    for i in alt.items)))
            elif isinstance(alt, DictV):
                out.append(replace(alt, items=tuple(
                    (k, Arg(self._as_data(a.value, as_dict, where, depth + 1), a.where))
                    for k, a in alt.items)))
            elif isinstance(alt, Seq):
                out.append(replace(alt, item=self._as_data(alt.item, as_dict, where, depth + 1)))
            else:
                out.append(alt)
        return join(out)

    def library_collective(self, callee: Value, qual: str, name: str,
                           node: ast.Call) -> Value | object:
        """A collective of a library imported by name (``decode_cp_a2a_alltoall(...)``); a
        group's or ``torch.distributed``'s, called as a method, is a tensor method."""
        if not (isinstance(callee, Ext) and isinstance(node.func, ast.Name)):
            return NOT_SPECIAL
        gather = lse_ops.collective(qual.rpartition(".")[2])  # its own name, under any alias
        return NOT_SPECIAL if gather is None else self.collective(gather, node)

    def library_form(self, callee: Value, qual: str, name: str,
                     node: ast.Call) -> Value | object:
        """A pure function of the standard library (:mod:`math`, ``fnmatch``, ``operator``...,
        :data:`~.folding.LIBRARY_FUNCTIONS`) on known constants: what Python computes."""
        module, _, fn = qual.rpartition(".")
        if not _library_function(module, fn) or \
                any(isinstance(a, ast.Starred) for a in node.args) or \
                any(k.arg is None for k in node.keywords):
            return NOT_SPECIAL
        if module != "math" and not all(
                _reevaluable(a) for a in (*node.args, *(k.value for k in node.keywords))):
            return NOT_SPECIAL  # read as any other call: its arguments are evaluated once
        folded = fold_library(module, fn, [self.expr(a) for a in node.args],
                              {k.arg: self.expr(k.value) for k in node.keywords if k.arg},
                              place(self.path, node))
        if folded is UNKNOWN:
            # a number :mod:`math` gives is never an LSE; another function's result is
            # read as any other call's (``operator.neg(lse)`` keeps what it is handed)
            return None if module == "math" else NOT_SPECIAL
        return folded

    def generator_form(self, callee: Value, qual: str, name: str,
                       node: ast.Call) -> Value | object:
        """``filter(f, xs)``, ``map(f, xs)`` of Python's builtins: the generator expression
        each is (:func:`~.calls.as_generator`)."""
        if callee is not None or not isinstance(node.func, ast.Name) or \
                name not in ("filter", "map"):
            return NOT_SPECIAL
        generator = as_generator(node, self.i.synthetic)
        if generator is not None and node is self.stored:
            self.lazy = generator  # ``m = map(f, xs)``: run when consumed
        return NOT_SPECIAL if generator is None else self.expr(generator)

    def regex_form(self, callee: Value, qual: str, name: str, node: ast.Call) -> Value | object:
        """``re.compile(p)`` of a known pattern (a value naming it), and ``p.match(s)``,
        ``fullmatch``, ``search`` of it, or ``re.search(p, s)``, on a known string: whether
        Python's ``re`` finds a match (a match object, always true, or None)."""
        method = qual.startswith(PATTERN) and qual.rpartition(".")[2] in REGEX_FUNCTIONS
        if not (qual in ("re.compile", *(f"re.{f}" for f in REGEX_FUNCTIONS)) or method) or \
                any(isinstance(a, ast.Starred) for a in node.args) or node.keywords:
            return NOT_SPECIAL
        args = [self.expr(a) for a in node.args]
        if qual == "re.compile":
            pattern = compiled(args[0], args[1] if len(args) == 2 else None) \
                if len(args) in (1, 2) else None
            return None if pattern is None else ExtInst(pattern)
        function = qual.rpartition(".")[2]  # under any local name (``import search as m``)
        if method and len(args) == 1:
            return _matched(function, qual.removesuffix(f".{function}"), args[0],
                            place(self.path, node))
        if not method and len(args) in (2, 3):
            return _matched(function, compiled(args[0], args[2] if len(args) == 3 else None),
                            args[1], place(self.path, node))
        return None

    def globals_form(self, callee: Value, qual: str, name: str,
                     node: ast.Call) -> Value | object:
        """``globals()`` (the builtin, bound to nothing else): the module's namespace, read
        by a known key as the module's attribute (``globals()["f"]`` is ``f``)."""
        if name != "globals" or callee is not None or not isinstance(node.func, ast.Name) or \
                node.args or node.keywords:
            return NOT_SPECIAL
        return ModuleRef(self.path)

    def new_form(self, callee: Value, qual: str, name: str, node: ast.Call) -> Value | object:
        """``super().__new__(cls)``, ``object.__new__(cls)`` in the ``__new__`` an instance
        is created by: that instance (what ``__new__`` stores on it, every instance holds)."""
        if name != "__new__" or self.self_value is None or self.func is None or \
                not self.func.qualname.endswith(".__new__"):
            return NOT_SPECIAL
        fn = self.i.p.definition(self.func)
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or made_by_new(fn) is None:
            return NOT_SPECIAL  # it makes more than one, or may hand out something else
        self.args(node)
        return self.self_value

    def attrgetter_form(self, callee: Value, qual: str, name: str,
                        node: ast.Call) -> Value | object:
        """``operator.itemgetter(k)``: the function it builds (:func:`~.calls.as_itemgetter`).
        ``operator.attrgetter("a", "b.c")`` of known names: an object naming them; called
        on an object, what Python gives: ``obj.a``, or the tuple ``(obj.a, obj.b.c)`` in the
        order the names are written."""
        if any(isinstance(a, ast.Starred) for a in node.args) or node.keywords:
            return NOT_SPECIAL
        if qual == "operator.itemgetter":
            getter = as_itemgetter(node, self.i.synthetic)
            # a ``partial`` of it: no descriptor (a class attribute read through ``self``
            # is not bound to it), as ``itemgetter``'s object is not
            return None if getter is None else Partial(self.expr(getter))
        if qual == "operator.attrgetter" and node.args:
            names = [concrete(self.expr(a)) for a in node.args]
            if not all(isinstance(n, str) and n and "\x1f" not in n for n in names):
                return None
            return ExtInst(_ATTRGETTER + "\x1f".join(cast(list[str], names)))
        if not (isinstance(callee, ExtInst) and callee.qualname.startswith(_ATTRGETTER)) or \
                len(node.args) != 1:
            return NOT_SPECIAL
        obj, where = self.expr(node.args[0]), place(self.path, node)
        got: list[Value] = []
        for dotted in callee.qualname.removeprefix(_ATTRGETTER).split("\x1f"):
            value = obj
            for attr in dotted.split("."):
                value = self.i.attribute(value, attr, where)
            got.append(value)
        return got[0] if len(got) == 1 else Tup(tuple(got))

    def methodcaller_form(self, callee: Value, qual: str, name: str,
                          node: ast.Call) -> Value | object:
        """``operator.methodcaller("m", a, k=b)``: the function it builds
        (:func:`~.calls.as_methodcaller`), bound to the arguments as they are here."""
        if qual != "operator.methodcaller":
            return NOT_SPECIAL
        caller = as_methodcaller(node, self.i.synthetic)
        if caller is None:
            return None
        where = place(self.path, node)
        given = [*node.args[1:], *(k.value for k in node.keywords)]
        return Partial(self.expr(caller), tuple(Arg(self.expr(a), where) for a in given),
                       where=where)

    def itertools_form(self, callee: Value, qual: str, name: str,
                       node: ast.Call) -> Value | object:
        """``itertools.zip_longest``, ``chain``, ``takewhile``, ``dropwhile``, ``filterfalse``,
        ``compress``, ``pairwise`` over tuples of known positions: what they yield (a
        predicate is called on each element, as Python calls it; ``filterfalse(None, t)``
        tests each element's truth)."""
        module, _, fn = qual.rpartition(".")
        chained = self._chained(qual, node)
        if chained is not NOT_SPECIAL:
            return chained
        if module != "itertools" or fn not in ITERTOOLS or \
                any(isinstance(a, ast.Starred) for a in node.args) or \
                any(k.arg is None for k in node.keywords):
            return NOT_SPECIAL
        where = place(self.path, node)
        kw = {k.arg: self.expr(k.value) for k in node.keywords if k.arg is not None}
        fill = kw.get("fillvalue", Lit(None, where))
        if fn in ("takewhile", "dropwhile", "filterfalse") and len(node.args) == 2:
            pred = self.expr(node.args[0])
            if fn == "filterfalse" and isinstance(pred, Lit) and pred.value is None:
                return itertools_value(fn, [self.expr(node.args[1])], fill, truth)

            def keep(v: Value) -> bool | None:
                return truth(self.apply(pred, CallArgs([Arg(v, where)], {}, False, where=where),
                                        node, where, fn))
            return itertools_value(fn, [self.expr(node.args[1])], fill, keep)
        if fn == "groupby":
            return self._groupby(node, kw, where)
        return itertools_value(fn, [self.expr(a) for a in node.args], fill, None)

    def _chained(self, qual: str, node: ast.Call) -> Value | object:
        """``chain(*its)`` and ``chain.from_iterable(its)`` (which is ``chain(*its)``): the
        items of each iterable in turn, where ``its`` holds them at known positions;
        NOT_SPECIAL for any other call."""
        if node.keywords:
            return NOT_SPECIAL
        if qual == "itertools.chain.from_iterable" and len(node.args) == 1 and \
                not isinstance(node.args[0], ast.Starred):
            args: list[ast.expr] = [ast.Starred(node.args[0], ast.Load())]
        elif qual == "itertools.chain" and any(isinstance(a, ast.Starred) for a in node.args):
            args = node.args
        else:
            return NOT_SPECIAL
        if self.stored is node:
            # kept to be consumed later: a chain reads its iterables then, as they are then
            return None
        spread = self._spread(args)
        return None if spread is None else itertools_value("chain", spread, None, None)

    def _spread(self, args: list[ast.expr]) -> list[Value] | None:
        """A call's positional arguments with each ``*x`` spread into its items, as Python
        passes them, where ``x`` holds items at known positions; None where one does not."""
        out: list[Value] = []
        for a in args:
            if not isinstance(a, ast.Starred):
                out.append(self.expr(a))
                continue
            held = self.expr(a.value)
            items = characters(held) or held
            if not isinstance(items, Tup) or items.partial_items or items.iterator:
                return None  # (an iterator may have been advanced: what is left not known)
            out += items.items
        return out

    def _groupby(self, node: ast.Call, kw: dict[str, Value], where: Location) -> Value:
        """``itertools.groupby(t, key=f)`` over a tuple of known positions: its runs, each
        element's key as ``f`` (called as Python calls it) gives it, or the element itself."""
        if not node.args or len(node.args) > 2 or set(kw) - {"key"}:
            return None
        items = self.expr(node.args[0])
        key = self.expr(node.args[1]) if len(node.args) == 2 else kw.get("key", NOT_SPECIAL)
        if not isinstance(items, Tup) or items.partial_items:
            return None  # the elements not known
        return grouped(self._keys_by(items.items, key, node, where, "groupby"))

    def reduce_form(self, callee: Value, qual: str, name: str,
                    node: ast.Call) -> Value | object:
        """``functools.reduce(f, t[, initial])`` over a tuple of known positions: ``f`` called
        on the running value and each element in turn, as Python calls it; the initial value
        of an empty tuple (no value where it has none: Python raises)."""
        if qual != "functools.reduce" or not 2 <= len(node.args) <= 3 or node.keywords or \
                any(isinstance(a, ast.Starred) for a in node.args):
            return NOT_SPECIAL
        where = place(self.path, node)
        fn, items = self.expr(node.args[0]), self.expr(node.args[1])
        initial = [self.expr(node.args[2])] if len(node.args) == 3 else []
        if isinstance(items, (Seq, Lse)) and (item := iterate(items)) is not None:
            # elements not known one by one (a list grown, a tensor's rows): the first alone
            # (the initial value, where given: Python starts from it), or folded once or
            # twice with any of them (a longer run is read as the same)
            first = initial[0] if initial else item
            once = self.call_with(fn, node.args[0], [first, item], node, where, "reduce")
            twice = self.call_with(fn, node.args[0], [once, item], node, where, "reduce")
            return join([first, once, twice])
        if not isinstance(items, Tup) or items.partial_items:
            return None
        values = [*initial, *items.items]
        if not values:
            return None
        acc = values[0]
        for item in values[1:]:
            acc = self.call_with(fn, node.args[0], [acc, item], node, where, "reduce")
        return acc

    def triton_memory(self, callee: Value, qual: str, name: str,
                      node: ast.Call) -> Value | object:
        """``tl.load(p)``: the elements of the tensor ``p`` points into; ``tl.store(p, v)``:
        ``v`` written into part of the kernel argument ``p`` points into, which its launcher's
        caller sees changed (:mod:`.triton_model`)."""
        if qual not in (LOAD, STORE) or not node.args or \
                any(isinstance(a, ast.Starred) for a in node.args):
            return NOT_SPECIAL
        pointed = self.expr(node.args[0])
        rest = [self.expr(a) for a in node.args[1:]]
        values = {k.arg: self.expr(k.value) for k in node.keywords}
        if qual == LOAD:
            return pointed
        stored = rest[0] if rest else values.get("value")
        if lse_of(stored) is None:
            return None
        if self.i.stored is not None:  # handed back to the launcher's caller
            self.i.stored.append((place(self.path, node), stored))
        for root in pointer_roots(self.node, node.args[0]):
            self.in_place(root, join([self.expr(root), stored]))
        return None

    def _fields_of(self, obj: Value) -> list[str] | None:
        """The fields of an object of a class whose constructor is generated (exactly that
        class: a subclass may add fields)."""
        cls = self.i.class_info(obj.cls) if isinstance(obj, Inst) and (
            obj.ctor or obj.exact) else None
        return self.i.fields(cls) if cls is not None else None

    def getattr_(self, node: ast.Call) -> Value:
        """``getattr(obj, name[, default])``: the attribute of every name the second argument
        may be (a constant, a name bound to one, a table's values); unknown where it may be
        something else."""
        receiver = node.args[0]
        inner = self.expr(receiver)
        names = list(alternatives(self.expr(node.args[1])))
        default = self.expr(node.args[2]) if len(node.args) == 3 else None
        if not names or not all(isinstance(n, Lit) and isinstance(n.value, str) for n in names):
            return None
        values: list[Value] = []
        where = place(self.path, node)
        for n in names:
            attr = str(cast(Lit, n).value)
            # is the default ever taken here? (an object any caller may pass says nothing
            # where every caller is one of the program's calls, each read with its own)
            if len(node.args) == 3 and len(names) == 1 and not (
                    isinstance(inner, Param) and self.i.only_called(inner.path, inner.func)):
                _, dead = self.i.getattr_defaults.get(where, (attr, True))
                self.i.getattr_defaults[where] = (attr, dead and self.i.has_surely(inner, attr))
            value = self.i.attribute(inner, attr, where)
            # (a base attribute reads as the object's flag, which it may not have at all)
            if (value is None or isinstance(value, Flag)) and default is not None and \
                    self.i.lacks(inner, attr):
                value = replace(default, how=f" through getattr(..., {attr!r}, "
                                f"{default.value!r}), whose attribute nothing sets") \
                    if isinstance(default, Lit) else default
            values.append(value)  # set somewhere: its value (the default is for never-set ones)
        return join(values)

    def dict_method_form(self, callee: Value, qual: str, name: str,
                         node: ast.Call) -> Value | object:
        """``d.items()``, ``d.values()``, ``d.keys()``, ``d.setdefault(k, v)``, ``d.pop(k[, v])``
        on a dict the flow holds (every value it may be): what Python returns (a view as the
        tuple of its entries in order, where every key is sure to be there; else any of them),
        and the entry stored or removed."""
        if callee is not None or name not in _DICT_METHODS or \
                not isinstance(node.func, ast.Attribute) or node.keywords or \
                any(isinstance(a, ast.Starred) for a in node.args):
            return NOT_SPECIAL
        table = self._viewed_table(node, node.func.value, name)
        alts = list(alternatives(table))
        if not alts or not all(isinstance(a, DictV) for a in alts):
            return NOT_SPECIAL
        dicts = cast(list[DictV], alts)
        if name in ("items", "values", "keys"):
            return None if node.args else join([_view(d, name) for d in dicts])
        if not 1 <= len(node.args) <= 2 or (name == "setdefault" and len(node.args) == 1):
            return NOT_SPECIAL
        value = self.dict_get(table, node)
        d = dotted_name(node.func.value)
        if d is not None and d in self.env:
            self.env[d] = self._dict_after(dicts, name, node)
        return value

    def _viewed_table(self, node: ast.Call, held: ast.expr, name: str) -> Value:
        """The dict ``held`` names, for ``held.name(...)``: a view kept sees the dict as it is
        when read, not as it was here, so a module-level dict's view bound to a name (``S =
        T.keys()`` then ``T.update(...)``) is read as the dict ends."""
        if name in ("items", "values", "keys") and self.func is None and \
                isinstance(held, ast.Name) and held.id not in self.env:
            if node is self.stored:
                return self.i.global_value(self.path, held.id)
            if self.i.changed_after(self.path, held.id, node.lineno):
                return None  # a view that may be kept somewhere: read where it is, not here
        return self.expr(held)

    def _dict_after(self, dicts: list[DictV], name: str, node: ast.Call) -> Value:
        """The dict after ``setdefault``/``pop`` of a key; by a key it cannot read, any entry
        may be stored or gone: not known."""
        key = dict_key(node.args[0]) if isinstance(node.args[0], ast.Constant) else None
        if key is None:
            return None
        default = Arg(self.expr(node.args[1]) if len(node.args) == 2 else
                      Lit(None, place(self.path, node)), place(self.path, node))
        return join([dict_setdefault(t, key, default) if name == "setdefault" else dict_popped(t, key)
                     for t in dicts])

    def dict_get(self, table: Value, node: ast.Call) -> Value:
        """``d.get(key, default)`` on a dict the flow holds: the entry, or the default where
        the key may be absent; by a key it cannot see, any entry or the default."""
        default = self.expr(node.args[1]) if len(node.args) == 2 else \
            Lit(None, place(self.path, node))
        keys = self._table_keys(node.args[0])
        options: list[Value] = []
        for alt in alternatives(table):
            if not isinstance(alt, DictV):
                options.append(None)
                continue
            if keys is not None:
                if not keys:  # a key equal to none of a literal table's (a function)
                    options.append(default)
                for known in keys:
                    arg = alt.get(known)
                    options.append(arg.value if arg is not None else default)
                    if arg is None and alt.missing is not None:
                        # a defaultdict indexed before by that key holds the factory's value
                        options.append(alt.missing)
                    if arg is not None and known in alt.maybe:
                        options.append(default)
                continue
            options += [table_entry(a.value) for _, a in alt.items]
            options.append(table_entry(default))
        return join(options)

    def _table_keys(self, key: ast.expr) -> list[str] | None:
        """The DictV keys a key expression may be: a constant's; each class a class (``type
        (obj)``) may be, where each is one for sure; each value a known literal may be (a
        caller's string); none for an object equal to no constant (a function); None where
        it is not known."""
        if isinstance(key, ast.Constant):
            one = dict_key(key)
            return [one] if one is not None else None
        value = self.expr(key)
        classes = [class_key(k) for k in alternatives(value)]
        if classes and None not in classes:
            return [k for k in classes if k is not None]
        return [] if self.i.by_identity(value) else literal_keys(value)

    def apply(self, callee: Value, call: CallArgs, node: ast.Call, where: Location, name: str) -> Value:
        options = list(alternatives(callee))
        results = [self.apply_one(alt, call, node, where, name) for alt in options]
        return join(results) if len(results) > 1 else (results[0] if results else None)

    def apply_one(self, callee: Value, call: CallArgs, node: ast.Call, where: Location,
                  name: str) -> Value:
        if isinstance(callee, Partial):
            return self._apply_partial(callee, call, node, where, name)
        if name == "__new__" and call.pos and isinstance(call.pos[0].value, ClassRef) and \
                not isinstance(callee, (Func, Bound)):
            # (object's, tuple's, a generated one's; a program's ``__new__`` is called as any)
            return self._new_of(call.pos[0].value, call, where)
        rec = self.record_of(callee, name, node)
        if rec is not None:
            return self.record_call(rec, self.i.by_name(callee, call), node, where)
        if isinstance(callee, Func):
            return self.call_func(callee, call, node)
        if isinstance(callee, Bound):
            return self.apply_bound(callee, call, where, node)
        if isinstance(callee, ClassRef):
            return self.construct(callee, call, where)
        if isinstance(callee, Inst):
            return self.apply_inst(callee, call, node, where)
        self._escapes(call)
        if isinstance(callee, Ext):
            return self._apply_ext(callee, call, where)
        if callee is None and isinstance(node.func, ast.Name) and node.func.id[:1].isupper() \
                and node.func.id not in self.env:
            return ExtInst(f"?{node.func.id}")  # a class bound nowhere it sees: by its name
        if callee is None and isinstance(node.func, ast.Attribute):
            return self.apply_unknown_method(node.func, call, node, where)
        return None

    def _new_of(self, ref: ClassRef, call: CallArgs, where: Location) -> Value:
        """``super().__new__(cls)``, ``object.__new__(cls)``: the instance (in the ``__new__``
        a construction runs, the object it builds); ``super().__new__(cls, o, lse)`` reaching
        a generated ``__new__`` (a ``NamedTuple``'s): the object of those fields; any other's:
        not known."""
        if len(call.pos) > 1 or call.kw:
            return self._generated_new(ref, self.i.class_info(ref.cls),
                                       replace(call, pos=call.pos[1:]), where)
        made = self.self_value
        if made is not None and made.cls == ref.cls and self.func is not None and \
                self.func.qualname.endswith(".__new__"):
            return made
        return Inst(ref.cls, exact=ref.exact)

    def _escapes(self, call: CallArgs) -> None:
        """A ``partial`` handed to code the lint does not follow may be called there without
        the keywords it binds: each is kept, as by a call that does not give it."""
        for arg in (*call.pos, *call.kw.values()):
            for alt in alternatives(arg.value):
                if isinstance(alt, Partial):
                    self._note_kept(alt, None)

    def _note_kept(self, partial: Partial, call: CallArgs | None) -> None:
        """Whether a call of ``partial`` (None: one the lint does not see) keeps each keyword
        the partial binds, or gives its own, which replaces it (:meth:`~.analysis.Analysis.
        live_literal_sites`)."""
        if self.i.by_case or partial.where is None:
            return
        for kw, _ in partial.kw:
            self.i.partial_keywords.setdefault((partial.where, kw), set()).add(
                call is None or call.opaque or kw not in call.kw)

    def _apply_partial(self, callee: Partial, call: CallArgs, node: ast.Call, where: Location,
                       name: str) -> Value:
        # a keyword the call gives replaces the partial's; what the partial bound with a
        # ``**`` it could not read stays unread
        self._note_kept(callee, call)
        merged = CallArgs([*callee.pos, *call.pos], {**dict(callee.kw), **call.kw},
                       call.opaque or callee.opaque,
                       frozenset(callee.maybe - call.kw.keys()) | call.maybe, where)
        return self.apply(callee.target, merged, node, where, name)

    def _apply_ext(self, callee: Ext, call: CallArgs, where: Location) -> Value:
        module, _, fn = callee.qualname.rpartition(".")
        if module == "torch" and fn in BASE_REDUCTIONS and not call.opaque and any(
                lse_of(a.value) is not None for a in call.pos):
            # ``reduce(torch.logaddexp2, parts)``: the reduction, called through a value
            return self.reduced(fn, callee.qualname, [a.value for a in call.pos], where)
        return _library_call(callee, call, where)

    def record_of(self, callee: Value, name: str, node: ast.Call) -> Rec | None:
        """The records of a callee: its own, by its name or the name the call is written with."""
        if isinstance(callee, Rec):
            return callee
        own = callee_name(callee, name)
        rec = self.records_for(callee, own, node)
        if rec is None and own != name:
            rec = self.records_for(callee, name, node)  # a stub bound under the record's name
        return rec

    def call_func(self, callee: Func, call: CallArgs, node: ast.Call) -> Value:
        """A call of a function of the program: the implementation a ``singledispatch``
        function picks (:meth:`single_dispatch`), else the function."""
        chosen = self.single_dispatch(callee, call)
        if chosen is not None:
            return join([self.apply_func(f, call, node) for f in chosen])
        return self.apply_func(callee, call, node)

    def single_dispatch(self, callee: Func, call: CallArgs) -> list[Func] | None:
        """What a call of a ``functools.singledispatch`` function runs: the implementation
        registered for the first class in the first argument's type's MRO (``bool`` before
        ``int``), else the function itself; every one of them where the argument's type is
        not known. None for a function that is no such dispatcher."""
        fn = self.i.p.definition(callee)
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or "." in \
                callee.qualname or not any(_is_singledispatch(d) for d in fn.decorator_list):
            return None
        tree = self.i.p.tree(callee.path)
        registered = _registrations(tree, fn.name) if tree is not None else []
        funcs = {id(d): Func(callee.path, f"{d.name}@{d.lineno}", d) for _, d in registered}
        if not call.pos or any(types is None for types, _ in registered):
            return [callee, *funcs.values()]  # the argument, or a registered type, not read
        chosen: list[Func] = []
        for alt in alternatives(call.pos[0].value):
            mro = _builtin_mro(alt)
            if mro is None:
                return [callee, *funcs.values()]
            hit = next((d for name in mro for types, d in registered
                        if name in cast(frozenset[str], types)), None)
            pick = callee if hit is None else funcs[id(hit)]
            if pick not in chosen:
                chosen.append(pick)
        return chosen or [callee]

    def apply_func(self, callee: Func, call: CallArgs, node: ast.Call | None = None) -> Value:
        """A call of a function of the program: followed where it can matter, else what its
        annotation says it returns."""
        # a closure's enclosing values are arguments too (``bind(lse)(out)``)
        if not (call_matters(call) or call_matters(CallArgs([Arg(v) for _, v in callee.closure],
                                                         {}, False))
                or self.i.wants_return(callee) or (
                    isinstance(callee.node, ast.AST) and nonlocal_names(callee.node))):
            return self.i.declared_return(callee)
        s = self.i.analyse(callee, None, call)
        self.kernels |= s.kernels
        self.produced |= s.produced
        self.changed_args(callee, s.changed, call, method=False)
        if s.never and node is not None:
            self.never_returned.add(id(node))  # it raises on every path
        if s.nonlocals and self.node is not None and callee.node is not None and any(
                n is callee.node for n in ast.walk(self.node)):
            for name, value in s.nonlocals:  # a nested function rebinding this one's variable
                self.assign(ast.Name(name, ast.Store()), value)
        return s.returns if s.returns is not None else self.i.declared_return(callee)

    def apply_bound(self, callee: Bound, call: CallArgs, where: Location,
                    node: ast.Call) -> Value:
        """A method call: its result; the kernels it reaches and what it changes in place are
        this frame's too."""
        me = self.own_attrs_prefix(node)
        attrs = self.own_attrs(callee) if me is not None else ()
        if attrs:
            call = replace(call, self_attrs=attrs)
        value, kernels, produced, changed = self.i.call_bound(callee, call, where)
        if me is not None:
            # what the method stores on ``self`` is what this frame reads there afterwards,
            # not what it stored before the call
            fn = self.i.p.definition(callee.func)
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for attr in self.i.stored_attrs(fn):
                    self.env.pop(f"{me}{attr}", None)
        self.kernels |= kernels
        self.produced |= produced
        for func, params, sure in changed:
            self.changed_args(func, params, call, method=True, sure=sure)
        return value

    def own_attrs_prefix(self, node: ast.Call) -> str | None:
        """``self.`` where the call is ``self.m(...)`` on this method's own ``self`` (its first
        parameter, as written); None for any other receiver."""
        fn = self.node
        if self.self_value is None or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                or not fn.args.args or not isinstance(node.func, ast.Attribute):
            return None
        me = fn.args.args[0].arg
        held = node.func.value
        return f"{me}." if isinstance(held, ast.Name) and held.id == me else None

    def own_attrs(self, callee: Bound) -> tuple[tuple[str, Value], ...]:
        """``self.m(...)`` in a method: the attributes this frame stored on ``self`` before
        the call (``self.base = b``) that ``m`` reads, with their values here: Python's
        ``m`` reads the object as it is now, not as any instance of its class may be."""
        node = self.node
        if self.self_value is None or callee.self_value != self.self_value or \
                not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or \
                not node.args.args:
            return ()
        prefix = node.args.args[0].arg + "."
        stored = {k[len(prefix):]: v for k, v in self.env.items()
                  if k.startswith(prefix) and "." not in k[len(prefix):] and v is not None}
        if not stored:
            return ()
        read = self.i.self_reads(callee.func)
        return tuple(sorted(((a, v) for a, v in stored.items() if a in read),
                            key=lambda av: av[0]))

    def apply_inst(self, callee: Inst, call: CallArgs, node: ast.Call, where: Location) -> Value:
        """A call of an object: its class's ``__call__`` (or ``forward``, a module's)."""
        cls = self.i.class_info(callee.cls)
        if cls is None:
            return None
        for method in ("__call__", "forward"):
            owner = self.i.p.lookup(cls, method)
            if owner is not None:
                bound = Bound(Func(owner.path, f"{owner.name}.{method}"), callee,
                              (owner.path, owner.name))
                return self.apply_one(bound, call, node, where, method)
        return None

    def dunder(self, obj: Inst, method: str, arg: Value, node: ast.expr) -> Value | object:
        cls = self.i.class_info(obj.cls)
        owner = self.i.p.lookup(cls, method) if cls is not None else None
        if owner is None or not isinstance(node, (ast.Subscript, ast.Compare)):
            return NOT_SPECIAL
        where = place(self.path, node)
        bound = Bound(Func(owner.path, f"{owner.name}.{method}"), obj, (owner.path, owner.name))
        return self.apply_one(bound, CallArgs([Arg(arg, where)], {}, False, where=where),
                              _dunder_call(node, method, self.i.synthetic), where, method)

    def apply_unknown_method(self, func: ast.Attribute, call: CallArgs, node: ast.Call,
                             where: Location) -> Value:
        """``x.m(...)`` on a receiver of unknown type: a producer its module imports, a
        container growing, or an object changed in place (what it held is forgotten)."""
        prod = self.fallback_producer(func.attr, call)
        if prod is not None:
            return self.record_call(prod, call, node, where)
        if func.attr in GROWS and (dotted_name(func.value) is not None or
                                   isinstance(func.value, ast.Subscript)):
            grown = self.grow(func.value, func.attr, call)
            if grown is not NOT_SPECIAL:
                return cast(Value, grown)
        d = dotted_name(func.value)
        if d is None and func.attr in MUTATORS and isinstance(func.value, ast.Subscript):
            # ``T["k"].update(...)``: an item changed in place that the flow does not hold as
            # a list it can grow; what holds it is no longer read (never its old value)
            self.nested_store(func.value)
            return None
        if func.attr in ("reverse", "sort") and d is not None and d in self.env and any(
                isinstance(alt, (Tup, Seq)) for alt in alternatives(self.env[d])):
            self._reordered(d, func.attr, call)
            return Lit(None, where)
        # x.add_(...), kwargs.update(...), s.difference_update(...): changed in place;
        # forget what it was
        if d is not None and (func.attr.endswith("_") or func.attr in MUTATORS or
                              isinstance(self.env.get(d), DictV)):
            self.changed_in_place(d, func.attr, call)
        return None

    def _reordered(self, d: str, method: str, call: CallArgs) -> None:
        """``xs.reverse()``/``xs.sort()``: reordered in place: a known list reversed as Python
        reverses it; sorted (by a key not followed), its elements at positions not known."""
        self.env[d] = join([
            Tup(alt.items[::-1]) if isinstance(alt, Tup) and method == "reverse" and
            not alt.partial_items and not call.pos and not call.kw else
            Seq(iterate(alt)) if isinstance(alt, (Tup, Seq)) else alt
            for alt in alternatives(self.env[d])])

    def changed_in_place(self, d: str, method: str, call: CallArgs) -> None:
        """``d.update(...)`` of a dict the flow holds, with what it can read: the entries
        replaced; any other change in place: unknown (an LSE changed in place stays one)."""
        current = self.env.get(d)
        given: dict[str, Arg] | None = dict(call.kw)
        if call.pos:  # d.update(other): a dict it can read, then the keywords
            other = call.pos[0].value if len(call.pos) == 1 else None
            given = {**dict(other.items), **call.kw} if isinstance(other, DictV) and \
                not other.maybe else None
        if method == "update" and given is not None and not call.opaque and any(
                isinstance(alt, DictV) for alt in alternatives(current)):
            self.env[d] = join([_updated(alt, given) if isinstance(alt, DictV) else alt
                                for alt in alternatives(current)])
        elif not isinstance(current, Lse):
            self.env[d] = None
        self.same_object_changed(d, current, self.env.get(d))

    def grow(self, receiver: ast.expr, method: str, call: CallArgs) -> Value | object:
        """``xs.append(x)``, ``xs.extend(ys)``, ``s.add(x)``, ``xs.pop()`` on a list, tuple or
        set the flow holds: afterwards it holds those elements too (positions not known)."""
        d = dotted_name(receiver)
        current = self.env[d] if d is not None and d in self.env else self.expr(receiver)
        if not any(isinstance(a, (Tup, Seq)) for a in alternatives(current)):
            return NOT_SPECIAL
        # in a loop, positions would grow with each pass and never settle: an element
        # added there is at a position not known
        exact = _grown_exactly(current, method, call) if not self.breaks else None
        if exact is not None:
            after, returned = exact
            self.changed_to(receiver, d, current, after)
            return returned
        had = [iterate(a) for a in alternatives(current)
               if not (isinstance(a, Tup) and not a.items)]
        if method in ("pop", "popleft", "discard", "remove", "clear"):
            # still a subset of what it held, but no element is sure to be left
            self.changed_to(receiver, d, current, Seq(join(had)) if had else Tup(()))
            return join(had) if had and method in ("pop", "popleft") else None
        added = [a.value for a in call.pos[-1:]]
        if method in ("extend", "update", "extendleft"):
            added = [iterate(a.value) for a in call.pos]
        if call.opaque:
            added.append(None)
        self.changed_to(receiver, d, current, Seq(join([*had, *added])))
        return None

    def enum_call(self, ref: ClassRef, call: CallArgs) -> Value | object:
        """``E(v)`` of an Enum class of the program (:meth:`~.attributes.Resolver.enum_lookup`);
        NOT_SPECIAL for any other call of a class."""
        if len(call.pos) != 1 or call.kw or call.opaque:
            return NOT_SPECIAL
        return self.i.enum_lookup(ref, call.pos[0].value, True)

    def construct(self, ref: ClassRef, call: CallArgs, where: Location) -> Value:
        cls = self.i.class_info(ref.cls)
        if cls is None:
            return None
        member = self.enum_call(ref, call)
        if member is not NOT_SPECIAL:
            return cast(Value, member)  # ``E(v)``: the member whose value is v
        built = self._built(ref, cls, call, where)
        owner = self.i.p.lookup(cls, "__new__")
        new = self.i.p.methods(owner).get("__new__") if owner is not None else None
        if owner is None or new is None or not isinstance(built, Inst) or \
                made_by_new(new) is not None:
            # no ``__new__`` of the program, or one that makes and returns the object built
            # here (what it stores on it every instance holds, before ``__init__`` runs)
            return built
        # ``C(...)`` calls ``C.__new__(C, ...)`` first: the object it returns is the result
        # (one it makes with ``super().__new__(cls)`` is the object built here; a
        # ``NamedTuple``'s may be made of other fields than the call gave)
        return self.i.analyse(Func(owner.path, f"{owner.name}.__new__"), built, call).returns

    def _generated_new(self, ref: ClassRef, cls: ClassInfo | None, call: CallArgs,
                       where: Location) -> Value:
        """The generated ``__new__`` of a ``NamedTuple`` class (its fields given as ``call``
        gives them): the object of those fields; not known for any other class."""
        if cls is None or not self.i.is_named_tuple(cls):
            return None
        return self._built(ref, cls, call, where)

    def _built(self, ref: ClassRef, cls: ClassInfo, call: CallArgs, where: Location) -> Value:
        """The object the class's ``__init__`` (a generated one: its fields) is given
        ``call``'s arguments for."""
        args: list[tuple[str, Value]] = [(str(i), a.value) for i, a in enumerate(call.pos)]
        args += sorted(((k, a.value) for k, a in call.kw.items()), key=lambda kv: kv[0])
        if any(v == NOTHING_YET for _, v in args):
            # built of what a call cycle has not found yet: the object is not found yet
            # either (the cycle's later pass builds it of the value found), and an instance
            # kept with an unknown argument would stay beside that one for good
            return NOTHING_YET
        if self.i.fields(cls) is not None and (args or call.opaque):
            # a dataclass or NamedTuple holds what its constructor was given, wherever it is
            # built: each field its argument (unknown where not read), the default only where
            # the call omits it; ``*args``/``**kwargs`` may give any field
            if call.opaque:
                args.append((OPAQUE_ARGS, None))
            return Inst(ref.cls, exact=ref.exact, ctor=(where, tuple(args)))
        # an object built of what the flow holds (a literal, an LSE, an object built of them:
        # a config object's options) keeps it; one built of bare objects only is its class
        interesting = any(v is not None and not isinstance(v, ExtInst) and
                          not (isinstance(v, Inst) and v.ctor is None) for _, v in args)
        ctor = (where, tuple(args)) if interesting and not call.opaque else None
        if ctor is not None and self.module_level:
            ctor = None  # module-level singletons: their attributes from the class
        return Inst(ref.cls, exact=ref.exact, ctor=ctor)


def _slots(cls: ClassInfo) -> frozenset[str] | None:
    """The names a class's ``__slots__`` makes descriptors of; None where it is not a literal
    (any name may be one)."""
    if "__slots__" not in cls.attrs:
        return frozenset()
    node = cls.attrs["__slots__"][0]
    elts = node.elts if isinstance(node, (ast.Tuple, ast.List, ast.Set)) else [node]
    names = [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return frozenset(names) if len(names) == len(elts) else None


#: the builtins that iterate over their first argument (a dict: its keys)
_ITERATES_FIRST = frozenset({"frozenset", "set", "tuple", "list", "sorted", "len", "any", "all",
                             "min", "max", "sum", "iter", "enumerate", "reversed", "zip"})


def _updated(d: DictV, given: dict[str, Arg]) -> DictV:
    """``d.update(given)``: each key in its place where ``d`` has it, the new ones after, in
    order (as a dict keeps the order keys were first inserted in)."""
    items = dict(d.items)
    items.update(given)
    return replace(d, items=tuple(items.items()), maybe=d.maybe - set(given))


def _grown_exactly(current: Value, method: str, call: CallArgs) -> tuple[Value, Value] | None:
    """A change in place of a list or set the flow knows exactly, as Python makes it: (the
    container after, what the call returns). ``xs.append(x)`` and ``xs.extend(t)`` of a list
    whose positions are known, ``xs.pop()`` of its last item; ``s.add(x)``/``s.update(t)`` of a
    set every element of which is sure, with elements that are sure too. None elsewhere."""
    if call.opaque or call.kw or call.where is None or not isinstance(current, (Tup, Seq)):
        return None
    args = [a.value for a in call.pos]
    if isinstance(current, Tup) and not current.partial_items:
        return _list_changed(current, method, args)
    if isinstance(current, Seq) and current.complete and method in ("add", "update") and \
            len(args) == 1:
        return _set_grown(current, method, args[0], call.where)
    return None


def _list_changed(current: Tup, method: str, args: list[Value]) -> tuple[Value, Value] | None:
    if method == "append" and len(args) == 1:
        return replace(current, items=(*current.items, args[0])), Lit(None)
    more = (characters(args[0]) or args[0]) if method == "extend" and len(args) == 1 else None
    if isinstance(more, Tup) and not more.partial_items:
        return replace(current, items=(*current.items, *more.items)), Lit(None)
    if method == "pop" and not args and current.items:
        return replace(current, items=current.items[:-1]), current.items[-1]
    return None


def _set_grown(current: Seq, method: str, arg: Value,
               where: Location) -> tuple[Value, Value] | None:
    one = literal_values(arg) if method == "add" else None
    added = members_of(characters(arg) or arg) if method == "update" else (
        (one, True) if one is not None and len(one) == 1 else None)
    sure = members_of(current)
    if added is None or not added[1] or sure is None:
        return None
    return abstract(frozenset((*sure[0], *added[0])), where), Lit(None)


#: the special forms :meth:`Frame.special` tries, in order (each returns NOT_SPECIAL where the
#: call is not it)
_SPECIAL_FORMS = (Frame.type_of, Frame.isinstance_form, Frame.identity, Frame.partial,
                  Frame.cast_, Frame.super_, Frame.getattr_form, Frame.hasattr_form,
                  Frame.setattr_form,
                  Frame.get_form, Frame.dict_form, Frame.fromkeys_form,
                  Frame.replace_form, Frame.fields_form, Frame.make_form,
                  Frame.base_contains_form, Frame.dict_method_form,
                  Frame.library_collective, Frame.triton_memory, Frame.itertools_form,
                  Frame.reduce_form,
                  Frame.library_form, Frame.regex_form, Frame.generator_form,
                  Frame.attrgetter_form, Frame.methodcaller_form, Frame.new_form,
                  Frame.globals_form)
#: the value ``operator.attrgetter("a", "b.c")`` is: an external object naming its attributes
_ATTRGETTER = "operator.attrgetter:"


def _matched(name: str, pattern: str | None, subject: Value, where: Location) -> Value:
    """What ``re``'s ``name`` returns for a known pattern and string: a match object (always
    true) or None; unknown where either is not known."""
    matched = UNKNOWN if pattern is None else fold_regex(name, pattern, subject)
    if matched is UNKNOWN:
        return None
    return ExtInst("re.Match") if matched else Lit(None, where)


def _plain(node: ast.expr) -> bool:
    """A name, an attribute or item of one, or a base-keeping tensor method of one
    (``lse.contiguous()``): what evaluates without running a call of the program."""
    if isinstance(node, (ast.Name, ast.Constant)):
        return True
    if isinstance(node, ast.UnaryOp):  # ``-1``
        return isinstance(node.operand, ast.Constant)
    if isinstance(node, ast.Attribute):
        return _plain(node.value)
    if isinstance(node, ast.Subscript):
        return _plain(node.value) and all(
            isinstance(n, (ast.Constant, ast.Name, ast.Slice, ast.Tuple, ast.UnaryOp,
                           ast.unaryop, ast.expr_context)) for n in ast.walk(node.slice))
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
        node.func.attr in KEEPS_BASE and _plain(node.func.value) and \
        all(_plain(a) for a in node.args) and all(_plain(k.value) for k in node.keywords)


def _chosen_positions(namespace: str | None, name: str) -> tuple[int, ...] | None:
    """The operands :meth:`Frame.chosen` reads for ``name`` called in ``namespace`` (Triton's,
    torch's; None: a tensor's method, the receiver -1), None where it is none it reads."""
    if namespace in NAMESPACES:
        return TRITON_CHOOSERS.get(name, (0,) if name in TRITON_KEEPS else None)
    if namespace == "torch" or namespace is None:
        return lse_ops.chosen_operands(name, method=namespace is None)
    return None


def _maybe_tensor(value: Value) -> bool:
    """What the flow does not hold as a Python number, string, container or program object on
    every path (``e_sum = 0.0`` before a loop that makes it a tensor): a tensor may be it."""
    return value is None or any(a is None or isinstance(a, (ExtInst, Param))
                                for a in alternatives(value))


def _is_new_type(callee: Value) -> bool:
    """A type made by ``typing.NewType(name, tp)``: at run time, calling it returns its
    argument (a tag for the type checker, never a conversion)."""
    return any(isinstance(c, ExtInst) and c.qualname in _NEW_TYPES for c in alternatives(callee))


_NEW_TYPES = frozenset({"typing.NewType", "typing_extensions.NewType"})

#: the modules whose functions :meth:`Frame.chosen` reads: torch's and Triton's
_VALUE_NAMESPACES = frozenset({"torch", *NAMESPACES})
#: the names :meth:`Frame.chosen` reads, in one of those modules or as a tensor's method
_CHOOSERS = frozenset({*TRITON_CHOOSERS, *TRITON_KEEPS, *(
    op.name for op in lse_ops.LSE_OPS if lse_ops.chosen_operands(op.name, method=False)
    is not None or lse_ops.chosen_operands(op.name, method=True) is not None)})
#: the torch model's forms :meth:`Frame.tensor_method` tries in order, by the names each reads
_TENSOR_FORMS = ((EXPONENTIALS, Frame.exponential),
                 (frozenset(op.name for op in lse_ops.LOGARITHMS), Frame.logarithm),
                 (frozenset(BASE_REDUCTIONS), Frame.base_reduction),
                 (_CHOOSERS, Frame.chosen))

#: the copies :meth:`Frame.identity` reads as the value copied
_COPIES = frozenset({"copy.copy", "copy.deepcopy"})
#: what a builtin type called with nothing makes (a ``defaultdict``'s factory)
_FACTORY_BUILTINS: dict[str, bool | int | float | str] = {"bool": False, "int": 0, "float": 0.0,
                                                          "str": ""}

#: the keywords of an iteration builtin that it is folded with (``zip(a, b, strict=True)``,
#: ``enumerate(t, start=1)``)
_ITERATION_KEYWORDS: dict[str, frozenset[str]] = {"zip": frozenset({"strict"}),
                                                  "enumerate": frozenset({"start"}),
                                                  "sorted": frozenset({"key", "reverse"}),
                                                  "min": frozenset({"key"}),
                                                  "max": frozenset({"key"})}

#: the builtin types ``isinstance`` is answered for (on constants, and on the containers the
#: flow builds)
_BUILTIN_TYPES: dict[str, type] = {"bool": bool, "int": int, "float": float, "str": str,
                                  "bytes": bytes, "complex": complex, "tuple": tuple,
                                  "list": list}

#: the builtins :meth:`Frame.builtin` reads
_BUILTIN_CALLS = BUILTINS | ITERATION
#: the methods of a dict :meth:`Frame.dict_method_form` reads
_DICT_METHODS = frozenset({"items", "values", "keys", "setdefault", "pop"})


def _view(d: DictV, name: str) -> Value:
    """``d.items()``/``.values()``/``.keys()``: its entries in order, where every key is sure
    to be there; else a container of any of them."""
    parts: list[Value] = [Tup((Lit(k, a.where), a.value)) if name == "items" else
                          a.value if name == "values" else Lit(k, a.where) for k, a in d.items]
    return Tup(tuple(parts), view=True) if not d.maybe else Seq(join(parts))


def _dunder_call(node: ast.Subscript | ast.Compare, method: str,
                 kept: dict[int, tuple[ast.AST, ast.AST | None]]) -> ast.Call:
    """The call a subscript or a membership test makes (``obj[k]`` is
    ``obj.__getitem__(k)``; ``k in obj`` is ``obj.__contains__(k)``), as a node placed where
    it is written (built once per node, kept alive with the tree)."""
    known = kept.get(id(node))
    if known is not None:
        return cast(ast.Call, known[1])
    receiver, arg = (node.value, node.slice) if isinstance(node, ast.Subscript) else (
        node.comparators[0], node.left)
    call = ast.Call(func=ast.Attribute(value=receiver, attr=method, ctx=ast.Load()),
                    args=[arg], keywords=[])
    ast.copy_location(call, node)
    ast.copy_location(call.func, node)
    kept[id(node)] = (node, call)
    return call


def _library_function(module: str, fn: str) -> bool:
    """A pure function of the standard library the lint folds (:mod:`math`'s, or one of
    :data:`~.folding.LIBRARY_FUNCTIONS`)."""
    return fn in MATH_FUNCTIONS if module == "math" else \
        fn in LIBRARY_FUNCTIONS.get(module, frozenset())


def _library_call(callee: Ext, call: CallArgs, where: Location) -> Value:
    """A function of another package called through a value (``reduce(operator.eq, t)``
    calls ``operator.eq``): a pure function of the standard library folded on known
    arguments, as written at a call (:meth:`Frame.library_form`); an instance of a class by
    its name; else not known."""
    module, _, fn = callee.qualname.rpartition(".")
    if not call.opaque and _library_function(module, fn):
        folded = fold_library(module, fn, [a.value for a in call.pos],
                              {k: a.value for k, a in call.kw.items()}, where)
        if folded is not UNKNOWN:
            return cast(Value, folded)
    made = _FACTORIES.get(callee.qualname)
    if made is not None:
        return ExtInst(made)
    return ExtInst(callee.qualname) if fn[:1].isupper() else None


#: functions of the standard library that return an object of a class of theirs (read as that
#: object: ``field()`` outside a dataclass body stays a ``Field``, which is true)
_FACTORIES = {"dataclasses.field": "dataclasses.Field"}


def _one_literal(value: Value) -> object:
    """The one Python value a value is: a literal's, or a tuple of literals' (``",".join(t)``);
    :data:`NOT_SPECIAL` where it may be several, or is not known."""
    if isinstance(value, Tup):
        items = [literal_values(v) for v in value.items]
        if all(i is not None and len(i) == 1 for i in items):
            return tuple(cast(list[object], i)[0] for i in items)
    if isinstance(value, DictV) and not value.maybe:
        # a dict of literals (``str.translate``'s table), keyed by the values written
        if class_keyed(value):
            return NOT_SPECIAL
        entries = {key_value(k): _one_literal(a.value) for k, a in value.items}
        if all(v is not NOT_SPECIAL for v in entries.values()):
            return entries
    one = literal_values(value)
    return one[0] if one is not None and len(one) == 1 else NOT_SPECIAL


def _replaced(obj: Inst, names: list[str], call: CallArgs, where: Location) -> Inst:
    """``obj`` with the fields ``call`` gives replaced (by keyword), the rest as it holds them."""
    old = dict(obj.ctor[1]) if obj.ctor is not None else {}
    args = {f: old[str(i)] if str(i) in old else old[f]
            for i, f in enumerate(names) if str(i) in old or f in old}
    args.update((k, a.value) for k, a in call.kw.items())
    if OPAQUE_ARGS in old or call.opaque:
        args[OPAQUE_ARGS] = None
    return Inst(obj.cls, obj.exact, (where, tuple(sorted(args.items(), key=lambda kv: kv[0]))))


#: what evaluating an expression may run or bind besides reading: a call, a binding
_EFFECTS = (ast.Call, ast.NamedExpr, ast.Await, ast.Yield, ast.YieldFrom)


def _reevaluable(node: ast.expr) -> bool:
    """Whether ``node`` may be evaluated twice with nothing changed by the first time (it
    calls nothing and binds nothing: names, attributes, literals, operators, ``a or b``), so a
    method's receiver is read once to fold it and again where it is not folded; a call in it
    counts only where it is itself a folded method of ``str`` on such a receiver
    (``name.lower().rpartition("_")``)."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and \
                sub.func.attr in _STR_METHODS and not sub.keywords:
            continue  # its receiver and arguments are walked in turn
        if isinstance(sub, _EFFECTS):
            return False
    return True


#: the methods of ``str`` folded on known strings (pure: their value is all they do)
_STR_METHODS = frozenset({
    "split", "rsplit", "splitlines", "strip", "lstrip", "rstrip", "lower", "upper", "casefold",
    "title", "capitalize", "replace", "startswith", "endswith", "removeprefix", "removesuffix",
    "partition", "rpartition", "count", "find", "rfind", "isdigit", "isalpha", "isalnum",
    "isidentifier", "islower", "isupper", "join", "zfill", "format", "translate", "center",
    "ljust", "rjust", "swapcase", "index", "rindex", "isspace", "isnumeric", "isdecimal",
    "istitle", "isascii", "isprintable", "expandtabs",
    # its comparisons, called as methods (``filter(name.__eq__, names)``)
    "__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__contains__"})
#: the str methods whose integer argument is the result's width (a huge one is not built)
_WIDENS = frozenset({"zfill", "center", "ljust", "rjust", "expandtabs"})
#: the largest folded string or list kept (a larger one is not read)
_FOLD_MAX = 4096


def _folded(result: object, where: Location) -> Value:
    """A folded str method's result as a value: a literal, or a tuple of literals (a list
    whose positions are known)."""
    if isinstance(result, (str, bool, int)) and (
            not isinstance(result, str) or len(result) <= _FOLD_MAX):
        return Lit(result, where)
    if isinstance(result, (list, tuple)) and len(result) <= _FOLD_MAX and \
            all(isinstance(x, str) for x in result):
        return Tup(tuple(Lit(x, where) for x in result))
    return None


def _spread(call: CallArgs, value: Value) -> set[str]:
    """``**value`` into ``call``'s keywords: a dict the flow holds (or one of several, each
    known: a key some lack may be absent); anything else makes the call opaque. The keys that
    may be absent."""
    maybe: set[str] = set()
    dicts = [alt for alt in alternatives(value) if isinstance(alt, DictV)]
    if len(dicts) == 1 and not isinstance(value, Union_):
        call.kw.update(dicts[0].items)
        maybe |= dicts[0].maybe
    elif dicts and all(isinstance(alt, DictV) for alt in alternatives(value)):
        maybe |= _spread_each(call, dicts)
    else:
        call.opaque = True
    return maybe


def _spread_each(call: CallArgs, dicts: list[DictV]) -> set[str]:
    """``**value`` where it is one of several dicts: each key any of them holds, with every
    value it may have; one some lack may be absent."""
    maybe: set[str] = set()
    keys = {k for d in dicts for k, _ in d.items}
    for k in keys:
        vals = [d.get(k) for d in dicts]
        call.kw[k] = Arg(join([a.value for a in vals if a is not None]),
                         next(a.where for a in vals if a is not None),
                         buffers=frozenset().union(
                             *(a.buffers for a in vals if a is not None)))
        if any(a is None for a in vals):
            maybe.add(k)
    maybe |= {k for d in dicts for k in d.maybe}
    return maybe


def _is_partial(callee: Value, qual: str, name: str) -> bool:
    """``functools.partial`` however it is imported (or bound nowhere the linter sees)."""
    return qual == "functools.partial" or (callee is None and name == "partial") or (
        qual.endswith(".partial") and name == "partial")


def _star_items(value: Value) -> list[Value] | None:
    """What ``*x`` passes by position: the items of a tuple, or of one of several tuples of one
    length (an element of a list of pairs), each position what any of them holds there; None
    where the positions are not known."""
    tuples = [t for t in alternatives(value) if isinstance(t, Tup)]
    if tuples and len(tuples) == len(list(alternatives(value))) and \
            len({len(t.items) for t in tuples}) == 1:
        return [join([t.items[i] for t in tuples]) for i in range(len(tuples[0].items))]
    return None


#: a tensor's arithmetic methods and the operator each is (``x.mul_(c)`` is ``x *= c`` in
#: place; ``x.add(c)`` is ``x + c``): read as the operator on an LSE
_ARITHMETIC: dict[str, type[ast.operator]] = {
    "mul": ast.Mult, "multiply": ast.Mult, "div": ast.Div, "divide": ast.Div,
    "true_divide": ast.Div, "add": ast.Add, "sub": ast.Sub, "subtract": ast.Sub}


def _viewed(node: ast.expr) -> tuple[ast.expr | None, bool]:
    """The variable or attribute a chain of views reads (``lse.view(...).transpose(0, 1)``,
    ``lse[:n]``), and whether the chain covers all of it (no slice on the way); None where the
    chain starts at anything else (a call's fresh result)."""
    whole = True
    while True:
        if dotted_name(node) is not None:
            return node, whole
        if isinstance(node, ast.Subscript):
            whole, node = False, node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr in KEEPS_BASE:
            node = node.func.value
        else:
            return None, whole


def _pairs_dict(value: Value, where: Location) -> Value:
    """``dict``'s positional argument: a dict as it is; a tuple of ``(key, value)`` pairs of
    known string keys (``dict(zip(names, flags))``) as the dict Python builds of it, a later
    pair over an earlier one of the same key; anything else as it is (not a dict)."""
    if not isinstance(value, Tup) or value.partial_items:
        return value
    items: dict[str, Arg] = {}
    for pair in value.items:
        if not (isinstance(pair, Tup) and len(pair.items) == 2 and not pair.partial_items):
            return value
        key = pair.items[0]
        if not (isinstance(key, Lit) and isinstance(key.value, str)):
            return value
        items[key.value] = Arg(pair.items[1], key.where or where)  # a repeated key keeps its place
    return DictV(tuple(items.items()), frozenset())


#: the builtin types a literal may be, each with the classes of its MRO (``bool`` is an ``int``)
_BUILTIN_MRO = {bool: ("bool", "int", "object"), int: ("int", "object"),
                float: ("float", "object"), str: ("str", "object"),
                type(None): ("NoneType", "object")}


def _builtin_mro(value: Value) -> tuple[str, ...] | None:
    """The names of the classes of a value's type, in MRO order, for a literal or a backend's
    declared flag (a bool); None for any other value."""
    if isinstance(value, Flag):
        return _BUILTIN_MRO[bool]
    if isinstance(value, Lit):
        return _BUILTIN_MRO.get(type(value.value))
    return None


def _is_singledispatch(dec: ast.expr) -> bool:
    return (dotted_name(dec) or "").rpartition(".")[2] == "singledispatch"


def _registrations(tree: ast.Module, name: str,
                   ) -> list[tuple[frozenset[str] | None, ast.FunctionDef]]:
    """The module-level functions registered on the dispatcher ``name`` (``@name.register``
    with the first parameter's annotation, or ``@name.register(T)``), each with the names of
    the classes it is registered for (None: a class not read, an ``A | B`` of them)."""
    out: list[tuple[frozenset[str] | None, ast.FunctionDef]] = []
    for st in tree.body:
        if not isinstance(st, ast.FunctionDef):
            continue
        for d in st.decorator_list:
            on = d.func if isinstance(d, ast.Call) else d
            if not (isinstance(on, ast.Attribute) and on.attr == "register" and
                    isinstance(on.value, ast.Name) and on.value.id == name):
                continue
            if isinstance(d, ast.Call):
                typed = d.args[0] if d.args else None
            else:
                params = [*st.args.posonlyargs, *st.args.args]
                typed = params[0].annotation if params else None
            out.append((_type_names(typed), st))
    return out


def _type_names(node: ast.expr | None) -> frozenset[str] | None:
    """``int``, ``int | float``, ``None``: the builtin classes an annotation names; None where
    it names another (a class whose place in a literal's MRO is not read)."""
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, right = _type_names(node.left), _type_names(node.right)
        return None if left is None or right is None else left | right
    if isinstance(node, ast.Constant) and node.value is None:
        return frozenset({"NoneType"})
    if isinstance(node, ast.Name) and node.id in ("bool", "int", "float", "str", "object"):
        return frozenset({node.id})
    return None
