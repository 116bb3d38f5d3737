"""The verifier's judge: what a record declares against what a run observed (torch-free).

A record is a claim. :mod:`attn_contracts.backends.runner` runs the record's adapter on inputs
that make mistakes visible and infers what it observed — for a producer (a kernel) an
:class:`Observed`, for a consumer (a combine function) a :class:`ConsumerObserved` — and this
module compares the two field by field, under the record's own dotted field names. Every promise a
run breaks is an ``AC008`` finding; both ends report through one :class:`VerifyResult`.

A consumer record may be *conservative*: declaring fewer values as empty, NaN-unsafe, an all-empty
row as ``"nan"`` or ``"undefined"``, or a stricter launch limit than the function has is safe — an
edge check then asks for more sanitising than needed, never less. Such differences are **notes**.
A record that promises more than the function does (a base or layout it does not read, an empty
value it does not treat as empty, 0·NaN safety it lacks, a launch it cannot make) is an ``AC008``
finding: that is the direction in which tokens silently go wrong.
"""

from __future__ import annotations

from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Generic
from typing import Literal
from typing import TypeVar

from attn_contracts.consumer import ConsumerRecord
from attn_contracts.consumer import FixedBase
from attn_contracts.findings import Code
from attn_contracts.findings import Finding
from attn_contracts.records import CapabilityRecord
from attn_contracts.records import LseSpec

__all__ = ["ConsumerObserved", "ConsumerVerifyResult", "EmptyRows", "LimitProbe", "Observed",
           "VerifyResult", "compare", "compare_consumer", "conservative_notes",
           "declared_consumer", "declared_lse", "describe", "describe_consumer",
           "predicted_max_heads", "producer_notes"]

Obs = TypeVar("Obs")


@dataclass
class VerifyResult(Generic[Obs]):
    """One record's verification, whatever end of the edge it describes.

    ``status``: ``match`` | ``differs`` | ``skipped``. ``observed``: what the run saw (None when
    nothing ran). ``unavailable``: skipped because something the run needs is not installed or
    not there (torch, FlashInfer, the device): the CLI exits 2 for it unless told to skip."""

    name: str
    status: Literal["match", "differs", "skipped"]
    reason: str = ""
    declared: dict[str, Any] = field(default_factory=dict)
    observed: Obs | None = None
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    unavailable: bool = False


# --- producers ----------------------------------------------------------------------------------
@dataclass
class EmptyRows:
    """Both facts of an empty row, from the probe of a request with ``seq_lens == 0`` whose
    output buffer is filled with NaN (then with a finite sentinel, to tell a row the kernel
    wrote NaN into from one it never wrote), and the caching allocator poisoned the same way for
    a kernel that allocates its own output.

    ``lse``: ``-inf`` | ``+inf`` | ``nan`` | ``finite(x)`` | ``raised``. ``out``: ``zero`` |
    ``nan`` (written, both fills) | ``undefined`` (the fill came back: never written) |
    ``finite(x)`` | ``raised``. ``documented``: the kernel's contract takes a zero-key request
    (the adapter's ``allows_empty_rows``); an observation of an undocumented input is reported,
    never written into a record as a promise."""

    lse: str
    out: str
    documented: bool
    buffer_honoured: bool | None
    detail: str = ""


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
    #: the empty-row probe (None: not run, e.g. the startup probe)
    empty: EmptyRows | None = None


def declared_lse(spec: LseSpec, q_dtype: str) -> dict[str, Any]:
    """The declared LSE facts a run can observe (``dtype = "query"`` resolved to the query's;
    an absent ``empty_out`` is ``None``)."""
    return {"base": spec.base, "layout": spec.layout, "q_len_axis": spec.q_len_axis,
            "padded_heads": spec.padded_heads,
            "dtype": q_dtype if spec.dtype == "query" else spec.dtype,
            "empty_row": spec.empty_row, "empty_out": spec.empty_out}


_DEFINITE = ("-inf", "+inf", "nan")


