"""Where a module names a function or class: each reference, and the arguments of those that
are calls (syntax only).

A parameter's default matters only where some caller leaves it out, and a constructor's
argument is what its instances hold; both questions need every reference to be a call whose
arguments can be read one by one. A reference that is anything else (the function handed on,
a subclass's base, a call with ``*args``/``**kwargs``) leaves them open. A name in an
annotation, or a class ``isinstance`` tests, calls nothing and hands nothing on. A module is
read once for every name (:class:`_Index`), as these questions are asked of many names.
"""

from __future__ import annotations

import ast
import re
import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field

#: a call's positional arguments and keywords, as written
Given = tuple[list[ast.expr], list[ast.keyword]]


@dataclass
class _Index:
    """One module's references by name (a ``Name``, or an attribute of that name)."""

    refs: dict[str, int] = field(default_factory=dict)
    #: names referenced as an attribute (``mod.f``, ``obj.f``): of an object not known here;
    #: and those referenced so on anything but ``self``/``cls`` (``h.f(...)``: a call the
    #: analysis may not follow, ``h`` unknown)
    attrs: set[str] = field(default_factory=set)
    foreign: set[str] = field(default_factory=set)
    calls: dict[str, list[Given]] = field(default_factory=dict)
    #: ``partial(f, ...)``: a call of ``f`` made later, whose own keywords may replace these
    partials: dict[str, list[Given]] = field(default_factory=dict)
    #: names the module imports under another name (``from m import f as g``)
    renamed: set[str] = field(default_factory=set)
    #: the words of its strings that may be names (not its docstrings, not prose): a name
    #: looked up by text (``getattr(module, "Wrapper")``, ``"pkg.mod.Wrapper"``)
    words: set[str] = field(default_factory=set)
    #: the classes whose methods build ``type(self)(...)``, ``self.__class__(...)`` or
    #: ``cls(...)`` (a classmethod's first parameter), and ``"*"`` where such a call builds
    #: an object of any class (``type(w)()`` of another object, outside a class)
    builds_own: set[str] = field(default_factory=set)


_INDEXES: weakref.WeakKeyDictionary[ast.Module, _Index] = weakref.WeakKeyDictionary()


def _indexed(tree: ast.Module) -> _Index:
    index = _INDEXES.get(tree)
    if index is None:
        index = _INDEXES[tree] = _index(tree)
    return index


def every_call(tree: ast.Module, last: str, *, partials: bool = True,
               own: bool = False) -> list[Given] | None:
    """The arguments of every reference ``tree`` makes to ``last``, where each is a call (or
    a ``partial`` of it, past the function; with ``partials`` false, a partial is no such
    call: its caller may replace its keywords) that names its arguments one by one; None where
    one is not, where ``tree`` imports it under another name (whose calls name that one),
    where one of its strings names it (looked up by text), or (``own``) where one is made on
    another object than ``self``/``cls``."""
    index = _indexed(tree)
    if own and last in index.foreign:
        return None
    given = [*index.calls.get(last, []), *(index.partials.get(last, []) if partials else [])]
    if last in index.renamed or last in index.words or \
            index.refs.get(last, 0) != len(given) or any(
            any(isinstance(a, ast.Starred) for a in args) or any(k.arg is None for k in kws)
            for args, kws in given):
        return None
    return given


def named_as_attribute(tree: ast.Module, last: str) -> bool:
    """Whether ``tree`` names ``last`` as an attribute of something (``mod.Wrapper``)."""
    return last in _indexed(tree).attrs


def builds_own(tree: ast.Module) -> frozenset[str]:
    """The classes of ``tree`` whose code builds an object of its own class without naming it,
    and ``"*"`` where code builds one of an object's class (:attr:`_Index.builds_own`)."""
    return frozenset(_indexed(tree).builds_own)


