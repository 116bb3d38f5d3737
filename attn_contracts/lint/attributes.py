"""Classes and attributes: what ``obj.attr`` is, for every kind of object.

An attribute of a module, an external name, a class, an enum member, ``super()``, an instance
(a dataclass's field from its constructor, a property's value, a method bound to it, what
methods store on ``self``), and the fields and declared returns the calls need.
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import replace
from typing import cast

from attn_contracts.findings import Location
from attn_contracts.lint.callers import Given
from attn_contracts.lint.callers import builds_own
from attn_contracts.lint.callers import every_call
from attn_contracts.lint.callers import named_as_attribute
from attn_contracts.lint.calls import OPAQUE_ARGS
from attn_contracts.lint.calls import CallArgs
from attn_contracts.lint.calls import literal_value
from attn_contracts.lint.calls import params_of
from attn_contracts.lint.classes import ClassInfo
from attn_contracts.lint.classes import assignment
from attn_contracts.lint.classes import dotted_name
from attn_contracts.lint.classes import own_nodes
from attn_contracts.lint.classes import statements
from attn_contracts.lint.containers import MUTATORS
from attn_contracts.lint.containers import literal_values
from attn_contracts.lint.containers import one_bool
from attn_contracts.lint.containers import truth
from attn_contracts.lint.containers import value_key
from attn_contracts.lint.modules import ModuleResolver
from attn_contracts.lint.modules import changes_of
from attn_contracts.lint.program import FuncNode
from attn_contracts.lint.torch_model import KEEPS_BASE_ATTRS
from attn_contracts.lint.torch_model import SWAPS
from attn_contracts.lint.torch_model import swap
from attn_contracts.lint.values import NOT_SPECIAL
from attn_contracts.lint.values import Arg
from attn_contracts.lint.values import Bound
from attn_contracts.lint.values import ClassKey
from attn_contracts.lint.values import ClassRef
from attn_contracts.lint.values import DictV
from attn_contracts.lint.values import Ext
from attn_contracts.lint.values import ExtInst
from attn_contracts.lint.values import Flag
from attn_contracts.lint.values import Func
from attn_contracts.lint.values import Inst
from attn_contracts.lint.values import Lit
from attn_contracts.lint.values import Lse
from attn_contracts.lint.values import Member
from attn_contracts.lint.values import ModuleRef
from attn_contracts.lint.values import Partial
from attn_contracts.lint.values import Seq
from attn_contracts.lint.values import Super
from attn_contracts.lint.values import Tup
from attn_contracts.lint.values import Union_
from attn_contracts.lint.values import Value
from attn_contracts.lint.values import alternatives
from attn_contracts.lint.values import join
from attn_contracts.lint.values import set_of

#: what generates a class's ``__init__`` from its annotated fields
_FIELD_DECORATORS = frozenset({"dataclass", "define", "frozen", "mutable", "s", "attrs",
                               "dataclass_transform"})


_FIELD_BASES = frozenset({"NamedTuple", "BaseModel", "TypedDict"})


def _is_auto(node: ast.expr) -> bool:
    return isinstance(node, ast.Call) and not node.args and not node.keywords and \
        (dotted_name(node.func) or "").rpartition(".")[2] == "auto"


def _auto_value(cls: ClassInfo, attr: str) -> int | str | None:
    """The value ``enum.auto()`` gives member ``attr`` of an Enum class, as Python's enum
    generates it: the previous member's int value + 1, starting at 1 (a ``Flag``: the next
    power of two; a ``StrEnum``: the member's name in lower case); None where ``attr`` is not
    assigned ``auto()``, or a value before it is no int."""
    if not _is_auto(cls.attrs[attr][0]):
        return None
    bases = {b.rpartition(".")[2] for b in cls.bases}
    if "StrEnum" in bases:
        return attr.lower()
    flag = bool(bases & {"Flag", "IntFlag"})
    last: int | None = None
    for name, (node, _, _) in sorted(cls.attrs.items(), key=lambda kv: kv[1][1:]):
        if name.startswith("_"):
            continue
        if _is_auto(node):
            value = 1 if last is None else ((1 << last.bit_length()) if flag else last + 1)
        elif isinstance(node, ast.Constant) and isinstance(node.value, int) and \
                not isinstance(node.value, bool):
            value = node.value
        else:
            return None  # a member whose value it does not read: what follows is not known
        if name == attr:
            return value
        last = value
    return None


_ENUM_BASES = frozenset({"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag"})
#: the names ``type`` puts in every class's namespace, and those it (or ``abc``, ``typing``)
#: may put there, by the class's bases and ``__slots__``
_TYPE_ADDS = ("__module__", "__doc__")
_TYPE_MAY_ADD = frozenset({"__dict__", "__weakref__", "__annotations__", "_abc_impl",
                           "__orig_bases__", "__parameters__", "__abstractmethods__"})


def _body_names(node: ast.ClassDef) -> list[str] | None:
    """The names a class body binds, in order (private ones mangled), where every statement
    of it is a definition, an assignment to names, an import, a docstring or ``pass``; None
    where one may bind a name or not (an ``if``, a loop, a ``try``, a ``del``, a call, a
    walrus) or the body has ``__slots__`` (each slot is a descriptor in the namespace)."""
    names: list[str] = []
    for st in node.body:
        bound = _statement_names(st)
        if bound is None:
            return None
        names += bound
    if "__slots__" in names:
        return None
    private = "_" + node.name.lstrip("_")
    return [private + n if n.startswith("__") and not n.endswith("__") else n for n in names]


def _statement_names(st: ast.stmt) -> list[str] | None:
    if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [st.name]
    if any(isinstance(n, (ast.NamedExpr, ast.Call)) for n in ast.walk(st)):
        return None  # a walrus binds a name; a call may (``vars().update``, a descriptor)
    if isinstance(st, ast.Assign) and all(isinstance(t, ast.Name) for t in st.targets):
        return [cast(ast.Name, t).id for t in st.targets]
    if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
        return [st.target.id] if st.value is not None else []
    if isinstance(st, (ast.Import, ast.ImportFrom)) and not any(a.name == "*" for a in st.names):
        return [(a.asname or a.name).partition(".")[0] for a in st.names]
    if isinstance(st, ast.Pass) or (isinstance(st, ast.Expr) and
                                    isinstance(st.value, ast.Constant)):
        return []
    return None


#: what decides an object's truth, in the order Python asks
_TRUTH = ("__bool__", "__len__")
#: class decorators of the standard library that add neither
_PLAIN_DECORATORS = frozenset({"dataclass", "final", "total_ordering", "unique",
                               "runtime_checkable"})


def _bits(member: Member) -> int | None:
    """A member's value where it is a known int (not a bool)."""
    v = member.value.value if isinstance(member.value, Lit) else None
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _member_names(cls: ClassInfo) -> list[tuple[str, int]]:
    """The names an Enum class's body binds that may be members (not private, no method,
    property or ``__init__`` store), with their lines, in definition order."""
    return [(name, line) for name, (_, line, _) in sorted(cls.attrs.items(),
                                                           key=lambda kv: kv[1][1:])
            if not (name.startswith("_") or name in cls.methods or name in cls.properties or
                    _in_init(cls, line))]


def _takes(fields: list[str], defaults: set[str], node: ast.Call) -> bool:
    """A generated ``__init__`` of ``fields`` (those of ``defaults`` have one) takes the
    call's arguments: none starred, no field twice or unknown, every one without a default."""
    if any(isinstance(a, ast.Starred) for a in node.args) or len(node.args) > len(fields):
        return False
    given = [*fields[:len(node.args)], *(k.arg for k in node.keywords)]
    return None not in given and len(given) == len(set(given)) and \
        set(given) <= set(fields) and all(f in given or f in defaults for f in fields)


def _frozen_dataclass(cls: ClassInfo) -> bool:
    """``@dataclass(frozen=True)`` on the class itself."""
    return any(isinstance(d, ast.Call) and _decorator_name(d) == "dataclass" and any(
        k.arg == "frozen" and isinstance(k.value, ast.Constant) and k.value.value is True
        for k in d.keywords) for d in cls.decorators)


def _decorator_name(node: ast.expr) -> str:
    """``@dataclasses.dataclass(frozen=True)``: "dataclass"."""
    return (dotted_name(node.func if isinstance(node, ast.Call) else node) or "").rpartition(
        ".")[2]


#: bases from outside the program that give an object no truth of its own
_PLAIN_BASES = frozenset({"ABC", "Generic", "Protocol", "object"})
#: of them, and the bases whose instances get no attribute of a name the program does not set
#: (``torch.nn.Module``'s ``__getattr__`` reads its registered parameters, buffers and modules)
_ATTRIBUTE_FREE_BASES = _PLAIN_BASES | {"Module"}
#: what an Enum class may define that changes how its members are made or compare
_MEMBER_MAKING = ("__new__", "_generate_next_value_", "__eq__", "__ne__", "__lt__", "__le__",
                  "__gt__", "__ge__", "__hash__", "_missing_")
#: what a ``Flag``'s members run for ``|``, ``&``, ``^``, ``~`` instead of the enum module's
_FLAG_OPERATORS = ("__or__", "__ror__", "__and__", "__rand__", "__xor__", "__rxor__",
                   "__invert__")
#: what ``==``, ``in`` and ``<`` run on an object instead of its builtin base's own
_COMPARING = ("__eq__", "__ne__", "__lt__", "__le__", "__gt__", "__ge__", "__contains__",
              "__hash__", "__iter__", "__len__")
#: what a set's ``|``, ``&``, ``-``, ``^`` run on an object instead of its builtin base's own
SET_OPERATORS = ("__or__", "__ror__", "__and__", "__rand__", "__sub__", "__rsub__", "__xor__",
                 "__rxor__")
#: what ``type`` gives every class (:meth:`Resolver._type_attr`)
_TYPE_ATTRS = frozenset({"__name__", "__qualname__", "__module__", "__mro__"})


#: how many calls of ``self``'s methods deep ``__init__``'s unconditional stores are read
_INIT_CALLS_DEEP = 3