def _empty_findings(record: CapabilityRecord, declared: dict[str, Any], obs: Observed
                    ) -> list[Finding]:
    """``AC008`` for an empty-row promise the probe broke: an LSE value other than the declared
    one (where the main probe saw none), or a declared ``zero`` output that was not written 0.
    ``undefined`` and ``nan`` promise nothing a reader may rely on, so nothing contradicts them."""
    e = obs.empty
    if e is None:
        return []
    out = []
    want_lse = declared.get("empty_row")
    if obs.empty_row is None and want_lse in _DEFINITE and e.lse not in ("raised", want_lse):
        out.append(Finding(Code.AC008, record.name, f"lse.empty_row: declared {want_lse!r}, a "
                           f"zero-length request gave {e.lse!r}", field="lse.empty_row",
                           found=e.lse, allowed=repr(want_lse),
                           hint="fix the record (or the kernel)"))
    if declared.get("empty_out") == "zero" and e.out != "zero" and e.out != "raised":
        out.append(Finding(Code.AC008, record.name, f"lse.empty_out: declared 'zero', the "
                           f"output rows of a zero-length request were {e.out!r} ({e.detail})",
                           field="lse.empty_out", found=e.out, allowed="'zero'",
                           hint="declare lse.empty_out = 'undefined' (a combine then masks those "
                           "rows) or fix the kernel"))
    return out


def producer_notes(record: CapabilityRecord, obs: Observed) -> list[str]:
    """What the empty-row probe saw where the record promises nothing (or less)."""
    spec, e = record.lse, obs.empty
    if e is None or not isinstance(spec, LseSpec):
        return []
    where = "a documented zero-length request" if e.documented else (
        "a zero-length request the kernel does not document (not a promise)")
    notes = []
    if spec.empty_out is None and e.out != "raised":
        notes.append(f"lse.empty_out: absent (read as 'undefined'); {where} gave {e.out!r}")
    elif spec.empty_out in ("nan", "undefined") and e.out == "zero":
        notes.append(f"lse.empty_out: declared {spec.empty_out!r}; {where} gave 'zero'")
    if spec.empty_row == "undefined" and e.lse in _DEFINITE:
        notes.append(f"lse.empty_row: declared 'undefined'; {where} gave {e.lse!r}")
    if e.out == "raised":
        notes.append(f"a zero-length request raised: {e.detail}")
    return notes


def compare(record: CapabilityRecord, declared: dict[str, Any], obs: Observed) -> list[Finding]:
    """``AC008`` for every declared field the observation contradicts."""
    observed = {"base": obs.base, "layout": obs.layout, "q_len_axis": obs.q_len_axis,
                "padded_heads": obs.padded_heads, "dtype": obs.dtype, "empty_row": obs.empty_row}
    findings = _empty_findings(record, declared, obs)
    for key, want in declared.items():
        if key not in observed:  # judged by the empty-row probe above
            continue
        got = observed[key]
        if key == "empty_row" and (got is None or want == "undefined"):
            continue  # nothing observed, or nothing promised: undefined rows may hold anything
        if got != want:
            extra = f" ({obs.base_fit})" if key == "base" else ""
            findings.append(Finding(
                Code.AC008, record.name,
                f"lse.{key}: declared {want!r}, observed {got!r}{extra}",
                hint="fix the record (or the kernel); `attn-contracts verify --update F` writes the "
                "observed facts to a file you name", field=f"lse.{key}", found=got, allowed=repr(want)))
    if not obs.out_ok:
        findings.append(Finding(Code.AC008, record.name, f"output differs from the fp64 reference "
                                f"by {obs.out_error:.3g}", hint="the kernel or the adapter is wrong",
                                field="output", found=obs.out_error, allowed="within the dtype's tolerance"))
    if obs.out_buffer_honoured is False:
        findings.append(Finding(Code.AC008, record.name, "the adapter ignored the caller's out= "
                                "buffer", field="out", found="new tensor", allowed="out= buffer"))
    return findings


def describe(d: dict[str, Any] | Observed | None) -> str:
    if d is None:
        return "-"
    x = asdict(d) if isinstance(d, Observed) else d
    layout = x["layout"] + ("+q_len" if x["q_len_axis"] else "")
    layout += f"/{x['padded_heads']}" if x["padded_heads"] else ""
    empty = x["empty_row"] if x["empty_row"] is not None else "n/a"
    text = f"base {x['base']}, {layout}, {x['dtype']}, empty {empty}"
    if isinstance(d, Observed):
        if d.empty is not None:
            own = "" if d.empty.buffer_honoured is not False else ", own buffer"
            text += (f"; zero-length request: lse {d.empty.lse}, out {d.empty.out}{own}"
                     + ("" if d.empty.documented else " (undocumented input)"))
        text += f", out err {d.out_error:.1e}"
    elif "empty_out" in x:
        text += f", empty out {x['empty_out'] or 'absent'}"
    return text


