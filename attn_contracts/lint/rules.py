"""The lint rules: pure functions from syntax trees (and the class hierarchy) to findings.

Every finding carries ``location = "path:line:col"``; the subject is the class or call it is
about. Messages name the value found and what is allowed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from typing import Any

from attn_contracts.findings import Code, Finding, Severity
from attn_contracts.lint.classes import ClassInfo, Hierarchy
from attn_contracts.lint.config import LintConfig

__all__ = ["class_findings", "could_fire", "tree_findings"]

_LSE_DETAILS = ("base", "layout", "q_len_axis", "padded_heads", "dtype", "empty_row",
                "includes_sink")


def _at(path: str, line: int, col: int) -> str:
    return f"{path}:{line}:{col + 1}"


def _unparse(node: ast.expr, limit: int = 80) -> str:
    """Source text of an expression for a message: shortened, and never a RecursionError on a
    pathologically nested one."""
    try:
        text = ast.unparse(node)
    except RecursionError:
        return "<an expression nested too deeply to print>"
    return text if len(text) <= limit else f"{text[:limit - 1]}…"


def _is_true(node: ast.expr | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def _registered_with_record(cls: ClassInfo) -> bool:
    """``@register(CapabilityRecord(...))`` / ``@register(record)``: the record is the contract."""
    for dec in cls.decorators:
        if isinstance(dec, ast.Call) and _func_name(dec.func) == "register" and dec.args:
            return True
    return False


def _returns_lse(h: Hierarchy, cls: ClassInfo, cfg: LintConfig) -> bool:
    return any(_is_true(h.value(cls, a)) for a in cfg.returns_attrs)


# --- classes: AC001, AC002 -------------------------------------------------------------------------
#: bases that can hold no backend attribute: a class whose only unresolved bases are these has
#: no base from a default anywhere
_NO_DEFAULTS = frozenset({"abc.ABC", "ABC", "object", "typing.Generic", "Generic",
                          "typing.Protocol", "Protocol", "enum.Enum", "Enum"})


def _base_meaning(attr: str, value: ast.expr) -> str | None:
    """The base a literal of a base attribute means: ``lse_base_on_e = True`` → "e"."""
    if not isinstance(value, ast.Constant):
        return None
    if isinstance(value.value, bool) and attr.endswith("_on_e"):
        return "e" if value.value else "2"
    if value.value in ("e", "2"):
        return str(value.value)
    return None


def _kernel_bases(h: Hierarchy, cls: ClassInfo) -> tuple[set[str], list[Any]]:
    """The bases the known producer calls of ``cls`` and its linted ancestors can return."""
    if not h.calls_kernels:
        return set(), []
    known, _ = h.mro(cls)
    calls = [c for k in known for c in k.kernel_calls]
    return {b for c in calls for b in c.bases}, calls


def class_findings(h: Hierarchy, cfg: LintConfig,
                   classes: Iterable[ClassInfo] | None = None) -> Iterator[Finding]:
    """Classes that set a returns-LSE attribute to True must declare their base themselves (or
    inherit it from an ancestor that itself returns LSE). ``classes``: the ones to report on
    (default: every class of the hierarchy).

    A base that comes only from a default is judged by the kernels the class calls (the
    producer records' calls, :mod:`attn_contracts.lint.kernels`): an error where the default
    contradicts their base, nothing where it agrees, a warning where no call tells."""
    for cls in h.classes if classes is None else classes:
        own = [a for a in cfg.returns_attrs if a in cls.attrs and _is_true(cls.attrs[a][0])]
        if not own or _registered_with_record(cls):
            continue
        _, line, col = cls.attrs[own[0]]
        where = _at(cls.path, line, col)
        owners = [(a, h.definer(cls, a)) for a in cfg.base_attrs]
        found = [(a, o) for a, o in owners if o is not None]
        if not found:
            unresolved = [u for u in h.unresolved(cls) if u not in _NO_DEFAULTS]
            if unresolved:
                yield Finding(
                    Code.AC002, cls.name,
                    f"{cls.name} sets {own[0]} = True but no {'/'.join(cfg.base_attrs)} in the "
                    f"linted files: the base can only come from a default on "
                    f"{', '.join(unresolved)} (not linted)", severity=Severity.WARNING,
                    hint=f"set {cfg.base_attrs[0]} on {cls.name} itself", field=cfg.base_attrs[0],
                    found=None, allowed=f"{cfg.base_attrs[0]} set on {cls.name}", location=where)
            elif "lse" in own[0].lower() or cls.kernel_calls:
                yield Finding(
                    Code.AC001, cls.name,
                    f"{cls.name} sets {own[0]} = True but no {'/'.join(cfg.base_attrs)} is "
                    "declared anywhere in its hierarchy (allowed: True for base e, False for "
                    "base 2)", hint=f"set {cfg.base_attrs[0]} on {cls.name}",
                    field=cfg.base_attrs[0], found=None, allowed="True, False", location=where)
            # else: a class that claims DCP support (a layer) but returns no LSE of its own
            continue
        attr, owner = found[0]
        if owner is cls or owner is None or _returns_lse(h, owner, cfg):
            continue
        value = _unparse(owner.attrs[attr][0])
        meaning = _base_meaning(attr, owner.attrs[attr][0])
        bases, calls = _kernel_bases(h, cls)
        origin = f"the default on {owner.name} ({owner.path}:{owner.attrs[attr][1]})"
        if meaning is not None and len(bases) == 1 and meaning in bases:
            continue  # the default agrees with every kernel the class calls
        if meaning is not None and len(bases) == 1:
            (kernel,) = bases
            shown = ", ".join(sorted({f"{c.name}() (line {c.line}, {'/'.join(c.records)})"
                                      for c in calls})[:3])
            yield Finding(
                Code.AC002, cls.name,
                f"{cls.name} sets {own[0]} = True and inherits {attr} = {value} (base {meaning}) "
                f"from {origin}, but the kernels it calls return base {kernel}: {shown}",
                severity=Severity.ERROR,
                hint=f"set {attr} = {_attr_literal(attr, kernel)} on {cls.name} itself",
                field=attr, found=value, allowed=_attr_literal(attr, kernel), location=where)
            continue
        why = ("the kernels it calls return different bases (" + ", ".join(sorted(bases)) + ")"
               if bases else "no kernel call of a known producer record tells its base")
        yield Finding(
            Code.AC002, cls.name,
            f"{cls.name} sets {own[0]} = True but {attr} = {value} comes only from {origin}, "
            f"which returns no LSE itself; {why}", severity=Severity.WARNING,
            hint=f"set {attr} on {cls.name} itself (FlashInfer kernels return base-2 LSE: False)",
            field=attr, found=value, allowed=f"{attr} set on {cls.name}", location=where)


def _attr_literal(attr: str, base: str) -> str:
    return ("True" if base == "e" else "False") if attr.endswith("_on_e") else repr(base)


# --- calls, dict records, asserts: AC001, AC003, AC004, AC009, AC011 -------------------------------
def _func_name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _dict_get(d: ast.Dict, key: str) -> ast.expr | None:
    for k, v in zip(d.keys, d.values, strict=True):
        if isinstance(k, ast.Constant) and k.value == key:
            return v
    return None


def _dict_keys(d: ast.Dict) -> set[str]:
    return {k.value for k in d.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}


def could_fire(text: str, cfg: LintConfig) -> bool:
    """Whether any of :func:`tree_findings`' rules can fire on a file: each needs a name in its
    text (a combine function, ``LseSpec``, a ``"returns"`` key, a capability), so a file without
    one is skipped without walking its tree."""
    return any(n in text for n in (*cfg.combine_functions, "LseSpec", "returns",
                                   *cfg.capabilities))


def _dispatched_calls(tree: ast.Module) -> set[int]:
    """Calls inside either branch of an ``if`` on the base (``if impl.lse_base_on_e: f(...,
    is_lse_base_on_e=True) else: f(..., is_lse_base_on_e=False)``): their literal is the dispatch
    on the backend's own flag, not a base hard-coded at the call."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.IfExp)) and "base" in _unparse(node.test, 1000).lower():
            branches = [node.body, node.orelse] if isinstance(node, ast.IfExp) else [
                *node.body, *node.orelse]
            for part in branches:
                inside |= {id(n) for n in ast.walk(part) if isinstance(n, ast.Call)}
    return inside


def tree_findings(tree: ast.Module, path: str, cfg: LintConfig) -> Iterator[Finding]:
    caps = cfg.capabilities
    dispatched: set[int] | None = None
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for f in _call(node, path, cfg, caps):
                if f.code == Code.AC003:  # the walk for dispatches only where a literal is
                    dispatched = _dispatched_calls(tree) if dispatched is None else dispatched
                    if id(node) in dispatched:
                        continue
                yield f
        elif isinstance(node, ast.Dict):
            yield from _lse_dict(node, path)
        elif isinstance(node, ast.Assert):
            names = _capabilities_in(node.test, caps)
            if names:
                yield Finding(Code.AC011, "assert", f"assert checks capability "
                              f"{', '.join(sorted(names))}; asserts vanish under python -O",
                              severity=Severity.WARNING,
                    hint="raise an exception (or use attn_contracts.validate_startup)",
                              field="assert", found=_unparse(node.test), allowed="an if/raise check",
                              location=_at(path, node.lineno, node.col_offset))


def _call(node: ast.Call, path: str, cfg: LintConfig, caps: frozenset[str]) -> Iterator[Finding]:
    name = _func_name(node.func)
    where = _at(path, node.lineno, node.col_offset)
    if name in cfg.combine_functions:
        for kw in node.keywords:
            if kw.arg in cfg.base_keywords and isinstance(kw.value, ast.Constant):
                yield Finding(
                    Code.AC003, name, f"{name}({kw.arg}={kw.value.value!r}) passes a literal LSE "
                    "base; it must come from the backend's record or class",
                    severity=Severity.WARNING,
                    hint=f"pass {kw.arg}=<backend>.lse_base_on_e or plan from the record",
                    field=kw.arg, found=kw.value.value, allowed="an expression read from the backend",
                    location=_at(path, kw.value.lineno, kw.value.col_offset))
        record_arg = node.args[0] if node.args else next(
            (k.value for k in node.keywords if k.arg == "record"), None)
        if name == "plan_combine" and isinstance(record_arg, ast.Dict):
            yield Finding(Code.AC003, name, "plan_combine gets an inline record literal; its base "
                          "is then hard-coded at the call", severity=Severity.WARNING,
                    hint="pass a registered record or its name",
                          field="record", found="dict literal", allowed="a CapabilityRecord or record name",
                              location=where)
    if name == "getattr" and len(node.args) == 3:
        attr = node.args[1]
        if isinstance(attr, ast.Constant) and attr.value in caps:
            yield Finding(
                Code.AC009, attr.value, f"getattr(..., {attr.value!r}, "
                f"{_unparse(node.args[2])}): a missing or misspelt capability silently "
                "becomes the default", severity=Severity.WARNING,
                    hint=f"read it as an attribute (obj.{attr.value}) so a missing "
                "declaration fails", field=attr.value, found=_unparse(node.args[2]), allowed="no default",
                    location=where)
    if name == "LseSpec" and not any(k.arg in ("base", None) for k in node.keywords):
        yield Finding(Code.AC001, "LseSpec", 'LseSpec(...) without base= (allowed: "e", "2")',
                      hint="declare the kernel's LSE base", field="base", found=None, allowed='"e", "2"',
                          location=where)


def _lse_dict(node: ast.Dict, path: str) -> Iterator[Finding]:
    """Record data written as Python dicts: ``{"returns": "lse", ...}`` needs a base."""
    returns = _dict_get(node, "returns")
    if not isinstance(returns, ast.Constant):
        return
    keys = _dict_keys(node)
    where = _at(path, node.lineno, node.col_offset)
    if returns.value == "lse" and "layout" in keys and "base" not in keys:
        yield Finding(Code.AC001, "lse", 'an LSE declaration {"returns": "lse", ...} without '
                      '"base" (allowed: "e", "2")', hint="declare the kernel's LSE base", field="base",
                          found=None,
                      allowed='"e", "2"', location=where)
    details = sorted(keys & set(_LSE_DETAILS))
    if returns.value == "none" and details:
        yield Finding(Code.AC004, "lse", f'{{"returns": "none"}} with LSE details '
                      f"{', '.join(details)}", hint='remove them, or declare "returns": "lse"',
                      field="lse", found=details, allowed="no LSE details", location=where)


def _capabilities_in(expr: ast.expr, caps: frozenset[str]) -> set[str]:
    found = set()
    for sub in ast.walk(expr):
        if isinstance(sub, ast.Attribute) and sub.attr in caps:
            found.add(sub.attr)
        elif isinstance(sub, ast.Name) and sub.id in caps:
            found.add(sub.id)
        elif isinstance(sub, ast.Constant) and isinstance(sub.value, str) and sub.value in caps:
            found.add(sub.value)
    return found