def made_by_new(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> str | None:
    """The name ``__new__``'s body binds, at its top level, to the one object a ``__new__``
    call makes there (``self = super().__new__(cls)``) and returns wherever it returns; None
    where it makes none, more than one, or may return something else."""
    made = [st.targets[0].id for st in fn.body
            if isinstance(st, ast.Assign) and len(st.targets) == 1 and
            isinstance(st.targets[0], ast.Name) and isinstance(st.value, ast.Call) and
            isinstance(st.value.func, ast.Attribute) and st.value.func.attr == "__new__"]
    calls = [n for n in ast.walk(fn) if isinstance(n, ast.Call) and
             isinstance(n.func, ast.Attribute) and n.func.attr == "__new__"]
    returns = [n for n in own_nodes(fn.body) if isinstance(n, ast.Return)]
    if len(made) != 1 or len(calls) != 1 or not returns or not all(
            isinstance(r.value, ast.Name) and r.value.id == made[0] for r in returns):
        return None  # it makes more than one, or may return something else
    return made[0]


def _self_method_called(st: ast.stmt, me: str) -> str | None:
    """The method a statement calls on ``me`` as the whole of it (``self.m(...)``, ``x =
    self.m(...)``), run whenever the statement is; None for any other statement."""
    value = st.value if isinstance(st, (ast.Expr, ast.Assign)) else None
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and \
            isinstance(value.func.value, ast.Name) and value.func.value.id == me:
        return value.func.attr
    return None


def _is_classvar(annotation: ast.expr) -> bool:
    head = annotation.value if isinstance(annotation, ast.Subscript) else annotation
    return (dotted_name(head) or "").rpartition(".")[2] == "ClassVar"


class Resolver(ModuleResolver):
    """The resolution of module-level names, classes and attributes over the program."""


    def class_info(self, key: ClassKey) -> ClassInfo | None:
        return self.p.cls(key)

    def only_called(self, path: str, qualname: str) -> bool:
        """Whether the program's code runs the function ``qualname`` of ``path`` only by
        calling it by name (or as a method of ``self``/``cls``), in calls whose arguments it
        reads one by one: every reference to its name is such a call, and there is one (a
        function nothing calls is there for callers outside the program). Its reading for
        any caller then says nothing more: each call is read with its own arguments (one on
        another object, ``h.f(x)`` with ``h`` unknown, may not be)."""
        last = qualname.rpartition(".")[2]
        fn = self.p.function(path, qualname)
        # a decorator may keep the function elsewhere (a registry: called by a lookup); a
        # special method runs where Python calls it (``__init__`` when a class is built)
        if last.startswith("__") or not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) \
                or any((dotted_name(d) or "") not in ("staticmethod", "classmethod")
                       for d in fn.decorator_list):
            return False
        return bool(self.program_calls(last, own=True))

    def program_calls(self, last: str, *, partials: bool = True, own: bool = False,
                      ) -> list[tuple[str, Given]] | None:
        """Every call the program makes of the name ``last`` (a function's, a method's, a
        class's), with the module making it, where every reference to the name is one
        (:func:`~attn_contracts.lint.callers.every_call`; ``partials``: a ``partial`` of it
        counts as one; ``own``: only a call by its name, or on ``self``/``cls``); None where
        one is not."""
        key = (last, partials, own)
        if key not in self._program_calls:
            found: list[tuple[str, Given]] = []
            for path, tree in self.naming(last):
                given = every_call(tree, last, partials=partials, own=own) \
                    if tree is not None else None
                if given is None:
                    self._program_calls[key] = None
                    return None
                found += [(path, g) for g in given]
            self._program_calls[key] = found
        return self._program_calls[key]

    def naming(self, last: str) -> Iterator[tuple[str, ast.Module | None]]:
        """The program's modules whose text names ``last`` as a word, parsed."""
        word = re.compile(rf"\b{re.escape(last)}\b")
        for info in self.p.infos():
            text = self.module_text(info.path)
            if last in text and word.search(text):
                yield info.path, self.p.tree(info.path)

    def constructions(self, cls: ClassInfo) -> list[tuple[str, Given]] | None:
        """Every construction of exactly ``cls`` in the program, with the module making it:
        each call of its name, where every reference to it is a call made by that name in a
        module where the name is this class; None where an object of it may be built
        another way (a reference that is no call or a ``partial`` of it, a subclass, a
        decorator, a lookup by text, an attribute ``mod.Cls``, a class of the same name, code
        that builds ``type(x)(...)`` or ``cls(...)``, a metaclass, code that finds classes by
        reflection), or where nothing builds it."""
        key = (cls.path, cls.name)
        if key in self._constructions:
            return self._constructions[key]
        self._constructions[key] = None
        if not self._built_by_name(cls) or self._builds_any():
            return None
        calls = self.program_calls(cls.name, partials=False)
        self._constructions[key] = calls or None
        return self._constructions[key]

    def _built_by_name(self, cls: ClassInfo) -> bool:
        """Whether the program builds ``cls`` only by its name: a top-level class, no
        decorator or metaclass, no other class of its name, no ``cls()``/``type(self)()`` in
        its MRO, named in every module as this class and never as an attribute."""
        node = self.p.class_node(cls)
        if node is None or "." in cls.name or node.decorator_list or any(
                k.arg == "metaclass" for c in self.p.mro(cls)
                if (n := self.p.class_node(c)) is not None for k in n.keywords) or \
                sum(1 for info in self.p.infos() if cls.name in info.classes) != 1:
            return False
        for c in self.p.mro(cls):  # a base's ``cls()``/``type(self)()`` may build one
            tree = self.p.tree(c.path)
            if tree is None or c.name in builds_own(tree):
                return False
        for path, tree in self.naming(cls.name):
            if tree is None or named_as_attribute(tree, cls.name):
                return False
            bound = self.global_value(path, cls.name)
            if not (isinstance(bound, ClassRef) and bound.cls == (cls.path, cls.name) and
                    bound.exact):
                return False
        return True

    def _builds_any(self) -> bool:
        """Whether some code of the program builds an object of another object's class
        (``type(w)()``: of any class), or finds classes by reflection
        (``Base.__subclasses__()``, ``inspect.getmembers``, ``globals()``, ``vars()`` of the
        module; ``vars(obj)`` reads an object's attributes)."""
        if self._builds_any_memo is None:
            self._builds_any_memo = any(
                _REFLECTS.search(text) is not None or (
                    _BUILDS_ANY.search(text) is not None and
                    (t := self.p.tree(info.path)) is not None and "*" in builds_own(t))
                for info in self.p.infos() if (text := self.module_text(info.path)))
        return self._builds_any_memo

    def self_reads(self, func: Func) -> frozenset[str]:
        """The attributes a method reads on its first parameter (``self.base``)."""
        if func not in self._self_reads:
            node = self.p.definition(func)
            reads: frozenset[str] = frozenset()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.args.args:
                me = node.args.args[0].arg
                reads = frozenset(n.attr for n in ast.walk(node)
                                  if isinstance(n, ast.Attribute) and
                                  isinstance(n.ctx, ast.Load) and
                                  isinstance(n.value, ast.Name) and n.value.id == me)
            self._self_reads[func] = reads
        return self._self_reads[func]

    def returns_lse(self, cls: ClassInfo) -> bool:
        h = self.p.hierarchy
        for attr in self.returns_attrs:
            value = h.value(cls, attr)
            if isinstance(value, ast.Constant) and value.value is True:
                return True
        return False

    def attribute(self, obj: Value, attr: str, where: Location) -> Value:
        options = []
        for alt in alternatives(obj):
            options.append(self._attribute(alt, attr, where))
        return join(options) if len(options) > 1 else (options[0] if options else None)

    def _attribute(self, obj: Value, attr: str, where: Location) -> Value:
        if isinstance(obj, Lse):
            if attr in KEEPS_BASE_ATTRS:
                return swap(obj) if attr in SWAPS else obj
            return None
        if isinstance(obj, ModuleRef):
            return self._module_attr(obj, attr)
        if isinstance(obj, Ext):
            return self._ext_attr(obj, attr)
        if isinstance(obj, (Func, Partial)):
            return self._callable_attr(obj, attr)
        if isinstance(obj, ExtInst):
            return Ext(f"{obj.qualname}.{attr}")
        if isinstance(obj, Super):
            return self._super_attr(obj, attr)
        if isinstance(obj, ClassRef):
            if not obj.exact and attr in self.base_attrs:
                # ``type(self.impl).lse_base_on_e``: the class of an object that may be of any
                # subclass declares its base as each of them does, as its instances read it
                return Flag(attr, Inst(obj.cls, exact=False), where)
            return self._class_ref_attr(obj, attr)
        if isinstance(obj, Member):
            if attr == "value":
                cls = self.class_info(obj.cls)
                # (an ``__init__`` that sets ``self._value_`` makes the value itself)
                return None if cls is None or self._stores_self(cls, "_value_") else obj.value
            if attr == "name":
                return Lit(obj.name, where) if obj.name else None
            return self._member_attr(obj, attr, where)
        if isinstance(obj, Inst):
            if attr in self.given_attrs:  # a question's premise (Interpreter.value_at)
                return self.given_attrs[attr]
            return self.inst_attr(obj, attr, where)
        return None

    def _callable_attr(self, obj: Func | Partial, attr: str) -> Value:
        if isinstance(obj, Func):
            if attr in ("default", "__wrapped__") and obj.qualname in self._op_funcs:
                return obj  # ``torch.ops.ns.op.default``: the same overload
            return self.function_attr(obj, attr)
        # what a ``functools.partial`` object holds: its function (not the function's
        # attributes: a partial has a ``__dict__`` of its own)
        return obj.target if attr == "func" and not obj.method else None

    def _module_attr(self, obj: ModuleRef, attr: str) -> Value:
        b = self.p.member(obj.name, attr)
        if b is None:
            return None
        if b.kind == "assign":
            return self.global_value(b.module, b.name)
        return self._binding(b)

    def _ext_attr(self, obj: Ext, attr: str) -> Value:
        parts = obj.qualname.split(".")
        if parts[:2] == ["torch", "ops"] and len(parts) == 3:
            # ``torch.ops.<ns>.<name>``: the Python function registered for the op
            registered = self.custom_op(parts[2], attr)
            if registered is not None:
                return registered
        return Ext(f"{obj.qualname}.{attr}")

    def _super_attr(self, obj: Super, attr: str) -> Value:
        """``super().attr``: what the first class after the one it is written in (in the
        instance's MRO) binds in its body: a method, bound to the instance, or a class
        attribute's value (``super()`` skips what the instance itself holds). Not read where
        that class's attribute is a property, or a base outside the program may bind it."""
        cls = self.class_info(obj.self_value.cls)
        after = self.class_info(obj.after)
        if cls is None or after is None:
            return None
        order = self.p.mro(cls)
        order = order[order.index(after) + 1:] if after in order else self.p.mro(after)[1:]
        outside: bool | None = None  # asked once, at the first data attribute met
        for owner in order:
            if attr in owner.methods and attr not in owner.properties:
                return Bound(Func(owner.path, f"{owner.name}.{attr}"), obj.self_value,
                             (owner.path, owner.name), static=True)
            if outside is None:
                outside = self._outside_bases(cls)
            if attr in owner.properties and not outside and obj.self_value.exact and \
                    obj.self_value.ctor is None:
                # ``super().base``: the property run on the instance, where it is of exactly
                # its class (else a subclass's MRO may put another class here)
                return self.property_get(owner, attr, cls)
            if attr in owner.properties or outside:
                return None
            if attr in owner.attrs and not _in_init(owner, owner.attrs[attr][1]):
                return self._changed_in_body(owner, attr,
                                             self._body_value(owner, owner.attrs[attr][0]))
        return None

    def _class_ref_attr(self, obj: ClassRef, attr: str) -> Value:
        """``Class.attr``: a method, an Enum's member, or what every instance holds."""
        cls = self.class_info(obj.cls)
        if cls is None:
            return None
        if attr in _TYPE_ATTRS:
            return self._type_attr(obj, cls, attr)
        if attr == "__dict__":
            return self._namespace(obj, cls)
        if attr == "__members__" and self._is_enum(cls):
            return self._members_by_name(obj, cls)
        owner = self.p.lookup(cls, attr)
        if owner is not None:
            func = Func(owner.path, f"{owner.name}.{attr}")
            node = self.p.methods(owner).get(attr)
            if node is not None and any((dotted_name(d) or "").rpartition(".")[2] ==
                                        "classmethod" for d in node.decorator_list):
                # read from the class, a classmethod is bound to it: ``cls`` is the class
                return Partial(func, (Arg(obj, Location(cls.path, node.lineno, 1)),))
            return func
        if attr in cls.attrs and self._is_enum(cls) and not attr.startswith("_"):
            # an Enum's member is an object of its class; ``.value`` is what is assigned
            # (``auto()``: the value Python's enum generates for it)
            auto = _auto_value(cls, attr)
            return Member(obj.cls, attr, Lit(auto, Location(cls.path, cls.attrs[attr][1], 1))
                          if auto is not None else self.class_attr(cls, attr))
        return self.class_attr(cls, attr)

    def flag_combined(self, a: Member, op: ast.operator, b: Member, where: Location) -> Value:
        """``a | b``, ``a & b``, ``a ^ b`` of two members of one ``Flag`` class of the
        program, as Python's enum makes it: the member of the value the bits make (a defined
        one where a member has that value, else one named by the defined single bits it holds,
        in definition order); not known for any other class or value."""
        x, y = _bits(a), _bits(b)
        if x is None or y is None or a.cls != b.cls or not self._plain_flag(a.cls):
            return None
        value = x | y if isinstance(op, ast.BitOr) else x & y if isinstance(op, ast.BitAnd) \
            else x ^ y
        cls = cast(ClassInfo, self.class_info(a.cls))
        ref = ClassRef(a.cls)
        # every member the body defines (a zero or multi-bit one too), as ``F(value)`` finds
        defined = [(m, v) for name, _ in _member_names(cls)
                   if isinstance(m := self._class_ref_attr(ref, name), Member) and
                   (v := _bits(m)) is not None]
        same = next((m for m, v in defined if v == value), None)
        # one no member has: its ``name`` differs between Python versions, so it is not read
        return same if same is not None else Member(a.cls, "", Lit(value, where))

    def _plain_flag(self, key: ClassKey) -> bool:
        """A ``Flag`` class of the program that makes and compares its members as the enum
        module does."""
        cls = self.class_info(key)
        return cls is not None and self._is_flag(cls) and \
            not self._defines(cls, (*_MEMBER_MAKING, *_FLAG_OPERATORS))

    def _is_flag(self, cls: ClassInfo) -> bool:
        """An Enum class of the program with ``Flag`` (or ``IntFlag``) among its bases."""
        return any(b.rpartition(".")[2] in ("Flag", "IntFlag")
                   for c in self.p.mro(cls) for b in c.bases)

    def _defines(self, cls: ClassInfo, names: tuple[str, ...]) -> bool:
        """Whether a class of ``cls``'s MRO in the program binds one of ``names`` (a method,
        or any other value its body assigns: ``__or__ = _merge``)."""
        return any(n in c.methods or n in c.attrs for c in self.p.mro(cls) for n in names)

    def _member_attr(self, member: Member, attr: str, where: Location) -> Value:
        """``member.attr`` other than ``value`` and ``name``: an Enum member is an instance of
        its class, which Python builds by calling the class's ``__init__`` with the assigned
        value (a tuple: its items, one argument each), so it holds what that ``__init__``
        stores and what the class defines (a method, a property). Not known where the class
        makes its members itself (``__new__``, ``_generate_next_value_``), ``attr`` names a
        member, or the value ``__init__`` would take apart is not known."""
        cls = self.class_info(member.cls)
        if cls is None or not self._members_built_plainly(cls, attr):
            return None
        # the ``__init__`` its class writes, or a dataclass mixin's generated one
        init = self.p.lookup(cls, "__init__") is not None or self.fields(cls) is not None
        value = member.value
        if init and (value is None or (isinstance(value, Tup) and (
                value.partial_items or value.iterator))):
            return None  # the arguments ``__init__`` is called with are not known
        if init and self._reads_changing_globals(cls):
            return None  # members are built as the class body runs, not as the import ends
        items = value.items if isinstance(value, Tup) and not value.mutable else (value,)
        line = cls.attrs[member.name][1] if member.name in cls.attrs else cls.line
        inst = Inst(member.cls, exact=True, ctor=(
            Location(cls.path, line, 1),
            tuple((str(i), v) for i, v in enumerate(items)) if init else ()))
        return self.inst_attr(inst, attr, where)

    def _members_built_plainly(self, cls: ClassInfo, attr: str) -> bool:
        """An Enum class whose members Python's enum makes (no ``__new__`` or
        ``_generate_next_value_`` of its own), ``attr`` no member's name and stored on no
        member from outside the class (``E.A.flag = x``)."""
        return attr not in dict(_member_names(cls)) and \
            not self._defines(cls, ("__new__", "_generate_next_value_")) and \
            not self.stored_outside_anywhere(attr)

    def _reads_changing_globals(self, cls: ClassInfo) -> bool:
        """Whether the ``__init__`` of ``cls``'s MRO reads a name of its module that the module
        binds more than once or changes in place (what it holds as the class body runs is not
        what the import leaves)."""
        owner = self.p.lookup(cls, "__init__")
        fn = self.p.methods(owner).get("__init__") if owner is not None else None
        if fn is None or owner is None:
            return False
        loaded = sorted({n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and
                         isinstance(n.ctx, ast.Load)})
        return any(self.bound_often(owner.path, name) or self.changed_after(owner.path, name, 0)
                   for name in loaded)

    def _namespace(self, obj: ClassRef, cls: ClassInfo) -> Value:
        """``C.__dict__`` read as ``C`` is made (by a base's ``__init_subclass__``): the names
        ``C``'s own body binds (not its bases', private ones mangled), with those ``type``
        adds (``__module__``, ``__doc__``), as Python builds the class; a name stored on ``C``
        since may be there too. Its values are not read. Unknown read later (a store, a
        ``del``, ``setattr`` may have changed it), for a class that may be a subclass, one with
        a metaclass or a base from outside the program, or a body with statements other than
        definitions and plain assignments (an ``if``, a loop, ``__slots__``, a call that may
        be a descriptor's ``__set_name__``)."""
        node = self.p.class_node(cls)
        names = _body_names(node) if node is not None and obj.exact and self.defining and \
            not node.keywords else None
        if names is None or self._outside_bases(cls):
            # read after the class is made (a store, a ``del`` or ``setattr`` since may have
            # changed it), or a metaclass (a base's from outside the program) may add to it
            return None
        where = Location(cls.path, cls.line, 1)
        stored = {attr for (key, attr) in self.class_stores if key == obj.cls} - set(names)
        maybe = (_TYPE_MAY_ADD | stored) - set(names)
        keys = [*dict.fromkeys([*names, *_TYPE_ADDS]), *sorted(maybe)]
        return DictV(tuple((k, Arg(None, where)) for k in keys), frozenset(maybe))

    def enum_lookup(self, ref: ClassRef, key: Value, by_value: bool) -> Value | object:
        """``E["A"]`` (``by_value`` false: a member by its name) or ``E(v)`` (by its value), of
        an Enum class of the program, as Python's enum answers them: the member, where the key
        is one known literal and a member has it; NOT_SPECIAL where ``ref`` is no such Enum
        (``None`` where the key is not known, or no member has it: Python raises)."""
        cls = self.class_info(ref.cls)
        if cls is None or not self._is_enum(cls):
            return NOT_SPECIAL
        keys = literal_values(key)
        if keys is None or len(keys) != 1:
            return None
        if not by_value:
            name = keys[0]
            found = self._class_ref_attr(ref, name) if isinstance(name, str) and \
                name in cls.attrs else None
            return found if isinstance(found, Member) else None
        members = self.enum_members(ref)
        wanted = value_key(keys[0])
        for m in members.items if isinstance(members, Tup) else ():
            if not isinstance(m, Member) or not isinstance(m.value, Lit):
                return None  # a member whose value is not known may be the one
            if wanted is not None and value_key(m.value.value) == wanted:
                return m  # equal as Python's enum looks values up (True finds 1)
        return None

    def _members_by_name(self, ref: ClassRef, cls: ClassInfo) -> Value:
        """``E.__members__``: the mapping of every member's name (an alias's too) to the
        member, in definition order, as Python's enum builds it; its keys are names, never
        values."""
        items: list[tuple[str, Arg]] = []
        for name, line in _member_names(cls):
            member = self._class_ref_attr(ref, name)
            if not isinstance(member, Member):
                return None  # a name of the body that may or may not be a member
            items.append((name, Arg(member, Location(cls.path, line, 1))))
        return DictV(tuple(items))

    def enum_members(self, value: Value) -> Value:
        """What iterating ``value`` yields where it is an Enum class of the program: its
        members in definition order, as Python's enum iterates them (an alias, a member whose
        value equals an earlier one's, is not yielded; of a ``Flag``, neither is a member
        whose value is 0 or more than one bit); ``value`` itself where it is not one."""
        if not isinstance(value, ClassRef):
            return value
        cls = self.class_info(value.cls)
        if cls is None or not self._is_enum(cls):
            return value
        flag = self._is_flag(cls)
        members: list[Value] = []
        seen: list[object] = []
        for name, _ in _member_names(cls):
            member = self._class_ref_attr(value, name)
            if not isinstance(member, Member):
                continue
            if isinstance(member.value, Lit):
                known = member.value.value
                if known in seen or (flag and isinstance(known, int) and (
                        known <= 0 or known & (known - 1))):
                    continue  # an alias (or a Flag's zero or multi-bit member): not iterated
                seen.append(known)
            members.append(member)
        return Tup(tuple(members))

    def _type_attr(self, obj: ClassRef, cls: ClassInfo, attr: str) -> Value:
        """What ``type`` gives every class: its name, and its MRO (the classes of the program,
        in order; unknown where a base is not one of them). Of a class that may be a subclass
        (not ``exact``), only what each subclass shares: nothing here."""
        if not obj.exact:
            return None
        where = Location(cls.path, cls.line, 1)
        if attr == "__name__":
            return Lit(cls.name, where)
        if attr == "__qualname__":
            return Lit(cls.name, where)  # a class of the module's top level (nested: unknown)
        if attr == "__module__":
            info = self.p.info(cls.path)
            return Lit(info.name, where) if info is not None else None
        mro, outside = self.p.hierarchy.mro(cls)
        if outside:
            return None  # a base outside the program: where its classes stand, not known
        classes = [ClassRef((c.path, c.name), exact=True) for c in mro]
        return Tup(tuple(classes))

    def has_surely(self, obj: Value, attr: str) -> bool:
        """``hasattr(obj, attr)`` is true on every way ``obj`` may be: an instance or class of
        the program whose class (or an ancestor) assigns it in its body or defines it as a
        method, ``__init__`` too for an instance, and where no class of the family makes it a
        property (whose getter may raise ``AttributeError``: ``hasattr`` is then false)."""
        alts = list(alternatives(obj))
        if not alts or attr.startswith("__"):
            return False
        for alt in alts:
            if not isinstance(alt, (Inst, ClassRef)):
                return False
            cls = self.class_info(alt.cls)
            if cls is None:
                return False
            family = [cls] if alt.exact else self.p.subclasses(cls)
            if any(attr in above.properties for member in family
                   for above in self.p.mro(member)):
                return False
            owner = self.p.hierarchy.definer(cls, attr)
            in_body = owner is not None and (isinstance(alt, Inst) or
                                             not _in_init(owner, owner.attrs[attr][1]))
            if not in_body and self.p.lookup(cls, attr) is None:
                return False
        return True

    def store_refused(self, obj: Value, attr: str) -> bool | None:
        """Whether ``obj.attr = v`` raises, on every way ``obj`` may be: an instance of a
        frozen dataclass (``FrozenInstanceError``, an ``AttributeError``: True), an instance
        of a program class that takes any store (no ``__setattr__``, ``__slots__``,
        property or descriptor in its hierarchy: False); None where not known."""
        verdicts: set[bool] = set()
        for alt in alternatives(obj):
            cls = self.class_info(alt.cls) if isinstance(alt, Inst) else None
            if not isinstance(alt, Inst) or cls is None or self._outside_bases(cls):
                return None
            family = [cls] if alt.exact else self.p.subclasses(cls)
            for member in family:
                mro = self.p.mro(member)
                if any(_frozen_dataclass(c) for c in mro):
                    verdicts.add(True)
                elif any("__setattr__" in c.methods or "__slots__" in c.attrs or
                         attr in c.properties or attr in c.attrs for c in mro):
                    return None  # its own store, slots, a property or a class-level object
                else:
                    verdicts.add(False)
        return verdicts.pop() if len(verdicts) == 1 else None

    def builds_quietly(self, func: Value, node: ast.Call) -> bool:
        """``C(a=x)`` where ``C`` is one program class whose generated ``__init__`` (no
        ``__post_init__``, no ``__new__``) takes these arguments, every field without a
        default given, or ``C()`` of a class whose hierarchy defines neither ``__init__`` nor
        ``__new__`` (``object``'s run): it raises nothing."""
        cls = self.class_info(func.cls) if isinstance(func, ClassRef) and func.exact else None
        if cls is None or self._outside_bases(cls) or any(
                "__post_init__" in c.methods or "__new__" in c.methods for c in self.p.mro(cls)):
            return False
        fields = self.fields(cls)
        if fields is None:
            return not node.args and not node.keywords and self.p.lookup(cls, "__init__") is None
        return _takes(fields, {a for c in self.p.mro(cls) for a in c.attrs}, node)

    def lacks(self, obj: Value, attr: str) -> bool:
        """Reading ``attr`` on ``obj`` raises ``AttributeError`` on every way it may be: a
        ``getattr`` default is what it reads. An instance whose class and hierarchy never set
        it."""
        alts = list(alternatives(obj))
        return bool(alts) and all(self._lacks(alt, attr) for alt in alts)

    def _lacks(self, obj: Value, attr: str) -> bool:
        if isinstance(obj, (DictV, Tup, Lit)) and not (isinstance(obj, Tup) and obj.iterator):
            # a dict, list, tuple or constant: an object of a builtin type, which has the
            # attributes its type has and no other (it has no ``__dict__`` to be given one)
            kinds = (dict, defaultdict) if isinstance(obj, DictV) else (tuple, list) \
                if isinstance(obj, Tup) else (type(obj.value),)
            return not any(hasattr(k, attr) for k in kinds)
        if attr.startswith("__") or not isinstance(obj, Inst):
            # a function or a partial may be given the attribute anywhere (a decorator,
            # another module, ``__dict__``, ``functools.wraps``): never read as lacking it
            return False
        cls = self.class_info(obj.cls)
        # of any class of the family, for an object that may be of a subclass; none whose
        # class has a base from outside the program that may give it (``nn.Module`` gives
        # its instances parameters, buffers and modules only: no flag); none stored from
        # outside a class (``obj.attr = v``, ``setattr``) in any module
        key = (obj.cls, obj.exact, attr)
        if key not in self._lacks_memo:
            classes = [cls] if cls is not None and obj.exact else \
                self.p.family(cls) if cls is not None else None
            # a store through ``self`` in the classes' modules, or a computed one
            # (``setattr``, ``__dict__``, ``vars``), may set it on the object
            self._lacks_memo[key] = classes is not None and all(
                self.p.lookup(c, attr) is None and self.class_attr(c, attr) is None and
                not self._outside_bases(c, plain=_ATTRIBUTE_FREE_BASES) and
                not any(self._may_store(k.path, attr) for k in self.p.mro(c))
                for c in classes) and not self.stored_outside_anywhere(attr)
        return self._lacks_memo[key]

    def _may_store(self, path: str, attr: str) -> bool:
        """Whether a module stores ``attr`` through any object (``self.`` included), or
        stores attributes by computed names (:data:`_DYNAMIC_STORE`; ``setattr`` by a literal
        name is one :meth:`_stored_elsewhere` reads), read from its text once."""
        found = self._module_stores.get(path)
        if found is None:
            text = self.module_text(path)
            dynamic = _DYNAMIC_STORE.search(text) is not None
            found = self._module_stores[path] = (
                frozenset(m.group(1) for m in _ATTR_STORE.finditer(text)), dynamic)
        names, dynamic = found
        return dynamic or attr in names

    def stored_outside_anywhere(self, attr: str) -> bool:
        """Whether any module of the program stores ``attr`` through anything but ``self.``
        (:meth:`_stored_elsewhere`; a module whose text never names it is not read)."""
        found = self._outside_anywhere.get(attr)
        if found is None:
            found = self._outside_anywhere[attr] = any(
                attr in self.module_text(i.path) and attr in self._stored_elsewhere(i.path)
                for i in self.p.infos())
        return found

    def inst_attr(self, inst: Inst, attr: str, where: Location) -> Value:
        cls = self.class_info(inst.cls)
        if cls is not None and self.p.lookup(cls, "__getattribute__") is not None:
            return None  # every attribute read runs the class's own code: not followed
        if cls is not None and inst.ctor is not None:
            field = self._field_value(inst, cls, attr)
            if field is not NOT_SPECIAL:
                return cast(Value, field)
        if attr in self.base_attrs:
            return Flag(attr, inst, where)
        if cls is None:
            return None
        owner = self.p.lookup(cls, attr)
        aliased = self._aliased_method(inst, cls, attr) if owner is None else None
        if aliased is not None:
            return aliased
        if owner is not None:
            method = self._method_attr(inst, cls, owner, attr, where)
            if self._is_property(owner, attr) or not self._stores_self(cls, attr):
                return method
            # ``self.combine = f`` over a method ``combine``: the instance's own attribute
            # wins (a function in the class is no data descriptor); where ``__init__`` sets
            # it, always, else once it is set
            stored = self._instance_value(inst, cls, attr)
            return stored if self._init_sets(cls, attr) else join([method, stored])
        return self._instance_value(inst, cls, attr)

    def _aliased_method(self, inst: Inst, cls: ClassInfo, attr: str) -> Value:
        """``obj.legacy`` where a class body of ``obj``'s MRO assigns a function to
        ``legacy`` (``legacy = run``) and no method stores it on the instance: Python binds
        that function object to ``obj`` (a function is a descriptor); None elsewhere."""
        body = next((c for c in self.p.mro(cls) if attr in c.attrs and
                     not _in_init(c, c.attrs[attr][1])), None)
        if body is None or not isinstance(body.attrs[attr][0], (ast.Name, ast.Attribute)):
            return None  # no name of a function (the common case, a constant: cheap to tell)
        value = self.class_body_function(body, attr)
        if not isinstance(value, Func) or self.p.definition(value) is None or \
                self._stores_self(cls, attr) or self._class_store_sites(body, attr):
            return None  # stored on the instance, or on the class since: not this function
        return Bound(value, inst, (body.path, body.name), looked_up=attr)

    def _stores_self(self, cls: ClassInfo, attr: str) -> bool:
        """A method of ``cls``'s hierarchy stores ``self.<attr>``."""
        return any(attr in self._stored_attrs(fn) for c in self.p.mro(cls)
                   for fn in self.p.methods(c).values())

    def _instance_value(self, inst: Inst, cls: ClassInfo, attr: str) -> Value:
        """What an instance holds under ``attr``: what its construction stored, else what
        any instance of its class holds (:meth:`class_attr`)."""
        values: list[Value] = []
        if inst.ctor is not None:
            self._ensure_init(inst)
            values += self.stores.get((inst, attr), ())
        if not values:
            # an object that may be of any subclass holds what any of them holds (a class
            # attribute a subclass overrides: either value)
            family = [cls] if inst.exact or inst.ctor is not None else self.p.subclasses(cls)
            generic = _by_class([self.class_attr(c, attr) for c in family]) \
                if len(family) > 1 else self.class_attr(cls, attr)
            if generic is not None:
                values.append(generic)
        # ``m = partialmethod(f, ...)`` read from an instance: ``f`` bound to it
        values = [join([replace(alt, target=Bound(alt.target, inst, inst.cls), method=False)
                        if isinstance(alt, Partial) and alt.method and
                        isinstance(alt.target, Func) else alt for alt in alternatives(v)])
                  for v in values]
        return join(values) if values else None

    def _method_attr(self, inst: Inst, cls: ClassInfo, owner: ClassInfo, attr: str,
                     where: Location) -> Value:
        """A method of an instance's class: bound to it; a property: its value."""
        func = Func(owner.path, f"{owner.name}.{attr}")
        if self._is_property(owner, attr):
            # what the property returns (``return True``, ``return self._base``): read
            # like any call (its own calls followed where they can matter); on an object
            # that may be of a subclass, every override's
            bound = Bound(func, inst, (owner.path, owner.name))
            call = CallArgs([], {}, False, where=where)
            if inst.exact or len(self.p.subclasses(cls)) <= 1:
                return self.analyse(func, inst, call).returns
            return self.call_bound(bound, call, where)[0]
        return Bound(func, inst, (owner.path, owner.name))

    def as_tuple(self, value: Value, where: Location) -> Value:
        """``value`` where it is used as a tuple (unpacked, indexed, iterated): an instance of
        a ``NamedTuple`` class is the tuple of its fields (each as the attribute reads it);
        anything else is itself."""
        out = []
        changed = False
        for alt in alternatives(value):
            cls = self.class_info(alt.cls) if isinstance(alt, Inst) else None
            names = self.fields(cls) if cls is not None and any(
                b.rpartition(".")[2] == "NamedTuple" for c in self.p.mro(cls)
                for b in c.bases) else None
            if names is None:
                out.append(alt)
                continue
            changed = True
            out.append(Tup(tuple(self.attribute(alt, f, where) for f in names)))
        return (join(out) if len(out) > 1 else out[0]) if changed and out else value

    def is_named_tuple(self, cls: ClassInfo) -> bool:
        """Whether ``cls`` is a ``NamedTuple`` class of the program (its fields generated)."""
        return self.fields(cls) is not None and any(
            b.rpartition(".")[2] == "NamedTuple" for c in self.p.mro(cls) for b in c.bases)

    def is_dataclass(self, inst: Inst) -> bool:
        """Whether ``inst``'s class is a dataclass: a class of its MRO is decorated so."""
        cls = self.class_info(inst.cls)
        return cls is not None and any(dataclass_decorated(c) for c in self.p.mro(cls))

    def fields(self, cls: ClassInfo) -> list[str] | None:
        """The fields a generated ``__init__`` takes, in order (a dataclass, a ``NamedTuple``,
        an attrs or pydantic class: annotated class-level names, bases' first); None for a
        class whose ``__init__`` is written (or unknown)."""
        key = (cls.path, cls.name)
        if key in self._fields_memo:
            return self._fields_memo[key]
        self._fields_memo[key] = None
        generated = False
        names: list[str] = []
        for c in reversed(self.p.mro(cls)):
            bases = [b.rpartition(".")[2] for b in c.bases]
            if any(_decorator_name(d) in _FIELD_DECORATORS for d in c.decorators) or any(
                    b in _FIELD_BASES for b in bases):
                generated = True
            elif "__init__" in c.methods:
                generated = False  # a written __init__ below a generated one replaces it
            node = self.p.class_node(c)
            for st in node.body if node is not None else ():
                if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name) and \
                        st.target.id not in names and not _is_classvar(st.annotation):
                    names.append(st.target.id)
        if not generated or self.p.lookup(cls, "__init__") is not None:
            return None
        self._fields_memo[key] = names
        return names

    def _field_default(self, cls: ClassInfo, attr: str) -> Value:
        """A generated constructor's default for field ``attr``: the value its class body
        assigns (``x: bool = False``, ``x: bool = field(default=False)``); unknown where it is
        computed (``default_factory``) or there is none."""
        for c in self.p.mro(cls):
            if attr not in c.attrs:
                continue
            node = c.attrs[attr][0]
            if isinstance(node, ast.Call) and (dotted_name(node.func) or "").rpartition(
                    ".")[2] == "field":
                given = next((k.value for k in node.keywords if k.arg == "default"), None)
                if given is None:
                    return None
                node = given
            return self._body_value(c, node)
        return None

    @staticmethod
    def _field_arg(inst: Inst, fields: list[str], attr: str) -> Value | object:
        """The constructor's argument for field ``attr``: by keyword or by position; else
        nothing (the class default applies)."""
        if inst.ctor is None:
            return NOT_SPECIAL
        args = dict(inst.ctor[1])
        if attr in args:
            return args[attr]
        i = str(fields.index(attr))
        return args.get(i, None if OPAQUE_ARGS in args else NOT_SPECIAL)

    def by_name(self, callee: Value, call: CallArgs) -> CallArgs:
        """A call of a function the program defines (a consumer in the linted tree) with its
        positional arguments also under their parameters' names, so a base passed by position
        (``lse_reduce(out, lse, True)``) is read like a keyword."""
        func = callee.func if isinstance(callee, Bound) else callee
        if not isinstance(func, Func) or not call.pos:
            return call
        node = self.p.definition(func)
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return call
        params = params_of(node)
        names = params.names[:params.positional]
        if isinstance(callee, Bound) and names and not params.static:
            names = names[1:]
        kw = dict(call.kw)
        for name, arg in zip(names, call.pos, strict=False):
            kw.setdefault(name, arg)
        if not call.opaque:  # a parameter left out: the default this code gives it
            defaults = params.defaults
            everyone = params.names[1:] if isinstance(callee, Bound) and not params.static \
                else params.names
            for name in everyone:
                if name not in kw and name not in call.maybe and name in defaults:
                    lit = literal_value(func.path, defaults[name])
                    if isinstance(lit, Lit):
                        kw[name] = Arg(replace(lit, omitted=call.where), call.where)
        return CallArgs(call.pos, kw, call.opaque, call.maybe, call.where, by_signature=True)

    def declared_return(self, func: Func) -> Value:
        """What a function's return annotation says it returns (``-> AttentionBackend``: an
        instance of it or any subclass), for a call the linter does not follow into."""
        cls_name, _, name = func.qualname.rpartition(".")
        if "<" in func.qualname:
            return None
        if cls_name:
            cls = self.p.cls((func.path, cls_name))
            ann = cls.returns.get(name) if cls is not None else None
        else:
            info = self.p.info(func.path)
            ann = info.returns.get(name) if info is not None else None
        if ann is None:
            return None
        typed = self.resolve_annotation(func.path, ann)
        return typed if isinstance(typed, (Inst, Union_)) else None

    def is_enum_class(self, ref: ClassRef) -> bool:
        """Whether ``ref`` is an Enum class of the program."""
        cls = self.class_info(ref.cls)
        return cls is not None and self._is_enum(cls)

    def _is_enum(self, cls: ClassInfo) -> bool:
        return any(b.rpartition(".")[2] in _ENUM_BASES
                   for c in self.p.mro(cls) for b in c.bases)

    def by_identity(self, value: Value) -> bool:
        """Whether every object ``value`` may be is one Python compares and hashes by identity,
        equal to no constant (so no dict of constant keys holds it): a module, a ``partial``,
        a function of the program (bound or not) whose ``def`` no decorator but one that
        keeps a function replaces (an unknown decorator may return anything)."""
        options = list(alternatives(value))
        for o in options:
            if isinstance(o, (ModuleRef, Partial)):
                continue
            func = o.func if isinstance(o, Bound) else o
            node = self.p.definition(func) if isinstance(func, Func) else None
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or any(
                    _decorator_name(d).rpartition(".")[2] not in _KEEPS_FUNCTION
                    for d in node.decorator_list):
                return False
        return bool(options)

    def known_flags(self, value: Value) -> Value:
        """``value`` with each read of a base attribute on an object of exactly one class
        (``self.lse_base_on_e`` in a method run for that class) replaced by the bool that
        class holds there, where it holds one: a test of it (``if self.lse_base_on_e:``,
        ``self.lse_base_on_e != Parent.lse_base_on_e``) then goes the one way Python takes.
        Other reads stay flags (a class's base, judged per class by the rules)."""
        if not any(isinstance(a, Flag) for a in alternatives(value)):
            return value
        return join([self._known_flag(a) if isinstance(a, Flag) else a
                     for a in alternatives(value)])

    def _known_flag(self, flag: Flag) -> Value:
        inst = flag.owner
        cls = self.class_info(inst.cls) if inst is not None and inst.exact and \
            inst.ctor is None else None
        if cls is None or inst is None or not self._flag_foldable(cls, flag.attr):
            return flag
        known = one_bool(self._class_bound(inst, cls, flag.attr))
        return flag if known is None else Lit(known != flag.negated, flag.where)

    def _class_bound(self, inst: Inst, cls: ClassInfo, attr: str) -> Value:
        """What an object of exactly ``cls`` reads under ``attr`` as its classes bind it: the
        first class of its MRO that binds the name decides (a property, run for ``cls``; a
        class attribute, with what methods store on the instance); None for a method, or a
        ``cached_property`` (a store on the instance replaces its value)."""
        for c in self.p.mro(cls):
            if attr in c.properties:
                fn = self.p.methods(c).get(attr)
                cached = fn is None or any(_decorator_name(d).endswith("cached_property")
                                           for d in fn.decorator_list)
                return None if cached else self.property_get(c, attr, cls)
            if attr in c.methods:
                return None
            if attr in c.attrs and not _in_init(c, c.attrs[attr][1]):
                break
        return self._instance_value(inst, cls, attr)

    def _flag_foldable(self, cls: ClassInfo, attr: str) -> bool:
        """Whether an object of ``cls`` holds under ``attr`` only what its classes bind and
        their methods store on ``self``: no module stores the name through another object
        (``impl.lse_base_on_e = True``, ``setattr(x, "lse_base_on_e", v)``), and no module of
        its hierarchy writes an instance's attributes by a name it computes (``__dict__``,
        ``vars()``, ``setattr`` of a name that is no constant)."""
        if attr in self._stored_outside():
            return False
        return not any(_DYNAMIC_STORE.search(self.module_text(c.path)) for c in self.p.mro(cls))

    def _stored_outside(self) -> frozenset[str]:
        """The base attributes some module of the program stores through anything but
        ``self.`` (only a module that names one can)."""
        if self._outside_base_stores is None:
            self._outside_base_stores = frozenset(
                a for m in self.p.infos() if m.trigger_lines
                for a in self._stored_elsewhere(m.path) & set(self.base_attrs))
        return self._outside_base_stores

    def truth(self, value: Value) -> bool | None:
        """What ``bool(value)`` is (:func:`~.containers.truth`), and of an object of a class
        of the program as Python decides it: its ``__bool__``'s result, else its
        ``__len__``'s, else true (a plain object, a dataclass); not known where a base is
        outside the program (it may define either), or the object may be of a subclass that
        decides otherwise."""
        value = self.known_flags(value)
        known = truth(value)
        options = list(alternatives(value))
        if known is not None or not any(isinstance(a, (Inst, Member)) for a in options):
            return known
        answers = {self._instance_truth(a) if isinstance(a, Inst) else
                   self._member_truth(a) if isinstance(a, Member) else truth(a)
                   for a in options}
        return answers.pop() if len(answers) == 1 else None

    def _member_truth(self, member: Member) -> bool | None:
        """An Enum member's truth: its value's where the class is a ``Flag`` or mixes in a
        data type (``IntEnum``'s zero member is false), else true; not known where a class
        of its MRO defines ``__bool__``/``__len__`` itself."""
        cls = self.class_info(member.cls)
        if cls is None:
            return None
        mro = self.p.mro(cls)
        if any(n in k.methods or n in k.attrs or n in k.properties
               for k in mro for n in _TRUTH):
            return None
        names = {b.rpartition(".")[2] for k in mro for b in k.bases}
        # bases from outside the program other than the enum module's: a mixed-in type
        # (``int``, ``tuple``...), whose truth the member has
        mixed = {b.rpartition(".")[2] for k in mro for b in self.p.hierarchy.bases(k)
                 if isinstance(b, str)} - _ENUM_BASES - {"Enum", "ReprEnum", "object"}
        if not names & {"Flag", "IntFlag"} and not names & {"IntEnum", "StrEnum"} and \
                not mixed:
            return True  # a plain Enum's member: true
        if self._data_kind(cls) is None and not names & {"Flag"}:
            return None  # a mixed-in type it changes (``_missing_``, ``__new__``) or no data
        data = self.as_data(member) if not names & {"Flag"} else member.value
        return truth(data) if isinstance(data, Lit) else None

    def _instance_truth(self, inst: Inst) -> bool | None:
        cls = self.class_info(inst.cls)
        if cls is None:
            return None
        classes = [cls] if inst.exact else self.p.subclasses(cls)
        answers = {self._class_truth(inst, c) for c in classes}
        return answers.pop() if len(answers) == 1 else None

    def _class_truth(self, inst: Inst, c: ClassInfo) -> bool | None:
        """The truth of an object of exactly ``c`` (``inst`` where it is one)."""
        if self._truth_not_read(c):
            return None
        owner = next((o for name in _TRUTH if (o := self.p.lookup(c, name)) is not None), None)
        if owner is None:
            return True
        name = "__bool__" if "__bool__" in owner.methods else "__len__"
        this = inst if inst.exact else Inst((c.path, c.name), exact=True)
        result = self.analyse(Func(owner.path, f"{owner.name}.{name}"), this,
                              CallArgs([], {}, False, where=Location(c.path, 1, 1))).returns
        return truth(result) if name == "__bool__" else (
            None if (n := literal_values(result)) is None or len(n) != 1 else bool(n[0]))

    def _truth_not_read(self, c: ClassInfo) -> bool:
        """Whether ``c``'s truth may come from where the lint does not read it: a base from
        outside the program, a class decorator, or ``__bool__``/``__len__`` set other than by a
        ``def`` in a class body (an assignment, a property, a store from outside)."""
        mro = self.p.mro(c)
        return self._outside_bases(c) or any(
            dotted_name(b.value if isinstance(b, ast.Subscript) else b) is None
            for k in mro for b in k.base_nodes) or any(
            any(_decorator_name(d) not in _PLAIN_DECORATORS for d in k.decorators) or
            any(n in k.attrs or n in k.properties or n in self._stored_elsewhere(k.path)
                for n in _TRUTH) for k in mro)

    def _outside_bases(self, cls: ClassInfo, plain: frozenset[str] = _PLAIN_BASES) -> bool:
        """Whether a class of ``cls``'s MRO has a base from outside the program other than
        those that add nothing to a class (``ABC``, ``Generic``...; ``plain``): its metaclass,
        or its ``__bool__``, may come from there."""
        return any(isinstance(b, str) and b.rpartition(".")[2] not in plain
                   for k in self.p.mro(cls) for b in self.p.hierarchy.bases(k))

    def builtin_content(self, value: Value, uses: tuple[str, ...]) -> Value | object:
        """What an object of a program class that subclasses ``frozenset`` holds, built by one
        call with its elements (``Names({"a", "b"})``), where the class (and every class of
        its MRO in the program) defines none of ``uses`` (the methods the operation would run
        instead) nor ``__new__``/``__init__``: the set of its elements, which a builtin
        operation of the base reads (a ``frozenset`` never changes; a ``set`` subclass's
        object may be changed in place anywhere, so it is never read so); NOT_SPECIAL for any
        other value."""
        if not isinstance(value, Inst) or value.ctor is None:
            return NOT_SPECIAL
        cls = self.class_info(value.cls)
        if cls is None:
            return NOT_SPECIAL
        mro = self.p.mro(cls)
        outside = {b.rpartition(".")[2] for k in mro for b in self.p.hierarchy.bases(k)
                   if isinstance(b, str)} - {"object", "Generic"}
        args = dict(value.ctor[1])
        if outside != {"frozenset"} or set(args) != {"0"} or \
                self._defines(cls, (*uses, "__new__", "__init__")):
            return NOT_SPECIAL
        given = args["0"]
        if isinstance(given, Seq) and given.complete and not given.iterator:
            return given
        if isinstance(given, Tup) and not given.iterator and not given.partial_items:
            return set_of(list(given.items), complete=True)
        return None

    def as_data(self, value: Value) -> Value:
        """``value`` as ``==``, ``in`` and ``<`` see it: a member of an Enum that mixes in a
        data type (``StrEnum``, ``IntEnum``, ``IntFlag``, ``class U(str, Enum)``) compares as
        its value (``StrEnum`` ``LOG2 == "log2"``); a tuple's items likewise; anything else
        as it is."""
        if isinstance(value, Tup):
            items = tuple(self.as_data(v) for v in value.items)
            return value if items == value.items else replace(value, items=items)
        if isinstance(value, Union_):
            return join([self.as_data(v) for v in value.ordered()]) \
                if not value.widened else value
        content = self.builtin_content(value, _COMPARING)
        if content is not NOT_SPECIAL:
            return cast(Value, content)  # a set subclass's object compares as its elements
        if not isinstance(value, Member) or not isinstance(value.value, Lit):
            return value
        cls = self.class_info(value.cls)
        kind = self._data_kind(cls) if cls is not None else None
        written = value.value.value
        if kind is None or type(written) not in kind:
            # a value the mixed-in type converts (``IntEnum`` ``A = "5"`` is 5; a ``str``
            # Enum's ``A = 1`` is "1"): not what the body writes
            return value
        return value.value

    def _data_kind(self, cls: ClassInfo) -> tuple[type, ...] | None:
        """The types of the written values an Enum class's members compare as, where it
        mixes in a data type and changes nothing of how they are made or compared (no
        ``__new__``, ``_generate_next_value_``, comparison or hash of its own or of a base of
        the program); None elsewhere."""
        mro = self.p.mro(cls)
        names = {b.rpartition(".")[2] for c in mro for b in c.bases}
        if self._defines(cls, _MEMBER_MAKING):
            return None
        if names & {"StrEnum", "str"}:
            return (str,)
        if names & {"IntEnum", "IntFlag", "int"}:
            return (int, bool)
        if "float" in names:
            return (int, float)
        return None

    @staticmethod
    def _is_property(owner: ClassInfo, attr: str) -> bool:
        return attr in owner.properties

    def _ensure_init(self, inst: Inst) -> None:
        """Run the ``__init__`` that built ``inst`` once, its stores kept; again, once, where
        a base is now being read and the first run was not (its calls then read for their
        values: ``self.__post_init__()`` storing the base)."""
        deep = self.need > 0
        done = self._init_done.get(inst)
        if done is not None and (done or not deep):
            return
        self._init_done[inst] = deep
        cls = self.class_info(inst.cls)
        if cls is None or inst.ctor is None:
            return
        owner = self.p.lookup(cls, "__init__")
        if owner is None:
            # a generated ``__init__`` binds the fields (read from the call where asked), then
            # calls ``__post_init__``, whose stores are this object's
            post = self._plain_post_init(cls)
            if post is not None:
                # it reads the fields as the call gave them (or their defaults), and what it
                # leaves in those it stores is what the object holds
                fields = self.fields(cls) or []
                given = [(f, v) for f in fields
                         if (v := self._built_field(inst, cls, fields, f)) is not None]
                summary = self.analyse(post, inst, CallArgs([], {}, False, where=inst.ctor[0],
                                                            self_attrs=tuple(given)))
                self._constructed[inst] = dict(summary.after)
            return
        where, args = inst.ctor
        call = CallArgs([Arg(v) for k, v in args if k.isdigit()],
                     {k: Arg(v) for k, v in args if not k.isdigit()}, False, where=where)
        self.analyse(Func(owner.path, f"{owner.name}.__init__"), inst, call)

    def _field_value(self, inst: Inst, cls: ClassInfo, attr: str) -> Value | object:
        """A field of an object a generated ``__init__`` built (a dataclass, NamedTuple or
        model): the constructor's argument for it, over the class's default (which is what
        any other instance holds); what ``__post_init__`` stores there after, where it does;
        NOT_SPECIAL where ``attr`` is no such field."""
        fields = self.fields(cls)
        if fields is None or attr not in fields:
            return NOT_SPECIAL
        if self._post_init_stores(cls, attr):
            if self._plain_post_init(cls) is None:
                return None
            self._ensure_init(inst)
            after = self._constructed.get(inst, {})
            if attr not in after:
                return self._instance_value(inst, cls, attr)
            # and what code stores on the object after it is built (``p.lse = x``)
            return join([after[attr], *self.stores.get((inst, attr), ())])
        return self._built_field(inst, cls, fields, attr)

    def _built_field(self, inst: Inst, cls: ClassInfo, fields: list[str], attr: str) -> Value:
        """Field ``attr`` as a generated ``__init__`` sets it: the constructor's argument,
        else the field's default, which this object holds (a base attribute's name on it says
        nothing about a backend's declaration)."""
        given = self._field_arg(inst, fields, attr)
        if given is not NOT_SPECIAL:
            return cast(Value, given)
        return self._field_default(cls, attr)

    def _post_init_stores(self, cls: ClassInfo, attr: str) -> bool:
        """Whether the ``__post_init__`` an instance of ``cls`` runs may store ``attr``: its
        own body, the base's it chains to (``super().__post_init__()``,
        ``Base.__post_init__(self)``), code it hands ``self`` to (``self.helper()``); one
        that does none of these stores nothing more."""
        mro = self.p.mro(cls)
        at, seen = 0, set()
        while at < len(mro):
            fn = self.p.methods(mro[at]).get("__post_init__")
            if fn is None:
                at += 1
                continue
            if at in seen or attr in self._stored_attrs(fn):
                return True
            seen.add(at)
            chained = {to for call in ast.walk(fn) if isinstance(call, ast.Call) and
                       (to := _chained_to(call, mro, at)) is not None}
            if not chained:
                return False
            if len(chained) > 1 or -1 in chained:
                return True  # more than one way on, or one not read: it may store it
            at = chained.pop()
        return False

    def _plain_post_init(self, cls: ClassInfo) -> Func | None:
        """The ``__post_init__`` a generated ``__init__`` of ``cls`` calls, where it takes
        ``self`` alone (an ``InitVar`` argument is not followed); None where there is none."""
        if self.fields(cls) is None:
            return None
        owner = self.p.lookup(cls, "__post_init__")
        fn = self.p.methods(owner).get("__post_init__") if owner is not None else None
        if fn is None or owner is None or len(params_of(fn).names) != 1:
            return None
        return Func(owner.path, f"{owner.name}.__post_init__", fn)

    def _post_init_runs(self, cls: ClassInfo) -> bool:
        """Whether ``__post_init__`` may run on an instance of ``cls``: Python calls it only
        from a generated ``__init__``; under a written one, only where the hierarchy's code
        names it (``self.__post_init__()``, ``super().__post_init__()``)."""
        return self.fields(cls) is not None or any(
            _CALLS_POST_INIT.search(self.module_text(c.path)) for c in self.p.mro(cls))

    def _class_body_value(self, cls: ClassInfo, attr: str) -> list[Value]:
        """What the nearest class body in ``cls``'s MRO that names ``attr`` says it is: its
        value; its annotation where the value is None or absent (``prefill_backend:
        MLAPrefillBackend | None = None``: the type says what it will hold; beside a value,
        ``flag: ClassVar[bool] = True``, it says no more)."""
        for c in self.p.mro(cls):
            # a store of ``__init__`` is no class-body value: it runs in ``__init__``'s frame
            # (its locals, its arguments), which the methods' analysis reads; evaluated here it
            # would read those names as unknown
            assigned = attr in c.attrs and not _in_init(c, c.attrs[attr][1])
            if not assigned and attr not in c.annotations:
                continue
            value: Value = None
            if assigned:
                value = self._changed_in_body(c, attr, self._body_value(c, c.attrs[attr][0]))
            unset = not assigned or (isinstance(value, Lit) and value.value is None)
            if attr in c.annotations and unset:
                return [self.resolve_annotation(c.path, c.annotations[attr])]
            return [value]
        return []

    def class_attr(self, cls: ClassInfo, attr: str) -> Value:
        """An attribute of every instance of ``cls``: its class-level value or annotation, and
        what any method of its class hierarchy stores into ``self.<attr>``."""
        key = ((cls.path, cls.name), attr)
        if key in self._class_attr_memo:
            return self._class_attr_memo[key]
        self._class_attr_memo[key] = None  # a read while computing it sees nothing
        values: list[Value] = []
        generic = Inst((cls.path, cls.name), exact=True)
        # ``__init__`` runs for every instance: what it stores on ``self`` unconditionally
        # shadows the class attribute, which no instance then reads
        shadowed = self._init_sets(cls, attr)
        if not shadowed:
            values += self._class_body_value(cls, attr)
        runs = self.p.lookup(cls, "__init__")  # the ``__init__`` an instance of cls runs
        for c in self.p.mro(cls):
            if not (self.p.active(c.path) or c.path in self._carrier_lines):
                # a module that names nothing the rules know: only the objects it builds
                # (``self.attn_mha = RadixAttention(...)``), read from the syntax, no flow
                values += self._built(c, attr)
                continue
            for name, fn in self.p.methods(c).items():
                stored = self._stored_attrs(fn)
                if attr not in stored:
                    continue
                func = Func(c.path, f"{c.name}.{name}", fn)
                if name == "__init__" and not self.init_runs(cls, c):
                    continue  # an ``__init__`` no instance of cls runs: it stores nothing
                if name == "__post_init__" and not self._post_init_runs(cls):
                    continue  # under a written ``__init__`` that never calls it
                if name == "__init__" and runs is not None and \
                        (runs.path, runs.name) != (c.path, c.name) and self.p.active(runs.path):
                    # a base's ``__init__`` runs for an instance of cls only as the one cls
                    # runs calls it (``super().__init__(3)``): read from there, with what it is
                    # passed; where nothing calls it, it stores nothing (an unknown value)
                    func = Func(runs.path, f"{runs.name}.__init__",
                                self.p.methods(runs).get("__init__"))
                self.analyse(func, generic, None, generic=True)
                # a store the analysis could not follow (``self = super().__new__(cls)`` in a
                # branch it did not reach) is an unknown value, never the class default alone
                values += self.stores.get((generic, attr), (None,))
                ann = stored[attr]
                if ann is not None:
                    values.append(self.resolve_annotation(c.path, ann))
        if values:
            # a store that reads the attribute (``X.t += (name,)``) reads what it holds
            # without that store: the value so far
            self._class_attr_memo[key] = join(values)
            values += self._changed_on_class(cls, attr)
        value = join(values) if values else None
        self._class_attr_memo[key] = value
        return value

    def _changed_on_class(self, cls: ClassInfo, attr: str) -> list[Value]:
        """What functions store into the class attribute an instance of ``cls`` reads, after
        the class bodies ran (``Mixin.TABLE += (name,)``, ``Base.flag = x`` read on a subclass
        that does not assign it, ``setattr(Mixin, "flag", x)``): each stored value is one
        more it may hold (whether the function ran first is not known: a value it may not
        hold, as a global a function rebinds). A store through a class's name is read by
        analysing its function (the values stored there); one through ``cls``, ``type(self)``
        or ``self.__class__`` (any subclass too), or one the analysis does not reach, is
        unknown."""
        out: list[Value] = []
        for c in self.p.mro(cls):
            out += self._stored_on(c, attr)
            if attr in c.attrs and not _in_init(c, c.attrs[attr][1]):
                break  # the class Python reads it from: the ones above are not read
        return out

    def _stored_on(self, c: ClassInfo, attr: str) -> list[Value]:
        sites = self._class_store_sites(c, attr)
        out: list[Value] = []
        key = (c.path, c.name)
        for path, qualname, by_name in sites:
            span = self.p.span(path, qualname) if by_name and qualname else None
            if span is None:
                out.append(None)
                continue
            self.analyse(Func(path, qualname), None, None, generic=True)
            stored = [v for v, at, _ in self.class_stores.get((key, attr), [])
                      if at.path == path and at.line is not None and
                      span[0] <= at.line <= span[1]]
            out += [replace(v, rebound=True) if isinstance(v, Lit) else v
                    for v in stored] if stored else [None]
        return out

    def _stored_elsewhere(self, path: str) -> frozenset[str]:
        """The attribute names a module stores through anything but ``self.`` (``X.a = v``,
        ``X.a += v``, ``setattr(X, "a", v)``), read from its text once: where a class's
        attribute may be changed from outside its body."""
        found = self._outside_stores.get(path)
        if found is None:
            text = self.module_text(path)
            names: set[str] = set()
            for m in _ATTR_STORE.finditer(text):
                start = text.rfind("\n", 0, m.start()) + 1
                if not _SELF_BASE.search(text, start, m.start() + 1):
                    names.add(m.group(1))
            names.update(m.group(1) for m in _SETATTR.finditer(text))
            names.update(m.group(1) for m in _ATTR_MUTATED.finditer(text))
            found = self._outside_stores[path] = frozenset(names)
        return found

    def _class_store_sites(self, cls: ClassInfo, attr: str) -> list[tuple[str, str, bool]]:
        """(module, enclosing function's qualname or "" at module level, whether through the
        class's own name) of each store into ``<class>.attr`` outside the class body, found in
        the modules that can name the class: its own and those importing it, and (``cls.x``,
        ``type(self).x``) its hierarchy's."""
        names_in: dict[str, set[str]] = {cls.path: {cls.name}}
        for other, local in self.imported_as(cls.path, cls.name):
            names_in.setdefault(other, set()).add(local)
        for c in (cls, *self.p.subclasses(cls)):
            names_in.setdefault(c.path, set())
        out: list[tuple[str, str, bool]] = []
        for path, names in sorted(names_in.items()):
            if attr not in self._stored_elsewhere(path):
                continue
            index = self._store_index.get(path)
            if index is None:
                tree = self.p.tree(path)
                index = self._store_index[path] = store_index(tree) if tree is not None else {}
            out += _class_stores_in(path, index.get(attr, []), names, cls,
                                    shared=not self._stores_self(cls, attr))
        return out

    def _init_sets(self, cls: ClassInfo, attr: str) -> bool:
        """Whether the ``__init__`` instances of ``cls`` run stores ``self.<attr>`` in its
        body's top level (not under an ``if``), as its first parameter is ``self``, or in the
        top level of a method of ``self`` it calls there (``self._init_combine(...)``), a few
        calls deep."""
        owner = self.p.lookup(cls, "__init__")
        fn = self.p.methods(owner).get("__init__") if owner is not None else None
        if fn is not None and self._sets_always(cls, fn, attr, _INIT_CALLS_DEEP):
            return True
        # ``__new__`` runs for every instance too: what it stores on the object
        # ``super().__new__(cls)`` makes (``self = super().__new__(cls)``)
        owner = self.p.lookup(cls, "__new__")
        fn = self.p.methods(owner).get("__new__") if owner is not None else None
        made = made_by_new(fn) if fn is not None else None
        return made is not None and self._sets_always(cls, cast(FuncNode, fn), attr,
                                                      _INIT_CALLS_DEEP, made)

    def _sets_always(self, cls: ClassInfo, fn: ast.FunctionDef | ast.AsyncFunctionDef,
                     attr: str, deep: int, me: str | None = None) -> bool:
        if not fn.args.args:
            return False
        me = me or fn.args.args[0].arg
        for st in fn.body:
            targets = st.targets if isinstance(st, ast.Assign) else (
                [st.target] if isinstance(st, ast.AnnAssign) and st.value is not None else [])
            for t in targets:
                if isinstance(t, ast.Attribute) and t.attr == attr and \
                        isinstance(t.value, ast.Name) and t.value.id == me:
                    return True
            if deep > 0 and any(self._sets_always(cls, f, attr, deep - 1)
                                for f in self._always_called(cls, fn, st, me)):
                return True
        return False

    def _always_called(self, cls: ClassInfo, fn: ast.FunctionDef | ast.AsyncFunctionDef,
                       st: ast.stmt, me: str) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
        """The methods a statement of ``fn``'s body runs on ``me`` as the whole of it: a
        method of ``self`` it calls, or the ``__init__`` it calls (``super().__init__()``)."""
        called = _self_method_called(st, me)
        owner = self.p.lookup(cls, called) if called is not None else None
        method = self.p.methods(owner).get(called) if owner and called else None
        base = self._init_called(cls, fn, st, me)
        init = self.p.methods(base).get("__init__") if isinstance(base, ClassInfo) else None
        return [f for f in (method, init) if f is not None]

    def _init_called(self, cls: ClassInfo, fn: ast.FunctionDef | ast.AsyncFunctionDef,
                     st: ast.stmt, me: str) -> ClassInfo | object | None:
        """The class whose ``__init__`` a statement of ``fn``'s body calls as the whole of it
        (:meth:`_init_target`); None where it is no such call."""
        value = st.value if isinstance(st, (ast.Expr, ast.Assign)) else None
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and
                value.func.attr == "__init__"):
            return None
        return self._init_target(cls, fn, value, me)

    def _init_target(self, cls: ClassInfo, fn: ast.FunctionDef | ast.AsyncFunctionDef,
                     call: ast.Call, me: str) -> ClassInfo | object | None:
        """The class whose ``__init__`` ``call`` (``x.__init__(...)`` in ``fn``, an
        ``__init__`` an instance of ``cls`` runs) runs: ``super().__init__(...)``, the next
        in ``cls``'s MRO after ``fn``'s class; ``Base.__init__(self, ...)``, ``Base``'s; None
        for one outside the program (``object``'s); NOT_SPECIAL where it cannot name it."""
        owner = next((c for c in self.p.mro(cls) if self.p.methods(c).get("__init__") is fn),
                     None)
        on = cast(ast.Attribute, call.func).value
        if owner is None:
            return NOT_SPECIAL
        if isinstance(on, ast.Call) and isinstance(on.func, ast.Name) and \
                on.func.id == "super" and not on.args:
            return self.p.lookup(cls, "__init__", after=owner)
        named = dotted_name(on)
        if named is not None and call.args and isinstance(call.args[0], ast.Name) and \
                call.args[0].id == me:
            base = self.p.resolve_base(owner, named)
            return self.p.lookup(base, "__init__") if isinstance(base, ClassInfo) else \
                NOT_SPECIAL
        return NOT_SPECIAL

    def init_runs(self, cls: ClassInfo, c: ClassInfo) -> bool:
        """Whether ``c``'s ``__init__`` may run for an instance of ``cls``
        (:meth:`init_chain`; true where the chain is not known)."""
        key = (cls.path, cls.name)
        if key not in self._init_chains:
            self._init_chains[key] = self.init_chain(cls)
        chain = self._init_chains[key]
        return chain is None or any(c is d for d in chain)

    def init_chain(self, cls: ClassInfo) -> list[ClassInfo] | None:
        """The classes whose ``__init__`` may run for an instance of ``cls``: the one it looks
        up, and each one of them calls (``super().__init__(...)``, ``Base.__init__(self,
        ...)``), in turn; None where one calls an ``__init__`` it cannot name (an instance of
        ``cls`` may then run any of them), or a class body assigns ``__init__``."""
        if any("__init__" in c.attrs for c in self.p.mro(cls)):
            return None
        owner = self.p.lookup(cls, "__init__")
        chain: list[ClassInfo] = []
        todo = [owner] if owner is not None else []
        while todo:
            c = todo.pop()
            if any(c is d for d in chain):
                continue
            chain.append(c)
            called = self._inits_called(cls, self.p.methods(c).get("__init__"))
            if called is None:
                return None
            todo += called
        return chain

    def _inits_called(self, cls: ClassInfo, fn: FuncNode | None) -> list[ClassInfo] | None:
        """The classes whose ``__init__`` an ``__init__`` (of an instance of ``cls``) calls;
        None where one it calls or reads cannot be named."""
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not fn.args.args:
            return None
        out: list[ClassInfo] = []
        reads = calls = 0
        for node in ast.walk(fn):
            reads += isinstance(node, ast.Attribute) and node.attr == "__init__"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                    node.func.attr == "__init__":
                calls += 1
                called = self._init_target(cls, fn, node, fn.args.args[0].arg)
                if called is NOT_SPECIAL:
                    return None
                if isinstance(called, ClassInfo):
                    out.append(called)
        return out if reads == calls else None  # ``f = Base.__init__``: not followed

    def _built(self, cls: ClassInfo, attr: str) -> list[Value]:
        """``self.<attr> = Class(...)`` in ``cls``'s methods: an instance of that class (its
        constructor's arguments not followed), read from the methods' lines without parsing
        the module; any other store is unknown."""
        out: list[Value] = []
        # (an annotation stays on its line: ``if self.x:`` and the next line's ``y = ...`` are
        # no ``self.x: y = ...``)
        store = re.compile(r"\bself\." + re.escape(attr) + r"[ \t]*(?::[ \t]*([^=\n]+?))?"
                           r"[ \t]*=(?!=)\s*([A-Za-z_][\w.]*)?(\()?")
        for start, end in cls.methods.values():
            for m in store.finditer(self.p.text(cls.path, start, end)):
                ann, func, call = m.group(1), m.group(2), m.group(3)
                if ann:
                    try:
                        out.append(self.resolve_annotation(
                            cls.path, ast.parse(ann.strip(), mode="eval").body))
                    except (SyntaxError, ValueError, RecursionError):
                        out.append(None)
                ref = self._dotted_value(cls.path, func) if func and call else None
                out.append(Inst(ref.cls, exact=ref.exact) if isinstance(ref, ClassRef) else None)
        return out

    def class_body_attr(self, cls: ClassInfo, attr: str) -> Value:
        """What ``cls``'s own body leaves in ``attr`` once it has run: the value assigned,
        with what the statements after it do to the name (a ``for`` target, ``+=``, an
        in-place change): a class body is a namespace, run in order."""
        node, line, _ = cls.attrs[attr]
        if _in_init(cls, line):
            return self.class_level(cls, node)
        return self._changed_in_body(cls, attr, self._body_value(cls, node))

    def class_body_function(self, cls: ClassInfo, name: str) -> Value | object:
        """What ``cls``'s own body (not its ``__init__``) assigns to ``name``, evaluated there
        (``legacy = run``: the function ``run`` is at that point); NOT_SPECIAL where it
        assigns nothing to it."""
        if name not in cls.attrs or _in_init(cls, cls.attrs[name][1]):
            return NOT_SPECIAL
        return self._body_value(cls, cls.attrs[name][0])

    def _body_value(self, cls: ClassInfo, node: ast.expr) -> Value:
        """An expression a class body assigns: its literal, else what it evaluates to there;
        a ``field()`` of a class ``@dataclass`` decorates, the default the decorator leaves
        on the class in its place (none for a ``default_factory``: it deletes the name)."""
        if isinstance(node, ast.Constant):
            return literal_value(cls.path, node)
        value = self.class_level(cls, node)
        if isinstance(value, ExtInst) and value.qualname == "dataclasses.Field" and \
                isinstance(node, ast.Call) and dataclass_decorated(cls):
            default = next((k.value for k in node.keywords if k.arg == "default"), None)
            return None if default is None else self._body_value(cls, default)
        return value

    def class_level(self, cls: ClassInfo, node: ast.expr) -> Value:
        """``node`` evaluated in ``cls``'s body, at the line it is written."""
        frame = self.new_frame(cls.path)
        # the class body's own functions are names there (``m = partialmethod(_m, ...)``)
        frame.env.update({name: Func(cls.path, f"{cls.name}.{name}", fn)
                          for name, fn in self.p.methods(cls).items()})
        try:
            # and so are the names the body assigned above it (``unit = "log2"`` then
            # ``on_e = unit == "ln"``): the class body is a scope of its own, run in order
            frame.env.update(self._body_names(cls, node))
            frame.class_names = frozenset(frame.env)
            # what a class body assigns is asked for as a value (a base attribute's, an
            # item of a table): its calls are read for their values
            return frame.needed(node)
        except RecursionError:
            return None

    def _changed_in_body(self, cls: ClassInfo, attr: str, value: Value) -> Value:
        """A class body's value with what the body's later statements do to it in place
        (``TABLE["k"] = v``, ``TABLE.update(...)``, ``TABLE["a"]["b"] = v``), run in order
        as the class statement runs them."""
        body = self.p.class_node(cls)
        line = cls.attrs[attr][1]
        later = [st for st in changes_of(body.body, attr) if st.lineno > line] \
            if body is not None and attr not in cls.set_after else []
        if not later:
            return value
        frame = self.new_frame(cls.path)
        frame.env.update(self._body_names(cls, later[0]))
        frame.env[attr] = value
        frame.class_names = frozenset(frame.env)
        try:
            for st in later:
                frame.stmt(st)
        except RecursionError:
            return None
        return frame.env.get(attr)

    def _body_names(self, cls: ClassInfo, node: ast.expr | ast.stmt) -> dict[str, Value]:
        """The names ``node`` reads that its class body assigned above it, with their values
        (each read the same way, so a chain of them is followed)."""
        body = self.p.class_node(cls)
        line = getattr(node, "lineno", 0)
        loaded = {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and
                  isinstance(n.ctx, ast.Load)}
        found: dict[str, ast.expr] = {}
        for st in body.body if body is not None and loaded else ():
            if st.lineno >= line:
                break
            targets, value = assignment(st)
            found.update((t.id, value) for t in targets
                         if isinstance(t, ast.Name) and t.id in loaded and value is not None)
        return {name: self._body_value(cls, value) for name, value in found.items()}

    def stored_attrs(self, fn: FuncNode) -> frozenset[str]:
        """The attributes a method stores on ``self``."""
        return frozenset(self._stored_attrs(fn))

    def _stored_attrs(self, fn: FuncNode) -> dict[str, ast.expr | None]:
        """The attributes a method stores on ``self``, each with its annotation (if any)."""
        key = id(fn)
        if key not in self._assigns_attr:
            found: dict[str, ast.expr | None] = {}
            for st in statements(fn):  # type: ignore[arg-type]
                if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Attribute) and \
                        isinstance(st.target.value, ast.Name) and st.target.value.id == "self":
                    found[st.target.attr] = st.annotation
                    continue
                targets = st.targets if isinstance(st, ast.Assign) else (
                    [st.target] if isinstance(st, (ast.AugAssign, ast.For)) else [])
                for t in targets:
                    for sub in (t.elts if isinstance(t, (ast.Tuple, ast.List)) else [t]):
                        if isinstance(sub, ast.Attribute) and isinstance(sub.value, ast.Name) \
                                and sub.value.id == "self":
                            found.setdefault(sub.attr, None)
            self._assigns_attr[key] = found
        return self._assigns_attr[key]