# --- consumers ----------------------------------------------------------------------------------
_DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4}
_HINT = "fix the consumer record (or the function); the observed value is what it really does"


@dataclass
class LimitProbe:
    """The bounded launch probe at one head dim: heads doubled (then narrowed) until it failed."""

    head_dim: int
    dtype: str
    max_ok: int | None  # most heads that launched and merged correctly (None: not even the first)
    min_failed: int | None  # fewest heads that failed (None: none failed up to the bound)
    launches: int
    detail: str = ""  # how the first failure looked (exception type and message, or a crash)


@dataclass
class ConsumerObserved:
    """What the consumer really did on the probes (None: that probe could not be run)."""

    #: base observed per call: "" is the call without the base keyword (or a fixed-base call),
    #: otherwise the keyword literal; "e" | "2" | "neither" | "raised"
    bases: dict[str, str]
    layouts: tuple[str, ...]  # the LSE layouts whose reading reproduced the reference
    out_error: float  # max |out − reference| of the best (base, layout) reading
    errors: dict[str, float]  # "base/layout" → max |out − reference|, for the message
    reads_as_empty: tuple[str, ...] | None
    all_empty: str | None  # zero | nan | finite
    zero_weight_nan_safe: bool | None
    returns_lse: bool | None
    lse_base: str | None  # base of the returned merged LSE: e | 2 | neither
    #: the call the layout, empty-row and output probes used (a key of ``bases``)
    call: str = ""
    limit: LimitProbe | None = None


#: the result of a consumer's verification (the name of the days of two result types)
ConsumerVerifyResult = VerifyResult[ConsumerObserved]


def _base_of_call(record: ConsumerRecord, call: str) -> str | None:
    """The base the record declares for one observed call ("" = keyword omitted)."""
    if isinstance(record.base, FixedBase):
        return record.base.base
    if call == "":
        return record.base.default_base
    return record.base.base_of(call)


def predicted_max_heads(record: ConsumerRecord, head_dim: int, dtype: str) -> tuple[int, str] | None:
    """Most heads the record says launch at ``head_dim``/``dtype``, and the field saying so."""
    lim = record.limits
    if lim.threads is not None:
        lanes = lim.threads.threads(1, head_dim, _DTYPE_BYTES.get(dtype, 2))
        return lim.threads.max_threads // lanes, "limits.threads"
    if lim.max_heads_x_head_dim is not None:
        return lim.max_heads_x_head_dim // head_dim, "limits.max_heads_x_head_dim"
    return None


def declared_consumer(record: ConsumerRecord) -> dict[str, Any]:
    """The declared facts a run can observe, in the observation's terms."""
    bases: dict[str, str]
    if isinstance(record.base, FixedBase):
        bases = {"": record.base.base}
    else:
        bases = {lit: b for lit, b in record.base.values}
        if record.base.default is not None:
            bases[""] = record.base.default_base or ""
    return {"bases": bases, "layouts": list(record.lse.layouts), "states": record.lse.states,
            "reads_as_empty": list(record.empty.reads_as_empty),
            "all_empty": record.empty.all_empty,
            "zero_weight_nan_safe": record.empty.zero_weight_nan_safe,
            "returns_lse": record.output.returns_lse, "lse_base": record.output.lse_base}


def _finding(record: ConsumerRecord, fld: str, message: str, found: Any, allowed: str,
             hint: str = _HINT) -> Finding:
    return Finding(Code.AC008, record.name, f"{fld}: {message}", hint=hint, field=fld, found=found,
                   allowed=allowed)


def _base_field(record: ConsumerRecord, call: str) -> str:
    if isinstance(record.base, FixedBase):
        return "base"
    return "base.default" if call == "" else f"base.values.{call}"


def _compare_bases(record: ConsumerRecord, obs: ConsumerObserved) -> list[Finding]:
    out = []
    for call, got in obs.bases.items():
        want = _base_of_call(record, call)
        if want is None or got == want:
            continue  # a call the record does not describe: a note, not a broken promise
        how = ("without the keyword" if call == "" or isinstance(record.base, FixedBase) else
               f"with {record.base.keyword}={call}")
        errs = ", ".join(f"{k} {v:.2g}" for k, v in obs.errors.items())
        out.append(_finding(record, _base_field(record, call),
                            f"declared base {want!r}, the call {how} computes as base {got!r} "
                            f"(max |out − reference| by base/layout read: {errs})", got,
                            repr(want)))
    return out