def _index(tree: ast.Module) -> _Index:
    index = _Index()
    nodes = list(ast.walk(tree))
    # (an annotation that calls something, ``Annotated[T, Wrapper(False)]``, is code: read)
    typed = {id(sub) for n in nodes for ann in _annotations(n)
             if not any(isinstance(c, ast.Call) for c in ast.walk(ann)) for sub in ast.walk(ann)}
    docs = {id(b.value) for n in nodes if isinstance(n, (ast.Module, ast.ClassDef,
                                                        ast.FunctionDef, ast.AsyncFunctionDef))
            for b in n.body[:1] if isinstance(b, ast.Expr)}
    for n in nodes:
        name = _name_of(n)
        if name is not None and id(n) not in typed:
            _reference(index, n, name)
        elif isinstance(n, ast.alias) and n.asname not in (None, n.name.rpartition(".")[2]):
            index.renamed.add(n.name.rpartition(".")[2])
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs \
                and _PATH.fullmatch(n.value):
            index.words.update(_WORD.findall(n.value))
        if isinstance(n, ast.Call):
            _call(index, n)
    _builders(index, tree, nodes)
    return index


def _reference(index: _Index, n: ast.AST, name: str) -> None:
    index.refs[name] = index.refs.get(name, 0) + 1
    if isinstance(n, ast.Attribute):
        index.attrs.add(name)
        if not (isinstance(n.value, ast.Name) and n.value.id in ("self", "cls")):
            index.foreign.add(name)


def _call(index: _Index, n: ast.Call) -> None:
    called = _name_of(n.func)
    if called is not None:
        index.calls.setdefault(called, []).append((n.args, n.keywords))
    bound = _name_of(n.args[0]) if called == "partial" and n.args else None
    if bound is not None:  # ``partial(f, ...)``: a call of ``f`` with these, later
        index.partials.setdefault(bound, []).append((n.args[1:], n.keywords))


def _builders(index: _Index, tree: ast.Module, nodes: list[ast.AST]) -> None:
    """:attr:`_Index.builds_own`: a method's ``self`` (or a classmethod's ``cls``) is of its
    class or one below, what it builds so is of that family; anything else may be of any
    class."""
    methods = [(c, f) for c in nodes if isinstance(c, ast.ClassDef) for f in c.body
               if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for c, f in methods:
        index.builds_own.update((c.name if b == "own" else b) for b in _builds_in(f, True))
    owned = {id(f) for _, f in methods}
    if any(_builds_in(f) for f in nodes if isinstance(f, (ast.FunctionDef,
           ast.AsyncFunctionDef)) and id(f) not in owned) or any(
            _builds_in(s) for s in tree.body if not isinstance(
                s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))):
        index.builds_own.add("*")


#: a string that may name something to look up (``"Wrapper"``, ``"pkg.mod.Wrapper"``,
#: ``"pkg.mod:Wrapper"``), not prose (a message naming a class names nothing to build), and
#: a word of it
_PATH = re.compile(r"[A-Za-z_][\w.:]*")
_WORD = re.compile(r"[A-Za-z_]\w*")


