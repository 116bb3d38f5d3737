"""``attn-contracts verify``: run a kernel and infer what it really returns.

A record is a claim. The verifier builds inputs that make mistakes visible (batch ≠ heads ≠ q_len,
logits large enough that |lse| ≳ 2, a one-key row, an empty row that is not first, shuffled pages,
a strided output buffer), runs the record's adapter, computes the attention in fp64 and *infers*
the observed contract:

* layout: which axis order of the returned LSE matches the reference (``[T, H]``, ``[H, T]``,
  ``[B, H, q_len]``, ``[B, q_len, H]``, padded head slots);
* base: the LSE equals ``ln Σ e^s`` (base e) or ``log2 Σ 2^(s·log2 e)`` (base 2); otherwise the
  best linear fit ``lse ≈ a·ln Σ e^s + c`` is reported, so a shifted or scaled LSE is caught;
* dtype of the LSE, the value an empty row yields, and the output error.

Every declared field that differs is an ``AC008`` finding. torch is imported lazily: the rest of
the contract package stays torch-free.
"""

from __future__ import annotations

import argparse
import json
import math
import time
import warnings
from dataclasses import asdict, dataclass, field, replace
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any

from attn_contracts.findings import Code, Finding
from attn_contracts.records import CapabilityRecord, LseSpec
from attn_contracts.registry import Registry
from attn_contracts.sources import read_file

if TYPE_CHECKING:
    import torch

    from attn_contracts.backends.adapter import Adapter
    from attn_contracts.backends.problem import DecodeProblem

__all__ = ["Observed", "VerifyResult", "add_arguments", "probe_record", "run", "verify_record"]

LOG2E = 1.0 / math.log(2.0)
# Maximum |observed − expected| LSE error accepted, by LSE dtype (reference from the same inputs).
_LSE_TOL = {"float32": 2e-2, "float64": 2e-2, "bfloat16": 0.15, "float16": 2e-2}
# Maximum output error, by output dtype.
_OUT_TOL = {"float32": 1e-3, "float64": 1e-6, "bfloat16": 4e-2, "float16": 8e-3}
_DTYPE_PREFERENCE = ("bfloat16", "float16", "float32")


@dataclass
class Observed:
    """What the kernel really returned."""

    layout: str  # token_head | head_token | unknown
    q_len_axis: bool
    padded_heads: int | None
    base: str  # e | 2 | neither
    base_fit: str
    dtype: str
    empty_row: str | None  # -inf | +inf | nan | finite(...) | None when not testable
    out_error: float
    out_ok: bool
    out_buffer_honoured: bool | None


@dataclass
class VerifyResult:
    name: str
    status: str  # match | differs | skipped
    reason: str = ""
    declared: dict[str, Any] = field(default_factory=dict)
    observed: Observed | None = None
    findings: list[Finding] = field(default_factory=list)
    seconds: float = 0.0


# --- problem ---------------------------------------------------------------------------------------
def _problem_for(record: CapabilityRecord, adapter: Adapter, device: str, seed: int,
                 small: bool) -> DecodeProblem:
    import torch

    from attn_contracts.backends.problem import make_problem

    dec = record.decode
    dtype_name = next((d for d in _DTYPE_PREFERENCE if d in dec.q_dtypes), dec.q_dtypes[0])
    mla = dec.attention == "mla"
    d_v = dec.head_dims[0] if mla else (128 if 128 in dec.head_dims else dec.head_dims[0])
    q_len = 3 if dec.q_len_gt_1 else 1
    # batch ≠ heads ≠ q_len; a one-key row; an empty row (zero keys), never first
    lens = [23, 0, 1, 50, 7] if adapter.allows_empty_rows else [23, 2, 1, 50, 7]
    if small:
        lens = [9, 0, 1] if adapter.allows_empty_rows else [9, 2, 1]
    return make_problem(
        seq_lens=lens, q_len=q_len, num_heads=adapter.num_heads or 4,
        num_kv_heads=1 if mla else 2, head_dim=d_v + 64 if mla else d_v, d_v=d_v,
        dtype=getattr(torch, dtype_name), device=device, attention=dec.attention,
        page_size=adapter.page_size, q_scale=2.0, seed=seed)