def _chained_to(call: ast.Call, mro: list[ClassInfo], at: int) -> int | None:
    """Where a call made in the ``__post_init__`` of ``mro[at]`` goes on in the MRO: the index
    of the class whose ``__post_init__`` it runs (``super()``'s: the next; ``Base``'s: that
    one); -1 where it may run code of the object's not known here (``self`` handed on, a
    method of ``self``, another ``__post_init__``); None where it runs none."""
    func = call.func
    if isinstance(func, ast.Attribute) and func.attr == "__post_init__":
        if isinstance(func.value, ast.Call) and isinstance(func.value.func, ast.Name) and \
                func.value.func.id == "super":
            return at + 1
        named = [i for i, c in enumerate(mro) if isinstance(func.value, ast.Name) and
                 c.name.rpartition(".")[2] == func.value.id and i > at]
        return named[0] if len(named) == 1 else -1
    if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and \
            func.value.id == "self":
        return -1
    if any(isinstance(a, ast.Name) and a.id == "self" for a in
           (*call.args, *(k.value for k in call.keywords))):
        return -1
    return None


#: text that may build an object of another object's class (``type(w)()``,
#: ``w.__class__()``, ``w.__init__(...)``): the modules :func:`builds_own` is asked of
_BUILDS_ANY = re.compile(r"\btype\s*\(|__class__|(?<!def )(?<!super\(\)\.)__init__\b")
#: code that finds classes by reflection
_REFLECTS = re.compile(r"__subclasses__|\bgetmembers\b|\bglobals\s*\(|\bvars\s*\(\s*\)")

