"""Which inference library could resolve names, attributes and calls for ``attn-contracts lint``
(issue 27, item 3): astroid (pylint's inference), jedi, and Pysa (pyre-check's taint analysis, with
Pyrefly as its type front end), measured on the released vLLM 0.33.0 and SGLang 0.5.23 sources for
the six questions the linter must answer statically, and for speed and memory on the whole ``vllm``
package, beside the project's own linter.

    python bench/lint_inference.py                       # every tool, every measurement
    python bench/lint_inference.py --tools astroid,jedi  # a subset
    python bench/lint_inference.py --pysa-cpu-budget 1800 --output bench/results/lint-inference.md
    python bench/lint_inference.py --items --output bench/results/lint-inference.md  # issue 37 item 7

``--items`` asks four more questions of vLLM 0.34.0 (argument binding, dataclass fields, properties
and ``__init__`` attributes, call summaries through recursion) of our linter, astroid, jedi and
Pyrefly: see ``ITEMS`` below for the sites.

The tools are benchmark dependencies only (``pip install -e '.[bench-inference]'``). Each
measurement runs in a child process of its own, so its CPU seconds and peak RSS are its own:
``python`` children report ``resource.getrusage(RUSAGE_SELF)``; external programs (``attn-contracts
lint``, ``pyre analyze`` and the ``pyrefly`` it starts) are measured by ``os.wait4`` over their
process group. Nothing is imported from or executed in the engines' trees: astroid and jedi parse,
Pyrefly and Pysa analyse. The cases, with the release lines they name:

A  MRO across files: where ``FlashInferImpl`` (v1/attention/backends/flashinfer.py) gets
   ``lse_base_on_e`` (``AttentionImplBase``, v1/attention/backend.py:820), and every subclass of
   ``MLAAttentionImpl`` (transitively).
B  Plumbing through a constructed object: ``self.dcp_manager.combine(attn_out, lse, ...)``
   (model_executor/layers/attention/mla_attention.py:1155) is a ``functools.partial`` built in
   ``MLADCPManager._init_combine`` (v1/attention/ops/dcp.py:1499-1537) over a conditional of three
   combines, or of a method that calls ``dcp_a2a_lse_reduce``; and the value that reaches its
   ``is_lse_base_on_e`` (``self.impl.lse_base_on_e`` at mla_attention.py:712, or ``True`` when the
   caller's keyword is changed to that literal, in memory).
C  A partial kept on self: ``self.dcp_combine(...)`` in ``FlashInferImpl.forward`` (flashinfer.py:2629)
   bound at 2121-2123 with ``is_lse_base_on_e=False``.
D  Dispatch over a hierarchy: ``self.impl.forward_mqa(...)`` (mla_attention.py:1134): every
   ``forward_mqa`` an ``MLAAttentionImpl`` subclass can run.
E  SGLang's chunked-prefix prefill: ``self.attn_mha(...)`` (srt/models/deepseek_common/
   attention_forward_methods/forward_mha.py:566) whose LSE ``merge_state`` merges: the layer's
   forward, then the server's backend (``get_attn_backend().forward`` in srt/layers/radix_attention.py)
   and every backend's ``forward_extend``.
F  An LSE written into an out buffer: ``decode_wrapper.run(..., out=output_tmp, lse=lse, ...)``
   (flashinfer.py:2617-2628) and ``lse`` passed on at 2631: the same value, and the callee resolved
   to FlashInfer's ``BatchDecodeWithPagedKVCacheWrapper.run``.

The expected answers come from an independent reference: a by-name pass of the standard ``ast``
over the trees (class bases, methods, assignments), checked by hand against the lines above.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))  # _timing, also under PYTHONSAFEPATH=1
from _timing import now_s

REPO = Path(__file__).resolve().parents[1]
FIXTURE = Path(__file__).resolve().parent / "lint_inference"  # holds the package ``lsefix``
STUBS = FIXTURE / "stubs"  # our own stand-in for FlashInfer's two entry points, for Pysa only
#: the slim release copies bench/_releases.py keeps (``ATTN_CONTRACTS_RELEASES`` moves them)
RELEASES = Path(os.environ.get("ATTN_CONTRACTS_RELEASES",
                               Path.home() / ".cache/attn-contracts/releases"))
VLLM_ROOT = RELEASES / "vllm-0.33.0"
SGLANG_ROOT = RELEASES / "sglang-0.5.23"
FLASHINFER_ROOT = RELEASES / "flashinfer-python-0.7.2.post1"
TOOLS = ("lint", "parse", "astroid", "jedi", "pysa", "pyrefly")  # parse: the ast/parso floor

# file paths inside the trees, and the lines the cases name (checked at start-up: a moved line
# fails loudly instead of measuring the wrong call)
MLA = "vllm/model_executor/layers/attention/mla_attention.py"
FLASHINFER = "vllm/v1/attention/backends/flashinfer.py"
BACKEND = "vllm/v1/attention/backend.py"
DCP = "vllm/v1/attention/ops/dcp.py"
FORWARD_MHA = "sglang/srt/models/deepseek_common/attention_forward_methods/forward_mha.py"
RADIX = "sglang/srt/layers/radix_attention.py"
SGL_BASE = "sglang/srt/layers/attention/base_attn_backend.py"
MLA_BASE_LINE = 712  # MLADCPManager(..., is_lse_base_on_e=self.impl.lse_base_on_e)
LINES = {
    (VLLM_ROOT, BACKEND, 820): "lse_base_on_e: bool = True",
    (VLLM_ROOT, MLA, MLA_BASE_LINE): "is_lse_base_on_e=self.impl.lse_base_on_e,",
    (VLLM_ROOT, MLA, 1134): "self.impl.forward_mqa(",
    (VLLM_ROOT, MLA, 1155): "self.dcp_manager.combine(",
    (VLLM_ROOT, FLASHINFER, 2617): "decode_wrapper.run(",
    (VLLM_ROOT, FLASHINFER, 2624): "lse=lse,",
    (VLLM_ROOT, FLASHINFER, 2629): "self.dcp_combine(",
    (VLLM_ROOT, FLASHINFER, 2631): "lse,",
    (SGLANG_ROOT, FORWARD_MHA, 566): "self.attn_mha(",
    (SGLANG_ROOT, RADIX, 183): "get_attn_backend().forward(",
}
# the calls of interest over the whole package: the combines, the producers the catalog names, and
# the attribute calls the cases go through
CALLS_OF_INTEREST = frozenset({
    "cp_lse_ag_out_rs", "cp_lse_ag_out_ar", "dcp_a2a_lse_reduce", "correct_attn_out",
    "merge_attn_states", "combine", "dcp_combine", "_dcp_combine", "forward_mqa", "run",
    "trtllm_batch_decode_with_kv_cache_mla", "flash_attn_varlen_func", "flash_mla_with_kvcache"})
B_COMBINES = frozenset({"dcp_a2a_lse_reduce", "cp_lse_ag_out_ar", "cp_lse_ag_out_rs",
                        "_direct_workspace_combine"})
C_COMBINES = frozenset({"dcp_a2a_lse_reduce", "cp_lse_ag_out_rs"})
PER_INFER_LIMIT_S = 10  # one astroid inference that runs longer is cut off and counted


# --- results -------------------------------------------------------------------------------------
@dataclass
class CaseResult:
    tool: str
    case: str
    verdict: str  # right | partial | wrong | none
    answer: str
    api: str
    cpu_s: float
    wrong: str = ""


@dataclass
class CostResult:
    tool: str
    what: str
    files: int
    lines: int
    cpu_s: float
    wall_s: float
    peak_rss_mib: float
    note: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def lines_per_cpu_s(self) -> float:
        return self.lines / self.cpu_s if self.cpu_s else 0.0


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


@contextlib.contextmanager
def _time_limit(seconds: int) -> Iterator[None]:
    def _raise(signum: int, frame: object) -> None:
        raise TimeoutError(f"over {seconds} s")

    old = signal.signal(signal.SIGALRM, _raise)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _verdict(found: set[str], expected: set[str]) -> str:
    if not found:
        return "none"
    if found == expected:
        return "right"
    if found & expected and not found - expected:
        return "partial"
    return "wrong" if not found & expected else "partial"


def _py_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if p.is_file())


def _tree_size(root: Path) -> tuple[int, int]:
    files = _py_files(root)
    lines = sum(p.read_bytes().count(b"\n") for p in files)
    return len(files), lines


def _modname(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _check_lines() -> None:
    for (root, rel, line), text in LINES.items():
        got = (root / rel).read_text().splitlines()[line - 1]
        if text not in got:
            raise SystemExit(f"{root / rel}:{line} reads {got.strip()!r}, expected {text!r}: "
                             "the release is not the one these cases cite")


def _col(root: Path, rel: str, line: int, needle: str) -> int:
    """0-based column of ``needle`` on a line (of its last dotted part when it has dots)."""
    text = (root / rel).read_text().splitlines()[line - 1]
    return text.index(needle) + (needle.rindex(".") + 1 if "." in needle else 0)


# --- the reference: a by-name pass of the standard ast ------------------------------------------
@dataclass
class _Cls:
    name: str
    where: str  # rel:line
    bases: list[str]
    methods: set[str]


def _classes(root: Path, package: str) -> dict[str, list[_Cls]]:
    out: dict[str, list[_Cls]] = {}
    for path in _py_files(root / package):
        rel = str(path.relative_to(root))
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.ClassDef):
                bases = []
                for b in node.bases:
                    b = b.value if isinstance(b, ast.Subscript) else b
                    if isinstance(b, ast.Name):
                        bases.append(b.id)
                    elif isinstance(b, ast.Attribute):
                        bases.append(b.attr)
                methods = {s.name for s in node.body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)}
                out.setdefault(node.name, []).append(_Cls(node.name, f"{rel}:{node.lineno}", bases, methods))
    return out


def _subclasses(classes: dict[str, list[_Cls]], base: str) -> dict[str, str]:
    """Every class that has ``base`` among its ancestors (by name), with where it is defined."""
    found: dict[str, str] = {}
    frontier = {base}
    while frontier:
        nxt = set()
        for name, defs in classes.items():
            for c in defs:
                if name not in found and name != base and frontier & set(c.bases):
                    found[name] = c.where
                    nxt.add(name)
        frontier = nxt
    return found


def _overrides(classes: dict[str, list[_Cls]], base: str, method: str) -> set[str]:
    """``Class.method`` for every class of ``base``'s hierarchy (itself included) defining it."""
    names = {base, *_subclasses(classes, base)}
    return {f"{n}.{method}" for n in names for c in classes.get(n, []) if method in c.methods}


