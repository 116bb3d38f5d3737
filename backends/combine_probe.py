"""What a combine function really assumes: feed it partial states whose true LSE is known, and
infer its base, layout, empty-row policy and launch limit.

Probes (all on ``T = H = 4``, so an ``[H, T]`` and a ``[T, H]`` reading are both shape-valid and
differ in value; ``N = 2`` for a two-argument merge, else 3; fresh random partials, |lse| ≈ 3):

1. **base and layout** — the true natural-log LSE, and the same × log2 e, each as ``[N, T, H]``
   and as ``[N, H, T]``; every reading whose output matches the fp64 reference
   (:func:`~attn_contracts.combine.merge_reference`) names a base and a layout the function
   assumes. A keyword-base consumer is run once per keyword value and once without the keyword.
   The merged LSE, if returned, is matched against the reference in base e and base 2.
2. **empty shards** — in the base and layout found, a shard (the first in some rows, the last in
   others) carries −inf, +inf or NaN with a finite partial: a value is *read as empty* if the output
   still matches the reference that gives that shard weight 0.
3. **0·NaN** — the same with the empty shards' partials NaN-poisoned.
4. **all-empty rows** — every shard empty in some rows: the output there is zero, NaN or finite
   garbage.
5. **launch limit** (CUDA functions by default) — in child processes, since a failed launch can
   poison the CUDA context (FlashInfer's merge at 128 heads × 128): heads doubled from 4 at a fixed
   head dim (128 where allowed) until a launch fails or merges wrongly, then the record's predicted
   bound and its successor, then bisection; at most 10 launches. ``N = 2 < T = 4``, so a function
   with a separate many-states path (FlashInfer's ``merge_states`` for ``N ≥ T``) takes its
   per-token-block path, which is the bounded one.

Loading, trust and the judgement are shared with producers (:mod:`attn_contracts.backends.runner`,
:func:`attn_contracts.judge.compare_consumer`); only the observation is here.
"""

from __future__ import annotations

import ast
import json
import math
import os
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import torch

from attn_contracts.backends.adapter import ConsumerAdapter
from attn_contracts.backends.adapter import load_adapter
from attn_contracts.backends.problem import tolerance
from attn_contracts.combine.reference import merge_reference
from attn_contracts.consumer import ConsumerRecord
from attn_contracts.consumer import FixedBase
from attn_contracts.findings import error_text
from attn_contracts.judge import ConsumerObserved
from attn_contracts.judge import LimitProbe
from attn_contracts.judge import predicted_max_heads
from attn_contracts.records import LOG2E
from attn_contracts.versions import in_range

__all__ = ["MAX_LAUNCHES", "observe_combine", "probe_limit", "version_skip"]

T = H = 4  # square, so both layout readings are shape-valid
# a merged LSE comes back in fp32 (relative to 1 + |lse|)
_LSE_TOL = tolerance("float32").lse
MAX_LAUNCHES = 10
_PROBE_HEADS = (4, 8, 16, 32, 64, 128, 256)
_CHILD_TIMEOUT_S = 300.0  # the first launch may JIT-compile (FlashInfer: 15-25 s on an H200)
_MARKERS = {"-inf": -math.inf, "+inf": math.inf, "nan": math.nan}


@dataclass(frozen=True)
class _Probe:
    """One problem: partials, the true natural-log LSE and the reference merge."""

    o: torch.Tensor  # [N, T, H, D]
    lse: torch.Tensor  # [N, T, H], natural log; markers where shards are empty
    ref_out: torch.Tensor  # [T, H, D] fp64
    ref_lse: torch.Tensor  # [T, H] fp64, natural log


def _problem(n: int, t: int, h: int, d: int, dtype: torch.dtype, seed: int) -> _Probe:
    g = torch.Generator().manual_seed(seed)
    o = torch.randn(n, t, h, d, generator=g).to(dtype)
    lse = torch.randn(n, t, h, generator=g, dtype=torch.float64) * 2.0 + 3.0
    ref_out, ref_lse = merge_reference(o, lse, base="e")
    return _Probe(o, lse, ref_out, ref_lse)


def _with(p: _Probe, o: torch.Tensor | None = None, lse: torch.Tensor | None = None) -> _Probe:
    o = p.o if o is None else o
    lse = p.lse if lse is None else lse
    ref_out, ref_lse = merge_reference(o, lse, base="e")  # the policy: NaN/+inf/−inf are empty
    return _Probe(o, lse, ref_out, ref_lse)


