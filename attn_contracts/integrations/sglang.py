"""SGLang: its attention backends mapped to kernel records, read statically from its sources.

SGLang 0.5.23 cannot be installed beside this project's CPU torch: its wheel requires
``torch==2.14.1`` (on x86_64 a CUDA build), ``torchaudio==2.11.0``, ``cuda-python>=13.0`` and
``flashinfer_python[cu13]==0.7.2`` (its METADATA), and its sources put on the path of the vLLM venv
stop at the first missing dependency (``import sglang.srt.layers.attention.attention_registry``:
``No module named 'orjson'``, from ``sglang/srt/utils/common.py:85``). So nothing here imports it:
the sources of an installed package (found by ``importlib.util.find_spec``, which runs none of its
code) or of an unpacked wheel (``root=``) are parsed with ``ast``.

SGLang declares no LSE base on its backends. Its MLA DCP combine (``forward_mla.py``) passes
``is_lse_base_on_e=is_mla_dcp_lse_base_on_e(self.current_attention_backend)``, a function that
answers True for the names in one set literal; the base a backend's LSE is combined with is read
from that set, and compared with the records of the kernel the backend calls under DCP.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

from attn_contracts.checks import check_edge
from attn_contracts.findings import Code, Finding, Severity
from attn_contracts.integrations._report import EngineReport
from attn_contracts.registry import Registry, UnknownRecordError
from attn_contracts.sources import FileReadError, read_bytes

__all__ = ["MAPPING", "SglangReport", "find_root", "report"]

_REGISTRY = "srt/layers/attention/attention_registry.py"
_FORWARD_MLA = "srt/models/deepseek_common/attention_forward_methods/forward_mla.py"
_BASE_FN = "is_mla_dcp_lse_base_on_e"
_CONSUMER = "sglang.cp_lse_ag_out_rs_mla"

#: SGLang 0.5.23: backend name → (kernel records under MLA DCP, where the backend calls them)
MAPPING: dict[str, tuple[tuple[str, ...], str]] = {
    "flashinfer": (("flashinfer.mla.fa2", "flashinfer.mla.fa3"),
                   "srt/layers/attention/flashinfer_mla_backend.py:L825-L837 (decode_wrapper.run("
                   "return_lse=decode and dcp_enabled): BatchMLAPagedAttentionWrapper)"),
    "trtllm_mla": (("flashinfer.mla.trtllm_gen",),
                   "srt/layers/attention/trtllm_mla_backend.py:L1036-L1056 ("
                   "trtllm_batch_decode_with_kv_cache_mla(return_lse=...), return_lse_base unset)"),
    "cutedsl_mla": (("flashinfer.mla.cute_dsl",),
                    "srt/layers/attention/cutedsl_mla_backend.py:L120-L136 ("
                    "trtllm_batch_decode_with_kv_cache_mla(backend='cute-dsl', enable_dcp=True))"),
}
MAPPED_RELEASE = "0.5.23"


class SglangReport(EngineReport):
    """One SGLang attention backend, as the ``engine`` command prints it."""


def find_root(root: str | Path | None = None) -> Path:
    """The ``sglang`` package folder: ``root`` (the package, or a folder holding it), else the
    installed one, located without importing it."""
    if root is not None:
        path = Path(root)
        path = path / "sglang" if (path / "sglang" / _REGISTRY).exists() else path
        if not (path / _REGISTRY).exists():
            raise FileNotFoundError(f"{root}: no SGLang sources ({_REGISTRY} missing)")
        return path
    spec = importlib.util.find_spec("sglang")
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError("SGLang is not installed; pass --root with an unpacked wheel "
                                "(pip download --no-deps sglang==0.5.23, then unzip it)")
    return Path(next(iter(spec.submodule_search_locations)))


class _Unparsable(Exception):
    """A source file of the tree that cannot be read or parsed: its ``AC000`` finding."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


def _parse(root: Path, rel: str) -> ast.Module:
    """The syntax tree of ``root/rel``, or :class:`_Unparsable` with one ``AC000`` located where
    the parser stopped (a source that does not parse, is not UTF-8 or not a regular file, or
    nests too deeply): the report goes on without what the file would have said."""
    where = f"sglang/{rel}"
    try:
        text = read_bytes(root / rel, "source file").decode("utf-8")
        return ast.parse(text, filename=str(root / rel))
    except SyntaxError as err:
        line, col, why = err.lineno or 1, err.offset or 1, f"does not parse: {err.msg}"
    except FileReadError as err:
        line, col, why = 1, 1, str(err).removeprefix(f"{root / rel}: ")
    except UnicodeDecodeError as err:
        line, col, why = 1, 1, f"not UTF-8 (byte offset {err.start})"
    except (RecursionError, MemoryError) as err:
        line, col, why = 1, 1, f"nested too deeply to parse ({type(err).__name__})"
    raise _Unparsable(Finding(Code.AC000, where, why, location=f"{where}:{line}:{col}"))


def _version(root: Path) -> str:
    """The release of the sources: the wheel's (or installation's) dist-info beside the package,
    else ``version.py`` (which a wheel may leave at its dev placeholder)."""
    for meta in sorted(root.parent.glob("sglang-*.dist-info/METADATA")):
        for line in meta.read_text(errors="replace").splitlines():
            if line.startswith("Version:"):
                return line.split(":", 1)[1].strip()
    version_file = root / "version.py"
    if version_file.exists():
        try:
            tree = _parse(root, "version.py")
        except _Unparsable:
            return "?"  # the release is then unknown, as for a tree without one
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and any(
                    isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets):
                return str(node.value.value)
    return "?"