def _reference(p: DecodeProblem) -> tuple[torch.Tensor, torch.Tensor]:
    """fp64 ``out [T, H, Dv]`` and natural-log ``lse [T, H]`` (−inf for empty rows)."""
    import torch

    t, h = p.q.shape[:2]
    out = torch.zeros(t, h, p.d_v, dtype=torch.float64)
    lse = torch.full((t, h), -math.inf, dtype=torch.float64)
    for b in range(p.batch):
        k, v = p.request_kv(b)
        if k.shape[0] == 0:
            continue
        rows = slice(b * p.q_len, (b + 1) * p.q_len)
        q = p.q[rows].double().cpu()  # [q, H, D]
        kk = k.double().cpu().repeat_interleave(h // k.shape[1], dim=1)  # [S, H, D]
        vv = v.double().cpu().repeat_interleave(h // v.shape[1], dim=1)
        s = torch.einsum("qhd,shd->qhs", q, kk) * p.sm_scale
        lse[rows] = torch.logsumexp(s, dim=-1)
        out[rows] = torch.einsum("qhs,shd->qhd", torch.softmax(s, dim=-1), vv)
    return out, lse


# --- inference --------------------------------------------------------------------------------------
def _candidates(lse: torch.Tensor, b: int, q: int, t: int, h: int
                ) -> list[tuple[str, bool, int | None, torch.Tensor]]:
    """Every reading of the returned LSE's shape as ``[T, H]``: (layout, q_len_axis, padded, view)."""
    shape = tuple(lse.shape)
    out: list[tuple[str, bool, int | None, torch.Tensor]] = []
    if len(shape) == 2:
        if shape[0] == t and shape[1] >= h:
            out.append(("token_head", False, None if shape[1] == h else shape[1], lse[:, :h]))
        if shape[1] == t and shape[0] >= h:
            out.append(("head_token", False, None if shape[0] == h else shape[0], lse.T[:, :h]))
    elif len(shape) == 3 and shape[0] == b:
        if shape[2] == q and shape[1] >= h:  # [B, H, q]
            view = lse.permute(0, 2, 1)[..., :h].reshape(t, h)
            out.append(("head_token", True, None if shape[1] == h else shape[1], view))
        if shape[1] == q and shape[2] >= h:  # [B, q, H]
            view = lse[..., :h].reshape(t, h)
            out.append(("token_head", True, None if shape[2] == h else shape[2], view))
    return out


def _fit(obs: torch.Tensor, ref: torch.Tensor) -> tuple[float, float, float]:
    """Least-squares ``obs ≈ a·ref + c``: (a, c, max residual)."""
    import torch

    x = torch.stack([ref, torch.ones_like(ref)], dim=1)
    sol = torch.linalg.lstsq(x, obs.unsqueeze(1)).solution.squeeze(1)
    a, c = float(sol[0]), float(sol[1])
    return a, c, float((obs - (a * ref + c)).abs().max())


def _empty_value(view: torch.Tensor, empty: torch.Tensor) -> str | None:
    if not bool(empty.any()):
        return None
    values = view[empty]
    if bool(values.isnan().all()):
        return "nan"
    if bool((values == math.inf).all()):
        return "+inf"
    if bool((values == -math.inf).all()):
        return "-inf"
    return f"finite({float(values[0]):.4g})"


def infer(p: DecodeProblem, out: torch.Tensor, lse: torch.Tensor,
          buffer: torch.Tensor | None) -> Observed:
    """The observed contract of one run of an adapter."""
    import torch

    ref_out, ref_lse = _reference(p)
    t, h = ref_lse.shape
    rows = torch.repeat_interleave(p.seq_lens.cpu().long(), p.q_len)  # keys per token
    live = (rows > 0)[:, None].expand(t, h)
    tol = _LSE_TOL.get(str(lse.dtype).removeprefix("torch."), 2e-2)
    lse64 = lse.detach().double().cpu()
    best: tuple[float, str, bool, int | None, str, torch.Tensor] | None = None
    for layout, qax, padded, view in _candidates(lse64, p.batch, p.q_len, t, h):
        obs, ref = view[live], ref_lse[live]
        for base, scale in (("e", 1.0), ("2", LOG2E)):
            err = float((obs - ref * scale).abs().max()) if obs.numel() else 0.0
            if best is None or err < best[0]:
                best = (err, layout, qax, padded, base, view)
    if best is None:
        return Observed("unknown", False, None, "neither",
                        f"LSE shape {tuple(lse.shape)} fits no [T={t}, H={h}] layout",
                        str(lse.dtype).removeprefix("torch."), None, math.inf, False, None)
    err, layout, qax, padded, base, view = best
    if err > tol:
        a, c, resid = _fit(view[live], ref_lse[live])
        base, fit = "neither", (f"lse ≈ {a:.4f}·ln Σe^s + {c:+.4f} (residual {resid:.3g}); base e "
                                f"is a=1, base 2 is a={LOG2E:.4f}, both with c=0")
    else:
        fit = f"max |error| {err:.2e} as base {base}"
    out_t = out.detach().reshape(t, h, -1).double().cpu()
    out_err = float((out_t[live[:, 0]] - ref_out[live[:, 0]]).abs().max()) if live.any() else 0.0
    out_tol = _OUT_TOL.get(str(out.dtype).removeprefix("torch."), 1e-3)
    honoured = None if buffer is None else out.data_ptr() == buffer.data_ptr()
    return Observed(layout, qax, padded, base, fit, str(lse.dtype).removeprefix("torch."),
                    _empty_value(view, ~live), out_err, out_err <= out_tol, honoured)


# --- comparison ------------------------------------------------------------------------------------
def _declared(spec: LseSpec, q_dtype: str) -> dict[str, Any]:
    return {"base": spec.base, "layout": spec.layout, "q_len_axis": spec.q_len_axis,
            "padded_heads": spec.padded_heads,
            "dtype": q_dtype if spec.dtype == "query" else spec.dtype,
            "empty_row": spec.empty_row}


def compare(record: CapabilityRecord, declared: dict[str, Any], obs: Observed) -> list[Finding]:
    """``AC008`` for every declared field the observation contradicts."""
    observed = {"base": obs.base, "layout": obs.layout, "q_len_axis": obs.q_len_axis,
                "padded_heads": obs.padded_heads, "dtype": obs.dtype, "empty_row": obs.empty_row}
    findings = []
    for key, want in declared.items():
        got = observed[key]
        if key == "empty_row" and got is None:
            continue  # the kernel takes no empty rows: nothing observed
        if got != want:
            extra = f" ({obs.base_fit})" if key == "base" else ""
            findings.append(Finding(
                Code.AC008, record.name,
                f"lse.{key}: declared {want!r}, observed {got!r}{extra}",
                "fix the record (or the kernel); `attn-contracts verify --update F` writes the "
                "observed facts to a file you name", f"lse.{key}", got, repr(want)))
    if not obs.out_ok:
        findings.append(Finding(Code.AC008, record.name, f"output differs from the fp64 reference "
                                f"by {obs.out_error:.3g}", "the kernel or the adapter is wrong",
                                "output", obs.out_error, "within the dtype's tolerance"))
    if obs.out_buffer_honoured is False:
        findings.append(Finding(Code.AC008, record.name, "the adapter ignored the caller's out= "
                                "buffer", field="out", found="new tensor", allowed="out= buffer"))
    return findings


def _cuda_capability_skip(record: CapabilityRecord, device: str) -> str | None:
    if not device.startswith("cuda"):
        return None
    import torch

    major, minor = torch.cuda.get_device_capability(torch.device(device))
    cc = major + minor / 10
    lo, hi = record.decode.min_compute_capability, record.decode.max_compute_capability
    if (lo and cc < float(lo)) or (hi and cc > float(hi)):
        return f"skipped: compute capability {major}.{minor} outside {lo or 'any'}-{hi or 'any'}"
    return None


def verify_record(record: CapabilityRecord, *, device: str = "cpu", seed: int = 0,
                  small: bool = False) -> VerifyResult:
    """Run the record's adapter once and compare what it returns with what the record declares."""
    start = time.perf_counter()
    result = VerifyResult(record.name, "skipped")
    if not isinstance(record.lse, LseSpec):
        result.reason = "skipped: returns no LSE (nothing to verify)"
        return result
    if record.adapter is None:
        result.reason = "skipped: no adapter (a declarative record)"
        return result
    from attn_contracts.backends.adapter import resolve_adapter

    try:
        adapter = resolve_adapter(record.adapter)
    except (ImportError, AttributeError, TypeError) as err:
        result.status, result.reason = "differs", f"adapter {record.adapter} not loadable: {err}"
        result.findings = [Finding(Code.AC008, record.name, result.reason, field="adapter",
                                   found=record.adapter)]
        return result
    reason = adapter.skip_reason(device) or _cuda_capability_skip(record, device)
    if reason:
        result.reason = reason
        return result
    p = _problem_for(record, adapter, device, seed, small)
    buffer = None
    if adapter.accepts_out:  # a strided view inside a larger buffer
        t, h = p.q.shape[:2]
        buffer = p.q.new_full((t, h, 2 * p.d_v), math.nan)[..., ::2]
        p = replace(p, out=buffer)
    q_dtype = str(p.q.dtype).removeprefix("torch.")
    result.declared = _declared(record.lse, q_dtype)
    try:
        out, lse = adapter.run(p)
    except Exception as err:  # a kernel that cannot run on its own declared inputs is a finding
        result.status, result.reason = "differs", f"adapter raised {type(err).__name__}: {err}"
        result.findings = [Finding(Code.AC008, record.name, result.reason, field="run")]
        return result
    result.observed = infer(p, out, lse, buffer)
    result.findings = compare(record, result.declared, result.observed)
    result.status = "differs" if result.findings else "match"
    result.seconds = time.perf_counter() - start
    return result


def probe_record(record: CapabilityRecord, *, device: str | None = None) -> list[Finding]:
    """The engine-startup probe: one small run of the chosen backend on the engine's device."""
    if device is None:
        import torch

        device = "cuda" if torch.cuda.is_available() else "cpu"
    result = verify_record(record, device=device, small=True)
    if result.status == "skipped":
        warnings.warn(f"probe of {record.name} {result.reason}", RuntimeWarning, stacklevel=2)
    return result.findings


# --- CLI -------------------------------------------------------------------------------------------
def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("names", nargs="*", metavar="NAME", help="records to verify")
    p.add_argument("--all", action="store_true", help="every record (with --file: of the files)")
    p.add_argument("--file", action="append", default=[], metavar="F",
                   help="verify records from this TOML/JSON file instead of the catalog")
    p.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument("--update", metavar="F", type=Path,
                   help="write the observed facts and today's date into this JSON records file")


def _describe(d: dict[str, Any] | Observed | None) -> str:
    if d is None:
        return "-"
    x = asdict(d) if isinstance(d, Observed) else d
    layout = x["layout"] + ("+q_len" if x["q_len_axis"] else "")
    layout += f"/{x['padded_heads']}" if x["padded_heads"] else ""
    empty = x["empty_row"] if x["empty_row"] is not None else "n/a"
    text = f"base {x['base']}, {layout}, {x['dtype']}, empty {empty}"
    if isinstance(d, Observed):
        text += f", out err {d.out_error:.1e}"
    return text


def _records(args: argparse.Namespace) -> tuple[list[CapabilityRecord], list[Finding]]:
    if args.file:
        pool: list[CapabilityRecord] = []
        bad: list[Finding] = []
        for f in args.file:
            recs, found = read_file(f)
            pool += recs
            bad += found
    else:
        pool, bad = Registry().records(), []
    if args.all:
        return pool, bad
    by_name = {r.name: r for r in pool}
    missing = [n for n in args.names if n not in by_name]
    if missing:
        raise KeyError(f"unknown record(s) {', '.join(missing)}; known: {', '.join(sorted(by_name))}")
    return [by_name[n] for n in args.names], bad


def _update_file(path: Path, results: list[VerifyResult],
                 records: dict[str, CapabilityRecord], device: str) -> int:
    if path.suffix != ".json":
        raise ValueError(f"--update writes JSON; {path} does not end in .json")
    stamp = f"attn-contracts verify --device {device} on {date.today().isoformat()}"
    out = []
    for r in results:
        if r.observed is None:
            continue
        data = records[r.name].model_dump(mode="json")
        o = r.observed
        data["lse"].update(layout=o.layout if o.layout != "unknown" else data["lse"]["layout"],
                           q_len_axis=o.q_len_axis, padded_heads=o.padded_heads, dtype=o.dtype)
        if o.base in ("e", "2"):
            data["lse"]["base"] = o.base
        if o.empty_row in ("-inf", "+inf", "nan"):
            data["lse"]["empty_row"] = o.empty_row
        data.update(evidence="measured", verified=stamp)
        out.append(data)
    path.write_text(json.dumps(out, indent=2) + "\n")
    return len(out)


def run(args: argparse.Namespace) -> int:
    from attn_contracts.cli import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, print_table

    if not args.names and not args.all:
        print("attn-contracts verify: name records or pass --all")
        return EXIT_USAGE
    try:
        records, bad = _records(args)
    except KeyError as err:
        print(f"attn-contracts verify: {err.args[0]}")
        return EXIT_USAGE
    results = [verify_record(r, device=args.device, seed=args.seed) for r in records]
    findings = bad + [f for r in results for f in r.findings]
    if args.format == "json":
        print(json.dumps({"ok": not findings, "results": [
            {"name": r.name, "status": r.status, "reason": r.reason, "declared": r.declared,
             "observed": asdict(r.observed) if r.observed else None, "seconds": r.seconds,
             "findings": [f.to_json() for f in r.findings]} for r in results]}, indent=2))
    else:
        print_table(f"verify on {args.device}", ["record", "declared", "observed", "verdict"], [
            [r.name, _describe(r.declared or None), _describe(r.observed),
             r.reason if r.status == "skipped" else
             ("ok" if r.status == "match" else "DIFFERS: " + ", ".join(f.field for f in r.findings))]
            for r in results])
        for f in findings:
            print(f.render())
        ran = sum(r.status != "skipped" for r in results)
        print(f"{ran} verified, {len(results) - ran} skipped, {len(findings)} finding(s)")
    if args.update:
        try:
            n = _update_file(args.update, results, {r.name: r for r in records}, args.device)
        except (ValueError, OSError) as err:
            print(f"attn-contracts verify: {err}")
            return EXIT_USAGE
        print(f"wrote {n} record(s) to {args.update}")
    return EXIT_FINDINGS if findings else EXIT_OK