def _compare_layouts(record: ConsumerRecord, obs: ConsumerObserved) -> list[Finding]:
    missing = [lay for lay in record.lse.layouts if lay not in obs.layouts]
    if not missing or not obs.layouts:
        return []
    return [_finding(record, "lse.layouts", f"declared {list(record.lse.layouts)}, the function "
                     f"reads the LSE as {list(obs.layouts)} (an [H, T] and a [T, H] reading of "
                     f"the same square LSE give different merges)", list(obs.layouts),
                     str(list(record.lse.layouts)))]


def _reads_as_empty_gaps(record: ConsumerRecord,
                         obs: ConsumerObserved) -> tuple[list[str], list[str]]:
    """(declared empty but not read as empty: a finding; read as empty but not declared: a
    note). Both empty where the function was not observed on empty shards."""
    if obs.reads_as_empty is None:
        return [], []
    declared = record.empty.reads_as_empty
    return ([v for v in declared if v not in obs.reads_as_empty],
            [v for v in obs.reads_as_empty if v not in declared])


def _compare_empty(record: ConsumerRecord, obs: ConsumerObserved) -> list[Finding]:
    out = []
    e = record.empty
    not_empty, _ = _reads_as_empty_gaps(record, obs)
    if not_empty:
        out.append(_finding(record, "empty.reads_as_empty", f"declared {list(e.reads_as_empty)}, "
                            f"but {', '.join(not_empty)} is not read as an empty shard (its shard "
                            f"gets weight ≠ 0 or spoils the row); observed "
                            f"{list(obs.reads_as_empty or ())}", list(obs.reads_as_empty or ()),
                            str(list(e.reads_as_empty))))
    if obs.all_empty is not None and e.all_empty != "undefined" and obs.all_empty != e.all_empty \
            and not (e.all_empty == "nan" and obs.all_empty == "zero"):
        out.append(_finding(record, "empty.all_empty", f"declared {e.all_empty!r}, a row whose "
                            f"every shard is empty yields {obs.all_empty!r}", obs.all_empty,
                            repr(e.all_empty)))
    if e.zero_weight_nan_safe and obs.zero_weight_nan_safe is False:
        out.append(_finding(record, "empty.zero_weight_nan_safe", "declared true, but a NaN "
                            "partial under weight 0 reaches the output (0·NaN = NaN)", False,
                            "true"))
    return out


def _compare_output(record: ConsumerRecord, obs: ConsumerObserved) -> list[Finding]:
    out = []
    want = record.output
    if want.returns_lse and obs.returns_lse is False:
        out.append(_finding(record, "output.returns_lse", "declared true, the function returned "
                            "no merged LSE", False, "true"))
    if want.returns_lse and obs.lse_base is not None:
        declared: str | None = want.lse_base
        if declared == "input":  # the base the function reads its input in, as observed
            declared = obs.bases.get(obs.call)
        if obs.lse_base != declared:
            out.append(_finding(record, "output.lse_base", f"declared {want.lse_base!r} "
                                f"(base {declared}), the merged LSE comes back in base "
                                f"{obs.lse_base!r}", obs.lse_base, repr(want.lse_base)))
    return out


def _compare_limit(record: ConsumerRecord, probe: LimitProbe | None) -> list[Finding]:
    if probe is None or probe.min_failed is None:
        return []
    predicted = predicted_max_heads(record, probe.head_dim, probe.dtype)
    at = f"{probe.dtype} head_dim {probe.head_dim}"
    seen = (f"launches up to {probe.max_ok} heads, fails at {probe.min_failed} "
            f"({probe.min_failed} × {probe.head_dim} = {probe.min_failed * probe.head_dim}; "
            f"{probe.detail})")
    if predicted is None:
        return [_finding(record, "limits", f"declares no launch limit; at {at} it {seen}",
                         probe.max_ok, "a limits.threads or limits.max_heads_x_head_dim bound",
                         "declare the bound, so the edge check refuses the setting before a "
                         "launch failure poisons the CUDA context")]
    heads, fld = predicted
    if probe.min_failed <= heads:
        return [_finding(record, fld, f"the record allows {heads} heads at {at}, the function "
                         f"{seen}", probe.max_ok, f"<= {heads} heads")]
    return []