def registered_backends(root: Path) -> dict[str, int]:
    """``@register_attention_backend("name")`` in the registry: name → line."""
    return _registered(_parse(root, _REGISTRY))


def _registered(tree: ast.Module) -> dict[str, int]:
    found: dict[str, int] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for dec in node.decorator_list:
                if (isinstance(dec, ast.Call) and isinstance(dec.func, ast.Name)
                        and dec.func.id == "register_attention_backend" and dec.args
                        and isinstance(dec.args[0], ast.Constant)):
                    found[str(dec.args[0].value)] = dec.lineno
    return found


def base_e_backends(root: Path) -> tuple[set[str], int]:
    """The set literal ``is_mla_dcp_lse_base_on_e`` tests membership in, and its line."""
    return _base_e(_parse(root, _FORWARD_MLA))


def _base_e(tree: ast.Module) -> tuple[set[str], int]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == _BASE_FN:
            for sub in ast.walk(node):
                if isinstance(sub, ast.Set):
                    return {str(e.value) for e in sub.elts if isinstance(e, ast.Constant)}, \
                        sub.lineno
    raise ValueError(f"{_FORWARD_MLA}: no {_BASE_FN} with a set literal (SGLang moved it)")


def _combine_lines(tree: ast.Module) -> list[int]:
    """Lines of the MLA DCP combine calls that pass ``is_lse_base_on_e=is_lse_base_on_e``."""
    return sorted(node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call)
                  and isinstance(node.func, ast.Name)
                  and node.func.id in ("cp_lse_ag_out_rs_mla", "dcp_a2a_lse_reduce")
                  and any(k.arg == "is_lse_base_on_e" for k in node.keywords))


def report(backend: str | None = None, *, root: str | Path | None = None) -> list[SglangReport]:
    """One row per registered SGLang attention backend (or the one named). A source that does
    not parse is one ``AC000`` (on the first row) and the report goes on: without the registry
    there is one row for it; without ``forward_mla.py`` no base is known, so no edge is checked."""
    pkg = find_root(root)
    version = _version(pkg)
    try:
        backends = _registered(_parse(pkg, _REGISTRY))
    except _Unparsable as err:
        return [SglangReport("(registry)", f"sglang/{_REGISTRY}", findings=[err.finding],
                             note="the registry does not parse: no backend is known")]
    if backend is not None and backend not in backends:
        raise ValueError(f"unknown SGLang backend {backend!r}; known: {', '.join(sorted(backends))}")
    unparsed: Finding | None = None
    try:
        forward = _parse(pkg, _FORWARD_MLA)
    except _Unparsable as err:
        unparsed = err.finding
        base_e: set[str] | None = None
        set_line, calls = 1, []
    else:
        (base_e, set_line), calls = _base_e(forward), _combine_lines(forward)
    where = f"sglang/{_FORWARD_MLA}:{set_line}"
    registry = Registry()
    consumer = registry.consumer(_CONSUMER)
    rows: list[SglangReport] = []
    for name, line in backends.items():
        if backend is not None and name != backend:
            continue
        subject = f"sglang.{name}"
        first = not rows
        literal = None if base_e is None else "True" if name in base_e else "False"
        row = SglangReport(name, f"sglang/{_REGISTRY}:{line}", declared={
            "declared_at": f"unknown: {_FORWARD_MLA.rsplit('/', 1)[-1]} does not parse"}
            if literal is None else {
            "is_lse_base_on_e": literal, "declared_at": where})
        if first and unparsed is not None:  # said once, on the first row
            row.findings.append(unparsed)
        if version not in (MAPPED_RELEASE, "?") and first:
            row.findings.append(Finding(
                Code.AC013, subject, f"SGLang {version}: the mapping was read at {MAPPED_RELEASE}",
                severity=Severity.WARNING, field="sglang", found=version))
        if literal is None:  # forward_mla.py did not parse: the combine's keyword is unknown
            row.records = list(MAPPING.get(name, ((), ""))[0])
            row.note = "edge not checked: the combine's keyword is unknown"
            rows.append(row)
            continue
        if name not in MAPPING:
            row.findings.append(Finding(
                Code.AC013, subject, f"backend {name} is not in the SGLang {MAPPED_RELEASE} "
                f"mapping; its MLA DCP LSE would be combined as base {'e' if literal == 'True' else 2}"
                f" ({where})", severity=Severity.WARNING, field="backend", found=name))
            rows.append(row)
            continue
        records, source = MAPPING[name]
        row.note = source
        for rec in records:
            try:
                kernel = registry.get(rec)
            except UnknownRecordError:
                row.findings.append(Finding(Code.AC013, subject, f"mapped record {rec!r} is not "
                                            "in the catalog", severity=Severity.WARNING))
                continue
            row.records.append(rec)
            for f in check_edge(kernel, consumer, keyword_value=literal):
                # base and layout: errors; the rest (empty rows, dtype, limits) warnings, since
                # this mapping does not read what the call site does about them (SGLang zeroes
                # trtllm-gen's empty rows after the kernel, a fix-up AC030 cannot see)
                severity = Severity.ERROR if f.code in (Code.AC016, Code.AC017) else \
                    Severity.WARNING
                row.findings.append(
                    Finding(f.code, f.subject, f"{f.message} (the keyword is "
                            f"{_BASE_FN}({name!r}) = {literal}, {where}; calls at "
                            f"lines {', '.join(map(str, calls))})", severity=severity,
                            hint=f.hint, field=f.field, found=f.found, allowed=f.allowed,
                            location=where))
        row.edges = [f"{_CONSUMER} [is_lse_base_on_e={_BASE_FN}(backend) = {literal}]"]
        rows.append(row)
    return rows