def _builds_in(node: ast.AST, method: bool = False) -> set[str]:
    """What ``node`` builds without naming a class: ``"own"`` for an object of its own
    object's class (``type(self)(...)``, ``self.__class__(...)``, a classmethod's first
    parameter called, ``self.__init__(...)`` run again, the class handed on), ``"*"`` for one
    of another object's (``type(w)()``, ``w.__class__()``, ``w.__init__(...)``)."""
    # a method's first parameter is its object (or class): what it builds is of that family
    firsts = {node.args.args[0].arg} if method and isinstance(
        node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.args.args else set()
    found: set[str] = set()
    for n in ast.walk(node):
        of = _built_of(n, firsts) if isinstance(n, ast.Call) else None
        if of is not None:
            found.add("own" if isinstance(of, ast.Name) and of.id in firsts else "*")
        elif _hands_on_class(n, firsts):
            found.add("own")
    return found


def _built_of(n: ast.Call, firsts: set[str]) -> ast.expr | None:
    """The object whose class the call builds an object of (``type(x)(...)``,
    ``x.__class__(...)``, ``x.__init__(...)`` again; a method's ``cls(...)``), or None."""
    func = n.func
    if isinstance(func, ast.Call) and _name_of(func.func) == "type" and func.args:
        return func.args[0]
    if isinstance(func, ast.Attribute) and (func.attr == "__class__" or (
            func.attr == "__init__" and _reinit(func.value))):
        return func.value
    if isinstance(func, ast.Name) and func.id in firsts:
        return func
    return None


def _hands_on_class(n: ast.AST, firsts: set[str]) -> bool:
    """Whether ``n`` hands the object's class (or its ``__init__``) on as a value, to be
    built or run anywhere: ``type(self)``, ``__class__``, ``self.__init__``, a copier
    (``__reduce__``'s callable), ``getattr(self, "__init__")``."""
    return (isinstance(n, ast.Call) and _name_of(n.func) == "type" and bool(n.args) and
            isinstance(n.args[0], ast.Name) and n.args[0].id in firsts) or \
        (isinstance(n, ast.Name) and n.id == "__class__") or \
        (isinstance(n, ast.Attribute) and n.attr in ("__class__", "__init__") and
         isinstance(n.value, ast.Name) and n.value.id in firsts) or \
        (isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name in _COPIERS) or \
        (isinstance(n, ast.Constant) and n.value == "__init__")


#: methods through which ``copy``/``pickle`` build an object of the class
_COPIERS = frozenset({"__reduce__", "__reduce_ex__", "__copy__", "__deepcopy__",
                      "__getnewargs__", "__getnewargs_ex__", "__setstate__"})


def _reinit(receiver: ast.expr) -> bool:
    """Whether ``receiver.__init__(...)`` runs ``__init__`` again on a built object: not on
    ``super()`` or a class named by its name (``Base.__init__(self, ...)``, a base's
    initialiser run for the object being built)."""
    if isinstance(receiver, ast.Call) and _name_of(receiver.func) == "super":
        return False
    return not (isinstance(receiver, ast.Name) and receiver.id.lstrip("_")[:1].isupper())


def _name_of(n: ast.AST) -> str | None:
    """The name a reference names: a ``Name``'s, an attribute's last."""
    if isinstance(n, ast.Name):
        return n.id
    if isinstance(n, ast.Attribute):
        return n.attr
    return None


def _annotations(n: ast.AST) -> Iterator[ast.expr]:
    """The annotations ``n`` holds itself (a parameter's, a return's, an annotated
    assignment's), and the classes an ``isinstance``/``issubclass`` call tests."""
    if isinstance(n, ast.arg) and n.annotation is not None:
        yield n.annotation
    elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.returns is not None:
        yield n.returns
    elif isinstance(n, ast.AnnAssign):
        yield n.annotation
    elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and \
            n.func.id in ("isinstance", "issubclass") and len(n.args) == 2:
        yield n.args[1]


@dataclass(frozen=True)
class Use:
    """A use of a function that runs while its module is imported: a call statement
    (``F(...)``), a decorator (``@F(...)`` or ``@F``) of the definition ``decorates``.
    ``conditional``: the top level runs it on some paths only (under an ``if``, a ``match``);
    ``guarded``: it may run more than once, or stop half-way and the import go on (in a loop,
    a ``try``, a ``with`` whose manager may swallow an error)."""

    node: ast.expr
    decorates: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None
    conditional: bool
    guarded: bool = False


def import_time_uses(tree: ast.Module, last: str) -> list[Use] | None:
    """Every reference ``tree`` makes to ``last``, in the order the module runs them, where
    each is a use made while the module is imported (the top level, a class body there);
    None where one is anything else: a call in a function (run whenever that function is),
    the function handed on or kept (``r = F(...)``), an import under another name, a lookup
    by text."""
    index = _indexed(tree)
    if last in index.renamed or last in index.words:
        return None
    uses: list[Use] = []
    _top_uses(tree.body, last, (False, False), uses)
    counted = sum(1 for u in uses for n in ast.walk(u.node) if _name_of(n) == last)
    return uses if counted == index.refs.get(last, 0) == len(uses) else None


def _top_uses(body: list[ast.stmt], last: str, under: tuple[bool, bool], uses: list[Use]
              ) -> None:
    """``under``: (conditional, guarded) of the blocks around ``body``."""
    for st in body:
        if isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            uses += [Use(d, st, *under) for d in st.decorator_list
                     if _name_of(d.func if isinstance(d, ast.Call) else d) == last]
            if isinstance(st, ast.ClassDef):  # a class body runs as it is defined
                _top_uses(st.body, last, under, uses)
        elif isinstance(st, ast.Expr) and isinstance(st.value, ast.Call) and \
                _name_of(st.value.func) == last:
            uses.append(Use(st.value, None, *under))
        else:
            # a block that may run or not (``if``, ``match``), or more than once or in part
            # (a loop, ``try``, ``with``)
            guarded = under[1] or not isinstance(st, (ast.If, ast.Match))
            blocks = [getattr(st, f, []) for f in ("body", "orelse", "finalbody")]
            blocks += [h.body for h in getattr(st, "handlers", [])]
            blocks += [c.body for c in getattr(st, "cases", [])]
            for block in blocks:
                if isinstance(block, list):
                    _top_uses(block, last, (True, guarded), uses)


#: methods that read a container without changing it or handing it on
_READS = frozenset({"get", "keys", "values", "items", "copy", "__contains__", "__getitem__",
                    "count", "index", "issubset", "issuperset", "isdisjoint", "union",
                    "intersection", "difference", "symmetric_difference"})
#: builtins that read a container into a new object (or a number, a truth)
_READ_BY = frozenset({"len", "sorted", "frozenset", "tuple", "list", "set", "dict", "bool",
                      "any", "all", "min", "max", "sum", "enumerate", "reversed"})


def only_read(tree: ast.Module, name: str, allowed: set[int]) -> bool:
    """Whether every reference ``tree`` makes to the container ``name`` (a name, or an
    attribute of that name) only reads it (``x in C``, ``C[k]``, ``C.get(k)``, ``len(C)``,
    ``for x in C``), or is one of the nodes ``allowed`` (its own binding, the changes being
    replayed): no alias, no argument, no change made elsewhere, no ``global``/``del``."""
    if name in _indexed(tree).words:
        return False  # looked up by text (``getattr(mod, "C")``, ``globals()["C"]``)
    parents = {id(c): p for p in ast.walk(tree) for c in ast.iter_child_nodes(p)}
    for n in ast.walk(tree):
        if isinstance(n, (ast.Global, ast.Nonlocal)) and name in n.names:
            return False
        if _name_of(n) != name or id(n) in allowed or isinstance(n, ast.alias):
            continue
        if not isinstance(n, (ast.Name, ast.Attribute)) or not _read_at(n, parents):
            return False
    return True


def _read_at(n: ast.Name | ast.Attribute, parents: dict[int, ast.AST]) -> bool:
    if not isinstance(n.ctx, ast.Load):
        return False
    up = parents.get(id(n))
    if isinstance(up, ast.Compare):
        return n is not up.left and all(isinstance(op, (ast.In, ast.NotIn)) for op in up.ops)
    if isinstance(up, ast.Subscript):
        return up.value is n and isinstance(up.ctx, ast.Load)
    if isinstance(up, ast.Attribute) and up.attr in _READS:
        call = parents.get(id(up))
        return isinstance(call, ast.Call) and call.func is up
    if isinstance(up, ast.Call) and isinstance(up.func, ast.Name) and up.func.id in _READ_BY:
        return n in up.args
    if isinstance(up, (ast.For, ast.AsyncFor, ast.comprehension)):
        return up.iter is n
    return False