def reference() -> dict[str, Any]:
    vllm = _classes(VLLM_ROOT, "vllm")
    sgl = _classes(SGLANG_ROOT, "sglang")
    mla_subs = _subclasses(vllm, "MLAAttentionImpl")
    return {
        "A_attr": f"AttentionImplBase @ {BACKEND}:820 = True",
        "A_subclasses": sorted(mla_subs),
        "B_targets": sorted(B_COMBINES),
        "B_base": "self.impl.lse_base_on_e (mla_attention.py:712); True under the literal mutation",
        "C_targets": sorted(C_COMBINES),
        "D_impls": sorted(_overrides(vllm, "MLAAttentionImpl", "forward_mqa")),
        "E_layer": "RadixAttention.forward",
        "E_backends": sorted(_overrides(sgl, "AttentionBackend", "forward_extend")),
        "F": f"lse bound at {FLASHINFER}:2612, written by BatchDecodeWithPagedKVCacheWrapper.run",
    }


# --- astroid -------------------------------------------------------------------------------------
def _astroid_setup() -> Any:
    import astroid  # noqa: F401  (bench-only dependency)
    from astroid import MANAGER

    for root in (VLLM_ROOT, SGLANG_ROOT, FLASHINFER_ROOT):
        if str(root) not in sys.path:
            sys.path.insert(0, str(root))
    MANAGER.always_load_extensions = False  # parse only: never import a compiled module
    return MANAGER


def _astroid_call(module: Any, line: int, attr: str) -> Any:
    from astroid import nodes

    for call in module.nodes_of_class(nodes.Call):
        f = call.func
        name = f.attrname if isinstance(f, nodes.Attribute) else getattr(f, "name", None)
        if call.lineno == line and name == attr:
            return call
    raise LookupError(f"no call of {attr} at line {line} of {module.file}")


def _astroid_desc(v: Any) -> tuple[str, str]:
    """(the callee's name for comparing, a description) of one inferred value."""
    from astroid import bases
    from astroid import objects
    from astroid import util

    if isinstance(v, util.UninferableBase):
        return "", "Uninferable"
    if isinstance(v, objects.PartialFunction):
        kws = {k: x.as_string() for k, x in v.filled_keywords.items()}
        return v.name, f"partial({v.name} (def line {v.lineno}), {kws})"
    if isinstance(v, bases.BoundMethod | bases.UnboundMethod) or v.__class__.__name__ == "FunctionDef":
        return v.name, f"{v.qname()}"
    if isinstance(v, bases.Instance):
        return "", f"instance of {v.qname()}"
    return getattr(v, "name", ""), f"{type(v).__name__} {getattr(v, 'qname', lambda: '')()}"


def _astroid_infer(node: Any) -> list[Any]:
    try:
        with _time_limit(PER_INFER_LIMIT_S):
            return list(node.infer())
    except Exception as e:  # astroid raises many kinds; the benchmark records, never stops
        return [e]


def astroid_cases(ref: dict[str, Any]) -> dict[str, Any]:
    from astroid import nodes
    from astroid import objects
    from astroid import util

    t0 = _cpu()
    manager = _astroid_setup()
    results: list[CaseResult] = []

    def module(root: Path, rel: str) -> Any:
        return manager.ast_from_file(str(root / rel), _modname(root, root / rel))

    # A
    t = _cpu()
    fi = module(VLLM_ROOT, FLASHINFER)
    cls = fi["FlashInferImpl"]
    defs = cls.getattr("lse_base_on_e")
    vals = [getattr(v, "value", v) for v in cls.igetattr("lse_base_on_e")]
    where = [f"{d.frame().name} @{Path(d.root().file).relative_to(VLLM_ROOT)}:{d.lineno}" for d in defs]
    ok = where == [f"AttentionImplBase @{BACKEND}:820"] and vals == [True]
    mro = [c.name for c in cls.mro()]
    results.append(CaseResult(
        "astroid", "A attribute", "right" if ok else "wrong", f"{where} = {vals}; MRO {mro}",
        "ClassDef.getattr / igetattr / mro()", _cpu() - t,
        "" if ok else "defining class or value differs"))
    results.append(CaseResult(
        "astroid", "A subclasses", "none", "no reverse index: a class knows its ancestors only",
        "ClassDef.ancestors() over every module (see the whole-package row)", 0.0,
        "needs every module built and every class's ancestors inferred"))

    # B
    t = _cpu()
    mla = module(VLLM_ROOT, MLA)
    got = _astroid_infer(_astroid_call(mla, 1155, "combine").func)
    names = {_astroid_desc(v)[0] for v in got if not isinstance(v, Exception)} - {""}
    descs = [_astroid_desc(v)[1] if not isinstance(v, Exception) else repr(v) for v in got]
    kw_values = []
    for v in got:
        if isinstance(v, objects.PartialFunction) and "is_lse_base_on_e" in v.filled_keywords:
            inferred = _astroid_infer(v.filled_keywords["is_lse_base_on_e"])
            kw_values.append("/".join(_astroid_desc(x)[1] if not isinstance(x, Exception)
                                      else repr(x) for x in inferred))
    results.append(CaseResult(
        "astroid", "B targets", _verdict(names, B_COMBINES), "; ".join(descs),
        "Attribute.infer() (instance attrs + brain_functools)", _cpu() - t,
        "functools.partial brain keeps only the first value of its callee (next(infer())): "
        "a conditional's other two combines are dropped; the partial of a bound method "
        "is an opaque functools.partial instance" if names != B_COMBINES else ""))
    results.append(CaseResult(
        "astroid", "B base value", "none", f"keyword is the parameter name; inferred: {kw_values}",
        "PartialFunction.filled_keywords + infer()", 0.0,
        "no call-site context through the constructor: the parameter infers to Uninferable"))
    # B, with the caller's keyword changed to the literal True (in memory, the release untouched)
    t = _cpu()
    text = (VLLM_ROOT / MLA).read_text().splitlines(keepends=True)
    text[MLA_BASE_LINE - 1] = text[MLA_BASE_LINE - 1].replace("self.impl.lse_base_on_e", "True")
    manager.clear_cache()
    from astroid.builder import AstroidBuilder

    mutated = AstroidBuilder(manager).string_build("".join(text), _modname(VLLM_ROOT, VLLM_ROOT / MLA),
                                                   str(VLLM_ROOT / MLA))
    got = _astroid_infer(_astroid_call(mutated, 1155, "combine").func)
    lit = []
    for v in got:
        if isinstance(v, objects.PartialFunction) and "is_lse_base_on_e" in v.filled_keywords:
            kw = v.filled_keywords["is_lse_base_on_e"]
            lit += [getattr(x, "value", repr(x)) for x in _astroid_infer(kw)]
    results.append(CaseResult(
        "astroid", "B literal True", "right" if True in lit else "none", f"inferred keyword: {lit}",
        "same, on a mutated in-memory module", _cpu() - t,
        "" if True in lit else "the literal at the constructor call never reaches the partial"))

    # C
    t = _cpu()
    fi = module(VLLM_ROOT, FLASHINFER)
    got = _astroid_infer(_astroid_call(fi, 2629, "dcp_combine").func)
    names = {_astroid_desc(v)[0] for v in got if not isinstance(v, Exception)} - {""}
    bound = {(v.name, v.filled_keywords["is_lse_base_on_e"].as_string()) for v in got
             if isinstance(v, objects.PartialFunction) and "is_lse_base_on_e" in v.filled_keywords}
    ok = names == C_COMBINES and {b for _, b in bound} == {"False"}
    results.append(CaseResult(
        "astroid", "C partial on self", "right" if ok else _verdict(names, C_COMBINES),
        "; ".join(_astroid_desc(v)[1] for v in got if not isinstance(v, Exception)),
        "Attribute.infer() -> PartialFunction.filled_keywords", _cpu() - t))

    # D
    t = _cpu()
    got = _astroid_infer(_astroid_call(mla, 1134, "forward_mqa").func)
    names = {_astroid_desc(v)[1] for v in got if not isinstance(v, Exception)}
    impl = [_astroid_desc(v)[1] for v in _astroid_infer(_astroid_call(mla, 1134, "forward_mqa").func.expr)
            if not isinstance(v, Exception)]
    results.append(CaseResult(
        "astroid", "D dispatch", "none" if names <= {"Uninferable"} else "partial",
        f"forward_mqa: {sorted(names)}; self.impl: {impl}", "Attribute.infer()", _cpu() - t,
        "annotations and typing.cast's type are not used; the backend's get_impl_cls() is "
        "abstract, so self.impl is Uninferable; no dispatch to overrides"))

    # E
    t = _cpu()
    fm = module(SGLANG_ROOT, FORWARD_MHA)
    layer = [_astroid_desc(v)[1] if not isinstance(v, Exception) else type(v).__name__
             for v in _astroid_infer(_astroid_call(fm, 566, "attn_mha").func)]
    radix = module(SGLANG_ROOT, RADIX)
    backend = [_astroid_desc(v)[1] for v in _astroid_infer(_astroid_call(radix, 183, "forward").func)
               if not isinstance(v, Exception)]
    found_layer = any("RadixAttention" in d for d in layer)
    results.append(CaseResult(
        "astroid", "E engine dispatch", "partial" if found_layer or backend != ["Uninferable"] else "none",
        f"self.attn_mha: {layer}; get_attn_backend().forward: {backend}", "Attribute.infer()",
        _cpu() - t,
        "self is a mixin (the `self: DeepseekV2AttentionMLA` annotation is ignored); the backend "
        "comes from a dataclass field with no value: no subclass is reached"))

    # F
    t = _cpu()
    fwd = fi["FlashInferImpl"]["forward"]
    names_at = [n for n in fwd.nodes_of_class(nodes.Name) if n.name == "lse" and n.lineno in (2624, 2631)]
    binds = {(n.lineno, tuple(a.lineno for a in n.lookup("lse")[1])) for n in names_at}
    same = len({b for _, b in binds}) == 1 and len(binds) == 2
    run = [_astroid_desc(v)[1] for v in _astroid_infer(_astroid_call(fi, 2617, "run").func)
           if not isinstance(v, Exception)]
    resolved = any("BatchDecodeWithPagedKVCacheWrapper.run" in r for r in run)
    results.append(CaseResult(
        "astroid", "F out buffer", "right" if same and resolved else "partial" if same else "none",
        f"bindings {sorted(binds)}; decode_wrapper.run: {run}", "Name.lookup() + Attribute.infer()",
        _cpu() - t,
        "" if resolved else "the same binding is found (def-use), but the callee (a dataclass "
        "field's annotated type) is not resolved; nothing models 'run writes its lse= argument'"))
    _ = util
    return {"cases": [asdict(r) for r in results], "cpu_s": _cpu() - t0, "peak_rss_mib": _rss_mib()}