def compare_consumer(record: ConsumerRecord, obs: ConsumerObserved) -> list[Finding]:
    """``AC008`` for every promise of the record the observation breaks."""
    if not obs.layouts:
        errs = ", ".join(f"{k} {v:.2g}" for k, v in obs.errors.items())
        return [_finding(record, "output", "no reading of the LSE (base e or 2, [T, H] or "
                         f"[H, T]) reproduces the fp64 reference merge (max |out − reference| "
                         f"by base/layout read: {errs})", obs.out_error,
                         "within the dtype's tolerance", "the function or its adapter is wrong")]
    return (_compare_bases(record, obs) + _compare_layouts(record, obs) +
            _compare_empty(record, obs) + _compare_output(record, obs) +
            _compare_limit(record, obs.limit))


def conservative_notes(record: ConsumerRecord, obs: ConsumerObserved) -> list[str]:
    """Where the record promises less than the function does (safe, but worth knowing)."""
    notes = []
    e = record.empty
    _, extra = _reads_as_empty_gaps(record, obs)
    if extra:
        notes.append(f"empty.reads_as_empty: {', '.join(extra)} also reads as empty (with a "
                     "finite partial)")
    if obs.all_empty == "zero" and e.all_empty in ("nan", "undefined"):
        notes.append(f"empty.all_empty: declared {e.all_empty!r}, observed 'zero'")
    if not e.zero_weight_nan_safe and obs.zero_weight_nan_safe:
        notes.append("empty.zero_weight_nan_safe: declared false, observed safe")
    if not record.output.returns_lse and obs.returns_lse:
        notes.append("output.returns_lse: declared false, a merged LSE came back")
    if not isinstance(record.base, FixedBase) and record.base.default is None and "" in obs.bases \
            and obs.bases[""] != "raised":
        notes.append(f"base.default: declared required, the call without {record.base.keyword} "
                     f"ran as base {obs.bases['']!r}")
    probe = obs.limit
    if probe is not None and probe.max_ok is not None:
        predicted = predicted_max_heads(record, probe.head_dim, probe.dtype)
        if predicted is not None and probe.max_ok > predicted[0]:
            notes.append(f"{predicted[1]}: allows {predicted[0]} heads at {probe.dtype} "
                         f"head_dim {probe.head_dim}, {probe.max_ok} launched")
    return notes


def _limit_text(p: LimitProbe | None) -> str:
    if p is None:
        return "limit not probed"
    if p.min_failed is None:
        return f"launches ≥ {p.max_ok} heads × {p.head_dim}"
    return f"max {p.max_ok} heads × {p.head_dim} ({p.dtype}; fails at {p.min_failed})"


def describe_consumer(d: dict[str, Any] | ConsumerObserved | None,
                      record: ConsumerRecord | None = None) -> str:
    """One cell of the verify table (declared facts, or an observation)."""
    if d is None:
        return "-"
    x = asdict(d) if isinstance(d, ConsumerObserved) else d
    calls = x["bases"]
    bases = ", ".join(f"{k or 'default'}→{v}" if len(calls) > 1 else str(v)
                      for k, v in calls.items())
    empty = "?" if x["reads_as_empty"] is None else "/".join(x["reads_as_empty"]) or "none"
    nan_safe = {True: "0·NaN = 0", False: "0·NaN leaks", None: "0·NaN ?"}[x["zero_weight_nan_safe"]]
    lse_out = x["lse_base"] if x.get("returns_lse") else "no lse out"
    text = (f"base {bases}, {'/'.join(x['layouts']) or 'no layout fits'}, empty {empty}, "
            f"all-empty {x['all_empty'] or '?'}, {nan_safe}, lse out {lse_out}")
    if isinstance(d, ConsumerObserved):
        text += f", {_limit_text(d.limit)}, out err {d.out_error:.1e}"
    elif record is not None and (record.limits.threads or record.limits.max_heads_x_head_dim):
        lim = record.limits
        text += (f", ≤ {lim.threads.max_threads} threads" if lim.threads else
                 f", heads × head_dim ≤ {lim.max_heads_x_head_dim}")
    return text
