"""Class hierarchies across every linted file, read with ``ast`` only (nothing is imported).

Bases are matched by their last name (``engine.AttentionImpl`` → ``AttentionImpl``), so a base
class defined in another file of the set is resolved; bases outside the set are kept as
"unresolved" so a rule can say the fact may come from there.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

__all__ = ["ClassInfo", "Hierarchy", "collect_classes"]


@dataclass
class ClassInfo:
    name: str
    path: str
    node: ast.ClassDef
    bases: list[str]
    #: class-level assignments: attribute → (value node, line, column)
    attrs: dict[str, tuple[ast.expr, int, int]] = field(default_factory=dict)


def _base_name(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    if isinstance(expr, ast.Subscript):  # Generic[T], Base[...]
        return _base_name(expr.value)
    return None


def collect_classes(tree: ast.Module, path: str) -> list[ClassInfo]:
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ClassDef):
            continue
        info = ClassInfo(node.name, path, node,
                         [b for b in (_base_name(e) for e in node.bases) if b])
        for stmt in node.body:
            targets: list[ast.expr] = []
            value: ast.expr | None = None
            if isinstance(stmt, ast.Assign):
                targets, value = stmt.targets, stmt.value
            elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
                targets, value = [stmt.target], stmt.value
            for t in targets:
                if isinstance(t, ast.Name) and value is not None:
                    info.attrs[t.id] = (value, stmt.lineno, stmt.col_offset)
        out.append(info)
    return out


class Hierarchy:
    """Every class of the linted set, by name (a later definition of a name shadows earlier)."""

    def __init__(self, classes: list[ClassInfo]):
        self.by_name: dict[str, ClassInfo] = {c.name: c for c in classes}

    def mro(self, cls: ClassInfo) -> tuple[list[ClassInfo], list[str]]:
        """Known ancestors in a left-to-right depth-first order (``cls`` first), and the names
        of bases that are not in the linted set."""
        seen: list[ClassInfo] = []
        unresolved: list[str] = []
        stack = [cls.name]
        while stack:
            name = stack.pop(0)
            info = self.by_name.get(name)
            if info is None:
                if name not in unresolved and name != "object":
                    unresolved.append(name)
                continue
            if info in seen:
                continue
            seen.append(info)
            stack = [*info.bases, *stack]
        return seen, unresolved

    def definer(self, cls: ClassInfo, attr: str) -> ClassInfo | None:
        """The first class in ``cls``'s MRO that assigns ``attr`` itself."""
        return next((c for c in self.mro(cls)[0] if attr in c.attrs), None)

    def value(self, cls: ClassInfo, attr: str) -> ast.expr | None:
        owner = self.definer(cls, attr)
        return None if owner is None else owner.attrs[attr][0]