#: a store into an attribute (``X.attr = v``, ``X.attr += v``; not ``==``)
_ATTR_STORE = re.compile(r"\.[ \t]*([A-Za-z_]\w*)[ \t]*(?:[-+*/%|&^@]|//|\*\*|<<|>>)?=(?!=)")
#: a target that is ``self.<attr>`` itself, up to the dot before the attribute
_SELF_BASE = re.compile(r"(?<![\w.])self[ \t]*\.\Z")
#: decorators that leave a function a function (compared by identity)
_KEEPS_FUNCTION = frozenset({"staticmethod", "classmethod", "cache", "lru_cache", "wraps",
                             "abstractmethod", "override", "final"})
#: an instance's attribute written by a name computed at run time
_DYNAMIC_STORE = re.compile(r"__dict__|\bvars\(|\bsetattr\(\s*[^,]+,\s*(?![\s\"'])")
#: ``__post_init__`` named anywhere but its own ``def`` (a call of it, a reference)
_CALLS_POST_INIT = re.compile(r"(?<!def )\b__post_init__\b")
_SETATTR = re.compile(r"\bsetattr\([^,\n]+,\s*[\"']([A-Za-z_]\w*)[\"']")
#: ``X.attr.append(...)``, ``X.attr[k] = v``: the object a class attribute holds changed in
#: place, through its class or any instance
_ATTR_MUTATED = re.compile(r"\.[ \t]*([A-Za-z_]\w*)[ \t]*(?:\.[ \t]*(?:" + "|".join(
    sorted(MUTATORS | {"update", "remove", "discard", "clear"})) +
    r")[ \t]*\(|\[[^\]\n]*\][ \t]*(?:[-+*/%|&^@]|//|\*\*|<<|>>)?=(?!=))")


