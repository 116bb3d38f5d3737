"""Which functions the trace wraps, found from the records' ``calls``, and the patches that wrap them.

Every producer record's ``calls`` (a dotted path per release range, ``when`` keywords, ``lse_index``,
a call-chosen base) and every consumer record's ``calls`` (path, ``lse_args``) name a function or a
method. The trace resolves each path in the modules already imported (it imports nothing: a guest
in an engine must not load what the engine did not), keeps the calls whose release range holds the
installed version of the record's library, and groups them by the object they resolve to (a
re-export, ``flashinfer.single_decode_with_kv_cache`` and ``flashinfer.decode.
single_decode_with_kv_cache``, is one function and one wrapper).

:class:`Patches` replaces each object where it is reachable by name — the attribute the path
names, every other module attribute holding the same object (``from x import f`` and ``import ...
as``), and every ``functools.partial`` made of it before the trace began (vLLM keeps
``partial(cp_lse_ag_out_rs, is_lse_base_on_e=False)`` on its impl) — and puts every one back on
:meth:`Patches.restore`, in reverse order, whatever happened in between. A path that does not
resolve is skipped with the reason; nothing here raises for an absent function.
:class:`ImportWatch` wraps a record's function whose module is imported while the trace runs, as
its import finishes; :func:`sweep` takes back, at the end, every wrapper that code run during
the trace bound elsewhere (a module's ``from x import f``, a partial, a dict, a list, a closure).

Torch-free.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import inspect
import sys
import threading
import types
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Iterator
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import TypeVar
from typing import cast

from attn_contracts.consumer import ConsumerCall
from attn_contracts.consumer import ConsumerRecord
from attn_contracts.records import CapabilityRecord
from attn_contracts.records import ProducerCall
from attn_contracts.versions import in_range

_T = TypeVar("_T")

__all__ = ["ImportWatch", "Patches", "Target", "collect", "installed_version", "sweep",
           "watched_modules"]


@dataclass
class Target:
    """One function (or method) the trace wraps, with every record call that names it."""

    path: str
    original: Callable[..., Any]
    producers: list[tuple[CapabilityRecord, ProducerCall]] = field(default_factory=list)
    consumers: list[tuple[ConsumerRecord, ConsumerCall]] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
    #: where the wrapper is installed: (owner, attribute, raw value found there, own attribute)
    owner: Any = None
    attribute: str = ""
    raw: Any = None
    own: bool = True
    signature: inspect.Signature | None = None


def installed_version(library: str) -> str | None:
    """The version of a record's library as imported here (``vllm.__version__``), or None when it
    is not imported (every release range then holds)."""
    module = sys.modules.get(library.replace("-", "_"))
    version = getattr(module, "__version__", None)
    return version if isinstance(version, str) else None


def _resolve(path: str) -> tuple[Any, str, Any, bool] | str:
    """``(owner, attribute, raw value, own)`` for a dotted path in the imported modules, or why
    not. ``own``: the attribute is in the owner's own namespace (a method may be inherited)."""
    parts = path.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module = sys.modules.get(".".join(parts[:cut]))
        if module is not None:
            break
    else:
        return f"module {parts[0]!r} is not imported"
    owner: Any = module
    for name in parts[cut:-1]:
        try:
            owner = inspect.getattr_static(owner, name)
        except AttributeError:
            return f"{'.'.join(parts[:cut])} has no {name!r}"
    attr = parts[-1]
    try:
        raw = inspect.getattr_static(owner, attr)
    except AttributeError:
        return f"{getattr(owner, '__name__', owner)!r} has no {attr!r}"
    own = attr in getattr(owner, "__dict__", {})
    return owner, attr, raw, own


def _callable_of(raw: Any) -> Callable[..., Any] | None:
    inner = raw.__func__ if isinstance(raw, (staticmethod, classmethod)) else raw
    return inner if callable(inner) else None