def astroid_whole(ref: dict[str, Any]) -> dict[str, Any]:
    from astroid import nodes

    manager = _astroid_setup()
    files = _py_files(VLLM_ROOT / "vllm")
    lines = sum(p.read_bytes().count(b"\n") for p in files)
    t0, w0 = _cpu(), now_s()
    modules, failed = [], 0
    for path in files:
        try:
            modules.append(manager.ast_from_file(str(path), _modname(VLLM_ROOT, path)))
        except Exception:  # a module astroid cannot build is counted, not fatal
            failed += 1
    build_cpu, build_wall, build_rss = _cpu() - t0, now_s() - w0, _rss_mib()
    # the calls of interest, inferred
    t1 = _cpu()
    calls = inferred = uninferable = timeouts = 0
    for m in modules:
        for call in m.nodes_of_class(nodes.Call):
            f = call.func
            name = f.attrname if isinstance(f, nodes.Attribute) else getattr(f, "name", None)
            if name not in CALLS_OF_INTEREST:
                continue
            calls += 1
            got = _astroid_infer(f)
            if any(isinstance(v, TimeoutError) for v in got):
                timeouts += 1
            elif any(_astroid_desc(v)[0] for v in got if not isinstance(v, Exception)):
                inferred += 1
            else:
                uninferable += 1
    calls_cpu = _cpu() - t1
    # case A's second half: every subclass of MLAAttentionImpl, by ancestors()
    t2 = _cpu()
    target = "vllm.v1.attention.backend.MLAAttentionImpl"
    subs, bad = set(), 0
    for m in modules:
        for cls in m.nodes_of_class(nodes.ClassDef):
            try:
                with _time_limit(PER_INFER_LIMIT_S):
                    if any(a.qname() == target for a in cls.ancestors()):
                        subs.add(cls.name)
            except Exception:
                bad += 1
    subs_cpu = _cpu() - t2
    expected = set(ref["A_subclasses"])
    return {
        "files": len(files), "lines": lines, "failed": failed,
        "build_cpu_s": build_cpu, "build_wall_s": build_wall, "build_rss_mib": build_rss,
        "calls": calls, "inferred": inferred, "uninferable": uninferable, "timeouts": timeouts,
        "calls_cpu_s": calls_cpu, "subclasses_cpu_s": subs_cpu, "subclass_errors": bad,
        "subclasses_found": len(subs & expected), "subclasses_expected": len(expected),
        "subclasses_extra": sorted(subs - expected), "subclasses_missed": sorted(expected - subs),
        "cpu_s": _cpu() - t0, "wall_s": now_s() - w0, "peak_rss_mib": _rss_mib(),
    }


# --- jedi ----------------------------------------------------------------------------------------
def _jedi_project(root: Path, extra: tuple[Path, ...] = ()) -> Any:
    import jedi  # bench-only dependency

    return jedi.Project(str(root), sys_path=[str(root), *map(str, extra)], smart_sys_path=False,
                        load_unsafe_extensions=False)


def _jedi_names(ns: list[Any]) -> list[str]:
    return [f"{n.type} {n.full_name} @{Path(str(n.module_path)).name if n.module_path else '?'}:{n.line}"
            for n in ns]


def jedi_cases(ref: dict[str, Any]) -> dict[str, Any]:
    import jedi

    t0 = _cpu()
    results: list[CaseResult] = []
    vproj = _jedi_project(VLLM_ROOT, (FLASHINFER_ROOT,))

    def script(root: Path, rel: str, proj: Any = vproj, code: str | None = None) -> Any:
        return jedi.Script(code=code, path=str(root / rel), project=proj)

    # A: the attribute through a probe snippet (a Script of our own text, never a file written)
    t = _cpu()
    probe = "from vllm.v1.attention.backends.flashinfer import FlashInferImpl\nFlashInferImpl.lse_base_on_e\n"
    s = jedi.Script(code=probe, path=str(VLLM_ROOT / "_probe.py"), project=vproj)
    g = s.goto(2, len("FlashInferImpl."), follow_imports=True)
    want = ("vllm.v1.attention.backend.AttentionImplBase.lse_base_on_e", 820)
    ok = [(n.full_name, n.line) for n in g] == [want]
    results.append(CaseResult("jedi", "A attribute", "right" if ok else "wrong", "; ".join(_jedi_names(g)),
                              "Script.goto(follow_imports=True) on a probe snippet", _cpu() - t,
                              "" if ok else "definition differs; value not given (infer says bool)"))
    # A: subclasses by repeated project-wide get_references on each class name, kept where the
    # reference sits in a class's bases
    t = _cpu()
    found: dict[str, str] = {}
    queue = [(BACKEND, 1034, "MLAAttentionImpl")]
    seen = set()
    while queue:
        rel, line, name = queue.pop()
        if name in seen:
            continue
        seen.add(name)
        s = script(VLLM_ROOT, rel)
        col = (VLLM_ROOT / rel).read_text().splitlines()[line - 1].index(name)
        for r in s.get_references(line, col, scope="project"):
            leaf = r._name.tree_name  # the public Name has no parent; its parso leaf does
            node = leaf
            while node is not None and node.type not in ("classdef", "funcdef", "file_input"):
                node = node.parent
            if (node is not None and node.type == "classdef" and node.name.value != name
                    and leaf.start_pos < node.children[-2].start_pos):
                sub_rel = str(Path(str(r.module_path)).relative_to(VLLM_ROOT))
                found[node.name.value] = f"{sub_rel}:{node.start_pos[0]}"
                queue.append((sub_rel, node.name.start_pos[0], node.name.value))
    expected = set(ref["A_subclasses"])
    results.append(CaseResult(
        "jedi", "A subclasses", _verdict(set(found), expected),
        f"{len(set(found) & expected)}/{len(expected)} found, extra {sorted(set(found) - expected)}, "
        f"missed {sorted(expected - set(found))}",
        "Script.get_references(scope='project') per class, transitively (+ parso parent walk)",
        _cpu() - t, "get_references is capped (jedi.inference.references: _OPENED_FILE_LIMIT 2000, "
        "_PARSED_FILE_LIMIT 30; vllm has 3,231 files), so a subclass can be silently missed; a "
        "reference's place in a class's bases needs the private parso leaf"))

    # B
    t = _cpu()
    col = _col(VLLM_ROOT, MLA, 1155, "dcp_manager.combine")
    s = script(VLLM_ROOT, MLA)
    inf, gt = s.infer(1155, col), s.goto(1155, col, follow_imports=True)
    results.append(CaseResult(
        "jedi", "B targets", "none", f"infer: {_jedi_names(inf)}; goto: {_jedi_names(gt)}",
        "Script.infer / goto", _cpu() - t,
        "infer returns the declared return type of _init_combine (the DCPCombine Protocol); "
        "no public API reaches the partial's function or keywords"))
    t = _cpu()
    text = (VLLM_ROOT / MLA).read_text().splitlines(keepends=True)
    text[MLA_BASE_LINE - 1] = text[MLA_BASE_LINE - 1].replace("self.impl.lse_base_on_e", "True")
    s = script(VLLM_ROOT, MLA, code="".join(text))
    inf = s.infer(1155, col)
    results.append(CaseResult(
        "jedi", "B base value", "none", f"mutated to True: infer {_jedi_names(inf)}",
        "Script(code=mutated).infer", _cpu() - t, "no value-flow API: keyword values are not followed"))

    # C
    t = _cpu()
    col = _col(FLASHINFER_ROOT if False else VLLM_ROOT, FLASHINFER, 2629, "self.dcp_combine")
    s = script(VLLM_ROOT, FLASHINFER)
    inf, gt = s.infer(2629, col), s.goto(2629, col)
    results.append(CaseResult(
        "jedi", "C partial on self", "partial",
        f"infer: {_jedi_names(inf)}; goto: {_jedi_names(gt)}", "Script.infer / goto", _cpu() - t,
        "infer says functools.partial (twice), goto gives both assignments (2121, 2123); the "
        "wrapped function and the bound keyword are only in jedi's private PartialObject"))

    # D
    t = _cpu()
    col = _col(VLLM_ROOT, MLA, 1134, "self.impl.forward_mqa")
    s = script(VLLM_ROOT, MLA)
    inf = s.infer(1134, col)
    results.append(CaseResult(
        "jedi", "D dispatch", "partial" if inf else "none", f"infer: {_jedi_names(inf)}",
        "Script.infer", _cpu() - t,
        f"the declared base method only (typing.cast is followed); none of the "
        f"{len(ref['D_impls'])} implementations"))

    # E
    t = _cpu()
    import site

    sproj = _jedi_project(SGLANG_ROOT, tuple(Path(p) for p in site.getsitepackages()))
    col = _col(SGLANG_ROOT, FORWARD_MHA, 566, "self.attn_mha")
    s = script(SGLANG_ROOT, FORWARD_MHA, sproj)
    inf = s.infer(566, col)
    col2 = _col(SGLANG_ROOT, RADIX, 183, "get_attn_backend().forward")
    inf2 = script(SGLANG_ROOT, RADIX, sproj).infer(183, col2)
    results.append(CaseResult(
        "jedi", "E engine dispatch", "partial" if inf or inf2 else "none",
        f"self.attn_mha: {_jedi_names(inf)}; get_attn_backend().forward: {_jedi_names(inf2)}",
        "Script.infer", _cpu() - t,
        "self is inferred as the mixin (the `self: DeepseekV2AttentionMLA` annotation is not used "
        "for self), so attn_mha is not found; the server's backend resolves to the base "
        f"AttentionBackend.forward only, none of the {len(ref['E_backends'])} forward_extend"))

    # F
    t = _cpu()
    s = script(VLLM_ROOT, FLASHINFER)
    a = s.goto(2624, _col(VLLM_ROOT, FLASHINFER, 2624, "lse=lse") + 4)
    b = s.goto(2631, _col(VLLM_ROOT, FLASHINFER, 2631, "lse"))
    run = s.infer(2617, _col(VLLM_ROOT, FLASHINFER, 2617, "decode_wrapper.run"))
    same = [(n.line, n.column) for n in a] == [(n.line, n.column) for n in b] and bool(a)
    resolved = any("BatchDecodeWithPagedKVCacheWrapper.run" in n.full_name for n in run if n.full_name)
    results.append(CaseResult(
        "jedi", "F out buffer", "right" if same and resolved else "partial" if same else "none",
        f"lse= at 2624 -> {_jedi_names(a)}; lse at 2631 -> {_jedi_names(b)}; run: {_jedi_names(run)}",
        "Script.goto on both names; Script.infer on run", _cpu() - t,
        "" if same and resolved else "def-use only"))
    return {"cases": [asdict(r) for r in results], "cpu_s": _cpu() - t0, "peak_rss_mib": _rss_mib()}


def jedi_whole(ref: dict[str, Any]) -> dict[str, Any]:
    import jedi

    proj = _jedi_project(VLLM_ROOT, (FLASHINFER_ROOT,))
    files = _py_files(VLLM_ROOT / "vllm")
    sites: dict[Path, list[tuple[int, int]]] = {}
    for path in files:
        for node in ast.walk(ast.parse(path.read_bytes())):
            if isinstance(node, ast.Call):
                f = node.func
                if isinstance(f, ast.Attribute) and f.attr in CALLS_OF_INTEREST:
                    sites.setdefault(path, []).append((f.end_lineno or f.lineno, (f.end_col_offset or 1) - 1))
                elif isinstance(f, ast.Name) and f.id in CALLS_OF_INTEREST:
                    sites.setdefault(path, []).append((f.lineno, f.col_offset))
    t0, w0 = _cpu(), now_s()
    n = resolved = 0
    for path, where in sites.items():
        s = jedi.Script(path=str(path), project=proj)
        for line, col in where:
            n += 1
            if s.infer(line, col) or s.goto(line, col):
                resolved += 1
    lines = sum(p.read_bytes().count(b"\n") for p in sites)
    return {"files": len(sites), "lines": lines, "calls": n, "resolved": resolved,
            "cpu_s": _cpu() - t0, "wall_s": now_s() - w0, "peak_rss_mib": _rss_mib()}