def _present(lse: torch.Tensor, base: str, layout: str, dtype: torch.dtype,
             device: str) -> torch.Tensor:
    """The natural-log ``[N, T, H]`` as the function is asked to read it."""
    x = lse * (LOG2E if base == "2" else 1.0)  # ±inf and NaN stay what they are
    if layout == "head_token":
        x = x.transpose(1, 2)  # [N, H, T]
    return x.contiguous().to(dtype).to(device)


def _read_lse_out(lse_out: Any, layout: str) -> torch.Tensor | None:
    if lse_out is None:
        return None
    x: torch.Tensor = lse_out.detach().double().cpu()
    return x.T if layout == "head_token" and x.dim() == 2 else x


def _err(out: Any, ref: torch.Tensor, rows: torch.Tensor | None = None) -> float:
    """Max |out − ref| (over ``rows`` [T, H] only, if given); NaN and a wrong shape are inf."""
    x = out.detach().double().cpu()
    if tuple(x.shape) != tuple(ref.shape):
        return math.inf
    diff = (x - ref).abs()
    if rows is not None:
        diff = diff[rows]
    if diff.numel() == 0:
        return 0.0
    return math.inf if bool(diff.isnan().any()) else float(diff.max())


class _Runner:
    """The adapter, the record's call keywords and the probe geometry of one verification."""

    def __init__(self, record: ConsumerRecord, adapter: ConsumerAdapter, device: str, seed: int):
        self.record, self.adapter, self.device, self.seed = record, adapter, device, seed
        lim = record.limits
        n = 2 if record.lse.states == "separate" else (4 if lim.pow2_states else 3)
        self.n = min(n, lim.max_states) if lim.max_states else n
        d = adapter.head_dim or (min(lim.head_dims) if lim.head_dims else 8)
        self.d = 1 << (d - 1).bit_length() if lim.pow2_head_dim else d
        self.dtype: torch.dtype = getattr(torch, adapter.dtype)
        lse_dtypes = record.lse.dtypes
        self.lse_dtype: torch.dtype = getattr(
            torch, "float32" if "float32" in lse_dtypes else lse_dtypes[0])
        self.tol = tolerance(adapter.dtype).out
        self.errors: list[str] = []  # what raised, for the result's reason

    def calls(self) -> list[tuple[str, dict[str, Any]]]:
        """``(literal, kwargs)`` per call to observe: "" is the fixed-base call or the omission."""
        base = self.record.base
        if isinstance(base, FixedBase):
            return [("", {})]
        out = [(lit, {base.keyword: ast.literal_eval(lit)}) for lit, _ in base.values]
        return [*out, ("", {})]

    def run(self, p: _Probe, base: str, layout: str, kwargs: dict[str, Any]
            ) -> tuple[Any, Any] | None:
        try:
            out, lse_out = self.adapter.run(p.o.to(self.device),
                                            _present(p.lse, base, layout, self.lse_dtype,
                                                     self.device), **kwargs)
            if self.device.startswith("cuda"):
                torch.cuda.synchronize()
        except KeyboardInterrupt:
            raise
        except BaseException as err:  # a refusal of one reading is an observation, not a crash
            self.errors.append(error_text(err))
            return None
        return out, lse_out


def _lse_base(lse_out: torch.Tensor | None, ref_lse: torch.Tensor) -> str | None:
    if lse_out is None or tuple(lse_out.shape) != tuple(ref_lse.shape):
        return None if lse_out is None else "neither"
    for base, scale in (("e", 1.0), ("2", LOG2E)):
        want = ref_lse * scale
        if bool(((lse_out - want).abs() <= _LSE_TOL * (1 + want.abs())).all()):
            return base
    return "neither"


_READINGS = tuple((b, lay) for b in ("e", "2") for lay in ("token_head", "head_token"))


@dataclass
class _Reading:
    """Probe 1 for one call: the error of each (base, layout) reading and its merged LSE."""

    errors: dict[tuple[str, str], float]
    lse_outs: dict[tuple[str, str], Any]
    raised: bool

    def matches(self, tol: float) -> list[tuple[str, str]]:
        return [k for k, e in self.errors.items() if e <= tol]

    def base(self, tol: float) -> str:
        bases = sorted({b for b, _ in self.matches(tol)})
        if len(bases) == 1:
            return bases[0]
        if not bases:
            return "raised" if self.raised and not self.lse_outs else "neither"
        return "ambiguous"


def _read_all(r: _Runner, p: _Probe, kwargs: dict[str, Any]) -> _Reading:
    reading = _Reading({}, {}, False)
    for key in _READINGS:
        res = r.run(p, *key, kwargs)
        reading.errors[key] = math.inf if res is None else _err(res[0], p.ref_out)
        reading.raised |= res is None
        if res is not None:
            reading.lse_outs[key] = res[1]
    return reading