def collect(records: Iterable[CapabilityRecord], consumers: Iterable[ConsumerRecord],
            ) -> tuple[list[Target], list[tuple[str, str]]]:
    """The targets of these records in the imported modules, and ``(path, why)`` for every
    call path skipped."""
    by_id: dict[int, Target] = {}
    skipped: list[tuple[str, str]] = []
    entries: list[tuple[CapabilityRecord | ConsumerRecord, ProducerCall | ConsumerCall]] = [
        (r, c) for r in records for c in r.calls]
    entries += [(r, c) for r in consumers for c in r.calls]
    for record, call in entries:
        version = installed_version(record.library)
        if not (in_range(record.library_version, version) and in_range(call.versions, version)):
            continue
        found = _resolve(call.function)
        if isinstance(found, str):
            skipped.append((call.function, found))
            continue
        owner, attr, raw, own = found
        fn = _callable_of(raw)
        if fn is None:
            skipped.append((call.function, f"{type(raw).__name__} is not callable"))
            continue
        target = by_id.get(id(fn))
        if target is None:
            target = by_id[id(fn)] = Target(call.function, fn, owner=owner, attribute=attr,
                                            raw=raw, own=own)
            try:
                target.signature = inspect.signature(fn)
            except (TypeError, ValueError):  # a builtin: positions only
                target.signature = None
        elif call.function != target.path and call.function not in target.aliases:
            target.aliases.append(call.function)
        _add_record(target, record, call)
    for t in by_id.values():  # a record of a release range says more than one for any release
        t.consumers.sort(key=lambda rc: not rc[0].library_version)
        t.producers.sort(key=lambda rc: not rc[0].library_version)
    return list(by_id.values()), skipped


def _add_record(target: Target, record: CapabilityRecord | ConsumerRecord,
                call: ProducerCall | ConsumerCall) -> None:
    """The record among the target's consumers or producers; a record naming one function twice
    (a re-export) is one entry: it is checked once."""
    if isinstance(record, ConsumerRecord) and isinstance(call, ConsumerCall):
        if all(r is not record for r, _ in target.consumers):
            target.consumers.append((record, call))
    elif isinstance(record, CapabilityRecord) and isinstance(call, ProducerCall) and \
            all(r is not record for r, _ in target.producers):
        target.producers.append((record, call))