# --- external programs: the project's linter, Pyrefly, Pysa ---------------------------------------
def _run_measured(cmd: list[str], cwd: Path, cpu_budget_s: float | None = None,
                  env: dict[str, str] | None = None, log: Path | None = None) -> dict[str, Any]:
    """Run ``cmd`` in a process group; CPU and peak RSS of the whole group (children included, by
    ``wait4`` and a /proc walk for the budget). Over ``cpu_budget_s`` CPU seconds: killed."""
    w0 = now_s()
    out = open(log, "wb") if log else subprocess.DEVNULL  # noqa: SIM115  (closed below)
    proc = subprocess.Popen(cmd, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    killed = False
    group_cpu = 0.0
    group_rss = 0.0
    while True:
        pid, status, ru = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        cpu, rss = _group_usage(proc.pid)
        group_cpu, group_rss = max(group_cpu, cpu), max(group_rss, rss)
        if cpu_budget_s is not None and cpu > cpu_budget_s:
            os.killpg(proc.pid, signal.SIGKILL)
            killed = True
        time.sleep(1.0)
    if log:
        out.close()  # type: ignore[union-attr]
    return {"rc": os.waitstatus_to_exitcode(status), "killed": killed,
            "cpu_s": max(group_cpu, ru.ru_utime + ru.ru_stime),
            "wall_s": now_s() - w0,
            "peak_rss_mib": max(group_rss, ru.ru_maxrss / 1024)}


def _group_usage(pgid: int) -> tuple[float, float]:
    """CPU seconds (user+system, with reaped children) and the memory of a process group: the sum
    of each process's PSS (its share of pages it shares with others), so Pysa's shared-memory
    heap, mapped by every worker, counts once."""
    tick = os.sysconf("SC_CLK_TCK")
    cpu, rss = 0.0, 0.0
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            fields = stat[stat.rindex(")") + 2:].split()
            if int(fields[2]) != pgid:  # field 5 of stat: the process group
                continue
            cpu += sum(int(x) for x in fields[11:15]) / tick  # utime stime cutime cstime
            rss += _pss_mib(d)
        except (OSError, ValueError, IndexError):
            continue
    return cpu, rss


def _pss_mib(proc: Path) -> float:
    for line in (proc / "smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) / 1024
    return 0.0


def lint_whole(ref: dict[str, Any]) -> dict[str, Any]:
    files, lines = _tree_size(VLLM_ROOT / "vllm")
    exe = Path(sys.executable).with_name("attn-contracts")
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "lint.txt"
        r = _run_measured([str(exe), "lint", str(VLLM_ROOT / "vllm"), "--exit-zero", "-j", "2"],
                          REPO, log=log)
        findings = sum(1 for line in log.read_text().splitlines() if ": AC0" in line)
    return {"files": files, "lines": lines, "findings": findings, **r}


_PYSA_MODELS = r'''
ModelQuery(
  name = "lse_producers",
  find = "functions",
  where = [fully_qualified_name.matches("{producers}")],
  model = [Returns(TaintSource[LseProducer])]
)
ModelQuery(
  name = "combine_sinks",
  find = "functions",
  where = [fully_qualified_name.matches("{sinks}")],
  model = [
    NamedParameter(name="{lse_param}", taint=TaintSink[CombineLse]){base_sink}
  ]
)
{extra}
'''
_PYSA_CONFIG = {
    "sources": [{"name": "LseProducer"}, {"name": "LseOutBuffer"}, {"name": "DeclaredBase"}],
    "sinks": [{"name": "CombineLse"}, {"name": "CombineBase"}],
    "features": [],
    "rules": [
        {"name": "LSE reaches a combine", "code": 7001,
         "sources": ["LseProducer", "LseOutBuffer"], "sinks": ["CombineLse"],
         "message_format": "LSE from {$sources} reaches {$sinks}"},
        {"name": "Declared base reaches a combine's base", "code": 7002,
         "sources": ["DeclaredBase"], "sinks": ["CombineBase"],
         "message_format": "base from {$sources} reaches {$sinks}"},
    ],
}


@dataclass(frozen=True)
class _PysaTarget:
    name: str
    import_root: Path
    package: str
    search: tuple[Path, ...]
    producers: str
    sinks: str
    lse_param: str
    extra: str
    sites: dict[str, tuple[str, int]]  # case -> (file suffix, line) of a call whose targets we read
    override_base: str  # the method whose overrides case D (E for SGLang) needs
    f_define: str = ""  # the function of case F, where its LSE must be seen reaching a combine
    includes: str = ""  # the analysed files under import_root, when not the whole package
    base_sink: bool = True  # whether the combines take is_lse_base_on_e


_PYSA_FIXTURE = _PysaTarget(
    "fixture (bench/lint_inference/lsefix)", FIXTURE, "lsefix", (),
    r"^lsefix\.kernels\.decode_base_(e|2)$", r"^lsefix\.combine\.combine_(rs|ar|a2a)$", "lse",
    "def lsefix.kernels.Wrapper.run(self: TaintInTaintOut[Updates[lse]], q, out, lse, return_lse): ...\n"
    "lsefix.outbuf.OutBufImpl.wrapper: TaintSource[LseOutBuffer]\n"
    "lsefix.base.ImplBase.lse_base_on_e: TaintSource[DeclaredBase]\n"
    "lsefix.impls.Impl2.lse_base_on_e: TaintSource[DeclaredBase]\n",
    {"B partial built": ("manager.py", 25), "B partial of a method": ("manager.py", 21),
     "B call": ("layer.py", 21), "C call": ("outbuf.py", 24),
     "D call": ("layer.py", 20), "F run": ("outbuf.py", 23)},
    "lsefix.base.MLAImpl.forward_mqa", f_define="lsefix.outbuf.OutBufImpl.forward_direct")
_PYSA_VLLM = _PysaTarget(
    "vllm 0.33.0 (whole package)", VLLM_ROOT, "vllm", (STUBS,),
    r"(trtllm_batch_decode_with_kv_cache_mla|flash_mla_with_kvcache|flash_attn_varlen_func)$",
    r"^vllm\.v1\.attention\.ops\.dcp\.(cp_lse_ag_out_rs|cp_lse_ag_out_ar|dcp_a2a_lse_reduce)$",
    "cp_attn_lse",
    "def flashinfer.decode.BatchDecodeWithPagedKVCacheWrapper.run(self: TaintInTaintOut[Updates[lse]], "
    "q, paged_kv_cache, *args, q_scale, k_scale, v_scale, out, lse, return_lse, enable_pdl, "
    "window_left, sinks, q_len_per_req, skip_softmax_threshold_scale_factor, kv_cache_sf)"
    " -> TaintSource[LseProducer]: ...\n"
    "vllm.v1.attention.backends.flashinfer.FIDecode.wrapper: TaintSource[LseOutBuffer]\n"
    "vllm.v1.attention.backend.AttentionImplBase.lse_base_on_e: TaintSource[DeclaredBase]\n",
    {"B partial built": (DCP, 1533), "B partial of a method": (DCP, 1520), "B call": (MLA, 1155),
     "C call": (FLASHINFER, 2629),
     "D call": (MLA, 1134), "F run": (FLASHINFER, 2617)},
    "vllm.v1.attention.backend.MLAAttentionImpl.forward_mqa",
    f_define="vllm.v1.attention.backends.flashinfer.FlashInferImpl.forward")


_PYSA_SGLANG = _PysaTarget(
    "sglang 0.5.23 (srt)", SGLANG_ROOT, "sglang", (),
    r"^sglang\.srt\..*Backend\.forward_extend$",
    r"^sglang\.srt\.layers\.attention\.merge_state\.merge_state$",
    "prefix_lse", "", {"E call": (FORWARD_MHA, 566), "E backend": (RADIX, 183)},
    "sglang.srt.layers.attention.base_attn_backend.AttentionBackend.forward_extend",
    includes="sglang/srt/**/*.py", base_sink=False)


def _pysa_project(target: _PysaTarget, where: Path) -> None:
    models = where / "models"
    models.mkdir(parents=True)
    (models / "taint.config").write_text(json.dumps(_PYSA_CONFIG, indent=1))
    base_sink = (',\n    NamedParameter(name="is_lse_base_on_e", taint=TaintSink[CombineBase])'
                 if target.base_sink else "")
    (models / "lse.pysa").write_text(_PYSA_MODELS.format(
        producers=target.producers, sinks=target.sinks, lse_param=target.lse_param, extra=target.extra,
        base_sink=base_sink))
    venv_lib = Path(sys.executable).parents[1] / "lib" / "pyre_check" / "typeshed"
    (where / ".pyre_configuration").write_text(json.dumps({
        "source_directories": [{"import_root": str(target.import_root), "source": target.package}],
        "search_path": [str(p) for p in target.search],
        "taint_models_path": [str(models)],
        "typeshed": str(venv_lib),
        "site_package_search_strategy": "none",
        "workers": 2,
    }, indent=1))
    # Pysa's default front end is Pyrefly, which reads its own configuration, not the one above
    includes = json.dumps([str(target.import_root / (target.includes or f"{target.package}/**/*.py"))])
    search = json.dumps([str(target.import_root), *map(str, target.search)])
    # skip-interpreter-query: without it Pyrefly adds this venv's site-packages (torch) and Pysa
    # analyses torch as well; the engines' imports of torch are then unresolved (Any), as in lint
    (where / "pyrefly.toml").write_text(
        f"project-includes = {includes}\nsearch-path = {search}\nsite-package-path = []\n"
        "skip-interpreter-query = true\n")


def _pysa_call_targets(out: Path, target: _PysaTarget) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    with (out / "call-graph.json").open() as fh:
        for raw in fh:
            data = json.loads(raw).get("data") or {}
            path = data.get("path", "")
            for case, (suffix, line) in target.sites.items():
                if not path.endswith(suffix):
                    continue
                for loc, v in data.get("calls", {}).items():
                    if int(loc.split(":")[0]) != line or "|" in loc:
                        continue  # "|": an identifier or an artificial call (tuple unpacking...)
                    call = v.get("call") or {}
                    tg = [c["target"] for c in call.get("calls", [])]
                    tg += [f"shim:{c['target']}" for c in (call.get("shim") or {}).get("calls", [])]
                    tg += [f"init:{c['target']}" for c in call.get("init_calls", [])
                           if "object.__init__" not in c["target"]]
                    tg += [f"unresolved:{u}" for u in call.get("unresolved", [])]
                    if tg:
                        found.setdefault(case, []).extend(f"[{loc}] {t}" for t in tg)
    return found


def _pysa_overrides(out: Path, method: str) -> list[str]:
    """Every override of ``method`` (a qualified name), transitively, from override-graph.json."""
    graph: dict[str, list[str]] = {}
    with (out / "override-graph.json").open() as fh:
        for raw in fh:
            data = json.loads(raw).get("data") or {}
            if "callable" in data:
                graph[data["callable"]] = list(data.get("overrides", []))
    found, todo = set(), [method]
    while todo:
        for sub in graph.get(todo.pop(), []):
            if sub not in found:
                found.add(sub)
                todo.append(sub)
    return sorted(found)


def pysa_run(target: _PysaTarget, cpu_budget_s: float) -> dict[str, Any]:
    pyre = Path(sys.executable).with_name("pyre")
    files, lines = _tree_size(target.import_root / (target.includes.split("/**")[0] or target.package))
    with tempfile.TemporaryDirectory(prefix="lint-inference-pysa-") as tmp:
        where = Path(tmp)
        _pysa_project(target, where)
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
        log = where / "pysa.log"
        r = _run_measured([str(pyre), "--noninteractive", "analyze", "--save-results-to",
                           str(where / "out")], where, cpu_budget_s, env, log)
        text = log.read_text(errors="replace")
        phases = {}
        for key in ("Collected classes and definitions", "Built call graph", "Computed overrides",
                    "Fixpoint", "Analyze"):
            for line in text.splitlines():
                if "PERFORMANCE" in line and key in line:
                    phases[key] = line.rsplit(":", 1)[-1].strip()
        pyrefly = [line for line in text.splitlines() if "Running command" in line and "pyrefly" in line]
        res: dict[str, Any] = {"target": target.name, "files": files, "lines": lines, **r,
                               "phases": phases, "pyrefly_started": bool(pyrefly),
                               "log_tail": text.splitlines()[-8:]}
        out = where / "out"
        if r["rc"] == 0 and (out / "errors.json").exists():
            issues = json.loads((out / "errors.json").read_text())
            res["issues"] = [f"{i['code']} {i['define']}:{i['line']} {i['description']}" for i in issues]
            res["call_targets"] = _pysa_call_targets(out, target)
            res["overrides"] = _pysa_overrides(out, target.override_base)
    return res


def pyrefly_whole(ref: dict[str, Any]) -> dict[str, Any]:
    """Pyrefly alone, as Pysa configures it: the type check, then the type check that also writes
    the per-call-site targets Pysa reads (``--report-pysa``: the call-graph answers of the Pysa
    rows come from it)."""
    exe = Path(sys.executable).with_name("pyrefly")
    files, lines = _tree_size(VLLM_ROOT / "vllm")
    out: dict[str, Any] = {"files": files, "lines": lines}
    with tempfile.TemporaryDirectory(prefix="lint-inference-pyrefly-") as tmp:
        _pysa_project(_PYSA_VLLM, Path(tmp))
        log = Path(tmp) / "pyrefly.log"
        base = [str(exe), "check", "--threads=2", "--output-format=min-text", "--summary=full"]
        out["check"] = _run_measured(base, Path(tmp), log=log)
        out["check"]["summary"] = [x.strip() for x in log.read_text(errors="replace").splitlines()
                                   if " INFO " in x and ("errors" in x or "modules" in x)]
        report = Path(tmp) / "report"
        report.mkdir()
        out["report"] = _run_measured([*base, "--report-pysa", str(report)], Path(tmp), log=log)
        out["report"]["report_mib"] = sum(f.stat().st_size for f in report.rglob("*") if f.is_file()) / 2**20
    return out


def parse_floor(ref: dict[str, Any]) -> dict[str, Any]:
    """The floor under any tree-building library: the standard ``ast.parse`` and parso (jedi's
    parser) over every file, nothing else."""
    import parso

    files = _py_files(VLLM_ROOT / "vllm")
    texts = [p.read_bytes() for p in files]
    lines = sum(t.count(b"\n") for t in texts)
    t0 = _cpu()
    for t in texts:
        ast.parse(t)
    ast_cpu = _cpu() - t0
    ast_rss = _rss_mib()
    grammar = parso.load_grammar()
    t1 = _cpu()
    for t in texts:
        grammar.parse(t.decode("utf-8", "replace"), cache=False)
    return {"files": len(files), "lines": lines, "ast_cpu_s": ast_cpu, "ast_rss_mib": ast_rss,
            "parso_cpu_s": _cpu() - t1, "peak_rss_mib": _rss_mib()}


# --- driver --------------------------------------------------------------------------------------
CHILDREN: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
    "astroid-cases": astroid_cases, "astroid-whole": astroid_whole,
    "jedi-cases": jedi_cases, "jedi-whole": jedi_whole, "parse-floor": parse_floor,
}


def _child(name: str, ref: dict[str, Any]) -> dict[str, Any]:
    """Run one measurement in a fresh interpreter: its CPU and RSS are its own."""
    proc = subprocess.run([sys.executable, __file__, "--child", name], input=json.dumps(ref),
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1:] or [f"exit {proc.returncode}"]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _markdown(cmd: str, ref: dict[str, Any], results: dict[str, Any], load: tuple[str, str]) -> str:
    md = [f"Command: `{cmd}`", "",
          f"Machine: {os.cpu_count()} CPUs shared with other sessions; load average before/after: "
          f"{load[0]} / {load[1]}. CPU seconds are user+system of the measured process (group).", ""]
    md += ["### Expected answers (the by-name `ast` reference)", ""]
    for k, v in ref.items():
        v = ", ".join(v) if isinstance(v, list) else v
        md.append(f"- **{k}**: {v}")
    rows = [c for key in ("astroid-cases", "jedi-cases", "pysa-fixture", "pysa-vllm", "pysa-sglang")
            for c in results.get(key, {}).get("cases", [])]
    if rows:
        md += ["", "### Cases", "", "| tool | case | verdict | CPU s | API | answer | what it gets wrong |",
               "|---|---|---|---:|---|---|---|"]
        for c in rows:
            ans = c["answer"].replace("|", "\\|")
            md.append(f"| {c['tool']} | {c['case']} | {c['verdict']} | {c['cpu_s']:.2f} | {c['api']} | "
                      f"{ans} | {c['wrong'].replace('|', '/')} |")
    costs: list[CostResult] = results.get("costs", [])
    if costs:
        md += ["", "### Cost", "", "| tool | what | files | lines | CPU s | wall s | lines per CPU s | "
               "peak RSS MiB | note |", "|---|---|---:|---:|---:|---:|---:|---:|---|"]
        for c in costs:
            md.append(f"| {c.tool} | {c.what} | {c.files} | {c.lines:,} | {c.cpu_s:.1f} | {c.wall_s:.1f} | "
                      f"{c.lines_per_cpu_s:,.0f} | {c.peak_rss_mib:,.0f} | {c.note} |")
    for key in ("pysa-fixture", "pysa-vllm", "pysa-sglang"):
        r = results.get(key)
        if r:
            md += ["", f"### Pysa: {r.get('target')}", "", "```", json.dumps(
                {k: v for k, v in r.items() if k not in ("cases",)}, indent=1), "```"]
    for key in ("astroid-whole", "jedi-whole"):
        r = results.get(key)
        if r:
            md += ["", f"### {key}", "", "```", json.dumps(r, indent=1), "```"]
    return "\n".join(md) + "\n"


# --- issue 37 item 7: binding, dataclasses, properties, call summaries on vLLM 0.34 --------------
# Each item is one question about a value: what reaches ``is_lse_base_on_e`` of the MLA layer's DCP
# combine. The real chain in vLLM 0.34.0: ``MLAAttention.__init__`` builds
# ``MLADCPManager(..., is_lse_base_on_e=self.impl.lse_base_on_e)`` (mla_attention.py:766, by
# keyword), whose ``__init__`` passes it by position to ``_init_combine`` (dcp.py:1548-1554), which
# binds it into ``functools.partial(combine_fn, ..., is_lse_base_on_e=...)`` (dcp.py:1616-1620);
# the layer calls that partial at mla_attention.py:1202. Each item edits the text in memory (never on
# disk) so that one construct of the language carries a known literal (``True``) to line 766, with
# helpers of our own appended to the module. vLLM 0.34 has no dataclass field, property or recursive
# call on this path (every ``lse_base_on_e`` in the tree is a class attribute of an ``*Impl``), so
# those three are built from the real line. Two questions per item and tool: the value of the probe
# expression where it is written ("direct"), and the value that reaches the combine's keyword at
# mla_attention.py:1202 ("at the combine").
ITEMS_ROOT = RELEASES / "vllm-0.34.0"
ITEMS_TOOLS = ("lint", "astroid", "jedi", "pyrefly", "pyre")
I_SITE = 766  # is_lse_base_on_e=self.impl.lse_base_on_e,
I_COMBINE = 1202  # attn_out = self.dcp_manager.combine(
I_PARTIAL = 1616  # return functools.partial(  (its keyword at 1619)
I_INIT_CALL = 1548  # self.combine = self._init_combine(
ITEM_LINES = {
    (MLA, I_SITE): "is_lse_base_on_e=self.impl.lse_base_on_e,",
    (MLA, I_COMBINE): "self.dcp_manager.combine(",
    (MLA, 757): "self.dcp_manager = MLADCPManager(",
    (DCP, I_PARTIAL): "return functools.partial(",
    (DCP, 1619): "is_lse_base_on_e=is_lse_base_on_e,",
    (DCP, I_INIT_CALL): "self.combine = self._init_combine(",
}
_KW_CALL_OLD = "            output_dtype,\n            is_lse_base_on_e,\n            use_pcp,\n        )"
_KW_CALL_NEW = ('            output_dtype,\n            **{"is_lse_base_on_e": is_lse_base_on_e, '
                '"use_pcp": use_pcp},\n        )')


@dataclass(frozen=True)
class Item:
    key: str
    item: str  # binding | dataclasses | properties | call summaries
    question: str
    probe: str  # the expression written at line 766 in place of ``self.impl.lse_base_on_e``
    helpers: str = ""  # appended to mla_attention.py
    dcp_edit: bool = False  # dcp.py:1548-1554 passes the base through ``**{...}``
    direct_at: str = "mla"  # where the direct question is asked: the probe (mla) or dcp.py:1619


ITEMS = (
    Item("G1", "binding", "a literal passed by keyword to MLADCPManager.__init__ (mla_attention.py:"
         "766), by position to _init_combine (dcp.py:1548-1554), bound into the partial "
         "(dcp.py:1619): real chain, the value made a literal", "True", direct_at="dcp"),
    Item("G2", "binding", "as G1, with dcp.py:1548-1554 passing it through `**{...}` to "
         "_init_combine's named parameter (in memory)", "True", dcp_edit=True, direct_at="dcp"),
    Item("H", "dataclasses", "a dataclass field whose default is False, the constructor passing True",
         "_BaseChoice(on_e=True).on_e",
         "\n\nimport dataclasses as _dc\n\n\n@_dc.dataclass(frozen=True)\nclass _BaseChoice:\n"
         "    on_e: bool = False\n"),
    Item("I1", "properties", "a @property returning an __init__ self-attribute set from the "
         "constructor's argument (default False, given True)", "_BaseFlag(True).on_e",
         "\n\nclass _BaseFlag:\n    def __init__(self, on_e: bool = False) -> None:\n"
         "        self._on_e = on_e\n\n    @property\n    def on_e(self) -> bool:\n"
         "        return self._on_e\n"),
    Item("I2", "properties", "the __init__ self-attribute itself", "_BaseFlag(True)._on_e",
         "\n\nclass _BaseFlag:\n    def __init__(self, on_e: bool = False) -> None:\n"
         "        self._on_e = on_e\n"),
    Item("J0", "call summaries", "the control for J1 and J2: a plain function that returns True, "
         "no recursion", "_always_e()", "\n\ndef _always_e() -> bool:\n    return True\n"),
    Item("J1", "call summaries", "a self-recursive function whose base case returns True",
         "_countdown(3)",
         "\n\ndef _countdown(n: int) -> bool:\n    if n <= 0:\n        return True\n"
         "    return _countdown(n - 1)\n"),
    Item("J2", "call summaries", "two mutually recursive functions whose base case returns True",
         "_even_steps(4)",
         "\n\ndef _even_steps(n: int) -> bool:\n    if n <= 0:\n        return True\n"
         "    return _odd_steps(n - 1)\n\n\ndef _odd_steps(n: int) -> bool:\n"
         "    return _even_steps(n - 1)\n"),
)
ITEM_EXPECTED = "True"


def _check_item_lines() -> None:
    for (rel, line), text in ITEM_LINES.items():
        got = (ITEMS_ROOT / rel).read_text().splitlines()[line - 1]
        if text not in got:
            raise SystemExit(f"{ITEMS_ROOT / rel}:{line} reads {got.strip()!r}, expected {text!r}: "
                             "the release is not the one these items cite")


def item_texts(it: Item) -> dict[str, str]:
    """The two files of the item as edited in memory (the line count up to the helpers is kept)."""
    mla = (ITEMS_ROOT / MLA).read_text()
    old = "is_lse_base_on_e=self.impl.lse_base_on_e,"
    if mla.count(old) != 1:
        raise SystemExit(f"{MLA}: {old!r} is not there once")
    mla = mla.replace(old, f"is_lse_base_on_e={it.probe},") + it.helpers
    dcp = (ITEMS_ROOT / DCP).read_text()
    if it.dcp_edit:
        if dcp.count(_KW_CALL_OLD) != 1:
            raise SystemExit(f"{DCP}: the _init_combine call is not the one G2 edits")
        dcp = dcp.replace(_KW_CALL_OLD, _KW_CALL_NEW)
    return {MLA: mla, DCP: dcp}


def _dcp_partial_line(dcp: str) -> int:
    """1-based line of the partial's ``is_lse_base_on_e=`` keyword (moved by G2's edit)."""
    lines = dcp.splitlines()
    start = next(i for i, x in enumerate(lines) if "def _init_combine(" in x)
    ret = next(i for i in range(start, len(lines))
               if "return functools.partial(" in lines[i] and "combine_fn," in lines[i + 1])
    return next(i for i in range(ret, ret + 5) if "is_lse_base_on_e=is_lse_base_on_e," in lines[i]) + 1


def _item_verdict(values: set[str]) -> str:
    """right: exactly the literal; partial: the literal among others, or only its type; wrong:
    another value; none: nothing. What says "no value here" is not an answer: astroid's
    Uninferable, a checker's Any/Unknown, the linter's ``unknown`` (an expression it does not
    read) and ``param`` (the function's parameter, in the context of no particular caller)."""
    values = {v for v in values if v and v not in ("Uninferable", "Any", "Unknown", "unknown", "param")}
    if not values:
        return "none"
    if values == {ITEM_EXPECTED} or values == {"Literal[True]"}:
        return "right"
    if ITEM_EXPECTED in values or "Literal[True]" in values or values <= {"bool", "builtins.bool"}:
        return "partial"
    return "wrong"


def _item_row(tool: str, it: Item, q: str, values: set[str], answer: str, api: str,
              cpu_s: float) -> dict[str, Any]:
    return asdict(CaseResult(tool, f"{it.key} {it.item}: {q}", _item_verdict(values), answer, api,
                             cpu_s))


def astroid_items(ref: dict[str, Any]) -> dict[str, Any]:
    import astroid
    from astroid import MANAGER
    from astroid import nodes
    from astroid import objects

    t0 = _cpu()
    if str(ITEMS_ROOT) not in sys.path:
        sys.path.insert(0, str(ITEMS_ROOT))
    MANAGER.always_load_extensions = False
    rows = []
    mla_mod, dcp_mod = _modname(ITEMS_ROOT, ITEMS_ROOT / MLA), _modname(ITEMS_ROOT, ITEMS_ROOT / DCP)
    for it in ITEMS:
        t = _cpu()
        texts = item_texts(it)
        MANAGER.clear_cache()  # each item sees its own edited modules, and pays for its builds
        MANAGER.always_load_extensions = False
        dcp = astroid.parse(texts[DCP], dcp_mod, str(ITEMS_ROOT / DCP))
        MANAGER.astroid_cache[dcp_mod] = dcp
        mla = astroid.parse(texts[MLA], mla_mod, str(ITEMS_ROOT / MLA))
        MANAGER.astroid_cache[mla_mod] = mla
        # direct: the probe's keyword value at line 766, or the partial's keyword in dcp.py
        if it.direct_at == "dcp":
            line = _dcp_partial_line(texts[DCP])
            node = next(k.value for k in dcp.nodes_of_class(nodes.Keyword)
                        if k.lineno == line and k.arg == "is_lse_base_on_e")
        else:
            node = next(k.value for k in mla.nodes_of_class(nodes.Keyword)
                        if k.lineno == I_SITE and k.arg == "is_lse_base_on_e")
        vals = _astroid_infer(node)
        got = {_astroid_value(v) for v in vals}
        rows.append(_item_row("astroid", it, "direct", got, f"{node.as_string()} -> {sorted(got)}",
                              "NodeNG.infer() on the keyword's value", _cpu() - t))
        # at the combine: the partial the layer calls, and its bound keyword's values
        t = _cpu()
        call = _astroid_call(mla, I_COMBINE, "combine")
        got, desc = set(), []
        for v in _astroid_infer(call.func):
            if isinstance(v, objects.PartialFunction) and "is_lse_base_on_e" in v.filled_keywords:
                kv = v.filled_keywords["is_lse_base_on_e"]
                inferred = {_astroid_value(x) for x in _astroid_infer(kv)}
                got |= inferred
                desc.append(f"partial({v.name}, is_lse_base_on_e={kv.as_string()} -> {sorted(inferred)})")
            else:
                desc.append(_astroid_desc(v)[1] if not isinstance(v, Exception) else repr(v)[:80])
        rows.append(_item_row("astroid", it, "at the combine", got, "; ".join(sorted(set(desc))),
                              "Attribute.infer() -> PartialFunction.filled_keywords -> infer()",
                              _cpu() - t))
    return {"cases": rows, "cpu_s": _cpu() - t0, "peak_rss_mib": _rss_mib(), "version": astroid.__version__}


def _astroid_value(v: Any) -> str:
    from astroid import nodes
    from astroid import util

    if isinstance(v, util.UninferableBase):
        return "Uninferable"
    if isinstance(v, nodes.Const):
        return repr(v.value)
    if isinstance(v, Exception):
        return f"error {type(v).__name__}"
    return type(v).__name__


def jedi_items(ref: dict[str, Any]) -> dict[str, Any]:
    import jedi

    t0 = _cpu()
    proj = _jedi_project(ITEMS_ROOT)
    rows = []
    for it in ITEMS:
        t = _cpu()
        texts = item_texts(it)
        if it.direct_at == "dcp":
            line = _dcp_partial_line(texts[DCP])
            text = texts[DCP].splitlines()[line - 1]
            col = text.rindex("is_lse_base_on_e")
            s = jedi.Script(code=texts[DCP], path=str(ITEMS_ROOT / DCP), project=proj)
        else:
            # the probe's value: a name bound to it at the module's end (infer on a call's
            # name would give the function, not what the call returns)
            code = texts[MLA] + f"\n_probe_value = {it.probe}\n"
            line, col = len(code.splitlines()), 0
            s = jedi.Script(code=code, path=str(ITEMS_ROOT / MLA), project=proj)
        try:
            names = s.infer(line, col)
        except Exception as e:  # jedi raises many kinds; the benchmark records, never stops
            names, err = [], repr(e)[:80]
        else:
            err = ""
        got = {n.full_name or n.name for n in names}
        rows.append(_item_row("jedi", it, "direct", got,
                              f"infer at {Path(s.path).name}:{line}:{col} -> "
                              f"{_jedi_names(names) or err or 'nothing'}", "Script.infer", _cpu() - t))
        t = _cpu()
        s = jedi.Script(code=texts[MLA], path=str(ITEMS_ROOT / MLA), project=proj)
        ctext = texts[MLA].splitlines()[I_COMBINE - 1]
        names = s.infer(I_COMBINE, ctext.index("combine("))
        rows.append(_item_row("jedi", it, "at the combine", set(),
                              f"infer combine -> {_jedi_names(names)}; no API gives a bound "
                              "keyword's value", "Script.infer", _cpu() - t))
    return {"cases": rows, "cpu_s": _cpu() - t0, "peak_rss_mib": _rss_mib(), "version": jedi.__version__}


def pyrefly_items(ref: dict[str, Any]) -> dict[str, Any]:
    """One ``pyrefly check`` over a probe module per item and place: the edited file's text, as a
    module of its own beside the release tree (its imports resolve to the release), with
    ``reveal_type(...)`` of the probe inserted before the statement that holds it."""
    import re

    exe = Path(sys.executable).with_name("pyrefly")
    version = subprocess.run([str(exe), "--version"], capture_output=True, text=True,
                             check=False).stdout.strip()
    probes: dict[str, tuple[Item, str, str]] = {}  # probe module -> (item, question, expression)

    def reveal(lines: list[str], at: int, expr: str) -> None:
        indent = lines[at][: len(lines[at]) - len(lines[at].lstrip())]
        lines.insert(at, f"{indent}reveal_type({expr})")

    with tempfile.TemporaryDirectory(prefix="lint-inference-items-") as tmp:
        where = Path(tmp)
        for it in ITEMS:
            texts = item_texts(it)
            mla = texts[MLA].splitlines()
            # the later line first, so that the earlier insertion does not move it
            combine = "self.dcp_manager.combine"
            reveal(mla, I_COMBINE - 1, combine)
            name = f"probe_{it.key.lower()}"
            if it.direct_at == "dcp":
                dcp = texts[DCP].splitlines()
                at = next(i for i in range(_dcp_partial_line(texts[DCP]) - 1, 0, -1)
                          if "return functools.partial(" in dcp[i])
                reveal(dcp, at, "is_lse_base_on_e")
                (where / f"{name}_dcp.py").write_text("\n".join(dcp) + "\n")
                probes[f"{name}_dcp"] = (it, "direct", "is_lse_base_on_e")
            else:
                at = next(i for i in range(I_SITE - 1, 0, -1)
                          if "self.dcp_manager = MLADCPManager(" in mla[i])
                reveal(mla, at, it.probe)
                probes[f"{name}_mla"] = (it, "direct", it.probe)
            (where / f"{name}_mla.py").write_text("\n".join(mla) + "\n")
            probes[f"{name}_mla@"] = (it, "at the combine", combine)
        (where / "pyrefly.toml").write_text(
            f'project-includes = ["probe_*.py"]\nsearch-path = ["{ITEMS_ROOT}"]\n'
            f'python-interpreter-path = "{sys.executable}"\n')
        log = where / "pyrefly.log"
        run = _run_measured([str(exe), "check", "--threads=2", "--output-format=min-text"], where, log=log)
        out = log.read_text(errors="replace")
    rows = []
    order = sorted(probes.items(), key=lambda kv: (ITEMS.index(kv[1][0]), kv[1][1] != "direct"))
    for key, (it, q, expr) in order:
        name = key.rstrip("@")
        found = re.findall(rf"{name}\.py:\d+:\d+.*?revealed type: (.+?)(?: \[reveal-type\])?$", out,
                           re.MULTILINE)
        # the module with both reveals: the combine's is the later one
        pick = found[-1] if found and (q != "direct" or it.direct_at == "dcp") else \
            found[0] if found else ""
        got = {pick.strip()} if pick and q == "direct" else set()
        rows.append(_item_row("pyrefly", it, q, got, f"reveal_type({expr}) -> {pick.strip() or 'nothing'}",
                              "reveal_type (the combine: no bound keyword in a type)" if q != "direct"
                              else "reveal_type", 0.0))
    return {"cases": rows, "cpu_s": run["cpu_s"], "wall_s": run["wall_s"],
            "peak_rss_mib": run["peak_rss_mib"], "rc": run["rc"], "version": version}


def lint_items(ref: dict[str, Any]) -> dict[str, Any]:
    """Our linter over the two edited files and the rest of ``vllm/v1/attention`` and
    ``model_executor/layers/attention`` (the backends and their declared bases): the uses the
    interpreter records at the combine call (mla_attention.py:1202), with the base it was told."""
    from attn_contracts.lint import lint_model

    t0 = _cpu()
    rows = []
    for it in ITEMS:
        t = _cpu()
        texts = item_texts(it)
        with tempfile.TemporaryDirectory(prefix="lint-inference-items-") as tmp:
            root = Path(tmp)
            for sub in ("vllm/v1/attention", "vllm/model_executor/layers/attention"):
                shutil.copytree(ITEMS_ROOT / sub, root / sub)
            for pkg in ("vllm", "vllm/v1", "vllm/model_executor", "vllm/model_executor/layers"):
                (root / pkg / "__init__.py").write_text("")
            for rel, text in texts.items():
                (root / rel).write_text(text)
            _, model = lint_model([root / "vllm"])
            uses = [u for u in model.uses if u.where.path.endswith(Path(MLA).name)
                    and u.where.line == I_COMBINE]
        got, desc = set(), []
        for u in uses:
            g = u.given
            ways = g.options if g.kind == "choice" else (g,)
            for w in ways:
                got.add("True" if (w.kind == "fixed" and w.base == "e") else
                        "False" if w.kind == "fixed" else w.kind)
                desc.append(f"{w.kind} base={w.base} from "
                            f"{Path(str(w.where)).name if w.where else '?'}"
                            f"{' (' + w.how + ')' if w.how else ''}")
        rows.append(_item_row("lint", it, "at the combine", got,
                              "; ".join(sorted(set(desc))) or f"no use recorded at :{I_COMBINE}",
                              "lint_model(...).uses at the combine (base e = True)", _cpu() - t))
    return {"cases": rows, "cpu_s": _cpu() - t0, "peak_rss_mib": _rss_mib()}


CHILDREN.update({"astroid-items": astroid_items, "jedi-items": jedi_items,
                 "pyrefly-items": pyrefly_items, "lint-items": lint_items})


def items_main(tools: list[str], output: Path | None, cmd: str) -> int:
    """Issue 37 item 7: the four items on vLLM 0.34.0, each tool in a child process."""
    _check_item_lines()
    load0 = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    results: dict[str, dict[str, Any]] = {}
    for tool in tools:
        if tool == "pyre":
            continue  # see the section's note: Pysa answers flows between declared sources, not values
        results[tool] = _child(f"{tool}-items", {})
    load1 = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    md = [f"## {time.strftime('%Y-%m-%d %H:%M')}: issue 37 item 7, binding / dataclasses / properties"
          " / call summaries on vLLM 0.34.0", "", f"Command: `{cmd}`", "",
          f"Machine: {os.cpu_count()} CPUs shared with other sessions; load average before/after: "
          f"{load0} / {load1}. Expected answer of every item: `True` (base e) reaches "
          f"`is_lse_base_on_e`. Release: `{ITEMS_ROOT.name}`; sites: {MLA}:{I_SITE} (the probe), "
          f":{I_COMBINE} (the combine), {DCP}:{I_INIT_CALL}-1554 and :{I_PARTIAL}-1620.", "",
          "| item | question |", "|---|---|"]
    md += [f"| {it.key} {it.item} | {it.question}; probe `{it.probe}` |" for it in ITEMS]
    md += ["", "| tool | item: question | verdict | CPU s | API | answer |", "|---|---|---|---:|---|---|"]
    for tool, r in results.items():
        for c in r.get("cases", []):
            md.append(f"| {tool} | {c['case']} | {c['verdict']} | {c['cpu_s']:.2f} | {c['api']} | "
                      f"{c['answer'].replace('|', '/')} |")
        if "error" in r:
            md.append(f"| {tool} | - | error | - | - | {r['error']} |")
    md += ["", "| tool | version | CPU s (all items) | peak RSS MiB |", "|---|---|---:|---:|"]
    for tool, r in results.items():
        md.append(f"| {tool} | {r.get('version', '(this tree)')} | {r.get('cpu_s', 0):.1f} | "
                  f"{r.get('peak_rss_mib', 0):,.0f} |")
    text = "\n".join(md) + "\n"
    Console().print(text)
    if output:
        output.write_text((output.read_text() + "\n" if output.exists() else "") + text)
    return 0


def _pysa_cases(r: dict[str, Any], tool: str, expected_overrides: set[str],
                f_define: str) -> list[dict[str, Any]]:
    """Read the cases off one Pysa run: the call graph's targets at the case sites, the issues."""
    tg = r.get("call_targets", {})
    issues = r.get("issues", [])
    cpu = float(r.get("cpu_s", 0.0))

    def has(case: str, *names: str) -> bool:
        return any(any(n in t for n in names) for t in tg.get(case, []))

    out = []
    built = tg.get("B partial built", []) + tg.get("B partial of a method", [])
    shims = {t.rsplit(".", 1)[-1] for t in built if "shim:" in t}
    out.append(CaseResult(tool, "B partial built", "right" if len(shims) >= 4 else "partial" if shims
                          else "none", "; ".join(built), "call-graph.json (functools.partial shim)", cpu,
                          "" if len(shims) >= 4 else "not every alternative of the conditional"))
    def call_verdict(case: str, want: frozenset[str]) -> str:
        if has(case, *(f".{w}" for w in want)):
            return "right" if all(has(case, f".{w}") for w in want) else "partial"
        return "wrong" if tg.get(case) and not has(case, "unresolved") else "none"

    fixture_b = frozenset({"combine_rs", "combine_ar", "combine_a2a"})
    out.append(CaseResult(tool, "B call", call_verdict("B call", B_COMBINES if "vllm" in tool else fixture_b),
                          "; ".join(tg.get("B call", [])), "call-graph.json", cpu,
                          "a partial stored on an attribute is not followed to its function: the call "
                          "is unresolved or goes to the attribute's declared type"))
    base_issue = [i for i in issues if i.startswith("7002")]
    out.append(CaseResult(tool, "B base value", "partial" if base_issue else "none", "; ".join(base_issue),
                          "issue 7002 (DeclaredBase -> CombineBase)", cpu,
                          "says a modelled source reaches a sink, never which value; a bool literal "
                          "cannot be a source (only string literals can)"))
    out.append(CaseResult(tool, "C call", call_verdict("C call", C_COMBINES if "vllm" in tool else
                                                       frozenset({"combine_rs", "combine_a2a"})),
                          "; ".join(tg.get("C call", [])), "call-graph.json", cpu,
                          "the partial kept on self is not followed: the call is unresolved"))
    overrides = {".".join(o.split(".")[-2:]) for o in r.get("overrides", [])}
    d_ok = has("D call", "Overrides{") and overrides == expected_overrides
    out.append(CaseResult(tool, "D call", "right" if d_ok else "partial" if has("D call", "Overrides{")
                          else "none", "; ".join(tg.get("D call", []))
                          + f"; override-graph.json: {len(overrides & expected_overrides)}/"
                          f"{len(expected_overrides)} overrides, "
                          f"extra {sorted(overrides - expected_overrides)}",
                          "call-graph.json + override-graph.json", cpu))
    lse_issue = [i for i in issues if i.startswith(f"7001 {f_define}:")]
    others = [i for i in issues if i.startswith("7001") and i not in lse_issue]
    out.append(CaseResult(tool, "F out buffer", "partial" if lse_issue else "none",
                          f"in {f_define}: {'; '.join(lse_issue) or 'no 7001 issue'}; run resolved to "
                          f"{'; '.join(tg.get('F run', [])) or 'nothing'}; other LSE issues: {others}",
                          "issue 7001 with a self->lse Updates model and an attribute source", cpu,
                          "no model for 'a callee writes a source into its argument': needs a stand-in "
                          "source on the wrapper object" + ("" if lse_issue else
                                                            "; and the combine call is unresolved")))
    return [asdict(c) for c in out]


def _pysa_e_cases(r: dict[str, Any], expected_overrides: set[str]) -> list[dict[str, Any]]:
    tg = r.get("call_targets", {})
    cpu = float(r.get("cpu_s", 0.0))
    overrides = {".".join(o.split(".")[-2:]) for o in r.get("overrides", [])}
    layer = "; ".join(tg.get("E call", []))
    backend = "; ".join(tg.get("E backend", []))
    issue = [i for i in r.get("issues", []) if i.startswith("7001") and "_chunked_prefix_attn_mha" in i]
    found_layer = "RadixAttention" in layer
    found_backend = "Overrides{" in backend or "forward" in backend
    verdict = "right" if issue else "partial" if found_layer or found_backend else "none"
    return [asdict(CaseResult(
        "Pysa (sglang)", "E engine dispatch", verdict,
        f"self.attn_mha(...): {layer or 'no call-graph entry'}; get_attn_backend().forward: "
        f"{backend or 'no call-graph entry'}; forward_extend overrides "
        f"{len(overrides & expected_overrides)}/{len(expected_overrides)}; issue: {issue or 'none'}",
        "call-graph.json + override-graph.json + issue 7001 (forward_extend -> merge_state)", cpu,
        "" if issue else "the LSE of the backends' forward_extend does not reach merge_state"))]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--tools", default=",".join(TOOLS), help=f"comma-separated, of {', '.join(TOOLS)}")
    p.add_argument("--pysa-cpu-budget", type=float, default=1800.0,
                   help="CPU seconds after which the whole-package Pysa run is stopped (default 1800)")
    p.add_argument("--no-whole", action="store_true", help="the cases only, no whole-package costs")
    p.add_argument("--output", type=Path, help="write the markdown tables here")
    p.add_argument("--append", action="store_true", help="add to --output instead of replacing it")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--items", action="store_true",
                   help="issue 37 item 7 only: binding, dataclasses, properties and call summaries on "
                        f"vLLM 0.34.0 (tools: {', '.join(ITEMS_TOOLS)}; --output appends a section)")
    args = p.parse_args(argv)
    if args.child:
        ref = json.loads(sys.stdin.read())
        print(json.dumps(CHILDREN[args.child](ref)))
        return 0
    if args.items:
        tools = [t.strip() for t in args.tools.split(",") if t.strip()] \
            if args.tools != ",".join(TOOLS) else list(ITEMS_TOOLS)
        unknown = sorted(set(tools) - set(ITEMS_TOOLS))
        if unknown:
            p.error(f"unknown tools {unknown} for --items; known: {', '.join(ITEMS_TOOLS)}")
        cmd = "python bench/lint_inference.py " + " ".join(argv if argv is not None else sys.argv[1:])
        return items_main(tools, args.output, cmd.strip())
    tools = [t.strip() for t in args.tools.split(",") if t.strip()]
    unknown = sorted(set(tools) - set(TOOLS))
    if unknown:
        p.error(f"unknown tools {unknown}; known: {', '.join(TOOLS)}")
    for root in (VLLM_ROOT, SGLANG_ROOT, FLASHINFER_ROOT):
        if not root.is_dir():
            p.error(f"{root} is not there: the released sources are read from {RELEASES}")
    _check_lines()
    err = Console(stderr=True, quiet=not sys.stderr.isatty())
    load0 = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    ref = reference()
    results: dict[str, Any] = {"costs": []}
    costs: list[CostResult] = results["costs"]
    whole = not args.no_whole
    if "lint" in tools and whole:
        err.log("attn-contracts lint, whole vllm")
        r = lint_whole(ref)
        costs.append(CostResult("attn-contracts lint -j 2", "whole vllm", r["files"], r["lines"], r["cpu_s"],
                                r["wall_s"], r["peak_rss_mib"],
                                f"{r['findings']} findings; rc {r['rc']}; RSS summed over the group"))
    if "parse" in tools and whole:
        err.log("the parse floor: ast.parse and parso over every file")
        r = _child("parse-floor", ref)
        if "ast_cpu_s" in r:
            costs.append(CostResult("stdlib ast.parse", "whole vllm (parse only)", r["files"], r["lines"],
                                    r["ast_cpu_s"], r["ast_cpu_s"], r["ast_rss_mib"], "every tree discarded"))
            costs.append(CostResult("parso (jedi's parser)", "whole vllm (parse only)", r["files"],
                                    r["lines"], r["parso_cpu_s"], r["parso_cpu_s"], r["peak_rss_mib"],
                                    "every tree discarded"))
    if "astroid" in tools:
        err.log("astroid, cases")
        r = results["astroid-cases"] = _child("astroid-cases", ref)
        if "cases" in r:
            costs.append(CostResult("astroid", "cases A-F (files they pull in)", 0, 0, r["cpu_s"], 0.0,
                                    r["peak_rss_mib"], "incl. astroid's start-up and lazy builds"))
        if whole:
            err.log("astroid, whole vllm (build every module, infer the calls of interest)")
            w = results["astroid-whole"] = _child("astroid-whole", ref)
            if "cpu_s" in w:
                costs.append(CostResult("astroid", "build every module", w["files"], w["lines"],
                                        w["build_cpu_s"], w["build_wall_s"], w["build_rss_mib"],
                                        f"{w['failed']} failed"))
                costs.append(CostResult("astroid", f"+ infer {w['calls']} calls of interest", w["files"],
                                        w["lines"], w["build_cpu_s"] + w["calls_cpu_s"], 0.0,
                                        w["peak_rss_mib"],
                                        f"{w['inferred']} to a callable, {w['uninferable']} not, "
                                        f"{w['timeouts']} over {PER_INFER_LIMIT_S} s; "
                                        f"infer alone {w['calls_cpu_s']:.1f} s"))
                costs.append(CostResult("astroid", "+ every class's ancestors (case A subclasses)",
                                        w["files"], w["lines"], w["cpu_s"], w["wall_s"], w["peak_rss_mib"],
                                        f"{w['subclasses_found']}/{w['subclasses_expected']} subclasses, "
                                        f"ancestors alone {w['subclasses_cpu_s']:.1f} s"))
    if "jedi" in tools:
        err.log("jedi, cases")
        r = results["jedi-cases"] = _child("jedi-cases", ref)
        if "cases" in r:
            costs.append(CostResult("jedi", "cases A-F", 0, 0, r["cpu_s"], 0.0, r["peak_rss_mib"], ""))
        if whole:
            err.log("jedi, infer+goto on every call of interest in vllm")
            w = results["jedi-whole"] = _child("jedi-whole", ref)
            if "cpu_s" in w:
                costs.append(CostResult("jedi", f"infer+goto on {w['calls']} calls of interest", w["files"],
                                        w["lines"], w["cpu_s"], w["wall_s"], w["peak_rss_mib"],
                                        f"{w['resolved']} resolved to something; "
                                        "lines = the files holding them"))
    if "pysa" in tools:
        if shutil.which("pyre", path=str(Path(sys.executable).parent)) is None:
            p.error("pyre is not installed in this venv: pip install -e '.[bench-inference]'")
        err.log("Pysa, synthetic fixture")
        r = results["pysa-fixture"] = pysa_run(_PYSA_FIXTURE, args.pysa_cpu_budget)
        fx = _overrides(_classes(FIXTURE, "lsefix"), "MLAImpl", "forward_mqa") - {"MLAImpl.forward_mqa"}
        r["cases"] = _pysa_cases(r, "Pysa (fixture)", fx, _PYSA_FIXTURE.f_define)
        costs.append(CostResult("Pysa (+Pyrefly)", "fixture", r["files"], r["lines"], r["cpu_s"], r["wall_s"],
                                r["peak_rss_mib"], f"rc {r['rc']}"))
        if whole:
            err.log(f"Pysa, whole vllm (stopped after {args.pysa_cpu_budget:.0f} CPU s)")
            r = results["pysa-vllm"] = pysa_run(_PYSA_VLLM, args.pysa_cpu_budget)
            want = set(ref["D_impls"]) - {"MLAAttentionImpl.forward_mqa"}
            r["cases"] = _pysa_cases(r, "Pysa (vllm)", want, _PYSA_VLLM.f_define) if r["rc"] == 0 else []
            costs.append(CostResult("Pysa (+Pyrefly)", "whole vllm, minimal taint model", r["files"],
                                    r["lines"],
                                    r["cpu_s"], r["wall_s"], r["peak_rss_mib"],
                                    "stopped at the CPU budget" if r["killed"] else f"rc {r['rc']}"))
            err.log(f"Pysa, sglang srt (stopped after {args.pysa_cpu_budget:.0f} CPU s)")
            r = results["pysa-sglang"] = pysa_run(_PYSA_SGLANG, args.pysa_cpu_budget)
            want = set(ref["E_backends"]) - {"AttentionBackend.forward_extend"}
            r["cases"] = _pysa_e_cases(r, want) if r["rc"] == 0 else []
            costs.append(CostResult("Pysa (+Pyrefly)", "sglang srt, minimal taint model", r["files"],
                                    r["lines"], r["cpu_s"], r["wall_s"], r["peak_rss_mib"],
                                    "stopped at the CPU budget" if r["killed"] else f"rc {r['rc']}"))
    if "pyrefly" in tools and whole:
        err.log("pyrefly check, whole vllm")
        r = results["pyrefly"] = pyrefly_whole(ref)
        c, rep = r["check"], r["report"]
        costs.append(CostResult("pyrefly check -j 2", "whole vllm (type check only)", r["files"], r["lines"],
                                c["cpu_s"], c["wall_s"], c["peak_rss_mib"],
                                f"rc {c['rc']}: {'; '.join(c['summary'])[:160]}"))
        costs.append(CostResult("pyrefly check --report-pysa", "whole vllm (+ the call graph Pysa reads)",
                                r["files"], r["lines"], rep["cpu_s"], rep["wall_s"], rep["peak_rss_mib"],
                                f"rc {rep['rc']}; report {rep['report_mib']:.0f} MiB"))
    load1 = ", ".join(f"{x:.1f}" for x in os.getloadavg())

    console = Console()
    table = Table(title="cases")
    for col in ("tool", "case", "verdict", "CPU s", "answer"):
        table.add_column(col, overflow="fold")
    for key in ("astroid-cases", "jedi-cases", "pysa-fixture", "pysa-vllm", "pysa-sglang"):
        for c in results.get(key, {}).get("cases", []):
            table.add_row(c["tool"], c["case"], c["verdict"], f"{c['cpu_s']:.2f}", c["answer"][:160])
        if "error" in results.get(key, {}):
            table.add_row(key, "-", "error", "-", str(results[key]["error"]))
    console.print(table)
    ct = Table(title="cost")
    for col in ("tool", "what", "files", "lines", "CPU s", "wall s", "lines/CPU s", "peak RSS MiB", "note"):
        ct.add_column(col, overflow="fold")
    for c in costs:
        ct.add_row(c.tool, c.what, str(c.files), f"{c.lines:,}", f"{c.cpu_s:.1f}", f"{c.wall_s:.1f}",
                   f"{c.lines_per_cpu_s:,.0f}", f"{c.peak_rss_mib:,.0f}", c.note)
    console.print(ct)
    if args.output:
        cmd = "python bench/lint_inference.py " + " ".join(argv if argv is not None else sys.argv[1:])
        section = f"## {time.strftime('%Y-%m-%d %H:%M')}: {', '.join(tools)}\n\n"
        section += _markdown(cmd.strip(), ref, results, (load0, load1))
        if args.append and args.output.exists():
            section = args.output.read_text() + "\n" + section
        args.output.write_text(section)
    return 0


if __name__ == "__main__":
    sys.exit(main())