def _empty_rows() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """[T, H] masks: rows where the last shard is empty, where the first is, where all are."""
    t, h = torch.meshgrid(torch.arange(T), torch.arange(H), indexing="ij")
    k = (t + h) % 3
    return k == 0, k == 1, k == 2


def _mark(p: _Probe, value: float, last: torch.Tensor, first: torch.Tensor) -> torch.Tensor:
    lse = p.lse.clone()
    lse[-1][last] = value
    lse[0][first] = value
    return lse


def _observe_empty(r: _Runner, p: _Probe, base: str, layout: str, kwargs: dict[str, Any]
                   ) -> tuple[tuple[str, ...], str | None, bool | None]:
    last, first, every = _empty_rows()
    read: list[str] = []
    for name, value in _MARKERS.items():
        q = _with(p, lse=_mark(p, value, last, first))
        res = r.run(q, base, layout, kwargs)
        if res is not None and _err(res[0], q.ref_out) <= r.tol:
            read.append(name)
    marker = read[0] if read else "-inf"
    lse = _mark(p, _MARKERS[marker], last, first)
    nan_safe: bool | None = None
    if read:  # weight 0 only where the marker really reads as empty
        o = p.o.clone()
        o[-1][last] = math.nan
        o[0][first] = math.nan
        q = _with(p, o=o, lse=lse)
        res = r.run(q, base, layout, kwargs)
        nan_safe = res is not None and _err(res[0], q.ref_out) <= r.tol
    lse = lse.clone()
    lse[:, every] = _MARKERS[marker]
    res = r.run(_with(p, lse=lse), base, layout, kwargs)
    all_empty: str | None = None
    if res is not None:
        x = res[0].detach().double().cpu()[every]
        all_empty = ("nan" if bool(x.isnan().any()) else
                     "zero" if bool((x.abs() <= r.tol).all()) else "finite")
    return tuple(read), all_empty, nan_safe


def observe_combine(record: ConsumerRecord, adapter: ConsumerAdapter, adapter_path: str, *,
                    device: str, seed: int, probe_limits: bool | None
                    ) -> tuple[ConsumerObserved, list[str]]:
    """The observation, and what raised on the way (a refusal of one reading is an observation;
    a function that raises on every call is the pipeline's to report)."""
    r = _Runner(record, adapter, device, seed)
    probe = adapter.wants_limit_probe() if probe_limits is None else probe_limits
    return _observe(r, adapter_path, probe), r.errors


def _observe(r: _Runner, adapter_path: str | None, probe_limits: bool) -> ConsumerObserved:
    p = _problem(r.n, T, H, r.d, r.dtype, r.seed)
    readings = {literal: _read_all(r, p, kwargs) for literal, kwargs in r.calls()}
    bases = {literal: rd.base(r.tol) for literal, rd in readings.items()}
    # the primary call: the first that ran (a keyword value before the omission)
    call = next((lit for lit, b in bases.items() if b != "raised"), "")
    main = readings[call]
    finite = [e for e in main.errors.values() if math.isfinite(e)]
    obs = ConsumerObserved(
        bases=bases, layouts=tuple(sorted({lay for _, lay in main.matches(r.tol)})),
        out_error=min(finite, default=math.inf),
        errors={f"{b}/{lay}": e for (b, lay), e in main.errors.items()}, reads_as_empty=None,
        all_empty=None, zero_weight_nan_safe=None, returns_lse=None, lse_base=None, call=call)
    if not main.matches(r.tol):
        return obs
    base, layout = main.matches(r.tol)[0]
    kwargs = dict(r.calls())[call]
    lse_out = main.lse_outs[(base, layout)]
    obs.returns_lse = lse_out is not None
    obs.lse_base = _lse_base(_read_lse_out(lse_out, layout), p.ref_lse)
    obs.reads_as_empty, obs.all_empty, obs.zero_weight_nan_safe = _observe_empty(
        r, p, base, layout, kwargs)
    if probe_limits and adapter_path is not None:
        obs.limit = probe_limit(r.record, adapter_path, device=r.device, dtype=r.adapter.dtype,
                                base=base, layout=layout, kwargs=kwargs, seed=r.seed)
    return obs


# --- the launch-limit probe (child processes) ----------------------------------------------------
def _probe_head_dim(record: ConsumerRecord) -> int:
    dims = record.limits.head_dims
    return 128 if not dims or 128 in dims else max(dims)