class Patches:
    """Every replacement made, undone in reverse order by :meth:`restore` (even halfway through a
    failed :meth:`install`)."""

    def __init__(self) -> None:
        self._undo: list[Callable[[], str | None]] = []
        self.rebound: list[str] = []  # where each wrapper went, for the report

    def install(self, targets: list[Target], wrap: Callable[[Target], Callable[..., Any]],
                *, partials: bool = True) -> None:
        wrappers = {id(t.original): (t, wrap(t)) for t in targets}
        for t, w in wrappers.values():
            self._set_attr(t, w)
        self._rebind_modules(wrappers)
        if partials:
            self._rebind_partials(wrappers)

    def _set_attr(self, t: Target, wrapper: Callable[..., Any]) -> None:
        raw = t.raw
        new: Any = (type(raw)(wrapper) if isinstance(raw, (staticmethod, classmethod))
                    else wrapper)
        owner, attr, own = t.owner, t.attribute, t.own
        setattr(owner, attr, new)

        def undo() -> str | None:
            if inspect.getattr_static(owner, attr, None) is not new:
                return f"{t.path} was replaced by someone else while traced; left as it is"
            if own:
                setattr(owner, attr, raw)
            else:  # the method was inherited: the subclass attribute goes again
                delattr(owner, attr)
            return None

        self._undo.append(undo)
        self.rebound.append(t.path)

    def _rebind_modules(self, wrappers: dict[int, tuple[Target, Callable[..., Any]]]) -> None:
        """``from module import f`` elsewhere: every module attribute that is the original."""
        for name, module, namespace, attr, (t, w) in _module_bindings(
                wrappers, lambda value, hit: hit[0].original is value):
            if module is t.owner and attr == t.attribute:
                continue
            own = getattr(t.original, "__name__", t.attribute)
            if own != t.attribute and attr not in (own, t.attribute):
                # a placeholder bound under the kernel's name (vLLM's CPU build binds
                # flash_mla_with_kvcache and four others to one _raise_flashmla_unavailable):
                # its other names are other functions, not aliases of this one
                continue
            namespace[attr] = w
            self._undo.append(functools.partial(self._put_back, namespace, attr, w, t.original,
                                                f"{name}.{attr}"))
            self.rebound.append(f"{name}.{attr}")

    @staticmethod
    def _put_back(namespace: dict[str, Any], attr: str, wrapper: Any, value: Any,
                  where: str) -> str | None:
        if namespace.get(attr) is not wrapper:
            return f"{where} was replaced by someone else while traced; left as it is"
        namespace[attr] = value
        return None

    def _rebind_partials(self, wrappers: dict[int, tuple[Target, Callable[..., Any]]]) -> None:
        """``functools.partial(f, ...)`` objects made before the trace hold ``f`` itself: their
        state is rebound to the wrapper (one pass over the referrers of all originals)."""
        originals = [t.original for t, _ in wrappers.values()]
        for ref in gc.get_referrers(*originals):
            if not isinstance(ref, functools.partial):
                continue
            hit = wrappers.get(id(ref.func))
            if hit is None or hit[0].original is not ref.func:
                continue
            t, w = hit
            state = (ref.func, ref.args, ref.keywords, vars(ref) or None)
            cast(Any, ref).__setstate__((w, *state[1:]))
            self._undo.append(functools.partial(self._unbind_partial, ref, w, state))
            self.rebound.append(f"functools.partial({t.path}, ...)")

    @staticmethod
    def _unbind_partial(ref: functools.partial[Any], wrapper: Any,
                        state: tuple[Any, ...]) -> str | None:
        if ref.func is not wrapper:
            return "a partial's function was replaced while traced; left as it is"
        cast(Any, ref).__setstate__(state)
        return None

    def restore(self) -> list[str]:
        """Undo every patch (last first); the notes of those someone else had replaced since."""
        notes = []
        while self._undo:
            undo = self._undo.pop()
            try:
                note = undo()
            except Exception as err:  # never leave the rest patched because one failed
                note = f"could not restore a patch: {type(err).__name__}: {err}"
            if note:
                notes.append(note)
        return notes


def sweep(wrappers: dict[int, tuple[Any, Any]], *, referrers: bool) -> list[str]:
    """Put each original back wherever its wrapper is still found (``wrappers``: id(wrapper) →
    (wrapper, original)): every module attribute (a module imported during the trace bound the
    wrapper under its own name), and with ``referrers`` every ``functools.partial``, dict, list
    and closure cell that holds it (one pass over the garbage collector's referrers, made only
    when a wrapper is still held somewhere). Where it went, for the report."""
    found: list[str] = []
    for name, _, namespace, attr, hit in _module_bindings(wrappers,
                                                          lambda value, hit: hit[0] is value):
        namespace[attr] = hit[1]
        found.append(f"{name}.{attr}")
    if not referrers or not wrappers or not _escaped(wrappers):
        return found
    modules = {id(getattr(m, "__dict__", None)) for m in list(sys.modules.values())}
    for ref in gc.get_referrers(*(w for w, _ in wrappers.values())):
        try:
            found += _unwrap_in(ref, wrappers, modules)
        except (TypeError, AttributeError, ValueError):  # something that cannot be changed
            continue
    return found


