"""The lint rules: pure functions from syntax trees (and the class hierarchy) to findings.

Every finding carries ``location = "path:line:col"``; the subject is the class or call it is
about. Messages name the value found and what is allowed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from attn_contracts.findings import Code
from attn_contracts.findings import Finding
from attn_contracts.findings import Location
from attn_contracts.lint.config import LintConfig

__all__ = ["could_fire", "tree_findings"]

_LSE_DETAILS = ("base", "layout", "q_len_axis", "padded_heads", "dtype", "empty_row",
                "includes_sink")


def _at(path: str, line: int, col: int) -> Location:
    return Location(path, line, col + 1)


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
    if "LseSpec" in text or '"returns"' in text or "'returns'" in text:
        return True  # AC001/AC004 on record data written in Python
    if any(f"{n}(" in text for n in cfg.combine_functions):
        return True  # AC003 at a legacy ``combine-functions`` call
    # AC009 / AC011: a capability read through getattr or asserted
    return ("getattr(" in text or "assert" in text) and any(n in text for n in cfg.capabilities)


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
                    hint=f"pass {kw.arg}=<backend>.lse_base_on_e or plan from the record",
                    field=kw.arg, found=kw.value.value, allowed="an expression read from the backend",
                    location=where)  # at the call, as the flow reports a base written in it
        record_arg = node.args[0] if node.args else next(
            (k.value for k in node.keywords if k.arg == "record"), None)
        if name == "plan_combine" and isinstance(record_arg, ast.Dict):
            yield Finding(Code.AC003, name, "plan_combine gets an inline record literal; its base "
                          "is then hard-coded at the call",
                    hint="pass a registered record or its name",
                          field="record", found="dict literal", allowed="a CapabilityRecord or record name",
                              location=where)
    if name == "getattr" and len(node.args) == 3:
        attr = node.args[1]
        if isinstance(attr, ast.Constant) and attr.value in caps:
            yield Finding(
                Code.AC009, attr.value, f"getattr(..., {attr.value!r}, "
                f"{_unparse(node.args[2])}): a missing or misspelt capability silently "
                "becomes the default",
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