def _child(spec: dict[str, Any], heads: list[int]) -> list[tuple[int, bool, str]]:
    """Run the launches in a fresh interpreter; a launch that kills it counts as failed."""
    code = ("import sys; from attn_contracts.backends.combine_probe import _child_main; "
            "sys.exit(_child_main(sys.argv[1]))")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    arg = json.dumps(dict(spec, heads=heads))
    try:
        proc = subprocess.run([sys.executable, "-c", code, arg], capture_output=True, text=True,
                              timeout=_CHILD_TIMEOUT_S, env=env, check=False)
        stdout, tail = proc.stdout, f"exit code {proc.returncode}: {proc.stderr[-300:].strip()}"
    except subprocess.TimeoutExpired as err:
        stdout = err.stdout.decode() if isinstance(err.stdout, bytes) else (err.stdout or "")
        tail = f"timed out after {_CHILD_TIMEOUT_S:.0f} s"
    seen = [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]
    results = [(int(s["heads"]), bool(s["ok"]), str(s["detail"])) for s in seen]
    if len(results) < len(heads) and (not results or results[-1][1]):
        results.append((heads[len(results)], False, f"the child died: {tail}"))
    return results


def _child_main(arg: str) -> int:
    """In the child: one launch per head count, stop at the first that fails."""
    spec = json.loads(arg)
    adapter = load_adapter(spec["adapter"], ConsumerAdapter)  # the parent checked the allowlist
    dtype = getattr(torch, spec["dtype"])
    for h in spec["heads"]:
        p = _problem(spec["n"], spec["t"], h, spec["head_dim"], dtype, spec["seed"])
        lse = p.lse * (LOG2E if spec["base"] == "2" else 1.0)
        if spec["layout"] == "head_token":
            lse = lse.transpose(1, 2)
        try:
            out, _ = adapter.run(p.o.to(spec["device"]),
                                 lse.contiguous().float().to(spec["device"]), **spec["kwargs"])
            if spec["device"].startswith("cuda"):
                torch.cuda.synchronize()
            err = _err(out, p.ref_out)
            ok = err <= tolerance(spec["dtype"]).out
            detail = "" if ok else f"launched but merged wrongly (max |error| {err:.3g})"
        except Exception as e:  # the launch failure is the measurement
            ok, detail = False, f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        print(json.dumps({"heads": h, "ok": ok, "detail": detail}), flush=True)
        if not ok:
            # leave at once: tearing down a poisoned CUDA context can hang or abort, and the
            # measurement is already out
            os._exit(0)
    return 0


def probe_limit(record: ConsumerRecord, adapter_path: str, *, device: str, dtype: str,
                base: str, layout: str, kwargs: dict[str, Any], seed: int = 0) -> LimitProbe:
    """The bounded launch probe: doubling, then the record's bound and its successor, then
    bisection; at most :data:`MAX_LAUNCHES` launches, each failure ends its child process."""
    d = _probe_head_dim(record)
    spec = dict(adapter=adapter_path, device=device, dtype=dtype, head_dim=d, n=2, t=T,
                base=base, layout=layout, kwargs=kwargs, seed=seed)
    results = _child(spec, list(_PROBE_HEADS))
    ok = [h for h, good, _ in results if good]
    failed = [(h, why) for h, good, why in results if not good]
    lo, hi = (max(ok) if ok else None), (failed[0][0] if failed else None)
    detail = failed[0][1] if failed else ""
    launches = len(results)
    if hi is not None:
        predicted = predicted_max_heads(record, d, dtype)
        wanted = [predicted[0], predicted[0] + 1] if predicted else []
        while launches < MAX_LAUNCHES and hi - (lo or 0) > 1:
            inside = [w for w in wanted if (lo or 0) < w < hi]
            h = inside[0] if inside else ((lo or 0) + hi) // 2
            wanted = [w for w in wanted if w != h]
            (_, good, why), = _child(spec, [h])
            launches += 1
            if good:
                lo = h
            else:
                hi, detail = h, why
    return LimitProbe(d, dtype, lo, hi, launches, detail)


# --- one record ----------------------------------------------------------------------------------
def version_skip(record: ConsumerRecord) -> str | None:
    """Skip a record whose ``library_version`` excludes the installed library."""
    if not record.library_version:
        return None
    from importlib import metadata

    dists = metadata.packages_distributions().get(record.library, [record.library])
    for dist in dists:
        try:
            version = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
        if not in_range(record.library_version, version, unparsed=False):
            return f"{record.library} {version} is outside {record.library_version}"
        return None
    return None