@dataclass(frozen=True)
class _Store:
    """A statement (or expression) of a module that may store into ``<X>.attr``: where it is
    (the enclosing function's qualname, "" at module level; the top-level class whose own
    body holds it directly), whether it changes ``<X>.attr`` in place, and the objects
    ``<X>`` it assigns the attribute of."""

    qualname: str
    body_of: tuple[str, int] | None
    mutated: bool
    bases: tuple[ast.expr, ...]


def store_index(tree: ast.Module) -> dict[str, list[_Store]]:
    """Every store into ``<X>.attr`` of a module but through ``self.``, by attribute: each
    statement's assignment targets, ``setattr(X, "attr", v)``, ``<X>.attr.append(...)`` and
    ``<X>.attr[k] = v``; one walk of the module for every class and attribute asked."""
    out: dict[str, list[_Store]] = {}

    def holder_attr(node: ast.AST) -> str | None:
        holder = node.func.value if isinstance(node, ast.Call) and isinstance(
            node.func, ast.Attribute) and node.func.attr in _CHANGES else None
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            holder = next((t.value for t in targets if isinstance(t, ast.Subscript)), None)
        return holder.attr if isinstance(holder, ast.Attribute) else None

    def targets(node: ast.AST) -> list[ast.expr]:
        if isinstance(node, ast.Assign):
            return [t for tt in node.targets for t in ast.walk(tt) if isinstance(t, ast.expr)]
        if isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            return [node.target]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id == "setattr" and len(node.args) == 3 and \
                isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str):
            return [ast.Attribute(node.args[0], node.args[1].value, ast.Store())]
        return []

    def visit(body: list[ast.stmt], qualname: str, body_of: tuple[str, int] | None) -> None:
        for st in body:
            if isinstance(st, ast.ClassDef):
                inner = f"{qualname}.{st.name}" if qualname else st.name
                if not qualname:  # a top-level class: its own body's statements are marked
                    for fn in st.body:
                        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                            visit([fn], inner, None)
                    visit([x for x in st.body if not isinstance(
                        x, (ast.FunctionDef, ast.AsyncFunctionDef))], inner,
                        (st.name, st.lineno))
                    continue
                visit(st.body, inner, None)
                continue
            if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(st.body, f"{qualname}.{st.name}" if qualname else st.name, None)
                continue
            for node in ast.walk(st):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                     ast.Lambda)) and node is not st:
                    continue
                changed = holder_attr(node)
                bases: dict[str, list[ast.expr]] = {}
                for t in targets(node):
                    if isinstance(t, ast.Attribute) and not (
                            isinstance(t.value, ast.Name) and t.value.id == "self"):
                        bases.setdefault(t.attr, []).append(t.value)
                for attr in {*bases, *([changed] if changed else [])}:
                    out.setdefault(attr, []).append(_Store(
                        qualname, body_of, attr == changed, tuple(bases.get(attr, ()))))

    visit(tree.body, "", None)
    return out


