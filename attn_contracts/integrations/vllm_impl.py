"""What the vLLM check reads of an impl: one typed record, :class:`ImplFacts`, made two ways.

- :func:`from_runtime`: from an impl class vLLM's ``get_impl_cls()`` gave, or the impl object
  vLLM built for a layer (its own attributes and properties first: what the object answers is
  what vLLM reads);
- :func:`from_source`: from the facts :mod:`~attn_contracts.integrations.vllm_source` parsed
  out of a source tree (nothing imported).

The check (:mod:`attn_contracts.integrations.vllm`) reads only the record, never the class or
the object, so a tree that is read and a vLLM that runs are judged by the same code.
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from types import MappingProxyType
from typing import TYPE_CHECKING
from typing import Any

from attn_contracts.findings import Location

if TYPE_CHECKING:
    from attn_contracts.integrations.vllm_source import MemberFacts

__all__ = ["Declared", "ImplFacts", "MroClass", "as_facts", "from_runtime", "from_source",
           "read_attr"]

#: a class named as (module, qualified name)
ClassKey = tuple[str, str]


@dataclass(frozen=True)
class MroClass:
    """One class of the impl's MRO and the declaration attributes its own namespace sets, each
    with the value a read on that class gives (what an ancestor declares as its default)."""

    module: str
    name: str
    sets: tuple[tuple[str, object], ...] = ()

    @property
    def key(self) -> ClassKey:
        return self.module, self.name


@dataclass(frozen=True)
class Declared:
    """One declaration attribute as the impl answers it."""

    #: the value (an object's own, a property's); None where nothing sets it or a property raises
    value: object
    #: the class whose namespace sets it (the impl's own class when the object sets it itself);
    #: None where nothing does
    owner: ClassKey | None
    #: where it is set: ``vllm/...py:LINE``, or (no file) ``set on the ... object vLLM built``,
    #: the class's dotted name where its source cannot be read; None where unset
    where: Location | None

    @property
    def owner_name(self) -> str | None:
        return None if self.owner is None else self.owner[1].rsplit(".", 1)[-1]


_UNSET = Declared(None, None, None)


@dataclass(frozen=True)
class ImplFacts:
    """An impl as the check reads it: its class, the MRO, and each declaration attribute asked
    for (an attribute not recorded reads as unset)."""

    module: str
    qualname: str
    mro: tuple[MroClass, ...]  # nearest first: the impl's own class is the first
    declared: Mapping[str, Declared] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def name(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]

    @property
    def path(self) -> str:
        """``module.QualName``."""
        return f"{self.module}.{self.qualname}"

    @property
    def key(self) -> ClassKey:
        return self.module, self.qualname

    def attr(self, attr: str) -> Declared:
        return self.declared.get(attr, _UNSET)

    def value(self, attr: str) -> object:
        """What the impl answers for ``attr`` (None where nothing sets it)."""
        return self.attr(attr).value

    def is_set(self, attr: str) -> bool:
        return self.attr(attr).owner is not None

    def inherited(self, attr: str) -> bool:
        """Whether ``attr`` comes from an ancestor (not the impl's class or object)."""
        owner = self.attr(attr).owner
        return owner is not None and owner != self.key

    def read_on(self, owner: ClassKey, attr: str, default: object = None) -> object:
        """``attr`` as a read on the MRO class ``owner`` gives it (its own namespace, else the
        classes after it): what that ancestor declares; ``default`` where none sets it."""
        keys = [c.key for c in self.mro]
        start = keys.index(owner) if owner in keys else len(keys)
        for c in self.mro[start:]:
            for name, value in c.sets:
                if name == attr:
                    return value
        return default

    def with_value(self, attr: str, value: object, where: Location) -> ImplFacts:
        """The same impl with ``attr`` set to ``value`` on its own class at ``where`` (a test's
        bent declaration)."""
        head = self.mro[0] if self.mro and self.mro[0].key == self.key else None
        own = head or MroClass(self.module, self.qualname)
        own = replace(own, sets=(*((n, v) for n, v in own.sets if n != attr), (attr, value)))
        mro = (own, *(self.mro[1:] if head else self.mro))
        declared = {**self.declared, attr: Declared(value, self.key, where)}
        return replace(self, mro=mro, declared=MappingProxyType(declared))


# --- the runtime path ----------------------------------------------------------------------------
def read_attr(impl: type | object, attr: str) -> Any:
    """``impl.attr`` as vLLM reads it (an object's own value, a property's), None where absent or
    where a property raises (the finding then names None)."""
    try:
        return getattr(impl, attr, None)
    except Exception:  # a property that fails here would fail in vLLM too; it declares nothing
        return None


def _vllm_path(path: str | None) -> str:
    """``.../site-packages/vllm/x/y.py`` → ``vllm/x/y.py``."""
    if not path:
        return "?"
    parts = path.replace(os.sep, "/").rsplit("/vllm/", 1)
    return "vllm/" + parts[1] if len(parts) == 2 else path


def _where_set(owner: type, attr: str) -> Location:
    """``file:line`` of the line of ``owner``'s source that sets ``attr`` (the class's own line
    when the assignment cannot be found; its dotted name, a unit with no file, without a
    source)."""
    try:
        lines, start = inspect.getsourcelines(owner)
        path = _vllm_path(inspect.getsourcefile(owner))
    except (OSError, TypeError):
        return Location(f"{owner.__module__}.{owner.__qualname__}")
    # an assignment (``attr = ...``), or a property's ``def attr(``
    pattern = re.compile(rf"^\s+({re.escape(attr)}\s*(:[^=]+)?=|def\s+{re.escape(attr)}\s*\()")
    line = next((start + i for i, text in enumerate(lines) if pattern.match(text)), start)
    return Location(path, line)


def _class_read(cls: type, attr: str) -> object:
    try:
        return getattr(cls, attr)
    except Exception:  # a class-level read that fails declares nothing
        return None


def from_runtime(impl: type | object, attrs: Iterable[str]) -> ImplFacts:
    """The record of an impl class, or of the impl object vLLM built (an attribute the object
    sets itself is owned by its class and said to be set on the object)."""
    cls = impl if isinstance(impl, type) else type(impl)
    asked = tuple(dict.fromkeys(attrs))
    mro = tuple(MroClass(k.__module__, k.__qualname__,
                         tuple((a, _class_read(k, a)) for a in asked if a in vars(k)))
                for k in cls.__mro__ if k is not object)
    own = vars(impl) if not isinstance(impl, type) and hasattr(impl, "__dict__") else {}
    declared: dict[str, Declared] = {}
    for attr in asked:
        if attr in own:
            declared[attr] = Declared(read_attr(impl, attr), (cls.__module__, cls.__qualname__),
                                      Location(f"set on the {cls.__qualname__} object vLLM built"))
            continue
        owner = next((k for k in cls.__mro__ if attr in vars(k)), None)
        if owner is not None:
            declared[attr] = Declared(read_attr(impl, attr),
                                      (owner.__module__, owner.__qualname__),
                                      _where_set(owner, attr))
    return ImplFacts(cls.__module__, cls.__qualname__, mro, MappingProxyType(declared))


# --- the source path -----------------------------------------------------------------------------
def from_source(member: MemberFacts, attrs: Iterable[str]) -> ImplFacts:
    """The record of a member's impl class from the parsed facts: its MRO as the sources define
    it, and each declaration attribute's literal (None where it is no literal), its owner and
    the line that sets it."""
    module, _, name = member.impl.rpartition(".")
    modules = {cls_name: mod for mod, cls_name in member.mro}
    found = {a: member.attrs[a] for a in dict.fromkeys(attrs) if a in member.attrs}
    mro = tuple(MroClass(mod, cls_name, tuple((a, f.value) for a, f in found.items()
                                              if f.owner == cls_name))
                for mod, cls_name in member.mro)
    if not mro or mro[0].name != name:  # the impl's own class heads the MRO, always
        mro = (MroClass(module, name), *mro)
    # an attribute is owned by a class of the MRO (one the sources do not place there is unset)
    declared = {a: Declared(f.value, (modules[f.owner], f.owner), f.where)
                for a, f in found.items() if f.owner in modules}
    return ImplFacts(module, name, mro, MappingProxyType(declared))


def as_facts(impl: ImplFacts | type | object, attrs: Iterable[str]) -> ImplFacts:
    """``impl``'s record: itself where it is one (a source tree's), else read from the class or
    object."""
    return impl if isinstance(impl, ImplFacts) else from_runtime(impl, attrs)
