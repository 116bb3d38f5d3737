"""Which kernels a backend class calls, by the producer records (for ``AC002``'s severity).

A backend class whose LSE base comes only from an inherited default is judged by the kernels its
methods call: a call the producer records name (``flash_mla_with_kvcache(...)``,
``BatchDecodeWithPagedKVCacheWrapper.run(..., return_lse=...)``) says which base its LSE has.
The default is then an error where it contradicts that base, nothing where it agrees, and a
warning where the class calls no kernel the records know (or kernels of two bases).

A call matches a producer when its last name is the producer's, a method's class is bound in the
module (imported or defined there: ``run`` alone says nothing), and no keyword of the record's
``when`` is passed a different literal (``return_lse=self.need_lse`` may return the LSE; the
class returns it only then, so its base is still the kernel's).
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass

from attn_contracts.lint.classes import ModuleInfo
from attn_contracts.lint.knowledge import Knowledge, Producer

__all__ = ["KernelCall", "kernel_calls_of"]


@dataclass(frozen=True)
class KernelCall:
    """One call of a known producer in a class's methods: the bases its records allow."""

    name: str  # the call's last name, for messages
    line: int
    bases: tuple[str, ...]  # sorted; one base where every matching record agrees
    records: tuple[str, ...]


def _literal_text(node: ast.expr) -> set[str]:
    if not isinstance(node, ast.Constant):
        return set()
    v = node.value
    return {ast.unparse(node), repr(v), str(v), f'"{v}"' if isinstance(v, str) else str(v)}


def _may_satisfy(p: Producer, call: ast.Call) -> bool:
    given = {k.arg: k.value for k in call.keywords if k.arg is not None}
    opaque = any(k.arg is None for k in call.keywords)
    for kw, literal in p.when:
        value = given.get(kw)
        if value is None:
            if not opaque:
                return False
            continue
        if isinstance(value, ast.Constant) and literal not in _literal_text(value):
            return False  # return_lse=False: this call returns no LSE
    return True


def _bound(module: ModuleInfo | None, name: str) -> bool:
    if module is None:
        return False
    return name in module.from_imports or name in module.classes or any(
        imported == name for _, imported in module.from_imports.values())


def _assigns(node: ast.ClassDef, attrs: tuple[str, ...]) -> bool:
    for st in node.body:
        targets = st.targets if isinstance(st, ast.Assign) else (
            [st.target] if isinstance(st, ast.AnnAssign) else [])
        if any(isinstance(t, ast.Name) and t.id in attrs for t in targets):
            return True
    return False


def kernel_calls_of(knowledge: Knowledge, module: ModuleInfo | None,
                    attrs: tuple[str, ...] | None = None,
                    ) -> Callable[[ast.ClassDef], tuple[KernelCall, ...]]:
    """A function from a class's syntax tree to the known producer calls in its methods;
    ``attrs``: only classes that assign one of these (a backend's capability or base) are
    read (the others cannot be AC002's subject or the owner of its default)."""

    def calls(node: ast.ClassDef) -> tuple[KernelCall, ...]:
        if attrs is not None and not _assigns(node, attrs):
            return ()
        out = []
        for sub in ast.walk(node):
            if not isinstance(sub, ast.Call):
                continue
            func = sub.func
            last = func.attr if isinstance(func, ast.Attribute) else (
                func.id if isinstance(func, ast.Name) else None)
            if last is None or last not in knowledge.producers:
                continue
            found = [p for p in knowledge.producers[last]
                     if (p.owner_class is None or _bound(module, p.owner_class))
                     and _may_satisfy(p, sub)]
            # the most specific records win: run(return_lse=True, return_lse_base_on_e=True) is
            # the +basee record's call, not also the plain one's
            found = [p for p in found if not any(set(p.when) < set(q.when) for q in found)]
            if found:
                bases = tuple(sorted({b for p in found for b in p.bases_for(sub)}))
                out.append(KernelCall(last, sub.lineno, bases,
                                      tuple(sorted({p.record for p in found}))))
        return tuple(out)

    return calls