def _class_stores_in(path: str, stores: list[_Store], names: set[str], cls: ClassInfo, *,
                     shared: bool = False) -> list[tuple[str, str, bool]]:
    """The stores into ``<X>.attr`` of a module (its :func:`store_index` entries for
    ``attr``), outside the class body of ``cls`` (whose own assignments are its value):
    (module, enclosing function, through one of ``names``). ``shared``: no instance holds
    ``attr`` of its own, so a change in place of ``<X>.attr`` through anything (an instance,
    ``self``) changes the class's object: such a site too (through no name: its value not
    read)."""
    out: list[tuple[str, str, bool]] = []
    for st in stores:
        if st.body_of == (cls.name, cls.line):
            continue  # its own body: the class's value, not a change of it
        if shared and st.mutated:
            out.append((path, st.qualname, False))
            continue
        for base in st.bases:
            by_name = isinstance(base, ast.Name) and base.id in names
            other = (isinstance(base, ast.Name) and base.id == "cls") or \
                (isinstance(base, ast.Call) and isinstance(base.func, ast.Name) and
                 base.func.id == "type") or \
                (isinstance(base, ast.Attribute) and base.attr == "__class__")
            if by_name or other:
                out.append((path, st.qualname, by_name))
    return out


#: the methods that change a container in place
_CHANGES = MUTATORS | {"update", "remove", "discard", "clear"}


def dataclass_decorated(cls: ClassInfo) -> bool:
    """Whether a decorator of the class is a ``dataclass`` (``@dataclass``,
    ``@dataclasses.dataclass(init=False)``, pydantic's): it processes the class's own
    ``field()``s, whatever ``__init__`` the class or its bases write."""
    return any(_decorator_name(d) == "dataclass" for d in cls.decorators)


def _in_init(cls: ClassInfo, line: int) -> bool:
    """Whether line ``line`` of ``cls``'s module lies in its ``__init__``."""
    span = cls.methods.get("__init__")
    return span is not None and span[0] <= line <= span[1]


def _by_class(values: list[Value]) -> Value:
    """What an object of any of several classes holds, each class its own value: where they
    are literals that differ, which one applies is the object's class, a dispatch the flow
    does not follow (each literal is read as a table's entry, :attr:`Lit.table`)."""
    joined = join(values)
    if not isinstance(joined, Union_) or joined.widened:
        return joined
    return join([replace(o, table=True) if isinstance(o, Lit) else o for o in joined.ordered()])