def _module_bindings(table: dict[int, _T], matches: Callable[[Any, _T], bool]
                     ) -> Iterator[tuple[str, Any, dict[str, Any], str, _T]]:
    """Every module attribute whose value's id is in ``table`` and ``matches`` its entry:
    (module name, module, its namespace, attribute, entry), over a snapshot of the modules and of
    each namespace, so the caller may rebind what it is handed."""
    for name, module in list(sys.modules.items()):
        namespace = getattr(module, "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for attr, value in list(namespace.items()):
            hit = table.get(id(value))
            if hit is not None and matches(value, hit):
                yield name, module, namespace, attr, hit


def _escaped(wrappers: dict[int, tuple[Any, Any]]) -> bool:
    """Whether anything but this table still holds a wrapper (its reference count above that of
    a probe held the same way, measured here: the count's meaning changes across Pythons), so
    the heap is scanned only when there is something to find."""
    def probe() -> None:
        return None

    table = {id(probe): (probe, None)}
    baseline = max(sys.getrefcount(w) for w, _ in table.values())
    return any(sys.getrefcount(w) > baseline for w, _ in wrappers.values())


def _unwrap_in(ref: Any, wrappers: dict[int, tuple[Any, Any]], modules: set[int]) -> list[str]:
    def original(value: Any) -> Any:
        hit = wrappers.get(id(value))
        return hit[1] if hit is not None and hit[0] is value else None

    if isinstance(ref, functools.partial):
        func = original(ref.func)
        if func is not None:
            cast(Any, ref).__setstate__((func, ref.args, ref.keywords, vars(ref) or None))
            return [f"functools.partial({func.__qualname__}, ...)"]
    elif isinstance(ref, types.CellType):
        func = original(ref.cell_contents)
        if func is not None:
            ref.cell_contents = func
            return [f"a closure's {func.__qualname__}"]
    elif isinstance(ref, list):
        out = []
        for i, value in enumerate(ref):
            func = original(value)
            if func is not None:
                ref[i] = func
                out.append(f"a list's {func.__qualname__}")
        return out
    elif isinstance(ref, dict) and id(ref) not in modules:
        owners = [o for o in gc.get_referrers(ref) if isinstance(o, type)]
        out = []
        for key, value in list(ref.items()):
            func = original(value)
            if func is None:
                continue
            owner = next((o for o in owners if o.__dict__.get(key) is value), None)
            if owner is not None:  # a class's namespace: through setattr, so its cache knows
                setattr(owner, key, func)
            else:
                ref[key] = func
            out.append(f"{key!r}: {func.__qualname__}")
        return out
    return []


def watched_modules(paths: Iterable[str]) -> set[str]:
    """The modules whose import may make one of these dotted paths resolve: every prefix not
    imported yet."""
    names: set[str] = set()
    for path in paths:
        parts = path.split(".")
        for cut in range(1, len(parts)):
            name = ".".join(parts[:cut])
            if name not in sys.modules:
                names.add(name)
    return names


class ImportWatch:
    """A ``sys.meta_path`` entry that finds nothing itself: for a watched module it asks the
    finders after it, and has the loader call ``loaded(name)`` once the module's code has run, so
    a producer imported during the trace is wrapped before anything can call it. The loader is
    touched on its own instance only, and only while that module executes."""

    def __init__(self, names: set[str], loaded: Callable[[str], None]) -> None:
        self.names = names
        self.loaded: Callable[[str], None] | None = loaded
        self._busy = threading.local()

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if self.loaded is None or fullname not in self.names or getattr(self._busy, "on", False):
            return None
        self._busy.on = True
        try:
            spec = None
            for finder in list(sys.meta_path):
                find = getattr(finder, "find_spec", None)
                if finder is self or find is None:
                    continue
                spec = find(fullname, path, target)
                if spec is not None:
                    break
        finally:
            self._busy.on = False
        loader = getattr(spec, "loader", None)
        run = getattr(loader, "exec_module", None)
        if run is None or isinstance(loader, type) or not hasattr(loader, "__dict__"):
            return spec  # a loader shared by many modules is not touched: caught at stop
        watch = self

        def exec_module(module: types.ModuleType) -> None:
            try:
                run(module)
            finally:
                vars(loader).pop("exec_module", None)
                if watch.loaded is not None:
                    watch.loaded(fullname)

        loader.exec_module = exec_module  # type: ignore[union-attr]
        return spec

    def close(self) -> None:
        """Off the meta path, and nothing held (a watched import still running calls no one)."""
        self.loaded = None
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(self)
