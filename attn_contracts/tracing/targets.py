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

Torch-free.
"""

from __future__ import annotations

import functools
import gc
import inspect
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from attn_contracts.consumer import ConsumerCall, ConsumerRecord
from attn_contracts.records import CapabilityRecord, ProducerCall
from attn_contracts.versions import in_range

__all__ = ["Patches", "Target", "collect", "installed_version"]


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
        # a record naming one function twice (a re-export) is one entry: it is checked once
        if isinstance(record, ConsumerRecord) and isinstance(call, ConsumerCall):
            if all(r is not record for r, _ in target.consumers):
                target.consumers.append((record, call))
        elif isinstance(record, CapabilityRecord) and isinstance(call, ProducerCall) and \
                all(r is not record for r, _ in target.producers):
            target.producers.append((record, call))
    for t in by_id.values():  # a record of a release range says more than one for any release
        t.consumers.sort(key=lambda rc: not rc[0].library_version)
        t.producers.sort(key=lambda rc: not rc[0].library_version)
    return list(by_id.values()), skipped


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
        for name, module in list(sys.modules.items()):
            namespace = getattr(module, "__dict__", None)
            if not isinstance(namespace, dict):
                continue
            for attr, value in list(namespace.items()):
                hit = wrappers.get(id(value))
                if hit is None or hit[0].original is not value:
                    continue
                t, w = hit
                if module is t.owner and attr == t.attribute:
                    continue
                own = getattr(t.original, "__name__", t.attribute)
                if own != t.attribute and attr not in (own, t.attribute):
                    # a placeholder bound under the kernel's name (vLLM's CPU build binds
                    # flash_mla_with_kvcache and four others to one _raise_flashmla_unavailable):
                    # its other names are other functions, not aliases of this one
                    continue
                namespace[attr] = w
                self._undo.append(functools.partial(self._put_back, namespace, attr, w, value,
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
